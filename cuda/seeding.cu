/*-------------------------------------------------------------------------
 *
 * seeding.cu
 *	  k-means++ seeding (Arthur & Vassilvitskii, 2007) on the GPU, drawn as
 *	  an exponential race so that it is independent of row order and equal
 *	  to the CPU reference's draw: at step t each row updates its squared
 *	  distance to the nearest chosen centre (in double, without FMA, its
 *	  terms staged with coalesced reads: staged_terms.cuh) and bids
 *	  gc_race_key(u(row, seed, t), weight * distance), its logarithm
 *	  skipped where a bound shows the bid cannot win (gc_warp_race); a
 *	  block minimum and one atomicMin per block pick the winner into
 *	  race[t], which step t + 1 reads on the device, so the k steps need no
 *	  round trip to the host.
 *
 * IDENTIFICATION
 *	  cuda/seeding.cu
 *
 *-------------------------------------------------------------------------
 */
#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"
#include "staged_terms.cuh"

#define SEED_THREADS 256
#define SEED_COLUMNS 16			/* a row's terms staged at a time: a line */

/*
 * Step t: a block's rows, SEED_THREADS at a time, each warp racing its
 * lanes' rows together (gc_warp_race); the block's least key into race[t]
 */
__global__ void
__launch_bounds__(SEED_THREADS)
kmeanspp_step_kernel(const double *__restrict__ x64,
					 const uint64_t *__restrict__ hashes,
					 const double *__restrict__ weights, int64_t n, int d,
					 uint64_t seed, int t, int inertia_exp, double *__restrict__ mind2,
					 unsigned long long *race)
{
	__shared__ StagedTerms<SEED_THREADS, SEED_COLUMNS> staged;
	__shared__ unsigned long long warp_best[SEED_THREADS / 32];
	const double *centre = t > 0 ? x64 + (int64_t) (uint32_t) race[t - 1] * d : NULL;
	unsigned long long best = GC_RACE_NONE;

	/* whole blocks go round the loop together: staging synchronises them */
	for (int64_t base = (int64_t) blockIdx.x * SEED_THREADS; base < n;
		 base += (int64_t) gridDim.x * SEED_THREADS)
	{
		int64_t		i = base + threadIdx.x;
		int			rows = n - base < SEED_THREADS ? (int) (n - base) : SEED_THREADS;
		bool		mine = threadIdx.x < rows;
		double		w = 1.0,
					u = 1.0;

		if (t > 0)
		{
			double		d2 = staged_sqdist(staged, x64 + base * d, rows, d, centre, mine);

			if (mine)
			{
				if (t == 1 || d2 < mind2[i])
					mind2[i] = d2;
				w = mind2[i];
			}
		}
		if (mine)
		{
			if (weights != NULL)
				w = __dmul_rn(w, weights[i]);
			w = gc_race_weight(w, inertia_exp);
			u = gc_unit_draw(hashes[i], seed, (uint64_t) t);
		}
		gc_warp_race(&best, mine, u, w, i);
	}
	if ((threadIdx.x & 31) == 0)
		warp_best[threadIdx.x >> 5] = best;
	__syncthreads();
	if (threadIdx.x < 32)
	{
		best = threadIdx.x < SEED_THREADS / 32 ? warp_best[threadIdx.x] : GC_RACE_NONE;
		best = gc_warp_min_u64(best);
		if (threadIdx.x == 0)
			atomicMin(&race[t], best);
	}
}

GcStatus
launch_kmeanspp_step(const double *x64, const uint64_t *hashes,
					 const double *weights, int64_t n, int d,
					 uint64_t seed, int t, int inertia_exp, double *mind2,
					 unsigned long long *race, cudaStream_t stream, GcError *err)
{
	int64_t		blocks = (n + SEED_THREADS - 1) / SEED_THREADS;

	if (blocks > 4096)
		blocks = 4096;
	kmeanspp_step_kernel<<<(unsigned) blocks, SEED_THREADS, 0, stream>>>(
		x64, hashes, weights, n, d, seed, t, inertia_exp, mind2, race);
	GC_CUDA_LAUNCHED("kmeanspp_step", err);
	return GC_OK;
}
