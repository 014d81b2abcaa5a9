/* pod_requests.c - a Pod's requests as the scheduler counts them (the rule
 * is in pod_requests.h). The Pod's members arrive as JSON text (the
 * decoder keeps them raw: the request path never needs them) and are read
 * here with the same validating scanner. */
#include "pod_requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "names.h"

#define DEPTH 16

/* A resource list while it is computed: names and values, unsorted. */
struct rlist {
	struct pod_request item[POD_REQUESTS_MAX_RESOURCES];
	uint32_t n;
};

struct container {
	struct str name;
	bool restartable;             /* restartPolicy: Always (a sidecar) */
	bool has_requests;
	struct rlist requests;
};

struct cstatus {
	struct str name;
	bool has_allocated, has_actuated;
	struct rlist allocated;       /* allocatedResources */
	struct rlist actuated;        /* resources.requests */
};

struct reader {
	struct arena *a;
	char *err;
	size_t errn;
};

static int fail(struct reader *r, const char *what, const char *why)
{
	snprintf(r->err, r->errn, "%s: %s", what, why);
	return -EINVAL;
}

static struct pod_request *rl_find(struct rlist *l, struct str name)
{
	uint32_t i;

	for (i = 0; i < l->n; i++)
		if (str_eq(l->item[i].name, name))
			return &l->item[i];
	return NULL;
}

/* l[name] = value (op 0), += value (op 1), max(l[name], value) (op 2). */
static int rl_apply(struct rlist *l, struct str name, const struct quantity *v, int op)
{
	struct pod_request *it = rl_find(l, name);

	if (!it) {
		if (l->n >= POD_REQUESTS_MAX_RESOURCES)
			return -E2BIG;
		it = &l->item[l->n++];
		it->name = name;
		it->value = *v;
		it->pod_level = false;
		return 0;
	}
	if (op == 0)
		it->value = *v;
	else if (op == 1)
		return quantity_add(&it->value, v, &it->value);
	else if (quantity_cmp(v, &it->value) > 0)
		it->value = *v;
	return 0;
}

static int rl_merge(struct rlist *dst, const struct rlist *src, int op)
{
	uint32_t i;
	int rc;

	for (i = 0; i < src->n; i++)
		if ((rc = rl_apply(dst, src->item[i].name, &src->item[i].value, op)) != 0)
			return rc;
	return 0;
}

static bool kept(struct str name)
{
	return names_node_resource(name, NULL) != NODE_RESOURCE_INVALID;
}

/* A map of quantities (requests, allocatedResources, overhead): the node
 * resources are kept, the rest (pods, extended resources) skipped. */
static int read_qty_map(struct reader *r, struct jscan *s, struct rlist *out, const char *what)
{
	struct jscan_str key, js;
	int k;

	if (jscan_null(s) == 1)
		return 0;
	if (jscan_object_enter(s) < 0)
		return fail(r, what, "not a map of quantities");
	while ((k = jscan_object_next(s, &key)) == 1) {
		struct quantity q;
		struct str name, text;

		k = jscan_str_decode(&key, r->a, &name);
		if (k == -EINVAL)
			return fail(r, what, "a resource name is not UTF-8");
		if (k < 0)
			return k;
		if (jscan_peek(s) == JSCAN_NUMBER) {
			if (jscan_number(s, &text) < 0)
				return fail(r, what, "a value is not a quantity");
		} else if (jscan_string(s, &js) < 0 || jscan_str_decode(&js, r->a, &text) < 0) {
			return fail(r, what, "a value is not a quantity");
		}
		if (!kept(name))
			continue;
		if (rl_find(out, name))
			return fail(r, what, "a resource is named twice");
		if (quantity_parse(text.ptr, text.len, &q) != 0)
			return fail(r, what, "a value is not a quantity");
		if (rl_apply(out, name, &q, 0) != 0)
			return -E2BIG;
	}
	return k < 0 ? fail(r, what, "not a map of quantities") : 0;
}

/* {"requests": {...}, ...} of a container or of the Pod. */
static int read_resources(struct reader *r, struct jscan *s, struct rlist *out, bool *has, const char *what)
{
	struct jscan_str key;
	int k, rc;

	if (jscan_null(s) == 1)
		return 0;
	if (jscan_object_enter(s) < 0)
		return fail(r, what, "resources is not an object");
	while ((k = jscan_object_next(s, &key)) == 1) {
		if (jscan_str_is(&key, "requests")) {
			/* requests: null is no list (Go's nil map), not an empty one. */
			if (jscan_peek(s) != JSCAN_NULL)
				*has = true;
			if ((rc = read_qty_map(r, s, out, what)) != 0)
				return rc;
		} else if (jscan_skip(s, NULL) < 0) {
			return fail(r, what, "not JSON");
		}
	}
	return k < 0 ? fail(r, what, "resources is not an object") : 0;
}

static int read_string(struct reader *r, struct jscan *s, struct str *out, const char *what)
{
	struct jscan_str js;
	int rc;

	if (jscan_null(s) == 1)
		return 0;
	if (jscan_string(s, &js) < 0)
		return fail(r, what, "expected a string");
	rc = jscan_str_decode(&js, r->a, out);
	return rc == -EINVAL ? fail(r, what, "not UTF-8") : rc;
}

/* One member (key) of an entry of a list read by read_entries(). */
typedef int (*entry_member_fn)(struct reader *r, struct jscan *s, const struct jscan_str *key, void *entry,
			       const char *what);

/* The JSON array raw (a list of objects; empty text: none) into an arena
 * array of elem-sized zeroed entries, each member given to member(); at
 * most POD_REQUESTS_MAX_CONTAINERS entries. */
static int read_entries(struct reader *r, struct str raw, size_t elem, entry_member_fn member, void **out,
			uint32_t *nout, const char *what)
{
	struct jscan s;
	struct jscan_str key;
	char *arr = NULL;
	uint32_t n = 0, cap = 0;
	int k, m, rc;

	*out = NULL;
	*nout = 0;
	if (raw.len == 0)
		return 0;
	jscan_init(&s, raw.ptr, raw.len, DEPTH);
	if (jscan_array_enter(&s) < 0)
		return fail(r, what, "not an array");
	while ((k = jscan_array_next(&s)) == 1) {
		void *e;

		if (n >= POD_REQUESTS_MAX_CONTAINERS)
			return -E2BIG;
		if (n == cap) {
			uint32_t ncap = cap ? cap * 2 : 4;

			if (!(arr = arena_grow(r->a, arr, cap * elem, ncap * elem)))
				return -ENOMEM;
			cap = ncap;
		}
		e = arr + (size_t)n++ * elem;
		memset(e, 0, elem);
		if (jscan_object_enter(&s) < 0)
			return fail(r, what, "an entry is not an object");
		while ((m = jscan_object_next(&s, &key)) == 1)
			if ((rc = member(r, &s, &key, e, what)) != 0)
				return rc;
		if (m < 0)
			return fail(r, what, "an entry is not an object");
	}
	if (k < 0 || jscan_finish(&s) < 0)
		return fail(r, what, "not an array");
	*out = arr;
	*nout = n;
	return 0;
}

static int skip_member(struct reader *r, struct jscan *s, const char *what)
{
	return jscan_skip(s, NULL) < 0 ? fail(r, what, "not JSON") : 0;
}

static int container_member(struct reader *r, struct jscan *s, const struct jscan_str *key, void *entry,
			    const char *what)
{
	struct container *c = entry;
	struct str policy = { "", 0 };
	int rc;

	if (jscan_str_is(key, "name"))
		return read_string(r, s, &c->name, what);
	if (jscan_str_is(key, "resources"))
		return read_resources(r, s, &c->requests, &c->has_requests, what);
	if (jscan_str_is(key, "restartPolicy")) {
		rc = read_string(r, s, &policy, what);
		c->restartable = str_eq_cstr(policy, "Always");
		return rc;
	}
	return skip_member(r, s, what);
}

static int status_member(struct reader *r, struct jscan *s, const struct jscan_str *key, void *entry,
			 const char *what)
{
	struct cstatus *cs = entry;

	if (jscan_str_is(key, "name"))
		return read_string(r, s, &cs->name, what);
	if (jscan_str_is(key, "allocatedResources")) {
		cs->has_allocated = jscan_peek(s) != JSCAN_NULL;
		return read_qty_map(r, s, &cs->allocated, what);
	}
	if (jscan_str_is(key, "resources"))
		return read_resources(r, s, &cs->actuated, &cs->has_actuated, what);
	return skip_member(r, s, what);
}

static int read_containers(struct reader *r, struct str raw, struct container **out, uint32_t *nout,
			   const char *what)
{
	void *arr = NULL;
	int rc = read_entries(r, raw, sizeof(**out), container_member, &arr, nout, what);

	*out = arr;
	return rc;
}

static int read_statuses(struct reader *r, struct str raw, struct cstatus **out, uint32_t *nout,
			 const char *what)
{
	void *arr = NULL;
	int rc = read_entries(r, raw, sizeof(**out), status_member, &arr, nout, what);

	*out = arr;
	return rc;
}

/* True when status.conditions holds PodResizePending with reason Infeasible
 * (the first PodResizePending decides, as IsPodResizeInfeasible reads it). */
static int read_infeasible(struct reader *r, struct str raw, bool *out)
{
	struct jscan s;
	struct jscan_str key;
	bool decided = false;
	int k, m, rc;

	*out = false;
	if (raw.len == 0)
		return 0;
	jscan_init(&s, raw.ptr, raw.len, DEPTH);
	if (jscan_array_enter(&s) < 0)
		return fail(r, "status.conditions", "not an array");
	while ((k = jscan_array_next(&s)) == 1) {
		struct str type = { "", 0 }, reason = { "", 0 };

		if (jscan_object_enter(&s) < 0)
			return fail(r, "status.conditions", "an entry is not an object");
		while ((m = jscan_object_next(&s, &key)) == 1) {
			if (jscan_str_is(&key, "type"))
				rc = read_string(r, &s, &type, "status.conditions");
			else if (jscan_str_is(&key, "reason"))
				rc = read_string(r, &s, &reason, "status.conditions");
			else
				rc = jscan_skip(&s, NULL) < 0 ? fail(r, "status.conditions", "not JSON") : 0;
			if (rc)
				return rc;
		}
		if (m < 0)
			return fail(r, "status.conditions", "an entry is not an object");
		if (!decided && str_eq_cstr(type, "PodResizePending")) {
			decided = true;
			*out = str_eq_cstr(reason, "Infeasible");
		}
	}
	return k < 0 || jscan_finish(&s) < 0 ? fail(r, "status.conditions", "not an array") : 0;
}

static int read_object_map(struct reader *r, struct str raw, struct rlist *out, bool resources,
			   bool *has, const char *what)
{
	struct jscan s;
	int rc;

	if (raw.len == 0)
		return 0;
	jscan_init(&s, raw.ptr, raw.len, DEPTH);
	rc = resources ? read_resources(r, &s, out, has, what) : read_qty_map(r, &s, out, what);
	if (rc == 0 && jscan_finish(&s) < 0)
		rc = fail(r, what, "not JSON");
	return rc;
}

enum source { SRC_SPEC, SRC_ALLOCATED, SRC_ACTUATED };

static const struct cstatus *find_status(const struct cstatus *a, uint32_t na, const struct cstatus *b,
					 uint32_t nb, struct str name)
{
	uint32_t i;

	for (i = 0; i < na; i++)
		if (str_eq(a[i].name, name))
			return &a[i];
	for (i = 0; i < nb; i++)
		if (str_eq(b[i].name, name))
			return &b[i];
	return NULL;
}

/* What one container contributes to the list of source src (NULL: nothing). */
static const struct rlist *container_list(const struct container *c, const struct cstatus *cs,
					  bool infeasible, enum source src)
{
	static const struct rlist empty;

	if (src == SRC_ACTUATED && cs && cs->has_actuated)
		return &cs->actuated;
	if (src != SRC_SPEC && cs && cs->has_allocated)
		return &cs->allocated;
	if (src != SRC_SPEC && infeasible)
		return NULL;
	return c->has_requests ? &c->requests : &empty;
}

struct pod_parts {
	struct container *containers, *inits;
	uint32_t ncontainers, ninits;
	struct cstatus *statuses, *init_statuses;
	uint32_t nstatuses, ninit_statuses;
	bool infeasible;
};

/* One of the three sums over the Pod, with the sidecar rule. */
static int aggregate(const struct pod_parts *pp, enum source src, struct rlist *out)
{
	struct rlist sidecars, init_peak, step;
	const struct rlist *l;
	uint32_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&sidecars, 0, sizeof(sidecars));
	memset(&init_peak, 0, sizeof(init_peak));
	for (i = 0; i < pp->ncontainers; i++) {
		const struct container *c = &pp->containers[i];

		l = container_list(c, find_status(pp->statuses, pp->nstatuses, pp->init_statuses,
						  pp->ninit_statuses, c->name), pp->infeasible, src);
		if (l && (rc = rl_merge(out, l, 1)) != 0)
			return rc;
	}
	for (i = 0; i < pp->ninits; i++) {
		const struct container *c = &pp->inits[i];

		l = container_list(c, find_status(pp->statuses, pp->nstatuses, pp->init_statuses,
						  pp->ninit_statuses, c->name), pp->infeasible, src);
		if (c->restartable) {
			if (l && ((rc = rl_merge(out, l, 1)) != 0 || (rc = rl_merge(&sidecars, l, 1)) != 0))
				return rc;
			step = sidecars;
		} else {
			memset(&step, 0, sizeof(step));
			if ((l && (rc = rl_merge(&step, l, 1)) != 0) || (rc = rl_merge(&step, &sidecars, 1)) != 0)
				return rc;
		}
		if ((rc = rl_merge(&init_peak, &step, 2)) != 0)
			return rc;
	}
	return rl_merge(out, &init_peak, 2);
}

static int cmp_request(const void *x, const void *y)
{
	return str_cmp(((const struct pod_request *)x)->name, ((const struct pod_request *)y)->name);
}

static bool pod_level_supported(struct str name)
{
	enum node_resource k = names_node_resource(name, NULL);

	return k == NODE_RESOURCE_CPU || k == NODE_RESOURCE_MEMORY || k == NODE_RESOURCE_HUGEPAGES;
}

int pod_requests_compute(const struct pod *p, struct arena *a, struct pod_requests *out, char *err, size_t n)
{
	struct reader r = { a, err, n };
	struct pod_parts pp;
	struct rlist spec, allocated, actuated, podres, overhead;
	bool has_podres = false, ignored = false;
	uint32_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&pp, 0, sizeof(pp));
	memset(&podres, 0, sizeof(podres));
	memset(&overhead, 0, sizeof(overhead));
	if ((rc = read_containers(&r, p->containers_raw, &pp.containers, &pp.ncontainers, "spec.containers")) ||
	    (rc = read_containers(&r, p->init_containers_raw, &pp.inits, &pp.ninits, "spec.initContainers")) ||
	    (rc = read_statuses(&r, p->container_statuses_raw, &pp.statuses, &pp.nstatuses,
				"status.containerStatuses")) ||
	    (rc = read_statuses(&r, p->init_statuses_raw, &pp.init_statuses, &pp.ninit_statuses,
				"status.initContainerStatuses")) ||
	    (rc = read_infeasible(&r, p->conditions_raw, &pp.infeasible)) ||
	    (rc = read_object_map(&r, p->pod_resources_raw, &podres, true, &has_podres, "spec.resources")) ||
	    (rc = read_object_map(&r, p->overhead_raw, &overhead, false, &ignored, "spec.overhead")))
		return rc;
	if ((rc = aggregate(&pp, SRC_SPEC, &spec)) || (rc = aggregate(&pp, SRC_ALLOCATED, &allocated)) ||
	    (rc = aggregate(&pp, SRC_ACTUATED, &actuated)))
		return rc;
	/* max(spec, actuated, allocated); the spec does not count while a
	 * resize is infeasible. */
	if (pp.infeasible)
		spec = actuated;
	else if ((rc = rl_merge(&spec, &actuated, 2)) != 0)
		return rc;
	if ((rc = rl_merge(&spec, &allocated, 2)) != 0)
		return rc;
	for (i = 0; i < podres.n; i++) {
		if (!pod_level_supported(podres.item[i].name))
			continue;
		if ((rc = rl_apply(&spec, podres.item[i].name, &podres.item[i].value, 0)) != 0)
			return rc;
		rl_find(&spec, podres.item[i].name)->pod_level = true;
	}
	if ((rc = rl_merge(&spec, &overhead, 1)) != 0)
		return rc;
	if (spec.n) {
		out->items = arena_alloc(a, spec.n * sizeof(*out->items));
		if (!out->items)
			return -ENOMEM;
		memcpy(out->items, spec.item, spec.n * sizeof(*out->items));
		qsort(out->items, spec.n, sizeof(*out->items), cmp_request);
	}
	out->n = spec.n;
	return 0;
}

const struct pod_request *pod_requests_get(const struct pod_requests *r, struct str name)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (str_eq(r->items[i].name, name))
			return &r->items[i];
	return NULL;
}
