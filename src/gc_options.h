/*-------------------------------------------------------------------------
 *
 * gc_options.h
 *	  The options jsonb of k-means fits and of kmeans_stream_state
 *	  (options.c), the option helpers the other fits use, and the
 *	  decision on groups smaller than k or p (small_groups.c).
 *
 * IDENTIFICATION
 *	  src/gc_options.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_OPTIONS_H
#define GC_OPTIONS_H

#include "gc_pg.h"

/* small_groups.c: a group of fewer rows than the clusters asked for */
typedef enum GcSmallGroups
{
	GC_SMALL_GROUPS_ERROR = 0,	/* an error naming the option (the default) */
	GC_SMALL_GROUPS_SHRINK,		/* fit as many clusters as the group has rows */
	GC_SMALL_GROUPS_NULL		/* the group's model (labels) is NULL */
} GcSmallGroups;

extern GcSmallGroups gc_small_groups_option(const char *key, JsonbValue *v);
extern int	gc_group_clusters(const char *what, int asked, int64 count,
							  const char *noun, GcSmallGroups mode);

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
	GcSmallGroups small_groups; /* the option small_groups */
	bool		refine_iter_given;	/* the options set refine_iter */
} GcKmeansOptions;

extern void gc_parse_kmeans_options(Jsonb *options, int k,
									GcKmeansOptions *opts);
extern void gc_check_init_shape(GcKmeansOptions *opts, int d);
extern void gc_option_error(const char *key, const char *expected) GC_NORETURN;
extern int64 gc_option_integer(const char *key, JsonbValue *v, int64 min, int64 max,
								const char *expected);
extern int	gc_k_value(Datum k, Oid type);
extern int	gc_k_argument(FunctionCallInfo fcinfo, int argno);
typedef bool (*GcOptionFn) (const char *name, JsonbValue *value, void *arg);
extern void gc_for_each_option(Jsonb *options, const char *valid_hint,
							   GcOptionFn fn, void *arg);
extern const char *gc_precision_name(GcPrecision precision);
extern const char *gc_metric_name(GcMetric metric);

/* options.c: the options of kmeans_stream_state */
extern bool gc_parse_stream_options(Jsonb *options, int k, GcStreamHeader *shape);

#endif							/* GC_OPTIONS_H */
