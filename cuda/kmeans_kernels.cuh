/*-------------------------------------------------------------------------
 *
 * kmeans_kernels.cuh
 *	  Launchers of the k-means kernels, each taking an explicit stream and
 *	  returning a status.  Kernels live in simt_kernels.cu (nearest centroid,
 *	  SIMT), tensor/mma_kernels.cu with tensor/mma_tiles.cuh and
 *	  tensor/operands.cu (tensor cores), pruned_kernels.cu (Wu & Hong),
 *	  update.cu (centroid update, scoring, layout), seeding.cu (plain k-means++)
 *	  and seeding_greedy.cu (greedy k-means++, which seeding_parallel.cu's
 *	  k-means|| also calls); the labelers (labeler_*.cu) call them.  Also the
 *	  device helpers the seedings share: a warp's 128-bit sum and a warp's round
 *	  of the k-means++ race (gc_warp_race).
 *
 * IDENTIFICATION
 *	  cuda/kmeans_kernels.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KMEANS_KERNELS_CUH
#define GC_KMEANS_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gc_engine.h"
#include "gc_math.h"

/* A 128-bit sum over a warp, whole in lane 0 (the seedings' potentials) */
__device__ __forceinline__ gc_u128
gc_warp_sum_u128(gc_u128 v)
{
	for (int off = 16; off > 0; off >>= 1)
	{
		unsigned long long lo = __shfl_down_sync(0xffffffffu, (unsigned long long) v, off);
		unsigned long long hi = __shfl_down_sync(0xffffffffu, (unsigned long long) (v >> 64), off);

		v += ((gc_u128) hi << 64) | lo;
	}
	return v;
}


/* The least of v over the warp, in every lane */
__device__ __forceinline__ unsigned long long
gc_warp_min_u64(unsigned long long v)
{
	for (int off = 16; off > 0; off >>= 1)
	{
		unsigned long long o = __shfl_xor_sync(0xffffffffu, v, off);

		v = o < v ? o : v;
	}
	return v;
}

/*
 * One round of a warp's k-means++ race (the seedings'): every lane of the
 * warp calls it together, each bidding for row i of draw u and weight w
 * when bidding, and *leader, the least key so far, is the warp's, the same
 * in every lane.  A lane takes the logarithm only where gc_race_outbid
 * cannot rule its bid out against that leader, and a warp whose lanes all
 * bid from rows of higher index than the leader's (a grid-stride loop
 * taken a warp at a time) skips it unless one of them may win: on uniform
 * rows most rounds of a long race pay for the draws alone.  The warp's
 * minimum is taken only when some lane beat the leader, so the leader
 * ends the same as a minimum over every key.
 */
__device__ __forceinline__ void
gc_warp_race(unsigned long long *leader, bool bidding, double u, double w, int64_t i)
{
	unsigned long long key = GC_RACE_NONE;

	if (bidding && !gc_race_outbid(u, w, *leader))
		key = gc_race_key(u, w, i);
	if (__any_sync(0xffffffffu, key < *leader))
		*leader = gc_warp_min_u64(key < *leader ? key : *leader);
}

/* simt_kernels.cu: largest dimension labelled with the point in registers */
#define GC_REGISTER_MAX_DIM 32

/*
 * Nearest centroid of each point (float32, centred data), lowest index on
 * ties; counts the labels that changed into *changed when not NULL
 */
GcStatus	launch_assign_points(const float *x32, const float *c32,
								 int64_t n, int d, int k,
								 int32_t *labels, unsigned long long *changed,
								 cudaStream_t stream, GcError *err);

/* labels in double precision (precision float64) */
GcStatus	launch_assign_points_f64(const double *x64, const double *c64,
									 int64_t n, int d, int k, int32_t *labels,
									 unsigned long long *changed,
									 cudaStream_t stream, GcError *err);

/*
 * The same above GC_REGISTER_MAX_DIM dimensions over centroids c_first ..
 * c_end - 1 only: the running nearest kept in run_d and run_c between
 * spans, labels (and changed) written by the span that ends at k.  Spans
 * in increasing order give the labels of one pass, to the bit.
 */
GcStatus	launch_assign_points_f64_span(const double *x64, const double *c64, int64_t n,
										  int d, int c_first, int c_end, int k,
										  double *run_d, int32_t *run_c, int32_t *labels,
										  unsigned long long *changed, cudaStream_t stream,
										  GcError *err);

/*
 * tensor/mma_kernels.cu: operands are rows of width gc_tensor_row_width(d)
 * (a multiple of 8 floats or 16 bf16 values; of 128 bytes above d = 32);
 * centroid buffers have their rows padded with zero rows to a multiple
 * of 128
 */
#define GC_TENSOR_ROW_ALIGN 128
int			gc_tensor_row_width(int d, bool bf16);

/*
 * Streamed passes split a row tile's centroid tiles into groups of
 * consecutive blocks, each leaving its rows' top two here (n x
 * GC_TENSOR_MAX_GROUPS entries) for a merge; gc_tensor_splits says
 * whether a fit of this shape does
 */
#define GC_TENSOR_MAX_GROUPS 8
typedef struct TensorPartial
{
	float		best;
	float		second;
	int32_t		index;
	int32_t		unused;
} TensorPartial;
bool		gc_tensor_splits(int d, int k, bool bf16, bool streamed);

/*
 * What the tensor kernels need for exact labels: row norms, the error
 * bounds of the TF32 screen (eps_tf32_sq (|x| + C)^2 + eps_tf32_lin
 * (|x| + C) (|x - a| + |x - b|) for a gap between the best a and second
 * b, with cnorm_tf32 the norms of the rounded centroids and C the largest
 * of them, refreshed with the centroids) and of 3xTF32 (eps_3xtf32
 * (|x| + C)^2), lists of (row, previous
 * label) pairs, and the double data of the exact check.  The screened
 * path runs TF32 over every point, 3xTF32 over what it doubts (doubtful),
 * and the exact check over what 3xTF32 doubts (exact); 3xTF32 alone puts
 * its doubts in doubtful.
 */
/*
 * Scratch of the exact check split over blocks (tensor/operands.cu): a
 * short list's rows each take several blocks, one slice of the centroids
 * each, and the last block of a row to finish merges its slices
 */
#define GC_REFINE_BLOCKS 1024
typedef struct RefineSlices
{
	double	   *best_d2;		/* GC_REFINE_BLOCKS: a slice's nearest distance */
	int		   *best_c;			/* GC_REFINE_BLOCKS: and its centroid */
	unsigned int *arrivals;		/* GC_REFINE_BLOCKS, zero between launches */
} RefineSlices;

typedef struct TensorRefinement
{
	const float *xnorm;
	float		eps_tf32_sq;
	float		eps_tf32_lin;
	float		eps_3xtf32;
	const float *cnorm_tf32;
	const unsigned int *cradius_bits;	/* C: the largest |c| in TF32, float bits */
	int32_t    *doubtful;		/* 2 * n */
	unsigned int *doubtful_count;
	int32_t    *exact;			/* 2 * n */
	unsigned int *exact_count;
	unsigned int *count_host;	/* page-locked: the screen's count, read back */
	const double *x64;
	const double *c64;
	const double *c64_columns;	/* c64 by column, for the check without skips */
	int			d;
	/* the check's skips (tensor/centroid_separations.cu): a k x k table, or NULL */
	const float *separations;
	/*
	 * with them, each row's D^2 in k-means|| (or NULL): a label that
	 * cannot bring a row below it need not be exact
	 */
	const double *need_below;
	unsigned long long *refined;	/* exact distances the check computed, or NULL */
	/* the check of short lists split over blocks, without separations; NULL: never */
	const RefineSlices *slices;
	/* Hopper's screen (tensor/wgmma_kernels.cu), where it runs */
	const struct WgmmaOperands *wgmma_ops;	/* the rows and the TF32 or fp16 centroids */
	const float *wgmma_half_norms;	/* -||c||^2 / 2 of those centroids, padded */
	int64_t		wgmma_first;	/* the pass's first row in wgmma_ops' rows */
	/* on scaled fp16 operands: the bound's norms at their scale; NULL on TF32 */
	const float *wgmma_xnorm;	/* |x|, scaled */
	const float *wgmma_cnorm;	/* the fp16 centroids' norms */
	const unsigned int *wgmma_radius_bits;	/* the largest of them, float bits */
	float		wgmma_xnorm_slack;	/* what fp16's smallest values round, at most */
} TensorRefinement;

/*
 * float32 operands: kernel GC_KERNEL_TENSOR_TF32 (refine unused), _3XTF32,
 * _SCREENED or _SCREENED_WGMMA (exact, with refine: the points left for
 * the exact check listed, in refine->doubtful after _3XTF32, in
 * refine->exact after a screen); streamed asks for the streamed layout
 */
GcStatus	launch_assign_points_tensor(const float *xp, const float *cp,
										const float *cnorm,
										const TensorRefinement *refine,
										int64_t n, int ld, int k,
										GcKernel kernel, bool streamed,
										int32_t *labels,
										unsigned long long *changed,
										TensorPartial *partials,
										cudaStream_t stream, GcError *err);
/* bf16 operands, with cnorm the norms of the bf16 centroids */
GcStatus	launch_assign_points_bf16(const __nv_bfloat16 *xb, const __nv_bfloat16 *cb,
									  const float *cnorm, int64_t n, int ld, int k,
									  bool streamed, int32_t *labels, unsigned long long *changed,
									  TensorPartial *partials,
									  cudaStream_t stream, GcError *err);
/* fp16 operands (rows and centroids scaled alike), cnorm the norms of the fp16 centroids */
GcStatus	launch_assign_points_fp16(const __half *xh, const __half *ch,
									  const float *cnorm, int64_t n, int ld, int k,
									  bool streamed, int32_t *labels, unsigned long long *changed,
									  TensorPartial *partials,
									  cudaStream_t stream, GcError *err);
/* |x| of rows of d floats, each value times scale (a power of two: exact) */
GcStatus	launch_row_norms(const float *x32, int64_t n, int d, float scale, float *xnorm,
							 cudaStream_t stream, GcError *err);
/* norms of the centroids (rows of width ld) rounded to TF32, and the largest |c| */
GcStatus	launch_tf32_norms(const float *cp, int k, int ld, float *norms,
							  unsigned int *largest_bits, cudaStream_t stream,
							  GcError *err);
/* dst[i] = src[i] rounded to TF32 (as the screen's norms take it), count values */
GcStatus	launch_round_tf32(const float *src, int64_t count, float *dst, cudaStream_t stream,
							  GcError *err);
GcStatus	launch_bf16_norms(const __nv_bfloat16 *cb, int k, int ld, float *norms,
							  cudaStream_t stream, GcError *err);
/* the same of fp16 centroids, and the largest |c| where largest_bits is not NULL */
GcStatus	launch_fp16_norms(const __half *ch, int k, int ld, float *norms,
							  unsigned int *largest_bits, cudaStream_t stream, GcError *err);
/* rows of width d into rows of width ld (the rest left as it is), as floats or bf16 */
GcStatus	launch_pad_rows(const float *src, int64_t rows, int d, int ld,
							float *dst, cudaStream_t stream, GcError *err);
GcStatus	launch_pad_rows(const float *src, int64_t rows, int d, int ld,
							__nv_bfloat16 *dst, cudaStream_t stream, GcError *err);
/* fp16's common scale for the session's centred rows; false where out of float's range */
bool		gc_fp16_scale(const GcRows *rows, float *scale);
/* the same as fp16, each value times scale (a power of two) */
GcStatus	launch_pad_rows_scaled(const float *src, int64_t rows, int d, int ld, float scale,
								   __half *dst, cudaStream_t stream, GcError *err);
/*
 * tensor/operands.cu: the exact nearest centroid (double, as the CPU
 * computes) of every point listed, from refine's x64, c64 and d; where
 * refine->separations is set, starting from the point's label and skipping
 * the centroids its separations rule out, and otherwise measuring all k
 * from refine->c64_columns, which launch_centroid_columns makes (k x d
 * doubles, coordinate j of centroid c at j k + c)
 */
GcStatus	launch_centroid_columns(const double *c64, int k, int d, double *columns,
									cudaStream_t stream, GcError *err);
GcStatus	launch_refine_labels(const TensorRefinement *refine, int k, const int32_t *list,
								 const unsigned int *list_count, int32_t *labels,
								 unsigned long long *changed, cudaStream_t stream,
								 GcError *err);
/*
 * tensor/centroid_separations.cu: lower bounds on the centroids' squared
 * distances (k x k floats, k <= GC_SEPARATIONS_MAX_K: 64 MB), and the
 * separation from a row's label, at exact squared distance d2, beyond
 * which a centroid is farther from the row than limit (<= d2)
 */
#define GC_SEPARATIONS_MAX_K 4096
GcStatus	launch_centroid_separations(const double *c64, int k, int d, float *separations,
										cudaStream_t stream, GcError *err);

__device__ __forceinline__ double
gc_separation_reach(double d2, double limit)
{
	double		r = sqrt(d2) + sqrt(limit);

	return r * r * (1.0 + 0x1p-24) + 0x1p-1000;
}

/* simt_kernels.cu: the labels of the m sample rows into sample_labels */
GcStatus	launch_gather_labels(const int32_t *labels, const int64_t *sample, int m,
								 int32_t *sample_labels, cudaStream_t stream, GcError *err);

/* pruned_kernels.cu: Wu & Hong's triangle-inequality labeling */
#define GC_PRUNED_MAX_K 4096
GcStatus	launch_rank_centroids(const float *c32, int k, int d, float *icd,
								  int32_t *rid, float *icd_ranked,
								  cudaStream_t stream, GcError *err);
GcStatus	launch_assign_points_pruned(const float *x32, const float *c32,
										const float *icd_ranked,
										const int32_t *rid,
										int64_t n, int d, int k,
										int32_t *labels, int32_t *work,
										unsigned long long *changed,
										unsigned long long *work_total,
										cudaStream_t stream, GcError *err);
GcStatus	launch_order_by_work(const int32_t *work, int64_t n, int32_t *order,
								 int32_t *keys_tmp, int32_t *iota_tmp,
								 void **scratch, size_t *scratch_bytes,
								 cudaStream_t stream, GcError *err);
template <typename T>
GcStatus	launch_gather_rows(const T *src, const int32_t *order, int64_t n,
							   int width, bool inverse, T *dst,
							   cudaStream_t stream, GcError *err);

/* bounded_kernels.cu: drift bounds over the register kernel (d <= GC_REGISTER_MAX_DIM) */
GcStatus	launch_centroid_drift(const float *c32, float *last, int k, int d,
								  float *drift, float *separation, float *top,
								  int *top_c, cudaStream_t stream, GcError *err);
GcStatus	launch_bounds_check(const float *x32, const float *c32, int64_t n, int d,
								const int32_t *labels, const float *drift,
								const float *separation, const float *top,
								const int *top_c, float *upper, float *lower,
								int32_t *list, unsigned int *list_count,
								unsigned long long *work, cudaStream_t stream,
								GcError *err);
GcStatus	launch_bounded_scan(const float *x32, const float *c32, int64_t first,
								int64_t count, int d, int k, const int32_t *list,
								const unsigned int *list_count, int32_t *labels,
								float *upper, float *lower, unsigned long long *changed,
								unsigned long long *work, cudaStream_t stream,
								GcError *err);

/* update.cu */
GcStatus	launch_centre_rows(const double *x64, const double *offset,
							   int64_t n, int d, float *x32,
							   cudaStream_t stream, GcError *err);
/*
 * sums += the points whose label moved from old_labels (-1: none) to
 * labels, listed first into moved (n entries) and moved_count; weighted
 * rows (weights not NULL) add weight times the point and their weight
 */
GcStatus	launch_accumulate_clusters(const double *x64, const double *weights,
									   const int32_t *labels,
									   const int32_t *old_labels, int32_t *moved,
									   unsigned int *moved_count,
									   const double *offset, const double *scale,
									   int64_t n, int d, int k,
									   unsigned long long *sums,
									   unsigned long long *counts,
									   cudaStream_t stream, GcError *err);
GcStatus	launch_update_centroids(const unsigned long long *sums,
									const unsigned long long *counts,
									const double *offset, const double *scale,
									int d, int k, double *c64, float *c32,
									float *cnorm, int shift_exp,
									unsigned long long *shift_sum,
									cudaStream_t stream, GcError *err);
/* the cosine metric: updated centroids back to unit length, their shifts from prev */
GcStatus	launch_normalize_centroids(const unsigned long long *counts,
									   const double *offset, int d, int k,
									   double *c64, const double *prev, float *c32,
									   float *cnorm, int shift_exp,
									   unsigned long long *shift_sum,
									   cudaStream_t stream, GcError *err);
GcStatus	launch_score_points(const double *x64, const double *weights,
								const double *c64,
								const int32_t *labels, int64_t n, int d,
								int inertia_exp, double *distances,
								unsigned __int128 *partials, int npartials,
								unsigned long long *sizes,
								cudaStream_t stream, GcError *err);

/* seeding.cu: step t of the k-means++ race, into race[t] */
GcStatus	launch_kmeanspp_step(const double *x64, const uint64_t *hashes,
								 const double *weights, int64_t n, int d, uint64_t seed, int t,
								 int inertia_exp, double *mind2, unsigned long long *race,
								 cudaStream_t stream, GcError *err);

/*
 * seeding_greedy.cu: greedy k-means++ (gc_seed_candidates(params, n, d) > 1),
 * all k steps, the chosen rows into chosen (host)
 */
GcStatus	launch_greedy_kmeanspp(const double *x64, const uint64_t *hashes,
								   const double *weights, int64_t n, int d,
								   const GcKmeansParams *params, uint64_t seed,
								   int inertia_exp, cudaStream_t stream,
								   int64_t *chosen, GcError *err);

#endif							/* GC_KMEANS_KERNELS_CUH */
