-- assign_probe.sql: where kmeans_gpu_assign's CREATE TABLE AS spends its time, against
-- kmeans_gpu on the same rows (300,000 x 768 vector rows of 1,000 equal-norm patterns, k = 1,000),
-- the collecting query's own time logged by auto_explain (nested statements). On the GPU machine:
--   PG18_CONF="min_dynamic_shared_memory = 10GB" bash bench/pg18-run sh -c '"$PG18_BIN/psql" -X -f bench/assign_probe.sql'
-- (bench/results/warm-e2e-h100.md; the server log holds the nested timings)
SET gpuclust.device = gpu;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS gpuclust;
CREATE EXTENSION IF NOT EXISTS gpuclust_pgvector;
CREATE TABLE emb AS SELECT g AS id, (SELECT array_agg(((g::bigint * 7919 + j * 104729) % 1000) / 1000.0 + random() * 0.01) FROM generate_series(1, 768) j)::real[]::vector AS embedding FROM generate_series(1, 300000) g;
VACUUM ANALYZE emb;
SET max_parallel_workers_per_gather = 8;
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_timing = off;
\timing on
SELECT sum(vector_dims(embedding)) FROM emb;
SELECT sum(vector_dims(embedding)) FROM emb;
CREATE TEMP TABLE m0 AS SELECT kmeans_gpu(embedding, 1000, '{"max_iter":20,"tol":0,"seed":1}') AS m FROM emb;
CREATE TEMP TABLE m1 AS SELECT kmeans_gpu(embedding, 1000, '{"max_iter":20,"tol":0,"seed":1}') AS m FROM emb;
SELECT m::jsonb->'timings_ms' FROM m1;
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, embedding FROM emb', 1000, '{"max_iter":20,"tol":0,"seed":1}');
CREATE TABLE l1 AS SELECT * FROM kmeans_gpu_assign('SELECT id, embedding FROM emb', 1000, '{"max_iter":20,"tol":0,"seed":1}');
CREATE TABLE l2 AS SELECT * FROM kmeans_gpu_assign('SELECT id, embedding FROM emb', 1000, '{"max_iter":20,"tol":0,"seed":1}');
CREATE TABLE l3 AS SELECT id::bigint, (id % 1000)::int AS cluster, id * 0.5 AS distance FROM emb;
CREATE TABLE l4 AS SELECT id::bigint, 1::int AS cluster, 1.0::float8 AS distance FROM generate_series(1, 300000) id;
