/* replay_store.c - the replay's object texts, and what it reads of an
 * object's top level (replay_impl.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "jw.h"
#include "replay_impl.h"

/* "<kind>/<ns>/<name>" into buf (n bytes); the length, or 0 when too long. */
static size_t make_key(char *buf, size_t n, enum object_kind k, struct str ns, struct str name)
{
	size_t len = 2 + ns.len + 1 + name.len;

	if (len > n)
		return 0;
	buf[0] = (char)('0' + k);
	buf[1] = '/';
	if (ns.len)
		memcpy(buf + 2, ns.ptr, ns.len);
	buf[2 + ns.len] = '/';
	if (name.len)
		memcpy(buf + 3 + ns.len, name.ptr, name.len);
	return len;
}

struct store_key {
	const char *p;
	size_t len;
};

static bool key_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct replay_store *s = ctx;
	const struct store_key *k = key;

	return s->e[val]->key_len == k->len && memcmp(s->e[val]->key, k->p, k->len) == 0;
}

int replay_store_init(struct replay_store *s, size_t cap)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->cap = cap;
	/* The byte cap bounds the texts; the index's cap bounds the keys. */
	rc = hmap_init(&s->index, HMAP_CAP_MAX, key_eq, s);
	return rc ? rc : hmap_reserve(&s->index, 1024);
}

void replay_store_fini(struct replay_store *s)
{
	size_t i;

	for (i = 0; i < s->used; i++) {
		if (s->e[i])
			free(s->e[i]->text);
		free(s->e[i]);
	}
	free(s->e);
	free(s->holes);
	hmap_fini(&s->index);
	memset(s, 0, sizeof(*s));
}

const struct replay_store_entry *replay_store_get(const struct replay_store *s, enum object_kind kind,
						  struct str ns, struct str name)
{
	char key[1024];
	struct store_key k = { key, make_key(key, sizeof(key), kind, ns, name) };
	uint32_t at;

	if (!k.len || hmap_find(&s->index, hmap_hash(key, k.len), &k, &at) != 0)
		return NULL;
	return s->e[at];
}

/* A new entry for key in a hole of e or at its end, indexed; NULL for
 * memory or the index's cap. */
static struct replay_store_entry *add(struct replay_store *s, const struct store_key *k, uint32_t h)
{
	struct replay_store_entry *e;
	size_t at;

	if (!s->nholes && s->used == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 1024;
		struct replay_store_entry **ne = realloc(s->e, n * sizeof(*ne));
		uint32_t *nh = ne ? realloc(s->holes, n * sizeof(*nh)) : NULL;

		if (ne)
			s->e = ne;
		if (!nh)
			return NULL;
		s->holes = nh;
		s->alloc = n;
	}
	e = malloc(sizeof(*e) + k->len);
	if (!e)
		return NULL;
	e->key_len = (uint32_t)k->len;
	memcpy(e->key, k->p, k->len);
	e->text = NULL;
	e->text_len = 0;
	at = s->nholes ? s->holes[s->nholes - 1] : s->used;
	s->e[at] = e;
	if (hmap_put(&s->index, h, k, (uint32_t)at) != 0) {
		s->e[at] = NULL;
		free(e);
		return NULL;
	}
	if (s->nholes)
		s->nholes--;
	else
		s->used++;
	s->count++;
	return e;
}

int replay_store_put(struct replay_store *s, enum object_kind kind, struct str ns, struct str name,
		     struct str text)
{
	char key[1024];
	struct store_key k = { key, make_key(key, sizeof(key), kind, ns, name) };
	struct replay_store_entry *e = NULL;
	uint32_t h, at;
	char *copy;

	if (!k.len)
		return -E2BIG;
	h = hmap_hash(key, k.len);
	if (hmap_find(&s->index, h, &k, &at) == 0)
		e = s->e[at];
	if (s->bytes - (e ? e->text_len : 0) + text.len > s->cap)
		return -E2BIG;
	copy = malloc(text.len ? text.len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text.ptr, text.len);
	if (!e && !(e = add(s, &k, h))) {
		free(copy);
		return -ENOMEM;
	}
	s->bytes -= e->text_len;
	free(e->text);
	e->text = copy;
	e->text_len = text.len;
	s->bytes += text.len;
	return 0;
}

void replay_store_del(struct replay_store *s, enum object_kind kind, struct str ns, struct str name)
{
	char key[1024];
	struct store_key k = { key, make_key(key, sizeof(key), kind, ns, name) };
	struct replay_store_entry *e;
	uint32_t at;

	if (!k.len || hmap_del(&s->index, hmap_hash(key, k.len), &k, &at) != 0)
		return;
	e = s->e[at];
	s->bytes -= e->text_len;
	free(e->text);
	free(e);
	/* holes has room for every position of e. */
	s->e[at] = NULL;
	s->holes[s->nholes++] = at;
	s->count--;
}

static int read_metadata(struct jscan *s, struct replay_meta *m)
{
	struct jscan_str key, v;
	int64_t grace = 0;
	bool finalizers = false;
	int rc;

	if (jscan_object_enter(s))
		return -EBADMSG;
	while ((rc = jscan_object_next(s, &key)) == 1) {
		if (jscan_str_is(&key, "name") || jscan_str_is(&key, "namespace")) {
			struct str *dst = jscan_str_is(&key, "name") ? &m->name : &m->namespace;

			if (jscan_string(s, &v))
				return -EBADMSG;
			*dst = (struct str){ v.ptr, v.len };
		} else if (jscan_str_is(&key, "deletionTimestamp")) {
			m->deleting = jscan_peek(s) == JSCAN_STRING;
			if (jscan_skip(s, NULL))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "deletionGracePeriodSeconds") && jscan_peek(s) == JSCAN_NUMBER) {
			if (jscan_int64(s, &grace))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "finalizers") && jscan_peek(s) == JSCAN_ARRAY) {
			struct str raw;

			if (jscan_skip(s, &raw))
				return -EBADMSG;
			finalizers = raw.len > 2;
		} else if (jscan_skip(s, NULL)) {
			return -EBADMSG;
		}
	}
	if (rc < 0)
		return -EBADMSG;
	m->lingers = m->deleting && (finalizers || grace > 0);
	return 0;
}

static int read_data(struct jscan *s, struct replay_meta *m)
{
	struct jscan_str key, v;
	int rc;

	if (jscan_null(s) == 1)
		return 0;
	if (jscan_object_enter(s))
		return -EBADMSG;
	while ((rc = jscan_object_next(s, &key)) == 1) {
		if (jscan_str_is(&key, "freeze") && jscan_peek(s) == JSCAN_STRING) {
			if (jscan_string(s, &v))
				return -EBADMSG;
			m->has_freeze = true;
			/* as the policy loader reads it: surrounding whitespace
			 * ignored (here still escaped: \n is two bytes) */
			for (;;) {
				if (v.len && (v.ptr[0] == ' ' || v.ptr[0] == '\t'))
					v.ptr++, v.len--;
				else if (v.len >= 2 && v.ptr[0] == '\\' && memchr("ntr", v.ptr[1], 3))
					v.ptr += 2, v.len -= 2;
				else if (v.len && (v.ptr[v.len - 1] == ' ' || v.ptr[v.len - 1] == '\t'))
					v.len--;
				else if (v.len >= 2 && v.ptr[v.len - 2] == '\\' && memchr("ntr", v.ptr[v.len - 1], 3))
					v.len -= 2;
				else
					break;
			}
			m->frozen = v.len == 4 && memcmp(v.ptr, "true", 4) == 0;
		} else if (jscan_skip(s, NULL)) {
			return -EBADMSG;
		}
	}
	return rc < 0 ? -EBADMSG : 0;
}

static int read_pool(struct jscan *s, struct replay_meta *m)
{
	struct jscan_str key, v;
	int rc;

	if (jscan_object_enter(s))
		return -EBADMSG;
	while ((rc = jscan_object_next(s, &key)) == 1) {
		if (jscan_str_is(&key, "name") && jscan_peek(s) == JSCAN_STRING) {
			if (jscan_string(s, &v))
				return -EBADMSG;
			m->pool = (struct str){ v.ptr, v.len };
		} else if (jscan_str_is(&key, "generation") && jscan_peek(s) == JSCAN_NUMBER) {
			if (jscan_int64(s, &m->generation))
				return -EBADMSG;
		} else if (jscan_skip(s, NULL)) {
			return -EBADMSG;
		}
	}
	return rc < 0 ? -EBADMSG : 0;
}

static bool has_text(struct str hay, const char *needle)
{
	return hay.len && memmem(hay.ptr, hay.len, needle, strlen(needle)) != NULL;
}

static int read_spec(struct jscan *s, struct replay_meta *m)
{
	struct jscan_str key, v;
	struct str raw;
	int rc;

	if (jscan_peek(s) != JSCAN_OBJECT)
		return jscan_skip(s, NULL) ? -EBADMSG : 0;
	if (jscan_object_enter(s))
		return -EBADMSG;
	while ((rc = jscan_object_next(s, &key)) == 1) {
		if ((jscan_str_is(&key, "driver") || jscan_str_is(&key, "nodeName")) &&
		    jscan_peek(s) == JSCAN_STRING) {
			struct str *dst = jscan_str_is(&key, "driver") ? &m->driver : &m->node_name;

			if (jscan_string(s, &v))
				return -EBADMSG;
			*dst = (struct str){ v.ptr, v.len };
		} else if (jscan_str_is(&key, "pool") && jscan_peek(s) == JSCAN_OBJECT) {
			if (read_pool(s, m))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "devices")) {
			if (jscan_skip(s, &raw))
				return -EBADMSG;
			m->has_mappings = has_text(raw, "\"nodeAllocatableResourceMappings\":{\"") ||
					  has_text(raw, "\"nodeAllocatableResources\":{\"");
		} else if (jscan_str_is(&key, "resourceClaims")) {
			if (jscan_skip(s, &raw))
				return -EBADMSG;
			m->has_claims = raw.len > 2 && raw.ptr[0] == '[';
		} else if (jscan_skip(s, NULL)) {
			return -EBADMSG;
		}
	}
	return rc < 0 ? -EBADMSG : 0;
}

int replay_meta_read(struct str text, struct replay_meta *m)
{
	struct jscan s;
	struct jscan_str key, v;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!text.len)
		return -EBADMSG;
	jscan_init(&s, text.ptr, text.len, JSCAN_DEPTH_LIMIT);
	if (jscan_object_enter(&s))
		return -EBADMSG;
	while ((rc = jscan_object_next(&s, &key)) == 1) {
		if (jscan_str_is(&key, "kind")) {
			if (jscan_string(&s, &v))
				return -EBADMSG;
			m->kind = (struct str){ v.ptr, v.len };
		} else if (jscan_str_is(&key, "metadata")) {
			if (read_metadata(&s, m))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "data")) {
			if (read_data(&s, m))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "spec")) {
			if (read_spec(&s, m))
				return -EBADMSG;
		} else if (jscan_skip(&s, NULL)) {
			return -EBADMSG;
		}
	}
	return rc < 0 ? -EBADMSG : 0;
}

int replay_pod_bind(struct str pod, struct str node, struct buf *out)
{
	struct jscan s;
	struct jscan_str key;
	int rc;

	buf_reset(out);
	if (!pod.len)
		return -EBADMSG;
	jscan_init(&s, pod.ptr, pod.len, JSCAN_DEPTH_LIMIT);
	if (jscan_object_enter(&s))
		return -EBADMSG;
	while ((rc = jscan_object_next(&s, &key)) == 1) {
		size_t at;
		bool empty;

		if (!jscan_str_is(&key, "spec")) {
			if (jscan_skip(&s, NULL))
				return -EBADMSG;
			continue;
		}
		if (jscan_peek(&s) != JSCAN_OBJECT)
			return -EBADMSG;
		at = jscan_offset(&s) + 1;     /* just after the spec's '{' */
		if (jscan_object_enter(&s))
			return -EBADMSG;
		empty = jscan_object_next(&s, &key) == 0;
		rc = buf_add(out, pod.ptr, at);
		if (rc == 0) {
			struct jw w;

			jw_init_members(&w, out);
			jw_key(&w, "nodeName");
			jw_raw_string(&w, node);
			rc = jw_finish(&w);
		}
		if (rc == 0 && !empty)
			rc = buf_add_char(out, ',');
		if (rc == 0)
			rc = buf_add(out, pod.ptr + at, pod.len - at);
		return rc;
	}
	return -EBADMSG;
}

int replay_binding_target(struct str binding, struct str *node)
{
	struct jscan s;
	struct jscan_str key, v;
	int rc;

	if (!binding.len)
		return -EBADMSG;
	jscan_init(&s, binding.ptr, binding.len, JSCAN_DEPTH_LIMIT);
	if (jscan_object_enter(&s))
		return -EBADMSG;
	while ((rc = jscan_object_next(&s, &key)) == 1) {
		if (!jscan_str_is(&key, "target")) {
			if (jscan_skip(&s, NULL))
				return -EBADMSG;
			continue;
		}
		if (jscan_object_enter(&s))
			return -EBADMSG;
		while ((rc = jscan_object_next(&s, &key)) == 1) {
			if (!jscan_str_is(&key, "name")) {
				if (jscan_skip(&s, NULL))
					return -EBADMSG;
				continue;
			}
			if (jscan_string(&s, &v) || v.len == 0)
				return -EBADMSG;
			*node = (struct str){ v.ptr, v.len };
			return 0;
		}
		return -EBADMSG;
	}
	return -EBADMSG;
}
