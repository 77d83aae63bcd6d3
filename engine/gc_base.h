/*-------------------------------------------------------------------------
 *
 * gc_base.h
 *	  The engine's basics: the limits of the SQL surface, GcStatus and
 *	  GcError (the engine never throws), the SIMD clones attribute, the
 *	  clock and thread creation.
 *
 * IDENTIFICATION
 *	  engine/gc_base.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_BASE_H
#define GC_BASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Limits of the SQL surface, checked by the glue. */
#define GC_MAX_DIM		65536
#define GC_MAX_K		1000000
/* Largest coordinate magnitude: squared distances stay finite below it */
#define GC_MAX_MAGNITUDE 1.0e150
/* Largest row weight (integers stay exact in double below it) */
#define GC_MAX_WEIGHT	9007199254740992.0

typedef enum GcStatus
{
	GC_OK = 0,
	GC_INTERRUPTED,				/* the interrupt hook asked to stop */
	GC_ERR_HOST_MEMORY,			/* malloc or pinned allocation failed */
	GC_ERR_DEVICE_MEMORY,		/* cudaMalloc failed */
	GC_ERR_DEVICE,				/* any other CUDA failure */
	GC_ERR_NO_DEVICE,			/* no usable GPU */
	GC_ERR_RANGE				/* values too large to square safely */
} GcStatus;

typedef struct GcError
{
	GcStatus	status;
	char		message[256];	/* what failed, e.g. the CUDA call and error name */
} GcError;

/*
 * On a function whose loops vectorise (exact operations only): clones for
 * AVX-512 and AVX2 beside the baseline build, one chosen when the library
 * loads (GCC 12 or later on x86-64 with glibc, whose ifunc picks the clone;
 * elsewhere the baseline alone)
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && \
	defined(__GLIBC__)
#define GC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GC_SIMD_CLONES
#endif

/* Records a failure in err (if not already set) and returns status. */
extern GcStatus gc_fail(GcError *err, GcStatus status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Monotonic clock in milliseconds. */
extern double gc_now_ms(void);

/*
 * pthread_create with every signal blocked in the new thread (its result:
 * 0 or an error number)
 */
extern int	gc_thread_create(pthread_t *thread, void *(*start) (void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif							/* GC_BASE_H */
