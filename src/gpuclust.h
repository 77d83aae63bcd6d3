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

typedef struct GcDevice
{
	GcDeviceKind kind;
	const GcKmeansBackend *kmeans;
	const GcPmBackend *pmedian;
	GcHostAlloc alloc;			/* pinned when the GPU will read the rows */
	GcHostFree	free;
} GcDevice;

extern void gc_choose_device(GcDevice *device);
extern void gc_use_cpu_device(GcDevice *device);
extern bool gc_interrupted(void);
extern void gc_raise(const GcError *err);

/* input.c: rows from SQL arrays */
typedef struct GcInput
{
	GcRows		rows;
	bool		started;		/* rows initialised (first non-NULL row seen) */
	int64		null_rows;		/* NULL rows skipped */
	int64		seen_rows;		/* rows seen, NULL or not, for messages */
	int64		first_rowno;	/* number of the first non-NULL row */
	GcDevice	device;
} GcInput;

extern void gc_input_init(GcInput *input);
extern void gc_input_add(GcInput *input, Datum vector, Oid elemtype);
extern void gc_input_add_null(GcInput *input);
extern void gc_input_release(GcInput *input);
extern void gc_input_release_at_reset(GcInput *input, MemoryContext context);
typedef struct GcVectorView
{
	int			d;
	Oid			elemtype;
	const bits8 *nulls;			/* NULL when the array has no NULLs */
	const char *data;			/* d elements, possibly unaligned */
} GcVectorView;

extern void gc_vector_view(Datum datum, Oid elemtype, int64 rowno,
						   GcVectorView *view);
extern void gc_vector_copy(const GcVectorView *view, double *out, int64 rowno);

/* options.c: the options jsonb */
typedef struct GcKmeansOptions
{
	GcKmeansParams params;
	double	   *init_values;	/* init given as centroids: rows * cols */
	int			init_rows;
	int			init_cols;
	bool		n_init_given;	/* the options set n_init */
	bool		init_candidates_given;	/* the options set init_candidates */
} GcKmeansOptions;

extern void gc_parse_kmeans_options(Jsonb *options, int k,
									GcKmeansOptions *opts);
extern void gc_check_init_shape(GcKmeansOptions *opts, int d);
extern void gc_option_error(const char *key, const char *expected) GC_NORETURN;
typedef bool (*GcOptionFn) (const char *name, JsonbValue *value, void *arg);
extern void gc_for_each_option(Jsonb *options, const char *valid_hint,
							   GcOptionFn fn, void *arg);
extern const char *gc_precision_name(GcPrecision precision);

/* model.c: the kmeans_model type */
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
	double		inertia;
	double		collect_ms;
	double		transfer_ms;
	double		seeding_ms;
	double		iterations_ms;
	double		labeling_ms;
	double		update_ms;
	int16		precision;		/* GcPrecision */
	int16		pruned;			/* pruned labeling ran */
	int32		padding;
	double		skipped_fraction;	/* distance computations pruning skipped */
	char		kernel[16];		/* labeling kernel, NUL-terminated */
	/* int64 sizes[k], then double centroids[k * d] */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} KmeansModel;

#define KMEANS_MODEL_VERSION 1
#define KmeansModelSizes(m) ((int64 *) (m)->data)
#define KmeansModelCentroids(m) ((double *) ((m)->data + sizeof(int64) * (m)->k))
#define KmeansModelBytes(k, d) \
	(offsetof(KmeansModel, data) + sizeof(int64) * (Size) (k) + sizeof(double) * (Size) (k) * (d))
#define DatumGetKmeansModel(x) ((KmeansModel *) PG_DETOAST_DATUM(x))
#define PG_GETARG_KMEANS_MODEL(n) DatumGetKmeansModel(PG_GETARG_DATUM(n))

extern KmeansModel *gc_model_alloc(int k, int d);

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

extern GcStreamState *gc_stream_state_new(MemoryContext parent,
										  const GcStreamHeader *shape,
										  bool use_gpu);
extern GcStreamState *gc_stream_state_copy(Datum value, MemoryContext parent,
										   bool use_gpu);
extern GcStreamState *gc_stream_state_rw(Datum value);
extern void gc_stream_state_merge(GcStreamState *state, Datum value);
extern Datum gc_stream_state_flatten(GcStreamState *state);
extern void gc_stream_state_free(GcStreamState *state);

/* model_text.c: the JSON text form of the model types */
extern void gc_model_append_float8(StringInfo buf, double x);
extern void gc_model_text_error(const char *type, const char *detail) GC_NORETURN;
extern JsonbValue *gc_model_field(JsonbContainer *obj, const char *type,
								  const char *name, enum jbvType jtype,
								  bool required);
extern double gc_model_number(JsonbContainer *obj, const char *type,
							  const char *name, bool required);
extern int64 gc_model_count(JsonbContainer *obj, const char *type,
							const char *name, bool required);

/* spi_rows.c: the query argument of the *_assign functions */
typedef void (*GcSpiColumnsFn) (TupleDesc tupdesc, void *arg);
typedef void (*GcSpiRowFn) (HeapTuple tuple, TupleDesc tupdesc, void *arg);
extern void gc_spi_for_each_row(const char *query, GcSpiColumnsFn on_columns,
								GcSpiRowFn on_row, void *arg);
extern int64 gc_spi_id_value(Datum id, Oid idtype);
extern struct ReturnSetInfo *gc_materialize_context(FunctionCallInfo fcinfo,
													 const char *fname);

/* kmeans_run.c: run a fit with ereport on failure */
extern KmeansModel *gc_run_kmeans(GcInput *input, GcKmeansOptions *opts,
								  double collect_ms, int32 *labels,
								  double *distances);

#endif							/* GPUCLUST_H */
