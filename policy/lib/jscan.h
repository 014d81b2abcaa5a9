/* jscan.h - a strict, validating pull scanner over JSON text.
 *
 * The request path decodes AdmissionReviews with this instead of building a
 * DOM: the decoder walks the text once, pulls the members it reads into the
 * typed model and skips everything else in place. Skipping still validates
 * (RFC 8259 grammar, escapes, control characters, number syntax, nesting
 * depth), so garbage anywhere in a body is an error, never ignored.
 *
 * Strings are returned as raw views between the quotes plus a flag telling
 * whether they hold escapes; jscan_str_decode() unescapes (into an arena, only
 * when needed) and checks UTF-8. Strings that are only skipped are checked for
 * grammar but not for UTF-8.
 *
 * Errors are sticky: after the first one every call returns it. The scanner
 * allocates nothing; one scanner per thread. */
#ifndef DRA_GUARD_JSCAN_H
#define DRA_GUARD_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>

#include "arena.h"
#include "str.h"

/* Default nesting limit (encoding/json's is 10000; objects here are shallow). */
#define JSCAN_DEFAULT_MAX_DEPTH 512
/* The largest max_depth honoured; larger values are clamped to it. The skip
 * keeps one bit per open container on the C stack, so this bounds that.
 * The API server decodes objects with encoding/json's scanner, which
 * refuses nesting deeper than 10000, so no object reaches a webhook deeper
 * than that; an AdmissionReview adds three levels around it. */
#define JSCAN_DEPTH_LIMIT 10240

enum jscan_type {
	JSCAN_EOF = 0,          /* no more input (only whitespace left) */
	JSCAN_OBJECT,
	JSCAN_ARRAY,
	JSCAN_STRING,
	JSCAN_NUMBER,
	JSCAN_TRUE,
	JSCAN_FALSE,
	JSCAN_NULL,
	JSCAN_INVALID,          /* the next byte cannot start a value */
};

struct jscan_str {
	const char *ptr;        /* raw bytes between the quotes */
	size_t len;
	bool escaped;           /* holds at least one backslash escape */
};

struct jscan {               /* fields are private; use the functions below */
	const char *base;
	const char *p;
	const char *end;
	unsigned depth;
	unsigned max_depth;
	bool after_open;        /* just entered a container: no comma expected */
	int error;              /* first error (negative errno), sticky */
	const char *err_at;     /* where it happened */
	const char *err_msg;    /* static text saying what was expected */
};

/* Start scanning text[0..len). max_depth 0 means JSCAN_DEFAULT_MAX_DEPTH;
 * a value may nest at most max_depth containers (max_depth 2 accepts [[1]]
 * and rejects [[[1]]] with -E2BIG). */
void jscan_init(struct jscan *s, const char *text, size_t len, unsigned max_depth);

/* Skip whitespace and tell what the next value is, without consuming it. */
enum jscan_type jscan_peek(struct jscan *s);

/* Consume '{'. 0, or -EINVAL when the next value is not an object, -E2BIG when
 * the nesting limit is reached. */
int jscan_object_enter(struct jscan *s);

/* Advance to the next member of the object being read: returns 1 with *key set
 * and the ':' consumed (the member's value must be consumed next), 0 when the
 * closing '}' was consumed, or a negative errno. */
int jscan_object_next(struct jscan *s, struct jscan_str *key);

/* Consume '['. 0, -EINVAL or -E2BIG as jscan_object_enter(). */
int jscan_array_enter(struct jscan *s);

/* 1 when another element follows (consume it next), 0 when the closing ']' was
 * consumed, or a negative errno. */
int jscan_array_next(struct jscan *s);

/* Consume a string. 0 or -EINVAL (not a string, bad escape, control byte). */
int jscan_string(struct jscan *s, struct jscan_str *out);

/* Consume a number; *text is its literal. 0 or -EINVAL. */
int jscan_number(struct jscan *s, struct str *text);

/* Consume a number that is a whole int64 written without fraction or exponent
 * (what encoding/json accepts for an int64 field). 0, -EINVAL or -ERANGE. */
int jscan_int64(struct jscan *s, int64_t *out);

/* Consume true or false. 0 or -EINVAL. */
int jscan_bool(struct jscan *s, bool *out);

/* Consume null if it is next: 1 when consumed, 0 when the next value is not
 * null (nothing consumed), or a negative errno. */
int jscan_null(struct jscan *s);

/* Consume one whole value of any type, validating it. raw, when not NULL,
 * gets the value's text (leading whitespace excluded). 0 or a negative errno. */
int jscan_skip(struct jscan *s, struct str *raw);

/* Consume the next value when its text is byte-identical to known: one
 * memcmp instead of a scan. known must be a whole object, array or string
 * that was validated (by this scanner or another with the same limits) at
 * the same nesting depth as the value here; a JSON container or string ends
 * where its text says, so equal bytes are the same value. Returns 1 when
 * consumed, 0 when the text differs or known is not a container or string
 * (nothing consumed), or the sticky error. */
int jscan_skip_same(struct jscan *s, struct str known);

/* 0 when only whitespace remains, else -EINVAL. */
int jscan_finish(struct jscan *s);

/* Record an error found by the caller (e.g. a type mismatch) at the current
 * position, unless one is already recorded. Returns the sticky error. */
int jscan_fail(struct jscan *s, int err, const char *msg);

/* The sticky error, 0 if none. */
int jscan_error(const struct jscan *s);

/* Describe the sticky error, with the byte found there: "expected ':' after
 * an object key, found '1' at line 3, column 14 (offset 52)" (lines and
 * columns count from 1, columns in bytes). Writes a NUL-terminated string of
 * at most n bytes. */
void jscan_describe(const struct jscan *s, char *buf, size_t n);

/* Byte offset of the current position, or of the error when there is one. */
size_t jscan_offset(const struct jscan *s);

/* The string's text with escapes resolved. Unescaped strings are returned as
 * they are (no copy); escaped ones are decoded into the arena. UTF-8 is
 * checked either way, and \u escapes of lone surrogates are rejected.
 * 0, -EINVAL, or the arena's error. */
int jscan_str_decode(const struct jscan_str *raw, struct arena *a, struct str *out);

/* jscan_str_decode() into dst[0..cap) instead of an arena, for callers
 * that hold no arena: an unescaped string is returned as it is (dst
 * unused), an escaped one is decoded into dst, which must hold
 * raw->len + 1 bytes (decoding never lengthens; a NUL follows). 0,
 * -EINVAL, or -E2BIG when an escaped string's raw->len + 1 exceeds cap. */
int jscan_str_decode_to(const struct jscan_str *raw, char *dst, size_t cap, struct str *out);

/* jscan_str_is() of any string, escaped or not; the comparison of an
 * escaped one is here. */
bool jscan_str_is_escaped(const struct jscan_str *raw, const char *lit);

/* True when the raw string, decoded, equals lit (a NUL-terminated ASCII key).
 * Fast path for member names: no allocation. Inline because decoders ask it
 * of every member name against each key they know: for a literal key the
 * length is a constant and a name of another length is refused at once. */
static inline bool jscan_str_is(const struct jscan_str *raw, const char *lit)
{
	size_t n;

	if (raw->escaped)
		return jscan_str_is_escaped(raw, lit);
	n = strlen(lit);
	return n == raw->len && memcmp(raw->ptr, lit, n) == 0;
}

#endif
