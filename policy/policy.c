/* policy.c - the policy document: loader and lookups.
 *
 * The loader walks a doc tree (policy/doc.h) with a path stack, so every
 * error names the line and the path of the offending node. Everything a
 * policy holds is copied into its own arena: the doc tree and the input text
 * can go as soon as the load returns. */
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "doc.h"
#include "names.h"

/* A ConfigMap holds at most 1 MiB; a policy is a small fraction of that. */
#define POLICY_TEXT_MAX (1024 * 1024)
#define POLICY_STORAGE_CAP (8 * 1024 * 1024)
#define POLICY_LIST_MAX 4096
#define POLICY_PATH_MAX 256

struct loader {
	struct arena *a;
	struct policy *p;
	struct policy_error *err;
	const char *source;
	char path[POLICY_PATH_MAX];
	size_t path_len;
	int rc;
};

/* --- errors and the path stack ------------------------------------------ */

static void fail(struct loader *l, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct loader *l, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	if (l->rc)
		return;
	l->rc = -EINVAL;
	if (!l->err)
		return;
	va_start(ap, fmt);
	vsnprintf(l->err->msg, sizeof(l->err->msg), fmt, ap);
	va_end(ap);
	snprintf(l->err->path, sizeof(l->err->path), "%s", l->path);
	snprintf(l->err->source, sizeof(l->err->source), "%s", l->source ? l->source : "");
	l->err->line = line;
	l->err->col = col;
}

static void fail_nomem(struct loader *l)
{
	if (l->rc)
		return;
	fail(l, 0, 0, "out of memory (or over the %d byte policy size limit)", POLICY_STORAGE_CAP);
	l->rc = -ENOMEM;
}

static bool key_needs_brackets(struct str key)
{
	size_t i;

	if (key.len == 0)
		return true;
	for (i = 0; i < key.len; i++) {
		char c = key.ptr[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return true;
	}
	return false;
}

/* Append ".key" or "[\"key\"]"; returns the length to pop back to. A path
 * that would not fit ends in "..." rather than failing the load. */
static size_t path_push_key(struct loader *l, struct str key)
{
	size_t saved = l->path_len, room = sizeof(l->path) - l->path_len;
	int n;

	if (key_needs_brackets(key))
		n = snprintf(l->path + l->path_len, room, "[\"%.*s\"]", STR_FMT(key));
	else
		n = snprintf(l->path + l->path_len, room, "%s%.*s",
			     l->path_len ? "." : "", STR_FMT(key));
	if (n < 0 || (size_t)n >= room) {
		l->path_len = sizeof(l->path) - 4;
		memcpy(l->path + l->path_len, "...", 4);
		l->path_len += 3;
	} else {
		l->path_len += (size_t)n;
	}
	return saved;
}

static size_t path_push_index(struct loader *l, size_t i)
{
	size_t saved = l->path_len, room = sizeof(l->path) - l->path_len;
	int n = snprintf(l->path + l->path_len, room, "[%zu]", i);

	if (n > 0 && (size_t)n < room)
		l->path_len += (size_t)n;
	return saved;
}

static void path_pop(struct loader *l, size_t saved)
{
	l->path_len = saved;
	l->path[saved] = '\0';
}

/* --- typed readers --------------------------------------------------------- */

static bool expect(struct loader *l, const struct doc_node *n, enum doc_type t)
{
	if (n->type == t)
		return true;
	fail(l, n->line, n->col, "expected a %s, got a %s", doc_type_name(t), doc_type_name(n->type));
	return false;
}

/* Reject members of map n whose names are not in allowed (NULL-terminated). */
static bool check_keys(struct loader *l, const struct doc_node *n, const char *const *allowed)
{
	size_t i, j;

	for (i = 0; i < n->n; i++) {
		const struct doc_member *m = &n->members[i];
		char list[256];
		size_t len = 0;

		for (j = 0; allowed[j]; j++)
			if (str_eq_cstr(m->key, allowed[j]))
				break;
		if (allowed[j])
			continue;
		list[0] = '\0';
		for (j = 0; allowed[j] && len < sizeof(list); j++) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s", j ? ", " : "", allowed[j]);

			if (w < 0)
				break;
			len += (size_t)w;
		}
		fail(l, m->line, m->col, "unknown key \"%.*s\" (accepted: %s)", STR_FMT(m->key), list);
		return false;
	}
	return true;
}

static bool copy_str(struct loader *l, struct str in, struct str *out)
{
	if (arena_strdup(l->a, in.ptr, in.len, out) != 0) {
		fail_nomem(l);
		return false;
	}
	return true;
}

static bool read_string(struct loader *l, const struct doc_node *n, struct str *out)
{
	if (!expect(l, n, DOC_STRING))
		return false;
	if (memchr(n->text.ptr, '\0', n->text.len)) {
		fail(l, n->line, n->col, "string holds a NUL byte");
		return false;
	}
	return copy_str(l, n->text, out);
}

static bool read_nonempty_string(struct loader *l, const struct doc_node *n, struct str *out)
{
	if (!read_string(l, n, out))
		return false;
	if (out->len == 0) {
		fail(l, n->line, n->col, "must not be empty");
		return false;
	}
	return true;
}

typedef bool (*item_check_fn)(struct loader *l, const struct doc_node *n, struct str s);

/* A sequence of distinct non-empty strings; null means an empty list. */
static bool read_string_list(struct loader *l, const struct doc_node *n,
			     struct string_list *out, item_check_fn check)
{
	struct str *items;
	size_t i, j;

	out->items = NULL;
	out->n = 0;
	if (n->type == DOC_NULL)
		return true;
	if (!expect(l, n, DOC_SEQ))
		return false;
	if (n->n > POLICY_LIST_MAX) {
		fail(l, n->line, n->col, "%zu entries exceed the limit of %d", n->n, POLICY_LIST_MAX);
		return false;
	}
	items = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*items));
	if (!items) {
		fail_nomem(l);
		return false;
	}
	for (i = 0; i < n->n; i++) {
		const struct doc_node *it = n->items[i];
		size_t saved = path_push_index(l, i);
		bool ok = read_nonempty_string(l, it, &items[i]) &&
			  (!check || check(l, it, items[i]));

		for (j = 0; ok && j < i; j++) {
			if (str_eq(items[j], items[i])) {
				fail(l, it->line, it->col, "duplicate entry \"%.*s\"", STR_FMT(items[i]));
				ok = false;
			}
		}
		path_pop(l, saved);
		if (!ok)
			return false;
	}
	out->items = items;
	out->n = n->n;
	return true;
}

static bool check_serviceaccount(struct loader *l, const struct doc_node *n, struct str s)
{
	if (names_is_serviceaccount(s))
		return true;
	fail(l, n->line, n->col, "\"%.*s\" is not a ServiceAccount user name "
	     "(expected system:serviceaccount:<namespace>:<name>)", STR_FMT(s));
	return false;
}

static bool check_glob(struct loader *l, const struct doc_node *n, struct str s)
{
	/* fnmatch() has no error for a bad pattern; an unclosed '[' just never
	 * matches, which would silently exclude every node. */
	const char *open = memchr(s.ptr, '[', s.len);

	if (open && !memchr(open, ']', s.len - (size_t)(open - s.ptr))) {
		fail(l, n->line, n->col, "glob \"%.*s\" has an unclosed '['", STR_FMT(s));
		return false;
	}
	return true;
}

static bool check_dns_subdomain(struct loader *l, const struct doc_node *n, struct str s)
{
	if (names_is_dns_subdomain(s))
		return true;
	fail(l, n->line, n->col, "\"%.*s\" is not a valid DRA driver name "
	     "(a lowercase DNS subdomain such as gpu.example.com)", STR_FMT(s));
	return false;
}

static bool read_action(struct loader *l, const struct doc_node *n, enum action *out)
{
	struct str s;

	if (!expect(l, n, DOC_STRING))
		return false;
	s = n->text;
	if (action_parse(s, out) == 0)
		return true;
	fail(l, n->line, n->col, "unknown action \"%.*s\" (accepted: deny, warn, dryrun)", STR_FMT(s));
	return false;
}

static bool read_quantity(struct loader *l, const struct doc_node *n, struct quantity *out)
{
	int rc;

	if (n->type != DOC_STRING && n->type != DOC_NUMBER) {
		fail(l, n->line, n->col, "expected a quantity (such as 64Gi or 2), got a %s",
		     doc_type_name(n->type));
		return false;
	}
	rc = quantity_parse(n->text.ptr, n->text.len, out);
	if (rc == -ERANGE) {
		fail(l, n->line, n->col, "quantity \"%.*s\" is too large", STR_FMT(n->text));
		return false;
	}
	if (rc) {
		fail(l, n->line, n->col, "\"%.*s\" is not a quantity (such as 64Gi, 500m or 2)",
		     STR_FMT(n->text));
		return false;
	}
	return true;
}

/* --- sections ------------------------------------------------------------------ */

static const char *const enforcement_keys[] = { "default", "rules", NULL };

static void load_enforcement(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t i, saved;

	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, enforcement_keys))
		return;
	if ((v = doc_map_get(n, "default")) != NULL) {
		saved = path_push_key(l, STR_LIT("default"));
		read_action(l, v, &l->p->default_action);
		path_pop(l, saved);
	}
	v = doc_map_get(n, "rules");
	if (!v || v->type == DOC_NULL || l->rc)
		return;
	saved = path_push_key(l, STR_LIT("rules"));
	if (expect(l, v, DOC_MAP)) {
		for (i = 0; i < v->n && !l->rc; i++) {
			const struct doc_member *m = &v->members[i];
			int id = rule_lookup(m->key);
			size_t s2 = path_push_key(l, m->key);

			if (id < 0) {
				fail(l, m->line, m->col, "unknown rule id \"%.*s\" (`dra-guard rules` lists them)",
				     STR_FMT(m->key));
			} else if (read_action(l, m->value, &l->p->rule_action[id])) {
				l->p->rule_set[id] = true;
			}
			path_pop(l, s2);
		}
	}
	path_pop(l, saved);
}

static const char *const writers_keys[] = { "admins", "allocators", NULL };

static void load_writers(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, writers_keys))
		return;
	if ((v = doc_map_get(n, "admins")) != NULL) {
		saved = path_push_key(l, STR_LIT("admins"));
		read_string_list(l, v, &l->p->admin_groups, NULL);
		path_pop(l, saved);
	}
	if (!l->rc && (v = doc_map_get(n, "allocators")) != NULL) {
		saved = path_push_key(l, STR_LIT("allocators"));
		l->p->has_allocators = read_string_list(l, v, &l->p->allocators, NULL) && v->type != DOC_NULL;
		path_pop(l, saved);
	}
}

static const char *const resource_keys[] = { "max", NULL };

static bool load_driver_resources(struct loader *l, const struct doc_node *n, struct driver_policy *d)
{
	struct resource_limit *res;
	size_t i;

	d->has_resources = true;
	if (n->type == DOC_NULL)
		return true;
	if (!expect(l, n, DOC_MAP))
		return false;
	res = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*res));
	if (!res) {
		fail_nomem(l);
		return false;
	}
	for (i = 0; i < n->n && !l->rc; i++) {
		const struct doc_member *m = &n->members[i];
		const struct doc_node *v = m->value, *max;
		size_t saved = path_push_key(l, m->key);

		if (names_node_resource(m->key, NULL) == NODE_RESOURCE_INVALID) {
			fail(l, m->line, m->col, "\"%.*s\" is not a node resource (accepted: %s)",
			     STR_FMT(m->key), NAMES_NODE_RESOURCES_ACCEPTED);
		} else if (copy_str(l, m->key, &res[i].name) && v->type != DOC_NULL &&
			   expect(l, v, DOC_MAP) && check_keys(l, v, resource_keys) &&
			   (max = doc_map_get(v, "max")) != NULL) {
			size_t s2 = path_push_key(l, STR_LIT("max"));

			if (read_quantity(l, max, &res[i].max)) {
				if (quantity_sign(&res[i].max) <= 0)
					fail(l, max->line, max->col, "max must be greater than zero "
					     "(to forbid a resource, leave it out of resources)");
				res[i].has_max = true;
			}
			path_pop(l, s2);
		}
		path_pop(l, saved);
	}
	d->resources = res;
	d->nresources = n->n;
	return !l->rc;
}

static const char *const driver_keys[] = { "resources", "serviceAccounts", "scope", "deviceClasses", NULL };

static void load_driver(struct loader *l, const struct doc_member *m, struct driver_policy *d)
{
	const struct doc_node *n = m->value, *v;
	size_t saved;

	if (!check_dns_subdomain(l, n, m->key) || !copy_str(l, m->key, &d->name))
		return;
	d->scope = DRIVER_SCOPE_NODE;
	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, driver_keys))
		return;
	if ((v = doc_map_get(n, "resources")) != NULL) {
		saved = path_push_key(l, STR_LIT("resources"));
		load_driver_resources(l, v, d);
		path_pop(l, saved);
	}
	if (!l->rc && (v = doc_map_get(n, "serviceAccounts")) != NULL) {
		saved = path_push_key(l, STR_LIT("serviceAccounts"));
		read_string_list(l, v, &d->service_accounts, check_serviceaccount);
		path_pop(l, saved);
	}
	if (!l->rc && (v = doc_map_get(n, "deviceClasses")) != NULL) {
		saved = path_push_key(l, STR_LIT("deviceClasses"));
		read_string_list(l, v, &d->device_classes, NULL);
		path_pop(l, saved);
	}
	if (!l->rc && (v = doc_map_get(n, "scope")) != NULL) {
		saved = path_push_key(l, STR_LIT("scope"));
		if (expect(l, v, DOC_STRING)) {
			if (str_eq_cstr(v->text, "node"))
				d->scope = DRIVER_SCOPE_NODE;
			else if (str_eq_cstr(v->text, "cluster"))
				d->scope = DRIVER_SCOPE_CLUSTER;
			else
				fail(l, v->line, v->col, "unknown scope \"%.*s\" (accepted: node, cluster)",
				     STR_FMT(v->text));
		}
		path_pop(l, saved);
	}
}

static void load_drivers(struct loader *l, const struct doc_node *n)
{
	struct driver_policy *drivers;
	size_t i;

	if (n->type == DOC_NULL)
		return;
	if (!expect(l, n, DOC_MAP))
		return;
	if (n->n > POLICY_LIST_MAX) {
		fail(l, n->line, n->col, "%zu drivers exceed the limit of %d", n->n, POLICY_LIST_MAX);
		return;
	}
	drivers = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*drivers));
	if (!drivers) {
		fail_nomem(l);
		return;
	}
	for (i = 0; i < n->n && !l->rc; i++) {
		size_t saved = path_push_key(l, n->members[i].key);

		load_driver(l, &n->members[i], &drivers[i]);
		path_pop(l, saved);
	}
	l->p->has_drivers = true;
	l->p->drivers = drivers;
	l->p->ndrivers = n->n;
}

static const char *const canary_keys[] = { "nodes", NULL };

static void load_canary(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, canary_keys))
		return;
	v = doc_map_get(n, "nodes");
	if (!v)
		return;
	saved = path_push_key(l, STR_LIT("nodes"));
	if (read_string_list(l, v, &l->p->canary_nodes, check_glob))
		l->p->has_canary = v->type != DOC_NULL;
	path_pop(l, saved);
}

static const char *const freeze_keys[] = { "scope", "breakGlass", NULL };
static const char *const freeze_scope_keys[] = { "drivers", "deviceClasses", "namespaces", NULL };
static const char *const break_glass_keys[] = { "groups", "users", NULL };

static void load_list_member(struct loader *l, const struct doc_node *map, const char *key,
			     struct string_list *out, item_check_fn check)
{
	const struct doc_node *v = doc_map_get(map, key);
	size_t saved;

	if (!v || l->rc)
		return;
	saved = path_push_key(l, str_from_cstr(key));
	read_string_list(l, v, out, check);
	path_pop(l, saved);
}

static void load_freeze(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, freeze_keys))
		return;
	v = doc_map_get(n, "scope");
	if (v && v->type != DOC_NULL) {
		saved = path_push_key(l, STR_LIT("scope"));
		if (expect(l, v, DOC_MAP) && check_keys(l, v, freeze_scope_keys)) {
			l->p->freeze_scoped = true;
			load_list_member(l, v, "drivers", &l->p->freeze_drivers, check_dns_subdomain);
			load_list_member(l, v, "deviceClasses", &l->p->freeze_device_classes, NULL);
			load_list_member(l, v, "namespaces", &l->p->freeze_namespaces, NULL);
			if (!l->rc && l->p->freeze_drivers.n == 0 && l->p->freeze_device_classes.n == 0 &&
			    l->p->freeze_namespaces.n == 0)
				fail(l, v->line, v->col, "an empty scope would freeze nothing; "
				     "name drivers, deviceClasses or namespaces, or leave scope out to freeze everything");
		}
		path_pop(l, saved);
	}
	v = doc_map_get(n, "breakGlass");
	if (!l->rc && v && v->type != DOC_NULL) {
		saved = path_push_key(l, STR_LIT("breakGlass"));
		if (expect(l, v, DOC_MAP) && check_keys(l, v, break_glass_keys)) {
			load_list_member(l, v, "groups", &l->p->break_glass_groups, NULL);
			load_list_member(l, v, "users", &l->p->break_glass_users, NULL);
		}
		path_pop(l, saved);
	}
}

static const char *const numa_keys[] = { "attributes", NULL };

static void load_numa(struct loader *l, const struct doc_node *n)
{
	if (n->type == DOC_NULL || !expect(l, n, DOC_MAP) || !check_keys(l, n, numa_keys))
		return;
	load_list_member(l, n, "attributes", &l->p->numa_attributes, NULL);
}

static const char *const metadata_keys[] = { "name", "labels", "annotations", NULL };

static const char *const policy_keys[] = {
	"apiVersion", "kind", "metadata", "enforcement", "schedulers", "writers",
	"drivers", "canary", "freeze", "numa", NULL
};

static bool check_type_meta(struct loader *l, const struct doc_node *root,
			    const char *api_version, const char *kind)
{
	const struct doc_node *v = doc_map_get(root, "apiVersion");
	size_t saved;

	saved = path_push_key(l, STR_LIT("apiVersion"));
	if (!v)
		fail(l, root->line, root->col, "apiVersion is missing (expected %s)", api_version);
	else if (expect(l, v, DOC_STRING) && !str_eq_cstr(v->text, api_version))
		fail(l, v->line, v->col, "apiVersion \"%.*s\" is not supported (expected %s)",
		     STR_FMT(v->text), api_version);
	path_pop(l, saved);
	if (l->rc)
		return false;
	v = doc_map_get(root, "kind");
	saved = path_push_key(l, STR_LIT("kind"));
	if (!v)
		fail(l, root->line, root->col, "kind is missing (expected %s)", kind);
	else if (expect(l, v, DOC_STRING) && !str_eq_cstr(v->text, kind))
		fail(l, v->line, v->col, "kind \"%.*s\" is not supported here (expected %s)",
		     STR_FMT(v->text), kind);
	path_pop(l, saved);
	return !l->rc;
}

typedef void (*section_fn)(struct loader *l, const struct doc_node *n);

static void load_schedulers(struct loader *l, const struct doc_node *n)
{
	read_string_list(l, n, &l->p->schedulers, NULL);
}

static void load_metadata(struct loader *l, const struct doc_node *n)
{
	if (n->type != DOC_NULL && expect(l, n, DOC_MAP))
		check_keys(l, n, metadata_keys);
}

static const struct {
	const char *key;
	section_fn load;
} sections[] = {
	{ "metadata", load_metadata },
	{ "enforcement", load_enforcement },
	{ "schedulers", load_schedulers },
	{ "writers", load_writers },
	{ "drivers", load_drivers },
	{ "canary", load_canary },
	{ "freeze", load_freeze },
	{ "numa", load_numa },
};

static void load_document(struct loader *l, const struct doc_node *root)
{
	size_t i;

	if (root->type == DOC_NULL) {
		fail(l, root->line, root->col, "the policy document is empty (expected apiVersion: %s, kind: %s)",
		     POLICY_API_VERSION, POLICY_KIND);
		return;
	}
	if (!expect(l, root, DOC_MAP) || !check_type_meta(l, root, POLICY_API_VERSION, POLICY_KIND) ||
	    !check_keys(l, root, policy_keys))
		return;
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]) && !l->rc; i++) {
		const struct doc_node *v = doc_map_get(root, sections[i].key);
		size_t saved;

		if (!v)
			continue;
		saved = path_push_key(l, str_from_cstr(sections[i].key));
		sections[i].load(l, v);
		path_pop(l, saved);
	}
}

/* --- assembling a snapshot ------------------------------------------------------ */

static int loader_init(struct loader *l, struct policy_error *err)
{
	memset(l, 0, sizeof(*l));
	l->err = err;
	if (err)
		memset(err, 0, sizeof(*err));
	if (arena_new(POLICY_STORAGE_CAP, &l->a) != 0)
		return -ENOMEM;
	l->p = arena_calloc(l->a, 1, sizeof(*l->p));
	if (!l->p) {
		arena_free(l->a);
		l->a = NULL;
		return -ENOMEM;
	}
	l->p->storage = l->a;
	l->p->default_action = ACTION_DENY;
	return 0;
}

static void apply_defaults(struct loader *l)
{
	static const struct str default_scheduler = { POLICY_DEFAULT_SCHEDULER,
						      sizeof(POLICY_DEFAULT_SCHEDULER) - 1 };

	static const struct str default_allocators[] = {
		{ POLICY_DEFAULT_ALLOCATOR_SA, sizeof(POLICY_DEFAULT_ALLOCATOR_SA) - 1 },
		{ POLICY_DEFAULT_ALLOCATOR_KCM, sizeof(POLICY_DEFAULT_ALLOCATOR_KCM) - 1 },
	};

	if (l->p->schedulers.n == 0) {
		l->p->schedulers.items = &default_scheduler;
		l->p->schedulers.n = 1;
	}
	if (!l->p->has_allocators) {
		l->p->allocators.items = default_allocators;
		l->p->allocators.n = sizeof(default_allocators) / sizeof(default_allocators[0]);
	}
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
		char frame[96];
		int w = snprintf(frame, sizeof(frame), "%s:%d:%zu:", parts[k].name, parts[k].present,
				 parts[k].present ? parts[k].len : 0);

		if (EVP_DigestUpdate(ctx, frame, (size_t)w) != 1 ||
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
			fail(l, 1, 1, "freeze must be \"true\" or \"false\", not \"%.*s\"",
			     (int)(v.len > 64 ? 64 : v.len), v.ptr);
	}
	if (!l->rc && has_reason) {
		struct str v = trim(reason, reason_len);

		l->source = POLICY_KEY_FREEZE_REASON;
		if (v.len > POLICY_FREEZE_REASON_MAX)
			fail(l, 1, 1, "freeze-reason is %zu bytes; at most %d are allowed",
			     v.len, POLICY_FREEZE_REASON_MAX);
		else if (memchr(v.ptr, '\0', v.len))
			fail(l, 1, 1, "freeze-reason holds a NUL byte");
		else
			copy_str(l, v, &l->p->freeze_reason);
	}
}

static int finish(struct loader *l, const struct hash_part *parts, size_t nparts, struct policy **out)
{
	int rc = l->rc;

	if (!rc) {
		apply_defaults(l);
		rc = hash_parts(parts, nparts, l->p->hash);
	}
	if (rc) {
		arena_free(l->a);
		return rc;
	}
	*out = l->p;
	return 0;
}

static void parse_policy_text(struct loader *l, const char *doc, size_t doc_len)
{
	struct doc_limits lim;
	struct doc_error derr;
	struct doc_set *set = NULL;
	int rc;

	doc_limits_default(&lim);
	lim.max_bytes = POLICY_TEXT_MAX;
	lim.max_docs = 2;
	rc = doc_parse(doc, doc_len, &lim, &set, &derr);
	if (rc == -ENOMEM) {
		fail_nomem(l);
	} else if (rc) {
		fail(l, derr.line, derr.col, "%s", derr.msg);
	} else if (doc_set_count(set) != 1) {
		fail(l, 1, 1, "expected exactly one policy document, found %zu", doc_set_count(set));
	} else {
		load_document(l, doc_set_root(set, 0));
	}
	doc_set_free(set);
}

int policy_load_parts(const char *doc, size_t doc_len,
		      bool has_freeze, const char *freeze, size_t freeze_len,
		      bool has_reason, const char *reason, size_t reason_len,
		      struct policy **out, struct policy_error *err)
{
	struct loader l;
	struct hash_part parts[3] = {
		{ POLICY_KEY_DOCUMENT, true, doc, doc_len },
		{ POLICY_KEY_FREEZE, has_freeze, freeze, freeze_len },
		{ POLICY_KEY_FREEZE_REASON, has_reason, reason, reason_len },
	};
	int rc;

	*out = NULL;
	rc = loader_init(&l, err);
	if (rc)
		return rc;
	l.source = POLICY_KEY_DOCUMENT;
	parse_policy_text(&l, doc, doc_len);
	if (!l.rc)
		load_freeze_keys(&l, has_freeze, freeze, freeze_len, has_reason, reason, reason_len);
	return finish(&l, parts, 3, out);
}

static const char *const configmap_keys[] = {
	"apiVersion", "kind", "metadata", "data", "immutable", NULL
};
static const char *const configmap_data_keys[] = {
	POLICY_KEY_DOCUMENT, POLICY_KEY_FREEZE, POLICY_KEY_FREEZE_REASON, NULL
};

/* A ConfigMap manifest: check its shape here, then load its keys as parts. */
static int load_configmap(const struct doc_node *root, struct policy **out, struct policy_error *err)
{
	struct loader l;
	const struct doc_node *data, *doc = NULL, *freeze = NULL, *reason = NULL;
	size_t saved;
	int rc;

	rc = loader_init(&l, err);
	if (rc)
		return rc;
	if (!check_type_meta(&l, root, "v1", "ConfigMap") || !check_keys(&l, root, configmap_keys))
		goto fail;
	data = doc_map_get(root, "data");
	saved = path_push_key(&l, STR_LIT("data"));
	if (!data) {
		fail(&l, root->line, root->col, "data is missing (expected data[\"%s\"])", POLICY_KEY_DOCUMENT);
	} else if (expect(&l, data, DOC_MAP) && check_keys(&l, data, configmap_data_keys)) {
		doc = doc_map_get(data, POLICY_KEY_DOCUMENT);
		freeze = doc_map_get(data, POLICY_KEY_FREEZE);
		reason = doc_map_get(data, POLICY_KEY_FREEZE_REASON);
		if (!doc)
			fail(&l, data->line, data->col, "data[\"%s\"] is missing", POLICY_KEY_DOCUMENT);
		else
			expect(&l, doc, DOC_STRING);
		if (!l.rc && freeze)
			expect(&l, freeze, DOC_STRING);
		if (!l.rc && reason)
			expect(&l, reason, DOC_STRING);
	}
	path_pop(&l, saved);
	if (l.rc)
		goto fail;
	arena_free(l.a);
	rc = policy_load_parts(doc->text.ptr, doc->text.len,
			       freeze != NULL, freeze ? freeze->text.ptr : NULL, freeze ? freeze->text.len : 0,
			       reason != NULL, reason ? reason->text.ptr : NULL, reason ? reason->text.len : 0,
			       out, err);
	if (rc == -EINVAL && err && doc && err->source[0] && strcmp(err->source, POLICY_KEY_DOCUMENT) == 0) {
		/* Lines inside the embedded document are the document's own; say
		 * where it starts in the manifest. */
		size_t used = strlen(err->msg);

		snprintf(err->msg + used, sizeof(err->msg) - used,
			 " (in data[\"%s\"], which starts at line %u of the manifest)",
			 POLICY_KEY_DOCUMENT, doc->line);
	}
	return rc;
fail:
	rc = l.rc;
	arena_free(l.a);
	return rc;
}

int policy_load(const char *text, size_t len, struct policy **out, struct policy_error *err)
{
	struct doc_limits lim;
	struct doc_error derr;
	struct doc_set *set = NULL;
	const struct doc_node *root, *kind;
	int rc;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	doc_limits_default(&lim);
	lim.max_bytes = 2 * POLICY_TEXT_MAX;
	lim.max_docs = 2;
	rc = doc_parse(text, len, &lim, &set, &derr);
	if (rc) {
		if (err) {
			snprintf(err->msg, sizeof(err->msg), "%s", derr.msg);
			err->line = derr.line;
			err->col = derr.col;
		}
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	if (doc_set_count(set) != 1) {
		if (err) {
			snprintf(err->msg, sizeof(err->msg),
				 "expected exactly one document (a Policy or a ConfigMap), found %zu",
				 doc_set_count(set));
			err->line = 1;
		}
		rc = -EINVAL;
		goto out;
	}
	root = doc_set_root(set, 0);
	kind = doc_map_get(root, "kind");
	if (kind && kind->type == DOC_STRING && str_eq_cstr(kind->text, "ConfigMap")) {
		rc = load_configmap(root, out, err);
		goto out;
	}
	/* A Policy document: load it from the text so the hash covers exactly
	 * what a policy.yaml file with this content would. */
	rc = policy_load_parts(text, len, false, NULL, 0, false, NULL, 0, out, err);
out:
	doc_set_free(set);
	return rc;
}

int policy_builtin(struct policy **out)
{
	struct loader l;
	struct hash_part part = { "builtin", true, "builtin", 7 };
	int rc;

	*out = NULL;
	rc = loader_init(&l, NULL);
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
	enum action builtin = rule_builtin_action(id);

	if ((unsigned)id < RULE_COUNT && p->rule_set[id])
		return p->rule_action[id];
	return p->default_action > builtin ? p->default_action : builtin;
}

const struct driver_policy *policy_driver(const struct policy *p, struct str name)
{
	size_t i;

	for (i = 0; i < p->ndrivers; i++)
		if (str_eq(p->drivers[i].name, name))
			return &p->drivers[i];
	return NULL;
}

const struct resource_limit *policy_driver_resource(const struct driver_policy *d, struct str name)
{
	size_t i;

	for (i = 0; i < d->nresources; i++)
		if (str_eq(d->resources[i].name, name))
			return &d->resources[i];
	return NULL;
}

bool policy_list_has(const struct string_list *l, struct str s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (str_eq(l->items[i], s))
			return true;
	return false;
}

bool policy_list_glob(const struct string_list *l, struct str s)
{
	char name[512];
	size_t i;

	/* Node names are at most 253 bytes; a longer one matches nothing. */
	if (s.len >= sizeof(name) || memchr(s.ptr, '\0', s.len))
		return false;
	memcpy(name, s.ptr, s.len);
	name[s.len] = '\0';
	for (i = 0; i < l->n; i++)
		if (fnmatch(l->items[i].ptr, name, 0) == 0)
			return true;
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
