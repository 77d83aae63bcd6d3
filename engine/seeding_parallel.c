/*-------------------------------------------------------------------------
 *
 * seeding_parallel.c
 *	  k-means|| seeding on the CPU (Bahmani, Moseley, Vattani, Kumar &
 *	  Vassilvitskii, "Scalable K-Means++", VLDB 2012): the reference that
 *	  cuda/seeding_parallel.cu is tested against, and the pieces both
 *	  share (when to sample again, the order of a round's samples, the
 *	  parameters of the recluster).
 *
 * The first centre is k-means++'s first draw (the race of stream 0 over
 * the rows' weights).  Each round then samples every row independently,
 * with probability min(1, l w D^2 / phi) (gc_parallel_sampled: the row's
 * seeded draw against it, multiplied out), where l = k (2k took 0.69 s
 * against 0.44 s on the H100, for no better fits:
 * bench/results/seeding-parallel-h100.md), D^2 is the row's exact
 * squared distance to the nearest candidate so far and phi the potential
 * sum w D^2, summed exactly as the inertia is (128-bit
 * integers in units of 2^-inertia_exp) and turned into a double the same
 * way on both devices.  A round's samples, sorted by hash, are appended to
 * the candidates; a pass over the rows then finds each row's nearest new
 * sample (gc_nearest_centroid: exact distances, the lowest index on ties,
 * as Lloyd's labeling) and lowers D^2 and the row's nearest candidate
 * where it is closer.  So every value is exact, independent of row order,
 * and equal on both devices.  After GC_PARALLEL_ROUNDS rounds (more while
 * fewer than k candidates exist, up to GC_PARALLEL_MAX_ROUNDS) the
 * candidates are weighted by the weights of the rows nearest to them;
 * those of weight zero (duplicates of an earlier candidate) are dropped,
 * and greedy k-means++ (engine/seeding.c) chooses k among the rest.
 *
 * IDENTIFICATION
 *	  engine/seeding_parallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

/* What k-means|| keeps between its passes over the rows */
typedef struct ParallelState
{
	const GcRows *rows;
	const GcKmeansParams *params;
	int			inertia_exp;
	double	   *mind2;			/* n: squared distance to the nearest candidate */
	int32_t    *nearest;		/* n: that candidate */
	int64_t    *candidates;		/* rows sampled, in order */
	int64_t		count;
	int64_t		capacity;
	double	   *batch_values;	/* the round's samples' values, m * d */
	const double *offset;		/* the frame's centre, for the screened labeling */
	int32_t    *labels;			/* n, the screened labeling's answers; NULL: none */
	double	   *d2;				/* n, and their distances */
	gc_u128		potential;		/* sum of w D^2, quantised */
	GcPoll		poll;			/* the interrupt hook, polled by work */
} ParallelState;

bool
gc_parallel_more_rounds(int round, int64_t candidates, int k, gc_u128 potential)
{
	if (potential == 0 || round >= GC_PARALLEL_MAX_ROUNDS)
		return false;
	return round < GC_PARALLEL_ROUNDS || candidates < k;
}

typedef struct HashedRow
{
	uint64_t	hash;
	int64_t		row;
} HashedRow;

static int
compare_hashed_rows(const void *a, const void *b)
{
	const HashedRow *x = a,
			   *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

bool
gc_parallel_sort_batch(const GcRows *rows, int64_t *batch, int64_t m)
{
	HashedRow  *h = malloc(sizeof(HashedRow) * (m > 0 ? m : 1));

	if (h == NULL)
		return false;
	for (int64_t i = 0; i < m; i++)
	{
		h[i].hash = gc_rows_hash(rows, batch[i]);
		h[i].row = batch[i];
	}
	qsort(h, m, sizeof(HashedRow), compare_hashed_rows);
	for (int64_t i = 0; i < m; i++)
		batch[i] = h[i].row;
	free(h);
	return true;
}

GcKmeansParams
gc_parallel_recluster_params(const GcKmeansParams *params)
{
	GcKmeansParams p = *params;

	p.init = GC_INIT_KMEANSPP;
	if (p.init_candidates <= 0)
		p.init_candidates = 2 + (int) floor(log((double) (p.k > 1 ? p.k : 1)));
	return p;
}

/* The first centre: k-means++'s first draw, the race over the weights */
static GcStatus
first_centre(ParallelState *st, uint64_t seed, GcError *err)
{
	const GcRows *rows = st->rows;
	uint64_t	best = GC_RACE_NONE;

	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		w = chunk->weights ? chunk->weights[i] : 1.0;
			uint64_t	key;

			if (gc_poll(&st->poll, 8))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			key = gc_race_key(gc_unit_draw(gc_draw_hash(rows, chunk, i), seed, gc_seed_stream(0, 0)),
							  w, row);
			if (key < best)
				best = key;
		}
	}
	st->candidates[st->count++] = (int64_t) (uint32_t) best;
	return GC_OK;
}

/*
 * Lower each row's D^2 to its nearest among candidates first .. first +
 * m - 1 where closer (set it, in the first pass), and sum the potential
 */
static GcStatus
nearest_pass(ParallelState *st, int64_t first, int64_t m, GcError *err)
{
	const GcRows *rows = st->rows;
	int			d = rows->d;

	for (int64_t j = 0; j < m; j++)
		memcpy(st->batch_values + (size_t) j * d, gc_rows_get(rows, st->candidates[first + j]),
			   sizeof(double) * d);
	st->potential = 0;
	/* the screened labeling's nearest samples, on threads, to the bit the scan's */
	if (st->labels)
	{
		GcStatus	status = gc_cpu_label_rows(rows, 0, st->batch_values, (int) m, st->offset,
											   st->params->cpu_threads, st->labels, st->d2, NULL,
											   &st->poll, NULL, err);

		if (status != GC_OK)
			return status == GC_INTERRUPTED ?
				gc_fail(err, status, "interrupted during seeding") : status;
	}
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		d2;
			int			j;

			if (st->labels)
			{
				j = st->labels[row];
				d2 = st->d2[row];
			}
			else				/* polled within the row too, where one row is more than a poll's work */
				j = gc_nearest_centroid_polled(chunk->values + (size_t) i * d, st->batch_values,
											   (int) m, d, &d2, &st->poll);
			if (j < 0)
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			if (first == 0 || d2 < st->mind2[row])
			{
				st->mind2[row] = d2;
				st->nearest[row] = (int32_t) (first + j);
			}
			st->potential += gc_quantize_wide(st->mind2[row], st->inertia_exp) *
				(gc_u128) gc_chunk_weight(chunk, i);
		}
	}
	return GC_OK;
}

/* Round round's samples, appended to the candidates; *m of them */
static GcStatus
sample_pass(ParallelState *st, uint64_t seed, int round, double phi, int64_t *m,
			GcError *err)
{
	const GcRows *rows = st->rows;
	double		ell = GC_PARALLEL_OVERSAMPLING * st->params->k;
	int64_t		first = st->count;

	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		wd2 = st->mind2[row];

			if (gc_poll(&st->poll, 8))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			if (chunk->weights)
				wd2 *= chunk->weights[i];
			if (!gc_parallel_sampled(gc_unit_draw(gc_draw_hash(rows, chunk, i), seed, gc_parallel_stream(round)),
									 wd2, ell, phi))
				continue;
			if (st->count == st->capacity)
			{
				int64_t    *grown = realloc(st->candidates, sizeof(int64_t) * st->capacity * 2);

				if (grown == NULL)
					return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
				st->candidates = grown;
				st->capacity *= 2;
			}
			st->candidates[st->count++] = row;
		}
	}
	*m = st->count - first;
	if (!gc_parallel_sort_batch(rows, st->candidates + first, *m))
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (*m > 0)
	{
		double	   *values = realloc(st->batch_values, sizeof(double) * *m * rows->d);

		if (values == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
		st->batch_values = values;
	}
	return GC_OK;
}

/*
 * The candidates weighted by their rows, those of weight zero dropped,
 * reclustered to k by greedy k-means++
 */
static GcStatus
recluster(ParallelState *st, const GcFrame *frame, uint64_t seed, int64_t *chosen,
		  GcError *err)
{
	const GcRows *rows = st->rows;
	GcKmeansParams params = gc_parallel_recluster_params(st->params);
	int64_t    *weight = calloc(st->count, sizeof(int64_t));
	int64_t    *kept = malloc(sizeof(int64_t) * st->count);
	int64_t    *picks = malloc(sizeof(int64_t) * params.k);
	GcRows		cand;
	GcStatus	status;
	bool		cand_ready = false;

	if (weight == NULL || kept == NULL || picks == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	else
		status = gc_rows_init(&cand, rows->d, malloc, free, err);
	if (status == GC_OK)
	{
		int64_t		nkept = 0;

		cand_ready = true;
		for (int64_t i = 0; i < rows->n; i++)
			weight[st->nearest[i]] += (int64_t) gc_rows_weight(rows, i);
		gc_rows_set_weighted(&cand);
		for (int64_t c = 0; c < st->count && status == GC_OK; c++)
		{
			double	   *slot;

			if (weight[c] == 0)
				continue;
			if ((slot = gc_rows_reserve(&cand, err)) == NULL)
				status = err->status;
			else
			{
				memcpy(slot, gc_rows_get(rows, st->candidates[c]), sizeof(double) * rows->d);
				gc_rows_commit_weighted(&cand, (double) weight[c]);
				kept[nkept++] = st->candidates[c];
			}
		}
		if (status == GC_OK)
			status = gc_seed_kmeanspp_cpu(&cand, frame, &params, seed, picks, err);
		for (int t = 0; status == GC_OK && t < params.k; t++)
			chosen[t] = kept[picks[t]];
	}
	if (cand_ready)
		gc_rows_release(&cand);
	free(weight);
	free(kept);
	free(picks);
	return status;
}

GcStatus
gc_seed_kmeans_parallel_cpu(const GcRows *rows, const GcFrame *frame,
							const GcKmeansParams *params, uint64_t seed,
							int64_t *chosen, GcError *err)
{
	ParallelState st = {.rows = rows, .params = params, .inertia_exp = frame->inertia_exp,
						.poll = {params->interrupted, 0}};
	int64_t		n = rows->n > 0 ? rows->n : 1;
	GcStatus	status = GC_OK;
	int			round = 0;

	st.capacity = 64;
	st.mind2 = malloc(sizeof(double) * n);
	st.nearest = malloc(sizeof(int32_t) * n);
	st.candidates = malloc(sizeof(int64_t) * st.capacity);
	st.batch_values = malloc(sizeof(double) * rows->d);
	st.offset = frame->offset;
	if (st.mind2 == NULL || st.nearest == NULL || st.candidates == NULL ||
		st.batch_values == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	/* without them (a narrow store, or no memory) each row is scanned alone */
	if (status == GC_OK && gc_cpu_labeling_applies(rows))
	{
		st.labels = malloc(sizeof(int32_t) * n);
		st.d2 = malloc(sizeof(double) * n);
		if (st.labels == NULL || st.d2 == NULL)
		{
			free(st.labels);
			free(st.d2);
			st.labels = NULL;
			st.d2 = NULL;
		}
	}
	if (status == GC_OK)
		status = first_centre(&st, seed, err);
	if (status == GC_OK)
		status = nearest_pass(&st, 0, 1, err);
	while (status == GC_OK &&
		   gc_parallel_more_rounds(round, st.count, params->k, st.potential))
	{
		int64_t		first = st.count,
					m = 0;

		round++;
		status = sample_pass(&st, seed, round, gc_inertia_value(st.potential, frame), &m, err);
		if (status == GC_OK && m > 0)
			status = nearest_pass(&st, first, m, err);
	}
	if (status == GC_OK)
		status = recluster(&st, frame, seed, chosen, err);
	free(st.mind2);
	free(st.nearest);
	free(st.candidates);
	free(st.batch_values);
	free(st.labels);
	free(st.d2);
	return status;
}
