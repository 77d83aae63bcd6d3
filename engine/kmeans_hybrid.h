/*-------------------------------------------------------------------------
 *
 * kmeans_hybrid.h
 *	  The hybrid of Lloyd's and pruned labeling, as the k-means driver
 *	  applies it: one set of decisions, each device's constants
 *	  (GcHybridRules).  Internal to the engine.
 *
 * IDENTIFICATION
 *	  engine/kmeans_hybrid.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KMEANS_HYBRID_H
#define KMEANS_HYBRID_H

#include "gc_engine.h"

/* The hybrid's state over one restart */
typedef struct GcHybrid
{
	const GcHybridRules *rules;
	GcAlgorithm algorithm;
	int			k;
	int64_t		n;
	bool		use_pruned;		/* pruned labeling from iteration 2 on */
	bool		settled;		/* rows re-ordered by work (the second epoch) */
	double		last_mean_work; /* mean work per pruned row, last pruned pass */
	double		lloyd_label_ms; /* labeling time of the last Lloyd pass */
	int64_t		probe_rows;		/* rows of the first pruned pass */
} GcHybrid;

typedef enum GcHybridAction
{
	GC_HYBRID_KEEP,				/* go on as before */
	GC_HYBRID_LLOYD,			/* back to Lloyd's for the rest of the restart */
	GC_HYBRID_REORDER			/* re-order the rows by work */
} GcHybridAction;

/* Whether a restart tries pruning (can_prune: the backend's Lloyd labeling allows it) */
extern void gc_hybrid_start(GcHybrid *h, const GcHybridRules *rules,
							const GcKmeansParams *params, int64_t n, int d,
							bool can_prune);

/* Rows that iteration it labels by pruning (0: Lloyd's alone) */
extern int64_t gc_hybrid_pruned_rows(const GcHybrid *h, int it);

/* The decision after a step that did not converge */
extern GcHybridAction gc_hybrid_review(GcHybrid *h, int64_t pruned_rows,
									   const GcStepStatus *step);

#endif							/* KMEANS_HYBRID_H */
