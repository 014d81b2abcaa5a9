/* jscan_impl.h - what the files of the scanner share. Private to the jscan
 * module: nothing outside policy/jscan*.c (and the scanner's own tests,
 * which compile those files again with JSCAN_PORTABLE) includes it.
 *
 * jscan.c is the pull API, byte by byte, and the grammar of single tokens;
 * jscan_skip.c skips whole values (byte by byte, and a block at a time);
 * jscan_str.c decodes strings and checks UTF-8. The token grammar both
 * walks use - whitespace, a string's end, a literal, and recording an
 * error - is static inline here: it runs for nearly every token, so the
 * split costs the walks no call. */
#ifndef DRA_GUARD_JSCAN_IMPL_H
#define DRA_GUARD_JSCAN_IMPL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jscan.h"

/* The SSE2 code (every x86-64 has it) unless JSCAN_PORTABLE asks for the
 * code every platform has, which the tests also build. Every file of the
 * scanner decides alike: JSCAN_PORTABLE is defined before this header. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SSE2__) && !defined(JSCAN_PORTABLE)
#define JSCAN_SSE2 1
#else
#define JSCAN_SSE2 0
#endif

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

#if defined(__GNUC__)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#else
#define likely(x) (x)
#define unlikely(x) (x)
#define NOINLINE
#endif

/* What each error says (jscan.c). jscan_describe() tells some of them
 * apart by address, so each has one definition. */
extern const char jscan_msg_eof[];
extern const char jscan_msg_eof_string[];
extern const char jscan_msg_value[];
extern const char jscan_msg_key[];
extern const char jscan_msg_colon[];
extern const char jscan_msg_obj_sep[];
extern const char jscan_msg_arr_sep[];
extern const char jscan_msg_escape[];
extern const char jscan_msg_hex[];
extern const char jscan_msg_control[];
extern const char jscan_msg_depth[];
extern const char jscan_msg_minus[];
extern const char jscan_msg_zero[];
extern const char jscan_msg_frac[];
extern const char jscan_msg_exp[];
extern const char jscan_msg_literal[];
extern const char jscan_msg_trailing[];

static inline int jscan_set_error(struct jscan *s, int err, const char *at, const char *msg)
{
	if (!s->error) {
		s->error = err;
		s->err_at = at;
		s->err_msg = msg;
	}
	return s->error;
}

/* The end of the whitespace at p, which is at or below ' ' (jscan.c). */
const char *jscan_skip_ws_run(const char *p, const char *end);

static inline const char *jscan_skip_ws(const char *p, const char *end)
{
	/* One compare decides for compact JSON: every structural byte and
	 * every value start is above ' '. */
	if (likely(p == end || (unsigned char)*p > ' '))
		return p;
	return jscan_skip_ws_run(p, end);
}

/* Bytes of x that are '"', '\\' or below 0x20 get their high bit set; the
 * lowest set bit is exact (see the top of jscan.c). Flipping bit 1 turns
 * '"' (0x22) into 0x20 and keeps every control byte below 0x20 (and 0x20,
 * 0x21, 0x23 at or above 0x21), so one "below 0x21" test finds both; a
 * second finds '\\'. */
static inline uint64_t jscan_string_specials(uint64_t x)
{
	uint64_t q = x ^ (ONES * 0x02);
	uint64_t b = x ^ (ONES * '\\');

	return (((q - ONES * 0x21) & ~q) | ((b - ONES) & ~b)) & HIGHS;
}

static inline unsigned jscan_first_flagged(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (unsigned)__builtin_ctzll(m) >> 3;
#else
	/* Load order is reversed: the first byte in memory is the highest. */
	return (unsigned)__builtin_clzll(m) >> 3;
#endif
}

static inline int jscan_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Where a token is wrong, for the caller to record or not. */
struct fault {
	const char *at;
	const char *msg;
};

static inline const char *jscan_fault(struct fault *f, const char *at, const char *msg)
{
	f->at = at;
	f->msg = msg;
	return NULL;
}

/* p is just past the opening quote. Returns the closing quote, or NULL with
 * *f set. *escaped is set when the string holds an escape. The full scan,
 * for what jscan_plain_string_end() leaves: escapes, control bytes, the
 * last bytes of the text (jscan.c). */
const char *jscan_string_scan(const char *p, const char *end, bool *escaped, struct fault *f);

/* jscan_string_scan() recording its error. */
static inline const char *jscan_scan_string(struct jscan *s, const char *p, bool *escaped)
{
	struct fault f;
	const char *q = jscan_string_scan(p, s->end, escaped, &f);

	if (!q)
		jscan_set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

/* The first '"', '\\' or control byte from *pp on, looked for in whole
 * blocks only: sixteen bytes a step with SSE2, eight with the word trick
 * elsewhere. NULL when the blocks hold none, with *pp at the first byte not
 * looked at (fewer than a block's worth before end). */
static inline const char *jscan_string_special(const char **pp, const char *end)
{
	const char *p = *pp;
#if JSCAN_SSE2
	/* As in jscan_string_specials(): after flipping bit 1, '"' and the
	 * control bytes are exactly the bytes at or below 0x20. */
	const __m128i flip = _mm_set1_epi8(0x02), top = _mm_set1_epi8(0x20);
	const __m128i bs = _mm_set1_epi8('\\');

	while (end - p >= 16) {
		const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		const __m128i f = _mm_xor_si128(v, flip);
		const __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(f, top), top),
						 _mm_cmpeq_epi8(v, bs));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);

		if (m)
			return p + (unsigned)__builtin_ctz(m);
		p += 16;
	}
#else
	while (end - p >= 8) {
		uint64_t x, m;

		memcpy(&x, p, 8);
		m = jscan_string_specials(x);
		if (m)
			return p + jscan_first_flagged(m);
		p += 8;
	}
#endif
	*pp = p;
	return NULL;
}

/* p is just past the opening quote. The closing quote when nothing before
 * it is a backslash or a control byte (nearly every string); NULL for
 * jscan_scan_string() to decide, also when the quote is not within the
 * text's last whole block. Inline, without a call, for the common case. */
static inline const char *jscan_plain_string_end(const char *p, const char *end)
{
	const char *q = jscan_string_special(&p, end);

	return q && *q == '"' ? q : NULL;
}

/* The closing quote of the string at p (its opening quote), or NULL with
 * the error recorded. *escaped tells whether it holds an escape. */
static inline const char *jscan_string_end(struct jscan *s, const char *p, const char *end,
					   bool *escaped)
{
	const char *q = jscan_plain_string_end(p + 1, end);
	bool esc = false;

	if (likely(q != NULL)) {
		*escaped = false;
		return q;
	}
	q = jscan_scan_string(s, p + 1, &esc);
	*escaped = esc;
	return q;
}

/* p is at '-' or a digit. Returns the byte after the number, or NULL with
 * *f set. *integer tells whether it had neither fraction nor exponent
 * (jscan.c). */
const char *jscan_number_end(const char *p, const char *end, bool *integer, struct fault *f);

/* p is at 't', 'f' or 'n'. Returns the byte after the literal, or NULL
 * with *f set. */
static inline const char *jscan_literal_end(const char *p, const char *end, struct fault *f)
{
	static const char *const words[] = { "true", "false", "null" };
	const char *w = words[*p == 't' ? 0 : *p == 'f' ? 1 : 2];
	size_t n = *p == 'f' ? 5 : 4, i;

	for (i = 0; i < n; i++) {
		if (p + i == end)
			return jscan_fault(f, p + i, jscan_msg_eof);
		if (p[i] != w[i])
			return jscan_fault(f, p, jscan_msg_literal);
	}
	return p + n;
}

/* jscan_number_end() recording its error. */
static inline const char *jscan_scan_number(struct jscan *s, const char *p, bool *integer)
{
	struct fault f;
	const char *q = jscan_number_end(p, s->end, integer, &f);

	if (!q)
		jscan_set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

/* jscan_literal_end() recording its error. */
static inline const char *jscan_scan_literal(struct jscan *s, const char *p)
{
	struct fault f;
	const char *q = jscan_literal_end(p, s->end, &f);

	if (!q)
		jscan_set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

#endif
