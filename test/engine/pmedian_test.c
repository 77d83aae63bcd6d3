/*-------------------------------------------------------------------------
 *
 * pmedian_test.c
 *	  p-median engine tests without a server: brute-force optima on tiny
 *	  instances, capacities respected where that is easy, hard capacities
 *	  always, every blob given a medoid by default, the CPU's pruned swap
 *	  gains and nearest2 equal to plain loops, and, where a GPU
 *	  is usable, the CUDA backend against the CPU reference (same medoids,
 *	  same allocation, objective equal to the last bit) for every method
 *	  and metric.  Also the benchmarks on TSPLIB instances.
 *
 *	  pmedian_test                         run the checks
 *	  pmedian_test phases FILE.tsp.gz ITER [cpu]
 *	      the paper's capacitated workload (q_i = (107 |x| + 97 |y|) mod 29
 *	      + 1, Q = 300, T = 290, p = ceil(sum q / T)): sample, global and
 *	      small phases with ITER iterations, GPU then CPU (cpu: CPU only)
 *	  pmedian_test quality FILE.tsp.gz P [cpu]
 *	      uncapacitated p-median, location-allocation without the swap
 *	      improvement and with the default rule: objective and time, GPU
 *	      then CPU (PM_DEFAULT_ONLY=1: the default only; PM_METHOD=n)
 *	  pmedian_test blobs N [cpu]
 *	      eight Gaussian blobs, default options: blobs with a medoid,
 *	      objective against the blobs' medians (PM_SEED=s; PM_IMPROVE=1:
 *	      no improvement)
 *	  pmedian_test capacity FILE.tsp.gz P Q [cpu]
 *	      the paper's demands, p medoids of capacity Q, soft then hard:
 *	      largest load, medoids within Q, demand over Q, repair cost
 *	      (PM_METHOD=n, PM_ITER=n, PM_HARD_ONLY=1)
 *	  pmedian_test points FILE.tsp.gz      the coordinates, one row a line
 *
 * IDENTIFICATION
 *	  test/engine/pmedian_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmedian_engine.h"
#include "pmedian_math.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

static int	passed,
			failed;

static void
check(int ok, const char *what, const char *config)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAILED: %s [%s]\n", what, config);
	}
}

static uint64_t rng_state;

static double
uniform(void)
{
	rng_state += UINT64_C(0x9e3779b97f4a7c15);
	return (double) (gc_mix64(rng_state) >> 11) / 9007199254740992.0;
}

static void *
plain_alloc(size_t bytes)
{
	return malloc(bytes);
}

static void
load_rows(GcRows *rows, const double *x, int64_t n, int d, GcHostAlloc alloc,
		  GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	for (int64_t i = 0; i < n; i++)
	{
		memcpy(gc_rows_reserve(rows, &err), x + i * d, sizeof(double) * d);
		gc_rows_commit(rows);
	}
}

static GcPmParams
default_params(int p)
{
	GcPmParams	params = {0};

	params.p = p;
	params.metric = GC_PM_EUCLIDEAN;
	params.max_iter = 100;
	params.polish_iter = 100;
	params.penalty_step = 2.0;
	params.method = GC_PM_LOCATION_ALLOCATION;
	params.auto_threshold = INT64_MAX;
	params.sample_factor = 30.0;
	return params;
}

typedef struct Fit
{
	int32_t    *medoids;
	double	   *penalties;
	int32_t    *alloc;
	double	   *dist;
	GcPmResult	result;
	GcStatus	status;
	double		ms;
} Fit;

static Fit
fit(const GcPmBackend *backend, GcRows *rows, const double *demand,
	const GcPmParams *params)
{
	Fit			f;
	GcError		err = {0};
	double		t0 = gc_now_ms();

	f.medoids = malloc(sizeof(int32_t) * params->p);
	f.penalties = malloc(sizeof(double) * params->p);
	f.alloc = malloc(sizeof(int32_t) * rows->n);
	f.dist = malloc(sizeof(double) * rows->n);
	memset(&f.result, 0, sizeof(f.result));
	f.result.medoids = f.medoids;
	f.result.penalties = f.penalties;
	f.result.alloc = f.alloc;
	f.result.dist = f.dist;
	f.status = gc_pmedian_fit(backend, rows, demand, params, &f.result, &err);
	f.ms = gc_now_ms() - t0;
	if (f.status != GC_OK)
		printf("fit failed: %s\n", err.message);
	return f;
}

static void
free_fit(Fit *f)
{
	free(f->medoids);
	free(f->penalties);
	free(f->alloc);
	free(f->dist);
}

/* The optimal objective over all p-subsets, by enumeration */
static double
brute_force(const double *x, int n, int d, int p, GcPmMetric metric)
{
	int			idx[8];
	double		best = INFINITY;

	for (int i = 0; i < p; i++)
		idx[i] = i;
	for (;;)
	{
		double		total = 0.0;
		int			i;

		for (int r = 0; r < n; r++)
		{
			double		m = INFINITY;

			for (int k = 0; k < p; k++)
			{
				double		dk = gc_pm_dist(x + r * d, x + idx[k] * d, d, metric);

				m = dk < m ? dk : m;
			}
			total += m;
		}
		best = total < best ? total : best;
		for (i = p - 1; i >= 0 && idx[i] == n - p + i; i--)
			;
		if (i < 0)
			return best;
		idx[i]++;
		for (int k = i + 1; k < p; k++)
			idx[k] = idx[k - 1] + 1;
	}
}

/* Tiny instances: the swap improvement reaches the optimum */
static void
test_brute_force(void)
{
	for (int trial = 0; trial < 12; trial++)
	{
		int			n = 9 + trial % 4,
					d = 2,
					p = 1 + trial % 4;
		GcPmMetric	metric = (GcPmMetric) (trial % 4);
		double		x[64];
		char		config[64];
		GcRows		rows;
		GcPmParams	params = default_params(p);
		Fit			f;
		double		opt;

		rng_state = 1000 + trial;
		for (int i = 0; i < n * d; i++)
			x[i] = floor(uniform() * 100);
		snprintf(config, sizeof(config), "brute n=%d p=%d %s", n, p,
				 gc_pmedian_metric_name(metric));
		load_rows(&rows, x, n, d, plain_alloc, free);
		params.metric = metric;
		params.improve = GC_PM_IMPROVE_AUTO;	/* the default: full here */
		f = fit(&gc_pmedian_cpu_backend, &rows, NULL, &params);
		opt = brute_force(x, n, d, p, metric);
		check(f.status == GC_OK && fabs(f.result.objective - opt) <= 1e-9 * (1 + opt),
			  "swap improvement finds the optimum", config);
		if (fabs(f.result.objective - opt) > 1e-9 * (1 + opt))
			printf("  objective %.17g, optimum %.17g\n", f.result.objective, opt);
		free_fit(&f);
		gc_rows_release(&rows);
	}
}

/* Points in nblob well-separated blobs of equal demand */
static double *
make_blobs(int64_t n, int d, int nblob, double spread)
{
	double	   *x = malloc(sizeof(double) * n * d);
	double	   *centre = malloc(sizeof(double) * nblob * d);

	for (int b = 0; b < nblob * d; b++)
		centre[b] = uniform() * 1000.0;
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			x[i * d + j] = centre[(i % nblob) * d + j] + spread * (uniform() - 0.5);
	free(centre);
	return x;
}

/*
 * The CPU backend's nearest2 and swap gains (pruned by its k-d tree,
 * updated after one medoid is replaced, on threads) against plain loops
 * over every row and medoid: equal to the bit, on rows with many ties
 * (integer coordinates), over rounds that each replace one medoid
 */
static void
test_swap_exact(int64_t n, int d, int p, GcPmMetric metric)
{
	double	   *x = make_blobs(n, d, 10, 60.0);
	GcPmParams	params = default_params(p);
	GcRows		rows;
	GcError		err = {0};
	void	   *session = NULL;
	int32_t    *medoids = malloc(sizeof(int32_t) * p),
			   *nearest = malloc(sizeof(int32_t) * n),
			   *cand = malloc(sizeof(int32_t) * n),
			   *best_medoid = malloc(sizeof(int32_t) * n);
	double	   *dn = malloc(sizeof(double) * n),
			   *ds = malloc(sizeof(double) * n),
				far = 1e9,
				scale;
	int64_t    *removal = calloc(p, sizeof(int64_t)),
			   *best_gain = malloc(sizeof(int64_t) * n),
			   *gains = malloc(sizeof(int64_t) * p);
	int			e,
				ncand = 0,
				nearest_ok = 1,
				gains_ok = 1;
	char		config[96];

	snprintf(config, sizeof(config), "n=%lld d=%d p=%d metric=%d",
			 (long long) n, d, p, (int) metric);
	for (int64_t i = 0; i < n * d; i++)
		x[i] = floor(x[i] / 8.0);
	load_rows(&rows, x, n, d, plain_alloc, free);
	params.metric = metric;
	params.cpu_threads = 3;
	frexp((double) n * far, &e);
	scale = ldexp(1.0, 61 - e);
	for (int m = 0; m < p; m++)
		medoids[m] = (int32_t) (m * (n / p));
	check(gc_pmedian_cpu_backend.open(&rows, NULL, &params, &session, &err) == GC_OK,
		  "swap session opens", config);
	for (int round = 0; round < 8 && session; round++)
	{
		if (gc_pmedian_cpu_backend.nearest2(session, p, medoids, far, nearest, dn, ds,
											&err) != GC_OK)
		{
			nearest_ok = 0;
			break;
		}
		memset(removal, 0, sizeof(int64_t) * p);
		ncand = 0;
		for (int64_t i = 0; i < n; i++)
		{
			double		d1 = far,
						d2 = far;
			int32_t		m1 = 0;
			int			is_medoid = 0;

			for (int m = 0; m < p; m++)
			{
				double		dm = gc_pm_dist(x + i * d, x + (int64_t) medoids[m] * d, d, metric);

				is_medoid |= medoids[m] == i;
				if (dm < d1)
				{
					d2 = d1;
					d1 = dm;
					m1 = m;
				}
				else if (dm < d2)
					d2 = dm;
			}
			nearest_ok &= nearest[i] == m1 && dn[i] == d1 && ds[i] == d2;
			removal[m1] += gc_pm_fixed(d2, scale) - gc_pm_fixed(d1, scale);
			if (!is_medoid)
				cand[ncand++] = (int32_t) i;
		}
		for (int k0 = 0; k0 < ncand; k0 += GC_PM_SWAP_BATCH)
			if (gc_pmedian_cpu_backend.swap_gains(session, p,
												  ncand - k0 < GC_PM_SWAP_BATCH ? ncand - k0 : GC_PM_SWAP_BATCH,
												  cand + k0, scale, removal, best_medoid + k0,
												  best_gain + k0, &err) != GC_OK)
				gains_ok = 0;
		for (int k = 0; k < ncand; k++)
		{
			long long	own = 0,
						o,
						nr;
			int			bm = 0;

			memcpy(gains, removal, sizeof(int64_t) * p);
			for (int64_t i = 0; i < n; i++)
			{
				gc_pm_swap_part(gc_pm_dist(x + i * d, x + (int64_t) cand[k] * d, d, metric),
								dn[i], ds[i], scale, &o, &nr);
				own += o;
				gains[nearest[i]] += nr;
			}
			for (int m = 1; m < p; m++)
				if (gains[m] < gains[bm])
					bm = m;
			gains_ok &= best_medoid[k] == bm && best_gain[k] == gains[bm] + own;
		}
		medoids[round * 7 % p] = cand[(round * 977 + 13) % ncand];
	}
	check(nearest_ok, "nearest2 equals the plain loop, after each replaced medoid", config);
	check(gains_ok, "swap gains equal the plain loop's", config);
	if (session)
		gc_pmedian_cpu_backend.close(session);
	gc_rows_release(&rows);
	free(x);
	free(medoids);
	free(nearest);
	free(cand);
	free(best_medoid);
	free(dn);
	free(ds);
	free(removal);
	free(best_gain);
	free(gains);
}

/* Objective recomputed from the allocation, and loads within capacity */
static void
check_consistent(const Fit *f, const GcRows *rows, const double *x, int d,
				 const double *demand, const GcPmParams *params,
				 const char *config)
{
	double		total = 0.0;
	double	   *load = calloc(params->p, sizeof(double));
	int			bad = 0;

	for (int64_t i = 0; i < rows->n; i++)
	{
		double		di = gc_pm_dist(x + i * d, x + (int64_t) f->medoids[f->alloc[i]] * d,
									d, params->metric);

		if (di != f->dist[i] && bad < 3) printf("  row %lld medoid %d alloc %.17g recomputed %.17g\n", (long long) i, f->medoids[f->alloc[i]], f->dist[i], di);
		bad += di != f->dist[i];
		total += di;
		load[f->alloc[i]] += demand ? demand[i] : 1.0;
	}
	check(bad == 0, "distances match the allocation", config);
	check(fabs(total - f->result.objective) <= 1e-9 * (1 + total),
		  "objective is the sum of distances", config);
	if (params->capacitated)
	{
		double		v = 0.0;

		for (int m = 0; m < params->p; m++)
			v += load[m] > params->capacity ? load[m] - params->capacity : 0.0;
		check(fabs(v - f->result.violation) <= 1e-9 * (1 + v),
			  "violation is the sum of overloads", config);
	}
	free(load);
}

#ifdef GC_WITH_CUDA
/* The GPU backend gives what the CPU reference gives */
static void
compare_gpu(const double *x, int64_t n, int d, const double *demand,
			const GcPmParams *params, const Fit *cpu, const char *config)
{
	char		why[256];
	GcRows		pinned;
	Fit			gpu;
	int64_t		mismatched = 0;

	if (!gc_cuda_use_device(0, why, sizeof(why)))
		return;
	load_rows(&pinned, x, n, d, gc_cuda_host_alloc, gc_cuda_host_free);
	gpu = fit(&gc_pmedian_cuda_backend, &pinned, demand, params);
	check(gpu.status == GC_OK, "gpu fit", config);
	for (int64_t i = 0; i < n; i++)
		mismatched += gpu.alloc[i] != cpu->alloc[i] || gpu.dist[i] != cpu->dist[i];
	check(memcmp(gpu.medoids, cpu->medoids, sizeof(int32_t) * params->p) == 0,
		  "gpu medoids equal cpu medoids", config);
	check(mismatched == 0, "gpu allocation equals cpu allocation", config);
	check(gpu.result.objective == cpu->result.objective,
		  "gpu objective equals cpu objective bit for bit", config);
	check(gpu.result.iterations == cpu->result.iterations &&
		  gpu.result.swaps == cpu->result.swaps,
		  "gpu iterations and swaps equal cpu's", config);
	if (mismatched)
		printf("  %lld allocations differ\n", (long long) mismatched);
	free_fit(&gpu);
	gc_rows_release(&pinned);
}
#endif

static void
run_case(int64_t n, int d, int p, GcPmMetric metric, GcPmMethod method,
		 bool capacitated, bool improve)
{
	char		config[128];
	double	   *x;
	double	   *demand = malloc(sizeof(double) * n);
	double		total = 0.0;
	GcRows		rows;
	GcPmParams	params = default_params(p);
	Fit			cpu;

	rng_state = (uint64_t) n * 131 + d * 17 + p * 3 + metric;
	x = make_blobs(n, d, p, 40.0);
	for (int64_t i = 0; i < n; i++)
		total += demand[i] = 1 + floor(uniform() * 5);
	params.metric = metric;
	params.method = method;
	params.improve = improve ? GC_PM_IMPROVE_FULL : GC_PM_IMPROVE_NONE;
	params.capacitated = capacitated;
	params.capacity = 1.1 * total / p;
	params.big_clusters = method == GC_PM_THREE_PHASE ? (int) sqrt((double) p) + 1 : 0;
	snprintf(config, sizeof(config), "n=%lld d=%d p=%d %s %s%s%s", (long long) n, d, p,
			 gc_pmedian_metric_name(metric), gc_pmedian_method_name(method),
			 capacitated ? " capacitated" : "", improve ? " improve" : "");
	load_rows(&rows, x, n, d, plain_alloc, free);
	cpu = fit(&gc_pmedian_cpu_backend, &rows, demand, &params);
	check(cpu.status == GC_OK, "cpu fit", config);
	if (cpu.status == GC_OK)
	{
		check_consistent(&cpu, &rows, x, d, capacitated ? demand : NULL, &params, config);
		if (capacitated)
		{
			/*
			 * soft capacities: the subgradient leaves 1 to 2.3% of the demand
			 * over capacity on these instances, depending on the seeding draw
			 */
			check(cpu.result.violation <= 0.03 * total, "capacity nearly respected", config);
			if (cpu.result.violation > 0.02 * total)
				printf("  violation %g of demand %g\n", cpu.result.violation, total);
		}
#ifdef GC_WITH_CUDA
		compare_gpu(x, n, d, demand, &params, &cpu, config);
#endif
	}
	free_fit(&cpu);
	gc_rows_release(&rows);
	free(x);
	free(demand);
}

/*
 * Eight Gaussian blobs (sigma 1) centred on the vertices of a cube of side
 * 10 in three dimensions, row i in blob i % 8
 */
#define NBLOB 8

static double *
gaussian_blobs(int64_t n)
{
	double	   *x = malloc(sizeof(double) * n * 3);

	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < 3; j++)
		{
			double		u1 = 1.0 - uniform(),
						u2 = uniform();

			x[i * 3 + j] = 10.0 * (((i % NBLOB) >> j) & 1) +
				sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
		}
	return x;
}

/* Blobs holding at most one medoid each (all, when every blob has one) */
static int
blobs_covered(const Fit *f, int p)
{
	int			count[NBLOB] = {0},
				covered = 0;

	for (int m = 0; m < p; m++)
		count[f->medoids[m] % NBLOB]++;
	for (int b = 0; b < NBLOB; b++)
		covered += count[b] > 0;
	return covered;
}

/*
 * The objective of the row nearest each blob's centre as medoids: the
 * optimum of the well-separated blobs up to the sampling noise of a centre
 */
static double
blobs_reference(const double *x, int64_t n)
{
	int64_t		ref[NBLOB];
	double		best[NBLOB],
				total = 0.0;

	for (int b = 0; b < NBLOB; b++)
		best[b] = INFINITY;
	for (int64_t i = 0; i < n; i++)
	{
		int			b = (int) (i % NBLOB);
		double		c[3];

		for (int j = 0; j < 3; j++)
			c[j] = 10.0 * ((b >> j) & 1);
		if (gc_pm_dist(x + i * 3, c, 3, GC_PM_EUCLIDEAN) < best[b])
		{
			best[b] = gc_pm_dist(x + i * 3, c, 3, GC_PM_EUCLIDEAN);
			ref[b] = i;
		}
	}
	for (int64_t i = 0; i < n; i++)
	{
		double		m = INFINITY;

		for (int b = 0; b < NBLOB; b++)
			m = fmin(m, gc_pm_dist(x + i * 3, x + ref[b] * 3, 3, GC_PM_EUCLIDEAN));
		total += m;
	}
	return total;
}

/*
 * Default options on the blobs (method auto, as SQL resolves it): every
 * blob gets a medoid, the objective is within 1% of the reference
 */
static void
test_blobs(int64_t n, uint64_t seed, int cpu_only, int verbose)
{
	char		config[64];
	double	   *x;
	double		ref,
				gpu_objective = -1.0;
	int32_t		gpu_medoids[NBLOB];
	GcPmParams	params = default_params(NBLOB);

	rng_state = 4242 + n;
	x = gaussian_blobs(n);
	ref = blobs_reference(x, n);
	params.method = GC_PM_AUTO;
	params.auto_threshold = 200000;
	params.seed = seed;
	if (getenv("PM_IMPROVE"))	/* benchmarks: 1 none, 3 full */
		params.improve = (GcPmImprove) atoi(getenv("PM_IMPROVE"));
	if (getenv("PM_SEED"))
		params.seed = strtoull(getenv("PM_SEED"), NULL, 10);
	snprintf(config, sizeof(config), "blobs n=%lld default options", (long long) n);
	for (int gpu = cpu_only ? 0 : 1; gpu >= 0; gpu--)
	{
		GcRows		rows;
		const GcPmBackend *backend = NULL;
		Fit			f;

#ifdef GC_WITH_CUDA
		char		why[256];

		if (gpu && gc_cuda_use_device(0, why, sizeof(why)))
		{
			load_rows(&rows, x, n, 3, gc_cuda_host_alloc, gc_cuda_host_free);
			backend = &gc_pmedian_cuda_backend;
		}
#endif
		if (!gpu)
		{
			load_rows(&rows, x, n, 3, plain_alloc, free);
			backend = &gc_pmedian_cpu_backend;
		}
		if (backend == NULL)
			continue;
		f = fit(backend, &rows, NULL, &params);
		check(f.status == GC_OK, "blob fit", config);
		check(blobs_covered(&f, NBLOB) == NBLOB, "every blob gets a medoid", config);
		check(f.result.objective <= 1.01 * ref, "objective within 1% of the blobs' reference", config);
		if (!getenv("PM_IMPROVE"))
			check(f.result.improvement == (n <= GC_PM_IMPROVE_ROWS ? GC_PM_IMPROVE_FULL
										   : GC_PM_IMPROVE_SAMPLE),
				  "the rule's improvement: all rows up to its bound, else the sample", config);
		if (verbose || blobs_covered(&f, NBLOB) != NBLOB)
			printf("blobs n=%lld seed=%llu device=%s method=%s improve=%s blobs_with_medoid=%d/%d "
				   "objective=%.10g reference=%.10g ratio=%.4f ms=%.1f improve_ms=%.1f swaps=%d\n",
				   (long long) n, (unsigned long long) params.seed, backend->name,
				   gc_pmedian_method_name(f.result.method),
				   gc_pmedian_improve_name(f.result.improvement), blobs_covered(&f, NBLOB),
				   NBLOB, f.result.objective, ref, f.result.objective / ref, f.ms,
				   f.result.timings.improve_ms, f.result.swaps);
		if (gpu)
		{
			memcpy(gpu_medoids, f.medoids, sizeof(gpu_medoids));
			gpu_objective = f.result.objective;
		}
		else if (gpu_objective >= 0.0)
			check(memcmp(gpu_medoids, f.medoids, sizeof(gpu_medoids)) == 0 &&
				  gpu_objective == f.result.objective,
				  "gpu medoids and objective equal cpu's", config);
		free_fit(&f);
		gc_rows_release(&rows);
	}
	free(x);
}

/* Loads of a fit: the largest, the medoids within capacity, the demand over */
static void
load_stats(const Fit *f, int64_t n, const double *q, int p, double capacity,
		   double *max_load, int *within, double *over)
{
	double	   *load = calloc(p, sizeof(double));

	for (int64_t i = 0; i < n; i++)
		load[f->alloc[i]] += q[i];
	*max_load = 0.0;
	*within = 0;
	*over = 0.0;
	for (int m = 0; m < p; m++)
	{
		*max_load = fmax(*max_load, load[m]);
		*within += load[m] <= capacity;
		*over += fmax(0.0, load[m] - capacity);
	}
	free(load);
}

/*
 * Hard capacities: soft then hard on blobs with demands; every load within
 * the capacity, the repair's cost is the difference of the objectives
 */
static void
test_hard_capacity(int64_t n, int d, int p, GcPmMethod method, double slack)
{
	char		config[128];
	double	   *x,
			   *demand = malloc(sizeof(double) * n),
				total = 0.0,
				max_load,
				over;
	int			within;
	GcRows		rows;
	GcPmParams	params = default_params(p);
	Fit			soft,
				hard;

	rng_state = (uint64_t) n * 7 + p;
	x = make_blobs(n, d, p / 2, 40.0);	/* fewer blobs than medoids */
	for (int64_t i = 0; i < n; i++)
		total += demand[i] = 1 + floor(uniform() * 9);
	params.method = method;
	params.capacitated = true;
	params.capacity = ceil(slack * total / p);
	params.big_clusters = method == GC_PM_THREE_PHASE ? (int) sqrt((double) p) + 1 : 0;
	snprintf(config, sizeof(config), "hard capacity n=%lld p=%d %s slack %.2f", (long long) n, p,
			 gc_pmedian_method_name(method), slack);
	load_rows(&rows, x, n, d, plain_alloc, free);
	soft = fit(&gc_pmedian_cpu_backend, &rows, demand, &params);
	params.hard_capacity = true;
	hard = fit(&gc_pmedian_cpu_backend, &rows, demand, &params);
	check(soft.status == GC_OK && hard.status == GC_OK, "soft and hard fits", config);
	if (soft.status == GC_OK && hard.status == GC_OK)
	{
		check_consistent(&hard, &rows, x, d, demand, &params, config);
		load_stats(&hard, n, demand, p, params.capacity, &max_load, &within, &over);
		check(max_load <= params.capacity && within == p && hard.result.violation == 0.0,
			  "every load within the hard capacity", config);
		check(soft.result.violation > 0.0, "the soft capacity was exceeded", config);
		check(memcmp(soft.medoids, hard.medoids, sizeof(int32_t) * p) == 0,
			  "the repair keeps the medoids", config);
		check(fabs(hard.result.objective - hard.result.repair_cost - soft.result.objective) <=
			  1e-9 * soft.result.objective, "repair cost is the objective's change", config);
		check(hard.result.repair_moves > 0, "the repair moved rows", config);
#ifdef GC_WITH_CUDA
		compare_gpu(x, n, d, demand, &params, &hard, config);
#endif
	}
	free_fit(&soft);
	free_fit(&hard);
	gc_rows_release(&rows);
	free(x);
	free(demand);
}

/*
 * Whole rows that cannot be packed: three rows of demand 2, two medoids of
 * capacity 3 (total 6 = demand) leave a shortfall of 1; a capacity of 2
 * (total 4 < 6) is an error
 */
static void
test_hard_shortfall(void)
{
	double		x[] = {0, 0, 1, 0, 10, 0};
	double		q[] = {2, 2, 2};
	GcRows		rows;
	GcPmParams	params = default_params(2);
	Fit			f;

	load_rows(&rows, x, 3, 2, plain_alloc, free);
	params.capacitated = true;
	params.hard_capacity = true;
	params.capacity = 3.0;
	f = fit(&gc_pmedian_cpu_backend, &rows, q, &params);
	check(f.status == GC_OK && f.result.violation == 1.0,
		  "unpackable demand: a shortfall of one unit is reported", "hard shortfall");
	free_fit(&f);
	params.capacity = 2.0;
	printf("(expected) ");
	f = fit(&gc_pmedian_cpu_backend, &rows, q, &params);
	check(f.status == GC_ERR_RANGE, "total demand above total capacity is an error", "hard shortfall");
	free_fit(&f);
	gc_rows_release(&rows);
}

/* Without the improvement the blobs are missed: the case discriminates */
static void
test_blobs_undefaulted(int64_t n, uint64_t seed, int expected)
{
	double	   *x;
	GcRows		rows;
	GcPmParams	params = default_params(NBLOB);
	Fit			f;

	rng_state = 4242 + n;
	x = gaussian_blobs(n);
	params.seed = seed;
	params.improve = GC_PM_IMPROVE_NONE;
	load_rows(&rows, x, n, 3, plain_alloc, free);
	f = fit(&gc_pmedian_cpu_backend, &rows, NULL, &params);
	check(f.status == GC_OK && blobs_covered(&f, NBLOB) == expected,
		  "location-allocation alone misses blobs here", "blobs without improvement");
	free_fit(&f);
	gc_rows_release(&rows);
	free(x);
}

/* ---------------------------------------------------------------------
 * TSPLIB benchmarks
 * ---------------------------------------------------------------------
 */
static double *
read_tsp(const char *path, int64_t *n)
{
	char		cmd[1024],
				line[512];
	FILE	   *in;
	int64_t		cap = 1024;
	double	   *x = malloc(sizeof(double) * 2 * cap);
	int			coords = 0;

	snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
	in = popen(cmd, "r");
	*n = 0;
	while (in && fgets(line, sizeof(line), in))
	{
		long		id;
		double		a,
					b;

		if (strncmp(line, "NODE_COORD_SECTION", 18) == 0)
			coords = 1;
		else if (strncmp(line, "EOF", 3) == 0)
			break;
		else if (coords && sscanf(line, "%ld %lf %lf", &id, &a, &b) == 3)
		{
			if (*n == cap)
				x = realloc(x, sizeof(double) * 2 * (cap *= 2));
			x[2 * *n] = a;
			x[2 * *n + 1] = b;
			(*n)++;
		}
	}
	if (in)
		pclose(in);
	return x;
}

/* The paper's demands: q_i = (107 floor|x_i| + 97 floor|y_i|) mod 29 + 1 */
static double *
paper_demand(const double *x, int64_t n, double *total)
{
	double	   *q = malloc(sizeof(double) * n);

	*total = 0.0;
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		v = (107 * (int64_t) floor(fabs(x[2 * i])) +
						 97 * (int64_t) floor(fabs(x[2 * i + 1]))) % 29 + 1;

		*total += q[i] = (double) v;
	}
	return q;
}

static const GcPmBackend *
bench_backend(int gpu, GcRows *rows, const double *x, int64_t n)
{
#ifdef GC_WITH_CUDA
	char		why[256];

	if (gpu)
	{
		if (!gc_cuda_use_device(0, why, sizeof(why)))
		{
			printf("no GPU: %s\n", why);
			return NULL;
		}
		load_rows(rows, x, n, 2, gc_cuda_host_alloc, gc_cuda_host_free);
		return &gc_pmedian_cuda_backend;
	}
#else
	if (gpu)
		return NULL;
#endif
	load_rows(rows, x, n, 2, plain_alloc, free);
	return &gc_pmedian_cpu_backend;
}

static void
bench_phases(const char *path, int iters, int cpu_only)
{
	int64_t		n;
	double	   *x = read_tsp(path, &n);
	double		total;
	double	   *q = paper_demand(x, n, &total);
	GcPmParams	params = default_params((int) ceil(total / 290.0));

	params.method = GC_PM_THREE_PHASE;
	params.capacitated = true;
	params.capacity = 300.0;
	params.max_iter = iters;
	params.polish_iter = getenv("PM_POLISH") ? atoi(getenv("PM_POLISH")) : 0;
	if (getenv("PM_PENALTY_STEP"))
		params.penalty_step = atof(getenv("PM_PENALTY_STEP"));
	for (int gpu = cpu_only ? 0 : 1; gpu >= 0; gpu--)
	{
		GcRows		rows;
		const GcPmBackend *backend = bench_backend(gpu, &rows, x, n);
		Fit			f;

		if (backend == NULL)
			continue;
		if (gpu)				/* warm-up: context creation */
		{
			f = fit(backend, &rows, q, &params);
			free_fit(&f);
		}
		f = fit(backend, &rows, q, &params);
		printf("phases %s n=%lld p=%d iter=%d device=%s sample_ms=%.1f global_ms=%.2f "
			   "small_ms=%.1f transfer_ms=%.1f objective=%.6g violation=%.6g\n",
			   path, (long long) n, params.p, iters, backend->name,
			   f.result.timings.sample_ms, f.result.timings.global_ms,
			   f.result.timings.small_ms, f.result.timings.transfer_ms,
			   f.result.objective, f.result.violation);
		fflush(stdout);
		free_fit(&f);
		gc_rows_release(&rows);
	}
	free(x);
	free(q);
}

static void
bench_quality(const char *path, int p, int cpu_only)
{
	int64_t		n;
	double	   *x = read_tsp(path, &n);
	GcPmParams	params = default_params(p);

	params.max_iter = 300;
	if (getenv("PM_METHOD"))
		params.method = (GcPmMethod) atoi(getenv("PM_METHOD"));
	for (int gpu = cpu_only ? 0 : 1; gpu >= 0; gpu--)
	{
		GcRows		rows;
		const GcPmBackend *backend = bench_backend(gpu, &rows, x, n);

		if (backend == NULL)
			continue;
		/* without the improvement, then the default (the rule chooses) */
		for (int imp = getenv("PM_DEFAULT_ONLY") ? 1 : 0; imp <= 1; imp++)
		{
			Fit			f;

			params.improve = imp ? GC_PM_IMPROVE_AUTO : GC_PM_IMPROVE_NONE;
			f = fit(backend, &rows, NULL, &params);
			printf("quality %s n=%lld p=%d device=%s method=%s options=%s improve=%s objective=%.10g ms=%.1f "
				   "iterations=%d swaps=%d location_ms=%.1f improve_ms=%.1f\n",
				   path, (long long) n, p, backend->name,
				   gc_pmedian_method_name(f.result.method), imp ? "default" : "none",
				   gc_pmedian_improve_name(f.result.improvement), f.result.objective, f.ms,
				   f.result.iterations, f.result.swaps, f.result.timings.location_ms,
				   f.result.timings.improve_ms);
			fflush(stdout);
			free_fit(&f);
		}
		gc_rows_release(&rows);
	}
	free(x);
}

/*
 * The paper's demands with p medoids of capacity Q, default options, soft
 * then hard capacities: loads and objectives
 */
static void
bench_hard(const char *path, int p, double capacity, int cpu_only)
{
	int64_t		n;
	double	   *x = read_tsp(path, &n);
	double		total;
	double	   *q = paper_demand(x, n, &total);
	GcPmParams	params = default_params(p);

	params.method = GC_PM_AUTO;
	params.auto_threshold = 200000;
	params.capacitated = true;
	params.capacity = capacity;
	if (getenv("PM_ITER"))
		params.max_iter = params.polish_iter = atoi(getenv("PM_ITER"));
	if (getenv("PM_METHOD"))
		params.method = (GcPmMethod) atoi(getenv("PM_METHOD"));
	for (int gpu = cpu_only ? 0 : 1; gpu >= 0; gpu--)
	{
		GcRows		rows;
		const GcPmBackend *backend = bench_backend(gpu, &rows, x, n);

		if (backend == NULL)
			continue;
		for (int hard = getenv("PM_HARD_ONLY") ? 1 : 0; hard <= 1; hard++)
		{
			Fit			f;
			double		max_load,
						over;
			int			within;

			params.hard_capacity = hard;
			f = fit(backend, &rows, q, &params);
			load_stats(&f, n, q, p, capacity, &max_load, &within, &over);
			printf("capacity %s n=%lld p=%d Q=%g demand=%.0f device=%s mode=%s objective=%.10g "
				   "repair_cost=%.6g moves=%lld max_load=%g within=%.1f%% over=%.2f%% "
				   "violation=%g ms=%.1f repair_ms=%.1f\n",
				   path, (long long) n, p, capacity, total, backend->name,
				   hard ? "hard" : "soft", f.result.objective, f.result.repair_cost,
				   (long long) f.result.repair_moves, max_load, 100.0 * within / p,
				   100.0 * over / total, f.result.violation, f.ms,
				   f.result.timings.repair_ms);
			fflush(stdout);
			free_fit(&f);
		}
		gc_rows_release(&rows);
	}
	free(x);
	free(q);
}

/* What a fit reported to its progress callback */
typedef struct Reports
{
	int			calls;
	int			iterating;		/* ITERATING reports */
	GcPhase		first,
				second;
	bool		in_order;		/* phases never went back, iterations never down */
	GcPhase		last_phase;
	int			last_iteration;
	double		last_inertia;
	int			with_inertia;	/* ITERATING reports with an objective */
} Reports;

static void
record_report(void *arg, GcPhase phase, int iteration, double shift, double inertia)
{
	Reports    *r = arg;

	if (r->calls == 0)
		r->first = phase;
	else if (r->calls == 1)
		r->second = phase;
	if (r->calls > 0 && (phase < r->last_phase || iteration < r->last_iteration || !isnan(shift)))
		r->in_order = false;
	r->calls++;
	r->iterating += phase == GC_PHASE_ITERATING;
	r->with_inertia += phase == GC_PHASE_ITERATING && !isnan(inertia);
	r->last_phase = phase;
	r->last_iteration = iteration;
	r->last_inertia = inertia;
}

/*
 * The progress a fit reports: uploading, seeding, then an iterating report
 * per location-allocation iteration (numbered over the whole fit) and per
 * swap, the last of them with the final objective where the last problem
 * is the whole one
 */
static void
test_progress(int gpu)
{
	int64_t		n = 3000;
	double	   *x = make_blobs(n, 2, 12, 40.0);
	GcRows		rows;
	const GcPmBackend *backend = bench_backend(gpu, &rows, x, n);
	GcPmMethod	methods[] = {GC_PM_LOCATION_ALLOCATION, GC_PM_LOCATION_ALLOCATION,
	GC_PM_THREE_PHASE};
	GcPmImprove improves[] = {GC_PM_IMPROVE_NONE, GC_PM_IMPROVE_AUTO, GC_PM_IMPROVE_NONE};

	if (backend == NULL)
	{
		free(x);
		return;
	}
	for (int c = 0; c < 3; c++)
	{
		GcPmParams	params = default_params(12);
		Reports		r = {.in_order = true};
		Fit			f;
		char		config[96];

		params.method = methods[c];
		params.improve = improves[c];
		params.big_clusters = 4;
		params.progress = record_report;
		params.progress_arg = &r;
		f = fit(backend, &rows, NULL, &params);
		snprintf(config, sizeof(config), "%s method=%d improve=%d swaps=%d iterations=%d",
				 backend->name, (int) methods[c], (int) improves[c], f.result.swaps,
				 f.result.iterations);
		check(f.status == GC_OK, "progress: the fit succeeds", config);
		check(r.first == GC_PHASE_UPLOADING && r.second == GC_PHASE_SEEDING && r.in_order,
			  "progress: uploading, seeding, then iterating, in order", config);
		check(r.iterating == f.result.iterations + f.result.swaps,
			  "progress: a report per iteration and per swap", config);
		check(r.last_iteration == f.result.iterations,
			  "progress: the iterations of the whole fit", config);
		if (c < 2)
			check(r.with_inertia == r.iterating && r.last_inertia == f.result.objective &&
				  f.result.converged,
				  "progress: the objective of every report, the last the fit's", config);
		else
			check(r.with_inertia > 0 && r.with_inertia < r.iterating &&
				  (!f.result.converged || r.last_inertia == f.result.objective),
				  "progress: three_phase's objective in its polish only", config);
		free_fit(&f);
	}
	gc_rows_release(&rows);
	free(x);
}

int
main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "capacity") == 0)
	{
		bench_hard(argv[2], atoi(argv[3]), atof(argv[4]), argc > 5);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "phases") == 0)
	{
		bench_phases(argv[2], atoi(argv[3]), argc > 4);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "quality") == 0)
	{
		bench_quality(argv[2], atoi(argv[3]), argc > 4);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "blobs") == 0)
	{
		test_blobs(atoll(argv[2]), 0, argc > 3, 1);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	if (argc == 3 && strcmp(argv[1], "points") == 0)
	{
		int64_t		n;
		double	   *x = read_tsp(argv[2], &n);

		for (int64_t i = 0; i < n; i++)
			printf("%.17g %.17g\n", x[2 * i], x[2 * i + 1]);
		free(x);
		return 0;
	}
	test_brute_force();
	for (int metric = 0; metric < 4; metric++)
	{
		test_swap_exact(2000, 2 + metric % 2, 9, (GcPmMetric) metric);
		run_case(3000, 2, 12, (GcPmMetric) metric, GC_PM_LOCATION_ALLOCATION, false, false);
		run_case(3000, 5, 12, (GcPmMetric) metric, GC_PM_LOCATION_ALLOCATION, false, true);
	}
	run_case(4000, 2, 20, GC_PM_EUCLIDEAN, GC_PM_LOCATION_ALLOCATION, true, false);
	run_case(4000, 3, 20, GC_PM_MANHATTAN, GC_PM_LOCATION_ALLOCATION, true, false);
	run_case(20000, 2, 100, GC_PM_EUCLIDEAN, GC_PM_THREE_PHASE, false, false);
	run_case(20000, 2, 100, GC_PM_EUCLIDEAN, GC_PM_THREE_PHASE, true, false);
	run_case(6000, 17, 30, GC_PM_SQEUCLIDEAN, GC_PM_THREE_PHASE, false, true);
#ifdef GC_WITH_CUDA
	/*
	 * few wide rows: the GPU's locate step runs in spans of members (64 at
	 * d = 65,536) polled apart, each carrying its sums on, and still adds
	 * every cluster's members in order
	 */
	check(gc_poll_gpu_items(gc_gpu_pass_units(140, 65536), 1, 70) < 70,
		  "a cluster of 70 wide members spans two launches", "n=140 d=65536 p=2");
	run_case(140, 65536, 2, GC_PM_EUCLIDEAN, GC_PM_LOCATION_ALLOCATION, false, true);
#endif
	test_hard_capacity(4000, 2, 20, GC_PM_LOCATION_ALLOCATION, 1.02);
	test_hard_capacity(20000, 2, 100, GC_PM_THREE_PHASE, 1.04);
	test_hard_shortfall();
	/*
	 * location-allocation alone leaves one blob without a medoid (seed 0,
	 * 20 000 rows) and two (seed 3, 33 000 rows); the default fixes both,
	 * over all rows and over the sample
	 */
	test_blobs_undefaulted(20000, 0, 7);
	test_blobs_undefaulted(33000, 3, 6);
	test_blobs(20000, 0, 0, 0);
	test_blobs(33000, 3, 0, 0);
	test_progress(0);
#ifdef GC_WITH_CUDA
	test_progress(1);
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
