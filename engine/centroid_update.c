/*-------------------------------------------------------------------------
 *
 * centroid_update.c
 *	  The centroid update of Lloyd's iterations on the host, from the
 *	  exact fixed-point sums of a step: the CPU backend's, and the
 *	  sharded fit's over the sums its shards add up (kmeans_shards.c), so
 *	  that both are one computation.
 *
 * Each centroid moves to the mean of its rows, dequantised from the
 * integer sums (gc_dequantize_mean); under the cosine metric the mean is
 * scaled back to unit length (spherical k-means).  A cluster of weight
 * zero, or whose mean has no direction (rows that cancel, as x and -x),
 * keeps its centroid.  Each dimension's squared shift is quantised alone
 * before it is summed: the GPU's sum, to the bit (tolerance.c).
 *
 * IDENTIFICATION
 *	  engine/centroid_update.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

bool
gc_kmeans_update_centroids(const GcFrame *frame, GcMetric metric, int k,
						   const long long *sums, const long long *counts,
						   double *centroids, double *mean, GcPoll *poll,
						   uint64_t *shift_sum)
{
	int			d = frame->d;

	for (int c = 0; c < k; c++)
	{
		double	   *centroid = centroids + (size_t) c * d;

		if (gc_poll(poll, d))
			return false;
		if (counts[c] == 0)
			continue;
		for (int j = 0; j < d; j++)
			mean[j] = gc_dequantize_mean(sums[(size_t) c * d + j], counts[c],
										 frame->offset[j], frame->scale[j]);
		if (metric == GC_METRIC_COSINE && !gc_unit_normalize(mean, d))
			continue;
		for (int j = 0; j < d; j++)
		{
			*shift_sum += (uint64_t) gc_quantize_wide(gc_sqdiff(mean[j], centroid[j]),
													  frame->shift_exp);
			centroid[j] = mean[j];
		}
	}
	return true;
}
