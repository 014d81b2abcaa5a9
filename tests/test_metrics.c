/* test_metrics.c - the Prometheus registry and its text format. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "prom.h"

/* The value of the sample line that starts with prefix (name and labels,
 * up to the space), or -1 when there is none. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while ((p = strstr(p, series)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += n;
	}
	return -1;
}

/* The last occurrence of needle in text, or NULL. */
static const char *strrstr_last(const char *text, const char *needle)
{
	const char *p, *last = NULL;

	for (p = strstr(text, needle); p; p = strstr(p + 1, needle))
		last = p;
	return last;
}

static char *render(struct metrics *m)
{
	struct buf b;
	char *text = NULL;
	size_t len;

	buf_init(&b, 4 << 20);
	assert_int_equal(metrics_render(m, &b), 0);
	assert_int_equal(buf_take(&b, &text, &len), 0);
	return text;
}

/* Every line is a comment (# HELP / # TYPE name ...), or a sample
 * name{labels} value whose family was declared by a TYPE line before it. */
static void check_exposition(const char *text)
{
	char declared[64][96];
	size_t ndeclared = 0, i;
	const char *line = text;

	assert_true(strlen(text) > 0);
	assert_int_equal(text[strlen(text) - 1], '\n');
	while (*line) {
		const char *end = strchr(line, '\n');
		char buf[2048];
		size_t len;

		assert_non_null(end);
		len = (size_t)(end - line);
		assert_true(len > 0 && len < sizeof(buf));
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (strncmp(buf, "# TYPE ", 7) == 0) {
			char name[96], type[32];

			assert_int_equal(sscanf(buf + 7, "%95s %31s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
				    strcmp(type, "histogram") == 0);
			assert_true(ndeclared < 64);
			snprintf(declared[ndeclared++], sizeof(declared[0]), "%s", name);
		} else if (strncmp(buf, "# HELP ", 7) == 0) {
			assert_non_null(strchr(buf + 7, ' '));
		} else {
			char name[128];
			size_t k = strcspn(buf, "{ ");
			bool found = false;

			assert_true(k > 0 && k < sizeof(name));
			memcpy(name, buf, k);
			name[k] = '\0';
			for (i = 0; i < ndeclared && !found; i++) {
				size_t dl = strlen(declared[i]);

				found = strcmp(name, declared[i]) == 0 ||
					(strncmp(name, declared[i], dl) == 0 &&
					 (strcmp(name + dl, "_bucket") == 0 || strcmp(name + dl, "_sum") == 0 ||
					  strcmp(name + dl, "_count") == 0));
			}
			assert_true(found);
			assert_non_null(strrchr(buf, ' '));
		}
		line = end + 1;
	}
}

/* A registry, or the test stops. abort() is never reached (fail_msg leaves
 * the test) but tells the compiler so: otherwise GCC's link-time analysis
 * follows a NULL registry into the setters and warns. */
static struct metrics *new_metrics(const char *version)
{
	struct metrics *m = NULL;
	int rc = metrics_new(version, &m);

	if (rc != 0 || !m) {
		fail_msg("metrics_new: %d", rc);
		abort();
	}
	return m;
}

static void test_fresh_registry_renders_every_family_at_zero(void **state)
{
	struct metrics *m;
	char *text;

	(void)state;
	m = new_metrics("v1.2.3");
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_requests_total{endpoint=\"validate\",resource=\"resourceslices\","
				 "operation=\"CREATE\",result=\"denied\"}") == 0);
	assert_true(sample(text, "dra_guard_violations_total{rule=\"slice.mapping.name\",action=\"deny\"}") == 0);
	assert_true(sample(text, "dra_guard_build_info{version=\"v1.2.3\"}") == 1);
	assert_true(sample(text, "dra_guard_freeze_active") == 0);
	assert_true(sample(text, "dra_guard_ready") == 0);
	assert_true(sample(text, "dra_guard_policy_last_reload_successful") == 0);
	assert_true(sample(text, "dra_guard_freeze_alert_after_seconds") == 0);
	assert_true(sample(text, "dra_guard_memory_budget_bytes") == 0);
	assert_true(sample(text, "dra_guard_memory_in_use_bytes") == 0);
	assert_true(sample(text, "dra_guard_memory_refusals_total{kind=\"body\"}") == 0);
	assert_true(sample(text, "dra_guard_memory_refusals_total{kind=\"answer\"}") == 0);
	/* Absent until there is something to say. */
	assert_null(strstr(text, "dra_guard_policy_info{"));
	assert_null(strstr(text, "dra_guard_freeze_info{"));
	free(text);
	metrics_free(m);
}

static void test_counters_move_with_events(void **state)
{
	struct metrics *m;
	char *text;

	(void)state;
	m = new_metrics("dev");
	metrics_request(m, METRICS_EP_VALIDATE, OBJECT_RESOURCE_SLICE, ADMISSION_OP_UPDATE,
			METRICS_RESULT_DENIED, 1000);
	metrics_request(m, METRICS_EP_VALIDATE, OBJECT_RESOURCE_SLICE, ADMISSION_OP_UPDATE,
			METRICS_RESULT_DENIED, 1000);
	metrics_request(m, METRICS_EP_MUTATE, OBJECT_POD, ADMISSION_OP_CREATE,
			METRICS_RESULT_ALLOWED, 1000);
	metrics_violation(m, RULE_SLICE_MAPPING_SHAREABLE, ACTION_WARN);
	metrics_break_glass(m, OBJECT_RESOURCE_CLAIM);
	metrics_http_error(m, METRICS_HTTP_413);
	metrics_policy_reload(m, METRICS_RELOAD_ERROR);
	metrics_tls_reload(m, METRICS_RELOAD_SUCCESS);
	metrics_tls_not_after(m, 1800000000);
	metrics_in_flight(m, 1);
	metrics_in_flight(m, 1);
	metrics_in_flight(m, -1);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_requests_total{endpoint=\"validate\",resource=\"resourceslices\","
				 "operation=\"UPDATE\",result=\"denied\"}") == 2);
	assert_true(sample(text, "dra_guard_requests_total{endpoint=\"mutate\",resource=\"pods\","
				 "operation=\"CREATE\",result=\"allowed\"}") == 1);
	assert_true(sample(text, "dra_guard_violations_total{rule=\"slice.mapping.shareable\",action=\"warn\"}") == 1);
	assert_true(sample(text, "dra_guard_break_glass_total{resource=\"resourceclaims\"}") == 1);
	assert_true(sample(text, "dra_guard_http_errors_total{code=\"413\"}") == 1);
	assert_true(sample(text, "dra_guard_policy_reload_total{result=\"error\"}") == 1);
	assert_true(sample(text, "dra_guard_tls_reload_total{result=\"success\"}") == 1);
	assert_true(sample(text, "dra_guard_tls_cert_not_after_timestamp_seconds") == 1800000000);
	assert_true(sample(text, "dra_guard_requests_in_flight") == 1);
	free(text);
	metrics_free(m);
}

/* The memory gauges read the budget live; refusals count by kind. */
static void test_memory_gauges_follow_the_budget(void **state)
{
	struct reqmem_limits lim = { .budget = 1 << 20, .cap = { 1024, 1024 }, .pool_keep = 1024, .pool_max = 1 };
	struct reqmem *rm = NULL;
	struct metrics *m;
	char *text;

	(void)state;
	m = new_metrics("dev");
	assert_int_equal(reqmem_new(&lim, &rm), 0);
	metrics_memory_watch(m, rm);
	assert_true(reqmem_charge(rm, 4096));
	metrics_memory_refusal(m, REQMEM_ANSWER);
	metrics_memory_refusal(m, REQMEM_ANSWER);
	metrics_memory_refusal(m, REQMEM_BODY);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_memory_budget_bytes") == 1 << 20);
	assert_true(sample(text, "dra_guard_memory_in_use_bytes") == 4096);
	assert_true(sample(text, "dra_guard_memory_refusals_total{kind=\"body\"}") == 1);
	assert_true(sample(text, "dra_guard_memory_refusals_total{kind=\"answer\"}") == 2);
	free(text);
	reqmem_uncharge(rm, 4096);
	text = render(m);
	assert_true(sample(text, "dra_guard_memory_in_use_bytes") == 0);
	free(text);
	metrics_memory_watch(m, NULL);
	reqmem_free(rm);
	metrics_free(m);
}

/* The connections gauge: no family until the server says how many
 * workers it has, then one series each, moved by opens and closes; a
 * worker number past the cap is ignored rather than written past it. */
static void test_worker_connections_have_a_series_per_worker(void **state)
{
	struct metrics *m;
	char *text;

	(void)state;
	m = new_metrics("dev");
	text = render(m);
	assert_null(strstr(text, "dra_guard_webhook_connections"));
	free(text);
	metrics_workers(m, 3);
	metrics_worker_connection(m, 0, 1);
	metrics_worker_connection(m, 2, 1);
	metrics_worker_connection(m, 2, 1);
	metrics_worker_connection(m, 0, -1);
	metrics_worker_connection(m, METRICS_WORKERS_MAX, 1);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_webhook_connections{worker=\"0\"}") == 0);
	assert_true(sample(text, "dra_guard_webhook_connections{worker=\"1\"}") == 0);
	assert_true(sample(text, "dra_guard_webhook_connections{worker=\"2\"}") == 2);
	assert_true(sample(text, "dra_guard_webhook_connections{worker=\"3\"}") == -1);   /* absent */
	free(text);
	metrics_free(m);
}

static void test_histogram_buckets_are_cumulative(void **state)
{
	static const uint64_t durations_ns[] = { 10000, 60000, 700000, 3000000000ULL, 20000000000ULL };
	struct metrics *m;
	char *text;
	size_t i;

	(void)state;
	m = new_metrics("dev");
	for (i = 0; i < sizeof(durations_ns) / sizeof(durations_ns[0]); i++)
		metrics_request(m, METRICS_EP_VALIDATE, OBJECT_OTHER, ADMISSION_OP_CREATE,
				METRICS_RESULT_ALLOWED, durations_ns[i]);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"5e-05\"}") == 1);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"0.0001\"}") == 2);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"0.001\"}") == 3);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"5\"}") == 4);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"10\"}") == 4);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"+Inf\"}") == 5);
	assert_true(sample(text, "dra_guard_request_duration_seconds_count{endpoint=\"validate\",result=\"allowed\"}") == 5);
	assert_true(sample(text, "dra_guard_request_duration_seconds_sum{endpoint=\"validate\",result=\"allowed\"}") > 23.0);
	assert_true(sample(text, "dra_guard_request_duration_seconds_count{endpoint=\"mutate\",result=\"allowed\"}") == 0);
	/* Each result has its own histogram. */
	metrics_request(m, METRICS_EP_VALIDATE, OBJECT_OTHER, ADMISSION_OP_CREATE, METRICS_RESULT_DENIED, 300000);
	free(text);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"denied\",le=\"0.00025\"}") == 0);
	assert_true(sample(text, "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"denied\",le=\"0.0005\"}") == 1);
	assert_true(sample(text, "dra_guard_request_duration_seconds_count{endpoint=\"validate\",result=\"denied\"}") == 1);
	assert_true(sample(text, "dra_guard_request_duration_seconds_count{endpoint=\"validate\",result=\"allowed\"}") == 5);
	assert_true(sample(text, "dra_guard_request_duration_seconds_count{endpoint=\"validate\",result=\"error\"}") == 0);
	free(text);
	metrics_free(m);
}

static void test_label_values_are_escaped(void **state)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "a\"quote", "a\\\"quote" },
		{ "back\\slash", "back\\\\slash" },
		{ "two\nlines", "two\\nlines" },
		{ "\"\\\n", "\\\"\\\\\\n" },
		{ "", "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;

		buf_init(&b, 256);
		assert_int_equal(prom_escape_label(&b, cases[i].in, strlen(cases[i].in)), 0);
		assert_string_equal(buf_cstr(&b) ? buf_cstr(&b) : "", cases[i].out);
		buf_free(&b);
	}
}

static void test_freeze_and_policy_gauges_carry_escaped_strings(void **state)
{
	struct metrics *m;
	char *text;

	(void)state;
	m = new_metrics("dev");
	metrics_policy_loaded(m, "abc123", 1700000000123000000LL);
	metrics_freeze(m, true, "INC-1: \"hugepages\"\nrollback", 1700000001000000000LL);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_policy_info{hash=\"abc123\"}") == 1);
	assert_true(sample(text, "dra_guard_policy_last_reload_success_timestamp_seconds") > 1700000000.1);
	assert_true(sample(text, "dra_guard_freeze_active") == 1);
	assert_true(sample(text, "dra_guard_freeze_info{reason=\"INC-1: \\\"hugepages\\\"\\nrollback\"}") == 1);
	assert_true(sample(text, "dra_guard_freeze_since_timestamp_seconds") == 1700000001);
	free(text);

	/* What the alerts compare: the policy's limit, and whether the last
	 * load attempt was held back. */
	metrics_freeze_alert_after(m, 5400);
	metrics_policy_reload(m, METRICS_RELOAD_SUCCESS);
	text = render(m);
	assert_true(sample(text, "dra_guard_freeze_alert_after_seconds") == 5400);
	assert_true(sample(text, "dra_guard_policy_last_reload_successful") == 1);
	free(text);
	metrics_policy_reload(m, METRICS_RELOAD_ERROR);
	text = render(m);
	assert_true(sample(text, "dra_guard_policy_last_reload_successful") == 0);
	free(text);
	metrics_policy_unchanged(m);
	text = render(m);
	assert_true(sample(text, "dra_guard_policy_last_reload_successful") == 1);
	assert_true(sample(text, "dra_guard_policy_reload_total{result=\"error\"}") == 1);
	free(text);

	/* Lifted: the info series goes, since returns to 0. */
	metrics_freeze(m, false, "ignored", 5);
	text = render(m);
	assert_true(sample(text, "dra_guard_freeze_active") == 0);
	assert_null(strstr(text, "dra_guard_freeze_info{"));
	assert_true(sample(text, "dra_guard_freeze_since_timestamp_seconds") == 0);
	free(text);
	metrics_free(m);
}

static void test_slice_denials_by_listed_driver(void **state)
{
	char long_name[METRICS_DRIVER_NAME_MAX + 2], name[32];
	struct metrics *m;
	char *text;
	int i;

	(void)state;
	m = new_metrics("dev");
	text = render(m);
	assert_true(sample(text, "dra_guard_slice_denials_total{driver=\"other\"}") == 0);
	free(text);

	metrics_slice_driver_add(m, "gpu.example.com", 15);
	metrics_slice_driver_add(m, "gpu.example.com", 15);       /* once only */
	metrics_slice_driver_add(m, "other", 5);                  /* the catch-all already */
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	metrics_slice_driver_add(m, long_name, strlen(long_name));
	metrics_slice_denied(m, "gpu.example.com", 15);
	metrics_slice_denied(m, "gpu.example.com", 15);
	metrics_slice_denied(m, "gpu.example.co", 14);
	metrics_slice_denied(m, "", 0);
	text = render(m);
	check_exposition(text);
	assert_true(sample(text, "dra_guard_slice_denials_total{driver=\"gpu.example.com\"}") == 2);
	assert_true(sample(text, "dra_guard_slice_denials_total{driver=\"other\"}") == 2);
	assert_null(strstr(text, "driver=\"aaaa"));
	/* One series per label value. */
	assert_ptr_equal(strstr(text, "{driver=\"other\"}"), strrstr_last(text, "{driver=\"other\"}"));
	free(text);

	/* Past the cap, new names stay "other"; the series already there stay. */
	for (i = 0; i < METRICS_DRIVERS_MAX + 5; i++) {
		snprintf(name, sizeof(name), "d%d.example.com", i);
		metrics_slice_driver_add(m, name, strlen(name));
	}
	snprintf(name, sizeof(name), "d%d.example.com", METRICS_DRIVERS_MAX - 2);
	metrics_slice_denied(m, name, strlen(name));
	snprintf(name, sizeof(name), "d%d.example.com", METRICS_DRIVERS_MAX);
	metrics_slice_denied(m, name, strlen(name));
	metrics_slice_denied(m, "gpu.example.com", 15);
	text = render(m);
	check_exposition(text);
	snprintf(name, sizeof(name), "d%d.example.com", METRICS_DRIVERS_MAX - 2);
	{
		char series[96];

		snprintf(series, sizeof(series), "dra_guard_slice_denials_total{driver=\"%s\"}", name);
		assert_true(sample(text, series) == 1);
		snprintf(series, sizeof(series), "dra_guard_slice_denials_total{driver=\"d%d.example.com\"}",
			 METRICS_DRIVERS_MAX - 1);
		assert_true(sample(text, series) == -1);   /* no room left for it */
	}
	assert_true(sample(text, "dra_guard_slice_denials_total{driver=\"gpu.example.com\"}") == 3);
	assert_true(sample(text, "dra_guard_slice_denials_total{driver=\"other\"}") == 3);
	free(text);
	metrics_free(m);
}

static void test_render_fails_whole_when_the_buffer_is_too_small(void **state)
{
	struct metrics *m;
	struct buf b;

	(void)state;
	m = new_metrics("dev");
	buf_init(&b, 1024);
	assert_int_equal(buf_add_cstr(&b, "keep"), 0);
	assert_int_equal(metrics_render(m, &b), -E2BIG);
	assert_string_equal(buf_cstr(&b), "keep");
	buf_free(&b);
	metrics_free(m);
}

static void test_resource_and_code_lookups(void **state)
{
	(void)state;
	assert_int_equal(metrics_kind_of_resource("resourceslices", 14), OBJECT_RESOURCE_SLICE);
	assert_int_equal(metrics_kind_of_resource("resourceclaims", 14), OBJECT_RESOURCE_CLAIM);
	assert_int_equal(metrics_kind_of_resource("pods", 4), OBJECT_POD);
	assert_int_equal(metrics_kind_of_resource("configmaps", 10), OBJECT_CONFIG_MAP);
	assert_int_equal(metrics_kind_of_resource("deployments", 11), OBJECT_OTHER);
	assert_int_equal(metrics_kind_of_resource("pod", 3), OBJECT_OTHER);
	/* No rule reads Nodes: their reviews count as "other". */
	assert_int_equal(metrics_kind_of_resource("nodes", 5), OBJECT_OTHER);
	assert_int_equal(metrics_kind_of_resource("", 0), OBJECT_NONE);
	assert_int_equal(metrics_http_error_of(408), METRICS_HTTP_408);
	assert_int_equal(metrics_http_error_of(413), METRICS_HTTP_413);
	assert_int_equal(metrics_http_error_of(503), METRICS_HTTP_503);
	assert_int_equal(metrics_http_error_of(200), -1);
	assert_int_equal(metrics_http_error_of(418), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_registry_renders_every_family_at_zero),
		cmocka_unit_test(test_counters_move_with_events),
		cmocka_unit_test(test_memory_gauges_follow_the_budget),
		cmocka_unit_test(test_worker_connections_have_a_series_per_worker),
		cmocka_unit_test(test_histogram_buckets_are_cumulative),
		cmocka_unit_test(test_label_values_are_escaped),
		cmocka_unit_test(test_freeze_and_policy_gauges_carry_escaped_strings),
		cmocka_unit_test(test_slice_denials_by_listed_driver),
		cmocka_unit_test(test_render_fails_whole_when_the_buffer_is_too_small),
		cmocka_unit_test(test_resource_and_code_lookups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
