--
-- service: k-means and p-median fits run in the GPU service when gpuclust is in
-- shared_preload_libraries and in the backend otherwise; the model says
-- which, and both give the same model, labels and distances.  The suite
-- runs both ways in CI.  Here the fits run on the CPU, which the service
-- takes only with gpuclust.service_cpu_fits on (its CPU path on a machine
-- without a GPU); the last part checks that by default they stay in their
-- backend.
--
SET gpuclust.device = cpu;
SET gpuclust.service_cpu_fits = on;
CREATE TABLE svc_pts AS
SELECT i AS id, ARRAY[(i % 7) * 10 + (i % 3), (i % 5) * 10 + (i % 2)]::float8[] AS v
FROM generate_series(1, 3000) i;

-- the service runs exactly when gpuclust is preloaded
SELECT (gpuclust_service_info()->>'preloaded')::bool =
	   (current_setting('shared_preload_libraries') ~ 'gpuclust') AS preloaded_as_configured,
	   (gpuclust_service_info()->>'running')::bool =
	   (current_setting('shared_preload_libraries') ~ 'gpuclust') AS running_as_configured;
CREATE FUNCTION expected_path() RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN (gpuclust_service_info()->>'running')::bool THEN 'service' ELSE 'backend' END $$;

-- the aggregate (serial plan): the path, and the model's values
SET max_parallel_workers_per_gather = 0;
CREATE TABLE svc_models AS SELECT kmeans_gpu(v, 4) AS m FROM svc_pts;
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->>'device' AS device,
	   m::jsonb->'sizes' AS sizes, round((m::jsonb->>'inertia')::numeric, 6) AS inertia,
	   m::jsonb->>'rows' AS rows, m::jsonb->>'iterations' AS iterations
FROM svc_models;
SELECT c FROM svc_models, kmeans_centroids(m) c ORDER BY c;

-- given centroids, n_init and the cosine metric cross to the service too
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->'sizes' AS sizes,
	   m::jsonb->>'iterations' AS iterations
FROM (SELECT kmeans_gpu(v, 2, '{"init": [[0, 0], [60, 40]]}') AS m FROM svc_pts) s;
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->'sizes' AS sizes,
	   round((m::jsonb->>'inertia')::numeric, 6) AS inertia
FROM (SELECT kmeans_gpu(v, 3, '{"n_init": 3, "init": "random", "seed": 7}') AS m FROM svc_pts) s;
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->>'metric' AS metric,
	   round((m::jsonb->>'inertia')::numeric, 6) AS inertia
FROM (SELECT kmeans_gpu(v, 3, '{"metric": "cosine"}') AS m FROM svc_pts WHERE id % 7 <> 0) s;

-- labels and distances come back: the assignment function and the window
-- form agree with the model they fit
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> kmeans_predict(m, p.v)) AS wrong_labels,
	   count(*) FILTER (WHERE abs(a.distance - kmeans_distance(m, p.v)) > 1e-9) AS wrong_distances
FROM kmeans_gpu_assign('SELECT id, v FROM svc_pts', 4) a
JOIN svc_pts p USING (id), svc_models;
SELECT count(*) AS rows, count(*) FILTER (WHERE c <> kmeans_predict(m, v)) AS wrong_labels
FROM (SELECT v, kmeans_gpu_cluster(v, 4) OVER () AS c FROM svc_pts) s, svc_models;

-- a parallel plan: the workers' rows reach the service where they wrote
-- them (their shared memory segments) or copied by the leader (small
-- shares); the model is the serial plan's
CREATE TABLE svc_many AS
SELECT i AS id, ARRAY[(i % 13) * 10 + (i % 3), (i % 11) * 10 + (i % 2), i % 5]::float8[] AS v
FROM generate_series(1, 60000) i;
ANALYZE svc_many;
CREATE TABLE svc_serial AS SELECT kmeans_gpu(v, 6) AS m FROM svc_many;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT m::jsonb->>'path' = expected_path() AS path_ok,
	   (m::jsonb->>'partial_states')::int > 0 AS parallel,
	   ((m::jsonb->>'shared_memory_states')::int > 0) =
	   (current_setting('shared_preload_libraries') ~ 'gpuclust' OR
		current_setting('server_version_num')::int >= 170000) AS in_shared_memory,
	   (m::jsonb - 'timings_ms' - 'partial_states' - 'shared_memory_states') =
	   (s::jsonb - 'timings_ms' - 'partial_states' - 'shared_memory_states') AS same_model
FROM (SELECT kmeans_gpu(v, 6) AS m FROM svc_many) p, (SELECT m AS s FROM svc_serial) q;
SELECT m::jsonb->>'path' = expected_path() AS path_ok,
	   (m::jsonb - 'timings_ms' - 'partial_states' - 'shared_memory_states') =
	   (s::jsonb - 'timings_ms' - 'partial_states' - 'shared_memory_states') AS same_model
FROM (SELECT kmeans_gpu(v, 4) AS m FROM svc_pts) p, (SELECT m AS s FROM svc_models) q;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- p-median fits cross to the service too: the aggregate, its capacitated
-- form (the demands go with the rows), the set-returning form (the
-- allocation comes back) and a parallel plan (the workers' rows where they
-- wrote them); each gives the serial aggregate's medoids
SET max_parallel_workers_per_gather = 0;
CREATE TABLE svc_pm AS SELECT pmedian_gpu(id, v, 4) AS m FROM svc_pts;
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->>'device_reason' AS reason,
	   m::jsonb->'medoid_ids' AS medoids, round((m::jsonb->>'objective')::numeric, 6) AS objective
FROM svc_pm;
SELECT m::jsonb->>'path' = expected_path() AS path_ok, m::jsonb->'medoid_ids' AS medoids,
	   round((m::jsonb->>'objective')::numeric, 6) AS objective,
	   round((m::jsonb->>'violation')::numeric, 6) AS violation
FROM (SELECT pmedian_gpu(id, v, 1.0 + id % 2, 4, '{"capacity": 1200}') AS m FROM svc_pts) s;
SELECT count(*) AS rows, count(DISTINCT a.medoid_id) AS medoids,
	   count(*) FILTER (WHERE a.medoid_id <> pmedian_predict(m, p.v)) AS wrong_medoids,
	   abs(sum(a.distance) - (SELECT (m::jsonb->>'objective')::float8 FROM svc_pm)) < 1e-6 AS objective_ok
FROM pmedian_gpu_assign('SELECT id, v FROM svc_pts', 4) a
JOIN svc_pts p USING (id), svc_pm;
CREATE TABLE svc_pm_serial AS SELECT pmedian_gpu(id, v, 5) AS m FROM svc_many WHERE id <= 6000;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT m::jsonb->>'path' = expected_path() AS path_ok,
	   (m::jsonb - 'timings_ms') = (s::jsonb - 'timings_ms') AS same_model
FROM (SELECT pmedian_gpu(id, v, 5) AS m FROM svc_many WHERE id <= 6000) p,
	 (SELECT m AS s FROM svc_pm_serial) q;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- errors of the fit still come from the backend, before the service
SELECT kmeans_gpu(v, 5000) FROM svc_pts;
-- the session works on after a cancelled fit
SET statement_timeout = '200ms';
SELECT kmeans_gpu(v, 100, '{"tol": 0, "max_iter": 1000000, "n_init": 1000, "init": "random"}') FROM svc_pts;
SELECT pmedian_gpu(id, v, 1.0, 400, '{"capacity": 8, "max_iter": 1000000}') FROM svc_pts;
RESET statement_timeout;
SELECT m::jsonb->'sizes' AS sizes FROM (SELECT kmeans_gpu(v, 4) AS m FROM svc_pts) s;

-- by default a fit on the CPU stays in its backend, preloaded or not (the
-- service would give it nothing but its request's cost): the same model
SET gpuclust.service_cpu_fits = off;
SELECT m::jsonb->>'path' AS path, m::jsonb->>'device_reason' AS reason,
	   (m::jsonb - 'timings_ms' - 'path') = (s::jsonb - 'timings_ms' - 'path') AS same_model
FROM (SELECT kmeans_gpu(v, 4) AS m FROM svc_pts) p, (SELECT m AS s FROM svc_models) q;
SELECT m::jsonb->>'path' AS path,
	   (m::jsonb - 'timings_ms' - 'path') = (s::jsonb - 'timings_ms' - 'path') AS same_model
FROM (SELECT pmedian_gpu(id, v, 4) AS m FROM svc_pts) p, (SELECT m AS s FROM svc_pm) q;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.cluster <> kmeans_predict(m, p.v)) AS wrong_labels
FROM kmeans_gpu_assign('SELECT id, v FROM svc_pts', 4) a JOIN svc_pts p USING (id), svc_models;
-- auto's small work too
SET gpuclust.device = auto;
SELECT m::jsonb->>'path' AS path, m::jsonb->>'device_reason' AS reason
FROM (SELECT kmeans_gpu(v, 2) AS m FROM svc_pts WHERE id <= 100) s;
-- only a superuser sends CPU fits to the service
CREATE ROLE svc_user;
SET ROLE svc_user;
SET gpuclust.service_cpu_fits = on;
RESET ROLE;
DROP ROLE svc_user;
RESET gpuclust.service_cpu_fits;
RESET gpuclust.device;
