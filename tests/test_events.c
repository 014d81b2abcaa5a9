/* test_events.c - which Events a refusal asks for, their bodies, the series
 * state machine (aggregation, rate limit, bounds) and the pending table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "doc.h"
#include "event_cache.h"
#include "events.h"
#include "pending.h"
#include "view.h"
#include "view_dump.h"
#include "testrealloc.h"

#define S 1000000000LL
#define T0 (1796000000LL * S)

/* --- reasons ----------------------------------------------------------------------- */



static void test_reason_is_the_rule_id_in_camel_case(void **state)
{
	static const struct {
		enum rule_id rule;
		const char *want;
	} cases[] = {
		{ RULE_LEDGER_POOL_FRESH, "LedgerPoolFresh" },
		{ RULE_LEDGER_DEVICE_DUPLICATE, "LedgerDeviceDuplicate" },
		{ RULE_LEDGER_NUMA_SPLIT, "LedgerNumaSplit" },
		{ RULE_LEDGER_POD_AMOUNTS, "LedgerPodAmounts" },
		{ RULE_CLAIM_FREEZE_ALLOCATE, "ClaimFreezeAllocate" },
		{ RULE_CLAIM_FREEZE_CREATE, "ClaimFreezeCreate" },
		{ RULE_LEDGER_POD_OMITTED, "LedgerPodOmitted" },
	};
	char got[EVENTS_REASON_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		events_reason(cases[i].rule, got);
		assert_string_equal(got, cases[i].want);
		assert_true(events_rule_emits(cases[i].rule));
	}
	assert_false(events_rule_emits(RULE_SLICE_MAPPING_NAME));
	assert_false(events_rule_emits(RULE_LEDGER_MAPPING_DRIFT));
	assert_false(events_rule_emits(RULE_STATUS_ALLOCATION_WRITER));
}

/* --- reviews ----------------------------------------------------------------------- */

struct review {
	struct arena *a;
	struct admission_request rq;
	struct verdict v;
	struct consumer_ref pod;
};

static void claim_review(struct review *r, bool with_pod)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(arena_new(1 << 20, &r->a), 0);
	r->rq.operation = ADMISSION_OP_UPDATE;
	r->rq.kind.version = STR_LIT("v1");
	r->rq.name = STR_LIT("gpu-claim");
	r->rq.namespace = STR_LIT("team-a");
	r->rq.object.kind = OBJECT_RESOURCE_CLAIM;
	r->rq.object.meta.name = STR_LIT("gpu-claim");
	r->rq.object.meta.namespace = STR_LIT("team-a");
	r->rq.object.meta.uid = STR_LIT("0f6c9a9e-1111-4222-8333-944455556666");
	r->rq.object.u.claim.allocated = true;
	if (with_pod) {
		r->pod.resource = STR_LIT("pods");
		r->pod.name = STR_LIT("trainer-0");
		r->pod.uid = STR_LIT("aa6c9a9e-1111-4222-8333-944455556666");
		r->rq.object.u.claim.reserved_for = &r->pod;
		r->rq.object.u.claim.nreserved_for = 1;
	}
	verdict_init(&r->v, 8);
}

static void deny(struct review *r, enum rule_id rule, enum action action, const char *msg)
{
	assert_int_equal(verdict_add(&r->v, r->a, rule, action, STR_LIT("status.allocation"), str_from_cstr(msg)), 0);
}

static void finish(struct review *r)
{
	assert_int_equal(verdict_finish(&r->v, r->a, "ResourceClaim team-a/gpu-claim", "h"), 0);
}

static void test_allocation_refusal_regards_the_pod_and_relates_the_claim(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	claim_review(&r, true);
	deny(&r, RULE_LEDGER_POOL_FRESH, ACTION_DENY,
	     "pool \"worker-1\" of driver gpu.example.com came back at X; clears at 2026-12-01T10:00:18Z");
	deny(&r, RULE_LEDGER_POOL_FRESH, ACTION_DENY, "a second result of the same rule");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);   /* one per rule, not per violation */
	assert_string_equal(out[0].reason, "LedgerPoolFresh");
	assert_string_equal(out[0].action, "Allocate");
	assert_string_equal(out[0].regarding.kind, "Pod");
	assert_string_equal(out[0].regarding.api_version, "v1");
	assert_string_equal(out[0].regarding.namespace, "team-a");
	assert_string_equal(out[0].regarding.name, "trainer-0");
	assert_string_equal(out[0].regarding.uid, "aa6c9a9e-1111-4222-8333-944455556666");
	assert_true(out[0].has_related);
	assert_string_equal(out[0].related.kind, "ResourceClaim");
	assert_string_equal(out[0].related.api_version, "resource.k8s.io/v1");
	assert_string_equal(out[0].related.name, "gpu-claim");
	assert_true(out[0].pending);
	assert_string_equal(out[0].claim.name, "gpu-claim");
	assert_string_equal(out[0].pod, "trainer-0");
	assert_int_equal(out[0].observed_ns, T0);
	/* What is wrong and when it clears (the rule's message), and what to do. */
	assert_non_null(strstr(out[0].note, "clears at 2026-12-01T10:00:18Z. "));
	assert_non_null(strstr(out[0].note, "the scheduler retries"));
	arena_free(r.a);
}

static void test_no_event_for_dry_run_warn_allowed_or_other_rules(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	/* dryRun: a side effect the webhook promised not to have. */
	claim_review(&r, true);
	r.rq.dry_run = true;
	deny(&r, RULE_CLAIM_FREEZE_ALLOCATE, ACTION_DENY, "frozen");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 0);
	arena_free(r.a);
	/* A warning allows: nothing is held back. */
	claim_review(&r, true);
	deny(&r, RULE_LEDGER_NUMA_SPLIT, ACTION_WARN, "split");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 0);
	arena_free(r.a);
	/* Denied by a rule that is not about holding a Pod back, next to one that is. */
	claim_review(&r, true);
	deny(&r, RULE_STATUS_ALLOCATION_WRITER, ACTION_DENY, "not the scheduler");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 0);
	deny(&r, RULE_LEDGER_DEVICE_DUPLICATE, ACTION_DENY, "twice");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].reason, "LedgerDeviceDuplicate");
	arena_free(r.a);
}

static void test_claim_without_pod_and_freeze_create_regard_the_claim(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	claim_review(&r, false);
	r.rq.operation = ADMISSION_OP_CREATE;
	r.rq.object.u.claim.allocated = false;
	deny(&r, RULE_CLAIM_FREEZE_CREATE, ACTION_DENY, "the cluster is in a rollback freeze (reason: INC-1)");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].reason, "ClaimFreezeCreate");
	assert_string_equal(out[0].action, "Create");
	assert_string_equal(out[0].regarding.kind, "ResourceClaim");
	assert_string_equal(out[0].regarding.name, "gpu-claim");
	assert_false(out[0].has_related);
	assert_true(out[0].pending);
	assert_string_equal(out[0].pod, "");
	assert_non_null(strstr(out[0].note, "INC-1). Clears when an operator ends the freeze"));
	arena_free(r.a);

	/* The same rule refusing a claim's metadata UPDATE during a freeze
	 * (its owner or pod-claim-name): an Event, but nothing held back. */
	claim_review(&r, false);
	r.rq.operation = ADMISSION_OP_UPDATE;
	r.rq.object.u.claim.allocated = false;
	deny(&r, RULE_CLAIM_FREEZE_CREATE, ACTION_DENY, "the cluster is in a rollback freeze (reason: INC-1)");
	finish(&r);
	n = 9;
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_false(out[0].pending);
	arena_free(r.a);

	/* A claim created without a uid yet (a review sent before the API
	 * server filled it in, as its mutating stage is): the Event regards the
	 * claim by name, with no uid, and nothing reads the absent field (under
	 * UBSan, copying it was memcpy(dst, NULL, 0)). */
	claim_review(&r, false);
	r.rq.operation = ADMISSION_OP_CREATE;
	r.rq.object.u.claim.allocated = false;
	r.rq.object.meta.uid = (struct str){ NULL, 0 };
	deny(&r, RULE_CLAIM_FREEZE_CREATE, ACTION_DENY, "the cluster is in a rollback freeze (reason: INC-1)");
	finish(&r);
	n = 9;
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].regarding.name, "gpu-claim");
	assert_string_equal(out[0].regarding.uid, "");
	arena_free(r.a);
}

static void test_pod_status_refusal_regards_the_pod(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	claim_review(&r, false);
	r.rq.object.kind = OBJECT_POD;
	r.rq.object.meta.name = STR_LIT("trainer-0");
	r.rq.object.meta.uid = STR_LIT("aa6c9a9e-1111-4222-8333-944455556666");
	r.rq.name = STR_LIT("trainer-0");
	deny(&r, RULE_LEDGER_POD_AMOUNTS, ACTION_DENY, "claim team-a/gpu-claim is charged cpu=2; the status says cpu=4");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].regarding.kind, "Pod");
	assert_string_equal(out[0].regarding.name, "trainer-0");
	assert_string_equal(out[0].action, "UpdatePodStatus");
	assert_false(out[0].pending);   /* not an allocation: no pending time */
	arena_free(r.a);
}

/* ledger.pod.omitted allows the write (a denial would loop the scheduler)
 * yet the Pod is told: the scheduler does not count a claim on its node. */
static void test_omitted_claim_warning_tells_the_pod(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	claim_review(&r, false);
	r.rq.object.kind = OBJECT_POD;
	r.rq.object.meta.name = STR_LIT("trainer-0");
	r.rq.object.meta.uid = STR_LIT("aa6c9a9e-1111-4222-8333-944455556666");
	r.rq.name = STR_LIT("trainer-0");
	deny(&r, RULE_LEDGER_POD_OMITTED, ACTION_WARN,
	     "claim team-a/gpu-claim is reserved for this Pod and its devices map memory=2Gi on node worker-1, but "
	     "the status leaves it out");
	finish(&r);
	assert_true(r.v.allowed);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].reason, "LedgerPodOmitted");
	assert_string_equal(out[0].regarding.kind, "Pod");
	assert_string_equal(out[0].regarding.name, "trainer-0");
	assert_false(out[0].pending);
	assert_non_null(strstr(out[0].note, "gpu-claim"));
	assert_non_null(strstr(out[0].note, "worker-1"));
	assert_non_null(strstr(out[0].note, "memory=2Gi"));
	assert_non_null(strstr(out[0].note, "delete the Pod"));
	/* A dry run still emits nothing. */
	r.rq.dry_run = true;
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 0);
	arena_free(r.a);
}

/* A claim a freeze refused to create does not exist: the Pods that name it
 * (found by the rule in the view) get the Event, the first with the pending
 * time, each relating the claim. */
static void test_freeze_create_tells_the_pods_that_name_the_claim(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	claim_review(&r, false);
	r.rq.operation = ADMISSION_OP_CREATE;
	r.rq.object.u.claim.allocated = false;
	deny(&r, RULE_CLAIM_FREEZE_CREATE, ACTION_DENY, "the cluster is in a rollback freeze (reason: INC-1)");
	r.v.held_pods[0] = (struct verdict_pod){ STR_LIT("trainer-0"), STR_LIT("aa6c9a9e-1111-4222-8333-944455556666") };
	r.v.held_pods[1] = (struct verdict_pod){ STR_LIT("trainer-1"), STR_LIT("bb6c9a9e-1111-4222-8333-944455556666") };
	r.v.nheld_pods = 2;
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].reason, "ClaimFreezeCreate");
	assert_string_equal(out[0].regarding.kind, "Pod");
	assert_string_equal(out[0].regarding.namespace, "team-a");
	assert_string_equal(out[0].regarding.name, "trainer-0");
	assert_string_equal(out[0].regarding.uid, "aa6c9a9e-1111-4222-8333-944455556666");
	assert_true(out[0].has_related);
	assert_string_equal(out[0].related.kind, "ResourceClaim");
	assert_string_equal(out[0].related.name, "gpu-claim");
	assert_true(out[0].pending);
	assert_string_equal(out[0].claim.name, "gpu-claim");
	assert_string_equal(out[0].pod, "trainer-0");
	assert_string_equal(out[1].regarding.name, "trainer-1");
	assert_false(out[1].pending);   /* one pending time per claim */
	assert_non_null(strstr(out[1].note, "Clears when an operator ends the freeze"));
	arena_free(r.a);
}

static void test_long_message_is_cut_and_the_advice_kept(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	char msg[3000];
	size_t n = 0, len;

	(void)state;
	/* Two-byte characters, so a cut in the middle of one would show. */
	for (len = 0; len + 2 < sizeof(msg); len += 2)
		memcpy(msg + len, "\xc3\xa9", 2);
	msg[len] = '\0';
	claim_review(&r, true);
	deny(&r, RULE_LEDGER_NUMA_SPLIT, ACTION_DENY, msg);
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	len = strlen(out[0].note);
	assert_true(len <= EVENTS_NOTE_MAX - 1);
	assert_non_null(strstr(out[0].note, "\xc3\xa9..."));
	assert_non_null(strstr(out[0].note, "numaAlign is turned off for the driver."));
	arena_free(r.a);
}

static void test_names_the_api_server_would_refuse_give_no_event(void **state)
{
	struct events_report out[EVENTS_PER_REVIEW];
	struct review r;
	size_t n = 9;

	(void)state;
	/* A review from anyone who reaches the port: the namespace would
	 * become part of the API path. */
	claim_review(&r, true);
	r.rq.object.meta.namespace = STR_LIT("../../api/v1/namespaces/kube-system");
	deny(&r, RULE_LEDGER_POOL_FRESH, ACTION_DENY, "incomplete");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 0);
	arena_free(r.a);
	/* A Pod name no Pod can have: reported on the claim instead. */
	claim_review(&r, true);
	r.pod.name = STR_LIT("trainer/0");
	deny(&r, RULE_LEDGER_POOL_FRESH, ACTION_DENY, "incomplete");
	finish(&r);
	events_from_review(&r.rq, &r.v, T0, out, EVENTS_PER_REVIEW, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].regarding.kind, "ResourceClaim");
	arena_free(r.a);
}

/* --- bodies ------------------------------------------------------------------------ */

static const struct doc_node *get(const struct doc_node *n, const char *path)
{
	char key[64];
	const char *dot;

	while (n && *path) {
		dot = strchr(path, '.');
		snprintf(key, sizeof(key), "%.*s", dot ? (int)(dot - path) : (int)strlen(path), path);
		n = doc_map_get(n, key);
		path = dot ? dot + 1 : path + strlen(path);
	}
	return n;
}

static void expect_text(const struct doc_node *root, const char *path, const char *want)
{
	const struct doc_node *n = get(root, path);

	if (!n || n->type != DOC_STRING || strcmp(n->text.ptr, want) != 0)
		fail_msg("%s: got %s, want %s", path, n && n->type == DOC_STRING ? n->text.ptr : "(none)", want);
}

static void sample_report(struct events_report *r, const char *pod)
{
	memset(r, 0, sizeof(*r));
	r->rule = RULE_LEDGER_POOL_FRESH;
	events_reason(r->rule, r->reason);
	snprintf(r->action, sizeof(r->action), "Allocate");
	snprintf(r->regarding.kind, sizeof(r->regarding.kind), "Pod");
	snprintf(r->regarding.api_version, sizeof(r->regarding.api_version), "v1");
	snprintf(r->regarding.namespace, sizeof(r->regarding.namespace), "team-a");
	snprintf(r->regarding.name, sizeof(r->regarding.name), "%s", pod);
	snprintf(r->regarding.uid, sizeof(r->regarding.uid), "u-%s", pod);
	snprintf(r->related.kind, sizeof(r->related.kind), "ResourceClaim");
	snprintf(r->related.api_version, sizeof(r->related.api_version), "resource.k8s.io/v1");
	snprintf(r->related.namespace, sizeof(r->related.namespace), "team-a");
	snprintf(r->related.name, sizeof(r->related.name), "gpu-claim");
	r->has_related = true;
	snprintf(r->note, sizeof(r->note), "pool <worker-1> is rebuilding; clears at 10:00:18Z. Wait.");
	r->pending = true;
	r->claim = r->related;
	snprintf(r->pod, sizeof(r->pod), "%s", pod);
	r->observed_ns = T0;
}

static void test_event_body_is_an_events_k8s_io_v1_event(void **state)
{
	struct events_report r;
	struct doc_set *set = NULL;
	const struct doc_node *root;
	struct buf b;
	char name[254];

	(void)state;
	sample_report(&r, "trainer-0");
	events_name(&r, T0 + 123456789, name);
	assert_string_equal(name, "trainer-0.18ecac7c07f5cd15");
	buf_init(&b, 1 << 16);
	assert_int_equal(events_create_json(&r, name, "dra-guard-7d9f-x2", T0 + 123456789, 1, T0, &b), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&b), buf_len(&b), NULL, &set, NULL), 0);
	root = doc_set_root(set, 0);
	expect_text(root, "apiVersion", "events.k8s.io/v1");
	expect_text(root, "kind", "Event");
	expect_text(root, "metadata.name", name);
	expect_text(root, "metadata.namespace", "team-a");
	expect_text(root, "eventTime", "2026-11-30T00:53:20.123456Z");
	expect_text(root, "type", "Warning");
	expect_text(root, "reportingController", "dra-guard.io/guard");
	expect_text(root, "reportingInstance", "dra-guard-7d9f-x2");
	expect_text(root, "reason", "LedgerPoolFresh");
	expect_text(root, "action", "Allocate");
	expect_text(root, "note", r.note);
	expect_text(root, "regarding.kind", "Pod");
	expect_text(root, "regarding.uid", "u-trainer-0");
	expect_text(root, "related.kind", "ResourceClaim");
	expect_text(root, "related.apiVersion", "resource.k8s.io/v1");
	assert_null(get(root, "series"));     /* one occurrence is not a series */
	doc_set_free(set);
	set = NULL;
	/* Created again after it expired, with the count it had. */
	buf_reset(&b);
	assert_int_equal(events_create_json(&r, name, "i", T0, 7, T0 + 5 * S, &b), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&b), buf_len(&b), NULL, &set, NULL), 0);
	root = doc_set_root(set, 0);
	expect_text(root, "series.lastObservedTime", "2026-11-30T00:53:25.000000Z");
	assert_non_null(strstr(buf_cstr(&b), "\"series\":{\"count\":7,"));
	doc_set_free(set);
	buf_reset(&b);
	assert_int_equal(events_series_patch_json(1000, T0 + 59 * S, &b), 0);
	assert_string_equal(buf_cstr(&b), "{\"series\":{\"count\":1000,\"lastObservedTime\":\"2026-11-30T00:54:19.000000Z\"}}");
	assert_int_equal(events_series_patch_json(1, T0, &b), -EINVAL);
	buf_free(&b);
}

/* --- series ------------------------------------------------------------------------ */

static void test_a_thousand_refusals_are_one_series_of_a_thousand(void **state)
{
	struct event_cache_limits l;
	struct event_cache *c = NULL;
	struct events_report r;
	struct event_send send;
	int64_t t = T0;
	int i, patches = 0;

	(void)state;
	event_cache_limits_default(&l);
	assert_int_equal(event_cache_new(&l, &c), 0);
	sample_report(&r, "trainer-0");
	assert_int_equal(event_cache_observe(c, &r, t, &send), EVENT_STEP_CREATE);
	assert_int_equal(send.count, 1);
	assert_string_equal(send.report->reason, "LedgerPoolFresh");
	event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, t);
	for (i = 1; i < 1000; i++) {
		t += 50 * 1000000LL;   /* 1,000 in 50 s */
		assert_int_equal(event_cache_observe(c, &r, t, &send), EVENT_STEP_NONE);
		/* At most one patch per interval while they come. */
		if (event_cache_next(c, t, &send) == EVENT_STEP_PATCH) {
			assert_true(send.count >= 2);
			patches++;
			event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, t);
		}
	}
	assert_int_equal(event_cache_series(c), 1);
	assert_int_equal(patches, 4);   /* at 10, 20, 30 and 40 s */
	assert_int_equal(event_cache_next(c, t + 10 * S, &send), EVENT_STEP_PATCH);
	assert_int_equal(send.count, 1000);
	assert_int_equal(send.last_ns, t);
	assert_false(send.finishing);
	event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, t + 10 * S);
	assert_int_equal(event_cache_next(c, t + 11 * S, &send), EVENT_STEP_NONE);
	/* Idle for 6 minutes: finished and forgotten; the next one is a new Event. */
	assert_int_equal(event_cache_next(c, t + 361 * S, &send), EVENT_STEP_NONE);
	assert_int_equal(event_cache_series(c), 0);
	assert_int_equal(event_cache_observe(c, &r, t + 362 * S, &send), EVENT_STEP_CREATE);
	event_cache_free(c);
}

static void test_patches_are_spaced_by_the_interval(void **state)
{
	struct event_cache_limits l;
	struct event_cache *c = NULL;
	struct events_report r;
	struct event_send send;
	int64_t t;
	int patches = 0;

	(void)state;
	event_cache_limits_default(&l);
	assert_int_equal(event_cache_new(&l, &c), 0);
	sample_report(&r, "trainer-0");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	for (t = T0 + S; t <= T0 + 60 * S; t += S) {
		assert_int_equal(event_cache_observe(c, &r, t, &send), EVENT_STEP_NONE);
		while (event_cache_next(c, t, &send) == EVENT_STEP_PATCH) {
			patches++;
			event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, t);
		}
	}
	/* 60 refusals over a minute: a patch every 10 s. */
	assert_int_equal(patches, 6);
	event_cache_free(c);
}

static void test_rate_limit_per_object(void **state)
{
	struct event_cache_limits l;
	struct event_cache *c = NULL;
	struct events_report r;
	struct event_send send;
	int i;

	(void)state;
	event_cache_limits_default(&l);
	assert_int_equal(event_cache_new(&l, &c), 0);
	sample_report(&r, "trainer-0");
	/* 25 different series about one Pod are created; the 26th is limited. */
	for (i = 0; i < 25; i++) {
		snprintf(r.action, sizeof(r.action), "A%d", i);
		assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
		event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	}
	snprintf(r.action, sizeof(r.action), "A25");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_LIMITED);
	/* Another object has its own bucket. */
	sample_report(&r, "trainer-1");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	/* One token back after 5 minutes. */
	sample_report(&r, "trainer-0");
	snprintf(r.action, sizeof(r.action), "A25");
	assert_int_equal(event_cache_observe(c, &r, T0 + 299 * S, &send), EVENT_STEP_LIMITED);
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_CREATE);
	event_cache_free(c);
}

/* max_objects buckets: a new object is limited while every bucket is
 * spending, and takes the place of one that is full again (which loses
 * nothing: a full bucket is what a new one is). */
static void test_rate_limit_buckets_are_bounded(void **state)
{
	struct event_cache_limits l;
	struct event_cache *c = NULL;
	struct events_report r;
	struct event_send send;

	(void)state;
	event_cache_limits_default(&l);
	l.max_objects = 2;
	l.burst = 2;
	assert_int_equal(event_cache_new(&l, &c), 0);
	sample_report(&r, "p0");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	sample_report(&r, "p1");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	sample_report(&r, "p2");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_LIMITED);
	/* p0's and p1's buckets are full again after one refill: p2 takes one. */
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0 + 300 * S);
	/* p2 kept its bucket: one token left of two, then limited. */
	snprintf(r.action, sizeof(r.action), "B1");
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0 + 300 * S);
	snprintf(r.action, sizeof(r.action), "B2");
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_LIMITED);
	/* p2 took p0's bucket; p0 now takes p1's, full again, not p2's. */
	sample_report(&r, "p0");
	snprintf(r.action, sizeof(r.action), "B3");
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0 + 300 * S);
	/* And p2 is still limited: its bucket was not the one given away. */
	sample_report(&r, "p2");
	snprintf(r.action, sizeof(r.action), "B4");
	assert_int_equal(event_cache_observe(c, &r, T0 + 300 * S, &send), EVENT_STEP_LIMITED);
	event_cache_free(c);
}

static void test_bounded_series_and_failures(void **state)
{
	struct event_cache_limits l;
	struct event_cache *c = NULL;
	struct events_report r;
	struct event_send send;
	uint32_t slot;

	(void)state;
	event_cache_limits_default(&l);
	l.max_series = 2;
	assert_int_equal(event_cache_new(&l, &c), 0);
	sample_report(&r, "p0");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	/* A failed create forgets the series: the next refusal tries again. */
	event_cache_sent(c, send.slot, 1, EVENT_SENT_FAILED, T0);
	assert_int_equal(event_cache_series(c), 0);
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	sample_report(&r, "p1");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_CREATE);
	event_cache_sent(c, send.slot, 1, EVENT_SENT_OK, T0);
	sample_report(&r, "p2");
	assert_int_equal(event_cache_observe(c, &r, T0, &send), EVENT_STEP_FULL);
	assert_int_equal(event_cache_series(c), 2);
	/* The Event expired from the API server: PATCH finds nothing, so it is
	 * created again with the count it has. */
	sample_report(&r, "p0");
	assert_int_equal(event_cache_observe(c, &r, T0 + S, &send), EVENT_STEP_NONE);
	assert_int_equal(event_cache_next(c, T0 + 20 * S, &send), EVENT_STEP_PATCH);
	slot = send.slot;
	event_cache_sent(c, slot, send.count, EVENT_SENT_GONE, T0 + 20 * S);
	assert_int_equal(event_cache_next(c, T0 + 20 * S, &send), EVENT_STEP_CREATE);
	assert_int_equal(send.count, 2);
	event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, T0 + 20 * S);
	/* A series idle with counts unwritten gets a last patch, then goes. */
	assert_int_equal(event_cache_observe(c, &r, T0 + 21 * S, &send), EVENT_STEP_NONE);
	assert_int_equal(event_cache_next(c, T0 + 21 * S + 360 * S, &send), EVENT_STEP_PATCH);
	assert_true(send.finishing);
	assert_int_equal(send.count, 3);
	event_cache_sent(c, send.slot, send.count, EVENT_SENT_OK, T0 + 400 * S);
	/* p1 idle with nothing to write: forgotten as next() passes. */
	assert_int_equal(event_cache_next(c, T0 + 400 * S, &send), EVENT_STEP_NONE);
	assert_int_equal(event_cache_series(c), 0);
	event_cache_free(c);
}

/* --- pending ----------------------------------------------------------------------- */

struct done_log {
	int n;
	enum rule_id rule;
	double seconds;
};

static void on_done(void *ctx, enum rule_id rule, double seconds)
{
	struct done_log *d = ctx;

	d->n++;
	d->rule = rule;
	d->seconds = seconds;
}

static const char *claim_json(char *buf, size_t n, const char *name, const char *uid, bool allocated)
{
	snprintf(buf, n,
		 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\","
		 "\"namespace\":\"team-a\",\"uid\":\"%s\",\"resourceVersion\":\"1\"},\"spec\":{\"devices\":{"
		 "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}%s}",
		 name, uid,
		 allocated ? ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
			     "\"gpu.example.com\",\"pool\":\"worker-1\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{"
			     "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
			     "\"values\":[\"worker-1\"]}]}]}}}" : "");
	return buf;
}

static const struct view *publish(struct view_builder *b, const struct view *old, struct arena *a, int64_t t,
				  const char *json)
{
	const struct view *v = NULL;
	char err[256];

	if (json && view_builder_apply_json(b, VIEW_ADDED, json, strlen(json), a, t, err, sizeof(err)) != 0)
		fail_msg("apply: %s", err);
	if (old)
		view_builder_release(b, old);
	view_builder_touch_all(b, t);
	assert_int_equal(view_builder_publish(b, &v), 0);
	return v;
}

/* The table, a view builder and its arena that the pending tests share. */
static void held_open(uint32_t max, size_t arena_bytes, struct pending_table **t, struct view_builder **b,
		      struct arena **a)
{
	assert_int_equal(pending_table_new(max, 600 * S, t), 0);
	assert_int_equal(view_builder_new(NULL, b), 0);
	assert_int_equal(arena_new(arena_bytes, a), 0);
}

/* Release v (NULL for none) and free what held_open() made. */
static void held_close(struct pending_table *t, struct view_builder *b, struct arena *a, const struct view *v)
{
	if (v)
		view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
	pending_table_free(t);
}

static void test_pending_from_first_refusal_to_allocation(void **state)
{
	struct pending_table *t = NULL;
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	struct events_report r;
	struct done_log d = { 0 };
	struct buf out;
	char json[2048];
	const char *uid = "0f6c9a9e-1111-4222-8333-944455556666";

	(void)state;
	held_open(2, 1 << 20, &t, &b, &a);
	sample_report(&r, "trainer-0");
	snprintf(r.claim.uid, sizeof(r.claim.uid), "%s", uid);
	assert_int_equal(pending_table_refused(t, &r), 0);
	r.rule = RULE_CLAIM_FREEZE_ALLOCATE;
	r.observed_ns = T0 + 5 * S;
	assert_int_equal(pending_table_refused(t, &r), 0);
	assert_int_equal(pending_table_count(t), 1);
	v = publish(b, NULL, a, T0 + 6 * S, claim_json(json, sizeof(json), "gpu-claim", uid, false));
	assert_int_equal(pending_table_sweep(t, v, T0 + 6 * S, on_done, &d), 1);
	assert_int_equal(d.n, 0);
	buf_init(&out, 1 << 16);
	assert_int_equal(pending_table_json(t, T0 + 7 * S, &out), 0);
	assert_string_equal(buf_cstr(&out),
			    "[{\"namespace\":\"team-a\",\"name\":\"gpu-claim\",\"uid\":"
			    "\"0f6c9a9e-1111-4222-8333-944455556666\",\"pod\":\"trainer-0\",\"reason\":"
			    "\"ClaimFreezeAllocate\",\"rule\":\"claim.freeze.allocate\",\"since\":"
			    "\"2026-11-30T00:53:20Z\",\"seconds\":7.000,\"lastRefused\":\"2026-11-30T00:53:25Z\","
			    "\"refusals\":2}]");
	/* Allocated when the view first saw it, 42 s after the first refusal;
	 * reported under the rule that held it last. */
	v = publish(b, v, a, T0 + 42 * S, claim_json(json, sizeof(json), "gpu-claim", uid, true));
	assert_int_equal(pending_table_sweep(t, v, T0 + 50 * S, on_done, &d), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.rule, RULE_CLAIM_FREEZE_ALLOCATE);
	assert_true(d.seconds > 41.99 && d.seconds < 42.01);
	buf_reset(&out);
	assert_int_equal(pending_table_json(t, T0 + 50 * S, &out), 0);
	assert_string_equal(buf_cstr(&out), "[]");
	buf_free(&out);
	held_close(t, b, a, v);
}

/* A claim the view shows under the held one's name but with another UID
 * was deleted and made again: the held one is dropped, not reported done.
 * The UID learnt at a later refusal counts, and a UID that is not a
 * canonical UUID compares as its text. */
static void test_pending_drops_a_claim_recreated_under_its_name(void **state)
{
	const char *first = "0f6c9a9e-1111-4222-8333-944455556666";
	const char *again = "0f6c9a9e-1111-4222-8333-944455550000";
	struct pending_table *t = NULL;
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	struct events_report r;
	struct done_log d = { 0 };
	char json[2048];

	(void)state;
	held_open(8, 1 << 20, &t, &b, &a);
	sample_report(&r, "trainer-0");
	r.claim.uid[0] = '\0';
	assert_int_equal(pending_table_refused(t, &r), 0);
	snprintf(r.claim.uid, sizeof(r.claim.uid), "%s", first);
	assert_int_equal(pending_table_refused(t, &r), 0);
	snprintf(r.claim.name, sizeof(r.claim.name), "odd-uid");
	snprintf(r.claim.uid, sizeof(r.claim.uid), "not-a-uuid");
	assert_int_equal(pending_table_refused(t, &r), 0);
	v = publish(b, NULL, a, T0 + 6 * S, claim_json(json, sizeof(json), "gpu-claim", first, false));
	v = publish(b, v, a, T0 + 6 * S, claim_json(json, sizeof(json), "odd-uid", "not-a-uuid", false));
	assert_int_equal(pending_table_sweep(t, v, T0 + 7 * S, on_done, &d), 2);
	v = publish(b, v, a, T0 + 8 * S, claim_json(json, sizeof(json), "gpu-claim", again, false));
	assert_int_equal(pending_table_sweep(t, v, T0 + 9 * S, on_done, &d), 1);
	v = publish(b, v, a, T0 + 10 * S, claim_json(json, sizeof(json), "odd-uid", "not-a-uuid-2", true));
	assert_int_equal(pending_table_sweep(t, v, T0 + 11 * S, on_done, &d), 0);
	assert_int_equal(d.n, 0);
	held_close(t, b, a, v);
}

/* The index a sweep rebuilds still finds every claim kept: a second
 * refusal of one adds no entry, and a claim swept out enters again. */
static void test_pending_finds_claims_after_sweeps(void **state)
{
	struct pending_table *t = NULL;
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	struct events_report r;
	struct done_log d = { 0 };
	char json[2048], name[32], uid[64], err[256];
	int i, round;

	(void)state;
	held_open(500, 1 << 22, &t, &b, &a);
	sample_report(&r, "p0");
	for (i = 0; i < 400; i++) {
		snprintf(r.claim.name, sizeof(r.claim.name), "c%d", i);
		snprintf(r.claim.uid, sizeof(r.claim.uid), "00000000-0000-4000-8000-%012d", i);
		assert_int_equal(pending_table_refused(t, &r), 0);
		/* every claim is in the view; every third one allocated */
		snprintf(name, sizeof(name), "c%d", i);
		snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", i);
		claim_json(json, sizeof(json), name, uid, i % 3 == 0);
		if (view_builder_apply_json(b, VIEW_ADDED, json, strlen(json), a, T0 + 5 * S, err, sizeof(err)) != 0)
			fail_msg("apply: %s", err);
	}
	v = publish(b, NULL, a, T0 + 5 * S, NULL);
	assert_int_equal(pending_table_sweep(t, v, T0 + 6 * S, on_done, &d), 266);
	assert_int_equal(d.n, 134);
	for (round = 0; round < 2; round++)
		for (i = 0; i < 400; i++) {
			snprintf(r.claim.name, sizeof(r.claim.name), "c%d", i);
			snprintf(r.claim.uid, sizeof(r.claim.uid), "00000000-0000-4000-8000-%012d", i);
			if (i % 3 == 0 && round == 1)
				continue;
			assert_int_equal(pending_table_refused(t, &r), 0);
		}
	/* the 134 swept out entered again once, the 266 kept were found */
	assert_int_equal(pending_table_count(t), 400);
	held_close(t, b, a, v);
}

/* The buckets of dra_guard_pending_seconds: a time on a bound is in it. */
/* The table starts with room for a few claims and grows as they come, to
 * exactly max: a max not a power of two, every claim held found again
 * (not counted twice) after each growth, the next one refused. */
static void test_pending_grows_to_max_and_no_further(void **state)
{
	struct pending_table *t = NULL;
	struct events_report r;
	int i, j;

	(void)state;
	assert_int_equal(pending_table_new(203, 600 * S, &t), 0);
	sample_report(&r, "p0");
	for (i = 0; i < 203; i++) {
		snprintf(r.claim.name, sizeof(r.claim.name), "c%d", i);
		assert_int_equal(pending_table_refused(t, &r), 0);
		if ((i & (i + 1)) == 0 || i == 202)      /* at each doubling, and at max */
			for (j = 0; j <= i; j++) {
				snprintf(r.claim.name, sizeof(r.claim.name), "c%d", j);
				assert_int_equal(pending_table_refused(t, &r), 0);
			}
		assert_int_equal(pending_table_count(t), i + 1);
	}
	snprintf(r.claim.name, sizeof(r.claim.name), "c203");
	assert_int_equal(pending_table_refused(t, &r), -E2BIG);
	snprintf(r.claim.name, sizeof(r.claim.name), "c7");
	assert_int_equal(pending_table_refused(t, &r), 0);
	assert_int_equal(pending_table_count(t), 203);
	pending_table_free(t);
}

/* No memory for more room: the new claim is not held, the table is as it
 * was (every claim found again, none counted twice), and a later growth
 * works. */
static void test_pending_without_memory_to_grow_holds_what_it_held(void **state)
{
	struct pending_table *t = NULL;
	struct events_report r;
	int i;

	(void)state;
	assert_int_equal(pending_table_new(1000, 600 * S, &t), 0);
	sample_report(&r, "p0");
	for (i = 0; i < 64; i++) {       /* the room it starts with */
		snprintf(r.claim.name, sizeof(r.claim.name), "c%d", i);
		assert_int_equal(pending_table_refused(t, &r), 0);
	}
	realloc_budget = 0;
	snprintf(r.claim.name, sizeof(r.claim.name), "c64");
	assert_int_equal(pending_table_refused(t, &r), -ENOMEM);
	for (i = 0; i < 64; i++) {
		snprintf(r.claim.name, sizeof(r.claim.name), "c%d", i);
		assert_int_equal(pending_table_refused(t, &r), 0);
	}
	realloc_budget = -1;
	assert_int_equal(pending_table_count(t), 64);
	snprintf(r.claim.name, sizeof(r.claim.name), "c64");
	assert_int_equal(pending_table_refused(t, &r), 0);
	assert_int_equal(pending_table_count(t), 65);
	pending_table_free(t);
}

static void test_pending_buckets_are_the_metrics(void **state)
{
	static const struct {
		double seconds;
		size_t bucket;
	} cases[] = {
		{ 0, 0 }, { 1.0, 0 }, { 1.001, 1 }, { 5, 1 }, { 29.9, 3 }, { 180, 6 }, { 3600, 9 }, { 21600, 11 },
		{ 21600.5, PENDING_BUCKETS }, { 1e9, PENDING_BUCKETS },
	};
	struct pending_hist h;
	char le[PENDING_LE_MAX];
	size_t i, b;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&h, 0, sizeof(h));
		pending_hist_observe(&h, RULE_CLAIM_FREEZE_ALLOCATE, cases[i].seconds);
		pending_hist_observe(&h, RULE_SLICE_WRITER, cases[i].seconds);    /* emits no Event: ignored */
		for (b = 0; b <= PENDING_BUCKETS; b++)
			assert_int_equal(h.counts[events_rule_index(RULE_CLAIM_FREEZE_ALLOCATE)][b], b == cases[i].bucket);
	}
	pending_bucket_label(0, le);
	assert_string_equal(le, "1");
	pending_bucket_label(PENDING_BUCKETS - 1, le);
	assert_string_equal(le, "21600");
	pending_bucket_label(PENDING_BUCKETS, le);
	assert_string_equal(le, "+Inf");
	/* the table of reasons is the set events_rule_emits() names, each once */
	for (i = 0; i < EVENTS_RULES; i++) {
		assert_true(events_rule_emits(events_rule_at(i)));
		assert_int_equal(events_rule_index(events_rule_at(i)), (int)i);
	}
	for (i = 0; i < RULE_COUNT; i++)
		assert_int_equal(events_rule_emits((enum rule_id)i), events_rule_index((enum rule_id)i) >= 0);
}

static void test_pending_is_bounded_and_forgets_gone_claims(void **state)
{
	struct pending_table *t = NULL;
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	struct events_report r;
	struct done_log d = { 0 };
	char json[2048];

	(void)state;
	held_open(2, 1 << 20, &t, &b, &a);
	sample_report(&r, "p0");
	snprintf(r.claim.name, sizeof(r.claim.name), "c0");
	snprintf(r.claim.uid, sizeof(r.claim.uid), "00000000-0000-4000-8000-000000000000");
	assert_int_equal(pending_table_refused(t, &r), 0);
	snprintf(r.claim.name, sizeof(r.claim.name), "c1");
	assert_int_equal(pending_table_refused(t, &r), 0);
	snprintf(r.claim.name, sizeof(r.claim.name), "c2");
	assert_int_equal(pending_table_refused(t, &r), -E2BIG);
	r.pending = false;   /* not an allocation: ignored */
	assert_int_equal(pending_table_refused(t, &r), 0);
	/* c0 recreated under another uid: the old one is gone. c1 never seen:
	 * kept while refusals are recent, forgotten when idle. */
	v = publish(b, NULL, a, T0, claim_json(json, sizeof(json), "c0", "11111111-0000-4000-8000-000000000000", false));
	assert_int_equal(pending_table_sweep(t, v, T0 + S, on_done, &d), 1);
	assert_int_equal(pending_table_sweep(t, v, T0 + 600 * S, on_done, &d), 0);
	assert_int_equal(d.n, 0);
	held_close(t, b, a, v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_is_the_rule_id_in_camel_case),
		cmocka_unit_test(test_allocation_refusal_regards_the_pod_and_relates_the_claim),
		cmocka_unit_test(test_no_event_for_dry_run_warn_allowed_or_other_rules),
		cmocka_unit_test(test_omitted_claim_warning_tells_the_pod),
		cmocka_unit_test(test_freeze_create_tells_the_pods_that_name_the_claim),
		cmocka_unit_test(test_claim_without_pod_and_freeze_create_regard_the_claim),
		cmocka_unit_test(test_pod_status_refusal_regards_the_pod),
		cmocka_unit_test(test_long_message_is_cut_and_the_advice_kept),
		cmocka_unit_test(test_names_the_api_server_would_refuse_give_no_event),
		cmocka_unit_test(test_event_body_is_an_events_k8s_io_v1_event),
		cmocka_unit_test(test_a_thousand_refusals_are_one_series_of_a_thousand),
		cmocka_unit_test(test_patches_are_spaced_by_the_interval),
		cmocka_unit_test(test_rate_limit_per_object),
		cmocka_unit_test(test_rate_limit_buckets_are_bounded),
		cmocka_unit_test(test_bounded_series_and_failures),
		cmocka_unit_test(test_pending_from_first_refusal_to_allocation),
		cmocka_unit_test(test_pending_is_bounded_and_forgets_gone_claims),
		cmocka_unit_test(test_pending_drops_a_claim_recreated_under_its_name),
		cmocka_unit_test(test_pending_finds_claims_after_sweeps),
		cmocka_unit_test(test_pending_grows_to_max_and_no_further),
		cmocka_unit_test(test_pending_without_memory_to_grow_holds_what_it_held),
		cmocka_unit_test(test_pending_buckets_are_the_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
