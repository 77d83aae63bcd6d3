/*-------------------------------------------------------------------------
 *
 * cpu_vectors.h
 *	  The vector types of the CPU passes' kernels (GCC's and clang's vector
 *	  extensions): four and eight doubles, and the 64-bit masks their
 *	  comparisons give.  Functions using them are cloned for the vector
 *	  units (GC_SIMD_CLONES).
 *
 * IDENTIFICATION
 *	  engine/cpu_vectors.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_CPU_VECTORS_H
#define GC_CPU_VECTORS_H

#include <stdint.h>

typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4di __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8di __attribute__((vector_size(64)));

#endif							/* GC_CPU_VECTORS_H */
