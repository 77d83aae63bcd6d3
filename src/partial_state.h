/*-------------------------------------------------------------------------
 *
 * partial_state.h
 *	  Partial aggregate states of parallel plans: a worker's rows handed to
 *	  the leader in a dynamic shared memory segment (or, without the
 *	  preloaded registry, copied into the serialized state itself).
 *
 * IDENTIFICATION
 *	  src/partial_state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PARTIAL_STATE_H
#define GC_PARTIAL_STATE_H

#include "gpuclust.h"

#include "storage/dsm.h"

/*
 * A partial state's rows as the leader reads them back: d-dimensional rows
 * whose values, hashes and (when weighted) weights lie at data, either in
 * a mapped segment or in the serialized bytes (then possibly unaligned).
 */
typedef struct GcPartialRows
{
	int			d;				/* 0 when the partial state had no rows */
	int64		n;
	int64		total_weight;
	bool		weighted;
	bool		bad_weight;
	const char *meta;			/* the aggregate's own bytes (unaligned) */
	Size		meta_bytes;
	const char *data;			/* lo[d], hi[d], values[n * d], hashes[n],
								 * weights[n] */
	dsm_segment *segment;		/* segment holding data; NULL when inline */
} GcPartialRows;

/* Segments a combined state has mapped, detached when its context resets */
typedef struct GcPartialSegments
{
	int			count;
	int			max;
	dsm_segment **segments;
	dsm_handle *handles;
} GcPartialSegments;

extern void gc_partial_init(void);
extern bool gc_dsm_segment_fits(Size bytes);
extern bool gc_partial_registry_available(void);
extern bytea *gc_partial_serialize(GcRows *rows, const void *meta,
								   Size meta_bytes);
extern void gc_partial_deserialize(bytea *serialized, GcPartialRows *out);
extern GcPartialSegments *gc_partial_segments_create(MemoryContext context);
extern void gc_partial_append(GcRows *rows, const GcPartialRows *part,
							  GcPartialSegments *keep);
extern bool gc_partial_segment_of(const GcPartialSegments *keep, const void *ptr,
								  dsm_handle *handle, const char **base);

#endif							/* GC_PARTIAL_STATE_H */
