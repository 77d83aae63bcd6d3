/*-------------------------------------------------------------------------
 *
 * suite_labelers.c
 *	  The GPU's labelers against the CPU (CUDA builds only): the tensor-core
 *	  kernels (exact TF32 screen, near duplicates, bf16 and fp16 on mma.sync
 *	  and wgmma), the drift bounds, and float64 over wide rows in spans.
 *
 * IDENTIFICATION
 *	  test/engine/suite_labelers.c
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
#include "engine_suites.h"
#include "kmeans_hybrid.h"
#ifdef GC_WITH_CUDA
#include <cuda_runtime_api.h>

#include "gc_cuda.h"
#endif

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
 * The wgmma screen on scaled fp16 operands, forced (Hopper, d > 32): the
 * fit from the same seed must be the CPU's to the bit, as the TF32
 * screen's is
 */
static void
check_fp16_screen(const Fit *cpu, GcRows *pinned, int k, uint64_t seed, int max_iter,
				  const char *config)
{
	Fit			forced = fit_kernel(&gc_kmeans_cuda_backend, pinned, k, seed,
									GC_ALGORITHM_AUTO, GC_PRECISION_FLOAT32, max_iter, 0.0,
									GC_KERNEL_TENSOR_SCREENED_FP16, false);

	check(forced.status == GC_OK && forced.result.kernel != NULL &&
		  strcmp(forced.result.kernel, "tensor_screened_fp16") == 0,
		  "the fp16 wgmma screen, forced, runs", config);
	check_same_fit(cpu, &forced, pinned->n, k, pinned->d, "gpu forced fp16 screen", config);
	free_fit(&forced);
}

/*
 * Exact labels from the tensor cores: float32 Lloyd on a shape that takes
 * the TF32 screen (d >= 12, k >= 128; below d = 12 the test forces it
 * with params.kernel, so that the narrow column steps stay tested) must
 * equal the CPU's fit to the bit, on blobs (few doubtful points) and on
 * uniform data (many, labelled again by 3xTF32 and some exactly).  On
 * Hopper, rows of whole 128-byte steps (d = 32 and d > 32) take the wgmma
 * screen, its fp16 form is forced beside it (d > 32), and the mma.sync
 * screen too.  On blobs, bf16
 * and fp16 products must find the same clusters: their error is far below
 * the gaps between blobs.
 */
void
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
	if (d > 32 && on_hopper())
		check_fp16_screen(&cpu, pinned, k, 3, 30, config);
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
 * bit, check rows exactly, and stay on the tensor kernels, also where
 * many centroids share a pattern and the check stays costly with the
 * separations (that once sent the fit to the tiled kernel, whose float32
 * labels are not the CPU's).  On Hopper the fp16 screen is forced beside
 * (d > 32).  spread_bits > 0 scales column j by 2^-(j spread_bits / d):
 * the last columns then lie far below fp16's smallest normal value at
 * the fp16 screen's scale (its bound's slack).
 */
void
run_tensor_near_duplicates_case(int64_t n, int d, int k, int patterns, int spread_bits)
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
	for (int64_t i = 0; spread_bits > 0 && i < n * d; i++)
		x[i] = ldexp(x[i], -(int) ((i % d) * spread_bits / d));
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	snprintf(config, sizeof(config),
			 "tensor near-duplicates n=%lld d=%d k=%d patterns=%d spread=%d",
			 (long long) n, d, k, patterns, spread_bits);
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
	if (d > 32 && on_hopper())
		check_fp16_screen(&cpu, &pinned, k, 5, 20, config);
	free_fit(&cpu);
	free_fit(&gpu);
	gc_rows_release(&rows);
	gc_rows_release(&pinned);
	free(x);
}

/* One labeling from given centroids (max_iter 1) with a forced kernel */
static Fit
given_fit(const GcKmeansBackend *backend, GcRows *rows, int k, const double *centroids,
		  GcKernel kernel)
{
	GcKmeansParams params = one_restart_params(k, GC_INIT_GIVEN, 1, 0.0);

	params.init_centroids = centroids;
	params.algorithm = GC_ALGORITHM_LLOYD;
	params.kernel = kernel;
	return fit_params(backend, rows, &params);
}

/*
 * A labeling in several chunks (kmeans_cuda.cu labels 2^38 / (k d) rows
 * at a time: 65,536 at k d = 2^22), whose rows' norms differ from chunk
 * to chunk: the first chunk near the centre of the data, the second on
 * near ties between pairs of centroids of norm 100 (the gap in distance
 * about 0.03, the screen's rounding about 0.2), which the screen must
 * doubt with each row's own norm.  Until the fp16 screen's norms followed
 * the chunk, the second chunk's rows were decided with the first's.  One
 * labeling from given centroids must be the CPU's to the bit, on the
 * chosen screen and, on Hopper, on the fp16 one forced.
 */
void
run_tensor_chunks_case(void)
{
	const int	d = 1024,
				k = 4096;
	const int64_t n = 65536 + 8192;
	char		config[64];
	char		why[256];
	double	   *x,
			   *c;
	GcRows		rows,
				pinned;
	Fit			cpu;

	if (!gc_cuda_use_device(0, why, sizeof(why)))
		return;
	x = malloc(sizeof(double) * n * d);
	c = malloc(sizeof(double) * k * d);
	snprintf(config, sizeof(config), "tensor chunks n=%lld d=%d k=%d", (long long) n, d, k);
	rng_state = 4242;
	for (int64_t i = 0; i < (int64_t) k * d; i++)
		c[i] = normal() * 100.0 / sqrt((double) d);
	for (int64_t i = 0; i < n; i++)
	{
		int			a = 2 * (int) (uniform() * (k / 2)),
					side = uniform() < 0.5 ? 1 : -1;

		for (int j = 0; j < d; j++)
			x[i * d + j] = i < 65536 ? 1e-3 * normal() :
				(c[(int64_t) a * d + j] + c[(int64_t) (a + 1) * d + j]) / 2 +
				side * 1e-4 * (c[(int64_t) a * d + j] - c[(int64_t) (a + 1) * d + j]);
	}
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	cpu = given_fit(&gc_kmeans_cpu_backend, &rows, k, c, GC_KERNEL_AUTO);
	for (int forced = 0; forced < (on_hopper() ? 2 : 1); forced++)
	{
		Fit			gpu = given_fit(&gc_kmeans_cuda_backend, &pinned, k, c,
									forced ? GC_KERNEL_TENSOR_SCREENED_FP16 : GC_KERNEL_AUTO);

		printf("%s: kernel %s\n", config, gpu.result.kernel ? gpu.result.kernel : "?");
		check(gpu.status == GC_OK && gpu.result.kernel != NULL &&
			  strncmp(gpu.result.kernel, "tensor_screened", 15) == 0,
			  "chunks: the screen labels", config);
		check_same_fit(&cpu, &gpu, n, k, d, forced ? "gpu chunks, fp16 screen" : "gpu chunks",
					   config);
		free_fit(&gpu);
	}
	free_fit(&cpu);
	gc_rows_release(&rows);
	gc_rows_release(&pinned);
	free(x);
	free(c);
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
void
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

void
run_bounded_cases(void)
{
	run_bounded_case(400000, 8, 100, 1);
	run_bounded_case(100000, 3, 100, 3);
	run_bounded_case(60000, 32, 100, 1);
	run_bounded_case(90000, 8, 1500, 1);
}
#endif

/*
 * float64 on the GPU over few wide rows: the labeler splits the centroids
 * into spans polled apart (here 80 centroids of d = 65,536 in spans of
 * 64), and the fit equals the CPU's to the bit, labels and centroids
 */
void
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
