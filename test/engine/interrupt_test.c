/*-------------------------------------------------------------------------
 *
 * interrupt_test.c
 *	  Cancel by work, without a server: the CPU engine polls its interrupt
 *	  hook at least once per GC_POLL_WORK units of work (gc_engine.h)
 *	  whatever the shape, in k-means labeling and scoring, k-means++
 *	  seeding, the p-median phases and the capacity repair, and stops
 *	  with GC_INTERRUPTED at the poll that asks it to.  Shapes are few
 *	  rows of wide vectors against many centroids, the ones that a poll
 *	  per 1,024 rows left uninterruptible for whole passes.  Also the
 *	  nearest centroid found in blocks of one poll each equals the plain
 *	  search, ties across blocks included.  Where a GPU is usable, the
 *	  CUDA backend labels in chunks of rows (gc_poll_gpu_items) with a
 *	  poll between chunks: the labels of rows on both sides of each chunk
 *	  boundary equal the CPU's, a stop is honoured there, and the device
 *	  memory comes back.
 *
 * IDENTIFICATION
 *	  test/engine/interrupt_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pmedian_engine.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* The hook: counts its calls, asks to stop at call stop_at (0: never) */
static int64_t polls;
static int64_t stop_at;

static bool
count_polls(void)
{
	polls++;
	return stop_at > 0 && polls >= stop_at;
}

static void
reset_polls(int64_t stop)
{
	polls = 0;
	stop_at = stop;
}

/*
 * One Lloyd iteration from k random rows, no tolerance, polled by the
 * counting hook: the k-means fit every case here times
 */
static GcKmeansParams
one_polled_iteration(int k)
{
	GcKmeansParams params = one_restart_params(k, GC_INIT_RANDOM, 1, 0.0);

	params.algorithm = GC_ALGORITHM_LLOYD;
	params.interrupted = count_polls;
	return params;
}

/* Rows of uniform values in [0, 1) */
static double *
uniform_rows(int64_t n, int d)
{
	double	   *x = malloc(sizeof(double) * n * d);

	for (int64_t i = 0; i < n * d; i++)
		x[i] = uniform();
	return x;
}

/*
 * One Lloyd iteration and the scoring pass of n rows against k random
 * centroids: 2 n k d units at least, so that many polls; then the same
 * fit asked to stop at its third poll
 */
static void
run_kmeans_case(int64_t n, int k, int d, int threads)
{
	GcRows		rows;
	GcKmeansParams params;
	GcKmeansResult result = {0};
	GcError		err = {0};
	double	   *x = uniform_rows(n, d);
	double		work = 2.0 * n * k * d;
	char		config[96],
				what[128];
	GcStatus	status;

	snprintf(config, sizeof(config), "kmeans n=%lld k=%d d=%d, %d threads", (long long) n, k, d,
			 threads);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	params = one_polled_iteration(k);
	params.cpu_threads = threads;
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);

	reset_polls(0);
	status = gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err);
	check(status == GC_OK, "fit without a stop: ok", config);
	snprintf(what, sizeof(what), "polls at least once per %lld units (%lld polls for %.3g units)",
			 (long long) GC_POLL_WORK, (long long) polls, work);
	/* a poll comes once the count reaches GC_POLL_WORK, after one row at most more */
	check(polls >= (int64_t) (work / (GC_POLL_WORK + (double) k * d + d)), what, config);
	printf("%s: %lld polls\n", config, (long long) polls);

	reset_polls(3);
	memset(&err, 0, sizeof(err));
	status = gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err);
	check(status == GC_INTERRUPTED && polls == 3, "stops at the poll that asks it to", config);

	/* k-means++, greedy: each step's potential pass is candidates n d units */
	params.init = GC_INIT_KMEANSPP;
	params.init_candidates = 8;
	reset_polls(3);
	memset(&err, 0, sizeof(err));
	status = gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err);
	check(status == GC_INTERRUPTED && polls == 3 &&
		  strstr(err.message, "seeding") != NULL,
		  "greedy k-means++ stops at the poll that asks it to", config);

	free(result.centroids);
	free(result.sizes);
	gc_rows_release(&rows);
	free(x);
}

/*
 * The nearest of k centroids, k d above GC_POLL_WORK, searched in blocks:
 * the plain search's answer, with the nearest in the second block and then
 * tied across the blocks (the lower index wins), and at least one poll
 */
static void
run_nearest_case(int k, int d)
{
	double	   *c = uniform_rows(k, d);
	double	   *x = uniform_rows(1, d);
	int			span = (int) gc_poll_span(d);
	int			last = k - 1;
	GcPoll		poll = {count_polls, 0};
	char		config[64];
	double		d2a,
				d2b;
	int			a,
				b;

	snprintf(config, sizeof(config), "nearest k=%d d=%d", k, d);
	check(span < k, "the centroids span more than one block", config);
	memcpy(c + (size_t) last * d, x, sizeof(double) * d);
	c[(size_t) last * d] += 1e-3;
	reset_polls(0);
	a = gc_nearest_centroid(x, c, k, d, &d2a);
	b = gc_nearest_centroid_polled(x, c, k, d, &d2b, &poll);
	check(a == last && b == a && d2a == d2b, "nearest in the last block", config);
	check(polls >= 1, "polls within one row", config);

	memcpy(c + (size_t) (span / 2) * d, c + (size_t) last * d, sizeof(double) * d);
	a = gc_nearest_centroid(x, c, k, d, &d2a);
	b = gc_nearest_centroid_polled(x, c, k, d, &d2b, &poll);
	check(a == span / 2 && b == a && d2a == d2b, "a tie across blocks goes to the lower index",
		  config);

	reset_polls(1);
	poll.work = 0;
	check(gc_nearest_centroid_polled(x, c, k, d, NULL, &poll) == -1,
		  "an interrupted search says so", config);
	free(c);
	free(x);
}

/*
 * p-median location-allocation, one iteration, p = 2: the within-cluster
 * sums alone are at least n^2 / 2 distances of d coordinates
 */
static void
run_pmedian_case(int64_t n, int d, int threads)
{
	GcRows		rows;
	GcPmParams	params = {0};
	GcPmResult	result = {0};
	GcError		err = {0};
	double	   *x = uniform_rows(n, d);
	int32_t		medoids[2];
	double		penalties[2];
	double		work = (double) n * n / 2.0 * d;
	char		config[64],
				what[128];
	GcStatus	status;

	snprintf(config, sizeof(config), "pmedian n=%lld p=2 d=%d, %d threads", (long long) n, d,
			 threads);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	params.p = 2;
	params.cpu_threads = threads;
	params.metric = GC_PM_EUCLIDEAN;
	params.max_iter = 1;
	params.method = GC_PM_LOCATION_ALLOCATION;
	params.improve = GC_PM_IMPROVE_NONE;
	params.sample_factor = 30.0;
	params.penalty_step = 2.0;
	params.auto_threshold = INT64_MAX;
	params.interrupted = count_polls;
	result.medoids = medoids;
	result.penalties = penalties;

	reset_polls(0);
	status = gc_pmedian_fit(&gc_pmedian_cpu_backend, &rows, NULL, &params, &result, &err);
	check(status == GC_OK, "fit without a stop: ok", config);
	snprintf(what, sizeof(what), "polls at least once per %lld units (%lld polls for %.3g units)",
			 (long long) GC_POLL_WORK, (long long) polls, work);
	/* here the items counted are single distances */
	check(polls >= (int64_t) (work / (GC_POLL_WORK + d)), what, config);
	printf("%s: %lld polls\n", config, (long long) polls);

	reset_polls(2);
	memset(&err, 0, sizeof(err));
	status = gc_pmedian_fit(&gc_pmedian_cpu_backend, &rows, NULL, &params, &result, &err);
	check(status == GC_INTERRUPTED && polls == 2, "stops at the poll that asks it to", config);
	gc_rows_release(&rows);
	free(x);
}

/*
 * The capacity repair of every row allocated to one of p medoids: its
 * candidate search alone is n p d units, so it stops at the second poll
 * before the first move
 */
static void
run_repair_case(int64_t n, int d, int p)
{
	GcRows		rows;
	GcError		err = {0};
	double	   *x = uniform_rows(n, d);
	double	   *demand = malloc(sizeof(double) * n);
	double	   *dist = malloc(sizeof(double) * n);
	int32_t    *alloc = malloc(sizeof(int32_t) * n);
	int32_t    *medoids = malloc(sizeof(int32_t) * p);
	int64_t		moves = -1;
	char		config[64];
	GcStatus	status;

	snprintf(config, sizeof(config), "repair n=%lld p=%d d=%d", (long long) n, p, d);
	check((double) n * p * d >= 2.0 * GC_POLL_WORK, "the candidate search spans two polls",
		  config);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	for (int m = 0; m < p; m++)
		medoids[m] = m;
	for (int64_t i = 0; i < n; i++)
	{
		demand[i] = 1.0;
		alloc[i] = 0;
		dist[i] = sqrt(gc_sqdist_exact(x + i * d, x, d));
	}
	reset_polls(2);
	status = gc_pmedian_repair(&rows, demand, GC_PM_EUCLIDEAN, (double) n / p + 1.0, p,
							   medoids, alloc, dist, count_polls, &moves, &err);
	check(status == GC_INTERRUPTED && polls == 2 && moves == 0,
		  "stops at the poll that asks it to, before moving a row", config);
	gc_rows_release(&rows);
	free(x);
	free(demand);
	free(dist);
	free(alloc);
	free(medoids);
}

#ifdef GC_WITH_CUDA
/*
 * k d = 2^22 puts GC_POLL_MIN_GPU_ROWS rows in a chunk: n rows are three
 * chunks, so labeling polls twice and scoring twice more.  Rows next to
 * the chunk boundaries (and a sample) are checked against the CPU's
 * nearest centroid of the fit's centroids.
 */
static void
run_gpu_case(int64_t n, int k, int d)
{
	GcRows		rows;
	GcKmeansParams params;
	GcKmeansResult result = {0};
	GcError		err = {0};
	double	   *x = uniform_rows(n, d);
	int64_t		chunk = gc_poll_gpu_items((int64_t) k * d, GC_POLL_MIN_GPU_ROWS, n);
	int64_t		mismatched = 0;
	size_t		free_before = 0,
				free_after = 0,
				total = 0;
	char		name[128],
				config[96],
				what[128];
	GcStatus	status;

	snprintf(config, sizeof(config), "gpu n=%lld k=%d d=%d, chunks of %lld rows",
			 (long long) n, k, d, (long long) chunk);
	check(chunk < n / 2, "the rows span three chunks", config);
	load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	params = one_polled_iteration(k);
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	result.labels = malloc(sizeof(int32_t) * n);

	reset_polls(0);
	status = gc_kmeans_fit(&gc_kmeans_cuda_backend, &rows, &params, &result, &err);
	check(status == GC_OK, "fit without a stop: ok", config);
	snprintf(what, sizeof(what), "polls between chunks (%lld polls)", (long long) polls);
	check(polls >= 2 * ((n - 1) / chunk), what, config);
	for (int64_t i = 0; status == GC_OK && i < n; i++)
	{
		int64_t		near = i % chunk;

		if (near < 2 || near >= chunk - 2 || i >= n - 2 || i % 997 == 0)
			mismatched += result.labels[i] !=
				gc_nearest_centroid(x + i * d, result.centroids, k, d, NULL);
	}
	snprintf(what, sizeof(what), "labels at the chunk boundaries equal the CPU's (%lld differ)",
			 (long long) mismatched);
	check(mismatched == 0, what, config);

	/* the kernels are loaded now: what the device has free is the baseline */
	(void) gc_cuda_describe_device(name, sizeof(name), &free_before, &total);
	reset_polls(2);
	memset(&err, 0, sizeof(err));
	status = gc_kmeans_fit(&gc_kmeans_cuda_backend, &rows, &params, &result, &err);
	check(status == GC_INTERRUPTED && polls == 2, "stops between chunks", config);
	(void) gc_cuda_describe_device(name, sizeof(name), &free_after, &total);
	snprintf(what, sizeof(what), "device memory back after the stop (%.1f MB short)",
			 ((double) free_before - (double) free_after) / 1048576.0);
	check(free_after + (size_t) 64 * 1048576 >= free_before, what, config);

	free(result.centroids);
	free(result.sizes);
	free(result.labels);
	gc_rows_release(&rows);
	free(x);
}
#endif

int
main(void)
{
	rng_state = 20261123;
	/* every core, and more threads than cores (as on a large server) */
	run_kmeans_case(200, 100, 8192, 0);
	run_kmeans_case(200, 100, 8192, 16);
	run_nearest_case(520, 32768);
	run_pmedian_case(240, 8192, 0);
	run_pmedian_case(240, 8192, 16);
	run_repair_case(2000, 4096, 8);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
			run_gpu_case(3 * GC_POLL_MIN_GPU_ROWS - 1000, 4096, 1024);
		else
			printf("no GPU case: %s\n", why);
	}
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed > 0;
}
