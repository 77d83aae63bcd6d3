--
-- kmeans_agreement: the CPU reference and the device chosen by
-- gpuclust.device = auto give the same fit; the aggregate, the window
-- function, the assignment function and kmeans_predict agree row by row
--
-- Where a GPU is present, auto runs on it; elsewhere both runs are on the
-- CPU.  Only booleans from tolerance checks are printed, so this file's
-- output is the same on every machine.

-- n points with d coordinates drawn uniformly from [0, 1) in steps of 2^-16
CREATE FUNCTION agr_uniform(n int, d int, salt int)
RETURNS TABLE (id bigint, v float8[])
LANGUAGE sql IMMUTABLE AS $$
	SELECT i::bigint,
		   ARRAY(SELECT (hashint4(i * 1000 + j + salt * 7919) & 65535) / 65536.0
				 FROM generate_series(1, d) j ORDER BY j)::float8[]
	FROM generate_series(1, n) i
$$;

-- k blobs of per points in d dimensions, each point within [0, 1) of its
-- centre in every coordinate; the centre of blob c has coordinates
-- 100 * ((c * (j + 3) + j) % m), so blobs c and c + m share a centre: with
-- k <= m every blob has its own centre, with k > m some blobs coincide and
-- the fit must split them, drawing boundaries through dense data
CREATE FUNCTION agr_blobs(k int, per int, d int, m int)
RETURNS TABLE (id bigint, truth int, v float8[])
LANGUAGE sql IMMUTABLE AS $$
	SELECT (c * per + p)::bigint, c,
		   ARRAY(SELECT 100 * ((c * (j + 3) + j) % m) + ((hashint4(c * 7919 + p * 131 + j) & 1023) / 1024.0)
				 FROM generate_series(1, d) j ORDER BY j)::float8[]
	FROM generate_series(0, k - 1) c, generate_series(0, per - 1) p
$$;

-- the fit of kmeans_gpu over a query yielding (id, v)
CREATE FUNCTION agr_fit(query text, k int, opts jsonb) RETURNS kmeans_model
LANGUAGE plpgsql AS $$
DECLARE
	m kmeans_model;
BEGIN
	EXECUTE format('SELECT kmeans_gpu(v, %s, %L) FROM (%s) q(id, v)', k, opts, query) INTO m;
	RETURN m;
END $$;

CREATE TABLE agr_cases (name text PRIMARY KEY, query text, k int, opts jsonb);
INSERT INTO agr_cases VALUES
	('uniform d=3 k=8', 'SELECT id, v FROM agr_uniform(4000, 3, 1)', 8, '{"seed": 4}'),
	('uniform d=1 k=5', 'SELECT id, v FROM agr_uniform(2000, 1, 2)', 5, '{"seed": 1}'),
	('uniform d=33 k=5 random n_init=3', 'SELECT id, v FROM agr_uniform(800, 33, 3)', 5,
	 '{"seed": 2, "init": "random", "n_init": 3}'),
	('uniform d=2 k=100', 'SELECT id, v FROM agr_uniform(3000, 2, 4)', 100, '{"seed": 8}'),
	('uniform d=8 k=16 n=20000', 'SELECT id, v FROM agr_uniform(20000, 8, 5)', 16,
	 '{"seed": 3, "max_iter": 25}'),
	('uniform d=3 k=3 given init', 'SELECT id, v FROM agr_uniform(3000, 3, 6)', 3,
	 '{"init": [[0.1, 0.1, 0.1], [0.5, 0.5, 0.5], [0.9, 0.9, 0.9]]}'),
	('blobs d=64 k=10', 'SELECT id, v FROM agr_blobs(10, 30, 64, 11)', 10, '{"seed": 5}'),
	('blobs d=128 k=7 tol=0', 'SELECT id, v FROM agr_blobs(7, 20, 128, 7)', 7, '{"seed": 6, "tol": 0}'),
	-- 7 distinct centres for k = 10: three blobs are split in two, so many rows
	-- lie near a boundary (currently fails on the GPU at the default float32
	-- precision: 26 of 300 labels differ from the CPU's)
	('split blobs d=64 k=10', 'SELECT id, v FROM agr_blobs(10, 30, 64, 7)', 10, '{"seed": 5}');

-- the same fits on the CPU and on the automatic choice
SET gpuclust.device = cpu;
CREATE TABLE agr_cpu_models AS SELECT name, agr_fit(query, k, opts) AS m FROM agr_cases;
CREATE TABLE agr_cpu_labels AS
SELECT c.name, a.* FROM agr_cases c, kmeans_gpu_assign(c.query, c.k, c.opts) a;
SET gpuclust.device = auto;
CREATE TABLE agr_auto_models AS SELECT name, agr_fit(query, k, opts) AS m FROM agr_cases;
CREATE TABLE agr_auto_labels AS
SELECT c.name, a.* FROM agr_cases c, kmeans_gpu_assign(c.query, c.k, c.opts) a;

-- labels and distances row by row
SELECT name, count(*) AS rows,
	   count(*) FILTER (WHERE c.cluster IS DISTINCT FROM a.cluster) AS label_differences,
	   bool_and(abs(c.distance - a.distance) <= 1e-9 * greatest(c.distance, 1e-3)) AS distances_equal
FROM agr_cpu_labels c FULL JOIN agr_auto_labels a USING (name, id)
GROUP BY name ORDER BY name COLLATE "C";

-- centroids within 1e-6 relative, inertia within 1e-6 relative, sizes and
-- iterations identical
SELECT c.name,
	   (SELECT bool_and(abs(x.a - x.b) <= 1e-6 * greatest(abs(x.a), abs(x.b), 1e-6))
		FROM kmeans_centroids(c.m) cc
		JOIN kmeans_centroids(a.m) ac USING (cluster),
		LATERAL unnest(cc.centroid, ac.centroid) x(a, b)) AS centroids_equal,
	   abs((c.m::jsonb->>'inertia')::float8 - (a.m::jsonb->>'inertia')::float8)
	   <= 1e-6 * (c.m::jsonb->>'inertia')::float8 AS inertia_equal,
	   c.m::jsonb->'sizes' = a.m::jsonb->'sizes' AS sizes_equal,
	   c.m::jsonb->'iterations' = a.m::jsonb->'iterations' AS iterations_equal,
	   c.m::jsonb->'converged' = a.m::jsonb->'converged' AS converged_equal,
	   (c.m::jsonb->>'rows')::int AS rows
FROM agr_cpu_models c JOIN agr_auto_models a USING (name)
ORDER BY c.name COLLATE "C";

-- the CPU run labelled what it was asked to: k labels, all in range
SELECT name, k, count(DISTINCT cluster) AS labels_used, min(cluster) AS lo, max(cluster) AS hi
FROM agr_cpu_labels JOIN agr_cases USING (name)
GROUP BY name, k ORDER BY name COLLATE "C";

DROP TABLE agr_cpu_models, agr_cpu_labels, agr_auto_models, agr_auto_labels;

--
-- The four ways to get labels agree: the window function, the assignment
-- function, and kmeans_predict on the aggregate's model
--
CREATE TABLE agr_pts AS SELECT * FROM agr_uniform(4000, 3, 7);
CREATE TABLE agr_model AS
SELECT kmeans_gpu(v, 8, '{"seed": 4, "tol": 0}') AS m FROM agr_pts;
CREATE TABLE agr_window AS
SELECT id, kmeans_gpu_cluster(v, 8, '{"seed": 4, "tol": 0}') OVER () AS cluster FROM agr_pts;
CREATE TABLE agr_assign AS
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_pts', 8, '{"seed": 4, "tol": 0}');

SELECT count(*) AS rows,
	   count(*) FILTER (WHERE w.cluster IS DISTINCT FROM a.cluster) AS window_vs_assign,
	   count(*) FILTER (WHERE kmeans_predict(m, p.v) IS DISTINCT FROM a.cluster) AS predict_vs_assign,
	   count(*) FILTER (WHERE abs(kmeans_distance(m, p.v) - a.distance) > 1e-9) AS distance_differences,
	   count(DISTINCT a.cluster) AS labels
FROM agr_pts p JOIN agr_window w USING (id) JOIN agr_assign a USING (id), agr_model;

-- more rows than one batch of the query's reader (10,000) and a result
-- past work_mem: the same labels as the window function
SET work_mem = '64kB';
CREATE TABLE agr_big AS SELECT * FROM agr_uniform(25000, 3, 11);
SELECT count(*) AS rows, count(DISTINCT a.id) AS ids,
	   count(*) FILTER (WHERE w.cluster IS DISTINCT FROM a.cluster) AS window_vs_assign
FROM (SELECT id, kmeans_gpu_cluster(v, 5, '{"seed": 2}') OVER () AS cluster FROM agr_big) w
JOIN kmeans_gpu_assign('SELECT id, v FROM agr_big', 5, '{"seed": 2}') a USING (id);
RESET work_mem;
DROP TABLE agr_big;

-- the planner expects as many labels as the query has rows (the support
-- function plans the query where it is a constant, folded or not), and the
-- declared 1,000 where it is not a constant or cannot be planned; such a
-- query still fails with its own error when the function runs
CREATE FUNCTION agr_plan_rows(statement text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || statement INTO plan;
	RETURN plan->0->'Plan'->>'Plan Rows';
END $$;
ANALYZE agr_pts;
SELECT agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_pts', 8)$$) AS whole,
	   agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_pts LIMIT 25', 8)$$) AS limited,
	   agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_pts' || ' LIMIT 7', 8)$$) AS folded,
	   agr_plan_rows($$SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM agr_pts LIMIT 30', 3)$$) AS pmedian,
	   agr_plan_rows($$SELECT a.* FROM (SELECT 'SELECT id, v FROM agr_pts' OFFSET 0) q(s), kmeans_gpu_assign(q.s, 8) a$$) AS lateral,
	   agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_missing', 8)$$) AS missing,
	   agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELEC id', 8)$$) AS syntax,
	   agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT 1; SELECT 2', 8)$$) AS two;
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_missing', 8);
-- planned inside a transaction, the query leaves no lock behind
BEGIN;
SELECT agr_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_pts', 8)$$) AS whole;
SELECT count(*) AS locks FROM pg_locks WHERE relation = 'agr_pts'::regclass AND pid = pg_backend_pid();
COMMIT;
DROP FUNCTION agr_plan_rows(text);

-- the model's sizes are the label counts, its inertia the sum of squared
-- distances, each centroid the mean of its rows (Lloyd ran to a fixpoint)
SELECT (m::jsonb->>'converged')::bool AS converged,
	   (SELECT array_agg(n ORDER BY cluster)
		FROM (SELECT cluster, count(*) AS n FROM agr_assign GROUP BY cluster) s)
	   = (SELECT array_agg(size ORDER BY cluster) FROM kmeans_centroids(m)) AS sizes_are_counts,
	   abs((m::jsonb->>'inertia')::float8 - (SELECT sum(distance ^ 2) FROM agr_assign))
	   <= 1e-9 * (m::jsonb->>'inertia')::float8 AS inertia_is_sum,
	   (SELECT bool_and(abs(c.centroid[1] - s.m1) < 1e-12 AND abs(c.centroid[2] - s.m2) < 1e-12
						AND abs(c.centroid[3] - s.m3) < 1e-12)
		FROM kmeans_centroids(m) c
		JOIN (SELECT a.cluster, avg(p.v[1]) AS m1, avg(p.v[2]) AS m2, avg(p.v[3]) AS m3
			  FROM agr_assign a JOIN agr_pts p USING (id) GROUP BY a.cluster) s
		ON s.cluster = c.cluster) AS centroids_are_means
FROM agr_model;

-- each distance is the Euclidean distance to the row's own centroid, and no
-- other centroid is nearer
SELECT bool_and(abs(a.distance - sqrt((p.v[1] - c.centroid[1]) ^ 2 + (p.v[2] - c.centroid[2]) ^ 2
									  + (p.v[3] - c.centroid[3]) ^ 2)) < 1e-12) AS distances_ok,
	   bool_and(a.distance <= (SELECT min(sqrt((p.v[1] - o.centroid[1]) ^ 2 + (p.v[2] - o.centroid[2]) ^ 2
											   + (p.v[3] - o.centroid[3]) ^ 2))
							   FROM kmeans_centroids(m) o) + 1e-12) AS nearest
FROM agr_model, agr_assign a JOIN agr_pts p USING (id)
JOIN LATERAL kmeans_centroids(m) c ON c.cluster = a.cluster;

-- the window and the assignment function under the CPU give the same labels
-- as under auto
SET gpuclust.device = cpu;
SELECT count(*) FILTER (WHERE w.cluster IS DISTINCT FROM x.cluster) AS window_cpu_vs_auto
FROM agr_window w
JOIN (SELECT id, kmeans_gpu_cluster(v, 8, '{"seed": 4, "tol": 0}') OVER () AS cluster FROM agr_pts) x
USING (id);
SET gpuclust.device = auto;

--
-- PARTITION BY: each partition is clustered on its own, with its own k
--
-- partition p holds p + 2 blobs of 25 points in 2-D
CREATE TABLE agr_parts AS
SELECT row_number() OVER (ORDER BY p, b, i) AS id, p, b,
	   ARRAY[1000 * p + 50 * b + (hashint4(p * 10000 + b * 100 + i) & 255) / 256.0,
			 (-1) ^ b * 40 + (hashint4(p * 10000 + b * 100 + i + 5000) & 255) / 256.0]::float8[] AS v
FROM generate_series(0, 2) p, generate_series(0, 3) b, generate_series(1, 25) i
WHERE b < p + 2;
CREATE TABLE agr_parts_window AS
SELECT id, p, b, v, kmeans_gpu_cluster(v, p + 2, '{"seed": 1}') OVER (PARTITION BY p) AS cluster
FROM agr_parts;

-- per partition: p + 2 labels numbered from 0, each blob under one label
SELECT p, count(*) AS rows, count(DISTINCT cluster) AS labels, min(cluster) AS lo, max(cluster) AS hi,
	   (SELECT count(*) FROM (SELECT b FROM agr_parts_window w2 WHERE w2.p = w.p
							  GROUP BY b HAVING count(DISTINCT cluster) > 1) s) AS split_blobs,
	   count(DISTINCT (b, cluster)) AS blob_label_pairs
FROM agr_parts_window w GROUP BY p ORDER BY p;

-- the labels are those of the partition's own model
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(g.m, w.v) IS DISTINCT FROM w.cluster) AS differences
FROM agr_parts_window w
JOIN (SELECT p, kmeans_gpu(v, p + 2, '{"seed": 1}') AS m FROM agr_parts GROUP BY p) g USING (p);

-- and of the assignment function over the partition's rows alone
SELECT count(*) AS rows, count(*) FILTER (WHERE a.cluster IS DISTINCT FROM w.cluster) AS differences
FROM generate_series(0, 2) part,
	 kmeans_gpu_assign(format('SELECT id, v FROM agr_parts WHERE p = %s', part), part + 2, '{"seed": 1}') a
JOIN agr_parts_window w USING (id);

--
-- NULL vectors: NULL cluster from the window function and the assignment
-- function; the aggregate counts them in null_rows and fits the rest
--
CREATE TABLE agr_nulls AS
SELECT id, CASE WHEN id % 7 = 0 THEN NULL ELSE v END AS v FROM agr_pts;
CREATE TABLE agr_nulls_window AS
SELECT id, v, kmeans_gpu_cluster(v, 8, '{"seed": 4}') OVER () AS cluster FROM agr_nulls;
CREATE TABLE agr_nulls_assign AS
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM agr_nulls', 8, '{"seed": 4}');
CREATE TABLE agr_nulls_model AS
SELECT kmeans_gpu(v, 8, '{"seed": 4}') AS m FROM agr_nulls;

SELECT count(*) AS rows,
	   count(*) FILTER (WHERE v IS NULL) AS null_vectors,
	   count(*) FILTER (WHERE v IS NULL AND w.cluster IS NULL) AS window_null,
	   count(*) FILTER (WHERE v IS NULL AND a.cluster IS NULL AND a.distance IS NULL) AS assign_null,
	   count(*) FILTER (WHERE v IS NOT NULL AND (w.cluster IS NULL OR a.cluster IS NULL)) AS lost_labels,
	   count(*) FILTER (WHERE w.cluster IS DISTINCT FROM a.cluster) AS window_vs_assign,
	   count(*) FILTER (WHERE v IS NOT NULL AND kmeans_predict(m, v) <> a.cluster) AS predict_vs_assign
FROM agr_nulls_window w JOIN agr_nulls_assign a USING (id), agr_nulls_model;

SELECT (m::jsonb->>'rows')::int AS rows, (m::jsonb->>'null_rows')::int AS null_rows,
	   (SELECT sum(size) FROM kmeans_centroids(m)) AS sum_sizes
FROM agr_nulls_model;

-- the ids of the assignment function come through as given, NULL included,
-- in the order of the query
SELECT id, cluster, round(distance::numeric, 6) AS distance FROM kmeans_gpu_assign(
	$$SELECT * FROM (VALUES (5, '{50}'::float8[]), (NULL, '{7}'), (3, NULL), (1, '{10}'),
							(2, '{20}'), (4, '{40}')) t(i, v)$$, 2, '{"seed": 1}');
SELECT id, cluster FROM kmeans_gpu_assign('SELECT i::int2, ARRAY[i::float8] FROM generate_series(1, 4) i', 2);
SELECT id, cluster FROM kmeans_gpu_assign('SELECT i::int4, ARRAY[i::float8] FROM generate_series(1, 4) i', 2);

DROP TABLE agr_cases, agr_pts, agr_model, agr_window, agr_assign, agr_parts, agr_parts_window,
	agr_nulls, agr_nulls_window, agr_nulls_assign, agr_nulls_model;
DROP FUNCTION agr_uniform(int, int, int), agr_blobs(int, int, int, int), agr_fit(text, int, jsonb);
