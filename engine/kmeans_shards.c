/*-------------------------------------------------------------------------
 *
 * kmeans_shards.c
 *	  A sharded k-means backend: one fit whose rows are split into
 *	  contiguous ranges (shards), each run by its own session of a child
 *	  backend, giving the same model, to the bit, as one session over all
 *	  the rows.  It is the base of one fit over several devices.
 *
 * Why it is exact: a step's centroid update reads only integer sums (each
 * row's quantised values times its weight, gc_quantize) and integer
 * weights per cluster, which add to the same integers in any order; so
 * the shards' partial sums (GcKmeansBackend.step_partial), added here,
 * equal the sums one session makes, and the centroids follow from them
 * by the one update both compute (centroid_update.c), then go back to
 * every shard (load_centroids).  The inertia is an exact 128-bit sum of
 * quantised distances, which the shards' partial sums (score_sum) add up
 * to as well.  Pruned labeling gives Lloyd's labels, so a shard prunes
 * its own share of the driver's pruned prefix.
 *
 * Each shard is a view of the parent store: its chunks point into the
 * parent's (borrowed, never copied or freed here), it shares the parent's
 * bounding box and frame, and its row i is parent row first + i, draw
 * hashes included.  Labels and distances come back in row order.
 *
 * k-means|| runs its passes in the shards (the child's parallel_shard,
 * engine/seeding_parallel.c): race keys, potentials, samples and
 * candidate weights add up to the unsplit pass's.  So does k-means++
 * (kmeanspp_shard, engine/seeding.c): each step's races and greedy
 * potentials.  Batched k-means++ is not split yet: it runs on the CPU
 * reference over the parent store (the child's seeding gives the same
 * rows); random and given initialisation need no backend.  The check of
 * reduced precision and row ordering are not offered (the CPU's labels
 * are exact and it does not reorder).
 *
 * gc_kmeans_cuda_sharded_backend (cuda/kmeans_cuda.cu) is this backend
 * over GPU sessions (gc_kmeans_shards_open), all on the calling thread's
 * device; they label every row by Lloyd's labeling (pruned_rows saves no
 * work there) and seed on the CPU reference over every row.
 *
 * IDENTIFICATION
 *	  engine/kmeans_shards.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

typedef struct ShardSession
{
	const GcKmeansBackend *child;
	const GcRows *rows;			/* the parent store */
	const GcFrame *frame;
	const GcKmeansParams *params;
	int			k;
	int			nshards;
	int64_t    *first;			/* nshards + 1: shard i is rows first[i] .. first[i + 1] - 1 */
	GcRows	   *views;			/* nshards: each shard's rows */
	void	  **sessions;		/* nshards: each shard's child session */
	long long  *sums;			/* k * d: the step's sums over every shard */
	long long  *counts;			/* k */
	long long  *part_sums;		/* k * d: one shard's */
	long long  *part_counts;	/* k */
	int64_t    *part_sizes;		/* k: one shard's sizes, scoring */
	double	   *centroids;		/* k * d: the restart's current centroids */
	double	   *mean;			/* d: one updated centroid */
	GcPoll		poll;
} ShardSession;

static void shards_close(void *session);

/*
 * A view of rows first .. first + count - 1 of rows: chunks pointing
 * into the parent's, which stay the parent's
 */
static GcStatus
make_view(const GcRows *rows, int64_t first, int64_t count, GcRows *view, GcError *err)
{
	int64_t		end = first + count;

	memset(view, 0, sizeof(*view));
	view->d = rows->d;
	view->lo = rows->lo;
	view->hi = rows->hi;
	view->weighted = rows->weighted;
	view->float_exact = rows->float_exact;
	view->narrow = rows->narrow;
	view->draw_hashes = rows->draw_hashes ? rows->draw_hashes + first : NULL;
	view->chunks = malloc(sizeof(GcChunk) * (rows->nchunks > 0 ? rows->nchunks : 1));
	if (view->chunks == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a shard's rows");
	view->maxchunks = rows->nchunks;
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];
		int64_t		lo = chunk->first_row > first ? chunk->first_row : first;
		int64_t		hi = chunk->first_row + chunk->count < end ?
			chunk->first_row + chunk->count : end;
		int64_t		r = lo - chunk->first_row;
		GcChunk    *part = &view->chunks[view->nchunks];

		if (hi <= lo)
			continue;
		*part = *chunk;
		if (chunk->values)
			part->values = chunk->values + (size_t) r * rows->d;
		if (chunk->narrow_values)
			part->narrow_values = chunk->narrow_values + (size_t) r * rows->d;
		part->hashes = chunk->hashes + r;
		if (chunk->weights)
			part->weights = chunk->weights + r;
		part->first_row = lo - first;
		part->count = part->capacity = hi - lo;
		part->borrowed = true;
		part->free = NULL;
		for (int64_t i = 0; i < part->count; i++)
			view->total_weight += gc_chunk_weight(part, i);
		view->nchunks++;
	}
	view->n = count;
	return GC_OK;
}

/*
 * Open one session of child per shard, over params->shards (at least 1,
 * at most n) contiguous ranges of about equal rows
 */
static GcStatus
shards_open_child(const GcKmeansBackend *child, const GcRows *rows, const GcFrame *frame,
				  const GcKmeansParams *params, void **session, GcError *err)
{
	ShardSession *s = calloc(1, sizeof(ShardSession));
	int			k = params->k,
				d = rows->d;
	int			nshards = params->shards > 1 ? params->shards : 1;
	GcStatus	status = GC_OK;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sharded session");
	if (nshards > rows->n)
		nshards = rows->n > 0 ? (int) rows->n : 1;
	s->child = child;
	s->rows = rows;
	s->frame = frame;
	s->params = params;
	s->k = k;
	s->poll.interrupted = params->interrupted;
	s->first = malloc(sizeof(int64_t) * (nshards + 1));
	s->views = calloc(nshards, sizeof(GcRows));
	s->sessions = calloc(nshards, sizeof(void *));
	s->sums = malloc(sizeof(long long) * k * d);
	s->counts = malloc(sizeof(long long) * k);
	s->part_sums = malloc(sizeof(long long) * k * d);
	s->part_counts = malloc(sizeof(long long) * k);
	s->part_sizes = malloc(sizeof(int64_t) * k);
	s->centroids = malloc(sizeof(double) * k * d);
	s->mean = malloc(sizeof(double) * d);
	if (s->first == NULL || s->views == NULL || s->sessions == NULL || s->sums == NULL ||
		s->counts == NULL || s->part_sums == NULL || s->part_counts == NULL ||
		s->part_sizes == NULL || s->centroids == NULL || s->mean == NULL)
	{
		shards_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sharded session");
	}
	for (int i = 0; i <= nshards; i++)
		s->first[i] = rows->n * i / nshards;
	for (int i = 0; status == GC_OK && i < nshards; i++)
	{
		status = make_view(rows, s->first[i], s->first[i + 1] - s->first[i], &s->views[i], err);
		s->nshards = i + 1;
		if (status == GC_OK)
			status = child->open(&s->views[i], frame, params, &s->sessions[i], err);
	}
	if (status != GC_OK)
	{
		shards_close(s);
		return status;
	}
	*session = s;
	return GC_OK;
}

static void
shards_close(void *session)
{
	ShardSession *s = session;

	for (int i = 0; i < s->nshards; i++)
	{
		if (s->sessions[i])
			s->child->close(s->sessions[i]);
		free(s->views[i].chunks);
	}
	free(s->first);
	free(s->views);
	free(s->sessions);
	free(s->sums);
	free(s->counts);
	free(s->part_sums);
	free(s->part_counts);
	free(s->part_sizes);
	free(s->centroids);
	free(s->mean);
	free(s);
}

/*
 * k-means++ over the shards (engine/seeding.c): each child runs both
 * passes of every step over its rows, the keys and potentials combined
 * here; on the CPU reference over every row where the child offers no
 * shards
 */
static GcStatus
shards_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
					 int64_t *chosen, GcError *err)
{
	ShardSession *s = session;
	const GcKmeansppOps *ops = NULL;
	void	  **parts;
	int			opened = 0;
	GcStatus	status = GC_OK;

	if (s->child->kmeanspp_shard == NULL)
		return gc_seed_kmeanspp_cpu(s->rows, s->frame, params, seed, chosen, err);
	parts = calloc(s->nshards, sizeof(void *));
	if (parts == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	/* one backend's shards: one table of passes */
	for (; status == GC_OK && opened < s->nshards; opened++)
		status = s->child->kmeanspp_shard(s->sessions[opened], params, s->first[opened],
										  &parts[opened], &ops, err);
	if (status == GC_OK)
		status = gc_seed_kmeanspp_shards(ops, parts, s->nshards, s->rows, s->frame,
										 params, seed, chosen, err);
	for (int i = 0; i < opened; i++)
		if (parts[i])
			ops->close(parts[i]);
	free(parts);
	return status;
}

/*
 * k-means|| over the shards (engine/seeding_parallel.c): each child runs
 * the passes over its rows, the sums and samples added up here; on the
 * CPU reference over every row where the child offers no shards
 */
static GcStatus
shards_seed_kmeans_parallel(void *session, const GcKmeansParams *params, uint64_t seed,
							int64_t *chosen, GcError *err)
{
	ShardSession *s = session;
	const GcParallelOps *ops = NULL;
	void	  **parts;
	int			opened = 0;
	GcStatus	status = GC_OK;

	if (s->child->parallel_shard == NULL)
		return gc_seed_kmeans_parallel_cpu(s->rows, s->frame, params, seed, chosen, err);
	parts = calloc(s->nshards, sizeof(void *));
	if (parts == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	/* one backend's shards: one table of passes */
	for (; status == GC_OK && opened < s->nshards; opened++)
		status = s->child->parallel_shard(s->sessions[opened], params, s->first[opened],
										  &parts[opened], &ops, err);
	if (status == GC_OK)
		status = gc_seed_kmeans_parallel_shards(ops, parts, s->nshards, s->rows, s->frame,
												params, seed, chosen, err);
	for (int i = 0; i < opened; i++)
		if (parts[i])
			ops->close(parts[i]);
	free(parts);
	return status;
}

/* A restart from centroids in every shard; pruning where every shard can */
static GcStatus
shards_begin(void *session, const double *centroids, GcRestartPlan *plan, GcError *err)
{
	ShardSession *s = session;

	memcpy(s->centroids, centroids, sizeof(double) * s->k * s->rows->d);
	plan->can_prune = true;
	for (int i = 0; i < s->nshards; i++)
	{
		GcRestartPlan part = {0};
		GcStatus	status = s->child->begin(s->sessions[i], centroids, &part, err);

		if (status != GC_OK)
			return status;
		plan->kernel = part.kernel;
		plan->can_prune &= part.can_prune;
	}
	return GC_OK;
}

/* Pruning's buffers in every shard: available where every shard has them */
static GcStatus
shards_prepare_pruning(void *session, bool *available, GcError *err)
{
	ShardSession *s = session;

	*available = true;
	for (int i = 0; i < s->nshards; i++)
	{
		bool		part = false;
		GcStatus	status = s->child->prepare_pruning(s->sessions[i], &part, err);

		if (status != GC_OK)
			return status;
		*available &= part;
	}
	return GC_OK;
}

/* Shard i's share of the driver's pruned prefix of pruned_rows rows */
static int64_t
shard_pruned_rows(const ShardSession *s, int i, int64_t pruned_rows)
{
	int64_t		rows = pruned_rows - s->first[i];
	int64_t		count = s->first[i + 1] - s->first[i];

	return rows < 0 ? 0 : rows > count ? count : rows;
}

/*
 * One iteration: every shard labels its rows and sums them, the sums are
 * added in shard order, the centroids updated from them as one session
 * updates them, and handed to every shard
 */
static GcStatus
shards_step(void *session, int64_t pruned_rows, GcStepStatus *status, GcError *err)
{
	ShardSession *s = session;
	size_t		kd = (size_t) s->k * s->rows->d;
	GcStatus	st;

	memset(s->sums, 0, sizeof(long long) * kd);
	memset(s->counts, 0, sizeof(long long) * s->k);
	memset(status, 0, sizeof(*status));
	for (int i = 0; i < s->nshards; i++)
	{
		GcStepStatus part = {0};

		st = s->child->step_partial(s->sessions[i], shard_pruned_rows(s, i, pruned_rows),
									s->part_sums, s->part_counts, &part, err);
		if (st != GC_OK)
			return st;
		for (size_t v = 0; v < kd; v++)
			s->sums[v] += s->part_sums[v];
		for (int c = 0; c < s->k; c++)
			s->counts[c] += s->part_counts[c];
		status->changed += part.changed;
		status->pruned_work += part.pruned_work;
		status->distances += part.distances;
		status->rechecked += part.rechecked;
		status->exact_checked += part.exact_checked;
		status->labeling_ms += part.labeling_ms;
		status->update_ms += part.update_ms;
		status->kernel = part.kernel;
	}
	if (!gc_kmeans_update_centroids(s->frame, s->params->metric, s->k, s->sums, s->counts,
									s->centroids, s->mean, &s->poll, &status->shift_sum))
		return gc_fail(err, GC_INTERRUPTED, "interrupted while updating centroids");
	for (int i = 0; i < s->nshards; i++)
		if ((st = s->child->load_centroids(s->sessions[i], s->centroids, err)) != GC_OK)
			return st;
	return GC_OK;
}

static GcStatus
shards_end(void *session, double *centroids, GcError *err)
{
	ShardSession *s = session;

	memcpy(centroids, s->centroids, sizeof(double) * s->k * s->rows->d);
	return GC_OK;
}

/*
 * Every shard's sizes and inertia sum added up; labels and distances
 * written by each shard into its range
 */
static GcStatus
shards_score(void *session, const double *centroids, int32_t *labels,
			 double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	ShardSession *s = session;
	gc_u128		total = 0;

	memset(sizes, 0, sizeof(int64_t) * s->k);
	for (int i = 0; i < s->nshards; i++)
	{
		gc_u128		part = 0;
		GcStatus	st = s->child->score_sum(s->sessions[i], centroids,
											 labels ? labels + s->first[i] : NULL,
											 distances ? distances + s->first[i] : NULL,
											 s->part_sizes, &part, err);

		if (st != GC_OK)
			return st;
		for (int c = 0; c < s->k; c++)
			sizes[c] += s->part_sizes[c];
		total += part;
	}
	*inertia = gc_inertia_value(total, s->frame);
	return GC_OK;
}

/*
 * One sharded session over child's sessions: the open of a sharded
 * backend whose shards are another backend's (gc_kmeans_cuda_sharded_backend)
 */
GcStatus
gc_kmeans_shards_open(const GcKmeansBackend *child, const GcRows *rows, const GcFrame *frame,
					  const GcKmeansParams *params, void **session, GcError *err)
{
	return shards_open_child(child, rows, frame, params, session, err);
}

/* The shards of the CPU reference */
static GcStatus
shards_open_cpu(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
				void **session, GcError *err)
{
	return shards_open_child(&gc_kmeans_cpu_backend, rows, frame, params, session, err);
}

const GcKmeansBackend gc_kmeans_cpu_sharded_backend = {
	.name = "cpu sharded",
	.hybrid = &gc_hybrid_cpu_rules,
	.step_polls = true,
	.open = shards_open_cpu,
	.seed_kmeanspp = shards_seed_kmeanspp,
	.seed_kmeans_parallel = shards_seed_kmeans_parallel,
	.begin = shards_begin,
	.prepare_pruning = shards_prepare_pruning,
	.step = shards_step,
	.order_rows = NULL,
	.end = shards_end,
	.score = shards_score,
	.close = shards_close,
};

