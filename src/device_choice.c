/*-------------------------------------------------------------------------
 *
 * device_choice.c
 *	  Where a fit runs: the GUCs gpuclust.device, gpuclust.gpu_id and
 *	  gpuclust.service_cpu_fits, the choice of backend for each call (in
 *	  this backend, or, while the GPU service runs, the device the service
 *	  is to use: src/service/), auto's deferred decision by the fit's work,
 *	  the fall-back when the service cannot take a fit, and
 *	  gpuclust_device_info().
 *
 * IDENTIFICATION
 *	  src/device_choice.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"
#include "gpu_service.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

static int	gc_device_setting = GC_DEVICE_AUTO;
static int	gc_gpu_id = 0;
static bool gc_gpu_id_pinned = false;	/* gpu_id set, not its default */
static bool gc_service_cpu_fits = false;

static const struct config_enum_entry device_options[] = {
	{"auto", GC_DEVICE_AUTO, false},
	{"gpu", GC_DEVICE_GPU, false},
	{"cpu", GC_DEVICE_CPU, false},
	{NULL, 0, false}
};

/*
 * gpuclust.gpu_id's source, carried as the value's extra so that it
 * follows the value through SET LOCAL, RESET and rollback: a value from
 * anywhere but the default pins the GPU service's fits to that GPU
 */
static bool
check_gpu_id(int *newval, void **extra, GucSource source)
{
	bool	   *pinned = gc_guc_malloc(sizeof(bool));

	if (pinned == NULL)
		return false;
	*pinned = source != PGC_S_DEFAULT;
	*extra = pinned;
	return true;
}

static void
assign_gpu_id(int newval, void *extra)
{
	gc_gpu_id_pinned = extra != NULL && *(bool *) extra;
}

/* Define the GUCs of the device choice (from _PG_init) */
void
gc_device_choice_init(void)
{
	DefineCustomEnumVariable("gpuclust.device",
							 "Where clustering runs: auto, gpu or cpu.",
							 "auto uses the CPU for small fits (rows x k x d x n_init below a threshold) "
							 "and the GPU for larger ones when one is usable.",
							 &gc_device_setting, GC_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuclust.gpu_id",
							"Index of the CUDA device to use.",
							"With gpuclust preloaded, the GPU service spreads fits over its GPUs "
							"unless this is set; set, it pins them to this one.",
							&gc_gpu_id, 0, 0, 1024,
							PGC_USERSET, 0, check_gpu_id, assign_gpu_id, NULL);

	/*
	 * A CPU fit gains nothing in the GPU service and costs its request:
	 * a segment made and filled, a queue and a wake-up each way (with
	 * gpuclust preloaded, 20,000 groups of 20 rows, k = 2, took 3.8 s
	 * through the service and 0.93 s in their backend on this
	 * repository's CPU machine: bench/service_small_fits.sql), and a long
	 * one holds one of the service's runners from GPU fits.  Superuser
	 * only, as on it lets one session's CPU work take those runners.
	 */
	DefineCustomBoolVariable("gpuclust.service_cpu_fits",
							 "Runs k-means and p-median fits on the CPU in the GPU service too.",
							 "Off, fits on the CPU (gpuclust.device = cpu, or auto's small work) run in "
							 "their backend and only GPU fits go to the service. On, the service runs them "
							 "as well: its path tested where no GPU is.",
							 &gc_service_cpu_fits, false,
							 PGC_SUSET, 0, NULL, NULL, NULL);
}

/*
 * Host memory for the CPU backends.  Row chunks of 2 MB and more are
 * aligned to 2 MB and offered to the kernel as transparent huge pages
 * (where it allows them only on request): filling fresh memory then takes
 * one page fault per 2 MB rather than 512, which on 768-dimensional rows
 * was a sixth of the time spent collecting them.
 */
#define HUGE_PAGE_BYTES ((size_t) 2 * 1024 * 1024)

static void *
plain_alloc(size_t bytes)
{
	void	   *ptr;

	if (bytes < HUGE_PAGE_BYTES)
		return malloc(bytes);
	if (posix_memalign(&ptr, HUGE_PAGE_BYTES, bytes) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void) madvise(ptr, bytes, MADV_HUGEPAGE);
#endif
	return ptr;
}

static void
plain_free(void *ptr)
{
	free(ptr);
}

/*
 * The CPU backends, with plain host memory
 */
void
gc_use_cpu_device(GcDevice *device)
{
	device->kind = GC_KIND_CPU;
	device->kmeans = &gc_kmeans_cpu_backend;
	device->pmedian = &gc_pmedian_cpu_backend;
	device->alloc = plain_alloc;
	device->free = plain_free;
	device->gpu_id = 0;
	device->reason = GC_REASON_UNRECORDED;
	device->deferred = false;
	device->service = false;
}

/*
 * auto's threshold: a fit's work, rows x k x d x n_init (the distances one
 * Lloyd iteration computes, over all restarts), below which the CPU is
 * faster than the GPU, so that auto runs it there without creating a CUDA
 * context.  Two thresholds, as the first GPU fit of a backend also pays
 * for creating its CUDA context (214-229 ms on an H100) and later ones do
 * not.
 *
 * Measured with bench/auto_threshold.py on an H200 (PostgreSQL 18, 84
 * fits: n 1,000-64,000, d 8-128, k 4-256, 20 iterations, at 1, 2 and 8
 * cpu_threads, 2026-11-29; bench/results/auto-threshold-h200.txt): the
 * CPU backend's Lloyd iteration costs 0.27-0.30 ns per row x k x d there
 * (fits this small gain little from threads), a warm GPU fit of small
 * work about 2.7 ms, and the first GPU fit of a backend 145 ms more (the
 * context).  Cold, the CPU still won up to work 1.3e8 and the GPU won from
 * 8.2e6-1.6e7 (both within 1.5x of each other between): the geometric
 * middle, 3e7 at 1 and 2 threads and 5e7 at 8, the default's count on a
 * GPU server, which is taken.  Warm, the GPU won at every point from
 * 3.2e4, the smallest, at 8 threads (at 1 and 2 the CPU won up to 2.6e5,
 * where both take about 2-3 ms).
 */
#define GC_AUTO_GPU_MIN_WORK_COLD 5e7
#define GC_AUTO_GPU_MIN_WORK_WARM 3e4

/* The GPU (gpuclust.gpu_id) whose context this backend created; -1: none */
static int	gc_gpu_context_id = -1;

/*
 * auto's threshold for a fit on device: warm when the context exists, as
 * the GPU service's always does where it has GPUs (it opens them when it
 * starts)
 */
double
gc_auto_gpu_min_work(const GcDevice *device)
{
	char		why[256];
	bool		warm = device->service ?
		gc_service_gpu_usable(gc_gpu_id, why, sizeof(why)) :
		gc_gpu_context_id == gc_gpu_id;

	return warm ? GC_AUTO_GPU_MIN_WORK_WARM : GC_AUTO_GPU_MIN_WORK_COLD;
}

static const char *const device_reason_names[GC_REASON_COUNT] = {
	[GC_REASON_UNRECORDED] = "unrecorded",
	[GC_REASON_SETTING_CPU] = "gpuclust.device = cpu",
	[GC_REASON_SETTING_GPU] = "gpuclust.device = gpu",
	[GC_REASON_AUTO_SMALL] = "auto: small work",
	[GC_REASON_AUTO_LARGE] = "auto: large work",
	[GC_REASON_AUTO_NO_GPU] = "auto: no usable GPU",
	[GC_REASON_AUTO_NO_CUDA] = "auto: built without CUDA",
	[GC_REASON_AUTO_OVER_BUDGET] = "auto: over the GPU service's memory budget"
};

const char *
gc_device_reason_name(int reason)
{
	return device_reason_names[reason];
}

static const char *const fit_path_names[GC_PATH_COUNT] = {
	[GC_PATH_UNRECORDED] = "unrecorded",
	[GC_PATH_BACKEND] = "backend",
	[GC_PATH_SERVICE] = "service"
};

const char *
gc_fit_path_name(int path)
{
	return fit_path_names[path];
}

#ifdef GC_WITH_CUDA
/* Make gpuclust.gpu_id current and device use it; false (and why) if unusable */
static bool
use_gpu(GcDevice *device, char *why, size_t whylen)
{
	if (!gc_cuda_use_device(gc_gpu_id, why, whylen))
		return false;
	gc_gpu_context_id = gc_gpu_id;
	device->kind = GC_KIND_GPU;
	device->kmeans = &gc_kmeans_cuda_backend;
	device->pmedian = &gc_pmedian_cuda_backend;
	device->alloc = gc_cuda_host_alloc;
	device->free = gc_cuda_host_free;
	device->gpu_id = gc_gpu_id;
	return true;
}
#endif

/*
 * Make device gpuclust.gpu_id, in the GPU service when device->service
 * (no context here; the rows stay in plain memory, which the service
 * copies) or in this backend; false (and why) if unusable
 */
static bool
use_gpu_for(GcDevice *device, char *why, size_t whylen)
{
	if (device->service)
	{
		if (!gc_service_gpu_usable(gc_gpu_id, why, whylen))
			return false;
		device->kind = GC_KIND_GPU;
		device->gpu_id = gc_gpu_id;
		device->gpu_pinned = gc_gpu_id_pinned;
		return true;
	}
#ifdef GC_WITH_CUDA
	return use_gpu(device, why, whylen);
#else
	snprintf(why, whylen, "gpuclust was built without GPU support.");
	return false;
#endif
}

/* The error of gpuclust.device = gpu without a usable GPU */
static void no_usable_gpu(const char *why) GC_NORETURN;

static void
no_usable_gpu(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("no usable GPU for gpuclust.device = gpu"),
			 errdetail("%s", why),
			 errhint("Set gpuclust.device to auto or cpu to run on the CPU.")));
}

/*
 * A fit settled on the CPU runs in this backend, not in the GPU service,
 * unless gpuclust.service_cpu_fits sends it there
 */
static void
keep_cpu_fit_here(GcDevice *device)
{
	device->service = device->service && gc_service_cpu_fits;
}

/*
 * Choose the backend for one call from gpuclust.device.  cpu and gpu
 * decide now; auto starts on the CPU, deferred: gc_settle_device decides
 * once the fit's work is known (or known to be large), so that small fits
 * never touch CUDA.  With service, the GPU service is to run the fit,
 * unless it settles on the CPU (keep_cpu_fit_here).
 */
static void
choose_device(GcDevice *device, bool service)
{
	gc_use_cpu_device(device);
	device->service = service;
	if (gc_device_setting == GC_DEVICE_CPU)
	{
		device->reason = GC_REASON_SETTING_CPU;
		keep_cpu_fit_here(device);
		return;
	}
	if (gc_device_setting == GC_DEVICE_AUTO)
	{
		device->deferred = true;
		return;
	}
	device->reason = GC_REASON_SETTING_GPU;
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (!use_gpu_for(device, why, sizeof(why)))
			no_usable_gpu(why);
	}
#else
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("gpuclust was built without GPU support"),
			 errhint("Rebuild gpuclust with nvcc on the PATH, or set gpuclust.device to auto or cpu.")));
#endif
}

/* The device for a fit: in the GPU service while one runs */
void
gc_choose_service_device(GcDevice *device)
{
	choose_device(device, gc_service_enabled());
}

/*
 * The GPU service cannot run a fit for which device was chosen (it is
 * gone, or, with reason GC_REASON_AUTO_OVER_BUDGET, the fit exceeds its
 * memory budget): run it in this backend, on the device chosen or, when
 * this backend cannot use that GPU under auto, on the CPU
 */
void
gc_leave_service(GcDevice *device, GcDeviceReason reason)
{
	char		why[256];
	GcDeviceReason chosen = device->reason;

	device->service = false;
	if (reason == GC_REASON_AUTO_OVER_BUDGET || device->kind != GC_KIND_GPU)
	{
		if (reason == GC_REASON_AUTO_OVER_BUDGET)
		{
			gc_use_cpu_device(device);
			device->reason = reason;
		}
		return;
	}
	if (use_gpu_for(device, why, sizeof(why)))
		return;
	if (chosen == GC_REASON_SETTING_GPU)
		no_usable_gpu(why);
	gc_use_cpu_device(device);
	device->reason = GC_REASON_AUTO_NO_GPU;
}

/*
 * Decide a deferred (auto) device for work, rows x k x d x n_init: the
 * CPU below gc_auto_gpu_min_work(), else the GPU when one is usable.
 * Asking whether one is usable (and making it current) creates the CUDA
 * context, which only large work pays for.
 */
void
gc_settle_device(GcDevice *device, double work)
{
	if (!device->deferred)
		return;
	device->deferred = false;
	if (work < gc_auto_gpu_min_work(device))
		device->reason = GC_REASON_AUTO_SMALL;
	else
	{
#ifdef GC_WITH_CUDA
		char		why[256];

		device->reason = use_gpu_for(device, why, sizeof(why)) ?
			GC_REASON_AUTO_LARGE : GC_REASON_AUTO_NO_GPU;
#else
		device->reason = GC_REASON_AUTO_NO_CUDA;
#endif
	}
	if (device->kind != GC_KIND_GPU)
		keep_cpu_fit_here(device);
}

/*
 * gpuclust_device_info() -> jsonb: whether CUDA support was built, the
 * device setting, and, when a GPU is usable, its name and memory
 */
PG_FUNCTION_INFO_V1(gpuclust_device_info);
Datum
gpuclust_device_info(PG_FUNCTION_ARGS)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"device\": \"%s\", \"gpu_id\": %d, ",
					 device_options[gc_device_setting].name, gc_gpu_id);
#ifdef GC_WITH_CUDA
	{
		char		why[256],
					name[256];
		size_t		free_bytes,
					total_bytes;
		GcDevice	device;

		appendStringInfoString(&buf, "\"built_with_cuda\": true, ");
		if (use_gpu(&device, why, sizeof(why)) &&
			gc_cuda_describe_device(name, sizeof(name), &free_bytes, &total_bytes))
		{
			appendStringInfoString(&buf, "\"gpu\": ");
			escape_json(&buf, name);
			appendStringInfo(&buf, ", \"memory_free_mb\": %zu, \"memory_total_mb\": %zu}",
							 free_bytes >> 20, total_bytes >> 20);
		}
		else
		{
			appendStringInfoString(&buf, "\"gpu\": null, \"reason\": ");
			escape_json(&buf, why);
			appendStringInfoChar(&buf, '}');
		}
	}
#else
	appendStringInfoString(&buf, "\"built_with_cuda\": false, \"gpu\": null}");
#endif
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

