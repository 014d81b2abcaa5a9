/* test_audit.c - the audit-line reader: what it keeps of a write, what it
 * skips (and how early), what it refuses (the times themselves: test_timefmt.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "audit.h"

#define HEAD "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"RequestResponse\"," \
	     "\"auditID\":\"a-1\","
#define USER "\"user\":{\"username\":\"system:kube-scheduler\",\"groups\":[\"system:authenticated\"]},"
#define REF(res, sub) "\"objectRef\":{\"resource\":\"" res "\",\"namespace\":\"ns\",\"name\":\"p\"," \
		      "\"apiVersion\":\"v1\"" sub "},"
#define TAIL "\"responseStatus\":{\"metadata\":{},\"code\":200},\"requestObject\":{\"a\":1}," \
	     "\"responseObject\":{\"kind\":\"Pod\"},\"requestReceivedTimestamp\":\"2026-12-01T10:00:00.000001Z\"," \
	     "\"stageTimestamp\":\"2026-12-01T10:00:00.250000Z\",\"annotations\":{\"x\":\"y\"}}"

static const char *const good = HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"patch\"," USER
	REF("pods", ",\"subresource\":\"status\"") TAIL;

static void test_a_status_write_is_read_whole(void **state)
{
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];

	(void)state;
	assert_int_equal(audit_parse(good, strlen(good), &ev, err, sizeof(err)), 0);
	assert_int_equal(ev.verb, AUDIT_PATCH);
	assert_int_equal(ev.kind, OBJECT_POD);
	assert_true(str_eq_cstr(ev.subresource, "status"));
	assert_true(str_eq_cstr(ev.namespace, "ns"));
	assert_true(str_eq_cstr(ev.name, "p"));
	assert_true(str_eq_cstr(ev.api_version, "v1"));
	assert_true(str_eq_cstr(ev.audit_id, "a-1"));
	assert_int_equal(ev.code, 200);
	assert_true(str_eq_cstr(ev.request_object, "{\"a\":1}"));
	assert_true(str_eq_cstr(ev.response_object, "{\"kind\":\"Pod\"}"));
	assert_true(str_has_prefix(ev.user, "{\"username\":\"system:kube-scheduler\""));
	assert_int_equal(ev.impersonated.len, 0);
	assert_true(ev.stage_ns == 1796119200250000000LL);
}

struct skip_case {
	const char *what;
	const char *line;
};

/* Each is skipped: 1, whatever follows the member that decides it (here,
 * text that is not JSON: the reader stopped before it). */
static void test_events_the_replay_does_not_read_are_skipped_early(void **state)
{
	static const struct skip_case cases[] = {
		{ "another stage", HEAD "\"stage\":\"RequestReceived\",garbage" },
		{ "a read", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"get\",garbage" },
		{ "a watch", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"watch\",garbage" },
		{ "another resource", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"update\"," USER
			"\"objectRef\":{\"resource\":\"leases\",\"namespace\":\"kube-node-lease\",\"name\":\"n\","
			"\"apiGroup\":\"coordination.k8s.io\",\"apiVersion\":\"v1\"},garbage" },
		{ "pods of another group", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"update\","
			"\"objectRef\":{\"resource\":\"pods\",\"apiGroup\":\"metrics.k8s.io\",\"name\":\"x\"},garbage" },
		{ "a deletecollection", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"delete\"," USER
			"\"objectRef\":{\"resource\":\"pods\",\"namespace\":\"ns\",\"apiVersion\":\"v1\"}," TAIL },
		{ "a non-resource request", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"create\"," USER TAIL },
	};
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = audit_parse(cases[i].line, strlen(cases[i].line), &ev, err, sizeof(err));

		if (rc != 1)
			fail_msg("%s: %d (%s), expected 1", cases[i].what, rc, err);
	}
}

static void test_corrupt_events_say_where(void **state)
{
	static const struct skip_case cases[] = {
		{ "expected an object", "not json" },
		{ "stage given twice", HEAD "\"stage\":\"ResponseComplete\",\"stage\":\"ResponseComplete\"}" },
		{ "verb", HEAD "\"stage\":\"ResponseComplete\",\"verb\":7}" },
		{ "audit.k8s.io/v1", "{\"apiVersion\":\"audit.k8s.io/v1beta1\",\"stage\":\"ResponseComplete\"}" },
		{ "expected Event", "{\"kind\":\"EventList\"}" },
		{ "stageTimestamp \"yesterday\": expected an RFC 3339 time", HEAD "\"stage\":\"ResponseComplete\","
			"\"verb\":\"patch\"," USER REF("pods", "") "\"stageTimestamp\":\"yesterday\"}" },
		/* the times themselves: test_timefmt.c */
		{ "stageTimestamp \"1969-12-31T23:59:59Z\": outside 1970 to 2261", HEAD "\"stage\":\"ResponseComplete\","
			"\"verb\":\"patch\"," USER REF("pods", "") "\"stageTimestamp\":\"1969-12-31T23:59:59Z\"}" },
		{ "stageTimestamp \"2026-02-29T10:00:00Z\": expected an RFC 3339 time", HEAD "\"stage\":\"ResponseComplete\","
			"\"verb\":\"patch\"," USER REF("pods", "") "\"stageTimestamp\":\"2026-02-29T10:00:00Z\"}" },
		{ "responseStatus.code", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"patch\"," USER
			REF("pods", "") "\"responseStatus\":{\"code\":\"200\"}}" },
		{ "responseObject", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"patch\"," USER
			REF("pods", "") "\"responseObject\":[1]}" },
		/* an event that is read is validated to its end */
		{ "an audit event", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"patch\"," USER
			REF("pods", "") "\"responseObject\":{},\"x\":tru}" },
		{ "an audit event", HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"patch\"," USER
			REF("pods", "") "\"stageTimestamp\":\"2026-12-01T10:00:00Z\"} trailing" },
		{ "without stage", "{\"verb\":\"create\"}" },
	};
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = audit_parse(cases[i].line, strlen(cases[i].line), &ev, err, sizeof(err));

		if (rc != -EBADMSG || !strstr(err, cases[i].what))
			fail_msg("case %zu: %d \"%s\", expected -EBADMSG naming %s", i, rc, err, cases[i].what);
	}
}

static void test_impersonation_and_null_objects(void **state)
{
	static const char line[] = HEAD "\"stage\":\"ResponseComplete\",\"verb\":\"delete\"," USER
		"\"impersonatedUser\":{\"username\":\"system:node:n1\"},"
		"\"objectRef\":{\"resource\":\"resourceslices\",\"name\":\"s\",\"apiGroup\":\"resource.k8s.io\","
		"\"apiVersion\":\"v1\"},\"responseStatus\":{\"code\":200},\"requestObject\":null,"
		"\"stageTimestamp\":\"2026-12-01T10:00:00+01:00\"}";
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];

	(void)state;
	assert_int_equal(audit_parse(line, strlen(line), &ev, err, sizeof(err)), 0);
	assert_int_equal(ev.kind, OBJECT_RESOURCE_SLICE);
	assert_int_equal(ev.verb, AUDIT_DELETE);
	assert_true(str_eq_cstr(ev.impersonated, "{\"username\":\"system:node:n1\"}"));
	assert_int_equal(ev.request_object.len, 0);
	assert_int_equal(ev.response_object.len, 0);
	assert_true(ev.stage_ns == 1796119200000000000LL - 3600000000000LL);
}

/* The API server's encoder writes '&' as \u0026; a dryRun parameter with
 * any value is a dry run (the API server refuses values other than All). */
static void test_dry_run_is_read_from_the_request_uri(void **state)
{
	static const struct {
		const char *uri;
		bool dry_run;
	} cases[] = {
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?dryRun=All", true },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?fieldManager=x\\u0026dryRun=All", true },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?fieldManager=x&dryRun=All&y=1", true },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status", false },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?dryRun=", false },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?xdryRun=All", false },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/dryRun=All", false },
		{ "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status?fieldManager=dryRun=All", false },
	};
	char line[1024], err[AUDIT_ERROR_MAX];
	struct audit_event ev;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = snprintf(line, sizeof(line),
				 "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"stage\":\"ResponseComplete\","
				 "\"requestURI\":\"%s\",\"verb\":\"update\",\"objectRef\":{\"resource\":\"resourceclaims\","
				 "\"namespace\":\"a\",\"name\":\"c\",\"apiGroup\":\"resource.k8s.io\",\"apiVersion\":\"v1\","
				 "\"subresource\":\"status\"},\"responseStatus\":{\"code\":200},"
				 "\"stageTimestamp\":\"2026-12-01T10:00:00Z\"}", cases[i].uri);

		assert_true(n > 0 && (size_t)n < sizeof(line));
		assert_int_equal(audit_parse(line, (size_t)n, &ev, err, sizeof(err)), 0);
		if (ev.dry_run != cases[i].dry_run)
			fail_msg("%s: dry_run %d", cases[i].uri, ev.dry_run);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_status_write_is_read_whole),
		cmocka_unit_test(test_events_the_replay_does_not_read_are_skipped_early),
		cmocka_unit_test(test_corrupt_events_say_where),
		cmocka_unit_test(test_impersonation_and_null_objects),
		cmocka_unit_test(test_dry_run_is_read_from_the_request_uri),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
