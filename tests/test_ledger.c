/* test_ledger.c - the ledger's arithmetic: what each claim adds to which
 * node and NUMA zone, in the scheduler's units, counted once, kept at the
 * mapping it was charged under, and balanced against the Pod statuses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arena.h"
#include "buf.h"
#include "ledger.h"
#include "policy.h"
#include "view.h"
#include "view_dump.h"

#define S 1000000000LL

/* --- objects ---------------------------------------------------------------------- */

static char *slice(const char *name, const char *node, int gen, const char *cpu_mult, const char *extra)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"%s\","
		 "\"resourceVersion\":\"%d\"},\"spec\":{\"driver\":\"dra.example.com\",\"nodeName\":\"%s\","
		 "\"pool\":{\"name\":\"%s\",\"generation\":%d,\"resourceSliceCount\":1},\"devices\":["
		 "{\"name\":\"accel-0\",\"attributes\":{\"dra.example.com/numaNode\":{\"int\":0}},"
		 "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"%s\"},"
		 "\"memory\":{\"allocationMultiplier\":\"8Gi\"}}},"
		 "{\"name\":\"accel-1\",\"attributes\":{\"dra.example.com/numaNode\":{\"int\":1}},"
		 "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"%s\"}}},"
		 "{\"name\":\"socket-0\",\"allowMultipleAllocations\":true,"
		 "\"capacity\":{\"dra.example.com/cpu\":{\"value\":\"64\"}},"
		 "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"capacityKey\":\"dra.example.com/cpu\","
		 "\"allocationMultiplier\":\"2\"}}}%s]}}",
		 name, gen * 10, node, node, gen, cpu_mult, cpu_mult, extra ? extra : "");
	return buf;
}

/* A claim allocated the devices "dev[,dev...]" of node's pool; node-local
 * when local, else a node selector on a label; reserved for the Pods
 * "pod[,pod...]" (their UIDs are "uid-<pod>" padded to a UUID). */
static char *claim(const char *name, const char *node, const char *devs, bool local, const char *pods,
		   const char *consumed)
{
	static char buf[8192];
	char results[2048] = "", reserved[2048] = "", list[512];
	char *save = NULL, *d;
	size_t off = 0, roff = 0;
	int k = 0;

	snprintf(list, sizeof(list), "%s", devs);
	for (d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save), k++)
		off += (size_t)snprintf(results + off, sizeof(results) - off,
					"%s{\"request\":\"r\",\"driver\":\"dra.example.com\",\"pool\":\"%s\","
					"\"device\":\"%s\"%s%s%s}", k ? "," : "", node, d,
					consumed ? ",\"consumedCapacity\":{\"dra.example.com/cpu\":\"" : "",
					consumed ? consumed : "", consumed ? "\"}" : "");
	snprintf(list, sizeof(list), "%s", pods);
	k = 0;
	for (d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save), k++)
		roff += (size_t)snprintf(reserved + roff, sizeof(reserved) - roff,
					 "%s{\"resource\":\"pods\",\"name\":\"%s\",\"uid\":\"00000000-0000-4000-8000-%012d\"}",
					 k ? "," : "", d, (int)(d[strlen(d) - 1] - '0'));
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\","
		 "\"namespace\":\"ns\",\"uid\":\"11111111-0000-4000-8000-0000000000%02d\",\"resourceVersion\":\"5\"},"
		 "\"spec\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":[%s]},\"nodeSelector\":"
		 "{\"nodeSelectorTerms\":[{%s}]}},\"reservedFor\":[%s]}}",
		 name, (int)strlen(name), results,
		 local ? "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"NODE\"]}]"
		       : "\"matchExpressions\":[{\"key\":\"rack\",\"operator\":\"In\",\"values\":[\"r1\"]}]",
		 reserved);
	if (local) {
		char *p = strstr(buf, "NODE");
		char tail[8192];

		snprintf(tail, sizeof(tail), "%s", p + 4);
		snprintf(p, sizeof(buf) - (size_t)(p - buf), "%s%s", node, tail);
	}
	return buf;
}

static char *unallocated(const char *name)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
		 "{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"11111111-0000-4000-8000-0000000000%02d\"},"
		 "\"spec\":{},\"status\":{}}", name, (int)strlen(name));
	return buf;
}

/* A Pod podN on node (bound) asking cpu, naming claim_name (NULL: no
 * claim), with a status for claim amounts (NULL: none) and, with
 * pod_level, a Pod-level cpu request. */
static char *pod(const char *name, const char *node, const char *cpu, const char *claim_name,
		 const char *status, const char *pod_level)
{
	static char buf[4096];
	char st[1024] = "", pl[256] = "", rc[256] = "";

	if (status)
		snprintf(st, sizeof(st), ",\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"%s\","
			 "\"containers\":[\"c\"],\"resources\":{%s}}]", claim_name, status);
	if (pod_level)
		snprintf(pl, sizeof(pl), "\"resources\":{\"requests\":{\"cpu\":\"%s\"}},", pod_level);
	if (claim_name)
		snprintf(rc, sizeof(rc), "\"resourceClaims\":[{\"name\":\"c\",\"resourceClaimName\":\"%s\"}],",
			 claim_name);
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\","
		 "\"uid\":\"00000000-0000-4000-8000-%012d\"},\"spec\":{%s%s%s%s%s\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]},"
		 "\"status\":{\"phase\":\"Running\"%s}}",
		 name, (int)(name[strlen(name) - 1] - '0'), pl, node ? "\"nodeName\":\"" : "", node ? node : "",
		 node ? "\"," : "", rc, cpu, st);
	return buf;
}

static char *node(const char *name, const char *cpu)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
		 "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"}}}", name, cpu);
	return buf;
}

/* --- a view ------------------------------------------------------------------------ */

struct world {
	struct view_builder *b;
	struct arena *a;
	struct policy *pol;
	const struct view *v;
	struct ledger *l;
};

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(view_builder_new(NULL, &w->b), 0);
	assert_int_equal(arena_new(16 << 20, &w->a), 0);
	assert_int_equal(policy_builtin(&w->pol), 0);
}

static void apply(struct world *w, enum view_event ev, int64_t t, const char *json)
{
	char err[512];
	int rc = view_builder_apply_json(w->b, ev, json, strlen(json), w->a, t * S, err, sizeof(err));

	if (rc)
		fail_msg("apply: %d %s\n%s", rc, err, json);
}

/* Publish, and build the ledger at t (the previous one is freed). */
static const struct ledger *build(struct world *w, int64_t t)
{
	ledger_free(w->l);
	w->l = NULL;
	if (w->v)
		view_builder_release(w->b, w->v);
	view_builder_touch_all(w->b, t * S);
	assert_int_equal(view_builder_publish(w->b, &w->v), 0);
	assert_int_equal(ledger_build(w->v, w->pol, t * S, 64 << 20, &w->l), 0);
	return w->l;
}

static void world_free(struct world *w)
{
	ledger_free(w->l);
	if (w->v)
		view_builder_release(w->b, w->v);
	view_builder_free(w->b);
	arena_free(w->a);
	policy_free(w->pol);
}

static const struct ledger_amount *amount(const struct ledger *l, const char *nd, const char *res)
{
	const struct ledger_node *n = ledger_node(l, str_from_cstr(nd));

	if (!n)
		fail_msg("no node %s in the ledger", nd);
	return ledger_node_amount(n, str_from_cstr(res));
}

static int64_t zone(const struct ledger_amount *a, const char *z)
{
	uint32_t i;

	for (i = 0; a && i < a->nzones; i++)
		if (str_eq_cstr(a->zones[i].zone, z))
			return a->zones[i].amount;
	return -1;
}

/* --- tests ------------------------------------------------------------------------- */

static void test_a_claim_counts_once_however_many_pods_reserve_it(void **state)
{
	struct world w;
	const struct ledger *l;
	const struct ledger_amount *cpu;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, node("w1", "16"));
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1,p2", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "500m", "c1", "\"cpu\":\"2\",\"memory\":\"8Gi\"", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p2", "w1", "500m", "c1", "\"cpu\":\"2\",\"memory\":\"8Gi\"", NULL));
	/* the status sent again: the same allocation, the same charge */
	apply(&w, VIEW_MODIFIED, 4, claim("c1", "w1", "accel-0", true, "p1,p2", NULL));
	l = build(&w, 10);
	cpu = amount(l, "w1", "cpu");
	assert_int_equal(cpu->allocatable, 16000);
	assert_int_equal(cpu->pods, 1000);
	assert_int_equal(cpu->dra, 2000);
	assert_int_equal(cpu->status, 2000);          /* two Pods carry it; it counts once */
	assert_int_equal(cpu->total, 3000);
	assert_int_equal(zone(cpu, "unknown"), 2000);  /* the built-in policy names no NUMA attribute */
	assert_int_equal(amount(l, "w1", "memory")->dra, 8589934592LL);
	assert_int_equal(l->nentries, 1);
	assert_int_equal(l->claims, 1);
	assert_false(ledger_node(l, STR_LIT("w1"))->diverging);
	assert_int_equal(l->entries[0].claim->allocated_ns, 2 * S);   /* first observed, not re-sent */
	world_free(&w);
}

static void test_numa_zones_split_a_node_and_add_up_to_it(void **state)
{
	struct world w;
	const struct ledger *l;
	const struct ledger_amount *cpu;
	struct policy_error perr;
	static const char doc[] = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
				  "numa: {attributes: [dra.example.com/numaNode]}\n";

	(void)state;
	world_init(&w);
	policy_free(w.pol);
	assert_int_equal(policy_load(doc, sizeof(doc) - 1, &w.pol, &perr), 0);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0,accel-1", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "1", "c1", "\"cpu\":\"4\",\"memory\":\"8Gi\"", NULL));
	l = build(&w, 10);
	cpu = amount(l, "w1", "cpu");
	assert_int_equal(zone(cpu, "0"), 2000);
	assert_int_equal(zone(cpu, "1"), 2000);
	assert_int_equal(cpu->dra, zone(cpu, "0") + zone(cpu, "1"));
	assert_int_equal(cpu->status, 4000);
	assert_int_equal(l->nentries, 2);
	assert_false(ledger_node(l, STR_LIT("w1"))->diverging);
	world_free(&w);
}

static void test_capacity_mode_charges_consumed_times_multiplier(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "socket-0", true, "p1", "3"));
	l = build(&w, 10);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 6000);   /* 3 consumed x 2 */
	assert_int_equal(view_claim_charges(w.v, l->entries[0].claim)[0].state, VIEW_CHARGE_OK);
	/* without consumedCapacity the scheduler cannot compute it: nothing charged */
	apply(&w, VIEW_ADDED, 3, claim("c2", "w1", "socket-0", true, "p2", NULL));
	l = build(&w, 10);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 6000);
	assert_int_equal(l->uncharged, 1);
	world_free(&w);
}

static void test_a_multi_node_claim_is_charged_on_each_node_of_a_reserving_pod(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("net", "w1", "accel-1", false, "p1,p2,p3", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "1", "net", "\"cpu\":\"2\"", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p2", "w2", "1", "net", "\"cpu\":\"2\"", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p3", NULL, "1", "net", NULL, NULL));   /* not bound yet */
	l = build(&w, 10);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 2000);
	assert_int_equal(amount(l, "w2", "cpu")->dra, 2000);
	assert_int_equal(l->nentries, 2);
	assert_int_equal(l->claims, 1);
	assert_int_equal(l->nnodes, 2);
	/* a namesake with another UID is not the Pod the claim is reserved for */
	apply(&w, VIEW_MODIFIED, 4, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p2\","
	      "\"namespace\":\"ns\",\"uid\":\"99999999-0000-4000-8000-000000000002\"},\"spec\":{\"nodeName\":\"w2\","
	      "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}");
	l = build(&w, 10);
	assert_null(amount(l, "w2", "cpu"));   /* nothing on w2 asks for cpu any more */
	assert_int_equal(l->nentries, 1);
	world_free(&w);
}

static void test_a_charge_stays_at_its_mapping_version(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
	l = build(&w, 10);
	assert_true(l->entries[0].current);
	assert_int_equal(l->old_mapping, 0);
	/* the driver doubles the mapping: the live claim keeps what it was charged */
	apply(&w, VIEW_MODIFIED, 20, slice("s1", "w1", 2, "4", NULL));
	l = build(&w, 30);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 2000);
	assert_false(l->entries[0].current);
	assert_int_equal(l->old_mapping, 1);
	assert_int_equal(l->mapping_changed_ns, 20 * S);
	/* a new allocation is charged at the new one */
	apply(&w, VIEW_ADDED, 21, claim("c2", "w1", "accel-1", true, "p2", NULL));
	l = build(&w, 30);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 6000);
	world_free(&w);
}

static void test_a_claim_seen_before_its_slice_is_charged_when_the_slice_comes(void **state)
{
	struct world w;
	const struct ledger *l;
	struct view_stats st;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, claim("c1", "w1", "accel-0", true, "p1", NULL));
	view_builder_stats(w.b, &st);
	assert_int_equal(st.charge_pending, 1);
	l = build(&w, 2);
	assert_int_equal(l->pending, 1);
	assert_int_equal(l->nentries, 0);
	apply(&w, VIEW_ADDED, 3, slice("s1", "w1", 1, "2", NULL));
	l = build(&w, 4);
	assert_int_equal(l->pending, 0);
	assert_int_equal(amount(l, "w1", "cpu")->dra, 2000);
	assert_int_equal(l->entries[0].claim->allocated_ns, 1 * S);   /* still when the allocation was seen */
	/* charged once the slice came (the record keeps no time of it) */
	assert_int_equal(view_claim_charges(w.v, l->entries[0].claim)[0].state, VIEW_CHARGE_OK);
	assert_false(l->entries[0].claim->charge_pending);
	view_builder_stats(w.b, &st);
	assert_int_equal(st.charge_pending, 0);
	world_free(&w);
}

static void test_deallocation_removes_entries_and_holds(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c2", "w1", "accel-0", true, "p2", NULL));
	l = build(&w, 3);
	assert_int_equal(view_hold_get(w.v, STR_LIT("dra.example.com"), STR_LIT("w1"), STR_LIT("accel-0"))->nholders, 2);
	assert_int_equal(l->nentries, 2);
	apply(&w, VIEW_MODIFIED, 4, unallocated("c1"));
	/* the same deallocation sent again changes nothing */
	apply(&w, VIEW_MODIFIED, 5, unallocated("c1"));
	l = build(&w, 6);
	assert_int_equal(view_hold_get(w.v, STR_LIT("dra.example.com"), STR_LIT("w1"), STR_LIT("accel-0"))->nholders, 1);
	assert_int_equal(l->nentries, 1);
	apply(&w, VIEW_DELETED, 7, claim("c2", "w1", "accel-0", true, "p2", NULL));
	l = build(&w, 8);
	assert_null(view_hold_get(w.v, STR_LIT("dra.example.com"), STR_LIT("w1"), STR_LIT("accel-0")));
	assert_int_equal(l->nentries, 0);
	world_free(&w);
}

static void test_pod_level_requests_hold_the_claims_amounts(void **state)
{
	struct world w;
	const struct ledger *l;
	const struct ledger_amount *cpu;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, node("w1", "8"));
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "1", "c1", "\"cpu\":\"2\",\"memory\":\"8Gi\"", "4"));
	l = build(&w, 4);
	cpu = amount(l, "w1", "cpu");
	assert_int_equal(cpu->pods, 4000);      /* the Pod-level request */
	assert_int_equal(cpu->dra, 2000);
	assert_int_equal(cpu->covered, 2000);   /* inside the Pod's own 4 */
	assert_int_equal(cpu->total, 4000);
	world_free(&w);
}

static void test_overcommit_and_divergence_are_flagged(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, node("w1", "2"));
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "0.5m", "c1", "\"cpu\":\"3\"", NULL));
	l = build(&w, 4);
	assert_int_equal(amount(l, "w1", "cpu")->pods, 1);    /* half a millicore counts as one */
	assert_true(ledger_node(l, STR_LIT("w1"))->overcommitted);   /* 2001m of 2 */
	assert_true(ledger_node(l, STR_LIT("w1"))->diverging);       /* the status says 3, the ledger 2 */
	assert_int_equal(l->overcommitted, 1);
	assert_int_equal(l->diverging, 1);
	world_free(&w);
}

/* kube-scheduler 1.36 leaves a claim allocated in an earlier cycle out of
 * the Pod's status: the node is committed it and counts nothing. That is
 * "omitted" (undercounted), not a disagreement of amounts; a claim no Pod
 * on the node reserves yet is "unbound", neither. */
static void test_a_claim_no_status_names_is_omitted_or_unbound_not_unbalanced(void **state)
{
	static const struct {
		const char *about;
		const char *pod_node;     /* where p1 runs (NULL: not bound) */
		const char *status;       /* p1's status for c1 (NULL: none) */
		int64_t omitted, unbound;
		bool undercounted, diverging;
		int64_t total, scheduled;   /* what the mappings commit; what the scheduler counts */
	} rows[] = {
		{ "status names it", "w1", "\"cpu\":\"2\",\"memory\":\"8Gi\"", 0, 0, false, false, 3000, 3000 },
		{ "reserved by a Pod on the node, no status", "w1", NULL, 2000, 0, true, false, 3000, 1000 },
		{ "reserved by a Pod not bound yet", NULL, NULL, 0, 2000, false, false, 2000, 0 },
		{ "a status that disagrees", "w1", "\"cpu\":\"3\",\"memory\":\"8Gi\"", 0, 0, false, true, 3000, 4000 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct world w;
		const struct ledger *l;
		const struct ledger_amount *cpu;

		world_init(&w);
		apply(&w, VIEW_ADDED, 1, node("w1", "16"));
		apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
		apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
		apply(&w, VIEW_ADDED, 3, pod("p1", rows[i].pod_node, "1", "c1", rows[i].status, NULL));
		l = build(&w, 4);
		cpu = amount(l, "w1", "cpu");
		assert_non_null(cpu);
		assert_int_equal(cpu->dra, 2000);
		if (cpu->omitted != rows[i].omitted || cpu->unbound != rows[i].unbound ||
		    ledger_node(l, STR_LIT("w1"))->undercounted != rows[i].undercounted ||
		    ledger_node(l, STR_LIT("w1"))->diverging != rows[i].diverging)
			fail_msg("%s: omitted %lld unbound %lld undercounted %d diverging %d", rows[i].about,
				 (long long)cpu->omitted, (long long)cpu->unbound,
				 ledger_node(l, STR_LIT("w1"))->undercounted, ledger_node(l, STR_LIT("w1"))->diverging);
		assert_int_equal(l->undercounted, rows[i].undercounted ? 1 : 0);
		if (cpu->total != rows[i].total || cpu->scheduled != rows[i].scheduled)
			fail_msg("%s: total %lld scheduled %lld", rows[i].about, (long long)cpu->total,
				 (long long)cpu->scheduled);
		assert_int_equal(l->entries[0].counted, rows[i].omitted ? LEDGER_OMITTED
							: rows[i].unbound ? LEDGER_UNBOUND : LEDGER_COUNTED);
		world_free(&w);
	}
}

/* framework.Resource rounds a Pod's total (its requests plus its claims'
 * amounts, summed exactly) up once: two results of half a millicore each
 * and a Pod asking for 1 cpu make 1001m, not 1002m. */
static void test_the_total_rounds_once_per_pod(void **state)
{
	struct world w;
	const struct ledger *l;
	const struct ledger_amount *cpu;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, node("w1", "16"));
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "0.5m", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0,accel-1", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "w1", "1", "c1", NULL, NULL));
	l = build(&w, 4);
	cpu = amount(l, "w1", "cpu");
	assert_non_null(cpu);
	assert_int_equal(cpu->pods, 1000);
	assert_int_equal(cpu->total, 1001);
	/* A claim no Pod on the node uses is rounded alone. */
	apply(&w, VIEW_ADDED, 4, claim("c2", "w1", "accel-1", true, "p2", NULL));
	l = build(&w, 5);
	assert_int_equal(amount(l, "w1", "cpu")->total, 1002);
	world_free(&w);
}

static void test_finished_and_unbound_pods_leave_the_accounts(void **state)
{
	struct world w;
	const struct ledger *l;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, node("w1", "8"));
	apply(&w, VIEW_ADDED, 2, pod("p1", "w1", "1", NULL, NULL, NULL));
	apply(&w, VIEW_ADDED, 2, pod("p2", NULL, "1", NULL, NULL, NULL));
	l = build(&w, 3);
	assert_int_equal(amount(l, "w1", "cpu")->pods, 1000);
	assert_int_equal(view_count(w.v, OBJECT_POD), 1);   /* p2 neither bound nor with statuses */
	/* p3 is neither either, but names a claim by resourceClaimName: kept,
	 * for the Event of a claim a freeze refuses, and in no account */
	apply(&w, VIEW_ADDED, 2, pod("p3", NULL, "1", "held", NULL, NULL));
	l = build(&w, 3);
	assert_int_equal(amount(l, "w1", "cpu")->pods, 1000);
	assert_int_equal(view_count(w.v, OBJECT_POD), 2);
	apply(&w, VIEW_MODIFIED, 4, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
	      "\"namespace\":\"ns\",\"uid\":\"00000000-0000-4000-8000-000000000001\"},\"spec\":{\"nodeName\":"
	      "\"w1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
	      "\"status\":{\"phase\":\"Succeeded\"}}");
	l = build(&w, 5);
	assert_int_equal(amount(l, "w1", "cpu")->pods, 0);
	assert_int_equal(view_count(w.v, OBJECT_POD), 1);   /* p3 */
	world_free(&w);
}

static void test_export_is_json_and_filters_by_node(void **state)
{
	struct world w;
	const struct ledger *l;
	struct buf b;
	json_t *j;
	json_error_t jerr;

	(void)state;
	world_init(&w);
	apply(&w, VIEW_ADDED, 1, slice("s1", "w1", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 1, slice("s2", "w2", 1, "2", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c1", "w1", "accel-0", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 2, claim("c2", "w2", "accel-1", true, "p2", NULL));
	l = build(&w, 3);
	buf_init(&b, 1 << 20);
	assert_int_equal(ledger_json(l, STR_LIT("w2"), &b), 0);
	j = json_loadb(buf_cstr(&b), buf_len(&b), JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		fail_msg("not JSON: %s\n%s", jerr.text, buf_cstr(&b));
	assert_int_equal(json_array_size(json_object_get(j, "nodes")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 0),
							       "name")), "w2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(j, "totals"), "cpu"),
							       "dra")), "4");
	json_decref(j);
	buf_reset(&b);
	assert_int_equal(ledger_table(l, STR_LIT(""), true, &b), 0);
	assert_non_null(strstr(buf_cstr(&b), "ns/c1[0] dra.example.com/w1/accel-0"));
	buf_free(&b);
	world_free(&w);
}

static void test_a_dump_gives_the_same_ledger(void **state)
{
	struct view_builder *b = NULL;
	struct view_dump_stats st;
	const struct view *v = NULL;
	struct ledger *l = NULL;
	struct policy *pol = NULL;
	char *text, err[256];
	size_t off = 0;

	(void)state;
	text = malloc(65536);
	off += (size_t)snprintf(text + off, 65536 - off, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s,",
				claim("c1", "w1", "accel-0", true, "p1", NULL));
	off += (size_t)snprintf(text + off, 65536 - off, "%s,", slice("s1", "w1", 1, "2", NULL));
	off += (size_t)snprintf(text + off, 65536 - off, "%s,", pod("p1", "w1", "1", "c1", "\"cpu\":\"2\"", NULL));
	off += (size_t)snprintf(text + off, 65536 - off, "%s,{\"apiVersion\":\"v1\",\"kind\":\"Service\","
				"\"metadata\":{\"name\":\"x\"}}],\"metadata\":{\"resourceVersion\":\"\"}}",
				node("w1", "8"));
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(view_dump_load(b, text, off, 100 * S, &st, err, sizeof(err)), 0);
	assert_int_equal(st.objects[OBJECT_RESOURCE_CLAIM], 1);
	assert_int_equal(st.objects[OBJECT_NODE], 1);
	assert_int_equal(st.other, 1);
	assert_int_equal(view_builder_publish(b, &v), 0);
	assert_false(view_stale(v, 100 * S, 300 * S));
	assert_int_equal(policy_builtin(&pol), 0);
	assert_int_equal(ledger_build(v, pol, 100 * S, 1 << 24, &l), 0);
	/* the claim came before its slice in the dump: charged all the same */
	assert_int_equal(amount(l, "w1", "cpu")->dra, 2000);
	assert_int_equal(amount(l, "w1", "cpu")->status, 2000);
	assert_int_equal(view_pool_get(v, STR_LIT("dra.example.com"), STR_LIT("w1"))->restarted_ns, 0);
	ledger_free(l);
	policy_free(pol);
	view_builder_release(b, v);
	view_builder_free(b);
	free(text);
}


/* --- the incremental ledger against a fresh build ------------------------------------- */

/* A small xorshift: seeded, so a failure replays. */
static uint32_t rnd(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return (uint32_t)(*st >> 11);
}

#define R_NODES 4
#define R_PODS 10
#define R_CLAIMS 10

/* Claim cN: node-local on node wK, or multi-node reserved for Pods (a
 * wrong UID now and then: a namesake), allocated a random set of wK's
 * devices (socket-0 with consumed capacity, or without any). */
static char *rnd_claim(uint64_t *st, unsigned idx)
{
	static char buf[8192];
	static const char *const devs[] = { "accel-0", "accel-1", "socket-0" };
	char results[2048] = "", reserved[2048] = "", nodes[16];
	size_t off = 0, roff = 0;
	unsigned k = rnd(st) % R_NODES, mask = 1 + rnd(st) % 7, i, npods = rnd(st) % 3;
	bool local = rnd(st) % 3 != 0;

	snprintf(nodes, sizeof(nodes), "w%u", k);
	for (i = 0; i < 3; i++) {
		unsigned c = rnd(st) % 4;

		if (!(mask & (1u << i)))
			continue;
		off += (size_t)snprintf(results + off, sizeof(results) - off,
					"%s{\"request\":\"r\",\"driver\":\"dra.example.com\",\"pool\":\"%s\",\"device\":\"%s\"%s}",
					off ? "," : "", nodes, devs[i],
					i == 2 && c ? (c == 1 ? ",\"consumedCapacity\":{\"dra.example.com/cpu\":\"3\"}"
						       : ",\"consumedCapacity\":{\"dra.example.com/cpu\":\"1500m\"}") : "");
	}
	for (i = 0; i < npods; i++) {
		unsigned p = rnd(st) % R_PODS;

		roff += (size_t)snprintf(reserved + roff, sizeof(reserved) - roff,
					 "%s{\"resource\":\"pods\",\"name\":\"p%u\",\"uid\":\"00000000-0000-4000-8000-%012u\"}",
					 i ? "," : "", p, rnd(st) % 8 ? p : p + 50);
	}
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c%u\","
		 "\"namespace\":\"ns\",\"uid\":\"11111111-0000-4000-8000-%012u\",\"resourceVersion\":\"%u\"},"
		 "\"spec\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":[%s]},\"nodeSelector\":"
		 "{\"nodeSelectorTerms\":[{%s%s%s}]}},\"reservedFor\":[%s]}}",
		 idx, idx, rnd(st), results,
		 local ? "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"" :
			 "\"matchExpressions\":[{\"key\":\"rack\",\"operator\":\"In\",\"values\":[\"r1",
		 local ? nodes : "", "\"]}]", reserved);
	return buf;
}

/* One random change to the world at t. */
static void rnd_change(struct world *w, uint64_t *st, int64_t t, bool *have_node, bool *have_slice,
		       bool *have_pod, bool *have_claim)
{
	static const char *const cpus[] = { "100m", "1", "250m", "3" };
	static const char *const statuses[] = { NULL, "\"cpu\":\"2\"", "\"cpu\":\"4\",\"memory\":\"8Gi\"",
						"\"cpu\":\"1500m\"" };
	unsigned what = rnd(st) % 10, i;
	char name[16], nd[16];

	switch (what) {
	case 0:   /* a Node comes, changes or goes */
		i = rnd(st) % R_NODES;
		snprintf(name, sizeof(name), "w%u", i);
		if (have_node[i] && rnd(st) % 3 == 0) {
			apply(w, VIEW_DELETED, t, node(name, "8"));
			have_node[i] = false;
		} else {
			apply(w, have_node[i] ? VIEW_MODIFIED : VIEW_ADDED, t, node(name, cpus[rnd(st) % 4]));
			have_node[i] = true;
		}
		break;
	case 1:   /* a slice comes, changes its mapping or generation, or goes; a
		   * node's pool has one or two (the same devices at two generations) */
		i = rnd(st) % R_NODES;
		snprintf(name, sizeof(name), rnd(st) % 2 ? "s%u" : "s%ub", i);
		snprintf(nd, sizeof(nd), "w%u", i);
		if (have_slice[i] && rnd(st) % 4 == 0) {
			apply(w, VIEW_DELETED, t, slice(name, nd, 1, "2", NULL));
			have_slice[i] = false;
		} else {
			apply(w, have_slice[i] ? VIEW_MODIFIED : VIEW_ADDED, t,
			      slice(name, nd, 1 + (int)(rnd(st) % 2), rnd(st) % 2 ? "2" : "1", NULL));
			have_slice[i] = true;
		}
		break;
	case 2: case 3: case 4:   /* a Pod binds, moves, changes its statuses or goes */
		i = rnd(st) % R_PODS;
		snprintf(name, sizeof(name), "p%u", i);
		if (have_pod[i] && rnd(st) % 4 == 0) {
			apply(w, VIEW_DELETED, t, pod(name, NULL, "1", NULL, NULL, NULL));
			have_pod[i] = false;
		} else {
			char claim_name[16];
			unsigned c = rnd(st) % R_CLAIMS, n = rnd(st) % (R_NODES + 1);
			const char *status = statuses[rnd(st) % 4];

			snprintf(claim_name, sizeof(claim_name), "c%u", c);
			snprintf(nd, sizeof(nd), "w%u", n);
			apply(w, have_pod[i] ? VIEW_MODIFIED : VIEW_ADDED, t,
			      pod(name, n == R_NODES ? NULL : nd, cpus[rnd(st) % 4], rnd(st) % 4 ? claim_name : NULL,
				  rnd(st) % 4 ? status : NULL, rnd(st) % 5 == 0 ? "4" : NULL));
			have_pod[i] = true;
		}
		break;
	default:   /* a claim is allocated, reserved, deallocated or goes */
		i = rnd(st) % R_CLAIMS;
		snprintf(name, sizeof(name), "c%u", i);
		if (have_claim[i] && rnd(st) % 5 == 0) {
			apply(w, VIEW_DELETED, t, unallocated(name));
			have_claim[i] = false;
		} else if (have_claim[i] && rnd(st) % 5 == 0) {
			char *u = unallocated(name);
			char *uid = strstr(u, "0000000000");

			/* the same UID as when allocated */
			snprintf(uid, 13, "%012u", i);
			uid[12] = '"';
			apply(w, VIEW_MODIFIED, t, u);
		} else {
			apply(w, have_claim[i] ? VIEW_MODIFIED : VIEW_ADDED, t, rnd_claim(st, i));
			have_claim[i] = true;
		}
		break;
	}
}

static void json_of(const struct ledger *l, const char *node_name, struct buf *b)
{
	buf_reset(b);
	assert_int_equal(ledger_json(l, str_from_cstr(node_name), b), 0);
}

/* Each node account a walk of the kept ledger visits is the fresh
 * build's account of that node. */
struct walk_check {
	const struct ledger *fresh;
	uint32_t visited;
};

static int check_walked_node(void *ctx, const struct ledger_node *n)
{
	struct walk_check *c = ctx;
	const struct ledger_node *f = ledger_node(c->fresh, n->name);
	uint32_t k;

	assert_non_null(f);
	assert_int_equal(n->overcommitted, f->overcommitted);
	assert_int_equal(n->diverging, f->diverging);
	assert_int_equal(n->undercounted, f->undercounted);
	assert_int_equal(n->nresources, f->nresources);
	for (k = 0; k < n->nresources; k++) {
		assert_true(str_eq(n->resources[k].resource, f->resources[k].resource));
		assert_int_equal(n->resources[k].allocatable, f->resources[k].allocatable);
		assert_int_equal(n->resources[k].total, f->resources[k].total);
	}
	c->visited++;
	return 0;
}

static void test_an_incremental_ledger_equals_a_fresh_build_after_every_change(void **state)
{
	static const char doc[] = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
				  "numa: {attributes: [dra.example.com/numaNode]}\n";
	unsigned seed, step, k;
	uint64_t updates = 0, recounted = 0;

	(void)state;
	for (seed = 1; seed <= 6; seed++) {
		struct world w;
		struct ledger_inc *li = NULL;
		struct policy_error perr;
		const struct view *held = NULL;
		bool have_node[R_NODES] = { 0 }, have_slice[R_NODES] = { 0 };
		bool have_pod[R_PODS] = { 0 }, have_claim[R_CLAIMS] = { 0 };
		uint64_t st = 0x9e3779b97f4a7c15ULL * seed;
		struct buf a, b;
		struct ledger_inc_stats ist;

		world_init(&w);
		policy_free(w.pol);
		assert_int_equal(policy_load(doc, sizeof(doc) - 1, &w.pol, &perr), 0);
		assert_int_equal(ledger_inc_new(w.pol, 0, &li), 0);
		buf_init(&a, 1 << 22);
		buf_init(&b, 1 << 22);
		for (step = 0; step < 250; step++) {
			const struct view *v = NULL;
			struct ledger *fresh = NULL, *inc = NULL, *one = NULL;
			struct walk_check wc;
			unsigned n = 1 + rnd(&st) % (step % 25 == 24 ? 12 : 3);
			char nd[16];

			for (k = 0; k < n; k++)
				rnd_change(&w, &st, 10 + step, have_node, have_slice, have_pod, have_claim);
			view_builder_touch_all(w.b, (10 + step) * S);
			assert_int_equal(view_builder_publish(w.b, &v), 0);
			assert_int_equal(ledger_inc_update(li, v, (10 + step) * S), 0);
			/* the ledger's old snapshot goes, as the served one does */
			if (held)
				view_builder_release(w.b, held);
			held = v;
			view_builder_collect(w.b);
			assert_int_equal(ledger_build(v, w.pol, (10 + step) * S, 64 << 20, &fresh), 0);
			assert_int_equal(ledger_inc_ledger(li, true, &inc), 0);
			json_of(fresh, "", &a);
			json_of(inc, "", &b);
			if (strcmp(buf_cstr(&a), buf_cstr(&b)) != 0)
				fail_msg("seed %u step %u: the incremental ledger differs\nfresh %s\ninc   %s", seed, step,
					 buf_cstr(&a), buf_cstr(&b));
			buf_reset(&a);
			buf_reset(&b);
			assert_int_equal(ledger_table(fresh, STR_LIT(""), true, &a), 0);
			assert_int_equal(ledger_table(inc, STR_LIT(""), true, &b), 0);
			assert_string_equal(buf_cstr(&a), buf_cstr(&b));
			/* one node's ledger: its account, the whole ledger's summary */
			snprintf(nd, sizeof(nd), "w%u", rnd(&st) % R_NODES);
			assert_int_equal(ledger_inc_node(li, str_from_cstr(nd), &one), 0);
			json_of(fresh, nd, &a);
			json_of(one, nd, &b);
			if (strcmp(buf_cstr(&a), buf_cstr(&b)) != 0)
				fail_msg("seed %u step %u: node %s differs\nfresh %s\ninc   %s", seed, step, nd,
					 buf_cstr(&a), buf_cstr(&b));
			/* the walk: every node account once, as built */
			wc = (struct walk_check){ .fresh = fresh };
			assert_int_equal(ledger_inc_each_node(li, check_walked_node, &wc), 0);
			assert_int_equal(wc.visited, fresh->nnodes);
			ledger_free(one);
			ledger_free(inc);
			ledger_free(fresh);
		}
		ledger_inc_stats(li, &ist);
		assert_int_equal(ist.whole, 1);           /* built whole once, then kept */
		updates += ist.updates;
		recounted += ist.last_nodes;
		buf_free(&a);
		buf_free(&b);
		ledger_inc_free(li);
		view_builder_release(w.b, held);
		world_free(&w);
	}
	assert_true(updates >= 6 * 200);
	(void)recounted;
}

static void test_an_update_recounts_only_the_nodes_a_change_touches(void **state)
{
	struct world w;
	struct ledger_inc *li = NULL;
	struct ledger_inc_stats ist;
	const struct view *v1 = NULL, *v2 = NULL;
	struct ledger *one = NULL;
	char name[16], nd[16];
	unsigned i;

	(void)state;
	world_init(&w);
	for (i = 0; i < 50; i++) {
		snprintf(nd, sizeof(nd), "n%02u", i);
		snprintf(name, sizeof(name), "s%02u", i);
		apply(&w, VIEW_ADDED, 1, node(nd, "16"));
		apply(&w, VIEW_ADDED, 1, slice(name, nd, 1, "2", NULL));
	}
	assert_int_equal(view_builder_publish(w.b, &v1), 0);
	assert_int_equal(ledger_inc_new(w.pol, 0, &li), 0);
	/* nothing to walk before the first update */
	assert_int_equal(ledger_inc_each_node(li, check_walked_node, NULL), -EAGAIN);
	assert_int_equal(ledger_inc_update(li, v1, 2 * S), 0);
	ledger_inc_stats(li, &ist);
	assert_int_equal(ist.last_nodes, 50);
	/* a claim and its Pod on one node: that node alone is built again */
	apply(&w, VIEW_ADDED, 3, claim("c1", "n07", "accel-0", true, "p1", NULL));
	apply(&w, VIEW_ADDED, 3, pod("p1", "n07", "1", "c1", "\"cpu\":\"2\",\"memory\":\"8Gi\"", NULL));
	assert_int_equal(view_builder_publish(w.b, &v2), 0);
	assert_int_equal(ledger_inc_update(li, v2, 4 * S), 0);
	ledger_inc_stats(li, &ist);
	assert_int_equal(ist.last_nodes, 1);
	assert_int_equal(ist.last_claims, 1);
	assert_int_equal(ist.whole, 1);
	view_builder_release(w.b, v1);
	assert_int_equal(ledger_inc_node(li, STR_LIT("n07"), &one), 0);
	assert_int_equal(one->nnodes, 1);
	assert_int_equal(one->all_nodes, 50);
	assert_int_equal(one->nodes[0].nentries, 1);
	assert_int_equal(ledger_node_amount(&one->nodes[0], STR_LIT("cpu"))->dra, 2000);
	assert_int_equal(one->claims, 1);
	ledger_free(one);
	ledger_inc_free(li);
	view_builder_release(w.b, v2);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_claim_counts_once_however_many_pods_reserve_it),
		cmocka_unit_test(test_numa_zones_split_a_node_and_add_up_to_it),
		cmocka_unit_test(test_capacity_mode_charges_consumed_times_multiplier),
		cmocka_unit_test(test_a_multi_node_claim_is_charged_on_each_node_of_a_reserving_pod),
		cmocka_unit_test(test_a_charge_stays_at_its_mapping_version),
		cmocka_unit_test(test_a_claim_seen_before_its_slice_is_charged_when_the_slice_comes),
		cmocka_unit_test(test_deallocation_removes_entries_and_holds),
		cmocka_unit_test(test_pod_level_requests_hold_the_claims_amounts),
		cmocka_unit_test(test_overcommit_and_divergence_are_flagged),
		cmocka_unit_test(test_a_claim_no_status_names_is_omitted_or_unbound_not_unbalanced),
		cmocka_unit_test(test_the_total_rounds_once_per_pod),
		cmocka_unit_test(test_finished_and_unbound_pods_leave_the_accounts),
		cmocka_unit_test(test_export_is_json_and_filters_by_node),
		cmocka_unit_test(test_a_dump_gives_the_same_ledger),
		cmocka_unit_test(test_an_incremental_ledger_equals_a_fresh_build_after_every_change),
		cmocka_unit_test(test_an_update_recounts_only_the_nodes_a_change_touches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
