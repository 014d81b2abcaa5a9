/* writer_rules.h - least-privilege writes: slice.writer*, status.*.
 *
 * RBAC lets a driver's ServiceAccount write every node's ResourceSlices and
 * anyone with pods/status rewrite the amounts the scheduler accounts. These
 * rules narrow each write to the identity that owns it, using only what the
 * request carries: userInfo.username, groups, and the node-name extra of
 * Pod-bound ServiceAccount tokens. They never re-implement RBAC: a write
 * that does not touch the guarded fields passes. */
#ifndef DRA_GUARD_WRITER_RULES_H
#define DRA_GUARD_WRITER_RULES_H

#include "check.h"

/* slice.writer and slice.writer.node on any ResourceSlice write. */
void writer_rules_slice(struct check *c);

/* status.allocation.writer and status.devices.writer on resourceclaims/status. */
void writer_rules_claim_status(struct check *c);

/* status.pod.writer on pods/status. */
void writer_rules_pod_status(struct check *c);

#endif
