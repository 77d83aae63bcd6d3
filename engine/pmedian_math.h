/*-------------------------------------------------------------------------
 *
 * pmedian_math.h
 *	  The p-median dissimilarities, computed identically by the CPU
 *	  reference and the CUDA kernels: Euclidean, squared Euclidean,
 *	  Manhattan and cosine distances in double precision with every
 *	  operation rounded on its own (no fused multiply-add), the penalised
 *	  allocation cost, and the fixed-point quantisation of swap gains.
 *
 * IDENTIFICATION
 *	  engine/pmedian_math.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PMEDIAN_MATH_H
#define PMEDIAN_MATH_H

#include "gc_math.h"

#ifdef __CUDA_ARCH__
#define PM_ADD(a, b) __dadd_rn((a), (b))
#define PM_SUB(a, b) __dsub_rn((a), (b))
#define PM_MUL(a, b) __dmul_rn((a), (b))
#else
#define PM_ADD(a, b) ((a) + (b))
#define PM_SUB(a, b) ((a) - (b))
#define PM_MUL(a, b) ((a) * (b))
#endif

/* Manhattan distance: the sum of absolute differences */
GC_HD double
gc_pm_manhattan(const double *a, const double *b, int d)
{
	double		s = 0.0;

	for (int j = 0; j < d; j++)
		s = PM_ADD(s, fabs(PM_SUB(a[j], b[j])));
	return s;
}

/*
 * Cosine distance 1 - a.b / (|a| |b|), computed as |a/|a| - b/|b||^2 / 2
 * so that it is exactly 0 between equal vectors; 1 against a zero vector
 * (0 between two)
 */
GC_HD double
gc_pm_cosine(const double *a, const double *b, int d)
{
	double		na = 0.0,
				nb = 0.0,
				s = 0.0;

	for (int j = 0; j < d; j++)
	{
		na = PM_ADD(na, PM_MUL(a[j], a[j]));
		nb = PM_ADD(nb, PM_MUL(b[j], b[j]));
	}
	if (na == 0.0 || nb == 0.0)
		return (na == 0.0 && nb == 0.0) ? 0.0 : 1.0;
	na = sqrt(na);
	nb = sqrt(nb);
	for (int j = 0; j < d; j++)
	{
		double		t = PM_SUB(a[j] / na, b[j] / nb);

		s = PM_ADD(s, PM_MUL(t, t));
	}
	return PM_MUL(s, 0.5);
}

/* The dissimilarity of metric (a GcPmMetric) between a and b */
GC_HD double
gc_pm_dist(const double *a, const double *b, int d, int metric)
{
	switch (metric)
	{
		case 1:					/* GC_PM_SQEUCLIDEAN */
			return gc_sqdist_exact(a, b, d);
		case 2:					/* GC_PM_MANHATTAN */
			return gc_pm_manhattan(a, b, d);
		case 3:					/* GC_PM_COSINE */
			return gc_pm_cosine(a, b, d);
		default:				/* GC_PM_EUCLIDEAN */
			return sqrt(gc_sqdist_exact(a, b, d));
	}
}

/* The allocation cost: distance plus the centre's multiplier times demand */
GC_HD double
gc_pm_cost(double dist, double penalty, double demand)
{
	return PM_ADD(dist, PM_MUL(penalty, demand));
}

/* A distance as a fixed-point integer, for order-independent swap gains */
GC_HD long long
gc_pm_fixed(double x, double scale)
{
#ifdef __CUDA_ARCH__
	return __double2ll_rn(__dmul_rn(x, scale));
#else
	return llrint(x * scale);
#endif
}

/*
 * FasterPAM's contribution of one row o to the swap of candidate c
 * (distance doc): added to the candidate's own gain when c becomes o's
 * nearest, else to the gain of o's nearest medoid.  Returns the part for
 * *own and writes the part for the nearest medoid to *near.
 */
GC_HD void
gc_pm_swap_part(double doc, double dn, double ds, double scale,
				long long *own, long long *near)
{
	if (doc < dn)
	{
		*own = gc_pm_fixed(doc, scale) - gc_pm_fixed(dn, scale);
		*near = gc_pm_fixed(dn, scale) - gc_pm_fixed(ds, scale);
	}
	else if (doc < ds)
	{
		*own = 0;
		*near = gc_pm_fixed(doc, scale) - gc_pm_fixed(ds, scale);
	}
	else
		*own = *near = 0;
}

#endif							/* PMEDIAN_MATH_H */
