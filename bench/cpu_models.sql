-- cpu_models.sql: CPU k-means and p-median fits whose models, labels and
-- predictions scripts/cpu-models-compare compares byte for byte between
-- two builds.  Each line is one fit's fields that every build since the
-- CPU round records (centroids with every digit, sizes, inertia,
-- iterations, init; medoids, objective), so builds that add fields still
-- compare.  Shapes cover the CPU paths: small and wide d, k from 2 to
-- 300, k-means++ (greedy), k-means||, random, given centroids, n_init,
-- cosine, weighted duplicates, float4 and float8, a skewed column (KDD-
-- like: a few huge values), assignments and predictions.
\set ON_ERROR_STOP on
SET gpuclust.device = cpu;
SET extra_float_digits = 3;
SELECT setseed(0.25);
CREATE TEMP TABLE blobs AS
  SELECT i, (SELECT array_agg((i % 17) * 0.3 + sin(i * 7.1 + j * 1.3) * 0.2)
             FROM generate_series(1, 24) j WHERE i > 0)::float8[] AS v
  FROM generate_series(1, 20000) i;
CREATE TEMP TABLE wide AS
  SELECT i, (SELECT array_agg((i % 9) + cos(i * 3.7 + j * 0.11))
             FROM generate_series(1, 300) j WHERE i > 0)::float4[] AS v
  FROM generate_series(1, 3000) i;
CREATE TEMP TABLE skewed AS
  SELECT i, ARRAY[CASE WHEN i % 97 = 0 THEN 7e8 * (i % 5) ELSE (i % 13) END,
                  (i * 31) % 101, sin(i)]::float8[] AS v
  FROM generate_series(1, 30000) i;
CREATE TEMP TABLE dup AS SELECT i, ARRAY[(i % 6)::float8, (i % 4)::float8] AS v
  FROM generate_series(1, 5000) i;

CREATE FUNCTION core(m kmeans_model) RETURNS text LANGUAGE sql AS $$
  SELECT jsonb_build_object('centroids', j->'centroids', 'sizes', j->'sizes',
         'inertia', j->'inertia', 'iterations', j->'iterations', 'init', j->'init')::text
  FROM (SELECT m::jsonb AS j) s $$;

SELECT 'blobs k=10' AS fit, md5(core(kmeans_gpu(v, 10, '{"seed": 3}'))) FROM blobs;
SELECT 'blobs k=300' AS fit, md5(core(kmeans_gpu(v, 300, '{"seed": 4}'))) FROM blobs;
SELECT 'blobs kmeans||' AS fit, md5(core(kmeans_gpu(v, 50, '{"seed": 5, "init": "kmeans||"}'))) FROM blobs;
SELECT 'blobs random n_init 3' AS fit, md5(core(kmeans_gpu(v, 20, '{"seed": 6, "init": "random", "n_init": 3}'))) FROM blobs;
SELECT 'blobs cosine' AS fit, md5(core(kmeans_gpu(v, 12, '{"seed": 7, "metric": "cosine"}'))) FROM blobs;
SELECT 'wide k=25' AS fit, md5(core(kmeans_gpu(v, 25, '{"seed": 8}'))) FROM wide;
SELECT 'wide cosine' AS fit, md5(core(kmeans_gpu(v, 9, '{"seed": 9, "metric": "cosine"}'))) FROM wide;
SELECT 'skewed k=40' AS fit, md5(core(kmeans_gpu(v, 40, '{"seed": 10}'))) FROM skewed;
SELECT 'dup k=24' AS fit, md5(core(kmeans_gpu(v, 24, '{"seed": 11}'))) FROM dup;
SELECT 'dup k=2' AS fit, md5(core(kmeans_gpu(v, 2, '{"seed": 12}'))) FROM dup;

CREATE TEMP TABLE models AS
  SELECT kmeans_gpu(v, 16, '{"seed": 13}') AS m FROM blobs;
SELECT 'blobs labels' AS fit, md5(string_agg(a.cluster::text || ':' || a.distance::text, ',' ORDER BY a.id))
  FROM kmeans_gpu_assign('SELECT i, v FROM blobs', 16, '{"seed": 13}') a;
SELECT 'blobs predictions' AS fit, md5(string_agg(kmeans_predict(m, v)::text, ',' ORDER BY i))
  FROM models, blobs;

SELECT 'blobs pmedian p=8' AS fit,
       md5((SELECT jsonb_build_object('medoid_ids', j->'medoid_ids', 'objective', j->'objective')::text
            FROM (SELECT pmedian_gpu(i, v, 8)::jsonb AS j FROM blobs WHERE i <= 4000) s));
SELECT 'skewed pmedian p=5' AS fit,
       md5((SELECT jsonb_build_object('medoid_ids', j->'medoid_ids', 'objective', j->'objective')::text
            FROM (SELECT pmedian_gpu(i, v, 5)::jsonb AS j FROM skewed WHERE i <= 3000) s));
