/*-------------------------------------------------------------------------
 *
 * seeding_parallel_test.c
 *	  Engine tests of k-means|| seeding without a server: the CPU seeding
 *	  against a reference written from the definition (weighted rows
 *	  included), independence from row order, the quality of its fits
 *	  against greedy k-means++'s on blobs, the init rule, cancel, and,
 *	  where a GPU is usable, the GPU's chosen rows against the CPU's.
 *
 *	  seeding_parallel_test gpu-bench N D K INIT...
 *	  times GPU fits of N x D Gaussian blobs (float32 values) seeded by
 *	  each INIT (kmeans||, greedy, plain) and prints one JSON line each:
 *	  seeding and iteration times, inertia (the k-means|| row of
 *	  bench/kmeans_suite.py's H100 results).
 *
 * IDENTIFICATION
 *	  test/engine/seeding_parallel_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"
#include "harness.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* rows of x (in order's order when not NULL), weighted when w is not NULL */
static void
load_weighted(GcRows *rows, const double *x, int64_t n, int d, const int64_t *order,
			  const double *w, GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	if (w)
		gc_rows_set_weighted(rows);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		src = order ? order[i] : i;

		memcpy(gc_rows_reserve(rows, &err), x + src * d, sizeof(double) * d);
		if (w)
			gc_rows_commit_weighted(rows, w[src]);
		else
			gc_rows_commit(rows);
	}
}

static GcKmeansParams
parallel_params(int k)
{
	return one_restart_params(k, GC_INIT_KMEANS_PARALLEL, 300, 1e-4);
}

static GcStatus
seed_cpu(const GcRows *rows, const GcKmeansParams *params, uint64_t seed, int64_t *chosen)
{
	GcFrame		frame = {0};
	GcError		err = {0};
	GcStatus	status = gc_frame_init(&frame, rows, &err);

	if (status == GC_OK)
		status = gc_seed_kmeans_parallel_cpu(rows, &frame, params, seed, chosen, &err);
	gc_frame_release(&frame);
	return status;
}

static int
by_hash(const void *a, const void *b)
{
	const uint64_t *x = a,
			   *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/*
 * k-means|| from its definition, recomputing D^2 over all candidates at
 * every round, then greedy k-means++ on the weighted candidates
 */
static void
naive_parallel(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
			   uint64_t seed, int64_t *chosen)
{
	int64_t		n = rows->n;
	int			d = rows->d;
	int64_t    *cand = malloc(sizeof(int64_t) * (n + 1));
	int64_t		count = 0;
	double	   *mind2 = malloc(sizeof(double) * n);
	int64_t    *nearest = malloc(sizeof(int64_t) * n);
	uint64_t	best = GC_RACE_NONE;
	gc_u128		phi;
	GcKmeansParams rparams = gc_parallel_recluster_params(params);

	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	key = gc_race_key(gc_unit_draw(gc_rows_hash(rows, i), seed, 0),
									  gc_rows_weight(rows, i), i);

		best = key < best ? key : best;
	}
	cand[count++] = (int64_t) (uint32_t) best;
	for (int round = 0;; round++)
	{
		uint64_t   *batch = malloc(sizeof(uint64_t) * 2 * n);
		int64_t		m = 0;

		phi = 0;
		for (int64_t i = 0; i < n; i++)
		{
			mind2[i] = INFINITY;
			for (int64_t c = 0; c < count; c++)
			{
				double		d2 = gc_sqdist_exact(gc_rows_get(rows, i), gc_rows_get(rows, cand[c]), d);

				if (d2 < mind2[i])
				{
					mind2[i] = d2;
					nearest[i] = c;
				}
			}
			phi += gc_quantize_wide(mind2[i], frame->inertia_exp) *
				(gc_u128) gc_rows_weight(rows, i);
		}
		if (!gc_parallel_more_rounds(round, count, params->k, phi))
		{
			free(batch);
			break;
		}
		for (int64_t i = 0; i < n; i++)
			if (gc_unit_draw(gc_rows_hash(rows, i), seed, gc_parallel_stream(round + 1)) *
				gc_inertia_value(phi, frame) <
				gc_parallel_ell(params->k) * (mind2[i] * gc_rows_weight(rows, i)))
			{
				batch[2 * m] = gc_rows_hash(rows, i);
				batch[2 * m + 1] = (uint64_t) i;
				m++;
			}
		qsort(batch, m, 2 * sizeof(uint64_t), by_hash);
		for (int64_t j = 0; j < m; j++)
			cand[count++] = (int64_t) batch[2 * j + 1];
		free(batch);
	}
	{
		GcRows		crows;
		GcError		err = {0};
		int64_t    *kept = malloc(sizeof(int64_t) * count);
		int64_t    *picks = malloc(sizeof(int64_t) * params->k);
		int64_t		nkept = 0;

		gc_rows_init(&crows, d, malloc, free, &err);
		gc_rows_set_weighted(&crows);
		for (int64_t c = 0; c < count; c++)
		{
			double		w = 0;

			for (int64_t i = 0; i < n; i++)
				if (nearest[i] == c)
					w += gc_rows_weight(rows, i);
			if (w == 0)
				continue;
			memcpy(gc_rows_reserve(&crows, &err), gc_rows_get(rows, cand[c]), sizeof(double) * d);
			gc_rows_commit_weighted(&crows, w);
			kept[nkept++] = cand[c];
		}
		gc_seed_kmeanspp_cpu(&crows, frame, &rparams, seed, picks, &err);
		for (int t = 0; t < params->k; t++)
			chosen[t] = kept[picks[t]];
		gc_rows_release(&crows);
		free(kept);
		free(picks);
	}
	free(cand);
	free(mind2);
	free(nearest);
}

/* The CPU seeding equals the reference from the definition */
static void
test_against_naive(void)
{
	static const int shapes[][3] = {{400, 2, 12}, {300, 7, 9}, {150, 33, 5}, {60, 3, 1}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			n = shapes[s][0],
					d = shapes[s][1],
					k = shapes[s][2];
		double	   *centres = malloc(sizeof(double) * k * d);
		double	   *x = make_data(n, d, k, 3.0, centres, NULL);
		double	   *w = malloc(sizeof(double) * n);

		for (int i = 0; i < n; i++)
			w[i] = 1.0 + floor(uniform() * 5.0);
		for (int weighted = 0; weighted < 2; weighted++)
		{
			GcRows		rows;
			GcFrame		frame = {0};
			GcError		err = {0};
			GcKmeansParams params = parallel_params(k);
			int64_t    *got = malloc(sizeof(int64_t) * k);
			int64_t    *want = malloc(sizeof(int64_t) * k);
			char		config[120];

			load_weighted(&rows, x, n, d, NULL, weighted ? w : NULL, plain_alloc, free);
			gc_frame_init(&frame, &rows, &err);
			for (uint64_t seed = 0; seed < 3; seed++)
			{
				bool		same = true;

				snprintf(config, sizeof(config), "n=%d d=%d k=%d weighted=%d seed=%d",
						 n, d, k, weighted, (int) seed);
				naive_parallel(&rows, &frame, &params, seed, want);
				check(gc_seed_kmeans_parallel_cpu(&rows, &frame, &params, seed, got, &err) == GC_OK,
					  "k-means|| runs", config);
				for (int c = 0; c < k; c++)
					same &= got[c] == want[c];
				check(same, "k-means|| = the reference from the definition", config);
			}
			gc_frame_release(&frame);
			gc_rows_release(&rows);
			free(got);
			free(want);
		}
		free(centres);
		free(x);
		free(w);
	}
}

/* The same seed picks the same centres whatever the order of the rows */
static void
test_order_independence(void)
{
	int64_t		n = 3000;
	int			d = 5,
				k = 25;
	double		centres[20 * 5];
	double	   *x = make_data(n, d, 20, 2.0, centres, NULL);
	double	   *w = malloc(sizeof(double) * n);
	int64_t    *order = malloc(sizeof(int64_t) * n);

	for (int64_t i = 0; i < n; i++)
	{
		w[i] = 1.0 + floor(uniform() * 9.0);
		order[i] = i;
	}
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) (uniform() * (i + 1));
		int64_t		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int weighted = 0; weighted < 2; weighted++)
	{
		GcRows		a,
					b;
		GcKmeansParams params = parallel_params(k);
		int64_t		ca[25],
					cb[25],
					again[25];
		bool		same = true,
					repeat = true,
					distinct = true;
		char		config[40];

		snprintf(config, sizeof(config), "weighted=%d", weighted);
		load_weighted(&a, x, n, d, NULL, weighted ? w : NULL, plain_alloc, free);
		load_weighted(&b, x, n, d, order, weighted ? w : NULL, plain_alloc, free);
		check(seed_cpu(&a, &params, 11, ca) == GC_OK && seed_cpu(&b, &params, 11, cb) == GC_OK &&
			  seed_cpu(&a, &params, 11, again) == GC_OK, "k-means|| runs", config);
		for (int c = 0; c < k; c++)
		{
			same &= memcmp(gc_rows_get(&a, ca[c]), gc_rows_get(&b, cb[c]), sizeof(double) * d) == 0;
			repeat &= ca[c] == again[c];
			for (int e = 0; e < c; e++)
				distinct &= ca[e] != ca[c];
		}
		check(same, "shuffled rows give the same k-means|| centres", config);
		check(repeat, "k-means|| is deterministic", config);
		check(distinct, "k-means|| picks distinct rows", config);
		gc_rows_release(&a);
		gc_rows_release(&b);
	}
	free(x);
	free(w);
	free(order);
}

/* A fit of one seed through the driver: its inertia, and the init it reports */
static double
fit_inertia(const GcKmeansBackend *backend, GcRows *rows, GcInit init, int k,
			uint64_t seed, const char **init_name)
{
	GcKmeansParams params = parallel_params(k);
	GcKmeansResult result = {0};
	GcError		err = {0};
	GcStatus	status;

	params.init = init;
	params.seed = seed;
	result.centroids = malloc(sizeof(double) * k * rows->d);
	result.sizes = malloc(sizeof(int64_t) * k);
	status = gc_kmeans_fit(backend, rows, &params, &result, &err);
	if (status != GC_OK)
		printf("fit failed: %s\n", err.message);
	if (init_name)
		*init_name = result.init;
	free(result.centroids);
	free(result.sizes);
	return status == GC_OK ? result.inertia : INFINITY;
}

/*
 * Fits seeded by k-means|| end within 1% of greedy k-means++'s on blobs
 * (total over 8 seeds), and below plain k-means++'s
 */
static void
test_quality(void)
{
	int64_t		n = 20000;
	int			d = 8,
				k = 40;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 6.0, centres, NULL);
	GcRows		rows;
	double		total[3] = {0, 0, 0};
	const char *name = NULL;
	char		what[200];

	load_weighted(&rows, x, n, d, NULL, NULL, plain_alloc, free);
	for (uint64_t seed = 0; seed < 8; seed++)
	{
		total[0] += fit_inertia(&gc_kmeans_cpu_backend, &rows, GC_INIT_KMEANS_PARALLEL, k, seed, &name);
		total[1] += fit_inertia(&gc_kmeans_cpu_backend, &rows, GC_INIT_KMEANSPP, k, seed, NULL);
	}
	{
		/* plain k-means++: one candidate per step */
		for (uint64_t seed = 0; seed < 8; seed++)
		{
			GcKmeansParams params = parallel_params(k);
			GcKmeansResult result = {0};
			GcError		err = {0};

			params.init = GC_INIT_KMEANSPP;
			params.init_candidates = 1;
			params.seed = seed;
			result.centroids = malloc(sizeof(double) * k * d);
			result.sizes = malloc(sizeof(int64_t) * k);
			gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err);
			total[2] += result.inertia;
			free(result.centroids);
			free(result.sizes);
		}
	}
	printf("blobs n=%d d=%d k=%d, 8 seeds: total inertia k-means|| %.1f greedy %.1f plain %.1f\n",
		   (int) n, d, k, total[0], total[1], total[2]);
	snprintf(what, sizeof(what), "k-means|| fits within 1%% of greedy's (%.1f vs %.1f)",
			 total[0], total[1]);
	check(total[0] <= 1.01 * total[1], what, "blobs");
	snprintf(what, sizeof(what), "k-means|| fits below plain k-means++'s (%.1f vs %.1f)",
			 total[0], total[2]);
	check(total[0] < total[2], what, "blobs");
	check(name != NULL && strcmp(name, "kmeans||") == 0, "the fit reports kmeans||", "blobs");
	gc_rows_release(&rows);
	free(centres);
	free(x);
}

/* A k-means|| fit reports the wall time of its phases, within its seeding's */
static void
test_phases(void)
{
	double		centres[30 * 4];
	double	   *x = make_data(4000, 4, 30, 2.0, centres, NULL);
	GcRows		rows;
	GcKmeansParams params = parallel_params(30);
	GcKmeansResult result = {0};
	GcError		err = {0};
	const GcSeedingPhases *p = &result.timings.seeding;

	load_weighted(&rows, x, 4000, 4, NULL, NULL, plain_alloc, free);
	params.n_init = 2;
	result.centroids = malloc(sizeof(double) * 30 * 4);
	result.sizes = malloc(sizeof(int64_t) * 30);
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err) == GC_OK &&
		  p->rounds_ms > 0 && p->weights_ms >= 0 && p->recluster_ms > 0 &&
		  p->rounds_ms + p->weights_ms + p->recluster_ms <= result.timings.seeding_ms,
		  "k-means||'s phases timed, within the seeding's time", "phases");
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	free(x);
}

/* init auto: greedy k-means++ up to n k d = 2^34, k-means|| above */
static void
test_rule(void)
{
	GcKmeansParams p = parallel_params(1000);

	p.init = GC_INIT_AUTO;
	check(gc_seed_method(&p, 1000000, 768) == GC_INIT_KMEANS_PARALLEL &&
		  strcmp(gc_init_name(&p, 1000000, 768), "kmeans||") == 0,
		  "auto: k-means|| at 1M x 768, k = 1000", "rule");
	check(gc_seed_method(&p, 22369, 768) == GC_INIT_KMEANSPP &&
		  strcmp(gc_init_name(&p, 22369, 768), "greedy kmeans++") == 0,
		  "auto: greedy k-means++ at n k d <= 2^34", "rule");
	p.init = GC_INIT_KMEANSPP;
	check(gc_seed_method(&p, 1000000, 768) == GC_INIT_KMEANSPP &&
		  strcmp(gc_init_name(&p, 1000000, 768), "kmeans++") == 0,
		  "kmeans++ asked for stays k-means++ (plain above 2^34)", "rule");
	p.init = GC_INIT_KMEANS_PARALLEL;
	check(gc_seed_method(&p, 100, 2) == GC_INIT_KMEANS_PARALLEL, "kmeans|| asked for runs", "rule");
	check(gc_parallel_recluster_params(&p).init_candidates == 2 + (int) floor(log(1000.0)),
		  "the recluster is greedy with 2 + ln k candidates", "rule");
	check(gc_parallel_ell(1000) == 1000.0 && gc_parallel_ell(GC_BATCHED_MIN_K - 1) ==
		  GC_BATCHED_MIN_K - 1 && gc_parallel_ell(GC_BATCHED_MIN_K) ==
		  GC_PARALLEL_OVERSAMPLING_LARGE_K * GC_BATCHED_MIN_K,
		  "l = k, less from the batched recluster's k", "rule");
}

/* Lloyd's to convergence from the rows chosen: the fit's inertia */
static double
fit_from(GcRows *rows, const int64_t *chosen, int k)
{
	GcKmeansParams params = parallel_params(k);
	GcKmeansResult result = {0};
	GcError		err = {0};
	double	   *init = malloc(sizeof(double) * k * rows->d);
	GcStatus	status;

	for (int c = 0; c < k; c++)
		gc_rows_copy_row(rows, chosen[c], init + (size_t) c * rows->d);
	params.init = GC_INIT_GIVEN;
	params.init_centroids = init;
	result.centroids = malloc(sizeof(double) * k * rows->d);
	result.sizes = malloc(sizeof(int64_t) * k);
	status = gc_kmeans_fit(&gc_kmeans_cpu_backend, rows, &params, &result, &err);
	free(init);
	free(result.centroids);
	free(result.sizes);
	return status == GC_OK ? result.inertia : INFINITY;
}

/*
 * Batched greedy k-means++ (engine/seeding_batched.c, k-means||'s
 * recluster from GC_BATCHED_MIN_K centres): the same rows whatever the
 * rows' order (weighted too), k distinct rows, fits within 1% of greedy
 * k-means++'s seeds (4 seeds), and the rule and its name
 */
static void
test_batched(void)
{
	int64_t		n = 6000;
	int			d = 8,
				k = 400;
	double	   *centres = malloc(sizeof(double) * (k / 4) * d);
	double	   *x = make_data(n, d, k / 4, 3.0, centres, NULL);
	double	   *w = malloc(sizeof(double) * n);
	int64_t    *order = malloc(sizeof(int64_t) * n);
	int64_t    *ca = malloc(sizeof(int64_t) * k),
			   *cb = malloc(sizeof(int64_t) * k);
	double		total[2] = {0, 0};
	GcKmeansParams params = gc_parallel_recluster_params(&(GcKmeansParams) {.k = k});
	char		what[200];

	for (int64_t i = 0; i < n; i++)
	{
		w[i] = 1.0 + floor(uniform() * 9.0);
		order[i] = i;
	}
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) (uniform() * (i + 1));
		int64_t		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int weighted = 0; weighted < 2; weighted++)
	{
		GcRows		a,
					b;
		GcFrame		fa = {0},
					fb = {0};
		GcError		err = {0};
		bool		same = true,
					distinct = true;
		char	   *seen = calloc(n, 1);
		const char *config = weighted ? "weighted" : "unweighted";

		load_weighted(&a, x, n, d, NULL, weighted ? w : NULL, plain_alloc, free);
		load_weighted(&b, x, n, d, order, weighted ? w : NULL, plain_alloc, free);
		check(gc_frame_init(&fa, &a, &err) == GC_OK && gc_frame_init(&fb, &b, &err) == GC_OK &&
			  gc_seed_batched_cpu(&a, &fa, &params, 5, ca, &err) == GC_OK &&
			  gc_seed_batched_cpu(&b, &fb, &params, 5, cb, &err) == GC_OK,
			  "batched greedy k-means++ runs", config);
		for (int c = 0; c < k; c++)
		{
			same &= memcmp(gc_rows_get(&a, ca[c]), gc_rows_get(&b, cb[c]), sizeof(double) * d) == 0;
			distinct &= !seen[ca[c]];
			seen[ca[c]] = 1;
		}
		check(same, "shuffled rows give the same batched picks", config);
		check(distinct, "batched greedy k-means++ picks distinct rows", config);
		for (uint64_t seed = 0; !weighted && seed < 4; seed++)
		{
			check(gc_seed_batched_cpu(&a, &fa, &params, seed, ca, &err) == GC_OK &&
				  gc_seed_kmeanspp_cpu(&a, &fa, &params, seed, cb, &err) == GC_OK,
				  "both seedings run", config);
			total[0] += fit_from(&a, ca, k);
			total[1] += fit_from(&a, cb, k);
		}
		free(seen);
		gc_frame_release(&fa);
		gc_frame_release(&fb);
		gc_rows_release(&a);
		gc_rows_release(&b);
	}
	printf("blobs n=%d d=%d k=%d, 4 seeds: total inertia batched %.1f greedy %.1f\n",
		   (int) n, d, k, total[0], total[1]);
	snprintf(what, sizeof(what), "batched fits within 1%% of greedy's (%.1f vs %.1f)",
			 total[0], total[1]);
	check(total[0] <= 1.01 * total[1], what, "batched");
	params = parallel_params(GC_BATCHED_MIN_K);
	check(gc_batched_applies(GC_BATCHED_MIN_K) && !gc_batched_applies(GC_BATCHED_MIN_K - 1) &&
		  strcmp(gc_init_name(&params, 100000, 8), "batched kmeans||") == 0,
		  "k-means|| reclusters by batched greedy from GC_BATCHED_MIN_K", "batched");
	params.k = GC_BATCHED_MIN_K - 1;
	check(strcmp(gc_init_name(&params, 100000, 8), "kmeans||") == 0,
		  "below it, as before", "batched");
	check(gc_batched_picks(4096, 0, 0) == 1 && gc_batched_picks(4096, 1, 1) == 32 &&
		  gc_batched_picks(4096, 200, 4090) == 6 && gc_batched_picks(4096, 201, 4096) == 0,
		  "4,096 picks: 1, then up to 32 a step until all are picked", "batched");
	free(centres);
	free(x);
	free(w);
	free(order);
	free(ca);
	free(cb);
}

/*
 * A step's picks kept: each unless a kept one before it is nearer to it
 * than its D^2 (gc_batched_keep); at D^2 exactly, kept
 */
static void
test_batched_keep(void)
{
	double		x[] = {0, 0, 1, 0, 10, 0, 10.5, 0, 20, 0};
	double		mind2[] = {4, 4, 4, 0.25, 100};
	int64_t		picks[] = {0, 1, 2, 3, 4};
	GcRows		rows;
	int			kept;

	load_weighted(&rows, x, 5, 2, NULL, NULL, plain_alloc, free);
	kept = gc_batched_keep_picks(&rows, mind2, picks, 5);
	check(kept == 3 && picks[0] == 0 && picks[1] == 2 && picks[2] == 3,
		  "picks 0, 2, 3 kept: 1 nearer to 0 than its D^2, 4 to 3; 3 at its D^2 from 2",
		  "batched keep");
	gc_rows_release(&rows);
}

/* Fewer distinct rows than k: the seeding ends, with every distinct row chosen */
static void
test_duplicates(void)
{
	double		x[120];
	GcRows		rows;
	GcKmeansParams params = parallel_params(8);
	int64_t		chosen[8];
	bool		seen[3] = {false};
	bool		ok;

	for (int i = 0; i < 60; i++)
	{
		x[i * 2] = (double) (i % 3);
		x[i * 2 + 1] = -1.0;
	}
	load_weighted(&rows, x, 60, 2, NULL, NULL, plain_alloc, free);
	ok = seed_cpu(&rows, &params, 3, chosen) == GC_OK;
	for (int c = 0; c < 8; c++)
		seen[(int) gc_rows_get(&rows, chosen[c])[0]] = true;
	check(ok && seen[0] && seen[1] && seen[2], "three distinct rows, k = 8: all three chosen",
		  "duplicates");
	gc_rows_release(&rows);
}

/*
 * Fewer distinct rows than k at a batched k (each row twice): the
 * recluster takes greedy's way, and every distinct row is chosen
 */
static void
test_batched_duplicates(void)
{
	int			distinct = 3000,
				k = GC_BATCHED_MIN_K;
	double	   *x = malloc(sizeof(double) * 2 * distinct * 2);
	char	   *seen = calloc(distinct, 1);
	int64_t    *chosen = malloc(sizeof(int64_t) * k);
	GcRows		rows;
	GcKmeansParams params = parallel_params(k);
	bool		ok,
				all = true;

	for (int i = 0; i < 2 * distinct; i++)
	{
		x[i * 2] = (double) (i % distinct);
		x[i * 2 + 1] = (double) ((i % distinct) % 7);
	}
	load_weighted(&rows, x, 2 * distinct, 2, NULL, NULL, plain_alloc, free);
	ok = seed_cpu(&rows, &params, 3, chosen) == GC_OK;
	for (int c = 0; ok && c < k; c++)
		seen[(int) gc_rows_get(&rows, chosen[c])[0]] = 1;
	for (int i = 0; i < distinct; i++)
		all &= seen[i] != 0;
	check(ok && all && !gc_batched_recluster(k, distinct) && gc_batched_recluster(k, k),
		  "3,000 distinct rows, k = 4,096: all of them chosen", "batched duplicates");
	gc_rows_release(&rows);
	free(x);
	free(seen);
	free(chosen);
}

static int	polls;

static bool
interrupt_soon(void)
{
	return ++polls > 3;
}

/*
 * A cancel during the rounds stops the seeding with GC_INTERRUPTED; the
 * hook is polled by work (GC_POLL_WORK units), so the rows are wide enough
 * for several polls: 5 rounds of 20,000 rows against ~10 samples of 64
 */
static void
test_cancel(void)
{
	double		centres[10 * 64];
	double	   *x = make_data(20000, 64, 10, 2.0, centres, NULL);
	GcRows		rows;
	GcKmeansParams params = parallel_params(10);
	int64_t		chosen[10];

	params.interrupted = interrupt_soon;
	load_weighted(&rows, x, 20000, 64, NULL, NULL, plain_alloc, free);
	polls = 0;
	check(seed_cpu(&rows, &params, 1, chosen) == GC_INTERRUPTED, "cancel stops k-means||", "cancel");
	gc_rows_release(&rows);
	free(x);
}

#ifdef GC_WITH_CUDA
/*
 * The GPU chooses the same rows as the CPU, weighted or not: on blobs, and
 * on rows that nearly repeat one another (patterns, the shapes' fourth
 * number, plus noise of 10^-3 against norms of 8), which both tensor
 * passes doubt and the exact check settles among the samples near each
 * row (tensor/centroid_separations.cu)
 */
static void
test_gpu_equals_cpu(void)
{
	static const int shapes[][4] = {{5000, 2, 40, 0}, {20000, 17, 100, 0}, {3000, 200, 30, 0},
	{4000, 3, 300, 0}, {2000, 64, 1, 0}, {6000, 48, 200, 120}, {2500, 768, 120, 80},
	/* k-means|| with the batched recluster (GC_BATCHED_MIN_K) */
	{24000, 4, 4096, 0}, {12000, 40, 5000, 600}, {20000, 130, 4096, 0}};
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("GPU k-means|| not tested: %s\n", why);
		return;
	}
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			n = shapes[s][0],
					d = shapes[s][1],
					k = shapes[s][2];
		int			patterns = shapes[s][3];
		double	   *centres = malloc(sizeof(double) * (k / 2 + 1) * d);
		double	   *x = patterns > 0 ? make_near_duplicates(n, d, patterns, 1e-3) :
			make_data(n, d, k / 2 + 1, 2.0, centres, NULL);
		double	   *w = malloc(sizeof(double) * n);

		for (int i = 0; i < n; i++)
			w[i] = 1.0 + floor(uniform() * 7.0);
		for (int weighted = 0; weighted < 2; weighted++)
		{
			GcRows		rows;
			GcFrame		frame = {0};
			GcError		err = {0};
			GcKmeansParams params = parallel_params(k);
			int64_t    *cpu = malloc(sizeof(int64_t) * k);
			int64_t    *gpu = malloc(sizeof(int64_t) * k);
			void	   *session = NULL;
			char		config[160];

			load_weighted(&rows, x, n, d, NULL, weighted ? w : NULL, gc_cuda_host_alloc,
						  gc_cuda_host_free);
			gc_frame_init(&frame, &rows, &err);
			if (gc_kmeans_cuda_backend.open(&rows, &frame, &params, &session, &err) != GC_OK)
				check(false, err.message, "open");
			for (uint64_t seed = 0; session != NULL && seed < 3; seed++)
			{
				bool		same = true;
				double		t0 = gc_now_ms(),
							cpu_ms,
							gpu_ms;

				check(gc_seed_kmeans_parallel_cpu(&rows, &frame, &params, seed, cpu, &err) == GC_OK,
					  "CPU k-means|| runs", "gpu");
				cpu_ms = gc_now_ms() - t0;
				t0 = gc_now_ms();
				check(gc_kmeans_cuda_backend.seed_kmeans_parallel(session, &params, seed, gpu,
																   &err) == GC_OK,
					  err.message[0] ? err.message : "GPU k-means|| runs", "gpu");
				gpu_ms = gc_now_ms() - t0;
				for (int c = 0; c < k; c++)
					same &= cpu[c] == gpu[c];
				snprintf(config, sizeof(config),
						 "n=%d d=%d k=%d%s weighted=%d seed=%d; %.1f ms CPU, %.1f ms GPU",
						 n, d, k, patterns > 0 ? " near-duplicates" : "", weighted, (int) seed,
						 cpu_ms, gpu_ms);
				check(same, "GPU k-means|| = CPU k-means||", config);
				if (seed == 0)
					printf("GPU k-means|| = CPU: %s\n", config);
			}
			if (session != NULL)
				gc_kmeans_cuda_backend.close(session);
			gc_frame_release(&frame);
			gc_rows_release(&rows);
			free(cpu);
			free(gpu);
		}
		free(centres);
		free(x);
		free(w);
	}
}

/* GPU fits of the N x D rows x, as float32, seeded by each init named: one JSON line each */
static void
gpu_bench(double *x, int64_t n, int d, int k, int ninit, char **inits)
{
	GcRows		rows;
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		exit(1);
	}
	for (int64_t e = 0; e < n * d; e++)
		x[e] = (double) (float) x[e];
	load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	free(x);
	for (int i = 0; i < ninit; i++)
	{
		GcKmeansParams params = parallel_params(k);
		GcKmeansResult result = {0};
		GcError		err = {0};

		params.init = strcmp(inits[i], "kmeans||") == 0 ? GC_INIT_KMEANS_PARALLEL :
			GC_INIT_KMEANSPP;
		params.init_candidates = strcmp(inits[i], "plain") == 0 ? 1 :
			strcmp(inits[i], "greedy") == 0 ? 2 + (int) floor(log((double) k)) : 0;
		params.max_iter = 20;
		params.tol = 0.0;
		result.centroids = malloc(sizeof(double) * k * d);
		result.sizes = malloc(sizeof(int64_t) * k);
		if (gc_kmeans_fit(&gc_kmeans_cuda_backend, &rows, &params, &result, &err) != GC_OK)
			printf("fit failed: %s\n", err.message);
		else
			printf("{\"n\": %lld, \"d\": %d, \"k\": %d, \"init\": \"%s\", \"ran\": \"%s\", "
				   "\"seeding_ms\": %.1f, \"rounds_ms\": %.1f, \"weights_ms\": %.1f, "
				   "\"recluster_ms\": %.1f, \"iterations\": %d, \"iterations_ms\": %.1f, "
				   "\"transfer_ms\": %.1f, \"kernel\": \"%s\", \"exact_checked\": %.4f, "
				   "\"inertia\": %.10g}\n",
				   (long long) n, d, k, inits[i], result.init, result.timings.seeding_ms,
				   result.timings.seeding.rounds_ms, result.timings.seeding.weights_ms,
				   result.timings.seeding.recluster_ms,
				   result.iterations, result.timings.iterations_ms, result.timings.transfer_ms,
				   result.kernel ? result.kernel : "?", result.exact_fraction, result.inertia);
		fflush(stdout);
		free(result.centroids);
		free(result.sizes);
	}
	gc_rows_release(&rows);
}
#endif

int
main(int argc, char **argv)
{
#ifdef GC_WITH_CUDA
	/* gpu-bench N D K INIT...: Gaussian blobs of variance 0.01 */
	if (argc >= 6 && strcmp(argv[1], "gpu-bench") == 0)
	{
		int64_t		n = atoll(argv[2]);
		int			d = atoi(argv[3]),
					k = atoi(argv[4]);

		gpu_bench(make_gaussian(n, d, k, 0.01), n, d, k, argc - 5, argv + 5);
		return 0;
	}
	/* gpu-bench-near N D K PATTERNS NOISE INIT...: rows that nearly repeat one another */
	if (argc >= 8 && strcmp(argv[1], "gpu-bench-near") == 0)
	{
		int64_t		n = atoll(argv[2]);
		int			d = atoi(argv[3]),
					k = atoi(argv[4]);

		gpu_bench(make_near_duplicates(n, d, atoi(argv[5]), atof(argv[6])), n, d, k,
				  argc - 7, argv + 7);
		return 0;
	}
#endif
	rng_state = 20121;
#ifdef GC_WITH_CUDA
	/* gpu-equal N: the GPU = CPU comparison alone, N times over fresh blobs (a stress run) */
	if (argc == 3 && strcmp(argv[1], "gpu-equal") == 0)
	{
		for (int r = atoi(argv[2]); r > 0; r--)
			test_gpu_equals_cpu();
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
#endif
	test_rule();
	test_phases();
	test_against_naive();
	test_order_independence();
	test_duplicates();
	test_batched_duplicates();
	test_cancel();
	test_quality();
	test_batched();
	test_batched_keep();
#ifdef GC_WITH_CUDA
	test_gpu_equals_cpu();
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
