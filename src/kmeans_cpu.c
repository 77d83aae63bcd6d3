/*-------------------------------------------------------------------------
 *
 * kmeans_cpu.c
 *	  The CPU reference backend of k-means: k-means++ seeding as an
 *	  exponential race, Lloyd iterations with exact fixed-point centroid
 *	  sums, and scoring.  It is the oracle the GPU backend is tested
 *	  against, and the fallback where no GPU exists.
 *
 * Distances are computed in double precision, directly as sum (x - c)^2.
 * An empty cluster keeps its previous centroid.
 *
 * IDENTIFICATION
 *	  src/kmeans_cpu.c
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
	long long  *counts;			/* k */
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

/*
 * k-means++: step 0 draws a row uniformly, step t draws one with
 * probability proportional to its squared distance to the nearest centre
 * so far, each as the minimum of the rows' race keys.
 */
static GcStatus
cpu_seed_kmeanspp(void *session, const GcKmeansParams *params, uint64_t seed,
				  int64_t *chosen, GcError *err)
{
	CpuSession *s = session;
	const GcRows *rows = s->rows;
	double	   *mind2 = malloc(sizeof(double) * rows->n);

	if (mind2 == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");

	for (int t = 0; t < params->k; t++)
	{
		const double *centre = t > 0 ? gc_rows_get(rows, chosen[t - 1]) : NULL;
		uint64_t	best = GC_RACE_NONE;

		for (int ci = 0; ci < rows->nchunks; ci++)
		{
			const GcChunk *chunk = &rows->chunks[ci];

			for (int64_t i = 0; i < chunk->count; i++)
			{
				int64_t		row = chunk->first_row + i;
				double		w = 1.0;
				uint64_t	key;

				if (poll_interrupt(params, row))
				{
					free(mind2);
					return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
				}
				if (t > 0)
				{
					double		d2 = gc_sqdist_exact(chunk->values + (size_t) i * rows->d,
													 centre, rows->d);

					if (t == 1 || d2 < mind2[row])
						mind2[row] = d2;
					w = mind2[row];
				}
				key = gc_race_key(gc_unit_draw(chunk->hashes[i], seed, t), w, row);
				if (key < best)
					best = key;
			}
		}
		chosen[t] = (int64_t) (uint32_t) best;
	}
	free(mind2);
	return GC_OK;
}

/*
 * Lloyd's iterations from the centroids given, until no label changes,
 * the largest centroid shift is at most tol times the bounding-box
 * diagonal, or max_iter.
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

	outcome->iterations = 0;
	outcome->converged = false;
	for (int64_t i = 0; i < rows->n; i++)
		s->labels[i] = -1;

	for (int it = 1; it <= params->max_iter; it++)
	{
		int64_t		changed = 0;
		double		max_shift2 = 0.0;

		memset(s->sums, 0, sizeof(long long) * k * d);
		memset(s->counts, 0, sizeof(long long) * k);
		for (int ci = 0; ci < rows->nchunks; ci++)
		{
			const GcChunk *chunk = &rows->chunks[ci];

			for (int64_t i = 0; i < chunk->count; i++)
			{
				int64_t		row = chunk->first_row + i;
				const double *x = chunk->values + (size_t) i * d;
				int			l;
				long long  *sum;

				if (poll_interrupt(params, row))
					return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", it);
				l = gc_nearest_centroid(x, centroids, k, d, NULL);
				changed += (l != s->labels[row]);
				s->labels[row] = l;
				s->counts[l]++;
				sum = s->sums + (size_t) l * d;
				for (int j = 0; j < d; j++)
					sum[j] += gc_quantize(x[j], frame->offset[j], frame->scale[j]);
			}
		}

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
	const GcRows *rows = s->rows;
	double		total = 0.0;

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
			total += d2;
			if (labels)
				labels[row] = l;
			if (distances)
				distances[row] = sqrt(d2);
		}
	}
	*inertia = total;
	return GC_OK;
}

const GcKmeansBackend gc_kmeans_cpu_backend = {
	.name = "cpu",
	.open = cpu_open,
	.seed_kmeanspp = cpu_seed_kmeanspp,
	.lloyd = cpu_lloyd,
	.score = cpu_score,
	.close = cpu_close,
};
