/*-------------------------------------------------------------------------
 *
 * gc_input.h
 *	  A fit's input rows from SQL values (input.c): GcInput, the vector
 *	  formats, the view of one vector, and pgvector's types read in place
 *	  (pgvector_input.c).
 *
 * IDENTIFICATION
 *	  src/gc_input.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_INPUT_H
#define GC_INPUT_H

#include "gc_device.h"
#include "gc_progress.h"

/* input.c: rows from SQL arrays */
typedef struct GcInput
{
	GcRows		rows;
	bool		started;		/* rows initialised (first non-NULL row seen) */
	int64		null_rows;		/* NULL rows skipped */
	int64		seen_rows;		/* rows seen, NULL or not, for messages */
	int64		first_rowno;	/* number of the first non-NULL row */
	Oid			format;			/* of the first non-NULL row's vector */
	bool		unit;			/* cosine metric: rows scaled to unit length */
	GcDevice	device;
	bool		device_fixed;	/* device set by the caller: keep it */
	GcFitKind	fit;			/* what the rows are for, for the progress view */
	double		work_per_row;	/* k * n_init, for auto's choice while collecting; 0: at the fit */
	bool		hashes_at_fit;	/* the rows reach a k-means fit in this process:
								 * their hashes wait for gc_input_finish_rows */
	int64		settle_rows;	/* rows at which the work reaches the GPU's
								 * threshold; 0 until the first row */
	uint32		progress;		/* progress token of the fit (0: none) */
	const struct GcPartialSegments *segments;	/* where borrowed rows lie
												 * (a parallel plan's leader) */
	GcChunkPlacement placement; /* the rows' large chunks in shared memory
								 * (a partial aggregate's, partial_state.c) */
	GcFitMemory memory;			/* the fit's host memory account: the rows
								 * take what is left when they start */
	bool		rows_counted;	/* the rows are in the account */
} GcInput;

extern void gc_input_init(GcInput *input);
extern void gc_input_add(GcInput *input, Datum vector, Oid format);
extern void gc_input_add_null(GcInput *input);
extern void gc_input_normalize(double *x, int d, int64 rowno);
extern void gc_input_release(GcInput *input);
extern double gc_input_bytes(const GcInput *input);
extern void gc_input_settle_device(GcInput *input, double work);
extern double gc_input_finish_rows(GcInput *input);
extern void gc_input_release_at_reset(GcInput *input, MemoryContext context);
extern void gc_input_count_rows(GcInput *input);

/*
 * A vector's format is the element type's OID for an array (FLOAT8OID,
 * FLOAT4OID) or one of these values, which are no type's OID: pgvector's
 * types, whose OIDs differ from database to database, and any array of
 * numbers (the element type then comes from each value)
 */
#define GC_PGVECTOR_VECTOR	((Oid) 1)	/* vector: int16 dim, int16, float4[dim] */
#define GC_PGVECTOR_HALFVEC ((Oid) 2)	/* halfvec: the same with binary16 */
#define GC_NUMERIC_ARRAY	((Oid) 3)	/* an array of any number type: smallint,
										 * integer, bigint, numeric, real or float8,
										 * read from each value's header */

typedef struct GcVectorView
{
	int			d;
	Oid			elemtype;		/* an array's element type or GC_PGVECTOR_HALFVEC */
	const bits8 *nulls;			/* NULL when the array has no NULLs */
	const char *data;			/* d elements, possibly unaligned */
	struct varlena *detoasted;	/* the copy read when toasted, else NULL */
} GcVectorView;

extern void gc_vector_view(Datum datum, Oid format, int64 rowno,
						   GcVectorView *view);
extern void gc_vector_copy(const GcVectorView *view, double *out, int64 rowno);
extern void gc_vector_copy_narrow(const GcVectorView *view, float *out, int64 rowno);
extern void gc_vector_view_release(GcVectorView *view);

/* pgvector_input.c: pgvector's vector and halfvec, read in place */
extern void gc_pgvector_view(struct varlena *packed, Oid format, int64 rowno,
							 GcVectorView *view);
extern bool gc_halfvec_copy(const char *restrict data, int d, double *restrict out);
extern bool gc_halfvec_copy_narrow(const char *restrict data, int d, float *restrict out);
extern Oid	gc_vector_format_of_type(Oid typid);
extern const char *gc_vector_format_name(Oid format);
extern Oid	gc_vector_format_by_name(const char *name, int len);

#endif							/* GC_INPUT_H */
