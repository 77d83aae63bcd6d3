/*-------------------------------------------------------------------------
 *
 * pmedian_repair.c
 *	  Hard capacities for the p-median engine: the allocation left by the
 *	  Lagrangean phase (soft capacities) is repaired, the medoids fixed,
 *	  until no medoid's load exceeds the capacity:
 *
 *	  - each overloaded medoid in index order gives up rows, the one that
 *		adds the least distance first, each to the nearest medoid with room
 *		for its demand, until its load is within the capacity or none of
 *		its rows fits anywhere;
 *	  - then passes of improving moves: a row goes to a nearer medoid (one
 *		of its REPAIR_CANDIDATES nearest) with room for it, or without room
 *		in exchange for the row of that medoid that shortens the total
 *		distance most, both loads staying within the capacity.
 *
 *	  Medoids stay with themselves.  Demands are whole rows, so a total
 *	  capacity above the total demand does not always suffice (bin
 *	  packing): what cannot be placed stays where it is, and the violation
 *	  reports it.  Every step goes in index order on the host, so the
 *	  result depends only on the allocation it starts from.
 *
 * IDENTIFICATION
 *	  engine/pmedian_repair.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_engine.h"
#include "pmedian_math.h"

#include <float.h>
#include <stdlib.h>

/* Candidate medoids of a row in the improving moves: its nearest ones */
#define REPAIR_CANDIDATES 16

/* Passes of improving moves at the end */
#define REPAIR_PASSES 10

typedef struct Repair
{
	const GcRows *rows;
	const double *demand;
	int			metric;
	double		capacity;
	int			p;
	int64_t		n;
	int			k;				/* candidates per row */
	int32_t    *alloc;
	double	   *dist;
	double	   *medoid;			/* p vectors */
	double	   *load;			/* p */
	bool	   *is_medoid;		/* n */
	int32_t    *cand;			/* n * k nearest medoids, nearest first */
	double	   *cand_dist;		/* n * k */
	int32_t    *head;			/* p: first member */
	int32_t    *next;			/* n: next member, -1 at the end */
	int32_t    *prev;			/* n */
	int64_t		moves;			/* rows moved */
	GcPoll		poll;			/* distances since the interrupt hook was last polled */
	bool		interrupted;	/* the hook asked to stop: every loop ends */
} Repair;

/* The distance of a row to medoid c, counted as work (gc_poll) */
static double
row_dist(Repair *r, int32_t row, int32_t c)
{
	if (gc_poll(&r->poll, r->rows->d))
		r->interrupted = true;
	return gc_pm_dist(gc_rows_get(r->rows, row), r->medoid + (size_t) c * r->rows->d,
					  r->rows->d, r->metric);
}

static bool
has_room(const Repair *r, int32_t c, double q)
{
	return r->load[c] + q <= r->capacity;
}

static void
unlink_row(Repair *r, int32_t i)
{
	int32_t		c = r->alloc[i];

	if (r->prev[i] >= 0)
		r->next[r->prev[i]] = r->next[i];
	else
		r->head[c] = r->next[i];
	if (r->next[i] >= 0)
		r->prev[r->next[i]] = r->prev[i];
}

static void
link_row(Repair *r, int32_t i, int32_t c)
{
	r->prev[i] = -1;
	r->next[i] = r->head[c];
	if (r->head[c] >= 0)
		r->prev[r->head[c]] = i;
	r->head[c] = i;
}

/* Row i to medoid c, at distance dc */
static void
move_row(Repair *r, int32_t i, int32_t c, double dc)
{
	unlink_row(r, i);
	r->load[r->alloc[i]] -= r->demand[i];
	r->load[c] += r->demand[i];
	r->alloc[i] = c;
	r->dist[i] = dc;
	link_row(r, i, c);
	r->moves++;
}

/* Rows that may move: not a medoid, with a demand */
static bool
movable(const Repair *r, int32_t i)
{
	return !r->is_medoid[i] && r->demand[i] > 0.0;
}

/*
 * Each row's k nearest medoids by insertion into a short sorted list
 * (lowest index on ties); false if interrupted
 */
static bool
nearest_candidates(Repair *r)
{
	for (int64_t i = 0; i < r->n; i++)
	{
		int32_t    *c = r->cand + i * r->k;
		double	   *cd = r->cand_dist + i * r->k;
		int			have = 0;

		if (r->interrupted)
			return false;
		for (int32_t m = 0; m < r->p; m++)
		{
			double		dm = row_dist(r, (int32_t) i, m);
			int			at;

			if (have == r->k && dm >= cd[have - 1])
				continue;
			at = have < r->k ? have++ : have - 1;
			while (at > 0 && cd[at - 1] > dm)
			{
				c[at] = c[at - 1];
				cd[at] = cd[at - 1];
				at--;
			}
			c[at] = m;
			cd[at] = dm;
		}
	}
	return true;
}

/*
 * The cheapest row of overloaded medoid a to the nearest medoid anywhere
 * with room for it; false if no row fits anywhere
 */
static bool
direct_move(Repair *r, int32_t a)
{
	double		best = DBL_MAX,
				bestd = 0.0;
	int32_t		best_row = -1,
				best_to = -1;

	for (int32_t i = r->head[a]; i >= 0; i = r->next[i])
	{
		if (r->interrupted)
			return false;
		if (!movable(r, i))
			continue;
		for (int32_t c = 0; c < r->p; c++)
		{
			double		dc;

			if (c == a || !has_room(r, c, r->demand[i]))
				continue;
			dc = row_dist(r, i, c);
			if (dc - r->dist[i] < best)
			{
				best = dc - r->dist[i];
				bestd = dc;
				best_row = i;
				best_to = c;
			}
		}
	}
	if (best_row < 0)
		return false;
	move_row(r, best_row, best_to, bestd);
	return true;
}

/*
 * Row i (in a) to medoid y, which lacks room, in exchange for the member j
 * of y that gains most, where both loads stay within the capacity: true if
 * some exchange shortens the total distance, and then it is made
 */
static bool
exchange(Repair *r, int32_t i, int32_t y, double dy)
{
	int32_t		a = r->alloc[i],
				best = -1;
	double		best_gain = 0.0,
				best_dj = 0.0;

	for (int32_t j = r->head[y]; j >= 0; j = r->next[j])
	{
		double		dj,
					gain;

		if (r->interrupted)
			return false;
		if (!movable(r, j) ||
			r->load[a] - r->demand[i] + r->demand[j] > r->capacity ||
			r->load[y] - r->demand[j] + r->demand[i] > r->capacity)
			continue;
		dj = row_dist(r, j, a);
		gain = (r->dist[i] - dy) + (r->dist[j] - dj);
		if (gain > best_gain)
		{
			best_gain = gain;
			best = j;
			best_dj = dj;
		}
	}
	if (best < 0)
		return false;
	move_row(r, i, y, dy);
	move_row(r, best, a, best_dj);
	return true;
}

/*
 * Passes of moves of a row to a nearer candidate medoid: alone where it
 * has room, else in exchange for one of its rows; false if interrupted
 */
static bool
improving_moves(Repair *r)
{
	for (int pass = 0; pass < REPAIR_PASSES; pass++)
	{
		int64_t		improved = 0;

		for (int32_t i = 0; i < (int32_t) r->n; i++)
		{
			/* the candidates' tests count as work too */
			if (gc_poll(&r->poll, r->k))
				r->interrupted = true;
			if (r->interrupted)
				return false;
			if (!movable(r, i))
				continue;
			for (int t = 0; t < r->k; t++)
			{
				int32_t		y = r->cand[(int64_t) i * r->k + t];
				double		dy = r->cand_dist[(int64_t) i * r->k + t];

				if (dy >= r->dist[i])
					break;
				if (y == r->alloc[i])
					continue;
				if (has_room(r, y, r->demand[i]))
				{
					move_row(r, i, y, dy);
					improved++;
					break;
				}
				if (exchange(r, i, y, dy))
				{
					improved++;
					break;
				}
			}
		}
		if (improved == 0)
			break;
	}
	return true;
}

static void
repair_release(Repair *r)
{
	free(r->medoid);
	free(r->load);
	free(r->is_medoid);
	free(r->cand);
	free(r->cand_dist);
	free(r->head);
	free(r->next);
	free(r->prev);
}

/*
 * Repair alloc (index into medoids) and dist of n rows so that no medoid's
 * load exceeds capacity where the moves allow; moves counts the rows moved
 */
GcStatus
gc_pmedian_repair(const GcRows *rows, const double *demand, GcPmMetric metric,
				  double capacity, int p, const int32_t *medoids,
				  int32_t *alloc, double *dist,
				  bool (*interrupted) (void), int64_t *moves, GcError *err)
{
	Repair		r = {0};
	int64_t		n = rows->n;
	int			d = rows->d;
	GcStatus	status = GC_OK;

	r.rows = rows;
	r.demand = demand;
	r.metric = metric;
	r.capacity = capacity;
	r.p = p;
	r.n = n;
	r.k = p - 1 < REPAIR_CANDIDATES ? p : REPAIR_CANDIDATES;
	r.alloc = alloc;
	r.dist = dist;
	r.poll.interrupted = interrupted;
	r.medoid = malloc(sizeof(double) * p * d);
	r.load = calloc(p, sizeof(double));
	r.is_medoid = calloc(n, sizeof(bool));
	r.cand = malloc(sizeof(int32_t) * n * r.k);
	r.cand_dist = malloc(sizeof(double) * n * r.k);
	r.head = malloc(sizeof(int32_t) * p);
	r.next = malloc(sizeof(int32_t) * n);
	r.prev = malloc(sizeof(int32_t) * n);
	*moves = 0;
	if (!r.medoid || !r.load || !r.is_medoid || !r.cand || !r.cand_dist || !r.head ||
		!r.next || !r.prev)
	{
		repair_release(&r);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the capacity repair");
	}
	for (int c = 0; c < p; c++)
	{
		memcpy(r.medoid + (size_t) c * d, gc_rows_get(rows, medoids[c]), sizeof(double) * d);
		r.is_medoid[medoids[c]] = true;
		r.head[c] = -1;
	}
	for (int64_t i = n - 1; i >= 0; i--)
	{
		r.load[alloc[i]] += demand[i];
		link_row(&r, (int32_t) i, alloc[i]);
	}
	if (nearest_candidates(&r))
	{
		/* overloaded medoids in index order give up their cheapest rows */
		for (int32_t c = 0; !r.interrupted && c < p; c++)
			while (!r.interrupted && r.load[c] > capacity && direct_move(&r, c))
				;
		if (!r.interrupted)
			(void) improving_moves(&r);
	}
	if (r.interrupted)
		status = gc_fail(err, GC_INTERRUPTED, "interrupted in the capacity repair");
	*moves = r.moves;
	repair_release(&r);
	return status;
}
