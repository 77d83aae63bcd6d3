/*-------------------------------------------------------------------------
 *
 * detoast_cache.c
 *	  A model argument read once per call site: kmeans_predict,
 *	  kmeans_distance and pmedian_predict are called once per row, and
 *	  where the model comes from a table (the join of rows with their
 *	  model, as doc/sql-reference.md shows), every call is handed the same on-disk
 *	  TOAST pointer.  Detoasting it each time fetched the whole model from
 *	  the TOAST table per row: 20,000 predictions over a k = 32, d = 768
 *	  model (197 KB) took 588 ms, against 328 ms with the model in memory
 *	  (PostgreSQL 15, CPU).  The detoasted copies are kept in the
 *	  function's FmgrInfo, so for the rest of the query: the last eight
 *	  models used, up to 64 MB in all (the latest always), as a nested
 *	  loop hands each row's model in turn.
 *
 * A TOAST pointer names one immutable value: its value id is not reused
 * while a snapshot that sees the value, as the running query's does, can
 * still read it.  Values not stored on disk (in memory, or compressed
 * inline) are detoasted as before, which costs nothing for the former.
 *
 * IDENTIFICATION
 *	  src/detoast_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "access/detoast.h"

/* A call site keeps up to CACHE_VALUES values of CACHE_BYTES in all (the latest always) */
#define CACHE_VALUES 8
#define CACHE_BYTES ((Size) 64 * 1024 * 1024)

typedef struct CachedValue
{
	varatt_external pointer;	/* the on-disk value detoasted */
	struct varlena *value;		/* its copy, in fn_mcxt */
	uint64		last_use;
} CachedValue;

/* What a call site keeps in fn_extra */
typedef struct DetoastCache
{
	int			count;
	uint64		clock;
	Size		bytes;
	CachedValue values[CACHE_VALUES];
} DetoastCache;

/* Forgets the least recently used value */
static void
evict_oldest(DetoastCache *cache)
{
	int			oldest = 0;

	for (int i = 1; i < cache->count; i++)
		if (cache->values[i].last_use < cache->values[oldest].last_use)
			oldest = i;
	cache->bytes -= VARSIZE(cache->values[oldest].value);
	pfree(cache->values[oldest].value);
	cache->values[oldest] = cache->values[--cache->count];
}

struct varlena *
gc_detoast_arg_cached(FunctionCallInfo fcinfo, int argno)
{
	struct varlena *arg = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	FmgrInfo   *flinfo = fcinfo->flinfo;
	DetoastCache *cache;
	varatt_external pointer;
	struct varlena *value;
	MemoryContext oldcontext;

	/* in memory, or called without an FmgrInfo (DirectFunctionCall) */
	if (!VARATT_IS_EXTERNAL_ONDISK(arg) || flinfo == NULL)
		return pg_detoast_datum(arg);
	VARATT_EXTERNAL_GET_POINTER(pointer, arg);
	cache = (DetoastCache *) flinfo->fn_extra;
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(DetoastCache));
		flinfo->fn_extra = cache;
	}
	for (int i = 0; i < cache->count; i++)
		if (memcmp(&cache->values[i].pointer, &pointer, sizeof(pointer)) == 0)
		{
			cache->values[i].last_use = ++cache->clock;
			return cache->values[i].value;
		}

	oldcontext = MemoryContextSwitchTo(flinfo->fn_mcxt);
	value = detoast_external_attr(arg);
	MemoryContextSwitchTo(oldcontext);
	while (cache->count == CACHE_VALUES ||
		   (cache->count > 0 && cache->bytes + VARSIZE(value) > CACHE_BYTES))
		evict_oldest(cache);
	cache->values[cache->count].pointer = pointer;
	cache->values[cache->count].value = value;
	cache->values[cache->count].last_use = ++cache->clock;
	cache->count++;
	cache->bytes += VARSIZE(value);
	return value;
}
