/*-------------------------------------------------------------------------
 *
 * precision_check.h
 *	  The guard on reduced precision (precision_check.c): the k-means
 *	  driver's check of a backend's labels on a sample, its measure, its
 *	  rule and the fall-back ladder.  Internal to the engine (and its
 *	  tests).
 *
 * IDENTIFICATION
 *	  engine/precision_check.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PRECISION_CHECK_H
#define PRECISION_CHECK_H

#include "gc_engine.h"

/* Measure m sampled rows' labels against their exact labels */
extern void gc_precision_measure(const double *x, int64_t m, int d, int k,
								 const double *centroids, const int32_t *labels,
								 const int32_t *exact, GcPrecisionCheck *check);
/* Whether the measured labels are good enough to keep */
extern bool gc_precision_acceptable(const GcPrecisionCheck *check);
/* The precision to try after failed (requested: what the options asked) */
extern GcPrecision gc_precision_next(GcPrecision requested, GcPrecision failed);
/* Check the backend's precision on the sample, falling back while it fails */
extern GcStatus gc_precision_settle(const GcKmeansBackend *backend, void *session,
									const GcRows *rows, const GcKmeansParams *params,
									const double *centroids, GcPrecisionCheck *check,
									GcError *err);

#endif							/* PRECISION_CHECK_H */
