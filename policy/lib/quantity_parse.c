/* quantity_parse.c - resource.Quantity from text, as the API server reads it.
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
 * already looks canonical is kept verbatim (quantity_spelling_kept()). */
#include "quantity.h"

#include <errno.h>
#include <stdint.h>

#include "quantity_impl.h"

#define NANO_EXP (-9)

/* Inputs longer than this would overflow the int64 position arithmetic;
 * nothing that long fits in memory anyway. */
#define TEXT_LEN_MAX ((size_t)1 << 40)

#define NANO_PER_UNIT 1000000000ULL

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
				mag = mag * quantity_pow10[pending + 1] + (u128)d;
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
			mag = mag * quantity_pow10[pending] + 1;
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
		return quantity_qv_put(v, QUANTITY_DECIMAL_SI, out);
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
	return quantity_qv_put(v, format, out);
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
