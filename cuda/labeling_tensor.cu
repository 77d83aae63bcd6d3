/*-------------------------------------------------------------------------
 *
 * labeling_tensor.cu
 *	  Nearest-centroid labeling on tensor cores, for large k * d: the
 *	  distance ||c||^2 - 2 x.c as a matrix product X C^T computed in
 *	  128 x 128 tiles with mma.sync (m16n8k8, TF32 inputs, FP32
 *	  accumulation), operands streamed into shared memory with cp.async,
 *	  two stages deep, and the arg-min fused into the epilogue of every
 *	  centroid tile, so the n x k distance matrix is never written
 *	  (the scheme of FAISS, cuVS's fused L2 nearest neighbour and
 *	  Flash-KMeans).
 *
 *	  Three modes:
 *	  - TF32: one product per step; about 1e-3 relative error in x.c.
 *	  - 3xTF32: each operand split into a TF32 "big" part and a TF32
 *		remainder, and big*big + big*small + small*big accumulated, which
 *		recovers float32 accuracy on the tensor cores (as CUTLASS does).
 *	  - BF16: operands rounded to bfloat16 (m16n8k16 bf16 products, float32
 *		accumulation): twice TF32's rate, about 4e-3 relative error.
 *
 *	  ||c||^2 - 2 x.c cancels badly when clusters are small against their
 *	  distance from the centre of the data, so the kernel keeps the two
 *	  smallest values per point; where their gap is within the error bound
 *	  of the product, eps (||x|| + C)^2 with C the largest ||c||, the point
 *	  is listed, and refine_labels recomputes its nearest centroid exactly
 *	  (double, no FMA, as the CPU reference does).
 *
 *	  Exact labels at TF32 speed (the float32 default for large k * d): a
 *	  TF32 pass screens every point; the doubtful ones, a few percent on
 *	  clustered data, are labelled again by the 3xTF32 kernel, which reads
 *	  their rows through the screen's list, and its own doubtful points go
 *	  to refine_labels.  The screen's bound is in distances rather than
 *	  squared distances: rounding x and c to TF32 moves |x - c| by at most
 *	  r(c) = 2^-11 (|x| + |c|), so with the norms of the rounded centroids
 *	  the screen's distances are exact distances between moved points, and
 *	  the best centroid a is certain when the second is more than
 *	  r(a) + r(C) further, C the largest centroid; float32 accumulation
 *	  adds a term in (|x| + |C|)^2.  The precision
 *	  options tf32 and bf16 skip all refinement: they trade exactness for
 *	  speed by request.
 *
 *	  Operands are the centred float32 data and centroids, copied into
 *	  buffers whose rows are padded to a multiple of 32 columns and whose
 *	  row counts are padded to a multiple of 128, so that no tile needs a
 *	  bounds check; padded centroid columns are masked in the epilogue.
 *
 * IDENTIFICATION
 *	  cuda/labeling_tensor.cu
 *
 *-------------------------------------------------------------------------
 */
#include <cuda_bf16.h>
#include <float.h>

#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define TM 128					/* points per block tile */
#define TN 128					/* centroids per block tile */
#define TK 32					/* dimensions per step */
#define TPAD 4					/* row padding against bank conflicts */
#define TSTRIDE (TK + TPAD)
#define TTHREADS 256			/* 8 warps: 2 along points, 4 along centroids */
#define TSTAGES 2
#define TSMEM_BYTES (TSTAGES * (TM + TN) * TSTRIDE * sizeof(float))

__device__ __forceinline__ uint32_t
to_tf32(float x)
{
	uint32_t	r;

	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return r;
}

__device__ __forceinline__ void
mma_tf32(float *acc, const uint32_t *a, const uint32_t *b)
{
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void
mma_bf16(float *acc, const uint32_t *a, const uint32_t *b)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two floats as a bfloat16 pair, the first in the low half */
__device__ __forceinline__ uint32_t
pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

	return *reinterpret_cast<uint32_t *>(&v);
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
 * Start loading the (point tile, centroid tile, k step) operands into
 * stage; the tile's points are the rows tile_rows lists
 */
__device__ __forceinline__ void
load_stage(float *xs, float *cs, const float *xp, const float *cp, int ld,
		   const int32_t *tile_rows, int col0, int k0)
{
	for (int v = threadIdx.x; v < TM * TK / 4; v += TTHREADS)
	{
		int			r = v / (TK / 4),
					c4 = v % (TK / 4);

		cp_async16(xs + r * TSTRIDE + c4 * 4, xp + (int64_t) tile_rows[r] * ld + k0 + c4 * 4);
		cp_async16(cs + r * TSTRIDE + c4 * 4, cp + (int64_t) (col0 + r) * ld + k0 + c4 * 4);
	}
}

/* Merge (best, second, index) candidates; the lower index wins ties */
__device__ __forceinline__ void
merge_top2(float &best, float &second, int &best_c, float ob, float os, int oc)
{
	if (ob < best || (ob == best && oc < best_c))
	{
		second = fminf(best, os);
		best = ob;
		best_c = oc;
	}
	else
		second = fminf(second, ob);
}

enum TensorMode
{
	MODE_TF32,
	MODE_TF32X3,
	MODE_BF16
};

template <int MODE>
__global__ void
__launch_bounds__(TTHREADS, MODE == MODE_TF32X3 ? 1 : 2)
assign_points_tensor_kernel(const float *__restrict__ xp,
							const float *__restrict__ cp,
							const float *__restrict__ cnorm,
							const float *__restrict__ xnorm,
							const unsigned int *radius_bits,
							float eps_sq, float eps_lin, int64_t rows,
							const int32_t *__restrict__ row_map,
							int ld, int k, int kpad,
							int32_t *__restrict__ labels,
							unsigned long long *changed,
							int32_t *__restrict__ doubtful,
							unsigned int *doubtful_count)
{
	extern __shared__ __align__(16) float smem[];
	__shared__ float red_best[TM][4];
	__shared__ float red_second[TM][4];
	__shared__ int red_idx[TM][4];
	__shared__ int32_t tile_rows[TM];
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;
	int			warp_m = warp >> 2,
				warp_n = warp & 3;
	int			g = lane >> 2,
				t = lane & 3;
	int64_t		row0 = (int64_t) blockIdx.x * TM;
	int			ksteps = ld / TK;
	int			total = (kpad / TN) * ksteps;
	float		acc[4][4][4];
	float		best[4][2];
	float		second[4][2];
	int			best_c[4][2];

	if (row0 >= rows)
		return;					/* a pass over a list stops at its length */
	for (int r = threadIdx.x; r < TM; r += TTHREADS)
	{
		int64_t		slot = row0 + r < rows ? row0 + r : rows - 1;

		tile_rows[r] = row_map != NULL ? row_map[2 * slot] : (int32_t) (row0 + r);
	}
	__syncthreads();
#pragma unroll
	for (int mt = 0; mt < 4; mt++)
		for (int h = 0; h < 2; h++)
		{
			best[mt][h] = second[mt][h] = FLT_MAX;
			best_c[mt][h] = 0;
		}
#pragma unroll
	for (int mt = 0; mt < 4; mt++)
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[mt][nt][e] = 0.0f;

	load_stage(smem, smem + TM * TSTRIDE, xp, cp, ld, tile_rows, 0, 0);
	cp_async_commit();

	for (int it = 0; it < total; it++)
	{
		int			stage = it & 1;
		float	   *xs = smem + stage * (TM + TN) * TSTRIDE;
		float	   *cs = xs + TM * TSTRIDE;
		int			kstep = it % ksteps;
		int			col0 = (it / ksteps) * TN;

		if (it + 1 < total)
		{
			float	   *nxs = smem + (stage ^ 1) * (TM + TN) * TSTRIDE;

			load_stage(nxs, nxs + TM * TSTRIDE, xp, cp, ld, tile_rows,
					   ((it + 1) / ksteps) * TN, ((it + 1) % ksteps) * TK);
		}
		cp_async_commit();
		cp_async_wait<1>();
		__syncthreads();

#pragma unroll
		for (int kk = 0; kk < TK; kk += MODE == MODE_BF16 ? 16 : 8)
		{
			if (MODE == MODE_BF16)
			{
				/* m16n8k16: a thread holds columns 2t, 2t+1 and 2t+8, 2t+9 */
				uint32_t	a[4][4],
							b[4][2];

#pragma unroll
				for (int mt = 0; mt < 4; mt++)
				{
					const float *base = xs + (warp_m * 64 + mt * 16 + g) * TSTRIDE + kk + 2 * t;

					a[mt][0] = pack_bf16(base[0], base[1]);
					a[mt][1] = pack_bf16(base[8 * TSTRIDE], base[8 * TSTRIDE + 1]);
					a[mt][2] = pack_bf16(base[8], base[9]);
					a[mt][3] = pack_bf16(base[8 * TSTRIDE + 8], base[8 * TSTRIDE + 9]);
				}
#pragma unroll
				for (int nt = 0; nt < 4; nt++)
				{
					const float *base = cs + (warp_n * 32 + nt * 8 + g) * TSTRIDE + kk + 2 * t;

					b[nt][0] = pack_bf16(base[0], base[1]);
					b[nt][1] = pack_bf16(base[8], base[9]);
				}
#pragma unroll
				for (int mt = 0; mt < 4; mt++)
#pragma unroll
					for (int nt = 0; nt < 4; nt++)
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
					const float *base = xs + (warp_m * 64 + mt * 16 + g) * TSTRIDE + kk + t;
					float		v[4] = {base[0], base[8 * TSTRIDE], base[4], base[8 * TSTRIDE + 4]};

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
					const float *base = cs + (warp_n * 32 + nt * 8 + g) * TSTRIDE + kk + t;
					float		v[2] = {base[0], base[4]};

#pragma unroll
					for (int e = 0; e < 2; e++)
					{
						b[nt][e] = to_tf32(v[e]);
						if (MODE == MODE_TF32X3)
							b_lo[nt][e] = to_tf32(v[e] - __uint_as_float(b[nt][e]));
					}
				}
#pragma unroll
				for (int mt = 0; mt < 4; mt++)
#pragma unroll
					for (int nt = 0; nt < 4; nt++)
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
		__syncthreads();

		if (kstep == ksteps - 1)
		{
			/* epilogue of a centroid tile: fold into the running arg-min */
#pragma unroll
			for (int nt = 0; nt < 4; nt++)
#pragma unroll
				for (int e = 0; e < 2; e++)
				{
					int			c = col0 + warp_n * 32 + nt * 8 + 2 * t + e;
					float		norm = c < k ? cnorm[c] : 0.0f;

#pragma unroll
					for (int mt = 0; mt < 4; mt++)
#pragma unroll
						for (int h = 0; h < 2; h++)
						{
							float		s = fmaf(-2.0f, acc[mt][nt][h * 2 + e], norm);

							if (c < k)
							{
								if (s < best[mt][h])
								{
									second[mt][h] = best[mt][h];
									best[mt][h] = s;
									best_c[mt][h] = c;
								}
								else if (s < second[mt][h])
									second[mt][h] = s;
							}
							acc[mt][nt][h * 2 + e] = 0.0f;
						}
				}
		}
	}

	/* arg-min over the 4 threads of a quad, then over the 4 warps along n */
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

				red_best[r][warp_n] = best[mt][h];
				red_second[r][warp_n] = second[mt][h];
				red_idx[r][warp_n] = best_c[mt][h];
			}
		}
	__syncthreads();
	if (threadIdx.x < TM)
	{
		int			r = threadIdx.x;
		float		b = red_best[r][0],
					sec = red_second[r][0];
		int			c = red_idx[r][0];
		int64_t		slot_row = row0 + r;

		for (int w = 1; w < 4; w++)
			merge_top2(b, sec, c, red_best[r][w], red_second[r][w], red_idx[r][w]);
		if (slot_row < rows)
		{
			/* a pass over a list labels the points row_map lists */
			int64_t		row = row_map != NULL ? row_map[2 * slot_row] : slot_row;
			int			previous = row_map != NULL ? row_map[2 * slot_row + 1] : labels[row];
			float		reach = xnorm == NULL ? 0.0f : xnorm[row] + __uint_as_float(*radius_bits);
			float		bound = eps_sq * reach * reach;

			if (xnorm != NULL && eps_lin > 0.0f)
			{
				/*
				 * |x - c| of the best and second from ||c||^2 - 2 x.c, rounded
				 * up; the best centroid's distance moves with its own norm,
				 * any other's with at most C's
				 */
				float		xx = xnorm[row] * (1.0f + 0x1p-10f),
							slack = bound + xx * xx,
							moved = reach + xx + sqrtf(cnorm[c]) * (1.0f + 0x1p-10f);

				bound += 0.5f * eps_lin * moved *
					(sqrtf(fmaxf(b + slack, 0.0f)) + sqrtf(fmaxf(sec + slack, 0.0f)));
			}
			if (xnorm != NULL && sec - b <= bound)
			{
				unsigned	slot = atomicAdd(doubtful_count, 1u);

				doubtful[2 * slot] = (int32_t) row;
				doubtful[2 * slot + 1] = previous;
			}
			else if (changed != NULL && previous != c)
				atomicAdd(changed, 1ULL);
			labels[row] = c;
		}
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

/*
 * One tensor pass: over the n rows of xp, or over the n points of a list
 * whose entry i is point row_map[2 i]; points within the error bound
 * (eps_sq, eps_lin) of a tie go to list when it is not NULL
 */
template <int MODE>
static GcStatus
launch_mode(const float *xp, const float *cp, const float *cnorm,
			const TensorRefinement *refine, float eps_sq, float eps_lin, int64_t n,
			const int32_t *row_map, int ld, int k,
			int32_t *labels, unsigned long long *changed, int32_t *list,
			unsigned int *list_count, cudaStream_t stream, GcError *err)
{
	static bool configured = false;
	int			kpad = (k + TN - 1) / TN * TN;
	unsigned	blocks = (unsigned) ((n + TM - 1) / TM);

	if (n == 0)
		return GC_OK;
	if (!configured)
	{
		GC_CUDA_TRY(cudaFuncSetAttribute(assign_points_tensor_kernel<MODE>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 (int) TSMEM_BYTES), err);
		configured = true;
	}
	assign_points_tensor_kernel<MODE><<<blocks, TTHREADS, TSMEM_BYTES, stream>>>(
		xp, cp, cnorm, list ? refine->xnorm : NULL, list ? refine->cradius_bits : NULL,
		eps_sq, eps_lin, n, row_map, ld, k, kpad, labels, changed, list, list_count);
	GC_CUDA_LAUNCHED("assign_points_tensor", err);
	return GC_OK;
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
							unsigned long long *changed, cudaStream_t stream,
							GcError *err)
{
	if (refine == NULL)
		return mode == GC_TENSOR_BF16 ?
			launch_mode<MODE_BF16>(xp, cp, cnorm, NULL, 0.0f, 0.0f, n, NULL, ld, k, labels,
								   changed, NULL, NULL, stream, err) :
			mode == GC_TENSOR_TF32X3 ?
			launch_mode<MODE_TF32X3>(xp, cp, cnorm, NULL, 0.0f, 0.0f, n, NULL, ld, k, labels,
									 changed, NULL, NULL, stream, err) :
			launch_mode<MODE_TF32>(xp, cp, cnorm, NULL, 0.0f, 0.0f, n, NULL, ld, k, labels,
								   changed, NULL, NULL, stream, err);

	GC_CUDA_TRY(cudaMemsetAsync(refine->doubtful_count, 0, sizeof(unsigned int), stream), err);
	if (mode == GC_TENSOR_TF32X3)
	{
		/* 3xTF32 over every point, the doubtful ones checked exactly */
		if (launch_mode<MODE_TF32X3>(xp, cp, cnorm, refine, refine->eps_3xtf32, 0.0f, n,
									 NULL, ld, k, labels, changed, refine->doubtful,
									 refine->doubtful_count, stream, err) != GC_OK)
			return err->status;
		return launch_refine(refine, k, refine->doubtful, refine->doubtful_count, labels,
							 changed, stream, err);
	}

	/*
	 * The TF32 screen (with the norms of the TF32 centroids), then 3xTF32
	 * over the points it doubts, then the exact check
	 */
	GC_CUDA_TRY(cudaMemsetAsync(refine->exact_count, 0, sizeof(unsigned int), stream), err);
	if (launch_mode<MODE_TF32>(xp, cp, refine->cnorm_tf32, refine, refine->eps_tf32_sq,
							   refine->eps_tf32_lin, n, NULL, ld, k, labels, changed,
							   refine->doubtful, refine->doubtful_count, stream, err) != GC_OK)
		return err->status;
	/* the list's length sizes the second pass's grid */
	GC_CUDA_TRY(cudaMemcpyAsync(refine->count_host, refine->doubtful_count, sizeof(unsigned int),
								cudaMemcpyDeviceToHost, stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(stream), err);
	if (launch_mode<MODE_TF32X3>(xp, cp, cnorm, refine, refine->eps_3xtf32, 0.0f,
								 (int64_t) *refine->count_host, refine->doubtful, ld, k,
								 labels, changed, refine->exact, refine->exact_count, stream,
								 err) != GC_OK)
		return err->status;
	return launch_refine(refine, k, refine->exact, refine->exact_count, labels, changed,
						 stream, err);
}

/*
 * ||c||^2 of every centroid rounded to TF32, one warp per centroid, and
 * the largest |c| into *largest_bits (zeroed first)
 */
__global__ void
tf32_norms_kernel(const float *__restrict__ cp, int k, int ld, float *__restrict__ norms,
				  unsigned int *largest_bits)
{
	int			lane = threadIdx.x & 31;

	for (int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); c < k;
		 c += gridDim.x * (blockDim.x >> 5))
	{
		double		s = 0.0;

		for (int j = lane; j < ld; j += 32)
		{
			double		v = __uint_as_float(to_tf32(cp[(int64_t) c * ld + j]));

			s += v * v;
		}
		for (int off = 16; off > 0; off >>= 1)
			s += __shfl_down_sync(0xffffffffu, s, off);
		if (lane == 0)
		{
			norms[c] = (float) s;
			/* the largest |c|, rounded up; float bits of values >= 0 order as integers */
			atomicMax(largest_bits, __float_as_uint((float) (sqrt(s) * (1.0 + 0x1p-10))));
		}
	}
}

GcStatus
launch_tf32_norms(const float *cp, int k, int ld, float *norms, unsigned int *largest_bits,
				  cudaStream_t stream, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(largest_bits, 0, sizeof(unsigned int), stream), err);
	tf32_norms_kernel<<<(k + 7) / 8, 256, 0, stream>>>(cp, k, ld, norms, largest_bits);
	GC_CUDA_LAUNCHED("tf32_norms", err);
	return GC_OK;
}

/* Copy rows of width d into a zeroed buffer of rows of width ld */
__global__ void
pad_rows_kernel(const float *__restrict__ src, int64_t rows, int d, int ld,
				float *__restrict__ dst)
{
	int64_t		total = rows * d;

	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		r = e / d;

		dst[r * ld + (e - r * d)] = src[e];
	}
}

GcStatus
launch_pad_rows(const float *src, int64_t rows, int d, int ld, float *dst,
				cudaStream_t stream, GcError *err)
{
	int64_t		blocks = (rows * d + 255) / 256;

	pad_rows_kernel<<<(unsigned) (blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), 256, 0, stream>>>(
		src, rows, d, ld, dst);
	GC_CUDA_LAUNCHED("pad_rows", err);
	return GC_OK;
}
