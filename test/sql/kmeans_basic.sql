--
-- kmeans_basic: recovery of known centres on well-separated blobs
--
-- Every point lies at an exact offset from its centre, symmetric around it,
-- so the true centroids, cluster sizes and inertia are known in closed form.
SET extra_float_digits = 0;

-- Five centres in 2-D.  Cluster i holds the 4 points centre +- (r, 0) and
-- centre +- (0, r) for r = 1 .. i + 1: sizes 4, 8, 12, 16, 20 (60 rows) and
-- squared distances summing to 4 * (1 + 5 + 14 + 30 + 55) = 420.
CREATE TABLE basic_centres (cid int PRIMARY KEY, cx float8, cy float8);
INSERT INTO basic_centres VALUES
	(0, 0, 0), (1, 100, 0), (2, 0, 100), (3, 100, 100), (4, 50, -200);
CREATE TABLE basic_pts AS
SELECT row_number() OVER (ORDER BY c.cid, r, o.n) AS id, c.cid,
	   ARRAY[c.cx + r * o.dx, c.cy + r * o.dy]::float8[] AS v
FROM basic_centres c,
	 generate_series(1, c.cid + 1) r,
	 (VALUES (1, 1, 0), (2, -1, 0), (3, 0, 1), (4, 0, -1)) o(n, dx, dy);
SELECT count(*) FROM basic_pts;

CREATE TABLE basic_model AS
SELECT kmeans_gpu(v, 5, '{"seed": 42}') AS m FROM basic_pts;

-- the model's header: k, d, rows, sizes, inertia, convergence
SELECT (m::jsonb->>'k')::int AS k,
	   (m::jsonb->>'d')::int AS d,
	   (m::jsonb->>'rows')::int AS rows,
	   (m::jsonb->>'null_rows')::int AS null_rows,
	   round((m::jsonb->>'inertia')::numeric, 6) AS inertia,
	   (m::jsonb->>'converged')::bool AS converged,
	   (m::jsonb->>'iterations')::int AS iterations,
	   jsonb_array_length(m::jsonb->'sizes') AS nsizes,
	   jsonb_array_length(m::jsonb->'centroids') AS ncentroids
FROM basic_model;

-- the centroids, rounded, are the true centres, each with its exact size
SELECT round(c.centroid[1]::numeric, 6) AS x, round(c.centroid[2]::numeric, 6) AS y,
	   c.size
FROM basic_model, kmeans_centroids(m) c
ORDER BY x, y;

-- within 1e-9 of the true centres, and each centre's size is its point count
SELECT count(*) AS matched
FROM basic_model, kmeans_centroids(m) c
JOIN basic_centres t ON abs(c.centroid[1] - t.cx) < 1e-9
					AND abs(c.centroid[2] - t.cy) < 1e-9
WHERE c.size = (SELECT count(*) FROM basic_pts p WHERE p.cid = t.cid);

-- inertia is 420 within 1e-9 relative
SELECT abs((m::jsonb->>'inertia')::float8 - 420) <= 420 * 1e-9 AS inertia_ok
FROM basic_model;

-- the sizes array agrees with kmeans_centroids and sums to the row count
SELECT (SELECT sum(x::bigint) FROM jsonb_array_elements_text(m::jsonb->'sizes') x) AS sum_sizes,
	   (SELECT array_agg(size ORDER BY cluster) FROM kmeans_centroids(m))
	   = (SELECT array_agg(x::bigint ORDER BY i) FROM jsonb_array_elements_text(m::jsonb->'sizes')
		  WITH ORDINALITY s(x, i)) AS sizes_agree
FROM basic_model;

-- every point is predicted into the cluster of its own centre: one label per
-- true cluster, five distinct labels
SELECT cid, min(label) = max(label) AS one_label,
	   min(label) = min(centre_label) AS centre_label,
	   round(max(distance)::numeric, 6) AS max_distance
FROM (SELECT p.cid, kmeans_predict(m, p.v) AS label,
			 kmeans_predict(m, ARRAY[t.cx, t.cy]) AS centre_label,
			 kmeans_distance(m, p.v) AS distance
	  FROM basic_model, basic_pts p JOIN basic_centres t USING (cid)) s
GROUP BY cid
ORDER BY cid;
SELECT count(DISTINCT kmeans_predict(m, v)) AS labels FROM basic_model, basic_pts;

-- the true centre is at distance 0 from its centroid; a point off-centre is
-- at its Euclidean distance (3-4-5 triangle)
SELECT round(kmeans_distance(m, ARRAY[100, 100]::float8[])::numeric, 6) AS d0,
	   round(kmeans_distance(m, ARRAY[103, 104]::float8[])::numeric, 6) AS d5
FROM basic_model;

-- k = 1: the centroid is the mean of all points, the inertia the total
-- squared deviation
SELECT round(c.centroid[1]::numeric, 6) AS x, round(c.centroid[2]::numeric, 6) AS y, c.size,
	   abs(c.centroid[1] - (SELECT avg(v[1]) FROM basic_pts)) < 1e-9
	   AND abs(c.centroid[2] - (SELECT avg(v[2]) FROM basic_pts)) < 1e-9 AS is_mean,
	   abs((m::jsonb->>'inertia')::float8 -
		   (SELECT sum((v[1] - a1) ^ 2 + (v[2] - a2) ^ 2)
			FROM basic_pts, (SELECT avg(v[1]) a1, avg(v[2]) a2 FROM basic_pts) a))
	   <= 1e-9 * (m::jsonb->>'inertia')::float8 AS inertia_ok
FROM (SELECT kmeans_gpu(v, 1) AS m FROM basic_pts) s, kmeans_centroids(m) c;

-- Eight centres at the corners of a cube of side 1000 in 3-D.  Corner i
-- has the 6 points corner +- r along each axis for r = 1 .. (i % 3) + 1:
-- sizes 6, 12, 18, 6, 12, 18, 6, 12 (90 rows) and squared distances summing
-- to 6 * (1 + 5 + 14 + 1 + 5 + 14 + 1 + 5) = 276.
CREATE TABLE cube_pts AS
SELECT row_number() OVER (ORDER BY i, r, a, s) AS id, i AS cid,
	   ARRAY[1000 * (i & 1) + CASE WHEN a = 1 THEN s * r ELSE 0 END,
			 1000 * ((i >> 1) & 1) + CASE WHEN a = 2 THEN s * r ELSE 0 END,
			 1000 * ((i >> 2) & 1) + CASE WHEN a = 3 THEN s * r ELSE 0 END]::float8[] AS v
FROM generate_series(0, 7) i, generate_series(1, 3) r, generate_series(1, 3) a,
	 (VALUES (-1), (1)) sg(s)
WHERE r <= i % 3 + 1;
SELECT count(*) FROM cube_pts;

CREATE TABLE cube_model AS
SELECT kmeans_gpu(v, 8, '{"seed": 7}') AS m FROM cube_pts;

SELECT round(c.centroid[1]::numeric, 6) AS x, round(c.centroid[2]::numeric, 6) AS y,
	   round(c.centroid[3]::numeric, 6) AS z, c.size
FROM cube_model, kmeans_centroids(m) c
ORDER BY x, y, z;

SELECT round((m::jsonb->>'inertia')::numeric, 6) AS inertia,
	   abs((m::jsonb->>'inertia')::float8 - 276) <= 276 * 1e-9 AS inertia_ok,
	   (m::jsonb->>'converged')::bool AS converged,
	   (m::jsonb->>'iterations')::int AS iterations
FROM cube_model;

-- every corner's points share one label, and the corners' labels differ
SELECT count(*) AS corners,
	   count(*) FILTER (WHERE nlabels = 1) AS pure,
	   count(DISTINCT label) AS distinct_labels
FROM (SELECT cid, count(DISTINCT kmeans_predict(m, v)) AS nlabels,
			 min(kmeans_predict(m, v)) AS label
	  FROM cube_model, cube_pts GROUP BY cid) s;

-- the same recovery from given centroids near the corners
SELECT count(*) FILTER (WHERE abs(c.centroid[1] - round(c.centroid[1] / 1000) * 1000) < 1e-9
						AND abs(c.centroid[2] - round(c.centroid[2] / 1000) * 1000) < 1e-9
						AND abs(c.centroid[3] - round(c.centroid[3] / 1000) * 1000) < 1e-9)
	   AS exact_corners,
	   count(DISTINCT c.centroid) AS distinct_centroids,
	   sum(c.size) AS total,
	   round(min((m::jsonb->>'inertia')::numeric), 6) AS inertia
FROM (SELECT kmeans_gpu(v, 8, '{"init": [[10,10,10],[990,10,10],[10,990,10],[990,990,10],
										 [10,10,990],[990,10,990],[10,990,990],[990,990,990]]}') AS m
	  FROM cube_pts) s, kmeans_centroids(m) c;

-- with centroids given, the labels follow the order of init
SELECT c.cluster, round(c.centroid[1]::numeric, 6) AS x, round(c.centroid[2]::numeric, 6) AS y,
	   round(c.centroid[3]::numeric, 6) AS z, c.size
FROM (SELECT kmeans_gpu(v, 8, '{"init": [[990,990,990],[10,10,10],[990,10,10],[10,990,10],
										 [990,990,10],[10,10,990],[990,10,990],[10,990,990]]}') AS m
	  FROM cube_pts) s, kmeans_centroids(m) c
ORDER BY c.cluster;

DROP TABLE basic_centres, basic_pts, basic_model, cube_pts, cube_model;
