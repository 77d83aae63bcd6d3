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
 * IDENTIFICATION
 *	  src/stream_service.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_service.h"

struct GcStreamService
{
	GcDevice   *device;			/* the summary's or the model's device */
	uint32		progress;		/* the model's progress token; 0 for reductions */
	bool		ran;			/* the service ran at least one clustering */
	GcServiceFit fit;			/* holds the kernel and init names results point to */
};

/* GcStreamFit: in the service while the device says so, else here */
static GcStatus
service_fit(void *arg, const GcKmeansBackend *backend, GcRows *rows,
			const GcKmeansParams *params, GcKmeansResult *result, GcError *err)
{
	GcStreamService *svc = arg;
	GcDevice   *device = svc->device;

	if (device->service && device->kind == GC_KIND_GPU)
	{
		GcServiceOutcome outcome;

		svc->fit.rows = rows;
		svc->fit.segments = NULL;
		svc->fit.params = params;
		svc->fit.device = device;
		svc->fit.progress = svc->progress;
		svc->fit.result = result;
		outcome = gc_service_fit_kmeans(&svc->fit, err);
		if (outcome == GC_SERVICE_RAN)
		{
			svc->ran = true;
			return err->status;
		}
		gc_leave_service(device, outcome == GC_SERVICE_DECLINED ?
						 GC_REASON_AUTO_OVER_BUDGET : device->reason);
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
