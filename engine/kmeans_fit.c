/*-------------------------------------------------------------------------
 *
 * kmeans_fit.c
 *	  The k-means driver shared by every backend: the numeric frame, random
 *	  initialisation, restarts (n_init) keeping the lowest inertia, and the
 *	  final scoring pass that yields sizes, labels and distances.
 *
 * The algorithm is Lloyd's, seeded by k-means++ (Arthur & Vassilvitskii,
 * 2007) drawn as an exponential race over per-row seeded draws, so that
 * the same seed picks the same centres whatever the order of the rows.
 *
 * IDENTIFICATION
 *	  engine/kmeans_fit.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <float.h>
#include <stdlib.h>


/*
 * Compute each dimension's centre and fixed-point scale from the bounding
 * box: with n rows (or a total weight of n), sums of n values of magnitude
 * at most the half-range stay below 2^62.
 */
GcStatus
gc_frame_init(GcFrame *frame, const GcRows *rows, GcError *err)
{
	int			d = rows->d;
	int			nbits = 0;
	double		diag2 = 0.0;

	frame->d = d;
	frame->offset = malloc(sizeof(double) * d);
	frame->scale = malloc(sizeof(double) * d);
	if (frame->offset == NULL || frame->scale == NULL)
	{
		gc_frame_release(frame);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the frame");
	}
	while (nbits < 62 && ((int64_t) 1 << nbits) <= rows->total_weight)
		nbits++;

	for (int j = 0; j < d; j++)
	{
		double		half = rows->hi[j] / 2 - rows->lo[j] / 2;
		int			e = 0;

		if (fabs(rows->lo[j]) > GC_MAX_MAGNITUDE || fabs(rows->hi[j]) > GC_MAX_MAGNITUDE)
		{
			gc_frame_release(frame);
			return gc_fail(err, GC_ERR_RANGE,
						   "dimension %d holds a value of magnitude above %g", j + 1,
						   GC_MAX_MAGNITUDE);
		}
		frame->offset[j] = rows->lo[j] / 2 + rows->hi[j] / 2;
		if (half > 0.0)
			frexp(half, &e);	/* half < 2^e */
		e = 61 - nbits - e;
		if (e > 1000)
			e = 1000;
		frame->scale[j] = ldexp(1.0, e);
		diag2 += 4.0 * half * half;
	}
	frame->diagonal = sqrt(diag2);

	/*
	 * A point's squared distance to its nearest centroid is at most diag2
	 * (some centroid is a mean of points, inside the box): n of them (or
	 * their total weight), with two bits to spare, fit in 128 bits.
	 */
	{
		int			e = 0;

		if (diag2 > 0.0)
			frexp(diag2, &e);	/* diag2 < 2^e */
		frame->inertia_exp = 125 - nbits - e;
	}
	return GC_OK;
}

double
gc_inertia_value(unsigned __int128 sum, const GcFrame *frame)
{
	return ldexp((double) sum, -frame->inertia_exp);
}

void
gc_frame_release(GcFrame *frame)
{
	free(frame->offset);
	free(frame->scale);
	frame->offset = frame->scale = NULL;
}

/*
 * Nearest centroid by exact squared distance; the lowest index wins ties
 */
int
gc_nearest_centroid(const double *x, const double *centroids, int k, int d,
					double *distance2)
{
	int			best = 0;
	double		bestd = DBL_MAX;

	for (int c = 0; c < k; c++)
	{
		double		s = gc_sqdist_exact(x, centroids + (size_t) c * d, d);

		if (s < bestd)
		{
			bestd = s;
			best = c;
		}
	}
	if (distance2)
		*distance2 = bestd;
	return best;
}

/*
 * Write the initial centroids of one restart into centroids
 */
static GcStatus
initial_centroids(const GcKmeansBackend *backend, void *session,
				  const GcRows *rows, const GcKmeansParams *params,
				  uint64_t seed, double *centroids, GcError *err)
{
	int			k = params->k,
				d = rows->d;
	int64_t    *chosen;
	GcStatus	status = GC_OK;

	if (params->init == GC_INIT_GIVEN)
	{
		memcpy(centroids, params->init_centroids, sizeof(double) * k * d);
		return GC_OK;
	}
	chosen = malloc(sizeof(int64_t) * k);
	if (chosen == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (params->init == GC_INIT_RANDOM)
		status = gc_select_random_rows(rows, k, seed, chosen, err);
	else
		status = backend->seed_kmeanspp(session, params, seed, chosen, err);
	if (status == GC_OK)
		for (int c = 0; c < k; c++)
			memcpy(centroids + (size_t) c * d, gc_rows_get(rows, chosen[c]),
				   sizeof(double) * d);
	free(chosen);
	return status;
}

/*
 * Run params->n_init seeded restarts of Lloyd's algorithm on backend and
 * keep the one with the lowest inertia (the first, on ties).
 */
GcStatus
gc_kmeans_fit(const GcKmeansBackend *backend, const GcRows *rows,
			  const GcKmeansParams *params, GcKmeansResult *result,
			  GcError *err)
{
	int			k = params->k,
				d = rows->d;
	GcFrame		frame = {0};
	void	   *session = NULL;
	double	   *work = NULL;
	int64_t    *work_sizes = NULL;
	GcStatus	status;
	double		t0;

	if (rows->weighted && !backend->weighted)
		return gc_fail(err, GC_ERR_DEVICE, "the %s backend does not handle weighted rows",
					   backend->name);
	if (rows->bad_weight)
		return gc_fail(err, GC_ERR_RANGE,
					   "row weights must be whole numbers from 1 to 2^53, summing below 2^62");
	status = gc_frame_init(&frame, rows, err);
	if (status != GC_OK)
		return status;

	gc_report_progress(params, GC_PHASE_UPLOADING, 0, NAN, NAN);
	t0 = gc_now_ms();
	status = backend->open(rows, &frame, params, &session, err);
	result->timings.transfer_ms = gc_now_ms() - t0;
	result->timings.seeding_ms = result->timings.iterations_ms = 0.0;
	result->timings.labeling_ms = result->timings.update_ms = 0.0;
	result->inertia = INFINITY;

	work = malloc(sizeof(double) * k * d);
	work_sizes = malloc(sizeof(int64_t) * k);
	if (status == GC_OK && (work == NULL || work_sizes == NULL))
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for centroids");

	for (int r = 0; status == GC_OK && r < params->n_init; r++)
	{
		GcLloydOutcome outcome;
		double		inertia;

		gc_report_progress(params, GC_PHASE_SEEDING, 0, NAN,
						   isfinite(result->inertia) ? result->inertia : NAN);
		t0 = gc_now_ms();
		status = initial_centroids(backend, session, rows, params,
								   params->seed + r, work, err);
		result->timings.seeding_ms += gc_now_ms() - t0;
		if (status != GC_OK)
			break;

		t0 = gc_now_ms();
		status = backend->lloyd(session, params, work, &outcome, err);
		if (status == GC_OK)
			status = backend->score(session, work, NULL, NULL, work_sizes,
									&inertia, err);
		result->timings.iterations_ms += gc_now_ms() - t0;
		result->timings.labeling_ms += outcome.labeling_ms;
		result->timings.update_ms += outcome.update_ms;
		if (status == GC_OK && inertia < result->inertia)
		{
			result->inertia = inertia;
			result->iterations = outcome.iterations;
			result->converged = outcome.converged;
			result->pruned = outcome.pruned;
			result->kernel = outcome.kernel;
			result->skipped_fraction = outcome.distances_lloyd > 0 ?
				1.0 - outcome.distances / outcome.distances_lloyd : 0.0;
			result->rechecked_fraction = outcome.iterations > 0 ?
				outcome.rechecked / ((double) rows->n * outcome.iterations) : 0.0;
			result->exact_fraction = outcome.iterations > 0 ?
				outcome.exact_checked / ((double) rows->n * outcome.iterations) : 0.0;
			memcpy(result->centroids, work, sizeof(double) * k * d);
			memcpy(result->sizes, work_sizes, sizeof(int64_t) * k);
		}
	}

	if (status == GC_OK && (result->labels || result->distances))
	{
		gc_report_progress(params, GC_PHASE_RETURNING, result->iterations, NAN,
						   result->inertia);
		t0 = gc_now_ms();
		status = backend->score(session, result->centroids, result->labels,
								result->distances, result->sizes,
								&result->inertia, err);
		result->timings.iterations_ms += gc_now_ms() - t0;
	}

	if (session)
		backend->close(session);
	free(work);
	free(work_sizes);
	gc_frame_release(&frame);
	return status;
}
