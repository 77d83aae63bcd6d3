--
-- pmedian_defaults: results to trust with default options.  The swap
-- improvement runs by default where its cost is moderate, so that every
-- well-separated group gets a medoid; capacity_mode hard keeps every load
-- within the capacity, reports the repair's cost, a shortfall that whole
-- rows cannot avoid, and an error when the total capacity is too small.
-- Nothing printed depends on the device.
--
-- eight square blobs of unequal sizes, far apart; blob = id / 1000
CREATE TABLE dflt_blobs (id bigint, v float8[]);
INSERT INTO dflt_blobs
SELECT b * 1000 + i,
	   ARRAY[1000 * (b % 4) + (i * 7919 % 97)::float8, 1000 * (b / 4) + (i * 104729 % 89)::float8]
FROM generate_series(0, 7) b, generate_series(0, 99 + 60 * b) i;

-- default options: the improvement over all rows, one medoid per blob
SELECT (m::jsonb) ->> 'improve' AS improve, (m::jsonb) ->> 'method' AS method,
	   (SELECT count(DISTINCT x::bigint / 1000) FROM jsonb_array_elements_text((m::jsonb) -> 'medoid_ids') x)
		   AS blobs_with_a_medoid
FROM (SELECT pmedian_gpu(id, v, 8) AS m FROM dflt_blobs) s;

-- the same through pmedian_gpu_assign: every row's medoid is in its blob
SELECT count(*) FILTER (WHERE id / 1000 <> medoid_id / 1000) AS rows_outside_their_blob,
	   count(DISTINCT medoid_id) AS medoids
FROM pmedian_gpu_assign('SELECT id, v FROM dflt_blobs', 8);

-- "improve": false is location-allocation alone, "auto" the default
SELECT (a::jsonb) ->> 'improve' AS off, (a::jsonb) -> 'swaps' AS swaps_off,
	   (b::jsonb) ->> 'improve' AS auto,
	   (b::jsonb) -> 'objective' = (c::jsonb) -> 'objective' AS auto_is_default
FROM (SELECT pmedian_gpu(id, v, 8, '{"improve": false}') AS a,
			 pmedian_gpu(id, v, 8, '{"improve": "auto"}') AS b,
			 pmedian_gpu(id, v, 8) AS c FROM dflt_blobs) s;

-- capacitated problems keep the Lagrangean phase alone
SELECT (m::jsonb) ->> 'improve' AS improve, (m::jsonb) ->> 'capacity_mode' AS capacity_mode
FROM (SELECT pmedian_gpu(id, v, 1, 8, '{"capacity": 300}') AS m FROM dflt_blobs) s;

-- hard capacities: three groups of 30, 20 and 10 rows, demands 1 to 3
-- (122 in all), three medoids of capacity 42
CREATE TABLE dflt_cap (id bigint, v float8[], q float8);
INSERT INTO dflt_cap
SELECT g * 100 + i, ARRAY[g * 50 + (i % 5)::float8, (i / 5)::float8], 1 + (i * 7 + g) % 3
FROM generate_series(0, 2) g, generate_series(0, 29 - 10 * g) i;

CREATE VIEW dflt_cap_fits AS
SELECT mode, m::jsonb AS m
FROM unnest(ARRAY['soft', 'hard']) mode,
	 LATERAL (SELECT pmedian_gpu(id, v, q, 3,
								 jsonb_build_object('capacity', 42, 'capacity_mode', mode,
													'method', 'three_phase')) AS m
			  FROM dflt_cap) s;

SELECT sum(q) AS total_demand FROM dflt_cap;
SELECT mode, m ->> 'capacity_mode' AS capacity_mode, m -> 'capacity' AS capacity,
	   (m ->> 'violation')::float8 > 0 AS over_capacity,
	   (m ->> 'repair_cost')::float8 > 0 AS repaired
FROM dflt_cap_fits ORDER BY mode;

-- the repair keeps the medoids and adds repair_cost to the soft objective
SELECT h.m -> 'medoid_ids' = s.m -> 'medoid_ids' AS same_medoids,
	   abs((h.m ->> 'objective')::float8 - (h.m ->> 'repair_cost')::float8
		   - (s.m ->> 'objective')::float8) < 1e-9 AS cost_is_the_difference
FROM dflt_cap_fits h, dflt_cap_fits s WHERE h.mode = 'hard' AND s.mode = 'soft';

-- every load within the capacity, through pmedian_gpu_assign
SELECT max(load) <= 42 AS within_capacity, count(*) AS medoids
FROM (SELECT a.medoid_id, sum(c.q) AS load
	  FROM pmedian_gpu_assign('SELECT id, v, q FROM dflt_cap', 3,
							  '{"capacity": 42, "capacity_mode": "hard"}') a
	  JOIN dflt_cap c USING (id)
	  GROUP BY a.medoid_id) s;

-- the text form keeps the new fields
SELECT (m::text::pmedian_model)::text = m::text AS round_trip
FROM (SELECT pmedian_gpu(id, v, q, 3, '{"capacity": 42, "capacity_mode": "hard"}') AS m
	  FROM dflt_cap) s;

-- whole rows: three rows of demand 2, two medoids of capacity 3 (total 6):
-- one medoid must hold two rows, a shortfall of 1 reported as violation
CREATE TABLE dflt_pack (id bigint, v float8[], q float8);
INSERT INTO dflt_pack VALUES (1, '{0,0}', 2), (2, '{1,0}', 2), (3, '{10,0}', 2);
SELECT (m::jsonb) -> 'violation' AS shortfall, (m::jsonb) ->> 'capacity_mode' AS capacity_mode
FROM (SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 3, "capacity_mode": "hard"}') AS m
	  FROM dflt_pack) s;

-- errors: a total capacity below the total demand, a mode without a
-- capacity, an unknown mode, an improvement that is not a boolean or auto
SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 2.5, "capacity_mode": "hard"}') FROM dflt_pack;
SELECT pmedian_gpu(id, v, 2, '{"capacity_mode": "hard"}') FROM dflt_pack;
SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 3, "capacity_mode": "strict"}') FROM dflt_pack;
SELECT pmedian_gpu(id, v, 2, '{"improve": "always"}') FROM dflt_pack;
-- soft capacities accept any total
SELECT (m::jsonb) ->> 'capacity_mode' AS capacity_mode
FROM (SELECT pmedian_gpu(id, v, q, 2, '{"capacity": 2.5}') AS m FROM dflt_pack) s;
