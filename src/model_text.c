/*-------------------------------------------------------------------------
 *
 * model_text.c
 *	  Reading and writing the JSON text form shared by the model types
 *	  (kmeans_model, pmedian_model): fields looked up by name with their
 *	  type checked, numbers and counts validated, and errors reported as
 *	  invalid input for the type at hand.
 *
 * IDENTIFICATION
 *	  src/model_text.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/float.h"

/* Append x as float8out writes it (shortest exact form by default) */
void
gc_model_append_float8(StringInfo buf, double x)
{
	char	   *s = float8out_internal(x);

	appendStringInfoString(buf, s);
	pfree(s);
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
 * The field name of obj, of JSON type jtype; NULL when it is absent, or
 * null and not required
 */
JsonbValue *
gc_model_field(JsonbContainer *obj, const char *type, const char *name,
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

/* A finite number field; 0 when absent */
double
gc_model_number(JsonbContainer *obj, const char *type, const char *name, bool required)
{
	JsonbValue *v = gc_model_field(obj, type, name, jbvNumeric, required);
	double		x;

	if (v == NULL)
		return 0.0;
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (!isfinite(x))
		gc_model_text_error(type, psprintf("The field \"%s\" is not finite.", name));
	return x;
}

/* A non-negative integer field; 0 when absent */
int64
gc_model_count(JsonbContainer *obj, const char *type, const char *name, bool required)
{
	double		x = gc_model_number(obj, type, name, required);

	if (x != floor(x) || x < 0 || x > (double) PG_INT64_MAX / 2)
		gc_model_text_error(type, psprintf("The field \"%s\" must be a non-negative integer.", name));
	return (int64) x;
}
