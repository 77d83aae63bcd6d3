/*-------------------------------------------------------------------------
 *
 * pmedian_swap.cu
 *	  The swap improvement on the GPU (FasterPAM, Schubert & Rousseeuw
 *	  2021): each row's nearest and second-nearest medoid, one thread per
 *	  row; then, one block per candidate, the change of the objective for
 *	  swapping the candidate with every medoid at once, accumulated in
 *	  shared memory as 64-bit fixed-point integers (so that the order of
 *	  the atomics does not matter and the CPU gets the same numbers), and
 *	  the best medoid by a block-wide arg-min.
 *
 * IDENTIFICATION
 *	  cuda/pmedian_swap.cu
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>

#include "pmedian_math.h"
#include "pmedian_kernels.cuh"
#include "cuda_check.cuh"

#define NEAREST_THREADS 128
#define SWAP_THREADS 512

__global__ void
__launch_bounds__(NEAREST_THREADS)
nearest2_kernel(const double *__restrict__ x, int64_t n, int d, int metric,
				const double *__restrict__ mx, int p, double far,
				int32_t *__restrict__ nearest, double *__restrict__ dn,
				double *__restrict__ ds)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		d1 = far,
				d2 = far;
	int32_t		m1 = 0;

	if (i >= n)
		return;
	for (int m = 0; m < p; m++)
	{
		double		dm = gc_pm_dist(x + i * d, mx + (int64_t) m * d, d, metric);

		if (dm < d1)
		{
			d2 = d1;
			d1 = dm;
			m1 = m;
		}
		else if (dm < d2)
			d2 = dm;
	}
	nearest[i] = m1;
	dn[i] = d1;
	ds[i] = d2;
}

GcStatus
launch_nearest2(const double *x, int64_t n, int d, int metric, const double *mx,
				int p, double far, int32_t *nearest, double *dn, double *ds,
				cudaStream_t stream, GcError *err)
{
	int			blocks = (int) ((n + NEAREST_THREADS - 1) / NEAREST_THREADS);

	nearest2_kernel<<<blocks, NEAREST_THREADS, 0, stream>>>(x, n, d, metric, mx, p, far,
															nearest, dn, ds);
	GC_CUDA_LAUNCHED("nearest2", err);
	return GC_OK;
}

/* Block-wide sum of a 64-bit integer (exact, so order does not matter) */
__device__ long long
block_sum_ll(long long v, long long *scratch)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, off);
	if ((threadIdx.x & 31) == 0)
		scratch[threadIdx.x / 32] = v;
	__syncthreads();
	if (threadIdx.x < 32)
	{
		v = threadIdx.x < blockDim.x / 32 ? scratch[threadIdx.x] : 0;
		for (int off = 16; off > 0; off >>= 1)
			v += __shfl_down_sync(0xffffffffu, v, off);
	}
	return v;
}

/* Block-wide arg-min of (gain, medoid), lowest medoid on ties */
__device__ void
block_argmin(long long *gain, int *medoid, long long *sg, int *sm)
{
	for (int off = 16; off > 0; off >>= 1)
	{
		long long	og = __shfl_down_sync(0xffffffffu, *gain, off);
		int			om = __shfl_down_sync(0xffffffffu, *medoid, off);

		if (og < *gain || (og == *gain && om < *medoid))
		{
			*gain = og;
			*medoid = om;
		}
	}
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
	{
		sg[threadIdx.x / 32] = *gain;
		sm[threadIdx.x / 32] = *medoid;
	}
	__syncthreads();
	if (threadIdx.x == 0)
		for (int w = 1; w < (int) blockDim.x / 32; w++)
			if (sg[w] < *gain || (sg[w] == *gain && sm[w] < *medoid))
			{
				*gain = sg[w];
				*medoid = sm[w];
			}
}

__global__ void
__launch_bounds__(SWAP_THREADS)
swap_gains_kernel(const double *__restrict__ x, int64_t n, int d, int metric,
				  const int32_t *__restrict__ nearest,
				  const double *__restrict__ dn, const double *__restrict__ ds,
				  int p, const int64_t *__restrict__ removal,
				  const int32_t *__restrict__ cand, double scale,
				  int32_t *__restrict__ best_medoid, long long *__restrict__ best_gain)
{
	extern __shared__ long long gains[];	/* p */
	__shared__ long long sg[SWAP_THREADS / 32];
	__shared__ int sm[SWAP_THREADS / 32];
	const double *xc = x + (int64_t) cand[blockIdx.x] * d;
	long long	own = 0,
				g = LLONG_MAX;
	int			m = 0;

	for (int k = threadIdx.x; k < p; k += blockDim.x)
		gains[k] = removal[k];
	__syncthreads();
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
	{
		long long	o,
					nr;

		gc_pm_swap_part(gc_pm_dist(x + i * d, xc, d, metric), dn[i], ds[i], scale, &o, &nr);
		own += o;
		if (nr != 0)
			atomicAdd((unsigned long long *) &gains[nearest[i]], (unsigned long long) nr);
	}
	own = block_sum_ll(own, sg);
	__syncthreads();
	for (int k = threadIdx.x; k < p; k += blockDim.x)
		if (gains[k] < g)
		{
			g = gains[k];
			m = k;
		}
	block_argmin(&g, &m, sg, sm);
	if (threadIdx.x == 0)
	{
		best_medoid[blockIdx.x] = m;
		best_gain[blockIdx.x] = g + own;
	}
}

GcStatus
launch_swap_gains(const double *x, int64_t n, int d, int metric,
				  const int32_t *nearest, const double *dn, const double *ds,
				  int p, const int64_t *removal, const int32_t *cand, int ncand,
				  double scale, int32_t *best_medoid, long long *best_gain,
				  cudaStream_t stream, GcError *err)
{
	size_t		shared = sizeof(long long) * p;

	if (shared > 48 * 1024)
		GC_CUDA_TRY(cudaFuncSetAttribute(swap_gains_kernel,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 (int) shared), err);
	swap_gains_kernel<<<ncand, SWAP_THREADS, shared, stream>>>(
		x, n, d, metric, nearest, dn, ds, p, removal, cand, scale, best_medoid, best_gain);
	GC_CUDA_LAUNCHED("swap_gains", err);
	return GC_OK;
}
