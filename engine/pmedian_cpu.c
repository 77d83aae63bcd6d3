/*-------------------------------------------------------------------------
 *
 * pmedian_cpu.c
 *	  The CPU reference backend of the p-median engine: allocation of
 *	  entities to centres (the paper's Algorithm 2, with penalties), the
 *	  within-cluster sums of dissimilarities (Algorithm 8, run serially),
 *	  the D-sampling race, and FasterPAM's swap gains (Schubert &
 *	  Rousseeuw, 2021).  It is the oracle of the CUDA backend and the
 *	  fallback where no GPU exists; loops run in the same order and with
 *	  the same arithmetic (pmedian_math.h) as the kernels.
 *
 * IDENTIFICATION
 *	  engine/pmedian_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_engine.h"
#include "pmedian_math.h"

#include <float.h>
#include <stdlib.h>

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
	int32_t    *nearest;		/* n: from nearest2 */
	double	   *dn;
	double	   *ds;
	int64_t    *gains;			/* p: swap gains of one candidate */
	GcPoll		poll;			/* work since the interrupt hook was last polled */
} PmCpuSession;

static void cpu_close(void *session);

#define ROW(s, r) ((s)->x + (size_t) (r) * (s)->d)

/*
 * Count evaluations distances of d coordinates each and poll the
 * interrupt hook as the rule of gc_poll says
 */
static bool
poll_interrupt(PmCpuSession *s, int64_t evaluations)
{
	return gc_poll(&s->poll, evaluations * s->d);
}

static GcStatus
cpu_open(const GcRows *rows, const double *demand, const GcPmParams *params,
		 void **session, GcError *err)
{
	PmCpuSession *s = calloc(1, sizeof(PmCpuSession));

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	s->params = params;
	s->poll.interrupted = params->interrupted;
	s->n = rows->n;
	s->d = rows->d;
	s->demand = demand;
	s->x = malloc(sizeof(double) * rows->n * rows->d);
	s->hashes = malloc(sizeof(uint64_t) * rows->n);
	if (s->x == NULL || s->hashes == NULL)
	{
		cpu_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	}
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		if (!gc_copy_polled(s->x + (size_t) chunk->first_row * s->d, chunk->values,
							sizeof(double) * s->d * chunk->count, &s->poll))
		{
			cpu_close(s);
			return gc_fail(err, GC_INTERRUPTED, "interrupted while copying the rows");
		}
		memcpy(s->hashes + chunk->first_row, chunk->hashes,
			   sizeof(uint64_t) * chunk->count);
	}
	*session = s;
	return GC_OK;
}

static void
cpu_close(void *session)
{
	PmCpuSession *s = session;

	free(s->x);
	free(s->hashes);
	free(s->mind);
	free(s->nearest);
	free(s->dn);
	free(s->ds);
	free(s->gains);
	free(s);
}

static GcStatus
cpu_set_entities(void *session, int32_t nent, const int32_t *ent,
				 const int32_t *group, GcError *err)
{
	PmCpuSession *s = session;

	free(s->mind);
	s->mind = malloc(sizeof(double) * (nent > 0 ? nent : 1));
	if (s->mind == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for entities");
	s->nent = nent;
	s->ent = ent;
	s->group = group;
	return GC_OK;
}

/*
 * Allocate each entity to the cheapest centre of its group
 */
static GcStatus
cpu_allocate(void *session, int32_t ncen, const int32_t *cen,
			 const int32_t *cen_first, int ngroups, const double *penalty,
			 int32_t *alloc, double *dist, GcError *err)
{
	PmCpuSession *s = session;
	int			metric = s->params->metric;

	(void) ncen;
	(void) ngroups;
	for (int32_t e = 0; e < s->nent; e++)
	{
		int32_t		row = s->ent[e];
		int			g = s->group[e];
		double		q = s->demand ? s->demand[row] : 0.0;
		double		best = DBL_MAX,
					bestd = 0.0;
		int32_t		bestc = cen_first[g];

		for (int32_t c = cen_first[g]; c < cen_first[g + 1]; c++)
		{
			double		dc,
						cost;

			if (cen[c] == row)
			{
				bestc = c;
				bestd = 0.0;
				break;
			}
			if (poll_interrupt(s, 1))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during allocation");
			dc = gc_pm_dist(ROW(s, row), ROW(s, cen[c]), s->d, metric);
			cost = penalty ? gc_pm_cost(dc, penalty[c], q) : dc;
			if (cost < best)
			{
				best = cost;
				bestd = dc;
				bestc = c;
			}
		}
		alloc[e] = bestc;
		dist[e] = bestd;
	}
	return GC_OK;
}

/*
 * Each member's sum of dissimilarities to the rest of its cluster
 */
static GcStatus
cpu_cluster_sums(void *session, int32_t ncen, const int32_t *members,
				 const int32_t *first, double *sums, GcError *err)
{
	PmCpuSession *s = session;
	int			metric = s->params->metric;

	for (int32_t c = 0; c < ncen; c++)
	{
		for (int32_t t = first[c]; t < first[c + 1]; t++)
		{
			const double *xt = ROW(s, members[t]);
			double		sum = 0.0;

			for (int32_t u = first[c]; u < first[c + 1]; u++)
			{
				if (poll_interrupt(s, 1))
					return gc_fail(err, GC_INTERRUPTED, "interrupted while locating centres");
				if (u != t)
					sum = sum + gc_pm_dist(xt, ROW(s, members[u]), s->d, metric);
			}
			sums[t] = sum;
		}
	}
	return GC_OK;
}

/*
 * One step of the D-sampling race: weights are distances to the nearest
 * centre so far (uniform at step 0)
 */
static GcStatus
cpu_seed_step(void *session, int32_t centre, uint64_t seed, int step,
			  uint64_t *winner, GcError *err)
{
	PmCpuSession *s = session;
	uint64_t	best = GC_RACE_NONE;

	for (int32_t e = 0; e < s->nent; e++)
	{
		int32_t		row = s->ent[e];
		double		w = 1.0;
		uint64_t	key;

		if (poll_interrupt(s, 1))
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		if (centre >= 0)
		{
			double		dc = gc_pm_dist(ROW(s, row), ROW(s, centre), s->d,
										s->params->metric);

			double		m = step == 1 ? DBL_MAX : s->mind[e];

			if (dc < m)
				m = dc;
			s->mind[e] = m;
			w = m;
		}
		key = gc_race_key(gc_unit_draw(s->hashes[row], seed, (uint64_t) step), w, e);
		if (key < best)
			best = key;
	}
	*winner = best;
	return GC_OK;
}

/*
 * Nearest and second-nearest medoid of every row
 */
static GcStatus
cpu_nearest2(void *session, int p, const int32_t *medoids, double far,
			 int32_t *nearest, double *dn, double *ds, GcError *err)
{
	PmCpuSession *s = session;

	if (s->nearest == NULL)
	{
		s->nearest = malloc(sizeof(int32_t) * s->n);
		s->dn = malloc(sizeof(double) * s->n);
		s->ds = malloc(sizeof(double) * s->n);
		s->gains = malloc(sizeof(int64_t) * p);
		if (!s->nearest || !s->dn || !s->ds || !s->gains)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for swaps");
	}
	for (int64_t i = 0; i < s->n; i++)
	{
		double		d1 = far,
					d2 = far;
		int32_t		m1 = 0;

		for (int m = 0; m < p; m++)
		{
			double		dm;

			if (poll_interrupt(s, 1))
				return gc_fail(err, GC_INTERRUPTED, "interrupted while improving");
			dm = gc_pm_dist(ROW(s, i), ROW(s, medoids[m]), s->d, s->params->metric);

			if (dm < d1)
			{
				d2 = d1;
				d1 = dm;
				m1 = m;
			}
			else if (dm < d2)
				d2 = dm;
		}
		s->nearest[i] = nearest[i] = m1;
		s->dn[i] = dn[i] = d1;
		s->ds[i] = ds[i] = d2;
	}
	return GC_OK;
}

/*
 * FasterPAM's gain of swapping each candidate with its best medoid
 */
static GcStatus
cpu_swap_gains(void *session, int p, int ncand, const int32_t *cand,
			   double scale, const int64_t *removal, int32_t *best_medoid,
			   int64_t *best_gain, GcError *err)
{
	PmCpuSession *s = session;

	for (int k = 0; k < ncand; k++)
	{
		const double *xc = ROW(s, cand[k]);
		int64_t		own = 0;
		int			bm = 0;

		memcpy(s->gains, removal, sizeof(int64_t) * p);
		for (int64_t i = 0; i < s->n; i++)
		{
			long long	o,
						nr;

			if (poll_interrupt(s, 1))
				return gc_fail(err, GC_INTERRUPTED, "interrupted while improving");
			gc_pm_swap_part(gc_pm_dist(ROW(s, i), xc, s->d, s->params->metric),
							s->dn[i], s->ds[i], scale, &o, &nr);
			own += o;
			s->gains[s->nearest[i]] += nr;
		}
		for (int m = 1; m < p; m++)
			if (s->gains[m] < s->gains[bm])
				bm = m;
		best_medoid[k] = bm;
		best_gain[k] = s->gains[bm] + own;
	}
	return GC_OK;
}

const GcPmBackend gc_pmedian_cpu_backend = {
	"cpu",
	cpu_open,
	cpu_set_entities,
	cpu_allocate,
	cpu_cluster_sums,
	cpu_seed_step,
	cpu_nearest2,
	cpu_swap_gains,
	cpu_close,
};
