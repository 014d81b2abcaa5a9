/* slice_rules.h - the slice.* rules on ResourceSlice CREATE and UPDATE.
 *
 * Mapping well-formedness (what the 1.36 API server checks, for dry-run
 * without one, and what it does not), driver allow-list and bounds, canary
 * nodes, generation regressions and unversioned mapping changes. The slice
 * writer rules (slice.writer*) live with the other identity rules. */
#ifndef DRA_GUARD_SLICE_RULES_H
#define DRA_GUARD_SLICE_RULES_H

#include "check.h"

/* Run every slice rule on c->req's object (and old object on UPDATE). The
 * request's object must be a decoded ResourceSlice. */
void slice_rules_check(struct check *c);

#endif
