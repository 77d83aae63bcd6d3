/*-------------------------------------------------------------------------
 *
 * kmeans_run.c
 *	  Runs one k-means fit over collected rows on the chosen backend and
 *	  returns the model, raising any engine failure as an error.  Shared by
 *	  the aggregate, the window function and the assignment function.
 *
 * IDENTIFICATION
 *	  src/kmeans_run.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

/*
 * Fit opts->params.k centroids to input's rows; labels and distances,
 * when given, receive each row's cluster and distance to its centroid
 */
KmeansModel *
gc_run_kmeans(GcInput *input, GcKmeansOptions *opts, double collect_ms,
			  int32 *labels, double *distances)
{
	GcRows	   *rows = &input->rows;
	int			k = opts->params.k;
	KmeansModel *model;
	GcKmeansResult result;
	GcError		err = {0};

	Assert(input->started && rows->n > 0);
	if (k > rows->n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k (%d) is greater than the number of rows (" INT64_FORMAT ")",
						k, rows->n),
				 errhint("Use a k no larger than the number of non-NULL vectors.")));
	gc_check_init_shape(opts, rows->d);

	model = gc_model_alloc(k, rows->d);
	memset(&result, 0, sizeof(result));
	result.centroids = KmeansModelCentroids(model);
	result.sizes = KmeansModelSizes(model);
	result.labels = labels;
	result.distances = distances;

	if (gc_kmeans_fit(input->device.kmeans, rows, &opts->params, &result, &err) != GC_OK)
		gc_raise(&err);

	model->device = input->device.kind;
	model->iterations = result.iterations;
	model->converged = result.converged;
	model->rows = rows->n;
	model->null_rows = input->null_rows;
	model->inertia = result.inertia;
	model->collect_ms = collect_ms;
	model->transfer_ms = result.timings.transfer_ms;
	model->seeding_ms = result.timings.seeding_ms;
	model->iterations_ms = result.timings.iterations_ms;
	model->labeling_ms = result.timings.labeling_ms;
	model->update_ms = result.timings.update_ms;
	model->precision = opts->params.precision;
	model->pruned = result.pruned;
	model->input = (int16) input->format;
	model->skipped_fraction = result.skipped_fraction;
	strlcpy(model->kernel, result.kernel ? result.kernel : "", sizeof(model->kernel));
	return model;
}
