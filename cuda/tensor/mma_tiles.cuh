/*-------------------------------------------------------------------------
 *
 * tensor/mma_tiles.cuh
 *	  The tensor-core labeling kernel templates (tensor/mma_kernels.cu says
 *	  what they compute): the tile shapes, the operands' staging through
 *	  shared memory with cp.async, the mma.sync steps (TF32, 3xTF32, bf16
 *	  and fp16, named by their GcKernel) and the fused top-two epilogue (the
 *	  decision and a split pass's merge are tensor/decision.cuh's).
 *	  Included by the tensor launchers only.
 *
 * IDENTIFICATION
 *	  cuda/tensor/mma_tiles.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_TENSOR_TILES_CUH
#define GC_TENSOR_TILES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>

#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "tensor/decision.cuh"
#include "cuda_check.cuh"

#define TM 128					/* points per block tile */
#define TN 128					/* centroids per block tile */
#define TTHREADS 256			/* 8 warps: 2 along points, 4 along centroids */
#define TSTAGES 2
#define TPAD_BYTES 16			/* row padding against bank conflicts */

/* MODE: GC_KERNEL_TENSOR_TF32, _3XTF32, _BF16 or _FP16 */
template <int MODE>
struct ModeElem
{
	typedef float T;
};
template <>
struct ModeElem<GC_KERNEL_TENSOR_BF16>
{
	typedef __nv_bfloat16 T;
};
template <>
struct ModeElem<GC_KERNEL_TENSOR_FP16>
{
	typedef __half T;
};

/* Whether a mode's operands are 16-bit (m16n8k16 products) */
__host__ __device__ constexpr bool
mode_is_16bit(int mode)
{
	return mode == GC_KERNEL_TENSOR_BF16 || mode == GC_KERNEL_TENSOR_FP16;
}

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
	static constexpr int KMMA = mode_is_16bit(MODE) ? 16 : 8;
	static constexpr bool NORM_IN_ACC = MODE != GC_KERNEL_TENSOR_3XTF32;
};

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

/* d += a b (m16n8k16, fp16; the fragments are laid out as bf16's) */
__device__ __forceinline__ void
mma_fp16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
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
			float		v = MODE == GC_KERNEL_TENSOR_3XTF32 ? 0.0f :
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
	if (mode_is_16bit(MODE))
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
				{
					if (MODE == GC_KERNEL_TENSOR_FP16)
						mma_fp16(acc[mt][nt], a[mt], b[nt]);
					else
						mma_bf16(acc[mt][nt], a[mt], b[nt]);
				}
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
				if (MODE == GC_KERNEL_TENSOR_3XTF32)
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
				if (MODE == GC_KERNEL_TENSOR_3XTF32)
					b_lo[nt][e] = to_tf32(v[e] - __uint_as_float(b[nt][e]));
			}
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
			if (nt < nvalid)
#pragma unroll
				for (int mt = 0; mt < 4; mt++)
				{
					if (MODE == GC_KERNEL_TENSOR_3XTF32)
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
				float		norm = MODE != GC_KERNEL_TENSOR_3XTF32 ? 0.0f :
					c < k ? norms[c - col0] : FLT_MAX;

#pragma unroll
				for (int mt = 0; mt < 4; mt++)
#pragma unroll
					for (int h = 0; h < 2; h++)
					{
						float		s = acc[mt][nt][h * 2 + e];

						/* 3xTF32: 2 x.c - ||c||^2, rounded once, as ||c||^2 - 2 x.c was */
						if (MODE == GC_KERNEL_TENSOR_3XTF32)
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
 * One pass of nearest-centroid labeling over TM points per block, the
 * operands kept as LAYOUT says, KSB bytes of each row per pipeline step
 * (staged layouts).  Exact passes (xnorm not NULL) list the points whose
 * two best distances are within the error bound instead of trusting them.
 */
template <int MODE, int LAYOUT, int KSB>
__global__ void
__launch_bounds__(TTHREADS, MODE == GC_KERNEL_TENSOR_3XTF32 ? 1 : 2)
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

#endif							/* GC_TENSOR_TILES_CUH */
