/*-------------------------------------------------------------------------
 *
 * interrupt.c
 *	  The interrupt hook the glue hands to the engine: polled in the
 *	  engine's long loops, it says when a fit must stop, so that the glue
 *	  can free what the engine holds and let PostgreSQL raise the error.
 *
 * It stops for what CHECK_FOR_INTERRUPTS would act on in a running query:
 * a cancel (statement_timeout included), a termination, and a client that
 * has gone away.  The last needs care: with client_connection_check_interval
 * set, a timer raises CheckClientConnectionPending, and ProcessInterrupts
 * probes the socket.  Stopping the engine for every probe would fail fits
 * whose client is alive, so the hook probes the socket itself, as
 * ProcessInterrupts does: a live client re-arms the timer and the fit goes
 * on; a lost one sets ClientConnectionLost, which the glue's
 * CHECK_FOR_INTERRUPTS turns into PostgreSQL's own FATAL "connection to
 * client lost".
 *
 * IDENTIFICATION
 *	  src/interrupt.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"

#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "utils/timeout.h"

/*
 * From libpq/libpq.h, which includes libpq-be.h and so needs the GSSAPI
 * headers wherever the server was built with GSSAPI (Debian's is): the one
 * function this file needs, declared as PostgreSQL 15 to 18 define it.
 */
extern bool pq_check_connection(void);

bool
gc_interrupted(void)
{
	if (!InterruptPending)
		return false;
	if (CheckClientConnectionPending)
	{
		CheckClientConnectionPending = false;
		if (client_connection_check_interval > 0)
		{
			if (!pq_check_connection())
				ClientConnectionLost = true;
			else
				enable_timeout_after(CLIENT_CONNECTION_CHECK_TIMEOUT,
									 client_connection_check_interval);
		}
	}
	return QueryCancelPending || ProcDiePending || ClientConnectionLost;
}
