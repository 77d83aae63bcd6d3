/*-------------------------------------------------------------------------
 *
 * labeler_bf16.cu
 *	  The bf16 tensor-core labeler (precision bf16; labeling_tensor.cu
 *	  computes): it owns the data converted to bfloat16 once, at upload,
 *	  in rows of width ld, the centroids converted after every update with
 *	  the norms of the rounded centroids, and the top twos of split passes.
 *	  Every label is trusted: bf16 trades exactness for speed by request.
 *
 * IDENTIFICATION
 *	  cuda/labeler_bf16.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"

typedef struct Bf16State
{
	int			ld;				/* row width of the operands */
	__nv_bfloat16 *xb;			/* the data in bf16, rows of width ld */
	__nv_bfloat16 *cb;			/* the centroids in bf16 */
	float	   *cnorm_bf16;		/* norms of the bf16 centroids */
	TensorPartial *group_tops;	/* streamed passes: top twos per centroid group */
} Bf16State;

static GcStatus
bf16_open(CudaSession *s, void **state, GcError *err)
{
	Bf16State  *b;
	int64_t		n = s->n;
	int			d = s->d,
				kpad = s->kpad;

	STATE_OR_RETURN(b, Bf16State);
	*state = b;
	/* converted once here; the centroids after every update */
	b->ld = gc_tensor_row_width(d, true);
	ALLOC_OR_RETURN(b->xb, (size_t) n * b->ld);
	ALLOC_OR_RETURN(b->cb, (size_t) kpad * b->ld);
	ALLOC_OR_RETURN(b->cnorm_bf16, (size_t) kpad);
	GC_CUDA_TRY(cudaMemsetAsync(b->cnorm_bf16, 0, sizeof(float) * kpad, s->stream), err);
	/* the conversion writes every column of a row of width d */
	if (b->ld != d)
		GC_CUDA_TRY(cudaMemsetAsync(b->xb, 0, sizeof(__nv_bfloat16) * n * b->ld, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(b->cb, 0, sizeof(__nv_bfloat16) * kpad * b->ld, s->stream), err);
	if (launch_pad_rows(s->x32, n, d, b->ld, b->xb, s->stream, err) != GC_OK)
		return err->status;
	if (gc_tensor_splits(d, s->k, true, s->params->tensor_streamed))
		ALLOC_OR_RETURN(b->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	return GC_OK;
}

static GcStatus
bf16_refresh(CudaSession *s, void *state, GcError *err)
{
	Bf16State  *b = (Bf16State *) state;

	if (launch_pad_rows(s->c32, s->k, s->d, b->ld, b->cb, s->stream, err) != GC_OK)
		return err->status;
	return launch_bf16_norms(b->cb, s->k, b->ld, b->cnorm_bf16, s->stream, err);
}

static GcStatus
bf16_label(CudaSession *s, void *state, int64_t first, int64_t count,
		   unsigned long long *changed, IterationStatus *status, GcError *err)
{
	Bf16State  *b = (Bf16State *) state;

	/* group_tops is scratch of one pass: each chunk reuses it from the start */
	return launch_assign_points_bf16(b->xb + first * b->ld, b->cb, b->cnorm_bf16, count,
									 b->ld, s->k, s->params->tensor_streamed,
									 s->labels + first, changed, b->group_tops, s->stream,
									 err);
}

static void
bf16_close(void *state)
{
	Bf16State  *b = (Bf16State *) state;

	cudaFree(b->xb);
	cudaFree(b->cb);
	cudaFree(b->cnorm_bf16);
	cudaFree(b->group_tops);
	free(b);
}

const Labeler gc_labeler_bf16 = {
	bf16_open,
	bf16_refresh,
	bf16_label,
	NULL,
	NULL,
	bf16_close,
};
