/*-------------------------------------------------------------------------
 *
 * exact_lanes.c
 *	  Exact squared distances from a row to eight points at once: the
 *	  points transposed into panels (eight lanes a coordinate), each lane
 *	  summed in dimension order with every operation rounded on its own,
 *	  so that lane l is gc_sqdist_exact(x, point l) to the bit (the build
 *	  contracts no FMAs).  One chain of adds then carries eight distances
 *	  where gc_sqdist_exact's carries one.  Cloned for the vector units.
 *	  Seeding's potentials and balancing's moves read them.
 *
 * IDENTIFICATION
 *	  engine/exact_lanes.c
 *
 *-------------------------------------------------------------------------
 */
#include "exact_lanes.h"
#include "cpu_vectors.h"
#include "gc_base.h"

#include <stdlib.h>
#include <string.h>

double *
gc_lane_panels(const double *points, int k, int d)
{
	int			npanels = (k + GC_LANES - 1) / GC_LANES;
	double	   *panels = calloc((size_t) npanels * d * GC_LANES, sizeof(double));

	if (panels == NULL)
		return NULL;
	for (int c = 0; c < k; c++)
		gc_lane_panel_put(panels, c, d, points + (size_t) c * d);
	return panels;
}

void
gc_lane_panel_put(double *panels, int c, int d, const double *point)
{
	for (int j = 0; j < d; j++)
		panels[((size_t) (c / GC_LANES) * d + j) * GC_LANES + c % GC_LANES] = point[j];
}

GC_SIMD_CLONES
void
gc_sqdist_lanes(const double *restrict x, const double *restrict panel, int d,
				double *restrict out)
{
	v8d			s = {0};

	for (int j = 0; j < d; j++)
	{
		v8d			c;
		v8d			t;

		memcpy(&c, panel + (size_t) j * GC_LANES, sizeof(v8d));
		t = x[j] - c;
		s = s + t * t;
	}
	memcpy(out, &s, sizeof(v8d));
}

/* Four chains of adds in flight where one row's would wait on their latency */
GC_SIMD_CLONES
void
gc_sqdist_lanes4(const double *restrict x, const double *restrict panel, int d,
				 double *restrict out)
{
	v8d			s0 = {0},
				s1 = {0},
				s2 = {0},
				s3 = {0};

	for (int j = 0; j < d; j++)
	{
		v8d			c;
		v8d			t0,
					t1,
					t2,
					t3;

		memcpy(&c, panel + (size_t) j * GC_LANES, sizeof(v8d));
		t0 = x[j] - c;
		t1 = x[d + j] - c;
		t2 = x[2 * (size_t) d + j] - c;
		t3 = x[3 * (size_t) d + j] - c;
		s0 = s0 + t0 * t0;
		s1 = s1 + t1 * t1;
		s2 = s2 + t2 * t2;
		s3 = s3 + t3 * t3;
	}
	memcpy(out, &s0, sizeof(v8d));
	memcpy(out + 8, &s1, sizeof(v8d));
	memcpy(out + 16, &s2, sizeof(v8d));
	memcpy(out + 24, &s3, sizeof(v8d));
}
