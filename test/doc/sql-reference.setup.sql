-- test/doc/sql-reference.setup.sql: the tables doc/sql-reference.md's
-- examples assume, for scripts/doc-test (its sql blocks run after this, in
-- the same session).  Deterministic data, no random().
CREATE EXTENSION gpuclust;

-- items: 2,000 embeddings of 8 dimensions around 16 centres, in 4 categories
CREATE TABLE items (id bigint PRIMARY KEY, category text, embedding real[]);
INSERT INTO items
SELECT i, 'c' || (i % 4),
       ARRAY(SELECT ((i % 16) * (j + 1) % 7) * 10 + sin(i * j + j)
             FROM generate_series(1, 8) j)::real[]
FROM generate_series(1, 2000) i;

-- points: 4-D points in two regions
CREATE TABLE points (id bigint PRIMARY KEY, region text, vec float8[]);
INSERT INTO points
SELECT i, CASE WHEN i % 2 = 0 THEN 'east' ELSE 'west' END,
       ARRAY[(i % 4) * 10 + sin(i), (i % 3) * 10 + cos(i), sin(2 * i), cos(3 * i)]
FROM generate_series(1, 1000) i;

-- event_buckets: one stream summary a minute, for the last five minutes
CREATE TABLE event_buckets (bucket timestamptz PRIMARY KEY, state kmeans_stream NOT NULL);
INSERT INTO event_buckets
SELECT date_trunc('minute', now()) - b * interval '1 minute',
       kmeans_stream_state(ARRAY[(i % 4) * 10 + sin(i + b), cos(i * b)], 4)
FROM generate_series(1, 5) b, generate_series(1, 500) i
GROUP BY b;
