/*-------------------------------------------------------------------------
 *
 * gc_pg.h
 *	  The glue's floor: postgres.h first, the compatibility macros, the
 *	  PostgreSQL and engine headers every glue file uses, and the glue's
 *	  own basics (an engine failure raised as an error, the fit memory
 *	  limit, the interrupt hook).
 *
 * IDENTIFICATION
 *	  src/gc_pg.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PG_H
#define GC_PG_H

#include "postgres.h"

#include "pg_compat.h"

#include "fmgr.h"
#include "access/htup.h"
#include "lib/stringinfo.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "gc_engine.h"
#include "pmedian_engine.h"
#include "gc_stream.h"
#include "utils/expandeddatum.h"

/* gpuclust.c, interrupt.c: failures, cancel */
extern bool gc_interrupted(void);
extern void gc_raise(const GcError *err);

/* fit_memory.c: the fit memory limit and a fit's account */
#include "gc_fit_memory.h"

#endif							/* GC_PG_H */
