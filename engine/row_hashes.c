/*-------------------------------------------------------------------------
 *
 * row_hashes.c
 *	  The row hashes a store's collection left pending (gc_engine.h,
 *	  "Deferred row hashes"), computed in one pass over the store on up to
 *	  GC_HASH_THREADS threads just before the fit, and the hash of a single
 *	  pending row where a reader needs it sooner.
 *
 * Seeding draws each row's random numbers from its hash (gc_unit_draw),
 * so every row needs one; where it is computed is free.  A serial
 * collection of 768-dimensional float32 rows spent a quarter to nearly
 * half of its per-row work on the hash (two 64-bit multiplies a value,
 * which AVX2 has no instruction for; bench/results/deferred-hashes-h100.md):
 * on the H100 machine's host, deferred, 1M rows were collected in a median
 * 1.68 s instead of 1.83.  Here the rows are split into blocks that the
 * threads claim in turn (a pass of cpu_threads.c), each hash computed by
 * the same vectorised loop over the same values as a commit would have, so
 * the hashes are the same to the bit whatever the number of threads.  The
 * calling thread works too and polls the interrupt hook before the first
 * block and as rows are done; on a stop the threads finish the block they
 * hold and the store stays pending.
 *
 * IDENTIFICATION
 *	  engine/row_hashes.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_threads.h"
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>
#include <unistd.h>

/* Rows a thread claims at a time, and rows (times d) worth a thread */
#define HASH_BLOCK_ROWS		4096
#define HASH_THREAD_UNITS	(INT64_C(1) << 22)

/* Values widened at a time from a narrow row (a multiple of any vector's lanes) */
#define HASH_TILE 256

/*
 * gc_row_hash of n rows of doubles, or of floats widened tile by tile into
 * doubles first: GCC vectorises the hash's loop over doubles, not one that
 * widens floats as it goes.  Cloned for the vector units.
 */
static inline __attribute__((always_inline)) void
hash_rows(const void *restrict values, bool narrow, int64_t n, int d,
		  uint64_t *restrict out)
{
	double		tile[HASH_TILE];

	for (int64_t r = 0; r < n; r++)
	{
		uint64_t	sum = 0;
		uint64_t	salt = 0;

		for (int j0 = 0; j0 < d; j0 += HASH_TILE)
		{
			int			width = d - j0 < HASH_TILE ? d - j0 : HASH_TILE;
			const double *v = (const double *) values + (size_t) r * d + j0;

			if (narrow)
			{
				const float *f = (const float *) values + (size_t) r * d + j0;

				for (int j = 0; j < width; j++)
					tile[j] = f[j];
				v = tile;
			}
			for (int j = 0; j < width; j++)
			{
				sum += gc_row_hash_term(v[j], salt);
				salt += GC_ROW_HASH_SALT_STEP;
			}
		}
		out[r] = gc_row_hash_finish(sum, d);
	}
}

GC_SIMD_CLONES
static void
hash_wide_rows(const double *restrict values, int64_t n, int d, uint64_t *restrict out)
{
	hash_rows(values, false, n, d, out);
}

GC_SIMD_CLONES
static void
hash_narrow_rows(const float *restrict values, int64_t n, int d, uint64_t *restrict out)
{
	hash_rows(values, true, n, d, out);
}

/* Hash rows [first, first + n) of a chunk into its hashes */
static void
hash_chunk_rows(const GcChunk *chunk, int64_t first, int64_t n, int d)
{
	if (chunk->narrow_values)
		hash_narrow_rows(chunk->narrow_values + (size_t) first * d, n, d,
						 chunk->hashes + first);
	else
		hash_wide_rows(chunk->values + (size_t) first * d, n, d, chunk->hashes + first);
}

uint64_t
gc_chunk_row_hash(const GcChunk *chunk, int64_t r, int d)
{
	uint64_t	hash;

	if (chunk->narrow_values)
		hash_narrow_rows(chunk->narrow_values + (size_t) r * d, 1, d, &hash);
	else
		hash_wide_rows(chunk->values + (size_t) r * d, 1, d, &hash);
	return hash;
}

/* A block of the pass (cpu_threads.c): a pending chunk's rows [first, first + n) */
static void
hash_block(void *ctx, int worker, const GcChunk *chunk, int64_t first, int64_t n)
{
	if (chunk->hashes_pending)
		hash_chunk_rows(chunk, first, n, *(const int *) ctx);
}

/* The threads worth starting besides the caller for units of work */
static int
helper_threads(int64_t units)
{
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t		wanted = units / HASH_THREAD_UNITS;
	int			most = cores > GC_HASH_THREADS ? GC_HASH_THREADS : (cores > 1 ? (int) cores : 1);

	if (wanted > most)
		wanted = most;
	return wanted > 1 ? (int) wanted - 1 : 0;
}

GcStatus
gc_rows_finish_hashes(GcRows *rows, bool (*interrupted) (void), GcError *err)
{
	int			d = rows->d;
	int64_t		pending = 0;
	GcPoll		poll = {interrupted, 0};
	GcCpuPass	pass = {.rows = rows, .row_units = rows->d, .block_rows = HASH_BLOCK_ROWS,
		.fn = hash_block, .ctx = &d};
	GcStatus	status;

	for (int c = 0; c < rows->nchunks; c++)
		if (rows->chunks[c].hashes_pending)
			pending += rows->chunks[c].count;
	if (pending == 0)
		return GC_OK;
	/* the hook is polled before the first block too: a pending cancel stops the pass at once */
	if (gc_poll(&poll, GC_POLL_WORK))
		return gc_fail(err, GC_INTERRUPTED, "interrupted while hashing the rows");
	pass.workers = helper_threads(pending * rows->d) + 1;
	status = gc_cpu_run_blocks(&pass, &poll, err, "interrupted while hashing the rows");
	if (status != GC_OK)
		return status;
	for (int c = 0; c < rows->nchunks; c++)
		rows->chunks[c].hashes_pending = false;
	return GC_OK;
}
