/*-------------------------------------------------------------------------
 *
 * engine_test.c
 *	  Engine tests without a server: fits k-means on generated blobs with
 *	  the CPU reference and, where a GPU is usable, the CUDA backend, and
 *	  checks that they agree (labels equal, centroids equal to the last
 *	  bit, inertia within 1e-9 relative), that known centres are
 *	  recovered, and that the result does not depend on row order.
 *
 *	  engine_test              run the checks, ending with "N passed, N failed"
 *	  engine_test bench N D K DATA ALGORITHM PRECISION MAX_ITER
 *							   time GPU fits; DATA is uniform, gauss:VARIANCE
 *							   (clusters around K uniform centres in the unit
 *							   cube) or file:PATH (N x D little-endian doubles)
 *
 * IDENTIFICATION
 *	  test/engine/engine_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"
#include "gc_math.h"
#include "gc_stream.h"
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

static double
normal(void)
{
	double		u = uniform() + 1e-300,
				v = uniform();

	return sqrt(-2.0 * log(u)) * cos(2 * M_PI * v);
}

static void *
plain_alloc(size_t bytes)
{
	return malloc(bytes);
}

/* n points around k centres in [-100, 100]^d, or uniform when sigma < 0 */
static double *
make_data(int64_t n, int d, int k, double sigma, double *centres, int *truth)
{
	double	   *x = malloc(sizeof(double) * n * d);

	for (int c = 0; c < k * d; c++)
		centres[c] = -100 + 200 * uniform();
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (i % k);

		if (truth)
			truth[i] = c;
		for (int j = 0; j < d; j++)
			x[i * d + j] = sigma < 0 ? uniform() : centres[c * d + j] + sigma * normal();
	}
	return x;
}

static void
load_rows(GcRows *rows, const double *x, int64_t n, int d, const int64_t *order,
		  GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(rows, &err);

		memcpy(slot, x + (order ? order[i] : i) * d, sizeof(double) * d);
		gc_rows_commit(rows);
	}
}

typedef struct Fit
{
	double	   *centroids;
	int64_t    *sizes;
	int32_t    *labels;
	GcKmeansResult result;
	GcStatus	status;
} Fit;

static Fit
fit_with(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed,
		 GcAlgorithm algorithm, GcPrecision precision, int max_iter, double tol)
{
	Fit			f;
	GcKmeansParams params = {0};
	GcError		err = {0};

	params.k = k;
	params.max_iter = max_iter;
	params.tol = tol;
	params.algorithm = algorithm;
	params.precision = precision;
	params.init = GC_INIT_KMEANSPP;
	params.seed = seed;
	params.n_init = 1;
	f.centroids = malloc(sizeof(double) * k * rows->d);
	f.sizes = malloc(sizeof(int64_t) * k);
	f.labels = malloc(sizeof(int32_t) * rows->n);
	memset(&f.result, 0, sizeof(f.result));
	f.result.centroids = f.centroids;
	f.result.sizes = f.sizes;
	f.result.labels = f.labels;
	f.status = gc_kmeans_fit(backend, rows, &params, &f.result, &err);
	if (f.status != GC_OK)
		printf("fit failed: %s\n", err.message);
	return f;
}

static Fit
fit(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed)
{
	return fit_with(backend, rows, k, seed, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 300, 1e-4);
}

/* The fit b must equal the reference a: labels, centroids to the bit, sizes */
static void
check_same_fit(const Fit *a, const Fit *b, int64_t n, int k, int d,
			   const char *what, const char *config)
{
	int64_t		mismatched = 0;
	char		label[160];

	for (int64_t i = 0; i < n; i++)
		mismatched += a->labels[i] != b->labels[i];
	snprintf(label, sizeof(label), "%s: status ok", what);
	check(b->status == GC_OK, label, config);
	snprintf(label, sizeof(label), "%s: labels equal (%lld differ)", what, (long long) mismatched);
	check(mismatched == 0, label, config);
	snprintf(label, sizeof(label), "%s: centroids equal to the bit", what);
	check(memcmp(a->centroids, b->centroids, sizeof(double) * k * d) == 0, label, config);
	snprintf(label, sizeof(label), "%s: sizes equal", what);
	check(memcmp(a->sizes, b->sizes, sizeof(int64_t) * k) == 0, label, config);
	snprintf(label, sizeof(label), "%s: inertia within 1e-9", what);
	check(fabs(a->result.inertia - b->result.inertia) <= 1e-9 * a->result.inertia, label, config);
	snprintf(label, sizeof(label), "%s: iterations equal", what);
	check(a->result.iterations == b->result.iterations, label, config);
}

static void
free_fit(Fit *f)
{
	free(f->centroids);
	free(f->sizes);
	free(f->labels);
}

/* Every true cluster maps to one found cluster, and the map is 1-1 */
static int
recovers(const int *truth, const int32_t *labels, int64_t n, int k)
{
	int		   *map = malloc(sizeof(int) * k);
	int		   *used = calloc(k, sizeof(int));
	int			ok = 1;

	for (int c = 0; c < k; c++)
		map[c] = -1;
	for (int64_t i = 0; i < n && ok; i++)
	{
		if (map[truth[i]] < 0)
		{
			map[truth[i]] = labels[i];
			ok = !used[labels[i]]++;
		}
		else
			ok = map[truth[i]] == labels[i];
	}
	free(map);
	free(used);
	return ok;
}

static void
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

				if (variants[v].precision == GC_PRECISION_TF32 ||
					variants[v].precision == GC_PRECISION_BF16)
				{
					/*
					 * TF32 and bf16 round inputs to 10 and 7 bits: close, not
					 * identical; bf16 is for spread-out data such as
					 * embeddings, and on 1000 tight clusters in 4-d its
					 * inertia is off by more
					 */
					double		tolerance = variants[v].precision == GC_PRECISION_BF16 ? 0.05 : 0.01;
					int64_t		mismatched = 0;

					for (int64_t i = 0; i < n; i++)
						mismatched += gpu.labels[i] != cpu.labels[i];
					char		what[96];

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

#ifdef GC_WITH_CUDA
/*
 * Exact labels from the tensor cores: float32 Lloyd on a shape that takes
 * the TF32 screen (d >= 12, k >= 128; below d = 12 the test asks for it
 * through GPUCLUST_BENCH_KERNEL, so that the narrow column steps stay
 * tested) must equal the CPU's fit to the bit, on blobs (few doubtful
 * points) and on uniform data (many, labelled again by 3xTF32 and some
 * exactly).  On blobs, bf16 products must find the same clusters: their
 * error is far below the gaps between blobs.
 */
static void
run_tensor_case(int64_t n, int d, int k, double sigma)
{
	char		config[80];
	char		why[256];
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x;
	GcRows		rows,
				pinned;
	Fit			cpu,
				gpu;

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		free(centres);
		return;
	}
	snprintf(config, sizeof(config), "tensor n=%lld d=%d k=%d sigma=%g", (long long) n, d, k, sigma);
	rng_state = (uint64_t) n * 17 + d * 5 + k;
	x = make_data(n, d, k, sigma, centres, NULL);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	cpu = fit_with(&gc_kmeans_cpu_backend, &rows, k, 3, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32,
				   30, 0.0);
	if (d < 12)
		setenv("GPUCLUST_BENCH_KERNEL", "tensor", 1);
	gpu = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 3, GC_ALGORITHM_AUTO, GC_PRECISION_FLOAT32,
				   30, 0.0);
	unsetenv("GPUCLUST_BENCH_KERNEL");
	check(gpu.status == GC_OK && gpu.result.kernel != NULL &&
		  strncmp(gpu.result.kernel, "tensor_", 7) == 0, "gpu used a tensor kernel", config);
	printf("%s: kernel %s\n", config, gpu.result.kernel ? gpu.result.kernel : "?");
	check_same_fit(&cpu, &gpu, n, k, d, "gpu tensor float32", config);
	if (sigma > 0)
	{
		Fit			bf16 = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 3, GC_ALGORITHM_LLOYD,
									GC_PRECISION_BF16, 30, 0.0);
		int64_t		mismatched = 0;
		char		what[96];

		for (int64_t i = 0; i < n; i++)
			mismatched += bf16.labels[i] != cpu.labels[i];
		/* near-ties where k-means++ split a blob can go either way */
		snprintf(what, sizeof(what), "gpu bf16: at most 1%% of labels differ (%lld do)",
				 (long long) mismatched);
		check(bf16.status == GC_OK && mismatched <= n / 100, what, config);
		check(fabs(bf16.result.inertia - cpu.result.inertia) <= 1e-4 * cpu.result.inertia,
			  "gpu bf16: inertia within 1e-4", config);
		free_fit(&bf16);
	}
	free_fit(&cpu);
	free_fit(&gpu);
	gc_rows_release(&rows);
	gc_rows_release(&pinned);
	free(x);
	free(centres);
}
#endif

static double *
load_file(const char *path, int64_t n, int d)
{
	FILE	   *f = fopen(path, "rb");
	double	   *x = malloc(sizeof(double) * n * d);

	if (f == NULL || fread(x, sizeof(double) * d, n, f) != (size_t) n)
	{
		printf("cannot read %lld rows of %d doubles from %s\n", (long long) n, d, path);
		exit(2);
	}
	fclose(f);
	return x;
}

/* Gaussian clusters of variance var around k uniform centres in [0,1]^d */
static double *
make_gaussian(int64_t n, int d, int k, double var)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = malloc(sizeof(double) * n * d);

	for (int c = 0; c < k * d; c++)
		centres[c] = uniform();
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (uniform() * k);

		for (int j = 0; j < d; j++)
			x[i * d + j] = centres[(size_t) c * d + j] + sqrt(var) * normal();
	}
	free(centres);
	return x;
}

static void
bench(int64_t n, int d, int k, const char *data, const char *algorithm,
	  const char *precision, int max_iter)
{
#ifdef GC_WITH_CUDA
	char		why[256];
	double	   *x;
	GcRows		rows;
	Fit			gpu;
	GcAlgorithm alg = strcmp(algorithm, "lloyd") == 0 ? GC_ALGORITHM_LLOYD :
		strcmp(algorithm, "pruned") == 0 ? GC_ALGORITHM_PRUNED : GC_ALGORITHM_AUTO;
	GcPrecision prec = strcmp(precision, "float64") == 0 ? GC_PRECISION_FLOAT64 :
		strcmp(precision, "tf32") == 0 ? GC_PRECISION_TF32 :
		strcmp(precision, "bf16") == 0 ? GC_PRECISION_BF16 : GC_PRECISION_FLOAT32;
	double		per_iteration;

	rng_state = 42;
	if (strncmp(data, "file:", 5) == 0)
		x = load_file(data + 5, n, d);
	else if (strncmp(data, "gauss:", 6) == 0)
		x = make_gaussian(n, d, k, atof(data + 6));
	else
	{
		double	   *centres = malloc(sizeof(double) * k * d);

		x = make_data(n, d, k, -1.0, centres, NULL);
		free(centres);
	}
	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		return;
	}
	{
		double		t0 = gc_now_ms(),
					t_plain;

		load_rows(&rows, x, n, d, NULL, plain_alloc, free);
		t_plain = gc_now_ms() - t0;
		gc_rows_release(&rows);
		t0 = gc_now_ms();
		load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
		fprintf(stderr, "row store fill n=%lld d=%d: %.1f ms pinned, %.1f ms malloc\n",
				(long long) n, d, gc_now_ms() - t0, t_plain);
	}
	gpu = fit_with(&gc_kmeans_cuda_backend, &rows, k, 0, alg, prec, 2, 0.0);	/* warm-up */
	free_fit(&gpu);
	/*
	 * The median of three fits: an iteration waits for the host to read its
	 * status, whose jitter (tens of microseconds) is 10% of a 0.4 ms
	 * iteration.  The final scoring pass costs about one iteration.
	 */
	{
		double		times[3];

		for (int r = 0; r < 3; r++)
		{
			if (r > 0)
				free_fit(&gpu);
			gpu = fit_with(&gc_kmeans_cuda_backend, &rows, k, 0, alg, prec, max_iter, 0.0);
			times[r] = gpu.result.timings.iterations_ms / (gpu.result.iterations + 1);
		}
		per_iteration = fmax(fmin(times[0], times[1]),
							 fmin(fmax(times[0], times[1]), times[2]));
	}
	printf("{\"n\": %lld, \"d\": %d, \"k\": %d, \"data\": \"%s\", \"algorithm\": \"%s\", "
		   "\"ran\": \"%s\", \"kernel\": \"%s\", \"precision\": \"%s\", \"iterations\": %d, "
		   "\"ms_per_iteration\": %.4f, \"tflops\": %.2f, \"skipped\": %.4f, "
		   "\"labeling_ms_per_iteration\": %.4f, \"update_ms_per_iteration\": %.4f, "
		   "\"transfer_ms\": %.2f, \"seeding_ms\": %.2f, \"inertia\": %.10g, "
		   "\"rechecked\": %.4f, \"exact_checked\": %.6f}\n",
		   (long long) n, d, k, strncmp(data, "file:", 5) == 0 ? "file" : data, algorithm,
		   gpu.result.pruned ? "pruned" : "lloyd", gpu.result.kernel, precision,
		   gpu.result.iterations, per_iteration,
		   2.0 * n * k * d / (per_iteration * 1e9), gpu.result.skipped_fraction,
		   gpu.result.timings.labeling_ms / gpu.result.iterations,
		   gpu.result.timings.update_ms / gpu.result.iterations,
		   gpu.result.timings.transfer_ms, gpu.result.timings.seeding_ms,
		   gpu.result.inertia, gpu.result.rechecked_fraction, gpu.result.exact_fraction);
	fflush(stdout);
	free_fit(&gpu);
	gc_rows_release(&rows);
	free(x);
#else
	printf("built without CUDA\n");
#endif
}

/*
 * Weighted rows: integer weights must give the fit of the rows repeated
 * that many times, to the bit (from the same initial centroids, and from
 * k-means++, whose race weighs rows the same way); the CUDA backend must
 * give the CPU's fit to the bit; weights that are not whole numbers are
 * refused
 */
static void
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

/* Sum of squared distances of n rows to their nearest of k centroids */
static double
ssq(const double *x, int64_t n, int d, const double *centroids, int k)
{
	double		total = 0.0;

	for (int64_t i = 0; i < n; i++)
	{
		double		d2;

		gc_nearest_centroid(x + i * d, centroids, k, d, &d2);
		total += d2;
	}
	return total;
}

/* A stream over rows [from, to) of x */
static void
stream_rows(GcStream *s, const GcStreamHeader *shape, const GcKmeansBackend *backend,
			const double *x, int64_t from, int64_t to, int d)
{
	GcError		err = {0};

	gc_stream_init(s, shape, backend, plain_alloc, free, NULL, &err);
	for (int64_t i = from; i < to; i++)
	{
		memcpy(gc_stream_reserve(s, &err), x + i * d, sizeof(double) * d);
		gc_stream_commit(s, &err);
	}
}

/* Weighted k-means over a stream's summary: centroids, and their SSQ over x */
static double
stream_ssq(const GcStream *s, const GcKmeansBackend *backend, const double *x,
		   int64_t n, int d, int k)
{
	GcKmeansParams params = {0};
	GcKmeansResult result;
	GcError		err = {0};
	double	   *centroids = malloc(sizeof(double) * k * d);
	int64_t    *weights = malloc(sizeof(int64_t) * k);
	int64_t		total = 0;
	double		v;

	params.k = k;
	params.max_iter = 300;
	params.tol = 1e-4;
	params.n_init = 30;			/* kmeans_stream_model's default */
	check(gc_stream_fit(s, backend, &params, centroids, weights, &result, &err) == GC_OK,
		  "stream fit succeeds", backend->name);
	for (int c = 0; c < k; c++)
		total += weights[c];
	check(total == s->rows, "stream model weights sum to the rows", "stream");
	v = ssq(x, n, d, centroids, k);
	free(centroids);
	free(weights);
	return v;
}

/*
 * Streamed summaries: quality against a direct fit, merges of 16 pieces,
 * levels within their bounds, and an encoding that decodes to the same
 * summary
 */
static void
run_stream_case(int64_t n, int d, int k)
{
	double	   *centres = malloc(sizeof(double) * k * d);
	double	   *x = make_data(n, d, k, 5.0, centres, NULL);
	GcStreamHeader shape = {0};
	GcStream	whole,
				merged;
	GcRows		rows;
	Fit			direct;
	double		direct_ssq,
				whole_ssq,
				merged_ssq;
	GcError		err = {0};
	char		config[64];
	int			bounded = 1;

	snprintf(config, sizeof(config), "stream n=%lld d=%d k=%d", (long long) n, d, k);
	shape.d = d;
	shape.k = k;
	shape.m = 10 * k;
	shape.block_rows = 2000;
	shape.seed = 7;
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	direct = fit_with(&gc_kmeans_cpu_backend, &rows, k, 0, GC_ALGORITHM_AUTO,
					  GC_PRECISION_FLOAT64, 300, 1e-4);
	direct_ssq = ssq(x, n, d, direct.centroids, k);

	stream_rows(&whole, &shape, &gc_kmeans_cpu_backend, x, 0, n, d);
	for (int l = 1; l < whole.nlevels; l++)
		bounded &= whole.levels[l].count <= GC_STREAM_FANOUT * shape.m;
	check(bounded && whole.block.n < shape.block_rows, "levels within their bounds", config);
	check(whole.nlevels >= 2, "rows reached level 1", config);
	whole_ssq = stream_ssq(&whole, &gc_kmeans_cpu_backend, x, n, d, k);
	check(whole_ssq <= 1.05 * direct_ssq, "one stream: SSQ within 5% of a direct fit", config);

	gc_stream_init(&merged, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
	for (int p = 0; p < 16; p++)
	{
		GcStream	piece;
		GcStreamHeader h;
		size_t		len;
		uint8_t    *buf;

		stream_rows(&piece, &shape, &gc_kmeans_cpu_backend, x, n * p / 16, n * (p + 1) / 16, d);
		gc_stream_compact(&piece, &err);
		len = gc_stream_encoded_bytes(&piece);
		buf = malloc(len);
		gc_stream_encode(&piece, buf, len);
		check(gc_stream_decode(buf, len, &h) == NULL, "an encoded piece decodes", config);
		check(h.rows == piece.rows && h.total == gc_stream_points(&piece),
			  "a decoded piece has the piece's counts", config);
		if (p % 2)
			gc_stream_merge_encoded(&merged, buf, &h, &err);
		else
			gc_stream_merge(&merged, &piece, &err);
		free(buf);
		gc_stream_release(&piece);
	}
	check(err.status == GC_OK, "merges succeed", config);
	check(merged.rows == n, "a merge of 16 pieces counts every row", config);
	merged_ssq = stream_ssq(&merged, &gc_kmeans_cpu_backend, x, n, d, k);
	check(merged_ssq <= 1.05 * direct_ssq, "16 merged pieces: SSQ within 5% of a direct fit",
		  config);
	printf("%s: SSQ ratio one stream %.4f, 16 merged %.4f, levels %d\n", config,
		   whole_ssq / direct_ssq, merged_ssq / direct_ssq, whole.nlevels);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcStream	on_gpu;
			double		gpu_ssq;

			/* blocks and weighted levels on the GPU, then the model on the GPU */
			stream_rows(&on_gpu, &shape, &gc_kmeans_cuda_backend, x, 0, n, d);
			check(on_gpu.rows == n && on_gpu.nlevels == whole.nlevels,
				  "gpu stream: every row, as many levels as on the cpu", config);
			gpu_ssq = stream_ssq(&on_gpu, &gc_kmeans_cuda_backend, x, n, d, k);
			check(gpu_ssq <= 1.05 * direct_ssq, "gpu stream: SSQ within 5% of a direct fit",
				  config);
			printf("%s: SSQ ratio gpu stream %.4f\n", config, gpu_ssq / direct_ssq);
			gc_stream_release(&on_gpu);
		}
	}
#endif

	gc_stream_release(&whole);
	gc_stream_release(&merged);
	gc_rows_release(&rows);
	free_fit(&direct);
	free(x);
	free(centres);
}

/* Rewrite the checksum of a summary whose bytes were changed on purpose */
static void
reseal(uint8_t *buf, size_t len)
{
	gc_stream_seal(buf, len);
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/*
 * The decoder rejects each kind of malformed summary (regression cases
 * for the fuzz target's findings and the list)
 */
static void
run_stream_format_cases(void)
{
	static const double point[2] = {1.0, 2.0};
	GcStreamHeader h = {0},
				got;
	size_t		len;
	uint8_t    *good,
			   *bad;
	double		nan = NAN;

	h.d = 2;
	h.k = 1;
	h.m = 2;
	h.block_rows = 4;
	h.nlevels = 2;
	h.rows = 4;
	h.counts[0] = 1;
	h.counts[1] = 1;
	h.total = 2;
	len = gc_stream_encoded_size(h.d, h.nlevels, h.total);
	good = calloc(1, len);
	bad = malloc(len + 8);
	gc_stream_put_header(good, &h);
	gc_stream_put_point(good, &h, 0, 1.0, point);
	gc_stream_put_point(good, &h, 1, 3.0, point);
	gc_stream_seal(good, len);
	check(gc_stream_decode(good, len, &got) == NULL && got.total == 2 && got.rows == 4,
		  "a valid summary decodes", "format");

#define EXPECT_BAD(what, mutate, length, resealed) \
	do { \
		memcpy(bad, good, len); \
		mutate; \
		if (resealed) \
			reseal(bad, length); \
		check(gc_stream_decode(bad, length, &got) != NULL, what, "format"); \
	} while (0)

	EXPECT_BAD("empty value", (void) 0, 0, 0);
	EXPECT_BAD("truncated header", (void) 0, 20, 0);
	EXPECT_BAD("truncated points", (void) 0, len - 8, 0);
	EXPECT_BAD("a byte past the end", bad[len] = 0, len + 1, 0);
	EXPECT_BAD("bad magic", bad[0] = 'X', len, 1);
	EXPECT_BAD("wrong version", bad[4] = 2, len, 1);
	EXPECT_BAD("unknown flags", bad[6] = 1, len, 1);
	EXPECT_BAD("zero dimension", put32(bad + 8, 0), len, 1);
	EXPECT_BAD("negative k", put32(bad + 12, (uint32_t) -1), len, 1);
	EXPECT_BAD("m below k", put32(bad + 16, 0), len, 1);
	EXPECT_BAD("block below 2m", put32(bad + 20, 3), len, 1);
	EXPECT_BAD("too many levels", put32(bad + 24, 1000), len, 1);
	EXPECT_BAD("crafted level count", put32(bad + 48, 0x7fffffff), len, 1);
	EXPECT_BAD("counts past the length", put32(bad + 56, 2), len, 1);
	EXPECT_BAD("rows inconsistent with weights", put32(bad + 32, 5), len, 1);
	EXPECT_BAD("checksum mismatch", bad[len - 9] ^= 1, len, 0);
	EXPECT_BAD("NaN weight", memcpy(bad + 64, &nan, 8), len, 1);
	EXPECT_BAD("NaN value", memcpy(bad + 80, &nan, 8), len, 1);
	EXPECT_BAD("raw row of weight 3", do { double w = 3.0; memcpy(bad + 64, &w, 8); } while (0), len, 1);
	EXPECT_BAD("fractional weight", do { double w = 2.5; memcpy(bad + 72, &w, 8); } while (0), len, 1);
#undef EXPECT_BAD
	free(good);
	free(bad);
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
static void
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

/* Two allocators that count what they hand out and take back */
static int	allocs_a,
			frees_a,
			allocs_b,
			frees_b;

static void *
alloc_a(size_t bytes)
{
	allocs_a++;
	return malloc(bytes);
}

static void
free_a(void *p)
{
	frees_a++;
	free(p);
}

static void *
alloc_b(size_t bytes)
{
	allocs_b++;
	return malloc(bytes);
}

static void
free_b(void *p)
{
	frees_b++;
	free(p);
}

/*
 * The row store's allocator changes between chunks: the chunks added
 * after gc_rows_set_allocator come from the new one, and each chunk goes
 * back to the allocator it came from; the rows read back unchanged
 */
static void
run_allocator_switch_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	int			d = 3;
	int64_t		n = 40000;
	int			a_after_switch = -1;
	bool		same = true;

	gc_rows_init(&rows, d, alloc_a, free_a, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot;

		if (i == 5000)
		{
			gc_rows_set_allocator(&rows, alloc_b, free_b);
			a_after_switch = allocs_a;
		}
		slot = gc_rows_reserve(&rows, &err);
		for (int j = 0; j < d; j++)
			slot[j] = (double) (i * d + j);
		gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (i * d + j);
	check(same, "allocator switch: rows read back", "rowstore");
	check(allocs_a == a_after_switch && allocs_a > 0 && allocs_b > 0,
		  "allocator switch: later chunks from the new allocator", "rowstore");
	gc_rows_release(&rows);
	check(frees_a == allocs_a && frees_b == allocs_b,
		  "allocator switch: each chunk freed by its own allocator", "rowstore");
}

int
main(int argc, char **argv)
{
	static const int dims[] = {1, 2, 3, 8, 17, 32, 33, 64, 128, 512};
	static const int ks[] = {1, 2, 10, 100, 1000};

	if (argc == 9 && strcmp(argv[1], "bench") == 0)
	{
		bench(atoll(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5], argv[6], argv[7],
			  atoi(argv[8]));
		return 0;
	}
	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		run_case(4000, dims[a], 10);
	for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
		run_case(ks[b] * 20 + 100, 4, ks[b]);
	run_case(100000, 8, 100);
#ifdef GC_WITH_CUDA
	run_tensor_case(20000, 64, 200, 0.5);
	run_tensor_case(30000, 48, 256, 4.0);
	run_tensor_case(20000, 40, 128, -1.0);	/* uniform in [0, 1)^d */
	run_tensor_case(20000, 64, 512, 0.5);	/* sums past shared memory: global atomics */
	/* small d, the point tile resident: 32-, 64- and 128-byte column steps */
	run_tensor_case(20000, 8, 200, 0.5);
	run_tensor_case(20000, 8, 256, -1.0);
	run_tensor_case(20000, 12, 300, 0.5);	/* padded to 16 */
	run_tensor_case(20000, 24, 200, -1.0);
	run_tensor_case(20000, 32, 1000, 0.5);
	/* rows too wide to stay resident: points streamed past several centroid tiles */
	run_tensor_case(4000, 400, 200, 0.5);
	run_tensor_case(3000, 1024, 160, 0.5);	/* bf16 streamed too */
#endif
	run_weighted_case(3000, 3, 5);
	run_weighted_case(2000, 17, 20);
	run_stream_format_cases();
	run_stream_case(40000, 2, 5);
	run_stream_case(30000, 8, 10);
	run_progress_case(&gc_kmeans_cpu_backend, "progress cpu");
	run_allocator_switch_case();
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
			run_progress_case(&gc_kmeans_cuda_backend, "progress gpu");
	}
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
