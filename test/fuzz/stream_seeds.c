/*-------------------------------------------------------------------------
 *
 * stream_seeds.c
 *	  Writes a few valid kmeans_stream summaries into the directory given,
 *	  as the starting corpus of the decoder's fuzz target.
 *
 * IDENTIFICATION
 *	  test/fuzz/stream_seeds.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream_format.h"

/* A summary of nlevels levels, level l holding counts[l] points */
static void
write_seed(const char *dir, int d, int k, int nlevels, const int64_t *counts)
{
	GcStreamHeader h = {0};
	size_t		len;
	uint8_t    *buf;
	double		x[8];
	int64_t		index = 0;
	char		path[512];
	FILE	   *f;

	h.d = d;
	h.k = k;
	h.m = 2 * k;
	h.block_rows = 8 * k;
	h.nlevels = nlevels;
	h.seed = 42;
	for (int l = 0; l < nlevels; l++)
	{
		h.counts[l] = counts[l];
		h.total += counts[l];
		h.rows += counts[l] * (l == 0 ? 1 : 3);
	}
	len = gc_stream_encoded_size(d, nlevels, h.total);
	buf = calloc(1, len);
	gc_stream_put_header(buf, &h);
	for (int l = 0; l < nlevels; l++)
		for (int64_t i = 0; i < counts[l]; i++, index++)
		{
			for (int j = 0; j < d; j++)
				x[j] = (double) (index * 7 % 13) - 0.5 * j;
			gc_stream_put_point(buf, &h, index, l == 0 ? 1.0 : 3.0, x);
		}
	gc_stream_seal(buf, len);
	snprintf(path, sizeof(path), "%s/seed-d%d-k%d-l%d", dir, d, k, nlevels);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len)
	{
		perror(path);
		exit(1);
	}
	fclose(f);
	free(buf);
}

int
main(int argc, char **argv)
{
	static const int64_t one[] = {3};
	static const int64_t three[] = {2, 4, 1};

	if (argc != 2)
	{
		fprintf(stderr, "usage: stream_seeds DIR\n");
		return 2;
	}
	write_seed(argv[1], 2, 1, 1, one);
	write_seed(argv[1], 3, 2, 3, three);
	write_seed(argv[1], 8, 1, 1, one);
	return 0;
}
