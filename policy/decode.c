/* decode.c - AdmissionReview and object JSON into the typed model.
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
 * an error is reported. */
#include "decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "jscan.h"

#define PATH_SEGS 24
#define MSG_KEY_MAX 64      /* longest map key quoted in a message */

struct request_state;

/* Recently parsed quantity texts: a slice repeats the same few ("1",
 * "8Gi") on every device, and parsing is pure, so equal text gives an
 * equal result. */
#define QCACHE 16

struct qcache_entry {
	struct str text;
	int err;
	struct quantity value;
};

struct seg {
	const char *name;   /* NULL for an array index */
	size_t len;
	uint32_t index;
};

struct dctx {
	struct jscan s;
	const char *text;
	const struct decode_limits *lim;
	struct arena *a;
	struct decode_error *err;
	int bad_json;               /* code for text that is not JSON */
	int schema_err;             /* code for a wrong type or shape here */
	int rc;                     /* the error in err, 0 if none */
	int held_rc;                /* an object's -EPROTO, reported last */
	struct decode_error held;
	enum api_version version;   /* of the object being decoded */
	const struct resource_slice *ref;  /* object's slice, while oldObject is decoded */
	struct request_state *req;  /* while the request object is read */
	struct str req_group;       /* request.kind, for messages */
	struct str req_version;
	unsigned qnext;             /* next qcache slot to replace */
	struct qcache_entry qcache[QCACHE];
	unsigned npath;
	struct seg path[PATH_SEGS];
};

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

static inline void path_push(struct dctx *d, const char *name, size_t len)
{
	if (d->npath < PATH_SEGS) {
		d->path[d->npath].name = name;
		d->path[d->npath].len = len;
	}
	d->npath++;
}

static inline void path_push_index(struct dctx *d)
{
	if (d->npath < PATH_SEGS) {
		d->path[d->npath].name = NULL;
		d->path[d->npath].index = 0;
	}
	d->npath++;
}

static inline void path_set_index(struct dctx *d, uint32_t i)
{
	if (d->npath - 1 < PATH_SEGS)
		d->path[d->npath - 1].index = i;
}

static inline void path_pop(struct dctx *d)
{
	d->npath--;
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

static int fail_at(struct dctx *d, int code, size_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail_at(struct dctx *d, int code, size_t offset, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vreport(d, code, offset, fmt, ap);
	va_end(ap);
	return rc;
}

static int fail(struct dctx *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct dctx *d, int code, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vreport(d, code, jscan_offset(&d->s), fmt, ap);
	va_end(ap);
	return rc;
}

/* The scanner's own error: the text is not JSON. */
static int scan_fail(struct dctx *d)
{
	char desc[256];

	if (d->rc)
		return d->rc;
	jscan_describe(&d->s, desc, sizeof(desc));
	return fail_at(d, d->bad_json, jscan_offset(&d->s), "%s", desc);
}

static int mem_fail(struct dctx *d, int rc)
{
	return fail(d, rc ? rc : -ENOMEM, "out of memory for this request (%zu of %zu bytes in use)",
		    arena_used(d->a), arena_cap(d->a));
}

static int limit_fail(struct dctx *d, const char *what, uint32_t limit)
{
	return fail(d, d->schema_err, "more than %u %s", limit, what);
}

static int key_fail(struct dctx *d, const char *what, const struct jscan_str *key)
{
	int n = key->len > MSG_KEY_MAX ? MSG_KEY_MAX : (int)key->len;

	return fail_at(d, d->schema_err, (size_t)(key->ptr - 1 - d->text), "duplicate %s \"%.*s\"",
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
static int type_fail(struct dctx *d, const char *want)
{
	enum jscan_type t = jscan_peek(&d->s);

	if (t == JSCAN_EOF || t == JSCAN_INVALID) {
		jscan_skip(&d->s, NULL);
		return scan_fail(d);
	}
	return fail(d, d->schema_err, "expected %s, got %s", want, type_name(t));
}

/* --- values -------------------------------------------------------------- */

/* Offset of the next value (after jscan_peek()) or of the current position. */
static inline size_t here(const struct dctx *d)
{
	return jscan_offset(&d->s);
}

static int skip(struct dctx *d)
{
	return jscan_skip(&d->s, NULL) < 0 ? scan_fail(d) : 0;
}

static int take_null(struct dctx *d)
{
	return jscan_null(&d->s) < 0 ? scan_fail(d) : 0;
}

static int decode_js(struct dctx *d, const struct jscan_str *js, size_t at, struct str *out)
{
	int rc = jscan_str_decode(js, d->a, out);

	if (rc == -EINVAL)
		return fail_at(d, d->bad_json, at, "invalid UTF-8 or lone surrogate escape in a string");
	return rc ? mem_fail(d, rc) : 0;
}

/* A string; null leaves it absent. *present (optional) tells. */
static int read_str_opt(struct dctx *d, struct str *out, bool *present)
{
	struct jscan_str js;
	size_t at;

	switch (jscan_peek(&d->s)) {
	case JSCAN_STRING:
		break;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "a string");
	}
	at = here(d);
	if (jscan_string(&d->s, &js) < 0)
		return scan_fail(d);
	if (present)
		*present = true;
	return decode_js(d, &js, at, out);
}

static int read_str(struct dctx *d, struct str *out)
{
	return read_str_opt(d, out, NULL);
}

static int read_bool(struct dctx *d, bool *out)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		return jscan_bool(&d->s, out) < 0 ? scan_fail(d) : 0;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "true or false");
	}
}

/* An int64 written as a JSON integer (as encoding/json wants it). */
static int read_int64(struct dctx *d, int64_t *out, bool *present)
{
	struct str t;
	size_t at, i;
	uint64_t v = 0, limit;
	bool neg;

	switch (jscan_peek(&d->s)) {
	case JSCAN_NUMBER:
		break;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "an integer");
	}
	at = here(d);
	if (jscan_number(&d->s, &t) < 0)
		return scan_fail(d);
	neg = t.ptr[0] == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (i = neg; i < t.len; i++) {
		unsigned digit = (unsigned)(t.ptr[i] - '0');

		if (digit > 9 || v > (limit - digit) / 10)
			return fail_at(d, d->schema_err, at, "expected an int64 integer, got %.*s",
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

static void parse_quantity(struct dctx *d, struct quantity_field *q)
{
	struct qcache_entry *e;
	unsigned i;

	for (i = 0; i < QCACHE; i++) {
		e = &d->qcache[i];
		if (e->text.len == q->text.len && e->text.len &&
		    e->text.ptr[0] == q->text.ptr[0] &&
		    memcmp(e->text.ptr, q->text.ptr, q->text.len) == 0) {
			q->err = e->err;
			q->value = e->value;
			return;
		}
	}
	q->err = quantity_parse(q->text.ptr, q->text.len, &q->value);
	e = &d->qcache[d->qnext++ % QCACHE];
	e->text = q->text;
	e->err = q->err;
	e->value = q->value;
}

/* A Quantity: a JSON string or a bare number. A text that does not parse is
 * kept with its error for the rules to report; another JSON type is a
 * schema error. */
static int read_quantity(struct dctx *d, struct quantity_field *q)
{
	struct jscan_str js;
	size_t at;
	int rc;

	switch (jscan_peek(&d->s)) {
	case JSCAN_STRING:
		at = here(d);
		if (jscan_string(&d->s, &js) < 0)
			return scan_fail(d);
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
			return scan_fail(d);
		break;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "a quantity (a string or a number)");
	}
	q->present = true;
	parse_quantity(d, q);
	return 0;
}

/* An object whose content no rule reads: only whether it is there. */
static int read_present_object(struct dctx *d, bool *present)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_OBJECT:
		*present = true;
		return skip(d);
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "an object");
	}
}

/* Enter the object (array) here: 1 entered, 0 it was null (consumed), or
 * an error. */
static int enter_object(struct dctx *d)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_OBJECT:
		return jscan_object_enter(&d->s) < 0 ? scan_fail(d) : 1;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "an object");
	}
}

static int enter_array(struct dctx *d)
{
	switch (jscan_peek(&d->s)) {
	case JSCAN_ARRAY:
		return jscan_array_enter(&d->s) < 0 ? scan_fail(d) : 1;
	case JSCAN_NULL:
		return take_null(d);
	default:
		return type_fail(d, "an array");
	}
}

static int next_elem(struct dctx *d)
{
	int r = jscan_array_next(&d->s);

	return r < 0 ? scan_fail(d) : r;
}

static int next_key(struct dctx *d, struct jscan_str *key)
{
	int r = jscan_object_next(&d->s, key);

	return r < 0 ? scan_fail(d) : r;
}

/* A map key, decoded. */
static int read_key(struct dctx *d, const struct jscan_str *key, struct str *out)
{
	return decode_js(d, key, (size_t)(key->ptr - 1 - d->text), out);
}

/* Room for element n of an arena array of size-byte elements. Arrays grow
 * by doubling from 4, so the capacity follows from n: it is full when n is
 * 4 or more and a power of two. NULL on failure (reported). */
static void *reserve(struct dctx *d, void *arr, uint32_t n, size_t size)
{
	void *p;

	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return arr;
	p = arena_grow(d->a, arr, (size_t)n * size, (size_t)(n ? 2 * n : 4) * size);
	if (!p)
		mem_fail(d, arena_error(d->a));
	return p;
}

/* --- tables of fields ---------------------------------------------------- */

enum field_type {
	F_STR,          /* struct str; flag: bool set when a string was there */
	F_BOOL,         /* bool */
	F_INT64,        /* int64_t; flag: bool set when a number was there */
	F_QUANTITY,     /* struct quantity_field */
	F_PRESENT,      /* an object no rule reads; flag: bool set when not null */
	F_CALL,         /* call(d, obj) decodes the value */
};

#define NO_FLAG ((size_t)-1)

struct field {
	const char *name;
	size_t len;
	enum field_type type;
	size_t off;
	size_t flag;
	int (*call)(struct dctx *d, void *obj);
};

#define FSTR(n, T, m) { n, sizeof(n) - 1, F_STR, offsetof(T, m), NO_FLAG, NULL }
#define FSTRF(n, T, m, f) { n, sizeof(n) - 1, F_STR, offsetof(T, m), offsetof(T, f), NULL }
#define FBOOL(n, T, m) { n, sizeof(n) - 1, F_BOOL, offsetof(T, m), NO_FLAG, NULL }
#define FINT(n, T, m) { n, sizeof(n) - 1, F_INT64, offsetof(T, m), NO_FLAG, NULL }
#define FINTF(n, T, m, f) { n, sizeof(n) - 1, F_INT64, offsetof(T, m), offsetof(T, f), NULL }
#define FQTY(n, T, m) { n, sizeof(n) - 1, F_QUANTITY, offsetof(T, m), NO_FLAG, NULL }
#define FPRESENT(n, T, f) { n, sizeof(n) - 1, F_PRESENT, 0, offsetof(T, f), NULL }
#define FCALL(n, fn) { n, sizeof(n) - 1, F_CALL, 0, NO_FLAG, fn }
#define FNAME(n) { n, sizeof(n) - 1, F_CALL, 0, NO_FLAG, NULL }
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int lookup(struct dctx *d, const struct jscan_str *key, const struct field *f, int n)
{
	const char *p = key->ptr;
	size_t len = key->len;
	struct str dec;
	int i;

	if (key->escaped) {
		/* Rare; a key that does not decode matches nothing. */
		if (jscan_str_decode(key, d->a, &dec) != 0)
			return -1;
		p = dec.ptr;
		len = dec.len;
	}
	/* Lengths and first bytes rule out nearly every name without a call. */
	for (i = 0; i < n; i++)
		if (f[i].len == len && f[i].name[0] == p[0] && memcmp(f[i].name, p, len) == 0)
			return i;
	return -1;
}

#define NEXT_UNKNOWN 2

/* The next member of the object being read that f names: returns 1 with
 * *id set and its name pushed on the path (pop it after the value), 0 after
 * the closing brace, or an error. A member named twice is an error. Other
 * members are skipped, or, when unknown is not NULL, returned as
 * NEXT_UNKNOWN with the key in *unknown and the value not consumed. */
static int next_member(struct dctx *d, const struct field *f, int n, uint32_t *seen, int *id,
		       struct jscan_str *unknown)
{
	struct jscan_str key;
	int r, i;

	for (;;) {
		r = jscan_object_next(&d->s, &key);
		if (r <= 0)
			return r < 0 ? scan_fail(d) : 0;
		i = lookup(d, &key, f, n);
		if (i >= 0)
			break;
		if (unknown) {
			*unknown = key;
			return NEXT_UNKNOWN;
		}
		path_push(d, key.ptr, key.len);
		if (jscan_skip(&d->s, NULL) < 0)
			return scan_fail(d);
		path_pop(d);
	}
	if (*seen & (1u << i))
		return key_fail(d, "member", &key);
	*seen |= 1u << i;
	path_push(d, f[i].name, f[i].len);
	*id = i;
	return 1;
}

static bool *flag_of(void *obj, const struct field *f)
{
	return f->flag == NO_FLAG ? NULL : (bool *)((char *)obj + f->flag);
}

static int read_field(struct dctx *d, const struct field *f, void *obj)
{
	void *dst = (char *)obj + f->off;

	switch (f->type) {
	case F_STR: return read_str_opt(d, dst, flag_of(obj, f));
	case F_BOOL: return read_bool(d, dst);
	case F_INT64: return read_int64(d, dst, flag_of(obj, f));
	case F_QUANTITY: return read_quantity(d, dst);
	case F_PRESENT: return read_present_object(d, flag_of(obj, f));
	case F_CALL: break;
	}
	return f->call ? f->call(d, obj) : skip(d);
}

/* The first member a schema does not have, as prefix + name. */
struct unknown_note {
	struct str *out;
	const char *prefix;
};

static int note_unknown(struct dctx *d, const struct unknown_note *u, const struct jscan_str *key)
{
	struct str k = { NULL, 0 };
	int rc;

	if (u->out->len == 0) {
		if ((rc = read_key(d, key, &k)) != 0)
			return rc;
		if (*u->prefix) {
			if ((rc = arena_printf(d->a, u->out, "%s%.*s", u->prefix, (int)k.len, k.ptr)) != 0)
				return mem_fail(d, rc);
		} else {
			*u->out = k;
		}
		/* An empty key is still an unknown member; show it as "". */
		if (u->out->len == 0)
			*u->out = STR_LIT("\"\"");
	}
	path_push(d, key->ptr, key->len);
	if ((rc = skip(d)) != 0)
		return rc;
	path_pop(d);
	return 0;
}

/* Read the object here into obj as the table says; null is an absent
 * object. Members not in the table are skipped, or noted in *unknown. */
static int decode_fields(struct dctx *d, const struct field *f, int n, void *obj,
			 const struct unknown_note *unknown)
{
	struct jscan_str key;
	uint32_t seen = 0;
	int r, rc, id = 0;

	if ((r = enter_object(d)) <= 0)
		return r;
	while ((r = next_member(d, f, n, &seen, &id, unknown ? &key : NULL)) != 0) {
		if (r < 0)
			return r;
		if (r == NEXT_UNKNOWN) {
			if ((rc = note_unknown(d, unknown, &key)) != 0)
				return rc;
			continue;
		}
		if ((rc = read_field(d, &f[id], obj)) != 0)
			return rc;
		path_pop(d);
	}
	return 0;
}

/* The array here into a growing arena array (*arr, *n) of size-byte
 * elements, each zeroed and then filled by elem. */
static int decode_list(struct dctx *d, void **arr, uint32_t *n, size_t size, const char *what,
		       int (*elem)(struct dctx *d, void *e))
{
	int r, rc;

	if ((r = enter_array(d)) <= 0)
		return r;
	path_push_index(d);
	while ((r = next_elem(d)) == 1) {
		void *e;

		path_set_index(d, *n);
		if (*n >= d->lim->max_list)
			return limit_fail(d, what, d->lim->max_list);
		if (!(*arr = reserve(d, *arr, *n, size)))
			return d->rc;
		e = (char *)*arr + (size_t)*n * size;
		memset(e, 0, size);
		if ((rc = elem(d, e)) != 0)
			return rc;
		(*n)++;
	}
	path_pop(d);
	return r;
}

/* A list of strings. */
static int read_str_elem(struct dctx *d, void *e)
{
	return read_str(d, e);
}

static int read_str_list(struct dctx *d, struct str **out, uint32_t *n)
{
	void *arr = *out;
	int rc = decode_list(d, &arr, n, sizeof(**out), "entries", read_str_elem);

	*out = arr;
	return rc;
}

/* Start element n of an arena array of size-byte elements keyed by a map
 * key (a struct str at key_off in each element): check the cap, decode the
 * key into *k, refuse one already among elements [from, n), and make room.
 * *grown gets the array (moved or not); element n is the caller's to fill
 * (a constant-size initialisation there is far cheaper than a memset of a
 * size known only here). 0 or an error (reported). */
static int map_entry(struct dctx *d, const struct jscan_str *key, void *arr, uint32_t from, uint32_t n,
		     size_t size, size_t key_off, const char *what, struct str *k, void **grown)
{
	uint32_t i;
	int rc;

	if (n - from >= d->lim->max_map_entries)
		return limit_fail(d, what, d->lim->max_map_entries);
	if ((rc = read_key(d, key, k)) != 0)
		return rc;
	for (i = from; i < n; i++) {
		struct str seen;

		memcpy(&seen, (const char *)arr + i * size + key_off, sizeof(seen));
		if (str_eq(seen, *k))
			return key_fail(d, "key", key);
	}
	if (!(arr = reserve(d, arr, n, size)))
		return d->rc;
	*grown = arr;
	return 0;
}

/* A map key of an object whose values are only looked at, not kept: refuse
 * duplicates among the keys seen so far (kept in *keys). */
static int map_key(struct dctx *d, const struct jscan_str *key, struct str **keys, uint32_t *n,
		   const char *what, struct str *k)
{
	void *grown = NULL;
	int rc = map_entry(d, key, *keys, 0, *n, sizeof(**keys), 0, what, k, &grown);

	if (rc == 0) {
		*keys = grown;
		(*keys)[(*n)++] = *k;
	}
	return rc;
}

/* --- metadata ------------------------------------------------------------ */

#define MAPPING_LABEL "dra-guard.io/mappings"

/* labels: an object of strings; only the guard's own label is kept. */
static int decode_labels(struct dctx *d, void *obj)
{
	struct object_meta *m = obj;
	struct str *keys = NULL;
	uint32_t n = 0;
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	m->has_labels = true;
	while ((r = next_key(d, &key)) == 1) {
		struct str k, v = { NULL, 0 };

		path_push(d, key.ptr, key.len);
		if ((rc = map_key(d, &key, &keys, &n, "labels", &k)) != 0 ||
		    (rc = read_str(d, &v)) != 0)
			return rc;
		if (str_eq_cstr(k, MAPPING_LABEL)) {
			m->has_mapping_label = true;
			m->mapping_label = v;
		}
		path_pop(d);
	}
	return r;
}

static int decode_deletion(struct dctx *d, void *obj)
{
	struct str ts = { NULL, 0 };

	return read_str_opt(d, &ts, &((struct object_meta *)obj)->deleting);
}

static const struct field meta_fields[] = {
	FSTR("name", struct object_meta, name),
	FSTR("generateName", struct object_meta, generate_name),
	FSTR("namespace", struct object_meta, namespace),
	FSTR("uid", struct object_meta, uid),
	FCALL("labels", decode_labels),
	FCALL("deletionTimestamp", decode_deletion),
};

/* --- ResourceSlice ------------------------------------------------------- */

static const struct field capacity_fields[] = {
	FQTY("value", struct named_quantity, value),
};

/* capacity: name -> DeviceCapacity (only its value is read). */
static int decode_capacity(struct dctx *d, void *obj)
{
	struct device *dev = obj;
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	while ((r = next_key(d, &key)) == 1) {
		struct named_quantity *c;
		struct str name;
		void *grown = NULL;

		path_push(d, key.ptr, key.len);
		if ((rc = map_entry(d, &key, dev->capacity, 0, dev->ncapacity, sizeof(*c),
				    offsetof(struct named_quantity, name), "capacity entries", &name, &grown)) != 0)
			return rc;
		dev->capacity = grown;
		c = &dev->capacity[dev->ncapacity];
		*c = (struct named_quantity){ .name = name };
		if (jscan_peek(&d->s) != JSCAN_OBJECT && jscan_peek(&d->s) != JSCAN_NULL)
			return type_fail(d, "an object (a DeviceCapacity such as {\"value\": \"80Gi\"})");
		rc = decode_fields(d, capacity_fields, COUNT(capacity_fields), c, NULL);
		if (rc)
			return rc;
		dev->ncapacity++;
		path_pop(d);
	}
	return r;
}

/* nodeAllocatableResourceMappings[key]: {allocationMultiplier, capacityKey} */
static const struct field v136_fields[] = {
	FQTY("allocationMultiplier", struct mapping, multiplier),
	FSTRF("capacityKey", struct mapping, capacity_key, has_capacity_key),
};

/* nodeAllocatableResources[key] (Kubernetes 1.37): {mapping: {deviceMultiplier
 * | capacityKey + capacityMultiplier}, overhead: {perPod, perContainer}} */
static const struct field v137_mapping_fields[] = {
	FQTY("deviceMultiplier", struct mapping, multiplier),
	FSTRF("capacityKey", struct mapping, capacity_key, has_capacity_key),
	FQTY("capacityMultiplier", struct mapping, capacity_multiplier),
};

static const struct field v137_overhead_fields[] = {
	FQTY("perPod", struct mapping, overhead_per_pod),
	FQTY("perContainer", struct mapping, overhead_per_container),
};

static int decode_v137_mapping(struct dctx *d, void *obj)
{
	struct mapping *m = obj;
	struct unknown_note u = { &m->unknown_field, "mapping." };

	return decode_fields(d, v137_mapping_fields, COUNT(v137_mapping_fields), m, &u);
}

static int decode_v137_overhead(struct dctx *d, void *obj)
{
	struct mapping *m = obj;
	struct unknown_note u = { &m->unknown_field, "overhead." };

	return decode_fields(d, v137_overhead_fields, COUNT(v137_overhead_fields), m, &u);
}

static const struct field v137_fields[] = {
	FCALL("mapping", decode_v137_mapping),
	FCALL("overhead", decode_v137_overhead),
};

/* One mapping map of a device. Entries of both shapes go to dev->mappings
 * in document order, so one map's entries are contiguous. */
static int decode_mappings(struct dctx *d, struct device *dev, enum mapping_shape shape)
{
	const struct field *f = shape == MAPPING_V136 ? v136_fields : v137_fields;
	int nf = shape == MAPPING_V136 ? COUNT(v136_fields) : COUNT(v137_fields);
	uint32_t first = dev->nmappings;
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	if (shape == MAPPING_V136)
		dev->has_v136 = true;
	else
		dev->has_v137 = true;
	while ((r = next_key(d, &key)) == 1) {
		struct unknown_note u;
		struct mapping *m;
		struct str name;
		void *grown = NULL;

		path_push(d, key.ptr, key.len);
		if ((rc = map_entry(d, &key, dev->mappings, first, dev->nmappings, sizeof(*m),
				    offsetof(struct mapping, resource), "mappings", &name, &grown)) != 0)
			return rc;
		dev->mappings = grown;
		m = &dev->mappings[dev->nmappings];
		memset(m, 0, sizeof(*m));
		m->resource = name;
		m->shape = shape;
		m->is_null = jscan_peek(&d->s) == JSCAN_NULL;
		u.out = &m->unknown_field;
		u.prefix = "";
		if ((rc = decode_fields(d, f, nf, m, &u)) != 0)
			return rc;
		dev->nmappings++;
		path_pop(d);
	}
	return r;
}

static int decode_v136_map(struct dctx *d, void *obj)
{
	return decode_mappings(d, obj, MAPPING_V136);
}

static int decode_v137_map(struct dctx *d, void *obj)
{
	return decode_mappings(d, obj, MAPPING_V137);
}

/* The device fields; v1beta1 has all but name under "basic". */
static const struct field device_fields[] = {
	FSTR("name", struct device, name),
	FBOOL("allowMultipleAllocations", struct device, allow_multiple_allocations),
	FCALL("capacity", decode_capacity),
	FCALL("nodeAllocatableResourceMappings", decode_v136_map),
	FCALL("nodeAllocatableResources", decode_v137_map),
	FSTR("nodeName", struct device, node_name),
	FBOOL("allNodes", struct device, all_nodes),
	FPRESENT("nodeSelector", struct device, has_node_selector),
};

static int decode_basic(struct dctx *d, void *obj)
{
	return decode_fields(d, device_fields + 1, COUNT(device_fields) - 1, obj, NULL);
}

static const struct field beta1_device_fields[] = {
	FSTR("name", struct device, name),
	FCALL("basic", decode_basic),
};

static int decode_device(struct dctx *d, struct device *dev, uint32_t index)
{
	size_t start;
	int rc;

	memset(dev, 0, sizeof(*dev));
	dev->index = index;
	jscan_peek(&d->s);
	start = here(d);
	if (d->version == API_V1BETA1)
		rc = decode_fields(d, beta1_device_fields, COUNT(beta1_device_fields), dev, NULL);
	else
		rc = decode_fields(d, device_fields, COUNT(device_fields), dev, NULL);
	if (rc)
		return rc;
	dev->raw.ptr = d->text + start;
	dev->raw.len = here(d) - start;
	return 0;
}

/* spec.devices. While oldObject is decoded, d->ref is object's slice: a
 * device whose text equals ref's device at the same index is copied
 * instead of decoded. */
static int decode_devices(struct dctx *d, void *obj)
{
	struct resource_slice *sl = obj;
	const struct resource_slice *ref = d->ref;
	uint32_t n = 0, total = 0, limit = d->lim->max_devices;
	int r, rc;

	if ((r = enter_array(d)) <= 0)
		return r;
	path_push_index(d);
	while ((r = next_elem(d)) == 1) {
		struct device *dev;

		path_set_index(d, total++);
		if (total > limit) {
			/* Count them all for the message; still validated. */
			if ((rc = skip(d)) != 0)
				return rc;
			continue;
		}
		if (!(sl->devices = reserve(d, sl->devices, n, sizeof(*dev))))
			return d->rc;
		dev = &sl->devices[n];
		if (ref && n < ref->ndevices) {
			size_t at;

			jscan_peek(&d->s);
			at = here(d);
			r = jscan_skip_same(&d->s, ref->devices[n].raw);
			if (r < 0)
				return scan_fail(d);
			if (r == 1) {
				*dev = ref->devices[n];
				dev->raw.ptr = d->text + at;
				dev->same_as_object = true;
				sl->ndevices = ++n;
				continue;
			}
		}
		if ((rc = decode_device(d, dev, n)) != 0)
			return rc;
		sl->ndevices = ++n;
	}
	path_pop(d);
	if (r < 0)
		return r;
	if (total > limit)
		return fail(d, d->schema_err, "%u devices exceed the %slimit of %u", total,
			    limit == DECODE_API_MAX_DEVICES ? "API " : "", limit);
	return 0;
}

static const struct field pool_fields[] = {
	FSTR("name", struct resource_slice, pool_name),
	FINTF("generation", struct resource_slice, pool_generation, has_pool_generation),
	FINT("resourceSliceCount", struct resource_slice, resource_slice_count),
};

static int decode_pool(struct dctx *d, void *obj)
{
	return decode_fields(d, pool_fields, COUNT(pool_fields), obj, NULL);
}

static const struct field slice_spec_fields[] = {
	FSTR("driver", struct resource_slice, driver),
	FSTR("nodeName", struct resource_slice, node_name),
	FPRESENT("nodeSelector", struct resource_slice, has_node_selector),
	FBOOL("allNodes", struct resource_slice, all_nodes),
	FBOOL("perDeviceNodeSelection", struct resource_slice, per_device_node_selection),
	FCALL("pool", decode_pool),
	FCALL("devices", decode_devices),
};

/* --- ResourceClaim ------------------------------------------------------- */

/* A deviceClassName, wherever the version puts it, joins the request's list. */
static int decode_class(struct dctx *d, void *obj)
{
	struct claim_request *req = obj;
	struct str cls = { NULL, 0 };
	bool present = false;
	int rc;

	if ((rc = read_str_opt(d, &cls, &present)) != 0 || !present)
		return rc;
	if (req->ndevice_classes >= d->lim->max_list)
		return limit_fail(d, "device classes", d->lim->max_list);
	if (!(req->device_classes = reserve(d, req->device_classes, req->ndevice_classes,
					    sizeof(cls))))
		return d->rc;
	req->device_classes[req->ndevice_classes++] = cls;
	return 0;
}

static const struct field class_fields[] = {
	FCALL("deviceClassName", decode_class),
};

/* exactly, or one firstAvailable entry: only deviceClassName is read. */
static int decode_class_holder(struct dctx *d, void *obj)
{
	return decode_fields(d, class_fields, COUNT(class_fields), obj, NULL);
}

static int decode_first_available(struct dctx *d, void *obj)
{
	uint32_t i = 0;
	int r, rc;

	if ((r = enter_array(d)) <= 0)
		return r;
	path_push_index(d);
	while ((r = next_elem(d)) == 1) {
		path_set_index(d, i++);
		if ((rc = decode_class_holder(d, obj)) != 0)
			return rc;
	}
	path_pop(d);
	return r;
}

/* v1 and v1beta2 put deviceClassName under exactly; v1beta1 has it on the
 * request itself. All have firstAvailable[].deviceClassName. */
static const struct field request_fields[] = {
	FSTR("name", struct claim_request, name),
	FCALL("exactly", decode_class_holder),
	FCALL("firstAvailable", decode_first_available),
};

static const struct field beta1_request_fields[] = {
	FSTR("name", struct claim_request, name),
	FCALL("deviceClassName", decode_class),
	FCALL("firstAvailable", decode_first_available),
};

static int decode_claim_request(struct dctx *d, void *e)
{
	if (d->version == API_V1BETA1)
		return decode_fields(d, beta1_request_fields, COUNT(beta1_request_fields), e, NULL);
	return decode_fields(d, request_fields, COUNT(request_fields), e, NULL);
}

static int decode_requests(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->requests;
	int rc = decode_list(d, &arr, &c->nrequests, sizeof(*c->requests), "requests",
			     decode_claim_request);

	c->requests = arr;
	return rc;
}

static const struct field claim_devices_fields[] = { FCALL("requests", decode_requests) };

static int decode_claim_devices(struct dctx *d, void *obj)
{
	return decode_fields(d, claim_devices_fields, COUNT(claim_devices_fields), obj, NULL);
}

static const struct field claim_spec_fields[] = { FCALL("devices", decode_claim_devices) };

/* name -> Quantity, for consumedCapacity and a Pod's claim resources. */
static int decode_quantity_map(struct dctx *d, struct named_quantity **out, uint32_t *nout)
{
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	while ((r = next_key(d, &key)) == 1) {
		struct named_quantity *q;
		struct str name;
		void *grown = NULL;

		path_push(d, key.ptr, key.len);
		if ((rc = map_entry(d, &key, *out, 0, *nout, sizeof(*q),
				    offsetof(struct named_quantity, name), "entries", &name, &grown)) != 0)
			return rc;
		*out = grown;
		q = &(*out)[*nout];
		*q = (struct named_quantity){ .name = name };
		if ((rc = read_quantity(d, &q->value)) != 0)
			return rc;
		(*nout)++;
		path_pop(d);
	}
	return r;
}

static int decode_consumed(struct dctx *d, void *obj)
{
	struct allocation_result *res = obj;

	return decode_quantity_map(d, &res->consumed_capacity, &res->nconsumed_capacity);
}

static const struct field result_fields[] = {
	FSTR("request", struct allocation_result, request),
	FSTR("driver", struct allocation_result, driver),
	FSTR("pool", struct allocation_result, pool),
	FSTR("device", struct allocation_result, device),
	FSTR("shareID", struct allocation_result, share_id),
	FCALL("consumedCapacity", decode_consumed),
};

static int decode_result(struct dctx *d, void *e)
{
	return decode_fields(d, result_fields, COUNT(result_fields), e, NULL);
}

static int decode_results(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->results;
	int rc = decode_list(d, &arr, &c->nresults, sizeof(*c->results), "results", decode_result);

	c->results = arr;
	return rc;
}

/* allocation.devices: only results (config is not read). */
static const struct field allocation_devices_fields[] = { FCALL("results", decode_results) };

static int decode_allocation_devices(struct dctx *d, void *obj)
{
	return decode_fields(d, allocation_devices_fields, COUNT(allocation_devices_fields), obj,
			     NULL);
}

/* What a node selector's first term says, for the node-local test. */
struct term_info {
	uint32_t nexpressions;
	uint32_t nfields;
	struct str key;
	struct str op;
	uint32_t nvalues;
	struct str value;
};

static int decode_values(struct dctx *d, void *obj)
{
	struct term_info *t = obj;
	int r, rc;

	if ((r = enter_array(d)) <= 0)
		return r;
	path_push_index(d);
	while ((r = next_elem(d)) == 1) {
		path_set_index(d, t->nvalues);
		rc = t->nvalues++ == 0 ? read_str(d, &t->value) : skip(d);
		if (rc)
			return rc;
	}
	path_pop(d);
	return r;
}

static const struct field requirement_fields[] = {
	FSTR("key", struct term_info, key),
	FSTR("operator", struct term_info, op),
	FCALL("values", decode_values),
};

/* A list of which only the first entry is decoded (by first) and all are
 * counted. */
static int count_list(struct dctx *d, uint32_t *count, int (*first)(struct dctx *d, void *obj),
		      void *obj)
{
	int r, rc;

	if ((r = enter_array(d)) <= 0)
		return r;
	path_push_index(d);
	while ((r = next_elem(d)) == 1) {
		path_set_index(d, *count);
		rc = *count == 0 && first ? first(d, obj) : skip(d);
		if (rc)
			return rc;
		(*count)++;
	}
	path_pop(d);
	return r;
}

static int decode_requirement(struct dctx *d, void *obj)
{
	return decode_fields(d, requirement_fields, COUNT(requirement_fields), obj, NULL);
}

static int decode_match_fields(struct dctx *d, void *obj)
{
	struct term_info *t = obj;

	return count_list(d, &t->nfields, decode_requirement, t);
}

static int decode_match_expressions(struct dctx *d, void *obj)
{
	struct term_info *t = obj;

	return count_list(d, &t->nexpressions, NULL, t);
}

static const struct field term_fields[] = {
	FCALL("matchExpressions", decode_match_expressions),
	FCALL("matchFields", decode_match_fields),
};

struct selector_info {
	uint32_t nterms;
	struct term_info term;
};

static int decode_term(struct dctx *d, void *obj)
{
	return decode_fields(d, term_fields, COUNT(term_fields), obj, NULL);
}

static int decode_terms(struct dctx *d, void *obj)
{
	struct selector_info *si = obj;

	return count_list(d, &si->nterms, decode_term, &si->term);
}

static const struct field selector_fields[] = { FCALL("nodeSelectorTerms", decode_terms) };

/* Node-local means: one term, one matchFields entry metadata.name In [node],
 * no matchExpressions. */
static int decode_node_selector(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	struct selector_info si;
	const struct term_info *t = &si.term;
	int rc;

	memset(&si, 0, sizeof(si));
	if ((rc = decode_fields(d, selector_fields, COUNT(selector_fields), &si, NULL)) != 0)
		return rc;
	if (si.nterms == 1 && t->nexpressions == 0 && t->nfields == 1 &&
	    str_eq_cstr(t->key, "metadata.name") && str_eq_cstr(t->op, "In") && t->nvalues == 1) {
		c->node_local = true;
		c->allocated_node = t->value;
	}
	return 0;
}

static const struct field allocation_fields[] = {
	FCALL("devices", decode_allocation_devices),
	FCALL("nodeSelector", decode_node_selector),
};

static int decode_allocation(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	size_t start;
	int rc;

	if (jscan_peek(&d->s) != JSCAN_OBJECT)
		return enter_object(d);  /* null (not allocated), or a type error */
	start = here(d);
	c->allocated = true;
	if ((rc = decode_fields(d, allocation_fields, COUNT(allocation_fields), c, NULL)) != 0)
		return rc;
	c->allocation_raw.ptr = d->text + start;
	c->allocation_raw.len = here(d) - start;
	return 0;
}

static const struct field consumer_fields[] = {
	FSTR("apiGroup", struct consumer_ref, api_group),
	FSTR("resource", struct consumer_ref, resource),
	FSTR("name", struct consumer_ref, name),
	FSTR("uid", struct consumer_ref, uid),
};

static int decode_consumer(struct dctx *d, void *e)
{
	return decode_fields(d, consumer_fields, COUNT(consumer_fields), e, NULL);
}

static int decode_reserved_for(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->reserved_for;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = here(d);
	rc = decode_list(d, &arr, &c->nreserved_for, sizeof(*c->reserved_for), "reservedFor entries",
			 decode_consumer);
	c->reserved_for = arr;
	if (rc == 0 && d->text[start] == '[') {
		c->reserved_for_raw.ptr = d->text + start;
		c->reserved_for_raw.len = here(d) - start;
	}
	return rc;
}

static const struct field device_status_fields[] = {
	FSTR("driver", struct device_status, driver),
	FSTR("pool", struct device_status, pool),
	FSTR("device", struct device_status, device),
	FSTR("shareID", struct device_status, share_id),
};

static int decode_device_status(struct dctx *d, void *e)
{
	struct device_status *ds = e;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = here(d);
	if ((rc = decode_fields(d, device_status_fields, COUNT(device_status_fields), ds, NULL)) != 0)
		return rc;
	ds->raw.ptr = d->text + start;
	ds->raw.len = here(d) - start;
	return 0;
}

static int decode_device_statuses(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->devices;
	int rc = decode_list(d, &arr, &c->ndevices, sizeof(*c->devices), "device statuses",
			     decode_device_status);

	c->devices = arr;
	return rc;
}

static const struct field claim_status_fields[] = {
	FCALL("allocation", decode_allocation),
	FCALL("reservedFor", decode_reserved_for),
	FCALL("devices", decode_device_statuses),
};

/* --- Pod ----------------------------------------------------------------- */

static int count_claims(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	int rc = count_list(d, &p->nresource_claims, NULL, NULL);

	if (rc == 0 && p->nresource_claims > d->lim->max_list)
		return limit_fail(d, "resource claims", d->lim->max_list);
	return rc;
}

static const struct field pod_spec_fields[] = {
	FSTR("nodeName", struct pod, node_name),
	FCALL("resourceClaims", count_claims),
};

static int decode_containers(struct dctx *d, void *obj)
{
	struct claim_resource_status *cs = obj;

	return read_str_list(d, &cs->containers, &cs->ncontainers);
}

static int decode_claim_resources(struct dctx *d, void *obj)
{
	struct claim_resource_status *cs = obj;

	return decode_quantity_map(d, &cs->resources, &cs->nresources);
}

static const struct field claim_resource_status_fields[] = {
	FSTR("resourceClaimName", struct claim_resource_status, claim_name),
	FCALL("containers", decode_containers),
	FCALL("resources", decode_claim_resources),
};

static int decode_claim_resource_status(struct dctx *d, void *e)
{
	struct claim_resource_status *cs = e;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = here(d);
	rc = decode_fields(d, claim_resource_status_fields, COUNT(claim_resource_status_fields),
			   cs, NULL);
	if (rc)
		return rc;
	cs->raw.ptr = d->text + start;
	cs->raw.len = here(d) - start;
	return 0;
}

static int decode_claim_statuses(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	void *arr = p->claim_statuses;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = here(d);
	rc = decode_list(d, &arr, &p->nclaim_statuses, sizeof(*p->claim_statuses),
			 "claim statuses", decode_claim_resource_status);
	p->claim_statuses = arr;
	if (rc == 0 && d->text[start] == '[') {
		p->has_claim_statuses = true;
		p->claim_statuses_raw.ptr = d->text + start;
		p->claim_statuses_raw.len = here(d) - start;
	}
	return rc;
}

static const struct field pod_status_fields[] = {
	FCALL("nodeAllocatableResourceClaimStatuses", decode_claim_statuses),
};

/* --- ConfigMap ----------------------------------------------------------- */

/* data: an object of strings; the guard's keys are kept. */
static int decode_config_data(struct dctx *d, struct config_map *cm)
{
	struct str *keys = NULL;
	uint32_t n = 0;
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	while ((r = next_key(d, &key)) == 1) {
		struct str k, v = { NULL, 0 };

		path_push(d, key.ptr, key.len);
		if ((rc = map_key(d, &key, &keys, &n, "data entries", &k)) != 0 ||
		    (rc = read_str(d, &v)) != 0)
			return rc;
		if (str_eq_cstr(k, "policy.yaml")) {
			cm->has_policy = true;
			cm->policy = v;
		} else if (str_eq_cstr(k, "freeze")) {
			cm->has_freeze = true;
			cm->freeze = v;
		} else if (str_eq_cstr(k, "freeze-reason")) {
			cm->has_freeze_reason = true;
			cm->freeze_reason = v;
		}
		path_pop(d);
	}
	return r;
}

/* --- objects ------------------------------------------------------------- */

enum object_kind decode_classify(struct str group, struct str version, struct str kind,
				 enum api_version *version_out)
{
	enum object_kind k;

	*version_out = API_VERSION_UNKNOWN;
	if (str_eq_cstr(group, "resource.k8s.io")) {
		if (str_eq_cstr(kind, "ResourceSlice"))
			k = OBJECT_RESOURCE_SLICE;
		else if (str_eq_cstr(kind, "ResourceClaim"))
			k = OBJECT_RESOURCE_CLAIM;
		else
			return OBJECT_OTHER;
		if (str_eq_cstr(version, "v1"))
			*version_out = API_V1;
		else if (str_eq_cstr(version, "v1beta2"))
			*version_out = API_V1BETA2;
		else if (str_eq_cstr(version, "v1beta1"))
			*version_out = API_V1BETA1;
		return k;
	}
	if (group.len != 0)
		return OBJECT_OTHER;
	if (str_eq_cstr(kind, "Pod"))
		k = OBJECT_POD;
	else if (str_eq_cstr(kind, "ConfigMap"))
		k = OBJECT_CONFIG_MAP;
	else
		return OBJECT_OTHER;
	if (str_eq_cstr(version, "v1"))
		*version_out = API_V1;
	return k;
}

static int unsupported_version(struct dctx *d, const struct k8s_object *o, struct str group,
			       struct str version)
{
	const char *kind = model_kind_name(o->kind);
	int gn = (int)(group.len > 64 ? 64 : group.len);
	int vn = (int)(version.len > 32 ? 32 : version.len);

	if (o->kind == OBJECT_RESOURCE_SLICE || o->kind == OBJECT_RESOURCE_CLAIM)
		return fail(d, -EPROTO, "%s %.*s/%.*s is not supported: the guard decodes %s in "
			    "resource.k8s.io/v1, v1beta2 and v1beta1", kind, gn, group.ptr, vn,
			    version.ptr, kind);
	return fail(d, -EPROTO, "%s version \"%.*s\" is not supported: the guard decodes %s v1",
		    kind, vn, version.ptr, kind);
}

enum { OB_API_VERSION, OB_KIND, OB_METADATA, OB_SPEC, OB_STATUS, OB_DATA };

static const struct field object_fields[] = {
	FNAME("apiVersion"), FNAME("kind"), FNAME("metadata"), FNAME("spec"), FNAME("status"),
	FNAME("data"),
};

/* spec, status or data of an object whose kind is known. */
static int decode_section(struct dctx *d, struct k8s_object *o, int id)
{
	const struct field *f = NULL;
	int n = 0;
	void *obj = NULL;

	d->version = o->version;
	switch (o->kind) {
	case OBJECT_RESOURCE_SLICE:
		if (id == OB_SPEC) {
			f = slice_spec_fields;
			n = COUNT(slice_spec_fields);
			obj = &o->u.slice;
		}
		break;
	case OBJECT_RESOURCE_CLAIM:
		if (id == OB_SPEC) {
			f = claim_spec_fields;
			n = COUNT(claim_spec_fields);
		} else if (id == OB_STATUS) {
			f = claim_status_fields;
			n = COUNT(claim_status_fields);
		}
		obj = &o->u.claim;
		break;
	case OBJECT_POD:
		if (id == OB_SPEC) {
			f = pod_spec_fields;
			n = COUNT(pod_spec_fields);
		} else if (id == OB_STATUS) {
			f = pod_status_fields;
			n = COUNT(pod_status_fields);
		}
		obj = &o->u.pod;
		break;
	case OBJECT_CONFIG_MAP:
		if (id == OB_DATA)
			return decode_config_data(d, &o->u.config_map);
		break;
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return f ? decode_fields(d, f, n, obj, NULL) : skip(d);
}

/* Split "group/version" (or a core "version"). */
static void split_api_version(struct str av, struct str *group, struct str *version)
{
	const char *slash = av.len ? memchr(av.ptr, '/', av.len) : NULL;

	if (!slash) {
		*group = STR_LIT("");
		*version = av;
		return;
	}
	group->ptr = av.ptr;
	group->len = (size_t)(slash - av.ptr);
	version->ptr = slash + 1;
	version->len = av.len - group->len - 1;
}

/* Classify a bare object by its own apiVersion and kind. */
static int classify_bare(struct dctx *d, struct k8s_object *o)
{
	struct str g, v;

	split_api_version(o->api_version, &g, &v);
	o->kind = decode_classify(g, v, o->kind_name, &o->version);
	if (o->kind != OBJECT_OTHER && o->version == API_VERSION_UNKNOWN)
		return unsupported_version(d, o, g, v);
	return 0;
}

/* Decode the object value here into o. In a review, o->kind and o->version
 * come from request.kind; a bare object (bare) names its own, and spec,
 * status and data seen before both are decoded from marks afterwards. */
static int decode_object_value(struct dctx *d, struct k8s_object *o, bool bare)
{
	struct jscan marks[3], end;
	bool marked[3] = { false, false, false };
	bool have_av = false, have_kind = false, known = !bare;
	uint32_t seen = 0;
	unsigned npath;
	int r, rc = 0, id, i;

	if (!bare && o->kind == OBJECT_OTHER)
		return skip(d);
	if (!bare && o->version == API_VERSION_UNKNOWN)
		return unsupported_version(d, o, d->req_group, d->req_version);
	if (jscan_peek(&d->s) != JSCAN_OBJECT)
		return type_fail(d, "an object");
	if (jscan_object_enter(&d->s) < 0)
		return scan_fail(d);
	while ((r = next_member(d, object_fields, COUNT(object_fields), &seen, &id, NULL)) == 1) {
		switch (id) {
		case OB_API_VERSION: rc = read_str_opt(d, &o->api_version, &have_av); break;
		case OB_KIND: rc = read_str_opt(d, &o->kind_name, &have_kind); break;
		case OB_METADATA:
			rc = decode_fields(d, meta_fields, COUNT(meta_fields), &o->meta, NULL);
			break;
		default:
			if (!known && have_av && have_kind) {
				path_pop(d);
				if ((rc = classify_bare(d, o)) != 0)
					return rc;
				path_push(d, object_fields[id].name, object_fields[id].len);
				known = true;
			}
			if (known) {
				rc = decode_section(d, o, id);
			} else {
				jscan_peek(&d->s);
				marks[id - OB_SPEC] = d->s;
				marked[id - OB_SPEC] = true;
				rc = skip(d);
			}
			break;
		}
		if (rc)
			return rc;
		path_pop(d);
	}
	if (r < 0 || known)
		return r;
	/* A bare object whose apiVersion and kind came late, or never. */
	if (!have_av || !have_kind || o->kind_name.len == 0)
		return fail(d, -EPROTO, "%s is missing: a Kubernetes object names its kind with "
			    "apiVersion and kind", !have_av ? "apiVersion" : "kind");
	if ((rc = classify_bare(d, o)) != 0)
		return rc;
	end = d->s;
	npath = d->npath;
	for (i = 0; i < 3; i++) {
		if (!marked[i])
			continue;
		d->s = marks[i];
		path_push(d, object_fields[OB_SPEC + i].name, object_fields[OB_SPEC + i].len);
		if ((rc = decode_section(d, o, OB_SPEC + i)) != 0)
			return rc;
		d->npath = npath;
	}
	d->s = end;
	return 0;
}

/* Decode object or oldObject of a review here; ref is object's decode when
 * this is oldObject. An object that does not decode as its kind (-EPROTO)
 * is held, and skipped from its start so the rest of the review is still
 * read; *ok tells whether it decoded. */
static int review_object(struct dctx *d, struct k8s_object *o, const struct k8s_object *ref,
			 bool *ok)
{
	struct jscan mark;
	unsigned npath = d->npath;
	int saved = d->schema_err, rc;

	jscan_peek(&d->s);
	mark = d->s;
	d->schema_err = -EPROTO;
	d->ref = ref && ref->kind == OBJECT_RESOURCE_SLICE && ref->kind == o->kind &&
		 ref->version == o->version ? &ref->u.slice : NULL;
	rc = decode_object_value(d, o, false);
	d->ref = NULL;
	d->schema_err = saved;
	*ok = rc == 0;
	if (rc != -EPROTO)
		return rc;
	if (!d->held_rc) {
		d->held = *d->err;
		d->held_rc = rc;
	}
	d->rc = 0;
	d->s = mark;
	d->npath = npath;
	return skip(d);
}

/* --- the review ---------------------------------------------------------- */

static const struct field gvk_fields[] = {
	FSTR("group", struct group_version_kind, group),
	FSTR("version", struct group_version_kind, version),
	FSTR("kind", struct group_version_kind, kind),
};

static const struct field gvr_fields[] = {
	FSTR("group", struct group_version_resource, group),
	FSTR("version", struct group_version_resource, version),
	FSTR("resource", struct group_version_resource, resource),
};

static int decode_extra(struct dctx *d, void *obj)
{
	struct user_info *u = obj;
	struct jscan_str key;
	int r, rc;

	if ((r = enter_object(d)) <= 0)
		return r;
	while ((r = next_key(d, &key)) == 1) {
		struct user_extra *e;
		struct str k;
		void *grown = NULL;

		path_push(d, key.ptr, key.len);
		if ((rc = map_entry(d, &key, u->extra, 0, u->nextra, sizeof(*e),
				    offsetof(struct user_extra, key), "extra keys", &k, &grown)) != 0)
			return rc;
		u->extra = grown;
		e = &u->extra[u->nextra];
		*e = (struct user_extra){ .key = k };
		if ((rc = read_str_list(d, &e->values, &e->nvalues)) != 0)
			return rc;
		u->nextra++;
		path_pop(d);
	}
	return r;
}

static int decode_groups(struct dctx *d, void *obj)
{
	struct user_info *u = obj;

	return read_str_list(d, &u->groups, &u->ngroups);
}

static const struct field user_fields[] = {
	FSTR("username", struct user_info, username),
	FSTR("uid", struct user_info, uid),
	FCALL("groups", decode_groups),
	FCALL("extra", decode_extra),
};

/* The request object while it is read (d->req). */
struct request_state {
	bool have_uid, have_kind, have_op;
	enum object_kind kind;      /* what request.kind names */
	enum api_version version;
	bool object_seen;           /* object read (decoded, held or null) */
	bool object_ok;             /* object decoded: usable as oldObject's reference */
	bool object_pending, old_pending;
	struct jscan object_mark, old_mark;
};

static int decode_request_kind(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;
	struct request_state *st = d->req;
	int rc;

	if (jscan_peek(&d->s) == JSCAN_OBJECT)
		st->have_kind = true;
	if ((rc = decode_fields(d, gvk_fields, COUNT(gvk_fields), &rq->kind, NULL)) != 0)
		return rc;
	st->kind = decode_classify(rq->kind.group, rq->kind.version, rq->kind.kind, &st->version);
	d->req_group = rq->kind.group;
	d->req_version = rq->kind.version;
	return 0;
}

static int decode_request_resource(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return decode_fields(d, gvr_fields, COUNT(gvr_fields), &rq->resource, NULL);
}

static int decode_uid(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return read_str_opt(d, &rq->uid, &d->req->have_uid);
}

static int decode_operation(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;
	int rc;

	if ((rc = read_str_opt(d, &rq->operation_text, &d->req->have_op)) != 0 || !d->req->have_op)
		return rc;
	rq->operation = model_op_parse(rq->operation_text);
	if (rq->operation == ADMISSION_OP_UNKNOWN)
		return fail(d, -EBADMSG, "\"%.*s\" is not CREATE, UPDATE, DELETE or CONNECT",
			    (int)(rq->operation_text.len > 32 ? 32 : rq->operation_text.len),
			    rq->operation_text.ptr);
	return 0;
}

static int decode_user(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return decode_fields(d, user_fields, COUNT(user_fields), &rq->user, NULL);
}

/* object or oldObject: null gives OBJECT_NONE; otherwise decoded here when
 * its kind is known (and, for oldObject, object has been read), else marked
 * for later. */
static int request_object(struct dctx *d, struct admission_request *rq, bool old)
{
	struct request_state *st = d->req;
	struct k8s_object *o = old ? &rq->old_object : &rq->object;
	bool ok;

	switch (jscan_peek(&d->s)) {
	case JSCAN_NULL:
		st->object_seen |= !old;
		o->kind = OBJECT_NONE;
		return take_null(d);
	case JSCAN_OBJECT:
		break;
	default:
		return type_fail(d, "an object");
	}
	if (st->have_kind && (!old || st->object_seen)) {
		o->kind = st->kind;
		o->version = st->version;
		if (old)
			return review_object(d, o, st->object_ok ? &rq->object : NULL, &ok);
		st->object_seen = true;
		return review_object(d, o, NULL, &st->object_ok);
	}
	if (old) {
		st->old_mark = d->s;
		st->old_pending = true;
	} else {
		st->object_mark = d->s;
		st->object_pending = true;
	}
	return skip(d);
}

static int decode_request_object(struct dctx *d, void *obj)
{
	return request_object(d, obj, false);
}

static int decode_request_old_object(struct dctx *d, void *obj)
{
	return request_object(d, obj, true);
}

static const struct field review_request_fields[] = {
	FCALL("uid", decode_uid),
	FCALL("kind", decode_request_kind),
	FCALL("resource", decode_request_resource),
	FSTR("subResource", struct admission_request, sub_resource),
	FSTR("name", struct admission_request, name),
	FSTR("namespace", struct admission_request, namespace),
	FCALL("operation", decode_operation),
	FCALL("userInfo", decode_user),
	FCALL("object", decode_request_object),
	FCALL("oldObject", decode_request_old_object),
	FBOOL("dryRun", struct admission_request, dry_run),
};

/* A required member that is not there (or empty). */
static int missing(struct dctx *d, const char *member, const char *hint)
{
	path_push(d, member, strlen(member));
	return fail(d, -EBADMSG, "missing%s", hint);
}

/* Decode a marked object or oldObject now that the request has been read. */
static int request_pending(struct dctx *d, const struct request_state *st, struct k8s_object *o,
			   const struct jscan *mark, const struct k8s_object *ref, bool *ok,
			   const char *member)
{
	struct jscan end = d->s;
	unsigned npath = d->npath;
	int rc;

	o->kind = st->kind;
	o->version = st->version;
	d->s = *mark;
	path_push(d, member, strlen(member));
	rc = review_object(d, o, ref, ok);
	d->npath = npath;
	if (rc == 0)
		d->s = end;
	return rc;
}

static int decode_request(struct dctx *d, struct admission_request *rq)
{
	struct request_state st;
	bool ok;
	int rc;

	memset(&st, 0, sizeof(st));
	d->req = &st;
	rc = decode_fields(d, review_request_fields, COUNT(review_request_fields), rq, NULL);
	if (rc)
		return rc;
	if (!st.have_uid || rq->uid.len == 0)
		return missing(d, "uid", "");
	if (!st.have_kind || rq->kind.kind.len == 0 || rq->kind.version.len == 0)
		return missing(d, "kind", " (want {group, version, kind})");
	if (!st.have_op)
		return missing(d, "operation", "");
	if (st.object_pending) {
		rc = request_pending(d, &st, &rq->object, &st.object_mark, NULL, &st.object_ok,
				     "object");
		if (rc)
			return rc;
	}
	if (st.old_pending)
		return request_pending(d, &st, &rq->old_object, &st.old_mark,
				       st.object_ok ? &rq->object : NULL, &ok, "oldObject");
	return 0;
}

/* A top-level member of the review that is absent or not the one value
 * allowed. */
static int wrong_value(struct dctx *d, const char *member, const char *want, bool present,
		       struct str got)
{
	if (!present)
		return fail(d, -EBADMSG, "%s: expected \"%s\", got nothing", member, want);
	return fail(d, -EBADMSG, "%s: expected \"%s\", got \"%.*s\"", member, want,
		    (int)(got.len > 64 ? 64 : got.len), got.ptr ? got.ptr : "");
}

enum { TOP_API_VERSION, TOP_KIND, TOP_REQUEST };

static const struct field review_fields[] = {
	FNAME("apiVersion"), FNAME("kind"), FNAME("request"),
};

static void ctx_init(struct dctx *d, const char *text, size_t len, const struct decode_limits *lim,
		     struct arena *a, struct decode_error *err, int bad_json)
{
	memset(d, 0, offsetof(struct dctx, path));  /* path is written before it is read */
	d->text = text;
	d->lim = lim;
	d->a = a;
	d->err = err;
	d->bad_json = bad_json;
	d->schema_err = bad_json;
	err->msg[0] = '\0';
	err->offset = 0;
	jscan_init(&d->s, text, len, lim->max_depth);
}

void decode_limits_default(struct decode_limits *lim)
{
	lim->max_depth = 64;
	lim->max_devices = DECODE_API_MAX_DEVICES;
	lim->max_map_entries = 256;
	lim->max_list = 4096;
}

int decode_review(const char *body, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct admission_request *out, struct decode_error *err)
{
	struct decode_limits deflim;
	struct dctx d;
	struct str api = { NULL, 0 }, kind = { NULL, 0 };
	bool have_api = false, have_kind = false, have_request = false;
	uint32_t seen = 0;
	int r, rc = 0, id;

	memset(out, 0, sizeof(*out));
	if (!lim) {
		decode_limits_default(&deflim);
		lim = &deflim;
	}
	ctx_init(&d, body, len, lim, a, err, -EBADMSG);
	if (jscan_peek(&d.s) != JSCAN_OBJECT)
		return type_fail(&d, "an AdmissionReview object");
	if (jscan_object_enter(&d.s) < 0)
		return scan_fail(&d);
	while ((r = next_member(&d, review_fields, COUNT(review_fields), &seen, &id, NULL)) == 1) {
		switch (id) {
		case TOP_API_VERSION: rc = read_str_opt(&d, &api, &have_api); break;
		case TOP_KIND: rc = read_str_opt(&d, &kind, &have_kind); break;
		case TOP_REQUEST:
			if (jscan_peek(&d.s) == JSCAN_OBJECT) {
				have_request = true;
				rc = decode_request(&d, out);
			} else {
				rc = enter_object(&d);  /* null, or a type error */
			}
			break;
		}
		if (rc)
			return rc;
		path_pop(&d);
	}
	if (r < 0 || jscan_finish(&d.s) < 0)
		return scan_fail(&d);
	if (!have_api || !str_eq_cstr(api, "admission.k8s.io/v1"))
		return wrong_value(&d, "apiVersion", "admission.k8s.io/v1", have_api, api);
	if (!have_kind || !str_eq_cstr(kind, "AdmissionReview"))
		return wrong_value(&d, "kind", "AdmissionReview", have_kind, kind);
	if (!have_request)
		return missing(&d, "request", "");
	if (d.held_rc) {
		*err = d.held;
		return d.held_rc;
	}
	return 0;
}

int decode_object(const char *json, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct k8s_object *out, struct decode_error *err)
{
	struct decode_limits deflim;
	struct dctx d;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!lim) {
		decode_limits_default(&deflim);
		lim = &deflim;
	}
	ctx_init(&d, json, len, lim, a, err, -EPROTO);
	rc = decode_object_value(&d, out, true);
	if (rc == 0 && jscan_finish(&d.s) < 0)
		rc = scan_fail(&d);
	return rc;
}
