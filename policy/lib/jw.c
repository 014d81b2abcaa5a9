/* jw.c - the one JSON writer (jw.h). */
#include "jw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

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
}

int jw_finish(const struct jw *w)
{
	if (w->err)
		return w->err;
	return w->done ? 0 : -EINVAL;
}

static int fail(struct jw *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

/* Where a value may go: after a key, as an array's element, or alone at
 * the top; the comma before it is written here. */
static int value_slot(struct jw *w)
{
	uint8_t *lv;

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
	if (*lv & JW_SOME) {
		int rc = buf_add_char(w->out, ',');

		if (rc)
			return fail(w, rc);
	}
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
	if (w->err)
		return w->err;
	if (w->depth == 0 || !(w->level[w->depth - 1] & kind) || w->want_value)
		return fail(w, -EINVAL);
	w->depth--;
	return value_done(w, buf_add_char(w->out, close));
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

int jw_key(struct jw *w, const char *key)
{
	uint8_t *lv;
	int rc = 0;

	if (w->err)
		return w->err;
	if (w->depth == 0 || w->want_value || !(w->level[w->depth - 1] & JW_OBJECT))
		return fail(w, -EINVAL);
	lv = &w->level[w->depth - 1];
	if (*lv & JW_SOME)
		rc = buf_add_char(w->out, ',');
	if (rc == 0)
		rc = buf_add_json_str(w->out, key, strlen(key));
	if (rc == 0)
		rc = buf_add_char(w->out, ':');
	if (rc)
		return fail(w, rc);
	*lv |= JW_SOME;
	w->want_value = true;
	return 0;
}

int jw_string(struct jw *w, const char *s, size_t n)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_add_json_str(w->out, s, n));
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

int jw_int(struct jw *w, int64_t v)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_printf(w->out, "%" PRId64, v));
}

int jw_uint(struct jw *w, uint64_t v)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_printf(w->out, "%" PRIu64, v));
}

int jw_bool(struct jw *w, bool v)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_add_cstr(w->out, v ? "true" : "false"));
}

int jw_null(struct jw *w)
{
	int rc = value_slot(w);

	return rc ? rc : value_done(w, buf_add_cstr(w->out, "null"));
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
