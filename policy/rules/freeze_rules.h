/* freeze_rules.h - claim.freeze.*: the operators' rollback brake.
 *
 * While the policy says frozen, new ResourceClaims and new allocations are
 * refused, so no Pod starts to depend on mappings being repaired; existing
 * bindings keep working (deallocation, reservedFor removals, consumers added
 * to claims already allocated, driver status, deletions, slice writes).
 *
 * With freeze.gatePods new Pods are held at a scheduling gate instead
 * (gate.h): the claims the resource-claim controller makes from the
 * templates of a gated Pod may be created, since a gated Pod is never
 * scheduled and so allocates nothing; only the guard may take the gate
 * away while the freeze lasts. */
#ifndef DRA_GUARD_FREEZE_RULES_H
#define DRA_GUARD_FREEZE_RULES_H

#include "check.h"

/* claim.freeze.create on a ResourceClaim CREATE: the exception for a
 * gated Pod's claim holds only when the resource-claim controller
 * (writers.allocators) sends it and the cluster view shows its Pod gated. */
void freeze_rules_create(struct check *c);

/* claim.freeze.create on a ResourceClaim UPDATE (not its status): the
 * pod-claim-name annotation or the controller ownerReference to a Pod may
 * not change during a freeze but by the resource-claim controller or the
 * garbage collector (writers.collectors): a forged claim would otherwise
 * become a real one, or a gated Pod's claim a standalone one. */
void freeze_rules_claim_update(struct check *c);

/* claim.freeze.allocate on a resourceclaims/status UPDATE. */
void freeze_rules_allocate(struct check *c);

/* claim.freeze.gate on a Pod UPDATE (not its status). */
void freeze_rules_gate(struct check *c);

#endif
