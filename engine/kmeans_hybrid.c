/*-------------------------------------------------------------------------
 *
 * kmeans_hybrid.c
 *	  When k-means labels by pruning (Wu & Hong, 2011: the triangle
 *	  inequality over ranked inter-centroid distances) rather than by
 *	  Lloyd's full scan, for every device: the rules the driver applies
 *	  after each iteration, and each device's measured constants.
 *
 * Pruned labeling gives the same labels as Lloyd's with fewer distances,
 * but each costs more (a walk in rank order, divergent on the GPU) and the
 * ranked tables cost O(k^2 d + k^2 log k) per iteration.  The hybrid tries
 * pruning from the second iteration (the first has no previous labels)
 * where it may pay, measures the work per point it did, and goes back to
 * Lloyd's, for the rest of the restart, once it does not pay.
 *
 * IDENTIFICATION
 *	  engine/kmeans_hybrid.c
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_hybrid.h"

#include <limits.h>
#include <math.h>

/*
 * The CPU, where rows are scanned one at a time (a narrow store, which the
 * screened labeling of cpu_labeling.c cannot read): pruning pays unless
 * nearly every centroid must be tried (a distance in the pruned walk costs
 * about what one in the scan does), so auto prunes from iteration 2
 * wherever k >= 4 and n >= 4 k, on every row, and goes back to Lloyd's
 * when the work passes 0.75 n k.  Where the screened labeling runs, the
 * CPU backend says pruning cannot pay (can_prune), and auto stays Lloyd's:
 * the screen's distances cost a tenth to a thirtieth of the walk's (one
 * row, scalar, one thread); pruning took 1.6 times as long at 200k x 32,
 * k = 100, and 1.3 times at 200k x 2, k = 1,000.
 */
const GcHybridRules gc_hybrid_cpu_rules = {
	.pruned_min_k = 1,
	.pruned_max_k = INT_MAX,
	.auto_min_k = 4,
	.auto_min_rows_per_k = 4,
	.auto_start_ratio = 0.0,
	.probe_fraction = 0,
	.probe_min_rows = 0,
	.max_work_ratio = 0.75,
	.settled = 0.0,
};

/*
 * The GPU: the hybrid's cost model, calibrated on an H100 (bench/results/):
 * - pruning is tried only where Lloyd's labeling is a SIMT kernel
 *   (register or tiled): the tensor-core kernels do a distance far more
 *   cheaply than the pruned loop's scalar walk can (can_prune);
 * - it is tried only when its per-iteration tables, O(k^2 d + k^2 log k),
 *   are small against a Lloyd pass, O(n k d): k log2 k <= PRUNE_START_RATIO
 *   n d (pruning won at ratios up to 8.6e-4 (n = 2M, d = 2, k = 400) and
 *   lost at 1.3e-3 (Wu-Hong, k = 1024), where even its probe cost 8% over
 *   50 iterations);
 * - the first pruned iteration of auto is a probe on 1/16 of the points
 *   (the rest labelled by Lloyd's kernel), so that where pruning does not
 *   pay the hybrid loses little finding out;
 * - after every pruned iteration of the first epoch, pruning is kept only
 *   if the measured work ratio k'/k is below PRUNE_MAX_WORK_RATIO: a
 *   distance in the pruned walk (random centroid order, divergent loop
 *   lengths) costs 12 to 20 times one in the register kernel, so the
 *   break-even ratio is 0.05 to 0.08 (H100, n = 245,760 to 4M, d = 2 to
 *   38, k = 23 to 1024: pruned wins at ratios 0.02 to 0.06, loses at 0.13
 *   to 0.18);
 * - once the mean work per point has settled (changes by less than
 *   PRUNE_SETTLED between iterations), the points are re-ordered by work
 *   (the second epoch), after which a pruned labeling slower than the last
 *   measured Lloyd labeling switches back to Lloyd's for good.
 * The pruned kernel takes k up to GC_PRUNED_MAX_K (cuda/kmeans_kernels.cuh).
 */
#define PRUNE_START_RATIO 0.001
#define PRUNE_SETTLED 0.05
#define PRUNE_MAX_WORK_RATIO 0.08
#define PRUNE_MIN_K 8
/* the hybrid's probe: pruned labeling on 1/16 of the points, at least 16384 */
#define PRUNE_PROBE_FRACTION 16
#define PRUNE_PROBE_MIN_ROWS 16384

const GcHybridRules gc_hybrid_gpu_rules = {
	.pruned_min_k = 2,
	.pruned_max_k = 4096,
	.auto_min_k = PRUNE_MIN_K,
	.auto_min_rows_per_k = 0,
	.auto_start_ratio = PRUNE_START_RATIO,
	.probe_fraction = PRUNE_PROBE_FRACTION,
	.probe_min_rows = PRUNE_PROBE_MIN_ROWS,
	.max_work_ratio = PRUNE_MAX_WORK_RATIO,
	.settled = PRUNE_SETTLED,
};

/*
 * Whether pruning is worth trying at all
 */
static bool
pruning_may_pay(const GcHybridRules *rules, const GcKmeansParams *params,
				int64_t n, int d, bool can_prune)
{
	int			k = params->k;

	if (params->algorithm == GC_ALGORITHM_LLOYD || k < rules->pruned_min_k ||
		k > rules->pruned_max_k)
		return false;
	if (params->algorithm == GC_ALGORITHM_PRUNED)
		return true;
	return can_prune && k >= rules->auto_min_k &&
		n >= rules->auto_min_rows_per_k * (int64_t) k &&
		(rules->auto_start_ratio == 0.0 ||
		 k * log2((double) k) <= rules->auto_start_ratio * (double) n * d);
}

void
gc_hybrid_start(GcHybrid *h, const GcHybridRules *rules,
				const GcKmeansParams *params, int64_t n, int d, bool can_prune)
{
	h->rules = rules;
	h->algorithm = params->algorithm;
	h->k = params->k;
	h->n = n;
	h->use_pruned = pruning_may_pay(rules, params, n, d, can_prune);
	h->settled = false;
	h->last_mean_work = 0.0;
	h->lloyd_label_ms = 0.0;
	h->probe_rows = n;
	/* auto probes on a slice first; the probe's Lloyd part needs can_prune */
	if (params->algorithm == GC_ALGORITHM_AUTO && can_prune && rules->probe_fraction > 0)
	{
		h->probe_rows = n / rules->probe_fraction;
		if (h->probe_rows < rules->probe_min_rows)
			h->probe_rows = n < rules->probe_min_rows ? n : rules->probe_min_rows;
	}
}

int64_t
gc_hybrid_pruned_rows(const GcHybrid *h, int it)
{
	if (!h->use_pruned || it < 2)
		return 0;
	return it == 2 ? h->probe_rows : h->n;
}

GcHybridAction
gc_hybrid_review(GcHybrid *h, int64_t pruned_rows, const GcStepStatus *step)
{
	double		mean_work;

	if (pruned_rows == 0)
	{
		h->lloyd_label_ms = step->labeling_ms;
		return GC_HYBRID_KEEP;
	}
	mean_work = step->pruned_work / (double) pruned_rows;
	/* back to Lloyd's as soon as pruning does not pay */
	if (h->algorithm == GC_ALGORITHM_AUTO &&
		(mean_work > h->rules->max_work_ratio * h->k ||
		 (h->settled && step->labeling_ms > h->lloyd_label_ms)))
	{
		h->use_pruned = false;
		return GC_HYBRID_LLOYD;
	}
	/* end of the first epoch: re-order once the work has settled */
	if (h->rules->settled > 0.0 && !h->settled && h->last_mean_work > 0 &&
		fabs(mean_work - h->last_mean_work) <= h->rules->settled * h->last_mean_work)
	{
		h->settled = true;
		h->last_mean_work = mean_work;
		return GC_HYBRID_REORDER;
	}
	h->last_mean_work = mean_work;
	return GC_HYBRID_KEEP;
}
