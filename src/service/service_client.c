/*-------------------------------------------------------------------------
 *
 * service_client.c
 *	  A backend's side of the GPU service: put a fit's rows (and a p-median
 *	  fit's demands) into a request segment, queue it in this process's
 *	  slot, wait on the latch for the result (showing the service's
 *	  progress meanwhile) and copy the result out.
 *
 * The wait honours cancel, statement_timeout and termination: it calls
 * CHECK_FOR_INTERRUPTS, and the error cleanup takes the request back (a
 * queued one is freed at once; a running one is flagged, its fit stops at
 * the engine's next interrupt poll and the service frees the slot).  A
 * service that is not running, that stops, or that restarted since the
 * request was queued makes the caller run the fit itself: a backend never
 * waits on a service that is gone.
 *
 * IDENTIFICATION
 *	  src/service/service_client.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_service.h"

#include "partial_state.h"
#include "segment_registry.h"

#include <math.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/wait_event.h"

/* What became of a request */
typedef enum GcServiceOutcome
{
	GC_SERVICE_RAN = 0,			/* result filled in (or err set) */
	GC_SERVICE_UNAVAILABLE,		/* not running, lost, or no segment: run it here */
	GC_SERVICE_DECLINED			/* over the GPU memory budget under auto */
} GcServiceOutcome;

/* How often a waiting backend looks at the service's progress */
#define GC_SERVICE_POLL_MS 50

#define REQUEST_ALIGN 64

/* Place an array of bytes at *offset, recording where in *field */
static void
place(Size *offset, Size *field, Size bytes)
{
	*field = *offset;
	*offset = TYPEALIGN(REQUEST_ALIGN, add_size(*offset, bytes));
}

/*
 * Whether chunk lies in a parallel worker's segment that the leader holds
 * (then the service maps it too rather than the rows being copied): its
 * handle and the segment's address
 */
static bool
chunk_in_segment(const GcServiceFit *fit, const GcChunk *chunk, dsm_handle *handle,
				 const char **base)
{
	return chunk->borrowed && fit->segments != NULL &&
		gc_partial_segment_of(fit->segments, gc_chunk_values(chunk), handle, base);
}

/* Rows of fit to copy into the request (those in no worker's segment) */
static Size
rows_to_copy(const GcServiceFit *fit)
{
	Size		n = 0;

	for (int c = 0; c < fit->rows->nchunks; c++)
	{
		dsm_handle	handle;
		const char *base;

		if (!chunk_in_segment(fit, &fit->rows->chunks[c], &handle, &base))
			n += fit->rows->chunks[c].count;
	}
	return n;
}

/* The fit's k (k-means) or p (p-median) */
static Size
fit_centres(const GcServiceFit *fit)
{
	return fit->kind == GC_SERVICE_KMEANS ? fit->params->k : fit->pm_params->p;
}

/* Where the fit wants each row's cluster (p-median: its medoid's index), or NULL */
static int32 *
fit_labels(const GcServiceFit *fit)
{
	return fit->kind == GC_SERVICE_KMEANS ? fit->result->labels : fit->pm_result->alloc;
}

/* Where the fit wants each row's distance, or NULL */
static double *
fit_distances(const GcServiceFit *fit)
{
	return fit->kind == GC_SERVICE_KMEANS ? fit->result->distances : fit->pm_result->dist;
}

/* Lay out fit's request in req; returns the segment's size */
static Size
layout_request(GcServiceRequest *req, const GcServiceFit *fit)
{
	Size		n = fit->rows->n,
				copied = rows_to_copy(fit),
				d = fit->rows->d,
				k = fit_centres(fit);
	bool		kmeans = fit->kind == GC_SERVICE_KMEANS;
	Size		offset = TYPEALIGN(REQUEST_ALIGN, sizeof(GcServiceRequest));
	Size		value_bytes = gc_value_bytes(fit->rows->narrow);

	req->nchunks = fit->rows->nchunks;
	place(&offset, &req->off_chunks, sizeof(GcServiceChunk) * req->nchunks);
	place(&offset, &req->off_lo, sizeof(double) * d);
	place(&offset, &req->off_hi, sizeof(double) * d);
	place(&offset, &req->off_values, mul_size(value_bytes, mul_size(copied, d)));
	place(&offset, &req->off_hashes, mul_size(sizeof(uint64), copied));
	place(&offset, &req->off_weights, fit->rows->weighted ? mul_size(sizeof(double), copied) : 0);
	place(&offset, &req->off_init, req->has_init ? sizeof(double) * k * d : 0);
	place(&offset, &req->off_centroids, kmeans ? sizeof(double) * k * d : 0);
	place(&offset, &req->off_sizes, kmeans ? sizeof(int64) * k : 0);
	place(&offset, &req->off_parents, req->want_parents ? sizeof(int32) * k : 0);
	place(&offset, &req->off_demand, req->has_demand ? mul_size(sizeof(double), n) : 0);
	place(&offset, &req->off_medoids, kmeans ? 0 : sizeof(int32) * k);
	place(&offset, &req->off_penalties, kmeans ? 0 : sizeof(double) * k);
	place(&offset, &req->off_labels, req->want_labels ? mul_size(sizeof(int32), n) : 0);
	place(&offset, &req->off_distances, req->want_distances ? mul_size(sizeof(double), n) : 0);
	return offset;
}

/*
 * Describe the rows in the request, chunk by chunk in the store's order:
 * those in a worker's segment where they lie, the others copied (values,
 * hashes, weights) into the request; and the bounds
 */
static void
describe_rows(GcServiceRequest *req, const GcServiceFit *fit)
{
	const GcRows *rows = fit->rows;
	GcServiceChunk *chunks = GC_REQUEST_ARRAY(req, off_chunks, GcServiceChunk);
	int			d = rows->d;
	Size		value_bytes = gc_value_bytes(rows->narrow);
	Size		copied = 0;

	memcpy(GC_REQUEST_ARRAY(req, off_lo, double), rows->lo, sizeof(double) * d);
	memcpy(GC_REQUEST_ARRAY(req, off_hi, double), rows->hi, sizeof(double) * d);
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];
		GcServiceChunk *out = &chunks[c];
		const char *base;
		double	   *weights;

		out->count = chunk->count;
		if (chunk_in_segment(fit, chunk, &out->handle, &base))
		{
			out->values = (const char *) gc_chunk_values(chunk) - base;
			out->hashes = (const char *) chunk->hashes - base;
			out->weights = rows->weighted ? (const char *) chunk->weights - base : 0;
			continue;
		}
		out->handle = DSM_HANDLE_INVALID;
		out->values = req->off_values + value_bytes * d * copied;
		out->hashes = req->off_hashes + sizeof(uint64) * copied;
		out->weights = rows->weighted ? req->off_weights + sizeof(double) * copied : 0;
		memcpy((char *) req + out->values, gc_chunk_values(chunk), value_bytes * chunk->count * d);
		memcpy((char *) req + out->hashes, chunk->hashes, sizeof(uint64) * chunk->count);
		weights = (double *) ((char *) req + out->weights);
		for (int64 i = 0; rows->weighted && i < chunk->count; i++)
			weights[i] = gc_chunk_weight(chunk, i);
		copied += chunk->count;
	}
}

/* The GPUs the service opened */
static int
service_gpu_count(void)
{
	int			count;

	SpinLockAcquire(&gc_service_shared->mutex);
	count = gc_service_shared->gpu_count;
	SpinLockRelease(&gc_service_shared->mutex);
	return count;
}

/* Fill a new request for fit */
static void
fill_request(GcServiceRequest *req, const GcServiceFit *fit, int slot)
{
	const GcRows *rows = fit->rows;

	req->magic = GC_SERVICE_MAGIC;
	req->slot = slot;
	req->kind = fit->kind;
	if (fit->kind == GC_SERVICE_KMEANS)
	{
		req->params = *fit->params;
		req->params.init_centroids = NULL;
		req->params.interrupted = NULL;
		req->params.progress = NULL;
		req->params.progress_arg = NULL;
		req->params.devices = NULL;
		req->may_shard = fit->may_shard;
		req->fit_rows_bytes = fit->may_shard ? gc_fit_rows_bytes() : 0;
		req->nfit_gpus = fit->may_shard && fit->device->kind == GC_KIND_GPU ?
			gc_fit_gpus_resolve(service_gpu_count(), req->fit_gpus) : 0;
	}
	else
	{
		req->pm_params = *fit->pm_params;
		req->pm_params.interrupted = NULL;
		req->pm_params.progress = NULL;
		req->pm_params.progress_arg = NULL;
	}
	req->device = fit->device->kind;
	req->gpu_id = fit->device->gpu_id;
	req->gpu_pinned = fit->device->gpu_pinned;
	req->may_decline = fit->device->reason == GC_REASON_AUTO_LARGE;
	req->d = rows->d;
	req->n = rows->n;
	req->total_weight = rows->total_weight;
	req->weighted = rows->weighted;
	req->bad_weight = rows->bad_weight;
	req->float_exact = rows->float_exact;
	req->narrow = rows->narrow;
	req->phase = GC_PHASE_QUEUED;
	req->shift = req->inertia = NAN;	/* unknown until an iteration reports */
	describe_rows(req, fit);
	if (req->has_init)
		memcpy(GC_REQUEST_ARRAY(req, off_init, double), fit->params->init_centroids,
			   sizeof(double) * fit->params->k * rows->d);
	if (req->has_demand)
		memcpy(GC_REQUEST_ARRAY(req, off_demand, double), fit->demand,
			   sizeof(double) * rows->n);
}

/*
 * Queue the request in slot i; false when no service is running or the
 * slot is still held by a fit this backend left (then it runs the fit)
 */
static bool
queue_request(int i, GcServiceRequest *req, dsm_handle handle)
{
	GcServiceShared *shared = gc_service_shared;
	GcServiceSlot *slot = &shared->slots[i];
	Latch	   *service_latch = NULL;

	SpinLockAcquire(&shared->mutex);
	if (shared->service_pid != 0 && slot->state == GC_SLOT_FREE)
	{
		req->ticket = shared->next_ticket++;
		slot->state = GC_SLOT_QUEUED;
		slot->cancel = false;
		slot->abandoned = false;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
		slot->handle = handle;
		slot->ticket = req->ticket;
		slot->generation = shared->generation;
		service_latch = shared->service_latch;
	}
	SpinLockRelease(&shared->mutex);
	if (service_latch == NULL)
		return false;
	SetLatch(service_latch);
	return true;
}

/*
 * Take the request of slot i back (an error, a termination, or a service
 * that is gone): free the slot, or, while the service runs the fit, ask it
 * to stop and free the slot itself
 */
static void
withdraw_request(int code, Datum arg)
{
	GcServiceShared *shared = gc_service_shared;
	GcServiceSlot *slot = &shared->slots[DatumGetInt32(arg)];

	SpinLockAcquire(&shared->mutex);
	if (slot->state == GC_SLOT_RUNNING && shared->service_pid != 0 &&
		slot->generation == shared->generation)
	{
		slot->cancel = true;
		slot->abandoned = true;
	}
	else
		slot->state = GC_SLOT_FREE;
	SpinLockRelease(&shared->mutex);
}

/*
 * Wait for the service to finish the request of slot i; false when the
 * service went away first (the request is then taken back)
 */
static bool
wait_for_service(int i, GcServiceRequest *req, uint32 progress)
{
	GcServiceShared *shared = gc_service_shared;
	GcServiceSlot *slot = &shared->slots[i];
	bool		done = false,
				lost = false,
				shown_gpu = false;

	PG_ENSURE_ERROR_CLEANUP(withdraw_request, Int32GetDatum(i));
	{
		while (!done && !lost)
		{
			SpinLockAcquire(&shared->mutex);
			done = slot->state == GC_SLOT_DONE;
			lost = shared->service_pid == 0 || shared->generation != slot->generation;
			SpinLockRelease(&shared->mutex);
			if (done || lost)
				break;
			if (!shown_gpu && req->device == GC_KIND_GPU && req->phase != GC_PHASE_QUEUED)
			{
				/* the GPU the service chose */
				gc_progress_device(progress, GC_PROGRESS_DEVICE_GPU, req->gpu_id);
				if (req->kind == GC_SERVICE_KMEANS)
					gc_progress_plan(progress, &req->plan);
				shown_gpu = true;
			}
			gc_progress_mirror(progress, (GcPhase) req->phase, req->restart,
							   req->iteration, req->shift, req->inertia);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 GC_SERVICE_POLL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(withdraw_request, Int32GetDatum(i));
	if (lost)
		withdraw_request(0, Int32GetDatum(i));
	return done;
}

/* Copy a k-means result out of the request */
static void
read_kmeans_result(GcServiceRequest *req, GcServiceFit *fit)
{
	GcKmeansResult *result = fit->result;
	GcKmeansResult arrays = *result;
	Size		k = req->params.k;

	memcpy(result->centroids, GC_REQUEST_ARRAY(req, off_centroids, double),
		   sizeof(double) * k * req->d);
	memcpy(result->sizes, GC_REQUEST_ARRAY(req, off_sizes, int64), sizeof(int64) * k);
	if (req->want_parents)
		memcpy(result->parents, GC_REQUEST_ARRAY(req, off_parents, int32), sizeof(int32) * k);
	/* every number as the engine wrote it; the arrays stay the caller's */
	*result = req->result;
	result->centroids = arrays.centroids;
	result->sizes = arrays.sizes;
	result->labels = arrays.labels;
	result->distances = arrays.distances;
	result->parents = arrays.parents;
	strlcpy(fit->kernel, req->kernel, sizeof(fit->kernel));
	result->kernel = fit->kernel;
	strlcpy(fit->init, req->init, sizeof(fit->init));
	result->init = fit->init;
	fit->plan = req->plan;
	if (req->device != GC_KIND_GPU)
		gc_kmeans_plan_in_core(&fit->plan, 0);
}

/* Copy a p-median result out of the request */
static void
read_pmedian_result(GcServiceRequest *req, GcServiceFit *fit)
{
	GcPmResult *result = fit->pm_result;
	GcPmResult	arrays = *result;
	Size		p = req->pm_params.p;

	memcpy(result->medoids, GC_REQUEST_ARRAY(req, off_medoids, int32), sizeof(int32) * p);
	memcpy(result->penalties, GC_REQUEST_ARRAY(req, off_penalties, double), sizeof(double) * p);
	*result = req->pm_result;
	result->medoids = arrays.medoids;
	result->penalties = arrays.penalties;
	result->alloc = arrays.alloc;
	result->dist = arrays.dist;
}

/* Copy the service's result out of the request */
static void
read_result(GcServiceRequest *req, GcServiceFit *fit, GcError *err)
{
	Size		n = req->n;

	*err = req->error;
	if (err->status != GC_OK)
		return;
	if (req->want_labels)
		memcpy(fit_labels(fit), GC_REQUEST_ARRAY(req, off_labels, int32), sizeof(int32) * n);
	if (req->want_distances)
		memcpy(fit_distances(fit), GC_REQUEST_ARRAY(req, off_distances, double),
			   sizeof(double) * n);
	if (fit->kind == GC_SERVICE_KMEANS)
		read_kmeans_result(req, fit);
	else
		read_pmedian_result(req, fit);
}

/*
 * Submit fit to the GPU service and wait for it (the workers' segments
 * holding its rows, if any, stay mapped here meanwhile).  GC_SERVICE_RAN:
 * the result, or the engine's failure in err
 */
static GcServiceOutcome
submit_fit(GcServiceFit *fit, GcError *err)
{
	int			i = GC_MY_PROC_INDEX;
	GcServiceRequest layout;
	GcServiceRequest *req;
	dsm_segment *segment;
	Size		bytes;
	GcServiceOutcome outcome = GC_SERVICE_UNAVAILABLE;

	if (!gc_service_enabled() || i < 0 || i >= gc_service_shared->nslots)
		return GC_SERVICE_UNAVAILABLE;
	memset(&layout, 0, sizeof(layout));
	if (fit->kind == GC_SERVICE_KMEANS)
		layout.has_init = fit->params->init == GC_INIT_GIVEN && fit->params->init_centroids;
	else
		layout.has_demand = fit->demand != NULL;
	layout.want_labels = fit_labels(fit) != NULL;
	layout.want_distances = fit_distances(fit) != NULL;
	layout.want_parents = fit->kind == GC_SERVICE_KMEANS && fit->result->parents != NULL;
	bytes = layout_request(&layout, fit);
	/* the copy of the rows would pass the fit's memory: run it here instead */
	if (fit->memory != NULL && !gc_fit_memory_room(fit->memory, bytes))
		return GC_SERVICE_UNAVAILABLE;
	if (!gc_dsm_segment_fits(bytes))
		return GC_SERVICE_UNAVAILABLE;
	segment = dsm_create(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (segment == NULL)
		return GC_SERVICE_UNAVAILABLE;
	req = dsm_segment_address(segment);
	memcpy(req, &layout, sizeof(layout));
	fill_request(req, fit, i);
	if (fit->kind == GC_SERVICE_KMEANS)
		gc_progress_phase(fit->progress, GC_PHASE_QUEUED, req->n, req->params.n_init,
						  req->params.max_iter);
	else
		gc_progress_phase(fit->progress, GC_PHASE_QUEUED, req->n, 0, 0);
	if (queue_request(i, req, dsm_segment_handle(segment)) &&
		wait_for_service(i, req, fit->progress))
	{
		if (req->verdict == GC_VERDICT_DECLINED)
			outcome = GC_SERVICE_DECLINED;
		else if (req->verdict == GC_VERDICT_UNAVAILABLE)
			outcome = GC_SERVICE_UNAVAILABLE;
		else
		{
			read_result(req, fit, err);
			outcome = GC_SERVICE_RAN;
		}
		withdraw_request(0, Int32GetDatum(i));
	}
	dsm_detach(segment);
	return outcome;
}

/*
 * Run fit in the GPU service: true when it ran, its result or the engine's
 * failure in err.  Otherwise (no service, no segment to be had, or, under
 * auto, over the GPU budget) fit->device leaves the service as
 * gc_leave_service decides, and the caller runs the fit itself on it.
 */
bool
gc_service_fit(GcServiceFit *fit, GcError *err)
{
	GcServiceOutcome outcome = submit_fit(fit, err);

	if (outcome == GC_SERVICE_RAN)
		return true;
	gc_leave_service(fit->device, outcome == GC_SERVICE_DECLINED ?
					 GC_REASON_AUTO_OVER_BUDGET : fit->device->reason);
	return false;
}

/*
 * Run the fit of input's rows in the GPU service (fit gives which fit, its
 * parameters and its results): true when it ran, the engine's failure
 * raised; false when it did not and input's device left the service, the
 * caller then running the fit itself
 */
bool
gc_service_fit_input(GcInput *input, GcServiceFit *fit)
{
	GcError		err = {0};

	fit->rows = &input->rows;
	fit->segments = input->segments;
	fit->device = &input->device;
	fit->progress = input->progress;
	fit->memory = &input->memory;
	if (!gc_service_fit(fit, &err))
		return false;
	if (err.status != GC_OK)
		gc_raise(&err);
	return true;
}

/*
 * Whether the service has GPU gpu_id; why not, when it has not (or no
 * service runs)
 */
bool
gc_service_gpu_usable(int gpu_id, char *why, size_t whylen)
{
	GcServiceShared *shared = gc_service_shared;
	int			count;

	SpinLockAcquire(&shared->mutex);
	count = shared->gpu_count;
	strlcpy(why, shared->no_gpu_reason, whylen);
	SpinLockRelease(&shared->mutex);
	if (count > 0 && gpu_id >= count)
		snprintf(why, whylen, "gpuclust.gpu_id is %d but the GPU service has %d CUDA device(s).",
				 gpu_id, count);
	return gpu_id < count;
}
