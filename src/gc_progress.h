/*-------------------------------------------------------------------------
 *
 * gc_progress.h
 *	  The gpuclust_progress view's writers (progress.c): a fit's slot,
 *	  its phase, rows, device and the engine's per-iteration callback.
 *
 * IDENTIFICATION
 *	  src/gc_progress.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PROGRESS_H
#define GC_PROGRESS_H

#include "gc_device.h"

/* progress.c: the gpuclust_progress view */
typedef enum GcFitKind
{
	GC_FIT_KMEANS = 0,
	GC_FIT_PMEDIAN,
	GC_FIT_STREAM_MODEL
} GcFitKind;

typedef enum GcProgressDevice
{
	GC_PROGRESS_DEVICE_UNDECIDED = 0,
	GC_PROGRESS_DEVICE_CPU,
	GC_PROGRESS_DEVICE_GPU
} GcProgressDevice;

extern void gc_progress_init(void);
extern uint32 gc_progress_begin(GcFitKind fit);
extern void gc_progress_rows(uint32 token, int64 rows);
extern void gc_progress_device(uint32 token, GcProgressDevice device, int gpu_id);
extern uint32 gc_progress_fit(uint32 token, GcFitKind fit, GcKmeansParams *params,
							  int64 rows, const GcDevice *device);
extern void gc_progress_hook(uint32 token, GcProgressFn *progress, void **progress_arg);
extern void gc_progress_phase(uint32 token, GcPhase phase, int64 rows, int n_init,
							  int max_iter);
extern void gc_progress_mirror(uint32 token, GcPhase phase, int restart,
							   int iteration, double shift, double inertia);
extern void gc_progress_plan(uint32 token, const GcGpuPlan *plan);
extern void gc_progress_end(uint32 token);

#endif							/* GC_PROGRESS_H */
