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

#include <string.h>

#include "arena.h"
#include "view.h"

enum atom_kind {
	ATOM_STR = 1,
	ATOM_QTY,
	/* Blobs: arrays whose members hold atoms, interned whole because the
	 * same array repeats across thousands of records (a Pod's requests, a
	 * device's attributes and mappings, a claim's charges). A blob holds
	 * one reference on each atom in it. */
	ATOM_NQ,                    /* struct view_named_qty[] */
	ATOM_ATTRS,                 /* struct view_attr[] */
	ATOM_CAPS,                  /* struct view_capacity[], none with validValues */
	ATOM_MAPS,                  /* struct view_mapping[] */
	ATOM_CHARGES,               /* struct view_charge[], amounts an ATOM_NQ blob each */
	ATOM_PODST,                 /* struct view_pod_status[], resources an ATOM_NQ blob each */
	ATOM_GR,                    /* one struct view_group_resource */
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
	struct view_atom_ids ids;   /* the builder's atoms: keys are compared through them */
	uint32_t nchunks;           /* a power of two */
	uint32_t count;             /* records held */
	struct vchunk *chunk[];
};

/* The view's tables, by number: what a table holds says how its records
 * are keyed, compared and freed. The objects of a kind the view holds are
 * in the table numbered by their enum object_kind; the indexes the view
 * derives from them are numbered past every kind, so that no number is
 * both. Numbers of kinds the view does not hold name no table
 * (view_has_table()). */
enum view_index {
	VIEW_INDEX_POOLS = OBJECT_KIND_COUNT,   /* (driver, pool name) from the slices */
	VIEW_INDEX_PNAMES,      /* ("", pool name): the drivers with live slices in a pool of that name */
	VIEW_INDEX_HOLDS,       /* (driver, "pool/device"): the claims allocated the device */
	VIEW_TABLES             /* table numbers are below it */
};

static inline bool view_has_table(unsigned table)
{
	return table >= OBJECT_KIND_COUNT ? table < VIEW_TABLES : view_holds_kind(table);
}

struct vtable {
	struct vdir *dir;
	unsigned table;             /* its number: what it holds */
	bool private_copy;          /* never published yet (a relist): changed in place */
};

/* What waits for the snapshots that may still reach it: a record of the
 * table numbered what (its atoms are dropped, then it is freed), or, what
 * VIEW_LIMBO_MEM, memory to free(). */
#define VIEW_LIMBO_MEM VIEW_TABLES

struct limbo_entry {
	uint64_t seq;               /* retired while this sequence was the working one */
	unsigned what;
	void *p;
};

struct atom_set {
	/* The id table (struct view_aref): ndir chunks, each allocated when
	 * its first id is given; slot 0 of chunk 0 is id 0, never an atom. A
	 * free id's slot holds the next free id, shifted left, with the low
	 * bit set (free_id is the first; 0 ends the list). */
	struct view_atom ***dir;
	uint32_t ndir;
	uint32_t next_id;           /* ids below it have been given */
	uint32_t free_id;
	size_t id_bytes;            /* the directory and its chunks */
	struct view_atom **slot;
	uint32_t mask;              /* slots - 1 */
	uint32_t count;
	uint32_t max;
	size_t bytes;
};

struct view_pname;

struct pending_claim {
	const struct view_atom *namespace;   /* a reference of its own */
	char *name;                 /* malloc'd */
};

struct view {
	struct view_head head;      /* first: view.h's inline readers find the atoms there */
	uint64_t seq;
	const struct vdir *dir[VIEW_TABLES];   /* NULL where !view_has_table() */
	/* by kind, those view_holds_kind() */
	uint32_t count[OBJECT_KIND_COUNT];
	int64_t updated_ns[OBJECT_KIND_COUNT];
	int64_t synced_ns[OBJECT_KIND_COUNT];
	int64_t heard_ns[OBJECT_KIND_COUNT];
	struct view *next;          /* the builder's list of unreleased snapshots */
	struct view *prev;
};

struct view_builder {
	struct view_limits lim;
	uint64_t seq;               /* the working copy's sequence: the next published */
	struct vtable t[VIEW_TABLES];   /* those view_has_table() */
	/* by kind, those view_holds_kind() */
	struct vtable relist[OBJECT_KIND_COUNT];
	bool relisting[OBJECT_KIND_COUNT];
	int64_t updated_ns[OBJECT_KIND_COUNT];
	int64_t synced_ns[OBJECT_KIND_COUNT];
	int64_t heard_ns[OBJECT_KIND_COUNT];
	bool dirty;
	uint32_t tombstones;
	struct atom_set atoms;
	size_t record_bytes;
	struct limbo_entry *limbo;
	size_t limbo_head, limbo_len, limbo_alloc;
	/* Claims whose charges wait for a device the view has not seen: tried
	 * again when slices change. Keys point into the claims' records, so
	 * only valid while those records are the table's (checked on use). */
	struct pending_claim *pending;
	uint32_t npending, pending_alloc;
	bool slices_changed;        /* since the pending claims were last tried */
	bool holds_stale;           /* an update of the holds failed: rebuild at publish */
	struct view *oldest, *newest;   /* unreleased snapshots, in sequence order */
	uint32_t nviews;
	struct arena *scratch;      /* per apply: parsed attributes and policies */
	/* Slabs of records (view_slab.c), sorted by address. */
	struct vslab **slabs;
	size_t nslabs, slabs_alloc;
	struct vslab *slab_cur[VIEW_TABLES];   /* where the next bulk record of a table goes */
	int bulk;                   /* the table records are made in bulk for, or -1 */
	size_t slab_bytes;          /* slabs held */
	size_t slab_rec_bytes;      /* of records in slabs (their h.size, counted in record_bytes) */
};

/* --- tables (view_table.c) ------------------------------------------------ */

/* An empty table numbered table, made in the working sequence. 0 or
 * -ENOMEM. */
int vt_init(struct view_builder *b, struct vtable *t, unsigned table);

/* The record with key k in dir, a directory of the table numbered table,
 * or NULL. Any thread, on a published directory. */
const struct view_rec *vt_get(const struct vdir *dir, unsigned table, const struct vkey *k);

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

/* Retire p, a record of the table numbered what or VIEW_LIMBO_MEM, at the
 * working sequence (room reserved). */
void view_retire(struct view_builder *b, unsigned what, void *p);

/* Free everything retired, at the end: no snapshot is read any more. */
void view_limbo_drain(struct view_builder *b);

/* Free p now, a record of the table numbered what (its atoms are
 * dropped) or VIEW_LIMBO_MEM. */
void view_record_free(struct view_builder *b, unsigned what, void *p);

/* Drop the atoms of a Pod, Node, pool-name or hold record, of the table
 * numbered table (view_record_pod.c); view_record_free() frees it. */
void view_record_put_more(struct view_builder *b, unsigned table, void *p);

/* The amounts the scheduler adds for a result that consumed consumed[]
 * on device d (view_device_amounts(), view_hold.c). */
int view_mapping_amounts(struct view_atom_ids ids, const struct view_device *d, const struct view_amount *consumed,
			 uint32_t nconsumed,
			 struct view_amount *out, uint32_t max, enum view_charge_state *state);

/* The key of a record of the table numbered table; a hold's is (driver,
 * pool) here, and view_hold_key_eq() compares it whole. */
struct vkey view_record_key(struct view_atom_ids ids, unsigned table, const struct view_rec *r);

/* True when hold h has key k: (driver, "<pool>/<device>"). The record
 * keeps no copy of that text (24 B and a pointer in each of 40,000
 * holds at the scale of docs/performance.md). */
bool view_hold_key_eq(struct view_atom_ids ids, const struct view_hold *h, const struct vkey *k);

/* --- where records live (view_slab.c) ------------------------------------- */

#define VIEW_SLAB (64u << 10)
#define VIEW_SLAB_MAX_REC 4096u     /* larger records are malloc'd alone */

/* Records of the table numbered table are made in bulk from now on (a
 * relist, an index rebuilt whole): they go into slabs; -1 ends it. */
void view_slab_bulk(struct view_builder *b, int table);

/* size zeroed bytes for a record (in a slab while in bulk), or NULL. */
void *view_rec_alloc(struct view_builder *b, size_t size);

/* Free what view_rec_alloc() gave, of the size asked then. */
void view_rec_free_mem(struct view_builder *b, void *p, size_t size);

/* At the builder's end, every record freed: the slab list goes. */
void view_slab_free_all(struct view_builder *b);

/* --- records (view_record.c) --------------------------------------------- */

/* A record is one allocation, sized first and filled by a bump pointer. */
#define VIEW_ALIGN 8

struct bump {
	char *p;
	char *end;
};

static inline size_t rounded(size_t n)
{
	return (n + VIEW_ALIGN - 1) & ~(size_t)(VIEW_ALIGN - 1);
}

static inline void *take(struct bump *bp, size_t n)
{
	char *p = bp->p;

	bp->p += rounded(n);
	return bp->p <= bp->end ? p : NULL;
}

/* Text with no padding after it (strings need no alignment); NULL when
 * it does not fit. */
static inline const char *take_chars(struct bump *bp, struct str s)
{
	char *p = bp->p;

	if ((size_t)(bp->end - p) < s.len + 1)
		return NULL;
	if (s.len)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	bp->p += s.len + 1;
	return p;
}

/* On to the next VIEW_ALIGN boundary of the record. */
static inline void bump_align(struct bump *bp)
{
	bp->p += (VIEW_ALIGN - (uintptr_t)bp->p % VIEW_ALIGN) % VIEW_ALIGN;
}

static inline const char *take_text(struct bump *bp, struct str s)
{
	char *p = take(bp, s.len + 1);

	if (!p)
		return NULL;
	if (s.len)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

/* Bytes a UID takes in a record (0 when it is a canonical UUID), and
 * filling it in. */
size_t view_uid_size(struct str s);
int view_uid_fill(struct bump *bp, struct str s, struct view_uid *u);

/* Make u the UID of that text (in the record, NUL-terminated). */
void view_uid_set_text(struct view_uid *u, const char *text);

const struct view_atom *atom_str(struct atom_set *s, struct str v, int *rc);
const struct view_atom *atom_qty(struct atom_set *s, const struct quantity *q, int *rc);

/* Interning while a record is filled: on failure rc is set and later calls
 * do nothing. */
struct filler {
	struct atom_set *as;
	int rc;
};

static inline const struct view_atom *S(struct filler *f, struct str v)
{
	if (f->rc)
		return NULL;
	return atom_str(f->as, v, &f->rc);
}

static inline const struct view_atom *S_opt(struct filler *f, struct str v)
{
	return v.len ? S(f, v) : NULL;
}

static inline const struct view_atom *Q(struct filler *f, const struct quantity *q)
{
	if (f->rc)
		return NULL;
	return atom_qty(f->as, q, &f->rc);
}

static inline const struct view_atom *Qf(struct filler *f, const struct quantity_field *q)
{
	return q->present && q->err == 0 ? Q(f, &q->value) : NULL;
}

/* A new record for the decoded object (*out owned by the caller, who adds
 * its h.size to b->record_bytes when it keeps it). 0, or -EINVAL / -E2BIG
 * with err saying why, or -ENOMEM. Uses b->scratch. */
int view_record_slice(struct view_builder *b, const struct k8s_object *o, struct view_slice **out,
		      char *err, size_t errn);
/* A claim's record; old (NULL when none) is the record it replaces: an
 * allocation it already held keeps its charges and first-seen time, a new
 * one is charged from the working slices at now. */
int view_record_claim(struct view_builder *b, const struct k8s_object *o, const struct view_claim *old,
		      int64_t now, struct view_claim **out, char *err, size_t errn);

/* A copy of old with its charges computed again (for claims whose device
 * was missing). 0 or -ENOMEM / -E2BIG. */
int view_record_claim_recharge(struct view_builder *b, const struct view_claim *old, int64_t now,
			       struct view_claim **out);

/* A Pod's or Node's record (view_record_pod.c). */
int view_record_pod(struct view_builder *b, const struct k8s_object *o, struct view_pod **out,
		    char *err, size_t errn);
int view_record_node(struct view_builder *b, const struct k8s_object *o, struct view_node **out,
		     char *err, size_t errn);

/* True when a Pod belongs in the view: not finished (Succeeded, Failed),
 * and on a node, carrying node-allocatable claim statuses, or carrying the
 * freeze's scheduling gate. */
bool view_pod_kept(const struct k8s_object *o);

/* A pool-name record: name and the drivers (each gains a reference). */
int view_record_pname(struct view_builder *b, const struct view_atom *name,
		      const struct view_atom *const *drivers, uint32_t n, struct view_pname **out);

/* A hold record for (driver, pool, device) with n holders (copied: each
 * points at its claim's record, which holds no reference for it; the
 * holds are made again whenever a claim's record is replaced). */
int view_record_hold(struct view_builder *b, struct view_aref driver, struct view_aref pool,
		     struct view_aref device, const struct view_holder *holders, uint32_t n,
		     struct view_hold **out);

/* A pool name and the drivers with live slices in a pool of that name. */
struct view_pname {
	struct view_rec h;
	const struct view_atom *name;
	uint32_t ndrivers;
	const struct view_atom *const *drivers;
};

/* A pool record: tmpl's fields (its atoms gain a reference) and a copy of
 * the slice names. 0, -E2BIG or -ENOMEM. */
int view_record_pool(struct view_builder *b, const struct view_pool *tmpl, const struct str *names,
		     uint32_t nnames, struct view_pool **out);

/* --- atoms (view_atom.c) -------------------------------------------------- */

int atom_set_init(struct atom_set *s, uint32_t max);
void atom_set_free(struct atom_set *s);

/* atom_str() and atom_qty() (above): the atom holding s (a new reference),
 * or NULL with *rc -ENOMEM or -E2BIG (the cap). An empty s is an atom too. */

/* Drop one reference; the last frees it (a blob's atoms lose the
 * blob's reference). NULL is a no-op. */
void atom_put(struct atom_set *s, const struct view_atom *a);

/* Drop the references a capacity holds (its name, value, requestPolicy and
 * validValues' atoms): for a blob of capacities and for capacities kept in
 * a slice's record alike. */
void atom_put_capacity(struct atom_set *s, const struct view_capacity *c);

/* Drop the references a charge holds (its slice, resourceVersion,
 * fingerprint and amounts): for a blob of charges and for the charges
 * worked out before a claim's record exists alike. */
void atom_put_charge(struct atom_set *s, const struct view_charge *c);

/* The array of kind (a blob kind) at p, n bytes, interned: returns the
 * blob's data, a new reference (NULL for n == 0). The atoms in p are the
 * caller's references, and pass to the blob (dropped when an equal blob
 * exists, or on failure). Padding in p must be zero: blobs compare as
 * bytes. With *rc already nonzero, or on failure (*rc -ENOMEM or -E2BIG),
 * returns NULL after dropping p's atoms. */
const void *atom_blob(struct atom_set *s, enum atom_kind kind, const void *p, size_t n, int *rc);

/* The blob whose data p is; NULL for NULL. */
static inline const struct view_atom *view_blob_of(const void *p)
{
	return p ? (const struct view_atom *)(const void *)((const char *)p - offsetof(struct view_atom, data))
		 : NULL;
}

/* Drop the atoms an array of a blob kind holds (n bytes), as its blob does
 * when freed. */
void atom_blob_drop(struct atom_set *s, enum atom_kind kind, const void *p, size_t n);

/* True when p lies in record r's own allocation (an array kept inline),
 * false for a blob's data or NULL. */
static inline bool view_in_record(const void *r, const void *p)
{
	const char *c = r, *q = p;

	return q && q >= c && q < c + ((const struct view_rec *)r)->size;
}

/* Interning a blob while a record is filled (see struct filler). */
static inline const void *B(struct filler *f, enum atom_kind kind, const void *p, size_t n)
{
	return atom_blob(f->as, kind, p, n, &f->rc);
}

/* One more reference to a held atom (the builder's thread). NULL is a
 * no-op. Returns a. */
const struct view_atom *atom_get(const struct view_atom *a);

/* The builder's side of struct view_aref: the id table, an atom's id, and
 * the atom of an id (the builder's thread; readers use view.h's). */
static inline struct view_atom_ids atom_ids(const struct atom_set *s)
{
	return (struct view_atom_ids){ (struct view_atom **const *)s->dir };
}

static inline struct view_aref aref_of(const struct view_atom *a)
{
	return (struct view_aref){ a ? a->id : 0 };
}

/* The id of the blob whose data p is (none for NULL). */
static inline struct view_aref aref_blob(const void *p)
{
	return aref_of(view_blob_of(p));
}

static inline const struct view_atom *atom_at(const struct atom_set *s, struct view_aref r)
{
	return view_atom_id(atom_ids(s), r);
}

static inline struct str astr(const struct atom_set *s, struct view_aref r)
{
	return view_atom_str(atom_at(s, r));
}

static inline const struct quantity *aqty(const struct atom_set *s, struct view_aref r)
{
	return view_atom_qty(atom_at(s, r));
}

static inline const void *ablob(const struct atom_set *s, struct view_aref r)
{
	return view_atom_data(atom_at(s, r));
}

/* Drop the reference a record's id holds. */
static inline void atom_put_ref(struct atom_set *s, struct view_aref r)
{
	atom_put(s, atom_at(s, r));
}

/* The filler's interning (S(), S_opt(), Q(), Qf(), B()) as ids. */
static inline struct view_aref SR(struct filler *f, struct str v)
{
	return aref_of(S(f, v));
}

static inline struct view_aref SR_opt(struct filler *f, struct str v)
{
	return aref_of(S_opt(f, v));
}

static inline struct view_aref BR(struct filler *f, enum atom_kind kind, const void *p, size_t n)
{
	return aref_blob(B(f, kind, p, n));
}

/* --- pools (view_pool.c) ----------------------------------------------------- */

/* Recompute the pool (driver, pool) in the tables given from its slices:
 * removed leaves it and added joins it (either may be empty). observed:
 * a WATCH event, whose generation change or return after deletion is a
 * restart; a relist's build is not. */
int view_pool_update(struct view_builder *b, struct vtable *slices, struct vtable *pools,
		     struct str driver, struct str pool, struct str removed, struct str added,
		     int64_t now);

/* Forget the oldest tombstones over the cap. */
int view_pool_evict(struct view_builder *b, struct vtable *pools);

/* The pools of a new slices table, with what the old pools remember. */
int view_pool_rebuild(struct view_builder *b, struct vtable *slices, int64_t now, struct vtable *out);

/* The pool-name index (VIEW_INDEX_PNAMES) made again from the pools table. */
int view_pname_rebuild(struct view_builder *b);

/* Free a whole table in place (nothing reads it). */
void view_table_free(struct view_builder *b, struct vtable *t);

/* --- holds and charges (view_hold.c) ------------------------------------------ */

/* Claim record old was replaced by rec (either may be NULL): old's holds
 * leave the index and rec's join it, or, when both hold the same devices,
 * rec takes old's place in each holder list (holders point at their
 * claim's record, and old is retired). A failure marks the holds for a
 * rebuild, which view_builder_publish() does before anything is published:
 * a stale hold may point at a retired record. */
void view_hold_update(struct view_builder *b, const struct view_claim *old, const struct view_claim *rec);

/* Make the hold index again from the claims table. 0 or -ENOMEM. */
int view_hold_rebuild(struct view_builder *b);

/* Note a claim waiting for its charges; try the waiting ones again. */
int view_pending_add(struct view_builder *b, const struct view_claim *c);
void view_pending_retry(struct view_builder *b, int64_t now);
void view_pending_free(struct view_builder *b);

/* The device (driver, pool, device) in the builder's working slices, and
 * its slice; prefers the pool's newest generation. */
const struct view_device *view_builder_device(const struct view_builder *b, struct str driver,
					      struct str pool, struct str device,
					      const struct view_slice **slice);

#endif
