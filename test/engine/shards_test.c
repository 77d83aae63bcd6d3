/*-------------------------------------------------------------------------
 *
 * shards_test.c
 *	  Engine tests of sharded k-means (engine/kmeans_shards.c) without a
 *	  server: a fit whose rows are split into S CPU sessions gives the
 *	  plain CPU fit's model to the bit (centroids, labels, distances,
 *	  sizes, inertia, iterations) for S = 1, 2, 3 and 7, on blobs, rows
 *	  that repeat, weighted rows, k near n, more shards than rows, a
 *	  narrow store, the cosine metric, each seeding (k-means++ and
 *	  k-means|| run in the shards, their seeds alone too) and pruned
 *	  labeling; a sharded fit interrupted at any of its polls returns
 *	  interrupted, leaking nothing.  Built with CUDA and given a device,
 *	  GPU sessions as 1, 2 and 3 shards give the plain CPU fit's model too.
 *
 *	  shards_test              run the checks, ending with "N passed, N failed"
 *	  shards_test N            the Nth case alone
 *	  shards_test count        how many cases there are
 *
 * IDENTIFICATION
 *	  test/engine/shards_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* How a case's rows are stored */
typedef enum Storage
{
	STORE_DOUBLE = 0,
	STORE_NARROW,
	STORE_WEIGHTED
} Storage;

/* One case: its rows and the fit asked of them */
typedef struct ShardCase
{
	const char *name;
	const double *x;
	int64_t		n;
	int			d;
	Storage		storage;
	GcKmeansParams params;
} ShardCase;

/* The case's rows in a fresh store (a fit may widen it) */
static void
case_rows(const ShardCase *c, GcRows *rows)
{
	GcError		err = {0};

	if (c->storage == STORE_NARROW)
	{
		load_narrow_rows(rows, c->x, c->n, c->d, plain_alloc, free);
		return;
	}
	if (c->storage == STORE_DOUBLE)
	{
		load_rows(rows, c->x, c->n, c->d, NULL, plain_alloc, free);
		return;
	}
	gc_rows_init(rows, c->d, plain_alloc, free, &err);
	gc_rows_set_weighted(rows);
	for (int64_t i = 0; i < c->n; i++)
	{
		memcpy(gc_rows_reserve(rows, &err), c->x + i * c->d, sizeof(double) * c->d);
		gc_rows_commit_weighted(rows, (double) (1 + (i * 7) % 5));
	}
}

/* A fit of the case on backend with shards shards; distances kept in *distances */
static Fit
case_fit(const ShardCase *c, const GcKmeansBackend *backend, int shards, double **distances)
{
	GcRows		rows;
	GcKmeansParams params = c->params;
	GcError		err = {0};
	Fit			f;

	case_rows(c, &rows);
	params.shards = shards;
	f = new_fit(params.k, &rows);
	*distances = malloc(sizeof(double) * c->n);
	f.result.distances = *distances;
	f.status = gc_kmeans_fit(backend, &rows, &params, &f.result, &err);
	if (f.status != GC_OK && f.status != GC_INTERRUPTED)
		printf("%s: fit failed: %s\n", c->name, err.message);
	gc_rows_release(&rows);
	return f;
}

/*
 * Every output of backend's fits over each of the nshards shard counts
 * equals the plain CPU fit's, to the bit (distances where same_distances)
 */
static void
check_case_on(const ShardCase *c, const GcKmeansBackend *backend, const int *shard_counts,
			  int nshards, bool same_distances)
{
	double	   *ref_distances;
	Fit			ref = case_fit(c, &gc_kmeans_cpu_backend, 0, &ref_distances);
	int			k = c->params.k;

	check(ref.status == GC_OK, "plain fit ok", c->name);
	for (int s = 0; s < nshards; s++)
	{
		char		config[160];
		double	   *distances;
		Fit			f = case_fit(c, backend, shard_counts[s], &distances);

		snprintf(config, sizeof(config), "%s, %d %s shards", c->name, shard_counts[s],
				 backend->name);
		check(f.status == GC_OK, "sharded fit ok", config);
		check(memcmp(ref.labels, f.labels, sizeof(int32_t) * c->n) == 0, "labels equal", config);
		check(memcmp(ref.centroids, f.centroids, sizeof(double) * k * c->d) == 0,
			  "centroids equal to the bit", config);
		check(!same_distances ||
			  memcmp(ref_distances, distances, sizeof(double) * c->n) == 0,
			  "distances equal to the bit", config);
		check(memcmp(ref.sizes, f.sizes, sizeof(int64_t) * k) == 0, "sizes equal", config);
		check(memcmp(&ref.result.inertia, &f.result.inertia, sizeof(double)) == 0,
			  "inertia equal to the bit", config);
		check(ref.result.iterations == f.result.iterations &&
			  ref.result.converged == f.result.converged, "iterations equal", config);
		check(strcmp(ref.result.init, f.result.init) == 0, "same seeding", config);
		free_fit(&f);
		free(distances);
	}
	free_fit(&ref);
	free(ref_distances);
}

/* Every output of the CPU sharded fits equals the plain CPU fit's, to the bit */
static void
check_case(const ShardCase *c)
{
	static const int shard_counts[] = {1, 2, 3, 7};

	check_case_on(c, &gc_kmeans_cpu_sharded_backend, shard_counts, 4, true);
}

/* Lloyd from seed 3: what the cases change from */
static GcKmeansParams
base_params(int k, GcInit init)
{
	GcKmeansParams p = {0};

	p.k = k;
	p.max_iter = 300;
	p.tol = 1e-4;
	p.init = init;
	p.seed = 3;
	p.n_init = 1;
	p.algorithm = GC_ALGORITHM_LLOYD;
	p.precision = GC_PRECISION_FLOAT64;
	return p;
}

/* Rows around k centres, fitted with each seeding */
static void
test_blobs(void)
{
	int64_t		n = 6000;
	int			d = 6,
				k = 12;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 12.0, centres, NULL);
	ShardCase	c = {"blobs k-means++", x, n, d, STORE_DOUBLE, base_params(k, GC_INIT_KMEANSPP)};

	check_case(&c);
	c.name = "blobs greedy k-means++, 3 restarts";
	c.params.init_candidates = 4;
	c.params.n_init = 3;
	check_case(&c);
	c.name = "blobs greedy k-means++ seeds alone";
	c.params.n_init = 1;
	c.params.max_iter = 0;
	check_case(&c);
	c.name = "blobs k-means||";
	c.params = base_params(k, GC_INIT_KMEANS_PARALLEL);
	check_case(&c);
	c.name = "blobs k-means|| seeds alone";
	c.params.max_iter = 0;
	check_case(&c);
	c.name = "blobs k-means|| with the batched recluster, 2 iterations";
	c.params = base_params(GC_BATCHED_MIN_K, GC_INIT_KMEANS_PARALLEL);
	c.params.max_iter = 2;
	check_case(&c);
	c.name = "blobs random";
	c.params = base_params(k, GC_INIT_RANDOM);
	check_case(&c);
	c.name = "blobs given";
	c.params = base_params(k, GC_INIT_GIVEN);
	c.params.init_centroids = x + 100 * d;	/* rows 100 .. 100 + k - 1 */
	check_case(&c);
	c.name = "blobs pruned";
	c.params = base_params(k, GC_INIT_RANDOM);
	c.params.algorithm = GC_ALGORITHM_PRUNED;
	check_case(&c);
	c.name = "blobs auto";
	c.params.algorithm = GC_ALGORITHM_AUTO;
	check_case(&c);
	c.name = "blobs narrow";
	c.storage = STORE_NARROW;
	check_case(&c);
	free(centres);
	free(x);
}

/* Rows that repeat, and weighted rows */
static void
test_repeats_and_weights(void)
{
	int64_t		n = 4000;
	int			d = 16;
	double	   *x = make_near_duplicates(n, d, 30, 0.05);
	ShardCase	c = {"near duplicates", x, n, d, STORE_DOUBLE, base_params(20, GC_INIT_KMEANSPP)};

	check_case(&c);
	c.name = "near duplicates k-means||";
	c.params.init = GC_INIT_KMEANS_PARALLEL;
	check_case(&c);
	c.name = "weighted";
	c.storage = STORE_WEIGHTED;
	check_case(&c);
	c.name = "weighted k-means++";
	c.params.init = GC_INIT_KMEANSPP;
	check_case(&c);
	free(x);
}

/* k near n, and more shards than rows */
static void
test_few_rows(void)
{
	int64_t		n = 50;
	int			d = 3;
	double	   *x = malloc(sizeof(double) * n * d);
	ShardCase	c = {"k near n", x, n, d, STORE_DOUBLE, base_params(45, GC_INIT_KMEANSPP)};

	for (int64_t v = 0; v < n * d; v++)
		x[v] = floor(10 * uniform());	/* a grid: ties and repeats */
	check_case(&c);
	c.name = "k near n, random";
	c.params.init = GC_INIT_RANDOM;
	check_case(&c);
	c.name = "5 rows";
	c.n = 5;
	c.params = base_params(3, GC_INIT_KMEANSPP);
	check_case(&c);
	free(x);
}

/* Unit rows under the cosine metric */
static void
test_cosine(void)
{
	int64_t		n = 3000;
	int			d = 10,
				k = 9;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 30.0, centres, NULL);
	ShardCase	c = {"cosine", x, n, d, STORE_DOUBLE, base_params(k, GC_INIT_KMEANSPP)};

	for (int64_t i = 0; i < n; i++)
		gc_unit_normalize(x + i * d, d);
	c.params.metric = GC_METRIC_COSINE;
	check_case(&c);
	c.name = "cosine k-means||";
	c.params.init = GC_INIT_KMEANS_PARALLEL;
	check_case(&c);
	free(centres);
	free(x);
}

/* Polls before the interrupt hook says stop (-1: never) */
static int	polls_left = -1;

static bool
stop_after_polls(void)
{
	return polls_left >= 0 && polls_left-- == 0;
}

/*
 * A sharded fit stopped at any of its polls (seeding in the shards, a
 * shard's step, scoring) returns interrupted and frees everything (the
 * leak check of engine-check-asan); past its last poll it finishes
 */
static void
test_interrupted(void)
{
	int64_t		n = 20000;
	int			d = 32,
				k = 40;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 40.0, centres, NULL);
	ShardCase	c = {"interrupted", x, n, d, STORE_DOUBLE, base_params(k, GC_INIT_KMEANS_PARALLEL)};
	int			stopped = 0,
				finished = 0;

	c.params.interrupted = stop_after_polls;
	c.params.max_iter = 10;
	for (int after = 0; after < 60; after += 3)
	{
		double	   *distances;
		Fit			f;

		polls_left = after;
		f = case_fit(&c, &gc_kmeans_cpu_sharded_backend, 3, &distances);
		stopped += f.status == GC_INTERRUPTED;
		finished += f.status == GC_OK;
		free_fit(&f);
		free(distances);
	}
	polls_left = -1;
	printf("interrupted: %d stopped, %d finished\n", stopped, finished);
	check(stopped > 0 && finished > 0 && stopped + finished == 20,
		  "every fit interrupted or finished, some interrupted", c.name);
	free(centres);
	free(x);
}

#ifdef GC_WITH_CUDA
/*
 * GPU sessions as shards (all on device 0), labelling at float32 accuracy
 * (exact labels): centroids, labels, sizes, inertia and iterations equal
 * the plain CPU fit's to the bit (distances are the device's square
 * roots); small d by the SIMT labeler, d = 128 and k = 300 by the tensor
 * labeler
 */
static void
test_gpu_shards(void)
{
	static const int shard_counts[] = {1, 2, 3};
	static const struct
	{
		const char *name;
		int64_t		n;
		int			d;
		int			k;
		GcInit		init;
		int			max_iter;
	}			shapes[] = {
		{"gpu blobs 20k x 16, k 50", 20000, 16, 50, GC_INIT_KMEANSPP, 300},
		{"gpu blobs 20k x 16, k 50, random", 20000, 16, 50, GC_INIT_RANDOM, 300},
		{"gpu blobs 30k x 128, k 300", 30000, 128, 300, GC_INIT_KMEANSPP, 25},
	};
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("gpu shards: no device (%s), skipped\n", why);
		return;
	}
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
	{
		double	   *centres = malloc(sizeof(double) * shapes[i].k * shapes[i].d);
		double	   *x = make_data(shapes[i].n, shapes[i].d, shapes[i].k, 10.0, centres, NULL);
		ShardCase	c = {shapes[i].name, x, shapes[i].n, shapes[i].d, STORE_DOUBLE,
		base_params(shapes[i].k, shapes[i].init)};

		c.params.precision = GC_PRECISION_FLOAT32;
		c.params.max_iter = shapes[i].max_iter;
		check_case_on(&c, &gc_kmeans_cuda_sharded_backend, shard_counts, 3, false);
		free(centres);
		free(x);
	}
}
#endif

int
main(int argc, char **argv)
{
	select_cases(argc > 1 ? argv[1] : NULL);
	if (case_selected())
		test_blobs();
	if (case_selected())
		test_repeats_and_weights();
	if (case_selected())
		test_few_rows();
	if (case_selected())
		test_cosine();
	if (case_selected())
		test_interrupted();
#ifdef GC_WITH_CUDA
	if (case_selected())
		test_gpu_shards();
#endif
	if (!cases_end())
	{
		printf("no case %s\n", argv[1]);
		return 2;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
