/*-------------------------------------------------------------------------
 *
 * gpu_plan_test.c
 *	  Engine tests of a fit's GPU plan (engine/gpu_plan.c) without a GPU:
 *	  a fit that fits its one GPU keeps one session (its estimate charged,
 *	  its params untouched); a fit past its rows' bound, or past what the
 *	  device offers less the lanes' fixed memory, is sharded with
 *	  lane_rows the most rows the budget holds, shards of at most half of
 *	  them, and the resident fraction and bytes streamed per iteration
 *	  counted from that layout; several GPUs make as many lanes (no more
 *	  than rows), streaming only where a lane's share does not fit; a
 *	  budget of fewer than two rows is refused; a sharded plan labels in
 *	  float32 where a reduced precision was asked.  Then the plan's
 *	  params run on the CPU sharded backend give the plain CPU fit's
 *	  model to the bit, streamed, on two lanes, and both.
 *
 *	  gpu_plan_test            run the checks, ending with "N passed, N failed"
 *	  gpu_plan_test N          the Nth case alone
 *	  gpu_plan_test count      how many cases there are
 *
 * IDENTIFICATION
 *	  test/engine/gpu_plan_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MB ((size_t) 1 << 20)

static GcKmeansParams
params_for(int k)
{
	return one_restart_params(k, GC_INIT_KMEANSPP, 50, 1e-4);
}

static GcGpuPlan
plan_for(const GcKmeansParams *params, int64_t n, int d, int gpus, size_t device_bytes,
		 size_t rows_bytes, GcStatus *status)
{
	GcGpuBudget budget = {gpus, device_bytes, rows_bytes};
	GcGpuPlan	plan;
	GcError		err = {0};

	memset(&plan, 0xab, sizeof(plan));
	*status = gc_kmeans_plan_gpus(params, n, d, false, false, &budget, &plan, &err);
	return plan;
}

/* One GPU that holds the fit: one session, nothing streamed, the estimate charged */
static void
test_in_core(void)
{
	GcKmeansParams params = params_for(8);
	GcKmeansParams applied = params;
	GcStatus	status;
	size_t		whole = gc_kmeans_gpu_bytes(&params, 100000, 16);
	GcGpuPlan	plan = plan_for(&params, 100000, 16, 1, 0, 0, &status);

	check(status == GC_OK && !plan.sharded, "no bound: one session", "in core");
	check(plan.lanes == 1 && plan.resident_fraction == 1.0 && plan.streamed_bytes == 0,
		  "one GPU, all resident, nothing streamed", "in core");
	check(plan.gpu_bytes == whole, "the one-session estimate charged", "in core");
	plan = plan_for(&params, 100000, 16, 1, whole, 0, &status);
	check(status == GC_OK && !plan.sharded, "a device of exactly the estimate: one session",
		  "in core");
	plan = plan_for(&params, 100000, 16, 1, 0,
					100000 * gc_kmeans_gpu_shard_row_bytes(16, false), &status);
	check(status == GC_OK && !plan.sharded, "a rows' bound of exactly the rows: one session",
		  "in core");
	gc_kmeans_plan_apply(&plan, &applied);
	check(memcmp(&applied, &params, sizeof(params)) == 0, "params untouched", "in core");
	plan = plan_for(&params, 100000, 16, 1, whole - 1, 0, &status);
	check(status == GC_OK && plan.sharded, "a device a byte short: sharded", "in core");
}

/* The layout the engine makes of n rows under lane_rows on one lane, by hand */
static void
expect_streamed(int64_t n, int64_t lane_rows, int *shards, int64_t *resident)
{
	int64_t		most = lane_rows / 2;
	int64_t		count = (n + most - 1) / most;
	int64_t		largest = (n + count - 1) / count;
	int64_t		fit = lane_rows / largest;

	*shards = (int) count;
	*resident = 0;
	if (count > fit)
	{
		for (int64_t i = 0; i < fit - 2; i++)
			*resident += n * (i + 1) / count - n * i / count;
	}
	else
		*resident = n;
}

/* A rows' bound or a small device: sharded, lane_rows what the budget holds */
static void
test_streamed(void)
{
	GcKmeansParams params = params_for(8);
	int64_t		n = 20000;
	int			d = 2;
	size_t		row = gc_kmeans_gpu_shard_row_bytes(d, false);
	size_t		fixed = gc_kmeans_gpu_lane_fixed_bytes(8, d);
	GcStatus	status;
	GcGpuPlan	plan = plan_for(&params, n, d, 1, 0, MB, &status);
	int			shards;
	int64_t		resident;

	check(status == GC_OK && plan.sharded && plan.lanes == 1, "1 MB of rows: sharded", "rows");
	check(plan.lane_rows == (int64_t) (MB / row), "lane_rows: the rows 1 MB holds", "rows");
	expect_streamed(n, plan.lane_rows, &shards, &resident);
	check(plan.shards == shards, "shards of at most half lane_rows", "rows");
	check(plan.resident_fraction == (double) resident / n, "resident fraction by hand", "rows");
	check(plan.resident_fraction < 1.0, "some rows streamed", "rows");
	check(plan.streamed_bytes == (n - resident) * (int64_t) (gc_row_bytes(d, false, false) + 8),
		  "streamed bytes: each streamed row and its label both ways", "rows");
	check(plan.gpu_bytes <= fixed + MB, "charged at most the lane's fixed memory and 1 MB",
		  "rows");

	plan = plan_for(&params, n, d, 1, fixed + 3 * MB, 0, &status);
	check(status == GC_OK && plan.sharded && plan.lane_rows == (int64_t) (3 * MB / row),
		  "a device of fixed + 3 MB: lane_rows what 3 MB holds", "device");
	check(plan.gpu_bytes <= fixed + 3 * MB, "charged within the device", "device");
	plan = plan_for(&params, n, d, 1, fixed + 30 * MB, 2 * MB, &status);
	check(status == GC_OK && plan.lane_rows == (int64_t) (2 * MB / row),
		  "the smaller of device and rows' bound", "device");

	/* a narrow, weighted store streams its own row size */
	{
		GcGpuBudget budget = {1, 0, MB};
		GcError		err = {0};

		status = gc_kmeans_plan_gpus(&params, n, d, true, true, &budget, &plan, &err);
		expect_streamed(n, plan.lane_rows, &shards, &resident);
		check(status == GC_OK &&
			  plan.lane_rows == (int64_t) (MB / gc_kmeans_gpu_shard_row_bytes(d, true)) &&
			  plan.streamed_bytes == (n - resident) * (int64_t) (gc_row_bytes(d, true, true) + 8),
			  "narrow weighted rows: their sizes", "rows");
	}
}

/* Several GPUs: a lane each, streaming only past a lane's share */
static void
test_gpus(void)
{
	GcKmeansParams params = params_for(8);
	size_t		row = gc_kmeans_gpu_shard_row_bytes(4, false);
	GcStatus	status;
	GcGpuPlan	plan = plan_for(&params, 10000, 4, 2, 0, 0, &status);

	check(status == GC_OK && plan.sharded && plan.lanes == 2 && plan.shards == 2 &&
		  plan.lane_rows == 0, "two GPUs: two lanes of one shard", "gpus");
	check(plan.resident_fraction == 1.0 && plan.streamed_bytes == 0, "all resident", "gpus");
	plan = plan_for(&params, 10000, 4, 2, 0, 5000 * row, &status);
	check(status == GC_OK && plan.lanes == 2 && plan.lane_rows == 0 &&
		  plan.resident_fraction == 1.0, "each share fits its bound: no streaming", "gpus");
	plan = plan_for(&params, 10000, 4, 2, 0, 4999 * row, &status);
	check(status == GC_OK && plan.lanes == 2 && plan.lane_rows == 4999 &&
		  plan.resident_fraction < 1.0, "a row short: streamed", "gpus");
	plan = plan_for(&params, 3, 4, 8, 0, 0, &status);
	check(status == GC_OK && plan.lanes == 3, "no more lanes than rows", "gpus");
	plan = plan_for(&params, 10000, 4, 4, 0, 0, &status);
	check(status == GC_OK && plan.lanes == 4 && plan.shards == 4, "four GPUs", "gpus");
}

/* Too small a budget is refused; a sharded plan labels exactly */
static void
test_refused_and_precision(void)
{
	GcKmeansParams params = params_for(8);
	size_t		row = gc_kmeans_gpu_shard_row_bytes(4, false);
	GcGpuBudget budget = {1, 0, 2 * row - 1};
	GcGpuPlan	plan;
	GcError		err = {0};
	GcStatus	status = gc_kmeans_plan_gpus(&params, 1000, 4, false, false, &budget, &plan, &err);

	check(status == GC_ERR_DEVICE_MEMORY && strstr(err.message, "fewer than two rows") != NULL,
		  "a bound under two rows refused", "refused");
	budget.rows_bytes = 0;
	budget.device_bytes = gc_kmeans_gpu_lane_fixed_bytes(8, 4);
	status = gc_kmeans_plan_gpus(&params, 1000, 4, false, false, &budget, &plan, &err);
	check(status == GC_ERR_DEVICE_MEMORY, "a device of only the fixed memory refused", "refused");
	budget.rows_bytes = 2 * row;
	budget.device_bytes = 0;
	status = gc_kmeans_plan_gpus(&params, 1000, 4, false, false, &budget, &plan, &err);
	check(status == GC_OK && plan.lane_rows == 2 && plan.shards == 1000,
		  "two rows: shards of one row", "refused");

	for (int p = GC_PRECISION_FLOAT32; p <= GC_PRECISION_AUTO; p++)
	{
		GcKmeansParams applied = params;
		char		config[32];

		snprintf(config, sizeof(config), "precision %d", p);

		applied.precision = (GcPrecision) p;
		gc_kmeans_plan_apply(&plan, &applied);
		check(applied.precision == (p == GC_PRECISION_FLOAT64 ? GC_PRECISION_FLOAT64 :
									GC_PRECISION_FLOAT32),
			  "sharded: float32 for reduced precision, float64 kept", config);
		check(applied.lanes == plan.lanes && applied.lane_rows == plan.lane_rows &&
			  applied.shards == plan.shards, "sharded: the plan's layout", config);
	}
}

/* The plan's params on the CPU sharded backend: the plain fit's model to the bit */
static void
test_plans_fit(void)
{
	static const struct
	{
		int			gpus;
		size_t		rows_bytes;
		const char *name;
	}			budgets[] = {{1, 1, "streamed"}, {2, 0, "two lanes"}, {2, 1, "two lanes streamed"}};
	int64_t		n = 6000;
	int			d = 3,
				k = 5;
	double		centres[5 * 3];
	double	   *x = make_data(n, d, k, 2.0, centres, NULL);
	GcKmeansParams params = params_for(k);
	GcRows		rows;
	GcError		err = {0};
	Fit			ref;

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	ref = new_fit(k, &rows);
	ref.status = gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &ref.result, &err);
	check(ref.status == GC_OK, "plain fit ok", "plans fit");
	gc_rows_release(&rows);
	for (int b = 0; b < 3; b++)
	{
		/* a rows' bound of a third of the rows per GPU */
		size_t		bound = budgets[b].rows_bytes ?
			(size_t) (n / 3) * gc_kmeans_gpu_shard_row_bytes(d, false) : 0;
		GcStatus	status;
		GcGpuPlan	plan = plan_for(&params, n, d, budgets[b].gpus, 0, bound, &status);
		GcKmeansParams run = params;
		Fit			f;

		check(status == GC_OK && plan.sharded && plan.lanes == budgets[b].gpus &&
			  (budgets[b].rows_bytes ? plan.resident_fraction < 1.0 : plan.resident_fraction == 1.0),
			  "planned as asked", budgets[b].name);
		gc_kmeans_plan_apply(&plan, &run);
		load_rows(&rows, x, n, d, NULL, plain_alloc, free);
		f = new_fit(k, &rows);
		f.status = gc_kmeans_fit(&gc_kmeans_cpu_sharded_backend, &rows, &run, &f.result, &err);
		check(f.status == GC_OK, "sharded fit ok", budgets[b].name);
		check(memcmp(ref.labels, f.labels, sizeof(int32_t) * n) == 0, "labels equal",
			  budgets[b].name);
		check(memcmp(ref.centroids, f.centroids, sizeof(double) * k * d) == 0,
			  "centroids equal to the bit", budgets[b].name);
		check(memcmp(&ref.result.inertia, &f.result.inertia, sizeof(double)) == 0,
			  "inertia equal to the bit", budgets[b].name);
		free_fit(&f);
		gc_rows_release(&rows);
	}
	free_fit(&ref);
	free(x);
}

int
main(int argc, char **argv)
{
	static void (*const cases[]) (void) = {
		test_in_core, test_streamed, test_gpus, test_refused_and_precision, test_plans_fit,
	};

	return run_cases(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
