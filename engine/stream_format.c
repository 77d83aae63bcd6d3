/*-------------------------------------------------------------------------
 *
 * stream_format.c
 *	  Encoder and validating decoder of the streaming k-means summary's
 *	  binary form (layout in stream_format.h).
 *
 * The decoder trusts nothing: it checks the fixed header, then each
 * level's count against its bound, then that the length is exactly what
 * the counts imply (with overflow-safe arithmetic), then the checksum,
 * and last every weight and value, before anyone reads a point.  Weights
 * are counts of rows (level 0 holds raw rows, of weight 1; a centre
 * weighs the rows it stands for), so each is a positive integer and they
 * sum to the rows field exactly.
 *
 * IDENTIFICATION
 *	  engine/stream_format.c
 *
 *-------------------------------------------------------------------------
 */
#include "stream_format.h"

#include <math.h>
#include <string.h>

#include "gc_engine.h"

/* weights and row counts stay exact in double below 2^53 */
#define GC_STREAM_MAX_ROWS ((int64_t) 1 << 53)

static void
put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
		(uint32_t) p[3] << 24;
}

static void
put_double(uint8_t *p, double x)
{
	uint64_t	bits;

	memcpy(&bits, &x, sizeof(bits));
	put_u64(p, bits);
}

static double
get_double(const uint8_t *p)
{
	uint64_t	bits = get_u64(p);
	double		x;

	memcpy(&x, &bits, sizeof(x));
	return x;
}

size_t
gc_stream_encoded_size(int d, int nlevels, int64_t total)
{
	uint64_t	per_point = 8 * ((uint64_t) d + 1);
	uint64_t	fixed = GC_STREAM_HEADER_BYTES + 8 * (uint64_t) nlevels + 8;

	if (d < 1 || nlevels < 1 || total < 0 ||
		(uint64_t) total > (SIZE_MAX - fixed) / per_point)
		return 0;
	return (size_t) (fixed + per_point * (uint64_t) total);
}

uint64_t
gc_stream_checksum(const uint8_t *bytes, size_t len)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++)
		h = (h ^ bytes[i]) * UINT64_C(0x100000001b3);
	return h;
}

void
gc_stream_put_header(uint8_t *buf, const GcStreamHeader *h)
{
	put_u32(buf, GC_STREAM_MAGIC);
	buf[4] = GC_STREAM_VERSION;
	buf[5] = buf[7] = 0;
	buf[6] = h->cosine ? GC_STREAM_FLAG_COSINE : 0;
	put_u32(buf + 8, (uint32_t) h->d);
	put_u32(buf + 12, (uint32_t) h->k);
	put_u32(buf + 16, (uint32_t) h->m);
	put_u32(buf + 20, (uint32_t) h->block_rows);
	put_u32(buf + 24, (uint32_t) h->nlevels);
	put_u32(buf + 28, 0);
	put_u64(buf + 32, (uint64_t) h->rows);
	put_u64(buf + 40, h->seed);
	for (int l = 0; l < h->nlevels; l++)
		put_u64(buf + GC_STREAM_HEADER_BYTES + 8 * l, (uint64_t) h->counts[l]);
}

/* Offsets of point index's weight and values */
static size_t
weight_offset(const GcStreamHeader *h, int64_t index)
{
	return GC_STREAM_HEADER_BYTES + 8 * (size_t) h->nlevels + 8 * (size_t) index;
}

static size_t
point_offset(const GcStreamHeader *h, int64_t index)
{
	return weight_offset(h, h->total) + 8 * (size_t) h->d * (size_t) index;
}

void
gc_stream_put_point(uint8_t *buf, const GcStreamHeader *h, int64_t index,
					double weight, const double *x)
{
	uint8_t    *p = buf + point_offset(h, index);

	put_double(buf + weight_offset(h, index), weight);
	for (int j = 0; j < h->d; j++)
		put_double(p + 8 * j, x[j]);
}

void
gc_stream_seal(uint8_t *buf, size_t len)
{
	put_u64(buf + len - 8, gc_stream_checksum(buf, len - 8));
}

void
gc_stream_get_point(const uint8_t *buf, const GcStreamHeader *h, int64_t index,
					double *weight, double *x)
{
	const uint8_t *p = buf + point_offset(h, index);

	*weight = get_double(buf + weight_offset(h, index));
	for (int j = 0; j < h->d; j++)
		x[j] = get_double(p + 8 * j);
}

/*
 * The fixed header's fields, each within its range
 */
static const char *
decode_header(const uint8_t *buf, size_t len, GcStreamHeader *h)
{
	int32_t		reserved;

	if (len < GC_STREAM_HEADER_BYTES + 16)
		return "the value is shorter than a summary header";
	if (get_u32(buf) != GC_STREAM_MAGIC)
		return "the value does not start with the kmeans_stream magic number";
	if (buf[4] != GC_STREAM_VERSION || buf[5] != 0)
		return "the value has an unsupported format version";
	if ((buf[6] & ~GC_STREAM_FLAG_COSINE) != 0 || buf[7] != 0)
		return "the value has unknown flags set";
	h->cosine = (buf[6] & GC_STREAM_FLAG_COSINE) != 0;
	h->d = (int32_t) get_u32(buf + 8);
	h->k = (int32_t) get_u32(buf + 12);
	h->m = (int32_t) get_u32(buf + 16);
	h->block_rows = (int32_t) get_u32(buf + 20);
	h->nlevels = (int32_t) get_u32(buf + 24);
	reserved = (int32_t) get_u32(buf + 28);
	h->rows = (int64_t) get_u64(buf + 32);
	h->seed = get_u64(buf + 40);
	if (h->d < 1 || h->d > GC_MAX_DIM)
		return "the dimension is out of range";
	if (h->k < 1 || h->k > GC_MAX_K)
		return "k is out of range";
	if (h->m < h->k || h->m > GC_STREAM_MAX_CENTRES)
		return "the number of centres per reduction is out of range";
	if (h->block_rows < 2 * h->m || h->block_rows > GC_STREAM_MAX_BLOCK)
		return "the block size is out of range";
	if (h->nlevels < 1 || h->nlevels > GC_STREAM_MAX_LEVELS)
		return "the number of levels is out of range";
	if (reserved != 0)
		return "a reserved field is not zero";
	if (h->rows < 0 || h->rows > GC_STREAM_MAX_ROWS)
		return "the row count is out of range";
	return NULL;
}

/*
 * Per-level counts within their bounds, and the exact length they imply
 */
static const char *
decode_counts(const uint8_t *buf, size_t len, GcStreamHeader *h)
{
	size_t		expected;

	if (len < GC_STREAM_HEADER_BYTES + 8 * (size_t) h->nlevels + 8)
		return "the value is shorter than its level counts";
	h->total = 0;
	for (int l = 0; l < h->nlevels; l++)
	{
		int64_t		bound = l == 0 ? h->block_rows : (int64_t) GC_STREAM_FANOUT * h->m;

		h->counts[l] = (int64_t) get_u64(buf + GC_STREAM_HEADER_BYTES + 8 * l);
		if (h->counts[l] < 0 || h->counts[l] > bound)
			return "a level holds more points than its bound";
		h->total += h->counts[l];
	}
	for (int l = h->nlevels; l < GC_STREAM_MAX_LEVELS; l++)
		h->counts[l] = 0;
	if (h->total > h->rows)
		return "the summary holds more points than the rows it summarises";
	expected = gc_stream_encoded_size(h->d, h->nlevels, h->total);
	if (expected == 0 || len != expected)
		return "the length does not match the counts";
	return NULL;
}

/*
 * Weights: positive integers (1 at level 0) summing to the row count;
 * values: finite and within GC_MAX_MAGNITUDE; under the cosine metric
 * raw rows of unit length and centres no longer than 1 (means of unit rows)
 */
static const char *
decode_points(const uint8_t *buf, const GcStreamHeader *h)
{
	int64_t		index = 0;
	double		sum = 0.0;
	double		norm2;

	for (int l = 0; l < h->nlevels; l++)
		for (int64_t i = 0; i < h->counts[l]; i++, index++)
		{
			double		w = get_double(buf + weight_offset(h, index));
			const uint8_t *p = buf + point_offset(h, index);

			if (!(w >= 1.0) || w > (double) GC_STREAM_MAX_ROWS || w != floor(w))
				return "a weight is not a positive whole number";
			if (l == 0 && w != 1.0)
				return "a raw row has a weight other than 1";
			sum += w;
			norm2 = 0.0;
			for (int j = 0; j < h->d; j++)
			{
				double		x = get_double(p + 8 * j);

				if (!isfinite(x) || fabs(x) > GC_MAX_MAGNITUDE)
					return "a centre holds a non-finite or out-of-range value";
				norm2 += x * x;
			}
			if (h->cosine && norm2 > 1.0 + GC_STREAM_UNIT_SLACK)
				return "a point of a cosine summary is longer than a unit vector";
			if (h->cosine && l == 0 && norm2 < 1.0 - GC_STREAM_UNIT_SLACK)
				return "a raw row of a cosine summary is not a unit vector";
		}
	if (sum != (double) h->rows)
		return "the weights do not sum to the row count";
	return NULL;
}

const char *
gc_stream_decode(const uint8_t *buf, size_t len, GcStreamHeader *h)
{
	const char *why;

	memset(h, 0, sizeof(*h));
	if ((why = decode_header(buf, len, h)) != NULL)
		return why;
	if ((why = decode_counts(buf, len, h)) != NULL)
		return why;
	if (get_u64(buf + len - 8) != gc_stream_checksum(buf, len - 8))
		return "the checksum does not match";
	return decode_points(buf, h);
}
