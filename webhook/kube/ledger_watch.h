/* ledger_watch.h - the ledger of the served cluster view: GET /debug/ledger,
 * the ledger of the moment a freeze began, the ledger's metrics, and the
 * counts of what the ledger rules decided at admission.
 *
 * The ledger is kept (policy/ledger/ledger.h, "Kept up to date") and brought to
 * the view of the moment by every scrape and /debug/ledger request, on
 * the thread that asks (the metrics port's), never on a request's: an
 * update recounts only the nodes whose Node, Pods or charged claims
 * changed since the last one, so the gauges are as old as that update
 * took, and idle scrapes cost nothing. A whole build (the first, and under
 * a new policy) took 1.6-2.9 s and 32 MiB at 5,000 nodes, 100,000 claims
 * and 150,000 Pods on a loaded 2-core machine (make bench-scale; updates:
 * docs/performance.md). /debug/ledger?node=NAME costs that node's account,
 * the whole ledger its nodes and entries.
 *
 * Per-node series (overcommitted or unbalanced nodes) are capped at
 * LEDGER_WATCH_NODE_SERIES each, the largest first: no label is ever made
 * per claim or per device.
 *
 * Any thread; the build and the freeze copy sit behind one mutex, the
 * admission counters are relaxed atomics. */
#ifndef DRA_GUARD_LEDGER_WATCH_H
#define DRA_GUARD_LEDGER_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "cluster_view.h"
#include "policy_source.h"
#include "prom.h"
#include "verdict.h"

/* One number, kept where the HELP texts that state it are written. */
#define LEDGER_WATCH_NODE_SERIES PROM_LEDGER_NODE_SERIES
/* A whole build that failed (over its cap) is tried again by a scrape
 * only this many times what it took later. */
#define LEDGER_WATCH_DUTY 10
/* Most memory one ledger build may take. */
#define LEDGER_WATCH_CAP ((size_t)1 << 30)

struct ledger_watch;

/* cv and ps are borrowed and must outlive it. 0 or -ENOMEM. */
int ledger_watch_new(struct cluster_view *cv, struct policy_source *ps, struct ledger_watch **out);

/* NULL is a no-op. */
void ledger_watch_free(struct ledger_watch *lw);

/* The ledger as JSON into out (policy/ledger/ledger.h's export); node "" for all.
 * at_freeze: the ledger of the view kept when the last freeze began, built
 * under the policy serving now. 0; -EAGAIN before the view's first sync;
 * -ENOENT for at_freeze when no freeze began since the start; -E2BIG or
 * -ENOMEM. */
int ledger_watch_json(struct ledger_watch *lw, const char *node, bool at_freeze, struct buf *out);

/* What the rules that read the view decided in one verdict: causes of
 * ledger.pool.fresh, duplicates, NUMA placement failures, mismatched Pod
 * statuses and what could not be decided. The request path; lock-free. */
void ledger_watch_count(struct ledger_watch *lw, const struct verdict *v);

/* A denial decided again on a newer view (admit.c): allowed or still
 * denied. */
void ledger_watch_recheck(struct ledger_watch *lw, bool allowed);

/* Whether a scrape at since_build_s after a failed whole build, which
 * took build_s, tries again (at least LEDGER_WATCH_DUTY build times
 * later). Pure; any thread. */
bool ledger_watch_rebuild_due(double since_build_s, double build_s);

/* The ledger's metric families appended to out (metrics_add_extra()),
 * the ledger brought to the view of the moment first. Any thread. */
int ledger_watch_render_metrics(void *lw, struct buf *out);

#endif
