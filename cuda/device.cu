/*-------------------------------------------------------------------------
 *
 * device.cu
 *	  Device management: whether a usable GPU exists (asked once per
 *	  backend process), making gpuclust.gpu_id current, and page-locked
 *	  host memory for the row store.
 *
 * IDENTIFICATION
 *	  cuda/device.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "gc_cuda.h"
#include "cuda_check.cuh"

static int	device_count = -1;	/* -1 until asked */
static char no_device_reason[200];

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
			snprintf(no_device_reason, sizeof(no_device_reason),
					 "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorName(e),
					 cudaGetErrorString(e));
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

extern "C" void *
gc_cuda_host_alloc(size_t bytes)
{
	void	   *ptr = NULL;

	if (cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return NULL;
	}
	return ptr;
}

extern "C" void
gc_cuda_host_free(void *ptr)
{
	if (ptr != NULL)
		(void) cudaFreeHost(ptr);
}
