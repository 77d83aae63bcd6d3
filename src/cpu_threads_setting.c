/*-------------------------------------------------------------------------
 *
 * cpu_threads_setting.c
 *	  gpuclust.cpu_threads: how many threads a CPU fit's passes (seeding,
 *	  labeling, update, scoring) may use inside the backend.  The engine
 *	  gives the same model for any number (engine/cpu_threads.h).
 *
 * 0 (the default) means the machine's cores; whatever is asked, a fit
 * takes no more than max_parallel_workers + 1 threads (the workers a
 * parallel query could take, and its leader), so that the administrator's
 * cap on parallelism holds for fits too.
 *
 * IDENTIFICATION
 *	  src/cpu_threads_setting.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"
#include "cpu_threads_setting.h"

#include <unistd.h>

#include "cpu_threads.h"
#include "miscadmin.h"
#include "utils/guc.h"

static int	gc_cpu_threads_guc = 0;

void
gc_cpu_threads_init(void)
{
	DefineCustomIntVariable("gpuclust.cpu_threads",
							"Threads a fit on the CPU may use (0: the machine's cores).",
							"Never more than max_parallel_workers + 1; the model is the same "
							"for any number.",
							&gc_cpu_threads_guc, 0, 0, GC_CPU_MAX_THREADS,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

int
gc_cpu_threads_setting(void)
{
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int			wanted = gc_cpu_threads_guc > 0 ? gc_cpu_threads_guc : (int) (cores > 1 ? cores : 1);
	int			cap = max_parallel_workers + 1;

	if (wanted > cap)
		wanted = cap;
	if (wanted > GC_CPU_MAX_THREADS)
		wanted = GC_CPU_MAX_THREADS;
	return wanted > 0 ? wanted : 1;
}
