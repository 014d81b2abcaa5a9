/* test_review.c - AdmissionReview responses as the API server reads them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "review.h"

static void test_base64_rfc4648_vectors(void **state)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	size_t i;

	(void)state;
	for (i = 0; i < 7; i++) {
		struct buf b;

		buf_init(&b, 64);
		assert_int_equal(review_base64(in[i], strlen(in[i]), &b), 0);
		assert_string_equal(buf_cstr(&b), out[i]);
		buf_free(&b);
	}
}

static json_t *parse(const struct buf *b)
{
	json_t *j = json_loads(buf_cstr(b), JSON_REJECT_DUPLICATES, NULL);

	assert_non_null(j);
	return j;
}

static void test_allowed_response_echoes_uid(void **state)
{
	struct verdict v;
	struct buf b;
	json_t *j, *r;

	(void)state;
	verdict_init(&v, 8);
	buf_init(&b, 4096);
	assert_int_equal(review_encode(STR_LIT("705ab4f5-6393-11e8-b7cc-42010a800002"), &v, false, &b), 0);
	j = parse(&b);
	assert_string_equal(json_string_value(json_object_get(j, "apiVersion")), "admission.k8s.io/v1");
	r = json_object_get(j, "response");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), "705ab4f5-6393-11e8-b7cc-42010a800002");
	assert_true(json_is_true(json_object_get(r, "allowed")));
	assert_null(json_object_get(r, "status"));
	assert_null(json_object_get(r, "patch"));
	json_decref(j);
	buf_free(&b);
}

static void test_denial_carries_status_warnings_and_audit(void **state)
{
	struct str warnings[1] = { STR_LIT("[slice.shape.future] careful") };
	struct audit_annotation audit[1] = { { STR_LIT("policy-hash"), STR_LIT("abc") } };
	struct verdict v;
	struct buf b;
	json_t *j, *r, *st;

	(void)state;
	verdict_init(&v, 8);
	v.allowed = false;
	v.code = 403;
	v.message = STR_LIT("ResourceSlice \"x\" denied by dra-guard: [slice.mapping.name] \"pods\" <bad>");
	v.warnings = warnings;
	v.nwarnings = 1;
	v.audit = audit;
	v.naudit = 1;
	v.patch = STR_LIT("[{\"op\":\"add\"}]");
	buf_init(&b, 4096);
	assert_int_equal(review_encode(STR_LIT("u\"1"), &v, true, &b), 0);
	j = parse(&b);
	r = json_object_get(j, "response");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), "u\"1");
	assert_true(json_is_false(json_object_get(r, "allowed")));
	st = json_object_get(r, "status");
	assert_int_equal(json_integer_value(json_object_get(st, "code")), 403);
	assert_string_equal(json_string_value(json_object_get(st, "reason")), "Forbidden");
	assert_string_equal(json_string_value(json_object_get(st, "message")), v.message.ptr);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "warnings"), 0)),
			    "[slice.shape.future] careful");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "auditAnnotations"),
							      "policy-hash")), "abc");
	assert_null(json_object_get(r, "patch"));          /* never on a denial */
	json_decref(j);
	buf_free(&b);
}

static void test_patch_only_from_the_mutating_endpoint(void **state)
{
	struct verdict v;
	struct buf b;
	json_t *j, *r;

	(void)state;
	verdict_init(&v, 8);
	v.patch = STR_LIT("[{\"op\":\"remove\",\"path\":\"/metadata/labels/x\"}]");
	buf_init(&b, 4096);
	assert_int_equal(review_encode(STR_LIT("1"), &v, false, &b), 0);
	j = parse(&b);
	assert_null(json_object_get(json_object_get(j, "response"), "patch"));
	json_decref(j);
	buf_reset(&b);
	assert_int_equal(review_encode(STR_LIT("1"), &v, true, &b), 0);
	j = parse(&b);
	r = json_object_get(j, "response");
	assert_string_equal(json_string_value(json_object_get(r, "patchType")), "JSONPatch");
	assert_string_equal(json_string_value(json_object_get(r, "patch")),
			    "W3sib3AiOiJyZW1vdmUiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy94In1d");
	json_decref(j);
	buf_free(&b);
}

/* The reason beside each status code the guard answers with, as
 * metav1.StatusReason names it (kubectl prints it: "Error from server
 * (ServiceUnavailable)"). */
static void test_error_reasons(void **state)
{
	static const struct {
		int32_t code;
		const char *reason;
	} cases[] = {
		{ 400, "BadRequest" }, { 403, "Forbidden" }, { 413, "RequestEntityTooLarge" },
		{ 422, "Invalid" }, { 500, "InternalError" }, { 503, "ServiceUnavailable" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;
		json_t *j, *st;

		buf_init(&b, 4096);
		assert_int_equal(review_encode_error(STR_LIT("9"), cases[i].code, "not judged", &b), 0);
		j = parse(&b);
		st = json_object_get(json_object_get(j, "response"), "status");
		assert_int_equal(json_integer_value(json_object_get(st, "code")), cases[i].code);
		assert_string_equal(json_string_value(json_object_get(st, "reason")), cases[i].reason);
		json_decref(j);
		buf_free(&b);
	}
}

static void test_error_response_and_cap(void **state)
{
	struct buf b;
	json_t *j, *st;

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(review_encode_error(STR_LIT("9"), 400, "cannot decode", &b), 0);
	j = parse(&b);
	st = json_object_get(json_object_get(j, "response"), "status");
	assert_int_equal(json_integer_value(json_object_get(st, "code")), 400);
	assert_string_equal(json_string_value(json_object_get(st, "reason")), "BadRequest");
	json_decref(j);
	buf_free(&b);
	buf_init(&b, 40);
	assert_int_equal(review_encode_error(STR_LIT("9"), 400, "cannot decode", &b), -E2BIG);
	assert_int_equal(buf_len(&b), 0);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_rfc4648_vectors),
		cmocka_unit_test(test_allowed_response_echoes_uid),
		cmocka_unit_test(test_denial_carries_status_warnings_and_audit),
		cmocka_unit_test(test_patch_only_from_the_mutating_endpoint),
		cmocka_unit_test(test_error_reasons),
		cmocka_unit_test(test_error_response_and_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
