/* events.h - which Kubernetes Events a refusal asks for, and what they say.
 *
 * When the guard refuses an allocation or a status write (ledger.pool.fresh,
 * ledger.device.duplicate, ledger.numa.split, ledger.pod.amounts) or holds a
 * claim back in a freeze (claim.freeze.allocate, claim.freeze.create), the
 * operator looks at the Pod (kubectl describe pod), not at the guard's log.
 * This module turns one decided review into at most EVENTS_PER_REVIEW
 * events.k8s.io/v1 Events (one per refusing rule): regarding the Pod the
 * claim is reserved for (the scheduler writes the allocation and reservedFor
 * in one write) or the claim itself when there is none, related the claim;
 * reason the rule id in CamelCase; a note saying what to do and when it
 * clears. A dryRun review asks for none: emitting is a side effect, and the
 * webhooks declare sideEffects: NoneOnDryRun.
 *
 * It also writes the JSON bodies the API server takes (the Event of a new
 * series, and the merge patch of a series), so the whole wire format is
 * tested here. Pure: time is passed in; no allocation but the caller's buf. */
#ifndef DRA_GUARD_EVENTS_H
#define DRA_GUARD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "model.h"
#include "rules.h"
#include "verdict.h"

/* events.k8s.io/v1 limits (k8s.io/kubernetes pkg/apis/core/validation/events.go):
 * note at most 1 kB, reason and action at most 128, reportingInstance 128. */
#define EVENTS_NOTE_MAX 1024
#define EVENTS_REASON_MAX 128
#define EVENTS_INSTANCE_MAX 128
#define EVENTS_PER_REVIEW 4
#define EVENTS_CONTROLLER "dra-guard.io/guard"

/* An object an Event is about (an ObjectReference). Strings are NUL-terminated. */
struct events_ref {
	char kind[16];                /* "Pod" or "ResourceClaim" */
	char api_version[32];         /* "v1", "resource.k8s.io/v1" */
	char namespace[64];
	char name[254];
	char uid[64];                 /* may be "" */
};

/* One Event to emit, before aggregation. */
struct events_report {
	enum rule_id rule;
	char reason[EVENTS_REASON_MAX];   /* "LedgerPoolFresh" */
	char action[32];                  /* what the guard refused: "Allocate", "Create", "UpdatePodStatus" */
	struct events_ref regarding;
	struct events_ref related;
	bool has_related;
	char note[EVENTS_NOTE_MAX];       /* at most EVENTS_NOTE_MAX - 1 bytes, whole UTF-8 characters */
	/* A refused allocation (or a claim held back from creation): what
	 * pending time is measured on. claim is the claim, pod its Pod ("" none). */
	bool pending;
	struct events_ref claim;
	char pod[254];
	int64_t observed_ns;              /* when the refusal was decided (wall clock) */
};

/* The rule id in CamelCase: "ledger.pool.fresh" -> "LedgerPoolFresh". */
void events_reason(enum rule_id rule, char out[static EVENTS_REASON_MAX]);

/* The rules that emit Events (the four ledger refusals, the two freeze
 * holds and the ledger.pod.omitted warning), in one order: every per-reason series (the metrics, replay's
 * report) lists them as events_rule_at(0..EVENTS_RULES) gives them, so the
 * live guard and the replay name the same set. */
#define EVENTS_RULES 7

/* The i-th rule that emits; i < EVENTS_RULES. */
enum rule_id events_rule_at(size_t i);

/* Its position in that order, or -1 for a rule that emits no Event. */
int events_rule_index(enum rule_id rule);

/* True for the rules that emit Events. */
bool events_rule_emits(enum rule_id rule);

/* True for the emitting rules whose refusal holds a claim back (all but
 * ledger.pod.amounts, which refuses a Pod status write): pending time is
 * measured for those (events_report.pending). */
bool events_rule_holds(enum rule_id rule);

/* True for the emitting rules that tell the Pod although nothing was
 * refused (their action is warn): ledger.pod.omitted. */
bool events_rule_warns(enum rule_id rule);

/* The Events a decided review asks for, into out[0..*n) (at most max, and
 * at most EVENTS_PER_REVIEW): one per refusing rule (action deny) of the
 * rules events_rule_emits() names when the review was denied, and one per
 * warning of a rule events_rule_warns() names whatever the verdict; none
 * for a dryRun review. now_ns stamps each. Never fails: a review it
 * cannot name an object for gives none. */
void events_from_review(const struct admission_request *rq, const struct verdict *v, int64_t now_ns,
			struct events_report *out, size_t max, size_t *n);

/* The key Events aggregate under (client-go's: reason, action, reporting
 * controller, regarding and related): NUL-terminated into out. */
#define EVENTS_KEY_MAX 1024
void events_key(const struct events_report *r, char out[static EVENTS_KEY_MAX]);

/* The key of the object a rate limit applies to (the regarding object). */
void events_object_key(const struct events_report *r, char out[static EVENTS_KEY_MAX]);

/* The Event's name: "<regarding name>.<hex of first_ns>", at most 253 bytes. */
void events_name(const struct events_report *r, int64_t first_ns, char out[static 254]);

/* The body of POST /apis/events.k8s.io/v1/namespaces/<regarding ns>/events
 * into out: the Event first seen at first_ns, observed count times, the last
 * at last_ns (a series when count >= 2). 0, or -E2BIG / -ENOMEM from out. */
int events_create_json(const struct events_report *r, const char *name, const char *instance, int64_t first_ns,
		       uint64_t count, int64_t last_ns, struct buf *out);

/* The JSON merge patch of a series: {"series":{"count":N,"lastObservedTime":..}}.
 * count must be at least 2. 0, -EINVAL, or out's error. */
int events_series_patch_json(uint64_t count, int64_t last_ns, struct buf *out);

/* A MicroTime: "2026-12-01T10:00:00.123456Z" into out. */
#define EVENTS_TIME_MAX 40
void events_microtime(int64_t ns, char out[static EVENTS_TIME_MAX]);

#endif
