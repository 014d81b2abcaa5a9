/* policy.h - the policy document: model, loader, lookups.
 *
 * A policy is an immutable snapshot: built whole by a loader, never changed
 * after, freed whole. The webhook swaps snapshots under one pointer; rules
 * read the fields below directly (and must not write them).
 *
 * The document (apiVersion dra-guard.io/v1alpha1, kind Policy) is read from
 * YAML or JSON, or from a ConfigMap manifest whose data["policy.yaml"] holds
 * it next to the operator keys data["freeze"] and data["freeze-reason"].
 * Unknown keys, wrong types and bad values are errors naming the line and the
 * path. Loading is pure: text in, snapshot out. */
#ifndef DRA_GUARD_POLICY_H
#define DRA_GUARD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "quantity.h"
#include "rules.h"
#include "str.h"

#define POLICY_API_VERSION "dra-guard.io/v1alpha1"
#define POLICY_KIND "Policy"
#define POLICY_DEFAULT_SCHEDULER "system:kube-scheduler"
/* The resourceclaim controller clears reservedFor and deallocates; it runs in
 * kube-controller-manager under its own ServiceAccount, or under the
 * manager's identity without --use-service-account-credentials. */
#define POLICY_DEFAULT_ALLOCATOR_SA "system:serviceaccount:kube-system:resource-claim-controller"
#define POLICY_DEFAULT_ALLOCATOR_KCM "system:kube-controller-manager"
/* The garbage collector deletes the slices whose Node is gone (node-local
 * slices are owned by their Node) as its own ServiceAccount, or as the
 * controller manager when controllers share its credentials. */
#define POLICY_DEFAULT_COLLECTOR_SA "system:serviceaccount:kube-system:generic-garbage-collector"
/* ConfigMap keys (also the file names of a mounted ConfigMap directory). */
#define POLICY_KEY_DOCUMENT "policy.yaml"
#define POLICY_KEY_FREEZE "freeze"
#define POLICY_KEY_FREEZE_REASON "freeze-reason"
/* clusterView.maxAge when not given, and its bounds (seconds). */
#define POLICY_VIEW_MAX_AGE_DEFAULT 300
#define POLICY_VIEW_MAX_AGE_MIN 10
#define POLICY_VIEW_MAX_AGE_MAX 86400
/* ledger.settleWindow: how long after a pool came back or changed
 * generation allocations from it wait (seconds); default and bounds. */
#define POLICY_SETTLE_WINDOW_DEFAULT_S 30
#define POLICY_SETTLE_WINDOW_MAX_S 3600
/* Longest freeze-reason kept (it is shown to users in every freeze denial). */
#define POLICY_FREEZE_REASON_MAX 1024
/* freeze.alertAfter: how long a freeze may stay on before the monitoring
 * alert says it has been forgotten; its bounds and the default. */
#define POLICY_FREEZE_ALERT_AFTER_DEFAULT_S (4 * 3600)
#define POLICY_FREEZE_ALERT_AFTER_MIN_S 60
#define POLICY_FREEZE_ALERT_AFTER_MAX_S (30 * 24 * 3600)

struct string_list {
	const struct str *items;      /* as written */
	size_t n;
	const struct str *sorted;     /* the same, sorted: lookups are binary searches */
	const struct str *patterns;   /* the items with glob characters (* ? [ \\), */
	const struct str *prefixes;   /* ... sorted by their literal prefix (prefixes[i],
				       * the text before the first glob character) */
	size_t npatterns;
};

struct resource_limit {
	struct str name;              /* "memory", "hugepages-2Mi" */
	bool has_max;
	struct quantity max;          /* most one allocation may map */
	struct str max_text;          /* max as the policy writes it, for messages */
};

enum driver_scope {
	DRIVER_SCOPE_NODE = 0,        /* a kubelet plugin: writes its own node's objects */
	DRIVER_SCOPE_CLUSTER,         /* a controller: may write any node's objects */
};

/* One of a driver's ServiceAccounts, with the scope it writes at. A
 * ServiceAccount shared by the kubelet plugin (DaemonSet) and the
 * controller (Deployment) is scope node with controller_pods: a token bound
 * to a Pod whose name matches one of those globs writes at cluster scope.
 * Every token of a Pod carries that Pod's node, the controller's too, so the
 * node says nothing about which role wrote; the Pod's name does. */
struct service_account_policy {
	struct str name;              /* system:serviceaccount:<ns>:<name> */
	enum driver_scope scope;
	struct string_list controller_pods;   /* Pod name globs */
};

struct driver_policy {
	struct str name;
	bool has_resources;           /* resources listed: only these may be mapped */
	const struct resource_limit *resources;   /* sorted by name */
	size_t nresources;
	struct string_list service_accounts;      /* the names of accounts[] */
	const struct service_account_policy *accounts;   /* sorted by name */
	size_t naccounts;
	struct string_list device_classes;   /* classes this driver serves (freeze scope) */
	enum driver_scope scope;      /* of entries that name no scope of their own */
	struct str numa_attribute;    /* the device attribute naming the NUMA zone ("" none) */
	bool numa_align;              /* ledger.numa.split: a claim's devices in one zone */
};

/* promotion: the thresholds of the go/no-go readiness report over a
 * replayed window (policy/readiness.h). */
struct promotion_policy {
	uint32_t zero_divergence_s;           /* zeroDivergenceWindow: the longest window
					       * without a divergence must be at least this */
	uint32_t pending_p50_s, pending_p99_s;   /* pendingSLO.p50 / .p99: Pod creation to
						  * binding, Pods with claims */
	uint32_t capacity_headroom_pct;       /* capacityHeadroomPercent: a node this close
					       * to its allocatable fails the capacity SLO */
	bool require_rollback_drill;          /* requireRollbackDrill */
	bool require_restarts;                /* requireRestarts: the window saw driver or
					       * node restarts */
	struct string_list drivers;           /* drivers: each must have published mappings */
};

#define POLICY_PROMOTION_WINDOW_DEFAULT_S (24 * 3600)
#define POLICY_PROMOTION_WINDOW_MAX_S (90 * 24 * 3600)
#define POLICY_PROMOTION_P50_DEFAULT_S 30
#define POLICY_PROMOTION_P99_DEFAULT_S 300
#define POLICY_PROMOTION_PENDING_MAX_S (24 * 3600)
#define POLICY_PROMOTION_HEADROOM_DEFAULT_PCT 10

struct policy {
	enum action default_action;
	bool rule_set[RULE_COUNT];    /* enforcement.rules names the rule */
	enum action rule_action[RULE_COUNT];

	struct string_list schedulers;        /* default: system:kube-scheduler */
	struct string_list allocators;        /* writers.allocators: other allocation writers
					       * (default: the resourceclaim controller) */
	bool has_allocators;
	struct string_list admin_groups;      /* writers.admins: break-glass slice writers */
	struct string_list collectors;        /* writers.collectors: may delete any listed
					       * driver's slices (default: the garbage
					       * collector's identities) */
	bool has_collectors;

	bool has_drivers;                     /* drivers listed: others may not map */
	const struct driver_policy *drivers;  /* sorted by name */
	size_t ndrivers;

	bool has_canary;
	struct string_list canary_nodes;      /* globs */

	bool frozen;                          /* data.freeze == "true" */
	struct str freeze_reason;
	bool freeze_scoped;                   /* freeze.scope given */
	struct string_list freeze_drivers;
	struct string_list freeze_device_classes;
	struct string_list freeze_namespaces;
	struct string_list freeze_driver_classes;  /* freeze_drivers and every class they
						    * serve: a class in driver scope */
	struct string_list break_glass_groups;
	struct string_list break_glass_users;
	bool freeze_gate_pods;                /* freeze.gatePods: hold new Pods with claims at
					       * the scheduling gate MODEL_FREEZE_GATE */
	uint32_t freeze_alert_after_s;        /* freeze.alertAfter, seconds (exported for the alert) */

	struct string_list numa_attributes;   /* for any driver without numaAttribute */
	struct string_list numa_align_classes;   /* numa.alignDeviceClasses */

	uint32_t ledger_settle_s;             /* ledger.settleWindow */
	bool ledger_undecided_deny;           /* ledger.undecided: deny */

	int64_t view_max_age_s;               /* clusterView.maxAge: a view older is stale */

	struct promotion_policy promotion;

	char hash[65];                        /* SHA-256 (hex) of the inputs */
	struct arena *storage;                /* owns everything above */
};

#define POLICY_ERROR_MAX 512

struct policy_error {
	char msg[POLICY_ERROR_MAX];   /* what is wrong and what would be accepted */
	char path[256];               /* "drivers[\"gpu.example.com\"].scope"; "" at top */
	char source[64];              /* the key the position is in ("policy.yaml", "freeze"),
				       * "" for the input itself */
	uint32_t line, col;           /* 1-based within source; 0 when unknown */
};

/* Load a Policy document (YAML or JSON) or a ConfigMap manifest holding one.
 * Returns 0 with *out owned by the caller (policy_free()), or -EINVAL with err
 * filled (the first error found), or -ENOMEM. Positions are in text: also
 * those inside a ConfigMap's data["policy.yaml"], which are moved to where
 * that line is in the manifest (a literal block scalar), or else point at
 * the value and say where in it. */
int policy_load(const char *text, size_t len, struct policy **out, struct policy_error *err);

/* policy_load() that reads on past errors: every error it can find is
 * counted in *nerr, the first cap of them (in the order they were found)
 * kept in errs[] and then sorted by position. */
int policy_load_all(const char *text, size_t len, struct policy **out,
		    struct policy_error *errs, size_t cap, size_t *nerr);

/* Load from the keys of a mounted ConfigMap: the document, and freeze /
 * freeze-reason when present (has_* false: the key does not exist). The
 * freeze key must be "true" or "false" (surrounding whitespace ignored). */
int policy_load_parts(const char *doc, size_t doc_len,
		      bool has_freeze, const char *freeze, size_t freeze_len,
		      bool has_reason, const char *reason, size_t reason_len,
		      struct policy **out, struct policy_error *err);

/* Whether policy_load_parts() would load these keys, and its first error
 * when not, with everything the check builds (the parse and the policy)
 * in arena a (borrowed; a request's arena), so that judging a write of the
 * guard's own ConfigMap costs only the request's memory. Returns 0,
 * -EINVAL with err filled, -E2BIG when a's cap is reached (err says so), or
 * -ENOMEM. No policy is kept and no hash computed. Any thread with its own
 * arena. */
int policy_check_parts(const char *doc, size_t doc_len,
		       bool has_freeze, const char *freeze, size_t freeze_len,
		       bool has_reason, const char *reason, size_t reason_len,
		       struct arena *a, struct policy_error *err);

/* The built-in policy used when none is given: every rule at its built-in
 * action (deny, warn for the advisory ones), no driver or canary
 * restriction, system:kube-scheduler as the scheduler, no freeze. */
int policy_builtin(struct policy **out);

/* policy_free(NULL) is a no-op. */
void policy_free(struct policy *p);

/* The action for rule id: enforcement.rules[id] when set, otherwise the
 * less strict of enforcement.default and the rule's built-in action (so an
 * advisory rule never denies unless named). */
enum action policy_action(const struct policy *p, enum rule_id id);

/* The driver entry named name, or NULL. */
const struct driver_policy *policy_driver(const struct policy *p, struct str name);

/* d's entry for the ServiceAccount user name, or NULL. */
const struct service_account_policy *policy_driver_account(const struct driver_policy *d, struct str user);

/* The resource entry of a driver, or NULL. */
const struct resource_limit *policy_driver_resource(const struct driver_policy *d, struct str name);

/* True when s is in the list. */
bool policy_list_has(const struct string_list *l, struct str s);

/* True when s matches one of the list's globs (fnmatch: * ? [..]): an item
 * without glob characters by binary search; of the patterns, only those whose
 * literal prefix is a prefix of s are tried, each prefix of s found by binary
 * search, so a long list costs about len(s) log n, not n calls of fnmatch(). */
bool policy_list_glob(const struct string_list *l, struct str s);

/* "file:line:col: path: msg" style one-liner of err into buf (n bytes). */
void policy_error_format(const struct policy_error *err, char *buf, size_t n);

/* The same, naming the input: "FILE:LINE:COL: PATH: MSG" when the position
 * is in FILE itself (err->source ""), FILE["freeze"]:... when it is in a key
 * of a ConfigMap directory. */
void policy_error_format_in(const struct policy_error *err, const char *file, char *buf, size_t n);

#endif
