/* verdict.h - what the engine decides about one request.
 *
 * Violations are accumulated up to a cap set at verdict_init(); the cap being
 * reached is an error the engine turns into a denial (never a truncated list
 * that allows). Everything lives in the request's arena. */
#ifndef DRA_GUARD_VERDICT_H
#define DRA_GUARD_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "rules.h"
#include "str.h"

/* Kubernetes shows warnings of up to 120 characters; we keep under that. */
#define VERDICT_WARNING_MAX 119
/* The longest audit annotation key: the name part of a qualified name. */
#define VERDICT_AUDIT_KEY_MAX 63

struct violation {
	enum rule_id rule;
	enum action action;
	struct str path;              /* JSON path in the object, "" for the whole request */
	struct str message;           /* the full sentence */
	uint8_t cause;                /* a rule's own sub-reason (ledger.pool.fresh's causes); 0 none */
	bool view_lag;                /* a view a moment behind could be why: worth deciding again */
};

/* Something a rule could not decide (the view is stale, or has not seen
 * an object yet): allowed, and counted. */
#define VERDICT_MAX_UNDECIDED 8

struct undecided {
	enum rule_id rule;
	uint8_t reason;               /* enum ledger_reason (ledger_rules.h) */
};

struct audit_annotation {
	struct str key;               /* bare ("denied-rules"): the API server adds
				       * "<webhook name>/" in front */
	struct str value;
};

#define VERDICT_MAX_HELD_PODS 4

struct verdict {
	bool allowed;
	int32_t code;                 /* Status.code when denied: 403, 400 undecidable, 500 */
	struct str message;           /* Status.message when denied */
	struct violation *violations;
	uint32_t nviolations;
	uint32_t max_violations;
	struct str *warnings;         /* one line each, under 120 characters */
	uint32_t nwarnings;
	struct audit_annotation *audit;
	uint32_t naudit;
	struct str patch;             /* JSONPatch array text; len 0 when none */
	bool break_glass;             /* a bypass was used (logged and counted) */
	struct str break_glass_detail;
	struct undecided undecided[VERDICT_MAX_UNDECIDED];
	uint32_t nundecided;          /* may pass VERDICT_MAX_UNDECIDED: the rest are only counted */
	struct str claim_uids;        /* claims the ledger rules looked at, for the log ("" none) */
	/* Pods a refused claim creation holds back (they name the claim by
	 * spec.resourceClaims[].resourceClaimName): the Events tell them, as
	 * the claim does not exist. Borrowed from the view's snapshot. */
	struct verdict_pod { struct str name, uid; } held_pods[VERDICT_MAX_HELD_PODS];
	uint32_t nheld_pods;
	bool gate_withheld;           /* /mutate: the freeze would gate this Pod, but
				       * engine_options.gate_unreleasable said no replica
				       * could release it: not gated */
};

/* An empty, allowing verdict that can hold max_violations violations. */
void verdict_init(struct verdict *v, uint32_t max_violations);

/* Append a violation (path and message already in the arena). 0, -E2BIG when
 * the cap is reached, or the arena's error. */
int verdict_add(struct verdict *v, struct arena *a, enum rule_id rule, enum action action,
		struct str path, struct str message);

/* Fill allowed, code, message, warnings and audit annotations from the
 * violations (deny: not allowed, 403, messages joined; warn: warnings;
 * dryrun: audit only). policy_hash goes into the audit annotations of a
 * denial. 0 or the arena's error. */
int verdict_finish(struct verdict *v, struct arena *a, const char *object_desc,
		   const char *policy_hash);

/* Turn v into a denial that says the request cannot be decided (code 400 or
 * 500), dropping whatever it held. 0 or the arena's error. */
int verdict_fail(struct verdict *v, struct arena *a, int32_t code, const char *message);

/* Add an audit annotation. key must pass verdict_audit_key_valid() (-EINVAL
 * otherwise). 0 or the arena's error; -E2BIG past 64. */
int verdict_audit(struct verdict *v, struct arena *a, struct str key, struct str value);

/* True when the API server keeps key once it has put "<webhook name>/" in
 * front: checkKeyFormat in k8s.io/apiserver wants exactly one '/' and a
 * qualified name, so key must be 1 to 63 of [A-Za-z0-9-_.], starting and
 * ending with a letter or digit. */
bool verdict_audit_key_valid(struct str key);

#endif
