/*-------------------------------------------------------------------------
 *
 * bounded_kernels.cu
 *	  Lloyd's labeling with drift bounds (Hamerly, 2010) for the register
 *	  kernel's shapes (d <= GC_REGISTER_MAX_DIM): each point keeps an upper
 *	  bound U on its distance to its centroid and a lower bound L on its
 *	  distance to every other; when the centroids move, U grows by its
 *	  centroid's drift and L shrinks by the largest drift of the others,
 *	  and a point whose U stays below L keeps its label without a
 *	  distance.  Three kernels a pass:
 *
 *	  - centroid_drift: each centroid's drift since the last pass and its
 *		distance to the nearest other centroid (a warp per centroid, in
 *		double, rounded outwards to float); the two largest drifts;
 *	  - bounds_check: the bounds moved, L raised to that separation less U
 *		where higher (Hamerly's s test); where they no longer decide, U is
 *		tightened to the distance to the point's centroid, and points still
 *		undecided are listed (one atomic per warp);
 *	  - bounded_scan: the listed points (or every point, when the bounds
 *		are new), a block's worth at a time over a grid of a few blocks per
 *		multiprocessor, against every centroid through the register
 *		kernel's own scan (register_scan.cuh), so that the labels are the
 *		register kernel's; it keeps the nearest and second-nearest squared
 *		distances, from which U and L are reset.
 *
 *	  The bounds are rigorous in float: with s the float sum of d squared
 *	  float differences, |s - D^2| <= (d + 2) 2^-24 D^2 (about 2e-6 at d =
 *	  32), so U = sqrt(s) (1 + 2^-17) and L = sqrt(s') (1 - 2^-17), both
 *	  rounded outwards, bracket the exact distances; drifts add and
 *	  subtract with directed rounding.  A point keeps its label only when
 *	  U < L (1 - 1e-5): then its centroid's float distance is strictly the
 *	  lowest, and the register kernel would have chosen it too.  When the
 *	  bounds pay is labeler_bounded.cu's question.
 *
 * IDENTIFICATION
 *	  cuda/bounded_kernels.cu
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <math.h>

#include "kmeans_kernels.cuh"
#include "register_scan.cuh"
#include "cuda_check.cuh"

#define BOUNDED_THREADS 256
#define BOUNDED_TILE_FLOATS 8192	/* 32 KB of centroids per tile, as the register kernel */
#define BOUNDED_SLACK 1e-5f		/* a label is kept when U < L (1 - BOUNDED_SLACK) */
#define BOUND_OUT 0x1p-17f		/* relative widening of a bound from a float distance */
#define DRIFT_THREADS 256
#define SCAN_BLOCKS_PER_SM 8		/* the scan's grid: blocks loop over the list */

/* Bounds from float squared distances, widened outwards */
__device__ __forceinline__ float
upper_from(float s)
{
	return __fmul_ru(__fsqrt_ru(s), 1.0f + BOUND_OUT);
}

__device__ __forceinline__ float
lower_from(float s)
{
	return __fmul_rd(__fsqrt_rd(s), 1.0f - BOUND_OUT);
}

__device__ __forceinline__ bool
label_decided(float upper, float lower)
{
	return upper < __fmul_rd(lower, 1.0f - BOUNDED_SLACK);
}

/*
 * The squared distance between two points of floats, in double (exact
 * differences); the callers round it outwards to float
 */
__device__ __forceinline__ double
float_points_sqdist(const float *a, const float *b, int d)
{
	double		s = 0.0;

	for (int j = 0; j < d; j++)
	{
		double		t = (double) a[j] - (double) b[j];

		s += t * t;
	}
	return s;
}

/*
 * One warp per centroid c: drift[c] >= |c32[c] - last[c]|, and
 * separation[c] <= the distance from c to the nearest other centroid
 * (Hamerly's s, doubled)
 */
__global__ void
centroid_drift_kernel(const float *__restrict__ c32, const float *__restrict__ last,
					  int k, int d, float *__restrict__ drift,
					  float *__restrict__ separation)
{
	int			lane = threadIdx.x & 31;

	for (int c = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; c < k;
		 c += (gridDim.x * blockDim.x) >> 5)
	{
		const float *mine = c32 + (int64_t) c * d;
		double		nearest = INFINITY;

		for (int b = lane; b < k; b += 32)
			if (b != c)
				nearest = fmin(nearest, float_points_sqdist(mine, c32 + (int64_t) b * d, d));
		for (int off = 16; off > 0; off >>= 1)
			nearest = fmin(nearest, __shfl_down_sync(0xffffffffu, nearest, off));
		if (lane == 0)
		{
			drift[c] = __double2float_ru(sqrt(float_points_sqdist(mine, last + (int64_t) c * d, d)) *
										 (1.0 + 0x1p-40));
			separation[c] = __double2float_rd(sqrt(nearest) * (1.0 - 0x1p-40));
		}
	}
}

/* The largest drift, its centroid, and the second largest: top[0], top[1], *top_c */
__global__ void
top_drifts_kernel(const float *__restrict__ drift, int k, float *top, int *top_c)
{
	__shared__ float first_sh[DRIFT_THREADS],
				second_sh[DRIFT_THREADS];
	__shared__ int first_c_sh[DRIFT_THREADS];
	float		first = 0.0f,
				second = 0.0f;
	int			first_c = -1;

	for (int c = threadIdx.x; c < k; c += blockDim.x)
	{
		float		v = drift[c];

		if (v > first)
		{
			second = first;
			first = v;
			first_c = c;
		}
		else if (v > second)
			second = v;
	}
	first_sh[threadIdx.x] = first;
	second_sh[threadIdx.x] = second;
	first_c_sh[threadIdx.x] = first_c;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		for (int t = 1; t < (int) blockDim.x; t++)
		{
			float		v = first_sh[t];

			if (v > first)
			{
				second = fmaxf(first, second_sh[t]);
				first = v;
				first_c = first_c_sh[t];
			}
			else
				second = fmaxf(second, v);
		}
		top[0] = first;
		top[1] = second;
		*top_c = first_c;
	}
}

GcStatus
launch_centroid_drift(const float *c32, float *last, int k, int d, float *drift,
					  float *separation, float *top, int *top_c, cudaStream_t stream,
					  GcError *err)
{
	unsigned	blocks = (unsigned) (((int64_t) k * 32 + DRIFT_THREADS - 1) / DRIFT_THREADS);

	centroid_drift_kernel<<<blocks, DRIFT_THREADS, 0, stream>>>(c32, last, k, d, drift,
																 separation);
	GC_CUDA_LAUNCHED("centroid_drift", err);
	top_drifts_kernel<<<1, DRIFT_THREADS, 0, stream>>>(drift, k, top, top_c);
	GC_CUDA_LAUNCHED("top_drifts", err);
	/* the next pass's drifts from here */
	GC_CUDA_TRY(cudaMemcpyAsync(last, c32, sizeof(float) * k * d, cudaMemcpyDeviceToDevice,
								stream), err);
	return GC_OK;
}

/*
 * Move every point's bounds by the drifts; tighten U where they do not
 * decide, and list the points they still do not decide.  L also takes
 * separation[a] - U where larger (every other centroid b is at least
 * |c_a - c_b| - D_a from the point).  work counts the distances computed.
 */
__global__ void
__launch_bounds__(BOUNDED_THREADS)
bounds_check_kernel(const float *__restrict__ x32, const float *__restrict__ c32,
					int64_t n, int d, const int32_t *__restrict__ labels,
					const float *__restrict__ drift, const float *__restrict__ separation,
					const float *__restrict__ top, const int *__restrict__ top_c,
					float *__restrict__ upper, float *__restrict__ lower,
					int32_t *__restrict__ list, unsigned int *list_count,
					unsigned long long *work)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	bool		tightened = false,
				undecided = false;
	int			lane = threadIdx.x & 31;
	unsigned	mask;

	if (i < n)
	{
		int			a = labels[i];
		float		u = __fadd_ru(upper[i], drift[a]),
					l = fmaxf(__fsub_rd(lower[i], a == *top_c ? top[1] : top[0]), 0.0f);

		l = fmaxf(l, __fsub_rd(separation[a], u));
		if (!label_decided(u, l))
		{
			float		s = 0.0f;

			for (int j = 0; j < d; j++)
			{
				float		t = x32[i * d + j] - c32[(int64_t) a * d + j];

				s = fmaf(t, t, s);
			}
			u = upper_from(s);
			l = fmaxf(l, __fsub_rd(separation[a], u));
			tightened = true;
			undecided = !label_decided(u, l);
		}
		upper[i] = u;
		lower[i] = l;
	}
	mask = __ballot_sync(0xffffffffu, undecided);
	if (mask != 0)
	{
		unsigned	base = 0;

		if (lane == 0)
			base = atomicAdd(list_count, (unsigned) __popc(mask));
		base = __shfl_sync(0xffffffffu, base, 0);
		if (undecided)
			list[base + __popc(mask & ((1u << lane) - 1))] = (int32_t) i;
	}
	mask = __ballot_sync(0xffffffffu, tightened);
	if (lane == 0 && mask != 0)
		atomicAdd(work, (unsigned long long) __popc(mask));
}

GcStatus
launch_bounds_check(const float *x32, const float *c32, int64_t n, int d,
					const int32_t *labels, const float *drift, const float *separation,
					const float *top, const int *top_c, float *upper, float *lower,
					int32_t *list, unsigned int *list_count, unsigned long long *work,
					cudaStream_t stream, GcError *err)
{
	unsigned	blocks = (unsigned) ((n + BOUNDED_THREADS - 1) / BOUNDED_THREADS);

	bounds_check_kernel<<<blocks, BOUNDED_THREADS, 0, stream>>>(
		x32, c32, n, d, labels, drift, separation, top, top_c, upper, lower, list,
		list_count, work);
	GC_CUDA_LAUNCHED("bounds_check", err);
	return GC_OK;
}

/*
 * The register kernel's labeling of one point (live) of a block's, with
 * the nearest and second-nearest squared distances, into its bounds
 */
template <int DP>
__device__ __forceinline__ void
scan_point(const float *__restrict__ x, const float *__restrict__ centroids, float *tile,
		   int64_t i, bool live, int d, int k, int32_t *__restrict__ labels,
		   float *__restrict__ upper, float *__restrict__ lower,
		   unsigned long long *changed, unsigned long long *work)
{
	float		p[DP];
	float		best = FLT_MAX,
				second = FLT_MAX;
	int			best_c = 0;
	unsigned	mask;

	register_load_point<float, DP>(x, i, live, d, p);
	register_scan<float, DP, true>(centroids, tile, BOUNDED_TILE_FLOATS / DP, p, d, k, best,
								   best_c, second);
	mask = __ballot_sync(0xffffffffu, live && labels[i] != best_c);
	if ((threadIdx.x & 31) == 0 && mask != 0)
		atomicAdd(changed, (unsigned long long) __popc(mask));
	mask = __ballot_sync(0xffffffffu, live);
	if ((threadIdx.x & 31) == 0 && mask != 0)
		atomicAdd(work, (unsigned long long) __popc(mask) * (unsigned long long) k);
	if (live)
	{
		labels[i] = best_c;
		upper[i] = upper_from(best);
		lower[i] = lower_from(second);
	}
}

/*
 * Positions first .. first + count - 1 of the list (of every row when list
 * is NULL; positions past *list_count have nothing to do), a block's worth
 * at a time over a grid of a few blocks per multiprocessor: the register
 * kernel's labeling of each listed point, with its new bounds
 */
template <int DP>
__global__ void
__launch_bounds__(BOUNDED_THREADS)
bounded_scan_kernel(const float *__restrict__ x, const float *__restrict__ centroids,
					int64_t first, int64_t count, int d, int k,
					const int32_t *__restrict__ list, const unsigned int *list_count,
					int32_t *__restrict__ labels, float *__restrict__ upper,
					float *__restrict__ lower, unsigned long long *changed,
					unsigned long long *work)
{
	__shared__ __align__(16) float tile[BOUNDED_TILE_FLOATS];
	int64_t		end = first + count;

	if (list != NULL && (int64_t) *list_count < end)
		end = (int64_t) *list_count;
	/* whole blocks go round together: the tiles synchronise them */
	for (int64_t block_first = first + (int64_t) blockIdx.x * blockDim.x; block_first < end;
		 block_first += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		pos = block_first + threadIdx.x;
		bool		live = pos < end;

		scan_point<DP>(x, centroids, tile, live ? (list != NULL ? (int64_t) list[pos] : pos) : 0,
					   live, d, k, labels, upper, lower, changed, work);
	}
}

template <int DP>
static void
launch_scan(const float *x32, const float *c32, int64_t first, int64_t count, int d, int k,
			const int32_t *list, const unsigned int *list_count, int32_t *labels,
			float *upper, float *lower, unsigned long long *changed,
			unsigned long long *work, int64_t grid_limit, cudaStream_t stream)
{
	int64_t		blocks = (count + BOUNDED_THREADS - 1) / BOUNDED_THREADS;

	if (blocks > grid_limit)
		blocks = grid_limit;
	bounded_scan_kernel<DP><<<(unsigned) blocks, BOUNDED_THREADS, 0, stream>>>(
		x32, c32, first, count, d, k, list, list_count, labels, upper, lower, changed, work);
}

GcStatus
launch_bounded_scan(const float *x32, const float *c32, int64_t first, int64_t count,
					int d, int k, const int32_t *list, const unsigned int *list_count,
					int32_t *labels, float *upper, float *lower,
					unsigned long long *changed, unsigned long long *work,
					cudaStream_t stream, GcError *err)
{
	int			sms = 0;
	int64_t		grid_limit;

	if (gc_cuda_multiprocessors(&sms, err) != GC_OK)
		return err->status;
	grid_limit = (int64_t) sms * SCAN_BLOCKS_PER_SM;
	if (!register_padded(d, [&](auto dp) {
			launch_scan<decltype(dp)::value>(x32, c32, first, count, d, k, list, list_count,
											 labels, upper, lower, changed, work, grid_limit,
											 stream);
		}))
		return gc_fail(err, GC_ERR_DEVICE, "bounded labeling takes at most %d dimensions",
					   GC_REGISTER_MAX_DIM);
	GC_CUDA_LAUNCHED("bounded_scan", err);
	return GC_OK;
}
