/*-------------------------------------------------------------------------
 *
 * engine_test.c
 *	  Engine tests without a server: fits k-means on generated blobs with
 *	  the CPU reference and, where a GPU is usable, the CUDA backend, and
 *	  checks that they agree (labels equal, centroids equal to the last
 *	  bit, inertia within 1e-9 relative), that known centres are
 *	  recovered, and that the result does not depend on row order.
 *
 *	  engine_test              run the checks, ending with "N passed, N failed"
 *	  engine_test bench N D K  time one GPU and one CPU fit of N uniform rows
 *
 * IDENTIFICATION
 *	  test/engine/engine_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/gc_engine.h"
#include "../../src/gc_math.h"
#ifdef GC_WITH_CUDA
#include "../../cuda/gc_cuda.h"
#endif

static int	passed,
			failed;

static void
check(int ok, const char *what, const char *config)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAILED: %s [%s]\n", what, config);
	}
}

static uint64_t rng_state;

static double
uniform(void)
{
	rng_state += UINT64_C(0x9e3779b97f4a7c15);
	return (double) (gc_mix64(rng_state) >> 11) / 9007199254740992.0;
}

static double
normal(void)
{
	double		u = uniform() + 1e-300,
				v = uniform();

	return sqrt(-2.0 * log(u)) * cos(2 * M_PI * v);
}

static void *
plain_alloc(size_t bytes)
{
	return malloc(bytes);
}

/* n points around k centres in [-100, 100]^d, or uniform when sigma < 0 */
static double *
make_data(int64_t n, int d, int k, double sigma, double *centres, int *truth)
{
	double	   *x = malloc(sizeof(double) * n * d);

	for (int c = 0; c < k * d; c++)
		centres[c] = -100 + 200 * uniform();
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (i % k);

		if (truth)
			truth[i] = c;
		for (int j = 0; j < d; j++)
			x[i * d + j] = sigma < 0 ? uniform() : centres[c * d + j] + sigma * normal();
	}
	return x;
}

static void
load_rows(GcRows *rows, const double *x, int64_t n, int d, const int64_t *order,
		  GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(rows, &err);

		memcpy(slot, x + (order ? order[i] : i) * d, sizeof(double) * d);
		gc_rows_commit(rows);
	}
}

typedef struct Fit
{
	double	   *centroids;
	int64_t    *sizes;
	int32_t    *labels;
	GcKmeansResult result;
	GcStatus	status;
} Fit;

static Fit
fit(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed)
{
	Fit			f;
	GcKmeansParams params = {0};
	GcError		err = {0};

	params.k = k;
	params.max_iter = 300;
	params.tol = 1e-4;
	params.init = GC_INIT_KMEANSPP;
	params.seed = seed;
	params.n_init = 1;
	f.centroids = malloc(sizeof(double) * k * rows->d);
	f.sizes = malloc(sizeof(int64_t) * k);
	f.labels = malloc(sizeof(int32_t) * rows->n);
	memset(&f.result, 0, sizeof(f.result));
	f.result.centroids = f.centroids;
	f.result.sizes = f.sizes;
	f.result.labels = f.labels;
	f.status = gc_kmeans_fit(backend, rows, &params, &f.result, &err);
	if (f.status != GC_OK)
		printf("fit failed: %s\n", err.message);
	return f;
}

static void
free_fit(Fit *f)
{
	free(f->centroids);
	free(f->sizes);
	free(f->labels);
}

/* Every true cluster maps to one found cluster, and the map is 1-1 */
static int
recovers(const int *truth, const int32_t *labels, int64_t n, int k)
{
	int		   *map = malloc(sizeof(int) * k);
	int		   *used = calloc(k, sizeof(int));
	int			ok = 1;

	for (int c = 0; c < k; c++)
		map[c] = -1;
	for (int64_t i = 0; i < n && ok; i++)
	{
		if (map[truth[i]] < 0)
		{
			map[truth[i]] = labels[i];
			ok = !used[labels[i]]++;
		}
		else
			ok = map[truth[i]] == labels[i];
	}
	free(map);
	free(used);
	return ok;
}

static void
run_case(int64_t n, int d, int k)
{
	char		config[64];
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	int64_t    *reversed = malloc(sizeof(int64_t) * n);
	GcRows		rows,
				rows_rev;
	Fit			cpu,
				cpu_rev;

	snprintf(config, sizeof(config), "n=%lld d=%d k=%d", (long long) n, d, k);
	rng_state = (uint64_t) n * 31 + d * 7 + k;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n; i++)
		reversed[i] = n - 1 - i;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&rows_rev, x, n, d, reversed, plain_alloc, free);

	cpu = fit(&gc_kmeans_cpu_backend, &rows, k, 7);
	check(cpu.status == GC_OK, "cpu fit", config);
	check(cpu.result.converged, "cpu converged", config);
	if (k <= 64)				/* k-means++ finds every blob when they are few */
		check(recovers(truth, cpu.labels, n, k), "cpu recovers the blobs", config);

	cpu_rev = fit(&gc_kmeans_cpu_backend, &rows_rev, k, 7);
	check(memcmp(cpu.centroids, cpu_rev.centroids, sizeof(double) * k * d) == 0,
		  "row order does not change the centroids", config);
	free_fit(&cpu_rev);

#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;
			Fit			gpu;
			int64_t		mismatched = 0;

			load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			gpu = fit(&gc_kmeans_cuda_backend, &pinned, k, 7);
			check(gpu.status == GC_OK, "gpu fit", config);
			for (int64_t i = 0; i < n; i++)
				mismatched += gpu.labels[i] != cpu.labels[i];
			check(mismatched == 0, "gpu labels equal cpu labels", config);
			check(memcmp(cpu.centroids, gpu.centroids, sizeof(double) * k * d) == 0,
				  "gpu centroids equal cpu centroids bit for bit", config);
			check(memcmp(cpu.sizes, gpu.sizes, sizeof(int64_t) * k) == 0,
				  "gpu sizes equal cpu sizes", config);
			check(fabs(gpu.result.inertia - cpu.result.inertia) <= 1e-9 * cpu.result.inertia,
				  "gpu inertia within 1e-9 of cpu", config);
			check(gpu.result.iterations == cpu.result.iterations,
				  "gpu iterations equal cpu iterations", config);
			if (mismatched)
				printf("  %lld labels differ\n", (long long) mismatched);
			free_fit(&gpu);
			gc_rows_release(&pinned);
		}
	}
#endif
	free_fit(&cpu);
	gc_rows_release(&rows);
	gc_rows_release(&rows_rev);
	free(x);
	free(centres);
	free(truth);
	free(reversed);
}

static void
bench(int64_t n, int d, int k)
{
#ifdef GC_WITH_CUDA
	char		why[256];
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x;
	GcRows		rows;
	Fit			gpu;
	double		flops;

	rng_state = 42;
	x = make_data(n, d, k, -1.0, centres, NULL);
	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		return;
	}
	{
		double		t0 = gc_now_ms(),
					t_pinned,
					t_plain;

		load_rows(&rows, x, n, d, NULL, plain_alloc, free);
		t_plain = gc_now_ms() - t0;
		gc_rows_release(&rows);
		t0 = gc_now_ms();
		load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
		t_pinned = gc_now_ms() - t0;
		printf("row store fill n=%lld d=%d: %.1f ms pinned, %.1f ms malloc\n",
			   (long long) n, d, t_pinned, t_plain);
	}
	gpu = fit(&gc_kmeans_cuda_backend, &rows, k, 0);	/* warm-up */
	free_fit(&gpu);
	gpu = fit(&gc_kmeans_cuda_backend, &rows, k, 0);
	flops = 2.0 * n * k * d * gpu.result.iterations;
	printf("gpu n=%lld d=%d k=%d: transfer %.1f ms, seeding %.1f ms, %d iterations in %.1f ms "
		   "(%.3f ms/iteration, labeling %.1f TFLOP/s effective)\n",
		   (long long) n, d, k, gpu.result.timings.transfer_ms,
		   gpu.result.timings.seeding_ms, gpu.result.iterations,
		   gpu.result.timings.iterations_ms,
		   gpu.result.timings.iterations_ms / gpu.result.iterations,
		   flops / (gpu.result.timings.iterations_ms * 1e9));
	free_fit(&gpu);
	gc_rows_release(&rows);
	free(x);
	free(centres);
#else
	printf("built without CUDA\n");
#endif
}

int
main(int argc, char **argv)
{
	static const int dims[] = {1, 2, 3, 8, 17, 32, 33, 64, 128, 512};
	static const int ks[] = {1, 2, 10, 100, 1000};

	if (argc == 5 && strcmp(argv[1], "bench") == 0)
	{
		bench(atoll(argv[2]), atoi(argv[3]), atoi(argv[4]));
		return 0;
	}
	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		run_case(4000, dims[a], 10);
	for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
		run_case(ks[b] * 20 + 100, 4, ks[b]);
	run_case(100000, 8, 100);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
