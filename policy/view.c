/* view.c - the view builder: events and relists, pools, publishing, and
 * the lookups readers make on a published snapshot. */
#include "view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_impl.h"

/* Scratch for parsing one object's attributes and policies. */
#define SCRATCH_CAP ((size_t)64 << 20)

void view_limits_default(struct view_limits *lim)
{
	lim->max_objects = 1000000;
	lim->max_atoms = 4000000;
	lim->pool_tombstones = 100000;
	lim->max_pool_slices = 4096;
}

static const enum vkind table_of[VIEW_RESOURCE_COUNT] = { VK_SLICE, VK_CLAIM };

struct vkey view_record_key(enum vkind kind, const struct view_rec *r)
{
	switch (kind) {
	case VK_SLICE:
		return (struct vkey){ { "", 0 }, str_from_cstr(((const struct view_slice *)r)->name), r->hash };
	case VK_CLAIM: {
		const struct view_claim *c = (const struct view_claim *)r;

		return (struct vkey){ view_atom_str(c->namespace), str_from_cstr(c->name), r->hash };
	}
	case VK_POOL:
	case VK_COUNT:
		break;
	}
	return (struct vkey){ view_atom_str(((const struct view_pool *)r)->driver),
			      view_atom_str(((const struct view_pool *)r)->name), r->hash };
}

int view_builder_new(const struct view_limits *lim, struct view_builder **out)
{
	struct view_builder *b = calloc(1, sizeof(*b));
	int k;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	if (lim)
		b->lim = *lim;
	else
		view_limits_default(&b->lim);
	b->seq = 1;
	if (atom_set_init(&b->atoms, b->lim.max_atoms) != 0 || arena_new(SCRATCH_CAP, &b->scratch) != 0)
		goto fail;
	for (k = 0; k < VK_COUNT; k++)
		if (vt_init(b, &b->t[k], (enum vkind)k) != 0)
			goto fail;
	*out = b;
	return 0;
fail:
	view_builder_free(b);
	return -ENOMEM;
}

static void free_table(struct view_builder *b, struct vtable *t)
{
	if (t->dir && vt_retire_all(b, t, true) != 0) {
		/* No room to retire: nothing reads any more, free in place. */
		uint32_t c, i;

		for (c = 0; c < t->dir->nchunks; c++) {
			for (i = 0; i < VIEW_CHUNK; i++) {
				const struct view_rec *r = t->dir->chunk[c]->slot[i];

				if (r)
					view_record_free(b, t->kind == VK_SLICE ? LIMBO_SLICE
							 : t->kind == VK_CLAIM ? LIMBO_CLAIM : LIMBO_POOL,
							 (void *)(uintptr_t)r);
			}
			free(t->dir->chunk[c]);
		}
		free(t->dir);
		t->dir = NULL;
	}
}

void view_builder_free(struct view_builder *b)
{
	int k;

	if (!b)
		return;
	while (b->oldest) {
		struct view *v = b->oldest;

		b->oldest = v->next;
		free(v);
	}
	for (k = 0; k < VIEW_RESOURCE_COUNT; k++)
		if (b->relisting[k])
			free_table(b, &b->relist[k]);
	for (k = 0; k < VK_COUNT; k++)
		free_table(b, &b->t[k]);
	view_limbo_drain(b);
	atom_set_free(&b->atoms);
	arena_free(b->scratch);
	free(b);
}

void view_builder_stats(const struct view_builder *b, struct view_stats *st)
{
	int k;

	memset(st, 0, sizeof(*st));
	for (k = 0; k < VIEW_RESOURCE_COUNT; k++)
		st->objects[k] = b->t[table_of[k]].dir->count;
	st->pools = b->t[VK_POOL].dir->count - b->tombstones;
	st->pool_tombstones = b->tombstones;
	st->atoms = b->atoms.count;
	st->record_bytes = b->record_bytes;
	for (k = 0; k < VK_COUNT; k++)
		st->record_bytes += vt_bytes(b->t[k].dir);
	st->atom_bytes = b->atoms.bytes;
	st->retired = b->limbo_len - b->limbo_head;
	st->snapshots = b->nviews;
}

void view_builder_touch(struct view_builder *b, enum view_resource r, int64_t now_ns)
{
	if ((unsigned)r >= VIEW_RESOURCE_COUNT || now_ns <= b->heard_ns[r])
		return;
	b->heard_ns[r] = now_ns;
	b->dirty = true;
}

bool view_builder_dirty(const struct view_builder *b)
{
	return b->dirty;
}

/* --- pools ----------------------------------------------------------------- */

static int cmp_str(const void *x, const void *y)
{
	return str_cmp(*(const struct str *)x, *(const struct str *)y);
}

/* Recompute the pool (driver, pool) in the tables given from its slices:
 * removed leaves it and added joins it (either may be empty). */
static int pool_update(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		       struct str driver, struct str pool, struct str removed, struct str added,
		       int64_t now)
{
	struct vkey k = view_key(driver, pool);
	const struct view_pool *old = (const struct view_pool *)vt_get(pools->dir, VK_POOL, &k);
	const struct view_rec *replaced = NULL;
	struct view_pool tmpl, *p = NULL;
	struct str *names;
	uint32_t n = 0, i, cap;
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
		const struct view_slice *s = (const struct view_slice *)vt_get(slices->dir, VK_SLICE, &sk);

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
	if (!old && tmpl.nslices == 0)
		return 0;  /* nothing to remember */
	if (old) {
		tmpl.driver = old->driver;
		tmpl.name = old->name;
	} else {
		rc = 0;
		tmpl.driver = atom_str(&b->atoms, driver, &rc);
		if (tmpl.driver)
			tmpl.name = atom_str(&b->atoms, pool, &rc);
		if (rc) {
			atom_put(&b->atoms, tmpl.driver);
			return rc;
		}
		fresh_atoms = 1;
	}
	rc = view_record_pool(b, &tmpl, names, n, &p);
	if (fresh_atoms) {
		/* The record took its own references. */
		atom_put(&b->atoms, tmpl.driver);
		atom_put(&b->atoms, tmpl.name);
	}
	if (rc)
		return rc;
	if ((rc = vt_put(b, pools, &p->h, &k, &replaced)) != 0) {
		b->record_bytes += p->h.size;
		view_record_free(b, LIMBO_POOL, p);
		return rc;
	}
	b->record_bytes += p->h.size;
	if (replaced) {
		if (((const struct view_pool *)replaced)->nslices == 0)
			b->tombstones--;
		view_retire(b, LIMBO_POOL, (void *)(uintptr_t)replaced);
	}
	if (p->nslices == 0)
		b->tombstones++;
	return 0;
}

struct tomb {
	int64_t emptied_ns;
	struct str driver, name;
};

struct tomb_walk {
	struct tomb *t;
	uint32_t n, cap;
};

static int collect_tomb(void *ctx, const struct view_rec *r)
{
	struct tomb_walk *w = ctx;
	const struct view_pool *p = (const struct view_pool *)r;

	if (p->nslices == 0 && w->n < w->cap)
		w->t[w->n++] = (struct tomb){ p->emptied_ns, view_atom_str(p->driver), view_atom_str(p->name) };
	return 0;
}

static int cmp_tomb(const void *x, const void *y)
{
	const struct tomb *a = x, *b = y;

	return a->emptied_ns < b->emptied_ns ? -1 : a->emptied_ns > b->emptied_ns;
}

/* Over the cap: forget the oldest tenth of the tombstones (at least the
 * excess), so the scan is rare. */
static int evict_tombstones(struct view_builder *b, struct vtable *pools)
{
	struct tomb_walk w;
	uint32_t drop, i;
	int rc;

	if (b->tombstones <= b->lim.pool_tombstones)
		return 0;
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
			view_retire(b, LIMBO_POOL, (void *)(uintptr_t)old);
		}
	}
	return 0;
}

/* --- events ---------------------------------------------------------------- */

static bool kind_matches(enum view_resource r, const struct k8s_object *obj)
{
	return obj->kind == (r == VIEW_SLICES ? OBJECT_RESOURCE_SLICE : OBJECT_RESOURCE_CLAIM);
}

static struct vkey key_of_object(enum view_resource r, const struct k8s_object *obj)
{
	return view_key(r == VIEW_CLAIMS ? obj->meta.namespace : (struct str){ "", 0 }, obj->meta.name);
}

static int check_object(enum view_resource r, const struct k8s_object *obj, char *err, size_t n)
{
	if (!kind_matches(r, obj)) {
		snprintf(err, n, "a %s where a %s was expected", model_kind_name(obj->kind),
			 r == VIEW_SLICES ? "ResourceSlice" : "ResourceClaim");
		return -EINVAL;
	}
	if (obj->meta.name.len == 0 || (r == VIEW_CLAIMS && obj->meta.namespace.len == 0)) {
		snprintf(err, n, "metadata.%s is missing", obj->meta.name.len ? "namespace" : "name");
		return -EINVAL;
	}
	return 0;
}

/* A new record for obj. */
static int make_record(struct view_builder *b, enum view_resource r, const struct k8s_object *obj,
		       struct view_rec **out, char *err, size_t n)
{
	struct vkey k = key_of_object(r, obj);
	int rc;

	if (r == VIEW_SLICES) {
		struct view_slice *s = NULL;

		rc = view_record_slice(b, obj, &s, err, n);
		*out = s ? &s->h : NULL;
	} else {
		struct view_claim *c = NULL;

		rc = view_record_claim(b, obj, &c, err, n);
		*out = c ? &c->h : NULL;
	}
	if (rc == 0) {
		(*out)->hash = k.hash;
		b->record_bytes += (*out)->size;
	}
	return rc;
}

static void drop_record(struct view_builder *b, enum view_resource r, struct view_rec *rec)
{
	view_record_free(b, r == VIEW_SLICES ? LIMBO_SLICE : LIMBO_CLAIM, rec);
}

static enum limbo_kind limbo_of(enum view_resource r)
{
	return r == VIEW_SLICES ? LIMBO_SLICE : LIMBO_CLAIM;
}

/* The pools of a slice that changed from old to s (either may be NULL). */
static int slice_pools(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		       const struct view_slice *old, const struct view_slice *s, int64_t now)
{
	struct str none = { "", 0 };
	int rc = 0;

	if (old && (!s || old->driver != s->driver || old->pool != s->pool))
		rc = pool_update(b, slices, pools, view_atom_str(old->driver), view_atom_str(old->pool),
				 str_from_cstr(old->name), none, now);
	if (rc == 0 && s)
		rc = pool_update(b, slices, pools, view_atom_str(s->driver), view_atom_str(s->pool),
				 none, str_from_cstr(s->name), now);
	if (rc == 0)
		rc = evict_tombstones(b, pools);
	return rc;
}

int view_builder_apply(struct view_builder *b, enum view_resource r, enum view_event ev,
		       const struct k8s_object *obj, int64_t now_ns, char *err, size_t n)
{
	struct vtable *t;
	struct view_rec *rec = NULL;
	const struct view_rec *old = NULL;
	struct vkey k;
	int rc;

	if ((unsigned)r >= VIEW_RESOURCE_COUNT || (ev != VIEW_ADDED && ev != VIEW_MODIFIED && ev != VIEW_DELETED)) {
		snprintf(err, n, "not an event the view applies");
		return -EINVAL;
	}
	if ((rc = check_object(r, obj, err, n)) != 0)
		return rc;
	t = &b->t[table_of[r]];
	k = key_of_object(r, obj);
	arena_reset(b->scratch);
	if ((rc = view_limbo_reserve(b, 4)) != 0)
		return rc;
	if (ev == VIEW_DELETED) {
		if ((rc = vt_del(b, t, &k, &old)) != 0)
			return rc;
	} else {
		if (!vt_get(t->dir, t->kind, &k) && t->dir->count >= b->lim.max_objects) {
			snprintf(err, n, "more than %u objects", b->lim.max_objects);
			return -E2BIG;
		}
		if ((rc = make_record(b, r, obj, &rec, err, n)) != 0)
			return rc;
		if ((rc = vt_put(b, t, rec, &k, &old)) != 0) {
			drop_record(b, r, rec);
			return rc;
		}
	}
	if (old)
		view_retire(b, limbo_of(r), (void *)(uintptr_t)old);
	if (r == VIEW_SLICES) {
		rc = slice_pools(b, t, &b->t[VK_POOL], (const struct view_slice *)old,
				 (const struct view_slice *)rec, now_ns);
		if (rc) {
			/* The slice is in; its pool could not follow (memory or a
			 * cap). Said, and the next event of the pool retries. */
			snprintf(err, n, "the pool of the slice could not be updated: %s",
				 rc == -E2BIG ? "too many slices in one pool" : "out of memory");
		}
	}
	b->updated_ns[r] = now_ns;
	b->dirty = true;
	return rc;
}

/* --- relists --------------------------------------------------------------- */

int view_builder_relist_begin(struct view_builder *b, enum view_resource r)
{
	int rc;

	if ((unsigned)r >= VIEW_RESOURCE_COUNT)
		return -EINVAL;
	if (b->relisting[r])
		return -EBUSY;
	if ((rc = vt_init(b, &b->relist[r], table_of[r])) != 0)
		return rc;
	b->relist[r].private_copy = true;
	b->relisting[r] = true;
	return 0;
}

int view_builder_relist_add(struct view_builder *b, enum view_resource r,
			    const struct k8s_object *obj, int64_t now_ns, char *err, size_t n)
{
	struct vtable *t;
	struct view_rec *rec = NULL;
	const struct view_rec *old = NULL;
	struct vkey k;
	int rc;

	(void)now_ns;
	if ((unsigned)r >= VIEW_RESOURCE_COUNT || !b->relisting[r]) {
		snprintf(err, n, "no relist in progress");
		return -EINVAL;
	}
	if ((rc = check_object(r, obj, err, n)) != 0)
		return rc;
	t = &b->relist[r];
	if (t->dir->count >= b->lim.max_objects) {
		snprintf(err, n, "more than %u objects", b->lim.max_objects);
		return -E2BIG;
	}
	k = key_of_object(r, obj);
	arena_reset(b->scratch);
	if ((rc = view_limbo_reserve(b, 4)) != 0 || (rc = make_record(b, r, obj, &rec, err, n)) != 0)
		return rc;
	if ((rc = vt_put(b, t, rec, &k, &old)) != 0) {
		drop_record(b, r, rec);
		return rc;
	}
	if (old)   /* a LIST naming an object twice: the later one wins */
		view_retire(b, limbo_of(r), (void *)(uintptr_t)old);
	return 0;
}

void view_builder_relist_abort(struct view_builder *b, enum view_resource r)
{
	if ((unsigned)r >= VIEW_RESOURCE_COUNT || !b->relisting[r])
		return;
	free_table(b, &b->relist[r]);
	b->relisting[r] = false;
}

/* Mark a committed table's chunks as made now: never published, so they
 * need no copy before the next publish. */
static void adopt(struct view_builder *b, struct vtable *t)
{
	uint32_t c;

	t->private_copy = false;
	t->dir->epoch = b->seq;
	for (c = 0; c < t->dir->nchunks; c++)
		t->dir->chunk[c]->epoch = b->seq;
}

struct carry {
	struct view_builder *b;
	struct vtable *pools;       /* the new pools */
	int64_t now;
	int rc;
};

/* An old pool into the new pools: its highest generation, or the whole
 * pool as a tombstone when no new slice has it. */
static int carry_pool(void *ctx, const struct view_rec *r)
{
	struct carry *c = ctx;
	const struct view_pool *old = (const struct view_pool *)r, *cur;
	struct view_pool tmpl, *p = NULL;
	const struct view_rec *replaced = NULL;
	struct vkey k = view_key(view_atom_str(old->driver), view_atom_str(old->name));
	struct str *names = NULL;
	uint32_t i;
	int rc;

	k.hash = old->h.hash;
	cur = (const struct view_pool *)vt_get(c->pools->dir, VK_POOL, &k);
	tmpl = cur ? *cur : *old;
	if (cur) {
		if (old->max_generation <= cur->max_generation &&
		    !(old->nslices && cur->generation == old->generation))
			return 0;
		if (old->max_generation > tmpl.max_generation)
			tmpl.max_generation = old->max_generation;
		if (old->nslices && cur->generation == old->generation)
			tmpl.changed_ns = old->changed_ns;
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
		view_record_free(c->b, LIMBO_POOL, p);
		return c->rc = rc;
	}
	if (replaced)
		view_retire(c->b, LIMBO_POOL, (void *)(uintptr_t)replaced);
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
	return pool_update(a->b, a->slices, a->pools, view_atom_str(s->driver), view_atom_str(s->pool),
			   (struct str){ "", 0 }, str_from_cstr(s->name), a->now);
}

static int count_tomb(void *ctx, const struct view_rec *r)
{
	if (((const struct view_pool *)r)->nslices == 0)
		(*(uint32_t *)ctx)++;
	return 0;
}

/* The pools of a new slices table, with what the old pools remember. */
static int rebuild_pools(struct view_builder *b, struct vtable *slices, int64_t now,
			 struct vtable *out)
{
	struct add_pools a = { b, slices, out, now };
	struct carry c = { b, out, now, 0 };
	uint32_t saved = b->tombstones;
	int rc;

	if ((rc = vt_init(b, out, VK_POOL)) != 0)
		return rc;
	out->private_copy = true;
	if ((rc = vt_each(slices->dir, add_slice_pool, &a)) == 0) {
		arena_reset(b->scratch);
		rc = vt_each(b->t[VK_POOL].dir, carry_pool, &c);
		if (rc == 0)
			rc = c.rc;
	}
	if (rc) {
		free_table(b, out);
		b->tombstones = saved;
		return rc;
	}
	b->tombstones = 0;
	vt_each(out->dir, count_tomb, &b->tombstones);
	return 0;
}

int view_builder_relist_commit(struct view_builder *b, enum view_resource r, int64_t now_ns)
{
	struct vtable pools = { 0 };
	enum vkind kind;
	int rc;

	if ((unsigned)r >= VIEW_RESOURCE_COUNT || !b->relisting[r])
		return -EINVAL;
	kind = table_of[r];
	if (r == VIEW_SLICES && (rc = rebuild_pools(b, &b->relist[r], now_ns, &pools)) != 0)
		return rc;
	if ((rc = vt_retire_all(b, &b->t[kind], true)) != 0)
		goto fail;
	b->t[kind] = b->relist[r];
	adopt(b, &b->t[kind]);
	b->relisting[r] = false;
	if (r == VIEW_SLICES) {
		/* Every old pool record was rebuilt into the new table or left
		 * out: all of them go. */
		if (vt_retire_all(b, &b->t[VK_POOL], true) != 0) {
			/* No room to retire the old pools: keep them (their highest
			 * generations stay; slice counts catch up with the next
			 * event of each pool). */
			free_table(b, &pools);
			b->tombstones = 0;
			vt_each(b->t[VK_POOL].dir, count_tomb, &b->tombstones);
			goto done;
		}
		b->t[VK_POOL] = pools;
		adopt(b, &b->t[VK_POOL]);
		evict_tombstones(b, &b->t[VK_POOL]);
	}
done:
	b->synced_ns[r] = now_ns;
	b->updated_ns[r] = now_ns;
	b->dirty = true;
	return 0;
fail:
	free_table(b, &pools);
	return rc;
}

/* --- publishing ------------------------------------------------------------ */

int view_builder_publish(struct view_builder *b, const struct view **out)
{
	struct view *v = calloc(1, sizeof(*v));
	int k;

	*out = NULL;
	if (!v)
		return -ENOMEM;
	v->seq = b->seq;
	for (k = 0; k < VK_COUNT; k++)
		v->dir[k] = b->t[k].dir;
	for (k = 0; k < VIEW_RESOURCE_COUNT; k++) {
		v->count[k] = b->t[table_of[k]].dir->count;
		v->updated_ns[k] = b->updated_ns[k];
		v->synced_ns[k] = b->synced_ns[k];
		v->heard_ns[k] = b->heard_ns[k] > b->updated_ns[k] ? b->heard_ns[k] : b->updated_ns[k];
	}
	/* From here on every directory and chunk above is shared with v: the
	 * next change copies it. */
	b->seq++;
	v->prev = b->newest;
	if (b->newest)
		b->newest->next = v;
	else
		b->oldest = v;
	b->newest = v;
	b->nviews++;
	b->dirty = false;
	*out = v;
	return 0;
}

void view_builder_release(struct view_builder *b, const struct view *cv)
{
	struct view *v = (struct view *)(uintptr_t)cv;

	if (!v)
		return;
	if (v->prev)
		v->prev->next = v->next;
	else
		b->oldest = v->next;
	if (v->next)
		v->next->prev = v->prev;
	else
		b->newest = v->prev;
	b->nviews--;
	free(v);
}

/* --- reading a snapshot ---------------------------------------------------- */

uint64_t view_seq(const struct view *v)
{
	return v->seq;
}

uint32_t view_count(const struct view *v, enum view_resource r)
{
	return (unsigned)r < VIEW_RESOURCE_COUNT ? v->count[r] : 0;
}

uint32_t view_pool_count(const struct view *v)
{
	return v->dir[VK_POOL]->count;
}

int64_t view_updated_ns(const struct view *v, enum view_resource r)
{
	return (unsigned)r < VIEW_RESOURCE_COUNT ? v->updated_ns[r] : 0;
}

int64_t view_synced_ns(const struct view *v, enum view_resource r)
{
	return (unsigned)r < VIEW_RESOURCE_COUNT ? v->synced_ns[r] : 0;
}

int64_t view_heard_ns(const struct view *v, enum view_resource r)
{
	return (unsigned)r < VIEW_RESOURCE_COUNT ? v->heard_ns[r] : 0;
}

bool view_stale(const struct view *v, int64_t now_ns, int64_t max_age_ns)
{
	int k;

	for (k = 0; k < VIEW_RESOURCE_COUNT; k++)
		if (now_ns - v->heard_ns[k] > max_age_ns)
			return true;
	return false;
}

const struct view_slice *view_slice_get(const struct view *v, struct str name)
{
	struct vkey k = view_key((struct str){ "", 0 }, name);

	return (const struct view_slice *)vt_get(v->dir[VK_SLICE], VK_SLICE, &k);
}

const struct view_pool *view_pool_get(const struct view *v, struct str driver, struct str pool)
{
	struct vkey k = view_key(driver, pool);

	return (const struct view_pool *)vt_get(v->dir[VK_POOL], VK_POOL, &k);
}

const struct view_claim *view_claim_get(const struct view *v, struct str ns, struct str name)
{
	struct vkey k = view_key(ns, name);

	return (const struct view_claim *)vt_get(v->dir[VK_CLAIM], VK_CLAIM, &k);
}

const struct view_device *view_device_find(const struct view *v, struct str driver, struct str pool,
					   struct str device, const struct view_slice **slice)
{
	const struct view_pool *p = view_pool_get(v, driver, pool);
	uint32_t i, j;

	if (slice)
		*slice = NULL;
	for (i = 0; p && i < p->nnames; i++) {
		const struct view_slice *s = view_slice_get(v, str_from_cstr(p->slice_names[i]));

		for (j = 0; s && j < s->ndevices; j++) {
			if (str_eq(view_atom_str(s->devices[j].name), device)) {
				if (slice)
					*slice = s;
				return &s->devices[j];
			}
		}
	}
	return NULL;
}

struct each_slice {
	int (*fn)(void *ctx, const struct view_slice *s);
	void *ctx;
};

static int each_slice(void *ctx, const struct view_rec *r)
{
	struct each_slice *e = ctx;

	return e->fn(e->ctx, (const struct view_slice *)r);
}

int view_each_slice(const struct view *v, int (*fn)(void *ctx, const struct view_slice *s), void *ctx)
{
	struct each_slice e = { fn, ctx };

	return vt_each(v->dir[VK_SLICE], each_slice, &e);
}

struct each_pool {
	int (*fn)(void *ctx, const struct view_pool *p);
	void *ctx;
};

static int each_pool(void *ctx, const struct view_rec *r)
{
	struct each_pool *e = ctx;

	return e->fn(e->ctx, (const struct view_pool *)r);
}

int view_each_pool(const struct view *v, int (*fn)(void *ctx, const struct view_pool *p), void *ctx)
{
	struct each_pool e = { fn, ctx };

	return vt_each(v->dir[VK_POOL], each_pool, &e);
}

struct each_claim {
	int (*fn)(void *ctx, const struct view_claim *c);
	void *ctx;
};

static int each_claim(void *ctx, const struct view_rec *r)
{
	struct each_claim *e = ctx;

	return e->fn(e->ctx, (const struct view_claim *)r);
}

int view_each_claim(const struct view *v, int (*fn)(void *ctx, const struct view_claim *c), void *ctx)
{
	struct each_claim e = { fn, ctx };

	return vt_each(v->dir[VK_CLAIM], each_claim, &e);
}
