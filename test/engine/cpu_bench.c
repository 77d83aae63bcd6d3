/*-------------------------------------------------------------------------
 *
 * cpu_bench.c
 *	  The CPU k-means benchmark runner (bench/cpu_vs_sklearn.py drives it
 *	  beside scikit-learn): times one CPU fit and prints one JSON line.
 *
 *	  cpu_bench ROWS N D K INIT MAX_ITER THREADS ALGORITHM [METRIC]
 *		ROWS is a file of N x D little-endian doubles; INIT is a file of
 *		K x D doubles (the fit starts from them and runs exactly MAX_ITER
 *		iterations, tol 0), or "k-means++" or "k-means||" for that
 *		seeding;
 *		THREADS 0 means every core; ALGORITHM lloyd, pruned or auto;
 *		METRIC euclidean (default) or cosine (rows are normalised).
 *
 * IDENTIFICATION
 *	  test/engine/cpu_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"
#include "harness.h"

static GcAlgorithm
parse_algorithm(const char *name)
{
	if (strcmp(name, "lloyd") == 0)
		return GC_ALGORITHM_LLOYD;
	if (strcmp(name, "pruned") == 0)
		return GC_ALGORITHM_PRUNED;
	return GC_ALGORITHM_AUTO;
}

int
main(int argc, char **argv)
{
	GcRows		rows;
	GcKmeansParams params = {0};
	GcKmeansResult result = {0};
	GcError		err = {0};
	int64_t		n;
	int			d,
				k;
	double	   *x,
			   *init = NULL;
	bool		cosine;
	double		start,
				total;
	GcStatus	status;

	if (argc < 9)
	{
		fprintf(stderr, "usage: cpu_bench ROWS N D K INIT MAX_ITER THREADS ALGORITHM [METRIC]\n");
		return 2;
	}
	n = atoll(argv[2]);
	d = atoi(argv[3]);
	k = atoi(argv[4]);
	cosine = argc > 9 && strcmp(argv[9], "cosine") == 0;
	x = load_file(argv[1], n, d);
	if (cosine)
		for (int64_t i = 0; i < n; i++)
		{
			double		s = 0.0;

			for (int j = 0; j < d; j++)
				s += x[i * d + j] * x[i * d + j];
			s = s > 0.0 ? 1.0 / sqrt(s) : 0.0;
			for (int j = 0; j < d; j++)
				x[i * d + j] *= s;
		}
	params.k = k;
	params.max_iter = atoi(argv[6]);
	params.tol = 0.0;
	params.algorithm = parse_algorithm(argv[8]);
	params.precision = GC_PRECISION_FLOAT64;
	params.cpu_threads = atoi(argv[7]);
	params.metric = cosine ? GC_METRIC_COSINE : GC_METRIC_EUCLIDEAN;
	params.n_init = 1;
	if (strcmp(argv[5], "k-means++") == 0)
		params.init = GC_INIT_KMEANSPP;
	else if (strcmp(argv[5], "k-means||") == 0)
		params.init = GC_INIT_KMEANS_PARALLEL;
	else
	{
		init = load_file(argv[5], k, d);
		params.init = GC_INIT_GIVEN;
		params.init_centroids = init;
	}
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	start = gc_now_ms();
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	status = gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err);
	total = gc_now_ms() - start;
	if (status != GC_OK)
	{
		fprintf(stderr, "fit failed: %s\n", err.message);
		return 1;
	}
	printf("{\"n\": %lld, \"d\": %d, \"k\": %d, \"init\": \"%s\", \"iterations\": %d, "
		   "\"threads\": %d, \"total_ms\": %.2f, \"seeding_ms\": %.2f, \"iterations_ms\": %.2f, "
		   "\"steps_ms\": %.2f, \"scoring_ms\": %.2f, \"pruned\": %s, \"inertia\": %.10g}\n",
		   (long long) n, d, k, result.init, result.iterations, params.cpu_threads, total,
		   result.timings.seeding_ms, result.timings.iterations_ms, result.timings.steps_ms,
		   result.timings.scoring_ms, result.pruned ? "true" : "false", result.inertia);
	free(x);
	free(init);
	return 0;
}
