/*-------------------------------------------------------------------------
 *
 * kmeans_cuda.cu
 *	  The CUDA k-means backend: a session uploads the row store's chunks
 *	  from page-locked memory with asynchronous copies, then seeds, iterates
 *	  and scores on the device.  Per iteration only a 16-byte status
 *	  (labels changed, largest centroid shift) comes back to the host, which
 *	  tests convergence and polls for query cancel; centroids come back at
 *	  the end, labels and distances only when asked for.
 *
 *	  All device memory belongs to the session and is freed by close, which
 *	  the driver calls on success, failure and cancel alike.
 *
 * IDENTIFICATION
 *	  cuda/kmeans_cuda.cu
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gc_cuda.h"
#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define SCORE_PARTIALS 1024
#define SEED_POLL_STEPS 32

/*
 * The hybrid's cost model, calibrated on an H100 (bench/results/):
 * - pruning is tried only where Lloyd's labeling is a SIMT kernel
 *   (register or tiled): the tensor-core kernels do a distance far more
 *   cheaply than the pruned loop's scalar walk can;
 * - it is tried only when its per-iteration tables, O(k^2 d + k^2 log k),
 *   are small against a Lloyd pass, O(n k d): k log2 k <= PRUNE_START_RATIO
 *   n d (pruning won at ratios up to 8.6e-4 (n = 2M, d = 2, k = 400) and
 *   lost at 1.3e-3 (Wu-Hong, k = 1024), where even its probe cost 8% over
 *   50 iterations);
 * - the first pruned iteration of auto is a probe on 1/16 of the points
 *   (the rest labelled by Lloyd's kernel), so that where pruning does not
 *   pay the hybrid loses little finding out;
 * - after every pruned iteration of the first epoch, pruning is kept only
 *   if the measured work ratio k'/k is below PRUNE_MAX_WORK_RATIO: a
 *   distance in the pruned walk (random centroid order, divergent loop
 *   lengths) costs 12 to 20 times one in the register kernel, so the
 *   break-even ratio is 0.05 to 0.08 (H100, n = 245,760 to 4M, d = 2 to
 *   38, k = 23 to 1024: pruned wins at ratios 0.02 to 0.06, loses at 0.13
 *   to 0.18);
 * - once the mean work per point has settled (changes by less than
 *   PRUNE_SETTLED between iterations), the points are re-ordered by work
 *   (the second epoch), after which a pruned labeling slower than the last
 *   measured Lloyd labeling switches back to Lloyd's for good.
 */
#define PRUNE_START_RATIO 0.001
#define PRUNE_SETTLED 0.05
#define PRUNE_MAX_WORK_RATIO 0.08
#define PRUNE_MIN_K 8
/* the hybrid's probe: pruned labeling on 1/16 of the points, at least 16384 */
#define PRUNE_PROBE_FRACTION 16
#define PRUNE_PROBE_MIN_ROWS 16384
/*
 * Kernel choice for float32, measured on an H100 (bench/results/): the
 * tensor cores pay from k = 128 (KDD Cup, d = 38: k = 23 tiled 0.19 ms of
 * labeling, k = 100 3xTF32 on heavy-tailed data 3.5 ms, mostly exact
 * re-checks) and from d = TENSOR_MIN_D.  The TF32 screen costs about 15
 * instructions per distance whatever d (the top-two epilogue, operand
 * loads, accumulator starts) at 55% of the issue rate (128 registers:
 * 16 warps per multiprocessor); the register kernel 2 d + 3 at 82%.  At
 * d = 8 the register kernel wins (n = 4M, k = 400: 1.25 against 1.39 ms
 * of labeling); at d = 12 the screen (1.70 against 2.40 ms; d = 12 to 16
 * share rows of 16 floats), and at d = 32 (245,760 points, k = 1024: 0.35
 * against 0.83 ms).  Below, the register kernel (d <= 32) or the tiled
 * one.
 *
 * The tensor path screens with TF32 (2.3 times 3xTF32's speed) and labels
 * what the screen doubts again with 3xTF32 (the screen costs 1 + 2.3 f
 * passes of TF32 for a fraction f doubted, 3xTF32 alone 2.3: it pays
 * below f = 0.57); a screen that doubts more than SCREEN_MAX_FRACTION
 * (early iterations on data without clusters) hands over to 3xTF32
 * alone, and is tried again SCREEN_RETRY iterations later.  When more than
 * DOUBTFUL_MAX_FRACTION of the points need the exact check after 3xTF32,
 * the data defeat the product form and labeling moves to the tiled kernel.
 */
#define TENSOR_MIN_K 128
#define TENSOR_MIN_D 12
#define DOUBTFUL_MAX_FRACTION 0.02
#define SCREEN_MAX_FRACTION 0.5
#define SCREEN_RETRY 2

typedef enum LabelKernel
{
	KERNEL_REGISTER,
	KERNEL_TILED,
	KERNEL_TENSOR_SCREENED,
	KERNEL_TENSOR_3XTF32,
	KERNEL_TENSOR_TF32,
	KERNEL_TENSOR_BF16,
	KERNEL_FLOAT64
} LabelKernel;

static const char *const kernel_names[] = {
	"register", "tiled", "tensor_screened", "tensor_3xtf32", "tensor_tf32", "tensor_bf16",
	"float64"
};

typedef struct IterationStatus
{
	unsigned long long changed;
	unsigned long long max_shift2;	/* bits of a non-negative double */
	unsigned long long work;	/* distances computed by pruned labeling */
	unsigned long long doubtful;	/* points the 3xTF32 kernel re-checked */
	unsigned long long screened;	/* points the TF32 screen doubted */
} IterationStatus;

typedef struct CudaSession
{
	const GcRows *rows;
	const GcFrame *frame;
	const GcKmeansParams *params;
	int64_t		n;
	int			d;
	int			k;
	cudaStream_t stream;
	double	   *x64;			/* n * d, as given */
	double	   *weights;		/* n whole-number weights; NULL when unweighted */
	float	   *x32;			/* n * d, centred, for labeling */
	uint64_t   *hashes;			/* n */
	double	   *offset;			/* d */
	double	   *scale;			/* d */
	double	   *c64;			/* k * d */
	float	   *c32;			/* k * d, centred */
	float	   *cnorm;			/* k, padded to a multiple of 128 */
	int32_t    *labels;			/* n */
	int32_t    *old_labels;		/* n: the labels before this iteration */
	int32_t    *moved;			/* n: points whose label changed */
	unsigned int *moved_count;
	double	   *work;			/* n: k-means++ distances, or distances */
	unsigned long long *sums;	/* k * d, then k counts */
	unsigned long long *race;	/* k */
	gc_u128    *partials;		/* SCORE_PARTIALS exact inertia partials */
	IterationStatus *status;	/* device */
	IterationStatus *status_host;	/* page-locked */

	LabelKernel kernel;
	int			ld;				/* tensor kernels: row width of the operands */
	float	   *xpad;			/* TF32 kernels: x32 in rows of width ld; NULL when ld = d */
	float	   *cpad;			/* TF32 kernels: c32 in rows of width ld */
	__nv_bfloat16 *xb;			/* bf16 kernel: the data in bf16, rows of width ld */
	__nv_bfloat16 *cb;			/* bf16 kernel: the centroids in bf16 */
	float	   *cnorm_bf16;		/* bf16 kernel: norms of the bf16 centroids */
	TensorPartial *group_tops;	/* streamed tensor passes: top twos per centroid group */
	float	   *xnorm;			/* exact tensor labels: row norms, for the error bound */
	int32_t    *doubtful;		/* points the first tensor pass doubts */
	unsigned int *doubtful_count;
	float	   *cnorm_tf32;		/* screen: norms of the centroids in TF32 */
	unsigned int *cradius_bits; /* screen: the largest of them, float bits */
	unsigned int *count_host;	/* screen: page-locked, its count of doubts */
	int32_t    *exact;			/* screen: points for the exact check */
	unsigned int *exact_count;
	TensorRefinement refine;

	/* pruned labeling */
	float	   *icd;			/* k * k */
	float	   *icd_ranked;		/* k * k, each row in rank order */
	int32_t    *rid;			/* k * k */
	int32_t    *work_per_point; /* n */
	int32_t    *order;			/* n: original index of each position */
	int32_t    *order_step;		/* n */
	int32_t    *sort_keys;		/* n */
	int32_t    *sort_values;	/* n */
	void	   *sort_scratch;
	size_t		sort_scratch_bytes;
	double	   *x64_alt;		/* re-ordering targets */
	double	   *weights_alt;
	float	   *x32_alt;
	int32_t    *labels_alt;
	bool		reordered;		/* rows are in work order, not input order */

	cudaEvent_t phase[3];		/* labeling starts, ends, update ends */
} CudaSession;

static void cuda_close(void *session);

/*
 * Allocate device memory and upload the rows chunk by chunk
 */
static GcStatus
upload(CudaSession *s, GcError *err)
{
	const GcRows *rows = s->rows;
	int64_t		n = s->n;
	int			d = s->d,
				k = s->k;
	/* centroid rows (and norms) of the tensor kernels: a multiple of their tile */
	int			kpad = (k + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN * GC_TENSOR_ROW_ALIGN;

	GC_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), err);
	ALLOC_OR_RETURN(s->x64, (size_t) n * d);
	if (rows->weighted)
		ALLOC_OR_RETURN(s->weights, (size_t) n);
	ALLOC_OR_RETURN(s->x32, (size_t) n * d);
	ALLOC_OR_RETURN(s->hashes, (size_t) n);
	ALLOC_OR_RETURN(s->offset, (size_t) d);
	ALLOC_OR_RETURN(s->scale, (size_t) d);
	ALLOC_OR_RETURN(s->c64, (size_t) k * d);
	ALLOC_OR_RETURN(s->c32, (size_t) k * d);
	ALLOC_OR_RETURN(s->cnorm, (size_t) kpad);
	GC_CUDA_TRY(cudaMemsetAsync(s->cnorm, 0, sizeof(float) * kpad, s->stream), err);
	ALLOC_OR_RETURN(s->labels, (size_t) n);
	ALLOC_OR_RETURN(s->old_labels, (size_t) n);
	ALLOC_OR_RETURN(s->moved, (size_t) n);
	ALLOC_OR_RETURN(s->moved_count, 1);
	ALLOC_OR_RETURN(s->work, (size_t) n);
	ALLOC_OR_RETURN(s->sums, (size_t) k * (d + 1));
	ALLOC_OR_RETURN(s->race, (size_t) k);
	ALLOC_OR_RETURN(s->partials, (size_t) SCORE_PARTIALS);
	ALLOC_OR_RETURN(s->status, 1);
	GC_CUDA_TRY(cudaHostAlloc((void **) &s->status_host, sizeof(IterationStatus),
							  cudaHostAllocDefault), err);
	for (int e = 0; e < 3; e++)
		GC_CUDA_TRY(cudaEventCreate(&s->phase[e]), err);

	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		GC_CUDA_TRY(cudaMemcpyAsync(s->x64 + (size_t) chunk->first_row * d, chunk->values,
									sizeof(double) * d * chunk->count,
									cudaMemcpyHostToDevice, s->stream), err);
		GC_CUDA_TRY(cudaMemcpyAsync(s->hashes + chunk->first_row, chunk->hashes,
									sizeof(uint64_t) * chunk->count,
									cudaMemcpyHostToDevice, s->stream), err);
		if (s->weights)
			GC_CUDA_TRY(cudaMemcpyAsync(s->weights + chunk->first_row, chunk->weights,
										sizeof(double) * chunk->count,
										cudaMemcpyHostToDevice, s->stream), err);
	}
	GC_CUDA_TRY(cudaMemcpyAsync(s->offset, s->frame->offset, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(s->scale, s->frame->scale, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	if (launch_centre_rows(s->x64, s->offset, n, d, s->x32, s->stream, err) != GC_OK)
		return err->status;
	if (s->kernel == KERNEL_TENSOR_BF16)
	{
		/* converted once here; the centroids after every update */
		s->ld = gc_tensor_row_width(d, true);
		ALLOC_OR_RETURN(s->xb, (size_t) n * s->ld);
		ALLOC_OR_RETURN(s->cb, (size_t) kpad * s->ld);
		ALLOC_OR_RETURN(s->cnorm_bf16, (size_t) kpad);
		GC_CUDA_TRY(cudaMemsetAsync(s->cnorm_bf16, 0, sizeof(float) * kpad, s->stream), err);
		/* the conversion writes every column of a row of width d */
		if (s->ld != d)
			GC_CUDA_TRY(cudaMemsetAsync(s->xb, 0, sizeof(__nv_bfloat16) * n * s->ld, s->stream), err);
		GC_CUDA_TRY(cudaMemsetAsync(s->cb, 0, sizeof(__nv_bfloat16) * kpad * s->ld, s->stream), err);
		if (launch_pad_rows(s->x32, n, d, s->ld, s->xb, s->stream, err) != GC_OK)
			return err->status;
	}
	else if (s->kernel == KERNEL_TENSOR_SCREENED || s->kernel == KERNEL_TENSOR_TF32)
	{
		s->ld = gc_tensor_row_width(d, false);
		ALLOC_OR_RETURN(s->cpad, (size_t) kpad * s->ld);
		GC_CUDA_TRY(cudaMemsetAsync(s->cpad, 0, sizeof(float) * kpad * s->ld, s->stream), err);
		/* rows already of width ld are read in place */
		if (s->ld != d)
		{
			ALLOC_OR_RETURN(s->xpad, (size_t) n * s->ld);
			GC_CUDA_TRY(cudaMemsetAsync(s->xpad, 0, sizeof(float) * n * s->ld, s->stream), err);
			if (launch_pad_rows(s->x32, n, d, s->ld, s->xpad, s->stream, err) != GC_OK)
				return err->status;
		}
	}
	if ((s->kernel == KERNEL_TENSOR_SCREENED || s->kernel == KERNEL_TENSOR_TF32 ||
		 s->kernel == KERNEL_TENSOR_BF16) &&
		gc_tensor_splits(d, k, s->kernel == KERNEL_TENSOR_BF16))
		ALLOC_OR_RETURN(s->group_tops, (size_t) n * GC_TENSOR_MAX_GROUPS);
	if (s->kernel == KERNEL_TENSOR_SCREENED || s->kernel == KERNEL_TENSOR_3XTF32)
	{
		ALLOC_OR_RETURN(s->xnorm, (size_t) n);
		ALLOC_OR_RETURN(s->doubtful, (size_t) 2 * n);
		ALLOC_OR_RETURN(s->doubtful_count, 1);
		if (launch_row_norms(s->x32, n, d, s->xnorm, s->stream, err) != GC_OK)
			return err->status;
		s->refine.xnorm = s->xnorm;
		/* 3xTF32 products err by a few float32 roundings per term */
		s->refine.eps_3xtf32 = (float) (ldexp(1.0, -21) * sqrt((double) d) + ldexp(1.0, -20));

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
		s->refine.eps_tf32_lin = (float) (2.0 * (ldexp(1.0, -11) + ldexp(1.0, -24)) *
										  (1.0 + ldexp(1.0, -8)));
		s->refine.eps_tf32_sq = (float) ((d + 16) * ldexp(1.0, -23));
		s->refine.doubtful = s->doubtful;
		s->refine.doubtful_count = s->doubtful_count;
		s->refine.x64 = s->x64;
		s->refine.c64 = s->c64;
		s->refine.d = d;
	}
	if (s->kernel == KERNEL_TENSOR_SCREENED)
	{
		ALLOC_OR_RETURN(s->cnorm_tf32, (size_t) kpad);
		GC_CUDA_TRY(cudaMemsetAsync(s->cnorm_tf32, 0, sizeof(float) * kpad, s->stream), err);
		ALLOC_OR_RETURN(s->cradius_bits, 1);
		GC_CUDA_TRY(cudaHostAlloc((void **) &s->count_host, sizeof(unsigned int),
								  cudaHostAllocDefault), err);
		s->refine.cradius_bits = s->cradius_bits;
		s->refine.count_host = s->count_host;
		ALLOC_OR_RETURN(s->exact, (size_t) 2 * n);
		ALLOC_OR_RETURN(s->exact_count, 1);
		s->refine.cnorm_tf32 = s->cnorm_tf32;
		s->refine.exact = s->exact;
		s->refine.exact_count = s->exact_count;
	}
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

/*
 * The Lloyd labeling kernel for this precision and shape.  The benchmarks
 * can choose the float32 kernel with GPUCLUST_BENCH_KERNEL (register or
 * tiled: the SIMT kernel for d; tensor or tensor-streaming: the TF32
 * screen), to measure one against the other in the same run.
 */
static LabelKernel
choose_kernel(const GcKmeansParams *params, int d, int k)
{
	const char *bench = getenv("GPUCLUST_BENCH_KERNEL");
	LabelKernel simt = d <= GC_REGISTER_MAX_DIM ? KERNEL_REGISTER : KERNEL_TILED;

	if (params->precision == GC_PRECISION_FLOAT64)
		return KERNEL_FLOAT64;
	if (params->precision == GC_PRECISION_TF32)
		return KERNEL_TENSOR_TF32;
	if (params->precision == GC_PRECISION_BF16)
		return KERNEL_TENSOR_BF16;
	if (bench != NULL && (strcmp(bench, "register") == 0 || strcmp(bench, "tiled") == 0))
		return simt;
	if (bench != NULL && strncmp(bench, "tensor", 6) == 0)
		return KERNEL_TENSOR_SCREENED;
	return k >= TENSOR_MIN_K && d >= TENSOR_MIN_D ? KERNEL_TENSOR_SCREENED : simt;
}

static GcStatus
cuda_open(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
		  void **session, GcError *err)
{
	CudaSession *s = (CudaSession *) calloc(1, sizeof(CudaSession));
	GcStatus	status;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the GPU session");
	s->rows = rows;
	s->frame = frame;
	s->params = params;
	s->n = rows->n;
	s->d = rows->d;
	s->k = params->k;
	s->kernel = choose_kernel(params, s->d, s->k);
	status = upload(s, err);
	if (status != GC_OK)
	{
		cuda_close(s);
		return status;
	}
	*session = s;
	return GC_OK;
}

static void
cuda_close(void *session)
{
	CudaSession *s = (CudaSession *) session;

	if (s->stream)
		(void) cudaStreamSynchronize(s->stream);
	cudaFree(s->x64);
	cudaFree(s->weights);
	cudaFree(s->x32);
	cudaFree(s->hashes);
	cudaFree(s->offset);
	cudaFree(s->scale);
	cudaFree(s->c64);
	cudaFree(s->c32);
	cudaFree(s->cnorm);
	cudaFree(s->labels);
	cudaFree(s->old_labels);
	cudaFree(s->moved);
	cudaFree(s->moved_count);
	cudaFree(s->work);
	cudaFree(s->sums);
	cudaFree(s->race);
	cudaFree(s->partials);
	cudaFree(s->status);
	cudaFree(s->xpad);
	cudaFree(s->xnorm);
	cudaFree(s->doubtful);
	cudaFree(s->doubtful_count);
	cudaFree(s->cnorm_tf32);
	cudaFree(s->cradius_bits);
	cudaFree(s->exact);
	cudaFree(s->exact_count);
	cudaFree(s->cpad);
	cudaFree(s->xb);
	cudaFree(s->cb);
	cudaFree(s->cnorm_bf16);
	cudaFree(s->group_tops);
	cudaFree(s->icd);
	cudaFree(s->icd_ranked);
	cudaFree(s->rid);
	cudaFree(s->work_per_point);
	cudaFree(s->order);
	cudaFree(s->order_step);
	cudaFree(s->sort_keys);
	cudaFree(s->sort_values);
	cudaFree(s->sort_scratch);
	cudaFree(s->x64_alt);
	cudaFree(s->weights_alt);
	cudaFree(s->x32_alt);
	cudaFree(s->labels_alt);
	if (s->status_host)
		cudaFreeHost(s->status_host);
	if (s->count_host)
		cudaFreeHost(s->count_host);
	for (int e = 0; e < 3; e++)
		if (s->phase[e])
			cudaEventDestroy(s->phase[e]);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	(void) cudaGetLastError();
	free(s);
}

static bool
interrupted(const CudaSession *s)
{
	return s->params->interrupted && s->params->interrupted();
}

static GcStatus
cuda_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
				   int64_t *chosen, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	unsigned long long *race_host;

	if (gc_seed_candidates(params) > 1)
		return launch_greedy_kmeanspp(s->x64, s->hashes, s->weights, s->n, s->d, params,
									  seed, s->frame->inertia_exp, s->stream, chosen, err);
	GC_CUDA_TRY(cudaMemsetAsync(s->race, 0xff, sizeof(unsigned long long) * s->k,
								s->stream), err);
	for (int t = 0; t < s->k; t++)
	{
		if (launch_kmeanspp_step(s->x64, s->hashes, s->weights, s->n, s->d, seed, t,
								 s->work, s->race, s->stream, err) != GC_OK)
			return err->status;
		if ((t + 1) % SEED_POLL_STEPS == 0)
		{
			GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
			if (interrupted(s))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		}
	}
	race_host = (unsigned long long *) malloc(sizeof(unsigned long long) * s->k);
	if (race_host == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	{
		cudaError_t e = cudaMemcpyAsync(race_host, s->race,
										sizeof(unsigned long long) * s->k,
										cudaMemcpyDeviceToHost, s->stream);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s->stream);
		if (e != cudaSuccess)
		{
			free(race_host);
			return gc_cuda_fail(err, e, "copying the k-means++ centres", __FILE__, __LINE__);
		}
	}
	for (int t = 0; t < s->k; t++)
		chosen[t] = (int64_t) (uint32_t) race_host[t];
	free(race_host);
	return GC_OK;
}

/* The tensor kernels read the centroids from their padded (or bf16) copy */
static GcStatus
refresh_padded_centroids(CudaSession *s, GcError *err)
{
	if (s->cb != NULL)
		return launch_pad_rows(s->c32, s->k, s->d, s->ld, s->cb, s->stream, err) != GC_OK ?
			err->status :
			launch_bf16_norms(s->cb, s->k, s->ld, s->cnorm_bf16, s->stream, err);
	if (s->cpad == NULL)
		return GC_OK;
	if (launch_pad_rows(s->c32, s->k, s->d, s->ld, s->cpad, s->stream, err) != GC_OK)
		return err->status;
	if (s->cnorm_tf32 == NULL)
		return GC_OK;
	return launch_tf32_norms(s->cpad, s->k, s->ld, s->cnorm_tf32, s->cradius_bits, s->stream, err);
}

/*
 * Lloyd's labeling with the session's kernel
 */
static GcStatus
label_points(CudaSession *s, unsigned long long *changed, GcError *err)
{
	switch (s->kernel)
	{
		case KERNEL_FLOAT64:
			return launch_assign_points_f64(s->x64, s->c64, s->n, s->d, s->k,
											s->labels, changed, s->stream, err);
		case KERNEL_TENSOR_BF16:
			return launch_assign_points_bf16(s->xb, s->cb, s->cnorm_bf16, s->n, s->ld, s->k,
											 s->labels, changed, s->group_tops, s->stream, err);
		case KERNEL_TENSOR_SCREENED:
		case KERNEL_TENSOR_3XTF32:
		case KERNEL_TENSOR_TF32:
			{
				bool		exact = s->kernel != KERNEL_TENSOR_TF32;

				s->refine.x64 = s->x64; /* re-ordering swaps the buffers */
				return launch_assign_points_tensor(s->xpad != NULL ? s->xpad : s->x32, s->cpad,
												   s->cnorm, exact ? &s->refine : NULL,
												   s->n, s->ld, s->k,
												   s->kernel == KERNEL_TENSOR_3XTF32 ?
												   GC_TENSOR_TF32X3 : GC_TENSOR_TF32,
												   s->labels, changed, s->group_tops, s->stream,
												   err);
			}
		default:
			return launch_assign_points(s->x32, s->c32, s->n, s->d, s->k,
										s->labels, changed, s->stream, err);
	}
}

/*
 * Upload centroids given in the caller's coordinates, with their float
 * copies and norms (an update with all counts zero keeps them as given)
 */
static GcStatus
load_centroids(CudaSession *s, const double *centroids, GcError *err)
{
	size_t		kd = (size_t) s->k * s->d;

	GC_CUDA_TRY(cudaMemcpyAsync(s->c64, centroids, sizeof(double) * kd,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(s->sums, 0, sizeof(unsigned long long) * (kd + s->k),
								s->stream), err);
	if (launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm, NULL,
								s->stream, err) != GC_OK)
		return err->status;
	return refresh_padded_centroids(s, err);
}

/*
 * One Lloyd iteration: label, accumulate, update, and fetch the status
 */
/*
 * One iteration: labeling (pruned for the first pruned_rows points, Lloyd's
 * for the rest), the centroid update, and the status.  pruned_rows between
 * 0 and n makes the hybrid's probe: the work ratio measured on a slice
 * costs a fraction of a pruned pass where pruning does not pay.
 */
static GcStatus
iterate(CudaSession *s, int64_t pruned_rows, IterationStatus *status,
		GcLloydOutcome *outcome, GcError *err)
{
	bool		pruned = pruned_rows > 0;
	size_t		kd = (size_t) s->k * s->d;
	GcStatus	labelled;
	float		label_ms,
				update_ms;

	GC_CUDA_TRY(cudaMemsetAsync(s->status, 0, sizeof(IterationStatus), s->stream), err);
	/* the sums carry over: only points that change cluster update them */
	GC_CUDA_TRY(cudaMemcpyAsync(s->old_labels, s->labels, sizeof(int32_t) * s->n,
								cudaMemcpyDeviceToDevice, s->stream), err);
	GC_CUDA_TRY(cudaEventRecord(s->phase[0], s->stream), err);
	if (pruned)
	{
		labelled = launch_rank_centroids(s->c32, s->k, s->d, s->icd, s->rid, s->icd_ranked,
										 s->stream, err) != GC_OK ?
			err->status :
			launch_assign_points_pruned(s->x32, s->c32, s->icd_ranked, s->rid, pruned_rows, s->d,
										s->k, s->labels, s->work_per_point,
										&s->status->changed, &s->status->work,
										s->stream, err);
		/* the probe: the other points by the SIMT Lloyd kernels, which pruning rides on */
		if (labelled == GC_OK && pruned_rows < s->n)
			labelled = launch_assign_points(s->x32 + pruned_rows * s->d, s->c32,
											s->n - pruned_rows, s->d, s->k,
											s->labels + pruned_rows, &s->status->changed,
											s->stream, err);
	}
	else
		labelled = label_points(s, &s->status->changed, err);
	if (labelled == GC_OK && !pruned && s->kernel == KERNEL_TENSOR_3XTF32)
		GC_CUDA_TRY(cudaMemcpyAsync(&s->status->doubtful, s->doubtful_count, sizeof(unsigned int),
									cudaMemcpyDeviceToDevice, s->stream), err);
	if (labelled == GC_OK && !pruned && s->kernel == KERNEL_TENSOR_SCREENED)
	{
		GC_CUDA_TRY(cudaMemcpyAsync(&s->status->screened, s->doubtful_count, sizeof(unsigned int),
									cudaMemcpyDeviceToDevice, s->stream), err);
		GC_CUDA_TRY(cudaMemcpyAsync(&s->status->doubtful, s->exact_count, sizeof(unsigned int),
									cudaMemcpyDeviceToDevice, s->stream), err);
	}
	if (labelled == GC_OK)
		GC_CUDA_TRY(cudaEventRecord(s->phase[1], s->stream), err);
	if (labelled != GC_OK ||
		launch_accumulate_clusters(s->x64, s->weights, s->labels, s->old_labels, s->moved,
								   s->moved_count, s->offset, s->scale, s->n,
								   s->d, s->k, s->sums, s->sums + kd, s->stream,
								   err) != GC_OK ||
		launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm,
								&s->status->max_shift2, s->stream, err) != GC_OK ||
		refresh_padded_centroids(s, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaEventRecord(s->phase[2], s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(s->status_host, s->status, sizeof(IterationStatus),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	*status = *s->status_host;
	GC_CUDA_TRY(cudaEventElapsedTime(&label_ms, s->phase[0], s->phase[1]), err);
	GC_CUDA_TRY(cudaEventElapsedTime(&update_ms, s->phase[1], s->phase[2]), err);
	outcome->labeling_ms += label_ms;
	outcome->update_ms += update_ms;
	return GC_OK;
}

/*
 * Buffers of pruned labeling, allocated on first use
 */
static GcStatus
prepare_pruning(CudaSession *s, GcError *err)
{
	if (s->icd != NULL)
		return GC_OK;
	ALLOC_OR_RETURN(s->icd, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(s->icd_ranked, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(s->rid, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(s->work_per_point, (size_t) s->n);
	return GC_OK;
}

/* The gathered copies become the session's rows (and the rows the spares) */
static void
swap_layouts(CudaSession *s)
{
	double	   *x64 = s->x64,
			   *weights = s->weights;
	float	   *x32 = s->x32;
	int32_t    *labels = s->labels;

	s->x64 = s->x64_alt, s->x64_alt = x64;
	s->x32 = s->x32_alt, s->x32_alt = x32;
	s->labels = s->labels_alt, s->labels_alt = labels;
	if (weights)
		s->weights = s->weights_alt, s->weights_alt = weights;
}

/*
 * The second epoch of Wu & Hong: move the points (data, float copy and
 * labels) into decreasing order of work, so that the threads of a warp
 * have similar work and read consecutive rows; order keeps, for every
 * position, the point's index in the input
 */
static GcStatus
reorder_by_work(CudaSession *s, GcError *err)
{
	int64_t		n = s->n;
	int			d = s->d;

	if (s->order == NULL)
	{
		ALLOC_OR_RETURN(s->order, (size_t) n);
		ALLOC_OR_RETURN(s->order_step, (size_t) n);
		ALLOC_OR_RETURN(s->sort_keys, (size_t) n);
		ALLOC_OR_RETURN(s->sort_values, (size_t) n);
		ALLOC_OR_RETURN(s->x64_alt, (size_t) n * d);
		ALLOC_OR_RETURN(s->x32_alt, (size_t) n * d);
		ALLOC_OR_RETURN(s->labels_alt, (size_t) n);
		if (s->weights)
			ALLOC_OR_RETURN(s->weights_alt, (size_t) n);
	}
	if (launch_order_by_work(s->work_per_point, n, s->order_step, s->sort_keys,
							 s->sort_values, &s->sort_scratch, &s->sort_scratch_bytes,
							 s->stream, err) != GC_OK ||
		launch_gather_rows<double>(s->x64, s->order_step, n, d, false, s->x64_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<float>(s->x32, s->order_step, n, d, false, s->x32_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<int32_t>(s->labels, s->order_step, n, 1, false, s->labels_alt, s->stream, err) != GC_OK ||
		(s->weights &&
		 launch_gather_rows<double>(s->weights, s->order_step, n, 1, false, s->weights_alt, s->stream, err) != GC_OK))
		return err->status;
	/* order of the new layout = order of the old one, gathered the same way */
	if (s->reordered)
	{
		if (launch_gather_rows<int32_t>(s->order, s->order_step, n, 1, false, s->sort_keys,
										s->stream, err) != GC_OK)
			return err->status;
		GC_CUDA_TRY(cudaMemcpyAsync(s->order, s->sort_keys, sizeof(int32_t) * n,
									cudaMemcpyDeviceToDevice, s->stream), err);
	}
	else
		GC_CUDA_TRY(cudaMemcpyAsync(s->order, s->order_step, sizeof(int32_t) * n,
									cudaMemcpyDeviceToDevice, s->stream), err);
	swap_layouts(s);
	s->reordered = true;
	return GC_OK;
}

/*
 * Put the points back in input order, so that scoring, labels and later
 * restarts see the caller's row order
 */
static GcStatus
restore_order(CudaSession *s, GcError *err)
{
	if (!s->reordered)
		return GC_OK;
	if (launch_gather_rows<double>(s->x64, s->order, s->n, s->d, true, s->x64_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<float>(s->x32, s->order, s->n, s->d, true, s->x32_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<int32_t>(s->labels, s->order, s->n, 1, true, s->labels_alt, s->stream, err) != GC_OK ||
		(s->weights &&
		 launch_gather_rows<double>(s->weights, s->order, s->n, 1, true, s->weights_alt, s->stream, err) != GC_OK))
		return err->status;
	swap_layouts(s);
	s->reordered = false;
	return GC_OK;
}

/*
 * Whether pruning is worth trying at all (see the cost model above)
 */
static bool
pruning_may_pay(const CudaSession *s, const GcKmeansParams *params)
{
	if (params->algorithm == GC_ALGORITHM_LLOYD || s->k < 2 || s->k > GC_PRUNED_MAX_K)
		return false;
	if (params->algorithm == GC_ALGORITHM_PRUNED)
		return true;
	return (s->kernel == KERNEL_REGISTER || s->kernel == KERNEL_TILED) && s->k >= PRUNE_MIN_K &&
		s->k * log2((double) s->k) <= PRUNE_START_RATIO * (double) s->n * s->d;
}

static GcStatus
run_lloyd(CudaSession *s, const GcKmeansParams *params, double *centroids,
		  GcLloydOutcome *outcome, GcError *err)
{
	GcStatus	status;
	bool		use_pruned = pruning_may_pay(s, params);
	bool		settled = false;
	int			screen_again = 0;	/* iteration to go back to the TF32 screen */
	double		last_mean_work = 0.0;
	double		lloyd_label_ms = 0.0;
	int64_t		probe_rows = s->n;

	/* auto probes on a slice first; the probe's Lloyd part needs a SIMT kernel */
	if (params->algorithm == GC_ALGORITHM_AUTO &&
		(s->kernel == KERNEL_REGISTER || s->kernel == KERNEL_TILED))
	{
		probe_rows = s->n / PRUNE_PROBE_FRACTION;
		if (probe_rows < PRUNE_PROBE_MIN_ROWS)
			probe_rows = s->n < PRUNE_PROBE_MIN_ROWS ? s->n : PRUNE_PROBE_MIN_ROWS;
	}

	memset(outcome, 0, sizeof(*outcome));
	/* every restart starts from the screen; 3xTF32 alone is its stand-in */
	if (s->kernel == KERNEL_TENSOR_3XTF32 && s->cnorm_tf32 != NULL)
		s->kernel = KERNEL_TENSOR_SCREENED;
	outcome->kernel = kernel_names[s->kernel];
	if (use_pruned && (status = prepare_pruning(s, err)) != GC_OK)
		return status;
	GC_CUDA_TRY(cudaMemsetAsync(s->labels, 0xff, sizeof(int32_t) * s->n, s->stream), err);
	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;

	for (int it = 1; it <= params->max_iter; it++)
	{
		IterationStatus st;
		double		max_shift2;
		bool		prune_now = use_pruned && it > 1;
		int64_t		pruned_rows = !prune_now ? 0 : it == 2 ? probe_rows : s->n;
		double		label_ms_before = outcome->labeling_ms;
		double		label_ms;

		outcome->kernel = kernel_names[s->kernel];
		if ((status = iterate(s, pruned_rows, &st, outcome, err)) != GC_OK)
			return status;
		label_ms = outcome->labeling_ms - label_ms_before;
		if (!prune_now)
			lloyd_label_ms = label_ms;
		memcpy(&max_shift2, &st.max_shift2, sizeof(double));
		outcome->iterations = it;
		outcome->rechecked += (double) (s->kernel == KERNEL_TENSOR_SCREENED ? st.screened : st.doubtful);
		outcome->exact_checked += (double) st.doubtful;
		if (s->kernel == KERNEL_TENSOR_SCREENED &&
			(double) st.screened > SCREEN_MAX_FRACTION * (double) s->n)
		{
			s->kernel = KERNEL_TENSOR_3XTF32;
			screen_again = it + SCREEN_RETRY;
		}
		else if ((s->kernel == KERNEL_TENSOR_SCREENED || s->kernel == KERNEL_TENSOR_3XTF32) &&
				 (double) st.doubtful > DOUBTFUL_MAX_FRACTION * (double) s->n)
			s->kernel = KERNEL_TILED;
		else if (s->kernel == KERNEL_TENSOR_3XTF32 && screen_again > 0 && it >= screen_again)
			s->kernel = KERNEL_TENSOR_SCREENED;
		outcome->distances += prune_now ?
			(double) st.work + (double) (s->n - pruned_rows) * s->k : (double) s->n * s->k;
		outcome->distances_lloyd += (double) s->n * s->k;
		outcome->pruned |= prune_now;
		if (st.changed == 0 || sqrt(max_shift2) <= params->tol * s->frame->diagonal)
		{
			outcome->converged = true;
			break;
		}
		if (interrupted(s))
			return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", it);

		if (prune_now)
		{
			double		mean_work = (double) st.work / (double) pruned_rows;

			/* the hybrid: back to Lloyd's as soon as pruning does not pay */
			if (params->algorithm == GC_ALGORITHM_AUTO &&
				(mean_work > PRUNE_MAX_WORK_RATIO * s->k ||
				 (settled && label_ms > lloyd_label_ms)))
			{
				use_pruned = false;
				/* Lloyd's kernels other than the register one read a padded copy */
				if ((status = restore_order(s, err)) != GC_OK)
					return status;
			}
			/* end of the first epoch: re-order once the work has settled */
			else if (!settled && last_mean_work > 0 &&
					 fabs(mean_work - last_mean_work) <= PRUNE_SETTLED * last_mean_work)
			{
				settled = true;
				if ((status = reorder_by_work(s, err)) != GC_OK)
					return status;
			}
			last_mean_work = mean_work;
		}
	}
	if ((status = restore_order(s, err)) != GC_OK)
		return status;
	GC_CUDA_TRY(cudaMemcpyAsync(centroids, s->c64, sizeof(double) * s->k * s->d,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

static GcStatus
cuda_lloyd(void *session, const GcKmeansParams *params, double *centroids,
		   GcLloydOutcome *outcome, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	GcStatus	status = run_lloyd(s, params, centroids, outcome, err);

	/* an interrupted or failed run may leave the rows re-ordered */
	if (status != GC_OK && s->reordered)
	{
		GcError		ignored = {GC_OK, ""};

		(void) restore_order(s, &ignored);
	}
	return status;
}

static GcStatus
cuda_score(void *session, const double *centroids, int32_t *labels,
		   double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	gc_u128		partials[SCORE_PARTIALS];
	gc_u128		total = 0;
	unsigned long long *device_sizes = s->sums;	/* free between iterations */
	GcStatus	status;

	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;
	if (label_points(s, NULL, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemsetAsync(device_sizes, 0, sizeof(unsigned long long) * s->k,
								s->stream), err);
	if (launch_score_points(s->x64, s->weights, s->c64, s->labels, s->n, s->d,
							s->frame->inertia_exp,
							distances ? s->work : NULL, s->partials, SCORE_PARTIALS,
							device_sizes, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(partials, s->partials, sizeof(partials),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(sizes, device_sizes, sizeof(int64_t) * s->k,
								cudaMemcpyDeviceToHost, s->stream), err);
	if (labels)
		GC_CUDA_TRY(cudaMemcpyAsync(labels, s->labels, sizeof(int32_t) * s->n,
									cudaMemcpyDeviceToHost, s->stream), err);
	if (distances)
		GC_CUDA_TRY(cudaMemcpyAsync(distances, s->work, sizeof(double) * s->n,
									cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);

	for (int b = 0; b < SCORE_PARTIALS; b++)
		total += partials[b];
	*inertia = gc_inertia_value(total, s->frame);
	return GC_OK;
}

extern "C" const GcKmeansBackend gc_kmeans_cuda_backend = {
	"gpu",
	cuda_open,
	cuda_seed_kmeanspp,
	cuda_lloyd,
	cuda_score,
	cuda_close,
	true,						/* weighted rows */
};
