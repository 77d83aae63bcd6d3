/*-------------------------------------------------------------------------
 *
 * pmedian_agg.c
 *	  The pmedian_gpu aggregates: pmedian_gpu(id, vec, p [, options]) and,
 *	  for the capacitated problem, pmedian_gpu(id, vec, demand, p,
 *	  options).  The transition function appends each row to the row store
 *	  (pinned host memory when the GPU will run the fit) with its id and
 *	  demand; the final function fits the model.
 *
 * Under a parallel plan each process collects its share of the rows, ids
 * and demands into plain host memory, the serial function hands them to
 * the leader (partial_state.c: the ids and demands are per-row columns of
 * the partial state, in shared memory with the rows when a segment can be
 * had), and the combine function joins the shares.  The fit puts the rows
 * in the order of their ids (pmedian_run.c), so the model equals the
 * serial plan's whatever order the shares arrive in.
 *
 * IDENTIFICATION
 *	  src/pmedian_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include "partial_state.h"

#include "catalog/pg_type.h"

PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_real);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_numeric);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_vector);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_transfn_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_finalfn);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_serialfn);
PG_FUNCTION_INFO_V1(gpuclust_pmedian_combinefn);

typedef struct PmAggState
{
	PmInput		in;
	GcPmParams	params;
	GcSmallGroups small_groups; /* the option small_groups */
	double		started_ms;		/* when the first row arrived */
	Jsonb	   *options;		/* the options argument; NULL when none */
	bool		serialized;		/* the rows went to a partial state */
	GcPartialSegments *segments;	/* segments whose rows are borrowed */
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
		options = PG_GETARG_JSONB_P_COPY(argp + 1);
	gc_parse_pmedian_options(options, gc_k_argument(fcinfo, argp), &state->params,
							 &state->small_groups);
	gc_check_pmedian_demand(&state->params, WITH_DEMAND(fcinfo));
	state->options = options;
	gc_pm_input_init(&state->in, WITH_DEMAND(fcinfo), aggcontext);
	gc_partial_collecting(fcinfo, &state->in.input);
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
		if (PG_ARGISNULL(argp) || gc_k_argument(fcinfo, argp) != state->params.p)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("p must be the same for every row of one pmedian_gpu")));
		if (state->serialized)
			elog(ERROR, "pmedian_gpu partial state used after it was serialized");
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

/* vectors of any number type */
Datum
gpuclust_pmedian_transfn_numeric(PG_FUNCTION_ARGS)
{
	return pmedian_transfn(fcinfo, GC_NUMERIC_ARRAY);
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
 * Fit the model; NULL when there were no rows with a vector, or fewer
 * than p and option small_groups is "null"
 */
Datum
gpuclust_pmedian_finalfn(PG_FUNCTION_ARGS)
{
	PmAggState *state;
	PmedianModel *model;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (PmAggState *) PG_GETARG_POINTER(0);
	if (!state->in.input.started)
		PG_RETURN_NULL();
	model = gc_run_pmedian(&state->in, &state->params, state->small_groups,
						   gc_now_ms() - state->started_ms, NULL, NULL);
	if (model == NULL)
		PG_RETURN_NULL();
	PG_RETURN_POINTER(model);
}

/*
 * The partial state of one process as bytea: p, the options, the row
 * counts, the rows and, as per-row columns, their ids and demands (the
 * rows are released here, as they are handed on)
 */
Datum
gpuclust_pmedian_serialfn(PG_FUNCTION_ARGS)
{
	PmAggState *state = (PmAggState *) PG_GETARG_POINTER(0);
	GcPartialMeta meta = {state->params.p, state->options, state->started_ms};
	const void *columns[2] = {state->in.ids, state->in.demand};
	bytea	   *result;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "pmedian_gpu serial function called in non-aggregate context");
	if (state->serialized)
		elog(ERROR, "pmedian_gpu partial state serialized twice");
	result = gc_partial_serialize(&state->in.input, &meta, columns,
								  state->in.with_demand ? 2 : 1);
	state->serialized = true;
	gc_input_release(&state->in.input);
	PG_RETURN_BYTEA_P(result);
}

/*
 * The leader's state, made by the first partial state to arrive: the same
 * p and options; whether rows carry demands is settled by the first rows
 */
static PmAggState *
start_combined_state(const GcPartialRows *first, MemoryContext aggcontext)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(aggcontext);
	PmAggState *state = palloc0(sizeof(PmAggState));

	if (first->meta.options)
		state->options = (Jsonb *) pg_detoast_datum_copy((struct varlena *) first->meta.options);
	gc_parse_pmedian_options(state->options, first->meta.k, &state->params,
							 &state->small_groups);
	gc_pm_input_init(&state->in, false, aggcontext);
	gc_input_release_at_reset(&state->in.input, aggcontext);
	state->segments = gc_partial_segments_create(aggcontext);
	state->in.input.segments = state->segments;
	state->started_ms = first->meta.started_ms;
	MemoryContextSwitchTo(oldcontext);
	return state;
}

/*
 * Join a deserialized partial state (gpuclust_partial_deserialfn's) into
 * the leader's state: its rows into the row store, its ids and demands,
 * per-row columns 0 and 1, into the arrays beside it
 */
Datum
gpuclust_pmedian_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	PmAggState *state = PG_ARGISNULL(0) ? NULL : (PmAggState *) PG_GETARG_POINTER(0);
	GcPartialRows *part = gc_partial_share(fcinfo, &aggcontext);
	bool		with_demand;

	if (part == NULL)
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	if (state == NULL)
		state = start_combined_state(part, aggcontext);
	else if (part->meta.k != state->params.p)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("p must be the same for every row of one pmedian_gpu")));
	state->started_ms = Min(state->started_ms, part->meta.started_ms);
	with_demand = part->columns == 2;
	if (part->n > 0 && part->columns != 1 && part->columns != 2)
		elog(ERROR, "pmedian_gpu partial state has %d per-row columns", part->columns);
	if (part->n > 0 && !state->in.input.started)
	{
		gc_check_pmedian_demand(&state->params, with_demand);
		state->in.with_demand = with_demand;
	}
	else if (part->n > 0 && with_demand != state->in.with_demand)
		elog(ERROR, "pmedian_gpu partial states with and without demands");
	gc_partial_adopt(&state->in.input, part, state->segments, gc_choose_service_device);
	if (part->n > 0)
		gc_pm_input_add_ids(&state->in, gc_partial_column(part, 0),
							with_demand ? gc_partial_column(part, 1) : NULL, part->n);
	PG_RETURN_POINTER(state);
}
