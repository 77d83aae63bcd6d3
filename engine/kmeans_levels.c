/*-------------------------------------------------------------------------
 *
 * kmeans_levels.c
 *	  Two-level k-means for large k: a coarse fit of about sqrt(k)
 *	  clusters over every row, then each coarse cluster's rows fitted
 *	  alone into its share of the k fine clusters (in proportion to its
 *	  rows), then refine_iter Lloyd iterations over all fine centroids
 *	  and every row.  A flat fit of k labels n rows against k centroids
 *	  each iteration; the split labels them against about sqrt(k), and the
 *	  share of a cluster, so an iteration costs about n (sqrt(k) + k / kc)
 *	  distances instead of n k.  Each fit is a one-level fit on the same
 *	  backend (the GPU's, where the fit runs there); the fine clusters
 *	  keep their coarse cluster as their parent, the shape an IVF index
 *	  builder takes (its lists, grouped by a coarse quantiser).
 *
 * Deterministic: the coarse fit and each fine fit are seeded as a fit
 * of params is (the rows' hashes and the seed), the coarse clusters'
 * rows keep their order, and the fine centroids come out grouped by
 * parent, in the coarse clusters' order.
 *
 * IDENTIFICATION
 *	  engine/kmeans_levels.c
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_stages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int
gc_kmeans_coarse_k(int k)
{
	int			kc = (int) lround(sqrt((double) k));

	return kc < 1 ? 1 : kc > k ? k : kc;
}

void
gc_kmeans_fine_shares(const int64_t *sizes, int kc, int k, int *shares)
{
	int64_t		n = 0;
	int			total = 0;

	for (int j = 0; j < kc; j++)
		n += sizes[j];
	for (int j = 0; j < kc; j++)
	{
		int64_t		s = (int64_t) ((double) k * sizes[j] / n);

		if (sizes[j] > 0 && s < 1)
			s = 1;
		shares[j] = (int) (s < sizes[j] ? s : sizes[j]);
		total += shares[j];
	}

	/*
	 * Settle the remainder one at a time: the cluster furthest below its
	 * exact share (with room) gains, or the one furthest above (keeping
	 * one) gives; the lowest index on ties
	 */
	while (total != k)
	{
		int			pick = -1;
		double		pick_gap = 0.0;

		for (int j = 0; j < kc; j++)
		{
			double		gap = (double) k * sizes[j] / n - shares[j];

			if (total < k ? shares[j] >= sizes[j] : shares[j] <= 1)
				continue;
			if (pick < 0 || (total < k ? gap > pick_gap : gap < pick_gap))
			{
				pick = j;
				pick_gap = gap;
			}
		}
		if (pick < 0)
			break;				/* cannot happen while n >= k >= kc */
		shares[pick] += total < k ? 1 : -1;
		total += total < k ? 1 : -1;
	}
}

/* Add a fit's timings to the sums */
static void
add_timings(GcKmeansTimings *sum, const GcKmeansTimings *t)
{
	sum->transfer_ms += t->transfer_ms;
	sum->seeding_ms += t->seeding_ms;
	sum->seeding.rounds_ms += t->seeding.rounds_ms;
	sum->seeding.weights_ms += t->seeding.weights_ms;
	sum->seeding.recluster_ms += t->seeding.recluster_ms;
	sum->check_ms += t->check_ms;
	sum->iterations_ms += t->iterations_ms;
	sum->labeling_ms += t->labeling_ms;
	sum->update_ms += t->update_ms;
	sum->steps_ms += t->steps_ms;
	sum->scoring_ms += t->scoring_ms;
}

/*
 * Fit each coarse cluster's rows into its share of fine centroids,
 * written from fine[first[j] d] on, with their sizes
 */
static GcStatus
split_clusters(const GcKmeansBackend *backend, const GcRows *rows,
			   const GcKmeansParams *params, const int32_t *coarse_labels, int kc,
			   const int *shares, double *fine, int64_t *fine_sizes,
			   GcKmeansResult *result, GcError *err)
{
	int64_t    *start = calloc(kc + 1, sizeof(int64_t));
	int64_t    *list = malloc(sizeof(int64_t) * rows->n);
	GcStatus	status = GC_OK;
	int			first = 0;

	if (start == NULL || list == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the fine fits");
	/* every coarse cluster's rows, in row order: a counting sort */
	for (int64_t i = 0; status == GC_OK && i < rows->n; i++)
		start[coarse_labels[i] + 1]++;
	for (int j = 0; status == GC_OK && j < kc; j++)
		start[j + 1] += start[j];
	for (int64_t i = 0; status == GC_OK && i < rows->n; i++)
		list[start[coarse_labels[i]]++] = i;
	for (int j = kc; status == GC_OK && j > 0; j--)
		start[j] = start[j - 1];
	if (start != NULL)
		start[0] = 0;

	for (int j = 0; status == GC_OK && j < kc; j++)
	{
		GcKmeansParams p = *params;
		GcKmeansResult r = {0};
		GcRows		sub = {0};

		if (shares[j] == 0)
			continue;
		p.k = shares[j];
		r.centroids = fine + (size_t) first * rows->d;
		r.sizes = fine_sizes + first;
		status = gc_rows_gather(rows, list + start[j], start[j + 1] - start[j], &sub, err);
		if (status == GC_OK)
			status = gc_kmeans_fit_flat(backend, &sub, &p, &r, err);
		gc_rows_release(&sub);
		add_timings(&result->timings, &r.timings);
		result->pruned |= r.pruned;
		for (int c = 0; result->parents != NULL && c < shares[j]; c++)
			result->parents[first + c] = j;
		first += shares[j];
	}
	free(start);
	free(list);
	return status;
}

GcStatus
gc_kmeans_fit_two_level(const GcKmeansBackend *backend, GcRows *rows,
						const GcKmeansParams *params, GcKmeansResult *result,
						GcError *err)
{
	int			k = params->k,
				d = rows->d,
				kc = gc_kmeans_coarse_k(k);
	GcKmeansParams p = *params;
	GcKmeansResult coarse = {0},
				refined = *result;
	GcKmeansTimings sum = {0};
	int		   *shares = malloc(sizeof(int) * kc);
	double	   *fine = malloc(sizeof(double) * k * d);
	GcStatus	status = GC_OK;
	double		t0 = gc_now_ms();

	coarse.centroids = malloc(sizeof(double) * kc * d);
	coarse.sizes = malloc(sizeof(int64_t) * kc);
	coarse.labels = malloc(sizeof(int32_t) * rows->n);
	if (shares == NULL || fine == NULL || coarse.centroids == NULL ||
		coarse.sizes == NULL || coarse.labels == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a two-level fit");

	/* the coarse fit */
	p.levels = 1;
	p.k = kc;
	if (status == GC_OK)
		status = gc_kmeans_fit_flat(backend, rows, &p, &coarse, err);
	add_timings(&sum, &coarse.timings);
	sum.coarse_ms = gc_now_ms() - t0;

	/* each coarse cluster split into its share */
	t0 = gc_now_ms();
	result->timings = sum;
	result->pruned = coarse.pruned;
	if (status == GC_OK)
	{
		gc_kmeans_fine_shares(coarse.sizes, kc, k, shares);
		status = split_clusters(backend, rows, params, coarse.labels, kc, shares,
								fine, result->sizes, result, err);
	}
	sum = result->timings;
	sum.split_ms = gc_now_ms() - t0;

	/*
	 * Lloyd's over every fine centroid: refine_iter iterations, or none,
	 * which still scores them (sizes, inertia, labels)
	 */
	t0 = gc_now_ms();
	p = *params;
	p.levels = 1;
	p.init = GC_INIT_GIVEN;
	p.init_centroids = fine;
	p.n_init = 1;
	p.max_iter = params->refine_iter;
	if (status == GC_OK)
		status = gc_kmeans_fit_flat(backend, rows, &p, &refined, err);
	add_timings(&sum, &refined.timings);
	sum.refine_ms = gc_now_ms() - t0;
	if (status == GC_OK)
	{
		refined.pruned |= result->pruned;
		refined.init = coarse.init;
		refined.check = coarse.check;
		refined.timings = sum;
		refined.coarse_k = kc;
		*result = refined;
	}
	free(shares);
	free(fine);
	free(coarse.centroids);
	free(coarse.sizes);
	free(coarse.labels);
	return status;
}
