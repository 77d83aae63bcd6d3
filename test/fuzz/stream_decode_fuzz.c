/*-------------------------------------------------------------------------
 *
 * stream_decode_fuzz.c
 *	  libFuzzer target over the kmeans_stream decoder: any input must be
 *	  rejected with a reason or accepted, then readable point by point and
 *	  encoded again to the same bytes (the decoder accepts only the form
 *	  the encoder writes), without a crash, a leak or an out-of-bounds
 *	  read (AddressSanitizer).  The type's own functions (base64 text,
 *	  binary receive, compaction on output) are fuzzed in a backend by
 *	  type_fuzz.c.
 *
 * Inputs whose first byte is odd get a correct checksum patched in before
 * decoding, so that the fuzzer explores the checks that follow it instead
 * of stopping at the checksum.  The run starts from valid summaries that
 * test/fuzz/stream_seeds.c writes.
 *
 *	  make fuzz-check       build with clang -fsanitize=fuzzer,address and
 *	                        run for FUZZ_SECONDS (30)
 *
 * IDENTIFICATION
 *	  test/fuzz/stream_decode_fuzz.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream_format.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *buf;
	GcStreamHeader h;

	if (size == 0)
		return 0;
	/* an exact-size copy, so that ASan sees any read past the end */
	buf = malloc(size);
	memcpy(buf, data, size);
	if ((data[0] & 1) && size >= 8)
	{
		uint64_t	sum = gc_stream_checksum(buf, size - 8);

		for (int i = 0; i < 8; i++)
			buf[size - 8 + i] = (uint8_t) (sum >> (8 * i));
	}
	if (gc_stream_decode(buf, size, &h) == NULL)
	{
		double	   *x = malloc(sizeof(double) * h.d);
		double		w;
		uint8_t    *again = calloc(1, size);

		/* read back point by point, and encoded again to the same bytes */
		if (gc_stream_encoded_size(h.d, h.nlevels, h.total) != size)
			abort();
		gc_stream_put_header(again, &h);
		for (int64_t i = 0; i < h.total; i++)
		{
			gc_stream_get_point(buf, &h, i, &w, x);
			gc_stream_put_point(again, &h, i, w, x);
		}
		gc_stream_seal(again, size);
		if (memcmp(again, buf, size) != 0)
		{
			fprintf(stderr, "an accepted summary encodes again to different bytes\n");
			abort();
		}
		free(again);
		free(x);
	}
	free(buf);
	return 0;
}
