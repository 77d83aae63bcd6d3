/*-------------------------------------------------------------------------
 *
 * tensor/wgmma_kernels.cu
 *	  The Hopper labeling pass: whether the device runs it, the tensor
 *	  maps of its operands, and its launches (a persistent grid, one block
 *	  of the kernel in tensor/wgmma_tiles.cuh per multiprocessor): the 16-bit
 *	  pass and the screen (on TF32 or scaled fp16), whose pass over rows of
 *	  several stages and k past one centroid tile runs in groups of
 *	  centroid tiles and a merge (H100, n = 1M, k = 1,000 and 1,024: 1.93-1.95 against
 *	  1.98-1.99 ms an iteration at d = 128, 11.84-11.86 against
 *	  12.06-12.07 at d = 768; at d = 32, one stage a tile, 0.350 against
 *	  0.334, so not there; bench/results/screen-wgmma-h100.md).  Built for
 *	  sm_90a alone (the Makefile's WGMMA_FLAGS); other devices take the
 *	  mma.sync kernels, which gc_wgmma_usable makes the labeler choose.
 *
 * IDENTIFICATION
 *	  cuda/tensor/wgmma_kernels.cu
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "tensor/wgmma_tiles.cuh"
#include "cuda_check.cuh"

/* The driver's tensor-map encoder, found through the runtime (no -lcuda) */
typedef CUresult (*EncodeTiled) (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
								 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
								 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
								 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static EncodeTiled
encoder(void)
{
	static EncodeTiled fn = NULL;

	if (fn == NULL)
	{
		void	   *p = NULL;
		cudaDriverEntryPointQueryResult found;

#if CUDART_VERSION >= 12050
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
											 cudaEnableDefault, &found) == cudaSuccess &&
			found == cudaDriverEntryPointSuccess)
			fn = (EncodeTiled) p;
#else
		if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault,
									&found) == cudaSuccess &&
			found == cudaDriverEntryPointSuccess)
			fn = (EncodeTiled) p;
#endif
	}
	return fn;
}

bool
gc_wgmma_usable(int row_bytes)
{
	int			device = 0,
				major = 0,
				minor = 0;
	cudaFuncAttributes attr;

	if (row_bytes % WG_ROW_BYTES != 0 || cudaGetDevice(&device) != cudaSuccess ||
		cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
		cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
		return false;
	if (major != 9 || minor != 0 || encoder() == NULL)
		return false;
	/* the build holds sm_90a code (an older nvcc may have left it out) */
	if (cudaFuncGetAttributes(&attr, assign_points_wgmma_kernel<__nv_bfloat16, false>) !=
		cudaSuccess)
	{
		cudaGetLastError();
		return false;
	}
	return true;
}

static size_t
element_bytes(WgmmaType type)
{
	return type == WGMMA_TF32 ? 4 : 2;
}

/* Rows of width ld as a tensor map whose box is WG_ROW_BYTES of box_rows rows */
static GcStatus
describe_rows(CUtensorMap *map, const void *base, int64_t rows, int ld, int box_rows,
			  WgmmaType type, GcError *err)
{
	size_t		bytes = element_bytes(type);
	cuuint64_t	dims[2] = {(cuuint64_t) ld, (cuuint64_t) (rows > 0 ? rows : 1)};
	cuuint64_t	strides[1] = {(cuuint64_t) ld * bytes};
	cuuint32_t	box[2] = {(cuuint32_t) (WG_ROW_BYTES / bytes), (cuuint32_t) box_rows};
	cuuint32_t	steps[2] = {1, 1};
	CUtensorMapDataType data = type == WGMMA_TF32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 :
		type == WGMMA_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	EncodeTiled fn = encoder();
	CUresult	r;

	if (fn == NULL)
		return gc_fail(err, GC_ERR_DEVICE, "the driver has no cuTensorMapEncodeTiled");
	r = fn(map, data, 2, const_cast<void *>(base), dims, strides, box, steps,
		   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		return gc_fail(err, GC_ERR_DEVICE, "cuTensorMapEncodeTiled failed (%d) for rows of %d",
					   (int) r, ld);
	return GC_OK;
}

GcStatus
gc_wgmma_describe(WgmmaOperands *ops, const void *x, int64_t n, const void *c, int k, int ld,
				  WgmmaType type, GcError *err)
{
	ops->type = type;
	ops->ld = ld;
	if (describe_rows(&ops->xmap, x, n, ld, WG_BM, type, err) != GC_OK)
		return err->status;
	return describe_rows(&ops->cmap, c, k, ld, WG_BN, type, err);
}

int
gc_wgmma_padded_k(int k)
{
	return (k + WG_BN - 1) / WG_BN * WG_BN;
}

GcStatus
launch_wgmma_half_norms(const float *cnorm, int k, float *half_norms, cudaStream_t stream,
						GcError *err)
{
	int			padded = gc_wgmma_padded_k(k);

	half_norms_kernel<<<(padded + 255) / 256, 256, 0, stream>>>(cnorm, k, padded, half_norms);
	GC_CUDA_LAUNCHED("half_norms", err);
	return GC_OK;
}

template <typename Elem, bool SCREEN>
static GcStatus
launch_elem(const WgmmaOperands *ops, const WgmmaArgs &args, cudaStream_t stream, GcError *err)
{
	/*
	 * The shared-memory attribute belongs to a device's context: a bit per
	 * device configured, as the GPU service launches on several devices
	 * from several threads (configuring twice is harmless)
	 */
	static unsigned long long configured = 0;
	int64_t		row_tiles = (args.n + WG_BM - 1) / WG_BM;
	int			device = 0,
				blocks = 0;
	unsigned long long bit;

	GC_CUDA_TRY(cudaGetDevice(&device), err);
	if (gc_cuda_multiprocessors(&blocks, err) != GC_OK)
		return err->status;
	bit = device < GC_CUDA_MAX_DEVICES ? 1ULL << device : 0;
	if (bit == 0 || (__atomic_load_n(&configured, __ATOMIC_ACQUIRE) & bit) == 0)
	{
		GC_CUDA_TRY(cudaFuncSetAttribute(assign_points_wgmma_kernel<Elem, SCREEN>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 WG_SMEM_BYTES), err);
		__atomic_fetch_or(&configured, bit, __ATOMIC_RELEASE);
	}
	assign_points_wgmma_kernel<Elem, SCREEN>
		<<<(unsigned) (row_tiles < blocks ? row_tiles : blocks), WG_THREADS, WG_SMEM_BYTES,
		stream>>>(ops->xmap, ops->cmap, args);
	GC_CUDA_LAUNCHED("assign_points_wgmma", err);
	return GC_OK;
}

/* The arguments of a pass over n rows from first; an error when the kernel cannot take them */
static GcStatus
pass_args(WgmmaArgs *args, const float *half_norms, int64_t first, int64_t n, int ld,
		  WgmmaType type, int k, GcError *err)
{
	memset(args, 0, sizeof(*args));
	if (first + n > INT32_MAX - WG_BM)
		return gc_fail(err, GC_ERR_RANGE, "too many rows for the Hopper kernel's tensor map");
	if (ld * element_bytes(type) % WG_ROW_BYTES != 0)
		return gc_fail(err, GC_ERR_DEVICE, "the Hopper kernel needs rows of a multiple of %d bytes",
					   WG_ROW_BYTES);
	args->half_norms = half_norms;
	args->first = first;
	args->n = n;
	args->ld = ld;
	args->k = k;
	return GC_OK;
}

GcStatus
launch_assign_points_wgmma(const WgmmaOperands *ops, const float *half_norms, int64_t first,
						   int64_t n, int ld, int k, int32_t *labels, unsigned long long *changed,
						   cudaStream_t stream, GcError *err)
{
	WgmmaArgs	args;

	if (n == 0)
		return GC_OK;
	if (pass_args(&args, half_norms, first, n, ld, ops->type, k, err) != GC_OK)
		return err->status;
	args.labels = labels;
	args.changed = changed;
	if (ops->type == WGMMA_BF16)
		return launch_elem<__nv_bfloat16, false>(ops, args, stream, err);
	if (ops->type == WGMMA_FP16)
		return launch_elem<__half, false>(ops, args, stream, err);
	return gc_fail(err, GC_ERR_DEVICE, "the 16-bit Hopper pass was given floats");
}

bool
gc_wgmma_screen_in_groups(int row_bytes, int k)
{
	return row_bytes > WG_ROW_BYTES && k > WG_BN;
}

GcStatus
launch_screen_points_wgmma(const WgmmaOperands *ops, const float *half_norms, int64_t first,
						   const TensorArgs *screen, cudaStream_t stream, GcError *err)
{
	WgmmaArgs	args;

	if (screen->rows == 0)
		return GC_OK;
	if (ops->type == WGMMA_BF16)
		return gc_fail(err, GC_ERR_DEVICE, "the Hopper screen was given bf16 operands");
	if (pass_args(&args, half_norms, first, screen->rows, ops->ld, ops->type, screen->k,
				  err) != GC_OK)
		return err->status;
	args.screen = *screen;
	if (gc_wgmma_screen_in_groups(ops->ld * (int) element_bytes(ops->type), screen->k))
	{
		int			ctiles = (screen->k + WG_BN - 1) / WG_BN;

		if (screen->partials == NULL)
			return gc_fail(err, GC_ERR_DEVICE, "the Hopper screen in groups was given no partials");
		args.screen.tiles_per_group = (ctiles + GC_TENSOR_MAX_GROUPS - 1) / GC_TENSOR_MAX_GROUPS;
		args.screen.groups = (ctiles + args.screen.tiles_per_group - 1) /
			args.screen.tiles_per_group;
	}
	if ((ops->type == WGMMA_FP16 ? launch_elem<__half, true>(ops, args, stream, err) :
		 launch_elem<float, true>(ops, args, stream, err)) != GC_OK)
		return err->status;
	if (args.screen.groups > 1)
	{
		merge_groups_kernel<GC_KERNEL_TENSOR_TF32><<<1024, 256, 0, stream>>>(args.screen);
		GC_CUDA_LAUNCHED("merge_groups", err);
	}
	return GC_OK;
}
