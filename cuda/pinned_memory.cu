/*-------------------------------------------------------------------------
 *
 * pinned_memory.cu
 *	  Page-locked host memory for the row store, so that copies to the GPU
 *	  can be asynchronous: blocks of a huge page or more mapped as
 *	  transparent huge pages and registered with CUDA, a cache of freed
 *	  blocks for a session's next fit, and pinning ahead, where a helper
 *	  thread maps and registers the next block while the backend fills
 *	  the current one.
 *
 * Page-locking costs about as much as collecting rows into the memory.
 * On the H100 machine, for the 6 GB that 1M rows of d = 768 take in 64 MB
 * blocks, cudaHostAlloc took 3.39 s (a 4 kB fault and pin a page: as long
 * as PostgreSQL took to read the rows), registering advised mappings 2.36 s
 * (the registration faults 4 kB pages itself), touching them first and
 * then registering 1.44 s (bench/results/hugepages-checks-h100.md).  That
 * 1.44 s is most of what collection cost beyond the bare scan of the
 * column, so the backend no longer waits for it: once the row store asks
 * for blocks of one size twice running (its chunks have stopped growing),
 * up to PIN_AHEAD_DEPTH helper threads each prepare another block of that
 * size, and the next request takes a ready one.  The helpers block every
 * signal (PostgreSQL's handlers run in the backend's thread), call nothing
 * of PostgreSQL's, and are joined before their blocks are used or
 * released; the blocks left when the fit frees its rows join the cache or
 * are released then.
 *
 * IDENTIFICATION
 *	  cuda/pinned_memory.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "gc_cuda.h"
#include "cuda_check.cuh"

/*
 * Every block is headed by its size and, for a mapping, the length
 * mapped.  Blocks of a huge page or more are anonymous mappings aligned to
 * 2 MB, advised into transparent huge pages, faulted in a huge page at a
 * time and then registered with CUDA.  Smaller blocks, and any whose
 * mapping or registration fails, come from cudaHostAlloc.
 */
#define PINNED_CACHE_SLOTS 64
#define PINNED_HEADER 64		/* keeps the payload 64-byte aligned */
#define HUGE_PAGE ((size_t) 2 << 20)

/* Pinning ahead: blocks from this size on, at most this many at once */
#define PIN_AHEAD_MIN_BYTES ((size_t) 16 << 20)
#define PIN_AHEAD_DEPTH 2

typedef struct PinnedHeader
{
	size_t		bytes;			/* the payload's */
	size_t		mapped;			/* the mapping's length, 0 for cudaHostAlloc */
} PinnedHeader;

/* A block a helper thread prepares */
typedef struct PinAhead
{
	pthread_t	thread;
	bool		running;		/* started and not yet joined */
	int			device;			/* the CUDA device current when it started */
	size_t		bytes;			/* the payload asked for */
	void	   *block;			/* the helper's result: NULL if it failed */
} PinAhead;

size_t		gc_pinned_cache_bytes = 0;
static void *cached_blocks[PINNED_CACHE_SLOTS];
static size_t cached_total = 0;
/* the cache, which staging buffers (host_upload.cu) take from any thread */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static PinAhead ahead[PIN_AHEAD_DEPTH];
static size_t last_large_bytes = 0; /* the last request of PIN_AHEAD_MIN_BYTES or more */

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

/* A new page-locked block with a payload of bytes, headed; NULL on failure */
static void *
new_block(size_t bytes)
{
	void	   *block = NULL;
	size_t		mapped = 0;

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
	return block;
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

/* Keep block in the cache if it has room, else release it */
static void
cache_or_release(void *block)
{
	bool		cached = false;

	pthread_mutex_lock(&cache_lock);
	if (cached_total + block_size(block) <= gc_pinned_cache_bytes)
		for (int i = 0; i < PINNED_CACHE_SLOTS && !cached; i++)
			if (cached_blocks[i] == NULL)
			{
				cached_blocks[i] = block;
				cached_total += block_size(block);
				cached = true;
			}
	pthread_mutex_unlock(&cache_lock);
	if (!cached)
		release_block(block);
}

/* A cached block of exactly bytes, taken out of the cache; NULL if none */
static void *
take_cached(size_t bytes)
{
	void	   *block = NULL;

	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < PINNED_CACHE_SLOTS && block == NULL; i++)
		if (cached_blocks[i] != NULL && block_size(cached_blocks[i]) == bytes)
		{
			block = cached_blocks[i];
			cached_blocks[i] = NULL;
			cached_total -= bytes;
		}
	pthread_mutex_unlock(&cache_lock);
	return block;
}

/* A helper thread's body: the CUDA device of its starter, then one block */
static void *
pin_ahead_main(void *arg)
{
	PinAhead   *slot = (PinAhead *) arg;

	if (cudaSetDevice(slot->device) == cudaSuccess)
		slot->block = new_block(slot->bytes);
	(void) cudaGetLastError();
	return NULL;
}

/* Wait for slot's helper; its block, NULL if it failed */
static void *
join_ahead(PinAhead *slot)
{
	(void) pthread_join(slot->thread, NULL);
	slot->running = false;
	return slot->block;
}

/* Start helpers, in every idle slot, each preparing a block of bytes */
static void
start_ahead(size_t bytes)
{
	int			device;

	if (cudaGetDevice(&device) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return;
	}
	for (int i = 0; i < PIN_AHEAD_DEPTH; i++)
	{
		PinAhead   *slot = &ahead[i];

		if (slot->running)
			continue;
		slot->device = device;
		slot->bytes = bytes;
		slot->block = NULL;
		slot->running = gc_thread_create(&slot->thread, pin_ahead_main, slot) == 0;
	}
}

/*
 * Join the helpers that prepared another size than bytes, caching or
 * releasing their blocks, and one that prepared bytes, whose block is
 * returned (NULL if none, or if it failed); the others preparing bytes go
 * on.  settle_ahead(0) joins every helper.
 */
static void *
settle_ahead(size_t bytes)
{
	void	   *taken = NULL;

	for (int i = 0; i < PIN_AHEAD_DEPTH; i++)
	{
		PinAhead   *slot = &ahead[i];
		void	   *block;

		if (!slot->running || slot->bytes == bytes)
			continue;
		if ((block = join_ahead(slot)) != NULL)
			cache_or_release(block);
	}
	for (int i = 0; i < PIN_AHEAD_DEPTH && taken == NULL; i++)
		if (ahead[i].running && ahead[i].bytes == bytes)
			taken = join_ahead(&ahead[i]);
	return taken;
}

extern "C" void *
gc_cuda_host_alloc(size_t bytes)
{
	void	   *block;

	if (bytes < PIN_AHEAD_MIN_BYTES)
		block = take_cached(bytes);
	else
	{
		block = settle_ahead(bytes);
		if (block == NULL)
			block = take_cached(bytes);
		if (bytes == last_large_bytes)
			start_ahead(bytes);
		last_large_bytes = bytes;
	}
	if (block == NULL)
		block = new_block(bytes);
	return block ? (char *) block + PINNED_HEADER : NULL;
}

extern "C" void
gc_cuda_host_free(void *ptr)
{
	void	   *block;

	if (ptr == NULL)
		return;
	block = (char *) ptr - PINNED_HEADER;
	/* a large block freed: the rows are being let go, and no more come */
	if (block_size(block) >= PIN_AHEAD_MIN_BYTES)
	{
		(void) settle_ahead(0);
		last_large_bytes = 0;
	}
	cache_or_release(block);
}

extern "C" void
gc_cuda_trim_pinned_cache(size_t limit)
{
	(void) settle_ahead(0);
	for (int i = 0; i < PINNED_CACHE_SLOTS; i++)
	{
		void	   *block = NULL;

		pthread_mutex_lock(&cache_lock);
		if (cached_blocks[i] != NULL && cached_total > limit)
		{
			block = cached_blocks[i];
			cached_total -= block_size(block);
			cached_blocks[i] = NULL;
		}
		pthread_mutex_unlock(&cache_lock);
		if (block != NULL)
			release_block(block);
	}
}
