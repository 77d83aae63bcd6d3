/*-------------------------------------------------------------------------
 *
 * exact_lanes.h
 *	  Exact squared distances from a row to eight points at once
 *	  (exact_lanes.c), each lane gc_sqdist_exact's answer to the bit.
 *
 * IDENTIFICATION
 *	  engine/exact_lanes.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_EXACT_LANES_H
#define GC_EXACT_LANES_H

#define GC_LANES 8				/* points of a panel */

/*
 * Points as panels of GC_LANES: point c's coordinate j at
 * panels[((c / 8) d + j) 8 + c % 8], the lanes past the last point zero.
 * From k points of d values one after the other; NULL when out of memory.
 */
extern double *gc_lane_panels(const double *points, int k, int d);

/* Point c's d values into its lanes of panels (as gc_lane_panels lays them out) */
extern void gc_lane_panel_put(double *panels, int c, int d, const double *point);

/* Squared distances of x (d values) to the 8 points of a panel, into out[8] */
extern void gc_sqdist_lanes(const double *restrict x, const double *restrict panel, int d,
							double *restrict out);

/* gc_sqdist_lanes for 4 rows (d apart) at once, into out (4 x 8) */
extern void gc_sqdist_lanes4(const double *restrict x, const double *restrict panel, int d,
							 double *restrict out);

#endif							/* GC_EXACT_LANES_H */
