/*-------------------------------------------------------------------------
 *
 * seeding_parallel.cu
 *	  k-means|| seeding on the GPU (Bahmani et al., 2012), choosing the
 *	  same rows as the CPU reference (engine/seeding_parallel.c, which
 *	  describes the algorithm).
 *
 * A round is a few kernels and one read of the host:
 *
 *	- sample: each row compares its seeded draw with l w D^2 / phi
 *	  (gc_parallel_sampled) and appends itself to a list; the host reads
 *	  the list and sorts it by hash, which makes the order of the
 *	  candidates independent of the rows' order and of the atomics';
 *	- label: the round's samples become the centroids of a labeling by the
 *	  exact tensor labeler (tensor/labeler_fp32.cu: its TF32 screen, on wgmma
 *	  where the fit's would be, with its 3xTF32 and double checks, whatever
 *	  the fit's precision; the double check skips by the samples'
 *	  separations, tensor/centroid_separations.cu): the nearest sample of every
 *	  row where it is nearer than the row's D^2 (elsewhere a sample no
 *	  nearer, which the next pass leaves unused),
 *	  the exact arg-min of the exact double distances, lowest index on
 *	  ties, as the CPU's gc_nearest_centroid finds it;
 *	- nearest: each row computes its exact distance to that sample
 *	  (gc_sqdist_exact's, n d, its terms staged with coalesced reads:
 *	  staged_terms.cuh), lowers D^2 and its nearest candidate where
 *	  closer, and adds w D^2 quantised to its block's exact 128-bit
 *	  partial of the potential, which the host sums into phi.
 *
 * Then the rows' weights are summed per nearest candidate (exact integer
 * atomics), the host drops the candidates of weight zero, and greedy
 * k-means++ (seeding_greedy.cu) reclusters the rest on the device; from
 * GC_BATCHED_MIN_K centres batched greedy k-means++ (seeding_batched.cu),
 * over a session of the candidates whose labelings run as the rounds'
 * do (gc_label_rows_against).  All device memory belongs to one set of
 * buffers, freed on every exit.
 *
 * IDENTIFICATION
 *	  cuda/seeding_parallel.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"
#include "staged_terms.cuh"

#define PARALLEL_THREADS 256
#define NEAREST_COLUMNS 16		/* a row's terms staged at a time: a line */
#define PARALLEL_BLOCKS GC_PARALLEL_PARTIALS	/* fixed: one potential partial per block */

/* Device buffers of one k-means|| seeding */
typedef struct ParallelBuffers
{
	double	   *mind2;			/* n: D^2 */
	int32_t    *nearest;		/* n: the nearest candidate */
	int32_t    *labels;			/* n: the nearest of the round's samples */
	long long  *sampled;		/* n: the round's samples, in atomic order */
	unsigned int *sampled_count;
	gc_u128    *partials;		/* PARALLEL_BLOCKS potential partials */
	unsigned long long *race;	/* the first centre's race */
	long long  *batch_rows;		/* capacity: the rows of a batch of candidates */
	double	   *c64;			/* capacity * d, as given */
	float	   *c32;			/* capacity * d, centred */
	float	   *cnorm;			/* capacity rounded up to GC_TENSOR_ROW_ALIGN */
	int64_t		capacity;
	unsigned long long *weight; /* per candidate */
} ParallelBuffers;

/* The candidates on the host */
typedef struct CandidateList
{
	int64_t    *rows;
	int64_t		count;
	int64_t		capacity;
} CandidateList;

/*
 * D^2 and the nearest candidate lowered to the batch's sample labels[i]
 * (sample 0 when labels is NULL), candidates first onwards; set, in the
 * first pass; each block's sum of quantised w D^2 into partials
 */
__global__ void
parallel_nearest_kernel(const double *__restrict__ x64, const double *__restrict__ weights,
						int64_t n, int d, const double *__restrict__ batch,
						const int32_t *__restrict__ labels, int first, bool initial,
						int inertia_exp, double *__restrict__ mind2,
						int32_t *__restrict__ nearest, gc_u128 *__restrict__ partials)
{
	__shared__ StagedTerms<PARALLEL_THREADS, NEAREST_COLUMNS> staged;
	__shared__ gc_u128 warp_sums[PARALLEL_THREADS / 32];
	gc_u128		total = 0;

	/* whole blocks go round the loop together: staging synchronises them */
	for (int64_t base = (int64_t) blockIdx.x * PARALLEL_THREADS; base < n;
		 base += (int64_t) gridDim.x * PARALLEL_THREADS)
	{
		int64_t		i = base + threadIdx.x;
		int			rows = n - base < PARALLEL_THREADS ? (int) (n - base) : PARALLEL_THREADS;
		bool		mine = threadIdx.x < rows;
		int			j = mine && labels != NULL ? labels[i] : 0;
		double		d2 = staged_sqdist(staged, x64 + base * d, rows, d,
									   batch + (int64_t) j * d, mine);
		double		m;

		if (!mine)
			continue;
		m = initial ? d2 : mind2[i];
		if (initial || d2 < m)
		{
			m = d2;
			mind2[i] = d2;
			nearest[i] = first + j;
		}
		total += gc_quantize_wide(m, inertia_exp) *
			(gc_u128) (weights != NULL ? (unsigned long long) weights[i] : 1ULL);
	}
	total = gc_warp_sum_u128(total);
	if ((threadIdx.x & 31) == 0)
		warp_sums[threadIdx.x >> 5] = total;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		gc_u128		v = 0;

		for (int w = 0; w < PARALLEL_THREADS / 32; w++)
			v += warp_sums[w];
		partials[blockIdx.x] = v;
	}
}

/* The rows that round samples, appended to sampled */
__global__ void
parallel_sample_kernel(const uint64_t *__restrict__ hashes, const double *__restrict__ weights,
					   const double *__restrict__ mind2, int64_t n, uint64_t seed, int round,
					   double ell, double phi, long long *__restrict__ sampled,
					   unsigned int *count)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		double		wd2 = mind2[i];

		if (weights != NULL)
			wd2 = __dmul_rn(wd2, weights[i]);
		if (gc_parallel_sampled(gc_unit_draw(hashes[i], seed, gc_parallel_stream(round)),
								wd2, ell, phi))
			sampled[atomicAdd(count, 1u)] = i;
	}
}

/*
 * The sum of squares of a block's row of d floats (thread 0's answer), in
 * one order wherever a candidate's norm is made
 */
__device__ static float
block_sq_norm(const float *row, int d, float *warp_norms)
{
	float		norm = 0.0f;

	for (int j = threadIdx.x; j < d; j += blockDim.x)
		norm = fmaf(row[j], row[j], norm);
	for (int off = 16; off > 0; off >>= 1)
		norm += __shfl_down_sync(0xffffffffu, norm, off);
	if ((threadIdx.x & 31) == 0)
		warp_norms[threadIdx.x >> 5] = norm;
	__syncthreads();
	norm = 0.0f;
	for (int w = 0; w < PARALLEL_THREADS / 32; w++)
		norm += warp_norms[w];
	return norm;
}

/* Candidate rows into c64, their centred floats into c32 and norms into cnorm */
__global__ void
parallel_gather_kernel(const double *__restrict__ x64, const float *__restrict__ x32,
					   const long long *__restrict__ rows, int d,
					   double *__restrict__ c64, float *__restrict__ c32,
					   float *__restrict__ cnorm)
{
	__shared__ float warp_norms[PARALLEL_THREADS / 32];
	int64_t		c = blockIdx.x;
	int64_t		row = rows[c];
	float		norm;

	for (int j = threadIdx.x; j < d; j += blockDim.x)
	{
		c64[c * d + j] = x64[row * d + j];
		c32[c * d + j] = x32[row * d + j];
	}
	norm = block_sq_norm(x32 + row * d, d, warp_norms);
	if (threadIdx.x == 0)
		cnorm[c] = norm;
}

/* The norms of rows of centred floats c32 into cnorm, one block a row */
__global__ void
parallel_norms_kernel(const float *__restrict__ c32, int d, float *__restrict__ cnorm)
{
	__shared__ float warp_norms[PARALLEL_THREADS / 32];
	int64_t		c = blockIdx.x;
	float		norm = block_sq_norm(c32 + c * d, d, warp_norms);

	if (threadIdx.x == 0)
		cnorm[c] = norm;
}

/* Each candidate's weight: the weights of the rows nearest to it */
__global__ void
parallel_weigh_kernel(const double *__restrict__ weights, const int32_t *__restrict__ nearest,
					  int64_t n, unsigned long long *weight)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		atomicAdd(&weight[nearest[i]],
				  weights != NULL ? (unsigned long long) weights[i] : 1ULL);
}

static void
free_buffers(ParallelBuffers *b)
{
	cudaFree(b->mind2);
	cudaFree(b->nearest);
	cudaFree(b->labels);
	cudaFree(b->sampled);
	cudaFree(b->sampled_count);
	cudaFree(b->partials);
	cudaFree(b->race);
	cudaFree(b->batch_rows);
	cudaFree(b->c64);
	cudaFree(b->c32);
	cudaFree(b->cnorm);
	cudaFree(b->weight);
	(void) cudaGetLastError();
}

/* Room for m candidates in the batch buffers */
static GcStatus
reserve_batch(CudaSession *s, ParallelBuffers *b, int64_t m, GcError *err)
{
	int64_t		mpad = (m + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN * GC_TENSOR_ROW_ALIGN;

	if (m <= b->capacity)
		return GC_OK;
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	cudaFree(b->batch_rows);
	cudaFree(b->c64);
	cudaFree(b->c32);
	cudaFree(b->cnorm);
	b->batch_rows = NULL;
	b->c64 = NULL;
	b->c32 = NULL;
	b->cnorm = NULL;
	b->capacity = 0;
	ALLOC_OR_RETURN(b->batch_rows, (size_t) mpad);
	ALLOC_OR_RETURN(b->c64, (size_t) mpad * s->d);
	ALLOC_OR_RETURN(b->c32, (size_t) mpad * s->d);
	ALLOC_OR_RETURN(b->cnorm, (size_t) mpad);
	b->capacity = mpad;
	return GC_OK;
}

/* Rows rows[0 .. m - 1] into the batch buffers (c64, c32, cnorm; the norms past m zero) */
static GcStatus
gather_batch(CudaSession *s, ParallelBuffers *b, const int64_t *rows, int64_t m,
			 GcError *err)
{
	if (reserve_batch(s, b, m, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(b->batch_rows, rows, sizeof(long long) * m,
								cudaMemcpyHostToDevice, s->stream), err);
	/* the host list may change once the copy is done */
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return gc_gather_rows(s, b->batch_rows, m, b->capacity, b->c64, b->c32, b->cnorm, err);
}

GcStatus
gc_row_labeler_open(CudaSession *s, int64_t m, double *c64, float *c32, float *cnorm,
					int32_t *labels, GcRowLabeler *rl, GcError *err)
{
	GcKernel	screen = gc_exact_screen_kernel(s->d);

	rl->sub = *s;
	rl->sub.k = (int) m;
	rl->sub.kpad = (int) ((m + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN *
						  GC_TENSOR_ROW_ALIGN);
	rl->sub.c64 = c64;
	rl->sub.c32 = c32;
	rl->sub.cnorm = cnorm;
	rl->sub.labels = labels;
	rl->sub.kernel = screen;
	rl->sub.labeler = gc_labeler(screen);
	rl->sub.labeler_state = NULL;
	rl->sub.pruned = NULL;
	rl->sub.bounded = NULL;
	rl->separated = false;
	return rl->sub.labeler->open(&rl->sub, &rl->sub.labeler_state, err);
}

GcStatus
gc_row_labeler_label(GcRowLabeler *rl, const double *need_below, GcError *err)
{
	CudaSession *sub = &rl->sub;
	cudaError_t e;

	if (sub->labeler->refresh(sub, sub->labeler_state, err) != GC_OK)
		return err->status;
	if (need_below != NULL && !rl->separated)
	{
		(void) gc_tensor_separate(sub, sub->labeler_state, need_below);
		rl->separated = true;
	}
	if (gc_label_points(sub, NULL, NULL, err) != GC_OK)
		return err->status;
	e = cudaStreamSynchronize(sub->stream);
	if (e != cudaSuccess)
		return gc_cuda_fail(err, e, "labeling against seeding candidates", __FILE__, __LINE__);
	return GC_OK;
}

void
gc_row_labeler_close(GcRowLabeler *rl)
{
	if (rl->sub.labeler_state != NULL)
		rl->sub.labeler->close(rl->sub.labeler_state);
	rl->sub.labeler_state = NULL;
}

GcStatus
gc_label_rows_against(CudaSession *s, double *c64, float *c32, float *cnorm, int64_t m,
					  int32_t *labels, const double *need_below, GcError *err)
{
	GcRowLabeler rl;
	GcStatus	status = gc_row_labeler_open(s, m, c64, c32, cnorm, labels, &rl, err);

	if (status == GC_OK)
		status = gc_row_labeler_label(&rl, need_below, err);
	gc_row_labeler_close(&rl);
	return status;
}

GcStatus
gc_gather_rows(const CudaSession *s, const long long *rows, int64_t m, int64_t capacity,
			   double *c64, float *c32, float *cnorm, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(cnorm, 0, sizeof(float) * capacity, s->stream), err);
	if (m == 0)
		return GC_OK;
	parallel_gather_kernel<<<(unsigned) m, PARALLEL_THREADS, 0, s->stream>>>(
		s->x64, s->x32, rows, s->d, c64, c32, cnorm);
	GC_CUDA_LAUNCHED("parallel_gather", err);
	return GC_OK;
}

/* The nearest of the batch's m samples of every row (where nearer than D^2), into b->labels */
static GcStatus
label_batch(CudaSession *s, ParallelBuffers *b, int64_t m, GcError *err)
{
	return gc_label_rows_against(s, b->c64, b->c32, b->cnorm, m, b->labels, b->mind2, err);
}

GcStatus
gc_parallel_nearest_pass(CudaSession *s, const double *c64, const int32_t *labels,
						 int64_t first, bool initial, double *mind2, int32_t *nearest,
						 gc_u128 *partials, gc_u128 *potential, GcError *err)
{
	gc_u128		host[PARALLEL_BLOCKS];

	parallel_nearest_kernel<<<PARALLEL_BLOCKS, PARALLEL_THREADS, 0, s->stream>>>(
		s->x64, s->weights, s->n, s->d, c64, labels, (int) first, initial,
		s->frame->inertia_exp, mind2, nearest, partials);
	GC_CUDA_LAUNCHED("parallel_nearest", err);
	GC_CUDA_TRY(cudaMemcpyAsync(host, partials, sizeof(host), cudaMemcpyDeviceToHost,
								s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	*potential = 0;
	for (int i = 0; i < PARALLEL_BLOCKS; i++)
		*potential += host[i];
	return GC_OK;
}

GcStatus
gc_stage_rows(const CudaSession *s, const double *values, int64_t m, int64_t capacity,
			  double *c64, float *c32, float *cnorm, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(cnorm, 0, sizeof(float) * capacity, s->stream), err);
	if (m == 0)
		return GC_OK;
	GC_CUDA_TRY(cudaMemcpyAsync(c64, values, sizeof(double) * m * s->d,
								cudaMemcpyHostToDevice, s->stream), err);
	if (launch_centre_rows(c64, s->offset, m, s->d, c32, s->stream, err) != GC_OK)
		return err->status;
	parallel_norms_kernel<<<(unsigned) m, PARALLEL_THREADS, 0, s->stream>>>(c32, s->d, cnorm);
	GC_CUDA_LAUNCHED("parallel_norms", err);
	return GC_OK;
}

/* D^2 against the batch (labelled, unless it is the first centre) and the potential */
static GcStatus
nearest_pass(CudaSession *s, ParallelBuffers *b, int64_t first, bool labelled,
			 gc_u128 *potential, GcError *err)
{
	return gc_parallel_nearest_pass(s, b->c64, labelled ? b->labels : NULL, first, first == 0,
									b->mind2, b->nearest, b->partials, potential, err);
}

static GcStatus
append_candidates(CandidateList *list, const long long *rows, int64_t m, GcError *err)
{
	if (list->count + m > list->capacity)
	{
		int64_t		capacity = (list->count + m) * 2;
		int64_t    *grown = (int64_t *) realloc(list->rows, sizeof(int64_t) * capacity);

		if (grown == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
		list->rows = grown;
		list->capacity = capacity;
	}
	for (int64_t i = 0; i < m; i++)
		list->rows[list->count + i] = (int64_t) rows[i];
	list->count += m;
	return GC_OK;
}

/* Round round's samples, sorted by hash, appended to the list; *m of them */
static GcStatus
sample_round(CudaSession *s, const GcKmeansParams *params, ParallelBuffers *b,
			 uint64_t seed, int round, double phi, CandidateList *list, int64_t *m,
			 GcError *err)
{
	unsigned int count;
	long long  *rows;
	GcStatus	status;

	GC_CUDA_TRY(cudaMemsetAsync(b->sampled_count, 0, sizeof(unsigned int), s->stream), err);
	parallel_sample_kernel<<<PARALLEL_BLOCKS, PARALLEL_THREADS, 0, s->stream>>>(
		s->hashes, s->weights, b->mind2, s->n, seed, round,
		gc_parallel_ell(params->k), phi, b->sampled, b->sampled_count);
	GC_CUDA_LAUNCHED("parallel_sample", err);
	GC_CUDA_TRY(cudaMemcpyAsync(&count, b->sampled_count, sizeof(count),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	*m = count;
	rows = (long long *) malloc(sizeof(long long) * (count > 0 ? count : 1));
	if (rows == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	status = GC_OK;
	if (count > 0)
	{
		cudaError_t e = cudaMemcpyAsync(rows, b->sampled, sizeof(long long) * count,
										cudaMemcpyDeviceToHost, s->stream);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s->stream);
		if (e != cudaSuccess)
			status = gc_cuda_fail(err, e, "reading the k-means|| samples", __FILE__, __LINE__);
	}
	if (status == GC_OK)
		status = append_candidates(list, rows, count, err);
	free(rows);
	if (status == GC_OK &&
		!gc_parallel_sort_batch(s->rows, list->rows + list->count - count, count))
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	return status;
}

/* The first centre: k-means++'s first draw (seeding.cu's race at step 0) */
static GcStatus
first_centre(CudaSession *s, ParallelBuffers *b, uint64_t seed, CandidateList *list,
			 GcError *err)
{
	unsigned long long key;
	long long	row;

	GC_CUDA_TRY(cudaMemsetAsync(b->race, 0xff, sizeof(unsigned long long), s->stream), err);
	if (launch_kmeanspp_step(s->x64, s->hashes, s->weights, s->n, s->d, seed, 0,
							 s->frame->inertia_exp, b->mind2, b->race, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(&key, b->race, sizeof(key), cudaMemcpyDeviceToHost,
								s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	row = (long long) (uint32_t) key;
	return append_candidates(list, &row, 1, err);
}

GcStatus
gc_recluster_candidates(CudaSession *s, const GcKmeansParams *rparams, uint64_t seed,
						double *c64, float *c32, const uint64_t *hashes, const double *weights,
						int64_t m, int64_t *picks, GcError *err)
{
	uint64_t   *d_hashes = NULL;
	double	   *d_weights = NULL;
	GcStatus	status = device_alloc(&d_hashes, (size_t) (m > 0 ? m : 1), err);

	if (status == GC_OK)
		status = device_alloc(&d_weights, (size_t) (m > 0 ? m : 1), err);
	if (status == GC_OK)
	{
		/*
		 * On the session's stream: it does not wait for the legacy default
		 * stream, where cudaMemcpy from pageable memory may return before its
		 * DMA lands, so the recluster's first kernels could read the
		 * candidates' hashes and weights before they arrive
		 */
		cudaError_t e = cudaMemcpyAsync(d_hashes, hashes, sizeof(uint64_t) * m,
										cudaMemcpyHostToDevice, s->stream);

		if (e == cudaSuccess)
			e = cudaMemcpyAsync(d_weights, weights, sizeof(double) * m,
								cudaMemcpyHostToDevice, s->stream);
		if (e != cudaSuccess)
			status = gc_cuda_fail(err, e, "uploading the k-means|| candidates", __FILE__, __LINE__);
	}
	if (status == GC_OK && gc_batched_recluster(rparams->k, m))
	{
		/* a session over the candidates, for the tensor labeler */
		CudaSession cand = *s;

		cand.n = m;
		cand.x64 = c64;
		cand.x32 = c32;
		cand.hashes = d_hashes;
		cand.weights = d_weights;
		status = launch_batched_kmeanspp(&cand, rparams, seed, picks, err);
	}
	else if (status == GC_OK)
		status = launch_greedy_kmeanspp(c64, d_hashes, d_weights, m, s->d, rparams, seed,
										s->frame->inertia_exp, s->stream, picks, err);
	(void) cudaStreamSynchronize(s->stream);
	cudaFree(d_hashes);
	cudaFree(d_weights);
	(void) cudaGetLastError();
	return status;
}

/*
 * The candidates weighted by their rows, those of weight zero dropped,
 * reclustered by greedy k-means++ on the device; the weights' wall time
 * into *weights_ms
 */
static GcStatus
recluster(CudaSession *s, const GcKmeansParams *params, ParallelBuffers *b, uint64_t seed,
		  const CandidateList *list, int64_t *chosen, double *weights_ms, GcError *err)
{
	double		t0 = gc_now_ms();
	GcKmeansParams rparams = gc_parallel_recluster_params(params);
	unsigned long long *weight = (unsigned long long *) malloc(sizeof(unsigned long long) * list->count);
	int64_t    *kept = (int64_t *) malloc(sizeof(int64_t) * list->count);
	uint64_t   *hashes = (uint64_t *) malloc(sizeof(uint64_t) * list->count);
	double	   *weights = (double *) malloc(sizeof(double) * list->count);
	int64_t    *picks = (int64_t *) malloc(sizeof(int64_t) * rparams.k);
	int64_t		nkept = 0;
	GcStatus	status = GC_OK;

	if (weight == NULL || kept == NULL || hashes == NULL || weights == NULL || picks == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
		status = device_alloc(&b->weight, (size_t) list->count, err);
	if (status == GC_OK)
	{
		cudaError_t e = cudaMemsetAsync(b->weight, 0, sizeof(unsigned long long) * list->count,
										s->stream);

		if (e == cudaSuccess)
		{
			parallel_weigh_kernel<<<PARALLEL_BLOCKS, PARALLEL_THREADS, 0, s->stream>>>(
				s->weights, b->nearest, s->n, b->weight);
			e = cudaGetLastError();
		}
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(weight, b->weight, sizeof(unsigned long long) * list->count,
								cudaMemcpyDeviceToHost, s->stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s->stream);
		if (e != cudaSuccess)
			status = gc_cuda_fail(err, e, "weighting the k-means|| candidates", __FILE__, __LINE__);
	}
	*weights_ms = gc_now_ms() - t0;
	for (int64_t c = 0; status == GC_OK && c < list->count; c++)
		if (weight[c] > 0)
		{
			kept[nkept] = list->rows[c];
			hashes[nkept] = gc_rows_hash(s->rows, list->rows[c]);
			weights[nkept] = (double) weight[c];
			nkept++;
		}
	if (status == GC_OK)
		status = gather_batch(s, b, kept, nkept, err);
	if (status == GC_OK)
		status = gc_recluster_candidates(s, &rparams, seed, b->c64, b->c32, hashes, weights,
										 nkept, picks, err);
	for (int t = 0; status == GC_OK && t < rparams.k; t++)
		chosen[t] = kept[picks[t]];
	free(weight);
	free(kept);
	free(hashes);
	free(weights);
	free(picks);
	return status;
}

static GcStatus
run_rounds(CudaSession *s, const GcKmeansParams *params, uint64_t seed,
		   ParallelBuffers *b, CandidateList *list, GcError *err)
{
	gc_u128		potential;
	int			round = 0;

	ALLOC_OR_RETURN(b->mind2, (size_t) s->n);
	ALLOC_OR_RETURN(b->nearest, (size_t) s->n);
	ALLOC_OR_RETURN(b->labels, (size_t) s->n);
	ALLOC_OR_RETURN(b->sampled, (size_t) s->n);
	ALLOC_OR_RETURN(b->sampled_count, 1);
	ALLOC_OR_RETURN(b->partials, (size_t) PARALLEL_BLOCKS);
	ALLOC_OR_RETURN(b->race, 1);
	if (first_centre(s, b, seed, list, err) != GC_OK ||
		gather_batch(s, b, list->rows, 1, err) != GC_OK ||
		nearest_pass(s, b, 0, false, &potential, err) != GC_OK)
		return err->status;
	while (gc_parallel_more_rounds(round, list->count, params->k, potential))
	{
		int64_t		first = list->count,
					m;

		if (params->interrupted && params->interrupted())
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		round++;
		if (sample_round(s, params, b, seed, round, gc_inertia_value(potential, s->frame),
						 list, &m, err) != GC_OK)
			return err->status;
		if (m == 0)
			continue;
		if (gather_batch(s, b, list->rows + first, m, err) != GC_OK ||
			label_batch(s, b, m, err) != GC_OK ||
			nearest_pass(s, b, first, true, &potential, err) != GC_OK)
			return err->status;
	}
	if (params->interrupted && params->interrupted())
		return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	return GC_OK;
}

GcStatus
gc_seed_kmeans_parallel_cuda(CudaSession *s, const GcKmeansParams *params, uint64_t seed,
							 int64_t *chosen, GcError *err)
{
	ParallelBuffers b = {0};
	CandidateList list = {0};
	double		t0 = gc_now_ms(),
				t1,
				weights_ms = 0.0;
	GcStatus	status = run_rounds(s, params, seed, &b, &list, err);

	t1 = gc_now_ms();
	if (status == GC_OK)
		status = recluster(s, params, &b, seed, &list, chosen, &weights_ms, err);
	(void) cudaStreamSynchronize(s->stream);
	if (params->phases != NULL)
	{
		params->phases->rounds_ms += t1 - t0;
		params->phases->weights_ms += weights_ms;
		params->phases->recluster_ms += gc_now_ms() - t1 - weights_ms;
	}
	free_buffers(&b);
	free(list.rows);
	return status;
}
