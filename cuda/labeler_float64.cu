/*-------------------------------------------------------------------------
 *
 * labeler_float64.cu
 *	  The float64 labeler (precision float64, and rows spread wider than
 *	  float32 holds): every point against every centroid in double
 *	  precision on the data as given (simt_kernels.cu).
 *
 *	  Above GC_REGISTER_MAX_DIM dimensions the kernel is one thread per
 *	  row, so a pass over few rows does not get shorter with fewer rows: a
 *	  chunk of 1,030 rows of d = 65,536 against 1,000 centroids is one
 *	  launch of seconds, and the driver's chunks of rows cannot bound the
 *	  wait for a cancel.  There the labeler splits the centroids into spans
 *	  of about GC_POLL_WORK_GPU units each (counting a device's worth of
 *	  rows, gc_gpu_pass_units), keeps each row's running nearest between
 *	  spans (the only buffers it owns) and polls the interrupt hook after
 *	  each: the same labels as one pass, to the bit.
 *
 * IDENTIFICATION
 *	  cuda/labeler_float64.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"

typedef struct Float64State
{
	double	   *run_d;			/* each row's running nearest distance */
	int32_t    *run_c;			/* and centroid */
} Float64State;

static GcStatus
float64_open(CudaSession *s, void **state, GcError *err)
{
	Float64State *f;

	*state = NULL;
	if (s->d <= GC_REGISTER_MAX_DIM)
		return GC_OK;			/* the register kernel: one pass, no buffers */
	STATE_OR_RETURN(f, Float64State);
	*state = f;
	ALLOC_OR_RETURN(f->run_d, (size_t) s->n);
	ALLOC_OR_RETURN(f->run_c, (size_t) s->n);
	return GC_OK;
}

static GcStatus
float64_label(CudaSession *s, void *state, int64_t first, int64_t count,
			  unsigned long long *changed, IterationStatus *status, GcError *err)
{
	Float64State *f = (Float64State *) state;
	int			span;

	if (f == NULL)
		return launch_assign_points_f64(s->x64 + first * s->d, s->c64, count, s->d, s->k,
										s->labels + first, changed, s->stream, err);
	span = (int) gc_poll_gpu_items(gc_gpu_pass_units(count, s->d), 1, s->k);
	for (int c = 0; c < s->k; c += span)
	{
		int			end = s->k - c < span ? s->k : c + span;

		if (launch_assign_points_f64_span(s->x64 + first * s->d, s->c64, count, s->d, c, end,
										  s->k, f->run_d + first, f->run_c + first,
										  s->labels + first, changed, s->stream, err) != GC_OK)
			return err->status;
		if (end < s->k)
		{
			GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
			if (s->params->interrupted && s->params->interrupted())
				return gc_fail(err, GC_INTERRUPTED, "interrupted while labelling");
		}
	}
	return GC_OK;
}

static void
float64_close(void *state)
{
	Float64State *f = (Float64State *) state;

	if (f == NULL)
		return;
	cudaFree(f->run_d);
	cudaFree(f->run_c);
	free(f);
}

/* its buffers are a labeling's scratch, for as many rows as it opened over */
static GcStatus
float64_rows_moved(CudaSession *s, void *state, GcError *err)
{
	(void) s;
	(void) state;
	(void) err;
	return GC_OK;
}

const Labeler gc_labeler_float64 = {
	float64_open,
	NULL,
	float64_label,
	NULL,
	NULL,
	float64_close,
	float64_rows_moved,
};
