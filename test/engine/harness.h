/*-------------------------------------------------------------------------
 *
 * harness.h
 *	  The engine tests' harness (harness.c): checks that count passes and
 *	  failures, a seeded generator, data, row stores and fits.
 *
 * IDENTIFICATION
 *	  test/engine/harness.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_TEST_HARNESS_H
#define GC_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "gc_engine.h"
#include "gc_math.h"

/* Checks: each counts as passed or failed, a failure printed with config */
extern int	passed,
			failed;
extern void check(int ok, const char *what, const char *config);

/*
 * Case selection, for compute-sanitizer (a process per case, each under its
 * own timeout): select_cases("N") makes case_selected() true for the Nth
 * selectable case alone, select_cases("count") for none; select_cases(NULL)
 * for all.  Each case starts the generator from its own seed.  cases_end()
 * says how many cases there were, and for "count" prints it; it is false
 * where N named no case.
 */
extern void select_cases(const char *arg);
extern bool case_selected(void);
extern bool cases_end(void);
/*
 * A test program's main over its cases, in order: argv[1] selects them
 * as select_cases does; ends with "N passed, N failed" and returns the
 * exit status (2 where argv[1] named no case)
 */
extern int	run_cases(int argc, char **argv, void (*const cases[]) (void), int ncases);

/* A seeded generator: uniform in [0, 1) and standard normal */
extern uint64_t rng_state;
extern double uniform(void);
extern double normal(void);

extern void *plain_alloc(size_t bytes);

/*
 * For a benchmark's "gpu": device 0 made current, and the GPU backends
 * (one session, and sharded where sharded is not NULL) with page-locked
 * row memory; false, the reason
 * printed, where no GPU is usable or the build has no CUDA
 */
extern bool bench_gpu_backends(const GcKmeansBackend **plain, const GcKmeansBackend **sharded,
							   GcHostAlloc *alloc, GcHostFree *free_fn);

/* n points around k centres in [-100, 100]^d, or uniform when sigma < 0 */
extern double *make_data(int64_t n, int d, int k, double sigma, double *centres, int *truth);
/* patterns of norm 8 plus noise, every fifth row a copy of the one before */
extern double *make_near_duplicates(int64_t n, int d, int patterns, double noise);
/* Gaussian clusters of variance var around k uniform centres in [0,1]^d */
extern double *make_gaussian(int64_t n, int d, int k, double var);
/* n rows of d little-endian doubles; exits when the file is short */
extern double *load_file(const char *path, int64_t n, int d);
/* rows from x, in the order given (NULL: as they are) */
extern void load_rows(GcRows *rows, const double *x, int64_t n, int d, const int64_t *order,
					  GcHostAlloc alloc, GcHostFree free_fn);
/* rows from x rounded to float32, held as such (a narrow store) */
extern void load_narrow_rows(GcRows *rows, const double *x, int64_t n, int d,
							 GcHostAlloc alloc, GcHostFree free_fn);

typedef struct Fit
{
	double	   *centroids;
	int64_t    *sizes;
	int32_t    *labels;
	GcKmeansResult result;
	GcStatus	status;
} Fit;

/* A fit's arrays for k centroids over rows, not yet fitted (free_fit frees them) */
extern Fit	new_fit(int k, const GcRows *rows);
/*
 * One restart's parameters: k clusters from init, at most max_iter
 * iterations, tol; every other field zero (the defaults: algorithm auto,
 * float32, seed 0), for the caller to set
 */
extern GcKmeansParams one_restart_params(int k, GcInit init, int max_iter, double tol);
/* A fit of rows under params (k of them), its arrays new (free_fit frees them) */
extern Fit	fit_params(const GcKmeansBackend *backend, GcRows *rows,
					   const GcKmeansParams *params);
/* A k-means++ fit, one restart, with a forced kernel */
extern Fit	fit_kernel(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed,
					   GcAlgorithm algorithm, GcPrecision precision, int max_iter, double tol,
					   GcKernel kernel, bool tensor_streamed);
/* The same with the kernel chosen for the fit */
extern Fit	fit_with(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed,
					 GcAlgorithm algorithm, GcPrecision precision, int max_iter, double tol);
/* Lloyd, float32, 300 iterations, tol 1e-4 */
extern Fit	fit(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed);
/* The fit b must equal the reference a: labels, centroids to the bit, sizes */
extern void check_same_fit(const Fit *a, const Fit *b, int64_t n, int k, int d,
						   const char *what, const char *config);
extern void free_fit(Fit *f);
/* Every true cluster maps to one found cluster, and the map is 1-1 */
extern int	recovers(const int *truth, const int32_t *labels, int64_t n, int k);

#endif							/* GC_TEST_HARNESS_H */
