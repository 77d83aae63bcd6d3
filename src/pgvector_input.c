/*-------------------------------------------------------------------------
 *
 * pgvector_input.c
 *	  pgvector's vector and halfvec types as input, read in place from the
 *	  datum without linking pgvector: their layouts (pgvector's vector.h
 *	  and halfvec.h) are a varlena header, an int16 dimension, an unused
 *	  int16, then dim float4 or IEEE binary16 values.  halfvec values are
 *	  widened while they are copied into the row store.  Also the mapping
 *	  from a column's type to a vector format, which recognises pgvector's
 *	  types by name and owning extension, since their OIDs differ from
 *	  database to database.
 *
 * The SQL declarations that take these types live in the gpuclust_pgvector
 * extension (sql/gpuclust_pgvector--1.0.sql), so that gpuclust installs
 * where pgvector does not.
 *
 * IDENTIFICATION
 *	  src/pgvector_input.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#ifdef GC_HAVE_PGVECTOR_H
#include "extension/vector/halfvec.h"
#include "extension/vector/vector.h"
#endif

/* What follows the varlena header of a vector or a halfvec */
typedef struct PgvectorHeader
{
	int16		dim;
	int16		unused;
} PgvectorHeader;

StaticAssertDecl(sizeof(PgvectorHeader) == 4, "pgvector's header is two int16");
#ifdef GC_HAVE_PGVECTOR_H
StaticAssertDecl(offsetof(Vector, x) == VARHDRSZ + sizeof(PgvectorHeader),
				 "pgvector's vector layout changed");
StaticAssertDecl(sizeof(((Vector *) 0)->x[0]) == sizeof(float),
				 "pgvector's vector holds float4");
StaticAssertDecl(offsetof(HalfVector, x) == VARHDRSZ + sizeof(PgvectorHeader),
				 "pgvector's halfvec layout changed");
StaticAssertDecl(sizeof(((HalfVector *) 0)->x[0]) == sizeof(uint16),
				 "pgvector's halfvec holds binary16");
#endif

/*
 * Point view at the values of a vector or halfvec (already detoasted or
 * packed); the caller checks the dimension's range
 */
void
gc_pgvector_view(struct varlena *packed, Oid format, int64 rowno,
				 GcVectorView *view)
{
	const char *body = VARDATA_ANY(packed);
	Size		len = VARSIZE_ANY_EXHDR(packed);
	Size		elsize = format == GC_PGVECTOR_HALFVEC ? sizeof(uint16) : sizeof(float);
	PgvectorHeader header;

	if (len < sizeof(PgvectorHeader))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s in row " INT64_FORMAT " is too short to be one",
						gc_vector_format_name(format), rowno)));
	memcpy(&header, body, sizeof(header));
	if (header.dim < 0 || len != sizeof(PgvectorHeader) + elsize * header.dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s in row " INT64_FORMAT " has %zu bytes, which do not hold %d dimensions",
						gc_vector_format_name(format), rowno, len, header.dim)));
	view->d = header.dim;
	view->elemtype = format == GC_PGVECTOR_HALFVEC ? GC_PGVECTOR_HALFVEC : FLOAT4OID;
	view->nulls = NULL;
	view->data = body + sizeof(PgvectorHeader);
}

/*
 * An IEEE binary16 value as a float: the exponent and mantissa shifted into
 * place and rescaled by 2^(127 - 15) in one multiplication, which also
 * normalises subnormals; infinities and NaNs get an all-ones exponent.  No
 * branches, so that the loop below vectorises.
 */
static inline float
half_to_float(uint16 h)
{
	uint32		magnitude = h & 0x7fff;
	uint32		bits = magnitude << 13;
	float		f;

	memcpy(&f, &bits, sizeof(f));
	f *= 0x1p112f;
	memcpy(&bits, &f, sizeof(f));
	bits |= (magnitude >= 0x7c00 ? (uint32) 0x7f800000 : 0) |
		((uint32) (h & 0x8000) << 16);
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * Widen d binary16 values (possibly unaligned) into out, as doubles or as
 * floats (narrow); true when one is NaN or infinite (an exponent field of
 * all ones, which carries into the sign bit when one is added to it)
 */
static inline __attribute__((always_inline)) bool
halfvec_copy_to(const char *restrict data, int d, void *restrict out, bool narrow)
{
	uint32		carry = 0;

	for (int j = 0; j < d; j++)
	{
		uint16		h;

		memcpy(&h, data + sizeof(uint16) * j, sizeof(uint16));
		if (narrow)
			((float *) out)[j] = half_to_float(h);
		else
			((double *) out)[j] = half_to_float(h);
		carry |= (uint32) (h & 0x7c00) + 0x0400;
	}
	return (carry & 0x8000) != 0;
}

GC_SIMD_CLONES
bool
gc_halfvec_copy(const char *restrict data, int d, double *restrict out)
{
	return halfvec_copy_to(data, d, out, false);
}

GC_SIMD_CLONES
bool
gc_halfvec_copy_narrow(const char *restrict data, int d, float *restrict out)
{
	return halfvec_copy_to(data, d, out, true);
}

/*
 * Is typid pgvector's type of this name?
 */
static bool
is_pgvector_type(Oid typid, const char *name)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		named;
	Oid			extension;
	char	   *extname;

	if (!HeapTupleIsValid(tuple))
		return false;
	named = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tuple))->typname), name) == 0;
	ReleaseSysCache(tuple);
	if (!named)
		return false;
	extension = getExtensionOfObject(TypeRelationId, typid);
	if (!OidIsValid(extension))
		return false;
	extname = get_extension_name(extension);
	return extname != NULL && strcmp(extname, "vector") == 0;
}

/*
 * The vector format of a column of type typid (a query's vector column),
 * or InvalidOid when gpuclust cannot cluster that type
 */
Oid
gc_vector_format_of_type(Oid typid)
{
	typid = getBaseType(typid);
	if (typid == FLOAT8ARRAYOID)
		return FLOAT8OID;
	if (typid == FLOAT4ARRAYOID)
		return FLOAT4OID;
	if (typid == INT4ARRAYOID || typid == INT8ARRAYOID || typid == INT2ARRAYOID ||
		typid == NUMERICARRAYOID)
		return GC_NUMERIC_ARRAY;
	if (is_pgvector_type(typid, "vector"))
		return GC_PGVECTOR_VECTOR;
	if (is_pgvector_type(typid, "halfvec"))
		return GC_PGVECTOR_HALFVEC;
	return InvalidOid;
}

/*
 * The SQL name of a vector format, for messages and models
 */
const char *
gc_vector_format_name(Oid format)
{
	switch (format)
	{
		case FLOAT8OID:
			return "float8[]";
		case FLOAT4OID:
			return "real[]";
		case GC_PGVECTOR_VECTOR:
			return "vector";
		case GC_PGVECTOR_HALFVEC:
			return "halfvec";
		case INT2OID:
			return "smallint[]";
		case INT4OID:
			return "integer[]";
		case INT8OID:
			return "bigint[]";
		case NUMERICOID:
			return "numeric[]";
	}
	return "unknown";
}

/*
 * The vector format of a name gc_vector_format_name gives, or InvalidOid
 */
Oid
gc_vector_format_by_name(const char *name, int len)
{
	static const Oid formats[] = {FLOAT8OID, FLOAT4OID, GC_PGVECTOR_VECTOR, GC_PGVECTOR_HALFVEC,
	INT2OID, INT4OID, INT8OID, NUMERICOID};

	for (int i = 0; i < lengthof(formats); i++)
	{
		const char *known = gc_vector_format_name(formats[i]);

		if (strlen(known) == (size_t) len && strncmp(known, name, len) == 0)
			return formats[i];
	}
	return InvalidOid;
}
