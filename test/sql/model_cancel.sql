--
-- model_cancel: writing a large model's text form stops promptly on a
-- statement timeout (its loops check for cancel every 4,096 numbers; a
-- 1 GB model's text form once took 5.9 s to cancel).  Self-calibrating,
-- so that a slow or loaded machine does not make it flaky: the text form
-- of a model of 2 million centroid values is written once in full, then
-- under a timeout of a tenth of that time, and must stop within half of it
-- (without the checks it ran to the end).
--
-- The model, 16 MB, is received from a binary COPY file written byte by
-- byte (a fit or text input of that size would take longer than the test).
SELECT '/tmp/gpuclust_model_cancel_' || pg_backend_pid() || '.bin' AS mc_file,
	   'rm -f /tmp/gpuclust_model_cancel_' || pg_backend_pid() || '.bin' AS mc_cleanup \gset
CREATE TABLE mc_models (m kmeans_model);
SELECT lo_from_bytea(0,
	'\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea || '\x0001'::bytea
	|| int4send(length(payload)) || payload || '\xffff'::bytea) AS mc_lo
FROM (SELECT '\x0004'::bytea || int4send(500) || int4send(4000)
			 || substring(kmeans_model_send('{"k": 1, "k_requested": 500, "d": 1, "sizes": [0], "centroids": [[0]]}'::kmeans_model)
						  FROM 11 FOR 156)
			 || decode(repeat('0000000000000000', 500), 'hex')
			 || decode(repeat(encode(float8send(0.12345678901234567), 'hex'), 500 * 4000), 'hex') AS payload) p \gset
SELECT lo_export(:mc_lo, :'mc_file') AS exported;
SELECT lo_unlink(:mc_lo) AS unlinked;
COPY mc_models FROM :'mc_file' WITH (FORMAT binary);
COPY (SELECT 1 WHERE false) TO PROGRAM :'mc_cleanup';
SELECT kmeans_model_info(m)->'k' AS k, kmeans_model_info(m)->'d' AS d FROM mc_models;

-- the text form in full: its time, in ms, kept in a setting
DO $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	PERFORM length(m::text) FROM mc_models;
	PERFORM set_config('mc.full_ms', (extract(epoch FROM clock_timestamp() - started) * 1000)::text, false);
END $$;
SELECT greatest(10, round(current_setting('mc.full_ms')::float8 / 10)) AS mc_timeout \gset

SET statement_timeout = :mc_timeout;
DO $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	PERFORM length(m::text) FROM mc_models;
	RAISE NOTICE 'text form: not cancelled';
EXCEPTION WHEN query_canceled THEN
	RAISE NOTICE 'text form cancelled within half its full time: %',
		extract(epoch FROM clock_timestamp() - started) * 1000 < current_setting('mc.full_ms')::float8 / 2;
END $$;
RESET statement_timeout;

-- the session goes on
SELECT current_setting('mc.full_ms')::float8 > 0 AS timed, kmeans_model_info(m)->'k' AS k FROM mc_models;
DROP TABLE mc_models;
