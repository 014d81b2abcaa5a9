/* pending.h - claims the guard holds back now, and for how long.
 *
 * A claim enters on its first refused allocation (or refused creation in
 * a freeze) and remembers since when, its Pod, the rule that refused it
 * last and how many refusals there were. It leaves when the cluster view
 * shows it allocated (the pending time, from the first refusal to when the
 * view first saw the allocation, is reported under the last refusing rule:
 * the one that held it until then), when the view shows a different claim
 * of that name (recreated), or when nothing refused it for idle_ns and the
 * view does not have it (deleted, or never created). At most max claims:
 * one more is refused (-E2BIG, counted by the caller).
 *
 * Pure and single-threaded (the events worker owns it); time is passed in. */
#ifndef DRA_GUARD_PENDING_H
#define DRA_GUARD_PENDING_H

#include <stdint.h>

#include "buf.h"
#include "events.h"
#include "view.h"

/* --- pending time (dra_guard_pending_seconds, replay's report) ---------- */

/* Buckets of the pending-time histogram: upper bounds 1 s to 6 h, then
 * one above (+Inf). The live metric and the replay share them. */
#define PENDING_BUCKETS 12

/* Upper bound of bucket i (< PENDING_BUCKETS) in seconds. */
double pending_bucket_le(size_t i);

/* The le label of bucket i (<= PENDING_BUCKETS): "1", "21600", "+Inf". */
#define PENDING_LE_MAX 16
void pending_bucket_label(size_t i, char out[static PENDING_LE_MAX]);

/* Pending times by reason (events_rule_at() order), non-cumulative: the
 * bucket a time falls in is the first whose bound is >= it. */
struct pending_hist {
	uint64_t counts[EVENTS_RULES][PENDING_BUCKETS + 1];
	double sum[EVENTS_RULES];
};

/* One claim allocated after seconds, held last by rule; a rule that emits
 * no Event is ignored. */
void pending_hist_observe(struct pending_hist *h, enum rule_id rule, double seconds);

/* How long a claim neither refused nor in the view is remembered (the
 * live guard's default, and the replay's). */
#define PENDING_IDLE_DEFAULT_NS ((int64_t)3600 * 1000000000)

/* --- the claims held now ------------------------------------------------- */

struct pending_table;

/* 0, -EINVAL (max 0 or over 2^28), -ENOMEM. Room for a few claims is
 * allocated here; more is as they come, doubling, up to max. */
int pending_table_new(uint32_t max, int64_t idle_ns, struct pending_table **out);

/* NULL is a no-op. */
void pending_table_free(struct pending_table *t);

/* A refusal of r->claim (r->pending must be true; others are ignored).
 * 0, -E2BIG when max claims are held, or -ENOMEM when there was no memory
 * for more room; either way the claim is not held and the table is as it
 * was. */
int pending_table_refused(struct pending_table *t, const struct events_report *r);

/* What sweeping found done: a claim allocated after seconds of waiting,
 * last refused by rule. */
typedef void pending_done_fn(void *ctx, enum rule_id rule, double seconds);

/* Compare every held claim with view v at now_ns: allocated ones are
 * reported to done and removed; gone ones removed. Returns how many are
 * held afterwards. */
uint32_t pending_table_sweep(struct pending_table *t, const struct view *v, int64_t now_ns, pending_done_fn *done,
			     void *ctx);

/* Claims held now. */
uint32_t pending_table_count(const struct pending_table *t);

/* [{"namespace","name","uid","pod","reason","rule","since","seconds",
 * "lastRefused","refusals"}] (oldest first) appended to out. 0 or out's error. */
int pending_table_json(const struct pending_table *t, int64_t now_ns, struct buf *out);

#endif
