/*-------------------------------------------------------------------------
 *
 * shards_bench.c
 *	  Times a streamed k-means fit (engine/kmeans_shards.c: rows past a
 *	  lane's budget passed through two sessions each iteration) against
 *	  the same fit with every row resident, on generated float32 rows:
 *	  the engine's side of bench/out_of_core.py.
 *
 *	  shards_bench N D K SHARDS RESIDENT [ITERS] [cpu|gpu] [incore|no-incore]
 *				   [given|parallel] [LANES]
 *
 *	  Rows: N float32 rows (a narrow store, page-locked on the GPU) around
 *	  K / 4 centres in [0, 1]^D, each value its centre's plus uniform noise
 *	  in [-0.1, 0.1).  Both fits: ITERS Lloyd iterations (default 5, tol 0)
 *	  from the same K rows taken N / K apart, so that seeding costs
 *	  nothing; with parallel, seeded by k-means|| instead (its time and
 *	  phases are in each fit's line).  The streamed fit splits the rows
 *	  into SHARDS shards over LANES lanes (default 1; on the GPU lane l
 *	  runs on device l: LANES GPUs against the resident fit's one) and
 *	  keeps RESIDENT of them in sessions of their own (each lane's
 *	  lane_rows holds its share of RESIDENT + 2 shards; RESIDENT = SHARDS:
 *	  no bound); the others are streamed.  Prints one
 *	  line of key=value per fit (per_iteration_ms: its steps alone, not
 *	  the scoring pass), then the streamed rows' bytes an
 *	  iteration, the host-to-device rate of the resident fit's upload,
 *	  the transfer bound (those bytes at that rate), the ratio the
 *	  target is stated in (the streamed iteration over the larger of the
 *	  bound and the resident iteration), and whether the two models are
 *	  the same to the bit (else which parts differ, and how many labels).
 *	  Each fit's line names its kernel and the fractions of labels left
 *	  to a more exact pass; where the models differ, each fit's labels
 *	  against the exact reference under its own centroids, on the rows
 *	  where the two part and on a sample.  no-incore skips the resident fit (rows past
 *	  the GPU's memory): the ratio is then over the bound alone.
 *
 * IDENTIFICATION
 *	  test/engine/shards_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* lanes the bench may ask for: one a GPU of a server */
#define GC_BENCH_MAX_LANES 16

typedef struct Run
{
	GcKmeansResult result;
	double		wall_ms;
	double		per_iteration_ms;
} Run;

/* A cheap generator: the rows' values need no quality, only speed */
static uint64_t
next_bits(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
make_rows(GcRows *rows, int64_t n, int d, int k, GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};
	int			centres = k / 4 > 0 ? k / 4 : 1;
	float	   *centre = malloc(sizeof(float) * (size_t) centres * d);
	uint64_t	s = 42;

	for (size_t i = 0; i < (size_t) centres * d; i++)
		centre[i] = (float) ((next_bits(&s) >> 11) * 0x1p-53);
	gc_rows_init(rows, d, alloc, free_fn, &err);
	gc_rows_set_narrow(rows);
	for (int64_t i = 0; i < n; i++)
	{
		float	   *slot = gc_rows_reserve_narrow(rows, &err);
		const float *c = centre + (size_t) (next_bits(&s) % centres) * d;

		if (slot == NULL)
		{
			fprintf(stderr, "rows: %s\n", err.message);
			exit(1);
		}
		for (int j = 0; j < d; j++)
			slot[j] = c[j] + (float) (((next_bits(&s) >> 11) * 0x1p-53 - 0.5) * 0.2);
		gc_rows_commit(rows);
	}
	free(centre);
}

static Run
run_fit(const GcKmeansBackend *backend, GcRows *rows, const GcKmeansParams *params)
{
	GcError		err = {0};
	Run			run;
	double		t0;

	memset(&run, 0, sizeof(run));
	run.result.centroids = malloc(sizeof(double) * params->k * rows->d);
	run.result.sizes = malloc(sizeof(int64_t) * params->k);
	run.result.labels = malloc(sizeof(int32_t) * rows->n);
	t0 = gc_now_ms();
	if (gc_kmeans_fit(backend, rows, params, &run.result, &err) != GC_OK)
	{
		fprintf(stderr, "fit failed: %s\n", err.message);
		exit(1);
	}
	run.wall_ms = gc_now_ms() - t0;
	/* the steps alone: iterations_ms holds the restart's start and the scoring too */
	run.per_iteration_ms = run.result.timings.steps_ms /
		(run.result.iterations > 0 ? run.result.iterations : 1);
	return run;
}

static void
print_run(const char *name, const Run *r)
{
	const GcKmeansTimings *t = &r->result.timings;

	printf("%s wall_ms=%.1f transfer_ms=%.1f iterations_ms=%.1f steps_ms=%.1f scoring_ms=%.1f "
		   "labeling_ms=%.1f update_ms=%.1f "
		   "seeding_ms=%.1f rounds_ms=%.1f weights_ms=%.1f recluster_ms=%.1f "
		   "iterations=%d per_iteration_ms=%.2f inertia=%.17g kernel=%s rechecked=%.6f "
		   "exact=%.6f pruned=%d\n",
		   name, r->wall_ms, t->transfer_ms, t->iterations_ms, t->steps_ms, t->scoring_ms,
		   t->labeling_ms, t->update_ms, t->seeding_ms, t->seeding.rounds_ms,
		   t->seeding.weights_ms, t->seeding.recluster_ms,
		   r->result.iterations, r->per_iteration_ms, r->result.inertia,
		   r->result.kernel ? r->result.kernel : "?", r->result.rechecked_fraction,
		   r->result.exact_fraction, (int) r->result.pruned);
}

/* Which parts of two models differ, as a word list ("" when none) */
static const char *
model_differences(const Run *a, const Run *b, int64_t n, int k, int d, char *out, size_t len)
{
	int64_t		labels = 0;

	for (int64_t i = 0; i < n; i++)
		labels += a->result.labels[i] != b->result.labels[i];
	snprintf(out, len, "%s%s%s%s labels_differing=%lld",
			 a->result.inertia != b->result.inertia ? " inertia" : "",
			 a->result.iterations != b->result.iterations ? " iterations" : "",
			 memcmp(a->result.centroids, b->result.centroids, sizeof(double) * k * d) ? " centroids" : "",
			 memcmp(a->result.sizes, b->result.sizes, sizeof(int64_t) * k) ? " sizes" : "",
			 (long long) labels);
	return out;
}

/*
 * How many of a fit's labels differ from the exact reference's under its
 * own centroids (gc_nearest_centroid), over the first `most` rows where
 * the two fits' labels differ and over every n / samples-th row: which
 * fit labels wrongly, where they part (the first three such rows, with
 * both exact distances)
 */
static void
print_reference_check(const char *name, const Run *r, const Run *other, const GcRows *rows,
					  int k, int most, int samples)
{
	double	   *x = malloc(sizeof(double) * rows->d);
	double		d2;
	int64_t		step = rows->n / samples > 0 ? rows->n / samples : 1;
	int			parted = 0,
				parted_wrong = 0,
				sampled = 0,
				sampled_wrong = 0,
				first_wrong_ref = -1;
	int64_t		first_wrong = -1;

	for (int64_t i = 0; i < rows->n && parted < most; i++)
	{
		int			l;

		if (r->result.labels[i] == other->result.labels[i])
			continue;
		gc_rows_copy_row(rows, i, x);
		l = gc_nearest_centroid(x, r->result.centroids, k, rows->d, &d2);
		parted++;
		if (l != r->result.labels[i])
		{
			if (parted_wrong < 3)
			{
				const double *cl = r->result.centroids + (size_t) r->result.labels[i] * rows->d;
				printf("wrong %s row=%lld label=%d label_d2=%.17g reference=%d reference_d2=%.17g\n",
					   name, (long long) i, r->result.labels[i],
					   gc_sqdist_exact(x, cl, rows->d), l, d2);
			}
			parted_wrong++;
			if (first_wrong < 0)
				first_wrong = i, first_wrong_ref = l;
		}
	}
	for (int64_t i = 0; i < rows->n; i += step)
	{
		int			l;

		gc_rows_copy_row(rows, i, x);
		l = gc_nearest_centroid(x, r->result.centroids, k, rows->d, &d2);
		sampled++;
		sampled_wrong += l != r->result.labels[i];
	}
	printf("reference %s parted=%d parted_wrong=%d sampled=%d sampled_wrong=%d "
		   "first_wrong_row=%lld label=%d reference=%d\n",
		   name, parted, parted_wrong, sampled, sampled_wrong, (long long) first_wrong,
		   first_wrong >= 0 ? r->result.labels[first_wrong] : -1, first_wrong_ref);
	free(x);
}

static bool
same_model(const Run *a, const Run *b, int64_t n, int k, int d)
{
	return a->result.inertia == b->result.inertia &&
		a->result.iterations == b->result.iterations &&
		memcmp(a->result.centroids, b->result.centroids, sizeof(double) * k * d) == 0 &&
		memcmp(a->result.sizes, b->result.sizes, sizeof(int64_t) * k) == 0 &&
		memcmp(a->result.labels, b->result.labels, sizeof(int32_t) * n) == 0;
}

int
main(int argc, char **argv)
{
	int64_t		n;
	int			d,
				k,
				shards,
				resident;
	bool		incore = !(argc > 8 && strcmp(argv[8], "no-incore") == 0);
	bool		parallel = argc > 9 && strcmp(argv[9], "parallel") == 0;
	int			lanes = argc > 10 ? atoi(argv[10]) : 1;
	int			devices[GC_BENCH_MAX_LANES];
	const GcKmeansBackend *plain = &gc_kmeans_cpu_backend;
	const GcKmeansBackend *sharded = &gc_kmeans_cpu_sharded_backend;
	GcHostAlloc alloc = plain_alloc;
	GcHostFree	free_fn = free;
	GcKmeansParams params;
	GcRows		rows;
	double	   *init;
	double		row_bytes,
				streamed_bytes,
				rate,
				bound,
				floor_ms;
	Run			whole = {0},
				streamed;

	if (argc < 6)
	{
		fprintf(stderr, "usage: %s N D K SHARDS RESIDENT [ITERS] [cpu|gpu] [incore|no-incore] "
				"[given|parallel] [LANES]\n", argv[0]);
		return 2;
	}
	n = atoll(argv[1]);
	d = atoi(argv[2]);
	k = atoi(argv[3]);
	shards = atoi(argv[4]);
	resident = atoi(argv[5]);
	if (shards < 1 || resident < 0 || resident > shards || k < 1 || n < k ||
		lanes < 1 || lanes > GC_BENCH_MAX_LANES || lanes > shards)
	{
		fprintf(stderr, "need 1 <= SHARDS, 0 <= RESIDENT <= SHARDS, 1 <= K <= N, "
				"1 <= LANES <= min(SHARDS, %d)\n", GC_BENCH_MAX_LANES);
		return 2;
	}
	if (argc > 7 && strcmp(argv[7], "gpu") == 0 &&
		!bench_gpu_backends(&plain, &sharded, &alloc, &free_fn))
		return 1;
	make_rows(&rows, n, d, k, alloc, free_fn);
	init = malloc(sizeof(double) * k * d);
	for (int c = 0; c < k; c++)
		gc_rows_copy_row(&rows, (int64_t) c * (n / k), init + (size_t) c * d);
	params = one_restart_params(k, parallel ? GC_INIT_KMEANS_PARALLEL : GC_INIT_GIVEN,
								argc > 6 ? atoi(argv[6]) : 5, 0.0);
	params.init_centroids = parallel ? NULL : init;
	params.seed = 1;
	printf("n=%lld d=%d k=%d device=%s shards=%d resident=%d lanes=%d iterations=%d\n",
		   (long long) n, d, k, plain->name, shards, resident, lanes, params.max_iter);
	fflush(stdout);
	if (incore)
	{
		whole = run_fit(plain, &rows, &params);
		print_run("resident", &whole);
		fflush(stdout);
	}
	params.shards = shards;
	params.lanes = lanes;
	for (int l = 0; l < lanes; l++)
		devices[l] = l;
	params.devices = devices;
	/* room for a lane's resident shards and the two a streamed one passes through */
	params.lane_rows = resident == shards ? 0 :
		(int64_t) ((resident + lanes - 1) / lanes + 2) * ((n + shards - 1) / shards);
	streamed = run_fit(sharded, &rows, &params);
	print_run("streamed", &streamed);

	/* a narrow row's upload: its float32 values and its hash */
	row_bytes = 4.0 * d + 8.0;
	streamed_bytes = row_bytes * (double) n * (shards - resident) / shards;
	rate = incore && whole.result.timings.transfer_ms > 0.0 ?
		row_bytes * (double) n / (whole.result.timings.transfer_ms / 1e3) : 0.0;
	/* each lane's GPU has a link of its own */
	bound = rate > 0.0 ? streamed_bytes / (rate * lanes) * 1e3 : 0.0;
	floor_ms = fmax(bound, incore ? whole.per_iteration_ms : 0.0);
	printf("streamed_gb_per_iteration=%.2f upload_gb_per_s=%.1f transfer_bound_ms=%.1f "
		   "ratio=%.2f same_model=%s\n",
		   streamed_bytes / 1e9, rate / 1e9, bound,
		   floor_ms > 0.0 ? streamed.per_iteration_ms / floor_ms : 0.0,
		   incore ? (same_model(&whole, &streamed, n, k, d) ? "yes" : "NO") : "not compared");
	if (incore && !same_model(&whole, &streamed, n, k, d))
	{
		char		differ[160];

		printf("differences:%s\n", model_differences(&whole, &streamed, n, k, d, differ,
													  sizeof(differ)));
		print_reference_check("resident", &whole, &streamed, &rows, k, 200, 2000);
		print_reference_check("streamed", &streamed, &whole, &rows, k, 200, 2000);
	}
	gc_rows_release(&rows);
	free(init);
	return incore && !same_model(&whole, &streamed, n, k, d);
}
