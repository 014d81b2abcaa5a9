/* bench_ledger.c - the ledger kept up to date against a whole build, on a
 * view of NODES nodes (one slice of 8 mapped devices each), CLAIMS
 * node-local claims (one device each), a Pod per claim reserving it with
 * the status the scheduler writes, and CLAIMS/2 Pods without claims.
 *
 *   bench_ledger [NODES [CLAIMS [ROUNDS]]]     defaults 5000 100000 3
 *
 * Each round, for 1, 100 and 10,000 claim changes (a claim allocated
 * another device of its node: a MODIFIED event the view recharges), the
 * changes are applied and published, then the kept ledger is updated
 * (ledger_inc_update()) and a whole ledger is built from the same
 * snapshot (ledger_build()), one after the other in the same run, so the
 * ratio holds however loaded the machine is. Times are the thread's CPU
 * time (the work is single-threaded; wall time on a shared machine
 * measures the neighbours). Also: one node's /debug/ledger (its JSON from
 * the kept ledger against a build's), and the gauges' lag (update plus
 * the export the metrics read) against the old rule's (a whole build at
 * most every LEDGER_WATCH_DUTY = 10 build times). Every round checks the
 * kept ledger's summary and totals against the build's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "buf.h"
#include "clock.h"
#include "ledger.h"
#include "policy.h"
#include "view.h"
#include "view_dump.h"

static double cpu_s(void)
{
	return (double)clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e9;
}

static void slice(struct buf *b, unsigned n)
{
	unsigned d;

	buf_printf(b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"
		   "\"worker-%05u-gpu\",\"resourceVersion\":\"10\"},\"spec\":{\"driver\":\"gpu.example.com\","
		   "\"nodeName\":\"worker-%05u\",\"pool\":{\"name\":\"worker-%05u\",\"generation\":1,"
		   "\"resourceSliceCount\":1},\"devices\":[", n, n, n);
	for (d = 0; d < 8; d++)
		buf_printf(b, "%s{\"name\":\"gpu-%u\",\"attributes\":{\"gpu.example.com/numaNode\":{\"int\":%u}},"
			   "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"4\"},"
			   "\"memory\":{\"allocationMultiplier\":\"16Gi\"}}}", d ? "," : "", d, d / 4);
	buf_add_cstr(b, "]}}");
}

static void node(struct buf *b, unsigned n)
{
	buf_printf(b, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"worker-%05u\"},"
		   "\"status\":{\"allocatable\":{\"cpu\":\"128\",\"memory\":\"512Gi\",\"pods\":\"250\"}}}", n);
}

static void claim(struct buf *b, unsigned i, unsigned nodes, unsigned dev, unsigned rv)
{
	unsigned n = i % nodes;

	buf_printf(b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
		   "\"claim-%06u\",\"namespace\":\"ns-%03u\",\"uid\":\"6f1c1a55-0d2b-4c3e-9a7e-%012u\","
		   "\"resourceVersion\":\"%u\"},\"spec\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":"
		   "[{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"worker-%05u\",\"device\":"
		   "\"gpu-%u\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
		   "\"metadata.name\",\"operator\":\"In\",\"values\":[\"worker-%05u\"]}]}]}},\"reservedFor\":"
		   "[{\"resource\":\"pods\",\"name\":\"p-%06u\",\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-%012u\"}]}}",
		   i, i / 1000, i, rv, n, dev % 8, n, i, i);
}

static void pod(struct buf *b, unsigned i, unsigned nodes, bool with_claim)
{
	buf_printf(b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%06u\",\"namespace\":"
		   "\"ns-%03u\",\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-%012u\"},\"spec\":{\"nodeName\":\"worker-%05u\",",
		   with_claim ? "p" : "q", i, i / 1000, with_claim ? i : 900000000u + i, i % nodes);
	if (with_claim)
		buf_printf(b, "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"claim-%06u\"}],", i);
	buf_add_cstr(b, "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
		     "\"memory\":\"128Mi\"}}}]},\"status\":{\"phase\":\"Running\"");
	if (with_claim)
		buf_printf(b, ",\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"claim-%06u\","
			   "\"containers\":[\"c\"],\"resources\":{\"cpu\":\"4\",\"memory\":\"16Gi\"}}]", i);
	buf_add_cstr(b, "}}");
}

struct bench {
	struct view_builder *b;
	struct policy *pol;
	struct arena *scratch;
	const struct view *v;
	unsigned nodes, claims;
	unsigned *dev;              /* each claim's device now */
	unsigned rv;
	struct buf text;
};

static int publish(struct bench *bn, const struct view **out)
{
	view_builder_touch_all(bn->b, 100LL * 1000000000);
	return view_builder_publish(bn->b, out);
}

/* k claims, spread over the nodes, allocated another device. */
static int change(struct bench *bn, unsigned k, unsigned round)
{
	char err[256];
	unsigned j;

	for (j = 0; j < k; j++) {
		unsigned i = (unsigned)(((unsigned long long)(j + round * 7919u) * 2654435761u) % bn->claims);
		int rc;

		bn->dev[i]++;
		buf_reset(&bn->text);
		claim(&bn->text, i, bn->nodes, bn->dev[i], ++bn->rv);
		rc = view_builder_apply_json(bn->b, VIEW_MODIFIED, buf_cstr(&bn->text), buf_len(&bn->text), bn->scratch,
					     101LL * 1000000000, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "apply: %d %s\n", rc, err);
			return -1;
		}
	}
	return 0;
}

static bool same_summary(const struct ledger *a, const struct ledger *b)
{
	uint32_t i;

	if ((a->all_nodes ? a->all_nodes : a->nnodes) != (b->all_nodes ? b->all_nodes : b->nnodes) || a->claims != b->claims || a->pending != b->pending || a->ntotals != b->ntotals ||
	    a->overcommitted != b->overcommitted || a->diverging != b->diverging || a->undercounted != b->undercounted ||
	    (a->all_nodes ? a->all_entries : a->nentries) != (b->all_nodes ? b->all_entries : b->nentries))
		return false;
	for (i = 0; i < a->ntotals; i++)
		if (!str_eq(a->totals[i].resource, b->totals[i].resource) || a->totals[i].dra != b->totals[i].dra ||
		    a->totals[i].total != b->totals[i].total || a->totals[i].pods != b->totals[i].pods)
			return false;
	return true;
}

static int load(struct bench *bn)
{
	struct view_dump_stats st;
	struct buf all;
	char err[256];
	unsigned i;
	int rc;

	buf_init(&all, (size_t)4 << 30);
	buf_add_cstr(&all, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
	for (i = 0; i < bn->nodes; i++) {
		node(&all, i);
		buf_add_char(&all, ',');
		slice(&all, i);
		buf_add_char(&all, ',');
	}
	for (i = 0; i < bn->claims; i++) {
		claim(&all, i, bn->nodes, bn->dev[i], 100);
		buf_add_char(&all, ',');
		pod(&all, i, bn->nodes, true);
		buf_add_char(&all, ',');
	}
	for (i = 0; i < bn->claims / 2; i++) {
		pod(&all, i, bn->nodes, false);
		buf_add_cstr(&all, i + 1 < bn->claims / 2 ? "," : "");
	}
	buf_add_cstr(&all, "],\"metadata\":{\"resourceVersion\":\"\"}}");
	rc = view_dump_load(bn->b, buf_cstr(&all), buf_len(&all), 100LL * 1000000000, &st, err, sizeof(err));
	buf_free(&all);
	if (rc || st.refused) {
		fprintf(stderr, "load: %d, %llu refused: %s %s\n", rc, (unsigned long long)st.refused, st.first_error, err);
		return -1;
	}
	return publish(bn, &bn->v);
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 1, 100, 10000 };
	struct bench bn = { 0 };
	struct ledger_inc *li = NULL;
	struct ledger *full = NULL, *l = NULL;
	struct ledger_inc_stats ist;
	unsigned rounds, r, k;
	double t0, first_inc, first_full, upd[3] = { 0 }, bld[3] = { 0 }, exp_s[3] = { 0 }, node_inc = 0, node_full = 0;
	uint32_t nodes_redone[3] = { 0 };
	struct buf js;
	int rc = 1;

	bn.nodes = argc > 1 ? (unsigned)atoi(argv[1]) : 5000;
	bn.claims = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
	rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 3;
	if (bn.nodes == 0 || bn.claims == 0 || rounds == 0)
		return 2;
	buf_init(&bn.text, 1 << 20);
	buf_init(&js, (size_t)1 << 30);
	bn.dev = calloc(bn.claims, sizeof(*bn.dev));
	if (!bn.dev || view_builder_new(NULL, &bn.b) != 0 || arena_new(64 << 20, &bn.scratch) != 0)
		return 1;
	{
		static const char doc[] = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
					  "numa: {attributes: [gpu.example.com/numaNode]}\n";
		struct policy_error perr;

		if (policy_load(doc, sizeof(doc) - 1, &bn.pol, &perr) != 0)
			return 1;
	}
	if (load(&bn) != 0)
		goto out;
	printf("ledger view nodes=%u claims=%u pods=%u\n", bn.nodes, bn.claims, bn.claims + bn.claims / 2);

	/* the first: built whole both ways */
	if (ledger_inc_new(bn.pol, 0, &li) != 0)
		goto out;
	t0 = cpu_s();
	if (ledger_inc_update(li, bn.v, 100LL * 1000000000) != 0)
		goto out;
	first_inc = cpu_s() - t0;
	t0 = cpu_s();
	if (ledger_build(bn.v, bn.pol, 100LL * 1000000000, (size_t)1 << 30, &full) != 0)
		goto out;
	first_full = cpu_s() - t0;
	ledger_inc_stats(li, &ist);
	printf("ledger whole  kept_s=%.3f build_s=%.3f entries=%u kept_bytes=%zu\n", first_inc, first_full, full->nentries,
	       ist.bytes);
	ledger_free(full);
	full = NULL;

	for (r = 0; r < rounds; r++)
		for (k = 0; k < 3; k++) {
			const struct view *nv = NULL;
			double u, e, bl, ni, nf;
			char name[32];

			if (change(&bn, sizes[k], r * 3 + k + 1) != 0 || publish(&bn, &nv) != 0)
				goto out;
			t0 = cpu_s();
			if (ledger_inc_update(li, nv, 101LL * 1000000000) != 0)
				goto out;
			u = cpu_s() - t0;
			view_builder_release(bn.b, bn.v);
			bn.v = nv;
			view_builder_collect(bn.b);
			/* what a scrape reads: every node's account */
			t0 = cpu_s();
			if (ledger_inc_ledger(li, false, &l) != 0)
				goto out;
			e = cpu_s() - t0;
			ledger_free(l);
			l = NULL;
			t0 = cpu_s();
			if (ledger_build(nv, bn.pol, 101LL * 1000000000, (size_t)1 << 30, &full) != 0)
				goto out;
			bl = cpu_s() - t0;
			/* one node's export, both ways */
			snprintf(name, sizeof(name), "worker-%05u", (r * 131 + k) % bn.nodes);
			t0 = cpu_s();
			if (ledger_inc_node(li, str_from_cstr(name), &l) != 0 || ledger_json(l, str_from_cstr(name), &js) != 0)
				goto out;
			ni = cpu_s() - t0;
			buf_reset(&js);
			t0 = cpu_s();
			if (ledger_json(full, str_from_cstr(name), &js) != 0)
				goto out;
			nf = cpu_s() - t0 + bl;   /* a build, then the node's text */
			buf_reset(&js);
			if (!same_summary(l, full)) {
				fprintf(stderr, "round %u, %u changes: the kept ledger differs from a build\n", r, sizes[k]);
				goto out;
			}
			ledger_free(l);
			l = NULL;
			ledger_free(full);
			full = NULL;
			ledger_inc_stats(li, &ist);
			nodes_redone[k] = ist.last_nodes;
			upd[k] += u;
			exp_s[k] += e;
			bld[k] += bl;
			node_inc += ni;
			node_full += nf;
		}
	for (k = 0; k < 3; k++)
		printf("ledger changes=%u update_s=%.6f build_s=%.3f build_over_update=%.0f nodes_recounted=%u "
		       "gauge_lag_s=%.6f gauge_lag_before_s=%.1f\n",
		       sizes[k], upd[k] / rounds, bld[k] / rounds, upd[k] > 0 ? bld[k] / upd[k] : 0.0, nodes_redone[k],
		       (upd[k] + exp_s[k]) / rounds, 10.0 * bld[k] / rounds);
	printf("ledger node_export_s=%.6f build_and_node_export_s=%.3f ratio=%.0f\n", node_inc / (rounds * 3),
	       node_full / (rounds * 3), node_inc > 0 ? node_full / node_inc : 0.0);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "bench_ledger: failed\n");
	ledger_free(l);
	ledger_free(full);
	ledger_inc_free(li);
	if (bn.v)
		view_builder_release(bn.b, bn.v);
	view_builder_free(bn.b);
	arena_free(bn.scratch);
	policy_free(bn.pol);
	free(bn.dev);
	buf_free(&bn.text);
	buf_free(&js);
	return rc;
}
