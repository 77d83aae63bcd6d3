/*-------------------------------------------------------------------------
 *
 * gpuclust.c
 *	  Module entry point: _PG_init (which defines every GUC, here the
 *	  superuser-only gpuclust.pinned_cache_mb, and through the others'
 *	  init functions the device choice's, device_choice.c, the fit memory
 *	  limit's, fit_memory.c, and the GPU service's), and
 *	  the translation of engine failures into ereport (the interrupt hook
 *	  is in interrupt.c).
 *
 * IDENTIFICATION
 *	  src/gpuclust.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"
#include "cpu_threads_setting.h"
#include "gpu_service.h"
#include "segment_registry.h"

#include "miscadmin.h"
#include "utils/guc.h"

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

PG_MODULE_MAGIC;

static int	gc_pinned_cache_mb = 256;

void		_PG_init(void);

static void
assign_pinned_cache_mb(int newval, void *extra)
{
#ifdef GC_WITH_CUDA
	gc_pinned_cache_bytes = (size_t) newval << 20;
	gc_cuda_trim_pinned_cache(gc_pinned_cache_bytes);
#endif
}

void
_PG_init(void)
{
	gc_device_choice_init();
	gc_fit_gpus_init();
	gc_cpu_threads_init();
	DefineCustomIntVariable("gpuclust.pinned_cache_mb",
							"Page-locked host memory a session keeps for reuse after a GPU fit.",
							"Collecting rows into new page-locked memory costs about as much as "
							"the scan; kept blocks make repeated fits in a session cheaper. "
							"0 frees them at once.",
							&gc_pinned_cache_mb, 256, 0, 1024 * 1024,
							PGC_SUSET, GUC_UNIT_MB, NULL, assign_pinned_cache_mb, NULL);

	gc_fit_memory_setup();
	gc_service_init();
	MarkGUCPrefixReserved("gpuclust");
	gc_segment_registry_init();
	gc_progress_init();
}

/*
 * Raise an engine failure as an error with a fitting SQLSTATE
 */
void
gc_raise(const GcError *err)
{
	switch (err->status)
	{
		case GC_OK:
			return;
		case GC_INTERRUPTED:
			CHECK_FOR_INTERRUPTS();
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling clustering due to user request")));
			break;
		case GC_ERR_HOST_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of host memory in gpuclust"),
					 errdetail("%s", err->message),
					 errhint("Cluster fewer rows or fewer dimensions, or have a superuser raise "
							 "gpuclust.max_fit_memory_mb, which limits a fit's memory.")));
			break;
		case GC_ERR_DEVICE_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory in gpuclust"),
					 errdetail("%s", err->message),
					 errhint("Cluster fewer rows, or set gpuclust.device to cpu.")));
			break;
		case GC_ERR_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("input values are too large to cluster"),
					 errdetail("%s", err->message),
					 errhint("Rescale the vectors so that squared distances stay finite.")));
			break;
		case GC_ERR_NO_DEVICE:
		case GC_ERR_DEVICE:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU failure in gpuclust"),
					 errdetail("%s", err->message),
					 errhint("Set gpuclust.device to cpu to run on the CPU.")));
			break;
	}
}
