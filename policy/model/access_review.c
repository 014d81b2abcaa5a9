/* access_review.c - TokenReview and SubjectAccessReview bodies and answers,
 * and the cache of outcomes. */
#include "access_review.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "jw.h"

/* Deep enough for either answer (status.user.extra.KEY[i] is depth 5),
 * no deeper. */
#define ANSWER_DEPTH 16
#define ANSWER_NODES 8192

/* RFC 6750's b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/",
 * then "=" padding only at the end. */
static bool b64token_byte(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
	       ch == '.' || ch == '_' || ch == '~' || ch == '+' || ch == '/';
}

int access_review_bearer(const char *header, const char **tok, size_t *len)
{
	const char *p = header, *start;
	size_t n;

	*tok = NULL;
	*len = 0;
	if (!header || strncasecmp(p, "bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
		return -EINVAL;
	p += 6;
	while (*p == ' ' || *p == '\t')
		p++;
	start = p;
	while (b64token_byte((unsigned char)*p))
		p++;
	while (*p == '=')
		p++;
	n = (size_t)(p - start);
	while (*p == ' ' || *p == '\t')
		p++;
	if (n == 0 || *p != '\0')
		return -EINVAL;
	if (n > ACCESS_REVIEW_TOKEN_MAX)
		return -E2BIG;
	*tok = start;
	*len = n;
	return 0;
}

int access_review_token_body(const char *token, size_t len, struct buf *out)
{
	struct jw w;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "authentication.k8s.io/v1");
	jw_kcstr(&w, "kind", "TokenReview");
	jw_key(&w, "spec");
	jw_object_begin(&w);
	jw_kstring(&w, "token", token, len);
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}

static int parse(const char *text, size_t len, struct doc_set **set)
{
	struct doc_limits lim;
	int rc;

	if (len > ACCESS_REVIEW_ANSWER_MAX)
		return -E2BIG;
	lim.max_bytes = ACCESS_REVIEW_ANSWER_MAX;
	lim.max_depth = ANSWER_DEPTH;
	lim.max_nodes = ANSWER_NODES;
	lim.max_docs = 1;
	rc = doc_parse_json(text, len, &lim, set, NULL);
	return rc == -ENOMEM || rc == -E2BIG ? rc : rc ? -EINVAL : 0;
}

/* root's status map, after checking kind; NULL status is an empty one. */
static int status_of(const struct doc_node *root, const char *kind, const struct doc_node **status)
{
	const struct doc_node *k, *st;

	*status = NULL;
	if (!root || root->type != DOC_MAP)
		return -EINVAL;
	k = doc_map_get(root, "kind");
	if (!k || k->type != DOC_STRING || strcmp(k->text.ptr, kind) != 0)
		return -EINVAL;
	st = doc_map_get(root, "status");
	if (st && st->type != DOC_MAP && st->type != DOC_NULL)
		return -EINVAL;
	*status = st && st->type == DOC_MAP ? st : NULL;
	return 0;
}

/* An optional boolean member: absent or null is false. */
static int opt_bool(const struct doc_node *map, const char *key, bool *out)
{
	const struct doc_node *n = map ? doc_map_get(map, key) : NULL;

	*out = false;
	if (!n || n->type == DOC_NULL)
		return 0;
	if (n->type != DOC_BOOL)
		return -EINVAL;
	*out = n->boolean;
	return 0;
}

/* An optional string member: NULL when absent or null, -EINVAL otherwise
 * when not a string of at most ACCESS_REVIEW_STRING_MAX bytes. */
static int opt_str(const struct doc_node *map, const char *key, const struct doc_node **out)
{
	const struct doc_node *n = doc_map_get(map, key);

	*out = NULL;
	if (!n || n->type == DOC_NULL)
		return 0;
	if (n->type != DOC_STRING)
		return -EINVAL;
	if (n->text.len > ACCESS_REVIEW_STRING_MAX)
		return -E2BIG;
	*out = n;
	return 0;
}

/* A list of strings (groups, an extra's values) as a JSON array. */
static int add_str_list(struct jw *w, const struct doc_node *seq)
{
	size_t i;
	int rc;

	if (seq->type != DOC_SEQ)
		return -EINVAL;
	if (seq->n > ACCESS_REVIEW_GROUPS_MAX)
		return -E2BIG;
	rc = jw_array_begin(w);
	for (i = 0; rc == 0 && i < seq->n; i++) {
		const struct doc_node *s = seq->items[i];

		if (s->type != DOC_STRING)
			return -EINVAL;
		if (s->text.len > ACCESS_REVIEW_STRING_MAX)
			return -E2BIG;
		rc = jw_string(w, s->text.ptr, s->text.len);
	}
	return rc ? rc : jw_array_end(w);
}

/* status.user as the SubjectAccessReview's spec fields. */
static int add_user(struct buf *out, const struct doc_node *u, char *name, size_t namen)
{
	const struct doc_node *username, *uid, *groups, *extra;
	struct jw w;
	size_t i, n;
	int rc;

	if (!u || u->type != DOC_MAP)
		return -EINVAL;
	rc = opt_str(u, "username", &username);
	if (rc == 0)
		rc = opt_str(u, "uid", &uid);
	if (rc)
		return rc;
	/* An authenticated answer with no user name names nobody to ask about. */
	if (!username || username->text.len == 0)
		return -EINVAL;
	n = username->text.len < namen ? username->text.len : namen - 1;
	memcpy(name, username->text.ptr, n);
	name[n] = '\0';
	jw_init_members(&w, out);
	rc = jw_kstring(&w, "user", username->text.ptr, username->text.len);
	if (rc == 0 && uid && uid->text.len)
		rc = jw_kstring(&w, "uid", uid->text.ptr, uid->text.len);
	groups = doc_map_get(u, "groups");
	if (rc == 0 && groups && groups->type != DOC_NULL) {
		jw_key(&w, "groups");
		rc = add_str_list(&w, groups);
	}
	extra = doc_map_get(u, "extra");
	if (rc || !extra || extra->type == DOC_NULL)
		return rc ? rc : jw_finish(&w);
	if (extra->type != DOC_MAP)
		return -EINVAL;
	if (extra->n > ACCESS_REVIEW_EXTRA_MAX)
		return -E2BIG;
	jw_key(&w, "extra");
	rc = jw_object_begin(&w);
	for (i = 0; rc == 0 && i < extra->n; i++) {
		const struct doc_member *m = &extra->members[i];

		if (m->key.len > ACCESS_REVIEW_STRING_MAX)
			return -E2BIG;
		jw_key_str(&w, m->key);
		if (m->value->type == DOC_NULL) {
			jw_array_begin(&w);
			rc = jw_array_end(&w);
		} else {
			rc = add_str_list(&w, m->value);
		}
	}
	jw_object_end(&w);
	return rc ? rc : jw_finish(&w);
}

int access_review_token_answer(const char *text, size_t len, bool *authenticated, struct buf *user,
			       char *name, size_t namen)
{
	struct doc_set *set = NULL;
	const struct doc_node *st;
	size_t mark = buf_len(user);
	int rc;

	*authenticated = false;
	if (namen)
		name[0] = '\0';
	rc = parse(text, len, &set);
	if (rc == 0)
		rc = status_of(doc_set_root(set, 0), "TokenReview", &st);
	if (rc == 0)
		rc = opt_bool(st, "authenticated", authenticated);
	if (rc == 0 && *authenticated)
		rc = namen ? add_user(user, doc_map_get(st, "user"), name, namen) : -EINVAL;
	if (rc) {
		*authenticated = false;
		buf_truncate(user, mark);
		if (namen)
			name[0] = '\0';
	}
	doc_set_free(set);
	return rc;
}

int access_review_sar_body(const struct buf *user, const char *verb, const char *path, struct buf *out)
{
	struct jw w;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "authorization.k8s.io/v1");
	jw_kcstr(&w, "kind", "SubjectAccessReview");
	jw_key(&w, "spec");
	jw_object_begin(&w);
	jw_members(&w, buf_cstr(user), buf_len(user));
	jw_key(&w, "nonResourceAttributes");
	jw_object_begin(&w);
	jw_kcstr(&w, "path", path);
	jw_kcstr(&w, "verb", verb);
	jw_object_end(&w);
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}

int access_review_sar_answer(const char *text, size_t len, bool *allowed, char reason[ACCESS_REVIEW_REASON_MAX])
{
	struct doc_set *set = NULL;
	const struct doc_node *st, *why = NULL;
	bool denied = false;
	int rc;

	*allowed = false;
	reason[0] = '\0';
	rc = parse(text, len, &set);
	if (rc == 0)
		rc = status_of(doc_set_root(set, 0), "SubjectAccessReview", &st);
	if (rc == 0)
		rc = opt_bool(st, "allowed", allowed);
	if (rc == 0)
		rc = opt_bool(st, "denied", &denied);
	if (rc == 0 && st)
		rc = opt_str(st, "reason", &why);
	if (rc == 0 && why) {
		size_t n = why->text.len < ACCESS_REVIEW_REASON_MAX ? why->text.len : ACCESS_REVIEW_REASON_MAX - 1;

		memcpy(reason, why->text.ptr, n);
		reason[n] = '\0';
	}
	/* The API server never says both; if it did, the denial wins. */
	if (rc || denied)
		*allowed = false;
	doc_set_free(set);
	return rc;
}

/* --- the rate of reviews ----------------------------------------------------------- */

void access_rate_init(struct access_rate *r, uint32_t burst, int64_t interval_ns)
{
	memset(r, 0, sizeof(*r));
	r->burst = burst;
	r->interval_ns = interval_ns > 0 ? interval_ns : 1;
	r->tokens = burst;
}

bool access_rate_take(struct access_rate *r, int64_t now_ns)
{
	if (!r->started) {
		r->started = true;
		r->last_ns = now_ns;
	}
	/* Whole intervals since the last refill; the remainder carries over. */
	if (now_ns > r->last_ns) {
		int64_t n = (now_ns - r->last_ns) / r->interval_ns;

		if (n >= (int64_t)(r->burst - r->tokens)) {
			r->tokens = r->burst;
			r->last_ns = now_ns;
		} else if (n > 0) {
			r->tokens += (uint32_t)n;
			r->last_ns += n * r->interval_ns;
		}
	}
	if (r->tokens == 0)
		return false;
	r->tokens--;
	return true;
}

/* --- the cache ------------------------------------------------------------------ */

struct access_entry {
	uint8_t key[ACCESS_CACHE_KEY];
	int64_t expires_ns;
	enum access_outcome outcome;
	bool used;
};

struct access_cache {
	uint32_t cap;
	struct access_entry *e;
};

int access_cache_new(uint32_t cap, struct access_cache **out)
{
	struct access_cache *c;

	*out = NULL;
	if (cap == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->e = calloc(cap, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return -ENOMEM;
	}
	c->cap = cap;
	*out = c;
	return 0;
}

void access_cache_free(struct access_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

bool access_cache_get(const struct access_cache *c, const uint8_t key[ACCESS_CACHE_KEY], int64_t now_ns,
		      enum access_outcome *out)
{
	uint32_t i;

	for (i = 0; i < c->cap; i++) {
		const struct access_entry *e = &c->e[i];

		if (e->used && e->expires_ns > now_ns && memcmp(e->key, key, ACCESS_CACHE_KEY) == 0) {
			*out = e->outcome;
			return true;
		}
	}
	return false;
}

void access_cache_put(struct access_cache *c, const uint8_t key[ACCESS_CACHE_KEY], enum access_outcome outcome,
		      int64_t expires_ns)
{
	struct access_entry *slot = NULL;
	uint32_t i;

	/* The key's own entry, else a free one, else the one expiring first
	 * (an expired one expires before any live one). */
	for (i = 0; i < c->cap; i++) {
		struct access_entry *e = &c->e[i];

		if (e->used && memcmp(e->key, key, ACCESS_CACHE_KEY) == 0) {
			slot = e;
			break;
		}
		if (!e->used) {
			if (!slot || slot->used)
				slot = e;
		} else if (!slot || (slot->used && e->expires_ns < slot->expires_ns)) {
			slot = e;
		}
	}
	memcpy(slot->key, key, ACCESS_CACHE_KEY);
	slot->expires_ns = expires_ns;
	slot->outcome = outcome;
	slot->used = true;
}

uint32_t access_cache_live(const struct access_cache *c, int64_t now_ns)
{
	uint32_t i, n = 0;

	for (i = 0; i < c->cap; i++)
		n += c->e[i].used && c->e[i].expires_ns > now_ns;
	return n;
}
