/*-------------------------------------------------------------------------
 *
 * partial_state.c
 *	  The serialized partial states of the clustering aggregates under a
 *	  parallel plan: how a process's rows (a row store) reach the leader's
 *	  Finalize Aggregate, and the registry that keeps the shared memory
 *	  holding them from outliving the query.
 *
 * Two paths, chosen per partial state by the serializing process:
 *
 * - Shared memory (gpuclust in shared_preload_libraries, or PostgreSQL 17
 *   and later, where the registry below lives in a named DSM segment
 *   instead of the main shared memory): a process writes its chunks of
 *   rows from 4 MB on straight into chunk segments as it collects them
 *   (GcChunkPlacement); when the state is serialized, its first, smaller
 *   chunks are laid out contiguously in one dynamic shared memory segment
 *   (header, bounding box, values, hashes, weights, per-row columns), and
 *   the serialized state is a few dozen bytes naming that segment and the
 *   chunk segments.  Every segment is pinned so that it outlives the
 *   worker.  The leader maps them and its row store borrows the rows in
 *   place: nothing is copied again and nothing passes through the Gather
 *   tuple queue.
 * - Inline (15 and 16 without the preload, tiny states, no segment to be
 *   had, or /dev/shm too full to hold one): the rows are copied into the serialized bytea
 *   itself (at most 1 GB) and the leader copies them into its row store.
 *
 * Lifetime of a segment.  The process making it records (handle, leader
 * pid) in the registry, a small array in the extension's shared memory,
 * then pins the segment and marks the entry pinned (a chunk segment when
 * it is made, before a row is written into it; the state's own segment
 * when it is serialized).  Chunk segments of a state that is reset
 * without being serialized are unpinned then.  The leader's
 * deserialize function checks that the handle is registered to it (a
 * forged bytea cannot map another session's memory), maps the segment,
 * unpins it and clears the entry: from then on the segment lives exactly
 * as long as the leader's mapping, which belongs to the current resource
 * owner (released at the end of the query, or on error or cancel) and is
 * detached earlier, when the combined state's memory context is reset.
 * A segment whose tuple the leader never reads (an error, a cancel, a
 * LIMIT above the aggregate) stays registered, and the leader's
 * transaction callback unpins every pinned entry it still owns at
 * XACT_EVENT_COMMIT, XACT_EVENT_PREPARE and XACT_EVENT_ABORT.  Ordering:
 * CommitTransaction calls AtEOXact_Parallel (which waits for any
 * remaining workers to exit) before the COMMIT callbacks, and
 * AbortTransaction cleans up parallel workers before calling the ABORT
 * callbacks; workers are normally gone even earlier, when the executor
 * shuts down the Gather node.  So no worker can register a segment after
 * its leader's callback ran.  A backend crash resets shared memory and
 * the registry with it.  Without the preload a leader that never ran
 * gpuclust's code in the query (no leader participation and an error
 * before the Finalize Aggregate read anything) may have no registry
 * attached, and its callback cannot see the entries; so before making a
 * segment every process also sweeps the entries whose leader has ended
 * the transaction recorded with them (its local transaction id changed,
 * or it exited).
 *
 * Costs: a worker copies only its first 4 MB or so of rows once more
 * (into the state's segment, freeing its own chunks as it goes); the
 * leader copies nothing, but the rows it borrows are pageable memory, so
 * a GPU upload of them goes through page-locked staging buffers that
 * threads fill in parallel (cuda/host_upload.cu; registering 6 GB of
 * mappings with cudaHostRegister would cost more than that copy).  A
 * state hands over at most GC_PARTIAL_MAX_PIECES chunk segments (256 MB
 * each at most: 16 GB); past that, or when a chunk segment cannot be had,
 * the process allocates its later chunks itself and copies every row into
 * the state's segment, as it did before chunk segments.
 *
 * IDENTIFICATION
 *	  src/partial_state.c
 *
 *-------------------------------------------------------------------------
 */
#include "partial_state.h"

#include <sys/mman.h>
#include <sys/statvfs.h>

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#if GC_HAVE_DSM_REGISTRY
#include "storage/dsm_registry.h"
#endif

PG_FUNCTION_INFO_V1(gpuclust_partial_deserialfn);

/* Segments held for leaders at once, server-wide */
#define GC_PARTIAL_SLOTS		1024

/*
 * Below this many bytes of rows, copying them through the tuple queue is
 * cheaper than a segment (and spares segments when a GROUP BY makes many
 * small groups).
 */
#define GC_PARTIAL_MIN_SEGMENT_BYTES ((Size) 64 * 1024)

/*
 * A partial aggregate's chunks from this size on are written straight into
 * chunk segments (place_in_segment), which grow to the second size: the
 * rows then reach the leader without the copy into a segment, and, where
 * min_dynamic_shared_memory reserves a region for segments, without the
 * kernel zeroing fresh pages for them first (on a 2-core machine the
 * zeroing of a worker's malloc'd huge pages was 29% of a 200,000 x 768
 * query's samples, more than the copy and the conversion together)
 */
#define GC_PLACE_MIN_BYTES		((Size) 4 << 20)
#define GC_PLACE_MAX_BYTES		((Size) 256 << 20)

/*
 * Chunk segments are made only while the registry holds fewer entries
 * than the server has backends: PostgreSQL's table of DSM segments has a
 * fixed number of slots plus a few a backend for every segment of every
 * session (dsm.c), and a parallel hash join, say, fails where none is
 * free, so gpuclust's rows keep to a share of it (a 1M x 768 query with 8
 * workers makes about 70 chunk segments)
 */
#define GC_PLACE_MAX_ENTRIES	MaxBackends

/*
 * Freeing the pages of the segments a query borrowed (release_pages_ahead):
 * threads at most, and the least bytes for which it pays
 */
#define GC_PAGE_RELEASE_THREADS 8
#define GC_PAGE_RELEASE_MIN_BYTES ((Size) 256 << 20)

/* rows are labelled with int32 */
#define GC_MAX_ROWS ((int64) PG_INT32_MAX)

/* The fixed part of the meta section (partial_state.h) */
typedef struct GcPartialMetaBytes
{
	int32		k;
	int32		options_bytes;	/* the options jsonb follows; 0 when none */
	Oid			format;
	int32		extra_bytes;	/* the aggregate's own bytes follow the options */
	int64		null_rows;
	int64		seen_rows;
	double		started_ms;
} GcPartialMetaBytes;

typedef struct GcPartialSlot
{
	dsm_handle	handle;
	int			leader_pid;		/* 0: free */
	LocalTransactionId leader_lxid; /* the leader's transaction */
	bool		pinned;
} GcPartialSlot;

typedef struct GcPartialRegistry
{
	slock_t		mutex;
	pg_atomic_uint32 used;
	GcPartialSlot slots[GC_PARTIAL_SLOTS];
} GcPartialRegistry;

/*
 * The chunk segments a process's partial state placed its rows in, pinned
 * and registered to the leader from the start; handed over when the state
 * is serialized, released with the state's memory otherwise
 */
typedef struct PlacedChunks
{
	int			count;
	dsm_segment *segments[GC_PARTIAL_MAX_PIECES];
	dsm_handle	handles[GC_PARTIAL_MAX_PIECES];
	int			slots[GC_PARTIAL_MAX_PIECES];
} PlacedChunks;

static GcPartialRegistry *registry = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void place_rows_in_segments(GcInput *input, MemoryContext context);

static void
partial_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(GcPartialRegistry)));
}

static void
registry_init(void *ptr)
{
	GcPartialRegistry *fresh = (GcPartialRegistry *) ptr;

	memset(fresh, 0, sizeof(GcPartialRegistry));
	SpinLockInit(&fresh->mutex);
	pg_atomic_init_u32(&fresh->used, 0);
}

static void
partial_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	registry = ShmemInitStruct("gpuclust partial states",
							   sizeof(GcPartialRegistry), &found);
	if (!found)
		registry_init(registry);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * The registry: in the main shared memory when gpuclust is preloaded,
 * else (PostgreSQL 17 and later) in a named DSM segment that the first
 * process to need it creates; NULL on 15 and 16 without the preload
 */
static GcPartialRegistry *
get_registry(void)
{
#if GC_HAVE_DSM_REGISTRY
	if (registry == NULL && IsUnderPostmaster)
	{
		bool		found;

		registry = GetNamedDSMSegment("gpuclust partial states",
									  sizeof(GcPartialRegistry),
									  registry_init, &found);
	}
#endif
	return registry;
}

/*
 * Unpin every segment still registered to this backend as leader: rows a
 * worker handed over that no Finalize Aggregate read
 */
static void
partial_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	if (registry == NULL)
		return;
	pg_memory_barrier();
	while (pg_atomic_read_u32(&registry->used) > 0)
	{
		GcPartialSlot found = {0};

		SpinLockAcquire(&registry->mutex);
		for (int i = 0; i < GC_PARTIAL_SLOTS; i++)
		{
			if (registry->slots[i].leader_pid == MyProcPid)
			{
				found = registry->slots[i];
				memset(&registry->slots[i], 0, sizeof(GcPartialSlot));
				pg_atomic_fetch_sub_u32(&registry->used, 1);
				break;
			}
		}
		SpinLockRelease(&registry->mutex);
		if (found.leader_pid == 0)
			break;
		/* cleared first: a failure here cannot make a second unpin */
		if (found.pinned)
			dsm_unpin_segment(found.handle);
	}
}

/*
 * Called from _PG_init (in the postmaster when preloaded: the backends
 * inherit the hooks, the registry and the callback)
 */
void
gc_partial_init(void)
{
	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = partial_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = partial_shmem_startup;
	}
	RegisterXactCallback(partial_xact_callback, NULL);
}

/*
 * True when an aggregate's states will be serialized (a partial aggregate
 * under a parallel plan, or partitionwise): its rows then stay in plain
 * memory, the leader's fit choosing the device
 */
bool
gc_partial_collecting(FunctionCallInfo fcinfo, GcInput *input)
{
	MemoryContext aggcontext;

	if (!(fcinfo->context && IsA(fcinfo->context, AggState) &&
		  DO_AGGSPLIT_SERIALIZE(((AggState *) fcinfo->context)->aggsplit)))
		return false;
	gc_use_cpu_device(&input->device);
	input->device_fixed = true;
	if (MyProc != NULL && get_registry() != NULL &&
		AggCheckCallContext(fcinfo, &aggcontext))
		place_rows_in_segments(input, aggcontext);
	return true;
}

bool
gc_partial_registry_available(void)
{
	return get_registry() != NULL;
}

/* The parallel leader in a worker, this backend otherwise */
static PGPROC *
leader_proc(void)
{
	return MyProc && MyProc->lockGroupLeader ? MyProc->lockGroupLeader : MyProc;
}

/*
 * Clear the entries whose leader's transaction has ended (the leader
 * exited, or moved on without running its callback: without the preload
 * a leader that never ran gpuclust's code has no registry attached),
 * unpinning their segments
 */
static void
sweep_stale_entries(void)
{
	GcPartialSlot seen[GC_PARTIAL_SLOTS];
	int			nseen = 0;

	if (pg_atomic_read_u32(&registry->used) == 0)
		return;
	SpinLockAcquire(&registry->mutex);
	for (int i = 0; i < GC_PARTIAL_SLOTS; i++)
		if (registry->slots[i].leader_pid != 0)
			seen[nseen++] = registry->slots[i];
	SpinLockRelease(&registry->mutex);

	for (int e = 0; e < nseen; e++)
	{
		PGPROC	   *leader = BackendPidGetProc(seen[e].leader_pid);
		bool		cleared = false;

		if (leader != NULL && GC_PROC_LXID(leader) == seen[e].leader_lxid)
			continue;
		SpinLockAcquire(&registry->mutex);
		for (int i = 0; i < GC_PARTIAL_SLOTS && !cleared; i++)
		{
			GcPartialSlot *slot = &registry->slots[i];

			if (slot->leader_pid == seen[e].leader_pid && slot->handle == seen[e].handle &&
				slot->leader_lxid == seen[e].leader_lxid && slot->pinned == seen[e].pinned)
			{
				memset(slot, 0, sizeof(GcPartialSlot));
				pg_atomic_fetch_sub_u32(&registry->used, 1);
				cleared = true;
			}
		}
		SpinLockRelease(&registry->mutex);
		/* unpinned: its maker failed before pinning, and it died with it */
		if (cleared && seen[e].pinned)
			dsm_unpin_segment(seen[e].handle);
	}
}

static int
registry_insert(dsm_handle handle)
{
	PGPROC	   *leader = leader_proc();
	int			slot = -1;

	SpinLockAcquire(&registry->mutex);
	for (int i = 0; i < GC_PARTIAL_SLOTS; i++)
	{
		if (registry->slots[i].leader_pid == 0)
		{
			registry->slots[i].handle = handle;
			registry->slots[i].leader_pid = leader->pid;
			registry->slots[i].leader_lxid = GC_PROC_LXID(leader);
			registry->slots[i].pinned = false;
			pg_atomic_fetch_add_u32(&registry->used, 1);
			slot = i;
			break;
		}
	}
	SpinLockRelease(&registry->mutex);
	return slot;
}

static void
registry_mark_pinned(int slot)
{
	SpinLockAcquire(&registry->mutex);
	registry->slots[slot].pinned = true;
	SpinLockRelease(&registry->mutex);
}

static void
registry_remove(int slot)
{
	SpinLockAcquire(&registry->mutex);
	memset(&registry->slots[slot], 0, sizeof(GcPartialSlot));
	pg_atomic_fetch_sub_u32(&registry->used, 1);
	SpinLockRelease(&registry->mutex);
}

/* Clear slot if it still names handle; whether it did */
static bool
registry_take(int slot, dsm_handle handle)
{
	bool		taken = false;

	SpinLockAcquire(&registry->mutex);
	if (registry->slots[slot].leader_pid != 0 && registry->slots[slot].handle == handle)
	{
		memset(&registry->slots[slot], 0, sizeof(GcPartialSlot));
		pg_atomic_fetch_sub_u32(&registry->used, 1);
		taken = true;
	}
	SpinLockRelease(&registry->mutex);
	return taken;
}

/* The slot of a pinned segment registered to this backend, or -1 */
static int
registry_find_mine(dsm_handle handle)
{
	int			slot = -1;

	SpinLockAcquire(&registry->mutex);
	for (int i = 0; i < GC_PARTIAL_SLOTS; i++)
	{
		if (registry->slots[i].leader_pid == MyProcPid &&
			registry->slots[i].handle == handle && registry->slots[i].pinned)
		{
			slot = i;
			break;
		}
	}
	SpinLockRelease(&registry->mutex);
	return slot;
}

/*
 * Map all of a new segment's pages at once (Linux 5.14 and later): one
 * call instead of a page fault per 4 kB page as the rows are written.
 * Only a hint: older kernels refuse it and the pages fault in as usual.
 */
static void
prefault_for_writing(dsm_segment *segment)
{
#ifdef MADV_POPULATE_WRITE
	char	   *start = dsm_segment_address(segment);
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	aligned = (uintptr_t) start & ~(page - 1);

	(void) madvise((void *) aligned,
				   dsm_segment_map_length(segment) + ((uintptr_t) start - aligned),
				   MADV_POPULATE_WRITE);
#endif
}

static uint64
header_checksum(const GcPartialHeader *header)
{
	return hash_bytes_extended((const unsigned char *) header,
							   offsetof(GcPartialHeader, checksum),
							   GC_PARTIAL_MAGIC);
}

/* Bytes of the rows section before its columns: box, values, hashes, weights */
static uint64
rows_bytes(int d, int64 n, bool narrow, bool weighted)
{
	return sizeof(double) * 2 * (uint64) d + (uint64) n * gc_row_bytes(d, narrow, weighted);
}

/*
 * What a partial state hands over: the rows (the first head_chunks chunks
 * copied into the rows section, the others, placed in chunk segments,
 * handed over as pieces) and the per-row columns
 */
typedef struct PartialSource
{
	GcRows	   *rows;
	int			head_chunks;
	int64		head_n;			/* rows in those chunks */
	PlacedChunks *placed;		/* the chunk segments; NULL: none */
	int			pieces;			/* 0, or all of placed's, the last chunks */
	const void *const *columns; /* ncolumns arrays of rows->n 8-byte values */
	int			ncolumns;
} PartialSource;

/*
 * Split the rows into the chunks to copy and the chunk segments to hand
 * over: the placed chunks, when they are the store's last ones (placement
 * ends for good when it fails, so they are unless it failed and chunks of
 * the store's own followed, and then every row is copied)
 */
static void
split_rows(PartialSource *src)
{
	GcRows	   *rows = src->rows;
	PlacedChunks *placed = src->placed;
	int			first = rows->nchunks - (placed ? placed->count : 0);
	bool		last = placed != NULL && placed->count > 0 && first >= 0;

	for (int i = 0; last && i < placed->count; i++)
		last = (const char *) gc_chunk_values(&rows->chunks[first + i]) ==
			(const char *) dsm_segment_address(placed->segments[i]) + GC_PARTIAL_CHUNK_HEADER;
	src->head_chunks = last ? first : rows->nchunks;
	src->head_n = last ? rows->chunks[first].first_row : rows->n;
	src->pieces = last ? placed->count : 0;
}

/*
 * Write the rows section at dest, releasing each chunk of rows once it is
 * copied, so that the copy never doubles the memory held
 */
static void
write_rows(const PartialSource *src, char *dest)
{
	GcRows	   *rows = src->rows;
	int			d = rows->d;
	Size		value_bytes = gc_value_bytes(rows->narrow);
	char	   *values = dest + sizeof(double) * 2 * d;
	char	   *hashes = values + value_bytes * (Size) d * src->head_n;
	char	   *weights = hashes + sizeof(uint64) * (Size) src->head_n;
	char	   *columns = dest + rows_bytes(d, src->head_n, rows->narrow, rows->weighted);

	memcpy(dest, rows->lo, sizeof(double) * d);
	memcpy(dest + sizeof(double) * d, rows->hi, sizeof(double) * d);
	for (int c = 0; c < src->head_chunks; c++)
	{
		GcChunk    *chunk = &rows->chunks[c];
		Size		count = (Size) chunk->count;

		memcpy(values, gc_chunk_values(chunk), value_bytes * d * count);
		memcpy(hashes, chunk->hashes, sizeof(uint64) * count);
		values += value_bytes * d * count;
		hashes += sizeof(uint64) * count;
		if (rows->weighted)
		{
			memcpy(weights, chunk->weights, sizeof(double) * count);
			weights += sizeof(double) * count;
		}
		if (!chunk->borrowed)
		{
			rows->free(gc_chunk_values(chunk));
			rows->free(chunk->hashes);
			if (chunk->weights)
				rows->free(chunk->weights);
			chunk->borrowed = true; /* gone: gc_rows_release skips it */
		}
		CHECK_FOR_INTERRUPTS();
	}
	for (int c = 0; c < src->ncolumns; c++)
		memcpy(columns + sizeof(uint64) * (Size) rows->n * c, src->columns[c],
			   sizeof(uint64) * (Size) rows->n);
}

/*
 * Whether /dev/shm can hold a segment of bytes.  POSIX segments live there,
 * and containers often make it small (64 MB): creating a segment it cannot
 * hold fails with an obscure error, so a share that would not fit takes
 * the inline path instead.
 */
bool
gc_dsm_segment_fits(Size bytes)
{
	struct statvfs fs;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX ||
		statvfs("/dev/shm", &fs) != 0)
		return true;
	return (uint64) fs.f_bavail * fs.f_frsize >= (uint64) bytes + ((uint64) 16 << 20);
}

/*
 * A new segment of bytes, registered (not yet pinned) to the leader in
 * *slot; NULL when no segment or registry slot is free, or /dev/shm
 * cannot hold it
 */
static dsm_segment *
create_registered(Size bytes, int *slot)
{
	dsm_segment *segment;

	if (!gc_dsm_segment_fits(bytes))
		return NULL;
	sweep_stale_entries();
	segment = dsm_create(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (segment == NULL)
		return NULL;
	*slot = registry_insert(dsm_segment_handle(segment));
	if (*slot < 0)
	{
		dsm_detach(segment);
		return NULL;
	}
	return segment;
}

/* Point chunk's arrays into a chunk segment at base, whose header says their shape */
static void
chunk_arrays(const char *base, const GcPartialChunkHeader *head, GcChunk *chunk)
{
	const char *values = base + GC_PARTIAL_CHUNK_HEADER;
	const char *hashes = values + gc_value_bytes(head->narrow) *
		head->d * (Size) head->capacity;
	bool		weighted = head->weighted != 0;
	int64		capacity = head->capacity;

	gc_chunk_set_values(chunk, (void *) values, head->narrow != 0);
	chunk->hashes = (uint64_t *) hashes;
	chunk->weights = weighted ? (double *) (hashes + sizeof(uint64) * (Size) capacity) : NULL;
}

/*
 * GcPlaceChunk of a partial aggregate's rows: a new chunk segment, pinned
 * and registered to the leader at once, so that whatever happens to this
 * process the leader's transaction end frees it; false when no segment or
 * registry slot is free, or /dev/shm cannot hold it
 */
static bool
place_in_segment(void *arg, GcChunk *chunk, const GcRows *rows)
{
	PlacedChunks *placed = (PlacedChunks *) arg;
	Size		bytes = GC_PARTIAL_CHUNK_HEADER +
		(Size) chunk->capacity * gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	GcPartialChunkHeader head = {0};
	dsm_segment *segment;
	int			slot;

	if (placed->count == GC_PARTIAL_MAX_PIECES ||
		pg_atomic_read_u32(&registry->used) >= (uint32) GC_PLACE_MAX_ENTRIES ||
		(segment = create_registered(bytes, &slot)) == NULL)
		return false;
	dsm_pin_segment(segment);
	registry_mark_pinned(slot);
	placed->segments[placed->count] = segment;
	placed->handles[placed->count] = dsm_segment_handle(segment);
	placed->slots[placed->count] = slot;
	placed->count++;

	head.magic = GC_PARTIAL_CHUNK_MAGIC;
	head.d = rows->d;
	head.capacity = chunk->capacity;
	head.weighted = rows->weighted;
	head.narrow = rows->narrow;
	memcpy(dsm_segment_address(segment), &head, sizeof(head));
	prefault_for_writing(segment);
	chunk_arrays(dsm_segment_address(segment), &head, chunk);
	return true;
}

/*
 * Unpin and unmap the chunk segments still placed (not handed to the
 * leader): the state is reset or its rows were copied instead.  An entry
 * the leader's transaction end has already cleared is its to unpin.
 */
static void
release_placed(void *arg)
{
	PlacedChunks *placed = (PlacedChunks *) arg;

	for (int i = 0; i < placed->count; i++)
	{
		if (registry != NULL && registry_take(placed->slots[i], placed->handles[i]))
			dsm_unpin_segment(placed->handles[i]);
		if (dsm_find_mapping(placed->handles[i]) == placed->segments[i])
			dsm_detach(placed->segments[i]);
	}
	placed->count = 0;
}

/*
 * Give input's store a placement of its large chunks in chunk segments,
 * released with context unless a serialized state hands them over
 */
static void
place_rows_in_segments(GcInput *input, MemoryContext context)
{
	PlacedChunks *placed = MemoryContextAllocZero(context, sizeof(PlacedChunks));
	MemoryContextCallback *cb = MemoryContextAlloc(context, sizeof(*cb));

	cb->func = release_placed;
	cb->arg = placed;
	MemoryContextRegisterResetCallback(context, cb);
	input->placement.place = place_in_segment;
	input->placement.arg = placed;
	input->placement.min_bytes = GC_PLACE_MIN_BYTES;
	input->placement.max_bytes = GC_PLACE_MAX_BYTES;
}

/*
 * Put the rows in a new pinned, registered segment; false when no segment
 * or registry slot is free, or /dev/shm cannot hold it
 */
static bool
serialize_to_segment(const PartialSource *src, GcPartialHeader *header)
{
	dsm_segment *segment;
	int			slot;
	char	   *base;

	segment = create_registered(sizeof(GcPartialHeader) + header->data_bytes, &slot);
	if (segment == NULL)
		return false;
	header->flags |= GC_PARTIAL_IN_SEGMENT;
	header->handle = dsm_segment_handle(segment);
	header->checksum = header_checksum(header);
	base = dsm_segment_address(segment);
	prefault_for_writing(segment);
	PG_TRY();
	{
		write_rows(src, base + sizeof(GcPartialHeader));
	}
	PG_CATCH();
	{
		/* not pinned yet: the segment goes with this process's mapping */
		registry_remove(slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	memcpy(base, header, sizeof(GcPartialHeader));
	dsm_pin_segment(segment);
	registry_mark_pinned(slot);
	/* the leader may be this very process: it must map the segment anew */
	dsm_detach(segment);
	return true;
}

/*
 * Describe the chunk segments src hands over at dest (unaligned), writing
 * each one's row count into its header
 */
static void
write_pieces(const PartialSource *src, char *dest)
{
	for (int i = 0; i < src->pieces; i++)
	{
		const GcChunk *chunk = &src->rows->chunks[src->head_chunks + i];
		GcPartialChunkHeader *head = dsm_segment_address(src->placed->segments[i]);
		GcPartialPiece piece = {0};

		head->count = chunk->count;
		piece.handle = src->placed->handles[i];
		piece.count = chunk->count;
		memcpy(dest + sizeof(piece) * i, &piece, sizeof(piece));
	}
}

/* The meta section of a partial state, in the current memory context */
static char *
meta_section(const GcInput *input, const GcPartialMeta *meta, Size *bytes)
{
	GcPartialMetaBytes fixed = {0};
	int32		options_bytes = meta->options ? VARSIZE(meta->options) : 0;
	char	   *section;

	fixed.k = meta->k;
	fixed.options_bytes = options_bytes;
	fixed.format = input->format;
	fixed.null_rows = input->null_rows;
	fixed.seen_rows = input->seen_rows;
	fixed.started_ms = meta->started_ms;
	fixed.extra_bytes = meta->extra_bytes;
	*bytes = sizeof(fixed) + options_bytes + meta->extra_bytes;
	section = palloc(*bytes);
	memcpy(section, &fixed, sizeof(fixed));
	if (options_bytes > 0)
		memcpy(section + sizeof(fixed), meta->options, options_bytes);
	if (meta->extra_bytes > 0)
		memcpy(section + sizeof(fixed) + options_bytes, meta->extra, meta->extra_bytes);
	return section;
}

/*
 * Serialize a partial state: the aggregate's arguments, the input's counts
 * and rows (released as they are copied), and ncolumns per-row columns of
 * input->rows.n 8-byte values each (ids, demands), which the caller frees
 */
bytea *
gc_partial_serialize(GcInput *input, const GcPartialMeta *meta,
					 const void *const *columns, int ncolumns)
{
	PartialSource src = {0};
	GcPartialHeader header;
	Size		meta_bytes;
	char	   *meta_bytes_p = meta_section(input, meta, &meta_bytes);
	Size		pieces_bytes;
	Size		total;
	bytea	   *result;
	char	   *p;

	Assert(ncolumns >= 0 && ncolumns <= GC_PARTIAL_MAX_COLUMNS);
	src.rows = input->started ? &input->rows : NULL;
	src.placed = (PlacedChunks *) input->placement.arg;
	src.columns = columns;
	src.ncolumns = ncolumns;
	memset(&header, 0, sizeof(header));
	header.magic = GC_PARTIAL_MAGIC;
	header.version = GC_PARTIAL_VERSION;
	header.meta_bytes = meta_bytes;
	if (src.rows != NULL && src.rows->n > 0)
	{
		GcRows	   *rows = src.rows;

		split_rows(&src);
		header.d = rows->d;
		header.n = rows->n;
		header.head_n = src.head_n;
		header.pieces = src.pieces;
		header.total_weight = rows->total_weight;
		header.flags = (rows->weighted ? GC_PARTIAL_WEIGHTED : 0) |
			(rows->bad_weight ? GC_PARTIAL_BAD_WEIGHT : 0) |
			(rows->float_exact ? GC_PARTIAL_FLOAT_EXACT : 0) |
			(rows->narrow ? GC_PARTIAL_NARROW : 0);
		header.columns = ncolumns;
		header.data_bytes = rows_bytes(rows->d, src.head_n, rows->narrow, rows->weighted) +
			sizeof(uint64) * (uint64) rows->n * ncolumns;
	}
	pieces_bytes = sizeof(GcPartialPiece) * header.pieces;

	if (!(header.n > 0 && MyProc != NULL && get_registry() != NULL &&
		  header.data_bytes >= GC_PARTIAL_MIN_SEGMENT_BYTES &&
		  serialize_to_segment(&src, &header)))
		header.checksum = header_checksum(&header);

	total = VARHDRSZ + sizeof(header) + meta_bytes + pieces_bytes;
	if ((header.flags & GC_PARTIAL_IN_SEGMENT) == 0)
	{
		if (header.data_bytes > MaxAllocSize - total)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a parallel worker's share of the rows is too large to pass to the leader"),
					 errdetail("The share holds " INT64_FORMAT " rows of %d dimensions; rows copied through the tuple queue are limited to 1 GB.",
							   header.n, header.d),
					 registry == NULL ?
					 errhint("Add gpuclust to shared_preload_libraries so that workers hand their rows over in shared memory, or SET max_parallel_workers_per_gather = 0.") :
					 errhint("No dynamic shared memory segment was free, or /dev/shm is too small to hold the share: enlarge /dev/shm, or SET max_parallel_workers_per_gather = 0 to collect the rows in one process.")));
		total += header.data_bytes;
	}
	result = palloc(total);
	SET_VARSIZE(result, total);
	p = VARDATA(result);
	memcpy(p, &header, sizeof(header));
	p += sizeof(header);
	memcpy(p, meta_bytes_p, meta_bytes);
	p += meta_bytes;
	write_pieces(&src, p);
	p += pieces_bytes;
	if ((header.flags & GC_PARTIAL_IN_SEGMENT) == 0 && header.n > 0)
		write_rows(&src, p);
	pfree(meta_bytes_p);
	/* the pieces are the leader's now; chunk segments copied are let go */
	if (src.pieces > 0)
	{
		for (int i = 0; i < src.pieces; i++)
			dsm_detach(src.placed->segments[i]);
		src.placed->count = 0;
	}
	else if (src.placed != NULL)
		release_placed(src.placed);
	return result;
}

static void
corrupt_state(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid gpuclust partial aggregate state"),
			 errdetail("%s", detail)));
}

/* Whether a header's sizes agree with each other and with len bytes */
static bool
header_sizes_agree(const GcPartialHeader *header, Size len)
{
	bool		in_segment = (header->flags & GC_PARTIAL_IN_SEGMENT) != 0;
	bool		weighted = (header->flags & GC_PARTIAL_WEIGHTED) != 0;
	bool		narrow = (header->flags & GC_PARTIAL_NARROW) != 0;

	if (header->n < 0 || header->d < 0 || header->d > GC_MAX_DIM ||
		(header->n > 0) != (header->d > 0) ||
		header->head_n < 0 || header->head_n > header->n ||
		header->pieces < 0 || header->pieces > GC_PARTIAL_MAX_PIECES ||
		(header->pieces == 0 && header->head_n != header->n) ||
		header->columns < 0 || header->columns > GC_PARTIAL_MAX_COLUMNS ||
		(header->n == 0 && header->columns != 0) ||
		header->meta_bytes > len - sizeof(*header) ||
		(in_segment && header->n == 0))
		return false;
	if (header->n > 0 &&
		(header->n > (int64) (MaxAllocHugeSize / sizeof(double) / (header->d + header->columns)) ||
		 header->data_bytes != rows_bytes(header->d, header->head_n, narrow, weighted) +
		 sizeof(uint64) * (uint64) header->n * header->columns))
		return false;
	return len == sizeof(*header) + header->meta_bytes +
		sizeof(GcPartialPiece) * header->pieces + (in_segment ? 0 : header->data_bytes);
}

/* Read the meta section (meta_bytes at p) into out */
static void
read_meta(const char *p, Size meta_bytes, GcPartialRows *out)
{
	GcPartialMetaBytes fixed;

	if (meta_bytes < sizeof(fixed))
		corrupt_state("Its meta section is too short.");
	memcpy(&fixed, p, sizeof(fixed));
	if (fixed.options_bytes < 0 || fixed.extra_bytes < 0 ||
		meta_bytes != sizeof(fixed) + (Size) fixed.options_bytes + (Size) fixed.extra_bytes ||
		(fixed.options_bytes > 0 && fixed.options_bytes < VARHDRSZ))
		corrupt_state("Its meta section is malformed.");
	out->meta.k = fixed.k;
	out->meta.started_ms = fixed.started_ms;
	out->format = fixed.format;
	out->null_rows = fixed.null_rows;
	out->seen_rows = fixed.seen_rows;
	if (fixed.options_bytes > 0)
	{
		out->meta.options = palloc(fixed.options_bytes);
		memcpy(out->meta.options, p + sizeof(fixed), fixed.options_bytes);
		if (VARSIZE(out->meta.options) != (Size) fixed.options_bytes)
			corrupt_state("Its options are malformed.");
	}
	out->meta.extra_bytes = fixed.extra_bytes;
	out->meta.extra = fixed.extra_bytes > 0 ? p + sizeof(fixed) + fixed.options_bytes : NULL;
}

/*
 * Map a segment registered to this backend and unpin it, so that it dies
 * with the mapping
 */
static dsm_segment *
map_registered(dsm_handle handle)
{
	dsm_segment *segment;
	int			slot;

	if (get_registry() == NULL || (slot = registry_find_mine(handle)) < 0)
		corrupt_state("Its shared memory segment is not registered to this process.");
	segment = dsm_attach(handle);
	if (segment == NULL)
		corrupt_state("Its shared memory segment no longer exists.");
	/* now the mapping keeps it; no entry left to unpin it twice */
	dsm_unpin_segment(handle);
	registry_remove(slot);
	return segment;
}

/*
 * Map the chunk segments a state names (npieces descriptors at p), which
 * hold its rows after the head_n of the rows section
 */
static void
map_pieces(const GcPartialHeader *header, const char *p, GcPartialRows *out)
{
	int64		rows = header->head_n;
	bool		weighted = (header->flags & GC_PARTIAL_WEIGHTED) != 0;
	bool		narrow = (header->flags & GC_PARTIAL_NARROW) != 0;

	out->npieces = header->pieces;
	out->pieces = palloc0(sizeof(GcPartialPieceRows) * Max(header->pieces, 1));
	for (int i = 0; i < header->pieces; i++)
	{
		GcPartialPiece piece;
		GcPartialChunkHeader head;
		GcPartialPieceRows *view = &out->pieces[i];
		GcChunk		chunk;

		memcpy(&piece, p + sizeof(piece) * i, sizeof(piece));
		if (piece.reserved != 0 || piece.count < 0 || piece.count > header->n - rows)
			corrupt_state("Its chunk segments do not agree with it.");
		view->segment = map_registered(piece.handle);
		if (dsm_segment_map_length(view->segment) < GC_PARTIAL_CHUNK_HEADER)
			corrupt_state("Its chunk segments do not agree with it.");
		memcpy(&head, dsm_segment_address(view->segment), sizeof(head));
		/* a chunk's room may pass the share's rows: it was made to double the last chunk */
		if (head.magic != GC_PARTIAL_CHUNK_MAGIC || head.d != header->d ||
			head.weighted != (uint32) weighted || head.narrow != (uint32) narrow ||
			head.count != piece.count || head.capacity < head.count ||
			head.capacity > (int64) ((dsm_segment_map_length(view->segment) - GC_PARTIAL_CHUNK_HEADER) /
									 gc_row_bytes(head.d, narrow, weighted)))
			corrupt_state("Its chunk segments do not agree with it.");
		chunk_arrays(dsm_segment_address(view->segment), &head, &chunk);
		view->count = piece.count;
		view->values = gc_chunk_values(&chunk);
		view->hashes = chunk.hashes;
		view->weights = chunk.weights;
		rows += piece.count;
	}
	if (rows != header->n)
		corrupt_state("Its chunk segments do not agree with it.");
}

/*
 * Map the segment a header names (map_registered); the rows section's
 * address
 */
static const char *
map_segment(const GcPartialHeader *header, GcPartialRows *out)
{
	dsm_segment *segment = map_registered(header->handle);
	GcPartialHeader stored;

	out->segment = segment;
	memcpy(&stored, dsm_segment_address(segment), sizeof(stored));
	if (dsm_segment_map_length(segment) < sizeof(stored) + header->data_bytes ||
		memcmp(&stored, header, sizeof(stored)) != 0)
		corrupt_state("Its shared memory segment does not match it.");

	/*
	 * Not prefaulted: the pages fault in (16 at a time) where the rows are
	 * read, which for a GPU fit is the upload's staging threads, in parallel
	 */
	return (const char *) dsm_segment_address(segment) + sizeof(stored);
}

/*
 * Read a serialized partial state back.  Rows in a segment are mapped
 * (out->segment) and the segment unpinned, so that it dies with the
 * mapping; inline rows stay in the bytea.
 */
void
gc_partial_deserialize(bytea *serialized, GcPartialRows *out)
{
	Size		len = VARSIZE_ANY_EXHDR(serialized);
	const char *p = VARDATA_ANY(serialized);
	GcPartialHeader header;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(header))
		corrupt_state("The state is too short.");
	memcpy(&header, p, sizeof(header));
	if (header.magic != GC_PARTIAL_MAGIC || header.version != GC_PARTIAL_VERSION ||
		header.checksum != header_checksum(&header))
		corrupt_state("The state's header is not valid.");
	if (!header_sizes_agree(&header, len))
		corrupt_state("The state's sizes do not agree.");
	read_meta(p + sizeof(header), header.meta_bytes, out);
	out->d = header.d;
	out->n = header.n;
	out->head_n = header.head_n;
	out->total_weight = header.total_weight;
	out->weighted = (header.flags & GC_PARTIAL_WEIGHTED) != 0;
	out->bad_weight = (header.flags & GC_PARTIAL_BAD_WEIGHT) != 0;
	out->float_exact = (header.flags & GC_PARTIAL_FLOAT_EXACT) != 0;
	out->narrow = (header.flags & GC_PARTIAL_NARROW) != 0;
	out->columns = header.columns;
	p += sizeof(header) + header.meta_bytes;
	map_pieces(&header, p, out);
	p += sizeof(GcPartialPiece) * header.pieces;
	if (header.flags & GC_PARTIAL_IN_SEGMENT)
		out->data = map_segment(&header, out);
	else
		out->data = p;
}

/* Whether a partial state's rows came (some or all) in shared memory */
bool
gc_partial_in_shared_memory(const GcPartialRows *part)
{
	return part->segment != NULL || part->npieces > 0;
}

/*
 * The deserial function of kmeans_gpu and pmedian_gpu: the partial state
 * read back in the leader, a GcPartialRows whose rows stay where they are
 * (a mapped segment or the bytea) until a combine function adopts them
 */
Datum
gpuclust_partial_deserialfn(PG_FUNCTION_ARGS)
{
	GcPartialRows *part;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "gpuclust deserial function called in non-aggregate context");
	part = palloc(sizeof(GcPartialRows));
	gc_partial_deserialize(PG_GETARG_BYTEA_PP(0), part);
	PG_RETURN_POINTER(part);
}

/*
 * The deserialized partial state a combine function joins into its state
 * (NULL: none), checking the call's context
 */
GcPartialRows *
gc_partial_share(FunctionCallInfo fcinfo, MemoryContext *aggcontext)
{
	if (!AggCheckCallContext(fcinfo, aggcontext))
		elog(ERROR, "gpuclust combine function called in non-aggregate context");
	return PG_ARGISNULL(1) ? NULL : (GcPartialRows *) PG_GETARG_POINTER(1);
}

/*
 * Per-row column number column of a partial state: n 8-byte values, in a
 * segment (aligned) or in the bytea (possibly not: read with memcpy)
 */
const char *
gc_partial_column(const GcPartialRows *part, int column)
{
	Assert(column >= 0 && column < part->columns);
	return part->data + rows_bytes(part->d, part->head_n, part->narrow, part->weighted) +
		sizeof(uint64) * (Size) part->n * column;
}

/*
 * Whether a segment was carved out of the main shared memory region that
 * min_dynamic_shared_memory reserves at server start (PostgreSQL 14 and
 * later): dsm.c gives those segments odd handles and the segments of the
 * dsm implementation (/dev/shm) even ones (make_main_region_dsm_handle and
 * is_main_region_dsm_handle, static there).  The pages of such a segment
 * stay in the main region when it is freed and serve the next one without
 * being allocated and zeroed again.
 */
static inline bool
in_main_region(dsm_handle handle)
{
	return (handle & 1) != 0;
}

#ifdef MADV_REMOVE
/* The segments whose pages release_pages_ahead's threads free, one at a time each */
typedef struct PageRelease
{
	char	  **starts;
	Size	   *lengths;
	int			count;
	pg_atomic_uint32 next;
} PageRelease;

static void *
page_release_main(void *arg)
{
	PageRelease *work = (PageRelease *) arg;
	uint32		i;

	while ((i = pg_atomic_fetch_add_u32(&work->next, 1)) < (uint32) work->count)
		(void) madvise(work->starts[i], work->lengths[i], MADV_REMOVE);
	return NULL;
}
#endif

/*
 * Free the pages of keep's segments before they are detached, several
 * segments at once.  The last detach of a segment frees its pages one
 * 4 kB page at a time in the detaching process: for the 6 GB of 1M rows
 * of d = 768 that 8 workers left, about 0.8 s of the query after the fit
 * on the H100 machine.  madvise(MADV_REMOVE) frees a segment's pages
 * ahead (holding its file's lock, so a thread takes a whole segment).
 * The threads block every signal, call madvise alone and are joined here.
 * Only a hint: where a thread or the memory for the lists is not to be
 * had, the detach frees the pages as before.  Segments in the main region
 * are left alone: their pages are the region's, for the next query.
 */
static void
release_pages_ahead(GcPartialSegments *keep)
{
#ifdef MADV_REMOVE
	PageRelease work;
	pthread_t	threads[GC_PAGE_RELEASE_THREADS];
	int			started = 0;
	Size		total = 0;

	work.starts = malloc(sizeof(char *) * keep->count);
	work.lengths = malloc(sizeof(Size) * keep->count);
	work.count = 0;
	pg_atomic_init_u32(&work.next, 0);
	for (int i = 0; work.starts && work.lengths && i < keep->count; i++)
		if (!in_main_region(keep->handles[i]) &&
			dsm_find_mapping(keep->handles[i]) == keep->segments[i])
		{
			work.starts[work.count] = dsm_segment_address(keep->segments[i]);
			work.lengths[work.count] = dsm_segment_map_length(keep->segments[i]);
			total += work.lengths[work.count++];
		}
	if (work.count >= 2 && total >= GC_PAGE_RELEASE_MIN_BYTES)
	{
		while (started < GC_PAGE_RELEASE_THREADS && started < work.count &&
			   gc_thread_create(&threads[started], page_release_main, &work) == 0)
			started++;
		for (int t = 0; t < started; t++)
			(void) pthread_join(threads[t], NULL);
	}
	free(work.starts);
	free(work.lengths);
#endif
}

static void
detach_segments(void *arg)
{
	GcPartialSegments *keep = (GcPartialSegments *) arg;

	release_pages_ahead(keep);
	for (int i = 0; i < keep->count; i++)
	{
		/* on error the resource owner may have detached it already */
		if (dsm_find_mapping(keep->handles[i]) == keep->segments[i])
			dsm_detach(keep->segments[i]);
	}
	keep->count = 0;
}

/*
 * A list of mapped segments, detached when context is reset or deleted
 * (the end of the query, normally), so that the rows they hold outlive
 * the combine function but not the aggregate
 */
GcPartialSegments *
gc_partial_segments_create(MemoryContext context)
{
	GcPartialSegments *keep = MemoryContextAllocZero(context, sizeof(GcPartialSegments));
	MemoryContextCallback *cb = MemoryContextAlloc(context, sizeof(*cb));

	keep->max = 8;
	keep->segments = MemoryContextAlloc(context, sizeof(dsm_segment *) * keep->max);
	keep->handles = MemoryContextAlloc(context, sizeof(dsm_handle) * keep->max);
	cb->func = detach_segments;
	cb->arg = keep;
	MemoryContextRegisterResetCallback(context, cb);
	return keep;
}

static void
keep_segment(GcPartialSegments *keep, dsm_segment *segment)
{
	if (keep->count == keep->max)
	{
		keep->max *= 2;
		keep->segments = repalloc(keep->segments, sizeof(dsm_segment *) * keep->max);
		keep->handles = repalloc(keep->handles, sizeof(dsm_handle) * keep->max);
	}
	keep->segments[keep->count] = segment;
	keep->handles[keep->count] = dsm_segment_handle(segment);
	keep->count++;
}

/*
 * Append chunk to rows, freeing a chunk of the store's own on failure;
 * the partial state's total weight goes with its first chunk (*weight
 * then 0)
 */
static void
append_chunk(GcRows *rows, GcChunk *chunk, const double *lo, const double *hi,
			 int64 *weight, bool bad_weight)
{
	GcError		err = {0};

	if (gc_rows_append_chunk(rows, chunk, lo, hi, *weight, bad_weight, &err) != GC_OK)
	{
		if (!chunk->borrowed)
		{
			rows->free(gc_chunk_values(chunk));
			rows->free(chunk->hashes);
			if (chunk->weights)
				rows->free(chunk->weights);
		}
		gc_raise(&err);
	}
	*weight = 0;
}

/*
 * The rows of a partial state's rows section as a chunk: borrowed in place
 * from its segment, or copied from the bytea into the store's own memory
 */
static void
head_chunk(GcRows *rows, const GcPartialRows *part, GcChunk *chunk)
{
	int			d = part->d;
	Size		n = (Size) part->head_n;
	Size		value_bytes = gc_value_bytes(part->narrow);
	const char *values = part->data + sizeof(double) * 2 * d;
	const char *hashes = values + value_bytes * d * n;
	const char *weights = hashes + sizeof(uint64) * n;
	GcError		err = {0};

	memset(chunk, 0, sizeof(*chunk));
	chunk->count = part->head_n;
	if (part->segment != NULL)
	{
		/* aligned: the segment's address is, and so is every section */
		gc_chunk_set_values(chunk, (void *) values, part->narrow);
		chunk->hashes = (uint64_t *) hashes;
		chunk->weights = part->weighted ? (double *) weights : NULL;
		chunk->borrowed = true;
		return;
	}
	if (gc_rows_alloc_arrays(rows, chunk, part->head_n, &err) != GC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of host memory in gpuclust"),
				 errdetail("Could not allocate memory for " INT64_FORMAT " rows of a partial state.",
						   part->head_n)));
	memcpy(gc_chunk_values(chunk), values, value_bytes * d * n);
	memcpy(chunk->hashes, hashes, sizeof(uint64) * n);
	if (part->weighted)
		memcpy(chunk->weights, weights, sizeof(double) * n);
}

/*
 * Add a partial state's rows to rows (of the same dimension, initialised
 * by the caller): the rows section's (head_chunk), then its chunk
 * segments', borrowed in place; keep holds every segment mapped
 */
static void
append_rows(GcRows *rows, const GcPartialRows *part, GcPartialSegments *keep)
{
	int			d = part->d;
	int64		weight = part->total_weight;
	double	   *lo;
	double	   *hi;
	GcChunk		chunk;

	if (part->n == 0)
		return;
	lo = palloc(sizeof(double) * d);
	hi = palloc(sizeof(double) * d);
	Assert(rows->d == d);
	if (rows->nchunks == 0 && part->weighted)
		gc_rows_set_weighted(rows);
	if (rows->weighted != part->weighted)
		elog(ERROR, "cannot combine weighted and unweighted partial states");
	if (rows->narrow != part->narrow)
		elog(ERROR, "cannot combine partial states of float32 and of double rows");
	memcpy(lo, part->data, sizeof(double) * d);
	memcpy(hi, part->data + sizeof(double) * d, sizeof(double) * d);

	if (part->segment != NULL)
		keep_segment(keep, part->segment);
	for (int i = 0; i < part->npieces; i++)
		keep_segment(keep, part->pieces[i].segment);
	if (part->head_n > 0)
	{
		head_chunk(rows, part, &chunk);
		chunk.float_exact = part->float_exact;
		append_chunk(rows, &chunk, lo, hi, &weight, part->bad_weight);
	}
	for (int i = 0; i < part->npieces; i++)
	{
		memset(&chunk, 0, sizeof(chunk));
		gc_chunk_set_values(&chunk, (void *) part->pieces[i].values, part->narrow);
		chunk.hashes = (uint64_t *) part->pieces[i].hashes;
		chunk.weights = (double *) part->pieces[i].weights;
		chunk.count = part->pieces[i].count;
		chunk.borrowed = true;
		chunk.float_exact = part->float_exact;
		if (chunk.count > 0)
			append_chunk(rows, &chunk, lo, hi, &weight, part->bad_weight);
	}
	pfree(lo);
	pfree(hi);
}

/*
 * Join a deserialized partial state's counts and rows into the leader's
 * input: the first rows choose the device (choose_device: the fit's,
 * pinned memory for a GPU fit in this backend) and fix the dimension, which later shares must have
 */
void
gc_partial_adopt(GcInput *input, const GcPartialRows *part, GcPartialSegments *keep,
				 void (*choose_device) (GcDevice *))
{
	input->null_rows += part->null_rows;
	input->seen_rows += part->seen_rows;
	if (part->n == 0)
		return;
	if (!input->started)
	{
		GcError		err = {0};

		choose_device(&input->device);
		if (gc_rows_init(&input->rows, part->d, input->device.alloc,
						 input->device.free, &err) != GC_OK)
			gc_raise(&err);
		if (part->narrow)
			gc_rows_set_narrow(&input->rows);
		input->started = true;
		input->format = part->format;
	}
	else if (part->d != input->rows.d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vectors of %d and of %d dimensions cannot be clustered together",
						input->rows.d, part->d),
				 errdetail("Parallel workers read vectors of both dimensions."),
				 errhint("All vectors clustered together must have the same dimension.")));
	if (input->rows.n + part->n > GC_MAX_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot cluster more than " INT64_FORMAT " rows", GC_MAX_ROWS)));
	append_rows(&input->rows, part, keep);
}

/*
 * The segment of keep that holds ptr (a borrowed chunk's array): its
 * handle and mapped address; false when no segment of keep holds it
 */
bool
gc_partial_segment_of(const GcPartialSegments *keep, const void *ptr,
					  dsm_handle *handle, const char **base)
{
	for (int i = 0; keep != NULL && i < keep->count; i++)
	{
		const char *start = dsm_segment_address(keep->segments[i]);

		if ((const char *) ptr >= start &&
			(const char *) ptr < start + dsm_segment_map_length(keep->segments[i]))
		{
			*handle = keep->handles[i];
			*base = start;
			return true;
		}
	}
	return false;
}
