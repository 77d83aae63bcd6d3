/*-------------------------------------------------------------------------
 *
 * seeding_greedy.cu
 *	  Greedy k-means++ seeding on the GPU, choosing the same rows as the
 *	  CPU reference (engine/seeding.c).
 *
 * Step t (L candidates; step 0 has one) is three kernels, queued without
 * a round trip to the host:
 *
 *	- races: every row folds the previous step's centre into its squared
 *	  distance D^2 (mind2) and bids gc_race_key(u(row, seed, stream(t, j)),
 *	  weight * D^2) for each candidate j, a warp at a time and without the
 *	  logarithm where a bound shows the bid cannot win (gc_warp_race); a
 *	  block minimum per candidate and one atomicMin per block and
 *	  candidate leave candidate j in race[t L + j];
 *	- potentials: one pass over the rows computes each row's distances to
 *	  all the candidates (up to GREEDY_GROUP of them per pass: rows are read
 *	  once per step for L <= 8; rows and candidates staged through shared
 *	  memory), min(D^2, d_j) quantised as the inertia is and weighted,
 *	  summed per block as 128-bit integers into partials;
 *	- the choice: one block sums each candidate's partials exactly and
 *	  keeps the lowest (the first on ties), into winner[t] and chosen[t].
 *
 * Where the rows' candidate distances fit beside the data (L <= d), the
 * potential pass keeps min(D^2, d_j) per row and candidate (cand_d2, L
 * columns of n), and the next step's race reads its winner's column
 * instead of computing a distance: the rows are read once per step.
 * Otherwise the race recomputes the distance to the previous centre.
 * Over few rows (gc_greedy_table_rows: k-means||'s recluster of ~5k
 * candidates), the steps are bound by latency, not by work: each
 * potential pass is a chain of d dependent terms per thread over too few
 * threads to hide it, and the 1,000 steps of k = 1,000 (8 candidates
 * each) measure 1.6 times as many pairs as there are.  There one kernel
 * first measures every pair into an n x n table at the device's double
 * rate, and the steps read their distances from it.
 * Distances are gc_sqdist_exact's (double, no FMA, in dimension order),
 * so every value equals the CPU's bit for bit.
 *
 * IDENTIFICATION
 *	  cuda/seeding_greedy.cu
 *
 *-------------------------------------------------------------------------
 */
#include "gc_math.h"
#include "kmeans_kernels.cuh"
#include "cuda_check.cuh"

#define GREEDY_THREADS 256		/* most threads per block */
#define GREEDY_SMALL_THREADS 64	/* rows per block where 256 would leave multiprocessors idle */
#define GREEDY_SMALL_SPLIT 4	/* their potential pass: threads per row, 256 a block */
#define GREEDY_GROUP 8			/* candidates per pass over the rows */
#define GREEDY_BLOCKS 1024		/* most blocks (and partials) per pass */
/*
 * Race blocks per multiprocessor: fewer blocks than the potential pass's
 * give each warp more rows, so that its leader rules out more logarithms,
 * and leave fewer atomicMins per candidate.  On the H100, greedy seeding
 * at 4M x 8, k = 100 took 53.9 ms with the potential pass's grid (1,024
 * blocks), 51.6 with 4 blocks an SM and 50.1 with 2; at 1M x 8, k =
 * 1,000: 187.1, 174.8 and 165.2 (bench/results/race-skip-h100.md)
 */
#define GREEDY_RACE_BLOCKS_PER_SM 2
#define GREEDY_STAGED 4096		/* row values a potential pass stages at once (32 kB) */
#define GREEDY_LOADS 16			/* loads in flight per thread while staging */
#define TABLE_TILE 64			/* a table block's rows, each way: 16 x 16 threads of 4 x 4 */
#define TABLE_DEPTH 32			/* dimensions a table block stages at once */

/* Shared memory of greedy_potential_kernel for blocks of rows rows */
static size_t
potential_shared_bytes(int rows)
{
	int			columns = GREEDY_STAGED / rows;

	return sizeof(double) * ((size_t) rows * (columns + 1) + (size_t) GREEDY_GROUP * columns);
}

/*
 * Races of step t's candidates group * GREEDY_GROUP onwards (count of
 * them), one block row per group (blockIdx.y).  Blocks of group 0 store
 * D^2 into mind2; the others compute the same value (from the previous
 * step's column of cand_d2, else the table, else the rows).  A warp's
 * lanes take consecutive rows and race together (gc_warp_race), so every
 * lane's leader is its warp's.
 */
__global__ void
greedy_race_kernel(const double *__restrict__ x64, const uint64_t *__restrict__ hashes,
				   const double *__restrict__ weights, int64_t n, int d,
				   uint64_t seed, int t, int L, int step_candidates, int inertia_exp,
				   const long long *__restrict__ chosen,
				   const int *__restrict__ winner,
				   const double *__restrict__ cand_d2, const double *__restrict__ table,
				   double *__restrict__ mind2, unsigned long long *race)
{
	__shared__ unsigned long long warp_best[GREEDY_THREADS / 32][GREEDY_GROUP];
	int			first = blockIdx.y * GREEDY_GROUP;
	int			count = min(GREEDY_GROUP, step_candidates - first);
	const double *previous = t > 0 ? x64 + (int64_t) chosen[t - 1] * d : NULL;
	const double *stored = (t >= 2 && cand_d2 != NULL) ?
		cand_d2 + (int64_t) winner[t - 1] * n : NULL;
	unsigned long long best[GREEDY_GROUP];

#pragma unroll
	for (int jj = 0; jj < GREEDY_GROUP; jj++)
		best[jj] = GC_RACE_NONE;
	/* whole warps go round the loop together: they race together */
	for (int64_t base = (int64_t) blockIdx.x * blockDim.x + (threadIdx.x & ~31); base < n;
		 base += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		i = base + (threadIdx.x & 31);
		bool		mine = i < n;
		double		w = 1.0;
		uint64_t	hash = 0;

		if (mine)
		{
			if (t > 0)
			{
				double		m;

				if (stored != NULL)
					m = stored[i];
				else
				{
					m = table != NULL ? table[(int64_t) chosen[t - 1] * n + i] :
						gc_sqdist_exact(x64 + i * d, previous, d);
					if (t > 1 && mind2[i] < m)
						m = mind2[i];
				}
				if (blockIdx.y == 0)
					mind2[i] = m;
				w = m;
			}
			if (weights != NULL)
				w = __dmul_rn(w, weights[i]);
			w = gc_race_weight(w, inertia_exp);
			hash = hashes[i];
		}
#pragma unroll
		for (int jj = 0; jj < GREEDY_GROUP; jj++)
			if (jj < count)
				gc_warp_race(&best[jj], mine,
							 gc_unit_draw(hash, seed, gc_seed_stream(t, first + jj)), w, i);
	}
	if ((threadIdx.x & 31) == 0)
#pragma unroll
		for (int jj = 0; jj < GREEDY_GROUP; jj++)
			warp_best[threadIdx.x >> 5][jj] = best[jj];
	__syncthreads();
	if (threadIdx.x < count)
	{
		unsigned long long b = GC_RACE_NONE;

		for (int wi = 0; wi < (int) (blockDim.x >> 5); wi++)
			b = warp_best[wi][threadIdx.x] < b ? warp_best[wi][threadIdx.x] : b;
		atomicMin(&race[(int64_t) t * L + first + threadIdx.x], b);
	}
}

/* (r, c) moved blockDim.x elements on in rows of width elements, without a division */
__device__ __forceinline__ void
step_element(int &r, int &c, int step_rows, int step_columns, int width)
{
	r += step_rows;
	c += step_columns;
	if (c >= width)
	{
		c -= width;
		r++;
	}
}

/*
 * Columns j0 .. j0 + width - 1 of rows rows of x64 into dst (row r at
 * dst + r * dst_stride): the rows first_row onwards, or rows_at[r] where
 * given.  Every thread keeps GREEDY_LOADS loads in flight: staged one at
 * a time, each waiting on the last, k-means|| seeding at 1M x 768 took
 * 551 ms instead of 450 on the H100.
 */
__device__ __forceinline__ void
stage_columns(double *dst, int dst_stride, const double *__restrict__ x64, int d,
			  int64_t first_row, const int64_t *rows_at, int rows, int j0, int width)
{
	int			total = rows * width,
				step_rows = blockDim.x / width, /* blockDim.x elements on */
				step_columns = blockDim.x - step_rows * width,
				r = threadIdx.x / width,	/* the thread's next element */
				c = threadIdx.x - r * width;

	for (int e0 = threadIdx.x; e0 < total; e0 += GREEDY_LOADS * blockDim.x)
	{
		double		v[GREEDY_LOADS];
		int			load_r = r,
					load_c = c;

#pragma unroll
		for (int u = 0; u < GREEDY_LOADS; u++)
		{
			if (e0 + u * (int) blockDim.x < total)
				v[u] = x64[(rows_at != NULL ? rows_at[load_r] : first_row + load_r) * d + j0 + load_c];
			step_element(load_r, load_c, step_rows, step_columns, width);
		}
#pragma unroll
		for (int u = 0; u < GREEDY_LOADS; u++)
		{
			if (e0 + u * (int) blockDim.x < total)
				dst[r * dst_stride + c] = v[u];
			step_element(r, c, step_rows, step_columns, width);
		}
	}
}

/*
 * The table of greedy seeding over few rows: table[a n + b] =
 * gc_sqdist_exact(x_a, x_b) for every pair.  A block measures a tile of
 * TABLE_TILE x TABLE_TILE pairs, each thread 4 x 4 of them, staging
 * TABLE_DEPTH dimensions of both tiles' rows at a time; each sum still runs
 * in dimension order without FMA, so it equals gc_sqdist_exact's bit for
 * bit ((a - b)^2 = (b - a)^2 exactly, and the zeros padding a last, short
 * stage add +0 to a non-negative sum).  Only tiles on or above the
 * diagonal are measured; each writes its mirror too.
 */
__global__ void
__launch_bounds__(GREEDY_THREADS)
greedy_table_kernel(const double *__restrict__ x64, int64_t n, int d, double *__restrict__ table)
{
	__shared__ double a_sh[TABLE_TILE][TABLE_DEPTH + 1];	/* odd stride: no bank conflicts */
	__shared__ double b_sh[TABLE_TILE][TABLE_DEPTH + 1];
	int64_t		a0 = (int64_t) blockIdx.y * TABLE_TILE,
				b0 = (int64_t) blockIdx.x * TABLE_TILE;
	int			tx = threadIdx.x % 16,
				ty = threadIdx.x / 16;
	double		sum[4][4];

	if (blockIdx.x < blockIdx.y)
		return;
#pragma unroll
	for (int r = 0; r < 4; r++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			sum[r][c] = 0.0;
	for (int j0 = 0; j0 < d; j0 += TABLE_DEPTH)
	{
		__syncthreads();		/* the previous stage is read */
#pragma unroll
		for (int e = threadIdx.x; e < TABLE_TILE * TABLE_DEPTH; e += GREEDY_THREADS)
		{
			int			r = e / TABLE_DEPTH,
						j = j0 + e % TABLE_DEPTH;

			a_sh[r][e % TABLE_DEPTH] = a0 + r < n && j < d ? x64[(a0 + r) * d + j] : 0.0;
			b_sh[r][e % TABLE_DEPTH] = b0 + r < n && j < d ? x64[(b0 + r) * d + j] : 0.0;
		}
		__syncthreads();
#pragma unroll 4
		for (int j = 0; j < TABLE_DEPTH; j++)
		{
			double		av[4],
						bv[4];

#pragma unroll
			for (int r = 0; r < 4; r++)
			{
				av[r] = a_sh[ty + 16 * r][j];
				bv[r] = b_sh[tx + 16 * r][j];
			}
#pragma unroll
			for (int r = 0; r < 4; r++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					sum[r][c] = gc_sqdist_add(sum[r][c], av[r], bv[c]);
		}
	}
#pragma unroll
	for (int r = 0; r < 4; r++)
#pragma unroll
		for (int c = 0; c < 4; c++)
		{
			int64_t		a = a0 + ty + 16 * r,
						b = b0 + tx + 16 * c;

			if (a < n && b < n)
			{
				table[a * n + b] = sum[r][c];
				if (blockIdx.x != blockIdx.y)
					table[b * n + a] = sum[r][c];
			}
		}
}

/*
 * Potentials of step t's candidates first .. first + count - 1: per block,
 * sum over its rows of weight * quantised min(D^2, d_j), into
 * partials[block * L + j]; min(D^2, d_j) into cand_d2's column j when kept.
 *
 * A block's rows and the candidates are read through shared memory,
 * GREEDY_STAGED / rows columns at a time: the block loads the next columns
 * of all its rows and of the candidates with coalesced reads, then each
 * thread adds its row's terms in dimension order, as gc_sqdist_exact does.
 * Read from global memory a column at a time, each term waited on a load,
 * and k-means||'s recluster (~5k rows over 76 blocks, a few warps per
 * multiprocessor, nothing to hide the wait) took 0.2 ms a step at d = 768,
 * 216 of its 435 ms.  Staged, on the H100 at 1M x 768, k = 1,000: k-means||
 * seeds in 342-344 ms instead of 452-456, greedy k-means++ over all the
 * rows in 3.7 s instead of 8.4 (bench/results/seeding-parallel-h100.md).
 *
 * SPLIT threads share a row: a block of blockDim.x threads holds
 * blockDim.x / SPLIT rows (a multiple of 32, so a warp's threads share
 * the same candidates), and thread q of a row adds its terms for
 * candidates q, q + SPLIT, ...  Few rows (the recluster's ~5k) then keep
 * SPLIT times the threads staging and adding, each candidate's sum still
 * one thread's, in the same order.
 *
 * TABLE: the distances are read from greedy_table_kernel's table, which
 * holds the same values; nothing is staged.
 */
template <int SPLIT, bool TABLE>
__global__ void
__launch_bounds__(GREEDY_THREADS, 2)
greedy_potential_kernel(const double *__restrict__ x64, const double *__restrict__ weights,
						int64_t n, int d, int t, int L, int first, int count,
						int inertia_exp, const unsigned long long *__restrict__ race,
						const double *__restrict__ table,
						const double *__restrict__ mind2, double *__restrict__ cand_d2,
						gc_u128 *__restrict__ partials)
{
	const int	per_thread = GREEDY_GROUP / SPLIT;
	extern __shared__ double staged[];
	__shared__ gc_u128 warp_sums[GREEDY_THREADS / 32][GREEDY_GROUP];
	__shared__ int64_t centre_row[GREEDY_GROUP];
	const int	block_rows = blockDim.x / SPLIT,
				row = threadIdx.x % block_rows,
				share = threadIdx.x / block_rows,
				columns = GREEDY_STAGED / block_rows,
				stride = columns + 1;	/* odd: a column's reads hit distinct banks */
	double	   *rows_sh = staged,
			   *centres_sh = staged + block_rows * stride;
	gc_u128		total[per_thread];

	if (threadIdx.x < count)
		centre_row[threadIdx.x] = (int64_t) (uint32_t) race[(int64_t) t * L + first + threadIdx.x];
#pragma unroll
	for (int u = 0; u < per_thread; u++)
		total[u] = 0;
	if (TABLE)
		__syncthreads();		/* centre_row is read without staging's barriers */
	/* whole blocks go round the loop together: staging synchronises them */
	for (int64_t base = (int64_t) blockIdx.x * block_rows; base < n;
		 base += (int64_t) gridDim.x * block_rows)
	{
		int			rows = n - base < (int64_t) block_rows ? (int) (n - base) : block_rows;
		bool		mine = row < rows;
		double		s[per_thread];

#pragma unroll
		for (int u = 0; u < per_thread; u++)
			s[u] = TABLE && mine && share + SPLIT * u < count ?
				table[centre_row[share + SPLIT * u] * n + base + row] : 0.0;
		for (int j0 = 0; !TABLE && j0 < d; j0 += columns)
		{
			int			width = d - j0 < columns ? d - j0 : columns;

			__syncthreads();	/* the previous columns are read */
			stage_columns(rows_sh, stride, x64, d, base, NULL, rows, j0, width);
			stage_columns(centres_sh, columns, x64, d, 0, centre_row, count, j0, width);
			__syncthreads();
			if (mine)
			{
				const double *values = rows_sh + row * stride;

#pragma unroll 4
				for (int c = 0; c < width; c++)
				{
					double		xv = values[c];

#pragma unroll
					for (int u = 0; u < per_thread; u++)
						if (share + SPLIT * u < count)
							s[u] = gc_sqdist_add(s[u], xv,
												 centres_sh[(share + SPLIT * u) * columns + c]);
				}
			}
		}
		if (mine)
		{
			int64_t		i = base + row;
			double		m = mind2[i];
			gc_u128		w = (gc_u128) (weights != NULL ? (unsigned long long) weights[i] : 1ULL);

#pragma unroll
			for (int u = 0; u < per_thread; u++)
				if (share + SPLIT * u < count)
				{
					double		v = m < s[u] ? m : s[u];
					gc_u128		q = gc_quantize_wide(v, inertia_exp);

					if (cand_d2 != NULL)
						cand_d2[(int64_t) (first + share + SPLIT * u) * n + i] = v;
					total[u] += weights != NULL ? q * w : q;
				}
		}
	}
	/* a warp's threads share candidates; the others' columns are 0 */
	if ((threadIdx.x & 31) == 0)
		for (int jj = 0; jj < GREEDY_GROUP; jj++)
			warp_sums[threadIdx.x >> 5][jj] = 0;
#pragma unroll
	for (int u = 0; u < per_thread; u++)
	{
		gc_u128		v = gc_warp_sum_u128(total[u]);

		if ((threadIdx.x & 31) == 0)
			warp_sums[threadIdx.x >> 5][share + SPLIT * u] = v;
	}
	__syncthreads();
	if (threadIdx.x < count)
	{
		gc_u128		v = 0;

		for (int wi = 0; wi < (int) (blockDim.x >> 5); wi++)
			v += warp_sums[wi][threadIdx.x];
		partials[(int64_t) blockIdx.x * L + first + threadIdx.x] = v;
	}
}

/*
 * The choice of step t: each candidate's potential (the sum of its
 * nblocks partials; none at step 0, one candidate), the lowest kept.  A
 * warp sums a candidate's partials (integers: any order gives the same
 * sum); one thread summing them in turn waited on a load per block.  On
 * the H100, k-means|| at 1M x 768, k = 1,000 (1,000 steps over ~5k rows):
 * 330-340 ms against 339-342, the same seeds.
 */
__global__ void
greedy_pick_kernel(int t, int L, int step_candidates, int nblocks,
				   const gc_u128 *__restrict__ partials,
				   const unsigned long long *__restrict__ race,
				   int *winner, long long *chosen)
{
	__shared__ gc_u128 potential[GC_MAX_INIT_CANDIDATES];
	int			lane = threadIdx.x & 31;

	for (int j = threadIdx.x >> 5; j < step_candidates; j += blockDim.x >> 5)
	{
		gc_u128		v = 0;

		for (int b = lane; b < nblocks; b += 32)
			v += partials[(int64_t) b * L + j];
		v = gc_warp_sum_u128(v);
		if (lane == 0)
			potential[j] = v;
	}
	__syncthreads();
	if (threadIdx.x == 0)
	{
		int			best = 0;

		for (int j = 1; j < step_candidates; j++)
			if (potential[j] < potential[best])
				best = j;
		winner[t] = best;
		chosen[t] = (long long) (uint32_t) race[(int64_t) t * L + best];
	}
}

/* Device buffers of one seeding */
typedef struct GreedyBuffers
{
	double	   *mind2;
	double	   *cand_d2;
	double	   *table;			/* n x n where taken (gc_greedy_table_rows) */
	unsigned long long *race;
	gc_u128    *partials;
	int		   *winner;
	long long  *chosen;
} GreedyBuffers;

static void
free_buffers(GreedyBuffers *b)
{
	cudaFree(b->mind2);
	cudaFree(b->cand_d2);
	cudaFree(b->table);
	cudaFree(b->race);
	cudaFree(b->partials);
	cudaFree(b->winner);
	cudaFree(b->chosen);
	(void) cudaGetLastError();
}

static GcStatus
run_steps(const double *x64, const uint64_t *hashes, const double *weights,
		  int64_t n, int d, const GcKmeansParams *params, int L, uint64_t seed,
		  int inertia_exp, cudaStream_t stream, GreedyBuffers *b, int64_t *chosen,
		  GcError *err)
{
	int			k = params->k;
	int			threads = GREEDY_THREADS,	/* rows per block */
				split = 1,		/* threads per row in the potential pass */
				sms = 0,
				nblocks,
				race_blocks;
	long long  *chosen_host;
	size_t		staged_bytes;
	decltype(&greedy_potential_kernel<1, false>) potential = greedy_potential_kernel<1, false>;
	/* a step is about (L + 1) n d units: poll after GC_POLL_WORK_GPU of them */
	int64_t		poll_steps = gc_poll_gpu_items(gc_gpu_pass_units(n, (int64_t) d * (L + 1)), 1, k);

	/*
	 * Few rows (k-means|| reclusters ~5k candidates): blocks of 64 rows
	 * spread them over every multiprocessor, where blocks of 256 would
	 * leave most idle and each step would wait on a few; their potential
	 * pass gives each row GREEDY_SMALL_SPLIT threads
	 */
	if (gc_cuda_multiprocessors(&sms, err) != GC_OK)
		return err->status;
	/*
	 * The table, where taken and it fits (else the steps measure as
	 * before): its rows are few, so the steps take the small layout
	 */
	if (gc_greedy_table_rows(n, k, L) > 0 &&
		cudaMalloc((void **) &b->table, sizeof(double) * n * n) != cudaSuccess)
	{
		(void) cudaGetLastError();
		b->table = NULL;
	}
	if (b->table != NULL || n < (int64_t) sms * GREEDY_THREADS)
	{
		threads = GREEDY_SMALL_THREADS;
		split = GREEDY_SMALL_SPLIT;
		potential = b->table != NULL ? greedy_potential_kernel<GREEDY_SMALL_SPLIT, true> :
			greedy_potential_kernel<GREEDY_SMALL_SPLIT, false>;
	}
	staged_bytes = b->table != NULL ? 0 : potential_shared_bytes(threads);
	nblocks = (int) ((n + threads - 1) / threads);

	if (nblocks > GREEDY_BLOCKS)
		nblocks = GREEDY_BLOCKS;
	/*
	 * No more potential blocks than fit on the device at once (2 an SM at
	 * 256 threads, bound by registers): a grid of 1,024 ran in 2.6 waves,
	 * the last one partly idle.  On the H100, greedy seeding at 1M x 8, k =
	 * 1,000 took 157.3 ms instead of 164.7, at 4M x 8, k = 100 49.4 instead
	 * of 50.5 (bench/results/race-skip-h100.md)
	 */
	{
		int			resident = 0;

		GC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, potential,
																  threads * split, staged_bytes),
					err);
		if (resident > 0 && nblocks > resident * sms)
			nblocks = resident * sms;
	}
	race_blocks = nblocks < sms * GREEDY_RACE_BLOCKS_PER_SM ? nblocks : sms * GREEDY_RACE_BLOCKS_PER_SM;
	ALLOC_OR_RETURN(b->mind2, (size_t) n);
	ALLOC_OR_RETURN(b->race, (size_t) k * L);
	ALLOC_OR_RETURN(b->partials, (size_t) nblocks * L);
	ALLOC_OR_RETURN(b->winner, (size_t) k);
	ALLOC_OR_RETURN(b->chosen, (size_t) k);
	/* the candidates' distances, where they fit beside the data */
	if (L <= d && cudaMalloc((void **) &b->cand_d2, sizeof(double) * n * L) != cudaSuccess)
	{
		(void) cudaGetLastError();
		b->cand_d2 = NULL;
	}
	GC_CUDA_TRY(cudaMemsetAsync(b->race, 0xff, sizeof(unsigned long long) * k * L, stream), err);
	if (b->table != NULL)
	{
		int			tiles = (int) ((n + TABLE_TILE - 1) / TABLE_TILE);

		greedy_table_kernel<<<dim3(tiles, tiles), GREEDY_THREADS, 0, stream>>>(x64, n, d, b->table);
		GC_CUDA_LAUNCHED("greedy_table", err);
	}

	for (int t = 0; t < k; t++)
	{
		int			step_candidates = t == 0 ? 1 : L;
		int			groups = (step_candidates + GREEDY_GROUP - 1) / GREEDY_GROUP;
		dim3		race_grid(race_blocks, groups);

		greedy_race_kernel<<<race_grid, threads, 0, stream>>>(
			x64, hashes, weights, n, d, seed, t, L, step_candidates, inertia_exp, b->chosen,
			b->winner, b->cand_d2, b->table, b->mind2, b->race);
		GC_CUDA_LAUNCHED("greedy_race", err);
		if (t > 0)
			for (int g = 0; g < groups; g++)
			{
				int			group_count = step_candidates - g * GREEDY_GROUP < GREEDY_GROUP ?
					step_candidates - g * GREEDY_GROUP : GREEDY_GROUP;

				potential<<<nblocks, threads * split, staged_bytes, stream>>>(
					x64, weights, n, d, t, L, g * GREEDY_GROUP, group_count, inertia_exp,
					b->race, b->table, b->mind2, b->cand_d2, b->partials);
				GC_CUDA_LAUNCHED("greedy_potential", err);
			}
		greedy_pick_kernel<<<1, GREEDY_THREADS, 0, stream>>>(
			t, L, step_candidates, t > 0 ? nblocks : 0, b->partials, b->race,
			b->winner, b->chosen);
		GC_CUDA_LAUNCHED("greedy_pick", err);
		if ((t + 1) % poll_steps == 0)
		{
			GC_CUDA_TRY(cudaStreamSynchronize(stream), err);
			if (params->interrupted && params->interrupted())
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
		}
	}
	chosen_host = (long long *) malloc(sizeof(long long) * k);
	if (chosen_host == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	{
		cudaError_t e = cudaMemcpyAsync(chosen_host, b->chosen, sizeof(long long) * k,
										cudaMemcpyDeviceToHost, stream);

		if (e == cudaSuccess)
			e = cudaStreamSynchronize(stream);
		if (e != cudaSuccess)
		{
			free(chosen_host);
			return gc_cuda_fail(err, e, "copying the k-means++ centres", __FILE__, __LINE__);
		}
	}
	for (int t = 0; t < k; t++)
		chosen[t] = (int64_t) chosen_host[t];
	free(chosen_host);
	return GC_OK;
}

GcStatus
launch_greedy_kmeanspp(const double *x64, const uint64_t *hashes, const double *weights,
					   int64_t n, int d, const GcKmeansParams *params, uint64_t seed,
					   int inertia_exp, cudaStream_t stream, int64_t *chosen,
					   GcError *err)
{
	GreedyBuffers b = {0};
	GcStatus	status = run_steps(x64, hashes, weights, n, d, params,
								   gc_seed_candidates(params, n, d), seed, inertia_exp,
								   stream, &b, chosen, err);

	(void) cudaStreamSynchronize(stream);
	free_buffers(&b);
	return status;
}
