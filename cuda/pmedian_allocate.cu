/*-------------------------------------------------------------------------
 *
 * pmedian_allocate.cu
 *	  The allocation step of location-allocation on the GPU, the paper's
 *	  Algorithm 6 with Lagrangean penalties: one thread per entity scans
 *	  the centres of its group (gathered contiguously beforehand) and keeps
 *	  the cheapest, d(i, c) + penalty[c] * demand[i], lowest index on ties,
 *	  and a centre keeps itself.  For d = 2 and 3 the entity is held in
 *	  registers.  Also the gather of rows and one step of the D-sampling
 *	  race (nearest-centre distances and a 64-bit minimum of race keys).
 *
 * IDENTIFICATION
 *	  cuda/pmedian_allocate.cu
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>

#include "pmedian_math.h"
#include "pmedian_kernels.cuh"
#include "cuda_check.cuh"

#define ALLOCATE_THREADS 128
#define ELEMENT_THREADS 256

static int
blocks_for(int64_t work, int threads)
{
	int64_t		blocks = (work + threads - 1) / threads;

	return (int) (blocks > 0 ? blocks : 1);
}

__global__ void
gather_rows_kernel(const double *__restrict__ x, const int32_t *__restrict__ rows,
				   int64_t total, int d, double *__restrict__ out)
{
	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
		out[e] = x[(int64_t) rows[e / d] * d + e % d];
}

GcStatus
launch_gather_rows(const double *x, const int32_t *rows, int32_t count, int d,
				   double *out, cudaStream_t stream, GcError *err)
{
	int64_t		total = (int64_t) count * d;

	if (total == 0)
		return GC_OK;
	gather_rows_kernel<<<min(blocks_for(total, ELEMENT_THREADS), 65535), ELEMENT_THREADS, 0, stream>>>(
		x, rows, total, d, out);
	GC_CUDA_LAUNCHED("gather_rows", err);
	return GC_OK;
}

/*
 * D is the dimension when known at compile time (the entity then sits in
 * registers), 0 otherwise
 */
template <int D>
__global__ void
__launch_bounds__(ALLOCATE_THREADS)
allocate_entities_kernel(const double *__restrict__ x, int d, int metric,
						 const int32_t *__restrict__ ent,
						 const int32_t *__restrict__ group, int32_t nent,
						 const int32_t *__restrict__ cen,
						 const int32_t *__restrict__ cen_first,
						 const double *__restrict__ cx,
						 const double *__restrict__ penalty,
						 const double *__restrict__ demand,
						 int32_t *__restrict__ alloc, double *__restrict__ dist)
{
	int32_t		e = blockIdx.x * blockDim.x + threadIdx.x;
	double		xi[D > 0 ? D : 1];
	const double *xp;
	int32_t		row,
				c0,
				c1,
				bestc;
	double		q,
				best = DBL_MAX,
				bestd = 0.0;

	if (e >= nent)
		return;
	row = ent[e];
	c0 = cen_first[group[e]];
	c1 = cen_first[group[e] + 1];
	q = demand != NULL ? demand[row] : 0.0;
	if (D > 0)
	{
#pragma unroll
		for (int j = 0; j < (D > 0 ? D : 1); j++)
			xi[j] = x[(int64_t) row * D + j];
		xp = xi;
	}
	else
		xp = x + (int64_t) row * d;
	bestc = c0;
	for (int32_t c = c0; c < c1; c++)
	{
		double		dc,
					cost;

		if (cen[c] == row)
		{
			bestc = c;
			bestd = 0.0;
			break;
		}
		dc = gc_pm_dist(xp, cx + (int64_t) c * (D > 0 ? D : d), D > 0 ? D : d, metric);
		cost = penalty != NULL ? gc_pm_cost(dc, penalty[c], q) : dc;
		if (cost < best)
		{
			best = cost;
			bestd = dc;
			bestc = c;
		}
	}
	alloc[e] = bestc;
	dist[e] = bestd;
}

GcStatus
launch_allocate_entities(const double *x, int d, int metric, const int32_t *ent,
						 const int32_t *group, int32_t nent, const int32_t *cen,
						 const int32_t *cen_first, const double *cx,
						 const double *penalty, const double *demand,
						 int32_t *alloc, double *dist, cudaStream_t stream,
						 GcError *err)
{
	int			blocks = blocks_for(nent, ALLOCATE_THREADS);

	if (nent == 0)
		return GC_OK;
	if (d == 2)
		allocate_entities_kernel<2><<<blocks, ALLOCATE_THREADS, 0, stream>>>(
			x, d, metric, ent, group, nent, cen, cen_first, cx, penalty, demand, alloc, dist);
	else if (d == 3)
		allocate_entities_kernel<3><<<blocks, ALLOCATE_THREADS, 0, stream>>>(
			x, d, metric, ent, group, nent, cen, cen_first, cx, penalty, demand, alloc, dist);
	else
		allocate_entities_kernel<0><<<blocks, ALLOCATE_THREADS, 0, stream>>>(
			x, d, metric, ent, group, nent, cen, cen_first, cx, penalty, demand, alloc, dist);
	GC_CUDA_LAUNCHED("allocate_entities", err);
	return GC_OK;
}

/* Minimum over the warp, then one atomic per warp */
__device__ __forceinline__ void
race_min(unsigned long long key, unsigned long long *winner)
{
	for (int off = 16; off > 0; off >>= 1)
	{
		unsigned long long other = __shfl_down_sync(0xffffffffu, key, off);

		key = other < key ? other : key;
	}
	if ((threadIdx.x & 31) == 0)
		atomicMin(winner, key);
}

__global__ void
seed_step_kernel(const double *__restrict__ x, const uint64_t *__restrict__ hashes,
				 int d, int metric, const int32_t *__restrict__ ent,
				 int32_t nent, int32_t centre, uint64_t seed, int step,
				 double *__restrict__ mind, unsigned long long *winner)
{
	int32_t		e = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long key = GC_RACE_NONE;

	if (e < nent)
	{
		int32_t		row = ent[e];
		double		w = 1.0;

		if (centre >= 0)
		{
			double		dc = gc_pm_dist(x + (int64_t) row * d, x + (int64_t) centre * d,
										d, metric);
			double		m = step == 1 ? DBL_MAX : mind[e];

			if (dc < m)
				m = dc;
			mind[e] = m;
			w = m;
		}
		key = gc_race_key(gc_unit_draw(hashes[row], seed, (uint64_t) step), w, e);
	}
	race_min(key, winner);
}

GcStatus
launch_seed_step(const double *x, const uint64_t *hashes, int d, int metric,
				 const int32_t *ent, int32_t nent, int32_t centre, uint64_t seed,
				 int step, double *mind, unsigned long long *winner,
				 cudaStream_t stream, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(winner, 0xff, sizeof(unsigned long long), stream), err);
	seed_step_kernel<<<blocks_for(nent, ELEMENT_THREADS), ELEMENT_THREADS, 0, stream>>>(
		x, hashes, d, metric, ent, nent, centre, seed, step, mind, winner);
	GC_CUDA_LAUNCHED("seed_step", err);
	return GC_OK;
}
