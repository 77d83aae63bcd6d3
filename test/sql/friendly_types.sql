--
-- friendly_types: vectors of any number type (integer[], bigint[],
-- smallint[], numeric[]) and a bigint k do what the user means, in every
-- function that takes vectors; other arrays are refused with a hint naming
-- the cast
--
CREATE TABLE ft_pts AS
SELECT i AS id, ARRAY[100 * (i % 3) + i % 7, i % 5]::int[] AS iv
FROM generate_series(1, 60) i;
ALTER TABLE ft_pts ADD COLUMN fv float8[], ADD COLUMN bv bigint[], ADD COLUMN sv smallint[],
	ADD COLUMN nv numeric[];
UPDATE ft_pts SET fv = iv::float8[], bv = iv::bigint[], sv = iv::smallint[], nv = iv::numeric[];

-- ARRAY[1, 2] is integer[], and 3 is an integer: this is the call users write
SELECT m::jsonb->'sizes' AS sizes, m::jsonb->'centroids' AS centroids, m::jsonb->>'input' AS input
FROM (SELECT kmeans_gpu(v, 2) AS m FROM (VALUES (ARRAY[1, 2]), (ARRAY[1, 3]), (ARRAY[9, 2])) t(v)) s;

-- every number type gives the model float8[] gives (all but input and timings)
SELECT (SELECT kmeans_gpu(iv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts)
	 = (SELECT kmeans_gpu(fv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts) AS integer_same,
	   (SELECT kmeans_gpu(bv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts)
	 = (SELECT kmeans_gpu(fv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts) AS bigint_same,
	   (SELECT kmeans_gpu(sv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts)
	 = (SELECT kmeans_gpu(fv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts) AS smallint_same,
	   (SELECT kmeans_gpu(nv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts)
	 = (SELECT kmeans_gpu(fv, 3, '{"seed": 4}')::jsonb - 'timings_ms' - 'input' FROM ft_pts) AS numeric_same;
SELECT (SELECT kmeans_gpu(iv, 3)::jsonb->>'input' FROM ft_pts) AS integer_input,
	   (SELECT kmeans_gpu(bv, 3)::jsonb->>'input' FROM ft_pts) AS bigint_input,
	   (SELECT kmeans_gpu(sv, 3)::jsonb->>'input' FROM ft_pts) AS smallint_input,
	   (SELECT kmeans_gpu(nv, 3)::jsonb->>'input' FROM ft_pts) AS numeric_input;
-- numeric values that are not integers, with short and long headers
SELECT m::jsonb->'centroids' AS centroids
FROM (SELECT kmeans_gpu(v, 1) AS m
	  FROM (VALUES (ARRAY[0.5, 12345678901234567890.25, -3]), (ARRAY[1.5, 12345678901234567890.75, -1])) t(v)) s;

-- a bigint k, such as a count: with float8[], real[] and integer[]
SELECT (SELECT kmeans_gpu(fv, 3::bigint, '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT kmeans_gpu(fv, 3, '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts) AS float8_bigint_k,
	   (SELECT kmeans_gpu(fv::real[], (SELECT count(*) / 20 FROM ft_pts))::jsonb->'k' FROM ft_pts) AS real_count_k,
	   (SELECT kmeans_gpu(iv, (SELECT count(*) / 20 FROM ft_pts), '{"seed": 4}')::jsonb->'sizes' FROM ft_pts) AS integer_count_k;
SELECT kmeans_gpu(iv, 4294967298) FROM ft_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(iv, -4294967296) FROM ft_pts;
\echo :LAST_ERROR_SQLSTATE

-- window form, kmeans_predict and kmeans_distance
SELECT count(*) AS rows, count(*) FILTER (WHERE a <> b) AS differences, count(DISTINCT a) AS clusters
FROM (SELECT kmeans_gpu_cluster(iv, 3, '{"seed": 4}') OVER () AS a,
			 kmeans_gpu_cluster(fv, 3, '{"seed": 4}') OVER () AS b FROM ft_pts) s;
SELECT count(*) FILTER (WHERE a <> b) AS bigint_k_differences
FROM (SELECT kmeans_gpu_cluster(fv, 3::bigint) OVER () AS a, kmeans_gpu_cluster(fv, 3) OVER () AS b FROM ft_pts) s;
SELECT kmeans_predict(m, ARRAY[200, 1]) AS cluster_int, kmeans_predict(m, ARRAY[200, 1]::bigint[]) AS cluster_bigint,
	   kmeans_predict(m, ARRAY[200.0, 1]) AS cluster_numeric, kmeans_predict(m, ARRAY[200, 1]::float8[]) AS cluster_float8,
	   kmeans_distance(m, ARRAY[203, 2]) = kmeans_distance(m, ARRAY[203, 2]::float8[]) AS same_distance
FROM (SELECT kmeans_gpu(fv, 3, '{"seed": 4}') AS m FROM ft_pts) s;

-- the assign functions take a number-array query column
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS integer_differences,
	   count(*) FILTER (WHERE c.cluster <> b.cluster OR c.distance <> b.distance) AS numeric_differences
FROM kmeans_gpu_assign('SELECT id, iv FROM ft_pts', 3, '{"seed": 4}') a
JOIN kmeans_gpu_assign('SELECT id, fv FROM ft_pts', 3, '{"seed": 4}') b USING (id)
JOIN kmeans_gpu_assign('SELECT id, nv FROM ft_pts', 3, '{"seed": 4}') c USING (id);
SELECT count(*) AS rows, count(*) FILTER (WHERE a.medoid_id <> b.medoid_id OR a.distance <> b.distance) AS differences
FROM pmedian_gpu_assign('SELECT id, bv FROM ft_pts', 3) a
JOIN pmedian_gpu_assign('SELECT id, fv FROM ft_pts', 3) b USING (id);

-- pmedian_gpu (all three forms), pmedian_predict and kmeans_stream_state
-- take them too, with the results of the same values as float8[]
SELECT (SELECT pmedian_gpu(id, iv, 3)::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3)::jsonb - 'timings_ms' FROM ft_pts) AS pm_integer_same,
	   (SELECT pmedian_gpu(id, bv, 3, '{"seed": 2}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3, '{"seed": 2}')::jsonb - 'timings_ms' FROM ft_pts) AS pm_bigint_same,
	   (SELECT pmedian_gpu(id, sv, 1.0, 3, '{"capacity": 25}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 1.0, 3, '{"capacity": 25}')::jsonb - 'timings_ms' FROM ft_pts) AS pm_demand_same,
	   (SELECT pmedian_gpu(id, nv, 3)::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3)::jsonb - 'timings_ms' FROM ft_pts) AS pm_numeric_same;
SELECT pmedian_predict(m, ARRAY[200, 1]) = pmedian_predict(m, ARRAY[200, 1]::float8[]) AS pm_predict_int,
	   pmedian_predict(m, ARRAY[200.0, 1]) = pmedian_predict(m, ARRAY[200, 1]::float8[]) AS pm_predict_numeric,
	   pmedian_predict(m, ARRAY[0, 0]::smallint[]) = pmedian_predict(m, ARRAY[0, 0]::float8[]) AS pm_predict_smallint,
	   pmedian_predict(m, ARRAY[100, 4]::bigint[]) = pmedian_predict(m, ARRAY[100, 4]::float8[]) AS pm_predict_bigint
FROM (SELECT pmedian_gpu(id, fv, 3) AS m FROM ft_pts) s;
SELECT (SELECT kmeans_stream_model(kmeans_stream_state(iv, 3), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT kmeans_stream_model(kmeans_stream_state(fv, 3), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts) AS stream_integer_same,
	   (SELECT kmeans_stream_model(kmeans_stream_state(nv, 3, '{"metric": "cosine"}'), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT kmeans_stream_model(kmeans_stream_state(fv, 3, '{"metric": "cosine"}'), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts) AS stream_numeric_same,
	   (SELECT kmeans_stream_model(kmeans_stream_state(v, 1), '{}')::jsonb->'centroids'
		FROM (VALUES (ARRAY[1, 2]), (ARRAY[3, 4]::smallint[]::int[])) t(v)) AS stream_centroids;
-- a bigint p or k (a count) and a smallint one (as drivers bind small
-- integers) in the p-median, stream and assign functions: the int form's results
SELECT (SELECT pmedian_gpu(id, fv, (SELECT count(*) / 20 FROM ft_pts))::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3)::jsonb - 'timings_ms' FROM ft_pts) AS pm_bigint_p,
	   (SELECT pmedian_gpu(id, iv, 3::bigint, '{"seed": 2}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3, '{"seed": 2}')::jsonb - 'timings_ms' FROM ft_pts) AS pm_integer_bigint_p,
	   (SELECT pmedian_gpu(id, fv::real[], 1.0, 3::bigint, '{"capacity": 25}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv::real[], 1.0, 3, '{"capacity": 25}')::jsonb - 'timings_ms' FROM ft_pts) AS pm_demand_bigint_p,
	   (SELECT pmedian_gpu(id, fv, 3::smallint)::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT pmedian_gpu(id, fv, 3)::jsonb - 'timings_ms' FROM ft_pts) AS pm_smallint_p,
	   (SELECT kmeans_stream_model(kmeans_stream_state(fv, 3::bigint), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts)
	 = (SELECT kmeans_stream_model(kmeans_stream_state(fv, 3), '{"seed": 4}')::jsonb - 'timings_ms' FROM ft_pts) AS stream_bigint_k,
	   (SELECT kmeans_stream_info(kmeans_stream_state(nv, (SELECT count(*) / 20 FROM ft_pts), '{"metric": "cosine"}'))->>'k'
		FROM ft_pts) AS stream_count_k;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS bigint_k_differences,
	   count(*) FILTER (WHERE c.cluster <> b.cluster OR c.distance <> b.distance) AS smallint_k_differences
FROM kmeans_gpu_assign('SELECT id, fv FROM ft_pts', 3::bigint, '{"seed": 4}') a
JOIN kmeans_gpu_assign('SELECT id, fv FROM ft_pts', 3, '{"seed": 4}') b USING (id)
JOIN kmeans_gpu_assign('SELECT id, fv FROM ft_pts', 3::smallint, '{"seed": 4}') c USING (id);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.medoid_id <> b.medoid_id OR a.distance <> b.distance) AS bigint_p_differences,
	   count(*) FILTER (WHERE c.medoid_id <> b.medoid_id OR c.distance <> b.distance) AS smallint_p_differences
FROM pmedian_gpu_assign('SELECT id, fv FROM ft_pts', 3::bigint) a
JOIN pmedian_gpu_assign('SELECT id, fv FROM ft_pts', 3) b USING (id)
JOIN pmedian_gpu_assign('SELECT id, fv FROM ft_pts', 3::smallint) c USING (id);
SELECT pmedian_gpu(id, fv, 4294967298) FROM ft_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_stream_state(fv, -4294967296) FROM ft_pts;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, fv FROM ft_pts', 4294967298);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pmedian_gpu_assign('SELECT id, fv FROM ft_pts', 0::bigint);
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(id, v, 1) FROM (VALUES (1, ARRAY[1, NULL]::bigint[])) t(id, v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_stream_state(v, 1) FROM (VALUES (ARRAY[1, 'NaN']::numeric[])) t(v);
\echo :LAST_ERROR_SQLSTATE

--
-- What cannot be a vector is refused, naming the cast
--
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY['1', '2'])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_predict('{"k": 1, "d": 2, "sizes": [1], "centroids": [[0, 0]]}', ARRAY[true, false]);
\echo :LAST_ERROR_SQLSTATE
-- numeric NaN, infinity, huge values and NULL elements, as for float8[]
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY[1, 'NaN']::numeric[])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY[1, 'Infinity']::numeric[])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY[1, 1e400]::numeric[])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY[1, NULL, 2]::numeric[])) t(v);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(v, 1) FROM (VALUES (ARRAY[1, NULL]::int[])) t(v);
\echo :LAST_ERROR_SQLSTATE
-- an untyped literal could be any array type: the catch-only form asks for a cast (42804)
SELECT kmeans_gpu('{1,2}', 3);
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu('{1,2}'::float8[], 1)::jsonb->'centroids' AS with_cast;

DROP TABLE ft_pts;
