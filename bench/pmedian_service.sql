-- pmedian_service: p-median fits on the GPU in the GPU service against the
-- same fits in the backend.  Run it twice on one machine, on a server with
-- gpuclust preloaded (the service) and on one without (each backend opens
-- its own CUDA context):
--   PG18_CONF="shared_preload_libraries = 'gpuclust'" bash bench/pg18-run \
--     psql -X -f bench/pmedian_service.sql
--   bash bench/pg18-run psql -X -f bench/pmedian_service.sql
-- Each run prints every statement's time (\timing), each model's path and
-- phases, and a digest of each model without its timings and path: the
-- digests must be equal across the two runs (the same medoids, penalties,
-- objective and counts, bit for bit).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS pm_small, pm_big;
CREATE EXTENSION IF NOT EXISTS gpuclust;
SELECT setseed(0.42);
CREATE TABLE pm_small AS
SELECT i AS id, ARRAY[random(), random()]::float8[] AS v FROM generate_series(1, 2000) i;
SELECT setseed(0.17);
CREATE TABLE pm_big AS
SELECT i AS id, ARRAY[random(), random(), random(), random(),
					  random(), random(), random(), random()]::float8[] AS v
FROM generate_series(1, 200000) i;
ANALYZE pm_small;
ANALYZE pm_big;
SELECT (gpuclust_service_info()->>'running')::bool AS service_running;
CREATE FUNCTION pm_digest(m pmedian_model) RETURNS text LANGUAGE sql AS $$
	SELECT md5((m::jsonb - 'timings_ms' - 'path')::text) $$;
CREATE FUNCTION pm_phases(m pmedian_model) RETURNS text LANGUAGE sql AS $$
	SELECT format('path %s, device %s (%s), method %s, improve %s, objective %s; ms: collect %s, transfer %s, seeding %s, sample %s, global %s, small %s, location %s, improve %s',
				  m::jsonb->>'path', m::jsonb->>'device', m::jsonb->>'device_reason',
				  m::jsonb->>'method', m::jsonb->>'improve',
				  round((m::jsonb->>'objective')::numeric, 4),
				  round((m::jsonb#>>'{timings_ms,collect}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,transfer}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,seeding}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,sample}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,global}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,small}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,location}')::numeric, 1),
				  round((m::jsonb#>>'{timings_ms,improve}')::numeric, 1)) $$;
\timing on
\x on

-- the first GPU fit of a fresh session, three sessions: 2,000 rows, p = 10
\c
SET gpuclust.device = gpu;
SELECT 'first fit, session 1' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 10) AS m FROM pm_small) s;
SELECT 'second fit, session 1' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 10) AS m FROM pm_small) s;
\c
SET gpuclust.device = gpu;
SELECT 'first fit, session 2' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 10) AS m FROM pm_small) s;
\c
SET gpuclust.device = gpu;
SELECT 'first fit, session 3' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 10) AS m FROM pm_small) s;

-- 200,000 x 8, p = 50: serial and parallel plans, capacitated, and the
-- set-returning form
SET max_parallel_workers_per_gather = 0;
SELECT 'big, serial' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 50) AS m FROM pm_big) s;
SET max_parallel_workers_per_gather = 8;
SELECT 'big, 8 workers' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 50) AS m FROM pm_big) s;
SELECT 'big, capacitated, 8 workers' AS what, pm_digest(m), pm_phases(m)
FROM (SELECT pmedian_gpu(id, v, 1.0, 50, '{"capacity": 4200}') AS m FROM pm_big) s;
SELECT 'big, assign' AS what, count(*) AS rows, count(DISTINCT medoid_id) AS medoids,
	   round(sum(distance)::numeric, 4) AS objective
FROM pmedian_gpu_assign('SELECT id, v FROM pm_big', 50);
