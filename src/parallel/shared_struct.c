/*-------------------------------------------------------------------------
 *
 * shared_struct.c
 *	  The extension's structures in shared memory (the GPU service's
 *	  queue, the progress slots, the segments' registry): requested in the
 *	  main shared memory while gpuclust is being preloaded, through one
 *	  pair of shmem_request and shmem_startup hooks for all of them, and
 *	  made there at server start by their own init functions; without the
 *	  preload, on PostgreSQL 17 and later, those that allow it are made in
 *	  a named DSM segment by the first process to attach them, and kept
 *	  until the server stops.
 *
 * IDENTIFICATION
 *	  src/parallel/shared_struct.c
 *
 *-------------------------------------------------------------------------
 */
#include "shared_struct.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#if GC_HAVE_DSM_REGISTRY
#include "storage/dsm_registry.h"
#endif

/* The structures requested, in the order _PG_init asked */
#define GC_SHARED_STRUCTS 4

static GcSharedStruct *requested[GC_SHARED_STRUCTS];
static int	nrequested = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shared_structs_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < nrequested; i++)
		RequestAddinShmemSpace(requested[i]->size());
}

static void
shared_structs_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (int i = 0; i < nrequested; i++)
	{
		GcSharedStruct *shared = requested[i];
		bool		found;

		*shared->address = ShmemInitStruct(shared->name, shared->size(), &found);
		if (!found)
			shared->init(*shared->address);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Ask for shared's structure in the main shared memory; from _PG_init,
 * and only while gpuclust is being preloaded (the backends inherit the
 * hooks, and the addresses the startup hook sets)
 */
void
gc_shared_struct_request(GcSharedStruct *shared)
{
	Assert(process_shared_preload_libraries_in_progress);
	if (nrequested == GC_SHARED_STRUCTS)
		elog(ERROR, "too many gpuclust structures in shared memory");
	if (nrequested == 0)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = shared_structs_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = shared_structs_startup;
	}
	requested[nrequested++] = shared;
}

/*
 * The structure's address: the preloaded one, else (17 and later, where
 * it has a DSM name) the DSM registry's, made or attached now; NULL when
 * there is none
 */
void *
gc_shared_struct_attach(GcSharedStruct *shared)
{
#if GC_HAVE_DSM_REGISTRY
	if (*shared->address == NULL && shared->dsm_name != NULL)
	{
		bool		found;

		*shared->address = GetNamedDSMSegment(shared->dsm_name, shared->size(),
											  shared->init, &found);
	}
#endif
	return *shared->address;
}
