/*-------------------------------------------------------------------------
 *
 * partial_state.h
 *	  Partial aggregate states of parallel plans: a process's rows (and its
 *	  aggregate's per-row columns) handed to the leader in a dynamic shared
 *	  memory segment (or, without a registry or for small shares, copied
 *	  into the serialized state itself).  kmeans_gpu and pmedian_gpu share
 *	  it; the format below is what a reader of the segments relies on.
 *
 * The serialized state (a bytea, the partial aggregate's output):
 *
 *	 GcPartialHeader	 (below; flags say whether the rows are IN_SEGMENT)
 *	 meta				 meta_bytes: int32 k, int32 options_bytes, uint32
 *						 format, int32 extra_bytes, int64 null_rows, int64
 *						 seen_rows, double started_ms, then the options
 *						 jsonb (options_bytes, a whole varlena; 0: none),
 *						 then extra_bytes of the aggregate's own
 *						 (kmeans_gpu_assign's: assign_rows.h)
 *	 GcPartialPiece		 pieces of them: the chunk segments holding
 *						 the rows after the head's, in order
 *	 rows section		 data_bytes, only when the rows are not in a segment
 *
 * The segment named by handle, when IN_SEGMENT (its address and so every
 * section 8-byte aligned):
 *
 *	 GcPartialHeader	 a copy of the serialized one, byte for byte
 *	 rows section		 data_bytes
 *
 * The rows section, for d dimensions, n rows in all and head_n of them
 * here (native byte order):
 *
 *	 double lo[d], hi[d]		 bounding box of all n rows
 *	 double values[head_n * d]	 row-major
 *	 uint64 hashes[head_n]		 gc_row_hash of each row's values
 *	 double weights[head_n]		 only when flags has WEIGHTED
 *	 8-byte columns[columns][n]	 the aggregate's per-row values for all n
 *								 rows, column after column (pmedian_gpu:
 *								 int64 ids, then double demands when it has
 *								 them; kmeans_gpu_assign's collection: int64
 *								 ids)
 *
 * A chunk segment (a piece) holds rows the process wrote there as it
 * collected them (GcChunkPlacement: its large chunks):
 *
 *	 GcPartialChunkHeader		 padded to GC_PARTIAL_CHUNK_HEADER bytes
 *	 double values[capacity * d], uint64 hashes[capacity], and double
 *	 weights[capacity] when weighted; the first count rows are used
 *
 * A segment is pinned and registered to its leader (pid and local
 * transaction) until the leader's deserial function maps it: a reader
 * other than that leader must not map it (segment_registry.c explains
 * the lifetime).  So a serialized state means something only to the leader of
 * the query that made it, in the same server: it never leaves the server
 * (Citus and postgres_fdw do not ship aggregates with an internal state),
 * and a state naming a segment not registered to the reading backend is
 * rejected as corrupt (XX001).  The inline form is in native byte order.
 *
 * IDENTIFICATION
 *	  src/parallel/partial_state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PARTIAL_STATE_H
#define GC_PARTIAL_STATE_H

#include "gpuclust.h"

#include "storage/dsm.h"

#define GC_PARTIAL_MAGIC		0x47435053	/* "GCPS" */
#define GC_PARTIAL_VERSION		5
#define GC_PARTIAL_WEIGHTED		0x0001
#define GC_PARTIAL_BAD_WEIGHT	0x0002
#define GC_PARTIAL_IN_SEGMENT	0x0004
#define GC_PARTIAL_FLOAT_EXACT	0x0008	/* every value a float32 value */
#define GC_PARTIAL_NARROW		0x0010	/* values held as float32 (GcRows.narrow) */

/* Per-row columns an aggregate may hand over with its rows */
#define GC_PARTIAL_MAX_COLUMNS	4

/* Chunk segments one partial state may hand over */
#define GC_PARTIAL_MAX_PIECES	64

#define GC_PARTIAL_CHUNK_MAGIC	0x47435043	/* "GCPC" */
#define GC_PARTIAL_CHUNK_HEADER 64

/*
 * The header that starts the serialized state and, when the rows are in a
 * segment, the segment too.  checksum (hash_bytes_extended of the fields
 * before it, seeded with GC_PARTIAL_MAGIC) guards against a corrupt state.
 */
typedef struct GcPartialHeader
{
	uint32		magic;
	uint16		version;
	uint16		flags;
	int32		d;
	uint32		handle;			/* dsm_handle when IN_SEGMENT */
	int64		n;				/* rows in all */
	int64		total_weight;
	int32		columns;		/* per-row 8-byte columns after the rows */
	int32		pieces;			/* chunk segments after the meta section */
	int64		head_n;			/* rows in the rows section; pieces hold the rest */
	uint64		meta_bytes;
	uint64		data_bytes;		/* the whole rows section, columns included */
	uint64		checksum;
} GcPartialHeader;

/* A chunk segment as the serialized state names it (unaligned there) */
typedef struct GcPartialPiece
{
	uint32		handle;			/* dsm_handle */
	uint32		reserved;		/* 0 */
	int64		count;			/* rows */
} GcPartialPiece;

/* The start of a chunk segment */
typedef struct GcPartialChunkHeader
{
	uint32		magic;
	int32		d;
	int64		capacity;		/* rows the arrays have room for */
	int64		count;			/* rows used, written when handed over */
	uint32		weighted;
	uint32		narrow;			/* values are float32 */
} GcPartialChunkHeader;

/* A chunk segment as the leader maps it */
typedef struct GcPartialPieceRows
{
	dsm_segment *segment;
	int64		count;
	const void *values;			/* doubles, or floats in a narrow state */
	const uint64 *hashes;
	const double *weights;		/* NULL when unweighted */
} GcPartialPieceRows;

/*
 * The arguments of the aggregate that made a partial state, which the
 * leader checks and fits with
 */
typedef struct GcPartialMeta
{
	int32		k;				/* k of kmeans_gpu, p of pmedian_gpu */
	Jsonb	   *options;		/* the options argument; NULL when none */
	double		started_ms;		/* when the process saw its first row */
	const char *extra;			/* the aggregate's own bytes (unaligned when read) */
	int32		extra_bytes;	/* 0: none */
} GcPartialMeta;

/*
 * A partial state as the leader reads it back: its meta, its input's
 * counts, and its d-dimensional rows, whose sections lie at data, either
 * in a mapped segment or in the serialized bytes (then possibly unaligned)
 */
typedef struct GcPartialRows
{
	GcPartialMeta meta;
	Oid			format;			/* of the process's first non-NULL vector */
	int64		null_rows;
	int64		seen_rows;
	int			d;				/* 0 when the partial state had no rows */
	int64		n;				/* rows in all */
	int64		head_n;			/* rows in the rows section */
	int64		total_weight;
	bool		weighted;
	bool		bad_weight;
	bool		float_exact;
	bool		narrow;			/* values are float32 (GcRows.narrow) */
	int			columns;
	const char *data;			/* the rows section */
	dsm_segment *segment;		/* segment holding data; NULL when inline */
	int			npieces;		/* chunk segments holding the other rows */
	GcPartialPieceRows *pieces;
} GcPartialRows;

/* Segments a combined state has mapped, detached when its context resets */
typedef struct GcPartialSegments
{
	int			count;
	int			max;
	dsm_segment **segments;
	dsm_handle *handles;
} GcPartialSegments;

extern bool gc_partial_collecting(FunctionCallInfo fcinfo, GcInput *input);
extern bool gc_partial_in_shared_memory(const GcPartialRows *part);
extern bytea *gc_partial_serialize(GcInput *input, const GcPartialMeta *meta,
								   const void *const *columns, int ncolumns);
extern void gc_partial_deserialize(bytea *serialized, GcPartialRows *out);
extern GcPartialRows *gc_partial_share(FunctionCallInfo fcinfo, MemoryContext *aggcontext);
extern const char *gc_partial_column(const GcPartialRows *part, int column);
extern GcPartialSegments *gc_partial_segments_create(MemoryContext context);
extern void gc_partial_adopt(GcInput *input, const GcPartialRows *part,
							 GcPartialSegments *keep, void (*choose_device) (GcDevice *));
extern bool gc_partial_segment_of(const GcPartialSegments *keep, const void *ptr,
								  dsm_handle *handle, const char **base);

#endif							/* GC_PARTIAL_STATE_H */
