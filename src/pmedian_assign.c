/*-------------------------------------------------------------------------
 *
 * pmedian_assign.c
 *	  pmedian_gpu_assign(query, p, options): runs a query yielding (id,
 *	  vector) or (id, vector, demand) through SPI, solves the p-median
 *	  problem over its rows, and returns every row's medoid id and distance
 *	  as a relation.  The allocation is the fit's own final one (penalised
 *	  when a capacity is given), not a second pass of predictions.
 *
 * IDENTIFICATION
 *	  src/pmedian_assign.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_assign);

#define FETCH_ROWS 10000

/* The query's column types, checked once */
typedef struct QueryShape
{
	Oid			idtype;
	Oid			elemtype;
	bool		with_demand;
} QueryShape;

static void
check_query_columns(TupleDesc tupdesc, QueryShape *shape)
{
	Oid			vectype;

	if (tupdesc->natts != 2 && tupdesc->natts != 3)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query must return an id, a vector and optionally a demand"),
				 errdetail("It returns %d columns.", tupdesc->natts)));
	shape->idtype = SPI_gettypeid(tupdesc, 1);
	vectype = SPI_gettypeid(tupdesc, 2);
	if (shape->idtype != INT8OID && shape->idtype != INT4OID && shape->idtype != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's first column must be an integer id"),
				 errdetail("It is of type %s.", format_type_be(shape->idtype))));
	if (vectype == FLOAT8ARRAYOID)
		shape->elemtype = FLOAT8OID;
	else if (vectype == FLOAT4ARRAYOID)
		shape->elemtype = FLOAT4OID;
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's second column must be float8[] or real[]"),
				 errdetail("It is of type %s.", format_type_be(vectype))));
	shape->with_demand = tupdesc->natts == 3;
	if (shape->with_demand && SPI_gettypeid(tupdesc, 3) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's third column must be a float8 demand"),
				 errdetail("It is of type %s.", format_type_be(SPI_gettypeid(tupdesc, 3)))));
}

static int64
id_value(Datum id, Oid idtype)
{
	return idtype == INT8OID ? DatumGetInt64(id) :
		idtype == INT4OID ? DatumGetInt32(id) : DatumGetInt16(id);
}

/*
 * Run the query through a cursor into in (started on the first batch,
 * once the shape is known); rows with a NULL vector are kept in
 * null_ids for the result
 */
static void
collect_query(const char *query, PmInput *in, MemoryContext cxt,
			  int64 **null_ids, int64 *nnull)
{
	MemoryContext batch = AllocSetContextCreate(CurrentMemoryContext,
												"gpuclust pmedian assign batch",
												ALLOCSET_DEFAULT_SIZES);
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	Portal		portal;
	QueryShape	shape;
	int64		null_capacity = 0;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	check_query_columns(portal->tupDesc, &shape);
	if (shape.with_demand != in->with_demand)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(in->with_demand ? "option \"capacity\" needs a demand column"
						: "a demand column needs option \"capacity\""),
				 errhint("Return (id, vector, demand) from the query and give a capacity, or neither.")));
	for (;;)
	{
		MemoryContext oldcontext;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		oldcontext = MemoryContextSwitchTo(batch);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		idnull,
						vecnull,
						qnull = false;
			Datum		id = SPI_getbinval(tuple, desc, 1, &idnull);
			Datum		vec = SPI_getbinval(tuple, desc, 2, &vecnull);
			Datum		q = shape.with_demand ? SPI_getbinval(tuple, desc, 3, &qnull) : (Datum) 0;

			gc_pm_input_add(in, idnull, idnull ? 0 : id_value(id, shape.idtype),
							vecnull ? (Datum) 0 : vec, shape.elemtype, qnull,
							shape.with_demand && !qnull ? DatumGetFloat8(q) : 0.0);
			if (vecnull)
			{
				if (*nnull == null_capacity)
				{
					null_capacity = null_capacity ? 2 * null_capacity : 64;
					*null_ids = *null_ids == NULL
						? MemoryContextAllocHuge(cxt, sizeof(int64) * null_capacity)
						: repalloc_huge(*null_ids, sizeof(int64) * null_capacity);
				}
				(*null_ids)[(*nnull)++] = id_value(id, shape.idtype);
			}
		}
		MemoryContextSwitchTo(oldcontext);
		MemoryContextReset(batch);
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	MemoryContextDelete(batch);
}

Datum
gpuclust_pmedian_assign(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext per_query;
	MemoryContext oldcontext;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	GcPmParams	params;
	PmInput		in;
	PmedianModel *volatile model = NULL;
	int32	   *volatile alloc = NULL;
	double	   *volatile dist = NULL;
	int64	   *null_ids = NULL;
	int64		nnull = 0;
	Jsonb	   *options;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pmedian_gpu_assign must be called in a context that accepts a set")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the query and p must not be NULL")));
	per_query = rsinfo->econtext->ecxt_per_query_memory;
	options = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	gc_parse_pmedian_options(options, PG_GETARG_INT32(1), &params);
	/* a capacity means the query carries demands */
	gc_pm_input_init(&in, params.capacitated, per_query);
	PG_TRY();
	{
		double		started = gc_now_ms();

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		collect_query(text_to_cstring(PG_GETARG_TEXT_PP(0)), &in, per_query,
					  &null_ids, &nnull);
		SPI_finish();
		if (in.input.started)
		{
			alloc = MemoryContextAllocHuge(per_query, sizeof(int32) * in.input.rows.n);
			dist = MemoryContextAllocHuge(per_query, sizeof(double) * in.input.rows.n);
			model = gc_run_pmedian(&in, &params, gc_now_ms() - started, alloc, dist);
		}
	}
	PG_FINALLY();
	{
		gc_input_release(&in.input);
	}
	PG_END_TRY();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	oldcontext = MemoryContextSwitchTo(per_query);
	tupdesc = CreateTupleDescCopy(tupdesc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(oldcontext);

	for (int64 i = 0; model != NULL && i < in.count; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Int64GetDatum(in.ids[i]);
		values[1] = Int64GetDatum(PmedianModelIds(model)[alloc[i]]);
		values[2] = Float8GetDatum(dist[i]);
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	for (int64 i = 0; i < nnull; i++)
	{
		Datum		values[3] = {Int64GetDatum(null_ids[i]), 0, 0};
		bool		nulls[3] = {false, true, true};

		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = tupdesc;
	return (Datum) 0;
}
