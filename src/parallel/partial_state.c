/*-------------------------------------------------------------------------
 *
 * partial_state.c
 *	  The serialized partial states of the clustering aggregates under a
 *	  parallel plan: how a process's rows (a row store) reach the leader's
 *	  Finalize Aggregate, written (serialize) and read back (deserialize).
 *
 * Two paths, chosen per partial state by the serializing process:
 *
 * - Shared memory (gpuclust in shared_preload_libraries, or PostgreSQL 17
 *   and later, where the segments' registry lives in a named DSM segment
 *   instead of the main shared memory): a process writes its chunks of
 *   rows from 4 MB on straight into chunk segments as it collects them
 *   (GcChunkPlacement); when the state is serialized, its first, smaller
 *   chunks are laid out contiguously in one dynamic shared memory segment
 *   (header, bounding box, values, hashes, weights, per-row columns), and
 *   the serialized state is a few dozen bytes naming that segment and the
 *   chunk segments.  Every segment is pinned so that it outlives the
 *   worker.  The leader maps them and its row store borrows the rows in
 *   place: nothing is copied again and nothing passes through the Gather
 *   tuple queue.
 * - Inline (15 and 16 without the preload, tiny states, no segment to be
 *   had, or /dev/shm too full to hold one): the rows are copied into the
 *   serialized bytea itself (at most 1 GB) and the leader copies them into
 *   its row store.
 *
 * Who may map a segment, and who unpins it when its leader never reads
 * it, is the registry's (segment_registry.c); what the leader does with
 * the rows, partial_adopt.c's.
 *
 * Costs: a worker copies only its first 4 MB or so of rows once more
 * (into the state's segment, freeing its own chunks as it goes); the
 * leader copies nothing, but the rows it borrows are pageable memory, so
 * a GPU upload of them goes through page-locked staging buffers that
 * threads fill in parallel (cuda/host_upload.cu; registering 6 GB of
 * mappings with cudaHostRegister would cost more than that copy).  A
 * state hands over at most GC_PARTIAL_MAX_PIECES chunk segments (256 MB
 * each at most: 16 GB); past that, or when a chunk segment cannot be had,
 * the process allocates its later chunks itself and copies every row into
 * the state's segment, as it did before chunk segments.
 *
 * IDENTIFICATION
 *	  src/parallel/partial_state.c
 *
 *-------------------------------------------------------------------------
 */
#include "partial_state.h"
#include "segment_registry.h"

#include <sys/mman.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/proc.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_partial_deserialfn);

/*
 * Below this many bytes of rows, copying them through the tuple queue is
 * cheaper than a segment (and spares segments when a GROUP BY makes many
 * small groups).
 */
#define GC_PARTIAL_MIN_SEGMENT_BYTES ((Size) 64 * 1024)

/*
 * A partial aggregate's chunks from this size on are written straight into
 * chunk segments (place_in_segment), which grow to the second size: the
 * rows then reach the leader without the copy into a segment, and, where
 * min_dynamic_shared_memory reserves a region for segments, without the
 * kernel zeroing fresh pages for them first (on a 2-core machine the
 * zeroing of a worker's malloc'd huge pages was 29% of a 200,000 x 768
 * query's samples, more than the copy and the conversion together)
 */
#define GC_PLACE_MIN_BYTES		((Size) 4 << 20)
#define GC_PLACE_MAX_BYTES		((Size) 256 << 20)

/*
 * Chunk segments are made only while the registry holds fewer entries
 * than the server has backends: PostgreSQL's table of DSM segments has a
 * fixed number of slots plus a few a backend for every segment of every
 * session (dsm.c), and a parallel hash join, say, fails where none is
 * free, so gpuclust's rows keep to a share of it (a 1M x 768 query with 8
 * workers makes about 70 chunk segments)
 */
#define GC_PLACE_MAX_ENTRIES	MaxBackends

/* The fixed part of the meta section (partial_state.h) */
typedef struct GcPartialMetaBytes
{
	int32		k;
	int32		options_bytes;	/* the options jsonb follows; 0 when none */
	Oid			format;
	int32		extra_bytes;	/* the aggregate's own bytes follow the options */
	int64		null_rows;
	int64		seen_rows;
	double		started_ms;
} GcPartialMetaBytes;

/*
 * The chunk segments a process's partial state placed its rows in, pinned
 * and registered to the leader from the start; handed over when the state
 * is serialized, released with the state's memory otherwise
 */
typedef struct PlacedChunks
{
	int			count;
	dsm_segment *segments[GC_PARTIAL_MAX_PIECES];
	dsm_handle	handles[GC_PARTIAL_MAX_PIECES];
	int			slots[GC_PARTIAL_MAX_PIECES];
} PlacedChunks;

static void place_rows_in_segments(GcInput *input, MemoryContext context);

/*
 * True when an aggregate's states will be serialized (a partial aggregate
 * under a parallel plan, or partitionwise): its rows then stay in plain
 * memory, the leader's fit choosing the device
 */
bool
gc_partial_collecting(FunctionCallInfo fcinfo, GcInput *input)
{
	MemoryContext aggcontext;

	if (!(fcinfo->context && IsA(fcinfo->context, AggState) &&
		  DO_AGGSPLIT_SERIALIZE(((AggState *) fcinfo->context)->aggsplit)))
		return false;
	gc_use_cpu_device(&input->device);
	input->device_fixed = true;
	if (MyProc != NULL && gc_segment_registry_available() &&
		AggCheckCallContext(fcinfo, &aggcontext))
		place_rows_in_segments(input, aggcontext);
	return true;
}

/*
 * Map all of a new segment's pages at once (Linux 5.14 and later): one
 * call instead of a page fault per 4 kB page as the rows are written.
 * Only a hint: older kernels refuse it and the pages fault in as usual.
 */
static void
prefault_for_writing(dsm_segment *segment)
{
#ifdef MADV_POPULATE_WRITE
	char	   *start = dsm_segment_address(segment);
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	aligned = (uintptr_t) start & ~(page - 1);

	(void) madvise((void *) aligned,
				   dsm_segment_map_length(segment) + ((uintptr_t) start - aligned),
				   MADV_POPULATE_WRITE);
#endif
}

static uint64
header_checksum(const GcPartialHeader *header)
{
	return hash_bytes_extended((const unsigned char *) header,
							   offsetof(GcPartialHeader, checksum),
							   GC_PARTIAL_MAGIC);
}

/* Bytes of the rows section before its columns: box, values, hashes, weights */
static uint64
rows_bytes(int d, int64 n, bool narrow, bool weighted)
{
	return sizeof(double) * 2 * (uint64) d + (uint64) n * gc_row_bytes(d, narrow, weighted);
}

/*
 * What a partial state hands over: the rows (the first head_chunks chunks
 * copied into the rows section, the others, placed in chunk segments,
 * handed over as pieces) and the per-row columns
 */
typedef struct PartialSource
{
	GcRows	   *rows;
	int			head_chunks;
	int64		head_n;			/* rows in those chunks */
	PlacedChunks *placed;		/* the chunk segments; NULL: none */
	int			pieces;			/* 0, or all of placed's, the last chunks */
	const void *const *columns; /* ncolumns arrays of rows->n 8-byte values */
	int			ncolumns;
} PartialSource;

/*
 * Split the rows into the chunks to copy and the chunk segments to hand
 * over: the placed chunks, when they are the store's last ones (placement
 * ends for good when it fails, so they are unless it failed and chunks of
 * the store's own followed, and then every row is copied)
 */
static void
split_rows(PartialSource *src)
{
	GcRows	   *rows = src->rows;
	PlacedChunks *placed = src->placed;
	int			first = rows->nchunks - (placed ? placed->count : 0);
	bool		last = placed != NULL && placed->count > 0 && first >= 0;

	for (int i = 0; last && i < placed->count; i++)
		last = (const char *) gc_chunk_values(&rows->chunks[first + i]) ==
			(const char *) dsm_segment_address(placed->segments[i]) + GC_PARTIAL_CHUNK_HEADER;
	src->head_chunks = last ? first : rows->nchunks;
	src->head_n = last ? rows->chunks[first].first_row : rows->n;
	src->pieces = last ? placed->count : 0;
}

/*
 * Write the rows section at dest, releasing each chunk of rows once it is
 * copied, so that the copy never doubles the memory held
 */
static void
write_rows(const PartialSource *src, char *dest)
{
	GcRows	   *rows = src->rows;
	int			d = rows->d;
	Size		value_bytes = gc_value_bytes(rows->narrow);
	char	   *values = dest + sizeof(double) * 2 * d;
	char	   *hashes = values + value_bytes * (Size) d * src->head_n;
	char	   *weights = hashes + sizeof(uint64) * (Size) src->head_n;
	char	   *columns = dest + rows_bytes(d, src->head_n, rows->narrow, rows->weighted);

	memcpy(dest, rows->lo, sizeof(double) * d);
	memcpy(dest + sizeof(double) * d, rows->hi, sizeof(double) * d);
	for (int c = 0; c < src->head_chunks; c++)
	{
		GcChunk    *chunk = &rows->chunks[c];
		Size		count = (Size) chunk->count;

		memcpy(values, gc_chunk_values(chunk), value_bytes * d * count);
		memcpy(hashes, chunk->hashes, sizeof(uint64) * count);
		values += value_bytes * d * count;
		hashes += sizeof(uint64) * count;
		if (rows->weighted)
		{
			memcpy(weights, chunk->weights, sizeof(double) * count);
			weights += sizeof(double) * count;
		}
		if (!chunk->borrowed)
		{
			rows->free(gc_chunk_values(chunk));
			rows->free(chunk->hashes);
			if (chunk->weights)
				rows->free(chunk->weights);
			chunk->borrowed = true; /* gone: gc_rows_release skips it */
		}
		CHECK_FOR_INTERRUPTS();
	}
	for (int c = 0; c < src->ncolumns; c++)
		memcpy(columns + sizeof(uint64) * (Size) rows->n * c, src->columns[c],
			   sizeof(uint64) * (Size) rows->n);
}

/* Point chunk's arrays into a chunk segment at base, whose header says their shape */
static void
chunk_arrays(const char *base, const GcPartialChunkHeader *head, GcChunk *chunk)
{
	const char *values = base + GC_PARTIAL_CHUNK_HEADER;
	const char *hashes = values + gc_value_bytes(head->narrow) *
		head->d * (Size) head->capacity;
	bool		weighted = head->weighted != 0;
	int64		capacity = head->capacity;

	gc_chunk_set_values(chunk, (void *) values, head->narrow != 0);
	chunk->hashes = (uint64_t *) hashes;
	chunk->weights = weighted ? (double *) (hashes + sizeof(uint64) * (Size) capacity) : NULL;
}

/*
 * GcPlaceChunk of a partial aggregate's rows: a new chunk segment, pinned
 * and registered to the leader at once, so that whatever happens to this
 * process the leader's transaction end frees it; false when no segment or
 * registry slot is free, or /dev/shm cannot hold it
 */
static bool
place_in_segment(void *arg, GcChunk *chunk, const GcRows *rows)
{
	PlacedChunks *placed = (PlacedChunks *) arg;
	Size		bytes = GC_PARTIAL_CHUNK_HEADER +
		(Size) chunk->capacity * gc_row_bytes(rows->d, rows->narrow, rows->weighted);
	GcPartialChunkHeader head = {0};
	dsm_segment *segment;
	int			slot;

	if (placed->count == GC_PARTIAL_MAX_PIECES ||
		gc_segment_registry_used() >= (uint32) GC_PLACE_MAX_ENTRIES ||
		(segment = gc_segment_create_registered(bytes, &slot)) == NULL)
		return false;
	gc_segment_pin_registered(segment, slot);
	placed->segments[placed->count] = segment;
	placed->handles[placed->count] = dsm_segment_handle(segment);
	placed->slots[placed->count] = slot;
	placed->count++;

	head.magic = GC_PARTIAL_CHUNK_MAGIC;
	head.d = rows->d;
	head.capacity = chunk->capacity;
	head.weighted = rows->weighted;
	head.narrow = rows->narrow;
	memcpy(dsm_segment_address(segment), &head, sizeof(head));
	prefault_for_writing(segment);
	chunk_arrays(dsm_segment_address(segment), &head, chunk);
	return true;
}

/*
 * Unpin and unmap the chunk segments still placed (not handed to the
 * leader): the state is reset or its rows were copied instead.  An entry
 * the leader's transaction end has already cleared is its to unpin.
 */
static void
release_placed(void *arg)
{
	PlacedChunks *placed = (PlacedChunks *) arg;

	for (int i = 0; i < placed->count; i++)
	{
		gc_segment_release_unread(placed->slots[i], placed->handles[i]);
		if (dsm_find_mapping(placed->handles[i]) == placed->segments[i])
			dsm_detach(placed->segments[i]);
	}
	placed->count = 0;
}

/*
 * Give input's store a placement of its large chunks in chunk segments,
 * released with context unless a serialized state hands them over
 */
static void
place_rows_in_segments(GcInput *input, MemoryContext context)
{
	PlacedChunks *placed = MemoryContextAllocZero(context, sizeof(PlacedChunks));
	MemoryContextCallback *cb = MemoryContextAlloc(context, sizeof(*cb));

	cb->func = release_placed;
	cb->arg = placed;
	MemoryContextRegisterResetCallback(context, cb);
	input->placement.place = place_in_segment;
	input->placement.arg = placed;
	input->placement.min_bytes = GC_PLACE_MIN_BYTES;
	input->placement.max_bytes = GC_PLACE_MAX_BYTES;
}

/*
 * Put the rows in a new pinned, registered segment; false when no segment
 * or registry slot is free, or /dev/shm cannot hold it
 */
static bool
serialize_to_segment(const PartialSource *src, GcPartialHeader *header)
{
	dsm_segment *segment;
	int			slot;
	char	   *base;

	segment = gc_segment_create_registered(sizeof(GcPartialHeader) + header->data_bytes, &slot);
	if (segment == NULL)
		return false;
	header->flags |= GC_PARTIAL_IN_SEGMENT;
	header->handle = dsm_segment_handle(segment);
	header->checksum = header_checksum(header);
	base = dsm_segment_address(segment);
	prefault_for_writing(segment);
	PG_TRY();
	{
		write_rows(src, base + sizeof(GcPartialHeader));
	}
	PG_CATCH();
	{
		/* not pinned yet: the segment goes with this process's mapping */
		gc_segment_registry_remove(slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	memcpy(base, header, sizeof(GcPartialHeader));
	gc_segment_pin_registered(segment, slot);
	/* the leader may be this very process: it must map the segment anew */
	dsm_detach(segment);
	return true;
}

/*
 * Describe the chunk segments src hands over at dest (unaligned), writing
 * each one's row count into its header
 */
static void
write_pieces(const PartialSource *src, char *dest)
{
	for (int i = 0; i < src->pieces; i++)
	{
		const GcChunk *chunk = &src->rows->chunks[src->head_chunks + i];
		GcPartialChunkHeader *head = dsm_segment_address(src->placed->segments[i]);
		GcPartialPiece piece = {0};

		head->count = chunk->count;
		piece.handle = src->placed->handles[i];
		piece.count = chunk->count;
		memcpy(dest + sizeof(piece) * i, &piece, sizeof(piece));
	}
}

/* The meta section of a partial state, in the current memory context */
static char *
meta_section(const GcInput *input, const GcPartialMeta *meta, Size *bytes)
{
	GcPartialMetaBytes fixed = {0};
	int32		options_bytes = meta->options ? VARSIZE(meta->options) : 0;
	char	   *section;

	fixed.k = meta->k;
	fixed.options_bytes = options_bytes;
	fixed.format = input->format;
	fixed.null_rows = input->null_rows;
	fixed.seen_rows = input->seen_rows;
	fixed.started_ms = meta->started_ms;
	fixed.extra_bytes = meta->extra_bytes;
	*bytes = sizeof(fixed) + options_bytes + meta->extra_bytes;
	section = palloc(*bytes);
	memcpy(section, &fixed, sizeof(fixed));
	if (options_bytes > 0)
		memcpy(section + sizeof(fixed), meta->options, options_bytes);
	if (meta->extra_bytes > 0)
		memcpy(section + sizeof(fixed) + options_bytes, meta->extra, meta->extra_bytes);
	return section;
}

/*
 * Serialize a partial state: the aggregate's arguments, the input's counts
 * and rows (released as they are copied), and ncolumns per-row columns of
 * input->rows.n 8-byte values each (ids, demands), which the caller frees
 */
bytea *
gc_partial_serialize(GcInput *input, const GcPartialMeta *meta,
					 const void *const *columns, int ncolumns)
{
	PartialSource src = {0};
	GcPartialHeader header;
	Size		meta_bytes;
	char	   *meta_bytes_p = meta_section(input, meta, &meta_bytes);
	Size		pieces_bytes;
	Size		total;
	bytea	   *result;
	char	   *p;

	Assert(ncolumns >= 0 && ncolumns <= GC_PARTIAL_MAX_COLUMNS);
	src.rows = input->started ? &input->rows : NULL;
	src.placed = (PlacedChunks *) input->placement.arg;
	src.columns = columns;
	src.ncolumns = ncolumns;
	memset(&header, 0, sizeof(header));
	header.magic = GC_PARTIAL_MAGIC;
	header.version = GC_PARTIAL_VERSION;
	header.meta_bytes = meta_bytes;
	if (src.rows != NULL && src.rows->n > 0)
	{
		GcRows	   *rows = src.rows;

		split_rows(&src);
		header.d = rows->d;
		header.n = rows->n;
		header.head_n = src.head_n;
		header.pieces = src.pieces;
		header.total_weight = rows->total_weight;
		header.flags = (rows->weighted ? GC_PARTIAL_WEIGHTED : 0) |
			(rows->bad_weight ? GC_PARTIAL_BAD_WEIGHT : 0) |
			(rows->float_exact ? GC_PARTIAL_FLOAT_EXACT : 0) |
			(rows->narrow ? GC_PARTIAL_NARROW : 0);
		header.columns = ncolumns;
		header.data_bytes = rows_bytes(rows->d, src.head_n, rows->narrow, rows->weighted) +
			sizeof(uint64) * (uint64) rows->n * ncolumns;
	}
	pieces_bytes = sizeof(GcPartialPiece) * header.pieces;

	if (!(header.n > 0 && MyProc != NULL && gc_segment_registry_available() &&
		  header.data_bytes >= GC_PARTIAL_MIN_SEGMENT_BYTES &&
		  serialize_to_segment(&src, &header)))
		header.checksum = header_checksum(&header);

	total = VARHDRSZ + sizeof(header) + meta_bytes + pieces_bytes;
	if ((header.flags & GC_PARTIAL_IN_SEGMENT) == 0)
	{
		if (header.data_bytes > MaxAllocSize - total)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a parallel worker's share of the rows is too large to pass to the leader"),
					 errdetail("The share holds " INT64_FORMAT " rows of %d dimensions; rows copied through the tuple queue are limited to 1 GB.",
							   header.n, header.d),
					 !gc_segment_registry_available() ?
					 errhint("Add gpuclust to shared_preload_libraries so that workers hand their rows over in shared memory, or SET max_parallel_workers_per_gather = 0.") :
					 errhint("No dynamic shared memory segment was free, or /dev/shm is too small to hold the share: enlarge /dev/shm, or SET max_parallel_workers_per_gather = 0 to collect the rows in one process.")));
		total += header.data_bytes;
	}
	result = palloc(total);
	SET_VARSIZE(result, total);
	p = VARDATA(result);
	memcpy(p, &header, sizeof(header));
	p += sizeof(header);
	memcpy(p, meta_bytes_p, meta_bytes);
	p += meta_bytes;
	write_pieces(&src, p);
	p += pieces_bytes;
	if ((header.flags & GC_PARTIAL_IN_SEGMENT) == 0 && header.n > 0)
		write_rows(&src, p);
	pfree(meta_bytes_p);
	/* the pieces are the leader's now; chunk segments copied are let go */
	if (src.pieces > 0)
	{
		for (int i = 0; i < src.pieces; i++)
			dsm_detach(src.placed->segments[i]);
		src.placed->count = 0;
	}
	else if (src.placed != NULL)
		release_placed(src.placed);
	return result;
}

static void
corrupt_state(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid gpuclust partial aggregate state"),
			 errdetail("%s", detail)));
}

/* Whether a header's sizes agree with each other and with len bytes */
static bool
header_sizes_agree(const GcPartialHeader *header, Size len)
{
	bool		in_segment = (header->flags & GC_PARTIAL_IN_SEGMENT) != 0;
	bool		weighted = (header->flags & GC_PARTIAL_WEIGHTED) != 0;
	bool		narrow = (header->flags & GC_PARTIAL_NARROW) != 0;

	if (header->n < 0 || header->d < 0 || header->d > GC_MAX_DIM ||
		(header->n > 0) != (header->d > 0) ||
		header->head_n < 0 || header->head_n > header->n ||
		header->pieces < 0 || header->pieces > GC_PARTIAL_MAX_PIECES ||
		(header->pieces == 0 && header->head_n != header->n) ||
		header->columns < 0 || header->columns > GC_PARTIAL_MAX_COLUMNS ||
		(header->n == 0 && header->columns != 0) ||
		header->meta_bytes > len - sizeof(*header) ||
		(in_segment && header->n == 0))
		return false;
	if (header->n > 0 &&
		(header->n > (int64) (MaxAllocHugeSize / sizeof(double) / (header->d + header->columns)) ||
		 header->data_bytes != rows_bytes(header->d, header->head_n, narrow, weighted) +
		 sizeof(uint64) * (uint64) header->n * header->columns))
		return false;
	return len == sizeof(*header) + header->meta_bytes +
		sizeof(GcPartialPiece) * header->pieces + (in_segment ? 0 : header->data_bytes);
}

/* Read the meta section (meta_bytes at p) into out */
static void
read_meta(const char *p, Size meta_bytes, GcPartialRows *out)
{
	GcPartialMetaBytes fixed;

	if (meta_bytes < sizeof(fixed))
		corrupt_state("Its meta section is too short.");
	memcpy(&fixed, p, sizeof(fixed));
	if (fixed.options_bytes < 0 || fixed.extra_bytes < 0 ||
		meta_bytes != sizeof(fixed) + (Size) fixed.options_bytes + (Size) fixed.extra_bytes ||
		(fixed.options_bytes > 0 && fixed.options_bytes < VARHDRSZ))
		corrupt_state("Its meta section is malformed.");
	out->meta.k = fixed.k;
	out->meta.started_ms = fixed.started_ms;
	out->format = fixed.format;
	out->null_rows = fixed.null_rows;
	out->seen_rows = fixed.seen_rows;
	if (fixed.options_bytes > 0)
	{
		out->meta.options = palloc(fixed.options_bytes);
		memcpy(out->meta.options, p + sizeof(fixed), fixed.options_bytes);
		if (VARSIZE(out->meta.options) != (Size) fixed.options_bytes)
			corrupt_state("Its options are malformed.");
	}
	out->meta.extra_bytes = fixed.extra_bytes;
	out->meta.extra = fixed.extra_bytes > 0 ? p + sizeof(fixed) + fixed.options_bytes : NULL;
}

/*
 * Map a segment registered to this backend (gc_segment_attach_registered),
 * which from then on dies with the mapping
 */
static dsm_segment *
map_registered(dsm_handle handle)
{
	const char *problem = NULL;
	dsm_segment *segment = gc_segment_attach_registered(handle, &problem);

	if (segment == NULL)
		corrupt_state(problem);
	return segment;
}

/*
 * Map the chunk segments a state names (npieces descriptors at p), which
 * hold its rows after the head_n of the rows section
 */
static void
map_pieces(const GcPartialHeader *header, const char *p, GcPartialRows *out)
{
	int64		rows = header->head_n;
	bool		weighted = (header->flags & GC_PARTIAL_WEIGHTED) != 0;
	bool		narrow = (header->flags & GC_PARTIAL_NARROW) != 0;

	out->npieces = header->pieces;
	out->pieces = palloc0(sizeof(GcPartialPieceRows) * Max(header->pieces, 1));
	for (int i = 0; i < header->pieces; i++)
	{
		GcPartialPiece piece;
		GcPartialChunkHeader head;
		GcPartialPieceRows *view = &out->pieces[i];
		GcChunk		chunk;

		memcpy(&piece, p + sizeof(piece) * i, sizeof(piece));
		if (piece.reserved != 0 || piece.count < 0 || piece.count > header->n - rows)
			corrupt_state("Its chunk segments do not agree with it.");
		view->segment = map_registered(piece.handle);
		if (dsm_segment_map_length(view->segment) < GC_PARTIAL_CHUNK_HEADER)
			corrupt_state("Its chunk segments do not agree with it.");
		memcpy(&head, dsm_segment_address(view->segment), sizeof(head));
		/* a chunk's room may pass the share's rows: it was made to double the last chunk */
		if (head.magic != GC_PARTIAL_CHUNK_MAGIC || head.d != header->d ||
			head.weighted != (uint32) weighted || head.narrow != (uint32) narrow ||
			head.count != piece.count || head.capacity < head.count ||
			head.capacity > (int64) ((dsm_segment_map_length(view->segment) - GC_PARTIAL_CHUNK_HEADER) /
									 gc_row_bytes(head.d, narrow, weighted)))
			corrupt_state("Its chunk segments do not agree with it.");
		chunk_arrays(dsm_segment_address(view->segment), &head, &chunk);
		view->count = piece.count;
		view->values = gc_chunk_values(&chunk);
		view->hashes = chunk.hashes;
		view->weights = chunk.weights;
		rows += piece.count;
	}
	if (rows != header->n)
		corrupt_state("Its chunk segments do not agree with it.");
}

/*
 * Map the segment a header names (map_registered); the rows section's
 * address
 */
static const char *
map_segment(const GcPartialHeader *header, GcPartialRows *out)
{
	dsm_segment *segment = map_registered(header->handle);
	GcPartialHeader stored;

	out->segment = segment;
	memcpy(&stored, dsm_segment_address(segment), sizeof(stored));
	if (dsm_segment_map_length(segment) < sizeof(stored) + header->data_bytes ||
		memcmp(&stored, header, sizeof(stored)) != 0)
		corrupt_state("Its shared memory segment does not match it.");

	/*
	 * Not prefaulted: the pages fault in (16 at a time) where the rows are
	 * read, which for a GPU fit is the upload's staging threads, in parallel
	 */
	return (const char *) dsm_segment_address(segment) + sizeof(stored);
}

/*
 * Read a serialized partial state back.  Rows in a segment are mapped
 * (out->segment) and the segment unpinned, so that it dies with the
 * mapping; inline rows stay in the bytea.
 */
void
gc_partial_deserialize(bytea *serialized, GcPartialRows *out)
{
	Size		len = VARSIZE_ANY_EXHDR(serialized);
	const char *p = VARDATA_ANY(serialized);
	GcPartialHeader header;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(header))
		corrupt_state("The state is too short.");
	memcpy(&header, p, sizeof(header));
	if (header.magic != GC_PARTIAL_MAGIC || header.version != GC_PARTIAL_VERSION ||
		header.checksum != header_checksum(&header))
		corrupt_state("The state's header is not valid.");
	if (!header_sizes_agree(&header, len))
		corrupt_state("The state's sizes do not agree.");
	read_meta(p + sizeof(header), header.meta_bytes, out);
	out->d = header.d;
	out->n = header.n;
	out->head_n = header.head_n;
	out->total_weight = header.total_weight;
	out->weighted = (header.flags & GC_PARTIAL_WEIGHTED) != 0;
	out->bad_weight = (header.flags & GC_PARTIAL_BAD_WEIGHT) != 0;
	out->float_exact = (header.flags & GC_PARTIAL_FLOAT_EXACT) != 0;
	out->narrow = (header.flags & GC_PARTIAL_NARROW) != 0;
	out->columns = header.columns;
	p += sizeof(header) + header.meta_bytes;
	map_pieces(&header, p, out);
	p += sizeof(GcPartialPiece) * header.pieces;
	if (header.flags & GC_PARTIAL_IN_SEGMENT)
		out->data = map_segment(&header, out);
	else
		out->data = p;
}

/* Whether a partial state's rows came (some or all) in shared memory */
bool
gc_partial_in_shared_memory(const GcPartialRows *part)
{
	return part->segment != NULL || part->npieces > 0;
}

/*
 * The deserial function of kmeans_gpu and pmedian_gpu: the partial state
 * read back in the leader, a GcPartialRows whose rows stay where they are
 * (a mapped segment or the bytea) until a combine function adopts them
 */
Datum
gpuclust_partial_deserialfn(PG_FUNCTION_ARGS)
{
	GcPartialRows *part;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "gpuclust deserial function called in non-aggregate context");
	part = palloc(sizeof(GcPartialRows));
	gc_partial_deserialize(PG_GETARG_BYTEA_PP(0), part);
	PG_RETURN_POINTER(part);
}

/*
 * The deserialized partial state a combine function joins into its state
 * (NULL: none), checking the call's context
 */
GcPartialRows *
gc_partial_share(FunctionCallInfo fcinfo, MemoryContext *aggcontext)
{
	if (!AggCheckCallContext(fcinfo, aggcontext))
		elog(ERROR, "gpuclust combine function called in non-aggregate context");
	return PG_ARGISNULL(1) ? NULL : (GcPartialRows *) PG_GETARG_POINTER(1);
}

/*
 * Per-row column number column of a partial state: n 8-byte values, in a
 * segment (aligned) or in the bytea (possibly not: read with memcpy)
 */
const char *
gc_partial_column(const GcPartialRows *part, int column)
{
	Assert(column >= 0 && column < part->columns);
	return part->data + rows_bytes(part->d, part->head_n, part->narrow, part->weighted) +
		sizeof(uint64) * (Size) part->n * column;
}

