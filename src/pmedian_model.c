/*-------------------------------------------------------------------------
 *
 * pmedian_model.c
 *	  The pmedian_model type: a varlena holding p, d, the medoids' ids and
 *	  vectors, their penalty multipliers, the objective, the capacity
 *	  violation, statistics and phase timings.  Its text form is a JSON
 *	  object (it casts to jsonb), its binary form the same fields in
 *	  network byte order.  Also pmedian_predict.
 *
 * IDENTIFICATION
 *	  src/pmedian_model.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_in);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_out);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_recv);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_model_send);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_predict_real);

/* The model's doubles after the header, in text and binary order */
#define MODEL_FLOATS 13

/* The first of them that is a timing */
#define FIRST_TIMING 4

#define MODEL_TYPE "pmedian_model"

static double *
model_floats(PmedianModel *m, const char **names)
{
	static const char *const field_names[MODEL_FLOATS] = {
		"objective", "violation", "capacity", "repair_cost", "collect", "transfer",
		"seeding", "sample", "global", "small", "location", "improve", "repair"
	};

	if (names)
		memcpy(names, field_names, sizeof(field_names));
	return &m->objective;
}

static void
check_model_shape(int64 p, int64 d)
{
	if (p < 1 || d < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a p-median model needs at least one medoid of at least one dimension"),
				 errdetail("It has %lld medoids of dimension %lld.", (long long) p, (long long) d)));
	if (p > GC_MAX_K || d > GC_MAX_DIM ||
		!AllocSizeIsValid(PmedianModelBytes(p, d)))
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


Datum
gpuclust_pmedian_model_out(PG_FUNCTION_ARGS)
{
	PmedianModel *m = PG_GETARG_PMEDIAN_MODEL(0);
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"p\": %d, \"d\": %d, \"metric\": \"%s\", \"method\": \"%s\", "
					 "\"rows\": " INT64_FORMAT ", \"null_rows\": " INT64_FORMAT
					 ", \"iterations\": %d, \"improve\": \"%s\", \"swaps\": %d, \"converged\": %s, \"objective\": ",
					 m->p, m->d, gc_pmedian_metric_name(m->metric),
					 gc_pmedian_method_name(m->method), m->rows, m->null_rows,
					 m->iterations, gc_pmedian_improve_name(m->improvement), m->swaps,
					 m->converged ? "true" : "false");
	gc_model_append_float8(&buf, m->objective);
	appendStringInfoString(&buf, ", \"capacity\": ");
	if (m->capacitated)
		gc_model_append_float8(&buf, m->capacity);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfoString(&buf, ", \"violation\": ");
	gc_model_append_float8(&buf, m->violation);
	appendStringInfo(&buf, ", \"capacity_mode\": %s, \"repair_cost\": ",
					 !m->capacitated ? "null" : m->hard_capacity ? "\"hard\"" : "\"soft\"");
	gc_model_append_float8(&buf, m->repair_cost);
	appendStringInfo(&buf, ", \"device\": \"%s\", \"timings_ms\": {",
					 m->device == GC_KIND_GPU ? "gpu" : "cpu");
	{
		const char *names[MODEL_FLOATS];
		double	   *f = model_floats(m, names);

		for (int i = FIRST_TIMING; i < MODEL_FLOATS; i++)
		{
			appendStringInfo(&buf, "%s\"%s\": ", i > FIRST_TIMING ? ", " : "", names[i]);
			gc_model_append_float8(&buf, f[i]);
		}
	}
	appendStringInfoString(&buf, "}, \"medoid_ids\": [");
	for (int k = 0; k < m->p; k++)
		appendStringInfo(&buf, "%s" INT64_FORMAT, k ? ", " : "", PmedianModelIds(m)[k]);
	appendStringInfoString(&buf, "], \"penalties\": [");
	for (int k = 0; k < m->p; k++)
	{
		if (k)
			appendStringInfoString(&buf, ", ");
		gc_model_append_float8(&buf, PmedianModelPenalties(m)[k]);
	}
	appendStringInfoString(&buf, "], \"medoids\": [");
	for (int k = 0; k < m->p; k++)
	{
		appendStringInfoString(&buf, k ? ", [" : "[");
		for (int j = 0; j < m->d; j++)
		{
			if (j)
				appendStringInfoString(&buf, ", ");
			gc_model_append_float8(&buf, PmedianModelMedoids(m)[(size_t) k * m->d + j]);
		}
		appendStringInfoChar(&buf, ']');
	}
	appendStringInfoString(&buf, "]}");
	PG_RETURN_CSTRING(buf.data);
}

static double
numeric_value(JsonbValue *v, const char *name)
{
	double		x;

	if (v == NULL || v->type != jbvNumeric)
		gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must hold numbers.", name));
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (!isfinite(x))
		gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must hold finite numbers.", name));
	return x;
}

/* An array of count elements, or an error */
static JsonbContainer *
model_array(JsonbContainer *obj, const char *name, int count)
{
	JsonbValue *v = gc_model_field(obj, MODEL_TYPE, name, jbvBinary, true);

	if (!JsonContainerIsArray(v->val.binary.data) ||
		JsonContainerSize(v->val.binary.data) != (uint32) count)
		gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must be an array of %d elements.", name, count));
	return v->val.binary.data;
}

static int
model_name(JsonbContainer *obj, const char *field, const char *(*name_of) (int), int count)
{
	JsonbValue *v = gc_model_field(obj, MODEL_TYPE, field, jbvString, false);

	if (v == NULL)
		return 0;
	for (int i = 0; i < count; i++)
		if (strlen(name_of(i)) == (size_t) v->val.string.len &&
			strncmp(v->val.string.val, name_of(i), v->val.string.len) == 0)
			return i;
	gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" is not a known name.", field));
	return 0;
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

/*
 * Read the medoid ids, penalties and vectors of a model's text form
 */
static void
read_medoids(JsonbContainer *obj, PmedianModel *m)
{
	JsonbContainer *ids = model_array(obj, "medoid_ids", m->p);
	JsonbContainer *vecs = model_array(obj, "medoids", m->p);
	JsonbValue *pen = gc_model_field(obj, MODEL_TYPE, "penalties", jbvBinary, false);

	for (int k = 0; k < m->p; k++)
	{
		JsonbValue *id = getIthJsonbValueFromContainer(ids, k);
		JsonbValue *vec = getIthJsonbValueFromContainer(vecs, k);
		double		x = numeric_value(id, "medoid_ids");

		if (x != floor(x) || fabs(x) > 9.2e18)
			gc_model_text_error(MODEL_TYPE, "The field \"medoid_ids\" must hold integers.");
		PmedianModelIds(m)[k] = DatumGetInt64(DirectFunctionCall1(numeric_int8,
																  NumericGetDatum(id->val.numeric)));
		if (vec->type != jbvBinary || !JsonContainerIsArray(vec->val.binary.data) ||
			JsonContainerSize(vec->val.binary.data) != (uint32) m->d)
			gc_model_text_error(MODEL_TYPE, psprintf("Each medoid must be an array of %d numbers.", m->d));
		for (int j = 0; j < m->d; j++)
			PmedianModelMedoids(m)[(size_t) k * m->d + j] =
				numeric_value(getIthJsonbValueFromContainer(vec->val.binary.data, j), "medoids");
	}
	if (pen != NULL)
	{
		JsonbContainer *pens = model_array(obj, "penalties", m->p);

		for (int k = 0; k < m->p; k++)
			PmedianModelPenalties(m)[k] =
				numeric_value(getIthJsonbValueFromContainer(pens, k), "penalties");
	}
}

Datum
gpuclust_pmedian_model_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(str)));
	JsonbContainer *obj = &jb->root;
	JsonbValue *v;
	PmedianModel *m;
	int64		p,
				d;

	if (!JB_ROOT_IS_OBJECT(jb))
		gc_model_text_error(MODEL_TYPE, "A model is a JSON object.");
	p = gc_model_count(obj, MODEL_TYPE, "p", true);
	d = gc_model_count(obj, MODEL_TYPE, "d", true);
	check_model_shape(p, d);
	m = gc_pmedian_model_alloc((int) p, (int) d);
	m->metric = model_name(obj, "metric", metric_name, 4);
	m->method = model_name(obj, "method", method_name, 3);
	m->improvement = model_name(obj, "improve", improve_name, GC_PM_IMPROVE_FULL + 1);
	m->hard_capacity = model_name(obj, "capacity_mode", capacity_mode_name, 2);
	m->repair_cost = gc_model_number(obj, MODEL_TYPE, "repair_cost", false);
	m->rows = gc_model_count(obj, MODEL_TYPE, "rows", false);
	m->null_rows = gc_model_count(obj, MODEL_TYPE, "null_rows", false);
	m->iterations = (int32) Min(gc_model_count(obj, MODEL_TYPE, "iterations", false), PG_INT32_MAX);
	m->swaps = (int32) Min(gc_model_count(obj, MODEL_TYPE, "swaps", false), PG_INT32_MAX);
	v = gc_model_field(obj, MODEL_TYPE, "converged", jbvBool, false);
	m->converged = v ? v->val.boolean : false;
	m->objective = gc_model_number(obj, MODEL_TYPE, "objective", false);
	m->violation = gc_model_number(obj, MODEL_TYPE, "violation", false);
	m->capacity = gc_model_number(obj, MODEL_TYPE, "capacity", false);
	m->capacitated = gc_model_field(obj, MODEL_TYPE, "capacity", jbvNumeric, false) != NULL;
	v = gc_model_field(obj, MODEL_TYPE, "device", jbvString, false);
	m->device = (v && v->val.string.len == 3 && strncmp(v->val.string.val, "gpu", 3) == 0)
		? GC_KIND_GPU : GC_KIND_CPU;
	v = gc_model_field(obj, MODEL_TYPE, "timings_ms", jbvBinary, false);
	if (v && JsonContainerIsObject(v->val.binary.data))
	{
		const char *names[MODEL_FLOATS];
		double	   *f = model_floats(m, names);

		for (int i = FIRST_TIMING; i < MODEL_FLOATS; i++)
			f[i] = gc_model_number(v->val.binary.data, MODEL_TYPE, names[i], false);
	}
	read_medoids(obj, m);
	PG_RETURN_POINTER(m);
}

Datum
gpuclust_pmedian_model_send(PG_FUNCTION_ARGS)
{
	PmedianModel *m = PG_GETARG_PMEDIAN_MODEL(0);
	double	   *f = model_floats(m, NULL);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, m->version);
	pq_sendint16(&buf, m->device);
	pq_sendint16(&buf, m->metric);
	pq_sendint16(&buf, m->method);
	pq_sendint16(&buf, m->improvement);
	pq_sendint16(&buf, m->hard_capacity);
	pq_sendint32(&buf, m->p);
	pq_sendint32(&buf, m->d);
	pq_sendint32(&buf, m->iterations);
	pq_sendint32(&buf, m->swaps);
	pq_sendint32(&buf, m->converged);
	pq_sendint32(&buf, m->capacitated);
	pq_sendint64(&buf, m->rows);
	pq_sendint64(&buf, m->null_rows);
	for (int i = 0; i < MODEL_FLOATS; i++)
		pq_sendfloat8(&buf, f[i]);
	for (int k = 0; k < m->p; k++)
		pq_sendint64(&buf, PmedianModelIds(m)[k]);
	for (int k = 0; k < m->p; k++)
		pq_sendfloat8(&buf, PmedianModelPenalties(m)[k]);
	for (size_t i = 0; i < (size_t) m->p * m->d; i++)
		pq_sendfloat8(&buf, PmedianModelMedoids(m)[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
gpuclust_pmedian_model_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			version = pq_getmsgint(buf, 2);
	int			device = pq_getmsgint(buf, 2);
	int			metric = pq_getmsgint(buf, 2);
	int			method = pq_getmsgint(buf, 2);
	int			improvement = pq_getmsgint(buf, 2);
	int			hard_capacity = pq_getmsgint(buf, 2);
	int			p = (int32) pq_getmsgint(buf, 4);
	int			d = (int32) pq_getmsgint(buf, 4);
	PmedianModel *m;
	double	   *f;

	if (version != PMEDIAN_MODEL_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("unsupported pmedian_model version %d", version)));
	if (metric < 0 || metric > GC_PM_COSINE || method < 0 || method > GC_PM_THREE_PHASE ||
		improvement < 0 || improvement > GC_PM_IMPROVE_FULL || hard_capacity < 0 || hard_capacity > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("pmedian_model binary value has an unknown metric or method")));
	check_model_shape(p, d);
	if ((Size) (buf->len - buf->cursor) != 4 * sizeof(int32) + 2 * sizeof(int64) +
		MODEL_FLOATS * sizeof(double) + (sizeof(int64) + sizeof(double)) * (Size) p +
		sizeof(double) * (Size) p * d)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("pmedian_model binary value has the wrong length")));
	m = gc_pmedian_model_alloc(p, d);
	m->device = device == GC_KIND_GPU ? GC_KIND_GPU : GC_KIND_CPU;
	m->metric = metric;
	m->method = method;
	m->improvement = improvement;
	m->hard_capacity = hard_capacity;
	m->iterations = pq_getmsgint(buf, 4);
	m->swaps = pq_getmsgint(buf, 4);
	m->converged = pq_getmsgint(buf, 4) != 0;
	m->capacitated = pq_getmsgint(buf, 4) != 0;
	m->rows = pq_getmsgint64(buf);
	m->null_rows = pq_getmsgint64(buf);
	f = model_floats(m, NULL);
	for (int i = 0; i < MODEL_FLOATS; i++)
		f[i] = pq_getmsgfloat8(buf);
	for (int k = 0; k < p; k++)
		PmedianModelIds(m)[k] = pq_getmsgint64(buf);
	for (int k = 0; k < p; k++)
		PmedianModelPenalties(m)[k] = pq_getmsgfloat8(buf);
	for (size_t i = 0; i < (size_t) p * d; i++)
	{
		double		x = pq_getmsgfloat8(buf);

		if (!isfinite(x))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("pmedian_model binary value holds a non-finite medoid")));
		PmedianModelMedoids(m)[i] = x;
	}
	PG_RETURN_POINTER(m);
}

/*
 * The id of the medoid nearest to the vector in argument 1, by the
 * model's metric (the first medoid on ties)
 */
static int64
predict(FunctionCallInfo fcinfo, Oid elemtype)
{
	PmedianModel *m = PG_GETARG_PMEDIAN_MODEL(0);
	GcVectorView view;
	double	   *x;

	gc_vector_view(PG_GETARG_DATUM(1), elemtype, 1, &view);
	if (view.d != m->d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector has %d dimensions, but the model has %d", view.d, m->d)));
	x = palloc(sizeof(double) * view.d);
	gc_vector_copy(&view, x, 1);
	return PmedianModelIds(m)[gc_pmedian_nearest(x, PmedianModelMedoids(m), m->p,
												 m->d, (GcPmMetric) m->metric, NULL)];
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
