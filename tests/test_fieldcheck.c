/* test_fieldcheck.c - unknown fields of the guarded kinds, the close names
 * suggested for them and the path of a key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "doc.h"
#include "fieldcheck.h"

struct field_case {
	const char *what;
	const char *yaml;
	size_t want;                 /* unknown fields */
	const char *path;            /* of the first, or NULL */
	const char *suggestion;      /* of the first */
	uint32_t line, col;          /* of the first */
};

static const struct field_case field_cases[] = {
	{ "a slice with every field the rules read",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s, labels: {a: b}}\n"
	  "spec:\n  driver: d\n  nodeName: n\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
	  "  devices:\n  - name: a\n    allowMultipleAllocations: true\n"
	  "    attributes: {dra.example.com/model: {string: x}}\n"
	  "    capacity: {dra.example.com/cpu: {value: '4', requestPolicy: {default: '1', validRange: {min: '1'}}}}\n"
	  "    nodeAllocatableResourceMappings: {cpu: {capacityKey: dra.example.com/cpu, allocationMultiplier: '1'}}\n",
	  0, NULL, NULL, 0, 0 },
	{ "the mappings misspelt",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  devices:\n  - name: a\n"
	  "    nodeAllocatableResourceMapping: {cpu: {allocationMultiplier: '1'}}\n",
	  1, "spec.devices[0].nodeAllocatableResourceMapping", "nodeAllocatableResourceMappings", 6, 5 },
	{ "a misspelt field inside a mapping",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  devices:\n  - name: a\n"
	  "    nodeAllocatableResourceMappings: {memory: {allocationMultipler: 8Gi}}\n",
	  1, "spec.devices[0].nodeAllocatableResourceMappings.memory.allocationMultipler", "allocationMultiplier", 6,
	  48 },
	{ "1.37's name on a 1.36 object",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  devices:\n  - name: a\n"
	  "    nodeAllocatableResources: {cpu: {mapping: {deviceMultiplier: '1'}}}\n",
	  1, "spec.devices[0].nodeAllocatableResources", "nodeAllocatableResourceMappings", 6, 5 },
	{ "a map key with dots is quoted",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  devices:\n  - name: a\n"
	  "    attributes: {dra.example.com/model: {strin: x}}\n",
	  1, "spec.devices[0].attributes[\"dra.example.com/model\"].strin", "string", 6, 42 },
	{ "case matters to the API server, and is suggested",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  NodeName: n\n",
	  1, "spec.NodeName", "nodeName", 4, 3 },
	{ "a field far from any: no suggestion",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  color: blue\n",
	  1, "spec.color", "", 4, 3 },
	{ "metadata is ObjectMeta",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s, lables: {a: b}}\n",
	  1, "metadata.lables", "labels", 3, 21 },
	{ "a v1beta1 claim shape under v1",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nspec:\n  devices:\n    requests:\n"
	  "    - name: r\n      deviceClassName: c\n",
	  1, "spec.devices.requests[0].deviceClassName", "", 7, 7 },
	{ "a claim's status",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nstatus:\n  allocation:\n    devices:\n"
	  "      results:\n      - {request: r, driver: d, pool: p, device: x, consumedCapacity: {a: '1'}, shareId: u}\n",
	  1, "status.allocation.devices.results[0].shareId", "shareID", 7, 81 },
	{ "opaque parameters hold anything",
	  "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nspec:\n  devices:\n    config:\n"
	  "    - opaque: {driver: d, parameters: {whatever: {deep: 1}}}\n",
	  0, NULL, NULL, 0, 0 },
	{ "a Pod's spec is not checked, its node allocatable statuses are",
	  "apiVersion: v1\nkind: Pod\nspec: {anything: 1}\nstatus:\n  nodeAllocatableResourceClaimStatuses:\n"
	  "  - {resourceClaimName: c, resource: {cpu: '1'}}\n",
	  1, "status.nodeAllocatableResourceClaimStatuses[0].resource", "resources", 6, 28 },
	{ "v1beta2 is not in the table",
	  "apiVersion: resource.k8s.io/v1beta2\nkind: ResourceSlice\nspec: {color: blue}\n", 0, NULL, NULL, 0, 0 },
	{ "two unknown fields, both counted",
	  "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\ndatas: {}\nimmutible: true\n",
	  2, "datas", "data", 4, 1 },
};

static void test_unknown_fields(void **state)
{
	struct fieldcheck_finding out[4];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(field_cases) / sizeof(field_cases[0]); i++) {
		const struct field_case *c = &field_cases[i];
		struct doc_set *set = NULL;
		struct doc_error err;

		if (doc_parse_yaml(c->yaml, strlen(c->yaml), NULL, &set, &err) != 0)
			fail_msg("%s: does not parse: %s", c->what, err.msg);
		n = fieldcheck_object(doc_set_root(set, 0), out, 4);
		if (n != c->want)
			fail_msg("%s: %zu unknown fields, expected %zu", c->what, n, c->want);
		if (c->path && (strcmp(out[0].path, c->path) != 0 || strcmp(out[0].suggestion, c->suggestion) != 0 ||
				out[0].line != c->line || out[0].col != c->col))
			fail_msg("%s: %s (did you mean \"%s\"?) at %u:%u, expected %s (\"%s\") at %u:%u", c->what,
				 out[0].path, out[0].suggestion, out[0].line, out[0].col, c->path, c->suggestion, c->line,
				 c->col);
		doc_set_free(set);
	}
}

static void test_only_max_are_written(void **state)
{
	static const char yaml[] = "apiVersion: v1\nkind: ConfigMap\na: 1\nb: 2\nc: 3\n";
	struct fieldcheck_finding out[2];
	struct doc_set *set = NULL;

	(void)state;
	assert_int_equal(doc_parse_yaml(yaml, sizeof(yaml) - 1, NULL, &set, NULL), 0);
	memset(out, 0, sizeof(out));
	assert_int_equal(fieldcheck_object(doc_set_root(set, 0), out, 1), 3);
	assert_string_equal(out[0].path, "a");
	assert_string_equal(out[1].path, "");
	doc_set_free(set);
}

static void test_closest(void **state)
{
	static const char *const kinds[] = { "ResourceSlice", "ResourceClaim" };
	static const char *const core[] = { "Pod", "ConfigMap" };
	static const struct {
		const char *name;
		const char *const *names;
		size_t n;
		const char *want;
	} cases[] = {
		{ "ResourceSlise", kinds, 2, "ResourceSlice" },
		{ "resourceslice", kinds, 2, "ResourceSlice" },
		{ "ResourceClaims", kinds, 2, "ResourceClaim" },
		{ "ResourceClaimTemplate", kinds, 2, NULL },
		{ "DeviceClass", kinds, 2, NULL },
		{ "Node", core, 2, NULL },           /* 2 edits from Pod: too far for a short name */
		{ "Pods", core, 2, "Pod" },
		{ "", core, 2, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = fieldcheck_closest(cases[i].name, strlen(cases[i].name), cases[i].names, cases[i].n);

		if ((got == NULL) != (cases[i].want == NULL) || (got && strcmp(got, cases[i].want) != 0))
			fail_msg("\"%s\": %s, expected %s", cases[i].name, got ? got : "none",
				 cases[i].want ? cases[i].want : "none");
	}
}

static void test_path_at(void **state)
{
	static const char yaml[] = "spec:\n  devices:\n  - name: a\n    attributes:\n      x.io/m: {int: 1}\n";
	struct doc_set *set = NULL;
	char buf[128];

	(void)state;
	assert_int_equal(doc_parse_yaml(yaml, sizeof(yaml) - 1, NULL, &set, NULL), 0);
	assert_true(fieldcheck_path_at(doc_set_root(set, 0), 3, 5, buf, sizeof(buf)));
	assert_string_equal(buf, "spec.devices[0].name");
	assert_true(fieldcheck_path_at(doc_set_root(set, 0), 5, 16, buf, sizeof(buf)));
	assert_string_equal(buf, "spec.devices[0].attributes[\"x.io/m\"].int");
	assert_false(fieldcheck_path_at(doc_set_root(set, 0), 3, 6, buf, sizeof(buf)));
	assert_false(fieldcheck_path_at(NULL, 1, 1, buf, sizeof(buf)));
	doc_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_only_max_are_written),
		cmocka_unit_test(test_closest),
		cmocka_unit_test(test_path_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
