/*-------------------------------------------------------------------------
 *
 * large_k_test.c
 *	  Tests of the large-k stages (engine/kmeans_levels.c,
 *	  engine/kmeans_balance.c): the balance bound holds and its model is
 *	  consistent (sizes, labels, inertia), the fine shares, two-level
 *	  fits' parents, determinism, inertia against a flat fit, and on a
 *	  GPU the same models as the CPU's, to the bit.
 *
 * IDENTIFICATION
 *	  test/engine/large_k_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kmeans_stages.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* Threads of the CPU passes (params.cpu_threads): 0, every core */
static int	fit_threads = 0;

/* A fit of k with the large-k options given */
static Fit
large_fit(const GcKmeansBackend *backend, GcRows *rows, int k, int levels, int refine_iter,
		  int64_t max_size, double factor, int32_t *parents, GcError *err)
{
	Fit			f;
	GcKmeansParams params = one_restart_params(k, GC_INIT_KMEANSPP, 100, 1e-4);

	params.seed = 11;
	params.levels = levels;
	params.refine_iter = refine_iter;
	params.max_cluster_size = max_size;
	params.max_cluster_size_factor = factor;
	params.cpu_threads = fit_threads;
	f = new_fit(k, rows);
	f.result.parents = parents;
	f.status = gc_kmeans_fit(backend, rows, &params, &f.result, err);
	return f;
}

/*
 * The model's sizes count its labels, its inertia is the labels' squared
 * distances, and no size passes cap (0: any)
 */
static void
check_consistent(const Fit *f, const GcRows *rows, int k, int64_t cap, const char *config)
{
	int64_t    *count = calloc(k, sizeof(int64_t));
	double		inertia = 0.0;
	int64_t		largest = 0;
	bool		same = true;

	for (int64_t i = 0; i < rows->n; i++)
	{
		const double *x = gc_rows_get(rows, i);
		const double *c = f->centroids + (size_t) f->labels[i] * rows->d;

		count[f->labels[i]]++;
		for (int j = 0; j < rows->d; j++)
			inertia += (x[j] - c[j]) * (x[j] - c[j]);
	}
	for (int c = 0; c < k; c++)
	{
		same &= count[c] == f->sizes[c];
		largest = f->sizes[c] > largest ? f->sizes[c] : largest;
	}
	check(same, "sizes count the labels", config);
	check(fabs(inertia - f->result.inertia) <= 1e-9 * inertia, "inertia is the labels' squared distances",
		  config);
	check(largest == f->result.size_max, "size_max is the largest size", config);
	if (cap > 0)
		check(largest <= cap, "no cluster passes the bound", config);
	free(count);
}

static bool
same_fit(const Fit *a, const Fit *b, int64_t n, int k, int d)
{
	return a->status == GC_OK && b->status == GC_OK &&
		memcmp(a->centroids, b->centroids, sizeof(double) * k * d) == 0 &&
		memcmp(a->sizes, b->sizes, sizeof(int64_t) * k) == 0 &&
		memcmp(a->labels, b->labels, sizeof(int32_t) * n) == 0 &&
		a->result.inertia == b->result.inertia;
}

/* Skewed data: most rows in one blob, a few spread */
static double *
make_skewed(int64_t n, int d)
{
	double	   *x = malloc(sizeof(double) * n * d);

	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			x[i * d + j] = i % 5 != 0 ? normal() : 20.0 * uniform() - 10.0;
	return x;
}

static void
test_shares(void)
{
	int64_t		sizes[4] = {5, 0, 95, 1};
	int			shares[4];
	int64_t		tight[3] = {2, 2, 2};
	int			tight_shares[3];

	gc_kmeans_fine_shares(sizes, 4, 10, shares);
	check(shares[0] == 1 && shares[1] == 0 && shares[2] == 8 && shares[3] == 1,
		  "shares 5, 0, 95, 1 rows of 10: 1, 0, 8, 1", "shares");
	gc_kmeans_fine_shares(tight, 3, 6, tight_shares);
	check(tight_shares[0] == 2 && tight_shares[1] == 2 && tight_shares[2] == 2,
		  "k = n: every row its own cluster", "shares");
	check(gc_kmeans_coarse_k(4096) == 64 && gc_kmeans_coarse_k(1) == 1 &&
		  gc_kmeans_coarse_k(65536) == 256 && gc_kmeans_coarse_k(2) == 1,
		  "coarse k is the rounded square root", "shares");
}

static void
test_balance(void)
{
	int64_t		n = 4000;
	int			d = 4,
				k = 20;
	double	   *x = make_skewed(n, d);
	GcRows		rows;
	GcError		err = {0};
	Fit			plain,
				a,
				b,
				f,
				bad;
	int64_t		cap = 240;		/* 1.2 n / k */

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	plain = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, 0, 0.0, NULL, &err);
	a = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, cap, 0.0, NULL, &err);
	b = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, cap, 0.0, NULL, &err);
	f = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, 0, 1.2, NULL, &err);
	check(plain.status == GC_OK && plain.result.size_max > cap,
		  "the unbalanced fit has a cluster past the bound", "balance");
	check(a.status == GC_OK && a.result.balance_moves > 0 && a.result.balance_rounds >= 1 &&
		  a.result.max_cluster_size == cap, "the balanced fit moved rows", "balance");
	check_consistent(&a, &rows, k, cap, "balance max_cluster_size 240");
	check(a.result.inertia >= plain.result.inertia &&
		  a.result.inertia < 2.0 * plain.result.inertia,
		  "balanced inertia is above the unbalanced, within twice it", "balance");
	check(a.result.size_cv < plain.result.size_cv, "the balanced sizes spread less", "balance");
	check(same_fit(&a, &b, n, k, d), "the same seed gives the same balanced model", "balance");

	check(same_fit(&a, &f, n, k, d) && f.result.max_cluster_size == cap,
		  "factor 1.2 bounds as max_cluster_size 240 does", "balance");
	bad = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, 199, 0.0, NULL, &err);
	check(bad.status == GC_ERR_RANGE, "a bound below n / k is refused", "balance");
	free_fit(&plain);
	free_fit(&a);
	free_fit(&b);
	free_fit(&f);
	free_fit(&bad);

	/* the tightest bound: every cluster exactly n / k */
	err.status = GC_OK;
	a = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, n / k, 0.0, NULL, &err);
	check(a.status == GC_OK && a.result.size_min == n / k && a.result.size_max == n / k &&
		  a.result.size_cv == 0.0, "bound n / k: every cluster holds n / k rows", "balance");
	check_consistent(&a, &rows, k, n / k, "balance max_cluster_size n / k");
	free_fit(&a);
	gc_rows_release(&rows);
	free(x);
}

static void
test_two_level(void)
{
	int64_t		n = 20000;
	int			d = 8,
				k = 100;
	double	   *x = make_gaussian(n, d, 40, 0.002);
	GcRows		rows;
	GcError		err = {0};
	int32_t    *pa = malloc(sizeof(int32_t) * k),
			   *pb = malloc(sizeof(int32_t) * k),
			   *pc = malloc(sizeof(int32_t) * k);
	Fit			flat,
				a,
				b,
				none,
				bal;
	bool		ordered = true;
	int64_t		children[10] = {0};
	char		msg[128];

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	flat = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, 0, 0.0, NULL, &err);
	a = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 2, 0, 0.0, pa, &err);
	b = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 2, 0, 0.0, pb, &err);
	none = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 0, 0, 0.0, NULL, &err);
	check(a.status == GC_OK && a.result.coarse_k == 10, "two levels of 100: 10 coarse clusters",
		  "two-level");
	for (int c = 0; c < k; c++)
	{
		ordered &= pa[c] >= 0 && pa[c] < 10 && (c == 0 || pa[c] >= pa[c - 1]);
		if (pa[c] >= 0 && pa[c] < 10)
			children[pa[c]]++;
	}
	check(ordered, "parents within the coarse clusters, grouped in their order", "two-level");
	for (int j = 0; j < 10; j++)
		ordered &= children[j] >= 1;
	check(ordered, "every coarse cluster has a fine one", "two-level");
	check(same_fit(&a, &b, n, k, d) && memcmp(pa, pb, sizeof(int32_t) * k) == 0,
		  "the same seed gives the same two-level model and parents", "two-level");
	check_consistent(&a, &rows, k, 0, "two-level");
	check_consistent(&none, &rows, k, 0, "two-level refine_iter 0");
	check(a.result.inertia <= none.result.inertia,
		  "refining does not raise the inertia", "two-level");
	snprintf(msg, sizeof(msg), "two-level inertia within 1.15 of flat (%.4f)",
			 a.result.inertia / flat.result.inertia);
	check(a.result.inertia <= 1.15 * flat.result.inertia, msg, "two-level");
	check(a.result.timings.coarse_ms > 0.0 && a.result.timings.split_ms > 0.0 &&
		  a.result.timings.refine_ms > 0.0, "each phase is timed", "two-level");

	/* two levels and a bound */
	bal = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 2, 0, 1.1, pc, &err);
	check(bal.status == GC_OK && memcmp(pa, pc, sizeof(int32_t) * k) == 0,
		  "balancing keeps the parents", "two-level balanced");
	check_consistent(&bal, &rows, k, 220, "two-level balanced");
	/* 20,000 rows against 100 centroids: blocks on every core where there are several */
	free_fit(&b);
	fit_threads = 1;
	b = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 2, 0, 1.1, NULL, &err);
	fit_threads = 0;
	check(same_fit(&bal, &b, n, k, d) && bal.result.balance_moves == b.result.balance_moves &&
		  bal.result.balance_moves > 0,
		  "one thread gives the same balanced model as every core", "two-level balanced");
	free_fit(&flat);
	free_fit(&a);
	free_fit(&b);
	free_fit(&none);
	free_fit(&bal);
	free(pa);
	free(pb);
	free(pc);
	gc_rows_release(&rows);
	free(x);
}

#ifdef GC_WITH_CUDA
/* The GPU's balanced and two-level models are the CPU's, to the bit */
static void
test_gpu(void)
{
	int64_t		n = 100000;
	int			d = 16,
				k = 256;
	double	   *x = make_gaussian(n, d, 64, 0.002);
	GcRows		rows;
	GcError		err = {0};
	int32_t    *pc = malloc(sizeof(int32_t) * k),
			   *pg = malloc(sizeof(int32_t) * k);
	Fit			c,
				g;

	load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	c = large_fit(&gc_kmeans_cpu_backend, &rows, k, 1, 0, 0, 1.05, NULL, &err);
	g = large_fit(&gc_kmeans_cuda_backend, &rows, k, 1, 0, 0, 1.05, NULL, &err);
	check(same_fit(&c, &g, n, k, d) && c.result.balance_moves == g.result.balance_moves,
		  "GPU balanced model equals the CPU's", "gpu balance");
	free_fit(&c);
	free_fit(&g);
	c = large_fit(&gc_kmeans_cpu_backend, &rows, k, 2, 2, 0, 1.05, pc, &err);
	g = large_fit(&gc_kmeans_cuda_backend, &rows, k, 2, 2, 0, 1.05, pg, &err);
	check(same_fit(&c, &g, n, k, d) && memcmp(pc, pg, sizeof(int32_t) * k) == 0,
		  "GPU two-level balanced model and parents equal the CPU's", "gpu two-level");
	free_fit(&c);
	free_fit(&g);
	free(pc);
	free(pg);
	gc_rows_release(&rows);
	free(x);
}
#endif

#ifdef GC_WITH_CUDA
/* The GPU's models, where a GPU is usable */
static void
test_gpu_if_usable(void)
{
	char		why[256];

	if (gc_cuda_use_device(0, why, sizeof(why)))
		test_gpu();
	else
		printf("no GPU: %s (GPU large-k checks not run)\n", why);
}
#endif

int
main(int argc, char **argv)
{
	static void (*const cases[]) (void) = {
		test_shares, test_balance, test_two_level,
#ifdef GC_WITH_CUDA
		test_gpu_if_usable,
#endif
	};

	return run_cases(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
