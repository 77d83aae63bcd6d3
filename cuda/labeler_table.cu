/*-------------------------------------------------------------------------
 *
 * labeler_table.cu
 *	  The GPU driver's labeling decisions, in one place: the table of
 *	  Lloyd's labelers, by GcKernel; the choice of the kernel for a fit
 *	  from its precision, its shape and the kernel the parameters force
 *	  (benchmarks and tests; GC_KERNEL_AUTO otherwise); whether a kernel's
 *	  iterations may be shared with pruned labeling (gc_kernel_is_simt;
 *	  when to prune is the hybrid's, engine/kmeans_hybrid.c); and whether
 *	  they label with drift bounds (gc_bounds_may_pay).  A new labeler
 *	  gets a GcKernel, a file of its own (labeler_*.cu) and a row here.
 *
 * IDENTIFICATION
 *	  cuda/labeler_table.cu
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_session.cuh"
#include "tensor/wgmma_kernels.cuh"

/*
 * Kernel choice for float32, measured on an H100 (bench/results/): the
 * tensor cores pay from k = 128 (KDD Cup, d = 38: k = 23 tiled 0.19 ms of
 * labeling, k = 100 3xTF32 on heavy-tailed data 3.5 ms, mostly exact
 * re-checks) and from d = TENSOR_MIN_D.  The TF32 screen costs about 15
 * instructions per distance whatever d (the top-two epilogue, operand
 * loads, accumulator starts) at 55% of the issue rate (128 registers:
 * 16 warps per multiprocessor); the register kernel 2 d + 3 at 82%.  At
 * d = 8 the register kernel wins (n = 4M, k = 400: 1.25 against 1.39 ms
 * of labeling); at d = 12 the screen (1.70 against 2.40 ms; d = 12 to 16
 * share rows of 16 floats), and at d = 32 (245,760 points, k = 1024: 0.35
 * against 0.83 ms).  Below, the register kernel (d <= 32) or the tiled
 * one.
 */
#define TENSOR_MIN_K 128
#define TENSOR_MIN_D 12

static const Labeler *const labelers[GC_KERNEL_COUNT] = {
	NULL,						/* GC_KERNEL_AUTO: chosen first */
	&gc_labeler_simt,			/* GC_KERNEL_REGISTER */
	&gc_labeler_simt,			/* GC_KERNEL_TILED */
	&gc_labeler_tensor_exact,	/* GC_KERNEL_TENSOR_SCREENED */
	&gc_labeler_tensor_exact,	/* GC_KERNEL_TENSOR_3XTF32 */
	&gc_labeler_tensor_tf32,	/* GC_KERNEL_TENSOR_TF32 */
	&gc_labeler_bf16,			/* GC_KERNEL_TENSOR_BF16 */
	&gc_labeler_float64,		/* GC_KERNEL_FLOAT64 */
	&gc_labeler_fp16,			/* GC_KERNEL_TENSOR_FP16 */
	&gc_labeler_bf16_wgmma,		/* GC_KERNEL_TENSOR_BF16_WGMMA */
	&gc_labeler_fp16_wgmma,		/* GC_KERNEL_TENSOR_FP16_WGMMA */
	&gc_labeler_tensor_exact,	/* GC_KERNEL_TENSOR_SCREENED_WGMMA */
	&gc_labeler_tensor_exact,	/* GC_KERNEL_TENSOR_SCREENED_FP16 */
};

const Labeler *
gc_labeler(GcKernel kernel)
{
	return labelers[kernel];
}

bool
gc_kernel_is_simt(GcKernel kernel)
{
	return kernel == GC_KERNEL_REGISTER || kernel == GC_KERNEL_TILED;
}

/*
 * Whether Lloyd's iterations label with drift bounds: under algorithm
 * auto, with the register kernel (the other kernels' shapes are wide,
 * where bounds decide little, or tensor-core, where a distance is cheap),
 * from k = GC_BOUNDED_MIN_K (labeler_bounded.cu has the measurements)
 */
#define GC_BOUNDED_MIN_K 100

bool
gc_bounds_may_pay(GcAlgorithm algorithm, GcKernel kernel, int k)
{
	return algorithm == GC_ALGORITHM_AUTO && kernel == GC_KERNEL_REGISTER &&
		k >= GC_BOUNDED_MIN_K;
}

bool
gc_kernel_is_screen(GcKernel kernel)
{
	return kernel == GC_KERNEL_TENSOR_SCREENED || kernel == GC_KERNEL_TENSOR_SCREENED_WGMMA ||
		kernel == GC_KERNEL_TENSOR_SCREENED_FP16;
}

/*
 * The precision that precision auto tries first: fp16 where float32 would
 * take the tensor cores too (the engine's check then keeps it or falls
 * back), else float32
 */
GcPrecision
gc_auto_precision(int d, int k)
{
	return k >= TENSOR_MIN_K && d >= TENSOR_MIN_D ? GC_PRECISION_FP16 : GC_PRECISION_FLOAT32;
}

/*
 * A 16-bit precision's kernel: the Hopper one (wgmma, tensor/wgmma_kernels.cu)
 * where the device runs it and the rows are a multiple of 64 values
 * (d > 32), unless the mma.sync one is forced.  At d = 768, k = 1,000 on
 * an H100 the wgmma pass labels bf16 2.2 times as fast (3.82 against 8.48
 * ms an iteration, bench/results/wgmma-h100.jsonl).
 */
static GcKernel
half_kernel(GcKernel mma, GcKernel wgmma, GcKernel forced, int d)
{
	if (forced != mma && gc_wgmma_usable(2 * gc_tensor_row_width(d, true)))
		return wgmma;
	return mma;
}

/*
 * The exact float32 labeler's screen: on Hopper's wgmma where the device
 * runs it and the rows are whole 128-byte column steps (d > 32), unless
 * the mma.sync one is forced; on scaled fp16 operands there (the TF32
 * screen's bound at twice its rate, tensor/labeler_fp32.cu) where that is
 * forced and rows of 16-bit values are whole steps too (d > 32).  On an
 * H200, 1M rows, the fp16 screen's iteration against the TF32 one's:
 * 0.81x at d = 64 and 128, k = 1,024, 0.77x at d = 96, k = 4,096
 * (bench/results/screen-fp16-h200.md); it becomes auto's choice once the
 * GPU has run its fix for fits labelled in several chunks.  The TF32
 * wgmma screen against mma.sync: bench/results/screen-wgmma-h100.md.
 */
static GcKernel
screen_kernel(GcKernel forced, int d)
{
	if (forced == GC_KERNEL_TENSOR_SCREENED || forced == GC_KERNEL_TENSOR_3XTF32)
		return GC_KERNEL_TENSOR_SCREENED;
	if (forced == GC_KERNEL_TENSOR_SCREENED_FP16 &&
		gc_wgmma_usable(2 * gc_tensor_row_width(d, true)))
		return GC_KERNEL_TENSOR_SCREENED_FP16;
	if (gc_wgmma_usable(4 * gc_tensor_row_width(d, false)))
		return GC_KERNEL_TENSOR_SCREENED_WGMMA;
	return GC_KERNEL_TENSOR_SCREENED;
}

/* The exact float32 labeler's screen for rows of d values, as auto picks it */
GcKernel
gc_exact_screen_kernel(int d)
{
	return screen_kernel(GC_KERNEL_AUTO, d);
}

/*
 * The Lloyd labeling kernel for this precision and shape.  A forced
 * float32 kernel (params->kernel) lets the benchmarks measure one against
 * the other in the same run: register or tiled, the SIMT kernel for d;
 * tensor_screened or tensor_3xtf32, the TF32 screen on mma.sync;
 * tensor_screened_wgmma and tensor_screened_fp16, the screen on wgmma
 * where the device runs it.
 */
GcKernel
gc_choose_kernel(const GcKmeansParams *params, int d, int k)
{
	GcKernel	simt = d <= GC_REGISTER_MAX_DIM ? GC_KERNEL_REGISTER : GC_KERNEL_TILED;

	if (params->precision == GC_PRECISION_FLOAT64)
		return GC_KERNEL_FLOAT64;
	if (params->precision == GC_PRECISION_TF32)
		return GC_KERNEL_TENSOR_TF32;
	if (params->precision == GC_PRECISION_BF16)
		return half_kernel(GC_KERNEL_TENSOR_BF16, GC_KERNEL_TENSOR_BF16_WGMMA, params->kernel, d);
	if (params->precision == GC_PRECISION_FP16)
		return half_kernel(GC_KERNEL_TENSOR_FP16, GC_KERNEL_TENSOR_FP16_WGMMA, params->kernel, d);
	switch (params->kernel)
	{
		case GC_KERNEL_REGISTER:
		case GC_KERNEL_TILED:
			return simt;
		case GC_KERNEL_TENSOR_SCREENED:
		case GC_KERNEL_TENSOR_3XTF32:
		case GC_KERNEL_TENSOR_SCREENED_WGMMA:
		case GC_KERNEL_TENSOR_SCREENED_FP16:
			return screen_kernel(params->kernel, d);
		case GC_KERNEL_TENSOR_TF32:
		case GC_KERNEL_FLOAT64:
			return params->kernel;
		case GC_KERNEL_TENSOR_BF16:
		case GC_KERNEL_TENSOR_BF16_WGMMA:
			return half_kernel(GC_KERNEL_TENSOR_BF16, GC_KERNEL_TENSOR_BF16_WGMMA,
							   params->kernel, d);
		case GC_KERNEL_TENSOR_FP16:
		case GC_KERNEL_TENSOR_FP16_WGMMA:
			return half_kernel(GC_KERNEL_TENSOR_FP16, GC_KERNEL_TENSOR_FP16_WGMMA,
							   params->kernel, d);
		default:
			break;
	}
	return k >= TENSOR_MIN_K && d >= TENSOR_MIN_D ? screen_kernel(params->kernel, d) : simt;
}
