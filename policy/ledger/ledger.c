/* ledger.c - node accounts and entries from a view snapshot (ledger.h). */
#include "ledger.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hmap.h"
#include "ledger_impl.h"
#include "names.h"

/* --- units ---------------------------------------------------------------------- */

/* The scheduler's unit of a resource: framework.Resource keeps cpu in
 * millicores (MilliValue) and everything else in whole units (Value), each
 * rounded up. */
static int unit_scale(struct str resource)
{
	return str_eq_cstr(resource, "cpu") ? -3 : 0;
}

static int64_t units(struct str resource, const struct quantity *q)
{
	int64_t v = 0;

	if (quantity_scaled_ceil(q, unit_scale(resource), &v) != 0)
		v = INT64_MAX;   /* beyond any node: shown as such, never wrapped */
	return v;
}

void ledger_format_units(struct str resource, int64_t u, char buf[static 96])
{
	struct quantity q;
	enum node_resource k = names_node_resource(resource, NULL);

	quantity_from_scaled(u, unit_scale(resource), k == NODE_RESOURCE_CPU ? QUANTITY_DECIMAL_SI
						       : QUANTITY_BINARY_SI, &q);
	quantity_format(&q, buf);
}

/* --- building ------------------------------------------------------------------- */

/* A claim named by a Pod status on a node, and the status seen first. */
struct status_key {
	uint32_t node;
	const struct view_atom *ns;
	const char *claim;
	const struct view_pod_status *st;
};

/* A Pod bound to a node, with its sort key resolved (a comparator has no
 * snapshot to read the namespace's atom through). */
struct pod_ref {
	struct str ns;
	const char *name;
	const struct view_pod *p;
};

struct build {
	const struct view *v;
	const struct policy *pol;
	struct str only;                     /* one node's account (ledger_build_node()), else all */
	struct ledger *l;
	struct arena *a;
	/* Nodes by name (values index l->nodes), and the claims already counted
	 * in a node's Pod statuses (values index skeys). The maps' slots are
	 * malloc'd (build_fini() frees them); each entry names a record in the
	 * arena, whose cap bounds them. */
	struct hmap nodes;
	uint32_t nalloc;
	struct hmap status;
	struct status_key *skeys;
	uint32_t nskeys, skeys_alloc;
	/* entries */
	uint32_t ealloc;
	/* the Pods bound to a node, for the totals */
	struct pod_ref *pods;
	uint32_t npods, palloc;
	int rc;
};

static bool node_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct build *b = ctx;

	return str_eq(b->l->nodes[val].name, *(const struct str *)key);
}

/* The node named name (made when new). */
static struct ledger_node *node_of(struct build *b, struct str name)
{
	struct ledger *l = b->l;
	uint32_t h = hmap_hash(name.ptr, name.len), at;

	if (b->rc)
		return NULL;
	if (hmap_find(&b->nodes, h, &name, &at) == 0)
		return &l->nodes[at];
	if (l->nnodes == b->nalloc) {
		uint32_t n = b->nalloc ? b->nalloc * 2 : 64;
		struct ledger_node *g = arena_grow(b->a, l->nodes, b->nalloc * sizeof(*g), n * sizeof(*g));

		if (!g) {
			b->rc = arena_error(b->a);
			return NULL;
		}
		l->nodes = g;
		b->nalloc = n;
	}
	memset(&l->nodes[l->nnodes], 0, sizeof(l->nodes[0]));
	l->nodes[l->nnodes].name = name;
	if ((b->rc = hmap_put(&b->nodes, h, &name, l->nnodes)) != 0)
		return NULL;
	return &l->nodes[l->nnodes++];
}

/* The account of resource on node n (made when new). Arrays grow by
 * doubling from 4: their capacity follows from the count. */
static struct ledger_amount *amount_of(struct build *b, struct ledger_node *n, struct str resource)
{
	struct ledger_amount *a;
	uint32_t i;

	if (!n)
		return NULL;
	for (i = 0; i < n->nresources; i++)
		if (str_eq(n->resources[i].resource, resource))
			return &n->resources[i];
	if (n->nresources >= LEDGER_MAX_RESOURCES) {
		b->rc = -E2BIG;
		return NULL;
	}
	if (n->nresources == 0 || (n->nresources >= 4 && (n->nresources & (n->nresources - 1)) == 0)) {
		uint32_t cap = n->nresources ? n->nresources * 2 : 4;
		struct ledger_amount *g = arena_grow(b->a, n->resources, n->nresources * sizeof(*g),
						     cap * sizeof(*g));

		if (!g) {
			b->rc = arena_error(b->a);
			return NULL;
		}
		n->resources = g;
	}
	a = &n->resources[n->nresources++];
	memset(a, 0, sizeof(*a));
	a->resource = resource;
	return a;
}

static int add_zone(struct build *b, struct ledger_amount *a, struct str zone, int64_t u)
{
	uint32_t i;

	for (i = 0; i < a->nzones; i++)
		if (str_eq(a->zones[i].zone, zone)) {
			a->zones[i].amount += u;
			return 0;
		}
	if (a->nzones >= LEDGER_MAX_ZONES)
		return b->rc = -E2BIG;
	if (a->nzones == 0 || (a->nzones >= 2 && (a->nzones & (a->nzones - 1)) == 0)) {
		uint32_t cap = a->nzones ? a->nzones * 2 : 2;
		struct ledger_zone *g = arena_grow(b->a, a->zones, a->nzones * sizeof(*g), cap * sizeof(*g));

		if (!g)
			return b->rc = arena_error(b->a);
		a->zones = g;
	}
	a->zones[a->nzones++] = (struct ledger_zone){ zone, u };
	return 0;
}

/* --- Nodes and Pods ---------------------------------------------------------------- */

static int add_node(struct build *b, const struct view_node *vn)
{
	struct ledger_node *n = node_of(b, str_from_cstr(view_node_name(vn)));
	const struct view_named_qty *al = view_node_allocatable(b->v, vn);
	uint32_t i;

	if (!n)
		return b->rc;
	n->has_node = true;
	for (i = 0; i < vn->nallocatable; i++) {
		struct str r = view_atom_str(al[i].name);
		struct ledger_amount *a = amount_of(b, n, r);

		if (!a)
			return b->rc;
		a->has_allocatable = true;
		a->allocatable = units(r, view_atom_qty(al[i].value));
	}
	return 0;
}

/* Namespaces are interned atoms: one namespace is one pointer. */
static uint32_t status_hash(const struct status_key *k)
{
	uint32_t h = hmap_hash_add(HMAP_HASH_INIT, &k->node, sizeof(k->node));

	h = hmap_hash_add(h, &k->ns, sizeof(k->ns));
	return hmap_hash_finish(hmap_hash_add_cstr(h, k->claim));
}

static bool status_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct status_key *e = &((const struct build *)ctx)->skeys[val], *k = key;

	return e->node == k->node && e->ns == k->ns && strcmp(e->claim, k->claim) == 0;
}

/* True the first time (node, ns, claim) is seen among Pod statuses; *first
 * gets the status seen first. */
static int status_seen(struct build *b, uint32_t node, const struct view_atom *ns, const char *claim,
		       const struct view_pod_status *st, const struct view_pod_status **first)
{
	struct status_key k = { node, ns, claim, st };
	uint32_t h = status_hash(&k), at;

	*first = NULL;
	if (hmap_find(&b->status, h, &k, &at) == 0) {
		*first = b->skeys[at].st;
		return 0;
	}
	if (b->nskeys == b->skeys_alloc) {
		uint32_t n = b->skeys_alloc ? b->skeys_alloc * 2 : 64;
		struct status_key *g = arena_grow(b->a, b->skeys, b->skeys_alloc * sizeof(*g), n * sizeof(*g));

		if (!g)
			return b->rc = -ENOMEM;
		b->skeys = g;
		b->skeys_alloc = n;
	}
	b->skeys[b->nskeys] = k;
	if ((b->rc = hmap_put(&b->status, h, &k, b->nskeys)) != 0)
		return b->rc;
	b->nskeys++;
	return 1;
}

static bool same_status(const struct view_pod_status *a, const struct view_pod_status *b)
{
	uint32_t i, j;

	if (a->nresources != b->nresources)
		return false;
	for (i = 0; i < a->nresources; i++) {
		for (j = 0; j < b->nresources; j++)
			if (a->resources[i].name == b->resources[j].name)
				break;
		if (j == b->nresources ||
		    quantity_cmp(view_atom_qty(a->resources[i].value), view_atom_qty(b->resources[j].value)))
			return false;
	}
	return true;
}

/* Collect a Pod bound to a node; they are counted in one order (by
 * namespace and name) whatever the view's, so that which of two Pods
 * sharing a claim carries it is the same in every build of the same
 * view, whole or one node at a time. */
static int collect_pod(struct build *b, const struct view_pod *p)
{
	if (!p->node_name.id)
		return 0;   /* not on a node yet: no account holds it */
	if (b->npods == b->palloc) {
		uint32_t cap = b->palloc ? b->palloc * 2 : 256;
		struct pod_ref *g = arena_grow(b->a, b->pods, b->palloc * sizeof(*g), cap * sizeof(*g));

		if (!g)
			return b->rc = arena_error(b->a);
		b->pods = g;
		b->palloc = cap;
	}
	b->pods[b->npods++] = (struct pod_ref){ view_str(b->v, p->namespace), view_pod_name(p), p };
	return 0;
}

static int cmp_pod(const void *x, const void *y)
{
	const struct pod_ref *a = x, *b = y;
	int c = str_cmp(a->ns, b->ns);

	return c ? c : strcmp(a->name, b->name);
}

static int add_pod(struct build *b, const struct view_pod *p)
{
	struct ledger_node *n = node_of(b, view_str(b->v, p->node_name));
	const struct view_named_qty *rq = view_pod_requests(b->v, p);
	const struct view_pod_status *sts = view_pod_statuses(b->v, p);
	uint32_t i, j, idx;

	if (!n)
		return b->rc;
	idx = (uint32_t)(n - b->l->nodes);
	n->npods++;
	for (i = 0; i < p->nrequests; i++) {
		struct str r = view_atom_str(rq[i].name);
		struct ledger_amount *a = amount_of(b, n, r);

		if (!a)
			return b->rc;
		a->pods += units(r, view_atom_qty(rq[i].value));
	}
	for (i = 0; i < p->nstatuses; i++) {
		const struct view_pod_status *st = &sts[i];
		const struct view_pod_status *first;
		int rc = status_seen(b, idx, view_atom_at(b->v, p->namespace), view_pod_claim(p, st->claim), st, &first);

		n = &b->l->nodes[idx];
		if (rc < 0)
			return rc;
		if (rc == 0) {
			/* Shared by two Pods on the node: the claim counts once;
			 * statuses that disagree are a divergence. */
			if (first && !same_status(first, st))
				n->diverging = true;
			continue;
		}
		for (j = 0; j < st->nresources; j++) {
			struct str r = view_atom_str(st->resources[j].name);
			struct ledger_amount *a = amount_of(b, n, r);

			if (!a)
				return b->rc;
			a->status += units(r, view_atom_qty(st->resources[j].value));
		}
	}
	return 0;
}

static int add_pods(struct build *b)
{
	uint32_t i;

	if (b->npods > 1)
		qsort(b->pods, b->npods, sizeof(*b->pods), cmp_pod);
	for (i = 0; i < b->npods && b->rc == 0; i++) {
		int rc = add_pod(b, b->pods[i].p);

		if (rc != 0 && b->rc == 0)
			b->rc = rc;
	}
	return b->rc;
}

/* --- claims --------------------------------------------------------------------- */

const char *ledger_counted_name(enum ledger_counted c)
{
	switch (c) {
	case LEDGER_COUNTED: return "counted";
	case LEDGER_OMITTED: return "omitted";
	case LEDGER_UNBOUND: return "unbound";
	}
	return "counted";
}

/* True when a Pod status on node idx names (ns, claim). */
static bool status_names(const struct build *b, uint32_t node, const struct view_atom *ns, const char *claim)
{
	struct status_key k = { node, ns, claim, NULL };
	uint32_t at;

	return hmap_find(&b->status, status_hash(&k), &k, &at) == 0;
}

/* Whether a Pod bound to node reserves c (the Pod the reservation names,
 * not a namesake). */
static bool reserved_on(const struct build *b, const struct view_claim *c, struct str node)
{
	uint32_t i;

	for (i = 0; i < c->nreserved; i++) {
		const struct view_consumer *cons = &view_claim_reserved_for(c)[i];
		const struct view_group_resource *gr = view_consumer_gr(b->v, cons);
		const struct view_pod *p;
		char uid[64];

		if (!str_eq_cstr(view_atom_str(gr->resource), "pods") || view_atom_str(gr->api_group).len)
			continue;
		p = view_pod_get(b->v, view_str(b->v, c->namespace), str_from_cstr(view_consumer_name(c, cons)));
		if (!p || !p->node_name.id || !str_eq(view_str(b->v, p->node_name), node))
			continue;
		view_uid_format(&cons->uid, uid, sizeof(uid));
		if (view_uid_eq(&p->uid, str_from_cstr(uid)))
			return true;
	}
	return false;
}

static enum ledger_counted counted_on(const struct build *b, const struct view_claim *c, const struct ledger_node *n)
{
	if (status_names(b, (uint32_t)(n - b->l->nodes), view_atom_at(b->v, c->namespace), view_claim_name(c)))
		return LEDGER_COUNTED;
	return reserved_on(b, c, n->name) ? LEDGER_OMITTED : LEDGER_UNBOUND;
}

struct str ledger_device_zone(const struct view *v, const struct policy *pol, struct str driver,
			      const struct view_device *d,
			      char *buf, size_t n)
{
	const struct driver_policy *dp = pol ? policy_driver(pol, driver) : NULL;
	struct str names[1 + 64];
	uint32_t nn = 0, i, j;

	if (!d)
		return STR_LIT(LEDGER_ZONE_UNKNOWN);
	if (dp && dp->numa_attribute.len)
		names[nn++] = dp->numa_attribute;
	for (i = 0; pol && i < pol->numa_attributes.n && nn < 65; i++)
		names[nn++] = pol->numa_attributes.items[i];
	for (i = 0; i < nn; i++) {
		for (j = 0; j < d->nattrs; j++) {
			const struct view_attr *at = &view_device_attrs(v, d)[j];
			struct str an = view_atom_str(at->name);

			/* "numaNode" in the driver's domain is spelled either way. */
			if (!str_eq(an, names[i]) &&
			    !(an.len + driver.len + 1 == names[i].len && memcmp(names[i].ptr, driver.ptr, driver.len) == 0 &&
			      names[i].ptr[driver.len] == '/' && memcmp(names[i].ptr + driver.len + 1, an.ptr, an.len) == 0))
				continue;
			switch (at->type) {
			case VIEW_ATTR_INT:
				snprintf(buf, n, "%" PRId64, at->i);
				return str_from_cstr(buf);
			case VIEW_ATTR_BOOL:
				return str_from_cstr(at->b ? "true" : "false");
			case VIEW_ATTR_STRING:
			case VIEW_ATTR_VERSION:
				return view_atom_str(at->s);
			}
		}
	}
	return STR_LIT(LEDGER_ZONE_UNKNOWN);
}

/* The device of a result as the view has it now: in the pool's newest
 * generation, else in any of its slices. */
static const struct view_device *device_now(const struct view *v, const struct view_result *r)
{
	const struct view_device *d = view_device_current(v, view_str(v, r->driver), view_str(v, r->pool),
							   view_str(v, r->device), NULL);

	return d ? d : view_device_find(v, view_str(v, r->driver), view_str(v, r->pool), view_str(v, r->device), NULL);
}

/* True when the device maps the same amounts today as the claim was
 * charged. */
static bool still_current(const struct view *v, const struct view_device *d, const struct view_result *r,
			  const struct view_charge *c)
{
	struct view_amount now[64];
	enum view_charge_state st;
	int n, i;
	uint32_t j;

	if (!d)
		return false;
	n = view_device_amounts(v, d, r, now, 64, &st);
	if (n < 0 || (uint32_t)n != c->namounts || st != c->state)
		return false;
	for (i = 0; i < n; i++) {
		for (j = 0; j < c->namounts; j++)
			if (str_eq(view_atom_str(c->amounts[j].name), now[i].resource))
				break;
		if (j == c->namounts || quantity_cmp(view_atom_qty(c->amounts[j].value), &now[i].value))
			return false;
	}
	return true;
}

/* Whether a Pod on node that reserves c asks for resource at Pod level. */
static bool covered_on(const struct build *b, const struct view_claim *c, struct str node, struct str resource)
{
	uint32_t i, j;

	for (i = 0; i < c->nreserved; i++) {
		const struct view_pod *p = view_pod_get(b->v, view_str(b->v, c->namespace),
							str_from_cstr(view_consumer_name(c, &view_claim_reserved_for(c)[i])));
		const struct view_named_qty *rq;

		if (!p || !p->pod_level || !p->node_name.id || !str_eq(view_str(b->v, p->node_name), node))
			continue;
		rq = view_pod_requests(b->v, p);
		for (j = 0; j < p->nrequests && j < 32; j++)
			if ((p->pod_level & (1u << j)) && str_eq(view_atom_str(rq[j].name), resource))
				return true;
	}
	return false;
}

static int add_entry(struct build *b, const struct view_claim *c, uint32_t ri, struct str node,
		     const struct view_device *d)
{
	struct ledger *l = b->l;
	const struct view_charge *ch = &view_claim_charges(b->v, c)[ri];
	const struct view_result *r = &c->results[ri];
	struct ledger_node *n = node_of(b, node);
	struct ledger_entry *e;
	char zbuf[32];
	struct str zone;
	uint32_t i;

	if (!n)
		return b->rc;
	zone = ledger_device_zone(b->v, b->pol, view_str(b->v, r->driver), d, zbuf, sizeof(zbuf));
	if (zone.ptr == zbuf && arena_strdup(b->a, zbuf, zone.len, &zone) != 0)
		return b->rc = arena_error(b->a);
	if (l->nentries == b->ealloc) {
		uint32_t cap = b->ealloc ? b->ealloc * 2 : 256;
		struct ledger_entry *g = arena_grow(b->a, l->entries, b->ealloc * sizeof(*g), cap * sizeof(*g));

		if (!g)
			return b->rc = arena_error(b->a);
		l->entries = g;
		b->ealloc = cap;
	}
	e = &l->entries[l->nentries++];
	*e = (struct ledger_entry){ c, ri, n->name, zone, still_current(b->v, d, r, ch), counted_on(b, c, n) };
	for (i = 0; i < ch->namounts; i++) {
		struct str res = view_atom_str(ch->amounts[i].name);
		struct ledger_amount *a = amount_of(b, n, res);
		int64_t u = units(res, view_atom_qty(ch->amounts[i].value));

		if (!a || add_zone(b, a, zone, u) != 0)
			return b->rc;
		a->dra += u;
		if (e->counted == LEDGER_OMITTED)
			a->omitted += u;
		else if (e->counted == LEDGER_UNBOUND)
			a->unbound += u;
		if (covered_on(b, c, n->name, res))
			a->covered += u;
	}
	return 0;
}

uint32_t ledger_claim_nodes(const struct view *v, const struct view_claim *c, struct str *out, uint32_t max)
{
	uint32_t n = 0, i, j;

	if (c->node_local) {
		out[n++] = view_str(v, c->node_name);
		return n;
	}
	for (i = 0; i < c->nreserved && n < max; i++) {
		const struct view_consumer *cons = &view_claim_reserved_for(c)[i];
		const struct view_group_resource *gr = view_consumer_gr(v, cons);
		const struct view_pod *p;
		char uid[64];

		if (!str_eq_cstr(view_atom_str(gr->resource), "pods") || view_atom_str(gr->api_group).len)
			continue;
		p = view_pod_get(v, view_str(v, c->namespace), str_from_cstr(view_consumer_name(c, cons)));
		if (!p || !p->node_name.id)
			continue;
		view_uid_format(&cons->uid, uid, sizeof(uid));
		if (!view_uid_eq(&p->uid, str_from_cstr(uid)))
			continue;   /* a namesake, not the Pod the claim is reserved for */
		for (j = 0; j < n; j++)
			if (str_eq(out[j], view_str(v, p->node_name)))
				break;
		if (j == n)
			out[n++] = view_str(v, p->node_name);
	}
	return n;
}

static int add_claim(struct build *b, const struct view_claim *c)
{
	struct str nodes[LEDGER_CLAIM_NODES];
	const struct view_charge *charges = view_claim_charges(b->v, c);
	uint32_t nn, i, k;
	bool old = false, added = false;

	if (!c->allocated || !charges)
		return 0;
	if (c->charge_pending)
		b->l->pending++;
	for (i = 0; i < c->nresults; i++)
		if (charges[i].state == VIEW_CHARGE_NO_CONSUMED)
			b->l->uncharged++;
	nn = ledger_claim_nodes(b->v, c, nodes, LEDGER_CLAIM_NODES);
	if (nn == 0) {
		b->l->unreserved++;
		return 0;
	}
	b->l->claims++;
	for (i = 0; i < c->nresults; i++) {
		const struct view_device *d;

		if (charges[i].state != VIEW_CHARGE_OK)
			continue;
		d = device_now(b->v, &c->results[i]);
		added = false;
		for (k = 0; k < nn; k++) {
			if (b->only.ptr && !str_eq(nodes[k], b->only))
				continue;
			if (add_entry(b, c, i, nodes[k], d) != 0)
				return b->rc;
			added = true;
		}
		if (added && !b->l->entries[b->l->nentries - 1].current)
			old = true;
	}
	if (old)
		b->l->old_mapping++;
	return 0;
}

void ledger_claim_counts(const struct view *v, const struct view_claim *c, struct ledger_claim_counts *out)
{
	struct str nodes[LEDGER_CLAIM_NODES];
	const struct view_charge *charges = c ? view_claim_charges(v, c) : NULL;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	if (!c || !c->allocated || !charges)
		return;
	out->pending = c->charge_pending;
	for (i = 0; i < c->nresults; i++)
		if (charges[i].state == VIEW_CHARGE_NO_CONSUMED)
			out->uncharged++;
	if (ledger_claim_nodes(v, c, nodes, LEDGER_CLAIM_NODES) == 0) {
		out->unreserved = 1;
		return;
	}
	out->claims = 1;
	for (i = 0; i < c->nresults && !out->old_mapping; i++)
		if (charges[i].state == VIEW_CHARGE_OK &&
		    !still_current(v, device_now(v, &c->results[i]), &c->results[i], &charges[i]))
			out->old_mapping = 1;
}

/* --- finishing ---------------------------------------------------------------------- */

static int cmp_node(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_node *)x)->name, ((const struct ledger_node *)y)->name);
}

static int cmp_amount(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_amount *)x)->resource, ((const struct ledger_amount *)y)->resource);
}

static int cmp_zone(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_zone *)x)->zone, ((const struct ledger_zone *)y)->zone);
}

/* An entry's sort key, its claim's namespace resolved: the comparator has
 * no snapshot to read it through. */
struct entry_key {
	struct str node, ns;
	const char *name;
	uint32_t result;
	uint32_t at;                /* the entry's index */
};

static int cmp_entry_key(const void *x, const void *y)
{
	const struct entry_key *a = x, *b = y;
	int c = str_cmp(a->node, b->node);

	if (c == 0)
		c = str_cmp(a->ns, b->ns);
	if (c == 0)
		c = strcmp(a->name, b->name);
	if (c == 0)
		c = a->result < b->result ? -1 : a->result > b->result;
	return c;
}

/* The entries by node, then claim (namespace and name), then result. */
static int sort_entries(struct build *b)
{
	struct ledger *l = b->l;
	struct entry_key *k = malloc((size_t)l->nentries * sizeof(*k));
	struct ledger_entry *e = malloc((size_t)l->nentries * sizeof(*e));
	uint32_t i;

	if (!k || !e) {
		free(k);
		free(e);
		return b->rc = -ENOMEM;
	}
	for (i = 0; i < l->nentries; i++) {
		const struct ledger_entry *x = &l->entries[i];

		k[i] = (struct entry_key){ x->node, view_str(b->v, x->claim->namespace), view_claim_name(x->claim),
					   x->result, i };
	}
	qsort(k, l->nentries, sizeof(*k), cmp_entry_key);
	for (i = 0; i < l->nentries; i++)
		e[i] = l->entries[k[i].at];
	memcpy(l->entries, e, (size_t)l->nentries * sizeof(*e));
	free(k);
	free(e);
	return 0;
}

/* The first entry of (node, ns, claim) in the sorted entries, or nentries. */
static uint32_t entries_of(const struct view *v, const struct ledger *l, struct str node, struct str ns,
			   const char *claim)
{
	uint32_t lo = 0, hi = l->nentries;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct ledger_entry *e = &l->entries[mid];
		int c = str_cmp(e->node, node);

		if (c == 0)
			c = str_cmp(view_str(v, e->claim->namespace), ns);
		if (c == 0)
			c = strcmp(view_claim_name(e->claim), claim);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool entry_is(const struct view *v, const struct ledger_entry *e, struct str node, struct str ns,
		     const char *claim)
{
	return str_eq(e->node, node) && str_eq(view_str(v, e->claim->namespace), ns) &&
	       strcmp(view_claim_name(e->claim), claim) == 0;
}

struct pod_sum {
	uint32_t n;
	struct str name[LEDGER_MAX_RESOURCES];
	struct quantity q[LEDGER_MAX_RESOURCES];
	bool pod_level[LEDGER_MAX_RESOURCES];
};

static int pod_sum_add(struct pod_sum *s, struct str name, const struct quantity *q, bool pod_level)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (str_eq(s->name[i], name))
			return s->pod_level[i] ? 0 : quantity_add(&s->q[i], q, &s->q[i]);
	if (s->n >= LEDGER_MAX_RESOURCES)
		return -E2BIG;
	s->name[s->n] = name;
	s->q[s->n] = *q;
	s->pod_level[s->n++] = pod_level;
	return 0;
}

/* What the scheduler checks against allocatable, rounded as it rounds:
 * per Pod, its requests plus the amounts of the claims it uses charged on
 * its node (each claim once per node, with the first Pod that uses it;
 * inside a Pod-level request, not on top), summed exactly and rounded up
 * once (framework.Resource of PodRequests); a claim no Pod on the node
 * uses, rounded alone. Needs the entries sorted, the nodes not yet. */
static int pod_totals(struct build *b)
{
	struct ledger *l = b->l;
	bool *taken = arena_calloc(b->a, l->nentries ? l->nentries : 1, sizeof(*taken));
	uint32_t i, j, k, m;

	if (!taken)
		return b->rc = arena_error(b->a);
	for (i = 0; i < b->npods; i++) {
		const struct view_pod *p = b->pods[i].p;
		const struct view_named_qty *rq = view_pod_requests(b->v, p);
		const struct view_pod_status *sts = view_pod_statuses(b->v, p);
		struct str node = view_str(b->v, p->node_name), ns = b->pods[i].ns;
		struct ledger_node *n = node_of(b, node);
		struct pod_sum s, sched;

		if (!n)
			return b->rc;
		s.n = 0;
		for (j = 0; j < p->nrequests; j++)
			if (pod_sum_add(&s, view_atom_str(rq[j].name), view_atom_qty(rq[j].value),
					j < 32 && (p->pod_level & (1u << j))) != 0)
				return b->rc = -E2BIG;
		/* What the scheduler counts for the Pod: its requests and its own
		 * statuses (PodRequests with UseDRANodeAllocatableResourceClaimStatus). */
		sched = s;
		for (j = 0; j < p->nstatuses; j++)
			for (m = 0; m < sts[j].nresources; m++)
				if (pod_sum_add(&sched, view_atom_str(sts[j].resources[m].name),
						view_atom_qty(sts[j].resources[m].value), false) != 0)
					return b->rc = -ERANGE;
		for (j = 0; j < sched.n; j++) {
			struct ledger_amount *a = amount_of(b, n, sched.name[j]);

			if (!a)
				return b->rc;
			a->scheduled += units(sched.name[j], &sched.q[j]);
		}
		for (j = 0; j < p->nclaims; j++)
			for (k = entries_of(b->v, l, node, ns, view_pod_claim(p, j));
			     k < l->nentries && entry_is(b->v, &l->entries[k], node, ns, view_pod_claim(p, j)); k++) {
				const struct ledger_entry *e = &l->entries[k];
				const struct view_charge *ch = &view_claim_charges(b->v, e->claim)[e->result];

				if (taken[k])
					continue;
				taken[k] = true;
				for (m = 0; m < ch->namounts; m++)
					if (pod_sum_add(&s, view_atom_str(ch->amounts[m].name), view_atom_qty(ch->amounts[m].value),
							false) != 0)
						return b->rc = -ERANGE;
			}
		for (j = 0; j < s.n; j++) {
			struct ledger_amount *a = amount_of(b, n, s.name[j]);

			if (!a)
				return b->rc;
			a->total += units(s.name[j], &s.q[j]);
		}
	}
	for (k = 0; k < l->nentries; k++) {
		const struct ledger_entry *e = &l->entries[k];
		const struct view_charge *ch = &view_claim_charges(b->v, e->claim)[e->result];
		struct ledger_node *n;

		if (taken[k])
			continue;
		if (!(n = node_of(b, e->node)))
			return b->rc;
		for (m = 0; m < ch->namounts; m++) {
			struct str r = view_atom_str(ch->amounts[m].name);
			struct ledger_amount *a = amount_of(b, n, r);

			if (!a)
				return b->rc;
			a->total += units(r, view_atom_qty(ch->amounts[m].value));
		}
	}
	return 0;
}

static int cmp_totals(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_totals *)x)->resource, ((const struct ledger_totals *)y)->resource);
}

int ledger_add_totals(struct ledger *l, struct arena *a, const struct ledger_amount *am, int sign)
{
	uint32_t i;

	for (i = 0; i < l->ntotals; i++)
		if (str_eq(l->totals[i].resource, am->resource))
			break;
	if (i == l->ntotals) {
		struct ledger_totals *g;

		if (l->ntotals >= LEDGER_MAX_RESOURCES)
			return -E2BIG;
		/* room for every resource at once: the array never moves again */
		if (!l->totals) {
			g = arena_calloc(a, LEDGER_MAX_RESOURCES, sizeof(*g));
			if (!g)
				return arena_error(a);
			l->totals = g;
		}
		g = l->totals;
		memset(&g[i], 0, sizeof(g[i]));
		g[i].resource = am->resource;
		l->ntotals++;
	}
	if (am->has_allocatable)
		l->totals[i].allocatable += sign * am->allocatable;
	l->totals[i].pods += sign * am->pods;
	l->totals[i].dra += sign * am->dra;
	l->totals[i].total += sign * am->total;
	l->totals[i].nodes += sign;
	return 0;
}

int ledger_sum(struct ledger *l, struct arena *a)
{
	uint32_t i, j;
	int rc;

	l->ntotals = 0;
	l->totals = NULL;
	l->overcommitted = l->diverging = l->undercounted = 0;
	for (i = 0; i < l->nnodes; i++) {
		const struct ledger_node *n = &l->nodes[i];

		for (j = 0; j < n->nresources; j++)
			if ((rc = ledger_add_totals(l, a, &n->resources[j], 1)) != 0)
				return rc;
		l->overcommitted += n->overcommitted;
		l->diverging += n->diverging;
		l->undercounted += n->undercounted;
	}
	if (l->ntotals > 1)
		qsort(l->totals, l->ntotals, sizeof(*l->totals), cmp_totals);
	return 0;
}

/* Sort what the build made and set each node's flags and entries. */
static int finish(struct build *b)
{
	struct ledger *l = b->l;
	uint32_t i, j, e = 0;

	if (l->nentries > 1 && sort_entries(b) != 0)
		return b->rc;
	/* before the nodes are sorted: it finds them by the name index */
	if (pod_totals(b) != 0)
		return b->rc;
	if (l->nnodes)
		qsort(l->nodes, l->nnodes, sizeof(*l->nodes), cmp_node);
	for (i = 0; i < l->nnodes; i++) {
		struct ledger_node *n = &l->nodes[i];

		if (n->nresources)
			qsort(n->resources, n->nresources, sizeof(*n->resources), cmp_amount);
		for (j = 0; j < n->nresources; j++) {
			struct ledger_amount *a = &n->resources[j];

			if (a->nzones)
				qsort(a->zones, a->nzones, sizeof(*a->zones), cmp_zone);
			if (a->has_allocatable && a->total > a->allocatable)
				n->overcommitted = true;
			if (a->dra - a->omitted - a->unbound != a->status)
				n->diverging = true;
			if (a->omitted > 0)
				n->undercounted = true;
		}
		n->first_entry = e;
		while (e < l->nentries && str_eq(l->entries[e].node, n->name))
			e++;
		n->nentries = e - n->first_entry;
	}
	if ((b->rc = ledger_sum(l, b->a)) != 0)
		return b->rc;
	return 0;
}

/* A ledger in arena a (owned by the caller) with the build that fills it. */
static int build_init(struct build *b, const struct view *v, const struct policy *pol, int64_t now_ns,
		      struct arena *a, uint32_t nnodes)
{
	struct ledger *l = arena_calloc(a, 1, sizeof(*l));

	memset(b, 0, sizeof(*b));
	if (!l)
		return arena_error(a) ? arena_error(a) : -ENOMEM;
	l->arena = a;
	l->now_ns = now_ns;
	l->view_seq = view_seq(v);
	l->ids = view_ids(v);
	b->v = v;
	b->pol = pol;
	b->l = l;
	b->a = a;
	if (hmap_init(&b->nodes, HMAP_CAP_MAX, node_eq, b) != 0 || hmap_reserve(&b->nodes, nnodes) != 0 ||
	    hmap_init(&b->status, HMAP_CAP_MAX, status_eq, b) != 0)
		return -ENOMEM;
	return 0;
}

/* What build_init() made outside the arena; after a failed build_init()
 * too. */
static void build_fini(struct build *b)
{
	hmap_fini(&b->nodes);
	hmap_fini(&b->status);
}

static int build_rc(const struct build *b)
{
	return b->rc == -ENOMEM && arena_error(b->a) ? arena_error(b->a) : b->rc;
}

int ledger_build(const struct view *v, const struct policy *pol, int64_t now_ns, size_t cap,
		 struct ledger **out)
{
	struct build b;
	struct view_iter it;
	const struct view_node *vn;
	const struct view_pod *p;
	const struct view_claim *c;
	const struct view_slice *s;
	struct arena *a = NULL;
	int rc;

	*out = NULL;
	if ((rc = arena_new(cap, &a)) != 0)
		return rc;
	if ((rc = build_init(&b, v, pol, now_ns, a, 128)) != 0)
		goto out;
	for (vn = view_first_node(&it, v); vn && b.rc == 0; vn = view_next_node(&it))
		add_node(&b, vn);
	for (p = view_first_pod(&it, v); p && b.rc == 0; p = view_next_pod(&it))
		collect_pod(&b, p);
	if (b.rc == 0)
		add_pods(&b);
	for (c = view_first_claim(&it, v); c && b.rc == 0; c = view_next_claim(&it))
		add_claim(&b, c);
	for (s = view_first_slice(&it, v); s && b.rc == 0; s = view_next_slice(&it))
		if (s->mapping_changed_ns > b.l->mapping_changed_ns)
			b.l->mapping_changed_ns = s->mapping_changed_ns;
	if (b.rc == 0)
		finish(&b);
	if ((rc = build_rc(&b)) == 0)
		*out = b.l;
out:
	build_fini(&b);
	if (rc)
		arena_free(a);
	return rc;
}

int ledger_build_node(const struct view *v, const struct policy *pol, int64_t now_ns, struct str node,
		      const struct view_pod *const *pods, uint32_t npods, const struct view_claim *const *claims,
		      uint32_t nclaims, struct arena *a, struct ledger **out)
{
	const struct view_node *vn = view_node_get(v, node);
	struct build b;
	uint32_t i;
	int rc;

	*out = NULL;
	if ((rc = build_init(&b, v, pol, now_ns, a, 4)) != 0)
		goto out;
	b.only = node;
	if (vn)
		add_node(&b, vn);
	for (i = 0; i < npods && b.rc == 0; i++)
		if (pods[i]->node_name.id && str_eq(view_str(v, pods[i]->node_name), node))
			collect_pod(&b, pods[i]);
	if (b.rc == 0)
		add_pods(&b);
	for (i = 0; i < nclaims && b.rc == 0; i++)
		add_claim(&b, claims[i]);
	if (b.rc == 0)
		finish(&b);
	if ((rc = build_rc(&b)) == 0)
		*out = b.l;
out:
	build_fini(&b);
	return rc;
}

void ledger_free(struct ledger *l)
{
	if (l)
		arena_free(l->arena);
}

const struct ledger_node *ledger_node(const struct ledger *l, struct str name)
{
	uint32_t lo = 0, hi = l->nnodes;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = str_cmp(l->nodes[mid].name, name);

		if (c == 0)
			return &l->nodes[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct ledger_amount *ledger_node_amount(const struct ledger_node *n, struct str resource)
{
	uint32_t i;

	for (i = 0; n && i < n->nresources; i++)
		if (str_eq(n->resources[i].resource, resource))
			return &n->resources[i];
	return NULL;
}
