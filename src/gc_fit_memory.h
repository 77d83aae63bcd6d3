/*-------------------------------------------------------------------------
 *
 * gc_fit_memory.h
 *	  One account per fit of the host memory it plans to hold
 *	  (fit_memory.c), against gpuclust.max_fit_memory_mb.
 *
 * IDENTIFICATION
 *	  src/gc_fit_memory.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_FIT_MEMORY_H
#define GC_FIT_MEMORY_H

#include "gc_engine.h"

/*
 * A fit's account: every path counts what it is about to allocate
 * (gc_fit_memory_count) and is refused with 53200 before allocating when
 * the total would pass the limit.  The row store, filled a row at a time,
 * is bounded by what is left when it starts (gc_fit_memory_left) and
 * counted in full at the fit.
 */
typedef struct GcFitMemory
{
	size_t		limit;			/* bytes, 0: no limit */
	size_t		planned;		/* bytes counted so far */
} GcFitMemory;

extern void gc_fit_memory_setup(void);
extern size_t gc_fit_memory_limit(void);
extern void gc_fit_memory_begin(GcFitMemory *account);
extern void gc_fit_memory_count(GcFitMemory *account, size_t bytes, const char *what);
extern bool gc_fit_memory_room(const GcFitMemory *account, size_t bytes);
extern size_t gc_fit_memory_left(const GcFitMemory *account);

/* How a stream summary's block_rows came: the default, given, or stored */
typedef enum GcStreamBlockOrigin
{
	GC_STREAM_BLOCK_DEFAULT,	/* shrunk to fit the limit */
	GC_STREAM_BLOCK_GIVEN,		/* refused past the limit */
	GC_STREAM_BLOCK_STORED		/* a summary read back: bounded, not refused */
} GcStreamBlockOrigin;

extern void gc_stream_plan_memory(GcStreamHeader *shape, GcStreamBlockOrigin origin,
								  size_t *max_block_bytes, size_t *max_level_bytes);
extern void gc_stream_model_memory(const GcStream *s, int k);

/* What a fit holds or will allocate, in bytes */
extern size_t gc_rows_held_bytes(const GcRows *rows);
extern size_t gc_kmeans_work_bytes(int64_t n, int k, int d);
extern size_t gc_pmedian_work_bytes(int64_t n, int p, int d, bool capacitated,
									bool host_copy);

#endif							/* GC_FIT_MEMORY_H */
