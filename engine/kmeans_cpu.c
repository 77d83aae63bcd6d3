/*-------------------------------------------------------------------------
 *
 * kmeans_cpu.c
 *	  The CPU reference backend of k-means: k-means++ seeding (in
 *	  seeding.c), the steps of Lloyd's iterations (labeling, plain or
 *	  pruned, and exact fixed-point centroid sums) that the driver in
 *	  kmeans_fit.c strings together, and scoring.  It is the oracle the
 *	  GPU backend is tested against, and the fallback where no GPU exists.
 *
 * Distances are computed in double precision, directly as sum (x - c)^2.
 * An empty cluster keeps its previous centroid.  Under the cosine metric
 * the rows are unit vectors and each updated centroid is scaled back to
 * unit length (spherical k-means), so that the nearest centroid by
 * Euclidean distance is the one of largest cosine; a cluster whose mean is
 * zero (no direction) keeps its previous centroid too.
 *
 * Weighted rows (stream summaries, whole-number weights) weigh each row in
 * seeding (key -log(u) / (w D^2), potential sum w D^2), in the centroid update (fixed-point
 * sums of w q and of w) and in the inertia (sum of w times the quantised
 * D^2): the same exact integers as w copies of the row would give.
 *
 * IDENTIFICATION
 *	  engine/kmeans_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "cpu_threads.h"
#include "cpu_vectors.h"
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

typedef struct CpuSession
{
	const GcRows *rows;
	const GcFrame *frame;
	const GcKmeansParams *params;
	int			k;
	int64_t		capacity;		/* rows it was opened with: most a rebind takes */
	int32_t    *labels;			/* n, -1 before the first iteration */
	int32_t    *bound_labels;	/* a streamed shard's labels, kept by the caller (NULL: none) */
	int32_t    *next_labels;	/* n: the screened pass's labels (cpu_labeling.c) */
	long long  *sums;			/* k * d fixed-point sums */
	long long  *counts;			/* k: weight of each cluster (rows, unweighted) */
	double	   *centroids;		/* k * d: the restart's current centroids */
	double	   *mean;			/* d: one updated centroid */
	double	   *icd;			/* k * k, pruned labeling: inter-centroid distances */
	int32_t    *rid;			/* k * k, pruned labeling: centroids ranked by distance */
	long long  *worker_sums;	/* (update_workers - 1) * (k * d + k): other threads' sums */
	int			update_workers; /* threads of the threaded update, 1 without it */
	bool		quantize_in_vectors;	/* the update rounds in vectors */
	int			iteration;		/* steps since the restart began */
	GcPoll		poll;			/* work since the interrupt hook was last polled */
} CpuSession;

static void cpu_close(void *session);

/* Most bytes the threaded update's per-thread sums may take */
#define UPDATE_SUMS_MAX_BYTES (INT64_C(64) << 20)

/*
 * Threads for the update: as labeling's, where the screened labels exist
 * and each thread's own sums (k d + k integers) stay small; 1 otherwise.
 * Integer sums add up to the same whatever the split.
 */
static int
update_workers(CpuSession *s)
{
	int64_t		per_worker = ((int64_t) s->k * s->rows->d + s->k) * (int64_t) sizeof(long long);
	int			workers;

	if (s->next_labels == NULL)
		return 1;
	workers = gc_cpu_threads(s->params->cpu_threads, s->rows->n * (int64_t) s->rows->d);
	while (workers > 1 && per_worker * (workers - 1) > UPDATE_SUMS_MAX_BYTES)
		workers--;
	if (workers > 1)
	{
		s->worker_sums = malloc(per_worker * (workers - 1));
		if (s->worker_sums == NULL)
			workers = 1;
	}
	return workers;
}

/* The threaded update: each thread's share of sums, counts and changes */
typedef struct UpdatePass
{
	CpuSession *s;
	long long  *sums;			/* k * d: thread 0's sums, then everyone's */
	long long  *counts;			/* k */
	int64_t		changed[GC_CPU_MAX_THREADS];
} UpdatePass;

/*
 * Whether every fixed-point value of the fit is below 2^51 in magnitude,
 * where adding and subtracting 1.5 2^52 rounds to the nearest integer,
 * ties to even, as llrint does: then add_quantized rounds in vectors.  A
 * value's magnitude is below half the box's width times the scale (with
 * a factor 2 to spare for the rounded centre).
 */
static bool
quantize_in_vectors(const GcRows *rows, const GcFrame *frame)
{
	for (int j = 0; j < rows->d; j++)
		if (!((rows->hi[j] / 2 - rows->lo[j] / 2) * frame->scale[j] < 0x1p50))
			return false;
	return true;
}

/* sum[j] += w q(x[j]) for j from first below d, a value at a time */
static inline void
add_quantized_scalar(long long *restrict sum, const double *restrict x,
					 const double *restrict offset, const double *restrict scale, long long w,
					 int first, int d)
{
	for (int j = first; j < d; j++)
		sum[j] += w * gc_quantize(x[j], offset[j], scale[j]);
}

/*
 * sum += w q(x), q the frame's fixed point (gc_quantize): in vectors of 8
 * where vectors is set (quantize_in_vectors), each lane rounded as
 * gc_quantize rounds.  Cloned for the vector units, which rows narrower
 * than a vector do not call (add_row_quantized).
 */
GC_SIMD_CLONES
static void
add_quantized(long long *restrict sum, const double *restrict x, const double *restrict offset,
			  const double *restrict scale, long long w, int d, bool vectors)
{
	const v8d	magic = {0x1.8p52, 0x1.8p52, 0x1.8p52, 0x1.8p52,
	0x1.8p52, 0x1.8p52, 0x1.8p52, 0x1.8p52};
	int			j = 0;

	for (; vectors && j + 8 <= d; j += 8)
	{
		v8d			v,
					o,
					sc;
		v8di		q,
					acc;

		memcpy(&v, x + j, sizeof(v8d));
		memcpy(&o, offset + j, sizeof(v8d));
		memcpy(&sc, scale + j, sizeof(v8d));
		v = (v - o) * sc;
		v = (v + magic) - magic;
		q = __builtin_convertvector(v, v8di);
		memcpy(&acc, sum + j, sizeof(v8di));
		acc += (int64_t) w * q;
		memcpy(sum + j, &acc, sizeof(v8di));
	}
	add_quantized_scalar(sum, x, offset, scale, w, j, d);
}

/* A row's share of the update, sum += w q(x): inline below 8 values, where a call would cost more */
static inline void
add_row_quantized(long long *restrict sum, const double *restrict x, const GcFrame *frame,
				  long long w, int d, bool vectors)
{
	if (d < 8)
		add_quantized_scalar(sum, x, frame->offset, frame->scale, w, 0, d);
	else
		add_quantized(sum, x, frame->offset, frame->scale, w, d, vectors);
}

/* Rows [first, first + count) of chunk into thread worker's sums */
static void
update_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	UpdatePass *pass = ctx;
	CpuSession *s = pass->s;
	int			k = s->k,
				d = s->rows->d;
	const GcFrame *frame = s->frame;
	long long  *sums = worker == 0 ? pass->sums :
		s->worker_sums + (size_t) (worker - 1) * ((size_t) k * d + k);
	long long  *counts = worker == 0 ? pass->counts : sums + (size_t) k * d;
	int64_t		changed = 0;

	for (int64_t i = first; i < first + count; i++)
	{
		int64_t		row = chunk->first_row + i;
		const double *x = chunk->values + (size_t) i * d;
		int			l = s->next_labels[row];
		long long	w = gc_chunk_weight(chunk, i);
		long long  *sum = sums + (size_t) l * d;

		changed += (l != s->labels[row]);
		s->labels[row] = l;
		counts[l] += w;
		add_row_quantized(sum, x, frame, w, d, s->quantize_in_vectors);
	}
	pass->changed[worker] += changed;
}

/*
 * The other threads' sums, counts and changes (update_block) added to
 * thread 0's and to changed
 */
static void
merge_worker_sums(CpuSession *s, const UpdatePass *pass, int64_t *changed)
{
	size_t		kd = (size_t) s->k * s->rows->d;

	for (int w = 0; w < s->update_workers; w++)
	{
		*changed += pass->changed[w];
		if (w > 0)
		{
			const long long *sums = s->worker_sums + (size_t) (w - 1) * (kd + s->k);

			for (size_t i = 0; i < kd; i++)
				pass->sums[i] += sums[i];
			for (int c = 0; c < s->k; c++)
				pass->counts[c] += sums[kd + c];
		}
	}
}

static GcStatus
cpu_open(const GcRows *rows, const GcFrame *frame,
		 const GcKmeansParams *params, void **session, GcError *err)
{
	int			k = params->k;
	CpuSession *s = calloc(1, sizeof(CpuSession));

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	s->rows = rows;
	s->frame = frame;
	s->params = params;
	s->k = k;
	s->poll.interrupted = params->interrupted;
	s->capacity = rows->n;
	s->labels = malloc(sizeof(int32_t) * rows->n);
	/* without it (a narrow store, or no memory) each row is scanned alone */
	if (gc_cpu_labeling_applies(rows))
		s->next_labels = malloc(sizeof(int32_t) * rows->n);
	s->sums = malloc(sizeof(long long) * k * rows->d);
	s->counts = malloc(sizeof(long long) * k);
	s->centroids = malloc(sizeof(double) * k * rows->d);
	s->mean = malloc(sizeof(double) * rows->d);
	if (s->labels == NULL || s->sums == NULL || s->counts == NULL || s->centroids == NULL ||
		s->mean == NULL)
	{
		cpu_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	}
	s->update_workers = update_workers(s);
	s->quantize_in_vectors = quantize_in_vectors(rows, frame);
	*session = s;
	return GC_OK;
}

static void
cpu_close(void *session)
{
	CpuSession *s = session;

	free(s->labels);
	free(s->next_labels);
	free(s->sums);
	free(s->counts);
	free(s->centroids);
	free(s->mean);
	free(s->icd);
	free(s->rid);
	free(s->worker_sums);
	free(s);
}

/* k-means++, greedy or plain: engine/seeding.c */
static GcStatus
cpu_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
				  int64_t *chosen, GcError *err)
{
	CpuSession *s = session;

	return gc_seed_kmeanspp_cpu(s->rows, s->frame, params, seed, chosen, err);
}

/* k-means||: engine/seeding_parallel.c */
static GcStatus
cpu_seed_kmeans_parallel(void *session, const GcKmeansParams *params, uint64_t seed,
						 int64_t *chosen, GcError *err)
{
	CpuSession *s = (CpuSession *) session;

	return gc_seed_kmeans_parallel_cpu(s->rows, s->frame, params, seed, chosen, err);
}

/* A k-means|| shard of the session's rows (engine/seeding_parallel.c) */
static GcStatus
cpu_parallel_shard(void *session, const GcKmeansParams *params, int64_t row_base,
				   void **shard, const GcParallelOps **ops, GcError *err)
{
	CpuSession *s = (CpuSession *) session;
	GcParallelShard *sh;
	GcStatus	status = gc_parallel_shard_open(s->rows, row_base, s->frame, params, &sh, err);

	if (status == GC_OK)
	{
		*shard = sh;
		*ops = &gc_parallel_cpu_ops;
	}
	return status;
}

/* A k-means++ shard of the session's rows (engine/seeding.c) */
static GcStatus
cpu_kmeanspp_shard(void *session, const GcKmeansParams *params, int64_t row_base,
				   void **shard, const GcKmeansppOps **ops, GcError *err)
{
	CpuSession *s = (CpuSession *) session;
	GcKmeansppShard *sh;
	GcStatus	status = gc_kmeanspp_shard_open(s->rows, row_base, s->frame, params, &sh, err);

	if (status == GC_OK)
	{
		*shard = sh;
		*ops = &gc_kmeanspp_cpu_ops;
	}
	return status;
}

/*
 * Inter-centroid distances (icd, k x k) and, for each centroid, the other
 * centroids ranked by distance from it (rid, k x k, the centroid itself
 * first): the tables of Wu & Hong's pruned labeling
 */
static bool
rank_centroids(const double *centroids, int k, int d, double *icd, int32_t *rid,
			   GcPoll *poll)
{
	for (int a = 0; a < k; a++)
	{
		icd[(size_t) a * k + a] = 0.0;
		for (int b = a + 1; b < k; b++)
		{
			double		dist = sqrt(gc_sqdist_exact(centroids + (size_t) a * d,
													centroids + (size_t) b * d, d));

			icd[(size_t) a * k + b] = icd[(size_t) b * k + a] = dist;
			if (gc_poll(poll, d))
				return false;
		}
	}
	for (int a = 0; a < k; a++)
	{
		const double *row = icd + (size_t) a * k;
		int32_t    *ranks = rid + (size_t) a * k;

		/* insertion sort by (distance, index): rows are short and nearly sorted */
		for (int b = 0; b < k; b++)
		{
			int			pos = b;

			while (pos > 0 && (row[ranks[pos - 1]] > row[b] ||
							   (row[ranks[pos - 1]] == row[b] && ranks[pos - 1] > b)))
			{
				ranks[pos] = ranks[pos - 1];
				pos--;
			}
			ranks[pos] = b;
		}
		if (gc_poll(poll, k))
			return false;
	}
	return true;
}

/*
 * Nearest centroid of x starting from its previous one, a: centroids are
 * tried in rid order and the walk stops at the first whose distance from
 * a exceeds d(x, a) + best, beyond which, by the triangle inequality, none
 * can be closer than best.  The result equals gc_nearest_centroid's; -1
 * when the interrupt hook, polled per distance, asked to stop.
 */
static int
nearest_pruned(const double *x, const double *centroids, int k, int d, int a,
			   const double *icd, const int32_t *rid, int64_t *work, GcPoll *poll)
{
	double		best2 = gc_sqdist_exact(x, centroids + (size_t) a * d, d);
	double		da = sqrt(best2),
				best = da;
	int			best_c = a;

	if (gc_poll(poll, d))
		return -1;
	for (int r = 1; r < k; r++)
	{
		int			j = rid[(size_t) a * k + r];
		double		d2;

		if (icd[(size_t) a * k + j] > (da + best) * (1.0 + 1e-12))
			break;
		d2 = gc_sqdist_within(x, centroids + (size_t) j * d, d, best2);
		(*work)++;
		if (gc_poll(poll, d))
			return -1;
		if (d2 < best2 || (d2 == best2 && j < best_c))
		{
			best2 = d2;
			best = sqrt(d2);
			best_c = j;
		}
	}
	(*work)++;
	return best_c;
}

/*
 * A restart from centroids: every label unknown
 */
static GcStatus
cpu_begin(void *session, const double *centroids, GcRestartPlan *plan, GcError *err)
{
	CpuSession *s = session;

	for (int64_t i = 0; i < s->rows->n; i++)
		s->labels[i] = -1;
	if (!gc_copy_polled(s->centroids, centroids, sizeof(double) * s->k * s->rows->d, &s->poll))
		return gc_fail(err, GC_INTERRUPTED, "interrupted while loading centroids");
	s->iteration = 0;
	plan->kernel = "cpu";
	/* auto prunes only where the screened labeling does not run (kmeans_hybrid.c) */
	plan->can_prune = s->next_labels == NULL;
	return GC_OK;
}

/* The ranked tables, allocated on first use; plain Lloyd needs none */
static GcStatus
cpu_prepare_pruning(void *session, bool *available, GcError *err)
{
	CpuSession *s = session;
	size_t		kk = (size_t) s->k * s->k;

	if (s->icd == NULL || s->rid == NULL)
	{
		free(s->icd);
		free(s->rid);
		s->icd = malloc(sizeof(double) * kk);
		s->rid = malloc(sizeof(int32_t) * kk);
	}
	*available = s->icd != NULL && s->rid != NULL;
	return GC_OK;
}

/*
 * One iteration's labeling: rows before pruned_rows labelled by pruning
 * from their previous labels, the others against every centroid, and
 * each row's quantised values added to its cluster's sums and its weight
 * to its count (sums and counts overwritten); the centroids stay
 */
static GcStatus
cpu_step_partial(void *session, int64_t pruned_rows, long long *sums, long long *counts,
				 GcStepStatus *status, GcError *err)
{
	CpuSession *s = session;
	const GcRows *rows = s->rows;
	const GcFrame *frame = s->frame;
	const GcKmeansParams *params = s->params;
	double	   *centroids = s->centroids;
	int			k = s->k,
				d = rows->d;
	int64_t		changed = 0,
				work = 0,
				pruned_work = 0;
	bool		screened = s->next_labels != NULL;
	/* every row by the screen, each tile's update while its rows are in cache */
	bool		tiled = screened && pruned_rows == 0;

	if (pruned_rows > 0 && !rank_centroids(centroids, k, d, s->icd, s->rid, &s->poll))
		return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", s->iteration + 1);
	if (!gc_copy_polled(sums, NULL, sizeof(long long) * k * d, &s->poll))
		return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", s->iteration + 1);
	memset(counts, 0, sizeof(long long) * k);
	if (tiled)
	{
		UpdatePass	update = {.s = s, .sums = sums, .counts = counts};
		GcTileHook	hook = {update_block, &update, s->update_workers};
		GcStatus	st;

		if (s->worker_sums)
			memset(s->worker_sums, 0,
				   sizeof(long long) * ((size_t) k * d + k) * (s->update_workers - 1));
		st = gc_cpu_label_rows(rows, 0, centroids, k, NULL, params->cpu_threads,
							   s->next_labels, NULL, &hook, &s->poll, NULL, err);
		if (st != GC_OK)
			return st;
		merge_worker_sums(s, &update, &changed);
		work = rows->n * (int64_t) k;
	}
	else if (screened && pruned_rows < rows->n)
	{
		GcStatus	st = gc_cpu_label_rows(rows, pruned_rows, centroids, k, NULL,
										   params->cpu_threads, s->next_labels, NULL, NULL,
										   &s->poll, NULL, err);

		if (st != GC_OK)
			return st;
	}
	/* otherwise the rows one by one: pruned, screened already, or scanned */
	for (int ci = 0; !tiled && ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			const double *x = chunk->values + (size_t) i * d;
			int			l;
			long long	w = gc_chunk_weight(chunk, i);

			if (row < pruned_rows)
			{
				int64_t		before = work;

				l = nearest_pruned(x, centroids, k, d, s->labels[row], s->icd, s->rid,
								   &work, &s->poll);
				pruned_work += work - before;
			}
			else if (screened)
			{
				l = s->next_labels[row];
				work += k;
			}
			else
			{
				l = gc_nearest_centroid_polled(x, centroids, k, d, NULL, &s->poll);
				work += k;
			}
			/* the row's share of the update: d more units */
			if (l < 0 || gc_poll(&s->poll, d))
				return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d",
							   s->iteration + 1);
			changed += (l != s->labels[row]);
			s->labels[row] = l;
			counts[l] += w;
			add_row_quantized(sums + (size_t) l * d, x, frame, w, d, s->quantize_in_vectors);
		}
	}
	if (s->bound_labels)
		memcpy(s->bound_labels, s->labels, sizeof(int32_t) * rows->n);
	status->changed = changed;
	status->shift_sum = 0;
	status->pruned_work = (double) pruned_work;
	status->distances = (double) work;
	status->kernel = "cpu";
	return GC_OK;
}

/* The centroids the next step labels against (a sharded fit's update) */
static GcStatus
cpu_load_centroids(void *session, const double *centroids, GcError *err)
{
	CpuSession *s = session;

	if (!gc_copy_polled(s->centroids, centroids, sizeof(double) * s->k * s->rows->d, &s->poll))
		return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", s->iteration + 1);
	s->iteration++;
	return GC_OK;
}

/*
 * A streamed shard's session moved onto view's rows (engine/kmeans_shards.c):
 * their last labels copied in, to be copied back by the next step
 */
static GcStatus
cpu_rebind_rows(void *session, const GcRows *view, int32_t *labels, GcError *err)
{
	CpuSession *s = session;

	if (view->n > s->capacity)
		return gc_fail(err, GC_ERR_RANGE, "a shard of %lld rows is past its session's %lld",
					   (long long) view->n, (long long) s->capacity);
	s->rows = view;
	s->bound_labels = labels;
	memcpy(s->labels, labels, sizeof(int32_t) * view->n);
	return GC_OK;
}

/*
 * One iteration: the labeling and sums of cpu_step_partial, then the
 * centroids moved to the means of their rows (centroid_update.c)
 */
static GcStatus
cpu_step(void *session, int64_t pruned_rows, GcStepStatus *status, GcError *err)
{
	CpuSession *s = session;
	GcStatus	st = cpu_step_partial(s, pruned_rows, s->sums, s->counts, status, err);

	if (st != GC_OK)
		return st;
	if (!gc_kmeans_update_centroids(s->frame, s->params->metric, s->k, s->sums, s->counts,
									s->centroids, s->mean, &s->poll, &status->shift_sum))
		return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", s->iteration + 1);
	s->iteration++;
	return GC_OK;
}

static GcStatus
cpu_end(void *session, double *centroids, GcError *err)
{
	CpuSession *s = session;

	memcpy(centroids, s->centroids, sizeof(double) * s->k * s->rows->d);
	return GC_OK;
}

/*
 * Sizes and the inertia's exact sum (and optionally labels and
 * distances) for centroids
 */
static GcStatus
cpu_score_sum(void *session, const double *centroids, int32_t *labels,
			  double *distances, int64_t *sizes, gc_u128 *inertia_sum, GcError *err)
{
	CpuSession *s = session;
	const GcRows *rows = s->rows;
	gc_u128		total = 0;
	double	   *screened_d2 = NULL;

	/* the screened pass labels every row first, into next_labels */
	if (s->next_labels != NULL)
	{
		GcStatus	st;

		screened_d2 = malloc(sizeof(double) * rows->n);
		if (screened_d2 == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory while scoring");
		st = gc_cpu_label_rows(rows, 0, centroids, s->k, NULL,
							   s->params->cpu_threads, s->next_labels, screened_d2,
							   NULL, &s->poll, NULL, err);
		if (st != GC_OK)
		{
			free(screened_d2);
			return st;
		}
	}
	memset(sizes, 0, sizeof(int64_t) * s->k);
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		d2;
			int			l;

			if (screened_d2 != NULL)
			{
				l = s->next_labels[row];
				d2 = screened_d2[row];
			}
			else
			{
				l = gc_nearest_centroid_polled(chunk->values + (size_t) i * rows->d,
											   centroids, s->k, rows->d, &d2, &s->poll);
				if (l < 0)
					return gc_fail(err, GC_INTERRUPTED, "interrupted while scoring");
			}

			sizes[l]++;
			total += gc_quantize_wide(d2, s->frame->inertia_exp) *
				(gc_u128) gc_chunk_weight(chunk, i);
			if (labels)
				labels[row] = l;
			if (distances)
				distances[row] = sqrt(d2);
		}
	}
	free(screened_d2);
	*inertia_sum = total;
	return GC_OK;
}

/*
 * Sizes and inertia (and optionally labels and distances) for centroids
 */
static GcStatus
cpu_score(void *session, const double *centroids, int32_t *labels,
		  double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	CpuSession *s = session;
	gc_u128		total;
	GcStatus	st = cpu_score_sum(s, centroids, labels, distances, sizes, &total, err);

	if (st == GC_OK)
		*inertia = gc_inertia_value(total, s->frame);
	return st;
}

const GcKmeansBackend gc_kmeans_cpu_backend = {
	.name = "cpu",
	.hybrid = &gc_hybrid_cpu_rules,
	.step_polls = true,			/* by work: gc_poll */
	.open = cpu_open,
	.seed_kmeanspp = cpu_seed_kmeanspp,
	.seed_kmeans_parallel = cpu_seed_kmeans_parallel,
	.begin = cpu_begin,
	.prepare_pruning = cpu_prepare_pruning,
	.step = cpu_step,
	.order_rows = NULL,
	.end = cpu_end,
	.score = cpu_score,
	.close = cpu_close,
	.step_partial = cpu_step_partial,
	.load_centroids = cpu_load_centroids,
	.score_sum = cpu_score_sum,
	.parallel_shard = cpu_parallel_shard,
	.kmeanspp_shard = cpu_kmeanspp_shard,
	.rebind_rows = cpu_rebind_rows,
};
