/*-------------------------------------------------------------------------
 *
 * host_upload.cuh
 *	  Copies of host memory to the device, page-locked or not
 *	  (host_upload.cu): what a session's upload hands over.
 *
 * IDENTIFICATION
 *	  cuda/host_upload.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_HOST_UPLOAD_CUH
#define GC_HOST_UPLOAD_CUH

#include <cuda_runtime.h>

#include "gc_engine.h"

/* One copy of bytes from host to device */
typedef struct HostCopy
{
	void	   *device;
	const void *host;
	size_t		bytes;
} HostCopy;

/* Copies to upload, gathered before they start */
typedef struct HostCopies
{
	HostCopy   *items;
	int			count;
	int			capacity;
} HostCopies;

/* Add a copy to copies; false if there is no memory for it */
extern bool gc_host_copies_add(HostCopies *copies, void *device, const void *host,
							   size_t bytes);

/*
 * Run copies: from page-locked memory asynchronously on stream, from
 * pageable memory through page-locked staging buffers that helper threads
 * fill.  When it returns, the pageable copies are done and the others are
 * queued on stream ahead of what follows there.  Frees copies' array.
 */
extern GcStatus gc_host_copies_run(HostCopies *copies, cudaStream_t stream,
								   GcError *err);

#endif							/* GC_HOST_UPLOAD_CUH */
