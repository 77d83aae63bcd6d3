/*-------------------------------------------------------------------------
 *
 * rowstore.c
 *	  The row store: rows appended one by one into chunks of host memory
 *	  (page-locked when the GPU will read them; the allocator may change
 *	  between chunks), as doubles or, in a narrow store, as float32, with a
 *	  content hash and the bounding box maintained as rows arrive.
 *
 * Chunks double from GC_FIRST_CHUNK_BYTES up to GC_MAX_CHUNK_BYTES, so a
 * ten-row query allocates kilobytes and four million rows need a handful
 * of allocations; rows are written once, in place, and never copied.
 * Whole chunks written elsewhere (the rows a parallel worker collected)
 * join a store with gc_rows_append_chunk, borrowed in place; a store's
 * placement (GcChunkPlacement) may put its large chunks elsewhere from
 * the start (a parallel worker's, in shared memory the leader borrows).
 * A narrow store's hashes and box are computed from its floats widened to
 * doubles, so they equal those of the same rows held as doubles, and
 * gc_rows_widen turns it into that store for the readers of doubles.
 *
 * IDENTIFICATION
 *	  engine/rowstore.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>

#define GC_FIRST_CHUNK_BYTES	((size_t) 64 * 1024)
#define GC_MAX_CHUNK_BYTES		((size_t) 64 * 1024 * 1024)

static GcChunk *new_chunk_slot(GcRows *rows, GcError *err);

/*
 * Initialize an empty store of d-dimensional rows
 */
GcStatus
gc_rows_init(GcRows *rows, int d, GcHostAlloc alloc, GcHostFree free_fn,
			 GcError *err)
{
	memset(rows, 0, sizeof(*rows));
	rows->d = d;
	rows->float_exact = true;
	rows->alloc = alloc;
	rows->free = free_fn;
	rows->lo = malloc(sizeof(double) * d);
	rows->hi = malloc(sizeof(double) * d);
	if (rows->lo == NULL || rows->hi == NULL)
	{
		gc_rows_release(rows);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the bounding box");
	}
	return GC_OK;
}

/*
 * Offer a new chunk to the store's placement; a refusal ends placement
 * for the store, whose later chunks it then allocates itself
 */
static bool
placed_chunk(GcRows *rows, GcChunk *chunk, size_t bytes)
{
	if (rows->placement.place == NULL || bytes < rows->placement.min_bytes)
		return false;
	if (rows->placement.place(rows->placement.arg, chunk, rows))
	{
		chunk->borrowed = true;
		chunk->free = NULL;
		return true;
	}
	rows->placement.place = NULL;
	return false;
}

/*
 * Add a chunk twice the size of the last one (up to the cap: a placed
 * chunk's or the store's own)
 */
static GcStatus
add_chunk(GcRows *rows, GcError *err)
{
	size_t		row_bytes = gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	size_t		bytes = GC_FIRST_CHUNK_BYTES;
	size_t		cap = rows->placement.place ? rows->placement.max_bytes : GC_MAX_CHUNK_BYTES;
	GcChunk    *chunk;

	if (rows->nchunks > 0)
	{
		GcChunk    *last = &rows->chunks[rows->nchunks - 1];

		bytes = (size_t) last->capacity * row_bytes * 2;
		if (bytes > cap)
			bytes = cap;
	}
	if (bytes < row_bytes)
		bytes = row_bytes;
	if (rows->max_bytes > 0)
	{
		size_t		held = 0;

		for (int c = 0; c < rows->nchunks; c++)
			held += (size_t) rows->chunks[c].capacity * row_bytes;
		if (held + row_bytes > rows->max_bytes)
			return gc_fail(err, GC_ERR_HOST_MEMORY,
						   "the rows need more than the %zu MB a fit may hold for them in host memory",
						   (rows->max_bytes + ((1 << 20) - 1)) >> 20);
		if (bytes > rows->max_bytes - held)
			bytes = rows->max_bytes - held;
	}

	chunk = new_chunk_slot(rows, err);
	if (chunk == NULL)
		return GC_ERR_HOST_MEMORY;
	memset(chunk, 0, sizeof(*chunk));
	chunk->capacity = (int64_t) (bytes / row_bytes);
	chunk->first_row = rows->n;
	if (placed_chunk(rows, chunk, bytes))
	{
		rows->nchunks++;
		return GC_OK;
	}
	if (bytes > GC_MAX_CHUNK_BYTES)
	{
		bytes = GC_MAX_CHUNK_BYTES;
		chunk->capacity = (int64_t) (bytes / row_bytes);
	}
	if (gc_rows_alloc_arrays(rows, chunk, chunk->capacity, err) != GC_OK)
		return err->status;
	rows->nchunks++;
	return GC_OK;
}

/*
 * Allocate the arrays of a chunk of capacity rows, its values as floats
 * (narrow) or doubles, with the store's allocator (freeing what was had
 * when one fails)
 */
static GcStatus
alloc_chunk_arrays(const GcRows *rows, GcChunk *chunk, int64_t capacity, bool narrow,
				   GcError *err)
{
	void	   *values = rows->alloc(gc_value_bytes(narrow) * rows->d * capacity);

	chunk->free = rows->free;
	gc_chunk_set_values(chunk, values, narrow);
	chunk->hashes = rows->alloc(sizeof(uint64_t) * capacity);
	chunk->weights = rows->weighted ? rows->alloc(sizeof(double) * capacity) : NULL;
	if (values == NULL || chunk->hashes == NULL ||
		(rows->weighted && chunk->weights == NULL))
	{
		if (values)
			rows->free(values);
		if (chunk->hashes)
			rows->free(chunk->hashes);
		if (chunk->weights)
			rows->free(chunk->weights);
		gc_chunk_set_values(chunk, NULL, narrow);
		chunk->hashes = NULL;
		chunk->weights = NULL;
		return gc_fail(err, GC_ERR_HOST_MEMORY,
					   "could not allocate host memory for %lld rows",
					   (long long) capacity);
	}
	return GC_OK;
}

/* A chunk's arrays for capacity rows of the store's width */
GcStatus
gc_rows_alloc_arrays(const GcRows *rows, GcChunk *chunk, int64_t capacity, GcError *err)
{
	return alloc_chunk_arrays(rows, chunk, capacity, rows->narrow, err);
}

/*
 * Allocate the chunks added from now on with alloc and free; the chunks
 * already there keep the allocator they came from
 */
void
gc_rows_set_allocator(GcRows *rows, GcHostAlloc alloc, GcHostFree free_fn)
{
	rows->alloc = alloc;
	rows->free = free_fn;
}

size_t
gc_row_bytes(int d, bool narrow, bool weighted)
{
	return gc_value_bytes(narrow) * (size_t) d + sizeof(uint64_t) +
		(weighted ? sizeof(double) : 0);
}

/*
 * Hold the rows as float32 (gc_engine.h, "Narrow stores"); only allowed
 * while the store is empty
 */
void
gc_rows_set_narrow(GcRows *rows)
{
	if (rows->nchunks == 0)
		rows->narrow = true;
}

/* The chunk the next row goes into, added when the last one is full */
static GcChunk *
chunk_with_room(GcRows *rows, GcError *err)
{
	GcChunk    *chunk = rows->nchunks ? &rows->chunks[rows->nchunks - 1] : NULL;

	if (chunk == NULL || chunk->count == chunk->capacity)
	{
		if (add_chunk(rows, err) != GC_OK)
			return NULL;
		chunk = &rows->chunks[rows->nchunks - 1];
	}
	return chunk;
}

/*
 * Return the slot for the next row of a store of doubles; gc_rows_commit
 * makes it count
 */
double *
gc_rows_reserve(GcRows *rows, GcError *err)
{
	GcChunk    *chunk = chunk_with_room(rows, err);

	return chunk ? chunk->values + (size_t) chunk->count * rows->d : NULL;
}

float *
gc_rows_reserve_narrow(GcRows *rows, GcError *err)
{
	GcChunk    *chunk = chunk_with_room(rows, err);

	return chunk ? chunk->narrow_values + (size_t) chunk->count * rows->d : NULL;
}

/*
 * Widen the bounding box [lo, hi] to take in x and, with with_hash,
 * return x's row hash (gc_row_hash), in one pass over the row, clearing
 * *float_exact when a value is not a float32 value.  The comparisons are
 * selects and the hash a sum of independent terms, so the loop vectorises:
 * with AVX-512's 64-bit multiplies it runs five times as fast as the
 * scalar loop on 768-dimensional rows, with AVX2 three times
 * (GC_SIMD_CLONES).  Every operation is exact, so every clone gives the
 * same box and hash.  Without the hash (a store that defers it) the pass
 * costs about a third as much again as copying the row in, with it about
 * as much again (bench/results/collect-microbench-h100.txt).
 */
static inline __attribute__((always_inline)) uint64_t
widen_box_and_hash(const void *restrict x, bool narrow, bool with_hash,
				   double *restrict lo, double *restrict hi, int d, bool *float_exact)
{
	uint64_t	sum = 0;
	uint64_t	salt = 0;
	uint64_t	inexact = 0;

	for (int j = 0; j < d; j++)
	{
		double		v = narrow ? (double) ((const float *) x)[j] : ((const double *) x)[j];

		lo[j] = v < lo[j] ? v : lo[j];
		hi[j] = v > hi[j] ? v : hi[j];
		if (with_hash)
		{
			sum += gc_row_hash_term(v, salt);
			salt += GC_ROW_HASH_SALT_STEP;
		}
		inexact |= (double) (float) v != v;
	}
	if (inexact)
		*float_exact = false;
	return with_hash ? gc_row_hash_finish(sum, d) : 0;
}

/* widen_box_and_hash of a row of doubles and of a row of floats, cloned */
GC_SIMD_CLONES
static uint64_t
wide_row_box_and_hash(const double *restrict x, double *restrict lo,
					  double *restrict hi, int d, bool *float_exact)
{
	return widen_box_and_hash(x, false, true, lo, hi, d, float_exact);
}

GC_SIMD_CLONES
static uint64_t
narrow_row_box_and_hash(const float *restrict x, double *restrict lo,
						double *restrict hi, int d, bool *float_exact)
{
	return widen_box_and_hash(x, true, true, lo, hi, d, float_exact);
}

/* The same without the hash, for a store that defers it */
GC_SIMD_CLONES
static void
wide_row_box(const double *restrict x, double *restrict lo, double *restrict hi, int d,
			 bool *float_exact)
{
	(void) widen_box_and_hash(x, false, false, lo, hi, d, float_exact);
}

GC_SIMD_CLONES
static void
narrow_row_box(const float *restrict x, double *restrict lo, double *restrict hi, int d,
			   bool *float_exact)
{
	(void) widen_box_and_hash(x, true, false, lo, hi, d, float_exact);
}

/*
 * Account for the row written into the reserved slot
 */
void
gc_rows_commit(GcRows *rows)
{
	GcChunk    *chunk = &rows->chunks[rows->nchunks - 1];
	size_t		at = (size_t) chunk->count * rows->d;
	int			d = rows->d;

	if (rows->n == 0)
		for (int j = 0; j < d; j++)
			rows->lo[j] = rows->hi[j] =
				rows->narrow ? (double) chunk->narrow_values[at + j] : chunk->values[at + j];
	if (rows->defer_hashes)
	{
		if (rows->narrow)
			narrow_row_box(chunk->narrow_values + at, rows->lo, rows->hi, d, &rows->float_exact);
		else
			wide_row_box(chunk->values + at, rows->lo, rows->hi, d, &rows->float_exact);
		chunk->hashes_pending = true;
	}
	else
		chunk->hashes[chunk->count] = rows->narrow ?
			narrow_row_box_and_hash(chunk->narrow_values + at, rows->lo, rows->hi, d,
									&rows->float_exact) :
			wide_row_box_and_hash(chunk->values + at, rows->lo, rows->hi, d,
								  &rows->float_exact);
	chunk->count++;
	rows->n++;
	rows->total_weight++;
}

/*
 * Make rows carry weights; only allowed while the store is empty
 */
void
gc_rows_set_weighted(GcRows *rows)
{
	if (rows->nchunks == 0)
		rows->weighted = true;
}

/*
 * Commit the reserved row with a weight.  A weight that is not a whole
 * number from 1 to GC_MAX_WEIGHT, or a total past 2^62, marks the store,
 * and gc_kmeans_fit refuses it.
 */
void
gc_rows_commit_weighted(GcRows *rows, double weight)
{
	GcChunk    *chunk = &rows->chunks[rows->nchunks - 1];

	if (!(weight >= 1.0 && weight <= GC_MAX_WEIGHT && weight == floor(weight)) ||
		rows->total_weight > (INT64_C(1) << 62) - (int64_t) weight)
	{
		rows->bad_weight = true;
		weight = 1.0;
	}
	chunk->weights[chunk->count] = weight;
	rows->total_weight += (int64_t) weight - 1;	/* commit adds the 1 */
	gc_rows_commit(rows);
}

/*
 * Grow the chunk list by one entry
 */
static GcChunk *
new_chunk_slot(GcRows *rows, GcError *err)
{
	if (rows->nchunks == rows->maxchunks)
	{
		int			newmax = rows->maxchunks ? rows->maxchunks * 2 : 16;
		GcChunk    *grown = realloc(rows->chunks, sizeof(GcChunk) * newmax);

		if (grown == NULL)
		{
			gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the chunk list");
			return NULL;
		}
		rows->chunks = grown;
		rows->maxchunks = newmax;
	}
	return &rows->chunks[rows->nchunks];
}

GcStatus
gc_rows_append_chunk(GcRows *rows, const GcChunk *src, const double *lo,
					 const double *hi, int64_t total_weight, bool bad_weight,
					 GcError *err)
{
	GcChunk    *chunk;
	int			d = rows->d;

	if (src->count == 0)
		return GC_OK;
	chunk = new_chunk_slot(rows, err);
	if (chunk == NULL)
		return GC_ERR_HOST_MEMORY;
	*chunk = *src;
	if (chunk->free == NULL)
		chunk->free = rows->free;	/* owned: freed like the store's own */
	chunk->capacity = src->count;	/* full: later rows go to a new chunk */
	chunk->first_row = rows->n;
	if (!rows->weighted)
		chunk->weights = NULL;
	rows->nchunks++;

	for (int j = 0; j < d; j++)
	{
		if (rows->n == 0 || lo[j] < rows->lo[j])
			rows->lo[j] = lo[j];
		if (rows->n == 0 || hi[j] > rows->hi[j])
			rows->hi[j] = hi[j];
	}
	rows->n += src->count;
	rows->total_weight += total_weight;
	rows->bad_weight |= bad_weight;
	rows->float_exact &= src->float_exact;
	return GC_OK;
}

/*
 * Find the chunk holding row i (chunks are few: a binary search is plenty)
 */
static const GcChunk *
chunk_of(const GcRows *rows, int64_t i)
{
	int			lo = 0,
				hi = rows->nchunks - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (rows->chunks[mid].first_row <= i)
			lo = mid;
		else
			hi = mid - 1;
	}
	return &rows->chunks[lo];
}

/* Row i of a store of doubles */
const double *
gc_rows_get(const GcRows *rows, int64_t i)
{
	const GcChunk *chunk = chunk_of(rows, i);

	return chunk->values + (size_t) (i - chunk->first_row) * rows->d;
}

void
gc_rows_copy_row(const GcRows *rows, int64_t i, double *out)
{
	const GcChunk *chunk = chunk_of(rows, i);
	size_t		at = (size_t) (i - chunk->first_row) * rows->d;

	if (chunk->narrow_values == NULL)
		memcpy(out, chunk->values + at, sizeof(double) * rows->d);
	else
		for (int j = 0; j < rows->d; j++)
			out[j] = chunk->narrow_values[at + j];
}

/*
 * A store (sub, of doubles, from malloc) of the rows listed, in that
 * order, with their weights; sub is the caller's to release, also on
 * failure
 */
GcStatus
gc_rows_gather(const GcRows *rows, const int64_t *list, int64_t count, GcRows *sub,
			   GcError *err)
{
	if (gc_rows_init(sub, rows->d, malloc, free, err) != GC_OK)
		return err->status;
	if (rows->weighted)
		gc_rows_set_weighted(sub);
	for (int64_t i = 0; i < count; i++)
	{
		double	   *slot = gc_rows_reserve(sub, err);

		if (slot == NULL)
			return err->status;
		gc_rows_copy_row(rows, list[i], slot);
		if (rows->weighted)
			gc_rows_commit_weighted(sub, gc_rows_weight(rows, list[i]));
		else
			gc_rows_commit(sub);
	}
	sub->float_exact = rows->float_exact;
	return GC_OK;
}

/*
 * Replace each chunk of floats with one of doubles from the store's
 * allocator (hashes and weights copied too, so that the new chunk owns
 * all its arrays), freeing the old one unless it is borrowed: the rows
 * held at once grow by one chunk's, not by the store's.  Each chunk says
 * its own width, so a store left half widened by a failure still reads
 * back, and widening it again finishes the job.
 */
GcStatus
gc_rows_widen(GcRows *rows, GcError *err)
{
	for (int c = 0; c < rows->nchunks; c++)
	{
		GcChunk    *chunk = &rows->chunks[c];
		GcChunk		wide = *chunk;
		size_t		count = (size_t) chunk->count;

		if (chunk->narrow_values == NULL)
			continue;
		if (alloc_chunk_arrays(rows, &wide, chunk->count > 0 ? chunk->count : 1, false,
							   err) != GC_OK)
			return err->status;
		for (size_t v = 0; v < count * rows->d; v++)
			wide.values[v] = chunk->narrow_values[v];
		memcpy(wide.hashes, chunk->hashes, sizeof(uint64_t) * count);
		if (chunk->weights)
			memcpy(wide.weights, chunk->weights, sizeof(double) * count);
		if (!chunk->borrowed)
		{
			chunk->free(chunk->narrow_values);
			chunk->free(chunk->hashes);
			if (chunk->weights)
				chunk->free(chunk->weights);
		}
		wide.capacity = chunk->count;	/* full: later rows go to a new chunk */
		wide.borrowed = false;
		*chunk = wide;
	}
	rows->narrow = false;
	return GC_OK;
}

uint64_t
gc_rows_hash(const GcRows *rows, int64_t i)
{
	const GcChunk *chunk = chunk_of(rows, i);
	int64_t		r = i - chunk->first_row;

	if (chunk->hashes_pending)
		return gc_chunk_row_hash(chunk, r, rows->d);
	return chunk->hashes[r];
}

void
gc_rows_defer_hashes(GcRows *rows)
{
	rows->defer_hashes = true;
}

double
gc_rows_weight(const GcRows *rows, int64_t i)
{
	const GcChunk *chunk;

	if (!rows->weighted)
		return 1.0;
	chunk = chunk_of(rows, i);
	return chunk->weights[i - chunk->first_row];
}

/*
 * Free every chunk; safe to call twice and on a store never initialized
 */
void
gc_rows_release(GcRows *rows)
{
	for (int c = 0; c < rows->nchunks; c++)
	{
		if (rows->chunks[c].borrowed)
			continue;
		rows->chunks[c].free(gc_chunk_values(&rows->chunks[c]));
		rows->chunks[c].free(rows->chunks[c].hashes);
		if (rows->chunks[c].weights)
			rows->chunks[c].free(rows->chunks[c].weights);
	}
	free(rows->chunks);
	free(rows->lo);
	free(rows->hi);
	gc_rows_forget_copies(rows);
	rows->chunks = NULL;
	rows->lo = rows->hi = NULL;
	rows->nchunks = rows->maxchunks = 0;
	rows->n = 0;
	rows->total_weight = 0;
	rows->weighted = false;
	rows->bad_weight = false;
	rows->float_exact = true;
	rows->narrow = false;
	rows->defer_hashes = false;
}

/* Write row i: values (not row i's own), hash and weight */
static void
put_row(GcRows *rows, int64_t i, const double *values, uint64_t hash, double weight)
{
	GcChunk    *chunk = (GcChunk *) chunk_of(rows, i);
	int64_t		r = i - chunk->first_row;

	memcpy(chunk->values + (size_t) r * rows->d, values, sizeof(double) * rows->d);
	chunk->hashes[r] = hash;
	if (rows->weighted)
		chunk->weights[r] = weight;
}

/*
 * Reorder the rows in place, cycle by cycle: row i becomes the row that
 * was at order[i].  order, a permutation of 0 .. n - 1, is consumed (it is
 * the identity afterwards); the bounding box and total weight stay.
 */
GcStatus
gc_rows_permute(GcRows *rows, int64_t *order, GcError *err)
{
	double	   *values;

	if (gc_rows_widen(rows, err) != GC_OK)
		return err->status;
	values = malloc(sizeof(double) * rows->d);
	if (values == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory reordering rows");
	for (int64_t i = 0; i < rows->n; i++)
	{
		int64_t		j = i;
		uint64_t	hash;
		double		weight;

		if (order[i] == i)
			continue;
		memcpy(values, gc_rows_get(rows, i), sizeof(double) * rows->d);
		hash = gc_rows_hash(rows, i);
		weight = gc_rows_weight(rows, i);
		while (order[j] != i)
		{
			int64_t		next = order[j];

			put_row(rows, j, gc_rows_get(rows, next), gc_rows_hash(rows, next),
					gc_rows_weight(rows, next));
			order[j] = j;
			j = next;
		}
		order[j] = j;
		put_row(rows, j, values, hash, weight);
	}
	free(values);
	return GC_OK;
}
