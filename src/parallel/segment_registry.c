/*-------------------------------------------------------------------------
 *
 * segment_registry.c
 *	  The registry of the dynamic shared memory segments that parallel
 *	  workers hand to their leader (partial_state.c): which backend may map
 *	  a segment, and who unpins it when that backend never does.  A small
 *	  array of (handle, leader pid, leader transaction, pinned) in the
 *	  extension's shared memory, or in a named DSM segment on PostgreSQL
 *	  17 and later without the preload; none on 15 and 16 without it.
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
 * IDENTIFICATION
 *	  src/parallel/segment_registry.c
 *
 *-------------------------------------------------------------------------
 */
#include "segment_registry.h"
#include "shared_struct.h"

#include <sys/statvfs.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/spin.h"

/* Segments held for leaders at once, server-wide */
#define GC_PARTIAL_SLOTS		1024

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

static GcPartialRegistry *registry = NULL;

static Size
registry_size(void)
{
	return sizeof(GcPartialRegistry);
}

static void
registry_init(void *ptr)
{
	GcPartialRegistry *fresh = (GcPartialRegistry *) ptr;

	memset(fresh, 0, sizeof(GcPartialRegistry));
	SpinLockInit(&fresh->mutex);
	pg_atomic_init_u32(&fresh->used, 0);
}

static GcSharedStruct registry_struct = {
	.name = "gpuclust partial states",
	.dsm_name = "gpuclust partial states",
	.size = registry_size,
	.init = registry_init,
	.address = (void **) &registry
};

/*
 * The registry: in the main shared memory when gpuclust is preloaded,
 * else (PostgreSQL 17 and later, under a postmaster) in a named DSM
 * segment that the first process to need it creates; NULL on 15 and 16
 * without the preload
 */
static GcPartialRegistry *
get_registry(void)
{
	return IsUnderPostmaster ? gc_shared_struct_attach(&registry_struct) : registry;
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
gc_segment_registry_init(void)
{
	if (process_shared_preload_libraries_in_progress)
		gc_shared_struct_request(&registry_struct);
	RegisterXactCallback(partial_xact_callback, NULL);
}

bool
gc_segment_registry_available(void)
{
	return get_registry() != NULL;
}

/* Entries in use, server-wide (0 without a registry) */
uint32
gc_segment_registry_used(void)
{
	return registry != NULL ? pg_atomic_read_u32(&registry->used) : 0;
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

/*
 * Clear the entry of a segment not yet pinned (its maker failed before
 * pinning it: the segment goes with the maker's mapping), or of one just
 * mapped by its leader
 */
void
gc_segment_registry_remove(int slot)
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
dsm_segment *
gc_segment_create_registered(Size bytes, int *slot)
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

/*
 * Pin a segment made by gc_segment_create_registered and mark its entry
 * pinned: from then on it outlives this process, and the leader's
 * transaction end unpins it unless the leader maps it first
 */
void
gc_segment_pin_registered(dsm_segment *segment, int slot)
{
	dsm_pin_segment(segment);
	registry_mark_pinned(slot);
}

/*
 * Forget a segment whose maker let go of it before its leader mapped it:
 * unpin it where its entry (slot) still names handle; an entry the
 * leader's transaction end has already cleared is its to unpin
 */
void
gc_segment_release_unread(int slot, dsm_handle handle)
{
	if (registry != NULL && registry_take(slot, handle))
		dsm_unpin_segment(handle);
}

/*
 * Map a segment registered to this backend as leader and unpin it, so
 * that it dies with the mapping; NULL, with *problem saying why, when it
 * is not registered to this backend or no longer exists
 */
dsm_segment *
gc_segment_attach_registered(dsm_handle handle, const char **problem)
{
	dsm_segment *segment;
	int			slot;

	if (get_registry() == NULL || (slot = registry_find_mine(handle)) < 0)
	{
		*problem = "Its shared memory segment is not registered to this process.";
		return NULL;
	}
	segment = dsm_attach(handle);
	if (segment == NULL)
	{
		*problem = "Its shared memory segment no longer exists.";
		return NULL;
	}
	/* now the mapping keeps it; no entry left to unpin it twice */
	dsm_unpin_segment(handle);
	gc_segment_registry_remove(slot);
	return segment;
}
