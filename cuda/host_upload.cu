/*-------------------------------------------------------------------------
 *
 * host_upload.cu
 *	  Uploads of host memory: page-locked ranges go to the device by
 *	  asynchronous copies; pageable ones, such as the rows parallel workers
 *	  left in shared memory or the rows of a fit in the GPU service, go
 *	  through page-locked staging buffers that several threads fill at once.
 *
 * A copy from pageable memory is staged by the driver, one thread copying
 * into its own small buffers: on the H100 machine 6 GB of rows (1M rows of
 * d = 768 in shared memory) took 0.73 s longer to upload than from
 * page-locked memory (bench/results/embedding-full-pin-ahead-h100.jsonl,
 * parallel against serial), about 8 GB/s.  Here up to STAGE_LANES lanes (the
 * caller and helper threads) each take the next 8 MB piece, copy it into
 * one of two page-locked buffers of their own and queue its upload on
 * their own stream, while the other buffer's upload runs.  Helpers block
 * every signal (PostgreSQL's handlers stay in the caller's thread), call
 * nothing of PostgreSQL's and are joined before this returns.  The buffers
 * come from the pinned cache (pinned_memory.cu), so a session's next
 * upload finds them page-locked.  Below STAGE_MIN_BYTES of pageable data
 * the driver's staging is used, as starting threads would not pay; from
 * there a lane takes at least two pieces.  That bound was 256 MB, which
 * left a streamed shard's rows under a small GPU budget (176 MB a shard,
 * each pass) to the driver: 10 times the transfer bound an iteration
 * (bench/results/sharded-seeding-h200.md).
 *
 * Rows read from vector, halfvec or real[] columns are float32 values.  A
 * narrow store (GcRows.narrow, the k-means aggregates' Euclidean fits)
 * holds them as such, and they cross the bus as they are; in a store of
 * doubles (GcRows.float_exact) their staged values are narrowed to
 * float32 as a lane copies them.  Either way they cross the bus in half
 * the bytes, and a kernel widens them into the double array, exactly.
 * Narrowing as it copies, a lane's copy
 * is then bound by the reads of one core: on the H100 machine (16 cores)
 * 6 lanes moved the 6 GB of 1M x 768 float32 rows in 168-234 ms, hardly
 * less than whole doubles had taken, so there are as many lanes as
 * cores, up to STAGE_LANES.
 *
 * IDENTIFICATION
 *	  cuda/host_upload.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gc_cuda.h"
#include "host_upload.cuh"
#include "cuda_check.cuh"

#define STAGE_BYTES ((size_t) 8 << 20)
#define STAGE_MIN_BYTES ((size_t) 32 << 20)
#define STAGE_LANES 12
#define LANE_BUFFERS 2

/* One copy of bytes from host to device */
typedef struct HostCopy
{
	void	   *device;
	const char *host;
	size_t		bytes;
	float	   *narrow;			/* staged: doubles go here as floats; NULL: as they are */
} HostCopy;

/* An upload of rows: page-locked chunks are copied at once, pageable ones wait here */
typedef struct RowsUpload
{
	cudaStream_t stream;
	HostCopy   *pageable;
	int			npageable;
	size_t		pageable_bytes;
} RowsUpload;

/* The pageable copies in pieces of at most STAGE_BYTES, which lanes take in turn */
typedef struct Staging
{
	HostCopy   *pieces;
	size_t		npieces;
	size_t		next;			/* the next piece to take (atomic) */
	int			failed;			/* a lane failed: the others stop (atomic) */
	int			device;
} Staging;

typedef struct Lane
{
	Staging    *staging;
	char	   *buffers[LANE_BUFFERS];
	cudaEvent_t uploaded[LANE_BUFFERS];
	cudaStream_t stream;
	cudaError_t error;			/* the lane's first failure */
	const char *call;
	pthread_t	thread;
	bool		started;		/* a helper thread runs it */
} Lane;

/* Whether host is memory CUDA knows as page-locked */
static bool
page_locked(const void *host)
{
	cudaPointerAttributes attributes;

	if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return attributes.type == cudaMemoryTypeHost;
}

static void
lane_fail(Lane *lane, cudaError_t e, const char *call)
{
	if (lane->error == cudaSuccess)
	{
		lane->error = e;
		lane->call = call;
	}
	(void) cudaGetLastError();
	__atomic_store_n(&lane->staging->failed, 1, __ATOMIC_RELAXED);
}

/* count doubles, each a float32 value, as floats */
static void
narrow_copy(float *__restrict__ dest, const double *__restrict__ src, size_t count)
{
	for (size_t i = 0; i < count; i++)
		dest[i] = (float) src[i];
}

/* Widen count floats into doubles */
__global__ static void
widen_kernel(double *dest, const float *src, size_t count)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (size_t) gridDim.x * blockDim.x)
		dest[i] = (double) src[i];
}

/* Take pieces until none is left, each through the buffer uploaded longest ago */
static void
lane_run(Lane *lane)
{
	Staging    *staging = lane->staging;
	cudaError_t e;

	for (int use = 0; !__atomic_load_n(&staging->failed, __ATOMIC_RELAXED); use++)
	{
		size_t		p = __atomic_fetch_add(&staging->next, 1, __ATOMIC_RELAXED);
		int			b = use % LANE_BUFFERS;
		const HostCopy *piece;

		if (p >= staging->npieces)
			break;
		piece = &staging->pieces[p];
		if (use >= LANE_BUFFERS && (e = cudaEventSynchronize(lane->uploaded[b])) != cudaSuccess)
		{
			lane_fail(lane, e, "cudaEventSynchronize");
			break;
		}
		if (piece->narrow)
			narrow_copy((float *) lane->buffers[b], (const double *) piece->host,
						piece->bytes / sizeof(double));
		else
			memcpy(lane->buffers[b], piece->host, piece->bytes);
		if ((e = cudaMemcpyAsync(piece->narrow ? (void *) piece->narrow : piece->device,
								 lane->buffers[b],
								 piece->narrow ? piece->bytes / 2 : piece->bytes,
								 cudaMemcpyHostToDevice, lane->stream)) != cudaSuccess)
		{
			lane_fail(lane, e, "cudaMemcpyAsync");
			break;
		}
		if ((e = cudaEventRecord(lane->uploaded[b], lane->stream)) != cudaSuccess)
		{
			lane_fail(lane, e, "cudaEventRecord");
			break;
		}
	}
	if ((e = cudaStreamSynchronize(lane->stream)) != cudaSuccess)
		lane_fail(lane, e, "cudaStreamSynchronize");
}

/* A helper thread's body: the caller's device, then its lane */
static void *
lane_main(void *arg)
{
	Lane	   *lane = (Lane *) arg;
	cudaError_t e = cudaSetDevice(lane->staging->device);

	if (e != cudaSuccess)
		lane_fail(lane, e, "cudaSetDevice");
	else
		lane_run(lane);
	return NULL;
}

/* The lane's stream, events and buffers; false if any is not to be had */
static bool
lane_open(Lane *lane, Staging *staging)
{
	memset(lane, 0, sizeof(*lane));
	lane->staging = staging;
	if (cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking) != cudaSuccess)
	{
		lane->stream = NULL;
		(void) cudaGetLastError();
		return false;
	}
	for (int b = 0; b < LANE_BUFFERS; b++)
	{
		if (cudaEventCreateWithFlags(&lane->uploaded[b], cudaEventDisableTiming) != cudaSuccess)
		{
			lane->uploaded[b] = NULL;
			(void) cudaGetLastError();
			return false;
		}
		if ((lane->buffers[b] = (char *) gc_cuda_host_alloc(STAGE_BYTES)) == NULL)
			return false;
	}
	return true;
}

static void
lane_close(Lane *lane)
{
	for (int b = 0; b < LANE_BUFFERS; b++)
	{
		if (lane->uploaded[b])
			(void) cudaEventDestroy(lane->uploaded[b]);
		gc_cuda_host_free(lane->buffers[b]);
	}
	if (lane->stream)
		(void) cudaStreamDestroy(lane->stream);
	(void) cudaGetLastError();
}

/*
 * Upload up's pageable copies through lanes; false, with nothing done,
 * when not even one lane can be opened
 */
static bool
stage(const RowsUpload *up, GcStatus *status, GcError *err)
{
	Staging		staging = {0};
	Lane		lanes[STAGE_LANES];
	int			nlanes = 0;
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int			max_lanes = cores >= 2 && cores < STAGE_LANES ? (int) cores : STAGE_LANES;

	staging.pieces = (HostCopy *) malloc(sizeof(HostCopy) *
										 (up->pageable_bytes / STAGE_BYTES + up->npageable));
	if (staging.pieces == NULL || cudaGetDevice(&staging.device) != cudaSuccess)
	{
		(void) cudaGetLastError();
		free(staging.pieces);
		return false;
	}
	for (int i = 0; i < up->npageable; i++)
		for (size_t offset = 0; offset < up->pageable[i].bytes; offset += STAGE_BYTES)
		{
			const HostCopy *copy = &up->pageable[i];
			size_t		bytes = copy->bytes - offset < STAGE_BYTES ? copy->bytes - offset : STAGE_BYTES;

			staging.pieces[staging.npieces++] =
				HostCopy{(char *) copy->device + offset, copy->host + offset, bytes,
						 copy->narrow ? copy->narrow + offset / sizeof(double) : NULL};
		}
	while (nlanes < max_lanes && (size_t) nlanes < (staging.npieces + 1) / 2)
	{
		if (!lane_open(&lanes[nlanes], &staging))
		{
			lane_close(&lanes[nlanes]);
			break;
		}
		nlanes++;
	}
	if (nlanes == 0)
	{
		free(staging.pieces);
		return false;
	}

	for (int l = 1; l < nlanes; l++)
		lanes[l].started = gc_thread_create(&lanes[l].thread, lane_main, &lanes[l]) == 0;
	lane_run(&lanes[0]);

	*status = GC_OK;
	for (int l = 0; l < nlanes; l++)
	{
		if (lanes[l].started)
			(void) pthread_join(lanes[l].thread, NULL);
		if (lanes[l].error != cudaSuccess && *status == GC_OK)
			*status = gc_cuda_fail(err, lanes[l].error, lanes[l].call, __FILE__, __LINE__);
		lane_close(&lanes[l]);
	}
	free(staging.pieces);
	return true;
}

static GcStatus
copy_async(const HostCopy *copy, cudaStream_t stream, GcError *err)
{
	GC_CUDA_TRY(cudaMemcpyAsync(copy->device, copy->host, copy->bytes, cudaMemcpyHostToDevice,
								stream), err);
	return GC_OK;
}

/*
 * Copy bytes from host now where it is page-locked; else add the copy to
 * up's pageable ones (narrow: where a staged copy of these doubles may go
 * as floats)
 */
static GcStatus
upload_or_defer(RowsUpload *up, void *device, const void *host, size_t bytes, float *narrow,
				GcError *err)
{
	HostCopy	copy = {device, (const char *) host, bytes, narrow};

	if (bytes == 0)
		return GC_OK;
	if (page_locked(host))
		return copy_async(&copy, up->stream, err);
	up->pageable[up->npageable++] = copy;
	up->pageable_bytes += bytes;
	return GC_OK;
}

/* Widen count floats at src into the doubles at dest, on stream */
static GcStatus
widen(double *dest, const float *src, size_t count, cudaStream_t stream, GcError *err)
{
	if (count == 0)
		return GC_OK;
	widen_kernel<<<(unsigned int) ((count + 255) / 256 < 4096 ? (count + 255) / 256 : 4096), 256,
		0, stream>>>(dest, src, count);
	GC_CUDA_TRY(cudaGetLastError(), err);
	return GC_OK;
}

/* Widen the staged copies that went as floats */
static GcStatus
widen_narrowed(const RowsUpload *up, GcError *err)
{
	for (int i = 0; i < up->npageable; i++)
	{
		const HostCopy *copy = &up->pageable[i];

		if (copy->narrow != NULL &&
			widen((double *) copy->device, copy->narrow, copy->bytes / sizeof(double),
				  up->stream, err) != GC_OK)
			return err->status;
	}
	return GC_OK;
}

GcStatus
gc_upload_rows(const GcRows *rows, double *values, uint64_t *hashes, double *weights,
			   float *narrow, cudaStream_t stream, GcError *err)
{
	RowsUpload	up = {stream, NULL, 0, 0};
	GcStatus	status = GC_OK;
	bool		staged = false;

	if (rows->narrow && narrow == NULL)
		return gc_fail(err, GC_ERR_DEVICE, "float32 rows need a device buffer of floats to upload into");
	/* at most three copies a chunk: values, hashes, weights */
	up.pageable = (HostCopy *) malloc(sizeof(HostCopy) * 3 * (rows->nchunks > 0 ? rows->nchunks : 1));
	if (up.pageable == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the upload");
	for (int c = 0; status == GC_OK && c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];
		size_t		first = (size_t) chunk->first_row * rows->d;

		if (rows->narrow)
			status = upload_or_defer(&up, narrow + first, chunk->narrow_values,
									 sizeof(float) * rows->d * chunk->count, NULL, err);
		else
			status = upload_or_defer(&up, values + first, chunk->values,
									 sizeof(double) * rows->d * chunk->count,
									 narrow && rows->float_exact ? narrow + first : NULL, err);
		if (status == GC_OK)
			status = upload_or_defer(&up, hashes + chunk->first_row,
									 rows->draw_hashes ? rows->draw_hashes + chunk->first_row :
									 chunk->hashes,
									 sizeof(uint64_t) * chunk->count, NULL, err);
		if (status == GC_OK && weights != NULL)
			status = upload_or_defer(&up, weights + chunk->first_row, chunk->weights,
									 sizeof(double) * chunk->count, NULL, err);
	}
	if (status == GC_OK && up.npageable > 0 && up.pageable_bytes >= STAGE_MIN_BYTES)
		staged = stage(&up, &status, err);
	if (status == GC_OK && staged)
		status = widen_narrowed(&up, err);
	else if (status == GC_OK)
		for (int i = 0; i < up.npageable && status == GC_OK; i++)
			status = copy_async(&up.pageable[i], stream, err);
	if (status == GC_OK && rows->narrow)
		status = widen(values, narrow, (size_t) rows->n * rows->d, stream, err);
	free(up.pageable);
	return status;
}
