/*-------------------------------------------------------------------------
 *
 * gc_spi.h
 *	  The query argument of the *_assign functions, run through SPI
 *	  (spi_rows.c), and their set-returning results.
 *
 * IDENTIFICATION
 *	  src/gc_spi.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_SPI_H
#define GC_SPI_H

#include "gc_pg.h"

/* spi_rows.c: the query argument of the *_assign functions */
typedef void (*GcSpiColumnsFn) (TupleDesc tupdesc, void *arg);
typedef void (*GcSpiRowFn) (TupleTableSlot *slot, void *arg);
extern struct _SPI_plan *gc_spi_prepare_rows(const char *query);
extern Oid	gc_spi_id_type(Oid idtype, const char *fname);
extern Oid	gc_spi_vector_format(Oid vectype);
extern void gc_spi_for_each_row(const char *query, GcSpiColumnsFn on_columns,
								GcSpiRowFn on_row, void *arg);
extern int64 gc_spi_id_value(Datum id, Oid idtype);
extern int64 gc_numeric_id(struct NumericData *id);
extern struct ReturnSetInfo *gc_materialize_context(FunctionCallInfo fcinfo,
													 const char *fname);
extern struct Tuplestorestate *gc_result_store(FunctionCallInfo fcinfo,
											   struct ReturnSetInfo *rsinfo,
											   double held_bytes, TupleDesc *tupdesc);

#endif							/* GC_SPI_H */
