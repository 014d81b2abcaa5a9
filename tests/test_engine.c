/* test_engine.c - every golden AdmissionReview case through the engine.
 *
 * Every file in tests/golden/cases (made by tests/golden/gen.py) holds a review,
 * the policy to judge it under and what must come out. Each case runs twice:
 * through decode_review + engine_decide (checking the verdict's rules,
 * warnings, audit annotations and patch) and through admission_handle
 * (checking the encoded response the server would send: uid echoed, allowed,
 * status, base64 JSONPatch only from the mutating endpoint). The end-to-end
 * tests send the same files to the real server. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "admission.h"
#include "decode.h"
#include "engine.h"
#include "mutation.h"
#include "policy.h"
#include "testutil.h"

#define MAX_CASES 512

struct golden {
	char name[256];
	json_t *root;
};

static struct policy *load_policy_file(const char *rel)
{
	struct policy *p = NULL;
	struct policy_error err;
	size_t len = 0;
	char *text;
	int rc;

	if (!rel) {
		assert_int_equal(policy_builtin(&p), 0);
		return p;
	}
	text = testutil_read_file(testutil_repo_path(rel), &len);
	assert_non_null(text);
	rc = policy_load(text, len, &p, &err);
	if (rc) {
		char line[1024];

		policy_error_format(&err, line, sizeof(line));
		fail_msg("policy %s does not load: %s", rel, line);
	}
	free(text);
	return p;
}

static void set_options(struct engine_options *opt, const char *endpoint)
{
	memset(opt, 0, sizeof(*opt));
	opt->mutate = strcmp(endpoint, "mutate") == 0;
	opt->self_name = STR_LIT("dra-guard-policy");
	opt->self_namespace = STR_LIT("dra-guard");
}

static bool verdict_has_audit(const struct verdict *v, const char *key)
{
	size_t plen = strlen(VERDICT_AUDIT_PREFIX);
	uint32_t i;

	if (strncmp(key, VERDICT_AUDIT_PREFIX, plen) != 0)
		return false;
	for (i = 0; i < v->naudit; i++)
		if (str_eq_cstr(v->audit[i].key, key + plen))
			return true;
	return false;
}

/* Expected patches use "*" for the fingerprint, which depends on the hash. */
static void check_patch(const char *name, struct str patch, json_t *want)
{
	json_t *got, *gop, *wop;
	size_t i;

	if (!want) {
		return;
	}
	assert_true(patch.len > 0);
	got = json_loadb(patch.ptr, patch.len, JSON_REJECT_DUPLICATES, NULL);
	if (!got)
		fail_msg("%s: patch is not JSON: %.*s", name, STR_FMT(patch));
	assert_int_equal(json_array_size(got), json_array_size(want));
	json_array_foreach(want, i, wop) {
		json_t *wv = json_object_get(wop, "value"), *gv;

		gop = json_array_get(got, i);
		assert_string_equal(json_string_value(json_object_get(gop, "op")),
				    json_string_value(json_object_get(wop, "op")));
		assert_string_equal(json_string_value(json_object_get(gop, "path")),
				    json_string_value(json_object_get(wop, "path")));
		gv = json_object_get(gop, "value");
		if (!wv) {
			assert_null(gv);
			continue;
		}
		if (json_is_object(wv))
			gv = json_object_get(gv, MUTATION_LABEL);
		assert_true(json_is_string(gv));
		assert_int_equal(strlen(json_string_value(gv)), MUTATION_FINGERPRINT_LEN);
		assert_int_equal(strspn(json_string_value(gv), "0123456789abcdef"), MUTATION_FINGERPRINT_LEN);
	}
	json_decref(got);
}

static void check_verdict(const struct golden *g, const struct verdict *v, json_t *expect)
{
	json_t *rules = json_object_get(expect, "rules"), *absent = json_object_get(expect, "absent");
	json_t *warnings = json_object_get(expect, "warnings"), *audit = json_object_get(expect, "audit"), *it;
	bool allowed = json_is_true(json_object_get(expect, "allowed"));
	size_t i;
	uint32_t k;

	if (v->allowed != allowed) {
		for (k = 0; k < v->nviolations; k++)
			print_message("  %s %s: %.*s\n", rule_name(v->violations[k].rule),
				      action_name(v->violations[k].action), STR_FMT(v->violations[k].message));
		fail_msg("%s: allowed is %d, expected %d (%.*s)", g->name, v->allowed, allowed, STR_FMT(v->message));
	}
	json_array_foreach(rules, i, it) {
		int id = rule_lookup(str_from_cstr(json_string_value(it)));

		assert_true(id >= 0);
		if (!verdict_has(v, (enum rule_id)id))
			fail_msg("%s: rule %s not reported", g->name, json_string_value(it));
	}
	json_array_foreach(absent, i, it) {
		int id = rule_lookup(str_from_cstr(json_string_value(it)));

		assert_true(id >= 0);
		if (verdict_has(v, (enum rule_id)id))
			fail_msg("%s: rule %s reported but must not be", g->name, json_string_value(it));
	}
	if (json_is_boolean(warnings) && (v->nwarnings > 0) != json_is_true(warnings))
		fail_msg("%s: %u warnings, expected %s", g->name, v->nwarnings,
			 json_is_true(warnings) ? "some" : "none");
	for (k = 0; k < v->nwarnings; k++)
		assert_true(v->warnings[k].len < 120);
	json_array_foreach(audit, i, it)
		if (!verdict_has_audit(v, json_string_value(it)))
			fail_msg("%s: audit annotation %s missing", g->name, json_string_value(it));
	/* A violation always names its rule's action from the policy. */
	for (k = 0; k < v->nviolations; k++)
		assert_true(v->violations[k].message.len > 0);
}

/* The encoded response, as the API server would read it. */
static void check_response(const struct golden *g, const char *body, json_t *review, json_t *expect,
			   bool mutating)
{
	json_error_t jerr;
	json_t *resp = json_loads(body, JSON_REJECT_DUPLICATES, &jerr), *r, *patch;
	const char *uid = json_string_value(json_object_get(json_object_get(review, "request"), "uid"));
	bool allowed = json_is_true(json_object_get(expect, "allowed"));

	if (!resp)
		fail_msg("%s: response is not JSON: %s", g->name, jerr.text);
	assert_string_equal(json_string_value(json_object_get(resp, "apiVersion")), "admission.k8s.io/v1");
	assert_string_equal(json_string_value(json_object_get(resp, "kind")), "AdmissionReview");
	r = json_object_get(resp, "response");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), uid);
	assert_int_equal(json_is_true(json_object_get(r, "allowed")), allowed);
	if (!allowed) {
		json_t *st = json_object_get(r, "status");

		assert_int_equal(json_integer_value(json_object_get(st, "code")), 403);
		assert_non_null(strstr(json_string_value(json_object_get(st, "message")), "dra-guard"));
	}
	patch = json_object_get(r, "patch");
	if (!mutating || !allowed)
		assert_null(patch);
	if (json_object_get(expect, "patch")) {
		assert_non_null(patch);
		assert_string_equal(json_string_value(json_object_get(r, "patchType")), "JSONPatch");
	}
	json_decref(resp);
}

static void run_golden(void **state)
{
	const struct golden *g = *state;
	json_t *review = json_object_get(g->root, "review"), *expect = json_object_get(g->root, "expect");
	const char *endpoint = json_string_value(json_object_get(g->root, "endpoint"));
	struct policy *p = load_policy_file(json_string_value(json_object_get(g->root, "policy")));
	char *body = json_dumps(review, JSON_COMPACT);
	struct admission_request req;
	struct decode_limits lim;
	struct decode_error derr;
	struct admission_result res;
	struct engine_options opt;
	struct arena *a = NULL;
	struct verdict v;
	struct buf out;
	int rc;

	assert_non_null(body);
	assert_int_equal(arena_new(64 * 1024 * 1024, &a), 0);
	decode_limits_default(&lim);
	set_options(&opt, endpoint);
	rc = decode_review(body, strlen(body), &lim, a, &req, &derr);
	if (rc)
		fail_msg("%s: decode_review: %d %s", g->name, rc, derr.msg);
	assert_int_equal(engine_decide(p, &opt, &req, a, &v), 0);
	check_verdict(g, &v, expect);
	check_patch(g->name, v.patch, json_object_get(expect, "patch"));

	arena_reset(a);
	buf_init(&out, 16 * 1024 * 1024);
	assert_int_equal(admission_handle(p, &opt, &lim, body, strlen(body), a, &out, &res), 0);
	assert_int_equal(res.http_status, 200);
	check_response(g, buf_cstr(&out), review, expect, opt.mutate);

	buf_free(&out);
	arena_free(a);
	free(body);
	policy_free(p);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	static struct golden goldens[MAX_CASES];
	static struct CMUnitTest tests[MAX_CASES];
	char *names[MAX_CASES];
	const char *dir = testutil_repo_path("tests/golden/cases");
	char dirpath[4096];
	size_t n = 0, i;
	struct dirent *e;
	DIR *dp;
	int failed;

	snprintf(dirpath, sizeof(dirpath), "%s", dir);
	dp = opendir(dirpath);
	if (!dp) {
		fprintf(stderr, "test_engine: cannot open %s\n", dirpath);
		return 1;
	}
	while ((e = readdir(dp)) != NULL && n < MAX_CASES) {
		size_t len = strlen(e->d_name);

		if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(dp);
	qsort(names, n, sizeof(names[0]), cmp_names);
	for (i = 0; i < n; i++) {
		char path[4200];
		json_error_t jerr;

		snprintf(path, sizeof(path), "%s/%s", dirpath, names[i]);
		goldens[i].root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
		if (!goldens[i].root) {
			fprintf(stderr, "test_engine: %s: %s\n", path, jerr.text);
			return 1;
		}
		snprintf(goldens[i].name, sizeof(goldens[i].name), "%.*s", (int)(strlen(names[i]) - 5), names[i]);
		tests[i].name = goldens[i].name;
		tests[i].test_func = run_golden;
		tests[i].initial_state = &goldens[i];
		free(names[i]);
	}
	if (n < 50) {
		fprintf(stderr, "test_engine: only %zu golden cases found in %s\n", n, dirpath);
		return 1;
	}
	failed = _cmocka_run_group_tests("golden", tests, n, NULL, NULL);
	for (i = 0; i < n; i++)
		json_decref(goldens[i].root);
	return failed;
}
