/*-------------------------------------------------------------------------
 *
 * seeding_batched.cu
 *	  Batched greedy k-means++ on the GPU, k-means||'s recluster from
 *	  GC_BATCHED_MIN_K centres, choosing the same rows as the CPU
 *	  reference (engine/seeding_batched.c, which describes the algorithm).
 *
 * It runs over a session of the candidates (weighted rows, their
 * centred floats for the tensor labeler), with two labelers kept open
 * across the steps, against a step's most draws and most picks (the rows
 * of a step padded to them with copies of its first, which never win a
 * tie).  A step is a few kernels, two labelings and one read of the host
 * (the picks kept):
 *
 *	- keys: every row not yet picked bids gc_race_key(u(row, seed,
 *	  gc_seed_stream(t, 0)), w D^2) with its own index below the bid (the
 *	  CPU's keys, bit for bit); picked rows bid GC_RACE_NONE;
 *	- a radix sort of the keys (they are distinct but for GC_RACE_NONE):
 *	  the first b L are the step's candidates, in key order, as
 *	  gc_batched_select gives them;
 *	- gains: the rows labelled against the candidates by the exact tensor
 *	  labeler (seeding_parallel.cu's GcRowLabeler: the nearest,
 *	  lowest on ties, where nearer than D^2); each row adds w (D^2 -
 *	  |x - c|^2), quantised, to its nearest candidate's gain where below
 *	  D^2 (the distance gc_sqdist_exact's), by exact 128-bit atomics; a
 *	  thread per group chooses its pick (gc_batched_best);
 *	- the picks kept (gc_batched_keep, one block), their count read;
 *	- lower: the rows labelled against the picks kept, each row's D^2
 *	  falling to its exact distance to the nearest where closer (set at
 *	  step 0's pick), and the picks marked.
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
#include "kmeans_session.cuh"
#include "cuda_check.cuh"

#define BATCHED_THREADS 256
#define BATCHED_BLOCKS 1024		/* most blocks of a pass over the rows */

/* Device buffers of one batched seeding */
typedef struct BatchedBuffers
{
	double	   *mind2;			/* n: D^2 */
	unsigned char *taken;		/* n: picked */
	unsigned long long *keys;	/* n: the step's race */
	unsigned long long *sorted; /* n: the keys in order */
	int32_t    *labels;			/* n: the nearest candidate, or pick */
	long long  *drawn;			/* the step's candidates (most b L) */
	long long  *picks;			/* every step's picks kept, in order (k) */
	gc_u128    *gains;			/* b L */
	int		   *kept;			/* the step's picks kept */
	long long  *padded;			/* the rows labelled against, padded (most b L) */
	double	   *c64[2];			/* the draws, and the picks, labelled against */
	float	   *c32[2];
	float	   *cnorm[2];
	int64_t		most[2];		/* of them: a step's most draws, and picks */
	int64_t		capacity[2];	/* most rounded up to GC_TENSOR_ROW_ALIGN */
	GcRowLabeler labeler[2];	/* against them, open across the steps */
	bool		open[2];
	void	   *sort_scratch;
	size_t		sort_bytes;
} BatchedBuffers;

#define DRAWS 0
#define PICKS 1

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

/* v added to the 128-bit integer at slot exactly: two 64-bit atomics, the carry from the first */
__device__ __forceinline__ void
atomic_add_u128(gc_u128 *slot, gc_u128 v)
{
	unsigned long long *word = (unsigned long long *) slot;
	unsigned long long lo = (unsigned long long) v,
				hi = (unsigned long long) (v >> 64);
	unsigned long long old = atomicAdd(word, lo);

	if (old + lo < old)
		hi++;
	if (hi != 0)
		atomicAdd(word + 1, hi);
}

/*
 * Each row's gain for its nearest candidate (labels, into c64): w (q(D^2)
 * - q(|x - c|^2)) where the exact distance is below D^2
 */
__global__ void
batched_gains_kernel(const double *__restrict__ x64, const double *__restrict__ weights,
					 const double *__restrict__ mind2, int64_t n, int d,
					 const int32_t *__restrict__ labels, const double *__restrict__ c64,
					 int inertia_exp, gc_u128 *__restrict__ gains)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		double		m = mind2[i];
		int			j = labels[i];
		double		v = gc_sqdist_within(x64 + i * d, c64 + (int64_t) j * d, d, m);

		if (v < m)
			atomic_add_u128(&gains[j],
							(gc_quantize_wide(m, inertia_exp) - gc_quantize_wide(v, inertia_exp)) *
							(gc_u128) (weights != NULL ? (unsigned long long) weights[i] : 1ULL));
	}
}

/*
 * D^2 lowered to the exact distance to each row's nearest pick (labels,
 * into c64; NULL: the one pick), set where first; the picks marked
 */
__global__ void
batched_lower_kernel(const double *__restrict__ x64, int64_t n, int d,
					 const int32_t *__restrict__ labels, const double *__restrict__ c64,
					 const long long *__restrict__ picks, int b, bool first,
					 double *__restrict__ mind2, unsigned char *__restrict__ taken)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		double		m = first ? INFINITY : mind2[i];
		int			j = labels != NULL ? labels[i] : 0;
		double		v = gc_sqdist_within(x64 + i * d, c64 + (int64_t) j * d, d, m);

		if (v < m)
			mind2[i] = v;
	}
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < b; j += gridDim.x * blockDim.x)
		taken[picks[j]] = 1;
}

/*
 * rows[0 .. count - 1], then rows[0] again up to most: labelled against,
 * the copies never nearest (the lowest index wins ties), so the labels
 * are those against the count rows
 */
__global__ void
batched_pad_kernel(const long long *__restrict__ rows, int count, int most,
				   long long *__restrict__ padded)
{
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < most; j += gridDim.x * blockDim.x)
		padded[j] = rows[j < count ? j : 0];
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

/*
 * The picks kept, in order, compacted in place and counted into *kept:
 * pick j unless a kept one before it is nearer to it than its D^2
 * (gc_batched_keep); one block, the kept ones tested side by side
 */
__global__ void
batched_keep_kernel(const double *__restrict__ x64, int d, const double *__restrict__ mind2,
					long long *__restrict__ picks, int b, int *__restrict__ kept)
{
	__shared__ int count;
	__shared__ int near;

	if (threadIdx.x == 0)
		count = 0;
	__syncthreads();
	for (int j = 0; j < b; j++)
	{
		long long	pj = picks[j];
		double		m = mind2[pj];

		if (threadIdx.x == 0)
			near = 0;
		__syncthreads();
		for (int i = threadIdx.x; i < count; i += blockDim.x)
			if (!gc_batched_keep(gc_sqdist_within(x64 + pj * d, x64 + picks[i] * d, d, m), m))
				near = 1;
		__syncthreads();
		if (threadIdx.x == 0 && !near)
			picks[count++] = pj;
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*kept = count;
}

static void
free_buffers(BatchedBuffers *b)
{
	for (int w = 0; w < 2; w++)
	{
		if (b->open[w])
			gc_row_labeler_close(&b->labeler[w]);
		cudaFree(b->c64[w]);
		cudaFree(b->c32[w]);
		cudaFree(b->cnorm[w]);
	}
	cudaFree(b->padded);
	cudaFree(b->mind2);
	cudaFree(b->taken);
	cudaFree(b->keys);
	cudaFree(b->sorted);
	cudaFree(b->labels);
	cudaFree(b->drawn);
	cudaFree(b->picks);
	cudaFree(b->gains);
	cudaFree(b->kept);
	cudaFree(b->sort_scratch);
	(void) cudaGetLastError();
}

/*
 * Every row labelled against rows[0 .. count - 1] (device) by labeler
 * which (DRAWS, PICKS), where nearer than D^2, into b->labels
 */
static GcStatus
label_against(CudaSession *s, BatchedBuffers *b, int which, const long long *rows, int count,
			  GcError *err)
{
	int			most = (int) b->most[which];

	batched_pad_kernel<<<(most + BATCHED_THREADS - 1) / BATCHED_THREADS, BATCHED_THREADS, 0,
		s->stream>>>(rows, count, most, b->padded);
	GC_CUDA_LAUNCHED("batched_pad", err);
	if (gc_gather_rows(s, b->padded, most, b->capacity[which], b->c64[which], b->c32[which],
					   b->cnorm[which], err) != GC_OK)
		return err->status;
	return gc_row_labeler_label(&b->labeler[which], b->mind2, err);
}

/*
 * Step t, done picks before it: the race, the candidates, their gains,
 * the step's picks kept into b->picks + done (*taken of them), D^2
 * lowered
 */
static GcStatus
run_step(CudaSession *s, const GcKmeansParams *params, uint64_t seed, BatchedBuffers *b,
		 int t, int done, int grid, int *taken, GcError *err)
{
	int			np = gc_batched_picks(params->k, t, done);
	int			candidates = t == 0 ? 1 : gc_batched_candidates(params, s->n - done, np);
	int			count = np * candidates;
	int			inertia_exp = s->frame->inertia_exp;
	long long  *picks = b->picks + done;
	int			kept = np;

	batched_keys_kernel<<<grid, BATCHED_THREADS, 0, s->stream>>>(
		s->hashes, s->weights, b->mind2, b->taken, s->n, gc_draw_key(seed, gc_seed_stream(t, 0)),
		inertia_exp, b->keys);
	GC_CUDA_LAUNCHED("batched_keys", err);
	GC_CUDA_TRY(cub::DeviceRadixSort::SortKeys(b->sort_scratch, b->sort_bytes, b->keys, b->sorted,
											   (int) s->n, 0, 64, s->stream), err);
	batched_draw_kernel<<<(count + BATCHED_THREADS - 1) / BATCHED_THREADS, BATCHED_THREADS, 0,
		s->stream>>>(b->sorted, count, b->drawn);
	GC_CUDA_LAUNCHED("batched_draw", err);
	if (candidates > 1)
	{
		GC_CUDA_TRY(cudaMemsetAsync(b->gains, 0, sizeof(gc_u128) * b->most[DRAWS], s->stream),
					err);
		if (label_against(s, b, DRAWS, b->drawn, count, err) != GC_OK)
			return err->status;
		batched_gains_kernel<<<grid, BATCHED_THREADS, 0, s->stream>>>(
			s->x64, s->weights, b->mind2, s->n, s->d, b->labels, b->c64[DRAWS], inertia_exp,
			b->gains);
		GC_CUDA_LAUNCHED("batched_gains", err);
	}
	batched_choose_kernel<<<(np + BATCHED_THREADS - 1) / BATCHED_THREADS, BATCHED_THREADS, 0,
		s->stream>>>(b->drawn, b->gains, np, candidates, picks);
	GC_CUDA_LAUNCHED("batched_choose", err);
	if (t > 0)
	{
		batched_keep_kernel<<<1, BATCHED_THREADS, 0, s->stream>>>(s->x64, s->d, b->mind2, picks,
																   np, b->kept);
		GC_CUDA_LAUNCHED("batched_keep", err);
		GC_CUDA_TRY(cudaMemcpyAsync(&kept, b->kept, sizeof(int), cudaMemcpyDeviceToHost,
									s->stream), err);
		GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	}
	*taken = kept;
	if (done + kept >= params->k)
		return GC_OK;
	if (kept > 1)
	{
		if (label_against(s, b, PICKS, picks, kept, err) != GC_OK)
			return err->status;
	}
	else if (gc_gather_rows(s, picks, 1, b->capacity[PICKS], b->c64[PICKS], b->c32[PICKS],
							b->cnorm[PICKS], err) != GC_OK)
		return err->status;
	batched_lower_kernel<<<grid, BATCHED_THREADS, 0, s->stream>>>(
		s->x64, s->n, s->d, kept > 1 ? b->labels : NULL, b->c64[PICKS], picks, kept, t == 0,
		b->mind2, b->taken);
	GC_CUDA_LAUNCHED("batched_lower", err);
	return GC_OK;
}

/* Every step on the device, then their k picks read into chosen */
static GcStatus
run_steps(CudaSession *s, const GcKmeansParams *params, uint64_t seed, BatchedBuffers *b,
		  long long *picks, int64_t *chosen, GcError *err)
{
	int			most = gc_batched_picks(params->k, 1, 1);
	int64_t		blocks = (s->n + BATCHED_THREADS - 1) / BATCHED_THREADS;
	int			grid = blocks < BATCHED_BLOCKS ? (int) blocks : BATCHED_BLOCKS;
	int			done = 0;

	/* step 1 draws the most: later steps pick no more, from fewer untaken */
	b->most[DRAWS] = (int64_t) most * gc_batched_candidates(params, s->n - 1, most);
	b->most[PICKS] = most;
	ALLOC_OR_RETURN(b->mind2, (size_t) s->n);
	ALLOC_OR_RETURN(b->taken, (size_t) s->n);
	ALLOC_OR_RETURN(b->keys, (size_t) s->n);
	ALLOC_OR_RETURN(b->sorted, (size_t) s->n);
	ALLOC_OR_RETURN(b->labels, (size_t) s->n);
	ALLOC_OR_RETURN(b->drawn, (size_t) b->most[DRAWS]);
	ALLOC_OR_RETURN(b->padded, (size_t) b->most[DRAWS]);
	ALLOC_OR_RETURN(b->picks, (size_t) params->k);
	ALLOC_OR_RETURN(b->gains, (size_t) b->most[DRAWS]);
	ALLOC_OR_RETURN(b->kept, 1);
	for (int w = 0; w < 2; w++)
	{
		b->capacity[w] = (b->most[w] + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN *
			GC_TENSOR_ROW_ALIGN;
		ALLOC_OR_RETURN(b->c64[w], (size_t) b->capacity[w] * s->d);
		ALLOC_OR_RETURN(b->c32[w], (size_t) b->capacity[w] * s->d);
		ALLOC_OR_RETURN(b->cnorm[w], (size_t) b->capacity[w]);
		GC_CUDA_TRY(cudaMemsetAsync(b->c32[w], 0, sizeof(float) * b->capacity[w] * s->d,
									s->stream), err);
		GC_CUDA_TRY(cudaMemsetAsync(b->cnorm[w], 0, sizeof(float) * b->capacity[w], s->stream),
					err);
		b->open[w] = true;
		if (gc_row_labeler_open(s, b->most[w], b->c64[w], b->c32[w], b->cnorm[w], b->labels,
								&b->labeler[w], err) != GC_OK)
			return err->status;
	}
	GC_CUDA_TRY(cub::DeviceRadixSort::SortKeys(NULL, b->sort_bytes, b->keys, b->sorted,
											   (int) s->n, 0, 64, s->stream), err);
	GC_CUDA_TRY(cudaMalloc(&b->sort_scratch, b->sort_bytes > 0 ? b->sort_bytes : 1), err);
	batched_reset_kernel<<<grid, BATCHED_THREADS, 0, s->stream>>>(s->n, b->mind2, b->taken);
	GC_CUDA_LAUNCHED("batched_reset", err);
	for (int t = 0; done < params->k; t++)
	{
		int			taken = 0;

		if (params->interrupted && params->interrupted())
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		if (run_step(s, params, seed, b, t, done, grid, &taken, err) != GC_OK)
			return err->status;
		done += taken;
	}
	GC_CUDA_TRY(cudaMemcpyAsync(picks, b->picks, sizeof(long long) * params->k,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	for (int c = 0; c < params->k; c++)
		chosen[c] = (int64_t) picks[c];
	return GC_OK;
}

GcStatus
launch_batched_kmeanspp(CudaSession *s, const GcKmeansParams *params, uint64_t seed,
						int64_t *chosen, GcError *err)
{
	BatchedBuffers b;
	long long  *picks = (long long *) malloc(sizeof(long long) * params->k);
	GcStatus	status;

	memset(&b, 0, sizeof(b));
	if (picks == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	else
		status = run_steps(s, params, seed, &b, picks, chosen, err);
	(void) cudaStreamSynchronize(s->stream);
	free_buffers(&b);
	free(picks);
	return status;
}
