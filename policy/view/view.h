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
	uint8_t kind;
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

struct view_device {
	const struct view_atom *name;
	const struct view_atom *node_name;   /* perDeviceNodeSelection, or NULL */
	uint16_t nattrs, ncapacity, nmappings;
	bool allow_multiple_allocations : 1;   /* bits beside the counts: 48 B a device */
	bool all_nodes : 1;
	bool has_node_selector : 1;
	const struct view_attr *attrs;
	const struct view_capacity *capacity;
	const struct view_mapping *mappings;
};

/* Every record starts with its key's hash. */
struct view_rec {
	uint32_t hash;
	uint32_t size;              /* bytes of the record's own allocation */
};

struct view_slice {
	struct view_rec h;
	const char *name;           /* NUL-terminated */
	const char *resource_version;
	const struct view_atom *driver;
	const struct view_atom *pool;
	const struct view_atom *node_name;   /* NULL unless spec.nodeName */
	const struct view_atom *mapping_label;   /* dra-guard.io/mappings, or NULL */
	const struct view_atom *fingerprint;     /* of its mappings as they are (mutation.h), NULL without */
	int64_t mapping_changed_ns; /* when an update was seen to change the fingerprint; 0 never */
	int64_t generation;
	int64_t resource_slice_count;
	bool all_nodes;
	bool has_node_selector;
	bool per_device_node_selection;
	uint32_t ndevices;
	const struct view_device *devices;
};

/* A pool, keyed (driver, pool name): derived from its slices, and kept
 * after the last one is deleted so that the highest generation ever seen
 * survives a driver restart (see view_limits.pool_tombstones). */
struct view_pool {
	struct view_rec h;
	const struct view_atom *driver;
	const struct view_atom *name;
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
	const struct view_atom *request;
	const struct view_atom *driver;
	const struct view_atom *pool;
	const struct view_atom *device;
	const struct view_atom *share_id;     /* NULL when absent */
	/* consumedCapacity, view_result_nconsumed() entries; NULL when none.
	 * Interned (a blob: the same amounts repeat across the claims of a
	 * shared device), its count read from the blob: 48 B a result. */
	const struct view_named_qty *consumed;
};

static inline uint32_t view_result_nconsumed(const struct view_result *r)
{
	const struct view_atom *a;

	if (!r->consumed)
		return 0;
	a = (const struct view_atom *)(const void *)((const char *)r->consumed - offsetof(struct view_atom, data));
	return a->len / (uint32_t)sizeof(struct view_named_qty);
}

/* A consumer's apiGroup and resource: interned as a pair (a blob), the
 * same for every Pod that reserves a claim. */
struct view_group_resource {
	const struct view_atom *api_group;   /* "" for the core group */
	const struct view_atom *resource;
};

struct view_consumer {
	const struct view_group_resource *gr;
	const char *name;
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

struct view_claim {
	struct view_rec h;
	const struct view_atom *namespace;
	const char *name;
	const char *resource_version;
	struct view_uid uid;
	bool allocated;
	bool node_local;            /* nodeSelector: metadata.name In [one node] */
	bool deleting;
	bool charge_pending;        /* some result is not charged yet (device not seen) */
	uint16_t nresults;          /* narrow: the decoder's lists stop at 4,096 */
	uint16_t nreserved;
	const struct view_atom *node_name;   /* when node_local */
	int64_t allocated_ns;       /* when the view first saw this allocation; 0 unallocated */
	int64_t charged_ns;         /* when its charges were computed; 0 none */
	const struct view_charge *charges;   /* one per result when allocated, else NULL */
	/* nresults, then the nreserved consumers of view_claim_reserved_for(),
	 * in the record (no pointers to them: 16 B in each claim). */
	struct view_result results[];
};

/* The claim's reservedFor: nreserved consumers. */
static inline const struct view_consumer *view_claim_reserved_for(const struct view_claim *c)
{
	return (const struct view_consumer *)(const void *)&c->results[c->nresults];
}

/* A Pod on a node (or with node-allocatable statuses): what the ledger
 * reads of it. */
struct view_pod_status {
	uint16_t claim;             /* index in claims */
	uint16_t nresources;
	const struct view_named_qty *resources;
};

struct view_pod {
	struct view_rec h;
	const struct view_atom *namespace;
	const char *name;
	struct view_uid uid;
	const struct view_atom *node_name;   /* NULL while unbound */
	const struct view_named_qty *requests;   /* pod_requests.h, by resource name */
	const struct view_pod_status *statuses;  /* nodeAllocatableResourceClaimStatuses;
						  * claim names not among claims are added to claims */
	uint32_t pod_level;         /* bit i: requests[i] is a Pod-level request */
	/* Narrow, so that the record's header is 80 B: at most 32 requests
	 * (POD_REQUESTS_MAX_RESOURCES), 256 claims and statuses (more are
	 * refused). */
	unsigned nrequests : 6;
	unsigned nclaims : 9;
	unsigned nstatuses : 9;
	bool gated : 1;             /* carries the scheduling gate MODEL_FREEZE_GATE */
	/* The nclaims claims it uses (generated names resolved), in the
	 * record (no pointer to them). */
	const char *claims[];
};

struct view_node {
	struct view_rec h;
	const char *name;
	uint32_t nallocatable;
	const struct view_named_qty *allocatable;   /* node resources only, by name */
};

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
	const struct view_atom *driver;
	const struct view_atom *pool;
	const struct view_atom *device;
	uint32_t nholders;
	struct view_holder holders[];
};

/* Caps, set when the builder is made; going over one is an error. */
struct view_limits {
	uint32_t max_objects;       /* per resource */
	uint32_t max_atoms;         /* distinct interned strings, quantities and arrays */
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
int view_device_amounts(const struct view_device *d, const struct view_result *r, struct view_amount *out,
			uint32_t max, enum view_charge_state *state);

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
	size_t atom_bytes;
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
