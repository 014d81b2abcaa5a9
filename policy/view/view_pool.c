/* view_pool.c - pools derived from the slices: their generations, the
 * tombstones that remember the highest generation after the last slice is
 * gone, when a pool came back or changed generation (a driver restart),
 * and the index from a pool name to the drivers that use it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view_impl.h"

static int cmp_str(const void *x, const void *y)
{
	return str_cmp(*(const struct str *)x, *(const struct str *)y);
}

void view_table_free(struct view_builder *b, struct vtable *t)
{
	if (t->dir && vt_retire_all(b, t, true) != 0) {
		/* No room to retire: nothing reads any more, free in place. */
		uint32_t c, i;

		for (c = 0; c < t->dir->nchunks; c++) {
			for (i = 0; i < VIEW_CHUNK; i++) {
				const struct view_rec *r = t->dir->chunk[c]->slot[i];

				if (r)
					view_record_free(b, t->table, (void *)(uintptr_t)r);
			}
			free(t->dir->chunk[c]);
		}
		free(t->dir);
		t->dir = NULL;
	}
}

/* --- the pool-name index ------------------------------------------------------- */

/* driver joins (live) or leaves the drivers of pool name in the working
 * index. */
static int pname_set(struct view_builder *b, const struct view_atom *name, const struct view_atom *driver,
		     bool live)
{
	struct vtable *t = &b->t[VIEW_INDEX_PNAMES];
	struct vkey k = view_key((struct str){ "", 0 }, view_atom_str(name));
	const struct view_pname *old = (const struct view_pname *)vt_get(t->dir, VIEW_INDEX_PNAMES, &k);
	const struct view_atom **drivers;
	const struct view_rec *replaced = NULL;
	struct view_pname *p = NULL;
	uint32_t n = 0, i;
	int rc;

	drivers = arena_alloc(b->scratch, ((old ? old->ndrivers : 0) + 1) * sizeof(*drivers));
	if (!drivers)
		return -ENOMEM;
	for (i = 0; old && i < old->ndrivers; i++)
		if (old->drivers[i] != driver)
			drivers[n++] = old->drivers[i];
	if (live)
		drivers[n++] = driver;
	if (old && n == old->ndrivers && live)
		return 0;   /* already there */
	if (!old && !live)
		return 0;
	if ((rc = view_limbo_reserve(b, VT_RESERVE)) != 0)
		return rc;
	if (n == 0) {
		if ((rc = vt_del(b, t, &k, &replaced)) != 0)
			return rc;
	} else {
		if ((rc = view_record_pname(b, name, drivers, n, &p)) != 0)
			return rc;
		p->h.hash = k.hash;
		b->record_bytes += p->h.size;
		if ((rc = vt_put(b, t, &p->h, &k, &replaced)) != 0) {
			view_record_free(b, VIEW_INDEX_PNAMES, p);
			return rc;
		}
	}
	if (replaced)
		view_retire(b, VIEW_INDEX_PNAMES, (void *)(uintptr_t)replaced);
	return 0;
}

struct pname_walk {
	struct view_builder *b;
	int rc;
};

static int add_pname(void *ctx, const struct view_rec *r)
{
	struct pname_walk *w = ctx;
	const struct view_pool *p = (const struct view_pool *)r;

	if (p->nslices == 0)
		return 0;
	arena_reset(w->b->scratch);
	w->rc = pname_set(w->b, atom_at(&w->b->atoms, p->name), atom_at(&w->b->atoms, p->driver), true);
	return w->rc;
}

int view_pname_rebuild(struct view_builder *b)
{
	struct vtable t;
	struct pname_walk w = { b, 0 };
	int rc;

	if ((rc = vt_init(b, &t, VIEW_INDEX_PNAMES)) != 0)
		return rc;
	if ((rc = vt_retire_all(b, &b->t[VIEW_INDEX_PNAMES], true)) != 0) {
		view_table_free(b, &t);
		return rc;
	}
	b->t[VIEW_INDEX_PNAMES] = t;
	view_slab_bulk(b, VIEW_INDEX_PNAMES);
	vt_each(b->t[VIEW_INDEX_POOLS].dir, add_pname, &w);
	view_slab_bulk(b, -1);
	return w.rc;
}

/* --- pools --------------------------------------------------------------------- */

/* When the pool was restarted, as an event from old (NULL: none) to tmpl
 * shows it: it came back after all its slices were deleted, or its
 * generation changed. A relist's build (observed false) learns nothing. */
static int64_t restarted(const struct view_pool *old, const struct view_pool *tmpl, bool observed,
			 int64_t now)
{
	if (!old)
		return 0;
	if (observed && tmpl->nslices &&
	    (old->nslices == 0 || tmpl->generation != old->generation))
		return now;
	return old->restarted_ns;
}

static int pool_update(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		       struct str driver, struct str pool, struct str removed, struct str added,
		       int64_t now, bool observed)
{
	struct vkey k = view_key(driver, pool);
	const struct view_pool *old = (const struct view_pool *)vt_get(pools->dir, VIEW_INDEX_POOLS, &k);
	const struct view_rec *replaced = NULL;
	struct view_pool tmpl, *p = NULL;
	struct str *names;
	uint32_t n = 0, i, cap;
	bool was_live = old && old->nslices > 0;
	int rc;
	int fresh_atoms = 0;

	cap = (old ? old->nnames : 0) + 1;
	if (cap > b->lim.max_pool_slices + 1)
		return -E2BIG;
	names = arena_alloc(b->scratch, cap * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; old && i < old->nnames; i++) {
		struct str s = str_from_cstr(old->slice_names[i]);

		if (!str_eq(s, removed) && !str_eq(s, added))
			names[n++] = s;
	}
	if (added.len)
		names[n++] = added;
	if (n > b->lim.max_pool_slices)
		return -E2BIG;
	qsort(names, n, sizeof(*names), cmp_str);
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.h.hash = k.hash;
	tmpl.max_generation = old ? old->max_generation : 0;
	tmpl.generation = 0;
	for (i = 0; i < n; i++) {
		struct vkey sk = view_key((struct str){ "", 0 }, names[i]);
		const struct view_slice *s = (const struct view_slice *)vt_get(slices->dir, OBJECT_RESOURCE_SLICE, &sk);

		if (!s)
			continue;
		if (tmpl.nslices == 0 || s->generation > tmpl.generation) {
			tmpl.generation = s->generation;
			tmpl.nslices_at_generation = 0;
			tmpl.resource_slice_count = 0;
		}
		if (s->generation == tmpl.generation) {
			tmpl.nslices_at_generation++;
			if (s->resource_slice_count > tmpl.resource_slice_count)
				tmpl.resource_slice_count = s->resource_slice_count;
		}
		tmpl.nslices++;
	}
	if (tmpl.nslices && tmpl.generation > tmpl.max_generation)
		tmpl.max_generation = tmpl.generation;
	if (!old || old->nslices == 0 || (tmpl.nslices && tmpl.generation != old->generation))
		tmpl.changed_ns = tmpl.nslices ? now : (old ? old->changed_ns : now);
	else
		tmpl.changed_ns = old->changed_ns;
	tmpl.emptied_ns = tmpl.nslices ? 0 : (old && old->nslices == 0 ? old->emptied_ns : now);
	tmpl.restarted_ns = restarted(old, &tmpl, observed, now);
	if (!old && tmpl.nslices == 0)
		return 0;  /* nothing to remember */
	if (old) {
		tmpl.driver = old->driver;
		tmpl.name = old->name;
	} else {
		rc = 0;
		tmpl.driver = aref_of(atom_str(&b->atoms, driver, &rc));
		if (tmpl.driver.id)
			tmpl.name = aref_of(atom_str(&b->atoms, pool, &rc));
		if (rc) {
			atom_put_ref(&b->atoms, tmpl.driver);
			return rc;
		}
		fresh_atoms = 1;
	}
	rc = view_record_pool(b, &tmpl, names, n, &p);
	if (fresh_atoms) {
		/* The record took its own references. */
		atom_put_ref(&b->atoms, tmpl.driver);
		atom_put_ref(&b->atoms, tmpl.name);
	}
	if (rc)
		return rc;
	if ((rc = vt_put(b, pools, &p->h, &k, &replaced)) != 0) {
		b->record_bytes += p->h.size;
		view_record_free(b, VIEW_INDEX_POOLS, p);
		return rc;
	}
	b->record_bytes += p->h.size;
	if (replaced) {
		if (((const struct view_pool *)replaced)->nslices == 0)
			b->tombstones--;
		view_retire(b, VIEW_INDEX_POOLS, (void *)(uintptr_t)replaced);
	}
	if (p->nslices == 0)
		b->tombstones++;
	if (observed && was_live != (p->nslices > 0))
		return pname_set(b, atom_at(&b->atoms, p->name), atom_at(&b->atoms, p->driver), p->nslices > 0);
	return 0;
}

int view_pool_update(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		     struct str driver, struct str pool, struct str removed, struct str added,
		     int64_t now)
{
	return pool_update(b, slices, pools, driver, pool, removed, added, now, true);
}

struct tomb {
	int64_t emptied_ns;
	struct str driver, name;
};

struct tomb_walk {
	const struct atom_set *as;
	struct tomb *t;
	uint32_t n, cap;
};

static int collect_tomb(void *ctx, const struct view_rec *r)
{
	struct tomb_walk *w = ctx;
	const struct view_pool *p = (const struct view_pool *)r;

	if (p->nslices == 0 && w->n < w->cap)
		w->t[w->n++] = (struct tomb){ p->emptied_ns, astr(w->as, p->driver), astr(w->as, p->name) };
	return 0;
}

static int cmp_tomb(const void *x, const void *y)
{
	const struct tomb *a = x, *b = y;

	return a->emptied_ns < b->emptied_ns ? -1 : a->emptied_ns > b->emptied_ns;
}

/* Over the cap: forget the oldest tenth of the tombstones (at least the
 * excess), so the scan is rare. */
int view_pool_evict(struct view_builder *b, struct vtable *pools)
{
	struct tomb_walk w;
	uint32_t drop, i;
	int rc;

	if (b->tombstones <= b->lim.pool_tombstones)
		return 0;
	w.as = &b->atoms;
	w.cap = b->tombstones;
	w.n = 0;
	w.t = arena_alloc(b->scratch, (size_t)w.cap * sizeof(*w.t));
	if (!w.t)
		return -ENOMEM;
	vt_each(pools->dir, collect_tomb, &w);
	qsort(w.t, w.n, sizeof(*w.t), cmp_tomb);
	drop = b->tombstones - b->lim.pool_tombstones + b->lim.pool_tombstones / 10;
	for (i = 0; i < drop && i < w.n; i++) {
		struct vkey k = view_key(w.t[i].driver, w.t[i].name);
		const struct view_rec *old = NULL;

		if ((rc = view_limbo_reserve(b, 1)) != 0 || (rc = vt_del(b, pools, &k, &old)) != 0)
			return rc;
		if (old) {
			b->tombstones--;
			view_retire(b, VIEW_INDEX_POOLS, (void *)(uintptr_t)old);
		}
	}
	return 0;
}

/* --- relists ------------------------------------------------------------------ */

struct carry {
	struct view_builder *b;
	struct vtable *pools;       /* the new pools */
	int64_t now;
	int rc;
};

/* An old pool into the new pools: its highest generation and, when its
 * generation did not change across the relist, when it last changed and
 * restarted; a pool that changed generation or came back meanwhile
 * restarted now; one no new slice has stays as a tombstone. */
static int carry_pool(void *ctx, const struct view_rec *r)
{
	struct carry *c = ctx;
	const struct view_pool *old = (const struct view_pool *)r, *cur;
	struct view_pool tmpl, *p = NULL;
	const struct view_rec *replaced = NULL;
	struct vkey k = view_key(astr(&c->b->atoms, old->driver), astr(&c->b->atoms, old->name));
	struct str *names = NULL;
	uint32_t i;
	int rc;

	k.hash = old->h.hash;
	cur = (const struct view_pool *)vt_get(c->pools->dir, VIEW_INDEX_POOLS, &k);
	tmpl = cur ? *cur : *old;
	if (cur) {
		if (old->max_generation > tmpl.max_generation)
			tmpl.max_generation = old->max_generation;
		if (old->nslices && cur->generation == old->generation) {
			tmpl.changed_ns = old->changed_ns;
			tmpl.restarted_ns = old->restarted_ns;
		} else {
			tmpl.restarted_ns = c->now;
		}
		if (tmpl.max_generation == cur->max_generation && tmpl.changed_ns == cur->changed_ns &&
		    tmpl.restarted_ns == cur->restarted_ns)
			return 0;
	} else {
		tmpl.nslices = tmpl.nslices_at_generation = 0;
		if (old->nslices)
			tmpl.emptied_ns = c->now;
	}
	if (cur && cur->nnames) {
		names = arena_alloc(c->b->scratch, cur->nnames * sizeof(*names));
		if (!names)
			return c->rc = -ENOMEM;
		for (i = 0; i < cur->nnames; i++)
			names[i] = str_from_cstr(cur->slice_names[i]);
	}
	if ((rc = view_limbo_reserve(c->b, 1)) != 0 ||
	    (rc = view_record_pool(c->b, &tmpl, names, cur ? cur->nnames : 0, &p)) != 0)
		return c->rc = rc;
	c->b->record_bytes += p->h.size;
	if ((rc = vt_put(c->b, c->pools, &p->h, &k, &replaced)) != 0) {
		view_record_free(c->b, VIEW_INDEX_POOLS, p);
		return c->rc = rc;
	}
	if (replaced)
		view_retire(c->b, VIEW_INDEX_POOLS, (void *)(uintptr_t)replaced);
	return 0;
}

struct add_pools {
	struct view_builder *b;
	struct vtable *slices, *pools;
	int64_t now;
};

static int add_slice_pool(void *ctx, const struct view_rec *r)
{
	struct add_pools *a = ctx;
	const struct view_slice *s = (const struct view_slice *)r;

	arena_reset(a->b->scratch);
	return pool_update(a->b, a->slices, a->pools, astr(&a->b->atoms, s->driver), astr(&a->b->atoms, s->pool),
			   (struct str){ "", 0 }, str_from_cstr(view_slice_name(s)), a->now, false);
}

static int count_tomb(void *ctx, const struct view_rec *r)
{
	if (((const struct view_pool *)r)->nslices == 0)
		(*(uint32_t *)ctx)++;
	return 0;
}

int view_pool_rebuild(struct view_builder *b, struct vtable *slices, int64_t now, struct vtable *out)
{
	struct add_pools a = { b, slices, out, now };
	struct carry c = { b, out, now, 0 };
	uint32_t saved = b->tombstones;
	int rc;

	if ((rc = vt_init(b, out, VIEW_INDEX_POOLS)) != 0)
		return rc;
	out->private_copy = true;
	if ((rc = vt_each(slices->dir, add_slice_pool, &a)) == 0) {
		arena_reset(b->scratch);
		rc = vt_each(b->t[VIEW_INDEX_POOLS].dir, carry_pool, &c);
		if (rc == 0)
			rc = c.rc;
	}
	if (rc) {
		view_table_free(b, out);
		b->tombstones = saved;
		return rc;
	}
	b->tombstones = 0;
	vt_each(out->dir, count_tomb, &b->tombstones);
	return 0;
}
