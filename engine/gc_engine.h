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
 * after they are appended.  With max_bytes set, the chunks together stay
 * within it and a row past it fails with GC_ERR_HOST_MEMORY.  Rows may carry weights (a parallel array per
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
	bool		borrowed;		/* memory owned elsewhere: never freed here */
	GcHostFree	free;			/* frees this chunk's arrays */
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
	size_t		max_bytes;		/* chunk memory allowed, 0 for no limit */
	GcHostAlloc alloc;			/* allocator for new chunks */
	GcHostFree	free;
} GcRows;

extern GcStatus gc_rows_init(GcRows *rows, int d, GcHostAlloc alloc,
							 GcHostFree free, GcError *err);
/* New chunks from alloc (page-locked once the GPU will read the rows) */
extern void gc_rows_set_allocator(GcRows *rows, GcHostAlloc alloc,
								  GcHostFree free);
extern double *gc_rows_reserve(GcRows *rows, GcError *err);
extern void gc_rows_commit(GcRows *rows);
/* Weighted rows: call before the first row, then commit with a weight */
extern void gc_rows_set_weighted(GcRows *rows);
extern void gc_rows_commit_weighted(GcRows *rows, double weight);
extern double gc_rows_weight(const GcRows *rows, int64_t i);
extern const double *gc_rows_get(const GcRows *rows, int64_t i);
/*
 * Append src->count rows held in src's arrays as one chunk (a partial
 * state's rows, gathered from another process): lo, hi and total_weight
 * describe them.  A borrowed chunk is used in place and never freed by
 * the store; any other chunk must come from the store's allocator and is
 * freed with it.
 */
extern GcStatus gc_rows_append_chunk(GcRows *rows, const GcChunk *src,
									 const double *lo, const double *hi,
									 int64_t total_weight, bool bad_weight,
									 GcError *err);
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

typedef enum GcMetric
{
	GC_METRIC_EUCLIDEAN = 0,
	GC_METRIC_COSINE			/* spherical: unit rows, centroids renormalised */
} GcMetric;
/*
 * A GPU labeling kernel, from the choice (params.kernel, AUTO unless a
 * benchmark or a test forces one) to the launch.  AUTO picks by precision
 * and shape (cuda/labelers.cu); a forced kernel is honoured where the
 * precision is float32: REGISTER and TILED ask for the SIMT kernel
 * (register up to d = 32, tiled above), TENSOR_SCREENED and TENSOR_3XTF32
 * for the TF32 screen, the others for themselves.  Under precision bf16,
 * TENSOR_BF16 asks for the mma.sync kernel and TENSOR_BF16_WGMMA for the
 * Hopper one (where the device runs it).  The CPU ignores it.
 */
typedef enum GcKernel
{
	GC_KERNEL_AUTO = 0,
	GC_KERNEL_REGISTER,			/* SIMT, the point in registers (d <= 32) */
	GC_KERNEL_TILED,			/* SIMT, centroid tiles in shared memory */
	GC_KERNEL_TENSOR_SCREENED,	/* TF32 screen, 3xTF32 and exact checks */
	GC_KERNEL_TENSOR_3XTF32,	/* 3xTF32 and exact checks (the screen's stand-in) */
	GC_KERNEL_TENSOR_TF32,		/* TF32 alone (precision tf32) */
	GC_KERNEL_TENSOR_BF16,		/* bf16 alone (precision bf16) */
	GC_KERNEL_FLOAT64,			/* double (precision float64) */
	GC_KERNEL_TENSOR_BF16_WGMMA,	/* bf16 on Hopper's wgmma (precision bf16, sm_90a) */
	GC_KERNEL_COUNT
} GcKernel;

/* The kernel's name as results and models report it ("register", ...) */
extern const char *gc_kernel_name(GcKernel kernel);

/*
 * What a fit is doing, for the progress it reports.  QUEUED (waiting for
 * the GPU) and COLLECTING are the glue's; the engine reports the others.
 */
typedef enum GcPhase
{
	GC_PHASE_COLLECTING = 0,	/* rows are being read */
	GC_PHASE_QUEUED,			/* waiting for the GPU */
	GC_PHASE_UPLOADING,			/* opening the backend: upload on the GPU */
	GC_PHASE_SEEDING,			/* initial centroids of a restart */
	GC_PHASE_ITERATING,			/* Lloyd iterations */
	GC_PHASE_RETURNING			/* final labels and distances */
} GcPhase;

/*
 * Progress callback: called at phase changes and once per iteration, so it
 * must be cheap (no allocation, no system call).  shift is the iteration's
 * largest centroid shift relative to the bounding-box diagonal (the unit of
 * tol); inertia is the lowest of the restarts finished so far.  Either is
 * NaN where the caller does not know it.
 */
typedef void (*GcProgressFn) (void *arg, GcPhase phase, int iteration,
							  double shift, double inertia);

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
	GcMetric	metric;			/* cosine: the rows must be unit vectors */
	GcKernel	kernel;			/* default auto; benchmarks and tests force one */
	bool		tensor_streamed;	/* tensor passes stream both operands (benchmarks) */
	bool		(*interrupted) (void);	/* polled in long loops */
	GcProgressFn progress;		/* NULL: none */
	void	   *progress_arg;
} GcKmeansParams;

/* Report progress to params' callback, if any */
static inline void
gc_report_progress(const GcKmeansParams *params, GcPhase phase, int iteration,
				   double shift, double inertia)
{
	if (params->progress)
		params->progress(params->progress_arg, phase, iteration, shift, inertia);
}

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
 * The hybrid's rules for one device (engine/kmeans_hybrid.c): when the
 * driver tries pruned labeling, how it probes, and when it goes back to
 * Lloyd's.  Each backend offers its own constants, measured on it.
 */
typedef struct GcHybridRules
{
	int			pruned_min_k;	/* algorithm pruned: fewest centroids it prunes */
	int			pruned_max_k;	/* any: most centroids pruned labeling takes */
	int			auto_min_k;		/* auto: fewest centroids worth pruning */
	int			auto_min_rows_per_k;	/* auto: n >= this k */
	double		auto_start_ratio;	/* auto: k log2 k <= this n d (0: no test) */
	int			probe_fraction; /* auto's first pruned pass labels n / this (0: all) */
	int64_t		probe_min_rows; /* ... but at least this many rows */
	double		max_work_ratio; /* auto: back to Lloyd's when mean work > this k */
	double		settled;		/* re-order rows by work once mean work moves less (0: never) */
} GcHybridRules;

extern const GcHybridRules gc_hybrid_cpu_rules;
extern const GcHybridRules gc_hybrid_gpu_rules;

/* What a backend offers a restart, once its centroids are loaded */
typedef struct GcRestartPlan
{
	const char *kernel;			/* the labeling kernel it starts with */
	bool		can_prune;		/* its Lloyd labeling can share an iteration with pruning */
} GcRestartPlan;

/*
 * What one label-and-update step did: the few numbers the device sends
 * back per iteration.  The centroid update is exact (fixed point), so
 * both backends produce the same centroids whenever their labels agree.
 */
typedef struct GcStepStatus
{
	int64_t		changed;		/* labels that changed */
	double		max_shift2;		/* largest squared centroid shift */
	double		pruned_work;	/* distances computed on the pruned rows */
	double		distances;		/* distances computed on all rows */
	double		rechecked;		/* points a tensor pass sent to a more exact one */
	double		exact_checked;	/* of which, points left to the exact check */
	double		labeling_ms;	/* device time in labeling, where measured */
	double		update_ms;		/* device time in the centroid update */
	const char *kernel;			/* the labeling kernel of this step */
} GcStepStatus;

/*
 * A backend: a session over one row set, offering the steps of which the
 * driver (gc_kmeans_fit) makes restarts and iterations.  Centroids cross
 * this interface in the caller's coordinates (not centred).
 */
typedef struct GcKmeansBackend
{
	const char *name;
	const GcHybridRules *hybrid;
	/* step polls the interrupt hook itself; else the driver, once per iteration */
	bool		step_polls;
	GcStatus	(*open) (const GcRows *rows, const GcFrame *frame,
						 const GcKmeansParams *params, void **session,
						 GcError *err);
	/*
	 * k-means++ seeding, greedy when gc_seed_candidates(params, n, d) > 1
	 * (order-independent exponential races, engine/seeding.c)
	 */
	GcStatus	(*seed_kmeanspp) (void *session, const GcKmeansParams *params,
								  uint64_t seed, int64_t *chosen, GcError *err);
	/* a restart from centroids: no labels yet */
	GcStatus	(*begin) (void *session, const double *centroids,
						  GcRestartPlan *plan, GcError *err);
	/* buffers of pruned labeling; *available false where it cannot run */
	GcStatus	(*prepare_pruning) (void *session, bool *available, GcError *err);

	/*
	 * One iteration: the first pruned_rows rows labelled by pruning from
	 * their previous labels, the rest by Lloyd's, then the centroid update
	 */
	GcStatus	(*step) (void *session, int64_t pruned_rows, GcStepStatus *status,
						 GcError *err);
	/* rows in decreasing order of pruned work (by_work) or back in input order; NULL: none */
	GcStatus	(*order_rows) (void *session, bool by_work, GcError *err);
	/* the centroids the restart ended with, rows back in input order */
	GcStatus	(*end) (void *session, double *centroids, GcError *err);
	/* labels, distances (both optional), sizes and inertia for centroids */
	GcStatus	(*score) (void *session, const double *centroids,
						  int32_t *labels, double *distances, int64_t *sizes,
						  double *inertia, GcError *err);
	void		(*close) (void *session);
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
 * each later step draws gc_seed_candidates(params, n, d) rows with probability
 * proportional to weight times D^2 (candidate j by its own race, stream
 * gc_seed_stream(t, j), gc_math.h) and keeps the one that lowers the potential
 * sum w min(D^2, |x - c|^2), summed exactly in units of
 * 2^-frame->inertia_exp, the most (the lowest candidate on ties).  One
 * candidate is plain k-means++.
 */
#define GC_MAX_INIT_CANDIDATES 64
extern int	gc_seed_candidates(const GcKmeansParams *params, int64_t n, int d);

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
