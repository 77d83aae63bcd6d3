/*-------------------------------------------------------------------------
 *
 * kmeans_window.c
 *	  The window function kmeans_gpu_cluster(vec, k [, options]) OVER (...):
 *	  on the first row of a partition it reads the whole partition, fits
 *	  k-means (on the GPU when one is used) with labels, and keeps them in
 *	  partition-local memory; every row then returns its label.  Rows with a
 *	  NULL vector get a NULL cluster.
 *
 * The shape follows PostGIS's ST_ClusterKMeans window function.
 *
 * IDENTIFICATION
 *	  src/kmeans_window.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "catalog/pg_type.h"
#include "utils/memutils.h"
#include "windowapi.h"

PG_FUNCTION_INFO_V1(gpuclust_kmeans_window);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_window_real);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_window_numeric);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_window_vector);
PG_FUNCTION_INFO_V1(gpuclust_kmeans_window_halfvec);

/*
 * In the partition's local memory; the labels beside it, in the same
 * memory context (so freed with the partition), allocated huge: a
 * partition of more than 268 million rows needs more than 1 GB of them
 */
typedef struct PartitionLabels
{
	bool		computed;
	int32	   *labels;			/* -1 for NULL rows */
} PartitionLabels;

/*
 * Read the partition's vectors, fit, and store every row's label
 */
static void
label_partition(WindowObject winobj, FunctionCallInfo fcinfo, Oid format,
				PartitionLabels *part, int64 nrows)
{
	GcKmeansOptions opts;
	GcInput		input;
	Jsonb	   *options = NULL;
	bool		isnull;
	Datum		k = WinGetFuncArgCurrent(winobj, 1, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be NULL")));
	if (PG_NARGS() > 2)
	{
		Datum		o = WinGetFuncArgCurrent(winobj, 2, &isnull);

		if (!isnull)
			options = DatumGetJsonbP(o);
	}
	gc_parse_kmeans_options(options, gc_k_value(k, get_fn_expr_argtype(fcinfo->flinfo, 1)),
							&opts);

	gc_input_init(&input);
	input.unit = opts.params.metric == GC_METRIC_COSINE;
	input.work_per_row = (double) opts.params.k * opts.params.n_init;
	input.hashes_at_fit = true;
	gc_fit_memory_count(&input.memory, sizeof(int32) * Max(nrows, 1), "The partition's labels");
	PG_TRY();
	{
		double		started = gc_now_ms();
		int32	   *labels = palloc_extended(sizeof(int32) * Max(nrows, 1),
											 MCXT_ALLOC_HUGE);
		int64		r = 0;

		for (int64 i = 0; i < nrows; i++)
		{
			bool		isout;
			Datum		v = WinGetFuncArgInPartition(winobj, 0, (int) i,
													 WINDOW_SEEK_HEAD, false,
													 &isnull, &isout);

			part->labels[i] = isnull ? -1 : 0;
			if (isnull)
				gc_input_add_null(&input);
			else
				gc_input_add(&input, v, format);
		}
		/* without a model (fewer rows than k, small_groups "null") no row has a cluster */
		if (input.started &&
			gc_run_kmeans(&input, &opts, gc_now_ms() - started, labels, NULL) == NULL)
			memset(labels, 0xff, sizeof(int32) * nrows);

		/* spread the labels of the non-NULL rows over the partition */
		for (int64 i = 0; i < nrows; i++)
			if (part->labels[i] >= 0)
				part->labels[i] = labels[r++];
	}
	PG_FINALLY();
	{
		gc_input_release(&input);
	}
	PG_END_TRY();
	part->computed = true;
}

static Datum
kmeans_window(FunctionCallInfo fcinfo, Oid format)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	int64		nrows = WinGetPartitionRowCount(winobj);
	PartitionLabels *part;
	int64		pos;

	part = WinGetPartitionLocalMemory(winobj, sizeof(PartitionLabels));
	if (!part->computed)
	{
		/* rows are read by an int position, and labelled with int32 */
		if (nrows > PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("kmeans_gpu_cluster cannot cluster a window partition of more than %d rows",
							PG_INT32_MAX),
					 errdetail("The partition holds " INT64_FORMAT " rows.", nrows),
					 errhint("Split the rows with PARTITION BY, or fit a model with kmeans_gpu and label the rows with kmeans_predict.")));
		part->labels = MemoryContextAllocHuge(GetMemoryChunkContext(part),
											  sizeof(int32) * Max(nrows, 1));
		label_partition(winobj, fcinfo, format, part, nrows);
	}
	pos = WinGetCurrentPosition(winobj);
	if (part->labels[pos] < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(part->labels[pos]);
}

Datum
gpuclust_kmeans_window(PG_FUNCTION_ARGS)
{
	return kmeans_window(fcinfo, FLOAT8OID);
}

Datum
gpuclust_kmeans_window_real(PG_FUNCTION_ARGS)
{
	return kmeans_window(fcinfo, FLOAT4OID);
}

/* vectors of any number type, with a bigint k */
Datum
gpuclust_kmeans_window_numeric(PG_FUNCTION_ARGS)
{
	return kmeans_window(fcinfo, GC_NUMERIC_ARRAY);
}

/* pgvector's types, declared by the gpuclust_pgvector extension */
Datum
gpuclust_kmeans_window_vector(PG_FUNCTION_ARGS)
{
	return kmeans_window(fcinfo, GC_PGVECTOR_VECTOR);
}

Datum
gpuclust_kmeans_window_halfvec(PG_FUNCTION_ARGS)
{
	return kmeans_window(fcinfo, GC_PGVECTOR_HALFVEC);
}
