/*-------------------------------------------------------------------------
 *
 * precision_test.c
 *	  Engine tests of the guard on reduced precision (engine/
 *	  precision_check.c) without a server: the measure of a sample (label
 *	  disagreement, inertia excess) on hand-computed cases, the rule and
 *	  the fall-back ladder; then the driver's check on a simulated backend
 *	  (the CPU reference whose sample labels are corrupted at the
 *	  precisions a test chooses): a clean reduced precision is kept and
 *	  does not change the fit, a bad one falls back before the first
 *	  iteration (so the fit is the float32 fit), auto walks fp16, tf32,
 *	  float32, the sample is sorted, of min(n, 4,096) rows, and the same
 *	  rows whatever the input order; the same over shards, some streamed.
 *	  Where a GPU is usable: bf16 and fp16
 *	  fall back on heavy-tailed columns (as on KDD Cup 99) and give the
 *	  float32 fit to the bit; on blobs fp16 and auto keep fp16.
 *
 *	  precision_test           run the checks, ending with "N passed, N failed"
 *
 * IDENTIFICATION
 *	  test/engine/precision_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "precision_check.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/* ---------------------------------------------------------------------
 * The measure, the rule, the ladder
 * ---------------------------------------------------------------------
 */
static void
run_measure_cases(void)
{
	const double x[] = {0, 1, 10, 11};
	const double centroids[] = {0, 10};
	const int32_t exact[] = {0, 0, 1, 1};
	const int32_t wrong[] = {0, 1, 1, 1};
	GcPrecisionCheck c = {0};

	/* row 1 sent to 10: 81 instead of 1; inertia 82 against 2 */
	gc_precision_measure(x, 4, 1, 2, centroids, wrong, exact, &c);
	check(c.sampled == 4 && c.disagreement == 0.25, "one label in four differs", "measure");
	check(c.inertia_excess == 40.0, "inertia 82 against 2: excess 40", "measure");
	check(!gc_precision_acceptable(&c), "an excess of 40 fails", "measure");

	gc_precision_measure(x, 4, 1, 2, centroids, exact, exact, &c);
	check(c.disagreement == 0.0 && c.inertia_excess == 0.0 && gc_precision_acceptable(&c),
		  "exact labels: nothing to report", "measure");
	{
		/* 5 is as far from 0 as from 10: a tie costs nothing */
		const double tie[] = {5};
		const int32_t one[] = {1},
					zero[] = {0};

		gc_precision_measure(tie, 1, 1, 2, centroids, one, zero, &c);
		check(c.disagreement == 1.0 && c.inertia_excess == 0.0 && gc_precision_acceptable(&c),
			  "a tie broken the other way disagrees at no cost", "measure");
	}
	{
		const int32_t out_of_range[] = {0, 2, 1, 1};
		const double on_centroids[] = {0, 10};
		const int32_t swapped[] = {1, 0},
					right[] = {0, 1};

		gc_precision_measure(x, 4, 1, 2, centroids, out_of_range, exact, &c);
		check(c.inertia_excess == DBL_MAX && !gc_precision_acceptable(&c),
			  "a label out of range is infinitely costly", "measure");
		gc_precision_measure(on_centroids, 2, 1, 2, centroids, swapped, right, &c);
		check(c.inertia_excess == DBL_MAX, "an excess over an exact inertia of 0 is the largest",
			  "measure");
	}
	c.inertia_excess = GC_PRECISION_MAX_EXCESS;
	check(gc_precision_acceptable(&c), "the bound itself passes", "rule");
	c.inertia_excess = GC_PRECISION_MAX_EXCESS * 1.01;
	check(!gc_precision_acceptable(&c), "past the bound fails", "rule");

	check(gc_precision_next(GC_PRECISION_BF16, GC_PRECISION_BF16) == GC_PRECISION_FLOAT32 &&
		  gc_precision_next(GC_PRECISION_FP16, GC_PRECISION_FP16) == GC_PRECISION_FLOAT32 &&
		  gc_precision_next(GC_PRECISION_TF32, GC_PRECISION_TF32) == GC_PRECISION_FLOAT32,
		  "an explicit precision falls back to float32", "ladder");
	check(gc_precision_next(GC_PRECISION_AUTO, GC_PRECISION_FP16) == GC_PRECISION_TF32 &&
		  gc_precision_next(GC_PRECISION_AUTO, GC_PRECISION_TF32) == GC_PRECISION_FLOAT32,
		  "auto: fp16, then tf32, then float32", "ladder");
	check(gc_precision_is_reduced(GC_PRECISION_TF32) && gc_precision_is_reduced(GC_PRECISION_BF16) &&
		  gc_precision_is_reduced(GC_PRECISION_FP16) &&
		  !gc_precision_is_reduced(GC_PRECISION_FLOAT32) &&
		  !gc_precision_is_reduced(GC_PRECISION_FLOAT64) &&
		  !gc_precision_is_reduced(GC_PRECISION_AUTO), "which precisions are checked", "ladder");
}

/* ---------------------------------------------------------------------
 * A simulated reduced-precision backend: the CPU reference, whose sample
 * labels are sent to the farthest centroid for a share of the rows (by
 * their content hash, so the same rows whatever the order)
 * ---------------------------------------------------------------------
 */
typedef struct Simulated
{
	double		bad[GC_PRECISION_AUTO + 1]; /* share of rows mislabelled at each precision */
	GcPrecision precision;		/* what it labels at now */
	const GcRows *rows;
	int			k;
	int			label_calls;
	int			set_calls;
	GcPrecision set_to[4];
	int			last_m;
	bool		sample_ordered; /* every sample sorted, distinct, in range */
} Simulated;

static Simulated sim;

static GcStatus
sim_open(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
		 void **session, GcError *err)
{
	sim.rows = rows;
	sim.k = params->k;
	sim.precision = params->precision == GC_PRECISION_AUTO ? GC_PRECISION_FP16 : params->precision;
	return gc_kmeans_cpu_backend.open(rows, frame, params, session, err);
}

static GcPrecision
sim_precision(void *session)
{
	return sim.precision;
}

static GcStatus
sim_set_precision(void *session, GcPrecision precision, GcError *err)
{
	if (sim.set_calls < 4)
		sim.set_to[sim.set_calls] = precision;
	sim.set_calls++;
	sim.precision = precision;
	return GC_OK;
}

/* The centroid farthest from x */
static int
farthest(const double *x, const double *centroids, int k, int d)
{
	int			worst = 0;
	double		worst_d2 = -1.0;

	for (int c = 0; c < k; c++)
	{
		double		s = gc_sqdist_exact(x, centroids + (size_t) c * d, d);

		if (s > worst_d2)
		{
			worst_d2 = s;
			worst = c;
		}
	}
	return worst;
}

static GcStatus
sim_label_sample(void *session, const double *centroids, const int64_t *sample, int m,
				 int32_t *labels, int32_t *exact, GcError *err)
{
	int			d = sim.rows->d;

	sim.label_calls++;
	sim.last_m = m;
	for (int i = 0; i < m; i++)
	{
		const double *x = gc_rows_get(sim.rows, sample[i]);
		bool		bad = (double) (gc_rows_hash(sim.rows, sample[i]) % 1000) <
			1000.0 * sim.bad[sim.precision];

		if (sample[i] < 0 || sample[i] >= sim.rows->n || (i > 0 && sample[i] <= sample[i - 1]))
			sim.sample_ordered = false;
		exact[i] = gc_nearest_centroid(x, centroids, sim.k, d, NULL);
		labels[i] = bad ? farthest(x, centroids, sim.k, d) : exact[i];
	}
	return GC_OK;
}

static GcKmeansBackend sim_backend;

/* Reset the simulation: mislabelled shares at fp16, tf32 and bf16 */
static void
simulate(double fp16, double tf32, double bf16)
{
	memset(&sim, 0, sizeof(sim));
	sim.bad[GC_PRECISION_FP16] = fp16;
	sim.bad[GC_PRECISION_TF32] = tf32;
	sim.bad[GC_PRECISION_BF16] = bf16;
	sim.sample_ordered = true;
}

/* The sharded backend over the simulated one */
static GcStatus
sim_shards_open(const GcRows *rows, const GcFrame *frame, const GcKmeansParams *params,
				void **session, GcError *err)
{
	return gc_kmeans_shards_open(&sim_backend, rows, frame, params, session, err);
}

/* A fit over 6 shards of which 1 is resident and 5 stream through a pair of sessions */
static Fit
sharded_fit(const GcKmeansBackend *backend, GcRows *rows, int k, GcPrecision precision)
{
	GcKmeansParams params = one_restart_params(k, GC_INIT_KMEANSPP, 300, 1e-4);

	params.seed = 3;
	params.algorithm = GC_ALGORITHM_LLOYD;
	params.precision = precision;
	params.shards = 6;
	params.lanes = 1;
	params.lane_rows = rows->n / 2;
	return fit_params(backend, rows, &params);
}

/*
 * The check over shards (engine/kmeans_shards.c): its sample labelled in
 * a session of its own must be the unsplit fit's sample, mislabelled in
 * the same rows (the same disagreement), and a fall-back must reach
 * every session, the streaming pair's too (one resident shard and two
 * pool sessions: three calls a step down the ladder), so that the
 * sharded fit keeps or drops a precision as the unsplit one does and
 * gives its model (cpu: the CPU's fit of rows, k clusters, seed 3)
 */
static void
run_sharded_simulated_cases(GcRows *rows, const Fit *cpu, int k)
{
	int64_t		n = rows->n;
	int			d = rows->d;
	GcKmeansBackend sharded = gc_kmeans_cpu_sharded_backend;
	Fit			one,
				f;

	sharded.name = "simulated sharded";
	sharded.open = sim_shards_open;

	simulate(0.0, 0.0, 0.0);
	f = sharded_fit(&sharded, rows, k, GC_PRECISION_BF16);
	check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_PASSED &&
		  f.result.precision == GC_PRECISION_BF16 &&
		  f.result.check.sampled == GC_PRECISION_SAMPLE_ROWS &&
		  sim.last_m == GC_PRECISION_SAMPLE_ROWS && sim.sample_ordered && sim.set_calls == 0,
		  "shards: clean bf16 passes on a sample of 4,096 rows", "sharded");
	check_same_fit(cpu, &f, n, k, d, "shards: the check leaves the fit as it was", "sharded");
	free_fit(&f);

	simulate(0.0, 0.0, 0.3);
	one = fit_with(&sim_backend, rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, 300, 1e-4);
	simulate(0.0, 0.0, 0.3);
	f = sharded_fit(&sharded, rows, k, GC_PRECISION_BF16);
	check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_FELL_BACK &&
		  f.result.precision == GC_PRECISION_FLOAT32 && sim.set_calls == 3 &&
		  sim.set_to[0] == GC_PRECISION_FLOAT32 && sim.set_to[2] == GC_PRECISION_FLOAT32,
		  "shards: bad bf16 falls back in every session", "sharded");
	check(one.status == GC_OK && f.result.check.disagreement == one.result.check.disagreement &&
		  f.result.check.inertia_excess == one.result.check.inertia_excess &&
		  f.result.check.disagreement > 0.25,
		  "shards: the same sample rows as the unsplit fit's", "sharded");
	check_same_fit(cpu, &f, n, k, d, "shards fallen back: the float32 fit", "sharded");
	free_fit(&one);
	free_fit(&f);

	/* auto: fp16 fails, tf32 passes, the second sample session opened at tf32 */
	simulate(0.3, 0.0, 0.0);
	f = sharded_fit(&sharded, rows, k, GC_PRECISION_AUTO);
	check(f.status == GC_OK && f.result.precision == GC_PRECISION_TF32 &&
		  f.result.check.outcome == GC_CHECK_PASSED &&
		  f.result.check.checked == GC_PRECISION_TF32 && sim.label_calls == 2 &&
		  sim.set_calls == 3 && sim.set_to[1] == GC_PRECISION_TF32,
		  "shards: auto, fp16 fails, tf32 runs", "sharded");
	free_fit(&f);
}

static void
run_simulated_cases(void)
{
	const int64_t n = 6000;
	const int	d = 4,
				k = 10;
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x;
	int64_t    *reversed = malloc(sizeof(int64_t) * n);
	GcRows		rows,
				rows_rev,
				few;
	Fit			cpu,
				f;
	double		first_disagreement;

	sim_backend = gc_kmeans_cpu_backend;
	sim_backend.name = "simulated";
	sim_backend.open = sim_open;
	sim_backend.precision = sim_precision;
	sim_backend.set_precision = sim_set_precision;
	sim_backend.label_sample = sim_label_sample;

	rng_state = 77;
	x = make_data(n, d, k, 0.5, centres, NULL);
	for (int64_t i = 0; i < n; i++)
		reversed[i] = n - 1 - i;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&rows_rev, x, n, d, reversed, plain_alloc, free);
	load_rows(&few, x, 500, d, NULL, plain_alloc, free);
	cpu = fit(&gc_kmeans_cpu_backend, &rows, k, 3);

	/* the CPU computes in double: nothing to check, whatever was asked */
	f = fit_with(&gc_kmeans_cpu_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FP16,
				 300, 1e-4);
	check(f.status == GC_OK && f.result.precision == GC_PRECISION_FLOAT64 &&
		  f.result.check.outcome == GC_CHECK_NONE, "cpu asked for fp16 runs float64", "cpu");
	check_same_fit(&cpu, &f, n, k, d, "cpu fp16 is the float32 fit", "cpu");
	free_fit(&f);

	/* an exact precision is not checked */
	simulate(0.5, 0.5, 0.5);
	f = fit_with(&sim_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 300, 1e-4);
	check(f.status == GC_OK && sim.label_calls == 0 && f.result.check.outcome == GC_CHECK_NONE &&
		  f.result.precision == GC_PRECISION_FLOAT32, "float32: no sample labelled", "simulated");
	free_fit(&f);

	/* a clean reduced precision is kept, and the check leaves the fit alone */
	simulate(0.0, 0.0, 0.0);
	f = fit_with(&sim_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, 300, 1e-4);
	check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_PASSED &&
		  f.result.precision == GC_PRECISION_BF16 && f.result.check.checked == GC_PRECISION_BF16,
		  "clean bf16 passes and runs", "simulated");
	check(f.result.check.sampled == GC_PRECISION_SAMPLE_ROWS && sim.last_m == GC_PRECISION_SAMPLE_ROWS &&
		  sim.sample_ordered, "a sorted sample of 4,096 distinct rows", "simulated");
	check(f.result.check.disagreement == 0.0 && f.result.check.inertia_excess == 0.0 &&
		  sim.label_calls == 1 && sim.set_calls == 0, "clean bf16: one pass, no disagreement",
		  "simulated");
	check_same_fit(&cpu, &f, n, k, d, "the check leaves the fit as it was", "simulated");
	free_fit(&f);

	/* 30% sent to the farthest centroid: float32 from the first iteration */
	simulate(0.0, 0.0, 0.3);
	f = fit_with(&sim_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, 300, 1e-4);
	check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_FELL_BACK &&
		  f.result.precision == GC_PRECISION_FLOAT32 && sim.set_calls == 1 &&
		  sim.set_to[0] == GC_PRECISION_FLOAT32 && f.result.check.checked == GC_PRECISION_BF16,
		  "bad bf16 falls back to float32", "simulated");
	check(f.result.check.disagreement > 0.25 && f.result.check.disagreement < 0.35 &&
		  f.result.check.inertia_excess > 1.0, "the disagreement measured is the share corrupted",
		  "simulated");
	check_same_fit(&cpu, &f, n, k, d, "fallen back before iterating: the float32 fit", "simulated");
	first_disagreement = f.result.check.disagreement;
	free_fit(&f);

	/* the sample is the same rows whatever their order */
	simulate(0.0, 0.0, 0.3);
	f = fit_with(&sim_backend, &rows_rev, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_BF16, 300, 1e-4);
	check(f.status == GC_OK && f.result.check.disagreement == first_disagreement,
		  "reversed rows: the same sample, the same disagreement", "simulated");
	free_fit(&f);

	/* auto: fp16 fails, tf32 passes */
	simulate(0.3, 0.0, 0.0);
	f = fit_with(&sim_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_AUTO, 300, 1e-4);
	check(f.status == GC_OK && f.result.precision == GC_PRECISION_TF32 &&
		  f.result.check.outcome == GC_CHECK_PASSED && f.result.check.checked == GC_PRECISION_TF32 &&
		  sim.label_calls == 2 && sim.set_calls == 1 && sim.set_to[0] == GC_PRECISION_TF32,
		  "auto: fp16 fails, tf32 runs", "simulated");
	free_fit(&f);

	/* auto: both fail */
	simulate(0.3, 0.2, 0.0);
	f = fit_with(&sim_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_AUTO, 300, 1e-4);
	check(f.status == GC_OK && f.result.precision == GC_PRECISION_FLOAT32 &&
		  f.result.check.outcome == GC_CHECK_FELL_BACK && f.result.check.checked == GC_PRECISION_TF32 &&
		  sim.label_calls == 2 && sim.set_calls == 2 && sim.set_to[1] == GC_PRECISION_FLOAT32 &&
		  f.result.check.disagreement > 0.15 && f.result.check.disagreement < 0.25,
		  "auto: fp16 and tf32 fail, float32 runs", "simulated");
	check_same_fit(&cpu, &f, n, k, d, "auto fallen back: the float32 fit", "simulated");
	free_fit(&f);

	/* fewer rows than the sample: all of them */
	simulate(0.0, 0.0, 0.0);
	f = fit_with(&sim_backend, &few, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FP16, 300, 1e-4);
	check(f.status == GC_OK && f.result.check.sampled == 500 && sim.last_m == 500 &&
		  sim.sample_ordered, "500 rows: all sampled", "simulated");
	free_fit(&f);

	run_sharded_simulated_cases(&rows, &cpu, k);
	free_fit(&cpu);
	gc_rows_release(&rows);
	gc_rows_release(&rows_rev);
	gc_rows_release(&few);
	free(x);
	free(centres);
	free(reversed);
}

#ifdef GC_WITH_CUDA
/*
 * Heavy-tailed columns, as KDD Cup 99's byte counts: blobs in d = 16,
 * whose first column is 0 to 1,000 for most rows and up to 7e8 for one in
 * 200.  Centred on the bounding box, every row is 3.5e8 from the centre
 * in that column, and 16-bit products lose every distance between blobs.
 */
static double *
make_heavy_tailed(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 0.5, centres, NULL);

	for (int64_t i = 0; i < n; i++)
		x[i * d] = i % 200 == 0 ? 7e8 * uniform() : 1000.0 * uniform() * uniform();
	free(centres);
	return x;
}

static void
run_gpu_cases(void)
{
	const int64_t n = 20000;
	const int	d = 16,
				k = 200;
	char		why[256];
	double	   *x;
	GcRows		heavy;
	Fit			exact;
	static const GcPrecision reduced[] = {GC_PRECISION_BF16, GC_PRECISION_FP16, GC_PRECISION_AUTO};

	if (!gc_cuda_use_device(0, why, sizeof(why)))
		return;
	rng_state = 91;
	x = make_heavy_tailed(n, d, k);
	load_rows(&heavy, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	exact = fit_with(&gc_kmeans_cuda_backend, &heavy, k, 3, GC_ALGORITHM_LLOYD,
					 GC_PRECISION_FLOAT32, 30, 0.0);
	check(exact.status == GC_OK && exact.result.check.outcome == GC_CHECK_NONE &&
		  exact.result.precision == GC_PRECISION_FLOAT32, "gpu float32: not checked", "heavy");
	for (size_t p = 0; p < sizeof(reduced) / sizeof(reduced[0]); p++)
	{
		Fit			f = fit_with(&gc_kmeans_cuda_backend, &heavy, k, 3, GC_ALGORITHM_LLOYD,
								 reduced[p], 30, 0.0);
		char		config[64];

		snprintf(config, sizeof(config), "heavy, precision %d", (int) reduced[p]);
		printf("%s: disagreement %.4f, inertia excess %.3g, ran %d\n", config,
			   f.result.check.disagreement, f.result.check.inertia_excess,
			   (int) f.result.precision);
		check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_FELL_BACK &&
			  f.result.precision == GC_PRECISION_FLOAT32 &&
			  f.result.check.inertia_excess > GC_PRECISION_MAX_EXCESS,
			  "gpu: 16-bit products on heavy tails fall back to float32", config);
		check_same_fit(&exact, &f, n, k, d, "gpu: fallen back, the float32 fit", config);
		free_fit(&f);
	}
	free_fit(&exact);
	gc_rows_release(&heavy);
	free(x);

	{
		/* blobs: fp16 and auto keep fp16, near the exact fit */
		double	   *centres = malloc(sizeof(double) * 200 * 64);
		GcRows		blobs;
		Fit			cpu;

		rng_state = 5;
		x = make_data(n, 64, 200, 0.5, centres, NULL);
		load_rows(&blobs, x, n, 64, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
		cpu = fit_with(&gc_kmeans_cuda_backend, &blobs, 200, 3, GC_ALGORITHM_LLOYD,
					   GC_PRECISION_FLOAT32, 30, 0.0);
		for (int p = 1; p < 3; p++)
		{
			Fit			f = fit_with(&gc_kmeans_cuda_backend, &blobs, 200, 3, GC_ALGORITHM_LLOYD,
									 reduced[p], 30, 0.0);

			check(f.status == GC_OK && f.result.check.outcome == GC_CHECK_PASSED &&
				  f.result.precision == GC_PRECISION_FP16 && f.result.kernel != NULL &&
				  strncmp(f.result.kernel, "tensor_fp16", 11) == 0 &&	/* or _wgmma */
				  f.result.check.inertia_excess <= GC_PRECISION_MAX_EXCESS,
				  "gpu: fp16 passes on blobs and runs", p == 1 ? "blobs fp16" : "blobs auto");
			check(fabs(f.result.inertia - cpu.result.inertia) <= 1e-4 * cpu.result.inertia,
				  "gpu fp16: inertia within 1e-4", p == 1 ? "blobs fp16" : "blobs auto");
			free_fit(&f);
		}
		free_fit(&cpu);
		gc_rows_release(&blobs);
		free(x);
		free(centres);
	}
}
#endif

int
main(void)
{
	run_measure_cases();
	run_simulated_cases();
#ifdef GC_WITH_CUDA
	run_gpu_cases();
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
