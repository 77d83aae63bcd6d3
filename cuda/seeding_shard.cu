/*-------------------------------------------------------------------------
 *
 * seeding_shard.cu
 *	  A GPU session as one shard of a sharded fit's k-means|| seeding
 *	  (GcParallelOps, engine/gc_seeding.h): its nearest passes, n m d
 *	  multiply-adds each and nearly all of seeding's work, on the session's
 *	  device; the first race, the rounds' sampling and the candidates'
 *	  weights, a few operations a row each, by the CPU shard's passes
 *	  (engine/seeding_parallel.c) over the same rows on the host.
 *
 * A nearest pass stages its candidates in the session's centroid buffers
 * (free until a restart begins), at most k at a time: a batch of more is
 * taken in pieces in order, each lowering D^2 only where strictly nearer,
 * which keeps the lowest candidate on ties as one pass over them all
 * does.  Each piece is labelled by the exact tensor labeler
 * (gc_label_rows_against, as the one-session seeding's rounds are:
 * seeding_parallel.cu; the labels in the session's moved), and the exact
 * distances to the labels lower D^2
 * and the nearest candidate, held in the session's work and old_labels
 * (free until a restart begins too) and copied to the host after each
 * pass, where the CPU passes read them.  So the shard's answers are the
 * CPU shard's, to the bit.  The first shard's device also reclusters the
 * candidates (gc_recluster_candidates, as the one-session seeding does),
 * from the store of them the CPU's recluster would read.
 *
 * A streamed shard's session is one of the two its lane passes its
 * streamed shards through (engine/kmeans_shards.c): a pass moves it back
 * onto the shard's rows where another shard's pass moved it away, and
 * copies the shard's D^2 and nearest candidates back to the device where
 * another shard's pass overwrote them (CudaSession.seeding_owner).
 *
 * IDENTIFICATION
 *	  cuda/seeding_shard.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"
#include "gc_cuda.h"

typedef struct GpuParallelShard
{
	GcParallelShard *host;		/* the CPU shard over the same rows: the other passes */
	CudaSession *s;
	const GcRows *view;			/* the shard's rows */
	int32_t    *view_labels;	/* their labels between passes (streamed: a rebind takes them) */
	double	   *mind2;			/* n, the host's: the CPU shard's */
	int32_t    *nearest;		/* n, likewise */
} GpuParallelShard;

static GcStatus
gpu_first(void *shard, uint64_t seed, uint64_t *key, GcError *err)
{
	return gc_parallel_cpu_ops.first(((GpuParallelShard *) shard)->host, seed, key, err);
}

static GcStatus
gpu_sample(void *shard, uint64_t seed, int round, double phi, GcRowList *sampled, GcError *err)
{
	return gc_parallel_cpu_ops.sample(((GpuParallelShard *) shard)->host, seed, round, phi,
									  sampled, err);
}

static GcStatus
gpu_weights(void *shard, int64_t *weight, GcError *err)
{
	return gc_parallel_cpu_ops.weights(((GpuParallelShard *) shard)->host, weight, err);
}

/* The session on the shard's rows, holding its D^2 and nearest candidates unless first is 0 */
static GcStatus
take_session(GpuParallelShard *p, int64_t first, GcError *err)
{
	CudaSession *s = p->s;

	if (s->rows != p->view &&
		gc_kmeans_cuda_backend.rebind_rows(s, p->view, p->view_labels, err) != GC_OK)
		return err->status;
	if (first > 0 && s->seeding_owner != p)
	{
		GC_CUDA_TRY(cudaMemcpyAsync(s->work, p->mind2, sizeof(double) * s->n,
									cudaMemcpyHostToDevice, s->stream), err);
		GC_CUDA_TRY(cudaMemcpyAsync(s->old_labels, p->nearest, sizeof(int32_t) * s->n,
									cudaMemcpyHostToDevice, s->stream), err);
	}
	s->seeding_owner = p;
	return GC_OK;
}

/*
 * Each row's D^2 lowered to its nearest of the m candidates of batch,
 * numbered first onwards (set where first is 0), in pieces of at most k;
 * the shard's potential, and D^2 and the nearest candidates back on the
 * host
 */
static GcStatus
gpu_nearest(void *shard, const double *batch, int64_t first, int64_t m, gc_u128 *potential,
			GcError *err)
{
	GpuParallelShard *p = (GpuParallelShard *) shard;
	CudaSession *s = p->s;
	DeviceScope on(s->device);

	if (take_session(p, first, err) != GC_OK)
		return err->status;
	for (int64_t done = 0; done < m;)
	{
		int64_t		piece = m - done < s->k ? m - done : s->k;
		bool		initial = first + done == 0;

		if (gc_stage_rows(s, batch + (size_t) done * s->d, piece, s->kpad, s->c64, s->c32,
						  s->cnorm, err) != GC_OK ||
			(piece > 1 &&
			 gc_label_rows_against(s, s->c64, s->c32, s->cnorm, piece, s->moved,
								   initial ? NULL : s->work, err) != GC_OK) ||
			gc_parallel_nearest_pass(s, s->c64, piece > 1 ? s->moved : NULL, first + done,
									 initial, s->work, s->old_labels, s->partials, potential,
									 err) != GC_OK)
			return err->status;
		done += piece;
	}
	GC_CUDA_TRY(cudaMemcpyAsync(p->mind2, s->work, sizeof(double) * s->n,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(p->nearest, s->old_labels, sizeof(int32_t) * s->n,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

/*
 * The weighted candidates reclustered on the session's device, from their
 * own store's values, draw hashes and weights (what the CPU's recluster
 * reads)
 */
static GcStatus
gpu_recluster(void *shard, const GcRows *cand, const GcKmeansParams *params, uint64_t seed,
			  int64_t *picks, GcError *err)
{
	CudaSession *s = ((GpuParallelShard *) shard)->s;
	DeviceScope on(s->device);
	int64_t		m = cand->n,
				mpad = (m + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN * GC_TENSOR_ROW_ALIGN;
	double	   *values = (double *) malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * s->d);
	uint64_t   *hashes = (uint64_t *) malloc(sizeof(uint64_t) * (m > 0 ? m : 1));
	double	   *weights = (double *) malloc(sizeof(double) * (m > 0 ? m : 1));
	double	   *c64 = NULL;
	float	   *c32 = NULL,
			   *cnorm = NULL;
	GcStatus	status = GC_OK;

	if (values == NULL || hashes == NULL || weights == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int ci = 0; status == GC_OK && ci < cand->nchunks; ci++)
	{
		const GcChunk *chunk = &cand->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;

			gc_rows_copy_row(cand, row, values + (size_t) row * s->d);
			hashes[row] = gc_draw_hash(cand, chunk, i);
			weights[row] = (double) gc_chunk_weight(chunk, i);
		}
	}
	if (status == GC_OK)
		status = device_alloc(&c64, (size_t) mpad * s->d, err);
	if (status == GC_OK)
		status = device_alloc(&c32, (size_t) mpad * s->d, err);
	if (status == GC_OK)
		status = device_alloc(&cnorm, (size_t) mpad, err);
	if (status == GC_OK)
		status = gc_stage_rows(s, values, m, mpad, c64, c32, cnorm, err);
	if (status == GC_OK)
		status = gc_recluster_candidates(s, params, seed, c64, c32, hashes, weights, m, picks,
										 err);
	(void) cudaStreamSynchronize(s->stream);
	cudaFree(c64);
	cudaFree(c32);
	cudaFree(cnorm);
	(void) cudaGetLastError();
	free(values);
	free(hashes);
	free(weights);
	return status;
}

static void
gpu_close(void *shard)
{
	GpuParallelShard *p = (GpuParallelShard *) shard;

	if (p->s->seeding_owner == p)
		p->s->seeding_owner = NULL;
	gc_parallel_shard_close(p->host);
	free(p);
}

static const GcParallelOps gpu_parallel_ops = {
	gpu_first,
	gpu_nearest,
	gpu_sample,
	gpu_weights,
	gpu_close,
	gpu_recluster,
};

GcStatus
gc_cuda_parallel_shard(void *session, const GcKmeansParams *params, int64_t row_base,
					   void **shard, const GcParallelOps **ops, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	GpuParallelShard *p = (GpuParallelShard *) calloc(1, sizeof(GpuParallelShard));

	if (p == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (gc_parallel_shard_open(s->rows, row_base, s->frame, params, &p->host, err) != GC_OK)
	{
		free(p);
		return err->status;
	}
	p->s = s;
	p->view = s->rows;
	p->view_labels = s->bound_labels;
	gc_parallel_shard_state(p->host, &p->mind2, &p->nearest);
	*shard = p;
	*ops = &gpu_parallel_ops;
	return GC_OK;
}
