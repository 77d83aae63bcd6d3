--
-- kmeans_dims: planted clusters recovered across dimensions and values of k
--
-- dims_blobs(k, per, d, spread) plants k clusters of per points each in d
-- dimensions.  The centres lie on a grid of spacing 100 in the first two
-- coordinates (32 per row) and at multiples of 100 in the others; each
-- point is its centre plus a deterministic offset in [-spread/2, spread/2)
-- per coordinate.  dims_check fits them and reports, as booleans:
--   sizes_sum  the model's sizes sum to the number of rows
--   sizes_ok   every cluster holds exactly per points (none empty)
--   recovered  labels and planted clusters correspond one to one
--   centroids  every centroid is its planted cluster's mean within 1e-9
--   inertia    the inertia is the planted clusters' total squared deviation
--   agree      the aggregate's sizes, the assignment function's labels and
--              kmeans_predict on the model all agree
CREATE FUNCTION dims_blobs(k int, per int, d int, spread float8)
RETURNS TABLE (id bigint, truth int, v float8[])
LANGUAGE sql IMMUTABLE AS $$
	SELECT (c * per + p)::bigint, c,
		   ARRAY(SELECT CASE WHEN d = 1 THEN 100 * c
							 WHEN j = 1 THEN 100 * (c % 32)
							 WHEN j = 2 THEN 100 * (c / 32)
							 ELSE 100 * (((c + 1) * (j + 1) * 37) % 11) END
						+ spread * ((hashint4(c * 100003 + p * 1009 + j) & 1023) / 1024.0 - 0.5)
				 FROM generate_series(1, d) j ORDER BY j)::float8[]
	FROM generate_series(0, k - 1) c, generate_series(0, per - 1) p
$$;

CREATE FUNCTION dims_check(k int, per int, d int, spread float8, opts jsonb,
	OUT dim int, OUT clusters int, OUT rows bigint, OUT sizes_sum bool, OUT sizes_ok bool,
	OUT recovered bool, OUT centroids bool, OUT inertia bool, OUT agree bool,
	OUT converged bool, OUT iterations int)
LANGUAGE plpgsql AS $$
DECLARE
	m kmeans_model;
BEGIN
	CREATE TEMP TABLE dims_pts AS SELECT * FROM dims_blobs(k, per, d, spread);
	-- each planted cluster's mean, coordinate by coordinate
	CREATE TEMP TABLE dims_means AS
	SELECT truth, j, avg(x) AS mean
	FROM dims_pts, unnest(v) WITH ORDINALITY u(x, j) GROUP BY truth, j;
	SELECT kmeans_gpu(v, k, opts) INTO m FROM dims_pts;
	CREATE TEMP TABLE dims_labels AS
	SELECT a.*, p.truth FROM kmeans_gpu_assign('SELECT id, v FROM dims_pts', k, opts) a
	JOIN dims_pts p USING (id);

	dim := d;
	clusters := k;
	rows := (m::jsonb->>'rows')::bigint;
	sizes_sum := (SELECT sum(size) FROM kmeans_centroids(m)) = k * per AND rows = k * per;
	sizes_ok := (SELECT bool_and(size = per) AND count(*) = k FROM kmeans_centroids(m));
	recovered := (SELECT count(DISTINCT cluster) = k AND count(DISTINCT truth) = k
						 AND count(DISTINCT (cluster, truth)) = k FROM dims_labels);
	-- the planted cluster of each label, then its centroid against the mean
	centroids := (SELECT bool_and(abs(x - dm.mean) <= 1e-9 * (1 + abs(dm.mean))) AND count(*) = k * d
				  FROM kmeans_centroids(m) c
				  JOIN (SELECT DISTINCT cluster, truth FROM dims_labels) l USING (cluster)
				  CROSS JOIN LATERAL unnest(c.centroid) WITH ORDINALITY u(x, j)
				  JOIN dims_means dm ON dm.truth = l.truth AND dm.j = u.j);
	inertia := (SELECT abs((m::jsonb->>'inertia')::float8 - s) <= 1e-9 * (s + 1)
				FROM (SELECT sum((x - dm.mean) ^ 2) AS s
					  FROM dims_pts p CROSS JOIN LATERAL unnest(p.v) WITH ORDINALITY u(x, j)
					  JOIN dims_means dm ON dm.truth = p.truth AND dm.j = u.j) t);
	agree := (SELECT count(*) FILTER (WHERE kmeans_predict(m, p.v) <> l.cluster) = 0
					 AND count(*) = k * per
			  FROM dims_labels l JOIN dims_pts p USING (id))
			 AND (SELECT array_agg(n ORDER BY cluster)
				  FROM (SELECT cluster, count(*) AS n FROM dims_labels GROUP BY cluster) s)
				 = (SELECT array_agg(size ORDER BY cluster) FROM kmeans_centroids(m));
	converged := (m::jsonb->>'converged')::bool;
	iterations := (m::jsonb->>'iterations')::int;
	DROP TABLE dims_pts, dims_means, dims_labels;
END $$;

-- every dimension, k = 10
SELECT c.*
FROM (VALUES (1), (2), (3), (8), (17), (33), (64), (128), (512), (2048)) t(d),
	 LATERAL dims_check(10, CASE WHEN t.d > 512 THEN 4 ELSE 20 END, t.d, 1.0, '{"seed": 1}') c
ORDER BY t.d;

-- every k, d = 3 (k = 1000 in d = 2 with tight clusters, 3000 points)
SELECT c.*
FROM (VALUES (1, 30, 3, 1.0), (2, 30, 3, 1.0), (10, 30, 3, 1.0), (100, 10, 3, 1.0),
			 (1000, 3, 2, 0.01)) t(k, per, d, spread),
	 LATERAL dims_check(t.k, t.per, t.d, t.spread, '{"seed": 2}') c
ORDER BY t.k;

-- the same with k-means++ replaced by given centroids (the planted centres
-- shifted by 10 in every coordinate)
SELECT c.*
FROM (VALUES (2), (17)) t(d),
	 LATERAL dims_check(5, 8, t.d,
		1.0,
		jsonb_build_object('init',
			(SELECT jsonb_agg(v ORDER BY truth)
			 FROM (SELECT truth, (SELECT array_agg(x + 10 ORDER BY j)
								  FROM unnest(v) WITH ORDINALITY u(x, j)) AS v
				   FROM dims_blobs(5, 1, t.d, 0)) s))) c
ORDER BY t.d;

-- k equal to the number of rows: every row its own cluster, inertia 0
SELECT (m::jsonb->>'k')::int AS k, (SELECT bool_and(size = 1) FROM kmeans_centroids(m)) AS singletons,
	   (m::jsonb->>'inertia')::float8 = 0 AS zero_inertia
FROM (SELECT kmeans_gpu(v, 50, '{"seed": 3}') AS m FROM dims_blobs(50, 1, 4, 1.0)) s;

-- duplicate rows: k above the number of distinct vectors leaves clusters
-- empty but every row labelled and sizes summing to n
SELECT (SELECT sum(size) FROM kmeans_centroids(m)) AS total,
	   (SELECT count(*) FILTER (WHERE size > 0) FROM kmeans_centroids(m)) AS non_empty,
	   (m::jsonb->>'inertia')::float8 = 0 AS zero_inertia
FROM (SELECT kmeans_gpu(ARRAY[(i % 3)::float8, 1], 5, '{"seed": 3}') AS m
	  FROM generate_series(1, 30) i) s;

DROP FUNCTION dims_check(int, int, int, float8, jsonb), dims_blobs(int, int, int, float8);
