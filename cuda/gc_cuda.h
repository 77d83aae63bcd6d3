/*-------------------------------------------------------------------------
 *
 * gc_cuda.h
 *	  The C boundary of the CUDA backend: device selection, page-locked
 *	  host allocation for the row store, and the k-means backend table.
 *	  Every failure comes back as a GcStatus with a message; nothing here
 *	  aborts or throws.
 *
 * IDENTIFICATION
 *	  cuda/gc_cuda.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CUDA_H
#define GC_CUDA_H

#include "gc_engine.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Makes device gpu_id current; false, with the reason in why, if unusable */
extern bool gc_cuda_use_device(int gpu_id, char *why, size_t whylen);

/* How many CUDA devices are present (0 where none is usable); device 0 made current */
extern int	gc_cuda_device_count(void);

/*
 * The GPU service's start: create the context of every visible device (at
 * most max), recording each one's memory in total_bytes; returns how many
 * are usable, with the reason in why when none is
 */
extern int	gc_cuda_open_devices(size_t *total_bytes, int max, char *why,
								 size_t whylen);

/* Name and memory of the current device; false if they cannot be read */
extern bool gc_cuda_describe_device(char *name, size_t namelen,
									size_t *free_bytes, size_t *total_bytes);

/*
 * Page-locked host memory (pinned_memory.cu), so copies can be
 * asynchronous; freed blocks are kept for reuse while they total at most
 * gc_pinned_cache_bytes (gpuclust.pinned_cache_mb), and blocks a growing
 * row store will ask for are prepared ahead by helper threads
 */
extern void *gc_cuda_host_alloc(size_t bytes);
extern void gc_cuda_host_free(void *ptr);
extern size_t gc_pinned_cache_bytes;
extern void gc_cuda_trim_pinned_cache(size_t limit);

extern const GcKmeansBackend gc_kmeans_cuda_backend;
/*
 * One fit over several GPU sessions as shards (engine/kmeans_shards.c):
 * lane i's on params->devices[i] (NULL: all on the current device), past
 * params->lane_rows streamed
 */
extern const GcKmeansBackend gc_kmeans_cuda_sharded_backend;
extern const struct GcPmBackend gc_pmedian_cuda_backend;

#ifdef __cplusplus
}
#endif

#endif							/* GC_CUDA_H */
