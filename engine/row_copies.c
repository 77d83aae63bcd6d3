/*-------------------------------------------------------------------------
 *
 * row_copies.c
 *	  The draw hashes of a store whose rows repeat: each row's hash, with
 *	  the j-th copy (j > 0, in row order) of a repeated row drawing from
 *	  a hash of its own, so that seeding treats every copy as a row.
 *
 * Seeding draws each row's random numbers from its hash (gc_unit_draw),
 * which depends on the row's values alone: the copies of a row drew the
 * same numbers, bid the same in every race and stood together or not at
 * all, so k-means++, k-means|| and random initialisation drew a row with
 * m copies as if it appeared once, not m times as D^2 sampling by row
 * does.  On KDD Cup 99 (494,021 rows, 141,480 distinct) that left the fit
 * at k = 100 26% above scikit-learn's inertia with one restart.  Here
 * copy 0 keeps the row's hash and copy j > 0 draws from
 * gc_mix64(hash ^ gc_mix64(j ...)): a set of distinct rows draws exactly
 * as before, and which copy gets which number does not matter, copies
 * being equal, so the seeds still depend on the rows and not their order.
 *
 * Copies are found in two passes over the hashes: two bitmaps of about
 * 8n bits (n bytes each) mark the hashes seen once and again, and only
 * the rows whose hash was marked again, true copies and about one row in
 * eight by chance, go through a hash table counting copies in row order.
 * The draw hashes (8 bytes a row) exist only where some row repeats;
 * gc_kmeans_fit builds them before seeding and frees them at its end, and
 * the GPU uploads them in place of the store's hashes.
 *
 * IDENTIFICATION
 *	  engine/row_copies.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <stdlib.h>
#include <string.h>

/* The hash copy j > 0 of a row of hash h draws from */
static uint64_t
copy_hash(uint64_t h, uint32_t j)
{
	return gc_mix64(h ^ gc_mix64((uint64_t) j * UINT64_C(0x9e3779b97f4a7c15) +
								 UINT64_C(0x2545f4914f6cdd1d)));
}

/* The hash table of the rows whose hash may repeat: hash and copies seen */
typedef struct CopyTable
{
	uint64_t   *keys;
	uint32_t   *seen;			/* 0: empty slot */
	uint64_t	mask;
} CopyTable;

/* The copy number of one more row of hash h: the copies of h seen before */
static uint32_t
next_copy(CopyTable *table, uint64_t h)
{
	uint64_t	slot = gc_mix64(h) & table->mask;

	while (table->seen[slot] != 0 && table->keys[slot] != h)
		slot = (slot + 1) & table->mask;
	table->keys[slot] = h;
	return table->seen[slot]++;
}

static bool
bit_test_set(uint64_t *bits, uint64_t b)
{
	uint64_t	m = UINT64_C(1) << (b & 63);
	bool		was = (bits[b >> 6] & m) != 0;

	bits[b >> 6] |= m;
	return was;
}

static bool
bit_test(const uint64_t *bits, uint64_t b)
{
	return (bits[b >> 6] >> (b & 63)) & 1;
}

/*
 * Mark in again the hashes (modulo the bitmaps' size) of rows whose hash
 * was seen before; returns how many rows have a hash marked again (a
 * bound on the hashes the table will hold), -1 when interrupted
 */
static int64_t
mark_repeats(const GcRows *rows, uint64_t mask, uint64_t *once, uint64_t *again,
			 GcPoll *poll)
{
	int64_t		marked = 0;

	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			uint64_t	b = chunk->hashes[i] & mask;

			if (gc_poll(poll, 8))
				return -1;
			/* a repeat, and the first row of its bit once */
			if (bit_test_set(once, b))
				marked += 1 + !bit_test_set(again, b);
		}
	}
	return marked;
}

/* A copy of the store's hashes into rows->draw_hashes; false: out of memory */
static bool
start_draw_hashes(GcRows *rows)
{
	rows->draw_hashes = malloc(sizeof(uint64_t) * rows->n);
	if (rows->draw_hashes == NULL)
		return false;
	for (int c = 0; c < rows->nchunks; c++)
		memcpy(rows->draw_hashes + rows->chunks[c].first_row, rows->chunks[c].hashes,
			   sizeof(uint64_t) * rows->chunks[c].count);
	return true;
}

/*
 * Give the copies j > 0 of the rows marked again their draw hashes, in row
 * order, counting through a table of at least twice as many slots as
 * marked rows (so it never fills)
 */
static GcStatus
number_copies(GcRows *rows, uint64_t mask, const uint64_t *again, int64_t marked,
			  GcPoll *poll, GcError *err)
{
	CopyTable	table;
	uint64_t	size = 16;
	GcStatus	status = GC_OK;

	while (size < 2 * (uint64_t) marked)
		size <<= 1;
	table.mask = size - 1;
	table.keys = malloc(sizeof(uint64_t) * size);
	table.seen = calloc(size, sizeof(uint32_t));
	if (table.keys == NULL || table.seen == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for counting copies of rows");
	for (int c = 0; c < rows->nchunks && status == GC_OK; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		for (int64_t i = 0; i < chunk->count && status == GC_OK; i++)
		{
			uint64_t	h = chunk->hashes[i];
			uint32_t	j;

			if (gc_poll(poll, 8))
				status = gc_fail(err, GC_INTERRUPTED, "interrupted while counting copies of rows");
			else if (!bit_test(again, h & mask) || (j = next_copy(&table, h)) == 0)
				continue;
			else if (rows->draw_hashes == NULL && !start_draw_hashes(rows))
				status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the draw hashes");
			else
				rows->draw_hashes[chunk->first_row + i] = copy_hash(h, j);
		}
	}
	free(table.keys);
	free(table.seen);
	return status;
}

GcStatus
gc_rows_number_copies(GcRows *rows, bool (*interrupted) (void), GcError *err)
{
	GcPoll		poll = {interrupted, 0};
	uint64_t	nbits = 64;
	uint64_t   *once,
			   *again;
	int64_t		marked = 0;
	GcStatus	status = GC_OK;

	gc_rows_forget_copies(rows);
	if (rows->n < 2)
		return GC_OK;
	while (nbits < 8 * (uint64_t) rows->n)
		nbits <<= 1;
	once = calloc(nbits / 64, sizeof(uint64_t));
	again = calloc(nbits / 64, sizeof(uint64_t));
	if (once == NULL || again == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for counting copies of rows");
	else if ((marked = mark_repeats(rows, nbits - 1, once, again, &poll)) < 0)
		status = gc_fail(err, GC_INTERRUPTED, "interrupted while counting copies of rows");
	else if (marked > 0)
		status = number_copies(rows, nbits - 1, again, marked, &poll, err);
	free(once);
	free(again);
	if (status != GC_OK)
		gc_rows_forget_copies(rows);
	return status;
}

void
gc_rows_forget_copies(GcRows *rows)
{
	free(rows->draw_hashes);
	rows->draw_hashes = NULL;
}
