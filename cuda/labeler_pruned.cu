/*-------------------------------------------------------------------------
 *
 * labeler_pruned.cu
 *	  The pruned labeler (Wu & Hong, 2011; kernels in pruned_kernels.cu):
 *	  each point starts from its previous label and walks the centroids in
 *	  order of distance from it, stopping where the triangle inequality
 *	  rules out the rest.  It owns the ranked inter-centroid tables, the
 *	  work per point, and the second epoch's re-ordering of the rows by
 *	  work (with the spare buffers it gathers into).  When and on how many
 *	  rows it runs is the driver's hybrid (engine/kmeans_hybrid.c); the
 *	  rows it does not take are labelled by the SIMT kernel.
 *
 * IDENTIFICATION
 *	  cuda/labeler_pruned.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "kmeans_session.cuh"
#include "cuda_check.cuh"

typedef struct PrunedState
{
	float	   *icd;			/* k * k */
	float	   *icd_ranked;		/* k * k, each row in rank order */
	int32_t    *rid;			/* k * k */
	int32_t    *work_per_point; /* n */
	int32_t    *order;			/* n: original index of each position */
	int32_t    *order_step;		/* n */
	int32_t    *sort_keys;		/* n */
	int32_t    *sort_values;	/* n */
	void	   *sort_scratch;
	size_t		sort_scratch_bytes;
	double	   *x64_alt;		/* re-ordering targets */
	double	   *weights_alt;
	float	   *x32_alt;
	int32_t    *labels_alt;
	bool		reordered;		/* rows are in work order, not input order */
} PrunedState;

/*
 * Buffers of pruned labeling, allocated on first use
 */
GcStatus
gc_pruned_open(CudaSession *s, void **state, GcError *err)
{
	PrunedState *p;

	if (*state != NULL)
		return GC_OK;
	STATE_OR_RETURN(p, PrunedState);
	*state = p;
	ALLOC_OR_RETURN(p->icd, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(p->icd_ranked, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(p->rid, (size_t) s->k * s->k);
	ALLOC_OR_RETURN(p->work_per_point, (size_t) s->n);
	return GC_OK;
}

/*
 * Pruned labeling for the first rows points, Lloyd's (the SIMT kernels,
 * which pruning rides on) for the rest: rows between 0 and n makes the
 * hybrid's probe, the work ratio measured on a slice
 */
GcStatus
gc_pruned_label(CudaSession *s, void *state, int64_t rows, IterationStatus *status,
				GcError *err)
{
	PrunedState *p = (PrunedState *) state;

	if (launch_rank_centroids(s->c32, s->k, s->d, p->icd, p->rid, p->icd_ranked,
							  s->stream, err) != GC_OK ||
		launch_assign_points_pruned(s->x32, s->c32, p->icd_ranked, p->rid, rows, s->d,
									s->k, s->labels, p->work_per_point,
									&status->changed, &status->work, s->stream, err) != GC_OK)
		return err->status;
	if (rows < s->n)
		return launch_assign_points(s->x32 + rows * s->d, s->c32, s->n - rows, s->d, s->k,
									s->labels + rows, &status->changed, s->stream, err);
	return GC_OK;
}

/* The gathered copies become the session's rows (and the rows the spares) */
static void
swap_layouts(CudaSession *s, PrunedState *p)
{
	double	   *x64 = s->x64,
			   *weights = s->weights;
	float	   *x32 = s->x32;
	int32_t    *labels = s->labels;

	s->x64 = p->x64_alt, p->x64_alt = x64;
	s->x32 = p->x32_alt, p->x32_alt = x32;
	s->labels = p->labels_alt, p->labels_alt = labels;
	if (weights)
		s->weights = p->weights_alt, p->weights_alt = weights;
}

/*
 * The second epoch of Wu & Hong: move the points (data, float copy and
 * labels) into decreasing order of work, so that the threads of a warp
 * have similar work and read consecutive rows; order keeps, for every
 * position, the point's index in the input
 */
static GcStatus
reorder_by_work(CudaSession *s, PrunedState *p, GcError *err)
{
	int64_t		n = s->n;
	int			d = s->d;

	if (p->order == NULL)
	{
		ALLOC_OR_RETURN(p->order, (size_t) n);
		ALLOC_OR_RETURN(p->order_step, (size_t) n);
		ALLOC_OR_RETURN(p->sort_keys, (size_t) n);
		ALLOC_OR_RETURN(p->sort_values, (size_t) n);
		ALLOC_OR_RETURN(p->x64_alt, (size_t) n * d);
		ALLOC_OR_RETURN(p->x32_alt, (size_t) n * d);
		ALLOC_OR_RETURN(p->labels_alt, (size_t) n);
		if (s->weights)
			ALLOC_OR_RETURN(p->weights_alt, (size_t) n);
	}
	if (launch_order_by_work(p->work_per_point, n, p->order_step, p->sort_keys,
							 p->sort_values, &p->sort_scratch, &p->sort_scratch_bytes,
							 s->stream, err) != GC_OK ||
		launch_gather_rows<double>(s->x64, p->order_step, n, d, false, p->x64_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<float>(s->x32, p->order_step, n, d, false, p->x32_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<int32_t>(s->labels, p->order_step, n, 1, false, p->labels_alt, s->stream, err) != GC_OK ||
		(s->weights &&
		 launch_gather_rows<double>(s->weights, p->order_step, n, 1, false, p->weights_alt, s->stream, err) != GC_OK))
		return err->status;
	/* order of the new layout = order of the old one, gathered the same way */
	if (p->reordered)
	{
		if (launch_gather_rows<int32_t>(p->order, p->order_step, n, 1, false, p->sort_keys,
										s->stream, err) != GC_OK)
			return err->status;
		GC_CUDA_TRY(cudaMemcpyAsync(p->order, p->sort_keys, sizeof(int32_t) * n,
									cudaMemcpyDeviceToDevice, s->stream), err);
	}
	else
		GC_CUDA_TRY(cudaMemcpyAsync(p->order, p->order_step, sizeof(int32_t) * n,
									cudaMemcpyDeviceToDevice, s->stream), err);
	swap_layouts(s, p);
	p->reordered = true;
	return GC_OK;
}

/*
 * Put the points back in input order, so that scoring, labels and later
 * restarts see the caller's row order
 */
static GcStatus
restore_order(CudaSession *s, PrunedState *p, GcError *err)
{
	if (!p->reordered)
		return GC_OK;
	if (launch_gather_rows<double>(s->x64, p->order, s->n, s->d, true, p->x64_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<float>(s->x32, p->order, s->n, s->d, true, p->x32_alt, s->stream, err) != GC_OK ||
		launch_gather_rows<int32_t>(s->labels, p->order, s->n, 1, true, p->labels_alt, s->stream, err) != GC_OK ||
		(s->weights &&
		 launch_gather_rows<double>(s->weights, p->order, s->n, 1, true, p->weights_alt, s->stream, err) != GC_OK))
		return err->status;
	swap_layouts(s, p);
	p->reordered = false;
	return GC_OK;
}

GcStatus
gc_pruned_order_rows(CudaSession *s, void *state, bool by_work, GcError *err)
{
	PrunedState *p = (PrunedState *) state;

	if (p == NULL)
		return GC_OK;
	return by_work ? reorder_by_work(s, p, err) : restore_order(s, p, err);
}

void
gc_pruned_close(void *state)
{
	PrunedState *p = (PrunedState *) state;

	cudaFree(p->icd);
	cudaFree(p->icd_ranked);
	cudaFree(p->rid);
	cudaFree(p->work_per_point);
	cudaFree(p->order);
	cudaFree(p->order_step);
	cudaFree(p->sort_keys);
	cudaFree(p->sort_values);
	cudaFree(p->sort_scratch);
	cudaFree(p->x64_alt);
	cudaFree(p->weights_alt);
	cudaFree(p->x32_alt);
	cudaFree(p->labels_alt);
	free(p);
}
