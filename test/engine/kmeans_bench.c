/*-------------------------------------------------------------------------
 *
 * kmeans_bench.c
 *	  The k-means benchmark runner (bench/kmeans_suite.py drives it on the
 *	  GPU machine): times GPU fits of one shape and prints one JSON line.
 *
 *	  kmeans_bench N D K DATA ALGORITHM PRECISION MAX_ITER [KERNEL]
 *		PRECISION is float32, float64, tf32, bf16, fp16 or auto; the line
 *		says which ran and what the check of reduced precision measured
 *		(its time is apart from the iterations');
 *		DATA is uniform, gauss:VARIANCE (clusters around K uniform centres
 *		in the unit cube) or file:PATH (N x D little-endian doubles);
 *		KERNEL forces the float32 labeling kernel (GcKmeansParams.kernel):
 *		register or tiled (the SIMT kernel for D), tensor (the TF32
 *		screen on mma.sync), tensor-streaming (the same, both operands
 *		streamed), tensor-wgmma (the TF32 screen on Hopper's wgmma, where
 *		the device runs it) or tensor-fp16 (the screen there on scaled
 *		fp16 copies);
 *		under precision bf16, bf16-mma (the mma.sync kernel) or bf16-wgmma
 *		(the Hopper kernel, where the device runs it), and under fp16
 *		fp16-mma or fp16-wgmma; a comma-separated
 *		list times each on the same rows, one JSON line each.
 *		GPUCLUST_BENCH_INIT picks the seeding: kmeans++ (greedy, the
 *		default), auto (the product's rule: k-means|| where greedy is too
 *		slow) or kmeans||; the line says which ran ("init") and k-means||'s
 *		phases.
 *
 * IDENTIFICATION
 *	  test/engine/kmeans_bench.c
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
#include <cuda_runtime_api.h>

#include "gc_cuda.h"
#endif

#ifdef GC_WITH_CUDA
/* The kernel a KERNEL name forces; false for an unknown name */
static bool
parse_kernel(const char *forced, GcKernel *kernel, bool *streamed)
{
	*kernel = GC_KERNEL_AUTO;
	*streamed = false;
	if (forced == NULL || strcmp(forced, "auto") == 0)
		;
	else if (strcmp(forced, "register") == 0)
		*kernel = GC_KERNEL_REGISTER;
	else if (strcmp(forced, "tiled") == 0)
		*kernel = GC_KERNEL_TILED;
	else if (strcmp(forced, "tensor") == 0)
		*kernel = GC_KERNEL_TENSOR_SCREENED;
	else if (strcmp(forced, "tensor-streaming") == 0)
	{
		*kernel = GC_KERNEL_TENSOR_SCREENED;
		*streamed = true;
	}
	else if (strcmp(forced, "tensor-wgmma") == 0)
		*kernel = GC_KERNEL_TENSOR_SCREENED_WGMMA;
	else if (strcmp(forced, "tensor-fp16") == 0)
		*kernel = GC_KERNEL_TENSOR_SCREENED_FP16;
	else if (strcmp(forced, "bf16-mma") == 0)
		*kernel = GC_KERNEL_TENSOR_BF16;
	else if (strcmp(forced, "bf16-wgmma") == 0)
		*kernel = GC_KERNEL_TENSOR_BF16_WGMMA;
	else if (strcmp(forced, "fp16-mma") == 0)
		*kernel = GC_KERNEL_TENSOR_FP16;
	else if (strcmp(forced, "fp16-wgmma") == 0)
		*kernel = GC_KERNEL_TENSOR_FP16_WGMMA;
	else
		return false;
	return true;
}

/* The seeding GPUCLUST_BENCH_INIT names (kmeans++ where unset or unknown) */
static GcInit
bench_init(void)
{
	const char *name = getenv("GPUCLUST_BENCH_INIT");

	if (name != NULL && strcmp(name, "auto") == 0)
		return GC_INIT_AUTO;
	if (name != NULL && strcmp(name, "kmeans||") == 0)
		return GC_INIT_KMEANS_PARALLEL;
	return GC_INIT_KMEANSPP;
}

/* One fit of the rows on the GPU, seeded as bench_init says, the kernel forced */
static Fit
bench_fit(GcRows *rows, int k, GcAlgorithm algorithm, GcPrecision precision, int max_iter,
		  GcKernel kernel, bool streamed)
{
	GcKmeansParams params = one_restart_params(k, bench_init(), max_iter, 0.0);

	params.algorithm = algorithm;
	params.precision = precision;
	params.kernel = kernel;
	params.tensor_streamed = streamed;
	return fit_params(&gc_kmeans_cuda_backend, rows, &params);
}

/* Time fits of the rows with one kernel and print the JSON line */
static void
time_kernel(GcRows *rows, int64_t n, int d, int k, const char *data, const char *algorithm,
			const char *precision, int max_iter, GcKernel kernel, bool streamed)
{
	Fit			gpu;
	GcAlgorithm alg = strcmp(algorithm, "lloyd") == 0 ? GC_ALGORITHM_LLOYD :
		strcmp(algorithm, "pruned") == 0 ? GC_ALGORITHM_PRUNED : GC_ALGORITHM_AUTO;
	GcPrecision prec = strcmp(precision, "float64") == 0 ? GC_PRECISION_FLOAT64 :
		strcmp(precision, "tf32") == 0 ? GC_PRECISION_TF32 :
		strcmp(precision, "bf16") == 0 ? GC_PRECISION_BF16 :
		strcmp(precision, "fp16") == 0 ? GC_PRECISION_FP16 :
		strcmp(precision, "auto") == 0 ? GC_PRECISION_AUTO : GC_PRECISION_FLOAT32;
	static const char *const ran_names[] = {"float32", "float64", "tf32", "bf16", "fp16", "auto"};
	double		per_iteration;

	gpu = bench_fit(rows, k, alg, prec, 2, kernel, streamed);	/* warm-up */
	free_fit(&gpu);
	/*
	 * The median of three fits: an iteration waits for the host to read its
	 * status, whose jitter (tens of microseconds) is 10% of a 0.4 ms
	 * iteration.  The final scoring pass costs about one iteration.
	 */
	{
		double		times[3];

		for (int r = 0; r < 3; r++)
		{
			if (r > 0)
				free_fit(&gpu);
			gpu = bench_fit(rows, k, alg, prec, max_iter, kernel, streamed);
			times[r] = gpu.result.timings.iterations_ms / (gpu.result.iterations + 1);
		}
		per_iteration = fmax(fmin(times[0], times[1]),
							 fmin(fmax(times[0], times[1]), times[2]));
	}
	printf("{\"n\": %lld, \"d\": %d, \"k\": %d, \"data\": \"%s\", \"algorithm\": \"%s\", "
		   "\"ran\": \"%s\", \"kernel\": \"%s\", \"precision\": \"%s\", \"iterations\": %d, "
		   "\"ms_per_iteration\": %.4f, \"tflops\": %.2f, \"skipped\": %.4f, "
		   "\"labeling_ms_per_iteration\": %.4f, \"update_ms_per_iteration\": %.4f, "
		   "\"steps_ms\": %.2f, \"scoring_ms\": %.2f, \"iterations_ms\": %.2f, "
		   "\"transfer_ms\": %.2f, \"seeding_ms\": %.2f, \"init\": \"%s\", "
		   "\"rounds_ms\": %.2f, \"weights_ms\": %.2f, \"recluster_ms\": %.2f, "
		   "\"inertia\": %.10g, "
		   "\"rechecked\": %.4f, \"exact_checked\": %.6f, \"precision_ran\": \"%s\", "
		   "\"check_ms\": %.2f, \"sample_disagreement\": %.4f, \"sample_inertia_excess\": %.4g}\n",
		   (long long) n, d, k, strncmp(data, "file:", 5) == 0 ? "file" : data, algorithm,
		   gpu.result.pruned ? "pruned" : "lloyd", gpu.result.kernel, precision,
		   gpu.result.iterations, per_iteration,
		   2.0 * n * k * d / (per_iteration * 1e9), gpu.result.skipped_fraction,
		   gpu.result.timings.labeling_ms / gpu.result.iterations,
		   gpu.result.timings.update_ms / gpu.result.iterations,
		   gpu.result.timings.steps_ms, gpu.result.timings.scoring_ms,
		   gpu.result.timings.iterations_ms,
		   gpu.result.timings.transfer_ms, gpu.result.timings.seeding_ms,
		   gpu.result.init ? gpu.result.init : "?", gpu.result.timings.seeding.rounds_ms,
		   gpu.result.timings.seeding.weights_ms, gpu.result.timings.seeding.recluster_ms,
		   gpu.result.inertia, gpu.result.rechecked_fraction, gpu.result.exact_fraction,
		   ran_names[gpu.result.precision], gpu.result.timings.check_ms,
		   gpu.result.check.disagreement, gpu.result.check.inertia_excess);
	fflush(stdout);
	free_fit(&gpu);
}

/*
 * The upload's cost (stderr): a one-iteration fit's transfer phase from
 * page-locked rows and from malloc'd ones (staged by host_upload.cu), and
 * the driver's own copy of the same bytes from x, malloc'd, as a baseline
 */
static void
report_upload(GcRows *pinned, GcRows *plain, const double *x, int64_t n, int d, int k)
{
	size_t		bytes = sizeof(double) * (size_t) n * d;
	double		transfer[2],
				driver = NAN,
				t0;
	GcRows	   *stores[2] = {pinned, plain};
	void	   *device = NULL;

	for (int s = 0; s < 2; s++)
	{
		Fit			once = fit_kernel(&gc_kmeans_cuda_backend, stores[s], k, 0,
									  GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 1, 0.0,
									  GC_KERNEL_AUTO, false);

		transfer[s] = once.result.timings.transfer_ms;
		free_fit(&once);
	}
	if (cudaMalloc(&device, bytes) == cudaSuccess)
	{
		t0 = gc_now_ms();
		if (cudaMemcpy(device, x, bytes, cudaMemcpyHostToDevice) == cudaSuccess)
			driver = gc_now_ms() - t0;
		cudaFree(device);
	}
	fprintf(stderr, "upload of %.0f MB of rows: fit transfer %.1f ms page-locked, %.1f ms malloc'd "
			"(staged); the driver's cudaMemcpy from malloc'd memory %.1f ms\n",
			bytes / 1e6, transfer[0], transfer[1], driver);
}
#endif

/* Time each kernel of the comma-separated list forced (one if NULL) on the same rows */
static void
bench(int64_t n, int d, int k, const char *data, const char *algorithm,
	  const char *precision, int max_iter, const char *forced)
{
#ifdef GC_WITH_CUDA
	char		why[256];
	char		names[256];
	double	   *x;
	GcRows		rows;
	GcKernel	kernel;
	bool		streamed;

	snprintf(names, sizeof(names), "%s", forced != NULL ? forced : "auto");
	for (char *name = strtok(names, ","); name != NULL; name = strtok(NULL, ","))
		if (!parse_kernel(name, &kernel, &streamed))
		{
			printf("unknown kernel %s: register, tiled, tensor, tensor-streaming, tensor-wgmma, "
				   "tensor-fp16, bf16-mma, "
				   "bf16-wgmma, fp16-mma or fp16-wgmma (or a comma-separated list)\n", name);
			exit(2);
		}

	rng_state = 42;
	if (strncmp(data, "file:", 5) == 0)
		x = load_file(data + 5, n, d);
	else if (strncmp(data, "gauss:", 6) == 0)
		x = make_gaussian(n, d, k, atof(data + 6));
	else
	{
		double	   *centres = malloc(sizeof(double) * k * d);

		x = make_data(n, d, k, -1.0, centres, NULL);
		free(centres);
	}
	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		return;
	}
	{
		double		t0 = gc_now_ms(),
					t_plain;
		GcRows		plain;

		load_rows(&plain, x, n, d, NULL, plain_alloc, free);
		t_plain = gc_now_ms() - t0;
		t0 = gc_now_ms();
		load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
		fprintf(stderr, "row store fill n=%lld d=%d: %.1f ms pinned, %.1f ms malloc\n",
				(long long) n, d, gc_now_ms() - t0, t_plain);
		report_upload(&rows, &plain, x, n, d, k);
		gc_rows_release(&plain);
	}
	snprintf(names, sizeof(names), "%s", forced != NULL ? forced : "auto");
	for (char *name = strtok(names, ","); name != NULL; name = strtok(NULL, ","))
	{
		parse_kernel(name, &kernel, &streamed);
		time_kernel(&rows, n, d, k, data, algorithm, precision, max_iter, kernel, streamed);
	}
	gc_rows_release(&rows);
	free(x);
#else
	printf("built without CUDA\n");
#endif
}

int
main(int argc, char **argv)
{
	if (argc < 8 || argc > 9)
	{
		printf("usage: kmeans_bench N D K DATA ALGORITHM PRECISION MAX_ITER [KERNEL]\n");
		return 2;
	}
	bench(atoll(argv[1]), atoi(argv[2]), atoi(argv[3]), argv[4], argv[5], argv[6],
		  atoi(argv[7]), argc == 9 ? argv[8] : NULL);
	return 0;
}
