/*-------------------------------------------------------------------------
 *
 * cpu_labeling_test.c
 *	  The CPU's screened, threaded labeling (engine/cpu_labeling.c) against
 *	  the reference scan, row by row: the same label and the same squared
 *	  distance to the bit, on shapes built to break a screen (ties,
 *	  duplicated centroids, rows far from the origin, points midway between
 *	  centroids, huge and tiny magnitudes), with 1 to 5 threads, several
 *	  chunks and a first row past the start; and whole CPU fits whose
 *	  centroids, labels and inertia match those of the reference scan.
 *
 *	  cpu_labeling_test [bench N D K]
 *
 * IDENTIFICATION
 *	  test/engine/cpu_labeling_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_labeling.h"
#include "harness.h"

/* Rows and centroids of one case */
typedef struct Shape
{
	const char *name;
	int64_t		n;
	int			d;
	int			k;
} Shape;

/* Fill x (n d) and centroids (k d) by the case's recipe */
static void
make_case(int recipe, const Shape *s, double *x, double *c)
{
	double		base = recipe == 1 ? 1e6 : recipe == 5 ? 1e150 : 0.0;
	double		scale = recipe == 5 ? 1e140 : recipe == 6 ? 1e-150 : 1.0;

	for (int i = 0; i < s->k * s->d; i++)
		c[i] = base + scale * (recipe == 3 ? floor(uniform() * 4) : uniform() * 10);
	if (recipe == 2 && s->k > 3)	/* duplicated centroids: exact ties */
		memcpy(c + 2 * s->d, c, sizeof(double) * s->d);
	for (int64_t i = 0; i < s->n; i++)
	{
		double	   *row = x + i * s->d;
		const double *a = c + (i % s->k) * s->d,
				   *b = c + ((i * 7 + 1) % s->k) * s->d;

		for (int j = 0; j < s->d; j++)
		{
			if (recipe == 3)	/* integer grid: many equal distances */
				row[j] = floor(uniform() * 4);
			else if (recipe == 4 || i % 5 == 0)	/* midway between two centroids */
				row[j] = a[j] + (b[j] - a[j]) / 2;
			else if (i % 7 == 0)	/* a centroid itself */
				row[j] = a[j];
			else
				row[j] = a[j] + scale * normal();
		}
	}
}

/* Rows borrowed from x in chunks of at most chunk rows (labels need no hashes) */
static void
load_chunked(GcRows *rows, double *x, uint64_t *hashes, int64_t n, int d, int64_t chunk)
{
	GcError		err = {0};
	double	   *lo = malloc(sizeof(double) * d),
			   *hi = malloc(sizeof(double) * d);

	gc_rows_init(rows, d, plain_alloc, free, &err);
	for (int64_t first = 0; first < n; first += chunk)
	{
		GcChunk		src = {0};

		src.values = x + first * d;
		src.hashes = hashes + first;
		src.count = n - first < chunk ? n - first : chunk;
		src.capacity = src.count;
		src.borrowed = true;
		for (int j = 0; j < d; j++)
		{
			lo[j] = INFINITY;
			hi[j] = -INFINITY;
			for (int64_t i = first; i < first + src.count; i++)
			{
				lo[j] = fmin(lo[j], x[i * d + j]);
				hi[j] = fmax(hi[j], x[i * d + j]);
			}
		}
		if (gc_rows_append_chunk(rows, &src, lo, hi, src.count, false, &err) != GC_OK)
		{
			fprintf(stderr, "append: %s\n", err.message);
			exit(2);
		}
	}
	free(lo);
	free(hi);
}

static void
check_labels(const Shape *s, int recipe)
{
	double	   *x = malloc(sizeof(double) * s->n * s->d);
	double	   *c = malloc(sizeof(double) * s->k * s->d);
	double	   *offset = calloc(s->d, sizeof(double));
	int32_t    *labels = malloc(sizeof(int32_t) * s->n);
	double	   *d2 = malloc(sizeof(double) * s->n);
	uint64_t   *hashes = calloc(s->n, sizeof(uint64_t));
	GcRows		rows;
	char		config[160];

	make_case(recipe, s, x, c);
	for (int j = 0; j < s->d; j++)
		offset[j] = x[j];		/* any centre: here the first row */
	load_chunked(&rows, x, hashes, s->n, s->d, s->n / 3 + 1);
	/* centred on the first row, then on the centroids' median (offset NULL) */
	for (int threads = 1; threads <= 5; threads += 2)
		for (int64_t first = 0; first < s->n; first += s->n / 2 + 1)
			for (int centre = 0; centre < 2; centre++)
		{
			GcPoll		poll = {NULL, 0};
			GcError		err = {0};
			int64_t		wrong = 0,
						rechecked = 0;

			for (int64_t i = 0; i < s->n; i++)
				labels[i] = -7;
			snprintf(config, sizeof config, "%s recipe %d, n %lld d %d k %d, %d threads, from row %lld, %s",
					 s->name, recipe, (long long) s->n, s->d, s->k, threads, (long long) first,
					 centre ? "median centre" : "first row centre");
			check(gc_cpu_label_rows(&rows, first, c, s->k, centre ? NULL : offset, threads, labels,
									d2, NULL, &poll, &rechecked, &err) == GC_OK, "labels rows", config);
			for (int64_t i = 0; i < s->n; i++)
			{
				double		want2;
				int			want = gc_nearest_centroid(x + i * s->d, c, s->k, s->d, &want2);

				if (i < first)
					wrong += labels[i] != -7;
				else
					wrong += labels[i] != want || memcmp(&d2[i], &want2, sizeof(double)) != 0;
			}
			check(wrong == 0, "every label and distance is the reference's", config);
			if (wrong)
				printf("  %lld rows differ (%lld rechecked)\n", (long long) wrong, (long long) rechecked);
		}
	gc_rows_release(&rows);
	free(hashes);
	free(x);
	free(c);
	free(offset);
	free(labels);
	free(d2);
}

/*
 * Rows of small values and a few huge ones (as KDD's byte counts): the
 * box's centre lies far from most rows, whose screens' bounds then doubt
 * many centroids; centred on the centroids' median, few rows need more
 * than one exact distance, and every label is still the reference's
 */
static void
check_wide_range(void)
{
	int64_t		n = 6000;
	int			d = 16,			/* past the direct scan's: the screen */
				k = 40;
	double	   *x = malloc(sizeof(double) * n * d);
	double	   *c = malloc(sizeof(double) * k * d);
	double	   *box = malloc(sizeof(double) * d);
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	uint64_t   *hashes = calloc(n, sizeof(uint64_t));
	int64_t		rechecked[2] = {0, 0},
				wrong = 0;
	GcRows		rows;

	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			x[i * d + j] = uniform() * 20 + (j == 0 && i % 500 == 0 ? 7e8 : 0.0);
	for (int c0 = 0; c0 < k; c0++)
		memcpy(c + (size_t) c0 * d, x + (int64_t) c0 * 149 * d, sizeof(double) * d);
	for (int j = 0; j < d; j++)
	{
		double		lo = INFINITY,
					hi = -INFINITY;

		for (int64_t i = 0; i < n; i++)
		{
			lo = fmin(lo, x[i * d + j]);
			hi = fmax(hi, x[i * d + j]);
		}
		box[j] = lo / 2 + hi / 2;
	}
	load_chunked(&rows, x, hashes, n, d, n);
	for (int centre = 0; centre < 2; centre++)
	{
		GcPoll		poll = {NULL, 0};
		GcError		err = {0};

		gc_cpu_label_rows(&rows, 0, c, k, centre ? NULL : box, 2, labels, NULL, NULL, &poll,
						  &rechecked[centre], &err);
		for (int64_t i = 0; i < n; i++)
			wrong += labels[i] != gc_nearest_centroid(x + i * d, c, k, d, NULL);
	}
	printf("wide range: %lld rows rechecked centred on the box, %lld on the centroids' median\n",
		   (long long) rechecked[0], (long long) rechecked[1]);
	check(wrong == 0, "every label is the reference's", "wide range");
	check(rechecked[1] * 10 < rechecked[0] && rechecked[1] < n / 100,
		  "the median centre leaves few rows in doubt", "wide range");
	gc_rows_release(&rows);
	free(hashes);
	free(x);
	free(c);
	free(box);
	free(labels);
}

/*
 * A whole CPU fit (screened): every final label is the reference scan's
 * nearest centroid of the final centroids, and the sizes count them
 */
static void
check_fit(int64_t n, int d, int k)
{
	double	   *x = make_gaussian(n, d, k, 0.01);
	GcRows		rows;
	Fit			f;
	int64_t		wrong = 0;
	int64_t    *sizes = calloc(k, sizeof(int64_t));
	char		config[80];

	snprintf(config, sizeof config, "fit n %lld d %d k %d", (long long) n, d, k);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	f = fit(&gc_kmeans_cpu_backend, &rows, k, 42);
	check(f.status == GC_OK, "fits", config);
	for (int64_t i = 0; f.status == GC_OK && i < n; i++)
	{
		int			l = gc_nearest_centroid(x + i * d, f.centroids, k, d, NULL);

		wrong += l != f.labels[i];
		sizes[l]++;
	}
	check(f.status == GC_OK && wrong == 0 && memcmp(sizes, f.sizes, sizeof(int64_t) * k) == 0,
		  "labels and sizes are the reference scan's", config);
	free_fit(&f);
	gc_rows_release(&rows);
	free(sizes);
	free(x);
}

/*
 * One Lloyd iteration from given centroids (threads, the screen, the
 * tile-wise update rounding in vectors) against the same step done here
 * with the scalar reference: labels by gc_nearest_centroid, sums of
 * gc_quantize, means by gc_dequantize_mean; centroids equal to the bit.
 * Every fifth row sits on a half step of the fixed point (a tie, which
 * must round to even as llrint does).
 */
static void
check_update(int64_t n, int d, int k, int threads)
{
	double	   *x = make_gaussian(n, d, k, 0.05);
	double	   *start = malloc(sizeof(double) * k * d);
	double	   *expect = malloc(sizeof(double) * k * d);
	long long  *sums = calloc((size_t) k * d, sizeof(long long));
	long long  *counts = calloc(k, sizeof(long long));
	GcKmeansParams params = {0};
	GcKmeansResult result = {0};
	GcFrame		frame = {0};
	GcError		err = {0};
	GcRows		rows;
	char		config[80];
	bool		same = true;

	snprintf(config, sizeof config, "update n %lld d %d k %d, %d threads", (long long) n, d, k,
			 threads);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	check(gc_frame_init(&frame, &rows, &err) == GC_OK, "frame", config);
	gc_rows_release(&rows);
	for (int64_t i = 2; i < n; i += 5)
		for (int j = 0; j < d; j++)
			x[i * d + j] = frame.offset[j] + (floor((x[i * d + j] - frame.offset[j]) * frame.scale[j]) + 0.5) / frame.scale[j];
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	/* the fit's own frame (the half steps may have widened the box) */
	gc_frame_release(&frame);
	check(gc_frame_init(&frame, &rows, &err) == GC_OK, "frame", config);
	memcpy(start, x + 7 * d, sizeof(double) * k * d);

	for (int64_t i = 0; i < n; i++)
	{
		int			l = gc_nearest_centroid(x + i * d, start, k, d, NULL);

		counts[l]++;
		for (int j = 0; j < d; j++)
			sums[(size_t) l * d + j] += gc_quantize(x[i * d + j], frame.offset[j], frame.scale[j]);
	}
	for (int c = 0; c < k; c++)
		for (int j = 0; j < d; j++)
			expect[(size_t) c * d + j] = counts[c] == 0 ? start[(size_t) c * d + j] :
				gc_dequantize_mean(sums[(size_t) c * d + j], counts[c], frame.offset[j], frame.scale[j]);

	params.k = k;
	params.max_iter = 1;
	params.tol = 0.0;
	params.init = GC_INIT_GIVEN;
	params.init_centroids = start;
	params.n_init = 1;
	params.algorithm = GC_ALGORITHM_LLOYD;
	params.cpu_threads = threads;
	result.centroids = malloc(sizeof(double) * k * d);
	result.sizes = malloc(sizeof(int64_t) * k);
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &rows, &params, &result, &err) == GC_OK,
		  "fits one iteration", config);
	for (size_t i = 0; i < (size_t) k * d; i++)
		same &= memcmp(&result.centroids[i], &expect[i], sizeof(double)) == 0;
	check(same, "centroids are the scalar update's to the bit", config);
	gc_rows_release(&rows);
	gc_frame_release(&frame);
	free(result.centroids);
	free(result.sizes);
	free(x);
	free(start);
	free(expect);
	free(sums);
	free(counts);
}

/* Time one labeling pass: screened against the reference scan */
static void
bench(int64_t n, int d, int k)
{
	double	   *x = make_gaussian(n, d, k, 0.01);
	double	   *c = malloc(sizeof(double) * k * d);
	double	   *offset = calloc(d, sizeof(double));
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	GcRows		rows;
	GcPoll		poll = {NULL, 0};
	GcError		err = {0};
	int64_t		rechecked = 0;
	double		t0;

	memcpy(c, x, sizeof(double) * k * d);
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	t0 = gc_now_ms();
	gc_cpu_label_rows(&rows, 0, c, k, offset, 0, labels, NULL, NULL, &poll, &rechecked, &err);
	printf("screened: %.1f ms (%lld rows rechecked)\n", gc_now_ms() - t0, (long long) rechecked);
	t0 = gc_now_ms();
	for (int64_t i = 0; i < n; i++)
		labels[i] = gc_nearest_centroid(x + i * d, c, k, d, NULL);
	printf("reference: %.1f ms\n", gc_now_ms() - t0);
}

int
main(int argc, char **argv)
{
	static const Shape shapes[] = {
		{"one centroid", 50, 3, 1},
		{"tiny", 37, 1, 2},
		{"odd", 301, 7, 13},
		{"blobs", 2000, 32, 100},
		{"wide", 400, 100, 9},
		{"many", 600, 5, 300},
	};

	if (argc == 5 && strcmp(argv[1], "bench") == 0)
	{
		bench(atoll(argv[2]), atoi(argv[3]), atoi(argv[4]));
		return 0;
	}
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int recipe = 0; recipe <= 6; recipe++)
			check_labels(&shapes[s], recipe);
	check_wide_range();
	check_fit(5000, 16, 20);
	check_fit(3000, 64, 7);
	check_update(4000, 19, 12, 1);
	check_update(4000, 19, 12, 2);
	check_update(3000, 64, 30, 0);
	check_update(300, 8, 5, 0);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
