/*-------------------------------------------------------------------------
 *
 * register_scan.cuh
 *	  The register kernel's scan of one point against every centroid: the
 *	  point in registers padded to DP dimensions (zeros past d), the
 *	  centroids streamed through shared memory in tiles, each distance
 *	  sum (x - c)^2 with fma in dimension order, the lowest index kept on
 *	  ties.  Lloyd's register kernel (simt_kernels.cu) and the drift bounds'
 *	  scan (bounded_kernels.cu) both call it, so that the bounds' labels
 *	  are the register kernel's by construction; the bounds' scan also
 *	  keeps the second-nearest distance (SECOND).
 *
 * IDENTIFICATION
 *	  cuda/register_scan.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_REGISTER_SCAN_CUH
#define GC_REGISTER_SCAN_CUH

#include <stdint.h>
#include <type_traits>

#include "kmeans_kernels.cuh"

/*
 * launch(std::integral_constant<int, DP>()) with DP the padded dimension
 * of d (1, 2, 4, 8, 16 or 32); false, with nothing called, above
 * GC_REGISTER_MAX_DIM.  Both callers pad alike, so a row's distances are
 * the same sums in either.
 */
template <typename Launch>
static inline bool
register_padded(int d, Launch &&launch)
{
	if (d <= 1)
		launch(std::integral_constant<int, 1>());
	else if (d <= 2)
		launch(std::integral_constant<int, 2>());
	else if (d <= 4)
		launch(std::integral_constant<int, 4>());
	else if (d <= 8)
		launch(std::integral_constant<int, 8>());
	else if (d <= 16)
		launch(std::integral_constant<int, 16>());
	else if (d <= GC_REGISTER_MAX_DIM)
		launch(std::integral_constant<int, GC_REGISTER_MAX_DIM>());
	else
		return false;
	return true;
}

/* Row i of x (d values) into p, zeros past d and where the thread has no row */
template <typename T, int DP>
__device__ __forceinline__ void
register_load_point(const T *__restrict__ x, int64_t i, bool live, int d, T (&p)[DP])
{
#pragma unroll
	for (int j = 0; j < DP; j++)
		p[j] = (live && j < d) ? x[i * d + j] : (T) 0;
}

/*
 * p against centroids 0 .. k - 1 through tile (tile_k centroids of DP
 * values at a time; every thread of the block calls it together): the
 * nearest into best and best_c, and with SECOND the second-nearest
 * squared distance into second
 */
template <typename T, int DP, bool SECOND>
__device__ __forceinline__ void
register_scan(const T *__restrict__ centroids, T *tile, int tile_k, const T (&p)[DP],
			  int d, int k, T &best, int &best_c, T &second)
{
	for (int c0 = 0; c0 < k; c0 += tile_k)
	{
		int			tk = min(tile_k, k - c0);

		__syncthreads();
		for (int t = threadIdx.x; t < tk * DP; t += blockDim.x)
		{
			int			c = t / DP,
						j = t % DP;

			tile[t] = j < d ? centroids[(int64_t) (c0 + c) * d + j] : (T) 0;
		}
		__syncthreads();
		for (int c = 0; c < tk; c++)
		{
			T			s = 0;

#pragma unroll
			for (int j = 0; j < DP; j++)
			{
				T			t = p[j] - tile[c * DP + j];

				s = fma(t, t, s);
			}
			if (s < best)
			{
				if (SECOND)
					second = best;
				best = s;
				best_c = c0 + c;
			}
			else if (SECOND && s < second)
				second = s;
		}
	}
}

#endif							/* GC_REGISTER_SCAN_CUH */
