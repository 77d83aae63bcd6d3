--
-- kmeans_determinism: a fit depends only on the set of rows, k and the
-- options, never on the order in which the rows arrive
--
-- Models are compared as jsonb without timings_ms (the text form prints
-- doubles exactly, so equal jsonb means equal doubles).  extra_float_digits
-- stays at its default here for that reason.

-- 3000 points spread uniformly over the unit cube: no planted structure,
-- so Lloyd takes many iterations and every choice of seed matters
CREATE TABLE det_pts AS
SELECT i AS id,
	   ARRAY[(hashint4(i) & 65535) / 65536.0,
			 (hashint4(i + 100000) & 65535) / 65536.0,
			 (hashint4(i + 200000) & 65535) / 65536.0]::float8[] AS v
FROM generate_series(1, 3000) i;

CREATE FUNCTION det_strip(m kmeans_model) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$ SELECT m::jsonb - 'timings_ms' $$;

-- the same seed twice: the identical model
SELECT det_strip(a) = det_strip(b) AS same
FROM (SELECT kmeans_gpu(v, 6, '{"seed": 11}') AS a,
			 kmeans_gpu(v, 6, '{"seed": 11}') AS b FROM det_pts) s;

-- rows in ascending, descending and shuffled order give the identical model,
-- with k-means++ and with random initialisation
CREATE TABLE det_orders AS
SELECT init,
	   (SELECT kmeans_gpu(v, 6, opts ORDER BY id) FROM det_pts) AS asc_m,
	   (SELECT kmeans_gpu(v, 6, opts ORDER BY id DESC) FROM det_pts) AS desc_m,
	   (SELECT kmeans_gpu(v, 6, opts ORDER BY hashint4(id * 7)) FROM det_pts) AS shuffled_m
FROM (VALUES ('kmeans++', '{"seed": 5}'::jsonb),
			 ('random', '{"seed": 5, "init": "random"}'::jsonb)) o(init, opts);

-- centroids, sizes, iterations: identical whatever the order
SELECT init,
	   det_strip(asc_m) - 'inertia' = det_strip(desc_m) - 'inertia' AS desc_same_but_inertia,
	   det_strip(asc_m) - 'inertia' = det_strip(shuffled_m) - 'inertia' AS shuffled_same_but_inertia,
	   abs((asc_m::jsonb->>'inertia')::float8 - (desc_m::jsonb->>'inertia')::float8)
	   <= 1e-12 * (asc_m::jsonb->>'inertia')::float8 AS inertia_close
FROM det_orders ORDER BY init COLLATE "C";

-- the whole model, inertia included, is identical whatever the order
-- (currently fails: inertia is summed in row order in floating point)
SELECT init,
	   det_strip(asc_m) = det_strip(desc_m) AS desc_same,
	   det_strip(asc_m) = det_strip(shuffled_m) AS shuffled_same
FROM det_orders ORDER BY init COLLATE "C";

-- k = 120 (on the GPU, drift bounds label from k = 100; on the CPU, auto
-- is the screened scan): algorithm auto gives algorithm lloyd's model but
-- for what it skipped, in any row order; so does the pruned walk, which
-- skips most distances
SELECT det_strip(a) - 'distances_skipped' - 'algorithm'
	   = det_strip(b) - 'distances_skipped' - 'algorithm' AS auto_is_lloyd,
	   det_strip(d) - 'distances_skipped' - 'algorithm'
	   = det_strip(b) - 'distances_skipped' - 'algorithm' AS pruned_is_lloyd,
	   det_strip(a) = det_strip(c) AS desc_same,
	   (d::jsonb->>'distances_skipped')::float8 > 0.3 AS skipped,
	   (b::jsonb->>'distances_skipped')::float8 = 0 AS lloyd_skipped_none
FROM (SELECT kmeans_gpu(v, 120, '{"tol": 0, "max_iter": 60}' ORDER BY id) AS a,
			 kmeans_gpu(v, 120, '{"tol": 0, "max_iter": 60, "algorithm": "lloyd"}') AS b,
			 kmeans_gpu(v, 120, '{"tol": 0, "max_iter": 60}' ORDER BY id DESC) AS c,
			 kmeans_gpu(v, 120, '{"tol": 0, "max_iter": 60, "algorithm": "pruned"}') AS d
	  FROM det_pts) s;

-- the seed defaults to 0, and NULL options are the defaults
SELECT det_strip(a) = det_strip(b) AS seed0_is_default,
	   det_strip(a) = det_strip(c) AS empty_options,
	   det_strip(a) = det_strip(d) AS null_options
FROM (SELECT kmeans_gpu(v, 6) AS a,
			 kmeans_gpu(v, 6, '{"seed": 0}') AS b,
			 kmeans_gpu(v, 6, '{}') AS c,
			 kmeans_gpu(v, 6, NULL) AS d FROM det_pts) s;

-- different seeds give different models on unstructured data: five seeds,
-- five distinct seedings (any two may converge alike, not all five)
SELECT count(DISTINCT det_strip(m)) > 1 AS seeds_differ,
	   count(DISTINCT det_strip(m)) AS models
FROM (SELECT seed, (SELECT kmeans_gpu(v, 6, jsonb_build_object('seed', seed, 'max_iter', 1))
					FROM det_pts) AS m
	  FROM generate_series(1, 5) seed) s;
SELECT count(DISTINCT det_strip(m)) > 1 AS seeds_differ
FROM (SELECT seed, (SELECT kmeans_gpu(v, 6, jsonb_build_object('seed', seed)) FROM det_pts) AS m
	  FROM generate_series(1, 5) seed) s;

-- negative and extreme seeds are accepted, deterministic, and seed the fit
-- differently from each other
SELECT det_strip(a) = det_strip(b) AS negative_seed_stable,
	   det_strip(c) = det_strip(d) AS max_seed_stable,
	   det_strip(e) = det_strip(f) AS min_seed_stable,
	   count_distinct AS distinct_models
FROM (SELECT kmeans_gpu(v, 4, '{"seed": -17}') AS a,
			 kmeans_gpu(v, 4, '{"seed": -17}') AS b,
			 kmeans_gpu(v, 4, '{"seed": 9223372036854775807}') AS c,
			 kmeans_gpu(v, 4, '{"seed": 9223372036854775807}') AS d,
			 kmeans_gpu(v, 4, '{"seed": -9223372036854775808}') AS e,
			 kmeans_gpu(v, 4, '{"seed": -9223372036854775808}') AS f FROM det_pts) s,
	 LATERAL (SELECT count(DISTINCT x) AS count_distinct
			  FROM unnest(ARRAY[det_strip(a), det_strip(c), det_strip(e)]) x) u;

-- n_init: restart r uses seed + r and the lowest inertia wins, so n_init = 5
-- with seed 20 is the best of the single runs with seeds 20 .. 24
CREATE TABLE det_restarts AS
SELECT init, seed,
	   (SELECT kmeans_gpu(v, 6, jsonb_build_object('seed', seed, 'init', init)) FROM det_pts) AS m
FROM (VALUES ('kmeans++'), ('random')) i(init), generate_series(20, 24) seed;
CREATE TABLE det_multi AS
SELECT init,
	   (SELECT kmeans_gpu(v, 6, jsonb_build_object('seed', 20, 'init', init, 'n_init', 5))
		FROM det_pts) AS m
FROM (VALUES ('kmeans++'), ('random')) i(init);

SELECT mu.init,
	   (mu.m::jsonb->>'inertia')::float8 <= (one.m::jsonb->>'inertia')::float8 AS not_worse_than_first,
	   (mu.m::jsonb->>'inertia')::float8 = (SELECT min((r.m::jsonb->>'inertia')::float8)
											FROM det_restarts r WHERE r.init = mu.init) AS best_inertia,
	   det_strip(mu.m) = (SELECT det_strip(r.m) FROM det_restarts r WHERE r.init = mu.init
						  ORDER BY (r.m::jsonb->>'inertia')::float8, r.seed LIMIT 1) AS best_model,
	   (SELECT count(DISTINCT (r.m::jsonb->>'inertia')::float8) FROM det_restarts r
		WHERE r.init = mu.init) > 1 AS restarts_differ
FROM det_multi mu JOIN det_restarts one ON one.init = mu.init AND one.seed = 20
ORDER BY mu.init COLLATE "C";

-- n_init restarts are deterministic too, whatever the row order
SELECT det_strip(a) - 'inertia' = det_strip(b) - 'inertia' AS same_but_inertia
FROM (SELECT kmeans_gpu(v, 6, '{"seed": 20, "n_init": 5}' ORDER BY id) AS a,
			 kmeans_gpu(v, 6, '{"seed": 20, "n_init": 5}' ORDER BY id DESC) AS b FROM det_pts) s;

-- with centroids given, the seed plays no part
SELECT det_strip(a) = det_strip(b) AS seed_ignored
FROM (SELECT kmeans_gpu(v, 2, '{"seed": 1, "init": [[0.25, 0.25, 0.25], [0.75, 0.75, 0.75]]}') AS a,
			 kmeans_gpu(v, 2, '{"seed": 2, "init": [[0.25, 0.25, 0.25], [0.75, 0.75, 0.75]]}') AS b
	  FROM det_pts) s;

-- max_iter stops Lloyd: one iteration is not converged on this data
SELECT (m::jsonb->>'iterations')::int AS iterations, (m::jsonb->>'converged')::bool AS converged
FROM (SELECT kmeans_gpu(v, 6, '{"max_iter": 1}') AS m FROM det_pts) s;
SELECT (m::jsonb->>'iterations')::int AS iterations, (m::jsonb->>'converged')::bool AS converged
FROM (SELECT kmeans_gpu(v, 6, '{"max_iter": 3}') AS m FROM det_pts) s;
-- a large tol converges at once; the default runs until the shift is small
SELECT (m::jsonb->>'iterations')::int AS iterations, (m::jsonb->>'converged')::bool AS converged
FROM (SELECT kmeans_gpu(v, 6, '{"tol": 10}') AS m FROM det_pts) s;
SELECT (m::jsonb->>'iterations')::int > 3 AS many_iterations, (m::jsonb->>'converged')::bool AS converged
FROM (SELECT kmeans_gpu(v, 6) AS m FROM det_pts) s;
-- more iterations never increase the inertia of the same start
SELECT (a::jsonb->>'inertia')::float8 >= (b::jsonb->>'inertia')::float8 AS decreasing,
	   (b::jsonb->>'inertia')::float8 >= (c::jsonb->>'inertia')::float8 AS decreasing_more
FROM (SELECT kmeans_gpu(v, 6, '{"max_iter": 1}') AS a,
			 kmeans_gpu(v, 6, '{"max_iter": 3}') AS b,
			 kmeans_gpu(v, 6, '{"tol": 0}') AS c FROM det_pts) s;

-- NULL rows are skipped without changing the fit: only null_rows differs
-- (the NULL rows are interleaved with the others, whose order is kept)
SELECT det_strip(a) - 'null_rows' = det_strip(b) - 'null_rows' AS same_fit,
	   (a::jsonb->>'null_rows')::int AS a_nulls, (b::jsonb->>'null_rows')::int AS b_nulls,
	   (b::jsonb->>'rows')::int AS b_rows
FROM (SELECT kmeans_gpu(v, 6, '{"seed": 3}' ORDER BY id) AS a FROM det_pts) x,
	 (SELECT kmeans_gpu(v, 6, '{"seed": 3}' ORDER BY id, v NULLS FIRST) AS b
	  FROM (SELECT id, v FROM det_pts
			UNION ALL
			SELECT 10 * i, NULL FROM generate_series(1, 300) i) u) y;

-- the window form is also independent of the order inside OVER ()
SELECT count(*) AS rows, count(*) FILTER (WHERE a IS DISTINCT FROM b) AS differ
FROM (SELECT id, kmeans_gpu_cluster(v, 6, '{"seed": 9}') OVER (ORDER BY id) AS a FROM det_pts) x
JOIN (SELECT id, kmeans_gpu_cluster(v, 6, '{"seed": 9}') OVER (ORDER BY id DESC) AS b FROM det_pts) y
USING (id);

-- gpuclust.cpu_threads: the same model on one thread as on every core
-- (on the CPU: integer sums per thread, each row's label decided alone;
-- on the GPU, which prunes by measured times, but for what was skipped)
CREATE TABLE det_wide AS
SELECT i AS id, ARRAY(SELECT ((i * 7919 + j * 104729) % 1000) / 10.0 + (i % 37)
					  FROM generate_series(1, 16) j)::float8[] AS v
FROM generate_series(1, 20000) i;
SET gpuclust.cpu_threads = 1;
CREATE TEMP TABLE det_one AS SELECT kmeans_gpu(v, 50, '{"max_iter": 20}') AS m FROM det_wide;
RESET gpuclust.cpu_threads;
SELECT det_strip(m) - 'distances_skipped' - 'algorithm'
	   = (SELECT det_strip(kmeans_gpu(v, 50, '{"max_iter": 20}')) - 'distances_skipped' - 'algorithm'
		  FROM det_wide) AS threads_same,
	   (m::jsonb->>'iterations')::int > 1 AS iterated
FROM det_one;
SET gpuclust.cpu_threads = 65;
DROP TABLE det_wide, det_one;

DROP TABLE det_pts, det_orders, det_restarts, det_multi;
DROP FUNCTION det_strip(kmeans_model);
