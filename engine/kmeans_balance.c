/*-------------------------------------------------------------------------
 *
 * kmeans_balance.c
 *	  Balanced clusters: after the fit, no cluster holds more rows than a
 *	  bound (max_cluster_size, or max_cluster_size_factor times n / k),
 *	  as an IVF index wants its lists (cuVS's balanced k-means serves the
 *	  same end by moving centres; here the bound is hard).  A host-side
 *	  step over the labels the backend returned, so that the CPU and the
 *	  GPU give the same model.
 *
 * The enforcing pass takes every row of a cluster over the bound, its
 * nearest cluster with room (below the bound) and the penalty of moving
 * there (the squared distance gained), and moves rows cheapest first
 * (the lower row on ties) from a heap: a row whose cluster has come down
 * to the bound stays, one whose target filled meanwhile looks again and
 * goes back on the heap.  Open room always suffices, as k times the
 * bound is at least n.  The clusters that changed get the mean of their
 * rows.  Then up to GC_BALANCE_MAX_ROUNDS - 1 passes over the rows moved
 * so far let each go to a nearer cluster with room under the new
 * centroids, most gain first, updating the centroids after each pass.
 * The candidates' moves are found on the CPU threads (cpu_threads), each
 * row's alone, and pushed in row order; every sum runs in row order: the
 * result depends on the labels and the rows alone, not on the threads.
 *
 * A candidate's distances to all k centroids come eight at a time
 * (exact_lanes.c: gc_sqdist_exact's to the bit), and it keeps its
 * GC_BALANCE_NEAREST nearest other clusters, by distance then index, so
 * that looking again once its target has filled reads that list (the
 * first with room is the nearest with room, the list holding every
 * cluster nearer than it) and scans all k only when every cluster of the
 * list has filled: the same target as a full scan, at a fraction of it.
 *
 * IDENTIFICATION
 *	  engine/kmeans_balance.c
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_stages.h"
#include "cpu_threads.h"
#include "exact_lanes.h"
#include "gc_math.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Clusters a candidate keeps, nearest first, for looking again */
#define GC_BALANCE_NEAREST 16

/* A cluster and a row's squared distance to it */
typedef struct Near
{
	double		d2;
	int			cluster;
} Near;

/* A row's move to a target cluster, and what it costs */
typedef struct Move
{
	double		penalty;		/* squared distance to the target less to its own */
	int64_t		row;
	int			target;
} Move;

/* What one balancing works on */
typedef struct Balance
{
	const GcRows *rows;
	int			k;
	int			d;
	int64_t		cap;
	double	   *centroids;
	int64_t    *sizes;
	int32_t    *labels;
	bool		cosine;
	int			threads;		/* params->cpu_threads */
	GcPoll		poll;
	double	   *x;				/* four rows' values per thread (GC_CPU_MAX_THREADS) */
	double	   *panels;			/* the centroids as lanes (gc_lane_panels) */
	double	   *d2;				/* four rows' distances to the k centroids, per thread */
	int			kpad;			/* k rounded up to the lanes */
	int64_t    *slot;			/* n: a candidate's nearest list, -1: none */
	Near	   *nearest;		/* candidates x GC_BALANCE_NEAREST, the unused d2 infinite */
	double	   *own_d2;			/* candidates: the distance to the row's own cluster */
	Move	   *proposal;		/* n: each candidate's move (rows with a slot) */
	bool	   *changed;		/* k: clusters whose rows changed */
	Move	   *heap;
	int64_t		heap_count;
} Balance;

int64_t
gc_kmeans_balance_cap(const GcKmeansParams *params, int64_t n)
{
	int64_t		cap = params->max_cluster_size;

	if (params->max_cluster_size_factor > 0.0)
	{
		double		f = ceil(params->max_cluster_size_factor * (double) n / params->k);
		int64_t		by_factor = f >= (double) INT64_MAX ? INT64_MAX : (int64_t) f;

		if (cap == 0 || by_factor < cap)
			cap = by_factor;
	}
	return cap;
}

size_t
gc_kmeans_balance_bytes(const GcKmeansParams *params, int64_t n, int d)
{
	double		kpad = (double) ((params->k + GC_LANES - 1) / GC_LANES * GC_LANES);
	double		threads = params->cpu_threads > 0 && params->cpu_threads < GC_CPU_MAX_THREADS ?
		params->cpu_threads : GC_CPU_MAX_THREADS;
	/* per row: moved, heap, proposal, slot; every row a candidate at worst */
	double		per_row = sizeof(bool) + 2 * sizeof(Move) + sizeof(int64_t) +
		GC_BALANCE_NEAREST * sizeof(Near) + sizeof(double);
	/* per centroid: changed, weights, sums and panels, each thread's four rows' distances */
	double		per_centroid = sizeof(bool) + sizeof(double) + 2.0 * d * sizeof(double) +
		4.0 * threads * sizeof(double);
	/* and the rows' values the threads read (allocated for every possible thread) */
	double		bytes = n * per_row + kpad * per_centroid +
		4.0 * d * GC_CPU_MAX_THREADS * sizeof(double);

	if (gc_kmeans_balance_cap(params, n) == 0)
		return 0;
	return bytes >= (double) SIZE_MAX ? SIZE_MAX : (size_t) bytes;
}

static bool
move_before(const Move *a, const Move *b)
{
	return a->penalty < b->penalty || (a->penalty == b->penalty && a->row < b->row);
}

/* Push a move on the heap (room for every candidate is allocated) */
static void
heap_push(Balance *b, Move m)
{
	int64_t		i = b->heap_count++;

	while (i > 0 && move_before(&m, &b->heap[(i - 1) / 2]))
	{
		b->heap[i] = b->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	b->heap[i] = m;
}

/* Pop the cheapest move */
static Move
heap_pop(Balance *b)
{
	Move		top = b->heap[0];
	Move		last = b->heap[--b->heap_count];
	int64_t		i = 0;

	for (;;)
	{
		int64_t		c = 2 * i + 1;

		if (c >= b->heap_count)
			break;
		if (c + 1 < b->heap_count && move_before(&b->heap[c + 1], &b->heap[c]))
			c++;
		if (!move_before(&b->heap[c], &last))
			break;
		b->heap[i] = b->heap[c];
		i = c;
	}
	if (b->heap_count > 0)
		b->heap[i] = last;
	return top;
}

/* Whether a sorts before b: nearer, or as near and of a lower index */
static bool
near_before(const Near *a, const Near *b)
{
	return a->d2 < b->d2 || (a->d2 == b->d2 && a->cluster < b->cluster);
}

/* The row's squared distances to every centroid into d2, its values read into x */
static void
row_distances(const Balance *b, int64_t row, double *x, double *d2)
{
	gc_rows_copy_row(b->rows, row, x);
	for (int p = 0; p < b->kpad / GC_LANES; p++)
		gc_sqdist_lanes(x, b->panels + (size_t) p * b->d * GC_LANES, b->d, d2 + p * GC_LANES);
}

/* Four rows' distances (d2: 4 x kpad), their values read into x (4 x d) */
static void
rows4_distances(const Balance *b, const int64_t *rows, double *x, double *d2)
{
	double		out[4 * GC_LANES];

	for (int r = 0; r < 4; r++)
		gc_rows_copy_row(b->rows, rows[r], x + (size_t) r * b->d);
	for (int p = 0; p < b->kpad / GC_LANES; p++)
	{
		gc_sqdist_lanes4(x, b->panels + (size_t) p * b->d * GC_LANES, b->d, out);
		for (int r = 0; r < 4; r++)
			memcpy(d2 + (size_t) r * b->kpad + p * GC_LANES, out + r * GC_LANES,
				   sizeof(double) * GC_LANES);
	}
}

/* A row's nearest clusters but its own, from its distances d2, into list */
static void
keep_nearest(const Balance *b, int own, const double *d2, Near *list)
{
	int			kept = 0;

	for (int c = 0; c < b->k; c++)
	{
		Near		n = {d2[c], c};
		int			i;

		if (c == own || (kept == GC_BALANCE_NEAREST && !near_before(&n, &list[kept - 1])))
			continue;
		i = kept < GC_BALANCE_NEAREST ? kept++ : kept - 1;
		for (; i > 0 && near_before(&n, &list[i - 1]); i--)
			list[i] = list[i - 1];
		list[i] = n;
	}
	for (int i = kept; i < GC_BALANCE_NEAREST; i++)
		list[i] = (Near) {DBL_MAX, -1};
}

/*
 * Row's move to its nearest cluster with room other than its own (the
 * lowest index on ties), from its distances d2
 */
static void
move_from_distances(const Balance *b, int64_t row, const double *d2, Move *m)
{
	int			own = b->labels[row];
	double		best = DBL_MAX;
	int			target = -1;

	for (int c = 0; c < b->k; c++)
	{
		if (c == own || b->sizes[c] >= b->cap)
			continue;
		if (d2[c] < best)
		{
			best = d2[c];
			target = c;
		}
	}
	m->row = row;
	m->target = target;
	m->penalty = best - d2[own];
}

/*
 * A candidate's move found again after its target filled: from its list
 * when a cluster of it has room, else by a full scan (on the calling
 * thread's buffers)
 */
static void
find_move_again(const Balance *b, Move *m)
{
	int64_t		slot = b->slot[m->row];
	const Near *list = b->nearest + (size_t) slot * GC_BALANCE_NEAREST;

	for (int i = 0; i < GC_BALANCE_NEAREST && list[i].cluster >= 0; i++)
		if (b->sizes[list[i].cluster] < b->cap)
		{
			m->target = list[i].cluster;
			m->penalty = list[i].d2 - b->own_d2[slot];
			return;
		}
	row_distances(b, m->row, b->x, b->d2);
	move_from_distances(b, m->row, b->d2, m);
}

/* A candidate's proposal and nearest clusters, from its distances d2 */
static void
propose(Balance *b, int64_t row, const double *d2)
{
	int64_t		slot = b->slot[row];

	keep_nearest(b, b->labels[row], d2, b->nearest + (size_t) slot * GC_BALANCE_NEAREST);
	b->own_d2[slot] = d2[b->labels[row]];
	move_from_distances(b, row, d2, &b->proposal[row]);
}

/*
 * A block of rows: the move of each candidate of the pass, four at a time
 * (four chains of adds in flight), the last ones alone
 */
static void
propose_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	Balance    *b = ctx;
	double	   *x = b->x + (size_t) worker * 4 * b->d;
	double	   *d2 = b->d2 + (size_t) worker * 4 * b->kpad;
	int64_t		group[4];
	int			grouped = 0;

	for (int64_t i = 0; i < count; i++)
	{
		int64_t		row = chunk->first_row + first + i;

		if (b->slot[row] < 0)
			continue;
		group[grouped++] = row;
		if (grouped < 4)
			continue;
		rows4_distances(b, group, x, d2);
		for (int r = 0; r < 4; r++)
			propose(b, group[r], d2 + (size_t) r * b->kpad);
		grouped = 0;
	}
	for (int r = 0; r < grouped; r++)
	{
		row_distances(b, group[r], x, d2);
		propose(b, group[r], d2);
	}
}

/*
 * Move rows from the heap, cheapest first, while it holds moves that are
 * still wanted: the row's cluster over the bound (enforce) or, else, a
 * gain; a target that filled is looked for again.  Returns the rows
 * moved, -1 when interrupted; moved[] marks them.
 */
static int64_t
drain_heap(Balance *b, bool enforce, bool *moved)
{
	int64_t		moves = 0;

	while (b->heap_count > 0)
	{
		Move		m = heap_pop(b);
		int			own = b->labels[m.row];

		if (enforce ? b->sizes[own] <= b->cap : m.penalty >= 0.0)
			continue;
		if (m.target < 0)
			continue;			/* no room anywhere: cannot happen while k cap >= n */
		if (b->sizes[m.target] >= b->cap)
		{
			find_move_again(b, &m);
			if (gc_poll(&b->poll, (int64_t) b->k * b->d))
				return -1;
			heap_push(b, m);
			continue;
		}
		b->labels[m.row] = m.target;
		b->sizes[own]--;
		b->sizes[m.target]++;
		b->changed[own] = b->changed[m.target] = true;
		moved[m.row] = true;
		moves++;
	}
	return moves;
}

/*
 * Each changed cluster's centroid: the (weighted) mean of its rows,
 * renormalised under the cosine metric; false when interrupted
 */
static bool
update_centroids(Balance *b)
{
	int			d = b->d;
	double	   *sums = calloc((size_t) b->k * d, sizeof(double));
	double	   *weights = calloc(b->k, sizeof(double));
	bool		ok = sums != NULL && weights != NULL;

	for (int64_t i = 0; ok && i < b->rows->n; i++)
	{
		int			l = b->labels[i];
		double		w;

		if (!b->changed[l])
			continue;
		w = gc_rows_weight(b->rows, i);
		gc_rows_copy_row(b->rows, i, b->x);
		for (int j = 0; j < d; j++)
			sums[(size_t) l * d + j] += w * b->x[j];
		weights[l] += w;
		if (gc_poll(&b->poll, d))
			ok = false;
	}
	for (int c = 0; ok && c < b->k; c++)
	{
		double		norm = 0.0;
		double	   *centroid = b->centroids + (size_t) c * d;

		if (!b->changed[c] || weights[c] == 0.0)
			continue;
		for (int j = 0; j < d; j++)
		{
			centroid[j] = sums[(size_t) c * d + j] / weights[c];
			norm += centroid[j] * centroid[j];
		}
		if (b->cosine && norm > 0.0)
			for (int j = 0; j < d; j++)
				centroid[j] /= sqrt(norm);
		b->changed[c] = false;
	}
	free(sums);
	free(weights);
	return ok;
}

/* The inertia and distances of the labels under the centroids */
static bool
score_labels(Balance *b, double *distances, double *inertia)
{
	double		total = 0.0;

	for (int64_t i = 0; i < b->rows->n; i++)
	{
		double		d2;

		gc_rows_copy_row(b->rows, i, b->x);
		d2 = gc_sqdist_exact(b->x, b->centroids + (size_t) b->labels[i] * b->d, b->d);
		total += gc_rows_weight(b->rows, i) * d2;
		if (distances)
			distances[i] = sqrt(d2);
		if (gc_poll(&b->poll, b->d))
			return false;
	}
	*inertia = total;
	return true;
}

/*
 * Each candidate's move (proposal), on the threads, with its nearest
 * clusters kept for drain_heap
 */
static GcStatus
propose_moves(Balance *b, int64_t candidates, GcError *err)
{
	GcCpuPass	pass = {.rows = b->rows, .row_units = (int64_t) b->k * b->d,
		.fn = propose_block, .ctx = b};

	pass.workers = gc_cpu_threads(b->threads, candidates * pass.row_units);
	b->panels = gc_lane_panels(b->centroids, b->k, b->d);
	b->nearest = malloc(sizeof(Near) * GC_BALANCE_NEAREST * (size_t) (candidates > 0 ? candidates : 1));
	b->own_d2 = malloc(sizeof(double) * (size_t) (candidates > 0 ? candidates : 1));
	b->d2 = malloc(sizeof(double) * 4 * (size_t) b->kpad * pass.workers);
	if (b->panels == NULL || b->nearest == NULL || b->own_d2 == NULL || b->d2 == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for balancing");
	return gc_cpu_run_blocks(&pass, &b->poll, err, "interrupted while balancing");
}

/*
 * One pass: candidates (every row of a cluster over the bound when
 * enforcing, else the rows moved so far) proposed, their moves onto the
 * heap and drained, the changed centroids updated; *moves: the rows moved
 */
static GcStatus
balance_pass(Balance *b, bool enforce, bool *moved, int64_t *moves, GcError *err)
{
	int64_t		candidates = 0;
	GcStatus	status;

	for (int64_t i = 0; i < b->rows->n; i++)
		b->slot[i] = (enforce ? b->sizes[b->labels[i]] > b->cap : moved[i]) ? candidates++ : -1;
	status = propose_moves(b, candidates, err);
	if (status == GC_OK)
	{
		b->heap_count = 0;
		for (int64_t i = 0; i < b->rows->n; i++)
			if (b->slot[i] >= 0 && (enforce || b->proposal[i].penalty < 0.0))
				heap_push(b, b->proposal[i]);
		*moves = drain_heap(b, enforce, moved);
		if (*moves < 0 || (*moves > 0 && !update_centroids(b)))
			status = gc_fail(err, GC_INTERRUPTED, "interrupted while balancing");
	}
	free(b->panels);
	free(b->nearest);
	free(b->own_d2);
	free(b->d2);
	b->panels = b->d2 = b->own_d2 = NULL;
	b->nearest = NULL;
	return status;
}

GcStatus
gc_kmeans_balance(const GcRows *rows, const GcKmeansParams *params, int64_t cap,
				  GcKmeansResult *result, GcError *err)
{
	Balance		b = {.rows = rows, .k = params->k, .d = rows->d, .cap = cap,
		.centroids = result->centroids, .sizes = result->sizes, .labels = result->labels,
		.cosine = params->metric == GC_METRIC_COSINE, .threads = params->cpu_threads,
		.poll = {params->interrupted, 0}};
	bool	   *moved = calloc(rows->n, sizeof(bool));
	GcStatus	status = GC_OK;

	result->balance_rounds = 0;
	result->balance_moves = 0;
	b.x = malloc(sizeof(double) * 4 * b.d * GC_CPU_MAX_THREADS);
	b.changed = calloc(b.k, sizeof(bool));
	b.heap = malloc(sizeof(Move) * rows->n);
	b.proposal = malloc(sizeof(Move) * rows->n);
	b.slot = malloc(sizeof(int64_t) * rows->n);
	b.kpad = (b.k + GC_LANES - 1) / GC_LANES * GC_LANES;
	if (moved == NULL || b.x == NULL || b.changed == NULL || b.heap == NULL ||
		b.proposal == NULL || b.slot == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for balancing");
	else if ((double) cap * b.k < (double) rows->n)
		status = gc_fail(err, GC_ERR_RANGE,
						 "%d clusters of at most %lld rows cannot hold %lld rows",
						 b.k, (long long) cap, (long long) rows->n);
	for (int round = 0; status == GC_OK && round < GC_BALANCE_MAX_ROUNDS; round++)
	{
		int64_t		moves = 0;

		status = balance_pass(&b, round == 0, moved, &moves, err);
		if (status != GC_OK)
			break;
		else if (moves == 0 && round > 0)
			break;
		else if (moves > 0)
		{
			result->balance_rounds++;
			result->balance_moves += moves;
		}
		else
			break;				/* already within the bound */
	}
	if (status == GC_OK && result->balance_moves > 0 &&
		!score_labels(&b, result->distances, &result->inertia))
		status = gc_fail(err, GC_INTERRUPTED, "interrupted while balancing");
	free(moved);
	free(b.x);
	free(b.changed);
	free(b.heap);
	free(b.proposal);
	free(b.slot);
	return status;
}

void
gc_kmeans_size_spread(GcKmeansResult *result, int k)
{
	double		sum = 0.0,
				sum2 = 0.0,
				mean;

	result->size_min = INT64_MAX;
	result->size_max = 0;
	for (int c = 0; c < k; c++)
	{
		int64_t		s = result->sizes[c];

		result->size_min = s < result->size_min ? s : result->size_min;
		result->size_max = s > result->size_max ? s : result->size_max;
		sum += (double) s;
	}
	mean = sum / k;
	for (int c = 0; c < k; c++)
		sum2 += ((double) result->sizes[c] - mean) * ((double) result->sizes[c] - mean);
	result->size_cv = mean > 0.0 ? sqrt(sum2 / k) / mean : 0.0;
}
