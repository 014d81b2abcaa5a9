/* ledger_impl.h - what the files of the ledger module share (ledger.c
 * builds, ledger_inc.c keeps a ledger up to date from view changes).
 * Private to the module: nothing outside policy/ledger*.c includes it. */
#ifndef DRA_GUARD_LEDGER_IMPL_H
#define DRA_GUARD_LEDGER_IMPL_H

#include "arena.h"
#include "ledger.h"

/* Nodes one claim is charged on, at most. */
#define LEDGER_CLAIM_NODES 256

/* What one claim adds to the ledger's claim counters (struct ledger). */
struct ledger_claim_counts {
	uint32_t claims, pending, uncharged, unreserved, old_mapping;
};

/* The claim counters of claim c (NULL: none) in view v, as ledger_build()
 * counts them. */
void ledger_claim_counts(const struct view *v, const struct view_claim *c, struct ledger_claim_counts *out);

/* The nodes claim c of view v is charged on when allocated: its node when
 * node-local, else the nodes of the Pods its reservations name (the Pod
 * with that UID). At most max into out; returns how many. */
uint32_t ledger_claim_nodes(const struct view *v, const struct view_claim *c, struct str *out, uint32_t max);

/* The ledger of node alone, as ledger_build() makes its account: from the
 * Node of that name, pods (those bound elsewhere are skipped) and the
 * claims that may be charged on it (their entries on other nodes are
 * left out). In arena a (owned by the caller, *out in it); its claim
 * counters and mapping time are not set. 0, -E2BIG or -ENOMEM. */
int ledger_build_node(const struct view *v, const struct policy *pol, int64_t now_ns, struct str node,
		      const struct view_pod *const *pods, uint32_t npods, const struct view_claim *const *claims,
		      uint32_t nclaims, struct arena *a, struct ledger **out);

/* Add (sign 1) or take away (sign -1) a node's account of one resource
 * to the ledger's totals, made in a when new (room for every resource
 * at once, so the array never moves). 0, -E2BIG or -ENOMEM. */
int ledger_add_totals(struct ledger *l, struct arena *a, const struct ledger_amount *am, int sign);

/* The totals (by resource name) and the node counts of l's nodes. */
int ledger_sum(struct ledger *l, struct arena *a);

#endif
