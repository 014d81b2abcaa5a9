/* decode.c - AdmissionReview and object JSON into the typed model: error
 * reports, with the JSON path, and the readers of single values.
 *
 * One pass with jscan. Most decoded levels are a table of fields (member
 * name, type, where it goes in the struct); decode_fields() walks the
 * object's members against the table, and members no rule reads are skipped
 * in place (and so still validated). Three things need care:
 *
 * - Order. The object's kind comes from request.kind, which the text may put
 *   after object and oldObject, and oldObject is cheapest once object is
 *   decoded. A value that cannot be decoded yet is skipped and a copy of the
 *   scanner standing at it (a mark) is kept; once the request object has been
 *   read it is decoded from the mark. The same goes for spec, status and data
 *   of a bare object whose apiVersion and kind come late.
 *
 * - Error classes. Text that is not JSON, or is not an AdmissionReview v1
 *   request, is -EBADMSG. An object that does not decode as the kind the
 *   review says is -EPROTO, but only once the rest of the review is known to
 *   be sound: such an error is held, the object is skipped from its mark, and
 *   the held error is returned at the end.
 *
 * - The oldObject shortcut. An UPDATE carries two nearly identical objects.
 *   A device of oldObject whose text equals, byte for byte, the text of the
 *   device at the same index of object is the same value: it is taken from
 *   object's decoded device after one memcmp (jscan_skip_same()).
 *
 * Null is accepted wherever a value is optional and means absent, as
 * encoding/json treats it; a null array element is a zero entry. Paths for
 * messages are a stack of (name, index) segments, turned into text only when
 * an error is reported.
 *
 * The module is split by what each file knows. This one: the error reports
 * (the path becomes text here) and the readers of single values.
 * decode_fields.c: reading a level by its table, lists and keyed maps.
 * decode_slice.c, decode_claim.c and decode_pod.c: the tables of each
 * kind. decode_review.c: the object around them, the review and the entry
 * points. decode_impl.h holds the context and the helpers every level
 * calls. */
#include "decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"

/* --- messages ------------------------------------------------------------ */

struct sbuf {
	char *p;
	size_t n;
	size_t len;
};

static void sb_vprintf(struct sbuf *b, const char *fmt, va_list ap)
{
	int w;

	if (b->len + 1 >= b->n)
		return;
	w = vsnprintf(b->p + b->len, b->n - b->len, fmt, ap);
	if (w < 0)
		return;
	b->len += (size_t)w;
	if (b->len >= b->n)
		b->len = b->n - 1;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

static bool plain_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* request.object.spec.devices[3].capacity["example.com/mem"] */
static void path_format(const struct dctx *d, struct sbuf *b)
{
	unsigned i, n = d->npath < PATH_SEGS ? d->npath : PATH_SEGS;

	for (i = 0; i < n; i++) {
		const struct seg *g = &d->path[i];
		int shown = g->len > MSG_KEY_MAX ? MSG_KEY_MAX : (int)g->len;

		if (!g->name)
			sb_printf(b, "[%u]", g->index);
		else if (plain_name(g->name, g->len))
			sb_printf(b, "%s%.*s", i ? "." : "", shown, g->name);
		else
			sb_printf(b, "[\"%.*s%s\"]", shown, g->name, g->len > MSG_KEY_MAX ? "..." : "");
	}
}

static int vreport(struct dctx *d, int code, size_t offset, const char *fmt, va_list ap)
{
	struct sbuf b = { d->err->msg, sizeof(d->err->msg), 0 };

	if (d->rc)
		return d->rc;
	d->err->msg[0] = '\0';
	path_format(d, &b);
	if (b.len)
		sb_printf(&b, ": ");
	sb_vprintf(&b, fmt, ap);
	d->err->offset = offset;
	d->rc = code;
	/* Keep the scanner from going on past the error. */
	jscan_fail(&d->s, -EINVAL, "decoding stopped");
	return code;
}

int decode_fail_at(struct dctx *d, int code, size_t offset, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vreport(d, code, offset, fmt, ap);
	va_end(ap);
	return rc;
}

int decode_fail(struct dctx *d, int code, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vreport(d, code, jscan_offset(&d->s), fmt, ap);
	va_end(ap);
	return rc;
}

int decode_scan_fail(struct dctx *d)
{
	char desc[256];

	if (d->rc)
		return d->rc;
	jscan_describe(&d->s, desc, sizeof(desc));
	return decode_fail_at(d, d->bad_json, jscan_offset(&d->s), "%s", desc);
}

int decode_mem_fail(struct dctx *d, int rc)
{
	return decode_fail(d, rc ? rc : -ENOMEM, "out of memory for this request (%zu of %zu bytes in use)",
			   arena_used(d->a), arena_cap(d->a));
}

int decode_limit_fail(struct dctx *d, const char *what, uint32_t limit)
{
	return decode_fail(d, d->schema_err, "more than %u %s", limit, what);
}

int decode_key_fail(struct dctx *d, const char *what, const struct jscan_str *key)
{
	int n = key->len > MSG_KEY_MAX ? MSG_KEY_MAX : (int)key->len;

	return decode_fail_at(d, d->schema_err, (size_t)(key->ptr - 1 - d->text), "duplicate %s \"%.*s\"",
			      what, n, key->ptr);
}

static const char *type_name(enum jscan_type t)
{
	switch (t) {
	case JSCAN_OBJECT: return "an object";
	case JSCAN_ARRAY: return "an array";
	case JSCAN_STRING: return "a string";
	case JSCAN_NUMBER: return "a number";
	case JSCAN_TRUE: return "true";
	case JSCAN_FALSE: return "false";
	case JSCAN_NULL: return "null";
	case JSCAN_EOF:
	case JSCAN_INVALID:
		break;
	}
	return "something else";
}

/* The value here is not what the schema says. When it is not even a JSON
 * value, the scanner's message is the better one. */
int decode_type_fail(struct dctx *d, const char *want)
{
	enum jscan_type t = jscan_peek(&d->s);

	if (t == JSCAN_EOF || t == JSCAN_INVALID) {
		jscan_skip(&d->s, NULL);
		return decode_scan_fail(d);
	}
	return decode_fail(d, d->schema_err, "expected %s, got %s", want, type_name(t));
}

/* --- values -------------------------------------------------------------- */

int decode_skip(struct dctx *d)
{
	return jscan_skip(&d->s, NULL) < 0 ? decode_scan_fail(d) : 0;
}

int decode_take_null(struct dctx *d)
{
	return jscan_null(&d->s) < 0 ? decode_scan_fail(d) : 0;
}

static int decode_js(struct dctx *d, const struct jscan_str *js, size_t at, struct str *out)
{
	int rc = jscan_str_decode(js, d->a, out);

	if (rc == -EINVAL)
		return decode_fail_at(d, d->bad_json, at,
				      "invalid UTF-8 or lone surrogate escape in a string");
	return rc ? decode_mem_fail(d, rc) : 0;
}

int decode_read_str_opt(struct dctx *d, struct str *out, bool *present)
{
	struct jscan_str js;
	size_t at;

	switch (jscan_peek(&d->s)) {
	case JSCAN_STRING:
		break;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "a string");
	}
	at = decode_here(d);
	if (jscan_string(&d->s, &js) < 0)
		return decode_scan_fail(d);
	if (present)
		*present = true;
	return decode_js(d, &js, at, out);
}

int decode_read_bool(struct dctx *d, bool *out)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		return jscan_bool(&d->s, out) < 0 ? decode_scan_fail(d) : 0;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "true or false");
	}
}

int decode_read_int64(struct dctx *d, int64_t *out, bool *present)
{
	struct str t = { NULL, 0 };  /* GCC 12 LTO: a false "may be used uninitialized" */
	size_t at, i;
	uint64_t v = 0, limit;
	bool neg;

	switch (jscan_peek(&d->s)) {
	case JSCAN_NUMBER:
		break;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an integer");
	}
	at = decode_here(d);
	if (jscan_number(&d->s, &t) < 0)
		return decode_scan_fail(d);
	neg = t.ptr[0] == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (i = neg; i < t.len; i++) {
		unsigned digit = (unsigned)(t.ptr[i] - '0');

		if (digit > 9 || v > (limit - digit) / 10)
			return decode_fail_at(d, d->schema_err, at, "expected an int64 integer, got %.*s",
					      (int)(t.len > 40 ? 40 : t.len), t.ptr);
		v = v * 10 + digit;
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	if (present)
		*present = true;
	return 0;
}

/* The cache slot of a quantity's text: its length and its first and last
 * bytes (at most 9 bytes read, whatever the length). */
static unsigned qcache_slot(const char *p, size_t len)
{
	uint32_t h = (uint32_t)len;
	size_t i, n = len < 8 ? len : 8;

	for (i = 0; i < n; i++)
		h = h * 31u + (unsigned char)p[i];
	if (len > 8)
		h = h * 31u + (unsigned char)p[len - 1];
	return (h ^ (h >> 7)) & (QCACHE - 1);
}

static void parse_quantity(struct dctx *d, struct quantity_field *q)
{
	struct qcache_entry *e = &d->qcache[qcache_slot(q->text.ptr, q->text.len)];

	if (e->text.len == q->text.len && e->text.len && decode_same_bytes(e->text.ptr, q->text.ptr, q->text.len)) {
		q->err = e->err;
		q->value = e->value;
		return;
	}
	q->err = quantity_parse(q->text.ptr, q->text.len, &q->value);
	e->text = q->text;
	e->err = q->err;
	e->value = q->value;
}

int decode_read_quantity(struct dctx *d, struct quantity_field *q)
{
	struct jscan_str js;
	size_t at;
	int rc;

	switch (jscan_peek(&d->s)) {
	case JSCAN_STRING:
		at = decode_here(d);
		if (jscan_string(&d->s, &js) < 0)
			return decode_scan_fail(d);
		/* Quantity.UnmarshalJSON parses the raw bytes between the quotes
		 * without unescaping them, so "\u0031" is not a quantity to the API
		 * server; keep the raw text so the rules see what it sees. */
		if (js.escaped) {
			q->text.ptr = js.ptr;
			q->text.len = js.len;
		} else if ((rc = decode_js(d, &js, at, &q->text)) != 0) {
			return rc;
		}
		break;
	case JSCAN_NUMBER:
		if (jscan_number(&d->s, &q->text) < 0)
			return decode_scan_fail(d);
		break;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "a quantity (a string or a number)");
	}
	q->present = true;
	parse_quantity(d, q);
	return 0;
}

int decode_read_raw_object(struct dctx *d, struct str *raw)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_OBJECT:
		return jscan_skip(&d->s, raw) < 0 ? decode_scan_fail(d) : 0;
	case JSCAN_NULL:
		raw->len = 0;
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an object");
	}
}

int decode_read_raw_array(struct dctx *d, struct str *raw)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_ARRAY:
		return jscan_skip(&d->s, raw) < 0 ? decode_scan_fail(d) : 0;
	case JSCAN_NULL:
		raw->len = 0;
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an array");
	}
}

int decode_read_present_object(struct dctx *d, bool *present)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_OBJECT:
		*present = true;
		return decode_skip(d);
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an object");
	}
}

int decode_enter_object(struct dctx *d)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_OBJECT:
		return jscan_object_enter(&d->s) < 0 ? decode_scan_fail(d) : 1;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an object");
	}
}

int decode_enter_array(struct dctx *d)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_ARRAY:
		return jscan_array_enter(&d->s) < 0 ? decode_scan_fail(d) : 1;
	case JSCAN_NULL:
		return decode_take_null(d);
	default:
		return decode_type_fail(d, "an array");
	}
}

int decode_read_key(struct dctx *d, const struct jscan_str *key, struct str *out)
{
	return decode_js(d, key, (size_t)(key->ptr - 1 - d->text), out);
}
