--
-- pmedian_gpu_assign: every row's medoid id and distance, from the fit's
-- own allocation; NULL vectors give NULL medoids
--
CREATE TABLE asg_pts (id int, v float8[]);
INSERT INTO asg_pts
SELECT b * 10 + i, ARRAY[b * 100 + i::float8, 0] FROM generate_series(0, 2) b, generate_series(0, 4) i;
INSERT INTO asg_pts VALUES (99, NULL);

SELECT id, medoid_id, round(distance::numeric, 6) AS distance
FROM pmedian_gpu_assign('SELECT id, v FROM asg_pts', 3) ORDER BY id;

-- the medoids are those of the aggregate with the same options
SELECT (SELECT array_agg(DISTINCT medoid_id ORDER BY medoid_id)
		FROM pmedian_gpu_assign('SELECT id, v FROM asg_pts', 3, '{"metric": "manhattan"}')
		WHERE medoid_id IS NOT NULL) =
	   (SELECT array_agg(x::bigint ORDER BY x::bigint)
		FROM jsonb_array_elements_text(
			(SELECT pmedian_gpu(id, v, 3, '{"metric": "manhattan"}')::jsonb -> 'medoid_ids'
			 FROM asg_pts)) x) AS same_medoids;

-- with improve and three_phase too
SELECT count(DISTINCT medoid_id) AS medoids, round(sum(distance)::numeric, 6) AS objective
FROM pmedian_gpu_assign('SELECT id, v::real[] FROM asg_pts', 3, '{"improve": true}');
SELECT count(DISTINCT medoid_id) AS medoids, round(sum(distance)::numeric, 6) AS objective
FROM pmedian_gpu_assign('SELECT id, v FROM asg_pts', 3, '{"method": "three_phase", "big_clusters": 2}');

-- empty query: no rows
SELECT count(*) FROM pmedian_gpu_assign('SELECT id, v FROM asg_pts WHERE false', 2);
