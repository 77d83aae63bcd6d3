--
-- kmeans_real: real[] input gives exactly the result of float8[] input when
-- every value is representable in float4
--
-- All values below are multiples of 2^-10 under 2^12: 22 significant bits.
CREATE TABLE real_pts AS
SELECT i AS id,
	   ARRAY[100 * (i % 5) + (hashint4(i) & 1023) / 1024.0,
			 250 * (i % 3) + (hashint4(i + 7777) & 1023) / 1024.0,
			 (hashint4(i + 9999) & 1023) / 1024.0,
			 -2048 + (hashint4(i + 3333) & 1023) / 1024.0]::float8[] AS v8
FROM generate_series(1, 1500) i;
ALTER TABLE real_pts ADD COLUMN v4 real[];
UPDATE real_pts SET v4 = v8::real[];
-- the float4 copy is exact
SELECT count(*) AS rows, count(*) FILTER (WHERE v4::float8[] = v8) AS exact FROM real_pts;

CREATE FUNCTION real_strip(m kmeans_model) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$ SELECT m::jsonb - 'timings_ms' - 'input' $$;

-- the aggregate: the identical model, for several options
SELECT name,
	   real_strip(kmeans_gpu(v8, 15, opts ORDER BY id)) = real_strip(kmeans_gpu(v4, 15, opts ORDER BY id))
	   AS same_model,
	   (kmeans_gpu(v4, 15, opts)::jsonb->>'d')::int AS d
FROM real_pts,
	 (VALUES ('kmeans++', '{"seed": 1}'::jsonb),
			 ('random n_init=2', '{"seed": 2, "init": "random", "n_init": 2}'),
			 ('given', '{"init": [[0,0,0,-2048],[100,0,0,-2048],[200,0,0,-2048],[300,0,0,-2048],[400,0,0,-2048],
						 [0,250,0,-2048],[100,250,0,-2048],[200,250,0,-2048],[300,250,0,-2048],
						 [400,250,0,-2048],[0,500,0,-2048],[100,500,0,-2048],[200,500,0,-2048],
						 [300,500,0,-2048],[400,500,0,-2048]]}')) o(name, opts)
GROUP BY name, opts ORDER BY name COLLATE "C";

-- the two-argument form too
SELECT real_strip(kmeans_gpu(v8, 3 ORDER BY id)) = real_strip(kmeans_gpu(v4, 3 ORDER BY id)) AS same_model
FROM real_pts;

-- the window function and the assignment function give the same labels
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE w8 IS DISTINCT FROM w4) AS window_differences
FROM (SELECT id, kmeans_gpu_cluster(v8, 15, '{"seed": 1}') OVER () AS w8,
			 kmeans_gpu_cluster(v4, 15, '{"seed": 1}') OVER () AS w4
	  FROM real_pts) s;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a8.cluster IS DISTINCT FROM a4.cluster) AS label_differences,
	   count(*) FILTER (WHERE a8.distance IS DISTINCT FROM a4.distance) AS distance_differences
FROM kmeans_gpu_assign('SELECT id, v8 FROM real_pts', 15, '{"seed": 1}') a8
JOIN kmeans_gpu_assign('SELECT id, v4 FROM real_pts', 15, '{"seed": 1}') a4 USING (id);

-- kmeans_predict and kmeans_distance accept real[] and agree with float8[]
SELECT count(*) FILTER (WHERE kmeans_predict(m, v8) <> kmeans_predict(m, v4)) AS predict_differences,
	   count(*) FILTER (WHERE kmeans_distance(m, v8) <> kmeans_distance(m, v4)) AS distance_differences,
	   count(DISTINCT kmeans_predict(m, v4)) AS labels
FROM real_pts, (SELECT kmeans_gpu(v4, 15, '{"seed": 1}') AS m FROM real_pts) s;

-- the labels recover the 15 planted groups (i % 5, i % 3)
SELECT count(DISTINCT (i5, i3)) AS groups, count(DISTINCT label) AS labels,
	   count(DISTINCT (i5, i3, label)) AS pairs
FROM (SELECT id % 5 AS i5, id % 3 AS i3, kmeans_gpu_cluster(v4, 15, '{"seed": 1}') OVER () AS label
	  FROM real_pts) s;

-- real[] values are widened exactly, not rounded through text
SELECT round(c.centroid[1]::numeric, 6) AS x, c.size
FROM (SELECT kmeans_gpu(ARRAY[x]::real[], 1) AS m
	  FROM (VALUES (0.1::real), (0.1::real), (0.1::real)) t(x)) s, kmeans_centroids(m) c;
SELECT c.centroid[1] = 0.1::real::float8 AS widened_exactly
FROM (SELECT kmeans_gpu(ARRAY[x]::real[], 1) AS m
	  FROM (VALUES (0.1::real), (0.1::real), (0.1::real)) t(x)) s, kmeans_centroids(m) c;

DROP TABLE real_pts;
DROP FUNCTION real_strip(kmeans_model);
