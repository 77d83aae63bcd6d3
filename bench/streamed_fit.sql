-- One k-means fit in one GPU session, streamed past a GPU budget
-- (gpuclust.gpu_fit_memory_mb), and over every GPU (gpuclust.fit_gpus =
-- 'all'), on the same rows: 500,000 real[] rows of d = 64 around 100
-- centres, k = 100, random initial rows (a sharded fit seeds k-means++ on
-- the host), 20 iterations at most (tol 0).  Each fit's time in the
-- server, its phases, how it ran (gpus_used, resident_fraction,
-- streamed_bytes) and whether its model is the one-session model's
-- (centroids, sizes, inertia, iterations).  Run by bench/gpu-run streamed
-- on the GPU machine; a shard session holds about 1.7 kB a row of d = 64,
-- so the 200 MB budget streams most of the 0.8 GB of rows.
\set ON_ERROR_STOP 1
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpuclust;
SET gpuclust.device = gpu;
CREATE TEMP TABLE sf_rows AS
SELECT i AS id,
	   (SELECT array_agg(((hashint4(i % 100 * 64 + j) & 1023) / 10.0
						  + (hashint4(i * 64 + j) & 1023) / 20.0)::real ORDER BY j)
		FROM generate_series(1, 64) j) AS v
FROM generate_series(1, 500000) i;
CREATE TEMP TABLE sf_fits (name text, ms numeric, m kmeans_model);
CREATE FUNCTION pg_temp.sf_fit(name text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	model kmeans_model;
BEGIN
	SELECT kmeans_gpu(v, 100, '{"seed": 3, "max_iter": 20, "tol": 0, "init": "random"}') INTO model FROM sf_rows;
	INSERT INTO sf_fits VALUES (name, round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 1), model);
END $$;
\echo == warm-up: the CUDA context and the page-locked buffers of the session
SELECT pg_temp.sf_fit('warm-up');
\echo == one session, a 200 MB budget, every GPU, every GPU within 200 MB
SELECT pg_temp.sf_fit('one session');
SET gpuclust.gpu_fit_memory_mb = 200;
SELECT pg_temp.sf_fit('streamed, 200 MB');
RESET gpuclust.gpu_fit_memory_mb;
SET gpuclust.fit_gpus = 'all';
SELECT pg_temp.sf_fit('all GPUs');
SET gpuclust.gpu_fit_memory_mb = 200;
SELECT pg_temp.sf_fit('all GPUs, 200 MB');
RESET gpuclust.gpu_fit_memory_mb;
RESET gpuclust.fit_gpus;
SELECT f.name, f.ms, (f.m::jsonb->>'gpus_used')::int AS gpus,
	   round((f.m::jsonb->>'resident_fraction')::numeric, 3) AS resident,
	   round((f.m::jsonb->>'streamed_bytes')::numeric / 1e6, 1) AS streamed_mb_per_it,
	   f.m::jsonb->>'iterations' AS its, f.m::jsonb->>'precision' AS precision,
	   f.m::jsonb->'centroids' = o.m::jsonb->'centroids' AND f.m::jsonb->'sizes' = o.m::jsonb->'sizes'
	   AND f.m::jsonb->'inertia' = o.m::jsonb->'inertia'
	   AND f.m::jsonb->'iterations' = o.m::jsonb->'iterations' AS same_model
FROM sf_fits f, sf_fits o WHERE o.name = 'one session' AND f.name <> 'warm-up'
ORDER BY f.ms;
SELECT name, (SELECT string_agg(key || ' ' || round(value::numeric, 1), ', ' ORDER BY key)
			  FROM jsonb_each_text(m::jsonb->'timings_ms')) AS phases_ms
FROM sf_fits WHERE name <> 'warm-up' ORDER BY name;
