/*-------------------------------------------------------------------------
 *
 * tensor/labeler_16bit.cu
 *	  The 16-bit tensor-core labelers, bf16 and fp16 (precisions bf16 and
 *	  fp16), each on mma.sync (tensor/mma_kernels.cu computes) or on Hopper's
 *	  wgmma (tensor/wgmma_kernels.cu: GC_KERNEL_TENSOR_BF16_WGMMA and
 *	  GC_KERNEL_TENSOR_FP16_WGMMA, where gc_wgmma_usable says the device
 *	  runs it): each owns the data converted once, at upload, in rows of
 *	  width ld, the centroids converted after every update with the norms
 *	  of the rounded centroids, and the top twos of split passes (mma.sync)
 *	  or the tensor maps the copy engine reads the operands through and
 *	  the centroids' -|c|^2 / 2 (wgmma).  Every label is trusted: 16-bit
 *	  operands trade exactness for speed by request (the fit checks them
 *	  on a sample, engine/precision_check.c).
 *
 *	  fp16 and its range.  Rows are labelled in the engine's frame, relative
 *	  to the bounding box's centre (the session's x32 and c32), so every
 *	  centred coordinate lies within the largest half-range h of the box.
 *	  The data and the centroids are multiplied alike by s = 2^(15 - e),
 *	  h < 2^e (gc_fp16_scale), which puts every value below 2^15 and uses
 *	  fp16's exponents down from there.  A common scale moves no label: |s x - s c|^2 =
 *	  s^2 |x - c|^2, and the norms are those of the scaled, rounded
 *	  centroids.  bf16 has float32's exponents and takes the values as they
 *	  are.  Labels are all these kernels return; distances and inertia are
 *	  computed from the double data.
 *
 * IDENTIFICATION
 *	  cuda/tensor/labeler_16bit.cu
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"
#include "tensor/wgmma_kernels.cuh"

template <typename T>
struct HalfState
{
	int			ld;				/* row width of the operands */
	float		scale;			/* of the centred values: a power of two (1 for bf16) */
	T		   *xh;				/* the data, rows of width ld */
	T		   *ch;				/* the centroids */
	float	   *cnorm;			/* norms of the rounded centroids */
	TensorPartial *group_tops;	/* mma.sync, streamed passes: top twos per centroid group */
	float	   *half_norms;		/* wgmma: -|c|^2 / 2, padded to whole tiles */
	WgmmaOperands ops;			/* wgmma: xh and ch as tensor maps */
};

/* The operations that differ by element type */
static GcStatus
convert_rows(const float *src, int64_t rows, int d, int ld, float scale, __nv_bfloat16 *dst,
			 cudaStream_t stream, GcError *err)
{
	return launch_pad_rows(src, rows, d, ld, dst, stream, err);
}

static GcStatus
convert_rows(const float *src, int64_t rows, int d, int ld, float scale, __half *dst,
			 cudaStream_t stream, GcError *err)
{
	return launch_pad_rows_scaled(src, rows, d, ld, scale, dst, stream, err);
}

static GcStatus
operand_norms(const __nv_bfloat16 *ch, int k, int ld, float *norms, cudaStream_t stream,
			  GcError *err)
{
	return launch_bf16_norms(ch, k, ld, norms, stream, err);
}

static GcStatus
operand_norms(const __half *ch, int k, int ld, float *norms, cudaStream_t stream, GcError *err)
{
	return launch_fp16_norms(ch, k, ld, norms, NULL, stream, err);
}

static GcStatus
assign_points(const __nv_bfloat16 *xh, const __nv_bfloat16 *ch, const float *cnorm,
			  int64_t n, int ld, int k, bool streamed, int32_t *labels,
			  unsigned long long *changed, TensorPartial *tops, cudaStream_t stream,
			  GcError *err)
{
	return launch_assign_points_bf16(xh, ch, cnorm, n, ld, k, streamed, labels, changed, tops,
									 stream, err);
}

static GcStatus
assign_points(const __half *xh, const __half *ch, const float *cnorm, int64_t n, int ld,
			  int k, bool streamed, int32_t *labels, unsigned long long *changed,
			  TensorPartial *tops, cudaStream_t stream, GcError *err)
{
	return launch_assign_points_fp16(xh, ch, cnorm, n, ld, k, streamed, labels, changed, tops,
									 stream, err);
}

static float
operand_scale(const GcRows *rows, const __nv_bfloat16 *)
{
	return 1.0f;
}

static WgmmaType
wgmma_type(const __nv_bfloat16 *)
{
	return WGMMA_BF16;
}

static WgmmaType
wgmma_type(const __half *)
{
	return WGMMA_FP16;
}

static float
operand_scale(const GcRows *rows, const __half *)
{
	float		scale;

	(void) gc_fp16_scale(rows, &scale);
	return scale;
}

template <typename T, bool WG>
static GcStatus
half_open(CudaSession *s, void **state, GcError *err)
{
	HalfState<T> *b;
	int64_t		n = s->n;
	int			d = s->d,
				kpad = s->kpad;

	STATE_OR_RETURN(b, HalfState<T>);
	*state = b;
	/* converted once here; the centroids after every update */
	b->ld = gc_tensor_row_width(d, true);
	b->scale = operand_scale(s->rows, (const T *) NULL);
	ALLOC_OR_RETURN(b->xh, (size_t) n * b->ld);
	ALLOC_OR_RETURN(b->ch, (size_t) kpad * b->ld);
	ALLOC_OR_RETURN(b->cnorm, (size_t) kpad);
	GC_CUDA_TRY(cudaMemsetAsync(b->cnorm, 0, sizeof(float) * kpad, s->stream), err);
	/* the conversion writes every column of a row of width d */
	if (b->ld != d)
		GC_CUDA_TRY(cudaMemsetAsync(b->xh, 0, sizeof(T) * n * b->ld, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(b->ch, 0, sizeof(T) * kpad * b->ld, s->stream), err);
	if (convert_rows(s->x32, n, d, b->ld, b->scale, b->xh, s->stream, err) != GC_OK)
		return err->status;
	if (WG)
	{
		ALLOC_OR_RETURN(b->half_norms, (size_t) gc_wgmma_padded_k(s->k));
		return gc_wgmma_describe(&b->ops, b->xh, n, b->ch, s->k, b->ld,
								 wgmma_type((const T *) NULL), err);
	}
	if (gc_tensor_splits(d, s->k, true, s->params->tensor_streamed))
		ALLOC_OR_RETURN(b->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	return GC_OK;
}

template <typename T, bool WG>
static GcStatus
half_refresh(CudaSession *s, void *state, GcError *err)
{
	HalfState<T> *b = (HalfState<T> *) state;

	if (convert_rows(s->c32, s->k, s->d, b->ld, b->scale, b->ch, s->stream, err) != GC_OK)
		return err->status;
	if (operand_norms(b->ch, s->k, b->ld, b->cnorm, s->stream, err) != GC_OK)
		return err->status;
	return WG ? launch_wgmma_half_norms(b->cnorm, s->k, b->half_norms, s->stream, err) : GC_OK;
}

template <typename T, bool WG>
static GcStatus
half_label(CudaSession *s, void *state, int64_t first, int64_t count,
		   unsigned long long *changed, IterationStatus *status, GcError *err)
{
	HalfState<T> *b = (HalfState<T> *) state;

	if (WG)
		return launch_assign_points_wgmma(&b->ops, b->half_norms, first, count, b->ld, s->k,
										  s->labels + first, changed, s->stream, err);
	/* group_tops is scratch of one pass: each chunk reuses it from the start */
	return assign_points(b->xh + first * b->ld, b->ch, b->cnorm, count, b->ld, s->k,
						 s->params->tensor_streamed, s->labels + first, changed,
						 b->group_tops, s->stream, err);
}

template <typename T>
static void
half_close(void *state)
{
	HalfState<T> *b = (HalfState<T> *) state;

	cudaFree(b->xh);
	cudaFree(b->ch);
	cudaFree(b->cnorm);
	cudaFree(b->group_tops);
	cudaFree(b->half_norms);
	free(b);
}

const Labeler gc_labeler_bf16 = {
	half_open<__nv_bfloat16, false>,
	half_refresh<__nv_bfloat16, false>,
	half_label<__nv_bfloat16, false>,
	NULL,
	NULL,
	half_close<__nv_bfloat16>,
};

const Labeler gc_labeler_fp16 = {
	half_open<__half, false>,
	half_refresh<__half, false>,
	half_label<__half, false>,
	NULL,
	NULL,
	half_close<__half>,
};

const Labeler gc_labeler_bf16_wgmma = {
	half_open<__nv_bfloat16, true>,
	half_refresh<__nv_bfloat16, true>,
	half_label<__nv_bfloat16, true>,
	NULL,
	NULL,
	half_close<__nv_bfloat16>,
};

const Labeler gc_labeler_fp16_wgmma = {
	half_open<__half, true>,
	half_refresh<__half, true>,
	half_label<__half, true>,
	NULL,
	NULL,
	half_close<__half>,
};
