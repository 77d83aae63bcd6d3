/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  The gpuclust_progress view: what each backend's fit is doing (phase,
 *	  rows, restart, iteration, centroid shift, inertia, device, and how
 *	  a k-means fit runs on its GPUs), in the style of pg_stat_progress_*.
 *
 * Each backend owns one slot of an array in shared memory, indexed by its
 * process number, which only it writes.  A write is bracketed by a change
 * count (odd while writing), as PgBackendStatus is: readers copy a slot
 * and retry until they see the same even count before and after, so
 * neither side takes a lock and the engine's per-iteration callback costs
 * a few stores.  The array is requested at server start when gpuclust is
 * in shared_preload_libraries; otherwise, on PostgreSQL 17 and later, it
 * is a segment of the DSM registry, created by the first backend that
 * needs it and kept until the server stops.  On 15 and 16 without the
 * preload nothing is reported and the view is empty.
 *
 * A slot is claimed when a fit receives its first row (or starts) and
 * cleared when the fit ends, when its rows are released unfitted, at the
 * end of the transaction and on any error (transaction or subtransaction
 * abort) and at backend exit, so a cancelled or failed fit never stays in
 * the view.  One backend has one slot: when several fits are under way at
 * once (an aggregate per group), the one that started or resumed last is
 * shown.
 *
 * IDENTIFICATION
 *	  src/progress.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"
#include "shared_struct.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

typedef struct GcProgressSlot
{
	uint32		changecount;	/* odd while the owner writes */
	int			pid;			/* 0: no fit */
	Oid			datid;
	Oid			userid;
	int16		fit;			/* GcFitKind */
	int16		phase;			/* GcPhase */
	int16		device;			/* GcProgressDevice */
	int16		gpu_id;
	int64		rows;
	int32		restart;		/* 1 .. n_init; 0 before seeding */
	int32		n_init;
	int32		iteration;
	int32		max_iter;
	double		shift;			/* NaN: unknown */
	double		inertia;		/* NaN: unknown */
	bool		planned;		/* the three below are known */
	int32		gpus;			/* GPUs the fit runs on; 0: the CPU */
	double		resident_fraction;	/* rows held on the GPUs */
	int64		streamed_bytes; /* moved between host and GPUs per iteration */
	TimestampTz started;
} GcProgressSlot;

typedef struct GcProgressShared
{
	int			nslots;
	GcProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} GcProgressShared;

static GcProgressShared *progress_shared = NULL;

/* This backend's slot (NULL until its first report, or without the array) */
static GcProgressSlot *my_slot = NULL;
static bool callbacks_registered = false;

/* The token of the fit the slot shows (0: none) and the last one handed out */
static uint32 shown_token = 0;
static uint32 last_token = 0;

/* The cosine metric's inertia is half the engine's */
static double inertia_scale = 1.0;

static const char *const phase_names[] = {
	[GC_PHASE_COLLECTING] = "collecting",
	[GC_PHASE_QUEUED] = "queued",
	[GC_PHASE_UPLOADING] = "uploading",
	[GC_PHASE_SEEDING] = "seeding",
	[GC_PHASE_ITERATING] = "iterating",
	[GC_PHASE_RETURNING] = "returning"
};

static const char *const fit_names[] = {
	[GC_FIT_KMEANS] = "kmeans",
	[GC_FIT_PMEDIAN] = "pmedian",
	[GC_FIT_STREAM_MODEL] = "kmeans_stream_model"
};

static Size
progress_shmem_size(void)
{
	return add_size(offsetof(GcProgressShared, slots),
					mul_size(MaxBackends, sizeof(GcProgressSlot)));
}

/* Empty slots for every backend */
static void
progress_shmem_init(void *ptr)
{
	GcProgressShared *shared = ptr;

	memset(shared, 0, progress_shmem_size());
	shared->nslots = MaxBackends;
}

static GcSharedStruct progress_struct = {
	.name = "gpuclust progress",
	.dsm_name = "gpuclust_progress",
	.size = progress_shmem_size,
	.init = progress_shmem_init,
	.address = (void **) &progress_shared
};

/*
 * The slot array: the preloaded one, else (17 and later) the DSM
 * registry's, attached on first use; NULL when there is none
 */
static GcProgressShared *
progress_array(void)
{
	return gc_shared_struct_attach(&progress_struct);
}

/*
 * Request the slot array; from _PG_init, which does nothing here unless
 * gpuclust is being preloaded
 */
void
gc_progress_init(void)
{
	if (process_shared_preload_libraries_in_progress)
		gc_shared_struct_request(&progress_struct);
}

#define BEGIN_WRITE(slot) \
	do { (slot)->changecount++; pg_write_barrier(); } while (0)
#define END_WRITE(slot) \
	do { pg_write_barrier(); (slot)->changecount++; } while (0)

/* Empty this backend's slot */
static void
clear_slot(void)
{
	shown_token = 0;
	if (my_slot == NULL || my_slot->pid == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->pid = 0;
	END_WRITE(my_slot);
}

static void
progress_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		clear_slot();
}

static void
progress_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		clear_slot();
}

static void
progress_exit(int code, Datum arg)
{
	clear_slot();
}

/* This backend's slot, found on the first report; NULL without the array */
static GcProgressSlot *
find_slot(void)
{
	int			index = GC_MY_PROC_INDEX;

	if (my_slot != NULL || progress_array() == NULL)
		return my_slot;
	if (index < 0 || index >= progress_shared->nslots)
		return NULL;
	if (!callbacks_registered)
	{
		RegisterXactCallback(progress_xact_callback, NULL);
		RegisterSubXactCallback(progress_subxact_callback, NULL);
		before_shmem_exit(progress_exit, (Datum) 0);
		callbacks_registered = true;
	}
	my_slot = &progress_shared->slots[index];
	return my_slot;
}

/*
 * Show a new fit of kind fit in the slot, in phase collecting; returns the
 * token that later reports and gc_progress_end name it by
 */
uint32
gc_progress_begin(GcFitKind fit)
{
	GcProgressSlot *slot = find_slot();

	if (++last_token == 0)
		last_token = 1;
	shown_token = last_token;
	inertia_scale = 1.0;
	if (slot == NULL)
		return shown_token;
	BEGIN_WRITE(slot);
	slot->pid = MyProcPid;
	slot->datid = MyDatabaseId;
	slot->userid = GetSessionUserId();
	slot->fit = fit;
	slot->phase = GC_PHASE_COLLECTING;
	slot->device = GC_PROGRESS_DEVICE_UNDECIDED;
	slot->gpu_id = 0;
	slot->planned = false;
	slot->rows = 0;
	slot->restart = slot->n_init = 0;
	slot->iteration = slot->max_iter = 0;
	slot->shift = slot->inertia = NAN;
	slot->started = GetCurrentTimestamp();
	END_WRITE(slot);
	return shown_token;
}

/* The rows collected so far by the fit of token */
void
gc_progress_rows(uint32 token, int64 rows)
{
	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->rows = rows;
	END_WRITE(my_slot);
}

/* The device chosen for the fit of token (gpu_id: the GPU's index) */
void
gc_progress_device(uint32 token, GcProgressDevice device, int gpu_id)
{
	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->device = device;
	my_slot->gpu_id = gpu_id;
	/* a CPU fit holds its rows where it runs; a GPU fit's plan comes later */
	my_slot->planned = device == GC_PROGRESS_DEVICE_CPU;
	my_slot->gpus = 0;
	my_slot->resident_fraction = 1.0;
	my_slot->streamed_bytes = 0;
	END_WRITE(my_slot);
}

/* How the fit of token runs on its GPUs (engine/gpu_plan.c) */
void
gc_progress_plan(uint32 token, const GcGpuPlan *plan)
{
	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->planned = true;
	my_slot->gpus = plan->lanes;
	my_slot->resident_fraction = plan->resident_fraction;
	my_slot->streamed_bytes = plan->streamed_bytes;
	END_WRITE(my_slot);
}

/* The engine's callback, writing the slot of the fit being run */
static void
engine_progress(void *arg, GcPhase phase, int iteration, double shift, double inertia)
{
	uint32		token = (uint32) (uintptr_t) arg;

	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->phase = phase;
	if (phase == GC_PHASE_SEEDING)
		my_slot->restart++;
	my_slot->iteration = iteration;
	my_slot->shift = shift;
	if (!isnan(inertia))
		my_slot->inertia = inertia * inertia_scale;
	END_WRITE(my_slot);
}

/*
 * The fit of token (of kind fit) starts on rows rows on device; params,
 * when given, then report to its slot.  A fit that another took the slot
 * from, or one without a token, is shown anew.  Returns the fit's token.
 */
uint32
gc_progress_fit(uint32 token, GcFitKind fit, GcKmeansParams *params, int64 rows,
				const GcDevice *device)
{
	if (token == 0 || token != shown_token)
		token = gc_progress_begin(fit);
	gc_progress_phase(token, GC_PHASE_UPLOADING, rows,
					  params ? params->n_init : 0, params ? params->max_iter : 0);
	if (device)
		gc_progress_device(token, device->kind == GC_KIND_GPU ?
						   GC_PROGRESS_DEVICE_GPU : GC_PROGRESS_DEVICE_CPU,
						   device->gpu_id);
	inertia_scale = params && params->metric == GC_METRIC_COSINE ? 0.5 : 1.0;
	if (params)
		gc_progress_hook(token, &params->progress, &params->progress_arg);
	return token;
}

/* The engine's progress callback and its argument, reporting to token's slot */
void
gc_progress_hook(uint32 token, GcProgressFn *progress, void **progress_arg)
{
	*progress = engine_progress;
	*progress_arg = (void *) (uintptr_t) token;
}

/*
 * A fit the GPU service runs reports into its request, not through the
 * engine's callback: show what the service last wrote there
 */
void
gc_progress_mirror(uint32 token, GcPhase phase, int restart, int iteration,
				   double shift, double inertia)
{
	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->phase = phase;
	my_slot->restart = restart;
	my_slot->iteration = iteration;
	my_slot->shift = shift;
	if (!isnan(inertia))
		my_slot->inertia = inertia * inertia_scale;
	END_WRITE(my_slot);
}

/* Set the phase, the rows and the restart and iteration limits */
void
gc_progress_phase(uint32 token, GcPhase phase, int64 rows, int n_init, int max_iter)
{
	if (my_slot == NULL || token != shown_token || token == 0)
		return;
	BEGIN_WRITE(my_slot);
	my_slot->phase = phase;
	my_slot->rows = rows;
	my_slot->n_init = n_init;
	my_slot->max_iter = max_iter;
	my_slot->restart = 0;
	my_slot->iteration = 0;
	END_WRITE(my_slot);
}

/* The fit of token is over: empty the slot if it shows that fit */
void
gc_progress_end(uint32 token)
{
	if (token != 0 && token == shown_token)
		clear_slot();
}

/* Copy slot consistently; false when it shows no fit */
static bool
read_slot(volatile GcProgressSlot *slot, GcProgressSlot *copy)
{
	for (;;)
	{
		uint32		before = slot->changecount;
		uint32		after;

		pg_read_barrier();
		memcpy(copy, (const GcProgressSlot *) slot, sizeof(*copy));
		pg_read_barrier();
		after = slot->changecount;
		if (before == after && (before & 1) == 0)
			return copy->pid != 0;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * gpuclust_progress_slots() -> setof record: one row per backend running a
 * fit.  As for pg_stat_progress_*, a role sees the details of its own fits
 * and, with pg_read_all_stats, of everyone's; of others only the pid, the
 * database and the fit.
 */
PG_FUNCTION_INFO_V1(gpuclust_progress_slots);
Datum
gpuclust_progress_slots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = gc_materialize_context(fcinfo, "gpuclust_progress_slots");
	TupleDesc	tupdesc;
	Tuplestorestate *store = gc_result_store(fcinfo, rsinfo, 0, &tupdesc);
	bool		read_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	(void) progress_array();

	for (int i = 0; progress_shared != NULL && i < progress_shared->nslots; i++)
	{
		GcProgressSlot s;
		Datum		values[17];
		bool		nulls[17];
		bool		visible;

		if (!read_slot(&progress_shared->slots[i], &s))
			continue;
		memset(nulls, true, sizeof(nulls));
		visible = read_all || has_privs_of_role(GetUserId(), s.userid);
		values[0] = Int32GetDatum(s.pid);
		values[1] = ObjectIdGetDatum(s.datid);
		values[2] = CStringGetTextDatum(fit_names[s.fit]);
		nulls[0] = nulls[1] = nulls[2] = false;
		if (visible)
		{
			values[3] = CStringGetTextDatum(phase_names[s.phase]);
			values[4] = Int64GetDatum(s.rows);
			values[5] = Int32GetDatum(s.restart);
			values[6] = Int32GetDatum(s.n_init);
			values[7] = Int32GetDatum(s.iteration);
			values[8] = Int32GetDatum(s.max_iter);
			values[9] = Float8GetDatum(s.shift);
			values[10] = Float8GetDatum(s.inertia);
			values[11] = CStringGetTextDatum(s.device == GC_PROGRESS_DEVICE_GPU ? "gpu" : "cpu");
			values[12] = Int32GetDatum(s.gpu_id);
			values[13] = TimestampTzGetDatum(s.started);
			values[14] = Int32GetDatum(s.gpus);
			values[15] = Float8GetDatum(s.resident_fraction);
			values[16] = Int64GetDatum(s.streamed_bytes);
			for (int c = 3; c <= 16; c++)
				nulls[c] = false;
			nulls[14] = nulls[15] = nulls[16] = !s.planned;
			/* unknown or not yet reached */
			nulls[9] = isnan(s.shift);
			nulls[10] = isnan(s.inertia);
			nulls[5] = nulls[6] = s.n_init == 0;
			/* a p-median fit counts its iterations over all its phases, with no one limit */
			nulls[7] = s.max_iter == 0 && s.fit != GC_FIT_PMEDIAN;
			nulls[8] = s.max_iter == 0;
			nulls[11] = s.device == GC_PROGRESS_DEVICE_UNDECIDED;
			nulls[12] = s.device != GC_PROGRESS_DEVICE_GPU;
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

/* gpuclust_progress_enabled() -> bool: whether fits report their progress */
PG_FUNCTION_INFO_V1(gpuclust_progress_enabled);
Datum
gpuclust_progress_enabled(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(progress_array() != NULL);
}
