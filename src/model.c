/*-------------------------------------------------------------------------
 *
 * model.c
 *	  The kmeans_model type: a varlena holding k, d, the centroids, the
 *	  cluster sizes, the fit's statistics and phase timings.  Its text form
 *	  is a JSON object (so a model reads well and casts to jsonb); its
 *	  binary form is the same fields in network byte order.  Also the
 *	  functions that use a model: kmeans_predict, kmeans_distance and
 *	  kmeans_centroids.
 *
 * IDENTIFICATION
 *	  src/model.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_in);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_out);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_recv);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_model_send);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_predict_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_distance_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_centroids);

#define MODEL_TYPE "kmeans_model"

static const char *const device_names[] = {"cpu", "gpu"};

static void
check_model_shape(int64 k, int64 d)
{
	if (k < 1 || k > GC_MAX_K || d < 1 || d > GC_MAX_DIM ||
		KmeansModelBytes(k, d) > MaxAllocHugeSize - VARHDRSZ)
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
	if (!AllocSizeIsValid(bytes))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a k-means model of %d clusters in %d dimensions exceeds 1 GB", k, d),
				 errhint("Reduce k or the dimension.")));
	model = palloc0(bytes);
	SET_VARSIZE(model, bytes);
	model->version = KMEANS_MODEL_VERSION;
	model->k = k;
	model->d = d;
	return model;
}


Datum
gpuclust_kmeans_model_out(PG_FUNCTION_ARGS)
{
	KmeansModel *m = PG_GETARG_KMEANS_MODEL(0);
	int64	   *sizes = KmeansModelSizes(m);
	double	   *centroids = KmeansModelCentroids(m);
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"k\": %d, \"d\": %d, \"rows\": " INT64_FORMAT
					 ", \"null_rows\": " INT64_FORMAT ", \"iterations\": %d, \"converged\": %s, \"inertia\": ",
					 m->k, m->d, m->rows, m->null_rows, m->iterations,
					 m->converged ? "true" : "false");
	gc_model_append_float8(&buf, m->inertia);
	appendStringInfo(&buf, ", \"device\": \"%s\", \"algorithm\": \"%s\", \"kernel\": ",
					 device_names[m->device == GC_KIND_GPU], m->pruned ? "pruned" : "lloyd");
	escape_json(&buf, m->kernel);
	appendStringInfo(&buf, ", \"precision\": \"%s\", \"distances_skipped\": ",
					 gc_precision_name((GcPrecision) m->precision));
	gc_model_append_float8(&buf, m->skipped_fraction);
	if (m->partial_states > 0)
		appendStringInfo(&buf, ", \"parallel\": {\"partial_states\": %d, \"shared_memory\": %d}",
						 m->partial_states, m->shared_memory_states);
	appendStringInfoString(&buf, ", \"timings_ms\": {\"collect\": ");
	gc_model_append_float8(&buf, m->collect_ms);
	appendStringInfoString(&buf, ", \"transfer\": ");
	gc_model_append_float8(&buf, m->transfer_ms);
	appendStringInfoString(&buf, ", \"seeding\": ");
	gc_model_append_float8(&buf, m->seeding_ms);
	appendStringInfoString(&buf, ", \"iterations\": ");
	gc_model_append_float8(&buf, m->iterations_ms);
	appendStringInfoString(&buf, ", \"labeling\": ");
	gc_model_append_float8(&buf, m->labeling_ms);
	appendStringInfoString(&buf, ", \"update\": ");
	gc_model_append_float8(&buf, m->update_ms);
	appendStringInfoString(&buf, "}, \"sizes\": [");
	for (int c = 0; c < m->k; c++)
		appendStringInfo(&buf, "%s" INT64_FORMAT, c ? ", " : "", sizes[c]);
	appendStringInfoString(&buf, "], \"centroids\": [");
	for (int c = 0; c < m->k; c++)
	{
		appendStringInfoString(&buf, c ? ", [" : "[");
		for (int j = 0; j < m->d; j++)
		{
			if (j)
				appendStringInfoString(&buf, ", ");
			gc_model_append_float8(&buf, centroids[(size_t) c * m->d + j]);
		}
		appendStringInfoChar(&buf, ']');
	}
	appendStringInfoString(&buf, "]}");
	PG_RETURN_CSTRING(buf.data);
}

/*
 * Read count numbers from a JSON array into out; they must be finite
 */
static void
model_numbers(JsonbContainer *array, int count, double *out, const char *what)
{
	if (!JsonContainerIsArray(array) || JsonContainerSize(array) != (uint32) count)
		gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must be an array of %d elements.", what, count));
	for (int i = 0; i < count; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(array, i);

		if (v == NULL || v->type != jbvNumeric)
			gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must hold numbers.", what));
		out[i] = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
													NumericGetDatum(v->val.numeric)));
		if (!isfinite(out[i]) || fabs(out[i]) > GC_MAX_MAGNITUDE)
			gc_model_text_error(MODEL_TYPE, psprintf("The field \"%s\" must hold finite numbers of magnitude at most %g.",
									what, GC_MAX_MAGNITUDE));
	}
}

Datum
gpuclust_kmeans_model_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(str)));
	JsonbContainer *obj = &jb->root;
	JsonbValue *v;
	KmeansModel *m;
	int64		k,
				d;
	double	   *row;

	if (!JB_ROOT_IS_OBJECT(jb))
		gc_model_text_error(MODEL_TYPE, "A model is a JSON object.");
	k = gc_model_count(obj, MODEL_TYPE, "k", true);
	d = gc_model_count(obj, MODEL_TYPE, "d", true);
	if (k < 1 || d < 1)
		gc_model_text_error(MODEL_TYPE, "The fields \"k\" and \"d\" must be at least 1.");
	check_model_shape(k, d);
	m = gc_model_alloc((int) k, (int) d);
	m->rows = gc_model_count(obj, MODEL_TYPE, "rows", false);
	m->null_rows = gc_model_count(obj, MODEL_TYPE, "null_rows", false);
	m->iterations = (int32) Min(gc_model_count(obj, MODEL_TYPE, "iterations", false), PG_INT32_MAX);
	m->inertia = gc_model_number(obj, MODEL_TYPE, "inertia", false);
	v = gc_model_field(obj, MODEL_TYPE, "converged", jbvBool, false);
	m->converged = v ? v->val.boolean : false;
	v = gc_model_field(obj, MODEL_TYPE, "device", jbvString, false);
	m->device = (v && v->val.string.len == 3 && strncmp(v->val.string.val, "gpu", 3) == 0)
		? GC_KIND_GPU : GC_KIND_CPU;
	v = gc_model_field(obj, MODEL_TYPE, "algorithm", jbvString, false);
	m->pruned = v && v->val.string.len == 6 && strncmp(v->val.string.val, "pruned", 6) == 0;
	v = gc_model_field(obj, MODEL_TYPE, "kernel", jbvString, false);
	if (v)
		strlcpy(m->kernel, pnstrdup(v->val.string.val, v->val.string.len), sizeof(m->kernel));
	v = gc_model_field(obj, MODEL_TYPE, "precision", jbvString, false);
	for (int p = GC_PRECISION_FLOAT32; v && p <= GC_PRECISION_BF16; p++)
		if (strlen(gc_precision_name((GcPrecision) p)) == (size_t) v->val.string.len &&
			strncmp(gc_precision_name((GcPrecision) p), v->val.string.val, v->val.string.len) == 0)
			m->precision = p;
	m->skipped_fraction = gc_model_number(obj, MODEL_TYPE, "distances_skipped", false);
	v = gc_model_field(obj, MODEL_TYPE, "parallel", jbvBinary, false);
	if (v && JsonContainerIsObject(v->val.binary.data))
	{
		m->partial_states = (int16) Min(gc_model_count(v->val.binary.data, MODEL_TYPE, "partial_states", false), PG_INT16_MAX);
		m->shared_memory_states = (int16) Min(gc_model_count(v->val.binary.data, MODEL_TYPE, "shared_memory", false), m->partial_states);
	}
	v = gc_model_field(obj, MODEL_TYPE, "timings_ms", jbvBinary, false);
	if (v && JsonContainerIsObject(v->val.binary.data))
	{
		m->collect_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "collect", false);
		m->transfer_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "transfer", false);
		m->seeding_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "seeding", false);
		m->iterations_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "iterations", false);
		m->labeling_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "labeling", false);
		m->update_ms = gc_model_number(v->val.binary.data, MODEL_TYPE, "update", false);
	}

	row = palloc(sizeof(double) * Max(k, d));
	v = gc_model_field(obj, MODEL_TYPE, "sizes", jbvBinary, true);
	model_numbers(v->val.binary.data, (int) k, row, "sizes");
	for (int c = 0; c < k; c++)
	{
		if (row[c] < 0 || row[c] != floor(row[c]))
			gc_model_text_error(MODEL_TYPE, "The field \"sizes\" must hold non-negative integers.");
		KmeansModelSizes(m)[c] = (int64) row[c];
	}
	v = gc_model_field(obj, MODEL_TYPE, "centroids", jbvBinary, true);
	if (!JsonContainerIsArray(v->val.binary.data) ||
		JsonContainerSize(v->val.binary.data) != (uint32) k)
		gc_model_text_error(MODEL_TYPE, psprintf("The field \"centroids\" must be an array of %d centroids.", (int) k));
	for (int c = 0; c < k; c++)
	{
		JsonbValue *centroid = getIthJsonbValueFromContainer(v->val.binary.data, c);

		if (centroid->type != jbvBinary)
			gc_model_text_error(MODEL_TYPE, "Each centroid must be an array of numbers.");
		model_numbers(centroid->val.binary.data, (int) d,
					  KmeansModelCentroids(m) + (size_t) c * d, "centroids");
	}
	PG_RETURN_POINTER(m);
}

Datum
gpuclust_kmeans_model_send(PG_FUNCTION_ARGS)
{
	KmeansModel *m = PG_GETARG_KMEANS_MODEL(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, m->version);
	pq_sendint16(&buf, m->device);
	pq_sendint32(&buf, m->k);
	pq_sendint32(&buf, m->d);
	pq_sendint32(&buf, m->iterations);
	pq_sendint32(&buf, m->converged);
	pq_sendint64(&buf, m->rows);
	pq_sendint64(&buf, m->null_rows);
	pq_sendfloat8(&buf, m->inertia);
	pq_sendfloat8(&buf, m->collect_ms);
	pq_sendfloat8(&buf, m->transfer_ms);
	pq_sendfloat8(&buf, m->seeding_ms);
	pq_sendfloat8(&buf, m->iterations_ms);
	pq_sendfloat8(&buf, m->labeling_ms);
	pq_sendfloat8(&buf, m->update_ms);
	pq_sendint16(&buf, m->precision);
	pq_sendint16(&buf, m->pruned);
	pq_sendfloat8(&buf, m->skipped_fraction);
	pq_sendbytes(&buf, m->kernel, sizeof(m->kernel));
	for (int c = 0; c < m->k; c++)
		pq_sendint64(&buf, KmeansModelSizes(m)[c]);
	for (size_t i = 0; i < (size_t) m->k * m->d; i++)
		pq_sendfloat8(&buf, KmeansModelCentroids(m)[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
gpuclust_kmeans_model_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			version = pq_getmsgint(buf, 2);
	int			device = pq_getmsgint(buf, 2);
	int			k = (int32) pq_getmsgint(buf, 4);
	int			d = (int32) pq_getmsgint(buf, 4);
	KmeansModel *m;

	if (version != KMEANS_MODEL_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("unsupported kmeans_model version %d", version)));
	check_model_shape(k, d);
	if ((Size) (buf->len - buf->cursor) != 2 * sizeof(int32) + 9 * sizeof(int64) +
		2 * sizeof(int16) + sizeof(double) + sizeof(m->kernel) +
		sizeof(int64) * k + sizeof(double) * (Size) k * d)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("kmeans_model binary value has the wrong length")));
	m = gc_model_alloc(k, d);
	m->device = device == GC_KIND_GPU ? GC_KIND_GPU : GC_KIND_CPU;
	m->iterations = pq_getmsgint(buf, 4);
	m->converged = pq_getmsgint(buf, 4) != 0;
	m->rows = pq_getmsgint64(buf);
	m->null_rows = pq_getmsgint64(buf);
	m->inertia = pq_getmsgfloat8(buf);
	m->collect_ms = pq_getmsgfloat8(buf);
	m->transfer_ms = pq_getmsgfloat8(buf);
	m->seeding_ms = pq_getmsgfloat8(buf);
	m->iterations_ms = pq_getmsgfloat8(buf);
	m->labeling_ms = pq_getmsgfloat8(buf);
	m->update_ms = pq_getmsgfloat8(buf);
	m->precision = pq_getmsgint(buf, 2);
	if (m->precision < GC_PRECISION_FLOAT32 || m->precision > GC_PRECISION_BF16)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("kmeans_model binary value has an unknown precision")));
	m->pruned = pq_getmsgint(buf, 2) != 0;
	m->skipped_fraction = pq_getmsgfloat8(buf);
	pq_copymsgbytes(buf, m->kernel, sizeof(m->kernel));
	m->kernel[sizeof(m->kernel) - 1] = '\0';
	for (int c = 0; c < k; c++)
		KmeansModelSizes(m)[c] = pq_getmsgint64(buf);
	for (size_t i = 0; i < (size_t) k * d; i++)
	{
		double		x = pq_getmsgfloat8(buf);

		if (!isfinite(x) || fabs(x) > GC_MAX_MAGNITUDE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("kmeans_model binary value holds a non-finite or out-of-range centroid")));
		KmeansModelCentroids(m)[i] = x;
	}
	PG_RETURN_POINTER(m);
}

/*
 * Nearest centroid of the vector in argument 1, and its squared distance
 */
static int
nearest_of_arg(FunctionCallInfo fcinfo, Oid elemtype, double *distance2)
{
	KmeansModel *m = PG_GETARG_KMEANS_MODEL(0);
	GcVectorView view;
	double	   *x;

	gc_vector_view(PG_GETARG_DATUM(1), elemtype, 1, &view);
	if (view.d != m->d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector has %d dimensions, but the model has %d", view.d, m->d)));
	x = palloc(sizeof(double) * view.d);
	gc_vector_copy(&view, x, 1);
	return gc_nearest_centroid(x, KmeansModelCentroids(m), m->k, view.d, distance2);
}

Datum
gpuclust_kmeans_predict(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(nearest_of_arg(fcinfo, FLOAT8OID, NULL));
}

Datum
gpuclust_kmeans_predict_real(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(nearest_of_arg(fcinfo, FLOAT4OID, NULL));
}

Datum
gpuclust_kmeans_distance(PG_FUNCTION_ARGS)
{
	double		d2;

	nearest_of_arg(fcinfo, FLOAT8OID, &d2);
	PG_RETURN_FLOAT8(sqrt(d2));
}

Datum
gpuclust_kmeans_distance_real(PG_FUNCTION_ARGS)
{
	double		d2;

	nearest_of_arg(fcinfo, FLOAT4OID, &d2);
	PG_RETURN_FLOAT8(sqrt(d2));
}

/*
 * kmeans_centroids(model) -> TABLE(cluster int, centroid float8[], size bigint)
 */
Datum
gpuclust_kmeans_centroids(PG_FUNCTION_ARGS)
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
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		for (int j = 0; j < m->d; j++)
			elems[j] = Float8GetDatum(KmeansModelCentroids(m)[(size_t) c * m->d + j]);
		values[0] = Int32GetDatum(c);
		values[1] = PointerGetDatum(construct_array(elems, m->d, FLOAT8OID,
													sizeof(float8), FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		values[2] = Int64GetDatum(KmeansModelSizes(m)[c]);
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	}
	SRF_RETURN_DONE(funcctx);
}
