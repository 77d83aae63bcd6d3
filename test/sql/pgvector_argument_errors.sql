--
-- pgvector_argument_errors: pgvector's types given to the fits without
-- gpuclust_pgvector name the extension (42883, with a hint), whatever the
-- type of k; with it, they resolve to its forms.
--
CREATE EXTENSION vector;
CREATE TABLE pae (id bigint, v vector(2), h halfvec(2));
INSERT INTO pae SELECT i, ARRAY[i, i % 3]::vector, ARRAY[i, i % 3]::halfvec FROM generate_series(1, 10) i;
SELECT kmeans_gpu(v, 2::bigint) FROM pae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu(h, 2::bigint, '{}') FROM pae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu_cluster(v, 2::bigint) OVER () FROM pae;
\echo :LAST_ERROR_SQLSTATE
SELECT pmedian_gpu(id, v, 2::bigint) FROM pae;
\echo :LAST_ERROR_SQLSTATE
-- an int k reaches the real[] form through pgvector's cast, as before
SELECT kmeans_model_info(kmeans_gpu(v, 2))->>'input' AS input FROM pae;

CREATE EXTENSION gpuclust_pgvector;
SELECT kmeans_model_info(kmeans_gpu(v, 2::bigint))->>'input' AS input,
	   kmeans_model_info(kmeans_gpu(h, 2::smallint, '{}'))->>'input' AS half_input
FROM pae;
-- with the extension, a float k is the slip named
SELECT kmeans_gpu(v, 2.0) FROM pae;
\echo :LAST_ERROR_SQLSTATE
SELECT kmeans_gpu('[1,2]', 2) FROM pae;
\echo :LAST_ERROR_SQLSTATE

DROP TABLE pae;
DROP EXTENSION gpuclust_pgvector;
DROP EXTENSION vector;
