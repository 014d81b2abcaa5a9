/* fieldcheck.c - the field table of the guarded kinds and the walk that
 * finds what is not in it.
 *
 * The table is the one place that says which fields the 1.36 API server's
 * Go types have (k8s.io/api resource/v1 and core/v1 at v0.36): a type is
 * its list of fields, and a field says what its value holds. A value that
 * is a scalar, a list of scalars or a map of scalars is a leaf: nothing
 * under it can be unknown. RawExtension values (opaque parameters, device
 * data) and a Pod's spec hold anything. Update the table with the API;
 * tests/test_fieldcheck.c pins the names the guard's rules read. */
#include <stdio.h>
#include <string.h>

#include "fieldcheck.h"

enum shape {
	LEAF,     /* scalar, or a list or map of scalars */
	ANY,      /* whatever the writer puts there: not checked */
	OBJ,      /* an object of type */
	LIST,     /* a list of objects of type */
	MAP,      /* a map of objects of type, any keys */
};

struct field {
	const char *name;
	enum shape shape;
	const struct type *type;      /* OBJ, LIST, MAP */
};

struct type {
	const struct field *fields;
	size_t n;
};

#define TYPE(id, ...)                                                                 \
	static const struct field id##_fields[] = { __VA_ARGS__ };                     \
	static const struct type id = { id##_fields, sizeof(id##_fields) / sizeof(id##_fields[0]) }

/* --- metav1 --------------------------------------------------------------- */

TYPE(owner_reference, { "apiVersion", LEAF, NULL }, { "kind", LEAF, NULL }, { "name", LEAF, NULL },
     { "uid", LEAF, NULL }, { "controller", LEAF, NULL }, { "blockOwnerDeletion", LEAF, NULL });
TYPE(managed_fields_entry, { "manager", LEAF, NULL }, { "operation", LEAF, NULL }, { "apiVersion", LEAF, NULL },
     { "time", LEAF, NULL }, { "fieldsType", LEAF, NULL }, { "fieldsV1", ANY, NULL },
     { "subresource", LEAF, NULL });
TYPE(object_meta, { "name", LEAF, NULL }, { "generateName", LEAF, NULL }, { "namespace", LEAF, NULL },
     { "selfLink", LEAF, NULL }, { "uid", LEAF, NULL }, { "resourceVersion", LEAF, NULL },
     { "generation", LEAF, NULL }, { "creationTimestamp", LEAF, NULL }, { "deletionTimestamp", LEAF, NULL },
     { "deletionGracePeriodSeconds", LEAF, NULL }, { "labels", LEAF, NULL }, { "annotations", LEAF, NULL },
     { "ownerReferences", LIST, &owner_reference }, { "finalizers", LEAF, NULL },
     { "managedFields", LIST, &managed_fields_entry });
TYPE(condition, { "type", LEAF, NULL }, { "status", LEAF, NULL }, { "observedGeneration", LEAF, NULL },
     { "lastTransitionTime", LEAF, NULL }, { "reason", LEAF, NULL }, { "message", LEAF, NULL });

/* --- core/v1 -------------------------------------------------------------- */

TYPE(node_selector_requirement, { "key", LEAF, NULL }, { "operator", LEAF, NULL }, { "values", LEAF, NULL });
TYPE(node_selector_term, { "matchExpressions", LIST, &node_selector_requirement },
     { "matchFields", LIST, &node_selector_requirement });
TYPE(node_selector, { "nodeSelectorTerms", LIST, &node_selector_term });

/* --- resource.k8s.io/v1 ResourceSlice --------------------------------------- */

TYPE(counter, { "value", LEAF, NULL });
TYPE(counter_set, { "name", LEAF, NULL }, { "counters", MAP, &counter });
TYPE(resource_pool, { "name", LEAF, NULL }, { "generation", LEAF, NULL }, { "resourceSliceCount", LEAF, NULL });
TYPE(device_attribute, { "int", LEAF, NULL }, { "bool", LEAF, NULL }, { "string", LEAF, NULL },
     { "version", LEAF, NULL }, { "ints", LEAF, NULL }, { "bools", LEAF, NULL }, { "strings", LEAF, NULL },
     { "versions", LEAF, NULL });
TYPE(capacity_request_policy_range, { "min", LEAF, NULL }, { "max", LEAF, NULL }, { "step", LEAF, NULL });
TYPE(capacity_request_policy, { "default", LEAF, NULL }, { "validValues", LEAF, NULL },
     { "validRange", OBJ, &capacity_request_policy_range });
TYPE(device_capacity, { "value", LEAF, NULL }, { "requestPolicy", OBJ, &capacity_request_policy });
TYPE(device_counter_consumption, { "counterSet", LEAF, NULL }, { "counters", MAP, &counter });
TYPE(device_taint, { "key", LEAF, NULL }, { "value", LEAF, NULL }, { "effect", LEAF, NULL },
     { "timeAdded", LEAF, NULL });
TYPE(node_allocatable_resource_mapping, { "capacityKey", LEAF, NULL }, { "allocationMultiplier", LEAF, NULL });
TYPE(device, { "name", LEAF, NULL }, { "attributes", MAP, &device_attribute }, { "capacity", MAP, &device_capacity },
     { "consumesCounters", LIST, &device_counter_consumption }, { "nodeName", LEAF, NULL },
     { "nodeSelector", OBJ, &node_selector }, { "allNodes", LEAF, NULL }, { "taints", LIST, &device_taint },
     { "bindsToNode", LEAF, NULL }, { "bindingConditions", LEAF, NULL }, { "bindingFailureConditions", LEAF, NULL },
     { "allowMultipleAllocations", LEAF, NULL },
     { "nodeAllocatableResourceMappings", MAP, &node_allocatable_resource_mapping });
TYPE(resource_slice_spec, { "driver", LEAF, NULL }, { "pool", OBJ, &resource_pool }, { "nodeName", LEAF, NULL },
     { "nodeSelector", OBJ, &node_selector }, { "allNodes", LEAF, NULL }, { "devices", LIST, &device },
     { "perDeviceNodeSelection", LEAF, NULL }, { "sharedCounters", LIST, &counter_set });
TYPE(resource_slice, { "apiVersion", LEAF, NULL }, { "kind", LEAF, NULL }, { "metadata", OBJ, &object_meta },
     { "spec", OBJ, &resource_slice_spec });

/* --- resource.k8s.io/v1 ResourceClaim ---------------------------------------- */

TYPE(cel_device_selector, { "expression", LEAF, NULL });
TYPE(device_selector, { "cel", OBJ, &cel_device_selector });
TYPE(device_toleration, { "key", LEAF, NULL }, { "operator", LEAF, NULL }, { "value", LEAF, NULL },
     { "effect", LEAF, NULL }, { "tolerationSeconds", LEAF, NULL });
TYPE(capacity_requirements, { "requests", LEAF, NULL });
TYPE(exact_device_request, { "deviceClassName", LEAF, NULL }, { "selectors", LIST, &device_selector },
     { "allocationMode", LEAF, NULL }, { "count", LEAF, NULL }, { "adminAccess", LEAF, NULL },
     { "tolerations", LIST, &device_toleration }, { "capacity", OBJ, &capacity_requirements });
TYPE(device_sub_request, { "name", LEAF, NULL }, { "deviceClassName", LEAF, NULL },
     { "selectors", LIST, &device_selector }, { "allocationMode", LEAF, NULL }, { "count", LEAF, NULL },
     { "tolerations", LIST, &device_toleration }, { "capacity", OBJ, &capacity_requirements });
TYPE(device_request, { "name", LEAF, NULL }, { "exactly", OBJ, &exact_device_request },
     { "firstAvailable", LIST, &device_sub_request });
TYPE(device_constraint, { "requests", LEAF, NULL }, { "matchAttribute", LEAF, NULL },
     { "distinctAttribute", LEAF, NULL });
TYPE(opaque_device_configuration, { "driver", LEAF, NULL }, { "parameters", ANY, NULL });
TYPE(device_claim_configuration, { "requests", LEAF, NULL }, { "opaque", OBJ, &opaque_device_configuration });
TYPE(device_claim, { "requests", LIST, &device_request }, { "constraints", LIST, &device_constraint },
     { "config", LIST, &device_claim_configuration });
TYPE(resource_claim_spec, { "devices", OBJ, &device_claim });
TYPE(device_request_allocation_result, { "request", LEAF, NULL }, { "driver", LEAF, NULL }, { "pool", LEAF, NULL },
     { "device", LEAF, NULL }, { "adminAccess", LEAF, NULL }, { "tolerations", LIST, &device_toleration },
     { "bindingConditions", LEAF, NULL }, { "bindingFailureConditions", LEAF, NULL }, { "shareID", LEAF, NULL },
     { "consumedCapacity", LEAF, NULL });
TYPE(device_allocation_configuration, { "source", LEAF, NULL }, { "requests", LEAF, NULL },
     { "opaque", OBJ, &opaque_device_configuration });
TYPE(device_allocation_result, { "results", LIST, &device_request_allocation_result },
     { "config", LIST, &device_allocation_configuration });
TYPE(allocation_result, { "devices", OBJ, &device_allocation_result }, { "nodeSelector", OBJ, &node_selector },
     { "allocationTimestamp", LEAF, NULL });
TYPE(resource_claim_consumer_reference, { "apiGroup", LEAF, NULL }, { "resource", LEAF, NULL },
     { "name", LEAF, NULL }, { "uid", LEAF, NULL });
TYPE(network_device_data, { "interfaceName", LEAF, NULL }, { "ips", LEAF, NULL }, { "hardwareAddress", LEAF, NULL });
TYPE(allocated_device_status, { "driver", LEAF, NULL }, { "pool", LEAF, NULL }, { "device", LEAF, NULL },
     { "shareID", LEAF, NULL }, { "conditions", LIST, &condition }, { "data", ANY, NULL },
     { "networkData", OBJ, &network_device_data });
TYPE(resource_claim_status, { "allocation", OBJ, &allocation_result },
     { "reservedFor", LIST, &resource_claim_consumer_reference }, { "devices", LIST, &allocated_device_status });
TYPE(resource_claim, { "apiVersion", LEAF, NULL }, { "kind", LEAF, NULL }, { "metadata", OBJ, &object_meta },
     { "spec", OBJ, &resource_claim_spec }, { "status", OBJ, &resource_claim_status });

/* --- core/v1 Pod (the status parts the guard reads) and ConfigMap ------------- */

TYPE(node_allocatable_resource_claim_status, { "resourceClaimName", LEAF, NULL }, { "containers", LEAF, NULL },
     { "resources", LEAF, NULL });
TYPE(pod_status, { "observedGeneration", LEAF, NULL }, { "phase", LEAF, NULL }, { "conditions", ANY, NULL },
     { "message", LEAF, NULL }, { "reason", LEAF, NULL }, { "nominatedNodeName", LEAF, NULL },
     { "hostIP", LEAF, NULL }, { "hostIPs", ANY, NULL }, { "podIP", LEAF, NULL }, { "podIPs", ANY, NULL },
     { "startTime", LEAF, NULL }, { "initContainerStatuses", ANY, NULL }, { "containerStatuses", ANY, NULL },
     { "qosClass", LEAF, NULL }, { "ephemeralContainerStatuses", ANY, NULL }, { "resize", LEAF, NULL },
     { "resourceClaimStatuses", ANY, NULL }, { "extendedResourceClaimStatus", ANY, NULL },
     { "allocatedResources", ANY, NULL }, { "resources", ANY, NULL },
     { "nodeAllocatableResourceClaimStatuses", LIST, &node_allocatable_resource_claim_status });
TYPE(pod, { "apiVersion", LEAF, NULL }, { "kind", LEAF, NULL }, { "metadata", OBJ, &object_meta },
     { "spec", ANY, NULL }, { "status", OBJ, &pod_status });
TYPE(config_map, { "apiVersion", LEAF, NULL }, { "kind", LEAF, NULL }, { "metadata", OBJ, &object_meta },
     { "data", LEAF, NULL }, { "binaryData", LEAF, NULL }, { "immutable", LEAF, NULL });

static const struct {
	const char *api_version, *kind;
	const struct type *type;
} kinds[] = {
	{ "resource.k8s.io/v1", "ResourceSlice", &resource_slice },
	{ "resource.k8s.io/v1", "ResourceClaim", &resource_claim },
	{ "v1", "Pod", &pod },
	{ "v1", "ConfigMap", &config_map },
};

/* Names a 1.36 API server does not know but a writer may well send:
 * Kubernetes 1.37 renamed the mappings, and a 1.36 server drops the new
 * name as it drops any unknown field. */
static const struct {
	const struct type *in;
	const char *name, *instead, *note;
} renamed[] = {
	{ &device, "nodeAllocatableResources", "nodeAllocatableResourceMappings",
	  "the Kubernetes 1.37 name; a 1.36 API server drops it" },
};

/* --- names ------------------------------------------------------------------ */

#define NAME_CMP_MAX 80                 /* longer keys get no suggestion */

static size_t edit_distance(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t row[NAME_CMP_MAX + 1], i, j;

	for (j = 0; j <= blen; j++)
		row[j] = j;
	for (i = 1; i <= alen; i++) {
		size_t diag = row[0], up;

		row[0] = i;
		for (j = 1; j <= blen; j++) {
			size_t best = diag + (a[i - 1] != b[j - 1]);

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[blen];
}

static bool equal_but_case(const char *a, size_t alen, const char *b)
{
	size_t i;

	if (strlen(b) != alen)
		return false;
	for (i = 0; i < alen; i++) {
		char x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (char)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return true;
}

const char *fieldcheck_closest(const char *name, size_t len, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t i, best_d = (size_t)-1, limit = len < 6 ? 1 : 2;
	bool tie = false;

	if (len == 0 || len > NAME_CMP_MAX)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t blen = strlen(names[i]), d;

		if (equal_but_case(name, len, names[i]))
			return names[i];
		if (blen > NAME_CMP_MAX || (blen > len ? blen - len : len - blen) > limit)
			continue;
		d = edit_distance(name, len, names[i], blen);
		if (d > limit)
			continue;
		if (d < best_d) {
			best = names[i];
			best_d = d;
			tie = false;
		} else if (d == best_d) {
			tie = true;
		}
	}
	return tie ? NULL : best;
}

/* --- paths -------------------------------------------------------------------- */

struct path {
	char buf[FIELDCHECK_PATH_MAX];
	size_t len;
};

enum part { PART_INDEX, PART_QUOTED, PART_NAME };

/* Append [index], ["s"] or .s to p; returns the length before, for
 * path_cut(). */
static size_t path_add(struct path *p, enum part part, const char *s, size_t slen, size_t index)
{
	size_t before = p->len, room = sizeof(p->buf) - p->len;
	int w;

	if (part == PART_INDEX)
		w = snprintf(p->buf + p->len, room, "[%zu]", index);
	else if (part == PART_QUOTED)
		w = snprintf(p->buf + p->len, room, "[\"%.*s\"]", (int)(slen > 200 ? 200 : slen), s);
	else
		w = snprintf(p->buf + p->len, room, "%s%.*s", p->len ? "." : "", (int)(slen > 200 ? 200 : slen), s);
	if (w < 0 || (size_t)w >= room) {
		/* Over the cap: the path ends in "..." and goes no deeper. */
		memcpy(p->buf + sizeof(p->buf) - 4, "...", 4);
		p->len = sizeof(p->buf) - 1;
	} else {
		p->len += (size_t)w;
	}
	return before;
}

static void path_cut(struct path *p, size_t len)
{
	p->len = len;
	p->buf[len] = '\0';
}

static bool plain_key(struct str k)
{
	size_t i;

	if (k.len == 0)
		return false;
	for (i = 0; i < k.len; i++) {
		char c = k.ptr[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

/* --- the walk -------------------------------------------------------------------- */

struct walk {
	struct fieldcheck_finding *out;
	size_t max, found;
};

static void check_type(struct walk *w, const struct type *t, const struct doc_node *n, struct path *p);

static void check_value(struct walk *w, const struct field *f, const struct doc_node *v, struct path *p)
{
	size_t i, at;

	switch (f->shape) {
	case LEAF:
	case ANY:
		return;
	case OBJ:
		check_type(w, f->type, v, p);
		return;
	case LIST:
		if (v->type != DOC_SEQ)
			return;
		for (i = 0; i < v->n; i++) {
			at = path_add(p, PART_INDEX, NULL, 0, i);
			check_type(w, f->type, v->items[i], p);
			path_cut(p, at);
		}
		return;
	case MAP:
		if (v->type != DOC_MAP)
			return;
		for (i = 0; i < v->n; i++) {
			struct str k = v->members[i].key;

			at = path_add(p, plain_key(k) ? PART_NAME : PART_QUOTED, k.ptr, k.len, 0);
			check_type(w, f->type, v->members[i].value, p);
			path_cut(p, at);
		}
		return;
	}
}

static void report(struct walk *w, const struct type *t, const struct doc_member *m, const struct path *p)
{
	const char *names[64], *close = NULL, *note = NULL;
	struct fieldcheck_finding *f;
	size_t i, n = t->n < 64 ? t->n : 64;

	if (w->found++ >= w->max)
		return;
	f = &w->out[w->found - 1];
	snprintf(f->path, sizeof(f->path), "%s", p->buf);
	f->line = m->line;
	f->col = m->col;
	for (i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++) {
		if (renamed[i].in == t && str_eq_cstr(m->key, renamed[i].name)) {
			close = renamed[i].instead;
			note = renamed[i].note;
		}
	}
	for (i = 0; !close && i < n; i++)
		names[i] = t->fields[i].name;
	if (!close)
		close = fieldcheck_closest(m->key.ptr, m->key.len, names, n);
	snprintf(f->suggestion, sizeof(f->suggestion), "%s", close ? close : "");
	f->note = note;
}

static void check_type(struct walk *w, const struct type *t, const struct doc_node *n, struct path *p)
{
	size_t i, j, at;

	if (n->type != DOC_MAP)
		return;
	for (i = 0; i < n->n; i++) {
		const struct doc_member *m = &n->members[i];
		const struct field *f = NULL;

		for (j = 0; j < t->n && !f; j++)
			if (str_eq_cstr(m->key, t->fields[j].name))
				f = &t->fields[j];
		at = path_add(p, plain_key(m->key) ? PART_NAME : PART_QUOTED, m->key.ptr, m->key.len, 0);
		if (f)
			check_value(w, f, m->value, p);
		else
			report(w, t, m, p);
		path_cut(p, at);
	}
}

static const struct type *table_type(struct str api_version, struct str kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (str_eq_cstr(api_version, kinds[i].api_version) && str_eq_cstr(kind, kinds[i].kind))
			return kinds[i].type;
	return NULL;
}

bool fieldcheck_covers(struct str api_version, struct str kind)
{
	return table_type(api_version, kind) != NULL;
}

static struct str member_text(const struct doc_node *root, const char *key)
{
	const struct doc_node *v = doc_map_get(root, key);

	return v && v->type == DOC_STRING ? v->text : (struct str){ "", 0 };
}

size_t fieldcheck_object(const struct doc_node *root, struct fieldcheck_finding *out, size_t max)
{
	const struct type *t;
	struct walk w = { out, max, 0 };
	struct path p;

	if (!root || root->type != DOC_MAP)
		return 0;
	t = table_type(member_text(root, "apiVersion"), member_text(root, "kind"));
	if (!t)
		return 0;
	p.buf[0] = '\0';
	p.len = 0;
	check_type(&w, t, root, &p);
	return w.found;
}

/* --- the path of a key ---------------------------------------------------------------- */

static bool find_key(const struct doc_node *n, uint32_t line, uint32_t col, struct path *p, unsigned depth)
{
	size_t i, at;

	if (depth > DOC_DEPTH_MAX)
		return false;
	if (n->type == DOC_SEQ) {
		for (i = 0; i < n->n; i++) {
			at = path_add(p, PART_INDEX, NULL, 0, i);
			if (find_key(n->items[i], line, col, p, depth + 1))
				return true;
			path_cut(p, at);
		}
	} else if (n->type == DOC_MAP) {
		for (i = 0; i < n->n; i++) {
			const struct doc_member *m = &n->members[i];

			at = path_add(p, plain_key(m->key) ? PART_NAME : PART_QUOTED, m->key.ptr, m->key.len, 0);
			if ((m->line == line && m->col == col) || find_key(m->value, line, col, p, depth + 1))
				return true;
			path_cut(p, at);
		}
	}
	return false;
}

bool fieldcheck_path_at(const struct doc_node *root, uint32_t line, uint32_t col, char *buf, size_t n)
{
	struct path p;

	p.buf[0] = '\0';
	p.len = 0;
	if (!root || !find_key(root, line, col, &p, 0))
		return false;
	snprintf(buf, n, "%s", p.buf);
	return true;
}
