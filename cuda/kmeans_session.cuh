/*-------------------------------------------------------------------------
 *
 * kmeans_session.cuh
 *	  The CUDA k-means session (the rows, centroids and sums on the device
 *	  that every step shares) and the labeler interface: each labeling
 *	  strategy owns its buffers and offers open, refresh (after the
 *	  centroids move), label and close; labeler_table.cu holds the table that
 *	  names them by GcKernel.
 *
 * IDENTIFICATION
 *	  cuda/kmeans_session.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_KMEANS_SESSION_CUH
#define GC_KMEANS_SESSION_CUH

#include <cuda_runtime.h>

#include "gc_engine.h"
#include "gc_math.h"
#include "kmeans_kernels.cuh"

/*
 * An entry's device: the session's made current for the entry, the
 * caller's put back at its end (CUDA's current device is per thread)
 */
class DeviceScope
{
  public:
	explicit DeviceScope(int device) : previous(-1)
	{
		int			current;

		error = cudaGetDevice(&current);
		if (error == cudaSuccess && current != device &&
			(error = cudaSetDevice(device)) == cudaSuccess)
			previous = current;
	}
	~DeviceScope()
	{
		if (previous >= 0)
			(void) cudaSetDevice(previous);
	}
	cudaError_t error;			/* of making it current (the open checks it) */

  private:
	int			previous;
};

/* What one iteration sends back to the host: its only read per iteration */
typedef struct IterationStatus
{
	unsigned long long changed;
	unsigned long long shift_sum;	/* GcStepStatus.shift_sum */
	unsigned long long work;	/* distances computed by pruned labeling */
	unsigned long long doubtful;	/* points the 3xTF32 kernel re-checked */
	unsigned long long screened;	/* points the TF32 screen doubted */
	unsigned long long refined;	/* exact distances the exact check computed */
} IterationStatus;

struct Labeler;

typedef struct CudaSession
{
	const GcRows *rows;
	const GcFrame *frame;
	const GcKmeansParams *params;	/* &labeling_params */
	GcKmeansParams labeling_params; /* the fit's, at the precision labeling runs at now */
	int64_t		n;
	int			d;
	int			k;
	int			kpad;			/* k rounded up to GC_TENSOR_ROW_ALIGN */
	int			device;			/* the device it runs on, whichever thread calls */
	int64_t		capacity;		/* rows its buffers hold: most a rebind takes */
	int32_t    *bound_labels;	/* a streamed shard's labels, kept by the caller (NULL: none) */
	bool		sums_stale;		/* rebound: the next step sums its rows afresh */
	cudaStream_t stream;
	double	   *x64;			/* n * d, as given */
	double	   *weights;		/* n whole-number weights; NULL when unweighted */
	float	   *x32;			/* n * d, centred, for labeling */
	uint64_t   *hashes;			/* n */
	double	   *offset;			/* d */
	double	   *scale;			/* d */
	double	   *c64;			/* k * d */
	double	   *c64_prev;		/* k * d, cosine metric: before the update */
	float	   *c32;			/* k * d, centred */
	float	   *cnorm;			/* k, padded to a multiple of 128 */
	int32_t    *labels;			/* n */
	int32_t    *old_labels;		/* n: the labels before this iteration */
	int32_t    *moved;			/* n: points whose label changed */
	unsigned int *moved_count;
	double	   *work;			/* n: k-means++ distances, or distances */
	unsigned long long *sums;	/* k * d, then k counts */
	unsigned long long *race;	/* k */
	gc_u128    *partials;		/* SCORE_PARTIALS exact inertia partials */
	IterationStatus *status;	/* device */
	IterationStatus *status_host;	/* page-locked */
	cudaEvent_t phase[3];		/* labeling starts, ends, update ends */
	cudaEvent_t chunk_done[2];	/* labeling in chunks: the last two chunks' ends */

	/* Lloyd's labeling: the kernel in use and its labeler */
	GcKernel	kernel;
	const struct Labeler *labeler;
	void	   *labeler_state;
	int			iteration;		/* steps since the restart began */

	/* pruned labeling (labeler_pruned.cu), opened on first use */
	void	   *pruned;
	/* Lloyd's labeling with drift bounds (labeler_bounded.cu), opened at a restart */
	void	   *bounded;
	/*
	 * the k-means|| shard (seeding_shard.cu) whose D^2 and nearest
	 * candidates work and old_labels hold, before a restart begins
	 */
	const void *seeding_owner;
} CudaSession;

/*
 * A labeling strategy.  open allocates and fills what it reads besides
 * the session's buffers (called at upload, before the session's stream
 * is synchronised, or at a hand-over); refresh rebuilds its copies of the
 * centroids after c64, c32 and cnorm changed; label labels count rows
 * from row first (the session calls it chunk by chunk, polling for cancel
 * in between: kmeans_cuda.cu), adding changed labels into changed (NULL:
 * not counted) and, in an iteration (status not NULL), its re-checks
 * into status; restart and
 * review (both optional) say which kernel a restart starts with and which
 * the next iteration takes, given this one's status: one of the
 * labeler's own (its labels stay what they are).  rows_moved (optional)
 * follows the session onto other rows (a streamed shard's, at most the
 * rows it was opened over): what it derives from the rows made again in
 * the buffers it has, queued on the stream, what it derives from the
 * centroids kept; without it the session closes and opens the labeler
 * again, which frees and allocates.
 */
typedef struct Labeler
{
	GcStatus	(*open) (CudaSession *s, void **state, GcError *err);
	GcStatus	(*refresh) (CudaSession *s, void *state, GcError *err);
	GcStatus	(*label) (CudaSession *s, void *state, int64_t first, int64_t count,
						  unsigned long long *changed, IterationStatus *status,
						  GcError *err);
	GcKernel	(*restart) (CudaSession *s, void *state);
	GcKernel	(*review) (CudaSession *s, void *state, const IterationStatus *status);
	void		(*close) (void *state);
	GcStatus	(*rows_moved) (CudaSession *s, void *state, GcError *err);
} Labeler;

/*
 * kmeans_cuda.cu: every row labelled by labeler (positions 0 .. n - 1 of
 * its choosing), in chunks with a poll for cancel between them
 */
extern GcStatus gc_label_in_chunks(CudaSession *s, const struct Labeler *labeler,
								   void *state, unsigned long long *changed,
								   IterationStatus *status, GcError *err);

/* labeler_table.cu: the labeler of a kernel, and the kernel for a fit */
extern const Labeler *gc_labeler(GcKernel kernel);
extern GcKernel gc_choose_kernel(const GcKmeansParams *params, int d, int k);
extern GcKernel gc_exact_screen_kernel(int d);
/* the precision auto starts from for this shape */
extern GcPrecision gc_auto_precision(int d, int k);
/* whether the kernel's labeling can share an iteration with pruning */
extern bool gc_kernel_is_simt(GcKernel kernel);
/* whether Lloyd's iterations on the kernel label with drift bounds */
extern bool gc_bounds_may_pay(GcAlgorithm algorithm, GcKernel kernel, int k);
/* whether the kernel screens with TF32 (on mma.sync or wgmma) */
extern bool gc_kernel_is_screen(GcKernel kernel);

/* One labeler per file */
extern const Labeler gc_labeler_simt;	/* labeler_simt.cu: register and tiled */
extern const Labeler gc_labeler_float64;	/* labeler_float64.cu */
extern const Labeler gc_labeler_tensor_exact;	/* tensor/labeler_fp32.cu: screened, 3xTF32 */
extern const Labeler gc_labeler_tensor_tf32;	/* tensor/labeler_fp32.cu */
/*
 * tensor/labeler_fp32.cu: the exact labeler's check skips by separations from
 * now on (and by k-means||'s D^2, need_below, where given); whether it can
 */
extern bool gc_tensor_separate(CudaSession *s, void *state, const double *need_below);
extern const Labeler gc_labeler_bf16;	/* tensor/labeler_16bit.cu */
extern const Labeler gc_labeler_fp16;	/* tensor/labeler_16bit.cu */
extern const Labeler gc_labeler_bf16_wgmma;	/* tensor/labeler_16bit.cu: on sm_90a (tensor/wgmma_kernels.cu) */
extern const Labeler gc_labeler_fp16_wgmma;	/* tensor/labeler_16bit.cu: on sm_90a (tensor/wgmma_kernels.cu) */

/*
 * labeler_pruned.cu: Wu & Hong's labeling of the first rows rows (the
 * rest by the SIMT kernel: the hybrid's probe), its work into
 * status->work; and the second epoch's re-ordering of the rows by work
 * (by_work) or back into input order
 */
extern GcStatus gc_pruned_open(CudaSession *s, void **state, GcError *err);
extern GcStatus gc_pruned_label(CudaSession *s, void *state, int64_t rows,
								IterationStatus *status, GcError *err);
extern GcStatus gc_pruned_order_rows(CudaSession *s, void *state, bool by_work,
									 GcError *err);
extern void gc_pruned_close(void *state);

/*
 * labeler_bounded.cu: Lloyd's labeling of every row with drift bounds, the
 * register kernel's labels.  open leaves *state NULL where its buffers do
 * not fit; forget makes the next pass a full one
 */
extern GcStatus gc_bounded_open(CudaSession *s, void **state, GcError *err);
extern GcStatus gc_bounded_label(CudaSession *s, void *state, IterationStatus *status,
								 GcError *err);
extern void gc_bounded_forget(void *state);
extern void gc_bounded_close(void *state);

/*
 * seeding_parallel.cu: k-means|| seeding, its nearest-sample passes run
 * by the exact tensor labeler; the chosen rows into chosen (host)
 */
extern GcStatus gc_seed_kmeans_parallel_cuda(CudaSession *s, const GcKmeansParams *params,
											 uint64_t seed, int64_t *chosen, GcError *err);

/*
 * seeding_parallel.cu: every row of s labelled against m rows of its own
 * (c64, their centred floats c32 and norms cnorm, padded with zero norms)
 * by the exact tensor labeler, into labels: the nearest, the lowest on
 * ties, wherever it is nearer than need_below[row] (NULL: everywhere),
 * elsewhere one no nearer
 */
extern GcStatus gc_label_rows_against(CudaSession *s, double *c64, float *c32, float *cnorm,
									  int64_t m, int32_t *labels, const double *need_below,
									  GcError *err);
/*
 * The same labeling kept open for many: opened over s against m rows (the
 * buffers as above, filled before each labeling), labelling with the rows
 * as they are then, closed once
 */
typedef struct GcRowLabeler
{
	CudaSession sub;			/* s with the m rows as its centroids */
	bool		separated;		/* the exact check takes the rows' separations */
} GcRowLabeler;
extern GcStatus gc_row_labeler_open(CudaSession *s, int64_t m, double *c64, float *c32,
									float *cnorm, int32_t *labels, GcRowLabeler *rl,
									GcError *err);
extern GcStatus gc_row_labeler_label(GcRowLabeler *rl, const double *need_below, GcError *err);
extern void gc_row_labeler_close(GcRowLabeler *rl);
/*
 * seeding_batched.cu: batched greedy k-means++ (k-means||'s recluster from
 * GC_BATCHED_MIN_K centres) over s, a session of the candidates; the
 * chosen rows into chosen (host)
 */
extern GcStatus launch_batched_kmeanspp(CudaSession *s, const GcKmeansParams *params,
										uint64_t seed, int64_t *chosen, GcError *err);
/* rows[0 .. m - 1] of s (device) into c64, c32 and cnorm (capacity of them, zero past m) */
extern GcStatus gc_gather_rows(const CudaSession *s, const long long *rows, int64_t m,
							   int64_t capacity, double *c64, float *c32, float *cnorm,
							   GcError *err);
/* m rows of d values on the host into c64, c32 and cnorm, as gc_gather_rows makes them */
extern GcStatus gc_stage_rows(const CudaSession *s, const double *values, int64_t m,
							  int64_t capacity, double *c64, float *c32, float *cnorm,
							  GcError *err);
/*
 * seeding_parallel.cu: a nearest pass of k-means|| over s's rows: D^2
 * (mind2) and the nearest candidate (nearest) lowered to candidate
 * labels[i] of those in c64, numbered from first (candidate 0 where
 * labels is NULL), or set where initial; the potential, the exact sum of
 * the rows' quantised w D^2, into *potential by way of partials
 * (GC_PARALLEL_PARTIALS on the device)
 */
#define GC_PARALLEL_PARTIALS 1024
extern GcStatus gc_parallel_nearest_pass(CudaSession *s, const double *c64,
										 const int32_t *labels, int64_t first, bool initial,
										 double *mind2, int32_t *nearest, gc_u128 *partials,
										 gc_u128 *potential, GcError *err);
/*
 * seeding_parallel.cu: k-means||'s recluster on s's device: m weighted
 * candidates (their values in c64 and centred floats in c32 on the
 * device, their draw hashes and weights on the host) reclustered to
 * rparams->k by batched greedy k-means++ where gc_batched_recluster says,
 * else greedy k-means++; the picks (candidates' indices) into picks
 */
extern GcStatus gc_recluster_candidates(CudaSession *s, const GcKmeansParams *rparams,
										uint64_t seed, double *c64, float *c32,
										const uint64_t *hashes, const double *weights,
										int64_t m, int64_t *picks, GcError *err);
/*
 * seeding_shard.cu: k-means|| over a shard of a sharded fit
 * (GcKmeansBackend.parallel_shard) on session s
 */
extern GcStatus gc_cuda_parallel_shard(void *session, const GcKmeansParams *params,
									   int64_t row_base, void **shard,
									   const GcParallelOps **ops, GcError *err);

/*
 * kmeans_cuda.cu: label every row with s->labeler in chunks of about
 * GC_POLL_WORK_GPU units, the interrupt hook polled between them; the
 * last chunk may still run on s->stream when it returns
 */
extern GcStatus gc_label_points(CudaSession *s, unsigned long long *changed,
								IterationStatus *status, GcError *err);

/* ALLOC_OR_RETURN for a labeler's state, which must exist first */
#define STATE_OR_RETURN(ptr, type) \
	do { \
		(ptr) = (type *) calloc(1, sizeof(type)); \
		if ((ptr) == NULL) \
			return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for a labeler"); \
	} while (0)

#endif							/* GC_KMEANS_SESSION_CUH */
