/*-------------------------------------------------------------------------
 *
 * pruned_kernels.cu
 *	  Labeling pruned by the triangle inequality (Wu & Hong, 2011):
 *
 *	  - rank_centroids: the inter-centroid distance matrix ICD (k x k) and,
 *		per centroid, the ranked index RID of all centroids by distance
 *		from it (one block per row, a bitonic sort in shared memory);
 *	  - assign_points_pruned: each point starts from its previous
 *		centroid a, tries centroids in RID[a] order (reading the row's
 *		distances already in rank order, and the centroids from shared
 *		memory when all of them fit), and stops at the first
 *		j with ICD[a][j] > d(x, a) + best, beyond which no centroid can be
 *		closer (a slack of 1e-5 absorbs float rounding); the labels equal
 *		those of the register kernel, which computes distances the same
 *		way.  The number of distances each point needed is recorded, for
 *		the workload re-ordering of the second epoch and the hybrid's cost
 *		model;
 *	  - order_by_work / gather_rows: the re-ordering itself (points sorted
 *		by decreasing work, so warps are balanced and reads stay
 *		coalesced), and its undoing.
 *
 * IDENTIFICATION
 *	  cuda/pruned_kernels.cu
 *
 *-------------------------------------------------------------------------
 */
#include <cub/device/device_radix_sort.cuh>
#include <float.h>

#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define PRUNED_THREADS 256
#define PRUNED_SLACK 1e-5f
#define PRUNED_BLOCK 1024

__global__ void
centroid_distances_kernel(const float *__restrict__ c32, int k, int d,
						  float *__restrict__ icd)
{
	int64_t		e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (e < (int64_t) k * k)
	{
		int			a = (int) (e / k),
					b = (int) (e % k);
		float		s = 0.0f;

		for (int j = 0; j < d; j++)
		{
			float		t = c32[(int64_t) a * d + j] - c32[(int64_t) b * d + j];

			s = fmaf(t, t, s);
		}
		icd[e] = sqrtf(s);
	}
}

/* Sort one ICD row by (distance, index) into its RID row */
__global__ void
rank_row_kernel(const float *__restrict__ icd, int k, int k2, int32_t *__restrict__ rid,
				float *__restrict__ icd_ranked)
{
	extern __shared__ unsigned char rank_smem[];
	float	   *key = (float *) rank_smem;
	int		   *idx = (int *) (key + k2);
	int			a = blockIdx.x;

	for (int i = threadIdx.x; i < k2; i += blockDim.x)
	{
		key[i] = i < k ? icd[(int64_t) a * k + i] : FLT_MAX;
		idx[i] = i;
	}
	__syncthreads();
	for (int size = 2; size <= k2; size <<= 1)
		for (int stride = size >> 1; stride > 0; stride >>= 1)
		{
			for (int i = threadIdx.x; i < k2; i += blockDim.x)
			{
				int			j = i ^ stride;

				if (j > i)
				{
					bool		ascending = (i & size) == 0;
					bool		greater = key[i] > key[j] || (key[i] == key[j] && idx[i] > idx[j]);

					if (greater == ascending)
					{
						float		tk = key[i];
						int			ti = idx[i];

						key[i] = key[j];
						idx[i] = idx[j];
						key[j] = tk;
						idx[j] = ti;
					}
				}
			}
			__syncthreads();
		}
	for (int i = threadIdx.x; i < k; i += blockDim.x)
	{
		rid[(int64_t) a * k + i] = idx[i];
		icd_ranked[(int64_t) a * k + i] = key[i];
	}
}

GcStatus
launch_rank_centroids(const float *c32, int k, int d, float *icd, int32_t *rid,
					  float *icd_ranked, cudaStream_t stream, GcError *err)
{
	int64_t		pairs = (int64_t) k * k;
	int			k2 = 1;

	while (k2 < k)
		k2 <<= 1;
	centroid_distances_kernel<<<(unsigned) ((pairs + 255) / 256), 256, 0, stream>>>(c32, k, d, icd);
	GC_CUDA_LAUNCHED("centroid_distances", err);
	rank_row_kernel<<<k, 256, (size_t) k2 * (sizeof(float) + sizeof(int)), stream>>>(icd, k, k2, rid,
																				  icd_ranked);
	GC_CUDA_LAUNCHED("rank_row", err);
	return GC_OK;
}

/*
 * Squared distance from the point (registers p, or x in global memory when
 * DP is 0) to centroid c, read from shared memory rows of stride DP + 1
 * (the odd stride spreads threads reading different centroids over the
 * banks) or from global memory
 */
template <int DP, bool SHARED>
__device__ __forceinline__ float
dist2_to(const float *p, const float *centroids, const float *__restrict__ x,
		 int d, int c)
{
	float		s = 0.0f;

	if (DP > 0)
	{
		const float *row = centroids + (SHARED ? c * (DP + 1) : (int64_t) c * d);

#pragma unroll
		for (int j = 0; j < DP; j++)
		{
			float		t = p[j] - (SHARED || j < d ? row[j] : 0.0f);

			s = fmaf(t, t, s);
		}
	}
	else
		for (int j = 0; j < d; j++)
		{
			float		t = x[j] - centroids[(int64_t) c * d + j];

			s = fmaf(t, t, s);
		}
	return s;
}

/*
 * One thread per point over a grid-strided range; the block first copies
 * every centroid into shared memory when they fit (SHARED), since the
 * walk reads centroids in a different order in every thread
 */
template <int DP, bool SHARED>
__global__ void
__launch_bounds__(PRUNED_BLOCK)
assign_points_pruned_kernel(const float *__restrict__ x32,
							const float *__restrict__ c32,
							const float *__restrict__ icd_ranked,
							const int32_t *__restrict__ rid, int64_t n, int d,
							int k, int32_t *__restrict__ labels,
							int32_t *__restrict__ work,
							unsigned long long *changed,
							unsigned long long *work_total)
{
	extern __shared__ float pruned_centroids[];
	const float *centroids = SHARED ? pruned_centroids : c32;
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;
	int64_t		end = (n + stride - 1) / stride * stride;
	unsigned long long block_work = 0,
				block_moved = 0;

	if (SHARED)
	{
		for (int e = threadIdx.x; e < k * (DP + 1); e += blockDim.x)
		{
			int			c = e / (DP + 1),
						j = e % (DP + 1);

			pruned_centroids[e] = j < d ? c32[(int64_t) c * d + j] : 0.0f;
		}
		__syncthreads();
	}

	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride)
	{
		float		p[DP > 0 ? DP : 1];
		int			w = 0;
		bool		moved = false;

		if (i < n)
		{
			const float *x = x32 + i * d;
			int			a = labels[i];
			const int32_t *ranks = rid + (int64_t) a * k;
			const float *gaps = icd_ranked + (int64_t) a * k;
			float		best2,
						da,
						best;
			int			best_c = a;

#pragma unroll
			for (int j = 0; j < (DP > 0 ? DP : 1); j++)
				p[j] = (DP > 0 && j < d) ? x[j] : 0.0f;
			best2 = dist2_to<DP, SHARED>(p, centroids, x, d, a);
			da = sqrtf(best2);
			best = da;
			w = 1;
			for (int r = 1; r < k; r++)
			{
				int			j;
				float		s;

				if (gaps[r] > (da + best) * (1.0f + PRUNED_SLACK))
					break;
				j = ranks[r];
				s = dist2_to<DP, SHARED>(p, centroids, x, d, j);
				w++;
				if (s < best2 || (s == best2 && j < best_c))
				{
					best2 = s;
					best = sqrtf(s);
					best_c = j;
				}
			}
			moved = best_c != a;
			labels[i] = best_c;
			work[i] = w;
		}
		block_work += w;
		block_moved += moved;
	}
	for (int off = 16; off > 0; off >>= 1)
	{
		block_work += __shfl_down_sync(0xffffffffu, block_work, off);
		block_moved += __shfl_down_sync(0xffffffffu, block_moved, off);
	}
	if ((threadIdx.x & 31) == 0)
	{
		if (block_moved)
			atomicAdd(changed, block_moved);
		atomicAdd(work_total, block_work);
	}
}

template <int DP>
static GcStatus
launch_pruned(const float *x32, const float *c32, const float *icd_ranked,
			  const int32_t *rid, int64_t n, int d, int k, int32_t *labels,
			  int32_t *work, unsigned long long *changed,
			  unsigned long long *work_total, cudaStream_t stream, GcError *err)
{
	int			device = 0,
				shared_limit = 0,
				sms = 0;
	size_t		shared_bytes = sizeof(float) * (size_t) k * (DP + 1);
	int64_t		blocks_needed = (n + PRUNED_BLOCK - 1) / PRUNED_BLOCK;

	/* the shared-memory limit asked per launch: the GPU service launches on several devices */
	GC_CUDA_TRY(cudaGetDevice(&device), err);
	GC_CUDA_TRY(cudaDeviceGetAttribute(&shared_limit,
									   cudaDevAttrMaxSharedMemoryPerBlockOptin, device), err);
	if (gc_cuda_multiprocessors(&sms, err) != GC_OK)
		return err->status;
	if (DP > 0 && shared_bytes <= (size_t) shared_limit)
	{
		int			per_sm = (int) (shared_limit / shared_bytes);
		int64_t		blocks = (int64_t) sms * (per_sm < 2 ? per_sm : 2);

		GC_CUDA_TRY(cudaFuncSetAttribute(assign_points_pruned_kernel<DP, true>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 (int) shared_bytes), err);
		assign_points_pruned_kernel<DP, true><<<(unsigned) (blocks < blocks_needed ? blocks : blocks_needed),
			PRUNED_BLOCK, shared_bytes, stream>>>(x32, c32, icd_ranked, rid, n, d, k,
												  labels, work, changed, work_total);
	}
	else
		assign_points_pruned_kernel<DP, false><<<(unsigned) (blocks_needed < 65535 ? blocks_needed : 65535),
			PRUNED_BLOCK, 0, stream>>>(x32, c32, icd_ranked, rid, n, d, k, labels,
									   work, changed, work_total);
	GC_CUDA_LAUNCHED("assign_points_pruned", err);
	return GC_OK;
}

GcStatus
launch_assign_points_pruned(const float *x32, const float *c32, const float *icd_ranked,
							const int32_t *rid, int64_t n, int d, int k,
							int32_t *labels, int32_t *work,
							unsigned long long *changed,
							unsigned long long *work_total,
							cudaStream_t stream, GcError *err)
{
#define PRUNED_ARGS x32, c32, icd_ranked, rid, n, d, k, labels, work, changed, work_total, stream, err
	if (d <= 2)
		return launch_pruned<2>(PRUNED_ARGS);
	if (d <= 4)
		return launch_pruned<4>(PRUNED_ARGS);
	if (d <= 8)
		return launch_pruned<8>(PRUNED_ARGS);
	if (d <= 16)
		return launch_pruned<16>(PRUNED_ARGS);
	if (d <= 32)
		return launch_pruned<32>(PRUNED_ARGS);
	return launch_pruned<0>(PRUNED_ARGS);
#undef PRUNED_ARGS
}

__global__ void
iota_kernel(int64_t n, int32_t *out)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		out[i] = (int32_t) i;
}

/*
 * order[p] = the position, in the current layout, of the point that goes
 * to position p: points by decreasing work (stable, so ties keep order)
 */
GcStatus
launch_order_by_work(const int32_t *work, int64_t n, int32_t *order,
					 int32_t *keys_tmp, int32_t *iota_tmp, void **scratch,
					 size_t *scratch_bytes, cudaStream_t stream, GcError *err)
{
	size_t		need = 0;

	GC_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(NULL, need, work, keys_tmp,
														  iota_tmp, order, (int) n,
														  0, 32, stream), err);
	if (need > *scratch_bytes)
	{
		cudaFree(*scratch);
		*scratch = NULL;
		*scratch_bytes = 0;
		GC_CUDA_TRY(cudaMalloc(scratch, need), err);
		*scratch_bytes = need;
	}
	iota_kernel<<<1024, 256, 0, stream>>>(n, iota_tmp);
	GC_CUDA_LAUNCHED("iota", err);
	GC_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(*scratch, need, work, keys_tmp,
														  iota_tmp, order, (int) n,
														  0, 32, stream), err);
	return GC_OK;
}

/* dst[p] = src[order[p]] for rows of width elements of size T, or the inverse */
template <typename T>
__global__ void
gather_rows_kernel(const T *__restrict__ src, const int32_t *__restrict__ order,
				   int64_t n, int width, bool inverse, T *__restrict__ dst)
{
	int64_t		total = n * width;

	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		p = e / width;
		int			j = (int) (e - p * width);
		int64_t		q = order[p];

		if (inverse)
			dst[q * width + j] = src[e];
		else
			dst[e] = src[q * width + j];
	}
}

template <typename T>
GcStatus
launch_gather_rows(const T *src, const int32_t *order, int64_t n, int width,
				   bool inverse, T *dst, cudaStream_t stream, GcError *err)
{
	int64_t		blocks = (n * width + 255) / 256;

	gather_rows_kernel<T><<<(unsigned) (blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), 256, 0, stream>>>(
		src, order, n, width, inverse, dst);
	GC_CUDA_LAUNCHED("gather_rows", err);
	return GC_OK;
}

template GcStatus launch_gather_rows<float>(const float *, const int32_t *, int64_t, int, bool, float *, cudaStream_t, GcError *);
template GcStatus launch_gather_rows<double>(const double *, const int32_t *, int64_t, int, bool, double *, cudaStream_t, GcError *);
template GcStatus launch_gather_rows<int32_t>(const int32_t *, const int32_t *, int64_t, int, bool, int32_t *, cudaStream_t, GcError *);
template GcStatus launch_gather_rows<uint64_t>(const uint64_t *, const int32_t *, int64_t, int, bool, uint64_t *, cudaStream_t, GcError *);
