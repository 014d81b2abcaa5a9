/* quantity.c - Kubernetes resource.Quantity, exact, in 128 bits: the
 * representation and the arithmetic (compare, multiples, multiply, add).
 *
 * Values are normalized (no trailing zeros in the mantissa, zero has scale 0),
 * so equal values have equal fields. Parsing is quantity_parse.c, printing
 * quantity_format.c; what the three share is in quantity_impl.h. */
#include "quantity.h"

#include <errno.h>
#include <stdint.h>

#include "quantity_impl.h"

#define U128_MAX (~(u128)0)

const u128 quantity_pow10[QUANTITY_DIGITS_MAX + 1] = {
	1ULL,
	10ULL,
	100ULL,
	1000ULL,
	10000ULL,
	100000ULL,
	1000000ULL,
	10000000ULL,
	100000000ULL,
	1000000000ULL,
	10000000000ULL,
	100000000000ULL,
	1000000000000ULL,
	10000000000000ULL,
	100000000000000ULL,
	1000000000000000ULL,
	10000000000000000ULL,
	100000000000000000ULL,
	1000000000000000000ULL,
	10000000000000000000ULL,
	(u128)10000000000000000000ULL * 10ULL,
	(u128)10000000000000000000ULL * 100ULL,
	(u128)10000000000000000000ULL * 1000ULL,
	(u128)10000000000000000000ULL * 10000ULL,
	(u128)10000000000000000000ULL * 100000ULL,
	(u128)10000000000000000000ULL * 1000000ULL,
	(u128)10000000000000000000ULL * 10000000ULL,
	(u128)10000000000000000000ULL * 100000000ULL,
	(u128)10000000000000000000ULL * 1000000000ULL,
	(u128)10000000000000000000ULL * 10000000000ULL,
	(u128)10000000000000000000ULL * 100000000000ULL,
	(u128)10000000000000000000ULL * 1000000000000ULL,
	(u128)10000000000000000000ULL * 10000000000000ULL,
	(u128)10000000000000000000ULL * 100000000000000ULL,
	(u128)10000000000000000000ULL * 1000000000000000ULL,
	(u128)10000000000000000000ULL * 10000000000000000ULL,
	(u128)10000000000000000000ULL * 100000000000000000ULL,
	(u128)10000000000000000000ULL * 1000000000000000000ULL,
	(u128)10000000000000000000ULL * 10000000000000000000ULL,
};

/* ---- 128-bit helpers ------------------------------------------------- */

void quantity_strip_zeros(struct qv *v)
{
	uint64_t m;

	if (v->mag == 0) {
		v->scale = 0;
		v->neg = false;
		return;
	}
	while (v->mag > UINT64_MAX) {
		if (v->mag % 10 != 0)
			return;
		v->mag /= 10;
		v->scale++;
	}
	m = (uint64_t)v->mag;
	while (m % 10 == 0) {
		m /= 10;
		v->scale++;
	}
	v->mag = m;
}

/* Decimal digits of v (1 for 0); 39 for anything at or past 10^38. A
 * value in 64 bits, nearly every one, from its bit length: it has
 * floor(bits * log10(2)) + 1 digits or one more (1233 / 4096 is log10(2)
 * rounded up, exact enough below 2^64), which one comparison tells,
 * instead of a walk up the powers of ten. */
static int64_t ndigits(u128 v)
{
	int64_t n = 1;

	if (v <= UINT64_MAX) {
		uint64_t w = (uint64_t)v;
		unsigned bits;

		if (w == 0)
			return 1;
		bits = 64 - (unsigned)__builtin_clzll(w);
		n = (int64_t)((bits * 1233u) >> 12);
		return n + (w >= (uint64_t)quantity_pow10[n]);
	}
	while (n <= QUANTITY_DIGITS_MAX && v >= quantity_pow10[n])
		n++;
	return n;
}

/* v *= 10^k; false when the product passes 128 bits. */
static bool mul_pow10(u128 *v, int64_t k)
{
	if (*v == 0 || k == 0)
		return true;
	if (k > QUANTITY_DIGITS_MAX || *v > U128_MAX / quantity_pow10[k])
		return false;
	*v *= quantity_pow10[k];
	return true;
}

void quantity_from_int(int64_t n, struct quantity *out)
{
	struct qv v;

	v.neg = n < 0;
	v.mag = v.neg ? (u128)(-(n + 1)) + 1 : (u128)n;
	v.scale = 0;
	/* An int64 always fits; the branch tells the compiler out is set. */
	if (quantity_qv_put(v, QUANTITY_DECIMAL_SI, out) != 0) {
		out->mant = 0;
		out->scale = 0;
		out->format = QUANTITY_DECIMAL_SI;
	}
}

/* ---- arithmetic -------------------------------------------------------- */

static int qv_sign(const struct qv *v)
{
	if (v->mag == 0)
		return 0;
	return v->neg ? -1 : 1;
}

int quantity_cmp(const struct quantity *a, const struct quantity *b)
{
	struct qv x = quantity_qv_get(a), y = quantity_qv_get(b);
	int sx = qv_sign(&x), sy = qv_sign(&y), c;
	int64_t ox, oy;

	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (sx == 0)
		return 0;
	/* Orders of magnitude first; equal orders leave at most 38 digits of
	 * scale difference to align. */
	ox = ndigits(x.mag) + x.scale;
	oy = ndigits(y.mag) + y.scale;
	if (ox != oy)
		return ox > oy ? sx : -sx;
	if (x.scale > y.scale)
		x.mag *= quantity_pow10[x.scale - y.scale];
	else
		y.mag *= quantity_pow10[y.scale - x.scale];
	c = x.mag > y.mag ? 1 : (x.mag < y.mag ? -1 : 0);
	return c * sx;
}

int quantity_sign(const struct quantity *q)
{
	if (q->mant == 0)
		return 0;
	return q->mant < 0 ? -1 : 1;
}

bool quantity_is_integer(const struct quantity *q)
{
	struct qv v = quantity_qv_get(q);

	quantity_strip_zeros(&v);
	return v.mag == 0 || v.scale >= 0;
}

/* a % b == 0 (b not 0), in 64 bits when both fit, as nearly all do. */
static bool mod_is_zero(u128 a, u128 b)
{
	if (a <= UINT64_MAX && b <= UINT64_MAX)
		return (uint64_t)a % (uint64_t)b == 0;
	return a % b == 0;
}

bool quantity_is_multiple_of(const struct quantity *a, const struct quantity *b)
{
	struct qv x = quantity_qv_get(a), y = quantity_qv_get(b);
	int64_t d, c;
	u128 t;

	quantity_strip_zeros(&x);
	quantity_strip_zeros(&y);
	if (y.mag == 0 || y.neg)
		return false;
	if (x.mag == 0)
		return true;
	d = x.scale - y.scale;
	if (d < 0) {
		/* b's mantissa times 10^-d must divide a's. */
		t = y.mag;
		if (!mul_pow10(&t, -d))
			return false;
		return mod_is_zero(x.mag, t);
	}
	/* b must divide a.mant * 10^d: the 10^d can absorb up to d factors of
	 * two and of five from b; what is left must divide a's mantissa. */
	t = y.mag;
	for (c = 0; c < d && (t & 1) == 0; c++)
		t >>= 1;
	for (c = 0; c < d && t % 5 == 0; c++)
		t /= 5;
	return mod_is_zero(x.mag, t);
}

static unsigned count_fives(u128 v)
{
	unsigned n = 0;

	while (v % 5 == 0) {
		v /= 5;
		n++;
	}
	return n;
}

int quantity_mul(const struct quantity *a, const struct quantity *b, struct quantity *out)
{
	struct qv x = quantity_qv_get(a), y = quantity_qv_get(b), r;
	unsigned x2, y2, x5, y5, z, i;

	quantity_strip_zeros(&x);
	quantity_strip_zeros(&y);
	if (x.mag == 0 || y.mag == 0) {
		r.neg = false;
		r.mag = 0;
		r.scale = 0;
		return quantity_qv_put(r, a->format, out);
	}
	/* Two mantissas of 64 bits (nearly all) multiply without overflow in
	 * 128; storing strips the zeros the pairs below would cancel, so the
	 * normal form, and the bound it is held to, are the same. */
	if (x.mag <= UINT64_MAX && y.mag <= UINT64_MAX) {
		r.neg = x.neg != y.neg;
		r.mag = (u128)(uint64_t)x.mag * (uint64_t)y.mag;
		r.scale = x.scale + y.scale;
		return quantity_qv_put(r, a->format, out);
	}
	/* Cancel the pairs of 2 and 5 that would end the product in zeros, so
	 * the 128-bit product is already normalized and its bound decides. */
	x2 = quantity_ctz128(x.mag);
	y2 = quantity_ctz128(y.mag);
	x5 = count_fives(x.mag);
	y5 = count_fives(y.mag);
	z = x2 + y2 < x5 + y5 ? x2 + y2 : x5 + y5;
	for (i = 0; i < z; i++) {
		if (x2) {
			x.mag >>= 1;
			x2--;
		} else {
			y.mag >>= 1;
		}
		if (x5) {
			x.mag /= 5;
			x5--;
		} else {
			y.mag /= 5;
		}
	}
	if (x.mag > U128_MAX / y.mag)
		return -ERANGE;
	r.neg = x.neg != y.neg;
	r.mag = x.mag * y.mag;
	r.scale = x.scale + y.scale + (int64_t)z;
	return quantity_qv_put(r, a->format, out);
}

int quantity_mul_int(const struct quantity *a, int64_t n, struct quantity *out)
{
	struct quantity b;

	quantity_from_int(n, &b);
	return quantity_mul(a, &b, out);
}

int quantity_add(const struct quantity *a, const struct quantity *b, struct quantity *out)
{
	struct qv x = quantity_qv_get(a), y = quantity_qv_get(b), r;
	struct qv *hi, *lo;
	int64_t d;

	quantity_strip_zeros(&x);
	quantity_strip_zeros(&y);
	if (x.mag == 0)
		return quantity_qv_put(y, b->format, out);
	if (y.mag == 0)
		return quantity_qv_put(x, a->format, out);
	hi = x.scale >= y.scale ? &x : &y;
	lo = hi == &x ? &y : &x;
	/* lo's last digit is not zero, so once hi needs more than 38 digits
	 * of alignment (or 128 bits) the sum has more than 38 digits. */
	d = hi->scale - lo->scale;
	if (!mul_pow10(&hi->mag, d))
		return -ERANGE;
	if (hi->neg == lo->neg) {
		if (hi->mag > U128_MAX - lo->mag)
			return -ERANGE;
		r.mag = hi->mag + lo->mag;
		r.neg = hi->neg;
	} else if (hi->mag >= lo->mag) {
		r.mag = hi->mag - lo->mag;
		r.neg = hi->neg;
	} else {
		r.mag = lo->mag - hi->mag;
		r.neg = lo->neg;
	}
	r.scale = lo->scale;
	return quantity_qv_put(r, a->format, out);
}

int quantity_div_floor(const struct quantity *a, const struct quantity *b, int64_t *n)
{
	struct qv x = quantity_qv_get(a), y = quantity_qv_get(b);
	u128 num, den, q, r;
	int64_t d;

	quantity_strip_zeros(&x);
	quantity_strip_zeros(&y);
	if (x.neg || y.neg || y.mag == 0)
		return -EINVAL;
	if (x.mag == 0) {
		*n = 0;
		return 0;
	}
	/* a / b = (x.mag / y.mag) * 10^d. */
	d = x.scale - y.scale;
	num = x.mag;
	den = y.mag;
	if (d < 0) {
		/* A divisor that passes 128 bits is larger than any mantissa. */
		if (!mul_pow10(&den, -d)) {
			*n = 0;
			return 0;
		}
		d = 0;
	}
	q = num / den;
	r = num % den;
	/* Long division, one decimal digit of 10^d at a time: once the
	 * quotient has 19 digits it is past INT64_MAX, so at most about 57
	 * rounds run whatever d is (a remainder below den < 10^38 reaches den
	 * again within 38 rounds). */
	for (; d > 0; d--) {
		if (q > (u128)INT64_MAX)
			return -ERANGE;
		if (r > U128_MAX / 10)
			return -ERANGE;     /* a 38-digit divisor; no real step is one */
		r *= 10;
		q = q * 10 + r / den;
		r %= den;
	}
	if (q > (u128)INT64_MAX)
		return -ERANGE;
	*n = (int64_t)q;
	return 0;
}

int quantity_scaled_ceil(const struct quantity *q, int scale, int64_t *out)
{
	struct qv v = quantity_qv_get(q);
	int64_t s;
	u128 limit;
	bool up = false;

	quantity_strip_zeros(&v);
	if (v.mag == 0) {
		*out = 0;
		return 0;
	}
	/* value / 10^scale = mag * 10^(v.scale - scale) */
	s = v.scale - scale;
	if (s < 0) {
		if (-s > QUANTITY_DIGITS_MAX) {
			/* Below one unit in magnitude: 1 up (or 0 for a negative). */
			*out = v.neg ? 0 : 1;
			return 0;
		}
		up = v.mag % quantity_pow10[-s] != 0;
		v.mag /= quantity_pow10[-s];
		s = 0;
	}
	if (s > 18)
		return -ERANGE;
	limit = v.neg ? (u128)INT64_MAX + 1 : (u128)INT64_MAX;
	if (v.mag > limit / quantity_pow10[s])
		return -ERANGE;
	v.mag *= quantity_pow10[s];
	/* Rounded up, as Quantity.ScaledValue: away from zero only for a
	 * positive value; toward zero for a negative one. */
	if (up && !v.neg)
		v.mag++;
	if (v.mag > limit)
		return -ERANGE;
	*out = v.neg ? -(int64_t)(v.mag - 1) - 1 : (int64_t)v.mag;
	return 0;
}

void quantity_from_scaled(int64_t n, int scale, enum quantity_format format, struct quantity *out)
{
	struct qv v;

	v.neg = n < 0;
	v.mag = v.neg ? (u128)(-(n + 1)) + 1 : (u128)n;
	v.scale = scale;
	if (quantity_qv_put(v, format, out) != 0)
		quantity_from_int(n, out);
}
