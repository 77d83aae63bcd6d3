/*-------------------------------------------------------------------------
 *
 * pmedian_run.c
 *	  The p-median input and fit shared by the aggregate and the
 *	  set-returning function: rows are collected into the row store (via
 *	  gc_input_add, with all its checks) and their ids and demands into
 *	  arrays beside it (or joined from a parallel plan's partial states);
 *	  the fit checks p against n, puts the rows in the order of their ids
 *	  (rejecting duplicates), runs the engine on the chosen device (in the
 *	  GPU service when the device was chosen for it, gpu_service.h, else
 *	  here), and builds the model.
 *
 * The order of the ids makes the model independent of the order in which
 * the rows arrived: the engine breaks ties between equal distances by row
 * number and sums dissimilarities row after row, so a parallel plan (whose
 * shares reach the leader in any order) or a table whose rows moved would
 * otherwise give a different model.  Rows already in id order (a table
 * scanned in the order it was filled) are not moved.
 *
 * IDENTIFICATION
 *	  src/pmedian_run.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"
#include "array_growth.h"
#include "gpu_service.h"

#include <math.h>

void
gc_pm_input_init(PmInput *in, bool with_demand, MemoryContext context)
{
	memset(in, 0, sizeof(*in));
	gc_input_init(&in->input);
	in->input.fit = GC_FIT_PMEDIAN;
	in->with_demand = with_demand;
	in->context = context;
}

/* Room for more ids (and demands: the same capacity, grown alike) */
static void
reserve_ids(PmInput *in, int64 more)
{
	int64		capacity = in->capacity;

	in->ids = gc_reserve(in->context, in->ids, &in->capacity, in->count + more, sizeof(int64));
	if (in->with_demand)
		in->demand = gc_reserve(in->context, in->demand, &capacity, in->count + more,
								sizeof(double));
}

static void
check_demand(int64 rowno, bool demand_null, double demand)
{
	if (demand_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("demand in row " INT64_FORMAT " is NULL", rowno),
				 errhint("Give every row a demand, e.g. coalesce(demand, 1).")));
	if (!isfinite(demand))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("demand in row " INT64_FORMAT " is not finite", rowno)));
	if (demand < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("demand in row " INT64_FORMAT " is negative", rowno),
				 errdetail("The demand is %g.", demand),
				 errhint("Demands must be zero or positive.")));
}

/*
 * Append one row: a NULL vector is skipped (and counted), a NULL id, or
 * a NULL or negative demand, is an error
 */
void
gc_pm_input_add(PmInput *in, bool id_null, int64 id, Datum vector,
				Oid elemtype, bool demand_null, double demand)
{
	int64		rowno = in->input.seen_rows + 1;

	if (id_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("id in row " INT64_FORMAT " is NULL", rowno),
				 errhint("Every row needs a unique id: it names the medoids.")));
	if (vector == (Datum) 0)
	{
		gc_input_add_null(&in->input);
		return;
	}
	if (in->with_demand)
		check_demand(rowno, demand_null, demand);
	gc_input_add(&in->input, vector, elemtype);
	reserve_ids(in, 1);
	in->ids[in->count] = id;
	if (in->with_demand)
		in->demand[in->count] = demand;
	in->count++;
}

/*
 * Append the ids (and demands) of n rows just added to the row store, as
 * arrays of 8-byte values, possibly unaligned (a partial state's columns)
 */
void
gc_pm_input_add_ids(PmInput *in, const char *ids, const char *demand, int64 n)
{
	reserve_ids(in, n);
	memcpy(in->ids + in->count, ids, sizeof(int64) * n);
	if (in->with_demand)
		memcpy(in->demand + in->count, demand, sizeof(double) * n);
	in->count += n;
}

/* A row's id and its place in the row store */
typedef struct IdRow
{
	int64		id;
	int64		row;
} IdRow;

static int
id_row_cmp(const void *a, const void *b)
{
	int64		x = ((const IdRow *) a)->id,
				y = ((const IdRow *) b)->id;

	return x < y ? -1 : x > y;
}

/*
 * Put the rows, their ids and demands in the order of the ids, rejecting
 * a duplicate id (see the banner)
 */
static void
order_by_id(PmInput *in)
{
	int64		n = in->count;
	IdRow	   *pairs;
	int64	   *order;
	GcError		err = {0};
	int64		i;

	for (i = 1; i < n && in->ids[i] > in->ids[i - 1]; i++)
		;
	if (i >= n)
		return;					/* in order, so unique */
	pairs = palloc_extended(sizeof(IdRow) * n, MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
	{
		pairs[i].id = in->ids[i];
		pairs[i].row = i;
	}
	qsort(pairs, n, sizeof(IdRow), id_row_cmp);
	for (i = 1; i < n; i++)
		if (pairs[i].id == pairs[i - 1].id)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate id " INT64_FORMAT, pairs[i].id),
					 errhint("Every row needs a unique id: it names the medoids.")));
	order = palloc_extended(sizeof(int64) * n, MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
	{
		order[i] = pairs[i].row;
		in->ids[i] = pairs[i].id;
	}
	pfree(pairs);
	if (in->with_demand)
	{
		double	   *demand = palloc_extended(sizeof(double) * n, MCXT_ALLOC_HUGE);

		for (i = 0; i < n; i++)
			demand[i] = in->demand[order[i]];
		memcpy(in->demand, demand, sizeof(double) * n);
		pfree(demand);
	}
	if (gc_rows_permute(&in->input.rows, order, &err) != GC_OK)
		gc_raise(&err);
	pfree(order);
}

/*
 * Hard capacities need a total capacity of at least the total demand
 */
static void
check_total_capacity(const PmInput *in, const GcPmParams *params)
{
	double		total = 0.0;

	if (!params->capacitated || !params->hard_capacity)
		return;
	for (int64 i = 0; i < in->count; i++)
		total += in->demand[i];
	if (total > params->capacity * params->p)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("total demand exceeds the total capacity of the medians"),
				 errdetail("The demand is %g, but %d medians of capacity %g hold %g.",
						   total, params->p, params->capacity,
						   params->capacity * params->p),
				 errhint("Ask for more medians, raise the capacity, or use \"capacity_mode\": \"soft\".")));
}

/*
 * Show the fit in the progress view, on the device it is to run on, the
 * engine reporting its phases and iterations there
 */
static void
show_fit(PmInput *in, GcPmParams *params)
{
	in->input.progress = gc_progress_fit(in->input.progress, GC_FIT_PMEDIAN, NULL,
										 in->input.rows.n, &in->input.device);
	gc_progress_hook(in->input.progress, &params->progress, &params->progress_arg);
}

/*
 * Run the fit in the GPU service when the input's device was chosen for
 * it; otherwise, or when the service cannot run it, here.  Returns the
 * path it ran on; engine failures are raised.
 */
static GcFitPath
fit_pmedian(PmInput *in, GcPmParams *params, GcPmResult *result)
{
	GcInput    *input = &in->input;
	GcError		err = {0};

	if (input->device.service)
	{
		GcServiceFit service_fit;

		memset(&service_fit, 0, sizeof(service_fit));
		service_fit.kind = GC_SERVICE_PMEDIAN;
		service_fit.pm_params = params;
		service_fit.demand = in->demand;
		service_fit.pm_result = result;
		if (gc_service_fit_input(input, &service_fit))
			return GC_PATH_SERVICE;
		/* the progress shows the device the fit now runs on */
		show_fit(in, params);
	}
	if (gc_pmedian_fit(input->device.pmedian, &input->rows, in->demand, params,
					   result, &err) != GC_OK)
		gc_raise(&err);
	return GC_PATH_BACKEND;
}

/*
 * Count the fit's memory before it allocates more: the rows, their ids
 * and demands, and the engine's working memory, on the CPU with its own
 * copy of the rows (engine/pmedian_cpu.c holds them contiguously: both
 * copies count; the GPU's copy is in device memory)
 */
static void
count_memory(PmInput *in, const GcPmParams *params)
{
	GcRows	   *rows = &in->input.rows;

	gc_input_count_rows(&in->input);
	gc_fit_memory_count(&in->input.memory,
						mul_size((size_t) in->capacity, sizeof(int64) + (in->with_demand ? sizeof(double) : 0)),
						"The rows' ids and demands");
	gc_fit_memory_count(&in->input.memory,
						gc_pmedian_work_bytes(rows->n, params->p, rows->d, params->capacitated,
											  in->input.device.kind != GC_KIND_GPU),
						"The p-median fit's copy of the rows and working arrays");
}

/*
 * Fit the p-median model over the collected rows, with ereport on
 * failure: asked->p medians, or as many as the rows when they are fewer
 * and small_groups says "shrink"; NULL when they are fewer and it says
 * "null".  alloc (index into the medoids) and dist are filled when given.
 */
PmedianModel *
gc_run_pmedian(PmInput *in, const GcPmParams *asked, GcSmallGroups small_groups,
			   double collect_ms, int32 *alloc, double *dist)
{
	GcRows	   *rows = &in->input.rows;
	GcPmParams	fitted = *asked;
	GcPmParams *params = &fitted;
	int			p,
				d = rows->d;
	GcPmResult	result = {0};
	GcFitPath	path;
	PmedianModel *m;

	p = gc_group_clusters("p", asked->p, in->count, "rows", small_groups);
	if (p == 0)
	{
		gc_progress_end(in->input.progress);
		return NULL;
	}
	params->p = p;
	gc_input_settle_device(&in->input, (double) rows->n * p * d);
	count_memory(in, params);
	order_by_id(in);
	check_total_capacity(in, params);
	result.medoids = palloc(sizeof(int32) * p);
	result.penalties = palloc(sizeof(double) * p);
	result.alloc = alloc;
	result.dist = dist;
	show_fit(in, params);
	path = fit_pmedian(in, params, &result);
	gc_progress_end(in->input.progress);

	m = gc_pmedian_model_alloc(p, d);
	m->p_requested = asked->p;
	m->device = in->input.device.kind;
	m->device_reason = in->input.device.reason;
	m->path = path;
	m->metric = params->metric;
	m->method = result.method;
	m->improvement = result.improvement;
	m->hard_capacity = params->capacitated && params->hard_capacity;
	m->repair_cost = result.repair_cost;
	m->iterations = result.iterations;
	m->swaps = result.swaps;
	m->converged = result.converged;
	m->capacitated = params->capacitated;
	m->rows = rows->n;
	m->null_rows = in->input.null_rows;
	m->objective = result.objective;
	m->violation = result.violation;
	m->capacity = params->capacitated ? params->capacity : 0.0;
	m->collect_ms = collect_ms;
	m->transfer_ms = result.timings.transfer_ms;
	m->seeding_ms = result.timings.seeding_ms;
	m->sample_ms = result.timings.sample_ms;
	m->global_ms = result.timings.global_ms;
	m->small_ms = result.timings.small_ms;
	m->location_ms = result.timings.location_ms;
	m->improve_ms = result.timings.improve_ms;
	m->repair_ms = result.timings.repair_ms;
	for (int k = 0; k < p; k++)
	{
		PmedianModelIds(m)[k] = in->ids[result.medoids[k]];
		PmedianModelPenalties(m)[k] = result.penalties[k];
		memcpy(PmedianModelMedoids(m) + (size_t) k * d,
			   gc_rows_get(rows, result.medoids[k]), sizeof(double) * d);
	}
	pfree(result.medoids);
	pfree(result.penalties);
	gc_pmedian_model_check(m, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	return m;
}
