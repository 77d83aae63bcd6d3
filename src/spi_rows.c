/*-------------------------------------------------------------------------
 *
 * spi_rows.c
 *	  The query argument of the *_assign functions: runs it through an SPI
 *	  cursor in batches, hands each row to a callback in a memory context
 *	  reset between batches (so detoasted vectors do not pile up), and
 *	  honours cancel between batches.  Also the integer id column's value.
 *
 * IDENTIFICATION
 *	  src/spi_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#define FETCH_ROWS 10000

/*
 * Run query (SPI must be connected): on_columns sees the result's shape
 * once, on_row every row
 */
void
gc_spi_for_each_row(const char *query, GcSpiColumnsFn on_columns,
					GcSpiRowFn on_row, void *arg)
{
	MemoryContext batch = AllocSetContextCreate(CurrentMemoryContext,
												"gpuclust query batch",
												ALLOCSET_DEFAULT_SIZES);
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	Portal		portal;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	on_columns(portal->tupDesc, arg);
	for (;;)
	{
		MemoryContext oldcontext;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		oldcontext = MemoryContextSwitchTo(batch);
		for (uint64 i = 0; i < SPI_processed; i++)
			on_row(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, arg);
		MemoryContextSwitchTo(oldcontext);
		MemoryContextReset(batch);
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	MemoryContextDelete(batch);
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

/* The value of an int2, int4 or int8 id column */
int64
gc_spi_id_value(Datum id, Oid idtype)
{
	return idtype == INT8OID ? DatumGetInt64(id) :
		idtype == INT4OID ? DatumGetInt32(id) : DatumGetInt16(id);
}
