/*-------------------------------------------------------------------------
 *
 * cpu_labeling.h
 *	  The CPU's screened, threaded Lloyd labeling (cpu_labeling.c): the
 *	  exact reference's labels at the speed of matrix products.
 *
 * IDENTIFICATION
 *	  engine/cpu_labeling.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CPU_LABELING_H
#define GC_CPU_LABELING_H

#include "cpu_threads.h"
#include "gc_engine.h"

/*
 * Work on each labelled tile while its rows are in the core's cache (the
 * Lloyd update): fn runs on the tile's thread after its labels are set,
 * on at most max_workers threads (worker numbers below it)
 */
typedef struct GcTileHook
{
	GcBlockFn	fn;
	void	   *ctx;
	int			max_workers;
} GcTileHook;

/* The store holds its rows as doubles (not narrow): the screen reads them */
extern bool gc_cpu_labeling_applies(const GcRows *rows);

/*
 * Label rows [first_row, n) against k centroids: labels[row] and, when
 * distances2 is not NULL, distances2[row] are what gc_nearest_centroid
 * gives, to the bit.  offset (d) centres the screen, NULL: the centroids'
 * median (any centre gives the same answers; a near one doubts fewer);
 * threads as gc_cpu_threads takes it.  Polls the hook on the calling
 * thread; rechecked (may be NULL) counts the rows whose exact distance
 * was needed to more than one centroid; hook (may be NULL) runs on each
 * labelled tile.
 */
extern GcStatus gc_cpu_label_rows(const GcRows *rows, int64_t first_row,
								  const double *centroids, int k, const double *offset,
								  int threads, int32_t *labels, double *distances2,
								  const GcTileHook *hook, GcPoll *poll, int64_t *rechecked,
								  GcError *err);

#endif							/* GC_CPU_LABELING_H */
