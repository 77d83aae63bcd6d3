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

#include <pthread.h>
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

/*
 * On a function whose loops vectorise (exact operations only): clones for
 * AVX-512 and AVX2 beside the baseline build, one chosen when the library
 * loads (GCC 12 or later on x86-64 with glibc, whose ifunc picks the clone;
 * elsewhere the baseline alone)
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && \
	defined(__GLIBC__)
#define GC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GC_SIMD_CLONES
#endif

/* Records a failure in err (if not already set) and returns status. */
extern GcStatus gc_fail(GcError *err, GcStatus status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------------
 * Cancel by work, not by rows.  Every loop that can run long counts what
 * it does in distance-dimension units (one coordinate of one distance:
 * labelling a row against k centroids of d dimensions is k d units) and
 * polls the interrupt hook once GC_POLL_WORK units have passed since the
 * last poll: about 10 ms of one CPU core (an exact double distance costs
 * about a nanosecond per coordinate; with small d a row's bookkeeping
 * costs as much again, and a loaded core three times more, so 50 ms is
 * the worst seen), whatever n, k and d.  Polls cost next to nothing (the
 * hook reads a flag), so there is no gain in fewer.  A single item
 * larger than that (a row against a million centroids) is split with
 * gc_poll_span.  The GPU backends cut their long launches into chunks of
 * rows of about GC_POLL_WORK_GPU units each (gc_poll_gpu_items) and poll
 * between chunks; the hook itself is the glue's (src/interrupt.c), which
 * asks PostgreSQL, so a cancel, a termination and a lost client all count.
 * ---------------------------------------------------------------------
 */
#define GC_POLL_WORK	(INT64_C(1) << 23)

/*
 * The GPU's share between two polls: 2^38 units, 10 to 30 ms of an H100's
 * float64 pipes (the slowest path: float64 labeling, k-means++ seeding,
 * the p-median kernels, about 1e13 units a second) and less on the
 * float32 and tensor-core paths.  A chunk of rows is a multiple of
 * GC_POLL_MIN_GPU_ROWS, 2,048 warps of one row a thread (15 a
 * multiprocessor on an H100): below that a chunk would no longer keep
 * the device busy, and splitting would slow the fit down instead of
 * bounding the wait.  Device memory bounds what a chunk of that many
 * rows can cost (n d values must fit beside the centroids).
 */
#define GC_POLL_WORK_GPU	(INT64_C(1) << 38)
#define GC_POLL_MIN_GPU_ROWS	INT64_C(65536)

/*
 * What a pass of one thread per row over n rows, per_row units each,
 * costs in GPU time, in units: as much as GC_POLL_MIN_GPU_ROWS rows where
 * there are fewer (they leave the device idle, not the pass shorter).  So
 * k-means++ over 2,100 rows of d = 65,536 polls every 64 steps, not every
 * 2,000.
 */
static inline int64_t
gc_gpu_pass_units(int64_t n, int64_t per_row)
{
	return (n > GC_POLL_MIN_GPU_ROWS ? n : GC_POLL_MIN_GPU_ROWS) * per_row;
}

typedef struct GcPoll
{
	bool		(*interrupted) (void);	/* NULL: never interrupted */
	int64_t		work;			/* units counted since the last poll */
} GcPoll;

/*
 * Count units of work done; true when the hook, polled once GC_POLL_WORK
 * units have accumulated, asks to stop
 */
static inline bool
gc_poll(GcPoll *poll, int64_t units)
{
	poll->work += units;
	if (poll->work < GC_POLL_WORK)
		return false;
	poll->work = 0;
	return poll->interrupted != NULL && poll->interrupted();
}

/* Items of unit units each that fit in one poll's budget (at least 1) */
extern int64_t gc_poll_span(int64_t unit);

/*
 * memcpy from src, or zeroes where src is NULL, of bytes, polling between
 * slices: a byte counts as one unit (fresh memory's first-touch page
 * faults cost about a nanosecond a byte); false when the hook asked to stop
 */
extern bool gc_copy_polled(void *dst, const void *src, size_t bytes, GcPoll *poll);

/*
 * GPU: items of unit units each that one launch, or the launches between
 * two polls, take: about GC_POLL_WORK_GPU units, in whole granules of
 * items (at least one), at most count
 */
extern int64_t gc_poll_gpu_items(int64_t unit, int64_t granule, int64_t count);

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
	double	   *values;			/* capacity * d values, row-major; NULL when narrow */
	float	   *narrow_values;	/* the same as float32 in a narrow store (GcRows.narrow) */
	uint64_t   *hashes;			/* capacity row hashes */
	double	   *weights;		/* capacity row weights; NULL when unweighted */
	int64_t		first_row;		/* index of this chunk's first row */
	int64_t		count;			/* rows used */
	int64_t		capacity;		/* rows allocated */
	bool		borrowed;		/* memory owned elsewhere: never freed here */
	bool		float_exact;	/* gc_rows_append_chunk: every value is a
								 * float32 value (GcRows.float_exact) */
	bool		hashes_pending; /* rows committed without their hashes
								 * (GcRows.defer_hashes): hashes[] means
								 * nothing until gc_rows_finish_hashes */
	GcHostFree	free;			/* frees this chunk's arrays */
} GcChunk;

/*
 * Placement of a store's large chunks in memory another process can read
 * (a parallel worker's rows in shared memory, where the leader borrows
 * them): place sets the arrays of a chunk of chunk->capacity rows and
 * marks it borrowed, or returns false, after which the store allocates
 * every chunk itself.  Chunks of at least min_bytes are offered, and
 * placed chunks grow to max_bytes.
 */
struct GcRows;
typedef bool (*GcPlaceChunk) (void *arg, GcChunk *chunk, const struct GcRows *rows);

typedef struct GcChunkPlacement
{
	GcPlaceChunk place;			/* NULL: none */
	void	   *arg;
	size_t		min_bytes;
	size_t		max_bytes;
} GcChunkPlacement;

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
	bool		float_exact;	/* every value is a float32 value (vector,
								 * halfvec and real[] rows: an upload may
								 * move them as float32) */
	bool		narrow;			/* values held as float32 (gc_rows_set_narrow) */
	bool		defer_hashes;	/* commits leave the row hashes to
								 * gc_rows_finish_hashes */
	size_t		max_bytes;		/* chunk memory allowed, 0 for no limit */
	GcHostAlloc alloc;			/* allocator for new chunks */
	GcHostFree	free;
	GcChunkPlacement placement; /* where large chunks go, if elsewhere */
} GcRows;

extern GcStatus gc_rows_init(GcRows *rows, int d, GcHostAlloc alloc,
							 GcHostFree free, GcError *err);
/* New chunks from alloc (page-locked once the GPU will read the rows) */
extern void gc_rows_set_allocator(GcRows *rows, GcHostAlloc alloc,
								  GcHostFree free);
extern double *gc_rows_reserve(GcRows *rows, GcError *err);

/*
 * Narrow stores.  Rows whose values are all float32 values (vector,
 * halfvec and real[] columns under the Euclidean metric) can be held as
 * float32: half the bytes to write while collecting, to hand from a
 * parallel worker to its leader and to upload, and twice the rows within
 * a memory limit.  Their hashes and bounding box are those of the same
 * values held as doubles, so a fit gives the same clusters either way.
 * The GPU backend reads them as they are (GcKmeansBackend.reads_narrow);
 * the engine's other readers want doubles (gc_rows_get, a chunk's
 * values), and gc_rows_widen gives them those first.
 */
/* Hold the rows as float32; only allowed while the store is empty */
extern void gc_rows_set_narrow(GcRows *rows);
/* A narrow store's slot for the next row; gc_rows_commit makes it count */
extern float *gc_rows_reserve_narrow(GcRows *rows, GcError *err);
/* Turn a narrow store into one of doubles, chunk by chunk */
extern GcStatus gc_rows_widen(GcRows *rows, GcError *err);
/* Row i's values as doubles into out, from a store of either width */
extern void gc_rows_copy_row(const GcRows *rows, int64_t i, double *out);
/* Bytes a row takes in a chunk: its values, its hash and its weight */
extern size_t gc_row_bytes(int d, bool narrow, bool weighted);

/* Bytes one value takes: a float in a narrow store, else a double */
static inline size_t
gc_value_bytes(bool narrow)
{
	return narrow ? sizeof(float) : sizeof(double);
}

/* A chunk's values, whichever their width */
static inline void *
gc_chunk_values(const GcChunk *chunk)
{
	return chunk->narrow_values ? (void *) chunk->narrow_values : (void *) chunk->values;
}

/* Point a chunk at values of the width narrow says */
static inline void
gc_chunk_set_values(GcChunk *chunk, void *values, bool narrow)
{
	chunk->values = narrow ? NULL : (double *) values;
	chunk->narrow_values = narrow ? (float *) values : NULL;
}
/* A chunk's arrays for capacity rows from the store's allocator */
extern GcStatus gc_rows_alloc_arrays(const GcRows *rows, GcChunk *chunk, int64_t capacity,
									 GcError *err);
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
/* Row i's hash: its chunk's, or computed from its values while pending */
extern uint64_t gc_rows_hash(const GcRows *rows, int64_t i);

/*
 * Deferred row hashes (engine/row_hashes.c).  Hashing a row costs about
 * as much as copying it in (two 64-bit multiplies a value), and a serial
 * collection runs on one core.  A store whose rows all reach a fit in
 * this process can leave the hashes to one pass over the whole store on
 * every core, just before the fit: commits then widen the bounding box
 * alone.  The hashes are the same either way.  gc_kmeans_fit finishes
 * them itself; whatever copies a store's hashes elsewhere finishes them
 * first.
 */
/* Commits from now on leave their rows' hashes pending */
extern void gc_rows_defer_hashes(GcRows *rows);
/*
 * Compute every pending hash, on up to GC_HASH_THREADS threads, polling
 * interrupted (may be NULL) on the calling thread; GC_INTERRUPTED leaves
 * the store pending as it was
 */
extern GcStatus gc_rows_finish_hashes(GcRows *rows, bool (*interrupted) (void),
									  GcError *err);
#define GC_HASH_THREADS 16
/* gc_row_hash of row r of a chunk of d-dimensional rows, either width */
extern uint64_t gc_chunk_row_hash(const GcChunk *chunk, int64_t r, int d);

/* Reorder in place: row i becomes old row order[i] (order is consumed) */
extern GcStatus gc_rows_permute(GcRows *rows, int64_t *order, GcError *err);
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
	GC_INIT_KMEANSPP = 0,		/* k-means++, greedy or plain (gc_seed_candidates) */
	GC_INIT_RANDOM,
	GC_INIT_GIVEN,
	GC_INIT_KMEANS_PARALLEL,	/* k-means|| (Bahmani et al., 2012) */
	GC_INIT_AUTO				/* k-means++, or k-means|| where greedy is too slow */
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
	GC_PRECISION_BF16,			/* tensor cores, bfloat16 inputs: fastest, ~4e-3 error */
	GC_PRECISION_FP16,			/* tensor cores, float16 inputs (rows scaled into range): ~1e-3 error */
	GC_PRECISION_AUTO			/* the fastest whose sampled labels pass the check */
} GcPrecision;

/* Whether labels at this precision are not exact: the fit checks them on a sample */
static inline bool
gc_precision_is_reduced(GcPrecision precision)
{
	return precision == GC_PRECISION_TF32 || precision == GC_PRECISION_BF16 ||
		precision == GC_PRECISION_FP16;
}

typedef enum GcMetric
{
	GC_METRIC_EUCLIDEAN = 0,
	GC_METRIC_COSINE			/* spherical: unit rows, centroids renormalised */
} GcMetric;
/*
 * A GPU labeling kernel, from the choice (params.kernel, AUTO unless a
 * benchmark or a test forces one) to the launch.  AUTO picks by precision
 * and shape (cuda/labeler_table.cu); a forced kernel is honoured where the
 * precision is float32: REGISTER and TILED ask for the SIMT kernel
 * (register up to d = 32, tiled above), TENSOR_SCREENED and TENSOR_3XTF32
 * for the TF32 screen on mma.sync, TENSOR_SCREENED_WGMMA for it on Hopper's
 * wgmma (where the device runs it; AUTO's choice there), the others for
 * themselves.  Under precision bf16,
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
	GC_KERNEL_TENSOR_FP16,		/* fp16 alone (precision fp16) */
	GC_KERNEL_TENSOR_BF16_WGMMA,	/* bf16 on Hopper's wgmma (precision bf16, sm_90a) */
	GC_KERNEL_TENSOR_FP16_WGMMA,	/* fp16 on Hopper's wgmma (precision fp16, sm_90a) */
	GC_KERNEL_TENSOR_SCREENED_WGMMA,	/* the TF32 screen on Hopper's wgmma (sm_90a) */
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
	int			cpu_threads;	/* CPU passes' threads; 0: every online core */
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
	double		check_ms;		/* the check of reduced precision (precision_check.c) */
	double		iterations_ms;	/* everything after seeding, scoring included */
	double		labeling_ms;	/* of which labeling, where measured (GPU) */
	double		update_ms;		/* of which centroid updates, where measured */
	double		steps_ms;		/* of which the iterations' steps, wall time */
	double		scoring_ms;		/* of which the scoring passes, wall time */
} GcKmeansTimings;

/*
 * The guard on reduced precision (engine/precision_check.c).  Before the
 * first restart iterates, a backend whose labels are not exact (tf32,
 * bf16, fp16) labels a fixed sample of rows against the starting
 * centroids, and the driver compares with their exact labels (double):
 * where the sample's inertia under the reduced labels exceeds its exact
 * inertia by more than GC_PRECISION_MAX_EXCESS, the fit falls back to
 * float32 (precision auto: to the next precision of its ladder, fp16,
 * tf32, float32).  Near-ties make labels disagree at no cost, so the
 * bound is on the inertia; the disagreement is reported beside it.
 */
#define GC_PRECISION_SAMPLE_ROWS 4096
#define GC_PRECISION_SAMPLE_SEED UINT64_C(0x9e3779b97f4a7c15)
#define GC_PRECISION_MAX_EXCESS 0.01

typedef enum GcCheckOutcome
{
	GC_CHECK_NONE = 0,			/* exact labels: nothing to check */
	GC_CHECK_PASSED,			/* the reduced precision ran */
	GC_CHECK_FELL_BACK			/* it mislabelled the sample: a more exact one ran */
} GcCheckOutcome;

typedef struct GcPrecisionCheck
{
	GcCheckOutcome outcome;
	GcPrecision checked;		/* the last reduced precision measured */
	int			sampled;		/* rows in the sample */
	double		disagreement;	/* fraction of them labelled unlike the exact labels */
	double		inertia_excess; /* their inertia over the exact labels' inertia, less 1 */
} GcPrecisionCheck;

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
	const char *init;			/* the seeding that ran: gc_init_name */
	GcPrecision precision;		/* that labeled: as asked, or float64 where
								 * the rows' range is beyond float32's */
	GcPrecisionCheck check;		/* the sampled check of reduced precision */
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
	/* open reads narrow stores as they are; else gc_kmeans_fit widens them */
	bool		reads_narrow;
	GcStatus	(*open) (const GcRows *rows, const GcFrame *frame,
						 const GcKmeansParams *params, void **session,
						 GcError *err);
	/*
	 * k-means++ seeding, greedy when gc_seed_candidates(params, n, d) > 1
	 * (order-independent exponential races, engine/seeding.c)
	 */
	GcStatus	(*seed_kmeanspp) (void *session, const GcKmeansParams *params,
								  uint64_t seed, int64_t *chosen, GcError *err);
	/* k-means|| seeding (engine/seeding_parallel.c) */
	GcStatus	(*seed_kmeans_parallel) (void *session, const GcKmeansParams *params,
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

	/*
	 * The precision check's steps (engine/precision_check.c); NULL where
	 * labels are always exact (the CPU computes in double).  precision:
	 * what Lloyd's labeling runs at now; set_precision: run at another
	 * from the next restart on; label_sample: the labels of the m rows
	 * listed (in increasing order) under centroids as Lloyd's labeling
	 * gives them, and exactly (the engine's double distance), between
	 * restarts (the next begin starts afresh)
	 */
	GcPrecision (*precision) (void *session);
	GcStatus	(*set_precision) (void *session, GcPrecision precision, GcError *err);
	GcStatus	(*label_sample) (void *session, const double *centroids,
								 const int64_t *sample, int m, int32_t *labels,
								 int32_t *exact, GcError *err);
} GcKmeansBackend;

extern const GcKmeansBackend gc_kmeans_cpu_backend;

/* A weight as the integer it is checked to be (1 for unweighted rows) */
static inline int64_t
gc_chunk_weight(const GcChunk *chunk, int64_t i)
{
	return chunk->weights ? (int64_t) chunk->weights[i] : 1;
}

/*
 * Runs n_init restarts on backend and fills result with the best; a
 * narrow store is widened first (gc_rows_widen) for a backend that reads
 * doubles only.
 */
extern GcStatus gc_kmeans_fit(const GcKmeansBackend *backend,
							  GcRows *rows,
							  const GcKmeansParams *params,
							  GcKmeansResult *result, GcError *err);

/* Shared pieces of the algorithm, identical on both backends. */
extern GcStatus gc_select_random_rows(const GcRows *rows, int k, uint64_t seed,
									  int64_t *chosen, bool (*interrupted) (void),
									  GcError *err);
extern int	gc_nearest_centroid(const double *x, const double *centroids,
								int k, int d, double *distance2);
/*
 * Centroids first .. first + count - 1 against the nearest so far (*best,
 * *bestd, updated): one wins only when strictly nearer, so a scan in
 * pieces in index order finds gc_nearest_centroid's centroid and distance
 */
extern void gc_nearest_centroid_scan(const double *x, const double *centroids, int first,
									 int count, int d, int *best, double *bestd);
/* The same, counting k d units on poll: -1 when interrupted */
extern int	gc_nearest_centroid_polled(const double *x, const double *centroids,
									   int k, int d, double *distance2,
									   GcPoll *poll);

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

/*
 * Greedy k-means++ on the GPU over few rows (k-means||'s recluster of ~5k
 * candidates) first measures every pair of them into an n x n table
 * (cuda/seeding_greedy.cu): the rows it is taken for, n where greedy runs
 * (candidates > 1), its steps would measure as many pairs (n <= k
 * candidates) and n <=
 * GC_GREEDY_TABLE_MAX_ROWS (a table of 512 MB), else 0.  The GPU service
 * counts the table in a fit's memory.
 */
#define GC_GREEDY_TABLE_MAX_ROWS 8192
extern int64_t gc_greedy_table_rows(int64_t n, int k, int candidates);

/* The CPU reference of greedy (and plain) k-means++ */
extern GcStatus gc_seed_kmeanspp_cpu(const GcRows *rows, const GcFrame *frame,
									 const GcKmeansParams *params, uint64_t seed,
									 int64_t *chosen, GcError *err);

/*
 * k-means|| (engine/seeding_parallel.c; Bahmani, Moseley, Vattani, Kumar
 * & Vassilvitskii, "Scalable K-Means++", VLDB 2012).  One row is drawn as
 * k-means++'s first centre; then each round samples every row
 * independently with probability min(1, l w D^2 / phi), l =
 * GC_PARALLEL_OVERSAMPLING k, phi the potential sum w D^2 (exact, in
 * units of 2^-frame->inertia_exp), by comparing the row's seeded draw
 * (stream gc_parallel_stream(round)) with it: a round's samples depend on
 * the rows' values and the seed only, and are kept in the order of their
 * hashes.  D^2 then falls to the distance to the nearest new sample.
 * After GC_PARALLEL_ROUNDS rounds (more while fewer than k rows were
 * sampled) each candidate is weighted by the rows nearest to it (the
 * lowest candidate on ties), those of weight zero (duplicates) dropped,
 * and greedy k-means++ chooses k of the weighted candidates.
 */
#define GC_PARALLEL_ROUNDS 5
#define GC_PARALLEL_MAX_ROUNDS 32
#define GC_PARALLEL_OVERSAMPLING 1.0

/* the seeding params->init asks for on n rows of d: AUTO resolved */
extern GcInit gc_seed_method(const GcKmeansParams *params, int64_t n, int d);
/* "k-means++", "greedy k-means++", "k-means||", "random" or "given" */
extern const char *gc_init_name(const GcKmeansParams *params, int64_t n, int d);
/* whether k-means|| samples another round, after round rounds */
extern bool gc_parallel_more_rounds(int round, int64_t candidates, int k,
									unsigned __int128 potential);
/* a round's samples into the order of their hashes (then rows); false: out of memory */
extern bool gc_parallel_sort_batch(const GcRows *rows, int64_t *batch, int64_t m);
/* the parameters of the greedy k-means++ that reclusters the candidates */
extern GcKmeansParams gc_parallel_recluster_params(const GcKmeansParams *params);
/* The CPU reference of k-means|| */
extern GcStatus gc_seed_kmeans_parallel_cpu(const GcRows *rows, const GcFrame *frame,
											const GcKmeansParams *params, uint64_t seed,
											int64_t *chosen, GcError *err);

/* Monotonic clock in milliseconds. */
extern double gc_now_ms(void);

/*
 * pthread_create with every signal blocked in the new thread (its result:
 * 0 or an error number)
 */
extern int	gc_thread_create(pthread_t *thread, void *(*start) (void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif							/* GC_ENGINE_H */
