/*-------------------------------------------------------------------------
 *
 * cosine_test.c
 *	  Engine tests of the cosine metric (spherical k-means) without a
 *	  server: gc_unit_normalize gives unit vectors whatever the scale,
 *	  refuses zero vectors, and is scale-free; a spherical fit keeps its
 *	  centroids on the unit sphere, recovers directions that Euclidean
 *	  k-means would mix, and does not depend on row order; where a GPU is
 *	  usable, the CUDA backend gives the same labels and centroids to the
 *	  last bit, on the SIMT kernels (d = 8) and the tensor path (d = 64,
 *	  k = 128).  A cosine stream summary (unit rows, Euclidean reductions)
 *	  gives a spherical model that recovers the directions, whose
 *	  inertia is the rows' 1 - cos where each goes with its point, the
 *	  same on the GPU to the bit.  A cluster whose rows cancel (a mean of no
 *	  direction) keeps its unit centroid on both devices.
 *
 *	  cosine_test              run the checks, ending with "N passed, N failed"
 *	  cosine_test N            the Nth case alone (for compute-sanitizer)
 *	  cosine_test count        how many cases there are
 *
 * IDENTIFICATION
 *	  test/engine/cosine_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "gc_stream.h"
#ifdef GC_WITH_CUDA
#include "gc_cuda.h"
#endif

/*
 * n unit rows around k random directions (angular spread sigma), each
 * scaled by a random magnitude in [0.01, 100] before normalisation, as
 * the glue normalises rows on collection; truth gets each row's direction
 */
static double *
make_directions(int64_t n, int d, int k, double sigma, int *truth)
{
	double	   *dirs = malloc(sizeof(double) * k * d);
	double	   *x = malloc(sizeof(double) * n * d);

	for (int c = 0; c < k; c++)
	{
		for (int j = 0; j < d; j++)
			dirs[c * d + j] = normal();
		gc_unit_normalize(dirs + c * d, d);
	}
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (i % k);
		double		scale = pow(10.0, -2.0 + 4.0 * uniform());

		for (int j = 0; j < d; j++)
			x[i * d + j] = scale * (dirs[c * d + j] + sigma * normal());
		gc_unit_normalize(x + i * d, d);
		if (truth)
			truth[i] = c;
	}
	free(dirs);
	return x;
}

/* A cosine fit: k-means++, four restarts, 50 iterations */
static Fit
cosine_fit(const GcKmeansBackend *backend, GcRows *rows, int k, GcMetric metric)
{
	Fit			f;
	GcKmeansParams params = {0};
	GcError		err = {0};

	params.k = k;
	params.max_iter = 50;
	params.tol = 0.0;
	params.algorithm = GC_ALGORITHM_AUTO;
	params.precision = GC_PRECISION_FLOAT32;
	params.metric = metric;
	params.init = GC_INIT_KMEANSPP;
	params.seed = 5;
	params.n_init = 4;
	f = new_fit(k, rows);
	f.status = gc_kmeans_fit(backend, rows, &params, &f.result, &err);
	if (f.status != GC_OK)
		printf("fit failed: %s\n", err.message);
	return f;
}

static void
test_normalize(void)
{
	double		a[3] = {3.0, 0.0, 4.0},
				b[3] = {ldexp(3.0, -1060), 0.0, ldexp(4.0, -1060)},	/* squares underflow */
				c[3] = {ldexp(3.0, 1020), 0.0, ldexp(4.0, 1020)},	/* squares overflow */
				z[3] = {0.0, 0.0, 0.0};

	check(gc_unit_normalize(a, 3) && a[0] == 0.6 && a[2] == 0.8, "(3, 0, 4) becomes (0.6, 0, 0.8)", "cosine");
	check(gc_unit_normalize(b, 3) && memcmp(a, b, sizeof(a)) == 0,
		  "tiny vectors normalise without underflow, to the same bits", "cosine");
	check(gc_unit_normalize(c, 3) && memcmp(a, c, sizeof(a)) == 0,
		  "huge vectors normalise without overflow, to the same bits", "cosine");
	check(!gc_unit_normalize(z, 3) && z[0] == 0.0, "a zero vector is refused and left alone", "cosine");
}

static int
centroids_unit(const Fit *f, int k, int d)
{
	for (int c = 0; c < k; c++)
	{
		double		s = 0.0;

		for (int j = 0; j < d; j++)
			s += f->centroids[c * d + j] * f->centroids[c * d + j];
		if (f->sizes[c] > 0 && fabs(sqrt(s) - 1.0) > 1e-12)
			return 0;
	}
	return 1;
}

static void
test_cpu(void)
{
	int64_t		n = 4000;
	int			d = 16,
				k = 8;
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x = make_directions(n, d, k, 0.05, truth);
	int64_t    *order = malloc(sizeof(int64_t) * n);
	GcRows		rows,
				shuffled;
	Fit			a,
				b;

	for (int64_t i = 0; i < n; i++)
		order[i] = (i * 7919) % n;	/* a permutation: 7919 is prime to 4000 */
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	load_rows(&shuffled, x, n, d, order, plain_alloc, free);
	a = cosine_fit(&gc_kmeans_cpu_backend, &rows, k, GC_METRIC_COSINE);
	b = cosine_fit(&gc_kmeans_cpu_backend, &shuffled, k, GC_METRIC_COSINE);
	check(a.status == GC_OK && b.status == GC_OK, "CPU cosine fits run", "cosine");
	check(centroids_unit(&a, k, d), "CPU cosine centroids are unit vectors", "cosine");
	check(recovers(truth, a.labels, n, k), "CPU cosine fit recovers the directions", "cosine");
	check(memcmp(a.centroids, b.centroids, sizeof(double) * k * d) == 0,
		  "CPU cosine centroids do not depend on row order", "cosine");
	free_fit(&a);
	free_fit(&b);
	gc_rows_release(&rows);
	gc_rows_release(&shuffled);
	free(order);
	free(truth);
	free(x);
}

/*
 * Rows that cancel: +e_j and -e_j for every axis j of d = 8, one cluster.
 * The bounding box is centred on 0, so the fixed-point sums cancel
 * exactly and the cluster's mean is the zero vector, which has no
 * direction: the centroid must stay the unit vector it was (the seed, one
 * of the rows), not become zero, on the CPU and, where a GPU is usable,
 * on the GPU to the same bits.
 */
static void
test_no_direction(void)
{
	enum
	{
		D = 8, N = 2 * D
	};
	double		x[N * D] = {0};
	GcRows		rows;
	Fit			cpu;
	bool		is_row = false;

	for (int j = 0; j < D; j++)
	{
		x[(2 * j) * D + j] = 1.0;
		x[(2 * j + 1) * D + j] = -1.0;
	}
	load_rows(&rows, x, N, D, NULL, plain_alloc, free);
	cpu = cosine_fit(&gc_kmeans_cpu_backend, &rows, 1, GC_METRIC_COSINE);
	for (int i = 0; i < N && cpu.status == GC_OK; i++)
		is_row |= memcmp(cpu.centroids, x + i * D, sizeof(double) * D) == 0;
	check(cpu.status == GC_OK && gc_is_unit(cpu.centroids, D) && is_row,
		  "CPU cosine: a cluster whose rows cancel keeps its unit centroid", "cosine");
	gc_rows_release(&rows);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			Fit			gpu;

			load_rows(&rows, x, N, D, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
			gpu = cosine_fit(&gc_kmeans_cuda_backend, &rows, 1, GC_METRIC_COSINE);
			check(gpu.status == GC_OK && cpu.status == GC_OK &&
				  memcmp(cpu.centroids, gpu.centroids, sizeof(double) * D) == 0,
				  "GPU cosine: a cluster whose rows cancel keeps the CPU's unit centroid",
				  "cosine");
			free_fit(&gpu);
			gc_rows_release(&rows);
		}
	}
#endif
	free_fit(&cpu);
}

/* A cosine fit of a stream summary's points on backend */
static Fit
stream_fit(const GcStream *s, const GcKmeansBackend *backend, int k, int d)
{
	Fit			f;
	GcKmeansParams params = {0};
	GcError		err = {0};

	params.k = k;
	params.max_iter = 300;
	params.tol = 1e-4;
	params.metric = GC_METRIC_COSINE;
	params.init = GC_INIT_KMEANSPP;
	params.seed = 3;
	params.n_init = 4;
	f.centroids = malloc(sizeof(double) * k * d);
	f.sizes = malloc(sizeof(int64_t) * k);	/* the rows each cluster stands for */
	f.labels = NULL;
	memset(&f.result, 0, sizeof(f.result));
	f.status = gc_stream_fit(s, backend, &params, f.centroids, f.sizes, &f.result, &err);
	if (f.status != GC_OK)
		printf("stream fit failed: %s\n", err.message);
	return f;
}

/*
 * A summary of unit rows in blocks of 1,000 (levels of weighted means),
 * its spherical model against the rows
 */
static void
test_stream(void)
{
	int64_t		n = 12000;
	int			d = 16,
				k = 8;
	int		   *truth = malloc(sizeof(int) * n);
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	double	   *x = make_directions(n, d, k, 0.05, truth);
	GcStreamHeader shape = {0},
				h;
	GcStream	s;
	GcError		err = {0};
	Fit			f;
	double		rows_inertia = 0.0;
	int64_t		total = 0;
	size_t		len;
	uint8_t    *buf;

	shape.d = d;
	shape.k = k;
	shape.m = 10 * k;
	shape.block_rows = 1000;
	shape.cosine = true;
	gc_stream_init(&s, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
	for (int64_t i = 0; i < n; i++)
	{
		memcpy(gc_stream_reserve(&s, &err), x + i * d, sizeof(double) * d);
		gc_stream_commit(&s, &err);
	}
	check(err.status == GC_OK && s.nlevels >= 2, "a cosine stream reduces its blocks", "cosine stream");
	f = stream_fit(&s, &gc_kmeans_cpu_backend, k, d);
	check(f.status == GC_OK, "a cosine stream's model fits", "cosine stream");
	check(centroids_unit(&f, k, d), "its centroids are unit vectors", "cosine stream");
	for (int c = 0; c < k; c++)
		total += f.sizes[c];
	check(total == n, "its clusters stand for every row", "cosine stream");
	for (int64_t i = 0; i < n; i++)
	{
		double		best = -INFINITY;

		for (int c = 0; c < k; c++)
		{
			double		dot = 0.0;

			for (int j = 0; j < d; j++)
				dot += x[i * d + j] * f.centroids[c * d + j];
			if (dot > best)
			{
				best = dot;
				labels[i] = c;
			}
		}
		rows_inertia += 1.0 - best;
	}
	check(recovers(truth, labels, n, k), "its centroids recover the directions", "cosine stream");
	check(f.result.inertia >= rows_inertia - 1e-9 && f.result.inertia <= 1.01 * rows_inertia,
		  "its inertia is the rows' 1 - cos where each goes with its point", "cosine stream");
	printf("cosine stream: %d levels, inertia %.6f, rows at their nearest %.6f\n", s.nlevels,
		   f.result.inertia, rows_inertia);

	gc_stream_compact(&s, &err);
	len = gc_stream_encoded_bytes(&s);
	buf = malloc(len);
	gc_stream_encode(&s, buf, len);
	check(gc_stream_decode(buf, len, &h) == NULL && h.cosine, "its encoding decodes as cosine",
		  "cosine stream");
	free(buf);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			Fit			g = stream_fit(&s, &gc_kmeans_cuda_backend, k, d);
			Fit			cpu = stream_fit(&s, &gc_kmeans_cpu_backend, k, d);

			check(g.status == GC_OK && cpu.status == GC_OK &&
				  memcmp(g.centroids, cpu.centroids, sizeof(double) * k * d) == 0 &&
				  memcmp(g.sizes, cpu.sizes, sizeof(int64_t) * k) == 0 &&
				  g.result.inertia == cpu.result.inertia,
				  "GPU model of a cosine summary equals the CPU's to the bit", "cosine stream");
			free_fit(&g);
			free_fit(&cpu);
		}
	}
#endif
	free_fit(&f);
	gc_stream_release(&s);
	free(labels);
	free(truth);
	free(x);
}

#ifdef GC_WITH_CUDA
static void
test_gpu(int64_t n, int d, int k, double sigma, const char *what)
{
	double	   *x = make_directions(n, d, k, sigma, NULL);
	GcRows		rows;
	Fit			cpu,
				gpu;
	char		label[160];

	load_rows(&rows, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	cpu = cosine_fit(&gc_kmeans_cpu_backend, &rows, k, GC_METRIC_COSINE);
	gpu = cosine_fit(&gc_kmeans_cuda_backend, &rows, k, GC_METRIC_COSINE);
	snprintf(label, sizeof(label), "GPU cosine fit runs (%s, kernel %s)", what,
			 gpu.result.kernel ? gpu.result.kernel : "?");
	check(cpu.status == GC_OK && gpu.status == GC_OK, label, "cosine");
	snprintf(label, sizeof(label), "GPU cosine labels equal the CPU's (%s)", what);
	check(memcmp(cpu.labels, gpu.labels, sizeof(int32_t) * n) == 0, label, "cosine");
	snprintf(label, sizeof(label), "GPU cosine centroids equal the CPU's to the bit (%s)", what);
	check(memcmp(cpu.centroids, gpu.centroids, sizeof(double) * k * d) == 0, label, "cosine");
	snprintf(label, sizeof(label), "GPU cosine iterations equal the CPU's (%s)", what);
	check(cpu.result.iterations == gpu.result.iterations, label, "cosine");
	free_fit(&cpu);
	free_fit(&gpu);
	gc_rows_release(&rows);
	free(x);
}
#endif

#ifdef GC_WITH_CUDA
/* GPU case which (0: d = 8, register kernel; 1: tensor path; 2: tiled kernel), where a GPU is usable */
static void
test_gpu_case(int which)
{
	static const struct
	{
		int64_t		n;
		int			d,
					k;
		double		sigma;
		const char *what;
	}			gpu_cases[] = {
		{20000, 8, 16, 0.3, "d = 8, register kernel"},
		{20000, 64, 128, 0.3, "d = 64, k = 128, tensor path"},
		{5000, 300, 10, 0.5, "d = 300, tiled kernel"},
	};
	char		why[256];

	if (!gc_cuda_use_device(0, why, sizeof(why)))
	{
		printf("no GPU: %s (GPU cosine checks not run)\n", why);
		return;
	}
	test_gpu(gpu_cases[which].n, gpu_cases[which].d, gpu_cases[which].k,
			 gpu_cases[which].sigma, gpu_cases[which].what);
}

static void
test_gpu_register(void)
{
	test_gpu_case(0);
}

static void
test_gpu_tensor(void)
{
	test_gpu_case(1);
}

static void
test_gpu_tiled(void)
{
	test_gpu_case(2);
}
#endif

int
main(int argc, char **argv)
{
	static void (*const cases[]) (void) = {
		test_normalize, test_cpu, test_stream, test_no_direction,
#ifdef GC_WITH_CUDA
		test_gpu_register, test_gpu_tensor, test_gpu_tiled,
#endif
	};

	return run_cases(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
