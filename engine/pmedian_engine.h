/*-------------------------------------------------------------------------
 *
 * pmedian_engine.h
 *	  The plain-C p-median (k-medoids) engine: parameters, result, and the
 *	  backend table that the CPU reference and the CUDA backend implement.
 *
 * The driver (pmedian_fit.c) owns the algorithms of Luong & Taillard,
 * "GPU techniques for accelerating heuristics for large p-median
 * clustering problems": location-allocation (Cooper 1963) with a soft
 * capacity through Lagrangean penalties, and the O(n^1.5) three-phase
 * construction of Alvim & Taillard (sample, global, small).  A backend
 * only does the parallel work of their Algorithm 7: allocating entities
 * to centres, and every entity's sum of dissimilarities to the rest of
 * its cluster.  Clusters are built and centres chosen on the host, in
 * code shared by both backends, so that they agree bit for bit.
 *
 * Like gc_engine.h, nothing here includes a PostgreSQL header.
 *
 * IDENTIFICATION
 *	  engine/pmedian_engine.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PMEDIAN_ENGINE_H
#define PMEDIAN_ENGINE_H

#include "gc_engine.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Largest p for the swap improvement (its gains live in shared memory) */
#define GC_PM_MAX_IMPROVE_P 4096

/* Candidates evaluated per swap batch, on both backends alike */
#define GC_PM_SWAP_BATCH 256

/*
 * The default (improve auto) runs the swap improvement over all rows when
 * there are at most GC_PM_IMPROVE_ROWS of them and rows x p is at most
 * GC_PM_IMPROVE_WORK; otherwise over the sample of sample_factor sqrt(n)
 * rows, when sample rows x its centres is at most GC_PM_IMPROVE_WORK.  A
 * pass over all candidates costs n^2 distances and each swap n (p + 256).
 */
#define GC_PM_IMPROVE_ROWS 32768
#define GC_PM_IMPROVE_WORK (INT64_C(1) << 23)

typedef enum GcPmMetric
{
	GC_PM_EUCLIDEAN = 0,
	GC_PM_SQEUCLIDEAN,
	GC_PM_MANHATTAN,
	GC_PM_COSINE
} GcPmMetric;

typedef enum GcPmMethod
{
	GC_PM_AUTO = 0,
	GC_PM_LOCATION_ALLOCATION,
	GC_PM_THREE_PHASE
} GcPmMethod;

/* The swap improvement: asked for (auto, none, full) or as run (none, sample, full) */
typedef enum GcPmImprove
{
	GC_PM_IMPROVE_AUTO = 0,
	GC_PM_IMPROVE_NONE,
	GC_PM_IMPROVE_SAMPLE,
	GC_PM_IMPROVE_FULL
} GcPmImprove;

typedef struct GcPmParams
{
	int			p;
	GcPmMetric	metric;			/* default euclidean */
	int			max_iter;		/* per location-allocation run, default 100 */
	int			polish_iter;	/* final location-allocation of three_phase */
	uint64_t	seed;
	bool		capacitated;
	double		capacity;		/* Q, when capacitated */
	bool		hard_capacity;	/* repair the allocation so that loads <= Q */
	double		penalty_step;	/* subgradient step factor, default 2 */
	GcPmMethod	method;
	int64_t		auto_threshold; /* auto uses three_phase from this n */
	double		sample_factor;	/* three_phase sample: factor * sqrt(n), default 30 */
	int			big_clusters;	/* three_phase big clusters, 0: sqrt(n) */
	GcPmImprove improve;		/* swap improvement: auto, none or full */
	int			cpu_threads;	/* CPU backend's threads; 0: every online core */
	bool		(*interrupted) (void);

	/*
	 * NULL: none.  Reports uploading, seeding (the start of the
	 * construction), then iterating: after each location-allocation
	 * iteration, with the iterations of the whole fit so far, and after
	 * each swap of the improvement; the inertia is the objective of the
	 * allocation over all rows where the problem is the whole one, NaN in
	 * the sample and small phases
	 */
	GcProgressFn progress;
	void	   *progress_arg;
} GcPmParams;

typedef struct GcPmTimings
{
	double		transfer_ms;
	double		seeding_ms;
	double		sample_ms;
	double		global_ms;
	double		small_ms;
	double		location_ms;	/* location-allocation (the polish in three_phase) */
	double		improve_ms;
	double		repair_ms;		/* hard capacity repair */
} GcPmTimings;

typedef struct GcPmResult
{
	int32_t    *medoids;		/* caller-allocated, p row indices */
	double	   *penalties;		/* caller-allocated, p multipliers (0 uncapacitated) */
	int32_t    *alloc;			/* optional, caller-allocated, n: index into medoids */
	double	   *dist;			/* optional, caller-allocated, n */
	double		objective;		/* sum of distances to the allocated medoid */
	double		violation;		/* sum over medoids of max(0, load - capacity) */
	double		repair_cost;	/* hard capacity: objective after the repair less
								 * before it (negative where it fell) */
	int64_t		repair_moves;	/* hard capacity: rows the repair moved */
	GcPmImprove improvement;	/* the swap improvement as run */
	int			iterations;		/* location-allocation iterations, all runs */
	int			swaps;			/* swaps made by the improvement */
	bool		converged;
	GcPmMethod	method;			/* the method used (auto resolved) */
	GcPmTimings timings;
} GcPmResult;

/*
 * A backend: a session over one row set.  Rows are addressed by their
 * index in the row store.  A problem is a list of entities (rows) split
 * into independent groups, each with its own centres: one group for plain
 * location-allocation, many for the small phase.
 */
typedef struct GcPmBackend
{
	const char *name;
	GcStatus	(*open) (const GcRows *rows, const double *demand,
						 const GcPmParams *params, void **session,
						 GcError *err);
	/* the entities of the next problem, ent[e] a row, group[e] its group */
	GcStatus	(*set_entities) (void *session, int32_t nent, const int32_t *ent,
								 const int32_t *group, GcError *err);

	/*
	 * Every entity to the cheapest centre of its group, cost d(i, c) +
	 * penalty[c] * demand[i] (penalty NULL: none), lowest centre index on
	 * ties, a centre to itself; alloc[e] is the centre's index in cen and
	 * dist[e] the plain distance
	 */
	GcStatus	(*allocate) (void *session, int32_t ncen, const int32_t *cen,
							 const int32_t *cen_first, int ngroups,
							 const double *penalty, int32_t *alloc,
							 double *dist, GcError *err);

	/*
	 * sums[t] = sum of d(members[t], members[u]) over the other members u
	 * of t's cluster, in order; cluster c is members[first[c] .. first[c+1])
	 */
	GcStatus	(*cluster_sums) (void *session, int32_t ncen,
								 const int32_t *members, const int32_t *first,
								 double *sums, GcError *err);

	/*
	 * One step of the D-sampling race over the current entities: with
	 * centre >= 0, the nearest-centre distances take it into account; the
	 * smallest gc_race_key over entities (their position as index) is
	 * returned in winner
	 */
	GcStatus	(*seed_step) (void *session, int32_t centre, uint64_t seed,
							  int step, uint64_t *winner, GcError *err);

	/* nearest and second-nearest medoid of every row (ds = far without a second) */
	GcStatus	(*nearest2) (void *session, int p, const int32_t *medoids,
							 double far, int32_t *nearest, double *dn,
							 double *ds, GcError *err);

	/*
	 * For each candidate row, the medoid whose swap with it changes the
	 * objective most (lowest index on ties) and that change, removal loss
	 * included, in fixed point with scale (gc_pm_fixed), from the state of
	 * the last nearest2
	 */
	GcStatus	(*swap_gains) (void *session, int p, int ncand,
							   const int32_t *cand, double scale,
							   const int64_t *removal, int32_t *best_medoid,
							   int64_t *best_gain, GcError *err);
	void		(*close) (void *session);
} GcPmBackend;

extern const GcPmBackend gc_pmedian_cpu_backend;

/*
 * Host memory the CPU backend's swap improvement holds for n rows of d
 * values and p medians: its k-d tree (the rows in tree order, each node's
 * box) and per-row arrays
 */
extern size_t gc_pmedian_cpu_swap_bytes(int64_t n, int d, int p);

/* Solves the p-median problem over rows (demand n values, or NULL). */
extern GcStatus gc_pmedian_fit(const GcPmBackend *backend, const GcRows *rows,
							   const double *demand, const GcPmParams *params,
							   GcPmResult *result, GcError *err);

/*
 * Hard capacities: moves rows of alloc (index into the p medoids) so that
 * no load of demand exceeds capacity where whole rows allow (see
 * pmedian_repair.c); dist follows alloc
 */
extern GcStatus gc_pmedian_repair(const GcRows *rows, const double *demand,
								  GcPmMetric metric, double capacity, int p,
								  const int32_t *medoids, int32_t *alloc,
								  double *dist,
								  bool (*interrupted) (void), int64_t *moves,
								  GcError *err);

/* Nearest of p medoid vectors to x by metric, lowest index on ties; -1 if interrupted. */
extern int	gc_pmedian_nearest(const double *x, const double *medoids, int p,
							   int d, GcPmMetric metric, double *distance,
							   GcPoll *poll);

/* The names of metrics and methods, as the options spell them. */
extern const char *gc_pmedian_metric_name(GcPmMetric metric);
extern const char *gc_pmedian_method_name(GcPmMethod method);
extern const char *gc_pmedian_improve_name(GcPmImprove improve);

#ifdef __cplusplus
}
#endif

#endif							/* PMEDIAN_ENGINE_H */
