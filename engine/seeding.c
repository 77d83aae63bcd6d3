/*-------------------------------------------------------------------------
 *
 * seeding.c
 *	  k-means++ seeding on the CPU, plain (Arthur & Vassilvitskii, 2007)
 *	  and greedy (several candidates per step, the best kept, as
 *	  scikit-learn's KMeans does): the reference the GPU's seeding is
 *	  tested against.
 *
 * Every draw is an exponential race over per-row seeded draws: row i bids
 * -log(u_i) / (w_i D_i^2), the weight scaled to the frame (gc_race_weight),
 * with u_i drawn from its hash, the seed and a stream number, and the
 * lowest bid wins.  So a draw depends on the rows'
 * values and the seed, never on their order.  A greedy step runs one race
 * per candidate (stream gc_seed_stream(t, j); candidate 0 uses the plain
 * draw's stream t, so one candidate is exactly plain k-means++), then
 * scores each candidate c by the potential sum_i w_i min(D_i^2, |x_i - c|^2)
 * with every term quantised as the inertia is (gc_quantize_wide, units of
 * 2^-inertia_exp) and summed as a 128-bit integer: the sums, and so the
 * choice, are exact and the same on every device.  The candidate with the
 * lowest potential is kept, the lowest candidate number on ties.
 *
 * A step makes two passes over the rows: the first folds the previous
 * step's winner into D^2 and runs the candidates' races, the second
 * computes every row's distances to all candidates at once, and keeps
 * them where they take at most an eighth of the rows' memory: the next
 * step's first pass then takes the winner's from them, reading no row
 * (the same exact sums, so the same draws).  Both are
 * written over a shard of the rows (GcKmeansppOps), and
 * gc_seed_kmeanspp_shards combines the shards' least keys and potential
 * sums into the unsplit pass's: the CPU reference is its one-shard case,
 * a sharded fit (kmeans_shards.c) runs it over its children's shards.
 * Both passes read a float32 store's rows widened a block at a time
 * (GcCpuPass.widen): a sharded GPU fit keeps its rows in float32.
 *
 * IDENTIFICATION
 *	  engine/seeding.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_threads.h"
#include "cpu_vectors.h"
#include "exact_lanes.h"
#include "gc_engine.h"
#include "gc_math.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/*
 * Dimensions from which both passes compute four rows' distances at once,
 * keeping four chains of adds in flight (mnist, d = 784: a third less
 * seeding time); below, the race's bounded scan stops early where rows are
 * far apart, and the four-row sums took 40% more (50k x 64)
 */
#define WIDE_ROWS_MIN_D 256

/*
 * Candidates per greedy step: init_candidates, or by default 2 + floor(ln k)
 * (the number scikit-learn tries) where the seeding is cheap enough, and 1
 * (plain k-means++) where it is not.  A greedy step costs about L + 1
 * plain ones: on an H100, 1M rows of d = 768 and k = 1,000 (n k d = 7.7e11)
 * seed in 3.3 s plain and 8.4 s greedy (L = 8; 3.7 s since its potential
 * pass stages rows through shared memory), while the Lloyd iterations of
 * such a fit take 0.4 s; below GC_GREEDY_SEED_MAX_WORK (n k d = 2^34,
 * about 0.2 s greedy there then) the better start is worth its price.  The
 * rule reads the shape only, so both devices seed the same rows.
 */
#define GC_GREEDY_SEED_MAX_WORK 17179869184.0

int
gc_seed_candidates(const GcKmeansParams *params, int64_t n, int d)
{
	int			candidates = params->init_candidates;
	int			k = params->k > 1 ? params->k : 1;

	if (candidates <= 0)
		candidates = (double) n * k * d > GC_GREEDY_SEED_MAX_WORK ? 1 :
			2 + (int) floor(log((double) k));
	if (candidates > GC_MAX_INIT_CANDIDATES)
		candidates = GC_MAX_INIT_CANDIDATES;
	return candidates;
}

/* The rows greedy seeding on the GPU measures pairwise first (gc_engine.h) */
int64_t
gc_greedy_table_rows(int64_t n, int k, int candidates)
{
	return candidates > 1 && n > 1 && n <= GC_GREEDY_TABLE_MAX_ROWS &&
		n <= (int64_t) k * candidates ? n : 0;
}

/*
 * init auto: k-means++ (greedy by the rule above) where greedy runs by
 * default, k-means|| above (n k d > GC_GREEDY_SEED_MAX_WORK), where greedy
 * would cost seconds and plain k-means++, whose k steps each read every
 * row, loses quality: k-means|| reads the rows in five passes of about k
 * candidates each (matrix products on the GPU), then runs greedy on about
 * 5k weighted candidates: 0.34 s there, its fit's inertia 1.3% below
 * greedy's (bench/results/seeding-parallel-h100.md).  Like
 * gc_seed_candidates, a rule of the shape only.
 */
GcInit
gc_seed_method(const GcKmeansParams *params, int64_t n, int d)
{
	int			k = params->k > 1 ? params->k : 1;

	if (params->init != GC_INIT_AUTO)
		return params->init;
	return (double) n * k * d > GC_GREEDY_SEED_MAX_WORK ?
		GC_INIT_KMEANS_PARALLEL : GC_INIT_KMEANSPP;
}

const char *
gc_init_name(const GcKmeansParams *params, int64_t n, int d)
{
	switch (gc_seed_method(params, n, d))
	{
		case GC_INIT_RANDOM:
			return "random";
		case GC_INIT_GIVEN:
			return "given";
		case GC_INIT_KMEANS_PARALLEL:
			/* its recluster batched from GC_BATCHED_MIN_K centres */
			return gc_batched_applies(params->k) ? "batched kmeans||" : "kmeans||";
		default:
			/* k = 1 is one draw, whatever the candidates */
			return gc_seed_candidates(params, n, d) > 1 && params->k > 1 ?
				"greedy kmeans++" : "kmeans++";
	}
}

/* The race pass, shared by its threads */
typedef struct RacePass
{
	const GcRows *rows;
	int64_t		row_base;		/* the fit's number of the rows' first */
	uint64_t	seed;
	int			t;				/* the step */
	int			candidates;
	const double *previous;		/* the previous step's centre, NULL at step 0 */
	const double *known;		/* NULL, or row i's distance to it at known[i * stride] */
	int			known_stride;
	int			inertia_exp;
	double	   *mind2;
	uint64_t   *best;			/* workers x GC_MAX_INIT_CANDIDATES lowest keys */
} RacePass;

/*
 * Squared distances of 4 rows (d apart) to centre, each lane summed in
 * dimension order with every operation rounded on its own: lane r is
 * gc_sqdist_exact(row r, centre) to the bit.  Four chains at once, where
 * one row's would wait on its adds' latency.  Cloned for the vector units.
 */
GC_SIMD_CLONES
static void
sqdist_rows4(const double *restrict rows, const double *restrict centre, int d,
			 double *restrict out)
{
	v4d			s = {0};

	for (int j = 0; j < d; j++)
	{
		v4d			x = {rows[j], rows[d + j], rows[2 * (size_t) d + j],
		rows[3 * (size_t) d + j]};
		v4d			t = x - centre[j];

		s = s + t * t;
	}
	memcpy(out, &s, sizeof(v4d));
}

/* Rows [first, first + count) of chunk: D^2, then thread worker's races */
static void
race_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	RacePass   *pass = ctx;
	int			d = pass->rows->d;
	uint64_t   *best = pass->best + (size_t) worker * GC_MAX_INIT_CANDIDATES;
	uint64_t	keys[GC_MAX_INIT_CANDIDATES];
	double		d2s[4] = {0};

	for (int j = 0; j < pass->candidates; j++)
		keys[j] = gc_draw_key(pass->seed, gc_seed_stream(pass->t, j));
	for (int64_t i = first; i < first + count; i++)
	{
		int64_t		row = chunk->first_row + i;
		double		w = 1.0;

		/* the distance to the previous centre, and a draw per candidate */
		if (pass->previous != NULL)
		{
			double		d2;

			/*
			 * the previous step's potential pass measured it: the row is not
			 * read again
			 */
			if (pass->known != NULL)
				d2 = pass->known[(size_t) row * pass->known_stride];

			/*
			 * wide rows: four rows' distances at a time (a full sum decides
			 * as a bounded one does); narrow ones: the bounded scan, which
			 * stops early where rows are far apart (step 1 has no D^2 yet:
			 * nothing bounds its sum)
			 */
			else if (d < WIDE_ROWS_MIN_D)
				d2 = gc_sqdist_within(chunk->values + (size_t) i * d, pass->previous, d,
									  pass->t == 1 ? DBL_MAX : pass->mind2[row]);
			else
			{
				if ((i - first) % 4 == 0 && i + 4 <= first + count)
					sqdist_rows4(chunk->values + (size_t) i * d, pass->previous, d, d2s);
				if (i + 4 - (i - first) % 4 <= first + count)
					d2 = d2s[(i - first) % 4];
				else
					d2 = gc_sqdist_exact(chunk->values + (size_t) i * d, pass->previous, d);
			}
			if (pass->t == 1 || d2 < pass->mind2[row])
				pass->mind2[row] = d2;
			w = pass->mind2[row];
		}
		if (chunk->weights)
			w *= chunk->weights[i];
		w = gc_race_weight(w, pass->inertia_exp);
		for (int j = 0; j < pass->candidates; j++)
		{
			double		u = gc_unit_draw_keyed(gc_draw_hash(pass->rows, chunk, i), keys[j]);
			uint64_t	key;

			if (gc_race_outbid(u, w, best[j]))
				continue;
			key = gc_race_key(u, w, pass->row_base + row);
			if (key < best[j])
				best[j] = key;
		}
	}
}

/*
 * Pass one of step t: fold the previous centre (NULL at step 0) into
 * mind2, then run the races of the step's candidates into best[0..L-1],
 * on threads: each row's D^2 is its own, and the lowest key of a race is
 * the least of the threads' (keys are unique), whatever the split
 */
static GcStatus
race_pass(const GcRows *rows, int64_t row_base, uint64_t seed, int threads,
		  int t, int candidates, const double *previous, const double *known,
		  int known_stride, int inertia_exp, double *mind2, uint64_t *best, GcPoll *poll,
		  GcError *err)
{
	RacePass	pass = {rows, row_base, seed, t, candidates, previous, known, known_stride,
		inertia_exp, mind2, NULL};
	GcCpuPass	run = {.rows = rows, .row_units = rows->d + 8 * candidates, .fn = race_block,
		.ctx = &pass, .widen = true};
	GcStatus	status;

	run.workers = gc_cpu_threads(threads, rows->n * run.row_units);
	pass.best = malloc(sizeof(uint64_t) * run.workers * GC_MAX_INIT_CANDIDATES);
	if (pass.best == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int i = 0; i < run.workers * GC_MAX_INIT_CANDIDATES; i++)
		pass.best[i] = GC_RACE_NONE;
	status = gc_cpu_run_blocks(&run, poll, err, "interrupted during seeding");
	for (int j = 0; j < candidates; j++)
	{
		best[j] = GC_RACE_NONE;
		for (int w = 0; w < run.workers; w++)
			if (pass.best[(size_t) w * GC_MAX_INIT_CANDIDATES + j] < best[j])
				best[j] = pass.best[(size_t) w * GC_MAX_INIT_CANDIDATES + j];
	}
	free(pass.best);
	return status;
}

/* The potential pass, shared by its threads */
typedef struct PotentialPass
{
	const GcRows *rows;
	const GcFrame *frame;
	int			candidates;
	int			npanels;		/* panels of GC_LANES candidates */
	const double *panels;		/* npanels x d x GC_LANES (exact_lanes.h) */
	const double *mind2;
	double	   *d2;				/* NULL, or n x candidates: each row's exact distances */
	gc_u128    *potential;		/* workers x GC_MAX_INIT_CANDIDATES */
} PotentialPass;

/* Rows [first, first + count) of chunk into thread worker's potentials */
static void
potential_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t count)
{
	PotentialPass *pass = ctx;
	int			d = pass->rows->d;
	gc_u128    *potential = pass->potential + (size_t) worker * GC_MAX_INIT_CANDIDATES;

	/* wide rows: four rows' lanes at once; narrow ones one by one */
	int			group = d >= WIDE_ROWS_MIN_D ? 4 : 1;
	double		lanes[4 * GC_LANES];

	for (int64_t i0 = first; i0 < first + count; i0 += group)
	{
		int			rows = first + count - i0 < group ? (int) (first + count - i0) : group;

		for (int p = 0; p < pass->npanels; p++)
		{
			const double *panel = pass->panels + (size_t) p * d * GC_LANES;

			if (rows == 4)
				gc_sqdist_lanes4(chunk->values + (size_t) i0 * d, panel, d, lanes);
			else
				for (int r = 0; r < rows; r++)
					gc_sqdist_lanes(chunk->values + (size_t) (i0 + r) * d, panel, d, lanes + r * GC_LANES);
			for (int r = 0; r < rows; r++)
			{
				int64_t		row = chunk->first_row + i0 + r;
				gc_u128		w = (gc_u128) gc_chunk_weight(chunk, i0 + r);
				double		mind2 = pass->mind2[row];
				/* most candidates leave D^2 as it is: its term, once */
				gc_u128		kept = gc_quantize_wide(mind2, pass->frame->inertia_exp) * w;

				for (int l = 0; pass->d2 != NULL && l < GC_LANES && p * GC_LANES + l < pass->candidates; l++)
					pass->d2[(size_t) row * pass->candidates + p * GC_LANES + l] = lanes[r * GC_LANES + l];

				for (int l = 0; l < GC_LANES && p * GC_LANES + l < pass->candidates; l++)
					/* min(D^2, |x - c|^2) */
					potential[p * GC_LANES + l] += lanes[r * GC_LANES + l] < mind2 ?
						gc_quantize_wide(lanes[r * GC_LANES + l], pass->frame->inertia_exp) * w : kept;
			}
		}
	}
}

/*
 * The potential of each candidate (the sum over rows of w min(D^2,
 * |x - c|^2), quantised), on threads: 128-bit integer sums per thread,
 * added up, so the same for any number of threads
 */
static GcStatus
potential_pass(const GcRows *rows, const GcFrame *frame, int candidates, int threads,
			   const double *const *centre, const double *mind2, double *d2,
			   gc_u128 *potential, GcPoll *poll, GcError *err)
{
	int			d = rows->d;
	PotentialPass pass = {rows, frame, candidates, (candidates + GC_LANES - 1) / GC_LANES, NULL, mind2, d2, NULL};
	GcCpuPass	run = {.rows = rows, .row_units = (int64_t) candidates * d, .fn = potential_block,
		.ctx = &pass, .widen = true};
	double	   *panels;
	GcStatus	status;

	run.workers = gc_cpu_threads(threads, rows->n * run.row_units);
	panels = calloc((size_t) pass.npanels * d * GC_LANES, sizeof(double));
	pass.potential = calloc((size_t) run.workers * GC_MAX_INIT_CANDIDATES, sizeof(gc_u128));
	if (panels == NULL || pass.potential == NULL)
	{
		free(panels);
		free(pass.potential);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	}
	for (int c = 0; c < candidates; c++)
		gc_lane_panel_put(panels, c, d, centre[c]);
	pass.panels = panels;
	status = gc_cpu_run_blocks(&run, poll, err, "interrupted during seeding");
	for (int j = 0; j < candidates; j++)
	{
		potential[j] = 0;
		for (int w = 0; w < run.workers; w++)
			potential[j] += pass.potential[(size_t) w * GC_MAX_INIT_CANDIDATES + j];
	}
	free(panels);
	free(pass.potential);
	return status;
}

/*
 * What k-means++ keeps of one shard's rows between its passes: the rows
 * row_base .. row_base + n - 1 of the fit (all of them, unsharded)
 */
struct GcKmeansppShard
{
	const GcRows *rows;
	int64_t		row_base;
	const GcFrame *frame;
	const GcKmeansParams *params;
	double	   *mind2;			/* n: squared distance to the nearest centre */
	/* the last potential pass's candidates and distances (kept_candidates 0: none) */
	int			kept_candidates;
	int			kept_capacity;	/* candidates kept_values and kept_d2 hold */
	double	   *kept_values;	/* kept_candidates x d */
	double	   *kept_d2;		/* n x kept_candidates */
	GcPoll		poll;
};

GcStatus
gc_kmeanspp_shard_open(const GcRows *rows, int64_t row_base, const GcFrame *frame,
					   const GcKmeansParams *params, GcKmeansppShard **shard, GcError *err)
{
	GcKmeansppShard *sh = calloc(1, sizeof(GcKmeansppShard));

	if (sh == NULL ||
		(sh->mind2 = malloc(sizeof(double) * (rows->n > 0 ? rows->n : 1))) == NULL)
	{
		free(sh);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	}
	sh->rows = rows;
	sh->row_base = row_base;
	sh->frame = frame;
	sh->params = params;
	sh->poll.interrupted = params->interrupted;
	*shard = sh;
	return GC_OK;
}

void
gc_kmeanspp_shard_close(void *shard)
{
	GcKmeansppShard *sh = shard;

	free(sh->mind2);
	free(sh->kept_values);
	free(sh->kept_d2);
	free(sh);
}

/*
 * Pass one of step t over the shard's rows (race_pass); where the previous
 * centre is one of the last potential pass's candidates (the greedy step's
 * winner), its distances are those the pass kept
 */
static GcStatus
shard_race(void *shard, uint64_t seed, int t, int candidates, const double *previous,
		   uint64_t *best, GcError *err)
{
	GcKmeansppShard *sh = shard;
	int			d = sh->rows->d;
	const double *known = NULL;

	for (int j = 0; previous != NULL && j < sh->kept_candidates; j++)
		if (memcmp(sh->kept_values + (size_t) j * d, previous, sizeof(double) * d) == 0)
		{
			known = sh->kept_d2 + j;
			break;
		}
	return race_pass(sh->rows, sh->row_base, seed, sh->params->cpu_threads, t, candidates,
					 previous, known, sh->kept_candidates, sh->frame->inertia_exp, sh->mind2,
					 best, &sh->poll, err);
}

/*
 * Pass two of a greedy step over the shard's rows (potential_pass),
 * keeping the rows' distances to the candidates where they take at most an
 * eighth of the rows' memory (below, the race's bounded scan costs less than
 * keeping them: 200k x 32): the next race then reads no row
 */
static GcStatus
shard_potentials(void *shard, int candidates, const double *const *centre,
				 unsigned __int128 *potential, GcError *err)
{
	GcKmeansppShard *sh = shard;
	int			d = sh->rows->d;

	sh->kept_candidates = 0;
	if (8 * candidates <= d && sh->rows->n > 0)
	{
		if (sh->kept_capacity == 0)
		{
			sh->kept_values = malloc(sizeof(double) * candidates * d);
			sh->kept_d2 = malloc(sizeof(double) * candidates * sh->rows->n);
			if (sh->kept_values != NULL && sh->kept_d2 != NULL)
				sh->kept_capacity = candidates;
		}
		/* every greedy step has as many candidates */
		if (candidates <= sh->kept_capacity)
		{
			sh->kept_candidates = candidates;
			for (int j = 0; j < candidates; j++)
				memcpy(sh->kept_values + (size_t) j * d, centre[j], sizeof(double) * d);
		}
	}
	return potential_pass(sh->rows, sh->frame, candidates, sh->params->cpu_threads, centre,
						  sh->mind2, sh->kept_candidates ? sh->kept_d2 : NULL, potential,
						  &sh->poll, err);
}

const GcKmeansppOps gc_kmeanspp_cpu_ops = {
	.race = shard_race,
	.potentials = shard_potentials,
	.close = gc_kmeanspp_shard_close,
};

/*
 * k-means++ over shards: each step's races run in every shard, the least
 * key of each race kept; a greedy step's potentials are added up over the
 * shards and the lowest kept, the lowest candidate number on ties
 */
GcStatus
gc_seed_kmeanspp_shards(const GcKmeansppOps *ops, void **shards, int nshards,
						const GcRows *rows, const GcFrame *frame,
						const GcKmeansParams *params, uint64_t seed,
						int64_t *chosen, GcError *err)
{
	int			d = rows->d;
	int			candidates = gc_seed_candidates(params, rows->n, d);
	uint64_t	best[GC_MAX_INIT_CANDIDATES];
	gc_u128		potential[GC_MAX_INIT_CANDIDATES];
	const double *centre[GC_MAX_INIT_CANDIDATES];
	double	   *values = malloc(sizeof(double) * (candidates + 1) * d);
	double	   *previous = values + (size_t) candidates * d;
	GcStatus	status = GC_OK;

	if (values == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int j = 0; j < candidates; j++)
		centre[j] = values + (size_t) j * d;
	for (int t = 0; t < params->k && status == GC_OK; t++)
	{
		/* step 0 draws the first centre uniformly, one candidate */
		int			step_candidates = t == 0 ? 1 : candidates;
		int			winner = 0;

		if (t > 0)
			gc_rows_copy_row(rows, chosen[t - 1], previous);
		for (int j = 0; j < step_candidates; j++)
			best[j] = GC_RACE_NONE;
		for (int i = 0; status == GC_OK && i < nshards; i++)
		{
			uint64_t	part[GC_MAX_INIT_CANDIDATES];

			status = ops->race(shards[i], seed, t, step_candidates, t > 0 ? previous : NULL,
							   part, err);
			for (int j = 0; status == GC_OK && j < step_candidates; j++)
				if (part[j] < best[j])
					best[j] = part[j];
		}
		if (status == GC_OK && step_candidates > 1)
		{
			for (int j = 0; j < step_candidates; j++)
			{
				gc_rows_copy_row(rows, (int64_t) (uint32_t) best[j], values + (size_t) j * d);
				potential[j] = 0;
			}
			for (int i = 0; status == GC_OK && i < nshards; i++)
			{
				gc_u128		part[GC_MAX_INIT_CANDIDATES];

				status = ops->potentials(shards[i], step_candidates, centre, part, err);
				for (int j = 0; status == GC_OK && j < step_candidates; j++)
					potential[j] += part[j];
			}
			for (int j = 1; j < step_candidates; j++)
				if (potential[j] < potential[winner])
					winner = j;
		}
		chosen[t] = (int64_t) (uint32_t) best[winner];
	}
	free(values);
	return status;
}

GcStatus
gc_seed_kmeanspp_cpu(const GcRows *rows, const GcFrame *frame,
					 const GcKmeansParams *params, uint64_t seed,
					 int64_t *chosen, GcError *err)
{
	GcKmeansppShard *shard;
	void	   *shards[1];
	GcStatus	status = gc_kmeanspp_shard_open(rows, 0, frame, params, &shard, err);

	if (status != GC_OK)
		return status;
	shards[0] = shard;
	status = gc_seed_kmeanspp_shards(&gc_kmeanspp_cpu_ops, shards, 1, rows, frame, params,
									 seed, chosen, err);
	gc_kmeanspp_shard_close(shard);
	return status;
}
