-- stream_partial: a kmeans_stream state leaving its aggregate carries its
-- pending block as weighted centres.  32 shards of 6,250 rows in 8-D, each
-- summarised as Citus's worker_partial_agg does (the transition state with
-- no final function, read through the output or send function), ship at
-- most a tenth of their raw rows' bytes, and the model of their merge has
-- an SSQ within 1% of kmeans_gpu's; the same for a parallel plan's worker
-- states.  Output is the same on the CPU and the GPU paths: sizes and
-- quality are printed as booleans.
SET extra_float_digits = 0;

-- 8 Gaussian blobs 10 apart in 8-D, unit noise; row i lies in shard i % 32
SELECT setseed(0.25);
CREATE TABLE shard_rows AS
SELECT i, i % 32 AS shard,
	   ARRAY(SELECT ((i * 7 + j * 3) % 8) * 10
					+ sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
			 FROM generate_series(1, 8) j)::float8[] AS v
FROM generate_series(0, 199999) i;

-- the reference: kmeans_gpu over every row, and the SSQ of a model over
-- every row relative to it
CREATE TABLE shard_ref AS
SELECT sum(kmeans_distance(m, v) ^ 2) AS ssq
FROM (SELECT kmeans_gpu(v, 8, '{"n_init": 4}') AS m FROM shard_rows) g, shard_rows;
CREATE FUNCTION shard_ssq_ratio(m kmeans_model) RETURNS float8 LANGUAGE sql AS
$$ SELECT sum(kmeans_distance(m, v) ^ 2) / (SELECT ssq FROM shard_ref) FROM shard_rows $$;

-- a shard's partial state: the transition state, no final function
CREATE AGGREGATE shard_partial(float8[], int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream);
CREATE TABLE shard_text AS
SELECT shard, shard_partial(v, 8)::text AS s FROM shard_rows GROUP BY shard;

-- raw rows: 200,000 x 8 float8 = 12,800,000 bytes; 80 centres per shard
SELECT count(*) AS shards,
	   sum((kmeans_stream_info(s::kmeans_stream)->>'rows')::int) AS rows,
	   sum(octet_length(s)) <= 0.1 * 200000 * 8 * 8 AS text_within_a_tenth,
	   bool_and((kmeans_stream_info(s::kmeans_stream)->'level_points'->>0)::int = 0) AS no_raw_rows,
	   bool_and((kmeans_stream_info(s::kmeans_stream)->>'points')::int <= 80) AS at_most_80_points
FROM shard_text;
-- the send function ships the same bytes, and a second summary of the same
-- rows in the same order gives them again
SELECT octet_length(b) <= 0.1 * 6250 * 8 * 8 AS binary_within_a_tenth,
	   b = (SELECT decode(s, 'base64') FROM shard_text WHERE shard = 0) AS binary_is_text_bytes
FROM (SELECT kmeans_stream_send(shard_partial(v, 8)) AS b FROM shard_rows WHERE shard = 0) q;

-- the coordinator's merge, in either order
SELECT shard_ssq_ratio(kmeans_stream_model(kmeans_stream_merge(s::kmeans_stream ORDER BY shard)))
		   BETWEEN 0.99 AND 1.01 AS merged_within_1pct,
	   shard_ssq_ratio(kmeans_stream_model(kmeans_stream_merge(s::kmeans_stream ORDER BY shard DESC)))
		   BETWEEN 0.99 AND 1.01 AS reversed_within_1pct
FROM shard_text;

-- a block of no more rows than the 80 centres a reduction keeps goes as rows
SELECT n, kmeans_stream_info(s)->'level_points' AS level_points,
	   (kmeans_stream_info(s)->>'rows')::int AS rows
FROM (SELECT n, (SELECT shard_partial(v, 8)::text::kmeans_stream FROM shard_rows WHERE i < n) AS s
	  FROM (VALUES (50), (80), (81)) t(n)) q
ORDER BY n;

-- a stored flat value that still holds a raw block is compacted on output:
-- d = 2, k = m = 1, blocks of 4, three raw rows (1, 2), (3, 4), (8, 0)
CREATE FUNCTION le(b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS
$$ SELECT string_agg(substr(b, i, 1), ''::bytea ORDER BY i DESC) FROM generate_series(1, length(b)) i $$;
CREATE FUNCTION stream_reseal(b bytea) RETURNS bytea LANGUAGE plpgsql AS $$
DECLARE
	h numeric := 14695981039346656037;
	n int := length(b);
	lo int;
BEGIN
	FOR i IN 0 .. n - 9 LOOP
		lo := (h % 256)::int;
		h := h - lo + (lo # get_byte(b, i));
		h := (h * 1099511628211) % 18446744073709551616;
	END LOOP;
	FOR i IN 0 .. 7 LOOP
		b := set_byte(b, n - 8 + i, (div(h, 256::numeric ^ i) % 256)::int);
	END LOOP;
	RETURN b;
END $$;
CREATE TABLE stored_raw AS
SELECT encode(stream_reseal('\x47434b53'::bytea || le(int2send(1::int2)) || le(int2send(0::int2))
		|| le(int4send(2)) || le(int4send(1)) || le(int4send(1)) || le(int4send(4))
		|| le(int4send(1)) || le(int4send(0)) || le(int8send(3)) || le(int8send(0))
		|| le(int8send(3))
		|| le(float8send(1)) || le(float8send(1)) || le(float8send(1))
		|| le(float8send(1)) || le(float8send(2)) || le(float8send(3)) || le(float8send(4))
		|| le(float8send(8)) || le(float8send(0))
		|| '\x0000000000000000'::bytea), 'base64')::kmeans_stream AS s;
SELECT kmeans_stream_info(s)->'level_points' AS stored,
	   kmeans_stream_info(s::text::kmeans_stream)->'level_points' AS written,
	   (kmeans_stream_info(s::text::kmeans_stream)->>'rows')::int AS rows,
	   octet_length(kmeans_stream_send(s)) AS sent_bytes,
	   octet_length(decode(s::text, 'base64')) AS text_bytes
FROM stored_raw;
SELECT c.centroid, c.size
FROM stored_raw, kmeans_centroids(kmeans_stream_model(s::text::kmeans_stream)) c;

-- a parallel plan: the workers' states cross to the leader compacted
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT kmeans_stream_state(v, 8) FROM shard_rows;
SELECT (kmeans_stream_info(s)->>'rows')::int AS rows,
	   (kmeans_stream_info(s)->'level_points'->>0)::int AS raw_rows_left,
	   shard_ssq_ratio(kmeans_stream_model(s)) BETWEEN 0.99 AND 1.01 AS parallel_within_1pct
FROM (SELECT kmeans_stream_state(v, 8) AS s FROM shard_rows) q;
RESET parallel_leader_participation;

-- four workers and the leader against a serial plan: the summaries differ
-- (each process summarises the blocks it read), but they stand for the
-- same rows and their models find the same clusters: every row's label
-- under one model determines its label under the other, and both use all
-- 8 clusters (labels of every 7th row, which lie in all 8 blobs)
CREATE FUNCTION stream_workers_launched(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) ' || q INTO plan;
	RETURN (plan->0->'Plan'->'Plans'->0->>'Workers Launched')::int;
END $$;
SET max_parallel_workers_per_gather = 4;
SELECT stream_workers_launched('SELECT kmeans_stream_state(v, 8) FROM shard_rows') > 0 AS parallel_ran;
CREATE TABLE stream_models AS
SELECT kmeans_stream_model(kmeans_stream_state(v, 8)) AS parallel_model FROM shard_rows;
SET max_parallel_workers_per_gather = 0;
ALTER TABLE stream_models ADD COLUMN serial_model kmeans_model;
UPDATE stream_models SET serial_model = (SELECT kmeans_stream_model(kmeans_stream_state(v, 8)) FROM shard_rows);
SELECT (parallel_model::text::jsonb->>'rows')::int AS parallel_rows,
	   (serial_model::text::jsonb->>'rows')::int AS serial_rows,
	   count(DISTINCT kmeans_predict(serial_model, v)) AS serial_clusters,
	   count(DISTINCT kmeans_predict(parallel_model, v)) AS parallel_clusters,
	   count(DISTINCT (kmeans_predict(serial_model, v), kmeans_predict(parallel_model, v)))
		   AS label_pairs
FROM stream_models, shard_rows
WHERE i % 7 = 0
GROUP BY parallel_model::text, serial_model::text;
DROP TABLE stream_models;
DROP FUNCTION stream_workers_launched(text);
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

DROP TABLE shard_rows, shard_ref, shard_text, stored_raw;
DROP AGGREGATE shard_partial(float8[], int);
DROP FUNCTION shard_ssq_ratio(kmeans_model), le(bytea), stream_reseal(bytea);
