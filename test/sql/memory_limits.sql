--
-- memory_limits: the host memory a fit may hold and the pinned cache are
-- limits a superuser sets, with a clear error before allocating past them
--
LOAD 'gpuclust';
SHOW gpuclust.max_fit_memory_mb;
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
SET gpuclust.max_fit_memory_mb = 3;
SELECT (kmeans_gpu(v, 4, '{"seed": 1}')::jsonb->>'rows')::int AS rows FROM ml_pts;
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
