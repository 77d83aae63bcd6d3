-- One round of bench/assign_e2e.sql: the model, the labels counted, the
-- labels into a table, the window form and the set-returning floor (as
-- many rows counted from generate_series), each timed in the server, into
-- assign_rounds (:round)
SELECT clock_timestamp() AS t0 \gset
SELECT kmeans_gpu(v, 100, :'opts') IS NOT NULL AS fitted FROM bench_t \gset
SELECT clock_timestamp() AS t1 \gset
SELECT count(*) AS labelled FROM kmeans_gpu_assign('SELECT id, v FROM bench_t', 100, :'opts') \gset
SELECT clock_timestamp() AS t2 \gset
CREATE TABLE assign_labels AS SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM bench_t', 100, :'opts');
SELECT clock_timestamp() AS t3 \gset
SELECT count(c) AS windowed FROM (SELECT kmeans_gpu_cluster(v, 100, :'opts') OVER () AS c FROM bench_t) s \gset
SELECT clock_timestamp() AS t4 \gset
SELECT count(*) AS floor_rows FROM generate_series(1::bigint, :labelled) \gset
SELECT clock_timestamp() AS t5 \gset
DROP TABLE assign_labels;
INSERT INTO assign_rounds VALUES (:round,
	round(1000 * extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t2'::timestamptz - :'t1'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t3'::timestamptz - :'t2'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t4'::timestamptz - :'t3'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t5'::timestamptz - :'t4'::timestamptz)::numeric, 1));
