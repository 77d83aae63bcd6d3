-- One round of bench/kmeans_e2e.sql: a bare serial scan of bench_t, then
-- kmeans_gpu over it, each timed in the server, into e2e_rounds (:round)
-- with the model's own phase timings (read through the model's jsonb
-- cast, 100 centroids of d = 8, which the fit's time includes)
SELECT clock_timestamp() AS t0 \gset
SELECT sum(cardinality(v)) AS scanned FROM bench_t \gset
SELECT clock_timestamp() AS t1 \gset
SELECT (m::jsonb)->'timings_ms' AS timings FROM (SELECT kmeans_gpu(v, 100) m FROM bench_t) s \gset
SELECT clock_timestamp() AS t2 \gset
INSERT INTO e2e_rounds VALUES (:round,
	round(1000 * extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz)::numeric, 1),
	round(1000 * extract(epoch FROM :'t2'::timestamptz - :'t1'::timestamptz)::numeric, 1),
	:'timings'::jsonb);
