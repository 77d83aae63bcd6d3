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
 * computes every row's distances to all candidates at once.
 *
 * IDENTIFICATION
 *	  engine/seeding.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <float.h>
#include <stdlib.h>

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
			return "kmeans||";
		default:
			/* k = 1 is one draw, whatever the candidates */
			return gc_seed_candidates(params, n, d) > 1 && params->k > 1 ?
				"greedy kmeans++" : "kmeans++";
	}
}

/*
 * Pass one of step t: fold the previous centre (NULL at step 0) into
 * mind2, then run the races of the step's candidates into best[0..L-1]
 */
static GcStatus
race_pass(const GcRows *rows, uint64_t seed,
		  int t, int candidates, const double *previous, int inertia_exp,
		  double *mind2, uint64_t *best, GcPoll *poll, GcError *err)
{
	for (int j = 0; j < candidates; j++)
		best[j] = GC_RACE_NONE;
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			double		w = 1.0;

			/* the distance to the previous centre, and a draw per candidate */
			if (gc_poll(poll, rows->d + 8 * candidates))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			if (previous != NULL)
			{
				/* step 1 has no D^2 yet: nothing bounds its sum */
				double		d2 = gc_sqdist_within(chunk->values + (size_t) i * rows->d, previous,
												  rows->d, t == 1 ? DBL_MAX : mind2[row]);

				if (t == 1 || d2 < mind2[row])
					mind2[row] = d2;
				w = mind2[row];
			}
			if (chunk->weights)
				w *= chunk->weights[i];
			w = gc_race_weight(w, inertia_exp);
			for (int j = 0; j < candidates; j++)
			{
				double		u = gc_unit_draw(chunk->hashes[i], seed, gc_seed_stream(t, j));
				uint64_t	key;

				if (gc_race_outbid(u, w, best[j]))
					continue;
				key = gc_race_key(u, w, row);
				if (key < best[j])
					best[j] = key;
			}
		}
	}
	return GC_OK;
}

/*
 * Pass two: the exact potential of each candidate into potential[j], and
 * the index of the lowest (the first on ties)
 */
static GcStatus
potential_pass(const GcRows *rows, const GcFrame *frame, int candidates,
			   const double *const *centre, const double *mind2,
			   gc_u128 *potential, int *winner, GcPoll *poll, GcError *err)
{
	for (int j = 0; j < candidates; j++)
		potential[j] = 0;
	for (int ci = 0; ci < rows->nchunks; ci++)
	{
		const GcChunk *chunk = &rows->chunks[ci];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			int64_t		row = chunk->first_row + i;
			const double *x = chunk->values + (size_t) i * rows->d;
			gc_u128		w = (gc_u128) gc_chunk_weight(chunk, i);

			if (gc_poll(poll, (int64_t) candidates * rows->d))
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			for (int j = 0; j < candidates; j++)
			{
				double		d2 = gc_sqdist_within(x, centre[j], rows->d, mind2[row]);

				if (mind2[row] < d2)
					d2 = mind2[row];
				potential[j] += gc_quantize_wide(d2, frame->inertia_exp) * w;
			}
		}
	}
	*winner = 0;
	for (int j = 1; j < candidates; j++)
		if (potential[j] < potential[*winner])
			*winner = j;
	return GC_OK;
}

GcStatus
gc_seed_kmeanspp_cpu(const GcRows *rows, const GcFrame *frame,
					 const GcKmeansParams *params, uint64_t seed,
					 int64_t *chosen, GcError *err)
{
	int			candidates = gc_seed_candidates(params, rows->n, rows->d);
	double	   *mind2 = malloc(sizeof(double) * (rows->n > 0 ? rows->n : 1));
	uint64_t	best[GC_MAX_INIT_CANDIDATES];
	gc_u128		potential[GC_MAX_INIT_CANDIDATES];
	const double *centre[GC_MAX_INIT_CANDIDATES];
	GcPoll		poll = {params->interrupted, 0};
	GcStatus	status = GC_OK;

	if (mind2 == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");

	for (int t = 0; t < params->k && status == GC_OK; t++)
	{
		/* step 0 draws the first centre uniformly, one candidate */
		int			step_candidates = t == 0 ? 1 : candidates;
		int			winner = 0;

		status = race_pass(rows, seed, t, step_candidates,
						   t > 0 ? gc_rows_get(rows, chosen[t - 1]) : NULL,
						   frame->inertia_exp, mind2, best, &poll, err);
		if (status != GC_OK)
			break;
		if (step_candidates > 1)
		{
			for (int j = 0; j < step_candidates; j++)
				centre[j] = gc_rows_get(rows, (int64_t) (uint32_t) best[j]);
			status = potential_pass(rows, frame, step_candidates, centre,
									mind2, potential, &winner, &poll, err);
		}
		chosen[t] = (int64_t) (uint32_t) best[winner];
	}
	free(mind2);
	return status;
}
