/* jw.c - the one JSON writer (jw.h). */
#include "jw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"

enum {
	JW_OBJECT = 1,
	JW_ARRAY = 2,
	JW_SOME = 4,               /* the container has a member already: a comma first */
};

void jw_init(struct jw *w, struct buf *out)
{
	w->out = out;
	w->err = 0;
	w->depth = 0;
	w->done = false;
	w->want_value = false;
	w->plain = false;
	w->members = false;
	w->indent = 0;
}

void jw_init_members(struct jw *w, struct buf *out)
{
	jw_init(w, out);
	w->members = true;
	w->depth = 1;
	w->level[0] = JW_OBJECT;
}

void jw_init_style(struct jw *w, struct buf *out, unsigned indent, unsigned flags)
{
	jw_init(w, out);
	if (indent > JW_MAX_INDENT || (flags & ~JW_PLAIN_ESCAPES)) {
		w->err = -EINVAL;
		return;
	}
	w->indent = (uint8_t)indent;
	w->plain = flags & JW_PLAIN_ESCAPES;
}

int jw_finish(const struct jw *w)
{
	if (w->err)
		return w->err;
	if (w->members)
		return w->depth == 1 && !w->want_value ? 0 : -EINVAL;
	return w->done ? 0 : -EINVAL;
}

void jw_mark(const struct jw *w, struct jw_mark *m)
{
	m->len = buf_len(w->out);
	m->w = *w;
}

void jw_rewind(struct jw *w, const struct jw_mark *m)
{
	*w = m->w;
	buf_truncate(w->out, m->len);
}

static int fail(struct jw *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* What a byte needs: 0 nothing (copied as it is), 1 an escape (or, from
 * 0x80, a look at its UTF-8 sequence) in either form, 2 an escape only in
 * Go's form (<, > and &). One load a byte: the scan of clean text is most
 * of the time a JSON document takes. */
static const unsigned char escape_class[256] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

static bool verbatim(unsigned char c, bool html)
{
	return !(escape_class[c] & (html ? 3 : 1));
}

/* How many bytes at the start of u[0..n) go out as they are: four bytes
 * a step while they are all clean, as most text is. */
static size_t verbatim_prefix(const unsigned char *u, size_t n, bool html)
{
	unsigned mask = html ? 3 : 1;
	size_t i = 0;

	while (i + 4 <= n &&
	       !((escape_class[u[i]] | escape_class[u[i + 1]] | escape_class[u[i + 2]] | escape_class[u[i + 3]]) & mask))
		i += 4;
	while (i < n && !(escape_class[u[i]] & mask))
		i++;
	return i;
}

static bool all_verbatim(const char *s, size_t n, bool html)
{
	return verbatim_prefix((const unsigned char *)s, n, html) == n;
}

/* s as a JSON string literal, quotes included; on failure the buffer is
 * left as it was. The escaper of both literal forms: html adds <, > and &
 * to what is escaped, with \u00xx in lowercase for every control
 * character; without it \b and \f have their short forms and the rest
 * \u00XX in uppercase. */
static int add_json_str(struct buf *b, const char *s, size_t n, bool html)
{
	const char *hex = html ? "0123456789abcdef" : "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;
	size_t start_len = buf_len(b), i = 0, run;
	int rc;

	/* Most strings (names, UIDs, keys) need no escape: they go out with
	 * their quotes in one append. */
	i = verbatim_prefix(u, n, html);
	if (i == n) {
		char *p;

		rc = buf_extend(b, n + 2, &p);
		if (rc == 0) {
			p[0] = '"';
			if (n)                 /* an empty string's text may be NULL */
				memcpy(p + 1, s, n);
			p[n + 1] = '"';
		}
		return rc;
	}
	run = i;
	rc = buf_add_char(b, '"');
	while (rc == 0 && i < n) {
		unsigned char c = u[i];
		char esc[8];
		size_t elen = 0, seq;

		if (verbatim(c, html)) {
			run++;
			i++;
			continue;
		}
		if (run) {
			rc = buf_add(b, s + i - run, run);
			run = 0;
			if (rc)
				break;
		}
		if (c >= 0x80) {
			seq = utf8_seq_len(u + i, n - i);
			if (seq) {
				rc = buf_add(b, s + i, seq);
				i += seq;
			} else {
				rc = buf_add(b, "\\ufffd", 6);
				i++;
			}
			continue;
		}
		esc[elen++] = '\\';
		switch (c) {
		case '"': esc[elen++] = '"'; break;
		case '\\': esc[elen++] = '\\'; break;
		case '\n': esc[elen++] = 'n'; break;
		case '\r': esc[elen++] = 'r'; break;
		case '\t': esc[elen++] = 't'; break;
		case '\b':
		case '\f':
			if (!html) {
				esc[elen++] = c == '\b' ? 'b' : 'f';
				break;
			}
			/* fall through */
		default:
			esc[elen++] = 'u';
			esc[elen++] = '0';
			esc[elen++] = '0';
			esc[elen++] = hex[c >> 4];
			esc[elen++] = hex[c & 0xf];
			break;
		}
		rc = buf_add(b, esc, elen);
		i++;
	}
	if (rc == 0 && run)
		rc = buf_add(b, s + n - run, run);
	if (rc == 0)
		rc = buf_add_char(b, '"');
	if (rc)
		buf_truncate(b, start_len);
	return rc;
}

static int add_str(const struct jw *w, const char *s, size_t n)
{
	return add_json_str(w->out, s, n, !w->plain);
}

/* Before a member or an element: the comma after the one before it, and
 * in an indented document the line break and the indentation of depth. */
static int separate(struct jw *w, bool comma, uint32_t depth)
{
	static const char spaces[JW_MAX_INDENT * 4 + 1] = "                                ";
	size_t n = (size_t)depth * w->indent;
	int rc = comma ? buf_add_char(w->out, ',') : 0;

	if (rc || w->indent == 0)
		return rc;
	rc = buf_add_char(w->out, '\n');
	while (rc == 0 && n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;

		rc = buf_add(w->out, spaces, k);
		n -= k;
	}
	return rc;
}

/* Where a value may go: after a key, as an array's element, or alone at
 * the top; the comma before it is written here. */
static int value_slot(struct jw *w)
{
	uint8_t *lv;
	int rc;

	if (w->err)
		return w->err;
	if (w->depth == 0)
		return w->done ? fail(w, -EINVAL) : 0;
	lv = &w->level[w->depth - 1];
	if (*lv & JW_OBJECT) {
		if (!w->want_value)
			return fail(w, -EINVAL);
		w->want_value = false;
		return 0;
	}
	rc = separate(w, *lv & JW_SOME, w->depth);
	if (rc)
		return fail(w, rc);
	*lv |= JW_SOME;
	return 0;
}

/* A value was written whole (rc its append's result). */
static int value_done(struct jw *w, int rc)
{
	if (rc)
		return fail(w, rc);
	if (w->depth == 0)
		w->done = true;
	return 0;
}

static int begin(struct jw *w, uint8_t kind, char open)
{
	int rc = value_slot(w);

	if (rc)
		return rc;
	if (w->depth >= JW_MAX_DEPTH)
		return fail(w, -ELOOP);
	rc = buf_add_char(w->out, open);
	if (rc)
		return fail(w, rc);
	w->level[w->depth++] = kind;
	return 0;
}

static int end(struct jw *w, uint8_t kind, char close)
{
	int rc = 0;

	if (w->err)
		return w->err;
	if (w->depth == 0 || !(w->level[w->depth - 1] & kind) || w->want_value || (w->members && w->depth == 1))
		return fail(w, -EINVAL);
	w->depth--;
	if (w->level[w->depth] & JW_SOME)
		rc = separate(w, false, w->depth);
	return value_done(w, rc ? rc : buf_add_char(w->out, close));
}

int jw_object_begin(struct jw *w)
{
	return begin(w, JW_OBJECT, '{');
}

int jw_object_end(struct jw *w)
{
	return end(w, JW_OBJECT, '}');
}

int jw_array_begin(struct jw *w)
{
	return begin(w, JW_ARRAY, '[');
}

int jw_array_end(struct jw *w)
{
	return end(w, JW_ARRAY, ']');
}

/* 0 when the next thing the writer takes is an object's member (a key):
 * else its sticky error, or -EINVAL (kept) for a key where none fits. */
static int member_next(struct jw *w)
{
	if (w->err)
		return w->err;
	if (w->depth == 0 || w->want_value || !(w->level[w->depth - 1] & JW_OBJECT))
		return fail(w, -EINVAL);
	return 0;
}

/* clean: the caller knows the key needs no escape (a JW_KEY() literal). */
static int key_n(struct jw *w, const char *key, size_t n, bool clean)
{
	uint8_t *lv;
	int rc;

	rc = member_next(w);
	if (rc)
		return rc;
	lv = &w->level[w->depth - 1];
	if (w->indent == 0 && (clean || all_verbatim(key, n, !w->plain))) {
		/* a compact writer's plain key: comma, key and colon in one append */
		bool comma = *lv & JW_SOME;
		char *p;

		rc = buf_extend(w->out, comma + n + 3, &p);
		if (rc)
			return fail(w, rc);
		if (comma)
			*p++ = ',';
		p[0] = '"';
		if (n)                     /* an empty key's text may be NULL */
			memcpy(p + 1, key, n);
		p[n + 1] = '"';
		p[n + 2] = ':';
		*lv |= JW_SOME;
		w->want_value = true;
		return 0;
	}
	rc = separate(w, *lv & JW_SOME, w->depth);
	if (rc == 0)
		rc = add_str(w, key, n);
	if (rc == 0)
		rc = w->indent ? buf_add(w->out, ": ", 2) : buf_add_char(w->out, ':');
	if (rc)
		return fail(w, rc);
	*lv |= JW_SOME;
	w->want_value = true;
	return 0;
}

int jw_key(struct jw *w, const char *key)
{
	return key_n(w, key, strlen(key), false);
}

int jw_key_str(struct jw *w, struct str key)
{
	return key_n(w, key.ptr ? key.ptr : "", key.len, false);
}

int jw_key_verbatim(struct jw *w, const char *key, size_t n)
{
	return key_n(w, key, n, true);
}

int jw_string_verbatim(struct jw *w, const char *s, size_t n)
{
	int rc = value_slot(w);
	char *p;

	if (rc)
		return rc;
	rc = buf_extend(w->out, n + 2, &p);
	if (rc == 0) {
		p[0] = '"';
		if (n)
			memcpy(p + 1, s, n);
		p[n + 1] = '"';
	}
	return value_done(w, rc);
}

int jw_members(struct jw *w, const char *json, size_t n)
{
	uint8_t *lv;
	int rc;

	rc = member_next(w);
	if (rc)
		return rc;
	if (n == 0)
		return 0;
	lv = &w->level[w->depth - 1];
	rc = separate(w, *lv & JW_SOME, w->depth);
	if (rc == 0)
		rc = buf_add(w->out, json, n);
	if (rc)
		return fail(w, rc);
	*lv |= JW_SOME;
	return 0;
}

int jw_string(struct jw *w, const char *s, size_t n)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, add_str(w, s, n));
}

int jw_cstr(struct jw *w, const char *s)
{
	return jw_string(w, s, strlen(s));
}

int jw_raw_string(struct jw *w, struct str raw)
{
	int rc = value_slot(w);

	if (rc)
		return rc;
	rc = buf_add_char(w->out, '"');
	if (rc == 0)
		rc = buf_add(w->out, raw.ptr, raw.len);
	if (rc == 0)
		rc = buf_add_char(w->out, '"');
	return value_done(w, rc);
}

/* v in decimal, with a '-' before it when neg, as printf's %d writes it. */
static int add_decimal(struct buf *out, bool neg, uint64_t v)
{
	char t[24], *p = t + sizeof(t);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		*--p = '-';
	return buf_add(out, p, (size_t)(t + sizeof(t) - p));
}

int jw_int(struct jw *w, int64_t v)
{
	int rc = value_slot(w);

	/* the magnitude of INT64_MIN as unsigned: -(v + 1) + 1 */
	return rc ? rc : value_done(w, add_decimal(w->out, v < 0, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v));
}

int jw_uint(struct jw *w, uint64_t v)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, add_decimal(w->out, false, v));
}

int jw_bool(struct jw *w, bool v)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, v ? buf_add(w->out, "true", 4) : buf_add(w->out, "false", 5));
}

int jw_null(struct jw *w)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_add(w->out, "null", 4));
}

int jw_fixed(struct jw *w, double v, int decimals)
{
	int rc;

	if (w->err)
		return w->err;
	if (!isfinite(v))
		return fail(w, -EDOM);
	if (decimals < 0 || decimals > 9)
		return fail(w, -EINVAL);
	rc = value_slot(w);
	return rc ? rc : value_done(w, buf_printf(w->out, "%.*f", decimals, v));
}

int jw_raw(struct jw *w, const char *json, size_t n)
{
	int rc = value_slot(w);

	if (rc)
		return rc;
	if (n == 0)
		return fail(w, -EINVAL);
	return value_done(w, buf_add(w->out, json, n));
}

int jw_part(struct jw *w, jw_part_fn *fn, const void *ctx)
{
	size_t before = buf_len(w->out);
	int rc = value_slot(w);

	if (rc)
		return rc;
	rc = fn(ctx, w->out);
	if (rc == 0 && buf_len(w->out) == before)
		rc = -EINVAL;           /* nothing appended: no value */
	return value_done(w, rc);
}

/* A number's literal as jansson writes the value it reads from it. */
static int json_number(struct jw *w, struct str lit)
{
	char t[64], *end, *e;
	int rc;

	if (lit.len >= sizeof(t))
		return fail(w, -ERANGE);
	if (lit.len)
		memcpy(t, lit.ptr, lit.len);
	t[lit.len] = '\0';
	errno = 0;
	if (!memchr(lit.ptr, '.', lit.len) && !memchr(lit.ptr, 'e', lit.len) && !memchr(lit.ptr, 'E', lit.len)) {
		long long v = strtoll(t, &end, 10);

		if (errno || *end)
			return fail(w, -ERANGE);
		return jw_int(w, v);
	} else {
		double v = strtod(t, &end);

		if (errno || *end || !isfinite(v))
			return fail(w, -ERANGE);
		snprintf(t, sizeof(t), "%.17g", v);
	}
	e = strchr(t, 'e');
	if (!e && !strchr(t, '.'))
		strcat(t, ".0");
	if (e) {
		/* 1e+20 as 1e20, 1e-05 as 1e-5 */
		char *from = e + 1, *to = e + 1;

		if (*from == '-')
			from++, to++;
		else if (*from == '+')
			from++;
		while (*from == '0' && from[1])
			from++;
		memmove(to, from, strlen(from) + 1);
	}
	rc = value_slot(w);
	return rc ? rc : value_done(w, buf_add_cstr(w->out, t));
}

/* The text scratch holds room for: one more than the whole JSON text, so
 * any string in it decodes there. */
struct scratch {
	char *p;
	size_t cap;
};

/* A string of the text, unescaped (into the scratch when it holds escapes). */
static int json_text_str(struct jw *w, const struct jscan_str *raw, const struct scratch *sc, struct str *out)
{
	int rc = jscan_str_decode_to(raw, sc->p, sc->cap, out);

	return rc ? fail(w, rc) : 0;
}

static int json_value(struct jw *w, struct jscan *s, const struct scratch *scratch)
{
	struct jscan_str raw;
	struct str text;
	bool b;
	int rc;

	switch (jscan_peek(s)) {
	case JSCAN_OBJECT:
		if ((rc = jscan_object_enter(s)) || (rc = jw_object_begin(w)))
			break;
		while ((rc = jscan_object_next(s, &raw)) == 1) {
			if ((rc = json_text_str(w, &raw, scratch, &text)) || (rc = key_n(w, text.ptr, text.len, false)) ||
			    (rc = json_value(w, s, scratch)))
				break;
		}
		if (rc == 0)
			rc = jw_object_end(w);
		break;
	case JSCAN_ARRAY:
		if ((rc = jscan_array_enter(s)) || (rc = jw_array_begin(w)))
			break;
		while ((rc = jscan_array_next(s)) == 1) {
			if ((rc = json_value(w, s, scratch)))
				break;
		}
		if (rc == 0)
			rc = jw_array_end(w);
		break;
	case JSCAN_STRING:
		if ((rc = jscan_string(s, &raw)) == 0 && (rc = json_text_str(w, &raw, scratch, &text)) == 0)
			rc = jw_string(w, text.ptr, text.len);
		break;
	case JSCAN_NUMBER:
		if ((rc = jscan_number(s, &text)) == 0)
			rc = json_number(w, text);
		break;
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		if ((rc = jscan_bool(s, &b)) == 0)
			rc = jw_bool(w, b);
		break;
	case JSCAN_NULL:
		rc = jscan_null(s) == 1 ? jw_null(w) : -EINVAL;
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc == -E2BIG && jscan_error(s))
		rc = -ELOOP;               /* the scanner's depth: the writer's */
	return rc ? fail(w, rc) : 0;
}

int jw_json(struct jw *w, const char *json, size_t n)
{
	struct jscan s;
	struct scratch sc = { NULL, n + 1 };
	int rc;

	if (w->err)
		return w->err;
	if (w->depth >= JW_MAX_DEPTH)
		return fail(w, -ELOOP);
	sc.p = malloc(sc.cap);
	if (!sc.p)
		return fail(w, -ENOMEM);
	jscan_init(&s, json, n, JW_MAX_DEPTH - w->depth);
	rc = json_value(w, &s, &sc);
	if (rc == 0 && jscan_finish(&s))
		rc = fail(w, -EINVAL);
	free(sc.p);
	return rc;
}

int jw_kstring(struct jw *w, const char *key, const char *s, size_t n)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_string(w, s, n);
}

int jw_kcstr(struct jw *w, const char *key, const char *s)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_cstr(w, s);
}

int jw_kint(struct jw *w, const char *key, int64_t v)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_int(w, v);
}

int jw_kuint(struct jw *w, const char *key, uint64_t v)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_uint(w, v);
}

int jw_kbool(struct jw *w, const char *key, bool v)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_bool(w, v);
}

int jw_kfixed(struct jw *w, const char *key, double v, int decimals)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_fixed(w, v, decimals);
}
