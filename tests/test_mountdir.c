/* test_mountdir.c - reading a kubelet-filled directory, one version. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mountdir.h"
#include "testutil.h"

static char root[256];

static int setup(void **state)
{
	(void)state;
	return testutil_tmpdir(root, sizeof(root), "mountdir");
}

static int teardown(void **state)
{
	(void)state;
	testutil_run("rm -rf %s", root);
	return 0;
}

/* Lay out DIR as the kubelet does with version V holding policy.yaml=P
 * and freeze=F (F NULL: no freeze key). */
static void publish(const char *dir, const char *v, const char *p, const char *f)
{
	testutil_run("mkdir -p %s/%s/..%s && printf '%%s' '%s' > %s/%s/..%s/policy.yaml", root, dir, v, p, root, dir, v);
	if (f)
		testutil_run("printf '%%s' '%s' > %s/%s/..%s/freeze", f, root, dir, v);
	testutil_run("cd %s/%s && ln -sfn ..%s ..data_tmp && mv -T ..data_tmp ..data && "
	    "ln -sfn ..data/policy.yaml policy.yaml", root, dir, v);
	if (f)
		testutil_run("cd %s/%s && ln -sfn ..data/freeze freeze", root, dir);
}

static void test_reads_every_key_of_the_current_version(void **state)
{
	struct mountdir_file f[3] = {
		{ .name = "policy.yaml", .max = 1024 },
		{ .name = "freeze", .max = 16, .optional = true },
		{ .name = "freeze-reason", .max = 16, .optional = true },
	};
	char err[256], dir[512];

	(void)state;
	publish("cm", "v1", "doc-1", "false");
	snprintf(dir, sizeof(dir), "%s/cm", root);
	assert_int_equal(mountdir_read(dir, f, 3, err, sizeof(err)), 0);
	assert_true(f[0].present && f[1].present && !f[2].present);
	assert_string_equal(f[0].data, "doc-1");
	assert_int_equal(f[0].len, 5);
	assert_string_equal(f[1].data, "false");
	assert_null(f[2].data);
	mountdir_release(f, 3);
	assert_null(f[0].data);

	/* The next version; the old one's directory removed, as the kubelet does. */
	publish("cm", "v2", "doc-2", "true");
	testutil_run("rm -rf %s/cm/..v1", root);
	assert_int_equal(mountdir_read(dir, f, 3, err, sizeof(err)), 0);
	assert_string_equal(f[0].data, "doc-2");
	assert_string_equal(f[1].data, "true");
	mountdir_release(f, 3);
}

static void test_plain_directory_is_read_directly(void **state)
{
	struct mountdir_file f[1] = { { .name = "policy.yaml", .max = 1024 } };
	char err[256], dir[512];

	(void)state;
	testutil_run("mkdir -p %s/plain && printf 'x: 1' > %s/plain/policy.yaml", root, root);
	snprintf(dir, sizeof(dir), "%s/plain", root);
	assert_int_equal(mountdir_read(dir, f, 1, err, sizeof(err)), 0);
	assert_string_equal(f[0].data, "x: 1");
	mountdir_release(f, 1);
}

static void test_errors_name_the_file(void **state)
{
	struct mountdir_file req[1] = { { .name = "missing.yaml", .max = 1024 } };
	struct mountdir_file big[1] = { { .name = "policy.yaml", .max = 3 } };
	struct mountdir_file sub[1] = { { .name = "subdir", .max = 1024 } };
	char err[256], dir[512];

	(void)state;
	publish("errs", "v1", "four", NULL);
	testutil_run("mkdir -p %s/errs/subdir", root);
	snprintf(dir, sizeof(dir), "%s/errs", root);
	assert_int_equal(mountdir_read(dir, req, 1, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "missing.yaml"));
	assert_null(req[0].data);
	assert_int_equal(mountdir_read(dir, big, 1, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "policy.yaml"));
	assert_null(big[0].data);
	/* ..data points at the version dir, which has no subdir. */
	assert_int_equal(mountdir_read(dir, sub, 1, err, sizeof(err)), -ENOENT);
	snprintf(dir, sizeof(dir), "%s/no-such-dir", root);
	assert_true(mountdir_read(dir, req, 1, err, sizeof(err)) < 0);
}

static void test_signature_moves_with_every_change(void **state)
{
	static const char *const names[] = { "policy.yaml", "freeze" };
	char dir[512];
	uint64_t s1, s2, s3, s4;

	(void)state;
	publish("sig", "v1", "a", "false");
	snprintf(dir, sizeof(dir), "%s/sig", root);
	s1 = mountdir_signature(dir, names, 2);
	assert_true(s1 == mountdir_signature(dir, names, 2));
	publish("sig", "v2", "a", "false");       /* same content, new version */
	s2 = mountdir_signature(dir, names, 2);
	assert_true(s2 != s1);
	testutil_run("rm -f %s/sig/freeze", root);          /* a key goes away */
	s3 = mountdir_signature(dir, names, 2);
	assert_true(s3 != s2);
	testutil_run("printf 'b' >> %s/sig/..v2/policy.yaml", root);   /* written in place */
	s4 = mountdir_signature(dir, names, 2);
	assert_true(s4 != s3);
}

static void test_split(void **state)
{
	static const struct {
		const char *path, *dir, *base;
	} cases[] = {
		{ "/etc/tls/tls.crt", "/etc/tls", "tls.crt" },
		{ "tls.crt", ".", "tls.crt" },
		{ "/tls.crt", "/", "tls.crt" },
		{ "a/b/", "a/b", "" },
	};
	char d[64], b[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(mountdir_split(cases[i].path, d, sizeof(d), b, sizeof(b)), 0);
		assert_string_equal(d, cases[i].dir);
		assert_string_equal(b, cases[i].base);
	}
	assert_int_equal(mountdir_split("/a/very/long/directory/name/x", d, 8, b, sizeof(b)), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_every_key_of_the_current_version),
		cmocka_unit_test(test_plain_directory_is_read_directly),
		cmocka_unit_test(test_errors_name_the_file),
		cmocka_unit_test(test_signature_moves_with_every_change),
		cmocka_unit_test(test_split),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
