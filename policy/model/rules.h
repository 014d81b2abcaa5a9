/* rules.h - the rule catalogue: stable ids, default actions, summaries.
 *
 * A rule id is what users see in messages, metrics, audit annotations and
 * dry-run output, and what the policy's enforcement.rules names; ids never
 * change meaning. The enum order is the order rules are listed in docs. */
#ifndef DRA_GUARD_RULES_H
#define DRA_GUARD_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "str.h"

/* What a violated rule does. Ordered by severity: a smaller value is stricter. */
enum action {
	ACTION_DENY = 0,      /* reject the request */
	ACTION_WARN,          /* allow, with a warning shown to the client */
	ACTION_DRYRUN,        /* allow; record only in an audit annotation */
};

enum rule_id {
	RULE_SLICE_MAPPING_MULTIPLIER = 0,
	RULE_SLICE_MAPPING_CAPACITY_KEY,
	RULE_SLICE_MAPPING_EMPTY,
	RULE_SLICE_MAPPING_NAME,
	RULE_SLICE_MAPPING_SCHEMA,
	RULE_SLICE_MAPPING_SHAREABLE,
	RULE_SLICE_MAPPING_UNITS,
	RULE_SLICE_MAPPING_UNITS_OPEN,
	RULE_SLICE_MAPPING_BOUNDS,
	RULE_SLICE_DRIVER,
	RULE_SLICE_CANARY,
	RULE_SLICE_GENERATION_REGRESS,
	RULE_SLICE_MAPPING_UNVERSIONED,
	RULE_SLICE_GENERATION_STALE,
	RULE_SLICE_POOL_COLLISION,
	RULE_SLICE_SHAPE_FUTURE,
	RULE_SLICE_WRITER,
	RULE_SLICE_WRITER_NODE,
	RULE_CLAIM_FREEZE_CREATE,
	RULE_CLAIM_FREEZE_ALLOCATE,
	RULE_CLAIM_FREEZE_GATE,
	RULE_STATUS_ALLOCATION_WRITER,
	RULE_STATUS_DEVICES_WRITER,
	RULE_STATUS_POD_WRITER,
	RULE_LEDGER_POOL_FRESH,
	RULE_LEDGER_DEVICE_DUPLICATE,
	RULE_LEDGER_NUMA_SPLIT,
	RULE_LEDGER_POD_AMOUNTS,
	RULE_LEDGER_POD_OMITTED,
	RULE_LEDGER_MAPPING_DRIFT,
	RULE_POLICY_INVALID,
	RULE_COUNT
};

/* "slice.mapping.name" etc. Static storage. */
const char *rule_name(enum rule_id id);

/* The rule named s, or -1. */
int rule_lookup(struct str s);

/* The action a rule has when the policy names neither it nor a stricter
 * default: deny for most, warn for the advisory ones. */
enum action rule_builtin_action(enum rule_id id);

/* The strictest action the rule may have: deny for most; warn for a rule
 * whose denial could only make the writer retry what it cannot change
 * (ledger.pod.omitted: kube-scheduler would loop on the binding). A policy
 * naming a stricter action gets this one. */
enum action rule_strictest_action(enum rule_id id);

/* True for the rules that read the cluster view: a denial by one of them
 * may come from a view a moment behind the API server, so the server
 * decides again on a newer view before it stands (webhook/server/admit.c). */
bool rule_reads_view(enum rule_id id);

/* One sentence saying what the rule checks. Static storage. */
const char *rule_summary(enum rule_id id);

/* "deny", "warn", "dryrun". */
const char *action_name(enum action a);

/* Parse an action name: 0 and *out set, or -EINVAL. */
int action_parse(struct str s, enum action *out);

#endif
