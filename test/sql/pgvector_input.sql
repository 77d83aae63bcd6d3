--
-- pgvector_input: every function that takes vectors also takes pgvector's
-- vector and halfvec (the gpuclust_pgvector extension), read in place; the
-- results are those of the same values given as real[]
--
CREATE EXTENSION vector;
CREATE EXTENSION gpuclust_pgvector;

-- three groups in four dimensions, as vector, halfvec and real[]
CREATE TABLE pv_pts AS
SELECT i AS id,
	   ARRAY[10 * (i % 3) + (hashint4(i) & 255) / 256.0, (hashint4(i + 1000) & 255) / 128.0,
			 -5 * (i % 3) + (hashint4(i + 2000) & 255) / 512.0, (hashint4(i + 3000) & 255) / 64.0]::real[] AS r
FROM generate_series(1, 300) i;
ALTER TABLE pv_pts ADD COLUMN v vector(4), ADD COLUMN h halfvec(4), ADD COLUMN hr real[];
UPDATE pv_pts SET v = r::vector, h = r::halfvec, hr = r::halfvec::real[];

-- the overloads resolve without casts
SELECT pg_typeof(kmeans_gpu(v, 3)) AS from_vector, pg_typeof(kmeans_gpu(h, 3)) AS from_halfvec FROM pv_pts;

-- kmeans_gpu: the same model (all but the timings) as from real[]
SELECT (SELECT kmeans_gpu(v, 3, '{"seed": 7}')::jsonb - 'timings_ms' - 'input' FROM pv_pts)
	 = (SELECT kmeans_gpu(r, 3, '{"seed": 7}')::jsonb - 'timings_ms' - 'input' FROM pv_pts) AS vector_same_model,
	   (SELECT kmeans_gpu(h, 3, '{"seed": 7}')::jsonb - 'timings_ms' - 'input' FROM pv_pts)
	 = (SELECT kmeans_gpu(hr, 3, '{"seed": 7}')::jsonb - 'timings_ms' - 'input' FROM pv_pts) AS halfvec_same_model;
SELECT m::jsonb->'sizes' AS sizes, m::jsonb->'rows' AS rows, m::jsonb->'d' AS d
FROM (SELECT kmeans_gpu(v, 3, '{"seed": 7}') AS m FROM pv_pts) s;

-- a bigint k, such as a count
SELECT (SELECT kmeans_gpu(v, (SELECT count(*) / 100 FROM pv_pts), '{"seed": 7}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_gpu(v, 3, '{"seed": 7}')::jsonb - 'timings_ms' FROM pv_pts) AS vector_bigint_k,
	   (SELECT kmeans_gpu(h, 3::bigint)::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_gpu(h, 3)::jsonb - 'timings_ms' FROM pv_pts) AS halfvec_bigint_k,
	   (SELECT count(*) FILTER (WHERE a <> b)
		FROM (SELECT kmeans_gpu_cluster(v, 3::bigint) OVER () AS a, kmeans_gpu_cluster(v, 3) OVER () AS b
			  FROM pv_pts) s) AS window_bigint_k_differences;
-- a smallint k, as drivers bind small integers (int and bigint would both fit)
SELECT (SELECT kmeans_gpu(v, 3::smallint, '{"seed": 7}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_gpu(v, 3, '{"seed": 7}')::jsonb - 'timings_ms' FROM pv_pts) AS vector_smallint_k,
	   (SELECT kmeans_gpu(h, 3::smallint)::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_gpu(h, 3)::jsonb - 'timings_ms' FROM pv_pts) AS halfvec_smallint_k,
	   (SELECT count(*) FILTER (WHERE a <> b)
		FROM (SELECT kmeans_gpu_cluster(v, 3::smallint) OVER () AS a, kmeans_gpu_cluster(v, 3) OVER () AS b
			  FROM pv_pts) s) AS window_smallint_k_differences;

-- a bigint and a smallint k or p in the stream and p-median aggregates
SELECT (SELECT kmeans_stream_model(kmeans_stream_state(v, 3::bigint), '{"seed": 4}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_stream_model(kmeans_stream_state(v, 3), '{"seed": 4}')::jsonb - 'timings_ms' FROM pv_pts) AS stream_vector_bigint_k,
	   (SELECT kmeans_stream_model(kmeans_stream_state(h, 3::smallint, '{}'), '{"seed": 4}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT kmeans_stream_model(kmeans_stream_state(h, 3, '{}'), '{"seed": 4}')::jsonb - 'timings_ms' FROM pv_pts) AS stream_halfvec_smallint_k,
	   (SELECT pmedian_gpu(id, v, (SELECT count(*) / 100 FROM pv_pts))::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, v, 3)::jsonb - 'timings_ms' FROM pv_pts) AS pm_vector_bigint_p,
	   (SELECT pmedian_gpu(id, h, 3::smallint, '{"seed": 2}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, h, 3, '{"seed": 2}')::jsonb - 'timings_ms' FROM pv_pts) AS pm_halfvec_smallint_p,
	   (SELECT pmedian_gpu(id, v, 1.0, 3::bigint, '{"capacity": 150}')::jsonb - 'timings_ms' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, v, 1.0, 3, '{"capacity": 150}')::jsonb - 'timings_ms' FROM pv_pts) AS pm_demand_bigint_p;

-- window form: the same clusters row by row
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE cv IS DISTINCT FROM cr) AS vector_differences,
	   count(*) FILTER (WHERE ch IS DISTINCT FROM chr) AS halfvec_differences,
	   count(DISTINCT cv) AS clusters
FROM (SELECT kmeans_gpu_cluster(v, 3, '{"seed": 3}') OVER () AS cv,
			 kmeans_gpu_cluster(r, 3, '{"seed": 3}') OVER () AS cr,
			 kmeans_gpu_cluster(h, 3) OVER () AS ch,
			 kmeans_gpu_cluster(hr, 3) OVER () AS chr
	  FROM pv_pts) s;
-- per partition, with NULL vectors getting a NULL cluster
SELECT id % 2 AS part, count(*) AS rows, count(c) AS clustered, count(DISTINCT c) AS clusters
FROM (SELECT id, kmeans_gpu_cluster(CASE WHEN id % 10 <> 0 THEN v END, 3) OVER (PARTITION BY id % 2) AS c
	  FROM pv_pts) s
GROUP BY 1 ORDER BY 1;

-- kmeans_predict and kmeans_distance: as for real[]
CREATE TABLE pv_model AS SELECT kmeans_gpu(r, 3, '{"seed": 7}') AS m FROM pv_pts;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE kmeans_predict(m, v) <> kmeans_predict(m, r)) AS vector_predict_differences,
	   count(*) FILTER (WHERE kmeans_distance(m, v) <> kmeans_distance(m, r)) AS vector_distance_differences,
	   count(*) FILTER (WHERE kmeans_predict(m, h) <> kmeans_predict(m, hr)) AS halfvec_predict_differences,
	   count(*) FILTER (WHERE kmeans_distance(m, h) <> kmeans_distance(m, hr)) AS halfvec_distance_differences
FROM pv_pts, pv_model;

-- kmeans_gpu_assign: a vector or halfvec query column
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS vector_differences
FROM kmeans_gpu_assign('SELECT id, v FROM pv_pts', 3, '{"seed": 2}') a
JOIN kmeans_gpu_assign('SELECT id, r FROM pv_pts', 3, '{"seed": 2}') b USING (id);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS halfvec_differences
FROM kmeans_gpu_assign('SELECT id, h FROM pv_pts', 3, '{"seed": 2}') a
JOIN kmeans_gpu_assign('SELECT id, hr FROM pv_pts', 3, '{"seed": 2}') b USING (id);
-- a domain over vector is a vector column
CREATE DOMAIN pv_embedding AS vector(4);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS domain_differences
FROM kmeans_gpu_assign('SELECT id, v::pv_embedding FROM pv_pts', 3, '{"seed": 2}') a
JOIN kmeans_gpu_assign('SELECT id, r FROM pv_pts', 3, '{"seed": 2}') b USING (id);
SELECT * FROM kmeans_gpu_assign('SELECT id, v::sparsevec FROM pv_pts', 3);
\echo :LAST_ERROR_SQLSTATE
-- under a parallel plan (workers collect vector and halfvec rows, with
-- their ids, into partial states): the serial plan's labels
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT gpuclust_kmeans_assign_collect(q.id::bigint, q.v, 3, NULL) FROM (SELECT id, h FROM pv_pts) AS q(id, v);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.cluster <> b.cluster OR a.distance <> b.distance) AS vector_differences,
	   count(*) FILTER (WHERE c.cluster <> d.cluster OR c.distance <> d.distance) AS halfvec_differences
FROM kmeans_gpu_assign('SELECT id, v FROM pv_pts', 3, '{"seed": 2}') a
JOIN kmeans_gpu_assign('SELECT id, r FROM pv_pts', 3, '{"seed": 2}') b USING (id)
JOIN kmeans_gpu_assign('SELECT id, h FROM pv_pts', 3, '{"seed": 2}') c USING (id)
JOIN kmeans_gpu_assign('SELECT id, hr FROM pv_pts', 3, '{"seed": 2}') d USING (id);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- kmeans_stream_state: the same summary, so the same model
SELECT (SELECT kmeans_stream_state(v, 3)::text FROM pv_pts) = (SELECT kmeans_stream_state(r, 3)::text FROM pv_pts)
	   AS vector_same_summary,
	   (SELECT kmeans_stream_state(h, 3, '{"seed": 4}')::text FROM pv_pts)
	 = (SELECT kmeans_stream_state(hr, 3, '{"seed": 4}')::text FROM pv_pts) AS halfvec_same_summary;
SELECT kmeans_stream_info(s)->'rows' AS rows, kmeans_stream_info(s)->'d' AS d
FROM (SELECT kmeans_stream_state(v, 3) AS s FROM pv_pts) t;

-- pmedian_gpu, its capacitated form, pmedian_predict and pmedian_gpu_assign
SELECT (SELECT pmedian_gpu(id, v, 3)::jsonb - 'timings_ms' - 'input' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, r, 3)::jsonb - 'timings_ms' FROM pv_pts) AS vector_same_medoids,
	   (SELECT pmedian_gpu(id, h, 3, '{"seed": 5}')::jsonb - 'timings_ms' - 'input' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, hr, 3, '{"seed": 5}')::jsonb - 'timings_ms' FROM pv_pts) AS halfvec_same_medoids,
	   (SELECT pmedian_gpu(id, v, 1.0, 3, '{"capacity": 120}')::jsonb - 'timings_ms' - 'input' FROM pv_pts)
	 = (SELECT pmedian_gpu(id, r, 1.0, 3, '{"capacity": 120}')::jsonb - 'timings_ms' FROM pv_pts) AS capacitated_same;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE pmedian_predict(m, v) <> pmedian_predict(m, r)) AS vector_differences,
	   count(*) FILTER (WHERE pmedian_predict(m, h) <> pmedian_predict(m, hr)) AS halfvec_differences
FROM pv_pts, (SELECT pmedian_gpu(id, r, 3) AS m FROM pv_pts) s;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE a.medoid_id <> b.medoid_id OR a.distance <> b.distance) AS differences
FROM pmedian_gpu_assign('SELECT id, v FROM pv_pts', 3) a
JOIN pmedian_gpu_assign('SELECT id, r FROM pv_pts', 3) b USING (id);

-- the pmedian_gpu forms over vector and halfvec under a parallel plan:
-- the serial plan's models (the combine functions are shared)
SELECT pmedian_gpu(id, v, 3)::jsonb - 'timings_ms' AS sv,
	   pmedian_gpu(id, h, 1.0, 3, '{"capacity": 120}')::jsonb - 'timings_ms' AS sh
FROM pv_pts \gset
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT pmedian_gpu(id, h, 1.0, 3, '{"capacity": 120}') FROM pv_pts;
SELECT pmedian_gpu(id, v, 3)::jsonb - 'timings_ms' = :'sv'::jsonb AS vector_parallel_same,
	   pmedian_gpu(id, h, 1.0, 3, '{"capacity": 120}')::jsonb - 'timings_ms' = :'sh'::jsonb
		   AS halfvec_parallel_same
FROM pv_pts;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

--
-- NULL vectors are skipped and counted, as for arrays
--
SELECT m::jsonb->'rows' AS rows, m::jsonb->'null_rows' AS null_rows
FROM (SELECT kmeans_gpu(CASE WHEN id % 3 = 0 THEN NULL ELSE v END, 2) AS m FROM pv_pts) s;
SELECT kmeans_gpu(NULL::vector, 2) IS NULL AS all_null_is_null, kmeans_gpu(NULL::halfvec, 2) IS NULL AS all_null_half
FROM pv_pts;
SELECT count(*) AS rows, count(cluster) AS clustered
FROM kmeans_gpu_assign('SELECT id, CASE WHEN id % 4 = 0 THEN NULL ELSE h END FROM pv_pts', 2);
SELECT kmeans_predict(m, NULL::vector) IS NULL AS strict FROM pv_model;

--
-- Zero vectors are points like any other for the Euclidean metric
--
CREATE TABLE pv_zero AS
SELECT i AS id, (CASE WHEN i <= 5 THEN '[0,0,0]' ELSE '[4,0,3]' END)::vector AS v FROM generate_series(1, 10) i;
SELECT m::jsonb->'sizes' AS sizes, m::jsonb->'centroids' AS centroids, m::jsonb->'inertia' AS inertia
FROM (SELECT kmeans_gpu(v, 2, '{"seed": 1}') AS m FROM pv_zero) s;
SELECT kmeans_distance(m, '[0,0,0]'::vector) AS to_zero, kmeans_distance(m, '[0,0,0]'::halfvec) AS half_zero,
	   kmeans_distance(m, '[8,0,6]'::vector) AS five
FROM (SELECT kmeans_gpu(v, 2, '{"seed": 1}') AS m FROM pv_zero) s;

--
-- Dimensions: typmods, mixed dimensions, a vector against a model
--
-- a typmod is pgvector's to enforce
INSERT INTO pv_pts (id, v) VALUES (0, '[1,2,3]');
\echo :LAST_ERROR_SQLSTATE
-- an unconstrained column may mix dimensions: the clustering says which row
CREATE TABLE pv_mixed (id int, v vector, h halfvec);
INSERT INTO pv_mixed VALUES (1, '[1,2]', '[1,2]'), (2, NULL, NULL), (3, '[1,2,3]', '[1,2,3]');
SELECT kmeans_gpu(v, 1 ORDER BY id) FROM pv_mixed;
SELECT kmeans_gpu(h, 1 ORDER BY id) FROM pv_mixed;
SELECT kmeans_gpu_cluster(v, 1) OVER (ORDER BY id) FROM pv_mixed;
SELECT kmeans_stream_state(v, 1 ORDER BY id) FROM pv_mixed;
\echo :LAST_ERROR_SQLSTATE
-- a vector of another dimension than the model's
SELECT kmeans_predict(m, '[1,2,3]'::vector) FROM pv_model;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_distance(m, '[1,2,3,4,5]'::halfvec) FROM pv_model;
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_predict(m, '[1,2]'::vector) FROM (SELECT pmedian_gpu(id, v, 2) AS m FROM pv_pts) s;
\echo :LAST_ERROR_SQLSTATE

--
-- halfvec values widen exactly: subnormals, the largest half, signed zeros
--
CREATE TABLE pv_half AS
SELECT '[0.000000059604645,-0.000061035156,65504,-0,1.5,-2.25]'::halfvec AS h;
SELECT m::jsonb->'centroids' AS centroid, (m::jsonb->'centroids'->0) = to_jsonb(h::real[]::float8[]) AS same_as_cast
FROM pv_half, (SELECT kmeans_gpu(h, 1) AS m FROM pv_half) s;

--
-- Large vectors are stored out of line (pgvector's storage is external)
-- and read from the toast table; the same model as from real[]
--
CREATE TABLE pv_big AS
SELECT i AS id, ARRAY(SELECT (hashint4(i * 1000 + j) & 65535) / 65536.0 + (i % 2) * 3 FROM generate_series(1, 800) j)::real[] AS r
FROM generate_series(1, 40) i;
ALTER TABLE pv_big ADD COLUMN v vector(800), ADD COLUMN h halfvec(800), ADD COLUMN hr real[];
UPDATE pv_big SET v = r::vector, h = r::halfvec, hr = r::halfvec::real[];
SELECT pg_column_size(v) AS vector_bytes, pg_column_size(h) AS halfvec_bytes FROM pv_big WHERE id = 1;
SELECT (SELECT kmeans_gpu(v, 2, '{"seed": 1}')::jsonb - 'timings_ms' - 'input' FROM pv_big)
	 = (SELECT kmeans_gpu(r, 2, '{"seed": 1}')::jsonb - 'timings_ms' - 'input' FROM pv_big) AS vector_same_model,
	   (SELECT kmeans_gpu(h, 2, '{"seed": 1}')::jsonb - 'timings_ms' - 'input' FROM pv_big)
	 = (SELECT kmeans_gpu(hr, 2, '{"seed": 1}')::jsonb - 'timings_ms' - 'input' FROM pv_big) AS halfvec_same_model,
	   (SELECT kmeans_gpu(v, 2, '{"seed": 1}')::jsonb->'sizes' FROM pv_big) AS sizes;
SELECT count(*) FILTER (WHERE cv <> cr) AS window_differences
FROM (SELECT kmeans_gpu_cluster(v, 2) OVER () AS cv, kmeans_gpu_cluster(r, 2) OVER () AS cr FROM pv_big) s;

--
-- The model records the input's type; centroids as vector or halfvec go
-- into a pgvector column and work with its operators
--
SELECT (SELECT kmeans_gpu(v, 3)::jsonb->>'input' FROM pv_pts) AS from_vector,
	   (SELECT kmeans_gpu(h, 3)::jsonb->>'input' FROM pv_pts) AS from_halfvec,
	   (SELECT kmeans_gpu(r, 3)::jsonb->>'input' FROM pv_pts) AS from_real,
	   (SELECT kmeans_gpu(r::float8[], 3)::jsonb->>'input' FROM pv_pts) AS from_float8;
SELECT m::text::kmeans_model::text = m::text AS text_round_trip, m::jsonb->>'input' AS input
FROM (SELECT kmeans_gpu(h, 3) AS m FROM pv_pts) s;
CREATE TABLE pv_centroids (cluster int PRIMARY KEY, centroid vector(4), size bigint);
INSERT INTO pv_centroids SELECT * FROM kmeans_centroids_vector((SELECT kmeans_gpu(v, 3, '{"seed": 7}') FROM pv_pts));
SELECT c.cluster, c.size, c.centroid = k.centroid::vector AS same_as_cast
FROM pv_centroids c JOIN kmeans_centroids((SELECT kmeans_gpu(v, 3, '{"seed": 7}') FROM pv_pts)) k USING (cluster)
ORDER BY cluster;
-- the nearest centroid by pgvector's <-> is kmeans_predict's cluster
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE (SELECT cluster FROM pv_centroids ORDER BY centroid <-> p.v LIMIT 1)
						<> kmeans_predict(m, p.v)) AS differences
FROM pv_pts p, (SELECT kmeans_gpu(v, 3, '{"seed": 7}') AS m FROM pv_pts) s;
SELECT cluster, pg_typeof(centroid) AS type, centroid = (SELECT centroid::halfvec FROM pv_centroids c WHERE c.cluster = h.cluster) AS same
FROM kmeans_centroids_halfvec((SELECT kmeans_gpu(v, 3, '{"seed": 7}') FROM pv_pts)) h ORDER BY cluster;
-- a centroid out of halfvec's range is pgvector's error
SELECT * FROM kmeans_centroids_halfvec('{"k": 1, "d": 1, "sizes": [1], "centroids": [[100000]]}');
\echo :LAST_ERROR_SQLSTATE

DROP TABLE pv_pts, pv_model, pv_zero, pv_mixed, pv_half, pv_big, pv_centroids;
DROP DOMAIN pv_embedding;
DROP EXTENSION gpuclust_pgvector;
DROP EXTENSION vector;
