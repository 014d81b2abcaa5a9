/* ledger_json.c - the ledger as JSON (GET /debug/ledger, dra-guard ledger
 * --output json) and as a table (dra-guard ledger). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jw.h"
#include "ledger.h"
#include "timefmt.h"

static void jstr(struct jw *w, struct str s)
{
	jw_string(w, s.ptr ? s.ptr : "", s.len);
}

static void units(struct jw *w, struct str resource, int64_t u)
{
	char t[96];

	ledger_format_units(resource, u, t);
	jw_cstr(w, t);
}

static void kunits(struct jw *w, const char *key, struct str resource, int64_t u)
{
	jw_key(w, key);
	units(w, resource, u);
}

static void ktime(struct jw *w, const char *key, int64_t ns)
{
	char t[TIMEFMT_MAX];

	jw_key(w, key);
	if (ns <= 0) {
		jw_null(w);
		return;
	}
	timefmt_rfc3339(ns, t);
	jw_cstr(w, t);
}

/* An atom of a claim the ledger names. */
static struct str astr(const struct ledger *l, struct view_aref r)
{
	return view_atom_str(view_atom_id(l->ids, r));
}

static void entry_json(struct jw *w, const struct ledger *l, const struct ledger_entry *e)
{
	const struct view_claim *c = e->claim;
	const struct view_result *r = &c->results[e->result];
	const struct view_charge *ch = (const struct view_charge *)(const void *)view_atom_id(l->ids, c->charges)->data + e->result;
	char uid[64], claim[512];
	uint32_t i;

	view_uid_format(&c->uid, uid, sizeof(uid));
	snprintf(claim, sizeof(claim), "%.*s/%s", STR_FMT(astr(l, c->namespace)), view_claim_name(c));
	jw_object_begin(w);
	jw_kcstr(w, "claim", claim);
	jw_kcstr(w, "uid", uid);
	jw_kuint(w, "result", e->result);
	jw_key(w, "request");
	jstr(w, astr(l, r->request));
	jw_key(w, "driver");
	jstr(w, astr(l, r->driver));
	jw_key(w, "pool");
	jstr(w, astr(l, r->pool));
	jw_key(w, "device");
	jstr(w, astr(l, r->device));
	if (r->share_id.id) {
		jw_key(w, "shareID");
		jstr(w, astr(l, r->share_id));
	}
	jw_key(w, "zone");
	jstr(w, e->zone);
	jw_key(w, "amounts");
	jw_object_begin(w);
	for (i = 0; i < ch->namounts; i++) {
		char q[QUANTITY_STR_MAX];

		jw_key_str(w, view_atom_str(ch->amounts[i].name));
		quantity_format(view_atom_qty(ch->amounts[i].value), q);
		jw_cstr(w, q);
	}
	jw_object_end(w);
	jw_key(w, "mappingVersion");
	jw_object_begin(w);
	jw_key(w, "slice");
	jstr(w, view_atom_str(ch->slice));
	jw_key(w, "resourceVersion");
	jstr(w, view_atom_str(ch->slice_rv));
	jw_key(w, "fingerprint");
	if (ch->fingerprint)
		jstr(w, view_atom_str(ch->fingerprint));
	else
		jw_null(w);
	jw_object_end(w);
	jw_kbool(w, "current", e->current);
	jw_kcstr(w, "scheduler", ledger_counted_name(e->counted));
	ktime(w, "firstObserved", c->allocated_ns);
	jw_object_end(w);
}

static void amount_json(struct jw *w, const struct ledger_amount *a)
{
	uint32_t i;

	jw_key_str(w, a->resource);
	jw_object_begin(w);
	jw_key(w, "allocatable");
	if (a->has_allocatable)
		units(w, a->resource, a->allocatable);
	else
		jw_null(w);
	kunits(w, "pods", a->resource, a->pods);
	kunits(w, "dra", a->resource, a->dra);
	jw_key(w, "numa");
	jw_object_begin(w);
	for (i = 0; i < a->nzones; i++) {
		jw_key_str(w, a->zones[i].zone);
		units(w, a->resource, a->zones[i].amount);
	}
	jw_object_end(w);
	kunits(w, "podStatuses", a->resource, a->status);
	kunits(w, "omitted", a->resource, a->omitted);
	kunits(w, "unbound", a->resource, a->unbound);
	kunits(w, "inPodLevelRequests", a->resource, a->covered);
	kunits(w, "total", a->resource, a->total);
	kunits(w, "schedulerCounts", a->resource, a->scheduled);
	jw_kbool(w, "balanced", a->dra - a->omitted - a->unbound == a->status);
	jw_kbool(w, "overcommitted", a->has_allocatable && a->total > a->allocatable);
	jw_object_end(w);
}

static void node_json(struct jw *w, const struct ledger *l, const struct ledger_node *n)
{
	uint32_t i;

	jw_object_begin(w);
	jw_key(w, "name");
	jstr(w, n->name);
	jw_kbool(w, "node", n->has_node);
	jw_kuint(w, "pods", n->npods);
	jw_kbool(w, "overcommitted", n->overcommitted);
	jw_kbool(w, "balanced", !n->diverging);
	jw_kbool(w, "undercounted", n->undercounted);
	jw_key(w, "resources");
	jw_object_begin(w);
	for (i = 0; i < n->nresources; i++)
		amount_json(w, &n->resources[i]);
	jw_object_end(w);
	jw_key(w, "entries");
	jw_array_begin(w);
	for (i = 0; i < n->nentries; i++)
		entry_json(w, l, &l->entries[n->first_entry + i]);
	jw_array_end(w);
	jw_object_end(w);
}

int ledger_json(const struct ledger *l, struct str node, struct buf *out)
{
	struct jw w;
	uint32_t i;
	int rc;

	jw_init(&w, out);
	jw_object_begin(&w);
	ktime(&w, "at", l->now_ns);
	jw_kuint(&w, "viewSeq", l->view_seq);
	jw_key(&w, "summary");
	jw_object_begin(&w);
	jw_kuint(&w, "nodes", l->all_nodes ? l->all_nodes : l->nnodes);
	jw_kuint(&w, "claims", l->claims);
	jw_kuint(&w, "entries", l->all_nodes ? l->all_entries : l->nentries);
	jw_kuint(&w, "pendingClaims", l->pending);
	jw_kuint(&w, "unchargeableResults", l->uncharged);
	jw_kuint(&w, "unreservedClaims", l->unreserved);
	jw_kuint(&w, "claimsAtOldMapping", l->old_mapping);
	jw_kuint(&w, "overcommittedNodes", l->overcommitted);
	jw_kuint(&w, "unbalancedNodes", l->diverging);
	jw_kuint(&w, "undercountedNodes", l->undercounted);
	ktime(&w, "lastMappingChange", l->mapping_changed_ns);
	jw_object_end(&w);
	jw_key(&w, "totals");
	jw_object_begin(&w);
	for (i = 0; i < l->ntotals; i++) {
		const struct ledger_totals *t = &l->totals[i];

		jw_key_str(&w, t->resource);
		jw_object_begin(&w);
		kunits(&w, "allocatable", t->resource, t->allocatable);
		kunits(&w, "pods", t->resource, t->pods);
		kunits(&w, "dra", t->resource, t->dra);
		kunits(&w, "total", t->resource, t->total);
		jw_object_end(&w);
	}
	jw_object_end(&w);
	jw_key(&w, "nodes");
	jw_array_begin(&w);
	for (i = 0; i < l->nnodes; i++) {
		if (node.len && !str_eq(node, l->nodes[i].name))
			continue;
		node_json(&w, l, &l->nodes[i]);
	}
	jw_array_end(&w);
	jw_object_end(&w);
	rc = jw_finish(&w);
	return rc ? rc : buf_add_char(out, '\n');
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
			const struct view_charge *ch =
				(const struct view_charge *)(const void *)view_atom_id(l->ids, c->charges)->data + e->result;
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
					STR_FMT(astr(l, c->namespace)), view_claim_name(c), e->result,
					STR_FMT(astr(l, r->driver)), STR_FMT(astr(l, r->pool)),
					STR_FMT(astr(l, r->device)), STR_FMT(e->zone), amounts,
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
