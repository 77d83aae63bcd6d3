/*-------------------------------------------------------------------------
 *
 * cpu_threads_setting.h
 *	  gpuclust.cpu_threads (cpu_threads_setting.c)
 *
 * IDENTIFICATION
 *	  src/cpu_threads_setting.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CPU_THREADS_SETTING_H
#define GC_CPU_THREADS_SETTING_H

extern void gc_cpu_threads_init(void);
/* The threads a CPU fit of this session may use: at least 1 */
extern int	gc_cpu_threads_setting(void);

#endif							/* GC_CPU_THREADS_SETTING_H */
