/* jscan.c - a strict, validating pull scanner over JSON text.
 *
 * Most of an AdmissionReview is text the guard never reads (managedFields,
 * attributes, annotations), and what it reads is short members; compact
 * JSON, as the API server sends it, has a token every four bytes and no
 * whitespace. So two costs matter: skipping while still proving the text
 * is JSON, and the overhead of each call. Two walks share the grammar.
 *
 * Byte by byte, for every call but jscan_skip() of a container: the next
 * token is the next byte, so a call reads the bytes it expects. The calls
 * the decoder makes for every member (peek, enter, object_next, array_next,
 * string) take compact text without escapes in a few instructions and no
 * stack frame, and hand anything else - whitespace, an escape, the end of
 * the text, any error - to a precise function that decides it from the
 * same state, as it always has. A string's closing quote is found sixteen
 * bytes a step with SSE2, eight with a word trick elsewhere (see
 * string_specials()); runs of whitespace sixteen bytes a step too.
 *
 * A block at a time, for jscan_skip() of an object or array. Byte by byte,
 * each string's end comes from a load-compare-mask-count chain whose
 * result addresses the next load, and the skip waits on that chain. A
 * classified 64-byte block has no such chain (simdjson's first stage, done
 * lazily as the walk reaches each block). SSE2 compares give masks of the
 * quotes, backslashes, whitespace and control bytes - the last two only
 * when the block has a byte at or below ' ', which compact text does not,
 * and backslashes only when there is one. With what is carried from the
 * block before (inside a string or not, first byte escaped or not):
 *   escaped   the byte after each run of backslashes of odd length;
 *   quotes    the quotes that are not escaped;
 *   string    prefix XOR of the quotes: 1 from each opening quote up to,
 *             not including, its closing quote;
 *   tokens    the bytes that are not whitespace, not in a string after
 *             its opening quote, and not a closing quote.
 * A token is a structural byte, the opening quote of a string, or a byte
 * of a number, a literal or garbage. The next one is a count of trailing
 * zeros away, and the grammar looks at token bytes only: a string is
 * followed by the token after its closing quote; a number or literal is
 * checked byte by byte by its grammar and the tokens it covered are
 * dropped; what follows, garbage included, must be what the grammar wants
 * next. What the walk jumps over is checked all the same: a block with a
 * control byte inside a string is never entered, and a string that may
 * hold a backslash (a block since its opening quote had one) has its
 * escapes checked byte by byte. The walk starts at the opening bracket,
 * outside any string, so it needs nothing from earlier calls, and commits
 * only the whole container. On anything else it gives up, and the
 * byte-by-byte skip does the call: every error (code, message, offset) is
 * that skip's. A valid container with 64 bytes of text from its start is
 * always skipped a block at a time, which the tests check.
 *
 * JSCAN_PORTABLE selects the portable code where SSE2 exists, so that the
 * tests run both; they must decide alike.
 *
 * Strings that are only skipped are checked for grammar (escapes, no raw
 * control bytes) but not for UTF-8: the bytes are never looked at again.
 * jscan_str_decode() checks UTF-8 of what the caller keeps. */
#include "jscan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The SSE2 code (every x86-64 has it) unless JSCAN_PORTABLE asks for the
 * code every platform has, which the tests also build. */
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
#define EVEN_BITS 0x5555555555555555ULL
#define ODD_BITS  0xaaaaaaaaaaaaaaaaULL
#define BLOCK 64

#if defined(__GNUC__)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#else
#define likely(x) (x)
#define unlikely(x) (x)
#define NOINLINE
#endif

static const char msg_eof[] = "unexpected end of input";
static const char msg_eof_string[] = "unexpected end of input inside a string";
static const char msg_value[] = "expected a value";
static const char msg_key[] = "expected '\"' to begin an object key";
static const char msg_colon[] = "expected ':' after an object key";
static const char msg_obj_sep[] = "expected ',' or '}' after an object member";
static const char msg_arr_sep[] = "expected ',' or ']' after an array element";
static const char msg_escape[] = "invalid escape in string";
static const char msg_hex[] = "expected four hex digits after \\u";
static const char msg_control[] = "control character in string (must be escaped)";
static const char msg_depth[] = "nesting too deep";
static const char msg_minus[] = "invalid number: expected a digit after '-'";
static const char msg_zero[] = "invalid number: leading zero";
static const char msg_frac[] = "invalid number: expected a digit after '.'";
static const char msg_exp[] = "invalid number: expected a digit in the exponent";
static const char msg_literal[] = "invalid literal (expected true, false or null)";
static const char msg_trailing[] = "expected end of input after the value";

static int set_error(struct jscan *s, int err, const char *at, const char *msg)
{
	if (!s->error) {
		s->error = err;
		s->err_at = at;
		s->err_msg = msg;
	}
	return s->error;
}

static inline bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The end of the whitespace at p, which is at or below ' '. Out of line:
 * compact JSON never gets here. Pretty-printed text has runs of
 * indentation, taken sixteen bytes a step with SSE2. */
static NOINLINE const char *skip_ws_run(const char *p, const char *end)
{
#if JSCAN_SSE2
	while (end - p >= 16) {
		const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		const __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
							     _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
						_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
							     _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
		unsigned m = (unsigned)_mm_movemask_epi8(ws) ^ 0xffffu;

		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
#endif
	while (p < end && is_ws((unsigned char)*p))
		p++;
	return p;
}

static inline const char *skip_ws(const char *p, const char *end)
{
	/* One compare decides for compact JSON: every structural byte and
	 * every value start is above ' '. */
	if (likely(p == end || (unsigned char)*p > ' '))
		return p;
	return skip_ws_run(p, end);
}

/* Bytes of x that are '"', '\\' or below 0x20 get their high bit set; the
 * lowest set bit is exact (see the top of the file). Flipping bit 1 turns
 * '"' (0x22) into 0x20 and keeps every control byte below 0x20 (and 0x20,
 * 0x21, 0x23 at or above 0x21), so one "below 0x21" test finds both; a
 * second finds '\\'. */
static inline uint64_t string_specials(uint64_t x)
{
	uint64_t q = x ^ (ONES * 0x02);
	uint64_t b = x ^ (ONES * '\\');

	return (((q - ONES * 0x21) & ~q) | ((b - ONES) & ~b)) & HIGHS;
}

static inline unsigned first_flagged(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (unsigned)__builtin_ctzll(m) >> 3;
#else
	/* Load order is reversed: the first byte in memory is the highest. */
	return (unsigned)__builtin_clzll(m) >> 3;
#endif
}

static inline int hexval(unsigned char c)
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

static inline const char *fault(struct fault *f, const char *at, const char *msg)
{
	f->at = at;
	f->msg = msg;
	return NULL;
}

/* p is just past the opening quote. Returns the closing quote, or NULL with
 * *f set. *escaped is set when the string holds an escape. The full scan,
 * for what plain_string_end() leaves: escapes, control bytes, the last
 * bytes of the text. */
static NOINLINE const char *string_scan(const char *p, const char *end, bool *escaped,
					struct fault *f)
{
	unsigned char c;

	for (;;) {
#if JSCAN_SSE2
		/* Sixteen bytes per step: equality with '"' and '\\', and "at
		 * most 0x1f" as max(v, 0x1f) == 0x1f, folded into one mask. */
		while (end - p >= 16) {
			const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
			const __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)),
							   _mm_set1_epi8(0x1f));
			const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
								      _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
							 ctl);
			unsigned m = (unsigned)_mm_movemask_epi8(hit);

			if (m) {
				p += __builtin_ctz(m);
				goto special;
			}
			p += 16;
		}
#endif
		while (end - p >= 8) {
			uint64_t x, m;

			memcpy(&x, p, 8);
			m = string_specials(x);
			if (m) {
				p += first_flagged(m);
				goto special;
			}
			p += 8;
		}
		for (;;) {
			if (p == end)
				return fault(f, p, msg_eof_string);
			c = (unsigned char)*p;
			if (c == '"' || c == '\\' || c < 0x20)
				break;
			p++;
		}
special:
		c = (unsigned char)*p;
		if (c == '"')
			return p;
		if (c != '\\')
			return fault(f, p, msg_control);
		*escaped = true;
		if (end - p < 2)
			return fault(f, end, msg_eof_string);
		switch (p[1]) {
		case '"': case '\\': case '/': case 'b':
		case 'f': case 'n': case 'r': case 't':
			p += 2;
			break;
		case 'u':
			if (end - p < 6) {
				int i;

				/* Say which byte is wrong before saying the text ended. */
				for (i = 2; p + i < end; i++)
					if (hexval((unsigned char)p[i]) < 0)
						return fault(f, p + i, msg_hex);
				return fault(f, end, msg_eof_string);
			}
			for (int i = 2; i < 6; i++)
				if (hexval((unsigned char)p[i]) < 0)
					return fault(f, p + i, msg_hex);
			p += 6;
			break;
		default:
			return fault(f, p + 1, msg_escape);
		}
	}
}

/* string_scan() recording its error. */
static const char *scan_string(struct jscan *s, const char *p, bool *escaped)
{
	struct fault f;
	const char *q = string_scan(p, s->end, escaped, &f);

	if (!q)
		set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

/* p is just past the opening quote. The closing quote when nothing before
 * it is a backslash or a control byte (nearly every string), found
 * sixteen bytes a step with SSE2 (eight with the word trick elsewhere);
 * NULL for scan_string() to decide, also when the text has fewer than
 * that many bytes left. Inline, without a call, for the common case. */
static inline const char *plain_string_end(const char *p, const char *end)
{
#if JSCAN_SSE2
	/* As in string_specials(): after flipping bit 1, '"' and the
	 * control bytes are exactly the bytes at or below 0x20. */
	const __m128i flip = _mm_set1_epi8(0x02), top = _mm_set1_epi8(0x20);
	const __m128i bs = _mm_set1_epi8('\\');

	while (end - p >= 16) {
		const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		const __m128i f = _mm_xor_si128(v, flip);
		const __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(f, top), top),
						 _mm_cmpeq_epi8(v, bs));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);

		if (m) {
			p += (unsigned)__builtin_ctz(m);
			return *p == '"' ? p : NULL;
		}
		p += 16;
	}
#else
	while (end - p >= 8) {
		uint64_t x, m;

		memcpy(&x, p, 8);
		m = string_specials(x);
		if (m) {
			p += first_flagged(m);
			return *p == '"' ? p : NULL;
		}
		p += 8;
	}
#endif
	return NULL;
}

/* The closing quote of the string at p (its opening quote), or NULL with
 * the error recorded. *escaped tells whether it holds an escape. */
static inline const char *string_end(struct jscan *s, const char *p, const char *end,
				     bool *escaped)
{
	const char *q = plain_string_end(p + 1, end);
	bool esc = false;

	if (likely(q != NULL)) {
		*escaped = false;
		return q;
	}
	q = scan_string(s, p + 1, &esc);
	*escaped = esc;
	return q;
}

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* p is at '-' or a digit. Returns the byte after the number, or NULL with
 * *f set. *integer tells whether it had neither fraction nor exponent. */
static const char *number_end(const char *p, const char *end, bool *integer, struct fault *f)
{
	*integer = true;
	if (*p == '-') {
		p++;
		if (p == end || !is_digit((unsigned char)*p))
			return fault(f, p, p == end ? msg_eof : msg_minus);
	}
	if (*p == '0') {
		p++;
		if (p < end && is_digit((unsigned char)*p))
			return fault(f, p - 1, msg_zero);
	} else {
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && *p == '.') {
		*integer = false;
		p++;
		if (p == end || !is_digit((unsigned char)*p))
			return fault(f, p, p == end ? msg_eof : msg_frac);
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		*integer = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit((unsigned char)*p))
			return fault(f, p, p == end ? msg_eof : msg_exp);
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	return p;
}

/* p is at 't', 'f' or 'n'. Returns the byte after the literal, or NULL
 * with *f set. */
static const char *literal_end(const char *p, const char *end, struct fault *f)
{
	static const char *const words[] = { "true", "false", "null" };
	const char *w = words[*p == 't' ? 0 : *p == 'f' ? 1 : 2];
	size_t n = *p == 'f' ? 5 : 4, i;

	for (i = 0; i < n; i++) {
		if (p + i == end)
			return fault(f, p + i, msg_eof);
		if (p[i] != w[i])
			return fault(f, p, msg_literal);
	}
	return p + n;
}

/* number_end() recording its error. */
static const char *scan_number(struct jscan *s, const char *p, bool *integer)
{
	struct fault f;
	const char *q = number_end(p, s->end, integer, &f);

	if (!q)
		set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

/* literal_end() recording its error. */
static const char *scan_literal(struct jscan *s, const char *p)
{
	struct fault f;
	const char *q = literal_end(p, s->end, &f);

	if (!q)
		set_error(s, -EINVAL, f.at, f.msg);
	return q;
}

void jscan_init(struct jscan *s, const char *text, size_t len, unsigned max_depth)
{
	if (max_depth == 0)
		max_depth = JSCAN_DEFAULT_MAX_DEPTH;
	if (max_depth > JSCAN_DEPTH_LIMIT)
		max_depth = JSCAN_DEPTH_LIMIT;
	s->base = text;
	s->p = text;
	s->end = text + len;
	s->depth = 0;
	s->max_depth = max_depth;
	s->after_open = false;
	s->error = 0;
	s->err_at = NULL;
	s->err_msg = NULL;
}

/* --- the calls, precisely ----------------------------------------------------
 * These decide every case, whitespace and errors included; the quick paths
 * below hand them whatever is not compact text. */

static NOINLINE enum jscan_type peek_precise(struct jscan *s)
{
	if (s->error)
		return JSCAN_INVALID;
	s->p = skip_ws(s->p, s->end);
	if (s->p == s->end)
		return JSCAN_EOF;
	switch (*s->p) {
	case '{': return JSCAN_OBJECT;
	case '[': return JSCAN_ARRAY;
	case '"': return JSCAN_STRING;
	case 't': return JSCAN_TRUE;
	case 'f': return JSCAN_FALSE;
	case 'n': return JSCAN_NULL;
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return JSCAN_NUMBER;
	default:
		return JSCAN_INVALID;
	}
}

/* Fail for a value of the wrong type (or none) at the current position. */
static int expect_fail(struct jscan *s, const char *msg)
{
	if (s->p == s->end)
		return set_error(s, -EINVAL, s->p, msg_eof);
	return set_error(s, -EINVAL, s->p, msg);
}

static NOINLINE int enter_precise(struct jscan *s, char open, const char *msg)
{
	if (s->error)
		return s->error;
	s->p = skip_ws(s->p, s->end);
	if (s->p == s->end || *s->p != open)
		return expect_fail(s, msg);
	if (s->depth >= s->max_depth)
		return set_error(s, -E2BIG, s->p, msg_depth);
	s->p++;
	s->depth++;
	s->after_open = true;
	return 0;
}

static NOINLINE int object_next_precise(struct jscan *s, struct jscan_str *key)
{
	const char *p, *end = s->end, *q;
	bool esc = false;

	if (s->error)
		return s->error;
	if (s->depth == 0)
		return set_error(s, -EINVAL, s->p, "not inside an object");
	p = skip_ws(s->p, end);
	if (p == end)
		return set_error(s, -EINVAL, p, msg_eof);
	if (*p == '}') {
		s->after_open = false;
		s->depth--;
		s->p = p + 1;
		return 0;
	}
	if (!s->after_open) {
		if (*p != ',')
			return set_error(s, -EINVAL, p, msg_obj_sep);
		p = skip_ws(p + 1, end);
		if (p == end)
			return set_error(s, -EINVAL, p, msg_eof);
	}
	s->after_open = false;
	if (*p != '"')
		return set_error(s, -EINVAL, p, msg_key);
	q = string_end(s, p, end, &esc);
	if (!q)
		return s->error;
	key->ptr = p + 1;
	key->len = (size_t)(q - (p + 1));
	key->escaped = esc;
	p = skip_ws(q + 1, end);
	if (p == end)
		return set_error(s, -EINVAL, p, msg_eof);
	if (*p != ':')
		return set_error(s, -EINVAL, p, msg_colon);
	s->p = p + 1;
	return 1;
}

static NOINLINE int array_next_precise(struct jscan *s)
{
	const char *p, *end = s->end;

	if (s->error)
		return s->error;
	if (s->depth == 0)
		return set_error(s, -EINVAL, s->p, "not inside an array");
	p = skip_ws(s->p, end);
	if (p == end)
		return set_error(s, -EINVAL, p, msg_eof);
	if (*p == ']') {
		s->after_open = false;
		s->depth--;
		s->p = p + 1;
		return 0;
	}
	if (s->after_open) {
		s->after_open = false;
		s->p = p;
		return 1;
	}
	if (*p != ',')
		return set_error(s, -EINVAL, p, msg_arr_sep);
	s->p = p + 1;
	return 1;
}

static NOINLINE int string_precise(struct jscan *s, struct jscan_str *out)
{
	const char *p, *q;
	bool esc = false;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || *p != '"')
		return expect_fail(s, "expected a string");
	q = string_end(s, p, s->end, &esc);
	if (!q)
		return s->error;
	out->ptr = p + 1;
	out->len = (size_t)(q - (p + 1));
	out->escaped = esc;
	s->p = q + 1;
	return 0;
}

/* --- the calls ---------------------------------------------------------------
 * The ones the decoder makes for nearly every member read, on compact text
 * without escapes, the bytes they expect and commit, without a call or a
 * stack frame; any other text - whitespace, an escape, the end of the
 * input, an error - goes to the precise function above from the same
 * state. */

/* What a value starting with each byte is; 0 for none. */
static const unsigned char value_types[256] = {
	['{'] = JSCAN_OBJECT, ['['] = JSCAN_ARRAY, ['"'] = JSCAN_STRING,
	['t'] = JSCAN_TRUE, ['f'] = JSCAN_FALSE, ['n'] = JSCAN_NULL,
	['-'] = JSCAN_NUMBER, ['0'] = JSCAN_NUMBER, ['1'] = JSCAN_NUMBER,
	['2'] = JSCAN_NUMBER, ['3'] = JSCAN_NUMBER, ['4'] = JSCAN_NUMBER,
	['5'] = JSCAN_NUMBER, ['6'] = JSCAN_NUMBER, ['7'] = JSCAN_NUMBER,
	['8'] = JSCAN_NUMBER, ['9'] = JSCAN_NUMBER,
};

enum jscan_type jscan_peek(struct jscan *s)
{
	const char *p = s->p;

	if (likely(!s->error && p < s->end && (unsigned char)*p > ' ')) {
		unsigned t = value_types[(unsigned char)*p];

		return t ? (enum jscan_type)t : JSCAN_INVALID;
	}
	return peek_precise(s);
}

static inline int enter(struct jscan *s, char open, const char *msg)
{
	const char *p = s->p;

	if (likely(!s->error && p < s->end && *p == open && s->depth < s->max_depth)) {
		s->p = p + 1;
		s->depth++;
		s->after_open = true;
		return 0;
	}
	return enter_precise(s, open, msg);
}

int jscan_object_enter(struct jscan *s)
{
	return enter(s, '{', "expected an object");
}

int jscan_array_enter(struct jscan *s)
{
	return enter(s, '[', "expected an array");
}

int jscan_object_next(struct jscan *s, struct jscan_str *key)
{
	const char *p = s->p, *end = s->end, *q;

	if (unlikely(s->error || s->depth == 0 || p == end))
		goto precise;
	if (*p == '}') {
		s->after_open = false;
		s->depth--;
		s->p = p + 1;
		return 0;
	}
	if (!s->after_open) {
		if (*p != ',')
			goto precise;
		p++;
	}
	/* "key": with the colon right after the closing quote. */
	if (unlikely(p == end || *p != '"'))
		goto precise;
	q = plain_string_end(p + 1, end);
	if (unlikely(!q || end - q < 2 || q[1] != ':'))
		goto precise;
	key->ptr = p + 1;
	key->len = (size_t)(q - (p + 1));
	key->escaped = false;
	s->after_open = false;
	s->p = q + 2;
	return 1;
precise:
	return object_next_precise(s, key);
}

int jscan_array_next(struct jscan *s)
{
	const char *p = s->p;
	unsigned char c;

	if (unlikely(s->error || s->depth == 0 || p == s->end))
		return array_next_precise(s);
	c = (unsigned char)*p;
	if (c == ']') {
		s->after_open = false;
		s->depth--;
		s->p = p + 1;
		return 0;
	}
	if (s->after_open && c > ' ') {
		s->after_open = false;
		return 1;
	}
	if (c == ',' && !s->after_open) {
		s->p = p + 1;
		return 1;
	}
	return array_next_precise(s);
}

int jscan_string(struct jscan *s, struct jscan_str *out)
{
	const char *p = s->p, *end = s->end, *q;

	if (likely(!s->error && p < end && *p == '"')) {
		q = plain_string_end(p + 1, end);
		if (likely(q != NULL)) {
			out->ptr = p + 1;
			out->len = (size_t)(q - (p + 1));
			out->escaped = false;
			s->p = q + 1;
			return 0;
		}
	}
	return string_precise(s, out);
}

int jscan_number(struct jscan *s, struct str *text)
{
	const char *p, *q;
	bool integer;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != '-' && !is_digit((unsigned char)*p)))
		return expect_fail(s, "expected a number");
	q = scan_number(s, p, &integer);
	if (!q)
		return s->error;
	text->ptr = p;
	text->len = (size_t)(q - p);
	s->p = q;
	return 0;
}

int jscan_int64(struct jscan *s, int64_t *out)
{
	const char *p, *q, *d;
	bool integer, neg;
	uint64_t v = 0, limit;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != '-' && !is_digit((unsigned char)*p)))
		return expect_fail(s, "expected an integer");
	q = scan_number(s, p, &integer);
	if (!q)
		return s->error;
	if (!integer)
		return set_error(s, -EINVAL, p, "expected an integer without fraction or exponent");
	neg = *p == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (d = p + neg; d < q; d++) {
		unsigned digit = (unsigned)(*d - '0');

		if (v > (limit - digit) / 10)
			return set_error(s, -ERANGE, p, "integer out of range for int64");
		v = v * 10 + digit;
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	s->p = q;
	return 0;
}

int jscan_bool(struct jscan *s, bool *out)
{
	const char *p, *q;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != 't' && *p != 'f'))
		return expect_fail(s, "expected true or false");
	q = scan_literal(s, p);
	if (!q)
		return s->error;
	*out = *p == 't';
	s->p = q;
	return 0;
}

int jscan_null(struct jscan *s)
{
	const char *p, *q;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || *p != 'n')
		return 0;
	q = scan_literal(s, p);
	if (!q)
		return s->error;
	s->p = q;
	return 1;
}

/* --- skipping byte by byte ---------------------------------------------------- */

#define KIND_WORDS ((JSCAN_DEPTH_LIMIT + 63) / 64)

/* jscan_skip() of any value, and the reference for every error of one.
 * One loop with a depth counter, not a recursion. Which kind of container
 * is open is a bit stack: the innermost 64 levels in a register (bit 0 the
 * innermost, set for an object), older words in kinds[]. The usual steps
 * of compact text (a comma and the next key, a key and its colon) are
 * tested first, two bytes at once; anything else takes the general step,
 * which says what is wrong. */
static NOINLINE int skip_bytes(struct jscan *s, struct str *raw)
{
	uint64_t kinds[KIND_WORDS], top = 0;
	const char *p, *end = s->end, *start;
	const char *msg = msg_value;
	unsigned depth = 0, room;
	bool integer, esc;
	unsigned char c;

	if (s->error)
		return s->error;
	room = s->depth < s->max_depth ? s->max_depth - s->depth : 0;
	p = skip_ws(s->p, end);
	start = p;

value:
	if (p == end)
		goto eof;
	c = (unsigned char)*p;
	if (c == '"') {
		p = string_end(s, p, end, &esc);
		if (!p)
			return s->error;
		p++;
		goto after;
	}
	if (c == '{' || c == '[') {
		if (depth >= room) {
			msg = msg_depth;
			goto too_deep;
		}
		if (depth != 0 && (depth & 63) == 0)
			kinds[(depth >> 6) - 1] = top;
		top = top << 1 | (c == '{');
		depth++;
		p = skip_ws(p + 1, end);
		if (p < end && (unsigned char)*p == c + 2) {  /* '}' or ']' */
			p++;
			goto close;
		}
		if (top & 1)
			goto key;
		goto value;
	}
	switch (c) {
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		p = scan_number(s, p, &integer);
		if (!p)
			return s->error;
		goto after;
	case 't': case 'f': case 'n':
		p = scan_literal(s, p);
		if (!p)
			return s->error;
		goto after;
	default:
		msg = msg_value;
		goto fail;
	}

after:
	/* A value ended at p. */
	if (depth == 0)
		goto done;
	if (likely(end - p >= 2)) {
		c = (unsigned char)p[0];
		if (c == ',') {
			if (top & 1) {
				if (p[1] == '"') {
					p++;
					goto key_quote;
				}
			} else if ((unsigned char)p[1] > ' ') {
				p++;
				goto value;
			}
		} else if (c == ((top & 1) ? '}' : ']')) {
			p++;
			goto close;
		}
	}
	p = skip_ws(p, end);
	if (p == end)
		goto eof;
	c = (unsigned char)*p++;
	if (c == ',') {
		p = skip_ws(p, end);
		if (top & 1)
			goto key;
		goto value;
	}
	if (c == ((top & 1) ? '}' : ']'))
		goto close;
	p--;
	msg = (top & 1) ? msg_obj_sep : msg_arr_sep;
	goto fail;

close:
	depth--;
	top >>= 1;
	if (depth != 0 && (depth & 63) == 0)
		top = kinds[(depth >> 6) - 1];
	goto after;

key:
	if (p == end)
		goto eof;
	if (*p != '"') {
		msg = msg_key;
		goto fail;
	}
key_quote:
	p = string_end(s, p, end, &esc);
	if (!p)
		return s->error;
	if (likely(end - p >= 3 && p[1] == ':' && (unsigned char)p[2] > ' ')) {
		p += 2;
		goto value;
	}
	p = skip_ws(p + 1, end);
	if (p == end)
		goto eof;
	if (*p != ':') {
		msg = msg_colon;
		goto fail;
	}
	p = skip_ws(p + 1, end);
	goto value;

done:
	if (raw) {
		raw->ptr = start;
		raw->len = (size_t)(p - start);
	}
	s->p = p;
	return 0;
eof:
	return set_error(s, -EINVAL, p, msg_eof);
too_deep:
	return set_error(s, -E2BIG, p, msg);
fail:
	return set_error(s, -EINVAL, p, msg);
}

/* --- skipping a container a block at a time ---------------------------------
 * See the top of the file. The walk keeps its state in locals. */

/* The byte classes of one 64-byte block, bit i for byte i. */
struct block_bits {
	uint64_t quote;         /* '"' */
	uint64_t backslash;
	uint64_t space;         /* ' ', '\t', '\n', '\r' */
	uint64_t control;       /* below 0x20, whitespace included */
};

/* Compiled where the scanner uses it, and in the portable build of the
 * tests, which check it against the portable code. */
#if defined(__SSE2__)
static inline uint64_t bits64(__m128i a, __m128i b, __m128i c, __m128i d)
{
	return (uint64_t)(unsigned)_mm_movemask_epi8(a) |
	       (uint64_t)(unsigned)_mm_movemask_epi8(b) << 16 |
	       (uint64_t)(unsigned)_mm_movemask_epi8(c) << 32 |
	       (uint64_t)(unsigned)_mm_movemask_epi8(d) << 48;
}

static inline __m128i is_control(__m128i v)
{
	return _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
}

static inline __m128i is_ctl_space(__m128i v)
{
	return _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
					 _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
			    _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
}

/* The masks compact text does not need: backslashes, and whitespace and
 * control bytes, for a block that has some. */
static NOINLINE void classify_sse2_rare(const char *p, struct block_bits *out)
{
	const __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	const __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	const __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	const __m128i space = _mm_set1_epi8(' '), bs = _mm_set1_epi8('\\');

	out->backslash = bits64(_mm_cmpeq_epi8(v0, bs), _mm_cmpeq_epi8(v1, bs),
				_mm_cmpeq_epi8(v2, bs), _mm_cmpeq_epi8(v3, bs));
	out->space = bits64(_mm_cmpeq_epi8(v0, space), _mm_cmpeq_epi8(v1, space),
			    _mm_cmpeq_epi8(v2, space), _mm_cmpeq_epi8(v3, space));
	out->control = bits64(is_control(v0), is_control(v1), is_control(v2), is_control(v3));
	if (out->control)
		out->space |= bits64(is_ctl_space(v0), is_ctl_space(v1), is_ctl_space(v2),
				     is_ctl_space(v3));
}

static inline void classify_sse2(const char *p, struct block_bits *out)
{
	const __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	const __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	const __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i top = _mm_set1_epi8(' ');
	__m128i rare, low;

	out->quote = bits64(_mm_cmpeq_epi8(v0, quote), _mm_cmpeq_epi8(v1, quote),
			    _mm_cmpeq_epi8(v2, quote), _mm_cmpeq_epi8(v3, quote));
	/* Compact JSON has no byte at or below ' ' and backslashes are rare:
	 * one test (a backslash, or the smallest byte at or below ' ') tells
	 * whether the other masks are needed. */
	low = _mm_min_epu8(_mm_min_epu8(v0, v1), _mm_min_epu8(v2, v3));
	rare = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, bs), _mm_cmpeq_epi8(v1, bs)),
			    _mm_or_si128(_mm_cmpeq_epi8(v2, bs), _mm_cmpeq_epi8(v3, bs)));
	rare = _mm_or_si128(rare, _mm_cmpeq_epi8(_mm_max_epu8(low, top), top));
	out->backslash = 0;
	out->space = 0;
	out->control = 0;
	if (unlikely(_mm_movemask_epi8(rare)))
		classify_sse2_rare(p, out);
}
#endif

#if !JSCAN_SSE2
/* Eight bytes as a little-endian word: byte i in bits 8i..8i+7. */
static inline uint64_t load_le64(const char *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	return x;
}

/* 0x80 in each byte of x that is zero, and nowhere else: adding 0x7f to
 * the low seven bits carries into bit 7 exactly when they are not all
 * zero, and no carry crosses a byte. */
static inline uint64_t zero_bytes(uint64_t x)
{
	return ~(((x & ~HIGHS) + ~HIGHS) | x | ~HIGHS);
}

/* 0x80 in each byte of x below n (n at most 0x80), exactly. */
static inline uint64_t bytes_below(uint64_t x, unsigned n)
{
	return ~(((x & ~HIGHS) + ONES * (0x80 - n)) | x) & HIGHS;
}

/* Bit 7 of byte i of m (other bits clear) as bit i of the result: the
 * multiply moves bit 8i to bit 56 + i, and nothing else reaches the top
 * byte. */
static inline uint64_t gather_high(uint64_t m)
{
	return ((m >> 7) * 0x0102040810204080ULL) >> 56;
}

/* The same bits as classify_sse2(), eight bytes at a time in a word. */
static inline void classify_portable(const char *p, struct block_bits *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < BLOCK; i += 8) {
		uint64_t x = load_le64(p + i);
		uint64_t ctl = bytes_below(x, 0x20);
		uint64_t sp = zero_bytes(x ^ ONES * ' ');

		if (ctl)
			sp |= zero_bytes(x ^ ONES * '\t') | zero_bytes(x ^ ONES * '\n') |
			      zero_bytes(x ^ ONES * '\r');
		out->quote |= gather_high(zero_bytes(x ^ ONES * '"')) << i;
		out->backslash |= gather_high(zero_bytes(x ^ ONES * '\\')) << i;
		out->space |= gather_high(sp) << i;
		out->control |= gather_high(ctl) << i;
	}
}
#endif

static inline void classify(const char *p, struct block_bits *out)
{
#if JSCAN_SSE2
	classify_sse2(p, out);
#else
	classify_portable(p, out);
#endif
}

/* The bytes a backslash escapes: the byte after each run of backslashes of
 * odd length. *carry (0 or 1) tells that the first byte is escaped by the
 * block before, and is set for the block after. Adding the first bit of a
 * run to the run carries into the bit after it; a run that starts at an
 * even position has odd length exactly when that bit is odd, and the other
 * way round. A run still open at bit 63 carries out of the word (the
 * addition overflows) when it started at an odd position. */
static inline uint64_t escaped_bytes(uint64_t bs, uint64_t *carry)
{
	uint64_t in = *carry, starts, even, odd;

	if (likely(!(bs | in)))
		return 0;
	bs &= ~in;              /* an escaped backslash escapes nothing */
	starts = bs & ~(bs << 1);
	even = (bs + (starts & EVEN_BITS)) & ~bs & ODD_BITS;
	*carry = __builtin_add_overflow(bs, starts & ODD_BITS, &odd);
	odd &= ~bs & EVEN_BITS;
	return even | odd | in;
}

/* Bit i is the XOR of bits 0..i: applied to the quotes, 1 from each
 * opening quote up to its closing quote, the latter excluded. */
static inline uint64_t prefix_xor(uint64_t x)
{
	x ^= x << 1;
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	x ^= x << 16;
	x ^= x << 32;
	return x;
}

/* What one block walk carries from block to block. Offsets count from
 * the start of the text. */
struct walk {
	const char *base;
	size_t len;
	uint64_t in_string;     /* all ones when the next block starts in a string */
	uint64_t escape;        /* 1 when the next block's first byte is escaped */
	size_t esc_end;         /* end of the last block holding a backslash */
};

/* A block's tokens, or ok false when the block is dirty. */
struct block_tokens {
	uint64_t tokens;
	bool ok;
};

/* The tokens of the 64 bytes at p, the block at offset blk, carrying
 * string and escape state from the block before it. */
static inline struct block_tokens block_tokens(struct walk *w, const char *p, size_t blk)
{
	struct block_bits m;
	uint64_t escaped, quotes, string, interior;

	classify(p, &m);
	escaped = escaped_bytes(m.backslash, &w->escape);
	quotes = m.quote & ~escaped;
	string = prefix_xor(quotes) ^ w->in_string;
	w->in_string = (uint64_t)0 - (string >> 63);
	interior = string & ~quotes;
	/* A control byte elsewhere is a token no grammar rule takes. */
	if (unlikely(m.control & interior))
		return (struct block_tokens){ 0, false };
	if (unlikely(m.backslash))
		w->esc_end = blk + BLOCK;
	/* string ^ quotes: the interior and the closing quotes. */
	return (struct block_tokens){ ~(m.space | (string ^ quotes)), true };
}

/* The last block, shorter than 64 bytes: the rest reads as spaces. */
static NOINLINE struct block_tokens last_block_tokens(struct walk *w, size_t blk)
{
	char pad[BLOCK];
	size_t left = w->len - blk;

	memcpy(pad, w->base + blk, left);
	memset(pad + left, ' ', BLOCK - left);
	return block_tokens(w, pad, blk);
}

/* Classify the block at offset blk (before the end of the text). */
static NOINLINE struct block_tokens classify_block(struct walk *w, size_t blk)
{
	if (unlikely(w->len - blk < BLOCK))
		return last_block_tokens(w, blk);
	return block_tokens(w, w->base + blk, blk);
}

/* Where the walk stands: the block at offset blk, and its tokens not yet
 * taken. */
struct cursor {
	size_t blk;
	uint64_t tok;
};

/* Move c to the next block; false at the end of the text or before a
 * dirty block. */
static inline bool next_block(struct walk *w, struct cursor *c)
{
	size_t n = c->blk + BLOCK;
	struct block_tokens b;

	if (n >= w->len)
		return false;
	b = classify_block(w, n);
	if (!b.ok)
		return false;
	c->blk = n;
	c->tok = b.tokens;
	return true;
}

/* Offset of the next token, taken. */
static inline bool take_token(struct walk *w, struct cursor *c, size_t *at)
{
	while (unlikely(c->tok == 0))
		if (!next_block(w, c))
			return false;
	*at = c->blk + (unsigned)__builtin_ctzll(c->tok);
	c->tok &= c->tok - 1;
	return true;
}

/* Drop the tokens before offset at, the end of a number or literal just
 * scanned (at most the end of the text). */
static inline bool seek(struct walk *w, struct cursor *c, size_t at)
{
	while (unlikely(at - c->blk >= BLOCK)) {
		if (!next_block(w, c)) {
			if (c->blk + BLOCK < w->len)
				return false;   /* dirty */
			c->tok = 0;             /* at the end of the text */
			return true;
		}
	}
	c->tok &= ~0ULL << (at - c->blk);
	return true;
}

/* The string opening at offset open is sound: no backslash since open,
 * or its escapes check out byte by byte. Called once the token after the
 * string is taken, so the blocks up to its end are classified. (Where the
 * string ends is the same either way: a quote after an odd run of
 * backslashes is escaped, and pairing each backslash with the byte after
 * it says the same.) */
static inline bool string_ok(const struct walk *w, size_t open)
{
	struct fault f;
	bool esc;

	if (likely(w->esc_end <= open))
		return true;
	return string_scan(w->base + open + 1, w->base + w->len, &esc, &f) != NULL;
}

/* jscan_skip() of the object or array at p, a block at a time; false to
 * leave the call to skip_bytes(), with nothing changed. */
static bool skip_blocks(struct jscan *s, const char *p, struct str *raw)
{
	uint64_t kinds[KIND_WORDS], top = 0;
	struct walk w = { s->base, (size_t)(s->end - s->base), 0, 0, 0 };
	const char *b = s->base, *q;
	struct block_tokens first;
	struct cursor c;
	struct fault f;
	size_t t, open, start = (size_t)(p - b), stop;
	unsigned depth = 0, room = s->depth < s->max_depth ? s->max_depth - s->depth : 0;
	bool integer;

	first = classify_block(&w, start);
	if (!first.ok)
		return false;
	c.blk = start;
	c.tok = first.tokens;
	if (!take_token(&w, &c, &t))
		return false;

value:
	if (b[t] == '"') {
		/* The closing quote is no token: the next one follows it. */
		open = t;
		if (!take_token(&w, &c, &t) || !string_ok(&w, open))
			return false;
		goto after_taken;
	}
	if (b[t] == '{' || b[t] == '[') {
		if (depth >= room)
			return false;
		if (depth != 0 && (depth & 63) == 0)
			kinds[(depth >> 6) - 1] = top;
		top = top << 1 | (b[t] == '{');
		depth++;
		open = t;
		if (!take_token(&w, &c, &t))
			return false;
		if (b[t] == b[open] + 2)        /* '}' or ']' */
			goto close;
		if (top & 1)
			goto key;
		goto value;
	}
	switch (b[t]) {
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		q = number_end(b + t, s->end, &integer, &f);
		goto scalar;
	case 't': case 'f': case 'n':
		q = literal_end(b + t, s->end, &f);
		goto scalar;
	default:
		return false;
	}

scalar:
	if (!q || !seek(&w, &c, (size_t)(q - b)))
		return false;

after:
	if (!take_token(&w, &c, &t))
		return false;
after_taken:
	if (b[t] == ',') {
		if (!take_token(&w, &c, &t))
			return false;
		if (top & 1)
			goto key;
		goto value;
	}
	if (b[t] != ((top & 1) ? '}' : ']'))
		return false;

close:
	depth--;
	if (depth == 0) {
		stop = t + 1;
		goto done;
	}
	top >>= 1;
	if ((depth & 63) == 0)
		top = kinds[(depth >> 6) - 1];
	goto after;

key:
	if (b[t] != '"')
		return false;
	open = t;
	if (!take_token(&w, &c, &t) || b[t] != ':' || !string_ok(&w, open))
		return false;
	if (!take_token(&w, &c, &t))
		return false;
	goto value;

done:
	if (raw) {
		raw->ptr = p;
		raw->len = stop - start;
	}
	s->p = b + stop;
	return true;
}

int jscan_skip(struct jscan *s, struct str *raw)
{
	const char *p;

	if (s->error)
		return s->error;
	/* A string or scalar is quicker byte by byte; so is a container too
	 * close to the end for a whole block. A container the blocks do not
	 * take (or that is not JSON) goes byte by byte from the start, which
	 * says exactly what is wrong. */
	p = skip_ws(s->p, s->end);
	if (s->end - p >= BLOCK && (*p == '{' || *p == '[') && skip_blocks(s, p, raw))
		return 0;
	return skip_bytes(s, raw);
}

int jscan_skip_same(struct jscan *s, struct str known)
{
	const char *p;

	if (s->error)
		return s->error;
	/* A number is not self-delimiting ("12" is a prefix of "123"). */
	if (known.len < 2 || (known.ptr[0] != '{' && known.ptr[0] != '[' && known.ptr[0] != '"'))
		return 0;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if ((size_t)(s->end - p) < known.len || memcmp(p, known.ptr, known.len) != 0)
		return 0;
	s->p = p + known.len;
	return 1;
}

int jscan_finish(struct jscan *s)
{
	if (s->error)
		return s->error;
	s->p = skip_ws(s->p, s->end);
	if (s->depth != 0)
		return set_error(s, -EINVAL, s->p, "unclosed object or array");
	if (s->p != s->end)
		return set_error(s, -EINVAL, s->p, msg_trailing);
	return 0;
}

int jscan_fail(struct jscan *s, int err, const char *msg)
{
	return set_error(s, err, s->p, msg);
}

int jscan_error(const struct jscan *s)
{
	return s->error;
}

size_t jscan_offset(const struct jscan *s)
{
	return (size_t)((s->error ? s->err_at : s->p) - s->base);
}

void jscan_describe(const struct jscan *s, char *buf, size_t n)
{
	const char *at, *p, *line_start;
	unsigned long line = 1;
	char found[32];

	if (n == 0)
		return;
	if (!s->error) {
		snprintf(buf, n, "no error");
		return;
	}
	at = s->err_at;
	line_start = s->base;
	for (p = s->base; p < at; p++) {
		if (*p == '\n') {
			line++;
			line_start = p + 1;
		}
	}
	if (at == s->end) {
		snprintf(found, sizeof(found), "end of input");
	} else {
		unsigned char c = (unsigned char)*at;

		if (c >= 0x20 && c < 0x7f && c != '\'')
			snprintf(found, sizeof(found), "'%c'", c);
		else
			snprintf(found, sizeof(found), "byte 0x%02x", c);
	}
	if (s->err_msg == msg_depth)
		snprintf(buf, n, "nesting deeper than %u levels at line %lu, column %zu (offset %zu)",
			 s->max_depth, line, (size_t)(at - line_start) + 1, (size_t)(at - s->base));
	else if (s->err_msg == msg_eof || s->err_msg == msg_eof_string)
		snprintf(buf, n, "%s at line %lu, column %zu (offset %zu)", s->err_msg, line,
			 (size_t)(at - line_start) + 1, (size_t)(at - s->base));
	else
		snprintf(buf, n, "%s, found %s at line %lu, column %zu (offset %zu)",
			 s->err_msg ? s->err_msg : "invalid JSON", found, line,
			 (size_t)(at - line_start) + 1, (size_t)(at - s->base));
}

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
	return (unsigned)(hexval((unsigned char)p[0]) << 12 | hexval((unsigned char)p[1]) << 8 |
			  hexval((unsigned char)p[2]) << 4 | hexval((unsigned char)p[3]));
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

/* jscan_str_decode() of a string with escapes, its UTF-8 checked. */
static int decode_escaped(const struct jscan_str *raw, struct arena *a, struct str *out)
{
	const char *p = raw->ptr, *end = raw->ptr + raw->len;
	char *dst, *d;

	/* Decoding never lengthens: 2 bytes give 1, 6 give at most 3, 12
	 * give 4. One more for a NUL, which is handy for callers. */
	dst = arena_alloc(a, raw->len + 1);
	if (!dst)
		return arena_error(a);
	d = dst;
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

bool jscan_str_is(const struct jscan_str *raw, const char *lit)
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
