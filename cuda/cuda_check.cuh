/*-------------------------------------------------------------------------
 *
 * cuda_check.cuh
 *	  One macro for checking CUDA calls: on failure it records the call,
 *	  file, line and error name in a GcError, clears the sticky error, and
 *	  returns the status from the enclosing function; and device allocation
 *	  in the same style.
 *
 * IDENTIFICATION
 *	  cuda/cuda_check.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CUDA_CHECK_CUH
#define GC_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "gc_engine.h"

extern "C" bool gc_cuda_driver_missing(void);	/* device.cu */

static inline GcStatus
gc_cuda_fail(GcError *err, cudaError_t e, const char *call, const char *file, int line)
{
	(void) cudaGetLastError();
	if ((e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) && gc_cuda_driver_missing())
		return gc_fail(err, GC_ERR_NO_DEVICE,
					   "no NVIDIA driver found (libcuda.so.1 cannot be loaded): %s failed at %s:%d",
					   call, file, line);
	return gc_fail(err,
				   e == cudaErrorMemoryAllocation ? GC_ERR_DEVICE_MEMORY :
				   e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ?
				   GC_ERR_NO_DEVICE : GC_ERR_DEVICE,
				   "%s failed: %s (%s) at %s:%d", call, cudaGetErrorName(e),
				   cudaGetErrorString(e), file, line);
}

#define GC_CUDA_TRY(call, err) \
	do { \
		cudaError_t gc_e_ = (call); \
		if (gc_e_ != cudaSuccess) \
			return gc_cuda_fail((err), gc_e_, #call, __FILE__, __LINE__); \
	} while (0)

/* After a kernel launch: catches bad configurations at once */
#define GC_CUDA_LAUNCHED(name, err) GC_CUDA_TRY(cudaGetLastError(), err)

/*
 * Devices whose per-device launch settings the launchers cache (kernel
 * attributes belong to a device's context); on more, they set them at
 * every launch
 */
#define GC_CUDA_MAX_DEVICES 64

/*
 * device.cu: the current device's multiprocessor count, which sizes the
 * persistent grids, asked of the driver once per device
 */
GcStatus	gc_cuda_multiprocessors(int *count, GcError *err);

/* cudaMalloc of count elements (at least one), as a status */
template <typename T>
static inline GcStatus
device_alloc(T **ptr, size_t count, GcError *err)
{
	GC_CUDA_TRY(cudaMalloc((void **) ptr, sizeof(T) * (count > 0 ? count : 1)), err);
	return GC_OK;
}

/* In a function with a GcError *err: allocate or return the failure */
#define ALLOC_OR_RETURN(ptr, count) \
	do { \
		GcStatus st_ = device_alloc(&(ptr), (count), err); \
		if (st_ != GC_OK) \
			return st_; \
	} while (0)

#endif							/* GC_CUDA_CHECK_CUH */
