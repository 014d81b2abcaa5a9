/* test_synth.c - admission requests made up offline for dry-run. */
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

#include "decode.h"
#include "engine.h"
#include "policy.h"
#include "synth.h"
#include "testutil.h"

#define ARENA_CAP (64u << 20)

/* A fixture as JSON text, with one top-level member removed (or none). */
static char *fixture_without(const char *rel, const char *drop)
{
	json_t *j = json_load_file(testutil_repo_path(rel), JSON_REJECT_DUPLICATES, NULL);
	char *s;

	assert_non_null(j);
	if (drop)
		json_object_del(j, drop);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(s);
	return s;
}

static void decode(const char *text, struct arena *a, struct k8s_object *out)
{
	struct decode_error err;

	if (decode_object(text, strlen(text), NULL, a, out, &err) != 0)
		fail_msg("decode: %s", err.msg);
}

/* --- the identity ----------------------------------------------------------- */

static void test_identity_is_complete(void **state)
{
	static const struct str groups[] = { { "system:nodes", 12 }, { "ops", 3 } };
	static const struct synth_extra extras[] = {
		{ { "authentication.kubernetes.io/node-name", 38 }, { "worker-1", 8 } },
		{ { "team", 4 }, { "a", 1 } },
		{ { "team", 4 }, { "b", 1 } },
	};
	struct synth_identity who = { STR_LIT("system:node:worker-1"), groups, 2, extras, 3 };
	char *text = fixture_without("tests/fixtures/resourceslice-v1-node-allocatable.json", NULL);
	struct arena *a = NULL;
	struct k8s_object obj;
	struct admission_request req;
	struct synth_write w = { ADMISSION_OP_CREATE, STR_LIT(""), STR_LIT(""), &obj, NULL };
	uint32_t n = 0;
	const struct str *v;

	(void)state;
	assert_int_equal(arena_new(ARENA_CAP, &a), 0);
	decode(text, a, &obj);
	assert_int_equal(synth_request(&who, &w, a, &req), 0);
	assert_true(str_eq_cstr(req.user.username, "system:node:worker-1"));
	assert_int_equal(req.user.ngroups, 2);
	assert_true(str_eq_cstr(req.user.groups[1], "ops"));
	assert_int_equal(req.user.nextra, 2);
	v = model_user_extra(&req.user, "team", &n);
	assert_int_equal(n, 2);
	assert_true(str_eq_cstr(v[0], "a") && str_eq_cstr(v[1], "b"));
	assert_true(str_eq_cstr(req.resource.resource, "resourceslices"));
	assert_true(str_eq_cstr(req.kind.group, "resource.k8s.io"));
	assert_true(str_eq_cstr(req.operation_text, "CREATE"));
	assert_true(req.dry_run);
	assert_int_equal(req.object.kind, OBJECT_RESOURCE_SLICE);
	assert_int_equal(req.old_object.kind, OBJECT_NONE);
	w.op = ADMISSION_OP_UPDATE;
	assert_int_equal(synth_request(&who, &w, a, &req), -EINVAL);
	w.op = ADMISSION_OP_DELETE;
	assert_int_equal(synth_request(&who, &w, a, &req), 0);
	assert_int_equal(req.object.kind, OBJECT_NONE);
	assert_int_equal(req.old_object.kind, OBJECT_RESOURCE_SLICE);
	arena_free(a);
	free(text);
}

/* An arena that cannot hold every group and extra value must fail the
 * request: one with groups or extras dropped would be decided for a user
 * with fewer groups (a break-glass or admin group lost) or no node-name. */
static void test_a_full_arena_fails_instead_of_cutting_the_identity(void **state)
{
	static struct str groups[64];
	static struct synth_extra extras[64];
	struct synth_identity who = { STR_LIT("alice"), groups, 64, extras, 64 };
	struct k8s_object obj;
	struct admission_request req;
	struct synth_write w = { ADMISSION_OP_CREATE, STR_LIT(""), STR_LIT(""), &obj, NULL };
	size_t i, cap;
	int ok = 0, failed = 0;

	(void)state;
	memset(&obj, 0, sizeof(obj));
	obj.kind = OBJECT_CONFIG_MAP;
	obj.api_version = STR_LIT("v1");
	obj.kind_name = STR_LIT("ConfigMap");
	for (i = 0; i < 64; i++) {
		groups[i] = STR_LIT("dra-guard:freeze-breakers");
		extras[i].key = i % 2 ? STR_LIT("k1") : STR_LIT("k2");
		extras[i].value = STR_LIT("v");
	}
	/* Every cap from nothing to plenty: each either gives the whole
	 * identity or fails; never a part of it. */
	for (cap = 0; cap <= 8192; cap += 16) {
		struct arena *a = NULL;
		int rc;

		assert_int_equal(arena_new(cap, &a), 0);
		rc = synth_request(&who, &w, a, &req);
		if (rc == 0) {
			uint32_t n1 = 0, n2 = 0;

			assert_int_equal(req.user.ngroups, 64);
			model_user_extra(&req.user, "k1", &n1);
			model_user_extra(&req.user, "k2", &n2);
			assert_int_equal(n1 + n2, 64);
			ok++;
		} else {
			assert_int_equal(rc, -E2BIG);
			assert_int_equal(req.user.ngroups, 0);
			assert_null(req.user.groups);
			failed++;
		}
		arena_free(a);
	}
	assert_true(ok > 0 && failed > 0);
}

/* --- what a made-up request leaves out ------------------------------------------ */

struct skip_case {
	const char *name;
	const char *fixture;
	const char *old_without;     /* UPDATE: the stored object is the fixture without this */
	const char *subresource;
	const char *user;
	enum rule_id rule;           /* fires when the request exercises it */
};

static const struct skip_case skip_cases[] = {
	{ "slice by a stranger", "tests/fixtures/resourceslice-v1-node-allocatable.json", NULL, "",
	  "mallory", RULE_SLICE_WRITER },
	{ "claim allocation by a stranger", "tests/fixtures/resourceclaim-v1-allocated.json", "status", "status",
	  "mallory", RULE_STATUS_ALLOCATION_WRITER },
	{ "pod claim status by a stranger", "tests/fixtures/pod-status-node-allocatable.json", "status", "status",
	  "mallory", RULE_STATUS_POD_WRITER },
};

static bool has_violation(const struct verdict *v, enum rule_id id)
{
	uint32_t i;

	for (i = 0; i < v->nviolations; i++)
		if (v->violations[i].rule == id)
			return true;
	return false;
}

static bool skip_lists(const struct synth_skip *s, size_t n, enum rule_id id)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < s[i].nrules; j++)
			if (s[i].rules[j] == id)
				return true;
	return false;
}

/* For each case: run as given, the rule fires and nothing is listed as
 * skipped; without the user, or (for status rules) as a write of the main
 * resource, it does not fire, and the skip list names it. So the list says
 * exactly what the engine left out. */
static void test_skipped_rules_are_the_ones_the_engine_did_not_run(void **state)
{
	size_t len = 0, i;
	char *ptext = testutil_read_file(testutil_repo_path("tests/golden/policies/strict.yaml"), &len);
	struct policy_error perr;
	struct policy *pol = NULL;

	(void)state;
	assert_non_null(ptext);
	assert_int_equal(policy_load(ptext, len, &pol, &perr), 0);
	free(ptext);
	for (i = 0; i < sizeof(skip_cases) / sizeof(skip_cases[0]); i++) {
		const struct skip_case *c = &skip_cases[i];
		char *text = fixture_without(c->fixture, NULL);
		char *old_text = c->old_without ? fixture_without(c->fixture, c->old_without) : NULL;
		struct arena *a = NULL;
		struct k8s_object obj, old;
		struct synth_identity who = { str_from_cstr(c->user), NULL, 0, NULL, 0 };
		struct synth_write w = { old_text ? ADMISSION_OP_UPDATE : ADMISSION_OP_CREATE,
					 str_from_cstr(c->subresource), STR_LIT(""), &obj, &old };
		struct engine_options opt = { 0 };
		struct admission_request req;
		struct synth_skip skipped[SYNTH_SKIP_MAX] = { { NULL, { 0 }, 0 } };
		struct verdict v;
		size_t n;
		int pass;

		assert_int_equal(arena_new(ARENA_CAP, &a), 0);
		decode(text, a, &obj);
		if (old_text)
			decode(old_text, a, &old);
		for (pass = 0; pass < 3; pass++) {
			bool identity = pass != 1, as_status = pass != 2;

			if (pass == 2 && c->subresource[0] == '\0')
				continue;
			w.subresource = as_status ? str_from_cstr(c->subresource) : STR_LIT("");
			opt.skip_identity_rules = !identity;
			assert_int_equal(synth_request(&who, &w, a, &req), 0);
			assert_int_equal(engine_decide(pol, NULL, &opt, &req, 0, a, &v), 0);
			n = synth_skipped(&req, identity, true, skipped);
			if (pass == 0) {
				if (!has_violation(&v, c->rule) || n != 0)
					fail_msg("%s: rule %s did not fire, or %zu skips listed", c->name,
						 rule_name(c->rule), n);
			} else {
				if (has_violation(&v, c->rule) || !skip_lists(skipped, n, c->rule))
					fail_msg("%s (pass %d): rule %s fired or is not listed as skipped", c->name,
						 pass, rule_name(c->rule));
				assert_non_null(skipped[0].reason);
			}
		}
		arena_free(a);
		free(text);
		free(old_text);
	}
	policy_free(pol);
}

/* Without a cluster view the rules that read one do not run (the engine
 * returns before them): dry-run must name them, per kind and operation as
 * the engine dispatches them, and name none once a view is given. */
static void test_view_rules_are_listed_without_a_view(void **state)
{
	static const struct {
		const char *fixture, *old_without, *subresource;
		bool update;
		enum rule_id want[3];
		size_t nwant;
	} rows[] = {
		{ "tests/fixtures/resourceslice-v1-node-allocatable.json", NULL, "", false,
		  { RULE_SLICE_GENERATION_STALE, RULE_SLICE_POOL_COLLISION }, 2 },
		{ "tests/fixtures/resourceslice-v1-node-allocatable.json", NULL, "", true,
		  { RULE_SLICE_GENERATION_STALE, RULE_SLICE_POOL_COLLISION, RULE_LEDGER_MAPPING_DRIFT }, 3 },
		{ "tests/fixtures/resourceclaim-v1-allocated.json", "status", "status", true,
		  { RULE_LEDGER_POOL_FRESH, RULE_LEDGER_DEVICE_DUPLICATE, RULE_LEDGER_NUMA_SPLIT }, 3 },
		{ "tests/fixtures/pod-status-node-allocatable.json", "status", "status", true,
		  { RULE_LEDGER_POD_AMOUNTS, RULE_LEDGER_POD_OMITTED }, 2 },
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *text = fixture_without(rows[i].fixture, NULL);
		char *old_text = rows[i].old_without ? fixture_without(rows[i].fixture, rows[i].old_without) : NULL;
		struct arena *a = NULL;
		struct k8s_object obj, old;
		struct synth_identity who = { STR_LIT("system:kube-scheduler"), NULL, 0, NULL, 0 };
		struct synth_write w = { rows[i].update ? ADMISSION_OP_UPDATE : ADMISSION_OP_CREATE,
					 str_from_cstr(rows[i].subresource), STR_LIT(""), &obj, &old };
		struct admission_request req;
		struct synth_skip skipped[SYNTH_SKIP_MAX] = { { NULL, { 0 }, 0 } };
		size_t n;

		assert_int_equal(arena_new(ARENA_CAP, &a), 0);
		decode(text, a, &obj);
		decode(old_text ? old_text : text, a, &old);
		assert_int_equal(synth_request(&who, &w, a, &req), 0);
		n = synth_skipped(&req, true, false, skipped);
		assert_int_equal(n, 1);
		assert_non_null(strstr(skipped[0].reason, "--view"));
		assert_int_equal(skipped[0].nrules, rows[i].nwant);
		for (j = 0; j < rows[i].nwant; j++)
			if (!skip_lists(skipped, n, rows[i].want[j]))
				fail_msg("row %zu: %s not listed", i, rule_name(rows[i].want[j]));
		assert_int_equal(synth_skipped(&req, true, true, skipped), 0);
		arena_free(a);
		free(text);
		free(old_text);
	}
}

/* --- is it a status write? -------------------------------------------------------- */

struct status_case {
	const char *name;
	const char *obj, *old;
	bool only_status;
};

#define CLAIM_HEAD "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"

static const struct status_case status_cases[] = {
	{ "allocation added",
	  CLAIM_HEAD "metadata: {name: c, resourceVersion: '2'}\nspec: {x: 1}\nstatus: {allocation: {a: 1}}\n",
	  CLAIM_HEAD "metadata: {name: c, resourceVersion: '1'}\nspec: {x: 1}\n", true },
	{ "server fields and order differ too",
	  "kind: ResourceClaim\napiVersion: resource.k8s.io/v1\nspec: {x: 1}\n"
	  "metadata: {uid: u, name: c, managedFields: [], generation: 3}\nstatus: {reservedFor: []}\n",
	  CLAIM_HEAD "metadata: {name: c, creationTimestamp: t}\nspec: {x: 1}\nstatus: {}\n", true },
	{ "spec differs as well",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 2}\nstatus: {allocation: {a: 1}}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\n", false },
	{ "labels differ as well",
	  CLAIM_HEAD "metadata: {name: c, labels: {a: b}}\nspec: {x: 1}\nstatus: {allocation: {a: 1}}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\n", false },
	{ "a member added outside status",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\nextra: 1\nstatus: {allocation: {a: 1}}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\n", false },
	{ "nothing differs",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\nstatus: {a: [1, 2]}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\nstatus: {a: [1, 2]}\n", false },
	{ "status sequence order differs",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\nstatus: {a: [2, 1]}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1}\nstatus: {a: [1, 2]}\n", true },
	{ "number spelled differently is a difference",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: 1.0}\nstatus: {a: 1}\n",
	  CLAIM_HEAD "metadata: {name: c}\nspec: {x: '1'}\n", false },
};

static void test_only_status_differs(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
		const struct status_case *c = &status_cases[i];
		struct doc_set *a = NULL, *b = NULL;
		struct doc_error err;
		bool got;

		assert_int_equal(doc_parse_yaml(c->obj, strlen(c->obj), NULL, &a, &err), 0);
		assert_int_equal(doc_parse_yaml(c->old, strlen(c->old), NULL, &b, &err), 0);
		got = synth_only_status_differs(doc_set_root(a, 0), doc_set_root(b, 0));
		if (got != c->only_status)
			fail_msg("%s: got %d", c->name, got);
		doc_set_free(a);
		doc_set_free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_is_complete),
		cmocka_unit_test(test_a_full_arena_fails_instead_of_cutting_the_identity),
		cmocka_unit_test(test_skipped_rules_are_the_ones_the_engine_did_not_run),
		cmocka_unit_test(test_view_rules_are_listed_without_a_view),
		cmocka_unit_test(test_only_status_differs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
