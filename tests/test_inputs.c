/* test_inputs.c - manifest inputs: files, directories, stdin. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputs.h"
#include "testutil.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return testutil_tmpdir(dir, sizeof(dir), "inputs");
}

static int teardown(void **state)
{
	(void)state;
	testutil_run("rm -rf %s", dir);
	return 0;
}

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static struct manifest_set *new_set(void)
{
	struct manifest_set *s = NULL;

	assert_int_equal(manifest_set_new(NULL, &s), 0);
	return s;
}

static void test_directory_reads_manifests_in_name_order(void **state)
{
	struct manifest_set *s = new_set();
	char want[PATH_MAX + 64];

	(void)state;
	testutil_run("rm -rf %s/*", dir);
	write_file("b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n");
	write_file("a.json", "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}}");
	write_file("c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\n---\n"
			     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2}\n");
	write_file(".hidden.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden}\n");
	write_file("notes.txt", "not a manifest\n");
	testutil_run("mkdir %s/sub.yaml && echo 'kind: Nested' > %s/sub.yaml/x.yaml", dir, dir);
	assert_int_equal(inputs_read(s, dir, 1 << 20), 0);
	assert_int_equal(manifest_set_count(s), 4);
	assert_true(str_eq_cstr(manifest_set_entry(s, 0)->id.name, "a"));
	assert_true(str_eq_cstr(manifest_set_entry(s, 1)->id.name, "b"));
	assert_true(str_eq_cstr(manifest_set_entry(s, 2)->id.name, "c1"));
	assert_true(str_eq_cstr(manifest_set_entry(s, 3)->id.name, "c2"));
	snprintf(want, sizeof(want), "%s/c.yaml", dir);
	assert_string_equal(manifest_set_entry(s, 3)->file, want);
	assert_int_equal(manifest_set_entry(s, 3)->doc, 1);
	manifest_set_free(s);
}

static void test_what_cannot_be_read_is_an_entry(void **state)
{
	struct manifest_set *s = new_set();
	char path[PATH_MAX + 64];

	(void)state;
	testutil_run("rm -rf %s/*", dir);
	write_file("big.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {k: 0123456789}\n");
	write_file("ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n");
	snprintf(path, sizeof(path), "%s/missing.yaml", dir);
	assert_int_equal(inputs_read(s, path, 1 << 20), 0);
	assert_int_equal(inputs_read(s, dir, 64), 0);
	assert_int_equal(manifest_set_count(s), 3);
	assert_non_null(strstr(manifest_set_entry(s, 0)->error, "No such file"));
	assert_string_equal(manifest_set_entry(s, 0)->file, path);
	assert_non_null(strstr(manifest_set_entry(s, 1)->error, "larger than 64 bytes"));
	assert_null(manifest_set_entry(s, 2)->error);
	manifest_set_free(s);
}

static void test_stdin_is_dash(void **state)
{
	struct manifest_set *s = new_set();
	char path[PATH_MAX + 64];

	(void)state;
	testutil_run("rm -rf %s/*", dir);
	write_file("in.yaml", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n");
	snprintf(path, sizeof(path), "%s/in.yaml", dir);
	assert_non_null(freopen(path, "r", stdin));
	assert_int_equal(inputs_read(s, "-", 1 << 20), 0);
	assert_int_equal(manifest_set_count(s), 1);
	assert_string_equal(manifest_set_entry(s, 0)->file, "<stdin>");
	assert_true(str_eq_cstr(manifest_set_entry(s, 0)->id.namespace, "default"));
	manifest_set_free(s);
}

static void test_manifest_names(void **state)
{
	(void)state;
	assert_true(inputs_is_manifest_name("a.yaml"));
	assert_true(inputs_is_manifest_name("a.yml"));
	assert_true(inputs_is_manifest_name("a.json"));
	assert_false(inputs_is_manifest_name(".yaml"));
	assert_false(inputs_is_manifest_name("a.yaml.bak"));
	assert_false(inputs_is_manifest_name("yaml"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_directory_reads_manifests_in_name_order),
		cmocka_unit_test(test_what_cannot_be_read_is_an_entry),
		cmocka_unit_test(test_stdin_is_dash),
		cmocka_unit_test(test_manifest_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
