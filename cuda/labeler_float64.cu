/*-------------------------------------------------------------------------
 *
 * labeler_float64.cu
 *	  The float64 labeler (precision float64): every point against every
 *	  centroid in double precision on the data as given (labeling.cu).
 *	  It reads the session's x64 and c64 only, so it owns no buffers.
 *
 * IDENTIFICATION
 *	  cuda/labeler_float64.cu
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_session.cuh"

static GcStatus
float64_label(CudaSession *s, void *state, int64_t first, int64_t count,
			  unsigned long long *changed, IterationStatus *status, GcError *err)
{
	return launch_assign_points_f64(s->x64 + first * s->d, s->c64, count, s->d, s->k,
									s->labels + first, changed, s->stream, err);
}

const Labeler gc_labeler_float64 = {
	NULL,
	NULL,
	float64_label,
	NULL,
	NULL,
	NULL,
};
