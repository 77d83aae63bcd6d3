/*-------------------------------------------------------------------------
 *
 * shared_struct.h
 *	  A structure of the extension's in shared memory (shared_struct.c):
 *	  its names, size and initialisation, and where this process keeps its
 *	  address.
 *
 * IDENTIFICATION
 *	  src/parallel/shared_struct.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_SHARED_STRUCT_H
#define GC_SHARED_STRUCT_H

#include "gpuclust.h"

typedef struct GcSharedStruct
{
	const char *name;			/* in the main shared memory (preloaded) */
	const char *dsm_name;		/* in the DSM registry (17 and later, not
								 * preloaded); NULL: preloaded only */
	Size		(*size) (void);
	void		(*init) (void *ptr);	/* a fresh one, size() bytes */
	void	  **address;		/* this process's pointer to it; NULL: none */
} GcSharedStruct;

extern void gc_shared_struct_request(GcSharedStruct *shared);
extern void *gc_shared_struct_attach(GcSharedStruct *shared);

#endif							/* GC_SHARED_STRUCT_H */
