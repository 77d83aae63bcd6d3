/*-------------------------------------------------------------------------
 *
 * kmeans_kernels.cuh
 *	  Launchers of the k-means kernels, each taking an explicit stream and
 *	  returning a status.  Kernels live in labeling.cu (nearest centroid),
 *	  update.cu (centroid update, scoring, layout) and seeding.cu
 *	  (k-means++).
 *
 * IDENTIFICATION
 *	  cuda/kmeans_kernels.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KMEANS_KERNELS_CUH
#define GC_KMEANS_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "gc_engine.h"

/* labeling.cu: largest dimension labelled with the point in registers */
#define GC_REGISTER_MAX_DIM 32

/*
 * Nearest centroid of each point (float32, centred data), lowest index on
 * ties; counts the labels that changed into *changed when not NULL
 */
GcStatus	launch_assign_points(const float *x32, const float *c32,
								 const float *cnorm, int64_t n, int d, int k,
								 int32_t *labels, unsigned long long *changed,
								 cudaStream_t stream, GcError *err);

/* update.cu */
GcStatus	launch_centre_rows(const double *x64, const double *offset,
							   int64_t n, int d, float *x32,
							   cudaStream_t stream, GcError *err);
GcStatus	launch_accumulate_clusters(const double *x64, const int32_t *labels,
									   const double *offset, const double *scale,
									   int64_t n, int d, int k,
									   unsigned long long *sums,
									   unsigned long long *counts,
									   cudaStream_t stream, GcError *err);
GcStatus	launch_update_centroids(const unsigned long long *sums,
									const unsigned long long *counts,
									const double *offset, const double *scale,
									int d, int k, double *c64, float *c32,
									float *cnorm,
									unsigned long long *max_shift2,
									cudaStream_t stream, GcError *err);
GcStatus	launch_score_points(const double *x64, const double *c64,
								const int32_t *labels, int64_t n, int d,
								double *distances, double *partials,
								int npartials, unsigned long long *sizes,
								cudaStream_t stream, GcError *err);

/* seeding.cu: step t of the k-means++ race, into race[t] */
GcStatus	launch_kmeanspp_step(const double *x64, const uint64_t *hashes,
								 int64_t n, int d, uint64_t seed, int t,
								 double *mind2, unsigned long long *race,
								 cudaStream_t stream, GcError *err);

#endif							/* GC_KMEANS_KERNELS_CUH */
