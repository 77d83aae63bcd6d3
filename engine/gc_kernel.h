/*-------------------------------------------------------------------------
 *
 * gc_kernel.h
 *	  GcKernel: the GPU labeling kernels by name, from the choice to the
 *	  launch (the choice itself is cuda/labeler_table.cu's).
 *
 * IDENTIFICATION
 *	  engine/gc_kernel.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KERNEL_H
#define GC_KERNEL_H


#ifdef __cplusplus
extern "C"
{
#endif

/*
 * A GPU labeling kernel, from the choice (params.kernel, AUTO unless a
 * benchmark or a test forces one) to the launch.  AUTO picks by precision
 * and shape (cuda/labeler_table.cu); a forced kernel is honoured where the
 * precision is float32: REGISTER and TILED ask for the SIMT kernel
 * (register up to d = 32, tiled above), TENSOR_SCREENED and TENSOR_3XTF32
 * for the TF32 screen on mma.sync, TENSOR_SCREENED_WGMMA for it on Hopper's
 * wgmma (where the device runs it; AUTO's choice there),
 * TENSOR_SCREENED_FP16 for the same screen and bound on scaled fp16
 * operands there (rows past 32 values), the others for themselves.  Under precision bf16,
 * TENSOR_BF16 asks for the mma.sync kernel and TENSOR_BF16_WGMMA for the
 * Hopper one (where the device runs it).  The CPU ignores it.
 */
typedef enum GcKernel
{
	GC_KERNEL_AUTO = 0,
	GC_KERNEL_REGISTER,			/* SIMT, the point in registers (d <= 32) */
	GC_KERNEL_TILED,			/* SIMT, centroid tiles in shared memory */
	GC_KERNEL_TENSOR_SCREENED,	/* TF32 screen, 3xTF32 and exact checks */
	GC_KERNEL_TENSOR_3XTF32,	/* 3xTF32 and exact checks (the screen's stand-in) */
	GC_KERNEL_TENSOR_TF32,		/* TF32 alone (precision tf32) */
	GC_KERNEL_TENSOR_BF16,		/* bf16 alone (precision bf16) */
	GC_KERNEL_FLOAT64,			/* double (precision float64) */
	GC_KERNEL_TENSOR_FP16,		/* fp16 alone (precision fp16) */
	GC_KERNEL_TENSOR_BF16_WGMMA,	/* bf16 on Hopper's wgmma (precision bf16, sm_90a) */
	GC_KERNEL_TENSOR_FP16_WGMMA,	/* fp16 on Hopper's wgmma (precision fp16, sm_90a) */
	GC_KERNEL_TENSOR_SCREENED_WGMMA,	/* the TF32 screen on Hopper's wgmma (sm_90a) */
	GC_KERNEL_TENSOR_SCREENED_FP16, /* the screen on wgmma, scaled fp16 operands (sm_90a) */
	GC_KERNEL_COUNT
} GcKernel;

/* The kernel's name as results and models report it ("register", ...) */
extern const char *gc_kernel_name(GcKernel kernel);

#ifdef __cplusplus
}
#endif

#endif							/* GC_KERNEL_H */
