/*-------------------------------------------------------------------------
 *
 * shards_test.c
 *	  Engine tests of sharded k-means (engine/kmeans_shards.c) without a
 *	  server: a fit whose rows are split into S CPU sessions gives the
 *	  plain CPU fit's model to the bit (centroids, labels, distances,
 *	  sizes, inertia, iterations) for S = 1, 2, 3 and 7, with shards
 *	  streamed through two sessions (some resident, or none), and on 2 and
 *	  3 lanes (threads), resident and streamed, on blobs, rows that
 *	  repeat, weighted rows, k near n, more shards than rows, a narrow
 *	  store, the cosine metric, each seeding (k-means++ and k-means|| run
 *	  in the shards, their seeds alone too) and pruned labeling; a sharded
 *	  fit interrupted at any of its polls, on one lane or three, resident
 *	  or streamed, returns interrupted, leaking nothing.  Built with CUDA
 *	  and given a device, GPU sessions give the plain CPU fit's model too:
 *	  as 1, 2 and 3 resident shards (case 5), streamed (case 6), and on
 *	  two lanes, devices 0 and 1, or 0 twice (case 7).
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

/*
 * How a sharded fit splits its rows: shards, lanes (on devices, where
 * set) and the rows a lane may hold, as a share of the rows (0: all)
 */
typedef struct Layout
{
	int			shards;
	int			lanes;
	double		lane_share;
	const int  *devices;
} Layout;

/* A fit of the case on backend laid out as layout (NULL: plain); distances kept in *distances */
static Fit
case_fit(const ShardCase *c, const GcKmeansBackend *backend, const Layout *layout,
		 double **distances)
{
	GcRows		rows;
	GcKmeansParams params = c->params;
	GcError		err = {0};
	Fit			f;

	case_rows(c, &rows);
	if (layout)
	{
		params.shards = layout->shards;
		params.lanes = layout->lanes;
		params.lane_rows = (int64_t) ceil(c->n * layout->lane_share);
		params.devices = layout->devices;
	}
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
 * Every output of backend's fits laid out as each of the nlayouts
 * layouts equals the plain CPU fit's, to the bit (distances where
 * same_distances)
 */
static void
check_case_on(const ShardCase *c, const GcKmeansBackend *backend, const Layout *layouts,
			  int nlayouts, bool same_distances)
{
	double	   *ref_distances;
	Fit			ref = case_fit(c, &gc_kmeans_cpu_backend, NULL, &ref_distances);
	int			k = c->params.k;

	check(ref.status == GC_OK, "plain fit ok", c->name);
	for (int s = 0; s < nlayouts; s++)
	{
		char		config[200];
		double	   *distances;
		Fit			f = case_fit(c, backend, &layouts[s], &distances);

		snprintf(config, sizeof(config), "%s, %d %s shards, %d lanes, lanes hold %.2f",
				 c->name, layouts[s].shards, backend->name, layouts[s].lanes,
				 layouts[s].lane_share);
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

/*
 * Every output of the CPU sharded fits equals the plain CPU fit's, to the
 * bit: resident shards on one lane, streamed shards (some resident, or
 * none, the shards made to the bound), and shards on 2 and 3 lanes,
 * resident and streamed
 */
static void
check_case(const ShardCase *c)
{
	static const Layout layouts[] = {
		{1, 1, 0.0}, {2, 1, 0.0}, {3, 1, 0.0}, {7, 1, 0.0},
		{7, 1, 4.0 / 7}, {0, 1, 0.25},
		{3, 2, 0.0}, {7, 3, 0.0}, {7, 3, 2.0 / 7}, {0, 2, 0.2},
	};

	check_case_on(c, &gc_kmeans_cpu_sharded_backend, layouts,
				  sizeof(layouts) / sizeof(layouts[0]), true);
}

/* Lloyd from seed 3: what the cases change from */
static GcKmeansParams
base_params(int k, GcInit init)
{
	GcKmeansParams p = one_restart_params(k, init, 300, 1e-4);

	p.seed = 3;
	p.algorithm = GC_ALGORITHM_LLOYD;
	p.precision = GC_PRECISION_FLOAT64;
	return p;
}

/* A case over n rows of d around k centres, spread sigma, seeded by init (free_case frees it) */
static ShardCase
blob_case(const char *name, int64_t n, int d, int k, double sigma, GcInit init)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	ShardCase	c = {name, make_data(n, d, k, sigma, centres, NULL), n, d, STORE_DOUBLE,
	base_params(k, init)};

	free(centres);
	return c;
}

static void
free_case(ShardCase *c)
{
	free((double *) c->x);
}

/* Rows around k centres, fitted with each seeding */
static void
test_blobs(void)
{
	int			d = 6,
				k = 12;
	ShardCase	c = blob_case("blobs k-means++", 6000, d, k, 12.0, GC_INIT_KMEANSPP);

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
	c.params.init_centroids = c.x + 100 * d;	/* rows 100 .. 100 + k - 1 */
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
	free_case(&c);
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
	ShardCase	c = blob_case("cosine", 3000, 10, 9, 30.0, GC_INIT_KMEANSPP);

	for (int64_t i = 0; i < c.n; i++)
		gc_unit_normalize((double *) c.x + i * c.d, c.d);
	c.params.metric = GC_METRIC_COSINE;
	check_case(&c);
	c.name = "cosine k-means||";
	c.params.init = GC_INIT_KMEANS_PARALLEL;
	check_case(&c);
	free_case(&c);
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
 * shard's step, scoring), on one lane or three, its shards resident or
 * streamed, returns interrupted and frees everything (the leak check of
 * engine-check-asan); past its last poll it finishes
 */
static void
test_interrupted(void)
{
	static const Layout layouts[] = {{3, 1, 0.0}, {7, 1, 2.0 / 7}, {7, 3, 2.0 / 7}};
	ShardCase	c = blob_case("interrupted", 20000, 32, 40, 40.0, GC_INIT_KMEANS_PARALLEL);

	c.params.interrupted = stop_after_polls;
	c.params.max_iter = 10;
	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++)
	{
		int			stopped = 0,
					finished = 0;
		char		config[80];

		for (int after = 0; after < 60; after += 3)
		{
			double	   *distances;
			Fit			f;

			polls_left = after;
			f = case_fit(&c, &gc_kmeans_cpu_sharded_backend, &layouts[l], &distances);
			stopped += f.status == GC_INTERRUPTED;
			finished += f.status == GC_OK;
			free_fit(&f);
			free(distances);
		}
		polls_left = -1;
		snprintf(config, sizeof(config), "interrupted, %d shards, %d lanes",
				 layouts[l].shards, layouts[l].lanes);
		printf("%s: %d stopped, %d finished\n", config, stopped, finished);
		check(stopped > 0 && finished > 0 && stopped + finished == 20,
			  "every fit interrupted or finished, some interrupted", config);
	}
	free_case(&c);
}

#ifdef GC_WITH_CUDA
/* Lanes' devices: 0 and 1, or 0 twice on a machine of one GPU */
static int	gpu_devices[2] = {0, 1};

/*
 * GPU sessions as shards laid out as each of layouts, labelling at
 * float32 accuracy (exact labels): centroids, labels, sizes, inertia and
 * iterations equal the plain CPU fit's to the bit (distances are the
 * device's square roots); small d by the SIMT labeler (each seeding),
 * d = 128 and k = 300 by the tensor labeler; float32 and weighted rows
 */
static void
check_gpu_layouts(const Layout *layouts, int nlayouts)
{
	static const struct
	{
		const char *name;
		int64_t		n;
		int			d;
		int			k;
		GcInit		init;
		int			max_iter;
		Storage		storage;
	}			shapes[] = {
		{"gpu blobs 20k x 16, k 50", 20000, 16, 50, GC_INIT_KMEANSPP, 300, STORE_DOUBLE},
		{"gpu blobs 20k x 16, k 50, random", 20000, 16, 50, GC_INIT_RANDOM, 300, STORE_DOUBLE},
		{"gpu blobs 20k x 16, k 50, k-means||", 20000, 16, 50, GC_INIT_KMEANS_PARALLEL, 300,
		STORE_DOUBLE},
		{"gpu blobs 30k x 128, k 300", 30000, 128, 300, GC_INIT_KMEANSPP, 25, STORE_DOUBLE},
		{"gpu blobs 30k x 128, k 300, k-means||", 30000, 128, 300, GC_INIT_KMEANS_PARALLEL, 25,
		STORE_DOUBLE},
		/* float32 rows stay so in the shards: k-means++ widens blocks on the host */
		{"gpu float32 blobs 20k x 16, k 50", 20000, 16, 50, GC_INIT_KMEANSPP, 300, STORE_NARROW},
		{"gpu float32 blobs 30k x 128, k 300, k-means||", 30000, 128, 300,
		GC_INIT_KMEANS_PARALLEL, 25, STORE_NARROW},
		{"gpu weighted blobs 20k x 16, k 50, k-means||", 20000, 16, 50, GC_INIT_KMEANS_PARALLEL,
		300, STORE_WEIGHTED},
	};
	char		why[256];

	if (!gc_cuda_use_device(1, why, sizeof(why)))
		gpu_devices[1] = 0;
	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("gpu shards: no device (%s), skipped\n", why);
		return;
	}
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
	{
		ShardCase	c = blob_case(shapes[i].name, shapes[i].n, shapes[i].d, shapes[i].k, 10.0,
								  shapes[i].init);

		c.params.precision = GC_PRECISION_FLOAT32;
		c.params.max_iter = shapes[i].max_iter;
		c.storage = shapes[i].storage;
		check_case_on(&c, &gc_kmeans_cuda_sharded_backend, layouts, nlayouts, false);
		free_case(&c);
	}
}

/* 1, 2 and 3 resident shards on device 0 */
static void
test_gpu_shards(void)
{
	static const Layout layouts[] = {{1, 1, 0.0}, {2, 1, 0.0}, {3, 1, 0.0}};

	check_gpu_layouts(layouts, sizeof(layouts) / sizeof(layouts[0]));
}

/* Streamed shards on device 0: one of six resident, and none of eight */
static void
test_gpu_streamed(void)
{
	static const Layout layouts[] = {{6, 1, 0.55}, {0, 1, 0.25}};

	check_gpu_layouts(layouts, sizeof(layouts) / sizeof(layouts[0]));
}

/* Two lanes on devices 0 and 1 (0 twice with one GPU): resident, and all streamed */
static void
test_gpu_lanes(void)
{
	static const Layout layouts[] = {{4, 2, 0.0, gpu_devices}, {8, 2, 2.0 / 8, gpu_devices}};

	check_gpu_layouts(layouts, sizeof(layouts) / sizeof(layouts[0]));
	printf("gpu lanes on devices %d and %d\n", gpu_devices[0], gpu_devices[1]);
}
#endif

int
main(int argc, char **argv)
{
	static void (*const cases[]) (void) = {
		test_blobs, test_repeats_and_weights, test_few_rows, test_cosine, test_interrupted,
#ifdef GC_WITH_CUDA
		test_gpu_shards, test_gpu_streamed, test_gpu_lanes,
#endif
	};

	return run_cases(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
