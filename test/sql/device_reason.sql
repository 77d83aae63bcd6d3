--
-- device_reason: why a fit ran where it did.  The output is the same in
-- every build and on every machine: small work under auto always runs on
-- the CPU (without touching CUDA), and large work under auto gives one of
-- three reasons, which must agree with the device.
--
CREATE TABLE reason_pts AS
SELECT i AS id, ARRAY[i % 7, i % 11, i % 13, i % 17, i % 19, i % 23, i % 29, i % 31]::float8[] AS v
FROM generate_series(1, 5000) i;

-- gpuclust.device = cpu
SET gpuclust.device = cpu;
SELECT m::jsonb->>'device' AS device, m::jsonb->>'device_reason' AS reason
FROM (SELECT kmeans_gpu(v, 3) AS m FROM reason_pts) s;

-- auto, small work (1,000 x 3 x 8 = 24,000, below even the threshold of
-- a warm context, which the GPU service always has): the CPU
SET gpuclust.device = auto;
SELECT m::jsonb->>'device' AS device, m::jsonb->>'device_reason' AS reason
FROM (SELECT kmeans_gpu(v, 3) AS m FROM reason_pts WHERE id <= 1000) s;

-- auto, large work (5,000 x 50 x 8 x 100 restarts = 2e8), decided while
-- collecting: the GPU when one is usable; the reason agrees with the device
SELECT m::jsonb->>'device_reason' IN ('auto: large work', 'auto: no usable GPU',
									  'auto: built without CUDA') AS large_reason,
	   (m::jsonb->>'device' = 'gpu') = (m::jsonb->>'device_reason' = 'auto: large work') AS agrees
FROM (SELECT kmeans_gpu(v, 50, '{"n_init": 100, "max_iter": 2, "init": "random"}') AS m
	  FROM reason_pts) s;

-- the reason reads back in the text and binary forms
SELECT m::text::kmeans_model::text = m::text AS text_roundtrip,
	   kmeans_model_send(m::text::kmeans_model) = kmeans_model_send(m) AS binary_same
FROM (SELECT kmeans_gpu(v, 3) AS m FROM reason_pts) s;
SELECT ('{"k": 1, "d": 1, "device_reason": "auto: small work", "sizes": [1], "centroids": [[0]]}'::kmeans_model)::jsonb->>'device_reason' AS typed_in;
SELECT '{"k": 1, "d": 1, "device_reason": "because", "sizes": [1], "centroids": [[0]]}'::kmeans_model;

-- a model typed in without the field
SELECT ('{"k": 1, "d": 1, "sizes": [1], "centroids": [[0]]}'::kmeans_model)::jsonb->>'device_reason' AS unrecorded;

-- a summary's model (after a GPU fit, if any, the GPU's threshold is lower)
SELECT m::jsonb->>'device_reason' LIKE 'auto: %' AS auto_reason,
	   (m::jsonb->>'device' = 'gpu') = (m::jsonb->>'device_reason' = 'auto: large work') AS agrees
FROM (SELECT kmeans_stream_model(kmeans_stream_state(v, 3)) AS m FROM reason_pts) s;

-- p-median models record the reason and the path too, and read them back
SET gpuclust.device = cpu;
SELECT m::jsonb->>'device_reason' AS reason,
	   m::jsonb->>'path' = CASE WHEN (gpuclust_service_info()->>'running')::bool AND
									 current_setting('gpuclust.service_cpu_fits')::bool
							   THEN 'service' ELSE 'backend' END AS path_ok,
	   pmedian_model_send(m::text::pmedian_model) = pmedian_model_send(m) AS binary_same
FROM (SELECT pmedian_gpu(id, v, 3) AS m FROM reason_pts WHERE id <= 500) s;
SET gpuclust.device = auto;
SELECT m::jsonb->>'device' AS device, m::jsonb->>'device_reason' AS reason
FROM (SELECT pmedian_gpu(id, v, 3) AS m FROM reason_pts WHERE id <= 500) s;
SELECT m::jsonb->>'path' AS path, m::jsonb->>'device_reason' AS reason
FROM (SELECT '{"p": 1, "d": 1, "path": "service", "device_reason": "auto: small work", "medoid_ids": [1], "medoids": [[0]]}'::pmedian_model AS m) s;
SELECT m::jsonb->>'path' AS path, m::jsonb->>'device_reason' AS reason
FROM (SELECT '{"p": 1, "d": 1, "medoid_ids": [1], "medoids": [[0]]}'::pmedian_model AS m) s;
SELECT '{"p": 1, "d": 1, "path": "elsewhere", "medoid_ids": [1], "medoids": [[0]]}'::pmedian_model;
SELECT '{"p": 1, "d": 1, "device_reason": "because", "medoid_ids": [1], "medoids": [[0]]}'::pmedian_model;

RESET gpuclust.device;
DROP TABLE reason_pts;
