/* test_names.c - node resource names, ServiceAccounts, driver names, kubelets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "names.h"

struct resource_case {
	const char *name;
	enum node_resource want;
};

static void test_node_resource_names(void **state)
{
	static const struct resource_case cases[] = {
		{ "cpu", NODE_RESOURCE_CPU }, { "memory", NODE_RESOURCE_MEMORY },
		{ "ephemeral-storage", NODE_RESOURCE_EPHEMERAL_STORAGE },
		{ "hugepages-2Mi", NODE_RESOURCE_HUGEPAGES }, { "hugepages-1Gi", NODE_RESOURCE_HUGEPAGES },
		{ "hugepages-2097152", NODE_RESOURCE_HUGEPAGES },
		{ "pods", NODE_RESOURCE_INVALID }, { "foo", NODE_RESOURCE_INVALID }, { "", NODE_RESOURCE_INVALID },
		{ "CPU", NODE_RESOURCE_INVALID }, { "hugepages-", NODE_RESOURCE_INVALID },
		{ "hugepages-0", NODE_RESOURCE_INVALID }, { "hugepages--2Mi", NODE_RESOURCE_INVALID },
		{ "hugepages-1.5", NODE_RESOURCE_INVALID }, { "hugepages-2Mi ", NODE_RESOURCE_INVALID },
		{ "hugepages- 2Mi", NODE_RESOURCE_INVALID }, { "hugepages-lots", NODE_RESOURCE_INVALID },
		{ "nvidia.com/gpu", NODE_RESOURCE_INVALID }, { "memory ", NODE_RESOURCE_INVALID },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum node_resource got = names_node_resource(str_from_cstr(cases[i].name), NULL);

		if (got != cases[i].want)
			fail_msg("\"%s\": %d, expected %d", cases[i].name, got, cases[i].want);
	}
}

static void test_hugepage_size_is_returned(void **state)
{
	struct quantity page, want;

	(void)state;
	quantity_from_int(0, &page);   /* the compiler cannot see the assert stop */
	assert_int_equal(names_node_resource(STR_LIT("hugepages-2Mi"), &page), NODE_RESOURCE_HUGEPAGES);
	assert_int_equal(quantity_parse("2097152", 7, &want), 0);
	assert_int_equal(quantity_cmp(&page, &want), 0);
}

struct bool_case {
	const char *s;
	bool want;
};

static void test_serviceaccount_names(void **state)
{
	static const struct bool_case cases[] = {
		{ "system:serviceaccount:gpu-driver:kubelet-plugin", true },
		{ "system:serviceaccount:a:b.c", true },
		{ "system:serviceaccount:gpu-driver", false }, { "system:serviceaccount::x", false },
		{ "system:serviceaccount:x:", false }, { "system:serviceaccount:X:y", false },
		{ "system:serviceaccount:a:b:c", false }, { "gpu-driver", false },
		{ "system:node:worker-1", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (names_is_serviceaccount(str_from_cstr(cases[i].s)) != cases[i].want)
			fail_msg("\"%s\": expected %d", cases[i].s, cases[i].want);
}

static void test_driver_names(void **state)
{
	static const struct bool_case cases[] = {
		{ "gpu.example.com", true }, { "dra.example.com", true }, { "a", true },
		{ "GPU.example.com", false }, { "-gpu.example.com", false }, { "gpu..example.com", false },
		{ "gpu.example.com.", false }, { "gpu_example.com", false }, { "", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (names_is_dns_subdomain(str_from_cstr(cases[i].s)) != cases[i].want)
			fail_msg("\"%s\": expected %d", cases[i].s, cases[i].want);
}

static void test_kubelet_names(void **state)
{
	struct str node;

	(void)state;
	assert_true(names_kubelet_node(STR_LIT("system:node:worker-1"), &node));
	assert_true(str_eq_cstr(node, "worker-1"));
	assert_false(names_kubelet_node(STR_LIT("system:node:"), &node));
	assert_false(names_kubelet_node(STR_LIT("system:nodes"), &node));
	assert_false(names_kubelet_node(STR_LIT("alice"), &node));
}

static void test_api_version_split(void **state)
{
	static const char *const cases[][3] = {
		{ "resource.k8s.io/v1", "resource.k8s.io", "v1" },
		{ "admission.k8s.io/v1beta1", "admission.k8s.io", "v1beta1" },
		{ "v1", "", "v1" },
		{ "", "", "" },
		{ "/v1", "", "v1" },
		{ "a/", "a", "" },
		{ "a/b/c", "a", "b/c" },
	};
	struct str g, v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		names_split_api_version(str_from_cstr(cases[i][0]), &g, &v);
		if (!str_eq_cstr(g, cases[i][1]) || !str_eq_cstr(v, cases[i][2]))
			fail_msg("\"%s\": group \"%.*s\", version \"%.*s\"", cases[i][0], (int)g.len, g.ptr,
				 (int)v.len, v.ptr);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_resource_names),
		cmocka_unit_test(test_hugepage_size_is_returned),
		cmocka_unit_test(test_serviceaccount_names),
		cmocka_unit_test(test_driver_names),
		cmocka_unit_test(test_kubelet_names),
		cmocka_unit_test(test_api_version_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
