/*-------------------------------------------------------------------------
 *
 * pmedian_cuda.cu
 *	  The CUDA p-median backend: a session uploads the rows (from the row
 *	  store's page-locked chunks), their hashes and demands once, then
 *	  serves the driver's steps, in the cooperation of the paper's
 *	  Algorithm 7: the GPU allocates and sums dissimilarities, the host
 *	  builds clusters and moves centres, and only the entity-sized
 *	  arrays those need cross the bus each iteration.
 *
 *	  Those arrays go through one page-locked staging buffer, so that each
 *	  copy is a single DMA rather than the driver's staged pageable copy.
 *
 *	  Every device allocation belongs to the session and is freed by
 *	  close, which the driver calls on success, failure and cancel alike.
 *
 * IDENTIFICATION
 *	  cuda/pmedian_cuda.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "gc_cuda.h"
#include "host_upload.cuh"
#include "pmedian_engine.h"
#include "pmedian_kernels.cuh"
#include "cuda_check.cuh"

typedef struct PmCudaSession
{
	const GcPmParams *params;
	int64_t		n;
	int			d;
	int			p;
	cudaStream_t stream;
	double	   *x;				/* n * d */
	uint64_t   *hashes;			/* n */
	double	   *demand;			/* n, or NULL */
	int32_t		nent;
	int32_t    *ent;			/* n */
	int32_t    *group;			/* n */
	double	   *mind;			/* n */
	int32_t    *cen;			/* p */
	int32_t    *cen_first;		/* p + 1 */
	double	   *penalty;		/* p */
	double	   *cx;				/* p * d, gathered centres */
	int32_t    *alloc;			/* n */
	double	   *dist;			/* n */
	int32_t    *members;		/* n */
	int32_t    *first;			/* p + 1 */
	double	   *xs;				/* n * d, gathered members */
	double	   *sums;			/* n */
	unsigned long long *winner; /* 1 */
	int32_t    *nearest;		/* n */
	double	   *dn;				/* n */
	double	   *ds;				/* n */
	int64_t    *removal;		/* p */
	int32_t    *cand;			/* GC_PM_SWAP_BATCH */
	int32_t    *best_medoid;	/* GC_PM_SWAP_BATCH */
	long long  *best_gain;		/* GC_PM_SWAP_BATCH */
	char	   *stage;			/* page-locked, 24 * n bytes: per-iteration copies */
} PmCudaSession;

/* Regions of the staging buffer: 4-byte arrays first, then 8-byte ones */
#define STAGE_INT(s) ((int32_t *) (s)->stage)
#define STAGE_DOUBLE(s, k) ((double *) ((s)->stage + sizeof(double) * (s)->n * (k)))

static void pm_cuda_close(void *session);

/* Copy count elements to the device on the session's stream */
#define UPLOAD(dst, src, count) \
	GC_CUDA_TRY(cudaMemcpyAsync((dst), (src), sizeof(*(dst)) * (size_t) (count), \
								cudaMemcpyHostToDevice, s->stream), err)
#define DOWNLOAD(dst, src, count) \
	GC_CUDA_TRY(cudaMemcpyAsync((dst), (src), sizeof(*(dst)) * (size_t) (count), \
								cudaMemcpyDeviceToHost, s->stream), err)
#define SYNC() GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err)

/*
 * Cancel by work (engine/common.c): a launch over many entities or rows
 * is cut into chunks of about GC_POLL_WORK_GPU units, and between two
 * chunks the host waits for the first and polls the interrupt hook
 */
static GcStatus
chunk_done(PmCudaSession *s, GcError *err)
{
	SYNC();
	if (s->params->interrupted && s->params->interrupted())
		return gc_fail(err, GC_INTERRUPTED, "interrupted on the GPU");
	return GC_OK;
}

/*
 * Allocate device memory and upload rows, hashes and demands
 */
static GcStatus
upload(PmCudaSession *s, const GcRows *rows, const double *demand, GcError *err)
{
	int64_t		n = s->n;
	int			d = s->d,
				p = s->p;

	GC_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), err);
	ALLOC_OR_RETURN(s->x, (size_t) n * d);
	ALLOC_OR_RETURN(s->hashes, n);
	if (demand != NULL)
		ALLOC_OR_RETURN(s->demand, n);
	ALLOC_OR_RETURN(s->ent, n);
	ALLOC_OR_RETURN(s->group, n);
	ALLOC_OR_RETURN(s->mind, n);
	ALLOC_OR_RETURN(s->cen, p);
	ALLOC_OR_RETURN(s->cen_first, p + 1);
	ALLOC_OR_RETURN(s->penalty, p);
	ALLOC_OR_RETURN(s->cx, (size_t) p * d);
	ALLOC_OR_RETURN(s->alloc, n);
	ALLOC_OR_RETURN(s->dist, n);
	ALLOC_OR_RETURN(s->members, n);
	ALLOC_OR_RETURN(s->first, p + 1);
	ALLOC_OR_RETURN(s->xs, (size_t) n * d);
	ALLOC_OR_RETURN(s->sums, n);
	ALLOC_OR_RETURN(s->winner, 1);
	GC_CUDA_TRY(cudaHostAlloc((void **) &s->stage, 24 * (size_t) (n > 0 ? n : 1),
							  cudaHostAllocDefault), err);
	if (gc_upload_rows(rows, s->x, s->hashes, NULL, NULL, s->stream, err) != GC_OK)
		return err->status;
	if (demand != NULL)
		UPLOAD(s->demand, demand, n);
	SYNC();
	return GC_OK;
}

static GcStatus
pm_cuda_open(const GcRows *rows, const double *demand, const GcPmParams *params,
			 void **session, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) calloc(1, sizeof(PmCudaSession));
	GcStatus	status;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the GPU session");
	s->params = params;
	s->n = rows->n;
	s->d = rows->d;
	s->p = params->p;
	status = upload(s, rows, demand, err);
	if (status != GC_OK)
	{
		pm_cuda_close(s);
		return status;
	}
	*session = s;
	return GC_OK;
}

static void
pm_cuda_close(void *session)
{
	PmCudaSession *s = (PmCudaSession *) session;
	void	   *ptrs[] = {s->x, s->hashes, s->demand, s->ent, s->group, s->mind,
		s->cen, s->cen_first, s->penalty, s->cx, s->alloc, s->dist, s->members,
		s->first, s->xs, s->sums, s->winner, s->nearest, s->dn, s->ds,
	s->removal, s->cand, s->best_medoid, s->best_gain};

	if (s->stream)
		(void) cudaStreamSynchronize(s->stream);
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		cudaFree(ptrs[i]);
	if (s->stage)
		cudaFreeHost(s->stage);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	(void) cudaGetLastError();
	free(s);
}

static GcStatus
pm_cuda_set_entities(void *session, int32_t nent, const int32_t *ent,
					 const int32_t *group, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;

	s->nent = nent;
	UPLOAD(s->ent, ent, nent);
	UPLOAD(s->group, group, nent);
	return GC_OK;
}

/*
 * Upload the centres (and multipliers), gather their rows, allocate, and
 * bring back the allocation and distances
 */
static GcStatus
pm_cuda_allocate(void *session, int32_t ncen, const int32_t *cen,
				 const int32_t *cen_first, int ngroups, const double *penalty,
				 int32_t *alloc, double *dist, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;
	int32_t		step;

	UPLOAD(s->cen, cen, ncen);
	UPLOAD(s->cen_first, cen_first, ngroups + 1);
	if (penalty != NULL)
		UPLOAD(s->penalty, penalty, ncen);
	if (launch_gather_rows(s->x, s->cen, ncen, s->d, s->cx, s->stream, err) != GC_OK)
		return err->status;
	/* an entity costs its group's centres, ncen / ngroups on average, of d units */
	step = (int32_t) gc_poll_gpu_items((int64_t) s->d * (ncen / (ngroups > 0 ? ngroups : 1) + 1),
									   GC_POLL_MIN_GPU_ROWS, s->nent);
	for (int32_t e0 = 0; e0 < s->nent; e0 += step)
	{
		int32_t		count = s->nent - e0 < step ? s->nent - e0 : step;

		if ((e0 > 0 && chunk_done(s, err) != GC_OK) ||
			launch_allocate_entities(s->x, s->d, s->params->metric, s->ent + e0, s->group + e0,
									 count, s->cen, s->cen_first, s->cx,
									 penalty != NULL ? s->penalty : NULL, s->demand,
									 s->alloc + e0, s->dist + e0, s->stream, err) != GC_OK)
			return err->status;
	}
	DOWNLOAD(STAGE_INT(s), s->alloc, s->nent);
	DOWNLOAD(STAGE_DOUBLE(s, 1), s->dist, s->nent);
	SYNC();
	memcpy(alloc, STAGE_INT(s), sizeof(int32_t) * s->nent);
	memcpy(dist, STAGE_DOUBLE(s, 1), sizeof(double) * s->nent);
	return GC_OK;
}

static GcStatus
pm_cuda_cluster_sums(void *session, int32_t ncen, const int32_t *members,
					 const int32_t *first, double *sums, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;
	double		pairs = 0.0;
	int32_t		largest = 0,
				step,
				span;

	memcpy(STAGE_INT(s), members, sizeof(int32_t) * s->nent);
	UPLOAD(s->members, STAGE_INT(s), s->nent);
	UPLOAD(s->first, first, ncen + 1);
	if (launch_gather_rows(s->x, s->members, s->nent, s->d, s->xs, s->stream, err) != GC_OK)
		return err->status;
	/* a member costs its cluster's size in distances: chunks by the mean */
	for (int32_t c = 0; c < ncen; c++)
	{
		int32_t		size = first[c + 1] - first[c];

		pairs += (double) size * size;
		largest = size > largest ? size : largest;
	}
	step = (int32_t) gc_poll_gpu_items((int64_t) (pairs / (s->nent > 0 ? s->nent : 1) + 1.0) * s->d,
									   GC_POLL_MIN_GPU_ROWS, s->nent);
	/* and each chunk in spans of members, one distance a member, so that few wide rows poll too */
	span = (int32_t) gc_poll_gpu_items(gc_gpu_pass_units(step, s->d), 1, largest);
	for (int32_t t0 = 0; t0 < s->nent; t0 += step)
		for (int32_t j0 = 0; j0 < largest; j0 += span)
			if (((t0 > 0 || j0 > 0) && chunk_done(s, err) != GC_OK) ||
				launch_cluster_sums(s->xs, s->d, s->params->metric, s->first, ncen, t0,
									s->nent - t0 < step ? s->nent : t0 + step,
									j0, j0 + span, s->sums, s->stream, err) != GC_OK)
				return err->status;
	DOWNLOAD(STAGE_DOUBLE(s, 1), s->sums, s->nent);
	SYNC();
	memcpy(sums, STAGE_DOUBLE(s, 1), sizeof(double) * s->nent);
	return GC_OK;
}

static GcStatus
pm_cuda_seed_step(void *session, int32_t centre, uint64_t seed, int step,
				  uint64_t *winner, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;
	unsigned long long w;

	if (launch_seed_step(s->x, s->hashes, s->d, s->params->metric, s->ent, s->nent,
						 centre, seed, step, s->mind, s->winner, s->stream, err) != GC_OK)
		return err->status;
	DOWNLOAD(&w, s->winner, 1);
	SYNC();
	*winner = w;
	return GC_OK;
}

/*
 * The swap state (nearest, second-nearest) lives on the device; its
 * arrays are allocated on first use
 */
static GcStatus
pm_cuda_nearest2(void *session, int p, const int32_t *medoids, double far,
				 int32_t *nearest, double *dn, double *ds, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;
	int64_t		step;

	if (s->nearest == NULL)
	{
		ALLOC_OR_RETURN(s->nearest, s->n);
		ALLOC_OR_RETURN(s->dn, s->n);
		ALLOC_OR_RETURN(s->ds, s->n);
		ALLOC_OR_RETURN(s->removal, p);
		ALLOC_OR_RETURN(s->cand, GC_PM_SWAP_BATCH);
		ALLOC_OR_RETURN(s->best_medoid, GC_PM_SWAP_BATCH);
		ALLOC_OR_RETURN(s->best_gain, GC_PM_SWAP_BATCH);
	}
	UPLOAD(s->cen, medoids, p);
	if (launch_gather_rows(s->x, s->cen, p, s->d, s->cx, s->stream, err) != GC_OK)
		return err->status;
	step = gc_poll_gpu_items((int64_t) p * s->d, GC_POLL_MIN_GPU_ROWS, s->n);
	for (int64_t r0 = 0; r0 < s->n; r0 += step)
		if ((r0 > 0 && chunk_done(s, err) != GC_OK) ||
			launch_nearest2(s->x + r0 * s->d, s->n - r0 < step ? s->n - r0 : step, s->d,
							s->params->metric, s->cx, p, far, s->nearest + r0, s->dn + r0,
							s->ds + r0, s->stream, err) != GC_OK)
			return err->status;
	DOWNLOAD(STAGE_INT(s), s->nearest, s->n);
	DOWNLOAD(STAGE_DOUBLE(s, 1), s->dn, s->n);
	DOWNLOAD(STAGE_DOUBLE(s, 2), s->ds, s->n);
	SYNC();
	memcpy(nearest, STAGE_INT(s), sizeof(int32_t) * s->n);
	memcpy(dn, STAGE_DOUBLE(s, 1), sizeof(double) * s->n);
	memcpy(ds, STAGE_DOUBLE(s, 2), sizeof(double) * s->n);
	return GC_OK;
}

static GcStatus
pm_cuda_swap_gains(void *session, int p, int ncand, const int32_t *cand,
				   double scale, const int64_t *removal, int32_t *best_medoid,
				   int64_t *best_gain, GcError *err)
{
	PmCudaSession *s = (PmCudaSession *) session;

	UPLOAD(s->cand, cand, ncand);
	UPLOAD(s->removal, removal, p);
	if (launch_swap_gains(s->x, s->n, s->d, s->params->metric, s->nearest, s->dn,
						  s->ds, p, s->removal, s->cand, ncand, scale,
						  s->best_medoid, s->best_gain, s->stream, err) != GC_OK)
		return err->status;
	DOWNLOAD(best_medoid, s->best_medoid, ncand);
	DOWNLOAD(best_gain, (int64_t *) s->best_gain, ncand);
	SYNC();
	return GC_OK;
}

extern "C" const GcPmBackend gc_pmedian_cuda_backend = {
	"gpu",
	pm_cuda_open,
	pm_cuda_set_entities,
	pm_cuda_allocate,
	pm_cuda_cluster_sums,
	pm_cuda_seed_step,
	pm_cuda_nearest2,
	pm_cuda_swap_gains,
	pm_cuda_close,
};
