--
-- kmeans_cancel: a long fit stops promptly on a statement timeout, in the
-- aggregate, the window function and the assignment function, and the
-- session goes on working
--
-- On the CPU everywhere, so that the fit takes the same long time on every
-- machine: 200000 points spread uniformly in 4-D, k = 100, tol 0 and no
-- practical iteration limit run for tens of seconds.
SET gpuclust.device = cpu;
CREATE TABLE cancel_pts AS
SELECT i AS id,
	   ARRAY[(hashint4(i) & 65535) / 65536.0, (hashint4(i + 1000000) & 65535) / 65536.0,
			 (hashint4(i + 2000000) & 65535) / 65536.0, (hashint4(i + 3000000) & 65535) / 65536.0]::float8[] AS v
FROM generate_series(1, 200000) i;

SET statement_timeout = '300ms';
SELECT kmeans_gpu(v, 100, '{"tol": 0, "max_iter": 100000}') FROM cancel_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM (SELECT kmeans_gpu_cluster(v, 100, '{"tol": 0, "max_iter": 100000}') OVER ()
					  FROM cancel_pts) s;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM cancel_pts', 100,
									   '{"tol": 0, "max_iter": 100000}');
\echo :LAST_ERROR_SQLSTATE
-- n_init restarts are cancelled as well
SELECT kmeans_gpu(v, 100, '{"tol": 0, "max_iter": 100000, "n_init": 50, "init": "random"}') FROM cancel_pts;
\echo :LAST_ERROR_SQLSTATE

-- the statement ends within 1.3 s of its start, for a timeout of 0.3 s
DO $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	PERFORM kmeans_gpu(v, 100, '{"tol": 0, "max_iter": 100000}') FROM cancel_pts;
	RAISE NOTICE 'aggregate: not cancelled';
EXCEPTION WHEN query_canceled THEN
	RAISE NOTICE 'aggregate cancelled within 1.3 s: %', clock_timestamp() - started < interval '1.3 s';
END $$;
DO $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	PERFORM count(*) FROM (SELECT kmeans_gpu_cluster(v, 100, '{"tol": 0, "max_iter": 100000}') OVER ()
						   FROM cancel_pts) s;
	RAISE NOTICE 'window: not cancelled';
EXCEPTION WHEN query_canceled THEN
	RAISE NOTICE 'window cancelled within 1.3 s: %', clock_timestamp() - started < interval '1.3 s';
END $$;
DO $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	PERFORM count(*) FROM kmeans_gpu_assign('SELECT id, v FROM cancel_pts', 100,
											'{"tol": 0, "max_iter": 100000}');
	RAISE NOTICE 'assign: not cancelled';
EXCEPTION WHEN query_canceled THEN
	RAISE NOTICE 'assign cancelled within 1.3 s: %', clock_timestamp() - started < interval '1.3 s';
END $$;
RESET statement_timeout;

-- the session still works, and fits as before
SELECT count(*) AS rows FROM cancel_pts;
SELECT (m::jsonb->>'rows')::int AS rows, (m::jsonb->>'k')::int AS k,
	   (SELECT sum(size) FROM kmeans_centroids(m)) AS total
FROM (SELECT kmeans_gpu(v, 3, '{"max_iter": 2}') AS m FROM cancel_pts WHERE id <= 1000) s;
SELECT count(*) AS rows, count(DISTINCT cluster) AS labels
FROM kmeans_gpu_assign('SELECT id, v FROM cancel_pts WHERE id <= 1000', 3, '{"max_iter": 2}');

RESET gpuclust.device;
DROP TABLE cancel_pts;
