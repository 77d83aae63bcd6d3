/*-------------------------------------------------------------------------
 *
 * tensor/wgmma_tiles.cuh
 *	  The Hopper (sm_90a) labeling kernel template: nearest centroid by
 *	  the largest x.c - ||c||^2 / 2, computed as a matrix product on the
 *	  warpgroup tensor-core instructions (wgmma.mma_async), with the
 *	  arg-max fused into the epilogue of every centroid tile.
 *
 *	  A block of three warpgroups labels 128 points at a time (persistent:
 *	  one block per multiprocessor walks the row tiles).  Warpgroup 0 is
 *	  the producer: one thread issues bulk tensor copies (TMA,
 *	  cp.async.bulk.tensor) of 128-byte column slices of the 128 points
 *	  and of 256 centroids into a ring of WG_STAGES shared-memory stages,
 *	  128-byte swizzled, each completing on its "full" mbarrier.
 *	  Warpgroups 1 and 2 are the consumers: each multiplies its 64 points
 *	  by the stage's 256 centroids (four products of 32 bytes of K, both
 *	  operands K-major from shared memory, FP32 accumulators in 128
 *	  registers a thread), releases the stage on
 *	  its "empty" mbarrier once the products that read it are done, and
 *	  after the last column slice folds the tile into its rows' running
 *	  best.  The accumulators start at -||c||^2 / 2 (-FLT_MAX past k), as
 *	  in the mma.sync kernel (tensor/mma_tiles.cuh), so the epilogue only
 *	  compares; those values come with a tile's first stage (a bulk copy
 *	  of a padded array, so that no thread waits on global loads).  Rows
 *	  past n and centroids past k read zeros (the copy engine fills what
 *	  lies outside the tensor map).
 *
 *	  The element type is the template parameter (WgmmaElem names its PTX
 *	  type): bf16 and fp16 (m64n256k16) or float read as TF32 (m64n256k8,
 *	  only K-major operands, as here); every stage holds 128 bytes of each
 *	  row, 64 16-bit values or 32 floats, so the ring and the descriptors
 *	  are the same for all three.  The 16-bit passes trust every label.
 *	  The screen (SCREEN) keeps each row's two largest values and decides
 *	  the row by the mma.sync screen's rule and bound (tensor/decision.cuh):
 *	  labelled, or listed for 3xTF32 when the gap is within the bound.  On
 *	  floats it rounds its staged rows to TF32 as the mma.sync screen does
 *	  (the centroids come rounded); on fp16 its operands come converted
 *	  and scaled (tensor/labeler_fp32.cu).
 *
 *	  Written in PTX (inline asm) rather than on CUTLASS/CuTe: one kernel
 *	  of a fixed shape needs a dozen instructions, and the build keeps no
 *	  dependency beyond nvcc.
 *
 * IDENTIFICATION
 *	  cuda/tensor/wgmma_tiles.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_WGMMA_TILES_CUH
#define GC_WGMMA_TILES_CUH

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>

#include "tensor/wgmma_kernels.cuh"

#define WG_BM 128				/* points per row tile: two consumers of 64 */
#define WG_BN 256				/* centroids per centroid tile */
#define WG_STAGES 4
#define WG_THREADS 384			/* the producer and two consumer warpgroups */
#define WG_A_BYTES (WG_BM * WG_ROW_BYTES)
#define WG_B_BYTES (WG_BN * WG_ROW_BYTES)
#define WG_NORM_BYTES (WG_BN * 4)	/* a centroid tile's -||c||^2 / 2 */
#define WG_STAGE_BYTES (WG_A_BYTES + WG_B_BYTES + WG_NORM_BYTES)
#define WG_SMEM_BYTES (WG_STAGES * WG_STAGE_BYTES + 1024 + 2 * WG_STAGES * 8)

/* An element's PTX type, and its columns in a stage's 128 bytes of a row */
template <typename Elem>
struct WgmmaElem;
template <>
struct WgmmaElem<__nv_bfloat16>
{
	static constexpr WgmmaType TYPE = WGMMA_BF16;
	static constexpr int COLUMNS = WG_ROW_BYTES / 2;
};
template <>
struct WgmmaElem<__half>
{
	static constexpr WgmmaType TYPE = WGMMA_FP16;
	static constexpr int COLUMNS = WG_ROW_BYTES / 2;
};
template <>
struct WgmmaElem<float>
{
	static constexpr WgmmaType TYPE = WGMMA_TF32;
	static constexpr int COLUMNS = WG_ROW_BYTES / 4;
};

__device__ __forceinline__ uint32_t
smem_addr(const void *p)
{
	return (uint32_t) __cvta_generic_to_shared(p);
}

__device__ __forceinline__ void
mbar_init(uint64_t *bar, uint32_t count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void
mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
				 :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void
mbar_arrive(uint64_t *bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

/* Wait until the phase of this parity completed */
__device__ __forceinline__ void
mbar_wait(uint64_t *bar, uint32_t parity)
{
	uint32_t	done;

	do
	{
		asm volatile("{\n\t.reg .pred p;\n\t"
					 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
					 "selp.u32 %0, 1, 0, p;\n\t}"
					 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
	} while (!done);
}

/* Copy the box at (col, row) of a 2-d tensor map into shared memory */
__device__ __forceinline__ void
tma_load_2d(void *dst, const CUtensorMap *map, int col, int row, uint64_t *bar)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
				 " [%0], [%1, {%2, %3}], [%4];"
				 :: "r"(smem_addr(dst)), "l"((uint64_t) map), "r"(col), "r"(row),
				 "r"(smem_addr(bar)) : "memory");
}

/* Copy bytes (a multiple of 16) of contiguous memory into shared memory */
__device__ __forceinline__ void
bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
				 " [%0], [%1], %2, [%3];"
				 :: "r"(smem_addr(dst)), "l"((uint64_t) src), "r"(bytes), "r"(smem_addr(bar))
				 : "memory");
}

/*
 * The descriptor of a K-major operand in shared memory, 128-byte swizzle:
 * rows of 128 bytes, 8-row groups 1024 bytes apart (the layout TMA writes
 * with CU_TENSOR_MAP_SWIZZLE_128B and a 64-element box width)
 */
__device__ __forceinline__ uint64_t
sw128_desc(const void *p)
{
	uint64_t	desc = (uint64_t) ((smem_addr(p) & 0x3FFFF) >> 4);

	desc |= (uint64_t) 1 << 16;			/* leading offset: unused when swizzled */
	desc |= (uint64_t) (1024 >> 4) << 32;	/* stride between 8-row groups */
	desc |= (uint64_t) 1 << 62;			/* 128-byte swizzle */
	return desc;
}

/* Keep the compiler from moving accesses to the accumulators across async products */
template <int N>
__device__ __forceinline__ void
fence_acc(float (&d)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(d[i]) :: "memory");
}

__device__ __forceinline__ void
wgmma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void
wgmma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void
wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

/*
 * d += a b^T over 32 bytes of K, both operands from shared memory, FP32
 * accumulation: SHAPE is the instruction's shape and types, TAIL its
 * immediates after scale-d (the operand scales, and the transposes the
 * 16-bit types take; TF32 takes none)
 */
#define WGMMA_M64N256(SHAPE, TAIL, d, a, b) \
		asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t" \
					 "wgmma.mma_async.sync.aligned." SHAPE " {" \
				 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
				 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
				 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
				 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
				 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
				 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
				 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
				 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}," \
					 " %128, %129, p" TAIL ";\n\t}" \
					 : \
				   "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
				   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
				   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
				   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
				   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
				   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
				   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
				   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
				   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
				   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
				   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
				   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
				   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
				   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
				   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
				   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
					 : "l"(a), "l"(b))

/* d += a b^T over 32 bytes of K (16 16-bit values or 8 TF32), in the operands' type */
template <typename Elem>
__device__ __forceinline__ void
wgmma_32_bytes(float (&d)[128], uint64_t a, uint64_t b)
{
	if (WgmmaElem<Elem>::TYPE == WGMMA_BF16)
		WGMMA_M64N256("m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0", d, a, b);
	else if (WgmmaElem<Elem>::TYPE == WGMMA_FP16)
		WGMMA_M64N256("m64n256k16.f32.f16.f16", ", 1, 1, 0, 0", d, a, b);
	else
		WGMMA_M64N256("m64n256k8.f32.tf32.tf32", ", 1, 1", d, a, b);
}

/*
 * A block's walk over the pass: items of one row tile and one group of
 * consecutive centroid tiles, every gridDim.x-th item.  A pass in groups
 * (the screen's, args.screen.groups > 1) has neighbouring blocks take the same
 * row tile for different groups at about the same time, so that the rows
 * cross device memory about once rather than once per centroid tile; its
 * items end in partial top twos, which a merge kernel decides.
 */
struct WgmmaWalk
{
	int64_t		items;
	int			groups;
	int			per_group;		/* centroid tiles of a group */
	int			ctiles;

	__device__ __forceinline__ WgmmaWalk(const WgmmaArgs &args)
	{
		ctiles = (args.k + WG_BN - 1) / WG_BN;
		groups = args.screen.groups > 1 ? args.screen.groups : 1;
		per_group = groups > 1 ? args.screen.tiles_per_group : ctiles;
		items = (args.n + WG_BM - 1) / WG_BM * groups;
	}
	__device__ __forceinline__ int64_t tile(int64_t item) const
	{
		return item / groups;
	}
	__device__ __forceinline__ int group(int64_t item) const
	{
		return (int) (item % groups);
	}
	__device__ __forceinline__ int first_ct(int64_t item) const
	{
		return group(item) * per_group;
	}
	__device__ __forceinline__ int end_ct(int64_t item) const
	{
		return min(ctiles, first_ct(item) + per_group);
	}
};

/*
 * The producer: one thread fills the ring, stage after stage, in the
 * order the consumers read it (items, then centroid tiles, then column
 * slices of columns values); a centroid tile's first stage also brings
 * its accumulators' starting values
 */
__device__ __forceinline__ void
produce(const CUtensorMap *xmap, const CUtensorMap *cmap, const float *half_norms,
		uint8_t *stages, uint64_t *full, uint64_t *empty, int64_t first, const WgmmaWalk &walk,
		int kblocks, int columns)
{
	uint32_t	it = 0;

	for (int64_t item = blockIdx.x; item < walk.items; item += gridDim.x)
		for (int ct = walk.first_ct(item); ct < walk.end_ct(item); ct++)
			for (int kb = 0; kb < kblocks; kb++, it++)
			{
				int			s = it % WG_STAGES;
				uint8_t    *stage = stages + s * WG_STAGE_BYTES;

				mbar_wait(&empty[s], ((it / WG_STAGES) & 1) ^ 1);
				mbar_expect_tx(&full[s], WG_A_BYTES + WG_B_BYTES + (kb == 0 ? WG_NORM_BYTES : 0));
				tma_load_2d(stage, xmap, kb * columns, (int) (first + walk.tile(item) * WG_BM),
							&full[s]);
				tma_load_2d(stage + WG_A_BYTES, cmap, kb * columns, ct * WG_BN, &full[s]);
				if (kb == 0)
					bulk_load(stage + WG_A_BYTES + WG_B_BYTES, half_norms + ct * WG_BN,
							  WG_NORM_BYTES, &full[s]);
			}
}

/*
 * Start a centroid tile's accumulators at -||c||^2 / 2 (-FLT_MAX past k),
 * from the tile's first stage
 */
__device__ __forceinline__ void
start_tile(float (&acc)[128], const float *half_norms, int t)
{
#pragma unroll
	for (int j = 0; j < WG_BN / 8; j++)
	{
		float2		v = *reinterpret_cast<const float2 *>(half_norms + 8 * j + 2 * t);

		acc[j * 4] = acc[j * 4 + 2] = v.x;
		acc[j * 4 + 1] = acc[j * 4 + 3] = v.y;
	}
}

/*
 * Fold a finished tile into the running best of the thread's two rows
 * (g and g + 8 of its warp's 16): its columns come in increasing order,
 * so the first of equal values, the lowest index, stays.  The tile's
 * winner is kept as its offset in the tile (a constant per value), the
 * index made once at the end.  TOP_TWO (the screen) also keeps the
 * second largest value, an equal one included.
 */
template <bool TOP_TWO>
__device__ __forceinline__ void
fold_tile(const float (&acc)[128], float (&best)[2], float (&second)[2], int (&best_c)[2],
		  int col0, int t)
{
#pragma unroll
	for (int h = 0; h < 2; h++)
	{
		float		tile_best = best[h];
		int			offset = -1;

#pragma unroll
		for (int j = 0; j < WG_BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 2; e++)
			{
				float		s = acc[j * 4 + h * 2 + e];

				if (TOP_TWO)
					second[h] = fmaxf(second[h], fminf(tile_best, s));
				if (s > tile_best)
				{
					tile_best = s;
					offset = 8 * j + e;
				}
			}
		if (offset >= 0)
		{
			best[h] = tile_best;
			best_c[h] = col0 + 2 * t + offset;
		}
	}
}

/* -||c||^2 / 2 for c < k, -FLT_MAX up to the end of the last centroid tile */
__global__ void
half_norms_kernel(const float *cnorm, int k, int padded, float *half_norms)
{
	for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < padded; c += gridDim.x * blockDim.x)
		half_norms[c] = c < k ? -0.5f * cnorm[c] : -FLT_MAX;
}

/*
 * A row's best over the four threads of its quad (the lower index wins
 * ties); the first thread labels it and counts a change, or, in the
 * screen, decides it from its top two (tensor/decision.cuh), which counts
 * its own changes, or leaves its group's top two for the merge
 */
template <bool SCREEN>
__device__ __forceinline__ int
finish_rows(const WgmmaArgs &args, float (&best)[2], float (&second)[2], int (&best_c)[2],
			int64_t row_base, int group, int g, int t)
{
	int			changed = 0;

#pragma unroll
	for (int h = 0; h < 2; h++)
	{
		int64_t		row = row_base + g + 8 * h;

#pragma unroll
		for (int off = 1; off < 4; off <<= 1)
		{
			float		ob = __shfl_xor_sync(0xffffffffu, best[h], off);
			float		os = __shfl_xor_sync(0xffffffffu, second[h], off);
			int			oc = __shfl_xor_sync(0xffffffffu, best_c[h], off);

			if (SCREEN)
				merge_top2(best[h], second[h], best_c[h], ob, os, oc);
			else if (ob > best[h] || (ob == best[h] && oc < best_c[h]))
			{
				best[h] = ob;
				best_c[h] = oc;
			}
		}
		if (t == 0 && row < args.n)
		{
			if (SCREEN && args.screen.groups > 1)
				reinterpret_cast<float4 *>(args.screen.partials)[row * args.screen.groups + group] =
					make_float4(best[h], second[h], __int_as_float(best_c[h]), 0.0f);
			else if (SCREEN)
				decide_row<GC_KERNEL_TENSOR_TF32>(args.screen, row, best[h], second[h],
												  best_c[h]);
			else
			{
				changed += args.labels[row] != best_c[h];
				args.labels[row] = best_c[h];
			}
		}
	}
	return changed;
}

/*
 * The screen's rows as the mma.sync screen reads them: the warpgroup's 64
 * staged rows (8 KB of floats; the swizzle moves whole 16-byte chunks, and
 * the rounding is elementwise) rounded to TF32 in place (cvt.rna: the
 * tensor cores would only cut the low 13 bits, twice the error), then the
 * stores made visible to the tensor cores' reads (the async proxy) before
 * any warp of the warpgroup issues its products
 */
__device__ __forceinline__ void
round_rows_tf32(uint8_t *rows, int cw)
{
	float4	   *p = reinterpret_cast<float4 *>(rows) + (threadIdx.x & 127);

#pragma unroll
	for (int j = 0; j < 4; j++)
	{
		float4		v = p[128 * j];

		p[128 * j] = make_float4(__uint_as_float(to_tf32(v.x)), __uint_as_float(to_tf32(v.y)),
								 __uint_as_float(to_tf32(v.z)), __uint_as_float(to_tf32(v.w)));
	}
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	asm volatile("bar.sync %0, 128;" :: "r"(1 + cw) : "memory");
}

/*
 * The consumers: warpgroup cw (0 or 1) takes rows 64 cw to 64 cw + 63 of
 * every row tile.  Each stage's four products are committed as a group;
 * the stage before is released once its group is done (at most one group
 * in flight besides the newest), the last of a tile before the epilogue.
 * The screen rounds a stage's rows just before its products (rounding
 * the next stage while they run measured slower on the H100: 2.10 against
 * 2.00 ms an iteration at n = 1M, d = 128, k = 1,024).
 */
template <typename Elem, bool SCREEN>
__device__ __forceinline__ int
consume(const WgmmaArgs &args, uint8_t *stages, uint64_t *full, uint64_t *empty,
		const WgmmaWalk &walk, int kblocks, int cw)
{
	int			warp = (threadIdx.x >> 5) & 3,
				lane = threadIdx.x & 31;
	int			g = lane >> 2,
				t = lane & 3;
	uint32_t	it = 0;
	int			changed = 0;
	float		acc[128];

	for (int64_t item = blockIdx.x; item < walk.items; item += gridDim.x)
	{
		float		best[2] = {-FLT_MAX, -FLT_MAX};
		float		second[2] = {-FLT_MAX, -FLT_MAX};
		int			best_c[2] = {0, 0};

		for (int ct = walk.first_ct(item); ct < walk.end_ct(item); ct++)
		{
			/* the tile's first stage brings its starting values */
			mbar_wait(&full[it % WG_STAGES], (it / WG_STAGES) & 1);
			start_tile(acc, reinterpret_cast<const float *>(stages + (it % WG_STAGES) *
															 WG_STAGE_BYTES + WG_A_BYTES +
															 WG_B_BYTES), t);
			for (int kb = 0; kb < kblocks; kb++, it++)
			{
				int			s = it % WG_STAGES;
				uint8_t    *stage = stages + s * WG_STAGE_BYTES;
				uint64_t	a = sw128_desc(stage + cw * (WG_A_BYTES / 2)),
							b = sw128_desc(stage + WG_A_BYTES);

				if (kb > 0)
					mbar_wait(&full[s], (it / WG_STAGES) & 1);
				if (SCREEN && WgmmaElem<Elem>::TYPE == WGMMA_TF32)
					round_rows_tf32(stage + cw * (WG_A_BYTES / 2), cw);
				fence_acc(acc);
				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < WG_ROW_BYTES / 32; kk++)
					wgmma_32_bytes<Elem>(acc, a + 2 * kk, b + 2 * kk);	/* 32 bytes on */
				wgmma_commit();
				fence_acc(acc);
				if (kb > 0)
				{
					wgmma_wait<1>();
					mbar_arrive(&empty[(it - 1) % WG_STAGES]);
				}
			}
			wgmma_wait<0>();
			fence_acc(acc);
			mbar_arrive(&empty[(it - 1) % WG_STAGES]);
			fold_tile<SCREEN>(acc, best, second, best_c, ct * WG_BN, t);
		}
		changed += finish_rows<SCREEN>(args, best, second, best_c,
									   walk.tile(item) * WG_BM + cw * 64 + warp * 16,
									   walk.group(item), g, t);
	}
	return changed;
}

/*
 * Label every row: its nearest centroid into labels, the number of
 * changed labels added to changed (when not NULL); the screen decides
 * each row as args.screen says
 */
template <typename Elem, bool SCREEN>
__global__ void
__launch_bounds__(WG_THREADS, 1)
assign_points_wgmma_kernel(const __grid_constant__ CUtensorMap xmap,
						   const __grid_constant__ CUtensorMap cmap, const WgmmaArgs args)
{
	extern __shared__ uint8_t smem_raw[];
	uint8_t    *stages = reinterpret_cast<uint8_t *>(
		((uintptr_t) smem_raw + 1023) & ~(uintptr_t) 1023);
	uint64_t   *full = reinterpret_cast<uint64_t *>(stages + WG_STAGES * WG_STAGE_BYTES);
	uint64_t   *empty = full + WG_STAGES;
	WgmmaWalk	walk(args);
	int			kblocks = (args.ld + WgmmaElem<Elem>::COLUMNS - 1) / WgmmaElem<Elem>::COLUMNS;
	int			wg = threadIdx.x / 128;

	if (threadIdx.x == 0)
	{
		for (int s = 0; s < WG_STAGES; s++)
		{
			mbar_init(&full[s], 1);
			mbar_init(&empty[s], 256);	/* every consumer thread */
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (wg == 0)
	{
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0)
			produce(&xmap, &cmap, args.half_norms, stages, full, empty, args.first, walk,
					kblocks, WgmmaElem<Elem>::COLUMNS);
	}
	else
	{
		int			changed;

		asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
		changed = consume<Elem, SCREEN>(args, stages, full, empty, walk, kblocks, wg - 1);
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			changed += __shfl_xor_sync(0xffffffffu, changed, off);
		if ((threadIdx.x & 31) == 0 && changed > 0 && args.changed != NULL)
			atomicAdd(args.changed, (unsigned long long) changed);
	}
}

#endif							/* GC_WGMMA_TILES_CUH */
