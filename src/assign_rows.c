/*-------------------------------------------------------------------------
 *
 * assign_rows.c
 *	  The ids and NULL rows kmeans_gpu_assign keeps beside its row store
 *	  (assign_rows.h): filled row by row, handed between processes as
 *	  extra bytes, appended share after share, and returned as the
 *	  function's relation in the order the rows came.
 *
 * IDENTIFICATION
 *	  src/assign_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "assign_rows.h"
#include "array_growth.h"

#include "miscadmin.h"
#include "utils/memutils.h"

GcAssignSink *gc_assign_sink = NULL;

/* The two counts that start the extra bytes */
typedef struct ExtraCounts
{
	int64		null_vectors;
	int64		null_ids;
} ExtraCounts;

GcAssignRows *
gc_assign_rows_create(MemoryContext context)
{
	GcAssignRows *rows = MemoryContextAllocZero(context, sizeof(GcAssignRows));

	rows->context = context;
	return rows;
}

void
gc_assign_rows_add(GcAssignRows *rows, bool id_is_null, int64 id, bool vector_is_null)
{
	if (vector_is_null)
	{
		GcNullVectorRow *row;

		rows->null_vectors = gc_reserve(rows->context, rows->null_vectors,
									    &rows->null_vectors_capacity,
									    rows->nnull_vectors + 1, sizeof(GcNullVectorRow));
		row = &rows->null_vectors[rows->nnull_vectors];
		row->place = rows->nids + rows->nnull_vectors++;
		row->id = id_is_null ? 0 : id;
		row->id_is_null = id_is_null;
		return;
	}
	if (id_is_null)
	{
		rows->null_ids = gc_reserve(rows->context, rows->null_ids, &rows->null_ids_capacity,
								    rows->nnull_ids + 1, sizeof(int64));
		rows->null_ids[rows->nnull_ids++] = rows->nids;
	}
	rows->ids = gc_reserve(rows->context, rows->ids, &rows->ids_capacity, rows->nids + 1,
						   sizeof(int64));
	rows->ids[rows->nids++] = id_is_null ? 0 : id;
}

/*
 * The NULL rows and NULL ids as extra bytes (palloc'd; NULL and 0 bytes
 * when there are none)
 */
char *
gc_assign_rows_extra(const GcAssignRows *rows, int32 *bytes)
{
	ExtraCounts counts = {rows->nnull_vectors, rows->nnull_ids};
	Size		size;
	char	   *extra;

	*bytes = 0;
	if (counts.null_vectors == 0 && counts.null_ids == 0)
		return NULL;
	if (counts.null_vectors > (int64) (MaxAllocSize / 2 / sizeof(GcNullVectorRow)) ||
		counts.null_ids > (int64) (MaxAllocSize / 4 / sizeof(int64)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a parallel worker's share holds too many NULL vectors or ids to pass to the leader"),
				 errdetail("It holds " INT64_FORMAT " rows with a NULL vector and " INT64_FORMAT " with a NULL id.",
						   counts.null_vectors, counts.null_ids),
				 errhint("Leave rows with NULL vectors out of the query, or SET max_parallel_workers_per_gather = 0.")));
	size = sizeof(counts) + sizeof(GcNullVectorRow) * counts.null_vectors +
		sizeof(int64) * counts.null_ids;
	extra = palloc(size);
	memcpy(extra, &counts, sizeof(counts));
	if (counts.null_vectors > 0)
		memcpy(extra + sizeof(counts), rows->null_vectors,
			   sizeof(GcNullVectorRow) * counts.null_vectors);
	if (counts.null_ids > 0)
		memcpy(extra + sizeof(counts) + sizeof(GcNullVectorRow) * counts.null_vectors,
			   rows->null_ids, sizeof(int64) * counts.null_ids);
	*bytes = (int32) size;
	return extra;
}

static void
corrupt_extra(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid kmeans_gpu_assign partial aggregate state"),
			 errdetail("%s", detail)));
}

/*
 * Append a share: nids ids (unaligned) and its extra bytes, its places and
 * indexes moved past the rows already held
 */
void
gc_assign_rows_append(GcAssignRows *rows, const char *ids, int64 nids,
					  const char *extra, int32 extra_bytes)
{
	ExtraCounts counts = {0, 0};
	int64		first_place = rows->nids + rows->nnull_vectors,
				first_id = rows->nids,
				previous = -1;
	const char *p;

	if (extra_bytes > 0)
	{
		if ((Size) extra_bytes < sizeof(counts))
			corrupt_extra("Its NULL rows are cut short.");
		memcpy(&counts, extra, sizeof(counts));
		if (counts.null_vectors < 0 || counts.null_ids < 0 || counts.null_ids > nids ||
			counts.null_vectors > (int64) (MaxAllocSize / sizeof(GcNullVectorRow)) ||
			(Size) extra_bytes != sizeof(counts) + sizeof(GcNullVectorRow) * counts.null_vectors +
			sizeof(int64) * counts.null_ids)
			corrupt_extra("Its NULL rows' sizes do not agree.");
	}
	rows->ids = gc_reserve(rows->context, rows->ids, &rows->ids_capacity, rows->nids + nids,
						   sizeof(int64));
	if (nids > 0)
		memcpy(rows->ids + rows->nids, ids, sizeof(int64) * nids);
	rows->null_vectors = gc_reserve(rows->context, rows->null_vectors,
								    &rows->null_vectors_capacity,
								    rows->nnull_vectors + counts.null_vectors,
								    sizeof(GcNullVectorRow));
	p = extra + sizeof(counts);
	for (int64 i = 0; i < counts.null_vectors; i++, p += sizeof(GcNullVectorRow))
	{
		GcNullVectorRow row;

		memcpy(&row, p, sizeof(row));
		if (row.place <= previous || row.place >= nids + counts.null_vectors)
			corrupt_extra("Its NULL rows are out of place.");
		previous = row.place;
		row.place += first_place;
		rows->null_vectors[rows->nnull_vectors++] = row;
	}
	rows->null_ids = gc_reserve(rows->context, rows->null_ids, &rows->null_ids_capacity,
							    rows->nnull_ids + counts.null_ids, sizeof(int64));
	previous = -1;
	for (int64 i = 0; i < counts.null_ids; i++, p += sizeof(int64))
	{
		int64		at;

		memcpy(&at, p, sizeof(at));
		if (at <= previous || at >= nids)
			corrupt_extra("Its NULL ids are out of place.");
		previous = at;
		rows->null_ids[rows->nnull_ids++] = at + first_id;
	}
	rows->nids += nids;
}

/*
 * Every row, in the order the rows came: (id, cluster, distance), the
 * cluster and distance NULL where the vector was or no model was fitted
 * (label -1)
 */
void
gc_assign_rows_emit(const GcAssignRows *rows, const int32 *labels, const double *distances,
					Tuplestorestate *store, TupleDesc tupdesc)
{
	int64		total = rows->nids + rows->nnull_vectors,
				labelled = 0,
				next_null_vector = 0,
				next_null_id = 0;

	for (int64 place = 0; place < total; place++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		if (next_null_vector < rows->nnull_vectors &&
			rows->null_vectors[next_null_vector].place == place)
		{
			const GcNullVectorRow *row = &rows->null_vectors[next_null_vector++];

			values[0] = Int64GetDatum(row->id);
			nulls[0] = row->id_is_null != 0;
			nulls[1] = nulls[2] = true;
		}
		else
		{
			values[0] = Int64GetDatum(rows->ids[labelled]);
			if (next_null_id < rows->nnull_ids && rows->null_ids[next_null_id] == labelled)
			{
				nulls[0] = true;
				next_null_id++;
			}
			values[1] = Int32GetDatum(labels[labelled]);
			values[2] = Float8GetDatum(distances[labelled]);
			nulls[1] = nulls[2] = labels[labelled] < 0;
			labelled++;
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
		if ((place & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}
