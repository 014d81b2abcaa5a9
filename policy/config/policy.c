/* policy.c - the policy: snapshots from text, ConfigMap keys, lookups.
 *
 * A load parses the text into a doc tree, reads the document's sections into
 * a new snapshot (policy_doc.c, through the typed readers of
 * policy_read.c), adds the operator keys (freeze, freeze-reason) and a hash
 * of all inputs. Everything a policy holds is copied into its own arena: the
 * doc tree and the input text can go as soon as the load returns. */
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* Longest file name shown in an error line. */
#define PATH_MAX_LEN 4096

#include "doc.h"
#include "policy_impl.h"

/* --- assembling a snapshot ------------------------------------------------------ */

static int loader_start(struct loader *l, struct arena *a, bool borrowed, struct policy_error *errs,
			size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->err = errs;
	l->err_cap = errs ? cap : 0;
	if (l->err_cap)
		memset(errs, 0, l->err_cap * sizeof(*errs));
	l->a = a;
	l->borrowed = borrowed;
	l->p = arena_calloc(l->a, 1, sizeof(*l->p));
	if (!l->p) {
		if (borrowed) {
			/* The caller's arena is full: say so as any later
			 * failure would. */
			policy_fail_nomem(l);
			return l->rc;
		}
		arena_free(a);
		l->a = NULL;
		return -ENOMEM;
	}
	/* A borrowed arena is the caller's to free: the policy owns nothing. */
	l->p->storage = borrowed ? NULL : l->a;
	l->p->default_action = ACTION_DENY;
	l->p->freeze_alert_after_s = POLICY_FREEZE_ALERT_AFTER_DEFAULT_S;
	l->p->view_max_age_s = POLICY_VIEW_MAX_AGE_DEFAULT;
	l->p->ledger_settle_s = POLICY_SETTLE_WINDOW_DEFAULT_S;
	l->p->promotion.zero_divergence_s = POLICY_PROMOTION_WINDOW_DEFAULT_S;
	l->p->promotion.pending_p50_s = POLICY_PROMOTION_P50_DEFAULT_S;
	l->p->promotion.pending_p99_s = POLICY_PROMOTION_P99_DEFAULT_S;
	l->p->promotion.capacity_headroom_pct = POLICY_PROMOTION_HEADROOM_DEFAULT_PCT;
	l->p->promotion.require_rollback_drill = true;
	l->p->promotion.require_restarts = true;
	return 0;
}

int policy_loader_init(struct loader *l, struct policy_error *errs, size_t cap)
{
	struct arena *a = NULL;

	if (arena_new(POLICY_STORAGE_CAP, &a) != 0)
		return -ENOMEM;
	return loader_start(l, a, false, errs, cap);
}

int policy_loader_init_in(struct loader *l, struct arena *a, struct policy_error *errs, size_t cap)
{
	return loader_start(l, a, true, errs, cap);
}

/* A list of static items already in sorted order, with no patterns. */
static struct string_list static_list(const struct str *items, size_t n)
{
	struct string_list l = { items, n, items, NULL, NULL, 0 };

	return l;
}

static void apply_defaults(struct loader *l)
{
	static const struct str default_scheduler = { POLICY_DEFAULT_SCHEDULER,
						      sizeof(POLICY_DEFAULT_SCHEDULER) - 1 };
	/* Sorted: the lists are searched by bisection. */
	static const struct str default_allocators[] = {
		{ POLICY_DEFAULT_ALLOCATOR_KCM, sizeof(POLICY_DEFAULT_ALLOCATOR_KCM) - 1 },
		{ POLICY_DEFAULT_ALLOCATOR_SA, sizeof(POLICY_DEFAULT_ALLOCATOR_SA) - 1 },
	};
	static const struct str default_collectors[] = {
		{ POLICY_DEFAULT_ALLOCATOR_KCM, sizeof(POLICY_DEFAULT_ALLOCATOR_KCM) - 1 },
		{ POLICY_DEFAULT_COLLECTOR_SA, sizeof(POLICY_DEFAULT_COLLECTOR_SA) - 1 },
	};

	if (l->p->schedulers.n == 0)
		l->p->schedulers = static_list(&default_scheduler, 1);
	if (!l->p->has_allocators)
		l->p->allocators = static_list(default_allocators, 2);
	if (!l->p->has_collectors)
		l->p->collectors = static_list(default_collectors, 2);
}

/* The device classes a freeze scoped to drivers covers: each listed
 * driver's name (the usual class name) and the classes it serves, as one
 * sorted list, so a claim's classes are each one lookup. */
static int str_key_cmp(const void *a, const void *b)
{
	return str_cmp(*(const struct str *)a, *(const struct str *)b);
}

static void index_freeze_classes(struct loader *l)
{
	const struct policy *p = l->p;
	struct str *all, dup;
	size_t i, j, n = 0, total = p->freeze_drivers.n;

	for (i = 0; i < p->freeze_drivers.n; i++) {
		const struct driver_policy *d = policy_driver(p, p->freeze_drivers.items[i]);

		if (d)
			total += d->device_classes.n;
	}
	if (total == 0)
		return;
	all = arena_calloc(l->a, total, sizeof(*all));
	if (!all) {
		policy_fail_nomem(l);
		return;
	}
	for (i = 0; i < p->freeze_drivers.n; i++) {
		const struct driver_policy *d = policy_driver(p, p->freeze_drivers.items[i]);

		all[n++] = p->freeze_drivers.items[i];
		for (j = 0; d && j < d->device_classes.n; j++)
			all[n++] = d->device_classes.items[j];
	}
	/* The same class may come from two drivers: keep one of each. */
	qsort(all, n, sizeof(*all), str_key_cmp);
	for (i = 1, j = 1; i < n; i++)
		if (!str_eq(all[i], all[j - 1]))
			all[j++] = all[i];
	l->p->freeze_driver_classes.items = all;
	l->p->freeze_driver_classes.n = j;
	policy_index_list(l, &l->p->freeze_driver_classes, &dup);
}

struct hash_part {
	const char *name;
	bool present;
	const char *text;
	size_t len;
};

/* SHA-256 over length-framed parts, so moving bytes between keys changes it. */
static int hash_parts(const struct hash_part *parts, size_t n, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int rc = -ENOMEM;
	size_t k;

	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	for (k = 0; k < n; k++) {
		/* The name goes in as it is; the frame after it has a bounded
		 * length whatever the name (the digest is the same as of one
		 * "name:present:len:" string). */
		char frame[48];
		int w = snprintf(frame, sizeof(frame), ":%d:%zu:", parts[k].present,
				 parts[k].present ? parts[k].len : 0);

		if (w < 0 || (size_t)w >= sizeof(frame) ||
		    EVP_DigestUpdate(ctx, parts[k].name, strlen(parts[k].name)) != 1 ||
		    EVP_DigestUpdate(ctx, frame, (size_t)w) != 1 ||
		    (parts[k].present && parts[k].len &&
		     EVP_DigestUpdate(ctx, parts[k].text, parts[k].len) != 1))
			goto out;
	}
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		goto out;
	for (i = 0; i < mdlen; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 0xf];
	}
	out[64] = '\0';
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

static struct str trim(const char *s, size_t n)
{
	struct str r = { s, n };

	while (r.len && (r.ptr[0] == ' ' || r.ptr[0] == '\t' || r.ptr[0] == '\n' || r.ptr[0] == '\r')) {
		r.ptr++;
		r.len--;
	}
	while (r.len && (r.ptr[r.len - 1] == ' ' || r.ptr[r.len - 1] == '\t' ||
			 r.ptr[r.len - 1] == '\n' || r.ptr[r.len - 1] == '\r'))
		r.len--;
	return r;
}

static void load_freeze_keys(struct loader *l, bool has_freeze, const char *freeze, size_t freeze_len,
			     bool has_reason, const char *reason, size_t reason_len)
{
	if (has_freeze) {
		struct str v = trim(freeze, freeze_len);

		l->source = POLICY_KEY_FREEZE;
		if (str_eq_cstr(v, "true"))
			l->p->frozen = true;
		else if (str_eq_cstr(v, "false"))
			l->p->frozen = false;
		else
			policy_fail(l, 1, 1, "freeze must be \"true\" or \"false\", not \"%.*s\"",
			     (int)(v.len > 64 ? 64 : v.len), v.ptr);
	}
	if (!l->stop && has_reason) {
		struct str v = trim(reason, reason_len);

		l->source = POLICY_KEY_FREEZE_REASON;
		if (v.len > POLICY_FREEZE_REASON_MAX)
			policy_fail(l, 1, 1, "freeze-reason is %zu bytes; at most %d are allowed",
			     v.len, POLICY_FREEZE_REASON_MAX);
		else if (memchr(v.ptr, '\0', v.len))
			policy_fail(l, 1, 1, "freeze-reason holds a NUL byte");
		else
			policy_copy_str(l, v, &l->p->freeze_reason);
	}
}

static int finish(struct loader *l, const struct hash_part *parts, size_t nparts, struct policy **out)
{
	int rc = l->rc;

	if (!rc) {
		apply_defaults(l);
		index_freeze_classes(l);
		rc = l->rc;
	}
	/* A check (borrowed arena) gives no policy: no hash to compute. */
	if (!rc && !l->borrowed)
		rc = hash_parts(parts, nparts, l->p->hash);
	if (rc) {
		if (!l->borrowed)
			arena_free(l->a);
		return rc;
	}
	if (out)
		*out = l->p;
	return 0;
}

/* What a policy may cost to read. The guard parses a policy on every write
 * of its own ConfigMap (policy.invalid), so the parse is bounded by what a
 * real policy needs, not by the 1 MiB a ConfigMap may hold: a YAML flow
 * sequence of a million bytes would otherwise build half a million nodes
 * before the first list limit is even checked. */
static void policy_doc_limits(struct doc_limits *lim, size_t max_bytes)
{
	doc_limits_default(lim);
	lim->max_bytes = max_bytes;
	lim->max_docs = 2;
	lim->max_depth = POLICY_DEPTH_MAX;
	lim->max_nodes = POLICY_NODES_MAX;
}

static void parse_policy_text(struct loader *l, const char *doc, size_t doc_len)
{
	struct doc_limits lim;
	struct doc_error derr;
	struct doc_set *set = NULL;
	int rc;

	policy_doc_limits(&lim, POLICY_TEXT_MAX);
	rc = doc_parse_in(doc, doc_len, &lim, l->borrowed ? l->a : NULL, &set, &derr);
	if (rc == -ENOMEM || (l->borrowed && rc == -E2BIG && arena_error(l->a) == -E2BIG)) {
		policy_fail_nomem(l);
	} else if (rc) {
		policy_fail(l, derr.line, derr.col, "%s", derr.msg);
	} else if (doc_set_count(set) != 1) {
		policy_fail(l, 1, 1, "expected exactly one policy document, found %zu", doc_set_count(set));
	} else {
		policy_load_document(l, doc_set_root(set, 0));
	}
	doc_set_free(set);
}

/* The ConfigMap's keys through l: the document, then the freeze keys. */
static int load_parts(struct loader *l, const char *doc, size_t doc_len,
		      bool has_freeze, const char *freeze, size_t freeze_len,
		      bool has_reason, const char *reason, size_t reason_len,
		      struct policy **out, size_t *nerr)
{
	struct hash_part parts[3] = {
		{ POLICY_KEY_DOCUMENT, true, doc, doc_len },
		{ POLICY_KEY_FREEZE, has_freeze, freeze, freeze_len },
		{ POLICY_KEY_FREEZE_REASON, has_reason, reason, reason_len },
	};

	l->source = POLICY_KEY_DOCUMENT;
	parse_policy_text(l, doc, doc_len);
	if (!l->stop)
		load_freeze_keys(l, has_freeze, freeze, freeze_len, has_reason, reason, reason_len);
	*nerr = l->nerr;
	return finish(l, parts, 3, out);
}

int policy_load_parts_all(const char *doc, size_t doc_len,
			  bool has_freeze, const char *freeze, size_t freeze_len,
			  bool has_reason, const char *reason, size_t reason_len,
			  struct policy **out, struct policy_error *errs, size_t cap, size_t *nerr)
{
	struct loader l;
	int rc;

	*out = NULL;
	*nerr = 0;
	rc = policy_loader_init(&l, errs, cap);
	if (rc)
		return rc;
	return load_parts(&l, doc, doc_len, has_freeze, freeze, freeze_len, has_reason, reason, reason_len,
			  out, nerr);
}

int policy_check_parts(const char *doc, size_t doc_len,
		       bool has_freeze, const char *freeze, size_t freeze_len,
		       bool has_reason, const char *reason, size_t reason_len,
		       struct arena *a, struct policy_error *err)
{
	struct loader l;
	size_t nerr;
	int rc;

	rc = policy_loader_init_in(&l, a, err, err ? 1 : 0);
	if (rc)
		return rc;
	return load_parts(&l, doc, doc_len, has_freeze, freeze, freeze_len, has_reason, reason, reason_len,
			  NULL, &nerr);
}

int policy_load_parts(const char *doc, size_t doc_len,
		      bool has_freeze, const char *freeze, size_t freeze_len,
		      bool has_reason, const char *reason, size_t reason_len,
		      struct policy **out, struct policy_error *err)
{
	size_t nerr;

	return policy_load_parts_all(doc, doc_len, has_freeze, freeze, freeze_len, has_reason, reason,
				     reason_len, out, err, err ? 1 : 0, &nerr);
}

/* In the order of their position (an error without one first), so a lint
 * reads top to bottom. Few errors: insertion sort, stable. */
static void sort_errors(struct policy_error *errs, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		struct policy_error e = errs[i];

		for (j = i; j > 0 && (errs[j - 1].line > e.line ||
				      (errs[j - 1].line == e.line && errs[j - 1].col > e.col)); j--)
			errs[j] = errs[j - 1];
		errs[j] = e;
	}
}

static void one_error(struct policy_error *errs, size_t cap, size_t *nerr, uint32_t line, uint32_t col,
		      const char *msg)
{
	*nerr = 1;
	if (!cap)
		return;
	snprintf(errs[0].msg, sizeof(errs[0].msg), "%s", msg);
	errs[0].line = line;
	errs[0].col = col;
}

int policy_load_all(const char *text, size_t len, struct policy **out,
		    struct policy_error *errs, size_t cap, size_t *nerr)
{
	struct doc_limits lim;
	struct doc_error derr;
	struct doc_set *set = NULL;
	const struct doc_node *root, *kind;
	char msg[POLICY_ERROR_MAX];
	size_t i;
	int rc;

	*out = NULL;
	*nerr = 0;
	if (!errs)
		cap = 0;
	if (cap)
		memset(errs, 0, cap * sizeof(*errs));
	/* A ConfigMap manifest: the document is one string node inside it. */
	policy_doc_limits(&lim, 2 * POLICY_TEXT_MAX);
	rc = doc_parse(text, len, &lim, &set, &derr);
	if (rc) {
		one_error(errs, cap, nerr, derr.line, derr.col, derr.msg);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	if (doc_set_count(set) != 1) {
		snprintf(msg, sizeof(msg), "expected exactly one document (a Policy or a ConfigMap), found %zu",
			 doc_set_count(set));
		one_error(errs, cap, nerr, 1, 1, msg);
		rc = -EINVAL;
		goto out;
	}
	root = doc_set_root(set, 0);
	kind = doc_map_get(root, "kind");
	if (kind && kind->type == DOC_STRING && str_eq_cstr(kind->text, "ConfigMap")) {
		rc = policy_load_configmap(text, len, root, out, errs, cap, nerr);
	} else {
		/* A Policy document: load it from the text so the hash covers
		 * exactly what a policy.yaml file with this content would. Its
		 * positions are the text's own. */
		rc = policy_load_parts_all(text, len, false, NULL, 0, false, NULL, 0, out, errs, cap, nerr);
		for (i = 0; i < cap && i < *nerr; i++)
			errs[i].source[0] = '\0';
	}
	sort_errors(errs, *nerr < cap ? *nerr : cap);
out:
	doc_set_free(set);
	return rc;
}

int policy_load(const char *text, size_t len, struct policy **out, struct policy_error *err)
{
	size_t nerr;

	return policy_load_all(text, len, out, err, err ? 1 : 0, &nerr);
}

int policy_builtin(struct policy **out)
{
	struct loader l;
	struct hash_part part = { "builtin", true, "builtin", 7 };
	int rc;

	*out = NULL;
	rc = policy_loader_init(&l, NULL, 0);
	if (rc)
		return rc;
	return finish(&l, &part, 1, out);
}

void policy_free(struct policy *p)
{
	if (p)
		arena_free(p->storage);
}

/* --- lookups ---------------------------------------------------------------------- */

enum action policy_action(const struct policy *p, enum rule_id id)
{
	enum action builtin = rule_builtin_action(id), strictest = rule_strictest_action(id), a;

	if ((unsigned)id < RULE_COUNT && p->rule_set[id])
		a = p->rule_action[id];
	else
		a = p->default_action > builtin ? p->default_action : builtin;
	return a < strictest ? strictest : a;
}

static int driver_key_cmp(const void *key, const void *elem)
{
	return str_cmp(*(const struct str *)key, ((const struct driver_policy *)elem)->name);
}

const struct driver_policy *policy_driver(const struct policy *p, struct str name)
{
	if (p->ndrivers == 0)
		return NULL;
	return bsearch(&name, p->drivers, p->ndrivers, sizeof(*p->drivers), driver_key_cmp);
}

static int resource_key_cmp(const void *key, const void *elem)
{
	return str_cmp(*(const struct str *)key, ((const struct resource_limit *)elem)->name);
}

const struct resource_limit *policy_driver_resource(const struct driver_policy *d, struct str name)
{
	if (d->nresources == 0)
		return NULL;
	return bsearch(&name, d->resources, d->nresources, sizeof(*d->resources), resource_key_cmp);
}

static int account_key_cmp(const void *key, const void *elem)
{
	return str_cmp(*(const struct str *)key, ((const struct service_account_policy *)elem)->name);
}

const struct service_account_policy *policy_driver_account(const struct driver_policy *d, struct str user)
{
	if (d->naccounts == 0)
		return NULL;
	return bsearch(&user, d->accounts, d->naccounts, sizeof(*d->accounts), account_key_cmp);
}

bool policy_list_has(const struct string_list *l, struct str s)
{
	size_t i;

	if (l->n == 0)
		return false;
	if (l->sorted)
		return bsearch(&s, l->sorted, l->n, sizeof(*l->sorted), str_key_cmp) != NULL;
	for (i = 0; i < l->n; i++)
		if (str_eq(l->items[i], s))
			return true;
	return false;
}

bool policy_list_glob(const struct string_list *l, struct str s)
{
	char name[512];
	size_t i, k;

	/* Node and Pod names are at most 253 bytes; a longer one matches nothing. */
	if (s.len >= sizeof(name) || memchr(s.ptr, '\0', s.len))
		return false;
	if (policy_list_has(l, s))
		return true;
	memcpy(name, s.ptr, s.len);
	name[s.len] = '\0';
	if (!l->sorted) {
		for (i = 0; i < l->n; i++)
			if (fnmatch(l->items[i].ptr, name, 0) == 0)
				return true;
		return false;
	}
	for (k = 0; k <= s.len && l->npatterns; k++) {
		struct str head = { s.ptr, k };
		size_t lo = 0, hi = l->npatterns;

		/* The first pattern whose prefix is not below head. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (str_cmp(l->prefixes[mid], head) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (i = lo; i < l->npatterns && str_eq(l->prefixes[i], head); i++)
			if (fnmatch(l->patterns[i].ptr, name, 0) == 0)
				return true;
	}
	return false;
}

void policy_error_format(const struct policy_error *err, char *buf, size_t n)
{
	const char *src = err->source[0] ? err->source : "policy";

	if (err->line && err->path[0])
		snprintf(buf, n, "%s:%u:%u: %s: %s", src, err->line, err->col, err->path, err->msg);
	else if (err->line)
		snprintf(buf, n, "%s:%u:%u: %s", src, err->line, err->col, err->msg);
	else if (err->path[0])
		snprintf(buf, n, "%s: %s: %s", src, err->path, err->msg);
	else
		snprintf(buf, n, "%s: %s", src, err->msg);
}

void policy_error_format_in(const struct policy_error *err, const char *file, char *buf, size_t n)
{
	char where[PATH_MAX_LEN + 128];
	int w;

	if (err->source[0])
		w = snprintf(where, sizeof(where), "%.*s[\"%s\"]", PATH_MAX_LEN, file, err->source);
	else
		w = snprintf(where, sizeof(where), "%.*s", PATH_MAX_LEN, file);
	if (w > 0 && err->line)
		snprintf(where + w, sizeof(where) - (size_t)w, ":%u:%u", err->line, err->col);
	if (err->path[0])
		snprintf(buf, n, "%s: %s: %s", where, err->path, err->msg);
	else
		snprintf(buf, n, "%s: %s", where, err->msg);
}
