-- The query text of kmeans_gpu_assign and pmedian_gpu_assign as the
-- planner's row estimate sees it (src/assign_estimate.c): only a plain
-- SELECT the caller may read is planned for its estimate; anything else
-- keeps the declared 1,000 rows and meets its error when the function
-- runs.  Utility statements, SELECT INTO, writes, data-modifying WITH and
-- row locks once crashed the backend (a utility statement's plan has no
-- plan tree) or, for a role without SELECT, told it the row count of a
-- table it may not read.
CREATE TABLE aqt_pts AS
	SELECT g AS id, ARRAY[(g % 10)::float8, (g / 10)::float8] AS v
	FROM generate_series(1, 300) g;
ANALYZE aqt_pts;
CREATE FUNCTION aqt_plan_rows(statement text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || statement INTO plan;
	RETURN plan->0->'Plan'->>'Plan Rows';
END $$;
CREATE TABLE aqt_texts (name text, query text);
INSERT INTO aqt_texts VALUES
	('select', 'SELECT id, v FROM aqt_pts'),
	('table', 'TABLE aqt_pts'),
	('select into', 'SELECT id, v INTO aqt_copy FROM aqt_pts'),
	('select 1 into', 'SELECT 1 INTO x'),
	('create table as', 'CREATE TABLE aqt_copy AS SELECT id, v FROM aqt_pts'),
	('insert returning', 'INSERT INTO aqt_pts SELECT id + 1000, v FROM aqt_pts RETURNING id, v'),
	('update returning', 'UPDATE aqt_pts SET v = v RETURNING id, v'),
	('delete returning', 'DELETE FROM aqt_pts RETURNING id, v'),
	('modifying with', 'WITH d AS (DELETE FROM aqt_pts RETURNING id, v) SELECT id, v FROM d'),
	('reading with', 'WITH r AS (SELECT id, v FROM aqt_pts) SELECT id, v FROM r'),
	('for update', 'SELECT id, v FROM aqt_pts FOR UPDATE'),
	('for share', 'SELECT id, v FROM aqt_pts FOR KEY SHARE'),
	('explain', 'EXPLAIN SELECT id, v FROM aqt_pts'),
	('show', 'SHOW work_mem'),
	('vacuum', 'VACUUM aqt_pts'),
	('two statements', 'SELECT id, v FROM aqt_pts; SELECT id, v FROM aqt_pts');

-- every text, through both functions: the estimate, then a run
SELECT name,
	   aqt_plan_rows(format('SELECT * FROM kmeans_gpu_assign(%L, 2)', query)) AS kmeans,
	   aqt_plan_rows(format('SELECT * FROM pmedian_gpu_assign(%L, 2)', query)) AS pmedian
FROM aqt_texts ORDER BY name;
CREATE FUNCTION aqt_run(fn text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %s(%L, 2, ''{"seed": 1}'')', fn, query) INTO n;
	RETURN n || ' rows';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT name, aqt_run('kmeans_gpu_assign', query) AS kmeans,
	   aqt_run('pmedian_gpu_assign', query) AS pmedian
FROM aqt_texts ORDER BY name;
-- nothing was written or created, and no lock is left
SELECT count(*) AS rows, to_regclass('aqt_copy') AS copy, to_regclass('x') AS x FROM aqt_pts;
SELECT count(*) AS locks FROM pg_locks
WHERE relation = 'aqt_pts'::regclass AND pid = pg_backend_pid();

-- a plain EXPLAIN of the texts that crashed, and of the one that plans
EXPLAIN SELECT * FROM kmeans_gpu_assign('SELECT 1 INTO x', 1);
EXPLAIN SELECT * FROM pmedian_gpu_assign('SELECT 1 INTO x', 1);
EXPLAIN SELECT * FROM kmeans_gpu_assign('CREATE TABLE x AS SELECT 1', 1);
EXPLAIN SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_pts', 1);
SELECT * FROM kmeans_gpu_assign('SELECT 1 INTO x', 1);
SELECT * FROM pmedian_gpu_assign('SELECT 1 INTO x', 1);

-- a role that may not read the table gets the declared estimate, not the
-- table's row count, and its run is refused; a column it may not read, or
-- a table with row-level security, is not estimated either; a view it may
-- read is, as the view's owner reads the table
CREATE ROLE regress_aqt_reader;
CREATE VIEW aqt_view AS SELECT id, v FROM aqt_pts WHERE id <= 100;
GRANT SELECT ON aqt_view TO regress_aqt_reader;
GRANT SELECT (id) ON aqt_pts TO regress_aqt_reader;
CREATE TABLE aqt_secure AS SELECT * FROM aqt_pts;
ALTER TABLE aqt_secure ENABLE ROW LEVEL SECURITY;
CREATE POLICY aqt_few ON aqt_secure TO regress_aqt_reader USING (id <= 10);
GRANT SELECT ON aqt_secure TO regress_aqt_reader;
ANALYZE aqt_secure;
GRANT EXECUTE ON FUNCTION aqt_plan_rows(text), aqt_run(text, text) TO regress_aqt_reader;
SET ROLE regress_aqt_reader;
SELECT aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_pts', 2)$$) AS kmeans,
	   aqt_plan_rows($$SELECT * FROM pmedian_gpu_assign('SELECT id, v FROM aqt_pts', 2)$$) AS pmedian,
	   aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_pts WHERE id < 50', 2)$$) AS filtered,
	   aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, id FROM aqt_pts', 2)$$) AS granted_column,
	   aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, (SELECT v FROM aqt_pts LIMIT 1) FROM aqt_view', 2)$$) AS sublink,
	   aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_view', 2)$$) AS view,
	   aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_secure', 2)$$) AS row_security;
EXPLAIN SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_pts', 2);
SELECT aqt_run('kmeans_gpu_assign', 'SELECT id, v FROM aqt_pts') AS kmeans,
	   aqt_run('pmedian_gpu_assign', 'SELECT id, v FROM aqt_pts') AS pmedian,
	   aqt_run('kmeans_gpu_assign', 'SELECT id, v FROM aqt_view') AS view,
	   aqt_run('kmeans_gpu_assign', 'SELECT id, v FROM aqt_secure') AS row_security;
RESET ROLE;
-- the owner, who bypasses the policy, is not given the estimate either
SELECT aqt_plan_rows($$SELECT * FROM kmeans_gpu_assign('SELECT id, v FROM aqt_secure', 2)$$) AS row_security;

DROP OWNED BY regress_aqt_reader;
DROP ROLE regress_aqt_reader;
DROP VIEW aqt_view;
DROP TABLE aqt_pts, aqt_secure, aqt_texts;
DROP FUNCTION aqt_plan_rows(text), aqt_run(text, text);
