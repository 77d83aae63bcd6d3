-- One round of bench/assign_join.sql: the labels counted, the labels joined
-- back with the planner's estimate, and the same join planned for the
-- declared 1,000 labels, each timed in the server, into join_rounds (:round)
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS labelled FROM kmeans_gpu_assign('SELECT id, v FROM bench_join', 100, :'opts') \gset
SELECT clock_timestamp() AS t1 \gset
SELECT count(*) AS joined, sum(a.cluster) AS estimated_sum, sum((t.v[1] * 1e6)::bigint) AS estimated_v FROM bench_join t
JOIN kmeans_gpu_assign('SELECT id, v FROM bench_join', 100, :'opts') a USING (id) \gset
SELECT clock_timestamp() AS t2 \gset
SELECT count(*) AS joined_declared, sum(a.cluster) AS declared_sum, sum((t.v[1] * 1e6)::bigint) AS declared_v FROM bench_join t
JOIN kmeans_gpu_assign((SELECT 'SELECT id, v FROM bench_join'), 100, :'opts') a USING (id) \gset
SELECT clock_timestamp() AS t3 \gset
SELECT :labelled = :joined AND :joined = :joined_declared AND :estimated_sum = :declared_sum AND :estimated_v = :declared_v AS same_labels \gset
\if :same_labels
\else
\echo the two joins returned different labels
SELECT 1 / 0;
\endif
INSERT INTO join_rounds VALUES (:round,
	round(1000 * extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t2'::timestamptz - :'t1'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t3'::timestamptz - :'t2'::timestamptz)::numeric, 1));
