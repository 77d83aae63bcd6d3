/*-------------------------------------------------------------------------
 *
 * seeding_batched.c
 *	  Batched greedy k-means++, k-means||'s recluster at large k: the CPU
 *	  reference that cuda/seeding_batched.cu is tested against, and the
 *	  pieces both share (the steps, the draw of a step's candidates, the
 *	  choice of its picks).
 *
 * k-means|| (seeding_parallel.c) reclusters its weighted candidates
 * (about 5 gc_parallel_ell(k)) to k; greedy k-means++ (seeding.c) does
 * it in k sequential steps, which on the GPU are bound by their launches'
 * latency (65,536 steps at k = 65,536: 19 s of a 1M x 64 fit's seeding
 * on an H200).  From GC_BATCHED_MIN_K centres the recluster instead
 * picks them in about GC_BATCHED_STEPS steps over the candidates
 * (weighted rows):
 *
 *	- step 0 picks one row by the race over the weights (as k-means++'s
 *	  first draw);
 *	- each later step picks up to b = gc_batched_picks(k, t, done) rows at
 *	  once: the b L lowest keys of one exponential race on w D^2 (stream
 *	  gc_seed_stream(t, 0)) over the rows not yet picked (Efraimidis &
 *	  Spirakis: a weighted sample without replacement), in key order,
 *	  form b groups of L (gc_batched_candidates: 2 + ln k, as greedy
 *	  k-means++ draws).  The rows are labelled against the b L candidates
 *	  (exact nearest, the lowest on ties), and a candidate's gain is the
 *	  sum over the rows nearest to it of w (D^2 - |x - c|^2) where below
 *	  D^2, each term quantised as the inertia is and summed exactly in 128
 *	  bits: what it takes from D^2 in competition with the step's other
 *	  candidates.  Each group picks its candidate of the highest gain, the
 *	  first on ties (gc_batched_choose); the picks are kept in order but
 *	  where a kept one is nearer to the pick than its D^2
 *	  (gc_batched_keep: two picks in one uncovered cluster), so a step
 *	  keeps at least one; then each row's D^2 falls to its exact distance
 *	  to the nearest pick kept (a labeling again).
 *
 * Keys are gc_race_key's (the row's index below its bid), labels and
 * distances exact (the GPU labels by the exact tensor labeler, which finds
 * these), gains exact integers, so both devices pick the same rows.  The
 * work is two labelings of the C candidates a step, against b L and b
 * rows: (L + 1) C k d multiply-adds in all, on the GPU's tensor cores,
 * where greedy's gains read every row for every candidate in doubles.
 * On the CPU (Lloyd's to convergence, 2 seeds, k = 4,096), inertia
 * against the earlier recluster (1,025 steps, the gains of every pair of
 * candidate and row in doubles): 0.992-1.000 on 200,000 x 32 in 4,096 blobs, 0.996 on
 * KDD Cup 99 (200,000 rows), 0.998-0.999 on birch1, 1.000-1.003 on birch2,
 * 0.999-1.000 on 200,000 x 8 uniform (bench/results/seeding-large-k.md).
 *
 * IDENTIFICATION
 *	  engine/seeding_batched.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "gc_engine.h"
#include "gc_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool
gc_batched_applies(int k)
{
	return k >= GC_BATCHED_MIN_K;
}

bool
gc_batched_recluster(int k, int64_t candidates)
{
	return gc_batched_applies(k) && candidates >= k;
}

int
gc_batched_picks(int k, int t, int done)
{
	int			per_step = (k - 1 + GC_BATCHED_STEPS - 1) / GC_BATCHED_STEPS;

	if (t == 0)
		return k > 0 ? 1 : 0;
	return done >= k ? 0 : (k - done < per_step ? k - done : per_step);
}

/* k-th smallest of keys[0 .. m - 1] (0-based; distinct but for GC_RACE_NONE), keys reordered */
static uint64_t
select_kth(uint64_t *keys, int64_t m, int64_t kth)
{
	int64_t		lo = 0,
				hi = m - 1;

	while (lo < hi)
	{
		uint64_t	a = keys[lo],
					b = keys[lo + (hi - lo) / 2],
					c = keys[hi];
		uint64_t	pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		int64_t		i = lo,
					j = hi;

		while (i <= j)
		{
			while (keys[i] < pivot)
				i++;
			while (keys[j] > pivot)
				j--;
			if (i <= j)
			{
				uint64_t	t = keys[i];

				keys[i++] = keys[j];
				keys[j--] = t;
			}
		}
		if (kth <= j)
			hi = j;
		else if (kth >= i)
			lo = i;
		else
			return keys[kth];
	}
	return keys[kth];
}

typedef struct KeyedPick
{
	uint64_t	key;
	int64_t		index;
} KeyedPick;

static int
compare_picks(const void *a, const void *b)
{
	const KeyedPick *x = a,
			   *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

bool
gc_batched_select(const uint64_t *keys, int64_t m, int b, int64_t *picks)
{
	uint64_t   *scratch = malloc(sizeof(uint64_t) * (m > 0 ? m : 1));
	KeyedPick  *chosen = malloc(sizeof(KeyedPick) * (b > 0 ? b : 1));
	uint64_t	threshold;
	int			count = 0;

	if (scratch == NULL || chosen == NULL)
	{
		free(scratch);
		free(chosen);
		return false;
	}
	memcpy(scratch, keys, sizeof(uint64_t) * m);
	threshold = select_kth(scratch, m, b - 1);
	for (int64_t i = 0; i < m && count < b; i++)
		if (keys[i] <= threshold && keys[i] != GC_RACE_NONE)
		{
			chosen[count].key = keys[i];
			chosen[count++].index = i;
		}
	qsort(chosen, count, sizeof(KeyedPick), compare_picks);
	for (int j = 0; j < count; j++)
		picks[j] = chosen[j].index;
	free(scratch);
	free(chosen);
	return count == b;
}

int
gc_batched_candidates(const GcKmeansParams *params, int64_t untaken, int b)
{
	int			k = params->k > 1 ? params->k : 1;
	int			candidates = params->init_candidates > 0 ? params->init_candidates :
		2 + (int) floor(log((double) k));

	if (candidates > GC_MAX_INIT_CANDIDATES)
		candidates = GC_MAX_INIT_CANDIDATES;
	if (b > 0 && (int64_t) candidates * b > untaken)
		candidates = (int) (untaken / b);
	return candidates > 1 ? candidates : 1;
}

void
gc_batched_choose(const int64_t *drawn, const gc_u128 *gains, int b, int candidates,
				  int64_t *picks)
{
	for (int g = 0; g < b; g++)
		picks[g] = drawn[gc_batched_best(gains, g, candidates)];
}

/* What the CPU's steps keep between them */
typedef struct BatchedState
{
	const GcRows *rows;			/* the candidates, weighted */
	double	   *mind2;			/* n: D^2 */
	uint64_t   *keys;			/* n: the step's race; GC_RACE_NONE once picked */
	int32_t    *labels;			/* n: the nearest candidate, or pick */
	double	   *d2;				/* n: its distance */
	double	   *centres;		/* the step's candidates', or picks', values */
	int64_t    *drawn;			/* the step's candidates, b x L */
	gc_u128    *gains;			/* and their gains */
	GcPoll		poll;
} BatchedState;

/* The race of step t over the rows not picked (their keys GC_RACE_NONE) */
static void
race_keys(BatchedState *st, uint64_t seed, int t, int inertia_exp)
{
	const GcRows *rows = st->rows;
	uint64_t	key = gc_draw_key(seed, gc_seed_stream(t, 0));

	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t r = 0; r < chunk->count; r++)
		{
			int64_t		i = chunk->first_row + r;
			double		w = st->mind2[i] * (double) gc_chunk_weight(chunk, r);

			if (st->keys[i] == GC_RACE_NONE)
				continue;
			st->keys[i] = gc_race_key(gc_unit_draw_keyed(gc_draw_hash(rows, chunk, r), key),
									  gc_race_weight(w, inertia_exp), i);
		}
	}
}

/*
 * Every row's nearest of the m rows of which (the lowest on ties) and its
 * exact distance into st->labels and st->d2: the screened labeling on
 * threads, or a scan, to the bit what the GPU's exact labeler finds
 */
static GcStatus
label_against(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			  const int64_t *which, int m, GcError *err)
{
	const GcRows *rows = st->rows;
	int			d = rows->d;

	for (int j = 0; j < m; j++)
		memcpy(st->centres + (size_t) j * d, gc_rows_get(rows, which[j]), sizeof(double) * d);
	if (gc_cpu_labeling_applies(rows))
	{
		GcStatus	status = gc_cpu_label_rows(rows, 0, st->centres, m, frame->offset,
											   params->cpu_threads, st->labels, st->d2, NULL,
											   &st->poll, NULL, err);

		if (status != GC_OK)
			return status == GC_INTERRUPTED ?
				gc_fail(err, status, "interrupted during seeding") : status;
		return GC_OK;
	}
	for (int64_t i = 0; i < rows->n; i++)
		if ((st->labels[i] = gc_nearest_centroid_polled(gc_rows_get(rows, i), st->centres, m, d,
														&st->d2[i], &st->poll)) < 0)
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	return GC_OK;
}

/*
 * Each drawn candidate's gain: the sum over the rows nearest to it of w
 * (D^2 - |x - c|^2) where below D^2, each term quantised as the inertia
 * is, summed exactly in 128 bits
 */
static GcStatus
candidate_gains(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
				int count, GcError *err)
{
	const GcRows *rows = st->rows;
	GcStatus	status = label_against(st, frame, params, st->drawn, count, err);

	for (int c = 0; c < count; c++)
		st->gains[c] = 0;
	for (int ci = 0; status == GC_OK && ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t r = 0; r < chunk->count; r++)
		{
			int64_t		i = chunk->first_row + r;

			if (st->d2[i] < st->mind2[i])
				st->gains[st->labels[i]] +=
					(gc_quantize_wide(st->mind2[i], frame->inertia_exp) -
					 gc_quantize_wide(st->d2[i], frame->inertia_exp)) *
					(gc_u128) gc_chunk_weight(chunk, r);
		}
	}
	return status;
}

int
gc_batched_keep_picks(const GcRows *rows, const double *mind2, int64_t *picks, int b)
{
	int			kept = 0;

	for (int j = 0; j < b; j++)
	{
		const double *x = gc_rows_get(rows, picks[j]);
		double		m = mind2[picks[j]];
		bool		keep = true;

		for (int i = 0; keep && i < kept; i++)
			keep = gc_batched_keep(gc_sqdist_within(x, gc_rows_get(rows, picks[i]), rows->d, m),
								   m);
		if (keep)
			picks[kept++] = picks[j];
	}
	return kept;
}

/* D^2 lowered to the exact distance to the nearest of b picks (set, the first time) */
static GcStatus
lower_mind2(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			const int64_t *picks, int b, bool first, GcError *err)
{
	GcStatus	status = label_against(st, frame, params, picks, b, err);

	for (int64_t i = 0; status == GC_OK && i < st->rows->n; i++)
		if (first || st->d2[i] < st->mind2[i])
			st->mind2[i] = st->d2[i];
	return status;
}

/*
 * One step: the race, the candidates' gains, the picks kept into picks
 * (*taken of them); D^2 lowered
 */
static GcStatus
batched_step(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			 uint64_t seed, int t, int done, int64_t *picks, int *taken, GcError *err)
{
	int			b = gc_batched_picks(params->k, t, done);
	int			candidates = t == 0 ? 1 : gc_batched_candidates(params, st->rows->n - done, b);

	race_keys(st, seed, t, frame->inertia_exp);
	if (gc_poll(&st->poll, st->rows->n * 8))
		return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	if (!gc_batched_select(st->keys, st->rows->n, b * candidates, st->drawn))
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (candidates > 1)
	{
		GcStatus	status = candidate_gains(st, frame, params, b * candidates, err);

		if (status != GC_OK)
			return status;
	}
	gc_batched_choose(st->drawn, st->gains, b, candidates, picks);
	if (t > 0)
		b = gc_batched_keep_picks(st->rows, st->mind2, picks, b);
	*taken = b;
	for (int j = 0; j < b; j++)
		st->keys[picks[j]] = GC_RACE_NONE;
	return done + b < params->k ? lower_mind2(st, frame, params, picks, b, t == 0, err) : GC_OK;
}

GcStatus
gc_seed_batched_cpu(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
					uint64_t seed, int64_t *chosen, GcError *err)
{
	int64_t		n = rows->n > 0 ? rows->n : 1;
	size_t		most = (size_t) gc_batched_picks(params->k, 1, 1) * GC_MAX_INIT_CANDIDATES;
	BatchedState st = {.rows = rows, .poll = {params->interrupted, 0}};
	GcStatus	status = GC_OK;
	int			done = 0;

	st.mind2 = malloc(sizeof(double) * n);
	st.keys = calloc(n, sizeof(uint64_t));
	st.labels = malloc(sizeof(int32_t) * n);
	st.d2 = malloc(sizeof(double) * n);
	st.centres = malloc(sizeof(double) * most * rows->d);
	st.drawn = malloc(sizeof(int64_t) * most);
	st.gains = calloc(most, sizeof(gc_u128));
	if (st.mind2 == NULL || st.keys == NULL || st.labels == NULL || st.d2 == NULL ||
		st.centres == NULL || st.drawn == NULL || st.gains == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int64_t i = 0; status == GC_OK && i < rows->n; i++)
		st.mind2[i] = 1.0;		/* step 0 races on the weights alone */
	for (int t = 0; status == GC_OK && done < params->k; t++)
	{
		int			taken = 0;

		status = batched_step(&st, frame, params, seed, t, done, chosen + done, &taken, err);
		done += taken;
	}
	free(st.mind2);
	free(st.keys);
	free(st.labels);
	free(st.d2);
	free(st.centres);
	free(st.drawn);
	free(st.gains);
	return status;
}
