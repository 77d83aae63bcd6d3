/*-------------------------------------------------------------------------
 *
 * common.c
 *	  Helpers every part of the engine shares: recording a failure in a
 *	  GcError, the monotonic clock behind the phase timings, helper
 *	  threads that take no signal, the rule of
 *	  cancel by work (how much work passes between two polls of the
 *	  interrupt hook, on the CPU and per GPU launch, gc_poll.h), and the
 *	  order-independent random choice of rows (k-means' random start and
 *	  p-median's samples).
 *
 * IDENTIFICATION
 *	  engine/common.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_engine.h"
#include "gc_math.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Records a failure in err (the first one wins) and returns status
 */
GcStatus
gc_fail(GcError *err, GcStatus status, const char *fmt,...)
{
	if (err && err->status == GC_OK)
	{
		va_list		ap;

		err->status = status;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return status;
}

double
gc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1.0e6;
}

/*
 * Start a helper thread that takes no signal: in a PostgreSQL process the
 * signal handlers touch backend state and must run in the main thread,
 * so every signal is blocked while the thread is created, and it inherits
 * that mask; the caller's mask is put back after
 */
int
gc_thread_create(pthread_t *thread, void *(*start) (void *), void *arg)
{
	sigset_t	all,
				old;
	int			rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(thread, NULL, start, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int64_t
gc_poll_span(int64_t unit)
{
	return unit >= GC_POLL_WORK ? 1 : GC_POLL_WORK / (unit > 0 ? unit : 1);
}

bool
gc_copy_polled(void *dst, const void *src, size_t bytes, GcPoll *poll)
{
	for (size_t done = 0; done < bytes; done += (size_t) GC_POLL_WORK)
	{
		size_t		slice = bytes - done < (size_t) GC_POLL_WORK ? bytes - done : (size_t) GC_POLL_WORK;

		if (src != NULL)
			memcpy((char *) dst + done, (const char *) src + done, slice);
		else
			memset((char *) dst + done, 0, slice);
		if (gc_poll(poll, (int64_t) slice))
			return false;
	}
	return true;
}

int64_t
gc_poll_gpu_items(int64_t unit, int64_t granule, int64_t count)
{
	int64_t		items = GC_POLL_WORK_GPU / (unit > 0 ? unit : 1);

	items = items < granule ? granule : items / granule * granule;
	return items < count ? items : (count > 0 ? count : 1);
}

typedef struct RankedRow
{
	double		draw;
	int64_t		index;
} RankedRow;

static int
ranked_row_before(const RankedRow *a, const RankedRow *b)
{
	return a->draw < b->draw || (a->draw == b->draw && a->index < b->index);
}

static void
sift_down(RankedRow *heap, int size, int i)
{
	for (;;)
	{
		int			largest = i,
					l = 2 * i + 1,
					r = 2 * i + 2;
		RankedRow	tmp;

		if (l < size && ranked_row_before(&heap[largest], &heap[l]))
			largest = l;
		if (r < size && ranked_row_before(&heap[largest], &heap[r]))
			largest = r;
		if (largest == i)
			return;
		tmp = heap[i];
		heap[i] = heap[largest];
		heap[largest] = tmp;
		i = largest;
	}
}

/*
 * Random initialisation: the k rows with the smallest seeded draws, in
 * increasing order of draw (a max-heap of the k best so far).
 */
GcStatus
gc_select_random_rows(const GcRows *rows, int k, uint64_t seed, int64_t *chosen,
					  bool (*interrupted) (void), GcError *err)
{
	RankedRow  *heap = malloc(sizeof(RankedRow) * k);
	int			size = 0;
	GcPoll		poll = {interrupted, 0};

	if (heap == NULL)
		return gc_fail(err, GC_ERR_HOST_MEMORY, "out of memory for seeding");
	for (int c = 0; c < rows->nchunks; c++)
	{
		const GcChunk *chunk = &rows->chunks[c];

		for (int64_t i = 0; i < chunk->count; i++)
		{
			RankedRow	r = {gc_unit_draw(gc_draw_hash(rows, chunk, i), seed, 0), chunk->first_row + i};

			/* a draw and a heap step: a few dozen units */
			if (gc_poll(&poll, 32))
			{
				free(heap);
				return gc_fail(err, GC_INTERRUPTED, "interrupted during seeding");
			}
			if (size < k)
			{
				heap[size++] = r;
				for (int p = size / 2 - 1; size == k && p >= 0; p--)
					sift_down(heap, size, p);
			}
			else if (ranked_row_before(&r, &heap[0]))
			{
				heap[0] = r;
				sift_down(heap, size, 0);
			}
		}
	}
	/* heap sort: pop the largest to the end */
	if (size < k)
		for (int p = size / 2 - 1; p >= 0; p--)
			sift_down(heap, size, p);
	for (int end = size - 1; end > 0; end--)
	{
		RankedRow	tmp = heap[0];

		heap[0] = heap[end];
		heap[end] = tmp;
		sift_down(heap, end, 0);
	}
	for (int i = 0; i < size; i++)
		chosen[i] = heap[i].index;
	free(heap);
	return GC_OK;
}

const char *
gc_kernel_name(GcKernel kernel)
{
	static const char *const names[GC_KERNEL_COUNT] = {
		"auto", "register", "tiled", "tensor_screened", "tensor_3xtf32", "tensor_tf32",
		"tensor_bf16", "float64", "tensor_fp16", "tensor_bf16_wgmma", "tensor_fp16_wgmma",
		"tensor_screened_wgmma", "tensor_screened_fp16"
	};

	return kernel >= 0 && kernel < GC_KERNEL_COUNT ? names[kernel] : "unknown";
}
