/* view_atom.c - interned strings and quantities of the view.
 *
 * Driver, pool, node, device, attribute and resource names, namespaces
 * and quantities repeat across thousands of records; each distinct value
 * is held once, with a count of the records that hold it. So are arrays
 * of atoms that repeat (blobs: the same attributes on every device of a
 * model, the same requests on every Pod of a workload): compared as bytes,
 * which is exact because equal atoms are the same pointer, and holding a
 * reference on each atom in them. The set is the
 * builder's alone (readers only follow a record's id to an atom), and
 * an atom is freed when the last record holding it is freed, which is
 * after every snapshot that could reach that record was let go: records
 * of published tables are freed by view_builder_collect() (view_table.c's
 * retirement), the others (a failed fill, a relist dropped before it was
 * swapped in) were never reachable from a snapshot.
 *
 * Records name atoms by id (struct view_aref): the id table is a
 * directory of chunks sized once from the cap, so it never moves under a
 * reader. A new atom's slot is written here, on the builder's thread,
 * before the snapshot that reaches it is published (the watcher swaps the
 * snapshot into its slot under the slot's mutex, which every reader takes
 * to get it: the slot's write happens before any read of it). A freed
 * atom's id goes on a free list and is given again only to an atom made
 * after that, when no live snapshot holds a record with the old one: what
 * an older snapshot reads never changes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "view_impl.h"

int atom_set_init(struct atom_set *s, uint32_t max)
{
	memset(s, 0, sizeof(*s));
	if (max > VIEW_ATOM_MAX_ID)
		max = VIEW_ATOM_MAX_ID;
	s->ndir = max / VIEW_ATOM_CHUNK + 1;   /* ids 1..max */
	s->dir = calloc(s->ndir, sizeof(*s->dir));
	s->slot = calloc(1024, sizeof(*s->slot));
	if (!s->slot || !s->dir) {
		free(s->slot);
		free(s->dir);
		s->slot = NULL;
		s->dir = NULL;
		return -ENOMEM;
	}
	s->mask = 1023;
	s->max = max;
	s->next_id = 1;
	s->id_bytes = s->ndir * sizeof(*s->dir);
	return 0;
}

void atom_set_free(struct atom_set *s)
{
	uint32_t i;

	if (!s->slot)
		return;
	for (i = 0; i <= s->mask; i++)
		free(s->slot[i]);
	free(s->slot);
	for (i = 0; i < s->ndir; i++)
		free(s->dir[i]);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

/* An id for a new atom: a freed one first, else the next never given
 * (its chunk allocated on first use). 0 on -ENOMEM. */
static uint32_t id_take(struct atom_set *s)
{
	uint32_t id = s->free_id, c;

	if (id) {
		uintptr_t next = (uintptr_t)s->dir[id >> VIEW_ATOM_CHUNK_BITS][id & (VIEW_ATOM_CHUNK - 1)];

		s->free_id = (uint32_t)(next >> 1);
		return id;
	}
	id = s->next_id;
	c = id >> VIEW_ATOM_CHUNK_BITS;
	if (c >= s->ndir)
		return 0;            /* not reached: count stays below max */
	if (!s->dir[c]) {
		if (!(s->dir[c] = calloc(VIEW_ATOM_CHUNK, sizeof(*s->dir[c]))))
			return 0;
		s->id_bytes += VIEW_ATOM_CHUNK * sizeof(*s->dir[c]);
	}
	s->next_id++;
	return id;
}

static void id_give_back(struct atom_set *s, uint32_t id)
{
	s->dir[id >> VIEW_ATOM_CHUNK_BITS][id & (VIEW_ATOM_CHUNK - 1)] =
		(struct view_atom *)((uintptr_t)s->free_id << 1 | 1);
	s->free_id = id;
}

/* hmap_hash_words(): every object of a sync interns its strings and blobs
 * (a claim's charges and consumed capacity run to a few hundred bytes). */
static uint32_t atom_hash(uint8_t kind, const void *p, size_t n)
{
	return (uint32_t)hmap_hash_words((uint64_t)kind << 56, p, n);
}

static int grow(struct atom_set *s)
{
	uint32_t n = (s->mask + 1) * 2, i;
	struct view_atom **slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; i <= s->mask; i++) {
		struct view_atom *a = s->slot[i];
		uint32_t j;

		if (!a)
			continue;
		for (j = a->hash & (n - 1); slot[j]; j = (j + 1) & (n - 1))
			;
		slot[j] = a;
	}
	free(s->slot);
	s->slot = slot;
	s->mask = n - 1;
	return 0;
}

/* *found tells a blob's caller whether its atoms went to a new atom. */
static const struct view_atom *intern(struct atom_set *s, uint8_t kind, const void *p, size_t n,
				      int *rc, bool *found)
{
	uint32_t h = atom_hash(kind, p, n), i;
	struct view_atom *a;

	*found = false;
	for (i = h & s->mask; (a = s->slot[i]) != NULL; i = (i + 1) & s->mask) {
		if (a->hash == h && a->kind == kind && a->len == n && memcmp(a->data, p, n) == 0) {
			a->refs++;
			*found = true;
			return a;
		}
	}
	if (s->count >= s->max) {
		*rc = -E2BIG;
		return NULL;
	}
	if ((uint64_t)(s->count + 1) * 10 > (uint64_t)(s->mask + 1) * 7) {
		if ((*rc = grow(s)) != 0)
			return NULL;
		for (i = h & s->mask; s->slot[i]; i = (i + 1) & s->mask)
			;
	}
	if (n > UINT32_MAX - 1 || !(a = aligned_alloc(16, (sizeof(*a) + n + 1 + 15) & ~(size_t)15))) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (!(a->id = id_take(s) & VIEW_ATOM_MAX_ID)) {
		free(a);
		*rc = -ENOMEM;
		return NULL;
	}
	s->dir[a->id >> VIEW_ATOM_CHUNK_BITS][a->id & (VIEW_ATOM_CHUNK - 1)] = a;
	a->refs = 1;
	a->hash = h;
	a->len = (uint32_t)n;
	a->kind = kind;
	if (n)
		memcpy(a->data, p, n);
	a->data[n] = '\0';
	s->slot[i] = a;
	s->count++;
	s->bytes += sizeof(*a) + n + 1;
	return a;
}

const struct view_atom *atom_str(struct atom_set *s, struct str v, int *rc)
{
	bool found;

	return intern(s, ATOM_STR, v.ptr ? v.ptr : "", v.len, rc, &found);
}

const struct view_atom *atom_qty(struct atom_set *s, const struct quantity *q, int *rc)
{
	/* Copied whole, padding included, so equal values compare equal. */
	struct quantity c;
	bool found;

	memset(&c, 0, sizeof(c));
	c.mant = q->mant;
	c.scale = q->scale;
	c.format = q->format;
	return intern(s, ATOM_QTY, &c, sizeof(c), rc, &found);
}

void atom_put_capacity(struct atom_set *s, const struct view_capacity *c)
{
	uint32_t k;

	atom_put(s, c->name);
	atom_put(s, c->value);
	atom_put(s, c->dflt);
	atom_put(s, c->min);
	atom_put(s, c->max);
	atom_put(s, c->step);
	for (k = 0; c->valid && k < c->nvalid; k++)
		atom_put(s, c->valid[k]);
}

void atom_put_charge(struct atom_set *s, const struct view_charge *c)
{
	atom_put(s, c->slice);
	atom_put(s, c->slice_rv);
	atom_put(s, c->fingerprint);
	atom_put(s, view_blob_of(c->amounts));
}

void atom_blob_drop(struct atom_set *s, enum atom_kind kind, const void *p, size_t n)
{
	size_t i;

	switch (kind) {
	case ATOM_NQ:
		for (i = 0; i < n / sizeof(struct view_named_qty); i++) {
			const struct view_named_qty *q = (const struct view_named_qty *)p + i;

			atom_put(s, q->name);
			atom_put(s, q->value);
		}
		break;
	case ATOM_ATTRS:
		for (i = 0; i < n / sizeof(struct view_attr); i++) {
			const struct view_attr *a = (const struct view_attr *)p + i;

			atom_put(s, a->name);
			atom_put(s, a->s);
		}
		break;
	case ATOM_CAPS:
		for (i = 0; i < n / sizeof(struct view_capacity); i++)
			atom_put_capacity(s, (const struct view_capacity *)p + i);
		break;
	case ATOM_MAPS:
		for (i = 0; i < n / sizeof(struct view_mapping); i++) {
			const struct view_mapping *m = (const struct view_mapping *)p + i;

			atom_put(s, m->resource);
			atom_put(s, m->multiplier);
			atom_put(s, m->capacity_key);
			atom_put(s, m->capacity_multiplier);
			atom_put(s, m->overhead_per_pod);
			atom_put(s, m->overhead_per_container);
		}
		break;
	case ATOM_CHARGES:
		for (i = 0; i < n / sizeof(struct view_charge); i++)
			atom_put_charge(s, (const struct view_charge *)p + i);
		break;
	case ATOM_PODST:
		for (i = 0; i < n / sizeof(struct view_pod_status); i++)
			atom_put(s, view_blob_of(((const struct view_pod_status *)p + i)->resources));
		break;
	case ATOM_GR:
		atom_put(s, ((const struct view_group_resource *)p)->api_group);
		atom_put(s, ((const struct view_group_resource *)p)->resource);
		break;
	case ATOM_STR:
	case ATOM_QTY:
		break;
	}
}

const void *atom_blob(struct atom_set *s, enum atom_kind kind, const void *p, size_t n, int *rc)
{
	const struct view_atom *a;
	bool found;

	if (n == 0 || !p)
		return NULL;
	if (*rc) {
		atom_blob_drop(s, kind, p, n);
		return NULL;
	}
	a = intern(s, (uint8_t)kind, p, n, rc, &found);
	/* A new blob took the caller's references; an old one has its own. */
	if (!a || found)
		atom_blob_drop(s, kind, p, n);
	return view_atom_data(a);
}

void atom_put(struct atom_set *s, const struct view_atom *ca)
{
	struct view_atom *a = (struct view_atom *)(uintptr_t)ca;
	uint32_t i, j;

	if (!a || --a->refs > 0)
		return;
	for (i = a->hash & s->mask; s->slot[i] != a; i = (i + 1) & s->mask)
		;
	/* Backward-shift delete, as in view_table.c. */
	j = i;
	for (;;) {
		struct view_atom *e;
		uint32_t home;

		s->slot[i] = NULL;
		for (;;) {
			j = (j + 1) & s->mask;
			e = s->slot[j];
			if (!e)
				goto done;
			home = e->hash & s->mask;
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		s->slot[i] = e;
		i = j;
	}
done:
	s->count--;
	s->bytes -= sizeof(*a) + a->len + 1;
	id_give_back(s, a->id);
	/* Out of the table first: a blob's atoms are put into it below. */
	if (a->kind > ATOM_QTY)
		atom_blob_drop(s, (enum atom_kind)a->kind, a->data, a->len);
	free(a);
}

const struct view_atom *atom_get(const struct view_atom *ca)
{
	if (ca)
		((struct view_atom *)(uintptr_t)ca)->refs++;
	return ca;
}
