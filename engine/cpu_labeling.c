/*-------------------------------------------------------------------------
 *
 * cpu_labeling.c
 *	  Lloyd's labeling on the CPU at the speed of matrix products, with the
 *	  exact reference's answers.
 *
 * The reference label of a row is the lowest-indexed centroid of least
 * exact squared distance (gc_sqdist_exact: (x - c)^2 summed in dimension
 * order, each operation rounded on its own), a chain of dependent adds
 * that runs at one add per latency.  Here the rows are labelled in tiles
 * instead, on every core the caller allows:
 *
 *	1. screen: ||x - o||^2 + ||c - o||^2 - 2 (x - o).(c - o) for a tile of
 *	   rows against every centroid, the dot products as a blocked matrix
 *	   product (8 rows by 8 centroids in vector registers, centroids
 *	   transposed in panels of 8), both sides centred on o: the caller's,
 *	   or the centroids' median, near most rows where a few values are
 *	   huge and the box's centre is not;
 *	2. bound: the screen is within E(c) = g (|x - o| + |c - o|)^2 of the
 *	   reference distance, g = (16 d + 128) 2^-53, eight times the sum of
 *	   the rounding errors of the centring, the screen and the reference
 *	   sum (each at most (d + 3) u times that square, u = 2^-53);
 *	3. recheck: every centroid whose screen minus its bound is at most the
 *	   least screen plus its bound may be the reference's answer (counted
 *	   in vectors); alone (in almost every row) it is; otherwise those get
 *	   their exact distance, and the lowest index of least exact distance
 *	   wins, as in the reference scan.
 *
 * So labels and distances equal the reference's to the bit, whatever the
 * number of threads (each row is decided alone).  Tiles are the blocks
 * of a pass of cpu_threads.c.
 *
 * Where rows are narrow (d <= DIRECT_MAX_D) the screen's bounds and
 * doubts cost more than the distances: the reference scan itself runs
 * instead, 8 rows a vector, each lane summing (x_j - c_j)^2 in dimension
 * order as gc_sqdist_exact does and keeping the first centroid of least
 * distance: the same answers, no recheck.  It takes less time than the
 * screen up to d = 12 at every k measured, and about as much from d = 16
 * (bench/results/cpu-direct-scan.md).
 *
 * IDENTIFICATION
 *	  engine/cpu_labeling.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "cpu_threads.h"
#include "cpu_vectors.h"
#include "gc_math.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PANEL_WIDTH 8			/* centroids of a panel (and of the micro-kernel) */
#define KERNEL_ROWS 8			/* rows of the micro-kernel */
#define TILE_SCREEN_VALUES (1 << 15)	/* screen values a tile holds: 256 KB */
#define TILE_MAX_ROWS 64
#define TILE_ROW_VALUES (1 << 14)	/* centred row values a tile holds: 128 KB */
#define DIRECT_MAX_D 12			/* the direct scan's most dimensions */

/* The centroids as the screen reads them */
typedef struct Panels
{
	int			k;
	int			d;
	int			npanels;
	const double *centroids;	/* k d, for the exact recheck */
	const double *offset;		/* d: the centre both sides are moved by */
	double	   *median;			/* d: the centroids' median, when it is the centre */
	double	   *values;			/* npanels panels of d x 8, centred */
	double	   *norm;			/* npanels * 8: |c - o| */
	double	   *norm2;			/* npanels * 8: |c - o|^2 */
} Panels;

/* One labeling pass, shared by its threads */
typedef struct Pass
{
	const GcRows *rows;
	const Panels *panels;
	struct Scratch *scratch;	/* one per worker */
	const GcTileHook *hook;		/* NULL: none */
	int32_t    *labels;
	double	   *distances2;
	int64_t		candidates;		/* rows rechecked against more than one (atomic) */
} Pass;

/* A worker's scratch: a centred tile, its screens' lower ends and least upper ends */
typedef struct Scratch
{
	double	   *rows;			/* tile_rows x d */
	double	   *norm;			/* tile_rows */
	double	   *screen;			/* tile_rows x npanels * 8: screens' lower ends */
	double	   *least;			/* tile_rows x 8: least upper ends, by lane */
} Scratch;

static void
free_panels(Panels *p)
{
	free(p->median);
	free(p->values);
	free(p->norm);
	free(p->norm2);
}

/* The k-th smallest of v[0, n) (v reordered): Hoare's selection */
static double
select_kth(double *v, int n, int kth)
{
	int			lo = 0,
				hi = n - 1;

	while (lo < hi)
	{
		double		pivot = v[lo + (hi - lo) / 2];
		int			i = lo,
					j = hi;

		while (i <= j)
		{
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j)
			{
				double		t = v[i];

				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (kth <= j)
			hi = j;
		else if (kth >= i)
			lo = i;
		else
			break;
	}
	return v[kth];
}

/*
 * The centroids' median, dimension by dimension, into centre (d); column
 * is k values of scratch.  The screen's bound grows with the square of
 * the distances from its centre: the box's centre lies far from most
 * rows where a few values are huge, the centroids' median among them.
 */
static void
median_centroid(const double *centroids, int k, int d, double *column, double *centre)
{
	for (int j = 0; j < d; j++)
	{
		for (int c = 0; c < k; c++)
			column[c] = centroids[(size_t) c * d + j];
		centre[j] = select_kth(column, k, k / 2);
	}
}

/* Centre and transpose the centroids into panels; false when out of memory */
static bool
build_panels(Panels *p, const double *centroids, int k, int d, const double *offset)
{
	size_t		width;

	p->k = k;
	p->d = d;
	p->npanels = (k + PANEL_WIDTH - 1) / PANEL_WIDTH;
	p->centroids = centroids;
	width = (size_t) p->npanels * PANEL_WIDTH;
	p->values = aligned_alloc(64, sizeof(double) * width * d);
	p->norm = malloc(sizeof(double) * width);
	p->norm2 = malloc(sizeof(double) * width);
	if (offset == NULL)
		p->median = malloc(sizeof(double) * d);
	if (p->values == NULL || p->norm == NULL || p->norm2 == NULL ||
		(offset == NULL && p->median == NULL))
	{
		free_panels(p);
		return false;
	}
	if (offset == NULL)
	{
		/* the panels' memory, not yet written, holds the column */
		median_centroid(centroids, k, d, p->values, p->median);
		offset = p->median;
	}
	p->offset = offset;
	memset(p->values, 0, sizeof(double) * width * d);
	for (size_t c = 0; c < width; c++)
	{
		double		s = 0.0;
		double	   *panel = p->values + (c / PANEL_WIDTH) * PANEL_WIDTH * d + c % PANEL_WIDTH;

		for (int j = 0; c < (size_t) k && j < d; j++)
		{
			double		v = centroids[c * d + j] - offset[j];

			panel[(size_t) j * PANEL_WIDTH] = v;
			s += v * v;
		}
		p->norm2[c] = s;
		/* a padding centroid's NaN bound never becomes the least screen */
		p->norm[c] = c < (size_t) k ? sqrt(s) : NAN;
	}
	return true;
}

/*
 * The screen of 8 centred rows (row-major, d apart) against the 8
 * centroids of a panel: the dot products in eight vector accumulators of
 * 8 lanes (one panel load and 8 broadcasts per dimension), then, still in
 * registers, each screened distance s = |x|^2 + |c|^2 - 2 x.c and its
 * bound b = g (|x| + |c|)^2: s - b into lower (8 rows, ld apart), and the
 * least s + b of each row and lane into least (8 rows of 8).  Padding
 * centroids have NaN norms, which no comparison picks.  Cloned for the
 * vector units; fused multiply-adds where the unit has them (one rounding
 * where the bound counts two: it holds).
 */
GC_SIMD_CLONES
__attribute__((optimize("fp-contract=fast")))
static void
screen_8x8(const double *restrict rows, int d, const double *restrict panel,
		   const double *restrict pnorm, const double *restrict pnorm2,
		   const double *restrict xnorm, double g,
		   double *restrict lower, size_t ld, double *restrict least)
{
	v8d			acc[KERNEL_ROWS];
	v8d			a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0},
				a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
	const double *r0 = rows,
			   *r1 = rows + d,
			   *r2 = rows + 2 * (size_t) d,
			   *r3 = rows + 3 * (size_t) d,
			   *r4 = rows + 4 * (size_t) d,
			   *r5 = rows + 5 * (size_t) d,
			   *r6 = rows + 6 * (size_t) d,
			   *r7 = rows + 7 * (size_t) d;
	v8d			cn,
				cn2;

	for (int j = 0; j < d; j++)
	{
		v8d			c;

		memcpy(&c, panel + (size_t) j * PANEL_WIDTH, sizeof(v8d));
		a0 += r0[j] * c;
		a1 += r1[j] * c;
		a2 += r2[j] * c;
		a3 += r3[j] * c;
		a4 += r4[j] * c;
		a5 += r5[j] * c;
		a6 += r6[j] * c;
		a7 += r7[j] * c;
	}
	acc[0] = a0;
	acc[1] = a1;
	acc[2] = a2;
	acc[3] = a3;
	acc[4] = a4;
	acc[5] = a5;
	acc[6] = a6;
	acc[7] = a7;
	memcpy(&cn, pnorm, sizeof(v8d));
	memcpy(&cn2, pnorm2, sizeof(v8d));
	for (int r = 0; r < KERNEL_ROWS; r++)
	{
		v8d			t = xnorm[r] + cn;
		v8d			bound = g * (t * t);
		v8d			screen = (xnorm[r] * xnorm[r] + cn2) - 2.0 * acc[r];
		v8d			upper = screen + bound;
		v8d			low = screen - bound;
		v8d			m;
		v8di		below;

		memcpy(lower + (size_t) r * ld, &low, sizeof(v8d));
		memcpy(&m, least + (size_t) r * PANEL_WIDTH, sizeof(v8d));
		below = upper < m;
		m = (v8d) (((v8di) upper & below) | ((v8di) m & ~below));
		memcpy(least + (size_t) r * PANEL_WIDTH, &m, sizeof(v8d));
	}
}

/*
 * How many of the width screens' lower ends are at most least, and the
 * last of them into *last: in vectors of 8, without a branch (padding
 * centroids are NaN, never counted).  Cloned for the vector units.
 */
GC_SIMD_CLONES
static int
count_doubts(const double *restrict lower, size_t width, double least, int *last)
{
	v8di		count = {0},
				at = {-1, -1, -1, -1, -1, -1, -1, -1},
				index = {0, 1, 2, 3, 4, 5, 6, 7};
	int			total = 0,
				found = -1;

	for (size_t c = 0; c < width; c += PANEL_WIDTH)
	{
		v8d			lo;
		v8di		doubt;

		memcpy(&lo, lower + c, sizeof(v8d));
		doubt = lo <= least;
		count -= doubt;
		at = (index & doubt) | (at & ~doubt);
		index += PANEL_WIDTH;
	}
	for (int l = 0; l < PANEL_WIDTH; l++)
	{
		total += (int) count[l];
		found = at[l] > found ? (int) at[l] : found;
	}
	*last = found;
	return total;
}

/*
 * The reference's answer for one row, rechecking only the centroids in
 * doubt; its exact distance into distance2 unless that is NULL
 */
static int
decide_row(const double *x, const double *lower, double least, const Panels *p,
		   double *distance2, int64_t *rechecked)
{
	int			best = 0,
				doubted;
	double		bestd = DBL_MAX;

	doubted = count_doubts(lower, (size_t) p->npanels * PANEL_WIDTH, least, &best);
	/* every centroid that may be nearer: exact distances in index order */
	for (int c = 0; doubted > 1 && c < p->k; c++)
	{
		double		s;

		if (!(lower[c] <= least))
			continue;
		s = gc_sqdist_exact(x, p->centroids + (size_t) c * p->d, p->d);
		if (s < bestd)
		{
			bestd = s;
			best = c;
		}
	}
	/* alone in doubt, it is the answer */
	if (doubted == 1 && distance2 != NULL)
		bestd = gc_sqdist_exact(x, p->centroids + (size_t) best * p->d, p->d);
	/* a bound that overflowed doubts nothing: the reference scan decides */
	if (doubted == 0)
		best = gc_nearest_centroid(x, p->centroids, p->k, p->d, &bestd);
	*rechecked += doubted > 1;
	if (distance2 != NULL)
		*distance2 = bestd;
	return best;
}

/*
 * dst = x - offset; returns |dst|^2, summed in vector lanes (the bound
 * counts d roundings of the sum, in whatever order)
 */
GC_SIMD_CLONES
static double
centre_row(double *restrict dst, const double *restrict x, const double *restrict offset, int d)
{
	v4d			acc0 = {0},
				acc1 = {0};
	double		n2;
	int			j = 0;

	/* two accumulators: the sum's latency, not its adds, would bound one */
	for (; j + 8 <= d; j += 8)
	{
		v4d			a,
					b,
					o,
					p;

		memcpy(&a, x + j, sizeof(v4d));
		memcpy(&b, x + j + 4, sizeof(v4d));
		memcpy(&o, offset + j, sizeof(v4d));
		memcpy(&p, offset + j + 4, sizeof(v4d));
		a -= o;
		b -= p;
		memcpy(dst + j, &a, sizeof(v4d));
		memcpy(dst + j + 4, &b, sizeof(v4d));
		acc0 += a * a;
		acc1 += b * b;
	}
	acc0 += acc1;
	n2 = (acc0[0] + acc0[1]) + (acc0[2] + acc0[3]);
	for (; j < d; j++)
	{
		dst[j] = x[j] - offset[j];
		n2 += dst[j] * dst[j];
	}
	return n2;
}

/* Label rows [first, first + count) of chunk: a tile, on thread worker */
static void
label_tile(void *ctx, int worker, const GcChunk *chunk, int64_t first_in_chunk, int64_t count)
{
	Pass	   *pass = ctx;
	Scratch    *s = &pass->scratch[worker];
	const Panels *p = pass->panels;
	int			d = pass->rows->d;
	size_t		width = (size_t) p->npanels * PANEL_WIDTH;
	const double *values = chunk->values + (size_t) first_in_chunk * d;
	int64_t		first = chunk->first_row + first_in_chunk;
	int64_t		padded = (count + KERNEL_ROWS - 1) / KERNEL_ROWS * KERNEL_ROWS;
	double		g = ldexp((double) (16 * d + 128), -53);
	int64_t		rechecked = 0;

	/* the tile's rows, centred, and their norms; padding rows are zero */
	for (int64_t r = 0; r < padded; r++)
	{
		double	   *dst = s->rows + (size_t) r * d;

		if (r < count)
			s->norm[r] = sqrt(centre_row(dst, values + (size_t) r * d, p->offset, d));
		else
		{
			memset(dst, 0, sizeof(double) * d);
			s->norm[r] = 0.0;
		}
	}
	for (int64_t i = 0; i < padded * PANEL_WIDTH; i++)
		s->least[i] = DBL_MAX;
	for (int pi = 0; pi < p->npanels; pi++)
		for (int64_t r = 0; r < padded; r += KERNEL_ROWS)
			screen_8x8(s->rows + (size_t) r * d, d, p->values + (size_t) pi * PANEL_WIDTH * d,
					   p->norm + (size_t) pi * PANEL_WIDTH, p->norm2 + (size_t) pi * PANEL_WIDTH,
					   s->norm + r, g, s->screen + (size_t) r * width + (size_t) pi * PANEL_WIDTH,
					   width, s->least + (size_t) r * PANEL_WIDTH);
	for (int64_t r = 0; r < count; r++)
	{
		const double *lanes = s->least + (size_t) r * PANEL_WIDTH;
		double		least = DBL_MAX;

		for (int l = 0; l < PANEL_WIDTH; l++)
			least = lanes[l] < least ? lanes[l] : least;
		pass->labels[first + r] =
			decide_row(values + (size_t) r * d, s->screen + (size_t) r * width, least, p,
					   pass->distances2 ? &pass->distances2[first + r] : NULL, &rechecked);
	}
	if (rechecked)
		__atomic_fetch_add(&pass->candidates, rechecked, __ATOMIC_RELAXED);
	if (pass->hook)
		pass->hook->fn(pass->hook->ctx, worker, chunk, first_in_chunk, count);
}

/* rows a direct scan call takes at most: DIRECT_GROUPS vectors of 8 */
#define DIRECT_GROUPS 4

/*
 * The reference scan's answers for up to 8 x groups rows (x, d apart;
 * count of them real) by the direct scan, a row a lane: every centroid
 * in index order, its exact distance summed in dimension order, taken
 * where strictly below the least so far (which starts at DBL_MAX, as the
 * scan's does); labels and distances into labels and distance2 (NULL:
 * none).  Inlined with d and groups constants: the groups' chains of
 * comparisons run side by side (one alone waits on each comparison), and
 * narrow rows stay in registers.
 */
static inline __attribute__((always_inline)) void
nearest_direct_block(const double *restrict x, int count, const double *restrict centroids,
					 int k, int d, int groups, int32_t *labels, double *distance2)
{
	v8d			row[DIRECT_GROUPS][DIRECT_MAX_D];
	v8d			least[DIRECT_GROUPS];
	v8di		at[DIRECT_GROUPS];

	for (int g = 0; g < groups; g++)
	{
		least[g] = (v8d) {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
		at[g] = (v8di) {0};
		for (int j = 0; j < d; j++)
		{
			row[g][j] = (v8d) {0};
			for (int l = 0; l < 8 && g * 8 + l < count; l++)
				row[g][j][l] = x[(size_t) (g * 8 + l) * d + j];
		}
	}
	for (int c = 0; c < k; c++)
	{
		const double *centroid = centroids + (size_t) c * d;

		for (int g = 0; g < groups; g++)
		{
			v8d			s = {0};
			v8di		below;

			for (int j = 0; j < d; j++)
			{
				v8d			t = row[g][j] - centroid[j];

				s = s + t * t;
			}
			below = s < least[g];
			least[g] = (v8d) (((v8di) s & below) | ((v8di) least[g] & ~below));
			at[g] = ((v8di) {c, c, c, c, c, c, c, c} & below) | (at[g] & ~below);
		}
	}
	for (int r = 0; r < count; r++)
	{
		labels[r] = (int32_t) at[r / 8][r % 8];
		if (distance2)
			distance2[r] = least[r / 8][r % 8];
	}
}

/*
 * The direct scan over count rows of width d, a block of groups vectors
 * at a time (d and groups constants where inlined)
 */
static inline __attribute__((always_inline)) void
nearest_direct_rows(const double *restrict x, int64_t count, const double *restrict centroids,
					int k, int d, int groups, int32_t *labels, double *distance2)
{
	int64_t		block = 8 * groups;

	for (int64_t r = 0; r < count; r += block)
		nearest_direct_block(x + (size_t) r * d, count - r < block ? (int) (count - r) : (int) block,
							 centroids, k, d, groups, labels + r,
							 distance2 ? distance2 + r : NULL);
}

/*
 * nearest_direct_rows, its loops made for each width to 4 with four
 * groups side by side (wider rows give each centroid work enough alone)
 */
GC_SIMD_CLONES
static void
nearest_direct(const double *restrict x, int64_t count, const double *restrict centroids, int k,
			   int d, int32_t *labels, double *distance2)
{
/* d = w made a constant */
#define DIRECT_WIDTH(w) \
	case w: \
		nearest_direct_rows(x, count, centroids, k, w, DIRECT_GROUPS, labels, distance2); \
		break

	switch (d)
	{
		DIRECT_WIDTH(1);
		DIRECT_WIDTH(2);
		DIRECT_WIDTH(3);
		DIRECT_WIDTH(4);
		default:
			nearest_direct_rows(x, count, centroids, k, d, 1, labels, distance2);
	}
#undef DIRECT_WIDTH
}

/* Label rows [first, first + count) of chunk by the direct scan, on thread worker */
static void
label_tile_direct(void *ctx, int worker, const GcChunk *chunk, int64_t first_in_chunk,
				  int64_t count)
{
	Pass	   *pass = ctx;
	const Panels *p = pass->panels;
	int			d = pass->rows->d;
	const double *values = chunk->values + (size_t) first_in_chunk * d;
	int64_t		first = chunk->first_row + first_in_chunk;

	nearest_direct(values, count, p->centroids, p->k, d, pass->labels + first,
				   pass->distances2 ? pass->distances2 + first : NULL);
	if (pass->hook)
		pass->hook->fn(pass->hook->ctx, worker, chunk, first_in_chunk, count);
}

static bool
alloc_scratch(Scratch *s, int tile_rows, int d, size_t width)
{
	s->rows = malloc(sizeof(double) * tile_rows * d);
	s->norm = malloc(sizeof(double) * tile_rows);
	s->screen = malloc(sizeof(double) * tile_rows * width);
	s->least = malloc(sizeof(double) * tile_rows * PANEL_WIDTH);
	return s->rows != NULL && s->norm != NULL && s->screen != NULL && s->least != NULL;
}

static void
free_scratch(Scratch *s)
{
	free(s->rows);
	free(s->norm);
	free(s->screen);
	free(s->least);
}

bool
gc_cpu_labeling_applies(const GcRows *rows)
{
	for (int c = 0; c < rows->nchunks; c++)
		if (rows->chunks[c].values == NULL)
			return false;
	return rows->n > 0;
}

GcStatus
gc_cpu_label_rows(const GcRows *rows, int64_t first_row, const double *centroids, int k,
				  const double *offset, int threads, int32_t *labels, double *distances2,
				  const GcTileHook *hook, GcPoll *poll, int64_t *rechecked, GcError *err)
{
	Pass		pass = {.rows = rows, .labels = labels, .distances2 = distances2, .hook = hook};
	Panels		panels = {0};
	Scratch		scratch[GC_CPU_MAX_THREADS] = {{0}};
	GcCpuPass	run = {.rows = rows, .first_row = first_row, .fn = label_tile, .ctx = &pass};
	int64_t		row_units = (int64_t) k * rows->d;
	int			tile_rows;
	size_t		width;
	bool		allocated = true;
	GcStatus	status;

	if (first_row >= rows->n)
		return GC_OK;
	if (!build_panels(&panels, centroids, k, rows->d, offset))
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the centroid panels");
	if (rows->d <= DIRECT_MAX_D)
		run.fn = label_tile_direct;
	pass.panels = &panels;
	pass.scratch = scratch;
	width = (size_t) panels.npanels * PANEL_WIDTH;
	tile_rows = (int) (TILE_SCREEN_VALUES / width) / KERNEL_ROWS * KERNEL_ROWS;
	if (tile_rows > TILE_MAX_ROWS)
		tile_rows = TILE_MAX_ROWS;
	/* and its centred rows stay in the core's cache */
	if ((int64_t) tile_rows * rows->d > TILE_ROW_VALUES)
		tile_rows = (int) (TILE_ROW_VALUES / rows->d) / KERNEL_ROWS * KERNEL_ROWS;
	/* a tile is at most GC_POLL_WORK units where a kernel's rows allow, so the caller polls in time */
	if ((int64_t) tile_rows * row_units > GC_POLL_WORK)
		tile_rows = (int) (GC_POLL_WORK / row_units) / KERNEL_ROWS * KERNEL_ROWS;
	if (tile_rows < KERNEL_ROWS)
		tile_rows = KERNEL_ROWS;
	run.block_rows = tile_rows;
	run.row_units = row_units;
	run.workers = gc_cpu_threads(threads, (rows->n - first_row) * row_units);
	if (hook && run.workers > hook->max_workers)
		run.workers = hook->max_workers > 0 ? hook->max_workers : 1;
	/* the screen's tiles; the direct scan needs none */
	for (int w = 0; w < run.workers && run.fn == label_tile; w++)
		allocated &= alloc_scratch(&scratch[w], tile_rows, rows->d, width);
	status = allocated ?
		gc_cpu_run_blocks(&run, poll, err, "interrupted while labelling") :
		gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the labeling tiles");
	for (int w = 0; w < run.workers; w++)
		free_scratch(&scratch[w]);
	free_panels(&panels);
	if (rechecked)
		*rechecked = pass.candidates;
	return status;
}
