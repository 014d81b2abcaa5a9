/* test_replay.c - the replay: object texts kept for oldObject, what it
 * reads of an object, binding a Pod, and a small log through the engine
 * (a duplicate allocation that got through, a corrupt line, a read). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "events.h"
#include "jscan.h"
#include "policy.h"
#include "replay_impl.h"

static void test_store_keeps_the_last_text_within_its_cap(void **state)
{
	struct replay_store s;
	const struct replay_store_entry *e;
	char name[32];
	int i;

	(void)state;
	assert_int_equal(replay_store_init(&s, 100000), 0);
	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "pod-%d", i);
		assert_int_equal(replay_store_put(&s, OBJECT_POD, STR_LIT("ns"), str_from_cstr(name), STR_LIT("{}")), 0);
	}
	assert_int_equal(replay_store_put(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-7"), STR_LIT("{\"a\":1}")), 0);
	e = replay_store_get(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-7"));
	assert_non_null(e);
	assert_memory_equal(e->text, "{\"a\":1}", 7);
	/* the same name in another resource or namespace is another object */
	assert_null(replay_store_get(&s, OBJECT_RESOURCE_CLAIM, STR_LIT("ns"), STR_LIT("pod-7")));
	assert_null(replay_store_get(&s, OBJECT_POD, STR_LIT("n"), STR_LIT("spod-7")));
	assert_int_equal(s.count, 3000);
	assert_int_equal(s.bytes, 2 * 3000 + 5);
	replay_store_del(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-7"));
	assert_null(replay_store_get(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-7")));
	assert_int_equal(s.bytes, 2 * 2999);
	/* over the cap: refused, the old text kept */
	{
		static char big[100000];

		memset(big, ' ', sizeof(big));
		assert_int_equal(replay_store_put(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-8"),
						  (struct str){ big, sizeof(big) }), -E2BIG);
		e = replay_store_get(&s, OBJECT_POD, STR_LIT("ns"), STR_LIT("pod-8"));
		assert_non_null(e);
		assert_int_equal(e->text_len, 2);
	}
	replay_store_fini(&s);
}

static void test_meta_tells_a_deletion_that_lingers(void **state)
{
	struct replay_meta m;

	(void)state;
	assert_int_equal(replay_meta_read(STR_LIT("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
						  "\"deletionTimestamp\":\"2026-12-01T10:00:00Z\","
						  "\"deletionGracePeriodSeconds\":30}}"), &m), 0);
	assert_true(str_eq_cstr(m.kind, "Pod") && str_eq_cstr(m.name, "p") && str_eq_cstr(m.namespace, "ns"));
	assert_true(m.deleting && m.lingers);
	assert_int_equal(replay_meta_read(STR_LIT("{\"metadata\":{\"deletionTimestamp\":\"2026-12-01T10:00:00Z\","
						  "\"deletionGracePeriodSeconds\":0,\"finalizers\":[]},"
						  "\"kind\":\"Pod\"}"), &m), 0);
	assert_true(m.deleting && !m.lingers);
	assert_int_equal(replay_meta_read(STR_LIT("{\"metadata\":{\"deletionTimestamp\":\"2026-12-01T10:00:00Z\","
						  "\"finalizers\":[\"x\"]}}"), &m), 0);
	assert_true(m.lingers);
	assert_int_equal(replay_meta_read(STR_LIT("{\"kind\":\"ConfigMap\",\"data\":{\"freeze\":\" true\\n\"}}"), &m), 0);
	assert_true(m.has_freeze && m.frozen);
	assert_int_equal(replay_meta_read(STR_LIT("{\"data\":{\"freeze\":\"True\"}}"), &m), 0);
	assert_true(m.has_freeze && !m.frozen);
	assert_int_equal(replay_meta_read(STR_LIT("[1]"), &m), -EBADMSG);
	assert_int_equal(replay_meta_read(STR_LIT("{\"metadata\":{\"name\":1}}"), &m), -EBADMSG);
}

static void expect_json(const char *text, size_t len)
{
	struct jscan s;

	jscan_init(&s, text, len, 0);
	assert_int_equal(jscan_skip(&s, NULL), 0);
	assert_int_equal(jscan_finish(&s), 0);
}

static void test_binding_sets_the_pods_node(void **state)
{
	struct buf b;
	struct str node;

	(void)state;
	buf_init(&b, 1 << 20);
	assert_int_equal(replay_pod_bind(STR_LIT("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[]}}"),
				      STR_LIT("n1"), &b), 0);
	assert_string_equal(buf_cstr(&b), "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[]}}");
	expect_json(buf_cstr(&b), buf_len(&b));
	assert_int_equal(replay_pod_bind(STR_LIT("{\"spec\": { } }"), STR_LIT("n1"), &b), 0);
	assert_string_equal(buf_cstr(&b), "{\"spec\": {\"nodeName\":\"n1\" } }");
	expect_json(buf_cstr(&b), buf_len(&b));
	assert_int_equal(replay_pod_bind(STR_LIT("{\"metadata\":{}}"), STR_LIT("n1"), &b), -EBADMSG);
	assert_int_equal(replay_binding_target(STR_LIT("{\"kind\":\"Binding\",\"target\":{\"kind\":\"Node\","
						       "\"name\":\"n7\"}}"), &node), 0);
	assert_true(str_eq_cstr(node, "n7"));
	assert_int_equal(replay_binding_target(STR_LIT("{\"target\":{}}"), &node), -EBADMSG);
	buf_free(&b);
}

/* The text forms print a figure as the JSON says it: rounded to three
 * decimals first, so "%.1f" of 0.04951 s reads 0.1 (0.050), as a reader
 * of the JSON would print it, not 0.0. */
static void test_seconds_are_printed_as_written(void **state)
{
	static const struct { double in, out; } cases[] = {
		{ 0.04951, 0.05 }, { 12.3456, 12.346 }, { 0, 0 }, { 1e-4, 0 }, { 2.0005, 2.001 },
	};
	char a[32], b[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(a, sizeof(a), "%.6f", replay_seconds_written(cases[i].in));
		snprintf(b, sizeof(b), "%.6f", cases[i].out);
		assert_string_equal(a, b);
	}
	snprintf(a, sizeof(a), "%.1f", replay_seconds_written(0.04951));
	assert_string_equal(a, "0.1");
}

/* --- a small log ------------------------------------------------------------------------------ */

#define DRIVER "system:serviceaccount:dra:gpu"
static const char policy_text[] =
	"apiVersion: dra-guard.io/v1alpha1\nkind: Policy\ndrivers:\n  gpu.example.com:\n"
	"    serviceAccounts: [" DRIVER "]\n    scope: cluster\n";

#define SLICE "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"," \
	"\"uid\":\"u-s\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\"," \
	"\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\"," \
	"\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"2\"}}},{\"name\":\"gpu-1\"}]}}"
#define NODE "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":" \
	"{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"}}}"
#define CLAIM(n, uid, rv, status) "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\"," \
	"\"metadata\":{\"name\":\"" n "\",\"namespace\":\"default\",\"uid\":\"" uid "\",\"resourceVersion\":\"" rv "\"}," \
	"\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu\"}}]}}" status "}"
#define ALLOC(dev) ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":" \
	"\"gpu.example.com\",\"pool\":\"n1\",\"device\":\"" dev "\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":" \
	"[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}"
#define UID1 "11111111-1111-1111-1111-111111111111"
#define UID2 "22222222-2222-2222-2222-222222222222"

static int line(struct replay *r, uint64_t no, const char *verb, const char *user, const char *group,
		const char *res, const char *sub, const char *ns, const char *name, int code, const char *obj,
		int second)
{
	static char buf[16384];
	int n = snprintf(buf, sizeof(buf),
			 "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"RequestResponse\","
			 "\"auditID\":\"id-%llu\",\"stage\":\"ResponseComplete\",\"verb\":\"%s\",\"user\":{\"username\":"
			 "\"%s\",\"groups\":[\"system:authenticated\"]},\"objectRef\":{\"resource\":\"%s\","
			 "\"namespace\":\"%s\",\"name\":\"%s\",\"apiGroup\":\"%s\",\"apiVersion\":\"v1\"%s%s%s},"
			 "\"responseStatus\":{\"code\":%d},\"requestObject\":%s,\"responseObject\":%s,"
			 "\"stageTimestamp\":\"2026-12-01T10:00:%02d.000000Z\"}",
			 (unsigned long long)no, verb, user, res, ns, name, group, *sub ? ",\"subresource\":\"" : "",
			 sub, *sub ? "\"" : "", code, obj, code < 300 ? obj : "null", second);

	assert_true(n > 0 && (size_t)n < sizeof(buf));
	return replay_line(r, buf, (size_t)n, no);
}

static void test_a_duplicate_that_got_through_is_named(void **state)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	struct replay_options o;
	struct replay *r = NULL;
	struct replay_totals t;
	struct buf out;
	const char *rep;

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	replay_options_default(&o);
	o.policy = pol;
	assert_int_equal(replay_new(&o, &r), 0);
	assert_int_equal(line(r, 1, "create", DRIVER, "resource.k8s.io", "resourceslices", "", "", "n1-gpu", 201,
			      SLICE, 1), 0);
	assert_int_equal(line(r, 2, "create", "admin", "", "nodes", "", "", "n1", 201, NODE, 1), 0);
	assert_int_equal(line(r, 3, "create", "admin", "resource.k8s.io", "resourceclaims", "", "default", "c1", 201,
			      CLAIM("c1", UID1, "2", ""), 2), 0);
	assert_int_equal(line(r, 4, "update", "system:kube-scheduler", "resource.k8s.io", "resourceclaims", "status",
			      "default", "c1", 200, CLAIM("c1", UID1, "3", ALLOC("gpu-0")), 3), 0);
	assert_int_equal(replay_line(r, "{\"kind\":\"Event\",", 16, 5), 0);
	assert_int_equal(line(r, 6, "create", "admin", "resource.k8s.io", "resourceclaims", "", "default", "c2", 201,
			      CLAIM("c2", UID2, "4", ""), 4), 0);
	assert_int_equal(line(r, 7, "update", "system:kube-scheduler", "resource.k8s.io", "resourceclaims", "status",
			      "default", "c2", 200, CLAIM("c2", UID2, "5", ALLOC("gpu-0")), 5), 0);
	assert_int_equal(line(r, 8, "get", "admin", "resource.k8s.io", "resourceclaims", "", "default", "c2", 200,
			      "null", 6), 0);
	assert_int_equal(replay_finish(r), 0);

	replay_totals(r, &t);
	assert_int_equal(t.lines, 8);
	assert_int_equal(t.events, 6);
	assert_int_equal(t.corrupt, 1);
	assert_int_equal(t.judged, 5);      /* the Node is applied, not judged */
	assert_int_equal(t.would_refuse, 1);
	assert_true(t.divergences >= 1);    /* the admitted duplicate */
	buf_init(&out, 1 << 24);
	assert_int_equal(replay_report_json(r, true, &out), 0);
	rep = buf_cstr(&out);
	expect_json(rep, buf_len(&out));
	assert_non_null(strstr(rep, "\"corruptLines\":[{\"line\":5,"));
	assert_non_null(strstr(rep, "{\"rule\":\"ledger.device.duplicate\",\"wouldDeny\":1,"));
	assert_non_null(strstr(rep, "\"wouldRefuse\":[{\"line\":7,"));
	assert_non_null(strstr(rep, "\"admittedDuplicates\":1,"));
	/* both claims are charged in the final ledger: the duplicate did happen */
	assert_non_null(strstr(rep, "\"claims\":2,"));

	/* The same figures, typed: the report is a struct the JSON and the text are written from. */
	{
		struct replay_report rr;
		const struct replay_example *ex;
		struct buf again;

		replay_report_get(r, true, &rr);
		assert_int_equal(rr.lines, 8);
		assert_int_equal(rr.ncorrupt_lines, 1);
		assert_int_equal(rr.corrupt_lines[0].line, 5);
		assert_int_equal(rr.rules[RULE_LEDGER_DEVICE_DUPLICATE].deny, 1);
		assert_int_equal(rr.admitted_duplicates, 1);
		assert_int_equal(rr.nrefused, 1);
		ex = &rr.refused[0];
		assert_int_equal(ex->kind, REPLAY_EXAMPLE_REFUSED);
		assert_int_equal(ex->line, 7);
		assert_int_equal(ex->recorded, 200);
		assert_string_equal(ex->operation, "UPDATE");
		assert_true(str_eq_cstr(ex->name, "c2") && str_eq_cstr(ex->subresource, "status"));
		assert_true(str_eq_cstr(ex->user, "system:kube-scheduler"));
		assert_true(ex->nrules >= 1 && ex->rules[0] == RULE_LEDGER_DEVICE_DUPLICATE);
		assert_non_null(rr.ledger);
		assert_int_equal(rr.ledger->claims, 2);
		buf_init(&again, 1 << 24);
		assert_int_equal(replay_report_write_json(&rr, &again), 0);
		assert_int_equal(buf_len(&again), buf_len(&out));
		assert_memory_equal(buf_cstr(&again), buf_cstr(&out), buf_len(&out));
		/* without the ledger: no ledger member, the rest the same */
		replay_report_get(r, false, &rr);
		assert_null(rr.ledger);
		buf_reset(&again);
		assert_int_equal(replay_report_write_json(&rr, &again), 0);
		assert_null(strstr(buf_cstr(&again), "\"ledger\":"));
		assert_memory_equal(buf_cstr(&again), buf_cstr(&out), buf_len(&again) - 1);
		buf_free(&again);
	}
	/* The readiness report, typed the same way: the duplicate that got through fails restarts. */
	{
		struct replay_readiness rd;
		struct buf js;

		replay_readiness_get(r, &rd);
		assert_int_equal(rd.lines, 8);
		assert_int_equal(rd.corrupt_lines, 1);
		assert_int_equal(rd.restarts.duplicates_admitted, 1);
		assert_false(rd.restarts.c.go);
		assert_string_equal(rd.restarts.c.name, "restartsAndUpgrades");
		assert_false(rd.go);
		assert_int_equal(rd.drivers.ndrivers, 1);
		assert_string_equal(rd.drivers.drivers[0].name, "gpu.example.com");
		buf_init(&js, 1 << 20);
		assert_int_equal(replay_readiness_write_json(&rd, &js), 0);
		expect_json(buf_cstr(&js), buf_len(&js));
		assert_non_null(strstr(buf_cstr(&js), "\"verdict\":\"no-go\""));
		assert_non_null(strstr(buf_cstr(&js), "\"duplicatesAdmitted\":1,"));
		buf_free(&js);
	}
	buf_free(&out);
	replay_free(r);
	policy_free(pol);
}

#define NODE_CPU(name, cpu) "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\"}," \
	"\"status\":{\"allocatable\":{\"cpu\":\"" cpu "\",\"pods\":\"110\"}}}"

/* The ledger is built whole at the first sample only; a later sample
 * counts again the nodes that changed since the one before, and its
 * ledger is the view's at that time. */
static void test_a_sample_counts_again_what_changed_only(void **state)
{
	static const struct {
		const char *verb, *name, *obj;
		int second;
	} steps[] = {
		{ "create", "n1", NODE_CPU("n1", "8"), 1 },
		{ "create", "n2", NODE_CPU("n2", "8"), 1 },
		{ "create", "n3", NODE_CPU("n3", "8"), 1 },
		{ "update", "n2", NODE_CPU("n2", "16"), 2 },   /* sampled at 2: the three new nodes */
		{ "update", "n3", NODE_CPU("n3", "32"), 3 },   /* sampled at 3: n2 alone */
	};
	struct policy *pol = NULL;
	struct policy_error perr;
	struct replay_options o;
	struct replay *r = NULL;
	struct ledger_inc_stats st;
	const struct ledger *l;
	const struct ledger_amount *a;
	size_t i;

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	replay_options_default(&o);
	o.policy = pol;
	o.reorder_ns = 0;   /* each write processed as it is read */
	assert_int_equal(replay_new(&o, &r), 0);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(line(r, i + 1, steps[i].verb, "admin", "", "nodes", "", "", steps[i].name,
				      steps[i].verb[0] == 'c' ? 201 : 200, steps[i].obj, steps[i].second), 0);
		replay_ledger_stats(r, &st);
		if (steps[i].second == 3) {
			assert_int_equal(st.updates, 3);
			assert_int_equal(st.last_nodes, 1);
		}
	}
	assert_int_equal(replay_finish(r), 0);   /* sampled at the end: n3 */
	replay_ledger_stats(r, &st);
	assert_int_equal(st.whole, 1);
	assert_int_equal(st.updates, 4);
	assert_int_equal(st.last_nodes, 1);
	l = replay_ledger(r);
	assert_non_null(l);
	assert_int_equal(l->nnodes, 3);
	a = ledger_node_amount(ledger_node(l, STR_LIT("n2")), STR_LIT("cpu"));
	assert_non_null(a);
	assert_int_equal(a->allocatable, 16000);
	a = ledger_node_amount(ledger_node(l, STR_LIT("n3")), STR_LIT("cpu"));
	assert_non_null(a);
	assert_int_equal(a->allocatable, 32000);
	replay_free(r);
	policy_free(pol);
}

/* Samples far apart in a busy log: once the kept ledger's snapshot holds
 * back more retired view objects than ledger_hold, it goes and the next
 * sample builds the ledger whole; the ledger is the view's all the same. */
static void test_a_ledger_holding_too_much_of_the_view_is_built_whole(void **state)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	struct replay_options o;
	struct replay *r = NULL;
	struct ledger_inc_stats st;
	const struct ledger *l;
	const struct ledger_amount *a;

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	replay_options_default(&o);
	o.policy = pol;
	o.reorder_ns = 0;
	o.ledger_hold = 1;
	assert_int_equal(replay_new(&o, &r), 0);
	assert_int_equal(line(r, 1, "create", "admin", "", "nodes", "", "", "n1", 201, NODE_CPU("n1", "8"), 1), 0);
	assert_int_equal(line(r, 2, "create", "admin", "", "nodes", "", "", "n2", 201, NODE_CPU("n2", "8"), 2), 0);
	assert_int_equal(line(r, 3, "update", "admin", "", "nodes", "", "", "n1", 200, NODE_CPU("n1", "16"), 3), 0);
	assert_int_equal(line(r, 4, "update", "admin", "", "nodes", "", "", "n1", 200, NODE_CPU("n1", "24"), 3), 0);
	assert_int_equal(line(r, 5, "update", "admin", "", "nodes", "", "", "n2", 200, NODE_CPU("n2", "32"), 4), 0);
	assert_int_equal(replay_finish(r), 0);
	replay_ledger_stats(r, &st);
	assert_int_equal(st.whole, 1);   /* the stats are the kept ledger's since it was last let go */
	assert_int_equal(st.updates, 1);
	l = replay_ledger(r);
	assert_non_null(l);
	assert_int_equal(l->nnodes, 2);
	a = ledger_node_amount(ledger_node(l, STR_LIT("n1")), STR_LIT("cpu"));
	assert_non_null(a);
	assert_int_equal(a->allocatable, 24000);
	a = ledger_node_amount(ledger_node(l, STR_LIT("n2")), STR_LIT("cpu"));
	assert_non_null(a);
	assert_int_equal(a->allocatable, 32000);
	replay_free(r);
	policy_free(pol);
}

/* --- why pending: the live guard's reasons and pending time ----------------------------------- */

#define ALLOC_FOR_POD(dev) ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":" \
	"\"gpu.example.com\",\"pool\":\"n1\",\"device\":\"" dev "\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":" \
	"[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}," \
	"\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p1\",\"uid\":\"pod-uid-1\"}]}"
#define FREEZE_CM(on) "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"dra-guard-policy\"," \
	"\"namespace\":\"dra-guard\"},\"data\":{\"freeze\":\"" on "\"}}"

/* A claim reserved for a bound Pod whose status never names it: kube-scheduler
 * 1.36 does not count it on the node. A divergence once it lasts past the
 * settle window, not a node the replay calls clean. */
static void test_a_claim_no_pod_status_names_is_a_divergence(void **state)
{
	static const char pod[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"default\","
		"\"uid\":\"pod-uid-1\",\"resourceVersion\":\"7\"},\"spec\":{\"nodeName\":\"n1\",\"resourceClaims\":"
		"[{\"name\":\"g\",\"resourceClaimName\":\"c1\"}],\"containers\":[{\"name\":\"c\"}]},"
		"\"status\":{\"phase\":\"Running\"}}";
	struct policy *pol = NULL;
	struct policy_error perr;
	struct replay_options o;
	struct replay *r = NULL;
	struct replay_totals t;
	const struct ledger *l;

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	replay_options_default(&o);
	o.policy = pol;
	assert_int_equal(replay_new(&o, &r), 0);
	assert_int_equal(line(r, 1, "create", DRIVER, "resource.k8s.io", "resourceslices", "", "", "n1-gpu", 201,
			      SLICE, 1), 0);
	assert_int_equal(line(r, 2, "create", "admin", "", "nodes", "", "", "n1", 201, NODE, 1), 0);
	assert_int_equal(line(r, 3, "create", "admin", "", "pods", "", "default", "p1", 201, pod, 2), 0);
	assert_int_equal(line(r, 4, "create", "admin", "resource.k8s.io", "resourceclaims", "", "default", "c1", 201,
			      CLAIM("c1", UID1, "2", ""), 2), 0);
	assert_int_equal(line(r, 5, "update", "system:kube-scheduler", "resource.k8s.io", "resourceclaims", "status",
			      "default", "c1", 200, CLAIM("c1", UID1, "3", ALLOC_FOR_POD("gpu-0")), 3), 0);
	/* Writes just after and a minute on (the ledger is sampled as the log
	 * goes): the node is undercounted all along. */
	assert_int_equal(line(r, 6, "update", "admin", "", "nodes", "", "", "n1", 200, NODE, 5), 0);
	assert_int_equal(line(r, 7, "update", "admin", "", "nodes", "", "", "n1", 200, NODE, 59), 0);
	assert_int_equal(replay_finish(r), 0);
	l = replay_ledger(r);
	assert_non_null(l);
	assert_int_equal(l->undercounted, 1);
	assert_int_equal(l->diverging, 0);
	replay_totals(r, &t);
	assert_true(t.divergences >= 1);
	replay_free(r);
	policy_free(pol);
}

/* One write of the log: what, its recorded code, when (seconds after
 * 10:00:00), and whether it was made with ?dryRun=All. */
enum step_kind { STEP_END = 0, STEP_FREEZE, STEP_THAW, STEP_CREATE_CLAIM, STEP_ALLOCATE };
struct step {
	enum step_kind kind;
	int code;
	int second;
	bool dry_run;
};

static int write_step(struct replay *r, uint64_t no, const struct step *st)
{
	static char buf[16384];
	const char *verb = "create", *res = "resourceclaims", *sub = "", *ns = "default", *name = "c1";
	const char *group = "resource.k8s.io", *user = "admin", *obj = CLAIM("c1", UID1, "2", "");
	int n;

	switch (st->kind) {
	case STEP_FREEZE:
	case STEP_THAW:
		verb = st->kind == STEP_FREEZE ? "create" : "update", res = "configmaps", ns = "dra-guard";
		name = "dra-guard-policy", group = "";
		obj = st->kind == STEP_FREEZE ? FREEZE_CM("true") : FREEZE_CM("false");
		break;
	case STEP_ALLOCATE:
		verb = "update", sub = "status", user = "system:kube-scheduler";
		obj = CLAIM("c1", UID1, "3", ALLOC_FOR_POD("gpu-0"));
		break;
	default:
		break;
	}
	n = snprintf(buf, sizeof(buf),
		     "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"RequestResponse\","
		     "\"auditID\":\"id-%llu\",\"stage\":\"ResponseComplete\",\"requestURI\":\"/apis/x/%s%s\","
		     "\"verb\":\"%s\",\"user\":{\"username\":\"%s\",\"groups\":[\"system:authenticated\"]},"
		     "\"objectRef\":{\"resource\":\"%s\",\"namespace\":\"%s\",\"name\":\"%s\",\"apiGroup\":\"%s\","
		     "\"apiVersion\":\"v1\"%s%s%s},\"responseStatus\":{\"code\":%d},\"requestObject\":%s,"
		     "\"responseObject\":%s,\"stageTimestamp\":\"2026-12-01T10:%02d:%02d.000000Z\"}",
		     (unsigned long long)no, name, st->dry_run ? "?fieldManager=kubectl\\u0026dryRun=All" : "", verb, user,
		     res, ns, name, group, *sub ? ",\"subresource\":\"" : "", sub, *sub ? "\"" : "", st->code, obj,
		     st->code < 300 ? obj : "null", st->second / 60, st->second % 60);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	return replay_line(r, buf, (size_t)n, no);
}

static void test_refusals_and_pending_time_are_the_live_guards(void **state)
{
	static const struct {
		const char *name;
		struct step steps[8];
		enum rule_id rule;            /* the reason expected */
		uint64_t refusals;            /* Events it asks for */
		int bucket;                   /* the pending sample's bucket, -1 none */
		double seconds;
		bool pending_at_end;
		uint64_t written;             /* refused allocations the log shows written */
	} cases[] = {
		{ "refused, then allocated: one sample of the time between, under its reason",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, false },
		    { STEP_THAW, 200, 5, false }, { STEP_ALLOCATE, 200, 12, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 1, 2 /* le 10 */, 8.0, false, 0 },
		{ "refused and never allocated: pending at the end, no sample",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 1, -1, 0, true, 0 },
		{ "a dry-run refusal emits nothing and holds nothing",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, true },
		    { STEP_THAW, 200, 5, false }, { STEP_ALLOCATE, 200, 12, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 0, -1, 0, false, 0 },
		{ "a dry-run allocation stores nothing: the claim stays pending",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, false },
		    { STEP_THAW, 200, 5, false }, { STEP_ALLOCATE, 200, 12, true } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 1, -1, 0, true, 0 },
		{ "two refusals of one claim: the time counts from the first",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, false },
		    { STEP_ALLOCATE, 403, 7, false }, { STEP_THAW, 200, 9, false }, { STEP_ALLOCATE, 200, 20, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 2, 3 /* le 30 */, 16.0, false, 0 },
		{ "minutes pending land in the minutes' buckets",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 403, 4, false },
		    { STEP_THAW, 200, 100, false }, { STEP_ALLOCATE, 200, 184, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 1, 6 /* le 300 */, 180.0, false, 0 },
		{ "a refusal the log shows written has no pending time",
		  { { STEP_CREATE_CLAIM, 201, 2, false }, { STEP_FREEZE, 201, 3, false }, { STEP_ALLOCATE, 200, 4, false } },
		  RULE_CLAIM_FREEZE_ALLOCATE, 1, -1, 0, false, 1 },
		{ "a claim refused its creation in a freeze is pending, with no Pod",
		  { { STEP_FREEZE, 201, 1, false }, { STEP_CREATE_CLAIM, 403, 2, false } },
		  RULE_CLAIM_FREEZE_CREATE, 1, -1, 0, true, 0 },
	};
	struct policy *pol = NULL;
	struct policy_error perr;
	size_t i, j, b;

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct replay_options o;
		struct replay *r = NULL;
		struct buf out;
		int k = events_rule_index(cases[i].rule);
		uint64_t samples = 0, other = 0;
		uint64_t no = 1;

		print_message("case: %s\n", cases[i].name);
		replay_options_default(&o);
		o.policy = pol;
		assert_int_equal(replay_new(&o, &r), 0);
		assert_int_equal(line(r, no++, "create", DRIVER, "resource.k8s.io", "resourceslices", "", "", "n1-gpu", 201,
				      SLICE, 1), 0);
		assert_int_equal(line(r, no++, "create", "admin", "", "nodes", "", "", "n1", 201, NODE, 1), 0);
		for (j = 0; cases[i].steps[j].kind != STEP_END; j++)
			assert_int_equal(write_step(r, no++, &cases[i].steps[j]), 0);
		assert_int_equal(replay_finish(r), 0);

		assert_true(k >= 0);
		for (j = 0; j < EVENTS_RULES; j++)
			if ((int)j != k)
				other += r->refusals[j];
		assert_int_equal(r->refusals[k], cases[i].refusals);
		assert_int_equal(other, 0);
		assert_int_equal(r->held_written, cases[i].written);
		for (j = 0; j < EVENTS_RULES; j++)
			for (b = 0; b <= PENDING_BUCKETS; b++) {
				bool want = (int)j == k && (int)b == cases[i].bucket;

				samples += r->held_hist.counts[j][b];
				assert_int_equal(r->held_hist.counts[j][b], want ? 1 : 0);
			}
		assert_int_equal(samples, cases[i].bucket >= 0);
		assert_true(r->held_hist.sum[k] > cases[i].seconds - 0.001 && r->held_hist.sum[k] < cases[i].seconds + 0.001);
		assert_int_equal(pending_table_count(r->held), cases[i].pending_at_end);

		buf_init(&out, 1 << 24);
		assert_int_equal(replay_report_json(r, false, &out), 0);
		expect_json(buf_cstr(&out), buf_len(&out));
		if (cases[i].pending_at_end) {
			char want[256];

			events_reason(cases[i].rule, want + snprintf(want, 64, "\"reason\":\""));
			assert_non_null(strstr(buf_cstr(&out), "\"claims\":[{\"namespace\":\"default\",\"name\":\"c1\""));
			assert_non_null(strstr(buf_cstr(&out), want));
			assert_non_null(strstr(buf_cstr(&out), cases[i].rule == RULE_CLAIM_FREEZE_CREATE
							       ? "\"pod\":\"\"" : "\"pod\":\"p1\""));
			assert_non_null(strstr(buf_cstr(&out), "\"since\":\"2026-12-01T10:00:0"));
		} else {
			assert_non_null(strstr(buf_cstr(&out), "\"claims\":[]}"));
		}
		buf_free(&out);
		replay_free(r);
	}
	policy_free(pol);
}

static void test_the_pending_table_cap_stops_the_replay(void **state)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	struct replay_options o;
	struct replay *r = NULL;
	const struct step freeze = { STEP_FREEZE, 201, 1, false }, create = { STEP_CREATE_CLAIM, 403, 2, false };

	(void)state;
	assert_int_equal(policy_load(policy_text, sizeof(policy_text) - 1, &pol, &perr), 0);
	replay_options_default(&o);
	o.policy = pol;
	o.max_pending = 0;
	assert_int_equal(replay_new(&o, &r), -EINVAL);
	o.max_pending = 1;
	o.reorder_ns = 0;
	assert_int_equal(replay_new(&o, &r), 0);
	assert_int_equal(write_step(r, 1, &freeze), 0);
	assert_int_equal(write_step(r, 2, &create), 0);
	assert_string_equal(replay_cap(r), "");
	/* another claim refused its creation: one more than the table holds */
	assert_int_equal(line(r, 3, "create", "admin", "resource.k8s.io", "resourceclaims", "", "default", "c2", 403,
			      CLAIM("c2", UID2, "4", ""), 3), -E2BIG);
	assert_non_null(strstr(replay_cap(r), "pending table"));
	replay_free(r);
	policy_free(pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_keeps_the_last_text_within_its_cap),
		cmocka_unit_test(test_meta_tells_a_deletion_that_lingers),
		cmocka_unit_test(test_binding_sets_the_pods_node),
		cmocka_unit_test(test_seconds_are_printed_as_written),
		cmocka_unit_test(test_a_duplicate_that_got_through_is_named),
		cmocka_unit_test(test_a_claim_no_pod_status_names_is_a_divergence),
		cmocka_unit_test(test_a_sample_counts_again_what_changed_only),
		cmocka_unit_test(test_a_ledger_holding_too_much_of_the_view_is_built_whole),
		cmocka_unit_test(test_refusals_and_pending_time_are_the_live_guards),
		cmocka_unit_test(test_the_pending_table_cap_stops_the_replay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
