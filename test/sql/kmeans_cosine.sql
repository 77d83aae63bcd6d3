-- Cosine (spherical) k-means: "metric": "cosine"
SET extra_float_digits = 0;

-- Two directions (about 0 and 90 degrees), each at magnitudes 1 and 10:
-- cosine groups by direction whatever the magnitude; Euclidean does not.
CREATE TABLE dirs AS
SELECT i, CASE WHEN i % 2 = 0 THEN ARRAY[m, m * 0.01 * (i % 7)] ELSE ARRAY[m * 0.01 * (i % 7), m] END AS v,
	   i % 2 AS direction
FROM generate_series(0, 399) i,
	 LATERAL (SELECT CASE WHEN i % 4 < 2 THEN 1.0 ELSE 10.0 END::float8 AS m) s;

-- cosine clusters follow the direction exactly
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs)
SELECT direction, count(DISTINCT kmeans_predict(m, v)) AS clusters, count(*)
FROM dirs, m GROUP BY direction ORDER BY direction;
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs)
SELECT count(DISTINCT kmeans_predict(m, v)) AS clusters_across_directions FROM dirs, m;

-- Euclidean k-means puts one (direction, magnitude) group on its own and
-- the other three together, which lowers the sum of squares more
WITH m AS (SELECT kmeans_gpu(v, 2, '{"seed": 3}') AS m FROM dirs)
SELECT direction, i % 4 < 2 AS small, kmeans_predict(m, v) AS cluster, count(*)
FROM dirs, m GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- the model says its metric; centroids are unit vectors; the inertia is
-- the sum of 1 - cos over the rows
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs)
SELECT (m::jsonb)->>'metric' AS metric,
	   (SELECT bool_and(abs(sqrt(c[1] * c[1] + c[2] * c[2]) - 1) < 1e-12)
		FROM kmeans_centroids(m) AS kc(cluster, c, size)) AS unit_centroids,
	   abs(((m::jsonb)->>'inertia')::float8 - (SELECT sum(kmeans_distance(m, v)) FROM dirs)) < 1e-9 AS inertia_is_sum_of_distances
FROM m;

-- distance is 1 - cos, in [0, 2]; scale does not change it
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs)
SELECT kmeans_distance(m, ARRAY[1.0, 0.0]::float8[]) = kmeans_distance(m, ARRAY[1000.0, 0.0]::float8[]) AS scale_free,
	   kmeans_distance(m, ARRAY[-1.0, -1.0]::float8[]) BETWEEN 1 AND 2 AS opposite_far,
	   round(kmeans_distance(m, ARRAY[1.0, 0.1]::float8[])::numeric, 3) AS near
FROM m;

-- the same clusters and distances from the set-returning and window forms
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs),
	 a AS (SELECT * FROM kmeans_gpu_assign('SELECT i, v FROM dirs', 2, '{"metric": "cosine", "seed": 3}'))
SELECT count(*) AS rows,
	   bool_and(a.cluster = kmeans_predict(m, d.v)) AS same_clusters,
	   max(abs(a.distance - kmeans_distance(m, d.v))) < 1e-12 AS same_distances
FROM dirs d JOIN a ON a.id = d.i, m;
WITH m AS (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}') AS m FROM dirs)
SELECT bool_and(w.c = kmeans_predict(m, w.v)) AS window_agrees
FROM (SELECT v, kmeans_gpu_cluster(v, 2, '{"metric": "cosine", "seed": 3}') OVER () AS c FROM dirs) w, m;

-- real[] input and given initial centroids (normalised first)
SELECT (kmeans_gpu(v::real[], 2, '{"metric": "cosine", "init": [[5, 0], [0, 7]]}'))::jsonb->'centroids' IS NOT NULL AS given_init
FROM dirs;

-- the model's text form round-trips its metric, in text and binary
SELECT (m::text::kmeans_model)::jsonb->>'metric' AS text_metric
FROM (SELECT kmeans_gpu(v, 2, '{"metric": "cosine"}') AS m FROM dirs) s;
SELECT ('{"k": 1, "d": 2, "metric": "cosine", "sizes": [1], "centroids": [[1, 0]]}'::kmeans_model)::jsonb->>'metric';
SELECT kmeans_distance('{"k": 1, "d": 2, "metric": "cosine", "sizes": [1], "centroids": [[1, 0]]}'::kmeans_model,
					   ARRAY[0.0, 3.0]::float8[]) AS orthogonal;

-- errors: zero vectors have no direction; unknown metric
SELECT kmeans_gpu(v, 2, '{"metric": "cosine"}') FROM (VALUES (ARRAY[1.0, 0.0]::float8[]), (ARRAY[0.0, 0.0]::float8[])) t(v);
SELECT kmeans_gpu(v, 1, '{"metric": "cosine", "init": [[0, 0]]}') FROM dirs;
SELECT kmeans_predict('{"k": 1, "d": 2, "metric": "cosine", "sizes": [1], "centroids": [[1, 0]]}'::kmeans_model,
					  ARRAY[0.0, 0.0]::float8[]);
SELECT kmeans_gpu(v, 2, '{"metric": "manhattan"}') FROM dirs;
SELECT '{"k": 1, "d": 2, "metric": "l1", "sizes": [1], "centroids": [[1, 0]]}'::kmeans_model;

-- Stream summaries of unit rows: "metric": "cosine" on kmeans_stream_state
-- normalises each row as it enters; the model of the summary is spherical.
-- A summary whose rows all stay raw (centres >= rows) gives the model
-- kmeans_gpu gives, and its summary_inertia is the rows' inertia
SELECT kmeans_stream_info(s)->>'metric' AS metric,
	   kmeans_stream_info(kmeans_stream_state_text)->>'metric' AS metric_after_text
FROM (SELECT kmeans_stream_state(v, 2, '{"metric": "cosine", "centres": 400}') AS s,
			 kmeans_stream_state(v, 2, '{"metric": "cosine", "centres": 400}')::text::kmeans_stream
				AS kmeans_stream_state_text FROM dirs) t;
WITH s AS (SELECT kmeans_stream_model(kmeans_stream_state(v, 2, '{"metric": "cosine", "centres": 400}'),
									 '{"seed": 3, "n_init": 1}')::jsonb AS sm,
				  (SELECT kmeans_gpu(v, 2, '{"metric": "cosine", "seed": 3}')::jsonb FROM dirs) AS gm
		   FROM dirs)
SELECT sm->>'metric' AS metric, sm->'centroids' = gm->'centroids' AS same_centroids,
	   sm->'sizes' = gm->'sizes' AS same_sizes,
	   abs((sm->>'summary_inertia')::float8 - (gm->>'inertia')::float8) < 1e-12 AS inertia_of_the_rows,
	   sm->'inertia' AS inertia
FROM s;
-- reduced in blocks of 50 rows and merged from two halves: each direction
-- still one cluster, centroids on the sphere, and the summary's inertia
-- (each row where its point went) no lower than the rows' own
CREATE TABLE dirs_summaries AS
SELECT i % 2 = 0 AS half, kmeans_stream_state(v, 2, '{"metric": "cosine", "centres": 10, "block_rows": 50}') AS s
FROM dirs GROUP BY 1;
WITH m AS (SELECT kmeans_stream_model(kmeans_stream_merge(s), '{"seed": 3}') AS m FROM dirs_summaries)
SELECT (SELECT count(DISTINCT kmeans_predict(m, v)) FROM dirs WHERE direction = 0) AS clusters_0,
	   (SELECT count(DISTINCT kmeans_predict(m, v)) FROM dirs WHERE direction = 1) AS clusters_1,
	   (SELECT count(DISTINCT kmeans_predict(m, v)) FROM dirs) AS clusters,
	   (SELECT bool_and(abs(sqrt(c[1] * c[1] + c[2] * c[2]) - 1) < 1e-12)
		FROM kmeans_centroids(m) AS kc(cluster, c, size)) AS unit_centroids,
	   (SELECT sum(size) FROM kmeans_centroids(m) AS kc(cluster, c, size)) AS rows,
	   (m::jsonb->>'summary_inertia')::float8 >= (SELECT sum(kmeans_distance(m, v)) FROM dirs) - 1e-9
		AND (m::jsonb->>'summary_inertia')::float8 <= 1.01 * (SELECT sum(kmeans_distance(m, v)) FROM dirs)
		AS inertia_of_the_rows
FROM m;
-- the model takes the summary's metric: naming the other is an error, as is
-- merging summaries of different metrics; zero vectors have no direction
SELECT kmeans_stream_model(s, '{"metric": "cosine"}') FROM (SELECT kmeans_stream_state(v, 2) s FROM dirs) t;
SELECT kmeans_stream_model(kmeans_stream_merge(s), '{"metric": "euclidean"}') FROM dirs_summaries;
SELECT kmeans_stream_merge(s)
FROM (SELECT kmeans_stream_state(v, 2) s FROM dirs UNION ALL SELECT s FROM dirs_summaries) t;
SELECT kmeans_stream_state(v, 2, '{"metric": "cosine"}') FROM (VALUES (ARRAY[1.0, 0.0]::float8[]), (ARRAY[0.0, 0.0]::float8[])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_stream_state(v, 2, '{"metric": "angular"}') FROM dirs;
DROP TABLE dirs_summaries;
