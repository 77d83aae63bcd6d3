/*-------------------------------------------------------------------------
 *
 * cpu_threads.h
 *	  Passes over the rows on several CPU threads (cpu_threads.c): how
 *	  many threads a pass may use, and the runner that hands blocks of
 *	  rows to them while the calling thread polls the interrupt hook.
 *
 * A pass gives the same result for any number of threads when each row's
 * result depends on that row alone, or when what threads accumulate is
 * merged exactly (integers, minima): every user keeps to that.
 *
 * IDENTIFICATION
 *	  engine/cpu_threads.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CPU_THREADS_H
#define GC_CPU_THREADS_H

#include "gc_engine.h"

/* Threads one CPU pass may use at most */
#define GC_CPU_MAX_THREADS 64

/*
 * Threads worth using for units of work: wanted (0 for every online
 * core), at most GC_CPU_MAX_THREADS, and no more than the work keeps busy
 * (at least 1)
 */
extern int	gc_cpu_threads(int wanted, int64_t units);

/* Work on rows [first, first + count) of chunk, on thread number worker */
typedef void (*GcBlockFn) (void *ctx, int worker, const GcChunk *chunk,
						   int64_t first, int64_t count);

typedef struct GcCpuPass
{
	const GcRows *rows;
	int64_t		first_row;		/* the pass covers rows [first_row, n) */
	int64_t		row_units;		/* poll units a row costs */
	int			block_rows;		/* most rows of a block; 0: about GC_POLL_WORK units */
	int			workers;		/* threads, the caller's included (gc_cpu_threads) */
	GcBlockFn	fn;
	void	   *ctx;

	/*
	 * fn reads doubles only: a block of a narrow chunk reaches it as a
	 * chunk of its own, the block's rows widened into the thread's
	 * scratch, the chunk's first_row, hashes and weights moved to the
	 * block's first row, first 0
	 */
	bool		widen;
} GcCpuPass;

/*
 * Run fn over every block of the pass on pass->workers threads (worker 0
 * is the caller's; fewer run where a thread cannot start).  No block
 * straddles two chunks.  The calling thread polls, counting every
 * thread's finished rows, and on a stop fails with GC_INTERRUPTED and
 * the message what.
 */
extern GcStatus gc_cpu_run_blocks(const GcCpuPass *pass, GcPoll *poll, GcError *err,
								  const char *what);

#endif							/* GC_CPU_THREADS_H */
