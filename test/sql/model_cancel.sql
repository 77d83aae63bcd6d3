--
-- model_cancel: writing a large model's text form, and its cast to jsonb,
-- stop promptly on a statement timeout (their loops check for cancel every
-- 4,096 numbers; a 1 GB model's text form once took 5.9 s to cancel, and
-- the cast, which parsed the text form in PostgreSQL's JSON parser, ran
-- seconds past a timeout).  Self-calibrating, so that a slow or loaded
-- machine does not make it flaky: each is run once in full on a model of
-- 2 million centroid values, then under a timeout of a tenth of that time,
-- and must stop within half of it (without the checks it ran to the end).
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

-- each form in full: its time, in ms, kept in a setting
CREATE FUNCTION mc_full(form text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	EXECUTE format('SELECT length((m::%s)::text) FROM mc_models', form);
	PERFORM set_config('mc.' || form, (extract(epoch FROM clock_timestamp() - started) * 1000)::text, false);
END $$;
CREATE FUNCTION mc_cancelled(form text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	started timestamptz := clock_timestamp();
BEGIN
	EXECUTE format('SELECT length((m::%s)::text) FROM mc_models', form);
	RETURN 'not cancelled';
EXCEPTION WHEN query_canceled THEN
	RETURN 'cancelled within half its full time: ' ||
		(extract(epoch FROM clock_timestamp() - started) * 1000 < current_setting('mc.' || form)::float8 / 2);
END $$;

SELECT mc_full('text');
SELECT greatest(10, round(current_setting('mc.text')::float8 / 10)) AS mc_timeout \gset
SET statement_timeout = :mc_timeout;
SELECT mc_cancelled('text') AS text_form;
RESET statement_timeout;

SELECT mc_full('jsonb');
SELECT greatest(10, round(current_setting('mc.jsonb')::float8 / 10)) AS mc_timeout \gset
SET statement_timeout = :mc_timeout;
SELECT mc_cancelled('jsonb') AS jsonb_cast;
RESET statement_timeout;

-- the cast gives the value of the text form's cast, as before
SELECT m::jsonb = m::text::jsonb AS kmeans_same FROM mc_models;
SELECT m::jsonb = m::text::jsonb AS kmeans_same, m::jsonb -> 'centroids' AS centroids
FROM (SELECT '{"k": 2, "d": 3, "metric": "cosine", "sizes": [4, 0],
			   "centroids": [[0.6, 0, 0.8], [-1e-7, 1, 0]], "timings_ms": {"collect": 2.5}}'::kmeans_model AS m) s;
SELECT m::jsonb = m::text::jsonb AS pmedian_same, jsonb_array_length(m::jsonb -> 'medoids') AS medoids
FROM (SELECT pmedian_gpu(i, ARRAY[i * 0.1, -i * 1e10], 2, '{"seed": 1}') AS m
	  FROM generate_series(1, 20) i) s;

-- the session goes on
SELECT current_setting('mc.text')::float8 > 0 AS timed, kmeans_model_info(m)->'k' AS k FROM mc_models;
DROP TABLE mc_models;
DROP FUNCTION mc_full(text), mc_cancelled(text);
