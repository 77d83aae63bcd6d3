/*-------------------------------------------------------------------------
 *
 * pmedian_cpu.c
 *	  The CPU reference backend of the p-median engine: allocation of
 *	  entities to centres (the paper's Algorithm 2, with penalties), the
 *	  within-cluster sums of dissimilarities (Algorithm 8) and the
 *	  D-sampling race; the swap improvement's nearest2 and swap gains are
 *	  in pmedian_cpu_swap.c.  It is the oracle of the CUDA backend and the
 *	  fallback where no GPU exists; every distance is computed with the
 *	  same arithmetic (pmedian_math.h) as the kernels.
 *
 *	  The allocation and the cluster sums run on threads (cpu_threads.h),
 *	  each entity's or member's result its own and computed in the plain
 *	  loop's order, so the same for any number of threads.
 *
 * IDENTIFICATION
 *	  engine/pmedian_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_cpu.h"
#include "pmedian_math.h"

#include <float.h>
#include <stdlib.h>

static void cpu_close(void *session);

/*
 * Count evaluations distances of d coordinates each and poll the
 * interrupt hook as the rule of gc_poll says
 */
static bool
poll_interrupt(PmCpuSession *s, int64_t evaluations)
{
	return gc_poll(&s->poll, evaluations * s->d);
}

/*
 * A pass over count items (rows by position, or candidates) on the
 * session's threads, units of work each, blocks of block_items (0: about
 * GC_POLL_WORK units); the calling thread polls
 */
GcStatus
gc_pm_cpu_run_items(PmCpuSession *s, int64_t count, int64_t units, int block_items,
					GcBlockFn fn, void *ctx, GcError *err, const char *what)
{
	GcChunk		chunk = {.first_row = 0, .count = count};
	GcRows		items = {.d = s->d, .n = count, .nchunks = 1, .chunks = &chunk};
	GcCpuPass	pass = {.rows = &items, .row_units = units, .block_rows = block_items,
		.fn = fn, .ctx = ctx};

	pass.workers = gc_cpu_threads(s->threads, count * units);
	return gc_cpu_run_blocks(&pass, &s->poll, err, what);
}

static GcStatus
cpu_open(const GcRows *rows, const double *demand, const GcPmParams *params,
		 void **session, GcError *err)
{
	PmCpuSession *s = calloc(1, sizeof(PmCpuSession));

	if (s == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	s->params = params;
	s->threads = params->cpu_threads;
	s->poll.interrupted = params->interrupted;
	s->n = rows->n;
	s->d = rows->d;
	s->demand = demand;
	s->x = malloc(sizeof(double) * rows->n * rows->d);
	s->hashes = malloc(sizeof(uint64_t) * rows->n);
	if (s->x == NULL || s->hashes == NULL)
	{
		cpu_close(s);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the CPU session");
	}
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		if (!gc_copy_polled(s->x + (size_t) chunk->first_row * s->d, chunk->values,
							sizeof(double) * s->d * chunk->count, &s->poll))
		{
			cpu_close(s);
			return gc_fail(err, GC_INTERRUPTED, "interrupted while copying the rows");
		}
		memcpy(s->hashes + chunk->first_row, chunk->hashes,
			   sizeof(uint64_t) * chunk->count);
	}
	*session = s;
	return GC_OK;
}

static void
cpu_close(void *session)
{
	PmCpuSession *s = session;

	free(s->x);
	free(s->hashes);
	free(s->mind);
	gc_pm_cpu_tree_release(&s->tree);
	free(s);
}

static GcStatus
cpu_set_entities(void *session, int32_t nent, const int32_t *ent,
				 const int32_t *group, GcError *err)
{
	PmCpuSession *s = session;

	free(s->mind);
	s->mind = malloc(sizeof(double) * (nent > 0 ? nent : 1));
	if (s->mind == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for entities");
	s->nent = nent;
	s->ent = ent;
	s->group = group;
	return GC_OK;
}

typedef struct AllocatePass
{
	PmCpuSession *s;
	const int32_t *cen;
	const int32_t *cen_first;
	const double *penalty;
	int32_t    *alloc;
	double	   *dist;
} AllocatePass;

/* The cheapest centre of the group of entities [first, first + count) */
static void
allocate_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	AllocatePass *pass = ctx;
	PmCpuSession *s = pass->s;
	const int32_t *cen = pass->cen;
	int			metric = s->params->metric;

	(void) worker;
	(void) chunk;
	for (int64_t e = first; e < first + count; e++)
	{
		int32_t		row = s->ent[e];
		int			g = s->group[e];
		double		q = s->demand ? s->demand[row] : 0.0;
		double		best = DBL_MAX,
					bestd = 0.0;
		int32_t		bestc = pass->cen_first[g];

		for (int32_t c = pass->cen_first[g]; c < pass->cen_first[g + 1]; c++)
		{
			double		dc,
						cost;

			if (cen[c] == row)
			{
				bestc = c;
				bestd = 0.0;
				break;
			}
			dc = gc_pm_dist(ROW(s, row), ROW(s, cen[c]), s->d, metric);
			cost = pass->penalty ? gc_pm_cost(dc, pass->penalty[c], q) : dc;
			if (cost < best)
			{
				best = cost;
				bestd = dc;
				bestc = c;
			}
		}
		pass->alloc[e] = bestc;
		pass->dist[e] = bestd;
	}
}

/*
 * Allocate each entity to the cheapest centre of its group, on threads
 * (an entity polled as the mean group's centres)
 */
static GcStatus
cpu_allocate(void *session, int32_t ncen, const int32_t *cen,
			 const int32_t *cen_first, int ngroups, const double *penalty,
			 int32_t *alloc, double *dist, GcError *err)
{
	PmCpuSession *s = session;
	AllocatePass pass = {s, cen, cen_first, penalty, alloc, dist};
	int64_t		per_entity = (ncen + ngroups - 1) / (ngroups > 0 ? ngroups : 1);

	return gc_pm_cpu_run_items(s, s->nent, (per_entity > 0 ? per_entity : 1) * s->d, 0,
					 allocate_block, &pass, err, "interrupted during allocation");
}

typedef struct SumsPass
{
	PmCpuSession *s;
	const int32_t *members;
	const int32_t *first;
	const int32_t *cluster;		/* of each member */
	double	   *sums;
} SumsPass;

/* The sums of members [from, from + count), each over its cluster in order */
static void
sums_block(void *ctx, int worker, const GcChunk *chunk, int64_t from, int64_t count)
{
	SumsPass   *pass = ctx;
	PmCpuSession *s = pass->s;
	int			metric = s->params->metric;

	(void) worker;
	(void) chunk;
	for (int64_t t = from; t < from + count; t++)
	{
		int32_t		c = pass->cluster[t];
		const double *xt = ROW(s, pass->members[t]);
		double		sum = 0.0;

		for (int32_t u = pass->first[c]; u < pass->first[c + 1]; u++)
			if (u != t)
				sum = sum + gc_pm_dist(xt, ROW(s, pass->members[u]), s->d, metric);
		pass->sums[t] = sum;
	}
}

/*
 * Each member's sum of dissimilarities to the rest of its cluster, on
 * threads (a member polled as the mean over members of their cluster's
 * size, so the pass as its distances)
 */
static GcStatus
cpu_cluster_sums(void *session, int32_t ncen, const int32_t *members,
				 const int32_t *first, double *sums, GcError *err)
{
	PmCpuSession *s = session;
	int32_t		nmem = first[ncen];
	int32_t    *cluster = malloc(sizeof(int32_t) * (nmem > 0 ? nmem : 1));
	SumsPass	pass = {s, members, first, cluster, sums};
	int64_t		pairs = 0;
	GcStatus	status;

	if (cluster == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the cluster sums");
	for (int32_t c = 0; c < ncen; c++)
	{
		int64_t		size = first[c + 1] - first[c];

		for (int32_t t = first[c]; t < first[c + 1]; t++)
			cluster[t] = c;
		pairs += size * size;
	}
	status = nmem == 0 ? GC_OK :
		gc_pm_cpu_run_items(s, nmem, (pairs / nmem > 0 ? pairs / nmem : 1) * s->d, 0,
							sums_block, &pass, err, "interrupted while locating centres");
	free(cluster);
	return status;
}

/*
 * One step of the D-sampling race: weights are distances to the nearest
 * centre so far (uniform at step 0)
 */
static GcStatus
cpu_seed_step(void *session, int32_t centre, uint64_t seed, int step,
			  uint64_t *winner, GcError *err)
{
	PmCpuSession *s = session;
	uint64_t	best = GC_RACE_NONE;

	for (int32_t e = 0; e < s->nent; e++)
	{
		int32_t		row = s->ent[e];
		double		w = 1.0;
		uint64_t	key;

		if (poll_interrupt(s, 1))
			return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		if (centre >= 0)
		{
			double		dc = gc_pm_dist(ROW(s, row), ROW(s, centre), s->d,
										s->params->metric);

			double		m = step == 1 ? DBL_MAX : s->mind[e];

			if (dc < m)
				m = dc;
			s->mind[e] = m;
			w = m;
		}
		key = gc_race_key(gc_unit_draw(s->hashes[row], seed, (uint64_t) step), w, e);
		if (key < best)
			best = key;
	}
	*winner = best;
	return GC_OK;
}

const GcPmBackend gc_pmedian_cpu_backend = {
	"cpu",
	cpu_open,
	cpu_set_entities,
	cpu_allocate,
	cpu_cluster_sums,
	cpu_seed_step,
	gc_pm_cpu_nearest2,
	gc_pm_cpu_swap_gains,
	cpu_close,
};
