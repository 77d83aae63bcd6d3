--
-- memory_limits: the host memory a fit may hold and the pinned cache are
-- limits a superuser sets, with a clear error before allocating past them
--
LOAD 'gpuclust';
-- the fit memory's default is a quarter of the machine's memory
SELECT setting::bigint = substring(pg_read_file('/proc/meminfo') from 'MemTotal:\s*(\d+)')::bigint / 4096
       AS quarter_of_memory
FROM pg_settings WHERE name = 'gpuclust.max_fit_memory_mb';
SHOW gpuclust.pinned_cache_mb;

CREATE TABLE ml_pts AS
SELECT i AS id, ARRAY(SELECT (hashint4(i * 64 + j) & 1023) / 1024.0 FROM generate_series(1, 64) j)::float8[] AS v
FROM generate_series(1, 4000) i;

-- 4,000 rows of 64 doubles (and a hash each) take about 2 MB: a 1 MB limit
-- stops the aggregate, the window function and p-median alike
SET gpuclust.max_fit_memory_mb = 1;
SELECT kmeans_gpu(v, 4) IS NOT NULL FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM (SELECT kmeans_gpu_cluster(v, 4) OVER () FROM ml_pts) s;
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(id, v, 2) IS NOT NULL FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
-- the rows that fit still cluster
SELECT (kmeans_gpu(v, 4, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts WHERE id <= 1000;
-- the fit's working arrays count beside the rows (counted as allocated:
-- chunks that double): 3 MB holds these rows but not their fit,
-- refused before it allocates
SET gpuclust.max_fit_memory_mb = 3;
SELECT (kmeans_gpu(v, 4, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.max_fit_memory_mb = 6;
SELECT (kmeans_gpu(v, 4, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts;
SELECT count(DISTINCT c) FROM (SELECT kmeans_gpu_cluster(v, 4, '{"seed": 1}') OVER () AS c FROM ml_pts) s;
-- p-median's CPU session holds its own copy of the rows: both count (on
-- the CPU here: a GPU session's copy is in device memory)
SET gpuclust.max_fit_memory_mb = 4;
SET gpuclust.device = cpu;
SELECT pmedian_gpu(id, v, 2) IS NOT NULL FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
-- a bound on cluster sizes counts its balancing's arrays too (every row a
-- candidate at worst): 5 MB holds the fit, not its balancing
SET gpuclust.max_fit_memory_mb = 5;
SELECT (kmeans_gpu(v, 4, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts;
SELECT (kmeans_gpu(v, 4, '{"seed": 1, "max_cluster_size": 1001}')::jsonb->>'rows')::int AS rows
FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
RESET gpuclust.device;
SET gpuclust.max_fit_memory_mb = 10;
SELECT (pmedian_gpu(id, v, 2)::jsonb->>'rows')::int AS rows FROM ml_pts;
-- a kmeans_stream summary's default block shrinks to fit the limit (not
-- below twice its centres); a block_rows given past it is refused
SET gpuclust.max_fit_memory_mb = 2;
SELECT (kmeans_stream_info(kmeans_stream_state(v, 4))->>'block_rows')::int AS block_rows,
       (kmeans_stream_info(kmeans_stream_state(v, 4))->>'rows')::int AS rows
FROM ml_pts;
SELECT kmeans_stream_state(v, 4, '{"block_rows": 65536}') IS NOT NULL FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
-- its levels too: 1 MB holds a block of 443 rows and one level, not the
-- second level that 4,000 rows reach
SET gpuclust.max_fit_memory_mb = 1;
SELECT kmeans_stream_state(v, 4) IS NOT NULL FROM ml_pts;
\echo :LAST_ERROR_SQLSTATE
RESET gpuclust.max_fit_memory_mb;

-- an ordinary user can set neither
CREATE ROLE ml_user;
GRANT SELECT ON ml_pts TO ml_user;
SET ROLE ml_user;
SET gpuclust.max_fit_memory_mb = 1000000;
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.pinned_cache_mb = 1000000;
\echo :LAST_ERROR_SQLSTATE
SELECT (kmeans_gpu(v, 2, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts WHERE id <= 100;
RESET ROLE;
SELECT context FROM pg_settings
WHERE name IN ('gpuclust.max_fit_memory_mb', 'gpuclust.pinned_cache_mb') ORDER BY name;

DROP TABLE ml_pts;
DROP ROLE ml_user;
