/* jscan.c - a strict, validating pull scanner over JSON text: the calls,
 * byte by byte, and the grammar of single tokens.
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
 * jscan_string_specials()); runs of whitespace sixteen bytes a step too.
 *
 * A block at a time, for jscan_skip() of an object or array: jscan_skip.c,
 * which also holds the byte-by-byte skip every error of a skip comes from.
 * Decoding strings and checking their UTF-8 is jscan_str.c. What the three
 * share is in jscan_impl.h.
 *
 * JSCAN_PORTABLE selects the portable code where SSE2 exists, so that the
 * tests run both; they must decide alike. */
#include "jscan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jscan_impl.h"

const char jscan_msg_eof[] = "unexpected end of input";
const char jscan_msg_eof_string[] = "unexpected end of input inside a string";
const char jscan_msg_value[] = "expected a value";
const char jscan_msg_key[] = "expected '\"' to begin an object key";
const char jscan_msg_colon[] = "expected ':' after an object key";
const char jscan_msg_obj_sep[] = "expected ',' or '}' after an object member";
const char jscan_msg_arr_sep[] = "expected ',' or ']' after an array element";
const char jscan_msg_escape[] = "invalid escape in string";
const char jscan_msg_hex[] = "expected four hex digits after \\u";
const char jscan_msg_control[] = "control character in string (must be escaped)";
const char jscan_msg_depth[] = "nesting too deep";
const char jscan_msg_minus[] = "invalid number: expected a digit after '-'";
const char jscan_msg_zero[] = "invalid number: leading zero";
const char jscan_msg_frac[] = "invalid number: expected a digit after '.'";
const char jscan_msg_exp[] = "invalid number: expected a digit in the exponent";
const char jscan_msg_literal[] = "invalid literal (expected true, false or null)";
const char jscan_msg_trailing[] = "expected end of input after the value";

static inline bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Out of line: compact JSON never gets here. Pretty-printed text has runs
 * of indentation, taken sixteen bytes a step with SSE2. */
NOINLINE const char *jscan_skip_ws_run(const char *p, const char *end)
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

NOINLINE const char *jscan_string_scan(const char *p, const char *end, bool *escaped,
				       struct fault *f)
{
	unsigned char c;

	for (;;) {
		const char *q = jscan_string_special(&p, end);

		if (q) {
			p = q;
		} else {
			/* Less than a block left: byte by byte. */
			while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
				p++;
			if (p == end)
				return jscan_fault(f, p, jscan_msg_eof_string);
		}
		c = (unsigned char)*p;
		if (c == '"')
			return p;
		if (c != '\\')
			return jscan_fault(f, p, jscan_msg_control);
		*escaped = true;
		if (end - p < 2)
			return jscan_fault(f, end, jscan_msg_eof_string);
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
					if (jscan_hexval((unsigned char)p[i]) < 0)
						return jscan_fault(f, p + i, jscan_msg_hex);
				return jscan_fault(f, end, jscan_msg_eof_string);
			}
			for (int i = 2; i < 6; i++)
				if (jscan_hexval((unsigned char)p[i]) < 0)
					return jscan_fault(f, p + i, jscan_msg_hex);
			p += 6;
			break;
		default:
			return jscan_fault(f, p + 1, jscan_msg_escape);
		}
	}
}

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

const char *jscan_number_end(const char *p, const char *end, bool *integer, struct fault *f)
{
	*integer = true;
	if (*p == '-') {
		p++;
		if (p == end || !is_digit((unsigned char)*p))
			return jscan_fault(f, p, p == end ? jscan_msg_eof : jscan_msg_minus);
	}
	if (*p == '0') {
		p++;
		if (p < end && is_digit((unsigned char)*p))
			return jscan_fault(f, p - 1, jscan_msg_zero);
	} else {
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && *p == '.') {
		*integer = false;
		p++;
		if (p == end || !is_digit((unsigned char)*p))
			return jscan_fault(f, p, p == end ? jscan_msg_eof : jscan_msg_frac);
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		*integer = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit((unsigned char)*p))
			return jscan_fault(f, p, p == end ? jscan_msg_eof : jscan_msg_exp);
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	return p;
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
	s->p = jscan_skip_ws(s->p, s->end);
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
		return jscan_set_error(s, -EINVAL, s->p, jscan_msg_eof);
	return jscan_set_error(s, -EINVAL, s->p, msg);
}

static NOINLINE int enter_precise(struct jscan *s, char open, const char *msg)
{
	if (s->error)
		return s->error;
	s->p = jscan_skip_ws(s->p, s->end);
	if (s->p == s->end || *s->p != open)
		return expect_fail(s, msg);
	if (s->depth >= s->max_depth)
		return jscan_set_error(s, -E2BIG, s->p, jscan_msg_depth);
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
		return jscan_set_error(s, -EINVAL, s->p, "not inside an object");
	p = jscan_skip_ws(s->p, end);
	if (p == end)
		return jscan_set_error(s, -EINVAL, p, jscan_msg_eof);
	if (*p == '}') {
		s->after_open = false;
		s->depth--;
		s->p = p + 1;
		return 0;
	}
	if (!s->after_open) {
		if (*p != ',')
			return jscan_set_error(s, -EINVAL, p, jscan_msg_obj_sep);
		p = jscan_skip_ws(p + 1, end);
		if (p == end)
			return jscan_set_error(s, -EINVAL, p, jscan_msg_eof);
	}
	s->after_open = false;
	if (*p != '"')
		return jscan_set_error(s, -EINVAL, p, jscan_msg_key);
	q = jscan_string_end(s, p, end, &esc);
	if (!q)
		return s->error;
	key->ptr = p + 1;
	key->len = (size_t)(q - (p + 1));
	key->escaped = esc;
	p = jscan_skip_ws(q + 1, end);
	if (p == end)
		return jscan_set_error(s, -EINVAL, p, jscan_msg_eof);
	if (*p != ':')
		return jscan_set_error(s, -EINVAL, p, jscan_msg_colon);
	s->p = p + 1;
	return 1;
}

static NOINLINE int array_next_precise(struct jscan *s)
{
	const char *p, *end = s->end;

	if (s->error)
		return s->error;
	if (s->depth == 0)
		return jscan_set_error(s, -EINVAL, s->p, "not inside an array");
	p = jscan_skip_ws(s->p, end);
	if (p == end)
		return jscan_set_error(s, -EINVAL, p, jscan_msg_eof);
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
		return jscan_set_error(s, -EINVAL, p, jscan_msg_arr_sep);
	s->p = p + 1;
	return 1;
}

static NOINLINE int string_precise(struct jscan *s, struct jscan_str *out)
{
	const char *p, *q;
	bool esc = false;

	if (s->error)
		return s->error;
	p = jscan_skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || *p != '"')
		return expect_fail(s, "expected a string");
	q = jscan_string_end(s, p, s->end, &esc);
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
	q = jscan_plain_string_end(p + 1, end);
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
		q = jscan_plain_string_end(p + 1, end);
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
	p = jscan_skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != '-' && !is_digit((unsigned char)*p)))
		return expect_fail(s, "expected a number");
	q = jscan_scan_number(s, p, &integer);
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
	p = jscan_skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != '-' && !is_digit((unsigned char)*p)))
		return expect_fail(s, "expected an integer");
	q = jscan_scan_number(s, p, &integer);
	if (!q)
		return s->error;
	if (!integer)
		return jscan_set_error(s, -EINVAL, p, "expected an integer without fraction or exponent");
	neg = *p == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (d = p + neg; d < q; d++) {
		unsigned digit = (unsigned)(*d - '0');

		if (v > (limit - digit) / 10)
			return jscan_set_error(s, -ERANGE, p, "integer out of range for int64");
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
	p = jscan_skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || (*p != 't' && *p != 'f'))
		return expect_fail(s, "expected true or false");
	q = jscan_scan_literal(s, p);
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
	p = jscan_skip_ws(s->p, s->end);
	s->p = p;
	if (p == s->end || *p != 'n')
		return 0;
	q = jscan_scan_literal(s, p);
	if (!q)
		return s->error;
	s->p = q;
	return 1;
}

int jscan_skip_same(struct jscan *s, struct str known)
{
	const char *p;

	if (s->error)
		return s->error;
	/* A number is not self-delimiting ("12" is a prefix of "123"). */
	if (known.len < 2 || (known.ptr[0] != '{' && known.ptr[0] != '[' && known.ptr[0] != '"'))
		return 0;
	p = jscan_skip_ws(s->p, s->end);
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
	s->p = jscan_skip_ws(s->p, s->end);
	if (s->depth != 0)
		return jscan_set_error(s, -EINVAL, s->p, "unclosed object or array");
	if (s->p != s->end)
		return jscan_set_error(s, -EINVAL, s->p, jscan_msg_trailing);
	return 0;
}

int jscan_fail(struct jscan *s, int err, const char *msg)
{
	return jscan_set_error(s, err, s->p, msg);
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
	if (s->err_msg == jscan_msg_depth)
		snprintf(buf, n, "nesting deeper than %u levels at line %lu, column %zu (offset %zu)",
			 s->max_depth, line, (size_t)(at - line_start) + 1, (size_t)(at - s->base));
	else if (s->err_msg == jscan_msg_eof || s->err_msg == jscan_msg_eof_string)
		snprintf(buf, n, "%s at line %lu, column %zu (offset %zu)", s->err_msg, line,
			 (size_t)(at - line_start) + 1, (size_t)(at - s->base));
	else
		snprintf(buf, n, "%s, found %s at line %lu, column %zu (offset %zu)",
			 s->err_msg ? s->err_msg : "invalid JSON", found, line,
			 (size_t)(at - line_start) + 1, (size_t)(at - s->base));
}
