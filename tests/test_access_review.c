/* test_access_review.c - bearer tokens, TokenReview and SubjectAccessReview
 * bodies and answers (hostile ones refused), and the bounded cache. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "access_review.h"
#include "doc.h"

#define S 1000000000LL

static void test_bearer_header(void **state)
{
	static const struct {
		const char *header;
		int rc;
		const char *token;
	} cases[] = {
		{ "Bearer abc.DEF-ghi_~+/=", 0, "abc.DEF-ghi_~+/=" },
		{ "bearer   tok  ", 0, "tok" },
		{ "BEARER\ttok", 0, "tok" },
		{ "Basic dXNlcjpwYXNz", -EINVAL, NULL },
		{ "Bearer", -EINVAL, NULL },
		{ "Bearer ", -EINVAL, NULL },
		{ "Bearertok", -EINVAL, NULL },
		{ "Bearer tok other", -EINVAL, NULL },
		{ "Bearer to\"k", -EINVAL, NULL },
		{ "Bearer tok=x", -EINVAL, NULL },
		{ "Bearer t\xc3\xa9", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
	};
	const char *tok;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = access_review_bearer(cases[i].header, &tok, &len);

		assert_int_equal(rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal(len, strlen(cases[i].token));
			assert_memory_equal(tok, cases[i].token, len);
		}
	}
	assert_int_equal(access_review_bearer(NULL, &tok, &len), -EINVAL);
}

static void test_bearer_token_past_the_cap_is_refused(void **state)
{
	size_t n = ACCESS_REVIEW_TOKEN_MAX + 1;
	char *h = malloc(n + 8);
	const char *tok;
	size_t len;

	(void)state;
	assert_non_null(h);
	memcpy(h, "Bearer ", 7);
	memset(h + 7, 'a', n);
	h[7 + n] = '\0';
	assert_int_equal(access_review_bearer(h, &tok, &len), -E2BIG);
	h[7 + n - 1] = '\0';
	assert_int_equal(access_review_bearer(h, &tok, &len), 0);
	assert_int_equal(len, ACCESS_REVIEW_TOKEN_MAX);
	free(h);
}

/* The body is JSON with the token as a string, whatever it holds. */
static void test_token_review_body(void **state)
{
	struct doc_set *set = NULL;
	const struct doc_node *root, *spec;
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(access_review_token_body("a.b/c", 5, &b), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&b), buf_len(&b), NULL, &set, NULL), 0);
	root = doc_set_root(set, 0);
	assert_string_equal(doc_map_get(root, "kind")->text.ptr, "TokenReview");
	assert_string_equal(doc_map_get(root, "apiVersion")->text.ptr, "authentication.k8s.io/v1");
	spec = doc_map_get(root, "spec");
	assert_string_equal(doc_map_get(spec, "token")->text.ptr, "a.b/c");
	doc_set_free(set);
	buf_free(&b);
}

#define TR_PRE "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"status\":"
#define TR(status) "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\"," \
	"\"spec\":{\"token\":\"x\"},\"status\":" status "}"

static void test_token_review_answers(void **state)
{
	static const struct {
		const char *answer;
		int rc;
		bool authenticated;
		const char *user;          /* the SAR's user fields */
		const char *name;
	} cases[] = {
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"system:serviceaccount:monitoring:prometheus\","
		     "\"uid\":\"u-1\",\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
		     "\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"p\"]}},\"audiences\":[\"a\"]}"),
		  0, true,
		  "\"user\":\"system:serviceaccount:monitoring:prometheus\",\"uid\":\"u-1\",\"groups\":"
		  "[\"system:serviceaccounts\",\"system:authenticated\"],\"extra\":{\"authentication.kubernetes.io/"
		  "pod-name\":[\"p\"]}",
		  "system:serviceaccount:monitoring:prometheus" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"alice\"}}"), 0, true, "\"user\":\"alice\"",
		  "alice" },
		{ TR("{\"authenticated\":false,\"error\":\"token expired\"}"), 0, false, "", "" },
		{ TR("{}"), 0, false, "", "" },
		{ "{\"kind\":\"TokenReview\"}", 0, false, "", "" },
		/* Refused: not a TokenReview, wrong types, no user, duplicates. */
		{ "{\"kind\":\"Status\",\"status\":\"Failure\"}", -EINVAL, false, "", "" },
		{ "[]", -EINVAL, false, "", "" },
		{ "not json", -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":\"true\",\"user\":{\"username\":\"a\"}}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"\"}}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":1}}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"a\",\"groups\":[1]}}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"a\",\"groups\":\"g\"}}"), -EINVAL, false, "", "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"a\",\"extra\":{\"k\":\"v\"}}}"), -EINVAL, false, "",
		  "" },
		{ TR("{\"authenticated\":true,\"authenticated\":false,\"user\":{\"username\":\"a\"}}"), -EINVAL, false, "",
		  "" },
		{ TR("{\"authenticated\":true,\"user\":{\"username\":\"a\",\"username\":\"b\"}}"), -EINVAL, false, "", "" },
	};
	char name[64];
	struct buf user;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool auth = true;

		buf_init(&user, 64 * 1024);
		assert_int_equal(access_review_token_answer(cases[i].answer, strlen(cases[i].answer), &auth, &user, name,
							    sizeof(name)), cases[i].rc);
		assert_int_equal(auth, cases[i].authenticated);
		assert_int_equal(buf_len(&user), strlen(cases[i].user));
		assert_memory_equal(buf_cstr(&user), cases[i].user, buf_len(&user));
		assert_string_equal(name, cases[i].name);
		buf_free(&user);
	}
}

/* Bounds: a deep answer, too many groups, a huge string, too large. */
static void test_token_review_hostile_answers_are_refused(void **state)
{
	struct buf a, user;
	char name[64];
	bool auth;
	int i;

	(void)state;
	/* Deep. */
	buf_init(&a, 1 << 20);
	buf_init(&user, 1 << 20);
	assert_int_equal(buf_add_cstr(&a, TR_PRE "{\"authenticated\":true,\"user\":{\"username\":\"a\",\"extra\":{\"k\":"), 0);
	for (i = 0; i < 100; i++)
		buf_add_char(&a, '[');
	for (i = 0; i < 100; i++)
		buf_add_char(&a, ']');
	buf_add_cstr(&a, "}}}}");
	assert_int_equal(access_review_token_answer(buf_cstr(&a), buf_len(&a), &auth, &user, name, sizeof(name)), -E2BIG);
	assert_false(auth);
	assert_int_equal(buf_len(&user), 0);
	/* Too many groups. */
	buf_reset(&a);
	buf_add_cstr(&a, TR_PRE "{\"authenticated\":true,\"user\":{\"username\":\"a\",\"groups\":[\"g\"");
	for (i = 0; i < ACCESS_REVIEW_GROUPS_MAX; i++)
		buf_add_cstr(&a, ",\"g\"");
	buf_add_cstr(&a, "]}}}");
	assert_int_equal(access_review_token_answer(buf_cstr(&a), buf_len(&a), &auth, &user, name, sizeof(name)),
			 -E2BIG);
	assert_false(auth);
	/* A user name past the string cap. */
	buf_reset(&a);
	buf_add_cstr(&a, TR_PRE "{\"authenticated\":true,\"user\":{\"username\":\"");
	for (i = 0; i <= ACCESS_REVIEW_STRING_MAX; i++)
		buf_add_char(&a, 'u');
	buf_add_cstr(&a, "\"}}}");
	assert_int_equal(access_review_token_answer(buf_cstr(&a), buf_len(&a), &auth, &user, name, sizeof(name)),
			 -E2BIG);
	/* Larger than the answer cap. */
	{
		char *big = malloc(ACCESS_REVIEW_ANSWER_MAX + 1);

		assert_non_null(big);
		memset(big, ' ', ACCESS_REVIEW_ANSWER_MAX + 1);
		memcpy(big, buf_cstr(&a), buf_len(&a));
		assert_int_equal(access_review_token_answer(big, ACCESS_REVIEW_ANSWER_MAX + 1, &auth, &user, name,
							    sizeof(name)), -E2BIG);
		free(big);
	}
	assert_int_equal(buf_len(&user), 0);
	buf_free(&a);
	buf_free(&user);
}

static void test_sar_body_names_the_user_and_the_path(void **state)
{
	struct doc_set *set = NULL;
	const struct doc_node *spec, *nra, *groups;
	struct buf user, b;
	char name[64];
	bool auth;
	static const char answer[] = TR("{\"authenticated\":true,\"user\":{\"username\":\"bob\",\"groups\":[\"g1\"]}}");

	(void)state;
	buf_init(&user, 4096);
	buf_init(&b, 4096);
	assert_int_equal(access_review_token_answer(answer, sizeof(answer) - 1, &auth, &user, name, sizeof(name)), 0);
	assert_int_equal(access_review_sar_body(&user, "get", "/debug/ledger", &b), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&b), buf_len(&b), NULL, &set, NULL), 0);
	assert_string_equal(doc_map_get(doc_set_root(set, 0), "kind")->text.ptr, "SubjectAccessReview");
	spec = doc_map_get(doc_set_root(set, 0), "spec");
	assert_string_equal(doc_map_get(spec, "user")->text.ptr, "bob");
	groups = doc_map_get(spec, "groups");
	assert_int_equal(groups->n, 1);
	assert_string_equal(groups->items[0]->text.ptr, "g1");
	nra = doc_map_get(spec, "nonResourceAttributes");
	assert_string_equal(doc_map_get(nra, "path")->text.ptr, "/debug/ledger");
	assert_string_equal(doc_map_get(nra, "verb")->text.ptr, "get");
	assert_null(doc_map_get(spec, "resourceAttributes"));
	doc_set_free(set);
	buf_free(&user);
	buf_free(&b);
}

#define SAR(status) "{\"kind\":\"SubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\"," \
	"\"spec\":{\"user\":\"a\"},\"status\":" status "}"

static void test_sar_answers(void **state)
{
	static const struct {
		const char *answer;
		int rc;
		bool allowed;
		const char *reason;
	} cases[] = {
		{ SAR("{\"allowed\":true,\"reason\":\"RBAC: allowed by ClusterRoleBinding\"}"), 0, true,
		  "RBAC: allowed by ClusterRoleBinding" },
		{ SAR("{\"allowed\":false}"), 0, false, "" },
		{ SAR("{\"allowed\":false,\"denied\":true,\"reason\":\"no\"}"), 0, false, "no" },
		/* Both: the denial wins. */
		{ SAR("{\"allowed\":true,\"denied\":true}"), 0, false, "" },
		{ SAR("{}"), 0, false, "" },
		{ "{\"kind\":\"SubjectAccessReview\"}", 0, false, "" },
		{ SAR("{\"allowed\":\"yes\"}"), -EINVAL, false, "" },
		{ SAR("{\"allowed\":true,\"allowed\":true}"), -EINVAL, false, "" },
		{ SAR("{\"allowed\":true,\"reason\":7}"), -EINVAL, false, "" },
		{ SAR("[true]"), -EINVAL, false, "" },
		{ "{\"kind\":\"TokenReview\",\"status\":{\"allowed\":true}}", -EINVAL, false, "" },
		{ "{\"kind\":\"Status\",\"code\":403}", -EINVAL, false, "" },
		{ "", -EINVAL, false, "" },
	};
	char reason[ACCESS_REVIEW_REASON_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool allowed = !cases[i].allowed;

		assert_int_equal(access_review_sar_answer(cases[i].answer, strlen(cases[i].answer), &allowed, reason),
				 cases[i].rc);
		assert_int_equal(allowed, cases[i].allowed);
		assert_string_equal(reason, cases[i].reason);
	}
}

static void key_of(uint8_t key[ACCESS_CACHE_KEY], unsigned n)
{
	memset(key, 0, ACCESS_CACHE_KEY);
	memcpy(key, &n, sizeof(n));
}

static void test_cache_expiry_and_outcomes(void **state)
{
	struct access_cache *c;
	enum access_outcome o;
	uint8_t k1[ACCESS_CACHE_KEY], k2[ACCESS_CACHE_KEY];

	(void)state;
	assert_int_equal(access_cache_new(0, &c), -EINVAL);
	assert_int_equal(access_cache_new(4, &c), 0);
	key_of(k1, 1);
	key_of(k2, 2);
	assert_false(access_cache_get(c, k1, 0, &o));
	access_cache_put(c, k1, ACCESS_ALLOWED, 10 * S);
	access_cache_put(c, k2, ACCESS_FORBIDDEN, 2 * S);
	assert_true(access_cache_get(c, k1, 9 * S, &o));
	assert_int_equal(o, ACCESS_ALLOWED);
	assert_true(access_cache_get(c, k2, 1 * S, &o));
	assert_int_equal(o, ACCESS_FORBIDDEN);
	/* Expired: gone, and no longer live. */
	assert_false(access_cache_get(c, k2, 2 * S, &o));
	assert_false(access_cache_get(c, k1, 10 * S, &o));
	assert_int_equal(access_cache_live(c, 1 * S), 2);
	assert_int_equal(access_cache_live(c, 5 * S), 1);
	/* The key's entry is replaced, not added. */
	access_cache_put(c, k1, ACCESS_UNAUTHENTICATED, 20 * S);
	assert_int_equal(access_cache_live(c, 1 * S), 2);
	assert_true(access_cache_get(c, k1, 1 * S, &o));
	assert_int_equal(o, ACCESS_UNAUTHENTICATED);
	access_cache_free(c);
	access_cache_free(NULL);
}

/* A thousand keys through a cache of 8: never more than 8 held; a full
 * cache drops the entry that expires first, never a later one. */
static void test_cache_is_bounded_and_evicts_the_first_to_expire(void **state)
{
	struct access_cache *c;
	enum access_outcome o;
	uint8_t k[ACCESS_CACHE_KEY];
	unsigned i;

	(void)state;
	assert_int_equal(access_cache_new(8, &c), 0);
	for (i = 0; i < 1000; i++) {
		key_of(k, i);
		access_cache_put(c, k, ACCESS_ALLOWED, (int64_t)(1000 + i) * S);
		assert_true(access_cache_live(c, 0) <= 8);
	}
	assert_int_equal(access_cache_live(c, 0), 8);
	for (i = 992; i < 1000; i++) {
		key_of(k, i);
		assert_true(access_cache_get(c, k, 0, &o));
	}
	key_of(k, 991);
	assert_false(access_cache_get(c, k, 0, &o));
	/* A new key replaces the earliest expiry (992), keeping the rest. */
	key_of(k, 5000);
	access_cache_put(c, k, ACCESS_FORBIDDEN, 3000 * S);
	key_of(k, 992);
	assert_false(access_cache_get(c, k, 0, &o));
	key_of(k, 993);
	assert_true(access_cache_get(c, k, 0, &o));
	access_cache_free(c);
}

/* 3 at once, one more every second; time going backwards refills nothing. */
static void test_rate_is_a_token_bucket(void **state)
{
	struct access_rate r;
	int i;

	(void)state;
	access_rate_init(&r, 3, 1 * S);
	for (i = 0; i < 3; i++)
		assert_true(access_rate_take(&r, 100 * S));
	assert_false(access_rate_take(&r, 100 * S));
	assert_false(access_rate_take(&r, 100 * S + S / 2));
	assert_true(access_rate_take(&r, 101 * S));
	assert_false(access_rate_take(&r, 101 * S));
	/* Half an interval is no token. */
	assert_false(access_rate_take(&r, 101 * S + S / 2));
	assert_true(access_rate_take(&r, 102 * S));
	assert_false(access_rate_take(&r, 50 * S));
	/* A long quiet refills to the burst, never past it. */
	for (i = 0; i < 3; i++)
		assert_true(access_rate_take(&r, 1000 * S));
	assert_false(access_rate_take(&r, 1000 * S));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer_header),
		cmocka_unit_test(test_bearer_token_past_the_cap_is_refused),
		cmocka_unit_test(test_token_review_body),
		cmocka_unit_test(test_token_review_answers),
		cmocka_unit_test(test_token_review_hostile_answers_are_refused),
		cmocka_unit_test(test_sar_body_names_the_user_and_the_path),
		cmocka_unit_test(test_sar_answers),
		cmocka_unit_test(test_rate_is_a_token_bucket),
		cmocka_unit_test(test_cache_expiry_and_outcomes),
		cmocka_unit_test(test_cache_is_bounded_and_evicts_the_first_to_expire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
