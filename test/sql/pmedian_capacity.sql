--
-- pmedian_capacity: soft capacities through Lagrangean penalties.  Where a
-- feasible solution is easy the fit respects the capacity; where the
-- nearest allocation overloads a medoid, the penalties move entities.
--
CREATE TABLE cap_pts (id bigint, v float8[], q float8);
-- four blobs of 20 entities of demand 1 or 2 (30 each)
INSERT INTO cap_pts
SELECT b * 100 + i, ARRAY[b * 100 + (i % 4)::float8, (i / 4)::float8], 1 + i % 2
FROM generate_series(0, 3) b, generate_series(0, 19) i;

-- capacity 30 per medoid: the blobs themselves, no violation
SELECT (m::jsonb) -> 'capacity' AS capacity, (m::jsonb) -> 'violation' AS violation,
	   round(((m::jsonb) ->> 'objective')::numeric, 6) AS objective
FROM (SELECT pmedian_gpu(id, v, q, 4, '{"capacity": 30}') AS m FROM cap_pts) s;

-- two blobs, 30 and 10 entities, two medoids of capacity 22: the big blob
-- must give entities to the small one's medoid
CREATE TABLE cap_two (id bigint, v float8[], q float8);
INSERT INTO cap_two
SELECT i, ARRAY[(i % 6)::float8, (i / 6)::float8], 1 FROM generate_series(0, 29) i;
INSERT INTO cap_two
SELECT 100 + i, ARRAY[20 + (i % 5)::float8, (i / 5)::float8], 1 FROM generate_series(0, 9) i;

SELECT round(((m::jsonb) ->> 'violation')::numeric, 6) AS violation,
	   ((m::jsonb) ->> 'violation')::float8 < 8 AS below_nearest_overload,
	   (SELECT bool_and(x::float8 >= 0) FROM jsonb_array_elements_text((m::jsonb) -> 'penalties') x)
		   AS penalties_non_negative
FROM (SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 22, "max_iter": 200}') AS m FROM cap_two) s;

-- the same through pmedian_gpu_assign: loads per medoid
SELECT medoid_load <= 22 + 2 AS nearly_within_capacity, count(*) AS medoids
FROM (SELECT medoid_id, count(*) AS medoid_load
	  FROM pmedian_gpu_assign('SELECT id, v, q FROM cap_two', 2,
							  '{"capacity": 22, "max_iter": 200}')
	  GROUP BY medoid_id) s
GROUP BY 1;

-- without the capacity the big blob keeps its own entities
SELECT max(load) AS nearest_max_load
FROM (SELECT count(*) AS load FROM pmedian_gpu_assign('SELECT id, v FROM cap_two', 2)
	  GROUP BY medoid_id) s;

-- real[] vectors with demands, and zero demands are allowed
SELECT (m::jsonb) -> 'violation' AS violation
FROM (SELECT pmedian_gpu(id, v::real[], q - 1, 4, '{"capacity": 10}') AS m FROM cap_pts) s;
