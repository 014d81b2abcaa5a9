/* test_manifest.c - Kubernetes objects out of manifest files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "testutil.h"

static struct manifest_set *new_set(void)
{
	struct manifest_set *s = NULL;

	assert_int_equal(manifest_set_new(NULL, &s), 0);
	return s;
}

static void add(struct manifest_set *s, const char *file, const char *text)
{
	assert_int_equal(manifest_set_add(s, file, text, strlen(text)), 0);
}

static void assert_str(struct str s, const char *want)
{
	if (!str_eq_cstr(s, want)) {
		print_error("\"%.*s\" != \"%s\"\n", STR_FMT(s), want);
		fail();
	}
}

static struct manifest_id id_of(const char *group, const char *kind, const char *ns, const char *name)
{
	struct manifest_id id;

	memset(&id, 0, sizeof(id));
	id.group = str_from_cstr(group);
	id.version = STR_LIT("v1");
	id.kind = str_from_cstr(kind);
	id.namespace = str_from_cstr(ns);
	id.name = str_from_cstr(name);
	return id;
}

static void test_documents_and_lists_become_entries(void **state)
{
	static const char text[] =
		"apiVersion: resource.k8s.io/v1\n"          /* 1 */
		"kind: ResourceSlice\n"
		"metadata: {name: a}\n"
		"---\n"                                     /* 4: empty */
		"---\n"                                     /* 5 */
		"apiVersion: v1\n"
		"kind: List\n"
		"items:\n"
		"- apiVersion: resource.k8s.io/v1beta2\n"   /* 9 */
		"  kind: ResourceSlice\n"
		"  metadata: {name: b}\n"
		"- apiVersion: apps/v1\n"                   /* 12 */
		"  kind: Deployment\n"
		"  metadata: {name: c, namespace: ops}\n";
	struct manifest_set *s = new_set();
	const struct manifest_entry *e;

	(void)state;
	add(s, "in.yaml", text);
	assert_int_equal(manifest_set_count(s), 3);
	e = manifest_set_entry(s, 0);
	assert_string_equal(e->file, "in.yaml");
	assert_int_equal(e->doc, 0);
	assert_int_equal(e->item, MANIFEST_NO_ITEM);
	assert_int_equal(e->line, 1);
	assert_null(e->error);
	assert_str(e->id.group, "resource.k8s.io");
	assert_str(e->id.version, "v1");
	assert_str(e->id.kind, "ResourceSlice");
	assert_str(e->id.namespace, "");
	assert_str(e->id.name, "a");
	e = manifest_set_entry(s, 1);
	assert_int_equal(e->doc, 2);
	assert_int_equal(e->item, 0);
	assert_int_equal(e->line, 9);
	assert_int_equal(e->col, 3);
	assert_str(e->id.version, "v1beta2");
	e = manifest_set_entry(s, 2);
	assert_int_equal(e->item, 1);
	assert_str(e->id.group, "apps");
	assert_str(e->id.namespace, "ops");
	assert_false(e->namespace_defaulted);
	manifest_set_free(s);
}

static void test_a_broken_document_is_an_entry_and_hides_nothing(void **state)
{
	/* A file of three documents whose first is broken: three entries. */
	static const char text[] =
		"apiVersion: resource.k8s.io/v1\n"
		"kind: ResourceSlice\n"
		"metadata:\n"
		"  name: broken\n"
		"spec: {pool: {name: p, generation: 1}\n"   /* 5: unclosed */
		"---\n"
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
		"---\n"
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
	struct manifest_set *s = new_set();
	const struct manifest_entry *e;

	(void)state;
	add(s, "three.yaml", text);
	assert_int_equal(manifest_set_count(s), 3);
	e = manifest_set_entry(s, 0);
	assert_non_null(e->error);
	assert_null(e->node);
	assert_int_equal(e->doc, 0);
	assert_int_equal(e->line, 6);
	assert_str(e->id.kind, "ResourceSlice");
	assert_str(e->id.name, "broken");
	assert_null(manifest_set_entry(s, 1)->error);
	assert_str(manifest_set_entry(s, 1)->id.name, "b");
	assert_int_equal(manifest_set_entry(s, 2)->doc, 2);
	assert_str(manifest_set_entry(s, 2)->id.name, "c");
	manifest_set_free(s);
}

static void test_what_is_not_an_object_is_an_error_entry(void **state)
{
	static const char text[] =
		"just a string\n"
		"---\n"
		"- a\n- b\n"
		"---\n"
		"apiVersion: v1\nkind: List\nitems:\n- 42\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n";
	struct manifest_set *s = new_set();

	(void)state;
	add(s, "odd.yaml", text);
	assert_int_equal(manifest_set_count(s), 4);
	assert_non_null(strstr(manifest_set_entry(s, 0)->error, "got a string"));
	assert_non_null(strstr(manifest_set_entry(s, 1)->error, "got a sequence"));
	assert_int_equal(manifest_set_entry(s, 1)->line, 3);
	assert_non_null(strstr(manifest_set_entry(s, 2)->error, "got a number"));
	assert_int_equal(manifest_set_entry(s, 2)->item, 0);
	assert_null(manifest_set_entry(s, 3)->error);
	assert_non_null(manifest_set_add_error(s, "gone.yaml", "No such file or directory") == 0 ? s : NULL);
	assert_string_equal(manifest_set_entry(s, 4)->file, "gone.yaml");
	assert_string_equal(manifest_set_entry(s, 4)->error, "No such file or directory");
	manifest_set_free(s);
}

static void test_namespaced_kinds_get_the_default_namespace(void **state)
{
	static const char text[] =
		"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
		"---\n"
		"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
		"---\n"
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\n"
		"---\n"
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";
	struct manifest_options opt;
	struct manifest_set *s = NULL;

	(void)state;
	manifest_options_default(&opt);
	opt.default_namespace = "ci";
	assert_int_equal(manifest_set_new(&opt, &s), 0);
	add(s, "ns.yaml", text);
	assert_str(manifest_set_entry(s, 0)->id.namespace, "ci");
	assert_true(manifest_set_entry(s, 0)->namespace_defaulted);
	assert_str(manifest_set_entry(s, 1)->id.namespace, "");
	assert_str(manifest_set_entry(s, 2)->id.namespace, "team");
	assert_false(manifest_set_entry(s, 2)->namespace_defaulted);
	/* A kind it does not know keeps what it says. */
	assert_str(manifest_set_entry(s, 3)->id.namespace, "");
	manifest_set_free(s);
}

static void test_find_pairs_only_namesakes(void **state)
{
	static const char text[] =
		"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: a}\n"
		"---\n"
		"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: b}\n"
		"---\n"
		"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a, namespace: x}\n"
		"---\n"
		"apiVersion: example.com/v1\nkind: ResourceSlice\nmetadata: {name: a}\n"
		"---\n"
		"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {generateName: a-}\n";
	struct manifest_set *s = new_set();
	const struct manifest_entry *e, *second;
	struct manifest_id id;
	int rc;

	(void)state;
	add(s, "stored.yaml", text);
	/* Same group, kind, namespace and name; the version does not matter. */
	id = id_of("resource.k8s.io", "ResourceSlice", "", "a");
	id.version = STR_LIT("v1beta1");
	e = manifest_set_find(s, &id, &second, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(e);
	assert_int_equal(e->doc, 0);
	assert_null(second);
	id = id_of("resource.k8s.io", "ResourceSlice", "", "b");
	assert_int_equal(manifest_set_find(s, &id, NULL, &rc)->doc, 1);
	id = id_of("example.com", "ResourceSlice", "", "a");
	assert_int_equal(manifest_set_find(s, &id, NULL, &rc)->doc, 3);
	id = id_of("resource.k8s.io", "ResourceClaim", "x", "a");
	assert_int_equal(manifest_set_find(s, &id, NULL, &rc)->doc, 2);
	/* Anything else is no namesake: never an unrelated object. */
	id = id_of("resource.k8s.io", "ResourceClaim", "y", "a");
	assert_null(manifest_set_find(s, &id, NULL, &rc));
	id = id_of("resource.k8s.io", "ResourceSlice", "", "c");
	assert_null(manifest_set_find(s, &id, NULL, &rc));
	id = id_of("resource.k8s.io", "ResourceSlice", "", "");
	assert_null(manifest_set_find(s, &id, NULL, &rc));
	/* Two stored objects of one identity: the second is reported. */
	add(s, "more.yaml", "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: b}\n");
	id = id_of("resource.k8s.io", "ResourceSlice", "", "b");
	e = manifest_set_find(s, &id, &second, &rc);
	assert_non_null(e);
	assert_non_null(second);
	assert_string_equal(e->file, "stored.yaml");
	assert_string_equal(second->file, "more.yaml");
	manifest_set_free(s);
}

static void test_kubectl_list_dump(void **state)
{
	size_t len = 0, i;
	char *text = testutil_read_file(testutil_repo_path("tests/fixtures/kubectl-get-resourceslices.yaml"), &len);
	struct manifest_set *s = new_set();
	struct manifest_id id;
	int rc;

	(void)state;
	assert_non_null(text);
	assert_int_equal(manifest_set_add(s, "dump.yaml", text, len), 0);
	free(text);
	assert_int_equal(manifest_set_count(s), 4);
	for (i = 0; i < 4; i++) {
		assert_null(manifest_set_entry(s, i)->error);
		assert_int_equal(manifest_set_entry(s, i)->item, i);
		assert_str(manifest_set_entry(s, i)->id.kind, "ResourceSlice");
	}
	id = id_of("resource.k8s.io", "ResourceSlice", "", "worker-3-dra.example.com-m2x9p");
	assert_int_equal(manifest_set_find(s, &id, NULL, &rc)->item, 3);
	manifest_set_free(s);
}

static void test_entries_are_capped(void **state)
{
	const char *text;
	struct manifest_options opt;
	struct manifest_set *s = NULL;

	(void)state;
	manifest_options_default(&opt);
	opt.max_entries = 2;
	assert_int_equal(manifest_set_new(&opt, &s), 0);
	text = "kind: A\n---\nkind: B\n---\nkind: C\n---\nkind: D\n";
	assert_int_equal(manifest_set_add(s, "a", text, strlen(text)), -E2BIG);
	/* Two objects and one entry that says the rest was not read. */
	assert_int_equal(manifest_set_count(s), 3);
	assert_non_null(strstr(manifest_set_entry(s, 2)->error, "more than 2 objects"));
	assert_int_equal(manifest_set_add(s, "b", "kind: E\n", 8), -E2BIG);
	assert_int_equal(manifest_set_add_error(s, "c", "x"), -E2BIG);
	assert_int_equal(manifest_set_count(s), 3);
	manifest_set_free(s);
}

static void test_a_text_over_the_limits_is_one_error_entry(void **state)
{
	struct manifest_options opt;
	struct manifest_set *s = NULL;

	(void)state;
	manifest_options_default(&opt);
	opt.doc.max_bytes = 8;
	assert_int_equal(manifest_set_new(&opt, &s), 0);
	add(s, "big.yaml", "kind: ConfigMap\n");
	assert_int_equal(manifest_set_count(s), 1);
	assert_non_null(strstr(manifest_set_entry(s, 0)->error, "more than the limit"));
	manifest_set_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documents_and_lists_become_entries),
		cmocka_unit_test(test_a_broken_document_is_an_entry_and_hides_nothing),
		cmocka_unit_test(test_what_is_not_an_object_is_an_error_entry),
		cmocka_unit_test(test_namespaced_kinds_get_the_default_namespace),
		cmocka_unit_test(test_find_pairs_only_namesakes),
		cmocka_unit_test(test_kubectl_list_dump),
		cmocka_unit_test(test_entries_are_capped),
		cmocka_unit_test(test_a_text_over_the_limits_is_one_error_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
