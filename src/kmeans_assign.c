/*-------------------------------------------------------------------------
 *
 * kmeans_assign.c
 *	  kmeans_gpu_assign(query, k, options): runs a query yielding (id,
 *	  vector) through SPI, fits k-means over its vectors, and returns every
 *	  row's cluster and distance as a relation.  The labels come from the
 *	  same run as the fit (the backend's final scoring pass), not from a
 *	  second pass of per-row predictions.
 *
 * IDENTIFICATION
 *	  src/kmeans_assign.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_assign);

/* What the query returned, row by row, in the caller's memory */
typedef struct QueryRows
{
	int64		count;
	int64		capacity;
	int64	   *ids;
	uint8	   *flags;			/* ROW_ID_NULL | ROW_VEC_NULL */
	MemoryContext cxt;			/* where ids and flags live */
	GcInput    *input;			/* where the vectors go */
	Oid			idtype;
	Oid			format;			/* of the vectors (gc_vector_format_of_type) */
} QueryRows;

#define ROW_ID_NULL 1
#define ROW_VEC_NULL 2

static void
check_query_columns(TupleDesc tupdesc, Oid *format)
{
	Oid			idtype,
				vectype;

	if (tupdesc->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query must return two columns, an id and a vector"),
				 errdetail("It returns %d columns.", tupdesc->natts)));
	idtype = SPI_gettypeid(tupdesc, 1);
	vectype = SPI_gettypeid(tupdesc, 2);
	if (idtype != INT8OID && idtype != INT4OID && idtype != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's first column must be an integer id"),
				 errdetail("It is of type %s.", format_type_be(idtype))));
	*format = gc_vector_format_of_type(vectype);
	if (!OidIsValid(*format))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's second column must be a vector: float8[], real[], integer[], bigint[], smallint[], numeric[], vector or halfvec"),
				 errdetail("It is of type %s.", format_type_be(vectype))));
}

static void
remember_row(QueryRows *qr, int64 id, uint8 flags)
{
	if (qr->count == qr->capacity)
	{
		qr->capacity = qr->capacity ? qr->capacity * 2 : 1024;
		if (qr->ids == NULL)
		{
			qr->ids = MemoryContextAllocHuge(qr->cxt, sizeof(int64) * qr->capacity);
			qr->flags = MemoryContextAllocHuge(qr->cxt, qr->capacity);
		}
		else
		{
			qr->ids = repalloc_huge(qr->ids, sizeof(int64) * qr->capacity);
			qr->flags = repalloc_huge(qr->flags, qr->capacity);
		}
	}
	qr->ids[qr->count] = id;
	qr->flags[qr->count] = flags;
	qr->count++;
}

static void
on_columns(TupleDesc tupdesc, void *arg)
{
	QueryRows  *qr = arg;

	check_query_columns(tupdesc, &qr->format);
	qr->idtype = SPI_gettypeid(tupdesc, 1);
}

/* Append the row's vector to the input and remember its id */
static void
on_row(TupleTableSlot *slot, void *arg)
{
	QueryRows  *qr = arg;
	bool		idnull,
				vecnull;
	Datum		id = slot_getattr(slot, 1, &idnull);
	Datum		vec = slot_getattr(slot, 2, &vecnull);

	if (vecnull)
		gc_input_add_null(qr->input);
	else
		gc_input_add(qr->input, vec, qr->format);
	remember_row(qr, idnull ? 0 : gc_spi_id_value(id, qr->idtype),
				 (idnull ? ROW_ID_NULL : 0) | (vecnull ? ROW_VEC_NULL : 0));
}

Datum
gpuclust_kmeans_assign(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = gc_materialize_context(fcinfo, "kmeans_gpu_assign");
	MemoryContext per_query;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	volatile double held_bytes = 0;
	GcKmeansOptions opts;
	GcInput		input;
	QueryRows	qr = {0};
	int32	   *volatile labels = NULL;
	double	   *volatile distances = NULL;
	int64		labelled = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the query and k must not be NULL")));
	per_query = rsinfo->econtext->ecxt_per_query_memory;
	gc_parse_kmeans_options(PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2),
							PG_GETARG_INT32(1), &opts);

	gc_input_init(&input);
	input.unit = opts.params.metric == GC_METRIC_COSINE;
	input.work_per_row = (double) opts.params.k * opts.params.n_init;
	PG_TRY();
	{
		double		started = gc_now_ms();

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		qr.cxt = per_query;
		qr.input = &input;
		gc_spi_for_each_row(text_to_cstring(PG_GETARG_TEXT_PP(0)), on_columns, on_row, &qr);
		SPI_finish();
		if (input.started)
		{
			labels = MemoryContextAllocHuge(per_query, sizeof(int32) * input.rows.n);
			distances = MemoryContextAllocHuge(per_query, sizeof(double) * input.rows.n);
			gc_run_kmeans(&input, &opts, gc_now_ms() - started, labels, distances);
		}
	}
	PG_FINALLY();
	{
		held_bytes = gc_input_bytes(&input);
		gc_input_release(&input);
	}
	PG_END_TRY();

	store = gc_result_store(fcinfo, rsinfo, held_bytes, &tupdesc);

	for (int64 i = 0; i < qr.count; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Int64GetDatum(qr.ids[i]);
		nulls[0] = (qr.flags[i] & ROW_ID_NULL) != 0;
		if (qr.flags[i] & ROW_VEC_NULL)
			nulls[1] = nulls[2] = true;
		else
		{
			values[1] = Int32GetDatum(labels[labelled]);
			values[2] = Float8GetDatum(distances[labelled]);
			labelled++;
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
