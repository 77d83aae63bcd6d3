/*-------------------------------------------------------------------------
 *
 * kmeans_shards.c
 *	  A sharded k-means backend: one fit whose rows are split into
 *	  contiguous ranges (shards), each run by a session of a child
 *	  backend, on one or several threads (lanes, one a device), some
 *	  shards streamed through a pair of sessions when a lane cannot hold
 *	  them all, giving the same model, to the bit, as one session over all
 *	  the rows.
 *
 * Why it is exact: a step's centroid update reads only integer sums (each
 * row's quantised values times its weight, gc_quantize) and integer
 * weights per cluster, which add to the same integers in any order; so
 * the shards' partial sums (GcKmeansBackend.step_partial), added here,
 * equal the sums one session makes, and the centroids follow from them
 * by the one update both compute (centroid_update.c), then go back to
 * every session (load_centroids).  The inertia is an exact 128-bit sum of
 * quantised distances, which the shards' partial sums (score_sum) add up
 * to as well.  Pruned labeling gives Lloyd's labels, so a shard prunes
 * its own share of the driver's pruned prefix.
 *
 * Each shard is a view of the parent store: its chunks point into the
 * parent's (borrowed, never copied or freed here), it shares the parent's
 * bounding box and frame, and its row i is parent row first + i, draw
 * hashes included.  Labels and distances come back in row order.
 *
 * Lanes (params->lanes): lane l owns a contiguous run of shards and opens
 * their sessions with a copy of the params naming its device
 * (devices[l]).  A step or a scoring pass runs every lane at once, lane 0
 * on the calling thread, the others on threads of their own; each adds
 * its shards' integers into its own totals, which are added here once
 * every lane is done, so the model does not depend on the lanes.  Lane 0
 * polls the interrupt hook; the others poll a flag that a lane's failure
 * or stop raises, so every lane returns before the pass does.
 *
 * Streaming (params->lane_rows): a lane whose shards do not fit keeps
 * the first ones that do, less two, in sessions of their own, and passes
 * the rest through two sessions, each moved onto its next shard's rows
 * (rebind_rows) while the other computes: on the GPU the upload of one
 * overlaps the other's labeling.  A streamed shard's labels wait on the
 * host between passes, so changes are counted as an unsplit fit counts
 * them.
 *
 * k-means|| runs its passes in the shards (the child's parallel_shard,
 * engine/seeding_parallel.c): race keys, potentials, samples and
 * candidate weights add up to the unsplit pass's, each pass run by the
 * lanes at once (run_shard_tasks: lane l its shards in order), so every
 * device takes its share.  So does k-means++ (kmeanspp_shard,
 * engine/seeding.c): each step's races and greedy potentials, on the
 * calling thread.  A streamed shard's part is opened on a session just
 * moved onto it.  Batched k-means++ is not
 * split yet: it runs on the CPU reference over the parent store (the
 * child's seeding gives the same rows); random and given initialisation
 * need no backend.  The check of reduced precision labels its sample in
 * a session of the child's over those rows alone (shards_label_sample),
 * which labels them as the shards' sessions would, and a fall-back
 * reaches every session (shards_set_precision): so a sharded fit keeps or
 * drops a precision as the unsplit one does.  Row ordering is not
 * offered; the precision reported is the child sessions'.
 *
 * gc_kmeans_cuda_sharded_backend (cuda/kmeans_cuda.cu) is this backend
 * over GPU sessions (gc_kmeans_shards_open), each on its lane's device;
 * they label every row by Lloyd's labeling (pruned_rows saves no work
 * there), run k-means||'s nearest passes on their devices, its other
 * passes on the host (cuda/seeding_shard.cu), and k-means++ on the CPU
 * reference over every row.
 *
 * IDENTIFICATION
 *	  engine/kmeans_shards.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct ShardSession ShardSession;

/* One lane: its run of shards, its sessions, its pass's totals */
typedef struct ShardLane
{
	ShardSession *owner;
	GcKmeansParams params;		/* the fit's, on the lane's device, polling its hook */
	GcKmeansParams seeding;		/* the seeding's, polling the lane's hook */
	int			first_shard;	/* shards first_shard .. end_shard - 1 */
	int			end_shard;
	int			resident;		/* of which the first resident have sessions of their own */
	void	   *pool[2];		/* the others stream through these (NULL: none) */
	long long  *sums;			/* k * d: the pass's sums over the lane's shards */
	long long  *counts;			/* k */
	long long  *part_sums;		/* k * d: one shard's */
	long long  *part_counts;	/* k */
	int64_t    *sizes;			/* k: the scoring pass's sizes */
	int64_t    *part_sizes;		/* k: one shard's */
	gc_u128		inertia_sum;	/* the scoring pass's */
	GcStepStatus step;			/* the step's, added over the lane's shards */
	GcStatus	status;			/* the pass's */
	GcError		err;
	pthread_t	thread;			/* lanes past the first: the pass's thread */
	bool		started;		/* whether it started */
} ShardLane;

/* The pass every lane runs */
typedef struct ShardPass
{
	GcShardTask task;			/* a seeding pass's task for each shard; else: */
	void	   *task_arg;
	bool		scoring;		/* score_sum; else step_partial */
	int64_t		pruned_rows;	/* a step: the driver's pruned prefix */
	const double *centroids;	/* scoring */
	int32_t    *labels;			/* scoring, optional */
	double	   *distances;		/* scoring, optional */
} ShardPass;

struct ShardSession
{
	const GcKmeansBackend *child;
	const GcRows *rows;			/* the parent store */
	const GcFrame *frame;
	const GcKmeansParams *params;
	int			k;
	int			nshards;
	int64_t    *first;			/* nshards + 1: shard i is rows first[i] .. first[i + 1] - 1 */
	GcRows	   *views;			/* nshards: each shard's rows */
	void	  **sessions;		/* nshards: each resident shard's child session, else NULL */
	int32_t    *labels;			/* n: the streamed shards' last labels (NULL: none streamed) */
	int			nlanes;
	ShardLane  *lanes;			/* nlanes */
	ShardPass	pass;			/* the pass the lanes run */
	bool		stop;			/* a lane stopped: the others stop too (atomic) */
	long long  *sums;			/* k * d: the step's sums over every shard */
	long long  *counts;			/* k */
	double	   *centroids;		/* k * d: the restart's current centroids */
	double	   *mean;			/* d: one updated centroid */
	GcPoll		poll;
};

static void shards_close(void *session);
static GcStatus run_shard_tasks(void *ctx, GcShardTask task, void *arg, GcError *err);

/* The sharded session whose lane runs on this thread (lanes past the first) */
static __thread ShardSession *lane_owner;

/* The interrupt hook of lanes past the first: whether another lane stopped */
static bool
lane_stopped(void)
{
	return lane_owner != NULL && __atomic_load_n(&lane_owner->stop, __ATOMIC_RELAXED);
}

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
 * How many shards for n rows: params->shards, at least one a lane, and
 * under a lane_rows bound small enough that two fit a lane; at most n
 */
static int
shard_count(int64_t n, const GcKmeansParams *params, int nlanes)
{
	int64_t		count = params->shards > nlanes ? params->shards : nlanes;

	if (params->lane_rows > 0)
	{
		int64_t		most = params->lane_rows / 2 > 0 ? params->lane_rows / 2 : 1;
		int64_t		needed = (n + most - 1) / most;

		count = needed > count ? needed : count;
	}
	if (count > n)
		count = n > 0 ? n : 1;
	return (int) count;
}

/* The first row of shard i of nshards over n rows (i = nshards: n) */
static int64_t
shard_first(int64_t n, int nshards, int i)
{
	return n * i / nshards;
}

/* The first shard of lane l of nlanes over nshards (l = nlanes: nshards) */
static int
lane_first_shard(int nshards, int nlanes, int l)
{
	return (int) ((int64_t) nshards * l / nlanes);
}

/*
 * Of a lane's count shards, the largest of largest rows, how many keep a
 * session of their own under lane_rows: all where they fit, else all but
 * two of those that fit (the two the others stream through)
 */
static int
lane_resident(int count, int64_t largest, int64_t lane_rows)
{
	int			resident = count;

	if (lane_rows > 0 && largest > 0 && count > lane_rows / largest)
		resident = (int) (lane_rows / largest) - 2;
	return resident > 0 ? resident : 0;
}

/*
 * The layout a sharded fit of n rows takes under params (shards, lanes,
 * lane_rows): the one open_lanes makes, for planning and reporting
 */
void
gc_kmeans_shard_layout(int64_t n, const GcKmeansParams *params, GcShardLayout *layout)
{
	int			nlanes = params->lanes > 1 ? params->lanes : 1;
	int			nshards = shard_count(n, params, nlanes);

	memset(layout, 0, sizeof(*layout));
	layout->shards = nshards;
	layout->lanes = nlanes < nshards ? nlanes : nshards;
	for (int l = 0; l < layout->lanes; l++)
	{
		int			first = lane_first_shard(nshards, layout->lanes, l),
					end = lane_first_shard(nshards, layout->lanes, l + 1),
					resident;
		int64_t		largest = 0,
					held = 0;

		for (int i = first; i < end; i++)
		{
			int64_t		rows = shard_first(n, nshards, i + 1) - shard_first(n, nshards, i);

			largest = rows > largest ? rows : largest;
		}
		resident = lane_resident(end - first, largest, params->lane_rows);
		for (int i = first; i < end; i++)
		{
			int64_t		rows = shard_first(n, nshards, i + 1) - shard_first(n, nshards, i);

			if (i - first < resident)
			{
				layout->resident_rows += rows;
				held += rows;
			}
			else
				layout->streamed_rows += rows;
		}
		if (resident < end - first)
			held += 2 * largest;
		layout->lane_rows_held = held > layout->lane_rows_held ? held : layout->lane_rows_held;
	}
}

/* Shard i's rows */
static int64_t
shard_rows(const ShardSession *s, int i)
{
	return s->first[i + 1] - s->first[i];
}

/* The session of shard i of lane (a pool session for a streamed shard) */
static void *
shard_session(const ShardLane *lane, int i)
{
	int			streamed = i - lane->first_shard - lane->resident;

	return streamed < 0 ? lane->owner->sessions[i] : lane->pool[streamed % 2];
}

/* Shard i's pool session moved onto its rows, with its last labels */
static GcStatus
bind_streamed(ShardLane *lane, int i, GcError *err)
{
	ShardSession *s = lane->owner;

	return s->child->rebind_rows(shard_session(lane, i), &s->views[i],
								 s->labels + s->first[i], err);
}

/*
 * Lane's shards and sessions: the resident ones, then the two a streamed
 * run passes through, opened over its largest shard
 */
static GcStatus
open_lane(ShardSession *s, ShardLane *lane, GcError *err)
{
	int			count = lane->end_shard - lane->first_shard;
	int64_t		largest = 0;
	int			widest = -1;
	GcStatus	status = GC_OK;

	for (int i = lane->first_shard; i < lane->end_shard; i++)
		largest = shard_rows(s, i) > largest ? shard_rows(s, i) : largest;
	lane->resident = lane_resident(count, largest, s->params->lane_rows);
	if (lane->resident < count && s->child->rebind_rows == NULL)
		return gc_fail(err, GC_ERR_RANGE, "the %s backend cannot stream shards", s->child->name);
	for (int i = lane->first_shard; status == GC_OK && i < lane->end_shard; i++)
	{
		if (i - lane->first_shard < lane->resident)
			status = s->child->open(&s->views[i], s->frame, &lane->params, &s->sessions[i], err);
		else if (widest < 0 || shard_rows(s, i) > shard_rows(s, widest))
			widest = i;
	}
	for (int p = 0; status == GC_OK && p < 2 && lane->resident < count; p++)
		status = s->child->open(&s->views[widest], s->frame, &lane->params, &lane->pool[p], err);
	return status;
}

/* The lanes' runs of shards and their sessions, each with its totals */
static GcStatus
open_lanes(ShardSession *s, GcError *err)
{
	int			k = s->k,
				d = s->rows->d;
	GcStatus	status = GC_OK;

	for (int l = 0; l < s->nlanes && status == GC_OK; l++)
	{
		ShardLane  *lane = &s->lanes[l];

		lane->owner = s;
		lane->params = *s->params;
		lane->params.shards = lane->params.lanes = 1;
		lane->params.lane_rows = 0;
		lane->params.devices = s->params->devices ? s->params->devices + l : NULL;
		if (l > 0)
			lane->params.interrupted = lane_stopped;
		lane->first_shard = lane_first_shard(s->nshards, s->nlanes, l);
		lane->end_shard = lane_first_shard(s->nshards, s->nlanes, l + 1);
		lane->sums = malloc(sizeof(long long) * k * d);
		lane->counts = malloc(sizeof(long long) * k);
		lane->part_sums = malloc(sizeof(long long) * k * d);
		lane->part_counts = malloc(sizeof(long long) * k);
		lane->sizes = malloc(sizeof(int64_t) * k);
		lane->part_sizes = malloc(sizeof(int64_t) * k);
		if (lane->sums == NULL || lane->counts == NULL || lane->part_sums == NULL ||
			lane->part_counts == NULL || lane->sizes == NULL || lane->part_sizes == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sharded session");
		status = open_lane(s, lane, err);
		if (status == GC_OK && lane->resident < lane->end_shard - lane->first_shard &&
			s->labels == NULL)
		{
			s->labels = malloc(sizeof(int32_t) * (s->rows->n > 0 ? s->rows->n : 1));
			if (s->labels == NULL)
				return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the shards' labels");
			/* unknown until a step: seeding moves sessions onto shards before any */
			for (int64_t i = 0; i < s->rows->n; i++)
				s->labels[i] = -1;
		}
	}
	return status;
}

/*
 * Open the shards' sessions of child: as many shards and lanes as
 * params ask (shard_count), contiguous ranges of about equal rows
 */
static GcStatus
shards_open_child(const GcKmeansBackend *child, const GcRows *rows, const GcFrame *frame,
				  const GcKmeansParams *params, void **session, GcError *err)
{
	ShardSession *s = calloc(1, sizeof(ShardSession));
	int			k = params->k,
				d = rows->d;
	int			nlanes = params->lanes > 1 ? params->lanes : 1;
	int			nshards = shard_count(rows->n, params, nlanes);
	GcStatus	status = GC_OK;

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sharded session");
	s->child = child;
	s->rows = rows;
	s->frame = frame;
	s->params = params;
	s->k = k;
	s->nlanes = nlanes < nshards ? nlanes : nshards;
	s->poll.interrupted = params->interrupted;
	s->first = malloc(sizeof(int64_t) * (nshards + 1));
	s->views = calloc(nshards, sizeof(GcRows));
	s->sessions = calloc(nshards, sizeof(void *));
	s->lanes = calloc(s->nlanes, sizeof(ShardLane));
	s->sums = malloc(sizeof(long long) * k * d);
	s->counts = malloc(sizeof(long long) * k);
	s->centroids = malloc(sizeof(double) * k * d);
	s->mean = malloc(sizeof(double) * d);
	if (s->first == NULL || s->views == NULL || s->sessions == NULL || s->lanes == NULL ||
		s->sums == NULL || s->counts == NULL || s->centroids == NULL || s->mean == NULL)
	{
		shards_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sharded session");
	}
	for (int i = 0; i <= nshards; i++)
		s->first[i] = shard_first(rows->n, nshards, i);
	for (int i = 0; status == GC_OK && i < nshards; i++)
	{
		status = make_view(rows, s->first[i], shard_rows(s, i), &s->views[i], err);
		s->nshards = i + 1;
	}
	if (status == GC_OK)
		status = open_lanes(s, err);
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

	for (int l = 0; s->lanes && l < s->nlanes; l++)
	{
		ShardLane  *lane = &s->lanes[l];

		for (int p = 0; p < 2; p++)
			if (lane->pool[p])
				s->child->close(lane->pool[p]);
		free(lane->sums);
		free(lane->counts);
		free(lane->part_sums);
		free(lane->part_counts);
		free(lane->sizes);
		free(lane->part_sizes);
	}
	for (int i = 0; i < s->nshards; i++)
	{
		if (s->sessions[i])
			s->child->close(s->sessions[i]);
		free(s->views[i].chunks);
	}
	free(s->first);
	free(s->views);
	free(s->sessions);
	free(s->labels);
	free(s->lanes);
	free(s->sums);
	free(s->counts);
	free(s->centroids);
	free(s->mean);
	free(s);
}

/* Every session of every lane, resident and pool, in turn */
typedef GcStatus (*SessionFn) (ShardSession *s, void *session, void *arg, GcError *err);

static GcStatus
for_each_session(ShardSession *s, SessionFn fn, void *arg, GcError *err)
{
	GcStatus	status = GC_OK;

	for (int l = 0; status == GC_OK && l < s->nlanes; l++)
	{
		ShardLane  *lane = &s->lanes[l];

		for (int i = lane->first_shard; status == GC_OK && i < lane->first_shard + lane->resident; i++)
			status = fn(s, s->sessions[i], arg, err);
		for (int p = 0; status == GC_OK && p < 2 && lane->pool[p]; p++)
			status = fn(s, lane->pool[p], arg, err);
	}
	return status;
}

/*
 * Each shard's seeding part, on the calling thread, into parts (nshards,
 * NULL where not opened): k-means|| where pops is given (the child's
 * table of passes into *pops), else k-means++ (into *kops); a lane's
 * parts poll its hook, for its passes run on its thread
 */
static GcStatus
open_seed_parts(ShardSession *s, const GcKmeansParams *params, void **parts,
				const GcParallelOps **pops, const GcKmeansppOps **kops, GcError *err)
{
	GcStatus	status = GC_OK;

	for (int l = 0; status == GC_OK && l < s->nlanes; l++)
	{
		ShardLane  *lane = &s->lanes[l];

		lane->seeding = *params;
		lane->seeding.interrupted = lane->params.interrupted;
		for (int i = lane->first_shard; status == GC_OK && i < lane->end_shard; i++)
		{
			void	   *session = shard_session(lane, i);

			if (i - lane->first_shard >= lane->resident &&
				(status = bind_streamed(lane, i, err)) != GC_OK)
				break;
			status = pops ?
				s->child->parallel_shard(session, &lane->seeding, s->first[i], &parts[i], pops,
										 err) :
				s->child->kmeanspp_shard(session, &lane->seeding, s->first[i], &parts[i], kops,
										 err);
		}
	}
	return status;
}

/*
 * k-means|| (parallel) or k-means++ over the shards' seeding parts:
 * each child runs the passes over its rows, the keys, potentials, sums
 * and samples combined by the engine's seeding (seeding_parallel.c,
 * seeding.c)
 */
static GcStatus
seed_over_shards(ShardSession *s, const GcKmeansParams *params, bool parallel, uint64_t seed,
				 int64_t *chosen, GcError *err)
{
	const GcParallelOps *pops = NULL;
	const GcKmeansppOps *kops = NULL;
	void	  **parts = calloc(s->nshards, sizeof(void *));
	GcStatus	status;
	GcShardRunner runner = {.groups = s->nlanes, .run = run_shard_tasks, .ctx = s};

	if (parts == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	status = open_seed_parts(s, params, parts, parallel ? &pops : NULL, &kops, err);
	if (status == GC_OK && parallel)
		status = gc_seed_kmeans_parallel_shards(pops, parts, s->nshards, &runner, s->rows,
												s->frame, params, seed, chosen, err);
	else if (status == GC_OK)
		status = gc_seed_kmeanspp_shards(kops, parts, s->nshards, s->rows, s->frame,
										 params, seed, chosen, err);
	for (int i = 0; i < s->nshards; i++)
		if (parts[i])
			(pops ? pops->close : kops->close) (parts[i]);
	free(parts);
	return status;
}

/* k-means++ over the shards; on the CPU reference over every row where the child offers no shards */
static GcStatus
shards_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
					 int64_t *chosen, GcError *err)
{
	ShardSession *s = session;

	if (s->child->kmeanspp_shard == NULL)
		return gc_seed_kmeanspp_cpu(s->rows, s->frame, params, seed, chosen, err);
	return seed_over_shards(s, params, false, seed, chosen, err);
}

/* k-means|| over the shards; on the CPU reference over every row where the child offers no shards */
static GcStatus
shards_seed_kmeans_parallel(void *session, const GcKmeansParams *params, uint64_t seed,
							int64_t *chosen, GcError *err)
{
	ShardSession *s = session;

	if (s->child->parallel_shard == NULL)
		return gc_seed_kmeans_parallel_cpu(s->rows, s->frame, params, seed, chosen, err);
	return seed_over_shards(s, params, true, seed, chosen, err);
}

/* One session's restart: its plan folded into the fit's */
static GcStatus
begin_session(ShardSession *s, void *session, void *arg, GcError *err)
{
	GcRestartPlan *plan = arg;
	GcRestartPlan part = {0};
	GcStatus	status = s->child->begin(session, s->centroids, &part, err);

	plan->kernel = part.kernel;
	plan->can_prune &= part.can_prune;
	return status;
}

/*
 * A restart from centroids in every session, the streamed shards' labels
 * unknown; pruning where every session can
 */
static GcStatus
shards_begin(void *session, const double *centroids, GcRestartPlan *plan, GcError *err)
{
	ShardSession *s = session;

	memcpy(s->centroids, centroids, sizeof(double) * s->k * s->rows->d);
	for (int64_t i = 0; s->labels && i < s->rows->n; i++)
		s->labels[i] = -1;
	plan->can_prune = true;
	return for_each_session(s, begin_session, plan, err);
}

/* One session's pruning buffers: available where every session has them */
static GcStatus
prepare_session(ShardSession *s, void *session, void *arg, GcError *err)
{
	bool	   *available = arg;
	bool		part = false;
	GcStatus	status = s->child->prepare_pruning(session, &part, err);

	*available &= part;
	return status;
}

static GcStatus
shards_prepare_pruning(void *session, bool *available, GcError *err)
{
	*available = true;
	return for_each_session(session, prepare_session, available, err);
}

/* Shard i's share of the driver's pruned prefix of pruned_rows rows */
static int64_t
shard_pruned_rows(const ShardSession *s, int i, int64_t pruned_rows)
{
	int64_t		rows = pruned_rows - s->first[i];

	return rows < 0 ? 0 : rows > shard_rows(s, i) ? shard_rows(s, i) : rows;
}

/* Shard i's share of the pass, added into lane's totals */
static GcStatus
shard_pass(ShardLane *lane, int i, const ShardPass *pass)
{
	ShardSession *s = lane->owner;
	void	   *session = shard_session(lane, i);
	size_t		kd = (size_t) s->k * s->rows->d;
	GcStatus	st;

	if (pass->scoring)
	{
		gc_u128		part = 0;

		st = s->child->score_sum(session, pass->centroids,
								 pass->labels ? pass->labels + s->first[i] : NULL,
								 pass->distances ? pass->distances + s->first[i] : NULL,
								 lane->part_sizes, &part, &lane->err);
		for (int c = 0; st == GC_OK && c < s->k; c++)
			lane->sizes[c] += lane->part_sizes[c];
		lane->inertia_sum += part;
	}
	else
	{
		GcStepStatus part = {0};
		GcStepStatus *step = &lane->step;

		st = s->child->step_partial(session, shard_pruned_rows(s, i, pass->pruned_rows),
									lane->part_sums, lane->part_counts, &part, &lane->err);
		if (st != GC_OK)
			return st;
		for (size_t v = 0; v < kd; v++)
			lane->sums[v] += lane->part_sums[v];
		for (int c = 0; c < s->k; c++)
			lane->counts[c] += lane->part_counts[c];
		step->changed += part.changed;
		step->pruned_work += part.pruned_work;
		step->distances += part.distances;
		step->rechecked += part.rechecked;
		step->exact_checked += part.exact_checked;
		step->labeling_ms += part.labeling_ms;
		step->update_ms += part.update_ms;
		step->kernel = part.kernel;
	}
	return st;
}

/*
 * Lane's share of a step or scoring pass: its resident shards, then its
 * streamed ones, each pool session moved onto the shard after next once
 * it is done, so that one's upload overlaps the other's pass
 */
static GcStatus
lane_shard_passes(ShardLane *lane)
{
	ShardSession *s = lane->owner;
	size_t		kd = (size_t) s->k * s->rows->d;
	int			streamed = lane->end_shard - lane->first_shard - lane->resident;
	GcStatus	st = GC_OK;

	memset(lane->sums, 0, sizeof(long long) * kd);
	memset(lane->counts, 0, sizeof(long long) * s->k);
	memset(lane->sizes, 0, sizeof(int64_t) * s->k);
	memset(&lane->step, 0, sizeof(lane->step));
	lane->inertia_sum = 0;
	for (int j = 0; st == GC_OK && j < 2 && j < streamed; j++)
		st = bind_streamed(lane, lane->first_shard + lane->resident + j, &lane->err);
	for (int i = lane->first_shard; st == GC_OK && i < lane->end_shard; i++)
	{
		int			j = i - lane->first_shard - lane->resident;

		st = shard_pass(lane, i, &s->pass);
		if (st == GC_OK && j >= 0 && j + 2 < streamed)
			st = bind_streamed(lane, i + 2, &lane->err);
	}
	return st;
}

/*
 * Lane's share of the pass: a seeding task over its shards in order
 * (the task moves a streamed shard's session onto it), else its shards'
 * step or scoring passes; a failure stops the others
 */
static GcStatus
lane_pass(ShardLane *lane)
{
	ShardSession *s = lane->owner;
	GcStatus	st = GC_OK;

	if (s->pass.task != NULL)
		for (int i = lane->first_shard; st == GC_OK && i < lane->end_shard; i++)
			st = s->pass.task(i, (int) (lane - s->lanes), s->pass.task_arg, &lane->err);
	else
		st = lane_shard_passes(lane);
	if (st != GC_OK)
		__atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
	lane->status = st;
	return st;
}

/* A lane past the first, on a thread of its own */
static void *
lane_main(void *arg)
{
	ShardLane  *lane = arg;

	lane_owner = lane->owner;
	lane_pass(lane);
	return NULL;
}

/*
 * s->pass on every lane at once, lane 0 on the calling thread (a lane
 * whose thread would not start runs there after it); the first lane's
 * failure, other than a stop it caused, into err
 */
static GcStatus
run_lanes(ShardSession *s, GcError *err)
{
	const ShardLane *failed = NULL;

	s->stop = false;
	for (int l = 1; l < s->nlanes; l++)
		s->lanes[l].started = gc_thread_create(&s->lanes[l].thread, lane_main,
												&s->lanes[l]) == 0;
	lane_pass(&s->lanes[0]);
	for (int l = 1; l < s->nlanes; l++)
	{
		if (s->lanes[l].started)
			(void) pthread_join(s->lanes[l].thread, NULL);
		else
			lane_pass(&s->lanes[l]);
	}
	for (int l = 0; l < s->nlanes; l++)
	{
		const ShardLane *lane = &s->lanes[l];

		if (lane->status != GC_OK &&
			(failed == NULL || (failed->status == GC_INTERRUPTED &&
								lane->status != GC_INTERRUPTED)))
			failed = lane;
	}
	if (failed == NULL)
		return GC_OK;
	*err = failed->err;
	return failed->status;
}

/* A seeding pass's task over every shard, by the lanes at once (GcShardRunner.run) */
static GcStatus
run_shard_tasks(void *ctx, GcShardTask task, void *arg, GcError *err)
{
	ShardSession *s = ctx;

	s->pass = (ShardPass) {.task = task, .task_arg = arg};
	return run_lanes(s, err);
}

/* The centroids the next step labels against, in one session */
static GcStatus
load_session(ShardSession *s, void *session, void *arg, GcError *err)
{
	(void) arg;
	return s->child->load_centroids(session, s->centroids, err);
}

/*
 * One iteration: every lane labels its shards' rows and sums them, the
 * lanes' sums are added, the centroids updated from them as one session
 * updates them, and handed to every session
 */
static GcStatus
shards_step(void *session, int64_t pruned_rows, GcStepStatus *status, GcError *err)
{
	ShardSession *s = session;
	size_t		kd = (size_t) s->k * s->rows->d;
	GcStatus	st;

	s->pass = (ShardPass) {.pruned_rows = pruned_rows};
	if ((st = run_lanes(s, err)) != GC_OK)
		return st;
	memset(s->sums, 0, sizeof(long long) * kd);
	memset(s->counts, 0, sizeof(long long) * s->k);
	memset(status, 0, sizeof(*status));
	for (int l = 0; l < s->nlanes; l++)
	{
		const ShardLane *lane = &s->lanes[l];

		for (size_t v = 0; v < kd; v++)
			s->sums[v] += lane->sums[v];
		for (int c = 0; c < s->k; c++)
			s->counts[c] += lane->counts[c];
		status->changed += lane->step.changed;
		status->pruned_work += lane->step.pruned_work;
		status->distances += lane->step.distances;
		status->rechecked += lane->step.rechecked;
		status->exact_checked += lane->step.exact_checked;
		status->labeling_ms += lane->step.labeling_ms;
		status->update_ms += lane->step.update_ms;
		status->kernel = lane->step.kernel;
	}
	if (!gc_kmeans_update_centroids(s->frame, s->params->metric, s->k, s->sums, s->counts,
									s->centroids, s->mean, &s->poll, &status->shift_sum))
		return gc_fail(err, GC_INTERRUPTED, "interrupted while updating centroids");
	return for_each_session(s, load_session, NULL, err);
}

static GcStatus
shards_end(void *session, double *centroids, GcError *err)
{
	ShardSession *s = session;

	(void) err;
	memcpy(centroids, s->centroids, sizeof(double) * s->k * s->rows->d);
	return GC_OK;
}

/*
 * Every lane's sizes and inertia sum added up; labels and distances
 * written by each shard into its range
 */
static GcStatus
shards_score(void *session, const double *centroids, int32_t *labels,
			 double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	ShardSession *s = session;
	gc_u128		total = 0;
	GcStatus	st;

	s->pass = (ShardPass) {.scoring = true, .centroids = centroids, .labels = labels,
	.distances = distances};
	if ((st = run_lanes(s, err)) != GC_OK)
		return st;
	memset(sizes, 0, sizeof(int64_t) * s->k);
	for (int l = 0; l < s->nlanes; l++)
	{
		for (int c = 0; c < s->k; c++)
			sizes[c] += s->lanes[l].sizes[c];
		total += s->lanes[l].inertia_sum;
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

/*
 * The precision the shards label at: their child's (the first session's;
 * every one is opened with the same params), float64 where the child has
 * none.  The shards offer no labeled sample, so a reduced one goes
 * unchecked (precision_check.c); the glue asks them for exact labels.
 */
static GcPrecision
shards_precision(void *session)
{
	ShardSession *s = session;
	void	   *first = s->nshards > 0 ? shard_session(&s->lanes[0], 0) : NULL;

	return s->child->precision && first ? s->child->precision(first) : GC_PRECISION_FLOAT64;
}

/* One session's precision (a SessionFn) */
static GcStatus
session_precision(ShardSession *s, void *session, void *arg, GcError *err)
{
	return s->child->set_precision(session, *(const GcPrecision *) arg, err);
}

/*
 * Every session's precision from the next restart on: each lane's
 * resident shards', its streaming pair's, and those it opens later (its
 * params)
 */
static GcStatus
shards_set_precision(void *session, GcPrecision precision, GcError *err)
{
	ShardSession *s = session;

	if (s->child->set_precision == NULL)
		return gc_fail(err, GC_ERR_RANGE, "the %s backend has one precision", s->child->name);
	for (int l = 0; l < s->nlanes; l++)
		s->lanes[l].params.precision = precision;
	return for_each_session(s, session_precision, &precision, err);
}

/*
 * The check of reduced precision's sample: its rows in a session of the
 * child's of their own (gathered with the parent's bounding box; lane
 * 0's params: its device, the precision now asked), labelled by it and
 * exactly.  A row's label depends on its
 * values, the centroids and the box alone, so these are the labels the
 * shards' sessions give it.
 */
static GcStatus
shards_label_sample(void *session, const double *centroids, const int64_t *sample, int m,
					int32_t *labels, int32_t *exact, GcError *err)
{
	ShardSession *s = session;
	GcRows		picked;
	void	   *one = NULL;
	int64_t    *order = malloc(sizeof(int64_t) * (m > 0 ? m : 1));
	GcStatus	status;

	memset(&picked, 0, sizeof(picked));
	if (s->child->label_sample == NULL)
		status = gc_fail(err, GC_ERR_RANGE, "the %s backend labels no sample", s->child->name);
	else if (order == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the sample");
	else
		status = gc_rows_gather(s->rows, sample, m, &picked, err);
	if (status == GC_OK)
	{
		/* the box the shards' sessions scale their operands by */
		memcpy(picked.lo, s->rows->lo, sizeof(double) * s->rows->d);
		memcpy(picked.hi, s->rows->hi, sizeof(double) * s->rows->d);
	}
	for (int i = 0; status == GC_OK && i < m; i++)
		order[i] = i;
	if (status == GC_OK)
		status = s->child->open(&picked, s->frame, &s->lanes[0].params, &one, err);
	if (status == GC_OK)
		status = s->child->label_sample(one, centroids, order, m, labels, exact, err);
	if (one != NULL)
		s->child->close(one);
	gc_rows_release(&picked);
	free(order);
	return status;
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
	.precision = shards_precision,
	.set_precision = shards_set_precision,
	.label_sample = shards_label_sample,
};

