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
 *	  the integer id column's value, and the materialized result every
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
#include "utils/memutils.h"
#include "utils/plancache.h"

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

/* The query's id column: smallint, integer or bigint (42804 otherwise) */
void
gc_spi_check_id_type(Oid idtype)
{
	if (idtype != INT8OID && idtype != INT4OID && idtype != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's first column must be an integer id"),
				 errdetail("It is of type %s.", format_type_be(idtype))));
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

/* The value of an int2, int4 or int8 id column */
int64
gc_spi_id_value(Datum id, Oid idtype)
{
	return idtype == INT8OID ? DatumGetInt64(id) :
		idtype == INT4OID ? DatumGetInt32(id) : DatumGetInt16(id);
}
