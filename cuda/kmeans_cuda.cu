/*-------------------------------------------------------------------------
 *
 * kmeans_cuda.cu
 *	  The CUDA k-means backend: a session uploads the row store's chunks
 *	  from page-locked memory with asynchronous copies, then seeds, iterates
 *	  and scores on the device.  Per iteration only a 16-byte status
 *	  (labels changed, largest centroid shift) comes back to the host, which
 *	  tests convergence and polls for query cancel; centroids come back at
 *	  the end, labels and distances only when asked for.
 *
 *	  All device memory belongs to the session and is freed by close, which
 *	  the driver calls on success, failure and cancel alike.
 *
 * IDENTIFICATION
 *	  cuda/kmeans_cuda.cu
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gc_cuda.h"
#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define SCORE_PARTIALS 1024
#define SEED_POLL_STEPS 32

typedef struct IterationStatus
{
	unsigned long long changed;
	unsigned long long max_shift2;	/* bits of a non-negative double */
} IterationStatus;

typedef struct CudaSession
{
	const GcRows *rows;
	const GcFrame *frame;
	const GcKmeansParams *params;
	int64_t		n;
	int			d;
	int			k;
	cudaStream_t stream;
	double	   *x64;			/* n * d, as given */
	float	   *x32;			/* n * d, centred, for labeling */
	uint64_t   *hashes;			/* n */
	double	   *offset;			/* d */
	double	   *scale;			/* d */
	double	   *c64;			/* k * d */
	float	   *c32;			/* k * d, centred */
	float	   *cnorm;			/* k */
	int32_t    *labels;			/* n */
	double	   *work;			/* n: k-means++ distances, or distances */
	unsigned long long *sums;	/* k * d, then k counts */
	unsigned long long *race;	/* k */
	double	   *partials;		/* SCORE_PARTIALS */
	IterationStatus *status;	/* device */
	IterationStatus *status_host;	/* page-locked */
} CudaSession;

static void cuda_close(void *session);

template <typename T>
static GcStatus
device_alloc(T **ptr, size_t count, GcError *err)
{
	GC_CUDA_TRY(cudaMalloc((void **) ptr, sizeof(T) * (count > 0 ? count : 1)), err);
	return GC_OK;
}

#define ALLOC_OR_RETURN(ptr, count) \
	do { \
		GcStatus st_ = device_alloc(&(ptr), (count), err); \
		if (st_ != GC_OK) \
			return st_; \
	} while (0)

/*
 * Allocate device memory and upload the rows chunk by chunk
 */
static GcStatus
upload(CudaSession *s, GcError *err)
{
	const GcRows *rows = s->rows;
	int64_t		n = s->n;
	int			d = s->d,
				k = s->k;

	GC_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), err);
	ALLOC_OR_RETURN(s->x64, (size_t) n * d);
	ALLOC_OR_RETURN(s->x32, (size_t) n * d);
	ALLOC_OR_RETURN(s->hashes, (size_t) n);
	ALLOC_OR_RETURN(s->offset, (size_t) d);
	ALLOC_OR_RETURN(s->scale, (size_t) d);
	ALLOC_OR_RETURN(s->c64, (size_t) k * d);
	ALLOC_OR_RETURN(s->c32, (size_t) k * d);
	ALLOC_OR_RETURN(s->cnorm, (size_t) k);
	ALLOC_OR_RETURN(s->labels, (size_t) n);
	ALLOC_OR_RETURN(s->work, (size_t) n);
	ALLOC_OR_RETURN(s->sums, (size_t) k * (d + 1));
	ALLOC_OR_RETURN(s->race, (size_t) k);
	ALLOC_OR_RETURN(s->partials, (size_t) SCORE_PARTIALS);
	ALLOC_OR_RETURN(s->status, 1);
	GC_CUDA_TRY(cudaHostAlloc((void **) &s->status_host, sizeof(IterationStatus),
							  cudaHostAllocDefault), err);

	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		GC_CUDA_TRY(cudaMemcpyAsync(s->x64 + (size_t) chunk->first_row * d, chunk->values,
									sizeof(double) * d * chunk->count,
									cudaMemcpyHostToDevice, s->stream), err);
		GC_CUDA_TRY(cudaMemcpyAsync(s->hashes + chunk->first_row, chunk->hashes,
									sizeof(uint64_t) * chunk->count,
									cudaMemcpyHostToDevice, s->stream), err);
	}
	GC_CUDA_TRY(cudaMemcpyAsync(s->offset, s->frame->offset, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(s->scale, s->frame->scale, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	if (launch_centre_rows(s->x64, s->offset, n, d, s->x32, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

static GcStatus
cuda_open(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
		  void **session, GcError *err)
{
	CudaSession *s = (CudaSession *) calloc(1, sizeof(CudaSession));
	GcStatus	status;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the GPU session");
	s->rows = rows;
	s->frame = frame;
	s->params = params;
	s->n = rows->n;
	s->d = rows->d;
	s->k = params->k;
	status = upload(s, err);
	if (status != GC_OK)
	{
		cuda_close(s);
		return status;
	}
	*session = s;
	return GC_OK;
}

static void
cuda_close(void *session)
{
	CudaSession *s = (CudaSession *) session;

	if (s->stream)
		(void) cudaStreamSynchronize(s->stream);
	cudaFree(s->x64);
	cudaFree(s->x32);
	cudaFree(s->hashes);
	cudaFree(s->offset);
	cudaFree(s->scale);
	cudaFree(s->c64);
	cudaFree(s->c32);
	cudaFree(s->cnorm);
	cudaFree(s->labels);
	cudaFree(s->work);
	cudaFree(s->sums);
	cudaFree(s->race);
	cudaFree(s->partials);
	cudaFree(s->status);
	if (s->status_host)
		cudaFreeHost(s->status_host);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	(void) cudaGetLastError();
	free(s);
}

static bool
interrupted(const CudaSession *s)
{
	return s->params->interrupted && s->params->interrupted();
}

static GcStatus
cuda_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
				   int64_t *chosen, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	unsigned long long *race_host;

	GC_CUDA_TRY(cudaMemsetAsync(s->race, 0xff, sizeof(unsigned long long) * s->k,
								s->stream), err);
	for (int t = 0; t < s->k; t++)
	{
		if (launch_kmeanspp_step(s->x64, s->hashes, s->n, s->d, seed, t, s->work,
								 s->race, s->stream, err) != GC_OK)
			return err->status;
		if ((t + 1) % SEED_POLL_STEPS == 0)
		{
			GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
			if (interrupted(s))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		}
	}
	race_host = (unsigned long long *) malloc(sizeof(unsigned long long) * s->k);
	if (race_host == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	{
		cudaError_t e = cudaMemcpyAsync(race_host, s->race,
										sizeof(unsigned long long) * s->k,
										cudaMemcpyDeviceToHost, s->stream);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s->stream);
		if (e != cudaSuccess)
		{
			free(race_host);
			return gc_cuda_fail(err, e, "copying the k-means++ centres", __FILE__, __LINE__);
		}
	}
	for (int t = 0; t < s->k; t++)
		chosen[t] = (int64_t) (uint32_t) race_host[t];
	free(race_host);
	return GC_OK;
}

/*
 * Upload centroids given in the caller's coordinates, with their float
 * copies and norms (an update with all counts zero keeps them as given)
 */
static GcStatus
load_centroids(CudaSession *s, const double *centroids, GcError *err)
{
	size_t		kd = (size_t) s->k * s->d;

	GC_CUDA_TRY(cudaMemcpyAsync(s->c64, centroids, sizeof(double) * kd,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(s->sums, 0, sizeof(unsigned long long) * (kd + s->k),
								s->stream), err);
	return launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								   s->k, s->c64, s->c32, s->cnorm, NULL,
								   s->stream, err);
}

/*
 * One Lloyd iteration: label, accumulate, update, and fetch the status
 */
static GcStatus
iterate(CudaSession *s, IterationStatus *status, GcError *err)
{
	size_t		kd = (size_t) s->k * s->d;

	GC_CUDA_TRY(cudaMemsetAsync(s->status, 0, sizeof(IterationStatus), s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(s->sums, 0, sizeof(unsigned long long) * (kd + s->k),
								s->stream), err);
	if (launch_assign_points(s->x32, s->c32, s->cnorm, s->n, s->d, s->k, s->labels,
							 &s->status->changed, s->stream, err) != GC_OK ||
		launch_accumulate_clusters(s->x64, s->labels, s->offset, s->scale, s->n,
								   s->d, s->k, s->sums, s->sums + kd, s->stream,
								   err) != GC_OK ||
		launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm,
								&s->status->max_shift2, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(s->status_host, s->status, sizeof(IterationStatus),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	*status = *s->status_host;
	return GC_OK;
}

static GcStatus
cuda_lloyd(void *session, const GcKmeansParams *params, double *centroids,
		   GcLloydOutcome *outcome, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	GcStatus	status;

	outcome->iterations = 0;
	outcome->converged = false;
	GC_CUDA_TRY(cudaMemsetAsync(s->labels, 0xff, sizeof(int32_t) * s->n, s->stream), err);
	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;

	for (int it = 1; it <= params->max_iter; it++)
	{
		IterationStatus st;
		double		max_shift2;

		if ((status = iterate(s, &st, err)) != GC_OK)
			return status;
		memcpy(&max_shift2, &st.max_shift2, sizeof(double));
		outcome->iterations = it;
		if (st.changed == 0 || sqrt(max_shift2) <= params->tol * s->frame->diagonal)
		{
			outcome->converged = true;
			break;
		}
		if (interrupted(s))
			return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", it);
	}
	GC_CUDA_TRY(cudaMemcpyAsync(centroids, s->c64, sizeof(double) * s->k * s->d,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

static GcStatus
cuda_score(void *session, const double *centroids, int32_t *labels,
		   double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	double		partials[SCORE_PARTIALS];
	unsigned long long *device_sizes = s->sums;	/* free between iterations */
	GcStatus	status;

	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;
	if (launch_assign_points(s->x32, s->c32, s->cnorm, s->n, s->d, s->k, s->labels,
							 NULL, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemsetAsync(device_sizes, 0, sizeof(unsigned long long) * s->k,
								s->stream), err);
	if (launch_score_points(s->x64, s->c64, s->labels, s->n, s->d,
							distances ? s->work : NULL, s->partials, SCORE_PARTIALS,
							device_sizes, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(partials, s->partials, sizeof(partials),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(sizes, device_sizes, sizeof(int64_t) * s->k,
								cudaMemcpyDeviceToHost, s->stream), err);
	if (labels)
		GC_CUDA_TRY(cudaMemcpyAsync(labels, s->labels, sizeof(int32_t) * s->n,
									cudaMemcpyDeviceToHost, s->stream), err);
	if (distances)
		GC_CUDA_TRY(cudaMemcpyAsync(distances, s->work, sizeof(double) * s->n,
									cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);

	*inertia = 0.0;
	for (int b = 0; b < SCORE_PARTIALS; b++)
		*inertia += partials[b];
	return GC_OK;
}

extern "C" const GcKmeansBackend gc_kmeans_cuda_backend = {
	"gpu",
	cuda_open,
	cuda_seed_kmeanspp,
	cuda_lloyd,
	cuda_score,
	cuda_close,
};
