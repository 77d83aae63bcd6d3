/*-------------------------------------------------------------------------
 *
 * gpu_plan.c
 *	  How a k-means fit runs on its GPUs: in one session of
 *	  gc_kmeans_cuda_backend where its GPU holds it, else sharded
 *	  (engine/kmeans_shards.c over gc_kmeans_cuda_sharded_backend) over
 *	  the GPUs it may span, each lane's rows past the budget streamed
 *	  through two sessions.  The one decision of a fit's GPU layout: the
 *	  backend's fits (src/fit_gpus.c) and the GPU service's
 *	  (src/service/) both plan here, and the service charges the plan's
 *	  memory to its budget.
 *
 * The budget of a GPU is the smallest of what the device offers the fit
 * (its free memory in a backend, the service's per-GPU budget in the
 * service), less what the sessions need besides their rows (centroids,
 * the labelers' tables, workspace), and the fit's own bound on its rows
 * (gpuclust.gpu_fit_memory_mb).  A fit on one GPU whose whole estimate
 * (gc_kmeans_gpu_bytes) fits runs as before, in one session: its model
 * and speed do not change.  Any other runs sharded: one lane a GPU, and
 * lane_rows the rows the budget holds, unless every lane's share fits.
 * A sharded fit gives the one-session fit's model to the bit (the
 * engine's guarantee) at exact precision.  The engine's shards offer the
 * check of reduced precision (engine/kmeans_shards.c), but the GPU's
 * sharded backend does not take it yet (its 16-bit labelers do not follow
 * a streamed session onto new rows, and it has not run on a GPU), so it
 * labels in float32 where tf32, bf16, fp16 or auto was asked
 * (gc_kmeans_plan_apply).
 *
 * IDENTIFICATION
 *	  engine/gpu_plan.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"

#include <stdint.h>
#include <string.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* the sessions' workspace, besides their arrays */
#define GPU_WORKSPACE_BYTES ((size_t) 64 << 20)
/* a lane's sessions at most: one resident shard beside the two streaming ones */
#define LANE_SESSIONS 3

/* the tensor labeler's bytes a row (above; the fp16 screen's copy where it can run) */
static double
tensor_row_bytes(double d)
{
	return 4 * d + 124 + 128 + 20 + (d > 32 ? 2 * d + 126 + 4 : 0);
}

/*
 * GPU memory a k-means fit may hold, an upper bound, in bytes per row (cuda/):
 * - the session's (kmeans_cuda.cu): the rows in double and float32 (12 d),
 *   weights, hashes, labels, previous labels, moves and work (40);
 * - the largest labeler's, one at a time: the pruned one's re-ordered
 *   copies (12 d) and its orders, keys and work per point (48 and 24 for
 *   the copies' labels and weights), or the tensor one's rows padded to
 *   ld <= d + 31 floats (4 d + 124), the screen's group partials (16 x
 *   GC_TENSOR_MAX_GROUPS = 128), norms and lists of doubts (20), and the
 *   fp16 screen's scaled copy (2 ld <= 2 d + 126) and norms (4) on
 *   Hopper where d > 32; the bf16 labeler's half-width rows and partials
 *   are less;
 * - drift bounds beside the pruned labeler (labeler_bounded.cu: two
 *   bounds and a list entry, 12);
 * - greedy seeding's distances: the minimum and its candidates', the
 *   latter only where they fit beside the data (8 + 8 min(d, 2 + ln k)),
 *   bounded here by 8 + 8 min(d, 32);
 * and per centroid seven copies of it (the centroids in double and
 * float32, their previous values, sums, padded and TF32 copies, and the
 * exact check's copy by column: 56 d), the pruned
 * labeler's three k x k tables where it runs (k <= GC_PRUNED_MAX_K, 4096;
 * they also cover the exact check's one table of separations, k x k
 * floats for k <= 4096, or m x m for a k-means|| round's m ~ k samples),
 * greedy seeding's table of distances where it takes one (m x m doubles,
 * m <= GC_GREEDY_TABLE_MAX_ROWS: the fit's rows, or k-means||'s
 * candidates, at most k GC_MAX_INIT_CANDIDATES of them),
 * and 64 MB of workspace
 */
size_t
gc_kmeans_gpu_bytes(const GcKmeansParams *params, int64_t rows, int dims)
{
	double		n = (double) rows,
				d = dims,
				k = params->k,
				pruned = 12 * d + 72,
				tensor = tensor_row_bytes(d),
				seeding = 8 + 8 * MIN(d, 32),
				pruned_k = MIN(k, 4096),
				table,
				batched = 0;

	switch (gc_seed_method(params, rows, dims))
	{
		case GC_INIT_KMEANS_PARALLEL:
			/*
			 * the batched recluster takes no table, but a step's most
			 * candidates c labelled against (cuda/seeding_batched.cu):
			 * their values, floats and the labeler's copies, 40 d bytes
			 * each, and its separations, at most 4,096 squared floats
			 */
			table = gc_batched_applies(params->k) ? 0 :
				MIN(k * GC_MAX_INIT_CANDIDATES, GC_GREEDY_TABLE_MAX_ROWS);
			if (gc_batched_applies(params->k))
			{
				double		c = (double) GC_MAX_INIT_CANDIDATES *
					gc_batched_picks(params->k, 1, 1);

				batched = c * 40 * d + MIN(c, 4096) * MIN(c, 4096) * 4;
			}
			break;
		case GC_INIT_KMEANSPP:
			table = (double) gc_greedy_table_rows(rows, params->k,
												  gc_seed_candidates(params, rows, dims));
			break;
		default:
			table = 0;
	}
	return (size_t) (n * (12 * d + 40 + MAX(pruned, tensor) + 12 + seeding) +
					 k * d * 56 + pruned_k * pruned_k * 12 + table * table * 8 + batched +
					 GPU_WORKSPACE_BYTES);
}

/*
 * A row of a shard's session: the session's (12 d + 40, with the weight
 * 8 more), the larger labeler's (above), drift bounds (12).  k-means||
 * seeding labels a shard's rows against its samples by a tensor labeler
 * of its own beside the session's (cuda/seeding_shard.cu), in the
 * session's arrays otherwise; its D^2 and nearest candidates wait on the
 * host between passes
 */
size_t
gc_kmeans_gpu_shard_row_bytes(int d, bool weighted)
{
	size_t		pruned = 12 * (size_t) d + 72,
				tensor = (size_t) tensor_row_bytes(d);

	return 12 * (size_t) d + 40 + (weighted ? 8 : 0) + MAX(pruned, 2 * tensor) + 12;
}

/* A lane's sessions' centroids and tables (above), and the workspace */
size_t
gc_kmeans_gpu_lane_fixed_bytes(int k, int d)
{
	size_t		pruned_k = (size_t) MIN(k, 4096);

	return LANE_SESSIONS * ((size_t) k * d * 56 + pruned_k * pruned_k * 12) +
		GPU_WORKSPACE_BYTES;
}

/* The plan of a fit that holds every row on one GPU, or on the CPU (gpus 0) */
void
gc_kmeans_plan_in_core(GcGpuPlan *plan, int gpus)
{
	memset(plan, 0, sizeof(*plan));
	plan->lanes = gpus;
	plan->shards = 1;
	plan->resident_fraction = 1.0;
}

/* Whether the fit holds every row in one session of its one GPU */
static bool
fits_one_session(const GcKmeansParams *params, int64_t n, int d, bool weighted,
				 const GcGpuBudget *budget, size_t *bytes)
{
	*bytes = gc_kmeans_gpu_bytes(params, n, d);
	if (budget->gpus > 1)
		return false;
	if (budget->device_bytes > 0 && *bytes > budget->device_bytes)
		return false;
	return budget->rows_bytes == 0 ||
		(double) n * gc_kmeans_gpu_shard_row_bytes(d, weighted) <= (double) budget->rows_bytes;
}

GcStatus
gc_kmeans_plan_gpus(const GcKmeansParams *params, int64_t n, int d, bool narrow,
					bool weighted, const GcGpuBudget *budget, GcGpuPlan *plan, GcError *err)
{
	size_t		row = gc_kmeans_gpu_shard_row_bytes(d, weighted),
				fixed = gc_kmeans_gpu_lane_fixed_bytes(params->k, d),
				room = SIZE_MAX,
				whole;
	int			gpus = budget->gpus > 1 ? budget->gpus : 1;
	int64_t		lanes = MIN((int64_t) gpus, MAX(n, 1));
	int64_t		share = (n + lanes - 1) / lanes;
	GcKmeansParams sharded = *params;
	GcShardLayout layout;

	if (fits_one_session(params, n, d, weighted, budget, &whole))
	{
		gc_kmeans_plan_in_core(plan, 1);
		plan->gpu_bytes = whole;
		return GC_OK;
	}
	memset(plan, 0, sizeof(*plan));
	if (budget->device_bytes > 0)
		room = budget->device_bytes > fixed ? budget->device_bytes - fixed : 0;
	if (budget->rows_bytes > 0)
		room = MIN(room, budget->rows_bytes);
	sharded.shards = 0;
	sharded.lanes = (int) lanes;
	sharded.lane_rows = 0;
	if (room != SIZE_MAX && (double) share * row > (double) room)
	{
		if (room / row < 2)
			return gc_fail(err, GC_ERR_DEVICE_MEMORY,
						   "a GPU's budget for this fit, %zu MB for rows of %zu bytes beside %zu MB of centroids and workspace, holds fewer than two rows",
						   room >> 20, row, fixed >> 20);
		sharded.lane_rows = (int64_t) (room / row);
	}
	gc_kmeans_shard_layout(n, &sharded, &layout);
	plan->sharded = true;
	plan->lanes = layout.lanes;
	plan->shards = layout.shards;
	plan->lane_rows = sharded.lane_rows;
	plan->resident_fraction = n > 0 ? (double) layout.resident_rows / (double) n : 1.0;
	/* each pass uploads a streamed row and moves its label both ways */
	plan->streamed_bytes = layout.streamed_rows *
		(int64_t) (gc_row_bytes(d, narrow, weighted) + 2 * sizeof(int32_t));
	plan->gpu_bytes = fixed + (size_t) layout.lane_rows_held * row;
	return GC_OK;
}

void
gc_kmeans_plan_apply(const GcGpuPlan *plan, GcKmeansParams *params)
{
	if (!plan->sharded)
		return;
	params->shards = plan->shards;
	params->lanes = plan->lanes;
	params->lane_rows = plan->lane_rows;
	if (gc_precision_is_reduced(params->precision) || params->precision == GC_PRECISION_AUTO)
		params->precision = GC_PRECISION_FLOAT32;
}
