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

-- hard capacities whose repair lowers the objective: the allocation
-- before the repair (its penalties leave rows away from their nearest
-- medoid) costs more than the one after, where moving rows to fit brought
-- some back, and repair_cost (the objective after the repair less the
-- objective before it) is negative.  Such a fit once failed ("repair_cost
-- must be a finite number at least 0").  Sixty small instances (40 rows of
-- demand 1 to 8, p = 2 to 4, capacity 3% above the total demand's share):
-- every fit gives a model whose loads fit and that reads back, and some
-- repairs lowered the cost.
CREATE TABLE cap_hard AS
SELECT s, i AS id, ARRAY[(hashint4(i * 7 + s) & 1023)::float8, (hashint4(i * 13 + s * 5) & 1023)::float8] AS v,
	   (1 + (hashint4(i + s * 101) & 7))::float8 AS q
FROM generate_series(1, 20) s, generate_series(1, 40) i;
CREATE TABLE cap_hard_caps AS
SELECT s, p, ceil(sum(q) / p * 1.03) AS capacity FROM cap_hard, generate_series(2, 4) p GROUP BY s, p;
CREATE TABLE cap_hard_fits AS
SELECT t.s, t.p, t.capacity,
	   pmedian_gpu(c.id, c.v, c.q, t.p::int,
				   jsonb_build_object('capacity', t.capacity, 'capacity_mode', 'hard'))::jsonb AS m
FROM cap_hard c JOIN cap_hard_caps t USING (s)
GROUP BY t.s, t.p, t.capacity;
SELECT count(*) AS hard_fits,
	   count(*) FILTER (WHERE (m ->> 'violation')::float8 = 0) AS within_capacity,
	   count(*) FILTER (WHERE (m ->> 'repair_cost')::float8 < 0) > 0 AS some_repair_lowered_cost,
	   count(*) FILTER (WHERE (m::text::pmedian_model)::jsonb = m) AS read_back
FROM cap_hard_fits;
-- the loads of the hard allocation, through pmedian_gpu_assign, of the
-- instance whose repair lowered the cost most
SELECT s AS cap_s, p AS cap_p, capacity AS cap_q FROM cap_hard_fits
ORDER BY (m ->> 'repair_cost')::float8 LIMIT 1 \gset
SELECT max(load) <= :cap_q AS within_capacity, count(*) <= :cap_p AS at_most_p_medoids
FROM (SELECT a.medoid_id, sum(c.q) AS load
	  FROM pmedian_gpu_assign(format('SELECT id, v, q FROM cap_hard WHERE s = %s', :cap_s), :cap_p,
							  jsonb_build_object('capacity', :cap_q, 'capacity_mode', 'hard')) a
	  JOIN cap_hard c ON c.s = :cap_s AND c.id = a.id
	  GROUP BY a.medoid_id) l;
DROP TABLE cap_hard, cap_hard_caps, cap_hard_fits;
