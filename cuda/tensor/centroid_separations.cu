/*-------------------------------------------------------------------------
 *
 * tensor/centroid_separations.cu
 *	  Lower bounds on the squared distances between centroids (a k x k
 *	  table of floats), with which the exact check of the tensor labelers
 *	  (refine_labels, tensor/operands.cu) skips the centroids that cannot
 *	  be a doubtful row's nearest.
 *
 * The check starts from the centroid a that the tensor pass chose for a
 * row x, and from its exact distance D = |x - a|^2 as the CPU computes it.
 * A centroid c with |c - a| > 2 |x - a| is farther from x than a, since
 * |x - c| >= |c - a| - |x - a| > |x - a| (the triangle inequality, as
 * Elkan's k-means uses it), so the check computes exact distances only to
 * the centroids whose separation from a is at most
 * gc_separation_reach(D, D) = 4 D (1 + 2^-24) + 2^-1000, and takes the
 * arg-min among them, lowest index on ties, as the full scan did.  The
 * slack covers the roundings: a separation is a double sum of d squares
 * (relative error under (d + 2) 2^-53), rounded down to float, and D is
 * such a sum too, so a centroid skipped is farther from x than a by a
 * relative 2^-25 - 2 (d + 2) 2^-53 > 0 (d < 2^26) in the computed
 * distances as well; the absolute 2^-1000 covers squares that underflow.
 *
 * k-means|| needs a row's nearest sample only where it is nearer than the
 * row's D^2 = m so far (elsewhere the row keeps its candidate), so there
 * the reach is (sqrt D + sqrt m)^2, beyond which a sample is farther than
 * m, where m < D; and a row whose label is at D with every sample within
 * 3xTF32's bound g of its distance keeps the label when D - 2 g > m.
 *
 * Why: on rows that nearly repeat one another (the same text embedded
 * twice, templated documents), neither the TF32 screen nor 3xTF32 can
 * tell apart the few centroids near a row, and the check used to compute
 * all k exact distances of most rows: k d doubles read per row, some
 * 1.8 TB per k-means|| round of 300,000 x 768 rows against 1,000 samples
 * (seeding 2.3 s of a 3.3 s query, bench/results/warm-e2e-h100.md).  With
 * the table a row reads k floats and the centroids near it.
 *
 * The table costs k^2 d differences and multiply-adds in double, in tiles
 * of 64 x 64 pairs (4 x 4 per thread, the columns staged 16 at a time in
 * shared memory); both halves are computed, so each row is read whole.
 *
 * IDENTIFICATION
 *	  cuda/tensor/centroid_separations.cu
 *
 *-------------------------------------------------------------------------
 */
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define SEPARATION_TILE 64		/* centroids per side of a block's tile */
#define SEPARATION_SIDE 16		/* threads per side: 4 x 4 pairs each */
#define SEPARATION_DEPTH 16		/* columns staged at a time */

__global__ void
__launch_bounds__(SEPARATION_SIDE * SEPARATION_SIDE)
centroid_separations_kernel(const double *__restrict__ c64, int k, int d,
							float *__restrict__ separations)
{
	__shared__ double rows_a[SEPARATION_DEPTH][SEPARATION_TILE + 1];
	__shared__ double rows_b[SEPARATION_DEPTH][SEPARATION_TILE + 1];
	int			tx = threadIdx.x % SEPARATION_SIDE,
				ty = threadIdx.x / SEPARATION_SIDE;
	int			a0 = blockIdx.y * SEPARATION_TILE,
				b0 = blockIdx.x * SEPARATION_TILE;
	double		sum[4][4] = {{0.0}};

	for (int j0 = 0; j0 < d; j0 += SEPARATION_DEPTH)
	{
		/* consecutive threads read consecutive columns of a row */
		for (int e = threadIdx.x; e < SEPARATION_TILE * SEPARATION_DEPTH; e += blockDim.x)
		{
			int			r = e / SEPARATION_DEPTH,
						j = e % SEPARATION_DEPTH,
						col = j0 + j;

			rows_a[j][r] = a0 + r < k && col < d ? c64[(int64_t) (a0 + r) * d + col] : 0.0;
			rows_b[j][r] = b0 + r < k && col < d ? c64[(int64_t) (b0 + r) * d + col] : 0.0;
		}
		__syncthreads();
		for (int j = 0; j < SEPARATION_DEPTH; j++)
		{
			double		av[4],
						bv[4];

			for (int p = 0; p < 4; p++)
			{
				av[p] = rows_a[j][ty + SEPARATION_SIDE * p];
				bv[p] = rows_b[j][tx + SEPARATION_SIDE * p];
			}
			for (int p = 0; p < 4; p++)
				for (int q = 0; q < 4; q++)
				{
					double		t = av[p] - bv[q];

					sum[p][q] = fma(t, t, sum[p][q]);
				}
		}
		__syncthreads();
	}
	for (int p = 0; p < 4; p++)
		for (int q = 0; q < 4; q++)
		{
			int			a = a0 + ty + SEPARATION_SIDE * p,
						b = b0 + tx + SEPARATION_SIDE * q;

			if (a < k && b < k)
				separations[(int64_t) a * k + b] = __double2float_rd(sum[p][q]);
		}
}

GcStatus
launch_centroid_separations(const double *c64, int k, int d, float *separations,
							cudaStream_t stream, GcError *err)
{
	unsigned	tiles = (unsigned) ((k + SEPARATION_TILE - 1) / SEPARATION_TILE);

	centroid_separations_kernel<<<dim3(tiles, tiles), SEPARATION_SIDE * SEPARATION_SIDE, 0,
		stream>>>(c64, k, d, separations);
	GC_CUDA_LAUNCHED("centroid_separations", err);
	return GC_OK;
}
