/* admit.h - one admission request on the server, from body to answer.
 *
 * Takes a reference to the serving policy for the length of the request (so
 * a reload never changes the policy under it), runs admission_handle() in
 * the calling thread's arena, and records what happened: the request and
 * violation counters, the latency histogram, the break-glass counter, and a
 * log line for every denial, warning and error (allowed requests only at
 * debug). Nothing here knows HTTP framing; httpd feeds it a complete body.
 *
 * Each thread that calls admit_review() gets its own arena on its first
 * call, kept across requests (no allocation in the steady state) and freed
 * when the thread exits. Any number of threads may call at once. */
#ifndef DRA_GUARD_ADMIT_H
#define DRA_GUARD_ADMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cluster_view.h"
#include "decode.h"
#include "engine.h"
#include "gate_release.h"
#include "event_sink.h"
#include "ledger_watch.h"
#include "metrics.h"
#include "policy_source.h"
#include "serve_config.h"

struct admit {                    /* fields are private */
	struct metrics *m;
	struct policy_source *policy;
	struct cluster_view *view;    /* NULL without a cluster view */
	struct engine_options opt_validate;
	struct engine_options opt_mutate;
	struct decode_limits lim;
	size_t arena_cap;
	pthread_key_t worker_key;
	struct ledger_watch *ledger;  /* NULL without a cluster view */
	unsigned recheck_ms;          /* --view-recheck */
	unsigned recheck_max;         /* requests that may wait at once */
	atomic_uint rechecking;
	struct gate_release *gate;    /* NULL without --gate-release */
	atomic_int_fast64_t gate_warned_ms;   /* last warning of a withheld gate */
	struct event_sink *events;    /* NULL: no Events */
};

/* Limits and options from cfg (the ConfigMap name is copied by reference:
 * cfg must outlive a). m, policy and view (NULL: none) are borrowed. 0 or
 * -ENOMEM. */
int admit_init(struct admit *a, const struct serve_config *cfg, struct metrics *m,
	       struct policy_source *policy, struct cluster_view *view);

/* The ledger's admission counters (NULL: none), and how a denial by a
 * rule that reads the view that a view a moment behind could explain is
 * decided again: wait up to recheck_ms (0: never) for a newer view, at
 * most max_waiters requests at once (so some worker threads always serve
 * while others wait). */
void admit_set_ledger(struct admit *a, struct ledger_watch *lw, unsigned recheck_ms, unsigned max_waiters);

/* The replica's gate release (NULL: it runs none). The mutating endpoint
 * gates a new Pod during a freeze with freeze.gatePods only while
 * gate_release_live(gate): a replica without the release, or whose Lease
 * has no live holder, withholds the gate (counted in
 * dra_guard_gate_withheld_total, warned of at most every 10 s), so no Pod
 * is held that nobody would release. Borrowed; call before serving. */
void admit_set_gate(struct admit *a, struct gate_release *gate);
/* Where the Events of refusals that hold a Pod back go (NULL: none);
 * borrowed. Only the final answer of a request emits (after any recheck),
 * and a dryRun request none. */
void admit_set_events(struct admit *a, struct event_sink *es);

/* Release what admit_init() made. Every thread that called admit_review()
 * must have exited (its arena is freed as it exits), except the caller. */
void admit_fini(struct admit *a);

/* Answer body[0..len) on the validating or mutating endpoint. start_ns is
 * when the request arrived (CLOCK_MONOTONIC), for the latency metric.
 * Returns the HTTP status: 200 or 400 with the answer in out. With no
 * policy loaded, or when the answer could not be built, the review is
 * answered 200 without a decision (as admit_refuse(), codes 503 and 500)
 * when its uid is found; else 503 or 500, with out empty (the caller sends
 * its fixed answer for those). */
unsigned admit_review(struct admit *a, bool mutate, const char *body, size_t len, struct buf *out,
		      uint64_t start_ns);

/* A review the server will not judge (its body dropped past --max-body or
 * the memory budget, or its answer past the budget), answered inside a
 * review all the same: an HTTP error is a failed call, which a webhook
 * with failurePolicy Ignore lets through. text[0..len) is the body's first
 * bytes (or all of it); its request.uid is found by review_prefix_uid().
 * On /validate the answer is a denial with status code and message; on
 * /mutate an allow without a patch, as for any review it cannot read
 * (every denial is /validate's). It is written to out[0..outn), which may
 * overlap text, with *outlen its length; built in the calling thread's
 * arena, nothing of the memory budget. Counts the request
 * (dra_guard_requests_total, result "error", resource and operation
 * unknown) unless counted says its decision was counted already, and logs
 * it. 0; -ENOENT when text holds no uid (the caller answers with the HTTP
 * error); -E2BIG when the answer does not fit in outn; -ENOMEM. */
int admit_refuse(struct admit *a, bool mutate, const char *text, size_t len, int32_t code,
		 const char *message, bool counted, char *out, size_t outn, size_t *outlen, uint64_t start_ns);

#endif
