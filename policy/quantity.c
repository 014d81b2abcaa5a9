/* quantity.c - Kubernetes resource.Quantity, exact, in 128 bits.
 *
 * Upstream (k8s.io/apimachinery pkg/api/resource, quantity.go and suffix.go)
 * parses in two steps: a scanner splits the text into sign, integer digits,
 * fraction digits and a suffix, then the suffix decides base and exponent.
 * It takes an int64 fast path when the digits are few and the scale is at
 * least nano, and otherwise an inf.Dec path that rounds to nano (away from
 * zero) and caps binary SI at 2^63-1. Both paths give the same value, so we
 * compute that value directly, digit by digit, keeping what lands at or above
 * 1n and a sticky bit for the rest. Two fast-path quirks leak into results and
 * are reproduced: text with no digit at all ("+", ".", "Ki") is zero when the
 * fast path takes it and an error when the inf.Dec path has to, and text that
 * already looks canonical is kept verbatim (quantity_spelling_kept()).
 *
 * Values are normalized (no trailing zeros in the mantissa, zero has scale 0),
 * so equal values have equal fields. */
#include "quantity.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)
#define NANO_EXP (-9)
#define BINARY_SUFFIX_MAX 6         /* Ei = 1024^6 */
/* Inputs longer than this would overflow the int64 position arithmetic;
 * nothing that long fits in memory anyway. */
#define TEXT_LEN_MAX ((size_t)1 << 40)

static const u128 pow10_tab[QUANTITY_DIGITS_MAX + 1] = {
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

#define MANT_LIMIT pow10_tab[QUANTITY_DIGITS_MAX]
#define NANO_PER_UNIT 1000000000ULL

/* A value in sign-magnitude form while it is computed. */
struct qv {
	bool neg;
	u128 mag;
	int64_t scale;
};

/* ---- 128-bit helpers ------------------------------------------------- */

/* Decimal digits of v (1 for 0); 39 for anything at or past 10^38. */
static int64_t ndigits(u128 v)
{
	int64_t n = 1;

	while (n <= QUANTITY_DIGITS_MAX && v >= pow10_tab[n])
		n++;
	return n;
}

/* v *= 10^k; false when the product passes 128 bits. */
static bool mul_pow10(u128 *v, int64_t k)
{
	if (*v == 0 || k == 0)
		return true;
	if (k > QUANTITY_DIGITS_MAX || *v > U128_MAX / pow10_tab[k])
		return false;
	*v *= pow10_tab[k];
	return true;
}

/* Move factors of ten from the mantissa into the scale. */
static void strip_zeros(struct qv *v)
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

static unsigned ctz128(u128 v)
{
	uint64_t lo = (uint64_t)v;

	if (lo)
		return (unsigned)__builtin_ctzll(lo);
	return 64 + (unsigned)__builtin_ctzll((uint64_t)(v >> 64));
}

static struct qv qv_get(const struct quantity *q)
{
	struct qv v;

	v.neg = q->mant < 0;
	v.mag = v.neg ? -(u128)q->mant : (u128)q->mant;
	v.scale = q->scale;
	return v;
}

/* Normalize v and store it, or -ERANGE when it is out of bounds. */
static int qv_put(struct qv v, enum quantity_format format, struct quantity *out)
{
	strip_zeros(&v);
	if (v.mag >= MANT_LIMIT || v.scale > QUANTITY_SCALE_MAX || v.scale < -QUANTITY_SCALE_MAX)
		return -ERANGE;
	out->mant = v.neg ? -(__int128)v.mag : (__int128)v.mag;
	out->scale = (int32_t)v.scale;
	out->format = format;
	return 0;
}

/* ---- white space (Go's strings.TrimSpace) ------------------------------ */

static bool is_ascii_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* The three-byte UTF-8 forms of U+1680, U+2000..U+200A, U+2028, U+2029,
 * U+202F, U+205F and U+3000, the White_Space code points past Latin-1. */
static bool is_space3(const unsigned char *p)
{
	if (p[0] == 0xe1)
		return p[1] == 0x9a && p[2] == 0x80;
	if (p[0] == 0xe3)
		return p[1] == 0x80 && p[2] == 0x80;
	if (p[0] != 0xe2)
		return false;
	if (p[1] == 0x80)
		return (p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf;
	return p[1] == 0x81 && p[2] == 0x9f;
}

static bool is_space2(const unsigned char *p)
{
	return p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0);    /* NEL, NBSP */
}

static void trim_space(const char **s, size_t *len)
{
	const unsigned char *p = (const unsigned char *)*s;
	size_t n = *len;

	/* The usual case: printable ASCII at both ends. */
	if (n && p[0] > ' ' && p[0] < 0x80 && p[n - 1] > ' ' && p[n - 1] < 0x80)
		return;
	for (;;) {
		if (n >= 1 && is_ascii_space(p[0])) {
			p += 1, n -= 1;
		} else if (n >= 2 && is_space2(p)) {
			p += 2, n -= 2;
		} else if (n >= 3 && is_space3(p)) {
			p += 3, n -= 3;
		} else {
			break;
		}
	}
	for (;;) {
		if (n >= 1 && is_ascii_space(p[n - 1]))
			n -= 1;
		else if (n >= 2 && is_space2(p + n - 2))
			n -= 2;
		else if (n >= 3 && is_space3(p + n - 3))
			n -= 3;
		else
			break;
	}
	*s = (const char *)p;
	*len = n;
}

/* ---- scanning (parseQuantityString) ------------------------------------ */

struct scan {
	bool neg;
	bool zeros_only;            /* a sign and zeros, or a lone sign: zero */
	bool has_digit;             /* any digit, leading zeros included */
	const char *num;            /* integer digits after the leading zeros */
	size_t num_len;
	const char *den;            /* fraction digits */
	size_t den_len;
	const char *suf;
	size_t suf_len;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The letters upstream's scanner lets into a suffix; which combinations mean
 * anything is decided afterwards. */
static bool is_suffix_letter(char c)
{
	switch (c) {
	case 'e': case 'E': case 'i': case 'n': case 'u': case 'm':
	case 'k': case 'K': case 'M': case 'G': case 'T': case 'P':
		return true;
	default:
		return false;
	}
}

static int scan(const char *s, size_t n, struct scan *sc)
{
	size_t i = 0, start;

	sc->neg = false;
	sc->zeros_only = false;
	sc->num = sc->den = sc->suf = NULL;
	sc->num_len = sc->den_len = sc->suf_len = 0;
	if (i < n && (s[i] == '-' || s[i] == '+')) {
		sc->neg = s[i] == '-';
		i++;
	}
	start = i;
	while (i < n && s[i] == '0')
		i++;
	sc->has_digit = i > start;
	if (i == n) {
		/* Upstream returns here with the number "0", sign or not. */
		sc->zeros_only = true;
		return 0;
	}
	sc->num = s + i;
	while (i < n && is_digit(s[i]))
		i++;
	sc->num_len = (size_t)(s + i - sc->num);
	if (i < n && s[i] == '.') {
		sc->den = s + ++i;
		while (i < n && is_digit(s[i]))
			i++;
		sc->den_len = (size_t)(s + i - sc->den);
	}
	if (sc->num_len || sc->den_len)
		sc->has_digit = true;
	sc->suf = s + i;
	while (i < n && is_suffix_letter(s[i]))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	while (i < n && is_digit(s[i]))
		i++;
	if (i != n)
		return -EINVAL;
	sc->suf_len = (size_t)(s + n - sc->suf);
	return 0;
}

/* ---- suffixes (suffix.go) ---------------------------------------------- */

struct suffix {
	int base;                   /* 10 or 2 */
	int64_t exp;
	enum quantity_format format;
};

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

/* strconv.ParseInt(s, 10, 64), then the int32 range the newest upstream
 * enforces (older releases silently truncated to int32, so "1e4294967297"
 * read as 10; an exponent that different servers read differently is no
 * quantity). */
static int parse_exponent(const char *s, size_t n, int64_t *out)
{
	bool neg = false;
	int64_t v = 0;
	size_t i = 0;

	if (i < n && (s[i] == '+' || s[i] == '-')) {
		neg = s[i] == '-';
		i++;
	}
	if (i == n)
		return -EINVAL;
	for (; i < n; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
		if (v > INT32_MAX)
			return -EINVAL;
	}
	*out = neg ? -v : v;
	return 0;
}

static int decimal_suffix_exp(char c, int64_t *exp)
{
	switch (c) {
	case 'n': *exp = -9; return 0;
	case 'u': *exp = -6; return 0;
	case 'm': *exp = -3; return 0;
	case 'k': *exp = 3; return 0;
	case 'M': *exp = 6; return 0;
	case 'G': *exp = 9; return 0;
	case 'T': *exp = 12; return 0;
	case 'P': *exp = 15; return 0;
	case 'E': *exp = 18; return 0;
	default: return -EINVAL;
	}
}

static int binary_suffix_exp(char c, int64_t *exp)
{
	switch (c) {
	case 'K': *exp = 10; return 0;
	case 'M': *exp = 20; return 0;
	case 'G': *exp = 30; return 0;
	case 'T': *exp = 40; return 0;
	case 'P': *exp = 50; return 0;
	case 'E': *exp = 60; return 0;
	default: return -EINVAL;
	}
}

/* Table lookups first (decimal, then binary), then "e"/"E" with an exponent,
 * as suffixHandler.interpret; so "1E" is exa and "1E3" is 1000. */
static int interpret(const char *s, size_t n, struct suffix *out)
{
	out->base = 10;
	out->exp = 0;
	out->format = QUANTITY_DECIMAL_SI;
	if (n == 0)
		return 0;
	if (n == 1 && decimal_suffix_exp(s[0], &out->exp) == 0)
		return 0;
	if (n == 2 && s[1] == 'i' && binary_suffix_exp(s[0], &out->exp) == 0) {
		out->base = 2;
		out->format = QUANTITY_BINARY_SI;
		return 0;
	}
	if (n > 1 && (s[0] == 'e' || s[0] == 'E')) {
		out->format = QUANTITY_DECIMAL_EXPONENT;
		return parse_exponent(s + 1, n - 1, &out->exp);
	}
	return -EINVAL;
}

/* Whether upstream's int64 fast path takes a text with no digit at all; the
 * inf.Dec path fails on it ("no digits"). Decimal: the scale is at least
 * nano. Binary: its precision estimate 14 - 1 - 3 * (exp / 10) is not
 * negative, i.e. Ki to Ti. */
static bool digitless_is_zero(const struct suffix *sf)
{
	if (sf->base == 2)
		return sf->exp <= 40;
	return sf->exp >= NANO_EXP;
}

/* ---- values ------------------------------------------------------------ */

static int digit_at(const struct scan *sc, size_t i)
{
	if (i < sc->num_len)
		return sc->num[i] - '0';
	return sc->den[i - sc->num_len] - '0';
}

/* (num.den) * 10^exp, rounded up to nano. Digit i has the power
 * e0 + (n - 1 - i); those at or above nano go into the mantissa, the others
 * only decide whether to add one nano unit. */
static int decimal_value(const struct scan *sc, int64_t exp, struct qv *v)
{
	size_t n = sc->num_len + sc->den_len, kept, i;
	int64_t e0 = exp - (int64_t)sc->den_len, k, p;
	int64_t first = 0, last = 0;
	uint64_t sig = 0, pending = 0;
	bool started = false, overflow = false, nines = true, sticky = false;
	u128 mag = 0;
	int d;

	k = (int64_t)n + 9 + e0;
	kept = k <= 0 ? 0 : (k >= (int64_t)n ? n : (size_t)k);
	for (i = 0; i < kept; i++) {
		d = digit_at(sc, i);
		p = e0 + (int64_t)(n - 1 - i);
		if (d == 0) {
			if (started) {
				pending++;
				nines = false;
			}
			continue;
		}
		if (!started) {
			started = true;
			first = p;
			mag = (u128)d;
			sig = 1;
			nines = d == 9;
		} else {
			nines = nines && d == 9;
			if (overflow || sig + pending + 1 > QUANTITY_DIGITS_MAX) {
				overflow = true;
			} else {
				mag = mag * pow10_tab[pending + 1] + (u128)d;
				sig += pending + 1;
			}
		}
		pending = 0;
		last = p;
	}
	for (i = kept; i < n && !sticky; i++)
		sticky = digit_at(sc, i) != 0;

	/* Upstream keeps the scale in an int32: past this it wraps into a huge
	 * positive exponent, which no exact value here can match. */
	if ((started || sticky) && e0 < -(int64_t)INT32_MAX)
		return -ERANGE;

	if (sticky) {
		if (!started) {
			mag = 1;
			last = NANO_EXP;
		} else if (nines && pending == 0) {
			/* 9...9 up to 1n, plus 1n, carries into one digit. */
			mag = 1;
			last = first + 1;
		} else if (overflow || sig + pending > QUANTITY_DIGITS_MAX) {
			return -ERANGE;
		} else {
			mag = mag * pow10_tab[pending] + 1;
			last = NANO_EXP;
		}
	} else if (overflow) {
		return -ERANGE;
	}
	v->mag = mag;
	v->scale = started || sticky ? last : 0;
	return 0;
}

/* (num.den) * 2^exp, rounded up to nano and capped at 2^63-1. The value is at
 * most 2^63-1 with nano resolution, so everything fits in 128 bits: the
 * integer part times 2^exp, the first nine fraction digits times 2^exp, and
 * the rest of the fraction times 2^exp worked right to left with a carry. */
static int binary_value(const struct scan *sc, int64_t exp, struct qv *v,
			enum quantity_format *format)
{
	unsigned e = (unsigned)exp;
	uint64_t whole_num = 0, f9 = 0, carry = 0;
	u128 whole, frac, total;
	bool frac_nonzero = false, rest = false;
	size_t i;

	if (sc->num_len > 19)                   /* >= 10^19 > 2^63 */
		goto cap;
	for (i = 0; i < sc->num_len; i++)
		whole_num = whole_num * 10 + (uint64_t)(sc->num[i] - '0');
	whole = (u128)whole_num << e;
	if (whole > INT64_MAX)
		goto cap;
	for (i = 0; i < sc->den_len && !frac_nonzero; i++)
		frac_nonzero = sc->den[i] != '0';
	if (!frac_nonzero) {
		v->mag = whole;
		v->scale = 0;
		return 0;
	}
	for (i = 0; i < 9; i++)
		f9 = f9 * 10 + (uint64_t)(i < sc->den_len ? sc->den[i] - '0' : 0);
	/* Each step: t <= 9 * 2^60 + carry with carry < 2^60, below 2^64. */
	for (i = sc->den_len; i-- > 9;) {
		uint64_t t = ((uint64_t)(sc->den[i] - '0') << e) + carry;

		carry = t / 10;
		rest = rest || t % 10 != 0;
	}
	frac = ((u128)f9 << e) + carry + (rest ? 1 : 0);
	total = whole * NANO_PER_UNIT + frac;
	if (total > (u128)INT64_MAX * NANO_PER_UNIT)
		goto cap;
	v->mag = total;
	v->scale = NANO_EXP;
	/* Between zero and one there is no binary suffix to print: upstream
	 * switches such values to decimal SI at parse time. */
	if (total < NANO_PER_UNIT)
		*format = QUANTITY_DECIMAL_SI;
	return 0;
cap:
	v->mag = INT64_MAX;
	v->scale = 0;
	return 0;
}

static int parse_text(const char *s, size_t n, struct quantity *out)
{
	enum quantity_format format;
	struct scan sc;
	struct suffix sf;
	struct qv v = { false, 0, 0 };
	int rc;

	if (n == 0 || n > TEXT_LEN_MAX || scan(s, n, &sc) != 0)
		return -EINVAL;
	if (sc.zeros_only)
		return qv_put(v, QUANTITY_DECIMAL_SI, out);
	if (interpret(sc.suf, sc.suf_len, &sf) != 0)
		return -EINVAL;
	if (!sc.has_digit && !digitless_is_zero(&sf))
		return -EINVAL;
	format = sf.format;
	if (sf.base == 2)
		rc = binary_value(&sc, sf.exp, &v, &format);
	else
		rc = decimal_value(&sc, sf.exp, &v);
	if (rc)
		return rc;
	v.neg = sc.neg;
	return qv_put(v, format, out);
}

int quantity_parse(const char *s, size_t len, struct quantity *out)
{
	trim_space(&s, &len);
	return parse_text(s, len, out);
}

int quantity_parse_strict(const char *s, size_t len, struct quantity *out)
{
	return parse_text(s, len, out);
}

/* ParseQuantity stores its input as the cached string when the int64 fast
 * path took it and the digits already look canonical: binary SI whose number
 * is not a multiple of 8, or decimal with a scale that is a multiple of 3, a
 * non-zero integer part and no "000" at the end of the digits. */
bool quantity_spelling_kept(const char *s, size_t len)
{
	struct quantity q;
	struct scan sc;
	struct suffix sf;
	size_t num_eff, i;
	int64_t scale;
	uint64_t value = 0;
	int zeros = 0;

	trim_space(&s, &len);
	if (parse_text(s, len, &q) != 0)
		return false;
	if (len == 1 && s[0] == '0')
		return true;
	if (scan(s, len, &sc) != 0 || sc.zeros_only || interpret(sc.suf, sc.suf_len, &sf) != 0)
		return false;
	num_eff = sc.num_len ? sc.num_len : 1;
	if (sf.base == 2) {
		if (sc.den_len || 14 - (int64_t)num_eff - 3 * (sf.exp / 10) < 0)
			return false;
		for (i = 0; i < sc.num_len; i++)
			value = value * 10 + (uint64_t)(sc.num[i] - '0');
		return (value & 7) != 0;
	}
	if (num_eff + sc.den_len > 18)
		return false;
	scale = sf.exp - (int64_t)sc.den_len;
	if (scale < NANO_EXP || scale % 3 != 0 || sc.num_len == 0)
		return false;
	for (i = sc.num_len + sc.den_len; i-- > 0 && zeros < 3 && digit_at(&sc, i) == 0;)
		zeros++;
	return zeros < 3;
}

void quantity_from_int(int64_t n, struct quantity *out)
{
	struct qv v;

	v.neg = n < 0;
	v.mag = v.neg ? (u128)(-(n + 1)) + 1 : (u128)n;
	v.scale = 0;
	qv_put(v, QUANTITY_DECIMAL_SI, out);
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
	struct qv x = qv_get(a), y = qv_get(b);
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
		x.mag *= pow10_tab[x.scale - y.scale];
	else
		y.mag *= pow10_tab[y.scale - x.scale];
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
	struct qv v = qv_get(q);

	strip_zeros(&v);
	return v.mag == 0 || v.scale >= 0;
}

bool quantity_is_multiple_of(const struct quantity *a, const struct quantity *b)
{
	struct qv x = qv_get(a), y = qv_get(b);
	int64_t d, c;
	u128 t;

	strip_zeros(&x);
	strip_zeros(&y);
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
		return x.mag % t == 0;
	}
	/* b must divide a.mant * 10^d: the 10^d can absorb up to d factors of
	 * two and of five from b; what is left must divide a's mantissa. */
	t = y.mag;
	for (c = 0; c < d && (t & 1) == 0; c++)
		t >>= 1;
	for (c = 0; c < d && t % 5 == 0; c++)
		t /= 5;
	return x.mag % t == 0;
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
	struct qv x = qv_get(a), y = qv_get(b), r;
	unsigned x2, y2, x5, y5, z, i;

	strip_zeros(&x);
	strip_zeros(&y);
	if (x.mag == 0 || y.mag == 0) {
		r.neg = false;
		r.mag = 0;
		r.scale = 0;
		return qv_put(r, a->format, out);
	}
	/* Cancel the pairs of 2 and 5 that would end the product in zeros, so
	 * the 128-bit product is already normalized and its bound decides. */
	x2 = ctz128(x.mag);
	y2 = ctz128(y.mag);
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
	return qv_put(r, a->format, out);
}

int quantity_mul_int(const struct quantity *a, int64_t n, struct quantity *out)
{
	struct quantity b;

	quantity_from_int(n, &b);
	return quantity_mul(a, &b, out);
}

int quantity_add(const struct quantity *a, const struct quantity *b, struct quantity *out)
{
	struct qv x = qv_get(a), y = qv_get(b), r;
	struct qv *hi, *lo;
	int64_t d;

	strip_zeros(&x);
	strip_zeros(&y);
	if (x.mag == 0)
		return qv_put(y, b->format, out);
	if (y.mag == 0)
		return qv_put(x, a->format, out);
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
	return qv_put(r, a->format, out);
}

int quantity_to_int64(const struct quantity *q, int64_t *out)
{
	struct qv v = qv_get(q);
	u128 limit;

	strip_zeros(&v);
	if (v.mag == 0) {
		*out = 0;
		return 0;
	}
	if (v.scale < 0 || v.scale > 18)
		return -ERANGE;
	limit = v.neg ? (u128)INT64_MAX + 1 : (u128)INT64_MAX;
	if (v.mag > limit / pow10_tab[v.scale])
		return -ERANGE;
	v.mag *= pow10_tab[v.scale];
	if (v.mag > limit)
		return -ERANGE;
	*out = v.neg ? -(int64_t)(v.mag - 1) - 1 : (int64_t)v.mag;
	return 0;
}

/* ---- printing ---------------------------------------------------------- */

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

	if (v->scale < 0 || (v->scale <= 3 && v->mag < 1024 && v->mag * pow10_tab[v->scale] < 1024)) {
		put_decimal(b, v, false);
		return;
	}
	/* value = mag * 2^scale * 5^scale; it has a + scale factors of two. */
	a = ctz128(v->mag);
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
	struct qv v = qv_get(q);

	strip_zeros(&v);
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
	struct qv v = qv_get(q);

	strip_zeros(&v);
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
