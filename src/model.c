/*-------------------------------------------------------------------------
 *
 * model.c
 *	  The kmeans_model type: a varlena holding k, d, the centroids, the
 *	  cluster sizes, the fit's statistics and phase timings.  Its text form
 *	  is a JSON object (so a model reads well and casts to jsonb); its
 *	  binary form is the same fields in network byte order.  Both are
 *	  read and written by model_io.c from this file's table of fields,
 *	  and every model, typed in, received or fitted, passes the one
 *	  validation gc_model_check.  Also the functions that use a model:
 *	  kmeans_predict, kmeans_distance, kmeans_centroids and
 *	  kmeans_model_centroids.
 *
 * IDENTIFICATION
 *	  src/model.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include <math.h>

#include "gc_math.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_in);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_out);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_info);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_jsonb);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_recv);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_send);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict_numeric);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance_numeric);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict_vector);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance_vector);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_centroids);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_centroids);

#define MODEL_TYPE "kmeans_model"

static const char *
device_name(int i)
{
	return i == GC_KIND_GPU ? "gpu" : "cpu";
}

static const char *
algorithm_name(int i)
{
	return i ? "pruned" : "lloyd";
}

static const char *
fitted_on_name(int i)
{
	return i == GC_FITTED_ON_SUMMARY ? "summary" : "rows";
}

static const char *
precision_name(int i)
{
	return gc_precision_name((GcPrecision) i);
}

static const char *
check_name(int i)
{
	static const char *const names[] = {"none", "passed", "fell_back"};	/* by GcCheckOutcome */

	return names[i];
}

static const char *
metric_name(int i)
{
	return gc_metric_name((GcMetric) i);
}

/*
 * The type of the vectors fitted, stored as a small code (its index here):
 * 0 when not recorded (a model typed in, or of a stream summary)
 */
static const Oid input_formats[] = {
	InvalidOid, FLOAT8OID, FLOAT4OID, GC_PGVECTOR_VECTOR, GC_PGVECTOR_HALFVEC,
	INT2OID, INT4OID, INT8OID, NUMERICOID
};

static const char *
input_name(int i)
{
	return i == 0 ? "unknown" : gc_vector_format_name(input_formats[i]);
}

/*
 * The seeding that ran, as gc_init_name names it, stored as its index
 * here: 0 when not recorded (a model typed in without it)
 */
static const char *const init_names[] = {
	"unknown", "kmeans++", "greedy kmeans++", "kmeans||", "random", "given",
	"batched kmeans||"
};

static const char *
init_name(int i)
{
	return init_names[i];
}

int
gc_model_init_code(const char *name)
{
	for (int i = 1; name != NULL && i < lengthof(init_names); i++)
		if (strcmp(init_names[i], name) == 0)
			return i;
	return 0;
}

int
gc_model_input_code(Oid format)
{
	for (int i = 1; i < lengthof(input_formats); i++)
		if (input_formats[i] == format)
			return i;
	return 0;
}

#define F(name, kind, place, member) {name, kind, place, offsetof(KmeansModel, member)}
#define E(name, member, name_of, n) \
	{name, GC_FIELD_ENUM, GC_PLACE_TOP, offsetof(KmeansModel, member), name_of, n}
#define O(name, member, value) \
	{name, GC_FIELD_OPTIONAL, GC_PLACE_TOP, offsetof(KmeansModel, member), NULL, 0, \
	 FITTED_ON_FIELD, value}
#define FITTED_ON_FIELD 0
/* a field binary version 5 added */
#define F5(name, kind, place, member) \
	{name, kind, place, offsetof(KmeansModel, member), NULL, 0, 0, 0, 5}
/* and 6 */
#define F6(name, kind, place, member) \
	{name, kind, place, offsetof(KmeansModel, member), NULL, 0, 0, 0, 6}

/*
 * The scalar fields, in the order of both forms after k and d.  inertia
 * and summary_inertia exclude each other: a model fitted on a summary
 * reports the inertia over the summary's points, not over the rows.
 */
static const GcModelField model_fields[] = {
	{"fitted_on", GC_FIELD_ENUM, GC_PLACE_BINARY, offsetof(KmeansModel, fitted_on), fitted_on_name, 2},
	{"k_requested", GC_FIELD_INT32, GC_PLACE_TOP, offsetof(KmeansModel, k_requested), NULL, 0, 0, 0, 4},
	F("rows", GC_FIELD_INT64, GC_PLACE_TOP, rows),
	F("null_rows", GC_FIELD_INT64, GC_PLACE_TOP, null_rows),
	F("iterations", GC_FIELD_INT32, GC_PLACE_TOP, iterations),
	F("converged", GC_FIELD_BOOL, GC_PLACE_TOP, converged),
	O("inertia", inertia, GC_FITTED_ON_ROWS),
	O("summary_inertia", summary_inertia, GC_FITTED_ON_SUMMARY),
	E("device", device, device_name, 2),
	E("device_reason", device_reason, gc_device_reason_name, GC_REASON_COUNT),
	E("path", path, gc_fit_path_name, GC_PATH_COUNT),
	E("algorithm", pruned, algorithm_name, 2),
	F("kernel", GC_FIELD_NAME, GC_PLACE_TOP, kernel),
	E("init", init, init_name, lengthof(init_names)),
	E("precision", precision, precision_name, GC_PRECISION_AUTO + 1),
	E("precision_requested", precision_requested, precision_name, GC_PRECISION_AUTO + 1),
	E("precision_check", precision_check, check_name, GC_CHECK_FELL_BACK + 1),
	F("sample_disagreement", GC_FIELD_FRACTION, GC_PLACE_TOP, sample_disagreement),
	F("sample_inertia_excess", GC_FIELD_DOUBLE, GC_PLACE_TOP, sample_inertia_excess),
	E("metric", metric, metric_name, GC_METRIC_COSINE + 1),
	E("input", input, input_name, lengthof(input_formats)),
	F("partial_states", GC_FIELD_INT32, GC_PLACE_TOP, partial_states),
	F("shared_memory_states", GC_FIELD_INT32, GC_PLACE_TOP, shared_memory_states),
	F("distances_skipped", GC_FIELD_FRACTION, GC_PLACE_TOP, skipped_fraction),
	F("collect", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, collect_ms),
	F("transfer", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, transfer_ms),
	F("seeding", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, seeding_ms),
	F("precision_check", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, check_ms),
	F("iterations", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, iterations_ms),
	F("labeling", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, labeling_ms),
	F("update", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, update_ms),
	F5("coarse_k", GC_FIELD_INT32, GC_PLACE_TOP, coarse_k),
	F5("max_cluster_size", GC_FIELD_INT64, GC_PLACE_TOP, max_cluster_size),
	F5("size_min", GC_FIELD_INT64, GC_PLACE_TOP, size_min),
	F5("size_max", GC_FIELD_INT64, GC_PLACE_TOP, size_max),
	F5("size_cv", GC_FIELD_DOUBLE, GC_PLACE_TOP, size_cv),
	F5("balance_rounds", GC_FIELD_INT32, GC_PLACE_TOP, balance_rounds),
	F5("balance_moves", GC_FIELD_INT64, GC_PLACE_TOP, balance_moves),
	F5("coarse", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, coarse_ms),
	F5("split", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, split_ms),
	F5("refine", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, refine_ms),
	F5("balance", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, balance_ms),
	F6("gpus_used", GC_FIELD_INT32, GC_PLACE_TOP, gpus_used),
	F6("resident_fraction", GC_FIELD_FRACTION, GC_PLACE_TOP, resident_fraction),
	F6("streamed_bytes", GC_FIELD_INT64, GC_PLACE_TOP, streamed_bytes),
};

static const GcModelType model_type = {MODEL_TYPE, model_fields, lengthof(model_fields)};

/* A k-means model of k centroids in d dimensions, or an error */
static void
check_model_shape(int64 k, int64 d)
{
	if (k < 1 || k > GC_MAX_K || d < 1 || d > GC_MAX_DIM ||
		KmeansModelBytes(k, d) > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a k-means model of %lld clusters in %lld dimensions is too large",
						(long long) k, (long long) d),
				 errhint("A model must stay under 1 GB: reduce k or the dimension.")));
}

/*
 * Allocate a zeroed model of k centroids of dimension d
 */
KmeansModel *
gc_model_alloc(int k, int d)
{
	Size		bytes;
	KmeansModel *model;

	check_model_shape(k, d);
	bytes = KmeansModelBytes(k, d);
	model = palloc0(bytes);
	SET_VARSIZE(model, bytes);
	model->version = KMEANS_MODEL_VERSION;
	model->k = k;
	model->d = d;
	return model;
}

/*
 * The fields a model made before version 6 lacks, as its fit ran: on one
 * GPU or the CPU, every row resident, nothing streamed
 */
static void
set_plan_defaults(KmeansModel *m, bool gpus_used, bool resident_fraction)
{
	if (gpus_used)
		m->gpus_used = m->device == GC_KIND_GPU ? 1 : 0;
	if (resident_fraction)
		m->resident_fraction = 1.0;
}

/* Where version 5 stored the arrays: where gpus_used is now */
#define KMEANS_MODEL_V5_DATA offsetof(KmeansModel, gpus_used)

/*
 * m in this build's layout: a value stored by version 5, whose arrays
 * start KMEANS_MODEL_V5_DATA bytes in, is copied into one (the fields it
 * lacks as set_plan_defaults sets them); any other is m
 */
KmeansModel *
gc_model_current(KmeansModel *m)
{
	Size		arrays;
	KmeansModel *current;

	if (m->version != 5)
		return m;
	check_model_shape(m->k, m->d);
	arrays = KmeansModelBytes(m->k, m->d) - offsetof(KmeansModel, data);
	if (VARSIZE(m) != KMEANS_MODEL_V5_DATA + arrays)
		gc_model_value_error(MODEL_TYPE, ERRCODE_DATA_CORRUPTED,
							 "A value stored by version 5 has the wrong length.");
	current = gc_model_alloc(m->k, m->d);
	memcpy((char *) current + VARHDRSZ, (char *) m + VARHDRSZ, KMEANS_MODEL_V5_DATA - VARHDRSZ);
	memcpy(current->data, (char *) m + KMEANS_MODEL_V5_DATA, arrays);
	current->version = KMEANS_MODEL_VERSION;
	set_plan_defaults(current, true, true);
	return current;
}

/*
 * A cosine model's centroids: unit vectors (gc_is_unit), or kmeans_predict,
 * which takes the nearest by Euclidean distance, would not answer the
 * largest cosine (and a zero centroid has none)
 */
static void
check_unit_centroids(const KmeansModel *m, int errcode_value)
{
	const double *centroids = KmeansModelCentroids(m);

	for (int c = 0; c < m->k; c++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!gc_is_unit(centroids + (size_t) c * m->d, m->d))
			gc_model_value_error(MODEL_TYPE, errcode_value,
								 psprintf("Under the metric \"cosine\" every centroid must be a unit vector (norm within %g of 1); centroid %d is not.",
										  GC_UNIT_NORM_TOLERANCE, c));
	}
}

/*
 * The one validation of a model, whoever made it: every field within its
 * rule, sizes that sum within int64, centroids finite and within
 * GC_MAX_MAGNITUDE (so that a model's distances stay finite, as a fit's
 * input must), and of unit length under the cosine metric
 */
void
gc_model_check(KmeansModel *m, int errcode_value)
{
	int64	   *sizes = KmeansModelSizes(m);
	int64		total = 0;

	gc_model_fields_check(&model_type, m, errcode_value);
	if (m->k_requested == 0)
		m->k_requested = m->k;
	if (m->k_requested < m->k)
		gc_model_value_error(MODEL_TYPE, errcode_value,
							 "The field \"k_requested\" must be at least k.");
	for (int c = 0; c < m->k; c++)
		if (sizes[c] < 0 || pg_add_s64_overflow(total, sizes[c], &total))
			gc_model_value_error(MODEL_TYPE, errcode_value,
								 "The field \"sizes\" must hold counts at least 0 whose sum is a 64-bit integer.");
	gc_model_check_doubles(MODEL_TYPE, "centroids", KmeansModelCentroids(m),
						   (size_t) m->k * m->d, GC_MAX_MAGNITUDE, false, errcode_value);
	if (m->metric == GC_METRIC_COSINE)
		check_unit_centroids(m, errcode_value);
	if (m->coarse_k > m->k)
		gc_model_value_error(MODEL_TYPE, errcode_value,
							 "The field \"coarse_k\" must be at most k.");
	if (m->device == GC_KIND_GPU ? m->gpus_used < 1 || m->gpus_used > GC_FIT_MAX_GPUS :
		m->gpus_used != 0)
		gc_model_value_error(MODEL_TYPE, errcode_value,
							 psprintf("The field \"gpus_used\" must be 0 on the CPU and 1 to %d on the GPU.",
									  GC_FIT_MAX_GPUS));
	for (int c = 0; c < m->k; c++)
		if (KmeansModelParents(m)[c] < 0 ||
			KmeansModelParents(m)[c] >= Max(m->coarse_k, 1))
			gc_model_value_error(MODEL_TYPE, errcode_value,
								 "The field \"parents\" must hold coarse clusters from 0 to coarse_k - 1.");
}

/* The parents as int64s, for model_io.c's arrays */
static int64 *
parents_wide(const KmeansModel *m)
{
	int64	   *wide = palloc(sizeof(int64) * m->k);

	for (int c = 0; c < m->k; c++)
		wide[c] = KmeansModelParents(m)[c];
	return wide;
}

/* int64s read into the parents, each checked later by gc_model_check */
static void
set_parents(KmeansModel *m, const int64 *wide)
{
	for (int c = 0; c < m->k; c++)
		KmeansModelParents(m)[c] = wide[c] < 0 || wide[c] > PG_INT32_MAX ? -1 : (int32) wide[c];
}

/*
 * m's fields as both forms write them: k_requested is k in a value stored
 * before the field existed (0 in its padding), so header gets a copy
 */
static const KmeansModel *
written_fields(const KmeansModel *m, KmeansModel *header)
{
	if (m->k_requested != 0)
		return m;
	memcpy(header, m, offsetof(KmeansModel, data));
	header->k_requested = m->k;
	return header;
}

/* The text form, with or without the centroids */
static char *
model_text(const KmeansModel *m, bool with_centroids)
{
	StringInfoData buf;
	KmeansModel header;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"k\": %d, \"d\": %d", m->k, m->d);
	gc_model_fields_out(&buf, &model_type, written_fields(m, &header));
	gc_model_int64s_out(&buf, "sizes", KmeansModelSizes(m), m->k);
	if (m->coarse_k > 0)
		gc_model_int64s_out(&buf, "parents", parents_wide(m), m->k);
	if (with_centroids)
		gc_model_matrix_out(&buf, "centroids", KmeansModelCentroids(m), m->k, m->d);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

Datum
gpuclust_kmeans_model_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(model_text(PG_GETARG_KMEANS_MODEL(0), true));
}

/*
 * kmeans_model_info(model) -> jsonb: the text form's fields but the
 * centroids, the same values as model::jsonb - 'centroids' without
 * writing k x d centroid values as text and parsing them back (that cast
 * takes 0.2-0.4 s for 1,000 x 768 on the H100 machine)
 */
Datum
gpuclust_kmeans_model_info(PG_FUNCTION_ARGS)
{
	char	   *text = model_text(PG_GETARG_KMEANS_MODEL(0), false);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/*
 * kmeans_model::jsonb: the value of the text form's cast, built without
 * parsing the centroids as text, so that a cancel stops it (gc_model_jsonb)
 */
Datum
gpuclust_kmeans_model_jsonb(PG_FUNCTION_ARGS)
{
	KmeansModel *m = PG_GETARG_KMEANS_MODEL(0);

	PG_RETURN_JSONB_P(gc_model_jsonb(model_text(m, false), "centroids",
									 KmeansModelCentroids(m), m->k, m->d));
}

/* Whether the text form's object has key */
static bool
has_key(JsonbContainer *obj, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(obj, JB_FOBJECT, &k) != NULL;
}

/*
 * Text form to model: the shape and the arrays' lengths are checked
 * before anything of the model's size is allocated
 */
Datum
gpuclust_kmeans_model_in(PG_FUNCTION_ARGS)
{
	JsonbContainer *obj = gc_model_object(PG_GETARG_CSTRING(0), MODEL_TYPE);
	int			k = gc_model_shape_in(obj, MODEL_TYPE, "k");
	int			d = gc_model_shape_in(obj, MODEL_TYPE, "d");
	JsonbContainer *sizes,
			   *centroids,
			   *parents;
	KmeansModel *m;

	check_model_shape(k, d);
	sizes = gc_model_array_in(obj, MODEL_TYPE, "sizes", k, -1, true);
	centroids = gc_model_array_in(obj, MODEL_TYPE, "centroids", k, d, true);
	m = gc_model_alloc(k, d);
	gc_model_fields_in(obj, &model_type, m);
	set_plan_defaults(m, !has_key(obj, "gpus_used"), !has_key(obj, "resident_fraction"));
	parents = gc_model_array_in(obj, MODEL_TYPE, "parents", k, -1, m->coarse_k > 0);
	if (parents != NULL && m->coarse_k == 0)
		gc_model_text_error(MODEL_TYPE, "The field \"parents\" belongs to a two-level model (coarse_k above 0).");
	if (parents != NULL)
	{
		int64	   *wide = palloc(sizeof(int64) * k);

		gc_model_int64s_in(parents, MODEL_TYPE, "parents", wide, k);
		set_parents(m, wide);
	}
	gc_model_int64s_in(sizes, MODEL_TYPE, "sizes", KmeansModelSizes(m), k);
	gc_model_matrix_in(centroids, MODEL_TYPE, "centroids", KmeansModelCentroids(m), k, d);
	gc_model_check(m, ERRCODE_INVALID_TEXT_REPRESENTATION);
	PG_RETURN_POINTER(m);
}

Datum
gpuclust_kmeans_model_send(PG_FUNCTION_ARGS)
{
	KmeansModel *m = PG_GETARG_KMEANS_MODEL(0);
	StringInfoData buf;
	KmeansModel header;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, KMEANS_MODEL_VERSION);
	pq_sendint32(&buf, m->k);
	pq_sendint32(&buf, m->d);
	gc_model_fields_send(&buf, &model_type, written_fields(m, &header));
	gc_model_int64s_send(&buf, KmeansModelSizes(m), m->k);
	gc_model_doubles_send(&buf, KmeansModelCentroids(m), (size_t) m->k * m->d);
	if (m->coarse_k > 0)
		gc_model_int64s_send(&buf, parents_wide(m), m->k);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * Binary form to model: the fields are read into a header first, and the
 * length checked against the shape before the model is allocated
 */
Datum
gpuclust_kmeans_model_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			k,
				d,
				version;
	KmeansModel header;
	KmeansModel *m;

	version = gc_model_shape_recv(buf, MODEL_TYPE, KMEANS_MODEL_OLDEST_VERSION,
								  KMEANS_MODEL_VERSION, &k, &d);
	check_model_shape(k, d);
	memset(&header, 0, sizeof(header));
	gc_model_fields_recv(buf, &model_type, &header, version);
	set_plan_defaults(&header, version < 6, version < 6);
	gc_model_binary_length(buf, MODEL_TYPE, sizeof(int64) * k + sizeof(double) * (Size) k * d +
						   (header.coarse_k > 0 ? sizeof(int64) * k : 0));
	m = gc_model_alloc(k, d);
	memcpy((char *) m + VARHDRSZ, (char *) &header + VARHDRSZ,
		   offsetof(KmeansModel, data) - VARHDRSZ);
	m->version = KMEANS_MODEL_VERSION;
	m->k = k;
	m->d = d;
	gc_model_int64s_recv(buf, KmeansModelSizes(m), k);
	gc_model_doubles_recv(buf, KmeansModelCentroids(m), (size_t) k * d);
	if (m->coarse_k > 0)
	{
		int64	   *wide = palloc(sizeof(int64) * k);

		gc_model_int64s_recv(buf, wide, k);
		set_parents(m, wide);
	}
	gc_model_check(m, ERRCODE_INVALID_BINARY_REPRESENTATION);
	PG_RETURN_POINTER(m);
}

/*
 * Nearest centroid of the vector in argument 1, and its distance under
 * the model's metric
 */
static int
nearest_of_arg(FunctionCallInfo fcinfo, Oid format, double *distance)
{
	KmeansModel *m = gc_model_current((KmeansModel *) gc_detoast_arg_cached(fcinfo, 0));
	GcVectorView view;
	double	   *x;
	double		d2;
	int			nearest;
	GcPoll		poll = {gc_interrupted, 0};

	gc_vector_view(PG_GETARG_DATUM(1), format, 1, &view);
	if (view.d != m->d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector has %d dimensions, but the model has %d", view.d, m->d)));
	x = palloc(sizeof(double) * view.d);
	gc_vector_copy(&view, x, 1);
	if (m->metric == GC_METRIC_COSINE)
		gc_input_normalize(x, view.d, 0);
	/* a model of many wide centroids is a long search: cancel by work */
	nearest = gc_nearest_centroid_polled(x, KmeansModelCentroids(m), m->k, view.d, &d2, &poll);
	if (nearest < 0)
	{
		GcError		err = {GC_INTERRUPTED, "interrupted while predicting"};

		gc_raise(&err);
	}
	if (distance)
		*distance = gc_metric_distance((GcMetric) m->metric, d2);
	return nearest;
}

/*
 * A distance under metric from the squared Euclidean distance d2: itself
 * rooted, or for cosine (unit vectors) 1 - cos = d2 / 2
 */
double
gc_metric_distance(GcMetric metric, double d2)
{
	return metric == GC_METRIC_COSINE ? d2 / 2.0 : sqrt(d2);
}

/* kmeans_predict and kmeans_distance for a vector of the given format */
static Datum
predict(FunctionCallInfo fcinfo, Oid format)
{
	PG_RETURN_INT32(nearest_of_arg(fcinfo, format, NULL));
}

static Datum
distance(FunctionCallInfo fcinfo, Oid format)
{
	double		distance;

	nearest_of_arg(fcinfo, format, &distance);
	PG_RETURN_FLOAT8(distance);
}

Datum
gpuclust_kmeans_predict(PG_FUNCTION_ARGS)
{
	return predict(fcinfo, FLOAT8OID);
}

Datum
gpuclust_kmeans_predict_real(PG_FUNCTION_ARGS)
{
	return predict(fcinfo, FLOAT4OID);
}

/* vectors of any number type */
Datum
gpuclust_kmeans_predict_numeric(PG_FUNCTION_ARGS)
{
	return predict(fcinfo, GC_NUMERIC_ARRAY);
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_kmeans_predict_vector(PG_FUNCTION_ARGS)
{
	return predict(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_kmeans_predict_halfvec(PG_FUNCTION_ARGS)
{
	return predict(fcinfo, GC_PGVECTOR_HALFVEC);
}

Datum
gpuclust_kmeans_distance(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, FLOAT8OID);
}

Datum
gpuclust_kmeans_distance_real(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, FLOAT4OID);
}

Datum
gpuclust_kmeans_distance_numeric(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, GC_NUMERIC_ARRAY);
}

Datum
gpuclust_kmeans_distance_vector(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_kmeans_distance_halfvec(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, GC_PGVECTOR_HALFVEC);
}

/*
 * A model's centroids as rows, one a call: (cluster, centroid, size), or
 * with parents (cluster, parent, centroid), parent NULL in one level
 */
static Datum
centroid_rows(FunctionCallInfo fcinfo, bool parents)
{
	FuncCallContext *funcctx;
	KmeansModel *m;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;
		TupleDesc	tupdesc;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		funcctx->tuple_desc = BlessTupleDesc(tupdesc);
		funcctx->user_fctx = PG_GETARG_KMEANS_MODEL(0);
		MemoryContextSwitchTo(oldcontext);
	}
	funcctx = SRF_PERCALL_SETUP();
	m = funcctx->user_fctx;
	if (funcctx->call_cntr < (uint64) m->k)
	{
		int			c = (int) funcctx->call_cntr;
		Datum	   *elems = palloc(sizeof(Datum) * m->d);
		Datum		centroid;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		for (int j = 0; j < m->d; j++)
			elems[j] = Float8GetDatum(KmeansModelCentroids(m)[(size_t) c * m->d + j]);
		centroid = PointerGetDatum(construct_array(elems, m->d, FLOAT8OID, sizeof(float8),
												   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[0] = Int32GetDatum(c);
		if (parents)
		{
			values[1] = Int32GetDatum(KmeansModelParents(m)[c]);
			nulls[1] = m->coarse_k == 0;
			values[2] = centroid;
		}
		else
		{
			values[1] = centroid;
			values[2] = Int64GetDatum(KmeansModelSizes(m)[c]);
		}
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * kmeans_centroids(model) -> TABLE(cluster int, centroid float8[], size bigint)
 */
Datum
gpuclust_kmeans_centroids(PG_FUNCTION_ARGS)
{
	return centroid_rows(fcinfo, false);
}

/*
 * kmeans_model_centroids(model) -> TABLE(cluster int, parent int,
 * centroid float8[]): the shape an IVF index builder takes; parent is the
 * coarse cluster of a two-level model, NULL in one level
 */
Datum
gpuclust_kmeans_model_centroids(PG_FUNCTION_ARGS)
{
	return centroid_rows(fcinfo, true);
}
