/* decode_fields.c - one level of an object read by its table of fields, and
 * the lists and keyed maps the levels are made of.
 *
 * decode_fields() walks the object's members against the table: a member
 * the table names is read by its type (or its call), a member named twice
 * is an error, and members no rule reads are skipped in place (and so
 * still validated). Maps keep their entries in arena arrays that grow by
 * doubling; every map checks its cap and refuses a duplicate key before
 * an entry is made. Every kind's decoder is built from these. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"

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
		if (f[i].len == len && f[i].name[0] == p[0] && decode_same_bytes(f[i].name, p, len))
			return i;
	return -1;
}

int decode_next_member(struct dctx *d, const struct field *f, int n, uint32_t *seen, int *id,
		       struct jscan_str *unknown)
{
	struct jscan_str key;
	int r, i;

	if (n < 0 || n > DECODE_MAX_FIELDS)
		return -EINVAL;
	for (;;) {
		r = jscan_object_next(&d->s, &key);
		if (r <= 0)
			return r < 0 ? decode_scan_fail(d) : 0;
		i = lookup(d, &key, f, n);
		if (i >= 0)
			break;
		if (unknown) {
			*unknown = key;
			return NEXT_UNKNOWN;
		}
		decode_path_push(d, key.ptr, key.len);
		if (jscan_skip(&d->s, NULL) < 0)
			return decode_scan_fail(d);
		decode_path_pop(d);
	}
	if (*seen & (1u << i))
		return decode_key_fail(d, "member", &key);
	*seen |= 1u << i;
	decode_path_push(d, f[i].name, f[i].len);
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
	case F_STR: return decode_read_str_opt(d, dst, flag_of(obj, f));
	case F_BOOL: return decode_read_bool(d, dst);
	case F_INT64: return decode_read_int64(d, dst, flag_of(obj, f));
	case F_QUANTITY: return decode_read_quantity(d, dst);
	case F_PRESENT: return decode_read_present_object(d, flag_of(obj, f));
	case F_CALL: break;
	}
	return f->call ? f->call(d, obj) : decode_skip(d);
}

static int note_unknown(struct dctx *d, const struct unknown_note *u, const struct jscan_str *key)
{
	struct str k = { NULL, 0 };
	int rc;

	if (u->out->len == 0) {
		if ((rc = decode_read_key(d, key, &k)) != 0)
			return rc;
		if (*u->prefix) {
			if ((rc = arena_printf(d->a, u->out, "%s%.*s", u->prefix, (int)k.len, k.ptr)) != 0)
				return decode_mem_fail(d, rc);
		} else {
			*u->out = k;
		}
		/* An empty key is still an unknown member; show it as "". */
		if (u->out->len == 0)
			*u->out = STR_LIT("\"\"");
	}
	decode_path_push(d, key->ptr, key->len);
	if ((rc = decode_skip(d)) != 0)
		return rc;
	decode_path_pop(d);
	return 0;
}

int decode_fields(struct dctx *d, const struct field *f, int n, void *obj,
		  const struct unknown_note *unknown)
{
	struct jscan_str key = { 0 };
	uint32_t seen = 0;
	int r, rc, id = 0;

	if ((r = decode_enter_object(d)) <= 0)
		return r;
	while ((r = decode_next_member(d, f, n, &seen, &id, unknown ? &key : NULL)) != 0) {
		if (r < 0)
			return r;
		if (r == NEXT_UNKNOWN) {
			if ((rc = note_unknown(d, unknown, &key)) != 0)
				return rc;
			continue;
		}
		if ((rc = read_field(d, &f[id], obj)) != 0)
			return rc;
		decode_path_pop(d);
	}
	return 0;
}

int decode_list(struct dctx *d, void **arr, uint32_t *n, size_t size, const char *what,
		int (*elem)(struct dctx *d, void *e))
{
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		void *e;

		decode_path_set_index(d, *n);
		if (*n >= d->lim->max_list)
			return decode_limit_fail(d, what, d->lim->max_list);
		if (!(*arr = decode_reserve(d, *arr, *n, size)))
			return d->rc;
		e = (char *)*arr + (size_t)*n * size;
		memset(e, 0, size);
		if ((rc = elem(d, e)) != 0)
			return rc;
		(*n)++;
	}
	decode_path_pop(d);
	return r;
}

/* A list of strings. */
static int read_str_elem(struct dctx *d, void *e)
{
	return decode_read_str(d, e);
}

int decode_read_str_list(struct dctx *d, struct str **out, uint32_t *n)
{
	void *arr = *out;
	int rc = decode_list(d, &arr, n, sizeof(**out), "entries", read_str_elem);

	*out = arr;
	return rc;
}

int decode_map_entry(struct dctx *d, const struct jscan_str *key, void *arr, uint32_t from,
		     uint32_t n, size_t size, const char *what, struct str *k, void **grown)
{
	int rc;

	if (n - from >= d->lim->max_map_entries)
		return decode_limit_fail(d, what, d->lim->max_map_entries);
	if ((rc = decode_read_key(d, key, k)) != 0)
		return rc;
	if (!(arr = decode_reserve(d, arr, n, size)))
		return d->rc;
	*grown = arr;
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return str_cmp(*(const struct str *)a, *(const struct str *)b);
}

/* Small maps are sorted in place by insertion: no call, and linear when the
 * keys already come in order, as the API server writes them. */
#define SORT_INSERTION_MAX 16

int decode_map_sort(struct dctx *d, void *arr, uint32_t from, uint32_t n, size_t size, const char *what,
		    size_t at)
{
	char *base, tmp[DECODE_MAP_ELEM_MAX];
	uint32_t count = n - from, i, j;

	if (count < 2)
		return 0;
	base = (char *)arr + (size_t)from * size;
	if (count > SORT_INSERTION_MAX || size > sizeof(tmp)) {
		qsort(base, count, size, key_cmp);
	} else {
		for (i = 1; i < count; i++) {
			for (j = i; j > 0 && key_cmp(base + (j - 1) * size, base + i * size) > 0; j--)
				;
			if (j == i)
				continue;
			memcpy(tmp, base + i * size, size);
			memmove(base + (j + 1) * size, base + j * size, (i - j) * size);
			memcpy(base + j * size, tmp, size);
		}
	}
	for (i = 1; i < count; i++) {
		const struct str *prev = (const struct str *)(base + (i - 1) * size);
		const struct str *cur = (const struct str *)(base + i * size);

		if (str_eq(*prev, *cur)) {
			int shown = cur->len > MSG_KEY_MAX ? MSG_KEY_MAX : (int)cur->len;

			/* A key that needed no unescaping points into the text. */
			if (cur->ptr > d->text && cur->ptr < d->text + jscan_offset(&d->s))
				at = (size_t)(cur->ptr - 1 - d->text);
			return decode_fail_at(d, d->schema_err, at, "duplicate %s \"%.*s\"", what, shown,
					      cur->ptr);
		}
	}
	return 0;
}

int decode_quantity_map(struct dctx *d, struct named_quantity **out, uint32_t *nout)
{
	struct jscan_str key;
	size_t at;
	int r, rc;

	jscan_peek(&d->s);
	at = decode_here(d);
	if ((r = decode_enter_object(d)) <= 0)
		return r;
	while ((r = decode_next_key(d, &key)) == 1) {
		struct named_quantity *q;
		struct str name;
		void *grown = NULL;

		decode_path_push(d, key.ptr, key.len);
		if ((rc = decode_map_entry(d, &key, *out, 0, *nout, sizeof(*q), "entries", &name,
					   &grown)) != 0)
			return rc;
		*out = grown;
		q = &(*out)[*nout];
		*q = (struct named_quantity){ .name = name };
		if ((rc = decode_read_quantity(d, &q->value)) != 0)
			return rc;
		(*nout)++;
		decode_path_pop(d);
	}
	return r < 0 ? r : decode_map_sort(d, *out, 0, *nout, sizeof(**out), "key", at);
}

int decode_count_list(struct dctx *d, uint32_t *count, int (*first)(struct dctx *d, void *obj),
		      void *obj)
{
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		decode_path_set_index(d, *count);
		rc = *count == 0 && first ? first(d, obj) : decode_skip(d);
		if (rc)
			return rc;
		(*count)++;
	}
	decode_path_pop(d);
	return r;
}
