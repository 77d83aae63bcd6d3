/*-------------------------------------------------------------------------
 *
 * pmedian_fit.h
 *	  What the p-median driver's files share (pmedian_fit.c, the
 *	  location-allocation, the three phases and the driver;
 *	  pmedian_improve.c, the swap improvement): a fit in progress, one
 *	  location-allocation problem, and the helpers both use.  Internal to
 *	  the engine: callers use pmedian_engine.h.
 *
 * IDENTIFICATION
 *	  engine/pmedian_fit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PMEDIAN_FIT_H
#define PMEDIAN_FIT_H

#include "pmedian_engine.h"

typedef struct PmFit
{
	const GcPmBackend *backend;
	void	   *session;
	const GcPmParams *params;
	const GcRows *rows;
	const double *demand;
	int64_t		n;
	GcError    *err;
	GcPmImprove improvement;	/* resolved: none, sample or full */
	int			iterations;		/* location-allocation iterations so far, all problems */
} PmFit;

/* One location-allocation problem: entities and centres in groups */
typedef struct PmProblem
{
	int			ngroups;
	int32_t		nent;
	int32_t    *ent;			/* rows, grouped */
	int32_t    *group;			/* nent */
	int32_t		ncen;
	int32_t    *cen;			/* rows, grouped */
	int32_t    *cen_first;		/* ngroups + 1 */
	double		capacity;		/* 0: uncapacitated */
	double	   *penalty;		/* ncen multipliers */
	int32_t    *alloc;			/* nent: index into cen */
	double	   *dist;			/* nent */
	double		objective;
	double		violation;
	int			iterations;
	bool		converged;
} PmProblem;

/* malloc of count (at least 1) elements; sets *failed when it fails */
extern void *gc_pm_alloc_array(size_t count, size_t size, bool *failed);
extern GcStatus gc_pm_problem_init(PmProblem *pb, int ngroups, int32_t nent, int32_t ncen,
								   GcError *err);
extern void gc_pm_problem_release(PmProblem *pb);
extern bool gc_pm_interrupted(const PmFit *f);
extern double gc_pm_objective(const PmProblem *pb);
extern void gc_pm_report(const PmFit *f, GcPhase phase, const PmProblem *pb);
extern int	gc_pm_int32_cmp(const void *a, const void *b);

/* pmedian_improve.c: swap improvement of pb's centres, over all rows or a sample's */
extern GcStatus gc_pm_improve(PmFit *f, PmProblem *pb, GcPmResult *result);
extern GcStatus gc_pm_improve_sample(PmFit *f, PmProblem *sample, GcPmResult *result);

#endif							/* PMEDIAN_FIT_H */
