/*-------------------------------------------------------------------------
 *
 * kmeans_cpu.c
 *	  The CPU reference backend of k-means: k-means++ seeding (in
 *	  seeding.c), Lloyd iterations with exact fixed-point centroid
 *	  sums, and scoring.  It is the oracle the GPU backend is tested
 *	  against, and the fallback where no GPU exists.
 *
 * Distances are computed in double precision, directly as sum (x - c)^2.
 * An empty cluster keeps its previous centroid.
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
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

/* Rows between two polls of the interrupt hook */
#define POLL_ROWS 1024

typedef struct CpuSession
{
	const GcRows *rows;
	const GcFrame *frame;
	const GcKmeansParams *params;
	int			k;
	int32_t    *labels;			/* n, -1 before the first iteration */
	long long  *sums;			/* k * d fixed-point sums */
	long long  *counts;			/* k: weight of each cluster (rows, unweighted) */
} CpuSession;

static void cpu_close(void *session);

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
	s->labels = malloc(sizeof(int32_t) * rows->n);
	s->sums = malloc(sizeof(long long) * k * rows->d);
	s->counts = malloc(sizeof(long long) * k);
	if (s->labels == NULL || s->sums == NULL || s->counts == NULL)
	{
		cpu_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	}
	*session = s;
	return GC_OK;
}

static void
cpu_close(void *session)
{
	CpuSession *s = session;

	free(s->labels);
	free(s->sums);
	free(s->counts);
	free(s);
}

static bool
poll_interrupt(const GcKmeansParams *params, int64_t i)
{
	return (i % POLL_ROWS) == 0 && params->interrupted && params->interrupted();
}

/* k-means++, greedy or plain: engine/seeding.c */
static GcStatus
cpu_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
				  int64_t *chosen, GcError *err)
{
	CpuSession *s = session;

	return gc_seed_kmeanspp_cpu(s->rows, s->frame, params, seed, chosen, err);
}

/*
 * Inter-centroid distances (icd, k x k) and, for each centroid, the other
 * centroids ranked by distance from it (rid, k x k, the centroid itself
 * first): the tables of Wu & Hong's pruned labeling
 */
static void
rank_centroids(const double *centroids, int k, int d, double *icd, int32_t *rid)
{
	for (int a = 0; a < k; a++)
	{
		icd[(size_t) a * k + a] = 0.0;
		for (int b = a + 1; b < k; b++)
		{
			double		dist = sqrt(gc_sqdist_exact(centroids + (size_t) a * d,
													centroids + (size_t) b * d, d));

			icd[(size_t) a * k + b] = icd[(size_t) b * k + a] = dist;
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
	}
}

/*
 * Nearest centroid of x starting from its previous one, a: centroids are
 * tried in rid order and the walk stops at the first whose distance from
 * a exceeds d(x, a) + best, beyond which, by the triangle inequality, none
 * can be closer than best.  The result equals gc_nearest_centroid's.
 */
static int
nearest_pruned(const double *x, const double *centroids, int k, int d, int a,
			   const double *icd, const int32_t *rid, int64_t *work)
{
	double		best2 = gc_sqdist_exact(x, centroids + (size_t) a * d, d);
	double		da = sqrt(best2),
				best = da;
	int			best_c = a;

	for (int r = 1; r < k; r++)
	{
		int			j = rid[(size_t) a * k + r];
		double		d2;

		if (icd[(size_t) a * k + j] > (da + best) * (1.0 + 1e-12))
			break;
		d2 = gc_sqdist_exact(x, centroids + (size_t) j * d, d);
		(*work)++;
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

/* Pruning pays on the CPU unless nearly every centroid must be tried */
#define CPU_PRUNED_MAX_WORK_RATIO 0.75

/*
 * Lloyd's iterations from the centroids given, until no label changes,
 * the largest centroid shift is at most tol times the bounding-box
 * diagonal, or max_iter.  From the second iteration on, labels may come
 * from pruned labeling, which gives the same labels with less work.
 */
static GcStatus
cpu_lloyd(void *session, const GcKmeansParams *params, double *centroids,
		  GcLloydOutcome *outcome, GcError *err)
{
	CpuSession *s = session;
	const GcRows *rows = s->rows;
	const GcFrame *frame = s->frame;
	int			k = s->k,
				d = rows->d;
	bool		use_pruned = params->algorithm == GC_ALGORITHM_PRUNED ||
		(params->algorithm == GC_ALGORITHM_AUTO && k >= 4 && rows->n >= 4 * (int64_t) k);
	double	   *icd = NULL;
	int32_t    *rid = NULL;
	GcStatus	status = GC_OK;

	memset(outcome, 0, sizeof(*outcome));
	outcome->kernel = "cpu";
	for (int64_t i = 0; i < rows->n; i++)
		s->labels[i] = -1;
	if (use_pruned)
	{
		icd = malloc(sizeof(double) * k * k);
		rid = malloc(sizeof(int32_t) * k * k);
		if (icd == NULL || rid == NULL)
			use_pruned = false; /* plain Lloyd needs no tables */
	}

	for (int it = 1; it <= params->max_iter && status == GC_OK; it++)
	{
		int64_t		changed = 0,
					work = 0;
		double		max_shift2 = 0.0;
		bool		prune_now = use_pruned && it > 1;

		if (prune_now)
			rank_centroids(centroids, k, d, icd, rid);
		memset(s->sums, 0, sizeof(long long) * k * d);
		memset(s->counts, 0, sizeof(long long) * k);
		for (int ci = 0; ci < rows->nchunks && status == GC_OK; ci++)
		{
			const GcChunk *chunk = &rows->chunks[ci];

			for (int64_t i = 0; i < chunk->count; i++)
			{
				int64_t		row = chunk->first_row + i;
				const double *x = chunk->values + (size_t) i * d;
				int			l;
				long long	w = gc_chunk_weight(chunk, i);
				long long  *sum;

				if (poll_interrupt(params, row))
				{
					status = gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", it);
					break;
				}
				if (prune_now)
					l = nearest_pruned(x, centroids, k, d, s->labels[row], icd, rid, &work);
				else
				{
					l = gc_nearest_centroid(x, centroids, k, d, NULL);
					work += k;
				}
				changed += (l != s->labels[row]);
				s->labels[row] = l;
				s->counts[l] += w;
				sum = s->sums + (size_t) l * d;
				for (int j = 0; j < d; j++)
					sum[j] += w * gc_quantize(x[j], frame->offset[j], frame->scale[j]);
			}
		}
		if (status != GC_OK)
			break;
		outcome->distances += (double) work;
		outcome->distances_lloyd += (double) rows->n * k;
		outcome->pruned |= prune_now;
		/* the hybrid: back to plain labeling when pruning saves little */
		if (prune_now && params->algorithm == GC_ALGORITHM_AUTO &&
			(double) work > CPU_PRUNED_MAX_WORK_RATIO * (double) rows->n * k)
			use_pruned = false;

		for (int c = 0; c < k; c++)
		{
			double	   *centroid = centroids + (size_t) c * d;
			double		shift2 = 0.0;

			if (s->counts[c] == 0)
				continue;		/* an empty cluster keeps its centroid */
			for (int j = 0; j < d; j++)
			{
				double		m = gc_dequantize_mean(s->sums[(size_t) c * d + j], s->counts[c],
												   frame->offset[j], frame->scale[j]);
				double		t = m - centroid[j];

				shift2 = shift2 + t * t;
				centroid[j] = m;
			}
			if (shift2 > max_shift2)
				max_shift2 = shift2;
		}

		outcome->iterations = it;
		if (changed == 0 || sqrt(max_shift2) <= params->tol * frame->diagonal)
		{
			outcome->converged = true;
			break;
		}
	}
	free(icd);
	free(rid);
	return status;
}

/*
 * Sizes and inertia (and optionally labels and distances) for centroids
 */
static GcStatus
cpu_score(void *session, const double *centroids, int32_t *labels,
		  double *distances, int64_t *sizes, double *inertia, GcError *err)
{
	CpuSession *s = session;
	const GcRows *rows = s->rows;
	gc_u128		total = 0;

	memset(sizes, 0, sizeof(int64_t) * s->k);
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		d2;
			int			l;

			if (poll_interrupt(s->params, row))
				return gc_fail(err, GC_INTERRUPTED, "interrupted while scoring");
			l = gc_nearest_centroid(chunk->values + (size_t) i * rows->d,
									centroids, s->k, rows->d, &d2);

			sizes[l]++;
			total += gc_quantize_wide(d2, s->frame->inertia_exp) *
				(gc_u128) gc_chunk_weight(chunk, i);
			if (labels)
				labels[row] = l;
			if (distances)
				distances[row] = sqrt(d2);
		}
	}
	*inertia = gc_inertia_value(total, s->frame);
	return GC_OK;
}

const GcKmeansBackend gc_kmeans_cpu_backend = {
	.name = "cpu",
	.open = cpu_open,
	.seed_kmeanspp = cpu_seed_kmeanspp,
	.lloyd = cpu_lloyd,
	.score = cpu_score,
	.close = cpu_close,
	.weighted = true,
};
