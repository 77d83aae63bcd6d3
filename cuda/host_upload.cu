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
 * parallel against serial), about 8 GB/s.  Here STAGE_LANES lanes (the
 * caller and helper threads) each take the next 8 MB piece, copy it into
 * one of two page-locked buffers of their own and queue its upload on
 * their own stream, while the other buffer's upload runs.  Helpers block
 * every signal (PostgreSQL's handlers stay in the caller's thread), call
 * nothing of PostgreSQL's and are joined before this returns.  The buffers
 * come from the pinned cache (pinned_memory.cu), so a session's next
 * upload finds them page-locked.  Below STAGE_MIN_BYTES of pageable data
 * the driver's staging is used, as starting threads would not pay.
 *
 * IDENTIFICATION
 *	  cuda/host_upload.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gc_cuda.h"
#include "host_upload.cuh"
#include "cuda_check.cuh"

#define STAGE_BYTES ((size_t) 8 << 20)
#define STAGE_MIN_BYTES ((size_t) 256 << 20)
#define STAGE_LANES 6
#define LANE_BUFFERS 2

/* At most STAGE_BYTES of one pageable copy */
typedef struct Piece
{
	void	   *device;
	const char *host;
	size_t		bytes;
} Piece;

/* The pieces of one upload, which lanes take in turn */
typedef struct Staging
{
	Piece	   *pieces;
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

bool
gc_host_copies_add(HostCopies *copies, void *device, const void *host, size_t bytes)
{
	if (bytes == 0)
		return true;
	if (copies->count == copies->capacity)
	{
		int			capacity = copies->capacity > 0 ? 2 * copies->capacity : 16;
		HostCopy   *items = (HostCopy *) realloc(copies->items, sizeof(HostCopy) * capacity);

		if (items == NULL)
			return false;
		copies->items = items;
		copies->capacity = capacity;
	}
	copies->items[copies->count++] = HostCopy{device, host, bytes};
	return true;
}

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
		const Piece *piece;

		if (p >= staging->npieces)
			break;
		piece = &staging->pieces[p];
		if (use >= LANE_BUFFERS && (e = cudaEventSynchronize(lane->uploaded[b])) != cudaSuccess)
		{
			lane_fail(lane, e, "cudaEventSynchronize");
			break;
		}
		memcpy(lane->buffers[b], piece->host, piece->bytes);
		if ((e = cudaMemcpyAsync(piece->device, lane->buffers[b], piece->bytes,
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
 * Upload the pageable copies of copies (those marked in pageable) through
 * lanes; false, with nothing done, when not even one lane can be opened
 */
static bool
stage(const HostCopies *copies, const bool *pageable, size_t pageable_bytes,
	  GcStatus *status, GcError *err)
{
	Staging		staging = {0};
	Lane		lanes[STAGE_LANES];
	int			nlanes = 0;
	sigset_t	all,
				old;

	staging.pieces = (Piece *) malloc(sizeof(Piece) * (pageable_bytes / STAGE_BYTES + copies->count));
	if (staging.pieces == NULL || cudaGetDevice(&staging.device) != cudaSuccess)
	{
		(void) cudaGetLastError();
		free(staging.pieces);
		return false;
	}
	for (int i = 0; i < copies->count; i++)
		for (size_t offset = 0; pageable[i] && offset < copies->items[i].bytes; offset += STAGE_BYTES)
		{
			const HostCopy *copy = &copies->items[i];
			size_t		bytes = copy->bytes - offset < STAGE_BYTES ? copy->bytes - offset : STAGE_BYTES;

			staging.pieces[staging.npieces++] = Piece{(char *) copy->device + offset,
													  (const char *) copy->host + offset, bytes};
		}
	while (nlanes < STAGE_LANES && (size_t) nlanes < staging.npieces)
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

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int l = 1; l < nlanes; l++)
		lanes[l].started = pthread_create(&lanes[l].thread, NULL, lane_main, &lanes[l]) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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

GcStatus
gc_host_copies_run(HostCopies *copies, cudaStream_t stream, GcError *err)
{
	bool	   *pageable = (bool *) calloc(copies->count > 0 ? copies->count : 1, sizeof(bool));
	size_t		pageable_bytes = 0;
	GcStatus	status = GC_OK;
	cudaError_t e = cudaSuccess;

	if (pageable == NULL)
		status = gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for the upload");
	for (int i = 0; status == GC_OK && i < copies->count; i++)
	{
		if (!page_locked(copies->items[i].host))
		{
			pageable[i] = true;
			pageable_bytes += copies->items[i].bytes;
		}
		else if ((e = cudaMemcpyAsync(copies->items[i].device, copies->items[i].host,
									  copies->items[i].bytes, cudaMemcpyHostToDevice,
									  stream)) != cudaSuccess)
			status = gc_cuda_fail(err, e, "cudaMemcpyAsync", __FILE__, __LINE__);
	}
	if (status == GC_OK && pageable_bytes > 0 &&
		(pageable_bytes < STAGE_MIN_BYTES || !stage(copies, pageable, pageable_bytes, &status, err)))
		for (int i = 0; status == GC_OK && i < copies->count; i++)
			if (pageable[i] &&
				(e = cudaMemcpyAsync(copies->items[i].device, copies->items[i].host,
									 copies->items[i].bytes, cudaMemcpyHostToDevice,
									 stream)) != cudaSuccess)
				status = gc_cuda_fail(err, e, "cudaMemcpyAsync", __FILE__, __LINE__);
	free(pageable);
	free(copies->items);
	memset(copies, 0, sizeof(*copies));
	return status;
}
