-- service_small_fits: many small fits on the CPU (kmeans_gpu per group of a
-- GROUP BY, auto's small work) with gpuclust preloaded: in their backends
-- (gpuclust.service_cpu_fits = off, the default) against the same fits
-- sent to the GPU service (on, the baseline: every fit paid the service's
-- request before), on one server, in one run:
--   PG18_CONF="shared_preload_libraries = 'gpuclust'" bash bench/pg18-run \
--     psql -X -f bench/service_small_fits.sql
-- or, here, GPUCLUST_PG_CONF="shared_preload_libraries = 'gpuclust'"
-- scripts/with-temp-postgres psql -X -f bench/service_small_fits.sql.
-- Prints, for :groups groups of :rows rows (d = 2, k = 2), each round's
-- milliseconds both ways, the paths the fits took, and whether the models
-- are the same (their digest without timings and path); the medians and
-- their ratio last.  The fits run serially (no parallel workers), so each
-- group's fit waits for the one before, as in any GROUP BY.
\set ON_ERROR_STOP 1
\if :{?groups} \else \set groups 20000 \endif
\if :{?rows} \else \set rows 20 \endif
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuclust;
DROP TABLE IF EXISTS small_groups, small_fit_times;
SELECT setseed(0.31);
CREATE TABLE small_groups AS
SELECT i % :groups AS grp, ARRAY[random(), random()]::real[] AS v
FROM generate_series(1, :groups * :rows) i;
ANALYZE small_groups;
SELECT (gpuclust_service_info()->>'running')::bool AS service_running;
SET max_parallel_workers_per_gather = 0;
SET gpuclust.device = auto;
CREATE TEMP TABLE small_fit_times (round int, service_cpu_fits bool, ms float8, paths text, digest text);

-- one round: the groups' fits, timed in the server, with their paths and a
-- digest of every model but its timings and path
CREATE FUNCTION small_fit_round(r int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	paths text;
	digest text;
BEGIN
	t0 := clock_timestamp();
	SELECT string_agg(DISTINCT m::jsonb->>'path', ','),
		   md5(string_agg((m::jsonb - 'timings_ms' - 'path')::text, '' ORDER BY grp))
	INTO paths, digest
	FROM (SELECT grp, kmeans_gpu(v, 2) AS m FROM small_groups GROUP BY grp) s;
	INSERT INTO small_fit_times VALUES
		(r, current_setting('gpuclust.service_cpu_fits')::bool,
		 extract(epoch FROM clock_timestamp() - t0) * 1000, paths, digest);
END $$;

-- warm-up, then three rounds each way, alternating
SELECT small_fit_round(0);
DELETE FROM small_fit_times;
DO $$
DECLARE
	setting text;
BEGIN
	FOR r IN 1..3 LOOP
		FOREACH setting IN ARRAY ARRAY['on', 'off'] LOOP
			PERFORM set_config('gpuclust.service_cpu_fits', setting, false);
			PERFORM small_fit_round(r);
		END LOOP;
	END LOOP;
END $$;
RESET gpuclust.service_cpu_fits;

SELECT round, service_cpu_fits, round(ms::numeric, 1) AS ms, paths FROM small_fit_times
ORDER BY round, service_cpu_fits DESC;
SELECT count(DISTINCT digest) = 1 AS same_models FROM small_fit_times;
SELECT round(on_ms::numeric, 1) AS through_service_ms, round(off_ms::numeric, 1) AS in_backend_ms,
	   round((on_ms / off_ms)::numeric, 2) AS service_over_backend,
	   round((1000 * off_ms / :groups)::numeric, 1) AS backend_us_per_fit,
	   round((1000 * (on_ms - off_ms) / :groups)::numeric, 1) AS service_us_per_fit_added
FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE service_cpu_fits) AS on_ms,
			 percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE NOT service_cpu_fits) AS off_ms
	  FROM small_fit_times) m;
DROP FUNCTION small_fit_round(int);
DROP TABLE small_groups;
