/* view_diff.h - what changed between two snapshots of one view builder.
 *
 * Tables share the chunks nothing changed since an older snapshot (view.h,
 * "Sharing"), and a published chunk is never written again: a chunk both
 * snapshots hold is the same records. So the records that differ are found
 * among the chunks that differ, and a change set costs the chunks an event
 * touched, not the table (a table that grew since has every chunk new, and
 * is compared whole). Consumers that keep something derived from a view
 * (the incremental ledger, ledger.h) recount only what a diff names.
 *
 * Kept apart from the view's records: it reads the tables' directories
 * only. Pure; both snapshots must be held (not released) while it runs. */
#ifndef DRA_GUARD_VIEW_DIFF_H
#define DRA_GUARD_VIEW_DIFF_H

#include "view.h"

/* A record of kind k that is not the same between old and new: old_rec
 * NULL when it was added, new_rec NULL when it was deleted; both set when
 * it was replaced. Records are the view's (struct view_slice, view_claim,
 * view_pod, view_node, by k). */
typedef int (*view_diff_fn)(void *ctx, const void *old_rec, const void *new_rec);

/* Call fn once for each key of kind k whose record differs between old
 * and new, two snapshots of the same builder (old may be newer; old ==
 * new, or a kind the view does not hold, visits nothing). A nonzero
 * return from fn stops the walk and is returned; otherwise 0. */
int view_diff(const struct view *old_v, const struct view *new_v, enum object_kind k, view_diff_fn fn,
	      void *ctx);

#endif
