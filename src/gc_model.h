/*-------------------------------------------------------------------------
 *
 * gc_model.h
 *	  The kmeans_model type (model.c), the fields the model types share
 *	  (model_io.c), the detoast cache of model arguments, and a k-means fit
 *	  run into a model (kmeans_run.c).
 *
 * IDENTIFICATION
 *	  src/gc_model.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_MODEL_H
#define GC_MODEL_H

#include "gc_device.h"
#include "gc_input.h"
#include "gc_options.h"

/* model.c: the kmeans_model type */
#define GC_KERNEL_NAME_BYTES 32
#define GC_INIT_NAME_BYTES 32	/* gc_init_name's longest, "greedy kmeans++", and more */

/* What a model was fitted on, which decides the inertia it reports */
typedef enum GcFittedOn
{
	GC_FITTED_ON_ROWS = 0,		/* inertia: squared distances over the rows */
	GC_FITTED_ON_SUMMARY		/* summary_inertia: over a summary's points */
} GcFittedOn;

typedef struct KmeansModel
{
	int32		vl_len_;		/* varlena header */
	int16		version;
	int16		device;			/* GcDeviceKind */
	int32		k;
	int32		d;
	int32		iterations;
	int32		converged;
	int64		rows;
	int64		null_rows;
	double		inertia;		/* when fitted_on rows, else 0 */
	double		summary_inertia;	/* when fitted_on summary, else 0 */
	double		collect_ms;
	double		transfer_ms;
	double		seeding_ms;
	double		check_ms;		/* the check of reduced precision */
	double		iterations_ms;
	double		labeling_ms;
	double		update_ms;
	int16		precision;		/* GcPrecision that ran */
	int16		precision_requested;	/* GcPrecision the options asked for */
	int16		pruned;			/* pruned labeling ran */
	int16		fitted_on;		/* GcFittedOn */
	int16		metric;			/* GcMetric */
	int16		input;			/* type of the vectors fitted: gc_model_input_code */
	int32		partial_states; /* partial states combined (parallel plan) */
	int32		shared_memory_states;	/* of which handed over in shared memory */
	int16		device_reason;	/* GcDeviceReason */
	int16		init;			/* the seeding that ran: model.c's init_names */
	int16		path;			/* GcFitPath */
	double		skipped_fraction;	/* distance computations pruning skipped */
	int16		precision_check;	/* GcCheckOutcome of the reduced-precision check */
	int32		k_requested;	/* k asked for (k is the k fitted: fewer where
								 * small_groups shrank it); 0 read as k */
	double		sample_disagreement;	/* the check's sample: labels unlike exact ones */
	double		sample_inertia_excess;	/* the check's sample: inertia over exact, less 1 */
	int32		coarse_k;		/* coarse clusters of a two-level fit; 0: one level */
	int32		balance_rounds; /* passes of the balancing that moved rows */
	int64		balance_moves;	/* rows the balancing moved */
	int64		max_cluster_size;	/* the bound balanced to; 0: none */
	int64		size_min;		/* the spread of the sizes */
	int64		size_max;
	double		size_cv;		/* their coefficient of variation */
	double		coarse_ms;		/* two levels: the coarse fit */
	double		split_ms;		/* two levels: the fine fits */
	double		refine_ms;		/* two levels: the iterations over all */
	double		balance_ms;
	char		kernel[GC_KERNEL_NAME_BYTES];	/* labeling kernel, NUL-padded */
	int32		gpus_used;		/* GPUs the fit ran on; 0: the CPU */
	double		resident_fraction;	/* rows held on the GPUs through the fit */
	int64		streamed_bytes; /* moved between host and GPUs per iteration */
	/* int64 sizes[k], double centroids[k * d], int32 parents[k] (0 in one level) */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} KmeansModel;

/*
 * The binary form's version: 4 added k_requested; 5 the balance and
 * two-level fields (after the others) and the parents (after the
 * centroids, where coarse_k > 0); 6 gpus_used, resident_fraction and
 * streamed_bytes (after the others).  Receive reads back to 3.  A value
 * stored by version 5, whose arrays start where gpus_used is now, is
 * read through gc_model_current.
 */
#define KMEANS_MODEL_VERSION 6
#define KMEANS_MODEL_OLDEST_VERSION 3	/* binary forms read back to this one */
#define KmeansModelSizes(m) ((int64 *) (m)->data)
#define KmeansModelCentroids(m) ((double *) ((m)->data + sizeof(int64) * (m)->k))
#define KmeansModelParents(m) \
	((int32 *) ((m)->data + sizeof(int64) * (m)->k + sizeof(double) * (Size) (m)->k * (m)->d))
#define KmeansModelBytes(k, d) \
	(offsetof(KmeansModel, data) + sizeof(int64) * (Size) (k) + sizeof(double) * (Size) (k) * (d) + \
	 sizeof(int32) * (Size) (k))
#define DatumGetKmeansModel(x) gc_model_current((KmeansModel *) PG_DETOAST_DATUM(x))
#define PG_GETARG_KMEANS_MODEL(n) DatumGetKmeansModel(PG_GETARG_DATUM(n))

/* detoast_cache.c: argument argno detoasted, an on-disk value once per call site */
extern struct varlena *gc_detoast_arg_cached(FunctionCallInfo fcinfo, int argno);

extern KmeansModel *gc_model_alloc(int k, int d);
extern KmeansModel *gc_model_current(KmeansModel *m);
extern void gc_model_check(KmeansModel *m, int errcode_value);
extern double gc_metric_distance(GcMetric metric, double distance2);
extern int	gc_model_input_code(Oid format);
/* the code of a seeding named by gc_init_name, 0 when unknown */
extern int	gc_model_init_code(const char *name);

/*
 * model_io.c: the fields the model types share in shape, described once
 * by a table and read, written and validated by one set of functions for
 * the text form (JSON), the binary form and the fits' own output
 */
typedef enum GcFieldKind
{
	GC_FIELD_INT32,				/* int32 >= 0; JSON integer */
	GC_FIELD_INT64,				/* int64 >= 0; JSON integer, exact */
	GC_FIELD_BOOL,				/* int32 0 or 1; JSON boolean */
	GC_FIELD_ENUM,				/* int16 index of a name; JSON string */
	GC_FIELD_DOUBLE,			/* finite double >= 0 */
	GC_FIELD_SIGNED,			/* finite double of either sign */
	GC_FIELD_FRACTION,			/* double in [0, 1] */
	GC_FIELD_OPTIONAL,			/* finite double >= 0, or JSON null unless
								 * the flag field holds flag_value */
	GC_FIELD_NAME				/* char[GC_KERNEL_NAME_BYTES]: [a-z0-9_-] */
} GcFieldKind;

typedef enum GcFieldPlace
{
	GC_PLACE_TOP,				/* a key of the text form */
	GC_PLACE_TIMINGS,			/* a key of its "timings_ms" object */
	GC_PLACE_BINARY				/* binary form only (the text form implies it) */
} GcFieldPlace;

typedef struct GcModelField
{
	const char *name;
	GcFieldKind kind;
	GcFieldPlace place;
	size_t		offset;
	const char *(*name_of) (int);	/* GC_FIELD_ENUM: names 0 .. nnames-1 */
	int			nnames;
	int			flag;			/* GC_FIELD_OPTIONAL: index of its flag field */
	int			flag_value;
	int			since;			/* the binary version that added it; 0: all */
} GcModelField;

typedef struct GcModelType
{
	const char *name;			/* the SQL type */
	const GcModelField *fields;
	int			nfields;
} GcModelType;

extern void gc_model_append_float8(StringInfo buf, double x);
extern void gc_model_text_error(const char *type, const char *detail) GC_NORETURN;
extern void gc_model_value_error(const char *type, int errcode_value,
								 const char *detail) GC_NORETURN;
extern JsonbContainer *gc_model_object(const char *str, const char *type);
extern int	gc_model_shape_in(JsonbContainer *obj, const char *type,
							  const char *name);
extern void gc_model_fields_out(StringInfo buf, const GcModelType *type,
								const void *model);
extern void gc_model_fields_in(JsonbContainer *obj, const GcModelType *type,
							   void *model);
extern void gc_model_fields_send(StringInfo buf, const GcModelType *type,
								 const void *model);
extern void gc_model_fields_recv(StringInfo buf, const GcModelType *type,
								 void *model, int version);
extern void gc_model_fields_check(const GcModelType *type, void *model,
								  int errcode_value);

/* arrays of a model: text, binary, validation */
extern void gc_model_int64s_out(StringInfo buf, const char *name,
								const int64 *x, int n);
extern void gc_model_doubles_out(StringInfo buf, const char *name,
								 const double *x, int n);
extern void gc_model_matrix_out(StringInfo buf, const char *name,
								const double *x, int rows, int cols);
extern Jsonb *gc_model_jsonb(const char *fields_text, const char *name,
							 const double *x, int rows, int cols);
extern JsonbContainer *gc_model_array_in(JsonbContainer *obj, const char *type,
										 const char *name, int count,
										 int inner_count, bool required);
extern void gc_model_int64s_in(JsonbContainer *array, const char *type,
							   const char *name, int64 *out, int n);
extern void gc_model_doubles_in(JsonbContainer *array, const char *type,
								const char *name, double *out, int n);
extern void gc_model_matrix_in(JsonbContainer *array, const char *type,
							   const char *name, double *out, int rows,
							   int cols);
extern void gc_model_int64s_send(StringInfo buf, const int64 *x, size_t n);
extern void gc_model_doubles_send(StringInfo buf, const double *x, size_t n);
extern void gc_model_int64s_recv(StringInfo buf, int64 *x, size_t n);
extern void gc_model_doubles_recv(StringInfo buf, double *x, size_t n);
extern void gc_model_check_doubles(const char *type, const char *name,
								   double *x, size_t n, double limit,
								   bool non_negative, int errcode_value);
extern int	gc_model_shape_recv(StringInfo buf, const char *type, int oldest,
								int newest, int *rows, int *d);
extern void gc_model_binary_length(StringInfo buf, const char *type,
								   size_t expected);

/* kmeans_run.c: run a fit with ereport on failure */
extern KmeansModel *gc_run_kmeans(GcInput *input, const GcKmeansOptions *asked,
								  double collect_ms, int32 *labels,
								  double *distances);

/* Where a k-means result came from, for the model that records it */
typedef struct GcModelOrigin
{
	GcDeviceKind device;
	GcDeviceReason device_reason;
	GcFitPath	path;
	GcFittedOn	fitted_on;
	GcPrecision precision_requested;
	GcMetric	metric;
	Oid			input;			/* vector format fitted (GcInput.format), 0 unknown */
	int64		rows;			/* rows the model stands for */
	int64		null_rows;
	double		collect_ms;
	GcGpuPlan	plan;			/* how it ran on its GPUs (gc_kmeans_plan_in_core
								 * with 0 GPUs on the CPU) */
} GcModelOrigin;

extern void gc_model_record_result(KmeansModel *model,
								   const GcKmeansResult *result,
								   const GcModelOrigin *origin);

#endif							/* GC_MODEL_H */
