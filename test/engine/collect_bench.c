/*-------------------------------------------------------------------------
 *
 * collect_bench.c
 *	  The per-row cost of collecting float32 rows into a narrow row store,
 *	  each row copied in and committed, with its hash (gc_rows_commit as
 *	  parallel workers commit) and with the hash deferred
 *	  (engine/row_hashes.c) and the deferred hashes' pass after.
 *
 *	  collect_bench [N [D]]   (default 200,000 rows of 768 values)
 *
 *	  The rows come from 4,096 source rows one byte off alignment (as a
 *	  pgvector value with a short header may be), into chunks on a page
 *	  boundary, as page-locked chunks are.  Each timing fills a new store
 *	  whose chunks were made and touched first, so no page fault is
 *	  counted.  Three repetitions; prints us a row.
 *	  Results: bench/results/collect-microbench-h100.txt.
 *
 * IDENTIFICATION
 *	  test/engine/collect_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_engine.h"

#define SOURCE_ROWS 4096

/* Chunks on a page boundary, touched */
static void *
touched_alloc(size_t bytes)
{
	char	   *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t) 4095);

	if (p != NULL)
		memset(p, 0, bytes);
	return p;
}

/*
 * Commit n rows into a new store whose chunks were made and touched by
 * committing them all once before, their hashes deferred or not; us a
 * row, and the deferred hashes' pass in *hash_us (0 when not deferred)
 */
static double
time_commits(const char *src, int64_t n, int d, bool defer, double *hash_us)
{
	GcRows		rows;
	GcError		err = {0};
	int			nchunks;
	double		t0,
				us;

	gc_rows_init(&rows, d, touched_alloc, free, &err);
	gc_rows_set_narrow(&rows);
	for (int64_t i = 0; i < n; i++)
	{
		memcpy(gc_rows_reserve_narrow(&rows, &err), src, sizeof(float) * d);
		gc_rows_commit(&rows);
	}
	nchunks = rows.nchunks;
	for (int c = 0; c < nchunks; c++)
		rows.chunks[c].count = 0;
	rows.nchunks = 1;
	rows.n = 0;
	if (defer)
		gc_rows_defer_hashes(&rows);
	t0 = gc_now_ms();
	for (int64_t i = 0; i < n; i++)
	{
		const char *row = src + sizeof(float) * d * (size_t) (i % SOURCE_ROWS);

		if (rows.nchunks < nchunks &&
			rows.chunks[rows.nchunks - 1].count == rows.chunks[rows.nchunks - 1].capacity)
			rows.nchunks++;
		memcpy(gc_rows_reserve_narrow(&rows, &err), row, sizeof(float) * d);
		gc_rows_commit(&rows);
	}
	us = (gc_now_ms() - t0) * 1000.0 / (double) n;
	t0 = gc_now_ms();
	if (gc_rows_finish_hashes(&rows, NULL, &err) != GC_OK)
		exit(1);
	*hash_us = (gc_now_ms() - t0) * 1000.0 / (double) n;
	rows.nchunks = nchunks;
	gc_rows_release(&rows);
	return us;
}

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 200000;
	int			d = argc > 2 ? atoi(argv[2]) : 768;
	char	   *buffer = malloc(sizeof(float) * d * SOURCE_ROWS + 1);
	char	   *src = buffer + 1;

	srand(1);
	for (size_t i = 0; i < (size_t) SOURCE_ROWS * d; i++)
	{
		float		f = (float) (rand() / (double) RAND_MAX - 0.5);

		memcpy(src + sizeof(float) * i, &f, sizeof(f));
	}
	for (int rep = 0; rep < 3; rep++)
	{
		double		hash_us,
					unused,
					deferred = time_commits(src, n, d, true, &hash_us),
					hashed = time_commits(src, n, d, false, &unused);

		printf("%lld x %d: copy + commit with the hash %.3f us a row; hash deferred %.3f, "
			   "then the deferred hashes' pass %.3f\n", (long long) n, d, hashed, deferred, hash_us);
	}
	free(buffer);
	return 0;
}
