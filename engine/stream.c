/*-------------------------------------------------------------------------
 *
 * stream.c
 *	  Streaming k-means summaries in the engine: the block of raw rows,
 *	  the levels of weighted centres, their reductions, merging, encoding
 *	  and the final weighted fit.  The algorithm and its bounds are
 *	  described in gc_stream.h.
 *
 * Full blocks and the weighted levels are clustered on the backend the
 * caller chose (the GPU when usable); both backends handle weighted rows
 * with the same exact arithmetic.
 *
 * IDENTIFICATION
 *	  engine/stream.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_stream.h"

#include <stdlib.h>
#include <string.h>

/*
 * Lloyd iterations of a reduction: a summary's centres need not converge
 * fully (20 instead of 100 cut the CPU time of summaries by half with the
 * same SSQ in the engine tests)
 */
#define REDUCE_MAX_ITER 20

static void *
plain_alloc(size_t bytes)
{
	return malloc(bytes);
}

static GcStatus push_level(GcStream *s, int level, double weight, const double *x,
						   GcError *err);

/* One clustering of the summary's: the caller's fit, or the engine's */
static GcStatus
run_fit(const GcStream *s, const GcKmeansBackend *backend, GcRows *rows,
		const GcKmeansParams *params, GcKmeansResult *result, GcError *err)
{
	if (s->fit != NULL)
		return s->fit(s->fit_arg, backend, rows, params, result, err);
	return gc_kmeans_fit(backend, rows, params, result, err);
}

GcStatus
gc_stream_init(GcStream *s, const GcStreamHeader *shape,
			   const GcKmeansBackend *backend, GcHostAlloc alloc,
			   GcHostFree free_fn, bool (*interrupted) (void), GcError *err)
{
	memset(s, 0, sizeof(*s));
	s->d = shape->d;
	s->k = shape->k;
	s->m = shape->m;
	s->block_rows = shape->block_rows;
	s->seed = shape->seed;
	s->cosine = shape->cosine;
	s->nlevels = 1;
	s->backend = backend;
	s->alloc = alloc;
	s->free = free_fn;
	s->interrupted = interrupted;
	return gc_rows_init(&s->block, s->d, alloc, free_fn, err);
}

void
gc_stream_limit_memory(GcStream *s, size_t max_block_bytes, size_t max_level_bytes)
{
	s->max_block_bytes = max_block_bytes;
	s->max_level_bytes = max_level_bytes;
	s->block.max_bytes = max_block_bytes;
}

size_t
gc_stream_level_bytes(int m, int d)
{
	return sizeof(double) * ((size_t) GC_STREAM_FANOUT * m + 1) * ((size_t) d + 1);
}

void
gc_stream_release(GcStream *s)
{
	gc_rows_release(&s->block);
	for (int l = 0; l < GC_STREAM_MAX_LEVELS; l++)
	{
		free(s->levels[l].weights);
		free(s->levels[l].points);
		s->levels[l].weights = s->levels[l].points = NULL;
		s->levels[l].count = 0;
	}
	s->level_bytes = 0;
}

/*
 * Cluster rows into at most m centres: centroids (m * d) and, per centre,
 * the weight of the rows it took (weighted rows) or their number; a centre
 * that took no row gets weight 0
 */
static GcStatus
reduce_rows(GcStream *s, const GcKmeansBackend *backend, GcRows *rows,
			double *centroids, double *weights, GcError *err)
{
	GcKmeansParams params = {0};
	GcKmeansResult result = {0};
	int64_t    *sizes = malloc(sizeof(int64_t) * s->m);
	int32_t    *labels = rows->weighted ? malloc(sizeof(int32_t) * rows->n) : NULL;
	GcStatus	status;

	if (sizes == NULL || (rows->weighted && labels == NULL))
	{
		free(sizes);
		free(labels);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream reduction");
	}
	params.k = s->m;
	params.max_iter = REDUCE_MAX_ITER;
	params.tol = 1e-4;
	params.init = GC_INIT_KMEANSPP;
	params.init_candidates = 1; /* plain k-means++: a reduction's m is large */
	params.seed = s->seed + (uint64_t) s->reductions++;
	params.n_init = 1;
	params.algorithm = GC_ALGORITHM_AUTO;
	params.precision = GC_PRECISION_FLOAT32;
	params.interrupted = s->interrupted;
	result.centroids = centroids;
	result.sizes = sizes;
	result.labels = labels;
	status = run_fit(s, backend, rows, &params, &result, err);
	if (status == GC_OK)
	{
		for (int c = 0; c < s->m; c++)
			weights[c] = rows->weighted ? 0.0 : (double) sizes[c];
		for (int64_t i = 0; labels && i < rows->n; i++)
			weights[labels[i]] += gc_rows_weight(rows, i);
	}
	free(sizes);
	free(labels);
	return status;
}

/*
 * Push the non-empty centres of a reduction into level
 */
static GcStatus
push_centres(GcStream *s, int level, const double *centroids,
			 const double *weights, GcError *err)
{
	GcStatus	status = GC_OK;

	for (int c = 0; c < s->m && status == GC_OK; c++)
		if (weights[c] > 0.0)
			status = push_level(s, level, weights[c],
								centroids + (size_t) c * s->d, err);
	return status;
}

/*
 * Cluster the block of raw rows into m centres on level 1 and empty it
 * (rows pass up unchanged when there are no more than m)
 */
static GcStatus
reduce_block(GcStream *s, GcError *err)
{
	GcRows	   *block = &s->block;
	double	   *centroids,
			   *weights;
	GcStatus	status = GC_OK;

	if (block->n <= s->m)
	{
		for (int64_t i = 0; i < block->n && status == GC_OK; i++)
			status = push_level(s, 1, 1.0, gc_rows_get(block, i), err);
	}
	else
	{
		centroids = malloc(sizeof(double) * s->m * s->d);
		weights = malloc(sizeof(double) * s->m);
		if (centroids == NULL || weights == NULL)
			status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream reduction");
		if (status == GC_OK)
			status = reduce_rows(s, s->backend, block, centroids, weights, err);
		if (status == GC_OK)
			status = push_centres(s, 1, centroids, weights, err);
		free(centroids);
		free(weights);
	}
	if (status != GC_OK)
		return status;
	gc_rows_release(block);
	status = gc_rows_init(block, s->d, s->alloc, s->free, err);
	block->max_bytes = s->max_block_bytes;
	return status;
}

/*
 * Cluster the weighted centres of level into m centres on the next level
 * (on the same level when it is the last one)
 */
static GcStatus
reduce_level(GcStream *s, int level, GcError *err)
{
	GcStreamLevel *lv = &s->levels[level];
	GcRows		rows;
	double	   *centroids = malloc(sizeof(double) * s->m * s->d);
	double	   *weights = malloc(sizeof(double) * s->m);
	GcStatus	status = gc_rows_init(&rows, s->d, plain_alloc, free, err);

	gc_rows_set_weighted(&rows);
	if (status == GC_OK && (centroids == NULL || weights == NULL))
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream reduction");
	for (int64_t i = 0; i < lv->count && status == GC_OK; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, err);

		if (slot == NULL)
			status = GC_ERR_HOST_MEMORY;
		else
		{
			memcpy(slot, lv->points + (size_t) i * s->d, sizeof(double) * s->d);
			gc_rows_commit_weighted(&rows, lv->weights[i]);
		}
	}
	if (status == GC_OK)
		status = reduce_rows(s, s->backend, &rows, centroids, weights, err);
	if (status == GC_OK)
	{
		lv->count = 0;
		status = push_centres(s, level + 1 < GC_STREAM_MAX_LEVELS ? level + 1 : level,
							  centroids, weights, err);
	}
	gc_rows_release(&rows);
	free(centroids);
	free(weights);
	return status;
}

/*
 * Append a weighted centre to level (> 0), reducing the level when it
 * passes its bound
 */
static GcStatus
push_level(GcStream *s, int level, double weight, const double *x, GcError *err)
{
	GcStreamLevel *lv = &s->levels[level];
	int64_t		bound = (int64_t) GC_STREAM_FANOUT * s->m;

	if (lv->weights == NULL)
	{
		size_t		bytes = gc_stream_level_bytes(s->m, s->d);

		if (s->max_level_bytes > 0 && s->level_bytes + bytes > s->max_level_bytes)
			return gc_fail(err, GC_ERR_HOST_MEMORY,
						   "level %d of the summary needs %zu MB more, past the %zu MB its levels may hold",
						   level, (bytes + ((1 << 20) - 1)) >> 20,
						   (s->max_level_bytes + ((1 << 20) - 1)) >> 20);
		s->level_bytes += bytes;
		lv->weights = malloc(sizeof(double) * (bound + 1));
		lv->points = malloc(sizeof(double) * (bound + 1) * s->d);
		if (lv->weights == NULL || lv->points == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream level");
	}
	lv->weights[lv->count] = weight;
	memcpy(lv->points + (size_t) lv->count * s->d, x, sizeof(double) * s->d);
	lv->count++;
	if (level >= s->nlevels)
		s->nlevels = level + 1;
	return lv->count > bound ? reduce_level(s, level, err) : GC_OK;
}

double *
gc_stream_reserve(GcStream *s, GcError *err)
{
	return gc_rows_reserve(&s->block, err);
}

/*
 * Count the row just written; cluster the block when it is full
 */
static GcStatus
commit_raw(GcStream *s, GcError *err)
{
	gc_rows_commit(&s->block);
	return s->block.n >= s->block_rows ? reduce_block(s, err) : GC_OK;
}

GcStatus
gc_stream_commit(GcStream *s, GcError *err)
{
	s->rows++;
	return commit_raw(s, err);
}

/* Add one point of another summary at its level */
static GcStatus
push_point(GcStream *s, int level, double weight, const double *x, GcError *err)
{
	double	   *slot;

	if (level > 0)
		return push_level(s, level, weight, x, err);
	slot = gc_rows_reserve(&s->block, err);
	if (slot == NULL)
		return GC_ERR_HOST_MEMORY;
	memcpy(slot, x, sizeof(double) * s->d);
	return commit_raw(s, err);
}

GcStatus
gc_stream_merge_encoded(GcStream *s, const uint8_t *buf, const GcStreamHeader *h,
						GcError *err)
{
	double	   *x = malloc(sizeof(double) * s->d);
	int64_t		index = 0;
	GcStatus	status = GC_OK;

	if (x == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream merge");
	for (int l = 0; l < h->nlevels && status == GC_OK; l++)
		for (int64_t i = 0; i < h->counts[l] && status == GC_OK; i++, index++)
		{
			double		w;

			gc_stream_get_point(buf, h, index, &w, x);
			status = push_point(s, l, w, x, err);
		}
	free(x);
	s->rows += h->rows;
	return status;
}

GcStatus
gc_stream_merge(GcStream *s, const GcStream *other, GcError *err)
{
	GcStatus	status = GC_OK;

	for (int64_t i = 0; i < other->block.n && status == GC_OK; i++)
		status = push_point(s, 0, 1.0, gc_rows_get(&other->block, i), err);
	for (int l = 1; l < other->nlevels && status == GC_OK; l++)
		for (int64_t i = 0; i < other->levels[l].count && status == GC_OK; i++)
			status = push_level(s, l, other->levels[l].weights[i],
								other->levels[l].points + (size_t) i * s->d, err);
	s->rows += other->rows;
	return status;
}

/*
 * gc_stream_merge then gc_stream_compact on an empty s, without copying
 * other's raw rows first: when they outnumber m they are clustered where
 * they lie (the same rows, seed and order of points, so the same centres)
 * and only the centres come into s.  A copy of a full block otherwise held
 * the block twice.
 */
GcStatus
gc_stream_merge_compacted(GcStream *s, const GcStream *other, GcError *err)
{
	GcStatus	status = GC_OK;
	double	   *centroids,
			   *weights;

	if (s->block.n > 0 || other->block.n <= s->m)
	{
		status = gc_stream_merge(s, other, err);
		return status == GC_OK ? gc_stream_compact(s, err) : status;
	}
	for (int l = 1; l < other->nlevels && status == GC_OK; l++)
		for (int64_t i = 0; i < other->levels[l].count && status == GC_OK; i++)
			status = push_level(s, l, other->levels[l].weights[i],
								other->levels[l].points + (size_t) i * s->d, err);
	s->rows += other->rows;
	if (status != GC_OK)
		return status;
	centroids = malloc(sizeof(double) * s->m * s->d);
	weights = malloc(sizeof(double) * s->m);
	if (centroids == NULL || weights == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a stream reduction");
	/* the fit reads the rows (computing any pending hash), never moves them */
	if (status == GC_OK)
		status = reduce_rows(s, s->backend, (GcRows *) &other->block, centroids, weights, err);
	if (status == GC_OK)
		status = push_centres(s, 1, centroids, weights, err);
	free(centroids);
	free(weights);
	return status;
}

GcStatus
gc_stream_compact(GcStream *s, GcError *err)
{
	return s->block.n > s->m ? reduce_block(s, err) : GC_OK;
}

int64_t
gc_stream_points(const GcStream *s)
{
	int64_t		total = s->block.n;

	for (int l = 1; l < s->nlevels; l++)
		total += s->levels[l].count;
	return total;
}

size_t
gc_stream_encoded_bytes(const GcStream *s)
{
	return gc_stream_encoded_size(s->d, s->nlevels, gc_stream_points(s));
}

void
gc_stream_encode(const GcStream *s, uint8_t *buf, size_t len)
{
	GcStreamHeader h = {0};
	int64_t		index = 0;

	h.d = s->d;
	h.k = s->k;
	h.m = s->m;
	h.block_rows = s->block_rows;
	h.nlevels = s->nlevels;
	h.rows = s->rows;
	h.seed = s->seed;
	h.cosine = s->cosine;
	h.counts[0] = s->block.n;
	for (int l = 1; l < s->nlevels; l++)
		h.counts[l] = s->levels[l].count;
	h.total = gc_stream_points(s);
	gc_stream_put_header(buf, &h);
	for (int64_t i = 0; i < s->block.n; i++)
		gc_stream_put_point(buf, &h, index++, 1.0, gc_rows_get(&s->block, i));
	for (int l = 1; l < s->nlevels; l++)
		for (int64_t i = 0; i < s->levels[l].count; i++)
			gc_stream_put_point(buf, &h, index++, s->levels[l].weights[i],
								s->levels[l].points + (size_t) i * s->d);
	gc_stream_seal(buf, len);
}

/*
 * Every point of the summary as weighted rows
 */
static GcStatus
collect_points(const GcStream *s, GcRows *rows, GcError *err)
{
	GcStatus	status = gc_rows_init(rows, s->d, plain_alloc, free, err);

	gc_rows_set_weighted(rows);
	for (int l = 0; l < s->nlevels && status == GC_OK; l++)
	{
		int64_t		count = l == 0 ? s->block.n : s->levels[l].count;

		for (int64_t i = 0; i < count; i++)
		{
			double	   *slot = gc_rows_reserve(rows, err);

			if (slot == NULL)
				return GC_ERR_HOST_MEMORY;
			if (l == 0)
				memcpy(slot, gc_rows_get(&s->block, i), sizeof(double) * s->d);
			else
				memcpy(slot, s->levels[l].points + (size_t) i * s->d, sizeof(double) * s->d);
			gc_rows_commit_weighted(rows, l == 0 ? 1.0 : s->levels[l].weights[i]);
		}
	}

	/*
	 * A cosine fit puts its centroids on the unit sphere, while the fit's
	 * frame bounds a point's distance to its centroid by the diagonal of
	 * the points' box.  Unit rows keep to that bound, as kmeans_gpu's do;
	 * centres, means of unit rows, are as short as the rows are spread and
	 * may all lie far inside the sphere: with any of them the box spans
	 * [-1, 1] in every dimension, where the points and the centroids lie
	 */
	if (status == GC_OK && s->cosine && gc_stream_points(s) > s->block.n)
		for (int j = 0; j < s->d; j++)
		{
			if (rows->lo[j] > -1.0)
				rows->lo[j] = -1.0;
			if (rows->hi[j] < 1.0)
				rows->hi[j] = 1.0;
		}
	return status;
}

/*
 * Under the cosine metric, the sum over points of w (1 - x . c), c the
 * point's unit centroid: the rows' 1 - cos where each went with its point
 * (gc_stream_fit)
 */
static double
cosine_inertia(const GcRows *rows, const int32_t *labels, const double *centroids)
{
	double		inertia = 0.0;

	for (int64_t i = 0; i < rows->n; i++)
	{
		const double *x = gc_rows_get(rows, i);
		const double *c = centroids + (size_t) labels[i] * rows->d;
		double		dot = 0.0;

		for (int j = 0; j < rows->d; j++)
			dot += x[j] * c[j];
		/* a unit row on its centroid may round to a dot above 1 */
		if (dot < 1.0)
			inertia += gc_rows_weight(rows, i) * (1.0 - dot);
	}
	return inertia;
}

GcStatus
gc_stream_fit(const GcStream *s, const GcKmeansBackend *backend,
			  const GcKmeansParams *params, double *centroids, int64_t *weights,
			  GcKmeansResult *result, GcError *err)
{
	GcRows		rows = {0};
	int64_t    *sizes = malloc(sizeof(int64_t) * params->k);
	int32_t    *labels = malloc(sizeof(int32_t) * (gc_stream_points(s) + 1));
	GcStatus	status = GC_OK;

	if (sizes == NULL || labels == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the stream model");
	if (status == GC_OK)
		status = collect_points(s, &rows, err);
	if (status == GC_OK)
	{
		memset(result, 0, sizeof(*result));
		result->centroids = centroids;
		result->sizes = sizes;
		result->labels = labels;
		status = run_fit(s, backend, &rows, params, result, err);
	}
	if (status == GC_OK)
	{
		memset(weights, 0, sizeof(int64_t) * params->k);
		for (int64_t i = 0; i < rows.n; i++)
			weights[labels[i]] += (int64_t) gc_rows_weight(&rows, i);
		if (params->metric == GC_METRIC_COSINE)
			result->inertia = cosine_inertia(&rows, labels, centroids);
	}
	gc_rows_release(&rows);
	result->sizes = NULL;
	result->labels = NULL;
	free(sizes);
	free(labels);
	return status;
}
