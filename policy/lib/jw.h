/* jw.h - the one JSON writer: a document written value by value onto a
 * capped buffer (buf.h), its object and array nesting tracked.
 *
 * The writer puts the commas and the colons; the caller says what comes
 * next (a key, a value, the start or end of a container). Misuse is an
 * error, never malformed output: a value where an object wants a key, a
 * key in an array, an end that does not match its start, a second value at
 * the top, nesting past JW_MAX_DEPTH.
 *
 * Errors are sticky: the first one (-E2BIG past the buffer's cap, -ENOMEM,
 * -EINVAL for misuse, -ELOOP past the depth, -EDOM for a number JSON cannot
 * hold) is kept, every call after it writes nothing and returns it, so a
 * report is written straight through and checked once with jw_finish().
 * The buffer then holds a prefix of the document that must be discarded.
 *
 * Strings are escaped here and nowhere else: control characters as \u00XX,
 * bytes that are not UTF-8 as U+FFFD, and <, > and & as Go's encoder does
 * (\u003c, lowercase hex), so the output is always valid JSON.
 * A writer made by jw_init_style() may instead indent its document and
 * escape only what JSON requires, as jansson writes a document with
 * JSON_INDENT(n) (dry-run's output was jansson's and stays byte for byte).
 * Pure; a writer belongs to one thread. */
#ifndef DRA_GUARD_JW_H
#define DRA_GUARD_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "str.h"

/* Containers open at once; a report is a few levels deep. */
#define JW_MAX_DEPTH 32
/* Spaces per level an indented writer may use. */
#define JW_MAX_INDENT 8
/* jw_init_style() flag: only what JSON requires escaped, as jansson writes
 * a string: ", \\ and the control characters (\b \f \n \r \t by their short
 * forms, the others as \u00XX in uppercase); <, > and & as they are. */
#define JW_PLAIN_ESCAPES 1u

struct jw {                    /* fields are private; use the functions below */
	struct buf *out;
	int err;
	uint32_t depth;
	bool done;                 /* the top-level value is written */
	bool want_value;           /* a key was written; its value is next */
	bool plain;                /* JW_PLAIN_ESCAPES */
	bool members;              /* jw_init_members(): the outer object is the caller's */
	uint8_t indent;            /* spaces per level; 0: compact */
	uint8_t level[JW_MAX_DEPTH];   /* per open container: JW_OBJECT | JW_ARRAY, | JW_SOME */
};

/* A writer appending one document to out (borrowed for the writer's life;
 * what out holds already is left before it). */
void jw_init(struct jw *w, struct buf *out);

/* The same, laid out for people: with indent > 0 every member and element
 * on its own line, indent spaces deeper than its container, ": " after a
 * key, and an empty container as {} or [] (jansson's JSON_INDENT(indent)
 * layout); flags JW_PLAIN_ESCAPES or 0. An indent past JW_MAX_INDENT or an
 * unknown flag makes the writer fail with -EINVAL. jw_raw() and jw_part()
 * text is copied as it is, not indented: give jw_json() text to lay out. */
void jw_init_style(struct jw *w, struct buf *out, unsigned indent, unsigned flags);

/* A writer of the members of an object whose braces are not its own
 * ("a":1,"b":[..] appended to out): keys and values as in an object; the
 * outer object cannot be ended. For a part kept apart and spliced into
 * another document later with jw_members(). */
void jw_init_members(struct jw *w, struct buf *out);

/* 0 when one whole document was written (for jw_init_members(): every
 * container closed, no key waiting for its value); else the first error, or -EINVAL
 * when no value or an unclosed container was written. */
int jw_finish(const struct jw *w);

/* A point to come back to: what the buffer held and the writer's state. */
struct jw_mark {
	size_t len;
	struct jw w;
};
void jw_mark(const struct jw *w, struct jw_mark *m);
/* Undo everything written since m, the sticky error included: for a part
 * that is dropped whole when it fails or runs past a budget (a log line's
 * field). m must come from this writer on this buffer, which must not have
 * been cut shorter than m since. */
void jw_rewind(struct jw *w, const struct jw_mark *m);

/* Containers. Each returns the sticky error (0 while all is well). */
int jw_object_begin(struct jw *w);
int jw_object_end(struct jw *w);
int jw_array_begin(struct jw *w);
int jw_array_end(struct jw *w);

/* The key of the next member of the open object; escaped as a string. */
int jw_key(struct jw *w, const char *key);
/* The same for a key that is a string of the data (a resource's name). */
int jw_key_str(struct jw *w, struct str key);

/* A key, or a string value, that is a string literal of the program and
 * needs no escape (printable ASCII other than " \\ < > &): copied without a
 * look at its bytes, for the fixed names of a document on the request path.
 * Only literals compile ("" lit ""), and test_source_rules.py checks each
 * one; the functions behind them are for these macros alone. */
#define JW_KEY(w, lit) jw_key_verbatim((w), "" lit "", sizeof(lit) - 1)
#define JW_LIT(w, lit) jw_string_verbatim((w), "" lit "", sizeof(lit) - 1)
int jw_key_verbatim(struct jw *w, const char *key, size_t n);
int jw_string_verbatim(struct jw *w, const char *s, size_t n);

/* Members already written by a jw_init_members() writer (json[0..n),
 * without braces; n == 0 adds nothing) spliced into the open object, the
 * comma before them put here. Copied as they are, not indented. */
int jw_members(struct jw *w, const char *json, size_t n);

/* Values. */
int jw_string(struct jw *w, const char *s, size_t n);
int jw_cstr(struct jw *w, const char *s);
/* The text between the quotes of a string as it stood in a JSON input
 * (already escaped, known to be valid there): copied between quotes as it
 * is, so a recorded field comes out byte for byte as it went in. */
int jw_raw_string(struct jw *w, struct str raw);
int jw_int(struct jw *w, int64_t v);
int jw_uint(struct jw *w, uint64_t v);
int jw_bool(struct jw *w, bool v);
int jw_null(struct jw *w);
/* v with a fixed number of decimals (0..9), as printf's %.Nf; -EDOM for
 * NaN and the infinities. */
int jw_fixed(struct jw *w, double v, int decimals);
/* A value that is JSON text already (a document another encoder wrote):
 * copied as it is; the caller vouches for it. */
int jw_raw(struct jw *w, const char *json, size_t n);

/* A value another encoder appends to the buffer itself (fn(ctx, out),
 * returning 0 or a negative errno that becomes the writer's error): no
 * copy of a large part (a ledger, a table). fn must append exactly one
 * JSON value. */
typedef int jw_part_fn(const void *ctx, struct buf *out);
int jw_part(struct jw *w, jw_part_fn *fn, const void *ctx);

/* One JSON value in json[0..n) (trusted text another encoder wrote, such
 * as a JSONPatch) written again value by value in this writer's layout and
 * escaping. Numbers come out as jansson writes what it read: a number
 * without fraction or exponent as an int64 (-ERANGE past it), any other
 * with 17 significant digits and at least one '.' or exponent. -EINVAL when
 * the text is not one valid JSON value, -ELOOP past the writer's depth. */
int jw_json(struct jw *w, const char *json, size_t n);

/* A key and its value in one call, for the members of a report. */
int jw_kstring(struct jw *w, const char *key, const char *s, size_t n);
int jw_kcstr(struct jw *w, const char *key, const char *s);
int jw_kint(struct jw *w, const char *key, int64_t v);
int jw_kuint(struct jw *w, const char *key, uint64_t v);
int jw_kbool(struct jw *w, const char *key, bool v);
int jw_kfixed(struct jw *w, const char *key, double v, int decimals);

#endif
