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
 * gpuclust_kmeans_assign_collect(id, vec, k, options), kmeans_gpu_assign's
 * collection (kmeans_assign.c), is the same aggregate with the ids kept
 * beside the rows (assign_rows.h): a per-row column of its partial states,
 * its NULL rows in their extra bytes.  Its final function leaves the labels
 * in the sink of the kmeans_gpu_assign call that runs it.
 *
 * IDENTIFICATION
 *	  src/kmeans_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "assign_rows.h"
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
PG_FUNCTION_INFO_V1(gpuclust_kmeans_assign_transfn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_assign_combinefn);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_assign_finalfn);

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
	GcAssignRows *assign;		/* kmeans_gpu_assign's ids; NULL for kmeans_gpu */
} KmeansAggState;

/*
 * Where the arguments after the state are: kmeans_gpu(vec, k [, options]);
 * gpuclust_kmeans_assign_collect(id, vec, k, options)
 */
#define ARG_VEC(assign) ((assign) ? 2 : 1)
#define ARG_K(assign) ((assign) ? 3 : 2)

/*
 * Create the state on the first row: parse k and options once
 */
static KmeansAggState *
start_state(FunctionCallInfo fcinfo, MemoryContext aggcontext, bool assign)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(aggcontext);
	KmeansAggState *state = palloc0(sizeof(KmeansAggState));
	Jsonb	   *options = NULL;
	int			karg = ARG_K(assign);

	if (PG_ARGISNULL(karg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be NULL")));
	if (PG_NARGS() > karg + 1 && !PG_ARGISNULL(karg + 1))
		options = PG_GETARG_JSONB_P_COPY(karg + 1);
	state->k = gc_k_argument(fcinfo, ARG_K(assign));
	gc_parse_kmeans_options(options, state->k, &state->opts);
	state->options = options;
	gc_input_init(&state->input);
	state->input.unit = state->opts.params.metric == GC_METRIC_COSINE;
	state->input.hashes_at_fit = !gc_partial_collecting(fcinfo, &state->input);
	state->input.work_per_row = (double) state->opts.params.k * state->opts.params.n_init;
	gc_input_release_at_reset(&state->input, aggcontext);
	if (assign)
		state->assign = gc_assign_rows_create(aggcontext);
	state->started_ms = gc_now_ms();
	MemoryContextSwitchTo(oldcontext);
	return state;
}

/* Add the row's vector (and, for kmeans_gpu_assign, its id) to the state */
static KmeansAggState *
kmeans_transition(FunctionCallInfo fcinfo, Oid format, bool assign)
{
	MemoryContext aggcontext;
	KmeansAggState *state;
	int			vecarg = ARG_VEC(assign);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "kmeans_gpu transition function called in non-aggregate context");

	if (PG_ARGISNULL(0))
		state = start_state(fcinfo, aggcontext, assign);
	else
	{
		state = (KmeansAggState *) PG_GETARG_POINTER(0);
		if (PG_ARGISNULL(ARG_K(assign)) || gc_k_argument(fcinfo, ARG_K(assign)) != state->opts.params.k)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be the same for every row of one kmeans_gpu")));
		if (state->serialized)
			elog(ERROR, "kmeans_gpu partial state used after it was serialized");
	}

	if (PG_ARGISNULL(vecarg))
		gc_input_add_null(&state->input);
	else
		gc_input_add(&state->input, PG_GETARG_DATUM(vecarg), format);
	if (assign)
		gc_assign_rows_add(state->assign, PG_ARGISNULL(1),
						   PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1), PG_ARGISNULL(vecarg));
	return state;
}

static Datum
kmeans_transfn(FunctionCallInfo fcinfo, Oid format)
{
	PG_RETURN_POINTER(kmeans_transition(fcinfo, format, false));
}

/*
 * gpuclust_kmeans_assign_collect(id bigint, vec anyelement, k, options):
 * kmeans_gpu_assign's collection, every vector type through one function
 */
Datum
gpuclust_kmeans_assign_transfn(PG_FUNCTION_ARGS)
{
	Oid		   *format = (Oid *) fcinfo->flinfo->fn_extra;

	/* the vectors' format, looked up once per query */
	if (format == NULL)
	{
		format = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(Oid));
		*format = gc_spi_vector_format(get_fn_expr_argtype(fcinfo->flinfo, ARG_VEC(true)));
		fcinfo->flinfo->fn_extra = format;
	}
	PG_RETURN_POINTER(kmeans_transition(fcinfo, *format, true));
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
	if (model == NULL)
		PG_RETURN_NULL();
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
	GcPartialMeta meta = {state->k, state->options, state->started_ms, NULL, 0};
	const void *ids[1] = {state->assign ? state->assign->ids : NULL};
	bytea	   *result;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "kmeans_gpu serial function called in non-aggregate context");
	if (state->serialized)
		elog(ERROR, "kmeans_gpu partial state serialized twice");
	if (state->assign)
		meta.extra = gc_assign_rows_extra(state->assign, &meta.extra_bytes);
	result = gc_partial_serialize(&state->input, &meta, state->assign ? ids : NULL,
								  state->assign ? 1 : 0);
	state->serialized = true;
	gc_input_release(&state->input);
	PG_RETURN_BYTEA_P(result);
}

/*
 * The leader's state, made by the first partial state to arrive: the same
 * k and options, its rows in memory the fit's device reads
 */
static KmeansAggState *
start_combined_state(const GcPartialRows *first, MemoryContext aggcontext, bool assign)
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
	if (assign)
		state->assign = gc_assign_rows_create(aggcontext);
	MemoryContextSwitchTo(oldcontext);
	return state;
}

/*
 * Join a deserialized partial state (gpuclust_partial_deserialfn's) into
 * the leader's state; for kmeans_gpu_assign its ids too, per-row column 0
 */
static Datum
kmeans_combine(FunctionCallInfo fcinfo, bool assign)
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
	if (part->columns != (assign && part->n > 0 ? 1 : 0) || (!assign && part->meta.extra_bytes != 0))
		elog(ERROR, "kmeans_gpu partial state has %d per-row columns", part->columns);
	if (state == NULL)
		state = start_combined_state(part, aggcontext, assign);
	else if (part->meta.k != state->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for every row of one kmeans_gpu")));

	state->started_ms = Min(state->started_ms, part->meta.started_ms);
	state->partial_states++;
	gc_partial_adopt(&state->input, part, state->segments, gc_choose_service_device);
	if (assign)
		gc_assign_rows_append(state->assign, part->n > 0 ? gc_partial_column(part, 0) : NULL,
							  part->n, part->meta.extra, part->meta.extra_bytes);
	if (gc_partial_in_shared_memory(part))
		state->shared_memory_states++;
	PG_RETURN_POINTER(state);
}

Datum
gpuclust_kmeans_combinefn(PG_FUNCTION_ARGS)
{
	return kmeans_combine(fcinfo, false);
}

Datum
gpuclust_kmeans_assign_combinefn(PG_FUNCTION_ARGS)
{
	return kmeans_combine(fcinfo, true);
}

/*
 * kmeans_gpu_assign's final function: fits the rows and leaves every
 * row's label and distance, with the ids, in the sink of the
 * kmeans_gpu_assign call running the query (refused outside one); the
 * number of rows
 */
Datum
gpuclust_kmeans_assign_finalfn(PG_FUNCTION_ARGS)
{
	KmeansAggState *state = PG_ARGISNULL(0) ? NULL : (KmeansAggState *) PG_GETARG_POINTER(0);
	GcAssignSink *sink = gc_assign_sink;
	GcAssignRows *rows;
	char	   *extra;
	int32		extra_bytes;

	if (sink == NULL || sink->filled)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuclust_kmeans_assign_collect is kmeans_gpu_assign's own aggregate"),
				 errhint("Call kmeans_gpu_assign(query, k, options).")));
	rows = gc_assign_rows_create(sink->context);
	if (state != NULL)
	{
		int64		n = state->input.started ? state->input.rows.n : 0;

		gc_input_count_rows(&state->input);
		gc_fit_memory_count(&state->input.memory,
							add_size(mul_size(Max(n, 1), sizeof(int32) + sizeof(double)),
									 mul_size(state->assign->ids_capacity, sizeof(int64))),
							"The rows' ids, labels and distances");
		sink->labels = MemoryContextAllocHuge(sink->context, sizeof(int32) * Max(n, 1));
		sink->distances = MemoryContextAllocHuge(sink->context, sizeof(double) * Max(n, 1));
		/* without a model (fewer rows than k, small_groups "null") no row has a cluster */
		if (state->input.started &&
			gc_run_kmeans(&state->input, &state->opts, gc_now_ms() - state->started_ms,
						  sink->labels, sink->distances) == NULL)
			memset(sink->labels, 0xff, sizeof(int32) * n);
		sink->held_bytes = gc_input_bytes(&state->input);
		extra = gc_assign_rows_extra(state->assign, &extra_bytes);
		gc_assign_rows_append(rows, (const char *) state->assign->ids, state->assign->nids,
							  extra, extra_bytes);
	}
	sink->rows = rows;
	sink->filled = true;
	PG_RETURN_INT64(rows->nids + rows->nnull_vectors);
}
