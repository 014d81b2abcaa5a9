/* test_kube_config.c - where the API server is: kubeconfig files and the
 * in-cluster ServiceAccount, token rotation, and what is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_config.h"
#include "testutil.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *path_of(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static int setup(void **state)
{
	(void)state;
	if (testutil_tmpdir(dir, sizeof(dir), "kubeconfig") != 0)
		return -1;
	write_file("ca.crt", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
	write_file("tok", "secret-1\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	testutil_run("rm -rf %s", dir);
	return 0;
}

#define KC_HEAD "apiVersion: v1\nkind: Config\ncurrent-context: dev\n" \
	"contexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: team}\n" \
	"- name: other\n  context: {cluster: c2, user: u2}\n"

static void test_kubeconfig_with_files_and_token_file(void **state)
{
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX];

	(void)state;
	write_file("kc.yaml", KC_HEAD
		   "clusters:\n- name: c1\n  cluster: {server: \"https://10.0.0.1:6443/\", certificate-authority: ca.crt}\n"
		   "- name: c2\n  cluster: {server: \"https://c2:443\", certificate-authority-data: \"Q0EK\"}\n"
		   "users:\n- name: u1\n  user: {tokenFile: tok}\n- name: u2\n  user: {token: abc}\n");
	assert_int_equal(kube_config_load(path_of("kc.yaml"), NULL, &cfg, err), 0);
	assert_string_equal(cfg.server, "https://10.0.0.1:6443");
	assert_string_equal(cfg.namespace, "team");
	assert_non_null(cfg.ca_pem);
	assert_non_null(strstr(cfg.ca_pem, "BEGIN CERTIFICATE"));
	assert_string_equal(cfg.token, "secret-1");
	/* rotated in place: read again only when old, or when forced (a 401) */
	write_file("tok", "secret-2\n");
	assert_int_equal(kube_config_token_refresh(&cfg, cfg.token_read_ms + 1000, false), 0);
	assert_string_equal(cfg.token, "secret-1");
	assert_int_equal(kube_config_token_refresh(&cfg, cfg.token_read_ms + KUBE_TOKEN_MAX_AGE_S * 1000 + 1, false), 0);
	assert_string_equal(cfg.token, "secret-2");
	write_file("tok", "secret-3");
	assert_int_equal(kube_config_token_refresh(&cfg, cfg.token_read_ms, true), 0);
	assert_string_equal(cfg.token, "secret-3");
	kube_config_free(&cfg);

	assert_int_equal(kube_config_load(path_of("kc.yaml"), "other", &cfg, err), 0);
	assert_string_equal(cfg.server, "https://c2:443");
	assert_int_equal(cfg.ca_len, 3);
	assert_memory_equal(cfg.ca_pem, "CA\n", 3);
	assert_string_equal(cfg.token, "abc");
	kube_config_free(&cfg);
}

static void test_client_certificate_data(void **state)
{
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX];

	(void)state;
	/* "cert" and "key" in base64 */
	write_file("kc2.yaml", KC_HEAD
		   "clusters:\n- name: c1\n  cluster: {server: \"https://127.0.0.1:1\"}\n"
		   "users:\n- name: u1\n  user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}\n");
	assert_int_equal(kube_config_load(path_of("kc2.yaml"), NULL, &cfg, err), 0);
	assert_null(cfg.ca_pem);
	assert_int_equal(cfg.cert_len, 4);
	assert_memory_equal(cfg.cert_pem, "cert", 4);
	assert_int_equal(cfg.key_len, 3);
	assert_null(cfg.token);
	kube_config_free(&cfg);
}

static void test_refused_kubeconfigs_say_why(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"http://x:80\"}\nusers: []\n", "https://" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", insecure-skip-tls-verify: true}\n",
		  "always verifies" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {exec: {command: aws}}\n", "exec plugins" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {client-certificate-data: Y2VydA==}\n", "without its key" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", certificate-authority-data: \"!!\"}\n",
		  "not base64" },
		{ "apiVersion: v1\nkind: Config\n", "no current-context" },
		/* Never ignored: where to connect, which name to check, who to be. */
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", proxy-url: \"http://p:3128\"}\n",
		  "cluster.proxy-url is not supported" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", tls-server-name: api.internal}\n",
		  "cluster.tls-server-name is not supported" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {token: t, as: system:admin}\n", "users[\"u1\"].as is not supported: impersonation" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {token: t, as-groups: [system:masters]}\n", "as-groups is not supported" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {token: t, as-uid: \"1\"}\n", "as-uid is not supported" },
		{ KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		  "users:\n- name: u1\n  user: {token: t, as-user-extra: {a: [b]}}\n", "as-user-extra is not supported" },
		{ KC_HEAD "clusters: []\n", "server must be" },
		{ "a: [\n", ":" },
	};
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file("bad.yaml", cases[i].text);
		assert_int_not_equal(kube_config_load(path_of("bad.yaml"), NULL, &cfg, err), 0);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].msg);
	}
}

/* A token of any length is sent whole (a projected token is about 1 KiB,
 * an OIDC one can be far longer). */
static void test_a_long_token_is_never_cut(void **state)
{
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX], *h = NULL, *tok, *kc;
	size_t n = 100000, i;

	(void)state;
	tok = malloc(n + 1);
	assert_non_null(tok);
	for (i = 0; i < n; i++)
		tok[i] = (char)('a' + i % 26);
	tok[n - 1] = 'Z';
	tok[n] = '\0';
	write_file("long-token", tok);
	kc = malloc(n + 1024);
	assert_non_null(kc);
	snprintf(kc, n + 1024, KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\n"
		 "users:\n- name: u1\n  user: {tokenFile: long-token}\n");
	write_file("long.yaml", kc);
	assert_int_equal(kube_config_load(path_of("long.yaml"), NULL, &cfg, err), 0);
	assert_int_equal(kube_config_auth_header(&cfg, &h), 0);
	assert_non_null(h);
	assert_int_equal(strlen(h), strlen("Authorization: Bearer ") + n);
	assert_int_equal(strncmp(h, "Authorization: Bearer abc", 25), 0);
	assert_int_equal(h[strlen(h) - 1], 'Z');
	free(h);
	kube_config_free(&cfg);
	/* No token: no header. */
	snprintf(kc, n + 1024, KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\"}\nusers: []\n");
	write_file("notoken.yaml", kc);
	assert_int_equal(kube_config_load(path_of("notoken.yaml"), NULL, &cfg, err), 0);
	assert_int_equal(kube_config_auth_header(&cfg, &h), 0);
	assert_null(h);
	kube_config_free(&cfg);
	free(kc);
	free(tok);
}

/* The CA file is read again when it changes (the kubelet rewrites the
 * ServiceAccount's ca.crt when the cluster's CA rotates); a file caught
 * empty or without a certificate is not taken. */
static void test_the_ca_file_is_read_again_when_it_changes(void **state)
{
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX];
	int64_t t = 1000000;

	(void)state;
	write_file("rot-ca.crt", "-----BEGIN CERTIFICATE-----\nOLD\n-----END CERTIFICATE-----\n");
	write_file("rot.yaml", KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", "
		   "certificate-authority: rot-ca.crt}\nusers: []\n");
	assert_int_equal(kube_config_load(path_of("rot.yaml"), NULL, &cfg, err), 0);
	assert_non_null(strstr(cfg.ca_pem, "OLD"));
	/* Unchanged: nothing read, whenever asked. */
	assert_int_equal(kube_config_ca_refresh(&cfg, t, false), 0);
	assert_int_equal(kube_config_ca_refresh(&cfg, t, true), 0);
	/* Rotated (a new size): taken at the next look, not before. */
	write_file("rot-ca.crt", "-----BEGIN CERTIFICATE-----\nNEW-CA\n-----END CERTIFICATE-----\n");
	assert_int_equal(kube_config_ca_refresh(&cfg, t + 1000, false), 0);
	assert_non_null(strstr(cfg.ca_pem, "OLD"));
	assert_int_equal(kube_config_ca_refresh(&cfg, t + KUBE_TOKEN_MAX_AGE_S * 1000 + 1, false), 1);
	assert_non_null(strstr(cfg.ca_pem, "NEW-CA"));
	/* After a failed verification the caller forces a look at once. */
	write_file("rot-ca.crt", "-----BEGIN CERTIFICATE-----\nTHIRD-ONE\n-----END CERTIFICATE-----\n");
	assert_int_equal(kube_config_ca_refresh(&cfg, t + KUBE_TOKEN_MAX_AGE_S * 1000 + 2, true), 1);
	assert_non_null(strstr(cfg.ca_pem, "THIRD-ONE"));
	/* Half written (no certificate) or empty: refused, the old CA kept. */
	write_file("rot-ca.crt", "-----BEGIN CERT");
	assert_int_equal(kube_config_ca_refresh(&cfg, t, true), -EINVAL);
	write_file("rot-ca.crt", "");
	assert_int_equal(kube_config_ca_refresh(&cfg, t, true), -EINVAL);
	assert_non_null(strstr(cfg.ca_pem, "THIRD-ONE"));
	kube_config_free(&cfg);
	/* certificate-authority-data has no file to watch. */
	write_file("data.yaml", KC_HEAD "clusters:\n- name: c1\n  cluster: {server: \"https://x\", "
		   "certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==}\nusers: []\n");
	assert_int_equal(kube_config_load(path_of("data.yaml"), NULL, &cfg, err), 0);
	assert_string_equal(cfg.ca_file, "");
	assert_int_equal(kube_config_ca_refresh(&cfg, t, true), 0);
	kube_config_free(&cfg);
}

static const char *env_host;

static char *fake_env(const char *name)
{
	if (strcmp(name, "KUBERNETES_SERVICE_HOST") == 0)
		return (char *)env_host;
	if (strcmp(name, "KUBERNETES_SERVICE_PORT") == 0)
		return env_host ? (char *)"6443" : NULL;
	return NULL;
}

static void test_in_cluster_and_nothing_to_find(void **state)
{
	struct kube_config cfg;
	char err[KUBE_CONFIG_ERROR_MAX];

	(void)state;
	env_host = NULL;
	assert_int_equal(kube_config_find(NULL, NULL, fake_env, dir, &cfg, err), 1);
	/* the ServiceAccount directory: token, ca.crt, namespace */
	write_file("token", "sa-token\n");
	write_file("namespace", "dra-guard");
	env_host = "fd00::1";
	assert_int_equal(kube_config_find(NULL, NULL, fake_env, dir, &cfg, err), 0);
	assert_string_equal(cfg.server, "https://[fd00::1]:6443");
	assert_string_equal(cfg.token, "sa-token");
	assert_string_equal(cfg.namespace, "dra-guard");
	assert_string_equal(cfg.source, "in-cluster");
	kube_config_free(&cfg);
	/* a kubeconfig given wins over the cluster */
	assert_int_equal(kube_config_find(path_of("kc.yaml"), NULL, fake_env, dir, &cfg, err), 0);
	assert_string_equal(cfg.server, "https://10.0.0.1:6443");
	kube_config_free(&cfg);
	/* no token: an error naming the file */
	env_host = "10.0.0.1";
	assert_int_equal(kube_config_find(NULL, NULL, fake_env, "/nonexistent-sa", &cfg, err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-sa/ca.crt"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubeconfig_with_files_and_token_file),
		cmocka_unit_test(test_client_certificate_data),
		cmocka_unit_test(test_refused_kubeconfigs_say_why),
		cmocka_unit_test(test_in_cluster_and_nothing_to_find),
		cmocka_unit_test(test_a_long_token_is_never_cut),
		cmocka_unit_test(test_the_ca_file_is_read_again_when_it_changes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
