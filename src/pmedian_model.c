/*-------------------------------------------------------------------------
 *
 * pmedian_model.c
 *	  The pmedian_model type: a varlena holding p, d, the medoids' ids and
 *	  vectors, their penalty multipliers, the objective, the capacity
 *	  violation, statistics and phase timings.  Its text form is a JSON
 *	  object (it casts to jsonb), its binary form the same fields in
 *	  network byte order, both read and written by model_io.c from this
 *	  file's table of fields; every model, typed in, received or fitted,
 *	  passes the one validation gc_pmedian_model_check.  Also
 *	  pmedian_predict.
 *
 * IDENTIFICATION
 *	  src/pmedian_model.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include <float.h>

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_in);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_out);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_info);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_jsonb);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_recv);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_send);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict_real);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict_numeric);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict_vector);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict_halfvec);

#define MODEL_TYPE "pmedian_model"

static const char *
device_name(int i)
{
	return i == GC_KIND_GPU ? "gpu" : "cpu";
}

static const char *
metric_name(int i)
{
	return gc_pmedian_metric_name((GcPmMetric) i);
}

static const char *
method_name(int i)
{
	return gc_pmedian_method_name((GcPmMethod) i);
}

#define F(name, kind, place, member) {name, kind, place, offsetof(PmedianModel, member)}
#define E(name, member, name_of, n) \
	{name, GC_FIELD_ENUM, GC_PLACE_TOP, offsetof(PmedianModel, member), name_of, n}

/*
 * The scalar fields, in the order of both forms after p and d; capacity
 * is null in the text form of an uncapacitated model
 */
static const char *
improve_name(int i)
{
	return gc_pmedian_improve_name((GcPmImprove) i);
}

static const char *
capacity_mode_name(int i)
{
	return i ? "hard" : "soft";
}

static const GcModelField model_fields[] = {
	F("capacitated", GC_FIELD_BOOL, GC_PLACE_BINARY, capacitated),
	{"p_requested", GC_FIELD_INT32, GC_PLACE_TOP, offsetof(PmedianModel, p_requested), NULL, 0, 0, 0, 4},
	E("metric", metric, metric_name, GC_PM_COSINE + 1),
	E("method", method, method_name, GC_PM_THREE_PHASE + 1),
	F("rows", GC_FIELD_INT64, GC_PLACE_TOP, rows),
	F("null_rows", GC_FIELD_INT64, GC_PLACE_TOP, null_rows),
	F("iterations", GC_FIELD_INT32, GC_PLACE_TOP, iterations),
	E("improve", improvement, improve_name, GC_PM_IMPROVE_FULL + 1),
	F("swaps", GC_FIELD_INT32, GC_PLACE_TOP, swaps),
	F("converged", GC_FIELD_BOOL, GC_PLACE_TOP, converged),
	F("objective", GC_FIELD_DOUBLE, GC_PLACE_TOP, objective),
	{"capacity", GC_FIELD_OPTIONAL, GC_PLACE_TOP, offsetof(PmedianModel, capacity), NULL, 0, 0, 1},
	F("violation", GC_FIELD_DOUBLE, GC_PLACE_TOP, violation),
	E("capacity_mode", hard_capacity, capacity_mode_name, 2),
	F("repair_cost", GC_FIELD_SIGNED, GC_PLACE_TOP, repair_cost),
	E("device", device, device_name, 2),
	E("device_reason", device_reason, gc_device_reason_name, GC_REASON_COUNT),
	E("path", path, gc_fit_path_name, GC_PATH_COUNT),
	F("collect", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, collect_ms),
	F("transfer", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, transfer_ms),
	F("seeding", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, seeding_ms),
	F("sample", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, sample_ms),
	F("global", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, global_ms),
	F("small", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, small_ms),
	F("location", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, location_ms),
	F("improve", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, improve_ms),
	F("repair", GC_FIELD_DOUBLE, GC_PLACE_TIMINGS, repair_ms),
};

static const GcModelType model_type = {MODEL_TYPE, model_fields, lengthof(model_fields)};

static void
check_model_shape(int64 p, int64 d)
{
	if (p < 1 || d < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a p-median model needs at least one medoid of at least one dimension"),
				 errdetail("It has %lld medoids of dimension %lld.", (long long) p, (long long) d)));
	if (p > GC_MAX_K || d > GC_MAX_DIM ||
		PmedianModelBytes(p, d) > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a p-median model of %lld medoids in %lld dimensions is too large",
						(long long) p, (long long) d),
				 errhint("A model must stay under 1 GB: reduce p or the dimension.")));
}

/*
 * Allocate a zeroed model of p medoids of dimension d
 */
PmedianModel *
gc_pmedian_model_alloc(int p, int d)
{
	PmedianModel *m;

	check_model_shape(p, d);
	m = palloc0(PmedianModelBytes(p, d));
	SET_VARSIZE(m, PmedianModelBytes(p, d));
	m->version = PMEDIAN_MODEL_VERSION;
	m->p = p;
	m->d = d;
	return m;
}

/*
 * The one validation of a model, whoever made it: every field within its
 * rule, penalties finite and not negative, medoids finite and within
 * GC_MAX_MAGNITUDE (as a fit's rows are, so that distances stay finite)
 */
void
gc_pmedian_model_check(PmedianModel *m, int errcode_value)
{
	gc_model_fields_check(&model_type, m, errcode_value);
	if (m->p_requested == 0)
		m->p_requested = m->p;
	if (m->p_requested < m->p)
		gc_model_value_error(MODEL_TYPE, errcode_value,
							 "The field \"p_requested\" must be at least p.");
	gc_model_check_doubles(MODEL_TYPE, "penalties", PmedianModelPenalties(m), m->p,
						   DBL_MAX, true, errcode_value);
	gc_model_check_doubles(MODEL_TYPE, "medoids", PmedianModelMedoids(m),
						   (size_t) m->p * m->d, GC_MAX_MAGNITUDE, false, errcode_value);
}

/* The text form, with or without the medoids' coordinates */
static char *
model_text(const PmedianModel *m, bool with_medoids)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"p\": %d, \"d\": %d", m->p, m->d);
	gc_model_fields_out(&buf, &model_type, m);
	gc_model_int64s_out(&buf, "medoid_ids", PmedianModelIds(m), m->p);
	gc_model_doubles_out(&buf, "penalties", PmedianModelPenalties(m), m->p);
	if (with_medoids)
		gc_model_matrix_out(&buf, "medoids", PmedianModelMedoids(m), m->p, m->d);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

Datum
gpuclust_pmedian_model_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(model_text(PG_GETARG_PMEDIAN_MODEL(0), true));
}

/*
 * pmedian_model::jsonb: the value of the text form's cast, built without
 * parsing the medoids' coordinates as text, so that a cancel stops it
 * (gc_model_jsonb)
 */
Datum
gpuclust_pmedian_model_jsonb(PG_FUNCTION_ARGS)
{
	PmedianModel *m = PG_GETARG_PMEDIAN_MODEL(0);

	PG_RETURN_JSONB_P(gc_model_jsonb(model_text(m, false), "medoids",
									 PmedianModelMedoids(m), m->p, m->d));
}

/*
 * pmedian_model_info(model) -> jsonb: the text form's fields but the
 * medoids' coordinates (model::jsonb - 'medoids', without writing p x d
 * values as text)
 */
Datum
gpuclust_pmedian_model_info(PG_FUNCTION_ARGS)
{
	char	   *text = model_text(PG_GETARG_PMEDIAN_MODEL(0), false);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/*
 * Text form to model: the shape and the arrays' lengths are checked
 * before anything of the model's size is allocated; penalties may be
 * left out (zero)
 */
Datum
gpuclust_pmedian_model_in(PG_FUNCTION_ARGS)
{
	JsonbContainer *obj = gc_model_object(PG_GETARG_CSTRING(0), MODEL_TYPE);
	int			p = gc_model_shape_in(obj, MODEL_TYPE, "p");
	int			d = gc_model_shape_in(obj, MODEL_TYPE, "d");
	JsonbContainer *ids,
			   *penalties,
			   *medoids;
	PmedianModel *m;

	check_model_shape(p, d);
	ids = gc_model_array_in(obj, MODEL_TYPE, "medoid_ids", p, -1, true);
	penalties = gc_model_array_in(obj, MODEL_TYPE, "penalties", p, -1, false);
	medoids = gc_model_array_in(obj, MODEL_TYPE, "medoids", p, d, true);
	m = gc_pmedian_model_alloc(p, d);
	gc_model_fields_in(obj, &model_type, m);
	gc_model_int64s_in(ids, MODEL_TYPE, "medoid_ids", PmedianModelIds(m), p);
	if (penalties != NULL)
		gc_model_doubles_in(penalties, MODEL_TYPE, "penalties", PmedianModelPenalties(m), p);
	gc_model_matrix_in(medoids, MODEL_TYPE, "medoids", PmedianModelMedoids(m), p, d);
	gc_pmedian_model_check(m, ERRCODE_INVALID_TEXT_REPRESENTATION);
	PG_RETURN_POINTER(m);
}

Datum
gpuclust_pmedian_model_send(PG_FUNCTION_ARGS)
{
	PmedianModel *m = PG_GETARG_PMEDIAN_MODEL(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, PMEDIAN_MODEL_VERSION);
	pq_sendint32(&buf, m->p);
	pq_sendint32(&buf, m->d);
	gc_model_fields_send(&buf, &model_type, m);
	gc_model_int64s_send(&buf, PmedianModelIds(m), m->p);
	gc_model_doubles_send(&buf, PmedianModelPenalties(m), m->p);
	gc_model_doubles_send(&buf, PmedianModelMedoids(m), (size_t) m->p * m->d);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * Binary form to model: the fields are read into a header first, and the
 * length checked against the shape before the model is allocated
 */
Datum
gpuclust_pmedian_model_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			p,
				d,
				version;
	PmedianModel header;
	PmedianModel *m;

	version = gc_model_shape_recv(buf, MODEL_TYPE, PMEDIAN_MODEL_OLDEST_VERSION,
								  PMEDIAN_MODEL_VERSION, &p, &d);
	check_model_shape(p, d);
	memset(&header, 0, sizeof(header));
	gc_model_fields_recv(buf, &model_type, &header, version);
	gc_model_binary_length(buf, MODEL_TYPE,
						   (sizeof(int64) + sizeof(double)) * (Size) p + sizeof(double) * (Size) p * d);
	m = gc_pmedian_model_alloc(p, d);
	memcpy((char *) m + VARHDRSZ, (char *) &header + VARHDRSZ,
		   offsetof(PmedianModel, data) - VARHDRSZ);
	m->version = PMEDIAN_MODEL_VERSION;
	m->p = p;
	m->d = d;
	gc_model_int64s_recv(buf, PmedianModelIds(m), p);
	gc_model_doubles_recv(buf, PmedianModelPenalties(m), p);
	gc_model_doubles_recv(buf, PmedianModelMedoids(m), (size_t) p * d);
	gc_pmedian_model_check(m, ERRCODE_INVALID_BINARY_REPRESENTATION);
	PG_RETURN_POINTER(m);
}

/*
 * The id of the medoid nearest to the vector in argument 1, by the
 * model's metric (the first medoid on ties)
 */
static int64
predict(FunctionCallInfo fcinfo, Oid format)
{
	PmedianModel *m = (PmedianModel *) gc_detoast_arg_cached(fcinfo, 0);
	GcVectorView view;
	double	   *x;
	int			nearest;
	GcPoll		poll = {gc_interrupted, 0};

	gc_vector_view(PG_GETARG_DATUM(1), format, 1, &view);
	if (view.d != m->d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector has %d dimensions, but the model has %d", view.d, m->d)));
	x = palloc(sizeof(double) * view.d);
	gc_vector_copy(&view, x, 1);
	/* many wide medoids are a long search: cancel by work */
	nearest = gc_pmedian_nearest(x, PmedianModelMedoids(m), m->p, m->d,
								 (GcPmMetric) m->metric, NULL, &poll);
	if (nearest < 0)
	{
		GcError		err = {GC_INTERRUPTED, "interrupted while predicting"};

		gc_raise(&err);
	}
	return PmedianModelIds(m)[nearest];
}

Datum
gpuclust_pmedian_predict(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(predict(fcinfo, FLOAT8OID));
}

Datum
gpuclust_pmedian_predict_real(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(predict(fcinfo, FLOAT4OID));
}

/* vectors of any number type */
Datum
gpuclust_pmedian_predict_numeric(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(predict(fcinfo, GC_NUMERIC_ARRAY));
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_pmedian_predict_vector(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(predict(fcinfo, GC_PGVECTOR_VECTOR));
}

Datum
gpuclust_pmedian_predict_halfvec(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(predict(fcinfo, GC_PGVECTOR_HALFVEC));
}
