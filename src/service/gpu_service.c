/*-------------------------------------------------------------------------
 *
 * gpu_service.c
 *	  The GPU service: a background worker, started when gpuclust is in
 *	  shared_preload_libraries, that owns one CUDA context per visible GPU
 *	  and runs the k-means and p-median fits backends submit.  This file holds its
 *	  shared memory (the queue), its GUCs, its registration and its main
 *	  loop: mapping submitted requests, admitting them in submission order
 *	  within the GPU memory budget, handing them to runner threads
 *	  (service_runner.c) and taking them back.
 *
 * Admission.  A CPU fit (sent only with gpuclust.service_cpu_fits) waits
 * only for a free runner.  A GPU fit also needs its estimated GPU memory
 * within what the budget (gpuclust.service_gpu_memory_mb, per GPU)
 * leaves; fits on one GPU are admitted in submission order, so a large
 * one is not overtaken forever.  A fit that needs more than the whole
 * budget runs alone on its GPU, or, under gpuclust.device = auto, is
 * declined: its backend runs it on the CPU.  So no fit fails for memory
 * because others run.  A GPU fit goes to the GPU with the most budget
 * left, unless its backend set gpuclust.gpu_id, which pins it.
 *
 * Crashes.  The worker restarts one second after it exits
 * (bgw_restart_time); each start counts a generation.  A backend waiting
 * on a request of an earlier generation, or while no service runs, takes
 * its request back and runs the fit itself; it never waits on a service
 * that is gone.  On a clean exit (SIGTERM) the runners are stopped first,
 * so that no thread touches the queue after it says the service is gone.
 *
 * IDENTIFICATION
 *	  src/service/gpu_service.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_service.h"
#include "shared_struct.h"

#include <limits.h>

#include "miscadmin.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* GPUs the service opens at most */
#define GC_SERVICE_MAX_GPUS 64

GcServiceShared *gc_service_shared = NULL;

static int	service_fits = 4;
static int	service_gpu_memory_mb = 0;

/* The service's own state (its process only) */
typedef struct GcPending
{
	dsm_segment *segment;		/* mapped request; NULL: none */
	dsm_segment **row_segments; /* workers' segments its chunks lie in */
	int			nrow_segments;
	const char **chunk_bases;	/* each chunk's segment's address */
	GcServiceRequest *request;
	uint64		ticket;
	Size		gpu_bytes;		/* charged to each GPU it runs on */
	bool		running;
} GcPending;

static GcPending *pending;
static Latch **exit_latches;	/* room for every slot's latch */
static uint32 my_generation;
static int	gpu_count;
static Size gpu_total[GC_SERVICE_MAX_GPUS];
static Size gpu_in_use[GC_SERVICE_MAX_GPUS];

static Size
service_shmem_size(void)
{
	return add_size(offsetof(GcServiceShared, slots),
					mul_size(MaxBackends, sizeof(GcServiceSlot)));
}

static void
service_shmem_init(void *ptr)
{
	GcServiceShared *shared = ptr;

	memset(shared, 0, service_shmem_size());
	SpinLockInit(&shared->mutex);
	shared->nslots = MaxBackends;
	shared->next_ticket = 1;
}

/* Only with the preload: the service is a background worker started with the server */
static GcSharedStruct service_struct = {
	.name = "gpuclust GPU service",
	.dsm_name = NULL,
	.size = service_shmem_size,
	.init = service_shmem_init,
	.address = (void **) &gc_service_shared
};

/* Register the worker that runs gpuclust_service_main */
static void
register_service_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "gpuclust");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "gpuclust_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "gpuclust GPU service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "gpuclust GPU service");
	RegisterBackgroundWorker(&worker);
}

/*
 * The service's GUCs, shared memory and worker; from _PG_init, which does
 * nothing here unless gpuclust is being preloaded (the GUCs, read by the
 * service alone, exist only where it runs)
 */
void
gc_service_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("gpuclust.service_fits",
							"Fits the GPU service runs at once.",
							"Each runs on a thread of the service; further fits wait in its queue.",
							&service_fits, 4, 1, 256,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuclust.service_gpu_memory_mb",
							"GPU memory the service's fits may hold at once, per GPU.",
							"Fits beyond it wait in the queue (or, under gpuclust.device = auto, "
							"run on the CPU when one alone exceeds it). 0: 90% of the GPU's memory.",
							&service_gpu_memory_mb, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MB, NULL, NULL, NULL);
	gc_shared_struct_request(&service_struct);
	register_service_worker();
}

/* True when a service is running to take this process's fits */
bool
gc_service_enabled(void)
{
	int			pid;

	if (gc_service_shared == NULL)
		return false;
	SpinLockAcquire(&gc_service_shared->mutex);
	pid = gc_service_shared->service_pid;
	SpinLockRelease(&gc_service_shared->mutex);
	return pid != 0 && pid != MyProcPid;
}

/* Open every visible GPU (creating its context); why, when there is none */
static void
open_devices(char *why, size_t whylen)
{
#ifdef GC_WITH_CUDA
	gpu_count = gc_cuda_open_devices(gpu_total, GC_SERVICE_MAX_GPUS, why, whylen);
#else
	gpu_count = 0;
	snprintf(why, whylen, "gpuclust was built without GPU support.");
#endif
}

/* Whether the sharded GPU backend reads narrow rows as they are */
static bool
sharded_reads_narrow(void)
{
#ifdef GC_WITH_CUDA
	return gc_kmeans_cuda_sharded_backend.reads_narrow;
#else
	return false;
#endif
}

/* The budget of GPU g, in bytes */
static Size
gpu_budget(int g)
{
	if (service_gpu_memory_mb > 0)
		return (Size) service_gpu_memory_mb << 20;
	return gpu_total[g] / 10 * 9;
}

/* GPU memory a k-means fit in one session may hold (engine/gpu_plan.c) */
static Size
estimate_kmeans_gpu_bytes(const GcServiceRequest *req)
{
	return gc_kmeans_gpu_bytes(&req->params, req->n, req->d);
}

/*
 * GPU memory a p-median fit may hold, an upper bound, in bytes
 * (cuda/pmedian_cuda.cu): per row the rows and the gathered members in
 * double (16 d) and twelve arrays of 4 or 8 bytes (hashes, demands,
 * entities, groups, nearest distances, allocation, distances, members,
 * sums, and the swap improvement's nearest medoid and two distances: 76);
 * per medoid its gathered row (8 d) and four small arrays (24); and 64 MB
 * of workspace
 */
static Size
estimate_pmedian_gpu_bytes(const GcServiceRequest *req)
{
	double		n = req->n,
				d = req->d,
				p = req->pm_params.p;

	return (Size) (n * (16 * d + 76) + p * (8 * d + 24) + (64 << 20));
}

/*
 * A k-means GPU fit's plan (engine/gpu_plan.c) into the request: over its
 * GPUs (fit_gpus, or the one the service will choose) within the least
 * budget among those it may run on and its own bound on its rows.  A fit
 * that may not shard (a stream's), or that no plan fits (plan_error,
 * which the runner reports), is planned in one session, charged its
 * estimate, as before plans.
 */
static void
plan_kmeans(GcServiceRequest *req)
{
	GcGpuBudget budget = {0};

	memset(&req->plan_error, 0, sizeof(req->plan_error));
	budget.gpus = Max(req->nfit_gpus, 1);
	budget.rows_bytes = req->fit_rows_bytes;
	for (int g = 0; g < gpu_count; g++)
	{
		bool		candidate = req->nfit_gpus > 0 ? false : !req->gpu_pinned || g == req->gpu_id;

		for (int i = 0; i < req->nfit_gpus; i++)
			candidate |= req->fit_gpus[i] == g;
		if (candidate)
			budget.device_bytes = budget.device_bytes == 0 ? gpu_budget(g) :
				Min(budget.device_bytes, gpu_budget(g));
	}
	if (!req->may_shard ||
		gc_kmeans_plan_gpus(&req->params, req->n, req->d,
							req->narrow && sharded_reads_narrow(), req->weighted,
							&budget, &req->plan, &req->plan_error) != GC_OK)
	{
		gc_kmeans_plan_in_core(&req->plan, 1);
		req->plan.gpu_bytes = estimate_kmeans_gpu_bytes(req);
	}
}

/* GPU memory the fit of req may hold on each of its GPUs, an upper bound, in bytes */
static Size
estimate_gpu_bytes(GcServiceRequest *req)
{
	if (req->kind != GC_SERVICE_KMEANS)
		return estimate_pmedian_gpu_bytes(req);
	plan_kmeans(req);
	return req->plan.gpu_bytes;
}

/* The GPUs request i runs on, a bit each, once its GPU is chosen */
static uint64
request_gpus(const GcServiceRequest *req)
{
	uint64		gpus = 0;

	if (req->device != GC_KIND_GPU)
		return 0;
	for (int i = 0; i < req->nfit_gpus; i++)
		gpus |= UINT64CONST(1) << req->fit_gpus[i];
	return req->nfit_gpus > 0 ? gpus : UINT64CONST(1) << req->gpu_id;
}

/*
 * On exit: stop the runners, say the service is gone and wake the
 * backends still waiting, which then run their fits themselves
 */
static void
service_exit(int code, Datum arg)
{
	int			nlatches = 0;
	GcServiceShared *shared = gc_service_shared;

	gc_runners_stop();
	SpinLockAcquire(&shared->mutex);
	shared->service_pid = 0;
	shared->service_latch = NULL;
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].state != GC_SLOT_FREE)
			exit_latches[nlatches++] = shared->slots[i].latch;
	SpinLockRelease(&shared->mutex);
	for (int i = 0; i < nlatches; i++)
		SetLatch(exit_latches[i]);
}

/*
 * Say the service is running: a new generation, whose queue starts with
 * no fit running (those a crashed service ran are freed)
 */
static void
publish_service(const char *no_gpu_reason)
{
	GcServiceShared *shared = gc_service_shared;

	SpinLockAcquire(&shared->mutex);
	my_generation = ++shared->generation;
	shared->service_pid = MyProcPid;
	shared->service_latch = MyLatch;
	shared->gpu_count = gpu_count;
	strlcpy(shared->no_gpu_reason, no_gpu_reason, sizeof(shared->no_gpu_reason));
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].state == GC_SLOT_RUNNING)
		{
			shared->slots[i].state = GC_SLOT_FREE;
			shared->slots[i].abandoned = false;
		}
	SpinLockRelease(&shared->mutex);
}

/* Unmap request i */
static void
drop_pending(int i)
{
	for (int s = 0; s < pending[i].nrow_segments; s++)
		dsm_detach(pending[i].row_segments[s]);
	if (pending[i].row_segments)
		pfree(pending[i].row_segments);
	if (pending[i].chunk_bases)
		pfree(pending[i].chunk_bases);
	if (pending[i].segment != NULL)
		dsm_detach(pending[i].segment);
	memset(&pending[i], 0, sizeof(GcPending));
}

/* Whether bytes at offset lie within a mapping of length */
static bool
within(Size offset, Size bytes, Size length)
{
	return offset <= length && bytes <= length - offset;
}

/*
 * Map the segments request i's chunks lie in and check that every chunk
 * lies within its segment; false when one cannot be mapped or does not
 */
static bool
map_chunks(int i)
{
	GcServiceRequest *req = pending[i].request;
	Size		length = dsm_segment_map_length(pending[i].segment);
	const GcServiceChunk *chunks;
	int64		rows = 0;

	if (req->nchunks < 1 || req->nchunks > req->n ||
		!within(req->off_chunks, sizeof(GcServiceChunk) * (Size) req->nchunks, length))
		return false;
	chunks = GC_REQUEST_ARRAY(req, off_chunks, GcServiceChunk);
	pending[i].chunk_bases = MemoryContextAllocZero(TopMemoryContext, sizeof(char *) * req->nchunks);
	pending[i].row_segments = MemoryContextAllocZero(TopMemoryContext,
													 sizeof(dsm_segment *) * req->nchunks);
	for (int c = 0; c < req->nchunks; c++)
	{
		const GcServiceChunk *chunk = &chunks[c];
		dsm_segment *segment = pending[i].segment;
		Size		n = chunk->count;

		if (chunk->handle != DSM_HANDLE_INVALID)
		{
			segment = dsm_find_mapping(chunk->handle);
			if (segment == NULL)
			{
				segment = dsm_attach(chunk->handle);
				if (segment == NULL)
					return false;
				pending[i].row_segments[pending[i].nrow_segments++] = segment;
			}
		}
		length = dsm_segment_map_length(segment);
		if (chunk->count < 1 ||
			!within(chunk->values, gc_value_bytes(req->narrow) * req->d * n, length) ||
			!within(chunk->hashes, sizeof(uint64) * n, length) ||
			(req->weighted && !within(chunk->weights, sizeof(double) * n, length)) ||
			chunk->values % gc_value_bytes(req->narrow) != 0 ||
			chunk->hashes % sizeof(uint64) != 0 ||
			chunk->weights % sizeof(double) != 0)
			return false;
		pending[i].chunk_bases[c] = dsm_segment_address(segment);
		rows += chunk->count;
	}
	return rows == req->n;
}

/* Take back the jobs runners have finished */
static void
reap_finished(void)
{
	GcServiceJob *job;

	while ((job = gc_runner_finished_job()) != NULL)
	{
		int			i = job->slot - gc_service_shared->slots;

		for (int g = 0; g < gpu_count; g++)
			if (job->gpus & (UINT64CONST(1) << g))
				gpu_in_use[g] -= job->gpu_bytes;
		drop_pending(i);
		gc_runner_release(job);
	}
}

/*
 * Move slot i from QUEUED to state (RUNNING or DONE) if it is still the
 * request of ticket; the backend's latch, when DONE, goes to *latch
 */
static bool
take_slot(int i, uint64 ticket, GcSlotState state, Latch **latch)
{
	GcServiceSlot *slot = &gc_service_shared->slots[i];
	bool		taken = false;

	SpinLockAcquire(&gc_service_shared->mutex);
	if (slot->state == GC_SLOT_QUEUED && slot->ticket == ticket)
	{
		slot->state = state;
		*latch = slot->latch;
		taken = true;
	}
	SpinLockRelease(&gc_service_shared->mutex);
	return taken;
}

/*
 * Tell the backend of slot i to run its fit itself: verdict DECLINED (auto,
 * over the budget) or UNAVAILABLE (its rows could not be mapped)
 */
static void
refuse(int i, GcServiceVerdict verdict)
{
	Latch	   *latch;

	pending[i].request->verdict = verdict;
	if (take_slot(i, pending[i].ticket, GC_SLOT_DONE, &latch))
		SetLatch(latch);
	drop_pending(i);
}

/*
 * Map the request of slot i (submitted with ticket and handle) and check
 * it; false when it cannot be mapped or is not a request of that slot
 */
static bool
map_request(int i, uint64 ticket, dsm_handle handle)
{
	dsm_segment *segment = dsm_attach(handle);
	GcServiceRequest *req;

	if (segment == NULL)
		return false;
	req = dsm_segment_address(segment);
	if (dsm_segment_map_length(segment) < sizeof(GcServiceRequest) ||
		req->magic != GC_SERVICE_MAGIC || req->slot != i || req->ticket != ticket ||
		(req->kind != GC_SERVICE_KMEANS && req->kind != GC_SERVICE_PMEDIAN) ||
		(req->device == GC_KIND_GPU && (req->gpu_id < 0 || req->gpu_id >= gpu_count)) ||
		req->nfit_gpus < 0 || req->nfit_gpus > GC_FIT_MAX_GPUS)
	{
		dsm_detach(segment);
		return false;
	}
	for (int g = 0; g < req->nfit_gpus; g++)
	{
		if (req->fit_gpus[g] < 0 || req->fit_gpus[g] >= gpu_count)
		{
			dsm_detach(segment);
			return false;
		}
	}
	pending[i].segment = segment;
	pending[i].request = req;
	pending[i].ticket = ticket;
	pending[i].gpu_bytes = req->device == GC_KIND_GPU ? estimate_gpu_bytes(req) : 0;
	if (!map_chunks(i))
	{
		refuse(i, GC_VERDICT_UNAVAILABLE);
		return false;
	}
	return true;
}




/* Hand request i to job's runner */
static void
dispatch(int i, GcServiceJob *job)
{
	Latch	   *latch;
	GcServiceRequest *req = pending[i].request;

	if (!take_slot(i, pending[i].ticket, GC_SLOT_RUNNING, &latch))
	{
		drop_pending(i);
		return;
	}
	pending[i].running = true;
	job->gpus = request_gpus(req);
	for (int g = 0; g < gpu_count; g++)
		if (job->gpus & (UINT64CONST(1) << g))
			gpu_in_use[g] += pending[i].gpu_bytes;
	job->request = req;
	job->slot = &gc_service_shared->slots[i];
	job->chunk_bases = pending[i].chunk_bases;
	job->gpu_bytes = pending[i].gpu_bytes;
	gc_runner_assign(job);
}

/*
 * Find the queued requests: map the new ones, unmap those their backend
 * took back; returns the slot of the oldest one not yet seen in this pass
 * whose ticket is above after, or -1
 */
static int
next_queued(uint64 after)
{
	GcServiceShared *shared = gc_service_shared;
	int			best = -1;
	uint64		best_ticket = 0;

	for (int i = 0; i < shared->nslots; i++)
	{
		GcServiceSlot *slot = &shared->slots[i];
		bool		queued;
		uint64		ticket;
		dsm_handle	handle;

		SpinLockAcquire(&shared->mutex);
		queued = slot->state == GC_SLOT_QUEUED && slot->generation == my_generation;
		ticket = slot->ticket;
		handle = slot->handle;
		SpinLockRelease(&shared->mutex);
		if (pending[i].running)
			continue;
		if (pending[i].segment != NULL && (!queued || pending[i].ticket != ticket))
			drop_pending(i);
		if (!queued || ticket <= after || (best >= 0 && ticket > best_ticket))
			continue;
		if (pending[i].segment == NULL && !map_request(i, ticket, handle))
			continue;
		best = i;
		best_ticket = ticket;
	}
	return best;
}

/* Whether GPU g takes bytes more now: idle, or within what its budget leaves */
static bool
gpu_has_room(int g, Size bytes)
{
	return gpu_in_use[g] == 0 || gpu_in_use[g] + bytes <= gpu_budget(g);
}

/*
 * The GPU for request i: its pinned one, else the one with the most budget
 * left; -1 when the fit must wait (its GPU is blocked by an older waiting
 * fit, or the fit does not fit in what the budget leaves and others run).
 * A fit over gpuclust.fit_gpus needs every one of them: its first.
 */
static int
choose_gpu(int i, const bool *blocked)
{
	GcServiceRequest *req = pending[i].request;
	Size		bytes = pending[i].gpu_bytes;
	int			best = -1;

	if (req->nfit_gpus > 0)
	{
		for (int f = 0; f < req->nfit_gpus; f++)
			if (blocked[req->fit_gpus[f]] || !gpu_has_room(req->fit_gpus[f], bytes))
				return -1;
		return req->fit_gpus[0];
	}
	for (int g = 0; g < gpu_count; g++)
	{
		if ((req->gpu_pinned && g != req->gpu_id) || blocked[g])
			continue;
		if (gpu_in_use[g] > 0 && gpu_in_use[g] + bytes > gpu_budget(g))
			continue;
		if (best < 0 || gpu_budget(g) - Min(gpu_in_use[g], gpu_budget(g)) >
			gpu_budget(best) - Min(gpu_in_use[best], gpu_budget(best)))
			best = g;
	}
	return best;
}

/*
 * Admit queued requests in submission order while runners are free: CPU
 * fits at once, GPU fits within the budget (a GPU whose oldest waiting
 * fit does not fit admits no later one)
 */
static void
admit_queued(void)
{
	bool		blocked[GC_SERVICE_MAX_GPUS] = {0};
	uint64		after = 0;
	int			i;

	while ((i = next_queued(after)) >= 0)
	{
		GcServiceRequest *req = pending[i].request;
		GcServiceJob *job;

		after = pending[i].ticket;
		if (req->device == GC_KIND_GPU)
		{
			int			g = choose_gpu(i, blocked);

			if (pending[i].gpu_bytes > gpu_budget(req->gpu_id) && req->may_decline)
			{
				refuse(i, GC_VERDICT_DECLINED);
				continue;
			}
			if (g < 0)
			{
				/* older than any fit waiting after it: those wait too */
				for (int h = 0; h < gpu_count; h++)
					blocked[h] |= req->nfit_gpus > 0 ?
						(request_gpus(req) & (UINT64CONST(1) << h)) != 0 :
						!req->gpu_pinned || h == req->gpu_id;
				continue;
			}
			job = gc_runner_idle_job();
			if (job == NULL)
				return;
			req->gpu_id = g;
		}
		else if ((job = gc_runner_idle_job()) == NULL)
			return;
		dispatch(i, job);
	}
}

/*
 * The service's entry point: open the GPUs, start the runners, then serve
 * the queue until told to stop
 */
void
gpuclust_service_main(Datum arg)
{
	char		why[200] = "";

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	if (gc_service_shared == NULL)
		elog(FATAL, "gpuclust GPU service started without its shared memory");
	pending = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(GcPending) * gc_service_shared->nslots);
	exit_latches = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(Latch *) * gc_service_shared->nslots);
	open_devices(why, sizeof(why));
	before_shmem_exit(service_exit, (Datum) 0);
	{
		char		thread_why[200];

		if (!gc_runners_start(service_fits, MyLatch, thread_why, sizeof(thread_why)))
			ereport(FATAL,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("gpuclust GPU service could not start its runners"),
					 errdetail("%s", thread_why)));
	}
	publish_service(why);
	ereport(LOG,
			(errmsg("gpuclust GPU service started: %d GPU(s), %d fits at once",
					gpu_count, service_fits),
			 gpu_count == 0 ? errdetail("%s", why) : 0));

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			proc_exit(1);		/* non-zero: the postmaster starts it again */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_finished();
		admit_queued();
	}
}

/*
 * gpuclust_service_info() -> jsonb: whether the GPU service is preloaded
 * and running, its process id, how many times it started, its GPUs, and
 * the fits queued and running
 */
PG_FUNCTION_INFO_V1(gpuclust_service_info);
Datum
gpuclust_service_info(PG_FUNCTION_ARGS)
{
	GcServiceShared *shared = gc_service_shared;
	StringInfoData buf;
	int			pid = 0,
				gpus = 0,
				queued = 0,
				running = 0;
	uint32		starts = 0;

	if (shared != NULL)
	{
		SpinLockAcquire(&shared->mutex);
		pid = shared->service_pid;
		starts = shared->generation;
		gpus = shared->gpu_count;
		for (int i = 0; i < shared->nslots; i++)
		{
			queued += shared->slots[i].state == GC_SLOT_QUEUED;
			running += shared->slots[i].state == GC_SLOT_RUNNING;
		}
		SpinLockRelease(&shared->mutex);
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"preloaded\": %s, \"running\": %s, ",
					 shared != NULL ? "true" : "false", pid != 0 ? "true" : "false");
	if (pid != 0)
		appendStringInfo(&buf, "\"pid\": %d, ", pid);
	else
		appendStringInfoString(&buf, "\"pid\": null, ");
	appendStringInfo(&buf, "\"starts\": %u, \"gpus\": %d, \"queued\": %d, \"running_fits\": %d}",
					 starts, gpus, queued, running);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
