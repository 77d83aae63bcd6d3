/*-------------------------------------------------------------------------
 *
 * seeding_batched.c
 *	  Batched k-means++ on a sample, the default seeding at large k: the
 *	  CPU reference that cuda/seeding_batched.cu is tested against, and
 *	  the pieces both share (the sample, the steps, the choice of a
 *	  step's picks).
 *
 * At large k, k-means|| (seeding_parallel.c) costs tens of Lloyd
 * iterations: each of its rounds labels every row against ~k samples,
 * and its recluster is k sequential greedy steps.  Here instead:
 *
 *	- the sample: each row is kept where its seeded draw (stream
 *	  GC_BATCHED_SAMPLE_STREAM) is at most GC_BATCHED_SAMPLE_PER_CENTRE k
 *	  / n (every row where that is 1 or more, or where fewer than k are
 *	  kept), so the sample depends on the rows' values and the seed only;
 *	  a row keeps its weight;
 *	- the steps: step 0 picks one row by the race over the weights (as
 *	  k-means++'s first draw); each of the GC_BATCHED_STEPS later steps
 *	  picks the next b = gc_batched_picks(k, t) rows at once: the b L
 *	  lowest keys of one exponential race on w D^2 over the sample rows
 *	  not yet picked (Efraimidis & Spirakis: a weighted sample without
 *	  replacement), in key order, form b groups of L (gc_batched_candidates,
 *	  2 + ln k as greedy k-means++); each group keeps its candidate of the
 *	  highest gain, the sum over the sample of w (D^2 - min(D^2,
 *	  |x - c|^2)) quantised as the inertia is (exact 128-bit sums), the
 *	  first on ties (gc_batched_choose); then each sample row's D^2 falls
 *	  to its exact distance to the nearest of the picks.
 *
 * Keys are gc_race_key's (the row's own index below its bid), so a step's
 * picks, and their order, depend on the rows' values and the seed only,
 * and D^2 is an exact minimum of gc_sqdist_exact's distances: a GPU
 * version can pick the same rows (keys and gains on the device, the
 * choices by the shared functions on the host).  Its work is (L + 1) m k
 * d for a sample of m rows: (L + 1) m / n of a Lloyd iteration.
 *
 * Not yet any default: on the CPU (seed 1, Lloyd's to convergence) its
 * fits end within 1% of k-means||'s where clusters hold many rows (100k x
 * 32, k = 4,096 around 1,024 centres: +0.43%; 100k x 16 uniform, k =
 * 4,096: +0.06%), but not where k equals the blobs' count and each holds
 * a dozen rows (50k x 16, k = 4,096 blobs: +6.5%; +2.7% with every row in
 * the sample), the shape of kmeans_bench's blobs at 1M x 64, k = 65,536.
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

int
gc_batched_picks(int k, int t)
{
	int			per_step = (k - 1 + GC_BATCHED_STEPS - 1) / GC_BATCHED_STEPS;
	int			before = t == 0 ? 0 : 1 + (t - 1) * per_step;

	if (t == 0)
		return k > 0 ? 1 : 0;
	return before >= k ? 0 : (k - before < per_step ? k - before : per_step);
}

GcStatus
gc_batched_sample(const GcRows *rows, int k, uint64_t seed, GcBatchedSample *sample,
				  GcError *err)
{
	double		p = (double) GC_BATCHED_SAMPLE_PER_CENTRE * k / (double) (rows->n > 0 ? rows->n : 1);
	uint64_t	key = gc_draw_key(seed, GC_BATCHED_SAMPLE_STREAM);

	memset(sample, 0, sizeof(*sample));
	sample->rows = malloc(sizeof(int64_t) * (rows->n > 0 ? rows->n : 1));
	sample->hashes = malloc(sizeof(uint64_t) * (rows->n > 0 ? rows->n : 1));
	if (sample->rows == NULL || sample->hashes == NULL)
	{
		gc_batched_sample_free(sample);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	}
	/* twice: the draws, then every row where they keep fewer than k */
	for (int all = p >= 1.0; all < 2 && sample->count < k; all++)
	{
		sample->count = 0;
		for (int ci = 0; ci < rows->nchunks; ci++)
		{
			const GcChunk *chunk = &rows->chunks[ci];

			for (int64_t i = 0; i < chunk->count; i++)
			{
				uint64_t	hash = gc_draw_hash(rows, chunk, i);

				if (!all && gc_unit_draw_keyed(hash, key) > p)
					continue;
				sample->rows[sample->count] = chunk->first_row + i;
				sample->hashes[sample->count++] = hash;
			}
		}
	}
	return GC_OK;
}

void
gc_batched_sample_free(GcBatchedSample *sample)
{
	free(sample->rows);
	free(sample->hashes);
	sample->rows = NULL;
	sample->hashes = NULL;
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
	{
		int			best = g * candidates;

		for (int j = best + 1; j < (g + 1) * candidates; j++)
			if (gains[j] > gains[best])
				best = j;
		picks[g] = drawn[best];
	}
}

/* What the CPU's steps keep between them */
typedef struct BatchedState
{
	GcRows		store;			/* the sample's rows, weighted */
	const GcBatchedSample *sample;
	double	   *mind2;			/* m: D^2 */
	uint64_t   *keys;			/* m: the step's race */
	int32_t    *labels;			/* m: the nearest new pick */
	double	   *d2;				/* m: its distance */
	double	   *picked;			/* the step's picks' values, b x d */
	int64_t    *drawn;			/* the step's candidates, b x L */
	gc_u128    *gains;			/* and their gains */
	GcPoll		poll;
} BatchedState;

/* The race of step t over the sample rows not picked (their keys GC_RACE_NONE) */
static void
race_keys(BatchedState *st, uint64_t seed, int t, int inertia_exp)
{
	uint64_t	key = gc_draw_key(seed, gc_seed_stream(t, 0));
	int64_t		i = 0;

	for (int ci = 0; ci < st->store.nchunks; ci++)
	{
		const GcChunk *chunk = &st->store.chunks[ci];

		for (int64_t r = 0; r < chunk->count; r++, i++)
		{
			double		w = st->mind2[i] * chunk->weights[r];

			if (st->keys[i] == GC_RACE_NONE)
				continue;
			st->keys[i] = gc_race_key(gc_unit_draw_keyed(st->sample->hashes[i], key),
									  gc_race_weight(w, inertia_exp), st->sample->rows[i]);
		}
	}
}

/*
 * Each drawn candidate's gain: the sum over the sample of w (D^2 -
 * min(D^2, |x - c|^2)), quantised as the inertia is
 */
static GcStatus
candidate_gains(BatchedState *st, int count, int inertia_exp, GcError *err)
{
	int			d = st->store.d;
	int64_t		i = 0;

	for (int c = 0; c < count; c++)
		st->gains[c] = 0;
	for (int ci = 0; ci < st->store.nchunks; ci++)
	{
		const GcChunk *chunk = &st->store.chunks[ci];

		for (int64_t r = 0; r < chunk->count; r++, i++)
		{
			const double *x = chunk->values + (size_t) r * d;
			double		m = st->mind2[i];
			gc_u128		w = (gc_u128) gc_chunk_weight(chunk, r),
						q = gc_quantize_wide(m, inertia_exp);

			if (gc_poll(&st->poll, (int64_t) count * d))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			for (int c = 0; c < count; c++)
			{
				double		v = gc_sqdist_within(x, gc_rows_get(&st->store, st->drawn[c]), d, m);

				if (v < m)
					st->gains[c] += (q - gc_quantize_wide(v, inertia_exp)) * w;
			}
		}
	}
	return GC_OK;
}

/* D^2 lowered to the exact distance to the nearest of b picks (set, the first time) */
static GcStatus
lower_mind2(BatchedState *st, const GcFrame *frame, const GcKmeansParams *params,
			const int64_t *picks, int b, bool first, GcError *err)
{
	int			d = st->store.d;
	int64_t		m = st->sample->count;

	for (int j = 0; j < b; j++)
		memcpy(st->picked + (size_t) j * d, gc_rows_get(&st->store, picks[j]), sizeof(double) * d);
	if (gc_cpu_labeling_applies(&st->store))
	{
		GcStatus	status = gc_cpu_label_rows(&st->store, 0, st->picked, b, frame->offset,
											   params->cpu_threads, st->labels, st->d2, NULL,
											   &st->poll, NULL, err);

		if (status != GC_OK)
			return status == GC_INTERRUPTED ?
				gc_fail(err, status, "interrupted during seeding") : status;
	}
	else
		for (int64_t i = 0; i < m; i++)
			if (gc_nearest_centroid_polled(gc_rows_get(&st->store, i), st->picked, b, d,
										   &st->d2[i], &st->poll) < 0)
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	for (int64_t i = 0; i < m; i++)
		if (first || st->d2[i] < st->mind2[i])
			st->mind2[i] = st->d2[i];
	return GC_OK;
}

/* The sample's rows copied into a weighted store of their own */
static GcStatus
copy_sample(BatchedState *st, const GcRows *rows, GcError *err)
{
	GcStatus	status = gc_rows_init(&st->store, rows->d, malloc, free, err);

	if (status != GC_OK)
		return status;
	gc_rows_set_weighted(&st->store);
	for (int64_t i = 0; i < st->sample->count; i++)
	{
		double	   *slot = gc_rows_reserve(&st->store, err);

		if (slot == NULL)
			return err->status;
		gc_rows_copy_row(rows, st->sample->rows[i], slot);
		gc_rows_commit_weighted(&st->store, gc_rows_weight(rows, st->sample->rows[i]));
	}
	return GC_OK;
}

GcStatus
gc_seed_batched_cpu(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
					uint64_t seed, int64_t *chosen, GcError *err)
{
	GcBatchedSample sample;
	BatchedState st = {.sample = &sample, .poll = {params->interrupted, 0}};
	int64_t    *picks = malloc(sizeof(int64_t) * params->k);
	int			done = 0;
	bool		store_ready = false;
	GcStatus	status;

	status = gc_batched_sample(rows, params->k, seed, &sample, err);
	if (status != GC_OK)
	{
		free(picks);
		return status;
	}
	st.mind2 = malloc(sizeof(double) * sample.count);
	st.keys = calloc(sample.count, sizeof(uint64_t));
	st.labels = malloc(sizeof(int32_t) * sample.count);
	st.d2 = malloc(sizeof(double) * sample.count);
	st.picked = malloc(sizeof(double) * (size_t) (gc_batched_picks(params->k, 1) + 1) * rows->d);
	st.drawn = malloc(sizeof(int64_t) * (gc_batched_picks(params->k, 1) + 1) * GC_MAX_INIT_CANDIDATES);
	st.gains = calloc((size_t) (gc_batched_picks(params->k, 1) + 1) * GC_MAX_INIT_CANDIDATES,
					  sizeof(gc_u128));
	if (picks == NULL || st.mind2 == NULL || st.keys == NULL || st.labels == NULL ||
		st.d2 == NULL || st.picked == NULL || st.drawn == NULL || st.gains == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
	{
		store_ready = true;
		status = copy_sample(&st, rows, err);
	}
	for (int64_t i = 0; status == GC_OK && i < sample.count; i++)
		st.mind2[i] = 1.0;		/* step 0 races on the weights alone */
	for (int t = 0; status == GC_OK && done < params->k; t++)
	{
		int			b = gc_batched_picks(params->k, t);

		int			candidates = t == 0 ? 1 :
			gc_batched_candidates(params, sample.count - done, b);

		race_keys(&st, seed, t, frame->inertia_exp);
		if (gc_poll(&st.poll, sample.count * 8))
			status = gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		else if (!gc_batched_select(st.keys, sample.count, b * candidates, st.drawn))
			status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
		if (status == GC_OK && candidates > 1)
			status = candidate_gains(&st, b * candidates, frame->inertia_exp, err);
		if (status == GC_OK)
			gc_batched_choose(st.drawn, st.gains, b, candidates, picks + done);
		for (int j = 0; status == GC_OK && j < b; j++)
			st.keys[picks[done + j]] = GC_RACE_NONE;
		if (status == GC_OK && done + b < params->k)
			status = lower_mind2(&st, frame, params, picks + done, b, t == 0, err);
		done += b;
	}
	for (int c = 0; status == GC_OK && c < params->k; c++)
		chosen[c] = sample.rows[picks[c]];
	if (store_ready)
		gc_rows_release(&st.store);
	gc_batched_sample_free(&sample);
	free(picks);
	free(st.mind2);
	free(st.keys);
	free(st.labels);
	free(st.d2);
	free(st.picked);
	free(st.drawn);
	free(st.gains);
	return status;
}
