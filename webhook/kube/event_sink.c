/* event_sink.c - Events off the request path, and pending time. */
#include "event_sink.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jw.h"
#include "log.h"
#include "prom.h"
#include "pending.h"
#include "snapshot.h"

/* Events dropped, by cause (dra_guard_events_dropped_total). */
enum drop {
	DROP_QUEUE = 0,               /* the queue was full */
	DROP_LIMITED,                 /* the object's rate limit */
	DROP_CACHE,                   /* max series held */
	DROP_API,                     /* the API server refused the Event or did not answer */
	DROP_COUNT
};

static const char *const drop_names[DROP_COUNT] = { "queue_full", "rate_limited", "cache_full", "api_error" };

struct event_sink {
	struct event_sink_config cfg;
	struct kube_client *client;
	struct cluster_view *cv;
	struct event_cache *cache;    /* the worker's */
	pthread_t thread;
	bool started;

	pthread_mutex_t qmu;          /* the queue */
	pthread_cond_t qcond;
	struct events_report *queue;  /* ring of cfg.queue */
	uint32_t qhead, qlen;
	bool stop;

	pthread_mutex_t pmu;          /* the pending table and the histogram */
	struct pending_table *pending;
	struct pending_hist hist;
	uint64_t pending_full;

	/* metrics */
	atomic_uint_fast64_t observed[EVENTS_RULES];   /* refusals, by reason */
	atomic_uint_fast64_t created, patched;
	atomic_uint_fast64_t dropped[DROP_COUNT];
	atomic_uint_fast32_t series;
};

void event_sink_config_default(struct event_sink_config *cfg, const char *instance)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->instance, sizeof(cfg->instance), "%s", instance);
	cfg->queue = 512;
	event_cache_limits_default(&cfg->limits);
	cfg->max_pending = 10000;
	cfg->pending_idle_ns = PENDING_IDLE_DEFAULT_NS;
}

int event_sink_new(const struct event_sink_config *cfg, struct kube_client *client, struct cluster_view *cv,
		   struct event_sink **out)
{
	struct event_sink *es;
	int rc;

	*out = NULL;
	if (!cfg->queue || !cfg->instance[0])
		return -EINVAL;
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	es->cfg = *cfg;
	es->client = client;
	es->cv = cv;
	pthread_mutex_init(&es->qmu, NULL);
	pthread_cond_init(&es->qcond, NULL);
	pthread_mutex_init(&es->pmu, NULL);
	es->queue = calloc(cfg->queue, sizeof(*es->queue));
	rc = es->queue ? 0 : -ENOMEM;
	if (rc == 0)
		rc = event_cache_new(&cfg->limits, &es->cache);
	if (rc == 0)
		rc = pending_table_new(cfg->max_pending, cfg->pending_idle_ns, &es->pending);
	if (rc) {
		event_sink_free(es);
		return rc;
	}
	*out = es;
	return 0;
}

void event_sink_offer(struct event_sink *es, const struct admission_request *rq, const struct verdict *v,
		      int64_t now_ns)
{
	struct events_report r[EVENTS_PER_REVIEW];
	size_t n = 0, i;
	uint32_t dropped = 0;

	/* An allowed review asks for an Event only by a warning that tells
	 * the Pod (events_rule_warns()): events_from_review() decides. */
	if (!es || rq->dry_run)
		return;
	events_from_review(rq, v, now_ns, r, EVENTS_PER_REVIEW, &n);
	if (!n)
		return;
	pthread_mutex_lock(&es->qmu);
	for (i = 0; i < n; i++) {
		if (es->qlen == es->cfg.queue) {
			dropped++;
			continue;
		}
		es->queue[(es->qhead + es->qlen) % es->cfg.queue] = r[i];
		es->qlen++;
	}
	pthread_cond_signal(&es->qcond);
	pthread_mutex_unlock(&es->qmu);
	if (dropped)
		atomic_fetch_add(&es->dropped[DROP_QUEUE], dropped);
}

/* --- the worker ------------------------------------------------------------------ */

/* A write takes at most this long: a hung API server delays the next Event
 * (and a shutdown) by no more. */
#define WRITE_TIMEOUT_S 10

/* The API server's answer to a write: the Event as stored, a few KiB. */
#define ANSWER_MAX (64 * 1024)

/* method on path with a JSON body of content type ctype, on a connection of
 * its own. 0 with the status in *code and the answer in ans, or a negative
 * errno (-EIO: no answer; -E2BIG: over ans's cap) with what happened in ans. */
static int api_write(struct event_sink *es, const char *method, const char *path, const char *ctype,
		     const struct buf *body, long *code, struct buf *ans)
{
	const struct kube_request rq = { .method = method, .path = path, .body = buf_cstr(body),
					 .body_len = buf_len(body), .content_type = ctype,
					 .timeout_s = WRITE_TIMEOUT_S };
	char err[256];
	int rc = kube_client_request(es->client, NULL, &rq, code, ans, err, sizeof(err));

	if (rc) {
		buf_reset(ans);
		buf_add_cstr(ans, err);
	}
	return rc;
}

static void log_api_error(const char *what, const struct event_send *s, long code, const struct buf *body)
{
	struct log_line l;

	if (!log_begin(&l, LOG_WARN, what))
		return;
	log_str(&l, "reason", s->report->reason);
	log_str(&l, "namespace", s->report->regarding.namespace);
	log_str(&l, "event", s->name);
	log_int(&l, "status", code);
	log_strn(&l, "answer", buf_cstr(body), buf_len(body) > 400 ? 400 : buf_len(body));
	log_end(&l);
}

/* POST a new Event (or one created again) and tell the cache how it went. */
static void send_create(struct event_sink *es, const struct event_send *s)
{
	char path[512];
	struct buf body, ans;
	long code = 0;
	int rc;

	buf_init(&body, 64 * 1024);
	buf_init(&ans, ANSWER_MAX);
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", s->report->regarding.namespace);
	rc = events_create_json(s->report, s->name, es->cfg.instance, s->first_ns, s->count, s->last_ns, &body);
	if (rc == 0)
		rc = api_write(es, "POST", path, "application/json", &body, &code, &ans);
	/* 409: a retry of a create the server had already taken. */
	if (rc == 0 && (code == 201 || code == 200 || code == 409)) {
		atomic_fetch_add(&es->created, 1);
		event_cache_sent(es->cache, s->slot, s->count, EVENT_SENT_OK, clock_wall_ns());
	} else {
		atomic_fetch_add(&es->dropped[DROP_API], 1);
		log_api_error("event not created", s, code, &ans);
		event_cache_sent(es->cache, s->slot, s->count, EVENT_SENT_FAILED, clock_wall_ns());
	}
	buf_free(&body);
	buf_free(&ans);
}

static void send_patch(struct event_sink *es, const struct event_send *s)
{
	char path[768];
	struct buf body, ans;
	long code = 0;
	int rc;

	buf_init(&body, 4096);
	buf_init(&ans, ANSWER_MAX);
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events/%s", s->report->regarding.namespace,
		 s->name);
	rc = events_series_patch_json(s->count, s->last_ns, &body);
	if (rc == 0)
		rc = api_write(es, "PATCH", path, "application/merge-patch+json", &body, &code, &ans);
	if (rc == 0 && code == 200) {
		atomic_fetch_add(&es->patched, 1);
		event_cache_sent(es->cache, s->slot, s->count, EVENT_SENT_OK, clock_wall_ns());
	} else if (rc == 0 && code == 404) {
		/* Expired (the API server keeps Events an hour) or deleted. */
		event_cache_sent(es->cache, s->slot, s->count, EVENT_SENT_GONE, clock_wall_ns());
	} else {
		atomic_fetch_add(&es->dropped[DROP_API], 1);
		log_api_error("event series not patched", s, code, &ans);
		event_cache_sent(es->cache, s->slot, s->count, EVENT_SENT_FAILED, clock_wall_ns());
	}
	buf_free(&body);
	buf_free(&ans);
}

static void observe(struct event_sink *es, const struct events_report *r)
{
	struct event_send s;
	int k = events_rule_index(r->rule);

	if (k >= 0)
		atomic_fetch_add(&es->observed[k], 1);
	if (r->pending) {
		pthread_mutex_lock(&es->pmu);
		/* Full, or no memory for more room: not held, and counted. */
		if (pending_table_refused(es->pending, r) < 0)
			es->pending_full++;
		pthread_mutex_unlock(&es->pmu);
	}
	switch (event_cache_observe(es->cache, r, r->observed_ns, &s)) {
	case EVENT_STEP_CREATE:
		send_create(es, &s);
		break;
	case EVENT_STEP_LIMITED:
		atomic_fetch_add(&es->dropped[DROP_LIMITED], 1);
		break;
	case EVENT_STEP_FULL:
		atomic_fetch_add(&es->dropped[DROP_CACHE], 1);
		break;
	default:
		break;
	}
}

/* Patches and creates that are due. */
static void flush(struct event_sink *es)
{
	struct event_send s;
	enum event_step step;

	while ((step = event_cache_next(es->cache, clock_wall_ns(), &s)) != EVENT_STEP_NONE) {
		if (step == EVENT_STEP_CREATE)
			send_create(es, &s);
		else if (step == EVENT_STEP_PATCH)
			send_patch(es, &s);
	}
	atomic_store(&es->series, event_cache_series(es->cache));
}

/* Under pmu. */
static void pending_done(void *ctx, enum rule_id rule, double seconds)
{
	struct event_sink *es = ctx;

	pending_hist_observe(&es->hist, rule, seconds);
}

static void sweep(struct event_sink *es)
{
	struct snapshot *snap = cluster_view_acquire(es->cv);

	if (!snap)
		return;
	pthread_mutex_lock(&es->pmu);
	pending_table_sweep(es->pending, cluster_view_get(snap), clock_wall_ns(), pending_done, es);
	pthread_mutex_unlock(&es->pmu);
	snapshot_release(snap);
}

#define BATCH 32

static void *run(void *arg)
{
	struct event_sink *es = arg;
	struct events_report *batch = calloc(BATCH, sizeof(*batch));
	int64_t last_sweep = 0;

	if (!batch) {
		log_msg(LOG_ERROR, "events: out of memory; no Events will be sent");
		return NULL;
	}
	for (;;) {
		uint32_t n = 0, i;
		int64_t now;

		pthread_mutex_lock(&es->qmu);
		if (!es->qlen && !es->stop) {
			struct timespec ts = clock_after(CLOCK_REALTIME, 1000000000);

			pthread_cond_timedwait(&es->qcond, &es->qmu, &ts);
		}
		if (es->stop) {
			pthread_mutex_unlock(&es->qmu);
			break;
		}
		while (es->qlen && n < BATCH) {
			batch[n++] = es->queue[es->qhead];
			es->qhead = (es->qhead + 1) % es->cfg.queue;
			es->qlen--;
		}
		pthread_mutex_unlock(&es->qmu);
		for (i = 0; i < n; i++)
			observe(es, &batch[i]);
		flush(es);
		now = clock_wall_ns();
		if (now - last_sweep >= 1000000000) {
			sweep(es);
			last_sweep = now;
		}
	}
	free(batch);
	return NULL;
}

int event_sink_start(struct event_sink *es)
{
	int rc = pthread_create(&es->thread, NULL, run, es);

	if (rc)
		return -rc;
	es->started = true;
	return 0;
}

void event_sink_stop(struct event_sink *es)
{
	if (!es || !es->started)
		return;
	pthread_mutex_lock(&es->qmu);
	es->stop = true;
	pthread_cond_signal(&es->qcond);
	pthread_mutex_unlock(&es->qmu);
	pthread_join(es->thread, NULL);
	es->started = false;
}

void event_sink_free(struct event_sink *es)
{
	if (!es)
		return;
	event_sink_stop(es);
	event_cache_free(es->cache);
	pending_table_free(es->pending);
	free(es->queue);
	pthread_mutex_destroy(&es->qmu);
	pthread_cond_destroy(&es->qcond);
	pthread_mutex_destroy(&es->pmu);
	free(es);
}

/* The held claims, under the lock that guards them. */
static int pending_part(const void *ctx, struct buf *out)
{
	struct event_sink *const *es = ctx;
	int rc;

	pthread_mutex_lock(&(*es)->pmu);
	rc = pending_table_json((*es)->pending, clock_wall_ns(), out);
	pthread_mutex_unlock(&(*es)->pmu);
	return rc;
}

int event_sink_pending_json(struct event_sink *es, struct buf *out)
{
	struct jw w;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "instance", es->cfg.instance);
	jw_key(&w, "claims");
	jw_part(&w, pending_part, &es);
	jw_object_end(&w);
	return jw_finish(&w);
}

int event_sink_render_metrics(void *ctx, struct buf *out)
{
	struct event_sink *es = ctx;
	struct pending_hist hist;
	uint64_t full;
	uint32_t held;
	char reason[EVENTS_REASON_MAX], le[PENDING_LE_MAX];
	size_t k, b;
	int rc;

	pthread_mutex_lock(&es->pmu);
	hist = es->hist;
	full = es->pending_full;
	held = pending_table_count(es->pending);
	pthread_mutex_unlock(&es->pmu);
	rc = prom_header(out, PROM_EVENTS_REFUSALS_TOTAL);
	for (k = 0; rc == 0 && k < EVENTS_RULES; k++) {
		events_reason(events_rule_at(k), reason);
		rc = prom_sample(out, PROM_EVENTS_REFUSALS_TOTAL, (const char *const[]){ reason }, "%" PRIu64,
				 (uint64_t)atomic_load(&es->observed[k]));
	}
	if (rc == 0)
		rc = prom_header(out, PROM_EVENTS_SENT_TOTAL);
	if (rc == 0)
		rc = prom_sample(out, PROM_EVENTS_SENT_TOTAL, (const char *const[]){ "create" }, "%" PRIu64,
				 (uint64_t)atomic_load(&es->created));
	if (rc == 0)
		rc = prom_sample(out, PROM_EVENTS_SENT_TOTAL, (const char *const[]){ "patch" }, "%" PRIu64,
				 (uint64_t)atomic_load(&es->patched));
	if (rc == 0)
		rc = prom_header(out, PROM_EVENTS_DROPPED_TOTAL);
	for (k = 0; rc == 0 && k < DROP_COUNT; k++)
		rc = prom_sample(out, PROM_EVENTS_DROPPED_TOTAL, &drop_names[k], "%" PRIu64,
				 (uint64_t)atomic_load(&es->dropped[k]));
	if (rc == 0)
		rc = prom_scalar(out, PROM_EVENTS_SERIES, "%u", (unsigned)atomic_load(&es->series));
	if (rc == 0)
		rc = prom_scalar(out, PROM_PENDING_CLAIMS, "%u", held);
	if (rc == 0)
		rc = prom_scalar(out, PROM_PENDING_DROPPED_TOTAL, "%" PRIu64, full);
	if (rc == 0)
		rc = prom_header(out, PROM_PENDING_SECONDS);
	for (k = 0; rc == 0 && k < EVENTS_RULES; k++) {
		struct prom_line l;
		uint64_t cum = 0;

		if (!events_rule_holds(events_rule_at(k)))
			continue;     /* not an allocation */
		events_reason(events_rule_at(k), reason);
		for (b = 0; rc == 0 && b <= PENDING_BUCKETS; b++) {
			cum += hist.counts[k][b];
			if (b < PENDING_BUCKETS)
				pending_bucket_label(b, le);
			prom_line_begin(&l, out, PROM_PENDING_SECONDS, "_bucket");
			prom_line_label(&l, reason, strlen(reason));
			prom_line_le(&l, b < PENDING_BUCKETS ? le : "+Inf");
			rc = prom_line_end(&l, "%" PRIu64, cum);
		}
		if (rc == 0) {
			prom_line_begin(&l, out, PROM_PENDING_SECONDS, "_sum");
			prom_line_label(&l, reason, strlen(reason));
			rc = prom_line_end(&l, "%.3f", hist.sum[k]);
		}
		if (rc == 0) {
			prom_line_begin(&l, out, PROM_PENDING_SECONDS, "_count");
			prom_line_label(&l, reason, strlen(reason));
			rc = prom_line_end(&l, "%" PRIu64, cum);
		}
	}
	return rc;
}
