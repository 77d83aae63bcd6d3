/*-------------------------------------------------------------------------
 *
 * gc_math.h
 *	  Arithmetic that the CPU reference and the CUDA kernels must perform
 *	  identically: row hashing, the seeded uniform draws of the
 *	  order-independent k-means++ race, fixed-point quantisation of
 *	  centroid sums, and squared distances without fused multiply-adds.
 *
 * Everything is a static inline usable from C and from CUDA device code,
 * so one definition serves both backends.
 *
 * IDENTIFICATION
 *	  engine/gc_math.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GC_MATH_H
#define GC_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gc_engine.h"

#ifdef __CUDACC__
#define GC_HD __host__ __device__ __forceinline__
#else
#define GC_HD static inline
#endif

/* splitmix64's finaliser: a fast bijective 64-bit mixer */
GC_HD uint64_t
gc_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

GC_HD uint64_t
gc_double_bits(double x)
{
	uint64_t	bits;

	if (x == 0.0)
		x = 0.0;				/* -0.0 and 0.0 hash alike */
#ifdef __CUDA_ARCH__
	bits = (uint64_t) __double_as_longlong(x);
#else
	memcpy(&bits, &x, sizeof(bits));
#endif
	return bits;
}

/*
 * Hash of a row's values: equal rows hash alike, wherever they sit.  Each
 * element is mixed with its position independently of the others and the
 * results summed, so the mixes pipeline instead of forming one chain of
 * dependent multiplies (the hash is computed for every row collected), and
 * a loop over the elements vectorises (the row store's does).  Element j's
 * salt is j * GC_ROW_HASH_SALT_STEP.
 */
#define GC_ROW_HASH_SALT_STEP UINT64_C(0x9e3779b97f4a7c15)

GC_HD uint64_t
gc_row_hash_term(double x, uint64_t salt)
{
	return gc_mix64(gc_double_bits(x) ^ salt);
}

GC_HD uint64_t
gc_row_hash_finish(uint64_t sum, int d)
{
	return gc_mix64(sum ^ ((uint64_t) d * UINT64_C(0xd1b54a32d192ed03)));
}

GC_HD uint64_t
gc_row_hash(const double *x, int d)
{
	uint64_t	sum = 0;

	for (int j = 0; j < d; j++)
		sum += gc_row_hash_term(x[j], (uint64_t) j * GC_ROW_HASH_SALT_STEP);
	return gc_row_hash_finish(sum, d);
}

/* The seed and step's share of gc_unit_draw, the same for every row */
GC_HD uint64_t
gc_draw_key(uint64_t seed, uint64_t step)
{
	return gc_mix64(seed ^ gc_mix64(step + UINT64_C(0x632be59bd9b4e019)));
}

/* The same draw from the seed and step's key (gc_draw_key), for loops over rows */
GC_HD double
gc_unit_draw_keyed(uint64_t row_hash, uint64_t key)
{
	uint64_t	z = gc_mix64(row_hash ^ key);

	return (double) ((z >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/*
 * A uniform draw in (0, 1] that depends only on the row's contents, the
 * seed and the step: the same row gets the same draw whatever its position
 * in the input, which is what makes seeding independent of row order.
 */
GC_HD double
gc_unit_draw(uint64_t row_hash, uint64_t seed, uint64_t step)
{
	return gc_unit_draw_keyed(row_hash, gc_draw_key(seed, step));
}

/*
 * The stream of candidate j's draws at step t of greedy k-means++:
 * candidate 0 draws as plain k-means++'s step t does
 */
GC_HD uint64_t
gc_seed_stream(int step, int candidate)
{
	return (uint64_t) step + ((uint64_t) candidate << 32);
}

/* The stream of round r's draws in k-means|| (apart from k-means++'s) */
GC_HD uint64_t
gc_parallel_stream(int round)
{
	return (UINT64_C(1) << 63) | (uint64_t) round;
}

/*
 * Whether batched greedy k-means++ keeps a pick of D^2 m at squared
 * distance v (or a partial sum of it past m) from a pick kept before it in
 * the same step: not where that one is nearer to it than its D^2, so
 * takes its rows already
 */
GC_HD bool
gc_batched_keep(double v, double m)
{
	return !(v < m);
}

/*
 * Whether k-means|| samples a row of weighted distance wd2 (weight times
 * D^2) whose draw is u, in a round of oversampling ell over the potential
 * phi: u < ell wd2 / phi, multiplied out and rounded alike on both devices
 */
GC_HD bool
gc_parallel_sampled(double u, double wd2, double ell, double phi)
{
#ifdef __CUDA_ARCH__
	return __dmul_rn(u, phi) < __dmul_rn(ell, wd2);
#else
	return u * phi < ell * wd2;
#endif
}

/*
 * Key of a row in the k-means++ exponential race: -log(u) / w, where w is
 * the squared distance to the nearest centre chosen so far.  The row with
 * the smallest key is a sample with probability proportional to w.  The
 * key is rounded to float and packed above the row index, so that one
 * 64-bit minimum picks the winner and breaks ties by index.
 */
GC_HD uint64_t
gc_race_key(double u, double w, int64_t index)
{
	float		key;
	uint32_t	bits;

	if (w > 0.0)
	{
		double		k = -log(u) / w;

		key = k < 3.0e38 ? (float) k : INFINITY;
	}
	else
		key = INFINITY;
#ifdef __CUDA_ARCH__
	bits = (uint32_t) __float_as_uint(key);
#else
	memcpy(&bits, &key, sizeof(bits));
#endif
	return ((uint64_t) bits << 32) | (uint64_t) (uint32_t) index;
}

#define GC_RACE_NONE UINT64_MAX

/*
 * Whether a bid of draw u and weight w cannot beat the leader, the least
 * key so far (GC_RACE_NONE where there is none), so that its logarithm
 * need not be taken: -log(u) >= 1 - u, and a bound above the leader's
 * value by far more than the rounding of either side (1e-6 against about
 * 1e-15) means the key is at least the leader's.  Rows bid in index order,
 * so the later row also loses a tie.  No leader reads as NaN: every bid
 * is taken.
 */
GC_HD bool
gc_race_outbid(double u, double w, uint64_t leader)
{
	uint32_t	bits = (uint32_t) (leader >> 32);
	float		value;

#ifdef __CUDA_ARCH__
	value = __uint_as_float(bits);
#else
	memcpy(&value, &bits, sizeof(value));
#endif
	return w >= 0.0 && (1.0 - u) > (double) value * w * (1.0 + 1e-6);
}

/*
 * A k-means++ bid's weight (a squared distance times the row's weight)
 * relative to the frame, for gc_race_key: w 2^(inertia_exp - 125), about
 * w over the bounding box's squared diagonal times the rows' total weight.
 * The key is a float, so without this the bids of rows spread wider than
 * about 1e19 underflow to 0 (and of rows closer than about 1e-19 overflow
 * to infinity), every row ties and the lowest index wins: the seeding
 * stops sampling by distance.  A power of two, the scaling is exact, and
 * at ordinary scales the keys keep their order, so the seeds do not change.
 */
GC_HD double
gc_race_weight(double w, int inertia_exp)
{
	return ldexp(w, inertia_exp - 125);
}

/*
 * One term of an exact squared distance, (a - b)^2, and the sum s with it
 * added: each operation rounded on its own, never fused, on either device.
 * Every exact distance adds these terms in dimension order, however it
 * stages or tiles its reads (gc_sqdist_exact, and the GPU's staged,
 * tiled and by-column copies of it), so all of them equal the CPU's to
 * the bit.
 */
GC_HD double
gc_sqdiff(double a, double b)
{
#ifdef __CUDA_ARCH__
	double		t = __dsub_rn(a, b);

	return __dmul_rn(t, t);
#else
	double		t = a - b;

	return t * t;
#endif
}

GC_HD double
gc_sqdist_add(double s, double a, double b)
{
#ifdef __CUDA_ARCH__
	return __dadd_rn(s, gc_sqdiff(a, b));
#else
	return s + gc_sqdiff(a, b);
#endif
}

/* Squared Euclidean distance in double, with no fused multiply-add. */
GC_HD double
gc_sqdist_exact(const double *a, const double *b, int d)
{
	double		s = 0.0;

	for (int j = 0; j < d; j++)
		s = gc_sqdist_add(s, a[j], b[j]);
	return s;
}

/*
 * gc_sqdist_exact's sum, or a partial sum of it once that exceeds bound:
 * the terms are squares, never negative, and a rounded sum never falls
 * when one is added, so the whole sum would exceed bound too.  For scans
 * that only use a distance at most bound (the nearest centroid so far, a
 * row's D^2): they decide as with the whole sum, to the bit, and stop
 * early on the centroids that are far.  Checked every 16 terms.  On
 * 20,000 rows in 32 blobs of d = 768 (PostgreSQL 15, CPU, k = 32): the
 * CPU fit's greedy seeding took 971 ms instead of 2,087, its Lloyd
 * iterations 311 instead of 513, kmeans_predict over the rows 220-250
 * instead of 325-346; on uniform rows, where no centroid is far, the
 * checks cost up to 6%.
 */
#define GC_SQDIST_STRIDE 16

GC_HD double
gc_sqdist_within(const double *a, const double *b, int d, double bound)
{
	double		s = 0.0;
	int			j = 0;

	for (; j + GC_SQDIST_STRIDE <= d; j += GC_SQDIST_STRIDE)
	{
		for (int t = 0; t < GC_SQDIST_STRIDE; t++)
			s = gc_sqdist_add(s, a[j + t], b[j + t]);
		if (s > bound)
			return s;
	}
	for (; j < d; j++)
		s = gc_sqdist_add(s, a[j], b[j]);
	return s;
}

/* A coordinate as a fixed-point integer relative to the frame. */
GC_HD long long
gc_quantize(double x, double offset, double scale)
{
#ifdef __CUDA_ARCH__
	return __double2ll_rn(__dmul_rn(__dsub_rn(x, offset), scale));
#else
	return llrint((x - offset) * scale);
#endif
}

/*
 * The mean of count quantised coordinates summing to sum, uncentred.  The
 * mean of values within GC_MAX_MAGNITUDE is within it too; quantisation
 * can round one a little past it (the grid is coarser the more rows or
 * weight there are), so it is brought back to the limit, where every value
 * the extension stores and reads back must lie.
 */
GC_HD double
gc_dequantize_mean(long long sum, long long count, double offset, double scale)
{
#ifdef __CUDA_ARCH__
	double		m = __dadd_rn(__ddiv_rn((double) sum, __dmul_rn(scale, (double) count)), offset);
#else
	double		m = (double) sum / (scale * (double) count) + offset;
#endif

	return m > GC_MAX_MAGNITUDE ? GC_MAX_MAGNITUDE : m < -GC_MAX_MAGNITUDE ? -GC_MAX_MAGNITUDE : m;
}

/*
 * The cosine metric works on unit vectors: x / ||x||, computed the same way
 * on both devices (scaled by its largest magnitude first, so that tiny and
 * huge vectors neither underflow nor overflow; the squares summed in index
 * order without fused multiply-adds; IEEE square root and division), so
 * rows normalised on collection and centroids normalised after an update
 * agree to the bit.  Returns false, leaving x as it is, for a zero vector.
 */
GC_HD bool
gc_unit_normalize(double *x, int d)
{
	double		top = 0.0,
				s = 0.0,
				norm;

	/*
	 * The largest magnitude, as fmax would take it (a NaN never wins) but
	 * by a select, which vectorises: fmax is a libm call per element on
	 * the host, which made normalising a 768-dimensional row cost more
	 * than collecting it
	 */
	for (int j = 0; j < d; j++)
	{
		double		a = fabs(x[j]);

		top = a > top ? a : top;
	}
	if (top == 0.0)
		return false;
	for (int j = 0; j < d; j++)
	{
#ifdef __CUDA_ARCH__
		double		t = __ddiv_rn(x[j], top);

		s = __dadd_rn(s, __dmul_rn(t, t));
#else
		double		t = x[j] / top;

		s = s + t * t;
#endif
	}
#ifdef __CUDA_ARCH__
	norm = __dmul_rn(__dsqrt_rn(s), top);
	for (int j = 0; j < d; j++)
		x[j] = __ddiv_rn(x[j], norm);
#else
	norm = sqrt(s) * top;
	for (int j = 0; j < d; j++)
		x[j] = x[j] / norm;
#endif
	return true;
}

/*
 * A cosine model's centroids are unit vectors: a fit's, normalised by
 * gc_unit_normalize, are within a few units in the last place of norm 1
 * (relative error about d * 2^-53: 7e-12 at the largest d, 65,536);
 * anything else is refused, as a centroid off the sphere makes the nearest
 * centroid by Euclidean distance differ from the one of largest cosine
 * (kmeans_predict would answer wrongly), and a zero centroid has no cosine
 */
#define GC_UNIT_NORM_TOLERANCE 1e-9

/* Whether x's norm is within GC_UNIT_NORM_TOLERANCE of 1 */
static inline bool
gc_is_unit(const double *x, int d)
{
	double		s = 0.0;

	for (int j = 0; j < d; j++)
		s = s + x[j] * x[j];
	return fabs(sqrt(s) - 1.0) <= GC_UNIT_NORM_TOLERANCE;
}

/*
 * Inertia is summed exactly, so that it does not depend on the order of
 * the rows: each squared distance x >= 0 becomes the 128-bit integer
 * floor(x * 2^unit_exp), built from x's 53-bit mantissa by shifts alone.
 * The mantissa and exponent are read from x's bits (the value frexp and a
 * conversion would give, without either: greedy seeding quantises n L
 * values a step), a subnormal's without the implicit bit; +infinity
 * saturates.
 */
typedef unsigned __int128 gc_u128;

GC_HD gc_u128
gc_quantize_wide(double x, int unit_exp)
{
	uint64_t	bits;
	uint64_t	mantissa;
	int			biased;
	int			shift;

	if (!(x > 0.0))
		return 0;
	bits = gc_double_bits(x);
	biased = (int) (bits >> 52);	/* the sign bit is 0 */
	mantissa = bits & ((UINT64_C(1) << 52) - 1);
	if (biased == 0x7ff)
		return ~(gc_u128) 0;
	if (biased != 0)
		mantissa |= UINT64_C(1) << 52;
	else
		biased = 1;
	shift = biased - 1075 + unit_exp;	/* x = mantissa 2^(biased - 1075) */
	if (shift >= 0)
		return (gc_u128) mantissa << shift;
	if (shift <= -64)
		return 0;
	return mantissa >> (-shift);
}

/*
 * Batched greedy k-means++'s pick of group g (engine/seeding_batched.c):
 * of its candidates drawn, the index of the highest gain, the first on
 * ties
 */
GC_HD int
gc_batched_best(const gc_u128 *gains, int g, int candidates)
{
	int			best = g * candidates;

	for (int j = best + 1; j < (g + 1) * candidates; j++)
		if (gains[j] > gains[best])
			best = j;
	return best;
}

#endif							/* GC_MATH_H */
