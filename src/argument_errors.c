/*-------------------------------------------------------------------------
 *
 * argument_errors.c
 *	  The catch-only forms of kmeans_gpu, kmeans_gpu_cluster, pmedian_gpu,
 *	  kmeans_gpu_assign and pmedian_gpu_assign.  They exist so that the
 *	  commonest slips (an untyped vector literal, a numeric or float k,
 *	  options as text, pgvector's types without gpuclust_pgvector) resolve
 *	  to a function that names the fix instead of PostgreSQL's generic
 *	  "function is not unique" or "does not exist".  Every such form (an
 *	  aggregate's transition and final functions, a window function, a
 *	  set-returning function) is gpuclust_argument_error, which reads the
 *	  call's arguments as written (before implicit casts) and raises the
 *	  error of the first wrong one.  The forms are declared so that no
 *	  correct call resolves to them: see the install script's comments.
 *
 * IDENTIFICATION
 *	  src/argument_errors.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_input.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(gpuclust_argument_error);

/* Where each argument of a catch-only form's call stands; -1: none */
typedef struct CallShape
{
	const char *name;			/* the function called */
	int			query;
	int			id;
	int			vec;
	int			k;
	const char *k_name;			/* "k" or "p" */
	int			options;
} CallShape;

/*
 * The arguments of the call as written (implicit casts stripped), and
 * the function's OID; NIL where the call cannot be seen (an aggregate run
 * over a window, whose support functions see only their own arguments)
 */
static List *
call_arguments(FunctionCallInfo fcinfo, Oid *fnoid)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	Node	   *expr = fcinfo->flinfo->fn_expr;
	List	   *args = NIL;
	ListCell   *lc;

	*fnoid = fcinfo->flinfo->fn_oid;
	if (aggref == NULL && AggCheckCallContext(fcinfo, NULL) != 0)
		return NIL;
	if (aggref != NULL)
	{
		*fnoid = aggref->aggfnoid;
		foreach(lc, aggref->args)
			args = lappend(args, ((TargetEntry *) lfirst(lc))->expr);
	}
	else if (expr != NULL && IsA(expr, WindowFunc))
	{
		*fnoid = ((WindowFunc *) expr)->winfnoid;
		args = ((WindowFunc *) expr)->args;
	}
	else if (expr != NULL && IsA(expr, FuncExpr))
		args = ((FuncExpr *) expr)->args;
	foreach(lc, args)
		lfirst(lc) = strip_implicit_coercions(lfirst(lc));
	return args;
}

/* Which argument is which, by the function's name and the arguments' count */
static CallShape
call_shape(const char *name, int nargs)
{
	CallShape	s = {name, -1, -1, -1, -1, "k", -1};

	if (strcmp(name, "pmedian_gpu") == 0)
	{
		s.id = 0;
		s.vec = 1;
		s.k = nargs == 5 ? 3 : 2;
		s.k_name = "p";
		s.options = nargs == 5 ? 4 : (nargs == 4 ? 3 : -1);
	}
	else if (strcmp(name, "kmeans_gpu_assign") == 0 || strcmp(name, "pmedian_gpu_assign") == 0)
	{
		s.query = 0;
		s.k = 1;
		s.k_name = name[0] == 'p' ? "p" : "k";
		s.options = nargs == 3 ? 2 : -1;
	}
	else
	{
		s.vec = 0;
		s.k = 1;
		s.options = nargs == 3 ? 2 : -1;
	}
	return s;
}

static bool
is_string_type(Oid type)
{
	return type == UNKNOWNOID || TypeCategory(type) == TYPCATEGORY_STRING;
}

static bool
is_integer_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* A vector of a type no form takes: untyped, pgvector's without the extension, another */
static void
check_vector(const CallShape *s, Node *arg)
{
	Oid			type = getBaseType(exprType(arg));
	Oid			format = gc_vector_format_of_type(type);

	if (is_string_type(type) && IsA(arg, Const))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the vector of %s is an untyped literal", s->name),
				 errhint("Give the literal a type, e.g. '{1,2}'::float8[] (or '[1,2]'::vector with gpuclust_pgvector).")));
	if ((format == GC_PGVECTOR_VECTOR || format == GC_PGVECTOR_HALFVEC) &&
		!OidIsValid(get_extension_oid("gpuclust_pgvector", true)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s takes pgvector's %s only with the extension gpuclust_pgvector", s->name,
						format_type_be(type)),
				 errhint("Run CREATE EXTENSION gpuclust_pgvector, or cast the vectors to real[].")));
	if (!OidIsValid(format))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot cluster vectors of type %s", format_type_be(type)),
				 errhint("Give vectors as float8[], real[], integer[], bigint[] or numeric[] (or pgvector's vector or halfvec, with the extension gpuclust_pgvector), e.g. vec::float8[].")));
}

/*
 * A k or p of a type other than an integer.  A constant's type is the one
 * the catch-only form cast it to (2.0 reads as double precision), so its
 * type is not named; this check comes last, when the others have passed.
 */
static void
check_count(const CallShape *s, Node *arg)
{
	Oid			type = getBaseType(exprType(arg));

	if (is_integer_type(type))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("%s must be an integer", s->k_name),
			 IsA(arg, Const) ? 0 : errdetail("It is of type %s.", format_type_be(type)),
			 errhint("Cast it to integer, e.g. %s(..., round(sqrt(count(*)))::int).", s->name)));
}

/* Options of a type other than jsonb */
static void
check_options(const CallShape *s, Node *arg)
{
	Oid			type = getBaseType(exprType(arg));

	if (type == JSONBOID || type == UNKNOWNOID)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("the options of %s must be jsonb", s->name),
			 errdetail("They are of type %s.", format_type_be(type)),
			 errhint(is_string_type(type) ?
					 "Cast them to jsonb, e.g. options::jsonb, or write them as a literal without a type: '{\"seed\": 1}'." :
					 "Give them as a jsonb object, e.g. '{\"seed\": 1}'.")));
}

/*
 * The error of the first argument of the call that no correct form takes:
 * the query (not text), the id (not an integer), the vector, the options,
 * k or p
 */
static void
raise_argument_error(const CallShape *s, List *args)
{
	if (s->query >= 0 && !is_string_type(getBaseType(exprType(list_nth(args, s->query)))))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query of %s must be text", s->name),
				 errdetail("It is of type %s.", format_type_be(exprType(list_nth(args, s->query))))));
	if (s->id >= 0 && !is_integer_type(getBaseType(exprType(list_nth(args, s->id)))))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the id of %s must be an integer", s->name),
				 errdetail("It is of type %s.", format_type_be(exprType(list_nth(args, s->id)))),
				 errhint("Number the rows with a bigint surrogate key, e.g. row_number() OVER ()::bigint, and join back on it.")));
	if (s->vec >= 0)
		check_vector(s, list_nth(args, s->vec));
	if (s->options >= 0)
		check_options(s, list_nth(args, s->options));
	check_count(s, list_nth(args, s->k));
}

/*
 * Every catch-only form: raise the error of the call's first wrong
 * argument; a call whose arguments cannot be seen (an aggregate over a
 * window) gets the argument types as a whole
 */
Datum
gpuclust_argument_error(PG_FUNCTION_ARGS)
{
	Oid			fnoid;
	List	   *args = call_arguments(fcinfo, &fnoid);
	char	   *name;
	CallShape	s;

	if (args == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the clustering aggregates take an integer k or p, jsonb options and vectors of a number array type, vector or halfvec"),
				 errhint("Cast the arguments, e.g. kmeans_gpu(vec::float8[], k::int, options::jsonb).")));
	name = get_func_name(fnoid);
	s = call_shape(name, list_length(args));
	raise_argument_error(&s, args);
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_FUNCTION),
			 errmsg("no form of %s takes these arguments", name),
			 errhint("See the forms of %s in the SQL reference.", name)));
	PG_RETURN_NULL();
}
