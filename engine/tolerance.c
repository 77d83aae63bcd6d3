/*-------------------------------------------------------------------------
 *
 * tolerance.c
 *	  k-means' convergence threshold, as scikit-learn's: a fit converges
 *	  once the sum over the centroids of their squared shifts in an
 *	  iteration is at most tol times the data's mean per-dimension
 *	  variance.
 *
 * The variance is computed exactly, so it does not depend on the order
 * of the rows: the mean of each dimension from the weighted sum of its
 * fixed-point values (gc_quantize, as the centroid update sums them),
 * then every row's exact squared distance to the mean, quantised as the
 * inertia is (gc_quantize_wide, units of 2^-inertia_exp) and summed as a
 * 128-bit integer: the inertia of one centroid at the mean, over the
 * total weight and d.  Both devices then compare the same integer: each
 * backend sums the iteration's squared shifts term by term (each
 * dimension's (new - old)^2, rounded alike on both) quantised in units of
 * 2^-shift_exp, chosen so that k centroids each at most the box's
 * squared diagonal away sum below 2^62, as a 64-bit integer, exact in any
 * order; the threshold is tol times the variance in the same units.
 *
 * Before, tol was relative to the bounding box's diagonal: on data with
 * a few extreme values (KDD Cup 99's diagonal is 6.9e8, its typical
 * distances far smaller) every fit stopped after its first iteration.
 *
 * IDENTIFICATION
 *	  engine/tolerance.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

/* Row i of chunk as doubles: in place, or a narrow store's widened into buf */
static const double *
row_values(const GcChunk *chunk, int64_t i, int d, double *buf)
{
	if (chunk->narrow_values == NULL)
		return chunk->values + (size_t) i * d;
	for (int j = 0; j < d; j++)
		buf[j] = chunk->narrow_values[(size_t) i * d + j];
	return buf;
}

/* The weighted mean of each dimension into mean[d]; false when interrupted */
static bool
exact_means(const GcRows *rows, const GcFrame *frame, long long *sums, double *mean,
			double *buf, GcPoll *poll)
{
	int			d = rows->d;

	for (int j = 0; j < d; j++)
		sums[j] = 0;
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			const double *x = row_values(chunk, i, d, buf);
			long long	w = gc_chunk_weight(chunk, i);

			if (gc_poll(poll, d))
				return false;
			for (int j = 0; j < d; j++)
				sums[j] += w * gc_quantize(x[j], frame->offset[j], frame->scale[j]);
		}
	}
	for (int j = 0; j < d; j++)
		mean[j] = gc_dequantize_mean(sums[j], rows->total_weight, frame->offset[j],
									 frame->scale[j]);
	return true;
}

/* The weighted sum of squared distances to mean, in units of 2^-inertia_exp */
static bool
exact_spread(const GcRows *rows, const GcFrame *frame, const double *mean, gc_u128 *sum,
			 double *buf, GcPoll *poll)
{
	*sum = 0;
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			if (gc_poll(poll, rows->d))
				return false;
			*sum += gc_quantize_wide(gc_sqdist_exact(row_values(chunk, i, rows->d, buf),
													 mean, rows->d),
									 frame->inertia_exp) *
				(gc_u128) gc_chunk_weight(chunk, i);
		}
	}
	return true;
}

GcStatus
gc_frame_set_tolerance(GcFrame *frame, const GcRows *rows, int k, double tol,
					   bool (*interrupted) (void), GcError *err)
{
	GcPoll		poll = {interrupted, 0};
	long long  *sums = malloc(sizeof(long long) * rows->d);
	double	   *mean = malloc(sizeof(double) * 2 * rows->d);
	gc_u128		spread = 0;
	int			e = 0,
				kbits = 0;
	double		limit;
	bool		done;

	if (sums == NULL || mean == NULL)
	{
		free(sums);
		free(mean);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the tolerance");
	}
	done = tol <= 0.0 || rows->total_weight == 0 ||
		(exact_means(rows, frame, sums, mean, mean + rows->d, &poll) &&
		 exact_spread(rows, frame, mean, &spread, mean + rows->d, &poll));
	free(sums);
	free(mean);
	if (!done)
		return gc_fail(err, GC_INTERRUPTED, "interrupted while measuring the variance");

	frame->variance = rows->total_weight > 0 && rows->d > 0 ?
		gc_inertia_value(spread, frame) / (double) rows->total_weight / rows->d : 0.0;
	/* k shifts of at most diag2 < 2^e each, below 2^62 */
	if (frame->diagonal > 0.0)
		frexp(frame->diagonal * frame->diagonal, &e);
	while (kbits < 31 && ((int64_t) 1 << kbits) < k)
		kbits++;
	frame->shift_exp = 62 - kbits - e;
	limit = ldexp(tol * frame->variance, frame->shift_exp);
	frame->shift_limit = tol <= 0.0 ? 0 :
		limit >= 0x1p64 ? UINT64_MAX : (uint64_t) limit;
	return GC_OK;
}

bool
gc_frame_converged(const GcFrame *frame, double tol, uint64_t shift_sum)
{
	return tol > 0.0 && shift_sum <= frame->shift_limit;
}

double
gc_frame_shift_ratio(const GcFrame *frame, uint64_t shift_sum)
{
	double		shift2 = ldexp((double) shift_sum, -frame->shift_exp);

	return frame->variance > 0.0 ? shift2 / frame->variance : 0.0;
}
