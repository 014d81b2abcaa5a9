/* test_serve_config.c - the flags of dra-guard serve. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "serve_config.h"

/* A stand-in environment: NAME=value pairs, NULL-terminated. */
static const char *const *fake_env;

static char *env_lookup(const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; fake_env && fake_env[i]; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return (char *)fake_env[i] + n + 1;
	return NULL;
}

/* Parse a command line given as one string split on spaces. */
static int parse(const char *line, const char *const *env, struct serve_config *cfg, char *err)
{
	char copy[1024], *argv[64], *tok, *save = NULL;
	int argc = 0;

	fake_env = env;
	argv[argc++] = "serve";
	snprintf(copy, sizeof(copy), "%s", line);
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return serve_config_parse(argc, argv, env_lookup, cfg, err);
}

static unsigned port_of(const struct serve_addr *a)
{
	if (a->sa.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&a->sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)&a->sa)->sin6_port);
}

static void test_defaults(void **state)
{
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;

	(void)state;
	assert_int_equal(parse("", NULL, &c, err), 0);
	assert_int_equal(c.listen.sa.ss_family, AF_INET6);
	assert_int_equal(port_of(&c.listen), 8443);
	assert_true(c.metrics_enabled);
	assert_int_equal(c.metrics_listen.sa.ss_family, AF_INET);
	assert_int_equal(port_of(&c.metrics_listen), 9090);
	assert_false(c.probe_enabled);
	assert_int_equal(c.memory_budget, 128 * 1024 * 1024);
	assert_int_equal(c.policy_kind, POLICY_SOURCE_BUILTIN);
	assert_false(c.policy_file_watch);
	assert_string_equal(c.configmap_namespace, "dra-guard");
	assert_string_equal(c.configmap_name, "dra-guard-policy");
	assert_true(c.threads >= 1);
	assert_int_equal(c.max_body, 8 * 1024 * 1024);
	assert_int_equal(c.max_connections, 1024);
	assert_int_equal(c.idle_timeout_s, 120);
	assert_int_equal(c.body_timeout_s, 30);
	assert_int_equal(c.max_json_depth, JSCAN_DEPTH_LIMIT);
	assert_int_equal(c.shutdown_timeout_s, 25);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_string_equal(c.service_name, "");
	/* Loopback: unchecked, as make run wants it. */
	assert_int_equal(c.metrics_auth, METRICS_AUTH_NONE);
	assert_false(c.metrics_auth_insecure);
	assert_int_equal(c.debug_memory_budget, 64 * 1024 * 1024);
	assert_int_equal(c.debug_send_timeout_s, 30);
}

/* --metrics-auth: auto checks every address but loopback; none off
 * loopback only when asked for by name. */
static void test_metrics_auth_modes(void **state)
{
	static const struct {
		const char *line;
		int rc;
		enum metrics_auth_mode mode;
	} cases[] = {
		{ "--metrics-listen 127.0.0.1:9090", 0, METRICS_AUTH_NONE },
		{ "--metrics-listen 127.1.2.3:9090", 0, METRICS_AUTH_NONE },
		{ "--metrics-listen [::1]:9090", 0, METRICS_AUTH_NONE },
		{ "--metrics-listen [::ffff:127.0.0.1]:9090", 0, METRICS_AUTH_NONE },
		{ "--metrics-listen 0.0.0.0:9090", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen :9090", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen [::ffff:10.0.0.1]:9090", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen 10.1.2.3:9090", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen 127.0.0.1:9090 --metrics-auth kubernetes", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen 0.0.0.0:9090 --metrics-auth kubernetes", 0, METRICS_AUTH_KUBERNETES },
		{ "--metrics-listen 0.0.0.0:9090 --metrics-auth none", -EINVAL, METRICS_AUTH_NONE },
		{ "--metrics-listen :9090 --metrics-auth none", -EINVAL, METRICS_AUTH_NONE },
		{ "--metrics-listen 0.0.0.0:9090 --metrics-auth none --metrics-auth-insecure", 0, METRICS_AUTH_NONE },
		{ "--metrics-listen off --metrics-auth none", 0, METRICS_AUTH_NONE },
	};
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse(cases[i].line, NULL, &c, err);

		if (rc != cases[i].rc || (rc == 0 && c.metrics_auth != cases[i].mode))
			fail_msg("'%s': rc %d mode %d, err '%s'", cases[i].line, rc, (int)c.metrics_auth, err);
		if (rc)
			assert_non_null(strstr(err, "--metrics-auth-insecure"));
	}
}

static void test_flags_parse_values(void **state)
{
	static const char *const env[] = { NULL };
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;

	(void)state;
	assert_int_equal(parse("--listen 127.0.0.1:0 --metrics-listen=off --threads 3 --max-body 512Ki "
			       "--max-connections 10 --idle-timeout 2m --body-timeout 5s --max-json-depth 32 "
			       "--shutdown-timeout 0 --log-level debug --service-name svc.ns.svc "
			       "--policy-dir /etc/p --policy-configmap ns1/cm-1 --tls-cert /a/c --tls-key /a/k "
			       "--probe-listen 0.0.0.0:9091 --memory-budget 64Mi",
			       env, &c, err), 0);
	assert_true(c.probe_enabled);
	assert_int_equal(c.probe_listen.sa.ss_family, AF_INET);
	assert_int_equal(port_of(&c.probe_listen), 9091);
	assert_int_equal(c.memory_budget, 64 * 1024 * 1024);
	assert_int_equal(c.listen.sa.ss_family, AF_INET);
	assert_int_equal(port_of(&c.listen), 0);
	assert_false(c.metrics_enabled);
	assert_int_equal(c.threads, 3);
	assert_int_equal(c.max_body, 512 * 1024);
	assert_int_equal(c.max_connections, 10);
	assert_int_equal(c.idle_timeout_s, 120);
	assert_int_equal(c.body_timeout_s, 5);
	assert_int_equal(c.max_json_depth, 32);
	assert_int_equal(c.shutdown_timeout_s, 0);
	assert_int_equal(c.log_level, LOG_DEBUG);
	assert_string_equal(c.service_name, "svc.ns.svc");
	assert_int_equal(c.policy_kind, POLICY_SOURCE_DIR);
	assert_string_equal(c.policy_path, "/etc/p");
	assert_string_equal(c.configmap_namespace, "ns1");
	assert_string_equal(c.configmap_name, "cm-1");
	assert_string_equal(c.tls_cert, "/a/c");
	assert_string_equal(c.tls_key, "/a/k");
}

static void test_environment_applies_and_flags_win(void **state)
{
	static const char *const env[] = {
		"DRA_GUARD_THREADS=5", "DRA_GUARD_MAX_BODY=1Mi", "DRA_GUARD_LOG_LEVEL=warn",
		"DRA_GUARD_METRICS_LISTEN=", "DRA_GUARD_POLICY=/env/policy.yaml", NULL,
	};
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;

	(void)state;
	assert_int_equal(parse("--threads 2", env, &c, err), 0);
	assert_int_equal(c.threads, 2);
	assert_int_equal(c.max_body, 1024 * 1024);
	assert_int_equal(c.log_level, LOG_WARN);
	assert_false(c.metrics_enabled);
	assert_int_equal(c.policy_kind, POLICY_SOURCE_FILE);
	assert_string_equal(c.policy_path, "/env/policy.yaml");

	/* A policy source on the command line replaces the environment's,
	 * even when the two use different flags. */
	assert_int_equal(parse("--policy-dir /cli/dir", env, &c, err), 0);
	assert_int_equal(c.policy_kind, POLICY_SOURCE_DIR);
	assert_string_equal(c.policy_path, "/cli/dir");
}

static void test_bad_values_name_the_flag(void **state)
{
	static const struct {
		const char *line;
		const char *env[3];
		const char *mention;
	} cases[] = {
		{ "--threads 0", { NULL }, "--threads" },
		{ "--threads 257", { NULL }, "--threads" },
		{ "--threads two", { NULL }, "--threads" },
		{ "--threads -1", { NULL }, "--threads" },
		{ "--max-body 10", { NULL }, "--max-body" },
		{ "--max-body 1Ti", { NULL }, "--max-body" },
		{ "--max-body 8Mb", { NULL }, "--max-body" },
		{ "--idle-timeout 0", { NULL }, "--idle-timeout" },
		{ "--idle-timeout 5d", { NULL }, "--idle-timeout" },
		{ "--idle-timeout 2h", { NULL }, "--idle-timeout" },
		{ "--body-timeout 0", { NULL }, "--body-timeout" },
		{ "--body-timeout 2h", { NULL }, "--body-timeout" },
		{ "--body-timeout soon", { NULL }, "--body-timeout" },
		{ "--shutdown-timeout -1s", { NULL }, "--shutdown-timeout" },
		{ "--max-json-depth 4", { NULL }, "--max-json-depth" },
		{ "--max-json-depth 10241", { NULL }, "--max-json-depth" },
		{ "--max-connections 0", { NULL }, "--max-connections" },
		{ "--log-level verbose", { NULL }, "--log-level" },
		{ "--listen 8443", { NULL }, "--listen" },
		{ "--listen :99999", { NULL }, "--listen" },
		{ "--listen ::1:8443", { NULL }, "--listen" },
		{ "--metrics-listen 127.0.0.1", { NULL }, "--metrics-listen" },
		{ "--probe-listen 9091", { NULL }, "--probe-listen" },
		{ "--memory-budget lots", { NULL }, "--memory-budget" },
		{ "--memory-budget 10Mi", { NULL }, "--memory-budget" },
		{ "--max-body 64Mi --memory-budget 64Mi", { NULL }, "--max-body + 4Mi" },
		{ "--metrics-auth basic", { NULL }, "--metrics-auth" },
		{ "--metrics-auth-insecure=perhaps", { NULL }, "--metrics-auth-insecure" },
		{ "--debug-memory-budget 1Ki", { NULL }, "--debug-memory-budget" },
		{ "--debug-memory-budget much", { NULL }, "--debug-memory-budget" },
		{ "--debug-send-timeout 0", { NULL }, "--debug-send-timeout" },
		{ "--debug-send-timeout 2h", { NULL }, "--debug-send-timeout" },
		{ "--policy-configmap just-a-name", { NULL }, "--policy-configmap" },
		{ "--policy-configmap NS/Name", { NULL }, "--policy-configmap" },
		{ "--policy-file-watch=maybe", { NULL }, "--policy-file-watch" },
		{ "--policy a.yaml --policy-dir /d", { NULL }, "exclusive" },
		{ "--no-such-flag 1", { NULL }, "--no-such-flag" },
		{ "--threads", { NULL }, "--threads" },
		{ "stray", { NULL }, "stray" },
		{ "", { "DRA_GUARD_THREADS=lots", NULL }, "$DRA_GUARD_THREADS" },
		{ "", { "DRA_GUARD_POLICY=/a", "DRA_GUARD_POLICY_DIR=/b", NULL }, "exclusive" },
	};
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse(cases[i].line, cases[i].env, &c, err);

		if (rc != -EINVAL || !strstr(err, cases[i].mention))
			fail_msg("'%s': rc %d, err '%s' (want -EINVAL naming %s)", cases[i].line, rc, err,
				 cases[i].mention);
	}
}

static void test_help_short_circuits(void **state)
{
	char err[SERVE_CONFIG_ERROR_MAX];
	struct serve_config c;

	(void)state;
	/* Even next to a bad value: asking for help is never an error. */
	assert_int_equal(parse("--threads 0 --help", NULL, &c, err), 1);
	assert_int_equal(parse("-h", NULL, &c, err), 1);
}

static void test_help_lists_every_flag_with_its_variable(void **state)
{
	static const char *const names[] = {
		"--listen", "DRA_GUARD_LISTEN", "--metrics-listen", "DRA_GUARD_METRICS_LISTEN",
		"--tls-cert", "DRA_GUARD_TLS_CERT", "--tls-key", "DRA_GUARD_TLS_KEY",
		"--service-name", "--policy ", "--policy-dir", "--policy-configmap", "--threads",
		"--max-body", "--max-connections", "--idle-timeout", "--body-timeout", "--max-json-depth",
		"--shutdown-timeout", "--log-level", "--policy-file-watch", "--help",
	};
	char text[16384];
	FILE *f = fmemopen(text, sizeof(text), "w");
	size_t i;

	(void)state;
	assert_non_null(f);
	serve_config_usage(f);
	fclose(f);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(text, names[i]))
			fail_msg("--help does not mention %s", names[i]);
}

static void test_addresses(void **state)
{
	static const struct {
		const char *text;
		int family;
		unsigned port;
		const char *formatted;      /* serve_config_addr_format(); NULL: skip */
	} cases[] = {
		{ "127.0.0.1:8443", AF_INET, 8443, "127.0.0.1:8443" },
		{ ":9000", AF_INET6, 9000, "[::]:9000" },
		{ "[::1]:443", AF_INET6, 443, "[::1]:443" },
		{ "0.0.0.0:0", AF_INET, 0, "0.0.0.0:0" },
		{ "localhost:8080", 0, 8080, NULL },
	};
	char err[SERVE_CONFIG_ERROR_MAX], text[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct serve_addr a;

		assert_int_equal(serve_config_addr(cases[i].text, &a, err), 0);
		if (cases[i].family)
			assert_int_equal(a.sa.ss_family, cases[i].family);
		assert_int_equal(port_of(&a), cases[i].port);
		if (cases[i].formatted) {
			serve_config_addr_format((const struct sockaddr *)&a.sa, text, sizeof(text));
			assert_string_equal(text, cases[i].formatted);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_flags_parse_values),
		cmocka_unit_test(test_metrics_auth_modes),
		cmocka_unit_test(test_environment_applies_and_flags_win),
		cmocka_unit_test(test_bad_values_name_the_flag),
		cmocka_unit_test(test_help_short_circuits),
		cmocka_unit_test(test_help_lists_every_flag_with_its_variable),
		cmocka_unit_test(test_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
