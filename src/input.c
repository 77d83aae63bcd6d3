/*-------------------------------------------------------------------------
 *
 * input.c
 *	  Vectors from SQL arrays (float8[] or real[]) into the row store, with
 *	  every check a user can trip: multi-dimensional or empty arrays, NULL
 *	  elements, NaN or infinity, and dimensions that differ between rows.
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
#include "utils/memutils.h"

/* rows are labelled with int32 */
#define GC_MAX_ROWS ((int64) PG_INT32_MAX)

void
gc_input_init(GcInput *input)
{
	memset(input, 0, sizeof(*input));
}

/*
 * Look at a vector without copying it: short-header arrays stored inline
 * (the common case for small vectors) are read in place, since packing
 * changes only the length word, and anything but a non-empty 1-D array is
 * rejected.  Only toasted (large or compressed) arrays are detoasted.
 */
void
gc_vector_view(Datum datum, Oid elemtype, int64 rowno, GcVectorView *view)
{
	struct varlena *packed = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(datum));
	const char *base = VARDATA_ANY(packed) - VARHDRSZ;
	ArrayType	header;
	int			dim0 = 0;

	memcpy(&header, base, sizeof(ArrayType));
	if (header.elemtype != elemtype)
		elog(ERROR, "unexpected array element type %u", header.elemtype);
	if (header.ndim > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("vector in row " INT64_FORMAT " must be a one-dimensional array", rowno),
				 errdetail("It has %d dimensions.", header.ndim)));
	if (header.ndim == 1)
		memcpy(&dim0, base + sizeof(ArrayType), sizeof(int));
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
	view->elemtype = elemtype;
	view->nulls = header.dataoffset != 0 ?
		(const bits8 *) (base + sizeof(ArrayType) + 2 * sizeof(int)) : NULL;
	view->data = base + (header.dataoffset != 0 ? header.dataoffset : ARR_OVERHEAD_NONULLS(1));
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

/*
 * Copy a vector's elements as doubles into out, rejecting NULL, NaN and
 * infinite elements
 */
void
gc_vector_copy(const GcVectorView *view, double *out, int64 rowno)
{
	int			d = view->d;

	if (view->nulls)
	{
		for (int j = 0; j < d; j++)
			if (!(view->nulls[j / 8] & (1 << (j % 8))))
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("vector in row " INT64_FORMAT " has a NULL element", rowno),
						 errdetail("Element %d is NULL.", j + 1),
						 errhint("Remove or impute NULL elements before clustering.")));
	}
	if (view->elemtype == FLOAT8OID)
		memcpy(out, view->data, sizeof(double) * d);
	else
	{
		for (int j = 0; j < d; j++)
		{
			float		f;

			memcpy(&f, view->data + sizeof(float) * j, sizeof(float));
			out[j] = f;
		}
	}
	for (int j = 0; j < d; j++)
	{
		if (!isfinite(out[j]))
			reject_element(rowno, j, out[j]);
		if (fabs(out[j]) > GC_MAX_MAGNITUDE)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("vector in row " INT64_FORMAT " has a value out of range", rowno),
					 errdetail("Element %d is %g; magnitudes above %g are not supported.",
							   j + 1, out[j], GC_MAX_MAGNITUDE),
					 errhint("Rescale the vectors so that squared distances stay finite.")));
	}
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
gc_input_add(GcInput *input, Datum vector, Oid elemtype)
{
	int64		rowno = ++input->seen_rows;
	GcVectorView view;
	GcError		err = {0};
	double	   *slot;
	int			d;

	gc_vector_view(vector, elemtype, rowno, &view);
	d = view.d;
	if (!input->started)
	{
		gc_choose_device(&input->device);
		if (gc_rows_init(&input->rows, d, input->device.alloc,
						 input->device.free, &err) != GC_OK)
			gc_raise(&err);
		input->rows.max_bytes = gc_fit_memory_limit();
		input->started = true;
		input->first_rowno = rowno;
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

	slot = gc_rows_reserve(&input->rows, &err);
	if (slot == NULL)
		gc_raise(&err);
	gc_vector_copy(&view, slot, rowno);
	if (input->unit)
		gc_input_normalize(slot, d, rowno);
	gc_rows_commit(&input->rows);
	if ((input->rows.n & 1023) == 0)
		gc_progress_rows(input->progress, input->rows.n);
	/* auto: decide once the rows so far make the work large */
	if (input->device.deferred && input->work_per_row > 0)
	{
		if (input->settle_rows == 0)
			input->settle_rows = (int64) Min(ceil(gc_auto_gpu_min_work() /
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
