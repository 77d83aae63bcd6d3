-- bench/stream_service_cancel.sql: stream clusterings in the GPU service, cancelled by statement_timeout
-- (gpuclust preloaded, on the GPU machine: bash bench/pg18-run sh -c 'psql -X -q -c "CREATE EXTENSION gpuclust" && psql -X -f bench/stream_service_cancel.sql'):
-- each statement fails with the timeout's 57014, and the backend's resident memory does not grow
SET gpuclust.device = gpu;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE cv AS SELECT i, (SELECT array_agg(random()) FROM generate_series(1, 64) j WHERE i > 0)::float8[] AS v
FROM generate_series(1, 300000) i;
CREATE TABLE cs AS SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') AS s FROM cv;
SELECT kmeans_stream_info(s)->>'points' AS points FROM cs;
SELECT kmeans_model_info(kmeans_stream_model(s, '{"n_init": 1}'))->>'path' AS path FROM cs;
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
\! grep VmRSS /proc/$PID/status
SET statement_timeout = '150ms';
\set VERBOSITY sqlstate
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
\! grep VmRSS /proc/$PID/status
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_model(s, '{"n_init": 50}') IS NULL FROM cs;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
SELECT kmeans_stream_state(v, 100, '{"centres": 20000, "block_rows": 40000}') IS NULL FROM cv;
\! grep VmRSS /proc/$PID/status
RESET statement_timeout;
SELECT kmeans_model_info(kmeans_stream_model(s, '{"n_init": 1}'))->>'path' AS path_after FROM cs;
SELECT gpuclust_service_info()->>'running' AS service_running;
