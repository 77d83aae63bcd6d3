--
-- kmeans_model_io: the kmeans_model type's text and binary forms, storage
-- in tables, the jsonb cast, and models written by hand
--
-- extra_float_digits stays at its default: the text form then prints every
-- double exactly.

CREATE TABLE io_pts AS
SELECT i AS id, i % 4 AS grp,
	   ARRAY[1000 * (i % 4) + (hashint4(i) & 1023) / 1024.0,
			 (hashint4(i + 50000) & 1023) / 7.0]::float8[] AS v
FROM generate_series(1, 400) i;
CREATE TABLE io_models (id int PRIMARY KEY, m kmeans_model);
INSERT INTO io_models
SELECT 1, kmeans_gpu(v, 4, '{"seed": 1}') FROM io_pts
UNION ALL
SELECT 2, kmeans_gpu(v, 9, '{"seed": 2, "n_init": 2}') FROM io_pts
UNION ALL
SELECT 3, kmeans_gpu(v, 1) FROM io_pts;

-- the jsonb form has exactly these fields
SELECT string_agg(key, ', ' ORDER BY key COLLATE "C") AS fields FROM io_models, jsonb_object_keys(m::jsonb) key
WHERE id = 1;
SELECT string_agg(key, ', ' ORDER BY key COLLATE "C") AS timings FROM io_models, jsonb_object_keys(m::jsonb->'timings_ms') key
WHERE id = 1;
SELECT id, m::jsonb->>'device' IN ('cpu', 'gpu') AS device_named,
	   (SELECT bool_and(value::float8 >= 0) FROM jsonb_each_text(m::jsonb->'timings_ms')) AS timings_non_negative,
	   jsonb_typeof(m::jsonb->'converged') AS converged_type,
	   jsonb_array_length(m::jsonb->'centroids') = (m::jsonb->>'k')::int AS k_centroids,
	   (SELECT bool_and(jsonb_array_length(c) = (m::jsonb->>'d')::int)
		FROM jsonb_array_elements(m::jsonb->'centroids') c) AS d_each
FROM io_models ORDER BY id;

-- text round trip: identical text, identical binary value
SELECT id, m::text::kmeans_model::text = m::text AS text_round_trip,
	   kmeans_model_send(m::text::kmeans_model) = kmeans_model_send(m) AS same_value,
	   m::jsonb::text::kmeans_model::text = m::text AS via_jsonb
FROM io_models ORDER BY id;

-- the stored model predicts as the fresh one did
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(s.m, p.v) <> kmeans_predict(f.m, p.v)) AS differences,
	   count(*) FILTER (WHERE kmeans_distance(s.m, p.v) <> kmeans_distance(f.m, p.v)) AS distance_differences
FROM io_pts p, (SELECT m FROM io_models WHERE id = 2) s,
	 (SELECT kmeans_gpu(v, 9, '{"seed": 2, "n_init": 2}') AS m FROM io_pts) f;

-- models per group, kept in a table and used in a join
CREATE TABLE io_group_models AS
SELECT grp, kmeans_gpu(v, 2, '{"seed": 5}') AS m FROM io_pts GROUP BY grp;
SELECT g.grp, count(*) AS rows, count(DISTINCT kmeans_predict(g.m, p.v)) AS labels,
	   min((g.m::jsonb->>'rows')::int) AS model_rows
FROM io_pts p JOIN io_group_models g USING (grp)
GROUP BY g.grp ORDER BY g.grp;

--
-- COPY: text and binary, through a file and back
--
SELECT '/tmp/gpuclust_model_io_' || pg_backend_pid() AS io_prefix \gset
SELECT :'io_prefix' || '.txt' AS io_text, :'io_prefix' || '.bin' AS io_bin,
	   :'io_prefix' || '_crafted.bin' AS io_crafted,
	   'rm -f ' || :'io_prefix' || '.txt ' || :'io_prefix' || '.bin ' || :'io_prefix' || '_crafted.bin'
	   AS io_cleanup \gset
COPY io_models TO :'io_text';
COPY io_models TO :'io_bin' WITH (FORMAT binary);
CREATE TABLE io_from_text (LIKE io_models);
CREATE TABLE io_from_bin (LIKE io_models);
COPY io_from_text FROM :'io_text';
COPY io_from_bin FROM :'io_bin' WITH (FORMAT binary);
SELECT o.id,
	   kmeans_model_send(t.m) = kmeans_model_send(o.m) AS text_copy_same,
	   kmeans_model_send(b.m) = kmeans_model_send(o.m) AS binary_copy_same,
	   b.m::text = o.m::text AS binary_copy_same_text
FROM io_models o JOIN io_from_text t USING (id) JOIN io_from_bin b USING (id)
ORDER BY o.id;

-- the binary form holds a fixed header, then k sizes and k * d centroids,
-- 8 bytes each
SELECT length(kmeans_model_send(b.m)) - length(kmeans_model_send(a.m)) = 8 * (9 - 4) + 8 * 2 * (9 - 4)
	   AS k9_minus_k4,
	   length(kmeans_model_send(a.m)) - length(kmeans_model_send(c.m)) = 8 * (4 - 1) + 8 * 2 * (4 - 1)
	   AS k4_minus_k1
FROM io_models a, io_models b, io_models c WHERE a.id = 1 AND b.id = 2 AND c.id = 3;

-- a binary COPY file written byte by byte: the model's binary form as is,
-- then altered (version, length, a NaN centroid)
CREATE FUNCTION io_copy_file(payload bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
		   || '\x0001'::bytea || int4send(length(payload)) || payload || '\xffff'::bytea
$$;
CREATE TABLE io_crafted (m kmeans_model);
CREATE TABLE io_payloads AS
SELECT kmeans_model_send(m) AS good,
	   overlay(kmeans_model_send(m) PLACING '\x0001'::bytea FROM 1 FOR 2) AS bad_version,
	   substring(kmeans_model_send(m) FROM 1 FOR length(kmeans_model_send(m)) - 8) AS short,
	   kmeans_model_send(m) || '\x00'::bytea AS long,
	   overlay(kmeans_model_send(m) PLACING '\x7ff8000000000000'::bytea
			   FROM length(kmeans_model_send(m)) - 7 FOR 8) AS nan_centroid,
	   overlay(kmeans_model_send(m) PLACING '\x0007'::bytea FROM 57 FOR 2) AS odd_device
FROM io_models WHERE id = 1;

SELECT lo_from_bytea(0, io_copy_file(good)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
SELECT kmeans_model_send(c.m) = kmeans_model_send(o.m) AS crafted_same
FROM io_crafted c, io_models o WHERE o.id = 1;

SELECT lo_from_bytea(0, io_copy_file(bad_version)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE

SELECT lo_from_bytea(0, io_copy_file(short)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE

SELECT lo_from_bytea(0, io_copy_file(long)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE

SELECT lo_from_bytea(0, io_copy_file(nan_centroid)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE

-- an unknown device code (bytes 53-54: after the version, k, d, fitted_on,
-- rows, null_rows, iterations, converged and both inertias) is rejected,
-- as is every field outside its rule
SELECT lo_from_bytea(0, io_copy_file(odd_device)) AS io_lo FROM io_payloads \gset
SELECT lo_export(:io_lo, :'io_crafted');
SELECT lo_unlink(:io_lo);
TRUNCATE io_crafted;
COPY io_crafted FROM :'io_crafted' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS crafted_rows FROM io_crafted;

COPY (SELECT 1 WHERE false) TO PROGRAM :'io_cleanup';

--
-- A large model (120 kB) is stored out of line uncompressed (STORAGE
-- external), and reads back whole
--
CREATE TABLE io_big AS
SELECT jsonb_build_object(
		'k', 300, 'd', 50, 'rows', 300 * 7,
		'sizes', (SELECT jsonb_agg(7) FROM generate_series(1, 300)),
		'centroids', (SELECT jsonb_agg((SELECT jsonb_agg(c * 1000 + j + 0.125) FROM generate_series(1, 50) j)
									   ORDER BY c)
					  FROM generate_series(0, 299) c))::text::kmeans_model AS m;
SELECT pg_column_compression(m) IS NULL AS uncompressed, pg_column_size(m) > 120000 AS whole_size,
	   (m::jsonb->>'k')::int AS k, (m::jsonb->>'d')::int AS d,
	   m::text::kmeans_model::text = m::text AS round_trip
FROM io_big;
SELECT c.cluster, c.centroid[1], c.centroid[50], c.size
FROM io_big, kmeans_centroids(m) c WHERE c.cluster IN (0, 150, 299) ORDER BY c.cluster;
SELECT kmeans_predict(m, ARRAY(SELECT 150000 + j + 1.0 FROM generate_series(1, 50) j)::float8[]) AS cluster,
	   kmeans_distance(m, ARRAY(SELECT 150000 + j + 0.125 FROM generate_series(1, 50) j)::float8[]) AS distance
FROM io_big;

--
-- Models written by hand
--
-- the text form of a minimal model: defaults for every optional field
SELECT '{"k": 2, "d": 2, "sizes": [3, 4], "centroids": [[0, 0], [10, 0]]}'::kmeans_model;
-- every field read back as given
SELECT m::jsonb->'rows' AS rows, m::jsonb->'null_rows' AS null_rows, m::jsonb->'iterations' AS iterations,
	   m::jsonb->'converged' AS converged, m::jsonb->'inertia' AS inertia, m::jsonb->>'device' AS device,
	   m::jsonb->'timings_ms' AS timings_ms, m::jsonb->'sizes' AS sizes, (SELECT centroid FROM kmeans_centroids(m)) AS centroid,
	   m::text::kmeans_model::text = m::text AS round_trip
FROM (SELECT '{"k": 1, "d": 3, "rows": 5, "null_rows": 2, "iterations": 7, "converged": true,
			   "inertia": 1.5, "device": "gpu", "sizes": [5], "centroids": [[1.5, -2, 1e-300]],
			   "timings_ms": {"collect": 1, "transfer": 2, "seeding": 3, "iterations": 4}}'::kmeans_model AS m) s;
-- the input type, as a fit records it (null: not recorded)
SELECT m::jsonb->'input' AS input, m::text::kmeans_model::text = m::text AS round_trip,
	   kmeans_model_send(m) = kmeans_model_send(m::text::kmeans_model) AS same_binary
FROM (VALUES ('{"k": 1, "d": 1, "input": "vector", "sizes": [1], "centroids": [[2]]}'::kmeans_model),
			 ('{"k": 1, "d": 1, "input": "real[]", "sizes": [1], "centroids": [[2]]}'),
			 ('{"k": 1, "d": 1, "input": null, "sizes": [1], "centroids": [[2]]}')) t(m);
SELECT '{"k": 1, "d": 1, "input": "text", "sizes": [1], "centroids": [[2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- unknown fields are ignored
SELECT m::jsonb ? 'comment' AS kept_comment, m::jsonb->'centroids' AS centroids, m::jsonb->'sizes' AS sizes
FROM (SELECT '{"k": 1, "d": 1, "sizes": [0], "centroids": [[2]], "comment": "hand-made"}'::kmeans_model AS m) s;

CREATE TABLE io_hand AS
SELECT '{"k": 3, "d": 2, "sizes": [1, 1, 1], "centroids": [[0, 0], [10, 0], [0, 10]]}'::kmeans_model AS m;
SELECT c.* FROM io_hand, kmeans_centroids(m) c;
-- nearest centroid and Euclidean distance; ties go to the lowest cluster
SELECT v, kmeans_predict(m, v) AS cluster, round(kmeans_distance(m, v)::numeric, 6) AS distance
FROM io_hand, (VALUES ('{1,1}'::float8[]), ('{9,1}'), ('{1,7}'), ('{5,0}'), ('{0,5}'), ('{5,5}'),
					  ('{13,4}'), ('{-3,-4}')) t(v);
SELECT v, kmeans_predict(m, v) AS cluster, round(kmeans_distance(m, v)::numeric, 6) AS distance
FROM io_hand, (VALUES ('{6,8}'::real[]), ('{0.5,0.25}')) t(v);
-- coordinates whose squared distances would overflow a double are out of
-- range, in a model and in the vector given to predict, as in a fit
SELECT '{"k": 3, "d": 2, "sizes": [1, 1, 1], "centroids": [[0, 0], [3e200, 0], [0, 3e200]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict(m, '{2.9e200,1e199}'::float8[]) FROM io_hand;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_distance(m, '{1e151,0}'::float8[]) FROM io_hand;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE io_pts, io_models, io_group_models, io_from_text, io_from_bin, io_crafted, io_payloads,
	io_big, io_hand;
DROP FUNCTION io_copy_file(bytea);
