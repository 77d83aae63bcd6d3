/*-------------------------------------------------------------------------
 *
 * gc_device.h
 *	  Where a fit runs: GcDevice (the backends, allocator, GPU and path
 *	  chosen), why (GcDeviceReason, recorded in models) and the choice
 *	  itself (device_choice.c).
 *
 * IDENTIFICATION
 *	  src/gc_device.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_DEVICE_H
#define GC_DEVICE_H

#include "gc_pg.h"

/* device_choice.c: gpuclust.device and where a fit runs */
typedef enum GcDeviceSetting
{
	GC_DEVICE_AUTO,
	GC_DEVICE_GPU,
	GC_DEVICE_CPU
} GcDeviceSetting;

typedef enum GcDeviceKind
{
	GC_KIND_CPU = 0,
	GC_KIND_GPU = 1
} GcDeviceKind;

/* Why a fit runs where it does, recorded in its model */
typedef enum GcDeviceReason
{
	GC_REASON_UNRECORDED = 0,	/* a model typed in without the field */
	GC_REASON_SETTING_CPU,		/* gpuclust.device = cpu */
	GC_REASON_SETTING_GPU,		/* gpuclust.device = gpu */
	GC_REASON_AUTO_SMALL,		/* auto: work below the GPU's threshold */
	GC_REASON_AUTO_LARGE,		/* auto: work above it, on the GPU */
	GC_REASON_AUTO_NO_GPU,		/* auto: work above it, no usable GPU */
	GC_REASON_AUTO_NO_CUDA,		/* auto: work above it, a build without CUDA */
	GC_REASON_AUTO_OVER_BUDGET, /* auto: more than the GPU service's memory budget */
	GC_REASON_COUNT
} GcDeviceReason;

typedef struct GcDevice
{
	GcDeviceKind kind;
	GcDeviceReason reason;
	bool		deferred;		/* auto, not yet decided: the CPU until then */
	const GcKmeansBackend *kmeans;
	const GcPmBackend *pmedian;
	GcHostAlloc alloc;			/* pinned when the GPU will read the rows */
	GcHostFree	free;
	int			gpu_id;			/* the GPU's index, when kind is GPU */
	bool		service;		/* the GPU service runs the fit (kind as decided
								 * here; the rows in plain memory) */
	bool		gpu_pinned;		/* service: gpu_id was set, run on it alone */
} GcDevice;

/* Which process ran a fit, recorded in its model */
typedef enum GcFitPath
{
	GC_PATH_UNRECORDED = 0,		/* a model typed in without the field */
	GC_PATH_BACKEND,			/* the backend that asked for it */
	GC_PATH_SERVICE,			/* the GPU service */
	GC_PATH_COUNT
} GcFitPath;

/* device_choice.c: where a fit runs */
extern void gc_device_choice_init(void);
extern void gc_choose_service_device(GcDevice *device);
extern void gc_leave_service(GcDevice *device, GcDeviceReason reason);
extern const char *gc_fit_path_name(int path);
extern void gc_settle_device(GcDevice *device, double work);
extern double gc_auto_gpu_min_work(const GcDevice *device);
extern const char *gc_device_reason_name(int reason);
extern void gc_use_cpu_device(GcDevice *device);

/* fit_gpus.c: the GPUs one fit may span, and its rows' GPU memory */
typedef struct GcFitGpus
{
	bool		all;			/* every usable GPU */
	int			count;			/* else these; none: the fit's one GPU */
	int			ids[GC_FIT_MAX_GPUS];
} GcFitGpus;

extern void gc_fit_gpus_init(void);
extern size_t gc_fit_rows_bytes(void);
extern bool gc_fit_gpus_named(void);
extern int	gc_fit_gpus_resolve(int available, int *ids);
extern const GcKmeansBackend *gc_plan_gpu_fit(const GcDevice *device, const GcRows *rows,
											  GcKmeansParams *params, GcGpuPlan *plan,
											  int *devices);

#endif							/* GC_DEVICE_H */
