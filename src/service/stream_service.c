/*-------------------------------------------------------------------------
 *
 * stream_service.c
 *	  A kmeans_stream summary's clusterings in the GPU service: the
 *	  reductions of its blocks and levels, and the weighted fit of its
 *	  model, sent to the service as a kmeans_gpu fit is (the rows, weights
 *	  included, in a request segment), so that a backend or a parallel
 *	  worker summarising rows opens no CUDA context of its own.
 *
 * Only GPU clusterings go there: a CPU one runs where it is, in as many
 * processes as summarise at once.  Where the service cannot take one (it
 * is gone, or the fit is over its memory budget under auto), that one and
 * every later one run in this process, on the GPU chosen or on the CPU,
 * as gc_leave_service decides.
 *
 * The wait for the service honours cancel and statement_timeout by an
 * error, and leaving the service can raise one (gpuclust.device = gpu with
 * no GPU this process can use): neither must unwind through the engine's
 * frames (their malloc'd arrays, up to every point of a summary, would be
 * lost).  Such an error is caught here, the engine is told the clustering
 * was interrupted and frees what it holds, and gc_stream_raise throws the
 * error itself once the engine has returned.
 *
 * IDENTIFICATION
 *	  src/service/stream_service.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_service.h"

#include "utils/memutils.h"

struct GcStreamService
{
	GcDevice   *device;			/* the summary's or the model's device */
	uint32		progress;		/* the model's progress token; 0 for reductions */
	bool		ran;			/* the service ran at least one clustering */
	GcServiceFit fit;			/* holds the kernel and init names results point to */
};

/* An error raised while waiting for the service, for gc_stream_raise */
static ErrorData *pending_error = NULL;

/* GcStreamFit: in the service while the device says so, else here */
static GcStatus
service_fit(void *arg, const GcKmeansBackend *backend, GcRows *rows,
			const GcKmeansParams *params, GcKmeansResult *result, GcError *err)
{
	GcStreamService *svc = arg;
	GcDevice   *device = svc->device;

	if (device->service && device->kind == GC_KIND_GPU)
	{
		MemoryContext context = CurrentMemoryContext;
		volatile bool ran = false;
		volatile bool failed = false;
		GcFitMemory memory;

		/* the rows and the fit as a k-means fit counts them; the request's copy beside */
		gc_fit_memory_begin(&memory);
		memory.planned = add_size(gc_rows_held_bytes(rows),
								  gc_kmeans_work_bytes(rows->n, params->k, rows->d));
		svc->fit.memory = &memory;
		svc->fit.kind = GC_SERVICE_KMEANS;
		svc->fit.rows = rows;
		svc->fit.segments = NULL;
		svc->fit.params = params;
		svc->fit.device = device;
		svc->fit.progress = svc->progress;
		svc->fit.result = result;
		PG_TRY();
		{
			ran = gc_service_fit(&svc->fit, err);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(context);
			pending_error = CopyErrorData();
			FlushErrorState();
			failed = true;
		}
		PG_END_TRY();
		svc->fit.memory = NULL;
		if (failed)
			return gc_fail(err, GC_INTERRUPTED, "interrupted while waiting for the GPU service");
		if (ran)
		{
			svc->ran = true;
			return err->status;
		}
	}
	return gc_kmeans_fit(device->kmeans, rows, params, result, err);
}

/*
 * Run s's clusterings through the service when device (chosen by
 * gc_choose_service_device, settled, and living as long as s) says so;
 * the handle, in context, tells whether the service ran any
 */
GcStreamService *
gc_stream_use_service(GcStream *s, GcDevice *device, uint32 progress, MemoryContext context)
{
	GcStreamService *svc = MemoryContextAllocZero(context, sizeof(GcStreamService));

	svc->device = device;
	svc->progress = progress;
	if (device->service)
	{
		s->fit = service_fit;
		s->fit_arg = svc;
	}
	return svc;
}

bool
gc_stream_service_ran(const GcStreamService *svc)
{
	return svc->ran;
}

/*
 * Raise the error of a summary's engine call: the one the wait for the
 * service caught, if any, else err's
 */
void
gc_stream_raise(GcError *err)
{
	if (pending_error != NULL)
	{
		ErrorData  *edata = pending_error;

		pending_error = NULL;
		ReThrowError(edata);
	}
	gc_raise(err);
}
