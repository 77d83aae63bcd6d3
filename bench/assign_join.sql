-- Labels joined back to their table, as users read them: kmeans_gpu_assign
-- joined on the table's primary key, once with the query given as a
-- constant (the planner then expects as many labels as the query has rows:
-- src/assign_estimate.c) and once with the same query given through a
-- scalar subquery, which the planner cannot read, so it expects the
-- declared 1,000 (what it expected of every call before the estimate).
-- Against the labels counted alone, in the same rounds.  The table is
-- bench/kmeans_e2e_table.sql's (4,000,000 rows of d = 8) in random id
-- order, with its primary key.
--   psql -v device=gpu [-v rows=N] [-v workers=8] [-v opts='{"max_iter":5}'] -f bench/assign_join.sql
\ir assign_settings.sql
\ir kmeans_e2e_table.sql
CREATE TABLE bench_join AS SELECT * FROM bench_t ORDER BY md5(id::text);
ALTER TABLE bench_join ADD PRIMARY KEY (id);
DROP TABLE bench_t;
ALTER TABLE bench_join SET (parallel_workers = :workers);
VACUUM ANALYZE bench_join;
SET max_parallel_workers_per_gather = :workers;
SET gpuclust.device = :device;
SET work_mem = '256MB';
\echo == the two plans
EXPLAIN (COSTS ON)
SELECT count(*), sum(a.cluster), sum((t.v[1] * 1e6)::bigint) FROM bench_join t
JOIN kmeans_gpu_assign('SELECT id, v FROM bench_join', 100, :'opts') a USING (id);
EXPLAIN (COSTS ON)
SELECT count(*), sum(a.cluster), sum((t.v[1] * 1e6)::bigint) FROM bench_join t
JOIN kmeans_gpu_assign((SELECT 'SELECT id, v FROM bench_join'), 100, :'opts') a USING (id);
\echo == warm-up
SELECT count(*) FROM kmeans_gpu_assign('SELECT id, v FROM bench_join', 100, :'opts');
CREATE TEMP TABLE join_rounds (round int, labels_ms numeric, estimated_ms numeric, declared_ms numeric);
\set round 1
\ir assign_join_round.sql
\set round 2
\ir assign_join_round.sql
\set round 3
\ir assign_join_round.sql
SELECT round, labels_ms, estimated_ms, declared_ms,
	   round(declared_ms / estimated_ms, 2) AS estimate_speedup
FROM join_rounds ORDER BY round;
\echo == medians
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY labels_ms)::numeric, 1) AS labels_ms,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY estimated_ms)::numeric, 1) AS estimated_ms,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY declared_ms)::numeric, 1) AS declared_ms,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY declared_ms / estimated_ms)::numeric, 2) AS estimate_speedup
FROM join_rounds;
DROP TABLE bench_join;
