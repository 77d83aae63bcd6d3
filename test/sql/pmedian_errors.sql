--
-- pmedian_errors: every bad input a user can give, each with a clear error
--
CREATE TABLE perr (id bigint, v float8[], q float8);
INSERT INTO perr VALUES (1, '{0,0}', 1), (2, '{0,1}', 1), (3, '{10,10}', 2), (4, '{10,11}', 2);
\set VERBOSITY default

-- p out of range
SELECT pmedian_gpu(id, v, 0) FROM perr;
SELECT pmedian_gpu(id, v, -3, '{}') FROM perr;
SELECT pmedian_gpu(id, v, 5) FROM perr;
SELECT pmedian_gpu(id, v, NULL) FROM perr;
SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM perr', 9);
-- ids: duplicates and NULLs
SELECT pmedian_gpu(id % 3, v, 2) FROM perr;
SELECT pmedian_gpu(NULLIF(id, 2), v, 2) FROM perr;
SELECT * FROM pmedian_gpu_assign('SELECT 7, v FROM perr', 2);
-- demands: NULL, negative, infinite
SELECT pmedian_gpu(id, v, NULLIF(q, 2), 2, '{"capacity": 5}') FROM perr;
SELECT pmedian_gpu(id, v, q - 2, 2, '{"capacity": 5}') FROM perr;
SELECT pmedian_gpu(id, v, q * 'infinity', 2, '{"capacity": 5}') FROM perr;
SELECT * FROM pmedian_gpu_assign('SELECT id, v, -q FROM perr', 2, '{"capacity": 5}');
-- capacity and demand go together
SELECT pmedian_gpu(id, v, q, 2, '{}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"capacity": 5}') FROM perr;
SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM perr', 2, '{"capacity": 5}');
SELECT * FROM pmedian_gpu_assign('SELECT id, v, q FROM perr', 2);
SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 0}') FROM perr;
-- options
SELECT pmedian_gpu(id, v, 2, '{"metric": "chebyshev"}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"method": "fast"}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"max_iter": 0}') FROM perr;
-- a seed must be a whole number (once 1.7 was rounded to 2)
SELECT pmedian_gpu(id, v, 2, '{"seed": 1.7}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"seed": 1.0000000000000000001}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"seed": "1"}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"seed": 2.0}') IS NOT NULL AS whole_seed FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"improve": "yes"}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"sample_factor": -1}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '{"tol": 1}') FROM perr;
SELECT pmedian_gpu(id, v, 2, '[1]') FROM perr;
SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 5, "improve": true}') FROM perr;
-- vectors
SELECT pmedian_gpu(id, CASE WHEN id = 3 THEN '{1,2,3}' ELSE v END, 2) FROM perr;
SELECT pmedian_gpu(id, CASE WHEN id = 3 THEN '{NaN,2}' ELSE v END, 2) FROM perr;
SELECT pmedian_gpu(id, CASE WHEN id = 3 THEN '{}' ELSE v END, 2) FROM perr;
-- the query of pmedian_gpu_assign
SELECT * FROM pmedian_gpu_assign('SELECT v FROM perr', 2);
SELECT * FROM pmedian_gpu_assign('SELECT id::text, v FROM perr', 2);
SELECT * FROM pmedian_gpu_assign('SELECT id, v, q::int FROM perr', 2, '{"capacity": 5}');
SELECT * FROM pmedian_gpu_assign('UPDATE perr SET q = q RETURNING id, v', 2);
-- predict and the text form
SELECT pmedian_predict(pmedian_gpu(id, v, 2), '{1,2,3}'::float8[]) FROM perr;
SELECT '{"p": 2, "d": 1, "medoid_ids": [1], "medoids": [[0], [5]]}'::pmedian_model;
SELECT '{"p": 0, "d": 1, "medoid_ids": [], "medoids": []}'::pmedian_model;
SELECT '{"p": 1, "d": 1, "metric": "hamming", "medoid_ids": [1], "medoids": [[0]]}'::pmedian_model;
