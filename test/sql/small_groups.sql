--
-- small_groups: a group (GROUP BY group, window partition, assign query)
-- of fewer rows than k or p fails the query ("error", the default), fits
-- one cluster per row ("shrink": the model records k or p asked and
-- fitted) or has no model ("null").  Groups of 3, 20 and 50 rows, k = p = 8.
--
CREATE TABLE sg (id bigint, g int, v float8[]);
INSERT INTO sg
SELECT i, CASE WHEN i <= 3 THEN 1 WHEN i <= 23 THEN 2 ELSE 3 END,
	   ARRAY[((i * 37) % 101)::float8, ((i * 91) % 103)::float8]
FROM generate_series(1, 73) i;
SELECT g, count(*) FROM sg GROUP BY g ORDER BY g;

-- error (the default, and asked for): the message names the rows and the option
SELECT g, kmeans_gpu(v, 8) IS NOT NULL FROM sg GROUP BY g ORDER BY g;
SELECT g, kmeans_gpu(v, 8, '{"small_groups": "error"}') IS NOT NULL FROM sg GROUP BY g ORDER BY g;
SELECT g, pmedian_gpu(id, v, 8) IS NOT NULL FROM sg GROUP BY g ORDER BY g;
\set VERBOSITY sqlstate
SELECT g, kmeans_gpu(v, 8::bigint) IS NOT NULL FROM sg GROUP BY g ORDER BY g;
\set VERBOSITY default

-- shrink: the 3-row group fits 3 clusters, one per row, at inertia 0
CREATE TABLE sg_km AS
SELECT g, kmeans_gpu(v, 8, '{"small_groups": "shrink", "seed": 1}') AS m FROM sg GROUP BY g;
SELECT g, kmeans_model_info(m)->'k' AS k, kmeans_model_info(m)->'k_requested' AS k_requested,
	   kmeans_model_info(m)->'rows' AS rows, kmeans_model_info(m)->'sizes' AS sizes
FROM sg_km ORDER BY g;
SELECT kmeans_model_info(m)->'inertia' AS inertia,
	   (SELECT array_agg(c ORDER BY c::text) FROM jsonb_array_elements(m::jsonb->'centroids') c)
	   = (SELECT array_agg(to_jsonb(v) ORDER BY to_jsonb(v)::text) FROM sg WHERE g = 1) AS centroids_are_rows
FROM sg_km WHERE g = 1;
-- the 20- and 50-row groups fit as without the option
SELECT g, m::jsonb->'centroids' = (SELECT kmeans_gpu(v, 8, '{"seed": 1}')::jsonb->'centroids'
									  FROM sg s WHERE s.g = sg_km.g) AS same_centroids
FROM sg_km WHERE g > 1 ORDER BY g;

-- null: the 3-row group has no model, the others have 8 clusters
SELECT g, m IS NULL AS no_model, kmeans_model_info(m)->'k' AS k
FROM (SELECT g, kmeans_gpu(v, 8, '{"small_groups": "null"}') AS m FROM sg GROUP BY g) s
ORDER BY g;
-- a bigint k and a numeric vector take the option too
SELECT g, m IS NULL AS no_model, kmeans_model_info(m)->'k' AS k
FROM (SELECT g, kmeans_gpu(v::int[], 8::bigint, '{"small_groups": "shrink"}') AS m FROM sg GROUP BY g) s
ORDER BY g;

-- p-median: the same three modes
SELECT g, pmedian_model_info(m)->'p' AS p, pmedian_model_info(m)->'p_requested' AS p_requested,
	   (SELECT array_agg(x::bigint ORDER BY x::bigint) FROM jsonb_array_elements_text(m::jsonb->'medoid_ids') x)
	   AS medoid_ids
FROM (SELECT g, pmedian_gpu(id, v, 8, '{"small_groups": "shrink"}') AS m FROM sg GROUP BY g) s
WHERE g = 1;
SELECT g, m IS NULL AS no_model, pmedian_model_info(m)->'p' AS p
FROM (SELECT g, pmedian_gpu(id, v, 8, '{"small_groups": "null"}') AS m FROM sg GROUP BY g) s
ORDER BY g;

-- the window forms: labels per partition
SELECT g, count(DISTINCT c) AS clusters, count(c) AS labelled, count(*) AS rows
FROM (SELECT g, kmeans_gpu_cluster(v, 8, '{"small_groups": "shrink"}') OVER (PARTITION BY g) AS c
	  FROM sg) s
GROUP BY g ORDER BY g;
SELECT g, count(DISTINCT c) AS clusters, count(c) AS labelled, count(*) AS rows
FROM (SELECT g, kmeans_gpu_cluster(v, 8, '{"small_groups": "null"}') OVER (PARTITION BY g) AS c
	  FROM sg) s
GROUP BY g ORDER BY g;
SELECT g, kmeans_gpu_cluster(v, 8) OVER (PARTITION BY g) FROM sg ORDER BY id LIMIT 1;
-- the aggregate over a window: a model per partition
SELECT g, count(*) FILTER (WHERE m IS NULL) AS no_model, min(kmeans_model_info(m)->>'k') AS k
FROM (SELECT g, kmeans_gpu(v, 8, '{"small_groups": "null"}') OVER (PARTITION BY g) AS m FROM sg) s
GROUP BY g ORDER BY g;

-- the assign forms: one query, the whole of it the group
SELECT count(DISTINCT cluster) AS clusters, count(cluster) AS labelled, max(distance) AS max_distance
FROM kmeans_gpu_assign('SELECT id, v FROM sg WHERE g = 1', 8, '{"small_groups": "shrink"}');
SELECT count(*) AS rows, count(cluster) AS labelled
FROM kmeans_gpu_assign('SELECT id, v FROM sg WHERE g = 1', 8, '{"small_groups": "null"}');
SELECT count(*) AS rows, count(medoid_id) AS labelled
FROM pmedian_gpu_assign('SELECT id, v FROM sg WHERE g = 1', 8, '{"small_groups": "null"}');
SELECT count(DISTINCT medoid_id) AS medians, max(distance) AS max_distance
FROM pmedian_gpu_assign('SELECT id, v FROM sg WHERE g = 1', 8, '{"small_groups": "shrink"}');
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM sg WHERE g = 1', 8);

-- a streaming summary of fewer points than k
SELECT kmeans_model_info(kmeans_stream_model(s, '{"small_groups": "shrink"}'))->'k_requested' AS k_requested,
	   kmeans_model_info(kmeans_stream_model(s, '{"small_groups": "shrink"}'))->'k' AS k,
	   kmeans_stream_model(s, '{"small_groups": "null"}') IS NULL AS no_model
FROM (SELECT kmeans_stream_state(v, 8) AS s FROM sg WHERE g = 1) t;

-- the option's values
SELECT kmeans_gpu(v, 2, '{"small_groups": "drop"}') FROM sg;
SELECT pmedian_gpu(id, v, 2, '{"small_groups": true}') FROM sg;

-- k_requested and p_requested read back through text and binary forms;
-- a model typed in without them asked for its k (or p)
SELECT m::text::kmeans_model::text = m::text AS text_round_trip,
	   kmeans_model_send(m::text::kmeans_model) = kmeans_model_send(m) AS binary_same
FROM sg_km WHERE g = 1;
SELECT kmeans_model_info('{"k": 1, "d": 1, "sizes": [1], "centroids": [[0]]}')->'k_requested' AS k_requested;
SELECT '{"k": 2, "d": 1, "k_requested": 1, "sizes": [1, 1], "centroids": [[0], [1]]}'::kmeans_model;
SELECT pmedian_model_info('{"p": 1, "d": 1, "medoid_ids": [4], "penalties": [0], "medoids": [[0]]}')->'p_requested'
	   AS p_requested;

-- a binary value of the previous version (3: without k_requested or
-- p_requested) reads, through COPY BINARY, as asking for its k or p
CREATE TABLE sg_v3 (km kmeans_model, pm pmedian_model);
SELECT '/tmp/gpuclust_small_groups_' || pg_backend_pid() || '.bin' AS sg_file \gset
SELECT set_config('sg.file', :'sg_file', false) IS NOT NULL AS file_set;
DO $$
DECLARE
	km bytea := kmeans_model_send((SELECT m FROM sg_km WHERE g = 1));
	pm bytea := pmedian_model_send((SELECT pmedian_gpu(id, v, 8, '{"small_groups": "shrink"}') FROM sg WHERE g = 1));
	lo oid;
	-- the sizes and centroids: 8 (k + k d) bytes after the fields
	tail int := 8 * (('x' || encode(substr(km, 3, 4), 'hex'))::bit(32)::int)
				  * (1 + ('x' || encode(substr(km, 7, 4), 'hex'))::bit(32)::int);
BEGIN
	-- version 3, the shape, then the fields without the int32 after the first one (an int16 in both)
	-- and, for k-means, without the 80 and 20 bytes of fields versions 5 and 6 added last
	km := '\x0003'::bytea || substr(km, 3, 10) || substr(km, 17, length(km) - 16 - 100 - tail)
		  || substr(km, length(km) - tail + 1);
	pm := '\x0003'::bytea || substr(pm, 3, 8) || substr(pm, 11, 4) || substr(pm, 19);
	lo := lo_from_bytea(0, '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
						|| '\x0002'::bytea || int4send(length(km)) || km
						|| int4send(length(pm)) || pm || '\xffff'::bytea);
	PERFORM lo_export(lo, current_setting('sg.file'));
	PERFORM lo_unlink(lo);
	EXECUTE format('COPY sg_v3 FROM %L WITH (FORMAT binary)', current_setting('sg.file'));
END $$;
SELECT 'rm -f ' || :'sg_file' AS sg_cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'sg_cleanup';
SELECT kmeans_model_info(km)->'k' AS k, kmeans_model_info(km)->'k_requested' AS k_requested,
	   kmeans_model_info(km)->'sizes' AS sizes,
	   pmedian_model_info(pm)->'p' AS p, pmedian_model_info(pm)->'p_requested' AS p_requested
FROM sg_v3;

DROP TABLE sg, sg_km, sg_v3;
