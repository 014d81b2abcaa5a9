/* test_admission.c - one AdmissionReview in, one answer out.
 *
 * What the API server makes of each answer decides what these tests hold
 * the module to: an HTTP error, or a response that is not a review with the
 * request's uid, is a failed call, and a webhook registered with
 * failurePolicy: Ignore (the guard's pod-status entry) then lets the write
 * through. So a review the guard cannot judge is answered 200 with
 * allowed: false, and only a body that is no AdmissionReview at all gets a
 * 400. The mutating endpoint never denies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "buf.h"
#include "policy.h"
#include "testutil.h"

#define ARENA_CAP (64u << 20)

struct answer {
	int rc;
	int http_status;
	json_t *root;           /* the body as JSON, or NULL */
	json_t *response;       /* root.response */
};

static void answer_free(struct answer *a)
{
	json_decref(a->root);
}

static struct answer ask(const char *body, size_t len, bool mutate, const struct decode_limits *lim,
			 size_t arena_cap)
{
	struct policy *pol = NULL;
	struct engine_options opt;
	struct admission_result res;
	struct arena *a = NULL;
	struct answer ans;
	struct buf out;

	memset(&opt, 0, sizeof(opt));
	opt.mutate = mutate;
	opt.mutating_endpoint = mutate;
	opt.self_name = STR_LIT("dra-guard-policy");
	opt.self_namespace = STR_LIT("dra-guard");
	assert_int_equal(policy_builtin(&pol), 0);
	assert_int_equal(arena_new(arena_cap, &a), 0);
	buf_init(&out, 16u << 20);
	memset(&ans, 0, sizeof(ans));
	ans.rc = admission_handle(pol, NULL, 0, &opt, lim, body, len, a, &out, &res);
	ans.http_status = res.http_status;
	if (ans.rc == 0) {
		ans.root = json_loadb(buf_cstr(&out), buf_len(&out), JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(ans.root);
		ans.response = json_object_get(ans.root, "response");
	}
	buf_free(&out);
	arena_free(a);
	policy_free(pol);
	return ans;
}

/* A 200 review answer to uid that does not allow, with status code. */
static void assert_denied(const struct answer *a, const char *uid, int code, const char *needle)
{
	json_t *st;

	assert_int_equal(a->rc, 0);
	assert_int_equal(a->http_status, 200);
	assert_non_null(a->response);
	assert_string_equal(json_string_value(json_object_get(a->response, "uid")), uid);
	assert_true(json_is_false(json_object_get(a->response, "allowed")));
	st = json_object_get(a->response, "status");
	assert_int_equal(json_integer_value(json_object_get(st, "code")), code);
	if (needle && !strstr(json_string_value(json_object_get(st, "message")), needle))
		fail_msg("message %s lacks %s", json_string_value(json_object_get(st, "message")), needle);
	assert_null(json_object_get(a->response, "patch"));
}

static void assert_allowed(const struct answer *a, const char *uid)
{
	assert_int_equal(a->rc, 0);
	assert_int_equal(a->http_status, 200);
	assert_string_equal(json_string_value(json_object_get(a->response, "uid")), uid);
	assert_true(json_is_true(json_object_get(a->response, "allowed")));
}

/* A pods/status review by a kubelet that rewrites the node-allocatable
 * amounts (status.pod.writer denies it), with userInfo before the uid and
 * the given extra text inside userInfo. */
static void pod_status_review(struct buf *b, const char *user_tail)
{
	testutil_buf_add(b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	       "\"userInfo\":{\"username\":\"system:node:worker-1\"%s},"
	       "\"uid\":\"pod-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	       "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
	       "\"subResource\":\"status\",\"operation\":\"UPDATE\","
	       "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"status\":"
	       "{\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"c\",\"resources\":"
	       "{\"cpu\":\"64\"}}]}},"
	       "\"oldObject\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"status\":"
	       "{\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"c\",\"resources\":"
	       "{\"cpu\":\"1\"}}]}}}}", user_tail);
}

/* An identity too big to judge (more groups, or more values under a key
 * the rules read, than the decoder keeps) is a denial inside a review, even
 * when userInfo comes before the uid: never a 400 a fail-open webhook
 * would let through. */
static void test_oversized_identity_is_a_denial_not_a_failed_call(void **state)
{
	struct buf b, tail;
	struct answer a;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	buf_init(&tail, 64u << 20);
	testutil_buf_add(&tail, ",\"groups\":[");
	for (i = 0; i < 4097; i++)
		testutil_buf_add(&tail, "%s\"g%d\"", i ? "," : "", i);
	testutil_buf_add(&tail, "]");
	pod_status_review(&b, buf_cstr(&tail));
	a = ask(buf_cstr(&b), buf_len(&b), false, NULL, ARENA_CAP);
	assert_denied(&a, "pod-1", 400, "more than 4096 entries");
	answer_free(&a);

	buf_reset(&b);
	buf_reset(&tail);
	testutil_buf_add(&tail, ",\"extra\":{\"authentication.kubernetes.io/node-name\":[");
	for (i = 0; i < 4097; i++)
		testutil_buf_add(&tail, "%s\"n%d\"", i ? "," : "", i);
	testutil_buf_add(&tail, "]}");
	pod_status_review(&b, buf_cstr(&tail));
	a = ask(buf_cstr(&b), buf_len(&b), false, NULL, ARENA_CAP);
	assert_denied(&a, "pod-1", 400, "userInfo.extra");
	answer_free(&a);
	buf_free(&tail);
	buf_free(&b);
}

/* Extras no rule reads are not limited at all: the review is judged, and
 * this one is refused by its rule. */
static void test_unread_extras_are_judged_not_refused(void **state)
{
	struct buf b, tail;
	struct answer a;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	buf_init(&tail, 64u << 20);
	testutil_buf_add(&tail, ",\"extra\":{");
	for (i = 0; i < 300; i++)
		testutil_buf_add(&tail, "\"example.com/k%d\":[\"v\"],", i);
	testutil_buf_add(&tail, "\"example.com/many\":[");
	for (i = 0; i < 5000; i++)
		testutil_buf_add(&tail, "%s\"v\"", i ? "," : "");
	testutil_buf_add(&tail, "]}");
	pod_status_review(&b, buf_cstr(&tail));
	a = ask(buf_cstr(&b), buf_len(&b), false, NULL, ARENA_CAP);
	assert_denied(&a, "pod-1", 403, "[status.pod.writer]");
	answer_free(&a);
	buf_free(&tail);
	buf_free(&b);
}

/* Nesting past a configured depth is a denial inside a review; the
 * default depth takes what the API server can send. */
static void test_depth_is_a_denial_and_the_default_is_generous(void **state)
{
	struct buf b;
	struct decode_limits lim;
	struct answer a;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	testutil_buf_add(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	       "\"uid\":\"deep\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"kind\":\"ResourceClaim\"},"
	       "\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
	       "\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"spec\":{\"devices\":{\"config\":[{\"opaque\":"
	       "{\"driver\":\"d.example.com\",\"parameters\":");
	for (i = 0; i < 5000; i++)
		testutil_buf_add(&b, "{\"a\":");
	testutil_buf_add(&b, "1");
	for (i = 0; i < 5000; i++)
		testutil_buf_add(&b, "}");
	testutil_buf_add(&b, "}}]}}}}}");
	a = ask(buf_cstr(&b), buf_len(&b), false, NULL, ARENA_CAP);
	assert_allowed(&a, "deep");
	answer_free(&a);

	decode_limits_default(&lim);
	lim.max_depth = 64;
	a = ask(buf_cstr(&b), buf_len(&b), false, &lim, ARENA_CAP);
	assert_denied(&a, "deep", 400, "nesting deeper than 64 levels");
	answer_free(&a);
	a = ask(buf_cstr(&b), buf_len(&b), true, &lim, ARENA_CAP);
	assert_allowed(&a, "deep");
	assert_null(json_object_get(a.response, "patch"));
	answer_free(&a);
	buf_free(&b);
}

/* Only a body that is not an AdmissionReview with a uid gets HTTP 400:
 * there is no review to answer inside. */
static void test_bad_request_only_without_a_review(void **state)
{
	static const char *const bodies[] = {
		"not json",
		"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"operation\":\"CREATE\"}}",
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct answer a = ask(bodies[i], strlen(bodies[i]), false, NULL, ARENA_CAP);

		assert_int_equal(a.rc, 0);
		assert_int_equal(a.http_status, 400);
		assert_string_equal(json_string_value(json_object_get(a.root, "kind")), "Status");
		answer_free(&a);
	}
	/* A review whose operation is no operation still has a uid to answer. */
	{
		const char *body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
				   "\"request\":{\"operation\":\"PATCH\",\"uid\":\"u-9\",\"kind\":{\"group\":\"\","
				   "\"version\":\"v1\",\"kind\":\"Pod\"}}}";
		struct answer a = ask(body, strlen(body), false, NULL, ARENA_CAP);

		assert_denied(&a, "u-9", 400, "PATCH");
		answer_free(&a);
	}
}

/* The mutating endpoint labels and never denies: not for a rule, not for
 * an object it cannot decode. */
static void test_mutating_endpoint_never_denies(void **state)
{
	const char *rule = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			   "\"uid\":\"m-1\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
			   "\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
			   "\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},\"spec\":"
			   "{\"driver\":\"d.example.com\",\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":1,"
			   "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"d\",\"nodeAllocatableResourceMappings\":"
			   "{\"pods\":{\"allocationMultiplier\":\"1\"}}}]}}}}";
	const char *broken = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			     "\"uid\":\"m-2\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
			     "\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\",\"object\":{\"spec\":"
			     "{\"devices\":\"many\"}}}}";
	struct answer a;

	(void)state;
	a = ask(rule, strlen(rule), true, NULL, ARENA_CAP);
	assert_allowed(&a, "m-1");
	assert_string_equal(json_string_value(json_object_get(a.response, "patchType")), "JSONPatch");
	answer_free(&a);
	a = ask(rule, strlen(rule), false, NULL, ARENA_CAP);
	assert_denied(&a, "m-1", 403, "[slice.mapping.name]");
	answer_free(&a);

	a = ask(broken, strlen(broken), true, NULL, ARENA_CAP);
	assert_allowed(&a, "m-2");
	assert_null(json_object_get(a.response, "patch"));
	answer_free(&a);
	a = ask(broken, strlen(broken), false, NULL, ARENA_CAP);
	assert_denied(&a, "m-2", 400, "spec.devices");
	answer_free(&a);
}

/* The rules skip a mapping judged clean before only when what else they
 * read of its device is the same too. Here every device repeats a's
 * mappings word for word, but b is not shareable, d lacks the capacity its
 * mapping names, and the capacity named has another value in f and
 * another requestPolicy in g: each is still refused, at its own path. */
static void test_repeated_mappings_are_judged_for_each_device(void **state)
{
#define SHARE_MAP "\"nodeAllocatableResourceMappings\":{\"memory\":{\"capacityKey\":\"x.io/mem\"}," \
	"\"cpu\":{\"allocationMultiplier\":\"1\"}}"
#define SHARE_CAP "\"capacity\":{\"x.io/mem\":{\"value\":\"8Gi\",\"requestPolicy\":{\"default\":\"1Gi\"," \
	"\"validRange\":{\"min\":\"1Gi\",\"step\":\"1Gi\"}}}}"
	const char *body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			   "\"uid\":\"r-1\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
			   "\"kind\":\"ResourceSlice\"},\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
			   "\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},\"spec\":"
			   "{\"driver\":\"d.example.com\",\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":1,"
			   "\"resourceSliceCount\":1},\"devices\":["
			   "{\"name\":\"a\",\"allowMultipleAllocations\":true," SHARE_CAP "," SHARE_MAP "},"
			   "{\"name\":\"b\",\"allowMultipleAllocations\":false," SHARE_CAP "," SHARE_MAP "},"
			   "{\"name\":\"c\",\"allowMultipleAllocations\":true," SHARE_CAP "," SHARE_MAP "},"
			   "{\"name\":\"d\",\"allowMultipleAllocations\":true,\"capacity\":{\"x.io/cores\":"
			   "{\"value\":\"8\"}}," SHARE_MAP "},"
			   "{\"name\":\"e\",\"allowMultipleAllocations\":true," SHARE_CAP "," SHARE_MAP "},"
			   "{\"name\":\"f\",\"allowMultipleAllocations\":true,\"capacity\":{\"x.io/mem\":"
			   "{\"value\":\"1.5\"}}," SHARE_MAP "},"
			   "{\"name\":\"g\",\"allowMultipleAllocations\":true,\"capacity\":{\"x.io/mem\":"
			   "{\"value\":\"8Gi\",\"requestPolicy\":{\"default\":\"0.5\",\"validRange\":{\"min\":\"1Gi\","
			   "\"step\":\"1Gi\"}}}}," SHARE_MAP "}]}}}}";
	const char *msg;
	struct answer a;

	(void)state;
	a = ask(body, strlen(body), false, NULL, ARENA_CAP);
	assert_denied(&a, "r-1", 403, "[slice.mapping.shareable]");
	msg = json_string_value(json_object_get(json_object_get(a.response, "status"), "message"));
	if (!strstr(msg, "spec.devices[1].nodeAllocatableResourceMappings[\"memory\"].capacityKey") ||
	    !strstr(msg, "spec.devices[3].nodeAllocatableResourceMappings[\"memory\"].capacityKey: \"x.io/mem\" "
			 "is not a capacity of device \"d\"") ||
	    !strstr(msg, "spec.devices[5].nodeAllocatableResourceMappings[\"memory\"].capacityKey: consuming 1500m") ||
	    !strstr(msg, "spec.devices[6].nodeAllocatableResourceMappings[\"memory\"].capacityKey: consuming 500m") ||
	    strstr(msg, "devices[0]") || strstr(msg, "devices[2]") || strstr(msg, "devices[4]"))
		fail_msg("unexpected message: %s", msg);
	answer_free(&a);
#undef SHARE_MAP
#undef SHARE_CAP
}

/* Out of room before the uid was read: still an answer to that uid. */
static void test_exhausted_arena_still_answers_the_uid(void **state)
{
	struct buf b, tail;
	struct answer a;
	int i;

	(void)state;
	buf_init(&b, 64u << 20);
	buf_init(&tail, 64u << 20);
	testutil_buf_add(&tail, ",\"groups\":[");
	for (i = 0; i < 4000; i++)
		testutil_buf_add(&tail, "%s\"group-%d\"", i ? "," : "", i);
	testutil_buf_add(&tail, "]");
	pod_status_review(&b, buf_cstr(&tail));
	a = ask(buf_cstr(&b), buf_len(&b), false, NULL, 16u << 10);
	assert_denied(&a, "pod-1", 500, "limits");
	answer_free(&a);
	buf_free(&tail);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oversized_identity_is_a_denial_not_a_failed_call),
		cmocka_unit_test(test_unread_extras_are_judged_not_refused),
		cmocka_unit_test(test_depth_is_a_denial_and_the_default_is_generous),
		cmocka_unit_test(test_bad_request_only_without_a_review),
		cmocka_unit_test(test_mutating_endpoint_never_denies),
		cmocka_unit_test(test_repeated_mappings_are_judged_for_each_device),
		cmocka_unit_test(test_exhausted_arena_still_answers_the_uid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
