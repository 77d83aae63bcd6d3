-- bench/stream_cosine.sql: cosine stream summaries against kmeans_gpu's cosine fit, on the
-- GPU (H100 machine: bash bench/pg18-run sh -c 'psql -X -q -c "CREATE EXTENSION gpuclust" &&
-- psql -X -f bench/stream_cosine.sql'), raw output in bench/results/stream-cosine-h100.txt;
-- with gpuclust preloaded the summaries' GPU clusterings run in the GPU service
-- (bench/results/stream-service-h100.txt)
SET gpuclust.device = gpu;
SET max_parallel_workers_per_gather = 0;
\timing on
CREATE TABLE sv AS
SELECT i, (SELECT array_agg(CASE WHEN j % 50 = i % 50 THEN 3.0 ELSE 0.0 END + random() - 0.5)
           FROM generate_series(1, 128) j)::real[] AS v
FROM generate_series(1, 400000) i;
SELECT kmeans_stream_state(v, 50, '{"metric": "cosine"}') IS NOT NULL warm FROM sv WHERE i <= 70000;
CREATE TABLE s_cos AS SELECT kmeans_stream_state(v, 50, '{"metric": "cosine"}') AS s FROM sv;
CREATE TABLE s_euc AS SELECT kmeans_stream_state(v, 50) AS s FROM sv;
SELECT kmeans_stream_info(s) FROM s_cos;
CREATE TABLE m_cos AS SELECT kmeans_stream_model(s, '{"seed": 1}') AS m FROM s_cos;
CREATE TABLE m_euc AS SELECT kmeans_stream_model(s, '{"seed": 1}') AS m FROM s_euc;
CREATE TABLE g_cos AS SELECT kmeans_gpu(v, 50, '{"metric": "cosine", "seed": 1}') AS m FROM sv;
SELECT kmeans_model_info(m) - 'sizes' FROM m_cos;
SELECT kmeans_model_info(m)->>'path' AS euclidean_model_path FROM m_euc;
SELECT kmeans_model_info(m) - 'sizes' FROM g_cos;
SELECT (SELECT sum(kmeans_distance(m, v)) FROM sv, m_cos) AS rows_inertia_stream_model,
       (SELECT (kmeans_model_info(m)->>'summary_inertia')::float8 FROM m_cos) AS summary_inertia,
       (SELECT (kmeans_model_info(m)->>'inertia')::float8 FROM g_cos) AS kmeans_gpu_inertia;
SELECT count(DISTINCT (kmeans_predict(a.m, v), kmeans_predict(b.m, v))) AS label_pairs
FROM sv, m_cos a, g_cos b;
SET max_parallel_workers_per_gather = 8;
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
CREATE TABLE s_cos8 AS SELECT kmeans_stream_state(v, 50, '{"metric": "cosine"}') AS s FROM sv;
CREATE TABLE s_euc8 AS SELECT kmeans_stream_state(v, 50) AS s FROM sv;
SELECT (SELECT sum(kmeans_distance(m, v)) FROM sv) AS rows_inertia_parallel_summary
FROM (SELECT kmeans_stream_model(s, '{"seed": 1}') AS m FROM s_cos8) t;
