/*-------------------------------------------------------------------------
 *
 * gpuclust.c
 *	  Module entry point: _PG_init (which defines every GUC, here the
 *	  superuser-only memory limits gpuclust.pinned_cache_mb and
 *	  gpuclust.max_fit_memory_mb, and through the others' init functions
 *	  the device choice's, device_choice.c, and the GPU service's), and
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

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

PG_MODULE_MAGIC;

static int	gc_pinned_cache_mb = 256;
static int	gc_max_fit_memory_mb = 32768;

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
	gc_cpu_threads_init();
	DefineCustomIntVariable("gpuclust.pinned_cache_mb",
							"Page-locked host memory a session keeps for reuse after a GPU fit.",
							"Collecting rows into new page-locked memory costs about as much as "
							"the scan; kept blocks make repeated fits in a session cheaper. "
							"0 frees them at once.",
							&gc_pinned_cache_mb, 256, 0, 1024 * 1024,
							PGC_SUSET, GUC_UNIT_MB, NULL, assign_pinned_cache_mb, NULL);

	/*
	 * A fit holds all its rows in host memory at once (work_mem cannot
	 * bound it), so that an ordinary user could otherwise take any amount
	 * of it: superuser-only, like the pinned cache.  32 GB holds 5 million
	 * embeddings of 768 dimensions (the embedding benchmark's 1 million
	 * take 6.2 GB; a 4 GB default refused them), and bounds one backend's
	 * fit to a share of a GPU server's memory; larger fits need a superuser.
	 */
	DefineCustomIntVariable("gpuclust.max_fit_memory_mb",
							"Host memory one fit may hold for its rows.",
							"A fit (aggregate, window partition or assignment) whose rows need "
							"more fails before allocating past it; 0 removes the limit.",
							&gc_max_fit_memory_mb, 32768, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);

	gc_service_init();
	MarkGUCPrefixReserved("gpuclust");
	gc_segment_registry_init();
	gc_progress_init();
}

/*
 * The host memory a fit's row store may hold, from
 * gpuclust.max_fit_memory_mb (0: no limit)
 */
size_t
gc_fit_memory_limit(void)
{
	return (size_t) gc_max_fit_memory_mb << 20;
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
					 errhint("Cluster fewer rows or fewer dimensions; gpuclust.max_fit_memory_mb, "
							 "which a superuser sets, limits a fit's rows.")));
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
