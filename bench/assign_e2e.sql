-- Labels as relations against the model they come from (the issue "One GPU
-- service per server"): kmeans_gpu_assign returning every row's label
-- (counted in the server, so no client transfer), the same written into a
-- table (CREATE TABLE AS), and the window form kmeans_gpu_cluster, each
-- against kmeans_gpu(v, 100) over the same rows, with the same options and
-- workers.  The table is bench/kmeans_e2e_table.sql's (4,000,000 rows of
-- d = 8).  Three rounds timed in the server; the medians of the ratios.
-- The floor of any set-returning form, timed in the same rounds: PostgreSQL
-- materialises a function's rows into a tuplestore and reads them back in
-- one process, so count(*) over generate_series of as many rows, added to
-- the model's time, is the best kmeans_gpu_assign could do (floor_ratio).
--   psql -v device=gpu [-v rows=N] [-v workers=8] [-v opts='{"max_iter":5}'] -f bench/assign_e2e.sql
-- Run by bench/gpu-run assign on the GPU machine.
\ir assign_settings.sql
\ir kmeans_e2e_table.sql
ALTER TABLE bench_t SET (parallel_workers = :workers);
VACUUM ANALYZE bench_t;
SET max_parallel_workers_per_gather = :workers;
SET gpuclust.device = :device;
SET work_mem = '1GB';
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 100, :'opts') FROM bench_t;
-- kmeans_gpu_assign's collecting statement (its query inside the aggregate
-- gpuclust_kmeans_assign_collect): the same parallel plan as the model's
EXPLAIN (COSTS OFF)
SELECT gpuclust_kmeans_assign_collect(q.id::bigint, q.v, 100, :'opts') FROM (SELECT id, v FROM bench_t) AS q(id, v);
\echo == warm-up, and the phases of the model
SELECT (m::jsonb) - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100, :'opts') m FROM bench_t) s;
CREATE TEMP TABLE assign_rounds (round int, model_ms numeric, assign_ms numeric,
								 ctas_ms numeric, window_ms numeric, srf_ms numeric);
\set round 1
\ir assign_e2e_round.sql
\set round 2
\ir assign_e2e_round.sql
\set round 3
\ir assign_e2e_round.sql
SELECT round, model_ms, assign_ms, ctas_ms, window_ms, srf_ms,
	   round((model_ms + srf_ms) / model_ms, 2) AS floor_ratio,
	   round(assign_ms / model_ms, 2) AS assign_ratio,
	   round(ctas_ms / model_ms, 2) AS ctas_ratio,
	   round(window_ms / model_ms, 2) AS window_ratio
FROM assign_rounds ORDER BY round;
\echo == medians [targets: assign <= 1.3, into a table <= 2, window <= 2]
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY (model_ms + srf_ms) / model_ms)::numeric, 2) AS floor_ratio,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY assign_ms / model_ms)::numeric, 2) AS assign_ratio,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ctas_ms / model_ms)::numeric, 2) AS ctas_ratio,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY window_ms / model_ms)::numeric, 2) AS window_ratio
FROM assign_rounds;
