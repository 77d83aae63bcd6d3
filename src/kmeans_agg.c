/*-------------------------------------------------------------------------
 *
 * kmeans_agg.c
 *	  The kmeans_gpu aggregate: the transition function appends each vector
 *	  to the row store (pinned host memory when the GPU will run the fit)
 *	  and the final function fits the model.
 *
 * Under a parallel plan each process collects its share of the rows into
 * plain host memory (a worker never touches the GPU), the serial function
 * hands them to the leader (partial_state.c: in shared memory when gpuclust
 * is preloaded), and the combine function joins the shares into the
 * leader's row store, borrowing rows in place.  The fit does not depend on
 * the order of the rows (seeding draws from per-row hashes, centroid sums
 * are exact), so the model equals the serial plan's.  The functions work
 * on the state alone, whatever the element type of the vectors, so every
 * aggregate whose transition state is a KmeansAggState can name them.
 *
 * IDENTIFICATION
 *	  src/kmeans_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "partial_state.h"

#include "catalog/pg_type.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn_numeric);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn_vector);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_transfn_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_finalfn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_serialfn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_combinefn);

typedef struct KmeansAggState
{
	GcInput		input;
	GcKmeansOptions opts;
	double		started_ms;		/* when the first row arrived */
	int32		k;
	Jsonb	   *options;		/* the options argument; NULL when none */
	bool		serialized;		/* the rows went to a partial state */
	int			partial_states; /* partial states combined into this one */
	int			shared_memory_states;	/* of which came in shared memory */
	GcPartialSegments *segments;	/* segments whose rows are borrowed */
} KmeansAggState;

/* k, declared integer or bigint */
static int
k_argument(FunctionCallInfo fcinfo)
{
	return gc_k_value(PG_GETARG_DATUM(2), get_fn_expr_argtype(fcinfo->flinfo, 2));
}

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
		options = PG_GETARG_JSONB_P_COPY(3);
	state->k = k_argument(fcinfo);
	gc_parse_kmeans_options(options, state->k, &state->opts);
	state->options = options;
	gc_input_init(&state->input);
	state->input.unit = state->opts.params.metric == GC_METRIC_COSINE;
	gc_partial_collecting(fcinfo, &state->input);
	state->input.work_per_row = (double) state->opts.params.k * state->opts.params.n_init;
	gc_input_release_at_reset(&state->input, aggcontext);
	state->started_ms = gc_now_ms();
	MemoryContextSwitchTo(oldcontext);
	return state;
}

static Datum
kmeans_transfn(FunctionCallInfo fcinfo, Oid format)
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
		if (PG_ARGISNULL(2) || k_argument(fcinfo) != state->opts.params.k)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be the same for every row of one kmeans_gpu")));
		if (state->serialized)
			elog(ERROR, "kmeans_gpu partial state used after it was serialized");
	}

	if (PG_ARGISNULL(1))
		gc_input_add_null(&state->input);
	else
		gc_input_add(&state->input, PG_GETARG_DATUM(1), format);
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

/* vectors of any number type, with a bigint k */
Datum
gpuclust_kmeans_transfn_numeric(PG_FUNCTION_ARGS)
{
	return kmeans_transfn(fcinfo, GC_NUMERIC_ARRAY);
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_kmeans_transfn_vector(PG_FUNCTION_ARGS)
{
	return kmeans_transfn(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_kmeans_transfn_halfvec(PG_FUNCTION_ARGS)
{
	return kmeans_transfn(fcinfo, GC_PGVECTOR_HALFVEC);
}

/*
 * Fit the model; NULL when there were no non-NULL rows
 */
Datum
gpuclust_kmeans_finalfn(PG_FUNCTION_ARGS)
{
	KmeansAggState *state;
	KmeansModel *model;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (KmeansAggState *) PG_GETARG_POINTER(0);
	if (!state->input.started)
		PG_RETURN_NULL();
	model = gc_run_kmeans(&state->input, &state->opts,
						  gc_now_ms() - state->started_ms, NULL, NULL);
	model->partial_states = state->partial_states;
	model->shared_memory_states = state->shared_memory_states;
	PG_RETURN_POINTER(model);
}

/*
 * The partial state of one process as bytea: k, the options, the row
 * counts and the rows themselves (released here, as they are handed on)
 */
Datum
gpuclust_kmeans_serialfn(PG_FUNCTION_ARGS)
{
	KmeansAggState *state = (KmeansAggState *) PG_GETARG_POINTER(0);
	GcPartialMeta meta = {state->k, state->options, state->started_ms};
	bytea	   *result;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "kmeans_gpu serial function called in non-aggregate context");
	if (state->serialized)
		elog(ERROR, "kmeans_gpu partial state serialized twice");
	result = gc_partial_serialize(&state->input, &meta, NULL, 0);
	state->serialized = true;
	gc_input_release(&state->input);
	PG_RETURN_BYTEA_P(result);
}

/*
 * The leader's state, made by the first partial state to arrive: the same
 * k and options, its rows in memory the fit's device reads
 */
static KmeansAggState *
start_combined_state(const GcPartialRows *first, MemoryContext aggcontext)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(aggcontext);
	KmeansAggState *state = palloc0(sizeof(KmeansAggState));

	state->k = first->meta.k;
	if (first->meta.options)
		state->options = (Jsonb *) pg_detoast_datum_copy((struct varlena *) first->meta.options);
	gc_parse_kmeans_options(state->options, state->k, &state->opts);
	gc_input_init(&state->input);
	gc_input_release_at_reset(&state->input, aggcontext);
	state->segments = gc_partial_segments_create(aggcontext);
	state->input.segments = state->segments;
	state->started_ms = first->meta.started_ms;
	MemoryContextSwitchTo(oldcontext);
	return state;
}

/*
 * Join a deserialized partial state (gpuclust_partial_deserialfn's) into
 * the leader's state
 */
Datum
gpuclust_kmeans_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	KmeansAggState *state = PG_ARGISNULL(0) ? NULL : (KmeansAggState *) PG_GETARG_POINTER(0);
	GcPartialRows *part = gc_partial_share(fcinfo, &aggcontext);

	if (part == NULL)
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	if (state == NULL)
		state = start_combined_state(part, aggcontext);
	else if (part->meta.k != state->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for every row of one kmeans_gpu")));

	state->started_ms = Min(state->started_ms, part->meta.started_ms);
	state->partial_states++;
	gc_partial_adopt(&state->input, part, state->segments, gc_choose_service_device);
	if (part->segment != NULL)
		state->shared_memory_states++;
	PG_RETURN_POINTER(state);
}
