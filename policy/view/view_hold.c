/* view_hold.c - what claims hold: the amounts an allocation result charges
 * (as the scheduler computes them), the index from a device to the claims
 * allocated it, and the claims whose charges wait for a device the view
 * has not seen yet.
 *
 * The amounts follow kube-scheduler 1.36's DynamicResources plugin
 * (buildNodeAllocatableDRAInfo in nodeallocatabledynamicresources.go): for
 * each result, the device's mappings; device-count mode adds the
 * allocationMultiplier once per allocated device; capacity mode multiplies
 * the result's consumedCapacity for the mapping's capacityKey by the
 * multiplier, exactly (a decimal product, no rounding: the scheduler
 * multiplies inf.Dec values), and a result that consumed nothing under that
 * key adds nothing for the resource, while one with no consumedCapacity at
 * all is an error the scheduler stops on. The scheduler then sums a
 * claim's results per resource (Quantity.Add, exact). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view_impl.h"

/* --- amounts ----------------------------------------------------------------- */

static const struct quantity *consumed_of(const struct view_amount *consumed, uint32_t n, struct str key)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (str_eq(consumed[i].resource, key))
			return &consumed[i].value;
	return NULL;
}

int view_mapping_amounts(struct view_atom_ids ids, const struct view_device *d, const struct view_amount *consumed,
			 uint32_t nconsumed, struct view_amount *out, uint32_t max, enum view_charge_state *state)
{
	const struct view_atom *maps = view_atom_id(ids, d->mappings);
	struct quantity one;
	uint32_t i, n = 0;
	int rc;

	*state = VIEW_CHARGE_OK;
	quantity_from_int(1, &one);
	for (i = 0; i < d->nmappings; i++) {
		const struct view_mapping *m = (const struct view_mapping *)(const void *)maps->data + i;
		const struct view_atom *mult = m->shape == MAPPING_V137 && m->capacity_key ? m->capacity_multiplier
					       : m->multiplier;
		const struct quantity *factor = mult ? view_atom_qty(mult) : &one;
		struct quantity amount;

		if (m->capacity_key && view_atom_str(m->capacity_key).len) {
			const struct quantity *c;

			if (nconsumed == 0) {
				/* "ConsumedCapacity is nil, but Capacity key is set":
				 * the scheduler cannot place the claim; nothing is
				 * charged for it. */
				*state = VIEW_CHARGE_NO_CONSUMED;
				continue;
			}
			c = consumed_of(consumed, nconsumed, view_atom_str(m->capacity_key));
			if (!c)
				continue;
			if ((rc = quantity_mul(c, factor, &amount)) != 0)
				return rc;
		} else {
			amount = *factor;
		}
		if (n >= max)
			return -E2BIG;
		out[n].resource = view_atom_str(m->resource);
		out[n].value = amount;
		n++;
	}
	/* By resource name: what the scheduler writes is a map. */
	for (i = 1; i < n; i++) {
		struct view_amount t = out[i];
		uint32_t j = i;

		for (; j > 0 && str_cmp(out[j - 1].resource, t.resource) > 0; j--)
			out[j] = out[j - 1];
		out[j] = t;
	}
	return (int)n;
}

int view_device_amounts(const struct view *v, const struct view_device *d, const struct view_result *r,
			struct view_amount *out, uint32_t max, enum view_charge_state *state)
{
	struct view_amount consumed[64];
	const struct view_named_qty *q = view_result_consumed(v, r);
	uint32_t i, n = view_result_nconsumed(v, r);

	if (n > 64)
		return -E2BIG;
	for (i = 0; i < n; i++)
		consumed[i] = (struct view_amount){ view_atom_str(q[i].name), *view_atom_qty(q[i].value) };
	return view_mapping_amounts(view_ids(v), d, consumed, n, out, max, state);
}

/* --- holds ------------------------------------------------------------------- */

static struct vkey hold_key(const struct atom_set *as, const struct view_result *r, char *buf, size_t n, bool *ok)
{
	struct str p = astr(as, r->pool), d = astr(as, r->device);

	*ok = p.len + 1 + d.len <= n;
	if (!*ok)
		return view_key((struct str){ "", 0 }, (struct str){ "", 0 });
	memcpy(buf, p.ptr, p.len);
	buf[p.len] = '/';
	memcpy(buf + p.len + 1, d.ptr, d.len);
	return view_key(astr(as, r->driver), (struct str){ buf, p.len + 1 + d.len });
}

bool view_hold_key_eq(struct view_atom_ids ids, const struct view_hold *h, const struct vkey *k)
{
	struct str p = view_atom_str(view_atom_id(ids, h->pool)), d = view_atom_str(view_atom_id(ids, h->device));

	return str_eq(view_atom_str(view_atom_id(ids, h->driver)), k->a) && k->b.len == p.len + 1 + d.len &&
	       memcmp(k->b.ptr, p.ptr, p.len) == 0 && k->b.ptr[p.len] == '/' &&
	       memcmp(k->b.ptr + p.len + 1, d.ptr, d.len) == 0;
}

/* By the record's address alone: a stale hold (see view_hold_update) may
 * name a record already freed, which is never read through it. */
static bool holder_is(const struct view_holder *h, const struct view_claim *c, uint32_t result)
{
	return h->claim == c && h->result == result;
}

/* Make the hold of key k (result r's device) hold hs[0..n) in table t, or
 * drop it when n is 0; private: t was never published, a replaced record
 * is freed at once. */
static int hold_store(struct view_builder *b, struct vtable *t, const struct view_result *r,
		      const struct vkey *k, const struct view_holder *hs, uint32_t n, bool private)
{
	const struct view_rec *replaced = NULL;
	struct view_hold *h = NULL;
	int rc;

	if ((rc = view_limbo_reserve(b, VT_RESERVE)) != 0)
		return rc;
	if (n == 0) {
		rc = vt_del(b, t, k, &replaced);
	} else if ((rc = view_record_hold(b, r->driver, r->pool, r->device, hs, n, &h)) == 0) {
		h->h.hash = k->hash;
		b->record_bytes += h->h.size;
		if ((rc = vt_put(b, t, &h->h, k, &replaced)) != 0)
			view_record_free(b, VIEW_INDEX_HOLDS, h);
	}
	if (rc == 0 && replaced) {
		if (private)
			view_record_free(b, VIEW_INDEX_HOLDS, (void *)(uintptr_t)replaced);
		else
			view_retire(b, VIEW_INDEX_HOLDS, (void *)(uintptr_t)replaced);
	}
	return rc;
}

static struct view_holder holder_of(const struct view_claim *c, uint32_t i)
{
	return (struct view_holder){ c, i };
}

/* Claim c's result i leaves (add false) or joins the holds of the
 * published table t: a copy of that device's holders, one changed. With
 * was given (a record c replaces, holding the same devices), c takes
 * was's place instead, so the holders keep their order. */
static int hold_change(struct view_builder *b, struct vtable *t, const struct view_claim *c, uint32_t i,
		       bool add, const struct view_claim *was)
{
	const struct view_result *r = &c->results[i];
	char buf[1024];
	bool ok;
	struct vkey k = hold_key(&b->atoms, r, buf, sizeof(buf), &ok);
	const struct view_hold *old;
	struct view_holder small[16], *hs = small;
	uint32_t n = 0, j;
	bool swapped = false;
	int rc;

	if (!ok)
		return 0;   /* no such pool and device name can exist */
	old = (const struct view_hold *)vt_get(t->dir, VIEW_INDEX_HOLDS, &k);
	if (old && old->nholders >= sizeof(small) / sizeof(small[0]) &&
	    !(hs = malloc(((size_t)old->nholders + 1) * sizeof(*hs))))
		return -ENOMEM;
	for (j = 0; old && j < old->nholders; j++) {
		if (was && holder_is(&old->holders[j], was, i)) {
			hs[n++] = holder_of(c, i);
			swapped = true;
		} else if (was || !holder_is(&old->holders[j], c, i)) {
			hs[n++] = old->holders[j];
		}
	}
	if (add && !was)
		hs[n++] = holder_of(c, i);
	if ((!old && !add) || (old && n == old->nholders && !add && !swapped)) {
		rc = 0;
		goto out;
	}
	if (was && !swapped)
		hs[n++] = holder_of(c, i);   /* was was missing: a stale hold, rebuilt at publish anyway */
	rc = hold_store(b, t, r, &k, hs, n, false);
out:
	if (hs != small)
		free(hs);
	return rc;
}

static bool same_holds(const struct view_claim *a, const struct view_claim *b)
{
	const char *ta, *tb;
	uint32_t i;

	if (!a->allocated || !b->allocated || a->nresults != b->nresults || !view_aref_eq(a->namespace, b->namespace) ||
	    strcmp(view_claim_name(a), view_claim_name(b)) != 0)
		return false;
	for (i = 0; i < a->nresults; i++) {
		const struct view_result *ra = &a->results[i], *rb = &b->results[i];

		if (!view_aref_eq(ra->driver, rb->driver) || !view_aref_eq(ra->pool, rb->pool) ||
		    !view_aref_eq(ra->device, rb->device) || !view_aref_eq(ra->share_id, rb->share_id))
			return false;
	}
	ta = view_uid_text(&a->uid);
	tb = view_uid_text(&b->uid);
	if (ta || tb)
		return ta && tb && strcmp(ta, tb) == 0;
	return memcmp(a->uid.bin, b->uid.bin, 16) == 0;
}

void view_hold_update(struct view_builder *b, const struct view_claim *old, const struct view_claim *rec)
{
	uint32_t i;
	int rc = 0;

	if (b->holds_stale)
		return;   /* made again whole before the next publish */

	if (old && rec && same_holds(old, rec)) {
		for (i = 0; i < rec->nresults && rc == 0; i++)
			rc = hold_change(b, &b->t[VIEW_INDEX_HOLDS], rec, i, true, old);
		if (rc)
			b->holds_stale = true;
		return;
	}
	for (i = 0; old && old->allocated && i < old->nresults && rc == 0; i++)
		rc = hold_change(b, &b->t[VIEW_INDEX_HOLDS], old, i, false, NULL);
	for (i = 0; rec && rec->allocated && i < rec->nresults && rc == 0; i++)
		rc = hold_change(b, &b->t[VIEW_INDEX_HOLDS], rec, i, true, NULL);
	if (rc)
		b->holds_stale = true;
}

/* The rebuild gathers every allocated result of every claim, sorts them by
 * device and writes each device's hold once with all its holders: linear
 * in the holders but for the sort. (Adding the holders one by one copied a
 * device's whole list each time: quadratic in the claims sharing a device,
 * 5 s of CPU for 4,000 claims on one shareable device.) */
struct hold_entry {
	const struct view_claim *c;
	uint32_t result;
	uint32_t order;               /* the claim's place in the walk: holders keep it */
};

struct gather {
	struct hold_entry *e;         /* NULL while counting */
	size_t n, claims;
};

static int gather_holds(void *ctx, const struct view_rec *r)
{
	struct gather *g = ctx;
	const struct view_claim *c = (const struct view_claim *)r;
	uint32_t i;

	for (i = 0; c->allocated && i < c->nresults; i++) {
		if (g->e)
			g->e[g->n] = (struct hold_entry){ c, i, (uint32_t)g->claims };
		g->n++;
	}
	g->claims++;
	return 0;
}

static int cmp_id(struct view_aref a, struct view_aref b)
{
	return a.id < b.id ? -1 : a.id > b.id;
}

/* Atoms are interned: equal names are the same atom, so the ids of the
 * device's atoms order the entries by device. */
static int entry_cmp(const void *pa, const void *pb)
{
	const struct hold_entry *a = pa, *b = pb;
	const struct view_result *ra = &a->c->results[a->result], *rb = &b->c->results[b->result];
	int d;

	if ((d = cmp_id(ra->driver, rb->driver)) || (d = cmp_id(ra->pool, rb->pool)) ||
	    (d = cmp_id(ra->device, rb->device)))
		return d;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return a->result < b->result ? -1 : a->result > b->result;
}

static bool same_device(const struct hold_entry *a, const struct hold_entry *b)
{
	const struct view_result *ra = &a->c->results[a->result], *rb = &b->c->results[b->result];

	return view_aref_eq(ra->driver, rb->driver) && view_aref_eq(ra->pool, rb->pool) &&
	       view_aref_eq(ra->device, rb->device);
}

/* Fill the private table t with one hold per device of e[0..n) (sorted). */
static int store_holds(struct view_builder *b, struct vtable *t, const struct hold_entry *e, size_t n)
{
	struct view_holder *hs = NULL;
	size_t i = 0, j, cap = 0;
	int rc = 0;

	while (i < n && rc == 0) {
		const struct view_result *r = &e[i].c->results[e[i].result];
		char buf[1024];
		bool ok;
		struct vkey k = hold_key(&b->atoms, r, buf, sizeof(buf), &ok);

		for (j = i + 1; j < n && same_device(&e[i], &e[j]); j++)
			;
		if (ok && j - i > UINT32_MAX) {
			rc = -E2BIG;
			break;
		}
		if (ok && j - i > cap) {
			free(hs);
			cap = j - i;
			if (!(hs = malloc(cap * sizeof(*hs)))) {
				rc = -ENOMEM;
				break;
			}
		}
		if (ok) {   /* else no such pool and device name can exist */
			for (size_t m = i; m < j; m++)
				hs[m - i] = holder_of(e[m].c, e[m].result);
			rc = hold_store(b, t, r, &k, hs, (uint32_t)(j - i), true);
		}
		i = j;
	}
	free(hs);
	return rc;
}

int view_hold_rebuild(struct view_builder *b)
{
	struct vtable t;
	struct gather g = { 0 };
	size_t want;
	int rc;

	vt_each(b->t[OBJECT_RESOURCE_CLAIM].dir, gather_holds, &g);
	want = g.n;
	if (want && !(g.e = malloc(want * sizeof(*g.e))))
		return -ENOMEM;
	g.n = g.claims = 0;
	vt_each(b->t[OBJECT_RESOURCE_CLAIM].dir, gather_holds, &g);
	if (g.n != want) {               /* the table is the builder's: cannot change */
		free(g.e);
		return -EINVAL;
	}
	if (g.n > 1)
		qsort(g.e, g.n, sizeof(*g.e), entry_cmp);
	if ((rc = vt_init(b, &t, VIEW_INDEX_HOLDS)) != 0) {
		free(g.e);
		return rc;
	}
	t.private_copy = true;
	view_slab_bulk(b, VIEW_INDEX_HOLDS);
	rc = store_holds(b, &t, g.e, g.n);
	view_slab_bulk(b, -1);
	free(g.e);
	if (rc || (rc = vt_retire_all(b, &b->t[VIEW_INDEX_HOLDS], true)) != 0) {
		view_table_free(b, &t);
		return rc;
	}
	t.private_copy = false;
	t.dir->epoch = b->seq;
	for (uint32_t c = 0; c < t.dir->nchunks; c++)
		t.dir->chunk[c]->epoch = b->seq;
	b->t[VIEW_INDEX_HOLDS] = t;
	return 0;
}

/* --- claims waiting for their charges ------------------------------------------- */

int view_pending_add(struct view_builder *b, const struct view_claim *c)
{
	struct pending_claim *p;

	if (b->npending >= b->lim.max_objects)
		return -E2BIG;
	if (b->npending == b->pending_alloc) {
		uint32_t n = b->pending_alloc ? b->pending_alloc * 2 : 64;

		p = realloc(b->pending, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->pending = p;
		b->pending_alloc = n;
	}
	p = &b->pending[b->npending];
	if (!(p->name = strdup(view_claim_name(c))))
		return -ENOMEM;
	p->namespace = atom_get(atom_at(&b->atoms, c->namespace));
	b->npending++;
	return 0;
}

static void pending_drop(struct view_builder *b, uint32_t i)
{
	atom_put(&b->atoms, b->pending[i].namespace);
	free(b->pending[i].name);
	b->pending[i] = b->pending[--b->npending];
}

/* Past this many claims made again in one retry, the holds are rebuilt
 * once instead of updated claim by claim (each update copies the device's
 * holder list: quadratic in the claims waiting on one shared device). */
#define RETRY_HOLD_UPDATES 64

void view_pending_retry(struct view_builder *b, int64_t now)
{
	uint32_t i = 0, remade = 0;
	bool stale = b->holds_stale;

	while (i < b->npending) {
		struct pending_claim *p = &b->pending[i];
		struct vkey k = view_key(view_atom_str(p->namespace), str_from_cstr(p->name));
		const struct view_claim *c = (const struct view_claim *)vt_get(b->t[OBJECT_RESOURCE_CLAIM].dir, OBJECT_RESOURCE_CLAIM, &k);
		const struct view_rec *replaced = NULL;
		struct view_claim *n = NULL;

		if (!c) {
			/* Gone, or only in a claims relist still being built: that
			 * relist's commit tries again. */
			if (b->relisting[OBJECT_RESOURCE_CLAIM])
				i++;
			else
				pending_drop(b, i);
			continue;
		}
		if (!c->charge_pending || !c->allocated) {
			pending_drop(b, i);
			continue;
		}
		if (view_limbo_reserve(b, VT_RESERVE) != 0 || view_record_claim_recharge(b, c, now, &n) != 0)
			break;   /* memory: the next change of the slices tries again */
		n->h.hash = k.hash;
		b->record_bytes += n->h.size;
		if (vt_put(b, &b->t[OBJECT_RESOURCE_CLAIM], &n->h, &k, &replaced) != 0) {
			view_record_free(b, OBJECT_RESOURCE_CLAIM, n);
			break;
		}
		if (replaced) {
			view_retire(b, OBJECT_RESOURCE_CLAIM, (void *)(uintptr_t)replaced);
			if (++remade == RETRY_HOLD_UPDATES)
				b->holds_stale = true;   /* rebuilt below */
			view_hold_update(b, (const struct view_claim *)replaced, n);
		}
		b->dirty = true;
		if (n->charge_pending)
			i++;
		else
			pending_drop(b, i);
	}
	if (!stale && b->holds_stale && view_hold_rebuild(b) == 0)
		b->holds_stale = false;
}

void view_pending_free(struct view_builder *b)
{
	while (b->npending)
		pending_drop(b, b->npending - 1);
	free(b->pending);
	b->pending = NULL;
	b->pending_alloc = 0;
}
