/* test_vap.c - the ValidatingAdmissionPolicy generator: the YAML for the
 * example and the golden-test policies, word for word; node-name globs
 * translated into regular expressions that match exactly what fnmatch()
 * matches; policy text carried into CEL literals; what each rule's policy
 * covers under which policy.
 *
 *   test_vap --update   write the YAML under tests/golden/vap/ and manifests/vap/policies.yaml
 *                       again (make golden-update runs it) */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "doc.h"
#include "policy.h"
#include "testutil.h"
#include "vap.h"
#include "vap_impl.h"

#define HEAD "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"

static struct policy *load_text(const char *text)
{
	struct policy *p = NULL;
	struct policy_error err;
	char line[1024];

	if (policy_load(text, strlen(text), &p, &err) != 0) {
		policy_error_format(&err, line, sizeof(line));
		fail_msg("policy did not load: %s\n%s", line, text);
	}
	return p;
}

static struct policy *load_file(const char *rel)
{
	size_t len = 0;
	char *text = testutil_read_file(testutil_repo_path(rel), &len);
	struct policy *p;

	if (!text)
		fail_msg("cannot read %s", rel);
	p = load_text(text);
	free(text);
	return p;
}

static const struct vap_options default_options = {
	{ "dra-guard", 9 }, { "dra-guard-policy", 16 }
};

static char *render(const struct policy *p)
{
	struct buf out;
	char *text = NULL;
	size_t len;

	buf_init(&out, VAP_OUTPUT_MAX);
	assert_int_equal(vap_render(p, &default_options, &out), 0);
	assert_int_equal(buf_take(&out, &text, &len), 0);
	return text;
}

/* --- golden YAML ------------------------------------------------------------------- */

struct golden {
	const char *policy;          /* NULL: the built-in policy */
	const char *yaml;
};

static const struct golden goldens[] = {
	{ NULL, "tests/golden/vap/builtin.yaml" },
	{ "examples/policy-configmap.yaml", "tests/golden/vap/example.yaml" },
	{ "tests/golden/policies/dryrun-name.yaml", "tests/golden/vap/dryrun-name.yaml" },
	{ "tests/golden/policies/frozen-scoped.yaml", "tests/golden/vap/frozen-scoped.yaml" },
	{ "tests/golden/policies/frozen.yaml", "tests/golden/vap/frozen.yaml" },
	{ "tests/golden/policies/strict.yaml", "tests/golden/vap/strict.yaml" },
	{ "tests/golden/policies/warn.yaml", "tests/golden/vap/warn.yaml" },
	/* The deployed set: from the base's ConfigMap (kept equal to the
	 * example by tests/e2e/test_manifests.py). */
	{ "manifests/base/policy-configmap.yaml", "manifests/vap/policies.yaml" },
};

static struct policy *golden_policy(const struct golden *g)
{
	struct policy *p = NULL;

	if (g->policy)
		return load_file(g->policy);
	assert_int_equal(policy_builtin(&p), 0);
	return p;
}

/* The first line where a and b differ, for the failure message. */
static int first_difference(const char *a, const char *b)
{
	int line = 1;

	for (; *a && *a == *b; a++, b++)
		if (*a == '\n')
			line++;
	return line;
}

static void test_yaml_is_the_recorded_one(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		struct policy *p = golden_policy(&goldens[i]);
		char *got = render(p);
		char *want = testutil_read_file(testutil_repo_path(goldens[i].yaml), NULL);

		if (!want)
			fail_msg("%s is missing (make golden-update writes it)", goldens[i].yaml);
		if (strcmp(got, want) != 0)
			fail_msg("%s differs from what dra-guard vap writes for %s, first at line %d "
				 "(make golden-update records it again; review the diff)", goldens[i].yaml,
				 goldens[i].policy ? goldens[i].policy : "the built-in policy", first_difference(got, want));
		free(want);
		free(got);
		policy_free(p);
	}
}

static int update_goldens(void)
{
	size_t i;

	for (i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		struct policy *p = NULL;
		struct buf out;
		FILE *f;
		int rc;

		if (goldens[i].policy) {
			size_t len = 0;
			char *text = testutil_read_file(testutil_repo_path(goldens[i].policy), &len);
			struct policy_error err;

			rc = text ? policy_load(text, len, &p, &err) : -ENOENT;
			free(text);
		} else {
			rc = policy_builtin(&p);
		}
		if (rc) {
			fprintf(stderr, "test_vap --update: %s does not load\n", goldens[i].policy);
			return 1;
		}
		buf_init(&out, VAP_OUTPUT_MAX);
		rc = vap_render(p, &default_options, &out);
		f = rc ? NULL : fopen(testutil_repo_path(goldens[i].yaml), "w");
		if (!f || fwrite(buf_cstr(&out), 1, buf_len(&out), f) != buf_len(&out) || fclose(f) != 0) {
			fprintf(stderr, "test_vap --update: cannot write %s\n", goldens[i].yaml);
			buf_free(&out);
			policy_free(p);
			return 1;
		}
		printf("wrote %s\n", goldens[i].yaml);
		buf_free(&out);
		policy_free(p);
	}
	return 0;
}

/* --- the stream, read back ------------------------------------------------------------ */

/* Every document parses (with the guard's own strict YAML reader), names
 * its kind, and the policies and bindings pair up with the actions the
 * policy gives their rules. */
static void check_stream(const struct policy *p, const char *text)
{
	struct doc_limits lim;
	struct doc_error err;
	struct doc_set *set = NULL;
	bool policies[RULE_COUNT] = { false }, bindings[RULE_COUNT] = { false };
	size_t i;
	int id;

	doc_limits_default(&lim);
	lim.max_bytes = VAP_OUTPUT_MAX;
	if (doc_parse_yaml(text, strlen(text), &lim, &set, &err) != 0)
		fail_msg("the stream does not parse: line %u: %s", err.line, err.msg);
	for (i = 0; i < doc_set_count(set); i++) {
		const struct doc_node *root = doc_set_root(set, i), *kind, *name, *spec, *actions;
		char want[VAP_NAME_MAX];
		int rid = -1;

		kind = doc_map_get(root, "kind");
		name = doc_map_get(doc_map_get(root, "metadata"), "name");
		spec = doc_map_get(root, "spec");
		assert_non_null(kind);
		assert_non_null(name);
		assert_non_null(spec);
		for (id = 0; id < RULE_COUNT; id++) {
			vap_object_name((enum rule_id)id, want);
			if (strcmp(want, name->text.ptr) == 0)
				rid = id;
		}
		if (rid < 0)
			fail_msg("document %zu names no rule: %s", i, name->text.ptr);
		if (strcmp(kind->text.ptr, "ValidatingAdmissionPolicy") == 0) {
			policies[rid] = true;
			assert_non_null(doc_map_get(spec, "validations"));
			continue;
		}
		assert_string_equal(kind->text.ptr, "ValidatingAdmissionPolicyBinding");
		bindings[rid] = true;
		assert_true(policies[rid]);          /* each binding follows its policy */
		assert_string_equal(doc_map_get(spec, "policyName")->text.ptr, name->text.ptr);
		actions = doc_map_get(spec, "validationActions");
		assert_non_null(actions);
		assert_int_equal(actions->n, 1);
		switch (policy_action(p, (enum rule_id)rid)) {
		case ACTION_DENY: assert_string_equal(actions->items[0]->text.ptr, "Deny"); break;
		case ACTION_WARN: assert_string_equal(actions->items[0]->text.ptr, "Warn"); break;
		case ACTION_DRYRUN: assert_string_equal(actions->items[0]->text.ptr, "Audit"); break;
		}
	}
	for (id = 0; id < RULE_COUNT; id++) {
		struct vap_rule_info info;
		bool expressed;

		vap_rule_info(p, (enum rule_id)id, &info);
		expressed = info.coverage == VAP_FULL || info.coverage == VAP_PARTIAL;
		if (policies[id] != expressed || bindings[id] != expressed)
			fail_msg("%s: coverage %s, but %s policy and %s binding", rule_name((enum rule_id)id),
				 vap_coverage_name(info.coverage), policies[id] ? "a" : "no", bindings[id] ? "a" : "no");
		/* Only a slice rule at deny passes what an UPDATE leaves unchanged. */
		if (vap_rule_ratchets(p, (enum rule_id)id) &&
		    (!expressed || policy_action(p, (enum rule_id)id) != ACTION_DENY ||
		     strncmp(rule_name((enum rule_id)id), "slice.", 6) != 0))
			fail_msg("%s ratchets", rule_name((enum rule_id)id));
	}
	doc_set_free(set);
}

static void test_stream_reads_back_with_one_policy_and_binding_per_rule(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		struct policy *p = golden_policy(&goldens[i]);
		char *text = render(p);

		check_stream(p, text);
		free(text);
		policy_free(p);
	}
}

static void test_actions_map_to_validation_actions(void **state)
{
	struct policy *p = load_text(HEAD "enforcement:\n  default: warn\n  rules:\n"
				     "    slice.mapping.name: dryrun\n    slice.mapping.units: deny\n");
	char *text = render(p);

	(void)state;
	check_stream(p, text);
	assert_non_null(strstr(text, "policyName: dra-guard.slice.mapping.name\n  validationActions: [Audit]\n"));
	assert_non_null(strstr(text, "policyName: dra-guard.slice.mapping.units\n  validationActions: [Deny]\n"));
	assert_null(strstr(text, "policyName: dra-guard.slice.mapping.bounds"));
	assert_non_null(strstr(text, "policyName: dra-guard.claim.freeze.create\n  validationActions: [Warn]\n"));
	free(text);
	policy_free(p);
}

/* The freeze policies read the named ConfigMap, and a missing one is no
 * freeze; no other policy takes a parameter. */
static void test_freeze_reads_the_named_configmap(void **state)
{
	struct vap_options opt = { { "ops", 3 }, { "guard-policy", 12 } };
	struct policy *p = NULL;
	struct buf out;
	const char *at;
	int n = 0;

	(void)state;
	assert_int_equal(policy_builtin(&p), 0);
	buf_init(&out, VAP_OUTPUT_MAX);
	assert_int_equal(vap_render(p, &opt, &out), 0);
	for (at = buf_cstr(&out); (at = strstr(at, "  paramRef:\n")) != NULL; at++) {
		static const char want[] = "  paramRef:\n    name: \"guard-policy\"\n    namespace: \"ops\"\n"
					   "    parameterNotFoundAction: Deny\n";

		assert_int_equal(strncmp(at, want, sizeof(want) - 1), 0);
		n++;
	}
	assert_int_equal(n, 2);
	at = buf_cstr(&out);
	for (n = 0; (at = strstr(at, "paramKind:")) != NULL; at++)
		n++;
	assert_int_equal(n, 2);
	buf_free(&out);
	opt.param_name.len = 0;
	buf_init(&out, VAP_OUTPUT_MAX);
	assert_int_equal(vap_render(p, &opt, &out), -EINVAL);
	buf_free(&out);
	policy_free(p);
}

/* Under freeze.gatePods a claim made for a Pod passes only when the
 * resource-claim controller sends it: the annotation and the
 * ownerReference alone are what any tenant can write. */
static void test_gated_pod_claims_pass_only_from_the_claim_controller(void **state)
{
	struct policy *gate = load_file("tests/golden/policies/frozen-gate.yaml");
	struct policy *none = load_text(HEAD "freeze:\n  gatePods: true\nwriters:\n  allocators: []\n");
	char *text = render(gate), *at;

	(void)state;
	at = strstr(text, "  - name: forPod\n    expression: |-\n      ");
	assert_non_null(at);
	at += strlen("  - name: forPod\n    expression: |-\n      ");
	assert_int_equal(strncmp(at, "request.userInfo.username in ['system:kube-controller-manager', "
				 "'system:serviceaccount:kube-system:resource-claim-controller'] &&\n", 130), 0);
	free(text);
	/* No allocation controllers: no claim passes for its Pod. */
	text = render(none);
	at = strstr(text, "  - name: forPod\n    expression: |-\n      ");
	assert_non_null(at);
	assert_int_equal(strncmp(at + strlen("  - name: forPod\n    expression: |-\n      "), "false &&", 8), 0);
	free(text);
	policy_free(gate);
	policy_free(none);
}

static void test_output_cap_is_an_error(void **state)
{
	struct policy *p = NULL;
	struct buf out;

	(void)state;
	assert_int_equal(policy_builtin(&p), 0);
	buf_init(&out, 4096);
	assert_int_equal(vap_render(p, &default_options, &out), -E2BIG);
	buf_free(&out);
	policy_free(p);
}

/* --- policy text in CEL ----------------------------------------------------------------- */

struct literal_case {
	const char *in;
	size_t len;
	const char *want;           /* NULL: refused */
};

static const struct literal_case literals[] = {
	{ "plain", 5, "'plain'" },
	{ "it's", 4, "'it\\'s'" },
	{ "back\\slash", 10, "'back\\\\slash'" },
	{ "two\nlines\t", 10, "'two\\nlines\\t'" },
	{ "\x01\x7f", 2, "'\\x01\\x7f'" },
	{ "caf\xc3\xa9", 5, "'caf\\u00e9'" },
	{ "\xf0\x9f\x99\x82", 4, "'\\U0001f642'" },
	{ "\"quoted\" ${x} #", 15, "'\"quoted\" ${x} #'" },
	{ "bad \xc3", 5, NULL },
	{ "overlong \xc0\x80", 11, NULL },
	{ "surrogate \xed\xa0\x80", 13, NULL },
};

static void test_policy_text_becomes_ascii_cel_literals(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		struct cel c;

		cel_init(&c);
		cel_str(&c, (struct str){ literals[i].in, literals[i].len });
		if (!literals[i].want) {
			assert_int_equal(c.rc, -EINVAL);
		} else {
			assert_int_equal(c.rc, 0);
			assert_string_equal(cel_text(&c), literals[i].want);
		}
		cel_free(&c);
	}
}

/* A user or group name that is no DNS name still lands in the expressions
 * escaped, and the stream still reads back. */
static void test_odd_names_stay_inside_their_literals(void **state)
{
	struct policy *p = load_text(HEAD "schedulers: [\"it's \\\"me\\\"\\n\", \"caf\xc3\xa9\"]\n"
				     "writers:\n  admins: [\"a'b\\\\c\"]\n"
				     "drivers:\n  gpu.example.com:\n    serviceAccounts: [system:serviceaccount:a:b]\n"
				     "freeze:\n  breakGlass:\n    users: [\"---\\n...\"]\n");
	char *text = render(p);

	(void)state;
	check_stream(p, text);
	assert_non_null(strstr(text, "request.userInfo.username in ['it\\'s \"me\"\\n', 'caf\\u00e9']"));
	assert_non_null(strstr(text, "g in ['a\\'b\\\\c']"));
	assert_non_null(strstr(text, "request.userInfo.username in ['---\\n...']"));
	free(text);
	policy_free(p);
}

/* --- node-name globs as regular expressions ------------------------------------------------- */

/* What a glob and its expression match, over names a node can have: the
 * DNS subdomain alphabet, and everything up to three characters from it. */
static const char name_alphabet[] = "ab1-.";

/* Returns whether the glob was translated (and so compared). */
static bool check_glob_against_fnmatch(const char *glob)
{
	struct str item = str_from_cstr(glob);
	struct string_list l = { .items = &item, .n = 1 };
	struct buf re;
	regex_t rx;
	char name[8];
	size_t total = 1, n, k, a = sizeof(name_alphabet) - 1;
	int rc;

	buf_init(&re, 4096);
	rc = vap_glob_regex(&l, &re);
	if (rc == -ENOTSUP) {
		buf_free(&re);
		return false;
	}
	assert_int_equal(rc, 0);
	if (regcomp(&rx, buf_cstr(&re), REG_EXTENDED | REG_NOSUB) != 0)
		fail_msg("glob \"%s\" gave an expression POSIX rejects: %s", glob, buf_cstr(&re));
	for (k = 0; k <= 3; k++, total *= a) {
		for (n = 0; n < total; n++) {
			size_t j, v = n;

			for (j = 0; j < k; j++, v /= a)
				name[j] = name_alphabet[v % a];
			name[k] = '\0';
			if ((fnmatch(glob, name, 0) == 0) != (regexec(&rx, name, 0, NULL, 0) == 0))
				fail_msg("glob \"%s\" as \"%s\": fnmatch and the expression differ on \"%s\"", glob,
					 buf_cstr(&re), name);
		}
	}
	regfree(&rx);
	buf_free(&re);
	return true;
}

static void test_globs_match_what_fnmatch_matches(void **state)
{
	static const char *const globs[] = {
		"a", "ab", "a*", "*", "*a*", "?", "a?b", "a.b", "a-b", "[ab]", "[!a]", "[^a]", "[a-b1]", "[-a]",
		"[a-]", "a[.]b", "[[:alpha:]]*", "[![:digit:]]?", "gpu-canary-*", "worker-[0-9]", "*.*", "**",
		"[b-b]", "-*", ".", "?*?",
	};
	size_t i, translated = 0;
	unsigned seed = 42;

	(void)state;
	for (i = 0; i < sizeof(globs) / sizeof(globs[0]); i++)
		if (!check_glob_against_fnmatch(globs[i]))
			fail_msg("glob \"%s\" was not translated", globs[i]);
	/* And a few thousand made of the glob operators, bracket expressions
	 * and the alphabet; some ill-formed (a lone [ or ]), which must be
	 * refused rather than translated wrong. */
	for (i = 0; i < 3000; i++) {
		static const char pieces[][12] = { "a", "b", "1", "-", ".", "*", "?", "[ab]", "[!a]", "[a-b]", "[-.]",
						   "[^1]", "[[:digit:]]", "[", "]", "!" };
		char g[80];
		size_t j, len = 1 + (size_t)(rand_r(&seed) % 6);

		g[0] = '\0';
		for (j = 0; j < len; j++)
			strcat(g, pieces[rand_r(&seed) % (sizeof(pieces) / sizeof(pieces[0]))]);
		translated += check_glob_against_fnmatch(g);
	}
	/* Most of the random ones are translated, so the comparison is not
	 * vacuous. */
	assert_true(translated > 1000);
}

static void test_untranslatable_globs_are_refused(void **state)
{
	static const char *const refused[] = {
		"a\\b", "[[=a=]]", "[[.a.]]", "[z-a]", "a{1}", "a+", "[]a]", "[a", "x[[:nope:]]", "a b", "(a)",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct str item = str_from_cstr(refused[i]);
		struct string_list l = { .items = &item, .n = 1 };
		struct buf re;

		buf_init(&re, 4096);
		assert_int_equal(buf_add_cstr(&re, "kept"), 0);
		if (vap_glob_regex(&l, &re) != -ENOTSUP)
			fail_msg("glob \"%s\" was translated: %s", refused[i], buf_cstr(&re));
		assert_string_equal(buf_cstr(&re), "kept");
		buf_free(&re);
	}
}

static void test_several_globs_are_one_anchored_expression(void **state)
{
	struct str items[] = { STR_LIT("gpu-canary-*"), STR_LIT("worker-1"), STR_LIT("worker-[0-9]") };
	struct string_list l = { .items = items, .n = 3 };
	struct buf re;

	(void)state;
	buf_init(&re, 4096);
	assert_int_equal(vap_glob_regex(&l, &re), 0);
	assert_string_equal(buf_cstr(&re), "^(gpu-canary-.*|worker-1|worker-[0-9])$");
	buf_free(&re);
}

/* --- what each rule's policy covers ------------------------------------------------------------ */

static enum vap_coverage coverage_of(const struct policy *p, enum rule_id id)
{
	struct vap_rule_info info;

	vap_rule_info(p, id, &info);
	return info.coverage;
}

static void test_every_rule_says_how_it_is_expressed(void **state)
{
	struct policy *builtin = NULL, *strict = load_file("tests/golden/policies/strict.yaml");
	int id;

	(void)state;
	assert_int_equal(policy_builtin(&builtin), 0);
	for (id = 0; id < RULE_COUNT; id++) {
		struct vap_rule_info a, b;

		vap_rule_info(builtin, (enum rule_id)id, &a);
		vap_rule_info(strict, (enum rule_id)id, &b);
		/* Anything short of full says why. */
		assert_true((a.coverage == VAP_FULL) == (a.why == NULL));
		assert_true((b.coverage == VAP_FULL) == (b.why == NULL));
		assert_string_not_equal(vap_coverage_name(a.coverage), "");
		/* A policy document can leave a rule with nothing to check,
		 * never make an inexpressible one expressible. */
		if (a.coverage == VAP_NONE || b.coverage == VAP_NONE)
			assert_int_equal(a.coverage, b.coverage);
	}
	/* Only these have no policy, each for a reason of its own: the rules
	 * that read the cluster view, and two the API server or the loader
	 * decide. A rule the engine gains is expressed, or named here with its
	 * reason; until then it says it has none. */
	for (id = 0; id < RULE_COUNT; id++) {
		struct vap_rule_info a;

		vap_rule_info(strict, (enum rule_id)id, &a);
		if (id == RULE_CLAIM_FREEZE_CREATE) {
			/* Reads the view only for a gated Pod's claims, which pass. */
			assert_int_equal(a.coverage, VAP_PARTIAL);
			assert_non_null(strstr(a.why, "gatePods"));
		} else if (rule_reads_view((enum rule_id)id)) {
			assert_int_equal(a.coverage, VAP_NONE);
			assert_non_null(strstr(a.why, "cluster view"));
		} else if (a.coverage == VAP_NONE && id != RULE_SLICE_MAPPING_SCHEMA && id != RULE_POLICY_INVALID &&
			   id != RULE_CLAIM_FREEZE_GATE) {
			fail_msg("%s has no policy: %s", rule_name((enum rule_id)id), a.why);
		}
	}
	/* What the built-in policy leaves idle, the strict one checks. */
	assert_int_equal(coverage_of(builtin, RULE_SLICE_DRIVER), VAP_IDLE);
	assert_int_equal(coverage_of(strict, RULE_SLICE_DRIVER), VAP_FULL);
	assert_int_equal(coverage_of(builtin, RULE_SLICE_CANARY), VAP_IDLE);
	assert_int_equal(coverage_of(strict, RULE_SLICE_CANARY), VAP_FULL);
	assert_int_equal(coverage_of(builtin, RULE_SLICE_MAPPING_BOUNDS), VAP_IDLE);
	assert_int_equal(coverage_of(strict, RULE_SLICE_MAPPING_BOUNDS), VAP_PARTIAL);
	assert_int_equal(coverage_of(builtin, RULE_SLICE_WRITER_NODE), VAP_IDLE);
	assert_int_equal(coverage_of(strict, RULE_SLICE_WRITER_NODE), VAP_FULL);
	assert_int_equal(coverage_of(strict, RULE_POLICY_INVALID), VAP_NONE);
	assert_int_equal(coverage_of(strict, RULE_SLICE_MAPPING_SCHEMA), VAP_NONE);
	policy_free(builtin);
	policy_free(strict);
}

static void test_untranslatable_canary_has_no_policy(void **state)
{
	struct policy *p = load_text(HEAD "canary:\n  nodes: [\"worker-[[=a=]]\"]\n");
	struct vap_rule_info info;
	char *text = render(p);

	(void)state;
	vap_rule_info(p, RULE_SLICE_CANARY, &info);
	assert_int_equal(info.coverage, VAP_NONE);
	assert_non_null(info.why);
	assert_null(strstr(text, "dra-guard.slice.canary"));
	check_stream(p, text);
	free(text);
	policy_free(p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_is_the_recorded_one),
		cmocka_unit_test(test_stream_reads_back_with_one_policy_and_binding_per_rule),
		cmocka_unit_test(test_actions_map_to_validation_actions),
		cmocka_unit_test(test_freeze_reads_the_named_configmap),
		cmocka_unit_test(test_output_cap_is_an_error),
		cmocka_unit_test(test_gated_pod_claims_pass_only_from_the_claim_controller),
		cmocka_unit_test(test_policy_text_becomes_ascii_cel_literals),
		cmocka_unit_test(test_odd_names_stay_inside_their_literals),
		cmocka_unit_test(test_globs_match_what_fnmatch_matches),
		cmocka_unit_test(test_untranslatable_globs_are_refused),
		cmocka_unit_test(test_several_globs_are_one_anchored_expression),
		cmocka_unit_test(test_every_rule_says_how_it_is_expressed),
		cmocka_unit_test(test_untranslatable_canary_has_no_policy),
	};

	if (argc == 2 && strcmp(argv[1], "--update") == 0)
		return update_goldens();
	if (argc > 1) {
		fprintf(stderr, "usage: test_vap [--update]\n");
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
