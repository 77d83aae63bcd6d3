--
-- stream: kmeans_stream summaries (issue 5): quality against kmeans_gpu for
-- one summary, 16 merged summaries and a parallel plan; the text form;
-- sliding windows over per-bucket summaries; malformed values, each with
-- its SQLSTATE.  Output is the same on the CPU and the GPU paths: quality
-- is printed as booleans, counts only where they are exact.
SET extra_float_digits = 0;

-- 40000 rows in 3-D around 6 well-separated centres, with deterministic noise
CREATE TABLE stream_pts AS
SELECT i, i % 16 AS part, i % 10 AS bucket,
	   ARRAY[(i % 6) * 20 + 3 * sin(i * 1.3),
			 ((i % 6) / 2) * 25 + 3 * cos(i * 0.7),
			 (i % 6 % 2) * 30 + 3 * sin(i * 2.9 + 1)]::float8[] AS vec
FROM generate_series(1, 40000) i;

-- the reference: SSQ of kmeans_gpu with the same k
CREATE TABLE stream_ref AS
SELECT sum(kmeans_distance(m, vec) ^ 2) AS ssq
FROM (SELECT kmeans_gpu(vec, 6, '{"n_init": 4}') AS m FROM stream_pts) g, stream_pts;

CREATE FUNCTION stream_ssq(m kmeans_model) RETURNS float8
LANGUAGE sql AS $$ SELECT sum(kmeans_distance(m, vec) ^ 2) FROM stream_pts $$;

-- one summary, with small blocks so that rows climb several levels
CREATE TABLE stream_one AS
SELECT kmeans_stream_state(vec, 6, '{"block_rows": 1000, "centres": 60, "seed": 3}') AS s
FROM stream_pts;
SELECT (i->>'rows')::int AS rows, (i->>'d')::int AS d, (i->>'k')::int AS k,
	   (i->>'centres_per_block')::int AS m, (i->>'block_rows')::int AS block_rows,
	   (i->>'levels')::int >= 3 AS several_levels,
	   (i->'level_points'->>0)::int AS raw_rows_left,
	   (i->>'points')::int <= 60 * 8 * (i->>'levels')::int AS bounded,
	   (i->>'bytes')::int = octet_length(decode(s::text, 'base64')) + 4 AS bytes_match
FROM stream_one, kmeans_stream_info(s) i;
SELECT stream_ssq(kmeans_stream_model(s)) <= 1.05 * ssq AS one_state_within_5pct
FROM stream_one, stream_ref;

-- the model works with the model functions: 6 clusters of 6667 or 6666 rows
SELECT count(*) AS clusters, min(size) AS smallest, max(size) AS largest
FROM stream_one, kmeans_centroids(kmeans_stream_model(s));
WITH model AS MATERIALIZED (SELECT kmeans_stream_model(s) AS m FROM stream_one)
SELECT count(DISTINCT kmeans_predict(m, vec)) AS predicted FROM model, stream_pts;
-- what the model says of its origin: a summary, whose rows' type is not
-- kept; fitted in the GPU service where one runs and the fit is on the GPU
SELECT i->>'input' AS input, i->>'inertia' AS inertia, (i->>'summary_inertia')::float8 > 0 AS summary_inertia,
	   i->>'null_rows' AS null_rows, i->'timings_ms'->>'collect' AS collect,
	   i->>'path' = CASE WHEN (gpuclust_service_info()->>'running')::bool AND i->>'device' = 'gpu'
						 THEN 'service' ELSE 'backend' END AS path_ok
FROM stream_one, kmeans_model_info(kmeans_stream_model(s)) i;

-- 16 summaries, one per part, merged by the aggregate and pairwise
CREATE TABLE stream_parts AS
SELECT part, kmeans_stream_state(vec, 6, '{"block_rows": 500, "centres": 60}') AS s
FROM stream_pts GROUP BY part;
SELECT count(*) AS parts, sum((kmeans_stream_info(s)->>'rows')::int) AS rows FROM stream_parts;
SELECT (kmeans_stream_info(kmeans_stream_merge(s))->>'rows')::int AS merged_rows,
	   stream_ssq(kmeans_stream_model(kmeans_stream_merge(s))) <= 1.05 * ssq AS merged_16_within_5pct
FROM stream_parts, stream_ref GROUP BY ssq;
SELECT (kmeans_stream_info(kmeans_stream_merge(a.s, b.s))->>'rows')::int AS pair_rows
FROM stream_parts a, stream_parts b WHERE a.part = 0 AND b.part = 1;
SELECT kmeans_stream_merge(s, NULL) IS NOT NULL AS null_ignored,
	   kmeans_stream_merge(NULL::kmeans_stream, NULL) IS NULL AS both_null
FROM stream_parts WHERE part = 0;

-- the text form round-trips
SELECT s::text = (s::text::kmeans_stream)::text AS text_round_trip FROM stream_one;

-- parallel aggregation: workers summarise, the leader merges (COMBINEFUNC)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
SELECT kmeans_stream_state(vec, 6, '{"block_rows": 1000, "centres": 60}') FROM stream_pts;
CREATE TABLE stream_par AS
SELECT kmeans_stream_state(vec, 6, '{"block_rows": 1000, "centres": 60}') AS s FROM stream_pts;
SELECT (kmeans_stream_info(s)->>'rows')::int AS rows,
	   stream_ssq(kmeans_stream_model(s)) <= 1.05 * ssq AS parallel_within_5pct
FROM stream_par, stream_ref;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

-- sliding windows: one summary per bucket, a window of the last 3 buckets
CREATE TABLE stream_buckets AS
SELECT bucket, kmeans_stream_state(vec, 6, '{"centres": 60}') AS s
FROM stream_pts GROUP BY bucket;
SELECT bucket,
	   (kmeans_stream_info(kmeans_stream_merge(s) OVER w)->>'rows')::int AS window_rows
FROM stream_buckets
WINDOW w AS (ORDER BY bucket ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)
ORDER BY bucket;
-- the model of the last 3 buckets, checked on their rows
SELECT sum(kmeans_distance(m, vec) ^ 2) <=
	   1.05 * (SELECT sum(kmeans_distance(g, vec) ^ 2)
			   FROM (SELECT kmeans_gpu(vec, 6, '{"n_init": 4}') AS g
					 FROM stream_pts WHERE bucket >= 7) r, stream_pts WHERE bucket >= 7)
	   AS window_within_5pct
FROM (SELECT kmeans_stream_model(kmeans_stream_merge(s)) AS m
	  FROM stream_buckets WHERE bucket >= 7) w, stream_pts
WHERE bucket >= 7;

-- edge cases: no rows and NULL rows give NULL; real[] vectors; NULLs skipped
SELECT kmeans_stream_state(vec, 3) IS NULL AS no_rows FROM stream_pts WHERE false;
SELECT kmeans_stream_state(NULL::float8[], 3) IS NULL AS null_rows FROM generate_series(1, 3);
SELECT (kmeans_stream_info(kmeans_stream_state(v, 2))->>'rows')::int AS real_rows
FROM (VALUES (ARRAY[1, 2]::real[]), (NULL), (ARRAY[3, 4]::real[]), (ARRAY[5, 7]::real[])) t(v);

-- user errors, each with its SQLSTATE
CREATE FUNCTION stream_error(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT what, stream_error(q) AS error FROM (VALUES
	('unknown option', $q$SELECT kmeans_stream_state(vec, 6, '{"bogus": 1}') FROM stream_pts$q$),
	('centres below k', $q$SELECT kmeans_stream_state(vec, 6, '{"centres": 3}') FROM stream_pts$q$),
	('block below 2m', $q$SELECT kmeans_stream_state(vec, 6, '{"centres": 60, "block_rows": 100}') FROM stream_pts$q$),
	('k = 0', $q$SELECT kmeans_stream_state(vec, 0) FROM stream_pts$q$),
	('k NULL', $q$SELECT kmeans_stream_state(vec, NULL) FROM stream_pts$q$),
	('dimensions differ', $q$SELECT kmeans_stream_state(v, 2) FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY[1, 2, 3]::float8[])) t(v)$q$),
	('NaN element', $q$SELECT kmeans_stream_state(v, 2) FROM (VALUES (ARRAY[1, 'NaN']::float8[])) t(v)$q$),
	('fewer points than k', $q$SELECT kmeans_stream_model(kmeans_stream_state(v, 3)) FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY[3, 4]::float8[])) t(v)$q$),
	('merge of different k', $q$SELECT kmeans_stream_merge(a.s, b.s) FROM stream_one a, (SELECT kmeans_stream_state(vec, 5) AS s FROM stream_pts) b$q$),
	('unknown model option', $q$SELECT kmeans_stream_model(s, '{"bogus": 1}') FROM stream_one$q$),
	('not base64', $q$SELECT 'not base64!'::kmeans_stream$q$),
	('seed not whole', $q$SELECT kmeans_stream_state(vec, 6, '{"seed": 1.7}') FROM stream_pts$q$),
	('transition function called', $q$SELECT kmeans_stream_transfn(NULL, ARRAY[1, 2]::float8[], 3)$q$)
) t(what, q);

-- malformed values: every one rejected with a reason, never a crash.  The
-- summary of 3 rows with k = m = 1 and blocks of 2: a level-1 centre of
-- weight 2 and a raw row; 120 bytes: header (48), level counts (48, 56),
-- weights (64, 72), points (80 ..), checksum (112)
CREATE TABLE stream_small AS
SELECT decode(kmeans_stream_state(v, 1, '{"centres": 1, "block_rows": 2}')::text, 'base64') AS b
FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY[3, 4]::float8[]), (ARRAY[5, 6]::float8[])) t(v);
-- FNV-1a 64 checksum rewritten after a deliberate change, to reach the
-- checks that follow it
CREATE FUNCTION stream_reseal(b bytea) RETURNS bytea LANGUAGE plpgsql AS $$
DECLARE
	h numeric := 14695981039346656037;
	n int := length(b);
	lo int;
BEGIN
	FOR i IN 0 .. n - 9 LOOP
		lo := (h % 256)::int;
		h := h - lo + (lo # get_byte(b, i));
		h := (h * 1099511628211) % 18446744073709551616;
	END LOOP;
	FOR i IN 0 .. 7 LOOP
		b := set_byte(b, n - 8 + i, (div(h, 256::numeric ^ i) % 256)::int);
	END LOOP;
	RETURN b;
END $$;
CREATE FUNCTION stream_try(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	PERFORM encode(b, 'base64')::kmeans_stream;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || ' (' || coalesce(detail, '') || ')';
END $$;
SELECT length(b) AS bytes, stream_try(b) AS valid, stream_try(stream_reseal(b)) AS resealed
FROM stream_small;
SELECT what, stream_try(v) AS result FROM stream_small, LATERAL (VALUES
	('empty', ''::bytea),
	('truncated', substr(b, 1, 40)),
	('cut short', substr(b, 1, length(b) - 1)),
	('one byte more', b || '\x00'::bytea),
	('bad magic', set_byte(b, 0, 0)),
	('wrong version', set_byte(b, 4, 9)),
	('zero dimension', set_byte(b, 8, 0)),
	('block below 2m', set_byte(b, 20, 1)),
	('crafted level count', set_byte(b, 55, 127)),
	('inconsistent counts', set_byte(b, 48, 2)),
	('bad checksum', set_byte(b, length(b) - 1, get_byte(b, length(b) - 1) # 1)),
	('rows not the weight sum', stream_reseal(set_byte(b, 32, 4))),
	('raw row of weight 2', stream_reseal(overlay(b placing '\x0000000000000040'::bytea from 65))),
	('NaN weight', stream_reseal(overlay(b placing '\x000000000000f87f'::bytea from 73))),
	('fractional weight', stream_reseal(overlay(b placing '\x000000000000f83f'::bytea from 73))),
	('infinite value', stream_reseal(overlay(b placing '\x000000000000f07f'::bytea from 81)))
) t(what, v);
DROP TABLE stream_pts, stream_ref, stream_one, stream_parts, stream_par, stream_buckets, stream_small;
DROP FUNCTION stream_ssq(kmeans_model), stream_reseal(bytea), stream_try(bytea), stream_error(text);
