/* jscan_str.c - a scanned string's text: escapes resolved, UTF-8 checked.
 *
 * Strings that are only skipped are checked for grammar (escapes, no raw
 * control bytes) but not for UTF-8: the bytes are never looked at again.
 * jscan_str_decode() checks UTF-8 of what the caller keeps, and
 * jscan_str_is() compares a raw member name with a literal. Nothing here
 * moves the scanner, so it is apart from the calls in jscan.c. */
#include "jscan.h"

#include <errno.h>
#include <string.h>

#include "jscan_impl.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one.
 * Strict as RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* Nearly every string in a review is ASCII: OR the bytes together and
 * test the high bits, sixteen bytes a step with SSE2, and for short
 * strings two words that overlap rather than a loop. */
static inline bool ascii_only(const unsigned char *p, size_t len)
{
	uint64_t x, y;
	uint32_t w, v;

	if (len >= 16) {
#if JSCAN_SSE2
		__m128i acc = _mm_loadu_si128((const __m128i *)(const void *)(p + len - 16));
		size_t i;

		for (i = 0; i + 16 < len; i += 16)
			acc = _mm_or_si128(acc, _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
		return _mm_movemask_epi8(acc) == 0;
#else
		size_t i;

		memcpy(&x, p + len - 8, 8);
		for (i = 0; i + 8 < len; i += 8) {
			memcpy(&y, p + i, 8);
			x |= y;
		}
		return !(x & HIGHS);
#endif
	}
	if (len >= 8) {
		memcpy(&x, p, 8);
		memcpy(&y, p + len - 8, 8);
		return !((x | y) & HIGHS);
	}
	if (len >= 4) {
		memcpy(&w, p, 4);
		memcpy(&v, p + len - 4, 4);
		return !((w | v) & 0x80808080u);
	}
	w = 0;
	while (len--)
		w |= p[len];
	return !(w & 0x80);
}

/* UTF-8 of text with bytes above 0x7f. */
static bool utf8_valid_slow(const unsigned char *p, const unsigned char *end)
{
	while (p < end) {
		size_t n;

		if (end - p >= 8) {
			uint64_t x;

			memcpy(&x, p, 8);
			if (!(x & HIGHS)) {
				p += 8;
				continue;
			}
		}
		n = utf8_seq(p, end);
		if (n == 0)
			return false;
		p += n;
	}
	return true;
}

static inline bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	return ascii_only(p, len) || utf8_valid_slow(p, p + len);
}

static unsigned hex4(const char *p)
{
	return (unsigned)(jscan_hexval((unsigned char)p[0]) << 12 | jscan_hexval((unsigned char)p[1]) << 8 |
			  jscan_hexval((unsigned char)p[2]) << 4 | jscan_hexval((unsigned char)p[3]));
}

/* Decode the escape at *pp (a backslash) into out[], advancing *pp. Returns
 * the number of bytes written (1..4), or 0 for a lone surrogate. The escape
 * grammar was checked by the scanner. */
static size_t unescape_one(const char **pp, const char *end, unsigned char out[4])
{
	const char *p = *pp;
	unsigned cp;

	switch (p[1]) {
	case 'b': out[0] = '\b'; break;
	case 'f': out[0] = '\f'; break;
	case 'n': out[0] = '\n'; break;
	case 'r': out[0] = '\r'; break;
	case 't': out[0] = '\t'; break;
	case 'u':
		cp = hex4(p + 2);
		p += 6;
		if (cp >= 0xdc00 && cp <= 0xdfff)
			return 0;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			unsigned lo;

			if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
				return 0;
			lo = hex4(p + 2);
			if (lo < 0xdc00 || lo > 0xdfff)
				return 0;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			p += 6;
		}
		*pp = p;
		if (cp < 0x80) {
			out[0] = (unsigned char)cp;
			return 1;
		}
		if (cp < 0x800) {
			out[0] = (unsigned char)(0xc0 | cp >> 6);
			out[1] = (unsigned char)(0x80 | (cp & 0x3f));
			return 2;
		}
		if (cp < 0x10000) {
			out[0] = (unsigned char)(0xe0 | cp >> 12);
			out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
			out[2] = (unsigned char)(0x80 | (cp & 0x3f));
			return 3;
		}
		out[0] = (unsigned char)(0xf0 | cp >> 18);
		out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[3] = (unsigned char)(0x80 | (cp & 0x3f));
		return 4;
	default:  /* '"', '\\', '/' stand for themselves */
		out[0] = (unsigned char)p[1];
		break;
	}
	*pp = p + 2;
	return 1;
}

/* Unescape raw into dst, which holds raw->len + 1 bytes: decoding never
 * lengthens (2 bytes give 1, 6 give at most 3, 12 give 4), and one more
 * for a NUL, which is handy for callers. */
static int unescape_into(const struct jscan_str *raw, char *dst, struct str *out)
{
	const char *p = raw->ptr, *end = raw->ptr + raw->len;
	char *d = dst;

	while (p < end) {
		const char *bs = memchr(p, '\\', (size_t)(end - p));
		unsigned char u[4];
		size_t n;

		if (!bs) {
			memcpy(d, p, (size_t)(end - p));
			d += end - p;
			break;
		}
		memcpy(d, p, (size_t)(bs - p));
		d += bs - p;
		p = bs;
		n = unescape_one(&p, end, u);
		if (n == 0)
			return -EINVAL;
		memcpy(d, u, n);
		d += n;
	}
	*d = '\0';
	out->ptr = dst;
	out->len = (size_t)(d - dst);
	return 0;
}

/* jscan_str_decode() of a string with escapes, its UTF-8 checked. */
static int decode_escaped(const struct jscan_str *raw, struct arena *a, struct str *out)
{
	char *dst = arena_alloc(a, raw->len + 1);

	if (!dst)
		return arena_error(a);
	return unescape_into(raw, dst, out);
}

/* jscan_str_decode() of all but unescaped ASCII. */
static NOINLINE int decode_checked(const struct jscan_str *raw, struct arena *a, struct str *out)
{
	/* Escapes are ASCII, so checking the raw bytes checks every byte
	 * that is copied; decoded escapes are valid UTF-8 by construction. */
	if (!utf8_valid(raw->ptr, raw->len))
		return -EINVAL;
	if (raw->escaped)
		return decode_escaped(raw, a, out);
	out->ptr = raw->ptr;
	out->len = raw->len;
	return 0;
}

int jscan_str_decode(const struct jscan_str *raw, struct arena *a, struct str *out)
{
	if (likely(!raw->escaped && ascii_only((const unsigned char *)raw->ptr, raw->len))) {
		out->ptr = raw->ptr;
		out->len = raw->len;
		return 0;
	}
	return decode_checked(raw, a, out);
}

int jscan_str_decode_to(const struct jscan_str *raw, char *dst, size_t cap, struct str *out)
{
	if (!utf8_valid(raw->ptr, raw->len))
		return -EINVAL;
	if (!raw->escaped) {
		out->ptr = raw->ptr;
		out->len = raw->len;
		return 0;
	}
	if (cap < raw->len + 1)
		return -E2BIG;
	return unescape_into(raw, dst, out);
}

bool jscan_str_is_escaped(const struct jscan_str *raw, const char *lit)
{
	const char *p = raw->ptr, *end = raw->ptr + raw->len;
	const unsigned char *l = (const unsigned char *)lit;

	if (!raw->escaped) {
		size_t n = strlen(lit);

		return n == raw->len && memcmp(raw->ptr, lit, n) == 0;
	}
	while (p < end) {
		unsigned char u[4];
		size_t n, i;

		if (*p != '\\') {
			if (*l == '\0' || (unsigned char)*p != *l)
				return false;
			p++;
			l++;
			continue;
		}
		n = unescape_one(&p, end, u);
		if (n == 0)
			return false;
		for (i = 0; i < n; i++, l++)
			if (*l == '\0' || *l != u[i])
				return false;
	}
	return *l == '\0';
}
