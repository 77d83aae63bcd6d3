/*-------------------------------------------------------------------------
 *
 * gpuclust.h
 *	  Declarations shared by the SQL glue (the only code that includes
 *	  postgres.h), all of them: the headers by concern below.  A glue file
 *	  may include this or only the ones it needs (gc_pg.h first).
 *
 * IDENTIFICATION
 *	  src/gpuclust.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUCLUST_H
#define GPUCLUST_H

#include "gc_pg.h"
#include "gc_device.h"
#include "gc_progress.h"
#include "gc_input.h"
#include "gc_options.h"
#include "gc_model.h"
#include "gc_stream_state.h"
#include "gc_spi.h"

#endif							/* GPUCLUST_H */
