/*-------------------------------------------------------------------------
 *
 * gpuclust.h
 *	  Declarations shared by the SQL glue (the only code that includes
 *	  postgres.h): device selection, input rows, options, the k-means
 *	  model type and the fit driver.
 *
 * IDENTIFICATION
 *	  src/gpuclust.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUCLUST_H
#define GPUCLUST_H

#include "postgres.h"

#include "pg_compat.h"

#include "fmgr.h"
#include "access/htup.h"
#include "lib/stringinfo.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "gc_engine.h"
#include "pmedian_engine.h"
#include "gc_stream.h"
#include "utils/expandeddatum.h"

/* gpuclust.c: GUCs and device selection */
typedef enum GcDeviceSetting
{
	GC_DEVICE_AUTO,
	GC_DEVICE_GPU,
	GC_DEVICE_CPU
} GcDeviceSetting;

typedef enum GcDeviceKind
{
	GC_KIND_CPU = 0,
	GC_KIND_GPU = 1
} GcDeviceKind;

/* Why a fit runs where it does, recorded in its model */
typedef enum GcDeviceReason
{
	GC_REASON_UNRECORDED = 0,	/* a model typed in without the field */
	GC_REASON_SETTING_CPU,		/* gpuclust.device = cpu */
	GC_REASON_SETTING_GPU,		/* gpuclust.device = gpu */
	GC_REASON_AUTO_SMALL,		/* auto: work below the GPU's threshold */
	GC_REASON_AUTO_LARGE,		/* auto: work above it, on the GPU */
	GC_REASON_AUTO_NO_GPU,		/* auto: work above it, no usable GPU */
	GC_REASON_AUTO_NO_CUDA,		/* auto: work above it, a build without CUDA */
	GC_REASON_AUTO_OVER_BUDGET, /* auto: more than the GPU service's memory budget */
	GC_REASON_COUNT
} GcDeviceReason;

typedef struct GcDevice
{
	GcDeviceKind kind;
	GcDeviceReason reason;
	bool		deferred;		/* auto, not yet decided: the CPU until then */
	const GcKmeansBackend *kmeans;
	const GcPmBackend *pmedian;
	GcHostAlloc alloc;			/* pinned when the GPU will read the rows */
	GcHostFree	free;
	int			gpu_id;			/* the GPU's index, when kind is GPU */
	bool		service;		/* the GPU service runs the fit (kind as decided
								 * here; the rows in plain memory) */
	bool		gpu_pinned;		/* service: gpu_id was set, run on it alone */
} GcDevice;

/* Which process ran a fit, recorded in its model */
typedef enum GcFitPath
{
	GC_PATH_UNRECORDED = 0,		/* a model typed in without the field */
	GC_PATH_BACKEND,			/* the backend that asked for it */
	GC_PATH_SERVICE,			/* the GPU service */
	GC_PATH_COUNT
} GcFitPath;

/* device_choice.c: where a fit runs */
extern void gc_device_choice_init(void);
extern void gc_choose_service_device(GcDevice *device);
extern void gc_leave_service(GcDevice *device, GcDeviceReason reason);
extern const char *gc_fit_path_name(int path);
extern void gc_settle_device(GcDevice *device, double work);
extern double gc_auto_gpu_min_work(const GcDevice *device);
extern const char *gc_device_reason_name(int reason);
extern void gc_use_cpu_device(GcDevice *device);

/* gpuclust.c, interrupt.c: failures, limits, cancel */
extern bool gc_interrupted(void);
extern void gc_raise(const GcError *err);
extern size_t gc_fit_memory_limit(void);

/* progress.c: the gpuclust_progress view */
typedef enum GcFitKind
{
	GC_FIT_KMEANS = 0,
	GC_FIT_PMEDIAN,
	GC_FIT_STREAM_MODEL
} GcFitKind;

typedef enum GcProgressDevice
{
	GC_PROGRESS_DEVICE_UNDECIDED = 0,
	GC_PROGRESS_DEVICE_CPU,
	GC_PROGRESS_DEVICE_GPU
} GcProgressDevice;

extern void gc_progress_init(void);
extern uint32 gc_progress_begin(GcFitKind fit);
extern void gc_progress_rows(uint32 token, int64 rows);
extern void gc_progress_device(uint32 token, GcProgressDevice device, int gpu_id);
extern uint32 gc_progress_fit(uint32 token, GcFitKind fit, GcKmeansParams *params,
							  int64 rows, const GcDevice *device);
extern void gc_progress_hook(uint32 token, GcProgressFn *progress, void **progress_arg);
extern void gc_progress_phase(uint32 token, GcPhase phase, int64 rows, int n_init,
							  int max_iter);
extern void gc_progress_mirror(uint32 token, GcPhase phase, int restart,
							   int iteration, double shift, double inertia);
extern void gc_progress_end(uint32 token);

/* input.c: rows from SQL arrays */
typedef struct GcInput
{
	GcRows		rows;
	bool		started;		/* rows initialised (first non-NULL row seen) */
	int64		null_rows;		/* NULL rows skipped */
	int64		seen_rows;		/* rows seen, NULL or not, for messages */
	int64		first_rowno;	/* number of the first non-NULL row */
	Oid			format;			/* of the first non-NULL row's vector */
	bool		unit;			/* cosine metric: rows scaled to unit length */
	GcDevice	device;
	bool		device_fixed;	/* device set by the caller: keep it */
	GcFitKind	fit;			/* what the rows are for, for the progress view */
	double		work_per_row;	/* k * n_init, for auto's choice while collecting; 0: at the fit */
	bool		hashes_at_fit;	/* the rows reach a k-means fit in this process:
								 * their hashes wait for gc_input_finish_rows */
	int64		settle_rows;	/* rows at which the work reaches the GPU's
								 * threshold; 0 until the first row */
	uint32		progress;		/* progress token of the fit (0: none) */
	const struct GcPartialSegments *segments;	/* where borrowed rows lie
												 * (a parallel plan's leader) */
	GcChunkPlacement placement; /* the rows' large chunks in shared memory
								 * (a partial aggregate's, partial_state.c) */
} GcInput;

extern void gc_input_init(GcInput *input);
extern void gc_input_add(GcInput *input, Datum vector, Oid format);
extern void gc_input_add_null(GcInput *input);
extern void gc_input_normalize(double *x, int d, int64 rowno);
extern void gc_input_release(GcInput *input);
extern double gc_input_bytes(const GcInput *input);
extern void gc_input_settle_device(GcInput *input, double work);
extern double gc_input_finish_rows(GcInput *input);
extern void gc_input_release_at_reset(GcInput *input, MemoryContext context);

/*
 * A vector's format is the element type's OID for an array (FLOAT8OID,
 * FLOAT4OID) or one of these values, which are no type's OID: pgvector's
 * types, whose OIDs differ from database to database, and any array of
 * numbers (the element type then comes from each value)
 */
#define GC_PGVECTOR_VECTOR	((Oid) 1)	/* vector: int16 dim, int16, float4[dim] */
#define GC_PGVECTOR_HALFVEC ((Oid) 2)	/* halfvec: the same with binary16 */
#define GC_NUMERIC_ARRAY	((Oid) 3)	/* an array of any number type: smallint,
										 * integer, bigint, numeric, real or float8,
										 * read from each value's header */

typedef struct GcVectorView
{
	int			d;
	Oid			elemtype;		/* an array's element type or GC_PGVECTOR_HALFVEC */
	const bits8 *nulls;			/* NULL when the array has no NULLs */
	const char *data;			/* d elements, possibly unaligned */
	struct varlena *detoasted;	/* the copy read when toasted, else NULL */
} GcVectorView;

extern void gc_vector_view(Datum datum, Oid format, int64 rowno,
						   GcVectorView *view);
extern void gc_vector_copy(const GcVectorView *view, double *out, int64 rowno);
extern void gc_vector_copy_narrow(const GcVectorView *view, float *out, int64 rowno);
extern void gc_vector_view_release(GcVectorView *view);

/* pgvector_input.c: pgvector's vector and halfvec, read in place */
extern void gc_pgvector_view(struct varlena *packed, Oid format, int64 rowno,
							 GcVectorView *view);
extern bool gc_halfvec_copy(const char *restrict data, int d, double *restrict out);
extern bool gc_halfvec_copy_narrow(const char *restrict data, int d, float *restrict out);
extern Oid	gc_vector_format_of_type(Oid typid);
extern const char *gc_vector_format_name(Oid format);
extern Oid	gc_vector_format_by_name(const char *name, int len);

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
	double		sample_disagreement;	/* the check's sample: labels unlike exact ones */
	double		sample_inertia_excess;	/* the check's sample: inertia over exact, less 1 */
	char		kernel[GC_KERNEL_NAME_BYTES];	/* labeling kernel, NUL-padded */
	/* int64 sizes[k], then double centroids[k * d] */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} KmeansModel;

#define KMEANS_MODEL_VERSION 3
#define KmeansModelSizes(m) ((int64 *) (m)->data)
#define KmeansModelCentroids(m) ((double *) ((m)->data + sizeof(int64) * (m)->k))
#define KmeansModelBytes(k, d) \
	(offsetof(KmeansModel, data) + sizeof(int64) * (Size) (k) + sizeof(double) * (Size) (k) * (d))
#define DatumGetKmeansModel(x) ((KmeansModel *) PG_DETOAST_DATUM(x))
#define PG_GETARG_KMEANS_MODEL(n) DatumGetKmeansModel(PG_GETARG_DATUM(n))

/* detoast_cache.c: argument argno detoasted, an on-disk value once per call site */
extern struct varlena *gc_detoast_arg_cached(FunctionCallInfo fcinfo, int argno);

extern KmeansModel *gc_model_alloc(int k, int d);
extern void gc_model_check(KmeansModel *m, int errcode_value);
extern double gc_metric_distance(GcMetric metric, double distance2);
extern int	gc_model_input_code(Oid format);
/* the code of a seeding named by gc_init_name, 0 when unknown */
extern int	gc_model_init_code(const char *name);

/* options.c: the options of kmeans_stream_state */
extern void gc_parse_stream_options(Jsonb *options, int k, GcStreamHeader *shape);

/*
 * stream_type.c: the kmeans_stream type.  Its flat form is a varlena
 * holding stream_format.h's bytes; its expanded form, a read-write state
 * that the aggregates update in place, holds the engine's GcStream.
 */
typedef struct GcStreamState
{
	ExpandedObjectHeader hdr;
	GcStream	stream;
	GcDevice	device;
} GcStreamState;

/* stream_service.c: a summary's clusterings in the GPU service */
typedef struct GcStreamService GcStreamService;
extern GcStreamService *gc_stream_use_service(GcStream *s, GcDevice *device, uint32 progress,
											  MemoryContext context);
extern bool gc_stream_service_ran(const GcStreamService *svc);
extern void gc_stream_raise(GcError *err);

extern GcStreamState *gc_stream_state_new(MemoryContext parent,
										  const GcStreamHeader *shape,
										  bool use_gpu);
extern GcStreamState *gc_stream_state_copy(Datum value, MemoryContext parent,
										   bool use_gpu);
extern GcStreamState *gc_stream_state_rw(Datum value);
extern void gc_stream_state_merge(GcStreamState *state, Datum value);
extern Datum gc_stream_state_flatten(GcStreamState *state);
extern void gc_stream_state_free(GcStreamState *state);

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
								 void *model);
extern void gc_model_fields_check(const GcModelType *type, void *model,
								  int errcode_value);

/* arrays of a model: text, binary, validation */
extern void gc_model_int64s_out(StringInfo buf, const char *name,
								const int64 *x, int n);
extern void gc_model_doubles_out(StringInfo buf, const char *name,
								 const double *x, int n);
extern void gc_model_matrix_out(StringInfo buf, const char *name,
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
extern void gc_model_shape_recv(StringInfo buf, const char *type, int version,
								int *rows, int *d);
extern void gc_model_binary_length(StringInfo buf, const char *type,
								   size_t expected);

/* spi_rows.c: the query argument of the *_assign functions */
typedef void (*GcSpiColumnsFn) (TupleDesc tupdesc, void *arg);
typedef void (*GcSpiRowFn) (TupleTableSlot *slot, void *arg);
extern struct _SPI_plan *gc_spi_prepare_rows(const char *query);
extern void gc_spi_check_id_type(Oid idtype);
extern Oid	gc_spi_vector_format(Oid vectype);
extern void gc_spi_for_each_row(const char *query, GcSpiColumnsFn on_columns,
								GcSpiRowFn on_row, void *arg);
extern int64 gc_spi_id_value(Datum id, Oid idtype);
extern struct ReturnSetInfo *gc_materialize_context(FunctionCallInfo fcinfo,
													 const char *fname);
extern struct Tuplestorestate *gc_result_store(FunctionCallInfo fcinfo,
											   struct ReturnSetInfo *rsinfo,
											   double held_bytes, TupleDesc *tupdesc);

/* kmeans_run.c: run a fit with ereport on failure */
extern KmeansModel *gc_run_kmeans(GcInput *input, GcKmeansOptions *opts,
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
} GcModelOrigin;

extern void gc_model_record_result(KmeansModel *model,
								   const GcKmeansResult *result,
								   const GcModelOrigin *origin);

#endif							/* GPUCLUST_H */
