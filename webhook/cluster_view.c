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

#include "clock.h"
#include "doc.h"
#include "log.h"
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

enum relist_reason {
	RELIST_START = 0,             /* the first LIST */
	RELIST_EXPIRED,               /* 410: the resourceVersion is gone */
	RELIST_ERROR,                 /* the connection or the server failed */
	RELIST_DECODE,                /* the body was not what the API server sends */
	RELIST_COUNT
};

static const char *const reason_names[RELIST_COUNT] = { "start", "expired", "error", "decode" };

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

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
/* After a 410 the LIST waits as client-go's reflector waits before it lists
 * again (its backoff manager: 800 ms, doubling to 30 s, full jitter, reset
 * after 2 minutes without one): a server that expires every watch at once
 * is listed a few times a minute, not ten times a second. */
#define EXPIRY_BACKOFF_MIN_MS 800
#define EXPIRY_BACKOFF_RESET_MS 120000
/* A WATCH that ends sooner than this with no event did not work (client-go:
 * "very short watch"): it resumes from the same resourceVersion after a
 * backoff, without a LIST. */
#define SHORT_WATCH_MS 1000
#define ERRBODY_MAX (64 * 1024)
#define LIST_BUCKETS 10

static const double list_bucket_s[LIST_BUCKETS] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120 };

struct cluster_view;

struct reflector {
	struct cluster_view *cv;
	enum res res;
	CURL *easy;                   /* the request in flight, or NULL */
	struct curl_slist *headers;
	struct view_stream *stream;
	bool listing;                 /* the request is a LIST page */
	bool streaming;               /* the request is a streaming list (a WATCH with
				       * sendInitialEvents) whose initial events have not ended */
	bool no_stream;               /* the API server refused a streaming list: pages from now on */
	bool need_list;               /* the next request is a LIST */
	enum relist_reason reason;
	bool in_relist;               /* the builder holds a table for this LIST */
	char rv[VIEW_RV_MAX];         /* where the WATCH resumes */
	char cont[VIEW_CONTINUE_MAX]; /* the next page of the LIST */
	long http;
	uint64_t counted[VIEW_EVENT_COUNT];   /* of the current stream, already in events */
	struct buf errbody;
	int64_t next_ms;              /* monotonic: when to send the next request */
	unsigned backoff_ms;
	unsigned expiry_backoff_ms;   /* the wait before a LIST after a 410 */
	int64_t last_expiry_ms;       /* monotonic, the last 410 */
	int64_t req_start_ms;         /* monotonic, when the request in flight was sent */
	int64_t list_start_ms;
	bool synced;                  /* a LIST completed once */
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
	atomic_uint_fast64_t relists[RELIST_COUNT];
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
	struct reflector r[RES_COUNT];
	struct snapshot_slot slot;
	struct view_handle *handles;  /* published, oldest first */
	int64_t last_publish_ms;
	bool published_once;
	unsigned rand_state;
	atomic_uint_fast64_t published_seq;   /* of the newest snapshot, for waiters */

	pthread_mutex_t kube_mu;      /* the token: read and refreshed by the watcher
				       * and by cluster_view_client_setup() callers */
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
	cfg->connect_timeout_s = 10;
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
	cv->last_publish_ms = clock_mono_ms();
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
		struct reflector *r = &cv->r[k];

		if (r->synced)
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

/* --- the sink: objects into the builder ------------------------------------------ */

#define SKIP_LOG_INTERVAL_MS 10000

/* One line for the objects left out and not yet logged. */
static void skip_flush(struct reflector *r)
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
	r->skip_logged_ms = clock_mono_ms();
}

/* Count an object left out; log it alone when no line was written for
 * SKIP_LOG_INTERVAL_MS, else count it into the next line. obj may be
 * NULL (it did not decode). */
static void skip_note(struct reflector *r, const char *what, const struct k8s_object *obj, const char *err)
{
	int64_t now = clock_mono_ms();
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
	struct reflector *r = ctx;
	struct cluster_view *cv = r->cv;
	char err[512];
	int rc;

	atomic_store(&r->last_event_ns, clock_wall_ns());
	if (r->res == RES_CONFIGMAP) {
		if (!str_eq_cstr(obj->meta.name, cv->cfg.cm_name))
			return 0;
		if (r->listing)
			return cm_set(&r->cm_list, &obj->u.config_map);
		if (ev == VIEW_DELETED) {
			cm_clear(&r->cm);
		} else if ((rc = cm_set(&r->cm, &obj->u.config_map)) != 0) {
			return rc;
		}
		cm_offer(cv, &r->cm, "watch");
		return 0;
	}
	if (r->listing || (r->streaming && ev == VIEW_ADDED))
		rc = view_builder_relist_add(cv->b, (enum view_resource)r->res, obj, clock_wall_ns(), err, sizeof(err));
	else if (r->streaming) {
		/* Only ADDED events come before the initial events end. */
		snprintf(err, sizeof(err), "a %s event among a streaming list's initial events",
			 ev == VIEW_MODIFIED ? "MODIFIED" : "DELETED");
		rc = -EBADMSG;
	}
	else
		rc = view_builder_apply(cv->b, (enum view_resource)r->res, ev, obj, clock_wall_ns(), err, sizeof(err));
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
	struct reflector *r = ctx;
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

static void add_header(struct reflector *r, const char *h)
{
	struct curl_slist *l = curl_slist_append(r->headers, h);

	if (l)
		r->headers = l;
}

/* The path of the resource's collection. */
static void collection(const struct cluster_view *cv, enum res res, char *buf, size_t n)
{
	if (res == RES_CONFIGMAP)
		snprintf(buf, n, "/api/v1/namespaces/%s/configmaps", cv->cfg.cm_namespace);
	else if (res == RES_PODS || res == RES_NODES)
		snprintf(buf, n, "/api/v1/%s", res_names[res]);
	else
		snprintf(buf, n, "/apis/resource.k8s.io/%s/%s", cv->version, res_names[res]);
}

static void setup_easy(struct cluster_view *cv, CURL *e, const char *url, long timeout_s)
{
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)cv->cfg.connect_timeout_s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
}

/* The credentials of a request, under kube_mu: the token (read again when
 * due), the CA (read again when its file changed) and the client
 * certificate, copied into the handle (a CA or token replaced later never
 * pulls memory from under a transfer), and the Authorization header built
 * to the token's length. 0 or -ENOMEM. */
static int client_auth(struct cluster_view *cv, CURL *e, struct curl_slist **headers)
{
	struct kube_config *k = &cv->cfg.kube;
	struct curl_slist *t;
	char *auth = NULL;
	int rc;

	pthread_mutex_lock(&cv->kube_mu);
	kube_config_token_refresh(k, clock_mono_ms(), false);
	kube_config_ca_refresh(k, clock_mono_ms(), false);
	if (k->ca_pem) {
		struct curl_blob blob = { k->ca_pem, k->ca_len, CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (k->cert_pem && k->key_pem) {
		struct curl_blob cert = { k->cert_pem, k->cert_len, CURL_BLOB_COPY };
		struct curl_blob key = { k->key_pem, k->key_len, CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	rc = kube_config_auth_header(k, &auth);
	pthread_mutex_unlock(&cv->kube_mu);
	if (rc == 0 && auth) {
		if ((t = curl_slist_append(*headers, auth)) != NULL)
			*headers = t;
		else
			rc = -ENOMEM;
	}
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	return rc;
}

/* After the server's certificate failed verification: the CA may have
 * rotated under the guard, so its file is read again at once. */
static void ca_verify_failed(struct cluster_view *cv, CURLcode res)
{
	if (res != CURLE_PEER_FAILED_VERIFICATION && res != CURLE_SSL_CACERT_BADFILE)
		return;
	pthread_mutex_lock(&cv->kube_mu);
	if (kube_config_ca_refresh(&cv->cfg.kube, clock_mono_ms(), true) == 1) {
		struct log_line l;

		if (log_begin(&l, LOG_WARN, "cluster view: the API server's CA changed; read again")) {
			log_str(&l, "file", cv->cfg.kube.ca_file);
			log_end(&l);
		}
	}
	pthread_mutex_unlock(&cv->kube_mu);
}

/* --- requests of other parts (the gate's Lease and releases) ------------------- */

int cluster_view_client_setup(struct cluster_view *cv, CURL *e, const char *path, long timeout_s,
			      struct curl_slist **headers)
{
	char url[4096];
	struct curl_slist *h = *headers, *t;
	int rc = 0;

	if ((size_t)snprintf(url, sizeof(url), "%s%s", cv->cfg.kube.server, path) >= sizeof(url))
		return -E2BIG;
	setup_easy(cv, e, url, timeout_s);
	if (!(t = curl_slist_append(h, "Accept: application/json")))
		return -ENOMEM;
	h = t;
	if (!(t = curl_slist_append(h, "User-Agent: dra-guard")))
		rc = -ENOMEM;
	else
		h = t;
	if (rc == 0)
		rc = client_auth(cv, e, &h);
	*headers = h;
	return rc;
}

void cluster_view_client_unauthorized(struct cluster_view *cv)
{
	pthread_mutex_lock(&cv->kube_mu);
	kube_config_token_refresh(&cv->cfg.kube, clock_mono_ms(), true);
	pthread_mutex_unlock(&cv->kube_mu);
}

static void send_request(struct cluster_view *cv, struct reflector *r)
{
	char path[512], url[VIEW_CONTINUE_MAX * 3 + 1024];
	char *esc = NULL;
	size_t n;
	long timeout;
	int rc;

	r->listing = r->need_list;
	/* A LIST as a streaming list where the API server serves one (a
	 * WATCH whose initial events are the objects, ended by a bookmark):
	 * the server sends from its watch cache, object by object, instead of
	 * building a LIST page in memory. The ConfigMap, one object by name,
	 * is listed. */
	r->streaming = r->listing && !r->cont[0] && cv->cfg.stream_lists && !r->no_stream &&
		       r->res != RES_CONFIGMAP;
	if (r->streaming)
		r->listing = false;
	collection(cv, r->res, path, sizeof(path));
	n = (size_t)snprintf(url, sizeof(url), "%s%s?", cv->cfg.kube.server, path);
	if (r->res == RES_CONFIGMAP)
		n += (size_t)snprintf(url + n, sizeof(url) - n, "fieldSelector=metadata.name%%3D%s&",
				      cv->cfg.cm_name);
	else if (r->res == RES_PODS)
		n += (size_t)snprintf(url + n, sizeof(url) - n, "fieldSelector=%s&", POD_FIELD_SELECTOR);
	if (r->listing || r->streaming) {
		if (!r->in_relist && r->res != RES_CONFIGMAP) {
			if ((rc = view_builder_relist_begin(cv->b, (enum view_resource)r->res)) != 0) {
				r->streaming = false;
				r->next_ms = clock_mono_ms() + 1000;
				return;
			}
			r->in_relist = true;
		}
		if (!r->cont[0]) {
			r->list_start_ms = clock_mono_ms();
			atomic_fetch_add(&r->relists[r->reason], 1);
			if (r->res == RES_CONFIGMAP)
				cm_clear(&r->cm_list);
		}
	}
	if (r->streaming) {
		unsigned t = cv->cfg.watch_timeout_s + jitter(cv, cv->cfg.watch_timeout_s / 10 + 1);

		/* No resourceVersion: the initial events are the objects as of
		 * a consistent read (after a 410 too). */
		n += (size_t)snprintf(url + n, sizeof(url) - n,
				      "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
				      "&allowWatchBookmarks=true&timeoutSeconds=%u", t);
		timeout = (long)t + 30;
	} else if (r->listing) {
		n += (size_t)snprintf(url + n, sizeof(url) - n, "limit=%u", cv->cfg.page_size);
		/* As client-go's reflector: the first page from the watch cache
		 * (resourceVersion=0: the API server answers from memory instead
		 * of reading etcd page by page), except after a 410, when only a
		 * consistent read from etcd is new enough. Later pages name no
		 * version: the continue token carries the first page's. */
		if (!r->cont[0] && r->reason != RELIST_EXPIRED)
			n += (size_t)snprintf(url + n, sizeof(url) - n, "&resourceVersion=0");
		if (r->cont[0]) {
			CURL *tmp = curl_easy_init();

			esc = tmp ? curl_easy_escape(tmp, r->cont, 0) : NULL;
			curl_easy_cleanup(tmp);
			if (!esc) {
				r->next_ms = clock_mono_ms() + 1000;
				return;
			}
			n += (size_t)snprintf(url + n, sizeof(url) - n, "&continue=%s", esc);
			curl_free(esc);
		}
		timeout = (long)cv->cfg.list_timeout_s;
	} else {
		unsigned t = cv->cfg.watch_timeout_s + jitter(cv, cv->cfg.watch_timeout_s / 10 + 1);

		n += (size_t)snprintf(url + n, sizeof(url) - n,
				      "watch=true&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=%s",
				      t, r->rv);
		timeout = (long)t + 30;
	}
	if (n >= sizeof(url)) {
		r->next_ms = clock_mono_ms() + 1000;
		return;
	}
	view_stream_free(r->stream);
	r->stream = NULL;
	if (view_stream_new(r->listing ? VIEW_STREAM_LIST : VIEW_STREAM_WATCH, res_kinds[r->res],
			    r->res == RES_SLICES || r->res == RES_CLAIMS ? cv->api_version : API_V1, cv->cfg.max_object,
			    &r->stream) != 0 || !(r->easy = curl_easy_init())) {
		r->next_ms = clock_mono_ms() + 1000;
		return;
	}
	r->headers = NULL;
	add_header(r, "Accept: application/json");
	add_header(r, "User-Agent: dra-guard");
	setup_easy(cv, r->easy, url, timeout);
	if (client_auth(cv, r->easy, &r->headers) != 0) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		curl_slist_free_all(r->headers);
		r->headers = NULL;
		r->next_ms = clock_mono_ms() + 1000;
		return;
	}
	if (!r->listing && !r->streaming && cv->cfg.watch_silence_s) {
		/* A WATCH that stays open with nothing on it - not even the
		 * bookmark the API server sends about every minute - is dead
		 * somewhere between here and the server: below one byte a second
		 * for that long, curl ends it and the watch resumes. */
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_TIME, (long)cv->cfg.watch_silence_s);
	}
	r->req_start_ms = clock_mono_ms();
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	r->http = 0;
	memset(r->counted, 0, sizeof(r->counted));
	buf_reset(&r->errbody);
	curl_multi_add_handle(cv->multi, r->easy);
}

static void finish_request(struct cluster_view *cv, struct reflector *r)
{
	curl_multi_remove_handle(cv->multi, r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	curl_slist_free_all(r->headers);
	r->headers = NULL;
}

static void fail_backoff(struct cluster_view *cv, struct reflector *r, const char *what,
			 const char *detail)
{
	struct log_line l;

	atomic_fetch_add(&r->errors[r->listing ? REQ_LIST : REQ_WATCH], 1);
	r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (r->backoff_ms > BACKOFF_MAX_MS)
		r->backoff_ms = BACKOFF_MAX_MS;
	/* Full jitter over the upper half: replicas do not retry in step. */
	r->next_ms = clock_mono_ms() + r->backoff_ms / 2 + jitter(cv, r->backoff_ms / 2 + 1);
	snprintf(r->last_error, sizeof(r->last_error), "%s: %.400s", what, detail);
	if (log_begin(&l, LOG_WARN, "cluster view: request failed")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "request", r->listing ? "list" : "watch");
		log_str(&l, "error", r->last_error);
		log_uint(&l, "retry_ms", (uint64_t)(r->next_ms - clock_mono_ms()));
		log_end(&l);
	}
}

static bool stream_had_events(const struct view_stream_info *info)
{
	int i;

	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		if (info->events[i])
			return true;
	return false;
}

static void start_relist(struct cluster_view *cv, struct reflector *r, enum relist_reason why);

/* A 410: the resourceVersion is gone, so the resource is listed again, after
 * the expiry backoff. */
static void expired(struct cluster_view *cv, struct reflector *r, const char *detail)
{
	int64_t now = clock_mono_ms();

	if (!r->last_expiry_ms || now - r->last_expiry_ms > EXPIRY_BACKOFF_RESET_MS)
		r->expiry_backoff_ms = EXPIRY_BACKOFF_MIN_MS;
	else if ((r->expiry_backoff_ms *= 2) > BACKOFF_MAX_MS)
		r->expiry_backoff_ms = BACKOFF_MAX_MS;
	r->last_expiry_ms = now;
	start_relist(cv, r, RELIST_EXPIRED);
	r->next_ms = now + r->expiry_backoff_ms / 2 + jitter(cv, r->expiry_backoff_ms / 2 + 1);
	snprintf(r->last_error, sizeof(r->last_error), "%.500s", detail);
}

static void start_relist(struct cluster_view *cv, struct reflector *r, enum relist_reason why)
{
	if (r->in_relist) {
		view_builder_relist_abort(cv->b, (enum view_resource)r->res);
		r->in_relist = false;
	}
	r->need_list = true;
	r->cont[0] = '\0';
	r->reason = why;
}

static int list_commit(struct cluster_view *cv, struct reflector *r, enum list_mode mode);

static void list_done(struct cluster_view *cv, struct reflector *r)
{
	const struct view_stream_info *info = view_stream_info(r->stream);

	if (info->continue_token[0]) {
		snprintf(r->cont, sizeof(r->cont), "%s", info->continue_token);
		r->next_ms = 0;
		return;
	}
	list_commit(cv, r, LIST_PAGES);
}

/* The end of a streaming list's initial events: the objects received are
 * the resource's, swapped in as a LIST's; the same WATCH goes on with the
 * changes. The initial events are not counted as watch events. */
static int stream_initial_end(void *ctx)
{
	struct reflector *r = ctx;
	const struct view_stream_info *info = view_stream_info(r->stream);
	int i;

	if (!r->streaming)
		return -EBADMSG;
	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		r->counted[i] = info->events[i];
	r->streaming = false;
	return list_commit(r->cv, r, LIST_STREAM);
}

/* The streaming list did not work here (refused, or its initial events
 * never ended): list in pages from now on, at once. */
static void stream_fallback(struct cluster_view *cv, struct reflector *r, const char *detail)
{
	struct log_line l;

	if (log_begin(&l, LOG_WARN, "cluster view: no streaming list; listing in pages")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "why", detail);
		log_end(&l);
	}
	r->no_stream = true;
	r->streaming = false;
	start_relist(cv, r, r->reason);
	r->next_ms = 0;
}

static int list_commit(struct cluster_view *cv, struct reflector *r, enum list_mode mode)
{
	const struct view_stream_info *info = view_stream_info(r->stream);
	int64_t took = clock_mono_ms() - r->list_start_ms;
	struct log_line l;
	int i;

	if (r->res == RES_CONFIGMAP) {
		cm_clear(&r->cm);
		r->cm = r->cm_list;
		memset(&r->cm_list, 0, sizeof(r->cm_list));
		cm_offer(cv, &r->cm, "list");
	} else if (view_builder_relist_commit(cv->b, (enum view_resource)r->res, clock_wall_ns()) != 0) {
		start_relist(cv, r, RELIST_ERROR);
		fail_backoff(cv, r, "list", "out of memory swapping the new table in");
		return -ENOMEM;
	}
	r->in_relist = false;
	r->need_list = false;
	r->cont[0] = '\0';
	snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	r->synced = true;
	r->last_error[0] = '\0';
	r->backoff_ms = 0;
	r->next_ms = 0;
	atomic_store(&r->synced_pub, true);
	atomic_store(&r->last_event_ns, clock_wall_ns());
	for (i = 0; i < LIST_BUCKETS && (double)took / 1000.0 > list_bucket_s[i]; i++)
		;
	atomic_fetch_add(&r->list_hist[i], 1);
	atomic_fetch_add(&r->list_sum_ms, (uint64_t)took);
	atomic_fetch_add(&r->list_count, 1);
	if (r->skip_unlogged)
		skip_flush(r);
	if (log_begin(&l, LOG_INFO, "cluster view: listed")) {
		log_str(&l, "resource", res_names[r->res]);
		log_str(&l, "reason", reason_names[r->reason]);
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
static void count_events(struct reflector *r)
{
	const struct view_stream_info *info;
	bool any = false;
	int i;

	if (!r->stream || r->listing || r->streaming)
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
		int64_t now = clock_wall_ns();

		atomic_store(&r->last_event_ns, now);
		if (r->res != RES_CONFIGMAP)
			view_builder_touch(r->cv->b, (enum view_resource)r->res, now);
	}
}

static void request_done(struct cluster_view *cv, struct reflector *r, CURLcode res)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped,
					 .initial_end = stream_initial_end, .ctx = r };
	const struct view_stream_info *info;
	char detail[700];
	long answered = r->http;   /* the status code, also of an answer with no body byte yet */
	int src;

	if (!answered)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &answered);
	finish_request(cv, r);
	info = view_stream_info(r->stream);
	count_events(r);
	/* Every event applied moved the resume point, however the WATCH
	 * ended: resuming from an older one would apply events twice. */
	if (!r->listing && info->resource_version[0])
		snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	if (r->http != 0 && r->http != 200) {
		struct view_status st;

		if (view_status_parse(buf_cstr(&r->errbody), buf_len(&r->errbody), &st) != 0)
			memset(&st, 0, sizeof(st));
		snprintf(detail, sizeof(detail), "HTTP %ld %s: %s", r->http, st.reason, st.message);
		if (r->http == 410) {
			expired(cv, r, detail);
			return;
		}
		if (r->streaming && (r->http == 400 || r->http == 422)) {
			/* An API server without streaming lists refuses the
			 * options (sendInitialEvents, resourceVersionMatch). */
			stream_fallback(cv, r, detail);
			return;
		}
		if (r->http == 401)
			cluster_view_client_unauthorized(cv);
		if (r->listing || r->streaming)
			start_relist(cv, r, RELIST_ERROR);
		fail_backoff(cv, r, r->listing ? "list" : "watch", detail);
		return;
	}
	src = res == CURLE_OK ? view_stream_end(r->stream, &sink) : 0;
	ca_verify_failed(cv, res);
	if (res == CURLE_OPERATION_TIMEDOUT && !r->listing && !r->streaming && answered == 200 &&
	    cv->cfg.watch_silence_s && clock_mono_ms() - r->req_start_ms < (int64_t)cv->cfg.watch_timeout_s * 1000) {
		/* Cut by the silence limit, not by the WATCH's own timeout, nor
		 * before an answer came (a connect timeout is a failure, backed
		 * off below). */
		struct log_line l;

		/* Not an error: a resource nobody writes may get no bookmark from
		 * an API server whose etcd sends no progress notifications. */
		atomic_fetch_add(&r->restarts[RESTART_SILENT], 1);
		if (log_begin(&l, LOG_INFO, "cluster view: silent watch restarted")) {
			log_str(&l, "resource", res_names[r->res]);
			log_uint(&l, "silence_s", cv->cfg.watch_silence_s);
			log_str(&l, "resource_version", r->rv);
			log_end(&l);
		}
		r->next_ms = 0;
		return;
	}
	if (res != CURLE_OK || src != 0) {
		const char *serr = view_stream_error(r->stream);
		bool garbage = serr[0] && (res == CURLE_WRITE_ERROR || src != 0);

		snprintf(detail, sizeof(detail), "%s%s%s", res != CURLE_OK ? curl_easy_strerror(res) : "",
			 res != CURLE_OK && serr[0] ? ": " : "", serr);
		if (r->listing || r->streaming || garbage)
			start_relist(cv, r, garbage ? RELIST_DECODE : RELIST_ERROR);
		fail_backoff(cv, r, r->listing ? "list" : "watch", detail);
		return;
	}
	if (r->listing) {
		list_done(cv, r);
		return;
	}
	/* A WATCH that ended: by its timeout (resume at once), or with an
	 * ERROR event. */
	if (r->streaming && !info->has_status) {
		/* Ended before its initial events did: a server that does not
		 * stream lists the way the guard asks. */
		stream_fallback(cv, r, "the WATCH with sendInitialEvents ended before the initial-events-end bookmark");
		return;
	}
	if (info->has_status) {
		snprintf(detail, sizeof(detail), "ERROR event %d %s: %s", info->status.code,
			 info->status.reason, info->status.message);
		if (info->status.code == 410 || strcmp(info->status.reason, "Expired") == 0 ||
		    strcmp(info->status.reason, "Gone") == 0) {
			expired(cv, r, detail);
			return;
		}
		if (r->streaming)
			start_relist(cv, r, RELIST_ERROR);
		fail_backoff(cv, r, "watch", detail);
		return;
	}
	/* Ended by its timeout: resume at once. Ended at once with nothing
	 * on it: the server (or something before it) closes watches; resume
	 * from the same resourceVersion, but after a backoff. */
	if (clock_mono_ms() - r->req_start_ms < SHORT_WATCH_MS && !stream_had_events(info)) {
		snprintf(detail, sizeof(detail), "very short watch: it ended after %lld ms with no event; "
			 "resuming from resourceVersion %.100s", (long long)(clock_mono_ms() - r->req_start_ms), r->rv);
		atomic_fetch_add(&r->restarts[RESTART_SHORT], 1);
		fail_backoff(cv, r, "watch", detail);
		return;
	}
	r->backoff_ms = 0;
	r->next_ms = 0;
}

/* --- discovery ------------------------------------------------------------------- */

static size_t collect_body(char *p, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;

	return buf_add(b, p, size * n) == 0 ? size * n : 0;
}

/* The first of v1, v1beta2, v1beta1 that /apis/resource.k8s.io offers. */
static int discover(struct cluster_view *cv, char *err, size_t errn)
{
	static const char *const pref[] = { "v1", "v1beta2", "v1beta1" };
	static const enum api_version ver[] = { API_V1, API_V1BETA2, API_V1BETA1 };
	char url[600];
	struct curl_slist *h = NULL, *t;
	struct buf body;
	CURL *e = curl_easy_init();
	CURLcode res;
	long code = 0;
	int i, rc = -EIO;

	if (!e)
		return -ENOMEM;
	buf_init(&body, 1 << 20);
	snprintf(url, sizeof(url), "%s/apis/resource.k8s.io", cv->cfg.kube.server);
	setup_easy(cv, e, url, 30);
	if ((t = curl_slist_append(h, "Accept: application/json")) != NULL)
		h = t;
	if (!t || client_auth(cv, e, &h) != 0) {
		curl_slist_free_all(h);
		curl_easy_cleanup(e);
		buf_free(&body);
		snprintf(err, errn, "discovery: out of memory");
		return -ENOMEM;
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
	res = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	if (res != CURLE_OK) {
		ca_verify_failed(cv, res);
		snprintf(err, errn, "discovery: %s", curl_easy_strerror(res));
	} else if (code == 401) {
		cluster_view_client_unauthorized(cv);
		snprintf(err, errn, "discovery: HTTP 401 (not authenticated)");
	} else if (code != 200) {
		snprintf(err, errn, "discovery: HTTP %ld from %.400s", code, url);
	} else {
		/* An APIGroup: versions[].version, read with the strict reader. */
		struct doc_set *set = NULL;
		const struct doc_node *versions = NULL;
		size_t j;

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
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	buf_free(&body);
	return rc;
}

/* --- the thread ------------------------------------------------------------------ */

static void update_readiness(struct cluster_view *cv)
{
	int k;
	bool all = true;

	for (k = 0; k < RES_COUNT; k++)
		all = all && cv->r[k].synced;
	pthread_mutex_lock(&cv->mu);
	if (all && !cv->synced_ns)
		cv->synced_ns = clock_wall_ns();
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
		backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : BACKOFF_MIN_MS;
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
		int64_t now = clock_mono_ms(), wait = 1000;
		int running = 0, left;
		CURLMsg *msg;

		for (k = 0; k < RES_COUNT; k++) {
			struct reflector *r = &cv->r[k];

			if (r->easy && r->streaming && now - r->list_start_ms > (int64_t)cv->cfg.list_timeout_s * 1000) {
				finish_request(cv, r);
				stream_fallback(cv, r, "the initial events did not end within the LIST timeout");
			}
			if (!r->easy && now >= r->next_ms)
				send_request(cv, r);
			if (!r->easy && r->next_ms - now < wait)
				wait = r->next_ms - now;
		}
		curl_multi_perform(cv->multi, &running);
		while ((msg = curl_multi_info_read(cv->multi, &left)) != NULL) {
			struct reflector *r = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
			request_done(cv, r, msg->data.result);
			update_readiness(cv);
			wait = 0;
		}
		for (k = 0; k < RES_COUNT; k++)
			count_events(&cv->r[k]);
		now = clock_mono_ms();
		if (view_builder_dirty(cv->b)) {
			bool all = cv->r[RES_SLICES].synced && cv->r[RES_CLAIMS].synced && cv->r[RES_PODS].synced &&
				   cv->r[RES_NODES].synced;

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
	memset(&cfg->kube, 0, sizeof(cfg->kube));
	cv->m = m;
	cv->ps = ps;
	cv->rand_state = (unsigned)clock_wall_ns() | 1u;
	snprintf(cv->why_not, sizeof(cv->why_not), "cluster view: not synced yet");
	pthread_mutex_init(&cv->mu, NULL);
	pthread_mutex_init(&cv->kube_mu, NULL);
	pthread_cond_init(&cv->published, NULL);
	if (snapshot_slot_init(&cv->slot) != 0 || view_builder_new(&cv->cfg.limits, &cv->b) != 0 ||
	    !(cv->multi = curl_multi_init())) {
		cluster_view_free(cv);
		return -ENOMEM;
	}
	for (k = 0; k < RES_COUNT; k++) {
		struct reflector *r = &cv->r[k];

		r->cv = cv;
		r->res = (enum res)k;
		r->need_list = true;
		r->reason = RELIST_START;
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
		struct reflector *r = &cv->r[k];

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
	kube_config_free(&cv->cfg.kube);
	pthread_cond_destroy(&cv->published);
	pthread_mutex_destroy(&cv->kube_mu);
	pthread_mutex_destroy(&cv->mu);
	free(cv);
}

/* --- status and metrics ------------------------------------------------------------ */

static double age_s(const struct reflector *r, int64_t now)
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
	int64_t now = clock_wall_ns();
	int rc, k, sv = stale(cv, now);

	pthread_mutex_lock(&cv->mu);
	st = cv->stats;
	rc = buf_printf(out, "{\"synced\":%s,\"version\":\"%s\",\"stale\":%s,\"maxAgeSeconds\":%" PRId64
			",\"resources\":{", cv->why_not[0] ? "false" : "true", cv->version,
			sv == 1 ? "true" : "false", max_age_ns(cv) / 1000000000);
	pthread_mutex_unlock(&cv->mu);
	for (k = 0; rc == 0 && k < RES_COUNT; k++) {
		const struct reflector *r = &cv->r[k];
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
	int64_t now = clock_wall_ns();
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
		for (i = 0; rc == 0 && i < RELIST_COUNT; i++)
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
		now = clock_mono_ms();
		if (now >= deadline_ms)
			break;
		/* The condition's clock is the wall clock: wait in short steps
		 * of the monotonic one so a clock step cannot stretch a wait. */
		ts = clock_after(CLOCK_REALTIME, (deadline_ms - now < 50 ? deadline_ms - now : 50) * 1000000);
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
