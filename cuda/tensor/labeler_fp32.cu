/*-------------------------------------------------------------------------
 *
 * tensor/labeler_fp32.cu
 *	  The float32 tensor-core labelers (tensor/mma_kernels.cu computes): the
 *	  exact one (kernels tensor_screened and tensor_3xtf32, the float32
 *	  default for large k and d) and TF32 alone (precision tf32).  Both own
 *	  the centroids in rows of width ld (and the data, where d is not a
 *	  multiple of the row width) and the top twos of split passes; the
 *	  exact one adds the row norms, the lists of doubtful points, the
 *	  error bounds of its checks and its screen's operands.
 *
 * The exact labeler screens with TF32 (2.3 times 3xTF32's speed) and
 * labels what the screen doubts again with 3xTF32 (the screen costs 1 +
 * 2.3 f passes of TF32 for a fraction f doubted, 3xTF32 alone 2.3: it pays
 * below f = 0.57); a screen that doubts more than SCREEN_MAX_FRACTION
 * (early iterations on data without clusters) hands over to 3xTF32
 * alone, and is tried again SCREEN_RETRY iterations later.  On Hopper the
 * screen runs on wgmma (GC_KERNEL_TENSOR_SCREENED_WGMMA), its rows rounded
 * to TF32 in shared memory and its centroids rounded here (ctf32), or,
 * where forced, on fp16 copies of the rows and centroids scaled into
 * fp16's range (GC_KERNEL_TENSOR_SCREENED_FP16: the same rounding unit,
 * so the same bound, at twice the rate; fp16_screen_open).  When
 * the exact check after 3xTF32 would cost more than DOUBTFUL_MAX_FRACTION
 * of a full labeling (k exact distances for each point it checks), it
 * first takes the centroids' separations (tensor/centroid_separations.cu, where
 * k <= GC_SEPARATIONS_MAX_K), which leave it the few centroids near each
 * point: rows that nearly repeat one another are doubtful to both tensor
 * passes but have few centroids near them.  It takes them in the labeling
 * whose list shows that (check_scans_much), so the first labeling of a
 * fit does not pay for all k.  Where the check still costs that much with
 * them (or k is past them), it goes on checking: the SIMT kernels would
 * be cheaper there, but sum float32 squares without a check, so their
 * labels would not be the CPU's.  Until 2026-11-29 the labeling moved to
 * the tiled kernel then, and, that decision being a session's, a fit
 * split into shards (engine/kmeans_shards.c) could take it where the one
 * session did not: at 16M x 128, k = 16,384, 40 labels of the scoring
 * pass differed from the CPU's (bench/results/out-of-core-h200.md).
 * k-means|| labels its rounds' samples with the separations from the
 * start (gc_tensor_separate), and with each row's D^2, below which alone
 * its nearest sample must be exact.
 *
 * IDENTIFICATION
 *	  cuda/tensor/labeler_fp32.cu
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"
#include "tensor/wgmma_kernels.cuh"

#define DOUBTFUL_MAX_FRACTION 0.02
#define SCREEN_MAX_FRACTION 0.5
#define SCREEN_RETRY 2

typedef struct TensorState
{
	bool		exact;			/* screened and 3xTF32, not TF32 alone */
	int			ld;				/* row width of the operands */
	float	   *xpad;			/* x32 in rows of width ld; NULL when ld = d */
	float	   *cpad;			/* c32 in rows of width ld */
	TensorPartial *group_tops;	/* streamed passes: top twos per centroid group */
	float	   *xnorm;			/* exact labels: row norms, for the error bound */
	int32_t    *doubtful;		/* points the first tensor pass doubts */
	unsigned int *doubtful_count;
	float	   *cnorm_tf32;		/* screen: norms of the centroids in TF32 */
	unsigned int *cradius_bits; /* screen: the largest of them, float bits */
	unsigned int *count_host;	/* screen: page-locked, its count of doubts */
	int32_t    *exact_rows;		/* screen: points for the exact check */
	unsigned int *exact_count;
	TensorRefinement refine;
	GcKernel	screen;			/* TENSOR_SCREENED, or _SCREENED_WGMMA or _FP16 on Hopper */
	int			screen_again;	/* iteration to go back to the TF32 screen */
	float	   *ctf32;			/* wgmma screen on TF32: cpad rounded to TF32 */
	float	   *half_norms;		/* wgmma screen: -||c||^2 / 2 of its centroids, padded */
	const void *described;		/* wgmma screen: the rows ops describes */
	WgmmaOperands ops;			/* wgmma screen: its rows and centroids as tensor maps */
	/* the wgmma screen on fp16: the rows and centroids scaled, in rows of width ld16 */
	int			ld16;
	float		scale16;		/* a power of two (gc_fp16_scale) */
	__half	   *xh;
	__half	   *ch;
	float	   *xnorm16;		/* |x| at that scale */
	float	   *cnorm16;		/* the fp16 centroids' norms */
	unsigned int *cradius16_bits;	/* the largest of them, float bits */
	double	   *columns;		/* exact check without them: c64 by column */
	RefineSlices slices;		/* exact check without them: a short list split */
	float	   *separations;	/* exact check: k x k, once it takes them */
	bool		unseparable;	/* no room for them: not tried again */
} TensorState;

/*
 * The fp16 screen's copy of the rows (scaled, rounded to nearest) and
 * their norms at that scale
 */
static GcStatus
fp16_screen_rows(CudaSession *s, TensorState *t, GcError *err)
{
	if (launch_pad_rows_scaled(s->x32, s->n, s->d, t->ld16, t->scale16, t->xh, s->stream,
							   err) != GC_OK)
		return err->status;
	return launch_row_norms(s->x32, s->n, s->d, t->scale16, t->xnorm16, s->stream, err);
}

/*
 * Hopper's screen on fp16: the rows and centroids multiplied alike by
 * scale16, which puts every centred value below 2^15, and rounded to
 * nearest with fp16's 11 bits, TF32's unit, so that the screen keeps its
 * bound at that scale (the norms of the scaled rows and of the rounded
 * centroids, the largest of them).  Below 2^-14 fp16 keeps an absolute
 * step, not a relative one: a value moves by at most 2^-14 even if a
 * unit flushed it to zero, a row or centroid by 2^-14 sqrt(d), which is
 * 2^-11 (sqrt(d) / 8); the slack adds that to |x| twice over (x's and the
 * centroids', xnorm_slack), which at that scale, where the largest
 * values are near 2^15, moves the bound by a few parts in 10^5 of a unit
 * of the data.  The products run at twice TF32's rate and read half its
 * bytes; the copy costs 2 ld16 bytes a row.
 */
static GcStatus
fp16_screen_open(CudaSession *s, TensorState *t, GcError *err)
{
	int64_t		n = s->n;
	int			kpad = s->kpad;

	t->ld16 = gc_tensor_row_width(s->d, true);
	ALLOC_OR_RETURN(t->xh, (size_t) n * t->ld16);
	ALLOC_OR_RETURN(t->ch, (size_t) kpad * t->ld16);
	ALLOC_OR_RETURN(t->xnorm16, (size_t) n);
	ALLOC_OR_RETURN(t->cnorm16, (size_t) kpad);
	ALLOC_OR_RETURN(t->cradius16_bits, 1);
	/* the conversions write the first d columns of a row; the rest stay zero */
	GC_CUDA_TRY(cudaMemsetAsync(t->xh, 0, sizeof(__half) * n * t->ld16, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(t->ch, 0, sizeof(__half) * kpad * t->ld16, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(t->cnorm16, 0, sizeof(float) * kpad, s->stream), err);
	if (fp16_screen_rows(s, t, err) != GC_OK)
		return err->status;
	if (t->group_tops == NULL && gc_wgmma_screen_in_groups(2 * t->ld16, s->k))
		ALLOC_OR_RETURN(t->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	t->refine.wgmma_xnorm = t->xnorm16;
	t->refine.wgmma_cnorm = t->cnorm16;
	t->refine.wgmma_radius_bits = t->cradius16_bits;
	t->refine.wgmma_xnorm_slack = (float) (sqrt((double) s->d) / 4.0 * (1.0 + ldexp(1.0, -20)));
	return GC_OK;
}

static GcStatus
tensor_open(CudaSession *s, bool exact, void **state, GcError *err)
{
	TensorState *t;
	int64_t		n = s->n;
	int			d = s->d,
				kpad = s->kpad;

	STATE_OR_RETURN(t, TensorState);
	*state = t;
	t->exact = exact;
	t->ld = gc_tensor_row_width(d, false);
	ALLOC_OR_RETURN(t->cpad, (size_t) kpad * t->ld);
	GC_CUDA_TRY(cudaMemsetAsync(t->cpad, 0, sizeof(float) * kpad * t->ld, s->stream), err);
	/* rows already of width ld are read in place */
	if (t->ld != d)
	{
		ALLOC_OR_RETURN(t->xpad, (size_t) n * t->ld);
		GC_CUDA_TRY(cudaMemsetAsync(t->xpad, 0, sizeof(float) * n * t->ld, s->stream), err);
		if (launch_pad_rows(s->x32, n, d, t->ld, t->xpad, s->stream, err) != GC_OK)
			return err->status;
	}
	if (gc_tensor_splits(d, s->k, false, s->params->tensor_streamed))
		ALLOC_OR_RETURN(t->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	if (!exact)
		return GC_OK;

	ALLOC_OR_RETURN(t->xnorm, (size_t) n);
	ALLOC_OR_RETURN(t->doubtful, (size_t) 2 * n);
	ALLOC_OR_RETURN(t->doubtful_count, 1);
	if (launch_row_norms(s->x32, n, d, 1.0f, t->xnorm, s->stream, err) != GC_OK)
		return err->status;
	t->refine.xnorm = t->xnorm;
	/* 3xTF32 products err by a few float32 roundings per term */
	t->refine.eps_3xtf32 = (float) (ldexp(1.0, -21) * sqrt((double) d) + ldexp(1.0, -20));

	/*
	 * The screen: rounding to TF32 (2^-11) and float32 storage (2^-24)
	 * move |x - c| by at most e (|x| + |c|), e = 2^-11 + 2^-24, so the
	 * best a is certain when the second is e (2 |x| + |a| + C) further
	 * (eps_tf32_lin is 2 e, plus 1/256); float32 accumulation over d
	 * terms and the roundings of ||c||^2 and of the fma stay within
	 * (d + 4) 2^-23 (|x| + C)^2 for a gap of two distances, taken as
	 * (d + 16) 2^-23; C is the largest norm of the TF32 centroids,
	 * rounded up, each iteration
	 */
	t->refine.eps_tf32_lin = (float) (2.0 * (ldexp(1.0, -11) + ldexp(1.0, -24)) *
									  (1.0 + ldexp(1.0, -8)));
	t->refine.eps_tf32_sq = (float) ((d + 16) * ldexp(1.0, -23));
	t->refine.doubtful = t->doubtful;
	t->refine.doubtful_count = t->doubtful_count;
	t->refine.x64 = s->x64;
	t->refine.c64 = s->c64;
	t->refine.d = d;
	ALLOC_OR_RETURN(t->columns, (size_t) s->k * d);
	t->refine.c64_columns = t->columns;
	ALLOC_OR_RETURN(t->slices.best_d2, GC_REFINE_BLOCKS);
	ALLOC_OR_RETURN(t->slices.best_c, GC_REFINE_BLOCKS);
	ALLOC_OR_RETURN(t->slices.arrivals, GC_REFINE_BLOCKS);
	GC_CUDA_TRY(cudaMemsetAsync(t->slices.arrivals, 0, sizeof(unsigned int) * GC_REFINE_BLOCKS,
								s->stream), err);
	t->refine.slices = &t->slices;

	ALLOC_OR_RETURN(t->cnorm_tf32, (size_t) kpad);
	GC_CUDA_TRY(cudaMemsetAsync(t->cnorm_tf32, 0, sizeof(float) * kpad, s->stream), err);
	ALLOC_OR_RETURN(t->cradius_bits, 1);
	GC_CUDA_TRY(cudaHostAlloc((void **) &t->count_host, sizeof(unsigned int),
							  cudaHostAllocDefault), err);
	t->refine.cradius_bits = t->cradius_bits;
	t->refine.count_host = t->count_host;
	ALLOC_OR_RETURN(t->exact_rows, (size_t) 2 * n);
	ALLOC_OR_RETURN(t->exact_count, 1);
	t->refine.cnorm_tf32 = t->cnorm_tf32;
	t->refine.exact = t->exact_rows;
	t->refine.exact_count = t->exact_count;

	/*
	 * Hopper's screen: the same bound, its rows rounded to TF32 as they
	 * are staged, or converted to fp16 once here where their box gives a
	 * scale
	 */
	t->screen = s->kernel == GC_KERNEL_TENSOR_SCREENED_WGMMA ||
		s->kernel == GC_KERNEL_TENSOR_SCREENED_FP16 ? s->kernel : GC_KERNEL_TENSOR_SCREENED;
	if (t->screen == GC_KERNEL_TENSOR_SCREENED_FP16 && !gc_fp16_scale(s->rows, &t->scale16))
		s->kernel = t->screen = GC_KERNEL_TENSOR_SCREENED_WGMMA;	/* rows without a scale */
	if (t->screen == GC_KERNEL_TENSOR_SCREENED)
		return GC_OK;
	ALLOC_OR_RETURN(t->half_norms, (size_t) gc_wgmma_padded_k(s->k));
	t->refine.wgmma_ops = &t->ops;
	t->refine.wgmma_half_norms = t->half_norms;
	if (t->screen == GC_KERNEL_TENSOR_SCREENED_FP16)
		return fp16_screen_open(s, t, err);
	ALLOC_OR_RETURN(t->ctf32, (size_t) kpad * t->ld);
	GC_CUDA_TRY(cudaMemsetAsync(t->ctf32, 0, sizeof(float) * kpad * t->ld, s->stream), err);
	/* the screen's pass in groups of centroid tiles (tensor/wgmma_kernels.cu) */
	if (t->group_tops == NULL && gc_wgmma_screen_in_groups(4 * t->ld, s->k))
		ALLOC_OR_RETURN(t->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	return GC_OK;
}

static GcStatus
exact_open(CudaSession *s, void **state, GcError *err)
{
	return tensor_open(s, true, state, err);
}

static GcStatus
tf32_open(CudaSession *s, void **state, GcError *err)
{
	return tensor_open(s, false, state, err);
}

/*
 * The session moved onto other rows (rebind, at most the rows it opened
 * over): their padded copy and norms, and the wgmma screen's tensor map
 * described again at the next labeling; the centroids' copies, the
 * separations and the kernel's history stay
 */
static GcStatus
tensor_rows_moved(CudaSession *s, void *state, GcError *err)
{
	TensorState *t = (TensorState *) state;

	if (t->xpad != NULL)
	{
		GC_CUDA_TRY(cudaMemsetAsync(t->xpad, 0, sizeof(float) * s->n * t->ld, s->stream), err);
		if (launch_pad_rows(s->x32, s->n, s->d, t->ld, t->xpad, s->stream, err) != GC_OK)
			return err->status;
	}
	if (t->xnorm != NULL &&
		launch_row_norms(s->x32, s->n, s->d, 1.0f, t->xnorm, s->stream, err) != GC_OK)
		return err->status;
	if (t->xh != NULL && fp16_screen_rows(s, t, err) != GC_OK)
		return err->status;
	t->described = NULL;
	return GC_OK;
}

/* The padded centroids (and, for the screen, their TF32 norms) */
static GcStatus
tensor_refresh(CudaSession *s, void *state, GcError *err)
{
	TensorState *t = (TensorState *) state;

	if (launch_pad_rows(s->c32, s->k, s->d, t->ld, t->cpad, s->stream, err) != GC_OK)
		return err->status;
	if (t->columns != NULL &&
		launch_centroid_columns(s->c64, s->k, s->d, t->columns, s->stream, err) != GC_OK)
		return err->status;
	if (t->separations != NULL &&
		launch_centroid_separations(s->c64, s->k, s->d, t->separations, s->stream,
									err) != GC_OK)
		return err->status;
	if (t->cnorm_tf32 == NULL)
		return GC_OK;
	if (launch_tf32_norms(t->cpad, s->k, t->ld, t->cnorm_tf32, t->cradius_bits, s->stream,
						  err) != GC_OK)
		return err->status;
	if (t->ch != NULL)
	{
		if (launch_pad_rows_scaled(s->c32, s->k, s->d, t->ld16, t->scale16, t->ch, s->stream,
								   err) != GC_OK ||
			launch_fp16_norms(t->ch, s->k, t->ld16, t->cnorm16, t->cradius16_bits, s->stream,
							  err) != GC_OK)
			return err->status;
		return launch_wgmma_half_norms(t->cnorm16, s->k, t->half_norms, s->stream, err);
	}
	if (t->ctf32 == NULL)
		return GC_OK;
	if (launch_round_tf32(t->cpad, (int64_t) s->k * t->ld, t->ctf32, s->stream, err) != GC_OK)
		return err->status;
	return launch_wgmma_half_norms(t->cnorm_tf32, s->k, t->half_norms, s->stream, err);
}

/* Whether the exact check can still take the table: k allows, and it was not refused */
static bool
separable(const CudaSession *s, const TensorState *t)
{
	return t->exact && s->k <= GC_SEPARATIONS_MAX_K && !t->unseparable;
}

/*
 * The exact check skips by the centroids' separations from now on, where
 * k allows and the table fits on the device: it is made here, from the
 * centroids as they are, and again at each refresh; whether it does.  A
 * table that cannot be had is not tried again.  need_below (n values, or
 * NULL) are the D^2 of k-means|| rows: a row needs its exact nearest
 * centroid only where that is nearer.
 */
bool
gc_tensor_separate(CudaSession *s, void *state, const double *need_below)
{
	TensorState *t = (TensorState *) state;
	GcError		ignored;

	if (t->separations != NULL)
		return true;
	if (!separable(s, t))
		return false;
	if (cudaMalloc((void **) &t->separations, sizeof(float) * s->k * s->k) != cudaSuccess)
	{
		(void) cudaGetLastError();	/* out of memory: the check scans all k */
		t->separations = NULL;
		t->unseparable = true;
		return false;
	}
	if (launch_centroid_separations(s->c64, s->k, s->d, t->separations, s->stream,
									&ignored) != GC_OK)
	{
		cudaFree(t->separations);
		t->separations = NULL;
		t->unseparable = true;
		return false;
	}
	t->refine.separations = t->separations;
	t->refine.need_below = need_below;
	return true;
}

/* A chunk's count of doubts, added into the iteration's status */
__global__ void
add_count_kernel(unsigned long long *total, const unsigned int *count)
{
	*total += *count;
}

static GcStatus
add_count(unsigned long long *total, const unsigned int *count, cudaStream_t stream,
		  GcError *err)
{
	add_count_kernel<<<1, 1, 0, stream>>>(total, count);
	GC_CUDA_LAUNCHED("add_count", err);
	return GC_OK;
}

/*
 * Whether the exact check of a chunk of count rows, without the table,
 * would measure more than DOUBTFUL_MAX_FRACTION of their k distances each:
 * its list's length read back, unless the screen's count, already on the
 * host, is short of that.  The first labeling of a fit thus takes the
 * table before its check, not after it at the review (on the H100, Lloyd
 * on 300,000 x 768 rows that nearly repeat one another, k = 1,000: the
 * first check, of every centroid, took 290 ms of a fit's 400).
 */
static GcStatus
check_scans_much(CudaSession *s, TensorState *t, int64_t count, bool screened,
				 const unsigned int *list_count, bool *much, GcError *err)
{
	double		most = DOUBTFUL_MAX_FRACTION * (double) count;

	*much = false;
	if (screened && (double) *t->count_host <= most)
		return GC_OK;
	GC_CUDA_TRY(cudaMemcpyAsync(t->count_host, list_count, sizeof(unsigned int),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	*much = (double) *t->count_host > most;
	return GC_OK;
}

/*
 * Rows first to first + count: the lists of doubts hold positions in the
 * chunk, so the refinement reads the chunk's rows and norms; group_tops
 * and the lists are scratch of one chunk
 */
static GcStatus
tensor_label(CudaSession *s, void *state, int64_t first, int64_t count,
			 unsigned long long *changed, IterationStatus *status, GcError *err)
{
	TensorState *t = (TensorState *) state;
	TensorRefinement refine = t->refine;
	const float *x = t->xpad != NULL ? t->xpad : s->x32;	/* rows of width ld */
	bool		screened;
	const int32_t *list;
	const unsigned int *list_count;

	refine.x64 = s->x64 + first * s->d;	/* re-ordering swaps the buffers */
	if (refine.xnorm != NULL)
		refine.xnorm += first;
	if (refine.wgmma_xnorm != NULL)
		refine.wgmma_xnorm += first;	/* the screen's, as its rows: the chunk's */
	if (refine.need_below != NULL)
		refine.need_below += first;
	if (t->refine.wgmma_ops != NULL && t->described != (t->xh != NULL ? (const void *) t->xh : x))
	{
		/* the tensor maps name the rows' buffer: described again where it moved */
		if ((t->xh != NULL ?
			 gc_wgmma_describe(&t->ops, t->xh, s->n, t->ch, s->k, t->ld16, WGMMA_FP16, err) :
			 gc_wgmma_describe(&t->ops, x, s->n, t->ctf32, s->k, t->ld, WGMMA_TF32, err)) != GC_OK)
			return err->status;
		t->described = t->xh != NULL ? (const void *) t->xh : x;
	}
	refine.wgmma_first = first;
	refine.refined = status != NULL ? &status->refined : NULL;
	if (launch_assign_points_tensor(x + first * t->ld, t->cpad, s->cnorm,
									t->exact ? &refine : NULL, count, t->ld, s->k,
									s->kernel, s->params->tensor_streamed, s->labels + first,
									changed, t->group_tops, s->stream, err) != GC_OK)
		return err->status;
	if (!t->exact)
		return GC_OK;
	screened = s->kernel != GC_KERNEL_TENSOR_3XTF32;
	list = screened ? t->exact_rows : t->doubtful;
	list_count = screened ? t->exact_count : t->doubtful_count;
	if (t->separations == NULL && separable(s, t))
	{
		bool		much;

		if (check_scans_much(s, t, count, screened, list_count, &much, err) != GC_OK)
			return err->status;
		if (much && gc_tensor_separate(s, t, NULL))
			refine.separations = t->separations;
	}
	if (launch_refine_labels(&refine, s->k, list, list_count, s->labels + first, changed,
							 s->stream, err) != GC_OK)
		return err->status;
	if (status == NULL)
		return GC_OK;
	if (!screened)
		return add_count(&status->doubtful, t->doubtful_count, s->stream, err);
	/* the screen's doubts, then what 3xTF32 left for the exact check */
	if (add_count(&status->screened, t->doubtful_count, s->stream, err) != GC_OK)
		return err->status;
	return add_count(&status->doubtful, t->exact_count, s->stream, err);
}

/* every restart starts from the screen; 3xTF32 alone is its stand-in */
static GcKernel
exact_restart(CudaSession *s, void *state)
{
	TensorState *t = (TensorState *) state;

	t->screen_again = 0;
	return t->screen;
}

static GcKernel
exact_review(CudaSession *s, void *state, const IterationStatus *st)
{
	TensorState *t = (TensorState *) state;
	int			it = s->iteration;

	if (s->kernel == t->screen &&
		(double) st->screened > SCREEN_MAX_FRACTION * (double) s->n)
	{
		t->screen_again = it + SCREEN_RETRY;
		return GC_KERNEL_TENSOR_3XTF32;
	}
	if (s->kernel == GC_KERNEL_TENSOR_3XTF32 && t->screen_again > 0 && it >= t->screen_again)
		return t->screen;
	return s->kernel;
}

static void
tensor_close(void *state)
{
	TensorState *t = (TensorState *) state;

	cudaFree(t->xpad);
	cudaFree(t->cpad);
	cudaFree(t->group_tops);
	cudaFree(t->xnorm);
	cudaFree(t->slices.best_d2);
	cudaFree(t->slices.best_c);
	cudaFree(t->slices.arrivals);
	cudaFree(t->doubtful);
	cudaFree(t->doubtful_count);
	cudaFree(t->cnorm_tf32);
	cudaFree(t->cradius_bits);
	if (t->count_host)
		cudaFreeHost(t->count_host);
	cudaFree(t->exact_rows);
	cudaFree(t->exact_count);
	cudaFree(t->ctf32);
	cudaFree(t->half_norms);
	cudaFree(t->xh);
	cudaFree(t->ch);
	cudaFree(t->xnorm16);
	cudaFree(t->cnorm16);
	cudaFree(t->cradius16_bits);
	cudaFree(t->columns);
	cudaFree(t->separations);
	free(t);
}

const Labeler gc_labeler_tensor_exact = {
	exact_open,
	tensor_refresh,
	tensor_label,
	exact_restart,
	exact_review,
	tensor_close,
	tensor_rows_moved,
};

const Labeler gc_labeler_tensor_tf32 = {
	tf32_open,
	tensor_refresh,
	tensor_label,
	NULL,
	NULL,
	tensor_close,
	tensor_rows_moved,
};
