/*-------------------------------------------------------------------------
 *
 * labeling_tensor.cu
 *	  Nearest-centroid labeling on tensor cores, for large k: the distance
 *	  ||c||^2 - 2 x.c as a matrix product X C^T computed in 128 x 128 tiles
 *	  with mma.sync (TF32 m16n8k8 or bf16 m16n8k16, FP32 accumulation),
 *	  operands brought into shared memory with cp.async, and the arg-min
 *	  fused into the epilogue of every centroid tile, so the n x k distance
 *	  matrix is never written (the scheme of FAISS, cuVS's fused L2 nearest
 *	  neighbour and Flash-KMeans).
 *
 *	  Three layouts, the first that two blocks per multiprocessor can hold
 *	  (choose_layout):
 *	  - all: a block loads its 128 points and every centroid (with their
 *		norms) once, whole rows; its loop is products and epilogues only
 *		(small d and k);
 *	  - resident: the 128 points stay in shared memory while the centroid
 *		tiles stream past in column steps, so the data cross device memory
 *		once per labeling; the centroids, small, come from L2;
 *	  - streaming: points and centroids both stream through in 128-byte
 *		column steps (wide rows, or a single centroid tile); a pass over
 *		every row splits the centroid tiles into groups of blocks that read
 *		the same points side by side and merges their top twos after.
 *	  Column steps are 128 bytes where the row width allows, 64 or 32
 *	  (8 floats) otherwise, so that small d wastes no products.
 *
 *	  Three modes:
 *	  - TF32: one product per step; about 1e-3 relative error in x.c.
 *	  - 3xTF32: each operand split into a TF32 "big" part and a TF32
 *		remainder, and big*big + big*small + small*big accumulated, which
 *		recovers float32 accuracy on the tensor cores (as CUTLASS does).
 *	  - BF16: operands converted to bfloat16 once (the data at upload, the
 *		centroids after each update), with the norms of the rounded
 *		centroids: twice TF32's rate, about 4e-3 relative error.
 *	  TF32 and BF16 start each accumulator at -||c||^2 / 2 and keep the
 *	  largest x.c - ||c||^2 / 2, which saves the epilogue a multiply-add per
 *	  distance; 3xTF32 keeps ||c||^2 - 2 x.c with one rounding at the end.
 *
 *	  ||c||^2 - 2 x.c cancels badly when clusters are small against their
 *	  distance from the centre of the data, so the kernel keeps the two
 *	  smallest values per point; where their gap is within the error bound
 *	  of the product, eps (||x|| + C)^2 with C the largest ||c||, the point
 *	  is listed, and refine_labels recomputes its nearest centroid exactly
 *	  (double, no FMA, as the CPU reference does).
 *
 *	  Exact labels at TF32 speed (the float32 default for large k): a TF32
 *	  pass screens every point; the doubtful ones, a few percent on
 *	  clustered data, are labelled again by the 3xTF32 kernel, which reads
 *	  their rows through the screen's list, and its own doubtful points go
 *	  to refine_labels.  The screen's bound is in distances rather than
 *	  squared distances: rounding x and c to TF32 moves |x - c| by at most
 *	  r(c) = 2^-11 (|x| + |c|), so with the norms of the rounded centroids
 *	  the screen's distances are exact distances between moved points, and
 *	  the best centroid a is certain when the second is more than
 *	  r(a) + r(C) further, C the largest centroid; float32 accumulation
 *	  (with the norm as its first term) adds a term in (|x| + |C|)^2.  The
 *	  precision options tf32 and bf16 skip all refinement: they trade
 *	  exactness for speed by request.
 *
 *	  Operands are rows of width ld (gc_tensor_row_width): the centred
 *	  float32 data (the data themselves when d is already a multiple of 8)
 *	  or their bf16 copy, and centroid rows padded to a multiple of 128 with
 *	  zeros; point rows past the end are clamped to the last row, whose
 *	  results are discarded, and centroid columns past k start at -FLT_MAX
 *	  (or are skipped a warp's 8-column slice at a time).
 *
 * IDENTIFICATION
 *	  cuda/labeling_tensor.cu
 *
 *-------------------------------------------------------------------------
 */
#include <cuda_bf16.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define TM 128					/* points per block tile */
#define TN 128					/* centroids per block tile */
#define TTHREADS 256			/* 8 warps: 2 along points, 4 along centroids */
#define TSTAGES 2
#define TPAD_BYTES 16			/* row padding against bank conflicts */

enum TensorMode
{
	MODE_TF32,
	MODE_TF32X3,
	MODE_BF16
};

template <int MODE>
struct ModeElem
{
	typedef float T;
};
template <>
struct ModeElem<MODE_BF16>
{
	typedef __nv_bfloat16 T;
};

/* One instantiation's shape: KSB bytes of every row per pipeline step */
template <int MODE, int KSB>
struct TileShape
{
	typedef typename ModeElem<MODE>::T Elem;
	static constexpr int ES = sizeof(Elem);
	static constexpr int KS = KSB / ES;		/* elements per step */
	static constexpr int PAD = TPAD_BYTES / ES;
	static constexpr int SC = KS + PAD;		/* row stride of a staged tile */
	static constexpr int CHUNK = 16 / ES;	/* elements per cp.async */
	static constexpr int KMMA = MODE == MODE_BF16 ? 16 : 8;
	static constexpr bool NORM_IN_ACC = MODE != MODE_TF32X3;
};

/* What one pass reads and writes */
typedef struct TensorArgs
{
	const void *x;				/* rows of width ld, float or bf16 */
	const void *c;				/* centroid rows of width ld, padded to TN rows */
	const float *cnorm;			/* ||c||^2 as the products see the centroids */
	const float *xnorm;			/* exact passes: |x|; NULL otherwise */
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

__device__ __forceinline__ uint32_t
to_tf32(float x)
{
	uint32_t	r;

	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return r;
}

/* d += a b (m16n8k8, TF32) */
__device__ __forceinline__ void
mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* d += a b (m16n8k16, bf16) */
__device__ __forceinline__ void
mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void
cp_async16(void *smem, const void *gmem)
{
	unsigned	s = (unsigned) __cvta_generic_to_shared(smem);

	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(gmem));
}

__device__ __forceinline__ void
cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;");
}

template <int N>
__device__ __forceinline__ void
cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;" :: "n"(N));
}

/*
 * Start copying columns [col0, col0 + chunks * CHUNK) of nrows rows into
 * dst (row stride dst_stride): row r is rows[r], or first + r
 */
template <typename Elem>
__device__ __forceinline__ void
copy_rows_async(Elem *dst, int dst_stride, const Elem *src, int ld,
				const int32_t *rows, int64_t first, int nrows, int col0, int chunks)
{
	constexpr int CHUNK = 16 / sizeof(Elem);

	for (int v = threadIdx.x; v < nrows * chunks; v += TTHREADS)
	{
		int			r = v / chunks,
					q = v - r * chunks;
		int64_t		row = rows != NULL ? rows[r] : first + r;

		cp_async16(dst + r * dst_stride + q * CHUNK, src + row * ld + col0 + q * CHUNK);
	}
}

/* Where a block keeps its operands */
enum TileLayout
{
	LAYOUT_STREAM,				/* points and centroids staged, a column step at a time */
	LAYOUT_RESIDENT,			/* the point tile whole; centroids staged */
	LAYOUT_ALL					/* the point tile and every centroid, whole */
};

/*
 * Start copying step (col0, k0) into a stage: the streamed points' columns
 * (unless resident), the centroid tile's columns and its TN norms, which
 * a tile's first step and its epilogue read (the norm arrays are padded
 * to a multiple of TN)
 */
template <typename Elem, int LAYOUT, int KSB>
__device__ __forceinline__ void
load_stage(unsigned char *stage, const Elem *X, const Elem *C, const float *cnorm, int ld,
		   const int32_t *tile_rows, int col0, int k0)
{
	constexpr int SC = (KSB + TPAD_BYTES) / sizeof(Elem);
	constexpr int POINT_BYTES = LAYOUT == LAYOUT_STREAM ? TM * SC * (int) sizeof(Elem) : 0;
	Elem	   *cs = reinterpret_cast<Elem *>(stage + POINT_BYTES);

	if (LAYOUT == LAYOUT_STREAM)
		copy_rows_async<Elem>(reinterpret_cast<Elem *>(stage), SC, X, ld, tile_rows, 0, TM, k0,
							  KSB / 16);
	copy_rows_async<Elem>(cs, SC, C, ld, NULL, col0, TN, k0, KSB / 16);
	if (threadIdx.x < TN / 4)
		cp_async16(reinterpret_cast<float *>(cs + TN * SC) + 4 * threadIdx.x,
				   cnorm + col0 + 4 * threadIdx.x);
}

/* Slices of 8 centroids of the tile at col0 that warp column warp_n has before k (0 to 4) */
__device__ __forceinline__ int
valid_slices(int k, int col0, int warp_n)
{
	int			left = k - col0 - warp_n * 32;

	return left <= 0 ? 0 : min(4, (left + 7) / 8);
}

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
 * Start the accumulators of a centroid tile: -||c||^2 / 2, and -FLT_MAX
 * past k, where the norm is in the accumulator; 0 for 3xTF32.  norms are
 * the tile's.
 */
template <int MODE>
__device__ __forceinline__ void
tile_start(float (&acc)[4][4][4], const float *norms, int col0, int k, int warp_n, int t)
{
#pragma unroll
	for (int nt = 0; nt < 4; nt++)
#pragma unroll
		for (int e = 0; e < 2; e++)
		{
			int			c = warp_n * 32 + nt * 8 + 2 * t + e;
			float		v = MODE == MODE_TF32X3 ? 0.0f :
				col0 + c < k ? -0.5f * norms[c] : -FLT_MAX;

#pragma unroll
			for (int mt = 0; mt < 4; mt++)
#pragma unroll
				for (int h = 0; h < 2; h++)
					acc[mt][nt][h * 2 + e] = v;
		}
}

/*
 * One mma step (KMMA columns) of a warp's 64 x 32 sub-tile: A from the
 * point tile (row stride sx), B from the centroid tile (row stride sc);
 * slices of 8 centroids at or past nvalid are skipped
 */
template <int MODE, typename Elem>
__device__ __forceinline__ void
mma_step(float (&acc)[4][4][4], const Elem *xs, int sx, const Elem *cs, int sc, int warp_m, int warp_n,
		 int g, int t, int nvalid)
{
	if (MODE == MODE_BF16)
	{
		/* m16n8k16: a thread holds columns 2t, 2t+1 and 2t+8, 2t+9 */
		uint32_t	a[4][4],
					b[4][2];

#pragma unroll
		for (int mt = 0; mt < 4; mt++)
		{
			const Elem *p = xs + (warp_m * 64 + mt * 16 + g) * sx + 2 * t;

			a[mt][0] = *reinterpret_cast<const uint32_t *>(p);
			a[mt][1] = *reinterpret_cast<const uint32_t *>(p + 8 * sx);
			a[mt][2] = *reinterpret_cast<const uint32_t *>(p + 8);
			a[mt][3] = *reinterpret_cast<const uint32_t *>(p + 8 * sx + 8);
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
		{
			const Elem *p = cs + (warp_n * 32 + nt * 8 + g) * sc + 2 * t;

			b[nt][0] = *reinterpret_cast<const uint32_t *>(p);
			b[nt][1] = *reinterpret_cast<const uint32_t *>(p + 8);
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
			if (nt < nvalid)
#pragma unroll
				for (int mt = 0; mt < 4; mt++)
					mma_bf16(acc[mt][nt], a[mt], b[nt]);
	}
	else
	{
		uint32_t	a[4][4],
					b[4][2];
		uint32_t	a_lo[4][4],
					b_lo[4][2];

#pragma unroll
		for (int mt = 0; mt < 4; mt++)
		{
			const float *p = reinterpret_cast<const float *>(xs) +
				(warp_m * 64 + mt * 16 + g) * sx + t;
			float		v[4] = {p[0], p[8 * sx], p[4], p[8 * sx + 4]};

#pragma unroll
			for (int e = 0; e < 4; e++)
			{
				a[mt][e] = to_tf32(v[e]);
				if (MODE == MODE_TF32X3)
					a_lo[mt][e] = to_tf32(v[e] - __uint_as_float(a[mt][e]));
			}
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
		{
			const float *p = reinterpret_cast<const float *>(cs) +
				(warp_n * 32 + nt * 8 + g) * sc + t;
			float		v[2] = {p[0], p[4]};

#pragma unroll
			for (int e = 0; e < 2; e++)
			{
				b[nt][e] = to_tf32(v[e]);
				if (MODE == MODE_TF32X3)
					b_lo[nt][e] = to_tf32(v[e] - __uint_as_float(b[nt][e]));
			}
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
			if (nt < nvalid)
#pragma unroll
				for (int mt = 0; mt < 4; mt++)
				{
					if (MODE == MODE_TF32X3)
					{
						mma_tf32(acc[mt][nt], a_lo[mt], b[nt]);
						mma_tf32(acc[mt][nt], a[mt], b_lo[nt]);
					}
					mma_tf32(acc[mt][nt], a[mt], b[nt]);
				}
	}
}

/*
 * Epilogue of a centroid tile: fold its values into each row's running
 * top two (larger is nearer); norms are the tile's
 */
template <int MODE>
__device__ __forceinline__ void
fold_tile(const float (&acc)[4][4][4], float (&best)[4][2], float (&second)[4][2],
		  int (&best_c)[4][2], const float *norms, int col0, int k, int warp_n, int t,
		  int nvalid)
{
#pragma unroll
	for (int nt = 0; nt < 4; nt++)
		if (nt < nvalid)
#pragma unroll
			for (int e = 0; e < 2; e++)
			{
				int			c = col0 + warp_n * 32 + nt * 8 + 2 * t + e;
				float		norm = MODE != MODE_TF32X3 ? 0.0f :
					c < k ? norms[c - col0] : FLT_MAX;

#pragma unroll
				for (int mt = 0; mt < 4; mt++)
#pragma unroll
					for (int h = 0; h < 2; h++)
					{
						float		s = acc[mt][nt][h * 2 + e];

						/* 3xTF32: 2 x.c - ||c||^2, rounded once, as ||c||^2 - 2 x.c was */
						if (MODE == MODE_TF32X3)
							s = fmaf(2.0f, s, -norm);
						second[mt][h] = fmaxf(second[mt][h], fminf(best[mt][h], s));
						if (s > best[mt][h])
						{
							best[mt][h] = s;
							best_c[mt][h] = c;
						}
					}
			}
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
	constexpr float TO_DIST = MODE != MODE_TF32X3 ? -2.0f : -1.0f;	/* kept -> ||c||^2 - 2 x.c */
	const float *xnorm = args.xnorm;
	int64_t		row = args.row_map != NULL ? args.row_map[2 * slot_row] : slot_row;
	int			previous = args.row_map != NULL ? args.row_map[2 * slot_row + 1] :
		args.labels[row];
	float		b = TO_DIST * kept,
				sec = fminf(TO_DIST * kept2, FLT_MAX);	/* no second when k = 1 */
	float		reach = xnorm == NULL ? 0.0f :
		xnorm[row] + __uint_as_float(*args.radius_bits);
	float		bound = args.eps_sq * reach * reach;

	if (xnorm != NULL && args.eps_lin > 0.0f)
	{
		/*
		 * |x - c| of the best and second from ||c||^2 - 2 x.c, rounded
		 * up; the best centroid's distance moves with its own norm, any
		 * other's with at most C's
		 */
		float		xx = xnorm[row] * (1.0f + 0x1p-10f),
					slack = bound + xx * xx,
					moved = reach + xx + sqrtf(args.cnorm[c]) * (1.0f + 0x1p-10f);

		bound += 0.5f * args.eps_lin * moved *
			(sqrtf(fmaxf(b + slack, 0.0f)) + sqrtf(fmaxf(sec + slack, 0.0f)));
	}
	if (xnorm != NULL && sec - b <= bound)
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
 * One pass of nearest-centroid labeling over TM points per block, the
 * operands kept as LAYOUT says, KSB bytes of each row per pipeline step
 * (staged layouts).  Exact passes (xnorm not NULL) list the points whose
 * two best distances are within the error bound instead of trusting them.
 */
template <int MODE, int LAYOUT, int KSB>
__global__ void
__launch_bounds__(TTHREADS, MODE == MODE_TF32X3 ? 1 : 2)
assign_points_tensor_kernel(const TensorArgs args)
{
	typedef TileShape<MODE, KSB> S;
	typedef typename S::Elem Elem;
	extern __shared__ __align__(16) unsigned char smem[];
	int32_t    *tile_rows = reinterpret_cast<int32_t *>(smem);
	Elem	   *tiles = reinterpret_cast<Elem *>(smem + TM * sizeof(int32_t));
	const Elem *X = static_cast<const Elem *>(args.x);
	const Elem *C = static_cast<const Elem *>(args.c);
	const int	ld = args.ld,
				k = args.k;
	/* row stride of the point tile (and of the resident centroids) */
	const int	sx = LAYOUT == LAYOUT_STREAM ? S::SC : ld + S::PAD;
	/* past the resident point tile: the stages, or every centroid and norm */
	unsigned char *rest = reinterpret_cast<unsigned char *>(LAYOUT == LAYOUT_STREAM ?
															 tiles : tiles + TM * sx);
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;
	int			warp_m = warp >> 2,
				warp_n = warp & 3;
	int			g = lane >> 2,
				t = lane & 3;
	int64_t		row_tile = blockIdx.x / args.groups;
	int			group = (int) (blockIdx.x - row_tile * args.groups);
	int64_t		row0 = row_tile * TM;
	float		acc[4][4][4];
	float		best[4][2];
	float		second[4][2];
	int			best_c[4][2];

	if (row0 >= args.rows)
		return;					/* a pass over a list stops at its length */
	for (int r = threadIdx.x; r < TM; r += TTHREADS)
	{
		int64_t		slot = row0 + r < args.rows ? row0 + r : args.rows - 1;

		tile_rows[r] = args.row_map != NULL ? args.row_map[2 * slot] : (int32_t) slot;
	}
	__syncthreads();
#pragma unroll
	for (int mt = 0; mt < 4; mt++)
#pragma unroll
		for (int h = 0; h < 2; h++)
		{
			best[mt][h] = second[mt][h] = -FLT_MAX;
			best_c[mt][h] = 0;
		}

	if (LAYOUT == LAYOUT_ALL)
	{
		/* every operand copied once; then products and epilogues only */
		int			kpad = (k + TN - 1) / TN * TN;
		Elem	   *centroids = reinterpret_cast<Elem *>(rest);
		float	   *norms = reinterpret_cast<float *>(centroids + kpad * sx);

		copy_rows_async<Elem>(tiles, sx, X, ld, tile_rows, 0, TM, 0, ld / S::CHUNK);
		copy_rows_async<Elem>(centroids, sx, C, ld, NULL, 0, kpad, 0, ld / S::CHUNK);
		for (int q = threadIdx.x; q < kpad / 4; q += TTHREADS)
			cp_async16(norms + 4 * q, args.cnorm + 4 * q);
		cp_async_commit();
		cp_async_wait<0>();
		__syncthreads();
		for (int col0 = 0; col0 < k; col0 += TN)
		{
			int			nvalid = valid_slices(k, col0, warp_n);

			tile_start<MODE>(acc, norms + col0, col0, k, warp_n, t);
			for (int k0 = 0; k0 < ld; k0 += S::KMMA)
				mma_step<MODE, Elem>(acc, tiles + k0, sx, centroids + col0 * sx + k0, sx,
									 warp_m, warp_n, g, t, nvalid);
			fold_tile<MODE>(acc, best, second, best_c, norms + col0, col0, k, warp_n, t, nvalid);
		}
	}
	else
	{
		/* a stage: [streamed points] centroids, then the centroids' norms (TN floats) */
		constexpr int POINT_BYTES = LAYOUT == LAYOUT_STREAM ? TM * S::SC * S::ES : 0;
		constexpr int STAGE_BYTES = POINT_BYTES + TN * S::SC * S::ES + TN * (int) sizeof(float);
		const int	ksteps = ld / S::KS;
		const int	first_tile = group * args.tiles_per_group;
		const int	total = min(args.tiles_per_group, (k + TN - 1) / TN - first_tile) * ksteps;

		static_assert(TSTAGES * STAGE_BYTES >= TM * 4 * 12,
					  "the final reduction reuses the pipeline stages");
		if (LAYOUT == LAYOUT_RESIDENT)
			copy_rows_async<Elem>(tiles, sx, X, ld, tile_rows, 0, TM, 0, ld / S::CHUNK);
		load_stage<Elem, LAYOUT, KSB>(rest, X, C, args.cnorm, ld, tile_rows, first_tile * TN, 0);
		cp_async_commit();

		/*
		 * One barrier per step: wait for this step's copies, then start the
		 * next step's into the other stage, which every thread finished
		 * reading before the barrier
		 */
		for (int it = 0, kstep = 0, col0 = first_tile * TN; it < total; it++)
		{
			unsigned char *stage = rest + (it & 1) * STAGE_BYTES;
			const Elem *xs = LAYOUT == LAYOUT_RESIDENT ? tiles + kstep * S::KS :
				reinterpret_cast<const Elem *>(stage);
			const Elem *cs = reinterpret_cast<const Elem *>(stage + POINT_BYTES);
			const float *norms = reinterpret_cast<const float *>(stage + POINT_BYTES +
																  TN * S::SC * S::ES);
			int			nvalid = valid_slices(k, col0, warp_n);
			bool		last = kstep == ksteps - 1;

			cp_async_wait<0>();
			__syncthreads();
			if (it + 1 < total)
				load_stage<Elem, LAYOUT, KSB>(rest + ((it + 1) & 1) * STAGE_BYTES, X, C,
											  args.cnorm, ld, tile_rows,
											  last ? col0 + TN : col0,
											  last ? 0 : (kstep + 1) * S::KS);
			cp_async_commit();

			if (kstep == 0)
				tile_start<MODE>(acc, norms, col0, k, warp_n, t);
#pragma unroll
			for (int kk = 0; kk < S::KS; kk += S::KMMA)
				mma_step<MODE, Elem>(acc, xs + kk, sx, cs + kk, S::SC, warp_m, warp_n, g, t,
									 nvalid);
			if (last)
			{
				fold_tile<MODE>(acc, best, second, best_c, norms, col0, k, warp_n, t, nvalid);
				kstep = 0;
				col0 += TN;
			}
			else
				kstep++;
		}
	}

	/*
	 * arg-max over the 4 threads of a quad, then over the 4 warps along n,
	 * in the space past the point tile (at least 128 rows of 48 bytes)
	 */
	__syncthreads();			/* every operand read: the space is free */
	{
		float	   *red_best = reinterpret_cast<float *>(rest);
		float	   *red_second = red_best + TM * 4;
		int		   *red_idx = reinterpret_cast<int *>(red_second + TM * 4);

#pragma unroll
		for (int mt = 0; mt < 4; mt++)
#pragma unroll
			for (int h = 0; h < 2; h++)
			{
#pragma unroll
				for (int off = 1; off < 4; off <<= 1)
				{
					float		ob = __shfl_xor_sync(0xffffffffu, best[mt][h], off);
					float		os = __shfl_xor_sync(0xffffffffu, second[mt][h], off);
					int			oc = __shfl_xor_sync(0xffffffffu, best_c[mt][h], off);

					merge_top2(best[mt][h], second[mt][h], best_c[mt][h], ob, os, oc);
				}
				if (t == 0)
				{
					int			r = warp_m * 64 + mt * 16 + h * 8 + g;

					red_best[r * 4 + warp_n] = best[mt][h];
					red_second[r * 4 + warp_n] = second[mt][h];
					red_idx[r * 4 + warp_n] = best_c[mt][h];
				}
			}
		__syncthreads();
		if (threadIdx.x < TM)
		{
			int			r = threadIdx.x;
			float		kept = red_best[r * 4],
						kept2 = red_second[r * 4];
			int			c = red_idx[r * 4];
			int64_t		slot_row = row0 + r;

			for (int w = 1; w < 4; w++)
				merge_top2(kept, kept2, c, red_best[r * 4 + w], red_second[r * 4 + w],
						   red_idx[r * 4 + w]);
			if (slot_row < args.rows && args.groups > 1)
				reinterpret_cast<float4 *>(args.partials)[slot_row * args.groups + group] =
					make_float4(kept, kept2, __int_as_float(c), 0.0f);
			else if (slot_row < args.rows)
				decide_row<MODE>(args, slot_row, kept, kept2, c);
		}
	}
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

#define REFINE_THREADS 128
#define REFINE_BLOCKS 1024

/*
 * The exact nearest centroid of each doubtful point: one block per point,
 * threads over the centroids, distances as the CPU reference computes them
 */
__global__ void
__launch_bounds__(REFINE_THREADS)
refine_labels_kernel(const double *__restrict__ x64, const double *__restrict__ c64,
					 int d, int k, const int32_t *__restrict__ doubtful,
					 const unsigned int *doubtful_count, int32_t *__restrict__ labels,
					 unsigned long long *changed)
{
	__shared__ double best_d2[REFINE_THREADS];
	__shared__ int best_c[REFINE_THREADS];
	unsigned	count = *doubtful_count;

	for (unsigned e = blockIdx.x; e < count; e += gridDim.x)
	{
		int64_t		row = doubtful[2 * e];
		int			previous = doubtful[2 * e + 1];
		double		mine = DBL_MAX;
		int			mine_c = k;

		for (int c = threadIdx.x; c < k; c += blockDim.x)
		{
			double		s = gc_sqdist_exact(x64 + row * d, c64 + (int64_t) c * d, d);

			if (s < mine)
			{
				mine = s;
				mine_c = c;
			}
		}
		best_d2[threadIdx.x] = mine;
		best_c[threadIdx.x] = mine_c;
		__syncthreads();
		for (int half = blockDim.x / 2; half > 0; half >>= 1)
		{
			if (threadIdx.x < half)
			{
				double		o = best_d2[threadIdx.x + half];
				int			oc = best_c[threadIdx.x + half];

				if (o < best_d2[threadIdx.x] || (o == best_d2[threadIdx.x] && oc < best_c[threadIdx.x]))
				{
					best_d2[threadIdx.x] = o;
					best_c[threadIdx.x] = oc;
				}
			}
			__syncthreads();
		}
		if (threadIdx.x == 0)
		{
			labels[row] = best_c[0];
			if (changed != NULL && best_c[0] != previous)
				atomicAdd(changed, 1ULL);
		}
		__syncthreads();
	}
}

/* Norm of every centred row */
__global__ void
row_norms_kernel(const float *__restrict__ x32, int64_t n, int d, float *__restrict__ xnorm)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		float		s = 0.0f;

		for (int j = 0; j < d; j++)
			s = fmaf(x32[i * d + j], x32[i * d + j], s);
		xnorm[i] = sqrtf(s);
	}
}

GcStatus
launch_row_norms(const float *x32, int64_t n, int d, float *xnorm, cudaStream_t stream,
				 GcError *err)
{
	row_norms_kernel<<<1024, 256, 0, stream>>>(x32, n, d, xnorm);
	GC_CUDA_LAUNCHED("row_norms", err);
	return GC_OK;
}

int
gc_tensor_row_width(int d, bool bf16)
{
	/* 32-byte steps up to d = 32, 128-byte steps above */
	int			align = d <= 32 ? (bf16 ? 16 : 8) : (bf16 ? 64 : 32);

	return (d + align - 1) / align * align;
}

/* Shared memory of one block (opt-in limit), and of a multiprocessor */
static int
shared_memory(bool per_block)
{
	static int	block_bytes = 0,
				sm_bytes = 0;

	if (block_bytes == 0)
	{
		int			device = 0;

		cudaGetDevice(&device);
		if (cudaDeviceGetAttribute(&block_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin,
								   device) != cudaSuccess || block_bytes <= 0)
			block_bytes = 48 * 1024;
		if (cudaDeviceGetAttribute(&sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
								   device) != cudaSuccess || sm_bytes <= 0)
			sm_bytes = block_bytes;
	}
	return per_block ? block_bytes : sm_bytes;
}

/* Shared memory of a layout: the row list, the resident tiles, the stages */
static size_t
tile_bytes(int elem_bytes, int layout, int ksb, int ld, int k)
{
	size_t		row = (size_t) ld * elem_bytes + TPAD_BYTES;
	size_t		staged_row = (size_t) ksb + TPAD_BYTES;
	size_t		kpad = (size_t) (k + TN - 1) / TN * TN;

	if (layout == LAYOUT_ALL)
		return TM * sizeof(int32_t) + TM * row + kpad * (row + sizeof(float));
	return TM * sizeof(int32_t) + (layout == LAYOUT_RESIDENT ? TM * row : 0) +
		(size_t) TSTAGES * ((layout == LAYOUT_RESIDENT ? TN : TM + TN) * staged_row +
							TN * sizeof(float));
}

typedef struct TensorLayout
{
	int			layout;
	int			ksb;
	size_t		bytes;
} TensorLayout;

static bool
try_layout(int elem_bytes, int layout, int ksb, int ld, int k, size_t limit, TensorLayout *out)
{
	size_t		bytes = tile_bytes(elem_bytes, layout, ksb, ld, k);

	if ((layout != LAYOUT_ALL && ((size_t) ld * elem_bytes) % ksb != 0) || bytes > limit)
		return false;
	out->layout = layout;
	out->ksb = ksb;
	out->bytes = bytes;
	return true;
}

/*
 * The layout of a pass, by what two blocks per multiprocessor can hold
 * (one block, 8 warps, hides too little latency: at n = 1M, d = 768 a
 * resident bf16 tile ran 12.1 ms per iteration against 8.7 streamed):
 * every operand resident, else the point tile resident with the widest
 * column step that divides the row (when more than one centroid tile
 * streams past it), else both streamed; rows too narrow to stream take
 * the resident layouts at one block per multiprocessor.  The benchmarks
 * can ask for streaming with GPUCLUST_BENCH_KERNEL=tensor-streaming.
 */
static bool
choose_layout(int elem_bytes, int ld, int k, TensorLayout *out)
{
	const char *bench = getenv("GPUCLUST_BENCH_KERNEL");
	size_t		two = (size_t) shared_memory(false) / 2 - 1024;	/* the runtime's share per block */
	size_t		one = (size_t) shared_memory(true);
	bool		can_stream = ((size_t) ld * elem_bytes) % 128 == 0;

	if (bench != NULL && strcmp(bench, "tensor-streaming") == 0 && can_stream)
		return try_layout(elem_bytes, LAYOUT_STREAM, 128, ld, k, one, out);
	if (try_layout(elem_bytes, LAYOUT_ALL, 32, ld, k, two, out))
		return true;
	if (k > TN || !can_stream)
		for (int ksb = 128; ksb >= 32; ksb /= 2)
			if (try_layout(elem_bytes, LAYOUT_RESIDENT, ksb, ld, k, two, out))
				return true;
	if (can_stream)
		return try_layout(elem_bytes, LAYOUT_STREAM, 128, ld, k, one, out);
	for (int ksb = 128; ksb >= 32; ksb /= 2)
		if (try_layout(elem_bytes, LAYOUT_RESIDENT, ksb, ld, k, one, out))
			return true;
	return false;
}

/* Whether a pass over every row in this layout splits its centroid tiles into groups */
static bool
splits_into_groups(const TensorLayout *layout, int k)
{
	return layout->layout == LAYOUT_STREAM && k > TN;
}

template <int MODE, int LAYOUT, int KSB>
static GcStatus
launch_variant(const TensorArgs &args, size_t bytes, cudaStream_t stream, GcError *err)
{
	static bool configured = false;
	int64_t		blocks = (args.rows + TM - 1) / TM * args.groups;

	if (!configured)
	{
		GC_CUDA_TRY(cudaFuncSetAttribute(assign_points_tensor_kernel<MODE, LAYOUT, KSB>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 shared_memory(true)), err);
		configured = true;
	}
	if (blocks > INT32_MAX)
		return gc_fail(err, GC_ERR_RANGE, "too many rows for one labeling grid");
	assign_points_tensor_kernel<MODE, LAYOUT, KSB>
		<<<(unsigned) blocks, TTHREADS, bytes, stream>>>(args);
	GC_CUDA_LAUNCHED("assign_points_tensor", err);
	if (args.groups > 1)
	{
		merge_groups_kernel<MODE><<<1024, 256, 0, stream>>>(args);
		GC_CUDA_LAUNCHED("merge_groups", err);
	}
	return GC_OK;
}

/*
 * One tensor pass in the layout that suits its rows.  A streamed pass over
 * every row, given space for partials, splits each row tile's centroid
 * tiles into up to GC_TENSOR_MAX_GROUPS groups of consecutive blocks:
 * the groups read the same points at about the same time, so the point
 * tile crosses device memory once rather than once per centroid tile
 * (the rest of its reads hit L2), and a merge kernel combines the groups.
 * Measured on an H100 (n = 1M, d = 768, k = 1000): 3 to 5% per iteration
 * (float32 19.5 -> 19.0 ms, tf32 17.4 -> 16.5, bf16 8.1 -> 8.0); the
 * streamed passes are bound by L2 and the tensor pipes, not by HBM.
 */
template <int MODE>
static GcStatus
launch_pass(TensorArgs args, cudaStream_t stream, GcError *err)
{
	TensorLayout layout;
	int			ctiles = (args.k + TN - 1) / TN;

	if (args.rows == 0)
		return GC_OK;
	if (!choose_layout(sizeof(typename ModeElem<MODE>::T), args.ld, args.k, &layout))
		return gc_fail(err, GC_ERR_DEVICE,
					   "no tensor-core tile layout for rows of %d values and k = %d",
					   args.ld, args.k);
	args.groups = 1;
	args.tiles_per_group = ctiles;
	if (splits_into_groups(&layout, args.k) && args.row_map == NULL && args.partials != NULL)
	{
		args.tiles_per_group = (ctiles + GC_TENSOR_MAX_GROUPS - 1) / GC_TENSOR_MAX_GROUPS;
		args.groups = (ctiles + args.tiles_per_group - 1) / args.tiles_per_group;
	}
	switch (layout.layout * 1000 + layout.ksb)
	{
		case LAYOUT_ALL * 1000 + 32:
			return launch_variant<MODE, LAYOUT_ALL, 32>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 128:
			return launch_variant<MODE, LAYOUT_RESIDENT, 128>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 64:
			return launch_variant<MODE, LAYOUT_RESIDENT, 64>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 32:
			return launch_variant<MODE, LAYOUT_RESIDENT, 32>(args, layout.bytes, stream, err);
		default:
			return launch_variant<MODE, LAYOUT_STREAM, 128>(args, layout.bytes, stream, err);
	}
}

/*
 * A pass over n rows (row_map NULL) or the n entries of a list, trusting
 * every label; partials, when not NULL, hold n x GC_TENSOR_MAX_GROUPS
 */
static TensorArgs
plain_pass(const void *x, const void *c, const float *cnorm, int64_t n,
		   const int32_t *row_map, int ld, int k, int32_t *labels,
		   unsigned long long *changed, TensorPartial *partials)
{
	TensorArgs	args;

	memset(&args, 0, sizeof(args));
	args.partials = partials;
	args.x = x;
	args.c = c;
	args.cnorm = cnorm;
	args.rows = n;
	args.row_map = row_map;
	args.ld = ld;
	args.k = k;
	args.labels = labels;
	args.changed = changed;
	return args;
}

/* The same, listing into list the points within (eps_sq, eps_lin) of a tie */
static TensorArgs
exact_pass(const void *x, const void *c, const float *cnorm, const TensorRefinement *refine,
		   float eps_sq, float eps_lin, int64_t n, const int32_t *row_map, int ld, int k,
		   int32_t *labels, unsigned long long *changed, int32_t *list,
		   unsigned int *list_count, TensorPartial *partials)
{
	TensorArgs	args = plain_pass(x, c, cnorm, n, row_map, ld, k, labels, changed, partials);

	args.xnorm = refine->xnorm;
	args.radius_bits = refine->cradius_bits;
	args.eps_sq = eps_sq;
	args.eps_lin = eps_lin;
	args.doubtful = list;
	args.doubtful_count = list_count;
	return args;
}

/* The exact nearest centroid of every point listed */
static GcStatus
launch_refine(const TensorRefinement *refine, int k, const int32_t *list,
			  const unsigned int *list_count, int32_t *labels,
			  unsigned long long *changed, cudaStream_t stream, GcError *err)
{
	refine_labels_kernel<<<REFINE_BLOCKS, REFINE_THREADS, 0, stream>>>(
		refine->x64, refine->c64, refine->d, k, list, list_count, labels, changed);
	GC_CUDA_LAUNCHED("refine_labels", err);
	return GC_OK;
}

GcStatus
launch_assign_points_tensor(const float *xp, const float *cp, const float *cnorm,
							const TensorRefinement *refine, int64_t n, int ld,
							int k, GcTensorMode mode, int32_t *labels,
							unsigned long long *changed, TensorPartial *partials,
							cudaStream_t stream, GcError *err)
{
	if (refine == NULL)
		return mode == GC_TENSOR_TF32X3 ?
			launch_pass<MODE_TF32X3>(plain_pass(xp, cp, cnorm, n, NULL, ld, k, labels, changed,
												partials), stream, err) :
			launch_pass<MODE_TF32>(plain_pass(xp, cp, cnorm, n, NULL, ld, k, labels, changed,
											  partials), stream, err);

	GC_CUDA_TRY(cudaMemsetAsync(refine->doubtful_count, 0, sizeof(unsigned int), stream), err);
	if (mode == GC_TENSOR_TF32X3)
	{
		/* 3xTF32 over every point, the doubtful ones checked exactly */
		if (launch_pass<MODE_TF32X3>(exact_pass(xp, cp, cnorm, refine, refine->eps_3xtf32, 0.0f,
												n, NULL, ld, k, labels, changed,
												refine->doubtful, refine->doubtful_count,
												partials),
									 stream, err) != GC_OK)
			return err->status;
		return launch_refine(refine, k, refine->doubtful, refine->doubtful_count, labels,
							 changed, stream, err);
	}

	/*
	 * The TF32 screen (with the norms of the TF32 centroids), then 3xTF32
	 * over the points it doubts, then the exact check
	 */
	GC_CUDA_TRY(cudaMemsetAsync(refine->exact_count, 0, sizeof(unsigned int), stream), err);
	if (launch_pass<MODE_TF32>(exact_pass(xp, cp, refine->cnorm_tf32, refine, refine->eps_tf32_sq,
										  refine->eps_tf32_lin, n, NULL, ld, k, labels, changed,
										  refine->doubtful, refine->doubtful_count, partials),
							   stream, err) != GC_OK)
		return err->status;
	/* the list's length sizes the second pass's grid */
	GC_CUDA_TRY(cudaMemcpyAsync(refine->count_host, refine->doubtful_count, sizeof(unsigned int),
								cudaMemcpyDeviceToHost, stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(stream), err);
	if (launch_pass<MODE_TF32X3>(exact_pass(xp, cp, cnorm, refine, refine->eps_3xtf32, 0.0f,
											(int64_t) *refine->count_host, refine->doubtful, ld,
											k, labels, changed, refine->exact,
											refine->exact_count, NULL),
								 stream, err) != GC_OK)
		return err->status;
	return launch_refine(refine, k, refine->exact, refine->exact_count, labels, changed,
						 stream, err);
}

GcStatus
launch_assign_points_bf16(const __nv_bfloat16 *xb, const __nv_bfloat16 *cb, const float *cnorm,
						  int64_t n, int ld, int k, int32_t *labels,
						  unsigned long long *changed, TensorPartial *partials,
						  cudaStream_t stream, GcError *err)
{
	return launch_pass<MODE_BF16>(plain_pass(xb, cb, cnorm, n, NULL, ld, k, labels, changed,
											 partials), stream, err);
}

bool
gc_tensor_splits(int d, int k, bool bf16)
{
	TensorLayout layout;

	return choose_layout(bf16 ? 2 : 4, gc_tensor_row_width(d, bf16), k, &layout) &&
		splits_into_groups(&layout, k);
}

/* A float as the tensor cores read it: rounded to TF32, or a bf16 value */
__device__ __forceinline__ double
operand_value(float v)
{
	return __uint_as_float(to_tf32(v));
}

__device__ __forceinline__ double
operand_value(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}

/*
 * ||c||^2 of every centroid as the products see it (TF32-rounded floats,
 * or bf16 values), one warp per centroid, and the largest |c| into
 * *largest_bits (zeroed first) when it is not NULL
 */
template <typename T>
__global__ void
operand_norms_kernel(const T *__restrict__ cp, int k, int ld, float *__restrict__ norms,
					 unsigned int *largest_bits)
{
	int			lane = threadIdx.x & 31;

	for (int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); c < k;
		 c += gridDim.x * (blockDim.x >> 5))
	{
		double		s = 0.0;

		for (int j = lane; j < ld; j += 32)
		{
			double		v = operand_value(cp[(int64_t) c * ld + j]);

			s += v * v;
		}
		for (int off = 16; off > 0; off >>= 1)
			s += __shfl_down_sync(0xffffffffu, s, off);
		if (lane == 0)
		{
			norms[c] = (float) s;
			/* the largest |c|, rounded up; float bits of values >= 0 order as integers */
			if (largest_bits != NULL)
				atomicMax(largest_bits, __float_as_uint((float) (sqrt(s) * (1.0 + 0x1p-10))));
		}
	}
}

GcStatus
launch_tf32_norms(const float *cp, int k, int ld, float *norms, unsigned int *largest_bits,
				  cudaStream_t stream, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(largest_bits, 0, sizeof(unsigned int), stream), err);
	operand_norms_kernel<float><<<(k + 7) / 8, 256, 0, stream>>>(cp, k, ld, norms, largest_bits);
	GC_CUDA_LAUNCHED("tf32_norms", err);
	return GC_OK;
}

GcStatus
launch_bf16_norms(const __nv_bfloat16 *cb, int k, int ld, float *norms, cudaStream_t stream,
				  GcError *err)
{
	operand_norms_kernel<__nv_bfloat16><<<(k + 7) / 8, 256, 0, stream>>>(cb, k, ld, norms, NULL);
	GC_CUDA_LAUNCHED("bf16_norms", err);
	return GC_OK;
}

__device__ __forceinline__ void
store_operand(float *dst, float v)
{
	*dst = v;
}

__device__ __forceinline__ void
store_operand(__nv_bfloat16 *dst, float v)
{
	*dst = __float2bfloat16_rn(v);
}

/* Copy rows of width d into a zeroed buffer of rows of width ld, as floats or bf16 */
template <typename T>
__global__ void
pad_rows_kernel(const float *__restrict__ src, int64_t rows, int d, int ld,
				T *__restrict__ dst)
{
	int64_t		total = rows * d;

	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		r = e / d;

		store_operand(dst + r * ld + (e - r * d), src[e]);
	}
}

template <typename T>
static GcStatus
launch_pad(const float *src, int64_t rows, int d, int ld, T *dst, cudaStream_t stream,
		   GcError *err)
{
	int64_t		blocks = (rows * d + 255) / 256;

	pad_rows_kernel<T><<<(unsigned) (blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), 256, 0, stream>>>(
		src, rows, d, ld, dst);
	GC_CUDA_LAUNCHED("pad_rows", err);
	return GC_OK;
}

GcStatus
launch_pad_rows(const float *src, int64_t rows, int d, int ld, float *dst,
				cudaStream_t stream, GcError *err)
{
	return launch_pad<float>(src, rows, d, ld, dst, stream, err);
}

GcStatus
launch_pad_rows(const float *src, int64_t rows, int d, int ld, __nv_bfloat16 *dst,
				cudaStream_t stream, GcError *err)
{
	return launch_pad<__nv_bfloat16>(src, rows, d, ld, dst, stream, err);
}
