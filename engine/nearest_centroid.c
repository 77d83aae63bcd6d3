/*-------------------------------------------------------------------------
 *
 * nearest_centroid.c
 *	  The CPU's exact nearest centroid, shared by the driver, both
 *	  backends' references and seeding: a scan in index order (the lowest
 *	  index wins ties), whole or in blocks of one poll's work.
 *
 * IDENTIFICATION
 *	  engine/nearest_centroid.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <float.h>

void
gc_nearest_centroid_scan(const double *x, const double *centroids, int first, int count,
						 int d, int *best, double *bestd)
{
	for (int c = first; c < first + count; c++)
	{
		double		s = gc_sqdist_within(x, centroids + (size_t) c * d, d, *bestd);

		if (s < *bestd)
		{
			*bestd = s;
			*best = c;
		}
	}
}

/*
 * Nearest centroid by exact squared distance; the lowest index wins ties
 */
int
gc_nearest_centroid(const double *x, const double *centroids, int k, int d,
					double *distance2)
{
	int			best = 0;
	double		bestd = DBL_MAX;

	gc_nearest_centroid_scan(x, centroids, 0, k, d, &best, &bestd);
	if (distance2)
		*distance2 = bestd;
	return best;
}

/*
 * Nearest centroid as gc_nearest_centroid finds it, over blocks of
 * centroids of at most one poll's work each (in index order, the nearest
 * so far carried from block to block), or -1 when the interrupt hook
 * asked to stop
 */
int
gc_nearest_centroid_polled(const double *x, const double *centroids, int k,
						   int d, double *distance2, GcPoll *poll)
{
	int			span = (int) gc_poll_span(d);
	int			best = 0;
	double		bestd = DBL_MAX;

	for (int first = 0; first < k; first += span)
	{
		int			count = k - first < span ? k - first : span;

		gc_nearest_centroid_scan(x, centroids, first, count, d, &best, &bestd);
		if (gc_poll(poll, (int64_t) count * d))
			return -1;
	}
	if (distance2)
		*distance2 = bestd;
	return best;
}
