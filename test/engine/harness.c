/*-------------------------------------------------------------------------
 *
 * harness.c
 *	  What the engine tests and the k-means benchmark runner share: the
 *	  check counters, a seeded generator, generated and file data, row
 *	  stores filled from arrays, and fits compared to the bit.
 *
 * IDENTIFICATION
 *	  test/engine/harness.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

int			passed,
			failed;

void
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

static int	case_wanted = -1;	/* -1: every case; -2: none (count) */
static int	case_next;
uint64_t	rng_state;

void
select_cases(const char *arg)
{
	case_wanted = arg == NULL ? -1 : strcmp(arg, "count") == 0 ? -2 : atoi(arg);
	case_next = 0;
}

bool
case_selected(void)
{
	int			this_case = case_next++;

	/* each case its own seed: alone, it sees the data it sees among all */
	rng_state = UINT64_C(7) + (uint64_t) this_case;
	return case_wanted == -1 || case_wanted == this_case;
}

bool
cases_end(void)
{
	if (case_wanted == -2)
		printf("%d cases\n", case_next);
	return case_wanted < case_next;
}

int
run_cases(int argc, char **argv, void (*const cases[]) (void), int ncases)
{
	select_cases(argc > 1 ? argv[1] : NULL);
	for (int c = 0; c < ncases; c++)
		if (case_selected())
			cases[c]();
	if (!cases_end())
	{
		printf("no case %s\n", argv[1]);
		return 2;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

double
uniform(void)
{
	rng_state += UINT64_C(0x9e3779b97f4a7c15);
	return (double) (gc_mix64(rng_state) >> 11) / 9007199254740992.0;
}

double
normal(void)
{
	double		u = uniform() + 1e-300,
				v = uniform();

	return sqrt(-2.0 * log(u)) * cos(2 * M_PI * v);
}

void *
plain_alloc(size_t bytes)
{
	return malloc(bytes);
}

/* n points around k centres in [-100, 100]^d, or uniform when sigma < 0 */
double *
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

void
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

void
load_narrow_rows(GcRows *rows, const double *x, int64_t n, int d,
				 GcHostAlloc alloc, GcHostFree free_fn)
{
	GcError		err = {0};

	gc_rows_init(rows, d, alloc, free_fn, &err);
	gc_rows_set_narrow(rows);
	for (int64_t i = 0; i < n; i++)
	{
		float	   *slot = gc_rows_reserve_narrow(rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = (float) x[i * d + j];
		gc_rows_commit(rows);
	}
}


Fit
new_fit(int k, const GcRows *rows)
{
	Fit			f;

	f.centroids = malloc(sizeof(double) * k * rows->d);
	f.sizes = malloc(sizeof(int64_t) * k);
	f.labels = malloc(sizeof(int32_t) * rows->n);
	memset(&f.result, 0, sizeof(f.result));
	f.result.centroids = f.centroids;
	f.result.sizes = f.sizes;
	f.result.labels = f.labels;
	f.status = GC_OK;
	return f;
}

GcKmeansParams
one_restart_params(int k, GcInit init, int max_iter, double tol)
{
	GcKmeansParams params = {0};

	params.k = k;
	params.max_iter = max_iter;
	params.tol = tol;
	params.init = init;
	params.n_init = 1;
	return params;
}

Fit
fit_params(const GcKmeansBackend *backend, GcRows *rows, const GcKmeansParams *params)
{
	Fit			f = new_fit(params->k, rows);
	GcError		err = {0};

	f.status = gc_kmeans_fit(backend, rows, params, &f.result, &err);
	if (f.status != GC_OK)
		printf("fit failed: %s\n", err.message);
	return f;
}

Fit
fit_kernel(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed,
		   GcAlgorithm algorithm, GcPrecision precision, int max_iter, double tol,
		   GcKernel kernel, bool tensor_streamed)
{
	GcKmeansParams params = one_restart_params(k, GC_INIT_KMEANSPP, max_iter, tol);

	params.algorithm = algorithm;
	params.precision = precision;
	params.kernel = kernel;
	params.tensor_streamed = tensor_streamed;
	params.seed = seed;
	return fit_params(backend, rows, &params);
}

Fit
fit_with(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed,
		 GcAlgorithm algorithm, GcPrecision precision, int max_iter, double tol)
{
	return fit_kernel(backend, rows, k, seed, algorithm, precision, max_iter, tol,
					  GC_KERNEL_AUTO, false);
}

Fit
fit(const GcKmeansBackend *backend, GcRows *rows, int k, uint64_t seed)
{
	return fit_with(backend, rows, k, seed, GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 300, 1e-4);
}

/* The fit b must equal the reference a: labels, centroids to the bit, sizes */
void
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

void
free_fit(Fit *f)
{
	free(f->centroids);
	free(f->sizes);
	free(f->labels);
}

/* Every true cluster maps to one found cluster, and the map is 1-1 */
int
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


double *
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

/*
 * Rows that nearly repeat one another: patterns of norm 8 in random
 * directions, each row one of them plus normal noise of deviation noise
 * per value, and every fifth row an exact copy of the row before it
 */
double *
make_near_duplicates(int64_t n, int d, int patterns, double noise)
{
	double	   *pattern = malloc(sizeof(double) * patterns * d);
	double	   *x = malloc(sizeof(double) * n * d);

	for (int p = 0; p < patterns; p++)
	{
		double		norm = 0.0;

		for (int j = 0; j < d; j++)
		{
			pattern[(size_t) p * d + j] = normal();
			norm += pattern[(size_t) p * d + j] * pattern[(size_t) p * d + j];
		}
		for (int j = 0; j < d; j++)
			pattern[(size_t) p * d + j] *= 8.0 / sqrt(norm);
	}
	for (int64_t i = 0; i < n; i++)
	{
		int			p = (int) (uniform() * patterns);

		for (int j = 0; j < d; j++)
			x[i * d + j] = i % 5 == 4 ? x[(i - 1) * d + j] :
				pattern[(size_t) p * d + j] + noise * normal();
	}
	free(pattern);
	return x;
}

/* Gaussian clusters of variance var around k uniform centres in [0,1]^d */
double *
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

bool
bench_gpu_backends(const GcKmeansBackend **plain, const GcKmeansBackend **sharded,
				   GcHostAlloc *alloc, GcHostFree *free_fn)
{
#ifdef GC_WITH_CUDA
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		fprintf(stderr, "no GPU: %s\n", why);
		return false;
	}
	*plain = &gc_kmeans_cuda_backend;
	if (sharded != NULL)
		*sharded = &gc_kmeans_cuda_sharded_backend;
	*alloc = gc_cuda_host_alloc;
	*free_fn = gc_cuda_host_free;
	return true;
#else
	(void) plain;
	(void) sharded;
	(void) alloc;
	(void) free_fn;
	fprintf(stderr, "built without CUDA\n");
	return false;
#endif
}
