/*-------------------------------------------------------------------------
 *
 * gpu_service.h
 *	  The GPU service: one background worker per server that owns the CUDA
 *	  contexts and runs the k-means and p-median fits that backends submit
 *	  through shared memory.  Shared by the worker (gpu_service.c), its runner
 *	  threads (service_runner.c) and the backends' side
 *	  (service_client.c).
 *
 * A request is a dynamic shared memory segment that the backend fills
 * (GcServiceRequest, then its arrays) and names in its slot of the
 * service's queue, an array in the main shared memory indexed by process
 * number.  The service maps the segment, runs the fit, writes the result
 * into the segment and sets the backend's latch.
 *
 * IDENTIFICATION
 *	  src/service/gpu_service.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_GPU_SERVICE_H
#define GC_GPU_SERVICE_H

#include "gpuclust.h"

#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/spin.h"

#define GC_SERVICE_MAGIC	0x47435352	/* "GCSR" */

/* A slot's life: the backend queues it, the service runs it, the backend frees it */
typedef enum GcSlotState
{
	GC_SLOT_FREE = 0,
	GC_SLOT_QUEUED,				/* submitted, waiting for a runner or memory */
	GC_SLOT_RUNNING,			/* taken by the service */
	GC_SLOT_DONE				/* result in the segment */
} GcSlotState;

typedef struct GcServiceSlot
{
	GcSlotState state;
	bool		cancel;			/* the backend asks the fit to stop */
	bool		abandoned;		/* the backend left: the service frees the slot */
	int			pid;
	Latch	   *latch;			/* the backend's */
	dsm_handle	handle;
	uint64		ticket;			/* submission order */
	uint32		generation;		/* of the service it was submitted to */
} GcServiceSlot;

typedef struct GcServiceShared
{
	slock_t		mutex;			/* protects everything below */
	int			service_pid;	/* 0: the service is not running */
	uint32		generation;		/* counts the service's starts */
	Latch	   *service_latch;
	uint64		next_ticket;
	int			gpu_count;		/* usable GPUs the service opened */
	char		no_gpu_reason[200]; /* why none, when gpu_count is 0 */
	int			nslots;
	GcServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} GcServiceShared;

/* What a request asks the service to run */
typedef enum GcServiceFitKind
{
	GC_SERVICE_KMEANS = 0,		/* gc_kmeans_fit: params, centroids and sizes */
	GC_SERVICE_PMEDIAN			/* gc_pmedian_fit: pm_params, demands, medoids */
} GcServiceFitKind;

/* What the service did with a request */
typedef enum GcServiceVerdict
{
	GC_VERDICT_RAN = 0,			/* status and result below */
	GC_VERDICT_DECLINED,		/* auto, over the GPU memory budget: run it yourself */
	GC_VERDICT_UNAVAILABLE		/* its rows could not be mapped: run it yourself */
} GcServiceVerdict;

/*
 * A chunk of a request's rows, in the row store's order: in the request
 * segment itself (handle 0: copied there), or left where a parallel
 * worker wrote them, in that worker's partial-state segment, which the
 * leader holds mapped while it waits (partial_adopt.c)
 */
typedef struct GcServiceChunk
{
	dsm_handle	handle;
	int64		count;
	Size		values;			/* offsets in that segment */
	Size		hashes;
	Size		weights;		/* when weighted */
} GcServiceChunk;

/*
 * A request segment: this header, then the arrays at the offsets it
 * names.  The backend writes the inputs; the service writes progress
 * while it runs and the outcome at the end.
 */
typedef struct GcServiceRequest
{
	uint32		magic;
	int			slot;
	uint64		ticket;
	/* the fit */
	GcServiceFitKind kind;
	GcKmeansParams params;		/* k-means; pointers replaced on each side */
	GcPmParams	pm_params;		/* p-median; its hook replaced on each side */
	GcDeviceKind device;		/* decided by the backend */
	int			gpu_id;			/* the service may choose another unless pinned */
	bool		gpu_pinned;
	int			d;
	int64		n;
	int64		total_weight;
	bool		weighted;
	bool		bad_weight;
	bool		float_exact;	/* every value a float32 value */
	bool		narrow;			/* values held as float32 (GcRows.narrow) */
	bool		has_init;
	bool		want_labels;
	bool		want_distances;
	bool		want_parents;	/* k-means: each centroid's coarse cluster */
	bool		has_demand;		/* p-median: demands beside the rows */
	bool		may_decline;	/* device = auto: over budget, the backend runs it */
	/*
	 * a k-means GPU fit's plan (engine/gpu_plan.c), made when the service
	 * maps the request: over fit_gpus (none: gpu_id alone) within the
	 * budget and fit_rows_bytes, where may_shard; plan_error where no
	 * plan fits
	 */
	bool		may_shard;
	int			nfit_gpus;
	int			fit_gpus[GC_FIT_MAX_GPUS];
	Size		fit_rows_bytes; /* gpuclust.gpu_fit_memory_mb; 0: none */
	GcGpuPlan	plan;
	GcError		plan_error;
	int			nchunks;
	Size		off_chunks,		/* GcServiceChunk[nchunks] */
				off_lo,
				off_hi,
				off_values,		/* the rows copied here */
				off_hashes,
				off_weights,
				off_init,
				off_centroids,	/* k-means: k x d */
				off_sizes,
				off_parents,	/* k-means: k, where the caller wants parents */
				off_demand,		/* p-median: n, in the rows' order */
				off_medoids,	/* p-median: p row numbers */
				off_penalties,
				off_labels,		/* each row's cluster (p-median: index of
								 * its medoid), when asked for */
				off_distances;
	/* progress, written by the runner (read without a lock: a display) */
	volatile int phase;			/* GcPhase; QUEUED until a runner takes it */
	volatile int restart;
	volatile int iteration;
	volatile double shift;
	volatile double inertia;
	/* outcome */
	GcServiceVerdict verdict;
	GcError		error;
	GcKmeansResult result;		/* its pointers meaningless here: arrays at the
								 * offsets, names in kernel and init */
	GcPmResult	pm_result;		/* likewise */
	char		kernel[GC_KERNEL_NAME_BYTES];
	char		init[GC_INIT_NAME_BYTES];
} GcServiceRequest;

#define GC_REQUEST_ARRAY(req, off, type) ((type *) ((char *) (req) + (req)->off))

/* One fit handed to a runner thread */
typedef struct GcServiceJob
{
	GcServiceRequest *request;
	GcServiceSlot *slot;
	Size		gpu_bytes;		/* charged to the budget of each GPU while it runs */
	uint64		gpus;			/* those GPUs, a bit each */
	const char *const *chunk_bases; /* each chunk's segment, mapped */
	volatile int state;			/* GcJobState */
} GcServiceJob;

typedef enum GcJobState
{
	GC_JOB_IDLE = 0,
	GC_JOB_ASSIGNED,			/* the runner works on it */
	GC_JOB_FINISHED				/* the runner is done: the service reaps it */
} GcJobState;

/* gpu_service.c */
extern GcServiceShared *gc_service_shared;
extern void gc_service_init(void);
extern bool gc_service_enabled(void);
extern PGDLLEXPORT void gpuclust_service_main(Datum arg);

/* service_runner.c: threads that run fits (no PostgreSQL call in them) */
extern bool gc_runners_start(int count, Latch *service_latch, char *why,
							 size_t whylen);
extern void gc_runners_stop(void);
extern GcServiceJob *gc_runner_idle_job(void);
extern GcServiceJob *gc_runner_finished_job(void);
extern void gc_runner_assign(GcServiceJob *job);
extern void gc_runner_release(GcServiceJob *job);

/* service_client.c: a backend's side */
typedef struct GcServiceFit
{
	GcServiceFitKind kind;
	const GcRows *rows;
	const struct GcPartialSegments *segments;	/* where borrowed rows lie, or NULL */
	GcDevice   *device;			/* left for this backend when the service cannot
								 * run the fit */
	uint32		progress;		/* the fit's progress token */
	const GcFitMemory *memory;	/* the fit's account, or NULL: a request segment
								 * past it is not made (the fit runs here) */
	/* a k-means fit */
	bool		may_shard;		/* a fit over rows: planned over gpuclust.fit_gpus
								 * and gpuclust.gpu_fit_memory_mb; else (a stream's)
								 * in one session */
	GcGpuPlan	plan;			/* how the service ran it on its GPUs */
	const GcKmeansParams *params;
	GcKmeansResult *result;		/* centroids, sizes (labels, distances) to fill */
	char		kernel[GC_KERNEL_NAME_BYTES];	/* result->kernel points here */
	char		init[GC_INIT_NAME_BYTES];	/* and result->init here */
	/* a p-median fit */
	const GcPmParams *pm_params;
	const double *demand;		/* n, or NULL */
	GcPmResult *pm_result;		/* medoids, penalties (alloc, dist) to fill */
} GcServiceFit;

extern bool gc_service_fit(GcServiceFit *fit, GcError *err);
extern bool gc_service_fit_input(GcInput *input, GcServiceFit *fit);
extern bool gc_service_gpu_usable(int gpu_id, char *why, size_t whylen);

#endif							/* GC_GPU_SERVICE_H */
