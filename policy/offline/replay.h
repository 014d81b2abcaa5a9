/* replay.h - what a policy would have said of a recorded audit log, and
 * what the ledger was through it.
 *
 * A replay reads audit lines (audit.h) one at a time. Writes of the
 * resources the guard reads are put in order of stageTimestamp through a
 * bounded window (the log backend writes an event when its request ends,
 * so neighbours can be out of order by as long as a request takes); each
 * is then
 *   - judged, when it is a write the guard's webhook configuration sends
 *     (slices CREATE/UPDATE/DELETE, claims CREATE, claims/status and
 *     pods/status UPDATE, the guard's own ConfigMap CREATE/UPDATE): the
 *     AdmissionReview the API server would have sent is made from the
 *     event (user with groups and extra, resource, subresource, name,
 *     namespace; object: the responseObject of a write that succeeded, the
 *     requestObject of a create or update that did not; oldObject: the
 *     object as the previous write, or the starting dump, left it) and
 *     answered by decode_review() and engine_decide() under the policy and
 *     the view of the moment before the write, at the event's time;
 *   - applied to the view, when it succeeded, from its responseObject (a
 *     binding sets the stored Pod's spec.nodeName; a deletion that only
 *     marks the object is a change, not a removal).
 * A write made with dryRun is judged as a dry run and never applied.
 * The recorded freeze (the guard's ConfigMap data.freeze as written in the
 * log) is the freeze the engine judges under.
 *
 * Why Pods were pending, as the live guard tells it: every judged review
 * the engine refuses gives the Events the server would emit
 * (events_from_review(): none for a dry run), counted by reason, and a
 * refused allocation that the log shows refused too enters a pending
 * table (pending.h, the live guard's): the time from a claim's first
 * refusal to the view's allocation of it goes into the same histogram as
 * dra_guard_pending_seconds, and the claims still held at the end are
 * listed as GET /debug/pending lists them. The ledger is built from the
 * view every sample interval of log time and at the end; a node
 * overcommitted or diverging for less than ledger.settleWindow is a write
 * in flight, not a divergence.
 *
 * Memory: the view, and the last text of every judged object (slices,
 * claims, Pods, the ConfigMap) for the oldObject of its next write: the
 * size of the cluster, capped; plus the reorder window, capped. Nothing
 * grows with the log but counters and the capped example lists.
 *
 * Pure (time comes from the events); one thread per replay. */
#ifndef DRA_GUARD_REPLAY_H
#define DRA_GUARD_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "buf.h"
#include "events.h"
#include "ledger.h"
#include "pending.h"
#include "policy.h"
#include "str.h"

struct replay_options {
	const struct policy *policy;  /* borrowed for the replay's life */
	struct str self_namespace;    /* the guard's policy ConfigMap */
	struct str self_name;
	uint32_t examples;            /* events shown per rule */
	uint32_t max_refused;         /* recorded successes the policy refuses, listed */
	int64_t sample_ns;            /* the ledger is sampled this often (log time) */
	int64_t reorder_ns;           /* how far out of order events may come */
	size_t reorder_bytes;         /* cap on the lines held for reordering */
	size_t store_bytes;           /* cap on the stored object texts */
	size_t max_line;              /* longest line read */
	uint32_t max_pending;         /* claims held back at once (pending.h) */
	uint32_t ledger_hold;         /* view objects the kept ledger's snapshot may keep from
				       * being freed; past it the snapshot goes and the next
				       * sample builds the ledger whole */
};

/* 5 examples, 1,000 refusals listed, 1 s samples, a 10 s / 256 MiB
 * window, 4 GiB of objects, 64 MiB lines, 100,000 claims held back,
 * 16,384 view objects held for the ledger (about 5 MiB). */
void replay_options_default(struct replay_options *o);

struct replay;

/* 0 with *out, -EINVAL (no policy), -ENOMEM. */
int replay_new(const struct replay_options *o, struct replay **out);

/* replay_free(NULL) is a no-op. */
void replay_free(struct replay *r);

/* The starting state: a `kubectl get ... -o json` dump (a List, or one
 * object) in json[0..len), every object taken as existing at now_ns.
 * Objects of kinds the replay does not hold are skipped. 0; -EBADMSG for
 * text that is not such a dump (err says where); -E2BIG past a cap;
 * -ENOMEM. Call before the first line. */
int replay_seed(struct replay *r, const char *json, size_t len, int64_t now_ns, char *err, size_t n);

/* One line of the log (without its newline), numbered line_no from 1.
 * A corrupt line is counted and its number and error kept (the first few);
 * it is not an error of the call. Returns 0, -E2BIG when a cap of the
 * view, the store or the pending table is passed (the replay cannot go
 * on faithfully; replay_cap() says whether it was the pending table's),
 * or -ENOMEM. */
int replay_line(struct replay *r, const char *line, size_t len, uint64_t line_no);

/* A line longer than max_line: counted as corrupt and skipped. */
void replay_line_too_long(struct replay *r, uint64_t line_no, size_t len);

/* The log ended: the window is drained and the last sample taken. 0,
 * -E2BIG or -ENOMEM. */
int replay_finish(struct replay *r);

/* After -E2BIG: "the pending table's cap ..." when it was that cap
 * (max_pending), "" when it was another's. Static storage. */
const char *replay_cap(const struct replay *r);

/* Totals for the exit code. */
struct replay_totals {
	uint64_t lines, events, corrupt;
	uint64_t judged, would_deny, would_warn, would_refuse;  /* would_refuse: succeeded
							   * in the log, denied now */
	uint64_t not_judged;
	uint64_t divergences;       /* settled divergence intervals + admitted duplicates,
				     * stale-pool allocations and NUMA splits */
	uint32_t overcommitted;     /* nodes, at the end */
};

void replay_totals(const struct replay *r, struct replay_totals *out);

/* The ledger at the end (made by replay_finish(), with its entries), or
 * NULL before: the samples read the kept ledger's node accounts without
 * making one. Borrowed from r. */
const struct ledger *replay_ledger(const struct replay *r);

/* How the samples kept the ledger (ledger.h, "Kept up to date"): built
 * whole once, then each sample of a changed view updated for what changed
 * since the last (last_nodes: the node accounts it counted again). Since
 * the kept ledger was last let go (ledger_hold), if it was. */
void replay_ledger_stats(const struct replay *r, struct ledger_inc_stats *st);

/* --- the report ----------------------------------------------------------------------------- */

/* What an example says besides the event: the rule's action and message,
 * the rules that deny a recorded success and the message, or why the
 * review could not be decoded. */
enum replay_example_kind {
	REPLAY_EXAMPLE_RULE,
	REPLAY_EXAMPLE_REFUSED,
	REPLAY_EXAMPLE_UNDECIDABLE,
};

/* One judged event kept as an example. The recorded fields are the raw
 * text between the quotes in the log (escapes as the log wrote them), so
 * the JSON report carries them byte for byte; message is plain text. */
struct replay_example {
	enum replay_example_kind kind;
	uint64_t line;
	int64_t time_ns;                   /* stageTimestamp */
	const char *verb, *operation;      /* static */
	int recorded;                      /* the response code in the log */
	struct str audit_id, resource, subresource, namespace, name, user;   /* raw */
	enum action action;                /* REPLAY_EXAMPLE_RULE */
	uint32_t nrules;                   /* REPLAY_EXAMPLE_REFUSED: the denying rules */
	enum rule_id rules[RULE_COUNT];
	struct str message;
	char *text;                        /* owns the strings above */
};

struct replay_rule_stats {
	uint64_t deny, warn, dryrun;
	uint32_t nexamples;
	struct replay_example *examples;
};

/* A stretch of log time over which the ledger's samples said the same. */
struct replay_interval {
	int64_t from_ns, to_ns;
	uint32_t overcommitted, diverging;
	char nodes[256];                   /* the first nodes, comma-separated */
};

struct replay_corrupt {
	uint64_t line;
	char error[AUDIT_ERROR_MAX];
};

struct replay_freeze_change {
	int64_t at;
	bool on;
};

/* Why Pods were pending, for one reason the live guard's Events give. */
struct replay_reason {
	enum rule_id rule;
	uint64_t refusals;                 /* refusals that emit this Event */
	bool holds;                        /* its refusals hold a claim back: pending times */
	uint64_t allocated;                /* held claims allocated later */
	double sum_seconds;
	const uint64_t *counts;            /* PENDING_BUCKETS + 1, per bucket (not cumulative) */
};

/* The replay report (docs/replay.md has its JSON shape), every figure
 * typed; arrays and texts are borrowed from the replay it was taken of. */
struct replay_report {
	const char *policy;                /* the policy's sha256 */
	int64_t from_ns, to_ns;            /* 0: no event */
	uint64_t lines, bytes;
	uint64_t events, skipped, corrupt, out_of_order;
	const struct replay_corrupt *corrupt_lines;
	uint32_t ncorrupt_lines;
	uint64_t writes, succeeded, failed, applied, not_applied;
	const char *first_not_applied;
	uint64_t judged, not_judged_old, not_judged_patch, undecidable, would_deny, would_warn, would_refuse;
	const struct replay_rule_stats *rules;   /* RULE_COUNT, by rule id */
	const struct replay_example *undecidable_ex;
	uint32_t nundecidable_ex;
	const struct replay_example *refused;
	uint32_t nrefused;
	uint64_t freeze_changes;
	bool frozen_at_end;
	const struct replay_freeze_change *freeze;
	uint32_t nfreeze;
	uint64_t samples;
	int64_t settle_ns;
	uint64_t divergent_intervals;
	uint32_t max_overcommitted, max_diverging;
	uint64_t admitted_duplicates, admitted_stale_pool, admitted_numa_splits;
	int64_t clean_from_ns, clean_to_ns;      /* the longest window without divergence */
	const struct replay_interval *timeline;
	uint32_t ntimeline;
	uint64_t timeline_dropped;
	uint64_t slice_deletes, slice_deletes_by_kubelet;
	struct replay_reason reasons[EVENTS_RULES];
	uint64_t refused_but_written;
	uint32_t max_claims;
	const struct pending_table *held;        /* claims still held back at held_at_ns */
	int64_t held_at_ns;
	const struct ledger *ledger;             /* the final ledger; NULL: left out */
};

/* The report of r (after replay_finish()); with_ledger adds the final
 * ledger. Borrows from r, which must outlive *out. */
void replay_report_get(const struct replay *r, bool with_ledger, struct replay_report *out);

/* Whether an interval counts as a settled divergence under rep's settle window. */
bool replay_interval_settled(const struct replay_report *rep, const struct replay_interval *iv);

/* rep as one JSON document into out. 0, -E2BIG (out's cap), -ENOMEM. */
int replay_report_write_json(const struct replay_report *rep, struct buf *out);

/* A log time as the report writes it: "2026-12-01T10:00:00.123Z" into buf. */
void replay_format_time(int64_t ns, char buf[static 40]);

/* replay_report_get() and replay_report_write_json() in one. */
int replay_report_json(const struct replay *r, bool with_ledger, struct buf *out);

/* --- the readiness report ---------------------------------------------------------------------- */

/* A driver's slice writes in the window. */
struct replay_driver {
	char name[64];
	uint64_t writes, denied;
	bool mappings;                     /* published mappings */
	uint64_t first_denied_line;
	char first_denied_rule[64];
};

/* A freeze turned on and off. */
struct replay_drill {
	int64_t on_ns, off_ns;
	uint64_t divergences_at_on;
	bool clean;
};

/* What every criterion has: its verdict and a sentence saying why. */
struct replay_criterion {
	const char *name;                  /* "driverCoverage", ...; static */
	bool go;
	char summary[512];
};

/* The go/no-go readiness report (docs/replay.md has its JSON shape): one
 * verdict per criterion with its evidence, against the policy's promotion
 * section. Arrays and texts are borrowed from the replay. */
struct replay_readiness {
	const char *policy;                /* the policy's sha256 */
	bool go;                           /* every criterion is met */
	int64_t from_ns, to_ns;            /* 0: no event */
	uint64_t lines, writes, corrupt_lines;
	struct {
		struct replay_criterion c;
		const struct replay_driver *drivers;
		uint32_t ndrivers;
		const struct string_list *required;
		uint64_t not_tracked;
	} drivers;
	struct {
		struct replay_criterion c;
		const struct replay_drill *drills;
		uint32_t ndrills;
		bool frozen_at_end, required;
	} drill;
	struct {
		struct replay_criterion c;
		uint64_t pools_republished, generation_bumps, slice_deletes_by_kubelet, slice_deletes;
		uint64_t stale_pool_admitted, duplicates_admitted;
		bool required;
	} restarts;
	struct {
		struct replay_criterion c;
		int64_t from_ns, to_ns;            /* the longest window without divergence */
		uint32_t required_seconds;
		uint64_t divergences;
	} window;
	struct {
		struct replay_criterion c;
		uint64_t pods;                     /* Pods with claims created and bound */
		double p50_seconds, p99_seconds;   /* -1: no Pod */
		double max_seconds;
		uint64_t still_pending;
		uint32_t slo_p50_seconds, slo_p99_seconds;
	} pending;
	struct {
		struct replay_criterion c;
		uint64_t samples;
		uint32_t max_overcommitted, max_within_headroom, headroom_percent;
		const char *example;               /* a node within the headroom; "" none */
	} capacity;
};

/* The readiness report of r (after replay_finish()). Borrows from r. */
void replay_readiness_get(const struct replay *r, struct replay_readiness *out);

/* rep as one JSON document into out. 0, -E2BIG, -ENOMEM. */
int replay_readiness_write_json(const struct replay_readiness *rep, struct buf *out);

/* A figure in seconds as the JSON reports write it (three decimals), read
 * back: what the text forms print, so they say what the JSON says. */
double replay_seconds_written(double seconds);

#endif
