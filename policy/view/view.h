/* view.h - the cluster view: what the guard knows of the cluster, as
 * compact immutable records in immutable snapshots.
 *
 * The watcher (webhook/) feeds LIST items and WATCH events, decoded by
 * view_stream.h into struct k8s_object, to the one view_builder; the
 * builder turns each into a compact record (strings and quantities that
 * repeat are interned atoms, and so are the arrays of them that repeat: a
 * device's attributes, capacities and mappings, a Pod's requests and
 * statuses, a Node's allocatable, a claim's charges; the rest is one
 * allocation per record) and
 * publishes snapshots that request threads read with no lock. dry-run and
 * the ledger build the same view from files through the same calls.
 *
 * Sharing. A table is a hash map of record pointers cut into chunks of
 * VIEW_CHUNK slots under a directory. The builder changes its working copy
 * in place where the chunk or directory was made since the last publish,
 * and copies it first otherwise, so publishing copies only the directories
 * of the tables that changed, and an event costs a chunk at most: the view
 * is never copied whole. Records are never changed: an update makes a new
 * one. Whatever a published snapshot may still reach and the working copy
 * no longer does (records, chunks, directories, atoms) is retired with the
 * sequence number of the working copy and freed by view_builder_collect()
 * once every snapshot that could see it has been let go.
 *
 * Threads: one thread owns the builder (apply, publish, collect, release).
 * A published struct view and everything reachable from it is immutable
 * and may be read from any number of threads until it is handed back with
 * view_builder_release(). Pure: no I/O, no clock (time is passed in). */
#ifndef DRA_GUARD_VIEW_H
#define DRA_GUARD_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "quantity.h"
#include "str.h"

/* The kinds of object the view holds. The policy ConfigMap is watched
 * too, but it goes to the policy source, not into the view. What the view
 * keeps per kind is indexed by enum object_kind (arrays of
 * OBJECT_KIND_COUNT, the kinds it does not hold left unused). */
static inline bool view_holds_kind(enum object_kind k)
{
	return k == OBJECT_RESOURCE_SLICE || k == OBJECT_RESOURCE_CLAIM || k == OBJECT_POD || k == OBJECT_NODE;
}

enum view_event {
	VIEW_ADDED = 0,
	VIEW_MODIFIED,
	VIEW_DELETED,
	VIEW_BOOKMARK,
	VIEW_ERROR,
	VIEW_EVENT_COUNT
};

/* Slots per chunk of a table. */
#define VIEW_CHUNK 64

/* An interned string, quantity or array (a blob): immutable, shared by
 * every record that holds the same bytes. */
struct view_atom {
	uint32_t refs;              /* the builder's; readers never look */
	uint32_t hash;
	uint32_t len;               /* bytes of text (quantities: sizeof(struct quantity)) */
	uint32_t kind : 8;
	uint32_t id : 24;           /* its slot in the id table (struct view_aref) */
	char data[] __attribute__((aligned(16)));
};

static inline struct str view_atom_str(const struct view_atom *a)
{
	return a ? (struct str){ a->data, a->len } : (struct str){ "", 0 };
}

static inline const struct quantity *view_atom_qty(const struct view_atom *a)
{
	return a ? (const struct quantity *)(const void *)a->data : NULL;
}

/* A blob's data (an interned array), NULL for none. */
static inline const void *view_atom_data(const struct view_atom *a)
{
	return a ? a->data : NULL;
}

/* An atom as a record holds it: its id, 4 bytes where a pointer took 8
 * (a claim holds ten, a Pod four: 30 B a claim at the scale of
 * docs/performance.md). 0 is none (NULL). A distinct type, so that no
 * reader takes an id for a pointer. The id's slot is written before any
 * snapshot that reaches it is published and holds the atom while any
 * live snapshot can reach a record holding the id; a freed atom's id is
 * used again only after that (view_atom.c). */
struct view_aref {
	uint32_t id;
};

/* The id table: chunks of VIEW_ATOM_CHUNK atoms under a directory sized
 * once, when the builder is made, from view_limits.max_atoms: it never
 * moves, so every snapshot reads the same one, with no lock. */
#define VIEW_ATOM_CHUNK_BITS 12
#define VIEW_ATOM_CHUNK (1u << VIEW_ATOM_CHUNK_BITS)
#define VIEW_ATOM_MAX_ID ((1u << 24) - 1)

struct view_atom_ids {
	struct view_atom **const *chunk;
};

static inline const struct view_atom *view_atom_id(struct view_atom_ids ids, struct view_aref r)
{
	return r.id ? ids.chunk[r.id >> VIEW_ATOM_CHUNK_BITS][r.id & (VIEW_ATOM_CHUNK - 1)] : NULL;
}

static inline bool view_aref_eq(struct view_aref a, struct view_aref b)
{
	return a.id == b.id;
}

/* What every snapshot starts with (struct view, view_impl.h): its atoms,
 * for the inline readers below. */
struct view;
struct view_head {
	struct view_atom_ids ids;
};

/* The id table of snapshot v: the builder's, the same in all its
 * snapshots, and good while the builder lives (a reader that keeps records
 * past one snapshot, as the ledger, keeps this rather than the snapshot). */
static inline struct view_atom_ids view_ids(const struct view *v)
{
	return ((const struct view_head *)(const void *)v)->ids;
}

/* The atom r of a record of snapshot v (NULL for none). Any snapshot of
 * the same builder reads the same: the table is the builder's. */
static inline const struct view_atom *view_atom_at(const struct view *v, struct view_aref r)
{
	return view_atom_id(view_ids(v), r);
}

static inline struct str view_str(const struct view *v, struct view_aref r)
{
	return view_atom_str(view_atom_at(v, r));
}

static inline const struct quantity *view_qty(const struct view *v, struct view_aref r)
{
	return view_atom_qty(view_atom_at(v, r));
}

/* A blob's data (an interned array), NULL for none. */
static inline const void *view_blob_at(const struct view *v, struct view_aref r)
{
	return view_atom_data(view_atom_at(v, r));
}

/* Bytes of a blob's data (0 for none). */
static inline uint32_t view_blob_len(const struct view *v, struct view_aref r)
{
	const struct view_atom *a = view_atom_at(v, r);

	return a ? a->len : 0;
}

/* A UID in 16 bytes, read through the functions below: its bytes when it
 * is a canonical lowercase UUID of the RFC 4122 variant (every UID the API
 * server makes); else bin[8] has the top bits 11, which that variant never
 * has, and bin[0..7] point at its text, NUL-terminated, in the record.
 * (A pointer beside the bytes cost 8 B in each of 450,000 claims, Pods,
 * consumers and holders at the scale of docs/performance.md.) */
struct view_uid {
	uint8_t bin[16];
};

/* The text of a UID not held as bytes; NULL for one that is. */
const char *view_uid_text(const struct view_uid *u);

/* The UUID's 16 bytes: those of its text for one held as text (zero when
 * that text is not a canonical UUID). */
void view_uid_bytes(const struct view_uid *u, uint8_t out[16]);

/* "8-4-4-4-12" into buf (at least 37 bytes); the text as it was otherwise. */
void view_uid_format(const struct view_uid *u, char *buf, size_t n);
/* True when u is the UID written s. */
bool view_uid_eq(const struct view_uid *u, struct str s);

/* A UID's text parsed once, for a caller that compares the same text with
 * many records (the held claims' sweep): view_uid_eq_probe(u, s, p) says
 * what view_uid_eq(u, s) says, without parsing s again. */
struct view_uid_probe {
	uint8_t bin[16];
	bool parsed;                /* s is "8-4-4-4-12" hex; bin holds it */
};

/* Fill p from s. */
void view_uid_probe_set(struct view_uid_probe *p, struct str s);

/* view_uid_eq(u, s) for p filled from the same s. */
bool view_uid_eq_probe(const struct view_uid *u, struct str s, const struct view_uid_probe *p);

enum view_attr_type {
	VIEW_ATTR_INT = 0,
	VIEW_ATTR_BOOL,
	VIEW_ATTR_STRING,
	VIEW_ATTR_VERSION,
};

struct view_attr {
	const struct view_atom *name;     /* qualified, as written ("gpu.example.com/numaNode") */
	enum view_attr_type type;
	bool b;
	int64_t i;
	const struct view_atom *s;        /* string and version values */
};

/* A capacity and its requestPolicy (all NULL / 0 when it has none). */
struct view_capacity {
	const struct view_atom *name;
	const struct view_atom *value;    /* quantity */
	bool has_policy;
	const struct view_atom *dflt;     /* requestPolicy.default */
	const struct view_atom *min, *max, *step;   /* validRange */
	uint32_t nvalid;
	const struct view_atom **valid;   /* validValues */
};

struct view_mapping {
	const struct view_atom *resource;
	enum mapping_shape shape;
	const struct view_atom *multiplier;           /* NULL when absent */
	const struct view_atom *capacity_key;         /* NULL when absent */
	const struct view_atom *capacity_multiplier;  /* 1.37 */
	const struct view_atom *overhead_per_pod;     /* 1.37 */
	const struct view_atom *overhead_per_container;
};

/* 32 B: the capacities stay a pointer, to a blob or, when some capacity
 * has validValues, into the slice's record. */
struct view_device {
	struct view_aref name;
	struct view_aref node_name;   /* perDeviceNodeSelection, or none */
	struct view_aref attrs;       /* a blob of nattrs struct view_attr (view_device_attrs()) */
	struct view_aref mappings;    /* a blob of nmappings struct view_mapping (view_device_mappings()) */
	uint16_t nattrs, ncapacity, nmappings;
	bool allow_multiple_allocations : 1;   /* bits beside the counts */
	bool all_nodes : 1;
	bool has_node_selector : 1;
	const struct view_capacity *capacity;
};

static inline const struct view_attr *view_device_attrs(const struct view *v, const struct view_device *d)
{
	return (const struct view_attr *)view_blob_at(v, d->attrs);
}

static inline const struct view_mapping *view_device_mappings(const struct view *v, const struct view_device *d)
{
	return (const struct view_mapping *)view_blob_at(v, d->mappings);
}

/* Every record starts with its key's hash. */
struct view_rec {
	uint32_t hash;
	uint32_t size;              /* bytes of the record's own allocation */
};

/* The slice's name and resourceVersion follow the struct (view_slice_name(),
 * view_slice_rv()), then its devices. */
struct view_slice {
	struct view_rec h;
	struct view_aref driver;
	struct view_aref pool;
	struct view_aref node_name;       /* none unless spec.nodeName */
	struct view_aref mapping_label;   /* dra-guard.io/mappings, or none */
	struct view_aref fingerprint;     /* of its mappings as they are (mutation.h), none without */
	uint32_t ndevices;
	int64_t mapping_changed_ns; /* when an update was seen to change the fingerprint; 0 never */
	int64_t generation;
	int64_t resource_slice_count;
	bool all_nodes;
	bool has_node_selector;
	bool per_device_node_selection;
	const struct view_device *devices;
};

static inline const char *view_slice_name(const struct view_slice *s)
{
	return (const char *)(const void *)(s + 1);
}

static inline const char *view_slice_rv(const struct view_slice *s)
{
	const char *n = view_slice_name(s);

	return n + strlen(n) + 1;
}

/* A pool, keyed (driver, pool name): derived from its slices, and kept
 * after the last one is deleted so that the highest generation ever seen
 * survives a driver restart (see view_limits.pool_tombstones). */
struct view_pool {
	struct view_rec h;
	struct view_aref driver;
	struct view_aref name;
	int64_t max_generation;     /* highest ever seen, kept after deletion */
	int64_t generation;         /* newest among the live slices */
	int64_t resource_slice_count;   /* of the slices at that generation */
	uint32_t nslices;           /* live slices */
	uint32_t nslices_at_generation;
	int64_t changed_ns;         /* when the generation last changed or the pool was made */
	int64_t emptied_ns;         /* when its last slice went; 0 while it has slices */
	int64_t restarted_ns;       /* when the view saw it come back after its slices were
				     * all deleted, or change generation (a driver restart);
				     * 0 when it has been as it is since the view began */
	uint32_t nnames;
	const char *const *slice_names;   /* the live slices, sorted */
};

struct view_named_qty {
	const struct view_atom *name;
	const struct view_atom *value;
};

struct view_result {
	struct view_aref request;
	struct view_aref driver;
	struct view_aref pool;
	struct view_aref device;
	struct view_aref share_id;            /* none when absent */
	/* consumedCapacity, a blob of struct view_named_qty (the same amounts
	 * repeat across the claims of a shared device), its count read from
	 * the blob: view_result_consumed(), view_result_nconsumed(). */
	struct view_aref consumed;
};

static inline const struct view_named_qty *view_result_consumed(const struct view *v, const struct view_result *r)
{
	return (const struct view_named_qty *)view_blob_at(v, r->consumed);
}

static inline uint32_t view_result_nconsumed(const struct view *v, const struct view_result *r)
{
	return view_blob_len(v, r->consumed) / (uint32_t)sizeof(struct view_named_qty);
}

/* A consumer's apiGroup and resource: interned as a pair (a blob), the
 * same for every Pod that reserves a claim. */
struct view_group_resource {
	const struct view_atom *api_group;   /* "" for the core group */
	const struct view_atom *resource;
};

struct view_consumer {
	struct view_aref gr;        /* a struct view_group_resource blob */
	uint32_t name;              /* offset of its text in the claim's record */
	struct view_uid uid;
};

/* How an allocation result was charged: what the scheduler adds to the
 * node for it, computed from the device's mappings the first time the
 * view saw the allocation, and kept while the allocation stays (a later
 * mapping change does not move it). */
enum view_charge_state {
	VIEW_CHARGE_OK = 0,
	VIEW_CHARGE_NO_DEVICE,      /* the device is in no slice the view holds (yet) */
	VIEW_CHARGE_NO_CONSUMED,    /* a capacity mapping, but no consumedCapacity: the
				     * scheduler cannot compute it either */
};

struct view_charge {
	enum view_charge_state state;
	uint32_t namounts;
	const struct view_atom *slice;        /* name of the slice it was charged from */
	const struct view_atom *slice_rv;     /* its resourceVersion then */
	const struct view_atom *fingerprint;  /* its mapping fingerprint then, or NULL */
	const struct view_named_qty *amounts; /* resource -> amount, by resource name */
};

/* The fields are ordered so that nothing pads them: the results start 52
 * B in. The claim's name and resourceVersion follow its consumers, read
 * through view_claim_name() and view_claim_rv(). */
struct view_claim {
	struct view_rec h;
	struct view_uid uid;
	int64_t allocated_ns;       /* when the view first saw this allocation; 0 unallocated */
	struct view_aref namespace;
	struct view_aref node_name;   /* when node_local */
	struct view_aref charges;   /* a blob of one struct view_charge per result when
				     * allocated (view_claim_charges()), else none */
	uint16_t nresults;          /* narrow: the decoder's lists stop at 4,096 */
	uint16_t nreserved;
	bool allocated : 1;
	bool node_local : 1;        /* nodeSelector: metadata.name In [one node] */
	bool deleting : 1;
	bool charge_pending : 1;    /* some result is not charged yet (device not seen) */
	/* nresults, then the nreserved consumers of view_claim_reserved_for(),
	 * in the record (no pointers to them: 16 B in each claim). */
	struct view_result results[];
};

/* The claim's reservedFor: nreserved consumers. */
static inline const struct view_consumer *view_claim_reserved_for(const struct view_claim *c)
{
	return (const struct view_consumer *)(const void *)&c->results[c->nresults];
}

/* Its name (NUL-terminated), right after the consumers: no offset kept. */
static inline const char *view_claim_name(const struct view_claim *c)
{
	return (const char *)(const void *)(view_claim_reserved_for(c) + c->nreserved);
}

/* Its resourceVersion, right after the name. */
static inline const char *view_claim_rv(const struct view_claim *c)
{
	const char *n = view_claim_name(c);

	return n + strlen(n) + 1;
}

static inline const char *view_consumer_name(const struct view_claim *c, const struct view_consumer *k)
{
	return (const char *)(const void *)c + k->name;
}

static inline const struct view_group_resource *view_consumer_gr(const struct view *v, const struct view_consumer *k)
{
	return (const struct view_group_resource *)view_blob_at(v, k->gr);
}

/* One charge per result when allocated; NULL otherwise. */
static inline const struct view_charge *view_claim_charges(const struct view *v, const struct view_claim *c)
{
	return (const struct view_charge *)view_blob_at(v, c->charges);
}

/* A Pod on a node (or with node-allocatable statuses): what the ledger
 * reads of it. */
struct view_pod_status {
	uint16_t claim;             /* index in claims */
	uint16_t nresources;
	const struct view_named_qty *resources;
};

/* 48 B and 2 B a claim, then the texts: the Pod's name, then its claims'
 * names, each at the offset claims[i] from the name (view_pod_name(),
 * view_pod_claim()). */
struct view_pod {
	struct view_rec h;
	struct view_uid uid;
	struct view_aref namespace;
	struct view_aref node_name;   /* none while unbound */
	struct view_aref requests;    /* a blob of struct view_named_qty (pod_requests.h), by
				       * resource name: view_pod_requests() */
	struct view_aref statuses;    /* a blob of struct view_pod_status
				       * (nodeAllocatableResourceClaimStatuses; claim names not
				       * among claims are added to claims): view_pod_statuses() */
	uint32_t pod_level;         /* bit i: requests[i] is a Pod-level request */
	/* Narrow: at most 32 requests (POD_REQUESTS_MAX_RESOURCES), 256
	 * claims and statuses (more are refused). */
	unsigned nrequests : 6;
	unsigned nclaims : 9;
	unsigned nstatuses : 9;
	bool gated : 1;             /* carries the scheduling gate MODEL_FREEZE_GATE */
	/* The nclaims claims it uses (generated names resolved): where each
	 * name starts, from the Pod's name. */
	uint16_t claims[];
};

static inline const char *view_pod_name(const struct view_pod *p)
{
	return (const char *)(const void *)&p->claims[p->nclaims];
}

static inline const char *view_pod_claim(const struct view_pod *p, uint32_t i)
{
	return view_pod_name(p) + p->claims[i];
}

static inline const struct view_named_qty *view_pod_requests(const struct view *v, const struct view_pod *p)
{
	return (const struct view_named_qty *)view_blob_at(v, p->requests);
}

static inline const struct view_pod_status *view_pod_statuses(const struct view *v, const struct view_pod *p)
{
	return (const struct view_pod_status *)view_blob_at(v, p->statuses);
}

struct view_node {
	struct view_rec h;
	uint32_t nallocatable;
	struct view_aref allocatable;   /* a blob of struct view_named_qty: node resources
					 * only, by name (view_node_allocatable()) */
	/* the name follows (view_node_name()) */
};

static inline const char *view_node_name(const struct view_node *n)
{
	return (const char *)(const void *)(n + 1);
}

static inline const struct view_named_qty *view_node_allocatable(const struct view *v, const struct view_node *n)
{
	return (const struct view_named_qty *)view_blob_at(v, n->allocatable);
}

/* Who holds a device: every allocated claim whose results name it. The
 * claim's record is the one of the same snapshot (view_claim_get() gives
 * the same pointer): its namespace, name, UID and the result's share_id
 * are read there, not copied (56 B less in each of 100,000 holders at the
 * scale of docs/performance.md). */
struct view_holder {
	const struct view_claim *claim;
	uint32_t result;            /* index of the result in claim->results */
};

/* Keyed (driver, "<pool>/<device>"): device names have no '/'. */
struct view_hold {
	struct view_rec h;
	struct view_aref driver;
	struct view_aref pool;
	struct view_aref device;
	uint32_t nholders;
	struct view_holder holders[];
};

/* Caps, set when the builder is made; going over one is an error. */
struct view_limits {
	uint32_t max_objects;       /* per resource */
	uint32_t max_atoms;         /* distinct interned strings, quantities and arrays;
				     * at most VIEW_ATOM_MAX_ID (an atom's id is 24 bits) */
	uint32_t pool_tombstones;   /* emptied pools kept; the oldest go first */
	uint32_t max_pool_slices;   /* slices in one pool */
};

/* 1,000,000 objects, 4,000,000 atoms, 100,000 tombstones, 4,096 slices. */
void view_limits_default(struct view_limits *lim);

/* --- a published snapshot: any thread ------------------------------------ */

struct view;

uint64_t view_seq(const struct view *v);

/* Objects of kind k in the view (0 for a kind it does not hold). */
uint32_t view_count(const struct view *v, enum object_kind k);
uint32_t view_pool_count(const struct view *v);

/* When the objects of kind k last changed (the now given with the event
 * or the LIST), and when their current LIST completed; 0 before (and for
 * a kind the view does not hold). */
int64_t view_updated_ns(const struct view *v, enum object_kind k);
int64_t view_synced_ns(const struct view *v, enum object_kind k);

/* When the watch of kind k last proved alive: its last LIST, event or
 * bookmark (the now given to view_builder_touch() or an event). */
int64_t view_heard_ns(const struct view *v, enum object_kind k);

/* True when some resource the view has heard of was last heard of more
 * than max_age_ns before now_ns: rules that need a fresh view cannot
 * decide on it. (A resource never heard of is not watched.) */
bool view_stale(const struct view *v, int64_t now_ns, int64_t max_age_ns);

/* Lookups; NULL when absent. Borrowed from v. */
const struct view_slice *view_slice_get(const struct view *v, struct str name);
const struct view_pool *view_pool_get(const struct view *v, struct str driver, struct str pool);
const struct view_claim *view_claim_get(const struct view *v, struct str ns, struct str name);
const struct view_pod *view_pod_get(const struct view *v, struct str ns, struct str name);
const struct view_node *view_node_get(const struct view *v, struct str name);
const struct view_hold *view_hold_get(const struct view *v, struct str driver, struct str pool,
				      struct str device);

/* The drivers that have live slices in a pool named pool (n at most max
 * into out); returns how many there are. */
uint32_t view_pool_drivers(const struct view *v, struct str pool, const struct view_atom **out,
			   uint32_t max);

/* The device named (driver, pool, device) in a slice of the pool's newest
 * generation, and that slice; NULL when none has it. */
const struct view_device *view_device_current(const struct view *v, struct str driver, struct str pool,
					      struct str device, const struct view_slice **slice);

/* The amounts the scheduler adds for allocation result r on device d: for
 * each mapping, device-count mode gives the multiplier (1 when absent, as
 * the API server defaults it), capacity mode consumedCapacity[capacityKey]
 * times the multiplier (a result without that key adds nothing for the
 * resource; one with no consumedCapacity at all cannot be computed:
 * VIEW_CHARGE_NO_CONSUMED). Up to max into out (name = the resource);
 * returns how many, or -ERANGE for a product no quantity holds, -E2BIG past
 * max, and sets *state. The 1.37 shape counts its mapping the same way
 * (deviceMultiplier; capacityKey times capacityMultiplier); its per-Pod and
 * per-container overheads are not charged. */
struct view_amount {
	struct str resource;
	struct quantity value;
};
int view_device_amounts(const struct view *v, const struct view_device *d, const struct view_result *r,
			struct view_amount *out, uint32_t max, enum view_charge_state *state);

/* The device named (driver, pool, device) and its slice, or NULL. */
const struct view_device *view_device_find(const struct view *v, struct str driver, struct str pool,
					   struct str device, const struct view_slice **slice);

/* Iteration: one typed walk per table, with no callback.
 *
 *	struct view_iter it;
 *	const struct view_claim *c;
 *
 *	for (c = view_first_claim(&it, v); c; c = view_next_claim(&it))
 *		...
 *
 * view_first_<x>() starts it over the table of snapshot v and returns its
 * first record, view_next_<x>() the one after; NULL when there are no more
 * (and again on every later call). Every record of the table comes once
 * (the pools' with the emptied pools still kept, as view_pool_count()).
 *
 * Order: the table's slot order (by key hash), not by name. It is the same
 * for every walk of one snapshot, from any thread, and may differ in the
 * next snapshot: a caller whose result depends on the order sorts (the
 * ledger sorts Pods by namespace and name).
 *
 * Lifetime: the iterator and the records it returns borrow from v; they
 * are good until v is handed back with view_builder_release(), and later
 * snapshots (apply, relist, publish) do not change what a walk of v sees.
 * An iterator owns nothing (nothing to free; stopping early is fine) and
 * any number may walk one snapshot at once. A next of another table than
 * the first started it (view_next_pod() on slices) returns NULL, and so
 * does any next of a zeroed iterator. */
struct vdir;
struct view_iter {
	const struct vdir *dir;     /* the table, borrowed from the snapshot */
	uint32_t chunk, slot;       /* the next slot to look at */
	uint32_t table;             /* which table it walks */
};

const struct view_slice *view_first_slice(struct view_iter *it, const struct view *v);
const struct view_slice *view_next_slice(struct view_iter *it);
const struct view_pool *view_first_pool(struct view_iter *it, const struct view *v);
const struct view_pool *view_next_pool(struct view_iter *it);
const struct view_claim *view_first_claim(struct view_iter *it, const struct view *v);
const struct view_claim *view_next_claim(struct view_iter *it);
const struct view_pod *view_first_pod(struct view_iter *it, const struct view *v);
const struct view_pod *view_next_pod(struct view_iter *it);
const struct view_node *view_first_node(struct view_iter *it, const struct view *v);
const struct view_node *view_next_node(struct view_iter *it);

/* --- the builder: one thread -------------------------------------------- */

struct view_builder;

/* An empty view. lim NULL: view_limits_default(). 0 or -ENOMEM. */
int view_builder_new(const struct view_limits *lim, struct view_builder **out);

/* Free the builder and every snapshot it published (none may still be
 * read). NULL is a no-op. */
void view_builder_free(struct view_builder *b);

/* What the builder holds, for metrics. */
struct view_stats {
	uint32_t objects[OBJECT_KIND_COUNT];   /* by kind: those view_holds_kind() */
	uint32_t pools, pool_tombstones;
	uint32_t holds;             /* devices held by claims */
	uint32_t charge_pending;    /* allocated claims waiting for their devices */
	uint32_t atoms;
	size_t record_bytes;        /* records, their chunks and directories */
	size_t atom_bytes;          /* the atoms themselves */
	size_t atom_id_bytes;       /* their id table (struct view_aref) */
	size_t retired;             /* objects waiting for snapshots to be let go */
	uint32_t snapshots;         /* published and not yet released */
};

void view_builder_stats(const struct view_builder *b, struct view_stats *st);

/* Apply one WATCH event (ADDED, MODIFIED, DELETED) for obj, of kind k (a
 * kind the view holds), at now. An object of another kind, whose name is
 * missing, or whose records would pass a cap, is refused with err (n
 * bytes) saying why: 0, -EINVAL, -E2BIG, -ENOMEM. On error the view is as
 * it was. */
int view_builder_apply(struct view_builder *b, enum object_kind k, enum view_event ev,
		       const struct k8s_object *obj, int64_t now_ns, char *err, size_t n);

/* A relist: view_builder_relist_begin() starts an empty table for kind k that
 * view_builder_relist_add() fills from the LIST's items, while the
 * published view and WATCH events of other resources go on as before;
 * view_builder_relist_commit() swaps it in whole (the old records are
 * retired), view_builder_relist_abort() drops it. For slices the pools are
 * rebuilt from the new slices, keeping the highest generation ever seen
 * and the tombstones of the old ones. One relist per kind at a time: begin
 * while one is open is -EBUSY; a kind the view does not hold is -EINVAL. */
int view_builder_relist_begin(struct view_builder *b, enum object_kind k);
int view_builder_relist_add(struct view_builder *b, enum object_kind k,
			    const struct k8s_object *obj, int64_t now_ns, char *err, size_t n);
int view_builder_relist_commit(struct view_builder *b, enum object_kind k, int64_t now_ns);
void view_builder_relist_abort(struct view_builder *b, enum object_kind k);

/* The watch of kind k proved alive at now (a bookmark, or an event the
 * view does not hold): recorded in the next snapshot. */
void view_builder_touch(struct view_builder *b, enum object_kind k, int64_t now_ns);

/* view_builder_touch() of every kind the view holds: a view loaded from
 * files or a log, heard of whole at now. */
void view_builder_touch_all(struct view_builder *b, int64_t now_ns);

/* True when something changed since the last publish. */
bool view_builder_dirty(const struct view_builder *b);

/* Publish the working copy as a new snapshot (*out, owned by the builder
 * until released). 0 or -ENOMEM. */
int view_builder_publish(struct view_builder *b, const struct view **out);

/* Hand back a published snapshot that nobody reads any more; it is freed,
 * and what only it and older ones could reach becomes collectable. */
void view_builder_release(struct view_builder *b, const struct view *v);

/* Free what no unreleased snapshot can reach. Returns how many objects
 * were freed. */
size_t view_builder_collect(struct view_builder *b);

#endif
