/*-------------------------------------------------------------------------
 *
 * tensor/wgmma_kernels.cuh
 *	  The Hopper labeling pass (tensor/wgmma_kernels.cu, built for sm_90a only;
 *	  the kernel is in tensor/wgmma_tiles.cuh): its operands, described by
 *	  tensor maps for the copy engine, and its launchers, the 16-bit pass and
 *	  the screen.  The labelers that own the operands
 *	  (tensor/labeler_16bit.cu, tensor/labeler_fp32.cu) include this.
 *
 * IDENTIFICATION
 *	  cuda/tensor/wgmma_kernels.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_LABELING_WGMMA_CUH
#define GC_LABELING_WGMMA_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gc_engine.h"
#include "tensor/decision.cuh"

#define WG_ROW_BYTES 128		/* bytes of every row a stage holds: one swizzled row */

/* The operands' element type */
typedef enum WgmmaType
{
	WGMMA_BF16,
	WGMMA_FP16,
	WGMMA_TF32					/* floats, read as TF32 by the tensor cores */
} WgmmaType;

/* What one pass reads and writes besides its tensor maps */
typedef struct WgmmaArgs
{
	const float *half_norms;	/* -||c||^2 / 2, padded with -FLT_MAX (WG_BN multiple) */
	int64_t		first;			/* the pass's first point in the tensor map */
	int64_t		n;				/* points: first .. first + n - 1, labelled into labels[0 .. n - 1] */
	int			ld;				/* row width of the operands: WG_ROW_BYTES a stage */
	int			k;
	int32_t    *labels;
	unsigned long long *changed;
	TensorArgs	screen;			/* the TF32 screen: how it decides a row, in how many
								 * groups of centroid tiles (0 or 1: one) */
} WgmmaArgs;

/* The operands of the pass: rows of width ld, as tensor maps */
typedef struct WgmmaOperands
{
	CUtensorMap xmap;			/* n points */
	CUtensorMap cmap;			/* k centroids */
	WgmmaType	type;
	int			ld;				/* their row width, in elements */
} WgmmaOperands;

/*
 * Whether this device runs the pass (compute capability 9.0: sm_90a code
 * runs on no other) for rows of row_bytes (a multiple of WG_ROW_BYTES)
 */
bool		gc_wgmma_usable(int row_bytes);

/* Describe rows (n of width ld) and centroids (k) for the copy engine */
GcStatus	gc_wgmma_describe(WgmmaOperands *ops, const void *x, int64_t n, const void *c,
							  int k, int ld, WgmmaType type, GcError *err);

/* Centroids padded to whole tiles of the pass: half_norms holds this many floats */
int			gc_wgmma_padded_k(int k);

/* -||c||^2 / 2 from the norms of the k rounded centroids, padded with -FLT_MAX */
GcStatus	launch_wgmma_half_norms(const float *cnorm, int k, float *half_norms,
									cudaStream_t stream, GcError *err);

/*
 * Label the n points from first (of those ops describes, 16-bit): nearest
 * centroid into labels[0 .. n - 1], changes counted into changed
 */
GcStatus	launch_assign_points_wgmma(const WgmmaOperands *ops, const float *half_norms,
									   int64_t first, int64_t n, int ld, int k, int32_t *labels,
									   unsigned long long *changed, cudaStream_t stream,
									   GcError *err);

/*
 * Whether the screen over rows of row_bytes and k centroids runs in groups
 * of centroid tiles, and so needs partials for rows x GC_TENSOR_MAX_GROUPS
 * (rows of more than one stage and more than one centroid tile)
 */
bool		gc_wgmma_screen_in_groups(int row_bytes, int k);

/*
 * The screen over the screen->rows points from first (of those ops
 * describes: floats, with the centroids already TF32 values, or scaled
 * fp16): each row decided by screen (labels, bounds and the list of
 * doubts, relative to first; its norms those of the operands' scale).
 * Where gc_wgmma_screen_in_groups, it runs in groups of centroid tiles
 * into screen->partials and a merge decides the rows.
 */
GcStatus	launch_screen_points_wgmma(const WgmmaOperands *ops, const float *half_norms,
									   int64_t first, const TensorArgs *screen,
									   cudaStream_t stream, GcError *err);

#endif							/* GC_LABELING_WGMMA_CUH */
