/* prom.h - Prometheus text exposition: the table of metric families the
 * server exports, and the one writer of their lines.
 *
 * Every family is one row of prom_families (prom.c): name, type, HELP
 * text and label names, in the order its samples carry them. A module that
 * exports metrics keeps its own counters and, when /metrics is scraped,
 * writes prom_header() for each family and a prom_line per sample; the
 * names, the HELP text and the label names come from the row, so they are
 * written in one place, and docs/monitoring.md has one table to match.
 *
 * To export a new family: add its id to enum prom_id and its row to
 * prom_families, then render it with the calls below. Label values are
 * escaped as the text format asks (backslash, double quote, newline).
 *
 * No state; safe from any thread (each call writes the caller's buf). */
#ifndef DRA_GUARD_PROM_H
#define DRA_GUARD_PROM_H

#include <stddef.h>

#include "buf.h"

#define PROM_LABELS_MAX 4

/* The node series a ledger family keeps (the largest first); the HELP
 * texts say it. LEDGER_WATCH_NODE_SERIES (webhook/kube) is this. */
#define PROM_LEDGER_NODE_SERIES 20

/* A number in a HELP text, from a #define of a plain literal. */
#define PROM_STR(x) PROM_STR_(x)
#define PROM_STR_(x) #x

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_family {
	const char *name;
	enum prom_type type;
	const char *help;
	const char *labels[PROM_LABELS_MAX];  /* in sample order; NULL after the last unless all are used */
};

enum prom_id {
	/* the registry (metrics.c) */
	PROM_REQUESTS_TOTAL,
	PROM_REQUEST_DURATION_SECONDS,
	PROM_VIOLATIONS_TOTAL,
	PROM_BREAK_GLASS_TOTAL,
	PROM_GATE_WITHHELD_TOTAL,
	PROM_SLICE_DENIALS_TOTAL,
	PROM_HTTP_ERRORS_TOTAL,
	PROM_REQUESTS_IN_FLIGHT,
	PROM_WORKER_CONNECTIONS,
	PROM_POLICY_RELOAD_TOTAL,
	PROM_POLICY_LAST_RELOAD_SUCCESSFUL,
	PROM_POLICY_INPUT_MISSING,
	PROM_FREEZE_ALERT_AFTER_SECONDS,
	PROM_TLS_RELOAD_TOTAL,
	PROM_TLS_CERT_NOT_AFTER,
	PROM_READY,
	PROM_MEMORY_BUDGET_BYTES,
	PROM_MEMORY_IN_USE_BYTES,
	PROM_MEMORY_REFUSALS_TOTAL,
	PROM_BUILD_INFO,
	PROM_POLICY_INFO,
	PROM_POLICY_SOURCE,
	PROM_POLICY_LAST_RELOAD_SUCCESS_TIMESTAMP,
	PROM_FREEZE_ACTIVE,
	PROM_FREEZE_INFO,
	PROM_FREEZE_SINCE_TIMESTAMP,
	/* the HTTP listeners (httpd_plain.c) and the metrics port's checks (metrics_auth.c) */
	PROM_DEBUG_MEMORY_BYTES,
	PROM_DEBUG_REFUSED_TOTAL,
	PROM_METRICS_AUTH_TOTAL,
	PROM_METRICS_AUTH_CACHE_HITS_TOTAL,
	/* the ledger's gauges and the view rules' counters (ledger_watch.c) */
	PROM_LEDGER_CAPACITY,
	PROM_LEDGER_USAGE,
	PROM_LEDGER_OVERCOMMITTED_NODES,
	PROM_LEDGER_UNBALANCED_NODES,
	PROM_LEDGER_NODE_OVERCOMMIT,
	PROM_LEDGER_NODE_DIVERGENCE,
	PROM_LEDGER_UNDERCOUNTED_NODES,
	PROM_LEDGER_NODE_UNCOUNTED,
	PROM_LEDGER_CLAIMS,
	PROM_LEDGER_ENTRIES,
	PROM_LEDGER_MAPPING_AGE_SECONDS,
	PROM_LEDGER_BUILD_SECONDS,
	PROM_LEDGER_UPDATE_SECONDS,
	PROM_LEDGER_UPDATE_NODES,
	PROM_LEDGER_MEMORY_BYTES,
	PROM_LEDGER_AGE_SECONDS,
	PROM_LEDGER_BUILDS_TOTAL,
	PROM_LEDGER_PENDING_TOTAL,
	PROM_LEDGER_DUPLICATES_TOTAL,
	PROM_LEDGER_NUMA_SPLIT_TOTAL,
	PROM_LEDGER_POD_AMOUNTS_TOTAL,
	PROM_LEDGER_POD_OMITTED_TOTAL,
	PROM_LEDGER_POD_AMOUNTS_AMBIGUOUS_TOTAL,
	PROM_LEDGER_UNDECIDED_TOTAL,
	PROM_LEDGER_RECHECKS_TOTAL,
	/* the watches (reflector.c) and the cluster view (cluster_view.c) */
	PROM_WATCH_EVENTS_TOTAL,
	PROM_WATCH_RELISTS_TOTAL,
	PROM_WATCH_ERRORS_TOTAL,
	PROM_WATCH_LISTS_TOTAL,
	PROM_WATCH_RESTARTS_TOTAL,
	PROM_WATCH_BYTES_TOTAL,
	PROM_WATCH_SKIPPED_OBJECTS_TOTAL,
	PROM_WATCH_SYNCED,
	PROM_WATCH_LAST_EVENT_AGE_SECONDS,
	PROM_WATCH_LIST_DURATION_SECONDS,
	PROM_VIEW_OBJECTS,
	PROM_VIEW_MEMORY_BYTES,
	PROM_VIEW_STALE,
	PROM_VIEW_MAX_AGE_SECONDS,
	PROM_VIEW_SNAPSHOTS,
	/* the gate's release and Lease (gate_release.c) */
	PROM_GATE_PODS_GATED,
	PROM_GATE_PODS_RELEASED_TOTAL,
	PROM_GATE_RELEASE_ERRORS_TOTAL,
	PROM_GATE_RELEASE_SECONDS,
	PROM_GATE_LEADER,
	PROM_GATE_LEASE_ERRORS_TOTAL,
	PROM_GATE_LEASE_ACQUIRED_TOTAL,
	PROM_GATE_LEASE_FOREIGN,
	/* Events and the pending claims (event_sink.c) */
	PROM_EVENTS_REFUSALS_TOTAL,
	PROM_EVENTS_SENT_TOTAL,
	PROM_EVENTS_DROPPED_TOTAL,
	PROM_EVENTS_SERIES,
	PROM_PENDING_CLAIMS,
	PROM_PENDING_DROPPED_TOTAL,
	PROM_PENDING_SECONDS,
	PROM_ID_COUNT
};

/* The row of id; NULL for an id out of range. */
const struct prom_family *prom_family(enum prom_id id);

/* "# HELP <name> <help>\n# TYPE <name> <type>\n". 0 or buf's error. */
int prom_header(struct buf *out, enum prom_id id);

/* One sample line, written in three steps: prom_line_begin() writes the
 * name (and suffix: "_bucket", "_sum", "_count" or ""), each
 * prom_line_label() the family's next label, prom_line_le() a histogram
 * bucket's bound, and prom_line_end() the value as fmt formats it. The
 * first error sticks and prom_line_end() returns it. */
struct prom_line {                /* fields are private */
	struct buf *out;
	const struct prom_family *f;
	unsigned nlabels;
	int rc;
};

void prom_line_begin(struct prom_line *l, struct buf *out, enum prom_id id, const char *suffix);
void prom_line_label(struct prom_line *l, const char *value, size_t len);
void prom_line_le(struct prom_line *l, const char *le);
int prom_line_end(struct prom_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A whole sample of a family whose label values are C strings: values
 * holds one per label of the family (NULL when it has none). */
int prom_sample(struct buf *out, enum prom_id id, const char *const *values, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A family without labels and its one sample: prom_header() then the
 * sample, its value as fmt formats it. 0 or buf's error. */
int prom_scalar(struct buf *out, enum prom_id id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* v[0..n) escaped for a label value (\\, \", \n). 0 or buf's error. */
int prom_escape_label(struct buf *out, const char *v, size_t n);

#endif
