--
-- kmeans_large_k: balanced clusters (max_cluster_size,
-- max_cluster_size_factor) and two-level fits (levels, refine_iter), the
-- model's fields for them and kmeans_model_centroids
--
SET gpuclust.device = cpu;
-- 160 rows in a tight blob and 40 spread far from it
CREATE TABLE lk AS
	SELECT i, CASE WHEN i <= 160
		THEN ARRAY[(i % 8) * 0.1, (i / 8 % 5) * 0.1]
		ELSE ARRAY[10.0 + i % 5, 10.0 + (i / 5) % 8] END::float8[] AS v
	FROM generate_series(1, 200) i;

-- unbalanced, then bounded to 30 rows a cluster
CREATE TABLE lk_models AS
SELECT 'plain' AS name, kmeans_gpu(v, 8, '{"seed": 3}') AS m FROM lk
UNION ALL
SELECT 'bounded', kmeans_gpu(v, 8, '{"seed": 3, "max_cluster_size": 30}') FROM lk
UNION ALL
SELECT 'factor', kmeans_gpu(v, 8, '{"seed": 3, "max_cluster_size_factor": 1.0}') FROM lk;
SELECT name,
	   (kmeans_model_info(m)->>'size_max')::int AS size_max,
	   (kmeans_model_info(m)->>'size_min')::int AS size_min,
	   kmeans_model_info(m)->'max_cluster_size' AS bound,
	   (kmeans_model_info(m)->>'balance_moves')::int > 0 AS moved,
	   (kmeans_model_info(m)->>'balance_rounds')::int >= 1 AS rounds,
	   (SELECT sum(size) FROM kmeans_centroids(m)) AS rows,
	   round((kmeans_model_info(m)->>'size_cv')::numeric, 3) AS size_cv
FROM lk_models ORDER BY name;
-- the bound costs inertia, never gains it
SELECT (b.m::jsonb->>'inertia')::float8 > (p.m::jsonb->>'inertia')::float8 AS costs
FROM lk_models b, lk_models p WHERE b.name = 'bounded' AND p.name = 'plain';
-- kmeans_gpu_assign's labels are the balanced ones: as many as the sizes
SELECT count(DISTINCT cluster) AS clusters, max(c) AS largest,
	   bool_and(c = (SELECT size FROM kmeans_centroids((SELECT m FROM lk_models WHERE name = 'bounded'))
					 WHERE kmeans_centroids.cluster = s.cluster)) AS sizes_match
FROM (SELECT cluster, count(*) OVER (PARTITION BY cluster) AS c
	  FROM kmeans_gpu_assign('SELECT i, v FROM lk', 8, '{"seed": 3, "max_cluster_size": 30}')) s;
-- the same seed, the same balanced centroids
SELECT (SELECT array_agg(centroid ORDER BY cluster) FROM kmeans_centroids(
			(SELECT kmeans_gpu(v, 8, '{"seed": 3, "max_cluster_size": 30}') FROM lk))) =
	   (SELECT array_agg(centroid ORDER BY cluster) FROM kmeans_centroids(m)) AS same
FROM lk_models WHERE name = 'bounded';

-- too tight a bound: 8 clusters of 20 rows cannot hold 200
SELECT kmeans_gpu(v, 8, '{"max_cluster_size": 20}') FROM lk;
SELECT kmeans_gpu(v, 8, '{"max_cluster_size_factor": 0.5}') FROM lk;
SELECT kmeans_gpu(v, 8, '{"max_cluster_size": 0}') FROM lk;

-- two levels: 16 clusters as about 4 coarse ones, each split by its rows
CREATE TABLE lk_two AS
SELECT 'a' AS name, kmeans_gpu(v, 16, '{"seed": 5, "levels": 2}') AS m FROM lk
UNION ALL
SELECT 'b', kmeans_gpu(v, 16, '{"seed": 5, "levels": 2}') FROM lk
UNION ALL
SELECT 'none', kmeans_gpu(v, 16, '{"seed": 5, "levels": 2, "refine_iter": 0}') FROM lk
UNION ALL
SELECT 'flat', kmeans_gpu(v, 16, '{"seed": 5}') FROM lk
UNION ALL
SELECT 'bounded', kmeans_gpu(v, 16, '{"seed": 5, "levels": 2, "max_cluster_size": 13}') FROM lk;
SELECT name, kmeans_model_info(m)->'coarse_k' AS coarse_k,
	   (kmeans_model_info(m)->>'size_max')::int AS size_max,
	   kmeans_model_info(m)->'parents' AS parents
FROM lk_two ORDER BY name;
SELECT cluster, parent, centroid FROM kmeans_model_centroids((SELECT m FROM lk_two WHERE name = 'a'))
ORDER BY cluster LIMIT 3;
-- a one-level model has no parents
SELECT count(*) AS rows, count(parent) AS parents
FROM kmeans_model_centroids((SELECT m FROM lk_two WHERE name = 'flat'));
-- deterministic, refining lowers the inertia; each coarse cluster's share
-- follows its rows, so the 40 spread rows get 3 of the 16 centroids and
-- the inertia is far above the flat fit's on these rows
SELECT (SELECT array_agg(centroid ORDER BY cluster) FROM kmeans_model_centroids(a.m)) =
	   (SELECT array_agg(centroid ORDER BY cluster) FROM kmeans_model_centroids(b.m)) AS same,
	   (a.m::jsonb->>'inertia')::float8 <= (n.m::jsonb->>'inertia')::float8 AS refined,
	   round(((a.m::jsonb->>'inertia')::float8 / (f.m::jsonb->>'inertia')::float8)::numeric, 2)
	   AS over_flat,
	   (a.m::jsonb->'timings_ms'->>'coarse')::float8 > 0 AS timed
FROM lk_two a, lk_two b, lk_two n, lk_two f
WHERE a.name = 'a' AND b.name = 'b' AND n.name = 'none' AND f.name = 'flat';

-- round trips of the new fields, text and binary
SELECT name, m::text::kmeans_model::text = m::text AS text_same,
	   kmeans_model_send(m::text::kmeans_model) = kmeans_model_send(m) AS binary_same,
	   (m::jsonb - 'centroids') = kmeans_model_info(m) AS info_same
FROM (SELECT * FROM lk_two UNION ALL SELECT * FROM lk_models) s ORDER BY name;
-- a version 4 binary value still reads, the fields version 5 added zero:
-- the plain model's form less those fields and version 6's (80 and 20
-- bytes before its 8 sizes and 8 x 2 centroids), through a binary COPY file
SELECT '/tmp/gpuclust_large_k_' || pg_backend_pid() || '.bin' AS lk_file \gset
SELECT lo_from_bytea(0, '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
		|| '\x0001'::bytea || int4send(length(p)) || p || '\xffff'::bytea) AS lk_lo
FROM (SELECT '\x0004'::bytea || substring(s FROM 3 FOR length(s) - 2 - 100 - 192)
			 || substring(s FROM length(s) - 191) AS p
	  FROM (SELECT kmeans_model_send(m) AS s FROM lk_models WHERE name = 'plain') x) y \gset
SELECT lo_export(:lk_lo, :'lk_file') AS exported;
SELECT lo_unlink(:lk_lo) AS unlinked;
CREATE TABLE lk_v4 (m kmeans_model);
COPY lk_v4 FROM :'lk_file' WITH (FORMAT binary);
\! rm -f /tmp/gpuclust_large_k_*.bin
SELECT v4.m::jsonb->'centroids' = p.m::jsonb->'centroids' AS same_centroids,
	   v4.m::jsonb->'sizes' = p.m::jsonb->'sizes' AS same_sizes,
	   v4.m::jsonb->'inertia' = p.m::jsonb->'inertia' AS same_inertia,
	   kmeans_model_info(v4.m)->>'size_max' AS size_max
FROM lk_v4 v4, lk_models p WHERE p.name = 'plain';
-- parents must name coarse clusters, and belong to a two-level model
SELECT '{"k": 2, "d": 1, "coarse_k": 1, "parents": [0, 1], "sizes": [1, 1], "centroids": [[0], [1]]}'::kmeans_model;
SELECT '{"k": 2, "d": 1, "parents": [0, 0], "sizes": [1, 1], "centroids": [[0], [1]]}'::kmeans_model;
SELECT '{"k": 2, "d": 1, "coarse_k": 1, "sizes": [1, 1], "centroids": [[0], [1]]}'::kmeans_model;
SELECT kmeans_model_centroids('{"k": 2, "d": 1, "coarse_k": 1, "parents": [0, 0], "sizes": [1, 1], "centroids": [[0], [1]]}');

-- options
SELECT kmeans_gpu(v, 8, '{"levels": 3}') FROM lk;
SELECT kmeans_gpu(v, 8, '{"refine_iter": 2}') FROM lk;
SELECT kmeans_gpu(v, 2, '{"levels": 2, "init": [[0, 0], [1, 1]]}') FROM lk;
SELECT kmeans_stream_model(kmeans_stream_state(v, 4), '{"levels": 2}') FROM lk;
DROP TABLE lk, lk_models, lk_two, lk_v4;
