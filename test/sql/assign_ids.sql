--
-- assign_ids: the id column of kmeans_gpu_assign's and pmedian_gpu_assign's
-- query may be of any type that is a whole number (smallint, integer,
-- bigint, numeric, a domain over one); the results equal those with bigint
-- ids.  A numeric id that is not whole, and ids of other types (uuid,
-- text), are errors whose hint says what to do instead.
--
CREATE TABLE ai (id bigint, v float8[], u uuid);
INSERT INTO ai
SELECT i, ARRAY[(i * 37) % 101, (i * 91) % 103]::float8[], md5(i::text)::uuid
FROM generate_series(1, 40) i;
CREATE DOMAIN ai_key AS integer CHECK (VALUE > 0);

CREATE TABLE ai_km AS SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM ai', 4, '{"seed": 3}');
CREATE TABLE ai_pm AS SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM ai', 4);
SELECT count(*) AS rows, count(DISTINCT cluster) AS clusters FROM ai_km;
SELECT count(*) AS rows, count(DISTINCT medoid_id) AS medians FROM ai_pm;

-- each id type gives the bigint ids' clusters and medoids, row for row
SELECT t AS id_type,
	   (SELECT count(*) FROM kmeans_gpu_assign(format('SELECT id::%s, v FROM ai', t), 4, '{"seed": 3}') a
		JOIN ai_km b USING (id) WHERE a.cluster = b.cluster AND a.distance = b.distance) AS same_kmeans,
	   (SELECT count(*) FROM pmedian_gpu_assign(format('SELECT id::%s, v FROM ai', t), 4) a
		JOIN ai_pm b USING (id) WHERE a.medoid_id = b.medoid_id AND a.distance = b.distance) AS same_pmedian
FROM unnest(ARRAY['smallint', 'integer', 'bigint', 'numeric', 'numeric(10, 2)', 'ai_key']) t;
SELECT count(*) AS rows FROM kmeans_gpu_assign('SELECT 1e18::numeric + id, v FROM ai', 4)
WHERE id > 1000000000000000000;

-- a numeric id that is not whole, or beyond bigint
SELECT * FROM kmeans_gpu_assign('SELECT id + 0.5, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pmedian_gpu_assign('SELECT id / 3.0, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pmedian_gpu_assign('SELECT 1e19 + id, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE

-- ids that are no numbers: a surrogate key, the window form or a model
SELECT * FROM kmeans_gpu_assign('SELECT u, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT u::text, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pmedian_gpu_assign('SELECT u, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kmeans_gpu_assign('SELECT id::float8, v FROM ai', 4);
\echo :LAST_ERROR_SQLSTATE
-- the first way the hint names: a surrogate key, joined back
SELECT count(DISTINCT a.cluster) AS clusters, count(*) AS rows
FROM kmeans_gpu_assign('SELECT row_number() OVER (ORDER BY u), v FROM ai', 4) a
JOIN (SELECT row_number() OVER (ORDER BY u) AS id, u FROM ai) k USING (id);

DROP TABLE ai, ai_km, ai_pm;
DROP DOMAIN ai_key;
