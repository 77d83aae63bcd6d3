/*-------------------------------------------------------------------------
 *
 * input.c
 *	  Vectors from SQL arrays (float8[], real[], and the integer and numeric
 *	  arrays of the friendly forms) and pgvector's types into the row store,
 *	  with every check a user can trip: multi-dimensional or empty arrays,
 *	  NULL elements, NaN or infinity, and dimensions that differ between
 *	  rows.
 *
 * IDENTIFICATION
 *	  src/input.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "gc_math.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

/* rows are labelled with int32 */
#define GC_MAX_ROWS ((int64) PG_INT32_MAX)

void
gc_input_init(GcInput *input)
{
	memset(input, 0, sizeof(*input));
	gc_fit_memory_begin(&input->memory);
}

/*
 * Arrays of these number types are vectors: reject any other with a hint
 * naming the cast
 */
static void
check_number_type(Oid elemtype)
{
	switch (elemtype)
	{
		case FLOAT8OID:
		case FLOAT4OID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case NUMERICOID:
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("cannot cluster vectors of type %s", format_type_be(get_array_type(elemtype))),
			 errhint("Give vectors as float8[], real[], integer[], bigint[] or numeric[] (or pgvector's vector or halfvec, with the extension gpuclust_pgvector), e.g. vec::float8[].")));
}

/*
 * The numeric at *p as a double, and *p moved to the next element as
 * array_iter_next moves (alignment counted from data, since the array may
 * be read in place with a short header, one to three bytes off).  The
 * element is copied first: in place it may be misaligned.
 */
static double
numeric_element(const char **p, const char *data)
{
	uint8		first;
	uint32		header;
	Size		len;
	struct varlena *copy;
	double		result;

	memcpy(&first, *p, 1);
	if (VARATT_IS_1B(&first))
		len = VARSIZE_1B(&first);
	else
	{
		memcpy(&header, *p, sizeof(header));
		len = VARSIZE_4B(&header);
	}
	copy = palloc(len);
	memcpy(copy, *p, len);
	result = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
												PointerGetDatum(copy)));
	pfree(copy);
	*p = data + INTALIGN((*p - data) + len);
	return result;
}

/*
 * Widen d numbers of an integer or numeric array into out; numerics, which
 * are variable-length, one after the other
 */
static void
numbers_copy(const GcVectorView *view, double *out)
{
	const char *p = view->data;

	for (int j = 0; j < view->d; j++)
	{
		switch (view->elemtype)
		{
			case INT2OID:
				{
					int16		v;

					memcpy(&v, p + sizeof(int16) * j, sizeof(v));
					out[j] = v;
					break;
				}
			case INT4OID:
				{
					int32		v;

					memcpy(&v, p + sizeof(int32) * j, sizeof(v));
					out[j] = v;
					break;
				}
			case INT8OID:
				{
					int64		v;

					memcpy(&v, p + sizeof(int64) * j, sizeof(v));
					out[j] = (double) v;
					break;
				}
			case NUMERICOID:
				out[j] = numeric_element(&p, view->data);
				break;
		}
	}
}

/*
 * Look at a vector without copying it: short-header values stored inline
 * (the common case for small vectors) are read in place, since packing
 * changes only the length word, and anything but a non-empty 1-D array is
 * rejected.  Only toasted (large or compressed) values are detoasted, into
 * view->detoasted, which gc_vector_view_release frees.  pgvector's types
 * are read by pgvector_input.c.
 */
void
gc_vector_view(Datum datum, Oid format, int64 rowno, GcVectorView *view)
{
	struct varlena *original = (struct varlena *) DatumGetPointer(datum);
	struct varlena *packed = pg_detoast_datum_packed(original);
	int			dim0 = 0;

	view->detoasted = packed != original ? packed : NULL;
	if (format == GC_PGVECTOR_VECTOR || format == GC_PGVECTOR_HALFVEC)
	{
		gc_pgvector_view(packed, format, rowno, view);
		dim0 = view->d;
	}
	else
	{
		const char *base = VARDATA_ANY(packed) - VARHDRSZ;
		ArrayType	header;

		memcpy(&header, base, sizeof(ArrayType));
		if (format == GC_NUMERIC_ARRAY)
			check_number_type(header.elemtype);
		else if (header.elemtype != format)
			elog(ERROR, "unexpected array element type %u", header.elemtype);
		if (header.ndim > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("vector in row " INT64_FORMAT " must be a one-dimensional array", rowno),
					 errdetail("It has %d dimensions.", header.ndim)));
		if (header.ndim == 1)
			memcpy(&dim0, base + sizeof(ArrayType), sizeof(int));
		view->elemtype = header.elemtype;
		view->nulls = header.dataoffset != 0 ?
			(const bits8 *) (base + sizeof(ArrayType) + 2 * sizeof(int)) : NULL;
		view->data = base + (header.dataoffset != 0 ? header.dataoffset : ARR_OVERHEAD_NONULLS(1));
	}
	if (dim0 == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector in row " INT64_FORMAT " is empty", rowno)));
	if (dim0 > GC_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("vector in row " INT64_FORMAT " has %d dimensions, more than the limit of %d",
						rowno, dim0, GC_MAX_DIM)));
	view->d = dim0;
}

/*
 * Free the detoasted copy a view may hold, so that reading many toasted
 * vectors in one memory context does not keep them all
 */
void
gc_vector_view_release(GcVectorView *view)
{
	if (view->detoasted)
		pfree(view->detoasted);
	view->detoasted = NULL;
}

static void
reject_element(int64 rowno, int j, double v)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("vector in row " INT64_FORMAT " is not finite", rowno),
			 errdetail("Element %d is %s.", j + 1,
					   isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity")),
			 errhint("Remove or replace NaN and infinite values before clustering.")));
}

/* Reject a vector's first element that is not finite or is out of range */
static void
reject_bad_values(const double *x, int d, int64 rowno)
{
	for (int j = 0; j < d; j++)
	{
		if (!isfinite(x[j]))
			reject_element(rowno, j, x[j]);
		if (fabs(x[j]) > GC_MAX_MAGNITUDE)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("vector in row " INT64_FORMAT " has a value out of range", rowno),
					 errdetail("Element %d is %g; magnitudes above %g are not supported.",
							   j + 1, x[j], GC_MAX_MAGNITUDE),
					 errhint("Rescale the vectors so that squared distances stay finite.")));
	}
}

/*
 * Copy d float4 values (possibly unaligned) into out, as doubles or as
 * floats (narrow); true when one is NaN or infinite.  The test is on the
 * bits, folded with OR so that the loop vectorises: adding one to an
 * exponent field of all ones carries into the sign bit, and into nothing
 * else.
 */
static inline __attribute__((always_inline)) bool
float4_copy_to(const char *restrict data, int d, void *restrict out, bool narrow)
{
	uint32		carry = 0;

	for (int j = 0; j < d; j++)
	{
		uint32		bits;
		float		f;

		memcpy(&bits, data + sizeof(float) * j, sizeof(bits));
		memcpy(&f, &bits, sizeof(f));
		if (narrow)
			((float *) out)[j] = f;
		else
			((double *) out)[j] = f;
		carry |= (bits & 0x7f800000) + 0x00800000;
	}
	return (carry & 0x80000000) != 0;
}

GC_SIMD_CLONES
static bool
float4_copy(const char *restrict data, int d, double *restrict out)
{
	return float4_copy_to(data, d, out, false);
}

GC_SIMD_CLONES
static bool
float4_copy_narrow(const char *restrict data, int d, float *restrict out)
{
	return float4_copy_to(data, d, out, true);
}

/* Reject a vector with a NULL element */
static void
reject_null_elements(const GcVectorView *view, int64 rowno)
{
	if (view->nulls == NULL)
		return;
	for (int j = 0; j < view->d; j++)
		if (!(view->nulls[j / 8] & (1 << (j % 8))))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("vector in row " INT64_FORMAT " has a NULL element", rowno),
					 errdetail("Element %d is NULL.", j + 1),
					 errhint("Remove or impute NULL elements before clustering.")));
}

/*
 * Copy a real[], vector or halfvec's elements as float32 into out (a
 * narrow store's row), rejecting NULL, NaN and infinite elements (float32
 * values are never out of range)
 */
void
gc_vector_copy_narrow(const GcVectorView *view, float *out, int64 rowno)
{
	reject_null_elements(view, rowno);
	if (view->elemtype != GC_PGVECTOR_HALFVEC && view->elemtype != FLOAT4OID)
		elog(ERROR, "vector element type %u is not held as float32", view->elemtype);
	if (view->elemtype == GC_PGVECTOR_HALFVEC ?
		!gc_halfvec_copy_narrow(view->data, view->d, out) :
		!float4_copy_narrow(view->data, view->d, out))
		return;
	for (int j = 0; j < view->d; j++)
		if (!isfinite(out[j]))
			reject_element(rowno, j, out[j]);
}

/*
 * Copy a vector's elements as doubles into out, rejecting NULL, NaN and
 * infinite elements, and magnitudes whose squares could overflow (only
 * float8 values can be that large: float4 and binary16 values stay below
 * 3.5e38)
 */
void
gc_vector_copy(const GcVectorView *view, double *out, int64 rowno)
{
	int			d = view->d;
	bool		bad;

	reject_null_elements(view, rowno);
	if (view->elemtype == FLOAT8OID)
	{
		memcpy(out, view->data, sizeof(double) * d);
		bad = false;
		for (int j = 0; j < d && !bad; j++)
			bad = !(fabs(out[j]) <= GC_MAX_MAGNITUDE);
	}
	else if (view->elemtype == GC_PGVECTOR_HALFVEC)
		bad = gc_halfvec_copy(view->data, d, out);
	else if (view->elemtype == FLOAT4OID)
		bad = float4_copy(view->data, d, out);
	else
	{
		numbers_copy(view, out);
		bad = false;
		for (int j = 0; j < d && !bad; j++)
			bad = !(fabs(out[j]) <= GC_MAX_MAGNITUDE);
	}
	if (bad)
		reject_bad_values(out, d, rowno);
}

/* The device in the progress view: undecided while auto waits */
static void
report_device(GcInput *input)
{
	GcProgressDevice device = input->device.deferred ? GC_PROGRESS_DEVICE_UNDECIDED :
		input->device.kind == GC_KIND_GPU ? GC_PROGRESS_DEVICE_GPU : GC_PROGRESS_DEVICE_CPU;

	gc_progress_device(input->progress, device, input->device.gpu_id);
}

/*
 * Append one non-NULL vector; the first one fixes the dimension and
 * chooses the device (auto decides once the work is known to be large, or
 * at the fit), whose allocator then holds the rows
 */
void
gc_input_add(GcInput *input, Datum vector, Oid format)
{
	int64		rowno = ++input->seen_rows;
	GcVectorView view;
	GcError		err = {0};
	int			d;

	gc_vector_view(vector, format, rowno, &view);
	d = view.d;
	if (!input->started)
	{
		if (!input->device_fixed)
			gc_choose_service_device(&input->device);
		if (gc_rows_init(&input->rows, d, input->device.alloc,
						 input->device.free, &err) != GC_OK)
			gc_raise(&err);
		input->rows.max_bytes = gc_fit_memory_left(&input->memory);
		input->rows.placement = input->placement;
		input->started = true;
		input->first_rowno = rowno;
		input->format = format == GC_NUMERIC_ARRAY ? view.elemtype : format;
		if (input->fit == GC_FIT_KMEANS && !input->unit &&
			(format == FLOAT4OID || format == GC_PGVECTOR_VECTOR || format == GC_PGVECTOR_HALFVEC))
			gc_rows_set_narrow(&input->rows);
		if (input->hashes_at_fit)
			gc_rows_defer_hashes(&input->rows);
		input->progress = gc_progress_begin(input->fit);
		report_device(input);
	}
	else if (d != input->rows.d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector in row " INT64_FORMAT " has %d dimensions, but the vector in row " INT64_FORMAT " has %d",
						rowno, d, input->first_rowno, input->rows.d),
				 errhint("All vectors clustered together must have the same dimension.")));
	if (input->rows.n >= GC_MAX_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot cluster more than " INT64_FORMAT " rows", GC_MAX_ROWS)));

	if (input->rows.narrow)
	{
		float	   *narrow_slot = gc_rows_reserve_narrow(&input->rows, &err);

		if (narrow_slot == NULL)
			gc_raise(&err);
		gc_vector_copy_narrow(&view, narrow_slot, rowno);
	}
	else
	{
		double	   *slot = gc_rows_reserve(&input->rows, &err);

		if (slot == NULL)
			gc_raise(&err);
		gc_vector_copy(&view, slot, rowno);
		if (input->unit)
			gc_input_normalize(slot, d, rowno);
	}
	gc_rows_commit(&input->rows);
	gc_vector_view_release(&view);
	if ((input->rows.n & 1023) == 0)
		gc_progress_rows(input->progress, input->rows.n);
	/* auto: decide once the rows so far make the work large */
	if (input->device.deferred && input->work_per_row > 0)
	{
		if (input->settle_rows == 0)
			input->settle_rows = (int64) Min(ceil(gc_auto_gpu_min_work(&input->device) /
												  (input->work_per_row * d)),
											 (double) GC_MAX_ROWS);
		if (input->rows.n >= input->settle_rows)
			gc_input_settle_device(input, (double) input->rows.n * input->work_per_row * d);
	}
}

/*
 * Decide a deferred (auto) device for work (see gc_settle_device); once on
 * the GPU, the rows still to come go to page-locked memory
 */
void
gc_input_settle_device(GcInput *input, double work)
{
	if (!input->device.deferred)
		return;
	gc_settle_device(&input->device, work);
	gc_rows_set_allocator(&input->rows, input->device.alloc, input->device.free);
	report_device(input);
}

/*
 * Finish what collection left to the end: the rows' hashes, deferred
 * (hashes_at_fit) so that one pass on every core computes them instead of
 * the collecting one.  Returns the milliseconds it took, which count as
 * collection's.
 */
double
gc_input_finish_rows(GcInput *input)
{
	double		started = gc_now_ms();
	GcError		err = {0};

	if (input->started && gc_rows_finish_hashes(&input->rows, gc_interrupted, &err) != GC_OK)
		gc_raise(&err);
	return gc_now_ms() - started;
}

/*
 * The cosine metric's unit row (in place); a zero vector has no direction.
 * rowno numbers the row in messages; 0 for a single vector argument.
 */
void
gc_input_normalize(double *x, int d, int64 rowno)
{
	if (!gc_unit_normalize(x, d))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 rowno > 0 ?
				 errmsg("vector in row " INT64_FORMAT " is a zero vector, which has no cosine distance",
						rowno) :
				 errmsg("the vector is a zero vector, which has no cosine distance"),
				 errhint("Leave zero vectors out of the query, or use the euclidean metric.")));
}

/*
 * Count a NULL row, which is skipped
 */
void
gc_input_add_null(GcInput *input)
{
	input->seen_rows++;
	input->null_rows++;
}

void
gc_input_release(GcInput *input)
{
	if (input->started)
		gc_rows_release(&input->rows);
	input->started = false;
	gc_progress_end(input->progress);
	input->progress = 0;
}

/*
 * The host memory the rows hold (0 before the first row)
 */
double
gc_input_bytes(const GcInput *input)
{
	const GcRows *rows = &input->rows;

	if (!input->started)
		return 0;
	return (double) rows->n * (sizeof(double) * (rows->d + (rows->weighted ? 1 : 0)) +
							   sizeof(uint64));
}

static void
release_callback(void *arg)
{
	gc_input_release((GcInput *) arg);
}

/*
 * Release the rows (pinned memory included) when context is reset or
 * deleted, which also happens when the query fails or is cancelled
 */
void
gc_input_release_at_reset(GcInput *input, MemoryContext context)
{
	MemoryContextCallback *cb = MemoryContextAlloc(context, sizeof(*cb));

	cb->func = release_callback;
	cb->arg = input;
	MemoryContextRegisterResetCallback(context, cb);
}

/*
 * Count the rows in the fit's account, once (a parallel plan's leader
 * holds the workers' rows too; a serial store stayed within what was left)
 */
void
gc_input_count_rows(GcInput *input)
{
	if (input->rows_counted || !input->started)
		return;
	gc_fit_memory_count(&input->memory, gc_rows_held_bytes(&input->rows), "The rows");
	input->rows_counted = true;
}
