/* cluster_view.c - list and watch over libcurl, and the snapshots. */
#include "cluster_view.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "doc.h"
#include "log.h"
#include "reflector.h"
#include "view_stream.h"

/* The first VIEW_RESOURCE_COUNT in enum view_resource order. */
enum res {
	RES_SLICES = 0,
	RES_CLAIMS,
	RES_PODS,
	RES_NODES,
	RES_CONFIGMAP,
	RES_COUNT
};

static const char *const res_names[RES_COUNT] = { "resourceslices", "resourceclaims", "pods", "nodes",
						  "configmap" };
static const enum object_kind res_kinds[RES_COUNT] = { OBJECT_RESOURCE_SLICE, OBJECT_RESOURCE_CLAIM, OBJECT_POD,
						       OBJECT_NODE, OBJECT_CONFIG_MAP };

/* Pods are watched as kube-scheduler's own informer watches them: the
 * finished ones hold nothing on a node. */
#define POD_FIELD_SELECTOR "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

static const char *const reason_names[REFLECTOR_REASON_COUNT] = { "start", "expired", "error", "decode" };

/* The requests a resource's watcher makes, for its error counter. */
enum request_kind {
	REQ_DISCOVERY = 0,            /* GET /apis/resource.k8s.io, before any LIST */
	REQ_LIST,
	REQ_WATCH,
	REQ_COUNT
};

static const char *const request_names[REQ_COUNT] = { "discovery", "list", "watch" };

/* Why a WATCH was sent again from the same resourceVersion, not by its
 * timeout. */
enum restart_reason {
	RESTART_SILENT = 0,           /* nothing on it for --watch-silence */
	RESTART_SHORT,                /* it ended within SHORT_WATCH_MS with no event */
	RESTART_COUNT
};

static const char *const restart_names[RESTART_COUNT] = { "silent", "short" };

/* How a LIST was made. */
enum list_mode {
	LIST_PAGES = 0,               /* LIST with limit and continue */
	LIST_STREAM,                  /* a WATCH with sendInitialEvents */
	LIST_MODE_COUNT
};

static const char *const list_mode_names[LIST_MODE_COUNT] = { "pages", "stream" };

static const char *const event_names[VIEW_EVENT_COUNT] = {
	"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR",
};

/* A WATCH that ends sooner than this with no event did not work (client-go:
 * "very short watch"): it resumes from the same resourceVersion after a
 * backoff, without a LIST. */
#define SHORT_WATCH_MS 1000
#define ERRBODY_MAX (64 * 1024)
/* An APIGroup document: a few hundred bytes. */
#define DISCOVERY_MAX (1 << 20)
#define LIST_BUCKETS 10

static const double list_bucket_s[LIST_BUCKETS] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120 };

struct cluster_view;

struct watcher {
	struct cluster_view *cv;
	enum res res;
	CURL *easy;                   /* the request in flight, or NULL */
	struct curl_slist *headers;
	struct view_stream *stream;
	struct reflector fsm;         /* list, watch, backoff: reflector_step() alone moves it */
	char rv[VIEW_RV_MAX];         /* where the WATCH resumes */
	char cont[VIEW_CONTINUE_MAX]; /* the next page of the LIST */
	long http;
	uint64_t counted[VIEW_EVENT_COUNT];   /* of the current stream, already in events */
	struct buf errbody;
	int64_t req_start_ms;         /* monotonic, when the request in flight was sent */
	int64_t list_start_ms;
	char last_error[512];
	/* The ConfigMap as the API server has it (RES_CONFIGMAP). */
	bool cm_listed_exists;
	struct config_map_copy {
		bool exists;
		bool has_policy, has_freeze, has_reason;
		char *policy, *freeze, *reason;
		size_t policy_len, freeze_len, reason_len;
	} cm, cm_list;

	/* metrics: written by the thread, read by the renderer */
	atomic_uint_fast64_t events[VIEW_EVENT_COUNT];
	atomic_uint_fast64_t relists[REFLECTOR_REASON_COUNT];
	atomic_uint_fast64_t errors[REQ_COUNT];   /* failed requests, each followed by a backoff */
	atomic_uint_fast64_t restarts[RESTART_COUNT];   /* WATCHes resumed without a LIST */
	atomic_uint_fast64_t list_modes[LIST_MODE_COUNT];   /* LISTs completed, by mode */
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t skipped;
	atomic_int_fast64_t last_event_ns;   /* wall clock */

	/* Objects left out (not held, or not decoded): the first is logged
	 * with its name, the next ones are counted into one line at most every
	 * SKIP_LOG_INTERVAL_MS and at the end of a LIST. Past the object cap a
	 * relist leaves out every further object: one line each was 126k
	 * lines in 30 s. The thread's own. */
	int64_t skip_logged_ms;          /* monotonic; 0: none logged yet */
	uint64_t skip_unlogged;
	char skip_error[200];            /* the last unlogged one's */
	atomic_uint_fast64_t list_hist[LIST_BUCKETS + 1];
	atomic_uint_fast64_t list_sum_ms;
	atomic_uint_fast64_t list_count;
	atomic_bool synced_pub;
	atomic_bool cm_exists_pub;
};

struct view_handle {
	const struct view *v;
	atomic_bool released;
	struct view_handle *next;
};

struct cluster_view {
	struct cluster_view_config cfg;
	struct metrics *m;
	struct policy_source *ps;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	CURLM *multi;
	char version[16];             /* resource.k8s.io version in use */
	enum api_version api_version;
	struct view_builder *b;
	struct watcher r[RES_COUNT];
	struct snapshot_slot slot;
	struct view_handle *handles;  /* published, oldest first */
	int64_t last_publish_ms;
	bool published_once;
	unsigned rand_state;
	atomic_uint_fast64_t published_seq;   /* of the newest snapshot, for waiters */

	pthread_mutex_t mu;           /* guards the fields below */
	pthread_cond_t published;     /* broadcast on every publish */
	char why_not[600];
	struct view_stats stats;
	int64_t synced_ns;
	struct snapshot *frozen;      /* the view when the last freeze began, or NULL */
	int64_t frozen_ns;
	bool freeze_waits;            /* a freeze began before the first view: keep that one */
};

/* --- time and jitter --------------------------------------------------------- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned jitter(struct cluster_view *cv, unsigned n)
{
	/* xorshift: spreading retries needs no cryptographic quality. */
	unsigned x = cv->rand_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	cv->rand_state = x;
	return n ? x % n : 0;
}

void cluster_view_config_default(struct cluster_view_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->cm_namespace, sizeof(cfg->cm_namespace), "dra-guard");
	snprintf(cfg->cm_name, sizeof(cfg->cm_name), "dra-guard-policy");
	cfg->page_size = 500;
	cfg->watch_timeout_s = 300;
	cfg->watch_silence_s = 150;
	cfg->stream_lists = true;
	cfg->list_timeout_s = 120;
	cfg->max_object = (size_t)3 << 20;
	view_limits_default(&cfg->limits);
}

/* --- snapshots --------------------------------------------------------------- */

static void handle_release(void *obj)
{
	/* Any thread: the watcher frees it. */
	atomic_store(&((struct view_handle *)obj)->released, true);
}

static void publish(struct cluster_view *cv)
{
	struct view_handle *h = calloc(1, sizeof(*h)), **tail;
	struct snapshot *snap = NULL;
	const struct view *v = NULL;

	if (!h || view_builder_publish(cv->b, &v) != 0) {
		free(h);
		log_msg(LOG_ERROR, "cluster view: out of memory publishing a snapshot");
		return;
	}
	h->v = v;
	atomic_init(&h->released, false);
	for (tail = &cv->handles; *tail; tail = &(*tail)->next)
		;
	*tail = h;
	/* snapshot_new frees h through handle_release on failure: only marks it. */
	if (snapshot_new(h, handle_release, &snap) != 0) {
		log_msg(LOG_ERROR, "cluster view: out of memory publishing a snapshot");
		return;
	}
	snapshot_slot_swap(&cv->slot, snap);
	cv->last_publish_ms = mono_ms();
	cv->published_once = true;
	pthread_mutex_lock(&cv->mu);
	atomic_store(&cv->published_seq, view_seq(v));
	pthread_cond_broadcast(&cv->published);
	if (cv->freeze_waits) {
		cv->freeze_waits = false;
		cv->frozen = snapshot_slot_acquire(&cv->slot);
	}
	pthread_mutex_unlock(&cv->mu);
}

static void reclaim(struct cluster_view *cv)
{
	struct view_handle **pp = &cv->handles;

	while (*pp) {
		struct view_handle *h = *pp;

		if (atomic_load(&h->released)) {
			*pp = h->next;
			view_builder_release(cv->b, h->v);
			free(h);
		} else {
			pp = &h->next;
		}
	}
	view_builder_collect(cv->b);
}

const struct view *cluster_view_get(const struct snapshot *s)
{
	return ((const struct view_handle *)snapshot_get(s))->v;
}

struct snapshot *cluster_view_acquire(struct cluster_view *cv)
{
	return snapshot_slot_acquire(&cv->slot);
}

/* --- state for readers --------------------------------------------------------- */

static void set_why(struct cluster_view *cv)
{
	char why[600] = "";
	int k;

	for (k = 0; k < RES_COUNT; k++) {
		struct watcher *r = &cv->r[k];

		if (r->fsm.synced)
			continue;
		snprintf(why, sizeof(why), "cluster view: %s not synced yet%s%.400s", res_names[k],
			 r->last_error[0] ? ": " : "", r->last_error);
		break;
	}
	pthread_mutex_lock(&cv->mu);
	snprintf(cv->why_not, sizeof(cv->why_not), "%s", why);
	view_builder_stats(cv->b, &cv->stats);
	pthread_mutex_unlock(&cv->mu);
}

bool cluster_view_ready(struct cluster_view *cv, char *why, size_t n)
{
	bool ready;

	pthread_mutex_lock(&cv->mu);
	ready = cv->why_not[0] == '\0';
	if (!ready && n)
		snprintf(why, n, "%s", cv->why_not);
	pthread_mutex_unlock(&cv->mu);
	return ready;
}

/* --- the ConfigMap -------------------------------------------------------------- */

static void cm_clear(struct config_map_copy *c)
{
	free(c->policy);
	free(c->freeze);
	free(c->reason);
	memset(c, 0, sizeof(*c));
}

static char *dup_str(struct str s, size_t *len)
{
	char *p = malloc(s.len + 1);

	if (p) {
		memcpy(p, s.ptr, s.len);
		p[s.len] = '\0';
		*len = s.len;
	}
	return p;
}

static int cm_set(struct config_map_copy *c, const struct config_map *cm)
{
	cm_clear(c);
	c->exists = true;
	c->has_policy = cm->has_policy;
	c->has_freeze = cm->has_freeze;
	c->has_reason = cm->has_freeze_reason;
	if ((cm->has_policy && !(c->policy = dup_str(cm->policy, &c->policy_len))) ||
	    (cm->has_freeze && !(c->freeze = dup_str(cm->freeze, &c->freeze_len))) ||
	    (cm->has_freeze_reason && !(c->reason = dup_str(cm->freeze_reason, &c->reason_len)))) {
		cm_clear(c);
		return -ENOMEM;
	}
	return 0;
}

static void cm_offer(struct cluster_view *cv, const struct config_map_copy *c, const char *why)
{
	atomic_store(&cv->r[RES_CONFIGMAP].cm_exists_pub, c->exists);
	if (!c->exists) {
		policy_source_offer_api(cv->ps, false, NULL, 0, false, NULL, 0, false, NULL, 0, why);
		return;
	}
	policy_source_offer_api(cv->ps, true, c->has_policy ? c->policy : NULL, c->policy_len,
				c->has_freeze, c->freeze, c->freeze_len, c->has_reason, c->reason,
				c->reason_len, why);
}

/* The listing and streaming states, as the sink and the counters see them. */
static bool is_listing(const struct watcher *r)
{
	return r->fsm.state == REFLECTOR_LISTING;
}

static bool is_streaming(const struct watcher *r)
{
	return r->fsm.state == REFLECTOR_STREAMING;
}

/* --- the sink: objects into the builder ------------------------------------------ */

#define SKIP_LOG_INTERVAL_MS 10000

/* One line for the objects left out and not yet logged. */
static void skip_flush(struct watcher *r)
{
	struct log_line l;

	if (r->skip_unlogged && log_begin(&l, LOG_WARN, "cluster view: objects left out")) {
		log_str(&l, "resource", res_names[r->res]);
		log_uint(&l, "count", r->skip_unlogged);
		log_str(&l, "last_error", r->skip_error);
		log_uint(&l, "total", (uint64_t)atomic_load(&r->skipped));
		log_end(&l);
	}
	r->skip_unlogged = 0;
	r->skip_logged_ms = mono_ms();
}

/* Count an object left out; log it alone when no line was written for
 * SKIP_LOG_INTERVAL_MS, else count it into the next line. obj may be
 * NULL (it did not decode). */
static void skip_note(struct watcher *r, const char *what, const struct k8s_object *obj, const char *err)
{
	int64_t now = mono_ms();
	struct log_line l;

	atomic_fetch_add(&r->skipped, 1);
	if (r->skip_logged_ms && now - r->skip_logged_ms < SKIP_LOG_INTERVAL_MS) {
		r->skip_unlogged++;
		snprintf(r->skip_error, sizeof(r->skip_error), "%s", err);
		return;
	}
	skip_flush(r);
	if (log_begin(&l, LOG_WARN, what)) {
		log_str(&l, "resource", res_names[r->res]);
		if (obj) {
			log_strn(&l, "namespace", obj->meta.namespace.ptr, obj->meta.namespace.len);
			log_strn(&l, "name", obj->meta.name.ptr, obj->meta.name.len);
		}
		log_str(&l, "error", err);
		log_end(&l);
	}
}

static int sink_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct watcher *r = ctx;
	struct cluster_view *cv = r->cv;
	char err[512];
	int rc;

	atomic_store(&r->last_event_ns, wall_ns());
	if (r->res == RES_CONFIGMAP) {
		if (!str_eq_cstr(obj->meta.name, cv->cfg.cm_name))
			return 0;
		if (is_listing(r))
			return cm_set(&r->cm_list, &obj->u.config_map);
		if (ev == VIEW_DELETED) {
			cm_clear(&r->cm);
		} else if ((rc = cm_set(&r->cm, &obj->u.config_map)) != 0) {
			return rc;
		}
		cm_offer(cv, &r->cm, "watch");
		return 0;
	}
	if (is_listing(r) || (is_streaming(r) && ev == VIEW_ADDED))
		rc = view_builder_relist_add(cv->b, (enum view_resource)r->res, obj, wall_ns(), err, sizeof(err));
	else if (is_streaming(r)) {
		/* Only ADDED events come before the initial events end. */
		snprintf(err, sizeof(err), "a %s event among a streaming list's initial events",
			 ev == VIEW_MODIFIED ? "MODIFIED" : "DELETED");
		rc = -EBADMSG;
	}
	else
		rc = view_builder_apply(cv->b, (enum view_resource)r->res, ev, obj, wall_ns(), err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		skip_note(r, "cluster view: object not held", obj, err);
	return 0;
}

static void sink_skipped(void *ctx, const char *msg)
{
	skip_note(ctx, "cluster view: an object did not decode; skipped", NULL, msg);
}

/* --- requests ------------------------------------------------------------------ */

static int stream_initial_end(void *ctx);

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct watcher *r = ctx;
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped,
					 .initial_end = stream_initial_end, .ctx = r };
	size_t len = size * n;

	if (r->http == 0)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http);
	if (r->http != 200) {
		if (buf_len(&r->errbody) + len <= ERRBODY_MAX)
			buf_add(&r->errbody, p, len);
		return len;
	}
	atomic_fetch_add(&r->bytes, len);
	return view_stream_feed(r->stream, p, len, &sink) == 0 ? len : 0;
}

/* The path and query of r's next request (its reflector's state says
 * which), and its whole-request timeout. 0, or -E2BIG where a piece does
 * not fit. */
static int request_path(struct cluster_view *cv, struct watcher *r, struct kube_path *p, long *timeout)
{
	int rc;

	kube_path_init(p);
	if (r->res == RES_CONFIGMAP)
		rc = kube_path_add(p, "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s&",
				   cv->cfg.cm_namespace, cv->cfg.cm_name);
	else if (r->res == RES_PODS)
		rc = kube_path_add(p, "/api/v1/pods?fieldSelector=%s&", POD_FIELD_SELECTOR);
	else if (r->res == RES_NODES)
		rc = kube_path_add(p, "/api/v1/nodes?");
	else
		rc = kube_path_add(p, "/apis/resource.k8s.io/%s/%s?", cv->version, res_names[r->res]);
	if (rc)
		return rc;
	if (is_streaming(r)) {
		unsigned t = cv->cfg.watch_timeout_s + jitter(cv, cv->cfg.watch_timeout_s / 10 + 1);

		/* No resourceVersion: the initial events are the objects as of
		 * a consistent read (after a 410 too). */
		*timeout = (long)t + 30;
		return kube_path_add(p, "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
				     "&allowWatchBookmarks=true&timeoutSeconds=%u", t);
	}
	if (is_listing(r)) {
		*timeout = (long)cv->cfg.list_timeout_s;
		rc = kube_path_add(p, "limit=%u", cv->cfg.page_size);
		/* As client-go's reflector: the first page from the watch cache
		 * (resourceVersion=0: the API server answers from memory instead
		 * of reading etcd page by page), except after a 410, when only a
		 * consistent read from etcd is new enough. Later pages name no
		 * version: the continue token carries the first page's. */
		if (rc == 0 && !r->fsm.paging && r->fsm.reason != REFLECTOR_EXPIRED)
			rc = kube_path_add(p, "&resourceVersion=0");
		if (rc == 0 && r->fsm.paging)
			rc = kube_path_add(p, "&continue=");
		if (rc == 0 && r->fsm.paging)
			rc = kube_path_add_escaped(p, r->cont);
		return rc;
	}
	{
		unsigned t = cv->cfg.watch_timeout_s + jitter(cv, cv->cfg.watch_timeout_s / 10 + 1);

		*timeout = (long)t + 30;
		return kube_path_add(p, "watch=true&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=%s",
				     t, r->rv);
	}
}

static void finish_request(struct cluster_view *cv, struct watcher *r)
{
	curl_multi_remove_handle(cv->multi, r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	curl_slist_free_all(r->headers);
	r->headers = NULL;
}

static unsigned step(struct cluster_view *cv, struct watcher *r, const struct reflector_event *ev,
		     const char *detail);
static unsigned step_kind(struct cluster_view *cv, struct watcher *r, enum reflector_event_kind kind,
			  const char *detail);

/* Send the request the reflector's ACT_LIST_* / ACT_WATCH names. */
static void send_request(struct cluster_view *cv, struct watcher *r, unsigned act)
{
	struct kube_path path;
	long timeout;

	if ((act & REFLECTOR_ACT_BEGIN) && r->res != RES_CONFIGMAP &&
	    view_builder_relist_begin(cv->b, (enum view_resource)r->res) != 0) {
		step_kind(cv, r, REFLECTOR_EV_BEGIN_FAILED, NULL);
		return;
	}
	if (act & REFLECTOR_ACT_COUNT_LIST) {
		r->cont[0] = '\0';
		r->list_start_ms = mono_ms();
		atomic_fetch_add(&r->relists[r->fsm.reason], 1);
		if (r->res == RES_CONFIGMAP)
			cm_clear(&r->cm_list);
	}
	if (request_path(cv, r, &path, &timeout) != 0) {
		step_kind(cv, r, REFLECTOR_EV_NOT_SENT, NULL);
		return;
	}
	view_stream_free(r->stream);
	r->stream = NULL;
	r->headers = NULL;
	if (view_stream_new(is_listing(r) ? VIEW_STREAM_LIST : VIEW_STREAM_WATCH, res_kinds[r->res],
			    r->res == RES_SLICES || r->res == RES_CLAIMS ? cv->api_version : API_V1, cv->cfg.max_object,
			    &r->stream) != 0 || !(r->easy = curl_easy_init()) ||
	    kube_client_prepare(cv->cfg.client, r->easy, kube_path_get(&path), timeout, NULL, &r->headers) != 0) {
		if (r->easy)
			curl_easy_cleanup(r->easy);
		r->easy = NULL;
		curl_slist_free_all(r->headers);
		r->headers = NULL;
		step_kind(cv, r, REFLECTOR_EV_NOT_SENT, NULL);
		return;
	}
	if ((act & REFLECTOR_ACT_WATCH) && cv->cfg.watch_silence_s) {
		/* A WATCH that stays open with nothing on it - not even the
		 * bookmark the API server sends about every minute - is dead
		 * somewhere between here and the server: below one byte a second
		 * for that long, curl ends it and the watch resumes. */
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_TIME, (long)cv->cfg.watch_silence_s);
	}
	r->req_start_ms = mono_ms();
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	r->http = 0;
	memset(r->counted, 0, sizeof(r->counted));
	buf_reset(&r->errbody);
	curl_multi_add_handle(cv->multi, r->easy);
}

/* A failed request, counted and logged with its retry. */
static void note_error(struct cluster_view *cv, struct watcher *r, bool list, const char *detail)
{
	struct log_line l;

	(void)cv;
	atomic_fetch_add(&r->errors[list ? REQ_LIST : REQ_WATCH], 1);
	snprintf(r->last_error, sizeof(r->last_error), "%s: %.400s", list ? "list" : "watch", detail);
	if (log_begin(&l, LOG_WARN, "cluster view: request failed")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "request", list ? "list" : "watch");
		log_str(&l, "error", r->last_error);
		log_uint(&l, "retry_ms", (uint64_t)(r->fsm.due_ms - mono_ms()));
		log_end(&l);
	}
}

static void note_no_stream(struct watcher *r, const char *detail)
{
	struct log_line l;

	if (log_begin(&l, LOG_WARN, "cluster view: no streaming list; listing in pages")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "why", detail);
		log_end(&l);
	}
}

static int list_commit(struct cluster_view *cv, struct watcher *r, enum list_mode mode);

/* One event into the reflector, and its actions taken: the one place a
 * resource's list/watch state changes. Returns the actions. */
static unsigned step(struct cluster_view *cv, struct watcher *r, const struct reflector_event *ev,
		     const char *detail)
{
	bool list = is_listing(r);
	enum reflector_state was = r->fsm.state;
	unsigned act;

	act = reflector_step(&r->fsm, ev, mono_ms(), jitter(cv, ~0u));
	if ((act & REFLECTOR_ACT_ABORT) && r->res != RES_CONFIGMAP)
		view_builder_relist_abort(cv->b, (enum view_resource)r->res);
	if (act & REFLECTOR_ACT_NO_STREAM)
		note_no_stream(r, detail);
	if (act & REFLECTOR_ACT_ERROR)
		note_error(cv, r, list, detail);
	else if (ev->kind == REFLECTOR_EV_EXPIRED && detail)
		snprintf(r->last_error, sizeof(r->last_error), "%.500s", detail);
	if (act & REFLECTOR_ACT_COMMIT)
		list_commit(cv, r, was == REFLECTOR_STREAMING ? LIST_STREAM : LIST_PAGES);
	return act;
}

static unsigned step_kind(struct cluster_view *cv, struct watcher *r, enum reflector_event_kind kind,
			  const char *detail)
{
	struct reflector_event ev = { .kind = kind };

	return step(cv, r, &ev, detail);
}

/* Send what is due. */
static void step_send(struct cluster_view *cv, struct watcher *r)
{
	struct reflector_event ev = { .kind = REFLECTOR_EV_SEND };
	unsigned act;

	/* A LIST as a streaming list where the API server serves one (a
	 * WATCH whose initial events are the objects, ended by a bookmark):
	 * the server sends from its watch cache, object by object, instead of
	 * building a LIST page in memory. The ConfigMap, one object by name,
	 * is listed. */
	ev.stream = cv->cfg.stream_lists && r->res != RES_CONFIGMAP;
	act = reflector_step(&r->fsm, &ev, mono_ms(), 0);
	if (act)
		send_request(cv, r, act);
}

static bool stream_had_events(const struct view_stream_info *info)
{
	int i;

	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		if (info->events[i])
			return true;
	return false;
}

/* The end of a streaming list's initial events: the objects received are
 * the resource's, swapped in as a LIST's; the same WATCH goes on with the
 * changes. The initial events are not counted as watch events. */
static int stream_initial_end(void *ctx)
{
	struct watcher *r = ctx;
	const struct view_stream_info *info = view_stream_info(r->stream);
	int i;

	if (!is_streaming(r))
		return -EBADMSG;
	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		r->counted[i] = info->events[i];
	step_kind(r->cv, r, REFLECTOR_EV_INITIAL_END, NULL);
	return r->fsm.state == REFLECTOR_WATCHING ? 0 : -ENOMEM;
}

/* ACT_COMMIT: the LIST's objects swapped in (the ConfigMap's offered), then
 * COMMITTED or COMMIT_FAILED into the reflector. */
static int list_commit(struct cluster_view *cv, struct watcher *r, enum list_mode mode)
{
	const struct view_stream_info *info = view_stream_info(r->stream);
	int64_t took = mono_ms() - r->list_start_ms;
	struct log_line l;
	int i;

	if (r->res == RES_CONFIGMAP) {
		cm_clear(&r->cm);
		r->cm = r->cm_list;
		memset(&r->cm_list, 0, sizeof(r->cm_list));
		cm_offer(cv, &r->cm, "list");
	} else if (view_builder_relist_commit(cv->b, (enum view_resource)r->res, wall_ns()) != 0) {
		step_kind(cv, r, REFLECTOR_EV_COMMIT_FAILED, "out of memory swapping the new table in");
		return -ENOMEM;
	}
	step_kind(cv, r, REFLECTOR_EV_COMMITTED, NULL);
	r->cont[0] = '\0';
	snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	r->last_error[0] = '\0';
	atomic_store(&r->synced_pub, true);
	atomic_store(&r->last_event_ns, wall_ns());
	for (i = 0; i < LIST_BUCKETS && (double)took / 1000.0 > list_bucket_s[i]; i++)
		;
	atomic_fetch_add(&r->list_hist[i], 1);
	atomic_fetch_add(&r->list_sum_ms, (uint64_t)took);
	atomic_fetch_add(&r->list_count, 1);
	if (r->skip_unlogged)
		skip_flush(r);
	if (log_begin(&l, LOG_INFO, "cluster view: listed")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "reason", reason_names[r->fsm.reason]);
		log_str(&l, "resource_version", r->rv);
		log_str(&l, "mode", list_mode_names[mode]);
		log_uint(&l, "objects", r->res == RES_CONFIGMAP ? (r->cm.exists ? 1 : 0)
			 : (uint64_t)info->events[VIEW_ADDED]);
		log_ms(&l, "duration_ms", (double)took);
		log_end(&l);
	}
	atomic_fetch_add(&r->list_modes[mode], 1);
	return 0;
}

/* The WATCH events the stream decoded since last asked, into the metrics;
 * any of them, bookmarks included, shows the watch is alive. */
static void count_events(struct watcher *r)
{
	const struct view_stream_info *info;
	bool any = false;
	int i;

	if (!r->stream || is_listing(r) || is_streaming(r))
		return;
	info = view_stream_info(r->stream);
	for (i = 0; i < VIEW_EVENT_COUNT; i++) {
		if (info->events[i] > r->counted[i]) {
			atomic_fetch_add(&r->events[i], info->events[i] - r->counted[i]);
			r->counted[i] = info->events[i];
			any = true;
		}
	}
	if (any) {
		int64_t now = wall_ns();

		atomic_store(&r->last_event_ns, now);
		if (r->res != RES_CONFIGMAP)
			view_builder_touch(r->cv->b, (enum view_resource)r->res, now);
	}
}

/* What ended a request: the reflector's event, and the detail logged. */
static enum reflector_event_kind classify(struct cluster_view *cv, struct watcher *r, CURLcode res, long answered,
					  bool *garbage, char *detail, size_t n)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped,
					 .initial_end = stream_initial_end, .ctx = r };
	const struct view_stream_info *info = view_stream_info(r->stream);
	int src;

	*garbage = false;
	if (r->http != 0 && r->http != 200) {
		struct view_status st;

		if (view_status_parse(buf_cstr(&r->errbody), buf_len(&r->errbody), &st) != 0)
			memset(&st, 0, sizeof(st));
		snprintf(detail, n, "HTTP %ld %s: %s", r->http, st.reason, st.message);
		if (r->http == 410)
			return REFLECTOR_EV_EXPIRED;
		/* An API server without streaming lists refuses the options
		 * (sendInitialEvents, resourceVersionMatch). */
		if (is_streaming(r) && (r->http == 400 || r->http == 422))
			return REFLECTOR_EV_STREAM_REFUSED;
		return REFLECTOR_EV_FAILED;
	}
	src = res == CURLE_OK ? view_stream_end(r->stream, &sink) : 0;
	if (res == CURLE_OPERATION_TIMEDOUT && r->fsm.state == REFLECTOR_WATCHING && answered == 200 &&
	    cv->cfg.watch_silence_s && mono_ms() - r->req_start_ms < (int64_t)cv->cfg.watch_timeout_s * 1000)
		/* Cut by the silence limit, not by the WATCH's own timeout, nor
		 * before an answer came (a connect timeout is a failure). */
		return REFLECTOR_EV_SILENT;
	if (res != CURLE_OK || src != 0) {
		const char *serr = view_stream_error(r->stream);

		*garbage = serr[0] && (res == CURLE_WRITE_ERROR || src != 0);
		snprintf(detail, n, "%s%s%s", res != CURLE_OK ? curl_easy_strerror(res) : "",
			 res != CURLE_OK && serr[0] ? ": " : "", serr);
		return REFLECTOR_EV_FAILED;
	}
	if (is_listing(r))
		return REFLECTOR_EV_PAGE;
	/* A WATCH that ended: by its timeout (resume at once), or with an
	 * ERROR event. */
	if (is_streaming(r) && !info->has_status) {
		/* Ended before its initial events did: a server that does not
		 * stream lists the way the guard asks. */
		snprintf(detail, n, "the WATCH with sendInitialEvents ended before the initial-events-end bookmark");
		return REFLECTOR_EV_STREAM_REFUSED;
	}
	if (info->has_status) {
		snprintf(detail, n, "ERROR event %d %s: %s", info->status.code, info->status.reason,
			 info->status.message);
		if (info->status.code == 410 || strcmp(info->status.reason, "Expired") == 0 ||
		    strcmp(info->status.reason, "Gone") == 0)
			return REFLECTOR_EV_EXPIRED;
		return REFLECTOR_EV_FAILED;
	}
	/* Ended at once with nothing on it: the server (or something before
	 * it) closes watches; resumed from the same resourceVersion, but
	 * after a backoff. */
	if (mono_ms() - r->req_start_ms < SHORT_WATCH_MS && !stream_had_events(info)) {
		snprintf(detail, n, "very short watch: it ended after %lld ms with no event; "
			 "resuming from resourceVersion %.100s", (long long)(mono_ms() - r->req_start_ms), r->rv);
		return REFLECTOR_EV_SHORT;
	}
	return REFLECTOR_EV_ENDED;
}

static void request_done(struct cluster_view *cv, struct watcher *r, CURLcode res)
{
	const struct view_stream_info *info;
	struct reflector_event ev = { 0 };
	char detail[700] = "";
	long answered = r->http;   /* the status code, also of an answer with no body byte yet */
	bool list = is_listing(r);

	if (!answered)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &answered);
	finish_request(cv, r);
	/* A 401: the token is read again; a certificate not verified: the CA. */
	kube_client_answered(cv->cfg.client, res, answered);
	info = view_stream_info(r->stream);
	count_events(r);
	/* Every event applied moved the resume point, however the WATCH
	 * ended: resuming from an older one would apply events twice. */
	if (!list && info->resource_version[0])
		snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	ev.kind = classify(cv, r, res, answered, &ev.garbage, detail, sizeof(detail));
	if (ev.kind == REFLECTOR_EV_PAGE && info->continue_token[0]) {
		ev.more = true;
		snprintf(r->cont, sizeof(r->cont), "%s", info->continue_token);
	}
	if (ev.kind == REFLECTOR_EV_SILENT) {
		/* Not an error: a resource nobody writes may get no bookmark from
		 * an API server whose etcd sends no progress notifications. */
		struct log_line l;

		atomic_fetch_add(&r->restarts[RESTART_SILENT], 1);
		if (log_begin(&l, LOG_INFO, "cluster view: silent watch restarted")) {
			log_str(&l, "resource", res_names[r->res]);
			log_uint(&l, "silence_s", cv->cfg.watch_silence_s);
			log_str(&l, "resource_version", r->rv);
			log_end(&l);
		}
	} else if (ev.kind == REFLECTOR_EV_SHORT) {
		atomic_fetch_add(&r->restarts[RESTART_SHORT], 1);
	}
	step(cv, r, &ev, detail);
}

/* --- discovery ------------------------------------------------------------------- */

/* The first of v1, v1beta2, v1beta1 that /apis/resource.k8s.io offers. */
static int discover(struct cluster_view *cv, char *err, size_t errn)
{
	static const char *const pref[] = { "v1", "v1beta2", "v1beta1" };
	static const enum api_version ver[] = { API_V1, API_V1BETA2, API_V1BETA1 };
	const struct kube_request rq = { .method = "GET", .path = "/apis/resource.k8s.io", .timeout_s = 30 };
	char why[256];
	struct buf body;
	long code = 0;
	int i, rc;

	buf_init(&body, DISCOVERY_MAX);
	rc = kube_client_request(cv->cfg.client, NULL, &rq, &code, &body, why, sizeof(why));
	if (rc == -ENOMEM) {
		snprintf(err, errn, "discovery: out of memory");
	} else if (rc) {
		snprintf(err, errn, "discovery: %s", why);
	} else if (code == 401) {
		snprintf(err, errn, "discovery: HTTP 401 (not authenticated)");
		rc = -EIO;
	} else if (code != 200) {
		snprintf(err, errn, "discovery: HTTP %ld from %.400s%s", code, kube_client_server(cv->cfg.client),
			 rq.path);
		rc = -EIO;
	} else {
		/* An APIGroup: versions[].version, read with the strict reader. */
		struct doc_set *set = NULL;
		const struct doc_node *versions = NULL;
		size_t j;

		rc = -EIO;
		if (doc_parse_json(buf_cstr(&body), buf_len(&body), NULL, &set, NULL) == 0)
			versions = doc_map_get(doc_set_root(set, 0), "versions");
		for (i = 0; rc && versions && versions->type == DOC_SEQ && i < 3; i++) {
			for (j = 0; j < versions->n; j++) {
				const struct doc_node *v = doc_map_get(versions->items[j], "version");

				if (v && v->type == DOC_STRING && strcmp(v->text.ptr, pref[i]) == 0) {
					snprintf(cv->version, sizeof(cv->version), "%s", pref[i]);
					cv->api_version = ver[i];
					rc = 0;
					break;
				}
			}
		}
		doc_set_free(set);
		if (rc)
			snprintf(err, errn, "discovery: the server offers none of resource.k8s.io v1, v1beta2, v1beta1");
	}
	buf_free(&body);
	return rc;
}

/* --- the thread ------------------------------------------------------------------ */

static void update_readiness(struct cluster_view *cv)
{
	int k;
	bool all = true;

	for (k = 0; k < RES_COUNT; k++)
		all = all && cv->r[k].fsm.synced;
	pthread_mutex_lock(&cv->mu);
	if (all && !cv->synced_ns)
		cv->synced_ns = wall_ns();
	pthread_mutex_unlock(&cv->mu);
	set_why(cv);
}

static void *run(void *arg)
{
	struct cluster_view *cv = arg;
	char err[512];
	unsigned backoff = 0;
	int k;

	/* Discovery first: it names the version every request uses. */
	while (!atomic_load(&cv->stop)) {
		if (discover(cv, err, sizeof(err)) == 0)
			break;
		/* Counted for every resource: each waits for the version discovery names. */
		for (k = 0; k < RES_COUNT; k++) {
			snprintf(cv->r[k].last_error, sizeof(cv->r[k].last_error), "%s", err);
			atomic_fetch_add(&cv->r[k].errors[REQ_DISCOVERY], 1);
		}
		set_why(cv);
		log_msg_str(LOG_WARN, "cluster view: API server not reachable yet", "error", err);
		backoff = backoff ? (backoff * 2 > REFLECTOR_BACKOFF_MAX_MS ? REFLECTOR_BACKOFF_MAX_MS : backoff * 2) : REFLECTOR_BACKOFF_MIN_MS;
		{
			unsigned wait = backoff / 2 + jitter(cv, backoff / 2 + 1), slept = 0;

			while (slept < wait && !atomic_load(&cv->stop)) {
				struct timespec ts = { 0, 50 * 1000000L };

				nanosleep(&ts, NULL);
				slept += 50;
			}
		}
	}
	if (!atomic_load(&cv->stop))
		log_msg_str(LOG_INFO, "cluster view: watching", "resource_k8s_io_version", cv->version);
	while (!atomic_load(&cv->stop)) {
		int64_t now = mono_ms(), wait = 1000;
		int running = 0, left;
		CURLMsg *msg;

		for (k = 0; k < RES_COUNT; k++) {
			struct watcher *r = &cv->r[k];

			if (r->easy && is_streaming(r) && now - r->list_start_ms > (int64_t)cv->cfg.list_timeout_s * 1000) {
				finish_request(cv, r);
				step_kind(cv, r, REFLECTOR_EV_STREAM_REFUSED,
					  "the initial events did not end within the LIST timeout");
			}
			if (!r->easy)
				step_send(cv, r);
			if (!r->easy && r->fsm.due_ms - now < wait)
				wait = r->fsm.due_ms - now;
		}
		curl_multi_perform(cv->multi, &running);
		while ((msg = curl_multi_info_read(cv->multi, &left)) != NULL) {
			struct watcher *r = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
			request_done(cv, r, msg->data.result);
			update_readiness(cv);
			wait = 0;
		}
		for (k = 0; k < RES_COUNT; k++)
			count_events(&cv->r[k]);
		now = mono_ms();
		if (view_builder_dirty(cv->b)) {
			bool all = cv->r[RES_SLICES].fsm.synced && cv->r[RES_CLAIMS].fsm.synced &&
				   cv->r[RES_PODS].fsm.synced && cv->r[RES_NODES].fsm.synced;

			if (all && now - cv->last_publish_ms >= CLUSTER_VIEW_PUBLISH_MS)
				publish(cv);
			else if (all && CLUSTER_VIEW_PUBLISH_MS - (now - cv->last_publish_ms) < wait)
				wait = CLUSTER_VIEW_PUBLISH_MS - (now - cv->last_publish_ms);
		}
		reclaim(cv);
		set_why(cv);
		if (wait < 0)
			wait = 0;
		if (wait > 0)
			curl_multi_poll(cv->multi, NULL, 0, (int)wait, NULL);
	}
	for (k = 0; k < RES_COUNT; k++)
		if (cv->r[k].easy)
			finish_request(cv, &cv->r[k]);
	return NULL;
}

/* --- lifecycle ------------------------------------------------------------------- */

int cluster_view_new(struct cluster_view_config *cfg, struct metrics *m, struct policy_source *ps,
		     struct cluster_view **out)
{
	struct cluster_view *cv = calloc(1, sizeof(*cv));
	int k;

	*out = NULL;
	if (!cv)
		return -ENOMEM;
	cv->cfg = *cfg;
	cv->m = m;
	cv->ps = ps;
	cv->rand_state = (unsigned)wall_ns() | 1u;
	snprintf(cv->why_not, sizeof(cv->why_not), "cluster view: not synced yet");
	pthread_mutex_init(&cv->mu, NULL);
	pthread_cond_init(&cv->published, NULL);
	if (snapshot_slot_init(&cv->slot) != 0 || view_builder_new(&cv->cfg.limits, &cv->b) != 0 ||
	    !(cv->multi = curl_multi_init())) {
		cluster_view_free(cv);
		return -ENOMEM;
	}
	for (k = 0; k < RES_COUNT; k++) {
		struct watcher *r = &cv->r[k];

		r->cv = cv;
		r->res = (enum res)k;
		reflector_init(&r->fsm);
		buf_init(&r->errbody, ERRBODY_MAX + 1);
	}
	*out = cv;
	return 0;
}

int cluster_view_start(struct cluster_view *cv)
{
	int rc = pthread_create(&cv->thread, NULL, run, cv);

	if (rc)
		return -rc;
	cv->started = true;
	return 0;
}

void cluster_view_stop(struct cluster_view *cv)
{
	if (!cv || !cv->started)
		return;
	atomic_store(&cv->stop, true);
	curl_multi_wakeup(cv->multi);
	pthread_join(cv->thread, NULL);
	cv->started = false;
}

void cluster_view_free(struct cluster_view *cv)
{
	int k;

	if (!cv)
		return;
	cluster_view_stop(cv);
	snapshot_release(cv->frozen);
	snapshot_slot_destroy(&cv->slot);
	while (cv->handles) {
		struct view_handle *h = cv->handles;

		cv->handles = h->next;
		free(h);
	}
	for (k = 0; k < RES_COUNT; k++) {
		struct watcher *r = &cv->r[k];

		if (r->easy)
			finish_request(cv, r);
		view_stream_free(r->stream);
		buf_free(&r->errbody);
		cm_clear(&r->cm);
		cm_clear(&r->cm_list);
	}
	view_builder_free(cv->b);
	if (cv->multi)
		curl_multi_cleanup(cv->multi);
	pthread_cond_destroy(&cv->published);
	pthread_mutex_destroy(&cv->mu);
	free(cv);
}

/* --- status and metrics ------------------------------------------------------------ */

static double age_s(const struct watcher *r, int64_t now)
{
	int64_t t = atomic_load(&r->last_event_ns);

	return t ? (double)(now - t) / 1e9 : -1;
}

/* The serving policy's clusterView.maxAge, in ns. */
static int64_t max_age_ns(struct cluster_view *cv)
{
	struct snapshot *ps = policy_source_acquire(cv->ps);
	int64_t s = POLICY_VIEW_MAX_AGE_DEFAULT;

	if (ps) {
		s = ((const struct policy *)snapshot_get(ps))->view_max_age_s;
		snapshot_release(ps);
	}
	return s * 1000000000;
}

/* 1 stale, 0 fresh, -1 no view yet. */
static int stale(struct cluster_view *cv, int64_t now)
{
	struct snapshot *s = cluster_view_acquire(cv);
	int r;

	if (!s)
		return -1;
	r = view_stale(cluster_view_get(s), now, max_age_ns(cv)) ? 1 : 0;
	snapshot_release(s);
	return r;
}

int cluster_view_status_json(struct cluster_view *cv, struct buf *out)
{
	struct view_stats st;
	int64_t now = wall_ns();
	int rc, k, sv = stale(cv, now);

	pthread_mutex_lock(&cv->mu);
	st = cv->stats;
	rc = buf_printf(out, "{\"synced\":%s,\"version\":\"%s\",\"stale\":%s,\"maxAgeSeconds\":%" PRId64
			",\"resources\":{", cv->why_not[0] ? "false" : "true", cv->version,
			sv == 1 ? "true" : "false", max_age_ns(cv) / 1000000000);
	pthread_mutex_unlock(&cv->mu);
	for (k = 0; rc == 0 && k < RES_COUNT; k++) {
		const struct watcher *r = &cv->r[k];
		uint64_t objects = k < VIEW_RESOURCE_COUNT ? st.objects[k] : atomic_load(&r->cm_exists_pub) ? 1 : 0;

		rc = buf_printf(out, "%s\"%s\":{\"synced\":%s,\"objects\":%" PRIu64
				",\"lastEventAgeSeconds\":%.3f}", k ? "," : "", res_names[k],
				atomic_load(&r->synced_pub) ? "true" : "false", objects, age_s(r, now));
	}
	return rc ? rc : buf_add_cstr(out, "}}");
}

struct dump {
	struct buf *out;
	bool first;
};

static int dump_sep(struct dump *d)
{
	int rc = d->first ? 0 : buf_add_char(d->out, ',');

	d->first = false;
	return rc;
}

static int dump_slice(void *ctx, const struct view_slice *s)
{
	struct dump *d = ctx;
	struct str v = view_atom_str(s->driver), p = view_atom_str(s->pool);
	int rc = dump_sep(d);

	if (rc == 0)
		rc = buf_add_cstr(d->out, "{\"name\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, s->name, strlen(s->name));
	if (rc == 0)
		rc = buf_printf(d->out, ",\"resourceVersion\":\"%s\",\"driver\":", s->resource_version);
	if (rc == 0)
		rc = buf_add_json_str(d->out, v.ptr, v.len);
	if (rc == 0)
		rc = buf_add_cstr(d->out, ",\"pool\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, p.ptr, p.len);
	if (rc == 0)
		rc = buf_printf(d->out, ",\"generation\":%" PRId64 ",\"devices\":%u}", s->generation, s->ndevices);
	return rc;
}

static int dump_claim(void *ctx, const struct view_claim *c)
{
	struct dump *d = ctx;
	struct str ns = view_atom_str(c->namespace), node = view_atom_str(c->node_name);
	char uid[64];
	int rc = dump_sep(d);

	view_uid_format(&c->uid, uid, sizeof(uid));
	if (rc == 0)
		rc = buf_add_cstr(d->out, "{\"namespace\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, ns.ptr, ns.len);
	if (rc == 0)
		rc = buf_add_cstr(d->out, ",\"name\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, c->name, strlen(c->name));
	if (rc == 0)
		rc = buf_printf(d->out, ",\"resourceVersion\":\"%s\",\"uid\":", c->resource_version);
	if (rc == 0)
		rc = buf_add_json_str(d->out, uid, strlen(uid));
	if (rc == 0)
		rc = buf_printf(d->out, ",\"allocated\":%s,\"results\":%u,\"reservedFor\":%u,\"node\":",
				c->allocated ? "true" : "false", c->nresults, c->nreserved);
	if (rc == 0)
		rc = buf_add_json_str(d->out, node.ptr, node.len);
	return rc ? rc : buf_add_char(d->out, '}');
}

static int dump_pool(void *ctx, const struct view_pool *p)
{
	struct dump *d = ctx;
	struct str dr = view_atom_str(p->driver), n = view_atom_str(p->name);
	int rc = dump_sep(d);

	if (rc == 0)
		rc = buf_add_cstr(d->out, "{\"driver\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, dr.ptr, dr.len);
	if (rc == 0)
		rc = buf_add_cstr(d->out, ",\"name\":");
	if (rc == 0)
		rc = buf_add_json_str(d->out, n.ptr, n.len);
	if (rc == 0)
		rc = buf_printf(d->out, ",\"generation\":%" PRId64 ",\"maxGeneration\":%" PRId64
				",\"slices\":%u,\"resourceSliceCount\":%" PRId64 "}", p->generation,
				p->max_generation, p->nslices, p->resource_slice_count);
	return rc;
}

int cluster_view_dump_json(struct cluster_view *cv, struct buf *out)
{
	struct snapshot *s = cluster_view_acquire(cv);
	const struct view *v;
	struct dump d = { out, true };
	int rc;

	if (!s)
		return -EAGAIN;
	v = cluster_view_get(s);
	rc = buf_printf(out, "{\"seq\":%" PRIu64 ",\"resourceslices\":[", view_seq(v));
	if (rc == 0)
		rc = view_each_slice(v, dump_slice, &d);
	d.first = true;
	if (rc == 0)
		rc = buf_add_cstr(out, "],\"resourceclaims\":[");
	if (rc == 0)
		rc = view_each_claim(v, dump_claim, &d);
	d.first = true;
	if (rc == 0)
		rc = buf_add_cstr(out, "],\"pools\":[");
	if (rc == 0)
		rc = view_each_pool(v, dump_pool, &d);
	if (rc == 0)
		rc = buf_add_cstr(out, "]}");
	snapshot_release(s);
	return rc;
}

int cluster_view_render_metrics(void *ctx, struct buf *out)
{
	struct cluster_view *cv = ctx;
	struct view_stats st;
	int64_t now = wall_ns();
	int rc, k, i;

	pthread_mutex_lock(&cv->mu);
	st = cv->stats;
	pthread_mutex_unlock(&cv->mu);
	rc = buf_add_cstr(out, "# HELP dra_guard_watch_events_total WATCH events applied, by resource and type.\n"
			  "# TYPE dra_guard_watch_events_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		for (i = 0; rc == 0 && i < VIEW_EVENT_COUNT; i++)
			rc = buf_printf(out, "dra_guard_watch_events_total{resource=\"%s\",type=\"%s\"} %" PRIu64 "\n",
					res_names[k], event_names[i], (uint64_t)atomic_load(&cv->r[k].events[i]));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_relists_total LISTs started, by resource and reason "
				  "(start, expired: 410, error: connection or server, decode: a body not as the API server sends).\n"
				  "# TYPE dra_guard_watch_relists_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		for (i = 0; rc == 0 && i < REFLECTOR_REASON_COUNT; i++)
			rc = buf_printf(out, "dra_guard_watch_relists_total{resource=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
					res_names[k], reason_names[i], (uint64_t)atomic_load(&cv->r[k].relists[i]));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_errors_total Requests to the API server that failed "
				  "and were retried after a backoff, by resource and request (discovery, list, watch).\n"
				  "# TYPE dra_guard_watch_errors_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		for (i = 0; rc == 0 && i < REQ_COUNT; i++)
			rc = buf_printf(out, "dra_guard_watch_errors_total{resource=\"%s\",request=\"%s\"} %" PRIu64 "\n",
					res_names[k], request_names[i], (uint64_t)atomic_load(&cv->r[k].errors[i]));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_lists_total LISTs completed, by resource and mode "
				  "(stream: a WATCH with sendInitialEvents; pages: LIST with limit and continue).\n"
				  "# TYPE dra_guard_watch_lists_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		for (i = 0; rc == 0 && i < LIST_MODE_COUNT; i++)
			rc = buf_printf(out, "dra_guard_watch_lists_total{resource=\"%s\",mode=\"%s\"} %" PRIu64 "\n",
					res_names[k], list_mode_names[i], (uint64_t)atomic_load(&cv->r[k].list_modes[i]));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_restarts_total WATCHes sent again from the same "
				  "resourceVersion, without a LIST, by resource and reason (silent: nothing on it for "
				  "--watch-silence; short: it ended within a second with no event, retried after a backoff).\n"
				  "# TYPE dra_guard_watch_restarts_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		for (i = 0; rc == 0 && i < RESTART_COUNT; i++)
			rc = buf_printf(out, "dra_guard_watch_restarts_total{resource=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
					res_names[k], restart_names[i], (uint64_t)atomic_load(&cv->r[k].restarts[i]));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_bytes_total Bytes of LIST and WATCH bodies decoded, by resource.\n"
				  "# TYPE dra_guard_watch_bytes_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		rc = buf_printf(out, "dra_guard_watch_bytes_total{resource=\"%s\"} %" PRIu64 "\n", res_names[k],
				(uint64_t)atomic_load(&cv->r[k].bytes));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_skipped_objects_total Objects that did not decode or "
				  "were refused by a cap, by resource (logged).\n"
				  "# TYPE dra_guard_watch_skipped_objects_total counter\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		rc = buf_printf(out, "dra_guard_watch_skipped_objects_total{resource=\"%s\"} %" PRIu64 "\n",
				res_names[k], (uint64_t)atomic_load(&cv->r[k].skipped));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_synced 1 once the resource's first LIST completed.\n"
				  "# TYPE dra_guard_watch_synced gauge\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		rc = buf_printf(out, "dra_guard_watch_synced{resource=\"%s\"} %d\n", res_names[k],
				atomic_load(&cv->r[k].synced_pub) ? 1 : 0);
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_last_event_age_seconds Seconds since the last LIST, "
				  "event or bookmark of the resource; -1 before the first.\n"
				  "# TYPE dra_guard_watch_last_event_age_seconds gauge\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++)
		rc = buf_printf(out, "dra_guard_watch_last_event_age_seconds{resource=\"%s\"} %.3f\n",
				res_names[k], age_s(&cv->r[k], now));
	if (rc == 0)
		rc = buf_add_cstr(out, "# HELP dra_guard_watch_list_duration_seconds Time from a LIST's first page "
				  "to its swap into the view, by resource.\n"
				  "# TYPE dra_guard_watch_list_duration_seconds histogram\n");
	for (k = 0; rc == 0 && k < RES_COUNT; k++) {
		uint64_t cum = 0;

		for (i = 0; rc == 0 && i < LIST_BUCKETS; i++) {
			cum += atomic_load(&cv->r[k].list_hist[i]);
			rc = buf_printf(out, "dra_guard_watch_list_duration_seconds_bucket{resource=\"%s\",le=\"%g\"} %"
					PRIu64 "\n", res_names[k], list_bucket_s[i], cum);
		}
		cum += atomic_load(&cv->r[k].list_hist[LIST_BUCKETS]);
		if (rc == 0)
			rc = buf_printf(out, "dra_guard_watch_list_duration_seconds_bucket{resource=\"%s\",le=\"+Inf\"} %"
					PRIu64 "\ndra_guard_watch_list_duration_seconds_sum{resource=\"%s\"} %.3f\n"
					"dra_guard_watch_list_duration_seconds_count{resource=\"%s\"} %" PRIu64 "\n",
					res_names[k], cum, res_names[k],
					(double)atomic_load(&cv->r[k].list_sum_ms) / 1000.0, res_names[k], cum);
	}
	if (rc == 0)
		rc = buf_printf(out, "# HELP dra_guard_view_objects Objects held in the cluster view, by resource.\n"
				"# TYPE dra_guard_view_objects gauge\n"
				"dra_guard_view_objects{resource=\"resourceslices\"} %u\n"
				"dra_guard_view_objects{resource=\"resourceclaims\"} %u\n"
				"dra_guard_view_objects{resource=\"pods\"} %u\n"
				"dra_guard_view_objects{resource=\"nodes\"} %u\n"
				"dra_guard_view_objects{resource=\"pools\"} %u\n"
				"dra_guard_view_objects{resource=\"pool_tombstones\"} %u\n"
				"# HELP dra_guard_view_memory_bytes Bytes the view's records and interned atoms take.\n"
				"# TYPE dra_guard_view_memory_bytes gauge\n"
				"dra_guard_view_memory_bytes{part=\"records\"} %zu\n"
				"dra_guard_view_memory_bytes{part=\"atoms\"} %zu\n"
				"# HELP dra_guard_view_stale 1 while a watched resource was last heard of longer ago "
				"than the policy's clusterView.maxAge (rules that need a fresh view cannot decide).\n"
				"# TYPE dra_guard_view_stale gauge\n"
				"dra_guard_view_stale %d\n"
				"# HELP dra_guard_view_max_age_seconds The serving policy's clusterView.maxAge: how long "
				"a watched resource may go unheard before the view is stale.\n"
				"# TYPE dra_guard_view_max_age_seconds gauge\n"
				"dra_guard_view_max_age_seconds %" PRId64 "\n"
				"# HELP dra_guard_view_snapshots Published snapshots still read by a request.\n"
				"# TYPE dra_guard_view_snapshots gauge\n"
				"dra_guard_view_snapshots %u\n",
				st.objects[VIEW_SLICES], st.objects[VIEW_CLAIMS], st.objects[VIEW_PODS],
				st.objects[VIEW_NODES], st.pools, st.pool_tombstones,
				st.record_bytes, st.atom_bytes, stale(cv, now) == 1 ? 1 : 0,
				max_age_ns(cv) / 1000000000, st.snapshots);
	return rc;
}

/* --- waiting, and the view when a freeze began ------------------------------------ */

struct snapshot *cluster_view_acquire_newer(struct cluster_view *cv, uint64_t seq, int64_t deadline_ms)
{
	struct timespec ts;
	int64_t now;

	pthread_mutex_lock(&cv->mu);
	while (atomic_load(&cv->published_seq) <= seq) {
		now = mono_ms();
		if (now >= deadline_ms)
			break;
		/* The condition's clock is the wall clock: wait in short steps
		 * of the monotonic one so a clock step cannot stretch a wait. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)((deadline_ms - now < 50 ? deadline_ms - now : 50) * 1000000);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&cv->published, &cv->mu, &ts);
	}
	pthread_mutex_unlock(&cv->mu);
	if (atomic_load(&cv->published_seq) <= seq)
		return NULL;
	return cluster_view_acquire(cv);
}

void cluster_view_mark_freeze(struct cluster_view *cv, int64_t since_ns)
{
	struct snapshot *s = cluster_view_acquire(cv), *old;

	pthread_mutex_lock(&cv->mu);
	old = cv->frozen;
	cv->frozen = s;
	cv->frozen_ns = since_ns;
	/* Before the first sync (a replica started during a freeze) the first
	 * view published is the nearest to the freeze this replica has. */
	cv->freeze_waits = s == NULL;
	pthread_mutex_unlock(&cv->mu);
	snapshot_release(old);
}

struct snapshot *cluster_view_acquire_frozen(struct cluster_view *cv, int64_t *since_ns)
{
	struct snapshot *s;

	pthread_mutex_lock(&cv->mu);
	s = cv->frozen ? snapshot_ref(cv->frozen) : NULL;
	*since_ns = cv->frozen_ns;
	pthread_mutex_unlock(&cv->mu);
	return s;
}
