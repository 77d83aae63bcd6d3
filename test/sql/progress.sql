--
-- progress: the gpuclust_progress view.  Fits seen from another session
-- are checked by scripts/progress-test (a server with gpuclust preloaded);
-- here, the view's shape, and that a session's own finished or failed
-- fits leave nothing in it, preloaded or not.
--
SELECT attname, atttypid::regtype
FROM pg_attribute WHERE attrelid = 'gpuclust_progress'::regclass AND attnum > 0
ORDER BY attnum;

-- reported on 17 and later (the DSM registry), on 15 and 16 when preloaded
SELECT gpuclust_progress_enabled() =
	   (current_setting('server_version_num')::int >= 170000 OR
		current_setting('shared_preload_libraries') ~ 'gpuclust') AS enabled_as_documented;

-- anyone may read it
SELECT has_table_privilege('public', 'gpuclust_progress', 'SELECT') AS public_select;

CREATE TABLE progress_pts AS
SELECT ARRAY[i % 7, i % 11]::float8[] AS v FROM generate_series(1, 500) i;

SELECT (kmeans_gpu(v, 3, '{"seed": 1, "n_init": 2}'))::jsonb->>'rows' AS rows FROM progress_pts;
SELECT count(*) AS own_rows FROM gpuclust_progress WHERE pid = pg_backend_pid();

-- the window and assignment forms
SELECT count(DISTINCT c) AS labels
FROM (SELECT kmeans_gpu_cluster(v, 3) OVER () AS c FROM progress_pts) s;
SELECT count(*) AS assigned FROM kmeans_gpu_assign('SELECT 1, v FROM progress_pts', 3);
SELECT count(*) AS own_rows FROM gpuclust_progress WHERE pid = pg_backend_pid();

-- a failed fit (k above the rows), caught in a subtransaction
DO $$
BEGIN
	PERFORM kmeans_gpu(v, 501) FROM progress_pts;
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE 'own rows after the failure: %',
		(SELECT count(*) FROM gpuclust_progress WHERE pid = pg_backend_pid());
END $$;

SELECT count(*) AS own_rows FROM gpuclust_progress WHERE pid = pg_backend_pid();

DROP TABLE progress_pts;
