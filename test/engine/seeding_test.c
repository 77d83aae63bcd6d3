/*-------------------------------------------------------------------------
 *
 * seeding_test.c
 *	  Engine tests of k-means++ seeding, greedy and plain, without a
 *	  server: the CPU seeding against a naive reference written from the
 *	  definition (weighted rows included), independence from row order,
 *	  copies of a row drawn by their number (row_copies.c), greedy's
 *	  quality against plain's, and, where a GPU is usable, the
 *	  GPU's chosen rows against the CPU's.
 *
 *	  seeding_test fit FILE K N_INIT SEED CANDIDATES [TOL [INIT]]
 *	  fits k-means on the CPU to FILE (rows of whitespace-separated
 *	  numbers) and prints the inertia and timings (a JSON line), then the
 *	  centroids (lines "centroid x1 ... xd"), for
 *	  bench/seeding_quality.py; N_INIT 0 prints the seeding's own cost
 *	  (sum of squared distances to the nearest chosen row) instead.
 *	  INIT kmeans|| seeds with k-means|| (CANDIDATES: its recluster's).
 *
 * IDENTIFICATION
 *	  test/engine/seeding_test.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

static int	passed,
			failed;

static void
check(bool ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAILED: %s\n", what);
	}
}

/* xorshift64*: the tests' own deterministic generator */
static uint64_t rng_state = 88172645463325252ULL;

static double
uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double) ((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double
gaussian(void)
{
	double		u = uniform() + 1e-300,
				v = uniform();

	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/*
 * n rows in d dimensions around `clusters` centres on a grid-like layout
 * (centres spread over [0, 100)^d, spread sigma), rounded to 1/64 so that
 * values are exact in any order
 */
static double *
make_blobs(int64_t n, int d, int clusters, double sigma)
{
	double	   *centres = malloc(sizeof(double) * clusters * d);
	double	   *x = malloc(sizeof(double) * n * d);

	for (int c = 0; c < clusters * d; c++)
		centres[c] = floor(uniform() * 100.0);
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (uniform() * clusters);

		for (int j = 0; j < d; j++)
			x[i * d + j] = round((centres[c * d + j] + sigma * gaussian()) * 64.0) / 64.0;
	}
	free(centres);
	return x;
}

/* rows (in the order given by order, when not NULL), weighted when weights is not NULL */
static void
load_rows(GcRows *rows, const double *x, int64_t n, int d, const int64_t *order,
		  const double *weights, GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	if (weights)
		gc_rows_set_weighted(rows);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		src = order ? order[i] : i;
		double	   *slot = gc_rows_reserve(rows, &err);

		memcpy(slot, x + src * d, sizeof(double) * d);
		if (weights)
			gc_rows_commit_weighted(rows, weights[src]);
		else
			gc_rows_commit(rows);
	}
}

static int64_t *
shuffled_order(int64_t n)
{
	int64_t    *order = malloc(sizeof(int64_t) * n);

	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) (uniform() * (i + 1));
		int64_t		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

static GcKmeansParams
seeding_params(int k, int candidates)
{
	GcKmeansParams params = {0};

	params.k = k;
	params.max_iter = 300;
	params.tol = 1e-4;
	params.init = GC_INIT_KMEANSPP;
	params.init_candidates = candidates;
	params.n_init = 1;
	return params;
}

static GcStatus
seed_cpu(const GcRows *rows, const GcKmeansParams *params, uint64_t seed, int64_t *chosen)
{
	GcFrame		frame = {0};
	GcError		err = {0};
	GcStatus	status = gc_frame_init(&frame, rows, &err);

	if (status == GC_OK)
		status = gc_seed_kmeanspp_cpu(rows, &frame, params, seed, chosen, &err);
	gc_frame_release(&frame);
	return status;
}

/*
 * Greedy k-means++ from its definition, recomputing everything at each
 * step: D^2 as the minimum over all chosen centres, each candidate's
 * race over all rows, its potential as an exact sum
 */
static void
naive_seed(const GcRows *rows, const GcFrame *frame, int k, int candidates,
		   uint64_t seed, int64_t *chosen)
{
	int			d = rows->d;

	for (int t = 0; t < k; t++)
	{
		int			step_candidates = t == 0 ? 1 : candidates;
		int64_t		best_row = -1;
		gc_u128		best_potential = 0;

		for (int j = 0; j < step_candidates; j++)
		{
			uint64_t	best = GC_RACE_NONE;
			int64_t		cand;
			gc_u128		potential = 0;

			for (int64_t i = 0; i < rows->n; i++)
			{
				const double *x = gc_rows_get(rows, i);
				double		w = 1.0;
				uint64_t	key;

				if (t > 0)
				{
					w = INFINITY;
					for (int c = 0; c < t; c++)
						w = fmin(w, gc_sqdist_exact(x, gc_rows_get(rows, chosen[c]), d));
				}
				w = gc_race_weight(w * gc_rows_weight(rows, i), frame->inertia_exp);
				key = gc_race_key(gc_unit_draw(gc_rows_hash(rows, i), seed,
											   gc_seed_stream(t, j)), w, i);
				if (key < best)
					best = key;
			}
			cand = (int64_t) (uint32_t) best;
			for (int64_t i = 0; i < rows->n; i++)
			{
				const double *x = gc_rows_get(rows, i);
				double		d2 = gc_sqdist_exact(x, gc_rows_get(rows, cand), d);

				for (int c = 0; c < t; c++)
					d2 = fmin(d2, gc_sqdist_exact(x, gc_rows_get(rows, chosen[c]), d));
				potential += gc_quantize_wide(d2, frame->inertia_exp) *
					(gc_u128) gc_rows_weight(rows, i);
			}
			if (best_row < 0 || potential < best_potential)
			{
				best_row = cand;
				best_potential = potential;
			}
		}
		chosen[t] = best_row;
	}
}

/* Sum of squared distances of the rows to the nearest of the chosen rows */
static double
seeding_cost(const GcRows *rows, const int64_t *chosen, int k)
{
	double		total = 0.0;

	for (int64_t i = 0; i < rows->n; i++)
	{
		double		best = INFINITY;

		for (int c = 0; c < k; c++)
			best = fmin(best, gc_sqdist_exact(gc_rows_get(rows, i),
											  gc_rows_get(rows, chosen[c]), rows->d));
		total += best * gc_rows_weight(rows, i);
	}
	return total;
}

/* The CPU seeding equals the naive reference, greedy and plain, weighted or not */
static void
test_against_naive(void)
{
	static const int shapes[][3] = {{300, 2, 12}, {200, 7, 9}, {150, 33, 5}, {120, 300, 6}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			n = shapes[s][0],
					d = shapes[s][1],
					k = shapes[s][2];
		double	   *x = make_blobs(n, d, k, 3.0);
		double	   *w = malloc(sizeof(double) * n);

		for (int i = 0; i < n; i++)
			w[i] = 1.0 + floor(uniform() * 5.0);
		for (int weighted = 0; weighted < 2; weighted++)
		{
			static const int candidate_counts[] = {0, 1, 3, 4, 12};
			GcRows		rows;
			GcFrame		frame = {0};
			GcError		err = {0};

			load_rows(&rows, x, n, d, NULL, weighted ? w : NULL, malloc, free);
			gc_frame_init(&frame, &rows, &err);

			for (size_t ci = 0; ci < sizeof(candidate_counts) / sizeof(int); ci++)
			{
				int			candidates = candidate_counts[ci];
				GcKmeansParams params = seeding_params(k, candidates);
				int64_t    *got = malloc(sizeof(int64_t) * k);
				int64_t    *want = malloc(sizeof(int64_t) * k);
				char		what[160];

				for (uint64_t seed = 0; seed < 3; seed++)
				{
					bool		same = true;

					naive_seed(&rows, &frame, k, gc_seed_candidates(&params, rows.n, rows.d), seed, want);
					check(gc_seed_kmeanspp_cpu(&rows, &frame, &params, seed, got, &err) == GC_OK,
						  "CPU seeding runs");
					for (int c = 0; c < k; c++)
						same &= got[c] == want[c];
					snprintf(what, sizeof(what),
							 "CPU seeding = naive reference (n=%d d=%d k=%d candidates=%d weighted=%d seed=%d)",
							 n, d, k, candidates, weighted, (int) seed);
					check(same, what);
				}
				free(got);
				free(want);
			}
			gc_frame_release(&frame);
			gc_rows_release(&rows);
		}
		free(x);
		free(w);
	}
}

/*
 * k-means++ over a float32 store reads its rows widened a block at a time
 * (a sharded GPU fit keeps them so): the same rows as over the store
 * widened whole, plain and greedy, on one thread and several
 */
static void
test_narrow_rows(void)
{
	static const int shapes[][3] = {{20000, 3, 30}, {12000, 40, 25}, {3000, 700, 8}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			n = shapes[s][0],
					d = shapes[s][1],
					k = shapes[s][2];
		double	   *x = make_blobs(n, d, k, 3.0);
		GcRows		narrow,
					wide;
		GcFrame		frame = {0};
		GcError		err = {0};

		/* two float32 stores of the same rows, one widened whole below */
		gc_rows_init(&narrow, d, malloc, free, &err);
		gc_rows_init(&wide, d, malloc, free, &err);
		gc_rows_set_narrow(&narrow);
		gc_rows_set_narrow(&wide);
		for (int64_t i = 0; i < n; i++)
		{
			float	   *a = gc_rows_reserve_narrow(&narrow, &err),
					   *b = gc_rows_reserve_narrow(&wide, &err);

			for (int j = 0; j < d; j++)
				a[j] = b[j] = (float) x[i * d + j];
			gc_rows_commit(&narrow);
			gc_rows_commit(&wide);
		}
		check(gc_rows_widen(&wide, &err) == GC_OK && !wide.narrow, "a store widens");
		gc_frame_init(&frame, &wide, &err);
		for (int candidates = 1; candidates <= 4; candidates += 3)
			for (int threads = 1; threads <= 4; threads += 3)
			{
				GcKmeansParams params = seeding_params(k, candidates);
				int64_t    *got = malloc(sizeof(int64_t) * k);
				int64_t    *want = malloc(sizeof(int64_t) * k);
				char		what[160];

				params.cpu_threads = threads;
				check(gc_seed_kmeanspp_cpu(&wide, &frame, &params, 7, want, &err) == GC_OK &&
					  gc_seed_kmeanspp_cpu(&narrow, &frame, &params, 7, got, &err) == GC_OK,
					  "k-means++ over both stores runs");
				snprintf(what, sizeof(what),
						 "k-means++ over float32 rows = over them widened (n=%d d=%d k=%d "
						 "candidates=%d threads=%d)", n, d, k, candidates, threads);
				check(memcmp(got, want, sizeof(int64_t) * k) == 0, what);
				free(got);
				free(want);
			}
		gc_frame_release(&frame);
		gc_rows_release(&narrow);
		gc_rows_release(&wide);
		free(x);
	}
}

/* The same seed picks the same centres whatever the order of the rows */
static void
test_order_independence(void)
{
	int64_t		n = 3000;
	int			d = 5,
				k = 25;
	double	   *x = make_blobs(n, d, 20, 2.0);
	double	   *w = malloc(sizeof(double) * n);
	int64_t    *order = shuffled_order(n);

	for (int64_t i = 0; i < n; i++)
		w[i] = 1.0 + floor(uniform() * 9.0);
	for (int weighted = 0; weighted < 2; weighted++)
	{
		GcRows		a,
					b;

		load_rows(&a, x, n, d, NULL, weighted ? w : NULL, malloc, free);
		load_rows(&b, x, n, d, order, weighted ? w : NULL, malloc, free);
		for (int candidates = 0; candidates <= 1; candidates++)
		{
			GcKmeansParams params = seeding_params(k, candidates);
			int64_t		ca[25],
						cb[25],
						again[25];
			bool		same = true,
						repeat = true,
						distinct = true;
			char		what[120];

			check(seed_cpu(&a, &params, 11, ca) == GC_OK &&
				  seed_cpu(&b, &params, 11, cb) == GC_OK &&
				  seed_cpu(&a, &params, 11, again) == GC_OK, "seeding runs");
			for (int c = 0; c < k; c++)
			{
				/* b's row cb[c] is a's row order[cb[c]] */
				same &= memcmp(gc_rows_get(&a, ca[c]), gc_rows_get(&b, cb[c]),
							   sizeof(double) * d) == 0;
				repeat &= ca[c] == again[c];
				for (int e = 0; e < c; e++)
					distinct &= ca[e] != ca[c];
			}
			snprintf(what, sizeof(what), "shuffled rows give the same centres (candidates=%d weighted=%d)",
					 candidates, weighted);
			check(same, what);
			snprintf(what, sizeof(what), "seeding is deterministic (candidates=%d weighted=%d)",
					 candidates, weighted);
			check(repeat, what);
			snprintf(what, sizeof(what), "k-means++ picks distinct rows (candidates=%d weighted=%d)",
					 candidates, weighted);
			check(distinct, what);
		}
		gc_rows_release(&a);
		gc_rows_release(&b);
	}
	free(x);
	free(w);
	free(order);
}

/*
 * Greedy seeding beats plain: 20 well-separated blobs, k = 20, over 40
 * seeds: lower mean seeding cost, and every blob found more often
 */
static void
test_greedy_quality(void)
{
	int64_t		n = 4000;
	int			d = 2,
				k = 20;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = malloc(sizeof(double) * n * d);
	int32_t    *blob = malloc(sizeof(int32_t) * n);
	GcRows		rows;
	double		cost[2] = {0, 0};
	int			all_found[2] = {0, 0};
	char		what[160];

	/* a 5 x 4 grid of blobs 10 apart, spread 0.5 */
	for (int c = 0; c < k; c++)
	{
		centres[c * d] = 10.0 * (c % 5);
		centres[c * d + 1] = 10.0 * (c / 5);
	}
	for (int64_t i = 0; i < n; i++)
	{
		blob[i] = (int32_t) (i % k);
		for (int j = 0; j < d; j++)
			x[i * d + j] = round((centres[blob[i] * d + j] + 0.5 * gaussian()) * 64.0) / 64.0;
	}
	load_rows(&rows, x, n, d, NULL, NULL, malloc, free);
	for (int greedy = 0; greedy < 2; greedy++)
	{
		GcKmeansParams params = seeding_params(k, greedy ? 0 : 1);

		for (uint64_t seed = 0; seed < 40; seed++)
		{
			int64_t		chosen[20];
			bool		found[20] = {false};
			int			nfound = 0;

			seed_cpu(&rows, &params, seed, chosen);
			cost[greedy] += seeding_cost(&rows, chosen, k) / 40.0;
			for (int c = 0; c < k; c++)
				found[blob[chosen[c]]] = true;
			for (int c = 0; c < k; c++)
				nfound += found[c];
			all_found[greedy] += nfound == k;
		}
	}
	printf("seeding 20 blobs, 40 seeds: mean cost plain %.1f greedy %.1f, all blobs found plain %d greedy %d\n",
		   cost[0], cost[1], all_found[0], all_found[1]);
	snprintf(what, sizeof(what), "greedy seeding costs less than plain (%.1f < %.1f)", cost[1], cost[0]);
	check(cost[1] < cost[0], what);
	snprintf(what, sizeof(what), "greedy seeding finds every blob more often (%d > %d)",
			 all_found[1], all_found[0]);
	check(all_found[1] > all_found[0], what);
	check(gc_seed_candidates(&(GcKmeansParams) {.k = 20}, 10000, 8) == 4 &&
		  gc_seed_candidates(&(GcKmeansParams) {.k = 1000}, 10000, 8) == 8 &&
		  gc_seed_candidates(&(GcKmeansParams) {.k = 1}, 10000, 8) == 2 &&
		  gc_seed_candidates(&(GcKmeansParams) {.k = 1000, .init_candidates = 3}, 10000, 8) == 3,
		  "2 + floor(ln k) candidates unless init_candidates says");
	check(gc_seed_candidates(&(GcKmeansParams) {.k = 1000}, 1000000, 768) == 1 &&
		  gc_seed_candidates(&(GcKmeansParams) {.k = 1000, .init_candidates = 8}, 1000000, 768) == 8 &&
		  gc_seed_candidates(&(GcKmeansParams) {.k = 1000}, 22369, 768) == 8,
		  "plain k-means++ by default where n k d > 2^34");
	gc_rows_release(&rows);
	free(centres);
	free(x);
	free(blob);
}

/*
 * The GPU's table of distances is taken for greedy seeding over few rows
 * (k-means||'s recluster: ~5k candidates for k = 1,000, 8 candidates a
 * step), not for plain k-means++, more rows than the steps would measure
 * pairwise, or more than GC_GREEDY_TABLE_MAX_ROWS
 */
static void
test_table_rule(void)
{
	check(gc_greedy_table_rows(4857, 1000, 8) == 4857, "table for k-means||'s recluster at k = 1,000");
	check(gc_greedy_table_rows(8000, 1000, 8) == 8000, "table for n = k L");
	check(gc_greedy_table_rows(8001, 1000, 8) == 0, "no table for n > k L");
	check(gc_greedy_table_rows(GC_GREEDY_TABLE_MAX_ROWS + 1, 5000, 8) == 0,
		  "no table over GC_GREEDY_TABLE_MAX_ROWS rows");
	check(gc_greedy_table_rows(100, 1000, 1) == 0, "no table for plain k-means++");
	check(gc_greedy_table_rows(1, 10, 4) == 0, "no table for one row");
}

/* Fewer distinct rows than k: seeding still ends, with every distinct row chosen */
static void
test_duplicates(void)
{
	int64_t		n = 60;
	int			d = 2,
				k = 8;
	double		x[120];
	GcRows		rows;
	GcKmeansParams params = seeding_params(k, 0);
	int64_t		chosen[8];
	bool		seen[3] = {false};
	bool		ok;

	for (int64_t i = 0; i < n; i++)
	{
		x[i * d] = (double) (i % 3);
		x[i * d + 1] = -1.0;
	}
	load_rows(&rows, x, n, d, NULL, NULL, malloc, free);
	ok = seed_cpu(&rows, &params, 3, chosen) == GC_OK;
	for (int c = 0; c < k; c++)
		seen[(int) gc_rows_get(&rows, chosen[c])[0]] = true;
	check(ok && seen[0] && seen[1] && seen[2], "three distinct rows, k = 8: all three chosen");
	gc_rows_release(&rows);
}

/*
 * Copies of a row (row_copies.c): 99 copies of one row against one other
 * row, every seeding's first draw takes the copied row about 99 times in
 * 100 (it took each row half the time when copies drew alike); a row
 * store with no copies keeps its own hashes; and with many copies,
 * shuffled rows still give the same centres
 */
static void
test_copies(void)
{
	double		x[100];
	GcRows		rows,
				a,
				b;
	GcFrame		frame = {0};
	GcError		err = {0};
	int			hits[3] = {0, 0, 0};
	int64_t		n = 4000;
	int			d = 2,
				k = 12;
	double	   *grid = malloc(sizeof(double) * n * d);
	int64_t    *order = shuffled_order(n);
	char		what[160];
	bool		ok = true;

	for (int i = 0; i < 100; i++)
		x[i] = i < 99 ? 0.0 : 1.0;
	load_rows(&rows, x, 100, 1, NULL, NULL, malloc, free);
	check(gc_rows_number_copies(&rows, NULL, &err) == GC_OK && rows.draw_hashes != NULL,
		  "copies numbered");
	gc_frame_init(&frame, &rows, &err);
	for (uint64_t seed = 0; seed < 200; seed++)
	{
		GcKmeansParams params = seeding_params(1, 1);
		int64_t		chosen[1];

		ok &= gc_seed_kmeanspp_cpu(&rows, &frame, &params, seed, chosen, &err) == GC_OK;
		hits[0] += gc_rows_get(&rows, chosen[0])[0] == 0.0;
		ok &= gc_select_random_rows(&rows, 1, seed, chosen, NULL, &err) == GC_OK;
		hits[1] += gc_rows_get(&rows, chosen[0])[0] == 0.0;
		ok &= gc_seed_kmeans_parallel_cpu(&rows, &frame, &params, seed, chosen, &err) == GC_OK;
		hits[2] += gc_rows_get(&rows, chosen[0])[0] == 0.0;
	}
	check(ok, "seeding runs");
	snprintf(what, sizeof(what),
			 "a row of 99 copies drawn by its copies: k-means++ %d, random %d, k-means|| %d of 200",
			 hits[0], hits[1], hits[2]);
	printf("%s\n", what);
	check(hits[0] >= 180 && hits[1] >= 180 && hits[2] >= 180, what);
	gc_frame_release(&frame);
	gc_rows_release(&rows);

	for (int i = 0; i < 100; i++)
		x[i] = i;
	load_rows(&rows, x, 100, 1, NULL, NULL, malloc, free);
	check(gc_rows_number_copies(&rows, NULL, &err) == GC_OK && rows.draw_hashes == NULL,
		  "distinct rows keep their hashes");
	gc_rows_release(&rows);

	/* 4,000 rows on a grid of 25 points: 160 copies each */
	for (int64_t i = 0; i < n * d; i++)
		grid[i] = floor(uniform() * 5.0);
	load_rows(&a, grid, n, d, NULL, NULL, malloc, free);
	load_rows(&b, grid, n, d, order, NULL, malloc, free);
	check(gc_rows_number_copies(&a, NULL, &err) == GC_OK &&
		  gc_rows_number_copies(&b, NULL, &err) == GC_OK, "copies numbered");
	for (int method = 0; method < 3; method++)
	{
		GcKmeansParams params = seeding_params(k, method == 1 ? 1 : 0);
		int64_t		ca[12],
					cb[12];
		bool		same = true;

		gc_frame_init(&frame, &a, &err);
		if (method == 2)
			check(gc_seed_kmeans_parallel_cpu(&a, &frame, &params, 5, ca, &err) == GC_OK &&
				  gc_seed_kmeans_parallel_cpu(&b, &frame, &params, 5, cb, &err) == GC_OK,
				  "k-means|| runs");
		else
			check(gc_seed_kmeanspp_cpu(&a, &frame, &params, 5, ca, &err) == GC_OK &&
				  gc_seed_kmeanspp_cpu(&b, &frame, &params, 5, cb, &err) == GC_OK,
				  "k-means++ runs");
		for (int c = 0; c < k; c++)
			same &= memcmp(gc_rows_get(&a, ca[c]), gc_rows_get(&b, cb[c]), sizeof(double) * d) == 0;
		snprintf(what, sizeof(what), "shuffled copies give the same centres (%s)",
				 method == 0 ? "greedy" : method == 1 ? "plain" : "k-means||");
		check(same, what);
		gc_frame_release(&frame);
	}
	gc_rows_release(&a);
	gc_rows_release(&b);
	free(grid);
	free(order);
}

/* Fits through the driver: greedy's inertia is no worse on blobs, and restarts are deterministic */
static void
test_fit(void)
{
	int64_t		n = 6000;
	int			d = 4,
				k = 30;
	double	   *x = make_blobs(n, d, 30, 1.5);
	GcRows		rows;
	double		inertia[2] = {0, 0};

	load_rows(&rows, x, n, d, NULL, NULL, malloc, free);
	for (int greedy = 0; greedy < 2; greedy++)
		for (uint64_t seed = 0; seed < 5; seed++)
		{
			GcKmeansParams params = seeding_params(k, greedy ? 0 : 1);
			GcKmeansResult result = {0};
			GcError		err = {0};

			params.seed = seed;
			result.centroids = malloc(sizeof(double) * k * d);
			result.sizes = malloc(sizeof(int64_t) * k);
			check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err) == GC_OK,
				  "fit runs");
			inertia[greedy] += result.inertia;
			free(result.centroids);
			free(result.sizes);
		}
	printf("fit n=%d d=%d k=%d, 5 seeds: total inertia plain %.1f greedy %.1f\n",
		   (int) n, d, k, inertia[0], inertia[1]);
	check(inertia[1] <= inertia[0], "greedy seeding's fits are no worse than plain's on blobs");
	gc_rows_release(&rows);
	free(x);
}

#ifdef GC_WITH_CUDA
/*
 * The GPU chooses the same rows as the CPU, greedy and plain, weighted or
 * not, with the candidates' distances kept (candidates <= d) or
 * recomputed (candidates > d)
 */
static void
test_gpu_equals_cpu(void)
{
	/*
	 * 40,000 rows: the potential pass's blocks of 256 threads, which stage
	 * 16 columns at a time (19: a last chunk of 3); fewer rows run blocks
	 * of 64 (64 columns at a time; 200: a last chunk of 8).  1,000 x 3, k
	 * = 400 and 2,000 x 77, k = 300 take the table of distances
	 * (gc_greedy_table_rows) with 3 or more candidates, 2,000 x 77 with a
	 * last tile of 16 rows and a last stage of 13 dimensions
	 */
	static const int shapes[][3] = {{5000, 2, 40}, {20000, 17, 100}, {3000, 200, 30}, {1000, 3, 400},
	{40000, 19, 24}, {2000, 77, 300}};
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("GPU seeding not tested: %s\n", why);
		return;
	}
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			n = shapes[s][0],
					d = shapes[s][1],
					k = shapes[s][2];
		double	   *x = make_blobs(n, d, k / 2 + 1, 2.0);
		double	   *w = malloc(sizeof(double) * n);

		for (int i = 0; i < n; i++)
			w[i] = 1.0 + floor(uniform() * 7.0);
		for (int weighted = 0; weighted < 2; weighted++)
		{
			GcRows		rows;
			GcFrame		frame = {0};
			GcError		err = {0};

			load_rows(&rows, x, n, d, NULL, weighted ? w : NULL,
					  gc_cuda_host_alloc, gc_cuda_host_free);
			/* make_blobs' rows on a grid of 1/64 repeat at small d: their copies draw apart */
			check(gc_rows_number_copies(&rows, NULL, &err) == GC_OK, "copies numbered");
			gc_frame_init(&frame, &rows, &err);
			/* 12 candidates: two passes of the potential kernel per step */
			static const int candidate_counts[] = {0, 1, 3, 12};

			for (size_t ci = 0; ci < sizeof(candidate_counts) / sizeof(int); ci++)
			{
				int			candidates = candidate_counts[ci];
				GcKmeansParams params = seeding_params(k, candidates);
				int64_t    *cpu = malloc(sizeof(int64_t) * k);
				int64_t    *gpu = malloc(sizeof(int64_t) * k);
				void	   *session = NULL;
				char		what[200];

				if (gc_kmeans_cuda_backend.open(&rows, &frame, &params, &session, &err) != GC_OK)
				{
					check(false, err.message);
					break;
				}
				for (uint64_t seed = 0; seed < 3; seed++)
				{
					bool		same = true;
					double		t0 = gc_now_ms(),
								cpu_ms,
								gpu_ms;

					check(gc_seed_kmeanspp_cpu(&rows, &frame, &params, seed, cpu, &err) == GC_OK,
						  "CPU seeding runs");
					cpu_ms = gc_now_ms() - t0;
					t0 = gc_now_ms();
					check(gc_kmeans_cuda_backend.seed_kmeanspp(session, &params, seed, gpu, &err) == GC_OK,
						  err.message[0] ? err.message : "GPU seeding runs");
					gpu_ms = gc_now_ms() - t0;
					for (int c = 0; c < k; c++)
						same &= cpu[c] == gpu[c];
					snprintf(what, sizeof(what),
							 "GPU seeding = CPU seeding (n=%d d=%d k=%d candidates=%d%s weighted=%d seed=%d; %.1f ms CPU, %.1f ms GPU)",
							 n, d, k, gc_seed_candidates(&params, n, d),
							 gc_greedy_table_rows(n, k, gc_seed_candidates(&params, n, d)) > 0 ? " table" : "",
							 weighted, (int) seed, cpu_ms, gpu_ms);
					check(same, what);
					if (seed == 0)
						printf("%s\n", what);
				}
				gc_kmeans_cuda_backend.close(session);
				free(cpu);
				free(gpu);
			}
			gc_frame_release(&frame);
			gc_rows_release(&rows);
		}
		free(x);
		free(w);
	}
}

/* seeding_test gpu-bench N D K: GPU seeding time on random blobs */
static void
gpu_bench(int64_t n, int d, int k, int candidates)
{
	double	   *x = make_blobs(n, d, 50, 5.0);
	GcRows		rows;
	GcFrame		frame = {0};
	GcError		err = {0};
	GcKmeansParams params = seeding_params(k, candidates);
	int64_t    *chosen = malloc(sizeof(int64_t) * k);
	void	   *session = NULL;
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		exit(1);
	}
	load_rows(&rows, x, n, d, NULL, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	free(x);
	gc_frame_init(&frame, &rows, &err);
	if (gc_kmeans_cuda_backend.open(&rows, &frame, &params, &session, &err) != GC_OK)
	{
		printf("open failed: %s\n", err.message);
		exit(1);
	}
	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = gc_now_ms();

		if (gc_kmeans_cuda_backend.seed_kmeanspp(session, &params, rep, chosen, &err) != GC_OK)
		{
			printf("seeding failed: %s\n", err.message);
			exit(1);
		}
		printf("gpu seeding n=%lld d=%d k=%d candidates=%d: %.1f ms\n",
			   (long long) n, d, k, gc_seed_candidates(&params, n, d), gc_now_ms() - t0);
	}
	gc_kmeans_cuda_backend.close(session);
	gc_frame_release(&frame);
	gc_rows_release(&rows);
	free(chosen);
}
#endif

/* seeding_test fit FILE K N_INIT SEED CANDIDATES [TOL [INIT]] */
static int
fit_file(const char *path, int k, int n_init, uint64_t seed, int candidates, double tol,
		 GcInit init)
{
	FILE	   *f = fopen(path, "r");
	char		line[1 << 16];
	GcRows		rows;
	GcError		err = {0};
	GcKmeansParams params = seeding_params(k, candidates);
	GcKmeansResult result = {0};
	int			d = 0;

	params.init = init;

	if (f == NULL)
	{
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), f))
	{
		double		v[1024];
		int			m = 0;
		char	   *p = line,
				   *end;

		while (m < 1024)
		{
			double		value = strtod(p, &end);

			if (end == p)
				break;
			v[m++] = value;
			p = end;
		}
		if (m == 0)
			continue;
		if (d == 0)
		{
			d = m;
			gc_rows_init(&rows, d, malloc, free, &err);
		}
		if (m != d)
		{
			fprintf(stderr, "%s: ragged row\n", path);
			return 1;
		}
		memcpy(gc_rows_reserve(&rows, &err), v, sizeof(double) * d);
		gc_rows_commit(&rows);
	}
	fclose(f);
	if (n_init == 0)
	{
		/* the seeding alone: its cost, the sum of squared distances to the chosen rows */
		int64_t    *chosen = malloc(sizeof(int64_t) * k);

		GcFrame		frame = {0};

		if (gc_frame_init(&frame, &rows, &err) != GC_OK ||
			(init == GC_INIT_KMEANS_PARALLEL ?
			 gc_seed_kmeans_parallel_cpu(&rows, &frame, &params, seed, chosen, &err) :
			 gc_seed_kmeanspp_cpu(&rows, &frame, &params, seed, chosen, &err)) != GC_OK)
			return 1;
		gc_frame_release(&frame);
		printf("{\"k\": %d, \"seed\": %llu, \"candidates\": %d, \"seeding_cost\": %.17g}\n",
			   k, (unsigned long long) seed, gc_seed_candidates(&params, rows.n, rows.d),
			   seeding_cost(&rows, chosen, k));
		for (int c = 0; c < k; c++)
			printf("chosen %lld\n", (long long) chosen[c]);
		free(chosen);
		gc_rows_release(&rows);
		return 0;
	}
	params.n_init = n_init;
	params.seed = seed;
	params.tol = tol;
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	if (gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err) != GC_OK)
	{
		fprintf(stderr, "fit failed: %s\n", err.message);
		return 1;
	}
	printf("{\"n\": %lld, \"d\": %d, \"k\": %d, \"n_init\": %d, \"seed\": %llu, \"candidates\": %d, "
		   "\"init\": \"%s\", \"inertia\": %.17g, \"iterations\": %d, \"seeding_ms\": %.1f, "
		   "\"rounds_ms\": %.1f, \"weights_ms\": %.1f, \"recluster_ms\": %.1f, "
		   "\"iterations_ms\": %.1f}\n",
		   (long long) rows.n, d, k, n_init, (unsigned long long) seed,
		   gc_seed_candidates(&params, rows.n, rows.d), result.init, result.inertia, result.iterations,
		   result.timings.seeding_ms, result.timings.seeding.rounds_ms,
		   result.timings.seeding.weights_ms, result.timings.seeding.recluster_ms,
		   result.timings.iterations_ms);
	for (int c = 0; c < k; c++)
	{
		printf("centroid");
		for (int j = 0; j < d; j++)
			printf(" %.17g", result.centroids[(size_t) c * d + j]);
		printf("\n");
	}
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 7 && strcmp(argv[1], "fit") == 0)
		return fit_file(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 10),
						atoi(argv[6]), argc > 7 ? atof(argv[7]) : 1e-4,
						argc > 8 && strcmp(argv[8], "kmeans||") == 0 ?
						GC_INIT_KMEANS_PARALLEL : GC_INIT_KMEANSPP);
#ifdef GC_WITH_CUDA
	if (argc >= 5 && strcmp(argv[1], "gpu-bench") == 0)
	{
		gpu_bench(atoll(argv[2]), atoi(argv[3]), atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
		return 0;
	}
#endif
	test_against_naive();
	test_narrow_rows();
	test_order_independence();
	test_table_rule();
	test_duplicates();
	test_copies();
	test_greedy_quality();
	test_fit();
#ifdef GC_WITH_CUDA
	test_gpu_equals_cpu();
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
