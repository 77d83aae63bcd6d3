/*-------------------------------------------------------------------------
 *
 * device.cu
 *	  Device management: whether a usable GPU exists (asked once per
 *	  backend process; "no NVIDIA driver found" where the driver's library
 *	  is missing), making gpuclust.gpu_id current, opening every GPU
 *	  for the GPU service, and describing the current one and its
 *	  multiprocessor count.  The row
 *	  store's page-locked host memory is pinned_memory.cu's.
 *
 * IDENTIFICATION
 *	  cuda/device.cu
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <stdio.h>

#include "gc_cuda.h"
#include "cuda_check.cuh"

static int	device_count = -1;	/* -1 until asked */
static char no_device_reason[200];

/*
 * Whether the NVIDIA driver's library is missing: the CUDA runtime then
 * reports cudaErrorInsufficientDriver ("CUDA driver version is
 * insufficient"), as it does for a driver too old, so errors ask here to
 * say which.  Asked once per process.
 */
extern "C" bool
gc_cuda_driver_missing(void)
{
	static int	missing = -1;	/* -1 until asked */

	if (__atomic_load_n(&missing, __ATOMIC_RELAXED) < 0)
	{
		void	   *libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

		if (libcuda != NULL)
			dlclose(libcuda);
		__atomic_store_n(&missing, libcuda == NULL ? 1 : 0, __ATOMIC_RELAXED);
	}
	return missing == 1;
}

/* Why the first CUDA call failed with e, in words */
static void
describe_start_error(cudaError_t e, char *why, size_t whylen)
{
	if ((e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) && gc_cuda_driver_missing())
		snprintf(why, whylen, "no NVIDIA driver found (libcuda.so.1 cannot be loaded)");
	else if (e == cudaErrorNoDevice)
		snprintf(why, whylen, "no NVIDIA GPU found: the driver sees no CUDA device");
	else
		snprintf(why, whylen, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorName(e),
				 cudaGetErrorString(e));
}

/*
 * Cached per device and published atomically: the GPU service's runner
 * threads launch on several devices at once
 */
GcStatus
gc_cuda_multiprocessors(int *count, GcError *err)
{
	static int	known[GC_CUDA_MAX_DEVICES];	/* 0 until asked */
	int			device = 0;

	GC_CUDA_TRY(cudaGetDevice(&device), err);
	*count = device < GC_CUDA_MAX_DEVICES ? __atomic_load_n(&known[device], __ATOMIC_RELAXED) : 0;
	if (*count > 0)
		return GC_OK;
	GC_CUDA_TRY(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device), err);
	if (device < GC_CUDA_MAX_DEVICES)
		__atomic_store_n(&known[device], *count, __ATOMIC_RELAXED);
	return GC_OK;
}

extern "C" bool
gc_cuda_use_device(int gpu_id, char *why, size_t whylen)
{
	cudaError_t e;

	if (device_count < 0)
	{
		e = cudaGetDeviceCount(&device_count);
		if (e != cudaSuccess)
		{
			(void) cudaGetLastError();
			device_count = 0;
			describe_start_error(e, no_device_reason, sizeof(no_device_reason));
		}
		else if (device_count == 0)
			snprintf(no_device_reason, sizeof(no_device_reason), "No CUDA device is present.");
	}
	if (device_count == 0)
	{
		snprintf(why, whylen, "%s", no_device_reason);
		return false;
	}
	if (gpu_id >= device_count)
	{
		snprintf(why, whylen, "gpuclust.gpu_id is %d but only %d CUDA device(s) are present.",
				 gpu_id, device_count);
		return false;
	}
	e = cudaSetDevice(gpu_id);
	if (e != cudaSuccess)
	{
		(void) cudaGetLastError();
		snprintf(why, whylen, "cudaSetDevice(%d) failed: %s (%s)", gpu_id,
				 cudaGetErrorName(e), cudaGetErrorString(e));
		return false;
	}
	return true;
}

/* How many CUDA devices are present (0 where none is usable); device 0 made current */
extern "C" int
gc_cuda_device_count(void)
{
	char		why[200];

	return gc_cuda_use_device(0, why, sizeof(why)) ? device_count : 0;
}

extern "C" int
gc_cuda_open_devices(size_t *total_bytes, int max, char *why, size_t whylen)
{
	int			opened = 0;

	if (!gc_cuda_use_device(0, why, whylen))
		return 0;
	for (int g = 0; g < device_count && g < max; g++)
	{
		size_t		free_bytes;
		cudaError_t e = cudaSetDevice(g);

		/* cudaFree(0) creates the primary context; the memory query needs it */
		if (e == cudaSuccess)
			e = cudaFree(0);
		if (e == cudaSuccess)
			e = cudaMemGetInfo(&free_bytes, &total_bytes[g]);
		if (e != cudaSuccess)
		{
			(void) cudaGetLastError();
			snprintf(why, whylen, "opening CUDA device %d failed: %s (%s)", g,
					 cudaGetErrorName(e), cudaGetErrorString(e));
			break;
		}
		opened = g + 1;
	}
	return opened;
}

extern "C" bool
gc_cuda_describe_device(char *name, size_t namelen, size_t *free_bytes,
						size_t *total_bytes)
{
	int			device;
	cudaDeviceProp prop;

	if (cudaGetDevice(&device) != cudaSuccess ||
		cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
		cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	snprintf(name, namelen, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
	return true;
}
