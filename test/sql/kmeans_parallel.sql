-- kmeans_gpu under a parallel plan: partial states combined in the leader
-- give the serial plan's model, bit for bit, with or without gpuclust in
-- shared_preload_libraries (rows in shared memory, or, on PostgreSQL 15
-- and 16 without it, copied inline).
SET gpuclust.device = cpu;

CREATE TABLE pt (id int, g int, v float8[], r real[]);
-- 40,000 rows in 4 blobs; every 997th vector NULL
INSERT INTO pt
SELECT i, i % 3,
	   CASE WHEN i % 997 = 0 THEN NULL ELSE
	   ARRAY(SELECT (i % 4) * 10 + sin(i * 1.7 + j * 3.1) FROM generate_series(1, 8) j) END,
	   CASE WHEN i % 997 = 0 THEN NULL ELSE
	   ARRAY(SELECT ((i % 4) * 10 + cos(i * 0.3 + j))::real FROM generate_series(1, 8) j) END
FROM generate_series(1, 40000) i;
ANALYZE pt;

-- the model without the timings and the parallel collection's counts
CREATE FUNCTION model_core(m kmeans_model) RETURNS jsonb
	LANGUAGE sql IMMUTABLE AS $$ SELECT m::text::jsonb - 'timings_ms' - 'partial_states' - 'shared_memory_states' $$;
-- the parallel collection as expected: at least one partial state, and
-- rows in shared memory exactly when gpuclust is preloaded or the server
-- has the DSM registry (PostgreSQL 17 and later)
CREATE FUNCTION parallel_ok(m kmeans_model) RETURNS boolean
	LANGUAGE sql STABLE AS $$
	SELECT (m::text::jsonb->>'partial_states')::int >= 1
	   AND ((m::text::jsonb->>'shared_memory_states')::int > 0) =
		   (current_setting('shared_preload_libraries') ~ 'gpuclust' OR
			current_setting('server_version_num')::int >= 170000) $$;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 4) FROM pt;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(r, 4, '{"seed": 3}') FROM pt;

-- serial and parallel models, every overload
SET max_parallel_workers_per_gather = 0;
SELECT kmeans_gpu(v, 4) AS s1, kmeans_gpu(v, 5, '{"seed": 11, "init": "random", "n_init": 2}') AS s2,
	   kmeans_gpu(r, 4) AS s3, kmeans_gpu(r, 6, '{"seed": 5, "max_iter": 3}') AS s4
FROM pt \gset
SET max_parallel_workers_per_gather = 2;
SELECT kmeans_gpu(v, 4) AS p1, kmeans_gpu(v, 5, '{"seed": 11, "init": "random", "n_init": 2}') AS p2,
	   kmeans_gpu(r, 4) AS p3, kmeans_gpu(r, 6, '{"seed": 5, "max_iter": 3}') AS p4
FROM pt \gset

SELECT model_core(:'s1') = model_core(:'p1') AS float8_same,
	   model_core(:'s2') = model_core(:'p2') AS float8_options_same,
	   model_core(:'s3') = model_core(:'p3') AS real_same,
	   model_core(:'s4') = model_core(:'p4') AS real_options_same;
SELECT parallel_ok(:'p1') AS p1, parallel_ok(:'p2') AS p2,
	   parallel_ok(:'p3') AS p3, parallel_ok(:'p4') AS p4,
	   (:'s1'::kmeans_model)::text::jsonb->>'partial_states' <> '0' AS serial_says_parallel;
SELECT (m->>'rows')::int AS rows, (m->>'null_rows')::int AS null_rows, m->'sizes' AS sizes
FROM (SELECT :'p1'::kmeans_model::text::jsonb AS m) s;

-- the text form keeps the parallel counts
SELECT (:'p1'::kmeans_model)::text::kmeans_model::text = (:'p1'::kmeans_model)::text AS text_round_trip;

-- on the device gpuclust.device = auto picks (the GPU where one is usable,
-- reading rows borrowed from shared memory), the same equality
RESET gpuclust.device;
SET max_parallel_workers_per_gather = 0;
SELECT kmeans_gpu(v, 4, '{"seed": 1}') AS a1, kmeans_gpu(r, 5, '{"seed": 1}') AS a2 FROM pt \gset
SET max_parallel_workers_per_gather = 2;
SELECT model_core(kmeans_gpu(v, 4, '{"seed": 1}')) = model_core(:'a1') AS auto_float8_same,
	   model_core(kmeans_gpu(r, 5, '{"seed": 1}')) = model_core(:'a2') AS auto_real_same
FROM pt;
SET gpuclust.device = cpu;

-- one model per group: small partial states
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial_groups AS
SELECT g, model_core(kmeans_gpu(v, 3, '{"seed": 2}')) AS m FROM pt GROUP BY g;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT g, kmeans_gpu(v, 3, '{"seed": 2}') FROM pt GROUP BY g;
SELECT s.g, s.m = model_core(p.m) AS same
FROM serial_groups s
JOIN (SELECT g, kmeans_gpu(v, 3, '{"seed": 2}') AS m FROM pt GROUP BY g) p USING (g)
ORDER BY g;

-- partitionwise aggregation serializes partial states without workers
SET max_parallel_workers_per_gather = 0;
SET enable_partitionwise_aggregate = on;
CREATE TABLE ppt (id int, v float8[]) PARTITION BY RANGE (id);
CREATE TABLE ppt_1 PARTITION OF ppt FOR VALUES FROM (MINVALUE) TO (20000);
CREATE TABLE ppt_2 PARTITION OF ppt FOR VALUES FROM (20000) TO (MAXVALUE);
INSERT INTO ppt SELECT id, v FROM pt;
ANALYZE ppt;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 4) FROM ppt;
SELECT model_core(kmeans_gpu(v, 4)) = model_core(:'s1') AS partitionwise_same,
	   (kmeans_gpu(v, 4)::text::jsonb->>'partial_states')::int AS partial_states
FROM ppt;
RESET enable_partitionwise_aggregate;
DROP TABLE ppt;
SET max_parallel_workers_per_gather = 2;

-- a LIMIT above the aggregate leaves partial states unread
SELECT g FROM (SELECT g, kmeans_gpu(v, 3) FROM pt GROUP BY g) s ORDER BY g LIMIT 1;

-- few rows: most processes see none; no rows or only NULLs: NULL
SELECT model_core(kmeans_gpu(v, 1)) = (SELECT model_core(kmeans_gpu(v, 1)) FROM pt WHERE id = 5) AS one_row_same
FROM pt WHERE id = 5;
SELECT kmeans_gpu(v, 2) IS NULL AS empty FROM pt WHERE id < 0;
SELECT kmeans_gpu(v, 2) IS NULL AS all_null FROM pt WHERE id % 997 = 0;

-- errors: the same SQLSTATE as the serial plan (row numbers count the
-- rows each process read, so only the SQLSTATE is shown)
\set VERBOSITY sqlstate
SELECT kmeans_gpu(v, 50000) FROM pt;
SELECT kmeans_gpu(v, 4, '{"max_iter": "many"}') FROM pt;
SELECT kmeans_gpu(v, CASE WHEN id = 30000 THEN 3 ELSE 4 END) FROM pt;
CREATE TABLE bad (id int, v float8[]);
INSERT INTO bad SELECT id, v FROM pt;
ANALYZE bad;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 4) FROM bad;
UPDATE bad SET v = ARRAY[1, 2, 3] WHERE id = 35000;
SELECT kmeans_gpu(v, 4) FROM bad;
UPDATE bad SET v = ARRAY[1, 2, NULL, 4, 5, 6, 7, 8] WHERE id = 35000;
SELECT kmeans_gpu(v, 4) FROM bad;
UPDATE bad SET v = ARRAY[1, 2, 'NaN', 4, 5, 6, 7, 8]::float8[] WHERE id = 35000;
SELECT kmeans_gpu(v, 4) FROM bad;
-- the same statements with a serial plan
SET max_parallel_workers_per_gather = 0;
SELECT kmeans_gpu(v, 50000) FROM pt;
SELECT kmeans_gpu(v, CASE WHEN id = 30000 THEN 3 ELSE 4 END) FROM pt;
SELECT kmeans_gpu(v, 4) FROM bad;
UPDATE bad SET v = ARRAY[1, 2, 3] WHERE id = 35000;
SELECT kmeans_gpu(v, 4) FROM bad;
UPDATE bad SET v = ARRAY[1, 2, NULL, 4, 5, 6, 7, 8] WHERE id = 35000;
SELECT kmeans_gpu(v, 4) FROM bad;
SET max_parallel_workers_per_gather = 2;
\set VERBOSITY default

-- after errors, the next parallel run is unaffected
SELECT model_core(kmeans_gpu(v, 4)) = model_core(:'s1') AS same_after_errors FROM pt;

-- kmeans_gpu_assign collects its query's rows with the aggregate
-- gpuclust_kmeans_assign_collect, which a parallel plan runs in workers as
-- it does kmeans_gpu (the plan below: Partial Aggregate under Gather, for a
-- plain scan of the whole table too); its labels and distances are the
-- serial plan's, rows with NULL vectors or NULL ids included, in every
-- input type
EXPLAIN (COSTS OFF)
SELECT gpuclust_kmeans_assign_collect(q.id::bigint, q.v, 4, '{"seed": 2}') FROM (SELECT id, v FROM pt) AS q(id, v);
CREATE FUNCTION assign_summary(query text, k int, opts jsonb) RETURNS TABLE (
	rows bigint, null_ids bigint, null_vectors bigint, clusters bigint, id_sum numeric,
	label_hash bigint, distance_sum float8)
	LANGUAGE sql AS $$
	SELECT count(*), count(*) FILTER (WHERE id IS NULL), count(*) FILTER (WHERE cluster IS NULL),
		   count(DISTINCT cluster), sum(id), sum(hashint8(coalesce(id, -1) * 31 + coalesce(cluster, -1))),
		   sum(distance ORDER BY id, distance)
	FROM kmeans_gpu_assign(query, k, opts) $$;
CREATE TEMP TABLE assign_cases (query text, k int, opts jsonb);
INSERT INTO assign_cases VALUES
	('SELECT id, v FROM pt WHERE g <> 1', 4, '{"seed": 2}'),
	('SELECT id, v FROM pt', 4, '{"seed": 2}'),
	('SELECT id::int8, r FROM pt', 4, '{"seed": 5}'),
	('SELECT CASE WHEN id % 1000 = 7 THEN NULL ELSE id END, v FROM pt', 3, '{"seed": 1}'),
	('SELECT id, v FROM pt WHERE v IS NULL', 2, NULL),
	('SELECT id, v FROM pt WHERE false', 2, NULL);
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE assign_serial AS
	SELECT c.query, s.* FROM assign_cases c, assign_summary(c.query, c.k, c.opts) s;
SET max_parallel_workers_per_gather = 2;
CREATE TEMP TABLE assign_parallel AS
	SELECT c.query, s.* FROM assign_cases c, assign_summary(c.query, c.k, c.opts) s;
SELECT s.query, s.rows, s.null_ids, s.null_vectors, s.clusters,
	   ROW(s.*) IS NOT DISTINCT FROM ROW(p.*) AS same_as_serial
FROM assign_serial s JOIN assign_parallel p USING (query) ORDER BY s.rows, s.query COLLATE "C";
-- row by row on one case, labels and distances
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE assign_rows_serial AS
	SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM pt', 4, '{"seed": 2}');
SET max_parallel_workers_per_gather = 2;
CREATE TEMP TABLE assign_rows_parallel AS
	SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM pt', 4, '{"seed": 2}');
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE s.cluster IS DISTINCT FROM p.cluster OR
							  s.distance IS DISTINCT FROM p.distance) AS differ
FROM assign_rows_serial s FULL JOIN assign_rows_parallel p USING (id);
DROP TABLE assign_cases, assign_serial, assign_parallel, assign_rows_serial, assign_rows_parallel;
DROP FUNCTION assign_summary(text, int, jsonb);

-- shares large enough that a process writes its rows straight into chunk
-- segments (chunks from 4 MB on: after about 2,000 rows of d = 256),
-- which reach the leader beside the rows section: the serial model, and
-- the serial labels row by row (the ids travel in the rows section)
CREATE TABLE wide (id int, v float8[]);
INSERT INTO wide
SELECT i, ARRAY(SELECT (i % 4) * 10 + sin(i * 0.7 + j) FROM generate_series(1, 256) j)
FROM generate_series(1, 24000) i;
ANALYZE wide;
SET max_parallel_workers_per_gather = 0;
SELECT kmeans_gpu(v, 4, '{"seed": 7}') AS ws FROM wide \gset
CREATE TEMP TABLE wide_serial AS
	SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM wide', 4, '{"seed": 7}');
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 4, '{"seed": 7}') FROM wide;
SELECT kmeans_gpu(v, 4, '{"seed": 7}') AS wp FROM wide \gset
SELECT model_core(:'wp') = model_core(:'ws') AS wide_same, parallel_ok(:'wp') AS wide_parallel,
	   (:'wp'::kmeans_model)::text::jsonb->>'rows' AS rows;
CREATE TEMP TABLE wide_parallel AS
	SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM wide', 4, '{"seed": 7}');
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE s.cluster IS DISTINCT FROM p.cluster OR
							  s.distance IS DISTINCT FROM p.distance) AS differ
FROM wide_serial s FULL JOIN wide_parallel p USING (id);
DROP TABLE wide, wide_serial, wide_parallel;

-- a share whose last chunk segment holds one row: with d = 8 a process's
-- own chunks hold 115,570 rows (64 kB doubling, up to the first chunk of 4
-- MB and more, which goes to a chunk segment with room for 116,480), so a
-- partition of 115,571 rows leaves a chunk segment with more room than the
-- share has rows, and one of 115,570 none; partitionwise aggregation makes
-- these shares in one process, row for row
SET max_parallel_workers_per_gather = 0;
CREATE TABLE edge (id int, v float8[]) PARTITION BY RANGE (id);
CREATE TABLE edge_1 PARTITION OF edge FOR VALUES FROM (MINVALUE) TO (115571);
CREATE TABLE edge_2 PARTITION OF edge FOR VALUES FROM (115571) TO (MAXVALUE);
INSERT INTO edge
SELECT i, ARRAY[(i % 4) * 10 + sin(i), cos(i), sin(i * 0.5), cos(i * 0.5),
				sin(i * 0.25), cos(i * 0.25), sin(i * 0.125), (i % 3)::float8]
FROM generate_series(0, 115571 + 115570 - 1) i;
ANALYZE edge;
SELECT kmeans_gpu(v, 4, '{"seed": 5}') AS es FROM edge \gset
SET enable_partitionwise_aggregate = on;
EXPLAIN (COSTS OFF) SELECT kmeans_gpu(v, 4, '{"seed": 5}') FROM edge;
SELECT model_core(kmeans_gpu(v, 4, '{"seed": 5}')) = model_core(:'es') AS edge_same,
	   (kmeans_gpu(v, 4, '{"seed": 5}')::text::jsonb->>'partial_states')::int AS partial_states
FROM edge;
RESET enable_partitionwise_aggregate;
DROP TABLE edge;
SET max_parallel_workers_per_gather = 2;

-- the aggregate serves kmeans_gpu_assign alone
SELECT gpuclust_kmeans_assign_collect(id::bigint, v, 4, NULL) FROM pt;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE bad;
DROP TABLE pt;
DROP FUNCTION model_core(kmeans_model);
DROP FUNCTION parallel_ok(kmeans_model);
