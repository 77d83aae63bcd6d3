/*-------------------------------------------------------------------------
 *
 * labeling.cu
 *	  Nearest-centroid labeling, the O(n k d) step of Lloyd's algorithm,
 *	  with the two strategies of Li, Zhao & Chu (2010), chosen by d:
 *
 *	  - d <= 32: one thread per point, the point held in registers (padded
 *		to a power of two), centroids streamed through shared memory in
 *		tiles and read as broadcasts; distances as sum (x - c)^2.
 *	  - d > 32: the distance as a matrix product, ||c||^2 - 2 x.c, tiled in
 *		shared memory (64 points x 64 centroids x 16 dimensions per step,
 *		4 x 4 results per thread), with the arg-min fused into the tile
 *		loop so the n x k distance matrix is never written.
 *
 *	  Both compute in float32 on data centred on the bounding box, and keep
 *	  the lowest centroid index on ties, as the CPU reference does.
 *
 * IDENTIFICATION
 *	  cuda/labeling.cu
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>

#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define REGISTER_THREADS 256
#define REGISTER_TILE_FLOATS 8192	/* 32 KB of centroids per tile */

#define TILE_POINTS 64
#define TILE_CENTROIDS 64
#define TILE_DIMS 16
#define TILED_THREADS 256

/* Count, once per warp, the threads whose label changed */
__device__ __forceinline__ void
count_changed(bool changed_here, unsigned long long *changed)
{
	unsigned	mask = __ballot_sync(0xffffffffu, changed_here);

	if (changed != NULL && (threadIdx.x & 31) == 0 && mask != 0)
		atomicAdd(changed, (unsigned long long) __popc(mask));
}

template <int DP>
__global__ void
__launch_bounds__(REGISTER_THREADS)
assign_points_register_kernel(const float *__restrict__ x32,
							  const float *__restrict__ c32, int64_t n, int d,
							  int k, int32_t *__restrict__ labels,
							  unsigned long long *changed)
{
	constexpr int tile_k = REGISTER_TILE_FLOATS / DP;
	__shared__ __align__(16) float tile[REGISTER_TILE_FLOATS];
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	float		p[DP];
	float		best = FLT_MAX;
	int			best_c = 0;

#pragma unroll
	for (int j = 0; j < DP; j++)
		p[j] = (i < n && j < d) ? x32[i * d + j] : 0.0f;

	for (int c0 = 0; c0 < k; c0 += tile_k)
	{
		int			tk = min(tile_k, k - c0);

		__syncthreads();
		for (int t = threadIdx.x; t < tk * DP; t += blockDim.x)
		{
			int			c = t / DP,
						j = t % DP;

			tile[t] = j < d ? c32[(int64_t) (c0 + c) * d + j] : 0.0f;
		}
		__syncthreads();
		for (int c = 0; c < tk; c++)
		{
			float		s = 0.0f;

#pragma unroll
			for (int j = 0; j < DP; j++)
			{
				float		t = p[j] - tile[c * DP + j];

				s = fmaf(t, t, s);
			}
			if (s < best)
			{
				best = s;
				best_c = c0 + c;
			}
		}
	}
	count_changed(i < n && labels[i] != best_c, changed);
	if (i < n)
		labels[i] = best_c;
}

__global__ void
__launch_bounds__(TILED_THREADS)
assign_points_tiled_kernel(const float *__restrict__ x32,
						   const float *__restrict__ c32,
						   const float *__restrict__ cnorm, int64_t n, int d,
						   int k, int32_t *__restrict__ labels,
						   unsigned long long *changed)
{
	__shared__ __align__(16) float xs[TILE_DIMS][TILE_POINTS + 4];
	__shared__ __align__(16) float cs[TILE_DIMS][TILE_CENTROIDS + 4];
	int			tx = threadIdx.x % 16,
				ty = threadIdx.x / 16;
	int64_t		row0 = (int64_t) blockIdx.x * TILE_POINTS;
	float		best[4];
	int			best_c[4];

#pragma unroll
	for (int a = 0; a < 4; a++)
	{
		best[a] = FLT_MAX;
		best_c[a] = 0;
	}

	for (int c0 = 0; c0 < k; c0 += TILE_CENTROIDS)
	{
		float		acc[4][4] = {{0}};

		for (int k0 = 0; k0 < d; k0 += TILE_DIMS)
		{
			for (int t = threadIdx.x; t < TILE_POINTS * TILE_DIMS; t += TILED_THREADS)
			{
				int			m = t / TILE_DIMS,
							kk = t % TILE_DIMS;
				int64_t		r = row0 + m;
				int			dd = k0 + kk;
				int			c = c0 + m;

				xs[kk][m] = (r < n && dd < d) ? x32[r * d + dd] : 0.0f;
				cs[kk][m] = (c < k && dd < d) ? c32[(int64_t) c * d + dd] : 0.0f;
			}
			__syncthreads();
#pragma unroll
			for (int kk = 0; kk < TILE_DIMS; kk++)
			{
				float4		a = *reinterpret_cast<const float4 *>(&xs[kk][ty * 4]);
				float4		b = *reinterpret_cast<const float4 *>(&cs[kk][tx * 4]);
				float		av[4] = {a.x, a.y, a.z, a.w};
				float		bv[4] = {b.x, b.y, b.z, b.w};

#pragma unroll
				for (int u = 0; u < 4; u++)
#pragma unroll
					for (int v = 0; v < 4; v++)
						acc[u][v] = fmaf(av[u], bv[v], acc[u][v]);
			}
			__syncthreads();
		}
#pragma unroll
		for (int v = 0; v < 4; v++)
		{
			int			c = c0 + tx * 4 + v;

			if (c < k)
			{
				float		norm = cnorm[c];

#pragma unroll
				for (int u = 0; u < 4; u++)
				{
					float		s = fmaf(-2.0f, acc[u][v], norm);

					if (s < best[u])
					{
						best[u] = s;
						best_c[u] = c;
					}
				}
			}
		}
	}

	/* arg-min across the 16 threads that share these 4 points */
#pragma unroll
	for (int u = 0; u < 4; u++)
	{
#pragma unroll
		for (int off = 8; off > 0; off >>= 1)
		{
			float		ob = __shfl_xor_sync(0xffffffffu, best[u], off);
			int			oc = __shfl_xor_sync(0xffffffffu, best_c[u], off);

			if (ob < best[u] || (ob == best[u] && oc < best_c[u]))
			{
				best[u] = ob;
				best_c[u] = oc;
			}
		}
	}
#pragma unroll
	for (int u = 0; u < 4; u++)
	{
		int64_t		r = row0 + ty * 4 + u;
		bool		mine = tx == 0 && r < n;

		count_changed(mine && labels[r] != best_c[u], changed);
		if (mine)
			labels[r] = best_c[u];
	}
}

template <int DP>
static void
launch_register(const float *x32, const float *c32, int64_t n, int d, int k,
				int32_t *labels, unsigned long long *changed, cudaStream_t stream)
{
	unsigned	blocks = (unsigned) ((n + REGISTER_THREADS - 1) / REGISTER_THREADS);

	assign_points_register_kernel<DP><<<blocks, REGISTER_THREADS, 0, stream>>>(
		x32, c32, n, d, k, labels, changed);
}

GcStatus
launch_assign_points(const float *x32, const float *c32, const float *cnorm,
					 int64_t n, int d, int k, int32_t *labels,
					 unsigned long long *changed, cudaStream_t stream,
					 GcError *err)
{
	if (d <= 1)
		launch_register<1>(x32, c32, n, d, k, labels, changed, stream);
	else if (d <= 2)
		launch_register<2>(x32, c32, n, d, k, labels, changed, stream);
	else if (d <= 4)
		launch_register<4>(x32, c32, n, d, k, labels, changed, stream);
	else if (d <= 8)
		launch_register<8>(x32, c32, n, d, k, labels, changed, stream);
	else if (d <= 16)
		launch_register<16>(x32, c32, n, d, k, labels, changed, stream);
	else if (d <= GC_REGISTER_MAX_DIM)
		launch_register<32>(x32, c32, n, d, k, labels, changed, stream);
	else
	{
		unsigned	blocks = (unsigned) ((n + TILE_POINTS - 1) / TILE_POINTS);

		assign_points_tiled_kernel<<<blocks, TILED_THREADS, 0, stream>>>(
			x32, c32, cnorm, n, d, k, labels, changed);
	}
	GC_CUDA_LAUNCHED("assign_points", err);
	return GC_OK;
}
