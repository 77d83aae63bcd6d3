/*-------------------------------------------------------------------------
 *
 * pmedian_locate.cu
 *	  The centre-location step of location-allocation on the GPU, the
 *	  paper's second parallelisation scheme (Algorithm 8): one thread per
 *	  entity sums its dissimilarities to the other members of its cluster.
 *	  Members come grouped by cluster (the host's counting sort), their
 *	  rows gathered contiguously, so the threads of a warp mostly walk the
 *	  same cluster and read the same member at once (a broadcast).  The sum
 *	  runs in member order with rounded additions, exactly as the CPU
 *	  reference does; dissimilarities are computed on the fly, so memory
 *	  stays linear in n.
 *
 *	  A launch covers one span of member positions [j0, j1) of every
 *	  cluster and carries the sums between spans in sums[], so the host
 *	  can poll between spans (a few wide rows make a long launch: 2,100
 *	  rows of d = 65,536 in two clusters are 1.4e11 units on 17 blocks)
 *	  and every sum still adds its members in order, as the CPU does.
 *
 * IDENTIFICATION
 *	  cuda/pmedian_locate.cu
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_math.h"
#include "pmedian_kernels.cuh"
#include "cuda_check.cuh"

#define SUM_THREADS 128

/* The cluster holding position t: the last c with first[c] <= t */
__device__ __forceinline__ int32_t
cluster_of(const int32_t *__restrict__ first, int32_t ncen, int32_t t)
{
	int32_t		lo = 0,
				hi = ncen - 1;

	while (lo < hi)
	{
		int32_t		mid = (lo + hi + 1) / 2;

		if (first[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

template <int D>
__global__ void
__launch_bounds__(SUM_THREADS)
cluster_sums_kernel(const double *__restrict__ xs, int d, int metric,
					const int32_t *__restrict__ first, int32_t ncen,
					int32_t t0, int32_t nent, int32_t j0, int32_t j1,
					double *__restrict__ sums)
{
	int32_t		t = t0 + blockIdx.x * blockDim.x + threadIdx.x;
	int			dd = D > 0 ? D : d;
	double		xi[D > 0 ? D : 1];
	const double *xp;
	int32_t		c,
				u_end;
	double		sum;

	if (t >= nent)
		return;
	c = cluster_of(first, ncen, t);
	if (first[c] + j0 >= first[c + 1])
		return;
	sum = j0 == 0 ? 0.0 : sums[t];
	u_end = first[c + 1] - first[c] > j1 ? first[c] + j1 : first[c + 1];
	if (D > 0)
	{
#pragma unroll
		for (int j = 0; j < (D > 0 ? D : 1); j++)
			xi[j] = xs[(int64_t) t * D + j];
		xp = xi;
	}
	else
		xp = xs + (int64_t) t * d;
	for (int32_t u = first[c] + j0; u < u_end; u++)
		if (u != t)
			sum = __dadd_rn(sum, gc_pm_dist(xp, xs + (int64_t) u * dd, dd, metric));
	sums[t] = sum;
}

GcStatus
launch_cluster_sums(const double *xs, int d, int metric, const int32_t *first,
					int32_t ncen, int32_t t0, int32_t nent, int32_t j0,
					int32_t j1, double *sums, cudaStream_t stream, GcError *err)
{
	int			blocks = (nent - t0 + SUM_THREADS - 1) / SUM_THREADS;

	if (nent <= t0)
		return GC_OK;
	if (d == 2)
		cluster_sums_kernel<2><<<blocks, SUM_THREADS, 0, stream>>>(xs, d, metric, first, ncen, t0, nent, j0, j1, sums);
	else if (d == 3)
		cluster_sums_kernel<3><<<blocks, SUM_THREADS, 0, stream>>>(xs, d, metric, first, ncen, t0, nent, j0, j1, sums);
	else
		cluster_sums_kernel<0><<<blocks, SUM_THREADS, 0, stream>>>(xs, d, metric, first, ncen, t0, nent, j0, j1, sums);
	GC_CUDA_LAUNCHED("cluster_sums", err);
	return GC_OK;
}
