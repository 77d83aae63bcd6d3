/*-------------------------------------------------------------------------
 *
 * staged_terms.cuh
 *	  Exact squared distances from a block's rows, a thread each, to one
 *	  vector per row (its centroid, its nearest sample), added in dimension
 *	  order with the rounding of gc_sqdist_exact, so equal to the bit to
 *	  the CPU's, with every read coalesced: the block computes the terms
 *	  (x_j - t_j)^2 of the next columns of all its rows together, lanes
 *	  running along a row and its target, into shared memory; then each
 *	  thread adds its own row's terms in order.
 *
 *	  A thread reading its own row and its own target from global memory
 *	  touches another line in every lane at every coordinate, twice: on
 *	  the H100 the scoring pass read 1M rows of d = 768 at about 1.1 TB/s,
 *	  bound by L1 wavefronts (32 lines per load).  Staging only the rows
 *	  (the branch scoring-staged) left the targets' reads as they were and
 *	  gained nothing.  Staged, the pass takes 7.5 ms instead of 13.9-14.7
 *	  (bf16 k-means 2.87 ms an iteration instead of 3.19, k-means|| 305-309
 *	  ms instead of 335-337; bench/results/scoring-h100.md).
 *
 *	  Used by the scoring pass (update.cu), k-means||'s
 *	  nearest-sample pass (seeding_parallel.cu) and plain k-means++'s step
 *	  (seeding.cu: one target, the step's centre; 1M x 768, k = 1,000
 *	  seeds in 2.49 s instead of 3.31).  The tensor labelers' exact check
 *	  of doubtful rows (tensor/operands.cu) stages one row against the
 *	  centroids within reach of its label, a block per row; staging one
 *	  row against every centroid, two barriers per 16 columns, took 27.9
 *	  ms an iteration against 21.7 (float32 at 1M x 768), so its path
 *	  without separations reads unstaged, from a copy of the centroids by
 *	  column (column_sqdist).
 *
 * IDENTIFICATION
 *	  cuda/staged_terms.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_STAGED_TERMS_CUH
#define GC_STAGED_TERMS_CUH

#include <stdint.h>

/*
 * A block of ROWS threads stages COLUMNS terms of each of its ROWS rows,
 * each row padded by a double so that the threads' reads of one column
 * fall in distinct banks, and each row's target
 */
template <int ROWS, int COLUMNS>
struct StagedTerms
{
	double		term[ROWS][COLUMNS + 1];
	const double *target[ROWS];
};

/*
 * The squared distance from row threadIdx.x of the block's rows (rows of
 * them, d columns each, from block_rows) to target (d values), for a
 * thread with mine set (0 for the others, whose target is not read).
 * Every thread of the block must call it: it synchronises the block.
 */
template <int ROWS, int COLUMNS>
__device__ double
staged_sqdist(StagedTerms<ROWS, COLUMNS> &staged, const double *__restrict__ block_rows,
			  int rows, int d, const double *target, bool mine)
{
	double		d2 = 0.0;

	/* the last call's reads of target[] ended before its last barrier */
	staged.target[threadIdx.x] = target;
	for (int j0 = 0; j0 < d; j0 += COLUMNS)
	{
		int			columns = d - j0 < COLUMNS ? d - j0 : COLUMNS;

		__syncthreads();		/* the previous terms are added, targets set */
		for (int e = threadIdx.x; e < rows * columns; e += ROWS)
		{
			int			r = columns == COLUMNS ? e / COLUMNS : e / columns,
						c = e - r * columns;
			staged.term[r][c] = gc_sqdiff(block_rows[(int64_t) r * d + j0 + c],
										  staged.target[r][j0 + c]);
		}
		__syncthreads();
		if (mine)
			for (int c = 0; c < columns; c++)
				d2 = __dadd_rn(d2, staged.term[threadIdx.x][c]);
	}
	return d2;
}

#endif							/* GC_STAGED_TERMS_CUH */
