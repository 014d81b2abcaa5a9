/* test_decode.c - AdmissionReview and object JSON into the typed model. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "decode.h"
#include "decode_impl.h"
#include "jscan.h"
#include "quantity.h"
#include "testutil.h"

#define ARENA_CAP (64u << 20)

/* --- helpers ------------------------------------------------------------- */

static struct arena *new_arena(size_t cap)
{
	struct arena *a = NULL;

	assert_int_equal(arena_new(cap, &a), 0);
	return a;
}

static char *read_fixture(const char *rel, size_t *len)
{
	char *t = testutil_read_file(testutil_fixture_path(rel), len);

	if (!t)
		fail_msg("cannot read %s", testutil_fixture_path(rel));
	return t;
}

/* A review around object (and oldObject) JSON texts, NULL for absent. */
static char *review(const char *group, const char *version, const char *kind, const char *op,
		    const char *object, const char *old)
{
	char *out = NULL;
	int n;

	n = asprintf(&out,
		     "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
		     "\"request\":{\"uid\":\"0b1c2d3e-0000-4000-8000-000000000001\","
		     "\"kind\":{\"group\":\"%s\",\"version\":\"%s\",\"kind\":\"%s\"},"
		     "\"resource\":{\"group\":\"%s\",\"version\":\"%s\",\"resource\":\"things\"},"
		     "\"name\":\"n\",\"operation\":\"%s\","
		     "\"userInfo\":{\"username\":\"alice\",\"groups\":[\"g1\",\"g2\"]}"
		     "%s%s%s%s%s%s}}",
		     group, version, kind, group, version, op,
		     object ? ",\"object\":" : "", object ? object : "", "",
		     old ? ",\"oldObject\":" : "", old ? old : "", "");
	assert_true(n > 0);
	return out;
}

/* A review around a fixture object, its kind taken from its apiVersion and kind. */
static char *review_of(const char *object, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(object, len, 0, &jerr);
	const char *av, *kind, *slash;
	char group[128] = "", version[64] = "";
	char *copy, *out;

	assert_non_null(j);
	av = json_string_value(json_object_get(j, "apiVersion"));
	kind = json_string_value(json_object_get(j, "kind"));
	assert_non_null(av);
	assert_non_null(kind);
	slash = strchr(av, '/');
	if (slash) {
		snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
		snprintf(version, sizeof(version), "%s", slash + 1);
	} else {
		snprintf(version, sizeof(version), "%s", av);
	}
	copy = strndup(object, len);
	assert_non_null(copy);
	out = review(group, version, kind, "CREATE", copy, NULL);
	free(copy);
	json_decref(j);
	return out;
}

static bool eq(struct str s, const char *c)
{
	return str_eq_cstr(s, c);
}

#define assert_str(s, c) do { \
	struct str s_ = (s); \
	if (!eq(s_, (c))) \
		fail_msg("%s is \"%.*s\", want \"%s\"", #s, (int)s_.len, s_.ptr ? s_.ptr : "", (c)); \
} while (0)

/* --- a text dump of the model, to compare decodes ------------------------ */

struct dump {
	char *p;
	size_t len, cap;
};

static void dprintf_(struct dump *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dprintf_(struct dump *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(d->p + d->len, d->cap - d->len, fmt, ap);
		va_end(ap);
		assert_true(n >= 0);
		if ((size_t)n < d->cap - d->len) {
			d->len += (size_t)n;
			return;
		}
		d->cap = d->cap * 2 + (size_t)n + 64;
		d->p = realloc(d->p, d->cap);
		assert_non_null(d->p);
	}
}

#define DS(d, label, s) dprintf_(d, "%s=\"%.*s\" ", label, (int)(s).len, (s).ptr ? (s).ptr : "")

static void dump_q(struct dump *d, const char *label, const struct quantity_field *q)
{
	if (!q->present) {
		dprintf_(d, "%s=- ", label);
		return;
	}
	dprintf_(d, "%s=%.*s/%d ", label, (int)q->text.len, q->text.ptr, q->err);
}

static void dump_slice(struct dump *d, const struct resource_slice *s)
{
	uint32_t i, j;

	DS(d, "driver", s->driver);
	DS(d, "node", s->node_name);
	dprintf_(d, "all=%d sel=%d per=%d ", s->all_nodes, s->has_node_selector,
		 s->per_device_node_selection);
	DS(d, "pool", s->pool_name);
	dprintf_(d, "gen=%d/%lld count=%lld n=%u\n", s->has_pool_generation,
		 (long long)s->pool_generation, (long long)s->resource_slice_count, s->ndevices);
	for (i = 0; i < s->ndevices; i++) {
		const struct device *v = &s->devices[i];

		dprintf_(d, " dev %u ", v->index);
		DS(d, "name", v->name);
		dprintf_(d, "multi=%d v136=%d v137=%d all=%d sel=%d ", v->allow_multiple_allocations,
			 v->has_v136, v->has_v137, v->all_nodes, v->has_node_selector);
		DS(d, "node", v->node_name);
		DS(d, "raw", v->raw);
		for (j = 0; j < v->ncapacity; j++) {
			DS(d, "\n  cap", v->capacity[j].name);
			dump_q(d, "value", &v->capacity[j].value);
		}
		for (j = 0; j < v->nmappings; j++) {
			const struct mapping *m = &v->mappings[j];

			DS(d, "\n  map", m->resource);
			dprintf_(d, "shape=%d null=%d hasck=%d ", m->shape, m->is_null, m->has_capacity_key);
			dump_q(d, "mult", &m->multiplier);
			dump_q(d, "cmult", &m->capacity_multiplier);
			DS(d, "ck", m->capacity_key);
			dump_q(d, "pod", &m->overhead_per_pod);
			dump_q(d, "ctr", &m->overhead_per_container);
			DS(d, "unknown", m->unknown_field);
		}
		dprintf_(d, "\n");
	}
}

static void dump_claim(struct dump *d, const struct resource_claim *c)
{
	uint32_t i, j;

	for (i = 0; i < c->nrequests; i++) {
		DS(d, "request", c->requests[i].name);
		for (j = 0; j < c->requests[i].ndevice_classes; j++)
			DS(d, "class", c->requests[i].device_classes[j]);
	}
	dprintf_(d, "allocated=%d local=%d ", c->allocated, c->node_local);
	DS(d, "node", c->allocated_node);
	DS(d, "allocation", c->allocation_raw);
	for (i = 0; i < c->nresults; i++) {
		const struct allocation_result *r = &c->results[i];

		DS(d, "\n result", r->request);
		DS(d, "driver", r->driver);
		DS(d, "pool", r->pool);
		DS(d, "device", r->device);
		DS(d, "share", r->share_id);
		for (j = 0; j < r->nconsumed_capacity; j++) {
			DS(d, "consumed", r->consumed_capacity[j].name);
			dump_q(d, "q", &r->consumed_capacity[j].value);
		}
	}
	for (i = 0; i < c->nreserved_for; i++) {
		DS(d, "\n reserved", c->reserved_for[i].api_group);
		DS(d, "resource", c->reserved_for[i].resource);
		DS(d, "name", c->reserved_for[i].name);
		DS(d, "uid", c->reserved_for[i].uid);
	}
	DS(d, "\n reserved_raw", c->reserved_for_raw);
	for (i = 0; i < c->ndevices; i++) {
		DS(d, "\n status", c->devices[i].driver);
		DS(d, "pool", c->devices[i].pool);
		DS(d, "device", c->devices[i].device);
		DS(d, "share", c->devices[i].share_id);
		DS(d, "raw", c->devices[i].raw);
	}
	dprintf_(d, "\n");
}

static void dump_pod(struct dump *d, const struct pod *p)
{
	uint32_t i, j;

	DS(d, "node", p->node_name);
	dprintf_(d, "claims=%u has=%d n=%u ", p->nresource_claims, p->has_claim_statuses,
		 p->nclaim_statuses);
	DS(d, "raw", p->claim_statuses_raw);
	for (i = 0; i < p->nclaim_statuses; i++) {
		const struct claim_resource_status *s = &p->claim_statuses[i];

		DS(d, "\n claim", s->claim_name);
		for (j = 0; j < s->ncontainers; j++)
			DS(d, "container", s->containers[j]);
		for (j = 0; j < s->nresources; j++) {
			DS(d, "resource", s->resources[j].name);
			dump_q(d, "q", &s->resources[j].value);
		}
		DS(d, "raw", s->raw);
	}
	DS(d, "\n phase", p->phase);
	for (i = 0; i < p->nresource_claims; i++) {
		DS(d, "ref", p->resource_claims[i].name);
		DS(d, "claim", p->resource_claims[i].claim_name);
		DS(d, "template", p->resource_claims[i].template_name);
	}
	for (i = 0; i < p->nclaim_names; i++) {
		DS(d, "status", p->claim_names[i].name);
		DS(d, "claim", p->claim_names[i].claim_name);
	}
	DS(d, "containers", p->containers_raw);
	DS(d, "init", p->init_containers_raw);
	DS(d, "overhead", p->overhead_raw);
	DS(d, "resources", p->pod_resources_raw);
	DS(d, "statuses", p->container_statuses_raw);
	DS(d, "initstatuses", p->init_statuses_raw);
	DS(d, "conditions", p->conditions_raw);
	dprintf_(d, "\n");
}

static void dump_object(struct dump *d, const struct k8s_object *o)
{
	dprintf_(d, "kind=%d version=%d ", o->kind, o->version);
	DS(d, "apiVersion", o->api_version);
	DS(d, "kindName", o->kind_name);
	DS(d, "name", o->meta.name);
	DS(d, "generateName", o->meta.generate_name);
	DS(d, "namespace", o->meta.namespace);
	DS(d, "uid", o->meta.uid);
	dprintf_(d, "labels=%d maplabel=%d ", o->meta.has_labels, o->meta.has_mapping_label);
	DS(d, "label", o->meta.mapping_label);
	dprintf_(d, "deleting=%d\n", o->meta.deleting);
	switch (o->kind) {
	case OBJECT_RESOURCE_SLICE: dump_slice(d, &o->u.slice); break;
	case OBJECT_RESOURCE_CLAIM: dump_claim(d, &o->u.claim); break;
	case OBJECT_POD: dump_pod(d, &o->u.pod); break;
	case OBJECT_CONFIG_MAP:
		dprintf_(d, "policy=%d freeze=%d reason=%d ", o->u.config_map.has_policy,
			 o->u.config_map.has_freeze, o->u.config_map.has_freeze_reason);
		DS(d, "policy", o->u.config_map.policy);
		DS(d, "freeze", o->u.config_map.freeze);
		DS(d, "reason", o->u.config_map.freeze_reason);
		break;
	case OBJECT_NODE:
		for (uint32_t i = 0; i < o->u.node.nallocatable; i++) {
			DS(d, "allocatable", o->u.node.allocatable[i].name);
			dump_q(d, "q", &o->u.node.allocatable[i].value);
		}
		break;
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
}

static char *dump_request(const struct admission_request *r)
{
	struct dump d = { NULL, 0, 0 };
	uint32_t i, j;

	d.cap = 256;
	d.p = malloc(d.cap);
	assert_non_null(d.p);
	d.p[0] = '\0';
	DS(&d, "uid", r->uid);
	DS(&d, "gvk", r->kind.group);
	DS(&d, "v", r->kind.version);
	DS(&d, "k", r->kind.kind);
	DS(&d, "gvr", r->resource.group);
	DS(&d, "v", r->resource.version);
	DS(&d, "r", r->resource.resource);
	DS(&d, "sub", r->sub_resource);
	DS(&d, "name", r->name);
	DS(&d, "ns", r->namespace);
	dprintf_(&d, "op=%d dry=%d ", r->operation, r->dry_run);
	DS(&d, "user", r->user.username);
	DS(&d, "useruid", r->user.uid);
	for (i = 0; i < r->user.ngroups; i++)
		DS(&d, "group", r->user.groups[i]);
	for (i = 0; i < r->user.nextra; i++) {
		DS(&d, "extra", r->user.extra[i].key);
		for (j = 0; j < r->user.extra[i].nvalues; j++)
			DS(&d, "v", r->user.extra[i].values[j]);
	}
	dprintf_(&d, "\nobject: ");
	dump_object(&d, &r->object);
	dprintf_(&d, "\noldObject: ");
	dump_object(&d, &r->old_object);
	return d.p;
}

static char *dump_one(const struct k8s_object *o)
{
	struct dump d = { NULL, 0, 0 };

	d.cap = 256;
	d.p = malloc(d.cap);
	assert_non_null(d.p);
	d.p[0] = '\0';
	dump_object(&d, o);
	return d.p;
}

static int decode_text(const char *text, const struct decode_limits *lim, struct arena *a,
		       struct admission_request *rq, struct decode_error *err)
{
	return decode_review(text, strlen(text), lim, a, rq, err);
}

/* --- the top-level fixtures ---------------------------------------------- */

static void test_slice_fixture_decodes_devices_and_mappings(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct resource_slice *s;
	const struct device *v;
	size_t len;
	char *obj = read_fixture("resourceslice-v1-node-allocatable.json", &len);
	char *body = review_of(obj, len);

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_str(rq.uid, "0b1c2d3e-0000-4000-8000-000000000001");
	assert_int_equal(rq.operation, ADMISSION_OP_CREATE);
	assert_int_equal(rq.object.kind, OBJECT_RESOURCE_SLICE);
	assert_int_equal(rq.object.version, API_V1);
	assert_int_equal(rq.old_object.kind, OBJECT_NONE);
	assert_str(rq.object.api_version, "resource.k8s.io/v1");
	assert_str(rq.object.kind_name, "ResourceSlice");
	assert_str(rq.object.meta.name, "worker-1-dra.example.com-abcde");
	s = &rq.object.u.slice;
	assert_str(s->driver, "dra.example.com");
	assert_str(s->node_name, "worker-1");
	assert_str(s->pool_name, "worker-1");
	assert_true(s->has_pool_generation);
	assert_int_equal(s->pool_generation, 3);
	assert_int_equal(s->resource_slice_count, 1);
	assert_int_equal(s->ndevices, 2);

	v = &s->devices[0];
	assert_int_equal(v->index, 0);
	assert_str(v->name, "accel-0");
	assert_false(v->allow_multiple_allocations);
	assert_int_equal(v->ncapacity, 1);
	assert_str(v->capacity[0].name, "dra.example.com/memory");
	assert_true(v->capacity[0].value.present);
	assert_str(v->capacity[0].value.text, "80Gi");
	assert_int_equal(v->capacity[0].value.err, 0);
	assert_true(v->has_v136);
	assert_false(v->has_v137);
	assert_int_equal(v->nmappings, 2);
	/* sorted by resource, whatever order the text has */
	assert_str(v->mappings[1].resource, "memory");
	assert_int_equal(v->mappings[1].shape, MAPPING_V136);
	assert_str(v->mappings[1].multiplier.text, "8Gi");
	assert_int_equal(v->mappings[1].multiplier.err, 0);
	assert_false(v->mappings[1].has_capacity_key);
	assert_str(v->mappings[0].resource, "cpu");
	assert_str(v->mappings[0].multiplier.text, "2");
	assert_int_equal(v->raw.ptr[0], '{');
	assert_int_equal(v->raw.ptr[v->raw.len - 1], '}');
	assert_non_null(strstr(v->raw.ptr, "\"name\": \"accel-0\""));

	v = &s->devices[1];
	assert_int_equal(v->index, 1);
	assert_str(v->name, "socket-0");
	assert_true(v->allow_multiple_allocations);
	assert_str(v->capacity[0].name, "dra.example.com/cpu");
	assert_str(v->capacity[0].value.text, "64");
	assert_int_equal(v->nmappings, 1);
	assert_str(v->mappings[0].resource, "cpu");
	assert_true(v->mappings[0].has_capacity_key);
	assert_str(v->mappings[0].capacity_key, "dra.example.com/cpu");
	assert_false(v->mappings[0].multiplier.present);
	assert_int_equal(v->mappings[0].unknown_field.len, 0);

	free(body);
	free(obj);
	arena_free(a);
}

static void test_claim_fixture_decodes_allocation_and_status(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct resource_claim *c;
	size_t len;
	char *obj = read_fixture("resourceclaim-v1-allocated.json", &len);
	char *body = review_of(obj, len);

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.kind, OBJECT_RESOURCE_CLAIM);
	assert_str(rq.object.meta.namespace, "team-a");
	assert_str(rq.object.meta.uid, "5f0c1b7e-3d2a-4c8e-9b1a-7e6d5c4b3a21");
	c = &rq.object.u.claim;
	assert_int_equal(c->nrequests, 1);
	assert_str(c->requests[0].name, "cpus");
	assert_int_equal(c->requests[0].ndevice_classes, 1);
	assert_str(c->requests[0].device_classes[0], "cpu.example.com");
	assert_true(c->allocated);
	assert_int_equal(c->allocation_raw.ptr[0], '{');
	assert_int_equal(c->allocation_raw.ptr[c->allocation_raw.len - 1], '}');
	assert_int_equal(c->nresults, 1);
	assert_str(c->results[0].request, "cpus");
	assert_str(c->results[0].driver, "dra.example.com");
	assert_str(c->results[0].pool, "worker-1");
	assert_str(c->results[0].device, "socket-0");
	assert_str(c->results[0].share_id, "0b6f2c1d-8e4a-4f3b-a2c9-1d7e5f6a8b90");
	assert_int_equal(c->results[0].nconsumed_capacity, 1);
	assert_str(c->results[0].consumed_capacity[0].name, "dra.example.com/cpu");
	assert_str(c->results[0].consumed_capacity[0].value.text, "4");
	assert_true(c->node_local);
	assert_str(c->allocated_node, "worker-1");
	assert_int_equal(c->nreserved_for, 1);
	assert_int_equal(c->reserved_for[0].api_group.len, 0);
	assert_str(c->reserved_for[0].resource, "pods");
	assert_str(c->reserved_for[0].name, "pod-a");
	assert_str(c->reserved_for[0].uid, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d");
	assert_int_equal(c->reserved_for_raw.ptr[0], '[');
	assert_int_equal(c->ndevices, 1);
	assert_str(c->devices[0].driver, "dra.example.com");
	assert_str(c->devices[0].device, "socket-0");
	assert_str(c->devices[0].share_id, "0b6f2c1d-8e4a-4f3b-a2c9-1d7e5f6a8b90");
	assert_int_equal(c->devices[0].raw.ptr[0], '{');
	assert_non_null(strstr(c->devices[0].raw.ptr, "\"cpuset\": \"4-7\""));
	free(body);
	free(obj);
	arena_free(a);
}

static void test_pod_fixture_decodes_claim_statuses(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct pod *p;
	size_t len;
	char *obj = read_fixture("pod-status-node-allocatable.json", &len);
	char *body = review_of(obj, len);

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.kind, OBJECT_POD);
	assert_int_equal(rq.object.version, API_V1);
	p = &rq.object.u.pod;
	assert_str(p->node_name, "worker-1");
	assert_int_equal(p->nresource_claims, 1);
	assert_true(p->has_claim_statuses);
	assert_int_equal(p->nclaim_statuses, 1);
	assert_str(p->claim_statuses[0].claim_name, "cpu-claim");
	assert_int_equal(p->claim_statuses[0].ncontainers, 1);
	assert_str(p->claim_statuses[0].containers[0], "app");
	assert_int_equal(p->claim_statuses[0].nresources, 1);
	assert_str(p->claim_statuses[0].resources[0].name, "cpu");
	assert_str(p->claim_statuses[0].resources[0].value.text, "4");
	assert_int_equal(p->claim_statuses_raw.ptr[0], '[');
	assert_int_equal(p->claim_statuses_raw.ptr[p->claim_statuses_raw.len - 1], ']');
	assert_int_equal(p->claim_statuses[0].raw.ptr[0], '{');
	free(body);
	free(obj);
	arena_free(a);
}

/* --- every fixture ------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

struct sweep {
	unsigned ok, failed;
};

/* Bare and wrapped decodes of one object must agree, and a failure must
 * come with a message. */
static void sweep_object(const char *path, struct arena *a, struct sweep *sw)
{
	struct decode_limits lim;
	struct decode_error err, err2;
	struct k8s_object o;
	struct admission_request rq;
	size_t len;
	char *text = testutil_read_file(path, &len);
	char *body;
	int rc, rc2;

	assert_non_null(text);
	decode_limits_default(&lim);
	rc = decode_object(text, len, &lim, a, &o, &err);
	if (rc != 0 && (rc != -EPROTO || err.msg[0] == '\0'))
		fail_msg("%s: decode_object %d \"%s\"", path, rc, err.msg);
	body = review_of(text, len);
	rc2 = decode_review(body, strlen(body), &lim, a, &rq, &err2);
	if (rc2 != rc)
		fail_msg("%s: bare %d \"%s\", in a review %d \"%s\"", path, rc, err.msg, rc2, err2.msg);
	if (rc) {
		/* The same message, under request.object. */
		if (strncmp(err2.msg, "request.object", 14) != 0 || !strstr(err2.msg, err.msg))
			fail_msg("%s: \"%s\" vs \"%s\"", path, err.msg, err2.msg);
		sw->failed++;
	} else {
		char *d1 = dump_one(&o), *d2 = dump_one(&rq.object);

		if (strcmp(d1, d2) != 0)
			fail_msg("%s: bare and wrapped decodes differ:\n%s\n---\n%s", path, d1, d2);
		free(d1);
		free(d2);
		sw->ok++;
	}
	free(body);
	free(text);
	arena_reset(a);
}

static void sweep_dir(const char *dir, struct arena *a, struct sweep *sw)
{
	char path[4096 + 512];
	DIR *d;
	struct dirent *e;

	d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	while ((e = readdir(d)) != NULL) {
		if (!has_suffix(e->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		sweep_object(path, a, sw);
	}
	closedir(d);
}

static void sweep_own(const char *rel, struct arena *a, struct sweep *sw)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", testutil_repo_dir(rel));
	sweep_dir(dir, a, sw);
}

static void test_every_fixture_decodes_or_says_why(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct sweep good = { 0, 0 }, refused = { 0, 0 };

	(void)state;
	sweep_own("tests/fixtures", a, &good);
	sweep_own("tests/fixtures/versions", a, &good);
	assert_int_equal(good.failed, 0);
	assert_true(good.ok >= 10);
	/* retired versions and design-draft slices: every one refused, with a message */
	sweep_own("tests/fixtures/refused", a, &refused);
	assert_int_equal(refused.ok, 0);
	assert_true(refused.failed >= 5);
	arena_free(a);
}

/* Reviews with every request field set (and a response) in v1 and v1beta1,
 * whose operation is none of the four: read up to the operation, refused
 * with the uid kept for the answer. */
static void test_full_reviews_with_a_bad_operation_say_why(void **state)
{
	static const char *const files[] = {
		"admissionreviews/review-v1-bad-operation.json",
		"admissionreviews/review-v1beta1-bad-operation.json",
	};
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *t = read_fixture(files[i], &len);

		assert_int_equal(decode_review(t, len, NULL, a, &rq, &err), -EBADMSG);
		if (!strstr(err.msg, "request.operation: \"PATCH\" is not CREATE"))
			fail_msg("%s: %s", files[i], err.msg);
		assert_str(rq.uid, "6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d9e");
		free(t);
		arena_reset(a);
	}
	arena_free(a);
}

/* AdmissionRequests as an API server sends them, for kinds no rule reads and
 * a Pod deletion, wrapped in a review. */
static void test_captured_requests_decode_in_a_review(void **state)
{
	static const struct {
		const char *file;
		enum admission_op op;
		const char *kind;
		enum object_kind object, old;
	} cases[] = {
		{ "deployment-update.json", ADMISSION_OP_UPDATE, "Deployment", OBJECT_OTHER, OBJECT_OTHER },
		{ "deployment-delete.json", ADMISSION_OP_DELETE, "Deployment", OBJECT_NONE, OBJECT_OTHER },
		{ "pod-delete.json", ADMISSION_OP_DELETE, "Pod", OBJECT_NONE, OBJECT_POD },
	};
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	char rel[512];
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t, *body = NULL;
		int rc;

		snprintf(rel, sizeof(rel), "admissionreviews/requests/%s", cases[i].file);
		t = read_fixture(rel, &len);
		assert_true(asprintf(&body, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
				     "\"AdmissionReview\",\"request\":%s}", t) > 0);
		rc = decode_review(body, strlen(body), NULL, a, &rq, &err);
		if (rc != 0)
			fail_msg("%s: %d %s", cases[i].file, rc, err.msg);
		assert_int_equal(rq.operation, cases[i].op);
		assert_str(rq.kind.kind, cases[i].kind);
		assert_true(rq.uid.len > 0);
		assert_true(rq.user.username.len > 0);
		assert_int_equal(rq.object.kind, cases[i].object);
		assert_int_equal(rq.old_object.kind, cases[i].old);
		free(body);
		free(t);
		arena_reset(a);
	}
	arena_free(a);
}

/* One slice written in v1, v1beta2 and v1beta1 (devices under "basic"),
 * every 1.36 field set: the three decode to the same model. */
static void test_v1beta1_basic_layout_decodes_like_v1(void **state)
{
	static const char *const versions[] = { "v1", "v1beta2", "v1beta1" };
	struct arena *a = new_arena(ARENA_CAP);
	struct k8s_object o;
	struct decode_error err;
	char rel[512], *dumps[3];
	size_t i, len;
	uint32_t k;

	(void)state;
	for (i = 0; i < 3; i++) {
		const struct device *v;
		char *t;

		snprintf(rel, sizeof(rel), "versions/resourceslice-%s.json", versions[i]);
		t = read_fixture(rel, &len);
		assert_int_equal(decode_object(t, len, NULL, a, &o, &err), 0);
		assert_int_equal(o.version, i == 0 ? API_V1 : i == 1 ? API_V1BETA2 : API_V1BETA1);
		assert_true(o.u.slice.per_device_node_selection);
		assert_int_equal(o.u.slice.ndevices, 3);
		v = &o.u.slice.devices[0];
		assert_str(v->name, "gpu-0");
		assert_true(v->allow_multiple_allocations);
		assert_str(v->node_name, "worker-7");
		assert_true(o.u.slice.devices[1].has_node_selector);
		assert_true(o.u.slice.devices[2].all_nodes);
		assert_int_equal(v->ncapacity, 2);
		assert_str(v->capacity[0].name, "gpu.example.com/memory");
		assert_str(v->capacity[0].value.text, "80Gi");
		assert_str(v->capacity[1].name, "gpu.example.com/slots");
		assert_int_equal(v->nmappings, 2);
		assert_str(v->mappings[0].resource, "cpu");
		assert_str(v->mappings[0].capacity_key, "gpu.example.com/slots");
		assert_str(v->mappings[0].multiplier.text, "500m");
		assert_str(v->mappings[1].resource, "memory");
		assert_false(v->mappings[1].has_capacity_key);
		assert_str(v->mappings[1].multiplier.text, "4Gi");
		assert_int_equal(v->mappings[1].unknown_field.len, 0);
		assert_true(o.meta.deleting);
		assert_true(o.meta.has_labels);
		assert_false(o.meta.has_mapping_label);
		/* Everything but the raw texts and the version is the same. */
		o.version = API_V1;
		o.api_version = STR_LIT("");
		for (k = 0; k < o.u.slice.ndevices; k++)
			o.u.slice.devices[k].raw = STR_LIT("");
		dumps[i] = dump_one(&o);
		free(t);
		arena_reset(a);
	}
	assert_string_equal(dumps[0], dumps[1]);
	assert_string_equal(dumps[0], dumps[2]);
	for (i = 0; i < 3; i++)
		free(dumps[i]);
	arena_free(a);
}

/* One claim in v1, v1beta2 (exactly) and v1beta1 (the request's own
 * fields), with a firstAvailable request, allocated on one node. */
static void test_claim_device_class_per_version(void **state)
{
	static const char *const versions[] = { "v1", "v1beta2", "v1beta1" };
	struct arena *a = new_arena(ARENA_CAP);
	struct k8s_object o;
	struct decode_error err;
	char rel[512], *dumps[3];
	size_t i, len;

	(void)state;
	for (i = 0; i < 3; i++) {
		const struct resource_claim *c;
		char *t;

		snprintf(rel, sizeof(rel), "versions/resourceclaim-%s.json", versions[i]);
		t = read_fixture(rel, &len);
		assert_int_equal(decode_object(t, len, NULL, a, &o, &err), 0);
		c = &o.u.claim;
		assert_int_equal(c->nrequests, 2);
		/* exactly.deviceClassName (v1beta1: deviceClassName) */
		assert_str(c->requests[0].name, "gpu");
		assert_int_equal(c->requests[0].ndevice_classes, 1);
		assert_str(c->requests[0].device_classes[0], "gpu.example.com");
		/* every firstAvailable[].deviceClassName */
		assert_str(c->requests[1].name, "fallback");
		assert_int_equal(c->requests[1].ndevice_classes, 2);
		assert_str(c->requests[1].device_classes[0], "gpu-large.example.com");
		assert_str(c->requests[1].device_classes[1], "gpu.example.com");
		assert_true(c->allocated);
		assert_true(c->node_local);
		assert_str(c->allocated_node, "worker-7");
		assert_int_equal(c->nresults, 2);
		assert_str(c->results[0].share_id, "4b1e0c6a-2d3f-4e5a-8b7c-9d0e1f2a3b4c");
		assert_int_equal(c->results[0].nconsumed_capacity, 1);
		assert_str(c->results[0].consumed_capacity[0].value.text, "20Gi");
		assert_str(c->results[1].request, "fallback/small");
		assert_int_equal(c->nreserved_for, 1);
		assert_int_equal(c->reserved_for[0].api_group.len, 0);
		assert_str(c->reserved_for[0].resource, "pods");
		assert_str(c->reserved_for[0].name, "trainer-0");
		assert_int_equal(c->ndevices, 1);
		assert_str(c->devices[0].device, "gpu-0");
		o.version = API_V1;
		o.api_version = STR_LIT("");
		dumps[i] = dump_one(&o);
		free(t);
		arena_reset(a);
	}
	assert_string_equal(dumps[0], dumps[1]);
	assert_string_equal(dumps[0], dumps[2]);
	for (i = 0; i < 3; i++)
		free(dumps[i]);
	arena_free(a);
}

/* A running Pod with most of its spec and status set: the decoder reads
 * its node, claims and node-allocatable statuses and skips the rest. */
static void test_pod_with_every_section_decodes(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct k8s_object o;
	struct decode_error err;
	size_t len;
	char *t = read_fixture("versions/pod-v1.json", &len);
	const struct claim_resource_status *s;

	(void)state;
	assert_int_equal(decode_object(t, len, NULL, a, &o, &err), 0);
	assert_int_equal(o.kind, OBJECT_POD);
	assert_str(o.u.pod.node_name, "worker-7");
	assert_int_equal(o.u.pod.nresource_claims, 1);
	assert_int_equal(o.u.pod.nclaim_statuses, 1);
	s = &o.u.pod.claim_statuses[0];
	assert_str(s->claim_name, "trainer-0-gpu-7xq2m");
	assert_int_equal(s->ncontainers, 2);
	assert_str(s->containers[0], "train");
	assert_str(s->containers[1], "sidecar");
	assert_int_equal(s->nresources, 2);
	assert_str(s->resources[0].name, "cpu");
	assert_str(s->resources[0].value.text, "4");
	assert_str(s->resources[1].name, "memory");
	assert_str(s->resources[1].value.text, "16Gi");
	free(t);
	arena_free(a);
}

/* Slices as early design drafts of the mappings wrote them: capacities as
 * bare strings, and mapping fields that never shipped. */
static void test_design_draft_slices_bare_capacity_and_unknown_fields(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct k8s_object o;
	struct decode_error err;
	size_t len;
	char *t = read_fixture("refused/resourceslice-draft-quantityfrom.json", &len);
	char *fixed, *at;
	const char *bare = "\"cpu.example.com/cores\": \"96\"";

	(void)state;
	/* As written: capacity values are bare strings, not DeviceCapacity. */
	assert_int_equal(decode_object(t, len, NULL, a, &o, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "spec.devices[0].capacity[\"cpu.example.com/cores\"]: "
				   "expected an object"));
	assert_non_null(strstr(err.msg, "got a string"));
	assert_int_equal(t[err.offset], '"');

	/* With the capacity fixed, the mapping's quantityFrom (never shipped)
	 * is an unknown member. */
	at = strstr(t, bare);
	assert_non_null(at);
	assert_true(asprintf(&fixed, "%.*s\"cpu.example.com/cores\": {\"value\": \"96\"}%s",
			     (int)(at - t), t, at + strlen(bare)) > 0);
	arena_reset(a);
	assert_int_equal(decode_object(fixed, strlen(fixed), NULL, a, &o, &err), 0);
	assert_int_equal(o.u.slice.ndevices, 1);
	assert_int_equal(o.u.slice.devices[0].nmappings, 1);
	assert_str(o.u.slice.devices[0].mappings[0].resource, "cpu");
	assert_str(o.u.slice.devices[0].mappings[0].unknown_field, "quantityFrom");
	assert_false(o.u.slice.devices[0].mappings[0].multiplier.present);
	free(fixed);
	free(t);

	/* accountingPolicy comes before quantityFrom: the first is kept. */
	t = read_fixture("refused/resourceslice-draft-accountingpolicy.json", &len);
	at = strstr(t, bare);
	assert_non_null(at);
	assert_true(asprintf(&fixed, "%.*s\"cpu.example.com/cores\": {\"value\": \"96\"}%s",
			     (int)(at - t), t, at + strlen(bare)) > 0);
	arena_reset(a);
	assert_int_equal(decode_object(fixed, strlen(fixed), NULL, a, &o, &err), 0);
	assert_str(o.u.slice.devices[0].mappings[0].unknown_field, "accountingPolicy");
	free(fixed);
	free(t);
	arena_free(a);
}

static void test_retired_claim_versions_are_refused_by_name(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct k8s_object o;
	struct decode_error err;
	size_t len;
	char *t = read_fixture("refused/resourceclaim-v1alpha3.json", &len);
	char *body = review_of(t, len);

	(void)state;
	assert_int_equal(decode_object(t, len, NULL, a, &o, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "ResourceClaim resource.k8s.io/v1alpha3 is not supported"));
	assert_non_null(strstr(err.msg, "v1, v1beta2 and v1beta1"));
	assert_int_equal(decode_review(body, strlen(body), NULL, a, &rq, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "request.object: ResourceClaim resource.k8s.io/v1alpha3"));
	/* The review itself was fine: the uid is there for the denial. */
	assert_str(rq.uid, "0b1c2d3e-0000-4000-8000-000000000001");
	assert_int_equal(rq.operation, ADMISSION_OP_CREATE);
	free(body);
	free(t);
	arena_free(a);
}

/* --- malformed reviews --------------------------------------------------- */

#define RV_HEAD "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
#define RQ_HEAD "{\"uid\":\"u1\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\"," \
	"\"kind\":\"ResourceSlice\"},\"operation\":\"UPDATE\""
#define SLICE_HEAD "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\"," \
	"\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"," \
	"\"generation\":1},\"devices\":["
#define OBJ(devices) RV_HEAD RQ_HEAD ",\"object\":" SLICE_HEAD devices "]}}}}"
#define DEV "{\"name\":\"d0\",\"capacity\":{\"c\":{\"value\":\"1\"}}," \
	"\"nodeAllocatableResourceMappings\":{\"memory\":{\"allocationMultiplier\":\"1Gi\"}}}"

struct bad_case {
	const char *name;
	const char *body;
	int rc;
	const char *msg;     /* a substring of err.msg */
};

static const struct bad_case bad_cases[] = {
	/* not JSON, or not a review */
	{ "empty body", "", -EBADMSG, "unexpected end of input" },
	{ "not JSON", "hello", -EBADMSG, "expected a value" },
	{ "truncated", RV_HEAD RQ_HEAD, -EBADMSG, "unexpected end of input" },
	{ "array", "[]", -EBADMSG, "expected an AdmissionReview object, got an array" },
	{ "trailing garbage", RV_HEAD RQ_HEAD "}} x", -EBADMSG, "expected end of input" },
	{ "wrong apiVersion", "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
	  "\"request\":" RQ_HEAD "}}", -EBADMSG,
	  "apiVersion: expected \"admission.k8s.io/v1\", got \"admission.k8s.io/v1beta1\"" },
	{ "missing apiVersion", "{\"kind\":\"AdmissionReview\",\"request\":" RQ_HEAD "}}", -EBADMSG,
	  "apiVersion: expected \"admission.k8s.io/v1\", got nothing" },
	{ "wrong kind", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\",\"request\":"
	  RQ_HEAD "}}", -EBADMSG, "kind: expected \"AdmissionReview\", got \"Review\"" },
	{ "missing request", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
	  -EBADMSG, "request: missing" },
	{ "null request", RV_HEAD "null}", -EBADMSG, "request: missing" },
	{ "request is an array", RV_HEAD "[]}", -EBADMSG, "request: expected an object, got an array" },
	{ "missing uid", RV_HEAD "{\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	  "\"operation\":\"CREATE\"}}", -EBADMSG, "request.uid: missing" },
	{ "empty uid", RV_HEAD "{\"uid\":\"\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	  "\"operation\":\"CREATE\"}}", -EBADMSG, "request.uid: missing" },
	{ "uid is a number", RV_HEAD "{\"uid\":5}}", -EBADMSG,
	  "request.uid: expected a string, got a number" },
	{ "missing kind", RV_HEAD "{\"uid\":\"u\",\"operation\":\"CREATE\"}}", -EBADMSG,
	  "request.kind: missing" },
	{ "kind is a string", RV_HEAD "{\"uid\":\"u\",\"kind\":\"Pod\"}}", -EBADMSG,
	  "request.kind: expected an object, got a string" },
	{ "kind.group is a number", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":1}}}", -EBADMSG,
	  "request.kind.group: expected a string, got a number" },
	{ "bad operation", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
	  "\"kind\":\"Pod\"},\"operation\":\"PATCH\"}}", -EBADMSG,
	  "request.operation: \"PATCH\" is not CREATE, UPDATE, DELETE or CONNECT" },
	{ "missing operation", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
	  "\"kind\":\"Pod\"}}}", -EBADMSG, "request.operation: missing" },
	{ "lower-case operation", RV_HEAD "{\"uid\":\"u\",\"operation\":\"create\"}}", -EBADMSG,
	  "request.operation: \"create\" is not" },
	{ "duplicate request", RV_HEAD RQ_HEAD "},\"request\":" RQ_HEAD "}}", -EBADMSG,
	  "duplicate member \"request\"" },
	{ "duplicate uid", RV_HEAD RQ_HEAD ",\"uid\":\"u2\"}}", -EBADMSG,
	  "request: duplicate member \"uid\"" },
	{ "duplicate uid through an escape", RV_HEAD RQ_HEAD ",\"\\u0075id\":\"u2\"}}", -EBADMSG,
	  "request: duplicate member \"\\u0075id\"" },
	{ "userInfo is a number", RV_HEAD RQ_HEAD ",\"userInfo\":5}}", -EBADMSG,
	  "request.userInfo: expected an object, got a number" },
	{ "duplicate username", RV_HEAD RQ_HEAD ",\"userInfo\":{\"username\":\"a\",\"username\":\"b\"}}}",
	  -EBADMSG, "request.userInfo: duplicate member \"username\"" },
	{ "groups is a string", RV_HEAD RQ_HEAD ",\"userInfo\":{\"groups\":\"g\"}}}", -EBADMSG,
	  "request.userInfo.groups: expected an array, got a string" },
	{ "a group is a number", RV_HEAD RQ_HEAD ",\"userInfo\":{\"groups\":[\"a\",1]}}}", -EBADMSG,
	  "request.userInfo.groups[1]: expected a string, got a number" },
	{ "extra values not a list", RV_HEAD RQ_HEAD ",\"userInfo\":{\"extra\":{\"" MODEL_EXTRA_NODE_NAME
	  "\":\"v\"}}}}", -EBADMSG, "request.userInfo.extra[\"" MODEL_EXTRA_NODE_NAME
	  "\"]: expected an array, got a string" },
	{ "duplicate extra key", RV_HEAD RQ_HEAD ",\"userInfo\":{\"extra\":{\"" MODEL_EXTRA_POD_NAME "\":[],\""
	  MODEL_EXTRA_POD_NAME "\":[]}}}}", -EBADMSG, "duplicate key \"" MODEL_EXTRA_POD_NAME "\"" },
	{ "dryRun is a string", RV_HEAD RQ_HEAD ",\"dryRun\":\"yes\"}}", -EBADMSG,
	  "request.dryRun: expected true or false, got a string" },
	{ "object is a string", RV_HEAD RQ_HEAD ",\"object\":\"x\"}}", -EBADMSG,
	  "request.object: expected an object, got a string" },
	{ "invalid UTF-8 in the uid", RV_HEAD "{\"uid\":\"\xc3\x28\"}}", -EBADMSG,
	  "request.uid: invalid UTF-8" },
	{ "lone surrogate in the uid", RV_HEAD "{\"uid\":\"\\udc00\"}}", -EBADMSG,
	  "request.uid: invalid UTF-8 or lone surrogate" },
	{ "grammar error in a skipped member", RV_HEAD RQ_HEAD ",\"options\":{\"a\":[1,}}}", -EBADMSG,
	  "request.options: expected a value, found '}'" },
	{ "grammar error inside the object", OBJ("{\"name\":\"d0\",\"attributes\":{\"a\":tru}}"),
	  -EBADMSG, "request.object.spec.devices[0].attributes: invalid literal" },
	/* inside the object: -EPROTO with the full path */
	{ "metadata is an array", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":[]}}}", -EPROTO,
	  "request.object.metadata: expected an object, got an array" },
	{ "duplicate metadata name", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"name\":\"a\","
	  "\"name\":\"b\"}}}}", -EPROTO, "request.object.metadata: duplicate member \"name\"" },
	{ "guard label holds a number", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"labels\":"
	  "{\"dra-guard.io/mappings\":1}}}}}", -EPROTO,
	  "request.object.metadata.labels[\"dra-guard.io/mappings\"]: expected a string, got a number" },
	{ "duplicate guard label", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"labels\":{"
	  "\"dra-guard.io/mappings\":\"1\",\"dra-guard.io\\/mappings\":\"2\"}}}}}", -EPROTO,
	  "duplicate label \"dra-guard.io\\/mappings\"" },
	{ "labels not an object", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"labels\":[]}}}}",
	  -EPROTO, "request.object.metadata.labels: expected an object, got an array" },
	{ "other label not JSON", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"labels\":{\"a\":tru}}}}}",
	  -EBADMSG, "" },
	{ "generation is a string", RV_HEAD RQ_HEAD ",\"object\":{\"spec\":{\"pool\":{\"generation\":"
	  "\"3\"}}}}}", -EPROTO, "request.object.spec.pool.generation: expected an integer, got a string" },
	{ "generation is a fraction", RV_HEAD RQ_HEAD ",\"object\":{\"spec\":{\"pool\":{\"generation\":"
	  "1.5}}}}}", -EPROTO, "request.object.spec.pool.generation: expected an int64 integer, got 1.5" },
	{ "generation overflows", RV_HEAD RQ_HEAD ",\"object\":{\"spec\":{\"pool\":{\"generation\":"
	  "9223372036854775808}}}}}", -EPROTO, "expected an int64 integer, got 9223372036854775808" },
	{ "devices is an object", RV_HEAD RQ_HEAD ",\"object\":{\"spec\":{\"devices\":{}}}}}", -EPROTO,
	  "request.object.spec.devices: expected an array, got an object" },
	{ "duplicate devices", RV_HEAD RQ_HEAD ",\"object\":{\"spec\":{\"devices\":[],\"devices\":[]}}}}",
	  -EPROTO, "request.object.spec: duplicate member \"devices\"" },
	{ "device name is a number", OBJ(DEV ",{\"name\":5}"), -EPROTO,
	  "request.object.spec.devices[1].name: expected a string, got a number" },
	{ "allowMultipleAllocations is a string", OBJ("{\"allowMultipleAllocations\":\"true\"}"),
	  -EPROTO, "request.object.spec.devices[0].allowMultipleAllocations: expected true or false" },
	{ "capacity is a list", OBJ("{\"capacity\":[]}"), -EPROTO,
	  "request.object.spec.devices[0].capacity: expected an object, got an array" },
	{ "capacity value is a bare string", OBJ(DEV "," DEV "," DEV ",{\"capacity\":{\"example.com/mem\":"
	  "\"8Gi\"}}"), -EPROTO,
	  "request.object.spec.devices[3].capacity[\"example.com/mem\"]: expected an object" },
	{ "duplicate capacity", OBJ("{\"capacity\":{\"c\":{},\"c\":{}}}"), -EPROTO,
	  "request.object.spec.devices[0].capacity: duplicate key \"c\"" },
	{ "capacity value is an object", OBJ("{\"capacity\":{\"c\":{\"value\":{}}}}"), -EPROTO,
	  "capacity.c.value: expected a quantity (a string or a number), got an object" },
	{ "mapping entry is a string", OBJ("{\"nodeAllocatableResourceMappings\":{\"memory\":\"8Gi\"}}"),
	  -EPROTO, "devices[0].nodeAllocatableResourceMappings.memory: expected an object, got a string" },
	{ "multiplier is an object", OBJ("{\"nodeAllocatableResourceMappings\":{\"cpu\":"
	  "{\"allocationMultiplier\":{}}}}"), -EPROTO,
	  "nodeAllocatableResourceMappings.cpu.allocationMultiplier: expected a quantity" },
	{ "multiplier is true", OBJ("{\"nodeAllocatableResourceMappings\":{\"cpu\":"
	  "{\"allocationMultiplier\":true}}}"), -EPROTO, "got true" },
	{ "duplicate mapping", OBJ("{\"nodeAllocatableResourceMappings\":{\"cpu\":{},\"cpu\":{}}}"),
	  -EPROTO, "nodeAllocatableResourceMappings: duplicate key \"cpu\"" },
	{ "duplicate multiplier", OBJ("{\"nodeAllocatableResourceMappings\":{\"cpu\":"
	  "{\"allocationMultiplier\":\"1\",\"allocationMultiplier\":\"2\"}}}"), -EPROTO,
	  "nodeAllocatableResourceMappings.cpu: duplicate member \"allocationMultiplier\"" },
	{ "capacityKey is a number", OBJ("{\"nodeAllocatableResourceMappings\":{\"cpu\":"
	  "{\"capacityKey\":1}}}"), -EPROTO, "cpu.capacityKey: expected a string, got a number" },
	{ "1.37 mapping is a list", OBJ("{\"nodeAllocatableResources\":{\"cpu\":{\"mapping\":[]}}}"),
	  -EPROTO, "nodeAllocatableResources.cpu.mapping: expected an object, got an array" },
	{ "1.37 perPod is false", OBJ("{\"nodeAllocatableResources\":{\"cpu\":{\"overhead\":"
	  "{\"perPod\":false}}}}"), -EPROTO, "nodeAllocatableResources.cpu.overhead.perPod: expected a quantity" },
	{ "v1beta1 basic is a list", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
	  "\"version\":\"v1beta1\",\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\",\"object\":"
	  "{\"spec\":{\"devices\":[{\"name\":\"a\",\"basic\":[]}]}}}}", -EPROTO,
	  "request.object.spec.devices[0].basic: expected an object, got an array" },
	{ "unsupported version", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
	  "\"version\":\"v1alpha3\",\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\",\"object\":{}}}",
	  -EPROTO, "request.object: ResourceSlice resource.k8s.io/v1alpha3 is not supported: the guard "
	  "decodes ResourceSlice in resource.k8s.io/v1, v1beta2 and v1beta1" },
	{ "unsupported oldObject version", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
	  "\"version\":\"v1alpha3\",\"kind\":\"ResourceClaim\"},\"operation\":\"DELETE\",\"object\":null,"
	  "\"oldObject\":{}}}", -EPROTO, "request.oldObject: ResourceClaim resource.k8s.io/v1alpha3" },
	{ "core kind in another version", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":"
	  "\"v2\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{}}}", -EPROTO,
	  "request.object: Pod version \"v2\" is not supported" },
	{ "claim requests is an object", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
	  "\"version\":\"v1\",\"kind\":\"ResourceClaim\"},\"operation\":\"CREATE\",\"object\":"
	  "{\"spec\":{\"devices\":{\"requests\":{}}}}}}", -EPROTO,
	  "request.object.spec.devices.requests: expected an array, got an object" },
	{ "consumedCapacity value is a list", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":"
	  "\"resource.k8s.io\",\"version\":\"v1\",\"kind\":\"ResourceClaim\"},\"operation\":\"UPDATE\","
	  "\"object\":{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"consumedCapacity\":"
	  "{\"x.io/c\":[]}}]}}}}}}", -EPROTO,
	  "request.object.status.allocation.devices.results[0].consumedCapacity[\"x.io/c\"]: expected a quantity" },
	{ "pod claim statuses is an object", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\","
	  "\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"UPDATE\",\"object\":{\"status\":"
	  "{\"nodeAllocatableResourceClaimStatuses\":{}}}}}", -EPROTO,
	  "request.object.status.nodeAllocatableResourceClaimStatuses: expected an array, got an object" },
	{ "pod container is a number", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\","
	  "\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"UPDATE\",\"object\":{\"status\":"
	  "{\"nodeAllocatableResourceClaimStatuses\":[{\"containers\":[7]}]}}}}", -EPROTO,
	  "nodeAllocatableResourceClaimStatuses[0].containers[0]: expected a string, got a number" },
	{ "config map data value is a number", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\","
	  "\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"operation\":\"UPDATE\",\"object\":{\"data\":"
	  "{\"freeze\":true}}}}", -EPROTO, "request.object.data.freeze: expected a string, got true" },
	{ "duplicate config map key", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\","
	  "\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"operation\":\"UPDATE\",\"object\":{\"data\":"
	  "{\"freeze\":\"true\",\"freeze\":\"false\"}}}}", -EPROTO, "duplicate data entry \"freeze\"" },
	/* an object error waits for the rest of the review */
	{ "object error then a bad operation", RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\","
	  "\"version\":\"v1\",\"kind\":\"Pod\"},\"object\":{\"metadata\":5},\"operation\":\"X\"}}",
	  -EBADMSG, "request.operation: \"X\" is not" },
	{ "object error then garbage", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":5}}} ]", -EBADMSG,
	  "expected end of input" },
	{ "object error then a grammar error", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":5,"
	  "\"spec\":{\"a\":01}}}}", -EBADMSG, "request.object: invalid number: leading zero" },
	{ "object error then a wrong review kind", "{\"apiVersion\":\"admission.k8s.io/v1\","
	  "\"request\":" RQ_HEAD ",\"object\":{\"metadata\":5}},\"kind\":\"X\"}", -EBADMSG,
	  "kind: expected \"AdmissionReview\"" },
	{ "object error held until the end", RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":5},"
	  "\"oldObject\":{\"metadata\":[]},\"dryRun\":true}}", -EPROTO,
	  "request.object.metadata: expected an object, got a number" },
	{ "oldObject error", RV_HEAD RQ_HEAD ",\"object\":{},\"oldObject\":{\"spec\":{\"driver\":[]}}}}",
	  -EPROTO, "request.oldObject.spec.driver: expected a string, got an array" },
	{ "deferred object error", RV_HEAD "{\"uid\":\"u\",\"object\":{\"spec\":{\"devices\":"
	  "[{\"name\":1}]}},\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
	  "\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\"}}", -EPROTO,
	  "request.object.spec.devices[0].name: expected a string, got a number" },
};

static void test_malformed_reviews_fail_with_path_and_code(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct admission_request rq;
		struct decode_error err;
		int rc;

		rc = decode_review(c->body, strlen(c->body), NULL, a, &rq, &err);
		if (rc != c->rc || !strstr(err.msg, c->msg))
			fail_msg("%s: got %d \"%s\", want %d \"%s\"", c->name, rc, err.msg, c->rc, c->msg);
		assert_true(err.offset <= strlen(c->body));
		arena_reset(a);
	}
	arena_free(a);
}

static void test_error_offset_points_at_the_value(void **state)
{
	const char *body = OBJ(DEV ",{\"name\":\"d1\",\"capacity\":{\"m\":\"8Gi\"}}");
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices[1].capacity.m: expected an object "
			    "(a DeviceCapacity such as {\"value\": \"80Gi\"}), got a string");
	assert_memory_equal(body + err.offset, "\"8Gi\"", 5);
	arena_free(a);
}

/* --- values -------------------------------------------------------------- */

static void test_quantities_as_strings_numbers_and_bad_text(void **state)
{
	const char *body = OBJ("{\"name\":\"d\",\"nodeAllocatableResourceMappings\":{"
			       "\"cpu\":{\"allocationMultiplier\":2},"
			       "\"memory\":{\"allocationMultiplier\":1.5e3},"
			       "\"hugepages-2Mi\":{\"allocationMultiplier\":\"lots\"},"
			       "\"ephemeral-storage\":null,"
			       "\"x\":{\"allocationMultiplier\":null,\"capacityKey\":\"\"}}}");
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct device *v;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	v = &rq.object.u.slice.devices[0];
	assert_int_equal(v->nmappings, 5);
	/* sorted: cpu, ephemeral-storage, hugepages-2Mi, memory, x */
	assert_true(v->mappings[0].multiplier.present);
	assert_str(v->mappings[0].multiplier.text, "2");
	assert_int_equal(v->mappings[0].multiplier.err, 0);
	assert_str(v->mappings[3].multiplier.text, "1.5e3");
	assert_int_equal(v->mappings[3].multiplier.err, 0);
	/* a text that is no quantity is kept for the rules to report */
	assert_str(v->mappings[2].multiplier.text, "lots");
	assert_int_equal(v->mappings[2].multiplier.err, -EINVAL);
	assert_true(v->mappings[1].is_null);
	assert_false(v->mappings[1].multiplier.present);
	assert_false(v->mappings[4].multiplier.present);
	assert_true(v->mappings[4].has_capacity_key);
	assert_int_equal(v->mappings[4].capacity_key.len, 0);
	arena_free(a);
}

static void test_kubernetes_137_shape_and_unknown_members(void **state)
{
	const char *body = OBJ("{\"name\":\"d\",\"allowMultipleAllocations\":true,"
			       "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"1\"}},"
			       "\"nodeAllocatableResources\":{"
			       "\"cpu\":{\"mapping\":{\"deviceMultiplier\":\"2\"},"
			       "\"overhead\":{\"perPod\":\"100m\",\"perContainer\":\"10m\"}},"
			       "\"memory\":{\"mapping\":{\"capacityKey\":\"x.io/mem\",\"capacityMultiplier\":\"1\","
			       "\"quantityFrom\":{}}},"
			       "\"hugepages-1Gi\":{\"overhead\":{\"perNode\":\"1\"}},"
			       "\"ephemeral-storage\":{\"accounting\":\"x\",\"mapping\":{\"foo\":1}},"
			       "\"pods\":null}}");
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct device *v;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	v = &rq.object.u.slice.devices[0];
	assert_true(v->has_v136);
	assert_true(v->has_v137);
	assert_int_equal(v->nmappings, 6);
	/* by shape, then resource: 1.36 cpu; 1.37 cpu, ephemeral-storage,
	 * hugepages-1Gi, memory, pods */
	assert_int_equal(v->mappings[0].shape, MAPPING_V136);
	assert_int_equal(v->mappings[1].shape, MAPPING_V137);
	assert_str(v->mappings[1].resource, "cpu");
	assert_str(v->mappings[1].multiplier.text, "2");
	assert_str(v->mappings[1].overhead_per_pod.text, "100m");
	assert_str(v->mappings[1].overhead_per_container.text, "10m");
	assert_false(v->mappings[1].has_capacity_key);
	assert_int_equal(v->mappings[1].unknown_field.len, 0);
	assert_str(v->mappings[4].capacity_key, "x.io/mem");
	assert_str(v->mappings[4].capacity_multiplier.text, "1");
	assert_false(v->mappings[4].multiplier.present);
	assert_str(v->mappings[4].unknown_field, "mapping.quantityFrom");
	assert_str(v->mappings[3].unknown_field, "overhead.perNode");
	assert_str(v->mappings[2].unknown_field, "accounting");
	assert_true(v->mappings[5].is_null);
	assert_true(model_find_mapping(v, MAPPING_V137, STR_LIT("memory")) == &v->mappings[4]);
	assert_true(model_find_mapping(v, MAPPING_V136, STR_LIT("cpu")) == &v->mappings[0]);
	assert_null(model_find_mapping(v, MAPPING_V136, STR_LIT("memory")));
	arena_free(a);
}

static void test_metadata_labels_and_deletion(void **state)
{
	const char *body = RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"name\":\"n\\u00e9\","
			   "\"generateName\":\"g-\",\"namespace\":null,\"uid\":\"u\","
			   "\"labels\":{\"a\":\"b\",\"dra-guard.io/mappings\":\"v2\\n\"},"
			   "\"annotations\":{\"dra-guard.io/mappings\":\"ignored\"},"
			   "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct object_meta *m;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	m = &rq.object.meta;
	assert_str(m->name, "n\xc3\xa9");
	assert_str(m->generate_name, "g-");
	assert_int_equal(m->namespace.len, 0);
	assert_true(m->has_labels);
	assert_true(m->has_mapping_label);
	assert_str(m->mapping_label, "v2\n");
	assert_true(m->deleting);
	arena_reset(a);

	body = RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"labels\":null,\"deletionTimestamp\":null}}}}";
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_false(rq.object.meta.has_labels);
	assert_false(rq.object.meta.deleting);
	arena_free(a);
}

static void test_user_info_groups_and_extra(void **state)
{
	const char *body = RV_HEAD RQ_HEAD ",\"userInfo\":{\"username\":\"system:serviceaccount:d:s\","
			   "\"uid\":\"42\",\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
			   "\"extra\":{\"" MODEL_EXTRA_NODE_NAME "\":[\"worker-1\"],\"x\":[],\"y\":null}},"
			   "\"dryRun\":true,\"subResource\":\"status\",\"namespace\":\"ns\"}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct str *v;
	uint32_t n;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_str(rq.user.username, "system:serviceaccount:d:s");
	assert_str(rq.user.uid, "42");
	assert_int_equal(rq.user.ngroups, 2);
	assert_true(str_eq_cstr(rq.user.groups[1], "system:authenticated"));
	/* only the extras a rule reads are kept */
	assert_int_equal(rq.user.nextra, 1);
	v = model_user_extra(&rq.user, MODEL_EXTRA_NODE_NAME, &n);
	assert_int_equal(n, 1);
	assert_str(v[0], "worker-1");
	assert_true(rq.dry_run);
	assert_str(rq.sub_resource, "status");
	assert_str(rq.namespace, "ns");
	assert_str(rq.operation_text, "UPDATE");
	assert_int_equal(rq.object.kind, OBJECT_NONE);
	arena_free(a);
}

static void test_config_map_data(void **state)
{
	const char *body = RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
			   "\"kind\":\"ConfigMap\"},\"operation\":\"UPDATE\",\"object\":{\"apiVersion\":\"v1\","
			   "\"kind\":\"ConfigMap\",\"data\":{\"policy.yaml\":\"apiVersion: x\\nkind: Policy\\n\","
			   "\"freeze\":\"true\",\"freeze-reason\":\"INC-1 \\\"quoted\\\"\",\"other\":null}}}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct config_map *cm;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.kind, OBJECT_CONFIG_MAP);
	cm = &rq.object.u.config_map;
	assert_true(cm->has_policy);
	assert_str(cm->policy, "apiVersion: x\nkind: Policy\n");
	assert_true(cm->has_freeze);
	assert_str(cm->freeze, "true");
	assert_true(cm->has_freeze_reason);
	assert_str(cm->freeze_reason, "INC-1 \"quoted\"");
	arena_free(a);
}

struct selector_case {
	const char *selector;
	bool local;
	const char *node;
};

static void test_claim_node_local_selector(void **state)
{
	static const struct selector_case cases[] = {
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w1\"]}]}]}", true, "w1" },
		{ "{\"nodeSelectorTerms\":[{\"matchExpressions\":[],\"matchFields\":[{\"key\":"
		  "\"metadata.name\",\"operator\":\"In\",\"values\":[\"w1\"]}]}]}", true, "w1" },
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w1\",\"w2\"]}]}]}", false, NULL },
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
		  "\"NotIn\",\"values\":[\"w1\"]}]}]}", false, NULL },
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\","
		  "\"values\":[\"w1\"]}]}]}", false, NULL },
		{ "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
		  "\"values\":[\"a\"]}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w1\"]}]}]}", false, NULL },
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w1\"]}]},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w2\"]}]}]}", false, NULL },
		{ "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		  "\"values\":[\"w1\"]},{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"w1\"]}]}]}",
		  false, NULL },
		{ "{\"nodeSelectorTerms\":[]}", false, NULL },
		{ "null", false, NULL },
	};
	struct arena *a = new_arena(ARENA_CAP);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct admission_request rq;
		struct decode_error err;
		char *body = NULL;
		int rc;

		assert_true(asprintf(&body, RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
				     "\"version\":\"v1\",\"kind\":\"ResourceClaim\"},\"operation\":\"UPDATE\","
				     "\"object\":{\"status\":{\"allocation\":{\"nodeSelector\":%s}}}}}",
				     cases[i].selector) > 0);
		rc = decode_text(body, NULL, a, &rq, &err);
		if (rc != 0 || rq.object.u.claim.node_local != cases[i].local)
			fail_msg("case %zu: rc %d %s local %d", i, rc, err.msg, rq.object.u.claim.node_local);
		assert_true(rq.object.u.claim.allocated);
		if (cases[i].node)
			assert_str(rq.object.u.claim.allocated_node, cases[i].node);
		free(body);
		arena_reset(a);
	}
	arena_free(a);
}

static void test_null_allocation_is_not_allocated(void **state)
{
	const char *body = RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
			   "\"version\":\"v1beta1\",\"kind\":\"ResourceClaim\"},\"operation\":\"UPDATE\","
			   "\"object\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"deviceClassName\":"
			   "\"c1\",\"exactly\":{\"deviceClassName\":\"ignored\"}}]}},\"status\":{\"allocation\":null,"
			   "\"reservedFor\":[]}}}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct resource_claim *c;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	c = &rq.object.u.claim;
	assert_int_equal(rq.object.version, API_V1BETA1);
	assert_false(c->allocated);
	assert_int_equal(c->allocation_raw.len, 0);
	/* v1beta1 reads the flat deviceClassName; "exactly" is not its field */
	assert_int_equal(c->requests[0].ndevice_classes, 1);
	assert_str(c->requests[0].device_classes[0], "c1");
	assert_str(c->reserved_for_raw, "[]");
	arena_free(a);
}

static void test_other_kinds_are_skipped(void **state)
{
	const char *body = RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\","
			   "\"kind\":\"Deployment\"},\"operation\":\"CREATE\",\"object\":{\"metadata\":5,"
			   "\"spec\":[\"anything\"]}}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;

	(void)state;
	/* Not decoded, so no schema error; still validated as JSON. */
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.kind, OBJECT_OTHER);
	arena_reset(a);
	body = RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\","
	       "\"kind\":\"Deployment\"},\"operation\":\"CREATE\",\"object\":{\"spec\":[01]}}}";
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), -EBADMSG);
	arena_free(a);
}

static void test_classify(void **state)
{
	static const struct {
		const char *group, *version, *kind;
		enum object_kind want;
		enum api_version ver;
	} cases[] = {
		{ "resource.k8s.io", "v1", "ResourceSlice", OBJECT_RESOURCE_SLICE, API_V1 },
		{ "resource.k8s.io", "v1beta2", "ResourceSlice", OBJECT_RESOURCE_SLICE, API_V1BETA2 },
		{ "resource.k8s.io", "v1beta1", "ResourceClaim", OBJECT_RESOURCE_CLAIM, API_V1BETA1 },
		{ "resource.k8s.io", "v1alpha3", "ResourceClaim", OBJECT_RESOURCE_CLAIM, API_VERSION_UNKNOWN },
		{ "resource.k8s.io", "v1", "DeviceClass", OBJECT_OTHER, API_VERSION_UNKNOWN },
		{ "resource.k8s.io", "v1", "ResourceClaimTemplate", OBJECT_OTHER, API_VERSION_UNKNOWN },
		{ "", "v1", "Pod", OBJECT_POD, API_V1 },
		{ "", "v1", "ConfigMap", OBJECT_CONFIG_MAP, API_V1 },
		{ "", "v1", "Secret", OBJECT_OTHER, API_VERSION_UNKNOWN },
		{ "apps", "v1", "Pod", OBJECT_OTHER, API_VERSION_UNKNOWN },
		{ "resource.k8s.io", "v1", "resourceslice", OBJECT_OTHER, API_VERSION_UNKNOWN },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_version v = API_V1BETA2;
		enum object_kind k = decode_classify(str_from_cstr(cases[i].group),
						     str_from_cstr(cases[i].version),
						     str_from_cstr(cases[i].kind), &v);

		if (k != cases[i].want || v != cases[i].ver)
			fail_msg("%s/%s %s: %d/%d", cases[i].group, cases[i].version, cases[i].kind, k, v);
	}
}

/* --- member order -------------------------------------------------------- */

#define ORDER_KIND "\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"kind\":\"ResourceSlice\"}"
#define ORDER_OBJ "\"object\":" SLICE_HEAD DEV ",{\"name\":\"new\"}]}}"
#define ORDER_OLD "\"oldObject\":" SLICE_HEAD DEV ",{\"name\":\"old\"}]}}"
#define ORDER_REST "\"uid\":\"u\",\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"x\"}"

static void test_member_order_does_not_change_the_result(void **state)
{
	static const char *const bodies[] = {
		RV_HEAD "{" ORDER_REST "," ORDER_KIND "," ORDER_OBJ "," ORDER_OLD "}}",
		RV_HEAD "{" ORDER_REST "," ORDER_OBJ "," ORDER_KIND "," ORDER_OLD "}}",
		RV_HEAD "{" ORDER_REST "," ORDER_KIND "," ORDER_OLD "," ORDER_OBJ "}}",
		RV_HEAD "{" ORDER_OLD "," ORDER_OBJ "," ORDER_REST "," ORDER_KIND "}}",
		RV_HEAD "{" ORDER_OBJ "," ORDER_OLD "," ORDER_KIND "," ORDER_REST "}}",
		"{\"request\":{" ORDER_OLD "," ORDER_KIND "," ORDER_OBJ "," ORDER_REST "},"
		"\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}",
		"{ \"request\" : { " ORDER_REST " , " ORDER_KIND " ,\n " ORDER_OBJ " , "
		ORDER_OLD " } , \"apiVersion\" : \"admission.k8s.io/v1\", \"kind\":\"AdmissionReview\" }",
	};
	struct arena *a = new_arena(ARENA_CAP);
	char *first = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct admission_request rq;
		struct decode_error err;
		char *d;
		int rc = decode_text(bodies[i], NULL, a, &rq, &err);

		if (rc != 0)
			fail_msg("order %zu: %d %s", i, rc, err.msg);
		assert_int_equal(rq.object.u.slice.ndevices, 2);
		assert_str(rq.object.u.slice.devices[1].name, "new");
		assert_str(rq.old_object.u.slice.devices[1].name, "old");
		d = dump_request(&rq);
		if (!first)
			first = d;
		else if (strcmp(first, d) != 0)
			fail_msg("order %zu differs:\n%s\n---\n%s", i, first, d);
		if (d != first)
			free(d);
		arena_reset(a);
	}
	free(first);
	arena_free(a);
}

static void test_bare_object_kind_after_spec(void **state)
{
	static const char *const texts[] = {
		"{\"apiVersion\":\"resource.k8s.io/v1beta1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},"
		"\"spec\":{\"driver\":\"d\",\"devices\":[{\"name\":\"a\",\"basic\":{\"capacity\":{\"c\":{\"value\":\"1\"}}}}]}}",
		"{\"spec\":{\"driver\":\"d\",\"devices\":[{\"name\":\"a\",\"basic\":{\"capacity\":{\"c\":{\"value\":\"1\"}}}}]},"
		"\"metadata\":{\"name\":\"s\"},\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1beta1\"}",
		"{\"kind\":\"ResourceSlice\",\"spec\":{\"driver\":\"d\",\"devices\":[{\"name\":\"a\",\"basic\":"
		"{\"capacity\":{\"c\":{\"value\":\"1\"}}}}]},\"apiVersion\":\"resource.k8s.io/v1beta1\","
		"\"metadata\":{\"name\":\"s\"}}",
	};
	struct arena *a = new_arena(ARENA_CAP);
	char *first = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct k8s_object o;
		struct decode_error err;
		char *d;

		if (decode_object(texts[i], strlen(texts[i]), NULL, a, &o, &err) != 0)
			fail_msg("text %zu: %s", i, err.msg);
		assert_int_equal(o.version, API_V1BETA1);
		assert_str(o.u.slice.devices[0].capacity[0].name, "c");
		o.u.slice.devices[0].raw = STR_LIT("");
		d = dump_one(&o);
		if (!first)
			first = d;
		else if (strcmp(first, d) != 0)
			fail_msg("text %zu differs:\n%s\n---\n%s", i, first, d);
		if (d != first)
			free(d);
		arena_reset(a);
	}
	free(first);
	arena_free(a);
}

/* decode_object_as_prefix(): the object at the start, whatever follows;
 * its length in *used; a cut or invalid object is an error as in
 * decode_object_as(), and the bytes after it are not read. */
static void test_object_as_prefix_reads_the_first_object_only(void **state)
{
	static const char obj[] = "{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"3\"},"
				  "\"spec\":{\"driver\":\"d.example.com\",\"nodeName\":\"n\","
				  "\"pool\":{\"name\":\"p\",\"generation\":1,\"resourceSliceCount\":1}}}";
	static const struct {
		const char *after;      /* text after the object */
		size_t cut;             /* bytes cut off the object's end */
		int rc;
	} cases[] = {
		{ "", 0, 0 },
		{ ",{\"metadata\":", 0, 0 },     /* the next LIST item, cut */
		{ "]} garbage \x01", 0, 0 },      /* nothing after the object is read */
		{ "", 1, -EPROTO },              /* the closing brace not yet here */
		{ "", 20, -EPROTO },
	};
	struct arena *a = new_arena(ARENA_CAP);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[512];
		size_t olen = strlen(obj) - cases[i].cut, used = 0;
		struct k8s_object o;
		struct decode_error err;
		int rc;

		snprintf(text, sizeof(text), "%.*s%s", (int)olen, obj, cases[i].after);
		rc = decode_object_as_prefix(text, strlen(text), OBJECT_RESOURCE_SLICE, API_V1, NULL, a,
					     &o, &err, &used);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal(used, strlen(obj));
			assert_true(str_eq(o.meta.name, STR_LIT("s")));
			assert_true(str_eq(o.u.slice.pool_name, STR_LIT("p")));
		}
		/* the same text whole is refused when anything follows the object */
		rc = decode_object_as(text, strlen(text), OBJECT_RESOURCE_SLICE, API_V1, NULL, a, &o, &err);
		assert_int_equal(rc, cases[i].rc == 0 && cases[i].after[0] ? -EPROTO : cases[i].rc);
	}
	arena_free(a);
}

static void test_bare_object_errors(void **state)
{
	static const struct bad_case cases[] = {
		{ "no kind", "{\"apiVersion\":\"v1\",\"spec\":{}}", -EPROTO, "kind is missing" },
		{ "no apiVersion", "{\"kind\":\"Pod\"}", -EPROTO, "apiVersion is missing" },
		{ "not an object", "[1]", -EPROTO, "expected an object, got an array" },
		{ "not JSON", "{\"kind\":", -EPROTO, "unexpected end of input" },
		{ "trailing text", "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"} {}", -EPROTO,
		  "expected end of input" },
		{ "late unsupported version", "{\"spec\":{},\"kind\":\"ResourceSlice\","
		  "\"apiVersion\":\"resource.k8s.io/v1alpha3\"}", -EPROTO,
		  "ResourceSlice resource.k8s.io/v1alpha3 is not supported" },
		{ "early unsupported version", "{\"kind\":\"ResourceSlice\","
		  "\"apiVersion\":\"resource.k8s.io/v2\",\"spec\":{}}", -EPROTO,
		  "ResourceSlice resource.k8s.io/v2 is not supported" },
		{ "deferred spec error", "{\"spec\":{\"nodeName\":1},\"kind\":\"Pod\",\"apiVersion\":\"v1\"}",
		  -EPROTO, "spec.nodeName: expected a string, got a number" },
	};
	struct arena *a = new_arena(ARENA_CAP);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct k8s_object o;
		struct decode_error err;
		int rc = decode_object(cases[i].body, strlen(cases[i].body), NULL, a, &o, &err);

		if (rc != cases[i].rc || !strstr(err.msg, cases[i].msg))
			fail_msg("%s: got %d \"%s\"", cases[i].name, rc, err.msg);
		arena_reset(a);
	}
	/* kinds no rule reads */
	{
		const char *t = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"x\":1}}";
		struct k8s_object o;
		struct decode_error err;

		assert_int_equal(decode_object(t, strlen(t), NULL, a, &o, &err), 0);
		assert_int_equal(o.kind, OBJECT_OTHER);
		assert_str(o.kind_name, "Deployment");
	}
	arena_free(a);
}

/* --- the oldObject shortcut ---------------------------------------------- */

/* The text of member "oldObject" in a review body (for a full decode). */
static struct str old_object_text(const char *body)
{
	const char *p = strstr(body, "\"oldObject\":");
	struct jscan s;
	struct str raw = { NULL, 0 };

	assert_non_null(p);
	p += strlen("\"oldObject\":");
	jscan_init(&s, p, strlen(p), 0);
	assert_int_equal(jscan_skip(&s, &raw), 0);
	return raw;
}

/* oldObject decoded with the shortcut must equal oldObject decoded alone. */
static void check_shortcut(const char *body, struct arena *a, uint32_t *shared)
{
	struct admission_request rq;
	struct k8s_object full;
	struct decode_error err;
	struct str old = old_object_text(body);
	char *d1, *d2;
	uint32_t i;

	if (decode_text(body, NULL, a, &rq, &err) != 0)
		fail_msg("review: %s", err.msg);
	assert_int_equal(decode_object(old.ptr, old.len, NULL, a, &full, &err), 0);
	d1 = dump_one(&rq.old_object);
	d2 = dump_one(&full);
	if (strcmp(d1, d2) != 0)
		fail_msg("shortcut differs from a full decode:\n%s\n---\n%s", d1, d2);
	*shared = 0;
	for (i = 0; i < rq.old_object.u.slice.ndevices; i++) {
		const struct device *v = &rq.old_object.u.slice.devices[i];

		/* raw is always the old text */
		assert_true(v->raw.ptr >= old.ptr && v->raw.ptr + v->raw.len <= old.ptr + old.len);
		if (i < rq.object.u.slice.ndevices && v->ncapacity &&
		    v->capacity == rq.object.u.slice.devices[i].capacity)
			(*shared)++;
	}
	free(d1);
	free(d2);
	arena_reset(a);
}

/* An UPDATE as a driver republish sends it: n devices with attributes,
 * capacities and mappings; device `changed` has a new firmware version. */
static char *republish(unsigned n, unsigned changed)
{
	struct dump d = { NULL, 0, 0 };
	unsigned obj, i;

	d.cap = 4096;
	d.p = malloc(d.cap);
	assert_non_null(d.p);
	d.p[0] = '\0';
	dprintf_(&d, "%s", RV_HEAD RQ_HEAD);
	for (obj = 0; obj < 2; obj++) {
		dprintf_(&d, ",\"%s\":%s", obj ? "oldObject" : "object", SLICE_HEAD);
		for (i = 0; i < n; i++) {
			bool shareable = i % 4 == 3;

			dprintf_(&d, "%s{\"name\":\"acc-%u\",\"attributes\":{\"x.io/model\":"
				 "{\"string\":\"m%u\"},\"x.io/numaNode\":{\"int\":%u},"
				 "\"x.io/firmware\":{\"version\":\"%s\"}},\"capacity\":{\"x.io/mem\":"
				 "{\"value\":\"%uGi\",\"requestPolicy\":{\"default\":\"1Gi\"}}},"
				 "\"allowMultipleAllocations\":%s,\"nodeAllocatableResourceMappings\":"
				 "{\"memory\":{\"allocationMultiplier\":\"8Gi\"},%s}}",
				 i ? "," : "", i, i % 3, i % 2,
				 obj == 0 && i == changed ? "3.0.1" : "2.0.0", 40 + i,
				 shareable ? "true" : "false",
				 shareable ? "\"cpu\":{\"capacityKey\":\"x.io/mem\"}" :
					     "\"cpu\":{\"allocationMultiplier\":\"500m\"}");
		}
		dprintf_(&d, "]}}");
	}
	dprintf_(&d, "}}");
	return d.p;
}

static void test_identical_old_devices_are_taken_from_object(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	char *body = republish(32, 16);
	uint32_t shared;

	(void)state;
	check_shortcut(body, a, &shared);
	/* one device differs (its firmware attribute changed) */
	assert_int_equal(shared, 31);
	free(body);
	arena_free(a);
}

#define D(n, extra) "{\"name\":\"" n "\",\"capacity\":{\"c\":{\"value\":\"1\"}}" extra "}"
#define UPDATE(newdevs, olddevs) RV_HEAD RQ_HEAD ",\"object\":" SLICE_HEAD newdevs "]}}" \
	",\"oldObject\":" SLICE_HEAD olddevs "]}}}}"

static void test_shortcut_edge_cases_match_a_full_decode(void **state)
{
	static const struct {
		const char *name;
		const char *body;
		uint32_t shared;
	} cases[] = {
		{ "all equal", UPDATE(D("a", "") "," D("b", ""), D("a", "") "," D("b", "")), 2 },
		{ "swapped", UPDATE(D("a", "") "," D("b", ""), D("b", "") "," D("a", "")), 0 },
		{ "one removed from the front", UPDATE(D("b", ""), D("a", "") "," D("b", "")), 0 },
		{ "old has more", UPDATE(D("a", ""), D("a", "") "," D("b", "")), 1 },
		{ "whitespace differs", UPDATE(D("a", ""), "{ \"name\":\"a\",\"capacity\":{\"c\":{\"value\":\"1\"}}}"), 0 },
		{ "leading whitespace only", UPDATE(D("a", ""), "  \n" D("a", "")), 1 },
		{ "mapping changed", UPDATE(D("a", ",\"nodeAllocatableResourceMappings\":{\"cpu\":"
					     "{\"allocationMultiplier\":\"2\"}}"),
					     D("a", ",\"nodeAllocatableResourceMappings\":{\"cpu\":"
					     "{\"allocationMultiplier\":\"1\"}}")), 0 },
		{ "escaped text equal", UPDATE(D("\\u0061", ""), D("\\u0061", "")), 1 },
		{ "null device", UPDATE("null," D("b", ""), "null," D("b", "")), 1 },
		{ "old device is a prefix of new text", UPDATE(D("a", ",\"x\":1"), D("a", "")), 0 },
	};
	struct arena *a = new_arena(ARENA_CAP);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t shared = 99;

		check_shortcut(cases[i].body, a, &shared);
		if (shared != cases[i].shared)
			fail_msg("%s: %u devices shared, want %u", cases[i].name, shared, cases[i].shared);
	}
	arena_free(a);
}

static void test_old_object_before_object_uses_no_stale_reference(void **state)
{
	const char *body = RV_HEAD RQ_HEAD ",\"oldObject\":" SLICE_HEAD D("a", "") "]}},"
			   "\"object\":" SLICE_HEAD D("a", "") "]}}}}";
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_str(rq.old_object.u.slice.devices[0].name, "a");
	/* decoded after object, so it could share */
	assert_ptr_equal(rq.old_object.u.slice.devices[0].capacity,
			 rq.object.u.slice.devices[0].capacity);
	arena_free(a);
}

/* --- maps repeated from device to device --------------------------------- */

#define CAP1 "\"capacity\":{\"x.io/mem\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"1Gi\"," \
	"\"validRange\":{\"min\":\"1Gi\",\"step\":\"1Gi\"}}},\"x.io/cores\":{\"value\":\"8\"}}"
#define MAP1 "\"nodeAllocatableResourceMappings\":{\"memory\":{\"capacityKey\":\"x.io/mem\"}," \
	"\"cpu\":{\"allocationMultiplier\":\"500m\"}}"
#define MAP137 "\"nodeAllocatableResources\":{\"hugepages-2Mi\":{\"mapping\":{\"deviceMultiplier\":\"2Mi\"}}}"

/* Device i of s, decoded within the slice, against the same device decoded
 * alone in a slice of one (where no map can repeat). */
static void check_device_alone(const struct resource_slice *s, uint32_t i, struct arena *scratch)
{
	struct admission_request rq;
	struct decode_error err;
	struct device dev = s->devices[i];
	struct resource_slice one = *s;
	struct k8s_object o = { 0 };
	char *body, *d1, *d2;
	size_t n = dev.raw.len + 1024;

	body = malloc(n);
	assert_non_null(body);
	snprintf(body, n, "%s%s%s,\"object\":%s%.*s]}}}}", RV_HEAD, RQ_HEAD, "", SLICE_HEAD, (int)dev.raw.len,
		 dev.raw.ptr);
	if (decode_text(body, NULL, scratch, &rq, &err) != 0)
		fail_msg("device %u alone: %s", i, err.msg);
	dev.index = 0;
	one.devices = &dev;
	one.ndevices = 1;
	o = rq.object;
	o.u.slice = one;
	d1 = dump_one(&o);
	d2 = dump_one(&rq.object);
	if (strcmp(d1, d2) != 0)
		fail_msg("device %u differs from its decode alone:\n%s\n---\n%s", i, d1, d2);
	free(d1);
	free(d2);
	free(body);
}

static void test_repeated_maps_are_shared_and_decode_as_alone(void **state)
{
	static const char body[] = OBJ(
		"{\"name\":\"a\"," CAP1 "," MAP1 "},"
		"{\"name\":\"b\"," CAP1 "," MAP1 "},"
		/* both shapes: the second map goes to a copy of the first */
		"{\"name\":\"c\"," CAP1 "," MAP1 "," MAP137 "},"
		"{\"name\":\"d\"," MAP137 "," MAP1 "},"
		"{\"name\":\"e\"," MAP1 ",\"capacity\":{\"x.io/mem\":{\"value\":\"80Gi\"}}},"
		/* the same maps with a space: equal values, other text */
		"{\"name\":\"f\",\"capacity\": {\"x.io/cores\":{\"value\":\"8\"}},"
		"\"nodeAllocatableResourceMappings\":{\"memory\":{\"capacityKey\":\"x.io/mem\"}, "
		"\"cpu\":{\"allocationMultiplier\":\"500m\"}}},"
		"{\"name\":\"g\"," CAP1 "," MAP1 "}");
	struct arena *a = new_arena(ARENA_CAP), *scratch = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct resource_slice *s;
	const struct device *v;
	uint32_t i;

	(void)state;
	if (decode_text(body, NULL, a, &rq, &err) != 0)
		fail_msg("%s", err.msg);
	s = &rq.object.u.slice;
	assert_int_equal(s->ndevices, 7);
	for (i = 0; i < s->ndevices; i++) {
		check_device_alone(s, i, scratch);
		arena_reset(scratch);
	}
	v = s->devices;
	/* b and g repeat a's text: one decode each */
	assert_ptr_equal(v[1].capacity, v[0].capacity);
	assert_ptr_equal(v[1].mappings, v[0].mappings);
	assert_ptr_equal(v[6].capacity, v[0].capacity);
	assert_ptr_equal(v[6].mappings, v[0].mappings);
	assert_ptr_equal(v[2].capacity, v[0].capacity);
	/* c and d append a second map to a private copy; a's stays as it was */
	assert_ptr_not_equal(v[2].mappings, v[0].mappings);
	assert_ptr_not_equal(v[3].mappings, v[0].mappings);
	assert_int_equal(v[0].nmappings, 2);
	assert_int_equal(v[2].nmappings, 3);
	assert_int_equal(v[3].nmappings, 3);
	assert_int_equal(v[6].nmappings, 2);
	assert_true(eq(v[0].mappings[0].resource, "cpu") && eq(v[0].mappings[1].resource, "memory"));
	/* the capacity raw text is the device's own */
	for (i = 0; i < s->ndevices; i++)
		assert_true(v[i].capacity_raw.len == 0 ||
			    (v[i].capacity_raw.ptr >= v[i].raw.ptr &&
			     v[i].capacity_raw.ptr + v[i].capacity_raw.len <= v[i].raw.ptr + v[i].raw.len));
	arena_free(scratch);
	arena_free(a);
}

/* Forty devices with maps no other has, then forty that repeat one: the
 * memo gives up looking after the first run of misses, and every device
 * still decodes as it does alone. */
static void test_maps_decode_as_alone_when_the_memo_gives_up(void **state)
{
	struct arena *a = new_arena(ARENA_CAP), *scratch = new_arena(ARENA_CAP);
	struct dump b = { NULL, 0, 0 };
	struct admission_request rq;
	struct decode_error err;
	uint32_t i;

	(void)state;
	b.cap = 4096;
	b.p = malloc(b.cap);
	assert_non_null(b.p);
	b.p[0] = '\0';
	dprintf_(&b, "%s%s,\"object\":%s", RV_HEAD, RQ_HEAD, SLICE_HEAD);
	for (i = 0; i < 80; i++)
		dprintf_(&b, "%s{\"name\":\"d%u\",\"capacity\":{\"x.io/mem\":{\"value\":\"%uGi\"}},"
			 "\"nodeAllocatableResourceMappings\":{\"memory\":{\"allocationMultiplier\":\"%uMi\"},"
			 "\"cpu\":{\"capacityKey\":\"x.io/mem\"}}}", i ? "," : "", i, i < 40 ? 100 + i : 7,
			 i < 40 ? 2 * (i + 1) : 8);
	dprintf_(&b, "]}}}}");
	if (decode_text(b.p, NULL, a, &rq, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(rq.object.u.slice.ndevices, 80);
	/* no longer looked for: equal maps decoded each on its own */
	assert_ptr_not_equal(rq.object.u.slice.devices[79].capacity, rq.object.u.slice.devices[78].capacity);
	for (i = 0; i < rq.object.u.slice.ndevices; i++) {
		check_device_alone(&rq.object.u.slice, i, scratch);
		arena_reset(scratch);
	}
	free(b.p);
	arena_free(scratch);
	arena_free(a);
}

/* --- limits -------------------------------------------------------------- */

static char *slice_with_devices(unsigned n)
{
	size_t cap = 256 + (size_t)n * 64;
	char *devs = malloc(cap), *body;
	size_t len = 0;
	unsigned i;

	assert_non_null(devs);
	devs[0] = '\0';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(devs + len, cap - len, "%s{\"name\":\"d%u\"}", i ? "," : "", i);
	assert_true(asprintf(&body, RV_HEAD RQ_HEAD ",\"object\":" SLICE_HEAD "%s]}}}}", devs) > 0);
	free(devs);
	return body;
}

static void test_device_limit(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct decode_limits lim;
	struct admission_request rq;
	struct decode_error err;
	char *body = slice_with_devices(128);

	(void)state;
	decode_limits_default(&lim);
	assert_int_equal(lim.max_devices, 128);
	assert_int_equal(decode_text(body, &lim, a, &rq, &err), 0);
	assert_int_equal(rq.object.u.slice.ndevices, 128);
	assert_str(rq.object.u.slice.devices[127].name, "d127");
	free(body);
	arena_reset(a);

	body = slice_with_devices(131);
	assert_int_equal(decode_text(body, &lim, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices: 131 devices exceed the API limit of 128");
	arena_reset(a);
	lim.max_devices = 2;
	assert_int_equal(decode_text(body, &lim, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices: 131 devices exceed the limit of 2");
	free(body);
	arena_free(a);
}

static void test_map_list_depth_and_memory_limits(void **state)
{
	struct arena *a = new_arena(ARENA_CAP), *tiny = new_arena(64);
	struct decode_limits lim;
	struct admission_request rq;
	struct decode_error err;
	const char *maps = OBJ("{\"nodeAllocatableResourceMappings\":{\"a\":{},\"b\":{},\"c\":{}}}");
	const char *caps = OBJ("{\"capacity\":{\"a\":{},\"b\":{},\"c\":{}}}");
	const char *groups = RV_HEAD RQ_HEAD ",\"userInfo\":{\"groups\":[\"a\",\"b\",\"c\"]}}}";
	const char *deep = RV_HEAD RQ_HEAD ",\"options\":{\"a\":{\"b\":{\"c\":{\"d\":1}}}}}}";
	char *big = slice_with_devices(100);

	(void)state;
	decode_limits_default(&lim);
	lim.max_map_entries = 2;
	lim.max_list = 2;
	assert_int_equal(decode_text(maps, &lim, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices[0].nodeAllocatableResourceMappings.c: "
			    "more than 2 mappings");
	arena_reset(a);
	assert_int_equal(decode_text(caps, &lim, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices[0].capacity.c: more than 2 capacity entries");
	arena_reset(a);
	assert_int_equal(decode_text(groups, &lim, a, &rq, &err), -EBADMSG);
	assert_string_equal(err.msg, "request.userInfo.groups[2]: more than 2 entries");
	arena_reset(a);

	decode_limits_default(&lim);
	lim.max_depth = 5;
	assert_int_equal(decode_text(deep, &lim, a, &rq, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "request.options: nesting deeper than 5 levels"));
	lim.max_depth = 6;
	arena_reset(a);
	assert_int_equal(decode_text(deep, &lim, a, &rq, &err), 0);

	decode_limits_default(&lim);
	assert_int_equal(decode_text(big, &lim, tiny, &rq, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "out of memory for this request"));
	free(big);
	arena_free(tiny);
	arena_free(a);
}

/* --- limits apply to what the guard reads --------------------------------- */

/* A growing text buffer for the big bodies below. */
/* Kubernetes sets no count limit on labels, ConfigMap keys or a user's
 * extras, and nests a claim's opaque parameters as deep as its own JSON
 * decoder allows: none of that may make a review undecodable when no rule
 * reads it. */
static void test_content_no_rule_reads_has_no_count_limit(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	struct buf b;
	const struct str *v;
	uint32_t n;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	/* 300 labels on a slice, the guard's own among them. */
	testutil_buf_add(&b, RV_HEAD RQ_HEAD ",\"object\":{\"metadata\":{\"name\":\"s\",\"labels\":{");
	for (i = 0; i < 300; i++)
		testutil_buf_add(&b, "\"team.example.com/l%d\":\"v%d\",", i, i);
	testutil_buf_add(&b, "\"dra-guard.io/mappings\":\"abc\"}}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	assert_true(rq.object.meta.has_mapping_label);
	assert_str(rq.object.meta.mapping_label, "abc");
	arena_reset(a);

	/* A ConfigMap with 300 keys besides the guard's. */
	buf_reset(&b);
	testutil_buf_add(&b, RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},"
	       "\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{");
	for (i = 0; i < 300; i++)
		testutil_buf_add(&b, "\"key-%d\":\"value %d\",", i, i);
	testutil_buf_add(&b, "\"freeze\":\"true\"}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	assert_true(rq.object.u.config_map.has_freeze);
	assert_false(rq.object.u.config_map.has_policy);
	arena_reset(a);

	/* 300 extra keys and 5000 values under one of them, none read. */
	buf_reset(&b);
	testutil_buf_add(&b, RV_HEAD RQ_HEAD ",\"userInfo\":{\"username\":\"u\",\"extra\":{");
	for (i = 0; i < 300; i++)
		testutil_buf_add(&b, "\"example.com/k%d\":[\"v\"],", i);
	testutil_buf_add(&b, "\"example.com/many\":[");
	for (i = 0; i < 5000; i++)
		testutil_buf_add(&b, "%s\"v%d\"", i ? "," : "", i);
	testutil_buf_add(&b, "],\"" MODEL_EXTRA_NODE_NAME "\":[\"worker-1\"]}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	v = model_user_extra(&rq.user, MODEL_EXTRA_NODE_NAME, &n);
	assert_int_equal(n, 1);
	assert_str(v[0], "worker-1");
	arena_reset(a);

	/* A claim whose opaque driver parameters nest 200 levels deep. */
	buf_reset(&b);
	testutil_buf_add(&b, RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
	       "\"kind\":\"ResourceClaim\"},\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
	       "\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\"},"
	       "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":"
	       "\"gpu.example.com\"}}],\"config\":[{\"opaque\":{\"driver\":\"gpu.example.com\","
	       "\"parameters\":");
	for (i = 0; i < 200; i++)
		testutil_buf_add(&b, "{\"a\":");
	testutil_buf_add(&b, "1");
	for (i = 0; i < 200; i++)
		testutil_buf_add(&b, "}");
	testutil_buf_add(&b, "}}]}}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.u.claim.nrequests, 1);
	assert_str(rq.object.u.claim.requests[0].device_classes[0], "gpu.example.com");
	arena_reset(a);

	/* A Pod with 5000 resourceClaims entries: counted, not kept. */
	buf_reset(&b);
	testutil_buf_add(&b, RV_HEAD "{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	       "\"operation\":\"UPDATE\",\"subResource\":\"status\",\"object\":{\"spec\":{\"resourceClaims\":[");
	for (i = 0; i < 5000; i++)
		testutil_buf_add(&b, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
	testutil_buf_add(&b, "]}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	assert_int_equal(rq.object.u.pod.nresource_claims, 5000);
	buf_free(&b);
	arena_free(a);
}

/* A map of many keys is sorted in n log n, found by binary search, and a
 * key given twice is still refused. */
static void test_large_maps_sort_and_refuse_duplicates(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	struct buf b;
	const struct device *d;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	testutil_buf_add(&b, RV_HEAD RQ_HEAD ",\"object\":" SLICE_HEAD "{\"name\":\"d\",\"capacity\":{");
	for (i = 200; i > 0; i--)
		testutil_buf_add(&b, "%s\"c%03d\":{\"value\":\"%d\"}", i == 200 ? "" : ",", i, i);
	testutil_buf_add(&b, "}}]}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), 0);
	d = &rq.object.u.slice.devices[0];
	assert_int_equal(d->ncapacity, 200);
	assert_str(d->capacity[0].name, "c001");
	assert_str(d->capacity[199].name, "c200");
	assert_str(model_device_capacity(d, STR_LIT("c137"))->value.text, "137");
	assert_null(model_device_capacity(d, STR_LIT("c000")));
	arena_reset(a);

	buf_reset(&b);
	testutil_buf_add(&b, RV_HEAD RQ_HEAD ",\"object\":" SLICE_HEAD "{\"name\":\"d\",\"capacity\":{");
	for (i = 1; i <= 100; i++)
		testutil_buf_add(&b, "\"c%03d\":{},", i);
	testutil_buf_add(&b, "\"c050\":{}}}]}}}}");
	assert_int_equal(decode_text(buf_cstr(&b), NULL, a, &rq, &err), -EPROTO);
	assert_string_equal(err.msg, "request.object.spec.devices[0].capacity: duplicate key \"c050\"");
	assert_true(err.offset < buf_len(&b) && buf_cstr(&b)[err.offset] == '"' && strncmp(buf_cstr(&b) + err.offset, "\"c050\"", 6) == 0);
	buf_free(&b);
	arena_free(a);
}

static void test_capacity_request_policy(void **state)
{
	const char *body = OBJ("{\"name\":\"d\",\"capacity\":{"
			       "\"mem\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"1Gi\","
			       "\"validRange\":{\"min\":\"1Gi\",\"max\":\"16Gi\",\"step\":\"1Gi\"}}},"
			       "\"bw\":{\"value\":\"10G\",\"requestPolicy\":{\"default\":\"1G\","
			       "\"validValues\":[\"1G\",\"5G\",\"10G\"]}},"
			       "\"plain\":{\"value\":\"8\"}}}");
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	const struct device *d;
	const struct device_capacity *c;

	(void)state;
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	d = &rq.object.u.slice.devices[0];
	c = model_device_capacity(d, STR_LIT("mem"));
	assert_non_null(c);
	assert_true(c->policy.present && c->policy.has_range);
	assert_str(c->policy.default_value.text, "1Gi");
	assert_str(c->policy.min.text, "1Gi");
	assert_str(c->policy.max.text, "16Gi");
	assert_str(c->policy.step.text, "1Gi");
	assert_int_equal(c->policy.nvalid_values, 0);
	c = model_device_capacity(d, STR_LIT("bw"));
	assert_true(c->policy.present && !c->policy.has_range);
	assert_int_equal(c->policy.nvalid_values, 3);
	assert_str(c->policy.valid_values[2].text, "10G");
	c = model_device_capacity(d, STR_LIT("plain"));
	assert_false(c->policy.present);
	assert_str(c->value.text, "8");
	arena_free(a);
}

/* What tells an UPDATE that changed only metadata: every other top-level
 * member kept as text, compared byte for byte. */
static void test_only_metadata_changed(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	char *body;

#define UPD(obj, old) review("resource.k8s.io", "v1", "ResourceSlice", "UPDATE", obj, old)
#define SL(meta, spec) "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":" \
	meta ",\"spec\":" spec "}"
	(void)state;
	body = UPD(SL("{\"name\":\"s\",\"labels\":{\"a\":\"1\"}}", "{\"driver\":\"d\"}"),
		   SL("{\"name\":\"s\",\"ownerReferences\":[{\"kind\":\"Node\"}]}", "{\"driver\":\"d\"}"));
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_true(rq.object.members_complete && rq.old_object.members_complete);
	assert_int_equal(rq.object.nmembers, 3);
	assert_str(rq.object.members[2].key, "spec");
	assert_str(rq.object.members[2].value, "{\"driver\":\"d\"}");
	assert_true(model_only_metadata_changed(&rq.object, &rq.old_object));
	free(body);
	arena_reset(a);

	body = UPD(SL("{\"name\":\"s\"}", "{\"driver\":\"d\",\"nodeName\":\"n2\"}"),
		   SL("{\"name\":\"s\"}", "{\"driver\":\"d\",\"nodeName\":\"n1\"}"));
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_false(model_only_metadata_changed(&rq.object, &rq.old_object));
	free(body);
	arena_reset(a);

	/* A member no rule reads counts too (it is not metadata). */
	body = UPD("{\"kind\":\"ResourceSlice\",\"metadata\":{},\"spec\":{},\"extra\":1}",
		   "{\"kind\":\"ResourceSlice\",\"metadata\":{},\"spec\":{},\"extra\":2}");
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_false(model_only_metadata_changed(&rq.object, &rq.old_object));
	free(body);
	arena_reset(a);

	/* The same members in another order: not provably the same. */
	body = UPD("{\"kind\":\"ResourceSlice\",\"spec\":{},\"apiVersion\":\"resource.k8s.io/v1\"}",
		   "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"spec\":{}}");
	assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
	assert_false(model_only_metadata_changed(&rq.object, &rq.old_object));
	free(body);
	arena_reset(a);

	/* Past MODEL_OBJECT_MEMBERS_MAX members nothing is assumed. */
	{
		struct buf b;
		int i;

		buf_init(&b, 64u << 20);
		testutil_buf_add(&b, "{\"kind\":\"ResourceSlice\",\"metadata\":{}");
		for (i = 0; i < MODEL_OBJECT_MEMBERS_MAX + 1; i++)
			testutil_buf_add(&b, ",\"m%d\":%d", i, i);
		testutil_buf_add(&b, "}");
		body = UPD(buf_cstr(&b), buf_cstr(&b));
		assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
		assert_false(rq.object.members_complete);
		assert_false(model_only_metadata_changed(&rq.object, &rq.old_object));
		free(body);
		buf_free(&b);
	}
#undef UPD
#undef SL
	arena_free(a);
}

/* The uid of a review the full decoder refused, so the refusal can be
 * answered inside a review. */
static void test_review_uid_of_a_refused_review(void **state)
{
	struct arena *a = new_arena(ARENA_CAP);
	struct str uid;
	struct buf b;
	int i;
	static const struct {
		const char *body;
		int rc;
		const char *uid;
	} rows[] = {
		{ RV_HEAD "{\"uid\":\"u-1\",\"operation\":\"PATCH\"}}", 0, "u-1" },
		{ "{\"request\":{\"userInfo\":{\"groups\":7},\"uid\":\"u\\u002d2\"},\"kind\":\"AdmissionReview\","
		  "\"apiVersion\":\"admission.k8s.io/v1\"}", 0, "u-2" },
		{ RV_HEAD "{\"operation\":\"CREATE\"}}", -EBADMSG, NULL },
		{ RV_HEAD "{\"uid\":\"\"}}", -EBADMSG, NULL },
		{ RV_HEAD "{\"uid\":7}}", -EBADMSG, NULL },
		{ "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
		  -EBADMSG, NULL },
		{ RV_HEAD "{\"uid\":\"u\"}", -EBADMSG, NULL },
		{ "not json", -EBADMSG, NULL },
	};
	size_t k;

	(void)state;
	buf_init(&b, 64u << 20);
	for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		int rc = decode_review_uid(rows[k].body, strlen(rows[k].body), a, &uid);

		if (rc != rows[k].rc)
			fail_msg("row %zu: %d, want %d", k, rc, rows[k].rc);
		if (rows[k].uid)
			assert_str(uid, rows[k].uid);
		arena_reset(a);
	}
	/* As deep as the API server can send: 10000 levels in the object. */
	testutil_buf_add(&b, RV_HEAD "{\"uid\":\"deep\",\"object\":");
	for (i = 0; i < 10000; i++)
		testutil_buf_add(&b, "[");
	for (i = 0; i < 10000; i++)
		testutil_buf_add(&b, "]");
	testutil_buf_add(&b, "}}");
	assert_int_equal(decode_review_uid(buf_cstr(&b), buf_len(&b), a, &uid), 0);
	assert_str(uid, "deep");
	buf_free(&b);
	arena_free(a);
}

/* The decoder's inline comparison of member names and quantities answers as
 * memcmp does, at every length it takes its different paths for and with
 * the difference at every position (the first and last bytes of a word
 * included), on unaligned text. */
static void test_same_bytes_agrees_with_memcmp(void **state)
{
	char a[64], b[64];
	size_t len, at, off;

	(void)state;
	for (off = 0; off < 8; off++) {
		for (len = 0; len <= 40; len++) {
			for (at = 0; at < len; at++) {
				memset(a, 'k', sizeof(a));
				memset(b, 'k', sizeof(b));
				assert_true(decode_same_bytes(a + off, b + 3, len));
				b[3 + at] = 'K';
				assert_false(decode_same_bytes(a + off, b + 3, len));
				assert_int_not_equal(memcmp(a + off, b + 3, len), 0);
				/* A difference just past the end is not seen. */
				b[3 + at] = 'k';
				b[3 + len] = 'x';
				assert_true(decode_same_bytes(a + off, b + 3, len));
			}
		}
	}
	assert_true(decode_same_bytes("", "x", 0));
}

/* Every quantity decodes to what quantity_parse() makes of its own text,
 * whichever texts came before it: more distinct texts than the decoder's
 * cache has slots, invalid ones among them (their error is cached too),
 * texts that share a length and first and last bytes, in one order and
 * then the reverse. */
static void test_quantities_decode_as_parsed_whatever_came_before(void **state)
{
	static const char *const texts[] = {
		"1", "2", "4", "8", "16", "32", "64", "96", "128", "500m", "250m", "1Gi", "2Gi", "4Gi", "8Gi",
		"16Gi", "40Gi", "80Gi", "96Gi", "141Gi", "512Mi", "1Mi", "1Ki", "1k", "1M", "1G", "1e3", "1E3",
		"0", "-1", "1.5", "1.25Gi", "12345678901", "12345678902", "19999999991", "1x", "Gi", "1.5.5",
		"--1", "1Gi ", "100000000000000000000", "0.000000001", "7Ti", "3Pi",
	};
	const size_t nt = sizeof(texts) / sizeof(texts[0]), ndev = 2 * nt;
	struct arena *a = new_arena(ARENA_CAP);
	struct admission_request rq;
	struct decode_error err;
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b, 1 << 20);
	assert_int_equal(buf_add_cstr(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
				      "\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"x.example.com\","
				      "\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":1,"
				      "\"resourceSliceCount\":1},\"devices\":["), 0);
	for (i = 0; i < ndev; i++) {
		const char *t = texts[i < nt ? i : ndev - 1 - i];

		assert_int_equal(buf_printf(&b, "%s{\"name\":\"d%zu\",\"capacity\":{\"x.example.com/c\":"
					    "{\"value\":\"%s\"}}}", i ? "," : "", i, t), 0);
	}
	assert_int_equal(buf_add_cstr(&b, "]}}"), 0);
	{
		char *body = review_of(buf_cstr(&b), buf_len(&b));
		const struct resource_slice *sl;

		assert_int_equal(decode_text(body, NULL, a, &rq, &err), 0);
		sl = &rq.object.u.slice;
		assert_int_equal(sl->ndevices, ndev);
		for (i = 0; i < ndev; i++) {
			const char *t = texts[i < nt ? i : ndev - 1 - i];
			const struct quantity_field *q = &sl->devices[i].capacity[0].value;
			struct quantity want;
			int want_err = quantity_parse(t, strlen(t), &want);

			assert_str(q->text, t);
			assert_int_equal(q->err, want_err);
			if (!want_err)
				assert_int_equal(quantity_cmp(&q->value, &want), 0);
		}
		free(body);
	}
	buf_free(&b);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slice_fixture_decodes_devices_and_mappings),
		cmocka_unit_test(test_same_bytes_agrees_with_memcmp),
		cmocka_unit_test(test_quantities_decode_as_parsed_whatever_came_before),
		cmocka_unit_test(test_content_no_rule_reads_has_no_count_limit),
		cmocka_unit_test(test_large_maps_sort_and_refuse_duplicates),
		cmocka_unit_test(test_capacity_request_policy),
		cmocka_unit_test(test_only_metadata_changed),
		cmocka_unit_test(test_review_uid_of_a_refused_review),
		cmocka_unit_test(test_claim_fixture_decodes_allocation_and_status),
		cmocka_unit_test(test_pod_fixture_decodes_claim_statuses),
		cmocka_unit_test(test_every_fixture_decodes_or_says_why),
		cmocka_unit_test(test_full_reviews_with_a_bad_operation_say_why),
		cmocka_unit_test(test_captured_requests_decode_in_a_review),
		cmocka_unit_test(test_v1beta1_basic_layout_decodes_like_v1),
		cmocka_unit_test(test_claim_device_class_per_version),
		cmocka_unit_test(test_pod_with_every_section_decodes),
		cmocka_unit_test(test_design_draft_slices_bare_capacity_and_unknown_fields),
		cmocka_unit_test(test_retired_claim_versions_are_refused_by_name),
		cmocka_unit_test(test_malformed_reviews_fail_with_path_and_code),
		cmocka_unit_test(test_error_offset_points_at_the_value),
		cmocka_unit_test(test_quantities_as_strings_numbers_and_bad_text),
		cmocka_unit_test(test_kubernetes_137_shape_and_unknown_members),
		cmocka_unit_test(test_metadata_labels_and_deletion),
		cmocka_unit_test(test_user_info_groups_and_extra),
		cmocka_unit_test(test_config_map_data),
		cmocka_unit_test(test_claim_node_local_selector),
		cmocka_unit_test(test_null_allocation_is_not_allocated),
		cmocka_unit_test(test_other_kinds_are_skipped),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_member_order_does_not_change_the_result),
		cmocka_unit_test(test_bare_object_kind_after_spec),
		cmocka_unit_test(test_bare_object_errors),
		cmocka_unit_test(test_identical_old_devices_are_taken_from_object),
		cmocka_unit_test(test_shortcut_edge_cases_match_a_full_decode),
		cmocka_unit_test(test_old_object_before_object_uses_no_stale_reference),
		cmocka_unit_test(test_repeated_maps_are_shared_and_decode_as_alone),
		cmocka_unit_test(test_maps_decode_as_alone_when_the_memo_gives_up),
		cmocka_unit_test(test_device_limit),
		cmocka_unit_test(test_object_as_prefix_reads_the_first_object_only),
		cmocka_unit_test(test_map_list_depth_and_memory_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
