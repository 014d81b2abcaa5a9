/* view_record_pod.c - the records of Pods and Nodes (what the ledger reads
 * of them, and nothing else: 150,000 Pods must stay small), and of the two
 * derived indexes, pool names and device holds.
 *
 * A Pod keeps its node, UID, whether it carries the freeze's gate, its requests as the scheduler counts them
 * (pod_requests.h: computed once here, not kept as containers), the claims
 * it uses and its node-allocatable claim statuses. Names and quantities
 * that repeat (namespaces, nodes, resource names, request amounts) are
 * atoms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "pod_requests.h"
#include "view_impl.h"

/* --- Pods ------------------------------------------------------------------ */

#define MAX_POD_CLAIMS 256

/* The Pod record's counts are narrow bit-fields (view.h). */
_Static_assert(POD_REQUESTS_MAX_RESOURCES < 64 && MAX_POD_CLAIMS < 512, "a Pod's counts must fit view_pod's");

/* Whether a Pod names a claim by resourceClaimName (made by a user, not
 * from a template). */
static bool names_claim(const struct pod *p)
{
	uint32_t i;

	for (i = 0; i < p->nresource_claims; i++)
		if (p->resource_claims[i].claim_name.len)
			return true;
	return false;
}

bool view_pod_kept(const struct k8s_object *o)
{
	const struct pod *p = &o->u.pod;

	if (str_eq_cstr(p->phase, "Succeeded") || str_eq_cstr(p->phase, "Failed"))
		return false;
	/* Unbound Pods only while they carry the freeze's gate: the replica
	 * that releases them finds them here, and claim.freeze.create asks
	 * whether a claim's Pod is one of them. Unbound Pods that name a claim
	 * of their own by resourceClaimName too: when a freeze refuses that
	 * claim's creation, they are the ones its Event must reach. */
	return p->node_name.len > 0 || p->nclaim_statuses > 0 || p->has_freeze_gate || names_claim(p);
}

static int find_name(const struct str *names, uint32_t n, struct str s)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (str_eq(names[i], s))
			return (int)i;
	return -1;
}

int view_record_pod(struct view_builder *b, const struct k8s_object *o, struct view_pod **out,
		    char *err, size_t errn)
{
	const struct pod *p = &o->u.pod;
	struct filler f = { &b->atoms, 0 };
	struct pod_requests req;
	struct str *names;
	uint32_t nnames = 0, i, j, nstat;
	struct view_pod *v;
	struct view_named_qty *rq;
	struct view_pod_status *st;
	struct bump bp;
	const char *name;
	size_t size, texts;
	bool texts_ok;
	int rc;

	*out = NULL;
	if ((rc = pod_requests_compute(p, b->scratch, &req, err, errn)) != 0) {
		if (rc == -E2BIG)
			snprintf(err, errn, "more containers or resources than the view reads (%d, %d)",
				 POD_REQUESTS_MAX_CONTAINERS, POD_REQUESTS_MAX_RESOURCES);
		else if (rc == -ERANGE)
			snprintf(err, errn, "the Pod's requests add up past what a quantity holds");
		return rc;
	}
	if (p->nresource_claims + p->nclaim_statuses > MAX_POD_CLAIMS) {
		snprintf(err, errn, "more than %d resource claims", MAX_POD_CLAIMS);
		return -E2BIG;
	}
	names = arena_alloc(b->scratch, (p->nresource_claims + p->nclaim_statuses + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < p->nresource_claims; i++) {
		struct str c = model_pod_claim_name(p, &p->resource_claims[i]);

		if (c.len && find_name(names, nnames, c) < 0)
			names[nnames++] = c;
	}
	nstat = p->nclaim_statuses;
	for (i = 0; i < nstat; i++) {
		const struct claim_resource_status *cs = &p->claim_statuses[i];

		for (j = 0; j < cs->nresources; j++)
			if (cs->resources[j].value.err || !cs->resources[j].value.present) {
				snprintf(err, errn, "status.nodeAllocatableResourceClaimStatuses[%u].resources: "
					 "a value is not a quantity", i);
				return -EINVAL;
			}
		if (find_name(names, nnames, cs->claim_name) < 0)
			names[nnames++] = cs->claim_name;
	}
	/* Requests and statuses are blobs: most Pods of a workload ask the
	 * same, and the scheduler writes them the same amounts. */
	/* The fixed part and the claims' offsets, the names (unaligned
	 * text), then the UID when it is held as text. */
	texts = o->meta.name.len + 1;
	for (i = 0; i < nnames; i++) {
		if (texts > UINT16_MAX) {
			snprintf(err, errn, "resource claim names longer than a Pod's record holds");
			return -E2BIG;
		}
		texts += names[i].len + 1;
	}
	size = rounded(offsetof(struct view_pod, claims) + (size_t)nnames * sizeof(v->claims[0]) + texts) +
	       view_uid_size(o->meta.uid);
	rq = req.n ? arena_calloc(b->scratch, req.n, sizeof(*rq)) : NULL;
	st = nstat ? arena_calloc(b->scratch, nstat, sizeof(*st)) : NULL;
	if ((req.n && !rq) || (nstat && !st))
		return -ENOMEM;
	if (size > UINT32_MAX)
		return -E2BIG;
	if (!(v = view_rec_alloc(b, size)))
		return -ENOMEM;
	bp.p = (char *)v;
	bp.end = (char *)v + size;
	bp.p += offsetof(struct view_pod, claims) + (size_t)nnames * sizeof(v->claims[0]);
	v->h.size = (uint32_t)size;
	v->gated = p->has_freeze_gate;
	v->nclaims = nnames & 511;
	name = take_chars(&bp, o->meta.name);
	texts_ok = name != NULL;
	for (i = 0; i < nnames; i++) {
		const char *t = take_chars(&bp, names[i]);

		texts_ok = texts_ok && t;
		v->claims[i] = t && name ? (uint16_t)(t - name) : 0;
	}
	bump_align(&bp);
	view_uid_fill(&bp, o->meta.uid, &v->uid);
	for (i = 0; i < nstat; i++) {
		st[i].claim = (uint16_t)find_name(names, nnames, p->claim_statuses[i].claim_name);
	}
	if (!texts_ok || bp.p > bp.end) {
		view_rec_free_mem(b, v, size);
		return -EINVAL;  /* the size above is wrong: a bug, refused */
	}
	v->namespace = SR(&f, o->meta.namespace);
	v->node_name = SR_opt(&f, p->node_name);
	for (i = 0; i < req.n; i++) {
		rq[i].name = S(&f, req.items[i].name);
		rq[i].value = Q(&f, &req.items[i].value);
		if (req.items[i].pod_level && i < 32)
			v->pod_level |= 1u << i;
	}
	v->requests = BR(&f, ATOM_NQ, rq, (size_t)req.n * sizeof(*rq));
	v->nrequests = v->requests.id ? req.n & 63 : 0;
	for (i = 0; i < nstat; i++) {
		const struct claim_resource_status *cs = &p->claim_statuses[i];
		struct view_named_qty *q = NULL;

		if (cs->nresources && !f.rc && !(q = arena_calloc(b->scratch, cs->nresources, sizeof(*q))))
			f.rc = -ENOMEM;
		for (j = 0; q && j < cs->nresources; j++) {
			q[j].name = S(&f, cs->resources[j].name);
			q[j].value = Qf(&f, &cs->resources[j].value);
		}
		st[i].resources = B(&f, ATOM_NQ, q, (size_t)cs->nresources * sizeof(*q));
		st[i].nresources = st[i].resources ? (uint16_t)cs->nresources : 0;
	}
	v->statuses = BR(&f, ATOM_PODST, st, (size_t)nstat * sizeof(*st));
	v->nstatuses = v->statuses.id ? nstat & 511 : 0;
	if (f.rc) {
		b->record_bytes += v->h.size;
		view_record_free(b, OBJECT_POD, v);
		if (f.rc == -E2BIG)
			snprintf(err, errn, "more distinct names and quantities than the view holds (%u)",
				 b->lim.max_atoms);
		return f.rc;
	}
	*out = v;
	return 0;
}

/* --- Nodes ----------------------------------------------------------------- */

int view_record_node(struct view_builder *b, const struct k8s_object *o, struct view_node **out,
		     char *err, size_t errn)
{
	const struct node *nd = &o->u.node;
	struct filler f = { &b->atoms, 0 };
	struct view_node *v;
	struct view_named_qty *al;
	struct bump bp;
	uint32_t i, n = 0, k = 0;
	size_t size;

	*out = NULL;
	for (i = 0; i < nd->nallocatable; i++) {
		if (names_node_resource(nd->allocatable[i].name, NULL) == NODE_RESOURCE_INVALID)
			continue;
		if (!nd->allocatable[i].value.present || nd->allocatable[i].value.err) {
			snprintf(err, errn, "status.allocatable[\"%.*s\"]: not a quantity",
				 STR_FMT(nd->allocatable[i].name));
			return -EINVAL;
		}
		n++;
	}
	/* The allocatable list is a blob: nodes of a pool's shape share it. */
	size = rounded(sizeof(*v) + o->meta.name.len + 1);
	al = n ? arena_calloc(b->scratch, n, sizeof(*al)) : NULL;
	if ((n && !al) || !(v = view_rec_alloc(b, size)))
		return -ENOMEM;
	bp.p = (char *)v;
	bp.end = (char *)v + size;
	bp.p += sizeof(*v);
	v->h.size = (uint32_t)size;
	if (!take_chars(&bp, o->meta.name) || bp.p > bp.end) {
		view_rec_free_mem(b, v, size);
		return -EINVAL;
	}
	for (i = 0; i < nd->nallocatable; i++) {
		if (names_node_resource(nd->allocatable[i].name, NULL) == NODE_RESOURCE_INVALID)
			continue;
		al[k].name = S(&f, nd->allocatable[i].name);
		al[k].value = Qf(&f, &nd->allocatable[i].value);
		k++;
	}
	v->allocatable = BR(&f, ATOM_NQ, al, (size_t)k * sizeof(*al));
	v->nallocatable = v->allocatable.id ? k : 0;
	if (f.rc) {
		b->record_bytes += v->h.size;
		view_record_free(b, OBJECT_NODE, v);
		return f.rc;
	}
	*out = v;
	return 0;
}

/* --- pool names and holds --------------------------------------------------- */

int view_record_pname(struct view_builder *b, const struct view_atom *name,
		      const struct view_atom *const *drivers, uint32_t n, struct view_pname **out)
{
	struct view_pname *p;
	const struct view_atom **d;
	struct bump bp;
	size_t size = rounded(sizeof(*p)) + rounded((size_t)n * sizeof(*d));
	uint32_t i;

	*out = NULL;
	if (!(p = view_rec_alloc(b, size)))
		return -ENOMEM;
	bp.p = (char *)p;
	bp.end = (char *)p + size;
	take(&bp, sizeof(*p));
	p->h.size = (uint32_t)size;
	d = n ? take(&bp, n * sizeof(*d)) : NULL;
	p->name = atom_get(name);
	for (i = 0; i < n; i++)
		d[i] = atom_get(drivers[i]);
	p->drivers = d;
	p->ndrivers = n;
	*out = p;
	return 0;
}

int view_record_hold(struct view_builder *b, struct view_aref driver, struct view_aref pool,
		     struct view_aref device, const struct view_holder *holders, uint32_t n,
		     struct view_hold **out)
{
	struct view_hold *h;
	size_t size = rounded(sizeof(*h) + (size_t)n * sizeof(h->holders[0]));

	*out = NULL;
	if (size > UINT32_MAX)
		return -E2BIG;
	if (!(h = view_rec_alloc(b, size)))
		return -ENOMEM;
	h->h.size = (uint32_t)size;
	if (n)
		memcpy(h->holders, holders, n * sizeof(h->holders[0]));
	h->nholders = n;
	h->driver = aref_of(atom_get(atom_at(&b->atoms, driver)));
	h->pool = aref_of(atom_get(atom_at(&b->atoms, pool)));
	h->device = aref_of(atom_get(atom_at(&b->atoms, device)));
	*out = h;
	return 0;
}

void view_record_put_more(struct view_builder *b, unsigned table, void *p)
{
	struct atom_set *as = &b->atoms;
	uint32_t i;

	switch (table) {
	case OBJECT_POD: {
		const struct view_pod *v = p;

		atom_put_ref(as, v->namespace);
		atom_put_ref(as, v->node_name);
		atom_put_ref(as, v->requests);
		atom_put_ref(as, v->statuses);
		break;
	}
	case OBJECT_NODE: {
		const struct view_node *v = p;

		atom_put_ref(as, v->allocatable);
		break;
	}
	case VIEW_INDEX_PNAMES: {
		const struct view_pname *v = p;

		atom_put(as, v->name);
		for (i = 0; v->drivers && i < v->ndrivers; i++)
			atom_put(as, v->drivers[i]);
		break;
	}
	case VIEW_INDEX_HOLDS: {
		const struct view_hold *v = p;

		atom_put_ref(as, v->driver);
		atom_put_ref(as, v->pool);
		atom_put_ref(as, v->device);
		break;
	}
	default:                    /* slices, claims and pools: view_record_free() */
		break;
	}
}
