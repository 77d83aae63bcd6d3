/*-------------------------------------------------------------------------
 *
 * spi_rows.c
 *	  The query argument of the *_assign functions: prepares it (one
 *	  statement that returns rows and modifies none) and checks its id
 *	  and vector columns' types; for pmedian_gpu_assign, runs it through
 *	  SPI into a receiver that hands each row's slot to a callback as the
 *	  executor produces it (no copy of the row into an SPI tuple table, no
 *	  fetch round trips), in a memory context reset every batch of rows
 *	  (so detoasted vectors do not pile up), honouring cancel between
 *	  batches.  The query is planned
 *	  as SPI_execute plans a statement run to completion, parallel plans
 *	  allowed: its scan runs in parallel workers where the planner finds
 *	  that cheaper, and the rows reach the receiver through Gather.  Also
 *	  the id column's value (an integer, or a whole numeric, which
 *	  gpuclust_assign_id reads in kmeans_gpu_assign's collecting query),
 *	  and the materialized result every
 *	  set-returning function of gpuclust builds (the *_assign functions,
 *	  the progress slots).
 *
 * IDENTIFICATION
 *	  src/spi_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/plancache.h"

PG_FUNCTION_INFO_V1(gpuclust_assign_id);

#define BATCH_ROWS 10000

/* The receiver: the callbacks and the batch context */
typedef struct RowReceiver
{
	DestReceiver pub;
	GcSpiColumnsFn on_columns;
	GcSpiRowFn	on_row;
	void	   *arg;
	MemoryContext batch;
	uint64		in_batch;		/* rows since the batch context was reset */
} RowReceiver;

static void
receiver_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	RowReceiver *r = (RowReceiver *) self;

	r->on_columns(typeinfo, r->arg);
}

/* One row, straight from the executor */
static bool
receiver_row(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *r = (RowReceiver *) self;
	MemoryContext oldcontext = MemoryContextSwitchTo(r->batch);

	r->on_row(slot, r->arg);
	MemoryContextSwitchTo(oldcontext);
	if (++r->in_batch == BATCH_ROWS)
	{
		MemoryContextReset(r->batch);
		r->in_batch = 0;
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

static void
receiver_shutdown(DestReceiver *self)
{
}

/*
 * The query modifies nothing: a plain SELECT (or VALUES, TABLE), without
 * a data-modifying WITH clause or FOR UPDATE/SHARE (0A000 otherwise, as
 * SPI says of such a statement run read-only, but before kmeans_gpu_assign
 * nests it in its collecting query, where PostgreSQL would report a syntax
 * error in a statement the user never wrote)
 */
static void
check_read_only(CachedPlanSource *source)
{
	ListCell   *lc;

	foreach(lc, source->query_list)
	{
		Query	   *parsed = lfirst_node(Query, lc);
		const char *what = NULL;

		if (parsed->commandType != CMD_SELECT)
			what = GetCommandTagName(source->commandTag);
		else if (parsed->hasModifyingCTE)
			what = "a data-modifying WITH clause";
		else if (parsed->rowMarks != NIL)
			what = "FOR UPDATE or FOR SHARE";
		if (what != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the query must not modify or lock rows"),
					 errdetail("It uses %s.", what),
					 errhint("The query is run read-only: change the rows first, "
							 "then cluster them with a SELECT.")));
	}
}

/*
 * query prepared (SPI must be connected) as a statement run to completion,
 * parallel plans allowed; it must be one statement that returns rows, as a
 * cursor's must (42P11 otherwise), and modify nothing (check_read_only)
 */
SPIPlanPtr
gc_spi_prepare_rows(const char *query)
{
	SPIPrepareOptions prepare = {.cursorOptions = CURSOR_OPT_PARALLEL_OK};
	SPIPlanPtr	plan = SPI_prepare_extended(query, &prepare);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_CURSOR_DEFINITION),
				 errmsg("the query must be one statement that returns rows")));
	check_read_only((CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan)));
	return plan;
}

/*
 * The type of the query's id column as its values are read: smallint,
 * integer, bigint or numeric (integral values), a domain's base type;
 * otherwise 42804 with a hint naming the ways around it for fname, the
 * assign function
 */
Oid
gc_spi_id_type(Oid idtype, const char *fname)
{
	Oid			base = getBaseType(idtype);
	bool		kmeans = strcmp(fname, "kmeans_gpu_assign") == 0;

	if (base == INT8OID || base == INT4OID || base == INT2OID || base == NUMERICOID)
		return base;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("the query's first column must be an integer id"),
			 errdetail("It is of type %s.", format_type_be(idtype)),
			 kmeans ?
			 errhint("Number the rows with a bigint surrogate key (e.g. row_number() OVER ()) and join back on it, label them with the window form kmeans_gpu_cluster(v, k) OVER (), or fit with kmeans_gpu and label them with kmeans_predict(model, v).") :
			 errhint("Number the rows with a bigint surrogate key (e.g. row_number() OVER ()) and join back on it, or fit with pmedian_gpu and label them with pmedian_predict(model, v).")));
	return InvalidOid;
}

/*
 * The format (gc_vector_format_of_type) of the query's vector column
 * (42804 naming the types taken otherwise)
 */
Oid
gc_spi_vector_format(Oid vectype)
{
	Oid			format = gc_vector_format_of_type(vectype);

	if (!OidIsValid(format))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's second column must be a vector: float8[], real[], integer[], bigint[], smallint[], numeric[], vector or halfvec"),
				 errdetail("It is of type %s.", format_type_be(vectype))));
	return format;
}

/*
 * Run query (SPI must be connected): on_columns sees the result's shape
 * once, before any row, on_row every row.  The query must be one
 * statement that returns rows, as a cursor's must.
 */
void
gc_spi_for_each_row(const char *query, GcSpiColumnsFn on_columns,
					GcSpiRowFn on_row, void *arg)
{
	SPIPlanPtr	plan = gc_spi_prepare_rows(query);
	SPIExecuteOptions options = {0};
	RowReceiver receiver = {
		.pub = {
			.receiveSlot = receiver_row,
			.rStartup = receiver_startup,
			.rShutdown = receiver_shutdown,
			.rDestroy = receiver_shutdown,
			.mydest = DestNone
		},
		.on_columns = on_columns,
		.on_row = on_row,
		.arg = arg
	};
	int			rc;

	receiver.batch = AllocSetContextCreate(CurrentMemoryContext,
										   "gpuclust query batch",
										   ALLOCSET_DEFAULT_SIZES);
	options.read_only = true;
	options.dest = &receiver.pub;
	rc = SPI_execute_plan_extended(plan, &options);
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan_extended failed: %s", SPI_result_code_string(rc));
	MemoryContextDelete(receiver.batch);
}

/*
 * The result info of a set-returning function that materializes its
 * result, or an error naming the function
 */
ReturnSetInfo *
gc_materialize_context(FunctionCallInfo fcinfo, const char *fname)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must be called in a context that accepts a set", fname)));
	return rsinfo;
}

/*
 * The result of a set-returning function that materializes it: a
 * tuplestore in per-query memory, already handed to rsinfo, and in *tupdesc
 * a per-query copy of the row type to put values with.  The store stays in
 * memory up to work_mem, or up to held_bytes where that is more: the
 * memory the function's rows took during its fit, given back before the
 * result is built, so that a result never spills to disk when it is
 * smaller than what the fit just held (a label row takes less than a
 * vector of eight doubles).
 */
Tuplestorestate *
gc_result_store(FunctionCallInfo fcinfo, ReturnSetInfo *rsinfo,
				double held_bytes, TupleDesc *tupdesc)
{
	MemoryContext oldcontext;
	double		kilobytes = Min(Max((double) work_mem, held_bytes / 1024.0), (double) MAX_KILOBYTES);
	Tuplestorestate *store;
	TupleDesc	rowtype;

	if (get_call_result_type(fcinfo, NULL, &rowtype) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	oldcontext = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	*tupdesc = CreateTupleDescCopy(rowtype);
	store = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
								  false, (int) kilobytes);
	MemoryContextSwitchTo(oldcontext);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = *tupdesc;
	return store;
}

/*
 * A numeric id as a bigint: integral and within bigint's range, else an
 * error naming it
 */
int64
gc_numeric_id(Numeric id)
{
	Datum		value = NumericGetDatum(id);
	Datum		whole = DirectFunctionCall2(numeric_trunc, value, Int32GetDatum(0));

	if (numeric_is_nan(id) || numeric_is_inf(id) ||
		!DatumGetBool(DirectFunctionCall2(numeric_eq, value, whole)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("id %s is not an integer",
						DatumGetCString(DirectFunctionCall1(numeric_out, value))),
				 errhint("Ids of type numeric must hold whole numbers within bigint's range.")));
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, value));
}

/* The value of an id column of the type gc_spi_id_type returned */
int64
gc_spi_id_value(Datum id, Oid idtype)
{
	switch (idtype)
	{
		case INT8OID:
			return DatumGetInt64(id);
		case INT4OID:
			return DatumGetInt32(id);
		case INT2OID:
			return DatumGetInt16(id);
		default:
			return gc_numeric_id(DatumGetNumeric(id));
	}
}

/*
 * gpuclust_assign_id(numeric) -> bigint: a numeric id of
 * kmeans_gpu_assign's query as its collecting aggregate takes it
 */
Datum
gpuclust_assign_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(gc_numeric_id(PG_GETARG_NUMERIC(0)));
}
