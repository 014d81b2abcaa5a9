/* ledger_rules.h - the rules that read the cluster view: stale writers and
 * pool-name collisions on ResourceSlices, and the ledger.* rules on
 * allocations, Pod statuses and mapping changes.
 *
 * Each needs a view and does nothing without one. Where the view cannot
 * decide - it is stale, or has not seen an object yet (a slice or claim
 * written a few milliseconds ago that the watch has not delivered) - a
 * rule does not deny: it records the request as undecided (counted by
 * reason) and lets it through; only ledger.pool.fresh turns that into a
 * violation, and only when the policy says ledger.undecided: deny. A
 * violation the view being a moment behind could explain is marked so
 * (view_lag): the server decides such a denial again on a newer view
 * before it stands. docs/ledger.md walks through each race. */
#ifndef DRA_GUARD_LEDGER_RULES_H
#define DRA_GUARD_LEDGER_RULES_H

#include <stdint.h>

#include "check.h"

/* Why a rule could not decide (struct undecided.reason). */
enum ledger_reason {
	LEDGER_REASON_NONE = 0,
	LEDGER_REASON_VIEW_STALE,         /* no word from the API server for clusterView.maxAge */
	LEDGER_REASON_POOL_UNSEEN,        /* the allocation's pool is not in the view (new) */
	LEDGER_REASON_DEVICE_UNSEEN,      /* the device is not in the view: its capacity is unknown */
	LEDGER_REASON_CLAIM_UNSEEN,       /* the view has not seen the allocation a status is for */
	LEDGER_REASON_CLAIM_UNCHARGED,    /* the claim's devices are not in the view yet */
	LEDGER_REASON_MAPPING_CHANGING,   /* the mapping changed around the allocation */
	LEDGER_REASON_COUNT
};

/* Why a pool is not fresh (violation.cause of ledger.pool.fresh). */
enum ledger_cause {
	LEDGER_CAUSE_NONE = 0,
	LEDGER_CAUSE_INCOMPLETE,          /* fewer slices at its newest generation than resourceSliceCount */
	LEDGER_CAUSE_RESTARTED,           /* came back or changed generation within the settle window */
	LEDGER_CAUSE_DEVICE_MISSING,      /* the device is in none of its current slices */
	LEDGER_CAUSE_MAPPING_UNCHARGED,   /* a capacity mapping but no consumedCapacity */
	LEDGER_CAUSE_VIEW_STALE,          /* ledger.undecided: deny, and the view is stale */
	LEDGER_CAUSE_POOL_UNSEEN,         /* ledger.undecided: deny, and the pool is not in the view */
	LEDGER_CAUSE_COUNT
};

/* violation.cause of ledger.pod.amounts: the status differs from the
 * ledger's charge but is what kube-scheduler 1.36 computes from another
 * device its lookup by pool and device name can find (another driver's
 * pool of that name, a slice of an older generation still listed):
 * reported at most as a warning. */
#define LEDGER_AMOUNTS_AMBIGUOUS 1

/* "view-stale", "incomplete", ... for metrics labels. Static storage. */
const char *ledger_reason_name(uint8_t reason);
const char *ledger_cause_name(uint8_t cause);

/* ResourceSlice CREATE/UPDATE: slice.generation.stale, slice.pool.collision,
 * and (UPDATE) ledger.mapping.drift. */
void ledger_rules_slice(struct check *c);

/* resourceclaims/status UPDATE that allocates: ledger.pool.fresh,
 * ledger.device.duplicate, ledger.numa.split. */
void ledger_rules_claim_status(struct check *c);

/* pods/status UPDATE that changes nodeAllocatableResourceClaimStatuses:
 * ledger.pod.amounts, and ledger.pod.omitted (a claim reserved for the
 * Pod whose devices carry mappings that the status leaves out; never
 * stricter than warn). */
void ledger_rules_pod_status(struct check *c);

#endif
