/* cluster_view.c - five reflectors into the view and the policy source, the
 * snapshots, the view kept when a freeze began, and the dumps. */
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
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "clock.h"
#include "doc.h"
#include "jw.h"
#include "log.h"
#include "prom.h"
#include "reflector.h"
#include "view_stream.h"

/* What the cluster view watches, in the order of its metrics and of
 * /debug/view: the kinds the view holds, then the policy ConfigMap. */
static const enum object_kind watched[] = { OBJECT_RESOURCE_SLICE, OBJECT_RESOURCE_CLAIM, OBJECT_POD, OBJECT_NODE,
					    OBJECT_CONFIG_MAP };
#define NWATCHED ((int)(sizeof(watched) / sizeof(watched[0])))

/* A watch's name (its metrics' resource label, its key in /debug/view):
 * the kind's API resource, but "configmap" for the one ConfigMap. */
static const char *watch_name(enum object_kind k)
{
	return k == OBJECT_CONFIG_MAP ? "configmap" : model_kind_resource(k);
}

/* Pods are watched as kube-scheduler's own informer watches them: the
 * finished ones hold nothing on a node. */
#define POD_FIELD_SELECTOR "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

/* An APIGroup document: a few hundred bytes. */
#define DISCOVERY_MAX (1 << 20)

struct cluster_view;

/* One watched resource: its reflector, and where its objects go. */
struct resource {
	struct cluster_view *cv;
	enum object_kind kind;
	struct reflector *r;
};

/* The ConfigMap as the API server has it. */
struct config_map_copy {
	bool exists;
	bool has_policy, has_freeze, has_reason;
	char *policy, *freeze, *reason;
	size_t policy_len, freeze_len, reason_len;
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
	struct resource r[NWATCHED];  /* in watched[] order */
	struct config_map_copy cm, cm_list;   /* the ConfigMap: as watched, as being listed */
	atomic_bool cm_exists_pub;
	struct snapshot_slot slot;
	struct view_handle *handles;  /* published, oldest first */
	int64_t last_publish_ms;
	bool published_once;
	bool trim_due;                /* a LIST was swapped in: give back what it freed */
	unsigned rand_state;
	atomic_uint_fast64_t published_seq;   /* of the newest snapshot, for waiters */

	pthread_mutex_t mu;           /* guards the fields below */
	pthread_cond_t published;     /* broadcast on every publish */
	void (*on_publish)(void *ctx);   /* called on every publish */
	void *on_publish_ctx;
	char why_not[600];
	struct view_stats stats;
	int64_t synced_ns;
	struct snapshot *frozen;      /* the view when the last freeze began, or NULL */
	int64_t frozen_ns;
	bool freeze_waits;            /* a freeze began before the first view: keep that one */
};

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
	cv->last_publish_ms = clock_mono_ms();
	cv->published_once = true;
	pthread_mutex_lock(&cv->mu);
	atomic_store(&cv->published_seq, view_seq(v));
	pthread_cond_broadcast(&cv->published);
	if (cv->on_publish)
		cv->on_publish(cv->on_publish_ctx);
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

	for (k = 0; k < NWATCHED; k++) {
		const struct reflector *r = cv->r[k].r;
		const char *err = reflector_last_error(r);

		if (reflector_synced(r))
			continue;
		snprintf(why, sizeof(why), "cluster view: %s not synced yet%s%.400s", watch_name(cv->r[k].kind),
			 err[0] ? ": " : "", err);
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
	atomic_store(&cv->cm_exists_pub, c->exists);
	if (!c->exists) {
		policy_source_offer_api(cv->ps, false, NULL, 0, false, NULL, 0, false, NULL, 0, why);
		return;
	}
	policy_source_offer_api(cv->ps, true, c->has_policy ? c->policy : NULL, c->policy_len,
				c->has_freeze, c->freeze, c->freeze_len, c->has_reason, c->reason,
				c->reason_len, why);
}

/* --- the sinks: objects into the builder, the ConfigMap into the policy source -- */

static int view_begin(void *ctx)
{
	struct resource *x = ctx;

	return view_builder_relist_begin(x->cv->b, x->kind);
}

static void view_abort(void *ctx)
{
	struct resource *x = ctx;

	view_builder_relist_abort(x->cv->b, x->kind);
}

static int view_commit(void *ctx)
{
	struct resource *x = ctx;

	x->cv->trim_due = true;
	return view_builder_relist_commit(x->cv->b, x->kind, clock_wall_ns());
}

static int view_object(void *ctx, bool listed, enum view_event ev, const struct k8s_object *obj, char *err,
		       size_t n)
{
	struct resource *x = ctx;

	if (listed)
		return view_builder_relist_add(x->cv->b, x->kind, obj, clock_wall_ns(), err, n);
	return view_builder_apply(x->cv->b, x->kind, ev, obj, clock_wall_ns(), err, n);
}

static void view_touch(void *ctx, int64_t now_ns)
{
	struct resource *x = ctx;

	view_builder_touch(x->cv->b, x->kind, now_ns);
}

static int cm_begin(void *ctx)
{
	struct resource *x = ctx;

	cm_clear(&x->cv->cm_list);
	return 0;
}

static void cm_abort(void *ctx)
{
	(void)ctx;
}

static int cm_commit(void *ctx)
{
	struct cluster_view *cv = ((struct resource *)ctx)->cv;

	cm_clear(&cv->cm);
	cv->cm = cv->cm_list;
	memset(&cv->cm_list, 0, sizeof(cv->cm_list));
	cm_offer(cv, &cv->cm, "list");
	return 0;
}

static int cm_object(void *ctx, bool listed, enum view_event ev, const struct k8s_object *obj, char *err,
		     size_t n)
{
	struct cluster_view *cv = ((struct resource *)ctx)->cv;
	int rc;

	(void)err;
	(void)n;
	if (!str_eq_cstr(obj->meta.name, cv->cfg.cm_name))
		return 0;
	if (listed)
		return cm_set(&cv->cm_list, &obj->u.config_map);
	if (ev == VIEW_DELETED)
		cm_clear(&cv->cm);
	else if ((rc = cm_set(&cv->cm, &obj->u.config_map)) != 0)
		return rc;
	cm_offer(cv, &cv->cm, "watch");
	return 0;
}

/* The collection of kind k, and the start of its query. */
static void collection(const struct cluster_view *cv, enum object_kind k, char *buf, size_t n)
{
	if (k == OBJECT_CONFIG_MAP)
		snprintf(buf, n, "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s&",
			 cv->cfg.cm_namespace, cv->cfg.cm_name);
	else if (k == OBJECT_POD)
		snprintf(buf, n, "/api/v1/pods?fieldSelector=%s&", POD_FIELD_SELECTOR);
	else if (k == OBJECT_NODE)
		snprintf(buf, n, "/api/v1/nodes?");
	else
		snprintf(buf, n, "/apis/resource.k8s.io/%s/%s?", cv->version, model_kind_resource(k));
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

	for (k = 0; k < NWATCHED; k++)
		all = all && reflector_synced(cv->r[k].r);
	pthread_mutex_lock(&cv->mu);
	if (all && !cv->synced_ns)
		cv->synced_ns = clock_wall_ns();
	pthread_mutex_unlock(&cv->mu);
	set_why(cv);
}

static void *run(void *arg)
{
	struct cluster_view *cv = arg;
	char err[512], path[1024];
	unsigned backoff = 0;
	int k;

	/* Discovery first: it names the version every request uses. */
	while (!atomic_load(&cv->stop)) {
		int64_t until;

		if (discover(cv, err, sizeof(err)) == 0)
			break;
		/* Counted for every resource: each waits for the version discovery names. */
		for (k = 0; k < NWATCHED; k++)
			reflector_discovery_failed(cv->r[k].r, err);
		set_why(cv);
		log_msg_str(LOG_WARN, "cluster view: API server not reachable yet", "error", err);
		backoff = backoff ? (backoff * 2 > REFLECTOR_BACKOFF_MAX_MS ? REFLECTOR_BACKOFF_MAX_MS : backoff * 2)
				  : REFLECTOR_BACKOFF_MIN_MS;
		/* Asleep until then, or until cluster_view_stop() wakes the multi. */
		until = clock_mono_ms() + backoff / 2 + clock_jitter(&cv->rand_state, backoff / 2 + 1);
		while (!atomic_load(&cv->stop) && clock_mono_ms() < until)
			curl_multi_poll(cv->multi, NULL, 0, (int)(until - clock_mono_ms()), NULL);
	}
	for (k = 0; k < NWATCHED; k++) {
		collection(cv, cv->r[k].kind, path, sizeof(path));
		reflector_set_collection(cv->r[k].r, path,
					 *model_kind_group(cv->r[k].kind) ? cv->api_version : API_V1);
	}
	if (!atomic_load(&cv->stop))
		log_msg_str(LOG_INFO, "cluster view: watching", "resource_k8s_io_version", cv->version);
	while (!atomic_load(&cv->stop)) {
		int64_t now, wait = 1000;
		int running = 0, left;
		CURLMsg *msg;

		for (k = 0; k < NWATCHED; k++)
			wait = reflector_poll(cv->r[k].r, wait);
		curl_multi_perform(cv->multi, &running);
		while ((msg = curl_multi_info_read(cv->multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			reflector_done(reflector_of(msg->easy_handle), msg->data.result);
			update_readiness(cv);
			wait = 0;
		}
		for (k = 0; k < NWATCHED; k++)
			reflector_count_events(cv->r[k].r);
		now = clock_mono_ms();
		if (view_builder_dirty(cv->b)) {
			bool all = true;   /* every watch of a kind the view holds */

			for (k = 0; k < NWATCHED; k++)
				all = all && (!view_holds_kind(cv->r[k].kind) || reflector_synced(cv->r[k].r));

			if (all && now - cv->last_publish_ms >= CLUSTER_VIEW_PUBLISH_MS)
				publish(cv);
			else if (all && CLUSTER_VIEW_PUBLISH_MS - (now - cv->last_publish_ms) < wait)
				wait = CLUSTER_VIEW_PUBLISH_MS - (now - cv->last_publish_ms);
		}
		reclaim(cv);
		if (cv->trim_due && !view_builder_dirty(cv->b)) {
			/* A LIST's decoding and the table it replaced leave free
			 * pages in the middle of the heaps (a 100,000-claim sync:
			 * about 5 MB) that glibc keeps resident; once it is
			 * published, hand them back. */
			cv->trim_due = false;
#ifdef __GLIBC__
			malloc_trim(0);
#endif
		}
		set_why(cv);
		if (wait < 0)
			wait = 0;
		if (wait > 0)
			curl_multi_poll(cv->multi, NULL, 0, (int)wait, NULL);
	}
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
	cv->rand_state = (unsigned)clock_wall_ns() | 1u;
	snprintf(cv->why_not, sizeof(cv->why_not), "cluster view: not synced yet");
	pthread_mutex_init(&cv->mu, NULL);
	pthread_cond_init(&cv->published, NULL);
	if (snapshot_slot_init(&cv->slot) != 0 || view_builder_new(&cv->cfg.limits, &cv->b) != 0 ||
	    !(cv->multi = curl_multi_init())) {
		cluster_view_free(cv);
		return -ENOMEM;
	}
	for (k = 0; k < NWATCHED; k++) {
		static const struct reflector_sink view_sink = { .begin = view_begin, .abort = view_abort,
								 .commit = view_commit, .object = view_object,
								 .touch = view_touch };
		static const struct reflector_sink cm_sink = { .begin = cm_begin, .abort = cm_abort,
							       .commit = cm_commit, .object = cm_object };
		struct reflector_config rc = {
			.name = watch_name(watched[k]), .kind = watched[k],
			/* The ConfigMap, one object by name, is listed. */
			.stream = cv->cfg.stream_lists && watched[k] != OBJECT_CONFIG_MAP,
			.page_size = cv->cfg.page_size, .watch_timeout_s = cv->cfg.watch_timeout_s,
			.watch_silence_s = cv->cfg.watch_silence_s, .list_timeout_s = cv->cfg.list_timeout_s,
			.max_object = cv->cfg.max_object,
		};
		struct reflector_sink sink = view_holds_kind(watched[k]) ? view_sink : cm_sink;
		struct resource *x = &cv->r[k];

		x->cv = cv;
		x->kind = watched[k];
		sink.ctx = x;
		if (reflector_new(&rc, &sink, cv->cfg.client, cv->multi, &x->r) != 0) {
			cluster_view_free(cv);
			return -ENOMEM;
		}
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
	/* Before the builder and the multi handle their requests use. */
	for (k = 0; k < NWATCHED; k++)
		reflector_free(cv->r[k].r);
	cm_clear(&cv->cm);
	cm_clear(&cv->cm_list);
	view_builder_free(cv->b);
	if (cv->multi)
		curl_multi_cleanup(cv->multi);
	pthread_cond_destroy(&cv->published);
	pthread_mutex_destroy(&cv->mu);
	free(cv);
}

/* --- status and metrics ------------------------------------------------------------ */

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
	int k, sv = stale(cv, now);
	struct jw w;

	jw_init(&w, out);
	pthread_mutex_lock(&cv->mu);
	st = cv->stats;
	jw_object_begin(&w);
	jw_kbool(&w, "synced", !cv->why_not[0]);
	jw_kcstr(&w, "version", cv->version);
	jw_kbool(&w, "stale", sv == 1);
	jw_kint(&w, "maxAgeSeconds", max_age_ns(cv) / 1000000000);
	pthread_mutex_unlock(&cv->mu);
	jw_key(&w, "resources");
	jw_object_begin(&w);
	for (k = 0; k < NWATCHED; k++) {
		struct reflector *r = cv->r[k].r;
		enum object_kind kind = cv->r[k].kind;
		uint64_t objects = view_holds_kind(kind) ? st.objects[kind] : atomic_load(&cv->cm_exists_pub) ? 1 : 0;

		jw_key(&w, watch_name(kind));
		jw_object_begin(&w);
		jw_kbool(&w, "synced", reflector_synced_pub(r));
		jw_kuint(&w, "objects", objects);
		jw_kfixed(&w, "lastEventAgeSeconds", reflector_age_s(r, now), 3);
		jw_object_end(&w);
	}
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}

/* One record as an object (jw's first error sticks; jw_finish reports it). */
static void dump_slice(struct jw *w, const struct view *vw, const struct view_slice *s)
{
	struct str v = view_str(vw, s->driver), p = view_str(vw, s->pool);

	jw_object_begin(w);
	jw_kcstr(w, "name", view_slice_name(s));
	jw_kcstr(w, "resourceVersion", view_slice_rv(s));
	jw_kstring(w, "driver", v.ptr, v.len);
	jw_kstring(w, "pool", p.ptr, p.len);
	jw_kint(w, "generation", s->generation);
	jw_kuint(w, "devices", s->ndevices);
	jw_object_end(w);
}

static void dump_claim(struct jw *w, const struct view *v, const struct view_claim *c)
{
	struct str ns = view_str(v, c->namespace), node = view_str(v, c->node_name);
	char uid[64];

	view_uid_format(&c->uid, uid, sizeof(uid));
	jw_object_begin(w);
	jw_kstring(w, "namespace", ns.ptr, ns.len);
	jw_kcstr(w, "name", view_claim_name(c));
	jw_kcstr(w, "resourceVersion", view_claim_rv(c));
	jw_kcstr(w, "uid", uid);
	jw_kbool(w, "allocated", c->allocated);
	jw_kuint(w, "results", c->nresults);
	jw_kuint(w, "reservedFor", c->nreserved);
	jw_kstring(w, "node", node.ptr, node.len);
	jw_object_end(w);
}

static void dump_pool(struct jw *w, const struct view *v, const struct view_pool *p)
{
	struct str dr = view_str(v, p->driver), n = view_str(v, p->name);

	jw_object_begin(w);
	jw_kstring(w, "driver", dr.ptr, dr.len);
	jw_kstring(w, "name", n.ptr, n.len);
	jw_kint(w, "generation", p->generation);
	jw_kint(w, "maxGeneration", p->max_generation);
	jw_kuint(w, "slices", p->nslices);
	jw_kint(w, "resourceSliceCount", p->resource_slice_count);
	jw_object_end(w);
}

int cluster_view_dump_json(struct cluster_view *cv, struct buf *out)
{
	struct snapshot *s = cluster_view_acquire(cv);
	const struct view *v;
	struct jw w;
	struct view_iter it;
	const struct view_slice *sl;
	const struct view_claim *c;
	const struct view_pool *p;

	if (!s)
		return -EAGAIN;
	v = cluster_view_get(s);
	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kuint(&w, "seq", view_seq(v));
	jw_key(&w, "resourceslices");
	jw_array_begin(&w);
	for (sl = view_first_slice(&it, v); sl; sl = view_next_slice(&it))
		dump_slice(&w, v, sl);
	jw_array_end(&w);
	jw_key(&w, "resourceclaims");
	jw_array_begin(&w);
	for (c = view_first_claim(&it, v); c; c = view_next_claim(&it))
		dump_claim(&w, v, c);
	jw_array_end(&w);
	jw_key(&w, "pools");
	jw_array_begin(&w);
	for (p = view_first_pool(&it, v); p; p = view_next_pool(&it))
		dump_pool(&w, v, p);
	jw_array_end(&w);
	jw_object_end(&w);
	snapshot_release(s);
	return jw_finish(&w);
}

int cluster_view_render_metrics(void *ctx, struct buf *out)
{
	static const char *const object_names[] = { "resourceslices", "resourceclaims", "pods",
						    "nodes", "pools", "pool_tombstones" };
	struct cluster_view *cv = ctx;
	struct reflector *rs[NWATCHED];
	struct view_stats st;
	int64_t now = clock_wall_ns();
	int rc, k;

	pthread_mutex_lock(&cv->mu);
	st = cv->stats;
	pthread_mutex_unlock(&cv->mu);
	for (k = 0; k < NWATCHED; k++)
		rs[k] = cv->r[k].r;
	unsigned objects[] = { st.objects[OBJECT_RESOURCE_SLICE], st.objects[OBJECT_RESOURCE_CLAIM],
			       st.objects[OBJECT_POD], st.objects[OBJECT_NODE], st.pools, st.pool_tombstones };

	rc = reflector_render_metrics(rs, NWATCHED, out);
	if (rc == 0)
		rc = prom_header(out, PROM_VIEW_OBJECTS);
	for (k = 0; rc == 0 && k < (int)(sizeof(objects) / sizeof(objects[0])); k++)
		rc = prom_sample(out, PROM_VIEW_OBJECTS, &object_names[k], "%u", objects[k]);
	if (rc == 0)
		rc = prom_header(out, PROM_VIEW_MEMORY_BYTES);
	if (rc == 0)
		rc = prom_sample(out, PROM_VIEW_MEMORY_BYTES, (const char *const[]){ "records" }, "%zu", st.record_bytes);
	if (rc == 0)
		rc = prom_sample(out, PROM_VIEW_MEMORY_BYTES, (const char *const[]){ "atoms" }, "%zu",
					 st.atom_bytes + st.atom_id_bytes);
	if (rc == 0)
		rc = prom_scalar(out, PROM_VIEW_STALE, "%d", stale(cv, now) == 1 ? 1 : 0);
	if (rc == 0)
		rc = prom_scalar(out, PROM_VIEW_MAX_AGE_SECONDS, "%" PRId64, max_age_ns(cv) / 1000000000);
	if (rc == 0)
		rc = prom_scalar(out, PROM_VIEW_SNAPSHOTS, "%u", st.snapshots);
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

void cluster_view_on_publish(struct cluster_view *cv, void (*fn)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&cv->mu);
	cv->on_publish = fn;
	cv->on_publish_ctx = ctx;
	pthread_mutex_unlock(&cv->mu);
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
