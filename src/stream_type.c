/*-------------------------------------------------------------------------
 *
 * stream_type.c
 *	  The kmeans_stream type: a streaming k-means summary.  Flat, it is a
 *	  varlena holding the bytes of stream_format.h (text form: base64;
 *	  binary form: the bytes themselves), validated whenever it enters the
 *	  server.  Expanded, it is a read-write object holding the engine's
 *	  GcStream, which the aggregates update in place row after row, as
 *	  nodeAgg keeps read-write expanded transition values without copying
 *	  them (see utils/expandeddatum.h and utils/adt/array_expanded.c).
 *	  A state leaving its aggregate (flattened, or written by the output or
 *	  send function) has its raw rows clustered into weighted centres, so
 *	  partial states shipped to a leader or a coordinator stay small.
 *	  Also kmeans_stream_info.
 *
 * IDENTIFICATION
 *	  src/stream_type.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "common/base64.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(gpuclust_stream_in);
PG_FUNCTION_INFO_V1(gpuclust_stream_out);
PG_FUNCTION_INFO_V1(gpuclust_stream_recv);
PG_FUNCTION_INFO_V1(gpuclust_stream_send);
PG_FUNCTION_INFO_V1(gpuclust_stream_info);

/* ---------------------------------------------------------------------
 * The expanded form
 * ---------------------------------------------------------------------
 */
/*
 * The flat size of a state, after clustering its raw rows into centres
 * when they outnumber the centres a reduction keeps.  The aggregates update
 * a state in place and flatten it only when it leaves them (a partial
 * aggregate's result crossing from a parallel worker or copied for its
 * combine step, or read by a coordinator through the output or send
 * function), so its pending block travels as O(centres) weighted
 * points, not as its rows; the reduction is the one a full block gets, on
 * the device the state was built with.
 */
static Size
stream_get_flat_size(ExpandedObjectHeader *eohptr)
{
	GcStreamState *state = (GcStreamState *) eohptr;
	GcError		err = {0};
	size_t		bytes;

	if (gc_stream_compact(&state->stream, &err) != GC_OK)
		gc_stream_raise(&err);
	bytes = gc_stream_encoded_bytes(&state->stream);
	if (bytes == 0 || bytes > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("kmeans_stream summary exceeds 1 GB"),
				 errhint("Use fewer centres or a smaller block_rows.")));
	return VARHDRSZ + bytes;
}

static void
stream_flatten_into(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	GcStreamState *state = (GcStreamState *) eohptr;

	SET_VARSIZE(result, allocated_size);
	gc_stream_encode(&state->stream, (uint8 *) VARDATA(result), allocated_size - VARHDRSZ);
}

static const ExpandedObjectMethods stream_methods = {
	stream_get_flat_size,
	stream_flatten_into
};

static void
release_stream(void *arg)
{
	gc_stream_release(&((GcStreamState *) arg)->stream);
}

/*
 * A new empty state in its own context under parent; its engine memory
 * (pinned when the GPU will cluster its blocks) is released when that
 * context goes, on error too
 */
GcStreamState *
gc_stream_state_new(MemoryContext parent, const GcStreamHeader *shape, bool use_gpu)
{
	MemoryContext objcxt = AllocSetContextCreate(parent, "kmeans_stream",
												 ALLOCSET_SMALL_SIZES);
	GcStreamState *state = MemoryContextAllocZero(objcxt, sizeof(GcStreamState));
	MemoryContextCallback *cb = MemoryContextAlloc(objcxt, sizeof(*cb));
	GcError		err = {0};

	EOH_init_header(&state->hdr, &stream_methods, objcxt);
	if (use_gpu)
	{
		/* each block of block_rows rows is reduced to m centres */
		gc_choose_service_device(&state->device);
		gc_settle_device(&state->device, (double) shape->block_rows * shape->m * shape->d);
	}
	else
		gc_use_cpu_device(&state->device);
	cb->func = release_stream;
	cb->arg = state;
	if (gc_stream_init(&state->stream, shape, state->device.kmeans,
					   state->device.alloc, state->device.free, gc_interrupted,
					   &err) != GC_OK)
	{
		gc_stream_release(&state->stream);
		gc_stream_raise(&err);
	}
	(void) gc_stream_use_service(&state->stream, &state->device, 0, objcxt);
	MemoryContextRegisterResetCallback(objcxt, cb);
	return state;
}

void
gc_stream_state_free(GcStreamState *state)
{
	MemoryContextDelete(state->hdr.eoh_context);
}

/*
 * The state behind value when it is a read-write expanded kmeans_stream,
 * else NULL
 */
GcStreamState *
gc_stream_state_rw(Datum value)
{
	ExpandedObjectHeader *eoh;

	if (!VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(value)))
		return NULL;
	eoh = DatumGetEOHP(value);
	return eoh->eoh_methods == &stream_methods ? (GcStreamState *) eoh : NULL;
}

/*
 * The bytes of a flat kmeans_stream, checked; an expanded one is
 * flattened first (it was valid when built)
 */
static const uint8 *
stream_bytes(Datum value, GcStreamHeader *h, size_t *len)
{
	struct varlena *flat = PG_DETOAST_DATUM(value);
	const char *why;

	*len = VARSIZE(flat) - VARHDRSZ;
	why = gc_stream_decode((const uint8 *) VARDATA(flat), *len, h);
	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupt kmeans_stream value"),
				 errdetail("The summary is invalid: %s.", why)));
	return (const uint8 *) VARDATA(flat);
}

/*
 * A summary stands for at most 2^53 rows, the count its weights keep
 * exactly (and the most its decoder reads back): merging past it is an
 * error here, not a value that later reads as corrupt
 */
static void
check_merged_rows(int64 a, int64 b)
{
	if (b > (int64) GC_MAX_WEIGHT - a)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("merged kmeans_stream summary would stand for more than 2^53 rows"),
				 errdetail("The summaries stand for " INT64_FORMAT " and " INT64_FORMAT " rows.", a, b),
				 errhint("Build models from disjoint parts of the data, each under 2^53 rows.")));
}

/*
 * Add the summary in value to state; both must summarise the same k and
 * dimension, and together at most 2^53 rows.  compact (state empty): its
 * raw rows clustered into centres when they outnumber m, an expanded
 * value's without copying them (gc_stream_merge_compacted)
 */
static void
merge_state(GcStreamState *state, Datum value, bool compact)
{
	GcStreamState *other = NULL;
	GcStreamHeader h;
	const uint8 *bytes = NULL;
	size_t		len;
	GcError		err = {0};

	if (VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)) &&
		DatumGetEOHP(value)->eoh_methods == &stream_methods)
	{
		other = (GcStreamState *) DatumGetEOHP(value);
		h.d = other->stream.d;
		h.k = other->stream.k;
		h.cosine = other->stream.cosine;
	}
	else
		bytes = stream_bytes(value, &h, &len);
	if (h.d != state->stream.d || h.k != state->stream.k)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot merge kmeans_stream summaries of different shapes"),
				 errdetail("One has k = %d in %d dimensions, the other k = %d in %d dimensions.",
						   state->stream.k, state->stream.d, h.k, h.d)));
	if (h.cosine != state->stream.cosine)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot merge kmeans_stream summaries of different metrics"),
				 errdetail("One summarises unit rows for the cosine metric, the other rows as they are.")));
	check_merged_rows(state->stream.rows, other ? other->stream.rows : h.rows);
	if (other && compact)
	{
		if (gc_stream_merge_compacted(&state->stream, &other->stream, &err) != GC_OK)
			gc_stream_raise(&err);
		return;
	}
	if ((other ? gc_stream_merge(&state->stream, &other->stream, &err)
		 : gc_stream_merge_encoded(&state->stream, bytes, &h, &err)) != GC_OK)
		gc_stream_raise(&err);
	if (compact && gc_stream_compact(&state->stream, &err) != GC_OK)
		gc_stream_raise(&err);
}

void
gc_stream_state_merge(GcStreamState *state, Datum value)
{
	merge_state(state, value, false);
}

/*
 * A new state in parent holding a copy of the summary in value, compacted
 * (gc_stream_compact) when compact says so
 */
static GcStreamState *
copy_state(Datum value, MemoryContext parent, bool use_gpu, bool compact)
{
	GcStreamHeader shape;
	GcStreamState *state;
	size_t		max_block_bytes,
				max_level_bytes;

	if (VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)) &&
		DatumGetEOHP(value)->eoh_methods == &stream_methods)
	{
		const GcStream *s = &((GcStreamState *) DatumGetEOHP(value))->stream;

		memset(&shape, 0, sizeof(shape));
		shape.d = s->d;
		shape.k = s->k;
		shape.m = s->m;
		shape.block_rows = s->block_rows;
		shape.seed = s->seed;
		shape.cosine = s->cosine;
	}
	else
	{
		size_t		len;

		stream_bytes(value, &shape, &len);
	}
	gc_stream_plan_memory(&shape, GC_STREAM_BLOCK_STORED, &max_block_bytes, &max_level_bytes);
	state = gc_stream_state_new(parent, &shape, use_gpu);
	gc_stream_limit_memory(&state->stream, max_block_bytes, max_level_bytes);
	merge_state(state, value, compact);
	return state;
}

GcStreamState *
gc_stream_state_copy(Datum value, MemoryContext parent, bool use_gpu)
{
	return copy_state(value, parent, use_gpu, false);
}

/* The same, compacted: an expanded value's raw rows are never copied */
GcStreamState *
gc_stream_state_compacted_copy(Datum value, MemoryContext parent, bool use_gpu)
{
	return copy_state(value, parent, use_gpu, true);
}

/*
 * The flat form of state, in the current memory context (its raw rows
 * clustered first, as stream_get_flat_size does)
 */
Datum
gc_stream_state_flatten(GcStreamState *state)
{
	Size		bytes = stream_get_flat_size(&state->hdr);
	void	   *flat = palloc(bytes);

	stream_flatten_into(&state->hdr, flat, bytes);
	return PointerGetDatum(flat);
}

/* ---------------------------------------------------------------------
 * Input and output
 * ---------------------------------------------------------------------
 */

/*
 * A varlena holding len bytes, rejected with errcode unless they are a
 * valid summary
 */
static Datum
checked_value(const char *bytes, size_t len, int errcode_value)
{
	struct varlena *result;
	GcStreamHeader h;
	const char *why;

	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(errcode_value),
				 errmsg("kmeans_stream value is too large")));
	why = gc_stream_decode((const uint8 *) bytes, len, &h);
	if (why != NULL)
		ereport(ERROR,
				(errcode(errcode_value),
				 errmsg("invalid kmeans_stream value"),
				 errdetail("The summary is invalid: %s.", why)));
	result = palloc(VARHDRSZ + len);
	SET_VARSIZE(result, VARHDRSZ + len);
	memcpy(VARDATA(result), bytes, len);
	return PointerGetDatum(result);
}

/*
 * Base64 text (line breaks and spaces allowed, as encode(..., 'base64')
 * writes them) to a checked summary
 */
Datum
gpuclust_stream_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	char	   *text = palloc(strlen(str) + 1);
	int			len = 0;
	char	   *bytes;
	int			n;

	for (const char *p = str; *p; p++)
		if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
			text[len++] = *p;
	bytes = palloc(pg_b64_dec_len(len) + 1);
	n = gc_b64_decode(text, len, bytes, pg_b64_dec_len(len) + 1);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type kmeans_stream"),
				 errdetail("The text form of a kmeans_stream is base64.")));
	PG_RETURN_DATUM(checked_value(bytes, n, ERRCODE_INVALID_TEXT_REPRESENTATION));
}

/*
 * The value as it leaves the server: flat, with its raw rows clustered
 * into centres when they outnumber the centres a reduction keeps (an
 * expanded state is so when flattened; a flat one, such as a partial state
 * stored before, is compacted here).  Every value the aggregates return is
 * already compact and goes out unchanged; one that fails validation goes
 * out as it is.
 */
static struct varlena *
outgoing_value(Datum value)
{
	struct varlena *flat = PG_DETOAST_DATUM(value);
	GcStreamHeader h;
	GcStreamState *copy;
	Datum		compacted;

	if (gc_stream_decode((const uint8 *) VARDATA(flat), VARSIZE(flat) - VARHDRSZ, &h) != NULL ||
		h.counts[0] <= h.m)
		return flat;
	copy = gc_stream_state_copy(PointerGetDatum(flat), CurrentMemoryContext, true);
	compacted = gc_stream_state_flatten(copy);
	gc_stream_state_free(copy);
	return (struct varlena *) DatumGetPointer(compacted);
}

Datum
gpuclust_stream_out(PG_FUNCTION_ARGS)
{
	struct varlena *flat = outgoing_value(PG_GETARG_DATUM(0));
	int			len = VARSIZE(flat) - VARHDRSZ;
	int			cap = pg_b64_enc_len(len) + 1;
	char	   *out = palloc(cap);
	int			n = gc_b64_encode(VARDATA(flat), len, out, cap);

	if (n < 0)
		elog(ERROR, "could not encode a kmeans_stream value in base64");
	out[n] = '\0';
	PG_RETURN_CSTRING(out);
}

Datum
gpuclust_stream_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			len = buf->len - buf->cursor;
	const char *bytes = pq_getmsgbytes(buf, len);

	PG_RETURN_DATUM(checked_value(bytes, len, ERRCODE_INVALID_BINARY_REPRESENTATION));
}

Datum
gpuclust_stream_send(PG_FUNCTION_ARGS)
{
	struct varlena *flat = outgoing_value(PG_GETARG_DATUM(0));
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbytes(&buf, VARDATA(flat), VARSIZE(flat) - VARHDRSZ);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * kmeans_stream_info(kmeans_stream) -> jsonb: shape, rows summarised,
 * points held per level, and bytes
 */
Datum
gpuclust_stream_info(PG_FUNCTION_ARGS)
{
	GcStreamHeader h;
	size_t		len;
	StringInfoData buf;

	stream_bytes(PG_GETARG_DATUM(0), &h, &len);
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"version\": %d, \"d\": %d, \"k\": %d, \"metric\": \"%s\", "
					 "\"centres_per_block\": %d, \"block_rows\": %d, \"rows\": " INT64_FORMAT
					 ", \"points\": " INT64_FORMAT ", \"levels\": %d, \"level_points\": [",
					 GC_STREAM_VERSION, h.d, h.k,
					 gc_metric_name(h.cosine ? GC_METRIC_COSINE : GC_METRIC_EUCLIDEAN),
					 h.m, h.block_rows, h.rows, h.total, h.nlevels);
	for (int l = 0; l < h.nlevels; l++)
		appendStringInfo(&buf, "%s" INT64_FORMAT, l ? ", " : "", h.counts[l]);
	appendStringInfo(&buf, "], \"bytes\": %zu}", len + VARHDRSZ);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
