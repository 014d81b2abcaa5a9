/* prom.c - see prom.h. */
#include "prom.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>


#define L(...) { __VA_ARGS__ }
#define NSER PROM_STR(PROM_LEDGER_NODE_SERIES)

static const struct prom_family families[PROM_ID_COUNT] = {
	[PROM_REQUESTS_TOTAL] = { "dra_guard_requests_total", PROM_COUNTER,
		"Admission requests answered, by endpoint, resource, operation and result.",
		L("endpoint", "resource", "operation", "result") },
	[PROM_REQUEST_DURATION_SECONDS] = { "dra_guard_request_duration_seconds", PROM_HISTOGRAM,
		"Time from the request's headers to its answer, by endpoint and result.", L("endpoint", "result") },
	[PROM_VIOLATIONS_TOTAL] = { "dra_guard_violations_total", PROM_COUNTER,
		"Rule violations found, by rule id and the action the policy gave it.", L("rule", "action") },
	[PROM_BREAK_GLASS_TOTAL] = { "dra_guard_break_glass_total", PROM_COUNTER,
		"Requests let through by a break-glass identity, by resource.", L("resource") },
	[PROM_GATE_WITHHELD_TOTAL] = { "dra_guard_gate_withheld_total", PROM_COUNTER,
		"New Pods the freeze would have held at its scheduling gate but did not, because no replica could "
		"release them (none runs --gate-release, or its Lease has no live holder).", { NULL } },
	[PROM_SLICE_DENIALS_TOTAL] = { "dra_guard_slice_denials_total", PROM_COUNTER,
		"Denied ResourceSlice writes, by spec.driver: a driver the policy lists, or other.", L("driver") },
	[PROM_HTTP_ERRORS_TOTAL] = { "dra_guard_http_errors_total", PROM_COUNTER,
		"HTTP error answers on the webhook port, by status code.", L("code") },
	[PROM_REQUESTS_IN_FLIGHT] = { "dra_guard_requests_in_flight", PROM_GAUGE,
		"Admission requests being answered right now.", { NULL } },
	[PROM_WORKER_CONNECTIONS] = { "dra_guard_webhook_connections", PROM_GAUGE,
		"Open connections of the webhook port, by the worker thread serving them.", L("worker") },
	[PROM_POLICY_RELOAD_TOTAL] = { "dra_guard_policy_reload_total", PROM_COUNTER,
		"Policy loads and reloads, by result; a failed one keeps the last good policy.", L("result") },
	[PROM_POLICY_LAST_RELOAD_SUCCESSFUL] = { "dra_guard_policy_last_reload_successful", PROM_GAUGE,
		"1 when the last policy load attempt loaded; 0 while a broken input is held back.", { NULL } },
	[PROM_POLICY_INPUT_MISSING] = { "dra_guard_policy_input_missing", PROM_GAUGE,
		"1 while the policy's source (the ConfigMap in the API, the file, the directory's policy.yaml) is "
		"gone and the last good policy keeps serving.", { NULL } },
	[PROM_FREEZE_ALERT_AFTER_SECONDS] = { "dra_guard_freeze_alert_after_seconds", PROM_GAUGE,
		"The serving policy's freeze.alertAfter: how long a freeze may last before it is alerted on.", { NULL } },
	[PROM_TLS_RELOAD_TOTAL] = { "dra_guard_tls_reload_total", PROM_COUNTER,
		"Certificate loads and reloads, by result; a failed one keeps the serving pair.", L("result") },
	[PROM_TLS_CERT_NOT_AFTER] = { "dra_guard_tls_cert_not_after_timestamp_seconds", PROM_GAUGE,
		"Expiry of the serving certificate, Unix time.", { NULL } },
	[PROM_READY] = { "dra_guard_ready", PROM_GAUGE,
		"1 when a certificate and a valid policy are loaded (what /readyz answers).", { NULL } },
	[PROM_MEMORY_BUDGET_BYTES] = { "dra_guard_memory_budget_bytes", PROM_GAUGE,
		"Bytes of request bodies and answers the server may hold at once (--memory-budget).", { NULL } },
	[PROM_MEMORY_IN_USE_BYTES] = { "dra_guard_memory_in_use_bytes", PROM_GAUGE,
		"Bytes of request bodies received and answers not yet sent, over every connection.", { NULL } },
	[PROM_MEMORY_REFUSALS_TOTAL] = { "dra_guard_memory_refusals_total", PROM_COUNTER,
		"Requests answered 503 because their body or answer did not fit in the memory budget.", L("kind") },
	[PROM_BUILD_INFO] = { "dra_guard_build_info", PROM_GAUGE, "The running build; the value is always 1.",
		L("version") },
	[PROM_POLICY_INFO] = { "dra_guard_policy_info", PROM_GAUGE,
		"The serving policy, by its SHA-256 hash; absent while no policy is loaded.", L("hash") },
	[PROM_POLICY_SOURCE] = { "dra_guard_policy_source", PROM_GAUGE,
		"Where the serving policy came from (api, directory, file, built-in); the value is always 1.",
		L("source") },
	[PROM_POLICY_LAST_RELOAD_SUCCESS_TIMESTAMP] = { "dra_guard_policy_last_reload_success_timestamp_seconds",
		PROM_GAUGE, "When the serving policy was loaded, Unix time; 0 while none is.", { NULL } },
	[PROM_FREEZE_ACTIVE] = { "dra_guard_freeze_active", PROM_GAUGE,
		"1 while the serving policy holds a rollback freeze.", { NULL } },
	[PROM_FREEZE_INFO] = { "dra_guard_freeze_info", PROM_GAUGE,
		"The active freeze's reason; absent while no freeze is active.", L("reason") },
	[PROM_FREEZE_SINCE_TIMESTAMP] = { "dra_guard_freeze_since_timestamp_seconds", PROM_GAUGE,
		"When the active freeze began, Unix time; 0 while none is active.", { NULL } },

	[PROM_DEBUG_MEMORY_BYTES] = { "dra_guard_debug_memory_bytes", PROM_GAUGE,
		"Bytes of /debug/* answers held now (--debug-memory-budget).", { NULL } },
	[PROM_DEBUG_REFUSED_TOTAL] = { "dra_guard_debug_refused_total", PROM_COUNTER,
		"/debug/* requests refused: busy (another answer of the path in flight), budget (past "
		"--debug-memory-budget).", L("reason") },
	[PROM_METRICS_AUTH_TOTAL] = { "dra_guard_metrics_auth_total", PROM_COUNTER,
		"Requests to the metrics port by the outcome of their token and access check (error: the API server "
		"could not review; throttled: past 20 reviews a second; both denied).", L("result") },
	[PROM_METRICS_AUTH_CACHE_HITS_TOTAL] = { "dra_guard_metrics_auth_cache_hits_total", PROM_COUNTER,
		"Metrics port checks answered from the cache of review outcomes.", { NULL } },

	[PROM_LEDGER_CAPACITY] = { "dra_guard_ledger_capacity", PROM_GAUGE,
		"Allocatable over every node in the ledger, by resource (cores, bytes).", L("resource") },
	[PROM_LEDGER_USAGE] = { "dra_guard_ledger_usage", PROM_GAUGE,
		"What the scheduler counts against it, by resource and source (pods: the Pods' own requests; dra: "
		"claims' node-allocatable amounts).", L("resource", "source") },
	[PROM_LEDGER_OVERCOMMITTED_NODES] = { "dra_guard_ledger_overcommitted_nodes", PROM_GAUGE,
		"Nodes whose Pod requests and DRA amounts exceed their allocatable (ledger.node.overcommit).", { NULL } },
	[PROM_LEDGER_UNBALANCED_NODES] = { "dra_guard_ledger_unbalanced_nodes", PROM_GAUGE,
		"Nodes where the ledger's DRA amounts and what the Pod statuses say differ.", { NULL } },
	[PROM_LEDGER_NODE_OVERCOMMIT] = { "dra_guard_ledger_node_overcommit", PROM_GAUGE,
		"How far an overcommitted node is over, by resource (the " NSER " largest).", L("node", "resource") },
	[PROM_LEDGER_NODE_DIVERGENCE] = { "dra_guard_ledger_node_divergence", PROM_GAUGE,
		"The ledger's DRA amount for the claims the node's Pod statuses name, minus what those statuses say, "
		"by resource (the " NSER " largest).", L("node", "resource") },
	[PROM_LEDGER_UNDERCOUNTED_NODES] = { "dra_guard_ledger_undercounted_nodes", PROM_GAUGE,
		"Nodes where a claim a Pod on the node reserves, and whose devices carry mappings, is in none of the "
		"node's Pod statuses: the scheduler counts the node that much less than it is committed "
		"(kube-scheduler 1.36 counts only claims allocated in the cycle that binds the Pod).", { NULL } },
	[PROM_LEDGER_NODE_UNCOUNTED] = { "dra_guard_ledger_node_uncounted", PROM_GAUGE,
		"What the mappings commit on a node that the scheduler does not count, by resource and cause "
		"(omitted: a claim reserved by a Pod on the node that no Pod status names; the " NSER " largest).",
		L("node", "resource", "cause") },
	[PROM_LEDGER_CLAIMS] = { "dra_guard_ledger_claims", PROM_GAUGE,
		"Allocated claims, by state (charged: on a node; pending: a device not in the view yet; unreserved: "
		"a multi-node claim no Pod on a node reserves; old_mapping: charged at a mapping its device no "
		"longer has).", L("state") },
	[PROM_LEDGER_ENTRIES] = { "dra_guard_ledger_entries", PROM_GAUGE,
		"Ledger entries (node, claim, allocation result).", { NULL } },
	[PROM_LEDGER_MAPPING_AGE_SECONDS] = { "dra_guard_ledger_mapping_age_seconds", PROM_GAUGE,
		"Seconds since the view last saw a mapping change; -1 when it saw none.", { NULL } },
	[PROM_LEDGER_BUILD_SECONDS] = { "dra_guard_ledger_build_seconds", PROM_GAUGE,
		"How long the last whole ledger build took (the first scrape, a new policy).", { NULL } },
	[PROM_LEDGER_UPDATE_SECONDS] = { "dra_guard_ledger_update_seconds", PROM_GAUGE,
		"How long the last update of the ledger from a view change took: how far the ledger gauges were "
		"behind the view when served.", { NULL } },
	[PROM_LEDGER_UPDATE_NODES] = { "dra_guard_ledger_update_nodes", PROM_GAUGE,
		"Node accounts the last update counted again (the nodes whose Node, Pods or charged claims "
		"changed).", { NULL } },
	[PROM_LEDGER_MEMORY_BYTES] = { "dra_guard_ledger_memory_bytes", PROM_GAUGE,
		"Memory of the kept ledger: node accounts, entries, indexes.", { NULL } },
	[PROM_LEDGER_AGE_SECONDS] = { "dra_guard_ledger_age_seconds", PROM_GAUGE,
		"Seconds since the ledger these figures come from was brought up to the view (every scrape and "
		"/debug/ledger request does).", { NULL } },
	[PROM_LEDGER_BUILDS_TOTAL] = { "dra_guard_ledger_builds_total", PROM_COUNTER,
		"Ledger builds by kind (built: whole, for the first scrape or a new policy; updated: from what "
		"changed in the view since the last).", L("result") },
	[PROM_LEDGER_PENDING_TOTAL] = { "dra_guard_ledger_pending_total", PROM_COUNTER,
		"Allocations ledger.pool.fresh found, by cause (the Pod stays pending while the rule denies).",
		L("cause") },
	[PROM_LEDGER_DUPLICATES_TOTAL] = { "dra_guard_ledger_duplicates_total", PROM_COUNTER,
		"Allocations of a device another live claim holds (ledger.device.duplicate).", { NULL } },
	[PROM_LEDGER_NUMA_SPLIT_TOTAL] = { "dra_guard_ledger_numa_split_total", PROM_COUNTER,
		"Allocations whose devices span NUMA zones where the policy asks for one (ledger.numa.split).",
		{ NULL } },
	[PROM_LEDGER_POD_AMOUNTS_TOTAL] = { "dra_guard_ledger_pod_amounts_total", PROM_COUNTER,
		"Pod status writes whose amounts differ from the ledger's (ledger.pod.amounts).", { NULL } },
	[PROM_LEDGER_POD_OMITTED_TOTAL] = { "dra_guard_ledger_pod_omitted_total", PROM_COUNTER,
		"Pod status writes that leave out a claim reserved for the Pod whose devices carry mappings "
		"(ledger.pod.omitted): the scheduler does not count it on the node.", { NULL } },
	[PROM_LEDGER_POD_AMOUNTS_AMBIGUOUS_TOTAL] = { "dra_guard_ledger_pod_amounts_ambiguous_total", PROM_COUNTER,
		"Pod status writes whose amounts differ from the ledger's but are what kube-scheduler 1.36 computes "
		"from another device of the same pool and device name (another driver's, an older generation's): "
		"allowed with a warning (ledger.pod.amounts).", { NULL } },
	[PROM_LEDGER_UNDECIDED_TOTAL] = { "dra_guard_ledger_undecided_total", PROM_COUNTER,
		"Requests a rule that reads the view let through because the view could not decide, by rule and "
		"reason.", L("rule", "reason") },
	[PROM_LEDGER_RECHECKS_TOTAL] = { "dra_guard_ledger_rechecks_total", PROM_COUNTER,
		"Denials by a rule that reads the view, decided again on a newer view before they stood, by result.",
		L("result") },

	[PROM_WATCH_EVENTS_TOTAL] = { "dra_guard_watch_events_total", PROM_COUNTER,
		"WATCH events applied, by resource and type.", L("resource", "type") },
	[PROM_WATCH_RELISTS_TOTAL] = { "dra_guard_watch_relists_total", PROM_COUNTER,
		"LISTs started, by resource and reason (start, expired: 410, error: connection or server, decode: a "
		"body not as the API server sends).", L("resource", "reason") },
	[PROM_WATCH_ERRORS_TOTAL] = { "dra_guard_watch_errors_total", PROM_COUNTER,
		"Requests to the API server that failed and were retried after a backoff, by resource and request "
		"(discovery, list, watch).", L("resource", "request") },
	[PROM_WATCH_LISTS_TOTAL] = { "dra_guard_watch_lists_total", PROM_COUNTER,
		"LISTs completed, by resource and mode (stream: a WATCH with sendInitialEvents; pages: LIST with "
		"limit and continue).", L("resource", "mode") },
	[PROM_WATCH_RESTARTS_TOTAL] = { "dra_guard_watch_restarts_total", PROM_COUNTER,
		"WATCHes sent again from the same resourceVersion, without a LIST, by resource and reason (silent: "
		"nothing on it for --watch-silence; short: it ended within a second with no event, retried after a "
		"backoff).", L("resource", "reason") },
	[PROM_WATCH_BYTES_TOTAL] = { "dra_guard_watch_bytes_total", PROM_COUNTER,
		"Bytes of LIST and WATCH bodies decoded, by resource.", L("resource") },
	[PROM_WATCH_SKIPPED_OBJECTS_TOTAL] = { "dra_guard_watch_skipped_objects_total", PROM_COUNTER,
		"Objects that did not decode or were refused by a cap, by resource (logged).", L("resource") },
	[PROM_WATCH_SYNCED] = { "dra_guard_watch_synced", PROM_GAUGE,
		"1 once the resource's first LIST completed.", L("resource") },
	[PROM_WATCH_LAST_EVENT_AGE_SECONDS] = { "dra_guard_watch_last_event_age_seconds", PROM_GAUGE,
		"Seconds since the last LIST, event or bookmark of the resource; -1 before the first.", L("resource") },
	[PROM_WATCH_LIST_DURATION_SECONDS] = { "dra_guard_watch_list_duration_seconds", PROM_HISTOGRAM,
		"Time from a LIST's first page to its swap into the view, by resource.", L("resource") },
	[PROM_VIEW_OBJECTS] = { "dra_guard_view_objects", PROM_GAUGE,
		"Objects held in the cluster view, by resource.", L("resource") },
	[PROM_VIEW_MEMORY_BYTES] = { "dra_guard_view_memory_bytes", PROM_GAUGE,
		"Bytes the view's records and interned atoms (with their id table) take.", L("part") },
	[PROM_VIEW_STALE] = { "dra_guard_view_stale", PROM_GAUGE,
		"1 while a watched resource was last heard of longer ago than the policy's clusterView.maxAge (rules "
		"that need a fresh view cannot decide).", { NULL } },
	[PROM_VIEW_MAX_AGE_SECONDS] = { "dra_guard_view_max_age_seconds", PROM_GAUGE,
		"The serving policy's clusterView.maxAge: how long a watched resource may go unheard before the view "
		"is stale.", { NULL } },
	[PROM_VIEW_SNAPSHOTS] = { "dra_guard_view_snapshots", PROM_GAUGE,
		"Published snapshots still read by a request.", { NULL } },

	[PROM_GATE_PODS_GATED] = { "dra_guard_gate_pods_gated", PROM_GAUGE,
		"Pods the cluster view holds with the freeze's scheduling gate.", { NULL } },
	[PROM_GATE_PODS_RELEASED_TOTAL] = { "dra_guard_gate_pods_released_total", PROM_COUNTER,
		"Pods this replica released from the freeze's gate.", { NULL } },
	[PROM_GATE_RELEASE_ERRORS_TOTAL] = { "dra_guard_gate_release_errors_total", PROM_COUNTER,
		"Release patches that failed (retried).", { NULL } },
	[PROM_GATE_RELEASE_SECONDS] = { "dra_guard_gate_release_seconds", PROM_GAUGE,
		"From the end of the last freeze to the last release this replica made after it.", { NULL } },
	[PROM_GATE_LEADER] = { "dra_guard_gate_leader", PROM_GAUGE,
		"1 while this replica holds the gate's Lease.", { NULL } },
	[PROM_GATE_LEASE_ERRORS_TOTAL] = { "dra_guard_gate_lease_errors_total", PROM_COUNTER,
		"Lease requests that failed.", { NULL } },
	[PROM_GATE_LEASE_ACQUIRED_TOTAL] = { "dra_guard_gate_lease_acquired_total", PROM_COUNTER,
		"Times this replica took the Lease.", { NULL } },
	[PROM_GATE_LEASE_FOREIGN] = { "dra_guard_gate_lease_foreign", PROM_GAUGE,
		"1 while the Lease names a holder that is no replica of the guard, or a leaseDurationSeconds beyond "
		"--gate-lease-duration: no Pod is gated for it.", { NULL } },
	[PROM_EVENTS_REFUSALS_TOTAL] = { "dra_guard_events_refusals_total", PROM_COUNTER,
		"Refusals that asked for an Event (one per rule and review), by reason.", L("reason") },
	[PROM_EVENTS_SENT_TOTAL] = { "dra_guard_events_sent_total", PROM_COUNTER,
		"Requests that wrote an Event: create (a new series) and patch (its count).", L("request") },
	[PROM_EVENTS_DROPPED_TOTAL] = { "dra_guard_events_dropped_total", PROM_COUNTER,
		"Events not written, by cause (queue_full, rate_limited, cache_full, api_error).", L("cause") },
	[PROM_EVENTS_SERIES] = { "dra_guard_events_series", PROM_GAUGE, "Event series held in memory.", { NULL } },
	[PROM_PENDING_CLAIMS] = { "dra_guard_pending_claims", PROM_GAUGE,
		"Claims refused now (GET /debug/pending).", { NULL } },
	[PROM_PENDING_DROPPED_TOTAL] = { "dra_guard_pending_dropped_total", PROM_COUNTER,
		"Refused claims not tracked: the pending table was full.", { NULL } },
	[PROM_PENDING_SECONDS] = { "dra_guard_pending_seconds", PROM_HISTOGRAM,
		"Time from a claim's first refused allocation to its allocation (as the cluster view saw it), by the "
		"reason that held it last.", L("reason") },
};

static const char *const type_names[] = { "counter", "gauge", "histogram" };

const struct prom_family *prom_family(enum prom_id id)
{
	return (unsigned)id < PROM_ID_COUNT ? &families[id] : NULL;
}

int prom_header(struct buf *out, enum prom_id id)
{
	const struct prom_family *f = prom_family(id);

	if (!f)
		return -EINVAL;
	return buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, type_names[f->type]);
}

int prom_escape_label(struct buf *out, const char *v, size_t n)
{
	size_t i, run = 0;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const char *esc = NULL;

		switch (v[i]) {
		case '\\':
			esc = "\\\\";
			break;
		case '"':
			esc = "\\\"";
			break;
		case '\n':
			esc = "\\n";
			break;
		default:
			run++;
			continue;
		}
		rc = buf_add(out, v + i - run, run);
		run = 0;
		if (rc == 0)
			rc = buf_add_cstr(out, esc);
	}
	if (rc == 0)
		rc = buf_add(out, v + n - run, run);
	return rc;
}

void prom_line_begin(struct prom_line *l, struct buf *out, enum prom_id id, const char *suffix)
{
	l->out = out;
	l->f = prom_family(id);
	l->nlabels = 0;
	l->rc = l->f ? buf_add_cstr(out, l->f->name) : -EINVAL;
	if (l->rc == 0 && suffix)
		l->rc = buf_add_cstr(out, suffix);
}

static void label(struct prom_line *l, const char *name, const char *value, size_t len)
{
	if (l->rc == 0)
		l->rc = buf_add_char(l->out, l->nlabels ? ',' : '{');
	if (l->rc == 0)
		l->rc = buf_add_cstr(l->out, name);
	if (l->rc == 0)
		l->rc = buf_add(l->out, "=\"", 2);
	if (l->rc == 0)
		l->rc = prom_escape_label(l->out, value, len);
	if (l->rc == 0)
		l->rc = buf_add_char(l->out, '"');
	l->nlabels++;
}

void prom_line_label(struct prom_line *l, const char *value, size_t len)
{
	/* A label the row does not name is the caller's bug: refuse the line. */
	if (l->rc == 0 && (l->nlabels >= PROM_LABELS_MAX || !l->f->labels[l->nlabels]))
		l->rc = -EINVAL;
	if (l->rc == 0)
		label(l, l->f->labels[l->nlabels], value, len);
}

void prom_line_le(struct prom_line *l, const char *le)
{
	label(l, "le", le, strlen(le));
}

static int line_end(struct prom_line *l, const char *fmt, va_list ap)
{
	if (l->rc == 0 && l->nlabels)
		l->rc = buf_add_char(l->out, '}');
	if (l->rc == 0)
		l->rc = buf_add_char(l->out, ' ');
	if (l->rc == 0)
		l->rc = buf_vprintf(l->out, fmt, ap);
	if (l->rc == 0)
		l->rc = buf_add_char(l->out, '\n');
	return l->rc;
}

int prom_line_end(struct prom_line *l, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = line_end(l, fmt, ap);
	va_end(ap);
	return rc;
}

int prom_scalar(struct buf *out, enum prom_id id, const char *fmt, ...)
{
	struct prom_line l;
	va_list ap;
	int rc;

	if ((rc = prom_header(out, id)) != 0)
		return rc;
	prom_line_begin(&l, out, id, NULL);
	va_start(ap, fmt);
	rc = line_end(&l, fmt, ap);
	va_end(ap);
	return rc;
}

int prom_sample(struct buf *out, enum prom_id id, const char *const *values, const char *fmt, ...)
{
	struct prom_line l;
	va_list ap;
	unsigned i;
	int rc;

	prom_line_begin(&l, out, id, NULL);
	for (i = 0; values && l.rc == 0 && i < PROM_LABELS_MAX && l.f->labels[i]; i++)
		prom_line_label(&l, values[i], strlen(values[i]));
	va_start(ap, fmt);
	rc = line_end(&l, fmt, ap);
	va_end(ap);
	return rc;
}
