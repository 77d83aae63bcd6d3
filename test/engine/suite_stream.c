/*-------------------------------------------------------------------------
 *
 * suite_stream.c
 *	  kmeans_stream summaries: their fits against the rows' (inertia), and
 *	  the decoder's refusal of damaged bytes.
 *
 * IDENTIFICATION
 *	  test/engine/suite_stream.c
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
void
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
	/*
	 * A compacted copy (the final function's) clusters the raw rows where
	 * they lie: the same bytes as copying them and compacting the copy
	 */
	{
		GcStream	partial,
					copied,
					compacted;
		size_t		len_copied,
					len_compacted;
		uint8_t    *buf_copied,
				   *buf_compacted;

		/* whole blocks and half of one: raw rows past m */
		stream_rows(&partial, &shape, &gc_kmeans_cpu_backend, x, 0,
					n / 3 / shape.block_rows * shape.block_rows + shape.block_rows / 2, d);
		gc_stream_init(&copied, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
		gc_stream_init(&compacted, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
		gc_stream_merge(&copied, &partial, &err);
		gc_stream_compact(&copied, &err);
		gc_stream_merge_compacted(&compacted, &partial, &err);
		len_copied = gc_stream_encoded_bytes(&copied);
		len_compacted = gc_stream_encoded_bytes(&compacted);
		buf_copied = malloc(len_copied);
		buf_compacted = malloc(len_compacted);
		gc_stream_encode(&copied, buf_copied, len_copied);
		gc_stream_encode(&compacted, buf_compacted, len_compacted);
		check(partial.block.n > shape.m && compacted.block.n == 0 && err.status == GC_OK,
			  "a compacted copy leaves no raw rows", config);
		check(len_copied == len_compacted && memcmp(buf_copied, buf_compacted, len_copied) == 0,
			  "a compacted copy: the same summary as copy then compact", config);
		free(buf_copied);
		free(buf_compacted);
		gc_stream_release(&copied);
		gc_stream_release(&compacted);

		/* levels past their memory bound fail, not allocate */
		gc_stream_init(&copied, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
		gc_stream_limit_memory(&copied, 0, GC_STREAM_MAX_LEVELS * gc_stream_level_bytes(shape.m, d));
		check(gc_stream_merge_compacted(&copied, &partial, &err) == GC_OK &&
			  copied.level_bytes == (size_t) (copied.nlevels - 1) * gc_stream_level_bytes(shape.m, d),
			  "levels within the bound, counted", config);
		gc_stream_release(&copied);
		gc_stream_init(&copied, &shape, &gc_kmeans_cpu_backend, plain_alloc, free, NULL, &err);
		gc_stream_limit_memory(&copied, 0, gc_stream_level_bytes(shape.m, d) - 1);
		check(gc_stream_merge_compacted(&copied, &partial, &err) == GC_ERR_HOST_MEMORY,
			  "a level past the bound fails with GC_ERR_HOST_MEMORY", config);
		err.status = GC_OK;
		gc_stream_release(&copied);
		gc_stream_release(&partial);
	}

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
void
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
	EXPECT_BAD("unknown flags", bad[6] = 2, len, 1);
	EXPECT_BAD("cosine flag on points longer than 1", bad[6] = GC_STREAM_FLAG_COSINE, len, 1);
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

	/* a cosine summary: a unit row and a mean of unit rows, rounding included */
	{
		const double unit[2] = {0.6, 0.8000000000000002};
		const double mean[2] = {0.3, 0.4};

		h.cosine = true;
		gc_stream_put_header(good, &h);
		gc_stream_put_point(good, &h, 0, 1.0, unit);
		gc_stream_put_point(good, &h, 1, 3.0, mean);
		gc_stream_seal(good, len);
		check(gc_stream_decode(good, len, &got) == NULL && got.cosine,
			  "a cosine summary decodes as one", "format");
		memcpy(bad, good, len);
		gc_stream_put_point(bad, &h, 0, 1.0, mean);
		reseal(bad, len);
		check(gc_stream_decode(bad, len, &got) != NULL, "a cosine summary's raw row of length 1/2",
			  "format");
		h.cosine = false;
		gc_stream_put_header(good, &h);
		gc_stream_seal(good, len);
		check(gc_stream_decode(good, len, &got) == NULL && !got.cosine,
			  "a summary without the flag decodes as Euclidean", "format");
	}
	free(good);
	free(bad);
}
