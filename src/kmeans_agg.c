/*-------------------------------------------------------------------------
 *
 * kmeans_agg.c
 *	  The kmeans_gpu aggregate: the transition function appends each vector
 *	  to the row store (pinned host memory when the GPU will run the fit)
 *	  and the final function fits the model.
 *
 * IDENTIFICATION
 *	  src/kmeans_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_finalfn);

typedef struct KmeansAggState
{
	GcInput		input;
	GcKmeansOptions opts;
	double		started_ms;		/* when the first row arrived */
} KmeansAggState;

/*
 * Create the state on the first row: parse k and options once
 */
static KmeansAggState *
start_state(FunctionCallInfo fcinfo, MemoryContext aggcontext)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(aggcontext);
	KmeansAggState *state = palloc0(sizeof(KmeansAggState));
	Jsonb	   *options = NULL;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be NULL")));
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		options = PG_GETARG_JSONB_P(3);
	gc_parse_kmeans_options(options, PG_GETARG_INT32(2), &state->opts);
	gc_input_init(&state->input);
	state->input.unit = state->opts.params.metric == GC_METRIC_COSINE;
	state->input.work_per_row = (double) state->opts.params.k * state->opts.params.n_init;
	gc_input_release_at_reset(&state->input, aggcontext);
	state->started_ms = gc_now_ms();
	MemoryContextSwitchTo(oldcontext);
	return state;
}

static Datum
kmeans_transfn(FunctionCallInfo fcinfo, Oid elemtype)
{
	MemoryContext aggcontext;
	KmeansAggState *state;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "kmeans_gpu transition function called in non-aggregate context");

	if (PG_ARGISNULL(0))
		state = start_state(fcinfo, aggcontext);
	else
	{
		state = (KmeansAggState *) PG_GETARG_POINTER(0);
		if (PG_ARGISNULL(2) || PG_GETARG_INT32(2) != state->opts.params.k)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be the same for every row of one kmeans_gpu")));
	}

	if (PG_ARGISNULL(1))
		gc_input_add_null(&state->input);
	else
		gc_input_add(&state->input, PG_GETARG_DATUM(1), elemtype);
	PG_RETURN_POINTER(state);
}

Datum
gpuclust_kmeans_transfn(PG_FUNCTION_ARGS)
{
	return kmeans_transfn(fcinfo, FLOAT8OID);
}

Datum
gpuclust_kmeans_transfn_real(PG_FUNCTION_ARGS)
{
	return kmeans_transfn(fcinfo, FLOAT4OID);
}

/*
 * Fit the model; NULL when there were no non-NULL rows
 */
Datum
gpuclust_kmeans_finalfn(PG_FUNCTION_ARGS)
{
	KmeansAggState *state;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (KmeansAggState *) PG_GETARG_POINTER(0);
	if (!state->input.started)
		PG_RETURN_NULL();
	PG_RETURN_POINTER(gc_run_kmeans(&state->input, &state->opts,
									gc_now_ms() - state->started_ms,
									NULL, NULL));
}
