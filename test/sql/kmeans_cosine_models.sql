-- A kmeans_model under the metric "cosine" holds unit centroids, whichever
-- way it comes in: text input (22P02), binary receive (22P03) and every fit
-- check each centroid's norm is within 1e-9 of 1.  kmeans_predict takes
-- the nearest centroid by Euclidean distance to the unit row, which is the
-- one of largest cosine only on the sphere: a model with centroids
-- [[5,0],[0,1]] once answered 1 for [1, 0.5], whose cosine with [5,0] is
-- the larger.  The property checked on generated cases: every accepted
-- cosine model predicts what brute-force cosine predicts.

-- the case that answered wrongly, a zero centroid, norms just outside the
-- tolerance: refused; within it: accepted
CREATE FUNCTION ccm_reads(model text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM model::kmeans_model;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT name, ccm_reads(format('{"k": 2, "d": 2, "metric": "%s", "sizes": [1, 1], "centroids": %s}',
							  metric, centroids)) AS result
FROM (VALUES ('scaled', 'cosine', '[[5, 0], [0, 1]]'),
			 ('zero', 'cosine', '[[0, 0], [0, 1]]'),
			 ('norm 1 + 2e-9', 'cosine', '[[1.000000002, 0], [0, 1]]'),
			 ('norm 1 - 2e-9', 'cosine', '[[0.999999998, 0], [0, 1]]'),
			 ('norm 1 + 5e-10', 'cosine', '[[1.0000000005, 0], [0, 1]]'),
			 ('unit', 'cosine', '[[0.6, 0.8], [0, -1]]'),
			 ('scaled, euclidean', 'euclidean', '[[5, 0], [0, 1]]')) AS t(name, metric, centroids);
\set VERBOSITY default
SELECT kmeans_predict('{"k": 2, "d": 2, "metric": "cosine", "sizes": [1, 1], "centroids": [[5, 0], [0, 1]]}'::kmeans_model,
					  ARRAY[1, 0.5]::float8[]);
SELECT kmeans_predict('{"k": 2, "d": 2, "metric": "cosine", "sizes": [1, 1], "centroids": [[1, 0], [0, 1]]}'::kmeans_model,
					  ARRAY[1, 0.5]::float8[]);

-- binary receive: a cosine model's binary form with its centroids
-- replaced by [[5,0],[0,1]] (a euclidean model's, whose binary form is
-- otherwise the same length) is refused; the unit one is read back
SELECT '/tmp/gpuclust_cosine_models_' || pg_backend_pid() || '.bin' AS ccm_file,
	   'rm -f /tmp/gpuclust_cosine_models_' || pg_backend_pid() || '.bin' AS ccm_cleanup \gset
CREATE FUNCTION ccm_copy_file(payload bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
		   || '\x0001'::bytea || int4send(length(payload)) || payload || '\xffff'::bytea
$$;
CREATE TABLE ccm_payloads AS
SELECT kmeans_model_send(c) AS unit,
	   overlay(kmeans_model_send(c) PLACING substring(kmeans_model_send(e) FROM length(kmeans_model_send(e)) - 31)
			   FROM length(kmeans_model_send(c)) - 31 FOR 32) AS scaled
FROM (SELECT '{"k": 2, "d": 2, "metric": "cosine", "sizes": [1, 1], "centroids": [[1, 0], [0, 1]]}'::kmeans_model AS c,
			 '{"k": 2, "d": 2, "metric": "euclidean", "sizes": [1, 1], "centroids": [[5, 0], [0, 1]]}'::kmeans_model AS e) m;
CREATE TABLE ccm_read (m kmeans_model);
SELECT lo_from_bytea(0, ccm_copy_file(unit)) AS ccm_lo FROM ccm_payloads \gset
SELECT lo_export(:ccm_lo, :'ccm_file') AS exported;
SELECT lo_unlink(:ccm_lo) AS unlinked;
COPY ccm_read FROM :'ccm_file' WITH (FORMAT binary);
SELECT (m::jsonb)->'centroids' AS unit_read_back FROM ccm_read;
SELECT lo_from_bytea(0, ccm_copy_file(scaled)) AS ccm_lo FROM ccm_payloads \gset
SELECT lo_export(:ccm_lo, :'ccm_file') AS exported;
SELECT lo_unlink(:ccm_lo) AS unlinked;
COPY ccm_read FROM :'ccm_file' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE
COPY (SELECT 1 WHERE false) TO PROGRAM :'ccm_cleanup';

-- generated cases: 300 models of k in 1..6 unit centroids in d in 2..9,
-- each norm moved by a factor within 1 +- 5e-10, and 40 rows each at
-- scales from 0.01 to 100
SELECT setseed(0.46);
CREATE FUNCTION ccm_cos(a float8[], b float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
	SELECT sum(x * y) / nullif(sqrt(sum(x * x) * sum(y * y)), 0) FROM unnest(a, b) AS u(x, y)
$$;
CREATE FUNCTION ccm_scaled(a float8[], factor float8) RETURNS float8[] LANGUAGE sql IMMUTABLE AS $$
	SELECT array_agg(x * factor ORDER BY i) FROM unnest(a) WITH ORDINALITY AS u(x, i)
$$;
CREATE FUNCTION ccm_norm(a float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
	SELECT sqrt(sum(x * x)) FROM unnest(a) AS u(x)
$$;
CREATE TABLE ccm_cases AS
SELECT c AS case_id, 2 + floor(random() * 8)::int AS d, 1 + floor(random() * 6)::int AS k
FROM generate_series(1, 300) c;
CREATE TABLE ccm_raw AS
SELECT s.case_id, s.d, c.c,
	   ARRAY(SELECT random() - 0.5 FROM generate_series(1, s.d) j WHERE c.c >= 0) AS v,
	   (random() - 0.5) * 1e-9 AS drift
FROM ccm_cases s, generate_series(0, s.k - 1) c(c);
CREATE TABLE ccm_centroids AS
SELECT case_id, c, ccm_scaled(v, (1 + drift) / ccm_norm(v)) AS v FROM ccm_raw;
CREATE TABLE ccm_models AS
SELECT s.case_id,
	   format('{"k": %s, "d": %s, "metric": "cosine", "sizes": %s, "centroids": %s}',
			  s.k, s.d, array_to_json(array_fill(1, ARRAY[s.k])),
			  (SELECT json_agg(to_json(v) ORDER BY c) FROM ccm_centroids c WHERE c.case_id = s.case_id)) AS model
FROM ccm_cases s;
CREATE TABLE ccm_rows AS
SELECT s.case_id, r.r,
	   ARRAY(SELECT (random() - 0.5) * power(10, 4 * random() - 2) FROM generate_series(1, s.d) j WHERE r.r >= 0) AS x
FROM ccm_cases s, generate_series(1, 40) r(r);

-- every model is accepted; each row's prediction is the centroid of
-- largest cosine, and its distance 1 - that cosine
SELECT count(*) AS models, count(*) FILTER (WHERE ccm_reads(model) = 'accepted') AS accepted,
	   min(abs(ccm_norm(v) - 1)) < 1e-10 AS some_near_1, max(abs(ccm_norm(v) - 1)) <= 1e-9 AS all_within
FROM ccm_models JOIN (SELECT case_id, v FROM ccm_centroids) c USING (case_id);
WITH best AS (
	SELECT r.case_id, r.x, b.c, b.cos
	FROM ccm_rows r,
		 LATERAL (SELECT c.c, ccm_cos(r.x, c.v) AS cos FROM ccm_centroids c
				  WHERE c.case_id = r.case_id ORDER BY 2 DESC NULLS LAST LIMIT 1) b
)
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(m.model::kmeans_model, b.x) <> b.c) AS wrong_cluster,
	   max(abs(kmeans_distance(m.model::kmeans_model, b.x) - (1 - b.cos))) < 1e-8 AS distance_is_1_minus_cos
FROM best b JOIN ccm_models m USING (case_id);

-- the same models with their first centroid off the sphere (norm times
-- 1 +- 1e-8 to 1 +- 0.5, or zero): every one is refused, and none that
-- were accepted would predict what brute-force cosine does for all rows
CREATE TABLE ccm_off_centroids AS
SELECT case_id, c,
	   CASE WHEN c > 0 THEN v
			WHEN case_id % 10 = 0 THEN ccm_scaled(v, 0)
			ELSE ccm_scaled(v, 1 + sign(random() - 0.5) * power(10, -8 + 7.7 * random()))
	   END AS v
FROM ccm_centroids;
CREATE TABLE ccm_off AS
SELECT s.case_id,
	   format('{"k": %s, "d": %s, "metric": "cosine", "sizes": %s, "centroids": %s}',
			  s.k, s.d, array_to_json(array_fill(1, ARRAY[s.k])),
			  (SELECT json_agg(to_json(v) ORDER BY c) FROM ccm_off_centroids c
			   WHERE c.case_id = s.case_id)) AS model
FROM ccm_cases s;
SELECT count(*) AS models,
	   count(*) FILTER (WHERE ccm_reads(model) LIKE '22P02:%') AS refused,
	   count(*) FILTER (WHERE ccm_reads(model) = 'accepted' AND EXISTS (
		   SELECT FROM ccm_rows r,
				  LATERAL (SELECT c.c FROM ccm_off_centroids c WHERE c.case_id = r.case_id
						   ORDER BY ccm_cos(r.x, c.v) DESC NULLS LAST LIMIT 1) b
		   WHERE r.case_id = o.case_id AND kmeans_predict(o.model::kmeans_model, r.x) <> b.c)) AS accepted_and_wrong
FROM ccm_off o;

-- fits: each case's rows fitted under cosine (k at most its rows), every
-- centroid a unit vector and every prediction the largest cosine
CREATE TABLE ccm_fits AS
SELECT case_id, kmeans_gpu(x, (SELECT k FROM ccm_cases s WHERE s.case_id = r.case_id),
						   '{"metric": "cosine", "seed": 7}') AS m
FROM ccm_rows r GROUP BY case_id;
SELECT count(*) AS centroids, bool_and(abs(ccm_norm(kc.c) - 1) <= 1e-12) AS unit
FROM ccm_fits f, kmeans_centroids(f.m) AS kc(cluster, c, size);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(f.m, r.x) <> b.cluster) AS wrong_cluster
FROM ccm_rows r JOIN ccm_fits f USING (case_id),
	 LATERAL (SELECT kc.cluster FROM kmeans_centroids(f.m) AS kc(cluster, c, size)
			  ORDER BY ccm_cos(r.x, kc.c) DESC NULLS LAST LIMIT 1) b;

-- a fit whose cluster's rows cancel (the mean of +e_j and -e_j is zero, of
-- no direction) keeps a unit centroid, where it once returned a zero one
SELECT (m::jsonb)->'centroids' AS centroids, ccm_reads(m::text) AS reads_back
FROM (SELECT kmeans_gpu(v, 1, '{"metric": "cosine"}') AS m
	  FROM (VALUES (ARRAY[1, 0]::float8[]), (ARRAY[-1, 0]), (ARRAY[0, 1]), (ARRAY[0, -1])) AS t(v)) f;
SELECT count(*) AS centroids, bool_and(abs(ccm_norm(kc.c) - 1) <= 1e-12) AS unit
FROM (SELECT kmeans_gpu(v, 3, '{"metric": "cosine", "seed": 2}') AS m
	  FROM (SELECT ARRAY[s * (j = 1)::int, s * (j = 2)::int, s * (j = 3)::int]::float8[] AS v
			FROM generate_series(1, 3) j, (VALUES (1), (-1)) AS t(s), generate_series(1, 5) rep) r) f,
	 kmeans_centroids(f.m) AS kc(cluster, c, size);

DROP TABLE ccm_payloads, ccm_read, ccm_cases, ccm_raw, ccm_centroids, ccm_models, ccm_off_centroids, ccm_off, ccm_rows, ccm_fits;
DROP FUNCTION ccm_reads(text), ccm_copy_file(bytea), ccm_cos(float8[], float8[]),
	ccm_scaled(float8[], float8), ccm_norm(float8[]);
