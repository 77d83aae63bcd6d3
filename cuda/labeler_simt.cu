/*-------------------------------------------------------------------------
 *
 * labeler_simt.cu
 *	  The SIMT labeler (kernels register and tiled): every point against
 *	  every centroid on the CUDA cores, in float32 on the centred data,
 *	  the point in registers up to d = GC_REGISTER_MAX_DIM and centroid
 *	  tiles in shared memory above (simt_kernels.cu).  It reads the session's
 *	  x32 and c32 only, so it owns no buffers; pruned labeling rides on it.
 *
 * IDENTIFICATION
 *	  cuda/labeler_simt.cu
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_session.cuh"

static GcStatus
simt_label(CudaSession *s, void *state, int64_t first, int64_t count,
		   unsigned long long *changed, IterationStatus *status, GcError *err)
{
	return launch_assign_points(s->x32 + first * s->d, s->c32, count, s->d, s->k,
								s->labels + first, changed, s->stream, err);
}

const Labeler gc_labeler_simt = {
	NULL,						/* open: nothing of its own */
	NULL,						/* refresh: reads c32 */
	simt_label,
	NULL,
	NULL,
	NULL,
};
