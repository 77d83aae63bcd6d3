/*-------------------------------------------------------------------------
 *
 * assign_estimate.c
 *	  The planner's row estimate for kmeans_gpu_assign and
 *	  pmedian_gpu_assign (their SUPPORT function): both return one row per
 *	  row of their query, so where the query is a constant the estimate is
 *	  the query's own, planned on the spot, instead of the declared
 *	  ROWS 1000.
 *
 * Without it, the commonest use, joining the labels back to the table
 * they came from, was planned for 1,000 labels: a nested loop probing the
 * table's primary key once a label.  For 1,000,000 rows of a table in
 * random id order (PostgreSQL 15, CPU, k = 10, 3 iterations) that join
 * took 3.8 s; the hash join the real estimate leads to, 1.6 s.
 *
 * The query is parsed, analysed, rewritten and planned inside a
 * subtransaction that is always rolled back, so the estimate leaves no
 * locks or other traces.  A query that cannot be planned (a syntax error,
 * a missing table) leaves the declared estimate; its error is raised, with
 * its context, when the function runs.  Errors that must stop the
 * statement whatever it was doing (a cancel, memory, stack depth, an
 * internal error) are raised at once.  Inside a parallel worker, where no
 * subtransaction can start, nothing is estimated.
 *
 * IDENTIFICATION
 *	  src/assign_estimate.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(gpuclust_assign_support);

/*
 * Whether the analysed query is one the estimate may plan: a plain SELECT
 * (not SELECT INTO, which analysis turns into a utility statement), with
 * no data-modifying WITH clause and no FOR UPDATE/SHARE
 */
static bool
plain_select(Query *query)
{
	return query->commandType == CMD_SELECT && query->utilityStmt == NULL &&
		!query->hasModifyingCTE && query->rowMarks == NIL;
}

/* Whether the relation has row-level security enabled */
static bool
relation_has_row_security(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		enabled;

	if (!HeapTupleIsValid(tuple))
		return true;
	enabled = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity;
	ReleaseSysCache(tuple);
	return enabled;
}

/*
 * Whether the caller may see the plan's estimate: it may read every
 * relation the plan reads (as the executor would check them, views'
 * relations as the views' owners), and none has row-level security on,
 * whose estimate would count rows the policies hide
 */
static bool
caller_may_read(PlannedStmt *plan)
{
	ListCell   *lc;

	if (!gc_exec_check_permissions(plan))
		return false;
	foreach(lc, plan->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && relation_has_row_security(rte->relid))
			return false;
	}
	return true;
}

/*
 * The rows the query's plan expects; -1 when it is not one plain SELECT
 * (plain_select) whose rewrite is one query, or the caller may not read
 * what it reads (caller_may_read): such a query keeps the declared
 * estimate, and what is wrong with it is reported when the function runs
 */
static double
planned_rows(const char *query)
{
	List	   *raw = pg_parse_query(query);
	RawStmt    *stmt;
	List	   *rewritten;
	Query	   *analysed;
	PlannedStmt *plan;

	if (list_length(raw) != 1)
		return -1;
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt) || ((SelectStmt *) stmt->stmt)->intoClause != NULL)
		return -1;
	rewritten = pg_analyze_and_rewrite_fixedparams(stmt, query, NULL, 0, NULL);
	if (list_length(rewritten) != 1)
		return -1;
	analysed = linitial_node(Query, rewritten);
	if (!plain_select(analysed))
		return -1;
	plan = pg_plan_query(analysed, query, 0, NULL);
	if (plan == NULL || plan->commandType != CMD_SELECT || plan->planTree == NULL ||
		!caller_may_read(plan))
		return -1;
	return plan->planTree->plan_rows;
}

/*
 * Whether an error met while planning the query only means that it has no
 * estimate: not a cancel or a shutdown (57), not a lack of memory or
 * other resources (53, 54: stack depth), not a system or internal error
 */
static bool
error_leaves_estimate(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_INSUFFICIENT_RESOURCES:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
		case ERRCODE_OPERATOR_INTERVENTION:
		case ERRCODE_SYSTEM_ERROR:
		case ERRCODE_INTERNAL_ERROR:
			return false;
		default:
			return true;
	}
}

/* planned_rows in a subtransaction rolled back whatever happens */
static double
estimate_query_rows(const char *query)
{
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;
	MemoryContext work = AllocSetContextCreate(caller_context, "gpuclust assign estimate",
											   ALLOCSET_DEFAULT_SIZES);
	double		rows = -1;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(work);
	PG_TRY();
	{
		rows = planned_rows(query);
		MemoryContextSwitchTo(caller_context);
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller_context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
		if (!error_leaves_estimate(edata->sqlerrcode))
			ReThrowError(edata);
		FreeErrorData(edata);
		rows = -1;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(caller_context);
	CurrentResourceOwner = caller_owner;
	MemoryContextDelete(work);
	return rows;
}

/* The query argument as a string, where the planner can fold it to one */
static char *
constant_query(SupportRequestRows *req)
{
	FuncExpr   *call;
	Node	   *arg;

	if (!IsA(req->node, FuncExpr))
		return NULL;
	call = (FuncExpr *) req->node;
	if (list_length(call->args) < 1)
		return NULL;
	arg = req->root ? estimate_expression_value(req->root, linitial(call->args)) :
		linitial(call->args);
	if (!IsA(arg, Const) || ((Const *) arg)->constisnull ||
		((Const *) arg)->consttype != TEXTOID)
		return NULL;
	return TextDatumGetCString(((Const *) arg)->constvalue);
}

Datum
gpuclust_assign_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestRows *req;
	char	   *query;
	double		rows;

	if (!IsA(rawreq, SupportRequestRows) || IsInParallelMode())
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestRows *) rawreq;
	query = constant_query(req);
	if (query == NULL)
		PG_RETURN_POINTER(NULL);
	rows = estimate_query_rows(query);
	if (rows < 0)
		PG_RETURN_POINTER(NULL);
	req->rows = Max(rows, 1.0);
	PG_RETURN_POINTER(req);
}
