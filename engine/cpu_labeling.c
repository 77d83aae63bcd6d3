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
 *	   product (4 rows by 8 centroids in vector registers, centroids
 *	   centred on the frame's offset o and transposed in panels of 8);
 *	2. bound: the screen is within E(c) = g (|x - o| + |c - o|)^2 of the
 *	   reference distance, g = (16 d + 128) 2^-53, eight times the sum of
 *	   the rounding errors of the centring, the screen and the reference
 *	   sum (each at most (d + 3) u times that square, u = 2^-53);
 *	3. recheck: every centroid whose screen minus its bound is at most the
 *	   least screen plus its bound may be the reference's answer; those
 *	   (one in almost every row) get their exact distance, and the lowest
 *	   index of least exact distance wins, as in the reference scan.
 *
 * So labels and distances equal the reference's to the bit, whatever the
 * number of threads (each row is decided alone).  Threads claim tiles;
 * only the calling thread polls the interrupt hook, between its tiles,
 * counting the work every thread has finished.
 *
 * IDENTIFICATION
 *	  engine/cpu_labeling.c
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_labeling.h"
#include "gc_math.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PANEL_WIDTH 8			/* centroids of a panel (and of the micro-kernel) */
#define KERNEL_ROWS 4			/* rows of the micro-kernel */
#define TILE_SCREEN_VALUES (1 << 15)	/* screen values a tile holds: 256 KB */
#define TILE_MAX_ROWS 64
#define THREAD_UNITS (INT64_C(1) << 24) /* k d units worth a thread */

typedef double v4d __attribute__((vector_size(32)));

/* The centroids as the screen reads them */
typedef struct Panels
{
	int			k;
	int			d;
	int			npanels;
	const double *centroids;	/* k d, for the exact recheck */
	const double *offset;		/* d: the centre both sides are moved by */
	double	   *values;			/* npanels panels of d x 8, centred */
	double	   *norm;			/* npanels * 8: |c - o| */
	double	   *norm2;			/* npanels * 8: |c - o|^2 */
} Panels;

/* Rows of one chunk labelled together */
typedef struct Tile
{
	const GcChunk *chunk;
	int64_t		first;			/* the chunk's rows [first, first + count) */
	int64_t		count;
} Tile;

/* One labeling pass, shared by its threads */
typedef struct Pass
{
	const GcRows *rows;
	const Panels *panels;
	int			tile_rows;		/* most rows of a tile */
	Tile	   *tiles;
	int64_t		ntiles;
	int64_t		next;			/* next tile to claim (atomic) */
	bool		stop;			/* the caller was interrupted (atomic) */
	int32_t    *labels;
	double	   *distances2;
	int64_t		candidates;		/* rows rechecked against more than one (atomic) */
	int64_t		done_units;		/* row x centroid x dimension units labelled (atomic) */
} Pass;

/* A thread's scratch: a centred tile and its screen */
typedef struct Scratch
{
	double	   *rows;			/* tile_rows x d */
	double	   *norm;			/* tile_rows */
	double	   *screen;			/* tile_rows x npanels * 8 */
} Scratch;

static void
free_panels(Panels *p)
{
	free(p->values);
	free(p->norm);
	free(p->norm2);
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
	p->offset = offset;
	width = (size_t) p->npanels * PANEL_WIDTH;
	p->values = aligned_alloc(64, sizeof(double) * width * d);
	p->norm = malloc(sizeof(double) * width);
	p->norm2 = malloc(sizeof(double) * width);
	if (p->values == NULL || p->norm == NULL || p->norm2 == NULL)
	{
		free_panels(p);
		return false;
	}
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
		p->norm[c] = sqrt(s);
	}
	return true;
}

/*
 * Dot products of 4 centred rows (row-major, d apart) with the 8 centroids
 * of a panel, into out (4 rows, ld apart).  Cloned for the vector units.
 */
GC_SIMD_CLONES
static void
dots_4x8(const double *restrict rows, int d, const double *restrict panel,
		 double *restrict out, size_t ld)
{
	v4d			a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0},
				c0 = {0}, c1 = {0}, e0 = {0}, e1 = {0};

	for (int j = 0; j < d; j++)
	{
		v4d			lo,
					hi;

		memcpy(&lo, panel + (size_t) j * PANEL_WIDTH, sizeof(v4d));
		memcpy(&hi, panel + (size_t) j * PANEL_WIDTH + 4, sizeof(v4d));
		a0 += rows[j] * lo;
		a1 += rows[j] * hi;
		b0 += rows[d + j] * lo;
		b1 += rows[d + j] * hi;
		c0 += rows[2 * d + j] * lo;
		c1 += rows[2 * d + j] * hi;
		e0 += rows[3 * d + j] * lo;
		e1 += rows[3 * d + j] * hi;
	}
	memcpy(out, &a0, sizeof(v4d));
	memcpy(out + 4, &a1, sizeof(v4d));
	memcpy(out + ld, &b0, sizeof(v4d));
	memcpy(out + ld + 4, &b1, sizeof(v4d));
	memcpy(out + 2 * ld, &c0, sizeof(v4d));
	memcpy(out + 2 * ld + 4, &c1, sizeof(v4d));
	memcpy(out + 3 * ld, &e0, sizeof(v4d));
	memcpy(out + 3 * ld + 4, &e1, sizeof(v4d));
}

/* The reference's answer for one row, rechecking only the centroids in doubt */
static int
decide_row(const double *x, const double *screen, double xnorm, const Panels *p,
		   double *distance2, int64_t *rechecked)
{
	double		g = ldexp((double) (16 * p->d + 128), -53);
	double		least = DBL_MAX;
	int			best = 0,
				doubted = 0;
	double		bestd = DBL_MAX;

	/* the least screen plus its bound */
	for (int c = 0; c < p->k; c++)
	{
		double		t = xnorm + p->norm[c];
		double		upper = screen[c] + g * t * t;

		if (upper < least)
			least = upper;
	}
	/* every centroid that may be nearer: exact distances in index order */
	for (int c = 0; c < p->k; c++)
	{
		double		t = xnorm + p->norm[c];
		double		s;

		if (!(screen[c] - g * t * t <= least))
			continue;
		doubted++;
		s = gc_sqdist_exact(x, p->centroids + (size_t) c * p->d, p->d);
		if (s < bestd)
		{
			bestd = s;
			best = c;
		}
	}
	/* a bound that overflowed doubts nothing: the reference scan decides */
	if (doubted == 0)
		best = gc_nearest_centroid(x, p->centroids, p->k, p->d, &bestd);
	*rechecked += doubted > 1;
	*distance2 = bestd;
	return best;
}

/* Label the rows of one tile */
static void
label_tile(Pass *pass, Scratch *s, const Tile *tile)
{
	const Panels *p = pass->panels;
	int			d = pass->rows->d;
	size_t		width = (size_t) p->npanels * PANEL_WIDTH;
	const double *values = tile->chunk->values + (size_t) tile->first * d;
	int64_t		first = tile->chunk->first_row + tile->first;
	int64_t		count = tile->count;
	int64_t		padded = (count + KERNEL_ROWS - 1) / KERNEL_ROWS * KERNEL_ROWS;
	int64_t		rechecked = 0;

	/* the tile's rows, centred, and their norms; padding rows are zero */
	for (int64_t r = 0; r < padded; r++)
	{
		double	   *dst = s->rows + (size_t) r * d;
		double		n2 = 0.0;

		if (r < count)
		{
			const double *x = values + (size_t) r * d;

			for (int j = 0; j < d; j++)
			{
				dst[j] = x[j] - p->offset[j];
				n2 += dst[j] * dst[j];
			}
		}
		else
			memset(dst, 0, sizeof(double) * d);
		s->norm[r] = sqrt(n2);
	}
	for (int pi = 0; pi < p->npanels; pi++)
		for (int64_t r = 0; r < padded; r += KERNEL_ROWS)
			dots_4x8(s->rows + (size_t) r * d, d, p->values + (size_t) pi * PANEL_WIDTH * d,
					 s->screen + (size_t) r * width + (size_t) pi * PANEL_WIDTH, width);
	for (int64_t r = 0; r < count; r++)
	{
		double	   *screen = s->screen + (size_t) r * width;
		double		xn2 = s->norm[r] * s->norm[r];
		double		d2;

		for (int c = 0; c < p->k; c++)
			screen[c] = (xn2 + p->norm2[c]) - 2.0 * screen[c];
		pass->labels[first + r] = decide_row(values + (size_t) r * d, screen, s->norm[r], p,
											 &d2, &rechecked);
		if (pass->distances2)
			pass->distances2[first + r] = d2;
	}
	if (rechecked)
		__atomic_fetch_add(&pass->candidates, rechecked, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pass->done_units, count * p->k * (int64_t) d, __ATOMIC_RELAXED);
}

static bool
alloc_scratch(Scratch *s, const Pass *pass)
{
	size_t		width = (size_t) pass->panels->npanels * PANEL_WIDTH;

	s->rows = malloc(sizeof(double) * pass->tile_rows * pass->rows->d);
	s->norm = malloc(sizeof(double) * pass->tile_rows);
	s->screen = malloc(sizeof(double) * pass->tile_rows * width);
	return s->rows != NULL && s->norm != NULL && s->screen != NULL;
}

static void
free_scratch(Scratch *s)
{
	free(s->rows);
	free(s->norm);
	free(s->screen);
}

/* Claim and label one tile; false when none is left or the pass stops */
static bool
label_next_tile(Pass *pass, Scratch *s)
{
	int64_t		t;

	if (__atomic_load_n(&pass->stop, __ATOMIC_RELAXED))
		return false;
	t = __atomic_fetch_add(&pass->next, 1, __ATOMIC_RELAXED);
	if (t >= pass->ntiles)
		return false;
	label_tile(pass, s, &pass->tiles[t]);
	return true;
}

static void *
labeling_thread_main(void *arg)
{
	Pass	   *pass = arg;
	Scratch		s = {0};

	/* without scratch this thread claims nothing: the others label every tile */
	if (alloc_scratch(&s, pass))
		while (label_next_tile(pass, &s))
			;
	free_scratch(&s);
	return NULL;
}

int
gc_cpu_threads(int wanted, int64_t units)
{
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t		worth = units / THREAD_UNITS;
	int			most = wanted > 0 ? wanted : (int) (cores > 1 ? cores : 1);

	if (most > GC_CPU_MAX_THREADS)
		most = GC_CPU_MAX_THREADS;
	if (worth < most)
		most = (int) (worth > 1 ? worth : 1);
	return most;
}

bool
gc_cpu_labeling_applies(const GcRows *rows)
{
	for (int c = 0; c < rows->nchunks; c++)
		if (rows->chunks[c].values == NULL)
			return false;
	return rows->n > 0;
}

/* The tiles of rows [first_row, n): none straddles two chunks */
static bool
build_tiles(Pass *pass, int64_t first_row)
{
	const GcRows *rows = pass->rows;
	int64_t		ntiles = 0;

	for (int c = 0; c < rows->nchunks; c++)
		ntiles += (rows->chunks[c].count + pass->tile_rows - 1) / pass->tile_rows;
	pass->tiles = malloc(sizeof(Tile) * (ntiles > 0 ? ntiles : 1));
	if (pass->tiles == NULL)
		return false;
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];
		int64_t		skip = first_row - chunk->first_row;

		for (int64_t i = skip > 0 ? skip : 0; i < chunk->count; i += pass->tile_rows)
			pass->tiles[pass->ntiles++] = (Tile) {
				chunk, i, chunk->count - i < pass->tile_rows ? chunk->count - i : pass->tile_rows
			};
	}
	return true;
}

GcStatus
gc_cpu_label_rows(const GcRows *rows, int64_t first_row, const double *centroids, int k,
				  const double *offset, int threads, int32_t *labels, double *distances2,
				  GcPoll *poll, int64_t *rechecked, GcError *err)
{
	Pass		pass = {.rows = rows, .labels = labels, .distances2 = distances2};
	Panels		panels = {0};
	Scratch		mine = {0};
	pthread_t	ids[GC_CPU_MAX_THREADS];
	bool		started[GC_CPU_MAX_THREADS] = {false};
	int			helpers;
	int64_t		row_units = (int64_t) k * rows->d;
	int64_t		polled_units = 0;
	size_t		width;
	GcStatus	status = GC_OK;

	if (first_row >= rows->n)
		return GC_OK;
	if (!build_panels(&panels, centroids, k, rows->d, offset))
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the centroid panels");
	pass.panels = &panels;
	width = (size_t) panels.npanels * PANEL_WIDTH;
	pass.tile_rows = (int) (TILE_SCREEN_VALUES / width) / KERNEL_ROWS * KERNEL_ROWS;
	if (pass.tile_rows > TILE_MAX_ROWS)
		pass.tile_rows = TILE_MAX_ROWS;
	/* a tile is at most GC_POLL_WORK units where a kernel's rows allow, so the caller polls in time */
	if ((int64_t) pass.tile_rows * row_units > GC_POLL_WORK)
		pass.tile_rows = (int) (GC_POLL_WORK / row_units) / KERNEL_ROWS * KERNEL_ROWS;
	if (pass.tile_rows < KERNEL_ROWS)
		pass.tile_rows = KERNEL_ROWS;
	if (!build_tiles(&pass, first_row) || !alloc_scratch(&mine, &pass))
	{
		free(pass.tiles);
		free_scratch(&mine);
		free_panels(&panels);
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the labeling tiles");
	}
	helpers = gc_cpu_threads(threads, (rows->n - first_row) * k * (int64_t) rows->d) - 1;
	if (helpers > pass.ntiles - 1)
		helpers = (int) (pass.ntiles - 1);
	for (int t = 0; t < helpers; t++)
		started[t] = gc_thread_create(&ids[t], labeling_thread_main, &pass) == 0;
	do
	{
		/* count the work every thread finished since the last poll */
		int64_t		done = __atomic_load_n(&pass.done_units, __ATOMIC_RELAXED);
		bool		stop = false;

		/* a row at a time, as the reference counts, so no poll is skipped */
		for (; polled_units < done && !stop; polled_units += row_units)
			stop = gc_poll(poll, row_units);
		if (stop)
		{
			__atomic_store_n(&pass.stop, true, __ATOMIC_RELAXED);
			status = gc_fail(err, GC_INTERRUPTED, "interrupted while labelling");
			break;
		}
	} while (label_next_tile(&pass, &mine));
	for (int t = 0; t < helpers; t++)
		if (started[t])
			(void) pthread_join(ids[t], NULL);
	free(pass.tiles);
	free_scratch(&mine);
	free_panels(&panels);
	if (rechecked)
		*rechecked = pass.candidates;
	return status;
}
