-- kmeans_gpu in a parallel plan against the parallel bare scan with the
-- same workers: 4,000,000 rows, d = 8, k = 100 (the table of
-- bench/kmeans_e2e.sql), 8 workers.  Three rounds of (scan, fit) timed in
-- the server, their ratios, and the model's account of the collection.
-- Run by bench/gpu-run parallel on the GPU machine.
\set ON_ERROR_STOP 1
\pset pager off
\ir kmeans_e2e_table.sql
ALTER TABLE bench_t SET (parallel_workers = 8);
VACUUM ANALYZE bench_t;
SET max_parallel_workers_per_gather = 8;
SET gpuclust.device = gpu;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 100) FROM bench_t;
\echo == warm-up: the CUDA context and the page-locked buffers of the session
SELECT (m::jsonb) - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100) m FROM bench_t) s;
\echo == three rounds of (parallel bare scan, parallel kmeans_gpu), timed in the server
CREATE TEMP TABLE e2e_rounds (round int, scan_ms numeric, fit_ms numeric, timings jsonb);
\set round 1
\ir kmeans_e2e_round.sql
\set round 2
\ir kmeans_e2e_round.sql
\set round 3
\ir kmeans_e2e_round.sql
SELECT round, scan_ms, fit_ms, round(fit_ms / scan_ms, 2) AS ratio FROM e2e_rounds ORDER BY round;
SELECT round, (SELECT string_agg(key || ' ' || round(value::numeric, 1), ', ' ORDER BY key)
			   FROM jsonb_each_text(timings)) AS fit_phases_ms
FROM e2e_rounds ORDER BY round;
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY fit_ms / scan_ms)::numeric, 2) AS median_ratio
FROM e2e_rounds;
\echo == serial plan, for reference
SET max_parallel_workers_per_gather = 0;
SELECT (m::jsonb)->'timings_ms' AS serial_timings FROM (SELECT kmeans_gpu(v, 100) m FROM bench_t) s;
