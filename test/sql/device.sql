--
-- device: gpuclust.device = gpu insists on the GPU
--
-- The output depends on the build and the machine, one expected file each:
--   device.out    built without CUDA: "built without GPU support" (0A000)
--   device_1.out  built with CUDA, no usable GPU: "no usable GPU" (55000);
--                 the detail says why and varies, so errors are terse here
--   device_2.out  a usable GPU: the fits succeed on it
\set VERBOSITY terse

-- four tight blobs of 50 points in 3-D, 100 apart
CREATE TABLE device_pts AS
SELECT b * 50 + i AS id, b,
	   ARRAY[100 * (b % 2) + (hashint4(b * 1000 + i) & 255) / 256.0,
			 100 * (b / 2) + (hashint4(b * 1000 + i + 500) & 255) / 256.0,
			 (hashint4(b * 1000 + i + 900) & 255) / 256.0]::float8[] AS v
FROM generate_series(0, 3) b, generate_series(1, 50) i;

SET gpuclust.device = gpu;

-- the aggregate: on the GPU, recovering the blobs exactly
SELECT m::jsonb->>'device' AS device,
	   m::jsonb->'sizes' = '[50, 50, 50, 50]' AS sizes_ok,
	   (SELECT count(DISTINCT b) = 4 AND count(DISTINCT (b, kmeans_predict(m, v))) = 4
		FROM device_pts) AS blobs_recovered
FROM (SELECT kmeans_gpu(v, 4, '{"seed": 1}') AS m FROM device_pts) s;
\echo :LAST_ERROR_SQLSTATE

-- the window function
SELECT count(DISTINCT cluster) AS labels, count(DISTINCT (b, cluster)) AS pairs
FROM (SELECT b, kmeans_gpu_cluster(v, 4, '{"seed": 1}') OVER () AS cluster FROM device_pts) s;
\echo :LAST_ERROR_SQLSTATE

-- the assignment function
SELECT count(*) AS rows, count(DISTINCT a.cluster) AS labels, count(DISTINCT (p.b, a.cluster)) AS pairs,
	   max(a.distance) < 1 AS near
FROM kmeans_gpu_assign('SELECT id, v FROM device_pts', 4, '{"seed": 1}') a JOIN device_pts p USING (id);
\echo :LAST_ERROR_SQLSTATE

-- the same on the CPU, whatever the build
SET gpuclust.device = cpu;
SELECT m::jsonb->>'device' AS device, m::jsonb->'sizes' = '[50, 50, 50, 50]' AS sizes_ok
FROM (SELECT kmeans_gpu(v, 4, '{"seed": 1}') AS m FROM device_pts) s;

RESET gpuclust.device;
DROP TABLE device_pts;
