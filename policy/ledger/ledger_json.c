/* ledger_json.c - the ledger as JSON (GET /debug/ledger, dra-guard ledger
 * --output json) and as a table (dra-guard ledger). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ledger.h"
#include "timefmt.h"

static int jstr(struct buf *b, struct str s)
{
	return buf_add_json_str(b, s.ptr ? s.ptr : "", s.len);
}

static int jqty(struct buf *b, const struct quantity *q)
{
	char t[QUANTITY_STR_MAX];

	quantity_format(q, t);
	return buf_printf(b, "\"%s\"", t);
}

static int junits(struct buf *b, struct str resource, int64_t u)
{
	char t[96];

	ledger_format_units(resource, u, t);
	return buf_printf(b, "\"%s\"", t);
}

static int jtime(struct buf *b, int64_t ns)
{
	char t[TIMEFMT_MAX];

	if (ns <= 0)
		return buf_add_cstr(b, "null");
	timefmt_rfc3339(ns, t);
	return buf_printf(b, "\"%s\"", t);
}

static int entry_json(struct buf *b, const struct ledger_entry *e)
{
	const struct view_claim *c = e->claim;
	const struct view_result *r = &c->results[e->result];
	const struct view_charge *ch = &c->charges[e->result];
	char uid[64];
	uint32_t i;
	int rc;

	view_uid_format(&c->uid, uid, sizeof(uid));
	rc = buf_add_cstr(b, "{\"claim\":");
	if (rc == 0)
		rc = buf_printf(b, "\"%.*s/%s\",\"uid\":\"%s\",\"result\":%u,\"request\":",
				STR_FMT(view_atom_str(c->namespace)), c->name, uid, e->result);
	if (rc == 0)
		rc = jstr(b, view_atom_str(r->request));
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"driver\":");
	if (rc == 0)
		rc = jstr(b, view_atom_str(r->driver));
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"pool\":");
	if (rc == 0)
		rc = jstr(b, view_atom_str(r->pool));
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"device\":");
	if (rc == 0)
		rc = jstr(b, view_atom_str(r->device));
	if (rc == 0 && r->share_id) {
		rc = buf_add_cstr(b, ",\"shareID\":");
		if (rc == 0)
			rc = jstr(b, view_atom_str(r->share_id));
	}
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"zone\":");
	if (rc == 0)
		rc = jstr(b, e->zone);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"amounts\":{");
	for (i = 0; rc == 0 && i < ch->namounts; i++) {
		rc = buf_add_cstr(b, i ? "," : "");
		if (rc == 0)
			rc = jstr(b, view_atom_str(ch->amounts[i].name));
		if (rc == 0)
			rc = buf_add_char(b, ':');
		if (rc == 0)
			rc = jqty(b, view_atom_qty(ch->amounts[i].value));
	}
	if (rc == 0)
		rc = buf_add_cstr(b, "},\"mappingVersion\":{\"slice\":");
	if (rc == 0)
		rc = jstr(b, view_atom_str(ch->slice));
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"resourceVersion\":");
	if (rc == 0)
		rc = jstr(b, view_atom_str(ch->slice_rv));
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"fingerprint\":");
	if (rc == 0)
		rc = ch->fingerprint ? jstr(b, view_atom_str(ch->fingerprint)) : buf_add_cstr(b, "null");
	if (rc == 0)
		rc = buf_printf(b, "},\"current\":%s,\"scheduler\":\"%s\",\"firstObserved\":", e->current ? "true" : "false",
				ledger_counted_name(e->counted));
	if (rc == 0)
		rc = jtime(b, c->allocated_ns);
	return rc ? rc : buf_add_char(b, '}');
}

static int amount_json(struct buf *b, const struct ledger_amount *a)
{
	uint32_t i;
	int rc = jstr(b, a->resource);

	if (rc == 0)
		rc = buf_add_cstr(b, ":{\"allocatable\":");
	if (rc == 0)
		rc = a->has_allocatable ? junits(b, a->resource, a->allocatable) : buf_add_cstr(b, "null");
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"pods\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->pods);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"dra\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->dra);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"numa\":{");
	for (i = 0; rc == 0 && i < a->nzones; i++) {
		rc = buf_add_cstr(b, i ? "," : "");
		if (rc == 0)
			rc = jstr(b, a->zones[i].zone);
		if (rc == 0)
			rc = buf_add_char(b, ':');
		if (rc == 0)
			rc = junits(b, a->resource, a->zones[i].amount);
	}
	if (rc == 0)
		rc = buf_add_cstr(b, "},\"podStatuses\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->status);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"omitted\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->omitted);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"unbound\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->unbound);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"inPodLevelRequests\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->covered);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"total\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->total);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"schedulerCounts\":");
	if (rc == 0)
		rc = junits(b, a->resource, a->scheduled);
	if (rc == 0)
		rc = buf_printf(b, ",\"balanced\":%s,\"overcommitted\":%s}",
				a->dra - a->omitted - a->unbound == a->status ? "true" : "false",
				a->has_allocatable && a->total > a->allocatable ? "true" : "false");
	return rc;
}

static int node_json(struct buf *b, const struct ledger *l, const struct ledger_node *n)
{
	uint32_t i;
	int rc = buf_add_cstr(b, "{\"name\":");

	if (rc == 0)
		rc = jstr(b, n->name);
	if (rc == 0)
		rc = buf_printf(b, ",\"node\":%s,\"pods\":%u,\"overcommitted\":%s,\"balanced\":%s,"
				"\"undercounted\":%s,\"resources\":{",
				n->has_node ? "true" : "false", n->npods, n->overcommitted ? "true" : "false",
				n->diverging ? "false" : "true", n->undercounted ? "true" : "false");
	for (i = 0; rc == 0 && i < n->nresources; i++) {
		rc = buf_add_cstr(b, i ? "," : "");
		if (rc == 0)
			rc = amount_json(b, &n->resources[i]);
	}
	if (rc == 0)
		rc = buf_add_cstr(b, "},\"entries\":[");
	for (i = 0; rc == 0 && i < n->nentries; i++) {
		rc = buf_add_cstr(b, i ? "," : "");
		if (rc == 0)
			rc = entry_json(b, &l->entries[n->first_entry + i]);
	}
	return rc ? rc : buf_add_cstr(b, "]}");
}

int ledger_json(const struct ledger *l, struct str node, struct buf *out)
{
	uint32_t i;
	bool first = true;
	int rc = buf_add_cstr(out, "{\"at\":");

	if (rc == 0)
		rc = jtime(out, l->now_ns);
	if (rc == 0)
		rc = buf_printf(out, ",\"viewSeq\":%" PRIu64 ",\"summary\":{\"nodes\":%u,\"claims\":%u,\"entries\":%u,"
				"\"pendingClaims\":%u,\"unchargeableResults\":%u,\"unreservedClaims\":%u,"
				"\"claimsAtOldMapping\":%u,\"overcommittedNodes\":%u,\"unbalancedNodes\":%u,"
				"\"undercountedNodes\":%u,\"lastMappingChange\":", l->view_seq,
				l->all_nodes ? l->all_nodes : l->nnodes, l->claims,
				l->all_nodes ? l->all_entries : l->nentries, l->pending, l->uncharged, l->unreserved, l->old_mapping, l->overcommitted,
				l->diverging, l->undercounted);
	if (rc == 0)
		rc = jtime(out, l->mapping_changed_ns);
	if (rc == 0)
		rc = buf_add_cstr(out, "},\"totals\":{");
	for (i = 0; rc == 0 && i < l->ntotals; i++) {
		const struct ledger_totals *t = &l->totals[i];

		rc = buf_add_cstr(out, i ? "," : "");
		if (rc == 0)
			rc = jstr(out, t->resource);
		if (rc == 0)
			rc = buf_add_cstr(out, ":{\"allocatable\":");
		if (rc == 0)
			rc = junits(out, t->resource, t->allocatable);
		if (rc == 0)
			rc = buf_add_cstr(out, ",\"pods\":");
		if (rc == 0)
			rc = junits(out, t->resource, t->pods);
		if (rc == 0)
			rc = buf_add_cstr(out, ",\"dra\":");
		if (rc == 0)
			rc = junits(out, t->resource, t->dra);
		if (rc == 0)
			rc = buf_add_cstr(out, ",\"total\":");
		if (rc == 0)
			rc = junits(out, t->resource, t->total);
		if (rc == 0)
			rc = buf_add_char(out, '}');
	}
	if (rc == 0)
		rc = buf_add_cstr(out, "},\"nodes\":[");
	for (i = 0; rc == 0 && i < l->nnodes; i++) {
		if (node.len && !str_eq(node, l->nodes[i].name))
			continue;
		rc = buf_add_cstr(out, first ? "" : ",");
		first = false;
		if (rc == 0)
			rc = node_json(out, l, &l->nodes[i]);
	}
	return rc ? rc : buf_add_cstr(out, "]}\n");
}

/* --- the table -------------------------------------------------------------------- */

static int zones_text(const struct ledger_amount *a, char *buf, size_t n)
{
	size_t off = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < a->nzones && off < n; i++) {
		char t[96];

		ledger_format_units(a->resource, a->zones[i].amount, t);
		off += (size_t)snprintf(buf + off, n - off, "%s%.*s=%s", i ? "," : "", STR_FMT(a->zones[i].zone), t);
	}
	if (a->nzones == 0)
		snprintf(buf, n, "-");
	return 0;
}

int ledger_table(const struct ledger *l, struct str node, bool entries, struct buf *out)
{
	uint32_t i, j;
	int rc = buf_printf(out, "%-24s %-18s %12s %12s %12s %-22s %12s %12s  %s\n", "NODE", "RESOURCE", "ALLOCATABLE",
			    "PODS", "DRA", "NUMA", "POD-STATUS", "TOTAL", "STATE");

	for (i = 0; rc == 0 && i < l->nnodes; i++) {
		const struct ledger_node *n = &l->nodes[i];

		if (node.len && !str_eq(node, n->name))
			continue;
		for (j = 0; rc == 0 && j < n->nresources; j++) {
			const struct ledger_amount *a = &n->resources[j];
			char al[96] = "-", p[96], d[96], s[96], t[96], z[256];
			bool over = a->has_allocatable && a->total > a->allocatable;

			if (a->has_allocatable)
				ledger_format_units(a->resource, a->allocatable, al);
			ledger_format_units(a->resource, a->pods, p);
			ledger_format_units(a->resource, a->dra, d);
			ledger_format_units(a->resource, a->status, s);
			ledger_format_units(a->resource, a->total, t);
			zones_text(a, z, sizeof(z));
			rc = buf_printf(out, "%-24.*s %-18.*s %12s %12s %12s %-22s %12s %12s  %s%s%s%s\n",
					STR_FMT(n->name), STR_FMT(a->resource), al, p, d, z, s, t,
					over ? "OVERCOMMITTED" : "ok",
					a->dra - a->omitted - a->unbound != a->status ? " UNBALANCED" : "",
					a->omitted > 0 ? " UNDERCOUNTED (a claim no Pod status names)" : "",
					a->covered ? " (some DRA inside Pod-level requests)" : "");
		}
		for (j = 0; rc == 0 && entries && j < n->nentries; j++) {
			const struct ledger_entry *e = &l->entries[n->first_entry + j];
			const struct view_claim *c = e->claim;
			const struct view_result *r = &c->results[e->result];
			const struct view_charge *ch = &c->charges[e->result];
			char amounts[512] = "";
			size_t off = 0;
			uint32_t k;

			for (k = 0; k < ch->namounts && off < sizeof(amounts); k++) {
				char q[QUANTITY_STR_MAX];

				quantity_format(view_atom_qty(ch->amounts[k].value), q);
				off += (size_t)snprintf(amounts + off, sizeof(amounts) - off, "%s%.*s=%s", k ? "," : "",
							STR_FMT(view_atom_str(ch->amounts[k].name)), q);
			}
			rc = buf_printf(out, "  %.*s/%s[%u] %.*s/%.*s/%.*s zone=%.*s %s %s%s\n",
					STR_FMT(view_atom_str(c->namespace)), c->name, e->result,
					STR_FMT(view_atom_str(r->driver)), STR_FMT(view_atom_str(r->pool)),
					STR_FMT(view_atom_str(r->device)), STR_FMT(e->zone), amounts,
					e->current ? "" : "(charged at an older mapping)",
					e->counted == LEDGER_OMITTED ? " (no Pod status names it: the scheduler does not count it)"
					: e->counted == LEDGER_UNBOUND ? " (no Pod on the node reserves it)" : "");
		}
	}
	if (rc == 0)
		rc = buf_printf(out, "%u nodes, %u claims charged (%u entries), %u waiting for their device, "
				"%u at an older mapping, %u overcommitted, %u unbalanced, %u undercounted\n", l->nnodes,
				l->claims, l->nentries, l->pending, l->old_mapping, l->overcommitted, l->diverging,
				l->undercounted);
	return rc;
}
