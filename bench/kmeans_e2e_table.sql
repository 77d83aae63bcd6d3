-- The table of bench/kmeans_e2e.sql and bench/parallel_e2e.sql: 4,000,000
-- uniform rows of d = 8 (the Li/Zhao/Chu Table 1 workload), bench_t;
-- psql's variable rows makes it smaller (psql -v rows=1000000)
\if :{?rows}
\else
\set rows 4000000
\endif
CREATE EXTENSION IF NOT EXISTS gpuclust;
DROP TABLE IF EXISTS bench_t;
SELECT setseed(0.42);
CREATE TABLE bench_t AS
	SELECT i AS id,
		   ARRAY[random(), random(), random(), random(),
				 random(), random(), random(), random()]::float8[] AS v
	FROM generate_series(1, :rows) i;
