/*-------------------------------------------------------------------------
 *
 * pmedian_cpu.c
 *	  The CPU reference backend of the p-median engine: allocation of
 *	  entities to centres (the paper's Algorithm 2, with penalties), the
 *	  within-cluster sums of dissimilarities (Algorithm 8, run serially),
 *	  the D-sampling race, and FasterPAM's swap gains (Schubert &
 *	  Rousseeuw, 2021).  It is the oracle of the CUDA backend and the
 *	  fallback where no GPU exists; every distance is computed with the
 *	  same arithmetic (pmedian_math.h) as the kernels.
 *
 *	  The swap improvement's passes run on threads (cpu_threads.h):
 *	  nearest2 a block of rows per thread, swap_gains a candidate per
 *	  thread.  Its rows are held in the leaf order of a k-d tree, each leaf
 *	  with its bounding box and the largest second-nearest distance of its
 *	  rows; a candidate skips every leaf whose box is at least that far
 *	  from it, whose rows' contributions to its gains are all zero (see
 *	  leaf_bound).  Gains are integers, summed in any order: the results
 *	  are the same as a plain loop's, for any number of threads.
 *
 * IDENTIFICATION
 *	  engine/pmedian_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_threads.h"
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
	int			threads;		/* the improvement's threads, 0: every core */
	/* the k-d tree of the swap improvement, built by the first nearest2 */
	int32_t		nleaves;
	int32_t    *order;			/* n: the row at each position */
	double	   *xs;				/* n * d: the rows in position order */
	int32_t    *leaf_first;		/* nleaves + 1 positions */
	double	   *leaf_lo;		/* nleaves * d: bounding boxes */
	double	   *leaf_hi;
	double	   *leaf_far;		/* nleaves: largest ds of the leaf's rows */
	int32_t    *nearest;		/* n, by position: from nearest2 */
	double	   *dn;
	double	   *ds;
	int64_t    *gains;			/* GC_CPU_MAX_THREADS * p: swap gains of a candidate */
	GcPoll		poll;			/* work since the interrupt hook was last polled */
} PmCpuSession;

/* Most rows of a leaf of the k-d tree */
#define LEAF_ROWS 32

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

/*
 * A pass over count items (rows by position, or candidates) on the
 * session's threads, units of work each, blocks of block_items (0: about
 * GC_POLL_WORK units); the calling thread polls
 */
static GcStatus
run_items(PmCpuSession *s, int64_t count, int64_t units, int block_items,
		  GcBlockFn fn, void *ctx, GcError *err, const char *what)
{
	GcChunk		chunk = {.first_row = 0, .count = count};
	GcRows		items = {.d = s->d, .n = count, .nchunks = 1, .chunks = &chunk};
	GcCpuPass	pass = {.rows = &items, .row_units = units, .block_rows = block_items,
		.fn = fn, .ctx = ctx};

	pass.workers = gc_cpu_threads(s->threads, count * units);
	return gc_cpu_run_blocks(&pass, &s->poll, err, what);
}

static GcStatus
cpu_open(const GcRows *rows, const double *demand, const GcPmParams *params,
		 void **session, GcError *err)
{
	PmCpuSession *s = calloc(1, sizeof(PmCpuSession));

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	s->params = params;
	s->threads = params->cpu_threads;
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
	free(s->order);
	free(s->xs);
	free(s->leaf_first);
	free(s->leaf_lo);
	free(s->leaf_hi);
	free(s->leaf_far);
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

typedef struct AllocatePass
{
	PmCpuSession *s;
	const int32_t *cen;
	const int32_t *cen_first;
	const double *penalty;
	int32_t    *alloc;
	double	   *dist;
} AllocatePass;

/* The cheapest centre of the group of entities [first, first + count) */
static void
allocate_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	AllocatePass *pass = ctx;
	PmCpuSession *s = pass->s;
	const int32_t *cen = pass->cen;
	int			metric = s->params->metric;

	(void) worker;
	(void) chunk;
	for (int64_t e = first; e < first + count; e++)
	{
		int32_t		row = s->ent[e];
		int			g = s->group[e];
		double		q = s->demand ? s->demand[row] : 0.0;
		double		best = DBL_MAX,
					bestd = 0.0;
		int32_t		bestc = pass->cen_first[g];

		for (int32_t c = pass->cen_first[g]; c < pass->cen_first[g + 1]; c++)
		{
			double		dc,
						cost;

			if (cen[c] == row)
			{
				bestc = c;
				bestd = 0.0;
				break;
			}
			dc = gc_pm_dist(ROW(s, row), ROW(s, cen[c]), s->d, metric);
			cost = pass->penalty ? gc_pm_cost(dc, pass->penalty[c], q) : dc;
			if (cost < best)
			{
				best = cost;
				bestd = dc;
				bestc = c;
			}
		}
		pass->alloc[e] = bestc;
		pass->dist[e] = bestd;
	}
}

/*
 * Allocate each entity to the cheapest centre of its group, on threads
 * (an entity polled as the mean group's centres)
 */
static GcStatus
cpu_allocate(void *session, int32_t ncen, const int32_t *cen,
			 const int32_t *cen_first, int ngroups, const double *penalty,
			 int32_t *alloc, double *dist, GcError *err)
{
	PmCpuSession *s = session;
	AllocatePass pass = {s, cen, cen_first, penalty, alloc, dist};
	int64_t		per_entity = (ncen + ngroups - 1) / (ngroups > 0 ? ngroups : 1);

	return run_items(s, s->nent, (per_entity > 0 ? per_entity : 1) * s->d, 0,
					 allocate_block, &pass, err, "interrupted during allocation");
}

typedef struct SumsPass
{
	PmCpuSession *s;
	const int32_t *members;
	const int32_t *first;
	const int32_t *cluster;		/* of each member */
	double	   *sums;
} SumsPass;

/* The sums of members [from, from + count), each over its cluster in order */
static void
sums_block(void *ctx, int worker, const GcChunk *chunk, int64_t from, int64_t count)
{
	SumsPass   *pass = ctx;
	PmCpuSession *s = pass->s;
	int			metric = s->params->metric;

	(void) worker;
	(void) chunk;
	for (int64_t t = from; t < from + count; t++)
	{
		int32_t		c = pass->cluster[t];
		const double *xt = ROW(s, pass->members[t]);
		double		sum = 0.0;

		for (int32_t u = pass->first[c]; u < pass->first[c + 1]; u++)
			if (u != t)
				sum = sum + gc_pm_dist(xt, ROW(s, pass->members[u]), s->d, metric);
		pass->sums[t] = sum;
	}
}

/*
 * Each member's sum of dissimilarities to the rest of its cluster, on
 * threads (a member polled as the mean over members of their cluster's
 * size, so the pass as its distances)
 */
static GcStatus
cpu_cluster_sums(void *session, int32_t ncen, const int32_t *members,
				 const int32_t *first, double *sums, GcError *err)
{
	PmCpuSession *s = session;
	int32_t		nmem = first[ncen];
	int32_t    *cluster = malloc(sizeof(int32_t) * (nmem > 0 ? nmem : 1));
	SumsPass	pass = {s, members, first, cluster, sums};
	int64_t		pairs = 0;
	GcStatus	status;

	if (cluster == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the cluster sums");
	for (int32_t c = 0; c < ncen; c++)
	{
		int64_t		size = first[c + 1] - first[c];

		for (int32_t t = first[c]; t < first[c + 1]; t++)
			cluster[t] = c;
		pairs += size * size;
	}
	status = nmem == 0 ? GC_OK :
		run_items(s, nmem, (pairs / nmem > 0 ? pairs / nmem : 1) * s->d, 0,
				  sums_block, &pass, err, "interrupted while locating centres");
	free(cluster);
	return status;
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

/* Move the position of order[lo, hi) whose coordinate dim ranks nth there */
static void
select_nth(const PmCpuSession *s, int dim, int32_t lo, int32_t hi, int32_t nth)
{
	int32_t    *a = s->order;

	while (hi - lo > 1)
	{
		double		pivot = ROW(s, a[lo + (hi - lo) / 2])[dim];
		int32_t		i = lo,
					j = hi - 1;

		while (i <= j)
		{
			while (ROW(s, a[i])[dim] < pivot)
				i++;
			while (ROW(s, a[j])[dim] > pivot)
				j--;
			if (i <= j)
			{
				int32_t		t = a[i];

				a[i++] = a[j];
				a[j--] = t;
			}
		}
		if (nth <= j)
			hi = j + 1;
		else if (nth >= i)
			lo = i;
		else
			return;
	}
}

/*
 * The k-d tree over positions [lo, hi) of order: split at the median of
 * the widest coordinate until at most LEAF_ROWS rows (or all equal)
 * remain; leaves are appended in position order with their boxes
 */
static void
build_leaves(PmCpuSession *s, int32_t lo, int32_t hi)
{
	double	   *blo = s->leaf_lo + (size_t) s->nleaves * s->d,
			   *bhi = s->leaf_hi + (size_t) s->nleaves * s->d;
	int			dim = 0;
	double		widest = 0.0;

	for (int j = 0; j < s->d; j++)
	{
		blo[j] = bhi[j] = ROW(s, s->order[lo])[j];
		for (int32_t t = lo + 1; t < hi; t++)
		{
			double		v = ROW(s, s->order[t])[j];

			blo[j] = v < blo[j] ? v : blo[j];
			bhi[j] = v > bhi[j] ? v : bhi[j];
		}
		if (bhi[j] - blo[j] > widest)
		{
			widest = bhi[j] - blo[j];
			dim = j;
		}
	}
	if (hi - lo <= LEAF_ROWS || widest == 0.0)
	{
		s->leaf_first[s->nleaves++] = lo;
		return;
	}
	select_nth(s, dim, lo, hi, lo + (hi - lo) / 2);
	build_leaves(s, lo, lo + (hi - lo) / 2);
	build_leaves(s, lo + (hi - lo) / 2, hi);
}

/* The k-d tree, the rows in its order, and the per-position arrays */
static GcStatus
build_tree(PmCpuSession *s, GcError *err)
{
	int64_t		n = s->n;

	s->order = malloc(sizeof(int32_t) * n);
	s->xs = malloc(sizeof(double) * n * s->d);
	s->leaf_first = malloc(sizeof(int32_t) * (n + 1));
	s->leaf_lo = malloc(sizeof(double) * n * s->d);
	s->leaf_hi = malloc(sizeof(double) * n * s->d);
	s->leaf_far = malloc(sizeof(double) * n);
	s->nearest = malloc(sizeof(int32_t) * n);
	s->dn = malloc(sizeof(double) * n);
	s->ds = malloc(sizeof(double) * n);
	if (!s->order || !s->xs || !s->leaf_first || !s->leaf_lo || !s->leaf_hi ||
		!s->leaf_far || !s->nearest || !s->dn || !s->ds)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for swaps");
	for (int64_t i = 0; i < n; i++)
		s->order[i] = (int32_t) i;
	s->nleaves = 0;
	build_leaves(s, 0, (int32_t) n);
	s->leaf_first[s->nleaves] = (int32_t) n;
	for (int64_t t = 0; t < n; t++)
		memcpy(s->xs + (size_t) t * s->d, ROW(s, s->order[t]), sizeof(double) * s->d);
	return GC_OK;
}

/* gc_pm_dist, with the Euclidean case inlined for the improvement's loops */
static inline double
dist_inline(const double *a, const double *b, int d, int metric)
{
	return metric == GC_PM_EUCLIDEAN ? sqrt(gc_sqdist_exact(a, b, d)) : gc_pm_dist(a, b, d, metric);
}

typedef struct Nearest2Pass
{
	PmCpuSession *s;
	int			p;
	const int32_t *medoids;
	double		far;
	int32_t    *nearest;		/* the caller's, by row */
	double	   *dn;
	double	   *ds;
} Nearest2Pass;

/* Nearest and second-nearest medoid of the rows at positions [first, first + count) */
static void
nearest2_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	Nearest2Pass *pass = ctx;
	PmCpuSession *s = pass->s;

	(void) worker;
	(void) chunk;
	for (int64_t t = first; t < first + count; t++)
	{
		const double *xt = s->xs + (size_t) t * s->d;
		int32_t		row = s->order[t];
		double		d1 = pass->far,
					d2 = pass->far;
		int32_t		m1 = 0;

		for (int m = 0; m < pass->p; m++)
		{
			double		dm = dist_inline(xt, ROW(s, pass->medoids[m]), s->d,
										 s->params->metric);

			if (dm < d1)
			{
				d2 = d1;
				d1 = dm;
				m1 = m;
			}
			else if (dm < d2)
				d2 = dm;
		}
		s->nearest[t] = pass->nearest[row] = m1;
		s->dn[t] = pass->dn[row] = d1;
		s->ds[t] = pass->ds[row] = d2;
	}
}

/*
 * Nearest and second-nearest medoid of every row, then each leaf's
 * largest second-nearest distance
 */
static GcStatus
cpu_nearest2(void *session, int p, const int32_t *medoids, double far,
			 int32_t *nearest, double *dn, double *ds, GcError *err)
{
	PmCpuSession *s = session;
	Nearest2Pass pass = {s, p, medoids, far, nearest, dn, ds};
	GcStatus	status;

	if (s->order == NULL && build_tree(s, err) != GC_OK)
		return err->status;
	status = run_items(s, s->n, (int64_t) p * s->d, 0, nearest2_block, &pass, err,
					   "interrupted while improving");
	if (status != GC_OK)
		return status;
	for (int32_t l = 0; l < s->nleaves; l++)
	{
		double		most = 0.0;

		for (int32_t t = s->leaf_first[l]; t < s->leaf_first[l + 1]; t++)
			most = s->ds[t] > most ? s->ds[t] : most;
		s->leaf_far[l] = most;
	}
	return GC_OK;
}

/*
 * A lower bound on gc_pm_dist(x, c) for every row x in the box [lo, hi]:
 * the same sum over coordinates of the gap from c to the box, which is
 * 0 or no more than |x_j - c_j|.  Rounding is monotone (no fused
 * multiply-add) and a - b = -(b - a) exactly, so each rounded term, each
 * partial sum and the root are at most those of gc_pm_dist: the bound
 * holds to the bit.  0 for cosine, which has no such bound.
 */
static double
leaf_bound(const double *c, const double *lo, const double *hi, int d, int metric)
{
	double		s = 0.0;

	if (metric == GC_PM_COSINE)
		return 0.0;
	for (int j = 0; j < d; j++)
	{
		double		gap = c[j] < lo[j] ? PM_SUB(lo[j], c[j]) :
			c[j] > hi[j] ? PM_SUB(c[j], hi[j]) : 0.0;

		s = metric == GC_PM_MANHATTAN ? PM_ADD(s, gap) : gc_sqdist_add(s, gap, 0.0);
	}
	return metric == GC_PM_EUCLIDEAN ? sqrt(s) : s;
}

typedef struct GainsPass
{
	PmCpuSession *s;
	int			p;
	const int32_t *cand;
	double		scale;
	const int64_t *removal;
	int32_t    *best_medoid;
	int64_t    *best_gain;
} GainsPass;

/*
 * FasterPAM's gain of swapping candidates [first, first + count) with
 * their best medoids.  A row contributes only where the candidate is
 * nearer than its second-nearest medoid (gc_pm_swap_part): leaves whose
 * bound is at least their largest such distance are skipped whole.
 */
static void
gains_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	GainsPass  *pass = ctx;
	PmCpuSession *s = pass->s;
	int			d = s->d,
				metric = s->params->metric;
	int64_t    *gains = s->gains + (size_t) worker * pass->p;

	(void) chunk;
	for (int64_t k = first; k < first + count; k++)
	{
		const double *xc = ROW(s, pass->cand[k]);
		int64_t		own = 0;
		int			bm = 0;

		memcpy(gains, pass->removal, sizeof(int64_t) * pass->p);
		for (int32_t l = 0; l < s->nleaves; l++)
		{
			if (leaf_bound(xc, s->leaf_lo + (size_t) l * d, s->leaf_hi + (size_t) l * d,
						   d, metric) >= s->leaf_far[l])
				continue;
			for (int32_t t = s->leaf_first[l]; t < s->leaf_first[l + 1]; t++)
			{
				double		doc = dist_inline(s->xs + (size_t) t * d, xc, d, metric);
				long long	o,
							nr;

				if (doc >= s->ds[t])
					continue;	/* contributes nothing */
				gc_pm_swap_part(doc, s->dn[t], s->ds[t], pass->scale, &o, &nr);
				own += o;
				gains[s->nearest[t]] += nr;
			}
		}
		for (int m = 1; m < pass->p; m++)
			if (gains[m] < gains[bm])
				bm = m;
		pass->best_medoid[k] = bm;
		pass->best_gain[k] = gains[bm] + own;
	}
}

/*
 * FasterPAM's gain of swapping each candidate with its best medoid, a
 * candidate a block (polled as n d units, its work without the bound)
 */
static GcStatus
cpu_swap_gains(void *session, int p, int ncand, const int32_t *cand,
			   double scale, const int64_t *removal, int32_t *best_medoid,
			   int64_t *best_gain, GcError *err)
{
	PmCpuSession *s = session;
	GainsPass	pass = {s, p, cand, scale, removal, best_medoid, best_gain};

	if (s->gains == NULL)
	{
		s->gains = malloc(sizeof(int64_t) * GC_CPU_MAX_THREADS * p);
		if (s->gains == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for swaps");
	}
	return run_items(s, ncand, s->n * s->d, 1, gains_block, &pass, err,
					 "interrupted while improving");
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
