/*-------------------------------------------------------------------------
 *
 * kmeans_stages.h
 *	  The stages gc_kmeans_fit (kmeans_fit.c) chains for large k: the
 *	  one-level fit, the two-level fit built of one-level fits
 *	  (kmeans_levels.c) and the balancing of the final clusters
 *	  (kmeans_balance.c).  Private to the engine.
 *
 * IDENTIFICATION
 *	  engine/kmeans_stages.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KMEANS_STAGES_H
#define GC_KMEANS_STAGES_H

#include "gc_engine.h"

/* kmeans_fit.c: n_init restarts of Lloyd's over every row, the best kept */
extern GcStatus gc_kmeans_fit_flat(const GcKmeansBackend *backend, GcRows *rows,
								   const GcKmeansParams *params,
								   GcKmeansResult *result, GcError *err);

/* kmeans_levels.c: coarse fit, a fine fit per coarse cluster, refinement */
extern GcStatus gc_kmeans_fit_two_level(const GcKmeansBackend *backend, GcRows *rows,
										const GcKmeansParams *params,
										GcKmeansResult *result, GcError *err);
/* the coarse clusters of a two-level fit of k: about sqrt(k) */
extern int	gc_kmeans_coarse_k(int k);
/*
 * Each of kc coarse clusters' share of k fine ones, by size: at least
 * one for a cluster of rows, never more than its rows, summing to k
 */
extern void gc_kmeans_fine_shares(const int64_t *sizes, int kc, int k, int *shares);

/* kmeans_balance.c */
#define GC_BALANCE_MAX_ROUNDS 4
/*
 * Move rows out of clusters holding more than cap until none does, and
 * update the centroids, sizes, labels (required), distances (optional)
 * and inertia of result to match
 */
extern GcStatus gc_kmeans_balance(const GcRows *rows, const GcKmeansParams *params,
								  int64_t cap, GcKmeansResult *result, GcError *err);
/* result's size_min, size_max and size_cv from its k sizes */
extern void gc_kmeans_size_spread(GcKmeansResult *result, int k);

#endif							/* GC_KMEANS_STAGES_H */
