/*-------------------------------------------------------------------------
 *
 * engine_test.c
 *	  Engine tests without a server: fits k-means on generated blobs with
 *	  the CPU reference and, where a GPU is usable, the CUDA backend, and
 *	  checks that they agree (labels equal, centroids equal to the last
 *	  bit, inertia within 1e-9 relative), that known centres are
 *	  recovered, and that the result does not depend on row order.
 *
 *	  The suites; the harness (checks, generator, data, fits) is in
 *	  harness.c, and the GPU benchmark runner in kmeans_bench.c.
 *	  engine_test runs the checks, ending with "N passed, N failed";
 *	  engine_test quick runs a subset on fewer rows (for compute-sanitizer),
 *	  engine_test quick N its Nth case alone (a process per case);
 *	  engine_test bounded the GPU's drift-bound cases alone.
 *
 * IDENTIFICATION
 *	  test/engine/engine_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"
#include "gc_math.h"
#include "gc_stream.h"
#include "harness.h"
#include "kmeans_hybrid.h"
#ifdef GC_WITH_CUDA
#include <cuda_runtime_api.h>

#include "gc_cuda.h"
#endif

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
	{
		Fit			pruned = fit_with(&gc_kmeans_cpu_backend, &rows, k, 7,
									  GC_ALGORITHM_PRUNED, GC_PRECISION_FLOAT32, 300, 1e-4);

		check_same_fit(&cpu, &pruned, n, k, d, "cpu pruned", config);
		free_fit(&pruned);
	}

#ifdef GC_WITH_CUDA
	{
		static const struct
		{
			GcAlgorithm algorithm;
			GcPrecision precision;
			const char *name;
		}			variants[] = {
			{GC_ALGORITHM_AUTO, GC_PRECISION_FLOAT32, "gpu auto"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, "gpu lloyd"},
			{GC_ALGORITHM_PRUNED, GC_PRECISION_FLOAT32, "gpu pruned"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT64, "gpu float64"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_TF32, "gpu tf32"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, "gpu bf16"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FP16, "gpu fp16"},
		};
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;

			load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++)
			{
				Fit			gpu = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 7,
										   variants[v].algorithm, variants[v].precision,
										   300, 1e-4);

				if (gc_precision_is_reduced(variants[v].precision))
				{
					/*
					 * TF32, fp16 and bf16 round inputs to 10, 10 and 7 bits:
					 * close, not identical; bf16 is for spread-out data such
					 * as embeddings, and on 1000 tight clusters in 4-d its
					 * inertia is off by more (or its check falls back)
					 */
					double		tolerance = variants[v].precision == GC_PRECISION_BF16 ? 0.05 : 0.01;
					int64_t		mismatched = 0;

					for (int64_t i = 0; i < n; i++)
						mismatched += gpu.labels[i] != cpu.labels[i];
					char		what[96];

					snprintf(what, sizeof(what), "%s: the precision that ran is reported",
							 variants[v].name);
					check(gpu.result.precision == (gpu.result.check.outcome == GC_CHECK_FELL_BACK ?
												   GC_PRECISION_FLOAT32 : variants[v].precision) &&
						  gpu.result.check.outcome != GC_CHECK_NONE, what, config);
					snprintf(what, sizeof(what), "%s: at most 2%% of labels differ (%lld do)",
							 variants[v].name, (long long) mismatched);
					check(gpu.status == GC_OK && mismatched <= n / 50, what, config);
					snprintf(what, sizeof(what), "%s: inertia within %g%%", variants[v].name,
							 100 * tolerance);
					check(fabs(gpu.result.inertia - cpu.result.inertia) <= tolerance * cpu.result.inertia,
						  what, config);
				}
				else
					check_same_fit(&cpu, &gpu, n, k, d, variants[v].name, config);
				free_fit(&gpu);
			}
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

#ifdef GC_WITH_CUDA
/* Blobs (make_data) loaded twice: for the CPU, and page-locked for the GPU */
typedef struct GpuBlobs
{
	double	   *centres;
	double	   *x;
	GcRows		rows;
	GcRows		pinned;
} GpuBlobs;

/* false, with nothing allocated, where no GPU is usable */
static bool
gpu_blobs_open(GpuBlobs *b, int64_t n, int d, int k, double sigma, uint64_t seed)
{
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
		return false;
	b->centres = malloc(sizeof(double) * k * d);
	rng_state = seed;
	b->x = make_data(n, d, k, sigma, b->centres, NULL);
	load_rows(&b->rows, b->x, n, d, NULL, plain_alloc, free);
	load_rows(&b->pinned, b->x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	return true;
}

static void
gpu_blobs_close(GpuBlobs *b)
{
	gc_rows_release(&b->rows);
	gc_rows_release(&b->pinned);
	free(b->x);
	free(b->centres);
}

/* Whether the device is compute capability 9.0, where the wgmma kernels run */
static bool
on_hopper(void)
{
	char		device[128];
	size_t		free_bytes,
				total_bytes;

	return gc_cuda_describe_device(device, sizeof(device), &free_bytes, &total_bytes) &&
		strstr(device, "(sm_90)") != NULL;
}

/*
 * Exact labels from the tensor cores: float32 Lloyd on a shape that takes
 * the TF32 screen (d >= 12, k >= 128; below d = 12 the test forces it
 * with params.kernel, so that the narrow column steps stay tested) must
 * equal the CPU's fit to the bit, on blobs (few doubtful points) and on
 * uniform data (many, labelled again by 3xTF32 and some exactly).  On
 * Hopper, rows of whole 128-byte steps (d = 32 and d > 32) take the wgmma
 * screen, and the mma.sync screen is forced beside it.  On blobs, bf16
 * and fp16 products must find the same clusters: their error is far below
 * the gaps between blobs.
 */
static void
run_tensor_case(int64_t n, int d, int k, double sigma)
{
	char		config[80];
	GpuBlobs	blobs;
	GcRows	   *pinned = &blobs.pinned;
	Fit			cpu,
				gpu;

	if (!gpu_blobs_open(&blobs, n, d, k, sigma, (uint64_t) n * 17 + d * 5 + k))
		return;
	snprintf(config, sizeof(config), "tensor n=%lld d=%d k=%d sigma=%g", (long long) n, d, k, sigma);
	cpu = fit_with(&gc_kmeans_cpu_backend, &blobs.rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32,
				   30, 0.0);
	gpu = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_AUTO,
					 GC_PRECISION_FLOAT32, 30, 0.0,
					 d < 12 ? GC_KERNEL_TENSOR_SCREENED : GC_KERNEL_AUTO, false);
	check(gpu.status == GC_OK && gpu.result.kernel != NULL &&
		  strncmp(gpu.result.kernel, "tensor_", 7) == 0, "gpu used a tensor kernel", config);
	printf("%s: kernel %s\n", config, gpu.result.kernel ? gpu.result.kernel : "?");
	if (sigma > 0 && d >= 32 && on_hopper())
		check(gpu.result.kernel != NULL && strcmp(gpu.result.kernel, "tensor_screened_wgmma") == 0,
			  "on sm_90 the screen runs on wgmma", config);
	check_same_fit(&cpu, &gpu, n, k, d, "gpu tensor float32", config);
	{
		/*
		 * The kernel parameter: the streamed layout forced (exact labels
		 * whatever the data), and the SIMT kernel forced (float32 sums of
		 * squares: on blobs, where no label is a near tie)
		 */
		Fit			forced = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3,
										GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 30, 0.0,
										GC_KERNEL_TENSOR_SCREENED, true);

		check_same_fit(&cpu, &forced, n, k, d, "gpu tensor streamed", config);
		free_fit(&forced);
		if (sigma > 0)
		{
			forced = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_LLOYD,
								GC_PRECISION_FLOAT32, 30, 0.0, GC_KERNEL_REGISTER, false);
			check(forced.status == GC_OK && forced.result.kernel != NULL &&
				  strcmp(forced.result.kernel, d <= 32 ? "register" : "tiled") == 0,
				  "a forced SIMT kernel labels", config);
			check_same_fit(&cpu, &forced, n, k, d, "gpu forced simt", config);
			free_fit(&forced);
		}
	}
	for (int p = 0; sigma > 0 && p < 2; p++)
	{
		GcPrecision precision = p == 0 ? GC_PRECISION_BF16 : GC_PRECISION_FP16;
		const char *name = p == 0 ? "gpu bf16" : "gpu fp16";
		Fit			half = fit_with(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_LLOYD,
									precision, 30, 0.0);
		int64_t		mismatched = 0;
		char		what[96];

		for (int64_t i = 0; i < n; i++)
			mismatched += half.labels[i] != cpu.labels[i];
		/* near-ties where k-means++ split a blob can go either way */
		snprintf(what, sizeof(what), "%s: at most 1%% of labels differ (%lld do)", name,
				 (long long) mismatched);
		check(half.status == GC_OK && mismatched <= n / 100, what, config);
		snprintf(what, sizeof(what), "%s: inertia within 1e-4", name);
		check(fabs(half.result.inertia - cpu.result.inertia) <= 1e-4 * cpu.result.inertia,
			  what, config);
		free_fit(&half);
	}
	free_fit(&cpu);
	free_fit(&gpu);
	gpu_blobs_close(&blobs);
}

/*
 * Rows that nearly repeat one another (patterns plus noise of 10^-3
 * against norms of 8), with more centroids than patterns: the rows of a
 * pattern holding two centroids are doubtful to the TF32 screen and to
 * 3xTF32 alike, and the exact check settles them among the centroids near
 * them (tensor/centroid_separations.cu).  The fit must equal the CPU's to the
 * bit, check rows exactly, and stay on the tensor kernels (before the
 * separations the check's cost sent it to the tiled kernel).
 */
static void
run_tensor_near_duplicates_case(int64_t n, int d, int k, int patterns)
{
	char		config[96];
	char		why[256];
	double	   *x;
	GcRows		rows,
				pinned;
	Fit			cpu,
				gpu;

	if (!gc_cuda_use_device(0, why, sizeof(why)))
		return;
	rng_state = (uint64_t) n * 31 + d * 7 + k;
	x = make_near_duplicates(n, d, patterns, 1e-3);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	snprintf(config, sizeof(config), "tensor near-duplicates n=%lld d=%d k=%d patterns=%d",
			 (long long) n, d, k, patterns);
	cpu = fit_with(&gc_kmeans_cpu_backend, &rows, k, 5, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32,
				   20, 0.0);
	gpu = fit_kernel(&gc_kmeans_cuda_backend, &pinned, k, 5, GC_ALGORITHM_AUTO,
					 GC_PRECISION_FLOAT32, 20, 0.0, GC_KERNEL_AUTO, false);
	printf("%s: kernel %s, exact check %.4f of the rows\n", config,
		   gpu.result.kernel ? gpu.result.kernel : "?", gpu.result.exact_fraction);
	check(gpu.status == GC_OK && gpu.result.kernel != NULL &&
		  strncmp(gpu.result.kernel, "tensor_", 7) == 0, "near-duplicates stay on a tensor kernel",
		  config);
	check(gpu.result.exact_fraction > 0.0, "near-duplicates reach the exact check", config);
	check_same_fit(&cpu, &gpu, n, k, d, "gpu tensor near-duplicates", config);
	free_fit(&cpu);
	free_fit(&gpu);
	gc_rows_release(&rows);
	gc_rows_release(&pinned);
	free(x);
}

/*
 * bf16 or fp16 on Hopper's wgmma against the mma.sync kernel (both forced
 * through the kernel parameter), on blobs: one labeling from the same
 * seeds gives the same labels but for near-ties (the two sum their
 * products in another order), and a fit of 30 iterations holds the 16-bit
 * rules against the CPU.  On compute capability 9.0 the forced Hopper kernel must run;
 * elsewhere it falls back to mma.sync.  Shapes: k short of a 256-centroid
 * tile and n of a 128-row tile, rows of 1, 7 and 16 column slices.
 */
static void
run_half_kernels_case(GcPrecision precision, int64_t n, int d, int k)
{
	bool		bf16 = precision == GC_PRECISION_BF16;
	const char *name = bf16 ? "bf16" : "fp16";
	GcKernel	mma_kernel = bf16 ? GC_KERNEL_TENSOR_BF16 : GC_KERNEL_TENSOR_FP16,
				wgmma_kernel = bf16 ? GC_KERNEL_TENSOR_BF16_WGMMA : GC_KERNEL_TENSOR_FP16_WGMMA;
	const char *mma_name = bf16 ? "tensor_bf16" : "tensor_fp16",
			   *wgmma_name = bf16 ? "tensor_bf16_wgmma" : "tensor_fp16_wgmma";
	char		config[80];
	GpuBlobs	blobs;
	GcRows	   *pinned = &blobs.pinned;
	Fit			cpu,
				mma,
				wgmma;
	bool		hopper;
	int64_t		mismatched = 0;
	char		what[128];

	if (!gpu_blobs_open(&blobs, n, d, k, 0.5, (uint64_t) n * 13 + d * 7 + k))
		return;
	hopper = on_hopper();
	snprintf(config, sizeof(config), "%s kernels n=%lld d=%d k=%d", name, (long long) n, d, k);

	/* one labeling from the same seeds */
	mma = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_LLOYD, precision,
					 1, 0.0, mma_kernel, false);
	wgmma = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_LLOYD,
					   precision, 1, 0.0, wgmma_kernel, false);
	check(mma.status == GC_OK && mma.result.kernel != NULL &&
		  strcmp(mma.result.kernel, mma_name) == 0, "forced mma.sync kernel runs", config);
	check(wgmma.status == GC_OK && wgmma.result.kernel != NULL &&
		  strcmp(wgmma.result.kernel, hopper ? wgmma_name : mma_name) == 0,
		  hopper ? "forced wgmma runs on sm_90" : "forced wgmma falls back off sm_90",
		  config);
	for (int64_t i = 0; i < n; i++)
		mismatched += mma.labels[i] != wgmma.labels[i];
	printf("%s: kernel %s, %lld labels differ from mma.sync's\n", config,
		   wgmma.result.kernel ? wgmma.result.kernel : "?", (long long) mismatched);
	snprintf(what, sizeof(what), "one %s labeling: wgmma and mma.sync differ in at most "
			 "0.1%% of labels (%lld do)", name, (long long) mismatched);
	check(mismatched <= n / 1000, what, config);
	free_fit(&mma);
	free_fit(&wgmma);

	/* a whole fit, against the CPU */
	cpu = fit_with(&gc_kmeans_cpu_backend, &blobs.rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32,
				   30, 0.0);
	wgmma = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, 3, GC_ALGORITHM_LLOYD,
					   precision, 30, 0.0, wgmma_kernel, false);
	mismatched = 0;
	for (int64_t i = 0; i < n; i++)
		mismatched += wgmma.labels[i] != cpu.labels[i];
	snprintf(what, sizeof(what), "gpu %s wgmma: at most 1%% of labels differ (%lld do)",
			 name, (long long) mismatched);
	printf("%s: fit of 30 iterations, %lld labels differ from the CPU's, inertia %.9g vs %.9g\n",
		   config, (long long) mismatched, wgmma.result.inertia, cpu.result.inertia);
	check(wgmma.status == GC_OK && mismatched <= n / 100, what, config);
	check(fabs(wgmma.result.inertia - cpu.result.inertia) <= 1e-4 * cpu.result.inertia,
		  "gpu 16-bit wgmma: inertia within 1e-4", config);
	free_fit(&wgmma);
	free_fit(&cpu);
	gpu_blobs_close(&blobs);
}
#endif

/*
 * Weighted rows: integer weights must give the fit of the rows repeated
 * that many times, to the bit (from the same initial centroids, and from
 * k-means++, whose race weighs rows the same way); the CUDA backend must
 * give the CPU's fit to the bit; weights that are not whole numbers are
 * refused
 */
static void
run_weighted_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 3.0, centres, NULL);
	GcRows		weighted,
				repeated;
	GcError		err = {0};
	GcKmeansParams params = {0};
	GcKmeansResult a = {0},
				b = {0};
	double	   *ca = malloc(sizeof(double) * k * d),
			   *cb = malloc(sizeof(double) * k * d);
	int64_t    *sa = malloc(sizeof(int64_t) * k),
			   *sb = malloc(sizeof(int64_t) * k);
	double		maxdiff = 0.0;
	char		config[64];

	snprintf(config, sizeof(config), "weighted n=%lld d=%d k=%d", (long long) n, d, k);
	gc_rows_init(&weighted, d, plain_alloc, free, &err);
	gc_rows_set_weighted(&weighted);
	gc_rows_init(&repeated, d, plain_alloc, free, &err);
	for (int64_t i = 0; i < n; i++)
	{
		int			w = 1 + (int) (i % 4);

		memcpy(gc_rows_reserve(&weighted, &err), x + i * d, sizeof(double) * d);
		gc_rows_commit_weighted(&weighted, (double) w);
		for (int r = 0; r < w; r++)
		{
			memcpy(gc_rows_reserve(&repeated, &err), x + i * d, sizeof(double) * d);
			gc_rows_commit(&repeated);
		}
	}
	check(gc_rows_weight(&weighted, 5) == 2.0, "gc_rows_weight reads the weight", config);
	check(gc_rows_weight(&repeated, 5) == 1.0, "unweighted rows weigh 1", config);

	params.k = k;
	params.max_iter = 300;
	params.tol = 0.0;
	params.init = GC_INIT_GIVEN;
	params.init_centroids = x;	/* the first k rows */
	params.n_init = 1;
	params.algorithm = GC_ALGORITHM_LLOYD;
	a.centroids = ca;
	a.sizes = sa;
	b.centroids = cb;
	b.sizes = sb;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &weighted, &params, &a, &err) == GC_OK,
		  "weighted fit succeeds", config);
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &repeated, &params, &b, &err) == GC_OK,
		  "repeated fit succeeds", config);
	for (int i = 0; i < k * d; i++)
		maxdiff = fmax(maxdiff, fabs(ca[i] - cb[i]));
	check(maxdiff == 0.0, "weighted centroids equal repeated rows' centroids to the bit", config);
	check(a.inertia == b.inertia, "weighted inertia equals repeated rows' inertia", config);
	check(memcmp(sa, sb, sizeof(int64_t) * k) != 0,
		  "sizes count rows, not weights (repeated rows are more)", config);

	/* k-means++ with weights runs and finds a sensible solution */
	params.init = GC_INIT_KMEANSPP;
	params.n_init = 3;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &weighted, &params, &a, &err) == GC_OK &&
		  a.inertia <= 1.5 * b.inertia, "weighted k-means++ fit is close", config);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			static const GcAlgorithm algorithms[] = {GC_ALGORITHM_AUTO, GC_ALGORITHM_PRUNED};

			for (int v = 0; v < 2; v++)
			{
				GcKmeansResult g = {0};
				double	   *cg = malloc(sizeof(double) * k * d);
				int64_t    *sg = malloc(sizeof(int64_t) * k);
				char		what[96];

				params.algorithm = algorithms[v];
				g.centroids = cg;
				g.sizes = sg;
				snprintf(what, sizeof(what), "gpu weighted k-means++ (%s) equals the cpu's",
						 v == 0 ? "auto" : "pruned");
				check(gc_kmeans_fit(&gc_kmeans_cuda_backend, &weighted, &params, &g, &err) == GC_OK &&
					  memcmp(ca, cg, sizeof(double) * k * d) == 0 &&
					  memcmp(sa, sg, sizeof(int64_t) * k) == 0 &&
					  g.inertia == a.inertia && g.iterations == a.iterations, what, config);
				free(cg);
				free(sg);
			}
			params.algorithm = GC_ALGORITHM_LLOYD;
		}
	}
#endif
	{
		GcRows		bad;
		GcError		berr = {0};

		gc_rows_init(&bad, d, plain_alloc, free, &berr);
		gc_rows_set_weighted(&bad);
		for (int64_t i = 0; i < n; i++)
		{
			memcpy(gc_rows_reserve(&bad, &berr), x + i * d, sizeof(double) * d);
			gc_rows_commit_weighted(&bad, i == n / 2 ? 0.5 : 1.0);
		}
		check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &bad, &params, &a, &berr) == GC_ERR_RANGE,
			  "a weight that is not a whole number is refused", config);
		gc_rows_release(&bad);
	}
	gc_rows_release(&weighted);
	gc_rows_release(&repeated);
	free(x);
	free(centres);
	free(ca);
	free(cb);
	free(sa);
	free(sb);
}

/* Sum of squared distances of n rows to their nearest of k centroids */
static double
ssq(const double *x, int64_t n, int d, const double *centroids, int k)
{
	double		total = 0.0;

	for (int64_t i = 0; i < n; i++)
	{
		double		d2;

		gc_nearest_centroid(x + i * d, centroids, k, d, &d2);
		total += d2;
	}
	return total;
}

/* A stream over rows [from, to) of x */
static void
stream_rows(GcStream *s, const GcStreamHeader *shape, const GcKmeansBackend *backend,
			const double *x, int64_t from, int64_t to, int d)
{
	GcError		err = {0};

	gc_stream_init(s, shape, backend, plain_alloc, free, NULL, &err);
	for (int64_t i = from; i < to; i++)
	{
		memcpy(gc_stream_reserve(s, &err), x + i * d, sizeof(double) * d);
		gc_stream_commit(s, &err);
	}
}

/* Weighted k-means over a stream's summary: centroids, and their SSQ over x */
static double
stream_ssq(const GcStream *s, const GcKmeansBackend *backend, const double *x,
		   int64_t n, int d, int k)
{
	GcKmeansParams params = {0};
	GcKmeansResult result;
	GcError		err = {0};
	double	   *centroids = malloc(sizeof(double) * k * d);
	int64_t    *weights = malloc(sizeof(int64_t) * k);
	int64_t		total = 0;
	double		v;

	params.k = k;
	params.max_iter = 300;
	params.tol = 1e-4;
	params.n_init = 30;			/* kmeans_stream_model's default */
	check(gc_stream_fit(s, backend, &params, centroids, weights, &result, &err) == GC_OK,
		  "stream fit succeeds", backend->name);
	for (int c = 0; c < k; c++)
		total += weights[c];
	check(total == s->rows, "stream model weights sum to the rows", "stream");
	v = ssq(x, n, d, centroids, k);
	free(centroids);
	free(weights);
	return v;
}

/*
 * Streamed summaries: quality against a direct fit, merges of 16 pieces,
 * levels within their bounds, and an encoding that decodes to the same
 * summary
 */
static void
run_stream_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 5.0, centres, NULL);
	GcStreamHeader shape = {0};
	GcStream	whole,
				merged;
	GcRows		rows;
	Fit			direct;
	double		direct_ssq,
				whole_ssq,
				merged_ssq;
	GcError		err = {0};
	char		config[64];
	int			bounded = 1;

	snprintf(config, sizeof(config), "stream n=%lld d=%d k=%d", (long long) n, d, k);
	shape.d = d;
	shape.k = k;
	shape.m = 10 * k;
	shape.block_rows = 2000;
	shape.seed = 7;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	direct = fit_with(&gc_kmeans_cpu_backend, &rows, k, 0, GC_ALGORITHM_AUTO,
					  GC_PRECISION_FLOAT64, 300, 1e-4);
	direct_ssq = ssq(x, n, d, direct.centroids, k);

	stream_rows(&whole, &shape, &gc_kmeans_cpu_backend, x, 0, n, d);
	for (int l = 1; l < whole.nlevels; l++)
		bounded &= whole.levels[l].count <= GC_STREAM_FANOUT * shape.m;
	check(bounded && whole.block.n < shape.block_rows, "levels within their bounds", config);
	check(whole.nlevels >= 2, "rows reached level 1", config);
	whole_ssq = stream_ssq(&whole, &gc_kmeans_cpu_backend, x, n, d, k);
	check(whole_ssq <= 1.05 * direct_ssq, "one stream: SSQ within 5% of a direct fit", config);

	gc_stream_init(&merged, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
	for (int p = 0; p < 16; p++)
	{
		GcStream	piece;
		GcStreamHeader h;
		size_t		len;
		uint8_t    *buf;

		stream_rows(&piece, &shape, &gc_kmeans_cpu_backend, x, n * p / 16, n * (p + 1) / 16, d);
		gc_stream_compact(&piece, &err);
		len = gc_stream_encoded_bytes(&piece);
		buf = malloc(len);
		gc_stream_encode(&piece, buf, len);
		check(gc_stream_decode(buf, len, &h) == NULL, "an encoded piece decodes", config);
		check(h.rows == piece.rows && h.total == gc_stream_points(&piece),
			  "a decoded piece has the piece's counts", config);
		if (p % 2)
			gc_stream_merge_encoded(&merged, buf, &h, &err);
		else
			gc_stream_merge(&merged, &piece, &err);
		free(buf);
		gc_stream_release(&piece);
	}
	check(err.status == GC_OK, "merges succeed", config);
	check(merged.rows == n, "a merge of 16 pieces counts every row", config);
	merged_ssq = stream_ssq(&merged, &gc_kmeans_cpu_backend, x, n, d, k);
	check(merged_ssq <= 1.05 * direct_ssq, "16 merged pieces: SSQ within 5% of a direct fit",
		  config);
	printf("%s: SSQ ratio one stream %.4f, 16 merged %.4f, levels %d\n", config,
		   whole_ssq / direct_ssq, merged_ssq / direct_ssq, whole.nlevels);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcStream	on_gpu;
			double		gpu_ssq;

			/* blocks and weighted levels on the GPU, then the model on the GPU */
			stream_rows(&on_gpu, &shape, &gc_kmeans_cuda_backend, x, 0, n, d);
			check(on_gpu.rows == n && on_gpu.nlevels == whole.nlevels,
				  "gpu stream: every row, as many levels as on the cpu", config);
			gpu_ssq = stream_ssq(&on_gpu, &gc_kmeans_cuda_backend, x, n, d, k);
			check(gpu_ssq <= 1.05 * direct_ssq, "gpu stream: SSQ within 5% of a direct fit",
				  config);
			printf("%s: SSQ ratio gpu stream %.4f\n", config, gpu_ssq / direct_ssq);
			gc_stream_release(&on_gpu);
		}
	}
#endif

	gc_stream_release(&whole);
	gc_stream_release(&merged);
	gc_rows_release(&rows);
	free_fit(&direct);
	free(x);
	free(centres);
}

/* Rewrite the checksum of a summary whose bytes were changed on purpose */
static void
reseal(uint8_t *buf, size_t len)
{
	gc_stream_seal(buf, len);
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/*
 * The decoder rejects each kind of malformed summary (regression cases
 * for the fuzz target's findings and the list)
 */
static void
run_stream_format_cases(void)
{
	static const double point[2] = {1.0, 2.0};
	GcStreamHeader h = {0},
				got;
	size_t		len;
	uint8_t    *good,
			   *bad;
	double		nan = NAN;

	h.d = 2;
	h.k = 1;
	h.m = 2;
	h.block_rows = 4;
	h.nlevels = 2;
	h.rows = 4;
	h.counts[0] = 1;
	h.counts[1] = 1;
	h.total = 2;
	len = gc_stream_encoded_size(h.d, h.nlevels, h.total);
	good = calloc(1, len);
	bad = malloc(len + 8);
	gc_stream_put_header(good, &h);
	gc_stream_put_point(good, &h, 0, 1.0, point);
	gc_stream_put_point(good, &h, 1, 3.0, point);
	gc_stream_seal(good, len);
	check(gc_stream_decode(good, len, &got) == NULL && got.total == 2 && got.rows == 4,
		  "a valid summary decodes", "format");

#define EXPECT_BAD(what, mutate, length, resealed) \
	do { \
		memcpy(bad, good, len); \
		mutate; \
		if (resealed) \
			reseal(bad, length); \
		check(gc_stream_decode(bad, length, &got) != NULL, what, "format"); \
	} while (0)

	EXPECT_BAD("empty value", (void) 0, 0, 0);
	EXPECT_BAD("truncated header", (void) 0, 20, 0);
	EXPECT_BAD("truncated points", (void) 0, len - 8, 0);
	EXPECT_BAD("a byte past the end", bad[len] = 0, len + 1, 0);
	EXPECT_BAD("bad magic", bad[0] = 'X', len, 1);
	EXPECT_BAD("wrong version", bad[4] = 2, len, 1);
	EXPECT_BAD("unknown flags", bad[6] = 2, len, 1);
	EXPECT_BAD("cosine flag on points longer than 1", bad[6] = GC_STREAM_FLAG_COSINE, len, 1);
	EXPECT_BAD("zero dimension", put32(bad + 8, 0), len, 1);
	EXPECT_BAD("negative k", put32(bad + 12, (uint32_t) -1), len, 1);
	EXPECT_BAD("m below k", put32(bad + 16, 0), len, 1);
	EXPECT_BAD("block below 2m", put32(bad + 20, 3), len, 1);
	EXPECT_BAD("too many levels", put32(bad + 24, 1000), len, 1);
	EXPECT_BAD("crafted level count", put32(bad + 48, 0x7fffffff), len, 1);
	EXPECT_BAD("counts past the length", put32(bad + 56, 2), len, 1);
	EXPECT_BAD("rows inconsistent with weights", put32(bad + 32, 5), len, 1);
	EXPECT_BAD("checksum mismatch", bad[len - 9] ^= 1, len, 0);
	EXPECT_BAD("NaN weight", memcpy(bad + 64, &nan, 8), len, 1);
	EXPECT_BAD("NaN value", memcpy(bad + 80, &nan, 8), len, 1);
	EXPECT_BAD("raw row of weight 3", do { double w = 3.0; memcpy(bad + 64, &w, 8); } while (0), len, 1);
	EXPECT_BAD("fractional weight", do { double w = 2.5; memcpy(bad + 72, &w, 8); } while (0), len, 1);
#undef EXPECT_BAD

	/* a cosine summary: a unit row and a mean of unit rows, rounding included */
	{
		const double unit[2] = {0.6, 0.8000000000000002};
		const double mean[2] = {0.3, 0.4};

		h.cosine = true;
		gc_stream_put_header(good, &h);
		gc_stream_put_point(good, &h, 0, 1.0, unit);
		gc_stream_put_point(good, &h, 1, 3.0, mean);
		gc_stream_seal(good, len);
		check(gc_stream_decode(good, len, &got) == NULL && got.cosine,
			  "a cosine summary decodes as one", "format");
		memcpy(bad, good, len);
		gc_stream_put_point(bad, &h, 0, 1.0, mean);
		reseal(bad, len);
		check(gc_stream_decode(bad, len, &got) != NULL, "a cosine summary's raw row of length 1/2",
			  "format");
		h.cosine = false;
		gc_stream_put_header(good, &h);
		gc_stream_seal(good, len);
		check(gc_stream_decode(good, len, &got) == NULL && !got.cosine,
			  "a summary without the flag decodes as Euclidean", "format");
	}
	free(good);
	free(bad);
}

/*
 * The hybrid's rules as the driver applies them, for each device's
 * constants: when pruning is tried, the GPU's probe on 1/16 of the rows,
 * the fall-backs on work and on time, and the re-ordering once the work
 * has settled.  The GPU's are checked here without a GPU.
 */
static void
run_hybrid_rule_cases(void)
{
	GcKmeansParams params = {0};
	GcHybrid	h;
	GcStepStatus step = {0};
	const char *config = "hybrid rules";

	params.algorithm = GC_ALGORITHM_AUTO;
	params.k = 100;
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000000, 8, true);
	check(h.use_pruned, "gpu auto prunes k = 100, n = 1M, d = 8", config);
	check(gc_hybrid_pruned_rows(&h, 1) == 0, "no pruning in iteration 1", config);
	check(gc_hybrid_pruned_rows(&h, 2) == 62500, "gpu probes 1/16 of the rows", config);
	check(gc_hybrid_pruned_rows(&h, 3) == 1000000, "then prunes every row", config);
	step.pruned_work = 0.07 * 100 * 62500;
	check(gc_hybrid_review(&h, 62500, &step) == GC_HYBRID_KEEP, "gpu keeps pruning at 0.07 k", config);
	step.pruned_work = 0.0705 * 100 * 1000000;
	check(gc_hybrid_review(&h, 1000000, &step) == GC_HYBRID_REORDER,
		  "gpu re-orders once the work settles within 5%", config);
	step.labeling_ms = 1.0;
	check(gc_hybrid_review(&h, 0, &step) == GC_HYBRID_KEEP && h.lloyd_label_ms == 1.0,
		  "a Lloyd pass sets the time to beat", config);
	step.labeling_ms = 1.5;
	check(gc_hybrid_review(&h, 1000000, &step) == GC_HYBRID_LLOYD && !h.use_pruned,
		  "gpu drops pruning slower than Lloyd's after re-ordering", config);
	check(gc_hybrid_pruned_rows(&h, 9) == 0, "no pruning after the drop", config);

	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000000, 8, true);
	step.pruned_work = 0.09 * 100 * 62500;
	step.labeling_ms = 0.0;
	check(gc_hybrid_review(&h, 62500, &step) == GC_HYBRID_LLOYD, "gpu drops pruning above 0.08 k",
		  config);
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000000, 8, false);
	check(!h.use_pruned, "gpu auto does not prune on a tensor labeler", config);
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 50000, 8, true);
	check(!h.use_pruned, "gpu auto does not prune where k log k > 0.001 n d", config);
	params.k = 7;
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000000, 8, true);
	check(!h.use_pruned, "gpu auto does not prune k < 8", config);
	params.algorithm = GC_ALGORITHM_PRUNED;
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000, 8, false);
	check(h.use_pruned && gc_hybrid_pruned_rows(&h, 2) == 1000,
		  "gpu pruned prunes every row from iteration 2", config);
	params.k = 4097;
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000000, 8, true);
	check(!h.use_pruned, "gpu pruned stops at k = 4096", config);
	params.k = 1;
	gc_hybrid_start(&h, &gc_hybrid_gpu_rules, &params, 1000, 8, true);
	check(!h.use_pruned, "gpu pruned needs k >= 2", config);
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 1000, 8, true);
	check(h.use_pruned, "cpu pruned takes k = 1", config);
	params.algorithm = GC_ALGORITHM_LLOYD;
	params.k = 100;
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 1000000, 8, true);
	check(!h.use_pruned, "lloyd never prunes", config);

	params.algorithm = GC_ALGORITHM_AUTO;
	params.k = 4;
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 16, 2, true);
	check(h.use_pruned && gc_hybrid_pruned_rows(&h, 2) == 16,
		  "cpu auto prunes every row from iteration 2 where n >= 4 k", config);
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 15, 2, true);
	check(!h.use_pruned, "cpu auto needs n >= 4 k", config);
	params.k = 3;
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 1000, 2, true);
	check(!h.use_pruned, "cpu auto needs k >= 4", config);
	params.k = 100;
	gc_hybrid_start(&h, &gc_hybrid_cpu_rules, &params, 1000, 2, true);
	step.labeling_ms = 0.0;
	step.pruned_work = 0.5 * 100 * 1000;
	check(gc_hybrid_review(&h, 1000, &step) == GC_HYBRID_KEEP, "cpu keeps pruning at 0.5 n k",
		  config);
	check(gc_hybrid_review(&h, 1000, &step) == GC_HYBRID_KEEP, "cpu never re-orders", config);
	step.pruned_work = 0.76 * 100 * 1000;
	check(gc_hybrid_review(&h, 1000, &step) == GC_HYBRID_LLOYD, "cpu drops pruning above 0.75 n k",
		  config);
	check(strcmp(gc_kernel_name(GC_KERNEL_TENSOR_SCREENED), "tensor_screened") == 0 &&
		  strcmp(gc_kernel_name(GC_KERNEL_REGISTER), "register") == 0 &&
		  strcmp(gc_kernel_name(GC_KERNEL_FLOAT64), "float64") == 0,
		  "kernel names as results report them", config);
}

#ifdef GC_WITH_CUDA
/*
 * Drift bounds (cuda/bounded_kernels.cu): under algorithm auto the GPU's
 * register-kernel shapes from k = 100 label with bounds, which must give
 * the fit of Lloyd's labeling by the register kernel itself (algorithm
 * lloyd) to the bit, while skipping most distances over a long run on
 * uniform data, where the centroids creep; with restarts too (n_init 3:
 * the bounds of one restart never reach the next); and the same fit from
 * the rows in reverse order.  k = 1500 at d = 8 spans two centroid tiles.
 */
static void
run_bounded_case(int64_t n, int d, int k, int n_init)
{
	char		config[80];
	GpuBlobs	blobs;
	GcRows		reversed;
	int64_t    *order = malloc(sizeof(int64_t) * n);
	Fit			fits[3];		/* lloyd, auto, auto on the reversed rows */
	int64_t		reordered = 0;

	snprintf(config, sizeof(config), "bounded n=%lld d=%d k=%d n_init=%d", (long long) n, d, k,
			 n_init);
	if (!gpu_blobs_open(&blobs, n, d, k, -1.0, (uint64_t) n + d + k))
	{
		free(order);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		order[i] = n - 1 - i;
	load_rows(&reversed, blobs.x, n, d, order, gc_cuda_host_alloc, gc_cuda_host_free);
	for (int f = 0; f < 3; f++)
	{
		GcKmeansParams params = {0};
		GcError		err = {0};

		params.k = k;
		params.max_iter = 120;
		params.tol = 0.0;
		params.algorithm = f == 0 ? GC_ALGORITHM_LLOYD : GC_ALGORITHM_AUTO;
		params.precision = GC_PRECISION_FLOAT32;
		params.init = GC_INIT_KMEANSPP;
		params.seed = 5;
		params.n_init = n_init;
		fits[f].centroids = malloc(sizeof(double) * k * d);
		fits[f].sizes = malloc(sizeof(int64_t) * k);
		fits[f].labels = malloc(sizeof(int32_t) * n);
		memset(&fits[f].result, 0, sizeof(fits[f].result));
		fits[f].result.centroids = fits[f].centroids;
		fits[f].result.sizes = fits[f].sizes;
		fits[f].result.labels = fits[f].labels;
		fits[f].status = gc_kmeans_fit(&gc_kmeans_cuda_backend,
									   f == 2 ? &reversed : &blobs.pinned, &params,
									   &fits[f].result, &err);
		check(fits[f].status == GC_OK, "gpu fit", config);
	}
	check(fits[0].result.iterations > 40, "a long run (more than 40 iterations)", config);
	check_same_fit(&fits[0], &fits[1], n, k, d, "gpu auto, bounded", config);
	check(fits[0].result.skipped_fraction == 0.0, "lloyd computes every distance", config);
	printf("  %s: auto skipped %.3f of the distances in %d iterations\n", config,
		   fits[1].result.skipped_fraction, fits[1].result.iterations);
	check(fits[1].result.skipped_fraction > (d <= 8 ? 0.5 : 0.2),
		  d <= 8 ? "the bounds skip most distances" : "the bounds skip distances", config);
	for (int64_t i = 0; i < n; i++)
		reordered += fits[2].labels[i] != fits[1].labels[order[i]];
	check(reordered == 0 &&
		  memcmp(fits[1].centroids, fits[2].centroids, sizeof(double) * k * d) == 0 &&
		  fits[1].result.iterations == fits[2].result.iterations,
		  "reversed rows: the same labels, centroids and iterations", config);
	for (int f = 0; f < 3; f++)
		free_fit(&fits[f]);
	gc_rows_release(&reversed);
	free(order);
	gpu_blobs_close(&blobs);
}

static void
run_bounded_cases(void)
{
	run_bounded_case(400000, 8, 100, 1);
	run_bounded_case(100000, 3, 100, 3);
	run_bounded_case(60000, 32, 100, 1);
	run_bounded_case(90000, 8, 1500, 1);
}
#endif

/*
 * Rows gathered from partial stores (as parallel workers' shares reach the
 * leader): appended as whole chunks, borrowed or owned, in another order
 * than the original, then grown by ordinary rows.  The fit must equal the
 * fit of the rows loaded one by one, to the bit.
 */
static void
run_partial_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 3.0, centres, NULL);
	int64_t		bounds[4] = {0, n / 3, n / 2, n - 5};
	int			order[3] = {2, 0, 1};
	double	   *values[3];
	uint64_t   *hashes[3];
	GcRows		whole,
				combined;
	GcError		err = {0};
	char		config[64];
	int			status_ok = 1;
	const GcKmeansBackend *backends[2] = {&gc_kmeans_cpu_backend, NULL};

#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))	/* where a GPU is usable */
			backends[1] = &gc_kmeans_cuda_backend;
	}
#endif
	snprintf(config, sizeof(config), "partial n=%lld d=%d k=%d", (long long) n, d, k);
	load_rows(&whole, x, n, d, NULL, plain_alloc, free);
	gc_rows_init(&combined, d, plain_alloc, free, &err);
	for (int p = 0; p < 3; p++)
	{
		int			s = order[p];
		int64_t		count = bounds[s + 1] - bounds[s];
		GcRows		part;
		GcChunk		chunk = {0};
		int64_t		at = 0;

		load_rows(&part, x + bounds[s] * d, count, d, NULL, plain_alloc, free);
		values[s] = malloc(sizeof(double) * d * count);
		hashes[s] = malloc(sizeof(uint64_t) * count);
		for (int c = 0; c < part.nchunks; c++)
		{
			memcpy(values[s] + at * d, part.chunks[c].values,
				   sizeof(double) * d * part.chunks[c].count);
			memcpy(hashes[s] + at, part.chunks[c].hashes,
				   sizeof(uint64_t) * part.chunks[c].count);
			at += part.chunks[c].count;
		}
		chunk.values = values[s];
		chunk.hashes = hashes[s];
		chunk.count = count;
		chunk.borrowed = s != 1;	/* share 1 is owned: the store frees it */
		status_ok &= gc_rows_append_chunk(&combined, &chunk, part.lo, part.hi,
										  part.total_weight, false, &err) == GC_OK;
		gc_rows_release(&part);
	}
	for (int64_t i = bounds[3]; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&combined, &err);

		memcpy(slot, x + i * d, sizeof(double) * d);
		gc_rows_commit(&combined);
	}
	check(status_ok && combined.n == n && combined.total_weight == n,
		  "combined store holds every row", config);
	check(combined.nchunks == 4 && combined.chunks[1].first_row == bounds[3] - bounds[2] &&
		  combined.chunks[3].first_row == bounds[3],
		  "shares are whole chunks and later rows start a new one", config);
	check(memcmp(combined.lo, whole.lo, sizeof(double) * d) == 0 &&
		  memcmp(combined.hi, whole.hi, sizeof(double) * d) == 0,
		  "combined bounding box equals the whole's", config);
	check(gc_rows_hash(&combined, 0) == gc_rows_hash(&whole, bounds[2]),
		  "a share's rows keep their hashes", config);
	for (int b = 0; b < 2 && backends[b]; b++)
	{
		Fit			a = fit(backends[b], &whole, k, 5),
					c = fit(backends[b], &combined, k, 5);

		check(c.status == GC_OK && memcmp(a.centroids, c.centroids, sizeof(double) * k * d) == 0,
			  "combined fit: centroids equal to the bit", config);
		check(memcmp(a.sizes, c.sizes, sizeof(int64_t) * k) == 0, "combined fit: sizes equal", config);
		check(a.result.inertia == c.result.inertia && a.result.iterations == c.result.iterations,
			  "combined fit: inertia and iterations equal", config);
		free_fit(&a);
		free_fit(&c);
	}
	gc_rows_release(&combined);
	free(values[0]);
	free(hashes[0]);
	free(values[2]);
	free(hashes[2]);
	gc_rows_release(&whole);
	free(x);
	free(centres);
}

/* What a fit reported through the progress callback */
typedef struct ProgressLog
{
	int			calls;
	int			order_errors;	/* a phase or iteration out of order */
	int			seedings;
	int			last_iteration;
	GcPhase		last_phase;
	double		last_shift;
	double		first_inertia;	/* inertia passed after the first restart */
	int			returning;
} ProgressLog;

static void
log_progress(void *arg, GcPhase phase, int iteration, double shift, double inertia)
{
	ProgressLog *log = arg;

	if (log->calls == 0 && phase != GC_PHASE_UPLOADING)
		log->order_errors++;
	if (phase == GC_PHASE_SEEDING)
	{
		log->seedings++;
		if (log->seedings == 2)
			log->first_inertia = inertia;
		log->last_iteration = 0;
	}
	else if (phase == GC_PHASE_ITERATING)
	{
		if (iteration != log->last_iteration + 1 || !(shift >= 0.0) || !isnan(inertia))
			log->order_errors++;
		log->last_iteration = iteration;
		log->last_shift = shift;
	}
	else if (phase == GC_PHASE_RETURNING)
		log->returning++;
	log->last_phase = phase;
	log->calls++;
}

/*
 * The progress callback: uploading first, one seeding per restart, one
 * call per iteration numbered from 1 with a shift in tol's unit, and the
 * returning phase before the labels; a converged fit's last shift is
 * within tol (or no label changed)
 */
static void
run_progress_case(const GcKmeansBackend *backend, const char *config)
{
	int64_t		n = 3000;
	int			d = 4,
				k = 5;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 1.0, centres, NULL);
	GcRows		rows;
	GcKmeansParams params = {0};
	GcKmeansResult result = {0};
	GcError		err = {0};
	ProgressLog log = {0};
	GcStatus	status;

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	params.k = k;
	params.max_iter = 100;
	params.tol = 1e-4;
	params.init = GC_INIT_RANDOM;
	params.n_init = 3;
	params.progress = log_progress;
	params.progress_arg = &log;
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	result.labels = malloc(sizeof(int32_t) * n);
	status = gc_kmeans_fit(backend, &rows, &params, &result, &err);
	check(status == GC_OK, "progress: fit ok", config);
	check(log.order_errors == 0, "progress: phases and iterations in order", config);
	check(log.seedings == 3, "progress: one seeding per restart", config);
	check(log.returning == 1 && log.last_phase == GC_PHASE_RETURNING,
		  "progress: returning last, once", config);
	check(log.first_inertia > 0 && isfinite(log.first_inertia),
		  "progress: the first restart's inertia reaches the second seeding", config);
	check(log.calls >= 1 + 3 * 2 + 1, "progress: a call per iteration", config);
	params.progress = NULL;		/* none: the fit runs the same */
	check(gc_kmeans_fit(backend, &rows, &params, &result, &err) == GC_OK,
		  "progress: a fit without a callback", config);
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	free(result.labels);
	free(centres);
	free(x);
}

/*
 * Labels and distances asked for are the returned centroids': with three
 * random restarts, whichever restart wins (the last one's scoring gives
 * them when it is the best, a final pass when an earlier one is), every
 * label is the row's nearest returned centroid, sizes count the labels and
 * distances are the rows' to their centroids.  Six seeds: on blobs where
 * random starts end in different local optima.
 */
static void
run_restart_labels_case(const GcKmeansBackend *backend, const char *config)
{
	int64_t		n = 2000;
	int			d = 3,
				k = 6;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 2.0, centres, NULL);
	GcRows		rows;
	GcKmeansResult result = {0};
	GcError		err = {0};
	int64_t    *counts = malloc(sizeof(int64_t) * k);
	bool		nearest = true,
				sized = true,
				distant = true,
				fitted = true;

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	result.labels = malloc(sizeof(int32_t) * n);
	result.distances = malloc(sizeof(double) * n);
	for (uint64_t seed = 1; seed <= 6; seed++)
	{
		GcKmeansParams params = {0};

		params.k = k;
		params.max_iter = 100;
		params.tol = 0.0;
		params.init = GC_INIT_RANDOM;
		params.n_init = 3;
		params.seed = seed;
		fitted &= gc_kmeans_fit(backend, &rows, &params, &result, &err) == GC_OK;
		memset(counts, 0, sizeof(int64_t) * k);
		for (int64_t i = 0; i < n; i++)
		{
			double		d2;
			int			l = gc_nearest_centroid(gc_rows_get(&rows, i), result.centroids, k, d, &d2);

			nearest &= result.labels[i] == l;
			distant &= result.distances[i] == sqrt(d2);
			counts[result.labels[i] >= 0 && result.labels[i] < k ? result.labels[i] : 0]++;
		}
		sized &= memcmp(counts, result.sizes, sizeof(int64_t) * k) == 0;
	}
	check(fitted, "restart labels: fits ok", config);
	check(nearest, "restart labels: each row's label is its nearest returned centroid", config);
	check(sized, "restart labels: sizes count the labels", config);
	check(distant, "restart labels: distances are to the returned centroids", config);
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	free(result.labels);
	free(result.distances);
	free(counts);
	free(centres);
	free(x);
}

/* Two allocators that count what they hand out and take back */
static int	allocs_a,
			frees_a,
			allocs_b,
			frees_b;

static void *
alloc_a(size_t bytes)
{
	allocs_a++;
	return malloc(bytes);
}

static void
free_a(void *p)
{
	frees_a++;
	free(p);
}

static void *
alloc_b(size_t bytes)
{
	allocs_b++;
	return malloc(bytes);
}

static void
free_b(void *p)
{
	frees_b++;
	free(p);
}

/*
 * The row store's allocator changes between chunks: the chunks added
 * after gc_rows_set_allocator come from the new one, and each chunk goes
 * back to the allocator it came from; the rows read back unchanged
 */
static void
run_allocator_switch_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	int			d = 3;
	int64_t		n = 40000;
	int			a_after_switch = -1;
	bool		same = true;

	gc_rows_init(&rows, d, alloc_a, free_a, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot;

		if (i == 5000)
		{
			gc_rows_set_allocator(&rows, alloc_b, free_b);
			a_after_switch = allocs_a;
		}
		slot = gc_rows_reserve(&rows, &err);
		for (int j = 0; j < d; j++)
			slot[j] = (double) (i * d + j);
		gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (i * d + j);
	check(same, "allocator switch: rows read back", "rowstore");
	check(allocs_a == a_after_switch && allocs_a > 0 && allocs_b > 0,
		  "allocator switch: later chunks from the new allocator", "rowstore");
	gc_rows_release(&rows);
	check(frees_a == allocs_a && frees_b == allocs_b,
		  "allocator switch: each chunk freed by its own allocator", "rowstore");
}

/* A chunk placement that takes chunks from malloc until it has placed limit */
typedef struct TestPlacement
{
	int			placed;
	int			limit;
	size_t		smallest;		/* bytes of the smallest chunk offered */
	size_t		largest;
	void	   *blocks[64];
} TestPlacement;

static bool
test_place(void *arg, GcChunk *chunk, const GcRows *rows)
{
	TestPlacement *tp = (TestPlacement *) arg;
	size_t		bytes = (size_t) chunk->capacity * gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	size_t		value_bytes = gc_value_bytes(rows->narrow);
	char	   *block;

	if (tp->placed == tp->limit || (block = malloc(bytes)) == NULL)
		return false;
	tp->smallest = tp->placed == 0 || bytes < tp->smallest ? bytes : tp->smallest;
	tp->largest = bytes > tp->largest ? bytes : tp->largest;
	tp->blocks[tp->placed++] = block;
	gc_chunk_set_values(chunk, block, rows->narrow);
	chunk->hashes = (uint64_t *) (block + value_bytes * rows->d * chunk->capacity);
	chunk->weights = NULL;
	return true;
}

/*
 * A store's placement (GcChunkPlacement): chunks from min_bytes on are
 * offered and placed, growing to max_bytes, and never freed by the store;
 * the first refusal ends placement, later chunks come from the store's
 * allocator; the rows read back unchanged.  And float_exact: true while
 * every value is a float32 value, cleared by one that is not or by a chunk
 * appended without the promise.
 */
static void
run_placement_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	TestPlacement tp = {0, 3, 0, 0, {0}};
	int			d = 16;
	int64_t		n = 200000;		/* 27 MB of rows */
	bool		same = true;
	int			placed_chunks = 0,
				after_refusal = 0;
	GcChunk		chunk = {0};
	double		values[16] = {0};
	uint64_t	hash = 0;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	rows.placement.place = test_place;
	rows.placement.arg = &tp;
	rows.placement.min_bytes = (size_t) 1 << 20;
	rows.placement.max_bytes = (size_t) 4 << 20;
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = (double) (float) (i * 0.25 + j);
		gc_rows_commit(&rows);
	}
	for (int c = 0; c < rows.nchunks; c++)
	{
		placed_chunks += rows.chunks[c].borrowed;
		after_refusal += placed_chunks == tp.limit && !rows.chunks[c].borrowed;
	}
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (float) (i * 0.25 + j);
	check(same, "placement: rows read back", "rowstore");
	check(placed_chunks == tp.limit && tp.smallest + 1024 >= rows.placement.min_bytes &&
		  tp.smallest < rows.placement.min_bytes * 2 &&
		  tp.largest <= rows.placement.max_bytes && tp.largest + 1024 >= rows.placement.max_bytes,
		  "placement: chunks from min_bytes on placed, up to max_bytes", "rowstore");
	check(after_refusal > 0 && rows.placement.place == NULL,
		  "placement: a refusal ends it, the store allocates the rest", "rowstore");
	check(rows.float_exact, "float_exact: float32 values", "rowstore");
	chunk.values = values;
	chunk.hashes = &hash;
	chunk.count = 1;
	chunk.borrowed = true;
	chunk.float_exact = true;
	gc_rows_append_chunk(&rows, &chunk, values, values, 1, false, &err);
	check(rows.float_exact, "float_exact: a chunk appended with the promise keeps it", "rowstore");
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = j == 5 ? 0.1 : 1.0;
		gc_rows_commit(&rows);
	}
	check(!rows.float_exact, "float_exact: one double that is no float32 value clears it", "rowstore");
	gc_rows_release(&rows);
	for (int b = 0; b < tp.placed; b++)
		free(tp.blocks[b]);

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	chunk.float_exact = false;
	gc_rows_append_chunk(&rows, &chunk, values, values, 1, false, &err);
	check(!rows.float_exact, "float_exact: a chunk appended without the promise clears it", "rowstore");
	gc_rows_release(&rows);
}

#ifdef GC_WITH_CUDA
/* Whether ptr is page-locked host memory that CUDA knows */
static bool
is_pinned(const void *ptr)
{
	struct cudaPointerAttributes attr;

	if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return attr.type == cudaMemoryTypeHost;
}

/*
 * Pinning ahead (cuda/pinned_memory.cu): a row store of 1M-row scale
 * chunks (d = 1024, 480 MB: seven 64 MB chunks, the later ones prepared by
 * helper threads) reads back every value, and every chunk is page-locked;
 * then blocks asked for out of step with the helpers (a size they did not
 * prepare, frees between) are page-locked and hold what was written, and
 * releasing everything leaves the allocator usable.
 */
static void
run_pin_ahead_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	int			d = 1024;
	int64_t		n = 60000;
	bool		same = true,
				pinned = true;
	size_t		sizes[] = {20u << 20, 20u << 20, 20u << 20, 24u << 20, 20u << 20, 20u << 20};
	int			nblocks = (int) (sizeof(sizes) / sizeof(sizes[0]));
	unsigned char *blocks[6];

	gc_rows_init(&rows, d, gc_cuda_host_alloc, gc_cuda_host_free, &err);
	for (int64_t i = 0; i < n && same; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		same &= slot != NULL;
		for (int j = 0; same && j < d; j++)
			slot[j] = (double) (i * 3 + j);
		if (same)
			gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < rows.n; i++)
		for (int j = 0; j < d; j += 97)
			same &= gc_rows_get(&rows, i)[j] == (double) (i * 3 + j);
	for (int c = 0; c < rows.nchunks; c++)
		pinned &= is_pinned(rows.chunks[c].values);
	check(rows.n == n && same, "pin ahead: every row reads back", "pinned memory");
	check(rows.nchunks > 6 && pinned, "pin ahead: every chunk page-locked", "pinned memory");
	gc_rows_release(&rows);

	same = pinned = true;
	for (int b = 0; b < nblocks; b++)
	{
		if (b == 4)
			gc_cuda_host_free(blocks[0]);	/* a free settles the helpers */
		blocks[b] = gc_cuda_host_alloc(sizes[b]);
		same &= blocks[b] != NULL;
		if (blocks[b] == NULL)
			continue;
		pinned &= is_pinned(blocks[b]) && is_pinned(blocks[b] + sizes[b] - 1);
		memset(blocks[b], 'a' + b, sizes[b]);
	}
	for (int b = 1; b < nblocks; b++)
		same &= blocks[b] != NULL && blocks[b][0] == 'a' + b &&
			blocks[b][sizes[b] - 1] == 'a' + b && blocks[b][sizes[b] / 2] == 'a' + b;
	check(same, "pin ahead: blocks out of step keep what was written", "pinned memory");
	check(pinned, "pin ahead: blocks out of step page-locked", "pinned memory");
	for (int b = 1; b < nblocks; b++)
		gc_cuda_host_free(blocks[b]);
	gc_cuda_trim_pinned_cache(0);
	blocks[0] = gc_cuda_host_alloc(sizes[0]);
	check(blocks[0] != NULL && is_pinned(blocks[0]), "pin ahead: usable after a trim to nothing",
		  "pinned memory");
	gc_cuda_host_free(blocks[0]);
}

/*
 * Uploads from pageable memory past the size where helper threads stage
 * them (host_upload.cu: 256 MB): rows in malloc'd chunks, and rows whose
 * first chunks are malloc'd and the rest page-locked, fit to the same
 * centroids and labels as the same rows all page-locked.  With
 * float_values every value is rounded to a float32 value first, and the
 * staged values cross as floats (GcRows.float_exact); without, they are
 * doubles that must cross whole.
 */
static void
run_staged_upload_case(bool float_values)
{
	int64_t		n = float_values ? 72000 : 48000;
	int			d = 1024,
				k = 8;
	const char *config = float_values ?
		"n=72000 d=1024 k=8 (590 MB of rows, 295 MB as float32), float32 values" :
		"n=48000 d=1024 k=8 (393 MB of rows)";
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	GcRows		pinned,
				pageable,
				mixed,
				narrow = {0};
	GcError		err = {0};
	bool		loaded = true;
	Fit			reference;

	rng_state = 4242;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; float_values && i < n * d; i++)
		x[i] = (double) (float) x[i];
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	load_rows(&pageable, x, n, d, NULL, plain_alloc, free);
	gc_rows_init(&mixed, d, plain_alloc, free, &err);
	for (int64_t i = 0; i < n && loaded; i++)
	{
		double	   *slot;

		if (i == 3 * n / 4)	/* about 300 MB pageable */
			gc_rows_set_allocator(&mixed, gc_cuda_host_alloc, gc_cuda_host_free);
		slot = gc_rows_reserve(&mixed, &err);
		loaded = slot != NULL;
		if (loaded)
		{
			memcpy(slot, x + i * d, sizeof(double) * d);
			gc_rows_commit(&mixed);
		}
	}
	check(loaded && !is_pinned(mixed.chunks[0].values) &&
		  is_pinned(mixed.chunks[mixed.nchunks - 1].values),
		  "staged upload: the mixed store holds both kinds of memory", config);
	check(pageable.float_exact == float_values && mixed.float_exact == float_values,
		  "staged upload: the stores know whether every value is a float32 value", config);

	reference = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 11, GC_ALGORITHM_LLOYD,
						 GC_PRECISION_FLOAT32, 10, 0.0);
	check(reference.status == GC_OK, "staged upload: fit of page-locked rows", config);
	if (float_values)
		load_narrow_rows(&narrow, x, n, d, plain_alloc, free);
	{
		GcRows	   *stores[] = {&pageable, &mixed, &narrow};
		const char *names[] = {"staged upload: pageable rows", "staged upload: mixed rows",
		"staged upload: pageable float32 rows"};

		for (int s = 0; s < (float_values ? 3 : 2); s++)
		{
			Fit			staged = fit_with(&gc_kmeans_cuda_backend, stores[s], k, 11,
										  GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 10, 0.0);

			check_same_fit(&reference, &staged, n, k, d, names[s], config);
			free_fit(&staged);
		}
	}
	free_fit(&reference);
	gc_rows_release(&pinned);
	gc_rows_release(&pageable);
	gc_rows_release(&mixed);
	gc_rows_release(&narrow);
	free(x);
	free(centres);
	free(truth);
}
#endif

/* Rows a store of max_bytes takes before one fails, as float32 or as doubles */
static int64_t
rows_within(const double *x, int64_t n, int d, bool narrow, size_t max_bytes)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t		taken = 0;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	rows.max_bytes = max_bytes;
	if (narrow)
		gc_rows_set_narrow(&rows);
	for (; taken < n; taken++)
	{
		void	   *slot = narrow ? (void *) gc_rows_reserve_narrow(&rows, &err) :
			(void *) gc_rows_reserve(&rows, &err);

		if (slot == NULL)
			break;
		for (int j = 0; j < d; j++)
		{
			if (narrow)
				((float *) slot)[j] = (float) x[taken * d + j];
			else
				((double *) slot)[j] = x[taken * d + j];
		}
		gc_rows_commit(&rows);
	}
	gc_rows_release(&rows);
	return taken;
}

/*
 * Narrow stores (float32 rows, as vector, halfvec and real[] columns are
 * collected): each row's hash and the bounding box equal those of the
 * same rows held as doubles, rows read back as doubles, a memory limit
 * holds nearly twice the rows, and a fit gives the same clusters as the
 * store of doubles: on the CPU, which widens the store first (and leaves
 * it a store of doubles), and on the GPU, which uploads the floats from
 * page-locked and from pageable memory.
 */
static void
run_narrow_case(void)
{
	int64_t		n = 30000;
	int			d = 24,
				k = 12;
	const char *config = "n=30000 d=24 k=12";
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x,
			   *row = malloc(sizeof(double) * d);
	GcRows		wide,
				narrow;
	bool		same_hashes = true,
				same_rows = true,
				all_narrow = true;
	int64_t		wide_taken,
				narrow_taken;
	Fit			reference,
				widened;

	rng_state = 515;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n * d; i++)
		x[i] = (double) (float) x[i];
	load_rows(&wide, x, n, d, NULL, plain_alloc, free);
	load_narrow_rows(&narrow, x, n, d, plain_alloc, free);
	for (int c = 0; c < narrow.nchunks; c++)
		all_narrow &= narrow.chunks[c].narrow_values != NULL && narrow.chunks[c].values == NULL;
	check(narrow.narrow && all_narrow && narrow.nchunks > 1 && narrow.n == n && narrow.float_exact,
		  "narrow: the rows are held as float32, in several chunks", config);
	for (int64_t i = 0; i < n; i++)
	{
		same_hashes &= gc_rows_hash(&narrow, i) == gc_rows_hash(&wide, i);
		gc_rows_copy_row(&narrow, i, row);
		same_rows &= memcmp(row, x + i * d, sizeof(double) * d) == 0;
	}
	check(same_hashes, "narrow: each row's hash is the hash of its doubles", config);
	check(memcmp(narrow.lo, wide.lo, sizeof(double) * d) == 0 &&
		  memcmp(narrow.hi, wide.hi, sizeof(double) * d) == 0,
		  "narrow: the bounding box is the doubles' box", config);
	check(same_rows, "narrow: gc_rows_copy_row gives each row's doubles", config);
	wide_taken = rows_within(x, n, d, false, (size_t) 1 << 20);
	narrow_taken = rows_within(x, n, d, true, (size_t) 1 << 20);
	check(wide_taken < n && narrow_taken * 10 >= wide_taken * 19,
		  "narrow: a memory limit holds nearly twice the rows", config);

	reference = fit_with(&gc_kmeans_cpu_backend, &wide, k, 3, GC_ALGORITHM_AUTO,
						 GC_PRECISION_FLOAT32, 50, 0.0);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;
			Fit			from_pinned,
						from_pageable;

			load_narrow_rows(&pinned, x, n, d, gc_cuda_host_alloc, gc_cuda_host_free);
			from_pinned = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 3, GC_ALGORITHM_AUTO,
								   GC_PRECISION_FLOAT32, 50, 0.0);
			from_pageable = fit_with(&gc_kmeans_cuda_backend, &narrow, k, 3, GC_ALGORITHM_AUTO,
									 GC_PRECISION_FLOAT32, 50, 0.0);
			check(pinned.narrow && narrow.narrow,
				  "narrow: the GPU fit reads the float32 rows as they are", config);
			check_same_fit(&reference, &from_pinned, n, k, d,
						   "narrow: gpu fit of page-locked float32 rows", config);
			check_same_fit(&reference, &from_pageable, n, k, d,
						   "narrow: gpu fit of pageable float32 rows", config);
			free_fit(&from_pinned);
			free_fit(&from_pageable);
			gc_rows_release(&pinned);
		}
	}
#endif
	widened = fit_with(&gc_kmeans_cpu_backend, &narrow, k, 3, GC_ALGORITHM_AUTO,
					   GC_PRECISION_FLOAT32, 50, 0.0);
	check(reference.status == GC_OK && recovers(truth, reference.labels, n, k),
		  "narrow: the fit of doubles recovers the blobs", config);
	check_same_fit(&reference, &widened, n, k, d, "narrow: cpu fit of float32 rows", config);
	same_hashes = !narrow.narrow && narrow.n == n;
	for (int64_t i = 0; i < n && same_hashes; i++)
		same_hashes = gc_rows_hash(&narrow, i) == gc_rows_hash(&wide, i) &&
			memcmp(gc_rows_get(&narrow, i), x + i * d, sizeof(double) * d) == 0;
	check(same_hashes, "narrow: the cpu fit leaves a store of the same doubles", config);
	free_fit(&reference);
	free_fit(&widened);
	gc_rows_release(&wide);
	gc_rows_release(&narrow);
	free(x);
	free(row);
	free(centres);
	free(truth);
}

/*
 * Rows spread far wider than float32 holds (scaled by 1e20 and by 1e140;
 * the legal limit is 1e150): the fit asked for float32 labels in float64,
 * says so, and on the GPU agrees with the CPU to the bit, where float32
 * labeling would send every point to the first centroid
 */
static void
run_wide_range_case(double scale)
{
	int64_t		n = 2000;
	int			d = 4,
				k = 5;
	char		config[64];
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	GcRows		rows;
	Fit			cpu;

	snprintf(config, sizeof(config), "n=%lld d=%d k=%d scale=%g", (long long) n, d, k, scale);
	rng_state = 99;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n * d; i++)
		x[i] *= scale;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	cpu = fit(&gc_kmeans_cpu_backend, &rows, k, 7);
	check(cpu.status == GC_OK && recovers(truth, cpu.labels, n, k),
		  "wide range: cpu recovers the blobs", config);
	check(cpu.result.precision == GC_PRECISION_FLOAT64,
		  "wide range: float32 asked, float64 labeled", config);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;
			Fit			gpu;

			load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			gpu = fit(&gc_kmeans_cuda_backend, &pinned, k, 7);
			check(gpu.status == GC_OK && gpu.result.precision == GC_PRECISION_FLOAT64,
				  "wide range: gpu labeled in float64", config);
			check_same_fit(&cpu, &gpu, n, k, d, "wide range: gpu", config);
			free_fit(&gpu);
			gc_rows_release(&pinned);
		}
	}
#endif
	free_fit(&cpu);
	gc_rows_release(&rows);
	free(x);
	free(truth);
	free(centres);
}

/*
 * float64 on the GPU over few wide rows: the labeler splits the centroids
 * into spans polled apart (here 80 centroids of d = 65,536 in spans of
 * 64), and the fit equals the CPU's to the bit, labels and centroids
 */
static void
run_float64_spans_case(void)
{
#ifdef GC_WITH_CUDA
	int64_t		n = 200;
	int			d = 65536,
				k = 80;
	const char *config = "float64 spans n=200 d=65536 k=80";
	GpuBlobs	blobs;
	Fit			cpu,
				gpu;

	if (!gpu_blobs_open(&blobs, n, d, k, 0.5, 17))
		return;
	cpu = fit_with(&gc_kmeans_cpu_backend, &blobs.rows, k, 3, GC_ALGORITHM_LLOYD,
				   GC_PRECISION_FLOAT64, 2, 0.0);
	gpu = fit_with(&gc_kmeans_cuda_backend, &blobs.pinned, k, 3, GC_ALGORITHM_LLOYD,
				   GC_PRECISION_FLOAT64, 2, 0.0);
	check(gpu.status == GC_OK && gpu.result.kernel != NULL &&
		  strcmp(gpu.result.kernel, "float64") == 0, "float64 spans: the float64 kernel ran",
		  config);
	check_same_fit(&cpu, &gpu, n, k, d, "float64 spans: gpu", config);
	free_fit(&gpu);
	free_fit(&cpu);
	gpu_blobs_close(&blobs);
#endif
}

/*
 * The quick subset (engine_test quick), for compute-sanitizer on the GPU
 * machine, where kernels run tens of times slower: every path of the full
 * run (each kernel family, the stream, partial and weighted cases), on
 * fewer rows; engine_test quick N runs its Nth case alone, engine_test
 * quick count says how many there are
 */
static void
run_quick(void)
{
	static const int dims[] = {1, 3, 33, 128};
	static const int ks[] = {1, 10, 100};

	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		if (case_selected())
			run_case(1000, dims[a], 10);
	for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
		if (case_selected())
			run_case(ks[b] * 20 + 100, 4, ks[b]);
#ifdef GC_WITH_CUDA
	if (case_selected())
		run_tensor_case(4000, 64, 200, 0.5);
	if (case_selected())
		run_tensor_case(4000, 64, 512, 0.5);	/* sums past shared memory */
	if (case_selected())
		run_tensor_case(4000, 8, 256, -1.0);
	if (case_selected())
		run_tensor_case(4000, 12, 300, 0.5);
	if (case_selected())
		run_tensor_case(2000, 400, 200, 0.5);	/* points streamed past centroid tiles */
	if (case_selected())
		run_tensor_case(3000, 96, 300, -1.0);	/* uniform: many doubts (wgmma screen on Hopper) */
	if (case_selected())
		run_tensor_near_duplicates_case(8000, 64, 160, 120);
	if (case_selected())
		run_half_kernels_case(GC_PRECISION_BF16, 3000, 64, 300);	/* wgmma on Hopper */
	if (case_selected())
		run_half_kernels_case(GC_PRECISION_FP16, 3000, 64, 300);
#endif
	if (case_selected())
		run_partial_case(3000, 33, 40);
	if (case_selected())
		run_weighted_case(2000, 17, 20);
	if (case_selected())
		run_stream_format_cases();
	if (case_selected())
		run_stream_case(10000, 8, 10);
	if (case_selected())
		run_wide_range_case(1e140);
#ifdef GC_WITH_CUDA
	if (case_selected())
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
			run_restart_labels_case(&gc_kmeans_cuda_backend, "restarts gpu");
	}
#endif
}

/*
 * floor(x 2^unit_exp) the slow way: frexp's mantissa as a 53-bit integer,
 * moved one bit at a time (a right move stops once nothing is left)
 */
static gc_u128
quantize_by_frexp(double x, int unit_exp)
{
	int			e;
	gc_u128		q;

	if (!(x > 0.0))
		return 0;
	q = (gc_u128) (uint64_t) ldexp(frexp(x, &e), 53);
	for (e += unit_exp - 53; e > 0; e--)
		q <<= 1;
	for (; e < 0 && q != 0; e++)
		q >>= 1;
	return q;
}

/*
 * gc_quantize_wide reads the mantissa and exponent from x's bits: the same
 * integers as frexp's, for normal and subnormal x, zero and negative
 * values, at unit exponents from the subnormals' to the largest that keep
 * the result below 2^127
 */
static void
run_quantize_case(void)
{
	uint64_t	state = 7;
	int64_t		differ = 0,
				tried = 0;
	static const double edges[] = {0.0, -0.0, -1.0, 1.0, 0.5, DBL_MIN, DBL_MIN / 2.0,
	4.9406564584124654e-324, DBL_MAX, 3.0, 1e-300, 1e300};

	for (int i = 0; i < 50000 + (int) (sizeof(edges) / sizeof(edges[0])); i++)
	{
		double		x;
		int			e;

		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		if (i < (int) (sizeof(edges) / sizeof(edges[0])))
			x = edges[i];
		else
		{
			uint64_t	bits = (state >> 1) % UINT64_C(0x7ff0000000000000);	/* finite, >= 0 */

			if (i % 4 == 0)
				bits %= UINT64_C(1) << 52; /* subnormal */
			memcpy(&x, &bits, sizeof(x));
		}
		(void) frexp(x, &e);
		for (int unit_exp = -1100; unit_exp <= 1200; unit_exp += 37)
		{
			if (x > 0.0 && e + unit_exp > 126)
				continue;
			tried++;
			differ += gc_quantize_wide(x, unit_exp) != quantize_by_frexp(x, unit_exp);
		}
	}
	check(tried > 1000000 && differ == 0, "quantised from the bits as by moving frexp's mantissa",
		  "quantize");
	check(gc_quantize_wide(INFINITY, 0) == ~(gc_u128) 0, "+infinity saturates", "quantize");
	check(gc_quantize_wide(NAN, 0) == 0, "NaN quantises to 0", "quantize");
}

/*
 * The row store's one-pass bounding box and hash (vectorised, a clone per
 * instruction set) agree with the reference: gc_row_hash of every row, and
 * the box taken element by element; -0.0 hashes as 0.0.  Dimensions around
 * the vector widths exercise the loop's remainders.
 */
static void
run_row_hash_case(int d)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t		n = 3000;
	uint64_t	state = 42 + (uint64_t) d;
	double	   *lo = malloc(sizeof(double) * d);
	double	   *hi = malloc(sizeof(double) * d);
	bool		hashes_same = true,
				box_same = true;
	char		name[64];

	gc_rows_init(&rows, d, malloc, free, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
		{
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			slot[j] = (double) (int64_t) (state >> 40) / 1024.0 - 8192.0;
			if ((state >> 20) % 7 == 0)
				slot[j] = (state >> 30) % 2 ? -0.0 : 0.0;
			if (i == 0 || slot[j] < lo[j])
				lo[j] = slot[j];
			if (i == 0 || slot[j] > hi[j])
				hi[j] = slot[j];
		}
		gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < n; i++)
		hashes_same &= gc_rows_hash(&rows, i) == gc_row_hash(gc_rows_get(&rows, i), d);
	for (int j = 0; j < d; j++)
		box_same &= rows.lo[j] == lo[j] && rows.hi[j] == hi[j];
	snprintf(name, sizeof(name), "row hash d=%d", d);
	check(hashes_same, "one-pass hash equals gc_row_hash", name);
	check(box_same, "one-pass bounding box equals the reference", name);
	{
		double		zero[3] = {0.0, 0.0, 1.0},
					negzero[3] = {-0.0, 0.0, 1.0};

		check(gc_row_hash(zero, 3) == gc_row_hash(negzero, 3), "-0.0 hashes as 0.0", name);
	}
	gc_rows_release(&rows);
	free(lo);
	free(hi);
}

/* An interrupt hook that asks to stop at its first poll */
static bool
stop_at_once(void)
{
	return true;
}

/*
 * Deferred row hashes (engine/row_hashes.c): a store whose commits leave
 * the hashes pending, narrow or wide, against the same rows committed
 * with them.  While pending, gc_rows_hash computes each row's on the spot;
 * an interrupted finishing pass leaves the store pending; the pass on
 * several threads (n d past a thread's share) gives every hash to the
 * bit, over several chunks; the box and float_exact are the same; and a
 * k-means++ fit (whose seeding draws from the hashes) of the deferred
 * store, finished by gc_kmeans_fit itself, gives the plain store's model.
 */
static void
run_deferred_hash_case(int64_t n, int d, bool narrow)
{
	GcRows		plain,
				deferred;
	GcError		err = {0};
	uint64_t	state = 7 + (uint64_t) d;
	bool		same = true,
				box_same = true,
				pending = false;
	char		name[64];
	GcKmeansParams params = {0};
	GcKmeansResult a = {0},
				b = {0};
	int			k = 5;
	double	   *ca = malloc(sizeof(double) * k * d),
			   *cb = malloc(sizeof(double) * k * d);
	int64_t		sa[5],
				sb[5];

	snprintf(name, sizeof(name), "deferred hashes n=%lld d=%d %s", (long long) n, d,
			 narrow ? "narrow" : "wide");
	gc_rows_init(&plain, d, malloc, free, &err);
	gc_rows_init(&deferred, d, malloc, free, &err);
	if (narrow)
	{
		gc_rows_set_narrow(&plain);
		gc_rows_set_narrow(&deferred);
	}
	gc_rows_defer_hashes(&deferred);
	for (int64_t i = 0; i < n; i++)
	{
		float		row[1024];

		for (int j = 0; j < d; j++)
		{
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			row[j] = (float) ((int64_t) (state >> 40) - (INT64_C(1) << 23)) / 4096.0f +
				(float) (i % 3) * 1000.0f;
			if ((state >> 20) % 11 == 0)
				row[j] = (state >> 30) % 2 ? -0.0f : 0.0f;
		}
		if (narrow)
		{
			memcpy(gc_rows_reserve_narrow(&plain, &err), row, sizeof(float) * d);
			memcpy(gc_rows_reserve_narrow(&deferred, &err), row, sizeof(float) * d);
		}
		else
		{
			double	   *p = gc_rows_reserve(&plain, &err),
					   *q = gc_rows_reserve(&deferred, &err);

			for (int j = 0; j < d; j++)
				p[j] = q[j] = row[j] + (j % 5 == 0 ? 1e-9 : 0.0);
		}
		gc_rows_commit(&plain);
		gc_rows_commit(&deferred);
	}
	for (int c = 0; c < deferred.nchunks; c++)
		pending |= deferred.chunks[c].hashes_pending;
	check(pending && deferred.nchunks > 1, "commits leave the hashes pending, over several chunks",
		  name);
	for (int64_t i = 0; i < n; i++)
		same &= gc_rows_hash(&deferred, i) == gc_rows_hash(&plain, i);
	check(same, "a pending row's hash, computed on the spot, is the committed one", name);
	for (int j = 0; j < d; j++)
		box_same &= deferred.lo[j] == plain.lo[j] && deferred.hi[j] == plain.hi[j];
	check(box_same && deferred.float_exact == plain.float_exact,
		  "the bounding box and float_exact are the committed ones", name);

	check(gc_rows_finish_hashes(&deferred, stop_at_once, &err) == GC_INTERRUPTED,
		  "an interrupted pass says so", name);
	pending = true;
	for (int c = 0; c < deferred.nchunks; c++)
		pending &= deferred.chunks[c].hashes_pending;
	check(pending, "an interrupted pass leaves every chunk pending", name);
	memset(&err, 0, sizeof(err));

	check(gc_rows_finish_hashes(&deferred, NULL, &err) == GC_OK, "the pass finishes", name);
	for (int c = 0; c < deferred.nchunks; c++)
		same &= !deferred.chunks[c].hashes_pending &&
			memcmp(deferred.chunks[c].hashes, plain.chunks[c].hashes,
				   sizeof(uint64_t) * deferred.chunks[c].count) == 0;
	check(same, "every stored hash equals the committed one to the bit", name);

	/* a fresh deferred store that gc_kmeans_fit finishes itself */
	gc_rows_release(&deferred);
	gc_rows_init(&deferred, d, malloc, free, &err);
	if (narrow)
		gc_rows_set_narrow(&deferred);
	gc_rows_defer_hashes(&deferred);
	for (int64_t i = 0; i < n; i++)
	{
		double		row[1024];

		gc_rows_copy_row(&plain, i, row);
		if (narrow)
			for (int j = 0; j < d; j++)
				gc_rows_reserve_narrow(&deferred, &err)[j] = (float) row[j];
		else
			memcpy(gc_rows_reserve(&deferred, &err), row, sizeof(double) * d);
		gc_rows_commit(&deferred);
	}
	params.k = k;
	params.max_iter = 5;
	params.tol = 0.0;
	params.n_init = 1;
	params.seed = 3;
	params.init = GC_INIT_KMEANSPP;
	params.algorithm = GC_ALGORITHM_LLOYD;
	a.centroids = ca;
	a.sizes = sa;
	b.centroids = cb;
	b.sizes = sb;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &plain, &params, &a, &err) == GC_OK &&
		  gc_kmeans_fit(&gc_kmeans_cpu_backend, &deferred, &params, &b, &err) == GC_OK,
		  "both fits succeed", name);
	check(memcmp(ca, cb, sizeof(double) * k * d) == 0 && a.inertia == b.inertia,
		  "the deferred store's k-means++ fit equals the plain store's to the bit", name);
	gc_rows_release(&plain);
	gc_rows_release(&deferred);
	free(ca);
	free(cb);
}

/*
 * gc_rows_permute over several chunks, weighted: row i becomes the old
 * row order[i] with its hash and weight, the order array ends as the
 * identity, and the box and total weight stay
 */
static void
run_permute_case(int64_t n, int d)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t    *order = malloc(sizeof(int64_t) * n);
	int64_t    *was = malloc(sizeof(int64_t) * n);
	uint64_t   *hashes = malloc(sizeof(uint64_t) * n);
	bool		same = true,
				identity = true;
	int64_t		total;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	gc_rows_set_weighted(&rows);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = (double) (i * d + j);
		gc_rows_commit_weighted(&rows, (double) (1 + i % 7));
		hashes[i] = gc_rows_hash(&rows, i);
	}
	total = rows.total_weight;
	/* a permutation of several cycles: i -> (i * 7919 + 13) mod n, n prime */
	for (int64_t i = 0; i < n; i++)
		order[i] = was[i] = (i * 7919 + 13) % n;
	check(gc_rows_permute(&rows, order, &err) == GC_OK, "permute: runs", "rowstore");
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		o = was[i];

		identity &= order[i] == i;
		same &= gc_rows_hash(&rows, i) == hashes[o] &&
			gc_rows_weight(&rows, i) == (double) (1 + o % 7);
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (o * d + j);
	}
	check(rows.nchunks > 1, "permute: rows span several chunks", "rowstore");
	check(same, "permute: each row moved with its hash and weight", "rowstore");
	check(identity, "permute: the order is consumed to the identity", "rowstore");
	check(rows.total_weight == total && rows.lo[0] == 0.0 &&
		  rows.hi[d - 1] == (double) ((n - 1) * d + d - 1),
		  "permute: box and total weight unchanged", "rowstore");
	gc_rows_release(&rows);
	free(order);
	free(was);
	free(hashes);
}

int
main(int argc, char **argv)
{
	static const int dims[] = {1, 2, 3, 8, 17, 32, 33, 64, 128, 512};
	static const int ks[] = {1, 2, 10, 100, 1000};

	if (argc > 1 && strcmp(argv[1], "quick") == 0)
	{
		select_cases(argc > 2 ? argv[2] : NULL);
		run_quick();
		if (!cases_end())
		{
			printf("no case %s\n", argv[2]);
			return 2;
		}
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}

#ifdef GC_WITH_CUDA
	if (argc > 1 && strcmp(argv[1], "bounded") == 0)
	{
		run_bounded_cases();
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
#endif
	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		run_case(4000, dims[a], 10);
	for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
		run_case(ks[b] * 20 + 100, 4, ks[b]);
	run_case(100000, 8, 100);
#ifdef GC_WITH_CUDA
	run_tensor_case(20000, 64, 200, 0.5);
	run_tensor_case(30000, 48, 256, 4.0);
	run_tensor_case(20000, 40, 128, -1.0);	/* uniform in [0, 1)^d */
	run_tensor_case(20000, 96, 300, -1.0);	/* uniform, partial centroid tiles */
	run_tensor_near_duplicates_case(30000, 64, 300, 220);	/* the check skips by separations */
	run_tensor_case(20000, 64, 512, 0.5);	/* sums past shared memory: global atomics */
	/* small d, the point tile resident: 32-, 64- and 128-byte column steps */
	run_tensor_case(20000, 8, 200, 0.5);
	run_tensor_case(20000, 8, 256, -1.0);
	run_tensor_case(20000, 12, 300, 0.5);	/* padded to 16 */
	run_tensor_case(20000, 24, 200, -1.0);
	run_tensor_case(20000, 32, 1000, 0.5);
	/* rows too wide to stay resident: points streamed past several centroid tiles */
	run_tensor_case(4000, 400, 200, 0.5);
	run_tensor_case(3000, 1024, 160, 0.5);	/* bf16 streamed too */
	/* bf16 on wgmma against mma.sync: partial tiles, 1 to 16 column slices */
	for (int p = 0; p < 2; p++)
	{
		GcPrecision half = p == 0 ? GC_PRECISION_BF16 : GC_PRECISION_FP16;

		run_half_kernels_case(half, 20000, 48, 200);
		run_half_kernels_case(half, 10000, 400, 300);
		run_half_kernels_case(half, 5000, 1024, 1000);
	}
#endif
	run_partial_case(20000, 8, 12);
	run_partial_case(3000, 33, 40);
	run_weighted_case(3000, 3, 5);
	run_weighted_case(2000, 17, 20);
	run_hybrid_rule_cases();
	run_wide_range_case(1e20);
	run_float64_spans_case();
	run_wide_range_case(1e140);
	run_stream_format_cases();
	run_stream_case(40000, 2, 5);
	run_stream_case(30000, 8, 10);
	run_progress_case(&gc_kmeans_cpu_backend, "progress cpu");
	run_restart_labels_case(&gc_kmeans_cpu_backend, "restarts cpu");
	run_allocator_switch_case();
	run_placement_case();
	run_narrow_case();
	for (int d = 1; d <= 17; d++)
		run_row_hash_case(d);
	run_row_hash_case(768);
	run_deferred_hash_case(3000, 3, false);
	run_deferred_hash_case(20000, 768, true);
	run_deferred_hash_case(9000, 257, false);
	run_quantize_case();
	run_permute_case(40009, 3);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			run_progress_case(&gc_kmeans_cuda_backend, "progress gpu");
			run_restart_labels_case(&gc_kmeans_cuda_backend, "restarts gpu");
			run_pin_ahead_case();
			run_staged_upload_case(false);
			run_staged_upload_case(true);
			run_bounded_cases();
		}
	}
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
