/*-------------------------------------------------------------------------
 *
 * pmedian_fit.c
 *	  The p-median driver shared by every backend, after Luong & Taillard,
 *	  "GPU techniques for accelerating heuristics for large p-median
 *	  clustering problems":
 *
 *	  - location-allocation (their Algorithms 1-4 in the split of
 *		Algorithm 7): the backend allocates entities and computes each
 *		entity's sum of dissimilarities within its cluster; the host builds
 *		clusters by counting sort and moves each centre to the member with
 *		the smallest sum when that is strictly better.  Capacities are
 *		soft: a Lagrangean multiplier per centre is added to the cost of
 *		each unit of demand, updated by a subgradient step per iteration;
 *	  - the three-phase construction of Alvim & Taillard for large n:
 *		sample (30 sqrt(n) entities, sqrt(n) centres), global (allocate all
 *		n), small (each big cluster split into centres in proportion to its
 *		demand or size, all sub-problems solved at once), then a
 *		location-allocation polish over all n;
 *	  - beyond the paper, a FasterPAM-style swap improvement (Schubert &
 *		Rousseeuw, 2021), in pmedian_improve.c.
 *
 *	  Initial centres come from a D-sampling race (k-means++ with
 *	  distances as weights) over seeded per-row draws.
 *
 * IDENTIFICATION
 *	  engine/pmedian_fit.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_fit.h"
#include "pmedian_math.h"

#include <float.h>
#include <stdlib.h>

static const char *const metric_names[] = {"euclidean", "sqeuclidean", "manhattan", "cosine"};
static const char *const method_names[] = {"auto", "location_allocation", "three_phase"};
static const char *const improve_names[] = {"auto", "none", "sample", "full"};

const char *
gc_pmedian_metric_name(GcPmMetric metric)
{
	return metric_names[metric];
}

const char *
gc_pmedian_method_name(GcPmMethod method)
{
	return method_names[method];
}

const char *
gc_pmedian_improve_name(GcPmImprove improve)
{
	return improve_names[improve];
}

/*
 * Nearest medoid vector to x, lowest index on ties; -1 when the interrupt
 * hook, polled by work (gc_poll), asked to stop
 */
int
gc_pmedian_nearest(const double *x, const double *medoids, int p, int d,
				   GcPmMetric metric, double *distance, GcPoll *poll)
{
	int			best = 0;
	double		bestd = DBL_MAX;

	for (int m = 0; m < p; m++)
	{
		double		dm;

		if (gc_poll(poll, d))
			return -1;
		dm = gc_pm_dist(x, medoids + (size_t) m * d, d, metric);

		if (dm < bestd)
		{
			bestd = dm;
			best = m;
		}
	}
	if (distance)
		*distance = bestd;
	return best;
}

void *
gc_pm_alloc_array(size_t count, size_t size, bool *failed)
{
	void	   *p = malloc(size * (count > 0 ? count : 1));

	if (p == NULL)
		*failed = true;
	return p;
}

void
gc_pm_problem_release(PmProblem *pb)
{
	free(pb->ent);
	free(pb->group);
	free(pb->cen);
	free(pb->cen_first);
	free(pb->penalty);
	free(pb->alloc);
	free(pb->dist);
	memset(pb, 0, sizeof(*pb));
}

/*
 * Allocate the arrays of a problem of nent entities and ncen centres
 */
GcStatus
gc_pm_problem_init(PmProblem *pb, int ngroups, int32_t nent, int32_t ncen, GcError *err)
{
	bool		failed = false;

	memset(pb, 0, sizeof(*pb));
	pb->ngroups = ngroups;
	pb->nent = nent;
	pb->ncen = ncen;
	pb->ent = gc_pm_alloc_array(nent, sizeof(int32_t), &failed);
	pb->group = gc_pm_alloc_array(nent, sizeof(int32_t), &failed);
	pb->cen = gc_pm_alloc_array(ncen, sizeof(int32_t), &failed);
	pb->cen_first = gc_pm_alloc_array(ngroups + 1, sizeof(int32_t), &failed);
	pb->penalty = gc_pm_alloc_array(ncen, sizeof(double), &failed);
	pb->alloc = gc_pm_alloc_array(nent, sizeof(int32_t), &failed);
	pb->dist = gc_pm_alloc_array(nent, sizeof(double), &failed);
	if (failed)
	{
		gc_pm_problem_release(pb);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a p-median problem");
	}
	memset(pb->group, 0, sizeof(int32_t) * nent);
	memset(pb->penalty, 0, sizeof(double) * ncen);
	pb->cen_first[0] = 0;
	pb->cen_first[ngroups] = ncen;
	return GC_OK;
}

bool
gc_pm_interrupted(const PmFit *f)
{
	return f->params->interrupted && f->params->interrupted();
}

/*
 * The objective of pb's current allocation: its entities' distances,
 * summed in entity order (every objective the fit reports is this sum)
 */
double
gc_pm_objective(const PmProblem *pb)
{
	double		objective = 0.0;

	for (int32_t e = 0; e < pb->nent; e++)
		objective += pb->dist[e];
	return objective;
}

/*
 * Report phase to the progress callback, if any, with the iterations so
 * far and, where pb is the whole problem (every row in one group), the
 * objective of its current allocation
 */
void
gc_pm_report(const PmFit *f, GcPhase phase, const PmProblem *pb)
{
	bool		whole = pb != NULL && pb->ngroups == 1 && pb->nent == f->n;

	if (f->params->progress != NULL)
		f->params->progress(f->params->progress_arg, phase, f->iterations, NAN,
							whole ? gc_pm_objective(pb) : NAN);
}

/*
 * Clusters by counting sort of the entities on their centre (Algorithm 3),
 * stable in entity order; load[c] is the cluster's demand
 */
static void
build_clusters(const PmFit *f, const PmProblem *pb, int32_t *members,
			   int32_t *first, double *load)
{
	memset(first, 0, sizeof(int32_t) * (pb->ncen + 1));
	for (int32_t c = 0; c < pb->ncen; c++)
		load[c] = 0.0;
	for (int32_t e = 0; e < pb->nent; e++)
	{
		first[pb->alloc[e] + 1]++;
		load[pb->alloc[e]] += f->demand ? f->demand[pb->ent[e]] : 1.0;
	}
	for (int32_t c = 0; c < pb->ncen; c++)
		first[c + 1] += first[c];
	for (int32_t e = 0; e < pb->nent; e++)
		members[first[pb->alloc[e]]++] = pb->ent[e];
	for (int32_t c = pb->ncen; c > 0; c--)
		first[c] = first[c - 1];
	first[0] = 0;
}

/*
 * Move each centre to the member with the smallest sum of dissimilarities
 * when it is strictly smaller than the centre's own (lowest row on ties);
 * returns how many centres moved
 */
static int32_t
relocate_centres(PmProblem *pb, const int32_t *members, const int32_t *first,
				 const double *sums)
{
	int32_t		moved = 0;

	for (int32_t c = 0; c < pb->ncen; c++)
	{
		int32_t		cur = first[c],
					best;

		while (cur < first[c + 1] && members[cur] != pb->cen[c])
			cur++;
		if (cur == first[c + 1])
			continue;			/* cannot happen: a centre allocates itself */
		best = cur;
		for (int32_t t = first[c]; t < first[c + 1]; t++)
			if (sums[t] < sums[best] ||
				(sums[t] == sums[best] && best != cur && members[t] < members[best]))
				best = t;
		if (best != cur)
		{
			pb->cen[c] = members[best];
			moved++;
		}
	}
	return moved;
}

/*
 * Subgradient step on the multipliers: lambda_c += theta (load_c - Q),
 * kept non-negative, theta scaled so that a cluster overloaded by Q costs
 * an entity of mean demand penalty_step times the mean distance more
 */
static void
update_penalties(const PmFit *f, PmProblem *pb, const double *load, int it)
{
	double		mean_dist = 0.0,
				mean_demand = 0.0,
				theta;

	for (int32_t e = 0; e < pb->nent; e++)
	{
		mean_dist += pb->dist[e];
		mean_demand += f->demand[pb->ent[e]];
	}
	mean_dist /= pb->nent;
	mean_demand /= pb->nent;
	if (mean_demand <= 0.0 || mean_dist <= 0.0)
		return;
	theta = f->params->penalty_step * mean_dist / (pb->capacity * mean_demand * sqrt((double) it));
	for (int32_t c = 0; c < pb->ncen; c++)
	{
		double		lambda = pb->penalty[c] + theta * (load[c] - pb->capacity);

		pb->penalty[c] = lambda > 0.0 ? lambda : 0.0;
	}
}

/*
 * The objective and the capacity violation of the current allocation
 */
static void
score_problem(const PmFit *f, PmProblem *pb, double *load)
{
	pb->objective = gc_pm_objective(pb);
	pb->violation = 0.0;
	for (int32_t c = 0; c < pb->ncen; c++)
		load[c] = 0.0;
	for (int32_t e = 0; e < pb->nent; e++)
		load[pb->alloc[e]] += f->demand ? f->demand[pb->ent[e]] : 1.0;
	if (pb->capacity > 0.0)
		for (int32_t c = 0; c < pb->ncen; c++)
			if (load[c] > pb->capacity)
				pb->violation += load[c] - pb->capacity;
}

static GcStatus
allocate(PmFit *f, PmProblem *pb)
{
	return f->backend->allocate(f->session, pb->ncen, pb->cen, pb->cen_first,
								pb->ngroups, pb->capacity > 0.0 ? pb->penalty : NULL,
								pb->alloc, pb->dist, f->err);
}

/*
 * Location-allocation (Algorithm 7) for at most max_iter iterations; an
 * uncapacitated run stops once no centre moves.  On return alloc and dist
 * describe the final centres.
 */
static GcStatus
location_allocation(PmFit *f, PmProblem *pb, int max_iter)
{
	bool		failed = false;
	int32_t    *members = gc_pm_alloc_array(pb->nent, sizeof(int32_t), &failed);
	int32_t    *first = gc_pm_alloc_array(pb->ncen + 1, sizeof(int32_t), &failed);
	double	   *sums = gc_pm_alloc_array(pb->nent, sizeof(double), &failed);
	double	   *load = gc_pm_alloc_array(pb->ncen, sizeof(double), &failed);
	GcStatus	status = GC_OK;
	int			it;

	pb->converged = false;
	if (failed)
		status = gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for location-allocation");
	if (status == GC_OK)
		status = f->backend->set_entities(f->session, pb->nent, pb->ent, pb->group, f->err);
	for (it = 1; status == GC_OK && it <= max_iter; it++)
	{
		int32_t		moved;

		if ((status = allocate(f, pb)) != GC_OK)
			break;
		build_clusters(f, pb, members, first, load);
		status = f->backend->cluster_sums(f->session, pb->ncen, members, first,
										  sums, f->err);
		if (status != GC_OK)
			break;
		moved = relocate_centres(pb, members, first, sums);
		pb->iterations++;
		f->iterations++;
		gc_pm_report(f, GC_PHASE_ITERATING, pb);
		if (moved == 0 && pb->capacity <= 0.0)
		{
			pb->converged = true;
			break;
		}
		if (pb->capacity > 0.0)
			update_penalties(f, pb, load, it);
		if (gc_pm_interrupted(f))
			status = gc_fail(f->err, GC_INTERRUPTED, "interrupted in iteration %d", it);
	}
	if (status == GC_OK && !pb->converged)
		status = allocate(f, pb);
	if (status == GC_OK)
		score_problem(f, pb, load);
	free(members);
	free(first);
	free(sums);
	free(load);
	return status;
}

/*
 * Choose k centres among the current entities (already set on the
 * backend) by the D-sampling race; when every remaining weight is zero
 * (duplicates), the first entity not yet chosen
 */
static GcStatus
seed_centres(PmFit *f, const int32_t *ent, int32_t nent, int k, uint64_t seed,
			 int32_t *cen)
{
	bool		failed = false;
	bool	   *taken = gc_pm_alloc_array(nent, sizeof(bool), &failed);
	int32_t		centre = -1,
				next_free = 0;
	GcStatus	status = GC_OK;

	if (failed)
		return gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	memset(taken, 0, sizeof(bool) * nent);
	for (int t = 0; t < k && status == GC_OK; t++)
	{
		uint64_t	winner;
		int32_t		e;

		status = f->backend->seed_step(f->session, centre, seed, t, &winner, f->err);
		if (status != GC_OK)
			break;
		e = (int32_t) (uint32_t) winner;
		if (winner == GC_RACE_NONE || (winner >> 32) == 0x7f800000u || taken[e])
		{
			while (taken[next_free])
				next_free++;
			e = next_free;
		}
		taken[e] = true;
		cen[t] = centre = ent[e];
		if (gc_pm_interrupted(f))
			status = gc_fail(f->err, GC_INTERRUPTED, "interrupted during seeding");
	}
	free(taken);
	return status;
}

/*
 * Split p into parts proportional to weight[k] (largest remainders), each
 * at least 1 and at most size[k]; sum(size) >= p >= nparts is required
 */
static void
apportion(int p, int nparts, const double *weight, const int32_t *size,
		  int32_t *part)
{
	double		total = 0.0;
	int64_t		sum = 0;

	for (int k = 0; k < nparts; k++)
		total += weight[k];
	for (int k = 0; k < nparts; k++)
	{
		double		quota = total > 0.0 ? p * weight[k] / total : (double) p / nparts;
		int64_t		v = (int64_t) floor(quota);

		part[k] = (int32_t) (v < 1 ? 1 : (v > size[k] ? size[k] : v));
		sum += part[k];
	}
	while (sum != p)
	{
		int			best = -1;
		double		best_gap = 0.0;

		for (int k = 0; k < nparts; k++)
		{
			double		quota = total > 0.0 ? p * weight[k] / total : (double) p / nparts;
			double		gap = quota - part[k];

			if (sum < p ? (part[k] < size[k] && (best < 0 || gap > best_gap))
				: (part[k] > 1 && (best < 0 || gap < best_gap)))
			{
				best = k;
				best_gap = gap;
			}
		}
		part[best] += sum < p ? 1 : -1;
		sum += sum < p ? 1 : -1;
	}
}

typedef struct DrawnRow
{
	double		draw;
	int32_t		row;
} DrawnRow;

static int
drawn_row_cmp(const void *a, const void *b)
{
	const DrawnRow *x = a,
			   *y = b;

	if (x->draw != y->draw)
		return x->draw < y->draw ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

int
gc_pm_int32_cmp(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * A problem over every row, one group, with the given centres
 */
static GcStatus
whole_problem(PmFit *f, PmProblem *pb, int32_t ncen, double capacity)
{
	if (gc_pm_problem_init(pb, 1, (int32_t) f->n, ncen, f->err) != GC_OK)
		return f->err->status;
	for (int32_t i = 0; i < (int32_t) f->n; i++)
		pb->ent[i] = i;
	pb->capacity = capacity;
	return GC_OK;
}

/*
 * Rows of the sample of three_phase (and of the sampled seeding): the
 * sample_factor sqrt(n), at most n, at least k
 */
static int32_t
sample_size(const PmFit *f, int k)
{
	double		s = ceil(f->params->sample_factor * sqrt((double) f->n));

	if (s > (double) f->n)
		s = (double) f->n;
	return s < k ? k : (int32_t) s;
}

/* Centres of three_phase's sample phase: big_clusters, or sqrt(n), at most p */
static int
big_count(const PmFit *f)
{
	int			nbig = f->params->big_clusters > 0 ? f->params->big_clusters
		: (int) floor(sqrt((double) f->n) + 0.5);

	return nbig > f->params->p ? f->params->p : nbig;
}

/*
 * Which swap improvement runs.  Asked for explicitly, as asked; by default
 * (uncapacitated, p <= GC_PM_MAX_IMPROVE_P only) over all rows when n and
 * n p are small enough for its O(n^2) passes, else over the sample, whose
 * swap-local optimum then seeds the rest, when the sample is small enough
 */
static GcPmImprove
resolve_improvement(const PmFit *f, GcPmMethod method)
{
	const GcPmParams *params = f->params;
	int			k = method == GC_PM_THREE_PHASE ? big_count(f) : params->p;
	int64_t		s = sample_size(f, k);

	if (params->improve != GC_PM_IMPROVE_AUTO)
		return params->improve;
	if (params->capacitated || params->p > GC_PM_MAX_IMPROVE_P)
		return GC_PM_IMPROVE_NONE;
	if (f->n <= GC_PM_IMPROVE_ROWS && f->n * params->p <= GC_PM_IMPROVE_WORK)
		return GC_PM_IMPROVE_FULL;
	if (k < s && s * k <= GC_PM_IMPROVE_WORK)
		return GC_PM_IMPROVE_SAMPLE;
	return GC_PM_IMPROVE_NONE;
}

/*
 * Whether the sample's solution is swap-improved: for the sampled
 * improvement, and before a full one (it saves swaps over all rows), when
 * the sample allows it
 */
static bool
improves_sample(const PmFit *f, int k)
{
	int64_t		s = sample_size(f, k);

	return f->improvement != GC_PM_IMPROVE_NONE && !f->params->capacitated &&
		k <= GC_PM_MAX_IMPROVE_P && k < s && s * k <= GC_PM_IMPROVE_WORK;
}

/*
 * Sample phase: location-allocation of nbig centres over a random sample,
 * with the sample's demand shared evenly as capacity; swap-improved when
 * the improvement rule says so
 */
static GcStatus
sample_phase(PmFit *f, int nbig, PmProblem *sample, GcPmResult *result)
{
	const GcPmParams *params = f->params;
	int32_t		s = sample_size(f, nbig);
	int64_t    *chosen;
	GcStatus	status;

	if (gc_pm_problem_init(sample, 1, s, nbig, f->err) != GC_OK)
		return f->err->status;
	chosen = malloc(sizeof(int64_t) * s);
	if (chosen == NULL)
		return gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for the sample");
	if (gc_select_random_rows(f->rows, s, params->seed, chosen, params->interrupted,
							  f->err) != GC_OK)
	{
		free(chosen);
		return f->err->status;
	}
	for (int32_t e = 0; e < s; e++)
		sample->ent[e] = (int32_t) chosen[e];
	free(chosen);
	qsort(sample->ent, s, sizeof(int32_t), gc_pm_int32_cmp);
	if (params->capacitated)
	{
		double		total = 0.0;

		for (int32_t e = 0; e < s; e++)
			total += f->demand[sample->ent[e]];
		sample->capacity = total / nbig;
	}
	status = f->backend->set_entities(f->session, s, sample->ent, sample->group, f->err);
	if (status == GC_OK)
		status = seed_centres(f, sample->ent, s, nbig, params->seed, sample->cen);
	if (status == GC_OK)
		status = location_allocation(f, sample, params->max_iter);
	if (status == GC_OK && improves_sample(f, nbig))
	{
		double		t0 = gc_now_ms();

		status = gc_pm_improve_sample(f, sample, result);
		result->timings.improve_ms += gc_now_ms() - t0;
	}
	return status;
}

/*
 * Small phase: each big cluster k of the global allocation gets p_k
 * centres (in proportion to its demand, or its size), first drawn at
 * random among its members; all sub-problems are solved together
 */
static GcStatus
small_phase(PmFit *f, const PmProblem *global, PmProblem *small)
{
	int			nbig = global->ncen,
				p = f->params->p;
	bool		failed = false;
	int32_t    *size = gc_pm_alloc_array(nbig, sizeof(int32_t), &failed);
	int32_t    *part = gc_pm_alloc_array(nbig, sizeof(int32_t), &failed);
	double	   *weight = gc_pm_alloc_array(nbig, sizeof(double), &failed);
	int32_t    *first = gc_pm_alloc_array(nbig + 1, sizeof(int32_t), &failed);
	DrawnRow   *drawn = gc_pm_alloc_array(f->n, sizeof(DrawnRow), &failed);
	GcStatus	status = GC_OK;

	if (failed || gc_pm_problem_init(small, nbig, (int32_t) f->n, p, f->err) != GC_OK)
	{
		status = gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for the small phase");
		goto done;
	}
	build_clusters(f, global, small->ent, first, weight);
	for (int k = 0; k < nbig; k++)
	{
		size[k] = first[k + 1] - first[k];
		if (!f->params->capacitated)
			weight[k] = size[k];
	}
	apportion(p, nbig, weight, size, part);
	for (int k = 0; k < nbig; k++)
	{
		small->cen_first[k + 1] = small->cen_first[k] + part[k];
		for (int32_t t = first[k]; t < first[k + 1]; t++)
		{
			small->group[t] = k;
			drawn[t].row = small->ent[t];
			drawn[t].draw = gc_unit_draw(gc_rows_hash(f->rows, small->ent[t]),
										 f->params->seed, 1);
		}
		qsort(drawn + first[k], size[k], sizeof(DrawnRow), drawn_row_cmp);
		for (int32_t c = 0; c < part[k]; c++)
			small->cen[small->cen_first[k] + c] = drawn[first[k] + c].row;
	}
	small->capacity = f->params->capacitated ? f->params->capacity : 0.0;
	status = location_allocation(f, small, f->params->max_iter);
done:
	free(size);
	free(part);
	free(weight);
	free(first);
	free(drawn);
	return status;
}

/*
 * Without a polish, the small phase's own allocation (its groups' entities
 * are all the rows) becomes the final one
 */
static GcStatus
adopt_allocation(const PmFit *f, PmProblem *final, const PmProblem *small)
{
	double	   *load = malloc(sizeof(double) * final->ncen);

	if (load == NULL)
		return gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for the allocation");
	for (int32_t e = 0; e < small->nent; e++)
	{
		final->alloc[small->ent[e]] = small->alloc[e];
		final->dist[small->ent[e]] = small->dist[e];
	}
	final->converged = small->converged;
	score_problem(f, final, load);
	free(load);
	return GC_OK;
}

/*
 * The three phases, then a location-allocation polish over all rows
 * starting from the small phase's centres and multipliers
 */
static GcStatus
three_phase(PmFit *f, PmProblem *final, GcPmResult *result)
{
	const GcPmParams *params = f->params;
	int			nbig = big_count(f);
	PmProblem	sample = {0},
				global = {0},
				small = {0};
	GcStatus	status;
	double		t0 = gc_now_ms();

	status = sample_phase(f, nbig, &sample, result);
	result->timings.sample_ms = gc_now_ms() - t0 - result->timings.improve_ms;

	t0 = gc_now_ms();
	if (status == GC_OK)
		status = whole_problem(f, &global, nbig, 0.0);
	if (status == GC_OK)
	{
		memcpy(global.cen, sample.cen, sizeof(int32_t) * nbig);
		status = f->backend->set_entities(f->session, global.nent, global.ent,
										  global.group, f->err);
	}
	if (status == GC_OK)
		status = allocate(f, &global);
	result->timings.global_ms = gc_now_ms() - t0;

	t0 = gc_now_ms();
	if (status == GC_OK)
		status = small_phase(f, &global, &small);
	result->timings.small_ms = gc_now_ms() - t0;

	t0 = gc_now_ms();
	if (status == GC_OK)
		status = whole_problem(f, final, params->p,
							   params->capacitated ? params->capacity : 0.0);
	if (status == GC_OK)
	{
		memcpy(final->cen, small.cen, sizeof(int32_t) * params->p);
		memcpy(final->penalty, small.penalty, sizeof(double) * params->p);
		final->iterations = sample.iterations + small.iterations;
		if (params->polish_iter > 0)
			status = location_allocation(f, final, params->polish_iter);
		else
			status = adopt_allocation(f, final, &small);
	}
	result->timings.location_ms = gc_now_ms() - t0;
	gc_pm_problem_release(&sample);
	gc_pm_problem_release(&global);
	gc_pm_problem_release(&small);
	return status;
}

/*
 * Plain location-allocation over all rows from D-sampled centres, or,
 * with the sampled improvement, from the swap-improved solution of a
 * sample (the sample phase of three_phase with p centres)
 */
static GcStatus
plain_location_allocation(PmFit *f, PmProblem *pb, GcPmResult *result)
{
	const GcPmParams *params = f->params;
	GcStatus	status;
	double		t0 = gc_now_ms();

	status = whole_problem(f, pb, params->p,
						   params->capacitated ? params->capacity : 0.0);
	if (status == GC_OK && f->improvement == GC_PM_IMPROVE_SAMPLE)
	{
		PmProblem	sample = {0};

		status = sample_phase(f, params->p, &sample, result);
		if (status == GC_OK)
		{
			memcpy(pb->cen, sample.cen, sizeof(int32_t) * params->p);
			pb->iterations = sample.iterations;
		}
		gc_pm_problem_release(&sample);
		result->timings.sample_ms = gc_now_ms() - t0 - result->timings.improve_ms;
	}
	else
	{
		if (status == GC_OK)
			status = f->backend->set_entities(f->session, pb->nent, pb->ent, pb->group, f->err);
		if (status == GC_OK)
			status = seed_centres(f, pb->ent, pb->nent, params->p, params->seed, pb->cen);
		result->timings.seeding_ms = gc_now_ms() - t0;
	}
	t0 = gc_now_ms();
	if (status == GC_OK)
		status = location_allocation(f, pb, params->max_iter);
	result->timings.location_ms = gc_now_ms() - t0;
	return status;
}

/*
 * Hard capacities: the repair of pmedian_repair.c on the final allocation,
 * then its objective and violation
 */
static GcStatus
repair_capacity(PmFit *f, PmProblem *pb, GcPmResult *result)
{
	double		before = pb->objective;
	double	   *load = malloc(sizeof(double) * pb->ncen);
	GcStatus	status;

	if (load == NULL)
		return gc_fail(f->err, GC_ERR_HOST_MEMORY, "out of memory for the capacity repair");
	status = gc_pmedian_repair(f->rows, f->demand, f->params->metric, pb->capacity,
							   pb->ncen, pb->cen, pb->alloc, pb->dist,
							   f->params->interrupted, &result->repair_moves, f->err);
	if (status == GC_OK)
	{
		score_problem(f, pb, load);
		result->repair_cost = pb->objective - before;
	}
	free(load);
	return status;
}

/*
 * Copy the final problem's state into the result
 */
static void
fill_result(const PmFit *f, const PmProblem *pb, GcPmResult *result)
{
	memcpy(result->medoids, pb->cen, sizeof(int32_t) * f->params->p);
	memcpy(result->penalties, pb->penalty, sizeof(double) * f->params->p);
	if (result->alloc)
		memcpy(result->alloc, pb->alloc, sizeof(int32_t) * f->n);
	if (result->dist)
		memcpy(result->dist, pb->dist, sizeof(double) * f->n);
	result->objective = pb->objective;
	result->violation = pb->violation;
	result->iterations = pb->iterations;
	result->converged = pb->converged;
}

/*
 * Solve the p-median problem over rows on backend; 1 <= p <= n and, when
 * capacitated, non-negative demands are the caller's to check
 */
GcStatus
gc_pmedian_fit(const GcPmBackend *backend, const GcRows *rows,
			   const double *demand, const GcPmParams *params,
			   GcPmResult *result, GcError *err)
{
	PmFit		f = {.backend = backend, .params = params, .rows = rows,
		.demand = params->capacitated ? demand : NULL, .n = rows->n, .err = err};
	PmProblem	pb = {0};
	GcStatus	status;
	double		t0 = gc_now_ms();

	memset(&result->timings, 0, sizeof(result->timings));
	result->swaps = 0;
	result->repair_cost = 0.0;
	result->repair_moves = 0;
	result->method = params->method;
	/*
	 * auto: three phases for large n, and for hard capacities, whose repair
	 * needs medoids placed in proportion to the demand (the small phase)
	 */
	if (result->method == GC_PM_AUTO)
		result->method = rows->n >= params->auto_threshold ||
			(params->capacitated && params->hard_capacity) ? GC_PM_THREE_PHASE
			: GC_PM_LOCATION_ALLOCATION;
	if (params->improve == GC_PM_IMPROVE_FULL &&
		(params->capacitated || params->p > GC_PM_MAX_IMPROVE_P))
		return gc_fail(err, GC_ERR_RANGE, "the swap improvement needs an uncapacitated problem with p at most %d",
					   GC_PM_MAX_IMPROVE_P);
	if (params->improve == GC_PM_IMPROVE_SAMPLE)
		return gc_fail(err, GC_ERR_RANGE, "the sampled swap improvement is chosen by the default rule only");
	if (params->capacitated && params->hard_capacity)
	{
		double		total = 0.0;

		for (int64_t i = 0; i < rows->n; i++)
			total += demand[i];
		if (total > params->capacity * params->p)
			return gc_fail(err, GC_ERR_RANGE, "total demand %g exceeds the total capacity %g of %d medoids",
						   total, params->capacity * params->p, params->p);
	}
	f.improvement = result->improvement = resolve_improvement(&f, result->method);

	gc_pm_report(&f, GC_PHASE_UPLOADING, NULL);
	status = backend->open(rows, f.demand, params, &f.session, err);
	result->timings.transfer_ms = gc_now_ms() - t0;
	gc_pm_report(&f, GC_PHASE_SEEDING, NULL);
	if (status == GC_OK)
		status = result->method == GC_PM_THREE_PHASE ? three_phase(&f, &pb, result)
			: plain_location_allocation(&f, &pb, result);
	if (status == GC_OK && f.improvement == GC_PM_IMPROVE_FULL)
	{
		t0 = gc_now_ms();
		status = gc_pm_improve(&f, &pb, result);
		result->timings.improve_ms += gc_now_ms() - t0;
	}
	if (status == GC_OK && params->capacitated && params->hard_capacity)
	{
		t0 = gc_now_ms();
		status = repair_capacity(&f, &pb, result);
		result->timings.repair_ms = gc_now_ms() - t0;
	}
	if (status == GC_OK)
		fill_result(&f, &pb, result);
	if (f.session)
		backend->close(f.session);
	gc_pm_problem_release(&pb);
	return status;
}
