--
-- model_roundtrip: every model value the extension accepts or makes, it
-- reads back.  A property test over mutants of valid kmeans_model and
-- pmedian_model texts (each number and each string replaced in turn by
-- edge values): every mutant is either rejected with a data exception
-- (class 22) or a program limit (54000), or accepted, and then its text
-- form reads back to the same text and the same binary form, and its
-- binary form, through COPY BINARY, reads back to the same value.  Then
-- the edge cases of fits: values the fits make near the limits.
--
-- The text form is exact whatever extra_float_digits says.
SET extra_float_digits = 0;

CREATE TABLE rt_pts AS
SELECT i AS id, ARRAY[(i % 5) * 10 + (hashint4(i) & 255) / 256.0,
					  (hashint4(i + 7) & 255) / 64.0]::float8[] AS v
FROM generate_series(1, 200) i;

-- the valid values mutated: fitted models, a streamed one, hand-made ones
CREATE TABLE rt_base (typ text, base text);
INSERT INTO rt_base
SELECT 'kmeans_model', kmeans_gpu(v, 3, '{"seed": 3}')::text FROM rt_pts
UNION ALL
SELECT 'kmeans_model', kmeans_stream_model(kmeans_stream_state(v, 2, '{"block_rows": 64, "centres": 8}'),
										   '{"seed": 1, "n_init": 2}')::text FROM rt_pts
UNION ALL
SELECT 'kmeans_model', '{"k": 1, "d": 2, "sizes": [7], "centroids": [[1.5, -2]], "kernel": "tensor_screened-weighted"}'
UNION ALL
SELECT 'pmedian_model', pmedian_gpu(id, v, 2, '{"seed": 1}')::text FROM rt_pts
UNION ALL
SELECT 'pmedian_model', pmedian_gpu(id, v, 1.0, 2, '{"capacity": 120, "seed": 1}')::text FROM rt_pts;

CREATE TABLE rt_edges (val text);
INSERT INTO rt_edges VALUES ('-0'), ('0'), ('1'), ('-1'), ('0.5'), ('1.5'), ('2'), ('1e-320'),
	('1e150'), ('-1e150'), ('1.0000000000000002e150'), ('1e151'), ('1e300'), ('1e308'), ('-1e308'),
	('1e400'), ('9007199254740993'), ('9.3e18'), ('9223372036854775807'), ('9223372036854775808'),
	('-9223372036854775808'), ('2147483647'), ('2147483648'), ('1000000'), ('65537'),
	('null'), ('true'), ('"gpu"'), ('"x"'), ('[]'), ('[1]'), ('{}');
CREATE TABLE rt_names (val text);
INSERT INTO rt_names VALUES ('"register-weighted"'), ('"tensor_screened-weighted"'),
	('"abcdefghijklmnopqrstuvwxyz01234"'), ('"abcdefghijklmnopqrstuvwxyz012345"'), ('"Tiled"'),
	('"t\u00e9"'), ('"a\"b"'), ('""'), ('"summary"'), ('"bf16"'), ('"float64"'), ('"pruned"'),
	('"cosine"'), ('"three_phase"'), ('"gpu"'), ('"rows"'), ('1'), ('null'), ('"centroids"'),
	('"summary_inertia"'), ('"capacity"'), ('"penalties"');

-- each mutant: the n-th number or the n-th string of a base text replaced
CREATE TABLE rt_mutants AS
SELECT b.typ, regexp_replace(b.base, '-?[0-9][0-9.eE+-]*', e.val, 1, n) AS txt
FROM rt_base b, rt_edges e, generate_series(1, 80) n
WHERE n <= (SELECT count(*) FROM regexp_matches(b.base, '-?[0-9][0-9.eE+-]*', 'g'))
UNION ALL
SELECT b.typ, regexp_replace(b.base, '"[a-z_0-9-]*"', e.val, 1, n)
FROM rt_base b, rt_names e, generate_series(1, 40) n
WHERE n <= (SELECT count(*) FROM regexp_matches(b.base, '"[a-z_0-9-]*"', 'g'));
SELECT count(*) > 5000 AS many_mutants FROM rt_mutants;

-- read each mutant as its type, keeping the error's SQLSTATE
CREATE FUNCTION rt_read(typ text, txt text, OUT km kmeans_model, OUT pm pmedian_model, OUT state text)
LANGUAGE plpgsql AS $$
BEGIN
	IF typ = 'kmeans_model' THEN
		km := txt::kmeans_model;
	ELSE
		pm := txt::pmedian_model;
	END IF;
	state := 'ok';
EXCEPTION WHEN others THEN
	state := SQLSTATE;
END $$;
CREATE TABLE rt_read AS
SELECT row_number() OVER () AS id, m.typ, m.txt, r.*
FROM rt_mutants m, LATERAL rt_read(m.typ, m.txt) r;

-- rejections are data exceptions or program limits, never internal errors
SELECT state, count(*) > 0 AS seen FROM rt_read
WHERE state <> 'ok' GROUP BY state ORDER BY state;
SELECT count(*) FILTER (WHERE state = 'ok') > 500 AS many_accepted,
	   count(*) FILTER (WHERE state <> 'ok' AND state NOT LIKE '22%' AND state <> '54000') AS other_errors
FROM rt_read;

-- text form: reads back to the same text and the same binary value
SELECT count(*) FILTER (WHERE NOT coalesce(km::text::kmeans_model::text = km::text,
										   pm::text::pmedian_model::text = pm::text)) AS text_failures,
	   count(*) FILTER (WHERE NOT coalesce(kmeans_model_send(km::text::kmeans_model) = kmeans_model_send(km),
										   pmedian_model_send(pm::text::pmedian_model) = pmedian_model_send(pm)))
	   AS binary_differences,
	   count(*) FILTER (WHERE NOT coalesce(km::jsonb::text::kmeans_model::text = km::text,
										   pm::jsonb::text::pmedian_model::text = pm::text)) AS jsonb_failures
FROM rt_read WHERE state = 'ok';

-- the info functions: every field of the jsonb cast but the centroids
-- (medoids), with the same values, for every value accepted
SELECT count(*) FILTER (WHERE NOT coalesce(kmeans_model_info(km) = km::jsonb - 'centroids',
										   pmedian_model_info(pm) = pm::jsonb - 'medoids')) AS info_differences,
	   count(*) FILTER (WHERE NOT coalesce(kmeans_model_info(km) ? 'sizes' AND NOT kmeans_model_info(km) ? 'centroids',
										   pmedian_model_info(pm) ? 'medoid_ids' AND NOT pmedian_model_info(pm) ? 'medoids'))
	   AS info_shape_failures
FROM rt_read WHERE state = 'ok';
SELECT kmeans_model_info(NULL) IS NULL AS kmeans_strict, pmedian_model_info(NULL) IS NULL AS pmedian_strict;

-- binary form, through COPY BINARY: reads back to the same value
SELECT '/tmp/gpuclust_model_roundtrip_' || pg_backend_pid() || '.bin' AS rt_file \gset
CREATE TABLE rt_ok AS SELECT id, km, pm FROM rt_read WHERE state = 'ok';
COPY rt_ok TO :'rt_file' WITH (FORMAT binary);
CREATE TABLE rt_back (LIKE rt_ok);
COPY rt_back FROM :'rt_file' WITH (FORMAT binary);
SELECT (SELECT count(*) FROM rt_ok) - count(*) AS lost,
	   count(*) FILTER (WHERE a.km::text IS DISTINCT FROM b.km::text
						OR a.pm::text IS DISTINCT FROM b.pm::text) AS text_differences,
	   count(*) FILTER (WHERE kmeans_model_send(a.km) IS DISTINCT FROM kmeans_model_send(b.km)
						OR pmedian_model_send(a.pm) IS DISTINCT FROM pmedian_model_send(b.pm)) AS binary_differences
FROM rt_ok a JOIN rt_back b USING (id);
SELECT 'rm -f ' || :'rt_file' AS rt_cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'rt_cleanup';

-- binary mutants: edge patterns written over the binary form of a fitted
-- model and of a p-median model at every fourth byte of their headers;
-- each read through COPY BINARY, as a client would send it
CREATE TABLE rt_bin_base AS
(SELECT 'kmeans_model' AS typ, kmeans_model_send(base::kmeans_model) AS payload FROM rt_base
 WHERE typ = 'kmeans_model' ORDER BY ctid LIMIT 1)
UNION ALL
(SELECT 'pmedian_model', pmedian_model_send(base::pmedian_model) FROM rt_base
 WHERE typ = 'pmedian_model' AND base::jsonb->'capacity' <> 'null');
CREATE TABLE rt_bin_mutants AS
SELECT b.typ, overlay(b.payload PLACING p.pattern FROM o FOR length(p.pattern)) AS payload
FROM rt_bin_base b, generate_series(1, 129, 4) o,
	 (VALUES ('\x7ff8000000000000'::bytea), ('\x8000000000000000'), ('\xffffffffffffffff'),
			 ('\xc3')) p(pattern)
WHERE o + length(p.pattern) <= length(b.payload);
CREATE TABLE rt_bin_km (m kmeans_model);
CREATE TABLE rt_bin_pm (m pmedian_model);
CREATE TABLE rt_bin_read (typ text, state text, km kmeans_model, pm pmedian_model);
SELECT '/tmp/gpuclust_model_roundtrip_bin_' || pg_backend_pid() || '.bin' AS rt_bin_file \gset
SELECT set_config('rt.bin_file', :'rt_bin_file', false) IS NOT NULL AS file_set;
DO $$
DECLARE
	mut record;
	lo oid;
	file text := current_setting('rt.bin_file');
BEGIN
	FOR mut IN SELECT * FROM rt_bin_mutants LOOP
		lo := lo_from_bytea(0, '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
							|| '\x0001'::bytea || int4send(length(mut.payload)) || mut.payload
							|| '\xffff'::bytea);
		PERFORM lo_export(lo, file);
		PERFORM lo_unlink(lo);
		BEGIN
			IF mut.typ = 'kmeans_model' THEN
				EXECUTE format('COPY rt_bin_km FROM %L WITH (FORMAT binary)', file);
				INSERT INTO rt_bin_read SELECT mut.typ, 'ok', m, NULL FROM rt_bin_km;
				TRUNCATE rt_bin_km;
			ELSE
				EXECUTE format('COPY rt_bin_pm FROM %L WITH (FORMAT binary)', file);
				INSERT INTO rt_bin_read SELECT mut.typ, 'ok', NULL, m FROM rt_bin_pm;
				TRUNCATE rt_bin_pm;
			END IF;
		EXCEPTION WHEN others THEN
			INSERT INTO rt_bin_read VALUES (mut.typ, SQLSTATE, NULL, NULL);
		END;
	END LOOP;
END $$;
SELECT 'rm -f ' || :'rt_bin_file' AS rt_cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'rt_cleanup';
-- rejected as invalid binary data (22P03) or a too-large shape (54000);
-- what is accepted reads back through both forms to the same value
SELECT count(*) > 250 AS many_mutants,
	   count(*) FILTER (WHERE state = 'ok') > 10 AS some_accepted,
	   count(*) FILTER (WHERE state NOT IN ('ok', '22P03', '54000')) AS other_errors,
	   count(*) FILTER (WHERE state = 'ok' AND NOT coalesce(
			km::text::kmeans_model::text = km::text
			AND kmeans_model_send(km::text::kmeans_model) = kmeans_model_send(km),
			pm::text::pmedian_model::text = pm::text
			AND pmedian_model_send(pm::text::pmedian_model) = pmedian_model_send(pm))) AS round_trip_failures,
	   count(*) FILTER (WHERE km::text ~ '(NaN|Infinity)' OR pm::text ~ '(NaN|Infinity)') AS bad_numbers
FROM rt_bin_read;

-- no accepted value holds a number the text form cannot hold or a
-- negative count; -0 reads as 0
SELECT count(*) FILTER (WHERE km::text ~ '(NaN|Infinity|-0[,\]])' OR pm::text ~ '(NaN|Infinity|-0[,\]])')
	   AS bad_numbers,
	   count(*) FILTER (WHERE (km::jsonb->>'rows')::numeric < 0
						OR EXISTS (SELECT FROM jsonb_array_elements_text(km::jsonb->'sizes') s
								   WHERE s::numeric < 0)) AS negative_counts
FROM rt_read WHERE state = 'ok';

--
-- Edge cases, one by one
--
\set VERBOSITY sqlstate
-- counts are exact, or rejected as out of range
SELECT ('{"k": 1, "d": 1, "rows": 9007199254740993, "sizes": [9007199254740993], "centroids": [[0]]}'
		::kmeans_model)::jsonb->'sizes' AS exact_size;
SELECT '{"k": 1, "d": 1, "sizes": [9.3e18], "centroids": [[0]]}'::kmeans_model;
SELECT '{"k": 2, "d": 1, "sizes": [9223372036854775807, 1], "centroids": [[0], [1]]}'::kmeans_model;
SELECT '{"k": 1, "d": 1, "iterations": 2147483648, "sizes": [1], "centroids": [[0]]}'::kmeans_model;
-- strings: known names only, kernels of [a-z0-9_-] up to 31 bytes
SELECT ('{"k": 1, "d": 1, "kernel": "register-weighted", "sizes": [1], "centroids": [[0]]}'
		::kmeans_model)::jsonb->>'kernel' AS kernel;
SELECT '{"k": 1, "d": 1, "kernel": "t\u00e9", "sizes": [1], "centroids": [[0]]}'::kmeans_model;
SELECT '{"k": 1, "d": 1, "device": "tpu", "sizes": [1], "centroids": [[0]]}'::kmeans_model;
-- statistics finite and in range
SELECT '{"k": 1, "d": 1, "inertia": -1, "sizes": [1], "centroids": [[0]]}'::kmeans_model;
SELECT '{"k": 1, "d": 1, "distances_skipped": 1.5, "sizes": [1], "centroids": [[0]]}'::kmeans_model;
SELECT '{"k": 1, "d": 1, "inertia": 1, "summary_inertia": 1, "sizes": [1], "centroids": [[0]]}'::kmeans_model;
SELECT '{"k": 1, "d": 1, "timings_ms": {"collect": 1e400}, "sizes": [1], "centroids": [[0]]}'::kmeans_model;
-- p-median models hold medoids to the same 1e150 limit as rows and centroids
SELECT '{"p": 2, "d": 2, "metric": "cosine", "medoid_ids": [1, 2], "medoids": [[1e300, 0], [0, 1]]}'::pmedian_model;
SELECT '{"p": 1, "d": 1, "medoid_ids": [1], "penalties": [-1], "medoids": [[0]]}'::pmedian_model;
-- a short text cannot make a large allocation: the arrays are checked first
-- (1,000,000 x 132: the largest d of a model of a million centroids under 1 GB)
SELECT '{"k":1000000,"d":132}'::kmeans_model;
SELECT '{"k": 1000000, "d": 132, "sizes": [], "centroids": []}'::kmeans_model;
-- a p-median fit whose penalties overflow is an error, not an Infinity
-- stored in the model
SELECT pmedian_gpu(id, v, 1.0, 2, '{"capacity": 30, "penalty_step": 1e308}') FROM rt_pts;
-- a capacity of 1e308 is finite, and reads back
SELECT m::text::pmedian_model::text = m::text AS capacity_round_trip,
	   (m::jsonb->>'capacity')::float8 AS capacity
FROM (SELECT pmedian_gpu(id, v, 1.0, 2, '{"capacity": 1e308}') AS m FROM rt_pts) s;
-- init centroids are held to the limit rows are
SELECT kmeans_gpu(v, 2, '{"init": [[1e308, 0], [0, 0]]}') FROM rt_pts;
\set VERBOSITY default

-- rows near the 1e150 limit: quantisation, coarser the more weight there
-- is, must not round a centroid or a summary's centre past the limit that
-- input holds every value to.  A summary merged with itself doubles its
-- weights; every one reads back, and so do models of it.
CREATE TABLE rt_huge AS
SELECT i, ARRAY[CASE WHEN i % 2 = 0 THEN 1e150 ELSE 0.3e150 + i * 1e147 END,
				(i % 3) * 1e149]::float8[] AS v
FROM generate_series(1, 64) i;
SELECT m::text::kmeans_model::text = m::text AS fit_round_trip,
	   kmeans_model_send(m::text::kmeans_model) = kmeans_model_send(m) AS fit_same_binary
FROM (SELECT kmeans_gpu(v, 3, '{"seed": 1}') AS m FROM rt_huge) s;
-- (on the CPU: at these magnitudes the GPU's weighted reductions land on
-- other centres, whose inertia need not overflow)
SET gpuclust.device = cpu;
CREATE TABLE rt_huge_doubled AS
WITH RECURSIVE m(n, s) AS (
	SELECT 0, kmeans_stream_state(v, 2, '{"block_rows": 16, "centres": 4}') FROM rt_huge
	UNION ALL
	SELECT n + 1, kmeans_stream_merge(s, s) FROM m WHERE n < 46)
SELECT n, s FROM m;
SELECT count(*) AS summaries,
	   count(*) FILTER (WHERE s::text::kmeans_stream::text = s::text) AS read_back
FROM rt_huge_doubled;
SELECT n, (m::jsonb->'centroids'->0->>0)::float8 <= 1e150 AS within_limit,
	   m::text::kmeans_model::text = m::text AS model_round_trip
FROM (SELECT n, kmeans_stream_model(s, '{"seed": 1}') AS m FROM rt_huge_doubled WHERE n IN (0, 8, 16)) t
ORDER BY n;
-- at 2^46 times the rows the summary's inertia overflows a double: an
-- error, not an Infinity in the model
\set VERBOSITY sqlstate
SELECT kmeans_stream_model(s, '{"seed": 1}') FROM rt_huge_doubled WHERE n = 46;
\set VERBOSITY default
RESET gpuclust.device;

-- a summary merged with itself doubles its rows: 128 * 2^46 = 2^53 reads
-- back; past it the merge is an error rather than a value read back as
-- corrupt
CREATE TABLE rt_doubled AS
WITH RECURSIVE m(n, s) AS (
	SELECT 0, kmeans_stream_state(v, 2, '{"block_rows": 64, "centres": 8}') FROM rt_pts WHERE id <= 128
	UNION ALL
	SELECT n + 1, kmeans_stream_merge(s, s) FROM m WHERE n < 46)
SELECT s FROM m WHERE n = 46;
SELECT kmeans_stream_info(s)->'rows' AS rows, s::text::kmeans_stream::text = s::text AS round_trip,
	   kmeans_stream_model(s, '{"seed": 1}')::jsonb->'rows' = kmeans_stream_info(s)->'rows' AS model_rows
FROM rt_doubled;
\set VERBOSITY sqlstate
SELECT kmeans_stream_merge(s, s) FROM rt_doubled;
\set VERBOSITY default

-- the model says which precision ran: the CPU computes in double
SELECT m::jsonb->>'precision_requested' AS requested,
	   m::jsonb->>'precision' = CASE m::jsonb->>'device' WHEN 'cpu' THEN 'float64' ELSE 'bf16' END
	   AS precision_ran
FROM (SELECT kmeans_gpu(v, 3, '{"seed": 1, "precision": "bf16"}') AS m FROM rt_pts) s;

-- fp16 and auto (issue 14): the precision that ran, and the check of
-- reduced precision on a sample of the rows.  The CPU computes in double
-- and checks nothing; on the GPU, fp16 labels these blobs well enough to
-- keep, and auto takes float32 below k = 128 (where the tensor cores do
-- not pay)
SELECT r.requested, m::jsonb->>'precision_requested' = r.requested AS requested_kept,
	   m::jsonb->>'precision' = CASE m::jsonb->>'device' WHEN 'cpu' THEN 'float64'
			WHEN 'gpu' THEN CASE r.requested WHEN 'auto' THEN 'float32' ELSE r.requested END END
	   AS precision_ran,
	   m::jsonb->>'precision_check' = CASE WHEN m::jsonb->>'device' = 'cpu' OR r.requested <> 'fp16'
			THEN 'none' ELSE 'passed' END AS check_outcome,
	   (m::jsonb->>'sample_disagreement')::float8 BETWEEN 0 AND 0.05 AS disagreement_small,
	   (m::jsonb->>'sample_inertia_excess')::float8 <= 0.01 AS excess_within_bound
FROM (VALUES ('fp16'), ('auto'), ('float32')) r(requested),
	 LATERAL (SELECT kmeans_gpu(v, 3, jsonb_build_object('seed', 1, 'precision', r.requested)) AS m
			  FROM rt_pts) f;
-- the fields read back, and only known names are taken
SELECT (m::text::kmeans_model)::text = m::text AS round_trip,
	   m::jsonb->'precision_check' AS outcome, m::jsonb->'sample_disagreement' AS disagreement
FROM (SELECT jsonb_set(jsonb_set(jsonb_set(jsonb_set(kmeans_gpu(v, 3, '{"seed": 1}')::jsonb,
			 '{precision}', '"float32"'), '{precision_requested}', '"bf16"'),
			 '{precision_check}', '"fell_back"'), '{sample_disagreement}', '0.375')::text::kmeans_model AS m
	  FROM rt_pts) s;
SELECT jsonb_set(kmeans_gpu(v, 3, '{"seed": 1}')::jsonb, '{precision_check}', '"maybe"')::text::kmeans_model
FROM rt_pts;
SELECT jsonb_set(kmeans_gpu(v, 3, '{"seed": 1}')::jsonb, '{sample_disagreement}', '1.5')::text::kmeans_model
FROM rt_pts;

-- the streamed model: kernel not truncated, its inertia named for the
-- summary, every field of a fit filled, NULL options the defaults
SELECT m::jsonb->>'kernel' LIKE '%-weighted' AS weighted_kernel,
	   m::jsonb->'inertia' AS inertia, jsonb_typeof(m::jsonb->'summary_inertia') AS summary_inertia,
	   (m::jsonb->>'rows')::int AS rows,
	   (SELECT sum(s::bigint) FROM jsonb_array_elements_text(m::jsonb->'sizes') s) AS sizes_sum,
	   m::jsonb->'timings_ms' ? 'labeling' AS has_labeling
FROM (SELECT kmeans_stream_model(kmeans_stream_state(v, 3), NULL) AS m FROM rt_pts) s;
SELECT kmeans_stream_model(NULL, NULL) IS NULL AS null_state;
SELECT kmeans_stream_model(s, NULL)::jsonb->'centroids' = kmeans_stream_model(s)::jsonb->'centroids'
	   AS null_options_are_defaults
FROM (SELECT kmeans_stream_state(v, 3) AS s FROM rt_pts) t;
-- a fit over rows reports the rows' inertia
SELECT jsonb_typeof(m::jsonb->'inertia') AS inertia, m::jsonb->'summary_inertia' AS summary_inertia
FROM (SELECT kmeans_gpu(v, 3) AS m FROM rt_pts) s;

-- volatility: what reads gpuclust.device or the clock is not immutable
SELECT proname, provolatile, proisstrict FROM pg_proc
WHERE proname IN ('kmeans_stream_model', 'kmeans_stream_merge', 'kmeans_stream_info', 'kmeans_predict')
	  AND prokind = 'f'
GROUP BY proname, provolatile, proisstrict ORDER BY proname;

-- models read from a table reach kmeans_predict, kmeans_distance and
-- pmedian_predict as TOAST pointers, detoasted once per call site and kept
-- (eight at most, the least recently used forgotten first): each row
-- brings its own category's model in turn, eleven of them, and every
-- answer equals the one from the same model in memory (the categories'
-- rows lie 10 apart, so another category's model would be far off)
CREATE TABLE rt_cat_items AS
SELECT g AS id, g % 11 AS category,
	   ARRAY(SELECT (g % 11) * 10 + ((g * 37 + j * 101) % 1000) / 1000.0
			 FROM generate_series(1, 300) j)::float8[] AS v
FROM generate_series(1, 1100) g;
CREATE TABLE rt_cat_models AS
SELECT category, kmeans_gpu(v, 4, '{"seed": 3, "max_iter": 3}') AS km,
	   pmedian_gpu(id, v, 3) AS pm
FROM rt_cat_items GROUP BY category;
SELECT pg_relation_size(reltoastrelid) > 0 AS models_toasted FROM pg_class WHERE relname = 'rt_cat_models';
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(m.km, i.v) <> kmeans_predict(m.km::text::kmeans_model, i.v)) AS predict_differences,
	   count(*) FILTER (WHERE kmeans_distance(m.km, i.v) <> kmeans_distance(m.km::text::kmeans_model, i.v)) AS distance_differences,
	   count(*) FILTER (WHERE pmedian_predict(m.pm, i.v) <> pmedian_predict(m.pm::text::pmedian_model, i.v)) AS pmedian_differences,
	   max(kmeans_distance(m.km, i.v)) < 10 AS own_models
FROM rt_cat_items i, LATERAL (SELECT km, pm FROM rt_cat_models m WHERE m.category = i.category OFFSET 0) m;
-- the same over three categories, whose models stay kept
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_distance(m.km, i.v) <> kmeans_distance(m.km::text::kmeans_model, i.v)) AS distance_differences
FROM rt_cat_items i, LATERAL (SELECT km FROM rt_cat_models m WHERE m.category = i.category OFFSET 0) m
WHERE i.category < 3;
DROP TABLE rt_cat_items, rt_cat_models;

DROP TABLE rt_bin_base, rt_bin_mutants, rt_bin_km, rt_bin_pm, rt_bin_read;
DROP TABLE rt_doubled, rt_huge_doubled;
DROP TABLE rt_pts, rt_base, rt_edges, rt_names, rt_mutants, rt_read, rt_ok, rt_back, rt_huge;
DROP FUNCTION rt_read(text, text);
