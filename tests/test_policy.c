/* test_policy.c - the policy loader: what loads, what does not, and where it says. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "testutil.h"

/* The code under test is linked with -Wl,--wrap=malloc,--wrap=calloc,
 * --wrap=realloc: the calls it makes are counted (libyaml, a shared
 * library, allocates on its own). */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
static unsigned long heap_calls;

void *__wrap_malloc(size_t n)
{
	heap_calls++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	heap_calls++;
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	heap_calls++;
	return __real_realloc(p, n);
}

#define HEAD "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"

static struct policy *load_ok(const char *text)
{
	struct policy *p = NULL;
	struct policy_error err;
	int rc = policy_load(text, strlen(text), &p, &err);

	if (rc) {
		char line[1024];

		policy_error_format(&err, line, sizeof(line));
		fail_msg("policy did not load: %s\n%s", line, text);
	}
	return p;
}

/* --- invalid documents: one row each, with where the error must point ----- */

struct bad_case {
	const char *name;
	const char *text;
	uint32_t line;             /* 0: do not check */
	const char *path;          /* expected err.path, NULL: do not check */
	const char *msg_part;      /* substring of err.msg */
};

static const struct bad_case bad_cases[] = {
	{ "unknown top-level key", HEAD "enforcment:\n  default: deny\n", 3, "", "unknown key \"enforcment\"" },
	{ "wrong apiVersion", "apiVersion: dra-guard.io/v1\nkind: Policy\n", 1, "apiVersion", "not supported" },
	{ "missing kind", "apiVersion: dra-guard.io/v1alpha1\n", 1, "kind", "missing" },
	{ "wrong kind", "apiVersion: dra-guard.io/v1alpha1\nkind: Deployment\n", 2, "kind", "Deployment" },
	{ "bad default action", HEAD "enforcement:\n  default: block\n", 4, "enforcement.default", "unknown action" },
	{ "unknown rule id", HEAD "enforcement:\n  rules:\n    slice.mapping.nam: warn\n", 5,
	  "enforcement.rules[\"slice.mapping.nam\"]", "unknown rule id" },
	{ "bad rule action", HEAD "enforcement:\n  rules:\n    slice.canary: maybe\n", 5,
	  "enforcement.rules[\"slice.canary\"]", "unknown action" },
	{ "schedulers not a list", HEAD "schedulers: system:kube-scheduler\n", 3, "schedulers", "expected a sequence" },
	{ "empty scheduler", HEAD "schedulers: [\"\"]\n", 3, "schedulers[0]", "must not be empty" },
	{ "duplicate scheduler", HEAD "schedulers: [a, b, a]\n", 3, "schedulers[2]", "duplicate entry" },
	{ "driver name not DNS", HEAD "drivers:\n  GPU_Driver:\n    scope: node\n", 0, "drivers.GPU_Driver", "not a valid DRA driver name" },
	{ "unknown driver key", HEAD "drivers:\n  gpu.example.com:\n    serviceAccount: [x]\n", 5,
	  "drivers[\"gpu.example.com\"]", "unknown key \"serviceAccount\"" },
	{ "bad scope", HEAD "drivers:\n  gpu.example.com:\n    scope: global\n", 5,
	  "drivers[\"gpu.example.com\"].scope", "unknown scope" },
	{ "serviceAccount format", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts: [gpu-driver]\n", 5,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0]", "not a ServiceAccount user name" },
	{ "resource not a node resource", HEAD "drivers:\n  gpu.example.com:\n    resources:\n      pods: {max: 2}\n", 6,
	  "drivers[\"gpu.example.com\"].resources.pods", "not a node resource" },
	{ "max not a quantity", HEAD "drivers:\n  gpu.example.com:\n    resources:\n      memory: {max: lots}\n", 6,
	  "drivers[\"gpu.example.com\"].resources.memory.max", "not a quantity" },
	{ "max zero", HEAD "drivers:\n  gpu.example.com:\n    resources:\n      memory: {max: 0}\n", 6,
	  "drivers[\"gpu.example.com\"].resources.memory.max", "greater than zero" },
	{ "unknown resource key", HEAD "drivers:\n  gpu.example.com:\n    resources:\n      memory: {min: 1Gi}\n", 6,
	  "drivers[\"gpu.example.com\"].resources.memory", "unknown key \"min\"" },
	{ "canary typo", HEAD "canary:\n  node: [a]\n", 4, "canary", "unknown key \"node\"" },
	{ "view max age too short", HEAD "clusterView:\n  maxAge: 5s\n", 4, "clusterView.maxAge", "from 10s to 86400s" },
	{ "view max age not a duration", HEAD "clusterView:\n  maxAge: soon\n", 4, "clusterView.maxAge", "not a duration" },
	{ "view typo", HEAD "clusterView:\n  max: 5m\n", 4, "clusterView", "unknown key \"max\"" },
	{ "canary glob unclosed", HEAD "canary:\n  nodes: [\"worker-[12\"]\n", 4, "canary.nodes[0]", "unclosed" },
	{ "freeze scope empty", HEAD "freeze:\n  scope: {}\n", 4, "freeze.scope", "freeze nothing" },
	{ "freeze scope typo", HEAD "freeze:\n  scope:\n    namespace: [a]\n", 5, "freeze.scope", "unknown key \"namespace\"" },
	{ "breakGlass typo", HEAD "freeze:\n  breakGlass:\n    group: [a]\n", 5, "freeze.breakGlass", "unknown key \"group\"" },
	{ "alertAfter without unit", HEAD "freeze:\n  alertAfter: 3600\n", 4, "freeze.alertAfter", "expected a duration" },
	{ "alertAfter in days", HEAD "freeze:\n  alertAfter: 2d\n", 4, "freeze.alertAfter", "\"2d\" is not a duration" },
	{ "alertAfter units out of order", HEAD "freeze:\n  alertAfter: 30m1h\n", 4, "freeze.alertAfter", "not a duration" },
	{ "alertAfter unit twice", HEAD "freeze:\n  alertAfter: 1h1h\n", 4, "freeze.alertAfter", "not a duration" },
	{ "alertAfter fraction", HEAD "freeze:\n  alertAfter: 1.5h\n", 4, "freeze.alertAfter", "not a duration" },
	{ "alertAfter no number", HEAD "freeze:\n  alertAfter: h\n", 4, "freeze.alertAfter", "not a duration" },
	{ "alertAfter too short", HEAD "freeze:\n  alertAfter: 59s\n", 4, "freeze.alertAfter", "out of range (accepted: 60s to 720h)" },
	{ "alertAfter too long", HEAD "freeze:\n  alertAfter: 720h1s\n", 4, "freeze.alertAfter", "out of range" },
	{ "alertAfter huge", HEAD "freeze:\n  alertAfter: 99999999999999999999h\n", 4, "freeze.alertAfter", "out of range" },
	{ "alertAfter typo", HEAD "freeze:\n  alertafter: 1h\n", 4, "freeze", "unknown key \"alertafter\"" },
	{ "numaAttribute not a name", HEAD "drivers:\n  gpu.example.com:\n    numaAttribute: \"/numa\"\n", 5,
	  "drivers[\"gpu.example.com\"].numaAttribute", "not a device attribute name" },
	{ "numaAlign not a bool", HEAD "drivers:\n  gpu.example.com:\n    numaAlign: yes please\n", 5,
	  "drivers[\"gpu.example.com\"].numaAlign", "expected a boolean" },
	{ "numa typo", HEAD "numa:\n  alignClasses: [a]\n", 4, "numa", "unknown key \"alignClasses\"" },
	{ "settle window too long", HEAD "ledger:\n  settleWindow: 2h\n", 4, "ledger.settleWindow", "out of range" },
	{ "undecided unknown", HEAD "ledger:\n  undecided: warn\n", 4, "ledger.undecided", "accepted: allow, deny" },
	{ "ledger typo", HEAD "ledger:\n  settle: 1m\n", 4, "ledger", "unknown key \"settle\"" },
	{ "promotion window zero", HEAD "promotion:\n  zeroDivergenceWindow: 0s\n", 4,
	  "promotion.zeroDivergenceWindow", "out of range" },
	{ "promotion p99 under p50", HEAD "promotion:\n  pendingSLO: {p50: 1m, p99: 30s}\n", 4, "promotion.pendingSLO",
	  "below p50" },
	{ "promotion pending typo", HEAD "promotion:\n  pendingSLO: {p95: 1m}\n", 4, "promotion.pendingSLO",
	  "unknown key \"p95\"" },
	{ "promotion headroom 100", HEAD "promotion:\n  capacityHeadroomPercent: 100\n", 4,
	  "promotion.capacityHeadroomPercent", "from 0 to 99" },
	{ "promotion headroom fraction", HEAD "promotion:\n  capacityHeadroomPercent: 2.5\n", 4,
	  "promotion.capacityHeadroomPercent", "whole percentage" },
	{ "promotion drill not a bool", HEAD "promotion:\n  requireRollbackDrill: sometimes\n", 4,
	  "promotion.requireRollbackDrill", "expected a boolean" },
	{ "promotion drivers twice", HEAD "promotion:\n  drivers: [a.example.com, a.example.com]\n", 4,
	  "promotion.drivers[1]", "duplicate" },
	{ "promotion typo", HEAD "promotion:\n  zeroDivergence: 1h\n", 4, "promotion", "unknown key \"zeroDivergence\"" },
	{ "yaml syntax", HEAD "drivers: [\n", 0, NULL, "" },
	{ "duplicate key", HEAD "schedulers: [a]\nschedulers: [b]\n", 4, NULL, "duplicate" },
	{ "two documents", HEAD "---\n" HEAD, 0, NULL, "exactly one" },
	{ "empty document", "", 0, NULL, "exactly one" },
	{ "serviceAccounts entry not a name or map", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts: [7]\n", 5,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0]", "expected a ServiceAccount user name or a map" },
	{ "serviceAccounts entry without name", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - scope: cluster\n", 6, "drivers[\"gpu.example.com\"].serviceAccounts[0]", "name is missing" },
	{ "serviceAccounts entry unknown key", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - name: system:serviceaccount:a:b\n      pods: [x]\n", 7,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0]", "unknown key \"pods\"" },
	{ "serviceAccounts entry bad scope", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - {name: \"system:serviceaccount:a:b\", scope: everywhere}\n", 6,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0].scope", "unknown scope" },
	{ "controllerPods with scope cluster", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - name: system:serviceaccount:a:b\n      scope: cluster\n      controllerPods: [c-*]\n", 8,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0].controllerPods", "only matter for scope: node" },
	{ "controllerPods bad glob", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - name: system:serviceaccount:a:b\n      controllerPods: [\"c-[\"]\n", 7,
	  "drivers[\"gpu.example.com\"].serviceAccounts[0].controllerPods[0]", "unclosed" },
	{ "ServiceAccount listed twice in two forms", HEAD "drivers:\n  gpu.example.com:\n    serviceAccounts:\n"
	  "    - system:serviceaccount:a:b\n    - {name: \"system:serviceaccount:a:b\", scope: cluster}\n", 7,
	  "drivers[\"gpu.example.com\"].serviceAccounts[1]", "listed twice" },
	{ "collectors not a list", HEAD "writers:\n  collectors: gc\n", 4, "writers.collectors", "expected a sequence" },
	{ "json unknown key", "{\"apiVersion\":\"dra-guard.io/v1alpha1\",\"kind\":\"Policy\",\"x\":1}", 1, "", "unknown key \"x\"" },
	{ "configmap missing policy key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata:\n  freeze: \"true\"\n",
	  5, "data", "is missing" },
	{ "configmap unknown data key", "apiVersion: v1\nkind: ConfigMap\ndata:\n  policy.yaml: x\n  freze: \"true\"\n",
	  5, "data", "unknown key \"freze\"" },
	{ "configmap bad freeze", "apiVersion: v1\nkind: ConfigMap\ndata:\n  freeze: \"yes\"\n  policy.yaml: |\n"
	  "    apiVersion: dra-guard.io/v1alpha1\n    kind: Policy\n",
	  4, NULL, "freeze must be \"true\" or \"false\"" },
	{ "configmap freeze not a string", "apiVersion: v1\nkind: ConfigMap\ndata:\n  freeze: true\n  policy.yaml: x\n",
	  4, NULL, "expected a string" },
	{ "configmap inner error", "apiVersion: v1\nkind: ConfigMap\ndata:\n  policy.yaml: |\n"
	  "    apiVersion: dra-guard.io/v1alpha1\n    kind: Policy\n    canary: {nodez: [a]}\n", 7, "canary",
	  "unknown key \"nodez\"" },
};

static void test_invalid_policies_say_where(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct policy *p = NULL;
		struct policy_error err;
		int rc = policy_load(c->text, strlen(c->text), &p, &err);

		if (rc != -EINVAL)
			fail_msg("%s: expected -EINVAL, got %d", c->name, rc);
		assert_null(p);
		if (c->line && err.line != c->line)
			fail_msg("%s: line %u, expected %u (%s)", c->name, err.line, c->line, err.msg);
		if (c->path && strcmp(err.path, c->path) != 0)
			fail_msg("%s: path \"%s\", expected \"%s\" (%s)", c->name, err.path, c->path, err.msg);
		if (!strstr(err.msg, c->msg_part))
			fail_msg("%s: message \"%s\" lacks \"%s\"", c->name, err.msg, c->msg_part);
	}
}

/* The check of the guard's own ConfigMap (policy.invalid) says what the
 * loader says, and builds everything in the request's arena. */
static void test_check_in_an_arena(void **state)
{
	static const char *const good[] = {
		HEAD,
		HEAD "enforcement:\n  default: warn\n  rules:\n    slice.canary: dryrun\n",
		"{\"apiVersion\": \"dra-guard.io/v1alpha1\", \"kind\": \"Policy\"}",
	};
	struct arena *a = NULL;
	struct policy_error err, want;
	struct policy *p = NULL;
	unsigned long before;
	size_t i;
	int rc;

	(void)state;
	assert_int_equal(arena_new(64 << 20, &a), 0);
	assert_non_null(arena_alloc(a, 8 << 20));
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		arena_reset(a);
		before = heap_calls;
		assert_int_equal(policy_check_parts(good[i], strlen(good[i]), true, "false", 5, false, NULL, 0,
						    a, &err), 0);
		assert_int_equal(heap_calls - before, 0);
	}
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		arena_reset(a);
		before = heap_calls;
		rc = policy_check_parts(c->text, strlen(c->text), false, NULL, 0, false, NULL, 0, a, &err);
		if (heap_calls != before)
			fail_msg("%s: %lu heap allocations", c->name, heap_calls - before);
		assert_int_equal(policy_load_parts(c->text, strlen(c->text), false, NULL, 0, false, NULL, 0,
						   &p, &want), rc);
		assert_null(p);
		if (err.line != want.line || strcmp(err.path, want.path) || strcmp(err.msg, want.msg))
			fail_msg("%s: the check says \"%s\", the loader \"%s\"", c->name, err.msg, want.msg);
	}
	/* A freeze key the loader refuses, refused the same way. */
	arena_reset(a);
	assert_int_equal(policy_check_parts(HEAD, strlen(HEAD), true, "yes", 3, false, NULL, 0, a, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "true"));
	arena_free(a);
	/* The request's arena is the bound: over it is -E2BIG, said as such. */
	assert_int_equal(arena_new(1024, &a), 0);
	rc = policy_check_parts(good[1], strlen(good[1]), false, NULL, 0, false, NULL, 0, a, &err);
	assert_int_equal(rc, -E2BIG);
	assert_non_null(strstr(err.msg, "more memory than the request may use"));
	arena_free(a);
}

static void test_cluster_view_max_age(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD);
	assert_int_equal(p->view_max_age_s, POLICY_VIEW_MAX_AGE_DEFAULT);
	policy_free(p);
	p = load_ok(HEAD "clusterView:\n  maxAge: 2m\n");
	assert_int_equal(p->view_max_age_s, 120);
	policy_free(p);
	p = load_ok(HEAD "clusterView:\n  maxAge: 90\n");
	assert_int_equal(p->view_max_age_s, 90);
	policy_free(p);
}

static void test_ledger_settings(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD);
	assert_int_equal(p->ledger_settle_s, POLICY_SETTLE_WINDOW_DEFAULT_S);
	assert_false(p->ledger_undecided_deny);
	policy_free(p);
	p = load_ok(HEAD "drivers:\n  gpu.example.com:\n    numaAttribute: gpu.example.com/numaNode\n"
		    "    numaAlign: true\nnuma:\n  attributes: [numaNode]\n  alignDeviceClasses: [gpu.example.com]\n"
		    "ledger:\n  settleWindow: 0s\n  undecided: deny\n");
	assert_string_equal(p->drivers[0].numa_attribute.ptr, "gpu.example.com/numaNode");
	assert_true(p->drivers[0].numa_align);
	assert_int_equal(p->numa_align_classes.n, 1);
	assert_int_equal(p->ledger_settle_s, 0);
	assert_true(p->ledger_undecided_deny);
	policy_free(p);
}

static void test_promotion_thresholds(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD);
	assert_int_equal(p->promotion.zero_divergence_s, POLICY_PROMOTION_WINDOW_DEFAULT_S);
	assert_int_equal(p->promotion.pending_p50_s, POLICY_PROMOTION_P50_DEFAULT_S);
	assert_int_equal(p->promotion.pending_p99_s, POLICY_PROMOTION_P99_DEFAULT_S);
	assert_int_equal(p->promotion.capacity_headroom_pct, POLICY_PROMOTION_HEADROOM_DEFAULT_PCT);
	assert_true(p->promotion.require_rollback_drill && p->promotion.require_restarts);
	policy_free(p);
	p = load_ok(HEAD "promotion:\n  zeroDivergenceWindow: 72h\n  pendingSLO: {p50: 10s, p99: 2m}\n"
		    "  capacityHeadroomPercent: 0\n  requireRollbackDrill: false\n  requireRestarts: false\n"
		    "  drivers: [gpu.example.com]\n");
	assert_int_equal(p->promotion.zero_divergence_s, 72 * 3600);
	assert_int_equal(p->promotion.pending_p50_s, 10);
	assert_int_equal(p->promotion.pending_p99_s, 120);
	assert_int_equal(p->promotion.capacity_headroom_pct, 0);
	assert_false(p->promotion.require_rollback_drill || p->promotion.require_restarts);
	assert_int_equal(p->promotion.drivers.n, 1);
	policy_free(p);
}

static void test_full_document_loads(void **state)
{
	struct policy *p;
	const struct driver_policy *d;
	const struct resource_limit *r;
	struct quantity q;

	(void)state;
	p = load_ok(HEAD
		    "enforcement:\n  default: warn\n  rules: {slice.canary: deny, slice.shape.future: dryrun, "
		    "ledger.pod.omitted: deny}\n"
		    "schedulers: [system:kube-scheduler, my-scheduler]\n"
		    "writers: {admins: [dra-admins], allocators: [system:serviceaccount:x:alloc]}\n"
		    "drivers:\n"
		    "  gpu.example.com:\n"
		    "    resources:\n      memory: {max: 64Gi}\n      hugepages-2Mi: {max: 4Gi}\n      cpu:\n"
		    "    serviceAccounts: [system:serviceaccount:gpu-driver:kubelet-plugin]\n"
		    "    deviceClasses: [gpu.example.com]\n"
		    "    scope: cluster\n"
		    "  cpu.example.com: {}\n"
		    "canary:\n  nodes: [\"gpu-canary-*\", worker-7]\n"
		    "freeze:\n  scope: {namespaces: [team-a]}\n  breakGlass: {groups: [sre], users: [alice]}\n"
		    "numa:\n  attributes: [dra.example.com/numaNode]\n");
	assert_int_equal(p->default_action, ACTION_WARN);
	assert_int_equal(policy_action(p, RULE_SLICE_CANARY), ACTION_DENY);
	assert_int_equal(policy_action(p, RULE_SLICE_SHAPE_FUTURE), ACTION_DRYRUN);
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_NAME), ACTION_WARN);
	/* Denying a status that leaves a claim out would loop the scheduler:
	 * the rule is never stricter than warn, whatever the policy says. */
	assert_int_equal(policy_action(p, RULE_LEDGER_POD_OMITTED), ACTION_WARN);
	assert_int_equal(p->schedulers.n, 2);
	assert_true(policy_list_has(&p->allocators, STR_LIT("system:serviceaccount:x:alloc")));
	assert_true(policy_list_has(&p->admin_groups, STR_LIT("dra-admins")));
	assert_true(p->has_drivers);
	assert_int_equal(p->ndrivers, 2);
	d = policy_driver(p, STR_LIT("gpu.example.com"));
	assert_non_null(d);
	assert_int_equal(d->scope, DRIVER_SCOPE_CLUSTER);
	assert_true(d->has_resources);
	r = policy_driver_resource(d, STR_LIT("memory"));
	assert_non_null(r);
	assert_true(r->has_max);
	assert_int_equal(quantity_parse("65536Mi", 7, &q), 0);
	assert_int_equal(quantity_cmp(&r->max, &q), 0);
	r = policy_driver_resource(d, STR_LIT("cpu"));
	assert_non_null(r);
	assert_false(r->has_max);
	assert_null(policy_driver_resource(d, STR_LIT("ephemeral-storage")));
	d = policy_driver(p, STR_LIT("cpu.example.com"));
	assert_non_null(d);
	assert_int_equal(d->scope, DRIVER_SCOPE_NODE);
	assert_false(d->has_resources);
	assert_null(policy_driver(p, STR_LIT("other.example.com")));
	assert_true(p->has_canary);
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("gpu-canary-12")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("worker-7")));
	assert_false(policy_list_glob(&p->canary_nodes, STR_LIT("worker-77")));
	assert_true(p->freeze_scoped);
	assert_true(policy_list_has(&p->freeze_namespaces, STR_LIT("team-a")));
	assert_true(policy_list_has(&p->break_glass_users, STR_LIT("alice")));
	assert_true(policy_list_has(&p->numa_attributes, STR_LIT("dra.example.com/numaNode")));
	assert_false(p->frozen);
	assert_int_equal(strlen(p->hash), 64);
	policy_free(p);
}

static void test_builtin_denies_everything_with_advisory_warnings(void **state)
{
	struct policy *p = NULL;
	int i;

	(void)state;
	assert_int_equal(policy_builtin(&p), 0);
	for (i = 0; i < RULE_COUNT; i++)
		assert_int_equal(policy_action(p, (enum rule_id)i), rule_builtin_action((enum rule_id)i));
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_EMPTY), ACTION_WARN);
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_NAME), ACTION_DENY);
	assert_false(p->has_drivers);
	assert_false(p->has_canary);
	assert_true(policy_list_has(&p->schedulers, STR_LIT("system:kube-scheduler")));
	assert_true(policy_list_has(&p->allocators, STR_LIT(POLICY_DEFAULT_ALLOCATOR_SA)));
	policy_free(p);
	policy_free(NULL);
}

static void test_advisory_rules_never_escalate_by_default(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD "enforcement: {default: deny}\n");
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_EMPTY), ACTION_WARN);
	policy_free(p);
	p = load_ok(HEAD "enforcement: {default: dryrun}\n");
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_EMPTY), ACTION_DRYRUN);
	assert_int_equal(policy_action(p, RULE_SLICE_CANARY), ACTION_DRYRUN);
	policy_free(p);
	p = load_ok(HEAD "enforcement: {rules: {slice.mapping.empty: deny}}\n");
	assert_int_equal(policy_action(p, RULE_SLICE_MAPPING_EMPTY), ACTION_DENY);
	policy_free(p);
}

static void test_empty_allocators_means_none(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD "writers: {allocators: []}\n");
	assert_int_equal(p->allocators.n, 0);
	policy_free(p);
}

static void test_configmap_keys_and_freeze(void **state)
{
	static const char cm[] =
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dra-guard-policy\n  namespace: dra-guard\n"
		"data:\n  freeze: \"true\"\n  freeze-reason: \"INC-1: hugepages\"\n  policy.yaml: |\n"
		"    apiVersion: dra-guard.io/v1alpha1\n    kind: Policy\n    canary: {nodes: [a]}\n";
	struct policy *p = load_ok(cm), *q;

	(void)state;
	assert_true(p->frozen);
	assert_true(str_eq_cstr(p->freeze_reason, "INC-1: hugepages"));
	assert_true(p->has_canary);
	q = load_ok(cm);
	assert_string_equal(p->hash, q->hash);
	policy_free(q);
	policy_free(p);
}

static void test_freeze_alert_after(void **state)
{
	static const struct {
		const char *text;        /* the freeze section, "" for none */
		uint32_t seconds;
	} cases[] = {
		{ "", POLICY_FREEZE_ALERT_AFTER_DEFAULT_S },
		{ "freeze:\n  alertAfter: null\n", POLICY_FREEZE_ALERT_AFTER_DEFAULT_S },
		{ "freeze:\n  alertAfter: 4h\n", 14400 },
		{ "freeze:\n  alertAfter: 90m\n", 5400 },
		{ "freeze:\n  alertAfter: 1h30m\n", 5400 },
		{ "freeze:\n  alertAfter: 1h0m30s\n", 3630 },
		{ "freeze:\n  alertAfter: 60s\n", 60 },
		{ "freeze:\n  alertAfter: 1m\n", 60 },
		{ "freeze:\n  alertAfter: \"720h\"\n", 720 * 3600 },
		{ "freeze: {alertAfter: 30m, scope: {namespaces: [a]}}\n", 1800 },
	};
	struct policy *p = NULL;
	size_t i;

	(void)state;
	assert_int_equal(POLICY_FREEZE_ALERT_AFTER_DEFAULT_S, 4 * 3600);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];

		snprintf(text, sizeof(text), "%s%s", HEAD, cases[i].text);
		p = load_ok(text);
		if (p->freeze_alert_after_s != cases[i].seconds)
			fail_msg("%s: %u s, expected %u", cases[i].text, p->freeze_alert_after_s, cases[i].seconds);
		policy_free(p);
	}
	assert_int_equal(policy_builtin(&p), 0);
	assert_int_equal(p->freeze_alert_after_s, POLICY_FREEZE_ALERT_AFTER_DEFAULT_S);
	policy_free(p);
}

struct freeze_case {
	const char *value;
	int rc;
	bool frozen;
};

static void test_freeze_key_values(void **state)
{
	static const struct freeze_case cases[] = {
		{ "true", 0, true }, { "false", 0, false }, { "true\n", 0, true }, { "  false ", 0, false },
		{ "True", -EINVAL, false }, { "yes", -EINVAL, false }, { "1", -EINVAL, false }, { "", -EINVAL, false },
	};
	static const char doc[] = HEAD;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy *p = NULL;
		struct policy_error err;
		int rc = policy_load_parts(doc, strlen(doc), true, cases[i].value, strlen(cases[i].value),
					   false, NULL, 0, &p, &err);

		if (rc != cases[i].rc)
			fail_msg("freeze \"%s\": rc %d, expected %d", cases[i].value, rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(p->frozen, cases[i].frozen);
		else
			assert_string_equal(err.source, POLICY_KEY_FREEZE);
		policy_free(p);
	}
}

static void test_freeze_reason_is_capped(void **state)
{
	char reason[POLICY_FREEZE_REASON_MAX + 2];
	struct policy *p = NULL;
	struct policy_error err;

	(void)state;
	memset(reason, 'x', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	assert_int_equal(policy_load_parts(HEAD, strlen(HEAD), false, NULL, 0, true, reason, strlen(reason),
					   &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at most"));
}

static void test_hash_changes_with_every_input(void **state)
{
	struct policy *a = NULL, *b = NULL, *c = NULL;

	(void)state;
	assert_int_equal(policy_load_parts(HEAD, strlen(HEAD), true, "false", 5, false, NULL, 0, &a, NULL), 0);
	assert_int_equal(policy_load_parts(HEAD, strlen(HEAD), true, "true", 4, false, NULL, 0, &b, NULL), 0);
	assert_int_equal(policy_load_parts(HEAD, strlen(HEAD), true, "true", 4, true, "r", 1, &c, NULL), 0);
	assert_string_not_equal(a->hash, b->hash);
	assert_string_not_equal(b->hash, c->hash);
	policy_free(a);
	policy_free(b);
	policy_free(c);
}

static void test_example_policy_in_repository_loads(void **state)
{
	size_t len = 0;
	char *text = testutil_read_file(testutil_repo_path("examples/policy-configmap.yaml"), &len);
	struct policy *p;

	(void)state;
	assert_non_null(text);
	p = load_ok(text);
	assert_true(p->has_drivers);
	assert_false(p->frozen);
	policy_free(p);
	free(text);
}

static void test_json_policy_loads(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok("{\"apiVersion\":\"dra-guard.io/v1alpha1\",\"kind\":\"Policy\","
		    "\"drivers\":{\"gpu.example.com\":{\"resources\":{\"memory\":{\"max\":\"1Gi\"}}}}}");
	assert_non_null(policy_driver(p, STR_LIT("gpu.example.com")));
	policy_free(p);
}

/* --- every error, where the user wrote it ------------------------------------ */

struct want_error {
	uint32_t line, col;
	const char *path;
	const char *msg_part;
};

static void check_errors(const char *name, const char *text, const struct want_error *want, size_t n)
{
	struct policy_error errs[16];
	struct policy *p = NULL;
	size_t nerr = 0, i;
	int rc = policy_load_all(text, strlen(text), &p, errs, 16, &nerr);

	if (rc != -EINVAL || p)
		fail_msg("%s: rc %d", name, rc);
	if (nerr != n) {
		for (i = 0; i < nerr && i < 16; i++)
			print_error("%s: %u:%u %s: %s\n", name, errs[i].line, errs[i].col, errs[i].path, errs[i].msg);
		fail_msg("%s: %zu errors, expected %zu", name, nerr, n);
	}
	for (i = 0; i < n; i++) {
		if (errs[i].line != want[i].line || errs[i].col != want[i].col || strcmp(errs[i].path, want[i].path) ||
		    !strstr(errs[i].msg, want[i].msg_part) || errs[i].source[0])
			fail_msg("%s: error %zu is %u:%u %s: %s (source \"%s\")", name, i, errs[i].line, errs[i].col,
				 errs[i].path, errs[i].msg, errs[i].source);
	}
}

static void test_every_error_is_reported_in_order(void **state)
{
	static const char text[] =
		HEAD                                                    /* 1-2 */
		"drivers:\n"                                            /* 3 */
		"  gpu.example.com:\n"
		"    scope: global\n"                                   /* 5 */
		"    resources:\n"
		"      pods: {max: 2}\n"                                /* 7 */
		"      memory: {max: lots, min: 1}\n"                   /* 8 */
		"canary:\n"
		"  nodes: [\"worker-[1\", \"\"]\n"                      /* 10 */
		"enforcement:\n"
		"  default: block\n"                                    /* 12 */
		"freeze:\n"
		"  scope:\n"
		"    namespaces: [a, a]\n"                              /* 15: no "empty scope" after this */
		"numa: {attribute: [x]}\n";                             /* 16 */
	static const struct want_error want[] = {
		{ 5, 12, "drivers[\"gpu.example.com\"].scope", "unknown scope \"global\"" },
		{ 7, 7, "drivers[\"gpu.example.com\"].resources.pods", "not a node resource" },
		{ 8, 21, "drivers[\"gpu.example.com\"].resources.memory.max", "not a quantity" },
		{ 8, 27, "drivers[\"gpu.example.com\"].resources.memory", "unknown key \"min\"" },
		{ 10, 11, "canary.nodes[0]", "unclosed" },
		{ 10, 24, "canary.nodes[1]", "must not be empty" },
		{ 12, 12, "enforcement.default", "unknown action" },
		{ 15, 21, "freeze.scope.namespaces[1]", "duplicate entry" },
		{ 16, 8, "numa", "unknown key \"attribute\"" },
	};

	(void)state;
	check_errors("sections", text, want, sizeof(want) / sizeof(want[0]));
}

static void test_error_cap_counts_all_and_keeps_the_first(void **state)
{
	static const char text[] = HEAD "schedulers: [\"\", \"\", \"\", \"\"]\n";
	struct policy_error errs[2], one;
	struct policy *p = NULL;
	size_t nerr = 0;

	(void)state;
	assert_int_equal(policy_load_all(text, strlen(text), &p, errs, 2, &nerr), -EINVAL);
	assert_int_equal(nerr, 4);
	assert_string_equal(errs[0].path, "schedulers[0]");
	assert_string_equal(errs[1].path, "schedulers[1]");
	assert_int_equal(policy_load(text, strlen(text), &p, &one), -EINVAL);
	assert_string_equal(one.path, "schedulers[0]");
	assert_int_equal(policy_load_all(text, strlen(text), &p, NULL, 0, &nerr), -EINVAL);
	assert_int_equal(nerr, 4);
}

static void test_configmap_errors_are_placed_in_the_manifest(void **state)
{
	static const char literal[] =
		"apiVersion: v1\n"                                      /* 1 */
		"kind: ConfigMap\n"
		"metadata: {name: dra-guard-policy, namespace: dra-guard}\n"
		"data:\n"                                               /* 4 */
		"  freeze: \"maybe\"\n"                                 /* 5 */
		"  policy.yaml: |\n"                                    /* 6 */
		"    apiVersion: dra-guard.io/v1alpha1\n"
		"    kind: Policy\n"
		"\n"                                                    /* 9: blank, still a line */
		"    canary:\n"                                         /* 10 */
		"      nodez: [a]\n"                                    /* 11 */
		"    enforcement: {default: never}\n"                   /* 12 */
		"  extra: x\n";                                         /* 13 */
	static const struct want_error literal_want[] = {
		{ 5, 11, "data[\"freeze\"]", "freeze must be" },
		{ 11, 7, "canary", "unknown key \"nodez\"" },
		{ 12, 28, "enforcement.default", "unknown action \"never\"" },
		{ 13, 3, "data", "unknown key \"extra\"" },
	};
	/* Characters, not bytes: a multi-byte name before the value. */
	static const char utf8[] =
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"caf\xc3\xa9\"}\ndata:\n"
		"  policy.yaml: |\n"                                   /* 5 */
		"    apiVersion: dra-guard.io/v1alpha1\n"
		"    kind: Policy\n"
		"    canary: {nodes: [\"\xc3\xa9\xc3\xa9\", \"\"]}\n";  /* 8 */
	static const struct want_error utf8_want[] = {
		{ 8, 28, "canary.nodes[1]", "must not be empty" },
	};
	static const char explicit_indent[] =
		"apiVersion: v1\nkind: ConfigMap\ndata:\n"
		"  policy.yaml: |2-\n"                                  /* 4 */
		"      apiVersion: dra-guard.io/v1alpha1\n"             /* 5: two spaces of content */
		"      kind: Policy\n"
		"      numa: 1\n";                                      /* 7 */
	static const struct want_error explicit_want[] = {
		{ 7, 13, "numa", "expected a map" },
	};
	/* Quoted: the lines of the string are not lines of the manifest. */
	static const char quoted[] =
		"apiVersion: v1\nkind: ConfigMap\ndata:\n"
		"  policy.yaml: \"apiVersion: dra-guard.io/v1alpha1\\nkind: Policy\\nnuma: 1\\n\"\n";
	static const struct want_error quoted_want[] = {
		{ 4, 16, "numa", "(at line 3, column 7 of data[\"policy.yaml\"])" },
	};
	static const char json[] =
		"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",\n"
		" \"data\": {\"policy.yaml\": \"{\\\"apiVersion\\\": \\\"dra-guard.io/v1alpha1\\\", \\\"kind\\\": \\\"Policy\\\", \\\"x\\\": 1}\"}}";
	static const struct want_error json_want[] = {
		{ 2, 26, "", "unknown key \"x\" (accepted: apiVersion" },
	};

	(void)state;
	check_errors("literal", literal, literal_want, sizeof(literal_want) / sizeof(literal_want[0]));
	check_errors("explicit indent", explicit_indent, explicit_want, 1);
	check_errors("utf-8", utf8, utf8_want, 1);
	check_errors("quoted", quoted, quoted_want, 1);
	check_errors("json", json, json_want, 1);
}

static void test_the_example_configmap_errors_point_into_it(void **state)
{
	size_t len = 0, nerr = 0;
	char *text = testutil_read_file(testutil_repo_path("examples/policy-configmap.yaml"), &len);
	const char *at, *line_begin, *c;
	struct policy_error err;
	struct policy *p = NULL;
	uint32_t line = 1;

	(void)state;
	assert_non_null(text);
	/* Break the first "scope: node" of the embedded policy. */
	at = strstr(text, "scope: node");
	assert_non_null(at);
	memcpy(text + (at - text), "scope: nope", 11);
	for (c = line_begin = text; c < at; c++) {
		if (*c == '\n') {
			line++;
			line_begin = c + 1;
		}
	}
	assert_int_equal(policy_load_all(text, len, &p, &err, 1, &nerr), -EINVAL);
	assert_int_equal(nerr, 1);
	assert_string_equal(err.source, "");
	assert_int_equal(err.line, line);
	assert_int_equal(err.col, (uint32_t)(at + 7 - line_begin) + 1);
	assert_non_null(strstr(err.msg, "unknown scope \"nope\""));
	free(text);
}

/* A ServiceAccount's scope, by entry: the earlier form (a list of names, one
 * scope per driver) keeps loading and meaning what it meant. */
static void test_service_account_scopes(void **state)
{
	const struct driver_policy *d;
	const struct service_account_policy *sa;
	struct policy *p;

	(void)state;
	p = load_ok(HEAD "drivers:\n"
		    "  old.example.com:\n    scope: cluster\n    serviceAccounts: [system:serviceaccount:o:a, system:serviceaccount:o:b]\n"
		    "  new.example.com:\n    serviceAccounts:\n"
		    "    - system:serviceaccount:n:plugin\n"
		    "    - {name: \"system:serviceaccount:n:controller\", scope: cluster}\n"
		    "    - name: system:serviceaccount:n:shared\n      controllerPods: [\"drv-controller-*\", exact-pod]\n");
	d = policy_driver(p, STR_LIT("old.example.com"));
	assert_non_null(d);
	assert_int_equal(d->naccounts, 2);
	sa = policy_driver_account(d, STR_LIT("system:serviceaccount:o:b"));
	assert_non_null(sa);
	assert_int_equal(sa->scope, DRIVER_SCOPE_CLUSTER);
	assert_true(policy_list_has(&d->service_accounts, STR_LIT("system:serviceaccount:o:a")));
	d = policy_driver(p, STR_LIT("new.example.com"));
	assert_int_equal(d->scope, DRIVER_SCOPE_NODE);
	assert_int_equal(policy_driver_account(d, STR_LIT("system:serviceaccount:n:plugin"))->scope, DRIVER_SCOPE_NODE);
	assert_int_equal(policy_driver_account(d, STR_LIT("system:serviceaccount:n:controller"))->scope,
			 DRIVER_SCOPE_CLUSTER);
	sa = policy_driver_account(d, STR_LIT("system:serviceaccount:n:shared"));
	assert_int_equal(sa->scope, DRIVER_SCOPE_NODE);
	assert_true(policy_list_glob(&sa->controller_pods, STR_LIT("drv-controller-7d9f8c6b5-x2x4q")));
	assert_true(policy_list_glob(&sa->controller_pods, STR_LIT("exact-pod")));
	assert_false(policy_list_glob(&sa->controller_pods, STR_LIT("drv-kubeletplugin-9k2lp")));
	assert_null(policy_driver_account(d, STR_LIT("system:serviceaccount:o:a")));
	assert_null(policy_driver(p, STR_LIT("other.example.com")));
	policy_free(p);
}

/* The garbage collector may delete any listed driver's slices by default;
 * the list can name others, or none. */
static void test_collectors_default_and_override(void **state)
{
	struct policy *p;

	(void)state;
	p = load_ok(HEAD);
	assert_true(policy_list_has(&p->collectors, STR_LIT(POLICY_DEFAULT_COLLECTOR_SA)));
	assert_true(policy_list_has(&p->collectors, STR_LIT(POLICY_DEFAULT_ALLOCATOR_KCM)));
	assert_true(policy_list_has(&p->allocators, STR_LIT(POLICY_DEFAULT_ALLOCATOR_KCM)));
	assert_true(policy_list_has(&p->allocators, STR_LIT(POLICY_DEFAULT_ALLOCATOR_SA)));
	policy_free(p);
	p = load_ok(HEAD "writers: {collectors: []}\n");
	assert_false(policy_list_has(&p->collectors, STR_LIT(POLICY_DEFAULT_COLLECTOR_SA)));
	policy_free(p);
	p = load_ok(HEAD "writers: {collectors: [system:serviceaccount:ops:janitor]}\n");
	assert_true(policy_list_has(&p->collectors, STR_LIT("system:serviceaccount:ops:janitor")));
	assert_false(policy_list_has(&p->collectors, STR_LIT(POLICY_DEFAULT_COLLECTOR_SA)));
	policy_free(p);
}

/* Lists are searched by bisection, globs without wildcards too; a frozen
 * driver's classes are one list. Large lists load in n log n. */
static void test_list_lookups(void **state)
{
	char *text = NULL, *items = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	struct policy *p;
	int i;

	(void)state;
	f = open_memstream(&items, &cap);
	assert_non_null(f);
	for (i = 4095; i >= 0; i--)
		fprintf(f, "%sg-%04d", i == 4095 ? "" : ", ", i);
	fclose(f);
	assert_true(asprintf(&text, HEAD "writers: {admins: [%s]}\ncanary: {nodes: [\"gpu-*\", worker-7, \"w?\", "
			     "\"*-canary\", \"gpu-[ab]*-x\", \"rack-1?-*\"]}\n"
			     "drivers:\n  a.example.com: {deviceClasses: [fast, slow]}\n  b.example.com: {deviceClasses: [fast]}\n"
			     "freeze: {scope: {drivers: [a.example.com, b.example.com]}}\n", items) > 0);
	p = load_ok(text);
	assert_int_equal(p->admin_groups.n, 4096);
	assert_true(policy_list_has(&p->admin_groups, STR_LIT("g-0000")));
	assert_true(policy_list_has(&p->admin_groups, STR_LIT("g-4095")));
	assert_false(policy_list_has(&p->admin_groups, STR_LIT("g-4096")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("worker-7")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("gpu-3")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("w1")));
	assert_false(policy_list_glob(&p->canary_nodes, STR_LIT("worker-8")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("edge-canary")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("rack-12-n3")));
	assert_false(policy_list_glob(&p->canary_nodes, STR_LIT("rack-2-n3")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("gpu-a1-x")));
	assert_true(policy_list_glob(&p->canary_nodes, STR_LIT("gpu-")));
	assert_false(policy_list_glob(&p->canary_nodes, STR_LIT("gp")));
	assert_int_equal(p->canary_nodes.npatterns, 5);
	assert_int_equal(p->freeze_driver_classes.n, 4);
	assert_true(policy_list_has(&p->freeze_driver_classes, STR_LIT("fast")));
	assert_true(policy_list_has(&p->freeze_driver_classes, STR_LIT("b.example.com")));
	assert_false(policy_list_has(&p->freeze_driver_classes, STR_LIT("other")));
	policy_free(p);
	free(text);
	free(items);
	(void)len;
}

/* What one read of a policy may cost is bounded by what a policy needs: a
 * flow sequence of a million bytes stops at the node limit. */
static void test_policy_parse_is_bounded(void **state)
{
	char *text = malloc(1100000);
	struct policy *p = NULL;
	struct policy_error err;
	size_t n;
	int rc;

	(void)state;
	assert_non_null(text);
	n = (size_t)sprintf(text, HEAD "canary:\n  nodes: [");
	while (n < 1040000)
		n += (size_t)sprintf(text + n, "a, ");
	n += (size_t)sprintf(text + n, "a]\n");
	rc = policy_load_parts(text, n, false, NULL, 0, false, NULL, 0, &p, &err);
	assert_int_equal(rc, -EINVAL);
	assert_null(p);
	assert_non_null(strstr(err.msg, "more than 65536 nodes"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_error_is_reported_in_order),
		cmocka_unit_test(test_error_cap_counts_all_and_keeps_the_first),
		cmocka_unit_test(test_configmap_errors_are_placed_in_the_manifest),
		cmocka_unit_test(test_the_example_configmap_errors_point_into_it),
		cmocka_unit_test(test_invalid_policies_say_where),
		cmocka_unit_test(test_cluster_view_max_age),
		cmocka_unit_test(test_ledger_settings),
		cmocka_unit_test(test_promotion_thresholds),
		cmocka_unit_test(test_full_document_loads),
		cmocka_unit_test(test_builtin_denies_everything_with_advisory_warnings),
		cmocka_unit_test(test_advisory_rules_never_escalate_by_default),
		cmocka_unit_test(test_empty_allocators_means_none),
		cmocka_unit_test(test_configmap_keys_and_freeze),
		cmocka_unit_test(test_freeze_key_values),
		cmocka_unit_test(test_freeze_alert_after),
		cmocka_unit_test(test_freeze_reason_is_capped),
		cmocka_unit_test(test_hash_changes_with_every_input),
		cmocka_unit_test(test_example_policy_in_repository_loads),
		cmocka_unit_test(test_json_policy_loads),
		cmocka_unit_test(test_service_account_scopes),
		cmocka_unit_test(test_collectors_default_and_override),
		cmocka_unit_test(test_list_lookups),
		cmocka_unit_test(test_policy_parse_is_bounded),
		cmocka_unit_test(test_check_in_an_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
