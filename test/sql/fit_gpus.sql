--
-- fit_gpus: one k-means fit past its GPU budget streams its rows through
-- the GPU, and over several GPUs (gpuclust.fit_gpus) shards them, giving
-- the same model: centroids, sizes, inertia, iterations and labels.  The
-- model reports how it ran: gpus_used, resident_fraction, streamed_bytes
-- (per iteration).  On the CPU the settings change nothing and the model
-- says so (0 GPUs, every row resident, nothing streamed); under
-- gpuclust.device = gpu a budget of 1 MB streams these 20,000 rows for
-- real, and 'all' spans every GPU.  The checks are booleans over the
-- device, so the output is the same on both.

-- 12 blobs in 3-D, 20,000 rows
CREATE TABLE fg_pts AS
SELECT i AS id,
	   ARRAY[100 * (i % 4) + (hashint4(i) & 1023) / 1024.0,
			 100 * ((i / 4) % 3) + (hashint4(i + 7) & 1023) / 1024.0,
			 (hashint4(i + 13) & 1023) / 1024.0]::float8[] AS v
FROM generate_series(1, 20000) i;

-- what must not change: centroids, sizes, inertia and iterations
CREATE FUNCTION fg_core(m kmeans_model) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('centroids', m::jsonb->'centroids', 'sizes', m::jsonb->'sizes',
							  'inertia', m::jsonb->'inertia', 'iterations', m::jsonb->'iterations')
$$;

CREATE TABLE fg_models (budget text PRIMARY KEY, m kmeans_model);
CREATE TABLE fg_labels (budget text, id int, cluster int);

-- no bound of the fit's own: in one session
SET gpuclust.gpu_fit_memory_mb = 0;
INSERT INTO fg_models SELECT 'unset', kmeans_gpu(v, 12, '{"seed": 7}') FROM fg_pts;
INSERT INTO fg_labels
SELECT 'unset', id, kmeans_gpu_cluster(v, 12, '{"seed": 7}') OVER () FROM fg_pts;

-- 1 MB of rows per GPU: on the GPU, streamed
SET gpuclust.gpu_fit_memory_mb = 1;
INSERT INTO fg_models SELECT 'tiny', kmeans_gpu(v, 12, '{"seed": 7}') FROM fg_pts;
INSERT INTO fg_labels
SELECT 'tiny', id, kmeans_gpu_cluster(v, 12, '{"seed": 7}') OVER () FROM fg_pts;

-- every GPU, and every GPU streamed
SET gpuclust.gpu_fit_memory_mb = 0;
SET gpuclust.fit_gpus = 'all';
INSERT INTO fg_models SELECT 'all gpus', kmeans_gpu(v, 12, '{"seed": 7}') FROM fg_pts;
SET gpuclust.gpu_fit_memory_mb = 1;
INSERT INTO fg_models SELECT 'all gpus tiny', kmeans_gpu(v, 12, '{"seed": 7}') FROM fg_pts;
RESET gpuclust.fit_gpus;
RESET gpuclust.gpu_fit_memory_mb;

-- the same model whatever the budget and the GPUs
SELECT b.budget, fg_core(a.m) = fg_core(b.m) AS same_model,
	   a.m::jsonb->>'device' = b.m::jsonb->>'device' AS same_device
FROM fg_models a, fg_models b WHERE a.budget = 'unset' AND b.budget <> 'unset'
ORDER BY b.budget COLLATE "C";

-- the same labels
SELECT count(*) AS rows, count(*) FILTER (WHERE a.cluster <> b.cluster) AS labels_differ
FROM fg_labels a JOIN fg_labels b USING (id) WHERE a.budget = 'unset' AND b.budget = 'tiny';

-- what each reports: on the CPU no GPU, every row resident, nothing
-- streamed; on the GPU one GPU (or more with 'all') and, under the bound
-- of 1 MB, rows streamed each iteration
SELECT budget,
	   ((m::jsonb->>'gpus_used')::int = 0) = (m::jsonb->>'device' = 'cpu') AS gpus_used_ok,
	   CASE WHEN m::jsonb->>'device' = 'cpu' OR budget NOT LIKE '%tiny'
			THEN (m::jsonb->>'resident_fraction')::float8 = 1
				 AND (m::jsonb->>'streamed_bytes')::int8 = 0
				 AND ((m::jsonb->>'gpus_used')::int = 1 OR budget LIKE 'all%'
					  OR m::jsonb->>'device' = 'cpu')
			ELSE (m::jsonb->>'resident_fraction')::float8 < 1
				 AND (m::jsonb->>'streamed_bytes')::int8 > 0 END AS reported_ok,
	   (m::jsonb->>'resident_fraction')::float8 BETWEEN 0 AND 1 AS fraction_in_range
FROM fg_models ORDER BY budget COLLATE "C";

-- the setting checked when set: SQLSTATE 22023 with a hint
\set VERBOSITY default
SET gpuclust.fit_gpus = 'x';
SET gpuclust.fit_gpus = '0,0';
SET gpuclust.fit_gpus = '0,,1';
SET gpuclust.fit_gpus = '-1';
SET gpuclust.fit_gpus = '2000';
SET gpuclust.fit_gpus = 'all,0';
\echo :LAST_ERROR_SQLSTATE
-- (its range's message differs between PostgreSQL versions: the SQLSTATE alone)
\set VERBOSITY sqlstate
SET gpuclust.gpu_fit_memory_mb = -1;
\set VERBOSITY terse
SET gpuclust.fit_gpus = ' 0 , 1 ';
SHOW gpuclust.fit_gpus;
SET gpuclust.fit_gpus = 'ALL';
SET gpuclust.fit_gpus = '';
RESET gpuclust.fit_gpus;

-- a model written before these fields reads as its fit ran: on one GPU
-- or the CPU, every row resident, nothing streamed
SELECT (old::jsonb->>'gpus_used')::int = CASE m::jsonb->>'device' WHEN 'gpu' THEN 1 ELSE 0 END AS gpus_used_ok,
	   (old::jsonb->>'resident_fraction')::float8 = 1 AS resident_ok,
	   (old::jsonb->>'streamed_bytes')::int8 = 0 AS streamed_ok,
	   fg_core(old) = fg_core(m) AS same_model
FROM (SELECT m, (m::jsonb - 'gpus_used' - 'resident_fraction' - 'streamed_bytes')::text::kmeans_model AS old
	  FROM fg_models WHERE budget = 'unset') s;

-- a binary value of version 5 (without the 20 bytes of these fields,
-- before the 8 (k + k d) bytes of sizes and centroids) reads the same way
SELECT '/tmp/gpuclust_fit_gpus_' || pg_backend_pid() || '.bin' AS fg_file \gset
SELECT lo_from_bytea(0, '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
		|| '\x0001'::bytea || int4send(length(p)) || p || '\xffff'::bytea) AS fg_lo
FROM (SELECT '\x0005'::bytea || substring(s FROM 3 FOR length(s) - 2 - 20 - 384)
			 || substring(s FROM length(s) - 383) AS p
	  FROM (SELECT kmeans_model_send(m) AS s FROM fg_models WHERE budget = 'unset') x) y \gset
SELECT lo_export(:fg_lo, :'fg_file') AS exported;
SELECT lo_unlink(:fg_lo) AS unlinked;
CREATE TABLE fg_v5 (m kmeans_model);
COPY fg_v5 FROM :'fg_file' WITH (FORMAT binary);
\! rm -f /tmp/gpuclust_fit_gpus_*.bin
SELECT (v5.m::jsonb->>'gpus_used')::int = CASE m.m::jsonb->>'device' WHEN 'gpu' THEN 1 ELSE 0 END AS gpus_used_ok,
	   (v5.m::jsonb->>'resident_fraction')::float8 = 1 AS resident_ok,
	   (v5.m::jsonb->>'streamed_bytes')::int8 = 0 AS streamed_ok,
	   fg_core(v5.m) = fg_core(m.m) AS same_model
FROM fg_v5 v5, fg_models m WHERE m.budget = 'unset';

-- and the fields are checked: GPUs on the CPU, none on the GPU, a
-- fraction past 1, negative bytes
\set VERBOSITY default
SELECT (m::jsonb || '{"device": "cpu", "gpus_used": 2}')::text::kmeans_model FROM fg_models WHERE budget = 'unset';
SELECT (m::jsonb || '{"device": "gpu", "gpus_used": 0}')::text::kmeans_model FROM fg_models WHERE budget = 'unset';
SELECT (m::jsonb || '{"resident_fraction": 1.5}')::text::kmeans_model FROM fg_models WHERE budget = 'unset';
SELECT (m::jsonb || '{"streamed_bytes": -1}')::text::kmeans_model FROM fg_models WHERE budget = 'unset';
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse

DROP TABLE fg_pts, fg_models, fg_labels, fg_v5;
DROP FUNCTION fg_core(kmeans_model);
