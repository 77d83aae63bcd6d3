/*-------------------------------------------------------------------------
 *
 * type_fuzz.c
 *	  libFuzzer inside a PostgreSQL backend, over every function that
 *	  turns outside bytes into a gpuclust value: the text input and binary
 *	  receive functions of kmeans_model, pmedian_model and kmeans_stream,
 *	  and the parsers of the options jsonb (k-means, p-median,
 *	  kmeans_stream_state); and the row estimate of the *_assign
 *	  functions, which plans their query text.
 *
 * Why in a backend: these functions are built on the server's jsonb,
 * numeric, base64 and pqformat code, which no stub imitates faithfully;
 * the engine-level decoder that needs no server (kmeans_stream's bytes) is
 * fuzzed apart, by stream_decode_fuzz.c.  Here the glue and the engine are
 * compiled again with clang's coverage, ASan and UBSan into one module
 * (build/fuzz/gpuclust_fuzz.so) that a single-user backend loads, with
 * the ASan runtime preloaded; gpuclust_fuzz() hands the process to
 * libFuzzer (LLVMFuzzerRunDriver), which exits it when done.
 *
 * For each input, the property checked (a failure aborts, and libFuzzer
 * saves the input):
 *	- the function accepts it, or rejects it with a data exception
 *	  (SQLSTATE class 22), a program limit (54), an unsupported feature
 *	  (0A) or, for a binary message too short, 08P01: never an internal
 *	  error (XX), nor any other class;
 *	- an accepted value round-trips: out -> in and send -> recv give the
 *	  same bytes, and out of the value read back is the same text (for
 *	  kmeans_stream, whose out and send compact the summary's raw rows,
 *	  the compacted value is a fixed point and keeps the shape and rows);
 *	  consumers (kmeans_predict, pmedian_predict, kmeans_stream_info,
 *	  kmeans_stream_model, whose model round-trips in turn) work on it;
 *	- accepted options are within their documented ranges, and parse the
 *	  same from the jsonb's own text form;
 *	- the row estimate, whatever the query text (utility statements, SELECT
 *	  INTO, writes and row locks among the seeds: one once crashed it),
 *	  gives no estimate or one of at least a row, leaves no subtransaction
 *	  open, and raises only what must stop a statement (classes 53, 54,
 *	  57, 58).
 * The values that outputs read are exact-size malloc copies, so that a
 * read past a value's end is an ASan report, not a read of the memory
 * context's slack.
 *
 *	  make fuzz-check        runs every target for a bounded time
 *	                         (test/fuzz/run-type-fuzz)
 *
 * IDENTIFICATION
 *	  test/fuzz/type_fuzz.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream_format.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "nodes/makefuncs.h"
#include "nodes/supportnodes.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

extern int	LLVMFuzzerRunDriver(int *argc, char ***argv,
								int (*callback) (const uint8_t *data, size_t size));

/* The SQL-callable functions fuzzed, from the module's own glue */
extern Datum gpuclust_kmeans_model_in(PG_FUNCTION_ARGS);
extern Datum gpuclust_kmeans_model_out(PG_FUNCTION_ARGS);
extern Datum gpuclust_kmeans_model_recv(PG_FUNCTION_ARGS);
extern Datum gpuclust_kmeans_model_send(PG_FUNCTION_ARGS);
extern Datum gpuclust_kmeans_distance(PG_FUNCTION_ARGS);
extern Datum gpuclust_pmedian_model_in(PG_FUNCTION_ARGS);
extern Datum gpuclust_pmedian_model_out(PG_FUNCTION_ARGS);
extern Datum gpuclust_pmedian_model_recv(PG_FUNCTION_ARGS);
extern Datum gpuclust_pmedian_model_send(PG_FUNCTION_ARGS);
extern Datum gpuclust_pmedian_predict(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_in(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_out(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_recv(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_send(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_info(PG_FUNCTION_ARGS);
extern Datum gpuclust_stream_model(PG_FUNCTION_ARGS);
extern Datum gpuclust_assign_support(PG_FUNCTION_ARGS);

PG_FUNCTION_INFO_V1(gpuclust_fuzz);
PG_FUNCTION_INFO_V1(gpuclust_fuzz_binary_seeds);

/* A type's four I/O functions */
typedef struct TypeIO
{
	const char *name;
	PGFunction	in;
	PGFunction	out;
	PGFunction	recv;
	PGFunction	send;
	void		(*consume) (Datum value);	/* use the value; NULL: none */
} TypeIO;

typedef struct FuzzTarget
{
	const char *name;
	const TypeIO *type;			/* NULL: a text target (fuzz_text) */
	bool		binary;			/* the input is the binary form */
	void		(*fuzz_text) (const char *text);	/* a target of no type */
} FuzzTarget;

static void consume_kmeans_model(Datum value);
static void consume_pmedian_model(Datum value);
static void consume_stream(Datum value);
static void check_stream_roundtrip(const TypeIO *type, Datum value);
static void fuzz_options(const char *text);
static void fuzz_assign_query(const char *text);

static const TypeIO kmeans_model_io = {
	"kmeans_model", gpuclust_kmeans_model_in, gpuclust_kmeans_model_out,
	gpuclust_kmeans_model_recv, gpuclust_kmeans_model_send, consume_kmeans_model
};
static const TypeIO pmedian_model_io = {
	"pmedian_model", gpuclust_pmedian_model_in, gpuclust_pmedian_model_out,
	gpuclust_pmedian_model_recv, gpuclust_pmedian_model_send, consume_pmedian_model
};
static const TypeIO stream_io = {
	"kmeans_stream", gpuclust_stream_in, gpuclust_stream_out,
	gpuclust_stream_recv, gpuclust_stream_send, consume_stream
};

static const FuzzTarget targets[] = {
	{"kmeans_model_text", &kmeans_model_io, false},
	{"kmeans_model_binary", &kmeans_model_io, true},
	{"pmedian_model_text", &pmedian_model_io, false},
	{"pmedian_model_binary", &pmedian_model_io, true},
	{"kmeans_stream_binary", &stream_io, true},
	{"options", NULL, false, fuzz_options},
	{"assign_query", NULL, false, fuzz_assign_query},
};

static const FuzzTarget *target;
static MemoryContext fuzz_context;

/* ---------------------------------------------------------------------
 * Failures and expected rejections
 * ---------------------------------------------------------------------
 */

/* A broken property: say which, and abort so that libFuzzer keeps the input */
static void
fuzz_fail(const char *what, const char *detail)
{
	fprintf(stderr, "\ngpuclust fuzz target %s: %s\n  %s\n", target->name, what,
			detail ? detail : "");
	fflush(stderr);
	abort();
}

/*
 * Whether an input function may reject an input with this SQLSTATE; a
 * binary message too short for what it announces is a protocol violation
 * (08P01), as for every built-in receive function
 */
static bool
expected_rejection(int sqlerrcode)
{
	int			class = ERRCODE_TO_CATEGORY(sqlerrcode);

	return class == ERRCODE_DATA_EXCEPTION ||
		(target->binary && sqlerrcode == ERRCODE_PROTOCOL_VIOLATION) ||
		class == ERRCODE_PROGRAM_LIMIT_EXCEEDED ||
		class == ERRCODE_FEATURE_NOT_SUPPORTED;
}

/* The error being handled, copied out and cleared */
static ErrorData *
take_error(void)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(fuzz_context);
	edata = CopyErrorData();
	FlushErrorState();
	return edata;
}

static const char *
error_text(const ErrorData *edata)
{
	return psprintf("SQLSTATE %s: %s (%s)", unpack_sql_state(edata->sqlerrcode),
					edata->message, edata->detail ? edata->detail : "no detail");
}

/*
 * Call fn(arg1) or, with a second argument, fn(arg1, arg2): true with its
 * result, or false when it rejected its input as an input function may
 */
static bool
try_call(PGFunction fn, Datum arg1, const Datum *arg2, Datum *result)
{
	bool		accepted = false;

	PG_TRY();
	{
		*result = arg2 ? DirectFunctionCall2(fn, arg1, *arg2) : DirectFunctionCall1(fn, arg1);
		accepted = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata = take_error();

		if (!expected_rejection(edata->sqlerrcode))
			fuzz_fail("an input was rejected with an unexpected error", error_text(edata));
	}
	PG_END_TRY();
	return accepted;
}

/* ---------------------------------------------------------------------
 * Round trips
 * ---------------------------------------------------------------------
 */

/* A copy of a varlena in exactly its size of malloc'd memory */
static struct varlena *
exact_copy(Datum value)
{
	struct varlena *v = PG_DETOAST_DATUM(value);
	struct varlena *copy = malloc(VARSIZE(v));

	memcpy(copy, v, VARSIZE(v));
	return copy;
}

/* A message buffer over a malloc'd copy of len bytes, for a receive function */
static void
message_of(StringInfo buf, const char *bytes, int len)
{
	buf->data = malloc(Max(len, 1));
	memcpy(buf->data, bytes, len);
	buf->len = len;
	buf->maxlen = len;
	buf->cursor = 0;
}

static void
expect_same_value(const char *how, struct varlena *a, Datum b_datum)
{
	struct varlena *b = PG_DETOAST_DATUM(b_datum);

	if (VARSIZE(a) != VARSIZE(b) || memcmp(a, b, VARSIZE(a)) != 0)
		fuzz_fail(psprintf("%s of an accepted %s gave a different value", how,
						   target->type->name),
				  psprintf("sizes %u and %u", (unsigned) VARSIZE(a), (unsigned) VARSIZE(b)));
}

/* The value's binary form sent and received back */
static Datum
send_recv(const TypeIO *type, Datum value)
{
	bytea	   *sent = DatumGetByteaPP(DirectFunctionCall1(type->send, value));
	StringInfoData buf;
	Datum		back;

	message_of(&buf, VARDATA_ANY(sent), VARSIZE_ANY_EXHDR(sent));
	back = DirectFunctionCall1(type->recv, PointerGetDatum(&buf));
	if (buf.cursor != buf.len)
		fuzz_fail("a receive function left bytes of its own send's output unread", NULL);
	free(buf.data);
	return back;
}

/*
 * An accepted model: out -> in and send -> recv give it back, and its text
 * is the same when written again
 */
static void
check_model_roundtrip(const TypeIO *type, Datum value)
{
	struct varlena *v = exact_copy(value);
	char	   *text = DatumGetCString(DirectFunctionCall1(type->out, PointerGetDatum(v)));
	Datum		from_text = DirectFunctionCall1(type->in, CStringGetDatum(text));
	char	   *text_again = DatumGetCString(DirectFunctionCall1(type->out, from_text));

	expect_same_value("out -> in", v, from_text);
	if (strcmp(text, text_again) != 0)
		fuzz_fail("out of a value read back from its text differs", text_again);
	expect_same_value("send -> recv", v, send_recv(type, PointerGetDatum(v)));
	type->consume(PointerGetDatum(v));
	free(v);
}

/* ---------------------------------------------------------------------
 * Consumers
 * ---------------------------------------------------------------------
 */

/* A float8[] of the d values at x */
static Datum
float8_array(const double *x, int d)
{
	Datum	   *elems = palloc(sizeof(Datum) * d);

	for (int j = 0; j < d; j++)
		elems[j] = Float8GetDatum(x[j]);
	return PointerGetDatum(construct_array(elems, d, FLOAT8OID, sizeof(float8),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}


/*
 * kmeans_distance of the model's first centroid: 0 under the Euclidean
 * metric (the centroid itself is nearest), finite under cosine unless the
 * centroid is a zero vector, which is rejected
 */
static void
consume_kmeans_model(Datum value)
{
	KmeansModel *m = (KmeansModel *) DatumGetPointer(value);
	Datum		vector = float8_array(KmeansModelCentroids(m), m->d);
	Datum		distance;

	if (!try_call(gpuclust_kmeans_distance, value, &vector, &distance))
		return;
	if (m->metric == GC_METRIC_EUCLIDEAN ? DatumGetFloat8(distance) != 0.0 :
		!isfinite(DatumGetFloat8(distance)))
		fuzz_fail("kmeans_distance of a model's own centroid is wrong",
				  psprintf("%g", DatumGetFloat8(distance)));
}

/*
 * pmedian_predict of the model's first medoid: a medoid at distance 0
 * from it (the first, or one equal to it) for the metrics that are
 * distances; any of the model's ids under cosine
 */
static void
consume_pmedian_model(Datum value)
{
	PmedianModel *m = (PmedianModel *) DatumGetPointer(value);
	Datum		vector = float8_array(PmedianModelMedoids(m), m->d);
	Datum		id;
	bool		found = false;

	if (!try_call(gpuclust_pmedian_predict, value, &vector, &id))
		return;
	for (int i = 0; i < m->p && !found; i++)
		found = PmedianModelIds(m)[i] == DatumGetInt64(id) &&
			(m->metric == GC_PM_COSINE ||
			 memcmp(PmedianModelMedoids(m) + (size_t) i * m->d, PmedianModelMedoids(m),
					sizeof(double) * m->d) == 0);
	if (!found)
		fuzz_fail("pmedian_predict of a model's own medoid is not that medoid",
				  psprintf("id " INT64_FORMAT, DatumGetInt64(id)));
}

/*
 * kmeans_stream_info, and kmeans_stream_model with one restart: a summary
 * with at least k points gives a model that round-trips in turn
 */
static void
consume_stream(Datum value)
{
	Datum		info;
	Datum		options = DirectFunctionCall1(jsonb_in, CStringGetDatum("{\"n_init\": 1}"));
	Datum		model;

	info = DirectFunctionCall1(gpuclust_stream_info, value);
	(void) info;
	if (try_call(gpuclust_stream_model, value, &options, &model))
		check_model_roundtrip(&kmeans_model_io, model);
}

/*
 * An accepted kmeans_stream: its out and send compact the raw rows, so
 * the value read back from either is the compacted one, which keeps the
 * shape and the rows summarised and goes out again unchanged
 */
static void
check_stream_roundtrip(const TypeIO *type, Datum value)
{
	struct varlena *v = exact_copy(value);
	char	   *text = DatumGetCString(DirectFunctionCall1(type->out, PointerGetDatum(v)));
	struct varlena *compact = exact_copy(DirectFunctionCall1(type->in, CStringGetDatum(text)));
	GcStreamHeader h,
				hc;

	if (gc_stream_decode((const uint8 *) VARDATA(v), VARSIZE(v) - VARHDRSZ, &h) != NULL ||
		gc_stream_decode((const uint8 *) VARDATA(compact), VARSIZE(compact) - VARHDRSZ, &hc) != NULL)
		fuzz_fail("an accepted kmeans_stream does not decode", NULL);
	if (h.d != hc.d || h.k != hc.k || h.m != hc.m || h.block_rows != hc.block_rows ||
		h.rows != hc.rows || h.seed != hc.seed)
		fuzz_fail("out -> in of a kmeans_stream changed its shape or rows",
				  psprintf("rows " INT64_FORMAT " and " INT64_FORMAT, h.rows, hc.rows));
	if (h.counts[0] <= h.m)
		expect_same_value("out -> in", v, PointerGetDatum(compact));
	expect_same_value("send -> recv", compact, send_recv(type, PointerGetDatum(v)));
	if (strcmp(text, DatumGetCString(DirectFunctionCall1(type->out, PointerGetDatum(compact)))) != 0)
		fuzz_fail("out of a compacted kmeans_stream changed it again", NULL);
	expect_same_value("send -> recv of the compacted value", compact,
					  send_recv(type, PointerGetDatum(compact)));
	type->consume(PointerGetDatum(compact));
	free(compact);
	free(v);
}

/* ---------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------
 */
#define FUZZ_K 3

typedef void (*ParseFn) (Jsonb *options, void *out);

/* parse(options, out): true when accepted, false when rejected as it may be */
static bool
try_parse(ParseFn parse, Jsonb *options, void *out)
{
	bool		accepted = false;

	PG_TRY();
	{
		parse(options, out);
		accepted = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata = take_error();

		if (!expected_rejection(edata->sqlerrcode))
			fuzz_fail("options were rejected with an unexpected error", error_text(edata));
	}
	PG_END_TRY();
	return accepted;
}

/* k-means options for k = FUZZ_K, and init's centroids checked as a fit does */
static void
parse_kmeans(Jsonb *options, void *out)
{
	GcKmeansOptions *opts = out;

	gc_parse_kmeans_options(options, FUZZ_K, opts);
	if (opts->params.init == GC_INIT_GIVEN)
		gc_check_init_shape(opts, opts->init_cols);
}

static void
parse_pmedian(Jsonb *options, void *out)
{
	GcSmallGroups small_groups;

	gc_parse_pmedian_options(options, FUZZ_K, out, &small_groups);
}

static void
parse_stream(Jsonb *options, void *out)
{
	gc_parse_stream_options(options, FUZZ_K, out);
}

static void
expect(bool holds, const char *what)
{
	if (!holds)
		fuzz_fail("accepted options break a documented range", what);
}

static void
check_kmeans_options(Jsonb *options, Jsonb *reparsed)
{
	GcKmeansOptions a,
				b;
	GcKmeansParams *p = &a.params;

	if (!try_parse(parse_kmeans, options, &a))
		return;
	expect(p->k == FUZZ_K, "k");
	expect(p->max_iter >= 1 && p->max_iter <= 1000000, "max_iter");
	expect(isfinite(p->tol) && p->tol >= 0.0, "tol");
	expect(p->n_init >= 1 && p->n_init <= 1000, "n_init");
	expect(p->init_candidates >= 0 && p->init_candidates <= GC_MAX_INIT_CANDIDATES,
		   "init_candidates");
	expect(p->init_candidates == 0 || p->init == GC_INIT_KMEANSPP, "init_candidates with init");
	expect((unsigned) p->algorithm <= GC_ALGORITHM_PRUNED, "algorithm");
	expect((unsigned) p->precision <= GC_PRECISION_AUTO, "precision");
	expect((unsigned) p->init <= GC_INIT_AUTO, "init");
	expect((unsigned) p->metric <= GC_METRIC_COSINE, "metric");
	if (p->init == GC_INIT_GIVEN)
	{
		expect(p->n_init == 1, "n_init with init centroids");
		expect(a.init_rows == FUZZ_K && a.init_cols >= 1, "init's shape");
		for (int i = 0; i < a.init_rows * a.init_cols; i++)
			expect(isfinite(a.init_values[i]) && fabs(a.init_values[i]) <= GC_MAX_MAGNITUDE,
				   "init's values");
	}
	if (!try_parse(parse_kmeans, reparsed, &b))
		fuzz_fail("k-means options were rejected from their own jsonb text", NULL);
	if ((a.params.init == GC_INIT_GIVEN) != (b.params.init == GC_INIT_GIVEN) ||
		(a.params.init == GC_INIT_GIVEN &&
		 (a.init_rows != b.init_rows || a.init_cols != b.init_cols ||
		  memcmp(a.init_values, b.init_values,
				 sizeof(double) * a.init_rows * a.init_cols) != 0)))
		fuzz_fail("k-means options parse differently from their own jsonb text", "init");
	a.params.init_centroids = b.params.init_centroids = NULL;
	a.init_values = b.init_values = NULL;
	if (memcmp(&a, &b, sizeof(a)) != 0)
		fuzz_fail("k-means options parse differently from their own jsonb text", NULL);
}

static void
check_pmedian_options(Jsonb *options, Jsonb *reparsed)
{
	GcPmParams	a,
				b;

	if (!try_parse(parse_pmedian, options, &a))
		return;
	expect(a.p == FUZZ_K, "p");
	expect((unsigned) a.metric <= GC_PM_COSINE, "metric");
	expect((unsigned) a.method <= GC_PM_THREE_PHASE, "method");
	expect((unsigned) a.improve <= GC_PM_IMPROVE_FULL, "improve");
	expect(a.max_iter >= 1 && a.max_iter <= 1000000, "max_iter");
	expect(a.polish_iter >= 0 && a.polish_iter <= 1000000, "polish_iter");
	expect(a.big_clusters >= 0 && a.big_clusters <= GC_MAX_K, "big_clusters");
	expect(!a.capacitated || (isfinite(a.capacity) && a.capacity > 0.0), "capacity");
	expect(!a.hard_capacity || a.capacitated, "capacity_mode without capacity");
	expect(isfinite(a.penalty_step) && a.penalty_step > 0.0, "penalty_step");
	expect(isfinite(a.sample_factor) && a.sample_factor > 0.0, "sample_factor");
	if (!try_parse(parse_pmedian, reparsed, &b))
		fuzz_fail("p-median options were rejected from their own jsonb text", NULL);
	if (memcmp(&a, &b, sizeof(a)) != 0)
		fuzz_fail("p-median options parse differently from their own jsonb text", NULL);
}

static void
check_stream_options(Jsonb *options, Jsonb *reparsed)
{
	GcStreamHeader a,
				b;

	if (!try_parse(parse_stream, options, &a))
		return;
	expect(a.k == FUZZ_K, "k");
	expect(a.m >= FUZZ_K && a.m <= GC_STREAM_MAX_CENTRES, "centres");
	expect(a.block_rows >= 2 * a.m && a.block_rows <= GC_STREAM_MAX_BLOCK, "block_rows");
	if (!try_parse(parse_stream, reparsed, &b))
		fuzz_fail("kmeans_stream_state options were rejected from their own jsonb text", NULL);
	if (memcmp(&a, &b, sizeof(a)) != 0)
		fuzz_fail("kmeans_stream_state options parse differently from their own jsonb text", NULL);
}

/* Every options parser over the JSON text, and over the jsonb's own text */
static void
fuzz_options(const char *text)
{
	Datum		options;
	Jsonb	   *reparsed;

	if (!try_call(jsonb_in, CStringGetDatum(text), NULL, &options))
		return;
	reparsed = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
												  DirectFunctionCall1(jsonb_out, options)));
	check_kmeans_options(DatumGetJsonbP(options), reparsed);
	check_pmedian_options(DatumGetJsonbP(options), reparsed);
	check_stream_options(DatumGetJsonbP(options), reparsed);
}

/*
 * The *_assign functions' row estimate (src/assign_estimate.c) of the
 * query text, as the planner asks it for a call with that constant text
 */
static void
fuzz_assign_query(const char *text)
{
	Const	   *query = makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
								  CStringGetTextDatum(text), false, false);
	SupportRequestRows req = {.type = T_SupportRequestRows};
	int			level = GetCurrentTransactionNestLevel();
	Node	   *result = NULL;

	req.node = (Node *) makeFuncExpr(InvalidOid, RECORDOID, list_make1(query),
									 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	PG_TRY();
	{
		result = (Node *) DatumGetPointer(DirectFunctionCall1(gpuclust_assign_support,
															  PointerGetDatum(&req)));
	}
	PG_CATCH();
	{
		ErrorData  *edata = take_error();
		int			class = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

		if (class != ERRCODE_INSUFFICIENT_RESOURCES && class != ERRCODE_PROGRAM_LIMIT_EXCEEDED &&
			class != ERRCODE_OPERATOR_INTERVENTION && class != ERRCODE_SYSTEM_ERROR)
			fuzz_fail("the row estimate raised an error that only the run should", error_text(edata));
	}
	PG_END_TRY();
	if (GetCurrentTransactionNestLevel() != level)
		fuzz_fail("the row estimate left a subtransaction open", text);
	if (result != NULL && (result != (Node *) &req || !(req.rows >= 1.0)))
		fuzz_fail("the row estimate is not a count of rows", text);
}

/* ---------------------------------------------------------------------
 * The driver
 * ---------------------------------------------------------------------
 */

/* A kmeans_stream input with an odd first byte gets its checksum made right */
static void
patch_stream_checksum(StringInfo buf)
{
	uint64		sum;

	if (buf->len < 8 || !(buf->data[0] & 1))
		return;
	sum = gc_stream_checksum((const uint8 *) buf->data, buf->len - 8);
	for (int i = 0; i < 8; i++)
		buf->data[buf->len - 8 + i] = (char) (sum >> (8 * i));
}

static void
run_input(const uint8_t *data, size_t size)
{
	const TypeIO *type = target->type;
	Datum		value;
	bool		accepted;

	if (target->binary)
	{
		StringInfoData buf;

		message_of(&buf, (const char *) data, size);
		if (type == &stream_io)
			patch_stream_checksum(&buf);
		accepted = try_call(type->recv, PointerGetDatum(&buf), NULL, &value);
		if (accepted && buf.cursor != buf.len)
			fuzz_fail("a receive function accepted a value with bytes left over", NULL);
		free(buf.data);
	}
	else
	{
		/* a C string: the exact bytes and a NUL, none inside */
		char	   *text;

		if (memchr(data, '\0', size) != NULL)
			return;
		text = malloc(size + 1);
		memcpy(text, data, size);
		text[size] = '\0';
		if (type == NULL)
		{
			target->fuzz_text(text);
			free(text);
			return;
		}
		accepted = try_call(type->in, CStringGetDatum(text), NULL, &value);
		free(text);
	}
	if (!accepted)
		return;
	if (type == &stream_io)
		check_stream_roundtrip(type, value);
	else
		check_model_roundtrip(type, value);
}

/* libFuzzer's callback: one input, in a memory context reset after it */
static int
fuzz_one(const uint8_t *data, size_t size)
{
	MemoryContext old = MemoryContextSwitchTo(fuzz_context);

	PG_TRY();
	{
		run_input(data, size);
	}
	PG_CATCH();
	{
		ErrorData  *edata = take_error();

		fuzz_fail("an accepted value failed its round trip or a consumer", error_text(edata));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(fuzz_context);
	return 0;
}

static const FuzzTarget *
target_named(const char *name)
{
	for (int i = 0; i < lengthof(targets); i++)
		if (strcmp(targets[i].name, name) == 0)
			return &targets[i];
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown fuzz target \"%s\"", name)));
}

/*
 * gpuclust_fuzz(target text, args text[]): run libFuzzer over the target
 * with these arguments (corpus directories and -flags); libFuzzer ends the
 * process, with status 0 when no property broke
 */
Datum
gpuclust_fuzz(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *elems;
	int			nelems;
	char	  **argv;
	int			argc;

	target = target_named(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
	argv = palloc(sizeof(char *) * (nelems + 2));
	argv[0] = "gpuclust_fuzz";
	for (int i = 0; i < nelems; i++)
		argv[i + 1] = TextDatumGetCString(elems[i]);
	argv[nelems + 1] = NULL;
	argc = nelems + 1;
	fuzz_context = AllocSetContextCreate(TopMemoryContext, "gpuclust fuzz",
										 ALLOCSET_DEFAULT_SIZES);
	LLVMFuzzerRunDriver(&argc, &argv, fuzz_one);
	PG_RETURN_VOID();
}

/*
 * gpuclust_fuzz_binary_seeds(type text, from text, to text) -> int: each
 * file of the directory from, a value's text form, written to the
 * directory to in its binary form (the binary targets' seeds)
 */
Datum
gpuclust_fuzz_binary_seeds(PG_FUNCTION_ARGS)
{
	const char *from = text_to_cstring(PG_GETARG_TEXT_PP(1));
	const char *to = text_to_cstring(PG_GETARG_TEXT_PP(2));
	DIR		   *dir;
	struct dirent *de;
	int			count = 0;

	target = target_named(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	dir = AllocateDir(from);
	while ((de = ReadDir(dir, from)) != NULL)
	{
		char	   *path = psprintf("%s/%s", from, de->d_name);
		StringInfoData text;
		FILE	   *f;
		bytea	   *sent;

		if (de->d_name[0] == '.')
			continue;
		initStringInfo(&text);
		f = AllocateFile(path, "r");
		if (f == NULL)
			elog(ERROR, "could not read %s: %m", path);
		for (int c; (c = fgetc(f)) != EOF;)
			appendStringInfoChar(&text, (char) c);
		FreeFile(f);
		sent = DatumGetByteaPP(DirectFunctionCall1(target->type->send,
												   DirectFunctionCall1(target->type->in,
																	   CStringGetDatum(text.data))));
		f = AllocateFile(psprintf("%s/%s.bin", to, de->d_name), "w");
		if (f == NULL || fwrite(VARDATA_ANY(sent), 1, VARSIZE_ANY_EXHDR(sent), f) !=
			VARSIZE_ANY_EXHDR(sent) || FreeFile(f) != 0)
			elog(ERROR, "could not write a seed in %s: %m", to);
		count++;
	}
	FreeDir(dir);
	PG_RETURN_INT32(count);
}
