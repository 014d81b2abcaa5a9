/* engine.h - the single entry point: policy + request -> verdict.
 *
 * The server, dry-run and (later) ledger replay all call engine_decide(), so
 * a verdict in CI is the verdict in the cluster. Pure: no I/O, no clock, no
 * globals; everything it makes lives in the caller's arena. Safe to call from
 * many threads at once with the same policy and one arena each. */
#ifndef DRA_GUARD_ENGINE_H
#define DRA_GUARD_ENGINE_H

#include <stdbool.h>

#include "arena.h"
#include "model.h"
#include "policy.h"
#include "verdict.h"

/* Most violations one request reports. */
#define ENGINE_MAX_VIOLATIONS 4096

struct engine_options {
	bool mutate;                  /* the mutating endpoint: compute the patch */
	bool force_freeze;            /* dry-run --freeze: act as if frozen */
	bool skip_identity_rules;     /* dry-run without --user: the request names no
				       * real identity, so slice.writer* and status.*
				       * have nothing to check */
	struct str self_name;         /* the guard's policy ConfigMap (policy.invalid) */
	struct str self_namespace;
};

/* Decide req under pol. Returns 0 with *out filled (allowed or not); a
 * negative errno only when the arena ran out, in which case *out is a
 * denial (code 500) all the same, so a caller that ignores the code still
 * never allows. */
int engine_decide(const struct policy *pol, const struct engine_options *opt,
		  const struct admission_request *req, struct arena *a, struct verdict *out);

#endif
