/*-------------------------------------------------------------------------
 *
 * segment_registry.h
 *	  The registry of the shared memory segments that parallel workers
 *	  hand to their leader (segment_registry.c explains their lifetime).
 *	  A segment is made registered to the current parallel leader, pinned
 *	  once it is complete, and mapped only by that leader, which unpins it;
 *	  the leader's transaction end unpins whatever it never mapped.
 *
 * IDENTIFICATION
 *	  src/parallel/segment_registry.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_SEGMENT_REGISTRY_H
#define GC_SEGMENT_REGISTRY_H

#include "gpuclust.h"

#include "storage/dsm.h"

extern void gc_segment_registry_init(void);
extern bool gc_segment_registry_available(void);
extern uint32 gc_segment_registry_used(void);
extern bool gc_dsm_segment_fits(Size bytes);
extern dsm_segment *gc_segment_create_registered(Size bytes, int *slot);
extern void gc_segment_pin_registered(dsm_segment *segment, int slot);
extern void gc_segment_registry_remove(int slot);
extern void gc_segment_release_unread(int slot, dsm_handle handle);
extern dsm_segment *gc_segment_attach_registered(dsm_handle handle, const char **problem);

#endif							/* GC_SEGMENT_REGISTRY_H */
