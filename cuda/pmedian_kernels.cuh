/*-------------------------------------------------------------------------
 *
 * pmedian_kernels.cuh
 *	  Launchers of the p-median kernels, each taking an explicit stream and
 *	  returning a status.  Kernels live in pmedian_allocate.cu (gathering
 *	  rows, penalised allocation, the D-sampling race), pmedian_locate.cu
 *	  (within-cluster sums of dissimilarities) and pmedian_swap.cu
 *	  (nearest and second-nearest medoids, FasterPAM swap gains).  All
 *	  arithmetic goes through pmedian_math.h, as on the CPU.
 *
 * IDENTIFICATION
 *	  cuda/pmedian_kernels.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PMEDIAN_KERNELS_CUH
#define GC_PMEDIAN_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "gc_engine.h"

/* pmedian_allocate.cu */
GcStatus	launch_gather_rows(const double *x, const int32_t *rows, int32_t count,
							   int d, double *out, cudaStream_t stream,
							   GcError *err);
GcStatus	launch_allocate_entities(const double *x, int d, int metric,
									 const int32_t *ent, const int32_t *group,
									 int32_t nent, const int32_t *cen,
									 const int32_t *cen_first, const double *cx,
									 const double *penalty, const double *demand,
									 int32_t *alloc, double *dist,
									 cudaStream_t stream, GcError *err);
GcStatus	launch_seed_step(const double *x, const uint64_t *hashes, int d,
							 int metric, const int32_t *ent, int32_t nent,
							 int32_t centre, uint64_t seed, int step,
							 double *mind, unsigned long long *winner,
							 cudaStream_t stream, GcError *err);

/*
 * pmedian_locate.cu: xs holds the members' rows, gathered; members t0 to
 * nent - 1 add their distances to the members at positions j0 to j1 - 1 of
 * their cluster to sums (which the span starting at 0 sets)
 */
GcStatus	launch_cluster_sums(const double *xs, int d, int metric,
								const int32_t *first, int32_t ncen,
								int32_t t0, int32_t nent, int32_t j0,
								int32_t j1, double *sums,
								cudaStream_t stream, GcError *err);

/* pmedian_swap.cu: mx holds the medoids' rows, gathered */
GcStatus	launch_nearest2(const double *x, int64_t n, int d, int metric,
							const double *mx, int p, double far,
							int32_t *nearest, double *dn, double *ds,
							cudaStream_t stream, GcError *err);
GcStatus	launch_swap_gains(const double *x, int64_t n, int d, int metric,
							  const int32_t *nearest, const double *dn,
							  const double *ds, int p, const int64_t *removal,
							  const int32_t *cand, int ncand, double scale,
							  int32_t *best_medoid, long long *best_gain,
							  cudaStream_t stream, GcError *err);

#endif							/* GC_PMEDIAN_KERNELS_CUH */
