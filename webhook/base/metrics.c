/* metrics.c - the server's Prometheus metrics. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

/* Longest string kept for a string-labelled gauge (the freeze reason is
 * capped at POLICY_FREEZE_REASON_MAX already; this is a second fence). */
#define METRICS_LABEL_MAX 1024

static const char *const endpoint_names[METRICS_EP_COUNT] = { "validate", "mutate" };

/* The resource label's values, by kind (metrics_kind_of_resource()): a
 * kind without one (Nodes) counts as "other". */
static const char *const resource_names[OBJECT_KIND_COUNT] = {
	[OBJECT_RESOURCE_SLICE] = "resourceslices", [OBJECT_RESOURCE_CLAIM] = "resourceclaims",
	[OBJECT_POD] = "pods", [OBJECT_CONFIG_MAP] = "configmaps", [OBJECT_OTHER] = "other",
	[OBJECT_NONE] = "unknown",
};

/* The order the label's values are written in. */
static const enum object_kind resource_order[] = {
	OBJECT_RESOURCE_SLICE, OBJECT_RESOURCE_CLAIM, OBJECT_POD, OBJECT_CONFIG_MAP, OBJECT_OTHER, OBJECT_NONE,
};
#define NRESOURCES ((int)(sizeof(resource_order) / sizeof(resource_order[0])))

static const char *const result_names[METRICS_RESULT_COUNT] = { "allowed", "denied", "error" };

static const char *const op_names[METRICS_OP_COUNT] = {
	[ADMISSION_OP_UNKNOWN] = "unknown",
	[ADMISSION_OP_CREATE] = "CREATE",
	[ADMISSION_OP_UPDATE] = "UPDATE",
	[ADMISSION_OP_DELETE] = "DELETE",
	[ADMISSION_OP_CONNECT] = "CONNECT",
};

static const unsigned http_codes[METRICS_HTTP_COUNT] = { 400, 404, 405, 408, 413, 415, 500, 503 };

static const char *const reload_names[METRICS_RELOAD_COUNT] = { "success", "error" };

static const char *const memory_kind_names[REQMEM_KIND_COUNT] = { "body", "answer" };

/* Bucket bounds in nanoseconds and as written in the le label. */
static const uint64_t bucket_ns[METRICS_BUCKETS] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000ULL, 5000000000ULL,
	10000000000ULL,
};
static const char *const bucket_le[METRICS_BUCKETS] = {
	"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
	"0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};

struct histogram {
	atomic_uint_fast64_t bucket[METRICS_BUCKETS];   /* not cumulative: summed on render */
	atomic_uint_fast64_t count;
	atomic_uint_fast64_t sum_ns;
};

/* A driver's denial counter. The name is written once, before the slot is
 * published by raising metrics.ndrivers (release), and never changes. */
struct driver_slot {
	char name[METRICS_DRIVER_NAME_MAX + 1];
	size_t len;
	atomic_uint_fast64_t denials;
};

struct metrics {
	atomic_uint_fast64_t requests[METRICS_EP_COUNT][OBJECT_KIND_COUNT][METRICS_OP_COUNT]
				     [METRICS_RESULT_COUNT];
	struct histogram duration[METRICS_EP_COUNT][METRICS_RESULT_COUNT];
	atomic_uint_fast64_t violations[RULE_COUNT][ACTION_DRYRUN + 1];
	atomic_uint_fast64_t break_glass[OBJECT_KIND_COUNT];
	atomic_uint_fast64_t gate_withheld;
	atomic_uint_fast64_t http_errors[METRICS_HTTP_COUNT];
	struct driver_slot drivers[METRICS_DRIVERS_MAX];
	atomic_size_t ndrivers;       /* published slots */
	atomic_uint_fast64_t other_driver_denials;
	atomic_int_fast64_t in_flight;
	atomic_uint nworkers;
	atomic_int_fast64_t worker_conns[METRICS_WORKERS_MAX];
	atomic_uint_fast64_t policy_reload[METRICS_RELOAD_COUNT];
	atomic_int policy_last_ok;    /* the last load attempt loaded */
	atomic_int policy_input_missing;
	atomic_uint_fast32_t freeze_alert_after_s;
	atomic_uint_fast64_t tls_reload[METRICS_RELOAD_COUNT];
	atomic_int_fast64_t tls_not_after_s;
	atomic_int ready;
	int (*extra[METRICS_EXTRA_MAX])(void *ctx, struct buf *out);
	void *extra_ctx[METRICS_EXTRA_MAX];
	unsigned nextra;
	atomic_uint_fast64_t memory_refusals[REQMEM_KIND_COUNT];
	const struct reqmem *_Atomic memory;

	pthread_mutex_t mu;           /* guards the fields below */
	char version[128];
	char policy_hash[80];
	char policy_source[16];
	int64_t policy_loaded_ns;
	bool freeze_active;
	char freeze_reason[METRICS_LABEL_MAX + 1];
	int64_t freeze_since_ns;
};

static void copy_label(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int metrics_new(const char *version, struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return -ENOMEM;
	}
	copy_label(m->version, sizeof(m->version), version);
	*out = m;
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

enum object_kind metrics_kind_of_resource(const char *resource, size_t len)
{
	int i;

	if (len == 0)
		return OBJECT_NONE;
	for (i = 0; i < NRESOURCES; i++) {
		enum object_kind k = resource_order[i];

		if (k != OBJECT_OTHER && k != OBJECT_NONE && strlen(resource_names[k]) == len &&
		    memcmp(resource_names[k], resource, len) == 0)
			return k;
	}
	return OBJECT_OTHER;
}

/* The kind whose label counts kind. */
static enum object_kind labelled(enum object_kind kind)
{
	return (unsigned)kind < OBJECT_KIND_COUNT && resource_names[kind] ? kind : OBJECT_OTHER;
}

int metrics_http_error_of(unsigned code)
{
	int i;

	for (i = 0; i < METRICS_HTTP_COUNT; i++)
		if (http_codes[i] == code)
			return i;
	return -1;
}

static void inc(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

void metrics_request(struct metrics *m, enum metrics_endpoint ep, enum object_kind kind,
		     enum admission_op op, enum metrics_result result, uint64_t duration_ns)
{
	struct histogram *h;
	int i;

	if ((unsigned)ep >= METRICS_EP_COUNT || (unsigned)result >= METRICS_RESULT_COUNT)
		return;
	if ((unsigned)op >= METRICS_OP_COUNT)
		op = ADMISSION_OP_UNKNOWN;
	inc(&m->requests[ep][labelled(kind)][op][result], 1);
	h = &m->duration[ep][result];
	for (i = 0; i < METRICS_BUCKETS; i++) {
		if (duration_ns <= bucket_ns[i]) {
			inc(&h->bucket[i], 1);
			break;
		}
	}
	inc(&h->sum_ns, duration_ns);
	inc(&h->count, 1);
}

void metrics_violation(struct metrics *m, enum rule_id rule, enum action action)
{
	if ((unsigned)rule < RULE_COUNT && (unsigned)action <= ACTION_DRYRUN)
		inc(&m->violations[rule][action], 1);
}

void metrics_break_glass(struct metrics *m, enum object_kind kind)
{
	inc(&m->break_glass[labelled(kind)], 1);
}

void metrics_gate_withheld(struct metrics *m)
{
	inc(&m->gate_withheld, 1);
}

void metrics_http_error(struct metrics *m, enum metrics_http_error code)
{
	if ((unsigned)code < METRICS_HTTP_COUNT)
		inc(&m->http_errors[code], 1);
}

void metrics_slice_denied(struct metrics *m, const char *driver, size_t len)
{
	size_t i, n = atomic_load_explicit(&m->ndrivers, memory_order_acquire);

	for (i = 0; i < n; i++) {
		if (m->drivers[i].len == len && memcmp(m->drivers[i].name, driver, len) == 0) {
			inc(&m->drivers[i].denials, 1);
			return;
		}
	}
	inc(&m->other_driver_denials, 1);
}

void metrics_slice_driver_add(struct metrics *m, const char *name, size_t len)
{
	size_t i, n;

	/* A driver named "other" shares the catch-all series rather than
	 * rendering a second one with the same label. */
	if (len == 0 || len > METRICS_DRIVER_NAME_MAX || memchr(name, '\0', len) ||
	    (len == 5 && memcmp(name, "other", 5) == 0))
		return;
	pthread_mutex_lock(&m->mu);
	n = atomic_load_explicit(&m->ndrivers, memory_order_relaxed);
	for (i = 0; i < n; i++)
		if (m->drivers[i].len == len && memcmp(m->drivers[i].name, name, len) == 0)
			break;
	if (i == n && n < METRICS_DRIVERS_MAX) {
		memcpy(m->drivers[n].name, name, len);
		m->drivers[n].name[len] = '\0';
		m->drivers[n].len = len;
		atomic_store_explicit(&m->ndrivers, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&m->mu);
}

void metrics_in_flight(struct metrics *m, int delta)
{
	atomic_fetch_add_explicit(&m->in_flight, delta, memory_order_relaxed);
}

void metrics_workers(struct metrics *m, unsigned n)
{
	atomic_store(&m->nworkers, n < METRICS_WORKERS_MAX ? n : METRICS_WORKERS_MAX);
}

void metrics_worker_connection(struct metrics *m, unsigned worker, int delta)
{
	if (worker < METRICS_WORKERS_MAX)
		atomic_fetch_add_explicit(&m->worker_conns[worker], delta, memory_order_relaxed);
}

void metrics_memory_refusal(struct metrics *m, enum reqmem_kind kind)
{
	if ((unsigned)kind < REQMEM_KIND_COUNT)
		inc(&m->memory_refusals[kind], 1);
}

void metrics_memory_watch(struct metrics *m, const struct reqmem *rm)
{
	atomic_store(&m->memory, rm);
}

void metrics_policy_reload(struct metrics *m, enum metrics_reload result)
{
	if ((unsigned)result >= METRICS_RELOAD_COUNT)
		return;
	inc(&m->policy_reload[result], 1);
	atomic_store(&m->policy_last_ok, result == METRICS_RELOAD_SUCCESS);
}

void metrics_policy_unchanged(struct metrics *m)
{
	atomic_store(&m->policy_last_ok, 1);
}

void metrics_policy_input_missing(struct metrics *m, bool missing)
{
	atomic_store(&m->policy_input_missing, missing);
}

void metrics_freeze_alert_after(struct metrics *m, uint32_t seconds)
{
	atomic_store(&m->freeze_alert_after_s, seconds);
}

void metrics_policy_loaded(struct metrics *m, const char *hash, int64_t when_ns)
{
	pthread_mutex_lock(&m->mu);
	copy_label(m->policy_hash, sizeof(m->policy_hash), hash);
	m->policy_loaded_ns = when_ns;
	pthread_mutex_unlock(&m->mu);
}

void metrics_policy_source(struct metrics *m, const char *source)
{
	pthread_mutex_lock(&m->mu);
	copy_label(m->policy_source, sizeof(m->policy_source), source);
	pthread_mutex_unlock(&m->mu);
}

void metrics_add_extra(struct metrics *m, int (*fn)(void *ctx, struct buf *out), void *ctx)
{
	if (m->nextra < METRICS_EXTRA_MAX) {
		m->extra[m->nextra] = fn;
		m->extra_ctx[m->nextra++] = ctx;
	}
}

void metrics_set_extra(struct metrics *m, int (*fn)(void *ctx, struct buf *out), void *ctx)
{
	m->extra[0] = fn;
	m->extra_ctx[0] = ctx;
	if (m->nextra == 0)
		m->nextra = 1;
}

void metrics_freeze(struct metrics *m, bool active, const char *reason, int64_t since_ns)
{
	pthread_mutex_lock(&m->mu);
	m->freeze_active = active;
	copy_label(m->freeze_reason, sizeof(m->freeze_reason), active ? reason : "");
	m->freeze_since_ns = active ? since_ns : 0;
	pthread_mutex_unlock(&m->mu);
}

void metrics_tls_reload(struct metrics *m, enum metrics_reload result)
{
	if ((unsigned)result < METRICS_RELOAD_COUNT)
		inc(&m->tls_reload[result], 1);
}

void metrics_tls_not_after(struct metrics *m, int64_t not_after_s)
{
	atomic_store(&m->tls_not_after_s, not_after_s);
}

void metrics_ready(struct metrics *m, bool ready)
{
	atomic_store(&m->ready, ready ? 1 : 0);
}

/* Nanoseconds as seconds with millisecond precision ("12.345"). */
static void seconds(int64_t ns, char out[32])
{
	if (ns == 0)
		snprintf(out, 32, "0");
	else
		snprintf(out, 32, "%" PRId64 ".%03" PRId64, ns / 1000000000, (ns % 1000000000) / 1000000);
}

static int render_requests(struct metrics *m, struct buf *out)
{
	int rc, e, r, o, s;

	rc = prom_header(out, PROM_REQUESTS_TOTAL);
	for (e = 0; rc == 0 && e < METRICS_EP_COUNT; e++)
		for (r = 0; rc == 0 && r < NRESOURCES; r++)
			for (o = 0; rc == 0 && o < METRICS_OP_COUNT; o++)
				for (s = 0; rc == 0 && s < METRICS_RESULT_COUNT; s++)
					rc = prom_sample(out, PROM_REQUESTS_TOTAL,
							 (const char *const[]){ endpoint_names[e],
										resource_names[resource_order[r]],
										op_names[o], result_names[s] },
							 "%" PRIu64, get(&m->requests[e][resource_order[r]][o][s]));
	return rc;
}

/* One sample of the duration histogram: le NULL for _sum and _count. */
static int duration_line(struct buf *out, const char *suffix, const char *ep, const char *res, const char *le,
			 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int duration_line(struct buf *out, const char *suffix, const char *ep, const char *res, const char *le,
			 const char *fmt, ...)
{
	struct prom_line l;
	char v[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	prom_line_begin(&l, out, PROM_REQUEST_DURATION_SECONDS, suffix);
	prom_line_label(&l, ep, strlen(ep));
	prom_line_label(&l, res, strlen(res));
	if (le)
		prom_line_le(&l, le);
	return prom_line_end(&l, "%s", v);
}

static int render_duration(struct metrics *m, struct buf *out)
{
	int rc, e, r, i;

	rc = prom_header(out, PROM_REQUEST_DURATION_SECONDS);
	for (e = 0; rc == 0 && e < METRICS_EP_COUNT; e++) {
		for (r = 0; rc == 0 && r < METRICS_RESULT_COUNT; r++) {
			struct histogram *h = &m->duration[e][r];
			uint64_t cum = 0, count = get(&h->count), sum = get(&h->sum_ns);
			const char *ep = endpoint_names[e], *res = result_names[r];

			for (i = 0; rc == 0 && i < METRICS_BUCKETS; i++) {
				cum += get(&h->bucket[i]);
				rc = duration_line(out, "_bucket", ep, res, bucket_le[i], "%" PRIu64, cum);
			}
			/* Read apart from the buckets: keep the series monotone and +Inf >= every bucket. */
			if (count < cum)
				count = cum;
			if (rc == 0)
				rc = duration_line(out, "_bucket", ep, res, "+Inf", "%" PRIu64, count);
			if (rc == 0)
				rc = duration_line(out, "_sum", ep, res, NULL, "%.9f", (double)sum / 1e9);
			if (rc == 0)
				rc = duration_line(out, "_count", ep, res, NULL, "%" PRIu64, count);
		}
	}
	return rc;
}

static int render_counters(struct metrics *m, struct buf *out)
{
	int rc, i, a;
	size_t n;

	rc = prom_header(out, PROM_VIOLATIONS_TOTAL);
	for (i = 0; rc == 0 && i < RULE_COUNT; i++)
		for (a = 0; rc == 0 && a <= ACTION_DRYRUN; a++)
			rc = prom_sample(out, PROM_VIOLATIONS_TOTAL,
					 (const char *const[]){ rule_name((enum rule_id)i), action_name((enum action)a) },
					 "%" PRIu64, get(&m->violations[i][a]));
	if (rc == 0)
		rc = prom_header(out, PROM_BREAK_GLASS_TOTAL);
	for (i = 0; rc == 0 && i < NRESOURCES; i++)
		rc = prom_sample(out, PROM_BREAK_GLASS_TOTAL, &resource_names[resource_order[i]], "%" PRIu64,
				 get(&m->break_glass[resource_order[i]]));
	if (rc == 0)
		rc = prom_header(out, PROM_GATE_WITHHELD_TOTAL);
	if (rc == 0)
		rc = prom_sample(out, PROM_GATE_WITHHELD_TOTAL, NULL, "%" PRIu64, get(&m->gate_withheld));
	if (rc == 0)
		rc = prom_header(out, PROM_SLICE_DENIALS_TOTAL);
	n = atomic_load_explicit(&m->ndrivers, memory_order_acquire);
	for (i = 0; rc == 0 && i < (int)n; i++)
		rc = prom_sample(out, PROM_SLICE_DENIALS_TOTAL, (const char *const[]){ m->drivers[i].name },
				 "%" PRIu64, get(&m->drivers[i].denials));
	if (rc == 0)
		rc = prom_sample(out, PROM_SLICE_DENIALS_TOTAL, (const char *const[]){ "other" }, "%" PRIu64,
				 get(&m->other_driver_denials));
	if (rc == 0)
		rc = prom_header(out, PROM_HTTP_ERRORS_TOTAL);
	for (i = 0; rc == 0 && i < METRICS_HTTP_COUNT; i++) {
		char code[16];

		snprintf(code, sizeof(code), "%u", http_codes[i]);
		rc = prom_sample(out, PROM_HTTP_ERRORS_TOTAL, (const char *const[]){ code }, "%" PRIu64,
				 get(&m->http_errors[i]));
	}
	if (rc == 0)
		rc = prom_header(out, PROM_REQUESTS_IN_FLIGHT);
	if (rc == 0)
		rc = prom_sample(out, PROM_REQUESTS_IN_FLIGHT, NULL, "%" PRId64, (int64_t)atomic_load(&m->in_flight));
	if (rc == 0 && atomic_load(&m->nworkers) > 0)
		rc = prom_header(out, PROM_WORKER_CONNECTIONS);
	for (i = 0; rc == 0 && i < (int)atomic_load(&m->nworkers); i++) {
		char worker[16];

		snprintf(worker, sizeof(worker), "%u", (unsigned)i);
		rc = prom_sample(out, PROM_WORKER_CONNECTIONS, (const char *const[]){ worker }, "%" PRId64,
				 (int64_t)atomic_load(&m->worker_conns[i]));
	}
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_RELOAD_TOTAL);
	for (i = 0; rc == 0 && i < METRICS_RELOAD_COUNT; i++)
		rc = prom_sample(out, PROM_POLICY_RELOAD_TOTAL, &reload_names[i], "%" PRIu64,
				 get(&m->policy_reload[i]));
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_LAST_RELOAD_SUCCESSFUL);
	if (rc == 0)
		rc = prom_sample(out, PROM_POLICY_LAST_RELOAD_SUCCESSFUL, NULL, "%d", atomic_load(&m->policy_last_ok));
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_INPUT_MISSING);
	if (rc == 0)
		rc = prom_sample(out, PROM_POLICY_INPUT_MISSING, NULL, "%d", atomic_load(&m->policy_input_missing));
	if (rc == 0)
		rc = prom_header(out, PROM_FREEZE_ALERT_AFTER_SECONDS);
	if (rc == 0)
		rc = prom_sample(out, PROM_FREEZE_ALERT_AFTER_SECONDS, NULL, "%" PRIu32,
				 (uint32_t)atomic_load(&m->freeze_alert_after_s));
	if (rc == 0)
		rc = prom_header(out, PROM_TLS_RELOAD_TOTAL);
	for (i = 0; rc == 0 && i < METRICS_RELOAD_COUNT; i++)
		rc = prom_sample(out, PROM_TLS_RELOAD_TOTAL, &reload_names[i], "%" PRIu64, get(&m->tls_reload[i]));
	if (rc == 0)
		rc = prom_header(out, PROM_TLS_CERT_NOT_AFTER);
	if (rc == 0)
		rc = prom_sample(out, PROM_TLS_CERT_NOT_AFTER, NULL, "%" PRId64, (int64_t)atomic_load(&m->tls_not_after_s));
	if (rc == 0)
		rc = prom_header(out, PROM_READY);
	if (rc == 0)
		rc = prom_sample(out, PROM_READY, NULL, "%d", atomic_load(&m->ready));
	return rc;
}

static int render_memory(struct metrics *m, struct buf *out)
{
	const struct reqmem *rm = atomic_load(&m->memory);
	int rc, i;

	rc = prom_header(out, PROM_MEMORY_BUDGET_BYTES);
	if (rc == 0)
		rc = prom_sample(out, PROM_MEMORY_BUDGET_BYTES, NULL, "%zu", rm ? reqmem_budget(rm) : 0);
	if (rc == 0)
		rc = prom_header(out, PROM_MEMORY_IN_USE_BYTES);
	if (rc == 0)
		rc = prom_sample(out, PROM_MEMORY_IN_USE_BYTES, NULL, "%zu", rm ? reqmem_in_use(rm) : 0);
	if (rc == 0)
		rc = prom_header(out, PROM_MEMORY_REFUSALS_TOTAL);
	for (i = 0; rc == 0 && i < REQMEM_KIND_COUNT; i++)
		rc = prom_sample(out, PROM_MEMORY_REFUSALS_TOTAL, &memory_kind_names[i], "%" PRIu64,
				 get(&m->memory_refusals[i]));
	return rc;
}

/* The string-labelled gauges, under the mutex. */
static int render_state(struct metrics *m, struct buf *out)
{
	char t[32];
	int rc;

	pthread_mutex_lock(&m->mu);
	rc = prom_header(out, PROM_BUILD_INFO);
	if (rc == 0)
		rc = prom_sample(out, PROM_BUILD_INFO, (const char *const[]){ m->version }, "1");
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_INFO);
	if (rc == 0 && m->policy_hash[0])
		rc = prom_sample(out, PROM_POLICY_INFO, (const char *const[]){ m->policy_hash }, "1");
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_SOURCE);
	if (rc == 0 && m->policy_source[0])
		rc = prom_sample(out, PROM_POLICY_SOURCE, (const char *const[]){ m->policy_source }, "1");
	if (rc == 0)
		rc = prom_header(out, PROM_POLICY_LAST_RELOAD_SUCCESS_TIMESTAMP);
	seconds(m->policy_loaded_ns, t);
	if (rc == 0)
		rc = prom_sample(out, PROM_POLICY_LAST_RELOAD_SUCCESS_TIMESTAMP, NULL, "%s", t);
	if (rc == 0)
		rc = prom_header(out, PROM_FREEZE_ACTIVE);
	if (rc == 0)
		rc = prom_sample(out, PROM_FREEZE_ACTIVE, NULL, "%d", m->freeze_active ? 1 : 0);
	if (rc == 0)
		rc = prom_header(out, PROM_FREEZE_INFO);
	if (rc == 0 && m->freeze_active)
		rc = prom_sample(out, PROM_FREEZE_INFO, (const char *const[]){ m->freeze_reason }, "1");
	if (rc == 0)
		rc = prom_header(out, PROM_FREEZE_SINCE_TIMESTAMP);
	seconds(m->freeze_since_ns, t);
	if (rc == 0)
		rc = prom_sample(out, PROM_FREEZE_SINCE_TIMESTAMP, NULL, "%s", t);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int metrics_render(struct metrics *m, struct buf *out)
{
	size_t start = buf_len(out);
	int rc = render_requests(m, out);

	if (rc == 0)
		rc = render_duration(m, out);
	if (rc == 0)
		rc = render_counters(m, out);
	if (rc == 0)
		rc = render_memory(m, out);
	if (rc == 0)
		rc = render_state(m, out);
	for (unsigned i = 0; rc == 0 && i < m->nextra; i++)
		if (m->extra[i])
			rc = m->extra[i](m->extra_ctx[i], out);
	if (rc != 0)
		buf_truncate(out, start);
	return rc;
}
