/*-------------------------------------------------------------------------
 *
 * update.cu
 *	  Everything in a Lloyd iteration after labeling, on the GPU:
 *
 *	  - centre_rows: the float32 copy of the data, centred on the
 *		bounding box, that the labeling kernels read;
 *	  - accumulate_clusters: per-cluster sums of the points as exact
 *		64-bit fixed-point integers (gc_quantize; times the row's weight
 *		for weighted rows, whose cluster counts are weights), privatised in shared
 *		memory per block when k * (d + 1) words fit (the paper's
 *		divide-and-conquer partial sums), flushed with one atomic per word;
 *		integer sums make the result independent of the order of atomics,
 *		and let an iteration update the previous sums with the points that
 *		changed cluster only (added to the new, subtracted from the old):
 *		the same sums as a full recount, at a cost that falls as k-means
 *		converges;
 *	  - update_centroids: the new centroids (gc_dequantize_mean, the same
 *		arithmetic as the CPU reference), their float copies and norms, and
 *		the sum of their squared shifts for the convergence test, each
 *		dimension's term quantised (units of 2^-shift_exp) and summed as
 *		a 64-bit integer: the CPU's sum to the bit (engine/tolerance.c);
 *	  - normalize_centroids: spherical k-means' return of the updated
 *		centroids to unit length (the cosine metric);
 *	  - score_points: exact double distances to the assigned centroids
 *		(their terms staged with coalesced reads, staged_terms.cuh),
 *		cluster sizes and per-block inertia partials (reduced in a fixed
 *		order, so the inertia is reproducible).
 *
 * IDENTIFICATION
 *	  cuda/update.cu
 *
 *-------------------------------------------------------------------------
 */
#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"
#include "staged_terms.cuh"

#define ELEMENT_THREADS 256
#define CLUSTER_THREADS 128

static int
grid_for(int64_t work, int threads, int cap)
{
	int64_t		blocks = (work + threads - 1) / threads;

	return (int) (blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
}

__global__ void
centre_rows_kernel(const double *__restrict__ x64, const double *__restrict__ offset,
				   int64_t total, int d, float *__restrict__ x32)
{
	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
		x32[e] = (float) (x64[e] - offset[e % d]);
}

GcStatus
launch_centre_rows(const double *x64, const double *offset, int64_t n, int d,
				   float *x32, cudaStream_t stream, GcError *err)
{
	int64_t		total = n * d;

	centre_rows_kernel<<<grid_for(total, ELEMENT_THREADS, 65535), ELEMENT_THREADS, 0, stream>>>(
		x64, offset, total, d, x32);
	GC_CUDA_LAUNCHED("centre_rows", err);
	return GC_OK;
}

/* A row's weight as the integer it is (1 for unweighted rows) */
__device__ __forceinline__ unsigned long long
row_weight(const double *weights, int64_t i)
{
	return weights != NULL ? (unsigned long long) (long long) weights[i] : 1ULL;
}

/*
 * The points whose label changed, as a list (one thread per point, one
 * atomic per warp); their order in the list does not matter, since the
 * sums are exact integers
 */
__global__ void
collect_moved_kernel(const int32_t *__restrict__ labels,
					 const int32_t *__restrict__ old_labels, int64_t n,
					 int32_t *__restrict__ moved, unsigned int *moved_count)
{
	for (int64_t base = (int64_t) blockIdx.x * blockDim.x; base < n;
		 base += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		i = base + threadIdx.x;
		bool		mine = i < n && labels[i] != old_labels[i];
		unsigned	mask = __ballot_sync(0xffffffffu, mine);
		int			lane = threadIdx.x & 31;
		unsigned	first = 0;

		if (lane == 0 && mask != 0)
			first = atomicAdd(moved_count, (unsigned) __popc(mask));
		first = __shfl_sync(0xffffffffu, first, 0);
		if (mine)
			moved[first + __popc(mask & ((1u << lane) - 1))] = (int32_t) i;
	}
}

/*
 * One thread per coordinate of a moved point, so that reads are coalesced
 * whatever d is: added to its new cluster and, unless it had none,
 * subtracted from its old one
 */
template <bool SHARED>
__global__ void
accumulate_clusters_kernel(const double *__restrict__ x64,
						   const double *__restrict__ weights,
						   const int32_t *__restrict__ labels,
						   const int32_t *__restrict__ old_labels,
						   const int32_t *__restrict__ moved,
						   const unsigned int *moved_count,
						   const double *__restrict__ offset,
						   const double *__restrict__ scale, int d, int k,
						   unsigned long long *sums, unsigned long long *counts)
{
	extern __shared__ unsigned long long private_sums[];
	unsigned long long *s_sums = SHARED ? private_sums : sums;
	unsigned long long *s_counts = SHARED ? private_sums + (size_t) k * d : counts;
	int64_t		total = (int64_t) *moved_count * d;
	int64_t		words = (int64_t) k * (d + 1);

	if (SHARED)
	{
		for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
			private_sums[w] = 0;
		__syncthreads();
	}
	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		m = e / d;
		int			j = (int) (e - m * d);
		int64_t		i = moved[m];
		int			l = labels[i],
					old = old_labels[i];
		unsigned long long w = row_weight(weights, i);
		unsigned long long q = w * (unsigned long long) gc_quantize(x64[i * d + j], offset[j], scale[j]);

		atomicAdd(&s_sums[(int64_t) l * d + j], q);
		if (j == 0)
			atomicAdd(&s_counts[l], w);
		if (old >= 0)
		{
			atomicAdd(&s_sums[(int64_t) old * d + j], 0ULL - q);
			if (j == 0)
				atomicAdd(&s_counts[old], 0ULL - w);
		}
	}
	if (SHARED)
	{
		__syncthreads();
		for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
			if (private_sums[w] != 0)
				atomicAdd(&sums[w], private_sums[w]);	/* counts follow sums */
	}
}

GcStatus
launch_accumulate_clusters(const double *x64, const double *weights,
						   const int32_t *labels,
						   const int32_t *old_labels, int32_t *moved,
						   unsigned int *moved_count, const double *offset,
						   const double *scale, int64_t n, int d, int k,
						   unsigned long long *sums, unsigned long long *counts,
						   cudaStream_t stream, GcError *err)
{
	/*
	 * Per device (the attribute belongs to its context), published only
	 * once the kernel is configured: the GPU service's runner threads
	 * launch on several devices at once
	 */
	static int	shared_limits[GC_CUDA_MAX_DEVICES];
	size_t		shared_bytes = sizeof(unsigned long long) * (size_t) k * (d + 1);
	int64_t		total = n * d;		/* at most; the kernels stop at the moved count */
	int			device = 0,
				shared_limit = 0,
				sms = 0;

	GC_CUDA_TRY(cudaGetDevice(&device), err);
	if (gc_cuda_multiprocessors(&sms, err) != GC_OK)
		return err->status;
	if (device < GC_CUDA_MAX_DEVICES)
		shared_limit = __atomic_load_n(&shared_limits[device], __ATOMIC_ACQUIRE);
	if (shared_limit <= 0)
	{
		GC_CUDA_TRY(cudaDeviceGetAttribute(&shared_limit,
										   cudaDevAttrMaxSharedMemoryPerBlockOptin,
										   device), err);
		GC_CUDA_TRY(cudaFuncSetAttribute(accumulate_clusters_kernel<true>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 shared_limit), err);
		if (device < GC_CUDA_MAX_DEVICES)
			__atomic_store_n(&shared_limits[device], shared_limit, __ATOMIC_RELEASE);
	}
	GC_CUDA_TRY(cudaMemsetAsync(moved_count, 0, sizeof(unsigned int), stream), err);
	collect_moved_kernel<<<grid_for(n, ELEMENT_THREADS, 4 * sms), ELEMENT_THREADS, 0, stream>>>(
		labels, old_labels, n, moved, moved_count);
	GC_CUDA_LAUNCHED("collect_moved", err);
	/* sums and counts are contiguous, so a shared flush covers both */
	if (shared_bytes <= (size_t) shared_limit && counts == sums + (size_t) k * d)
		accumulate_clusters_kernel<true><<<grid_for(total, ELEMENT_THREADS, 2 * sms),
			ELEMENT_THREADS, shared_bytes, stream>>>(x64, weights, labels, old_labels, moved,
													 moved_count, offset, scale, d, k, sums, counts);
	else
		accumulate_clusters_kernel<false><<<grid_for(total, ELEMENT_THREADS, 65535),
			ELEMENT_THREADS, 0, stream>>>(x64, weights, labels, old_labels, moved, moved_count,
										  offset, scale, d, k, sums, counts);
	GC_CUDA_LAUNCHED("accumulate_clusters", err);
	return GC_OK;
}

/* Sum of v over the block; the result is valid in thread 0 */
template <typename T>
__device__ T
block_sum(T v)
{
	__shared__ T warp_sums[32];
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;

	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, off);
	__syncthreads();
	if (lane == 0)
		warp_sums[warp] = v;
	__syncthreads();
	if (warp == 0)
	{
		v = lane < (int) (blockDim.x >> 5) ? warp_sums[lane] : (T) 0;
		for (int off = 16; off > 0; off >>= 1)
			v += __shfl_down_sync(0xffffffffu, v, off);
	}
	return v;
}

/* One block per cluster; an empty cluster keeps its centroid */
__global__ void
update_centroids_kernel(const unsigned long long *__restrict__ sums,
						const unsigned long long *__restrict__ counts,
						const double *__restrict__ offset,
						const double *__restrict__ scale, int d,
						double *__restrict__ c64, float *__restrict__ c32,
						float *__restrict__ cnorm, int shift_exp,
						unsigned long long *shift_sum)
{
	int			c = blockIdx.x;
	long long	count = (long long) counts[c];
	unsigned long long shift2 = 0;
	float		norm = 0.0f;

	for (int j = threadIdx.x; j < d; j += blockDim.x)
	{
		size_t		w = (size_t) c * d + j;
		double		old = c64[w];
		double		m = count > 0 ?
			gc_dequantize_mean((long long) sums[w], count, offset[j], scale[j]) : old;
		float		f = (float) (m - offset[j]);

		shift2 += (unsigned long long) gc_quantize_wide(gc_sqdiff(m, old), shift_exp);
		c64[w] = m;
		c32[w] = f;
		norm = fmaf(f, f, norm);
	}
	shift2 = block_sum(shift2);
	norm = block_sum(norm);
	if (threadIdx.x == 0)
	{
		cnorm[c] = norm;
		if (shift_sum != NULL)
			atomicAdd(shift_sum, shift2);
	}
}

GcStatus
launch_update_centroids(const unsigned long long *sums,
						const unsigned long long *counts, const double *offset,
						const double *scale, int d, int k, double *c64,
						float *c32, float *cnorm, int shift_exp,
						unsigned long long *shift_sum, cudaStream_t stream, GcError *err)
{
	update_centroids_kernel<<<k, CLUSTER_THREADS, 0, stream>>>(
		sums, counts, offset, scale, d, c64, c32, cnorm, shift_exp, shift_sum);
	GC_CUDA_LAUNCHED("update_centroids", err);
	return GC_OK;
}

/*
 * Spherical k-means (the cosine metric): each updated centroid of a
 * non-empty cluster back to unit length by gc_unit_normalize in one thread
 * (index order: the CPU's arithmetic, to the bit), or, where the mean is
 * zero (no direction), back to prev, the centroid before the update, as
 * the CPU keeps it; then its float copy and norm as update_centroids makes
 * them, and its shift from prev for the convergence test.  Launched after
 * update_centroids, which then leaves the shift to this kernel.
 */
__global__ void
normalize_centroids_kernel(const unsigned long long *__restrict__ counts,
						   const double *__restrict__ offset, int d,
						   double *__restrict__ c64, const double *__restrict__ prev,
						   float *__restrict__ c32, float *__restrict__ cnorm,
						   int shift_exp, unsigned long long *shift_sum)
{
	__shared__ bool directed;
	int			c = blockIdx.x;
	double	   *row = c64 + (size_t) c * d;
	unsigned long long shift2 = 0;
	float		norm = 0.0f;

	if (counts[c] == 0)
		return;					/* kept as it was, already of unit length */
	if (threadIdx.x == 0)
		directed = gc_unit_normalize(row, d);
	__syncthreads();
	/* a mean of no direction (rows that cancel) keeps the centroid */
	if (!directed)
		for (int j = threadIdx.x; j < d; j += blockDim.x)
			row[j] = prev[(size_t) c * d + j];
	for (int j = threadIdx.x; j < d; j += blockDim.x)
	{
		size_t		w = (size_t) c * d + j;
		double		m = row[j];
		float		f = (float) (m - offset[j]);

		shift2 += (unsigned long long) gc_quantize_wide(gc_sqdiff(m, prev[w]), shift_exp);
		c32[w] = f;
		norm = fmaf(f, f, norm);
	}
	shift2 = block_sum(shift2);
	norm = block_sum(norm);
	if (threadIdx.x == 0)
	{
		cnorm[c] = norm;
		atomicAdd(shift_sum, shift2);
	}
}

GcStatus
launch_normalize_centroids(const unsigned long long *counts, const double *offset,
						   int d, int k, double *c64, const double *prev, float *c32,
						   float *cnorm, int shift_exp, unsigned long long *shift_sum,
						   cudaStream_t stream, GcError *err)
{
	normalize_centroids_kernel<<<k, CLUSTER_THREADS, 0, stream>>>(
		counts, offset, d, c64, prev, c32, cnorm, shift_exp, shift_sum);
	GC_CUDA_LAUNCHED("normalize_centroids", err);
	return GC_OK;
}

/*
 * Squared distances to the assigned centroids (times the rows' weights),
 * summed exactly as 128-bit integers (gc_quantize_wide): per block, then
 * over the blocks' partials; the terms staged with coalesced reads
 * (staged_terms.cuh)
 */
#define SCORE_ROWS 128			/* the rows of a block, a thread each */
#define SCORE_COLUMNS 16		/* a row's terms staged at a time: a line */

__global__ void
__launch_bounds__(SCORE_ROWS)
score_points_kernel(const double *__restrict__ x64, const double *__restrict__ weights,
					const double *__restrict__ c64,
					const int32_t *__restrict__ labels, int64_t n, int d,
					int inertia_exp, double *__restrict__ distances,
					gc_u128 *__restrict__ partials, unsigned long long *sizes)
{
	__shared__ StagedTerms<SCORE_ROWS, SCORE_COLUMNS> staged;
	__shared__ gc_u128 warp_sums[SCORE_ROWS / 32];
	gc_u128		total = 0;
	int			lane = threadIdx.x & 31,
				warp = threadIdx.x >> 5;

	/* whole blocks go round the loop together: staging synchronises them */
	for (int64_t base = (int64_t) blockIdx.x * SCORE_ROWS; base < n;
		 base += (int64_t) gridDim.x * SCORE_ROWS)
	{
		int64_t		i = base + threadIdx.x;
		int			rows = n - base < SCORE_ROWS ? (int) (n - base) : SCORE_ROWS;
		bool		mine = threadIdx.x < rows;
		int			l = mine ? labels[i] : 0;
		double		d2 = staged_sqdist(staged, x64 + base * d, rows, d,
									   c64 + (int64_t) l * d, mine);

		if (mine)
		{
			total += gc_quantize_wide(d2, inertia_exp) * (gc_u128) row_weight(weights, i);
			atomicAdd(&sizes[l], 1ULL);
			if (distances != NULL)
				distances[i] = sqrt(d2);
		}
	}
	total = gc_warp_sum_u128(total);
	if (lane == 0)
		warp_sums[warp] = total;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		for (int w = 1; w < SCORE_ROWS / 32; w++)
			total += warp_sums[w];
		partials[blockIdx.x] = total;
	}
}

GcStatus
launch_score_points(const double *x64, const double *weights, const double *c64,
					const int32_t *labels,
					int64_t n, int d, int inertia_exp, double *distances,
					gc_u128 *partials, int npartials, unsigned long long *sizes,
					cudaStream_t stream, GcError *err)
{
	score_points_kernel<<<npartials, SCORE_ROWS, 0, stream>>>(
		x64, weights, c64, labels, n, d, inertia_exp, distances, partials, sizes);
	GC_CUDA_LAUNCHED("score_points", err);
	return GC_OK;
}
