/*-------------------------------------------------------------------------
 *
 * seeding_batched.cu
 *	  Batched greedy k-means++ on the GPU, k-means||'s recluster from
 *	  GC_BATCHED_MIN_K centres, choosing the same rows as the CPU
 *	  reference (engine/seeding_batched.c, which describes the algorithm).
 *
 * A step is a few kernels, and the host reads nothing until the last
 * step's picks:
 *
 *	- keys: every row not yet picked bids gc_race_key(u(row, seed,
 *	  gc_seed_stream(t, 0)), w D^2) with its own index below the bid (the
 *	  CPU's keys, bit for bit); picked rows bid GC_RACE_NONE;
 *	- a radix sort of the keys (they are distinct but for GC_RACE_NONE):
 *	  the first b L are the step's candidates, in key order, as
 *	  gc_batched_select gives them;
 *	- gains: each row adds w (D^2 - min(D^2, |x - c|^2)), quantised, for
 *	  every candidate, reading itself once for BATCHED_GROUP of them (the
 *	  distances summed in dimension order, stopped once all pass D^2,
 *	  which decides as the whole sums do), the groups in blocks side by
 *	  side, a block's rows summed exactly into one 128-bit partial per
 *	  candidate, and one warp per candidate sums the partials; a thread
 *	  per group chooses its pick (gc_batched_best, as gc_batched_choose
 *	  does);
 *	- lower: each row's D^2 falls to its exact distance to the nearest
 *	  pick where closer (set at step 0's pick), and the picks are marked.
 *
 * All device memory belongs to one set of buffers, freed on every exit.
 *
 * IDENTIFICATION
 *	  cuda/seeding_batched.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>

#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define BATCHED_THREADS 256
#define BATCHED_BLOCKS 1024		/* most blocks, and gain partials per candidate */
#define BATCHED_GROUP 8			/* candidates (or picks) per read of a row */

/* Device buffers of one batched seeding */
typedef struct BatchedBuffers
{
	double	   *mind2;			/* n: D^2 */
	unsigned char *taken;		/* n: picked */
	unsigned long long *keys;	/* n: the step's race */
	unsigned long long *sorted; /* n: the keys in order */
	long long  *drawn;			/* the step's candidates (most b L) */
	long long  *picks;			/* every step's picks, in order (k) */
	gc_u128    *partials;		/* blocks x b L gain partials */
	gc_u128    *gains;			/* b L */
	void	   *sort_scratch;
	size_t		sort_bytes;
} BatchedBuffers;

/* D^2 = 1 (step 0 races on the weights alone), nothing taken */
__global__ void
batched_reset_kernel(int64_t n, double *__restrict__ mind2, unsigned char *__restrict__ taken)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		mind2[i] = 1.0;
		taken[i] = 0;
	}
}

/* Every row's key in the race of draw key (gc_draw_key(seed, stream)) */
__global__ void
batched_keys_kernel(const uint64_t *__restrict__ hashes, const double *__restrict__ weights,
					const double *__restrict__ mind2, const unsigned char *__restrict__ taken,
					int64_t n, uint64_t draw_key, int inertia_exp,
					unsigned long long *__restrict__ keys)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		double		w = weights != NULL ? __dmul_rn(mind2[i], weights[i]) : mind2[i];

		keys[i] = taken[i] ? GC_RACE_NONE :
			gc_race_key(gc_unit_draw_keyed(hashes[i], draw_key), gc_race_weight(w, inertia_exp), i);
	}
}

/*
 * Squared distances of x to the group's g centres, each summed in
 * dimension order as gc_sqdist_exact does, all GC_SQDIST_STRIDE terms at
 * a time, the row read once for the group; stopped once every one passes
 * bound (then none is below it).  true: every sum is whole.
 */
__device__ __forceinline__ bool
group_sqdist(const double *__restrict__ x, const double *const *centre, int g, int d,
			 double bound, double *s)
{
	int			j = 0;

#pragma unroll
	for (int u = 0; u < BATCHED_GROUP; u++)
		s[u] = 0.0;
	for (; j + GC_SQDIST_STRIDE <= d; j += GC_SQDIST_STRIDE)
	{
		bool		far = true;

		for (int t = 0; t < GC_SQDIST_STRIDE; t++)
		{
			double		xv = x[j + t];

#pragma unroll
			for (int u = 0; u < BATCHED_GROUP; u++)
				if (u < g)
					s[u] = gc_sqdist_add(s[u], xv, centre[u][j + t]);
		}
#pragma unroll
		for (int u = 0; u < BATCHED_GROUP; u++)
			if (u < g)
				far = far && s[u] > bound;
		if (far)
			return false;
	}
	for (; j < d; j++)
	{
		double		xv = x[j];

#pragma unroll
		for (int u = 0; u < BATCHED_GROUP; u++)
			if (u < g)
				s[u] = gc_sqdist_add(s[u], xv, centre[u][j]);
	}
	return true;
}

/*
 * Per block, per candidate c of count: the sum over the block's rows of
 * w (q(D^2) - q(min(D^2, |x - c|^2))), into partials[block * count + c];
 * BATCHED_GROUP candidates per read of the rows.  The grid's first index
 * spans the groups of candidates, its second the blocks of rows: the
 * groups run side by side where the rows are few (the recluster's), and
 * the blocks that read the same rows run together, from the L2 cache
 */
__global__ void
__launch_bounds__(BATCHED_THREADS)
batched_gains_kernel(const double *__restrict__ x64, const double *__restrict__ weights,
					 const double *__restrict__ mind2, int64_t n, int d,
					 const long long *__restrict__ drawn, int count, int inertia_exp,
					 gc_u128 *__restrict__ partials)
{
	__shared__ gc_u128 warp_sums[BATCHED_THREADS / 32][BATCHED_GROUP];
	int			c0 = blockIdx.x * BATCHED_GROUP;
	int			g = count - c0 < BATCHED_GROUP ? count - c0 : BATCHED_GROUP;
	const double *centre[BATCHED_GROUP];
	gc_u128		gain[BATCHED_GROUP];

#pragma unroll
	for (int u = 0; u < BATCHED_GROUP; u++)
	{
		centre[u] = x64 + (int64_t) drawn[c0 + (u < g ? u : 0)] * d;
		gain[u] = 0;
	}
	for (int64_t i = (int64_t) blockIdx.y * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.y * blockDim.x)
	{
		double		m = mind2[i];
		double		s[BATCHED_GROUP];
		gc_u128		w = (gc_u128) (weights != NULL ? (unsigned long long) weights[i] : 1ULL),
					q = gc_quantize_wide(m, inertia_exp);

		if (!group_sqdist(x64 + i * d, centre, g, d, m, s))
			continue;
#pragma unroll
		for (int u = 0; u < BATCHED_GROUP; u++)
			if (u < g && s[u] < m)
				gain[u] += (q - gc_quantize_wide(s[u], inertia_exp)) * w;
	}
#pragma unroll
	for (int u = 0; u < BATCHED_GROUP; u++)
	{
		gc_u128		v = gc_warp_sum_u128(gain[u]);

		if ((threadIdx.x & 31) == 0)
			warp_sums[threadIdx.x >> 5][u] = v;
	}
	__syncthreads();
	if (threadIdx.x < g)
	{
		gc_u128		v = 0;

		for (int w = 0; w < BATCHED_THREADS / 32; w++)
			v += warp_sums[w][threadIdx.x];
		partials[(int64_t) blockIdx.y * count + c0 + threadIdx.x] = v;
	}
}

/* Each candidate's gain: its nblocks partials summed by one warp */
__global__ void
batched_sum_kernel(const gc_u128 *__restrict__ partials, int nblocks, int count,
				   gc_u128 *__restrict__ gains)
{
	int			lane = threadIdx.x & 31;

	for (int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); c < count;
		 c += gridDim.x * (blockDim.x >> 5))
	{
		gc_u128		v = 0;

		for (int b = lane; b < nblocks; b += 32)
			v += partials[(int64_t) b * count + c];
		v = gc_warp_sum_u128(v);
		if (lane == 0)
			gains[c] = v;
	}
}

/*
 * D^2 lowered to the nearest of the b picks (set where first), the picks
 * BATCHED_GROUP at a time, each group's sums bounded by D^2 before it (a
 * distance below the new D^2 is below that one, and whole); the picks
 * marked
 */
__global__ void
__launch_bounds__(BATCHED_THREADS)
batched_lower_kernel(const double *__restrict__ x64, int64_t n, int d,
					 const long long *__restrict__ picks, int b, bool first, bool lower,
					 double *__restrict__ mind2, unsigned char *__restrict__ taken)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; lower && i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		double		m = first ? INFINITY : mind2[i];

		for (int j0 = 0; j0 < b; j0 += BATCHED_GROUP)
		{
			int			g = b - j0 < BATCHED_GROUP ? b - j0 : BATCHED_GROUP;
			const double *centre[BATCHED_GROUP];
			double		s[BATCHED_GROUP];

#pragma unroll
			for (int u = 0; u < BATCHED_GROUP; u++)
				centre[u] = x64 + (int64_t) picks[j0 + (u < g ? u : 0)] * d;
			if (!group_sqdist(x64 + i * d, centre, g, d, m, s))
				continue;
#pragma unroll
			for (int u = 0; u < BATCHED_GROUP; u++)
				if (u < g && s[u] < m)
					m = s[u];
		}
		mind2[i] = m;
	}
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < b; j += gridDim.x * blockDim.x)
		taken[picks[j]] = 1;
}

/* The step's count candidates: the rows of its count lowest keys, in key order */
__global__ void
batched_draw_kernel(const unsigned long long *__restrict__ sorted, int count,
					long long *__restrict__ drawn)
{
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x)
		drawn[j] = (long long) (uint32_t) sorted[j];
}

/* The step's b picks: each group's candidate of the highest gain (the first on ties) */
__global__ void
batched_choose_kernel(const long long *__restrict__ drawn, const gc_u128 *__restrict__ gains,
					  int b, int candidates, long long *__restrict__ picks)
{
	for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < b; g += gridDim.x * blockDim.x)
		picks[g] = drawn[candidates > 1 ? gc_batched_best(gains, g, candidates) : g];
}

static void
free_buffers(BatchedBuffers *b)
{
	cudaFree(b->mind2);
	cudaFree(b->taken);
	cudaFree(b->keys);
	cudaFree(b->sorted);
	cudaFree(b->drawn);
	cudaFree(b->picks);
	cudaFree(b->partials);
	cudaFree(b->gains);
	cudaFree(b->sort_scratch);
	(void) cudaGetLastError();
}

/*
 * Step t, done picks before it: the race, the candidates, their gains,
 * the step's picks into b->picks + done, D^2 lowered; on the device alone
 */
static GcStatus
run_step(const double *x64, const uint64_t *hashes, const double *weights, int64_t n, int d,
		 const GcKmeansParams *params, uint64_t seed, int inertia_exp, cudaStream_t stream,
		 BatchedBuffers *b, int t, int done, int grid, int nblocks, GcError *err)
{
	int			np = gc_batched_picks(params->k, t);
	int			candidates = t == 0 ? 1 : gc_batched_candidates(params, n - done, np);
	int			count = np * candidates;
	long long  *picks = b->picks + done;
	dim3		gains_grid((count + BATCHED_GROUP - 1) / BATCHED_GROUP, nblocks);

	batched_keys_kernel<<<grid, BATCHED_THREADS, 0, stream>>>(
		hashes, weights, b->mind2, b->taken, n, gc_draw_key(seed, gc_seed_stream(t, 0)),
		inertia_exp, b->keys);
	GC_CUDA_LAUNCHED("batched_keys", err);
	GC_CUDA_TRY(cub::DeviceRadixSort::SortKeys(b->sort_scratch, b->sort_bytes, b->keys, b->sorted,
											   (int) n, 0, 64, stream), err);
	batched_draw_kernel<<<(count + BATCHED_THREADS - 1) / BATCHED_THREADS, BATCHED_THREADS, 0,
		stream>>>(b->sorted, count, b->drawn);
	GC_CUDA_LAUNCHED("batched_draw", err);
	if (candidates > 1)
	{
		batched_gains_kernel<<<gains_grid, BATCHED_THREADS, 0, stream>>>(
			x64, weights, b->mind2, n, d, b->drawn, count, inertia_exp, b->partials);
		GC_CUDA_LAUNCHED("batched_gains", err);
		batched_sum_kernel<<<(count + 7) / 8, BATCHED_THREADS, 0, stream>>>(
			b->partials, nblocks, count, b->gains);
		GC_CUDA_LAUNCHED("batched_sum", err);
	}
	batched_choose_kernel<<<(np + BATCHED_THREADS - 1) / BATCHED_THREADS, BATCHED_THREADS, 0,
		stream>>>(b->drawn, b->gains, np, candidates, picks);
	GC_CUDA_LAUNCHED("batched_choose", err);
	batched_lower_kernel<<<grid, BATCHED_THREADS, 0, stream>>>(
		x64, n, d, picks, np, t == 0, done + np < params->k, b->mind2, b->taken);
	GC_CUDA_LAUNCHED("batched_lower", err);
	return GC_OK;
}

/* Every step on the device, then their k picks read into chosen */
static GcStatus
run_steps(const double *x64, const uint64_t *hashes, const double *weights, int64_t n, int d,
		  const GcKmeansParams *params, uint64_t seed, int inertia_exp, cudaStream_t stream,
		  BatchedBuffers *b, long long *picks, int64_t *chosen, GcError *err)
{
	int			most = gc_batched_picks(params->k, 1) + 1;
	int64_t		blocks = (n + BATCHED_THREADS - 1) / BATCHED_THREADS;
	int			grid = blocks < BATCHED_BLOCKS ? (int) blocks : BATCHED_BLOCKS;
	int			done = 0;

	ALLOC_OR_RETURN(b->mind2, (size_t) n);
	ALLOC_OR_RETURN(b->taken, (size_t) n);
	ALLOC_OR_RETURN(b->keys, (size_t) n);
	ALLOC_OR_RETURN(b->sorted, (size_t) n);
	ALLOC_OR_RETURN(b->drawn, (size_t) most * GC_MAX_INIT_CANDIDATES);
	ALLOC_OR_RETURN(b->picks, (size_t) params->k);
	ALLOC_OR_RETURN(b->partials, (size_t) grid * most * GC_MAX_INIT_CANDIDATES);
	ALLOC_OR_RETURN(b->gains, (size_t) most * GC_MAX_INIT_CANDIDATES);
	GC_CUDA_TRY(cub::DeviceRadixSort::SortKeys(NULL, b->sort_bytes, b->keys, b->sorted, (int) n,
											   0, 64, stream), err);
	GC_CUDA_TRY(cudaMalloc(&b->sort_scratch, b->sort_bytes > 0 ? b->sort_bytes : 1), err);
	batched_reset_kernel<<<grid, BATCHED_THREADS, 0, stream>>>(n, b->mind2, b->taken);
	GC_CUDA_LAUNCHED("batched_reset", err);
	for (int t = 0; done < params->k; t++)
	{
		if (params->interrupted && params->interrupted())
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		if (run_step(x64, hashes, weights, n, d, params, seed, inertia_exp, stream, b, t, done,
					 grid, grid, err) != GC_OK)
			return err->status;
		done += gc_batched_picks(params->k, t);
	}
	GC_CUDA_TRY(cudaMemcpyAsync(picks, b->picks, sizeof(long long) * params->k,
								cudaMemcpyDeviceToHost, stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(stream), err);
	for (int c = 0; c < params->k; c++)
		chosen[c] = (int64_t) picks[c];
	return GC_OK;
}

GcStatus
launch_batched_kmeanspp(const double *x64, const uint64_t *hashes, const double *weights,
						int64_t n, int d, const GcKmeansParams *params, uint64_t seed,
						int inertia_exp, cudaStream_t stream, int64_t *chosen, GcError *err)
{
	BatchedBuffers b;
	long long  *picks = (long long *) malloc(sizeof(long long) * params->k);
	GcStatus	status;

	memset(&b, 0, sizeof(b));
	if (picks == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	else
		status = run_steps(x64, hashes, weights, n, d, params, seed, inertia_exp, stream, &b,
						   picks, chosen, err);
	(void) cudaStreamSynchronize(stream);
	free_buffers(&b);
	free(picks);
	return status;
}
