/*-------------------------------------------------------------------------
 *
 * gc_stream.h
 *	  Streaming k-means in the engine: a STREAM-style divide-and-conquer
 *	  summary (Guha, Meyerson, Mishra, Motwani & O'Callaghan, 2003;
 *	  run on the GPU block by block as in Cao, Tung & Zhou, 2006, s. 4.4).
 *
 * Raw rows fill a block (level 0, in the device's host memory); a full
 * block is clustered into m weighted centres, appended to level 1; a
 * level l > 0 holding more than GC_STREAM_FANOUT * m centres is clustered
 * (weighted k-means) into m centres appended to level l + 1.  Memory is
 * O(block_rows + FANOUT m levels) whatever the number of rows, and levels
 * grow as log_FANOUT(n / block_rows).  Two summaries merge by pushing one's
 * points into the other level by level; the final model is weighted
 * k-means over every point the summary holds.
 *
 * Under the cosine metric the rows are unit vectors when they enter and the
 * reductions stay Euclidean: a centre is then the mean of the unit rows it
 * took, shorter than 1, and w times it is their sum, which is all the
 * spherical fit needs of them (its labels rank by x . c, its centroids are
 * sums of rows put back on the sphere).
 *
 * IDENTIFICATION
 *	  engine/gc_stream.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_STREAM_H
#define GC_STREAM_H

#include "gc_engine.h"
#include "stream_format.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct GcStreamLevel
{
	int64_t		count;
	double	   *weights;		/* FANOUT * m + 1 slots, allocated on first use */
	double	   *points;			/* as many rows of d values */
} GcStreamLevel;

/*
 * How a summary's clusterings run (its reductions and its model's fit):
 * gc_kmeans_fit on backend, unless the caller puts its own in GcStream.fit
 * (the glue's hands them to the GPU service)
 */
typedef GcStatus (*GcStreamFit) (void *arg, const GcKmeansBackend *backend,
								 GcRows *rows, const GcKmeansParams *params,
								 GcKmeansResult *result, GcError *err);

typedef struct GcStream
{
	int			d;
	int			k;				/* clusters of the final model */
	int			m;				/* centres each reduction keeps */
	int			block_rows;
	int			nlevels;		/* levels in use, at least 1 */
	bool		cosine;			/* the rows are unit vectors (the cosine metric) */
	int64_t		rows;			/* rows summarised */
	uint64_t	seed;
	int64_t		reductions;		/* reductions so far, varies their seeds */
	GcRows		block;			/* level 0: raw rows */
	GcStreamLevel levels[GC_STREAM_MAX_LEVELS];	/* [0] unused */
	const GcKmeansBackend *backend; /* clusters full blocks and levels */
	GcStreamFit fit;			/* NULL: gc_kmeans_fit */
	void	   *fit_arg;
	GcHostAlloc alloc;			/* the block's memory (pinned for the GPU) */
	GcHostFree	free;
	bool		(*interrupted) (void);
	size_t		max_block_bytes;	/* the block's chunks, 0 for no limit */
	size_t		max_level_bytes;	/* the levels' arrays together, 0 for no limit */
	size_t		level_bytes;	/* the levels' arrays allocated */
} GcStream;

/*
 * Memory limits of a summary (gc_stream_limit_memory): its block's chunks
 * and its levels' arrays each stay within their bound, and a row or a
 * level past it fails with GC_ERR_HOST_MEMORY
 */
extern void gc_stream_limit_memory(GcStream *s, size_t max_block_bytes,
								   size_t max_level_bytes);
/* The bytes one level's arrays take */
extern size_t gc_stream_level_bytes(int m, int d);

extern GcStatus gc_stream_init(GcStream *s, const GcStreamHeader *shape,
							   const GcKmeansBackend *backend,
							   GcHostAlloc alloc, GcHostFree free_fn,
							   bool (*interrupted) (void), GcError *err);
extern void gc_stream_release(GcStream *s);

/* Append one raw row: a slot to write d values into, then commit */
extern double *gc_stream_reserve(GcStream *s, GcError *err);
extern GcStatus gc_stream_commit(GcStream *s, GcError *err);

/* Add every point of a decoded summary, or of another stream */
extern GcStatus gc_stream_merge_encoded(GcStream *s, const uint8_t *buf,
										const GcStreamHeader *h, GcError *err);
extern GcStatus gc_stream_merge(GcStream *s, const GcStream *other, GcError *err);
/* The same, then gc_stream_compact, on an empty s: other's raw rows not copied */
extern GcStatus gc_stream_merge_compacted(GcStream *s, const GcStream *other, GcError *err);

/* Cluster the raw rows of level 0 into centres, when they outnumber m */
extern GcStatus gc_stream_compact(GcStream *s, GcError *err);

/* Points held (all levels), the encoded size, and the encoding itself */
extern int64_t gc_stream_points(const GcStream *s);
extern size_t gc_stream_encoded_bytes(const GcStream *s);
extern void gc_stream_encode(const GcStream *s, uint8_t *buf, size_t len);

/*
 * Weighted k-means (params->k clusters) over every point of the summary,
 * on backend (through s->fit when set): centroids (k * d), the rows each cluster stands for
 * (weights, k) and the weighted inertia over the summary's points.  Under
 * the cosine metric (params->metric, the summary's) the inertia is the sum
 * of w (1 - x . c), x a point and c its unit centroid: as x is the mean of
 * the w unit rows it stands for, the sum of 1 - cos over those rows, had
 * each gone where its point went.
 */
extern GcStatus gc_stream_fit(const GcStream *s, const GcKmeansBackend *backend,
							  const GcKmeansParams *params, double *centroids,
							  int64_t *weights, GcKmeansResult *result,
							  GcError *err);

#ifdef __cplusplus
}
#endif

#endif							/* GC_STREAM_H */
