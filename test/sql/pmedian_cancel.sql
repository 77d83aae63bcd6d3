--
-- pmedian_cancel: a statement timeout stops a fit that would run for long
-- (a capacitated location-allocation never settles, so it runs max_iter
-- iterations), on the CPU and on the GPU alike, and the next fit works
--
CREATE TABLE pcancel AS
SELECT i::bigint AS id, ARRAY[(i % 173)::float8, (i % 211)::float8] AS v, 1::float8 AS q
FROM generate_series(1, 20000) i;
SET statement_timeout = '1s';
SELECT pmedian_gpu(id, v, q, 400, '{"capacity": 40, "max_iter": 1000000}') FROM pcancel;
SELECT * FROM pmedian_gpu_assign('SELECT id, v, q FROM pcancel', 300, '{"capacity": 70, "max_iter": 1000000}');
RESET statement_timeout;
SELECT (pmedian_gpu(id, v, 2)::jsonb) -> 'p' AS p FROM pcancel WHERE id <= 10;
