/*-------------------------------------------------------------------------
 *
 * gc_gpu_plan.h
 *	  A k-means fit's GPU layout (engine/gpu_plan.c): the GPU memory a fit
 *	  takes, and whether it runs in one session or sharded over several
 *	  GPUs and streamed past a budget, decided in one place for the
 *	  backend's fits and the GPU service's.
 *
 * IDENTIFICATION
 *	  engine/gc_gpu_plan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_GPU_PLAN_H
#define GC_GPU_PLAN_H

#include "gc_kmeans.h"

/* GPUs one fit spans at most (gpuclust.fit_gpus) */
#define GC_FIT_MAX_GPUS 64

/* GPU memory of a fit in one session over n rows of d values, an upper bound */
extern size_t gc_kmeans_gpu_bytes(const GcKmeansParams *params, int64_t n, int d);

/* GPU memory one row takes in a sharded fit's session */
extern size_t gc_kmeans_gpu_shard_row_bytes(int d, bool weighted);

/* GPU memory a sharded fit's lane takes besides its rows' */
extern size_t gc_kmeans_gpu_lane_fixed_bytes(int k, int d);

/* What the GPUs offer one fit */
typedef struct GcGpuBudget
{
	int			gpus;			/* GPUs the fit may span, at least 1 */
	size_t		device_bytes;	/* the least any of them offers the fit (free
								 * memory, the service's budget); 0: no bound */
	size_t		rows_bytes;		/* the fit's own bound on its rows' bytes per
								 * GPU (gpuclust.gpu_fit_memory_mb); 0: none */
} GcGpuBudget;

/* How a fit runs on its GPUs */
typedef struct GcGpuPlan
{
	bool		sharded;		/* over gc_kmeans_cuda_sharded_backend; else one
								 * session of gc_kmeans_cuda_backend */
	int			lanes;			/* GPUs used */
	int			shards;
	int64_t		lane_rows;		/* the rows a lane's sessions hold; 0: no bound */
	double		resident_fraction;	/* rows that stay on a GPU through the fit */
	int64_t		streamed_bytes; /* moved between host and GPU per iteration */
	size_t		gpu_bytes;		/* per GPU, an upper bound */
} GcGpuPlan;

/*
 * Plan a fit of params over n rows of d values (narrow, weighted as the
 * store holds them) within budget; GC_ERR_DEVICE_MEMORY when a lane
 * cannot hold two rows
 */
extern GcStatus gc_kmeans_plan_gpus(const GcKmeansParams *params, int64_t n, int d,
									bool narrow, bool weighted, const GcGpuBudget *budget,
									GcGpuPlan *plan, GcError *err);

/*
 * params for plan: a sharded plan's shards, lanes and lane_rows, and
 * exact labeling (float32 for a reduced precision: a sharded fit offers
 * no check of it)
 */
extern void gc_kmeans_plan_apply(const GcGpuPlan *plan, GcKmeansParams *params);

/* The plan of a fit that holds every row on one GPU, or on the CPU (gpus 0) */
extern void gc_kmeans_plan_in_core(GcGpuPlan *plan, int gpus);

#endif							/* GC_GPU_PLAN_H */
