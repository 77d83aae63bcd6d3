/*-------------------------------------------------------------------------
 *
 * labeler_wgmma.cu
 *	  The bf16 labeler on Hopper's warpgroup tensor cores
 *	  (GC_KERNEL_TENSOR_BF16_WGMMA; labeling_wgmma.cu computes): like the
 *	  mma.sync bf16 labeler (labeler_bf16.cu) it owns the data converted
 *	  to bfloat16 once, at upload, in rows of width ld, and the centroids
 *	  converted after every update with the norms of the rounded
 *	  centroids, plus the tensor maps the copy engine reads them through.
 *	  Every label is trusted, as in precision bf16.  gc_choose_kernel
 *	  takes it only where gc_wgmma_usable says the device runs it.
 *
 * IDENTIFICATION
 *	  cuda/labeler_wgmma.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"
#include "labeling_wgmma.cuh"

typedef struct WgmmaState
{
	int			ld;				/* row width of the operands */
	__nv_bfloat16 *xb;			/* the data in bf16, rows of width ld */
	__nv_bfloat16 *cb;			/* the centroids in bf16 */
	float	   *cnorm_bf16;		/* norms of the bf16 centroids */
	float	   *half_norms;		/* -||c||^2 / 2 of those, padded to whole tiles */
	WgmmaOperands ops;			/* xb and cb as tensor maps */
} WgmmaState;

static GcStatus
wgmma_open(CudaSession *s, void **state, GcError *err)
{
	WgmmaState *w;
	int64_t		n = s->n;
	int			d = s->d,
				kpad = s->kpad;

	STATE_OR_RETURN(w, WgmmaState);
	*state = w;
	w->ld = gc_tensor_row_width(d, true);
	ALLOC_OR_RETURN(w->xb, (size_t) n * w->ld);
	ALLOC_OR_RETURN(w->cb, (size_t) kpad * w->ld);
	ALLOC_OR_RETURN(w->cnorm_bf16, (size_t) kpad);
	ALLOC_OR_RETURN(w->half_norms, (size_t) gc_wgmma_padded_k(s->k));
	GC_CUDA_TRY(cudaMemsetAsync(w->cnorm_bf16, 0, sizeof(float) * kpad, s->stream), err);
	/* the conversion writes every column of a row of width d */
	if (w->ld != d)
		GC_CUDA_TRY(cudaMemsetAsync(w->xb, 0, sizeof(__nv_bfloat16) * n * w->ld, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(w->cb, 0, sizeof(__nv_bfloat16) * kpad * w->ld, s->stream), err);
	if (launch_pad_rows(s->x32, n, d, w->ld, w->xb, s->stream, err) != GC_OK)
		return err->status;
	return gc_wgmma_describe(&w->ops, w->xb, n, w->cb, s->k, w->ld, true, err);
}

static GcStatus
wgmma_refresh(CudaSession *s, void *state, GcError *err)
{
	WgmmaState *w = (WgmmaState *) state;

	if (launch_pad_rows(s->c32, s->k, s->d, w->ld, w->cb, s->stream, err) != GC_OK)
		return err->status;
	if (launch_bf16_norms(w->cb, s->k, w->ld, w->cnorm_bf16, s->stream, err) != GC_OK)
		return err->status;
	return launch_wgmma_half_norms(w->cnorm_bf16, s->k, w->half_norms, s->stream, err);
}

static GcStatus
wgmma_label(CudaSession *s, void *state, int64_t first, int64_t count,
			unsigned long long *changed, IterationStatus *status, GcError *err)
{
	WgmmaState *w = (WgmmaState *) state;

	return launch_assign_points_wgmma(&w->ops, w->half_norms, first, count, w->ld, s->k,
									  s->labels + first, changed, s->stream, err);
}

static void
wgmma_close(void *state)
{
	WgmmaState *w = (WgmmaState *) state;

	cudaFree(w->xb);
	cudaFree(w->cb);
	cudaFree(w->cnorm_bf16);
	cudaFree(w->half_norms);
	free(w);
}

const Labeler gc_labeler_bf16_wgmma = {
	wgmma_open,
	wgmma_refresh,
	wgmma_label,
	NULL,
	NULL,
	wgmma_close,
};
