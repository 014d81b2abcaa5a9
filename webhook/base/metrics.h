/* metrics.h - the server's Prometheus metrics.
 *
 * A fixed registry: every family and every label value is known at compile
 * time (label values that come from outside - the policy hash, the freeze
 * reason - are single gauges set whole). Counters and histogram buckets are
 * relaxed atomics, so the request path updates them from any thread with no
 * lock and no allocation; the few string-labelled gauges sit behind a mutex
 * that only setters and the renderer take. Every series of a family is
 * written from the start (zeros included) so rate() and increase() see the
 * first event.
 *
 * metrics_render() writes text exposition format 0.0.4: # HELP and # TYPE
 * for every family, label values escaped (\\, \", \n). */
#ifndef DRA_GUARD_METRICS_H
#define DRA_GUARD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "model.h"
#include "reqmem.h"
#include "rules.h"

enum metrics_endpoint {
	METRICS_EP_VALIDATE = 0,
	METRICS_EP_MUTATE,
	METRICS_EP_COUNT
};

enum metrics_result {
	METRICS_RESULT_ALLOWED = 0,
	METRICS_RESULT_DENIED,        /* a policy denial (403) */
	METRICS_RESULT_ERROR,         /* not decided: bad review or object, internal error */
	METRICS_RESULT_COUNT
};

/* HTTP error answers counted by dra_guard_http_errors_total. */
enum metrics_http_error {
	METRICS_HTTP_400 = 0,
	METRICS_HTTP_404,
	METRICS_HTTP_405,
	METRICS_HTTP_408,
	METRICS_HTTP_413,
	METRICS_HTTP_415,
	METRICS_HTTP_500,
	METRICS_HTTP_503,
	METRICS_HTTP_COUNT
};

enum metrics_reload {
	METRICS_RELOAD_SUCCESS = 0,
	METRICS_RELOAD_ERROR,
	METRICS_RELOAD_COUNT
};

/* Operations as the decoder numbers them (ADMISSION_OP_*). */
#define METRICS_OP_COUNT (ADMISSION_OP_CONNECT + 1)

/* Drivers with their own label in dra_guard_slice_denials_total; the
 * rest count as driver="other". */
#define METRICS_DRIVERS_MAX 64
/* Worker threads with a connections series (serve_config's MAX_THREADS). */
#define METRICS_WORKERS_MAX 256
/* Longest driver name (a DNS subdomain). */
#define METRICS_DRIVER_NAME_MAX 253

/* Histogram buckets (upper bounds, seconds), +Inf implied. */
#define METRICS_BUCKETS 17

struct metrics;

/* A registry with every series at zero and build_info{version} 1.
 * 0 or -ENOMEM. */
int metrics_new(const char *version, struct metrics **out);

/* metrics_free(NULL) is a no-op. No other call may be running. */
void metrics_free(struct metrics *m);

/* The resource label of a request is a kind: request.resource.resource
 * folded to the kinds a rule reads ("resourceslices", "resourceclaims",
 * "pods", "configmaps"), OBJECT_OTHER for any other resource ("other",
 * Nodes included: no rule reads them) and OBJECT_NONE when the review did
 * not decode ("unknown"; also for "" here). */
enum object_kind metrics_kind_of_resource(const char *resource, size_t len);

/* The code's entry, or -1 for a code not counted. */
int metrics_http_error_of(unsigned code);

/* --- the request path: lock-free, allocation-free ------------------------- */

/* One admission request answered: counts it and observes its duration. */
void metrics_request(struct metrics *m, enum metrics_endpoint ep, enum object_kind kind,
		     enum admission_op op, enum metrics_result result, uint64_t duration_ns);
void metrics_violation(struct metrics *m, enum rule_id rule, enum action action);
void metrics_break_glass(struct metrics *m, enum object_kind kind);
void metrics_http_error(struct metrics *m, enum metrics_http_error code);
/* A Pod the freeze would have gated, not gated: no replica could release it. */
void metrics_gate_withheld(struct metrics *m);
/* A ResourceSlice write denied by the policy; driver[0..len) is the slice's
 * spec.driver. Counted under its name when metrics_slice_driver_add() gave
 * it one, as "other" otherwise. */
void metrics_slice_denied(struct metrics *m, const char *driver, size_t len);
/* delta +1 when a request starts, -1 when it ends. */
void metrics_in_flight(struct metrics *m, int delta);
/* The webhook port has n worker threads (at most METRICS_WORKERS_MAX): the
 * connections gauge has a series for each. Called once, at start. */
void metrics_workers(struct metrics *m, unsigned n);
/* delta +1 when worker (0 to n-1) starts serving a connection of the
 * webhook port, -1 when it closes. */
void metrics_worker_connection(struct metrics *m, unsigned worker, int delta);

/* A request refused because its body or its answer did not fit in the
 * memory budget. */
void metrics_memory_refusal(struct metrics *m, enum reqmem_kind kind);

/* The budget whose size and use dra_guard_memory_budget_bytes and
 * dra_guard_memory_in_use_bytes show (read at each render). Borrowed: it
 * must outlive m, or be unset (NULL) first. Until it is set both read 0. */
void metrics_memory_watch(struct metrics *m, const struct reqmem *rm);

/* --- state changes (reloads): take the registry's mutex ------------------- */

/* Counts a load or reload, and sets dra_guard_policy_last_reload_successful
 * (0 after an error: a broken input is held back). */
void metrics_policy_reload(struct metrics *m, enum metrics_reload result);
/* The input was read again and loads, but is the serving policy already:
 * nothing is reloaded, and nothing is held back any more. */
void metrics_policy_unchanged(struct metrics *m);
/* A policy was swapped in: its hash, and when (wall clock, ns since epoch). */
void metrics_policy_loaded(struct metrics *m, const char *hash, int64_t when_ns);
/* Where the serving policy came from ("api", "directory", "file", "built-in"). */
void metrics_policy_source(struct metrics *m, const char *source);
/* Sets dra_guard_policy_input_missing: the policy's source (the ConfigMap
 * in the API, the file or the directory's document) is gone while the last
 * good policy keeps serving. */
void metrics_policy_input_missing(struct metrics *m, bool missing);
/* Freeze state of the serving policy. since_ns is when it became active
 * (ignored when inactive). reason may be NULL. */
void metrics_freeze(struct metrics *m, bool active, const char *reason, int64_t since_ns);
/* Give driver name[0..len) its own label value in
 * dra_guard_slice_denials_total from now on (a driver the policy lists).
 * Names are kept for the process's life, so a series never goes back; past
 * METRICS_DRIVERS_MAX names, or for a name longer than
 * METRICS_DRIVER_NAME_MAX, it stays "other". Takes the mutex; readers on the
 * request path do not wait for it. */
void metrics_slice_driver_add(struct metrics *m, const char *name, size_t len);
/* The serving policy's freeze.alertAfter, in seconds. */
void metrics_freeze_alert_after(struct metrics *m, uint32_t seconds);
void metrics_tls_reload(struct metrics *m, enum metrics_reload result);
void metrics_tls_not_after(struct metrics *m, int64_t not_after_s);
void metrics_ready(struct metrics *m, bool ready);

/* Families rendered by other modules after the registry's own (the
 * cluster view's, the ledger's): fn(ctx, out) appends them. set_extra sets
 * the first, add_extra adds another (up to METRICS_EXTRA_MAX), before
 * serving. */
#define METRICS_EXTRA_MAX 4
void metrics_set_extra(struct metrics *m, int (*fn)(void *ctx, struct buf *out), void *ctx);
void metrics_add_extra(struct metrics *m, int (*fn)(void *ctx, struct buf *out), void *ctx);

/* The whole exposition into out (appended). 0, -E2BIG when out's cap is too
 * small, -ENOMEM. Safe while other threads update. */
int metrics_render(struct metrics *m, struct buf *out);

#endif
