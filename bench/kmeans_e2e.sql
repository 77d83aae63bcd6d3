-- End-to-end k-means in SQL: 4,000,000 rows, d = 8, k = 100 (uniform data,
-- the Li/Zhao/Chu Table 1 workload), against the bare scan of the same
-- table.  Run by bench/gpu-run on the GPU machine; psql's \timing gives
-- the wall time of each statement, the model its phase timings.
\set ON_ERROR_STOP 1
\pset pager off
\ir kmeans_e2e_table.sql
SET max_parallel_workers_per_gather = 0;
VACUUM ANALYZE bench_t;
SELECT pg_size_pretty(pg_total_relation_size('bench_t')) AS table_size;
\timing on
\echo == bare scan (serial), twice
SELECT sum(cardinality(v)) FROM bench_t;
SELECT sum(cardinality(v)) FROM bench_t;
\echo == kmeans_gpu(v, 100) on the GPU (first call creates the CUDA context)
SET gpuclust.device = gpu;
SELECT m::jsonb - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100) m FROM bench_t) s;
\echo == again: the session reuses its page-locked buffers (gpuclust.pinned_cache_mb)
SELECT m::jsonb - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100) m FROM bench_t) s;
\echo == three rounds of (bare scan, kmeans_gpu) back to back, timed in the server
\timing off
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
\timing on
\echo == 20 iterations, GPU then CPU
SELECT m::jsonb - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100, '{"max_iter": 20, "tol": 0}') m FROM bench_t) s;
\if :{?skip_cpu}
\else
SET gpuclust.device = cpu;
SELECT m::jsonb - 'centroids' - 'sizes' AS model FROM (SELECT kmeans_gpu(v, 100, '{"max_iter": 20, "tol": 0}') m FROM bench_t) s;
\endif
\echo == bare scan with parallel workers, for reference
RESET max_parallel_workers_per_gather;
SELECT sum(cardinality(v)) FROM bench_t;
