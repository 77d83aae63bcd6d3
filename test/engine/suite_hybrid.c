/*-------------------------------------------------------------------------
 *
 * suite_hybrid.c
 *	  The hybrid's rules (engine/kmeans_hybrid.c) as the driver applies
 *	  them, for the CPU's and the GPU's constants, without a GPU; and the
 *	  kernels' names.
 *
 * IDENTIFICATION
 *	  test/engine/suite_hybrid.c
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
 * The hybrid's rules as the driver applies them, for each device's
 * constants: when pruning is tried, the GPU's probe on 1/16 of the rows,
 * the fall-backs on work and on time, and the re-ordering once the work
 * has settled.  The GPU's are checked here without a GPU.
 */
void
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
