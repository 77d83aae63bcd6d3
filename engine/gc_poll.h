/*-------------------------------------------------------------------------
 *
 * gc_poll.h
 *	  Cancel by work: GcPoll, the units a loop counts between polls of the
 *	  interrupt hook, and the GPU's chunks of rows between polls.
 *
 * IDENTIFICATION
 *	  engine/gc_poll.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_POLL_H
#define GC_POLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* ---------------------------------------------------------------------
 * Cancel by work, not by rows.  Every loop that can run long counts what
 * it does in distance-dimension units (one coordinate of one distance:
 * labelling a row against k centroids of d dimensions is k d units) and
 * polls the interrupt hook once GC_POLL_WORK units have passed since the
 * last poll: about 10 ms of one CPU core (an exact double distance costs
 * about a nanosecond per coordinate; with small d a row's bookkeeping
 * costs as much again, and a loaded core three times more, so 50 ms is
 * the worst seen), whatever n, k and d.  Polls cost next to nothing (the
 * hook reads a flag), so there is no gain in fewer.  A single item
 * larger than that (a row against a million centroids) is split with
 * gc_poll_span.  The GPU backends cut their long launches into chunks of
 * rows of about GC_POLL_WORK_GPU units each (gc_poll_gpu_items) and poll
 * between chunks; the hook itself is the glue's (src/interrupt.c), which
 * asks PostgreSQL, so a cancel, a termination and a lost client all count.
 * ---------------------------------------------------------------------
 */
#define GC_POLL_WORK	(INT64_C(1) << 23)

/*
 * The GPU's share between two polls: 2^38 units, 10 to 30 ms of an H100's
 * float64 pipes (the slowest path: float64 labeling, k-means++ seeding,
 * the p-median kernels, about 1e13 units a second) and less on the
 * float32 and tensor-core paths.  A chunk of rows is a multiple of
 * GC_POLL_MIN_GPU_ROWS, 2,048 warps of one row a thread (15 a
 * multiprocessor on an H100): below that a chunk would no longer keep
 * the device busy, and splitting would slow the fit down instead of
 * bounding the wait.  Device memory bounds what a chunk of that many
 * rows can cost (n d values must fit beside the centroids).
 */
#define GC_POLL_WORK_GPU	(INT64_C(1) << 38)
#define GC_POLL_MIN_GPU_ROWS	INT64_C(65536)

/*
 * What a pass of one thread per row over n rows, per_row units each,
 * costs in GPU time, in units: as much as GC_POLL_MIN_GPU_ROWS rows where
 * there are fewer (they leave the device idle, not the pass shorter).  So
 * k-means++ over 2,100 rows of d = 65,536 polls every 64 steps, not every
 * 2,000.
 */
static inline int64_t
gc_gpu_pass_units(int64_t n, int64_t per_row)
{
	return (n > GC_POLL_MIN_GPU_ROWS ? n : GC_POLL_MIN_GPU_ROWS) * per_row;
}

typedef struct GcPoll
{
	bool		(*interrupted) (void);	/* NULL: never interrupted */
	int64_t		work;			/* units counted since the last poll */
} GcPoll;

/*
 * Count units of work done; true when the hook, polled once GC_POLL_WORK
 * units have accumulated, asks to stop
 */
static inline bool
gc_poll(GcPoll *poll, int64_t units)
{
	poll->work += units;
	if (poll->work < GC_POLL_WORK)
		return false;
	poll->work = 0;
	return poll->interrupted != NULL && poll->interrupted();
}

/* Items of unit units each that fit in one poll's budget (at least 1) */
extern int64_t gc_poll_span(int64_t unit);

/*
 * memcpy from src, or zeroes where src is NULL, of bytes, polling between
 * slices: a byte counts as one unit (fresh memory's first-touch page
 * faults cost about a nanosecond a byte); false when the hook asked to stop
 */
extern bool gc_copy_polled(void *dst, const void *src, size_t bytes, GcPoll *poll);

/*
 * GPU: items of unit units each that one launch, or the launches between
 * two polls, take: about GC_POLL_WORK_GPU units, in whole granules of
 * items (at least one), at most count
 */
extern int64_t gc_poll_gpu_items(int64_t unit, int64_t granule, int64_t count);

#ifdef __cplusplus
}
#endif

#endif							/* GC_POLL_H */
