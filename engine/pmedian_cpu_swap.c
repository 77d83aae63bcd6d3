/*-------------------------------------------------------------------------
 *
 * pmedian_cpu_swap.c
 *	  The CPU backend's part of the swap improvement (pmedian_improve.c):
 *	  every row's nearest and second-nearest medoid, and FasterPAM's swap
 *	  gains of candidates (Schubert & Rousseeuw, "Fast and eager
 *	  k-medoids clustering", 2021), with the results of a plain loop over
 *	  all rows and medoids to the bit, for any number of threads.
 *
 *	  Rows are held in the order of a k-d tree (median splits of the
 *	  widest coordinate, leaves of at most LEAF_ROWS rows), each node with
 *	  its bounding box and the largest second-nearest distance ds of its
 *	  rows.  A row adds to a candidate's gains only when the candidate is
 *	  nearer than ds, so a candidate skips every node whose box is at
 *	  least that far from it (box_bound: exact to the bit).  Gains are
 *	  integers (gc_pm_fixed) summed in any order; candidates run on
 *	  threads, a candidate a block.
 *
 *	  nearest2 after a swap, which replaces one medoid, recomputes only
 *	  the rows whose nearest or second-nearest medoid it was, and compares
 *	  the others with the new medoid (FasterPAM's update), keeping the
 *	  plain loop's answer: the lowest index among equally near medoids,
 *	  and ds the second smallest distance counted with multiplicity.
 *
 * IDENTIFICATION
 *	  engine/pmedian_cpu_swap.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_cpu.h"
#include "pmedian_math.h"

#include <stdlib.h>
#include <string.h>

/* Most rows of a leaf of the k-d tree */
#define LEAF_ROWS 32
/* Deeper than any tree of median splits over int32 positions */
#define STACK_NODES 128

/* gc_pm_dist, with the Euclidean case inlined for the loops here */
static inline double
dist_inline(const double *a, const double *b, int d, int metric)
{
	return metric == GC_PM_EUCLIDEAN ? sqrt(gc_sqdist_exact(a, b, d)) : gc_pm_dist(a, b, d, metric);
}

void
gc_pm_cpu_tree_release(PmCpuTree *tr)
{
	free(tr->first);
	free(tr->last);
	free(tr->right);
	free(tr->lo);
	free(tr->hi);
	free(tr->far);
	free(tr->order);
	free(tr->xs);
	free(tr->nearest);
	free(tr->second);
	free(tr->dn);
	free(tr->ds);
	free(tr->fixed_dn);
	free(tr->fixed_ds);
	free(tr->medoids);
	free(tr->gains);
	memset(tr, 0, sizeof(*tr));
}

/* Move the position of order[lo, hi) whose coordinate dim ranks nth there */
static void
select_nth(const PmCpuSession *s, int dim, int32_t lo, int32_t hi, int32_t nth)
{
	int32_t    *a = s->tree.order;

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
 * The node of positions [lo, hi) and, unless it is a leaf, its subtree:
 * split at the median of the widest coordinate while more than LEAF_ROWS
 * rows, not all equal, remain
 */
static int32_t
build_node(PmCpuSession *s, int32_t lo, int32_t hi)
{
	PmCpuTree  *tr = &s->tree;
	int32_t		v = tr->nnodes++,
				mid = lo + (hi - lo) / 2;
	double	   *blo = tr->lo + (size_t) v * s->d,
			   *bhi = tr->hi + (size_t) v * s->d;
	int			dim = 0;
	double		widest = 0.0;

	for (int j = 0; j < s->d; j++)
	{
		blo[j] = bhi[j] = ROW(s, tr->order[lo])[j];
		for (int32_t t = lo + 1; t < hi; t++)
		{
			double		x = ROW(s, tr->order[t])[j];

			blo[j] = x < blo[j] ? x : blo[j];
			bhi[j] = x > bhi[j] ? x : bhi[j];
		}
		if (bhi[j] - blo[j] > widest)
		{
			widest = bhi[j] - blo[j];
			dim = j;
		}
	}
	tr->first[v] = lo;
	tr->last[v] = hi;
	tr->right[v] = -1;
	if (hi - lo <= LEAF_ROWS || widest == 0.0)
		return v;
	select_nth(s, dim, lo, hi, mid);
	(void) build_node(s, lo, mid);
	tr->right[v] = build_node(s, mid, hi);
	return v;
}

/*
 * The k-d tree, the rows in its order and the per-position arrays.  A
 * split leaves at least LEAF_ROWS / 2 rows a side, so there are at most
 * n / (LEAF_ROWS / 2) + 1 leaves, and fewer than twice as many nodes.
 */
/* Most nodes of the tree over n rows */
static int64_t
tree_nodes(int64_t n)
{
	return 2 * (n / (LEAF_ROWS / 2) + 1);
}

size_t
gc_pmedian_cpu_swap_bytes(int64_t n, int d, int p)
{
	size_t		per_node = 3 * sizeof(int32_t) + (2 * (size_t) d + 1) * sizeof(double);
	size_t		per_row = 3 * sizeof(int32_t) + ((size_t) d + 2) * sizeof(double) +
		2 * sizeof(int64_t);

	return (size_t) tree_nodes(n) * per_node + (size_t) n * per_row +
		(size_t) p * (sizeof(int32_t) + GC_CPU_MAX_THREADS * sizeof(int64_t));
}

static GcStatus
build_tree(PmCpuSession *s, int p, GcError *err)
{
	PmCpuTree  *tr = &s->tree;
	int64_t		n = s->n,
				most = tree_nodes(n);

	tr->first = malloc(sizeof(int32_t) * most);
	tr->last = malloc(sizeof(int32_t) * most);
	tr->right = malloc(sizeof(int32_t) * most);
	tr->lo = malloc(sizeof(double) * most * s->d);
	tr->hi = malloc(sizeof(double) * most * s->d);
	tr->far = malloc(sizeof(double) * most);
	tr->order = malloc(sizeof(int32_t) * n);
	tr->xs = malloc(sizeof(double) * n * s->d);
	tr->nearest = malloc(sizeof(int32_t) * n);
	tr->second = malloc(sizeof(int32_t) * n);
	tr->dn = malloc(sizeof(double) * n);
	tr->ds = malloc(sizeof(double) * n);
	tr->fixed_dn = malloc(sizeof(int64_t) * n);
	tr->fixed_ds = malloc(sizeof(int64_t) * n);
	tr->medoids = malloc(sizeof(int32_t) * p);
	tr->gains = malloc(sizeof(int64_t) * GC_CPU_MAX_THREADS * p);
	if (!tr->first || !tr->last || !tr->right || !tr->lo || !tr->hi || !tr->far ||
		!tr->order || !tr->xs || !tr->nearest || !tr->second || !tr->dn || !tr->ds ||
		!tr->fixed_dn || !tr->fixed_ds || !tr->medoids || !tr->gains)
	{
		gc_pm_cpu_tree_release(tr);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for swaps");
	}
	for (int64_t i = 0; i < n; i++)
		tr->order[i] = (int32_t) i;
	tr->nnodes = 0;
	(void) build_node(s, 0, (int32_t) n);
	for (int64_t t = 0; t < n; t++)
		memcpy(tr->xs + (size_t) t * s->d, ROW(s, tr->order[t]), sizeof(double) * s->d);
	return GC_OK;
}

typedef struct Nearest2Pass
{
	PmCpuSession *s;
	int			p;
	const int32_t *medoids;
	int			changed;		/* the one medoid replaced since the last call, or -1 */
	double		far;
	int32_t    *nearest;		/* the caller's, by row */
	double	   *dn;
	double	   *ds;
} Nearest2Pass;

/* Nearest and second-nearest of all medoids, as the plain loop finds them */
static void
scan_medoids(const Nearest2Pass *pass, const double *x, int64_t t)
{
	PmCpuSession *s = pass->s;
	PmCpuTree  *tr = &s->tree;
	double		d1 = pass->far,
				d2 = pass->far;
	int32_t		m1 = 0,
				m2 = -1;

	for (int m = 0; m < pass->p; m++)
	{
		double		dm = dist_inline(x, ROW(s, pass->medoids[m]), s->d, s->params->metric);

		if (dm < d1)
		{
			d2 = d1;
			m2 = m > 0 ? m1 : -1;
			d1 = dm;
			m1 = m;
		}
		else if (dm < d2)
		{
			d2 = dm;
			m2 = m;
		}
	}
	tr->nearest[t] = m1;
	tr->second[t] = m2;
	tr->dn[t] = d1;
	tr->ds[t] = d2;
}

/*
 * Medoid j replaced, and neither nearest nor second-nearest: the new
 * medoid enters the two smallest distances where it is near enough
 */
static void
update_medoid(const Nearest2Pass *pass, const double *x, int64_t t, int j)
{
	PmCpuSession *s = pass->s;
	PmCpuTree  *tr = &s->tree;
	double		dc = dist_inline(x, ROW(s, pass->medoids[j]), s->d, s->params->metric);

	if (dc < tr->dn[t] || (dc == tr->dn[t] && j < tr->nearest[t]))
	{
		tr->second[t] = tr->nearest[t];
		tr->ds[t] = tr->dn[t];
		tr->nearest[t] = j;
		tr->dn[t] = dc;
	}
	else if (dc < tr->ds[t])
	{
		tr->second[t] = j;
		tr->ds[t] = dc;
	}
}

/* Nearest and second-nearest medoid of the rows at positions [first, first + count) */
static void
nearest2_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	Nearest2Pass *pass = ctx;
	PmCpuTree  *tr = &pass->s->tree;
	int			j = pass->changed;

	(void) worker;
	(void) chunk;
	for (int64_t t = first; t < first + count; t++)
	{
		const double *x = tr->xs + (size_t) t * pass->s->d;
		int32_t		row = tr->order[t];

		if (j >= 0 && tr->nearest[t] != j && tr->second[t] != j)
			update_medoid(pass, x, t, j);
		else
			scan_medoids(pass, x, t);
		pass->nearest[row] = tr->nearest[t];
		pass->dn[row] = tr->dn[t];
		pass->ds[row] = tr->ds[t];
	}
}

/* The index of the one medoid that differs from the last call's, else -1 */
static int
replaced_medoid(const PmCpuTree *tr, int p, const int32_t *medoids)
{
	int			changed = -1;

	if (tr->p != p)
		return -1;
	for (int m = 0; m < p; m++)
		if (tr->medoids[m] != medoids[m])
		{
			if (changed >= 0)
				return -1;
			changed = m;
		}
	return changed;
}

/*
 * Nearest and second-nearest medoid of every row (an update where one
 * medoid was replaced), then each node's largest ds, children first
 */
GcStatus
gc_pm_cpu_nearest2(void *session, int p, const int32_t *medoids, double far,
				   int32_t *nearest, double *dn, double *ds, GcError *err)
{
	PmCpuSession *s = session;
	PmCpuTree  *tr = &s->tree;
	Nearest2Pass pass = {s, p, medoids, -1, far, nearest, dn, ds};
	GcStatus	status;

	if (tr->order == NULL && build_tree(s, p, err) != GC_OK)
		return err->status;
	pass.changed = replaced_medoid(tr, p, medoids);
	tr->p = 0;					/* until the pass is through */
	tr->fixed_scale = 0.0;
	status = gc_pm_cpu_run_items(s, s->n, (int64_t) p * s->d, 0, nearest2_block, &pass,
								 err, "interrupted while improving");
	if (status != GC_OK)
		return status;
	memcpy(tr->medoids, medoids, sizeof(int32_t) * p);
	tr->p = p;
	for (int32_t v = tr->nnodes - 1; v >= 0; v--)
	{
		double		most = 0.0;

		if (tr->right[v] >= 0)
			most = tr->far[v + 1] > tr->far[tr->right[v]] ? tr->far[v + 1] : tr->far[tr->right[v]];
		else
			for (int32_t t = tr->first[v]; t < tr->last[v]; t++)
				most = tr->ds[t] > most ? tr->ds[t] : most;
		tr->far[v] = most;
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
box_bound(const double *c, const double *lo, const double *hi, int d, int metric)
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
 * The rows of leaf v into candidate c's gains: gc_pm_swap_part's parts,
 * with the fixed-point dn and ds of each row computed once
 */
static int64_t
leaf_gains(const GainsPass *pass, int32_t v, const double *xc, int64_t *gains)
{
	const PmCpuTree *tr = &pass->s->tree;
	int			d = pass->s->d,
				metric = pass->s->params->metric;
	int64_t		own = 0;

	for (int32_t t = tr->first[v]; t < tr->last[v]; t++)
	{
		double		doc = dist_inline(tr->xs + (size_t) t * d, xc, d, metric);
		int64_t		fd;

		if (doc >= tr->ds[t])
			continue;			/* contributes nothing */
		fd = gc_pm_fixed(doc, pass->scale);
		if (doc < tr->dn[t])
		{
			own += fd - tr->fixed_dn[t];
			gains[tr->nearest[t]] += tr->fixed_dn[t] - tr->fixed_ds[t];
		}
		else
			gains[tr->nearest[t]] += fd - tr->fixed_ds[t];
	}
	return own;
}

/*
 * FasterPAM's gain of swapping candidates [first, first + count) with
 * their best medoids (lowest index on ties), skipping the nodes too far
 * to contribute
 */
static void
gains_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	GainsPass  *pass = ctx;
	const PmCpuTree *tr = &pass->s->tree;
	int			d = pass->s->d,
				metric = pass->s->params->metric;
	int64_t    *gains = tr->gains + (size_t) worker * pass->p;

	(void) chunk;
	for (int64_t k = first; k < first + count; k++)
	{
		const double *xc = ROW(pass->s, pass->cand[k]);
		int32_t		stack[STACK_NODES];
		int			top = 0,
					bm = 0;
		int64_t		own = 0;

		memcpy(gains, pass->removal, sizeof(int64_t) * pass->p);
		stack[top++] = 0;
		while (top > 0)
		{
			int32_t		v = stack[--top];

			if (box_bound(xc, tr->lo + (size_t) v * d, tr->hi + (size_t) v * d, d,
						  metric) >= tr->far[v])
				continue;
			if (tr->right[v] < 0)
				own += leaf_gains(pass, v, xc, gains);
			else
			{
				stack[top++] = tr->right[v];
				stack[top++] = v + 1;
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
 * candidate a block (polled as n d units, its work without the tree)
 */
GcStatus
gc_pm_cpu_swap_gains(void *session, int p, int ncand, const int32_t *cand,
					 double scale, const int64_t *removal, int32_t *best_medoid,
					 int64_t *best_gain, GcError *err)
{
	PmCpuSession *s = session;
	PmCpuTree  *tr = &s->tree;
	GainsPass	pass = {s, p, cand, scale, removal, best_medoid, best_gain};

	if (tr->p != p)
		return gc_fail(err, GC_ERR_RANGE, "swap gains without nearest medoids");
	if (tr->fixed_scale != scale)
	{
		for (int64_t t = 0; t < s->n; t++)
		{
			tr->fixed_dn[t] = gc_pm_fixed(tr->dn[t], scale);
			tr->fixed_ds[t] = gc_pm_fixed(tr->ds[t], scale);
		}
		tr->fixed_scale = scale;
	}
	return gc_pm_cpu_run_items(s, ncand, s->n * s->d, 1, gains_block, &pass, err,
							   "interrupted while improving");
}
