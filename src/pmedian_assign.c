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
#include "array_growth.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_assign);

/* The query's column types, checked once */
typedef struct QueryShape
{
	Oid			idtype;
	Oid			format;			/* of the vectors (gc_vector_format_of_type) */
	bool		with_demand;
} QueryShape;

static void
check_query_columns(TupleDesc tupdesc, QueryShape *shape)
{
	if (tupdesc->natts != 2 && tupdesc->natts != 3)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query must return an id, a vector and optionally a demand"),
				 errdetail("It returns %d columns.", tupdesc->natts)));
	shape->idtype = gc_spi_id_type(SPI_gettypeid(tupdesc, 1), "pmedian_gpu_assign");
	shape->format = gc_spi_vector_format(SPI_gettypeid(tupdesc, 2));
	shape->with_demand = tupdesc->natts == 3;
	if (shape->with_demand && SPI_gettypeid(tupdesc, 3) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's third column must be a float8 demand"),
				 errdetail("It is of type %s.", format_type_be(SPI_gettypeid(tupdesc, 3)))));
}

/* The state of one collection: where rows go, and the NULL rows' ids */
typedef struct CollectState
{
	QueryShape	shape;
	PmInput    *in;
	MemoryContext cxt;			/* where null_ids lives */
	int64	   *null_ids;
	int64		nnull;
	int64		null_capacity;
} CollectState;

static void
on_columns(TupleDesc tupdesc, void *arg)
{
	CollectState *cs = arg;

	check_query_columns(tupdesc, &cs->shape);
	if (cs->shape.with_demand != cs->in->with_demand)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(cs->in->with_demand ? "option \"capacity\" needs a demand column"
						: "a demand column needs option \"capacity\""),
				 errhint("Return (id, vector, demand) from the query and give a capacity, or neither.")));
}

/*
 * Add the row to the input (started on the first row, once the shape is
 * known); a row with a NULL vector is kept in null_ids for the result
 */
static void
on_row(TupleTableSlot *slot, void *arg)
{
	CollectState *cs = arg;
	bool		idnull,
				vecnull,
				qnull = false;
	Datum		id = slot_getattr(slot, 1, &idnull);
	Datum		vec = slot_getattr(slot, 2, &vecnull);
	Datum		q = cs->shape.with_demand ? slot_getattr(slot, 3, &qnull) : (Datum) 0;

	gc_pm_input_add(cs->in, idnull, idnull ? 0 : gc_spi_id_value(id, cs->shape.idtype),
					vecnull ? (Datum) 0 : vec, cs->shape.format, qnull,
					cs->shape.with_demand && !qnull ? DatumGetFloat8(q) : 0.0);
	if (vecnull)
	{
		cs->null_ids = gc_reserve(cs->cxt, cs->null_ids, &cs->null_capacity, cs->nnull + 1,
								  sizeof(int64));
		cs->null_ids[cs->nnull++] = gc_spi_id_value(id, cs->shape.idtype);
	}
}

Datum
gpuclust_pmedian_assign(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = gc_materialize_context(fcinfo, "pmedian_gpu_assign");
	MemoryContext per_query;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	volatile double held_bytes = 0;
	GcPmParams	params;
	GcSmallGroups small_groups;
	PmInput		in;
	PmedianModel *volatile model = NULL;
	int32	   *volatile alloc = NULL;
	double	   *volatile dist = NULL;
	int64	   *volatile null_ids = NULL;
	volatile int64 nnull = 0;
	Jsonb	   *options;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the query and p must not be NULL")));
	per_query = rsinfo->econtext->ecxt_per_query_memory;
	options = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	gc_parse_pmedian_options(options, gc_k_argument(fcinfo, 1), &params, &small_groups);
	/* a capacity means the query carries demands */
	gc_pm_input_init(&in, params.capacitated, per_query);
	PG_TRY();
	{
		double		started = gc_now_ms();
		CollectState cs = {0};

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		cs.in = &in;
		cs.cxt = per_query;
		gc_spi_for_each_row(text_to_cstring(PG_GETARG_TEXT_PP(0)), on_columns, on_row, &cs);
		null_ids = cs.null_ids;
		nnull = cs.nnull;
		SPI_finish();
		if (in.input.started)
		{
			gc_input_count_rows(&in.input);
			gc_fit_memory_count(&in.input.memory,
								mul_size(in.input.rows.n, sizeof(int32) + sizeof(double)),
								"The rows' medians and distances");
			alloc = MemoryContextAllocHuge(per_query, sizeof(int32) * in.input.rows.n);
			dist = MemoryContextAllocHuge(per_query, sizeof(double) * in.input.rows.n);
			model = gc_run_pmedian(&in, &params, small_groups, gc_now_ms() - started,
								   alloc, dist);
		}
	}
	PG_FINALLY();
	{
		held_bytes = gc_input_bytes(&in.input);
		gc_input_release(&in.input);
	}
	PG_END_TRY();

	store = gc_result_store(fcinfo, rsinfo, held_bytes, &tupdesc);

	/* without a model (fewer rows than p, small_groups "null") no row has a median */
	for (int64 i = 0; i < in.count; i++)
	{
		Datum		values[3] = {Int64GetDatum(in.ids[i]), 0, 0};
		bool		nulls[3] = {false, model == NULL, model == NULL};

		if (model != NULL)
		{
			values[1] = Int64GetDatum(PmedianModelIds(model)[alloc[i]]);
			values[2] = Float8GetDatum(dist[i]);
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	for (int64 i = 0; i < nnull; i++)
	{
		Datum		values[3] = {Int64GetDatum(null_ids[i]), 0, 0};
		bool		nulls[3] = {false, true, true};

		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
