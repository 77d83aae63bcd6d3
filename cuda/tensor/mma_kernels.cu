/*-------------------------------------------------------------------------
 *
 * tensor/mma_kernels.cu
 *	  Nearest-centroid labeling on tensor cores, for large k: the distance
 *	  ||c||^2 - 2 x.c as a matrix product X C^T computed in 128 x 128 tiles
 *	  with mma.sync (TF32 m16n8k8, bf16 or fp16 m16n8k16, FP32 accumulation),
 *	  operands brought into shared memory with cp.async, and the arg-min
 *	  fused into the epilogue of every centroid tile, so the n x k distance
 *	  matrix is never written (the scheme of FAISS, cuVS's fused L2 nearest
 *	  neighbour and Flash-KMeans).
 *
 *	  Three layouts, the first that two blocks per multiprocessor can hold
 *	  (choose_layout):
 *	  - all: a block loads its 128 points and every centroid (with their
 *		norms) once, whole rows; its loop is products and epilogues only
 *		(small d and k);
 *	  - resident: the 128 points stay in shared memory while the centroid
 *		tiles stream past in column steps, so the data cross device memory
 *		once per labeling; the centroids, small, come from L2;
 *	  - streaming: points and centroids both stream through in 128-byte
 *		column steps (wide rows, or a single centroid tile); a pass over
 *		every row splits the centroid tiles into groups of blocks that read
 *		the same points side by side and merges their top twos after, and
 *		a pass over a list too short to fill the multiprocessors splits
 *		them so that it does (list_groups).
 *	  Column steps are 128 bytes where the row width allows, 64 or 32
 *	  (8 floats) otherwise, so that small d wastes no products.
 *
 *	  Four modes:
 *	  - TF32: one product per step; about 1e-3 relative error in x.c.
 *	  - 3xTF32: each operand split into a TF32 "big" part and a TF32
 *		remainder, and big*big + big*small + small*big accumulated, which
 *		recovers float32 accuracy on the tensor cores (as CUTLASS does).
 *	  - BF16: operands converted to bfloat16 once (the data at upload, the
 *		centroids after each update), with the norms of the rounded
 *		centroids: twice TF32's rate, about 4e-3 relative error.
 *	  - FP16: the same with float16 operands (10-bit mantissa, as TF32's:
 *		about 1e-3), the centred rows and centroids scaled by one power of
 *		two into fp16's range (tensor/labeler_16bit.cu): labels do not change
 *		with a common scale.
 *	  TF32, BF16 and FP16 start each accumulator at -||c||^2 / 2 and keep the
 *	  largest x.c - ||c||^2 / 2, which saves the epilogue a multiply-add per
 *	  distance; 3xTF32 keeps ||c||^2 - 2 x.c with one rounding at the end.
 *
 *	  ||c||^2 - 2 x.c cancels badly when clusters are small against their
 *	  distance from the centre of the data, so the kernel keeps the two
 *	  smallest values per point; where their gap is within the error bound
 *	  of the product, eps (||x|| + C)^2 with C the largest ||c||, the point
 *	  is listed, and refine_labels recomputes its nearest centroid exactly
 *	  (double, no FMA, as the CPU reference does).
 *
 *	  Exact labels at TF32 speed (the float32 default for large k): a TF32 pass
 *	  screens every point (on Hopper, for rows of whole 128-byte column steps,
 *	  the wgmma screen of tensor/wgmma_kernels.cu); the doubtful ones, a few
 *	  percent on clustered data, are labelled again by the 3xTF32 kernel, which
 *	  reads their rows through the screen's list, and its own doubtful points go
 *	  to refine_labels.  The screen's bound is in distances rather than squared
 *	  distances: rounding x and c to TF32 moves |x - c| by at most r(c) = 2^-11
 *	  (|x| + |c|), so with the norms of the rounded centroids the screen's
 *	  distances are exact distances between moved points, and the best centroid
 *	  a is certain when the second is more than r(a) + r(C) further, C the
 *	  largest centroid; float32 accumulation (with the norm as its first term)
 *	  adds a term in (|x| + |C|)^2.  The wgmma screen rounds alike (its rows in
 *	  shared memory, its centroids beforehand) and keeps the bound; so does
 *	  its fp16 form, whose rows and centroids are scaled into fp16's range
 *	  and rounded with the same unit (tensor/labeler_fp32.cu).  The
 *	  precision options tf32, bf16 and fp16 skip all refinement: they trade
 *	  exactness for speed by request (and the fit checks them on a sample,
 *	  engine/precision_check.c).
 *
 *	  Operands are rows of width ld (gc_tensor_row_width): the centred float32
 *	  data (the data themselves when d is already a multiple of 8) or their bf16
 *	  or fp16 copy, and centroid rows padded to a multiple of 128 with zeros;
 *	  point rows past the end are clamped to the last row, whose results are
 *	  discarded, and centroid columns past k start at -FLT_MAX (or are skipped a
 *	  warp's 8-column slice at a time).
 *
 *	  This file chooses the layout and launches the passes (the screen,
 *	  3xTF32 over its list, the exact check); the kernel templates are in
 *	  tensor/mma_tiles.cuh, and the operands' norms and padding and the exact
 *	  check (refine_labels) in tensor/operands.cu.  The labelers that own
 *	  the operands are tensor/labeler_fp32.cu and tensor/labeler_16bit.cu.
 *
 * IDENTIFICATION
 *	  cuda/tensor/mma_kernels.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "tensor/mma_tiles.cuh"
#include "tensor/wgmma_kernels.cuh"


int
gc_tensor_row_width(int d, bool bf16)
{
	/* 32-byte steps up to d = 32, 128-byte steps above */
	int			align = d <= 32 ? (bf16 ? 16 : 8) : (bf16 ? 64 : 32);

	return (d + align - 1) / align * align;
}

/* Shared memory of one block (opt-in limit), and of a multiprocessor */
static int
shared_memory(bool per_block)
{
	int			device = 0,
				block_bytes = 0,
				sm_bytes = 0;

	/* asked each time, not cached: the GPU service runs fits on several devices from several threads */
	cudaGetDevice(&device);
	if (cudaDeviceGetAttribute(&block_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin,
							   device) != cudaSuccess || block_bytes <= 0)
		block_bytes = 48 * 1024;
	if (cudaDeviceGetAttribute(&sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
							   device) != cudaSuccess || sm_bytes <= 0)
		sm_bytes = block_bytes;
	return per_block ? block_bytes : sm_bytes;
}

/* Shared memory of a layout: the row list, the resident tiles, the stages */
static size_t
tile_bytes(int elem_bytes, int layout, int ksb, int ld, int k)
{
	size_t		row = (size_t) ld * elem_bytes + TPAD_BYTES;
	size_t		staged_row = (size_t) ksb + TPAD_BYTES;
	size_t		kpad = (size_t) (k + TN - 1) / TN * TN;

	if (layout == LAYOUT_ALL)
		return TM * sizeof(int32_t) + TM * row + kpad * (row + sizeof(float));
	return TM * sizeof(int32_t) + (layout == LAYOUT_RESIDENT ? TM * row : 0) +
		(size_t) TSTAGES * ((layout == LAYOUT_RESIDENT ? TN : TM + TN) * staged_row +
							TN * sizeof(float));
}

typedef struct TensorLayout
{
	int			layout;
	int			ksb;
	size_t		bytes;
} TensorLayout;

static bool
try_layout(int elem_bytes, int layout, int ksb, int ld, int k, size_t limit, TensorLayout *out)
{
	size_t		bytes = tile_bytes(elem_bytes, layout, ksb, ld, k);

	if ((layout != LAYOUT_ALL && ((size_t) ld * elem_bytes) % ksb != 0) || bytes > limit)
		return false;
	out->layout = layout;
	out->ksb = ksb;
	out->bytes = bytes;
	return true;
}

/*
 * The layout of a pass, by what two blocks per multiprocessor can hold
 * (one block, 8 warps, hides too little latency: at n = 1M, d = 768 a
 * resident bf16 tile ran 12.1 ms per iteration against 8.7 streamed):
 * every operand resident, else the point tile resident with the widest
 * column step that divides the row (when more than one centroid tile
 * streams past it), else both streamed; rows too narrow to stream take
 * the resident layouts at one block per multiprocessor.  The benchmarks
 * can ask for streaming (streamed: GcKmeansParams.tensor_streamed).
 */
static bool
choose_layout(int elem_bytes, int ld, int k, bool streamed, TensorLayout *out)
{
	size_t		two = (size_t) shared_memory(false) / 2 - 1024;	/* the runtime's share per block */
	size_t		one = (size_t) shared_memory(true);
	bool		can_stream = ((size_t) ld * elem_bytes) % 128 == 0;

	if (streamed && can_stream)
		return try_layout(elem_bytes, LAYOUT_STREAM, 128, ld, k, one, out);
	if (try_layout(elem_bytes, LAYOUT_ALL, 32, ld, k, two, out))
		return true;
	if (k > TN || !can_stream)
		for (int ksb = 128; ksb >= 32; ksb /= 2)
			if (try_layout(elem_bytes, LAYOUT_RESIDENT, ksb, ld, k, two, out))
				return true;
	if (can_stream)
		return try_layout(elem_bytes, LAYOUT_STREAM, 128, ld, k, one, out);
	for (int ksb = 128; ksb >= 32; ksb /= 2)
		if (try_layout(elem_bytes, LAYOUT_RESIDENT, ksb, ld, k, one, out))
			return true;
	return false;
}

/*
 * Whether a pass in this layout splits its centroid tiles into groups: a
 * pass over every row where it streams, a pass over a list also where
 * its points stay resident (a list of a chunk's doubts at 2M x 128,
 * k = 16,384 took 1.6 ms a launch in 4 or 5 blocks on the H200: 26 ms
 * an iteration)
 */
static bool
splits_into_groups(const TensorLayout *layout, int k, bool list)
{
	return (layout->layout == LAYOUT_STREAM || (list && layout->layout == LAYOUT_RESIDENT)) &&
		k > TN;
}

template <int MODE, int LAYOUT, int KSB>
static GcStatus
launch_variant(const TensorArgs &args, size_t bytes, cudaStream_t stream, GcError *err)
{
	/*
	 * The attribute belongs to a device's context: a bit per device
	 * configured, set atomically, as the GPU service's runner threads
	 * launch on several devices at once (configuring twice is harmless)
	 */
	static unsigned long long configured = 0;
	int64_t		blocks = (args.rows + TM - 1) / TM * args.groups;
	int			device = 0;
	unsigned long long bit;

	GC_CUDA_TRY(cudaGetDevice(&device), err);
	bit = device < GC_CUDA_MAX_DEVICES ? 1ULL << device : 0;
	if (bit == 0 || (__atomic_load_n(&configured, __ATOMIC_ACQUIRE) & bit) == 0)
	{
		GC_CUDA_TRY(cudaFuncSetAttribute(assign_points_tensor_kernel<MODE, LAYOUT, KSB>,
										 cudaFuncAttributeMaxDynamicSharedMemorySize,
										 shared_memory(true)), err);
		__atomic_fetch_or(&configured, bit, __ATOMIC_RELEASE);
	}
	if (blocks > INT32_MAX)
		return gc_fail(err, GC_ERR_RANGE, "too many rows for one labeling grid");
	assign_points_tensor_kernel<MODE, LAYOUT, KSB>
		<<<(unsigned) blocks, TTHREADS, bytes, stream>>>(args);
	GC_CUDA_LAUNCHED("assign_points_tensor", err);
	if (args.groups > 1)
	{
		merge_groups_kernel<MODE><<<1024, 256, 0, stream>>>(args);
		GC_CUDA_LAUNCHED("merge_groups", err);
	}
	return GC_OK;
}

/*
 * Groups a streamed pass over a list of rows splits its centroid tiles
 * into: enough that its row tiles fill the multiprocessors (one block
 * each holds all of its shared memory), up to GC_TENSOR_MAX_GROUPS; -1
 * on error.  A block of 3xTF32 over 128 listed rows of d = 768 against
 * k = 1,000 takes about 0.65 ms however few blocks run beside it, and a
 * labeling of blobs lists from a few hundred to 17,000 rows a chunk: on
 * the H100 a list of 7 row tiles took 0.64 ms in 7 blocks and 0.085 ms
 * in 56 (ncu).
 */
static int
list_groups(int64_t rows, GcError *err)
{
	int			sms;
	int64_t		row_tiles = (rows + TM - 1) / TM,
				groups;

	if (gc_cuda_multiprocessors(&sms, err) != GC_OK)
		return -1;
	groups = (sms + row_tiles - 1) / row_tiles;
	return (int) (groups < GC_TENSOR_MAX_GROUPS ? groups : GC_TENSOR_MAX_GROUPS);
}

/*
 * One tensor pass in the layout that suits its rows.  A streamed pass over
 * every row, given space for partials, splits each row tile's centroid
 * tiles into up to GC_TENSOR_MAX_GROUPS groups of consecutive blocks:
 * the groups read the same points at about the same time, so the point
 * tile crosses device memory once rather than once per centroid tile
 * (the rest of its reads hit L2), and a merge kernel combines the groups.
 * Measured on an H100 (n = 1M, d = 768, k = 1000): 3 to 5% per iteration
 * (float32 19.5 -> 19.0 ms, tf32 17.4 -> 16.5, bf16 8.1 -> 8.0); the
 * streamed passes are bound by L2 and the tensor pipes, not by HBM.
 */
template <int MODE>
static GcStatus
launch_pass(TensorArgs args, bool streamed, cudaStream_t stream, GcError *err)
{
	TensorLayout layout;
	int			ctiles = (args.k + TN - 1) / TN;

	if (args.rows == 0)
		return GC_OK;
	if (!choose_layout(sizeof(typename ModeElem<MODE>::T), args.ld, args.k, streamed, &layout))
		return gc_fail(err, GC_ERR_DEVICE,
					   "no tensor-core tile layout for rows of %d values and k = %d",
					   args.ld, args.k);
	args.groups = 1;
	args.tiles_per_group = ctiles;
	if (splits_into_groups(&layout, args.k, args.row_map != NULL) && args.partials != NULL)
	{
		int			groups = GC_TENSOR_MAX_GROUPS;

		if (args.row_map != NULL &&
			(groups = list_groups(args.rows, err)) < 0)
			return err->status;
		args.tiles_per_group = (ctiles + groups - 1) / groups;
		args.groups = (ctiles + args.tiles_per_group - 1) / args.tiles_per_group;
	}
	switch (layout.layout * 1000 + layout.ksb)
	{
		case LAYOUT_ALL * 1000 + 32:
			return launch_variant<MODE, LAYOUT_ALL, 32>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 128:
			return launch_variant<MODE, LAYOUT_RESIDENT, 128>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 64:
			return launch_variant<MODE, LAYOUT_RESIDENT, 64>(args, layout.bytes, stream, err);
		case LAYOUT_RESIDENT * 1000 + 32:
			return launch_variant<MODE, LAYOUT_RESIDENT, 32>(args, layout.bytes, stream, err);
		default:
			return launch_variant<MODE, LAYOUT_STREAM, 128>(args, layout.bytes, stream, err);
	}
}

/*
 * A pass over n rows (row_map NULL) or the n entries of a list, trusting
 * every label; partials, when not NULL, hold n x GC_TENSOR_MAX_GROUPS
 */
static TensorArgs
plain_pass(const void *x, const void *c, const float *cnorm, int64_t n,
		   const int32_t *row_map, int ld, int k, int32_t *labels,
		   unsigned long long *changed, TensorPartial *partials)
{
	TensorArgs	args;

	memset(&args, 0, sizeof(args));
	args.partials = partials;
	args.x = x;
	args.c = c;
	args.cnorm = cnorm;
	args.rows = n;
	args.row_map = row_map;
	args.ld = ld;
	args.k = k;
	args.labels = labels;
	args.changed = changed;
	return args;
}

/* The same, listing into list the points within (eps_sq, eps_lin) of a tie */
static TensorArgs
exact_pass(const void *x, const void *c, const float *cnorm, const TensorRefinement *refine,
		   float eps_sq, float eps_lin, int64_t n, const int32_t *row_map, int ld, int k,
		   int32_t *labels, unsigned long long *changed, int32_t *list,
		   unsigned int *list_count, TensorPartial *partials)
{
	TensorArgs	args = plain_pass(x, c, cnorm, n, row_map, ld, k, labels, changed, partials);

	args.xnorm = refine->xnorm;
	args.radius_bits = refine->cradius_bits;
	args.eps_sq = eps_sq;
	args.eps_lin = eps_lin;
	args.doubtful = list;
	args.doubtful_count = list_count;
	return args;
}

/*
 * kernel GC_KERNEL_TENSOR_TF32: one TF32 pass, every label trusted;
 * GC_KERNEL_TENSOR_3XTF32: 3xTF32 over every point, the doubtful ones
 * listed in refine->doubtful; GC_KERNEL_TENSOR_SCREENED: the TF32 screen,
 * then 3xTF32 over what it doubts, listing what 3xTF32 doubts in
 * refine->exact (refine->count_host holds the screen's count after);
 * GC_KERNEL_TENSOR_SCREENED_WGMMA: the same with the screen on Hopper's
 * wgmma (refine->wgmma_ops: the rows from wgmma_first, read as TF32);
 * GC_KERNEL_TENSOR_SCREENED_FP16: with the screen on wgmma over the
 * rows' scaled fp16 copy, its bound from refine->wgmma_xnorm and the rest.
 * The exact check of the list (launch_refine_labels) is the caller's.
 */
GcStatus
launch_assign_points_tensor(const float *xp, const float *cp, const float *cnorm,
							const TensorRefinement *refine, int64_t n, int ld,
							int k, GcKernel kernel, bool streamed, int32_t *labels,
							unsigned long long *changed, TensorPartial *partials,
							cudaStream_t stream, GcError *err)
{
	TensorArgs	screen;

	if (kernel == GC_KERNEL_TENSOR_TF32)
		return launch_pass<GC_KERNEL_TENSOR_TF32>(plain_pass(xp, cp, cnorm, n, NULL, ld, k, labels,
															 changed, partials),
												  streamed, stream, err);

	GC_CUDA_TRY(cudaMemsetAsync(refine->doubtful_count, 0, sizeof(unsigned int), stream), err);
	if (kernel == GC_KERNEL_TENSOR_3XTF32)
	{
		/* 3xTF32 over every point, listing the doubtful ones */
		return launch_pass<GC_KERNEL_TENSOR_3XTF32>(exact_pass(xp, cp, cnorm, refine,
															   refine->eps_3xtf32, 0.0f, n, NULL,
															   ld, k, labels, changed,
															   refine->doubtful,
															   refine->doubtful_count, partials),
													streamed, stream, err);
	}

	/*
	 * The TF32 screen (with the norms of the TF32 centroids), then 3xTF32
	 * over the points it doubts
	 */
	GC_CUDA_TRY(cudaMemsetAsync(refine->exact_count, 0, sizeof(unsigned int), stream), err);
	screen = exact_pass(xp, cp, refine->cnorm_tf32, refine, refine->eps_tf32_sq,
						refine->eps_tf32_lin, n, NULL, ld, k, labels, changed, refine->doubtful,
						refine->doubtful_count, partials);
	if (kernel == GC_KERNEL_TENSOR_SCREENED_FP16)
	{
		/* the same bound at the fp16 operands' scale */
		screen.xnorm = refine->wgmma_xnorm;
		screen.xnorm_slack = refine->wgmma_xnorm_slack;
		screen.cnorm = refine->wgmma_cnorm;
		screen.radius_bits = refine->wgmma_radius_bits;
	}
	if ((kernel == GC_KERNEL_TENSOR_SCREENED_WGMMA || kernel == GC_KERNEL_TENSOR_SCREENED_FP16 ?
		 launch_screen_points_wgmma(refine->wgmma_ops, refine->wgmma_half_norms,
									refine->wgmma_first, &screen, stream, err) :
		 launch_pass<GC_KERNEL_TENSOR_TF32>(screen, streamed, stream, err)) != GC_OK)
		return err->status;
	/* the list's length sizes the second pass's grid */
	GC_CUDA_TRY(cudaMemcpyAsync(refine->count_host, refine->doubtful_count, sizeof(unsigned int),
								cudaMemcpyDeviceToHost, stream), err);
	GC_CUDA_TRY(cudaStreamSynchronize(stream), err);
	return launch_pass<GC_KERNEL_TENSOR_3XTF32>(exact_pass(xp, cp, cnorm, refine, refine->eps_3xtf32,
														   0.0f, (int64_t) *refine->count_host,
														   refine->doubtful, ld, k, labels,
														   changed, refine->exact,
														   refine->exact_count, partials),
												streamed, stream, err);
}

GcStatus
launch_assign_points_bf16(const __nv_bfloat16 *xb, const __nv_bfloat16 *cb, const float *cnorm,
						  int64_t n, int ld, int k, bool streamed, int32_t *labels,
						  unsigned long long *changed, TensorPartial *partials,
						  cudaStream_t stream, GcError *err)
{
	return launch_pass<GC_KERNEL_TENSOR_BF16>(plain_pass(xb, cb, cnorm, n, NULL, ld, k, labels,
														 changed, partials),
											  streamed, stream, err);
}

GcStatus
launch_assign_points_fp16(const __half *xh, const __half *ch, const float *cnorm,
						  int64_t n, int ld, int k, bool streamed, int32_t *labels,
						  unsigned long long *changed, TensorPartial *partials,
						  cudaStream_t stream, GcError *err)
{
	return launch_pass<GC_KERNEL_TENSOR_FP16>(plain_pass(xh, ch, cnorm, n, NULL, ld, k, labels,
														 changed, partials),
											  streamed, stream, err);
}

bool
gc_tensor_splits(int d, int k, bool bf16, bool streamed)
{
	TensorLayout layout;

	return choose_layout(bf16 ? 2 : 4, gc_tensor_row_width(d, bf16), k, streamed, &layout) &&
		splits_into_groups(&layout, k, false);
}
