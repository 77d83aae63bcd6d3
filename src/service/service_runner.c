/*-------------------------------------------------------------------------
 *
 * service_runner.c
 *	  The GPU service's runner threads: each runs one fit at a time
 *	  through the engine's k-means or p-median driver, on the rows a backend left in a request
 *	  segment, and writes the result back into the segment.
 *
 * Threads, not processes, so that every fit shares the service's CUDA
 * contexts.  A runner calls nothing of PostgreSQL but what a signal
 * handler may call: it reads and writes shared memory under the queue's
 * spinlock and sets latches.  Everything else (mapping segments, the
 * queue's order, the memory budget, errors) stays with the service's main
 * thread (gpu_service.c), which hands a runner a job and takes it back
 * once the runner marks it finished.  Runners block every signal, so that
 * PostgreSQL's handlers and latch wake-ups run in the main thread.
 *
 * A fit stops, through the engine's interrupt hook, when its backend sets
 * the slot's cancel flag or when the service shuts down.
 *
 * IDENTIFICATION
 *	  src/service/service_runner.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_service.h"

#include <math.h>
#include <pthread.h>

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

static int	runner_count = 0;
static pthread_t *runner_threads;
static GcServiceJob *runner_jobs;
static pthread_mutex_t runner_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t runner_cond = PTHREAD_COND_INITIALIZER;
static volatile bool runners_stopping = false;
static Latch *runners_latch;	/* the service's: set when a job finishes */

/* The job this thread runs, for the interrupt hook (which takes no argument) */
static __thread GcServiceJob *current_job;

/* The engine's interrupt hook: the backend cancelled, or the service stops */
static bool
runner_interrupted(void)
{
	return runners_stopping || current_job->slot->cancel;
}

/* The engine's progress callback: into the request, for the backend to show */
static void
runner_progress(void *arg, GcPhase phase, int iteration, double shift,
				double inertia)
{
	GcServiceRequest *req = arg;

	req->phase = phase;
	if (phase == GC_PHASE_SEEDING)
		req->restart++;
	req->iteration = iteration;
	req->shift = shift;
	if (!isnan(inertia))
		req->inertia = inertia;
}

/*
 * The request's rows as a row store borrowing them in place, chunk by
 * chunk (the bounds and the weight totals are the whole request's: the
 * first chunk brings them)
 */
static GcStatus
borrow_rows(GcServiceJob *job, GcRows *rows, GcError *err)
{
	GcServiceRequest *req = job->request;
	const GcServiceChunk *chunks = GC_REQUEST_ARRAY(req, off_chunks, GcServiceChunk);

	if (gc_rows_init(rows, req->d, malloc, free, err) != GC_OK)
		return err->status;
	if (req->weighted)
		gc_rows_set_weighted(rows);
	if (req->narrow)
		gc_rows_set_narrow(rows);
	for (int c = 0; c < req->nchunks; c++)
	{
		const char *base = job->chunk_bases[c];
		GcChunk		chunk;

		memset(&chunk, 0, sizeof(chunk));
		gc_chunk_set_values(&chunk, (void *) (base + chunks[c].values), req->narrow);
		chunk.hashes = (uint64_t *) (base + chunks[c].hashes);
		chunk.weights = req->weighted ? (double *) (base + chunks[c].weights) : NULL;
		chunk.count = chunk.capacity = chunks[c].count;
		chunk.borrowed = true;
		chunk.float_exact = req->float_exact;
		if (gc_rows_append_chunk(rows, &chunk,
								 GC_REQUEST_ARRAY(req, off_lo, double),
								 GC_REQUEST_ARRAY(req, off_hi, double),
								 c == 0 ? req->total_weight : 0,
								 c == 0 && req->bad_weight, err) != GC_OK)
			return err->status;
	}
	return GC_OK;
}

/*
 * Make the GPU the backend chose current in this thread, when it chose
 * one; false (err set) when it cannot be used
 */
static bool
use_job_device(GcServiceRequest *req, GcError *err)
{
#ifdef GC_WITH_CUDA
	if (req->device == GC_KIND_GPU)
	{
		char		why[200];

		if (!gc_cuda_use_device(req->gpu_id, why, sizeof(why)))
		{
			gc_fail(err, GC_ERR_NO_DEVICE, "%s", why);
			return false;
		}
	}
#endif
	return true;
}

/* The k-means fit of the request, on its rows; the result into the request */
static void
run_kmeans(GcServiceRequest *req, GcRows *rows, GcError *err)
{
	const GcKmeansBackend *backend = &gc_kmeans_cpu_backend;
	GcKmeansParams params = req->params;
	GcKmeansResult result;

#ifdef GC_WITH_CUDA
	if (req->device == GC_KIND_GPU)
	{
		/* as the service planned it (gpu_service.c, engine/gpu_plan.c) */
		if (req->plan_error.status != GC_OK)
		{
			*err = req->plan_error;
			return;
		}
		backend = req->plan.sharded ? &gc_kmeans_cuda_sharded_backend : &gc_kmeans_cuda_backend;
		gc_kmeans_plan_apply(&req->plan, &params);
		params.devices = !req->plan.sharded ? NULL :
			req->nfit_gpus > 0 ? req->fit_gpus : &req->gpu_id;
	}
#endif
	memset(&result, 0, sizeof(result));
	params.init_centroids = req->has_init ? GC_REQUEST_ARRAY(req, off_init, double) : NULL;
	params.interrupted = runner_interrupted;
	params.progress = runner_progress;
	params.progress_arg = req;
	result.centroids = GC_REQUEST_ARRAY(req, off_centroids, double);
	result.sizes = GC_REQUEST_ARRAY(req, off_sizes, int64_t);
	result.labels = req->want_labels ? GC_REQUEST_ARRAY(req, off_labels, int32_t) : NULL;
	result.distances = req->want_distances ? GC_REQUEST_ARRAY(req, off_distances, double) : NULL;
	result.parents = req->want_parents ? GC_REQUEST_ARRAY(req, off_parents, int32_t) : NULL;
	(void) gc_kmeans_fit(backend, rows, &params, &result, err);
	snprintf(req->kernel, sizeof(req->kernel), "%s", result.kernel ? result.kernel : "");
	snprintf(req->init, sizeof(req->init), "%s", result.init ? result.init : "");
	req->result = result;		/* its pointers are this process's: the backend
								 * reads the numbers only */
}

/* The p-median fit of the request, on its rows; the result into the request */
static void
run_pmedian(GcServiceRequest *req, GcRows *rows, GcError *err)
{
	const GcPmBackend *backend = &gc_pmedian_cpu_backend;
	GcPmParams	params = req->pm_params;
	GcPmResult	result;

#ifdef GC_WITH_CUDA
	if (req->device == GC_KIND_GPU)
		backend = &gc_pmedian_cuda_backend;
#endif
	memset(&result, 0, sizeof(result));
	params.interrupted = runner_interrupted;
	params.progress = runner_progress;
	params.progress_arg = req;
	result.medoids = GC_REQUEST_ARRAY(req, off_medoids, int32_t);
	result.penalties = GC_REQUEST_ARRAY(req, off_penalties, double);
	result.alloc = req->want_labels ? GC_REQUEST_ARRAY(req, off_labels, int32_t) : NULL;
	result.dist = req->want_distances ? GC_REQUEST_ARRAY(req, off_distances, double) : NULL;
	(void) gc_pmedian_fit(backend, rows,
						  req->has_demand ? GC_REQUEST_ARRAY(req, off_demand, double) : NULL,
						  &params, &result, err);
	req->pm_result = result;	/* likewise */
}

/* Run the job's fit and write its outcome into the request */
static void
run_job(GcServiceJob *job)
{
	GcServiceRequest *req = job->request;
	GcRows		rows;
	GcError		err = {0};

	memset(&rows, 0, sizeof(rows));
	req->phase = GC_PHASE_UPLOADING;
	if (use_job_device(req, &err) && borrow_rows(job, &rows, &err) == GC_OK)
	{
		if (req->kind == GC_SERVICE_KMEANS)
			run_kmeans(req, &rows, &err);
		else
			run_pmedian(req, &rows, &err);
	}
	gc_rows_release(&rows);
	req->error = err;
	req->verdict = GC_VERDICT_RAN;
}

/*
 * Hand the result to the backend: DONE and its latch set, or the slot
 * freed when the backend has left.  A fit stopped because the service is
 * shutting down is left RUNNING: its backend sees the service gone and
 * runs the fit itself.
 */
static void
finish_job(GcServiceJob *job)
{
	GcServiceSlot *slot = job->slot;
	Latch	   *latch = NULL;

	if (!(runners_stopping && job->request->error.status == GC_INTERRUPTED))
	{
		SpinLockAcquire(&gc_service_shared->mutex);
		if (slot->abandoned)
		{
			slot->abandoned = false;
			slot->state = GC_SLOT_FREE;
		}
		else
		{
			slot->state = GC_SLOT_DONE;
			latch = slot->latch;
		}
		SpinLockRelease(&gc_service_shared->mutex);
		if (latch != NULL)
			SetLatch(latch);
	}
	pthread_mutex_lock(&runner_mutex);
	job->state = GC_JOB_FINISHED;
	pthread_mutex_unlock(&runner_mutex);
	SetLatch(runners_latch);
}

/* A runner: wait for a job, run it, until the service stops */
static void *
runner_main(void *arg)
{
	GcServiceJob *job = arg;

	current_job = job;
	pthread_mutex_lock(&runner_mutex);
	for (;;)
	{
		while (!runners_stopping && job->state != GC_JOB_ASSIGNED)
			pthread_cond_wait(&runner_cond, &runner_mutex);
		if (job->state != GC_JOB_ASSIGNED)
			break;
		pthread_mutex_unlock(&runner_mutex);
		run_job(job);
		finish_job(job);
		pthread_mutex_lock(&runner_mutex);
	}
	pthread_mutex_unlock(&runner_mutex);
	return NULL;
}

/*
 * Start count runners (signals blocked in them); false, and why, when a
 * thread cannot be created
 */
bool
gc_runners_start(int count, Latch *service_latch, char *why, size_t whylen)
{
	int			rc = 0;

	runners_latch = service_latch;
	runner_threads = calloc(count, sizeof(pthread_t));
	runner_jobs = calloc(count, sizeof(GcServiceJob));
	if (runner_threads == NULL || runner_jobs == NULL)
	{
		snprintf(why, whylen, "out of memory for %d runner threads", count);
		return false;
	}
	for (runner_count = 0; runner_count < count; runner_count++)
	{
		rc = gc_thread_create(&runner_threads[runner_count], runner_main,
							  &runner_jobs[runner_count]);
		if (rc != 0)
			break;
	}
	if (rc != 0)
		snprintf(why, whylen, "pthread_create failed: %s", strerror(rc));
	return rc == 0;
}

/* Stop the runners: running fits are interrupted; wait for every thread */
void
gc_runners_stop(void)
{
	pthread_mutex_lock(&runner_mutex);
	runners_stopping = true;
	pthread_cond_broadcast(&runner_cond);
	pthread_mutex_unlock(&runner_mutex);
	for (int i = 0; i < runner_count; i++)
		pthread_join(runner_threads[i], NULL);
	runner_count = 0;
}

/* A job in state, or NULL */
static GcServiceJob *
job_in_state(GcJobState state)
{
	GcServiceJob *found = NULL;

	pthread_mutex_lock(&runner_mutex);
	for (int i = 0; i < runner_count && found == NULL; i++)
		if (runner_jobs[i].state == state)
			found = &runner_jobs[i];
	pthread_mutex_unlock(&runner_mutex);
	return found;
}

/* A runner without work, or NULL when all are busy */
GcServiceJob *
gc_runner_idle_job(void)
{
	return job_in_state(GC_JOB_IDLE);
}

/* A job whose runner is done with it, or NULL */
GcServiceJob *
gc_runner_finished_job(void)
{
	return job_in_state(GC_JOB_FINISHED);
}

/* Start the runner of job (request, slot and segment filled in) */
void
gc_runner_assign(GcServiceJob *job)
{
	pthread_mutex_lock(&runner_mutex);
	job->state = GC_JOB_ASSIGNED;
	pthread_cond_broadcast(&runner_cond);
	pthread_mutex_unlock(&runner_mutex);
}

/* Make a finished job's runner available again */
void
gc_runner_release(GcServiceJob *job)
{
	pthread_mutex_lock(&runner_mutex);
	job->state = GC_JOB_IDLE;
	job->request = NULL;
	job->slot = NULL;
	job->chunk_bases = NULL;
	pthread_mutex_unlock(&runner_mutex);
}
