/*-------------------------------------------------------------------------
 *
 * fit_gpus.c
 *	  The GPUs one k-means fit may span and the GPU memory its rows may
 *	  take: the GUCs gpuclust.fit_gpus and gpuclust.gpu_fit_memory_mb, and
 *	  a GPU fit in this backend planned under them (engine/gpu_plan.c
 *	  decides; here its budget is gathered: each GPU's free memory).  The
 *	  GPU service plans its fits from the same settings, which the
 *	  request carries (src/service/).
 *
 * IDENTIFICATION
 *	  src/fit_gpus.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include <ctype.h>
#include <limits.h>

#include "utils/guc.h"

#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* GPU indices gpuclust.fit_gpus may name: gpuclust.gpu_id's range */
#define FIT_GPU_MAX_ID 1024

static char *fit_gpus_setting = NULL;
static const GcFitGpus *fit_gpus = NULL;	/* the setting parsed (its extra) */
static int	gpu_fit_memory_mb = 0;

/*
 * Parse a fit_gpus value into out: '' (gpuclust.gpu_id alone), 'all', or
 * distinct GPU indices separated by commas; false with detail if not one
 */
static bool
parse_fit_gpus(const char *value, GcFitGpus *out, char *detail, size_t detaillen)
{
	const char *p = value ? value : "";

	memset(out, 0, sizeof(*out));
	while (isspace((unsigned char) *p))
		p++;
	if (*p == '\0')
		return true;
	if (pg_strncasecmp(p, "all", 3) == 0)
	{
		const char *rest = p + 3;

		while (isspace((unsigned char) *rest))
			rest++;
		if (*rest == '\0')
		{
			out->all = true;
			return true;
		}
	}
	for (;;)
	{
		long		id = 0;
		int			digits = 0;

		while (isspace((unsigned char) *p))
			p++;
		while (isdigit((unsigned char) *p) && id <= FIT_GPU_MAX_ID)
		{
			id = id * 10 + (*p++ - '0');
			digits++;
		}
		while (isspace((unsigned char) *p))
			p++;
		if (digits == 0 || (*p != ',' && *p != '\0'))
		{
			snprintf(detail, detaillen, "Each entry must be a GPU index (0 to %d).", FIT_GPU_MAX_ID);
			return false;
		}
		if (id > FIT_GPU_MAX_ID)
		{
			snprintf(detail, detaillen, "GPU indices run from 0 to %d.", FIT_GPU_MAX_ID);
			return false;
		}
		for (int i = 0; i < out->count; i++)
			if (out->ids[i] == id)
			{
				snprintf(detail, detaillen, "GPU %ld is named twice.", id);
				return false;
			}
		if (out->count == GC_FIT_MAX_GPUS)
		{
			snprintf(detail, detaillen, "A fit spans at most %d GPUs.", GC_FIT_MAX_GPUS);
			return false;
		}
		out->ids[out->count++] = (int) id;
		if (*p == '\0')
			return true;
		p++;
	}
}

static bool
check_fit_gpus(char **newval, void **extra, GucSource source)
{
	GcFitGpus	parsed;
	GcFitGpus  *copy;
	char		detail[200];

	if (!parse_fit_gpus(*newval, &parsed, detail, sizeof(detail)))
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errdetail("%s", detail);
		GUC_check_errhint("Name the GPUs a fit may span by index, as in '0,1', or 'all'; "
						  "'' runs it on gpuclust.gpu_id alone.");
		return false;
	}
	copy = gc_guc_malloc(sizeof(GcFitGpus));
	if (copy == NULL)
		return false;
	*copy = parsed;
	*extra = copy;
	return true;
}

static void
assign_fit_gpus(const char *newval, void *extra)
{
	fit_gpus = extra;
}

/* Define the GUCs (from _PG_init) */
void
gc_fit_gpus_init(void)
{
	DefineCustomStringVariable("gpuclust.fit_gpus",
							   "The GPUs one k-means fit may span.",
							   "'' runs a GPU fit on one GPU (gpuclust.gpu_id, or the GPU service's "
							   "choice); a list such as '0,1', or 'all', splits its rows over those "
							   "GPUs, giving the same model.",
							   &fit_gpus_setting, "",
							   PGC_USERSET, 0, check_fit_gpus, assign_fit_gpus, NULL);

	/*
	 * Only ever a further bound under what the GPU offers (its free
	 * memory, the service's budget), so any user may set it: a fit past
	 * it streams its rows, giving the same model, more slowly
	 */
	DefineCustomIntVariable("gpuclust.gpu_fit_memory_mb",
							"GPU memory one k-means fit's rows may take on each GPU.",
							"A GPU fit whose rows need more streams them through the GPU, "
							"giving the same model. 0: only the GPU's free memory (or the "
							"service's budget) bounds it.",
							&gpu_fit_memory_mb, 0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
}

/* gpuclust.gpu_fit_memory_mb in bytes; 0: no bound of its own */
size_t
gc_fit_rows_bytes(void)
{
	return (size_t) gpu_fit_memory_mb << 20;
}

/*
 * The GPUs a fit may span, into ids (GC_FIT_MAX_GPUS): gpuclust.fit_gpus's,
 * every one of the available for 'all', or, for '', none (the caller's
 * one GPU); a GPU named past the available is an error
 */
int
gc_fit_gpus_resolve(int available, int *ids)
{
	GcFitGpus	none = {0};
	const GcFitGpus *setting = fit_gpus ? fit_gpus : &none;

	if (setting->all)
	{
		int			count = Min(available, GC_FIT_MAX_GPUS);

		if (count < 1)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("gpuclust.fit_gpus is 'all' but no GPU is usable"),
					 errhint("Set gpuclust.device to cpu to run on the CPU.")));
		for (int i = 0; i < count; i++)
			ids[i] = i;
		return count;
	}
	for (int i = 0; i < setting->count; i++)
	{
		if (setting->ids[i] >= available)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("gpuclust.fit_gpus names GPU %d, but %d GPU(s) are usable",
							setting->ids[i], available),
					 errhint("Name GPUs from 0 to %d, or set gpuclust.fit_gpus to 'all' or ''.",
							 Max(available - 1, 0))));
		ids[i] = setting->ids[i];
	}
	return setting->count;
}

/* Whether gpuclust.fit_gpus names GPUs (else the fit's one GPU) */
bool
gc_fit_gpus_named(void)
{
	return fit_gpus != NULL && (fit_gpus->all || fit_gpus->count > 0);
}

#ifdef GC_WITH_CUDA
/*
 * Plan a GPU fit in this backend over rows (engine/gpu_plan.c): its GPUs
 * (into devices, GC_FIT_MAX_GPUS), the least free memory among them and
 * gpuclust.gpu_fit_memory_mb.  Returns the backend to run it on, params
 * set for it; a budget too small for the fit is raised.
 */
const GcKmeansBackend *
gc_plan_gpu_fit(const GcDevice *device, const GcRows *rows, GcKmeansParams *params,
				GcGpuPlan *plan, int *devices)
{
	GcGpuBudget budget = {0};
	GcError		err = {0};
	char		why[256];
	int			count = 0;

	if (gc_fit_gpus_named())
		count = gc_fit_gpus_resolve(gc_cuda_device_count(), devices);
	if (count == 0)
		devices[count++] = device->gpu_id;
	budget.gpus = count;
	budget.rows_bytes = gc_fit_rows_bytes();
	for (int i = 0; i < count; i++)
	{
		char		name[256];
		size_t		free_bytes,
					total_bytes;

		if (!gc_cuda_use_device(devices[i], why, sizeof(why)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("GPU %d of gpuclust.fit_gpus is not usable", devices[i]),
					 errdetail("%s", why),
					 errhint("Name usable GPUs in gpuclust.fit_gpus, or set it to ''.")));
		if (gc_cuda_describe_device(name, sizeof(name), &free_bytes, &total_bytes))
			budget.device_bytes = i == 0 ? Max(free_bytes, 1) :
				Min(budget.device_bytes, Max(free_bytes, 1));
	}
	if (!gc_cuda_use_device(device->gpu_id, why, sizeof(why)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no usable GPU for gpuclust.device = gpu"),
				 errdetail("%s", why)));
	if (gc_kmeans_plan_gpus(params, rows->n, rows->d,
							rows->narrow && gc_kmeans_cuda_sharded_backend.reads_narrow,
							rows->weighted, &budget, plan, &err) != GC_OK)
		gc_raise(&err);
	/* one session on the GPU gpuclust.fit_gpus names, where it names one */
	if (!plan->sharded)
	{
		if (gc_fit_gpus_named())
			params->devices = devices;
		return device->kmeans;
	}
	gc_kmeans_plan_apply(plan, params);
	params->devices = devices;
	return &gc_kmeans_cuda_sharded_backend;
}
#endif
