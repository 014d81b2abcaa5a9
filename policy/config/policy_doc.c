/* policy_doc.c - the sections of a Policy document.
 *
 * One loader per top-level key, in the order docs/rules.md documents them:
 * enforcement, schedulers, writers, drivers, canary, freeze, numa. Each
 * checks its keys (unknown ones are errors) and its values' meaning (rule ids,
 * node resources, ServiceAccount names, globs). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "policy_impl.h"

/* --- sections ------------------------------------------------------------------ */

static bool check_serviceaccount(struct loader *l, const struct doc_node *n, struct str s)
{
	if (names_is_serviceaccount(s))
		return true;
	policy_fail(l, n->line, n->col, "\"%.*s\" is not a ServiceAccount user name "
	     "(expected system:serviceaccount:<namespace>:<name>)", STR_FMT(s));
	return false;
}

static bool check_glob(struct loader *l, const struct doc_node *n, struct str s)
{
	/* fnmatch() has no error for a bad pattern; an unclosed '[' just never
	 * matches, which would silently exclude every node. */
	const char *open = memchr(s.ptr, '[', s.len);

	if (open && !memchr(open, ']', s.len - (size_t)(open - s.ptr))) {
		policy_fail(l, n->line, n->col, "glob \"%.*s\" has an unclosed '['", STR_FMT(s));
		return false;
	}
	return true;
}

static bool check_dns_subdomain(struct loader *l, const struct doc_node *n, struct str s)
{
	if (names_is_dns_subdomain(s))
		return true;
	policy_fail(l, n->line, n->col, "\"%.*s\" is not a valid DRA driver name "
	     "(a lowercase DNS subdomain such as gpu.example.com)", STR_FMT(s));
	return false;
}


static const char *const enforcement_keys[] = { "default", "rules", NULL };

static void load_enforcement(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t i, saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, enforcement_keys);
	if ((v = doc_map_get(n, "default")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("default"));
		policy_read_action(l, v, &l->p->default_action);
		policy_path_pop(l, saved);
	}
	v = doc_map_get(n, "rules");
	if (!v || v->type == DOC_NULL || l->stop)
		return;
	saved = policy_path_push_key(l, STR_LIT("rules"));
	if (policy_expect(l, v, DOC_MAP)) {
		for (i = 0; i < v->n && !l->stop; i++) {
			const struct doc_member *m = &v->members[i];
			int id = rule_lookup(m->key);
			size_t s2 = policy_path_push_key(l, m->key);

			if (id < 0) {
				policy_fail(l, m->line, m->col, "unknown rule id \"%.*s\" (`dra-guard rules` lists them)",
				     STR_FMT(m->key));
			} else if (policy_read_action(l, m->value, &l->p->rule_action[id])) {
				l->p->rule_set[id] = true;
			}
			policy_path_pop(l, s2);
		}
	}
	policy_path_pop(l, saved);
}

static const char *const writers_keys[] = { "admins", "allocators", "collectors", NULL };

static void load_writers(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, writers_keys);
	if ((v = doc_map_get(n, "admins")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("admins"));
		policy_read_string_list(l, v, &l->p->admin_groups, NULL);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "allocators")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("allocators"));
		l->p->has_allocators = policy_read_string_list(l, v, &l->p->allocators, NULL) && v->type != DOC_NULL;
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "collectors")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("collectors"));
		l->p->has_collectors = policy_read_string_list(l, v, &l->p->collectors, NULL) && v->type != DOC_NULL;
		policy_path_pop(l, saved);
	}
}

static const char *const resource_keys[] = { "max", NULL };

static int resource_cmp(const void *a, const void *b)
{
	return str_cmp(((const struct resource_limit *)a)->name, ((const struct resource_limit *)b)->name);
}

static bool load_driver_resources(struct loader *l, const struct doc_node *n, struct driver_policy *d)
{
	struct resource_limit *res;
	size_t i, errors = l->nerr;

	d->has_resources = true;
	if (n->type == DOC_NULL)
		return true;
	if (!policy_expect(l, n, DOC_MAP))
		return false;
	res = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*res));
	if (!res) {
		policy_fail_nomem(l);
		return false;
	}
	for (i = 0; i < n->n && !l->stop; i++) {
		const struct doc_member *m = &n->members[i];
		const struct doc_node *v = m->value, *max;
		size_t saved = policy_path_push_key(l, m->key);

		if (names_node_resource(m->key, NULL) == NODE_RESOURCE_INVALID)
			policy_fail(l, m->line, m->col, "\"%.*s\" is not a node resource (accepted: %s)",
			     STR_FMT(m->key), NAMES_NODE_RESOURCES_ACCEPTED);
		else if (policy_copy_str(l, m->key, &res[i].name) && v->type != DOC_NULL &&
			 policy_expect(l, v, DOC_MAP))
			policy_check_keys(l, v, resource_keys);
		else
			v = NULL;
		if (v && v->type == DOC_MAP && (max = doc_map_get(v, "max")) != NULL) {
			size_t s2 = policy_path_push_key(l, STR_LIT("max"));

			if (policy_read_quantity(l, max, &res[i].max) && policy_copy_str(l, max->text, &res[i].max_text)) {
				if (quantity_sign(&res[i].max) <= 0)
					policy_fail(l, max->line, max->col, "max must be greater than zero "
					     "(to forbid a resource, leave it out of resources)");
				res[i].has_max = true;
			}
			policy_path_pop(l, s2);
		}
		policy_path_pop(l, saved);
	}
	if (!l->rc)
		qsort(res, n->n, sizeof(*res), resource_cmp);
	d->resources = res;
	d->nresources = n->n;
	return l->nerr == errors;
}

static bool read_scope(struct loader *l, const struct doc_node *v, enum driver_scope *out)
{
	if (!policy_expect(l, v, DOC_STRING))
		return false;
	if (str_eq_cstr(v->text, "node"))
		*out = DRIVER_SCOPE_NODE;
	else if (str_eq_cstr(v->text, "cluster"))
		*out = DRIVER_SCOPE_CLUSTER;
	else {
		policy_fail(l, v->line, v->col, "unknown scope \"%.*s\" (accepted: node, cluster)", STR_FMT(v->text));
		return false;
	}
	return true;
}

static int account_cmp(const void *a, const void *b)
{
	return str_cmp(((const struct service_account_policy *)a)->name,
		       ((const struct service_account_policy *)b)->name);
}

static const char *const account_keys[] = { "name", "scope", "controllerPods", NULL };

/* One serviceAccounts entry: a user name (the driver's scope), or
 * {name, scope, controllerPods}. */
static bool load_account(struct loader *l, const struct doc_node *it, const struct driver_policy *d,
			 struct service_account_policy *a)
{
	const struct doc_node *v;
	size_t saved, errors = l->nerr;

	a->scope = d->scope;
	if (it->type == DOC_STRING)
		return policy_read_nonempty_string(l, it, &a->name) && check_serviceaccount(l, it, a->name);
	if (it->type != DOC_MAP) {
		policy_fail(l, it->line, it->col, "expected a ServiceAccount user name or a map with name, "
			    "scope and controllerPods, got a %s", doc_type_name(it->type));
		return false;
	}
	policy_check_keys(l, it, account_keys);
	if (!(v = doc_map_get(it, "name"))) {
		policy_fail(l, it->line, it->col, "name is missing (the ServiceAccount's user name, "
			    "system:serviceaccount:<namespace>:<name>)");
	} else {
		saved = policy_path_push_key(l, STR_LIT("name"));
		if (policy_read_nonempty_string(l, v, &a->name))
			check_serviceaccount(l, v, a->name);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(it, "scope")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("scope"));
		read_scope(l, v, &a->scope);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(it, "controllerPods")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("controllerPods"));
		if (policy_read_string_list(l, v, &a->controller_pods, check_glob) && a->controller_pods.n &&
		    a->scope == DRIVER_SCOPE_CLUSTER)
			policy_fail(l, v->line, v->col, "controllerPods only matter for scope: node (with scope: "
				    "cluster every Pod of the ServiceAccount writes at cluster scope)");
		policy_path_pop(l, saved);
	}
	return !l->stop && l->nerr == errors;
}

static void load_service_accounts(struct loader *l, const struct doc_node *n, struct driver_policy *d)
{
	struct service_account_policy *accounts;
	struct str *names, dup = { NULL, 0 };
	size_t i, errors = l->nerr;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_SEQ))
		return;
	if (n->n > POLICY_LIST_MAX) {
		policy_fail(l, n->line, n->col, "%zu entries exceed the limit of %d", n->n, POLICY_LIST_MAX);
		return;
	}
	accounts = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*accounts));
	names = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*names));
	if (!accounts || !names) {
		policy_fail_nomem(l);
		return;
	}
	for (i = 0; i < n->n && !l->stop; i++) {
		size_t saved = policy_path_push_index(l, i);

		if (load_account(l, n->items[i], d, &accounts[i]))
			names[i] = accounts[i].name;
		policy_path_pop(l, saved);
	}
	/* An entry that failed has no name to compare: what depends on it
	 * is skipped. */
	if (l->stop || l->nerr != errors)
		return;
	d->service_accounts.items = names;
	d->service_accounts.n = n->n;
	if (!policy_index_list(l, &d->service_accounts, &dup)) {
		if (l->stop)
			return;
		policy_fail_duplicates(l, n, names, "ServiceAccount", "is listed twice");
		return;
	}
	qsort(accounts, n->n, sizeof(*accounts), account_cmp);
	d->accounts = accounts;
	d->naccounts = n->n;
}

static const char *const driver_keys[] = { "resources", "serviceAccounts", "scope", "deviceClasses",
					   "numaAttribute", "numaAlign", NULL };

/* A device attribute name: a qualified name as DRA writes them
 * (domain/name, or a bare name the driver's domain is implied for). */
static bool check_attribute(struct loader *l, const struct doc_node *n, struct str s)
{
	size_t i;

	for (i = 0; i < s.len; i++) {
		char c = s.ptr[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.' || c == '/'))
			break;
	}
	if (s.len && s.len <= 317 && i == s.len && s.ptr[0] != '/' && s.ptr[s.len - 1] != '/')
		return true;
	policy_fail(l, n->line, n->col, "\"%.*s\" is not a device attribute name (a qualified name such as "
		    "gpu.example.com/numaNode)", STR_FMT(s));
	return false;
}

static void load_driver(struct loader *l, const struct doc_member *m, struct driver_policy *d)
{
	const struct doc_node *n = m->value, *v;
	size_t saved;

	if (!check_dns_subdomain(l, n, m->key) || !policy_copy_str(l, m->key, &d->name))
		return;
	d->scope = DRIVER_SCOPE_NODE;
	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, driver_keys);
	if ((v = doc_map_get(n, "resources")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("resources"));
		load_driver_resources(l, v, d);
		policy_path_pop(l, saved);
	}
	/* The driver's scope first: it is the scope of accounts that name none. */
	if (!l->stop && (v = doc_map_get(n, "scope")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("scope"));
		read_scope(l, v, &d->scope);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "serviceAccounts")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("serviceAccounts"));
		load_service_accounts(l, v, d);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "deviceClasses")) != NULL) {
		saved = policy_path_push_key(l, STR_LIT("deviceClasses"));
		policy_read_string_list(l, v, &d->device_classes, NULL);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "numaAttribute")) != NULL && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("numaAttribute"));
		if (policy_read_nonempty_string(l, v, &d->numa_attribute))
			check_attribute(l, v, d->numa_attribute);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "numaAlign")) != NULL && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("numaAlign"));
		if (policy_expect(l, v, DOC_BOOL))
			d->numa_align = v->boolean;
		policy_path_pop(l, saved);
	}
}

static int driver_cmp(const void *a, const void *b)
{
	return str_cmp(((const struct driver_policy *)a)->name, ((const struct driver_policy *)b)->name);
}

static void load_drivers(struct loader *l, const struct doc_node *n)
{
	struct driver_policy *drivers;
	size_t i;

	if (n->type == DOC_NULL)
		return;
	if (!policy_expect(l, n, DOC_MAP))
		return;
	if (n->n > POLICY_LIST_MAX) {
		policy_fail(l, n->line, n->col, "%zu drivers exceed the limit of %d", n->n, POLICY_LIST_MAX);
		return;
	}
	drivers = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*drivers));
	if (!drivers) {
		policy_fail_nomem(l);
		return;
	}
	for (i = 0; i < n->n && !l->stop; i++) {
		size_t saved = policy_path_push_key(l, n->members[i].key);

		load_driver(l, &n->members[i], &drivers[i]);
		policy_path_pop(l, saved);
	}
	if (!l->rc)
		qsort(drivers, n->n, sizeof(*drivers), driver_cmp);
	l->p->has_drivers = true;
	l->p->drivers = drivers;
	l->p->ndrivers = n->n;
}

static const char *const canary_keys[] = { "nodes", NULL };

static void load_canary(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, canary_keys);
	v = doc_map_get(n, "nodes");
	if (!v)
		return;
	saved = policy_path_push_key(l, STR_LIT("nodes"));
	if (policy_read_string_list(l, v, &l->p->canary_nodes, check_glob))
		l->p->has_canary = v->type != DOC_NULL;
	policy_path_pop(l, saved);
}

static const char *const freeze_keys[] = { "scope", "breakGlass", "alertAfter", "gatePods", NULL };
static const char *const freeze_scope_keys[] = { "drivers", "deviceClasses", "namespaces", NULL };
static const char *const break_glass_keys[] = { "groups", "users", NULL };

static void load_list_member(struct loader *l, const struct doc_node *map, const char *key,
			     struct string_list *out, item_check_fn check)
{
	const struct doc_node *v = doc_map_get(map, key);
	size_t saved;

	if (!v || l->stop)
		return;
	saved = policy_path_push_key(l, str_from_cstr(key));
	policy_read_string_list(l, v, out, check);
	policy_path_pop(l, saved);
}

static void load_freeze(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, freeze_keys);
	v = doc_map_get(n, "scope");
	if (v && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("scope"));
		if (policy_expect(l, v, DOC_MAP)) {
			/* An empty scope is an error only when every list read:
			 * a list that failed is empty too. */
			size_t errors = l->nerr;

			policy_check_keys(l, v, freeze_scope_keys);
			l->p->freeze_scoped = true;
			load_list_member(l, v, "drivers", &l->p->freeze_drivers, check_dns_subdomain);
			load_list_member(l, v, "deviceClasses", &l->p->freeze_device_classes, NULL);
			load_list_member(l, v, "namespaces", &l->p->freeze_namespaces, NULL);
			if (l->nerr == errors && l->p->freeze_drivers.n == 0 && l->p->freeze_device_classes.n == 0 &&
			    l->p->freeze_namespaces.n == 0)
				policy_fail(l, v->line, v->col, "an empty scope would freeze nothing; "
				     "name drivers, deviceClasses or namespaces, or leave scope out to freeze everything");
		}
		policy_path_pop(l, saved);
	}
	v = doc_map_get(n, "breakGlass");
	if (!l->stop && v && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("breakGlass"));
		if (policy_expect(l, v, DOC_MAP)) {
			policy_check_keys(l, v, break_glass_keys);
			load_list_member(l, v, "groups", &l->p->break_glass_groups, NULL);
			load_list_member(l, v, "users", &l->p->break_glass_users, NULL);
		}
		policy_path_pop(l, saved);
	}
	v = doc_map_get(n, "gatePods");
	if (!l->stop && v && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("gatePods"));
		if (policy_expect(l, v, DOC_BOOL))
			l->p->freeze_gate_pods = v->boolean;
		policy_path_pop(l, saved);
	}
	v = doc_map_get(n, "alertAfter");
	if (!l->stop && v && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("alertAfter"));
		policy_read_duration(l, v, POLICY_FREEZE_ALERT_AFTER_MIN_S, POLICY_FREEZE_ALERT_AFTER_MAX_S,
				     &l->p->freeze_alert_after_s);
		policy_path_pop(l, saved);
	}
}

static const char *const numa_keys[] = { "attributes", "alignDeviceClasses", NULL };

static void load_numa(struct loader *l, const struct doc_node *n)
{
	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, numa_keys);
	load_list_member(l, n, "attributes", &l->p->numa_attributes, check_attribute);
	load_list_member(l, n, "alignDeviceClasses", &l->p->numa_align_classes, NULL);
}

static const char *const ledger_keys[] = { "settleWindow", "undecided", NULL };

/* ledger.settleWindow and ledger.undecided. */
static void load_ledger(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, ledger_keys);
	if ((v = doc_map_get(n, "settleWindow")) != NULL && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("settleWindow"));
		policy_read_duration(l, v, 0, POLICY_SETTLE_WINDOW_MAX_S, &l->p->ledger_settle_s);
		policy_path_pop(l, saved);
	}
	if (!l->stop && (v = doc_map_get(n, "undecided")) != NULL && v->type != DOC_NULL) {
		saved = policy_path_push_key(l, STR_LIT("undecided"));
		if (policy_expect(l, v, DOC_STRING)) {
			if (str_eq_cstr(v->text, "allow"))
				l->p->ledger_undecided_deny = false;
			else if (str_eq_cstr(v->text, "deny"))
				l->p->ledger_undecided_deny = true;
			else
				policy_fail(l, v->line, v->col, "unknown value \"%.*s\" (accepted: allow, deny)",
					    STR_FMT(v->text));
		}
		policy_path_pop(l, saved);
	}
}

static const char *const view_keys[] = { "maxAge", NULL };

/* clusterView.maxAge: "90s", "5m", "1h", or whole seconds. */
static void load_cluster_view(struct loader *l, const struct doc_node *n)
{
	const struct doc_node *v;
	int64_t secs = 0, mult = 1;
	struct str t;
	size_t i, saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, view_keys);
	v = doc_map_get(n, "maxAge");
	if (!v)
		return;
	saved = policy_path_push_key(l, STR_LIT("maxAge"));
	t = v->text;
	if (v->type == DOC_STRING && t.len > 1 && (t.ptr[t.len - 1] == 's' || t.ptr[t.len - 1] == 'm' ||
						   t.ptr[t.len - 1] == 'h')) {
		mult = t.ptr[t.len - 1] == 's' ? 1 : t.ptr[t.len - 1] == 'm' ? 60 : 3600;
		t.len--;
	} else if (v->type != DOC_NUMBER && v->type != DOC_STRING) {
		t.len = 0;
	}
	for (i = 0; i < t.len && i < 9 && t.ptr[i] >= '0' && t.ptr[i] <= '9'; i++)
		secs = secs * 10 + (t.ptr[i] - '0');
	if (t.len == 0 || i != t.len || secs * mult < POLICY_VIEW_MAX_AGE_MIN ||
	    secs * mult > POLICY_VIEW_MAX_AGE_MAX)
		policy_fail(l, v->line, v->col, "\"%.*s\" is not a duration from %ds to %ds (write it as "
			    "seconds, or a number with s, m or h, e.g. \"5m\")", STR_FMT(v->text),
			    POLICY_VIEW_MAX_AGE_MIN, POLICY_VIEW_MAX_AGE_MAX);
	else
		l->p->view_max_age_s = secs * mult;
	policy_path_pop(l, saved);
}

static const char *const metadata_keys[] = { "name", "labels", "annotations", NULL };

static const char *const policy_keys[] = {
	"apiVersion", "kind", "metadata", "enforcement", "schedulers", "writers",
	"drivers", "canary", "freeze", "numa", "clusterView", "ledger", "promotion", NULL
};

bool policy_check_type_meta(struct loader *l, const struct doc_node *root,
			    const char *api_version, const char *kind)
{
	const struct doc_node *v = doc_map_get(root, "apiVersion");
	size_t saved, errors = l->nerr;

	saved = policy_path_push_key(l, STR_LIT("apiVersion"));
	if (!v)
		policy_fail(l, root->line, root->col, "apiVersion is missing (expected %s)", api_version);
	else if (policy_expect(l, v, DOC_STRING) && !str_eq_cstr(v->text, api_version))
		policy_fail(l, v->line, v->col, "apiVersion \"%.*s\" is not supported (expected %s)",
		     STR_FMT(v->text), api_version);
	policy_path_pop(l, saved);
	if (l->nerr != errors)
		return false;
	v = doc_map_get(root, "kind");
	saved = policy_path_push_key(l, STR_LIT("kind"));
	if (!v)
		policy_fail(l, root->line, root->col, "kind is missing (expected %s)", kind);
	else if (policy_expect(l, v, DOC_STRING) && !str_eq_cstr(v->text, kind))
		policy_fail(l, v->line, v->col, "kind \"%.*s\" is not supported here (expected %s)",
		     STR_FMT(v->text), kind);
	policy_path_pop(l, saved);
	return l->nerr == errors;
}

typedef void (*section_fn)(struct loader *l, const struct doc_node *n);

static void load_schedulers(struct loader *l, const struct doc_node *n)
{
	policy_read_string_list(l, n, &l->p->schedulers, NULL);
}

static void load_metadata(struct loader *l, const struct doc_node *n)
{
	if (n->type != DOC_NULL && policy_expect(l, n, DOC_MAP))
		policy_check_keys(l, n, metadata_keys);
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
	{ "clusterView", load_cluster_view },
	{ "ledger", load_ledger },
	{ "promotion", policy_load_promotion },
};

void policy_load_document(struct loader *l, const struct doc_node *root)
{
	size_t i;

	if (root->type == DOC_NULL) {
		policy_fail(l, root->line, root->col, "the policy document is empty (expected apiVersion: %s, kind: %s)",
		     POLICY_API_VERSION, POLICY_KIND);
		return;
	}
	/* Another kind of document: its keys would only be noise. */
	if (!policy_expect(l, root, DOC_MAP) || !policy_check_type_meta(l, root, POLICY_API_VERSION, POLICY_KIND))
		return;
	policy_check_keys(l, root, policy_keys);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]) && !l->stop; i++) {
		const struct doc_node *v = doc_map_get(root, sections[i].key);
		size_t saved;

		if (!v)
			continue;
		saved = policy_path_push_key(l, str_from_cstr(sections[i].key));
		sections[i].load(l, v);
		policy_path_pop(l, saved);
	}
}

