/* ledger.h - what every claim adds to every node, derived from a view.
 *
 * The ledger is a pure function of a cluster-view snapshot, the policy (it
 * names the NUMA attributes) and the time: nothing is stored anywhere
 * else, so every replica watching the same API server derives the same
 * ledger, and dry-run and `dra-guard ledger` derive it from files.
 *
 * Entries. One per (node, claim, allocation result): the amounts the
 * scheduler adds for it (the claim's charge, view.h: computed from the
 * device's mappings when the view first saw the allocation, and kept at
 * that mapping version however the slice changes later), the NUMA zone
 * of the device, the mapping version (slice, resourceVersion,
 * fingerprint) and when the allocation was first observed. A claim
 * counts once however many Pods reserve it and however often its status
 * is sent again; its entries leave with its allocation.
 *
 * Which node. A node-local claim (allocation nodeSelector naming one
 * node) is charged on that node from allocation to deallocation. A claim
 * whose nodeSelector can match several nodes (network-attached devices)
 * is charged once on every node where a Pod that reserves it runs: each
 * such Pod's node-allocatable status carries the claim's amounts, so the
 * scheduler counts the claim once per node of a reserving Pod.
 *
 * Node accounts. Per node and resource, in the scheduler's units (cpu in
 * millicores, everything else in whole units, rounded up; the total is
 * rounded once per Pod, its requests and its claims' amounts summed
 * exactly first, as framework.Resource of PodRequests does; the other
 * figures round each Pod's requests and each claim's amount):
 * allocatable (the Node's status.allocatable); the ordinary requests of
 * its Pods (pod_requests.h); the DRA contributions, split by NUMA zone
 * ("unknown" when the device names none); what the node's Pod statuses
 * say (each claim once per node); the part of the DRA amounts inside a
 * Pod's own Pod-level request (the scheduler does not add it on top); and
 * the total the scheduler checks against allocatable. The node total of
 * DRA equals the sum of its zones by construction. Two figures say what
 * the scheduler does not count of it: "omitted", claims a Pod on the node
 * reserves that none of the node's Pod statuses names (kube-scheduler 1.36
 * writes a status only for claims allocated in the cycle that binds the
 * Pod: the node is committed more than it counts), and "unbound", claims
 * no Pod on the node reserves (allocated ahead of the binding, or left
 * allocated by an Unreserve). "balanced" says the rest equals what the Pod
 * statuses say.
 *
 * A ledger owns its node and entry arrays; names and claims in it borrow
 * from the view snapshot, which must outlive it. Pure; a built ledger may
 * be read from any thread. */
#ifndef DRA_GUARD_LEDGER_H
#define DRA_GUARD_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "policy.h"
#include "view.h"

#define LEDGER_ZONE_UNKNOWN "unknown"
/* Distinct NUMA zones per node and resource kept apart; more are an error. */
#define LEDGER_MAX_ZONES 64
/* Node resources per node. */
#define LEDGER_MAX_RESOURCES 32

/* Whether kube-scheduler counts an entry on its node. */
enum ledger_counted {
	LEDGER_COUNTED = 0,                  /* a Pod status on the node names the claim */
	LEDGER_OMITTED,                      /* a Pod on the node reserves it; no status names it */
	LEDGER_UNBOUND,                      /* no Pod on the node reserves it (yet, or any more) */
};

struct ledger_entry {
	const struct view_claim *claim;      /* borrowed from the view */
	uint32_t result;                     /* its index in claim->results and ->charges */
	struct str node;
	struct str zone;                     /* NUMA zone, or "unknown" */
	bool current;                        /* the device maps the same amounts today */
	enum ledger_counted counted;
};

/* "counted", "omitted", "unbound". Static storage. */
const char *ledger_counted_name(enum ledger_counted c);

struct ledger_zone {
	struct str zone;
	int64_t amount;
};

/* One resource of a node account, in the scheduler's units. */
struct ledger_amount {
	struct str resource;
	bool has_allocatable;
	int64_t allocatable;
	int64_t pods;                        /* the Pods' own requests */
	int64_t dra;                         /* the entries' amounts: the sum of zones */
	int64_t status;                      /* what the node's Pod statuses say: the scheduler counts it */
	int64_t omitted;                     /* of dra: claims a Pod on the node reserves that no status names */
	int64_t unbound;                     /* of dra: claims no Pod on the node reserves */
	int64_t covered;                     /* DRA amounts inside Pod-level requests */
	int64_t total;                       /* the Pods' requests and every claim's amounts, as the
					      * scheduler would check them: what the mappings commit */
	int64_t scheduled;                   /* what the scheduler counts: each Pod's requests and its
					      * own statuses, rounded once per Pod */
	uint32_t nzones;
	struct ledger_zone *zones;
};

struct ledger_node {
	struct str name;
	bool has_node;                       /* the Node object is in the view */
	uint32_t npods;
	bool overcommitted;                  /* total > allocatable for some resource */
	bool diverging;                      /* dra - omitted - unbound != status for some resource */
	bool undercounted;                   /* omitted > 0 for some resource */
	uint32_t nresources;
	struct ledger_amount *resources;     /* by name */
	uint32_t first_entry, nentries;      /* its entries in ledger.entries */
};

struct ledger_totals {
	struct str resource;
	int64_t allocatable, pods, dra, total;
	int64_t nodes;                       /* node accounts that have the resource */
};

struct ledger {
	int64_t now_ns;
	uint64_t view_seq;
	struct view_atom_ids ids;            /* the view's atoms: what the entries' claims name */
	uint32_t nnodes;
	struct ledger_node *nodes;           /* sorted by name */
	uint32_t nentries;
	struct ledger_entry *entries;        /* by node, then claim, then result */
	uint32_t ntotals;
	struct ledger_totals *totals;        /* per resource over every node, by name */
	uint32_t all_nodes, all_entries;     /* of the whole ledger when this one holds a part of
					      * its nodes (ledger_inc_node()); 0: nnodes, nentries */
	uint32_t claims;                     /* allocated claims charged somewhere */
	uint32_t pending;                    /* allocated claims with a result not charged yet */
	uint32_t uncharged;                  /* results the scheduler cannot compute either */
	uint32_t unreserved;                 /* multi-node claims no Pod on a node reserves */
	uint32_t old_mapping;                /* claims charged at a mapping their device no longer has */
	uint32_t overcommitted, diverging;   /* nodes */
	uint32_t undercounted;               /* nodes */
	int64_t mapping_changed_ns;          /* newest mapping change the view saw; 0 none */
	struct arena *arena;                 /* owns the arrays */
};

/* Build the ledger of view v at now_ns; pol names the NUMA attributes.
 * cap bounds the memory it may take. 0 with *out owned by the caller
 * (ledger_free()), -E2BIG past cap or a per-node cap above, -ENOMEM. */
int ledger_build(const struct view *v, const struct policy *pol, int64_t now_ns, size_t cap,
		 struct ledger **out);

/* ledger_free(NULL) is a no-op. */
void ledger_free(struct ledger *l);

/* The node account named name, or NULL. */
const struct ledger_node *ledger_node(const struct ledger *l, struct str name);

/* The account of a resource of a node, or NULL. */
const struct ledger_amount *ledger_node_amount(const struct ledger_node *n, struct str resource);

/* The NUMA zone of a device under pol: the driver's numaAttribute, else
 * the first of numa.attributes the device has; "unknown" otherwise.
 * Integer zones print in decimal. buf (n bytes) holds a formatted value.
 * d is a device of snapshot v (its attributes are read through v). */
struct str ledger_device_zone(const struct view *v, const struct policy *pol, struct str driver,
			      const struct view_device *d,
			      char *buf, size_t n);

/* An amount in a resource's scheduler units printed as a quantity. */
void ledger_format_units(struct str resource, int64_t units, char buf[static 96]);

/* --- kept up to date ---------------------------------------------------------------- *
 *
 * An incremental ledger follows one view builder's snapshots: each update
 * recounts only the nodes whose Node, Pods or charged claims changed since
 * the snapshot it was last brought to (view_diff.h), and the claims whose
 * devices' slices changed, so an update costs what changed, not the
 * cluster. What it gives equals ledger_build() of the same snapshot, field
 * for field (tests/test_ledger.c compares them after random changes). */
struct ledger_inc;

struct ledger_inc_stats {
	uint64_t updates;                    /* updates that changed the snapshot */
	uint64_t whole;                      /* of them, built whole (the first, after an error) */
	uint32_t last_nodes;                 /* node accounts the last update built again */
	uint32_t last_claims;                /* claims it counted again */
	size_t bytes;                        /* memory: node accounts, entries and indexes */
};

/* An empty incremental ledger; pol (borrowed, must outlive it) names the
 * NUMA attributes: a new policy needs a new one. cap bounds the node
 * accounts' memory (0: 1 GiB). 0 or -ENOMEM. */
int ledger_inc_new(const struct policy *pol, size_t cap, struct ledger_inc **out);

/* NULL is a no-op. */
void ledger_inc_free(struct ledger_inc *li);

/* Bring li to snapshot v at now_ns: the first time (or after a failed
 * update) built whole from v, else from what changed since the snapshot
 * of the last update, which must be of the same builder and still held
 * during this call (it may be released after). v must then be held as
 * long as li or what ledger_inc_ledger() / ledger_inc_node() gave is
 * read. 0, or -E2BIG / -ENOMEM: li is then empty and the next update
 * builds whole. */
int ledger_inc_update(struct ledger_inc *li, const struct view *v, int64_t now_ns);

void ledger_inc_stats(const struct ledger_inc *li, struct ledger_inc_stats *st);

/* The whole ledger as ledger_build() makes it (entries false: every node's
 * account without the entries; nentries 0, all_entries their number), in
 * its own arena (ledger_free()); it borrows from li, valid until the next
 * update. Costs the nodes (and entries), not a build. 0, -EAGAIN before
 * the first update, -ENOMEM. */
int ledger_inc_ledger(const struct ledger_inc *li, bool entries, struct ledger **out);

/* Call fn with each node account of li, in no order (borrowed, valid
 * until the next update; its entries are not there: nentries is their
 * number). Costs the nodes and allocates nothing, for a reader that wants
 * a few figures of every node rather than a ledger. A nonzero return of
 * fn stops the walk and is returned; -EAGAIN before the first update. */
typedef int (*ledger_inc_node_fn)(void *ctx, const struct ledger_node *n);
int ledger_inc_each_node(const struct ledger_inc *li, ledger_inc_node_fn fn, void *ctx);

/* The ledger of one node: that node's account and entries (none when the
 * ledger has no such node), the whole ledger's totals and counters
 * (all_nodes, all_entries). Costs the node. Same returns and lifetime. */
int ledger_inc_node(const struct ledger_inc *li, struct str node, struct ledger **out);

/* The ledger as JSON into out (docs/ledger.md has the shape); node "" for
 * every node, else that node only. 0, -E2BIG (out's cap) or -ENOMEM. */
int ledger_json(const struct ledger *l, struct str node, struct buf *out);

/* The node accounts as a table, one line per node and resource, and
 * (entries true) each node's entries under it. Same returns. */
int ledger_table(const struct ledger *l, struct str node, bool entries, struct buf *out);

#endif
