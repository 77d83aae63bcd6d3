/*-------------------------------------------------------------------------
 *
 * host_upload.cuh
 *	  The upload of a row store to the device (host_upload.cu), whether its
 *	  chunks are page-locked or not.
 *
 * IDENTIFICATION
 *	  cuda/host_upload.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_HOST_UPLOAD_CUH
#define GC_HOST_UPLOAD_CUH

#include <cuda_runtime.h>

#include "gc_engine.h"

/*
 * Copy rows' values, hashes and (where weights is not NULL) weights into
 * the device arrays given, each row at its row number: page-locked chunks
 * asynchronously on stream, pageable ones through page-locked staging
 * buffers that helper threads fill.  When it returns, the pageable copies
 * are done and the others are queued on stream ahead of what follows there.
 * narrow (NULL: none) is device room for n * d floats, overwritten: a
 * narrow store's rows (rows->narrow, which needs it) are copied into it as
 * they are, and where every value of a store of doubles is a float32 value
 * (rows->float_exact) staged values travel as float32 into it; both are
 * widened into values on stream.
 */
extern GcStatus gc_upload_rows(const GcRows *rows, double *values, uint64_t *hashes,
							   double *weights, float *narrow, cudaStream_t stream,
							   GcError *err);

#endif							/* GC_HOST_UPLOAD_CUH */
