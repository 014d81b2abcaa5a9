/* engine.h - the single entry point: policy + cluster view + request ->
 * verdict.
 *
 * The server, dry-run and (later) ledger replay all call engine_decide(), so
 * a verdict in CI is the verdict in the cluster. Pure: no I/O, no clock, no
 * globals (time comes in as now_ns); everything it makes lives in the
 * caller's arena. Safe to call from many threads at once with the same
 * policy and view snapshots and one arena each. */
#ifndef DRA_GUARD_ENGINE_H
#define DRA_GUARD_ENGINE_H

#include <stdbool.h>

#include "arena.h"
#include "model.h"
#include "policy.h"
#include "verdict.h"
#include "view.h"

/* Most violations one request reports. */
#define ENGINE_MAX_VIOLATIONS 4096

struct engine_options {
	bool mutate;                  /* compute the label patch of an allowed slice */
	bool mutating_endpoint;       /* the server's /mutate: only the label patch,
				       * always allowed; every rule is /validate's */
	bool force_freeze;            /* dry-run --freeze: act as if frozen */
	bool skip_identity_rules;     /* dry-run without --user: the request names no
				       * real identity, so slice.writer* and status.*
				       * have nothing to check */
	struct str self_user;         /* the guard's own user name: it may remove its
				       * scheduling gate (claim.freeze.gate) */
	bool gate_unreleasable;       /* no replica could release a gated Pod now (none
				       * runs the release, or its Lease has no live
				       * holder): the gate is withheld, so a Pod is
				       * never left gated for good (verdict.gate_withheld) */
	struct str self_name;         /* the guard's policy ConfigMap (policy.invalid) */
	struct str self_namespace;
};

/* Decide req under pol, with view the cluster as the guard last saw it, or
 * NULL when there is no view (--cluster-view=off, dry-run without one):
 * rules that need the cluster then have nothing to check, and every other
 * rule decides exactly as with a view. now_ns is the wall clock (ns since
 * the epoch) the view's ages are measured against. Both snapshots are
 * borrowed for the call. Returns 0 with *out filled (allowed or not); a
 * negative errno only when the arena ran out, in which case *out is a
 * denial (code 500) all the same, so a caller that ignores the code still
 * never allows. With opt->mutating_endpoint the verdict always allows, with
 * the label patch when there is one to make. */
int engine_decide(const struct policy *pol, const struct view *view,
		  const struct engine_options *opt, const struct admission_request *req,
		  int64_t now_ns, struct arena *a, struct verdict *out);

#endif
