/*-------------------------------------------------------------------------
 *
 * assign_rows.h
 *	  What kmeans_gpu_assign keeps beside the rows it clusters, so that it
 *	  returns every row of its query: the ids of the rows in the row store,
 *	  in their order, which of those ids are NULL, and the rows whose
 *	  vector is NULL (not clustered; returned with a NULL cluster) with
 *	  their places in the query's order.  The collecting aggregate's
 *	  transition function fills it row by row; under a parallel plan each
 *	  process hands its own to the leader (the ids as a per-row column of
 *	  the partial state, the rest as the state's extra bytes) and the
 *	  leader appends them share after share; the final function hands the
 *	  whole, with the labels, to kmeans_gpu_assign through the sink.
 *
 * The extra bytes, native byte order, unaligned:
 *
 *	 int64 null_vectors, int64 null_ids
 *	 null_vectors records of int64 place, int64 id, int64 id_is_null
 *	 null_ids int64 indexes into the ids
 *
 * Places count every row of the share (a row with a vector or without)
 * from 0, in the order the share saw them; both lists rise strictly.
 *
 * IDENTIFICATION
 *	  src/assign_rows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ASSIGN_ROWS_H
#define GC_ASSIGN_ROWS_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

/* A row whose vector is NULL */
typedef struct GcNullVectorRow
{
	int64		place;			/* among all the rows, in order */
	int64		id;
	int64		id_is_null;		/* 0 or 1 (8 bytes: the record is the extra bytes' own) */
} GcNullVectorRow;

typedef struct GcAssignRows
{
	MemoryContext context;		/* where the arrays live */
	int64	   *ids;			/* of the rows with a vector, in order */
	int64		nids;
	int64		ids_capacity;
	int64	   *null_ids;		/* indexes into ids whose id is NULL */
	int64		nnull_ids;
	int64		null_ids_capacity;
	GcNullVectorRow *null_vectors;
	int64		nnull_vectors;
	int64		null_vectors_capacity;
} GcAssignRows;

/*
 * Where the aggregate's final function leaves its result for
 * kmeans_gpu_assign, which points gc_assign_sink at it while its query
 * runs (NULL otherwise: the aggregate is then refused)
 */
typedef struct GcAssignSink
{
	MemoryContext context;		/* the caller's: the result is copied there */
	bool		filled;
	GcAssignRows *rows;
	int32	   *labels;			/* rows->nids of them */
	double	   *distances;
	double		held_bytes;		/* the host memory the fit's rows took */
} GcAssignSink;

extern GcAssignSink *gc_assign_sink;

extern GcAssignRows *gc_assign_rows_create(MemoryContext context);
extern void gc_assign_rows_add(GcAssignRows *rows, bool id_is_null, int64 id,
							   bool vector_is_null);
extern char *gc_assign_rows_extra(const GcAssignRows *rows, int32 *bytes);
extern void gc_assign_rows_append(GcAssignRows *rows, const char *ids, int64 nids,
								  const char *extra, int32 extra_bytes);
extern void gc_assign_rows_emit(const GcAssignRows *rows, const int32 *labels,
								const double *distances, Tuplestorestate *store,
								TupleDesc tupdesc);

#endif							/* GC_ASSIGN_ROWS_H */
