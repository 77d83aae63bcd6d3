-- collect_memory.sql: what the memory behind the row store costs while
-- rows are collected, on the embedding benchmark's table (run after
-- bench/embedding_e2e.py in the same bench/pg18-run, which leaves emb):
-- 500,000 rows of d = 768 (3.1 GB of float8 rows, about 60 chunks) collected
-- serially into plain memory (device = cpu), into fresh page-locked memory
-- (device = gpu, cudaHostAlloc per chunk) and into page-locked memory reused
-- from the session's cache (the same fit again).  k = 1 and one iteration,
-- so that collection is nearly all of each fit; the model's timings say
-- collect and transfer (the upload) apart.
\timing on
SET max_parallel_workers_per_gather = 0;
SET gpuclust.pinned_cache_mb = 8192;
SELECT 'bare scan' AS run, sum(vector_dims(embedding)) FROM emb WHERE id < 500000;
SET gpuclust.device = cpu;
SELECT 'plain memory (cpu)' AS run,
	   kmeans_gpu(embedding, 1, '{"max_iter": 1}')::jsonb -> 'timings_ms' AS timings
FROM emb WHERE id < 500000;
SET gpuclust.device = gpu;
SELECT 'warm-up: the CUDA context' AS run, kmeans_gpu(embedding, 1)::jsonb -> 'device' AS device
FROM emb WHERE id < 10;
SELECT 'fresh page-locked memory (gpu)' AS run,
	   kmeans_gpu(embedding, 1, '{"max_iter": 1}')::jsonb -> 'timings_ms' AS timings
FROM emb WHERE id < 500000;
SELECT 'cached page-locked memory (gpu)' AS run,
	   kmeans_gpu(embedding, 1, '{"max_iter": 1}')::jsonb -> 'timings_ms' AS timings
FROM emb WHERE id < 500000;
