/*-------------------------------------------------------------------------
 *
 * array_growth.h
 *	  Room in an array that grows a row at a time (array_growth.c).
 *
 * IDENTIFICATION
 *	  src/array_growth.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ARRAY_GROWTH_H
#define GC_ARRAY_GROWTH_H

#include "postgres.h"

/*
 * Room for needed elements of size bytes in array (NULL at first), whose
 * room is *capacity elements: the array, moved or allocated in context
 * when it grows
 */
extern void *gc_reserve(MemoryContext context, void *array, int64 *capacity, int64 needed,
						Size size);

#endif							/* GC_ARRAY_GROWTH_H */
