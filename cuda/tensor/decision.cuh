/*-------------------------------------------------------------------------
 *
 * tensor/decision.cuh
 *	  What a tensor-core labeling pass reads and writes (TensorArgs), and how it
 *	  decides a row from the two largest values of x.c - ||c||^2 / 2 it found:
 *	  label it, or, in an exact pass whose gap is within the error bound, list
 *	  it for the next pass; and the merge of a pass split into groups of
 *	  centroid tiles; and the rounding to TF32 (to nearest, the rounding the
 *	  bound assumes).  Shared by the mma.sync kernels (tensor/mma_tiles.cuh) and
 *	  Hopper's TF32 screen (tensor/wgmma_tiles.cuh), so both decide by the same
 *	  rule.
 *
 * IDENTIFICATION
 *	  cuda/tensor/decision.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_TENSOR_DECISION_CUH
#define GC_TENSOR_DECISION_CUH

#include <float.h>

#include "kmeans_kernels.cuh"

/* x rounded to the nearest TF32 value (cvt.rna), as its bit pattern */
__device__ __forceinline__ uint32_t
to_tf32(float x)
{
	uint32_t	r;

	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return r;
}

/* What one pass reads and writes */
typedef struct TensorArgs
{
	const void *x;				/* rows of width ld, float, bf16 or fp16 */
	const void *c;				/* centroid rows of width ld, padded to TN rows */
	const float *cnorm;			/* ||c||^2 as the products see the centroids */
	const float *xnorm;			/* exact passes: |x|; NULL otherwise */
	float		xnorm_slack;	/* added to |x|: what fp16's range rounds (else 0) */
	const unsigned int *radius_bits;
	float		eps_sq;
	float		eps_lin;
	int64_t		rows;			/* points, or entries of row_map */
	const int32_t *row_map;		/* (row, previous label) pairs, or NULL */
	int			ld;
	int			k;
	int32_t    *labels;
	unsigned long long *changed;
	int32_t    *doubtful;		/* exact passes: the points left in doubt */
	unsigned int *doubtful_count;
	int			groups;			/* centroid groups a row tile is split into */
	int			tiles_per_group;	/* centroid tiles in each */
	TensorPartial *partials;	/* rows x groups top twos, when groups > 1 */
} TensorArgs;

/* Merge (best, second, index) candidates, larger is nearer; the lower index wins ties */
__device__ __forceinline__ void
merge_top2(float &best, float &second, int &best_c, float ob, float os, int oc)
{
	if (ob > best || (ob == best && oc < best_c))
	{
		second = fmaxf(best, os);
		best = ob;
		best_c = oc;
	}
	else
		second = fmaxf(second, ob);
}

/*
 * Label one row from its top two (largest values: x.c - ||c||^2 / 2, or
 * 2 x.c - ||c||^2 for 3xTF32), or, in an exact pass whose gap is within
 * the error bound, list it for the next pass instead.  A pass over a list
 * labels the points row_map lists.
 */
template <int MODE>
__device__ __forceinline__ void
decide_row(const TensorArgs &args, int64_t slot_row, float kept, float kept2, int c)
{
	constexpr float TO_DIST = MODE != GC_KERNEL_TENSOR_3XTF32 ? -2.0f : -1.0f;	/* kept -> ||c||^2 - 2 x.c */
	const float *xnorm = args.xnorm;
	int64_t		row = args.row_map != NULL ? args.row_map[2 * slot_row] : slot_row;
	int			previous = args.row_map != NULL ? args.row_map[2 * slot_row + 1] :
		args.labels[row];
	float		b = TO_DIST * kept,
				sec = fminf(TO_DIST * kept2, FLT_MAX);	/* no second when k = 1 */
	float		xn = xnorm == NULL ? 0.0f : xnorm[row] + args.xnorm_slack;
	float		reach = xnorm == NULL ? 0.0f : xn + __uint_as_float(*args.radius_bits);
	float		bound = args.eps_sq * reach * reach;

	if (xnorm != NULL && args.eps_lin > 0.0f)
	{
		/*
		 * |x - c| of the best and second from ||c||^2 - 2 x.c, rounded
		 * up; the best centroid's distance moves with its own norm, any
		 * other's with at most C's
		 */
		float		xx = xn * (1.0f + 0x1p-10f),
					slack = bound + xx * xx,
					moved = reach + xx + sqrtf(args.cnorm[c]) * (1.0f + 0x1p-10f);

		bound += 0.5f * args.eps_lin * moved *
			(sqrtf(fmaxf(b + slack, 0.0f)) + sqrtf(fmaxf(sec + slack, 0.0f)));
	}
	/* a gap or bound that is not a number (operands out of range) is a doubt */
	if (xnorm != NULL && !(sec - b > bound))
	{
		unsigned	slot = atomicAdd(args.doubtful_count, 1u);

		args.doubtful[2 * slot] = (int32_t) row;
		args.doubtful[2 * slot + 1] = previous;
	}
	else if (args.changed != NULL && previous != c)
		atomicAdd(args.changed, 1ULL);
	args.labels[row] = c;
}

/*
 * A split pass's second half: each row's top two over its groups, merged
 * in centroid order (so the lower index still wins ties), then decided
 */
template <int MODE>
__global__ void
merge_groups_kernel(const TensorArgs args)
{
	for (int64_t slot = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; slot < args.rows;
		 slot += (int64_t) gridDim.x * blockDim.x)
	{
		const TensorPartial *p = args.partials + slot * args.groups;
		float		kept = p[0].best,
					kept2 = p[0].second;
		int			c = p[0].index;

		for (int q = 1; q < args.groups; q++)
			merge_top2(kept, kept2, c, p[q].best, p[q].second, p[q].index);
		decide_row<MODE>(args, slot, kept, kept2, c);
	}
}

#endif							/* GC_TENSOR_DECISION_CUH */
