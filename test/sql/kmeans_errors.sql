--
-- kmeans_errors: every error a user can trip, each in its own statement
-- with its SQLSTATE; and the inputs that are not errors (empty and all-NULL
-- input give a NULL model)
--
CREATE TABLE err_pts (id int, v float8[]);
INSERT INTO err_pts VALUES (1, '{0,0}'), (2, '{0,1}'), (3, '{10,10}'), (4, '{10,11}'), (5, '{5,5}');

--
-- Empty and all-NULL input: a NULL model, not an error
--
SELECT kmeans_gpu(v, 2) IS NULL AS empty_is_null FROM err_pts WHERE false;
SELECT kmeans_gpu(v, 2, '{"seed": 1}') IS NULL AS empty_is_null FROM err_pts WHERE false;
SELECT kmeans_gpu(v::real[], 2) IS NULL AS empty_real_is_null FROM err_pts WHERE false;
SELECT kmeans_gpu(NULL::float8[], 2) IS NULL AS all_null_is_null FROM err_pts;
SELECT kmeans_gpu(NULL::real[], 2, '{}') IS NULL AS all_null_is_null FROM err_pts;
-- no rows reach the transition function, so even a bad k is no error
SELECT kmeans_gpu(v, 0) IS NULL AS empty_is_null FROM err_pts WHERE false;
-- the window and assignment functions on empty and all-NULL input
SELECT count(*) FROM (SELECT kmeans_gpu_cluster(v, 2) OVER () FROM err_pts WHERE false) s;
SELECT id, kmeans_gpu_cluster(NULL::float8[], 2) OVER () AS cluster FROM err_pts ORDER BY id;
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM err_pts WHERE false', 2);
SELECT * FROM kmeans_gpu_assign('SELECT id, NULL::float8[] FROM err_pts ORDER BY id', 2);
-- kmeans_predict and kmeans_distance are strict
SELECT kmeans_predict(NULL::kmeans_model, '{1,2}'::float8[]) IS NULL AS null_model,
	   kmeans_distance(m, NULL::float8[]) IS NULL AS null_vector
FROM (SELECT kmeans_gpu(v, 2) AS m FROM err_pts) s;

--
-- Bad vectors
--
-- a NULL element
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::float8[]), ('{3,NULL}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::real[]), ('{NULL,2}')) t(v);
\echo :LAST_ERROR_SQLSTATE
-- NaN and infinities
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::float8[]), ('{3,4}'), ('{5,NaN}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::float8[]), ('{Infinity,4}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::float8[]), ('{3,-Infinity}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{NaN,2}'::real[]), ('{3,4}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2) FROM (VALUES ('{1,2}'::real[]), ('{3,Infinity}')) t(v);
\echo :LAST_ERROR_SQLSTATE
-- dimensions that differ between rows: the message names both rows (NULL
-- rows count in the numbering)
SELECT kmeans_gpu(v, 2) FROM (VALUES (1, NULL), (2, '{1,2}'::float8[]), (3, '{3,4}'), (4, '{5,6,7}')) t(i, v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2 ORDER BY i DESC) FROM (VALUES (1, '{1}'::float8[]), (2, '{3,4}'), (3, '{5,6}')) t(i, v);
\echo :LAST_ERROR_SQLSTATE
-- a multi-dimensional array
SELECT kmeans_gpu(v, 1) FROM (VALUES ('{{1,2},{3,4}}'::float8[])) t(v);
\echo :LAST_ERROR_SQLSTATE
-- an empty array
SELECT kmeans_gpu(v, 1) FROM (VALUES ('{1,2}'::float8[]), ('{}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1) FROM (VALUES ('{}'::real[])) t(v);
\echo :LAST_ERROR_SQLSTATE
-- more dimensions than the limit of 65536
SELECT kmeans_gpu(array_fill(1::float8, ARRAY[65537]), 1);
\echo :LAST_ERROR_SQLSTATE
-- values too large for squared distances to stay finite
SELECT kmeans_gpu(v, 1) FROM (VALUES ('{1,2}'::float8[]), ('{1e151,2}')) t(v);
\echo :LAST_ERROR_SQLSTATE
-- the same checks in the window function and the assignment function
SELECT kmeans_gpu_cluster(v, 2) OVER () FROM (VALUES ('{1,2}'::float8[]), ('{3,NULL}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 2) OVER () FROM (VALUES ('{1,2}'::float8[]), ('{3,4,5}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 2) OVER () FROM (VALUES ('{1,2}'::real[]), ('{3,NaN}')) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign($$SELECT 1, '{1,Infinity}'::float8[]$$, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign($$SELECT i, ARRAY[[i, i]]::float8[] FROM generate_series(1, 2) i$$, 1);
\echo :LAST_ERROR_SQLSTATE

--
-- Bad k
--
SELECT kmeans_gpu(v, 0) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, -3) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, NULL) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 6) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- NULL rows do not count towards k
SELECT kmeans_gpu(v, 5) FROM (SELECT v FROM err_pts WHERE id < 5 UNION ALL SELECT NULL) s;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1000001) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- k changing between rows, to another value or to NULL
SELECT kmeans_gpu(v, id ORDER BY id) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, CASE WHEN id < 3 THEN 2 END ORDER BY id) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- in the window function and the assignment function
SELECT kmeans_gpu_cluster(v, 0) OVER () FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, NULL) OVER () FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 6) OVER () FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 3) OVER (PARTITION BY id < 3) FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts', 6);
\echo :LAST_ERROR_SQLSTATE

--
-- Bad options
--
SELECT kmeans_gpu(v, 2, '{"max_iters": 10}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"seed": 1, "Seed": 1}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"max_iter": "10"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"precision": "fp8"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"precision": "FP16"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"max_iter": 0}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"max_iter": 2.5}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"max_iter": 1000001}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"max_iter": null}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"n_init": 1.5}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"n_init": 0}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"n_init": 1001}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"n_init": true}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"tol": -0.1}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"tol": "small"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"tol": 1e400}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"seed": "1"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"seed": 0.5}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"seed": 1.0000000000000000001}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"seed": 1e30}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- just above the largest bigint: an option error (22023) like the other
-- out-of-range options, not "bigint out of range" (22003)
\set VERBOSITY sqlstate
SELECT kmeans_gpu(v, 2, '{"seed": 9223372036854775808}') FROM err_pts;
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
-- init: unknown method, wrong type, wrong shape
SELECT kmeans_gpu(v, 2, '{"init": "k-means++"}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": 3}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": null}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": {"a": 1}}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [1, 2]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": []}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[], []]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[[1, 2]], [[3, 4]]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3, "4"]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3, 1e400]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- the wrong number of centroids, or centroids of the wrong dimension
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3, 4], [5, 6]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2, 3], [4, 5, 6]]}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- restarts cannot change given centroids (n_init 1 is allowed)
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3, 4]], "n_init": 2}') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '{"init": [[1, 2], [3, 4]], "n_init": 1}') IS NOT NULL AS ok FROM err_pts;
-- options must be an object
SELECT kmeans_gpu(v, 2, '[{"seed": 1}]') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '"seed"') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, '7') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 2, 'null') FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
-- in the window function and the assignment function
SELECT kmeans_gpu_cluster(v, 2, '{"bogus": 1}') OVER () FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 2, '{"init": [[1, 2]]}') OVER () FROM err_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts', 2, '{"tol": -1}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts', 2, '[]');
\echo :LAST_ERROR_SQLSTATE

--
-- kmeans_gpu_assign: the query
--
SELECT * FROM kmeans_gpu_assign('SELECT 1, ARRAY[1.0]::float8[]; SELECT 2, ARRAY[2.0]::float8[]', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('CREATE TEMP TABLE assign_not_a_query (i int)', 1);
\echo :LAST_ERROR_SQLSTATE
-- a query that modifies rows is refused as such, and modifies nothing
SELECT * FROM kmeans_gpu_assign('DELETE FROM err_pts RETURNING id, v', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('WITH gone AS (DELETE FROM err_pts RETURNING id, v) SELECT * FROM gone', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM err_pts FOR UPDATE', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM err_pts;
SELECT * FROM kmeans_gpu_assign('SELECT id FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v, v FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id::text, v FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id::float8, v FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v::text[] FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v[1] FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign(NULL, 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELEC id, v FROM err_pts', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM no_such_table', 2);
\echo :LAST_ERROR_SQLSTATE

--
-- kmeans_predict and kmeans_distance
--
CREATE TABLE err_model AS SELECT kmeans_gpu(v, 2, '{"seed": 1}') AS m FROM err_pts;
SELECT kmeans_predict(m, '{1,2,3}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_distance(m, '{1}'::real[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict(m, '{1,NULL}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict(m, '{1,NaN}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_distance(m, '{-Infinity,1}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict(m, '{}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict(m, '{{1,2}}'::float8[]) FROM err_model;
\echo :LAST_ERROR_SQLSTATE

--
-- kmeans_model text input
--
-- a valid hand-written model, for reference
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 2]]}'::kmeans_model IS NOT NULL AS ok;
-- not JSON, not an object
SELECT 'not a model'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '[1, 2]'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- missing fields
SELECT '{"d": 2, "sizes": [3], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "sizes": [3], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- fields of the wrong type or value
SELECT '{"k": "1", "d": 2, "sizes": [3], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1.5, "d": 2, "sizes": [3], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 2]], "converged": 1}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 2]], "rows": -1}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 2]], "inertia": 1e400}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- sizes of the wrong length or with bad values
SELECT '{"k": 2, "d": 2, "sizes": [3], "centroids": [[1, 2], [3, 4]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3, 4], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": 3, "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [-3], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [1.5], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": ["3"], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- centroids of the wrong count, shape or value
SELECT '{"k": 2, "d": 2, "sizes": [3, 4], "centroids": [[1, 2]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 2, 3]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [1, 2]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, null]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, 1e400]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 2, "sizes": [3], "centroids": [[1, -1e400]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- k and d out of range
SELECT '{"k": 1, "d": 65537, "sizes": [3], "centroids": [[1]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
-- k = 0 and d = 0 are malformed input (22P02), not a model "too large"
\set VERBOSITY sqlstate
SELECT '{"k": 0, "d": 2, "sizes": [], "centroids": []}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
SELECT '{"k": 1, "d": 0, "sizes": [3], "centroids": [[]]}'::kmeans_model;
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default

--
-- The GUCs
--
SET gpuclust.device = 'fastest';
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.gpu_id = -1;
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.gpu_id = 1025;
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.no_such_setting = 1;
\echo :LAST_ERROR_SQLSTATE
SET gpuclust.device = cpu;
SHOW gpuclust.device;
SET gpuclust.gpu_id = 3;
SHOW gpuclust.gpu_id;
RESET gpuclust.device;
RESET gpuclust.gpu_id;

DROP TABLE err_pts, err_model;
