/*-------------------------------------------------------------------------
 *
 * gc_stream_state.h
 *	  The kmeans_stream type's expanded state (stream_type.c) and its
 *	  clusterings in the GPU service (service/stream_service.c).
 *
 * IDENTIFICATION
 *	  src/gc_stream_state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_STREAM_STATE_H
#define GC_STREAM_STATE_H

#include "gc_device.h"

/*
 * stream_type.c: the kmeans_stream type.  Its flat form is a varlena
 * holding stream_format.h's bytes; its expanded form, a read-write state
 * that the aggregates update in place, holds the engine's GcStream.
 */
typedef struct GcStreamState
{
	ExpandedObjectHeader hdr;
	GcStream	stream;
	GcDevice	device;
} GcStreamState;

/* stream_service.c: a summary's clusterings in the GPU service */
typedef struct GcStreamService GcStreamService;
extern GcStreamService *gc_stream_use_service(GcStream *s, GcDevice *device, uint32 progress,
											  MemoryContext context);
extern bool gc_stream_service_ran(const GcStreamService *svc);
extern void gc_stream_raise(GcError *err);

extern GcStreamState *gc_stream_state_new(MemoryContext parent,
										  const GcStreamHeader *shape,
										  bool use_gpu);
extern GcStreamState *gc_stream_state_copy(Datum value, MemoryContext parent,
										   bool use_gpu);
extern GcStreamState *gc_stream_state_compacted_copy(Datum value, MemoryContext parent,
													 bool use_gpu);
extern GcStreamState *gc_stream_state_rw(Datum value);
extern void gc_stream_state_merge(GcStreamState *state, Datum value);
extern Datum gc_stream_state_flatten(GcStreamState *state);
extern void gc_stream_state_free(GcStreamState *state);

#endif							/* GC_STREAM_STATE_H */
