/*-------------------------------------------------------------------------
 *
 * kmeans_run.c
 *	  Runs one k-means fit over collected rows on the chosen backend and
 *	  returns the model, raising any engine failure as an error.  Shared by
 *	  the aggregate, the window function and the assignment function.
 *	  The fit runs in the GPU service when its device was chosen for it
 *	  (gpu_service.h), else here.
 *	  Also the one copier from an engine result to a kmeans_model, which
 *	  the fit over rows and the model of a stream summary both use.
 *
 * IDENTIFICATION
 *	  src/kmeans_run.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "gpu_service.h"

/*
 * Tell the user that the precision asked for mislabelled a sample of the
 * rows, and which ran instead
 */
static void
report_fall_back(const GcKmeansResult *result)
{
	ereport(NOTICE,
			(errmsg("precision \"%s\" mislabels these rows: the fit ran in %s",
					gc_precision_name(result->check.checked),
					gc_precision_name(result->precision)),
			 errdetail("%.1f%% of the labels of a sample of %d rows differed from exact ones, and their inertia was %.3g times the exact labels' (the check allows %g).",
					   100.0 * result->check.disagreement, result->check.sampled,
					   result->check.inertia_excess + 1.0, 1.0 + GC_PRECISION_MAX_EXCESS),
			 errhint("Columns of very different scales defeat reduced precision: rescale them, or ask for precision \"float32\".")));
}

/*
 * Record in model (whose centroids and sizes the fit wrote) what the fit
 * reports and where it ran.  The precision is the one that ran (the
 * engine's result says): the CPU backend computes in double whatever was
 * asked, the GPU as asked unless the rows spread wider than float32 holds
 * (then in float64).  The model is then validated as text input and
 * binary receive validate it, so that it reads back.  A reduced precision
 * that failed its check on the sample (engine/precision_check.c) and fell
 * back says so in a NOTICE, unless auto asked for the fastest that passes.
 */
void
gc_model_record_result(KmeansModel *model, const GcKmeansResult *result,
					   const GcModelOrigin *origin)
{
	const char *kernel = result->kernel ? result->kernel : "";
	const char *suffix = origin->fitted_on == GC_FITTED_ON_SUMMARY ? "-weighted" : "";

	model->device = origin->device;
	model->device_reason = origin->device_reason;
	model->path = origin->path;
	model->fitted_on = origin->fitted_on;
	model->rows = origin->rows;
	model->null_rows = origin->null_rows;
	model->iterations = result->iterations;
	model->converged = result->converged;
	if (origin->fitted_on == GC_FITTED_ON_SUMMARY)
		model->summary_inertia = result->inertia;
	else
		model->inertia = result->inertia;
	model->collect_ms = origin->collect_ms;
	model->transfer_ms = result->timings.transfer_ms;
	model->seeding_ms = result->timings.seeding_ms;
	model->check_ms = result->timings.check_ms;
	model->iterations_ms = result->timings.iterations_ms;
	model->labeling_ms = result->timings.labeling_ms;
	model->update_ms = result->timings.update_ms;
	model->precision_requested = origin->precision_requested;
	model->precision = result->precision;
	model->precision_check = result->check.outcome;
	model->sample_disagreement = result->check.disagreement;
	model->sample_inertia_excess = result->check.inertia_excess;
	model->metric = origin->metric;
	model->input = (int16) gc_model_input_code(origin->input);
	model->pruned = result->pruned;
	model->init = (int16) gc_model_init_code(result->init);
	model->skipped_fraction = result->skipped_fraction;
	model->coarse_k = result->coarse_k;
	model->max_cluster_size = result->max_cluster_size;
	model->size_min = result->size_min;
	model->size_max = result->size_max;
	model->size_cv = result->size_cv;
	model->balance_rounds = result->balance_rounds;
	model->balance_moves = result->balance_moves;
	model->coarse_ms = result->timings.coarse_ms;
	model->split_ms = result->timings.split_ms;
	model->refine_ms = result->timings.refine_ms;
	model->balance_ms = result->timings.balance_ms;
	model->gpus_used = origin->device == GC_KIND_GPU ? Max(origin->plan.lanes, 1) : 0;
	model->resident_fraction = origin->device == GC_KIND_GPU && origin->plan.lanes > 0 ?
		origin->plan.resident_fraction : 1.0;
	model->streamed_bytes = origin->device == GC_KIND_GPU ? origin->plan.streamed_bytes : 0;
	if (strlen(kernel) + strlen(suffix) >= sizeof(model->kernel))
		elog(ERROR, "kernel name \"%s%s\" does not fit in a kmeans_model", kernel, suffix);
	snprintf(model->kernel, sizeof(model->kernel), "%s%s", kernel, suffix);
	gc_model_check(model, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	if (result->check.outcome == GC_CHECK_FELL_BACK &&
		origin->precision_requested != GC_PRECISION_AUTO)
		report_fall_back(result);
}

/*
 * A bound on the clusters' rows must leave room for every row
 */
static void
check_balance_bound(const GcKmeansParams *params, int64 n)
{
	int64		cap = gc_kmeans_balance_cap(params, n);

	if (cap > 0 && (double) cap * params->k < (double) n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_cluster_size " INT64_FORMAT " times k (%d) is below the number of rows (" INT64_FORMAT ")",
						cap, params->k, n),
				 errhint("Use a max_cluster_size of at least " INT64_FORMAT ", or a larger k.",
						 (n + params->k - 1) / params->k)));
}

/*
 * Run the fit in the GPU service when input's device was chosen for it;
 * otherwise, or when the service cannot run it, here: a GPU fit as
 * planned over its GPUs (gc_plan_gpu_fit), in one session or sharded.
 * Returns the path it ran on, and in plan how it ran on its GPUs;
 * engine failures are raised.
 */
static GcFitPath
fit_kmeans(GcInput *input, GcKmeansParams *params, GcKmeansResult *result,
		   GcServiceFit *service_fit, GcGpuPlan *plan)
{
	GcError		err = {0};
	GcKmeansParams run = *params;
	const GcKmeansBackend *backend = input->device.kmeans;
	int			devices[GC_FIT_MAX_GPUS];

	if (input->device.service)
	{
		service_fit->kind = GC_SERVICE_KMEANS;
		service_fit->params = params;
		service_fit->result = result;
		service_fit->may_shard = true;
		if (gc_service_fit_input(input, service_fit))
		{
			*plan = service_fit->plan;
			return GC_PATH_SERVICE;
		}
		/* the progress shows the device the fit now runs on */
		input->progress = gc_progress_fit(input->progress, input->fit, params,
										  input->rows.n, &input->device);
	}
	gc_kmeans_plan_in_core(plan, input->device.kind == GC_KIND_GPU ? 1 : 0);
#ifdef GC_WITH_CUDA
	if (input->device.kind == GC_KIND_GPU)
	{
		backend = gc_plan_gpu_fit(&input->device, &input->rows, &run, plan, devices);
		/* a backend that reads doubles only widens float32 rows first */
		if (input->rows.narrow && !backend->reads_narrow)
			gc_fit_memory_count(&input->memory,
								mul_size((size_t) input->rows.n,
										 gc_row_bytes(input->rows.d, false, false)),
								"The rows widened to float64 for a sharded GPU fit");
		gc_progress_plan(input->progress, plan);
	}
#else
	(void) devices;
#endif
	if (gc_kmeans_fit(backend, &input->rows, &run, result, &err) != GC_OK)
		gc_raise(&err);
	return GC_PATH_BACKEND;
}

/*
 * Fit asked->params.k centroids to input's rows, or as many as the rows
 * when they are fewer and asked->small_groups says "shrink"; NULL when
 * they are fewer and it says "null".  labels and distances, when given,
 * receive each row's cluster and distance to its centroid.
 */
KmeansModel *
gc_run_kmeans(GcInput *input, const GcKmeansOptions *asked, double collect_ms,
			  int32 *labels, double *distances)
{
	GcRows	   *rows = &input->rows;
	GcKmeansOptions fitted = *asked;
	GcKmeansOptions *opts = &fitted;
	int			k;
	KmeansModel *model;
	GcKmeansResult result;
	GcModelOrigin origin = {0};
	GcServiceFit service_fit;

	Assert(input->started && rows->n > 0);
	k = gc_group_clusters("k", asked->params.k, rows->n, "rows", asked->small_groups);
	if (k == 0)
	{
		gc_progress_end(input->progress);
		return NULL;
	}
	opts->params.k = k;
	gc_check_init_shape(opts, rows->d);
	check_balance_bound(&opts->params, rows->n);
	collect_ms += gc_input_finish_rows(input);
	gc_input_settle_device(input, (double) rows->n * k * rows->d * opts->params.n_init);
	gc_input_count_rows(input);
	gc_fit_memory_count(&input->memory, gc_kmeans_work_bytes(rows->n, k, rows->d),
						"The k-means fit's working arrays");
	gc_fit_memory_count(&input->memory, gc_kmeans_balance_bytes(&opts->params, rows->n, rows->d),
						"The arrays balancing cluster sizes");

	model = gc_model_alloc(k, rows->d);
	memset(&result, 0, sizeof(result));
	result.centroids = KmeansModelCentroids(model);
	result.sizes = KmeansModelSizes(model);
	result.labels = labels;
	result.distances = distances;
	result.parents = opts->params.levels >= 2 ? KmeansModelParents(model) : NULL;

	input->progress = gc_progress_fit(input->progress, input->fit, &opts->params,
									  rows->n, &input->device);
	memset(&service_fit, 0, sizeof(service_fit));
	origin.path = fit_kmeans(input, &opts->params, &result, &service_fit, &origin.plan);
	/* the engine measures Euclidean distances; on unit rows 1 - cos = |x - c|^2 / 2 */
	if (opts->params.metric == GC_METRIC_COSINE)
	{
		result.inertia /= 2.0;
		for (int64 i = 0; distances != NULL && i < rows->n; i++)
			distances[i] = gc_metric_distance(GC_METRIC_COSINE, distances[i] * distances[i]);
	}

	origin.device = input->device.kind;
	origin.device_reason = input->device.reason;
	origin.fitted_on = GC_FITTED_ON_ROWS;
	origin.precision_requested = opts->params.precision;
	origin.metric = opts->params.metric;
	origin.input = input->format;
	origin.rows = rows->n;
	origin.null_rows = input->null_rows;
	origin.collect_ms = collect_ms;
	model->k_requested = asked->params.k;
	gc_model_record_result(model, &result, &origin);
	gc_progress_end(input->progress);
	return model;
}
