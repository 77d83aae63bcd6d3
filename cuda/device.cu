/*-------------------------------------------------------------------------
 *
 * device.cu
 *	  Device management: whether a usable GPU exists (asked once per
 *	  backend process), making gpuclust.gpu_id current, opening every GPU
 *	  for the GPU service, and page-locked host memory for the row store.  Freed page-locked blocks are kept for
 *	  reuse, up to gc_pinned_cache_bytes, since allocating and touching new
 *	  page-locked memory costs as much as collecting the rows into it: a
 *	  session that clusters repeatedly reuses its buffers.
 *
 * IDENTIFICATION
 *	  cuda/device.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

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

/*
 * Page-locked blocks kept for reuse, each headed by its size and, for a
 * mapping, the length mapped.  Blocks of a huge page or more are anonymous
 * mappings aligned to 2 MB, advised into transparent huge pages, faulted
 * in a huge page at a time and then registered with CUDA.  On the H100
 * machine, for the 6 GB that 1M rows of d = 768 take in 64 MB blocks,
 * cudaHostAlloc took 3.39 s (a 4 kB fault and pin a page: as long as
 * PostgreSQL took to read the rows), registering advised mappings 2.36 s
 * (the registration faults 4 kB pages itself), touching them first and
 * then registering 1.44 s.  Smaller blocks, and any whose mapping or
 * registration fails, come from cudaHostAlloc.
 */
#define PINNED_CACHE_SLOTS 64
#define PINNED_HEADER 64		/* keeps the payload 64-byte aligned */
#define HUGE_PAGE ((size_t) 2 << 20)

typedef struct PinnedHeader
{
	size_t		bytes;			/* the payload's */
	size_t		mapped;			/* the mapping's length, 0 for cudaHostAlloc */
} PinnedHeader;

size_t		gc_pinned_cache_bytes = 0;
static void *cached_blocks[PINNED_CACHE_SLOTS];
static size_t cached_total = 0;

static size_t
block_size(void *block)
{
	return ((PinnedHeader *) block)->bytes;
}

/* A mapping of length bytes (a multiple of HUGE_PAGE) at a 2 MB boundary, page-locked; NULL on failure */
static void *
map_huge_locked(size_t length)
{
	char	   *raw = (char *) mmap(NULL, length + HUGE_PAGE, PROT_READ | PROT_WRITE,
									MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char	   *aligned;

	if (raw == (char *) MAP_FAILED)
		return NULL;
	aligned = (char *) (((uintptr_t) raw + HUGE_PAGE - 1) & ~(uintptr_t) (HUGE_PAGE - 1));
	if (aligned > raw)
		(void) munmap(raw, aligned - raw);
	(void) munmap(aligned + length, raw + HUGE_PAGE - aligned);
	/* one write a huge page faults it in whole; cudaHostRegister alone would fault 4 kB pages */
	(void) madvise(aligned, length, MADV_HUGEPAGE);
	for (size_t offset = 0; offset < length; offset += HUGE_PAGE)
		((volatile char *) aligned)[offset] = 0;
	if (cudaHostRegister(aligned, length, cudaHostRegisterPortable) != cudaSuccess)
	{
		(void) cudaGetLastError();
		(void) munmap(aligned, length);
		return NULL;
	}
	return aligned;
}

static void
release_block(void *block)
{
	PinnedHeader *header = (PinnedHeader *) block;

	if (header->mapped > 0)
	{
		size_t		length = header->mapped;

		(void) cudaHostUnregister(block);
		(void) munmap(block, length);
	}
	else
		(void) cudaFreeHost(block);
	(void) cudaGetLastError();
}

extern "C" void *
gc_cuda_host_alloc(size_t bytes)
{
	void	   *block = NULL;
	size_t		mapped = 0;

	for (int i = 0; i < PINNED_CACHE_SLOTS; i++)
		if (cached_blocks[i] != NULL && block_size(cached_blocks[i]) == bytes)
		{
			block = cached_blocks[i];
			cached_blocks[i] = NULL;
			cached_total -= bytes;
			return (char *) block + PINNED_HEADER;
		}
	if (bytes + PINNED_HEADER >= HUGE_PAGE)
	{
		mapped = (bytes + PINNED_HEADER + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
		block = map_huge_locked(mapped);
		if (block == NULL)
			mapped = 0;
	}
	if (block == NULL &&
		cudaHostAlloc(&block, bytes + PINNED_HEADER, cudaHostAllocPortable) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return NULL;
	}
	((PinnedHeader *) block)->bytes = bytes;
	((PinnedHeader *) block)->mapped = mapped;
	return (char *) block + PINNED_HEADER;
}

extern "C" void
gc_cuda_host_free(void *ptr)
{
	void	   *block;

	if (ptr == NULL)
		return;
	block = (char *) ptr - PINNED_HEADER;
	if (cached_total + block_size(block) <= gc_pinned_cache_bytes)
		for (int i = 0; i < PINNED_CACHE_SLOTS; i++)
			if (cached_blocks[i] == NULL)
			{
				cached_blocks[i] = block;
				cached_total += block_size(block);
				return;
			}
	release_block(block);
}

extern "C" void
gc_cuda_trim_pinned_cache(size_t limit)
{
	for (int i = 0; i < PINNED_CACHE_SLOTS && cached_total > limit; i++)
		if (cached_blocks[i] != NULL)
		{
			cached_total -= block_size(cached_blocks[i]);
			release_block(cached_blocks[i]);
			cached_blocks[i] = NULL;
		}
}
