-- pmedian_gpu under a parallel plan: partial states (rows with their ids
-- and demands) combined in the leader give the serial plan's model, bit
-- for bit, and so does a serial scan of the rows in another order (the fit
-- puts them in id order).  Rows repeat vectors, so equal distances tie.
SET gpuclust.device = cpu;

-- 12,000 rows in 5 blobs, ids shuffled (i * 7919 mod 12007), every
-- vector 12 times over, every 997th vector NULL
CREATE TABLE pmt (id bigint, g int, v float8[], r real[], q float8);
INSERT INTO pmt
SELECT (i * 7919) % 12007, i % 3,
	   CASE WHEN i % 997 = 0 THEN NULL ELSE
	   ARRAY[(i % 5) * 10 + sin(i % 1000), (i % 5) * 3 + cos((i % 1000) * 0.7), sin((i % 1000) * 1.3)] END,
	   ARRAY[((i % 5) * 10 + cos(i % 1000))::real, sin(i % 1000)::real],
	   1 + i % 4
FROM generate_series(1, 12000) i;
ANALYZE pmt;
-- the same rows in id order
CREATE TABLE pmt_sorted AS SELECT * FROM pmt ORDER BY id;

-- the model without its timings
CREATE FUNCTION pm_core(m pmedian_model) RETURNS jsonb
	LANGUAGE sql IMMUTABLE AS $$ SELECT m::text::jsonb - 'timings_ms' $$;
-- the workers a query's Gather launched
CREATE FUNCTION workers_launched(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) ' || q INTO plan;
	RETURN (plan->0->'Plan'->'Plans'->0->>'Workers Launched')::int;
END $$;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 4;

EXPLAIN (COSTS OFF) SELECT pmedian_gpu(id, v, 5) FROM pmt;
EXPLAIN (COSTS OFF) SELECT pmedian_gpu(id, r, q, 5, '{"capacity": 4000}') FROM pmt;
SELECT workers_launched($$SELECT pmedian_gpu(id, v, 5, '{"improve": false}') FROM pmt$$) > 0
	   AS parallel_ran;

-- serial and parallel models: every overload, soft and hard capacities
-- (demand 7,486 on 3,000 rows); the swap improvement (the default,
-- O(n^2) a pass here) on 1,500 rows
SET max_parallel_workers_per_gather = 0;
SELECT pmedian_gpu(id, v, 5, '{"improve": false}') AS s1,
	   pmedian_gpu(id, v, 7, '{"seed": 3}') FILTER (WHERE id < 1500) AS s2,
	   pmedian_gpu(id, v, q, 5, '{"capacity": 1600, "improve": false}') FILTER (WHERE id < 3000) AS s3,
	   pmedian_gpu(id, r, q, 5, '{"capacity": 1600, "capacity_mode": "hard", "improve": false}')
		   FILTER (WHERE id < 3000) AS s4,
	   pmedian_gpu(id, r, 4, '{"metric": "manhattan", "method": "three_phase"}')
		   FILTER (WHERE id < 6000) AS s5
FROM pmt \gset
SET max_parallel_workers_per_gather = 4;
SELECT pmedian_gpu(id, v, 5, '{"improve": false}') AS p1,
	   pmedian_gpu(id, v, 7, '{"seed": 3}') FILTER (WHERE id < 1500) AS p2,
	   pmedian_gpu(id, v, q, 5, '{"capacity": 1600, "improve": false}') FILTER (WHERE id < 3000) AS p3,
	   pmedian_gpu(id, r, q, 5, '{"capacity": 1600, "capacity_mode": "hard", "improve": false}')
		   FILTER (WHERE id < 3000) AS p4,
	   pmedian_gpu(id, r, 4, '{"metric": "manhattan", "method": "three_phase"}')
		   FILTER (WHERE id < 6000) AS p5
FROM pmt \gset
SELECT pm_core(:'s1') = pm_core(:'p1') AS float8_same,
	   pm_core(:'s2') = pm_core(:'p2') AS options_same,
	   pm_core(:'s3') = pm_core(:'p3') AS soft_capacity_same,
	   pm_core(:'s4') = pm_core(:'p4') AS hard_capacity_same,
	   pm_core(:'s5') = pm_core(:'p5') AS three_phase_same;
SELECT (m->>'rows')::int AS rows, (m->>'null_rows')::int AS null_rows,
	   jsonb_array_length(m->'medoid_ids') AS medoids
FROM (SELECT :'p1'::pmedian_model::text::jsonb AS m) s;

-- a serial scan of the rows in id order: the same models again
SET max_parallel_workers_per_gather = 0;
SELECT pm_core(pmedian_gpu(id, v, 5, '{"improve": false}')) = pm_core(:'s1') AS sorted_same,
	   pm_core(pmedian_gpu(id, v, 7, '{"seed": 3}') FILTER (WHERE id < 1500)) = pm_core(:'s2')
		   AS sorted_improved_same,
	   pm_core(pmedian_gpu(id, r, q, 5, '{"capacity": 1600, "capacity_mode": "hard", "improve": false}')
		   FILTER (WHERE id < 3000))
		   = pm_core(:'s4') AS sorted_hard_same
FROM pmt_sorted;
SET max_parallel_workers_per_gather = 4;

-- one model per group
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE pm_serial_groups AS
SELECT g, pm_core(pmedian_gpu(id, v, 3, '{"seed": 2, "improve": false}')) AS m FROM pmt GROUP BY g;
SET max_parallel_workers_per_gather = 4;
EXPLAIN (COSTS OFF) SELECT g, pmedian_gpu(id, v, 3, '{"seed": 2, "improve": false}') FROM pmt GROUP BY g;
SELECT s.g, s.m = pm_core(p.m) AS same
FROM pm_serial_groups s
JOIN (SELECT g, pmedian_gpu(id, v, 3, '{"seed": 2, "improve": false}') AS m FROM pmt GROUP BY g) p USING (g)
ORDER BY g;

-- partitionwise aggregation serializes partial states without workers
SET max_parallel_workers_per_gather = 0;
SET enable_partitionwise_aggregate = on;
CREATE TABLE pmpt (id bigint, v float8[]) PARTITION BY RANGE (id);
CREATE TABLE pmpt_1 PARTITION OF pmpt FOR VALUES FROM (MINVALUE) TO (6000);
CREATE TABLE pmpt_2 PARTITION OF pmpt FOR VALUES FROM (6000) TO (MAXVALUE);
INSERT INTO pmpt SELECT id, v FROM pmt;
ANALYZE pmpt;
EXPLAIN (COSTS OFF) SELECT pmedian_gpu(id, v, 5) FROM pmpt;
SELECT pm_core(pmedian_gpu(id, v, 5, '{"improve": false}')) = pm_core(:'s1') AS partitionwise_same
FROM pmpt;
RESET enable_partitionwise_aggregate;
DROP TABLE pmpt;
SET max_parallel_workers_per_gather = 4;

-- a LIMIT above the aggregate leaves partial states unread
SELECT g FROM (SELECT g, pmedian_gpu(id, v, 2, '{"improve": false}') FROM pmt GROUP BY g) s
ORDER BY g LIMIT 1;

-- few rows: most processes see none; no rows or only NULL vectors: NULL
SELECT pm_core(pmedian_gpu(id, v, 1)) = (SELECT pm_core(pmedian_gpu(id, v, 1)) FROM pmt_sorted WHERE id = 5)
		   AS one_row_same
FROM pmt WHERE id = 5;
SELECT pmedian_gpu(id, v, 2) IS NULL AS empty FROM pmt WHERE id < 0;
SELECT pmedian_gpu(id, v, 2) IS NULL AS all_null FROM pmt WHERE v IS NULL;

-- errors: the same SQLSTATE as the serial plan
\set VERBOSITY sqlstate
SELECT pmedian_gpu(id, v, 20000) FROM pmt;
SELECT pmedian_gpu(id % 11000, v, 5) FROM pmt;
SELECT pmedian_gpu(id, v, q, 5, '{"capacity": 100, "capacity_mode": "hard"}') FROM pmt;
SELECT pmedian_gpu(id, v, CASE WHEN id = 9000 THEN 3 ELSE 5 END) FROM pmt;
SELECT pmedian_gpu(id, v, CASE WHEN id = 9000 THEN NULL ELSE q END, 5, '{"capacity": 6500}') FROM pmt;
SET max_parallel_workers_per_gather = 0;
SELECT pmedian_gpu(id, v, 20000) FROM pmt;
SELECT pmedian_gpu(id % 11000, v, 5) FROM pmt;
SELECT pmedian_gpu(id, v, q, 5, '{"capacity": 100, "capacity_mode": "hard"}') FROM pmt;
SELECT pmedian_gpu(id, v, CASE WHEN id = 9000 THEN 3 ELSE 5 END) FROM pmt;
SELECT pmedian_gpu(id, v, CASE WHEN id = 9000 THEN NULL ELSE q END, 5, '{"capacity": 6500}') FROM pmt;
SET max_parallel_workers_per_gather = 4;
\set VERBOSITY default

-- after errors, the next parallel run is unaffected
SELECT pm_core(pmedian_gpu(id, v, 5, '{"improve": false}')) = pm_core(:'s1') AS same_after_errors
FROM pmt;

-- pmedian_gpu_assign's query may scan in parallel (the plan below); the
-- allocation is the serial plan's
EXPLAIN (COSTS OFF) SELECT id, v FROM pmt WHERE g <> 1;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE alloc_serial AS
	SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM pmt WHERE g <> 1', 5, '{"improve": false}');
SET max_parallel_workers_per_gather = 2;
CREATE TEMP TABLE alloc_parallel AS
	SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM pmt WHERE g <> 1', 5, '{"improve": false}');
SELECT count(*) AS rows, count(DISTINCT s.medoid_id) AS medoids,
	   count(*) FILTER (WHERE s.medoid_id IS DISTINCT FROM p.medoid_id OR
							  s.distance IS DISTINCT FROM p.distance) AS differ
FROM alloc_serial s FULL JOIN alloc_parallel p USING (id);
DROP TABLE alloc_serial, alloc_parallel;

DROP TABLE pmt, pmt_sorted;
DROP FUNCTION pm_core(pmedian_model), workers_launched(text);
