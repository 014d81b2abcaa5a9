/* quantity_format.c - the canonical text of a quantity, as Quantity.String()
 * prints it, and the spelling-independent text of its value.
 *
 * Printing follows upstream's CanonicalizeBytes for each suffix family;
 * binary-SI values past 128 bits are printed through decimal digits. Apart
 * from parsing because the two share no code, only the representation. */
#include "quantity.h"

#include <stdint.h>

#include "quantity_impl.h"

#define BINARY_SUFFIX_MAX 6         /* Ei = 1024^6 */

struct suffix_name {
	const char *name;
	int8_t exp;
};

static const struct suffix_name decimal_suffixes[] = {
	{ "n", -9 }, { "u", -6 }, { "m", -3 }, { "", 0 }, { "k", 3 },
	{ "M", 6 }, { "G", 9 }, { "T", 12 }, { "P", 15 }, { "E", 18 },
};

static const char *const binary_suffixes[BINARY_SUFFIX_MAX + 1] = {
	"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
};

/* Output bounded by QUANTITY_STR_MAX; the bounds in quantity.h keep every
 * string shorter, the check only keeps a broken invariant from writing past
 * the buffer. */
struct sbuf {
	char *p;
	size_t n;
};

static void put_char(struct sbuf *b, char c)
{
	if (b->n < QUANTITY_STR_MAX - 1)
		b->p[b->n++] = c;
}

static void put_str(struct sbuf *b, const char *s)
{
	while (*s)
		put_char(b, *s++);
}

static void put_u64(struct sbuf *b, uint64_t v, int width)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v || n < width);
	while (n)
		put_char(b, tmp[--n]);
}

static void put_u128(struct sbuf *b, u128 v)
{
	const uint64_t chunk = 10000000000000000000ULL;      /* 10^19 */
	uint64_t parts[3];
	int n = 0;

	while (v > UINT64_MAX) {
		parts[n++] = (uint64_t)(v % chunk);
		v /= chunk;
	}
	put_u64(b, (uint64_t)v, 0);
	while (n)
		put_u64(b, parts[--n], 19);
}

static void put_i64(struct sbuf *b, int64_t v)
{
	if (v < 0) {
		put_char(b, '-');
		put_u64(b, (uint64_t)0 - (uint64_t)v, 0);
	} else {
		put_u64(b, (uint64_t)v, 0);
	}
}

/* AsCanonicalBytes: the mantissa without trailing zeros, its exponent
 * lowered to a multiple of three, then a decimal-SI suffix, or "e<exp>" for
 * exponent notation and for exponents past the SI table (newest upstream;
 * older servers printed no suffix there and lost the magnitude). */
static void put_decimal(struct sbuf *b, const struct qv *v, bool exponent_form)
{
	int64_t r = v->scale % 3, e3;
	size_t i;

	if (r < 0)
		r += 3;
	e3 = v->scale - r;
	if (v->neg)
		put_char(b, '-');
	put_u128(b, v->mag);
	while (r--)
		put_char(b, '0');
	if (!exponent_form) {
		for (i = 0; i < sizeof(decimal_suffixes) / sizeof(decimal_suffixes[0]); i++) {
			if (decimal_suffixes[i].exp == e3) {
				put_str(b, decimal_suffixes[i].name);
				return;
			}
		}
	}
	if (e3 != 0) {
		put_char(b, 'e');
		put_i64(b, e3);
	}
}

/* Little-endian decimal digits for binary-SI mantissas past 128 bits. */
struct bigdec {
	uint8_t d[QUANTITY_STR_MAX];
	size_t n;
};

static void bigdec_mul(struct bigdec *x, unsigned m)
{
	unsigned carry = 0, t;
	size_t i;

	for (i = 0; i < x->n; i++) {
		t = x->d[i] * m + carry;
		x->d[i] = (uint8_t)(t % 10);
		carry = t / 10;
	}
	while (carry && x->n < sizeof(x->d)) {
		x->d[x->n++] = (uint8_t)(carry % 10);
		carry /= 10;
	}
}

/* CanonicalizeBytes for BinarySI: values within (-1024, 1024) and values
 * that are not whole print as decimal SI; the rest as n * 1024^k with the
 * largest k, and past Ei (k > 6) in exponent notation. */
static void put_binary(struct sbuf *b, const struct qv *v)
{
	struct bigdec x;
	unsigned a, e2, k;
	int64_t s;
	u128 odd;

	if (v->scale < 0 || (v->scale <= 3 && v->mag < 1024 && v->mag * quantity_pow10[v->scale] < 1024)) {
		put_decimal(b, v, false);
		return;
	}
	/* value = mag * 2^scale * 5^scale; it has a + scale factors of two. */
	a = quantity_ctz128(v->mag);
	s = v->scale;
	if (a + s >= 10 * (BINARY_SUFFIX_MAX + 1)) {
		put_decimal(b, v, true);
		return;
	}
	e2 = a + (unsigned)s;
	k = e2 / 10;
	if (v->neg)
		put_char(b, '-');
	if (s == 0) {
		put_u128(b, v->mag >> (10 * k));
	} else {
		/* value / 1024^k = odd * 5^s * 2^(e2 - 10k), with s < 70. */
		odd = v->mag >> a;
		x.n = 0;
		do {
			x.d[x.n++] = (uint8_t)(odd % 10);
			odd /= 10;
		} while (odd);
		while (s--)
			bigdec_mul(&x, 5);
		bigdec_mul(&x, 1u << (e2 - 10 * k));
		while (x.n)
			put_char(b, (char)('0' + x.d[--x.n]));
	}
	put_str(b, binary_suffixes[k]);
}

void quantity_format(const struct quantity *q, char buf[static QUANTITY_STR_MAX])
{
	struct sbuf b = { buf, 0 };
	struct qv v = quantity_qv_get(q);

	quantity_strip_zeros(&v);
	if (v.mag == 0)
		put_char(&b, '0');
	else if (q->format == QUANTITY_BINARY_SI)
		put_binary(&b, &v);
	else
		put_decimal(&b, &v, q->format == QUANTITY_DECIMAL_EXPONENT);
	buf[b.n] = '\0';
}

void quantity_normal(const struct quantity *q, char buf[static QUANTITY_STR_MAX])
{
	struct sbuf b = { buf, 0 };
	struct qv v = quantity_qv_get(q);

	quantity_strip_zeros(&v);
	if (v.mag == 0) {
		put_char(&b, '0');
	} else {
		if (v.neg)
			put_char(&b, '-');
		put_u128(&b, v.mag);
		put_char(&b, 'e');
		put_i64(&b, v.scale);
	}
	buf[b.n] = '\0';
}
