/*-------------------------------------------------------------------------
 *
 * engine_suites.h
 *	  The suites of engine_test (suite_*.c), each case a function that
 *	  counts its checks in the harness (harness.h); engine_test.c's main
 *	  runs them in order.
 *
 * IDENTIFICATION
 *	  test/engine/engine_suites.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ENGINE_SUITES_H
#define GC_ENGINE_SUITES_H

#include "harness.h"

/* suite_fits.c: k-means fits, CPU against GPU */
extern void run_case(int64_t n, int d, int k);
extern void run_weighted_case(int64_t n, int d, int k);
extern void run_partial_case(int64_t n, int d, int k);
extern void run_progress_case(const GcKmeansBackend *backend, const char *config);
extern void run_tolerance_case(void);
extern void run_restart_labels_case(const GcKmeansBackend *backend, const char *config);
extern void run_wide_range_case(double scale);

/* suite_labelers.c: the GPU's labelers (float64 spans: a no-op without CUDA) */
extern void run_float64_spans_case(void);
#ifdef GC_WITH_CUDA
extern void run_tensor_case(int64_t n, int d, int k, double sigma);
extern void run_tensor_chunks_case(void);
extern void run_tensor_near_duplicates_case(int64_t n, int d, int k, int patterns,
											int spread_bits);
extern void run_half_kernels_case(GcPrecision precision, int64_t n, int d, int k);
extern void run_bounded_cases(void);
#endif

/* suite_stream.c: stream summaries and their format */
extern void run_stream_case(int64_t n, int d, int k);
extern void run_stream_format_cases(void);

/* suite_hybrid.c: the hybrid's rules */
extern void run_hybrid_rule_cases(void);

/* suite_rows.c: the row store */
extern void run_allocator_switch_case(void);
extern void run_placement_case(void);
extern void run_narrow_case(void);
extern void run_quantize_case(void);
extern void run_row_hash_case(int d);
extern void run_deferred_hash_case(int64_t n, int d, bool narrow);
extern void run_permute_case(int64_t n, int d);
#ifdef GC_WITH_CUDA
extern void run_pin_ahead_case(void);
extern void run_staged_upload_case(bool float_values);
#endif

#endif							/* GC_ENGINE_SUITES_H */
