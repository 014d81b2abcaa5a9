/* view_table.c - the view's persistent hash map, and retirement.
 *
 * Open addressing with linear probing over 2^k slots, cut into chunks of
 * VIEW_CHUNK under a directory. A published snapshot holds a directory; the
 * builder's working copy is a directory too. Each chunk and directory
 * carries the working sequence it was made in: one made in the current
 * sequence has never been published and is changed in place; any other is
 * copied first and the original retired. So a burst of events between two
 * publishes copies each touched chunk once, and a publish shares every
 * chunk that did not change.
 *
 * Deletion shifts the following entries of the run back (no tombstone
 * slots), so a lookup stops at the first empty slot. Every chunk the shift
 * will write is made private before the first write, so a failed copy
 * leaves the table as it was.
 *
 * Retired objects wait in a FIFO ordered by sequence; collect frees the
 * head while no unreleased snapshot is older than its sequence. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "view_impl.h"

/* Grow past 80% full. */
#define LOAD_NUM 8
#define LOAD_DEN 10

uint32_t view_hash2(struct str a, struct str b)
{
	/* A separator byte, so ("ab","c") and ("a","bc") differ. */
	uint32_t h = hmap_hash_add(HMAP_HASH_INIT, a.ptr, a.len);

	h = hmap_hash_add(h, "\xff", 1);
	return hmap_hash_finish(hmap_hash_add(h, b.ptr, b.len));
}

static bool key_eq(struct str x, struct str y)
{
	return str_eq(x, y);
}

static bool rec_matches(const struct vdir *d, unsigned table, const struct view_rec *r, const struct vkey *k)
{
	struct vkey rk;

	if (r->hash != k->hash)
		return false;
	if (table == VIEW_INDEX_HOLDS)
		return view_hold_key_eq(d->ids, (const struct view_hold *)r, k);
	rk = view_record_key(d->ids, table, r);
	return key_eq(rk.a, k->a) && key_eq(rk.b, k->b);
}

static uint32_t nslots(const struct vdir *d)
{
	return d->nchunks * VIEW_CHUNK;
}

static const struct view_rec *slot_get(const struct vdir *d, uint32_t i)
{
	return d->chunk[i / VIEW_CHUNK]->slot[i % VIEW_CHUNK];
}

static struct vdir *dir_new(const struct view_builder *b, uint32_t nchunks, uint64_t epoch)
{
	struct vdir *d = calloc(1, sizeof(*d) + (size_t)nchunks * sizeof(d->chunk[0]));
	uint32_t i;

	if (!d)
		return NULL;
	d->epoch = epoch;
	d->ids = atom_ids(&b->atoms);
	d->nchunks = nchunks;
	for (i = 0; i < nchunks; i++) {
		d->chunk[i] = calloc(1, sizeof(struct vchunk));
		if (!d->chunk[i])
			goto fail;
		d->chunk[i]->epoch = epoch;
	}
	return d;
fail:
	while (i-- > 0)
		free(d->chunk[i]);
	free(d);
	return NULL;
}

int vt_init(struct view_builder *b, struct vtable *t, unsigned table)
{
	t->table = table;
	t->private_copy = false;
	t->dir = dir_new(b, 1, b->seq);
	return t->dir ? 0 : -ENOMEM;
}

const struct view_rec *vt_get(const struct vdir *dir, unsigned table, const struct vkey *k)
{
	uint32_t mask = nslots(dir) - 1, i;
	const struct view_rec *r;

	for (i = k->hash & mask; (r = slot_get(dir, i)) != NULL; i = (i + 1) & mask)
		if (rec_matches(dir, table, r, k))
			return r;
	return NULL;
}

static bool is_private(const struct view_builder *b, const struct vtable *t, uint64_t epoch)
{
	return t->private_copy || epoch == b->seq;
}

/* The working directory, private. */
static int own_dir(struct view_builder *b, struct vtable *t)
{
	struct vdir *d = t->dir, *c;
	size_t sz;

	if (is_private(b, t, d->epoch))
		return 0;
	if (view_limbo_reserve(b, 1) != 0)
		return -ENOMEM;
	sz = sizeof(*d) + (size_t)d->nchunks * sizeof(d->chunk[0]);
	c = malloc(sz);
	if (!c)
		return -ENOMEM;
	memcpy(c, d, sz);
	c->epoch = b->seq;
	view_retire(b, VIEW_LIMBO_MEM, d);
	t->dir = c;
	return 0;
}

/* Chunk ci of the working directory, private. */
static int own_chunk(struct view_builder *b, struct vtable *t, uint32_t ci)
{
	struct vchunk *ch, *c;
	int rc = own_dir(b, t);

	if (rc)
		return rc;
	ch = t->dir->chunk[ci];
	if (is_private(b, t, ch->epoch))
		return 0;
	if (view_limbo_reserve(b, 1) != 0)
		return -ENOMEM;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(c, ch, sizeof(*c));
	c->epoch = b->seq;
	view_retire(b, VIEW_LIMBO_MEM, ch);
	t->dir->chunk[ci] = c;
	return 0;
}

static void slot_set(struct vtable *t, uint32_t i, const struct view_rec *r)
{
	t->dir->chunk[i / VIEW_CHUNK]->slot[i % VIEW_CHUNK] = r;
}

/* Double the slots: a new directory and chunks, the old ones retired (the
 * records are shared, not copied). */
static int grow(struct view_builder *b, struct vtable *t)
{
	struct vdir *old = t->dir, *d;
	uint32_t i, mask, n = nslots(old);

	if (old->nchunks > UINT32_MAX / (2 * VIEW_CHUNK))
		return -E2BIG;
	if (view_limbo_reserve(b, (size_t)old->nchunks + 1) != 0)
		return -ENOMEM;
	d = dir_new(b, old->nchunks * 2, b->seq);
	if (!d)
		return -ENOMEM;
	mask = nslots(d) - 1;
	for (i = 0; i < n; i++) {
		const struct view_rec *r = slot_get(old, i);
		uint32_t j;

		if (!r)
			continue;
		for (j = r->hash & mask; d->chunk[j / VIEW_CHUNK]->slot[j % VIEW_CHUNK]; j = (j + 1) & mask)
			;
		d->chunk[j / VIEW_CHUNK]->slot[j % VIEW_CHUNK] = r;
	}
	d->count = old->count;
	for (i = 0; i < old->nchunks; i++)
		view_retire(b, VIEW_LIMBO_MEM, old->chunk[i]);
	view_retire(b, VIEW_LIMBO_MEM, old);
	t->dir = d;
	return 0;
}

int vt_put(struct view_builder *b, struct vtable *t, const struct view_rec *rec,
	   const struct vkey *k, const struct view_rec **old)
{
	uint32_t mask, i;
	const struct view_rec *r;
	int rc;

	*old = NULL;
	if ((uint64_t)(t->dir->count + 1) * LOAD_DEN > (uint64_t)nslots(t->dir) * LOAD_NUM &&
	    (rc = grow(b, t)) != 0)
		return rc;
	mask = nslots(t->dir) - 1;
	for (i = k->hash & mask; (r = slot_get(t->dir, i)) != NULL; i = (i + 1) & mask)
		if (rec_matches(t->dir, t->table, r, k))
			break;
	if ((rc = own_chunk(b, t, i / VIEW_CHUNK)) != 0)
		return rc;
	if (r)
		*old = r;
	else
		t->dir->count++;
	slot_set(t, i, rec);
	return 0;
}

int vt_del(struct view_builder *b, struct vtable *t, const struct vkey *k,
	   const struct view_rec **old)
{
	uint32_t mask = nslots(t->dir) - 1, i, j, end;
	const struct view_rec *r;
	int rc;

	*old = NULL;
	for (i = k->hash & mask; (r = slot_get(t->dir, i)) != NULL; i = (i + 1) & mask)
		if (rec_matches(t->dir, t->table, r, k))
			break;
	if (!r)
		return 0;
	/* Own every chunk from i to the end of the run before writing. */
	for (end = i; slot_get(t->dir, (end + 1) & mask) != NULL; end = (end + 1) & mask)
		;
	for (j = i;; j = (j + 1) & mask) {
		if ((j % VIEW_CHUNK) == 0 || j == i)
			if ((rc = own_chunk(b, t, j / VIEW_CHUNK)) != 0)
				return rc;
		if (j == end)
			break;
	}
	*old = r;
	t->dir->count--;
	/* Backward shift: move each later entry of the run into the hole when
	 * its home slot is not between the hole and itself. */
	j = i;
	for (;;) {
		const struct view_rec *e;
		uint32_t home;

		slot_set(t, i, NULL);
		for (;;) {
			j = (j + 1) & mask;
			e = slot_get(t->dir, j);
			if (!e)
				return 0;
			home = e->hash & mask;
			/* e may move to i when i lies cyclically in [home, j). */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		slot_set(t, i, e);
		i = j;
	}
}

int vt_retire_all(struct view_builder *b, struct vtable *t, bool records)
{
	struct vdir *d = t->dir;
	uint32_t i, n = nslots(d);
	unsigned rk = t->table;

	if (view_limbo_reserve(b, (size_t)d->nchunks + 1 + (records ? d->count : 0)) != 0)
		return -ENOMEM;
	for (i = 0; records && i < n; i++) {
		const struct view_rec *r = slot_get(d, i);

		if (r)
			view_retire(b, rk, (void *)(uintptr_t)r);
	}
	for (i = 0; i < d->nchunks; i++)
		view_retire(b, VIEW_LIMBO_MEM, d->chunk[i]);
	view_retire(b, VIEW_LIMBO_MEM, d);
	t->dir = NULL;
	return 0;
}

int vt_each(const struct vdir *dir, int (*fn)(void *ctx, const struct view_rec *r), void *ctx)
{
	uint32_t c, i;
	int rc;

	for (c = 0; c < dir->nchunks; c++) {
		const struct vchunk *ch = dir->chunk[c];

		for (i = 0; i < VIEW_CHUNK; i++)
			if (ch->slot[i] && (rc = fn(ctx, ch->slot[i])) != 0)
				return rc;
	}
	return 0;
}

size_t vt_bytes(const struct vdir *dir)
{
	return sizeof(*dir) + (size_t)dir->nchunks * (sizeof(dir->chunk[0]) + sizeof(struct vchunk));
}

/* --- retirement ----------------------------------------------------------- */

int view_limbo_reserve(struct view_builder *b, size_t n)
{
	size_t need;

	/* Reuse the consumed head before growing. */
	if (b->limbo_head > 0 && b->limbo_len + n > b->limbo_alloc) {
		memmove(b->limbo, b->limbo + b->limbo_head,
			(b->limbo_len - b->limbo_head) * sizeof(*b->limbo));
		b->limbo_len -= b->limbo_head;
		b->limbo_head = 0;
	}
	need = b->limbo_len + n;
	if (need > b->limbo_alloc) {
		size_t alloc = b->limbo_alloc ? b->limbo_alloc : 1024;
		struct limbo_entry *l;

		while (alloc < need)
			alloc *= 2;
		l = realloc(b->limbo, alloc * sizeof(*l));
		if (!l)
			return -ENOMEM;
		b->limbo = l;
		b->limbo_alloc = alloc;
	}
	return 0;
}

void view_retire(struct view_builder *b, unsigned what, void *p)
{
	struct limbo_entry *e = &b->limbo[b->limbo_len++];

	e->seq = b->seq;
	e->what = what;
	e->p = p;
}

static void limbo_free(struct view_builder *b, struct limbo_entry *e)
{
	if (e->what == VIEW_LIMBO_MEM)
		free(e->p);
	else
		view_record_free(b, e->what, e->p);
}

size_t view_builder_collect(struct view_builder *b)
{
	/* Entries retired in sequence s were visible only to snapshots older
	 * than s: free them once the oldest unreleased snapshot is s or newer. */
	uint64_t oldest = b->oldest ? b->oldest->seq : b->seq;
	size_t n = 0;

	while (b->limbo_head < b->limbo_len && b->limbo[b->limbo_head].seq <= oldest) {
		limbo_free(b, &b->limbo[b->limbo_head++]);
		n++;
	}
	if (b->limbo_head == b->limbo_len)
		b->limbo_head = b->limbo_len = 0;
	return n;
}

void view_limbo_drain(struct view_builder *b)
{
	while (b->limbo_head < b->limbo_len)
		limbo_free(b, &b->limbo[b->limbo_head++]);
	free(b->limbo);
	b->limbo = NULL;
	b->limbo_head = b->limbo_len = b->limbo_alloc = 0;
}
