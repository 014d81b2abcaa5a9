/* jscan.c - a strict, validating pull scanner over JSON text.
 *
 * Most of an AdmissionReview is strings the guard never reads (managedFields,
 * attributes, annotations), so the cost that matters is skipping them while
 * still proving the text is JSON. Three things keep that cheap:
 *
 * - strings are scanned sixteen bytes at a time with SSE2 where the ISA
 *   has it (all of x86-64), else eight at a time: one 64-bit load, and a few
 *   ALU operations tell whether any of the eight is '"', '\\' or a control
 *   byte (the classic "has a byte less than n" trick, see string_specials()).
 *   The lowest flagged byte is always a true hit, because borrows only
 *   travel upwards, so its index is ctz/8 on a little-endian machine;
 * - jscan_skip() is one loop with a depth counter, not a recursion, and keeps
 *   which kind of container is open in a bit stack on the C stack;
 * - whitespace is tested with one compare before any loop (compact JSON, as
 *   the API server sends it, has none).
 *
 * Strings that are only skipped are checked for grammar (escapes, no raw
 * control bytes) but not for UTF-8: the bytes are never looked at again.
 * jscan_str_decode() checks UTF-8 of what the caller keeps. */
#include "jscan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

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

static inline const char *skip_ws(const char *p, const char *end)
{
	/* One compare decides for compact JSON: every structural byte and
	 * every value start is above ' '. */
	while (p < end && (unsigned char)*p <= ' ' && is_ws((unsigned char)*p))
		p++;
	return p;
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

/* p is just past the opening quote. Returns the closing quote, or NULL with
 * the error recorded. */
static inline const char *scan_string(struct jscan *s, const char *p, bool *escaped)
{
	const char *end = s->end;
	unsigned char c;

	for (;;) {
#if defined(__SSE2__)
		/* Sixteen bytes per step where the ISA guarantees it (every
		 * x86-64): equality with '"' and '\\', and "at most 0x1f" as
		 * max(v, 0x1f) == 0x1f, folded into one bit mask. */
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
			if (p == end) {
				set_error(s, -EINVAL, p, msg_eof_string);
				return NULL;
			}
			c = (unsigned char)*p;
			if (c == '"' || c == '\\' || c < 0x20)
				break;
			p++;
		}
special:
		c = (unsigned char)*p;
		if (c == '"')
			return p;
		if (c != '\\') {
			set_error(s, -EINVAL, p, msg_control);
			return NULL;
		}
		*escaped = true;
		if (end - p < 2) {
			set_error(s, -EINVAL, end, msg_eof_string);
			return NULL;
		}
		switch (p[1]) {
		case '"': case '\\': case '/': case 'b':
		case 'f': case 'n': case 'r': case 't':
			p += 2;
			break;
		case 'u':
			if (end - p < 6) {
				int i;

				/* Say which byte is wrong before saying the text ended. */
				for (i = 2; p + i < end; i++) {
					if (hexval((unsigned char)p[i]) < 0) {
						set_error(s, -EINVAL, p + i, msg_hex);
						return NULL;
					}
				}
				set_error(s, -EINVAL, end, msg_eof_string);
				return NULL;
			}
			for (int i = 2; i < 6; i++) {
				if (hexval((unsigned char)p[i]) < 0) {
					set_error(s, -EINVAL, p + i, msg_hex);
					return NULL;
				}
			}
			p += 6;
			break;
		default:
			set_error(s, -EINVAL, p + 1, msg_escape);
			return NULL;
		}
	}
}

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* p is at '-' or a digit. Returns the byte after the number, or NULL with
 * the error recorded. *integer tells whether it had neither fraction nor
 * exponent. */
static const char *scan_number(struct jscan *s, const char *p, bool *integer)
{
	const char *end = s->end;

	*integer = true;
	if (*p == '-') {
		p++;
		if (p == end || !is_digit((unsigned char)*p)) {
			set_error(s, -EINVAL, p, p == end ? msg_eof : msg_minus);
			return NULL;
		}
	}
	if (*p == '0') {
		p++;
		if (p < end && is_digit((unsigned char)*p)) {
			set_error(s, -EINVAL, p - 1, msg_zero);
			return NULL;
		}
	} else {
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && *p == '.') {
		*integer = false;
		p++;
		if (p == end || !is_digit((unsigned char)*p)) {
			set_error(s, -EINVAL, p, p == end ? msg_eof : msg_frac);
			return NULL;
		}
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		*integer = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit((unsigned char)*p)) {
			set_error(s, -EINVAL, p, p == end ? msg_eof : msg_exp);
			return NULL;
		}
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	return p;
}

/* p is at 't', 'f' or 'n'. Returns the byte after the literal or NULL. */
static const char *scan_literal(struct jscan *s, const char *p)
{
	static const char *const words[] = { "true", "false", "null" };
	const char *w = words[*p == 't' ? 0 : *p == 'f' ? 1 : 2];
	size_t n = strlen(w), i;

	for (i = 0; i < n; i++) {
		if (p + i == s->end) {
			set_error(s, -EINVAL, p + i, msg_eof);
			return NULL;
		}
		if (p[i] != w[i]) {
			set_error(s, -EINVAL, p, msg_literal);
			return NULL;
		}
	}
	return p + n;
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

enum jscan_type jscan_peek(struct jscan *s)
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

static int enter(struct jscan *s, char open, const char *msg)
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
	q = scan_string(s, p + 1, &esc);
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

int jscan_array_next(struct jscan *s)
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

int jscan_string(struct jscan *s, struct jscan_str *out)
{
	const char *p, *q;
	bool esc = false;

	if (s->error)
		return s->error;
	p = skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || *p != '"')
		return expect_fail(s, "expected a string");
	q = scan_string(s, p + 1, &esc);
	if (!q)
		return s->error;
	out->ptr = p + 1;
	out->len = (size_t)(q - (p + 1));
	out->escaped = esc;
	s->p = q + 1;
	return 0;
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

#define KIND_WORDS ((JSCAN_DEPTH_LIMIT + 63) / 64)

int jscan_skip(struct jscan *s, struct str *raw)
{
	uint64_t kinds[KIND_WORDS];  /* bit d set: container d is an object */
	const char *p, *end = s->end, *start;
	const char *msg = msg_value;
	unsigned depth = 0, room;
	bool in_obj = false, integer, esc;

	if (s->error)
		return s->error;
	room = s->depth < s->max_depth ? s->max_depth - s->depth : 0;
	p = skip_ws(s->p, end);
	start = p;

value:
	if (p == end)
		goto eof;
	switch (*p) {
	case '"':
		p = scan_string(s, p + 1, &esc);
		if (!p)
			return s->error;
		p++;
		break;
	case '{':
		if (depth >= room) {
			msg = msg_depth;
			goto too_deep;
		}
		if ((depth & 63) == 0)
			kinds[depth >> 6] = 0;
		kinds[depth >> 6] |= 1ULL << (depth & 63);
		depth++;
		in_obj = true;
		p = skip_ws(p + 1, end);
		if (p < end && *p == '}') {
			p++;
			goto close;
		}
		goto key;
	case '[':
		if (depth >= room) {
			msg = msg_depth;
			goto too_deep;
		}
		if ((depth & 63) == 0)
			kinds[depth >> 6] = 0;
		kinds[depth >> 6] &= ~(1ULL << (depth & 63));
		depth++;
		in_obj = false;
		p = skip_ws(p + 1, end);
		if (p < end && *p == ']') {
			p++;
			goto close;
		}
		goto value;
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		p = scan_number(s, p, &integer);
		if (!p)
			return s->error;
		break;
	case 't': case 'f': case 'n':
		p = scan_literal(s, p);
		if (!p)
			return s->error;
		break;
	default:
		msg = msg_value;
		goto fail;
	}

after:
	if (depth == 0)
		goto done;
	if (p < end && (unsigned char)*p <= ' ')
		p = skip_ws(p, end);
	if (p == end)
		goto eof;
	if (*p == ',') {
		p++;
		if (p < end && (unsigned char)*p <= ' ')
			p = skip_ws(p, end);
		if (in_obj)
			goto key;
		goto value;
	}
	if (*p == (in_obj ? '}' : ']')) {
		p++;
		goto close;
	}
	msg = in_obj ? msg_obj_sep : msg_arr_sep;
	goto fail;

close:
	depth--;
	if (depth)
		in_obj = (kinds[(depth - 1) >> 6] >> ((depth - 1) & 63)) & 1;
	goto after;

key:
	if (p == end)
		goto eof;
	if (*p != '"') {
		msg = msg_key;
		goto fail;
	}
	p = scan_string(s, p + 1, &esc);
	if (!p)
		return s->error;
	p++;
	if (p < end && (unsigned char)*p <= ' ')
		p = skip_ws(p, end);
	if (p == end)
		goto eof;
	if (*p != ':') {
		msg = msg_colon;
		goto fail;
	}
	p++;
	if (p < end && (unsigned char)*p <= ' ')
		p = skip_ws(p, end);
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

/* Nearly every string in a review is ASCII: OR all bytes together (eight
 * at a time, the tail as one overlapping word) and test the high bits. */
static bool ascii_only(const unsigned char *p, size_t len)
{
	uint64_t acc = 0, x;
	size_t i;

	if (len < 8) {
		for (i = 0; i < len; i++)
			acc |= p[i];
		return !(acc & 0x80);
	}
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&x, p + i, 8);
		acc |= x;
	}
	memcpy(&x, p + len - 8, 8);
	acc |= x;
	return !(acc & HIGHS);
}

static bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len;

	if (ascii_only(p, len))
		return true;
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

int jscan_str_decode(const struct jscan_str *raw, struct arena *a, struct str *out)
{
	const char *p = raw->ptr, *end = raw->ptr + raw->len;
	char *dst, *d;

	/* Escapes are ASCII, so checking the raw bytes checks every byte
	 * that is copied; decoded escapes are valid UTF-8 by construction. */
	if (!utf8_valid(raw->ptr, raw->len))
		return -EINVAL;
	if (!raw->escaped) {
		out->ptr = raw->ptr;
		out->len = raw->len;
		return 0;
	}
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
