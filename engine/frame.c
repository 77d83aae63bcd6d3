/*-------------------------------------------------------------------------
 *
 * frame.c
 *	  The numeric frame both backends label and sum in (GcFrame,
 *	  gc_rows.h): each dimension's centre and fixed-point scale from the
 *	  row store's bounding box, and the exponent of the exact inertia sums.
 *
 * IDENTIFICATION
 *	  engine/frame.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

/*
 * Compute each dimension's centre and fixed-point scale from the bounding
 * box: with n rows (or a total weight of n), sums of n values of magnitude
 * at most the half-range stay below 2^62.
 */
GcStatus
gc_frame_init(GcFrame *frame, const GcRows *rows, GcError *err)
{
	int			d = rows->d;
	int			nbits = 0;
	double		diag2 = 0.0;

	frame->d = d;
	frame->variance = 0.0;
	frame->shift_exp = 0;
	frame->shift_limit = 0;
	frame->offset = malloc(sizeof(double) * d);
	frame->scale = malloc(sizeof(double) * d);
	if (frame->offset == NULL || frame->scale == NULL)
	{
		gc_frame_release(frame);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the frame");
	}
	while (nbits < 62 && ((int64_t) 1 << nbits) <= rows->total_weight)
		nbits++;

	for (int j = 0; j < d; j++)
	{
		double		half = rows->hi[j] / 2 - rows->lo[j] / 2;
		int			e = 0;

		if (fabs(rows->lo[j]) > GC_MAX_MAGNITUDE || fabs(rows->hi[j]) > GC_MAX_MAGNITUDE)
		{
			gc_frame_release(frame);
			return gc_fail(err, GC_ERR_RANGE,
						   "dimension %d holds a value of magnitude above %g", j + 1,
						   GC_MAX_MAGNITUDE);
		}
		frame->offset[j] = rows->lo[j] / 2 + rows->hi[j] / 2;
		if (half > 0.0)
			frexp(half, &e);	/* half < 2^e */
		e = 61 - nbits - e;
		if (e > 1000)
			e = 1000;
		frame->scale[j] = ldexp(1.0, e);
		diag2 += 4.0 * half * half;
	}
	frame->diagonal = sqrt(diag2);

	/*
	 * A point's squared distance to its nearest centroid is at most diag2
	 * (some centroid is a mean of points, inside the box): n of them (or
	 * their total weight), with two bits to spare, fit in 128 bits.
	 */
	{
		int			e = 0;

		if (diag2 > 0.0)
			frexp(diag2, &e);	/* diag2 < 2^e */
		frame->inertia_exp = 125 - nbits - e;
	}
	return GC_OK;
}

double
gc_inertia_value(unsigned __int128 sum, const GcFrame *frame)
{
	return ldexp((double) sum, -frame->inertia_exp);
}

void
gc_frame_release(GcFrame *frame)
{
	free(frame->offset);
	free(frame->scale);
	frame->offset = frame->scale = NULL;
}
