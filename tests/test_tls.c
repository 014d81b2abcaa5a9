/* test_tls.c - certificate checks (OpenSSL) and the GnuTLS credential,
 * on certificates made by certs/make-certs.sh and the openssl CLI. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "tls.h"

static char dir[256];

static const char *path(const char *name)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* What `openssl x509` says about a certificate, one field. */
static void openssl_field(const char *cert, const char *opt, char *out, size_t n)
{
	char cmd[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "openssl x509 -in %s -noout %s", cert, opt);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(out, (int)n, f));
	out[strcspn(out, "\n")] = '\0';
	pclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (testutil_tmpdir(dir, sizeof(dir), "tls") != 0)
		return -1;
	/* A dev CA and serving pair (the script's own output), a second pair
	 * from another CA, an RSA pair, a chain file, an encrypted key. */
	testutil_run("%s dev %s >/dev/null", testutil_repo_path("certs/make-certs.sh"), path("a"));
	testutil_run("%s dev %s >/dev/null", testutil_repo_path("certs/make-certs.sh"), path("b"));
	testutil_run("cat %s %s > %s", path("a/tls.crt"), path("a/ca.crt"), path("chain.crt"));
	testutil_run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rsa "
	    "-addext subjectAltName=DNS:rsa.example -keyout %s -out %s 2>/dev/null",
	    path("rsa.key"), path("rsa.crt"));
	testutil_run("openssl pkey -in %s -aes256 -passout pass:secret -out %s 2>/dev/null",
	    path("a/tls.key"), path("enc.key"));
	testutil_run("printf 'not a certificate\\n' > %s", path("junk.pem"));
	testutil_run("printf '' > %s", path("empty.pem"));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	testutil_run("rm -rf %s", dir);
	return 0;
}

/* Read and check a pair at time now; returns tls_check()'s code. */
static int check(const char *cert, const char *key, const char *name, int64_t now,
		 struct tls_info *info, char err[static TLS_ERROR_MAX])
{
	struct tls_pair p;
	int rc;

	rc = tls_pair_read(cert, key, &p, err);
	if (rc)
		return rc;
	rc = tls_check(&p, name, now, info, err);
	tls_pair_free(&p);
	return rc;
}

static int64_t not_after(const char *cert)
{
	struct tls_info info;
	char err[TLS_ERROR_MAX];

	assert_int_equal(check(cert, path("a/tls.key"), NULL, 0, &info, err), -EINVAL);
	/* At time 0 it is not yet valid, but the dates were read. */
	return info.not_after;
}

static void test_good_pair_reports_what_openssl_reports(void **state)
{
	struct tls_info info;
	char err[TLS_ERROR_MAX], want[256];
	const char *fp;

	(void)state;
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL, (int64_t)time(NULL), &info, err), 0);
	assert_int_equal(info.chain_len, 1);
	assert_false(info.expiring);
	assert_false(info.name_checked);
	openssl_field(path("a/tls.crt"), "-fingerprint -sha256", want, sizeof(want));
	fp = strchr(want, '=');
	assert_non_null(fp);
	assert_string_equal(info.fingerprint, fp + 1);
	openssl_field(path("a/tls.crt"), "-serial", want, sizeof(want));
	/* openssl prints the serial's bytes (serial=0F64...), BN_bn2hex may or
	 * may not keep a leading zero nibble: compare the numbers. */
	fp = want + strlen("serial=");
	while (*fp == '0' && fp[1])
		fp++;
	{
		const char *got = info.serial;

		while (*got == '0' && got[1])
			got++;
		assert_string_equal(got, fp);
	}
	assert_non_null(strstr(info.subject, "dra-guard.dra-guard.svc"));
	assert_true(info.not_after > info.not_before);
}

static void test_key_must_match_certificate(void **state)
{
	struct tls_info info;
	char err[TLS_ERROR_MAX];

	(void)state;
	assert_int_equal(check(path("a/tls.crt"), path("b/tls.key"), NULL, (int64_t)time(NULL), &info, err),
			 -EINVAL);
	assert_non_null(strstr(err, "does not match"));
	assert_int_equal(check(path("rsa.crt"), path("a/tls.key"), NULL, (int64_t)time(NULL), &info, err),
			 -EINVAL);
	assert_non_null(strstr(err, "does not match"));
}

static void test_validity_window(void **state)
{
	struct tls_info info;
	char err[TLS_ERROR_MAX];
	int64_t end = not_after(path("a/tls.crt"));

	(void)state;
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL, end, &info, err), -EINVAL);
	assert_non_null(strstr(err, "expired"));
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL, end + 86400, &info, err), -EINVAL);
	assert_non_null(strstr(err, "expired"));
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL, 1000, &info, err), -EINVAL);
	assert_non_null(strstr(err, "not valid before"));
	/* Inside the window but within the warning period: usable, flagged. */
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL, end - 10 * 86400, &info, err), 0);
	assert_true(info.expiring);
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), NULL,
			       end - (TLS_EXPIRY_WARN_DAYS + 1) * 86400, &info, err), 0);
	assert_false(info.expiring);
}

static void test_service_name_is_matched_against_sans(void **state)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
		{ "dra-guard.dra-guard.svc", true },
		{ "dra-guard.dra-guard.svc.cluster.local", true },
		{ "localhost", true },
		{ "127.0.0.1", true },
		{ "::1", true },
		{ "other.dra-guard.svc", false },
		{ "10.0.0.1", false },
		{ "dra-guard", false },
	};
	struct tls_info info;
	char err[TLS_ERROR_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), cases[i].name, (int64_t)time(NULL),
				       &info, err), 0);
		assert_true(info.name_checked);
		if (info.name_ok != cases[i].ok)
			fail_msg("%s: name_ok %d, want %d", cases[i].name, info.name_ok, cases[i].ok);
	}
	assert_int_equal(check(path("a/tls.crt"), path("a/tls.key"), "", (int64_t)time(NULL), &info, err), 0);
	assert_false(info.name_checked);
}

static void test_unusable_files_are_refused_with_a_reason(void **state)
{
	static const struct {
		const char *cert, *key, *mention;
	} cases[] = {
		{ "junk.pem", "a/tls.key", "no PEM certificate" },
		{ "empty.pem", "a/tls.key", "no PEM certificate" },
		{ "a/tls.crt", "junk.pem", "private key" },
		{ "a/tls.crt", "a/tls.crt", "private key" },
		{ "a/tls.crt", "enc.key", "private key" },
	};
	struct tls_info info;
	char err[TLS_ERROR_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = check(path(cases[i].cert), path(cases[i].key), NULL, (int64_t)time(NULL), &info, err);

		if (rc != -EINVAL || !strstr(err, cases[i].mention))
			fail_msg("%s + %s: rc %d, err '%s'", cases[i].cert, cases[i].key, rc, err);
	}
	assert_int_equal(check(path("missing.crt"), path("a/tls.key"), NULL, 0, &info, err), -ENOENT);
	assert_non_null(strstr(err, "missing.crt"));
}

static void test_chain_and_rsa_become_credentials(void **state)
{
	static const struct {
		const char *cert, *key;
		unsigned chain;
	} cases[] = {
		{ "a/tls.crt", "a/tls.key", 1 },
		{ "chain.crt", "a/tls.key", 2 },
		{ "rsa.crt", "rsa.key", 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tls_pair p;
		struct tls_info info;
		struct tls_cred *c = NULL;
		gnutls_pcert_st *pcert = NULL;
		gnutls_privkey_t key = NULL;
		char err[TLS_ERROR_MAX];
		unsigned n = 0;

		assert_int_equal(tls_pair_read(path(cases[i].cert), path(cases[i].key), &p, err), 0);
		assert_int_equal(tls_check(&p, NULL, (int64_t)time(NULL), &info, err), 0);
		assert_int_equal(info.chain_len, cases[i].chain);
		assert_int_equal(tls_cred_new(&p, &info, &c, err), 0);
		tls_cred_retrieve(c, &pcert, &n, &key);
		assert_int_equal(n, cases[i].chain);
		assert_non_null(pcert);
		assert_non_null(key);
		assert_string_equal(tls_cred_info(c)->fingerprint, info.fingerprint);
		tls_cred_free(c);
		tls_pair_free(&p);
	}
	tls_cred_free(NULL);
}

static void test_pair_hash_tells_pairs_apart(void **state)
{
	struct tls_pair a1, a2, b;
	char err[TLS_ERROR_MAX];

	(void)state;
	assert_int_equal(tls_pair_read(path("a/tls.crt"), path("a/tls.key"), &a1, err), 0);
	assert_int_equal(tls_pair_read(path("a/tls.crt"), path("a/tls.key"), &a2, err), 0);
	assert_int_equal(tls_pair_read(path("b/tls.crt"), path("b/tls.key"), &b, err), 0);
	assert_int_equal(strlen(a1.hash), 64);
	assert_string_equal(a1.hash, a2.hash);
	assert_string_not_equal(a1.hash, b.hash);
	tls_pair_free(&a1);
	tls_pair_free(&a2);
	tls_pair_free(&b);
}

/* A Secret mounted the kubelet's way: ..data -> timestamped dir. */
static void test_pair_is_read_through_the_data_symlink(void **state)
{
	struct tls_pair p;
	struct tls_info info;
	char err[TLS_ERROR_MAX], want[256];
	const char *fp;

	(void)state;
	testutil_run("mkdir -p %s/k8s/..2026_01_01_00_00_00.1 && cp %s %s %s/k8s/..2026_01_01_00_00_00.1/ && "
	    "ln -sfn ..2026_01_01_00_00_00.1 %s/k8s/..data && ln -sfn ..data/tls.crt %s/k8s/tls.crt && "
	    "ln -sfn ..data/tls.key %s/k8s/tls.key",
	    dir, path("b/tls.crt"), path("b/tls.key"), dir, dir, dir, dir);
	assert_int_equal(tls_pair_read(path("k8s/tls.crt"), path("k8s/tls.key"), &p, err), 0);
	assert_int_equal(tls_check(&p, NULL, (int64_t)time(NULL), &info, err), 0);
	openssl_field(path("b/tls.crt"), "-fingerprint -sha256", want, sizeof(want));
	fp = strchr(want, '=');
	assert_string_equal(info.fingerprint, fp + 1);
	tls_pair_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_pair_reports_what_openssl_reports),
		cmocka_unit_test(test_key_must_match_certificate),
		cmocka_unit_test(test_validity_window),
		cmocka_unit_test(test_service_name_is_matched_against_sans),
		cmocka_unit_test(test_unusable_files_are_refused_with_a_reason),
		cmocka_unit_test(test_chain_and_rsa_become_credentials),
		cmocka_unit_test(test_pair_hash_tells_pairs_apart),
		cmocka_unit_test(test_pair_is_read_through_the_data_symlink),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
