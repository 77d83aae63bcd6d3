/*-------------------------------------------------------------------------
 *
 * model_io.c
 *	  The fields the model types (kmeans_model, pmedian_model) share in
 *	  shape, read, written and validated in one place.  A type describes
 *	  its scalar fields once, in a table (name, kind, offset, where the
 *	  text form puts it); the functions here turn that table into the JSON
 *	  text form, the binary form (network byte order, in table order) and
 *	  one validation that text input, binary receive and the fits' own
 *	  output all pass through, so that every value the extension writes
 *	  it reads back, in either form, to the same value.
 *
 *	  Validation also settles the one double that has two spellings:
 *	  -0 is stored as 0, which the text form cannot tell apart from it.
 *	  Every loop over a model's arrays checks for cancel every few
 *	  thousand numbers.
 *
 * IDENTIFICATION
 *	  src/model_io.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "common/shortest_dec.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/numeric.h"

/*
 * Numbers written, read, sent, received or checked between two checks for
 * cancel: a model's arrays hold up to 134 million of them, whose text form
 * took 5.9 s to cancel when nothing checked (a check is a flag's read)
 */
#define POLL_NUMBERS 4096

#define FIELD(model, f, type) ((type *) ((char *) (model) + (f)->offset))
#define CFIELD(model, f, type) ((const type *) ((const char *) (model) + (f)->offset))

/*
 * Append x in the shortest form that reads back exactly, as float8out
 * writes it by default, whatever extra_float_digits says: a model's text
 * form is data, not a display
 */
void
gc_model_append_float8(StringInfo buf, double x)
{
	char		s[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (!isfinite(x))
		elog(ERROR, "non-finite value in a model");
	double_to_shortest_decimal_buf(x, s);
	appendStringInfoString(buf, s);
}

void
gc_model_text_error(const char *type, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type %s", type),
			 errdetail("%s", detail)));
}

/*
 * A value of type that breaks a rule: invalid text (22P02), invalid
 * binary data (22P03), or a fit whose result a model cannot hold (22003)
 */
void
gc_model_value_error(const char *type, int errcode_value, const char *detail)
{
	if (errcode_value == ERRCODE_INVALID_TEXT_REPRESENTATION)
		gc_model_text_error(type, detail);
	if (errcode_value == ERRCODE_INVALID_BINARY_REPRESENTATION)
		ereport(ERROR,
				(errcode(errcode_value),
				 errmsg("invalid binary value for type %s", type),
				 errdetail("%s", detail)));
	ereport(ERROR,
			(errcode(errcode_value),
			 errmsg("the fit produced a %s value out of range", type),
			 errdetail("%s", detail),
			 errhint("A model holds finite values only: rescale the input or use smaller options.")));
}

/* ---------------------------------------------------------------------
 * JSON primitives
 * ---------------------------------------------------------------------
 */

/* The JSON object of a model's text form */
JsonbContainer *
gc_model_object(const char *str, const char *type)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(str)));

	if (!JB_ROOT_IS_OBJECT(jb))
		gc_model_text_error(type, "A model is a JSON object.");
	return &jb->root;
}

/*
 * The field name of obj, of JSON type jtype; NULL when it is absent, or
 * null and not required
 */
static JsonbValue *
model_field(JsonbContainer *obj, const char *type, const char *name,
			enum jbvType jtype, bool required)
{
	JsonbValue	key;
	JsonbValue *v;

	key.type = jbvString;
	key.val.string.val = (char *) name;
	key.val.string.len = strlen(name);
	v = findJsonbValueFromContainer(obj, JB_FOBJECT, &key);
	if (v == NULL && required)
		gc_model_text_error(type, psprintf("The field \"%s\" is missing.", name));
	if (v != NULL && v->type != jtype && !(v->type == jbvNull && !required))
		gc_model_text_error(type, psprintf("The field \"%s\" has the wrong type.", name));
	return v != NULL && v->type == jtype ? v : NULL;
}

/* A JSON number as a double (infinite when too large; validation rejects it) */
static double
number_value(const JsonbValue *v, const char *type, const char *name)
{
	if (v == NULL || v->type != jbvNumeric)
		gc_model_text_error(type, psprintf("The field \"%s\" must hold numbers.", name));
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											  NumericGetDatum(v->val.numeric)));
}

/*
 * A JSON number as the int64 it is exactly: an error unless it is an
 * integer, 22003 when it does not fit
 */
static int64
integer_value(const JsonbValue *v, const char *type, const char *name)
{
	char	   *s;
	char	   *dot;
	char	   *end;
	long long	x;

	if (v == NULL || v->type != jbvNumeric)
		gc_model_text_error(type, psprintf("The field \"%s\" must hold integers.", name));
	s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	dot = strchr(s, '.');
	if (dot != NULL)
	{
		for (const char *p = dot + 1; *p; p++)
			if (*p != '0')
				gc_model_text_error(type, psprintf("The field \"%s\" must hold integers.", name));
		*dot = '\0';
	}
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno == ERANGE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value in field \"%s\" is out of range for type %s", name, type),
				 errdetail("The field holds %s, beyond a 64-bit integer.", s)));
	if (end == s || *end != '\0')
		gc_model_text_error(type, psprintf("The field \"%s\" must hold integers.", name));
	return (int64) x;
}

/* A shape field (k, d or p): an integer of at least 1 (22P02), within int32 (54000) */
int
gc_model_shape_in(JsonbContainer *obj, const char *type, const char *name)
{
	int64		x = integer_value(model_field(obj, type, name, jbvNumeric, true), type, name);

	if (x < 1)
		gc_model_text_error(type, psprintf("The field \"%s\" must be at least 1.", name));
	if (x > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("field \"%s\" of a %s is out of range", name, type),
				 errdetail("It is " INT64_FORMAT ".", x)));
	return (int) x;
}

/* ---------------------------------------------------------------------
 * Scalar fields, as the type's table describes them
 * ---------------------------------------------------------------------
 */

/* The integer value of a flag field (BOOL, ENUM or INT32) */
static int
field_int(const void *model, const GcModelField *f)
{
	return f->kind == GC_FIELD_ENUM ? *CFIELD(model, f, int16) : *CFIELD(model, f, int32);
}

static bool
field_present(const GcModelType *type, const void *model, const GcModelField *f)
{
	return f->kind != GC_FIELD_OPTIONAL ||
		field_int(model, &type->fields[f->flag]) == f->flag_value;
}

static void
field_out(StringInfo buf, const GcModelType *type, const void *model, const GcModelField *f)
{
	appendStringInfo(buf, "\"%s\": ", f->name);
	switch (f->kind)
	{
		case GC_FIELD_INT32:
			appendStringInfo(buf, "%d", *CFIELD(model, f, int32));
			break;
		case GC_FIELD_INT64:
			appendStringInfo(buf, INT64_FORMAT, *CFIELD(model, f, int64));
			break;
		case GC_FIELD_BOOL:
			appendStringInfoString(buf, *CFIELD(model, f, int32) ? "true" : "false");
			break;
		case GC_FIELD_ENUM:
			escape_json(buf, f->name_of(*CFIELD(model, f, int16)));
			break;
		case GC_FIELD_OPTIONAL:
			if (!field_present(type, model, f))
			{
				appendStringInfoString(buf, "null");
				break;
			}
			/* FALLTHROUGH */
		case GC_FIELD_DOUBLE:
		case GC_FIELD_SIGNED:
		case GC_FIELD_FRACTION:
			gc_model_append_float8(buf, *CFIELD(model, f, double));
			break;
		case GC_FIELD_NAME:
			escape_json(buf, CFIELD(model, f, char));
			break;
	}
}

/*
 * Append the type's fields to the text form: those at the top level,
 * each after ", ", then the "timings_ms" object
 */
void
gc_model_fields_out(StringInfo buf, const GcModelType *type, const void *model)
{
	bool		first = true;

	for (int i = 0; i < type->nfields; i++)
		if (type->fields[i].place == GC_PLACE_TOP)
		{
			appendStringInfoString(buf, ", ");
			field_out(buf, type, model, &type->fields[i]);
		}
	for (int i = 0; i < type->nfields; i++)
		if (type->fields[i].place == GC_PLACE_TIMINGS)
		{
			appendStringInfoString(buf, first ? ", \"timings_ms\": {" : ", ");
			field_out(buf, type, model, &type->fields[i]);
			first = false;
		}
	if (!first)
		appendStringInfoChar(buf, '}');
}

/* The index of v's string among f's names, or an error */
static int16
enum_value(const JsonbValue *v, const char *type, const GcModelField *f)
{
	for (int i = 0; i < f->nnames; i++)
		if (strlen(f->name_of(i)) == (size_t) v->val.string.len &&
			strncmp(v->val.string.val, f->name_of(i), v->val.string.len) == 0)
			return (int16) i;
	gc_model_text_error(type, psprintf("The field \"%s\" is not a known name.", f->name));
}

static void
field_in(JsonbContainer *obj, const GcModelType *type, void *model, const GcModelField *f)
{
	static const enum jbvType json_type[] = {
		[GC_FIELD_INT32] = jbvNumeric,[GC_FIELD_INT64] = jbvNumeric,
		[GC_FIELD_BOOL] = jbvBool,[GC_FIELD_ENUM] = jbvString,
		[GC_FIELD_DOUBLE] = jbvNumeric,[GC_FIELD_SIGNED] = jbvNumeric,[GC_FIELD_FRACTION] = jbvNumeric,
		[GC_FIELD_OPTIONAL] = jbvNumeric,[GC_FIELD_NAME] = jbvString
	};
	JsonbValue *v = model_field(obj, type->name, f->name, json_type[f->kind], false);
	int64		x;

	if (v == NULL)
		return;					/* absent or null: the zeroed default */
	switch (f->kind)
	{
		case GC_FIELD_INT32:
			x = integer_value(v, type->name, f->name);
			if (x < PG_INT32_MIN || x > PG_INT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("value in field \"%s\" is out of range for type %s",
								f->name, type->name)));
			*FIELD(model, f, int32) = (int32) x;
			break;
		case GC_FIELD_INT64:
			*FIELD(model, f, int64) = integer_value(v, type->name, f->name);
			break;
		case GC_FIELD_BOOL:
			*FIELD(model, f, int32) = v->val.boolean;
			break;
		case GC_FIELD_ENUM:
			*FIELD(model, f, int16) = enum_value(v, type->name, f);
			break;
		case GC_FIELD_OPTIONAL:
			{
				const GcModelField *flag = &type->fields[f->flag];

				/* the flag is implied by which optional field is given */
				for (int i = 0; i < type->nfields; i++)
					if (&type->fields[i] != f && type->fields[i].kind == GC_FIELD_OPTIONAL &&
						type->fields[i].flag == f->flag &&
						model_field(obj, type->name, type->fields[i].name, jbvNumeric, false))
						gc_model_text_error(type->name,
											psprintf("The fields \"%s\" and \"%s\" exclude each other.",
													 type->fields[i].name, f->name));
				if (flag->kind == GC_FIELD_ENUM)
					*FIELD(model, flag, int16) = (int16) f->flag_value;
				else
					*FIELD(model, flag, int32) = f->flag_value;
			}
			/* FALLTHROUGH */
		case GC_FIELD_DOUBLE:
		case GC_FIELD_SIGNED:
		case GC_FIELD_FRACTION:
			*FIELD(model, f, double) = number_value(v, type->name, f->name);
			break;
		case GC_FIELD_NAME:
			if (v->val.string.len >= GC_KERNEL_NAME_BYTES)
				gc_model_text_error(type->name,
									psprintf("The field \"%s\" is longer than %d bytes.",
											 f->name, GC_KERNEL_NAME_BYTES - 1));
			memcpy(FIELD(model, f, char), v->val.string.val, v->val.string.len);
			break;
	}
}

/*
 * Read the type's fields from the text form into model (zeroed by the
 * caller: an absent field keeps its zero), then validate them
 */
void
gc_model_fields_in(JsonbContainer *obj, const GcModelType *type, void *model)
{
	JsonbValue *timings = model_field(obj, type->name, "timings_ms", jbvBinary, false);

	if (timings != NULL && !JsonContainerIsObject(timings->val.binary.data))
		gc_model_text_error(type->name, "The field \"timings_ms\" must be an object.");
	for (int i = 0; i < type->nfields; i++)
	{
		const GcModelField *f = &type->fields[i];

		if (f->place == GC_PLACE_TOP)
			field_in(obj, type, model, f);
		else if (f->place == GC_PLACE_TIMINGS && timings != NULL)
			field_in(timings->val.binary.data, type, model, f);
	}
	gc_model_fields_check(type, model, ERRCODE_INVALID_TEXT_REPRESENTATION);
}

/* Append the type's fields to the binary form, in table order */
void
gc_model_fields_send(StringInfo buf, const GcModelType *type, const void *model)
{
	for (int i = 0; i < type->nfields; i++)
	{
		const GcModelField *f = &type->fields[i];

		switch (f->kind)
		{
			case GC_FIELD_INT32:
			case GC_FIELD_BOOL:
				pq_sendint32(buf, *CFIELD(model, f, int32));
				break;
			case GC_FIELD_INT64:
				pq_sendint64(buf, *CFIELD(model, f, int64));
				break;
			case GC_FIELD_ENUM:
				pq_sendint16(buf, *CFIELD(model, f, int16));
				break;
			case GC_FIELD_DOUBLE:
			case GC_FIELD_SIGNED:
			case GC_FIELD_FRACTION:
			case GC_FIELD_OPTIONAL:
				pq_sendfloat8(buf, *CFIELD(model, f, double));
				break;
			case GC_FIELD_NAME:
				{
					const char *s = CFIELD(model, f, char);
					int			len = strnlen(s, GC_KERNEL_NAME_BYTES - 1);

					pq_sendint16(buf, len);
					pq_sendbytes(buf, s, len);
				}
				break;
		}
	}
}

/*
 * Read the type's fields from the binary form of the given version into
 * model (fields it predates stay 0), then validate them
 */
void
gc_model_fields_recv(StringInfo buf, const GcModelType *type, void *model,
					 int version)
{
	for (int i = 0; i < type->nfields; i++)
	{
		const GcModelField *f = &type->fields[i];

		if (f->since > version)
			continue;
		switch (f->kind)
		{
			case GC_FIELD_INT32:
			case GC_FIELD_BOOL:
				*FIELD(model, f, int32) = (int32) pq_getmsgint(buf, 4);
				break;
			case GC_FIELD_INT64:
				*FIELD(model, f, int64) = pq_getmsgint64(buf);
				break;
			case GC_FIELD_ENUM:
				*FIELD(model, f, int16) = (int16) pq_getmsgint(buf, 2);
				break;
			case GC_FIELD_DOUBLE:
			case GC_FIELD_SIGNED:
			case GC_FIELD_FRACTION:
			case GC_FIELD_OPTIONAL:
				*FIELD(model, f, double) = pq_getmsgfloat8(buf);
				break;
			case GC_FIELD_NAME:
				{
					int			len = (int16) pq_getmsgint(buf, 2);

					if (len < 0 || len >= GC_KERNEL_NAME_BYTES)
						gc_model_value_error(type->name, ERRCODE_INVALID_BINARY_REPRESENTATION,
											 psprintf("The field \"%s\" has a bad length.", f->name));
					pq_copymsgbytes(buf, FIELD(model, f, char), len);
					if (memchr(FIELD(model, f, char), '\0', len) != NULL)
						gc_model_value_error(type->name, ERRCODE_INVALID_BINARY_REPRESENTATION,
											 psprintf("The field \"%s\" holds a NUL byte.", f->name));
				}
				break;
		}
	}
	gc_model_fields_check(type, model, ERRCODE_INVALID_BINARY_REPRESENTATION);
}

/* Whether s is a kernel name: up to 31 characters of [a-z0-9_-] */
static bool
valid_name(const char *s)
{
	size_t		len = strnlen(s, GC_KERNEL_NAME_BYTES);

	if (len >= GC_KERNEL_NAME_BYTES)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
			  s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* The rule field f breaks in model, or NULL; -0 becomes 0 */
static const char *
field_problem(const GcModelType *type, void *model, const GcModelField *f)
{
	double	   *x = FIELD(model, f, double);

	switch (f->kind)
	{
		case GC_FIELD_INT32:
			return *FIELD(model, f, int32) < 0 ? "must not be negative" : NULL;
		case GC_FIELD_INT64:
			return *FIELD(model, f, int64) < 0 ? "must not be negative" : NULL;
		case GC_FIELD_BOOL:
			return *FIELD(model, f, int32) != 0 && *FIELD(model, f, int32) != 1 ?
				"must be 0 or 1" : NULL;
		case GC_FIELD_ENUM:
			return *FIELD(model, f, int16) < 0 || *FIELD(model, f, int16) >= f->nnames ?
				"is not a known value" : NULL;
		case GC_FIELD_NAME:
			return valid_name(FIELD(model, f, char)) ?
				NULL : "must be at most 31 characters among a-z, 0-9, _ and -";
		case GC_FIELD_OPTIONAL:
			if (!field_present(type, model, f) && *x != 0.0)
				return "must be null here";
			/* FALLTHROUGH */
		case GC_FIELD_DOUBLE:
		case GC_FIELD_SIGNED:
		case GC_FIELD_FRACTION:
			if (!isfinite(*x) || (*x < 0.0 && f->kind != GC_FIELD_SIGNED) ||
				(f->kind == GC_FIELD_FRACTION && *x > 1.0))
				return f->kind == GC_FIELD_FRACTION ? "must be a fraction from 0 to 1" :
					f->kind == GC_FIELD_SIGNED ? "must be a finite number" :
					"must be a finite number at least 0";
			*x = *x + 0.0;		/* -0 + 0 is +0 */
			return NULL;
	}
	return NULL;
}

/*
 * Check every field of the type in model; the error, with errcode_value,
 * names the first field that breaks its rule
 */
void
gc_model_fields_check(const GcModelType *type, void *model, int errcode_value)
{
	for (int i = 0; i < type->nfields; i++)
	{
		const char *why = field_problem(type, model, &type->fields[i]);

		if (why != NULL)
			gc_model_value_error(type->name, errcode_value,
								 psprintf("The field \"%s\" %s.", type->fields[i].name, why));
	}
}

/* ---------------------------------------------------------------------
 * Arrays: counts or ids, numbers, and a matrix of rows
 * ---------------------------------------------------------------------
 */

/* Check for cancel once every POLL_NUMBERS numbers: i counts them */
static inline void
poll_numbers(size_t i)
{
	if (i % POLL_NUMBERS == POLL_NUMBERS - 1)
		CHECK_FOR_INTERRUPTS();
}

void
gc_model_int64s_out(StringInfo buf, const char *name, const int64 *x, int n)
{
	appendStringInfo(buf, ", \"%s\": [", name);
	for (int i = 0; i < n; i++)
	{
		poll_numbers(i);
		appendStringInfo(buf, "%s" INT64_FORMAT, i ? ", " : "", x[i]);
	}
	appendStringInfoChar(buf, ']');
}

/* n numbers as a JSON array; first counts the numbers before them */
static void
append_doubles(StringInfo buf, const double *x, int n, size_t first)
{
	appendStringInfoChar(buf, '[');
	for (int i = 0; i < n; i++)
	{
		poll_numbers(first + i);
		if (i)
			appendStringInfoString(buf, ", ");
		gc_model_append_float8(buf, x[i]);
	}
	appendStringInfoChar(buf, ']');
}

void
gc_model_doubles_out(StringInfo buf, const char *name, const double *x, int n)
{
	appendStringInfo(buf, ", \"%s\": ", name);
	append_doubles(buf, x, n, 0);
}

void
gc_model_matrix_out(StringInfo buf, const char *name, const double *x, int rows, int cols)
{
	appendStringInfo(buf, ", \"%s\": [", name);
	for (int r = 0; r < rows; r++)
	{
		if (r)
			appendStringInfoString(buf, ", ");
		append_doubles(buf, x + (size_t) r * cols, cols, (size_t) r * cols);
	}
	appendStringInfoChar(buf, ']');
}

/* A double as the jsonb number its text form parses to */
static JsonbValue
json_number(double x)
{
	char		s[DOUBLE_SHORTEST_DECIMAL_LEN];
	JsonbValue	v;

	double_to_shortest_decimal_buf(x, s);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(s),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	return v;
}

/* Push the matrix field name (rows arrays of cols numbers) into state */
static void
push_matrix(JsonbParseState **state, const char *name, const double *x, int rows, int cols)
{
	JsonbValue	key = {.type = jbvString};

	key.val.string.val = (char *) name;
	key.val.string.len = strlen(name);
	pushJsonbValue(state, WJB_KEY, &key);
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (int r = 0; r < rows; r++)
	{
		pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
		for (int c = 0; c < cols; c++)
		{
			JsonbValue	v;

			poll_numbers((size_t) r * cols + c);
			v = json_number(x[(size_t) r * cols + c]);
			pushJsonbValue(state, WJB_ELEM, &v);
		}
		pushJsonbValue(state, WJB_END_ARRAY, NULL);
	}
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
}

/*
 * A model as jsonb: the value its text form casts to (same keys, same
 * numbers), from fields_text (the text form without the matrix, small)
 * and the matrix field name pushed number by number, checking for cancel.
 * Through the text form, PostgreSQL's JSON parser read the matrix without
 * checking: a 64 MB model's cast ran 6 s past a timeout.
 */
Jsonb *
gc_model_jsonb(const char *fields_text, const char *name, const double *x, int rows, int cols)
{
	Jsonb	   *fields = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(fields_text)));
	JsonbIterator *it = JsonbIteratorInit(&fields->root);
	JsonbParseState *state = NULL;
	JsonbValue	v;
	JsonbValue *result = NULL;
	JsonbIteratorToken token;
	int			depth = 0;

	while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (token == WJB_BEGIN_OBJECT || token == WJB_BEGIN_ARRAY)
			depth++;
		else if (token == WJB_END_OBJECT || token == WJB_END_ARRAY)
			depth--;
		if (token == WJB_END_OBJECT && depth == 0)
			push_matrix(&state, name, x, rows, cols);
		result = pushJsonbValue(&state, token, token < WJB_BEGIN_ARRAY ? &v : NULL);
	}
	return JsonbValueToJsonb(result);
}

/*
 * The array field name of count elements; with inner_count >= 0, each an
 * array of inner_count elements.  Checked before the model is allocated,
 * so that a short text cannot make a large allocation.  NULL when absent
 * and not required.
 */
JsonbContainer *
gc_model_array_in(JsonbContainer *obj, const char *type, const char *name,
				  int count, int inner_count, bool required)
{
	JsonbValue *v = model_field(obj, type, name, jbvBinary, required);
	JsonbContainer *array;

	if (v == NULL)
		return NULL;
	array = v->val.binary.data;
	if (!JsonContainerIsArray(array) || JsonContainerSize(array) != (uint32) count)
		gc_model_text_error(type, psprintf("The field \"%s\" must be an array of %d elements.",
										   name, count));
	for (int i = 0; inner_count >= 0 && i < count; i++)
	{
		JsonbValue *row = getIthJsonbValueFromContainer(array, i);

		poll_numbers((size_t) i * inner_count);

		if (row->type != jbvBinary || !JsonContainerIsArray(row->val.binary.data) ||
			JsonContainerSize(row->val.binary.data) != (uint32) inner_count)
			gc_model_text_error(type, psprintf("Each element of \"%s\" must be an array of %d numbers.",
											   name, inner_count));
	}
	return array;
}

void
gc_model_int64s_in(JsonbContainer *array, const char *type, const char *name,
				   int64 *out, int n)
{
	for (int i = 0; i < n; i++)
	{
		poll_numbers(i);
		out[i] = integer_value(getIthJsonbValueFromContainer(array, i), type, name);
	}
}

/* n numbers of a JSON array; first counts the numbers before them */
static void
doubles_in(JsonbContainer *array, const char *type, const char *name,
		   double *out, int n, size_t first)
{
	for (int i = 0; i < n; i++)
	{
		poll_numbers(first + i);
		out[i] = number_value(getIthJsonbValueFromContainer(array, i), type, name);
	}
}

void
gc_model_doubles_in(JsonbContainer *array, const char *type, const char *name,
					double *out, int n)
{
	doubles_in(array, type, name, out, n, 0);
}

void
gc_model_matrix_in(JsonbContainer *array, const char *type, const char *name,
				   double *out, int rows, int cols)
{
	for (int r = 0; r < rows; r++)
		doubles_in(getIthJsonbValueFromContainer(array, r)->val.binary.data,
				   type, name, out + (size_t) r * cols, cols, (size_t) r * cols);
}

void
gc_model_int64s_send(StringInfo buf, const int64 *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		poll_numbers(i);
		pq_sendint64(buf, x[i]);
	}
}

void
gc_model_doubles_send(StringInfo buf, const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		poll_numbers(i);
		pq_sendfloat8(buf, x[i]);
	}
}

void
gc_model_int64s_recv(StringInfo buf, int64 *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		poll_numbers(i);
		x[i] = pq_getmsgint64(buf);
	}
}

void
gc_model_doubles_recv(StringInfo buf, double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		poll_numbers(i);
		x[i] = pq_getmsgfloat8(buf);
	}
}

/*
 * Check n doubles: finite, of magnitude at most limit, and not negative
 * when so asked; -0 becomes 0
 */
void
gc_model_check_doubles(const char *type, const char *name, double *x, size_t n,
					   double limit, bool non_negative, int errcode_value)
{
	for (size_t i = 0; i < n; i++)
	{
		poll_numbers(i);
		if (!isfinite(x[i]) || fabs(x[i]) > limit || (non_negative && x[i] < 0.0))
			gc_model_value_error(type, errcode_value,
								 limit < DBL_MAX ?
								 psprintf("The field \"%s\" must hold finite numbers%s of magnitude at most %g.",
										  name, non_negative ? " at least 0" : "", limit) :
								 psprintf("The field \"%s\" must hold finite numbers%s.",
										  name, non_negative ? " at least 0" : ""));
		x[i] = x[i] + 0.0;
	}
}

/*
 * The start of a model's binary form: its version, which must be one this
 * build reads (oldest to newest, the one it writes), returned, and its
 * shape (centroids or medoids by dimensions), at least 1 by 1
 */
int
gc_model_shape_recv(StringInfo buf, const char *type, int oldest, int newest,
					int *rows, int *d)
{
	int			got = (int16) pq_getmsgint(buf, 2);

	*rows = (int32) pq_getmsgint(buf, 4);
	*d = (int32) pq_getmsgint(buf, 4);
	if (got < oldest || got > newest)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("unsupported %s version %d", type, got),
				 errhint("This build reads versions %d to %d.", oldest, newest)));
	if (*rows < 1 || *d < 1)
		gc_model_value_error(type, ERRCODE_INVALID_BINARY_REPRESENTATION,
							 "The shape must be at least 1 by 1.");
	return got;
}

/* The rest of a binary value must be exactly expected bytes long */
void
gc_model_binary_length(StringInfo buf, const char *type, size_t expected)
{
	if ((size_t) (buf->len - buf->cursor) != expected)
		gc_model_value_error(type, ERRCODE_INVALID_BINARY_REPRESENTATION,
							 "The value has the wrong length for its shape.");
}
