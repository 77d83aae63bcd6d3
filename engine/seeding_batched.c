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
 * picks them in GC_BATCHED_STEPS + 1 steps over the candidates (weighted
 * rows):
 *
 *	- step 0 picks one row by the race over the weights (as k-means++'s
 *	  first draw);
 *	- each later step picks the next b = gc_batched_picks(k, t) rows at
 *	  once: the b L lowest keys of one exponential race on w D^2 (stream
 *	  gc_seed_stream(t, 0)) over the rows not yet picked (Efraimidis &
 *	  Spirakis: a weighted sample without replacement), in key order,
 *	  form b groups of L (gc_batched_candidates: 2 + ln k, as greedy
 *	  k-means++ draws); each group keeps its candidate of the highest
 *	  gain, the sum over the rows of w (D^2 - min(D^2, |x - c|^2)), each
 *	  term quantised as the inertia is and summed exactly in 128 bits, the
 *	  first on ties (gc_batched_choose); then each row's D^2 falls to its
 *	  exact distance to the nearest of the step's picks.
 *
 * Keys are gc_race_key's (the row's index below its bid), gains exact
 * integers and D^2 an exact minimum of gc_sqdist_exact's distances, so
 * both devices pick the same rows.  The work is greedy's, (L + 1) C k d
 * for C candidates, in 1,025 steps instead of k.  On the
 * CPU (seed 1, Lloyd's to convergence), 50k x 16 in 4,096 blobs, k =
 * 4,096: inertia 7,734 with 256 steps, 7,701 with 1,024, 7,843 with 64,
 * against 7,719 with the sequential recluster.
 *
 * IDENTIFICATION
 *	  engine/seeding_batched.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "cpu_threads.h"
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
gc_batched_picks(int k, int t)
{
	int			per_step = (k - 1 + GC_BATCHED_STEPS - 1) / GC_BATCHED_STEPS;
	int			before = t == 0 ? 0 : 1 + (t - 1) * per_step;

	if (t == 0)
		return k > 0 ? 1 : 0;
	return before >= k ? 0 : (k - before < per_step ? k - before : per_step);
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
	int32_t    *labels;			/* n: the nearest new pick */
	double	   *d2;				/* n: its distance */
	double	   *picked;			/* the step's picks' values, b x d */
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

/* The gains pass, shared by its threads */
typedef struct GainsPass
{
	const BatchedState *st;
	int			count;
	int			inertia_exp;
	gc_u128    *gains;			/* workers x count */
} GainsPass;

/* Rows [first, first + count) of chunk into thread worker's gains */
static void
gains_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	GainsPass  *pass = ctx;
	const GcRows *rows = pass->st->rows;
	int			d = rows->d;
	gc_u128    *gains = pass->gains + (size_t) worker * pass->count;

	for (int64_t r = first; r < first + count; r++)
	{
		const double *x = chunk->values + (size_t) r * d;
		double		m = pass->st->mind2[chunk->first_row + r];
		gc_u128		w = (gc_u128) gc_chunk_weight(chunk, r),
					q = gc_quantize_wide(m, pass->inertia_exp);

		for (int c = 0; c < pass->count; c++)
		{
			double		v = gc_sqdist_within(x, gc_rows_get(rows, pass->st->drawn[c]), d, m);

			if (v < m)
				gains[c] += (q - gc_quantize_wide(v, pass->inertia_exp)) * w;
		}
	}
}

/*
 * Each drawn candidate's gain: the sum over the rows of w (D^2 -
 * min(D^2, |x - c|^2)), quantised as the inertia is, on threads: 128-bit
 * integer sums per thread, added up, so the same for any number of them
 */
static GcStatus
candidate_gains(BatchedState *st, const GcKmeansParams *params, int count, int inertia_exp,
				GcError *err)
{
	GainsPass	pass = {st, count, inertia_exp, NULL};
	GcCpuPass	run = {.rows = st->rows, .row_units = (int64_t) count * st->rows->d,
		.fn = gains_block, .ctx = &pass};
	GcStatus	status;

	run.workers = gc_cpu_threads(params->cpu_threads, st->rows->n * run.row_units);
	pass.gains = calloc((size_t) run.workers * count, sizeof(gc_u128));
	if (pass.gains == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	status = gc_cpu_run_blocks(&run, &st->poll, err, "interrupted during seeding");
	for (int c = 0; c < count; c++)
	{
		st->gains[c] = 0;
		for (int w = 0; w < run.workers; w++)
			st->gains[c] += pass.gains[(size_t) w * count + c];
	}
	free(pass.gains);
	return status;
}

/* D^2 lowered to the exact distance to the nearest of b picks (set, the first time) */
static GcStatus
lower_mind2(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			const int64_t *picks, int b, bool first, GcError *err)
{
	const GcRows *rows = st->rows;
	int			d = rows->d;

	for (int j = 0; j < b; j++)
		memcpy(st->picked + (size_t) j * d, gc_rows_get(rows, picks[j]), sizeof(double) * d);
	if (gc_cpu_labeling_applies(rows))
	{
		GcStatus	status = gc_cpu_label_rows(rows, 0, st->picked, b, frame->offset,
											   params->cpu_threads, st->labels, st->d2, NULL,
											   &st->poll, NULL, err);

		if (status != GC_OK)
			return status == GC_INTERRUPTED ?
				gc_fail(err, status, "interrupted during seeding") : status;
	}
	else
		for (int64_t i = 0; i < rows->n; i++)
			if (gc_nearest_centroid_polled(gc_rows_get(rows, i), st->picked, b, d,
										   &st->d2[i], &st->poll) < 0)
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	for (int64_t i = 0; i < rows->n; i++)
		if (first || st->d2[i] < st->mind2[i])
			st->mind2[i] = st->d2[i];
	return GC_OK;
}

/* One step: the race, the candidates' gains, the picks into picks; D^2 lowered */
static GcStatus
batched_step(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			 uint64_t seed, int t, int done, int64_t *picks, GcError *err)
{
	int			b = gc_batched_picks(params->k, t);
	int			candidates = t == 0 ? 1 : gc_batched_candidates(params, st->rows->n - done, b);

	race_keys(st, seed, t, frame->inertia_exp);
	if (gc_poll(&st->poll, st->rows->n * 8))
		return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	if (!gc_batched_select(st->keys, st->rows->n, b * candidates, st->drawn))
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (candidates > 1)
	{
		GcStatus	status = candidate_gains(st, params, b * candidates, frame->inertia_exp,
											 err);

		if (status != GC_OK)
			return status;
	}
	gc_batched_choose(st->drawn, st->gains, b, candidates, picks);
	for (int j = 0; j < b; j++)
		st->keys[picks[j]] = GC_RACE_NONE;
	return done + b < params->k ? lower_mind2(st, frame, params, picks, b, t == 0, err) : GC_OK;
}

GcStatus
gc_seed_batched_cpu(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
					uint64_t seed, int64_t *chosen, GcError *err)
{
	int64_t		n = rows->n > 0 ? rows->n : 1;
	size_t		most = (size_t) gc_batched_picks(params->k, 1) + 1;
	BatchedState st = {.rows = rows, .poll = {params->interrupted, 0}};
	GcStatus	status = GC_OK;
	int			done = 0;

	st.mind2 = malloc(sizeof(double) * n);
	st.keys = calloc(n, sizeof(uint64_t));
	st.labels = malloc(sizeof(int32_t) * n);
	st.d2 = malloc(sizeof(double) * n);
	st.picked = malloc(sizeof(double) * most * rows->d);
	st.drawn = malloc(sizeof(int64_t) * most * GC_MAX_INIT_CANDIDATES);
	st.gains = calloc(most * GC_MAX_INIT_CANDIDATES, sizeof(gc_u128));
	if (st.mind2 == NULL || st.keys == NULL || st.labels == NULL || st.d2 == NULL ||
		st.picked == NULL || st.drawn == NULL || st.gains == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int64_t i = 0; status == GC_OK && i < rows->n; i++)
		st.mind2[i] = 1.0;		/* step 0 races on the weights alone */
	for (int t = 0; status == GC_OK && done < params->k; t++)
	{
		status = batched_step(&st, frame, params, seed, t, done, chosen + done, err);
		done += gc_batched_picks(params->k, t);
	}
	free(st.mind2);
	free(st.keys);
	free(st.labels);
	free(st.d2);
	free(st.picked);
	free(st.drawn);
	free(st.gains);
	return status;
}
