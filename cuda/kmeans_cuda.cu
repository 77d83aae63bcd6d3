/*-------------------------------------------------------------------------
 *
 * kmeans_cuda.cu
 *	  The CUDA k-means backend: a session uploads the row store's chunks
 *	  (host_upload.cu: asynchronously from page-locked memory, staged by
 *	  helper threads from pageable memory), then seeds, and
 *	  offers the driver (engine/kmeans_fit.c) its steps: begin a restart,
 *	  one label-and-update iteration, the end of a restart, scoring.  Per
 *	  iteration only a 40-byte status (labels changed, largest centroid
 *	  shift, pruned work, re-checks) comes back to the host, from which
 *	  the driver tests convergence and polls for query cancel; centroids
 *	  come back at the end, labels and distances only when asked for.
 *	  For the driver's check of reduced precision it labels a sample of
 *	  rows with its labeler and exactly, and changes labeler on request.
 *	  As one shard of a sharded fit (engine/kmeans_shards.c;
 *	  gc_kmeans_cuda_sharded_backend) it labels and sums without updating
 *	  (step_partial), takes the fit's centroids (load_centroids), scores
 *	  to the exact inertia sum (score_sum), and, streamed, moves onto
 *	  another shard's rows (rebind_rows: their upload queued on its
 *	  stream, ahead of its next pass).  A session runs on the device it
 *	  opened on (params->devices[0], else the opening thread's), made
 *	  current on entry and the caller's put back on return, so a sharded
 *	  fit's lanes may call it from threads of their own.
 *
 *	  Labeling is a labeler's (labeler_table.cu names them by GcKernel; each
 *	  owns its buffers in labeler_*.cu); the session holds what every
 *	  step shares: the rows, the centroids, the exact sums.  All device
 *	  memory belongs to the session and its labelers and is freed by
 *	  close, which the driver calls on success, failure and cancel alike.
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
#include "host_upload.cuh"
#include "kmeans_session.cuh"
#include "cuda_check.cuh"

#define SCORE_PARTIALS 1024
static_assert(SCORE_PARTIALS >= GC_PARALLEL_PARTIALS, "a k-means|| shard's partials");

static void cuda_close(void *session);

/*
 * Allocate device memory and upload the rows chunk by chunk; the labeler
 * of the kernel chosen then builds its copies of the data
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
	if (rows->weighted)
		ALLOC_OR_RETURN(s->weights, (size_t) n);
	ALLOC_OR_RETURN(s->x32, (size_t) n * d);
	ALLOC_OR_RETURN(s->hashes, (size_t) n);
	ALLOC_OR_RETURN(s->offset, (size_t) d);
	ALLOC_OR_RETURN(s->scale, (size_t) d);
	ALLOC_OR_RETURN(s->c64, (size_t) k * d);
	if (s->params->metric == GC_METRIC_COSINE)
		ALLOC_OR_RETURN(s->c64_prev, (size_t) k * d);
	ALLOC_OR_RETURN(s->c32, (size_t) k * d);
	ALLOC_OR_RETURN(s->cnorm, (size_t) s->kpad);
	GC_CUDA_TRY(cudaMemsetAsync(s->cnorm, 0, sizeof(float) * s->kpad, s->stream), err);
	ALLOC_OR_RETURN(s->labels, (size_t) n);
	ALLOC_OR_RETURN(s->old_labels, (size_t) n);
	ALLOC_OR_RETURN(s->moved, (size_t) n);
	ALLOC_OR_RETURN(s->moved_count, 1);
	ALLOC_OR_RETURN(s->work, (size_t) n);
	ALLOC_OR_RETURN(s->sums, (size_t) k * (d + 1));
	ALLOC_OR_RETURN(s->race, (size_t) k);
	ALLOC_OR_RETURN(s->partials, (size_t) SCORE_PARTIALS);
	ALLOC_OR_RETURN(s->status, 1);
	GC_CUDA_TRY(cudaHostAlloc((void **) &s->status_host, sizeof(IterationStatus),
							  cudaHostAllocDefault), err);
	for (int e = 0; e < 3; e++)
		GC_CUDA_TRY(cudaEventCreate(&s->phase[e]), err);
	for (int e = 0; e < 2; e++)
		GC_CUDA_TRY(cudaEventCreateWithFlags(&s->chunk_done[e], cudaEventDisableTiming), err);

	if (gc_upload_rows(rows, s->x64, s->hashes, s->weights, s->x32, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(s->offset, s->frame->offset, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(s->scale, s->frame->scale, sizeof(double) * d,
								cudaMemcpyHostToDevice, s->stream), err);
	if (launch_centre_rows(s->x64, s->offset, n, d, s->x32, s->stream, err) != GC_OK)
		return err->status;
	if (s->labeler->open &&
		s->labeler->open(s, &s->labeler_state, err) != GC_OK)
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
	cudaError_t e;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the GPU session");
	e = params->devices ? cudaSuccess : cudaGetDevice(&s->device);
	if (params->devices)
		s->device = params->devices[0];
	DeviceScope on(s->device);

	if (e == cudaSuccess)
		e = on.error;
	if (e != cudaSuccess)
	{
		free(s);
		return gc_cuda_fail(err, e, "choosing the session's device", __FILE__, __LINE__);
	}
	s->rows = rows;
	s->frame = frame;
	s->labeling_params = *params;
	if (params->precision == GC_PRECISION_AUTO)
		s->labeling_params.precision = gc_auto_precision(rows->d, params->k);
	s->params = &s->labeling_params;
	s->n = s->capacity = rows->n;
	s->d = rows->d;
	s->k = params->k;
	/* centroid rows (and norms) of the tensor kernels: a multiple of their tile */
	s->kpad = (s->k + GC_TENSOR_ROW_ALIGN - 1) / GC_TENSOR_ROW_ALIGN * GC_TENSOR_ROW_ALIGN;
	s->kernel = gc_choose_kernel(s->params, s->d, s->k);
	s->labeler = gc_labeler(s->kernel);
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
	DeviceScope on(s->device);

	if (s->stream)
		(void) cudaStreamSynchronize(s->stream);
	cudaFree(s->x64);
	cudaFree(s->weights);
	cudaFree(s->x32);
	cudaFree(s->hashes);
	cudaFree(s->offset);
	cudaFree(s->scale);
	cudaFree(s->c64);
	cudaFree(s->c64_prev);
	cudaFree(s->c32);
	cudaFree(s->cnorm);
	cudaFree(s->labels);
	cudaFree(s->old_labels);
	cudaFree(s->moved);
	cudaFree(s->moved_count);
	cudaFree(s->work);
	cudaFree(s->sums);
	cudaFree(s->race);
	cudaFree(s->partials);
	cudaFree(s->status);
	if (s->labeler_state && s->labeler->close)
		s->labeler->close(s->labeler_state);
	if (s->pruned)
		gc_pruned_close(s->pruned);
	if (s->bounded)
		gc_bounded_close(s->bounded);
	if (s->status_host)
		cudaFreeHost(s->status_host);
	for (int e = 0; e < 3; e++)
		if (s->phase[e])
			cudaEventDestroy(s->phase[e]);
	for (int e = 0; e < 2; e++)
		if (s->chunk_done[e])
			cudaEventDestroy(s->chunk_done[e]);
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
	DeviceScope on(s->device);
	unsigned long long *race_host;
	/* a step is n d units: poll after about GC_POLL_WORK_GPU of them */
	int64_t		poll_steps = gc_poll_gpu_items(gc_gpu_pass_units(s->n, s->d), 1, s->k);

	if (gc_seed_candidates(params, s->n, s->d) > 1)
		return launch_greedy_kmeanspp(s->x64, s->hashes, s->weights, s->n, s->d, params,
									  seed, s->frame->inertia_exp, s->stream, chosen, err);
	GC_CUDA_TRY(cudaMemsetAsync(s->race, 0xff, sizeof(unsigned long long) * s->k,
								s->stream), err);
	for (int t = 0; t < s->k; t++)
	{
		if (launch_kmeanspp_step(s->x64, s->hashes, s->weights, s->n, s->d, seed, t,
								 s->frame->inertia_exp, s->work, s->race, s->stream,
								 err) != GC_OK)
			return err->status;
		if ((t + 1) % poll_steps == 0)
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

static GcStatus
cuda_seed_kmeans_parallel(void *session, const GcKmeansParams *params, uint64_t seed,
						  int64_t *chosen, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);

	return gc_seed_kmeans_parallel_cuda(s, params, seed, chosen, err);
}

/* The labeler's copies of the centroids, after they changed */
static GcStatus
refresh_centroids(CudaSession *s, GcError *err)
{
	if (s->labeler->refresh == NULL)
		return GC_OK;
	return s->labeler->refresh(s, s->labeler_state, err);
}

/*
 * Every row labelled by labeler, in chunks of rows of about
 * GC_POLL_WORK_GPU units of k d each (cancel by work, engine/common.c):
 * while one chunk runs, the host waits for the end of the one before it
 * and polls the interrupt hook, so the device never idles for the poll.
 * On a stop the chunk in flight finishes before close frees what it reads
 * (close synchronises the stream).
 */
GcStatus
gc_label_in_chunks(CudaSession *s, const Labeler *labeler, void *state,
				   unsigned long long *changed, IterationStatus *status, GcError *err)
{
	int64_t		rows = gc_poll_gpu_items((int64_t) s->k * s->d, GC_POLL_MIN_GPU_ROWS, s->n);
	int			chunk = 0;

	for (int64_t first = 0; first < s->n; first += rows, chunk++)
	{
		int64_t		count = s->n - first < rows ? s->n - first : rows;

		if (labeler->label(s, state, first, count, changed, status, err) != GC_OK)
			return err->status;
		if (count == s->n)
			break;
		GC_CUDA_TRY(cudaEventRecord(s->chunk_done[chunk % 2], s->stream), err);
		if (chunk > 0)
		{
			GC_CUDA_TRY(cudaEventSynchronize(s->chunk_done[(chunk - 1) % 2]), err);
			if (interrupted(s))
				return gc_fail(err, GC_INTERRUPTED, "interrupted while labelling");
		}
	}
	return GC_OK;
}

/*
 * Lloyd's labeling of every row with the session's labeler; the bounds of
 * bounded labeling no longer hold.  k-means|| labels its samples with it,
 * on a copy of the session.
 */
GcStatus
gc_label_points(CudaSession *s, unsigned long long *changed, IterationStatus *status,
				GcError *err)
{
	gc_bounded_forget(s->bounded);
	return gc_label_in_chunks(s, s->labeler, s->labeler_state, changed, status, err);
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
	if (launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm, 0, NULL,
								s->stream, err) != GC_OK)
		return err->status;
	return refresh_centroids(s, err);
}

/* Whether Lloyd's iterations label with drift bounds (labeler_table.cu decides) */
static bool
bounds_may_pay(const CudaSession *s)
{
	return gc_bounds_may_pay(s->params->algorithm, s->kernel, s->k);
}

static GcStatus
cuda_begin(void *session, const double *centroids, GcRestartPlan *plan, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	GcStatus	status;

	plan->can_prune = gc_kernel_is_simt(s->kernel);
	if (s->labeler->restart)
		s->kernel = s->labeler->restart(s, s->labeler_state);
	plan->kernel = gc_kernel_name(s->kernel);
	s->iteration = 0;
	gc_bounded_forget(s->bounded);
	if (bounds_may_pay(s) && gc_bounded_open(s, &s->bounded, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemsetAsync(s->labels, 0xff, sizeof(int32_t) * s->n, s->stream), err);
	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;
	return GC_OK;
}

static GcStatus
cuda_prepare_pruning(void *session, bool *available, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);

	*available = true;
	return gc_pruned_open(s, &s->pruned, err);
}

/*
 * The centroids from the sums, and the sum of their squared shifts into
 * the status; under the cosine metric back to unit length, the shifts
 * measured after
 */
static GcStatus
update_centroids(CudaSession *s, GcError *err)
{
	size_t		kd = (size_t) s->k * s->d;
	bool		spherical = s->params->metric == GC_METRIC_COSINE;

	if (spherical)
		GC_CUDA_TRY(cudaMemcpyAsync(s->c64_prev, s->c64, sizeof(double) * kd,
									cudaMemcpyDeviceToDevice, s->stream), err);
	if (launch_update_centroids(s->sums, s->sums + kd, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm, s->frame->shift_exp,
								spherical ? NULL : &s->status->shift_sum,
								s->stream, err) != GC_OK ||
		(spherical &&
		 launch_normalize_centroids(s->sums + kd, s->offset, s->d, s->k, s->c64,
									s->c64_prev, s->c32, s->cnorm, s->frame->shift_exp,
									&s->status->shift_sum, s->stream, err) != GC_OK))
		return err->status;
	return GC_OK;
}

/*
 * An iteration's labeling, pruned for the first pruned_rows points (0:
 * none), by drift bounds where bounded, else Lloyd's, and the exact sums
 * brought up to its labels: the sums carry over, so only points that
 * change cluster update them, but a session moved onto other rows
 * (rebind_rows) sums them afresh.  Phase events 0 and 1 bracket the
 * labeling.
 */
static GcStatus
label_and_accumulate(CudaSession *s, int64_t pruned_rows, bool bounded, GcStepStatus *out,
					 GcError *err)
{
	size_t		kd = (size_t) s->k * s->d;
	GcStatus	labelled;

	s->iteration++;
	out->kernel = gc_kernel_name(s->kernel);
	GC_CUDA_TRY(cudaMemsetAsync(s->status, 0, sizeof(IterationStatus), s->stream), err);
	if (s->sums_stale)
	{
		GC_CUDA_TRY(cudaMemsetAsync(s->sums, 0, sizeof(unsigned long long) * (kd + s->k),
									s->stream), err);
		GC_CUDA_TRY(cudaMemsetAsync(s->old_labels, 0xff, sizeof(int32_t) * s->n, s->stream),
					err);
		s->sums_stale = false;
	}
	else
		GC_CUDA_TRY(cudaMemcpyAsync(s->old_labels, s->labels, sizeof(int32_t) * s->n,
									cudaMemcpyDeviceToDevice, s->stream), err);
	GC_CUDA_TRY(cudaEventRecord(s->phase[0], s->stream), err);
	if (pruned_rows > 0)
	{
		gc_bounded_forget(s->bounded);
		labelled = gc_pruned_label(s, s->pruned, pruned_rows, s->status, err);
	}
	else if (bounded)
		labelled = gc_bounded_label(s, s->bounded, s->status, err);
	else
		labelled = gc_label_points(s, &s->status->changed, s->status, err);
	if (labelled != GC_OK)
		return labelled;
	GC_CUDA_TRY(cudaEventRecord(s->phase[1], s->stream), err);
	return launch_accumulate_clusters(s->x64, s->weights, s->labels, s->old_labels, s->moved,
									  s->moved_count, s->offset, s->scale, s->n,
									  s->d, s->k, s->sums, s->sums + kd, s->stream, err);
}

/*
 * The end of a step labelled as label_and_accumulate's arguments say:
 * phase event 2, the status read back (the one read of the iteration),
 * the step's numbers into out, and the labeler's say on the next step's
 * kernel
 */
static GcStatus
finish_step(CudaSession *s, int64_t pruned_rows, bool bounded, GcStepStatus *out,
			GcError *err)
{
	IterationStatus st;
	float		label_ms,
				update_ms;

	GC_CUDA_TRY(cudaEventRecord(s->phase[2], s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(s->status_host, s->status, sizeof(IterationStatus),
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	st = *s->status_host;
	GC_CUDA_TRY(cudaEventElapsedTime(&label_ms, s->phase[0], s->phase[1]), err);
	GC_CUDA_TRY(cudaEventElapsedTime(&update_ms, s->phase[1], s->phase[2]), err);

	out->changed = (int64_t) st.changed;
	out->shift_sum = st.shift_sum;
	out->pruned_work = (double) st.work;
	out->distances = pruned_rows > 0 ?
		(double) st.work + (double) (s->n - pruned_rows) * s->k :
		bounded ? (double) st.work : (double) s->n * s->k;
	out->rechecked = (double) (gc_kernel_is_screen(s->kernel) ? st.screened : st.doubtful);
	out->exact_checked = (double) st.doubtful;
	out->labeling_ms = label_ms;
	out->update_ms = update_ms;
	if (s->labeler->review)
		s->kernel = s->labeler->review(s, s->labeler_state, &st);
	return GC_OK;
}

/*
 * One iteration: labeling (pruned for the first pruned_rows points, Lloyd's
 * for the rest), the centroid update, and the status.  The labeler then
 * says which kernel the next one takes.
 */
static GcStatus
cuda_step(void *session, int64_t pruned_rows, GcStepStatus *out, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	bool		bounded = pruned_rows == 0 && s->bounded != NULL && bounds_may_pay(s);
	GcStatus	status;

	if ((status = label_and_accumulate(s, pruned_rows, bounded, out, err)) != GC_OK ||
		(status = update_centroids(s, err)) != GC_OK ||
		(status = refresh_centroids(s, err)) != GC_OK)
		return status;
	return finish_step(s, pruned_rows, bounded, out, err);
}

/*
 * A sharded fit's step (engine/kmeans_shards.c): Lloyd's labeling of every
 * row with the session's labeler (pruned_rows only saves work, and pruned
 * labeling gives Lloyd's labels), the exact sums brought up to the new
 * labels as step brings them, and copied out: the integers the CPU's
 * step_partial makes for the same labels; a streamed shard's labels go
 * back to its caller.  The centroids stay; the sums keep following the
 * labels until the next begin or rebind.
 */
static GcStatus
cuda_step_partial(void *session, int64_t pruned_rows, long long *sums, long long *counts,
				  GcStepStatus *out, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	size_t		kd = (size_t) s->k * s->d;
	GcStatus	status;

	(void) pruned_rows;
	if ((status = label_and_accumulate(s, 0, false, out, err)) != GC_OK)
		return status;
	/* unsigned on the device, two's complement: the same 64 bits */
	GC_CUDA_TRY(cudaMemcpyAsync(sums, s->sums, sizeof(long long) * kd,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(counts, s->sums + kd, sizeof(long long) * s->k,
								cudaMemcpyDeviceToHost, s->stream), err);
	if (s->bound_labels)
		GC_CUDA_TRY(cudaMemcpyAsync(s->bound_labels, s->labels, sizeof(int32_t) * s->n,
									cudaMemcpyDeviceToHost, s->stream), err);
	return finish_step(s, 0, false, out, err);
}

/*
 * A streamed shard's session moved onto view's rows: the rows' last
 * labels, from which the next step counts changes (first: a copy from
 * pageable memory waits for the stream, which holds nothing yet), then
 * the rows' upload, the centring and the labeler's copies queued on the
 * session's stream (from page-locked chunks without waiting; pageable
 * ones are staged first), so that the call returns while they run; that
 * step sums the rows afresh.  A labeler that follows rows (rows_moved)
 * keeps its buffers: closing and opening one would free and allocate,
 * which waits for the device.
 */
static GcStatus
cuda_rebind_rows(void *session, const GcRows *view, int32_t *labels, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);

	if (view->n > s->capacity)
		return gc_fail(err, GC_ERR_RANGE, "a shard of %lld rows is past its session's %lld",
					   (long long) view->n, (long long) s->capacity);
	s->rows = view;
	s->n = view->n;
	s->bound_labels = labels;
	s->sums_stale = true;
	gc_bounded_forget(s->bounded);
	GC_CUDA_TRY(cudaMemcpyAsync(s->labels, labels, sizeof(int32_t) * s->n,
								cudaMemcpyHostToDevice, s->stream), err);
	if (gc_upload_rows(view, s->x64, s->hashes, s->weights, s->x32, s->stream, err) != GC_OK ||
		launch_centre_rows(s->x64, s->offset, s->n, s->d, s->x32, s->stream, err) != GC_OK)
		return err->status;
	if (s->labeler_state && s->labeler->rows_moved)
		return s->labeler->rows_moved(s, s->labeler_state, err);
	if (s->labeler_state && s->labeler->close)
		s->labeler->close(s->labeler_state);
	s->labeler_state = NULL;
	if ((s->labeler->open && s->labeler->open(s, &s->labeler_state, err) != GC_OK) ||
		refresh_centroids(s, err) != GC_OK)
		return err->status;
	return GC_OK;
}

/*
 * A sharded fit's new centroids: their float copies and norms as begin
 * makes them (an update with all counts zero, here s->race's, free after
 * seeding, so that the sums stay), and the labeler's copies; the labels
 * stay
 */
static GcStatus
cuda_load_centroids(void *session, const double *centroids, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	size_t		kd = (size_t) s->k * s->d;

	GC_CUDA_TRY(cudaMemcpyAsync(s->c64, centroids, sizeof(double) * kd,
								cudaMemcpyHostToDevice, s->stream), err);
	GC_CUDA_TRY(cudaMemsetAsync(s->race, 0, sizeof(unsigned long long) * s->k,
								s->stream), err);
	if (launch_update_centroids(s->sums, s->race, s->offset, s->scale, s->d,
								s->k, s->c64, s->c32, s->cnorm, 0, NULL,
								s->stream, err) != GC_OK ||
		refresh_centroids(s, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

static GcStatus
cuda_order_rows(void *session, bool by_work, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);

	gc_bounded_forget(s->bounded);
	return gc_pruned_order_rows(s, s->pruned, by_work, err);
}

static GcStatus
cuda_end(void *session, double *centroids, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	GcStatus	status;

	if ((status = gc_pruned_order_rows(s, s->pruned, false, err)) != GC_OK)
		return status;
	GC_CUDA_TRY(cudaMemcpyAsync(centroids, s->c64, sizeof(double) * s->k * s->d,
								cudaMemcpyDeviceToHost, s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

/*
 * Sizes and the inertia's exact sum (units of 2^-inertia_exp), and labels
 * and distances where asked for, under centroids; the sums are spent
 */
static GcStatus
cuda_score_sum(void *session, const double *centroids, int32_t *labels,
			   double *distances, int64_t *sizes, gc_u128 *inertia_sum, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	gc_u128		partials[SCORE_PARTIALS];
	gc_u128		total = 0;
	unsigned long long *device_sizes = s->sums;	/* free between iterations */
	GcStatus	status;

	if ((status = load_centroids(s, centroids, err)) != GC_OK)
		return status;
	if (gc_label_points(s, NULL, NULL, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemsetAsync(device_sizes, 0, sizeof(unsigned long long) * s->k,
								s->stream), err);
	if (launch_score_points(s->x64, s->weights, s->c64, s->labels, s->n, s->d,
							s->frame->inertia_exp,
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

	for (int b = 0; b < SCORE_PARTIALS; b++)
		total += partials[b];
	*inertia_sum = total;
	return GC_OK;
}

static GcStatus
cuda_score(void *session, const double *centroids, int32_t *labels,
		   double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	gc_u128		total = 0;
	GcStatus	status = cuda_score_sum(s, centroids, labels, distances, sizes, &total, err);

	if (status == GC_OK)
		*inertia = gc_inertia_value(total, s->frame);
	return status;
}

/* The precision Lloyd's labeling runs at now */
static GcPrecision
cuda_precision(void *session)
{
	return ((CudaSession *) session)->params->precision;
}

/*
 * Label at another precision from the next restart on: the labeler of
 * its kernel replaces the current one, which is closed at once
 */
static GcStatus
cuda_set_precision(void *session, GcPrecision precision, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);

	s->labeling_params.precision = precision;
	if (s->labeler_state && s->labeler->close)
		s->labeler->close(s->labeler_state);
	s->labeler_state = NULL;
	s->kernel = gc_choose_kernel(s->params, s->d, s->k);
	s->labeler = gc_labeler(s->kernel);
	if (s->labeler->open && s->labeler->open(s, &s->labeler_state, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

/* The m labels of sample (on the device) from the session's labels into host */
static GcStatus
copy_sample_labels(CudaSession *s, const int64_t *sample, int m, int32_t *buffer,
				   int32_t *host, GcError *err)
{
	if (launch_gather_labels(s->labels, sample, m, buffer, s->stream, err) != GC_OK)
		return err->status;
	GC_CUDA_TRY(cudaMemcpyAsync(host, buffer, sizeof(int32_t) * m, cudaMemcpyDeviceToHost,
								s->stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(s->stream), err);
	return GC_OK;
}

/* The device side of the check's sample */
typedef struct SampleBuffers
{
	int64_t    *rows;			/* m row numbers */
	int32_t    *pairs;			/* m (row, previous label) pairs: refine_labels' list */
	unsigned int *count;		/* m, the list's length */
	int32_t    *gathered;		/* m labels copied out of the session's */
	double	   *columns;		/* the centroids by column, k x d */
} SampleBuffers;

/*
 * The check's sample: every row labelled by the labeler under centroids,
 * the sample's labels copied out, then the sample's rows labelled exactly
 * (refine_labels: double, as the CPU computes) and copied out.  The
 * session's labels are left as the exact check wrote them, which the next
 * begin resets.
 */
static GcStatus
label_sample_on_device(CudaSession *s, const double *centroids, const int64_t *sample,
					   int m, int32_t *labels, int32_t *exact, const SampleBuffers *b,
					   GcError *err)
{
	TensorRefinement refine;
	int32_t    *host_pairs;
	unsigned int m_count = (unsigned int) m;
	cudaError_t e;

	host_pairs = (int32_t *) malloc(sizeof(int32_t) * 2 * m);
	if (host_pairs == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the precision check");
	for (int i = 0; i < m; i++)
	{
		host_pairs[2 * i] = (int32_t) sample[i];
		host_pairs[2 * i + 1] = 0;
	}
	e = cudaMemcpyAsync(b->pairs, host_pairs, sizeof(int32_t) * 2 * m, cudaMemcpyHostToDevice,
						s->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s->stream);
	free(host_pairs);
	if (e != cudaSuccess)
		return gc_cuda_fail(err, e, "uploading the precision check's sample", __FILE__, __LINE__);
	GC_CUDA_TRY(cudaMemcpyAsync(b->rows, sample, sizeof(int64_t) * m, cudaMemcpyHostToDevice,
								s->stream), err);
	GC_CUDA_TRY(cudaMemcpyAsync(b->count, &m_count, sizeof(unsigned int), cudaMemcpyHostToDevice,
								s->stream), err);
	if (load_centroids(s, centroids, err) != GC_OK ||
		gc_label_points(s, NULL, NULL, err) != GC_OK ||
		copy_sample_labels(s, b->rows, m, b->gathered, labels, err) != GC_OK)
		return err->status;

	memset(&refine, 0, sizeof(refine));
	refine.x64 = s->x64;
	refine.c64 = s->c64;
	refine.c64_columns = b->columns;
	refine.d = s->d;
	if (launch_centroid_columns(s->c64, s->k, s->d, b->columns, s->stream, err) != GC_OK ||
		launch_refine_labels(&refine, s->k, b->pairs, b->count, s->labels, NULL, s->stream,
							 err) != GC_OK)
		return err->status;
	return copy_sample_labels(s, b->rows, m, b->gathered, exact, err);
}

static GcStatus
cuda_label_sample(void *session, const double *centroids, const int64_t *sample, int m,
				  int32_t *labels, int32_t *exact, GcError *err)
{
	CudaSession *s = (CudaSession *) session;
	DeviceScope on(s->device);
	SampleBuffers b = {NULL, NULL, NULL, NULL, NULL};
	GcStatus	status;

	if ((status = device_alloc(&b.rows, m, err)) == GC_OK &&
		(status = device_alloc(&b.pairs, 2 * (size_t) m, err)) == GC_OK &&
		(status = device_alloc(&b.count, 1, err)) == GC_OK &&
		(status = device_alloc(&b.gathered, m, err)) == GC_OK &&
		(status = device_alloc(&b.columns, (size_t) s->k * s->d, err)) == GC_OK)
		status = label_sample_on_device(s, centroids, sample, m, labels, exact, &b, err);
	(void) cudaStreamSynchronize(s->stream);
	cudaFree(b.rows);
	cudaFree(b.pairs);
	cudaFree(b.count);
	cudaFree(b.gathered);
	cudaFree(b.columns);
	return status;
}

extern "C" const GcKmeansBackend gc_kmeans_cuda_backend = {
	"gpu",
	&gc_hybrid_gpu_rules,
	false,						/* the driver polls after each status read */
	true,						/* narrow rows go up as float32 (host_upload.cu) */
	cuda_open,
	cuda_seed_kmeanspp,
	cuda_seed_kmeans_parallel,
	cuda_begin,
	cuda_prepare_pruning,
	cuda_step,
	cuda_order_rows,
	cuda_end,
	cuda_score,
	cuda_close,
	cuda_precision,
	cuda_set_precision,
	cuda_label_sample,
	cuda_step_partial,
	cuda_load_centroids,
	cuda_score_sum,
	gc_cuda_parallel_shard,		/* k-means|| over shards: seeding_shard.cu */
	NULL,						/* k-means++ over shards: the CPU's over every row */
	cuda_rebind_rows,
};

/* The sharded backend's session with GPU sessions as its shards */
static GcStatus
cuda_shards_open(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
				 void **session, GcError *err)
{
	return gc_kmeans_shards_open(&gc_kmeans_cuda_backend, rows, frame, params, session, err);
}

/*
 * The CPU sharded backend's entries, opening GPU shards, each on its
 * lane's device; the driver polls between steps
 */
static GcKmeansBackend
cuda_sharded_backend(void)
{
	GcKmeansBackend b = gc_kmeans_cpu_sharded_backend;

	b.name = "gpu sharded";
	b.hybrid = &gc_hybrid_gpu_rules;
	b.step_polls = false;
	/* float32 rows stay float32: the sessions upload them so, seeding widens blocks */
	b.reads_narrow = true;
	b.open = cuda_shards_open;
	return b;
}

extern "C" const GcKmeansBackend gc_kmeans_cuda_sharded_backend = cuda_sharded_backend();
