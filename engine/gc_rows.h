/*-------------------------------------------------------------------------
 *
 * gc_rows.h
 *	  The row store (GcRows: rows in chunks, narrow or double, weighted or
 *	  not, their hashes and bounding box) and the numeric frame both
 *	  backends label and sum in (GcFrame).
 *
 * IDENTIFICATION
 *	  engine/gc_rows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ROWS_H
#define GC_ROWS_H

#include "gc_base.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* ---------------------------------------------------------------------
 * Row store: rows appended one at a time into chunks of (possibly pinned)
 * host memory.  Chunks double in size up to a cap, so that small inputs
 * stay small and large ones need few allocations; rows are never copied
 * after they are appended.  With max_bytes set, the chunks together stay
 * within it and a row past it fails with GC_ERR_HOST_MEMORY.  Rows may carry weights (a parallel array per
 * chunk): whole numbers from 1 to GC_MAX_WEIGHT, the rows a stream
 * summary's centre stands for.  k-means then minimises the weighted
 * inertia, with the same exact integer arithmetic as for unweighted rows
 * (a row of weight w counts as w copies of it).
 * ---------------------------------------------------------------------
 */
typedef void *(*GcHostAlloc) (size_t bytes);
typedef void (*GcHostFree) (void *ptr);

typedef struct GcChunk
{
	double	   *values;			/* capacity * d values, row-major; NULL when narrow */
	float	   *narrow_values;	/* the same as float32 in a narrow store (GcRows.narrow) */
	uint64_t   *hashes;			/* capacity row hashes */
	double	   *weights;		/* capacity row weights; NULL when unweighted */
	int64_t		first_row;		/* index of this chunk's first row */
	int64_t		count;			/* rows used */
	int64_t		capacity;		/* rows allocated */
	bool		borrowed;		/* memory owned elsewhere: never freed here */
	bool		float_exact;	/* gc_rows_append_chunk: every value is a
								 * float32 value (GcRows.float_exact) */
	bool		hashes_pending; /* rows committed without their hashes
								 * (GcRows.defer_hashes): hashes[] means
								 * nothing until gc_rows_finish_hashes */
	GcHostFree	free;			/* frees this chunk's arrays */
} GcChunk;

/*
 * Placement of a store's large chunks in memory another process can read
 * (a parallel worker's rows in shared memory, where the leader borrows
 * them): place sets the arrays of a chunk of chunk->capacity rows and
 * marks it borrowed, or returns false, after which the store allocates
 * every chunk itself.  Chunks of at least min_bytes are offered, and
 * placed chunks grow to max_bytes.
 */
struct GcRows;
typedef bool (*GcPlaceChunk) (void *arg, GcChunk *chunk, const struct GcRows *rows);

typedef struct GcChunkPlacement
{
	GcPlaceChunk place;			/* NULL: none */
	void	   *arg;
	size_t		min_bytes;
	size_t		max_bytes;
} GcChunkPlacement;

typedef struct GcRows
{
	int			d;
	int64_t		n;
	int			nchunks;
	int			maxchunks;
	GcChunk    *chunks;
	double	   *lo;				/* per-dimension minimum */
	double	   *hi;				/* per-dimension maximum */
	bool		weighted;		/* rows carry weights (gc_rows_set_weighted) */
	int64_t		total_weight;	/* sum of the weights (n when unweighted) */
	bool		bad_weight;		/* some weight is not a whole number in range */
	bool		float_exact;	/* every value is a float32 value (vector,
								 * halfvec and real[] rows: an upload may
								 * move them as float32) */
	bool		narrow;			/* values held as float32 (gc_rows_set_narrow) */
	bool		defer_hashes;	/* commits leave the row hashes to
								 * gc_rows_finish_hashes */
	size_t		max_bytes;		/* chunk memory allowed, 0 for no limit */
	GcHostAlloc alloc;			/* allocator for new chunks */
	GcHostFree	free;
	GcChunkPlacement placement; /* where large chunks go, if elsewhere */
	uint64_t   *draw_hashes;	/* n hashes seeding draws from, where some
								 * row repeats (gc_rows_number_copies);
								 * NULL: the chunks' hashes */
} GcRows;

extern GcStatus gc_rows_init(GcRows *rows, int d, GcHostAlloc alloc,
							 GcHostFree free, GcError *err);
/* New chunks from alloc (page-locked once the GPU will read the rows) */
extern void gc_rows_set_allocator(GcRows *rows, GcHostAlloc alloc,
								  GcHostFree free);
extern double *gc_rows_reserve(GcRows *rows, GcError *err);

/*
 * Narrow stores.  Rows whose values are all float32 values (vector,
 * halfvec and real[] columns under the Euclidean metric) can be held as
 * float32: half the bytes to write while collecting, to hand from a
 * parallel worker to its leader and to upload, and twice the rows within
 * a memory limit.  Their hashes and bounding box are those of the same
 * values held as doubles, so a fit gives the same clusters either way.
 * The GPU backend reads them as they are (GcKmeansBackend.reads_narrow);
 * the engine's other readers want doubles (gc_rows_get, a chunk's
 * values), and gc_rows_widen gives them those first.
 */
/* Hold the rows as float32; only allowed while the store is empty */
extern void gc_rows_set_narrow(GcRows *rows);
/* A narrow store's slot for the next row; gc_rows_commit makes it count */
extern float *gc_rows_reserve_narrow(GcRows *rows, GcError *err);
/* Turn a narrow store into one of doubles, chunk by chunk */
extern GcStatus gc_rows_widen(GcRows *rows, GcError *err);
/* Row i's values as doubles into out, from a store of either width */
extern void gc_rows_copy_row(const GcRows *rows, int64_t i, double *out);
/* The rows listed, in that order, with their weights, as a store of doubles of its own */
extern GcStatus gc_rows_gather(const GcRows *rows, const int64_t *list, int64_t count,
							   GcRows *sub, GcError *err);
/* Bytes a row takes in a chunk: its values, its hash and its weight */
extern size_t gc_row_bytes(int d, bool narrow, bool weighted);

/* Bytes one value takes: a float in a narrow store, else a double */
static inline size_t
gc_value_bytes(bool narrow)
{
	return narrow ? sizeof(float) : sizeof(double);
}

/* A chunk's values, whichever their width */
static inline void *
gc_chunk_values(const GcChunk *chunk)
{
	return chunk->narrow_values ? (void *) chunk->narrow_values : (void *) chunk->values;
}

/* Point a chunk at values of the width narrow says */
static inline void
gc_chunk_set_values(GcChunk *chunk, void *values, bool narrow)
{
	chunk->values = narrow ? NULL : (double *) values;
	chunk->narrow_values = narrow ? (float *) values : NULL;
}
/* A chunk's arrays for capacity rows from the store's allocator */
extern GcStatus gc_rows_alloc_arrays(const GcRows *rows, GcChunk *chunk, int64_t capacity,
									 GcError *err);
extern void gc_rows_commit(GcRows *rows);
/* Weighted rows: call before the first row, then commit with a weight */
extern void gc_rows_set_weighted(GcRows *rows);
extern void gc_rows_commit_weighted(GcRows *rows, double weight);
extern double gc_rows_weight(const GcRows *rows, int64_t i);
extern const double *gc_rows_get(const GcRows *rows, int64_t i);
/*
 * Append src->count rows held in src's arrays as one chunk (a partial
 * state's rows, gathered from another process): lo, hi and total_weight
 * describe them.  A borrowed chunk is used in place and never freed by
 * the store; any other chunk must come from the store's allocator and is
 * freed with it.
 */
extern GcStatus gc_rows_append_chunk(GcRows *rows, const GcChunk *src,
									 const double *lo, const double *hi,
									 int64_t total_weight, bool bad_weight,
									 GcError *err);
/* Row i's hash: its chunk's, or computed from its values while pending */
extern uint64_t gc_rows_hash(const GcRows *rows, int64_t i);

/*
 * Deferred row hashes (engine/row_hashes.c).  Hashing a row costs about
 * as much as copying it in (two 64-bit multiplies a value), and a serial
 * collection runs on one core.  A store whose rows all reach a fit in
 * this process can leave the hashes to one pass over the whole store on
 * every core, just before the fit: commits then widen the bounding box
 * alone.  The hashes are the same either way.  gc_kmeans_fit finishes
 * them itself; whatever copies a store's hashes elsewhere finishes them
 * first.
 */
/* Commits from now on leave their rows' hashes pending */
extern void gc_rows_defer_hashes(GcRows *rows);
/*
 * Compute every pending hash, on up to GC_HASH_THREADS threads, polling
 * interrupted (may be NULL) on the calling thread; GC_INTERRUPTED leaves
 * the store pending as it was
 */
extern GcStatus gc_rows_finish_hashes(GcRows *rows, bool (*interrupted) (void),
									  GcError *err);
#define GC_HASH_THREADS 16
/*
 * Copies of a row (engine/row_copies.c): draw hashes by which the j-th
 * copy of a repeated row draws apart from the others, so that seeding
 * weighs each row by its copies.  gc_kmeans_fit numbers them (after the
 * hashes are finished) and forgets them at its end.
 */
extern GcStatus gc_rows_number_copies(GcRows *rows, bool (*interrupted) (void),
									  GcError *err);
extern void gc_rows_forget_copies(GcRows *rows);

/* gc_row_hash of row r of a chunk of d-dimensional rows, either width */
extern uint64_t gc_chunk_row_hash(const GcChunk *chunk, int64_t r, int d);

/* Reorder in place: row i becomes old row order[i] (order is consumed) */
extern GcStatus gc_rows_permute(GcRows *rows, int64_t *order, GcError *err);
extern void gc_rows_release(GcRows *rows);

/* ---------------------------------------------------------------------
 * Numeric frame shared by both backends so that their results agree bit
 * for bit: data are labelled relative to the bounding box's centre, and
 * centroid sums are accumulated as exact 64-bit fixed-point integers
 * (so their value does not depend on the order in which rows are added);
 * the scale leaves room for the total weight of the rows, so weighted
 * sums (weight times quantised value) are exact integers too.
 * ---------------------------------------------------------------------
 */
typedef struct GcFrame
{
	int			d;
	double	   *offset;			/* per-dimension bounding-box centre */
	double	   *scale;			/* per-dimension fixed-point scale, a power of 2 */
	double		diagonal;		/* bounding-box diagonal */
	int			inertia_exp;	/* squared distances summed in units of 2^-inertia_exp */
	/* k-means' tolerance (gc_frame_set_tolerance, engine/tolerance.c) */
	double		variance;		/* mean per-dimension variance of the rows */
	int			shift_exp;		/* squared shifts summed in units of 2^-shift_exp */
	uint64_t	shift_limit;	/* tol times the variance, in those units */
} GcFrame;

/* Sum of exactly quantised squared distances, back to a double */
extern double gc_inertia_value(unsigned __int128 sum, const GcFrame *frame);

extern GcStatus gc_frame_init(GcFrame *frame, const GcRows *rows, GcError *err);
extern void gc_frame_release(GcFrame *frame);

/* A weight as the integer it is checked to be (1 for unweighted rows) */
static inline int64_t
gc_chunk_weight(const GcChunk *chunk, int64_t i)
{
	return chunk->weights ? (int64_t) chunk->weights[i] : 1;
}

/* The hash row i of chunk draws its seeding numbers from */
static inline uint64_t
gc_draw_hash(const GcRows *rows, const GcChunk *chunk, int64_t i)
{
	return rows->draw_hashes ? rows->draw_hashes[chunk->first_row + i] : chunk->hashes[i];
}

#ifdef __cplusplus
}
#endif

#endif							/* GC_ROWS_H */
