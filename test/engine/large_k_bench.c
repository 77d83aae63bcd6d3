/*-------------------------------------------------------------------------
 *
 * large_k_bench.c
 *	  Times a flat fit against a two-level fit (engine/kmeans_levels.c)
 *	  of the same generated rows, on the CPU or the GPU, and prints each
 *	  phase, the inertia of both and their ratio: the engine's side of
 *	  bench/large_k.py.
 *
 *	  large_k_bench N D K [cpu|gpu] [MAX_ITER] [REFINE_ITER] [FACTOR]
 *
 *	  Rows: N Gaussian rows around K / 4 centres in [0, 1]^D (variance
 *	  0.01).  Both fits: seed 1, init auto, MAX_ITER iterations at most
 *	  (default 20) per fit, tol 1e-4; two levels with REFINE_ITER (default
 *	  2).  FACTOR > 0 balances both to ceil(FACTOR N / K).  One line of
 *	  key=value per fit, then the ratios.
 *
 * IDENTIFICATION
 *	  test/engine/large_k_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef struct Run
{
	GcKmeansResult result;
	double		wall_ms;
} Run;

/* One fit of k, one level or two, timed */
static Run
run_fit(const GcKmeansBackend *backend, GcRows *rows, int k, int levels, int max_iter,
		int refine_iter, double factor)
{
	GcKmeansParams params = one_restart_params(k, GC_INIT_AUTO, max_iter, 1e-4);
	GcError		err = {0};
	Run			run;
	double		t0;

	params.seed = 1;
	params.levels = levels;
	params.refine_iter = refine_iter;
	params.max_cluster_size_factor = factor;
	memset(&run, 0, sizeof(run));
	run.result.centroids = malloc(sizeof(double) * k * rows->d);
	run.result.sizes = malloc(sizeof(int64_t) * k);
	t0 = gc_now_ms();
	if (gc_kmeans_fit(backend, rows, &params, &run.result, &err) != GC_OK)
	{
		fprintf(stderr, "fit failed: %s\n", err.message);
		exit(1);
	}
	run.wall_ms = gc_now_ms() - t0;
	return run;
}

static void
print_run(const char *name, const Run *r)
{
	const GcKmeansTimings *t = &r->result.timings;

	printf("%s wall_ms=%.1f transfer_ms=%.1f seeding_ms=%.1f iterations_ms=%.1f "
		   "coarse_ms=%.1f split_ms=%.1f refine_ms=%.1f balance_ms=%.1f "
		   "iterations=%d coarse_k=%d inertia=%.9g size_max=%lld size_cv=%.4f init=\"%s\"\n",
		   name, r->wall_ms, t->transfer_ms, t->seeding_ms, t->iterations_ms, t->coarse_ms,
		   t->split_ms, t->refine_ms, t->balance_ms, r->result.iterations, r->result.coarse_k,
		   r->result.inertia, (long long) r->result.size_max, r->result.size_cv,
		   r->result.init ? r->result.init : "?");
}

int
main(int argc, char **argv)
{
	int64_t		n;
	int			d,
				k,
				max_iter,
				refine_iter;
	double		factor;
	const GcKmeansBackend *backend = &gc_kmeans_cpu_backend;
	GcHostAlloc alloc = plain_alloc;
	GcHostFree	free_fn = free;
	GcRows		rows;
	double	   *x;
	Run			flat,
				two;

	if (argc < 4)
	{
		fprintf(stderr, "usage: %s N D K [cpu|gpu] [MAX_ITER] [REFINE_ITER] [FACTOR]\n", argv[0]);
		return 2;
	}
	n = atoll(argv[1]);
	d = atoi(argv[2]);
	k = atoi(argv[3]);
	max_iter = argc > 5 ? atoi(argv[5]) : 20;
	refine_iter = argc > 6 ? atoi(argv[6]) : 2;
	factor = argc > 7 ? atof(argv[7]) : 0.0;
	if (argc > 4 && strcmp(argv[4], "gpu") == 0 &&
		!bench_gpu_backends(&backend, NULL, &alloc, &free_fn))
		return 1;
	rng_state = 42;
	x = make_gaussian(n, d, k / 4 > 0 ? k / 4 : 1, 0.01);
	load_rows(&rows, x, n, d, NULL, alloc, free_fn);
	printf("n=%lld d=%d k=%d device=%s max_iter=%d refine_iter=%d factor=%g\n",
		   (long long) n, d, k, backend->name, max_iter, refine_iter, factor);
	flat = run_fit(backend, &rows, k, 1, max_iter, refine_iter, factor);
	print_run("flat", &flat);
	two = run_fit(backend, &rows, k, 2, max_iter, refine_iter, factor);
	print_run("two_level", &two);
	printf("speedup=%.2f inertia_ratio=%.4f\n", flat.wall_ms / two.wall_ms,
		   two.result.inertia / flat.result.inertia);
	gc_rows_release(&rows);
	free(x);
	return 0;
}
