/*-------------------------------------------------------------------------
 *
 * pmedian_cpu.h
 *	  The CPU reference backend's session, shared by its two files:
 *	  pmedian_cpu.c (the session, allocation, cluster sums, D-sampling)
 *	  and pmedian_cpu_swap.c (the swap improvement's nearest2 and swap
 *	  gains over a k-d tree).  Internal to the engine.
 *
 * IDENTIFICATION
 *	  engine/pmedian_cpu.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PMEDIAN_CPU_H
#define PMEDIAN_CPU_H

#include "cpu_threads.h"
#include "pmedian_engine.h"

/* The k-d tree of the swap improvement (pmedian_cpu_swap.c) */
typedef struct PmCpuTree
{
	int32_t		nnodes;			/* in preorder: a node's left child follows it */
	int32_t    *first;			/* nnodes: the node's positions [first, last) */
	int32_t    *last;
	int32_t    *right;			/* nnodes: right child, -1 for a leaf */
	double	   *lo;				/* nnodes * d: bounding boxes */
	double	   *hi;
	double	   *far;			/* nnodes: largest ds of the node's rows */
	int32_t    *order;			/* n: the row at each position */
	double	   *xs;				/* n * d: the rows in position order */
	/* by position, from the last nearest2 */
	int32_t    *nearest;
	int32_t    *second;			/* a medoid at distance ds, -1 for none */
	double	   *dn;
	double	   *ds;
	int64_t    *fixed_dn;		/* gc_pm_fixed of dn and ds at fixed_scale */
	int64_t    *fixed_ds;
	double		fixed_scale;	/* 0: not computed since the last nearest2 */
	int32_t    *medoids;		/* p: the medoids of the last nearest2 */
	int			p;				/* 0: no nearest2 yet */
	int64_t    *gains;			/* GC_CPU_MAX_THREADS * p: a candidate's gains */
} PmCpuTree;

typedef struct PmCpuSession
{
	const GcPmParams *params;
	int64_t		n;
	int			d;
	double	   *x;				/* n * d, contiguous */
	uint64_t   *hashes;			/* n */
	const double *demand;		/* n, or NULL */
	int32_t		nent;
	const int32_t *ent;			/* the caller's, valid until the next set */
	const int32_t *group;
	double	   *mind;			/* nent: D-sampling distances */
	int			threads;		/* threads of the passes, 0: every core */
	PmCpuTree	tree;			/* built by the first nearest2 */
	GcPoll		poll;			/* work since the interrupt hook was last polled */
} PmCpuSession;

#define ROW(s, r) ((s)->x + (size_t) (r) * (s)->d)

/* pmedian_cpu.c: a pass over count items on the session's threads */
extern GcStatus gc_pm_cpu_run_items(PmCpuSession *s, int64_t count, int64_t units,
									int block_items, GcBlockFn fn, void *ctx,
									GcError *err, const char *what);

/* pmedian_cpu_swap.c */
extern GcStatus gc_pm_cpu_nearest2(void *session, int p, const int32_t *medoids,
								   double far, int32_t *nearest, double *dn,
								   double *ds, GcError *err);
extern GcStatus gc_pm_cpu_swap_gains(void *session, int p, int ncand,
									 const int32_t *cand, double scale,
									 const int64_t *removal, int32_t *best_medoid,
									 int64_t *best_gain, GcError *err);
extern void gc_pm_cpu_tree_release(PmCpuTree *tree);

#endif							/* PMEDIAN_CPU_H */
