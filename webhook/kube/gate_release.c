/* gate_release.c - the Lease, and releasing gated Pods when a freeze ends. */
#include "gate_release.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "gate.h"
#include "hmap.h"
#include "log.h"
#include "prom.h"

#define BODY_MAX (256 * 1024)
#define REQUEST_TIMEOUT_S 10
/* Pods released (or found gone) are not patched again for this long: the
 * view shows the change a moment later. */
#define RECENT_MS 30000
/* Most Pods remembered as recently released; past it, a Pod may be
 * patched twice (harmless: the patch is idempotent). */
#define RECENT_MAX ((1u << 21) - 1)
/* Released Pods remembered before the first sweep of the expired ones. */
#define RECENT_SWEEP_MIN 511
/* The release thread, woken by whatever can change a pass, still looks
 * this often when nothing woke it. */
#define IDLE_MAX_MS 1000
/* Failed patches (409, 429, 5xx) are tried again after this long. */
#define RETRY_MS 1000
/* A holder found to be (or not to be) a replica's Pod is looked up again
 * after this long: the Pod may have gone. */
#define HOLDER_RECHECK_MS 60000
/* The label every replica's Pod carries (manifests/base/deployment.yaml). */
#define PEER_SELECTOR "app.kubernetes.io%2Fname%3Ddra-guard"

struct recent {
	uint8_t uid[16];
	int64_t at_ms;
};

struct gated_pod {
	char path[600];               /* /api/v1/namespaces/NS/pods/NAME */
	uint8_t uid[16];
};

struct gate_release {
	struct gate_release_config cfg;
	struct kube_client *client;
	struct cluster_view *cv;
	struct policy_source *ps;
	pthread_t thread;             /* finds and releases gated Pods */
	pthread_t lease_thread;       /* holds the Lease: its requests never
				       * stall the patches in flight */
	bool started, lease_started;
	bool hooked;                  /* kick() is the view's and the policy source's hook */
	atomic_bool stop;
	CURLM *multi;
	CURL *easy;                   /* the Lease requests: one handle keeps
				       * its connection between them */

	/* the Lease as last read (the lease thread's) */
	bool have_record;
	char rec_holder[254];
	char rec_renew[64];
	char rec_rv[64];
	long rec_transitions;
	long rec_duration;            /* what the record lasts: its own, at most ours */
	long rec_duration_written;    /* leaseDurationSeconds as written; 0 absent */
	char checked_holder[254];     /* the holder last looked up, and what it is */
	enum gate_holder checked;
	int64_t checked_ms;
	int64_t observed_ms;          /* when the record last changed, our clock */
	atomic_int_fast64_t live_until_ms;      /* a holder's record is live until then; 0: none */
	atomic_int_fast64_t leading_until_ms;   /* holder: last renewal + 2/3 of the lease */
	int64_t next_lease_ms;

	/* release state (the release thread's) */
	bool was_frozen;
	struct recent *recent;        /* [0..recent_n) */
	uint32_t recent_n, recent_alloc;
	uint32_t recent_sweep_at;     /* sweep the expired ones when this many are held */
	struct hmap recent_index;     /* uid -> position in recent */
	struct gated_pod *todo;
	uint32_t ntodo;

	pthread_mutex_t wake_mu;      /* with wake: the Lease thread sleeps until its next */
	pthread_cond_t wake;          /* renewal or a stop (CLOCK_MONOTONIC) */
	pthread_cond_t release_wake;  /* the release thread sleeps until kicked (same clock) */
	uint64_t kicks;               /* under wake_mu: a new view, the freeze, a Lease tick */

	pthread_mutex_t mu;           /* guards holder and leading for readers */
	char holder[254];
	atomic_bool leading;
	atomic_bool frozen;
	atomic_uint_fast64_t gated_now;
	atomic_uint_fast64_t released;
	atomic_uint_fast64_t patch_errors;
	atomic_uint_fast64_t lease_errors;
	atomic_uint_fast64_t takeovers;
	atomic_bool foreign;          /* the holder is no replica, or its duration is none of ours */
	atomic_int_fast64_t freeze_end_ns;      /* wall clock; 0 before a freeze ended */
	atomic_int_fast64_t last_release_ns;    /* wall clock of the last release after it */
};

/* A MicroTime as the API server writes it: 2026-12-01T10:00:00.123456Z. */
static void micro_time(char out[96])
{
	int64_t ns = clock_wall_ns();
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((uint64_t)ns % 1000000000u / 1000u));
}

/* One request on this thread: method, path, optional JSON body of
 * content_type. *code gets the HTTP status (0 on a transport error, and on
 * an answer larger than resp's cap). */
static int request(struct gate_release *g, const char *method, const char *path, const char *content_type,
		   const char *body, long *code, struct buf *resp)
{
	const struct kube_request rq = { .method = method, .path = path, .body = body,
					 .body_len = body ? strlen(body) : 0, .content_type = content_type,
					 .timeout_s = REQUEST_TIMEOUT_S };
	int rc = kube_client_request(g->client, g->easy, &rq, code, resp, NULL, 0);

	if (rc)
		*code = 0;
	return rc;
}

/* --- the Lease ------------------------------------------------------------------ */

static void lease_path(const struct gate_release *g, bool collection, char *buf, size_t n)
{
	snprintf(buf, n, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", g->cfg.lease_namespace,
		 collection ? "" : "/", collection ? "" : g->cfg.lease_name);
}

static void set_holder(struct gate_release *g, const char *holder)
{
	pthread_mutex_lock(&g->mu);
	snprintf(g->holder, sizeof(g->holder), "%s", holder);
	pthread_mutex_unlock(&g->mu);
}

/* Read the record from a Lease's JSON; a change restarts the observation. */
static int parse_lease(struct gate_release *g, const struct buf *b)
{
	json_t *root = json_loadb(buf_cstr(b), buf_len(b), JSON_REJECT_DUPLICATES, NULL);
	const char *holder = "", *renew = "", *rv = "";
	json_t *spec, *meta, *v;
	long dur = 0, trans = 0;
	bool changed;

	if (!root || !json_is_object(root)) {
		json_decref(root);
		return -EPROTO;
	}
	meta = json_object_get(root, "metadata");
	spec = json_object_get(root, "spec");
	if ((v = json_object_get(meta, "resourceVersion")) && json_is_string(v))
		rv = json_string_value(v);
	if ((v = json_object_get(spec, "holderIdentity")) && json_is_string(v))
		holder = json_string_value(v);
	if ((v = json_object_get(spec, "renewTime")) && json_is_string(v))
		renew = json_string_value(v);
	if ((v = json_object_get(spec, "leaseDurationSeconds")) && json_is_integer(v))
		dur = (long)json_integer_value(v);
	if ((v = json_object_get(spec, "leaseTransitions")) && json_is_integer(v))
		trans = (long)json_integer_value(v);
	changed = !g->have_record || strcmp(holder, g->rec_holder) != 0 || strcmp(renew, g->rec_renew) != 0;
	snprintf(g->rec_holder, sizeof(g->rec_holder), "%s", holder);
	snprintf(g->rec_renew, sizeof(g->rec_renew), "%s", renew);
	snprintf(g->rec_rv, sizeof(g->rec_rv), "%s", rv);
	g->rec_duration_written = dur > 0 ? (dur < 1000000 ? dur : 1000000) : 0;
	g->rec_duration = dur > 0 && dur < (long)g->cfg.lease_s ? dur : (long)g->cfg.lease_s;
	g->rec_transitions = trans;
	g->have_record = true;
	if (changed)
		g->observed_ms = clock_mono_ms();
	json_decref(root);   /* holder pointed into it: copy from the record */
	set_holder(g, g->rec_holder);
	return 0;
}

static void lease_warn(struct gate_release *g, const char *what, long code, const struct buf *resp)
{
	struct log_line l;

	atomic_fetch_add(&g->lease_errors, 1);
	if (log_begin(&l, LOG_WARN, "gate: lease request failed")) {
		log_str(&l, "request", what);
		log_int(&l, "http", code);
		log_strn(&l, "body", buf_cstr(resp), buf_len(resp) > 300 ? 300 : buf_len(resp));
		log_end(&l);
	}
}

/* Is the Pod named pod, in the Lease's namespace, a running replica of the
 * guard? Listed by name and label with the view's list permission.
 * GATE_HOLDER_UNCHECKED when the API server did not say. */
static enum gate_holder lookup_peer(struct gate_release *g, struct str pod, struct buf *resp)
{
	char path[640];
	long code = 0;
	json_t *root, *items, *it, *v;
	enum gate_holder h = GATE_HOLDER_FOREIGN;
	const char *phase = "";

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?fieldSelector=metadata.name%%3D%.*s"
		 "&labelSelector=%s&limit=1", g->cfg.lease_namespace, (int)pod.len, pod.ptr, PEER_SELECTOR);
	request(g, "GET", path, NULL, NULL, &code, resp);
	if (code != 200) {
		lease_warn(g, "holder pod", code, resp);
		return GATE_HOLDER_UNCHECKED;
	}
	root = json_loadb(buf_cstr(resp), buf_len(resp), JSON_REJECT_DUPLICATES, NULL);
	items = json_object_get(root, "items");
	if (!json_is_array(items)) {
		json_decref(root);
		lease_warn(g, "holder pod", code, resp);
		return GATE_HOLDER_UNCHECKED;
	}
	it = json_array_get(items, 0);
	if ((v = json_object_get(json_object_get(it, "status"), "phase")) && json_is_string(v))
		phase = json_string_value(v);
	v = json_object_get(json_object_get(it, "metadata"), "name");
	if (json_is_string(v) && strlen(json_string_value(v)) == pod.len &&
	    memcmp(json_string_value(v), pod.ptr, pod.len) == 0 &&
	    !json_object_get(json_object_get(it, "metadata"), "deletionTimestamp") &&
	    strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)
		h = GATE_HOLDER_PEER;
	json_decref(root);
	return h;
}

static bool named_peer(const struct gate_release *g, const char *holder)
{
	size_t n = strlen(holder);
	const char *p = g->cfg.peers;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == n && memcmp(p, holder, n) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/* Who the record's holder is: us, a replica, or no replica at all. */
static enum gate_holder holder_kind(struct gate_release *g, struct buf *resp)
{
	struct str pod;
	enum gate_holder h;

	if (!g->rec_holder[0])
		return GATE_HOLDER_NONE;
	if (strcmp(g->rec_holder, g->cfg.identity) == 0)
		return GATE_HOLDER_SELF;
	if (named_peer(g, g->rec_holder))
		return GATE_HOLDER_PEER;
	if (strcmp(g->rec_holder, g->checked_holder) == 0 && g->checked != GATE_HOLDER_UNCHECKED &&
	    clock_mono_ms() - g->checked_ms < HOLDER_RECHECK_MS)
		return g->checked;
	if (gate_holder_pod((struct str){ g->rec_holder, strlen(g->rec_holder) }, &pod) != 0)
		h = GATE_HOLDER_FOREIGN;    /* no replica writes that shape */
	else
		h = lookup_peer(g, pod, resp);
	snprintf(g->checked_holder, sizeof(g->checked_holder), "%s", g->rec_holder);
	g->checked = h;
	g->checked_ms = clock_mono_ms();
	return h;
}

/* Judge the record as of now_ms: set what the mutating endpoint reads
 * (live), export and log a foreign holder; true when we may take it. */
static bool lease_judge(struct gate_release *g, enum gate_holder h, int64_t now_ms)
{
	struct gate_lease_state st = { h, (uint32_t)g->rec_duration_written, g->cfg.lease_s, now_ms - g->observed_ms };
	struct gate_lease_verdict v;
	struct log_line l;

	gate_lease_judge(&st, &v);
	atomic_store(&g->live_until_ms, v.live ? g->observed_ms + g->rec_duration * 1000 : 0);
	if (v.foreign != atomic_load(&g->foreign) &&
	    log_begin(&l, v.foreign ? LOG_WARN : LOG_INFO, v.foreign ? "gate: the lease holder is foreign (no replica, or "
		      "a duration no replica writes); no Pod is gated for it" : "gate: the lease holder is a replica again")) {
		log_str(&l, "holder", g->rec_holder);
		log_int(&l, "lease_duration_seconds", g->rec_duration_written);
		log_int(&l, "configured_seconds", (long)g->cfg.lease_s);
		log_bool(&l, "replica", h == GATE_HOLDER_PEER || h == GATE_HOLDER_SELF);
		log_end(&l);
	}
	atomic_store(&g->foreign, v.foreign);
	return v.take_over;
}

/* The Lease body naming holder (our identity, or "" to give it up). */
static char *lease_body(const struct gate_release *g, const char *holder, bool with_rv, long transitions)
{
	json_t *o;
	char now[96], *s;

	micro_time(now);
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:I, s:s, s:s, s:I}}", "apiVersion",
		      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", g->cfg.lease_name, "namespace",
		      g->cfg.lease_namespace, "spec", "holderIdentity", holder, "leaseDurationSeconds",
		      (json_int_t)g->cfg.lease_s, "acquireTime", now, "renewTime", now, "leaseTransitions",
		      (json_int_t)transitions);
	if (!o)
		return NULL;
	if (with_rv)
		json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string(g->rec_rv));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* Write the Lease with us as holder: create, renew or take over. */
static void lease_write(struct gate_release *g, bool create, long transitions, struct buf *resp, int64_t start_ms)
{
	char path[512], *body = lease_body(g, g->cfg.identity, !create, transitions);
	long code = 0;

	if (!body)
		return;
	lease_path(g, create, path, sizeof(path));
	request(g, create ? "POST" : "PUT", path, "application/json", body, &code, resp);
	free(body);
	if (code == 200 || code == 201) {
		if (strcmp(g->rec_holder, g->cfg.identity) != 0) {
			struct log_line l;

			atomic_fetch_add(&g->takeovers, 1);
			if (log_begin(&l, LOG_INFO, "gate: holding the lease")) {
				log_str(&l, "identity", g->cfg.identity);
				log_str(&l, "previous", g->rec_holder);
				log_end(&l);
			}
		}
		if (parse_lease(g, resp) == 0)
			lease_judge(g, GATE_HOLDER_SELF, clock_mono_ms());
		atomic_store(&g->leading_until_ms, start_ms + (int64_t)g->cfg.lease_s * 2000 / 3);
		return;
	}
	if (code != 409)   /* 409: another replica wrote first; read again next time */
		lease_warn(g, create ? "create" : "update", code, resp);
}

static void lease_tick(struct gate_release *g, struct buf *resp)
{
	int64_t start = clock_mono_ms();
	char path[512];
	long code = 0;

	lease_path(g, false, path, sizeof(path));
	request(g, "GET", path, NULL, NULL, &code, resp);
	if (code == 404) {
		g->have_record = false;
		lease_write(g, true, 0, resp, start);
	} else if (code == 200 && parse_lease(g, resp) == 0) {
		enum gate_holder h = holder_kind(g, resp);
		bool take = lease_judge(g, h, start);

		if (h == GATE_HOLDER_SELF)
			lease_write(g, false, g->rec_transitions, resp, start);
		else if (take)
			lease_write(g, false, g->rec_transitions + 1, resp, start);
	} else {
		lease_warn(g, "get", code, resp);
	}
	atomic_store(&g->leading, clock_mono_ms() < atomic_load(&g->leading_until_ms));
}

/* Give the Lease up on the way out, so another replica need not wait. */
static void lease_give_up(struct gate_release *g, struct buf *resp)
{
	char path[512], *body;
	long code = 0;

	if (!atomic_load(&g->leading))
		return;
	body = lease_body(g, "", true, g->rec_transitions);
	lease_path(g, false, path, sizeof(path));
	if (body)
		request(g, "PUT", path, "application/json", body, &code, resp);
	free(body);
	atomic_store(&g->leading, false);
	atomic_store(&g->live_until_ms, 0);
}

/* --- recently released Pods ------------------------------------------------------ */

static bool recent_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct gate_release *g = ctx;

	return memcmp(g->recent[val].uid, key, 16) == 0;
}

static struct recent *recent_find(struct gate_release *g, const uint8_t uid[16])
{
	uint32_t at;

	if (hmap_find(&g->recent_index, hmap_hash(uid, 16), uid, &at) != 0)
		return NULL;
	return &g->recent[at];
}

/* Forget entries older than RECENT_MS, and sweep again when twice as many
 * as are left are held. */
static void recent_sweep(struct gate_release *g, int64_t now)
{
	uint32_t i, live = 0;

	for (i = 0; i < g->recent_n; i++)
		if (now - g->recent[i].at_ms < RECENT_MS)
			g->recent[live++] = g->recent[i];
	g->recent_n = live;
	hmap_clear(&g->recent_index);
	/* Fewer entries than the index held: no growth, nothing can fail. */
	for (i = 0; i < live; i++)
		hmap_put(&g->recent_index, hmap_hash(g->recent[i].uid, 16), g->recent[i].uid, i);
	g->recent_sweep_at = live * 2 > RECENT_SWEEP_MIN ? live * 2 : RECENT_SWEEP_MIN;
	if (g->recent_sweep_at > RECENT_MAX)
		g->recent_sweep_at = RECENT_MAX;
}

static void recent_add(struct gate_release *g, const uint8_t uid[16], int64_t now)
{
	struct recent *r;

	if (g->recent_n >= g->recent_sweep_at)
		recent_sweep(g, now);
	if (g->recent_n >= g->recent_sweep_at)
		return;  /* at the cap: keep what there is */
	if ((r = recent_find(g, uid)) != NULL) {
		r->at_ms = now;
		return;
	}
	if (g->recent_n == g->recent_alloc) {
		uint32_t n = g->recent_alloc ? g->recent_alloc * 2 : 1024;

		if (!(r = realloc(g->recent, (size_t)n * sizeof(*r))))
			return;
		g->recent = r;
		g->recent_alloc = n;
	}
	r = &g->recent[g->recent_n];
	memcpy(r->uid, uid, 16);
	r->at_ms = now;
	if (hmap_put(&g->recent_index, hmap_hash(uid, 16), uid, g->recent_n) == 0)
		g->recent_n++;
}

static bool recent_has(struct gate_release *g, const uint8_t uid[16], int64_t now)
{
	struct recent *r = recent_find(g, uid);

	return r && now - r->at_ms < RECENT_MS;
}

/* --- finding and releasing gated Pods -------------------------------------------- */

/* Gated Pod p goes on the to-do list, unless the list is full or p was
 * patched moments ago (now). */
static void collect_pod(struct gate_release *g, const struct view *v, const struct view_pod *p, int64_t now)
{
	struct str ns = view_str(v, p->namespace);
	struct gated_pod *t;
	uint8_t uid[16];

	view_uid_bytes(&p->uid, uid);
	if (g->ntodo >= GATE_RELEASE_PASS_MAX || recent_has(g, uid, now))
		return;
	t = &g->todo[g->ntodo];
	if ((size_t)snprintf(t->path, sizeof(t->path), "/api/v1/namespaces/%.*s/pods/%s", (int)ns.len, ns.ptr,
			     view_pod_name(p)) >= sizeof(t->path))
		return;
	memcpy(t->uid, uid, 16);
	g->ntodo++;
}

struct patch_slot {
	CURL *easy;
	struct curl_slist *headers;
	uint32_t pod;
};

static void patch_done(struct gate_release *g, struct patch_slot *s, CURLcode res)
{
	long code = 0;
	int64_t now = clock_mono_ms();

	if (res == CURLE_OK)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
	kube_client_answered(g->client, res, code);
	if (code == 200) {
		atomic_fetch_add(&g->released, 1);
		atomic_store(&g->last_release_ns, clock_wall_ns());
		recent_add(g, g->todo[s->pod].uid, now);
	} else if (code == 404) {
		recent_add(g, g->todo[s->pod].uid, now);   /* gone: nothing to release */
	} else {
		/* 409, 429, 5xx and transport errors come back on the next pass;
		 * others (403: the RBAC overlay is missing) are logged. */
		struct log_line l;

		atomic_fetch_add(&g->patch_errors, 1);
		if (code != 409 && code != 429 && code < 500 && log_begin(&l, LOG_WARN, "gate: release failed")) {
			log_str(&l, "pod", g->todo[s->pod].path);
			log_int(&l, "http", code);
			log_str(&l, "error", res == CURLE_OK ? "" : curl_easy_strerror(res));
			log_end(&l);
		}
	}
	curl_multi_remove_handle(g->multi, s->easy);
	curl_easy_cleanup(s->easy);
	curl_slist_free_all(s->headers);
	s->easy = NULL;
	s->headers = NULL;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static bool patch_start(struct gate_release *g, struct patch_slot *s, uint32_t pod)
{
	s->headers = NULL;
	s->pod = pod;
	if (!(s->easy = curl_easy_init()))
		return false;
	if (kube_client_prepare(g->client, s->easy, g->todo[pod].path, REQUEST_TIMEOUT_S,
				"application/strategic-merge-patch+json", &s->headers) != 0) {
		curl_easy_cleanup(s->easy);
		curl_slist_free_all(s->headers);
		s->easy = NULL;
		s->headers = NULL;
		return false;
	}
	curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->headers);
	curl_easy_setopt(s->easy, CURLOPT_CUSTOMREQUEST, "PATCH");
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, GATE_RELEASE_PATCH);
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
	curl_multi_add_handle(g->multi, s->easy);
	return true;
}

/* Renew (or read) the Lease when due. Whether it was. */
static bool lease_due(struct gate_release *g, struct buf *resp)
{
	int64_t tick_ms = (int64_t)g->cfg.lease_s * 1000 / 5;

	if (tick_ms < 200)
		tick_ms = 200;
	if (clock_mono_ms() < g->next_lease_ms)
		return false;
	lease_tick(g, resp);
	g->next_lease_ms = clock_mono_ms() + tick_ms;
	return true;
}

/* Something a pass depends on changed: wake the release thread. Any
 * thread (the view's, the policy source's, the Lease's). */
static void kick(void *ctx)
{
	struct gate_release *g = ctx;

	pthread_mutex_lock(&g->wake_mu);
	g->kicks++;
	pthread_cond_signal(&g->release_wake);
	pthread_mutex_unlock(&g->wake_mu);
}

static struct timespec mono_ts(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	return ts;
}

/* Sleep until a kick newer than *seen, a stop, or until_ms (monotonic). */
static void release_sleep(struct gate_release *g, uint64_t *seen, int64_t until_ms)
{
	struct timespec ts = mono_ts(until_ms);

	pthread_mutex_lock(&g->wake_mu);
	while (g->kicks == *seen && !atomic_load(&g->stop) && clock_mono_ms() < until_ms)
		pthread_cond_timedwait(&g->release_wake, &g->wake_mu, &ts);
	*seen = g->kicks;
	pthread_mutex_unlock(&g->wake_mu);
}

/* Patch g->todo, GATE_RELEASE_PARALLEL at a time, stopping early when the
 * freeze comes back or we stop leading. */
static void release_all(struct gate_release *g)
{
	struct patch_slot slots[GATE_RELEASE_PARALLEL];
	uint32_t next = 0, active = 0, done, i;
	int running;

	memset(slots, 0, sizeof(slots));
	while ((next < g->ntodo || active) && !atomic_load(&g->stop)) {
		bool go;
		CURLMsg *msg;
		int left;

		go = atomic_load(&g->leading) && clock_mono_ms() < atomic_load(&g->leading_until_ms) &&
		     !atomic_load(&g->frozen);

		for (i = 0; go && i < GATE_RELEASE_PARALLEL && next < g->ntodo; i++) {
			if (slots[i].easy)
				continue;
			if (!patch_start(g, &slots[i], next++))
				break;
			active++;
		}
		if (!go)
			next = g->ntodo;
		if (!active)
			break;
		curl_multi_perform(g->multi, &running);
		done = 0;
		while ((msg = curl_multi_info_read(g->multi, &left)) != NULL) {
			struct patch_slot *s = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			patch_done(g, s, msg->data.result);
			active--;
			done++;
		}
		/* A slot that came free is filled at once: waiting for the next
		 * socket event first would leave it idle for a round trip of
		 * another patch. */
		if (!done)
			curl_multi_poll(g->multi, NULL, 0, 100, NULL);
	}
	for (i = 0; i < GATE_RELEASE_PARALLEL; i++)
		if (slots[i].easy)
			patch_done(g, &slots[i], CURLE_ABORTED_BY_CALLBACK);
}

/* Note the freeze's state; a freeze that ended starts the release clock. */
static void follow_freeze(struct gate_release *g)
{
	struct policy_status st;

	policy_source_status(g->ps, &st);
	if (!st.serving)
		return;
	if (g->was_frozen && !st.frozen) {
		atomic_store(&g->freeze_end_ns, clock_wall_ns());
		atomic_store(&g->last_release_ns, 0);
	}
	g->was_frozen = st.frozen;
	atomic_store(&g->frozen, st.frozen);
}

/* One look at the view: count the gated Pods, and when leading with the
 * freeze off, release up to GATE_RELEASE_PASS_MAX of them. The view's seq. */
static uint64_t pass(struct gate_release *g)
{
	struct snapshot *s = cluster_view_acquire(g->cv);
	struct view_iter it;
	const struct view_pod *p;
	int64_t now = clock_mono_ms();
	uint64_t seq = 0, gated = 0;

	if (!s)
		return 0;
	seq = view_seq(cluster_view_get(s));
	g->ntodo = 0;
	for (p = view_first_pod(&it, cluster_view_get(s)); p; p = view_next_pod(&it))
		if (p->gated) {
			gated++;
			collect_pod(g, cluster_view_get(s), p, now);
		}
	snapshot_release(s);
	atomic_store(&g->gated_now, gated);
	if (atomic_load(&g->leading) && !atomic_load(&g->frozen))
		release_all(g);
	else
		g->ntodo = 0;
	return seq;
}

/* The view's sequence number now (0 before its first sync). */
static uint64_t current_seq(struct gate_release *g)
{
	struct snapshot *s = cluster_view_acquire(g->cv);
	uint64_t seq = s ? view_seq(cluster_view_get(s)) : 0;

	snapshot_release(s);
	return seq;
}

static void *run(void *arg)
{
	struct gate_release *g = arg;
	uint64_t seen = 0;            /* the view's seq at the last pass */
	bool could = false;           /* whether the last pass could release */
	bool more = false;            /* the last pass was cut at PASS_MAX */
	int64_t retry_ms = 0;         /* patches failed: pass again then */
	uint64_t kicks = 0;           /* the last kick seen */

	while (!atomic_load(&g->stop)) {
		int64_t now, until, lead;
		bool can;

		now = clock_mono_ms();
		atomic_store(&g->leading, now < atomic_load(&g->leading_until_ms));
		follow_freeze(g);
		can = atomic_load(&g->leading) && !atomic_load(&g->frozen);
		/* A walk of every Pod only when it can find something new: the
		 * view changed, the freeze ended or the Lease came, a pass was
		 * cut short, or failed patches are due again. */
		if (more || can != could || current_seq(g) != seen || (retry_ms && now >= retry_ms)) {
			uint64_t errors = atomic_load(&g->patch_errors);

			seen = pass(g);
			could = can;
			more = g->ntodo >= GATE_RELEASE_PASS_MAX;
			retry_ms = atomic_load(&g->patch_errors) != errors ? clock_mono_ms() + RETRY_MS : 0;
			if (more)
				continue;
		}
		/* Asleep until something a pass depends on changes - a new
		 * view, the freeze's state, a Lease tick: each kicks - or the
		 * failed patches' retry or the end of the lead come due. */
		now = clock_mono_ms();
		until = now + IDLE_MAX_MS;
		if (retry_ms && retry_ms < until)
			until = retry_ms;
		lead = atomic_load(&g->leading_until_ms);
		if (lead > now && lead < until)
			until = lead;
		release_sleep(g, &kicks, until);
	}
	return NULL;
}

/* The Lease thread's clock: a condition on CLOCK_MONOTONIC, so a step of
 * the wall clock neither stretches nor cuts a wait. 0 or -ENOMEM. */
static int wake_init(struct gate_release *g)
{
	pthread_condattr_t ca;
	int rc = -ENOMEM;

	if (pthread_condattr_init(&ca) != 0)
		return rc;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_mutex_init(&g->wake_mu, NULL) == 0) {
		if (pthread_cond_init(&g->wake, &ca) != 0) {
			pthread_mutex_destroy(&g->wake_mu);
		} else if (pthread_cond_init(&g->release_wake, &ca) != 0) {
			pthread_cond_destroy(&g->wake);
			pthread_mutex_destroy(&g->wake_mu);
		} else {
			rc = 0;
		}
	}
	pthread_condattr_destroy(&ca);
	return rc;
}

/* The Lease: renewed (or read) when due, given up on the way out. Between
 * renewals the thread sleeps until the next one is due, or a stop. */
static void *lease_run(void *arg)
{
	struct gate_release *g = arg;
	struct buf resp;

	buf_init(&resp, BODY_MAX);
	pthread_mutex_lock(&g->wake_mu);
	while (!atomic_load(&g->stop)) {
		struct timespec ts;

		pthread_mutex_unlock(&g->wake_mu);
		/* A tick may have changed who leads: the release thread looks. */
		if (lease_due(g, &resp))
			kick(g);
		pthread_mutex_lock(&g->wake_mu);
		if (atomic_load(&g->stop) || clock_mono_ms() >= g->next_lease_ms)
			continue;
		ts = mono_ts(g->next_lease_ms);
		pthread_cond_timedwait(&g->wake, &g->wake_mu, &ts);
	}
	pthread_mutex_unlock(&g->wake_mu);
	lease_give_up(g, &resp);
	buf_free(&resp);
	return NULL;
}

/* --- lifecycle, status, metrics ---------------------------------------------------- */

int gate_release_new(const struct gate_release_config *cfg, struct kube_client *client, struct cluster_view *cv,
		     struct policy_source *ps, struct gate_release **out)
{
	struct gate_release *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->cfg = *cfg;
	g->client = client;
	g->cv = cv;
	g->ps = ps;
	pthread_mutex_init(&g->mu, NULL);
	if (wake_init(g) != 0) {
		pthread_mutex_destroy(&g->mu);
		free(g);
		return -ENOMEM;
	}
	g->todo = calloc(GATE_RELEASE_PASS_MAX, sizeof(*g->todo));
	g->multi = curl_multi_init();
	g->easy = curl_easy_init();
	g->recent_sweep_at = RECENT_SWEEP_MIN;
	if (!g->todo || !g->multi || !g->easy || hmap_init(&g->recent_index, RECENT_MAX, recent_eq, g) != 0) {
		gate_release_free(g);
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

int gate_release_start(struct gate_release *g)
{
	int rc = pthread_create(&g->lease_thread, NULL, lease_run, g);

	if (rc)
		return -rc;
	g->lease_started = true;
	/* Named for ps, top and /proc/PID/task/TID/comm: how often each
	 * wakes shows there. */
	pthread_setname_np(g->lease_thread, "dra-gate-lease");
	/* The release thread sleeps until one of these (or the Lease) kicks. */
	cluster_view_on_publish(g->cv, kick, g);
	policy_source_on_freeze_change(g->ps, kick, g);
	g->hooked = true;
	rc = pthread_create(&g->thread, NULL, run, g);
	if (rc)
		return -rc;
	g->started = true;
	pthread_setname_np(g->thread, "dra-gate-free");
	return 0;
}

void gate_release_free(struct gate_release *g)
{
	if (!g)
		return;
	if (g->hooked) {
		/* No kick may come once the gate is gone. */
		cluster_view_on_publish(g->cv, NULL, NULL);
		policy_source_on_freeze_change(g->ps, NULL, NULL);
	}
	pthread_mutex_lock(&g->wake_mu);
	atomic_store(&g->stop, true);
	pthread_cond_broadcast(&g->wake);
	pthread_cond_broadcast(&g->release_wake);
	pthread_mutex_unlock(&g->wake_mu);
	if (g->started) {
		curl_multi_wakeup(g->multi);
		pthread_join(g->thread, NULL);
	}
	if (g->lease_started)
		pthread_join(g->lease_thread, NULL);
	if (g->multi)
		curl_multi_cleanup(g->multi);
	if (g->easy)
		curl_easy_cleanup(g->easy);
	free(g->todo);
	free(g->recent);
	hmap_fini(&g->recent_index);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->wake);
	pthread_cond_destroy(&g->release_wake);
	pthread_mutex_destroy(&g->wake_mu);
	free(g);
}

bool gate_release_live(struct gate_release *g)
{
	int64_t until = atomic_load(&g->live_until_ms);

	return until && clock_mono_ms() < until;
}

void gate_release_status_json(struct gate_release *g, struct jw *w)
{
	char holder[254], lease[320];

	pthread_mutex_lock(&g->mu);
	snprintf(holder, sizeof(holder), "%s", g->holder);
	pthread_mutex_unlock(&g->mu);
	snprintf(lease, sizeof(lease), "%s/%s", g->cfg.lease_namespace, g->cfg.lease_name);
	jw_object_begin(w);
	jw_kcstr(w, "lease", lease);
	jw_kcstr(w, "holder", holder);
	jw_kcstr(w, "self", g->cfg.identity);
	jw_kbool(w, "leading", atomic_load(&g->leading));
	jw_kbool(w, "live", gate_release_live(g));
	jw_kuint(w, "gatedPods", (uint64_t)atomic_load(&g->gated_now));
	jw_object_end(w);
}

int gate_release_render_metrics(void *ctx, struct buf *out)
{
	struct gate_release *g = ctx;
	int64_t end = atomic_load(&g->freeze_end_ns), last = atomic_load(&g->last_release_ns);
	int rc;

	rc = prom_scalar(out, PROM_GATE_PODS_GATED, "%" PRIu64, (uint64_t)atomic_load(&g->gated_now));
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_PODS_RELEASED_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&g->released));
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_RELEASE_ERRORS_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&g->patch_errors));
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_RELEASE_SECONDS, "%.3f", end && last > end ? (double)(last - end) / 1e9 : 0.0);
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_LEADER, "%d", atomic_load(&g->leading) ? 1 : 0);
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_LEASE_ERRORS_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&g->lease_errors));
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_LEASE_ACQUIRED_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&g->takeovers));
	if (rc == 0)
		rc = prom_scalar(out, PROM_GATE_LEASE_FOREIGN, "%d", atomic_load(&g->foreign) ? 1 : 0);
	return rc;
}
