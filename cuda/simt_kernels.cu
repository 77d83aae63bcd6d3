/*-------------------------------------------------------------------------
 *
 * simt_kernels.cu
 *	  Nearest-centroid labeling, the O(n k d) step of Lloyd's algorithm,
 *	  with the two strategies of Li, Zhao & Chu (2010), chosen by d:
 *
 *	  - d <= 32: one thread per point, the point held in registers (padded
 *		to a power of two), centroids streamed through shared memory in
 *		tiles and read as broadcasts; distances as sum (x - c)^2
 *		(register_scan.cuh, which drift bounds share).
 *	  - d > 32: the distance in the shape of a matrix product, tiled in
 *		shared memory (64 points x 64 centroids x 16 dimensions per step,
 *		4 x 4 results per thread), accumulating (x - c)^2 rather than x.c so
 *		that no cancellation can flip a label, with the arg-min fused into
 *		the tile loop so the n x k distance matrix is never written.  Large
 *		k goes to the tensor-core kernel (tensor/mma_kernels.cu).
 *
 *	  Both compute in float32 on data centred on the bounding box, and keep
 *	  the lowest centroid index on ties, as the CPU reference does.  The
 *	  register kernel also serves precision float64 (on the raw doubles),
 *	  with a direct double kernel above 32 dimensions.  Also the gather of
 *	  a sample's labels for the engine's check of reduced precision.
 *
 * IDENTIFICATION
 *	  cuda/simt_kernels.cu
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <math.h>

#include "kmeans_kernels.cuh"
#include "register_scan.cuh"
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

template <typename T, int DP>
__global__ void
__launch_bounds__(REGISTER_THREADS)
assign_points_register_kernel(const T *__restrict__ x,
							  const T *__restrict__ centroids, int64_t n, int d,
							  int k, int32_t *__restrict__ labels,
							  unsigned long long *changed)
{
	constexpr int tile_k = REGISTER_TILE_FLOATS * sizeof(float) / sizeof(T) / DP;
	__shared__ __align__(16) T tile[tile_k * DP];
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	T			p[DP];
	T			best = sizeof(T) == sizeof(float) ? (T) FLT_MAX : (T) DBL_MAX,
				unused = 0;
	int			best_c = 0;

	register_load_point<T, DP>(x, i, i < n, d, p);
	register_scan<T, DP, false>(centroids, tile, tile_k, p, d, k, best, best_c, unused);
	count_changed(i < n && labels[i] != best_c, changed);
	if (i < n)
		labels[i] = best_c;
}

__global__ void
__launch_bounds__(TILED_THREADS)
assign_points_tiled_kernel(const float *__restrict__ x32,
						   const float *__restrict__ c32,
						   int64_t n, int d,
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
					{
						float		t = av[u] - bv[v];

						acc[u][v] = fmaf(t, t, acc[u][v]);
					}
			}
			__syncthreads();
		}
#pragma unroll
		for (int v = 0; v < 4; v++)
		{
			int			c = c0 + tx * 4 + v;

			if (c < k)
			{
#pragma unroll
				for (int u = 0; u < 4; u++)
				{
					float		s = acc[u][v];

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

/* Double precision for d > 32: the point read from global memory (L1) */
__global__ void
__launch_bounds__(REGISTER_THREADS)
assign_points_direct64_kernel(const double *__restrict__ x64,
							  const double *__restrict__ c64, int64_t n, int d,
							  int c_first, int c_end, int k, double *__restrict__ run_d,
							  int32_t *__restrict__ run_c, int32_t *__restrict__ labels,
							  unsigned long long *changed)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		best = DBL_MAX;
	int			best_c = 0;

	if (i < n && c_first > 0)
	{
		best = run_d[i];
		best_c = run_c[i];
	}
	if (i < n)
	{
		const double *x = x64 + i * d;

		for (int c = c_first; c < c_end; c++)
		{
			const double *centroid = c64 + (int64_t) c * d;
			double		s = 0.0;

			for (int j = 0; j < d; j++)
			{
				double		t = x[j] - centroid[j];

				s = fma(t, t, s);
			}
			if (s < best)
			{
				best = s;
				best_c = c;
			}
		}
	}
	if (c_end < k)
	{
		/* a later launch goes on from here: the same order as one pass */
		if (i < n)
		{
			run_d[i] = best;
			run_c[i] = best_c;
		}
		return;
	}
	count_changed(i < n && labels[i] != best_c, changed);
	if (i < n)
		labels[i] = best_c;
}

template <typename T, int DP>
static void
launch_register(const T *x, const T *centroids, int64_t n, int d, int k,
				int32_t *labels, unsigned long long *changed, cudaStream_t stream)
{
	unsigned	blocks = (unsigned) ((n + REGISTER_THREADS - 1) / REGISTER_THREADS);

	assign_points_register_kernel<T, DP><<<blocks, REGISTER_THREADS, 0, stream>>>(
		x, centroids, n, d, k, labels, changed);
}

/* Template dispatch on the padded dimension; false when d > 32 */
template <typename T>
static bool
launch_register_for(const T *x, const T *centroids, int64_t n, int d, int k,
					int32_t *labels, unsigned long long *changed, cudaStream_t stream)
{
	return register_padded(d, [&](auto dp) {
		launch_register<T, decltype(dp)::value>(x, centroids, n, d, k, labels, changed, stream);
	});
}

GcStatus
launch_assign_points_f64(const double *x64, const double *c64, int64_t n, int d,
						 int k, int32_t *labels, unsigned long long *changed,
						 cudaStream_t stream, GcError *err)
{
	if (!launch_register_for<double>(x64, c64, n, d, k, labels, changed, stream))
		assign_points_direct64_kernel<<<(unsigned) ((n + REGISTER_THREADS - 1) / REGISTER_THREADS),
			REGISTER_THREADS, 0, stream>>>(x64, c64, n, d, 0, k, k, NULL, NULL, labels, changed);
	GC_CUDA_LAUNCHED("assign_points_f64", err);
	return GC_OK;
}

GcStatus
launch_assign_points_f64_span(const double *x64, const double *c64, int64_t n, int d,
							  int c_first, int c_end, int k, double *run_d, int32_t *run_c,
							  int32_t *labels, unsigned long long *changed,
							  cudaStream_t stream, GcError *err)
{
	assign_points_direct64_kernel<<<(unsigned) ((n + REGISTER_THREADS - 1) / REGISTER_THREADS),
		REGISTER_THREADS, 0, stream>>>(x64, c64, n, d, c_first, c_end, k, run_d, run_c,
									   labels, changed);
	GC_CUDA_LAUNCHED("assign_points_f64_span", err);
	return GC_OK;
}

GcStatus
launch_assign_points(const float *x32, const float *c32,
					 int64_t n, int d, int k, int32_t *labels,
					 unsigned long long *changed, cudaStream_t stream,
					 GcError *err)
{
	if (!launch_register_for<float>(x32, c32, n, d, k, labels, changed, stream))
	{
		unsigned	blocks = (unsigned) ((n + TILE_POINTS - 1) / TILE_POINTS);

		assign_points_tiled_kernel<<<blocks, TILED_THREADS, 0, stream>>>(
			x32, c32, n, d, k, labels, changed);
	}
	GC_CUDA_LAUNCHED("assign_points", err);
	return GC_OK;
}

/* The labels of the sample's rows, for the precision check */
__global__ void
gather_labels_kernel(const int32_t *__restrict__ labels, const int64_t *__restrict__ sample,
					 int m, int32_t *__restrict__ sample_labels)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x)
		sample_labels[i] = labels[sample[i]];
}

GcStatus
launch_gather_labels(const int32_t *labels, const int64_t *sample, int m,
					 int32_t *sample_labels, cudaStream_t stream, GcError *err)
{
	gather_labels_kernel<<<(m + 255) / 256, 256, 0, stream>>>(labels, sample, m, sample_labels);
	GC_CUDA_LAUNCHED("gather_labels", err);
	return GC_OK;
}
