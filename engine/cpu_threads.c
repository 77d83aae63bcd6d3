/*-------------------------------------------------------------------------
 *
 * cpu_threads.c
 *	  Passes over the rows on several CPU threads: blocks of rows claimed
 *	  in turn by the caller and its helper threads; the caller alone
 *	  polls the interrupt hook, a row at a time for the rows every thread
 *	  has finished, so a pass polls as often as a one-thread loop would;
 *	  once no block is left to claim, it waits for the others' last ones,
 *	  polling as they finish.  A pass that reads doubles only takes a
 *	  narrow store's blocks widened, a block at a time (GcCpuPass.widen).
 *
 * IDENTIFICATION
 *	  engine/cpu_threads.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_threads.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Work below this many units a thread is not worth starting */
#define THREAD_UNITS (INT64_C(1) << 20)
/* Most rows of a block */
#define BLOCK_MAX_ROWS 4096
/* Most values of a block widened from floats (a thread's scratch: 512 kB) */
#define WIDENED_MAX_VALUES 65536

typedef struct Block
{
	const GcChunk *chunk;
	int64_t		first;
	int64_t		count;
} Block;

typedef struct Run
{
	const GcCpuPass *pass;
	Block	   *blocks;
	int64_t		nblocks;
	int64_t		next;			/* next block to claim (atomic) */
	int			next_worker;	/* next worker number (atomic) */
	bool		stop;			/* the caller was interrupted (atomic) */
	int64_t		done_rows;		/* rows finished (atomic) */
	int64_t		total_rows;		/* rows of all blocks */
	double	   *scratch;		/* widening: block_rows x d a worker, else NULL */
	size_t		scratch_values; /* a worker's */
} Run;

int
gc_cpu_threads(int wanted, int64_t units)
{
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t		worth = units / THREAD_UNITS;
	int			most = wanted > 0 ? wanted : (int) (cores > 1 ? cores : 1);

	if (most > GC_CPU_MAX_THREADS)
		most = GC_CPU_MAX_THREADS;
	if (worth < most)
		most = (int) (worth > 1 ? worth : 1);
	return most;
}

/* Claim and run one block; false when none is left or the pass stops */
static bool
run_next_block(Run *run, int worker)
{
	int64_t		b;
	const Block *block;

	if (__atomic_load_n(&run->stop, __ATOMIC_RELAXED))
		return false;
	b = __atomic_fetch_add(&run->next, 1, __ATOMIC_RELAXED);
	if (b >= run->nblocks)
		return false;
	block = &run->blocks[b];
	if (run->scratch != NULL && block->chunk->narrow_values != NULL)
	{
		GcChunk		wide = *block->chunk;
		size_t		values = (size_t) block->count * run->pass->rows->d;
		const float *from = block->chunk->narrow_values +
			(size_t) block->first * run->pass->rows->d;
		double	   *into = run->scratch + (size_t) worker * run->scratch_values;

		for (size_t v = 0; v < values; v++)
			into[v] = from[v];
		wide.first_row += block->first;
		wide.count = block->count;
		wide.values = into;
		wide.narrow_values = NULL;
		if (wide.hashes)
			wide.hashes += block->first;
		if (wide.weights)
			wide.weights += block->first;
		run->pass->fn(run->pass->ctx, worker, &wide, 0, block->count);
	}
	else
		run->pass->fn(run->pass->ctx, worker, block->chunk, block->first, block->count);
	__atomic_fetch_add(&run->done_rows, block->count, __ATOMIC_RELAXED);
	return true;
}

static void *
helper_main(void *arg)
{
	Run		   *run = arg;
	int			worker = __atomic_add_fetch(&run->next_worker, 1, __ATOMIC_RELAXED);

	while (run_next_block(run, worker))
		;
	return NULL;
}

/* The blocks of rows [first_row, n), none straddling two chunks */
static bool
build_blocks(Run *run, int64_t block_rows)
{
	const GcRows *rows = run->pass->rows;
	int64_t		first_row = run->pass->first_row;
	int64_t		nblocks = 0;

	for (int c = 0; c < rows->nchunks; c++)
		nblocks += (rows->chunks[c].count + block_rows - 1) / block_rows;
	run->blocks = malloc(sizeof(Block) * (nblocks > 0 ? nblocks : 1));
	if (run->blocks == NULL)
		return false;
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];
		int64_t		skip = first_row - chunk->first_row;

		for (int64_t i = skip > 0 ? skip : 0; i < chunk->count; i += block_rows)
		{
			run->blocks[run->nblocks++] = (Block) {
				chunk, i, chunk->count - i < block_rows ? chunk->count - i : block_rows
			};
			run->total_rows += run->blocks[run->nblocks - 1].count;
		}
	}
	return true;
}

GcStatus
gc_cpu_run_blocks(const GcCpuPass *pass, GcPoll *poll, GcError *err, const char *what)
{
	Run			run = {.pass = pass};
	int64_t		block_rows = pass->block_rows;
	int64_t		polled_rows = 0;
	pthread_t	ids[GC_CPU_MAX_THREADS];
	bool		started[GC_CPU_MAX_THREADS] = {false};
	int			helpers;
	GcStatus	status = GC_OK;

	if (block_rows <= 0)
	{
		int64_t		units = pass->row_units > 0 ? pass->row_units : 1;

		block_rows = GC_POLL_WORK / units;
		block_rows = block_rows < 1 ? 1 : block_rows > BLOCK_MAX_ROWS ? BLOCK_MAX_ROWS : block_rows;
	}
	if (pass->widen && pass->rows->narrow)
	{
		int64_t		most = WIDENED_MAX_VALUES / (pass->rows->d > 0 ? pass->rows->d : 1);

		block_rows = block_rows < most ? block_rows : most > 1 ? most : 1;
		run.scratch_values = (size_t) block_rows * pass->rows->d;
		run.scratch = malloc(sizeof(double) * run.scratch_values *
							 (pass->workers > 1 ? pass->workers : 1));
		if (run.scratch == NULL)
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a pass over float32 rows");
	}
	if (!build_blocks(&run, block_rows))
	{
		free(run.scratch);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the blocks of a pass");
	}
	helpers = pass->workers - 1;
	if (helpers > GC_CPU_MAX_THREADS - 1)
		helpers = GC_CPU_MAX_THREADS - 1;
	if (helpers > run.nblocks - 1)
		helpers = (int) (run.nblocks - 1);
	for (int t = 0; t < helpers; t++)
		started[t] = gc_thread_create(&ids[t], helper_main, &run) == 0;
	do
	{
		int64_t		done = __atomic_load_n(&run.done_rows, __ATOMIC_RELAXED);
		bool		stop = false;

		/* a row at a time, as a one-thread loop counts, so no poll is skipped */
		for (; polled_rows < done && !stop; polled_rows++)
			stop = gc_poll(poll, pass->row_units);
		if (stop)
		{
			__atomic_store_n(&run.stop, true, __ATOMIC_RELAXED);
			status = gc_fail(err, GC_INTERRUPTED, "%s", what);
			break;
		}
	} while (run_next_block(&run, 0));
	/* the other threads' last blocks, polled as they finish: every row counts, a stop comes in time */
	while (status == GC_OK)
	{
		int64_t		done = __atomic_load_n(&run.done_rows, __ATOMIC_RELAXED);
		bool		stop = false;
		struct timespec pause = {0, 100000};

		for (; polled_rows < done && !stop; polled_rows++)
			stop = gc_poll(poll, pass->row_units);
		if (stop)
		{
			__atomic_store_n(&run.stop, true, __ATOMIC_RELAXED);
			status = gc_fail(err, GC_INTERRUPTED, "%s", what);
		}
		else if (done >= run.total_rows)
			break;
		else
			nanosleep(&pause, NULL);
	}
	for (int t = 0; t < helpers; t++)
		if (started[t])
			(void) pthread_join(ids[t], NULL);
	free(run.blocks);
	free(run.scratch);
	return status;
}
