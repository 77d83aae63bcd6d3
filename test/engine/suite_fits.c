/*-------------------------------------------------------------------------
 *
 * suite_fits.c
 *	  k-means fits, CPU against GPU: blobs over many shapes (labels equal,
 *	  centroids to the bit, known centres recovered, row order irrelevant),
 *	  weighted rows, rows gathered from partial stores, progress reports,
 *	  the tolerance's variance, restarts' labels, and rows wider than
 *	  float32 holds.
 *
 * IDENTIFICATION
 *	  test/engine/suite_fits.c
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"
#include "gc_math.h"
#include "gc_stream.h"
#include "engine_suites.h"
#include "kmeans_hybrid.h"
#ifdef GC_WITH_CUDA
#include <cuda_runtime_api.h>

#include "gc_cuda.h"
#endif

void
run_case(int64_t n, int d, int k)
{
	char		config[64];
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	int64_t    *reversed = malloc(sizeof(int64_t) * n);
	GcRows		rows,
				rows_rev;
	Fit			cpu,
				cpu_rev;

	snprintf(config, sizeof(config), "n=%lld d=%d k=%d", (long long) n, d, k);
	rng_state = (uint64_t) n * 31 + d * 7 + k;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n; i++)
		reversed[i] = n - 1 - i;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&rows_rev, x, n, d, reversed, plain_alloc, free);

	cpu = fit(&gc_kmeans_cpu_backend, &rows, k, 7);
	check(cpu.status == GC_OK, "cpu fit", config);
	check(cpu.result.converged, "cpu converged", config);
	if (k <= 64)				/* k-means++ finds every blob when they are few */
		check(recovers(truth, cpu.labels, n, k), "cpu recovers the blobs", config);

	cpu_rev = fit(&gc_kmeans_cpu_backend, &rows_rev, k, 7);
	check(memcmp(cpu.centroids, cpu_rev.centroids, sizeof(double) * k * d) == 0,
		  "row order does not change the centroids", config);
	free_fit(&cpu_rev);
	{
		Fit			pruned = fit_with(&gc_kmeans_cpu_backend, &rows, k, 7,
									  GC_ALGORITHM_PRUNED, GC_PRECISION_FLOAT32, 300, 1e-4);

		check_same_fit(&cpu, &pruned, n, k, d, "cpu pruned", config);
		free_fit(&pruned);
	}

#ifdef GC_WITH_CUDA
	{
		static const struct
		{
			GcAlgorithm algorithm;
			GcPrecision precision;
			const char *name;
		}			variants[] = {
			{GC_ALGORITHM_AUTO, GC_PRECISION_FLOAT32, "gpu auto"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, "gpu lloyd"},
			{GC_ALGORITHM_PRUNED, GC_PRECISION_FLOAT32, "gpu pruned"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT64, "gpu float64"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_TF32, "gpu tf32"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, "gpu bf16"},
			{GC_ALGORITHM_LLOYD, GC_PRECISION_FP16, "gpu fp16"},
		};
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;

			load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++)
			{
				Fit			gpu = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 7,
										   variants[v].algorithm, variants[v].precision,
										   300, 1e-4);

				if (gc_precision_is_reduced(variants[v].precision))
				{
					/*
					 * TF32, fp16 and bf16 round inputs to 10, 10 and 7 bits:
					 * close, not identical; bf16 is for spread-out data such
					 * as embeddings, and on 1000 tight clusters in 4-d its
					 * inertia is off by more (or its check falls back)
					 */
					double		tolerance = variants[v].precision == GC_PRECISION_BF16 ? 0.05 : 0.01;
					int64_t		mismatched = 0;

					for (int64_t i = 0; i < n; i++)
						mismatched += gpu.labels[i] != cpu.labels[i];
					char		what[96];

					snprintf(what, sizeof(what), "%s: the precision that ran is reported",
							 variants[v].name);
					check(gpu.result.precision == (gpu.result.check.outcome == GC_CHECK_FELL_BACK ?
												   GC_PRECISION_FLOAT32 : variants[v].precision) &&
						  gpu.result.check.outcome != GC_CHECK_NONE, what, config);
					snprintf(what, sizeof(what), "%s: at most 2%% of labels differ (%lld do)",
							 variants[v].name, (long long) mismatched);
					check(gpu.status == GC_OK && mismatched <= n / 50, what, config);
					snprintf(what, sizeof(what), "%s: inertia within %g%%", variants[v].name,
							 100 * tolerance);
					check(fabs(gpu.result.inertia - cpu.result.inertia) <= tolerance * cpu.result.inertia,
						  what, config);
				}
				else
					check_same_fit(&cpu, &gpu, n, k, d, variants[v].name, config);
				free_fit(&gpu);
			}
			gc_rows_release(&pinned);
		}
	}
#endif
	free_fit(&cpu);
	gc_rows_release(&rows);
	gc_rows_release(&rows_rev);
	free(x);
	free(centres);
	free(truth);
	free(reversed);
}

/*
 * Weighted rows: integer weights must give the fit of the rows repeated
 * that many times, to the bit (from the same initial centroids, and from
 * k-means++, whose race weighs rows the same way); the CUDA backend must
 * give the CPU's fit to the bit; weights that are not whole numbers are
 * refused
 */
void
run_weighted_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 3.0, centres, NULL);
	GcRows		weighted,
				repeated;
	GcError		err = {0};
	GcKmeansParams params = {0};
	GcKmeansResult a = {0},
				b = {0};
	double	   *ca = malloc(sizeof(double) * k * d),
			   *cb = malloc(sizeof(double) * k * d);
	int64_t    *sa = malloc(sizeof(int64_t) * k),
			   *sb = malloc(sizeof(int64_t) * k);
	double		maxdiff = 0.0;
	char		config[64];

	snprintf(config, sizeof(config), "weighted n=%lld d=%d k=%d", (long long) n, d, k);
	gc_rows_init(&weighted, d, plain_alloc, free, &err);
	gc_rows_set_weighted(&weighted);
	gc_rows_init(&repeated, d, plain_alloc, free, &err);
	for (int64_t i = 0; i < n; i++)
	{
		int			w = 1 + (int) (i % 4);

		memcpy(gc_rows_reserve(&weighted, &err), x + i * d, sizeof(double) * d);
		gc_rows_commit_weighted(&weighted, (double) w);
		for (int r = 0; r < w; r++)
		{
			memcpy(gc_rows_reserve(&repeated, &err), x + i * d, sizeof(double) * d);
			gc_rows_commit(&repeated);
		}
	}
	check(gc_rows_weight(&weighted, 5) == 2.0, "gc_rows_weight reads the weight", config);
	check(gc_rows_weight(&repeated, 5) == 1.0, "unweighted rows weigh 1", config);

	params.k = k;
	params.max_iter = 300;
	params.tol = 0.0;
	params.init = GC_INIT_GIVEN;
	params.init_centroids = x;	/* the first k rows */
	params.n_init = 1;
	params.algorithm = GC_ALGORITHM_LLOYD;
	a.centroids = ca;
	a.sizes = sa;
	b.centroids = cb;
	b.sizes = sb;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &weighted, &params, &a, &err) == GC_OK,
		  "weighted fit succeeds", config);
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &repeated, &params, &b, &err) == GC_OK,
		  "repeated fit succeeds", config);
	for (int i = 0; i < k * d; i++)
		maxdiff = fmax(maxdiff, fabs(ca[i] - cb[i]));
	check(maxdiff == 0.0, "weighted centroids equal repeated rows' centroids to the bit", config);
	check(a.inertia == b.inertia, "weighted inertia equals repeated rows' inertia", config);
	check(memcmp(sa, sb, sizeof(int64_t) * k) != 0,
		  "sizes count rows, not weights (repeated rows are more)", config);

	/* k-means++ with weights runs and finds a sensible solution */
	params.init = GC_INIT_KMEANSPP;
	params.n_init = 3;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &weighted, &params, &a, &err) == GC_OK &&
		  a.inertia <= 1.5 * b.inertia, "weighted k-means++ fit is close", config);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			static const GcAlgorithm algorithms[] = {GC_ALGORITHM_AUTO, GC_ALGORITHM_PRUNED};

			for (int v = 0; v < 2; v++)
			{
				GcKmeansResult g = {0};
				double	   *cg = malloc(sizeof(double) * k * d);
				int64_t    *sg = malloc(sizeof(int64_t) * k);
				char		what[96];

				params.algorithm = algorithms[v];
				g.centroids = cg;
				g.sizes = sg;
				snprintf(what, sizeof(what), "gpu weighted k-means++ (%s) equals the cpu's",
						 v == 0 ? "auto" : "pruned");
				check(gc_kmeans_fit(&gc_kmeans_cuda_backend, &weighted, &params, &g, &err) == GC_OK &&
					  memcmp(ca, cg, sizeof(double) * k * d) == 0 &&
					  memcmp(sa, sg, sizeof(int64_t) * k) == 0 &&
					  g.inertia == a.inertia && g.iterations == a.iterations, what, config);
				free(cg);
				free(sg);
			}
			params.algorithm = GC_ALGORITHM_LLOYD;
		}
	}
#endif
	{
		GcRows		bad;
		GcError		berr = {0};

		gc_rows_init(&bad, d, plain_alloc, free, &berr);
		gc_rows_set_weighted(&bad);
		for (int64_t i = 0; i < n; i++)
		{
			memcpy(gc_rows_reserve(&bad, &berr), x + i * d, sizeof(double) * d);
			gc_rows_commit_weighted(&bad, i == n / 2 ? 0.5 : 1.0);
		}
		check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &bad, &params, &a, &berr) == GC_ERR_RANGE,
			  "a weight that is not a whole number is refused", config);
		gc_rows_release(&bad);
	}
	gc_rows_release(&weighted);
	gc_rows_release(&repeated);
	free(x);
	free(centres);
	free(ca);
	free(cb);
	free(sa);
	free(sb);
}

/*
 * Rows gathered from partial stores (as parallel workers' shares reach the
 * leader): appended as whole chunks, borrowed or owned, in another order
 * than the original, then grown by ordinary rows.  The fit must equal the
 * fit of the rows loaded one by one, to the bit.
 */
void
run_partial_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 3.0, centres, NULL);
	int64_t		bounds[4] = {0, n / 3, n / 2, n - 5};
	int			order[3] = {2, 0, 1};
	double	   *values[3];
	uint64_t   *hashes[3];
	GcRows		whole,
				combined;
	GcError		err = {0};
	char		config[64];
	int			status_ok = 1;
	const GcKmeansBackend *backends[2] = {&gc_kmeans_cpu_backend, NULL};

#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))	/* where a GPU is usable */
			backends[1] = &gc_kmeans_cuda_backend;
	}
#endif
	snprintf(config, sizeof(config), "partial n=%lld d=%d k=%d", (long long) n, d, k);
	load_rows(&whole, x, n, d, NULL, plain_alloc, free);
	gc_rows_init(&combined, d, plain_alloc, free, &err);
	for (int p = 0; p < 3; p++)
	{
		int			s = order[p];
		int64_t		count = bounds[s + 1] - bounds[s];
		GcRows		part;
		GcChunk		chunk = {0};
		int64_t		at = 0;

		load_rows(&part, x + bounds[s] * d, count, d, NULL, plain_alloc, free);
		values[s] = malloc(sizeof(double) * d * count);
		hashes[s] = malloc(sizeof(uint64_t) * count);
		for (int c = 0; c < part.nchunks; c++)
		{
			memcpy(values[s] + at * d, part.chunks[c].values,
				   sizeof(double) * d * part.chunks[c].count);
			memcpy(hashes[s] + at, part.chunks[c].hashes,
				   sizeof(uint64_t) * part.chunks[c].count);
			at += part.chunks[c].count;
		}
		chunk.values = values[s];
		chunk.hashes = hashes[s];
		chunk.count = count;
		chunk.borrowed = s != 1;	/* share 1 is owned: the store frees it */
		status_ok &= gc_rows_append_chunk(&combined, &chunk, part.lo, part.hi,
										  part.total_weight, false, &err) == GC_OK;
		gc_rows_release(&part);
	}
	for (int64_t i = bounds[3]; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&combined, &err);

		memcpy(slot, x + i * d, sizeof(double) * d);
		gc_rows_commit(&combined);
	}
	check(status_ok && combined.n == n && combined.total_weight == n,
		  "combined store holds every row", config);
	check(combined.nchunks == 4 && combined.chunks[1].first_row == bounds[3] - bounds[2] &&
		  combined.chunks[3].first_row == bounds[3],
		  "shares are whole chunks and later rows start a new one", config);
	check(memcmp(combined.lo, whole.lo, sizeof(double) * d) == 0 &&
		  memcmp(combined.hi, whole.hi, sizeof(double) * d) == 0,
		  "combined bounding box equals the whole's", config);
	check(gc_rows_hash(&combined, 0) == gc_rows_hash(&whole, bounds[2]),
		  "a share's rows keep their hashes", config);
	for (int b = 0; b < 2 && backends[b]; b++)
	{
		Fit			a = fit(backends[b], &whole, k, 5),
					c = fit(backends[b], &combined, k, 5);

		check(c.status == GC_OK && memcmp(a.centroids, c.centroids, sizeof(double) * k * d) == 0,
			  "combined fit: centroids equal to the bit", config);
		check(memcmp(a.sizes, c.sizes, sizeof(int64_t) * k) == 0, "combined fit: sizes equal", config);
		check(a.result.inertia == c.result.inertia && a.result.iterations == c.result.iterations,
			  "combined fit: inertia and iterations equal", config);
		free_fit(&a);
		free_fit(&c);
	}
	gc_rows_release(&combined);
	free(values[0]);
	free(hashes[0]);
	free(values[2]);
	free(hashes[2]);
	gc_rows_release(&whole);
	free(x);
	free(centres);
}

/* What a fit reported through the progress callback */
typedef struct ProgressLog
{
	int			calls;
	int			order_errors;	/* a phase or iteration out of order */
	int			seedings;
	int			last_iteration;
	GcPhase		last_phase;
	double		last_shift;
	double		first_inertia;	/* inertia passed after the first restart */
	int			returning;
} ProgressLog;

static void
log_progress(void *arg, GcPhase phase, int iteration, double shift, double inertia)
{
	ProgressLog *log = arg;

	if (log->calls == 0 && phase != GC_PHASE_UPLOADING)
		log->order_errors++;
	if (phase == GC_PHASE_SEEDING)
	{
		log->seedings++;
		if (log->seedings == 2)
			log->first_inertia = inertia;
		log->last_iteration = 0;
	}
	else if (phase == GC_PHASE_ITERATING)
	{
		if (iteration != log->last_iteration + 1 || !(shift >= 0.0) || !isnan(inertia))
			log->order_errors++;
		log->last_iteration = iteration;
		log->last_shift = shift;
	}
	else if (phase == GC_PHASE_RETURNING)
		log->returning++;
	log->last_phase = phase;
	log->calls++;
}

/*
 * The progress callback: uploading first, one seeding per restart, one
 * call per iteration numbered from 1 with a shift in tol's unit, and the
 * returning phase before the labels; a converged fit's last shift is
 * within tol (or no label changed)
 */
void
run_progress_case(const GcKmeansBackend *backend, const char *config)
{
	int64_t		n = 3000;
	int			d = 4,
				k = 5;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 1.0, centres, NULL);
	GcRows		rows;
	GcKmeansParams params = {0};
	GcKmeansResult result = {0};
	GcError		err = {0};
	ProgressLog log = {0};
	GcStatus	status;

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	params.k = k;
	params.max_iter = 100;
	params.tol = 1e-4;
	params.init = GC_INIT_RANDOM;
	params.n_init = 3;
	params.progress = log_progress;
	params.progress_arg = &log;
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	result.labels = malloc(sizeof(int32_t) * n);
	status = gc_kmeans_fit(backend, &rows, &params, &result, &err);
	check(status == GC_OK, "progress: fit ok", config);
	check(log.order_errors == 0, "progress: phases and iterations in order", config);
	check(log.seedings == 3, "progress: one seeding per restart", config);
	check(log.returning == 1 && log.last_phase == GC_PHASE_RETURNING,
		  "progress: returning last, once", config);
	check(log.first_inertia > 0 && isfinite(log.first_inertia),
		  "progress: the first restart's inertia reaches the second seeding", config);
	check(log.calls >= 1 + 3 * 2 + 1, "progress: a call per iteration", config);
	params.progress = NULL;		/* none: the fit runs the same */
	check(gc_kmeans_fit(backend, &rows, &params, &result, &err) == GC_OK,
		  "progress: a fit without a callback", config);
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	free(result.labels);
	free(centres);
	free(x);
}

/*
 * The tolerance (tolerance.c): the exact variance is the data's (within
 * 1e-12 of a naive long double sum, weighted rows counted by weight), the
 * same to the bit with the rows in another order, and a step converges
 * exactly at the limit; tol 0 never converges by shift.  A fit goes on
 * while the shift it reports (in tol's unit) is above tol, and stops at
 * the first iteration at most tol.
 */
static double tolerance_shifts[301];
static int	tolerance_iterations;

static void
log_shift(void *arg, GcPhase phase, int iteration, double shift, double inertia)
{
	if (phase == GC_PHASE_ITERATING && iteration >= 1 && iteration <= 300)
	{
		tolerance_shifts[iteration] = shift;
		tolerance_iterations = iteration;
	}
}

void
run_tolerance_case(void)
{
	int64_t		n = 4000;
	int			d = 3,
				k = 8;
	double	   *x = malloc(sizeof(double) * n * d);
	double	   *w = malloc(sizeof(double) * n);
	int64_t    *reversed = malloc(sizeof(int64_t) * n);
	const char *config = "tolerance";

	for (int64_t i = 0; i < n; i++)
	{
		/* blobs in the first two dimensions, a rare far value in the third */
		x[i * d] = floor(uniform() * 4.0) * 10.0 + normal();
		x[i * d + 1] = floor(uniform() * 2.0) * 10.0 + normal();
		x[i * d + 2] = i % 1000 == 0 ? 1e6 : normal();
		w[i] = 1.0 + floor(uniform() * 5.0);
		reversed[i] = n - 1 - i;
	}
	for (int weighted = 0; weighted < 2; weighted++)
	{
		GcRows		rows,
					rows_rev;
		GcFrame		frame = {0},
					frame_rev = {0};
		GcError		err = {0};
		long double mean[3] = {0, 0, 0},
					spread = 0,
					total = 0;
		GcKmeansParams params = {0};
		GcKmeansResult result = {0};

		load_rows(&rows, x, n, d, NULL, plain_alloc, free);
		load_rows(&rows_rev, x, n, d, reversed, plain_alloc, free);
		if (weighted)
		{
			/* weighted copies of the same rows */
			gc_rows_release(&rows);
			gc_rows_release(&rows_rev);
			gc_rows_init(&rows, d, plain_alloc, free, &err);
			gc_rows_init(&rows_rev, d, plain_alloc, free, &err);
			gc_rows_set_weighted(&rows);
			gc_rows_set_weighted(&rows_rev);
			for (int64_t i = 0; i < n; i++)
			{
				memcpy(gc_rows_reserve(&rows, &err), x + i * d, sizeof(double) * d);
				gc_rows_commit_weighted(&rows, w[i]);
				memcpy(gc_rows_reserve(&rows_rev, &err), x + reversed[i] * d, sizeof(double) * d);
				gc_rows_commit_weighted(&rows_rev, w[reversed[i]]);
			}
		}
		for (int64_t i = 0; i < n; i++)
		{
			long double wi = weighted ? w[i] : 1.0;

			total += wi;
			for (int j = 0; j < d; j++)
				mean[j] += wi * x[i * d + j];
		}
		for (int j = 0; j < d; j++)
			mean[j] /= total;
		for (int64_t i = 0; i < n; i++)
			for (int j = 0; j < d; j++)
				spread += (weighted ? w[i] : 1.0) * (x[i * d + j] - mean[j]) * (x[i * d + j] - mean[j]);
		spread /= total * d;

		check(gc_frame_init(&frame, &rows, &err) == GC_OK &&
			  gc_frame_init(&frame_rev, &rows_rev, &err) == GC_OK &&
			  gc_frame_set_tolerance(&frame, &rows, k, 1e-4, NULL, &err) == GC_OK &&
			  gc_frame_set_tolerance(&frame_rev, &rows_rev, k, 1e-4, NULL, &err) == GC_OK,
			  "tolerance: computed", config);
		check(fabsl(frame.variance - spread) <= 1e-12L * spread,
			  weighted ? "tolerance: weighted variance exact" : "tolerance: variance exact", config);
		check(frame.variance == frame_rev.variance && frame.shift_limit == frame_rev.shift_limit &&
			  frame.shift_exp == frame_rev.shift_exp, "tolerance: the same in any row order", config);
		check(frame.shift_limit > 0 && gc_frame_converged(&frame, 1e-4, frame.shift_limit) &&
			  !gc_frame_converged(&frame, 1e-4, frame.shift_limit + 1) &&
			  !gc_frame_converged(&frame, 0.0, 0), "tolerance: converged at the limit", config);
		check(fabs(gc_frame_shift_ratio(&frame, frame.shift_limit) - 1e-4) < 1e-9,
			  "tolerance: the limit's ratio is tol", config);

		params.k = k;
		params.max_iter = 300;
		params.tol = 1e-3;
		params.init = GC_INIT_RANDOM;
		params.n_init = 1;
		params.seed = 1;
		params.progress = log_shift;
		result.centroids = malloc(sizeof(double) * k * d);
		result.sizes = malloc(sizeof(int64_t) * k);
		tolerance_iterations = 0;
		check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err) == GC_OK &&
			  result.converged && tolerance_iterations == result.iterations, "tolerance: fit",
			  config);
		{
			bool		above = true;

			for (int it = 1; it < result.iterations; it++)
				above &= tolerance_shifts[it] > params.tol;
			printf("tolerance: %d iterations, shifts %g ... %g (tol %g)\n", result.iterations,
				   tolerance_shifts[1], tolerance_shifts[result.iterations], params.tol);
			check(above && result.iterations > 1 &&
				  tolerance_shifts[result.iterations] <= params.tol,
				  "tolerance: the fit stops at the first shift at most tol", config);
		}
		free(result.centroids);
		free(result.sizes);
		gc_frame_release(&frame);
		gc_frame_release(&frame_rev);
		gc_rows_release(&rows);
		gc_rows_release(&rows_rev);
	}
	free(x);
	free(w);
	free(reversed);
}

/*
 * Labels and distances asked for are the returned centroids': with three
 * random restarts, whichever restart wins (the last one's scoring gives
 * them when it is the best, a final pass when an earlier one is), every
 * label is the row's nearest returned centroid, sizes count the labels and
 * distances are the rows' to their centroids.  Six seeds: on blobs where
 * random starts end in different local optima.
 */
void
run_restart_labels_case(const GcKmeansBackend *backend, const char *config)
{
	int64_t		n = 2000;
	int			d = 3,
				k = 6;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 2.0, centres, NULL);
	GcRows		rows;
	GcKmeansResult result = {0};
	GcError		err = {0};
	int64_t    *counts = malloc(sizeof(int64_t) * k);
	bool		nearest = true,
				sized = true,
				distant = true,
				fitted = true;

	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	result.labels = malloc(sizeof(int32_t) * n);
	result.distances = malloc(sizeof(double) * n);
	for (uint64_t seed = 1; seed <= 6; seed++)
	{
		GcKmeansParams params = {0};

		params.k = k;
		params.max_iter = 100;
		params.tol = 0.0;
		params.init = GC_INIT_RANDOM;
		params.n_init = 3;
		params.seed = seed;
		fitted &= gc_kmeans_fit(backend, &rows, &params, &result, &err) == GC_OK;
		memset(counts, 0, sizeof(int64_t) * k);
		for (int64_t i = 0; i < n; i++)
		{
			double		d2;
			int			l = gc_nearest_centroid(gc_rows_get(&rows, i), result.centroids, k, d, &d2);

			nearest &= result.labels[i] == l;
			distant &= result.distances[i] == sqrt(d2);
			counts[result.labels[i] >= 0 && result.labels[i] < k ? result.labels[i] : 0]++;
		}
		sized &= memcmp(counts, result.sizes, sizeof(int64_t) * k) == 0;
	}
	check(fitted, "restart labels: fits ok", config);
	check(nearest, "restart labels: each row's label is its nearest returned centroid", config);
	check(sized, "restart labels: sizes count the labels", config);
	check(distant, "restart labels: distances are to the returned centroids", config);
	gc_rows_release(&rows);
	free(result.centroids);
	free(result.sizes);
	free(result.labels);
	free(result.distances);
	free(counts);
	free(centres);
	free(x);
}

/*
 * Rows spread far wider than float32 holds (scaled by 1e20 and by 1e140;
 * the legal limit is 1e150): the fit asked for float32 labels in float64,
 * says so, and on the GPU agrees with the CPU to the bit, where float32
 * labeling would send every point to the first centroid
 */
void
run_wide_range_case(double scale)
{
	int64_t		n = 2000;
	int			d = 4,
				k = 5;
	char		config[64];
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	GcRows		rows;
	Fit			cpu;

	snprintf(config, sizeof(config), "n=%lld d=%d k=%d scale=%g", (long long) n, d, k, scale);
	rng_state = 99;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n * d; i++)
		x[i] *= scale;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	cpu = fit(&gc_kmeans_cpu_backend, &rows, k, 7);
	check(cpu.status == GC_OK && recovers(truth, cpu.labels, n, k),
		  "wide range: cpu recovers the blobs", config);
	check(cpu.result.precision == GC_PRECISION_FLOAT64,
		  "wide range: float32 asked, float64 labeled", config);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;
			Fit			gpu;

			load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			gpu = fit(&gc_kmeans_cuda_backend, &pinned, k, 7);
			check(gpu.status == GC_OK && gpu.result.precision == GC_PRECISION_FLOAT64,
				  "wide range: gpu labeled in float64", config);
			check_same_fit(&cpu, &gpu, n, k, d, "wide range: gpu", config);
			free_fit(&gpu);
			gc_rows_release(&pinned);
		}
	}
#endif
	free_fit(&cpu);
	gc_rows_release(&rows);
	free(x);
	free(truth);
	free(centres);
}
