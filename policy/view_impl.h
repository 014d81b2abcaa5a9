/* view_impl.h - what the files of the view share. Private to the view
 * module: nothing outside policy/view*.c includes it.
 *
 * view_table.c is the persistent hash map (chunks under a directory, copy
 * on write by epoch) and the retirement list; view_atom.c interns strings
 * and quantities; view_record.c turns decoded objects into compact records;
 * view.c is the builder, the pools, publishing and the lookups. */
#ifndef DRA_GUARD_VIEW_IMPL_H
#define DRA_GUARD_VIEW_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "view.h"

enum atom_kind {
	ATOM_STR = 1,
	ATOM_QTY,
};

/* A table's key: two parts (namespace and name, driver and pool; "" and
 * name) and their hash. */
struct vkey {
	struct str a, b;
	uint32_t hash;
};

uint32_t view_hash2(struct str a, struct str b);

static inline struct vkey view_key(struct str a, struct str b)
{
	return (struct vkey){ a, b, view_hash2(a, b) };
}

struct vchunk {
	uint64_t epoch;             /* the working sequence it was made in */
	const struct view_rec *slot[VIEW_CHUNK];
};

struct vdir {
	uint64_t epoch;
	uint32_t nchunks;           /* a power of two */
	uint32_t count;             /* records held */
	struct vchunk *chunk[];
};

/* What a table holds, for equality and for freeing records. */
enum vkind {
	VK_SLICE = 0,
	VK_CLAIM,
	VK_POOL,
	VK_COUNT
};

struct vtable {
	struct vdir *dir;
	enum vkind kind;
	bool private_copy;          /* never published yet (a relist): changed in place */
};

/* What waits for the snapshots that may still reach it. */
enum limbo_kind {
	LIMBO_MEM = 0,              /* free() it */
	LIMBO_SLICE,                /* a record: drop its atoms, then free() it */
	LIMBO_CLAIM,
	LIMBO_POOL,
};

struct limbo_entry {
	uint64_t seq;               /* retired while this sequence was the working one */
	enum limbo_kind kind;
	void *p;
};

struct atom_set {
	struct view_atom **slot;
	uint32_t mask;              /* slots - 1 */
	uint32_t count;
	uint32_t max;
	size_t bytes;
};

struct view {
	uint64_t seq;
	const struct vdir *dir[VK_COUNT];
	uint32_t count[VIEW_RESOURCE_COUNT];
	int64_t updated_ns[VIEW_RESOURCE_COUNT];
	int64_t synced_ns[VIEW_RESOURCE_COUNT];
	int64_t heard_ns[VIEW_RESOURCE_COUNT];
	struct view *next;          /* the builder's list of unreleased snapshots */
	struct view *prev;
};

struct view_builder {
	struct view_limits lim;
	uint64_t seq;               /* the working copy's sequence: the next published */
	struct vtable t[VK_COUNT];
	struct vtable relist[VIEW_RESOURCE_COUNT];
	bool relisting[VIEW_RESOURCE_COUNT];
	int64_t updated_ns[VIEW_RESOURCE_COUNT];
	int64_t synced_ns[VIEW_RESOURCE_COUNT];
	int64_t heard_ns[VIEW_RESOURCE_COUNT];
	bool dirty;
	uint32_t tombstones;
	struct atom_set atoms;
	size_t record_bytes;
	struct limbo_entry *limbo;
	size_t limbo_head, limbo_len, limbo_alloc;
	struct view *oldest, *newest;   /* unreleased snapshots, in sequence order */
	uint32_t nviews;
	struct arena *scratch;      /* per apply: parsed attributes and policies */
};

/* --- tables (view_table.c) ------------------------------------------------ */

/* An empty table made in the working sequence. 0 or -ENOMEM. */
int vt_init(struct view_builder *b, struct vtable *t, enum vkind kind);

/* The record with key k, or NULL. Any thread, on a published directory. */
const struct view_rec *vt_get(const struct vdir *dir, enum vkind kind, const struct vkey *k);

/* Put rec (key k) in the working table, replacing the record with the same
 * key, which is returned in *old (not retired: the caller does that). 0 or
 * -ENOMEM (the table is as it was). Needs VT_RESERVE retirements reserved. */
#define VT_RESERVE 8
int vt_put(struct view_builder *b, struct vtable *t, const struct view_rec *rec,
	   const struct vkey *k, const struct view_rec **old);

/* Remove the record with key k; *old gets it (NULL when absent). 0 or
 * -ENOMEM. */
int vt_del(struct view_builder *b, struct vtable *t, const struct vkey *k,
	   const struct view_rec **old);

/* Retire the whole table: its chunks, its directory and (records true)
 * every record in it. */
int vt_retire_all(struct view_builder *b, struct vtable *t, bool records);

/* Visit every record of a directory. */
int vt_each(const struct vdir *dir, int (*fn)(void *ctx, const struct view_rec *r), void *ctx);

/* Bytes of a directory and its chunks. */
size_t vt_bytes(const struct vdir *dir);

/* Room for n more retirements, so that a change never fails half made:
 * every change reserves first. 0 or -ENOMEM. */
int view_limbo_reserve(struct view_builder *b, size_t n);

/* Retire p, of the kind given, at the working sequence (room reserved). */
void view_retire(struct view_builder *b, enum limbo_kind kind, void *p);

/* Free everything retired, at the end: no snapshot is read any more. */
void view_limbo_drain(struct view_builder *b);

/* Free a record of a kind now: its atoms are dropped. */
void view_record_free(struct view_builder *b, enum limbo_kind kind, void *p);

/* The key of a record of a kind. */
struct vkey view_record_key(enum vkind kind, const struct view_rec *r);

/* --- records (view_record.c) --------------------------------------------- */

/* A new record for the decoded object (*out owned by the caller, who adds
 * its h.size to b->record_bytes when it keeps it). 0, or -EINVAL / -E2BIG
 * with err saying why, or -ENOMEM. Uses b->scratch. */
int view_record_slice(struct view_builder *b, const struct k8s_object *o, struct view_slice **out,
		      char *err, size_t errn);
int view_record_claim(struct view_builder *b, const struct k8s_object *o, struct view_claim **out,
		      char *err, size_t errn);

/* A pool record: tmpl's fields (its atoms gain a reference) and a copy of
 * the slice names. 0, -E2BIG or -ENOMEM. */
int view_record_pool(struct view_builder *b, const struct view_pool *tmpl, const struct str *names,
		     uint32_t nnames, struct view_pool **out);

/* --- atoms (view_atom.c) -------------------------------------------------- */

int atom_set_init(struct atom_set *s, uint32_t max);
void atom_set_free(struct atom_set *s);

/* The atom holding s (a new reference), or NULL with *rc -ENOMEM or
 * -E2BIG (the cap). An empty s is an atom too. */
const struct view_atom *atom_str(struct atom_set *s, struct str v, int *rc);
const struct view_atom *atom_qty(struct atom_set *s, const struct quantity *q, int *rc);

/* Drop one reference; the last frees it. NULL is a no-op. */
void atom_put(struct atom_set *s, const struct view_atom *a);

#endif
