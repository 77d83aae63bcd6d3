--
-- argument_errors: the commonest slips in calling the fits resolve to
-- catch-only forms (src/argument_errors.c) that name the fix, instead of
-- PostgreSQL's "is not unique" (42725) or "does not exist" (42883); and
-- correct calls, typed or not, still resolve to the real forms.
--
CREATE TABLE ae (id bigint, v float8[], u uuid, s text, o text);
INSERT INTO ae
SELECT i, ARRAY[(i * 37) % 101, (i * 91) % 103]::float8[], md5(i::text)::uuid, 'x', '{"seed": 1}'
FROM generate_series(1, 30) i;

-- correct calls: the same model whatever form of k and options
WITH fits AS (
	SELECT 'int k' AS call, kmeans_gpu(v, 3)::jsonb->'centroids' AS c FROM ae
	UNION ALL SELECT 'bigint k', kmeans_gpu(v, 3::bigint)::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'smallint k', kmeans_gpu(v, 3::smallint)::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'count k', kmeans_gpu(v, (SELECT count(*) / 10 FROM ae))::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'untyped options', kmeans_gpu(v, 3, '{"seed": 0}')::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'NULL options', kmeans_gpu(v, 3, NULL)::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'jsonb options', kmeans_gpu(v, 3::bigint, '{}'::jsonb)::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'integer[]', kmeans_gpu(v::int[], 3, '{}')::jsonb->'centroids' FROM ae
	UNION ALL SELECT 'numeric[] bigint k', kmeans_gpu(v::numeric[], 3::bigint, '{}')::jsonb->'centroids' FROM ae)
SELECT call, c = (SELECT kmeans_gpu(v, 3)::jsonb->'centroids' FROM ae) AS same_centroids FROM fits;
SELECT count(DISTINCT c) AS clusters FROM (SELECT kmeans_gpu_cluster(v, 3, '{}') OVER () AS c FROM ae) w;
SELECT count(DISTINCT c) AS clusters FROM (SELECT kmeans_gpu_cluster(v, 3::bigint) OVER () AS c FROM ae) w;
SELECT pmedian_model_info(pmedian_gpu(id, v, 3))->'p' AS p,
	   pmedian_model_info(pmedian_gpu(id::int, v, 3, '{}'))->'p' AS p_int_id,
	   pmedian_model_info(pmedian_gpu(id, v, 1, 3::bigint, '{"capacity": 100}'))->'p' AS p_demand
FROM ae;
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM ae', 3);
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM ae', 3, '{}');
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM ae', 3, NULL);
SELECT count(*) FROM kmeans_gpu_assign(format('SELECT id, v FROM %I', 'ae'), (SELECT count(*) / 10 FROM ae));
SELECT count(*) FROM pmedian_gpu_assign('SELECT id, v FROM ae', 3::smallint, '{}');
-- untyped parameters, as drivers send them
PREPARE ae_assign(unknown, unknown, unknown) AS SELECT count(*) FROM kmeans_gpu_assign($1, $2, $3);
EXECUTE ae_assign('SELECT id, v FROM ae', '3', '{}');
PREPARE ae_fit(unknown, unknown) AS SELECT kmeans_model_info(kmeans_gpu(v, $1, $2))->'k' AS k FROM ae;
EXECUTE ae_fit('3', '{}');
PREPARE ae_pm(unknown, unknown) AS SELECT pmedian_model_info(pmedian_gpu(id, v, $1, $2))->'p' AS p FROM ae;
EXECUTE ae_pm('3', '{}');

-- an untyped vector literal matches every array form: 42804, not 42725
SELECT kmeans_gpu('{1,2}', 3);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu('{1,2}', 3, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster('{1,2}', 3) OVER ();
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(1, '{1,2}', 3);
\echo :LAST_ERROR_SQLSTATE
-- a text column
SELECT kmeans_gpu(s, 3) FROM ae;
\echo :LAST_ERROR_SQLSTATE
-- an array of non-numbers, as before
SELECT kmeans_gpu(v::text[], 3) FROM ae;
\echo :LAST_ERROR_SQLSTATE

-- a numeric or float k: 42804, not 42883
SELECT kmeans_gpu(v, (SELECT round(sqrt(count(*))) FROM ae)) FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 3.0) FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 3.0, '{}') FROM ae WHERE false;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, sqrt(9)) OVER () FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(id, v, 3.0::real) FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM ae', 3.0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM ae', (SELECT count(*) / 10.0 FROM ae), '{}');
\echo :LAST_ERROR_SQLSTATE

-- options as text: 42804, not 42883
SELECT kmeans_gpu(v, 3, o) FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 3::bigint, format('{"seed": %s}', 1)) FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 3, o) OVER () FROM ae;
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(id, v, 3, o) FROM ae;
\echo :LAST_ERROR_SQLSTATE

-- not caught: text options of the assign functions (a catch-only form
-- taking them would also take untyped options), 42883 as before
SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM ae', 3, '{}'::text);
\echo :LAST_ERROR_SQLSTATE

-- a uuid id for pmedian_gpu
SELECT pmedian_gpu(u, v, 3) FROM ae;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE ae;
