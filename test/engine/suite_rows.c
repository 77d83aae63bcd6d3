/*-------------------------------------------------------------------------
 *
 * suite_rows.c
 *	  The row store: allocator switches, chunk placement, page-locking
 *	  ahead and staged uploads (GPU), narrow stores, the fixed-point
 *	  quantisation, row hashes (deferred and not) and permutation.
 *
 * IDENTIFICATION
 *	  test/engine/suite_rows.c
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
void
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

/* A chunk placement that takes chunks from malloc until it has placed limit */
typedef struct TestPlacement
{
	int			placed;
	int			limit;
	size_t		smallest;		/* bytes of the smallest chunk offered */
	size_t		largest;
	void	   *blocks[64];
} TestPlacement;

static bool
test_place(void *arg, GcChunk *chunk, const GcRows *rows)
{
	TestPlacement *tp = (TestPlacement *) arg;
	size_t		bytes = (size_t) chunk->capacity * gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	size_t		value_bytes = gc_value_bytes(rows->narrow);
	char	   *block;

	if (tp->placed == tp->limit || (block = malloc(bytes)) == NULL)
		return false;
	tp->smallest = tp->placed == 0 || bytes < tp->smallest ? bytes : tp->smallest;
	tp->largest = bytes > tp->largest ? bytes : tp->largest;
	tp->blocks[tp->placed++] = block;
	gc_chunk_set_values(chunk, block, rows->narrow);
	chunk->hashes = (uint64_t *) (block + value_bytes * rows->d * chunk->capacity);
	chunk->weights = NULL;
	return true;
}

/*
 * A store's placement (GcChunkPlacement): chunks from min_bytes on are
 * offered and placed, growing to max_bytes, and never freed by the store;
 * the first refusal ends placement, later chunks come from the store's
 * allocator; the rows read back unchanged.  And float_exact: true while
 * every value is a float32 value, cleared by one that is not or by a chunk
 * appended without the promise.
 */
void
run_placement_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	TestPlacement tp = {0, 3, 0, 0, {0}};
	int			d = 16;
	int64_t		n = 200000;		/* 27 MB of rows */
	bool		same = true;
	int			placed_chunks = 0,
				after_refusal = 0;
	GcChunk		chunk = {0};
	double		values[16] = {0};
	uint64_t	hash = 0;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	rows.placement.place = test_place;
	rows.placement.arg = &tp;
	rows.placement.min_bytes = (size_t) 1 << 20;
	rows.placement.max_bytes = (size_t) 4 << 20;
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = (double) (float) (i * 0.25 + j);
		gc_rows_commit(&rows);
	}
	for (int c = 0; c < rows.nchunks; c++)
	{
		placed_chunks += rows.chunks[c].borrowed;
		after_refusal += placed_chunks == tp.limit && !rows.chunks[c].borrowed;
	}
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (float) (i * 0.25 + j);
	check(same, "placement: rows read back", "rowstore");
	check(placed_chunks == tp.limit && tp.smallest + 1024 >= rows.placement.min_bytes &&
		  tp.smallest < rows.placement.min_bytes * 2 &&
		  tp.largest <= rows.placement.max_bytes && tp.largest + 1024 >= rows.placement.max_bytes,
		  "placement: chunks from min_bytes on placed, up to max_bytes", "rowstore");
	check(after_refusal > 0 && rows.placement.place == NULL,
		  "placement: a refusal ends it, the store allocates the rest", "rowstore");
	check(rows.float_exact, "float_exact: float32 values", "rowstore");
	chunk.values = values;
	chunk.hashes = &hash;
	chunk.count = 1;
	chunk.borrowed = true;
	chunk.float_exact = true;
	gc_rows_append_chunk(&rows, &chunk, values, values, 1, false, &err);
	check(rows.float_exact, "float_exact: a chunk appended with the promise keeps it", "rowstore");
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = j == 5 ? 0.1 : 1.0;
		gc_rows_commit(&rows);
	}
	check(!rows.float_exact, "float_exact: one double that is no float32 value clears it", "rowstore");
	gc_rows_release(&rows);
	for (int b = 0; b < tp.placed; b++)
		free(tp.blocks[b]);

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	chunk.float_exact = false;
	gc_rows_append_chunk(&rows, &chunk, values, values, 1, false, &err);
	check(!rows.float_exact, "float_exact: a chunk appended without the promise clears it", "rowstore");
	gc_rows_release(&rows);
}

#ifdef GC_WITH_CUDA
/* Whether ptr is page-locked host memory that CUDA knows */
static bool
is_pinned(const void *ptr)
{
	struct cudaPointerAttributes attr;

	if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return attr.type == cudaMemoryTypeHost;
}

/*
 * Pinning ahead (cuda/pinned_memory.cu): a row store of 1M-row scale
 * chunks (d = 1024, 480 MB: seven 64 MB chunks, the later ones prepared by
 * helper threads) reads back every value, and every chunk is page-locked;
 * then blocks asked for out of step with the helpers (a size they did not
 * prepare, frees between) are page-locked and hold what was written, and
 * releasing everything leaves the allocator usable.
 */
void
run_pin_ahead_case(void)
{
	GcRows		rows;
	GcError		err = {0};
	int			d = 1024;
	int64_t		n = 60000;
	bool		same = true,
				pinned = true;
	size_t		sizes[] = {20u << 20, 20u << 20, 20u << 20, 24u << 20, 20u << 20, 20u << 20};
	int			nblocks = (int) (sizeof(sizes) / sizeof(sizes[0]));
	unsigned char *blocks[6];

	gc_rows_init(&rows, d, gc_cuda_host_alloc, gc_cuda_host_free, &err);
	for (int64_t i = 0; i < n && same; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		same &= slot != NULL;
		for (int j = 0; same && j < d; j++)
			slot[j] = (double) (i * 3 + j);
		if (same)
			gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < rows.n; i++)
		for (int j = 0; j < d; j += 97)
			same &= gc_rows_get(&rows, i)[j] == (double) (i * 3 + j);
	for (int c = 0; c < rows.nchunks; c++)
		pinned &= is_pinned(rows.chunks[c].values);
	check(rows.n == n && same, "pin ahead: every row reads back", "pinned memory");
	check(rows.nchunks > 6 && pinned, "pin ahead: every chunk page-locked", "pinned memory");
	gc_rows_release(&rows);

	same = pinned = true;
	for (int b = 0; b < nblocks; b++)
	{
		if (b == 4)
			gc_cuda_host_free(blocks[0]);	/* a free settles the helpers */
		blocks[b] = gc_cuda_host_alloc(sizes[b]);
		same &= blocks[b] != NULL;
		if (blocks[b] == NULL)
			continue;
		pinned &= is_pinned(blocks[b]) && is_pinned(blocks[b] + sizes[b] - 1);
		memset(blocks[b], 'a' + b, sizes[b]);
	}
	for (int b = 1; b < nblocks; b++)
		same &= blocks[b] != NULL && blocks[b][0] == 'a' + b &&
			blocks[b][sizes[b] - 1] == 'a' + b && blocks[b][sizes[b] / 2] == 'a' + b;
	check(same, "pin ahead: blocks out of step keep what was written", "pinned memory");
	check(pinned, "pin ahead: blocks out of step page-locked", "pinned memory");
	for (int b = 1; b < nblocks; b++)
		gc_cuda_host_free(blocks[b]);
	gc_cuda_trim_pinned_cache(0);
	blocks[0] = gc_cuda_host_alloc(sizes[0]);
	check(blocks[0] != NULL && is_pinned(blocks[0]), "pin ahead: usable after a trim to nothing",
		  "pinned memory");
	gc_cuda_host_free(blocks[0]);
}

/*
 * Uploads from pageable memory past the size where helper threads stage
 * them (host_upload.cu: 256 MB): rows in malloc'd chunks, and rows whose
 * first chunks are malloc'd and the rest page-locked, fit to the same
 * centroids and labels as the same rows all page-locked.  With
 * float_values every value is rounded to a float32 value first, and the
 * staged values cross as floats (GcRows.float_exact); without, they are
 * doubles that must cross whole.
 */
void
run_staged_upload_case(bool float_values)
{
	int64_t		n = float_values ? 72000 : 48000;
	int			d = 1024,
				k = 8;
	const char *config = float_values ?
		"n=72000 d=1024 k=8 (590 MB of rows, 295 MB as float32), float32 values" :
		"n=48000 d=1024 k=8 (393 MB of rows)";
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x;
	GcRows		pinned,
				pageable,
				mixed,
				narrow = {0};
	GcError		err = {0};
	bool		loaded = true;
	Fit			reference;

	rng_state = 4242;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; float_values && i < n * d; i++)
		x[i] = (double) (float) x[i];
	load_rows(&pinned, x, n, d, NULL, gc_cuda_host_alloc, gc_cuda_host_free);
	load_rows(&pageable, x, n, d, NULL, plain_alloc, free);
	gc_rows_init(&mixed, d, plain_alloc, free, &err);
	for (int64_t i = 0; i < n && loaded; i++)
	{
		double	   *slot;

		if (i == 3 * n / 4)	/* about 300 MB pageable */
			gc_rows_set_allocator(&mixed, gc_cuda_host_alloc, gc_cuda_host_free);
		slot = gc_rows_reserve(&mixed, &err);
		loaded = slot != NULL;
		if (loaded)
		{
			memcpy(slot, x + i * d, sizeof(double) * d);
			gc_rows_commit(&mixed);
		}
	}
	check(loaded && !is_pinned(mixed.chunks[0].values) &&
		  is_pinned(mixed.chunks[mixed.nchunks - 1].values),
		  "staged upload: the mixed store holds both kinds of memory", config);
	check(pageable.float_exact == float_values && mixed.float_exact == float_values,
		  "staged upload: the stores know whether every value is a float32 value", config);

	reference = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 11, GC_ALGORITHM_LLOYD,
						 GC_PRECISION_FLOAT32, 10, 0.0);
	check(reference.status == GC_OK, "staged upload: fit of page-locked rows", config);
	if (float_values)
		load_narrow_rows(&narrow, x, n, d, plain_alloc, free);
	{
		GcRows	   *stores[] = {&pageable, &mixed, &narrow};
		const char *names[] = {"staged upload: pageable rows", "staged upload: mixed rows",
		"staged upload: pageable float32 rows"};

		for (int s = 0; s < (float_values ? 3 : 2); s++)
		{
			Fit			staged = fit_with(&gc_kmeans_cuda_backend, stores[s], k, 11,
										  GC_ALGORITHM_LLOYD, GC_PRECISION_FLOAT32, 10, 0.0);

			check_same_fit(&reference, &staged, n, k, d, names[s], config);
			free_fit(&staged);
		}
	}
	free_fit(&reference);
	gc_rows_release(&pinned);
	gc_rows_release(&pageable);
	gc_rows_release(&mixed);
	gc_rows_release(&narrow);
	free(x);
	free(centres);
	free(truth);
}
#endif

/* Rows a store of max_bytes takes before one fails, as float32 or as doubles */
static int64_t
rows_within(const double *x, int64_t n, int d, bool narrow, size_t max_bytes)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t		taken = 0;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	rows.max_bytes = max_bytes;
	if (narrow)
		gc_rows_set_narrow(&rows);
	for (; taken < n; taken++)
	{
		void	   *slot = narrow ? (void *) gc_rows_reserve_narrow(&rows, &err) :
			(void *) gc_rows_reserve(&rows, &err);

		if (slot == NULL)
			break;
		for (int j = 0; j < d; j++)
		{
			if (narrow)
				((float *) slot)[j] = (float) x[taken * d + j];
			else
				((double *) slot)[j] = x[taken * d + j];
		}
		gc_rows_commit(&rows);
	}
	gc_rows_release(&rows);
	return taken;
}

/*
 * Narrow stores (float32 rows, as vector, halfvec and real[] columns are
 * collected): each row's hash and the bounding box equal those of the
 * same rows held as doubles, rows read back as doubles, a memory limit
 * holds nearly twice the rows, and a fit gives the same clusters as the
 * store of doubles: on the CPU, which widens the store first (and leaves
 * it a store of doubles), and on the GPU, which uploads the floats from
 * page-locked and from pageable memory.
 */
void
run_narrow_case(void)
{
	int64_t		n = 30000;
	int			d = 24,
				k = 12;
	const char *config = "n=30000 d=24 k=12";
	double	   *centres = malloc(sizeof(double) * k * d);
	int		   *truth = malloc(sizeof(int) * n);
	double	   *x,
			   *row = malloc(sizeof(double) * d);
	GcRows		wide,
				narrow;
	bool		same_hashes = true,
				same_rows = true,
				all_narrow = true;
	int64_t		wide_taken,
				narrow_taken;
	Fit			reference,
				widened;

	rng_state = 515;
	x = make_data(n, d, k, 0.5, centres, truth);
	for (int64_t i = 0; i < n * d; i++)
		x[i] = (double) (float) x[i];
	load_rows(&wide, x, n, d, NULL, plain_alloc, free);
	load_narrow_rows(&narrow, x, n, d, plain_alloc, free);
	for (int c = 0; c < narrow.nchunks; c++)
		all_narrow &= narrow.chunks[c].narrow_values != NULL && narrow.chunks[c].values == NULL;
	check(narrow.narrow && all_narrow && narrow.nchunks > 1 && narrow.n == n && narrow.float_exact,
		  "narrow: the rows are held as float32, in several chunks", config);
	for (int64_t i = 0; i < n; i++)
	{
		same_hashes &= gc_rows_hash(&narrow, i) == gc_rows_hash(&wide, i);
		gc_rows_copy_row(&narrow, i, row);
		same_rows &= memcmp(row, x + i * d, sizeof(double) * d) == 0;
	}
	check(same_hashes, "narrow: each row's hash is the hash of its doubles", config);
	check(memcmp(narrow.lo, wide.lo, sizeof(double) * d) == 0 &&
		  memcmp(narrow.hi, wide.hi, sizeof(double) * d) == 0,
		  "narrow: the bounding box is the doubles' box", config);
	check(same_rows, "narrow: gc_rows_copy_row gives each row's doubles", config);
	wide_taken = rows_within(x, n, d, false, (size_t) 1 << 20);
	narrow_taken = rows_within(x, n, d, true, (size_t) 1 << 20);
	check(wide_taken < n && narrow_taken * 10 >= wide_taken * 19,
		  "narrow: a memory limit holds nearly twice the rows", config);

	reference = fit_with(&gc_kmeans_cpu_backend, &wide, k, 3, GC_ALGORITHM_AUTO,
						 GC_PRECISION_FLOAT32, 50, 0.0);
#ifdef GC_WITH_CUDA
	{
		char		why[256];

		if (gc_cuda_use_device(0, why, sizeof(why)))
		{
			GcRows		pinned;
			Fit			from_pinned,
						from_pageable;

			load_narrow_rows(&pinned, x, n, d, gc_cuda_host_alloc, gc_cuda_host_free);
			from_pinned = fit_with(&gc_kmeans_cuda_backend, &pinned, k, 3, GC_ALGORITHM_AUTO,
								   GC_PRECISION_FLOAT32, 50, 0.0);
			from_pageable = fit_with(&gc_kmeans_cuda_backend, &narrow, k, 3, GC_ALGORITHM_AUTO,
									 GC_PRECISION_FLOAT32, 50, 0.0);
			check(pinned.narrow && narrow.narrow,
				  "narrow: the GPU fit reads the float32 rows as they are", config);
			check_same_fit(&reference, &from_pinned, n, k, d,
						   "narrow: gpu fit of page-locked float32 rows", config);
			check_same_fit(&reference, &from_pageable, n, k, d,
						   "narrow: gpu fit of pageable float32 rows", config);
			free_fit(&from_pinned);
			free_fit(&from_pageable);
			gc_rows_release(&pinned);
		}
	}
#endif
	widened = fit_with(&gc_kmeans_cpu_backend, &narrow, k, 3, GC_ALGORITHM_AUTO,
					   GC_PRECISION_FLOAT32, 50, 0.0);
	check(reference.status == GC_OK && recovers(truth, reference.labels, n, k),
		  "narrow: the fit of doubles recovers the blobs", config);
	check_same_fit(&reference, &widened, n, k, d, "narrow: cpu fit of float32 rows", config);
	same_hashes = !narrow.narrow && narrow.n == n;
	for (int64_t i = 0; i < n && same_hashes; i++)
		same_hashes = gc_rows_hash(&narrow, i) == gc_rows_hash(&wide, i) &&
			memcmp(gc_rows_get(&narrow, i), x + i * d, sizeof(double) * d) == 0;
	check(same_hashes, "narrow: the cpu fit leaves a store of the same doubles", config);
	free_fit(&reference);
	free_fit(&widened);
	gc_rows_release(&wide);
	gc_rows_release(&narrow);
	free(x);
	free(row);
	free(centres);
	free(truth);
}

/*
 * floor(x 2^unit_exp) the slow way: frexp's mantissa as a 53-bit integer,
 * moved one bit at a time (a right move stops once nothing is left)
 */
static gc_u128
quantize_by_frexp(double x, int unit_exp)
{
	int			e;
	gc_u128		q;

	if (!(x > 0.0))
		return 0;
	q = (gc_u128) (uint64_t) ldexp(frexp(x, &e), 53);
	for (e += unit_exp - 53; e > 0; e--)
		q <<= 1;
	for (; e < 0 && q != 0; e++)
		q >>= 1;
	return q;
}

/*
 * gc_quantize_wide reads the mantissa and exponent from x's bits: the same
 * integers as frexp's, for normal and subnormal x, zero and negative
 * values, at unit exponents from the subnormals' to the largest that keep
 * the result below 2^127
 */
void
run_quantize_case(void)
{
	uint64_t	state = 7;
	int64_t		differ = 0,
				tried = 0;
	static const double edges[] = {0.0, -0.0, -1.0, 1.0, 0.5, DBL_MIN, DBL_MIN / 2.0,
	4.9406564584124654e-324, DBL_MAX, 3.0, 1e-300, 1e300};

	for (int i = 0; i < 50000 + (int) (sizeof(edges) / sizeof(edges[0])); i++)
	{
		double		x;
		int			e;

		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		if (i < (int) (sizeof(edges) / sizeof(edges[0])))
			x = edges[i];
		else
		{
			uint64_t	bits = (state >> 1) % UINT64_C(0x7ff0000000000000);	/* finite, >= 0 */

			if (i % 4 == 0)
				bits %= UINT64_C(1) << 52; /* subnormal */
			memcpy(&x, &bits, sizeof(x));
		}
		(void) frexp(x, &e);
		for (int unit_exp = -1100; unit_exp <= 1200; unit_exp += 37)
		{
			if (x > 0.0 && e + unit_exp > 126)
				continue;
			tried++;
			differ += gc_quantize_wide(x, unit_exp) != quantize_by_frexp(x, unit_exp);
		}
	}
	check(tried > 1000000 && differ == 0, "quantised from the bits as by moving frexp's mantissa",
		  "quantize");
	check(gc_quantize_wide(INFINITY, 0) == ~(gc_u128) 0, "+infinity saturates", "quantize");
	check(gc_quantize_wide(NAN, 0) == 0, "NaN quantises to 0", "quantize");
}

/*
 * The row store's one-pass bounding box and hash (vectorised, a clone per
 * instruction set) agree with the reference: gc_row_hash of every row, and
 * the box taken element by element; -0.0 hashes as 0.0.  Dimensions around
 * the vector widths exercise the loop's remainders.
 */
void
run_row_hash_case(int d)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t		n = 3000;
	uint64_t	state = 42 + (uint64_t) d;
	double	   *lo = malloc(sizeof(double) * d);
	double	   *hi = malloc(sizeof(double) * d);
	bool		hashes_same = true,
				box_same = true;
	char		name[64];

	gc_rows_init(&rows, d, malloc, free, &err);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
		{
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			slot[j] = (double) (int64_t) (state >> 40) / 1024.0 - 8192.0;
			if ((state >> 20) % 7 == 0)
				slot[j] = (state >> 30) % 2 ? -0.0 : 0.0;
			if (i == 0 || slot[j] < lo[j])
				lo[j] = slot[j];
			if (i == 0 || slot[j] > hi[j])
				hi[j] = slot[j];
		}
		gc_rows_commit(&rows);
	}
	for (int64_t i = 0; i < n; i++)
		hashes_same &= gc_rows_hash(&rows, i) == gc_row_hash(gc_rows_get(&rows, i), d);
	for (int j = 0; j < d; j++)
		box_same &= rows.lo[j] == lo[j] && rows.hi[j] == hi[j];
	snprintf(name, sizeof(name), "row hash d=%d", d);
	check(hashes_same, "one-pass hash equals gc_row_hash", name);
	check(box_same, "one-pass bounding box equals the reference", name);
	{
		double		zero[3] = {0.0, 0.0, 1.0},
					negzero[3] = {-0.0, 0.0, 1.0};

		check(gc_row_hash(zero, 3) == gc_row_hash(negzero, 3), "-0.0 hashes as 0.0", name);
	}
	gc_rows_release(&rows);
	free(lo);
	free(hi);
}

/* An interrupt hook that asks to stop at its first poll */
static bool
stop_at_once(void)
{
	return true;
}

/*
 * Deferred row hashes (engine/row_hashes.c): a store whose commits leave
 * the hashes pending, narrow or wide, against the same rows committed
 * with them.  While pending, gc_rows_hash computes each row's on the spot;
 * an interrupted finishing pass leaves the store pending; the pass on
 * several threads (n d past a thread's share) gives every hash to the
 * bit, over several chunks; the box and float_exact are the same; and a
 * k-means++ fit (whose seeding draws from the hashes) of the deferred
 * store, finished by gc_kmeans_fit itself, gives the plain store's model.
 */
void
run_deferred_hash_case(int64_t n, int d, bool narrow)
{
	GcRows		plain,
				deferred;
	GcError		err = {0};
	uint64_t	state = 7 + (uint64_t) d;
	bool		same = true,
				box_same = true,
				pending = false;
	char		name[64];
	GcKmeansParams params = {0};
	GcKmeansResult a = {0},
				b = {0};
	int			k = 5;
	double	   *ca = malloc(sizeof(double) * k * d),
			   *cb = malloc(sizeof(double) * k * d);
	int64_t		sa[5],
				sb[5];

	snprintf(name, sizeof(name), "deferred hashes n=%lld d=%d %s", (long long) n, d,
			 narrow ? "narrow" : "wide");
	gc_rows_init(&plain, d, malloc, free, &err);
	gc_rows_init(&deferred, d, malloc, free, &err);
	if (narrow)
	{
		gc_rows_set_narrow(&plain);
		gc_rows_set_narrow(&deferred);
	}
	gc_rows_defer_hashes(&deferred);
	for (int64_t i = 0; i < n; i++)
	{
		float		row[1024];

		for (int j = 0; j < d; j++)
		{
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			row[j] = (float) ((int64_t) (state >> 40) - (INT64_C(1) << 23)) / 4096.0f +
				(float) (i % 3) * 1000.0f;
			if ((state >> 20) % 11 == 0)
				row[j] = (state >> 30) % 2 ? -0.0f : 0.0f;
		}
		if (narrow)
		{
			memcpy(gc_rows_reserve_narrow(&plain, &err), row, sizeof(float) * d);
			memcpy(gc_rows_reserve_narrow(&deferred, &err), row, sizeof(float) * d);
		}
		else
		{
			double	   *p = gc_rows_reserve(&plain, &err),
					   *q = gc_rows_reserve(&deferred, &err);

			for (int j = 0; j < d; j++)
				p[j] = q[j] = row[j] + (j % 5 == 0 ? 1e-9 : 0.0);
		}
		gc_rows_commit(&plain);
		gc_rows_commit(&deferred);
	}
	for (int c = 0; c < deferred.nchunks; c++)
		pending |= deferred.chunks[c].hashes_pending;
	check(pending && deferred.nchunks > 1, "commits leave the hashes pending, over several chunks",
		  name);
	for (int64_t i = 0; i < n; i++)
		same &= gc_rows_hash(&deferred, i) == gc_rows_hash(&plain, i);
	check(same, "a pending row's hash, computed on the spot, is the committed one", name);
	for (int j = 0; j < d; j++)
		box_same &= deferred.lo[j] == plain.lo[j] && deferred.hi[j] == plain.hi[j];
	check(box_same && deferred.float_exact == plain.float_exact,
		  "the bounding box and float_exact are the committed ones", name);

	check(gc_rows_finish_hashes(&deferred, stop_at_once, &err) == GC_INTERRUPTED,
		  "an interrupted pass says so", name);
	pending = true;
	for (int c = 0; c < deferred.nchunks; c++)
		pending &= deferred.chunks[c].hashes_pending;
	check(pending, "an interrupted pass leaves every chunk pending", name);
	memset(&err, 0, sizeof(err));

	check(gc_rows_finish_hashes(&deferred, NULL, &err) == GC_OK, "the pass finishes", name);
	for (int c = 0; c < deferred.nchunks; c++)
		same &= !deferred.chunks[c].hashes_pending &&
			memcmp(deferred.chunks[c].hashes, plain.chunks[c].hashes,
				   sizeof(uint64_t) * deferred.chunks[c].count) == 0;
	check(same, "every stored hash equals the committed one to the bit", name);

	/* a fresh deferred store that gc_kmeans_fit finishes itself */
	gc_rows_release(&deferred);
	gc_rows_init(&deferred, d, malloc, free, &err);
	if (narrow)
		gc_rows_set_narrow(&deferred);
	gc_rows_defer_hashes(&deferred);
	for (int64_t i = 0; i < n; i++)
	{
		double		row[1024];

		gc_rows_copy_row(&plain, i, row);
		if (narrow)
			for (int j = 0; j < d; j++)
				gc_rows_reserve_narrow(&deferred, &err)[j] = (float) row[j];
		else
			memcpy(gc_rows_reserve(&deferred, &err), row, sizeof(double) * d);
		gc_rows_commit(&deferred);
	}
	params.k = k;
	params.max_iter = 5;
	params.tol = 0.0;
	params.n_init = 1;
	params.seed = 3;
	params.init = GC_INIT_KMEANSPP;
	params.algorithm = GC_ALGORITHM_LLOYD;
	a.centroids = ca;
	a.sizes = sa;
	b.centroids = cb;
	b.sizes = sb;
	check(gc_kmeans_fit(&gc_kmeans_cpu_backend, &plain, &params, &a, &err) == GC_OK &&
		  gc_kmeans_fit(&gc_kmeans_cpu_backend, &deferred, &params, &b, &err) == GC_OK,
		  "both fits succeed", name);
	check(memcmp(ca, cb, sizeof(double) * k * d) == 0 && a.inertia == b.inertia,
		  "the deferred store's k-means++ fit equals the plain store's to the bit", name);
	gc_rows_release(&plain);
	gc_rows_release(&deferred);
	free(ca);
	free(cb);
}

/*
 * gc_rows_permute over several chunks, weighted: row i becomes the old
 * row order[i] with its hash and weight, the order array ends as the
 * identity, and the box and total weight stay
 */
void
run_permute_case(int64_t n, int d)
{
	GcRows		rows;
	GcError		err = {0};
	int64_t    *order = malloc(sizeof(int64_t) * n);
	int64_t    *was = malloc(sizeof(int64_t) * n);
	uint64_t   *hashes = malloc(sizeof(uint64_t) * n);
	bool		same = true,
				identity = true;
	int64_t		total;

	gc_rows_init(&rows, d, plain_alloc, free, &err);
	gc_rows_set_weighted(&rows);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *slot = gc_rows_reserve(&rows, &err);

		for (int j = 0; j < d; j++)
			slot[j] = (double) (i * d + j);
		gc_rows_commit_weighted(&rows, (double) (1 + i % 7));
		hashes[i] = gc_rows_hash(&rows, i);
	}
	total = rows.total_weight;
	/* a permutation of several cycles: i -> (i * 7919 + 13) mod n, n prime */
	for (int64_t i = 0; i < n; i++)
		order[i] = was[i] = (i * 7919 + 13) % n;
	check(gc_rows_permute(&rows, order, &err) == GC_OK, "permute: runs", "rowstore");
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		o = was[i];

		identity &= order[i] == i;
		same &= gc_rows_hash(&rows, i) == hashes[o] &&
			gc_rows_weight(&rows, i) == (double) (1 + o % 7);
		for (int j = 0; j < d; j++)
			same &= gc_rows_get(&rows, i)[j] == (double) (o * d + j);
	}
	check(rows.nchunks > 1, "permute: rows span several chunks", "rowstore");
	check(same, "permute: each row moved with its hash and weight", "rowstore");
	check(identity, "permute: the order is consumed to the identity", "rowstore");
	check(rows.total_weight == total && rows.lo[0] == 0.0 &&
		  rows.hi[d - 1] == (double) ((n - 1) * d + d - 1),
		  "permute: box and total weight unchanged", "rowstore");
	gc_rows_release(&rows);
	free(order);
	free(was);
	free(hashes);
}
