/*-------------------------------------------------------------------------
 *
 * precision_check.c
 *	  The guard on reduced precision, for every backend: before a fit
 *	  iterates, a fixed sample of rows (GC_PRECISION_SAMPLE_ROWS, drawn by
 *	  seed as gc_select_random_rows draws, so the same rows whatever their
 *	  order) is labelled by the backend's Lloyd labeling and exactly, and
 *	  the driver keeps the reduced precision only where the sample's
 *	  inertia under its labels stays within GC_PRECISION_MAX_EXCESS of the
 *	  exact labels' inertia.  Otherwise the backend falls back, to float32
 *	  (precision auto: fp16, then tf32, then float32), and the result says
 *	  which precision ran and what the sample measured.
 *
 *	  Heavy-tailed columns are what defeat the product form ||c||^2 - 2 x.c
 *	  in a 10- or 8-bit mantissa: on KDD Cup 99 (byte counts to 7e8 beside
 *	  flags of 0 and 1) bf16 labels cost 290 times the inertia of exact
 *	  ones.  One labeling pass and m exact distances per precision tried is
 *	  the price, paid once per fit.
 *
 * IDENTIFICATION
 *	  engine/precision_check.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"
#include "precision_check.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/*
 * The sample's disagreement and inertia excess: labels against exact
 * labels, for m rows x (each of d values) and centroids in the caller's
 * coordinates (k of them); a label out of range counts as infinitely far
 */
void
gc_precision_measure(const double *x, int64_t m, int d, int k,
					 const double *centroids, const int32_t *labels,
					 const int32_t *exact, GcPrecisionCheck *check)
{
	int64_t		differ = 0;
	double		reduced = 0.0,
				best = 0.0;
	bool		invalid = false;

	for (int64_t i = 0; i < m; i++)
	{
		const double *row = x + (size_t) i * d;

		if (labels[i] < 0 || labels[i] >= k)
			invalid = true;
		else
			reduced += gc_sqdist_exact(row, centroids + (size_t) labels[i] * d, d);
		best += gc_sqdist_exact(row, centroids + (size_t) exact[i] * d, d);
		differ += labels[i] != exact[i];
	}
	check->sampled = (int) m;
	check->disagreement = m > 0 ? (double) differ / (double) m : 0.0;
	if (invalid || (best == 0.0 && reduced > 0.0) || reduced / best - 1.0 > DBL_MAX)
		check->inertia_excess = DBL_MAX;
	else
		check->inertia_excess = best > 0.0 ? fmax(reduced / best - 1.0, 0.0) : 0.0;
}

/* Whether the sample's labels cost at most GC_PRECISION_MAX_EXCESS of its inertia */
bool
gc_precision_acceptable(const GcPrecisionCheck *check)
{
	return check->inertia_excess <= GC_PRECISION_MAX_EXCESS;
}

/*
 * The next precision after failed: float32, or for auto the next of its
 * ladder (fp16, tf32, float32: fastest first)
 */
GcPrecision
gc_precision_next(GcPrecision requested, GcPrecision failed)
{
	if (requested == GC_PRECISION_AUTO && failed == GC_PRECISION_FP16)
		return GC_PRECISION_TF32;
	return GC_PRECISION_FLOAT32;
}

static int
compare_rows(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* The sample: row numbers in increasing order, and the rows' values */
static GcStatus
draw_sample(const GcRows *rows, int m, int64_t *sample, double *x, GcError *err)
{
	GcStatus	status = gc_select_random_rows(rows, m, GC_PRECISION_SAMPLE_SEED, sample, NULL,
												   err);

	if (status != GC_OK)
		return status;
	qsort(sample, m, sizeof(int64_t), compare_rows);
	for (int i = 0; i < m; i++)
		gc_rows_copy_row(rows, sample[i], x + (size_t) i * rows->d);
	return GC_OK;
}

/*
 * Check the backend's reduced precision on the sample against centroids
 * (the first restart's), falling back until one passes or the labels are
 * exact; check says what was measured last and how it ended
 */
GcStatus
gc_precision_settle(const GcKmeansBackend *backend, void *session, const GcRows *rows,
					const GcKmeansParams *params, const double *centroids,
					GcPrecisionCheck *check, GcError *err)
{
	GcPrecision precision;
	int			m = rows->n < GC_PRECISION_SAMPLE_ROWS ? (int) rows->n : GC_PRECISION_SAMPLE_ROWS;
	int64_t    *sample;
	double	   *x;
	int32_t    *labels;
	int32_t    *exact;
	GcStatus	status = GC_OK;

	memset(check, 0, sizeof(*check));
	/* a backend that labels no sample (a sharded one) is not checked */
	if (backend->precision == NULL || backend->label_sample == NULL ||
		!gc_precision_is_reduced(precision = backend->precision(session)))
		return GC_OK;

	sample = malloc(sizeof(int64_t) * m);
	x = malloc(sizeof(double) * m * rows->d);
	labels = malloc(sizeof(int32_t) * m);
	exact = malloc(sizeof(int32_t) * m);
	if (sample == NULL || x == NULL || labels == NULL || exact == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the precision check");
	if (status == GC_OK)
		status = draw_sample(rows, m, sample, x, err);

	while (status == GC_OK && gc_precision_is_reduced(precision))
	{
		status = backend->label_sample(session, centroids, sample, m, labels, exact, err);
		if (status != GC_OK)
			break;
		gc_precision_measure(x, m, rows->d, params->k, centroids, labels, exact, check);
		check->checked = precision;
		if (gc_precision_acceptable(check))
		{
			check->outcome = GC_CHECK_PASSED;
			break;
		}
		precision = gc_precision_next(params->precision, precision);
		check->outcome = GC_CHECK_FELL_BACK;
		status = backend->set_precision(session, precision, err);
		if (status == GC_OK && params->interrupted && params->interrupted())
			status = gc_fail(err, GC_INTERRUPTED, "interrupted in the precision check");
	}
	free(sample);
	free(x);
	free(labels);
	free(exact);
	return status;
}
