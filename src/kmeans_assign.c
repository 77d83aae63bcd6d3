/*-------------------------------------------------------------------------
 *
 * kmeans_assign.c
 *	  kmeans_gpu_assign(query, k, options): runs a query yielding (id,
 *	  vector), fits k-means over its vectors, and returns every row's
 *	  cluster and distance as a relation.  The labels come from the same
 *	  run as the fit (the backend's final scoring pass), not from a second
 *	  pass of per-row predictions.
 *
 * The query's rows are collected by an aggregate,
 * gpuclust_kmeans_assign_collect(id, vector, k, options), run over it
 * through SPI: like kmeans_gpu, a parallel plan collects in parallel
 * workers and hands the rows (with their ids, assign_rows.h) to the
 * leader in shared memory, so the query's scan runs in parallel as the
 * model's does.  The aggregate's final function fits the rows and leaves
 * the labels in this call's sink, from which the relation is built in the
 * order the rows came (the query's order, under a serial plan).
 *
 * IDENTIFICATION
 *	  src/kmeans_assign.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "assign_rows.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_assign);

/* The query's columns (id, vector); returns the id's type as read */
static Oid
check_query_columns(TupleDesc tupdesc)
{
	Oid			idtype;

	if (tupdesc->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query must return two columns, an id and a vector"),
				 errdetail("It returns %d columns.", tupdesc->natts)));
	idtype = gc_spi_id_type(TupleDescAttr(tupdesc, 0)->atttypid, "kmeans_gpu_assign");
	(void) gc_spi_vector_format(TupleDescAttr(tupdesc, 1)->atttypid);
	return idtype;
}

/* Errors about the query's shape name it, as SPI names a statement */
static void
query_error_context(void *arg)
{
	errcontext("SQL statement \"%s\"", (const char *) arg);
}

/*
 * The query the rows are collected by: the given one, checked to be one
 * statement returning (integer id, vector), inside the collecting
 * aggregate (SPI must be connected)
 */
static char *
collect_query(FunctionCallInfo fcinfo, const char *query, int k, Jsonb *options)
{
	SPIPlanPtr	plan = gc_spi_prepare_rows(query);
	CachedPlanSource *source;
	RawStmt    *raw;
	ErrorContextCallback context = {.callback = query_error_context, .arg = (void *) query};
	char	   *statement;
	char	   *schema;
	Oid			idtype;
	StringInfoData sql;

	source = (CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan));
	context.previous = error_context_stack;
	error_context_stack = &context;
	idtype = check_query_columns(source->resultDesc);
	error_context_stack = context.previous;

	/* the statement alone: no semicolon or comment after it */
	raw = source->raw_parse_tree;
	statement = raw->stmt_len > 0 ?
		pnstrdup(query + raw->stmt_location, raw->stmt_len) :
		pstrdup(query + Max(raw->stmt_location, 0));
	SPI_freeplan(plan);

	schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	initStringInfo(&sql);
	/* a numeric id must be whole: a cast would round it */
	appendStringInfo(&sql, "SELECT %s.gpuclust_kmeans_assign_collect(%s, q.v, %d, %s::jsonb) FROM (%s%s) AS q(id, v)",
					 quote_identifier(schema),
					 idtype == NUMERICOID ?
					 psprintf("%s.gpuclust_assign_id(q.id)", quote_identifier(schema)) : "q.id::bigint",
					 k,
					 options ? quote_literal_cstr(JsonbToCString(NULL, &options->root, VARSIZE(options))) : "NULL",
					 statement, strstr(statement, "--") ? "\n" : "");
	return sql.data;
}

/* Run the collecting query, its plan allowed to be parallel */
static void
run_collect_query(const char *sql)
{
	SPIPlanPtr	plan = gc_spi_prepare_rows(sql);
	SPIExecuteOptions options = {0};
	int			rc;

	options.read_only = true;
	rc = SPI_execute_plan_extended(plan, &options);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan_extended failed: %s", SPI_result_code_string(rc));
}

Datum
gpuclust_kmeans_assign(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = gc_materialize_context(fcinfo, "kmeans_gpu_assign");
	GcAssignSink *outer = gc_assign_sink;
	GcAssignSink sink = {0};
	GcKmeansOptions opts;
	Jsonb	   *options;
	Tuplestorestate *store;
	TupleDesc	tupdesc;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the query and k must not be NULL")));
	options = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	gc_parse_kmeans_options(options, gc_k_argument(fcinfo, 1), &opts);
	sink.context = rsinfo->econtext->ecxt_per_query_memory;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	gc_assign_sink = &sink;
	PG_TRY();
	{
		run_collect_query(collect_query(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)),
										opts.params.k, options));
	}
	PG_FINALLY();
	{
		gc_assign_sink = outer;
	}
	PG_END_TRY();
	SPI_finish();
	if (!sink.filled)
		elog(ERROR, "kmeans_gpu_assign's query did not run its aggregate");

	store = gc_result_store(fcinfo, rsinfo, sink.held_bytes, &tupdesc);
	gc_assign_rows_emit(sink.rows, sink.labels, sink.distances, store, tupdesc);
	return (Datum) 0;
}
