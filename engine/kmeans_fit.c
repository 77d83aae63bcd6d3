/*-------------------------------------------------------------------------
 *
 * kmeans_fit.c
 *	  The k-means driver shared by every backend: random initialisation,
 *	  restarts (n_init) keeping the lowest inertia, Lloyd's iterations
 *	  with their convergence test, cancel checks and the hybrid's
 *	  decisions, and the final scoring pass that yields sizes,
 *	  labels and distances.  Backends offer steps (open, seed, begin, one
 *	  label-and-update step, score, close); the loop is written once here,
 *	  and so is the guard on reduced precision (precision_check.c), which
 *	  the first restart passes through before it iterates.
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
#include "kmeans_hybrid.h"
#include "precision_check.h"
#include "kmeans_stages.h"

#include <stdlib.h>


/*
 * Write the initial centroids of one restart into centroids; k-means||
 * adds its phases' times to phases
 */
static GcStatus
initial_centroids(const GcKmeansBackend *backend, void *session,
				  const GcRows *rows, const GcKmeansParams *asked,
				  uint64_t seed, double *centroids, GcSeedingPhases *phases, GcError *err)
{
	GcKmeansParams timed = *asked;
	const GcKmeansParams *params = &timed;
	int			k = params->k,
				d = rows->d;
	int64_t    *chosen;
	GcInit		method = gc_seed_method(params, rows->n, d);
	GcStatus	status = GC_OK;
	GcPoll		poll = {params->interrupted, 0};

	timed.phases = phases;
	/* k d values into fresh memory: seconds of page faults for the widest */
	if (method == GC_INIT_GIVEN)
		return gc_copy_polled(centroids, params->init_centroids, sizeof(double) * k * d, &poll) ?
			GC_OK : gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	chosen = malloc(sizeof(int64_t) * k);
	if (chosen == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	if (method == GC_INIT_RANDOM)
		status = gc_select_random_rows(rows, k, seed, chosen, params->interrupted, err);
	else if (method == GC_INIT_KMEANS_PARALLEL)
		status = backend->seed_kmeans_parallel(session, params, seed, chosen, err);
	else
		status = backend->seed_kmeanspp(session, params, seed, chosen, err);
	for (int c = 0; status == GC_OK && c < k; c++)
	{
		gc_rows_copy_row(rows, chosen[c], centroids + (size_t) c * d);
		if (gc_poll(&poll, (int64_t) (sizeof(double) * d)))
			status = gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
	}
	free(chosen);
	return status;
}

/* What one restart of Lloyd's iterations did */
typedef struct LloydOutcome
{
	int			iterations;
	bool		converged;
	bool		pruned;			/* pruned labeling ran in some iteration */
	double		distances;		/* point-centroid distances computed */
	double		distances_lloyd;	/* what Lloyd's would have computed */
	double		rechecked;		/* points a tensor pass sent to a more exact one */
	double		exact_checked;	/* of which, points left to the exact check */
	const char *kernel;			/* labeling kernel used last */
	double		labeling_ms;	/* device time in labeling, where measured */
	double		update_ms;		/* device time in centroid updates */
	double		steps_ms;		/* wall time in the backend's steps */
} LloydOutcome;

/*
 * Lloyd's iterations from the centroids given, until no label changes,
 * the sum of the centroids' squared shifts is at most tol times the rows'
 * mean per-dimension variance (tolerance.c), or max_iter.  From the second iteration on, labels may come
 * from pruned labeling, which gives the same labels with less work, as
 * the hybrid's rules for the backend's device decide (kmeans_hybrid.c).
 */
static GcStatus
run_lloyd(const GcKmeansBackend *backend, void *session, const GcRows *rows,
		  const GcFrame *frame, const GcKmeansParams *params, double *centroids,
		  LloydOutcome *outcome, GcError *err)
{
	GcRestartPlan plan = {0};
	GcHybrid	hybrid;
	GcStatus	status;

	memset(outcome, 0, sizeof(*outcome));
	if ((status = backend->begin(session, centroids, &plan, err)) != GC_OK)
		return status;
	outcome->kernel = plan.kernel;
	gc_hybrid_start(&hybrid, backend->hybrid, params, rows->n, rows->d, plan.can_prune);
	if (hybrid.use_pruned &&
		(status = backend->prepare_pruning(session, &hybrid.use_pruned, err)) != GC_OK)
		return status;

	for (int it = 1; it <= params->max_iter; it++)
	{
		GcStepStatus step = {0};
		int64_t		pruned_rows = gc_hybrid_pruned_rows(&hybrid, it);
		double		t0 = gc_now_ms();

		status = backend->step(session, pruned_rows, &step, err);
		outcome->steps_ms += gc_now_ms() - t0;
		outcome->labeling_ms += step.labeling_ms;
		outcome->update_ms += step.update_ms;
		if (status != GC_OK)
			return status;
		outcome->kernel = step.kernel;
		outcome->iterations = it;
		outcome->rechecked += step.rechecked;
		outcome->exact_checked += step.exact_checked;
		outcome->distances += step.distances;
		outcome->distances_lloyd += (double) rows->n * params->k;
		outcome->pruned |= pruned_rows > 0;
		gc_report_progress(params, GC_PHASE_ITERATING, it,
						   gc_frame_shift_ratio(frame, step.shift_sum), NAN);
		if (step.changed == 0 || gc_frame_converged(frame, params->tol, step.shift_sum))
		{
			outcome->converged = true;
			break;
		}
		if (!backend->step_polls && params->interrupted && params->interrupted())
			return gc_fail(err, GC_INTERRUPTED, "interrupted in iteration %d", it);

		switch (gc_hybrid_review(&hybrid, pruned_rows, &step))
		{
			case GC_HYBRID_KEEP:
				break;
			case GC_HYBRID_LLOYD:
				if (backend->order_rows &&
					(status = backend->order_rows(session, false, err)) != GC_OK)
					return status;
				break;
			case GC_HYBRID_REORDER:
				if (backend->order_rows &&
					(status = backend->order_rows(session, true, err)) != GC_OK)
					return status;
				break;
		}
	}
	return backend->end(session, centroids, err);
}

/*
 * Whether float32 labeling can hold the rows' squared distances: every one
 * is at most the frame's squared diagonal, which must stay well inside
 * float32's normal range (2^-126 to 2^128).  Past it the GPU's float32,
 * TF32 and BF16 labelers see overflowed (or flushed) distances and every
 * point goes to the first centroid, while the CPU, in double, labels
 * correctly; rows spread wider than about 1e18 (the legal limit is 1e150)
 * are labeled in float64 instead.
 */
static bool
frame_fits_float32(const GcFrame *frame)
{
	return frame->diagonal == 0.0 ||
		(frame->diagonal >= 0x1p-40 && frame->diagonal <= 0x1p60);
}

/*
 * Run params->n_init seeded restarts of Lloyd's algorithm on backend and
 * keep the one with the lowest inertia (the first, on ties).
 */

GcStatus
gc_kmeans_fit_flat(const GcKmeansBackend *backend, GcRows *rows,
				   const GcKmeansParams *asked, GcKmeansResult *result,
				   GcError *err)
{
	GcKmeansParams run_params = *asked;
	const GcKmeansParams *params = &run_params;
	int			k = params->k,
				d = rows->d;
	GcFrame		frame = {0};
	void	   *session = NULL;
	double	   *work = NULL;
	int64_t    *work_sizes = NULL;
	GcStatus	status;
	double		t0,
				t1,
				t2;
	bool		last,
				scored_best = false;	/* the labels asked for are the best restart's */

	if (rows->bad_weight)
		return gc_fail(err, GC_ERR_RANGE,
					   "row weights must be whole numbers from 1 to 2^53, summing below 2^62");
	if (gc_rows_finish_hashes(rows, params->interrupted, err) != GC_OK)
		return err->status;
	if (!backend->reads_narrow && gc_rows_widen(rows, err) != GC_OK)
		return err->status;
	status = gc_frame_init(&frame, rows, err);
	if (status != GC_OK)
		return status;
	/*
	 * the tolerance's variance; seeding weighs each row by its copies
	 * (row_copies.c), which given centroids draw none of
	 */
	if ((status = gc_frame_set_tolerance(&frame, rows, k, params->tol, params->interrupted,
										 err)) != GC_OK ||
		(gc_seed_method(params, rows->n, d) != GC_INIT_GIVEN &&
		 (status = gc_rows_number_copies(rows, params->interrupted, err)) != GC_OK))
	{
		gc_frame_release(&frame);
		return status;
	}
	if (!frame_fits_float32(&frame))
		run_params.precision = GC_PRECISION_FLOAT64;
	result->precision = run_params.precision;

	gc_report_progress(params, GC_PHASE_UPLOADING, 0, NAN, NAN);
	t0 = gc_now_ms();
	status = backend->open(rows, &frame, params, &session, err);
	result->timings.transfer_ms = gc_now_ms() - t0;
	result->timings.seeding_ms = result->timings.iterations_ms = 0.0;
	result->timings.labeling_ms = result->timings.update_ms = 0.0;
	result->timings.steps_ms = result->timings.scoring_ms = 0.0;
	result->timings.check_ms = 0.0;
	memset(&result->timings.seeding, 0, sizeof(result->timings.seeding));
	result->inertia = INFINITY;
	result->init = gc_init_name(params, rows->n, d);
	memset(&result->check, 0, sizeof(result->check));

	work = malloc(sizeof(double) * k * d);
	work_sizes = malloc(sizeof(int64_t) * k);
	if (status == GC_OK && (work == NULL || work_sizes == NULL))
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for centroids");

	for (int r = 0; status == GC_OK && r < params->n_init; r++)
	{
		LloydOutcome outcome;
		double		inertia;

		gc_report_progress(params, GC_PHASE_SEEDING, 0, NAN,
						   isfinite(result->inertia) ? result->inertia : NAN);
		t0 = gc_now_ms();
		status = initial_centroids(backend, session, rows, params,
								   params->seed + r, work, &result->timings.seeding, err);
		result->timings.seeding_ms += gc_now_ms() - t0;
		if (status != GC_OK)
			break;

		if (r == 0)
		{
			t0 = gc_now_ms();
			status = gc_precision_settle(backend, session, rows, params, work,
										 &result->check, err);
			result->timings.check_ms = gc_now_ms() - t0;
			if (status != GC_OK)
				break;
		}

		t0 = gc_now_ms();
		status = run_lloyd(backend, session, rows, &frame, params, work, &outcome, err);
		t1 = gc_now_ms();
		/*
		 * The last restart's scoring also gives the labels and distances
		 * asked for: where it is the best (always, with one restart), the
		 * final pass below would only repeat it, which on the GPU costs as
		 * much as two or three iterations
		 */
		last = r == params->n_init - 1 && (result->labels || result->distances);
		if (status == GC_OK)
			status = backend->score(session, work, last ? result->labels : NULL,
									last ? result->distances : NULL, work_sizes,
									&inertia, err);
		t2 = gc_now_ms();
		result->timings.scoring_ms += t2 - t1;
		result->timings.iterations_ms += t2 - t0;
		result->timings.labeling_ms += outcome.labeling_ms;
		result->timings.update_ms += outcome.update_ms;
		result->timings.steps_ms += outcome.steps_ms;
		if (status == GC_OK && inertia < result->inertia)
		{
			scored_best = last;
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
		if (!scored_best)
		{
			double		spent;

			t0 = gc_now_ms();
			status = backend->score(session, result->centroids, result->labels,
									result->distances, result->sizes,
									&result->inertia, err);
			spent = gc_now_ms() - t0;
			result->timings.scoring_ms += spent;
			result->timings.iterations_ms += spent;
		}
	}

	result->precision = status == GC_OK && backend->precision ?
		backend->precision(session) : GC_PRECISION_FLOAT64;
	if (session)
		backend->close(session);
	free(work);
	free(work_sizes);
	gc_frame_release(&frame);
	gc_rows_forget_copies(rows);
	return status;
}

/*
 * The fit params ask for: one level or two (kmeans_levels.c), then the
 * clusters balanced to the bound asked for (kmeans_balance.c), which
 * needs every row's label (kept here where the caller wants none), and
 * the spread of the final sizes
 */
GcStatus
gc_kmeans_fit(const GcKmeansBackend *backend, GcRows *rows,
			  const GcKmeansParams *params, GcKmeansResult *result,
			  GcError *err)
{
	int64_t		cap = gc_kmeans_balance_cap(params, rows->n);
	GcKmeansResult run = *result;
	int32_t    *own_labels = NULL;
	GcStatus	status = GC_OK;

	memset(&run.timings, 0, sizeof(run.timings));
	run.coarse_k = 0;
	run.max_cluster_size = cap;
	run.balance_rounds = 0;
	run.balance_moves = 0;
	if (cap > 0 && (double) cap * params->k < (double) rows->n)
		status = gc_fail(err, GC_ERR_RANGE,
						 "%d clusters of at most %lld rows cannot hold %lld rows",
						 params->k, (long long) cap, (long long) rows->n);
	else if (params->levels >= 2 && params->init == GC_INIT_GIVEN)
		status = gc_fail(err, GC_ERR_RANGE, "a two-level fit seeds itself: no initial centroids");
	else if (cap > 0 && run.labels == NULL &&
			 (own_labels = run.labels = malloc(sizeof(int32_t) * rows->n)) == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for labels");
	if (status == GC_OK)
		status = params->levels >= 2 ?
			gc_kmeans_fit_two_level(backend, rows, params, &run, err) :
			gc_kmeans_fit_flat(backend, rows, params, &run, err);
	if (status == GC_OK && cap > 0)
	{
		double		t0 = gc_now_ms();

		status = gc_kmeans_balance(rows, params, cap, &run, err);
		run.timings.balance_ms = gc_now_ms() - t0;
	}
	run.labels = result->labels;
	*result = run;
	if (status == GC_OK)
		gc_kmeans_size_spread(result, params->k);
	free(own_labels);
	return status;
}
