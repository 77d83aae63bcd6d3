/*-------------------------------------------------------------------------
 *
 * gc_options.h
 *	  The options jsonb of k-means fits and of kmeans_stream_state
 *	  (options.c), and the option helpers the other fits use.
 *
 * IDENTIFICATION
 *	  src/gc_options.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_OPTIONS_H
#define GC_OPTIONS_H

#include "gc_pg.h"

/* options.c: the options jsonb */
typedef struct GcKmeansOptions
{
	GcKmeansParams params;
	double	   *init_values;	/* init given as centroids: rows * cols */
	int			init_rows;
	int			init_cols;
	bool		n_init_given;	/* the options set n_init */
	bool		init_candidates_given;	/* the options set init_candidates */
	bool		metric_given;	/* the options set metric */
} GcKmeansOptions;

extern void gc_parse_kmeans_options(Jsonb *options, int k,
									GcKmeansOptions *opts);
extern void gc_check_init_shape(GcKmeansOptions *opts, int d);
extern void gc_option_error(const char *key, const char *expected) GC_NORETURN;
extern int	gc_k_value(Datum k, Oid type);
extern int	gc_k_argument(FunctionCallInfo fcinfo, int argno);
typedef bool (*GcOptionFn) (const char *name, JsonbValue *value, void *arg);
extern void gc_for_each_option(Jsonb *options, const char *valid_hint,
							   GcOptionFn fn, void *arg);
extern const char *gc_precision_name(GcPrecision precision);
extern const char *gc_metric_name(GcMetric metric);

/* options.c: the options of kmeans_stream_state */
extern void gc_parse_stream_options(Jsonb *options, int k, GcStreamHeader *shape);

#endif							/* GC_OPTIONS_H */
