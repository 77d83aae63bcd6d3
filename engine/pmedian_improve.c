/*-------------------------------------------------------------------------
 *
 * pmedian_improve.c
 *	  The p-median fit's swap improvement, beyond Luong & Taillard: a
 *	  FasterPAM-style search (Schubert & Rousseeuw, 2021).  Non-medoid
 *	  candidates are evaluated in batches by the backend (the removal loss
 *	  of each medoid, then each candidate's best swap gain), each batch's
 *	  best improving swap is made, until n - p candidates in a row bring
 *	  nothing.  Gains are fixed-point integers, so both backends make the
 *	  same swaps.  Over all rows, or over a sample's rows alone (the
 *	  three-phase construction's sample, in a backend session of its own).
 *
 * IDENTIFICATION
 *	  engine/pmedian_improve.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_fit.h"
#include "pmedian_math.h"

#include <stdlib.h>
#include <string.h>

/* Upper bound on swaps, against any pathological loop */
#define MAX_SWAPS 1000000

/*
 * A bound on any dissimilarity, from the bounding box
 */
static double
distance_bound(const GcRows *rows, GcPmMetric metric)
{
	double		l1 = 0.0,
				l2 = 0.0;

	if (metric == GC_PM_COSINE)
		return 1.0;
	for (int j = 0; j < rows->d; j++)
	{
		double		range = rows->hi[j] - rows->lo[j];

		l1 += range;
		l2 += range * range;
	}
	return metric == GC_PM_MANHATTAN ? l1 : metric == GC_PM_SQEUCLIDEAN ? l2 : sqrt(l2);
}

/*
 * Removal loss of each medoid, in fixed point
 */
static void
removal_loss(int p, int64_t n, const int32_t *nearest, const double *dn,
			 const double *ds, double scale, int64_t *removal)
{
	memset(removal, 0, sizeof(int64_t) * p);
	for (int64_t i = 0; i < n; i++)
		removal[nearest[i]] += gc_pm_fixed(ds[i], scale) - gc_pm_fixed(dn[i], scale);
}

/*
 * Swap improvement from the medoids in pb->cen: batches of non-medoid
 * candidates in row order, the best improving swap of each batch made at
 * once, until n - p candidates in a row bring nothing
 */
GcStatus
gc_pm_improve(PmFit *f, PmProblem *pb, GcPmResult *result)
{
	int			p = f->params->p;
	int64_t		n = f->n;
	double		far = 2.0 * distance_bound(f->rows, f->params->metric) + 1.0;
	double		scale;
	int			e;
	bool		failed = false;
	bool	   *is_medoid = gc_pm_alloc_array(n, sizeof(bool), &failed);
	double	   *ds = gc_pm_alloc_array(n, sizeof(double), &failed);
	int64_t    *removal = gc_pm_alloc_array(p, sizeof(int64_t), &failed);
	int32_t		cand[GC_PM_SWAP_BATCH],
				best_medoid[GC_PM_SWAP_BATCH];
	int64_t		best_gain[GC_PM_SWAP_BATCH];
	int64_t		cursor = 0,
				idle = 0;
	GcStatus	status = GC_OK;

	frexp((double) n * far, &e);	/* n * far < 2^e */
	scale = ldexp(1.0, 61 - e);
	if (failed)
		status = gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for swaps");
	else
	{
		memset(is_medoid, 0, sizeof(bool) * n);
		for (int m = 0; m < p; m++)
			is_medoid[pb->cen[m]] = true;
		status = f->backend->nearest2(f->session, p, pb->cen, far, pb->alloc,
									  pb->dist, ds, f->err);
	}
	while (status == GC_OK && idle < n - p && result->swaps < MAX_SWAPS)
	{
		int			ncand = 0,
					best = -1;

		removal_loss(p, n, pb->alloc, pb->dist, ds, scale, removal);
		while (ncand < GC_PM_SWAP_BATCH && ncand + idle < n - p)
		{
			if (!is_medoid[cursor])
				cand[ncand++] = (int32_t) cursor;
			cursor = (cursor + 1) % n;
		}
		status = f->backend->swap_gains(f->session, p, ncand, cand, scale, removal,
										best_medoid, best_gain, f->err);
		if (status != GC_OK)
			break;
		for (int k = 0; k < ncand; k++)
			if (best_gain[k] < 0 && (best < 0 || best_gain[k] < best_gain[best]))
				best = k;
		if (gc_pm_interrupted(f))
			status = gc_fail(f->err, GC_INTERRUPTED, "interrupted while improving");
		if (best < 0 || status != GC_OK)
		{
			idle += ncand;
			continue;
		}
		is_medoid[pb->cen[best_medoid[best]]] = false;
		is_medoid[cand[best]] = true;
		pb->cen[best_medoid[best]] = cand[best];
		result->swaps++;
		idle = 0;
		status = f->backend->nearest2(f->session, p, pb->cen, far, pb->alloc,
									  pb->dist, ds, f->err);
		if (status == GC_OK)
			gc_pm_report(f, GC_PHASE_ITERATING, pb);
	}
	if (status == GC_OK)
		pb->objective = gc_pm_objective(pb);
	free(is_medoid);
	free(ds);
	free(removal);
	return status;
}

/*
 * The swap improvement over a sample's rows only, in a backend session of
 * its own over a copy of them (same allocator, same row hashes): the
 * sample's centres end at a swap-local optimum of the sample
 */
GcStatus
gc_pm_improve_sample(PmFit *f, PmProblem *sample, GcPmResult *result)
{
	GcRows		sub;
	GcPmParams	params = *f->params;
	PmFit		g = {.backend = f->backend, .params = &params, .rows = &sub,
		.n = sample->nent, .err = f->err, .improvement = GC_PM_IMPROVE_FULL};
	PmProblem	pb = {0};
	GcStatus	status;

	params.p = sample->ncen;
	params.progress = NULL;		/* a part of the sample phase: no objective of all rows */
	if (gc_rows_init(&sub, f->rows->d, f->rows->alloc, f->rows->free, f->err) != GC_OK)
		return f->err->status;
	status = gc_pm_problem_init(&pb, 1, sample->nent, sample->ncen, f->err);
	for (int32_t e = 0; status == GC_OK && e < sample->nent; e++)
	{
		double	   *slot = gc_rows_reserve(&sub, f->err);

		if (slot == NULL)
			status = f->err->status;
		else
		{
			memcpy(slot, gc_rows_get(f->rows, sample->ent[e]), sizeof(double) * sub.d);
			gc_rows_commit(&sub);
		}
	}
	/* the centres as positions in the sample, whose rows are sorted */
	for (int32_t c = 0; status == GC_OK && c < sample->ncen; c++)
	{
		int32_t    *at = bsearch(&sample->cen[c], sample->ent, sample->nent,
								 sizeof(int32_t), gc_pm_int32_cmp);

		pb.cen[c] = (int32_t) (at - sample->ent);
	}
	if (status == GC_OK)
		status = f->backend->open(&sub, NULL, &params, &g.session, f->err);
	if (status == GC_OK)
		status = gc_pm_improve(&g, &pb, result);
	for (int32_t c = 0; status == GC_OK && c < sample->ncen; c++)
		sample->cen[c] = sample->ent[pb.cen[c]];
	if (g.session)
		f->backend->close(g.session);
	gc_pm_problem_release(&pb);
	gc_rows_release(&sub);
	return status;
}
