/*-------------------------------------------------------------------------
 *
 * gc_seeding.h
 *	  k-means seeding: greedy k-means++ and k-means|| (their rules, shared
 *	  by both backends, and the CPU references).
 *
 * IDENTIFICATION
 *	  engine/gc_seeding.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_SEEDING_H
#define GC_SEEDING_H

#include "gc_kmeans.h"

#ifdef __cplusplus
extern "C"
{
#endif

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
 * k-means++ over shards (engine/seeding.c).  Both passes of a step run
 * over each shard's rows apart: the least key of each race over the
 * shards is the race's over all rows (the key holds the fit's row
 * number), and the candidates' potentials are exact integer sums that add
 * up.  A shard is rows row_base .. row_base + n - 1 of the fit, held by a
 * backend session (GcKmeansBackend.kmeanspp_shard) or, on the CPU, by a
 * GcKmeansppShard.
 */
typedef struct GcKmeansppOps
{
	/*
	 * pass one of step t: previous (the last centre, NULL at step 0)
	 * folded into D^2, then the least key of each of candidates races
	 */
	GcStatus	(*race) (void *shard, uint64_t seed, int t, int candidates,
						 const double *previous, uint64_t *best, GcError *err);
	/* pass two of a greedy step: each candidate's potential over the shard's rows */
	GcStatus	(*potentials) (void *shard, int candidates, const double *const *centre,
							   unsigned __int128 *potential, GcError *err);
	void		(*close) (void *shard);
} GcKmeansppOps;

/* k-means++ over nshards shards of rows whose passes ops runs */
extern GcStatus gc_seed_kmeanspp_shards(const GcKmeansppOps *ops, void **shards, int nshards,
										const GcRows *rows, const GcFrame *frame,
										const GcKmeansParams *params, uint64_t seed,
										int64_t *chosen, GcError *err);

/* A CPU shard: rows are rows row_base .. of the fit; its passes are gc_kmeanspp_cpu_ops */
typedef struct GcKmeansppShard GcKmeansppShard;
extern GcStatus gc_kmeanspp_shard_open(const GcRows *rows, int64_t row_base,
									   const GcFrame *frame, const GcKmeansParams *params,
									   GcKmeansppShard **shard, GcError *err);
extern void gc_kmeanspp_shard_close(void *shard);
extern const GcKmeansppOps gc_kmeanspp_cpu_ops;

/*
 * k-means|| (engine/seeding_parallel.c; Bahmani, Moseley, Vattani, Kumar
 * & Vassilvitskii, "Scalable K-Means++", VLDB 2012).  One row is drawn as
 * k-means++'s first centre; then each round samples every row
 * independently with probability min(1, l w D^2 / phi), l =
 * gc_parallel_ell(k), phi the potential sum w D^2 (exact, in
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
/*
 * l / k: 1 below GC_BATCHED_MIN_K centres, GC_PARALLEL_OVERSAMPLING_LARGE_K
 * from there (with the batched recluster, whose init name says so), where
 * the rounds' labelings and the recluster's gains, both in proportion to
 * the candidates, cost many Lloyd iterations (doc/performance.md, "Large
 * k").  CPU fits at k = 4,096 (default tol, 2 to 4 seeds), inertia
 * against l = k: 0.84 on 60,000 x 8 in 4,096 blobs, 0.996 on 60,000 rows
 * of KDD Cup 99, 1.002 on birch1 and birch2, 1.002 on 40,000 x 4
 * uniform; l = 0.4 k: 1.11 on KDD (4 rounds of 0.5 k: 1.28), and 2 rounds
 * of k: 5.1 on the blobs.  The recluster's trials matter more: one per
 * pick (plain k-means++) 1.78 on the blobs and 1.20 on KDD.
 */
#define GC_PARALLEL_OVERSAMPLING 1.0
#define GC_PARALLEL_OVERSAMPLING_LARGE_K 0.6

/* the seeding params->init asks for on n rows of d: AUTO resolved */
extern GcInit gc_seed_method(const GcKmeansParams *params, int64_t n, int d);
/* "k-means++", "greedy k-means++", "k-means||", "random" or "given" */
extern const char *gc_init_name(const GcKmeansParams *params, int64_t n, int d);
/* l, the rows a round samples in expectation (at most), for k centres */
extern double gc_parallel_ell(int k);
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

/*
 * Batched greedy k-means++ (engine/seeding_batched.c): k-means||'s
 * recluster from GC_BATCHED_MIN_K centres (gc_batched_applies), where
 * greedy's k sequential steps cost seconds.  Step 0 picks one row, each
 * later step up to the next gc_batched_picks(k, t, done) at once, each
 * the best of gc_batched_candidates(...) drawn by its gain against the
 * step's other candidates, those too near a pick before them dropped
 * (gc_batched_keep): about GC_BATCHED_STEPS steps (64: up to 0.8% more
 * inertia on 4,096 blobs, bench/results/seeding-large-k.md).
 */
#define GC_BATCHED_MIN_K 4096
#define GC_BATCHED_STEPS 128

/* whether k-means|| reclusters by batched greedy k-means++ at k */
extern bool gc_batched_applies(int k);
/*
 * whether it does so over these candidates (weighted, distinct): not
 * where fewer than k remain, which greedy k-means++ takes every one of
 */
extern bool gc_batched_recluster(int k, int64_t candidates);
/* the rows step t picks, done picked before it */
extern int	gc_batched_picks(int k, int t, int done);
/*
 * Of a step's b picks, those kept (gc_batched_keep), in order, moved to
 * the front; their count
 */
extern int	gc_batched_keep_picks(const GcRows *rows, const double *mind2, int64_t *picks,
								  int b);
/*
 * The b lowest of keys[0 .. m - 1] (GC_RACE_NONE: taken), as indices in
 * the order of their keys, into picks; false: out of memory
 */
extern bool gc_batched_select(const uint64_t *keys, int64_t m, int b, int64_t *picks);
/* candidates per pick of a step picking b among untaken rows */
extern int	gc_batched_candidates(const GcKmeansParams *params, int64_t untaken, int b);
/*
 * A step's picks: of each group of candidates drawn (the b x candidates
 * lowest keys, in key order, group g the g-th candidates of them), the
 * one of the highest gain, the first on ties
 */
extern void gc_batched_choose(const int64_t *drawn, const unsigned __int128 *gains, int b,
							  int candidates, int64_t *picks);
/* The CPU reference of batched greedy k-means++ over rows (weighted): k picks in order */
extern GcStatus gc_seed_batched_cpu(const GcRows *rows, const GcFrame *frame,
									const GcKmeansParams *params, uint64_t seed,
									int64_t *chosen, GcError *err);

/*
 * k-means|| over shards.  Every pass but the recluster runs over each
 * shard's rows apart, and what the shards return adds up, in shard order,
 * to what one pass over all the rows gives: the least race key for the
 * first centre (the key holds the fit's row number), the potential's
 * exact integer sum, the samples in row order (sorted by hash after),
 * each candidate's weight.  A shard is rows row_base .. row_base + n - 1
 * of the fit, held by a backend session (GcKmeansBackend.parallel_shard)
 * or, on the CPU, by a GcParallelShard.
 */
typedef struct GcRowList
{
	int64_t    *rows;
	int64_t		count;
	int64_t		capacity;
} GcRowList;

/* Append row to list; false: out of memory */
extern bool gc_row_list_push(GcRowList *list, int64_t row);

typedef struct GcParallelOps
{
	/* the least race key of the first draw over the shard's rows (GC_RACE_NONE: none) */
	GcStatus	(*first) (void *shard, uint64_t seed, uint64_t *key, GcError *err);
	/*
	 * each row's D^2 lowered to its nearest of the m candidates in batch
	 * (m x d values), numbered first .. first + m - 1 (set, when first is
	 * 0), and the shard's potential
	 */
	GcStatus	(*nearest) (void *shard, const double *batch, int64_t first, int64_t m,
							unsigned __int128 *potential, GcError *err);
	/* round's samples over the potential phi appended to sampled, in row order */
	GcStatus	(*sample) (void *shard, uint64_t seed, int round, double phi,
						   GcRowList *sampled, GcError *err);
	/* each row's weight added to its nearest candidate's in weight */
	GcStatus	(*weights) (void *shard, int64_t *weight, GcError *err);
	void		(*close) (void *shard);
	/*
	 * Optional, asked of the first shard: the weighted candidates (cand,
	 * a store of their own) reclustered to params->k as the CPU's
	 * gc_seed_batched_cpu or gc_seed_kmeanspp_cpu would (params:
	 * gc_parallel_recluster_params), the picks (rows of cand) into picks;
	 * NULL: on the host
	 */
	GcStatus	(*recluster) (void *shard, const GcRows *cand, const GcKmeansParams *params,
							  uint64_t seed, int64_t *picks, GcError *err);
} GcParallelOps;

/*
 * How a pass runs over the shards: task(shard, group, arg) for every shard,
 * in groups (groups of them, e.g. a sharded fit's lanes, one a device)
 * that may run at once, each group's shards in order on one thread; the
 * first failure's status, err its.  NULL: every shard in order on the
 * calling thread, as group 0.
 */
typedef GcStatus (*GcShardTask) (int shard, int group, void *arg, GcError *err);
typedef struct GcShardRunner
{
	int			groups;
	GcStatus	(*run) (void *ctx, GcShardTask task, void *arg, GcError *err);
	void	   *ctx;
} GcShardRunner;

/* k-means|| over nshards shards of rows whose passes ops runs, as runner runs them */
extern GcStatus gc_seed_kmeans_parallel_shards(const GcParallelOps *ops, void **shards,
											   int nshards, const GcShardRunner *runner,
											   const GcRows *rows, const GcFrame *frame,
											   const GcKmeansParams *params, uint64_t seed,
											   int64_t *chosen, GcError *err);

/* A CPU shard: rows are rows row_base .. of the fit; its passes are gc_parallel_cpu_ops */
typedef struct GcParallelShard GcParallelShard;
extern GcStatus gc_parallel_shard_open(const GcRows *rows, int64_t row_base,
									   const GcFrame *frame, const GcKmeansParams *params,
									   GcParallelShard **shard, GcError *err);
extern void gc_parallel_shard_close(void *shard);
extern const GcParallelOps gc_parallel_cpu_ops;
/*
 * A CPU shard's D^2 and nearest candidate per row (n each), for a device
 * that runs its nearest passes (cuda/seeding_shard.cu): that device
 * writes both after each of them, and the shard's other passes read them
 */
extern void gc_parallel_shard_state(GcParallelShard *shard, double **mind2, int32_t **nearest);

#ifdef __cplusplus
}
#endif

#endif							/* GC_SEEDING_H */
