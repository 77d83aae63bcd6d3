/*-------------------------------------------------------------------------
 *
 * labeler_bounded.cu
 *	  Lloyd's labeling with drift bounds (kernels in bounded_kernels.cu)
 *	  for the register kernel's shapes under algorithm auto: the same
 *	  labels as the register kernel, with a distance computed only for the
 *	  points whose bounds do not decide.  It owns the bounds (U and L, a
 *	  float each per point), the list of undecided points, the drifts and
 *	  the centroids of its last pass.
 *
 * The bounds are current only right after this labeler's own pass of the
 * previous iteration: anything else that labels, re-orders or resets the
 * rows (a pruned iteration, a restart, scoring, the precision check) makes
 * the next pass a full one, which sets them again (gc_bounded_forget, and
 * the pass's iteration number as a second guard).  A full pass costs what
 * the register kernel does and a little more (the second-nearest
 * distance); a pass on current bounds reads and writes about 20 bytes a
 * point, the row itself where U must be tightened, and scans the points
 * left undecided.
 *
 * Whether that pays depends on the data as well as the shape.  On the
 * H100, over 200-300 iterations of 1-4M uniform points, with bounds
 * against without: 0.07 against 0.24 ms of labeling an iteration at d = 2,
 * k = 200-400; 0.10 against 0.20 at d = 3, k = 100; 0.24 against 0.34 at
 * d = 8, k = 100 (0.14 on clustered points); 0.27 against 0.41 at d = 32,
 * k = 100; 0.35 against 0.78 at d = 8, k = 1,000; but 0.28 against 0.22 at
 * d = 8, k = 64, 0.20 against 0.16 at d = 8, k = 40, 0.16 against 0.11 at
 * d = 4, k = 50 and 0.14 against 0.06 at d = 4, k = 20, where a full scan
 * is cheap against the pass over the bounds.  Only 0.25 against 0.28 at
 * d = 16, k = 30 won below k = 100.  So the session keeps bounds from
 * k = GC_BOUNDED_MIN_K (labeler_table.cu).  The choice is the shape's
 * alone, not timed, so that the model's distances_skipped, like all its
 * other fields, does not change from run to run.
 *
 * IDENTIFICATION
 *	  cuda/labeler_bounded.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"

typedef struct BoundedState
{
	float	   *upper;			/* n: U, at least the distance to the point's centroid */
	float	   *lower;			/* n: L, at most the distance to any other */
	int32_t    *list;			/* n: the points this pass labels */
	unsigned int *list_count;
	float	   *c32_last;		/* k * d: the centroids of the last pass */
	float	   *drift;			/* k */
	float	   *separation;		/* k: distance to the nearest other centroid */
	float	   *top;			/* 2: the largest drift and the second */
	int		   *top_c;			/* 1: the centroid of the largest */
	int			labelled_at;	/* the session's iteration of the last pass; -1: none */
	bool		listed;			/* this pass labels the listed points, not every row */
} BoundedState;

/* Its buffers, on first use; *state stays NULL if they do not fit */
GcStatus
gc_bounded_open(CudaSession *s, void **state, GcError *err)
{
	BoundedState *b;
	GcError		ignored = {GC_OK};

	if (*state != NULL)
		return GC_OK;
	STATE_OR_RETURN(b, BoundedState);
	b->labelled_at = -1;
	if (device_alloc(&b->upper, (size_t) s->n, &ignored) != GC_OK ||
		device_alloc(&b->lower, (size_t) s->n, &ignored) != GC_OK ||
		device_alloc(&b->list, (size_t) s->n, &ignored) != GC_OK ||
		device_alloc(&b->list_count, 1, &ignored) != GC_OK ||
		device_alloc(&b->c32_last, (size_t) s->k * s->d, &ignored) != GC_OK ||
		device_alloc(&b->drift, (size_t) s->k, &ignored) != GC_OK ||
		device_alloc(&b->separation, (size_t) s->k, &ignored) != GC_OK ||
		device_alloc(&b->top, 2, &ignored) != GC_OK ||
		device_alloc(&b->top_c, 1, &ignored) != GC_OK)
	{
		/* plain Lloyd's labeling needs none of it */
		gc_bounded_close(b);
		return GC_OK;
	}
	*state = b;
	return GC_OK;
}

/* Positions first .. first + count - 1: of the list, or rows */
static GcStatus
bounded_label(CudaSession *s, void *state, int64_t first, int64_t count,
			  unsigned long long *changed, IterationStatus *status, GcError *err)
{
	BoundedState *b = (BoundedState *) state;

	return launch_bounded_scan(s->x32, s->c32, first, count, s->d, s->k,
							   b->listed ? b->list : NULL, b->list_count, s->labels,
							   b->upper, b->lower, changed, &status->work, s->stream, err);
}

static const Labeler bounded_labeler = {
	NULL,
	NULL,
	bounded_label,
	NULL,
	NULL,
	NULL,
};

/*
 * One iteration's labeling of every row: a full pass where the bounds are
 * not current, else the check and the scan of the points it lists; the
 * distances computed into status->work
 */
GcStatus
gc_bounded_label(CudaSession *s, void *state, IterationStatus *status, GcError *err)
{
	BoundedState *b = (BoundedState *) state;

	b->listed = b->labelled_at == s->iteration - 1;
	if (launch_centroid_drift(s->c32, b->c32_last, s->k, s->d, b->drift, b->separation,
							  b->top, b->top_c, s->stream, err) != GC_OK)
		return err->status;
	if (b->listed)
	{
		GC_CUDA_TRY(cudaMemsetAsync(b->list_count, 0, sizeof(unsigned int), s->stream), err);
		if (launch_bounds_check(s->x32, s->c32, s->n, s->d, s->labels, b->drift,
								b->separation, b->top, b->top_c, b->upper, b->lower,
								b->list, b->list_count, &status->work, s->stream,
								err) != GC_OK)
			return err->status;
	}
	b->labelled_at = -1;		/* until the pass is through */
	if (gc_label_in_chunks(s, &bounded_labeler, b, &status->changed, status, err) != GC_OK)
		return err->status;
	b->labelled_at = s->iteration;
	return GC_OK;
}

void
gc_bounded_forget(void *state)
{
	if (state != NULL)
		((BoundedState *) state)->labelled_at = -1;
}

void
gc_bounded_close(void *state)
{
	BoundedState *b = (BoundedState *) state;

	cudaFree(b->upper);
	cudaFree(b->lower);
	cudaFree(b->list);
	cudaFree(b->list_count);
	cudaFree(b->c32_last);
	cudaFree(b->drift);
	cudaFree(b->separation);
	cudaFree(b->top);
	cudaFree(b->top_c);
	(void) cudaGetLastError();
	free(b);
}
