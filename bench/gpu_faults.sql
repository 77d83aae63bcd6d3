-- Faults on the GPU path, run by bench/gpu-run on the GPU machine:
-- statement_timeout stops a long GPU fit within a second of the deadline,
-- no GPU memory is left behind, and the session stays usable.
\set ON_ERROR_STOP 0
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpuclust;
SET max_parallel_workers_per_gather = 0;
SELECT setseed(0.7);
-- 2M uniform 16-d rows and k = 2000 with tol 0: hundreds of iterations of
-- several milliseconds each, far beyond the 3 s deadline below
CREATE TABLE fault_t AS
	SELECT ARRAY[random(), random(), random(), random(), random(), random(), random(), random(),
				 random(), random(), random(), random(), random(), random(), random(), random()]::float8[] AS v
	FROM generate_series(1, 2000000);
SET gpuclust.device = gpu;
SELECT gpuclust_device_info() - 'memory_free_mb' AS device;
-- warm the CUDA context so that its memory is not counted below, and load
-- the kernels the shape below launches (CUDA loads a kernel's code on its
-- first launch: k-means||'s, whose code took 2 MB more when first loaded
-- by the measured fit)
SELECT (kmeans_gpu(v, 10)::jsonb)->'device' FROM fault_t;
SELECT (kmeans_gpu(v, 2000, '{"max_iter": 1, "algorithm": "lloyd"}')::jsonb)->'device' FROM fault_t;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_before \gset
SET statement_timeout = '3s';
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 2000, '{"tol": 0, "max_iter": 1000000, "algorithm": "lloyd"}') IS NOT NULL FROM fault_t;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
RESET statement_timeout;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_after \gset
SELECT :free_before - :free_after AS gpu_mb_not_returned;
SELECT (kmeans_gpu(v, 10)::jsonb)->'rows' AS session_still_works FROM fault_t;
-- the same on the tensor-core path (d = 64, k = 1024: the TF32 screen,
-- 3xTF32 over its doubts and the exact check, with their buffers)
CREATE TABLE fault_wide AS
	SELECT array_agg(random())::float8[] AS v
	FROM generate_series(1, 400000) AS r, generate_series(1, 64) AS j
	GROUP BY r;
-- warm with the shape below, so that the kernels it launches are loaded
-- (CUDA loads a kernel's code on its first launch) before measuring
SELECT (kmeans_gpu(v, 1024, '{"max_iter": 2}')::jsonb)->>'kernel' AS wide_kernel FROM fault_wide;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_before \gset
SET statement_timeout = '3s';
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 1024, '{"tol": 0, "max_iter": 1000000, "n_init": 1000}') IS NOT NULL FROM fault_wide;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
RESET statement_timeout;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_after \gset
SELECT :free_before - :free_after AS gpu_mb_not_returned;
SELECT (kmeans_gpu(v, 256, '{"max_iter": 2}')::jsonb)->>'kernel' AS wide_still_works FROM fault_wide;
-- Cancel by work (issue 15, item 6): few rows of huge d against many
-- centroids, where one pass over the rows is long.  Each statement must
-- stop within a second of its 3 s timeout (seconds_until_cancel <= 4),
-- on the GPU and then on the CPU (gpuclust.device = cpu), and leave no
-- GPU memory behind.  The shapes are the issue's: k = 1,000 over 1,030
-- rows of d = 65,536 (random init; and float64 labeling); k = 2,000 over
-- 4,000 rows of d = 8,192; p-median p = 2 over 2,100 rows of d = 65,536;
-- k = 2,000 over 2,100 rows of d = 65,536.
RESET statement_timeout;
CREATE TABLE fault_huge AS
	SELECT i AS id, array(SELECT random() FROM generate_series(1, 65536 + 0 * i)) AS v
	FROM generate_series(1, 2100) AS i;
CREATE TABLE fault_8k AS
	SELECT i AS id, array(SELECT random() FROM generate_series(1, 8192 + 0 * i)) AS v
	FROM generate_series(1, 4000) AS i;
SET gpuclust.device = gpu;
SELECT (kmeans_gpu(v, 2, '{"max_iter": 1}')::jsonb)->>'kernel' AS huge_warm FROM fault_huge;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_before \gset
SET statement_timeout = '3s';
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 1000, '{"init": "random"}') IS NOT NULL FROM fault_huge WHERE id <= 1030;
SELECT 'gpu k=1000 d=65536 n=1030' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 1000, '{"init": "random", "precision": "float64"}') IS NOT NULL
	FROM fault_huge WHERE id <= 1030;
SELECT 'gpu float64 k=1000 d=65536 n=1030' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 2000, '{"init": "random", "tol": 0, "max_iter": 1000000}') IS NOT NULL FROM fault_8k;
SELECT 'gpu k=2000 d=8192 n=4000' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 2000, '{"tol": 0, "max_iter": 1000000}') IS NOT NULL FROM fault_huge;
SELECT 'gpu k=2000 d=65536 n=2100 (k-means++)' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT pmedian_gpu(id, v, 2, '{"max_iter": 1000000}') IS NOT NULL FROM fault_huge;
SELECT 'gpu pmedian p=2 d=65536 n=2100' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
RESET statement_timeout;
SELECT (gpuclust_device_info()->>'memory_free_mb')::int AS free_after \gset
SELECT :free_before - :free_after AS gpu_mb_not_returned;
SELECT (kmeans_gpu(v, 4, '{"max_iter": 2}')::jsonb)->>'rows' AS huge_still_works FROM fault_huge;
-- the same shapes on the CPU: the issue measured 91.8, 23.9 and 195 s here
SET gpuclust.device = cpu;
SET statement_timeout = '3s';
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 1000, '{"init": "random"}') IS NOT NULL FROM fault_huge WHERE id <= 1030;
SELECT 'cpu k=1000 d=65536 n=1030' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 2000, '{"init": "random", "tol": 0}') IS NOT NULL FROM fault_8k;
SELECT 'cpu k=2000 d=8192 n=4000' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 2000) IS NOT NULL FROM fault_huge;
SELECT 'cpu k=2000 d=65536 n=2100 (k-means++)' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
SELECT clock_timestamp() AS t0 \gset
SELECT pmedian_gpu(id, v, 2) IS NOT NULL FROM fault_huge;
SELECT 'cpu pmedian p=2 d=65536 n=2100' AS shape,
	round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds_until_cancel;
RESET statement_timeout;
