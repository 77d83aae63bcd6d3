/*-------------------------------------------------------------------------
 *
 * gc_engine.h
 *	  The plain-C clustering engine: row store, k-means parameters and
 *	  results, and the backend interface that the CPU reference and the
 *	  CUDA backend both implement.
 *
 * Nothing here includes a PostgreSQL header: the engine reports failures
 * through GcError and never throws, allocates with malloc or the row
 * store's allocator, and polls an interrupt hook in its long loops.  The
 * SQL glue in src/ turns a GcError into an ereport.
 *
 * IDENTIFICATION
 *	  engine/gc_engine.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_ENGINE_H
#define GC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Limits of the SQL surface, checked by the glue. */
#define GC_MAX_DIM		65536
#define GC_MAX_K		1000000
/* Largest coordinate magnitude: squared distances stay finite below it */
#define GC_MAX_MAGNITUDE 1.0e150
/* Largest row weight (integers stay exact in double below it) */
#define GC_MAX_WEIGHT	9007199254740992.0

typedef enum GcStatus
{
	GC_OK = 0,
	GC_INTERRUPTED,				/* the interrupt hook asked to stop */
	GC_ERR_HOST_MEMORY,			/* malloc or pinned allocation failed */
	GC_ERR_DEVICE_MEMORY,		/* cudaMalloc failed */
	GC_ERR_DEVICE,				/* any other CUDA failure */
	GC_ERR_NO_DEVICE,			/* no usable GPU */
	GC_ERR_RANGE				/* values too large to square safely */
} GcStatus;

typedef struct GcError
{
	GcStatus	status;
	char		message[256];	/* what failed, e.g. the CUDA call and error name */
} GcError;

/* Records a failure in err (if not already set) and returns status. */
extern GcStatus gc_fail(GcError *err, GcStatus status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------------
 * Row store: rows appended one at a time into chunks of (possibly pinned)
 * host memory.  Chunks double in size up to a cap, so that small inputs
 * stay small and large ones need few allocations; rows are never copied
 * after they are appended.  Rows may carry weights (a parallel array per
 * chunk): whole numbers from 1 to GC_MAX_WEIGHT, the rows a stream
 * summary's centre stands for.  k-means then minimises the weighted
 * inertia, with the same exact integer arithmetic as for unweighted rows
 * (a row of weight w counts as w copies of it).
 * ---------------------------------------------------------------------
 */
typedef void *(*GcHostAlloc) (size_t bytes);
typedef void (*GcHostFree) (void *ptr);

typedef struct GcChunk
{
	double	   *values;			/* capacity * d values, row-major */
	uint64_t   *hashes;			/* capacity row hashes */
	double	   *weights;		/* capacity row weights; NULL when unweighted */
	int64_t		first_row;		/* index of this chunk's first row */
	int64_t		count;			/* rows used */
	int64_t		capacity;		/* rows allocated */
} GcChunk;

typedef struct GcRows
{
	int			d;
	int64_t		n;
	int			nchunks;
	int			maxchunks;
	GcChunk    *chunks;
	double	   *lo;				/* per-dimension minimum */
	double	   *hi;				/* per-dimension maximum */
	bool		weighted;		/* rows carry weights (gc_rows_set_weighted) */
	int64_t		total_weight;	/* sum of the weights (n when unweighted) */
	bool		bad_weight;		/* some weight is not a whole number in range */
	GcHostAlloc alloc;			/* allocator for chunk memory */
	GcHostFree	free;
} GcRows;

extern GcStatus gc_rows_init(GcRows *rows, int d, GcHostAlloc alloc,
							 GcHostFree free, GcError *err);
extern double *gc_rows_reserve(GcRows *rows, GcError *err);
extern void gc_rows_commit(GcRows *rows);
/* Weighted rows: call before the first row, then commit with a weight */
extern void gc_rows_set_weighted(GcRows *rows);
extern void gc_rows_commit_weighted(GcRows *rows, double weight);
extern double gc_rows_weight(const GcRows *rows, int64_t i);
extern const double *gc_rows_get(const GcRows *rows, int64_t i);
extern uint64_t gc_rows_hash(const GcRows *rows, int64_t i);
extern void gc_rows_release(GcRows *rows);

/* ---------------------------------------------------------------------
 * Numeric frame shared by both backends so that their results agree bit
 * for bit: data are labelled relative to the bounding box's centre, and
 * centroid sums are accumulated as exact 64-bit fixed-point integers
 * (so their value does not depend on the order in which rows are added);
 * the scale leaves room for the total weight of the rows, so weighted
 * sums (weight times quantised value) are exact integers too.
 * ---------------------------------------------------------------------
 */
typedef struct GcFrame
{
	int			d;
	double	   *offset;			/* per-dimension bounding-box centre */
	double	   *scale;			/* per-dimension fixed-point scale, a power of 2 */
	double		diagonal;		/* bounding-box diagonal, for tol */
	int			inertia_exp;	/* squared distances summed in units of 2^-inertia_exp */
} GcFrame;

/* Sum of exactly quantised squared distances, back to a double */
extern double gc_inertia_value(unsigned __int128 sum, const GcFrame *frame);

extern GcStatus gc_frame_init(GcFrame *frame, const GcRows *rows, GcError *err);
extern void gc_frame_release(GcFrame *frame);

/* ---------------------------------------------------------------------
 * k-means
 * ---------------------------------------------------------------------
 */
typedef enum GcInit
{
	GC_INIT_KMEANSPP = 0,
	GC_INIT_RANDOM,
	GC_INIT_GIVEN
} GcInit;

typedef enum GcAlgorithm
{
	GC_ALGORITHM_AUTO = 0,		/* the hybrid: pruned when it pays */
	GC_ALGORITHM_LLOYD,
	GC_ALGORITHM_PRUNED			/* triangle inequality (Wu & Hong, 2011) */
} GcAlgorithm;

typedef enum GcPrecision
{
	GC_PRECISION_FLOAT32 = 0,	/* GPU labeling at float32 accuracy (exact labels) */
	GC_PRECISION_FLOAT64,		/* GPU labeling in double */
	GC_PRECISION_TF32,			/* tensor cores, TF32 inputs: ~1e-3 error */
	GC_PRECISION_BF16			/* tensor cores, bfloat16 inputs: fastest, ~4e-3 error */
} GcPrecision;

typedef struct GcKmeansParams
{
	int			k;
	int			max_iter;		/* default 300 */
	double		tol;			/* relative centroid shift, default 1e-4 */
	GcInit		init;
	const double *init_centroids;	/* k * d values when init is GIVEN */
	uint64_t	seed;			/* default 0 */
	int			init_candidates;	/* k-means++ candidates per step; 0: 2 + ln k */
	int			n_init;			/* restarts, default 1 */
	GcAlgorithm algorithm;		/* default auto */
	GcPrecision precision;		/* default float32; the CPU always uses double */
	bool		(*interrupted) (void);	/* polled in long loops */
} GcKmeansParams;

typedef struct GcKmeansTimings
{
	double		transfer_ms;
	double		seeding_ms;
	double		iterations_ms;	/* everything after seeding, scoring included */
	double		labeling_ms;	/* of which labeling, where measured (GPU) */
	double		update_ms;		/* of which centroid updates, where measured */
} GcKmeansTimings;

typedef struct GcKmeansResult
{
	double	   *centroids;		/* caller-allocated, k * d */
	int64_t    *sizes;			/* caller-allocated, k */
	int32_t    *labels;			/* optional, caller-allocated, n */
	double	   *distances;		/* optional, caller-allocated, n */
	double		inertia;
	int			iterations;
	bool		converged;
	bool		pruned;			/* the best run used pruned labeling */
	double		skipped_fraction;	/* distance computations pruning skipped */
	double		rechecked_fraction; /* labels a tensor pass left to a more exact one */
	double		exact_fraction; /* labels left to the exact (double) check */
	const char *kernel;
	GcKmeansTimings timings;
} GcKmeansResult;

/*
 * What one Lloyd run reports back to the driver.  The centroid update
 * itself is exact (fixed point), so both backends produce the same
 * centroids whenever their labels agree.
 */
typedef struct GcLloydOutcome
{
	int			iterations;
	bool		converged;
	bool		pruned;			/* pruned labeling ran in some iteration */
	double		distances;		/* point-centroid distances computed */
	double		distances_lloyd;	/* what Lloyd's would have computed */
	double		rechecked;		/* points a tensor pass sent to a more exact one */
	double		exact_checked;	/* of which, points left to the exact check */
	const char *kernel;			/* labeling kernel used last */
	double		labeling_ms;	/* device time in labeling, where measured */
	double		update_ms;		/* device time in centroid updates */
} GcLloydOutcome;

/*
 * A backend: a session over one row set, seeded and iterated as many
 * times as n_init asks.  Centroids cross this interface in the caller's
 * coordinates (not centred).
 */
typedef struct GcKmeansBackend
{
	const char *name;
	GcStatus	(*open) (const GcRows *rows, const GcFrame *frame,
						 const GcKmeansParams *params, void **session,
						 GcError *err);
	/*
	 * k-means++ seeding, greedy when gc_seed_candidates(params) > 1
	 * (order-independent exponential races, engine/seeding.c)
	 */
	GcStatus	(*seed_kmeanspp) (void *session, const GcKmeansParams *params,
								  uint64_t seed, int64_t *chosen, GcError *err);
	GcStatus	(*lloyd) (void *session, const GcKmeansParams *params,
						  double *centroids, GcLloydOutcome *outcome,
						  GcError *err);
	/* labels, distances (both optional), sizes and inertia for centroids */
	GcStatus	(*score) (void *session, const double *centroids,
						  int32_t *labels, double *distances, int64_t *sizes,
						  double *inertia, GcError *err);
	void		(*close) (void *session);
	bool		weighted;		/* handles weighted rows */
} GcKmeansBackend;

extern const GcKmeansBackend gc_kmeans_cpu_backend;

/* A weight as the integer it is checked to be (1 for unweighted rows) */
static inline int64_t
gc_chunk_weight(const GcChunk *chunk, int64_t i)
{
	return chunk->weights ? (int64_t) chunk->weights[i] : 1;
}

/* Runs n_init restarts on backend and fills result with the best. */
extern GcStatus gc_kmeans_fit(const GcKmeansBackend *backend,
							  const GcRows *rows,
							  const GcKmeansParams *params,
							  GcKmeansResult *result, GcError *err);

/* Shared pieces of the algorithm, identical on both backends. */
extern GcStatus gc_select_random_rows(const GcRows *rows, int k, uint64_t seed,
									  int64_t *chosen, GcError *err);
extern int	gc_nearest_centroid(const double *x, const double *centroids,
								int k, int d, double *distance2);

/*
 * Greedy k-means++ (engine/seeding.c).  Step 0 draws one row uniformly;
 * each later step draws gc_seed_candidates() rows with probability
 * proportional to weight times D^2 (candidate j by its own race, stream
 * gc_seed_stream(t, j), gc_math.h) and keeps the one that lowers the potential
 * sum w min(D^2, |x - c|^2), summed exactly in units of
 * 2^-frame->inertia_exp, the most (the lowest candidate on ties).  One
 * candidate is plain k-means++.
 */
#define GC_MAX_INIT_CANDIDATES 64
extern int	gc_seed_candidates(const GcKmeansParams *params);

/* The CPU reference of greedy (and plain) k-means++ */
extern GcStatus gc_seed_kmeanspp_cpu(const GcRows *rows, const GcFrame *frame,
									 const GcKmeansParams *params, uint64_t seed,
									 int64_t *chosen, GcError *err);

/* Monotonic clock in milliseconds. */
extern double gc_now_ms(void);

#ifdef __cplusplus
}
#endif

#endif							/* GC_ENGINE_H */
