--
-- pmedian_basic: the p-median aggregate against brute-force optima on tiny
-- instances, for every metric, with and without the swap improvement;
-- the model's fields, pmedian_predict, real[] input and the text form.
-- Nothing printed depends on the device.
--
CREATE TABLE pm_pts (id bigint, v float8[]);
INSERT INTO pm_pts
SELECT i, ARRAY[((i * 37) % 101)::float8, ((i * 91) % 103)::float8]
FROM generate_series(1, 11) i;

CREATE FUNCTION pm_dist(a float8[], b float8[], metric text) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
SELECT CASE metric
	WHEN 'euclidean' THEN sqrt((a[1] - b[1]) ^ 2 + (a[2] - b[2]) ^ 2)
	WHEN 'sqeuclidean' THEN (a[1] - b[1]) ^ 2 + (a[2] - b[2]) ^ 2
	WHEN 'manhattan' THEN abs(a[1] - b[1]) + abs(a[2] - b[2])
	ELSE 1 - (a[1] * b[1] + a[2] * b[2]) /
		(sqrt(a[1] ^ 2 + a[2] ^ 2) * sqrt(b[1] ^ 2 + b[2] ^ 2)) END $$;

-- the optimum over every set of 1, 2 or 3 medoids
CREATE FUNCTION pm_brute(p int, metric text) RETURNS float8
LANGUAGE sql STABLE AS $$
WITH sets AS (
	SELECT ARRAY[a.id] AS s FROM pm_pts a WHERE p = 1
	UNION ALL
	SELECT ARRAY[a.id, b.id] FROM pm_pts a, pm_pts b WHERE p = 2 AND a.id < b.id
	UNION ALL
	SELECT ARRAY[a.id, b.id, c.id] FROM pm_pts a, pm_pts b, pm_pts c
	WHERE p = 3 AND a.id < b.id AND b.id < c.id)
SELECT min(total) FROM (
	SELECT s, sum((SELECT min(pm_dist(x.v, m.v, metric)) FROM pm_pts m WHERE m.id = ANY (s))) AS total
	FROM sets, pm_pts x GROUP BY s) t $$;

-- the swap improvement reaches a swap-local optimum, here the global one
-- (for p = 2 enumeration shows a second local optimum, 316.27, which the
-- seeding of this data set happens to avoid)
SELECT metric, p,
	   round(((m::jsonb) ->> 'objective')::numeric, 6) AS objective,
	   round(pm_brute(p, metric)::numeric, 6) AS optimum
FROM unnest(ARRAY['euclidean', 'sqeuclidean', 'manhattan', 'cosine']) metric,
	 generate_series(1, 3) p,
	 LATERAL (SELECT pmedian_gpu(id, v, p, jsonb_build_object('metric', metric, 'improve', true)) AS m
			  FROM pm_pts) s
ORDER BY metric, p;

-- location-allocation alone never does better than the optimum
SELECT metric, p,
	   ((m::jsonb) ->> 'objective')::float8 >= pm_brute(p, metric) - 1e-9 AS not_below_optimum,
	   (m::jsonb) ->> 'method' AS method
FROM unnest(ARRAY['euclidean', 'manhattan']) metric, generate_series(1, 3) p,
	 LATERAL (SELECT pmedian_gpu(id, v, p, jsonb_build_object('metric', metric)) AS m
			  FROM pm_pts) s
ORDER BY metric, p;

-- well-separated blobs: location-allocation finds the blob medians
CREATE TABLE pm_blobs (id bigint, v float8[]);
INSERT INTO pm_blobs
SELECT b * 100 + i, ARRAY[b * 1000 + (i % 5)::float8, b * 500 + (i / 5)::float8]
FROM generate_series(0, 3) b, generate_series(0, 24) i;
SELECT (SELECT array_agg(x::bigint ORDER BY x::bigint)
		FROM jsonb_array_elements_text((m::jsonb) -> 'medoid_ids') x) AS medoids,
	   (m::jsonb) -> 'p' AS p, (m::jsonb) -> 'd' AS d, (m::jsonb) -> 'rows' AS rows,
	   (m::jsonb) -> 'converged' AS converged,
	   round(((m::jsonb) ->> 'objective')::numeric, 6) AS objective,
	   (m::jsonb) -> 'capacity' AS capacity, (m::jsonb) -> 'violation' AS violation
FROM (SELECT pmedian_gpu(id, v, 4) AS m FROM pm_blobs) s;

-- predict gives the id of the nearest medoid; real[] input agrees
SELECT pmedian_predict(m, '{3000, 1502}'::float8[]) AS near_blob_3,
	   pmedian_predict(m, '{-5, 3}'::real[]) AS near_blob_0
FROM (SELECT pmedian_gpu(id, v, 4) AS m FROM pm_blobs) s;
SELECT (SELECT array_agg(x::bigint ORDER BY x::bigint)
		FROM jsonb_array_elements_text((m::jsonb) -> 'medoid_ids') x) AS medoids_real
FROM (SELECT pmedian_gpu(id, v::real[], 4, '{"seed": 3}') AS m FROM pm_blobs) s;

-- the text form reads back to the same model; NULL vectors are skipped
SELECT (m::text::pmedian_model)::text = m::text AS text_round_trip,
	   (m::jsonb) -> 'null_rows' AS null_rows
FROM (SELECT pmedian_gpu(id, CASE WHEN id % 7 = 0 THEN NULL ELSE v END, 2) AS m
	  FROM pm_pts) s;
SELECT pmedian_predict('{"p": 2, "d": 1, "medoid_ids": [10, 20], "medoids": [[0], [5]]}',
					   '{4}'::float8[]) AS from_text;

-- the same seed gives the same model, and the seed matters only through
-- the initial centres
SELECT a::jsonb - 'timings_ms' = b::jsonb - 'timings_ms' AS reproducible
FROM (SELECT pmedian_gpu(id, v, 3, '{"seed": 11}') AS a,
			 pmedian_gpu(id, v, 3, '{"seed": 11}') AS b FROM pm_blobs) s;

-- empty input gives NULL
SELECT pmedian_gpu(id, v, 2) IS NULL AS empty_is_null FROM pm_pts WHERE false;

-- the binary form reads back to the same model
CREATE TABLE pm_models AS
SELECT pmedian_gpu(id, v, 3, '{"metric": "manhattan"}') AS m FROM pm_pts
UNION ALL SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 40}') FROM
	(SELECT id, v, 1 + id % 3 AS q FROM pm_blobs) s;
CREATE TABLE pm_models_back (m pmedian_model);
DO $$
DECLARE
	f text := current_setting('data_directory') || '/pmedian_models.bin';
BEGIN
	EXECUTE format('COPY pm_models TO %L (FORMAT binary)', f);
	EXECUTE format('COPY pm_models_back FROM %L (FORMAT binary)', f);
END $$;
SELECT (SELECT array_agg(m::text ORDER BY m::text) FROM pm_models) =
	   (SELECT array_agg(m::text ORDER BY m::text) FROM pm_models_back) AS binary_round_trip,
	   (SELECT count(*) FROM pm_models_back) AS models;
