/* test_review_prefix.c - the uid of a review from the first bytes of its body. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "review_prefix.h"
#include "testutil.h"

#define HEAD "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
#define UID "705ab4f5-6393-11e8-b7cc-42010a800002"

/* How the API server writes a review (encoding/json, fields in declaration
 * order): kind, apiVersion, then request with uid first. */
static const char api_server_review[] =
	HEAD "\"request\":{\"uid\":\"" UID "\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	"\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"subResource\":\"status\","
	"\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"name\":\"p\",\"namespace\":\"default\","
	"\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"system:node:n1\",\"groups\":[\"system:nodes\"]},"
	"\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"uid\":\"pod-uid\","
	"\"labels\":{\"a\":\"true\",\"b\":null,\"c\":1.5e3}},\"spec\":{\"priority\":-7,\"x\":false}},"
	"\"oldObject\":null,\"dryRun\":false}}";

struct prefix_case {
	const char *what;
	const char *text;             /* NULL: built by the test */
	int want;
	const char *uid;              /* when want is 0 */
};

static void check_case(const char *what, const char *text, size_t len, int want, const char *uid_want)
{
	char tmp[2048];
	struct str uid = { NULL, 0 };
	int rc = review_prefix_uid(text, len, tmp, sizeof(tmp), &uid);

	if (rc != want)
		fail_msg("%s: %d, expected %d", what, rc, want);
	if (want == 0 && (uid.len != strlen(uid_want) || memcmp(uid.ptr, uid_want, uid.len) != 0))
		fail_msg("%s: uid \"%.*s\", expected \"%s\"", what, (int)uid.len, uid.ptr, uid_want);
}

static void test_prefix_cases(void **state)
{
	static const struct prefix_case cases[] = {
		{ "uid first, as the API server writes", api_server_review, 0, UID },
		{ "apiVersion before kind", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":\"u1\"}}", 0, "u1" },
		{ "uid after other members", HEAD "\"request\":{\"kind\":{\"kind\":\"Pod\"},\"object\":{\"uid\":\"inner\","
		  "\"a\":[1,2,{\"uid\":\"x\"}]},\"uid\":\"outer\"}}", 0, "outer" },
		{ "request after other members", "{\"x\":{\"request\":{\"uid\":\"nested\"}},"
		  "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"top\"},\"apiVersion\":\"admission.k8s.io/v1\"}",
		  0, "top" },
		{ "only a nested request", HEAD "\"other\":{\"request\":{\"uid\":\"nested\"}},\"response\":{\"uid\":\"r\"}}",
		  -EBADMSG, NULL },
		{ "nested request, then the text ends", HEAD "\"other\":{\"request\":{\"uid\":\"nested\"}},\"req",
		  -ENOENT, NULL },
		{ "escaped uid", HEAD "\"request\":{\"uid\":\"a\\u003cb\\\"c\\\\d\\u00e9\"}}", 0, "a<b\"c\\d\xc3\xa9" },
		{ "escaped member names", "{\"k\\u0069nd\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io\\/v1\","
		  "\"req\\u0075est\":{\"\\u0075id\":\"e\"}}", 0, "e" },
		{ "whitespace around everything", " {\n \"kind\" : \"AdmissionReview\" ,\n \"apiVersion\" : "
		  "\"admission.k8s.io/v1\" ,\n \"request\" : {\n  \"uid\" : \"ws\" } } \n", 0, "ws" },
		{ "text ends after the uid", HEAD "\"request\":{\"uid\":\"" UID "\",\"kind\":{\"gro", 0, UID },
		{ "text ends inside the uid", HEAD "\"request\":{\"uid\":\"705ab4f5-63", -ENOENT, NULL },
		{ "text ends inside an escape of the uid", HEAD "\"request\":{\"uid\":\"ab\\u00", -ENOENT, NULL },
		{ "text ends before the request", HEAD, -ENOENT, NULL },
		{ "text ends before apiVersion", "{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"},\"api",
		  -ENOENT, NULL },
		{ "empty text", "", -ENOENT, NULL },
		{ "duplicate uid", HEAD "\"request\":{\"uid\":\"a\",\"uid\":\"b\"}}", -EBADMSG, NULL },
		{ "duplicate uid, one escaped", HEAD "\"request\":{\"uid\":\"a\",\"u\\u0069d\":\"b\"", -EBADMSG, NULL },
		{ "duplicate uid after the text's end", HEAD "\"request\":{\"uid\":\"a\",\"ui", 0, "a" },
		{ "duplicate request", HEAD "\"request\":{\"uid\":\"a\"},\"request\":{\"uid\":\"b\"}}", -EBADMSG, NULL },
		{ "duplicate kind", HEAD "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"a\"}}", -EBADMSG, NULL },
		{ "duplicate apiVersion", HEAD "\"request\":{\"uid\":\"a\"},\"apiVersion\":\"admission.k8s.io/v1\"}",
		  -EBADMSG, NULL },
		{ "v1beta1 (the decoder reads v1 only)", "{\"kind\":\"AdmissionReview\",\"apiVersion\":"
		  "\"admission.k8s.io/v1beta1\",\"request\":{\"uid\":\"b1\"}}", -EBADMSG, NULL },
		{ "another kind", "{\"kind\":\"Status\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"s\"}}",
		  -EBADMSG, NULL },
		{ "no apiVersion", "{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"a\"}}", -EBADMSG, NULL },
		{ "no uid", HEAD "\"request\":{\"name\":\"a\"}}", -EBADMSG, NULL },
		{ "empty uid", HEAD "\"request\":{\"uid\":\"\"}}", -EBADMSG, NULL },
		{ "uid not a string", HEAD "\"request\":{\"uid\":42}}", -EBADMSG, NULL },
		{ "uid null", HEAD "\"request\":{\"uid\":null}}", -EBADMSG, NULL },
		{ "request null", HEAD "\"request\":null}", -EBADMSG, NULL },
		{ "request an array", HEAD "\"request\":[{\"uid\":\"a\"}]}", -EBADMSG, NULL },
		{ "kind not a string", "{\"kind\":[],\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"a\"}}",
		  -EBADMSG, NULL },
		{ "garbage", "garbage", -EBADMSG, NULL },
		{ "an array", "[" HEAD "\"request\":{\"uid\":\"a\"}}]", -EBADMSG, NULL },
		{ "garbage after the uid", HEAD "\"request\":{\"uid\":\"a\",\"kind\":tru e}}", -EBADMSG, NULL },
		{ "garbage before the uid", HEAD "\"request\":{\"x\":01,\"uid\":\"a\"}}", -EBADMSG, NULL },
		{ "a control byte in the uid", HEAD "\"request\":{\"uid\":\"a\tb\"}}", -EBADMSG, NULL },
		{ "a bad escape in the uid", HEAD "\"request\":{\"uid\":\"a\\qb\"}}", -EBADMSG, NULL },
		{ "a lone surrogate in the uid", HEAD "\"request\":{\"uid\":\"a\\ud800b\"}}", -EBADMSG, NULL },
		{ "invalid UTF-8 in the uid", HEAD "\"request\":{\"uid\":\"a\xff\"}}", -EBADMSG, NULL },
		{ "trailing bytes after the review", HEAD "\"request\":{\"uid\":\"a\"}} x", -EBADMSG, NULL },
		{ "a second value after the review", HEAD "\"request\":{\"uid\":\"a\"}}{}", -EBADMSG, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(cases[i].what, cases[i].text, strlen(cases[i].text), cases[i].want, cases[i].uid);
}

/* Cut the API server's review at every byte: nothing until the uid's
 * closing quote, the uid from there on; the scan never reads past the cut
 * (the text is copied to a buffer of exactly its length, which ASan
 * watches). */
static void test_every_cut_of_a_real_review(void **state)
{
	const char *close = strstr(api_server_review, UID "\"");
	size_t full = strlen(api_server_review), at = (size_t)(close - api_server_review) + strlen(UID) + 1, n;

	(void)state;
	for (n = 0; n <= full; n++) {
		char *cut = malloc(n ? n : 1);
		char what[64];

		assert_non_null(cut);
		memcpy(cut, api_server_review, n);
		snprintf(what, sizeof(what), "cut at %zu of %zu", n, full);
		check_case(what, cut, n, n < at ? -ENOENT : 0, UID);
		free(cut);
	}
}

/* A uid after a large object member, as a hand-written client may send:
 * found when the prefix reaches it, not when it stops inside the object. */
static void test_uid_after_a_large_member(void **state)
{
	struct buf b;
	size_t i, inside;

	(void)state;
	buf_init(&b, 1 << 20);
	testutil_buf_add(&b, "%s\"request\":{\"object\":{\"metadata\":{\"annotations\":{", HEAD);
	for (i = 0; i < 500; i++)
		testutil_buf_add(&b, "%s\"k%zu\":\"%0100zu\"", i ? "," : "", i, i);
	testutil_buf_add(&b, "}}},\"uid\":\"late\"}}");
	check_case("whole", buf_cstr(&b), buf_len(&b), 0, "late");
	inside = buf_len(&b) / 2;
	check_case("cut inside the object", buf_cstr(&b), inside, -ENOENT, NULL);
	buf_free(&b);
}

/* A uid past REVIEW_PREFIX_UID_MAX, or one that does not fit the caller's
 * buffer, is not answered. */
static void test_uid_limits(void **state)
{
	struct buf b;
	char tmp[8], at_cap[REVIEW_PREFIX_UID_MAX + 1];
	struct str uid;

	(void)state;
	buf_init(&b, 1 << 20);
	testutil_buf_add(&b, "%s\"request\":{\"uid\":\"%0*d\"}}", HEAD, REVIEW_PREFIX_UID_MAX, 0);
	memset(at_cap, '0', REVIEW_PREFIX_UID_MAX);
	at_cap[REVIEW_PREFIX_UID_MAX] = '\0';
	check_case("uid at the cap", buf_cstr(&b), buf_len(&b), 0, at_cap);
	buf_reset(&b);
	testutil_buf_add(&b, "%s\"request\":{\"uid\":\"%0*d\"}}", HEAD, REVIEW_PREFIX_UID_MAX + 1, 0);
	check_case("uid past the cap", buf_cstr(&b), buf_len(&b), -E2BIG, NULL);
	buf_reset(&b);
	testutil_buf_add(&b, "%s\"request\":{\"uid\":\"\\u0041\\u0042\\u0043\\u0044\"}}", HEAD);
	assert_int_equal(review_prefix_uid(buf_cstr(&b), buf_len(&b), tmp, sizeof(tmp), &uid), -E2BIG);
	buf_free(&b);
}

/* Nesting as deep as the text allows is skipped, not recursed into. */
static void test_deep_nesting_before_the_request(void **state)
{
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b, 1 << 20);
	testutil_buf_add(&b, "%s\"x\":", HEAD);
	for (i = 0; i < 4000; i++)
		testutil_buf_add(&b, "[");
	check_case("cut inside the nesting", buf_cstr(&b), buf_len(&b), -ENOENT, NULL);
	for (i = 0; i < 4000; i++)
		testutil_buf_add(&b, "]");
	testutil_buf_add(&b, ",\"request\":{\"uid\":\"deep\"}}");
	check_case("after the nesting", buf_cstr(&b), buf_len(&b), 0, "deep");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_cases),
		cmocka_unit_test(test_every_cut_of_a_real_review),
		cmocka_unit_test(test_uid_after_a_large_member),
		cmocka_unit_test(test_uid_limits),
		cmocka_unit_test(test_deep_nesting_before_the_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
