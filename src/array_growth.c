/*-------------------------------------------------------------------------
 *
 * array_growth.c
 *	  Room in an array that grows a row at a time (ids, NULL rows, demands
 *	  collected while a query runs): doubled from 1,024 elements, allocated
 *	  huge (past 1 GB) in the caller's memory context, so appending n rows
 *	  costs O(n) copies.
 *
 * IDENTIFICATION
 *	  src/array_growth.c
 *
 *-------------------------------------------------------------------------
 */
#include "array_growth.h"

#include "utils/memutils.h"

void *
gc_reserve(MemoryContext context, void *array, int64 *capacity, int64 needed, Size size)
{
	int64		grown = Max(*capacity, 1024);

	if (needed <= *capacity)
		return array;
	while (grown < needed)
		grown *= 2;
	array = array == NULL ? MemoryContextAllocHuge(context, size * grown) :
		repalloc_huge(array, size * grown);
	*capacity = grown;
	return array;
}
