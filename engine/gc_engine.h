/*-------------------------------------------------------------------------
 *
 * gc_engine.h
 *	  The plain-C clustering engine, all of it: the headers by concern
 *	  below (basics and errors, cancel by work, the row store, the GPU
 *	  kernels' names, k-means, seeding).  A file may include this or only
 *	  the ones it needs.
 *
 * Nothing here includes a PostgreSQL header: the engine reports failures
 * through GcError and never throws, allocates with malloc or the row
 * store's allocator, and polls an interrupt hook in its long loops.  The
 * SQL glue in src/ turns a GcError into an ereport.
 *
 * IDENTIFICATION
 *	  engine/gc_engine.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ENGINE_H
#define GC_ENGINE_H

#include "gc_base.h"
#include "gc_poll.h"
#include "gc_rows.h"
#include "gc_kernel.h"
#include "gc_kmeans.h"
#include "gc_seeding.h"
#include "gc_gpu_plan.h"

#endif							/* GC_ENGINE_H */
