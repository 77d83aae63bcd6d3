/*-------------------------------------------------------------------------
 *
 * tensor/operands.cu
 *	  What the tensor-core labeling reads besides the product tiles: the
 *	  operands in rows of width ld (float32 or bf16 copies, and the TF32
 *	  centroids of Hopper's screen), the norms of the centroids as the
 *	  products see them (and the largest, for the screen's bound), the
 *	  rows' norms, and the exact check of the points a
 *	  tensor pass doubts (refine_labels, double without FMA, as the CPU
 *	  reference computes, over the centroids that the separations of
 *	  tensor/centroid_separations.cu leave in reach where they are given).
 *
 * IDENTIFICATION
 *	  cuda/tensor/operands.cu
 *
 *-------------------------------------------------------------------------
 */
#include "tensor/mma_tiles.cuh"

#define REFINE_THREADS 128
#define REFINE_BLOCKS GC_REFINE_BLOCKS
/* the fewest centroids a thread of a slice measures */
#define SLICE_MIN_PER_THREAD 2
/* terms a block stages at once: slots x columns */
#define REFINE_TERMS 2048

/*
 * Exact squared distances from the row x to the centroids listed at
 * list[0 .. slots) (or first .. first + slots, list NULL), slots <= the
 * block's threads; thread g gets slot g's.  The block computes the terms
 * (x_j - c_j)^2 of a tile of columns of every slot together, threads
 * running along each centroid's row (reads coalesced), into terms; then
 * thread g adds its slot's terms in dimension order, as gc_sqdist_exact
 * does, so equal to it to the bit.  The tile is wide for few slots (128
 * columns for up to 16) and narrow for many (16 for up to 128).  Every
 * thread of the block calls it: it synchronises the block.
 */
static __device__ double
staged_group_sqdist(const double *__restrict__ x, const double *__restrict__ c64, int d,
					const uint16_t *list, int first, int slots, double *terms)
{
	int			shift = slots <= 16 ? 7 : slots <= 32 ? 6 : slots <= 64 ? 5 : 4;
	int			columns = 1 << shift,
				stride = columns + 1,	/* a slot's terms start in another bank */
				tile = slots << shift;	/* <= REFINE_TERMS */
	double		s = 0.0;

	for (int j0 = 0; j0 < d; j0 += columns)
	{
		int			width = min(columns, d - j0);

		for (int i = threadIdx.x; i < tile; i += blockDim.x)
		{
			int			g = i >> shift,
						j = i & (columns - 1);

			if (j < width)
			{
				int			c = list != NULL ? list[g] : first + g;
				terms[g * stride + j] = gc_sqdiff(x[j0 + j], c64[(int64_t) c * d + j0 + j]);
			}
		}
		__syncthreads();
		if ((int) threadIdx.x < slots)
			for (int j = 0; j < width; j++)
				s = __dadd_rn(s, terms[threadIdx.x * stride + j]);
		__syncthreads();
	}
	return s;
}

/*
 * The exact squared distance from the row x to a centroid read by column
 * (coordinate j of centroid c at columns[j k + c]; column = columns + c):
 * as gc_sqdist_exact, to the bit.  The block's threads take consecutive
 * centroids, so a load reads consecutive doubles; read along the
 * centroids' rows, every lane touched another line at every coordinate,
 * and the check of a few hundred rows of 1M x 768 blobs (k = 1,000) took
 * 1.3 ms a launch on the H100, a third of the labeling; by column,
 * 0.40-0.47 ms (ncu).
 */
static __device__ double
column_sqdist(const double *__restrict__ x, const double *__restrict__ column, int k, int d)
{
	double		s = 0.0;

#pragma unroll 8
	for (int j = 0; j < d; j++)
		s = gc_sqdist_add(s, x[j], column[(int64_t) j * k]);
	return s;
}

/*
 * The block's nearest of (mine, mine_c) over its threads, into best_d2[0]
 * and best_c[0]: the smaller distance, the lower index on ties
 */
static __device__ void
block_nearest(double mine, int mine_c, double *best_d2, int *best_c)
{
	best_d2[threadIdx.x] = mine;
	best_c[threadIdx.x] = mine_c;
	__syncthreads();
	for (int half = blockDim.x / 2; half > 0; half >>= 1)
	{
		if (threadIdx.x < half)
		{
			double		o = best_d2[threadIdx.x + half];
			int			oc = best_c[threadIdx.x + half];

			if (o < best_d2[threadIdx.x] || (o == best_d2[threadIdx.x] && oc < best_c[threadIdx.x]))
			{
				best_d2[threadIdx.x] = o;
				best_c[threadIdx.x] = oc;
			}
		}
		__syncthreads();
	}
}

/*
 * The check of a short list split over one wave of blocks: block b takes
 * row b / nslices of the list and slice b % nslices of the centroids,
 * leaves its nearest in slices, and the last of the row's blocks to
 * finish (counted in arrivals, reset for the next launch) takes the
 * nearest of the slices, the lower index on ties, as one block over all
 * k finds it
 */
static __device__ void
refine_slice(const double *__restrict__ x64, const double *__restrict__ columns, int d, int k,
			 const int32_t *__restrict__ doubtful, unsigned count, int32_t *__restrict__ labels,
			 unsigned long long *changed, unsigned long long *refined, RefineSlices slices,
			 int nslices, double *best_d2, int *best_c)
{
	__shared__ bool last;
	unsigned	e = blockIdx.x / nslices;
	int			slice = (int) (blockIdx.x % nslices);
	int			from = (int) ((int64_t) k * slice / nslices),
				to = (int) ((int64_t) k * (slice + 1) / nslices);
	double		mine = DBL_MAX;
	int			mine_c = k;

	if (e >= count)
		return;
	for (int c = from + threadIdx.x; c < to; c += blockDim.x)
	{
		double		s = column_sqdist(x64 + (int64_t) doubtful[2 * e] * d, columns + c, k, d);

		if (s < mine)
		{
			mine = s;
			mine_c = c;
		}
	}
	block_nearest(mine, mine_c, best_d2, best_c);
	if (threadIdx.x == 0)
	{
		slices.best_d2[blockIdx.x] = best_d2[0];
		slices.best_c[blockIdx.x] = best_c[0];
		__threadfence();
		last = atomicAdd(&slices.arrivals[e], 1u) == (unsigned) nslices - 1;
		if (refined != NULL)
			atomicAdd(refined, (unsigned long long) (to - from));
	}
	__syncthreads();
	if (!last || threadIdx.x != 0)
		return;
	__threadfence();
	{
		int64_t		row = doubtful[2 * e];
		int			previous = doubtful[2 * e + 1];
		unsigned	base = e * nslices;
		double		bd = __ldcg(&slices.best_d2[base]);
		int			bc = __ldcg(&slices.best_c[base]);

		for (int q = 1; q < nslices; q++)
		{
			double		o = __ldcg(&slices.best_d2[base + q]);
			int			oc = __ldcg(&slices.best_c[base + q]);

			if (o < bd || (o == bd && oc < bc))
			{
				bd = o;
				bc = oc;
			}
		}
		labels[row] = bc;
		if (changed != NULL && bc != previous)
			atomicAdd(changed, 1ULL);
		slices.arrivals[e] = 0;
	}
}

/*
 * The exact nearest centroid of each doubtful point: one block per point,
 * distances as the CPU reference computes them, ties to the lowest
 * centroid.  Without separations, threads run over all k centroids, a
 * distance each at a time, reading the centroids by column
 * (column_sqdist); blocks of 512 threads, two centroids a thread at once,
 * took 0.61-0.92 ms a launch there against 0.40-0.47, and staged groups
 * over all k 18.9 ms an iteration against 11.5 (1M x 768 blobs, where
 * few rows are checked).  With them, only the centroids within reach of
 * the point's label (its exact distance, computed first) are measured:
 * the others are farther than the label (tensor/centroid_separations.cu); with
 * need_below too, farther than need_below[row], and a point whose label
 * is that far with every centroid beyond its 3xTF32 bound keeps its label.
 * Those are listed and measured in staged groups (staged_group_sqdist).
 * Before, a thread measured each listed centroid alone, reading it along
 * its row, a line a lane at every load: on the H100, Lloyd on the
 * near-duplicate rows of bench/results/near-duplicates-h100.md (300,000 x
 * 768, k = 1,000, 30% of the rows checked) labelled in 49.6 ms an
 * iteration, now 7.3, and k-means|| there seeds in 235-242 ms instead of
 * 325-331, its first round listing nearly every sample; measuring lists
 * longer than 128 a thread per centroid, as before, took 321-331 ms.
 */
__global__ void
__launch_bounds__(REFINE_THREADS)
refine_labels_kernel(const double *__restrict__ x64, const double *__restrict__ c64,
					 const double *__restrict__ columns, int d, int k,
					 const float *__restrict__ separations,
					 const double *__restrict__ need_below, const float *__restrict__ xnorm,
					 const unsigned int *radius_bits, float eps_3xtf32,
					 const int32_t *__restrict__ doubtful,
					 const unsigned int *doubtful_count, int32_t *__restrict__ labels,
					 unsigned long long *changed, unsigned long long *refined,
					 RefineSlices slices)
{
	__shared__ double terms[REFINE_TERMS + REFINE_THREADS];
	__shared__ uint16_t listed[GC_SEPARATIONS_MAX_K];
	__shared__ double best_d2[REFINE_THREADS];
	__shared__ int best_c[REFINE_THREADS];
	__shared__ int nlisted;
	__shared__ double reach;
	__shared__ bool kept;
	unsigned	count = *doubtful_count;
	unsigned long long measured = 0;
	int			nslices = 1;

	/*
	 * A short list without separations: each row takes nslices blocks of
	 * one wave, a slice of the centroids each (a row of 1M x 768 blobs
	 * against k = 4,096 took 1.7 ms in one block, and a chunk lists about
	 * ten: 27 ms an iteration on the H200 in 16 launches)
	 */
	if (separations == NULL && slices.arrivals != NULL && count > 0 &&
		count <= gridDim.x / 2)
		nslices = min((int) (gridDim.x / count),
					  (k + SLICE_MIN_PER_THREAD * (int) blockDim.x - 1) /
					  (SLICE_MIN_PER_THREAD * (int) blockDim.x));
	if (nslices > 1)
	{
		refine_slice(x64, columns, d, k, doubtful, count, labels, changed, refined,
					 slices, nslices, best_d2, best_c);
		return;
	}

	for (unsigned e = blockIdx.x; e < count; e += gridDim.x)
	{
		int64_t		row = doubtful[2 * e];
		int			previous = doubtful[2 * e + 1];
		const double *x = x64 + row * d;
		int			a = labels[row];
		double		mine = DBL_MAX;
		int			mine_c = k;

		if (separations == NULL || a < 0 || a >= k)
		{
			for (int c = threadIdx.x; c < k; c += blockDim.x)
			{
				double		s = column_sqdist(x, columns + c, k, d);

				measured++;
				if (s < mine)
				{
					mine = s;
					mine_c = c;
				}
			}
		}
		else
		{
			const float *from = separations + (int64_t) a * k;
			double		da = staged_group_sqdist(x, c64, d, NULL, a, 1, terms);

			if (threadIdx.x == 0)
			{
				double		limit = da;

				kept = false;
				if (need_below != NULL)
				{
					/*
					 * 3xTF32 chose a within its bound g of every centroid's
					 * distance: none is nearer than da - 2 g
					 */
					double		r = (double) xnorm[row] + (double) __uint_as_float(*radius_bits),
								g = (double) eps_3xtf32 * r * r * (1.0 + 0x1p-20);

					limit = fmin(da, need_below[row]);
					kept = (da - 2.0 * g) * (1.0 - 0x1p-30) > need_below[row];
				}
				measured++;
				mine = da;
				mine_c = a;
				reach = gc_separation_reach(da, limit);
				nlisted = 0;
			}
			__syncthreads();
			if (kept)
			{
				__syncthreads();	/* all have read kept before the next row sets it */
				continue;
			}
			for (int c = threadIdx.x; c < k; c += blockDim.x)
				if (c != a && (double) from[c] <= reach)
					listed[atomicAdd(&nlisted, 1)] = (uint16_t) c;
			__syncthreads();
			for (int g0 = 0; g0 < nlisted; g0 += blockDim.x)
			{
				int			slots = min((int) blockDim.x, nlisted - g0);
				double		s = staged_group_sqdist(x, c64, d, listed + g0, 0, slots, terms);

				if ((int) threadIdx.x < slots)
				{
					int			c = listed[g0 + threadIdx.x];

					measured++;
					if (s < mine || (s == mine && c < mine_c))
					{
						mine = s;
						mine_c = c;
					}
				}
			}
		}
		block_nearest(mine, mine_c, best_d2, best_c);
		if (threadIdx.x == 0)
		{
			labels[row] = best_c[0];
			if (changed != NULL && best_c[0] != previous)
				atomicAdd(changed, 1ULL);
		}
		__syncthreads();
	}
	if (refined != NULL && measured > 0)
		atomicAdd(refined, measured);
}

/*
 * The centroids by column, for the check without separations: a block
 * moves a tile of 32 x 32 through shared memory, so that both its reads
 * and its writes are coalesced
 */
__global__ void
centroid_columns_kernel(const double *__restrict__ c64, int k, int d,
						double *__restrict__ columns)
{
	__shared__ double tile[32][33];
	int			c0 = blockIdx.y * 32,
				j0 = blockIdx.x * 32;

	for (int r = threadIdx.y; r < 32; r += blockDim.y)
		if (c0 + r < k && j0 + (int) threadIdx.x < d)
			tile[r][threadIdx.x] = c64[(int64_t) (c0 + r) * d + j0 + threadIdx.x];
	__syncthreads();
	for (int r = threadIdx.y; r < 32; r += blockDim.y)
		if (j0 + r < d && c0 + (int) threadIdx.x < k)
			columns[(int64_t) (j0 + r) * k + c0 + threadIdx.x] = tile[threadIdx.x][r];
}

GcStatus
launch_centroid_columns(const double *c64, int k, int d, double *columns,
						cudaStream_t stream, GcError *err)
{
	dim3		tiles((unsigned) ((d + 31) / 32), (unsigned) ((k + 31) / 32));

	centroid_columns_kernel<<<tiles, dim3(32, 8), 0, stream>>>(c64, k, d, columns);
	GC_CUDA_LAUNCHED("centroid_columns", err);
	return GC_OK;
}

/*
 * Norm of every centred row (each value times scale, a power of two: the
 * fp16 screen's rows are scaled), a thread per row adding its squares in
 * dimension order.  The block stages NORM_COLUMNS columns of its rows at
 * a time, a warp reading 32 consecutive values of one row: a thread
 * reading its own row touched another line in every lane at every
 * coordinate, and at 1M x 768 the pass took 3.1 ms (by ncu on the H100),
 * once per k-means|| round and once per fit, against about 1 ms to read
 * the rows.  The sums are the same, in the same order.
 */
#define NORM_ROWS 256
#define NORM_COLUMNS 32

__global__ void
__launch_bounds__(NORM_ROWS)
row_norms_kernel(const float *__restrict__ x32, int64_t n, int d, float scale,
				 float *__restrict__ xnorm)
{
	__shared__ float tile[NORM_ROWS][NORM_COLUMNS + 1];	/* odd stride: no bank conflicts */

	/* whole blocks go round the loop together: staging synchronises them */
	for (int64_t base = (int64_t) blockIdx.x * NORM_ROWS; base < n;
		 base += (int64_t) gridDim.x * NORM_ROWS)
	{
		int			rows = n - base < NORM_ROWS ? (int) (n - base) : NORM_ROWS;
		float		s = 0.0f;

		for (int j0 = 0; j0 < d; j0 += NORM_COLUMNS)
		{
			int			width = d - j0 < NORM_COLUMNS ? d - j0 : NORM_COLUMNS;

			__syncthreads();	/* the previous columns are read */
#pragma unroll 8
			for (int e = threadIdx.x; e < rows * width; e += NORM_ROWS)
			{
				int			r = e / width;

				tile[r][e - r * width] = x32[(base + r) * d + j0 + e - r * width] * scale;
			}
			__syncthreads();
			if (threadIdx.x < rows)
				for (int c = 0; c < width; c++)
					s = fmaf(tile[threadIdx.x][c], tile[threadIdx.x][c], s);
		}
		if (threadIdx.x < rows)
			xnorm[base + threadIdx.x] = sqrtf(s);
	}
}

GcStatus
launch_row_norms(const float *x32, int64_t n, int d, float scale, float *xnorm,
				 cudaStream_t stream, GcError *err)
{
	row_norms_kernel<<<1024, NORM_ROWS, 0, stream>>>(x32, n, d, scale, xnorm);
	GC_CUDA_LAUNCHED("row_norms", err);
	return GC_OK;
}

GcStatus
launch_refine_labels(const TensorRefinement *refine, int k, const int32_t *list,
					 const unsigned int *list_count, int32_t *labels,
					 unsigned long long *changed, cudaStream_t stream, GcError *err)
{
	RefineSlices slices = {NULL, NULL, NULL};

	if (refine->slices != NULL && refine->c64_columns != NULL)
		slices = *refine->slices;
	refine_labels_kernel<<<REFINE_BLOCKS, REFINE_THREADS, 0, stream>>>(
		refine->x64, refine->c64, refine->c64_columns, refine->d, k, refine->separations,
		refine->need_below, refine->xnorm, refine->cradius_bits, refine->eps_3xtf32, list, list_count, labels,
		changed, refine->refined, slices);
	GC_CUDA_LAUNCHED("refine_labels", err);
	return GC_OK;
}

/* A float as the tensor cores read it: rounded to TF32, or a bf16 or fp16 value */
__device__ __forceinline__ double
operand_value(float v)
{
	return __uint_as_float(to_tf32(v));
}

__device__ __forceinline__ double
operand_value(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}

__device__ __forceinline__ double
operand_value(__half v)
{
	return __half2float(v);
}

/*
 * ||c||^2 of every centroid as the products see it (TF32-rounded floats,
 * or bf16 or fp16 values), one warp per centroid, and the largest |c| into
 * *largest_bits (zeroed first) when it is not NULL
 */
template <typename T>
__global__ void
operand_norms_kernel(const T *__restrict__ cp, int k, int ld, float *__restrict__ norms,
					 unsigned int *largest_bits)
{
	int			lane = threadIdx.x & 31;

	for (int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); c < k;
		 c += gridDim.x * (blockDim.x >> 5))
	{
		double		s = 0.0;

		for (int j = lane; j < ld; j += 32)
		{
			double		v = operand_value(cp[(int64_t) c * ld + j]);

			s += v * v;
		}
		for (int off = 16; off > 0; off >>= 1)
			s += __shfl_down_sync(0xffffffffu, s, off);
		if (lane == 0)
		{
			norms[c] = (float) s;
			/* the largest |c|, rounded up; float bits of values >= 0 order as integers */
			if (largest_bits != NULL)
				atomicMax(largest_bits, __float_as_uint((float) (sqrt(s) * (1.0 + 0x1p-10))));
		}
	}
}

GcStatus
launch_tf32_norms(const float *cp, int k, int ld, float *norms, unsigned int *largest_bits,
				  cudaStream_t stream, GcError *err)
{
	GC_CUDA_TRY(cudaMemsetAsync(largest_bits, 0, sizeof(unsigned int), stream), err);
	operand_norms_kernel<float><<<(k + 7) / 8, 256, 0, stream>>>(cp, k, ld, norms, largest_bits);
	GC_CUDA_LAUNCHED("tf32_norms", err);
	return GC_OK;
}

__global__ void
round_tf32_kernel(const float *__restrict__ src, int64_t count, float *__restrict__ dst)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (int64_t) gridDim.x * blockDim.x)
		dst[i] = __uint_as_float(to_tf32(src[i]));
}

GcStatus
launch_round_tf32(const float *src, int64_t count, float *dst, cudaStream_t stream,
				  GcError *err)
{
	int64_t		blocks = (count + 255) / 256;

	if (count == 0)
		return GC_OK;
	round_tf32_kernel<<<(unsigned) (blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(src, count,
																					dst);
	GC_CUDA_LAUNCHED("round_tf32", err);
	return GC_OK;
}

GcStatus
launch_bf16_norms(const __nv_bfloat16 *cb, int k, int ld, float *norms, cudaStream_t stream,
				  GcError *err)
{
	operand_norms_kernel<__nv_bfloat16><<<(k + 7) / 8, 256, 0, stream>>>(cb, k, ld, norms, NULL);
	GC_CUDA_LAUNCHED("bf16_norms", err);
	return GC_OK;
}

GcStatus
launch_fp16_norms(const __half *ch, int k, int ld, float *norms, unsigned int *largest_bits,
				  cudaStream_t stream, GcError *err)
{
	if (largest_bits != NULL)
		GC_CUDA_TRY(cudaMemsetAsync(largest_bits, 0, sizeof(unsigned int), stream), err);
	operand_norms_kernel<__half><<<(k + 7) / 8, 256, 0, stream>>>(ch, k, ld, norms, largest_bits);
	GC_CUDA_LAUNCHED("fp16_norms", err);
	return GC_OK;
}

/*
 * fp16's scale for centred rows: 2^(15 - e) for the largest half-range of
 * the bounding box below 2^e, which puts every centred value of the rows
 * below 2^15 (fp16 holds magnitudes up to 65504 and keeps 10 bits down to
 * 2^-14); false where the rows have no box or that power of two is past
 * float's exponents (*scale then the nearest within them)
 */
bool
gc_fp16_scale(const GcRows *rows, float *scale)
{
	double		largest = 0.0;
	int			e = 0;

	*scale = 1.0f;
	if (rows == NULL || rows->lo == NULL || rows->hi == NULL)
		return false;
	for (int j = 0; j < rows->d; j++)
		largest = fmax(largest, rows->hi[j] / 2 - rows->lo[j] / 2);
	if (largest > 0.0)
		frexp(largest, &e);		/* largest < 2^e */
	*scale = ldexpf(1.0f, e > 15 + 126 ? -126 : e < 15 - 127 ? 127 : 15 - e);
	return e <= 15 + 126 && e >= 15 - 127;
}

__device__ __forceinline__ void
store_operand(float *dst, float v)
{
	*dst = v;
}

__device__ __forceinline__ void
store_operand(__nv_bfloat16 *dst, float v)
{
	*dst = __float2bfloat16_rn(v);
}

__device__ __forceinline__ void
store_operand(__half *dst, float v)
{
	*dst = __float2half_rn(v);
}

/*
 * Copy rows of width d into a zeroed buffer of rows of width ld, as
 * floats, bf16 or fp16, each value times scale (a power of two: exact)
 */
template <typename T>
__global__ void
pad_rows_kernel(const float *__restrict__ src, int64_t rows, int d, int ld, float scale,
				T *__restrict__ dst)
{
	int64_t		total = rows * d;

	for (int64_t e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; e < total;
		 e += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		r = e / d;

		store_operand(dst + r * ld + (e - r * d), src[e] * scale);
	}
}

template <typename T>
static GcStatus
launch_pad(const float *src, int64_t rows, int d, int ld, float scale, T *dst,
		   cudaStream_t stream, GcError *err)
{
	int64_t		blocks = (rows * d + 255) / 256;

	pad_rows_kernel<T><<<(unsigned) (blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), 256, 0, stream>>>(
		src, rows, d, ld, scale, dst);
	GC_CUDA_LAUNCHED("pad_rows", err);
	return GC_OK;
}

GcStatus
launch_pad_rows(const float *src, int64_t rows, int d, int ld, float *dst,
				cudaStream_t stream, GcError *err)
{
	return launch_pad<float>(src, rows, d, ld, 1.0f, dst, stream, err);
}

GcStatus
launch_pad_rows(const float *src, int64_t rows, int d, int ld, __nv_bfloat16 *dst,
				cudaStream_t stream, GcError *err)
{
	return launch_pad<__nv_bfloat16>(src, rows, d, ld, 1.0f, dst, stream, err);
}

GcStatus
launch_pad_rows_scaled(const float *src, int64_t rows, int d, int ld, float scale,
					   __half *dst, cudaStream_t stream, GcError *err)
{
	return launch_pad<__half>(src, rows, d, ld, scale, dst, stream, err);
}
