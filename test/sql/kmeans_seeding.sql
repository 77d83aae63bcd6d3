--
-- kmeans_seeding: greedy k-means++ (the default: 2 + floor(ln k)
-- candidates per step, the one that lowers the potential most kept),
-- plain k-means++ (init_candidates 1) and k-means|| (init "kmeans||",
-- the default where n k d > 2^34)
--

-- 20 blobs of 50 points on a 5 x 4 grid 10 apart, each spread uniformly
-- over a unit square: the optimum puts one centroid on each blob's mean
CREATE TABLE seed_pts AS
SELECT b * 50 + p AS id, b AS blob,
	   ARRAY[10 * (b % 5) + (hashint4(b * 1000 + p) & 1023) / 1024.0 - 0.5,
			 10 * (b / 5) + (hashint4(b * 1000 + p + 500000) & 1023) / 1024.0 - 0.5]::float8[] AS v
FROM generate_series(0, 19) b, generate_series(0, 49) p;

-- the optimal inertia: squared deviations from the blob means
CREATE TABLE seed_opt AS
SELECT sum((v[1] - m1) ^ 2 + (v[2] - m2) ^ 2) AS inertia
FROM seed_pts JOIN (SELECT blob, avg(v[1]) AS m1, avg(v[2]) AS m2
					FROM seed_pts GROUP BY blob) m USING (blob);

-- twenty seeds, each fitted with greedy and with plain seeding
CREATE TABLE seed_fits AS
SELECT s AS seed,
	   (SELECT (kmeans_gpu(v, 20, jsonb_build_object('seed', s))::jsonb->>'inertia')::float8
		FROM seed_pts) AS greedy,
	   (SELECT (kmeans_gpu(v, 20, jsonb_build_object('seed', s, 'init_candidates', 1))::jsonb->>'inertia')::float8
		FROM seed_pts) AS plain
FROM generate_series(0, 19) s;

-- runs that found every blob (the optimum): greedy in every run, plain in fewer
SELECT count(*) FILTER (WHERE greedy <= o.inertia * (1 + 1e-9)) AS greedy_optimal,
	   count(*) FILTER (WHERE plain <= o.inertia * (1 + 1e-9)) AS plain_optimal,
	   count(*) FILTER (WHERE greedy < o.inertia * (1 - 1e-9)
						OR plain < o.inertia * (1 - 1e-9)) AS below_optimum,
	   sum(greedy) < sum(plain) AS greedy_lower_total
FROM seed_fits, seed_opt o;

-- greedy seeding is reproducible and independent of row order, like plain
CREATE FUNCTION seed_strip(m kmeans_model) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$ SELECT m::jsonb - 'timings_ms' $$;
SELECT opts,
	   seed_strip(a) = seed_strip(b) AS same_twice,
	   seed_strip(a) - 'inertia' = seed_strip(c) - 'inertia' AS same_shuffled
FROM (VALUES ('{"seed": 3}'::jsonb), ('{"seed": 3, "init_candidates": 1}'),
			 ('{"seed": 3, "init_candidates": 9}')) o(opts),
	 LATERAL (SELECT kmeans_gpu(v, 7, opts ORDER BY id) AS a,
					 kmeans_gpu(v, 7, opts ORDER BY id) AS b,
					 kmeans_gpu(v, 7, opts ORDER BY hashint4(id * 7)) AS c
			  FROM seed_pts) f
ORDER BY opts::text COLLATE "C";

-- init_candidates left out is 2 + floor(ln k): 4 at k = 20
SELECT seed_strip(kmeans_gpu(v, 20, '{"seed": 5}')) =
	   seed_strip(kmeans_gpu(v, 20, '{"seed": 5, "init_candidates": 4}')) AS default_is_4,
	   seed_strip(kmeans_gpu(v, 20, '{"seed": 5}')) =
	   seed_strip(kmeans_gpu(v, 20, '{"seed": 5, "init_candidates": 1}')) AS plain_differs
FROM seed_pts;

-- on 1, 2, 3, 4 plain k-means++ (seed 0) ends in the local optimum
-- {1, 2, 3} {4} (inertia 2), greedy in the optimum {1, 2} {3, 4} (inertia 1)
SELECT (kmeans_gpu(v, 2, o)::jsonb->>'inertia')::float8 AS inertia, o AS options
FROM (SELECT ARRAY[i::float8] AS v FROM generate_series(1, 4) i) t,
	 (VALUES ('{}'::jsonb), ('{"init_candidates": 1}')) opts(o)
GROUP BY o ORDER BY o::text COLLATE "C";

-- bad values
SELECT kmeans_gpu(v, 2, '{"init_candidates": 0}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init_candidates": 65}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init_candidates": 2.5}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init_candidates": "3"}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init_candidates": null}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
-- only k-means++ draws candidates
SELECT kmeans_gpu(v, 2, '{"init": "random", "init_candidates": 3}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init_candidates": 3, "init": [[0, 0], [1, 1]]}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": "kmeans++", "init_candidates": 64}') IS NOT NULL AS ok FROM seed_pts;
-- k = 1: one draw, whatever init_candidates says
SELECT seed_strip(kmeans_gpu(v, 1, '{"init_candidates": 1}')) =
	   seed_strip(kmeans_gpu(v, 1, '{"init_candidates": 7}')) AS same
FROM seed_pts;

-- k-means||: every blob found in every run, as greedy does
SELECT count(*) FILTER (WHERE fitted <= o.inertia * (1 + 1e-9)) AS parallel_optimal,
	   count(*) FILTER (WHERE fitted < o.inertia * (1 - 1e-9)) AS below_optimum
FROM (SELECT s, (SELECT (kmeans_gpu(v, 20, jsonb_build_object('seed', s, 'init', 'kmeans||'))::jsonb->>'inertia')::float8
				 FROM seed_pts) AS fitted
	  FROM generate_series(0, 19) s) f, seed_opt o;

-- k-means|| is reproducible and independent of row order; seeds differ
SELECT seed_strip(a) = seed_strip(b) AS same_twice,
	   seed_strip(a) - 'inertia' = seed_strip(c) - 'inertia' AS same_shuffled,
	   seed_strip(a) <> seed_strip(d) AS other_seed_differs
FROM (SELECT kmeans_gpu(v, 7, '{"seed": 3, "init": "kmeans||"}' ORDER BY id) AS a,
			 kmeans_gpu(v, 7, '{"seed": 3, "init": "kmeans||"}' ORDER BY id) AS b,
			 kmeans_gpu(v, 7, '{"seed": 3, "init": "kmeans||"}' ORDER BY hashint4(id * 7)) AS c,
			 kmeans_gpu(v, 7, '{"seed": 4, "init": "kmeans||"}' ORDER BY id) AS d
	  FROM seed_pts) f;

-- the model says which seeding ran: greedy by default at this size
SELECT o AS options, kmeans_gpu(v, 5, o)::jsonb->>'init' AS init
FROM seed_pts,
	 (VALUES ('{}'::jsonb), ('{"init": "kmeans++"}'), ('{"init_candidates": 1}'),
			 ('{"init": "kmeans||"}'), ('{"init": "random"}'),
			 ('{"init": [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4]]}')) opts(o)
GROUP BY o ORDER BY o::text COLLATE "C";
-- and reads back
SELECT (m::text::kmeans_model)::jsonb->>'init' AS init_read_back
FROM (SELECT kmeans_gpu(v, 5, '{"init": "kmeans||"}') AS m FROM seed_pts) f;

-- k-means|| with k above the rows' distinct values: every value chosen
SELECT (kmeans_gpu(v, 4, '{"init": "kmeans||"}')::jsonb->>'inertia')::float8 AS inertia
FROM (SELECT ARRAY[(i % 3)::float8] AS v FROM generate_series(1, 30) i) t;

-- k-means|| draws no candidates per step
SELECT kmeans_gpu(v, 2, '{"init": "kmeans||", "init_candidates": 3}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": "kmeans|"}') FROM seed_pts;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE seed_pts, seed_opt, seed_fits;
DROP FUNCTION seed_strip(kmeans_model);
