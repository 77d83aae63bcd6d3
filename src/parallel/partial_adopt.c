/*-------------------------------------------------------------------------
 *
 * partial_adopt.c
 *	  The leader's side of the parallel aggregates' partial states
 *	  (partial_state.h): a deserialized state's rows joined into the
 *	  leader's row store, borrowed in place from the segments that hold
 *	  them (or copied out of the bytea), and those segments kept mapped
 *	  until the aggregate's memory goes, their pages freed ahead by
 *	  threads.
 *
 * IDENTIFICATION
 *	  src/parallel/partial_adopt.c
 *
 *-------------------------------------------------------------------------
 */
#include "partial_state.h"

#include <sys/mman.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/memutils.h"

/*
 * Freeing the pages of the segments a query borrowed (release_pages_ahead):
 * threads at most, and the least bytes for which it pays
 */
#define GC_PAGE_RELEASE_THREADS 8
#define GC_PAGE_RELEASE_MIN_BYTES ((Size) 256 << 20)

/* rows are labelled with int32 */
#define GC_MAX_ROWS ((int64) PG_INT32_MAX)

/*
 * Whether a segment was carved out of the main shared memory region that
 * min_dynamic_shared_memory reserves at server start (PostgreSQL 14 and
 * later): dsm.c gives those segments odd handles and the segments of the
 * dsm implementation (/dev/shm) even ones (make_main_region_dsm_handle and
 * is_main_region_dsm_handle, static there).  The pages of such a segment
 * stay in the main region when it is freed and serve the next one without
 * being allocated and zeroed again.
 */
static inline bool
in_main_region(dsm_handle handle)
{
	return (handle & 1) != 0;
}

#ifdef MADV_REMOVE
/* The segments whose pages release_pages_ahead's threads free, one at a time each */
typedef struct PageRelease
{
	char	  **starts;
	Size	   *lengths;
	int			count;
	pg_atomic_uint32 next;
} PageRelease;

static void *
page_release_main(void *arg)
{
	PageRelease *work = (PageRelease *) arg;
	uint32		i;

	while ((i = pg_atomic_fetch_add_u32(&work->next, 1)) < (uint32) work->count)
		(void) madvise(work->starts[i], work->lengths[i], MADV_REMOVE);
	return NULL;
}
#endif

/*
 * Free the pages of keep's segments before they are detached, several
 * segments at once.  The last detach of a segment frees its pages one
 * 4 kB page at a time in the detaching process: for the 6 GB of 1M rows
 * of d = 768 that 8 workers left, about 0.8 s of the query after the fit
 * on the H100 machine.  madvise(MADV_REMOVE) frees a segment's pages
 * ahead (holding its file's lock, so a thread takes a whole segment).
 * The threads block every signal, call madvise alone and are joined here.
 * Only a hint: where a thread or the memory for the lists is not to be
 * had, the detach frees the pages as before.  Segments in the main region
 * are left alone: their pages are the region's, for the next query.
 */
static void
release_pages_ahead(GcPartialSegments *keep)
{
#ifdef MADV_REMOVE
	PageRelease work;
	pthread_t	threads[GC_PAGE_RELEASE_THREADS];
	int			started = 0;
	Size		total = 0;

	work.starts = malloc(sizeof(char *) * keep->count);
	work.lengths = malloc(sizeof(Size) * keep->count);
	work.count = 0;
	pg_atomic_init_u32(&work.next, 0);
	for (int i = 0; work.starts && work.lengths && i < keep->count; i++)
		if (!in_main_region(keep->handles[i]) &&
			dsm_find_mapping(keep->handles[i]) == keep->segments[i])
		{
			work.starts[work.count] = dsm_segment_address(keep->segments[i]);
			work.lengths[work.count] = dsm_segment_map_length(keep->segments[i]);
			total += work.lengths[work.count++];
		}
	if (work.count >= 2 && total >= GC_PAGE_RELEASE_MIN_BYTES)
	{
		while (started < GC_PAGE_RELEASE_THREADS && started < work.count &&
			   gc_thread_create(&threads[started], page_release_main, &work) == 0)
			started++;
		for (int t = 0; t < started; t++)
			(void) pthread_join(threads[t], NULL);
	}
	free(work.starts);
	free(work.lengths);
#endif
}

static void
detach_segments(void *arg)
{
	GcPartialSegments *keep = (GcPartialSegments *) arg;

	release_pages_ahead(keep);
	for (int i = 0; i < keep->count; i++)
	{
		/* on error the resource owner may have detached it already */
		if (dsm_find_mapping(keep->handles[i]) == keep->segments[i])
			dsm_detach(keep->segments[i]);
	}
	keep->count = 0;
}

/*
 * A list of mapped segments, detached when context is reset or deleted
 * (the end of the query, normally), so that the rows they hold outlive
 * the combine function but not the aggregate
 */
GcPartialSegments *
gc_partial_segments_create(MemoryContext context)
{
	GcPartialSegments *keep = MemoryContextAllocZero(context, sizeof(GcPartialSegments));
	MemoryContextCallback *cb = MemoryContextAlloc(context, sizeof(*cb));

	keep->max = 8;
	keep->segments = MemoryContextAlloc(context, sizeof(dsm_segment *) * keep->max);
	keep->handles = MemoryContextAlloc(context, sizeof(dsm_handle) * keep->max);
	cb->func = detach_segments;
	cb->arg = keep;
	MemoryContextRegisterResetCallback(context, cb);
	return keep;
}

static void
keep_segment(GcPartialSegments *keep, dsm_segment *segment)
{
	if (keep->count == keep->max)
	{
		keep->max *= 2;
		keep->segments = repalloc(keep->segments, sizeof(dsm_segment *) * keep->max);
		keep->handles = repalloc(keep->handles, sizeof(dsm_handle) * keep->max);
	}
	keep->segments[keep->count] = segment;
	keep->handles[keep->count] = dsm_segment_handle(segment);
	keep->count++;
}

/*
 * Append chunk to rows, freeing a chunk of the store's own on failure;
 * the partial state's total weight goes with its first chunk (*weight
 * then 0)
 */
static void
append_chunk(GcRows *rows, GcChunk *chunk, const double *lo, const double *hi,
			 int64 *weight, bool bad_weight)
{
	GcError		err = {0};

	if (gc_rows_append_chunk(rows, chunk, lo, hi, *weight, bad_weight, &err) != GC_OK)
	{
		if (!chunk->borrowed)
		{
			rows->free(gc_chunk_values(chunk));
			rows->free(chunk->hashes);
			if (chunk->weights)
				rows->free(chunk->weights);
		}
		gc_raise(&err);
	}
	*weight = 0;
}

/*
 * The rows of a partial state's rows section as a chunk: borrowed in place
 * from its segment, or copied from the bytea into the store's own memory
 */
static void
head_chunk(GcRows *rows, const GcPartialRows *part, GcChunk *chunk)
{
	int			d = part->d;
	Size		n = (Size) part->head_n;
	Size		value_bytes = gc_value_bytes(part->narrow);
	const char *values = part->data + sizeof(double) * 2 * d;
	const char *hashes = values + value_bytes * d * n;
	const char *weights = hashes + sizeof(uint64) * n;
	GcError		err = {0};

	memset(chunk, 0, sizeof(*chunk));
	chunk->count = part->head_n;
	if (part->segment != NULL)
	{
		/* aligned: the segment's address is, and so is every section */
		gc_chunk_set_values(chunk, (void *) values, part->narrow);
		chunk->hashes = (uint64_t *) hashes;
		chunk->weights = part->weighted ? (double *) weights : NULL;
		chunk->borrowed = true;
		return;
	}
	if (gc_rows_alloc_arrays(rows, chunk, part->head_n, &err) != GC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of host memory in gpuclust"),
				 errdetail("Could not allocate memory for " INT64_FORMAT " rows of a partial state.",
						   part->head_n)));
	memcpy(gc_chunk_values(chunk), values, value_bytes * d * n);
	memcpy(chunk->hashes, hashes, sizeof(uint64) * n);
	if (part->weighted)
		memcpy(chunk->weights, weights, sizeof(double) * n);
}

/*
 * Add a partial state's rows to rows (of the same dimension, initialised
 * by the caller): the rows section's (head_chunk), then its chunk
 * segments', borrowed in place; keep holds every segment mapped
 */
static void
append_rows(GcRows *rows, const GcPartialRows *part, GcPartialSegments *keep)
{
	int			d = part->d;
	int64		weight = part->total_weight;
	double	   *lo;
	double	   *hi;
	GcChunk		chunk;

	if (part->n == 0)
		return;
	lo = palloc(sizeof(double) * d);
	hi = palloc(sizeof(double) * d);
	Assert(rows->d == d);
	if (rows->nchunks == 0 && part->weighted)
		gc_rows_set_weighted(rows);
	if (rows->weighted != part->weighted)
		elog(ERROR, "cannot combine weighted and unweighted partial states");
	if (rows->narrow != part->narrow)
		elog(ERROR, "cannot combine partial states of float32 and of double rows");
	memcpy(lo, part->data, sizeof(double) * d);
	memcpy(hi, part->data + sizeof(double) * d, sizeof(double) * d);

	if (part->segment != NULL)
		keep_segment(keep, part->segment);
	for (int i = 0; i < part->npieces; i++)
		keep_segment(keep, part->pieces[i].segment);
	if (part->head_n > 0)
	{
		head_chunk(rows, part, &chunk);
		chunk.float_exact = part->float_exact;
		append_chunk(rows, &chunk, lo, hi, &weight, part->bad_weight);
	}
	for (int i = 0; i < part->npieces; i++)
	{
		memset(&chunk, 0, sizeof(chunk));
		gc_chunk_set_values(&chunk, (void *) part->pieces[i].values, part->narrow);
		chunk.hashes = (uint64_t *) part->pieces[i].hashes;
		chunk.weights = (double *) part->pieces[i].weights;
		chunk.count = part->pieces[i].count;
		chunk.borrowed = true;
		chunk.float_exact = part->float_exact;
		if (chunk.count > 0)
			append_chunk(rows, &chunk, lo, hi, &weight, part->bad_weight);
	}
	pfree(lo);
	pfree(hi);
}

/*
 * The rows so far and a share's must stay within the fit's memory: each
 * worker's own share kept to the limit, the leader's sum of them is too
 */
static void
check_rows_memory(const GcInput *input, const GcPartialRows *part)
{
	GcFitMemory account = input->memory;
	size_t		row_bytes = gc_row_bytes(part->d, part->narrow, part->weighted);

	gc_fit_memory_count(&account, add_size(gc_rows_held_bytes(&input->rows),
										   mul_size((size_t) part->n, row_bytes)),
						"The parallel workers' rows");
}

/*
 * Join a deserialized partial state's counts and rows into the leader's
 * input: the first rows choose the device (choose_device: the fit's,
 * pinned memory for a GPU fit in this backend) and fix the dimension, which later shares must have
 */
void
gc_partial_adopt(GcInput *input, const GcPartialRows *part, GcPartialSegments *keep,
				 void (*choose_device) (GcDevice *))
{
	input->null_rows += part->null_rows;
	input->seen_rows += part->seen_rows;
	if (part->n == 0)
		return;
	if (!input->started)
	{
		GcError		err = {0};

		choose_device(&input->device);
		if (gc_rows_init(&input->rows, part->d, input->device.alloc,
						 input->device.free, &err) != GC_OK)
			gc_raise(&err);
		if (part->narrow)
			gc_rows_set_narrow(&input->rows);
		input->started = true;
		input->format = part->format;
	}
	else if (part->d != input->rows.d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vectors of %d and of %d dimensions cannot be clustered together",
						input->rows.d, part->d),
				 errdetail("Parallel workers read vectors of both dimensions."),
				 errhint("All vectors clustered together must have the same dimension.")));
	if (input->rows.n + part->n > GC_MAX_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot cluster more than " INT64_FORMAT " rows", GC_MAX_ROWS)));
	check_rows_memory(input, part);
	append_rows(&input->rows, part, keep);
}

/*
 * The segment of keep that holds ptr (a borrowed chunk's array): its
 * handle and mapped address; false when no segment of keep holds it
 */
bool
gc_partial_segment_of(const GcPartialSegments *keep, const void *ptr,
					  dsm_handle *handle, const char **base)
{
	for (int i = 0; keep != NULL && i < keep->count; i++)
	{
		const char *start = dsm_segment_address(keep->segments[i]);

		if ((const char *) ptr >= start &&
			(const char *) ptr < start + dsm_segment_map_length(keep->segments[i]))
		{
			*handle = keep->handles[i];
			*base = start;
			return true;
		}
	}
	return false;
}
