/*-------------------------------------------------------------------------
 *
 * gc_kmeans.h
 *	  k-means: parameters, progress, results, the check of reduced
 *	  precision, the hybrid's rules, the backend interface that the CPU
 *	  reference and the CUDA backend implement, the driver (gc_kmeans_fit)
 *	  and the nearest-centroid pieces both backends share.
 *
 * IDENTIFICATION
 *	  engine/gc_kmeans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KMEANS_H
#define GC_KMEANS_H

#include "gc_base.h"
#include "gc_poll.h"
#include "gc_rows.h"
#include "gc_kernel.h"

#ifdef __cplusplus
extern "C"
{
#endif

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
 * sum of squared centroid shifts over the rows' mean per-dimension
 * variance (the unit of tol); inertia is the lowest of the restarts finished so far.  Either is
 * NaN where the caller does not know it.
 */
typedef void (*GcProgressFn) (void *arg, GcPhase phase, int iteration,
							  double shift, double inertia);

/*
 * Where k-means|| seeding spends its time (summed over restarts): its
 * rounds (the first centre included), the candidates' weights, and the
 * recluster of the weighted candidates to k (engine/seeding_parallel.c)
 */
typedef struct GcSeedingPhases
{
	double		rounds_ms;
	double		weights_ms;
	double		recluster_ms;
} GcSeedingPhases;

typedef struct GcKmeansParams
{
	int			k;
	int			max_iter;		/* default 300 */
	double		tol;			/* squared shifts' sum over the variance, default 1e-4 */
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
	/*
	 * Balanced clusters (kmeans_balance.c): no cluster of the final model
	 * holds more rows than max_cluster_size, nor than
	 * ceil(max_cluster_size_factor n / k); 0 for either: no such bound
	 */
	int64_t		max_cluster_size;
	double		max_cluster_size_factor;
	/*
	 * Two-level fits (kmeans_levels.c): levels 2 fits about sqrt(k) coarse
	 * clusters, splits each into its share of the k, then runs refine_iter
	 * Lloyd iterations over all k (the glue's default is 2); levels 0 or
	 * 1: one level
	 */
	int			levels;
	int			refine_iter;
	/*
	 * Sharded fits (engine/kmeans_shards.c); other backends ignore these
	 * but devices.  shards: the contiguous ranges the rows are split
	 * among (0 or 1: as few as lanes and lane_rows allow).  lanes: the
	 * threads that run them, each over its own run of shards (0 or 1:
	 * the calling thread alone); lane i's sessions open on devices[i]
	 * where devices is set (lanes entries), else on the calling thread's
	 * device.  lane_rows: most rows a lane's sessions hold at once (0: no
	 * bound); past it a lane keeps as many shards as fit less two in
	 * sessions of their own, and streams the others through two sessions
	 * (rebind_rows), so shards are made at most lane_rows / 2 rows.  The
	 * model is the same, to the bit, whatever these are.
	 */
	int			shards;
	int			lanes;
	int64_t		lane_rows;
	/* the devices of a fit: a GPU session runs on devices[0]; NULL: the calling thread's */
	const int  *devices;
	/* k-means|| adds the wall time of its phases here; NULL: not timed */
	GcSeedingPhases *phases;
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
	GcSeedingPhases seeding;	/* of which k-means||'s phases, wall time */
	double		check_ms;		/* the check of reduced precision (precision_check.c) */
	double		iterations_ms;	/* everything after seeding, scoring included */
	double		labeling_ms;	/* of which labeling, where measured (GPU) */
	double		update_ms;		/* of which centroid updates, where measured */
	double		steps_ms;		/* of which the iterations' steps, wall time */
	double		scoring_ms;		/* of which the scoring passes, wall time */
	double		coarse_ms;		/* two levels: the coarse fit, wall time */
	double		split_ms;		/* two levels: the fine fits of every coarse cluster */
	double		refine_ms;		/* two levels: the iterations over all fine centroids */
	double		balance_ms;		/* moving rows out of clusters past the bound */
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
	/* two levels: each centroid's coarse cluster (optional, caller-allocated, k) */
	int32_t    *parents;
	int			coarse_k;		/* coarse clusters of a two-level fit; 0: one level */
	/* the spread of the sizes: smallest, largest, coefficient of variation */
	int64_t		size_min;
	int64_t		size_max;
	double		size_cv;
	int64_t		max_cluster_size;	/* the bound balanced to; 0: none */
	int			balance_rounds; /* passes that moved rows (kmeans_balance.c) */
	int64_t		balance_moves;	/* rows moved */
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
/*
 * The tolerance (engine/tolerance.c): the rows' exact mean per-dimension
 * variance and the units and limit of the squared shifts' sum into frame,
 * for k centroids; whether a step's sum converges; the sum over the
 * variance (the unit of tol, for progress)
 */
extern GcStatus gc_frame_set_tolerance(GcFrame *frame, const GcRows *rows, int k, double tol,
									   bool (*interrupted) (void), GcError *err);
extern bool gc_frame_converged(const GcFrame *frame, double tol, uint64_t shift_sum);
extern double gc_frame_shift_ratio(const GcFrame *frame, uint64_t shift_sum);

typedef struct GcStepStatus
{
	int64_t		changed;		/* labels that changed */
	uint64_t	shift_sum;		/* the centroids' squared shifts, each
								 * dimension's term quantised in units of
								 * 2^-frame->shift_exp, summed */
	double		pruned_work;	/* distances computed on the pruned rows */
	double		distances;		/* distances computed on all rows */
	double		rechecked;		/* points a tensor pass sent to a more exact one */
	double		exact_checked;	/* of which, points left to the exact check */
	double		labeling_ms;	/* device time in labeling, where measured */
	double		update_ms;		/* device time in the centroid update */
	const char *kernel;			/* the labeling kernel of this step */
} GcStepStatus;

struct GcParallelOps;			/* k-means|| over shards: gc_seeding.h */
struct GcKmeansppOps;			/* k-means++ over shards: gc_seeding.h */

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

	/*
	 * A session as one shard of a sharded fit (engine/kmeans_shards.c);
	 * NULL where the backend cannot be one.  step_partial: step's labeling
	 * alone, its rows' exact fixed-point sums (k * d, gc_quantize units)
	 * and weights (k) written into sums and counts, its centroids left as
	 * they are (status->shift_sum 0); load_centroids: the centroids the
	 * next step labels against; score_sum: score, the inertia as its exact
	 * sum of weighted quantised squared distances (units of
	 * 2^-frame->inertia_exp), which shards add to the unsplit sum
	 */
	GcStatus	(*step_partial) (void *session, int64_t pruned_rows, long long *sums,
								 long long *counts, GcStepStatus *status, GcError *err);
	GcStatus	(*load_centroids) (void *session, const double *centroids, GcError *err);
	GcStatus	(*score_sum) (void *session, const double *centroids, int32_t *labels,
							  double *distances, int64_t *sizes,
							  unsigned __int128 *inertia_sum, GcError *err);
	/*
	 * k-means|| over shards (gc_seed_kmeans_parallel_shards, gc_seeding.h):
	 * a shard of the session's rows, numbered from row_base in the fit,
	 * and the passes that run over it (ops->close frees it); NULL: the
	 * sharded fit seeds on the CPU over every row
	 */
	GcStatus	(*parallel_shard) (void *session, const GcKmeansParams *params,
								   int64_t row_base, void **shard,
								   const struct GcParallelOps **ops, GcError *err);
	/* the same for k-means++ (gc_seed_kmeanspp_shards) */
	GcStatus	(*kmeanspp_shard) (void *session, const GcKmeansParams *params,
								   int64_t row_base, void **shard,
								   const struct GcKmeansppOps **ops, GcError *err);
	/*
	 * A session of a streamed shard (engine/kmeans_shards.c) moved onto
	 * view's rows, no more than it was opened with, sharing its frame:
	 * the GPU starts their upload on the session's stream, which the
	 * session's next pass waits for.  labels (view->n, kept by the caller
	 * between passes, -1 where none) are the rows' last labels, from
	 * which the next step_partial counts changes and into which it writes
	 * its own; its sums start afresh.  A seeding shard opened on the
	 * session holds what it needs of the rows once the session moves on.
	 * NULL where the backend cannot stream.
	 */
	GcStatus	(*rebind_rows) (void *session, const GcRows *view, int32_t *labels,
								GcError *err);
} GcKmeansBackend;

extern const GcKmeansBackend gc_kmeans_cpu_backend;

/*
 * One fit over params->shards CPU sessions, each over a contiguous range
 * of the rows, on params->lanes threads, some streamed past lane_rows
 * (engine/kmeans_shards.c): the same model, to the bit, as
 * gc_kmeans_cpu_backend's, whatever the shards, lanes and bound
 */
extern const GcKmeansBackend gc_kmeans_cpu_sharded_backend;

/*
 * A session of such a fit whose shards are child's sessions: the open of
 * a sharded backend over another backend (its other entries are
 * gc_kmeans_cpu_sharded_backend's)
 */
extern GcStatus gc_kmeans_shards_open(const GcKmeansBackend *child, const GcRows *rows,
									  const GcFrame *frame, const GcKmeansParams *params,
									  void **session, GcError *err);

/*
 * The layout a sharded fit of n rows takes under params->shards, lanes
 * and lane_rows (engine/kmeans_shards.c, the one its open makes): the
 * shards and lanes, the rows that keep sessions of their own (resident)
 * and those passed through a lane's two streaming sessions each pass,
 * and the most rows one lane's sessions hold at once
 */
typedef struct GcShardLayout
{
	int			shards;
	int			lanes;
	int64_t		resident_rows;
	int64_t		streamed_rows;
	int64_t		lane_rows_held;
} GcShardLayout;

extern void gc_kmeans_shard_layout(int64_t n, const GcKmeansParams *params,
								   GcShardLayout *layout);

/*
 * Runs n_init restarts on backend and fills result with the best; a
 * narrow store is widened first (gc_rows_widen) for a backend that reads
 * doubles only.
 */
extern GcStatus gc_kmeans_fit(const GcKmeansBackend *backend,
							  GcRows *rows,
							  const GcKmeansParams *params,
							  GcKmeansResult *result, GcError *err);

/*
 * The bound on a cluster's rows that params ask for over n rows
 * (engine/kmeans_balance.c): the smaller of max_cluster_size and
 * ceil(max_cluster_size_factor n / k), either where set; 0: none
 */
extern int64_t gc_kmeans_balance_cap(const GcKmeansParams *params, int64_t n);

/*
 * The host memory balancing (engine/kmeans_balance.c) may take over n rows
 * of d values, an upper bound; 0 where params ask for no bound
 */
extern size_t gc_kmeans_balance_bytes(const GcKmeansParams *params, int64_t n, int d);

/* Shared pieces of the algorithm, identical on both backends. */
/*
 * The centroid update (engine/centroid_update.c): each of k centroids
 * (k * frame->d values) moved to the mean of its cluster from the exact
 * fixed-point sums and weights, renormalised under the cosine metric; a
 * cluster of weight zero, or of no direction, keeps its centroid.  Adds
 * the quantised squared shifts to *shift_sum; mean is d values of
 * scratch; false when poll's hook asked to stop.
 */
extern bool gc_kmeans_update_centroids(const GcFrame *frame, GcMetric metric, int k,
									   const long long *sums, const long long *counts,
									   double *centroids, double *mean, GcPoll *poll,
									   uint64_t *shift_sum);
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

#ifdef __cplusplus
}
#endif

#endif							/* GC_KMEANS_H */
