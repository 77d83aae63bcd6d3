/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  The differences between the PostgreSQL versions gpuclust builds
 *	  against (15 to 18), in one place, as pgvector and PostGIS keep
 *	  theirs: every other file is written once, for all of them.
 *
 * - 18 removed the suffix pg_attribute_noreturn() (C11 _Noreturn became
 *   a prefix, pg_noreturn); GC_NORETURN is the compiler attribute both
 *   accept as a suffix.
 * - 18 changed pg_b64_encode/decode to take uint8 buffers (char before):
 *   gc_b64_encode/decode pass the bytes through void *, which C converts
 *   to either.
 * - 17 moved a backend's local transaction id into PGPROC.vxid
 *   (GC_PROC_LXID) and replaced the backend id (1-based,
 *   storage/backendid.h) with the process number (0-based,
 *   storage/procnumber.h): GC_MY_PROC_INDEX is this backend's 0-based
 *   index among MaxBackends.
 * - 17 added the DSM registry (GetNamedDSMSegment), which gives
 *   extensions shared memory without shared_preload_libraries
 *   (GC_HAVE_DSM_REGISTRY).
 * - 16 moved the executor's permission checks into RTEPermissionInfo
 *   nodes (ExecCheckPermissions over the plan's permInfos; 15's
 *   ExecCheckRTPerms reads them from the range table):
 *   gc_exec_check_permissions(plan) checks a PlannedStmt's without
 *   raising an error (needs executor/executor.h).
 * - 16 keeps GUC extras in its own memory (guc_malloc, guc_free); 15
 *   frees them with free() (gc_guc_malloc).
 *
 * IDENTIFICATION
 *	  src/pg_compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_PG_COMPAT_H
#define GC_PG_COMPAT_H

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "gpuclust builds against PostgreSQL 15 to 18"
#endif

#define GC_NORETURN __attribute__((noreturn))

#if PG_VERSION_NUM >= 170000
#define GC_PROC_LXID(proc) ((proc)->vxid.lxid)
#define GC_HAVE_DSM_REGISTRY 1
#else
#define GC_PROC_LXID(proc) ((proc)->lxid)
#define GC_HAVE_DSM_REGISTRY 0
#endif

/* A GUC's extra: guc_malloc'd from 16 (freed with guc_free), malloc'd before */
#if PG_VERSION_NUM >= 160000
#define gc_guc_malloc(size) guc_malloc(LOG, (size))
#else
#define gc_guc_malloc(size) malloc(size)
#endif

/* Whether the caller may read what a PlannedStmt reads (no error raised) */
#if PG_VERSION_NUM >= 160000
#define gc_exec_check_permissions(plan) \
	ExecCheckPermissions((plan)->rtable, (plan)->permInfos, false)
#else
#define gc_exec_check_permissions(plan) ExecCheckRTPerms((plan)->rtable, false)
#endif

#define gc_b64_encode(src, len, dst, dstlen) \
	pg_b64_encode((void *) (src), (len), (void *) (dst), (dstlen))
#define gc_b64_decode(src, len, dst, dstlen) \
	pg_b64_decode((void *) (src), (len), (void *) (dst), (dstlen))

/* The varlena macros (VARATT_IS_EXTERNAL_ONDISK, ...): their own header from 16 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#define GC_MY_PROC_INDEX ((int) MyProcNumber)
#else
#include "storage/backendid.h"
#define GC_MY_PROC_INDEX ((int) MyBackendId - 1)
#endif

#endif							/* GC_PG_COMPAT_H */
