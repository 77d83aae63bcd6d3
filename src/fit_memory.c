/*-------------------------------------------------------------------------
 *
 * fit_memory.c
 *	  The host memory one fit may hold: gpuclust.max_fit_memory_mb (its
 *	  default a quarter of the machine's memory), and the account each fit
 *	  keeps against it.  Every path counts what it plans to allocate (the
 *	  window's labels, the rows, the engine's working arrays, p-median's
 *	  ids, demands and its engine's copy of the rows, a stream summary's
 *	  block and levels, the GPU service's request segment) before
 *	  allocating it, and a plan past the limit is refused with 53200 and a
 *	  hint naming the setting and the size it would need.
 *
 * The engine's working memory is estimated from its allocations
 * (engine/kmeans_cpu.c, seeding*.c, pmedian_*.c) as bytes per row, per
 * centroid dimension and per centroid, rounded up (balancing's by
 * engine/kmeans_balance.c itself, gc_kmeans_balance_bytes); the CPU's pruned
 * labeling tables (12 k^2 bytes) are not counted: they fall back to
 * Lloyd's labeling when they cannot be had.
 *
 * IDENTIFICATION
 *	  src/fit_memory.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_pg.h"
#include "gc_fit_memory.h"
#include "pmedian_engine.h"

#include <limits.h>
#include <unistd.h>

#include "utils/guc.h"

/* without sysconf's answer, 4 GB */
#define FALLBACK_LIMIT_MB	4096

/* the k-means engine's arrays per row: labels twice, a distance, seeding's */
#define KMEANS_BYTES_PER_ROW	40
/* per centroid coordinate: sums, centroids, a restart's best, the packed copy */
#define KMEANS_BYTES_PER_CENTROID_VALUE 48
/*
 * p-median's per row, besides the engine's copy of the rows: the ids and
 * demands (16), their sort (24), two problems' entities (2 x 20), the
 * sample's draw (16), groups and sums (12), the CPU session's distances
 * (28) and the improvement's (17), rounded up
 */
#define PMEDIAN_BYTES_PER_ROW	160
/* the GPU session's page-locked stage (cuda/pmedian_cuda.cu) */
#define PMEDIAN_GPU_STAGE_BYTES	24
/* capacities: the repair's 16 candidates a row (12 bytes each) and a flag */
#define PMEDIAN_REPAIR_BYTES_PER_ROW (16 * 12 + 1)

static int	max_fit_memory_mb;

/* A quarter of the machine's memory in MB, or FALLBACK_LIMIT_MB */
static int
default_limit_mb(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);
	uint64		mb;

	if (pages <= 0 || page_size <= 0)
		return FALLBACK_LIMIT_MB;
	mb = ((uint64) pages * (uint64) page_size / 4) >> 20;
	return (int) Min(Max(mb, 1), (uint64) INT_MAX);
}

/*
 * Define gpuclust.max_fit_memory_mb.  A fit holds all its rows in host
 * memory at once (work_mem cannot bound it), so that an ordinary user
 * could otherwise take any amount of it: superuser-only, like the pinned
 * cache.  A quarter of the machine leaves the rest to shared buffers,
 * other sessions and the GPU service; a fixed default (it was 32 GB) was
 * more than a small machine has.
 */
void
gc_fit_memory_setup(void)
{
	int			boot = default_limit_mb();

	DefineCustomIntVariable("gpuclust.max_fit_memory_mb",
							"Host memory one fit may hold.",
							"A fit (aggregate, window partition, assignment, p-median or a "
							"kmeans_stream summary) whose rows and working memory need more "
							"fails before allocating past it; 0 removes the limit. The default "
							"is a quarter of the machine's memory.",
							&max_fit_memory_mb, boot, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);
}

/* gpuclust.max_fit_memory_mb in bytes (0: no limit) */
size_t
gc_fit_memory_limit(void)
{
	return (size_t) max_fit_memory_mb << 20;
}

/* Open a fit's account under the current limit */
void
gc_fit_memory_begin(GcFitMemory *account)
{
	account->limit = gc_fit_memory_limit();
	account->planned = 0;
}

/* Whether bytes more stay within the limit */
bool
gc_fit_memory_room(const GcFitMemory *account, size_t bytes)
{
	return account->limit == 0 ||
		(account->planned <= account->limit && bytes <= account->limit - account->planned);
}

/*
 * Count bytes that what is about to allocate; past the limit, refuse
 * (53200) with the size the fit would need
 */
void
gc_fit_memory_count(GcFitMemory *account, size_t bytes, const char *what)
{
	if (!gc_fit_memory_room(account, bytes))
	{
		size_t		need_mb = (add_size(account->planned, bytes) + ((1 << 20) - 1)) >> 20;

		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("fit needs %zu MB of host memory, more than gpuclust.max_fit_memory_mb (%zu MB)",
						need_mb, account->limit >> 20),
				 account->planned == 0 ?
				 errdetail("%s need %zu MB.", what, need_mb) :
				 errdetail("%s need %zu MB beside the %zu MB counted before.",
						   what, (bytes + ((1 << 20) - 1)) >> 20, account->planned >> 20),
				 errhint("Cluster fewer rows or dimensions, or have a superuser set "
						 "gpuclust.max_fit_memory_mb to at least %zu.", need_mb)));
	}
	account->planned += bytes;
}

/*
 * What is left for a store filled a row at a time (at least 1 byte, so
 * that a full account still refuses the first row: 0 would mean no limit)
 */
size_t
gc_fit_memory_left(const GcFitMemory *account)
{
	if (account->limit == 0)
		return 0;
	if (account->planned >= account->limit)
		return 1;
	return account->limit - account->planned;
}

/* The bytes rows' chunks take, as allocated (their capacity) */
size_t
gc_rows_held_bytes(const GcRows *rows)
{
	size_t		row_bytes = gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	size_t		bytes = 0;

	for (int c = 0; c < rows->nchunks; c++)
		bytes = add_size(bytes, mul_size((size_t) rows->chunks[c].capacity, row_bytes));
	return bytes;
}

/* The k-means engine's working memory for n rows, k centroids of d values */
size_t
gc_kmeans_work_bytes(int64_t n, int k, int d)
{
	return add_size(mul_size((size_t) n, KMEANS_BYTES_PER_ROW),
					mul_size(mul_size((size_t) k, (size_t) d + 8),
							 KMEANS_BYTES_PER_CENTROID_VALUE));
}

/*
 * p-median's working memory for n rows of d values and p medians: its
 * arrays and, with host_copy (the CPU's session), its own copy of the rows
 * (values and hashes) and the swap improvement's tree, which holds them
 * once more (gc_pmedian_cpu_swap_bytes); the GPU's session stages 24 bytes
 * a row instead
 */
size_t
gc_pmedian_work_bytes(int64_t n, int p, int d, bool capacitated, bool host_copy)
{
	size_t		per_row = (host_copy ? sizeof(double) * ((size_t) d + 1) : PMEDIAN_GPU_STAGE_BYTES) +
		PMEDIAN_BYTES_PER_ROW + (capacitated ? PMEDIAN_REPAIR_BYTES_PER_ROW : 0);
	size_t		bytes = add_size(mul_size((size_t) n, per_row),
								 mul_size((size_t) p, (size_t) d * sizeof(double) + 64));

	return host_copy ? add_size(bytes, gc_pmedian_cpu_swap_bytes(n, d, p)) : bytes;
}

/* A block of rows raw rows of a summary and its reduction into m centres */
static size_t
stream_block_bytes(const GcStreamHeader *shape, int64_t rows)
{
	return add_size(mul_size((size_t) rows, gc_row_bytes(shape->d, false, false)),
					gc_kmeans_work_bytes(rows, shape->m, shape->d));
}

/*
 * A level's reduction: its points copied as weighted rows (chunks up to
 * twice their size) and the fit's arrays
 */
static size_t
stream_level_reduction_bytes(const GcStreamHeader *shape)
{
	int64_t		points = (int64_t) GC_STREAM_FANOUT * shape->m + 1;

	return add_size(mul_size(2 * (size_t) points, gc_row_bytes(shape->d, false, true)),
					gc_kmeans_work_bytes(points, shape->m, shape->d));
}

/*
 * A summary's memory: its block of block_rows raw rows with the block's
 * reduction, a level's reduction and at least one level.  The default
 * block shrinks to fit the limit (not below 2 m rows); a plan past it is
 * then refused (53200), except for a stored summary read back, whose
 * block and levels are only bounded (half the limit each).  The bounds
 * for the engine (gc_stream_limit_memory) are returned.
 */
void
gc_stream_plan_memory(GcStreamHeader *shape, GcStreamBlockOrigin origin,
					  size_t *max_block_bytes, size_t *max_level_bytes)
{
	size_t		limit = gc_fit_memory_limit();
	size_t		rest = add_size(stream_level_reduction_bytes(shape),
								gc_stream_level_bytes(shape->m, shape->d));
	size_t		row_bytes = gc_row_bytes(shape->d, false, false) + KMEANS_BYTES_PER_ROW;
	GcFitMemory account;

	*max_block_bytes = *max_level_bytes = 0;
	if (limit == 0)
		return;
	if (origin == GC_STREAM_BLOCK_DEFAULT &&
		add_size(stream_block_bytes(shape, shape->block_rows), rest) > limit)
	{
		size_t		fixed = add_size(rest, stream_block_bytes(shape, 0));
		size_t		fit_rows = limit > fixed ? (limit - fixed) / row_bytes : 0;

		/* too little room even for 2 m rows: refused below with the smallest block */
		shape->block_rows = (int) Min(Max(fit_rows, 2 * (size_t) shape->m),
									  (size_t) shape->block_rows);
	}
	if (origin == GC_STREAM_BLOCK_STORED &&
		add_size(stream_block_bytes(shape, shape->block_rows), rest) > limit)
	{
		*max_block_bytes = limit / 2;
		*max_level_bytes = limit / 2;
		return;
	}
	gc_fit_memory_begin(&account);
	gc_fit_memory_count(&account, stream_block_bytes(shape, shape->block_rows),
						psprintf("A block of %d rows and its reduction", shape->block_rows));
	gc_fit_memory_count(&account, stream_level_reduction_bytes(shape), "A level's reduction");
	*max_block_bytes = mul_size((size_t) shape->block_rows, gc_row_bytes(shape->d, false, false));
	*max_level_bytes = gc_fit_memory_left(&account);
	gc_fit_memory_count(&account, gc_stream_level_bytes(shape->m, shape->d), "The first level");
}

/*
 * The memory of a summary's model fit (53200 past the limit): the
 * summary, its points copied as weighted rows (chunks up to twice their
 * size) and the fit's arrays
 */
void
gc_stream_model_memory(const GcStream *s, int k)
{
	int64_t		points = gc_stream_points(s);
	GcFitMemory account;

	gc_fit_memory_begin(&account);
	gc_fit_memory_count(&account, add_size(s->level_bytes, gc_rows_held_bytes(&s->block)),
						"The summary");
	gc_fit_memory_count(&account, mul_size(2 * (size_t) points, gc_row_bytes(s->d, false, true)),
						"The summary's points as rows");
	gc_fit_memory_count(&account, gc_kmeans_work_bytes(points, k, s->d),
						"The k-means fit's working arrays");
}

