/*-------------------------------------------------------------------------
 *
 * seeding_parallel.c
 *	  k-means|| seeding on the CPU (Bahmani, Moseley, Vattani, Kumar &
 *	  Vassilvitskii, "Scalable K-Means++", VLDB 2012): the reference that
 *	  cuda/seeding_parallel.cu is tested against, its rounds over the
 *	  shards of a sharded fit, and the pieces both devices share (when to
 *	  sample again, the order of a round's samples, the parameters of the
 *	  recluster).
 *
 * The first centre is k-means++'s first draw (the race of stream 0 over
 * the rows' weights).  Each round then samples every row independently,
 * with probability min(1, l w D^2 / phi) (gc_parallel_sampled: the row's
 * seeded draw against it, multiplied out), where l = gc_parallel_ell(k):
 * k (2k took 0.69 s against 0.44 s on the H100, for no better fits:
 * bench/results/seeding-parallel-h100.md), and less from
 * GC_BATCHED_MIN_K, where the candidates' count sets the seeding's cost
 * (gc_seeding.h; doc/performance.md, "Large k"), D^2 is the row's exact
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
 * and greedy k-means++ (engine/seeding.c) chooses k among the rest; from
 * GC_BATCHED_MIN_K centres, batched greedy k-means++
 * (engine/seeding_batched.c), its k sequential steps in 1,025.
 *
 * Every pass but the recluster is written once over a shard of the rows
 * (GcParallelOps: the first race, the nearest pass, the sampling, the
 * candidates' weights), and gc_seed_kmeans_parallel_shards adds up what
 * the shards return, which equals one pass over all the rows: the CPU
 * reference is its one-shard case, a sharded fit (kmeans_shards.c) runs
 * it over its children's shards.
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

/*
 * What k-means|| keeps of one shard's rows between its passes: the rows
 * row_base .. row_base + n - 1 of the fit (all of them, unsharded)
 */
struct GcParallelShard
{
	const GcRows *rows;
	int64_t		row_base;
	const GcKmeansParams *params;
	int			inertia_exp;
	double	   *mind2;			/* n: squared distance to the nearest candidate */
	int32_t    *nearest;		/* n: that candidate */
	const double *offset;		/* the frame's centre, for the screened labeling */
	int32_t    *labels;			/* n, the screened labeling's answers; NULL: none yet */
	double	   *d2;				/* n, and their distances */
	GcPoll		poll;			/* the interrupt hook, polled by work */
};

double
gc_parallel_ell(int k)
{
	return (gc_batched_applies(k) ? GC_PARALLEL_OVERSAMPLING_LARGE_K :
			GC_PARALLEL_OVERSAMPLING) * k;
}

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


bool
gc_row_list_push(GcRowList *list, int64_t row)
{
	if (list->count == list->capacity)
	{
		int64_t		capacity = list->capacity > 0 ? list->capacity * 2 : 64;
		int64_t    *grown = realloc(list->rows, sizeof(int64_t) * capacity);

		if (grown == NULL)
			return false;
		list->rows = grown;
		list->capacity = capacity;
	}
	list->rows[list->count++] = row;
	return true;
}

GcStatus
gc_parallel_shard_open(const GcRows *rows, int64_t row_base, const GcFrame *frame,
					   const GcKmeansParams *params, GcParallelShard **shard, GcError *err)
{
	GcParallelShard *sh = calloc(1, sizeof(GcParallelShard));
	int64_t		n = rows->n > 0 ? rows->n : 1;

	if (sh == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	sh->rows = rows;
	sh->row_base = row_base;
	sh->params = params;
	sh->inertia_exp = frame->inertia_exp;
	sh->offset = frame->offset;
	sh->poll.interrupted = params->interrupted;
	sh->mind2 = malloc(sizeof(double) * n);
	sh->nearest = malloc(sizeof(int32_t) * n);
	if (sh->mind2 == NULL || sh->nearest == NULL)
	{
		gc_parallel_shard_close(sh);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	}
	*shard = sh;
	return GC_OK;
}

void
gc_parallel_shard_close(void *shard)
{
	GcParallelShard *sh = shard;

	free(sh->mind2);
	free(sh->nearest);
	free(sh->labels);
	free(sh->d2);
	free(sh);
}

void
gc_parallel_shard_state(GcParallelShard *shard, double **mind2, int32_t **nearest)
{
	*mind2 = shard->mind2;
	*nearest = shard->nearest;
}

/*
 * The screened labeling's buffers, taken by a nearest pass (a shard whose
 * nearest passes run on a GPU never takes them); false: each row is
 * scanned alone (a narrow store, or no memory)
 */
static bool
screened_labeling(GcParallelShard *sh)
{
	int64_t		n = sh->rows->n > 0 ? sh->rows->n : 1;

	if (sh->labels == NULL && gc_cpu_labeling_applies(sh->rows))
	{
		sh->labels = malloc(sizeof(int32_t) * n);
		sh->d2 = malloc(sizeof(double) * n);
		if (sh->labels == NULL || sh->d2 == NULL)
		{
			free(sh->labels);
			free(sh->d2);
			sh->labels = NULL;
			sh->d2 = NULL;
		}
	}
	return sh->labels != NULL;
}

/* The shard's bid for the first centre: k-means++'s first draw, the race over the weights */
static GcStatus
shard_first(void *shard, uint64_t seed, uint64_t *key, GcError *err)
{
	GcParallelShard *sh = shard;
	const GcRows *rows = sh->rows;
	uint64_t	best = GC_RACE_NONE;

	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = sh->row_base + chunk->first_row + i;
			double		w = chunk->weights ? chunk->weights[i] : 1.0;
			uint64_t	bid;

			if (gc_poll(&sh->poll, 8))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			bid = gc_race_key(gc_unit_draw(gc_draw_hash(rows, chunk, i), seed, gc_seed_stream(0, 0)),
							  w, row);
			if (bid < best)
				best = bid;
		}
	}
	*key = best;
	return GC_OK;
}

/*
 * Lower each row's D^2 to its nearest among the m candidates of batch,
 * numbered first .. first + m - 1, where closer (set it, in the first
 * pass), and sum the shard's potential
 */
static GcStatus
shard_nearest(void *shard, const double *batch, int64_t first, int64_t m,
			  unsigned __int128 *potential, GcError *err)
{
	GcParallelShard *sh = shard;
	const GcRows *rows = sh->rows;
	int			d = rows->d;
	gc_u128		sum = 0;

	/* the screened labeling's nearest samples, on threads, to the bit the scan's */
	if (screened_labeling(sh))
	{
		GcStatus	status = gc_cpu_label_rows(rows, 0, batch, (int) m, sh->offset,
											   sh->params->cpu_threads, sh->labels, sh->d2, NULL,
											   &sh->poll, NULL, err);

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

			if (sh->labels)
			{
				j = sh->labels[row];
				d2 = sh->d2[row];
			}
			else				/* polled within the row too, where one row is more than a poll's work */
				j = gc_nearest_centroid_polled(chunk->values + (size_t) i * d, batch,
											   (int) m, d, &d2, &sh->poll);
			if (j < 0)
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			if (first == 0 || d2 < sh->mind2[row])
			{
				sh->mind2[row] = d2;
				sh->nearest[row] = (int32_t) (first + j);
			}
			sum += gc_quantize_wide(sh->mind2[row], sh->inertia_exp) *
				(gc_u128) gc_chunk_weight(chunk, i);
		}
	}
	*potential = sum;
	return GC_OK;
}

/* The shard's samples of round round, appended to sampled in row order */
static GcStatus
shard_sample(void *shard, uint64_t seed, int round, double phi, GcRowList *sampled,
			 GcError *err)
{
	GcParallelShard *sh = shard;
	const GcRows *rows = sh->rows;
	double		ell = gc_parallel_ell(sh->params->k);

	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		wd2 = sh->mind2[row];

			if (gc_poll(&sh->poll, 8))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			if (chunk->weights)
				wd2 *= chunk->weights[i];
			if (gc_parallel_sampled(gc_unit_draw(gc_draw_hash(rows, chunk, i), seed, gc_parallel_stream(round)),
									wd2, ell, phi) &&
				!gc_row_list_push(sampled, sh->row_base + row))
				return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
		}
	}
	return GC_OK;
}

/* Each row's weight added to its nearest candidate's */
static GcStatus
shard_weights(void *shard, int64_t *weight, GcError *err)
{
	GcParallelShard *sh = shard;
	const GcRows *rows = sh->rows;

	(void) err;
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
			weight[sh->nearest[chunk->first_row + i]] += gc_chunk_weight(chunk, i);
	}
	return GC_OK;
}

const GcParallelOps gc_parallel_cpu_ops = {
	.first = shard_first,
	.nearest = shard_nearest,
	.sample = shard_sample,
	.weights = shard_weights,
	.close = gc_parallel_shard_close,
	.recluster = NULL,			/* the host's, after the passes */
};

/*
 * One pass over the shards as a runner runs it (GcShardRunner): its
 * inputs, and a slot of its answers for each shard (keys, potentials,
 * samples) or each group (weights), added up here in shard order after
 */
typedef struct ShardsPass
{
	const GcParallelOps *ops;
	void	  **shards;
	int			nshards;
	const GcShardRunner *runner;	/* NULL: in order on this thread */
	uint64_t	seed;
	int			round;			/* sample: the round and the potential */
	double		phi;
	const double *batch;		/* nearest: the candidates' values */
	int64_t		first;
	int64_t		m;
	uint64_t   *keys;			/* nshards */
	gc_u128    *potentials;		/* nshards */
	GcRowList  *samples;		/* nshards */
	int64_t   **weights;		/* the runner's groups: count each, zeroed */
} ShardsPass;

static GcStatus
first_task(int shard, int group, void *arg, GcError *err)
{
	ShardsPass *p = arg;

	(void) group;
	p->keys[shard] = GC_RACE_NONE;
	return p->ops->first(p->shards[shard], p->seed, &p->keys[shard], err);
}

static GcStatus
nearest_task(int shard, int group, void *arg, GcError *err)
{
	ShardsPass *p = arg;

	(void) group;
	p->potentials[shard] = 0;
	return p->ops->nearest(p->shards[shard], p->batch, p->first, p->m, &p->potentials[shard],
						   err);
}

static GcStatus
sample_task(int shard, int group, void *arg, GcError *err)
{
	ShardsPass *p = arg;

	(void) group;
	p->samples[shard].count = 0;
	return p->ops->sample(p->shards[shard], p->seed, p->round, p->phi, &p->samples[shard], err);
}

static GcStatus
weights_task(int shard, int group, void *arg, GcError *err)
{
	ShardsPass *p = arg;

	return p->ops->weights(p->shards[shard], p->weights[group], err);
}

/* task over every shard, as the pass's runner runs it */
static GcStatus
run_pass(ShardsPass *p, GcShardTask task, GcError *err)
{
	GcStatus	status = GC_OK;

	if (p->runner != NULL)
		return p->runner->run(p->runner->ctx, task, p, err);
	for (int i = 0; status == GC_OK && i < p->nshards; i++)
		status = task(i, 0, p, err);
	return status;
}

/* The least race key of the first draw over every shard */
static GcStatus
first_race(ShardsPass *p, uint64_t *best, GcError *err)
{
	GcStatus	status = run_pass(p, first_task, err);

	*best = GC_RACE_NONE;
	for (int i = 0; status == GC_OK && i < p->nshards; i++)
		if (p->keys[i] < *best)
			*best = p->keys[i];
	return status;
}

/*
 * Every shard's nearest pass over candidates first .. first + m - 1 of
 * cand (their values from rows), the potentials added
 */
static GcStatus
nearest_passes(ShardsPass *p, const GcRows *rows, const GcRowList *cand, int64_t first,
			   int64_t m, double **batch, gc_u128 *potential, GcError *err)
{
	double	   *values = realloc(*batch, sizeof(double) * m * rows->d);
	GcStatus	status;

	if (values == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	*batch = values;
	for (int64_t j = 0; j < m; j++)
		gc_rows_copy_row(rows, cand->rows[first + j], values + (size_t) j * rows->d);
	p->batch = values;
	p->first = first;
	p->m = m;
	status = run_pass(p, nearest_task, err);
	*potential = 0;
	for (int i = 0; status == GC_OK && i < p->nshards; i++)
		*potential += p->potentials[i];
	return status;
}

/* A round's samples of every shard appended to cand, in row order */
static GcStatus
sample_round(ShardsPass *p, int round, double phi, GcRowList *cand, GcError *err)
{
	GcStatus	status;

	p->round = round;
	p->phi = phi;
	status = run_pass(p, sample_task, err);
	for (int i = 0; status == GC_OK && i < p->nshards; i++)
		for (int64_t j = 0; j < p->samples[i].count; j++)
			if (!gc_row_list_push(cand, p->samples[i].rows[j]))
				return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	return status;
}

/* Each candidate's weight: the shards' rows nearest to it, into weight (count, zeroed) */
static GcStatus
candidate_weights(ShardsPass *p, int64_t count, int64_t *weight, GcError *err)
{
	int			groups = p->runner != NULL ? p->runner->groups : 1;
	GcStatus	status = GC_OK;

	p->weights = calloc(groups, sizeof(int64_t *));
	if (p->weights == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	p->weights[0] = weight;
	for (int g = 1; g < groups; g++)
		if ((p->weights[g] = calloc(count > 0 ? count : 1, sizeof(int64_t))) == NULL)
			status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
		status = run_pass(p, weights_task, err);
	for (int g = 1; g < groups; g++)
	{
		for (int64_t c = 0; status == GC_OK && c < count; c++)
			weight[c] += p->weights[g][c];
		free(p->weights[g]);
	}
	free(p->weights);
	p->weights = NULL;
	return status;
}

/*
 * The candidates of weight above zero, weighted, reclustered to k by
 * greedy k-means++ (batched from GC_BATCHED_MIN_K), on the first shard's
 * device where its ops offer it
 */
static GcStatus
recluster(const GcParallelOps *ops, void *first_shard, const GcRows *rows,
		  const GcRowList *cand_rows, const int64_t *weight, const GcFrame *frame,
		  const GcKmeansParams *asked, uint64_t seed, int64_t *chosen, GcError *err)
{
	GcKmeansParams params = gc_parallel_recluster_params(asked);
	int64_t		count = cand_rows->count;
	int64_t    *kept = malloc(sizeof(int64_t) * count);
	int64_t    *picks = malloc(sizeof(int64_t) * params.k);
	GcRows		cand;
	GcStatus	status;
	bool		cand_ready = false;

	if (kept == NULL || picks == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	else
		status = gc_rows_init(&cand, rows->d, malloc, free, err);
	if (status == GC_OK)
	{
		int64_t		nkept = 0;

		cand_ready = true;
		gc_rows_set_weighted(&cand);
		for (int64_t c = 0; c < count && status == GC_OK; c++)
		{
			double	   *slot;

			if (weight[c] == 0)
				continue;
			if ((slot = gc_rows_reserve(&cand, err)) == NULL)
				status = err->status;
			else
			{
				gc_rows_copy_row(rows, cand_rows->rows[c], slot);
				gc_rows_commit_weighted(&cand, (double) weight[c]);
				kept[nkept++] = cand_rows->rows[c];
			}
		}
		if (status == GC_OK && ops->recluster != NULL)
			status = ops->recluster(first_shard, &cand, &params, seed, picks, err);
		else if (status == GC_OK && gc_batched_recluster(params.k, nkept))
			status = gc_seed_batched_cpu(&cand, frame, &params, seed, picks, err);
		else if (status == GC_OK)
			status = gc_seed_kmeanspp_cpu(&cand, frame, &params, seed, picks, err);
		for (int t = 0; status == GC_OK && t < params.k; t++)
			chosen[t] = kept[picks[t]];
	}
	if (cand_ready)
		gc_rows_release(&cand);
	free(kept);
	free(picks);
	return status;
}

/* The wall time since *since added to *phase; *since moved on */
static void
phase_done(double *phase, double *since)
{
	double		now = gc_now_ms();

	*phase += now - *since;
	*since = now;
}

GcStatus
gc_seed_kmeans_parallel_shards(const GcParallelOps *ops, void **shards, int nshards,
							   const GcShardRunner *runner, const GcRows *rows,
							   const GcFrame *frame, const GcKmeansParams *params,
							   uint64_t seed, int64_t *chosen, GcError *err)
{
	ShardsPass	pass = {.ops = ops, .shards = shards, .nshards = nshards, .runner = runner,
	.seed = seed};
	GcRowList	cand = {0};
	double	   *batch = NULL;
	int64_t    *weight = NULL;
	GcSeedingPhases spent = {0};
	double		since = gc_now_ms();
	gc_u128		potential = 0;
	uint64_t	best = GC_RACE_NONE;
	GcStatus	status = GC_OK;
	int			round = 0;

	pass.keys = malloc(sizeof(uint64_t) * nshards);
	pass.potentials = malloc(sizeof(gc_u128) * nshards);
	pass.samples = calloc(nshards, sizeof(GcRowList));
	if (pass.keys == NULL || pass.potentials == NULL || pass.samples == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
		status = first_race(&pass, &best, err);
	if (status == GC_OK && !gc_row_list_push(&cand, (int64_t) (uint32_t) best))
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
		status = nearest_passes(&pass, rows, &cand, 0, 1, &batch, &potential, err);
	while (status == GC_OK && gc_parallel_more_rounds(round, cand.count, params->k, potential))
	{
		int64_t		first = cand.count;

		round++;
		status = sample_round(&pass, round, gc_inertia_value(potential, frame), &cand, err);
		if (status == GC_OK &&
			!gc_parallel_sort_batch(rows, cand.rows + first, cand.count - first))
			status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
		if (status == GC_OK && cand.count > first)
			status = nearest_passes(&pass, rows, &cand, first, cand.count - first, &batch,
									&potential, err);
	}
	phase_done(&spent.rounds_ms, &since);
	if (status == GC_OK && (weight = calloc(cand.count > 0 ? cand.count : 1,
											sizeof(int64_t))) == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (status == GC_OK)
		status = candidate_weights(&pass, cand.count, weight, err);
	phase_done(&spent.weights_ms, &since);
	if (status == GC_OK)
		status = recluster(ops, shards[0], rows, &cand, weight, frame, params, seed, chosen,
						   err);
	phase_done(&spent.recluster_ms, &since);
	if (params->phases != NULL)
	{
		params->phases->rounds_ms += spent.rounds_ms;
		params->phases->weights_ms += spent.weights_ms;
		params->phases->recluster_ms += spent.recluster_ms;
	}
	for (int i = 0; pass.samples && i < nshards; i++)
		free(pass.samples[i].rows);
	free(pass.samples);
	free(pass.keys);
	free(pass.potentials);
	free(cand.rows);
	free(batch);
	free(weight);
	return status;
}

GcStatus
gc_seed_kmeans_parallel_cpu(const GcRows *rows, const GcFrame *frame,
							const GcKmeansParams *params, uint64_t seed,
							int64_t *chosen, GcError *err)
{
	GcParallelShard *shard;
	void	   *shards[1];
	GcStatus	status = gc_parallel_shard_open(rows, 0, frame, params, &shard, err);

	if (status != GC_OK)
		return status;
	shards[0] = shard;
	status = gc_seed_kmeans_parallel_shards(&gc_parallel_cpu_ops, shards, 1, NULL, rows,
											frame, params, seed, chosen, err);
	gc_parallel_shard_close(shard);
	return status;
}
