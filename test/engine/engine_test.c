/*-------------------------------------------------------------------------
 *
 * engine_test.c
 *	  Engine tests without a server: fits k-means on generated blobs with
 *	  the CPU reference and, where a GPU is usable, the CUDA backend, and
 *	  checks that they agree (labels equal, centroids equal to the last
 *	  bit, inertia within 1e-9 relative), that known centres are
 *	  recovered, and that the result does not depend on row order.
 *
 *	  The main program; the suites are in suite_*.c (engine_suites.h), the
 *	  harness (checks, generator, data, fits) in harness.c, and the GPU
 *	  benchmark runner in kmeans_bench.c.
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
#include "engine_suites.h"
#include "kmeans_hybrid.h"
#ifdef GC_WITH_CUDA
#include <cuda_runtime_api.h>

#include "gc_cuda.h"
#endif

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
		run_tensor_near_duplicates_case(8000, 64, 160, 120, 0);
	if (case_selected())
		run_tensor_near_duplicates_case(8000, 96, 160, 120, 48);	/* the fp16 screen's slack */
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
	run_tensor_near_duplicates_case(30000, 64, 300, 220, 0);	/* the check skips by separations */
	/* 64 centroids a pattern: the check stays costly with separations, labels stay exact */
	run_tensor_near_duplicates_case(8000, 64, 256, 4, 0);
	run_tensor_near_duplicates_case(20000, 128, 300, 220, 60);	/* the fp16 screen's slack */
	run_tensor_chunks_case();
	run_tensor_case(20000, 64, 512, 0.5);	/* sums past shared memory: global atomics */
	/* large k: the exact check of short lists in slices, list passes in groups */
	run_tensor_case(16000, 128, 2048, 0.5);
	run_tensor_case(16000, 64, 4096, -1.0);
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
	run_tolerance_case();
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
