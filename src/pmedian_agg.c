/*-------------------------------------------------------------------------
 *
 * pmedian_agg.c
 *	  The pmedian_gpu aggregates: pmedian_gpu(id, vec, p [, options]) and,
 *	  for the capacitated problem, pmedian_gpu(id, vec, demand, p,
 *	  options).  The transition function appends each row to the row store
 *	  (pinned host memory when the GPU will run the fit) with its id and
 *	  demand; the final function fits the model.
 *
 * IDENTIFICATION
 *	  src/pmedian_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include "catalog/pg_type.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_real);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_vector);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_finalfn);

typedef struct PmAggState
{
	PmInput		in;
	GcPmParams	params;
	double		started_ms;		/* when the first row arrived */
} PmAggState;

/* Arguments after the state: id, vec, [demand,] p, [options] */
#define ARG_ID 1
#define ARG_VEC 2
#define WITH_DEMAND(fcinfo) (PG_NARGS() == 6)
#define ARG_P(fcinfo) (WITH_DEMAND(fcinfo) ? 4 : 3)

/*
 * Create the state on the first row: parse p and options once
 */
static PmAggState *
start_state(FunctionCallInfo fcinfo, MemoryContext aggcontext)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(aggcontext);
	PmAggState *state = palloc0(sizeof(PmAggState));
	int			argp = ARG_P(fcinfo);
	Jsonb	   *options = NULL;

	if (PG_ARGISNULL(argp))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("p must not be NULL")));
	if (PG_NARGS() > argp + 1 && !PG_ARGISNULL(argp + 1))
		options = PG_GETARG_JSONB_P(argp + 1);
	gc_parse_pmedian_options(options, PG_GETARG_INT32(argp), &state->params);
	gc_check_pmedian_demand(&state->params, WITH_DEMAND(fcinfo));
	gc_pm_input_init(&state->in, WITH_DEMAND(fcinfo), aggcontext);
	gc_input_release_at_reset(&state->in.input, aggcontext);
	state->started_ms = gc_now_ms();
	MemoryContextSwitchTo(oldcontext);
	return state;
}

static Datum
pmedian_transfn(FunctionCallInfo fcinfo, Oid format)
{
	MemoryContext aggcontext;
	PmAggState *state;
	int			argp = ARG_P(fcinfo);
	bool		with_demand = WITH_DEMAND(fcinfo);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "pmedian_gpu transition function called in non-aggregate context");

	if (PG_ARGISNULL(0))
		state = start_state(fcinfo, aggcontext);
	else
	{
		state = (PmAggState *) PG_GETARG_POINTER(0);
		if (PG_ARGISNULL(argp) || PG_GETARG_INT32(argp) != state->params.p)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("p must be the same for every row of one pmedian_gpu")));
	}
	gc_pm_input_add(&state->in, PG_ARGISNULL(ARG_ID),
					PG_ARGISNULL(ARG_ID) ? 0 : PG_GETARG_INT64(ARG_ID),
					PG_ARGISNULL(ARG_VEC) ? (Datum) 0 : PG_GETARG_DATUM(ARG_VEC),
					format, with_demand && PG_ARGISNULL(3),
					with_demand && !PG_ARGISNULL(3) ? PG_GETARG_FLOAT8(3) : 0.0);
	PG_RETURN_POINTER(state);
}

Datum
gpuclust_pmedian_transfn(PG_FUNCTION_ARGS)
{
	return pmedian_transfn(fcinfo, FLOAT8OID);
}

Datum
gpuclust_pmedian_transfn_real(PG_FUNCTION_ARGS)
{
	return pmedian_transfn(fcinfo, FLOAT4OID);
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_pmedian_transfn_vector(PG_FUNCTION_ARGS)
{
	return pmedian_transfn(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_pmedian_transfn_halfvec(PG_FUNCTION_ARGS)
{
	return pmedian_transfn(fcinfo, GC_PGVECTOR_HALFVEC);
}

/*
 * Fit the model; NULL when there were no rows with a vector
 */
Datum
gpuclust_pmedian_finalfn(PG_FUNCTION_ARGS)
{
	PmAggState *state;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (PmAggState *) PG_GETARG_POINTER(0);
	if (!state->in.input.started)
		PG_RETURN_NULL();
	PG_RETURN_POINTER(gc_run_pmedian(&state->in, &state->params,
									 gc_now_ms() - state->started_ms, NULL, NULL));
}
