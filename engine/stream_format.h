/*-------------------------------------------------------------------------
 *
 * stream_format.h
 *	  The binary form of a streaming k-means summary (the kmeans_stream
 *	  type's bytes, after the varlena header): an encoder and a decoder
 *	  that validates every field and length before it reads any point.
 *
 * Layout, all integers and doubles little-endian, no padding:
 *
 *	  0  uint32  magic "GCKS"
 *	  4  uint16  version (1)
 *	  6  uint16  flags: bit 0 (GC_STREAM_FLAG_COSINE) for a summary of unit rows
 *	                under the cosine metric; no other bit is set
 *	  8  int32   d            dimension, 1..GC_MAX_DIM
 *	 12  int32   k            clusters of the final model, 1..GC_MAX_K
 *	 16  int32   m            centres each reduction keeps, k..GC_STREAM_MAX_CENTRES
 *	 20  int32   block_rows   raw rows buffered before a reduction, >= 2m
 *	 24  int32   nlevels      1..GC_STREAM_MAX_LEVELS
 *	 28  int32   reserved (0)
 *	 32  int64   rows         rows summarised (the sum of all weights)
 *	 40  uint64  seed
 *	 48  int64   counts[nlevels]   points held at each level
 *	  .  double  weights[total]    level by level; level 0 weights are 1
 *	  .  double  points[total * d]
 *	  .  uint64  FNV-1a 64 of every byte before it
 *
 * Level 0 holds raw rows not yet reduced (at most block_rows); level l > 0
 * holds weighted centres (at most GC_STREAM_FANOUT * m).
 *
 * Plain C, no PostgreSQL header: the libFuzzer target links it alone.
 *
 * IDENTIFICATION
 *	  engine/stream_format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_STREAM_FORMAT_H
#define GC_STREAM_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_STREAM_MAGIC			0x534B4347u	/* "GCKS" read little-endian */
#define GC_STREAM_VERSION		1
#define GC_STREAM_MAX_LEVELS	32
#define GC_STREAM_MAX_CENTRES	100000
#define GC_STREAM_MAX_BLOCK		(1 << 24)
/* a level past 0 is reduced to m centres once it holds more than this many m */
#define GC_STREAM_FANOUT		8

#define GC_STREAM_HEADER_BYTES	48

#define GC_STREAM_FLAG_COSINE	1
/*
 * A cosine summary's raw rows (level 0) are unit vectors and its centres
 * means of unit rows, no longer than 1: to within this, the rounding of
 * the normalisation
 */
#define GC_STREAM_UNIT_SLACK	1e-9

typedef struct GcStreamHeader
{
	int			d;
	int			k;
	int			m;
	int			block_rows;
	int			nlevels;
	bool		cosine;			/* unit rows, the cosine metric */
	int64_t		rows;
	uint64_t	seed;
	int64_t		counts[GC_STREAM_MAX_LEVELS];
	int64_t		total;			/* sum of counts */
} GcStreamHeader;

/* Bytes of an encoded summary, or 0 when it would not fit in size_t */
extern size_t gc_stream_encoded_size(int d, int nlevels, int64_t total);

/* FNV-1a 64 of len bytes */
extern uint64_t gc_stream_checksum(const uint8_t *bytes, size_t len);

/*
 * Encoding: write the header, then each point's weight and values in
 * level order, then seal (the checksum).  buf holds
 * gc_stream_encoded_size() bytes.
 */
extern void gc_stream_put_header(uint8_t *buf, const GcStreamHeader *h);
extern void gc_stream_put_point(uint8_t *buf, const GcStreamHeader *h,
								int64_t index, double weight, const double *x);
extern void gc_stream_seal(uint8_t *buf, size_t len);

/*
 * Check that len bytes are a valid summary and fill h; on failure returns
 * a static description of the first problem found, on success NULL.
 */
extern const char *gc_stream_decode(const uint8_t *buf, size_t len,
									GcStreamHeader *h);

/* Read point index of a summary gc_stream_decode accepted */
extern void gc_stream_get_point(const uint8_t *buf, const GcStreamHeader *h,
								int64_t index, double *weight, double *x);

#endif							/* GC_STREAM_FORMAT_H */
