/* view.c - the view builder: events and relists, publishing, and the
 * lookups readers make on a published snapshot. Pools are view_pool.c,
 * holds and charges view_hold.c. */
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

static const struct str none = { "", 0 };

struct vkey view_record_key(struct view_atom_ids ids, unsigned table, const struct view_rec *r)
{
	switch (table) {
	case OBJECT_RESOURCE_SLICE:
		return (struct vkey){ none, str_from_cstr(view_slice_name((const struct view_slice *)r)), r->hash };
	case OBJECT_RESOURCE_CLAIM: {
		const struct view_claim *c = (const struct view_claim *)r;

		return (struct vkey){ view_atom_str(view_atom_id(ids, c->namespace)), str_from_cstr(view_claim_name(c)),
				      r->hash };
	}
	case OBJECT_POD: {
		const struct view_pod *p = (const struct view_pod *)r;

		return (struct vkey){ view_atom_str(view_atom_id(ids, p->namespace)), str_from_cstr(view_pod_name(p)),
				      r->hash };
	}
	case OBJECT_NODE:
		return (struct vkey){ none, str_from_cstr(view_node_name((const struct view_node *)r)), r->hash };
	case VIEW_INDEX_PNAMES:
		return (struct vkey){ none, view_atom_str(((const struct view_pname *)r)->name), r->hash };
	case VIEW_INDEX_HOLDS:   /* (driver, pool): the "<pool>/<device>" part is view_hold_key_eq()'s */
		return (struct vkey){ view_atom_str(view_atom_id(ids, ((const struct view_hold *)r)->driver)),
				      view_atom_str(view_atom_id(ids, ((const struct view_hold *)r)->pool)), r->hash };
	default:                    /* VIEW_INDEX_POOLS */
		break;
	}
	return (struct vkey){ view_atom_str(view_atom_id(ids, ((const struct view_pool *)r)->driver)),
			      view_atom_str(view_atom_id(ids, ((const struct view_pool *)r)->name)), r->hash };
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
	b->bulk = -1;
	if (atom_set_init(&b->atoms, b->lim.max_atoms) != 0 || arena_new(SCRATCH_CAP, &b->scratch) != 0)
		goto fail;
	for (k = 0; k < VIEW_TABLES; k++)
		if (view_has_table(k) && vt_init(b, &b->t[k], k) != 0)
			goto fail;
	*out = b;
	return 0;
fail:
	view_builder_free(b);
	return -ENOMEM;
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
	for (k = 0; k < OBJECT_KIND_COUNT; k++)
		if (b->relisting[k])
			view_table_free(b, &b->relist[k]);
	for (k = 0; k < VIEW_TABLES; k++)
		view_table_free(b, &b->t[k]);   /* a number with no table: dir NULL, nothing */
	view_pending_free(b);
	view_limbo_drain(b);
	view_slab_free_all(b);
	atom_set_free(&b->atoms);
	arena_free(b->scratch);
	free(b);
}

void view_builder_stats(const struct view_builder *b, struct view_stats *st)
{
	int k;

	memset(st, 0, sizeof(*st));
	for (k = 0; k < OBJECT_KIND_COUNT; k++)
		if (view_holds_kind(k))
			st->objects[k] = b->t[k].dir->count;
	st->pools = b->t[VIEW_INDEX_POOLS].dir->count - b->tombstones;
	st->pool_tombstones = b->tombstones;
	st->holds = b->t[VIEW_INDEX_HOLDS].dir->count;
	st->charge_pending = b->npending;
	st->atoms = b->atoms.count;
	/* Slabs whole: the room of the records freed in them too. */
	st->record_bytes = b->record_bytes - b->slab_rec_bytes + b->slab_bytes;
	for (k = 0; k < VIEW_TABLES; k++)
		if (view_has_table(k))
			st->record_bytes += vt_bytes(b->t[k].dir);
	st->atom_bytes = b->atoms.bytes;
	st->atom_id_bytes = b->atoms.id_bytes;
	st->retired = b->limbo_len - b->limbo_head;
	st->snapshots = b->nviews;
}

void view_builder_touch(struct view_builder *b, enum object_kind k, int64_t now_ns)
{
	if (!view_holds_kind(k) || now_ns <= b->heard_ns[k])
		return;
	b->heard_ns[k] = now_ns;
	b->dirty = true;
}

void view_builder_touch_all(struct view_builder *b, int64_t now_ns)
{
	int k;

	for (k = 0; k < OBJECT_KIND_COUNT; k++)
		view_builder_touch(b, k, now_ns);   /* refuses the kinds the view does not hold */
}

bool view_builder_dirty(const struct view_builder *b)
{
	return b->dirty;
}

/* --- events ---------------------------------------------------------------- */

static bool namespaced(enum object_kind k)
{
	return k == OBJECT_RESOURCE_CLAIM || k == OBJECT_POD;
}

static struct vkey key_of_object(enum object_kind k, const struct k8s_object *obj)
{
	return view_key(namespaced(k) ? obj->meta.namespace : none, obj->meta.name);
}

static int check_object(enum object_kind k, const struct k8s_object *obj, char *err, size_t n)
{
	if (obj->kind != k) {
		snprintf(err, n, "a %s where a %s was expected", model_kind_name(obj->kind), model_kind_name(k));
		return -EINVAL;
	}
	if (obj->meta.name.len == 0 || (namespaced(k) && obj->meta.namespace.len == 0)) {
		snprintf(err, n, "metadata.%s is missing", obj->meta.name.len ? "namespace" : "name");
		return -EINVAL;
	}
	return 0;
}

/* A new record for obj; old is the record it replaces (or NULL). */
static int make_record(struct view_builder *b, enum object_kind kind, const struct k8s_object *obj,
		       const struct view_rec *old, int64_t now, struct view_rec **out, char *err, size_t n)
{
	struct vkey k = key_of_object(kind, obj);
	int rc = -EINVAL;

	*out = NULL;
	switch (kind) {
	case OBJECT_RESOURCE_SLICE: {
		struct view_slice *s = NULL;
		const struct view_slice *o = (const struct view_slice *)old;

		rc = view_record_slice(b, obj, &s, err, n);
		if (rc == 0) {
			/* An update that changes the mappings is seen here. */
			if (o && !view_aref_eq(o->fingerprint, s->fingerprint))
				s->mapping_changed_ns = now;
			else if (o)
				s->mapping_changed_ns = o->mapping_changed_ns;
		}
		*out = s ? &s->h : NULL;
		break;
	}
	case OBJECT_RESOURCE_CLAIM: {
		struct view_claim *c = NULL;

		rc = view_record_claim(b, obj, (const struct view_claim *)old, now, &c, err, n);
		*out = c ? &c->h : NULL;
		break;
	}
	case OBJECT_POD: {
		struct view_pod *p = NULL;

		rc = view_record_pod(b, obj, &p, err, n);
		*out = p ? &p->h : NULL;
		break;
	}
	case OBJECT_NODE: {
		struct view_node *nd = NULL;

		rc = view_record_node(b, obj, &nd, err, n);
		*out = nd ? &nd->h : NULL;
		break;
	}
	case OBJECT_NONE:
	case OBJECT_CONFIG_MAP:
	case OBJECT_OTHER:
		break;
	}
	if (rc == 0) {
		(*out)->hash = k.hash;
		b->record_bytes += (*out)->size;
	}
	return rc;
}

static void drop_record(struct view_builder *b, enum object_kind k, struct view_rec *rec)
{
	view_record_free(b, k, rec);
}

/* The pools of a slice that changed from old to s (either may be NULL). */
static int slice_pools(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		       const struct view_slice *old, const struct view_slice *s, int64_t now)
{
	int rc = 0;

	if (old && (!s || !view_aref_eq(old->driver, s->driver) || !view_aref_eq(old->pool, s->pool)))
		rc = view_pool_update(b, slices, pools, astr(&b->atoms, old->driver), astr(&b->atoms, old->pool),
				      str_from_cstr(view_slice_name(old)), none, now);
	if (rc == 0 && s)
		rc = view_pool_update(b, slices, pools, astr(&b->atoms, s->driver), astr(&b->atoms, s->pool),
				      none, str_from_cstr(view_slice_name(s)), now);
	if (rc == 0)
		rc = view_pool_evict(b, pools);
	return rc;
}

int view_builder_apply(struct view_builder *b, enum object_kind k, enum view_event ev,
		       const struct k8s_object *obj, int64_t now_ns, char *err, size_t n)
{
	struct vtable *t;
	struct view_rec *rec = NULL;
	const struct view_rec *old = NULL;
	struct vkey key;
	int rc;

	if (!view_holds_kind(k) || (ev != VIEW_ADDED && ev != VIEW_MODIFIED && ev != VIEW_DELETED)) {
		snprintf(err, n, "not an event the view applies");
		return -EINVAL;
	}
	if ((rc = check_object(k, obj, err, n)) != 0)
		return rc;
	t = &b->t[k];
	key = key_of_object(k, obj);
	arena_reset(b->scratch);
	if ((rc = view_limbo_reserve(b, 4)) != 0)
		return rc;
	/* A finished Pod, or one neither on a node nor with claim statuses,
	 * is no part of any node's account: it leaves the view. */
	if (k == OBJECT_POD && ev != VIEW_DELETED && !view_pod_kept(obj))
		ev = VIEW_DELETED;
	if (ev == VIEW_DELETED) {
		if ((rc = vt_del(b, t, &key, &old)) != 0)
			return rc;
	} else {
		const struct view_rec *cur = vt_get(t->dir, t->table, &key);

		if (!cur && t->dir->count >= b->lim.max_objects) {
			snprintf(err, n, "more than %u objects", b->lim.max_objects);
			return -E2BIG;
		}
		if ((rc = make_record(b, k, obj, cur, now_ns, &rec, err, n)) != 0)
			return rc;
		if ((rc = vt_put(b, t, rec, &key, &old)) != 0) {
			drop_record(b, k, rec);
			return rc;
		}
	}
	if (old)
		view_retire(b, k, (void *)(uintptr_t)old);
	if (k == OBJECT_RESOURCE_CLAIM) {
		view_hold_update(b, (const struct view_claim *)old, (const struct view_claim *)rec);
		if (rec && ((const struct view_claim *)rec)->charge_pending)
			view_pending_add(b, (const struct view_claim *)rec);
	}
	if (k == OBJECT_RESOURCE_SLICE) {
		rc = slice_pools(b, t, &b->t[VIEW_INDEX_POOLS], (const struct view_slice *)old,
				 (const struct view_slice *)rec, now_ns);
		if (rc) {
			/* The slice is in; its pool could not follow (memory or a
			 * cap). Said, and the next event of the pool retries. */
			snprintf(err, n, "the pool of the slice could not be updated: %s",
				 rc == -E2BIG ? "too many slices in one pool" : "out of memory");
		}
		if (rec)
			view_pending_retry(b, now_ns);
	}
	b->updated_ns[k] = now_ns;
	b->dirty = true;
	return rc;
}

/* --- relists --------------------------------------------------------------- */

int view_builder_relist_begin(struct view_builder *b, enum object_kind k)
{
	int rc;

	if (!view_holds_kind(k))
		return -EINVAL;
	if (b->relisting[k])
		return -EBUSY;
	if ((rc = vt_init(b, &b->relist[k], k)) != 0)
		return rc;
	b->relist[k].private_copy = true;
	b->relisting[k] = true;
	return 0;
}

int view_builder_relist_add(struct view_builder *b, enum object_kind k,
			    const struct k8s_object *obj, int64_t now_ns, char *err, size_t n)
{
	struct vtable *t;
	struct view_rec *rec = NULL;
	const struct view_rec *old = NULL;
	struct vkey key;
	int rc;

	if (!view_holds_kind(k) || !b->relisting[k]) {
		snprintf(err, n, "no relist in progress");
		return -EINVAL;
	}
	if ((rc = check_object(k, obj, err, n)) != 0)
		return rc;
	t = &b->relist[k];
	if (t->dir->count >= b->lim.max_objects) {
		snprintf(err, n, "more than %u objects", b->lim.max_objects);
		return -E2BIG;
	}
	key = key_of_object(k, obj);
	arena_reset(b->scratch);
	if (k == OBJECT_POD && !view_pod_kept(obj))
		return 0;
	/* The record this one will replace when the relist is swapped in: a
	 * claim keeps the charges of an allocation the view already held. */
	if ((rc = view_limbo_reserve(b, 4)) != 0)
		return rc;
	view_slab_bulk(b, k);
	rc = make_record(b, k, obj, vt_get(b->t[k].dir, k, &key), now_ns, &rec, err, n);
	view_slab_bulk(b, -1);
	if (rc != 0)
		return rc;
	if ((rc = vt_put(b, t, rec, &key, &old)) != 0) {
		drop_record(b, k, rec);
		return rc;
	}
	if (old)   /* a LIST naming an object twice: the later one wins */
		view_retire(b, k, (void *)(uintptr_t)old);
	if (k == OBJECT_RESOURCE_CLAIM && ((const struct view_claim *)rec)->charge_pending)
		view_pending_add(b, (const struct view_claim *)rec);
	return 0;
}

void view_builder_relist_abort(struct view_builder *b, enum object_kind k)
{
	if (!view_holds_kind(k) || !b->relisting[k])
		return;
	view_table_free(b, &b->relist[k]);
	b->relisting[k] = false;
}

static int count_tomb(void *ctx, const struct view_rec *r)
{
	if (((const struct view_pool *)r)->nslices == 0)
		(*(uint32_t *)ctx)++;
	return 0;
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

int view_builder_relist_commit(struct view_builder *b, enum object_kind k, int64_t now_ns)
{
	struct vtable pools = { 0 };
	int rc;

	if (!view_holds_kind(k) || !b->relisting[k])
		return -EINVAL;
	if (k == OBJECT_RESOURCE_SLICE) {
		view_slab_bulk(b, VIEW_INDEX_POOLS);
		rc = view_pool_rebuild(b, &b->relist[k], now_ns, &pools);
		view_slab_bulk(b, -1);
		if (rc != 0)
			return rc;
	}
	if ((rc = vt_retire_all(b, &b->t[k], true)) != 0)
		goto fail;
	b->t[k] = b->relist[k];
	adopt(b, &b->t[k]);
	b->relisting[k] = false;
	if (k == OBJECT_RESOURCE_SLICE) {
		/* Every old pool record was rebuilt into the new table or left
		 * out: all of them go. */
		if (vt_retire_all(b, &b->t[VIEW_INDEX_POOLS], true) != 0) {
			/* No room to retire the old pools: keep them (their highest
			 * generations stay; slice counts catch up with the next
			 * event of each pool). */
			view_table_free(b, &pools);
			b->tombstones = 0;
			vt_each(b->t[VIEW_INDEX_POOLS].dir, count_tomb, &b->tombstones);
			goto done;
		}
		b->t[VIEW_INDEX_POOLS] = pools;
		adopt(b, &b->t[VIEW_INDEX_POOLS]);
		view_pool_evict(b, &b->t[VIEW_INDEX_POOLS]);
	}
done:
	if (k == OBJECT_RESOURCE_SLICE) {
		if (view_pname_rebuild(b) != 0)
			b->holds_stale = true;  /* rebuilt with the holds at the next publish */
		view_slab_bulk(b, OBJECT_RESOURCE_CLAIM);   /* every pending claim may be made again */
		view_pending_retry(b, now_ns);
		view_slab_bulk(b, -1);
	}
	if (k == OBJECT_RESOURCE_CLAIM) {
		bool stale = b->holds_stale;

		/* The pending claims first, the holds once after them: a holder
		 * points at its claim's record, and the retry replaces records
		 * (the holds are not updated one by one meanwhile). */
		b->holds_stale = true;
		view_slab_bulk(b, OBJECT_RESOURCE_CLAIM);   /* every pending claim may be made again */
		view_pending_retry(b, now_ns);
		view_slab_bulk(b, -1);
		if (view_hold_rebuild(b) == 0)
			b->holds_stale = stale;
	}
	b->synced_ns[k] = now_ns;
	b->updated_ns[k] = now_ns;
	b->dirty = true;
	return 0;
fail:
	view_table_free(b, &pools);
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
	if (b->holds_stale && view_hold_rebuild(b) == 0 && view_pname_rebuild(b) == 0)
		b->holds_stale = false;
	/* A stale hold may point at a claim record already retired: never
	 * published (the next publish tries the rebuild again). */
	if (b->holds_stale) {
		free(v);
		return -ENOMEM;
	}
	v->head.ids = atom_ids(&b->atoms);
	v->seq = b->seq;
	for (k = 0; k < VIEW_TABLES; k++)
		v->dir[k] = b->t[k].dir;
	for (k = 0; k < OBJECT_KIND_COUNT; k++) {
		if (!view_holds_kind(k))
			continue;
		v->count[k] = b->t[k].dir->count;
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

uint32_t view_count(const struct view *v, enum object_kind k)
{
	return view_holds_kind(k) ? v->count[k] : 0;
}

uint32_t view_pool_count(const struct view *v)
{
	return v->dir[VIEW_INDEX_POOLS]->count;
}

int64_t view_updated_ns(const struct view *v, enum object_kind k)
{
	return view_holds_kind(k) ? v->updated_ns[k] : 0;
}

int64_t view_synced_ns(const struct view *v, enum object_kind k)
{
	return view_holds_kind(k) ? v->synced_ns[k] : 0;
}

int64_t view_heard_ns(const struct view *v, enum object_kind k)
{
	return view_holds_kind(k) ? v->heard_ns[k] : 0;
}

bool view_stale(const struct view *v, int64_t now_ns, int64_t max_age_ns)
{
	int k;

	for (k = 0; k < OBJECT_KIND_COUNT; k++)   /* a kind the view does not hold is never heard */
		if (v->heard_ns[k] && now_ns - v->heard_ns[k] > max_age_ns)
			return true;
	return false;
}

const struct view_slice *view_slice_get(const struct view *v, struct str name)
{
	struct vkey k = view_key((struct str){ "", 0 }, name);

	return (const struct view_slice *)vt_get(v->dir[OBJECT_RESOURCE_SLICE], OBJECT_RESOURCE_SLICE, &k);
}

const struct view_pool *view_pool_get(const struct view *v, struct str driver, struct str pool)
{
	struct vkey k = view_key(driver, pool);

	return (const struct view_pool *)vt_get(v->dir[VIEW_INDEX_POOLS], VIEW_INDEX_POOLS, &k);
}

const struct view_claim *view_claim_get(const struct view *v, struct str ns, struct str name)
{
	struct vkey k = view_key(ns, name);

	return (const struct view_claim *)vt_get(v->dir[OBJECT_RESOURCE_CLAIM], OBJECT_RESOURCE_CLAIM, &k);
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
			if (str_eq(view_str(v, s->devices[j].name), device)) {
				if (slice)
					*slice = s;
				return &s->devices[j];
			}
		}
	}
	return NULL;
}

/* The next record of the table it walks, when that is the table numbered
 * table. The place is kept in locals and stored once: the ledger walks
 * every record of the view on each build. */
static inline const struct view_rec *iter_next(struct view_iter *it, unsigned table)
{
	const struct vdir *d = it->dir;
	uint32_t c = it->chunk, i = it->slot;

	if (!d || it->table != table)
		return NULL;
	for (; c < d->nchunks; c++, i = 0) {
		const struct view_rec *const *slot = d->chunk[c]->slot;

		for (; i < VIEW_CHUNK; i++)
			if (slot[i]) {
				it->chunk = c;
				it->slot = i + 1;
				return slot[i];
			}
	}
	it->chunk = c;
	it->slot = 0;
	return NULL;
}

static const struct view_rec *iter_first(struct view_iter *it, const struct view *v, unsigned table)
{
	*it = (struct view_iter){ .dir = v->dir[table], .table = table };
	return iter_next(it, table);
}

const struct view_slice *view_first_slice(struct view_iter *it, const struct view *v)
{
	return (const struct view_slice *)iter_first(it, v, OBJECT_RESOURCE_SLICE);
}

const struct view_slice *view_next_slice(struct view_iter *it)
{
	return (const struct view_slice *)iter_next(it, OBJECT_RESOURCE_SLICE);
}

const struct view_pool *view_first_pool(struct view_iter *it, const struct view *v)
{
	return (const struct view_pool *)iter_first(it, v, VIEW_INDEX_POOLS);
}

const struct view_pool *view_next_pool(struct view_iter *it)
{
	return (const struct view_pool *)iter_next(it, VIEW_INDEX_POOLS);
}

const struct view_claim *view_first_claim(struct view_iter *it, const struct view *v)
{
	return (const struct view_claim *)iter_first(it, v, OBJECT_RESOURCE_CLAIM);
}

const struct view_claim *view_next_claim(struct view_iter *it)
{
	return (const struct view_claim *)iter_next(it, OBJECT_RESOURCE_CLAIM);
}

const struct view_pod *view_first_pod(struct view_iter *it, const struct view *v)
{
	return (const struct view_pod *)iter_first(it, v, OBJECT_POD);
}

const struct view_pod *view_next_pod(struct view_iter *it)
{
	return (const struct view_pod *)iter_next(it, OBJECT_POD);
}

const struct view_node *view_first_node(struct view_iter *it, const struct view *v)
{
	return (const struct view_node *)iter_first(it, v, OBJECT_NODE);
}

const struct view_node *view_next_node(struct view_iter *it)
{
	return (const struct view_node *)iter_next(it, OBJECT_NODE);
}

const struct view_pod *view_pod_get(const struct view *v, struct str ns, struct str name)
{
	struct vkey k = view_key(ns, name);

	return (const struct view_pod *)vt_get(v->dir[OBJECT_POD], OBJECT_POD, &k);
}

const struct view_node *view_node_get(const struct view *v, struct str name)
{
	struct vkey k = view_key(none, name);

	return (const struct view_node *)vt_get(v->dir[OBJECT_NODE], OBJECT_NODE, &k);
}

/* "<pool>/<device>", the second part of a hold's key, into buf (n bytes);
 * false when it does not fit. */
static bool hold_key(struct str pool, struct str device, char *buf, size_t n, struct str *out)
{
	if (pool.len + 1 + device.len > n)
		return false;
	if (pool.len)               /* an empty str may have no pointer */
		memcpy(buf, pool.ptr, pool.len);
	buf[pool.len] = '/';
	if (device.len)
		memcpy(buf + pool.len + 1, device.ptr, device.len);
	*out = (struct str){ buf, pool.len + 1 + device.len };
	return true;
}

const struct view_hold *view_hold_get(const struct view *v, struct str driver, struct str pool,
				      struct str device)
{
	char buf[1024];
	struct str second;
	struct vkey k;

	if (!hold_key(pool, device, buf, sizeof(buf), &second))
		return NULL;
	k = view_key(driver, second);
	return (const struct view_hold *)vt_get(v->dir[VIEW_INDEX_HOLDS], VIEW_INDEX_HOLDS, &k);
}

uint32_t view_pool_drivers(const struct view *v, struct str pool, const struct view_atom **out, uint32_t max)
{
	struct vkey k = view_key(none, pool);
	const struct view_pname *p = (const struct view_pname *)vt_get(v->dir[VIEW_INDEX_PNAMES], VIEW_INDEX_PNAMES, &k);
	uint32_t i;

	if (!p)
		return 0;
	for (i = 0; i < p->ndrivers && i < max; i++)
		out[i] = p->drivers[i];
	return p->ndrivers;
}

/* The device in the pool's slices of dirs, preferring its newest
 * generation. */
static const struct view_device *device_in(struct view_atom_ids ids, const struct vdir *slices,
					   const struct vdir *pools,
					   struct str driver, struct str pool, struct str device,
					   const struct view_slice **slice)
{
	struct vkey pk = view_key(driver, pool);
	const struct view_pool *p = (const struct view_pool *)vt_get(pools, VIEW_INDEX_POOLS, &pk);
	const struct view_device *found = NULL;
	uint32_t i, j;

	if (slice)
		*slice = NULL;
	for (i = 0; p && i < p->nnames; i++) {
		struct vkey sk = view_key(none, str_from_cstr(p->slice_names[i]));
		const struct view_slice *s = (const struct view_slice *)vt_get(slices, OBJECT_RESOURCE_SLICE, &sk);

		for (j = 0; s && j < s->ndevices; j++) {
			if (!str_eq(view_atom_str(view_atom_id(ids, s->devices[j].name)), device))
				continue;
			if (!found || s->generation == p->generation) {
				found = &s->devices[j];
				if (slice)
					*slice = s;
			}
			if (s->generation == p->generation)
				return found;
		}
	}
	return found;
}

const struct view_device *view_device_current(const struct view *v, struct str driver, struct str pool,
					      struct str device, const struct view_slice **slice)
{
	struct vkey pk = view_key(driver, pool);
	const struct view_pool *p = (const struct view_pool *)vt_get(v->dir[VIEW_INDEX_POOLS], VIEW_INDEX_POOLS, &pk);
	const struct view_slice *s = NULL;
	const struct view_device *d = device_in(view_ids(v), v->dir[OBJECT_RESOURCE_SLICE], v->dir[VIEW_INDEX_POOLS], driver, pool,
						       device, &s);

	if (slice)
		*slice = NULL;
	if (!d || !p || s->generation != p->generation)
		return NULL;
	if (slice)
		*slice = s;
	return d;
}

const struct view_device *view_builder_device(const struct view_builder *b, struct str driver,
					      struct str pool, struct str device,
					      const struct view_slice **slice)
{
	return device_in(atom_ids(&b->atoms), b->t[OBJECT_RESOURCE_SLICE].dir, b->t[VIEW_INDEX_POOLS].dir, driver, pool,
			 device, slice);
}
