--
-- pmedian_three_phase: the O(n^1.5) construction (sample, global, small,
-- then a location-allocation polish) against plain location-allocation,
-- uncapacitated and capacitated, on 3000 points in 12 clumps
--
CREATE TABLE tp_pts AS
SELECT i::bigint AS id,
	   ARRAY[(i % 12) * 100 + ((i * 7919) % 61)::float8,
			 (i % 12 / 4) * 150 + ((i * 104729) % 53)::float8] AS v,
	   1 + (i % 3)::float8 AS q
FROM generate_series(1, 3000) i;

SELECT (tp::jsonb) ->> 'method' AS method, (tp::jsonb) -> 'p' AS p,
	   ((tp::jsonb) ->> 'objective')::float8 <= 1.10 * ((la::jsonb) ->> 'objective')::float8
		   AS within_10pct_of_location_allocation,
	   (SELECT count(DISTINCT x) FROM jsonb_array_elements_text((tp::jsonb) -> 'medoid_ids') x)
		   AS distinct_medoids
FROM (SELECT pmedian_gpu(id, v, 60, '{"method": "three_phase"}') AS tp,
			 pmedian_gpu(id, v, 60, '{"method": "location_allocation"}') AS la
	  FROM tp_pts) s;

-- capacitated: 6000 units of demand, 60 medoids of capacity 110
SELECT (m::jsonb) ->> 'method' AS method,
	   ((m::jsonb) ->> 'violation')::float8 <= 0.05 * 6000 AS violation_below_5pct
FROM (SELECT pmedian_gpu(id, v, q, 60, '{"capacity": 110, "method": "three_phase",
										  "sample_factor": 10, "big_clusters": 8}') AS m
	  FROM tp_pts) s;

-- auto chooses location-allocation at this size
SELECT (pmedian_gpu(id, v, 5)::jsonb) ->> 'method' AS auto_method FROM tp_pts;
