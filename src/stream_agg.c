/*-------------------------------------------------------------------------
 *
 * stream_agg.c
 *	  The streaming k-means SQL functions: the kmeans_stream_state
 *	  aggregate (rows into a summary), kmeans_stream_merge (function and
 *	  aggregate, also the combine function that lets parallel workers and
 *	  remote servers each summarise a part), kmeans_stream_final (the
 *	  final function: the summary with its raw rows clustered) and
 *	  kmeans_stream_model (weighted k-means over a summary, giving a
 *	  kmeans_model).
 *
 * The transition state is kmeans_stream itself, not internal, so that
 * partial aggregation can ship it between processes and servers; inside
 * one aggregate it is a read-write expanded object updated in place.
 *
 * IDENTIFICATION
 *	  src/stream_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"

PG_FUNCTION_INFO_V1(gpuclust_stream_transfn);
PG_FUNCTION_INFO_V1(gpuclust_stream_transfn_real);
PG_FUNCTION_INFO_V1(gpuclust_stream_transfn_numeric);
PG_FUNCTION_INFO_V1(gpuclust_stream_transfn_vector);
PG_FUNCTION_INFO_V1(gpuclust_stream_transfn_halfvec);
PG_FUNCTION_INFO_V1(gpuclust_stream_finalfn);
PG_FUNCTION_INFO_V1(gpuclust_stream_merge);
PG_FUNCTION_INFO_V1(gpuclust_stream_model);

/*
 * Start the state on the first non-NULL vector: k, options, dimension
 */
static GcStreamState *
start_state(FunctionCallInfo fcinfo, MemoryContext aggcontext, int d)
{
	GcStreamHeader shape;
	GcStreamState *state;
	bool		block_given;
	size_t		max_block_bytes,
				max_level_bytes;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be NULL")));
	block_given = gc_parse_stream_options(PG_NARGS() > 3 && !PG_ARGISNULL(3) ? PG_GETARG_JSONB_P(3) : NULL,
										  gc_k_argument(fcinfo, 2), &shape);
	shape.d = d;
	gc_stream_plan_memory(&shape, block_given ? GC_STREAM_BLOCK_GIVEN : GC_STREAM_BLOCK_DEFAULT,
						  &max_block_bytes, &max_level_bytes);
	state = gc_stream_state_new(aggcontext, &shape, true);
	gc_stream_limit_memory(&state->stream, max_block_bytes, max_level_bytes);
	return state;
}

/*
 * The read-write state of this aggregate: the one built by an earlier
 * call, or an expanded copy of a flat one
 */
static GcStreamState *
current_state(FunctionCallInfo fcinfo, MemoryContext aggcontext)
{
	GcStreamState *state = gc_stream_state_rw(PG_GETARG_DATUM(0));

	return state ? state : gc_stream_state_copy(PG_GETARG_DATUM(0), aggcontext, true);
}

static Datum
stream_transfn(FunctionCallInfo fcinfo, Oid format)
{
	MemoryContext aggcontext;
	GcStreamState *state;
	GcVectorView view;
	GcError		err = {0};
	double	   *slot;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("kmeans_stream_transfn is the transition function of the aggregate kmeans_stream_state"),
				 errhint("Call kmeans_stream_state(vec, k [, options]) as an aggregate.")));
	if (PG_ARGISNULL(1))
	{
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	if (PG_ARGISNULL(0))
	{
		gc_vector_view(PG_GETARG_DATUM(1), format, 1, &view);
		state = start_state(fcinfo, aggcontext, view.d);
	}
	else
	{
		state = current_state(fcinfo, aggcontext);
		if (PG_ARGISNULL(2) || gc_k_argument(fcinfo, 2) != state->stream.k)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be the same for every row of one kmeans_stream_state")));
		gc_vector_view(PG_GETARG_DATUM(1), format, state->stream.rows + 1, &view);
	}
	if (view.d != state->stream.d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector in row " INT64_FORMAT " has %d dimensions, but earlier rows have %d",
						state->stream.rows + 1, view.d, state->stream.d)));
	slot = gc_stream_reserve(&state->stream, &err);
	if (slot == NULL)
		gc_stream_raise(&err);
	gc_vector_copy(&view, slot, state->stream.rows + 1);
	if (state->stream.cosine)
		gc_input_normalize(slot, state->stream.d, state->stream.rows + 1);
	if (gc_stream_commit(&state->stream, &err) != GC_OK)
		gc_stream_raise(&err);
	PG_RETURN_DATUM(EOHPGetRWDatum(&state->hdr));
}

Datum
gpuclust_stream_transfn(PG_FUNCTION_ARGS)
{
	return stream_transfn(fcinfo, FLOAT8OID);
}

Datum
gpuclust_stream_transfn_real(PG_FUNCTION_ARGS)
{
	return stream_transfn(fcinfo, FLOAT4OID);
}

/* vectors of any number type */
Datum
gpuclust_stream_transfn_numeric(PG_FUNCTION_ARGS)
{
	return stream_transfn(fcinfo, GC_NUMERIC_ARRAY);
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_stream_transfn_vector(PG_FUNCTION_ARGS)
{
	return stream_transfn(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_stream_transfn_halfvec(PG_FUNCTION_ARGS)
{
	return stream_transfn(fcinfo, GC_PGVECTOR_HALFVEC);
}

/*
 * A flat copy of the summary in value with its raw rows clustered into
 * centres, so that stored summaries stay small
 */
static Datum
compacted_copy(Datum value)
{
	GcStreamState *copy = gc_stream_state_compacted_copy(value, CurrentMemoryContext, true);
	Datum		result;

	result = gc_stream_state_flatten(copy);
	gc_stream_state_free(copy);
	return result;
}

/*
 * kmeans_stream_final(kmeans_stream): the final function of both
 * aggregates; it leaves the (read-only) state as it is
 */
Datum
gpuclust_stream_finalfn(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(compacted_copy(PG_GETARG_DATUM(0)));
}

/*
 * kmeans_stream_merge(a, b): one summary of both.  In an aggregate
 * (transition or combine function) a is the state, updated in place;
 * called directly, a new compacted summary.  NULLs are ignored.
 */
Datum
gpuclust_stream_merge(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	GcStreamState *state;
	Datum		result;

	if (PG_ARGISNULL(0) && PG_ARGISNULL(1))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	if (PG_ARGISNULL(0))
		PG_RETURN_DATUM(PG_GETARG_DATUM(1));
	if (AggCheckCallContext(fcinfo, &aggcontext))
	{
		state = current_state(fcinfo, aggcontext);
		gc_stream_state_merge(state, PG_GETARG_DATUM(1));
		PG_RETURN_DATUM(EOHPGetRWDatum(&state->hdr));
	}
	state = gc_stream_state_copy(PG_GETARG_DATUM(0), CurrentMemoryContext, true);
	gc_stream_state_merge(state, PG_GETARG_DATUM(1));
	result = compacted_copy(EOHPGetRODatum(&state->hdr));
	gc_stream_state_free(state);
	PG_RETURN_DATUM(result);
}

/*
 * Restarts of the model's fit unless the options say: summaries are small,
 * and k-means++ on them lands in poor local optima often enough that
 * restarts decide the SSQ.  On SIPU birch1 (k = 100, bench/stream_bench.py)
 * 30 restarts gave 1.056, 1.058 and 1.039 times kmeans_gpu's SSQ for one
 * summary, 16 merged and a parallel plan, 100 gave 1.031, 1.029 and 1.005,
 * at 0.7 s for a 2,000-point summary on one CPU core.
 */
#define STREAM_MODEL_N_INIT 100

/*
 * A model of a summary has the summary's metric: its rows were made unit
 * vectors (or not) as they entered, so an option naming the other metric
 * is an error
 */
static void
check_model_metric(const GcKmeansOptions *opts, const GcStream *s)
{
	if (!opts->metric_given || (opts->params.metric == GC_METRIC_COSINE) == s->cosine)
		return;
	if (s->cosine)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("this kmeans_stream summary is of unit rows, for the cosine metric"),
				 errhint("Leave \"metric\" out of the options, or summarise the rows again without \"metric\": \"cosine\".")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("this kmeans_stream summary is Euclidean"),
			 errhint("Summarise the rows with kmeans_stream_state(vec, k, '{\"metric\": \"cosine\"}') for a cosine model.")));
}

/*
 * kmeans_stream_model(state, options) -> kmeans_model: weighted k-means
 * with the summary's k over its points; sizes are the rows each cluster
 * stands for, and the inertia, over the summary's points rather than the
 * rows, is reported as summary_inertia.  NULL options are the defaults,
 * as everywhere; a NULL state gives NULL.
 */
Datum
gpuclust_stream_model(PG_FUNCTION_ARGS)
{
	GcStreamState *state;
	GcStream   *s;
	GcKmeansOptions opts;
	GcKmeansResult result;
	GcModelOrigin origin = {0};
	KmeansModel *model;
	GcDevice	device;
	GcStreamService *service;
	GcError		err = {0};
	uint32		progress;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = gc_stream_state_copy(PG_GETARG_DATUM(0), CurrentMemoryContext, false);
	s = &state->stream;
	gc_parse_kmeans_options(PG_NARGS() > 1 && !PG_ARGISNULL(1) ? PG_GETARG_JSONB_P(1) : NULL,
							s->k, &opts);
	check_model_metric(&opts, s);
	if (opts.params.levels >= 2 || opts.params.max_cluster_size > 0 ||
		opts.params.max_cluster_size_factor > 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"levels\", \"max_cluster_size\" and \"max_cluster_size_factor\" apply to fits over rows"),
				 errhint("Fit the rows with kmeans_gpu to bound the clusters or fit in two levels.")));
	opts.params.metric = s->cosine ? GC_METRIC_COSINE : GC_METRIC_EUCLIDEAN;
	gc_check_init_shape(&opts, s->d);
	if (!opts.n_init_given && opts.params.init != GC_INIT_GIVEN)
		opts.params.n_init = STREAM_MODEL_N_INIT;
	opts.params.k = gc_group_clusters("k", s->k, gc_stream_points(s), "summary points",
									  opts.small_groups);
	if (opts.params.k == 0)
	{
		gc_stream_state_free(state);
		PG_RETURN_NULL();
	}
	gc_stream_model_memory(s, opts.params.k);
	model = gc_model_alloc(opts.params.k, s->d);
	gc_choose_service_device(&device);
	gc_settle_device(&device, (double) gc_stream_points(s) * opts.params.k * s->d * opts.params.n_init);
	progress = gc_progress_fit(0, GC_FIT_STREAM_MODEL, &opts.params, gc_stream_points(s),
							   &device);
	service = gc_stream_use_service(s, &device, progress, CurrentMemoryContext);
	if (gc_stream_fit(s, device.kmeans, &opts.params, KmeansModelCentroids(model),
					  KmeansModelSizes(model), &result, &err) != GC_OK)
		gc_stream_raise(&err);
	gc_progress_end(progress);
	origin.device = device.kind;
	origin.device_reason = device.reason;
	origin.path = gc_stream_service_ran(service) ? GC_PATH_SERVICE : GC_PATH_BACKEND;
	origin.fitted_on = GC_FITTED_ON_SUMMARY;
	origin.precision_requested = opts.params.precision;
	origin.metric = opts.params.metric;
	origin.rows = s->rows;
	origin.null_rows = 0;		/* the summary does not count NULL rows */
	origin.input = InvalidOid;	/* nor keep the rows' type: "unknown" */
	origin.collect_ms = 0.0;
	model->k_requested = s->k;
	gc_model_record_result(model, &result, &origin);
	gc_stream_state_free(state);
	PG_RETURN_POINTER(model);
}
