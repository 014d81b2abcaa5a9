/* reflector.c - the list/watch transition function, and the requests it drives. */
#include "reflector.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "prom.h"

static const char *const state_names[REFLECTOR_STATE_COUNT] = {
	"list_wait", "listing", "streaming", "watch_wait", "watching",
};

void reflector_fsm_init(struct reflector_fsm *r)
{
	*r = (struct reflector_fsm){ .state = REFLECTOR_LIST_WAIT, .reason = REFLECTOR_START };
}

bool reflector_in_flight(const struct reflector_fsm *r)
{
	return r->state == REFLECTOR_LISTING || r->state == REFLECTOR_STREAMING || r->state == REFLECTOR_WATCHING;
}

const char *reflector_state_name(enum reflector_state s)
{
	return (unsigned)s < REFLECTOR_STATE_COUNT ? state_names[s] : "?";
}

/* Half the wait plus full jitter over the other half: replicas do not
 * retry in step. */
static int64_t jittered(int64_t now_ms, unsigned wait_ms, unsigned rnd)
{
	return now_ms + wait_ms / 2 + rnd % (wait_ms / 2 + 1);
}

/* A LIST from the start, for why: the table being built (if any) goes. */
static unsigned relist(struct reflector_fsm *r, enum reflector_reason why)
{
	unsigned act = r->building ? REFLECTOR_ACT_ABORT : 0;

	r->building = false;
	r->paging = false;
	r->reason = why;
	r->state = REFLECTOR_LIST_WAIT;
	return act;
}

/* A failed request: the error backoff doubles (250 ms to 30 s). */
static unsigned backoff(struct reflector_fsm *r, int64_t now_ms, unsigned rnd)
{
	r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : REFLECTOR_BACKOFF_MIN_MS;
	if (r->backoff_ms > REFLECTOR_BACKOFF_MAX_MS)
		r->backoff_ms = REFLECTOR_BACKOFF_MAX_MS;
	r->due_ms = jittered(now_ms, r->backoff_ms, rnd);
	return REFLECTOR_ACT_ERROR;
}

static unsigned send_due(struct reflector_fsm *r, bool stream)
{
	unsigned act = 0;

	if (r->state == REFLECTOR_WATCH_WAIT) {
		r->state = REFLECTOR_WATCHING;
		return REFLECTOR_ACT_WATCH;
	}
	/* A streaming list only from the start of a LIST: a page's continue
	 * token belongs to a paged one. */
	r->state = stream && !r->paging && !r->no_stream ? REFLECTOR_STREAMING : REFLECTOR_LISTING;
	if (!r->building)
		act |= REFLECTOR_ACT_BEGIN;
	r->building = true;
	if (!r->paging)
		act |= REFLECTOR_ACT_COUNT_LIST;
	return act | (r->state == REFLECTOR_STREAMING ? REFLECTOR_ACT_LIST_STREAM : REFLECTOR_ACT_LIST_PAGE);
}

unsigned reflector_step(struct reflector_fsm *r, const struct reflector_event *ev, int64_t now_ms, unsigned rnd)
{
	bool waiting = r->state == REFLECTOR_LIST_WAIT || r->state == REFLECTOR_WATCH_WAIT;
	bool listing = r->state == REFLECTOR_LISTING || r->state == REFLECTOR_STREAMING;
	unsigned act = 0;

	switch (ev->kind) {
	case REFLECTOR_EV_SEND:
		return waiting && now_ms >= r->due_ms ? send_due(r, ev->stream) : 0;
	case REFLECTOR_EV_BEGIN_FAILED:
		if (!listing)
			return 0;
		r->building = false;
		r->state = REFLECTOR_LIST_WAIT;
		r->due_ms = now_ms + REFLECTOR_RETRY_MS;
		return 0;
	case REFLECTOR_EV_NOT_SENT:
		if (waiting)
			return 0;
		r->state = listing ? REFLECTOR_LIST_WAIT : REFLECTOR_WATCH_WAIT;
		r->due_ms = now_ms + REFLECTOR_RETRY_MS;
		return 0;
	case REFLECTOR_EV_PAGE:
		if (r->state != REFLECTOR_LISTING)
			return 0;
		if (!ev->more)
			return REFLECTOR_ACT_COMMIT;
		r->paging = true;
		r->state = REFLECTOR_LIST_WAIT;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_INITIAL_END:
		return r->state == REFLECTOR_STREAMING ? REFLECTOR_ACT_COMMIT : 0;
	case REFLECTOR_EV_COMMITTED:
		if (!listing)
			return 0;
		/* A streaming list goes on as the WATCH; after pages one is sent. */
		r->state = r->state == REFLECTOR_STREAMING ? REFLECTOR_WATCHING : REFLECTOR_WATCH_WAIT;
		r->building = false;
		r->paging = false;
		r->synced = true;
		r->backoff_ms = 0;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_COMMIT_FAILED:
		if (!listing)
			return 0;
		act = relist(r, REFLECTOR_ERROR);
		return act | backoff(r, now_ms, rnd);
	case REFLECTOR_EV_EXPIRED:
		if (waiting)
			return 0;
		/* client-go's backoff manager: a server that expires every watch
		 * at once is listed a few times a minute, not ten times a second. */
		if (!r->last_expiry_ms || now_ms - r->last_expiry_ms > REFLECTOR_EXPIRY_BACKOFF_RESET_MS)
			r->expiry_backoff_ms = REFLECTOR_EXPIRY_BACKOFF_MIN_MS;
		else if ((r->expiry_backoff_ms *= 2) > REFLECTOR_BACKOFF_MAX_MS)
			r->expiry_backoff_ms = REFLECTOR_BACKOFF_MAX_MS;
		r->last_expiry_ms = now_ms;
		act = relist(r, REFLECTOR_EXPIRED);
		r->due_ms = jittered(now_ms, r->expiry_backoff_ms, rnd);
		return act;
	case REFLECTOR_EV_STREAM_REFUSED:
		if (r->state != REFLECTOR_STREAMING)
			return 0;
		r->no_stream = true;
		act = relist(r, r->reason);
		r->due_ms = now_ms;
		return act | REFLECTOR_ACT_NO_STREAM;
	case REFLECTOR_EV_FAILED:
		if (waiting)
			return 0;
		/* A LIST cut short, or a body not as the API server sends it,
		 * leaves nothing to resume from: listed again. A WATCH that
		 * failed resumes where it was. */
		if (listing || ev->garbage)
			act = relist(r, ev->garbage ? REFLECTOR_DECODE : REFLECTOR_ERROR);
		else
			r->state = REFLECTOR_WATCH_WAIT;
		return act | backoff(r, now_ms, rnd);
	case REFLECTOR_EV_SILENT:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_SHORT:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		return backoff(r, now_ms, rnd);
	case REFLECTOR_EV_ENDED:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		r->backoff_ms = 0;
		r->due_ms = now_ms;
		return 0;
	default:
		return 0;
	}
}

/* --- the driver ------------------------------------------------------------------- */

static const char *const reason_names[REFLECTOR_REASON_COUNT] = { "start", "expired", "error", "decode" };

/* The requests a resource's reflector makes, for its error counter. */
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
#define COLLECTION_MAX 1024
#define SKIP_LOG_INTERVAL_MS 10000
#define LIST_BUCKETS 10

static const double list_bucket_s[LIST_BUCKETS] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120 };

struct reflector {
	struct reflector_config cfg;
	struct reflector_sink sink;
	struct kube_client *client;
	CURLM *multi;
	char collection[COLLECTION_MAX];   /* "" until set: nothing is sent */
	enum api_version version;
	unsigned rand_state;
	struct reflector_fsm fsm;     /* list, watch, backoff: reflector_step() alone moves it */
	CURL *easy;                   /* the request in flight, or NULL */
	struct curl_slist *headers;
	struct view_stream *stream;
	char rv[VIEW_RV_MAX];         /* where the WATCH resumes */
	char cont[VIEW_CONTINUE_MAX]; /* the next page of the LIST */
	long http;
	uint64_t counted[VIEW_EVENT_COUNT];   /* of the current stream, already in events */
	struct buf errbody;
	int64_t req_start_ms;         /* monotonic, when the request in flight was sent */
	int64_t list_start_ms;
	char last_error[512];

	/* Objects left out (not held, or not decoded): the first is logged
	 * with its name, the next ones are counted into one line at most every
	 * SKIP_LOG_INTERVAL_MS and at the end of a LIST. Past the object cap a
	 * relist leaves out every further object: one line each was 126k
	 * lines in 30 s. */
	int64_t skip_logged_ms;          /* monotonic; 0: none logged yet */
	uint64_t skip_unlogged;
	char skip_error[200];            /* the last unlogged one's */

	/* metrics: written by the thread, read by the renderer */
	atomic_uint_fast64_t events[VIEW_EVENT_COUNT];
	atomic_uint_fast64_t relists[REFLECTOR_REASON_COUNT];
	atomic_uint_fast64_t errors[REQ_COUNT];   /* failed requests, each followed by a backoff */
	atomic_uint_fast64_t restarts[RESTART_COUNT];   /* WATCHes resumed without a LIST */
	atomic_uint_fast64_t list_modes[LIST_MODE_COUNT];   /* LISTs completed, by mode */
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t skipped;
	atomic_int_fast64_t last_event_ns;   /* wall clock */
	atomic_uint_fast64_t list_hist[LIST_BUCKETS + 1];
	atomic_uint_fast64_t list_sum_ms;
	atomic_uint_fast64_t list_count;
	atomic_bool synced_pub;
};

static bool is_listing(const struct reflector *r)
{
	return r->fsm.state == REFLECTOR_LISTING;
}

static bool is_streaming(const struct reflector *r)
{
	return r->fsm.state == REFLECTOR_STREAMING;
}

int reflector_new(const struct reflector_config *cfg, const struct reflector_sink *sink, struct kube_client *client,
		  CURLM *multi, struct reflector **out)
{
	struct reflector *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->cfg = *cfg;
	r->sink = *sink;
	r->client = client;
	r->multi = multi;
	r->rand_state = ((unsigned)clock_wall_ns() ^ (unsigned)(uintptr_t)r) | 1u;
	reflector_fsm_init(&r->fsm);
	buf_init(&r->errbody, ERRBODY_MAX + 1);
	*out = r;
	return 0;
}

static void finish_request(struct reflector *r)
{
	curl_multi_remove_handle(r->multi, r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	curl_slist_free_all(r->headers);
	r->headers = NULL;
}

void reflector_free(struct reflector *r)
{
	if (!r)
		return;
	if (r->easy)
		finish_request(r);
	view_stream_free(r->stream);
	buf_free(&r->errbody);
	free(r);
}

int reflector_set_collection(struct reflector *r, const char *collection, enum api_version version)
{
	if ((size_t)snprintf(r->collection, sizeof(r->collection), "%s", collection) >= sizeof(r->collection)) {
		r->collection[0] = '\0';
		return -E2BIG;
	}
	r->version = version;
	return 0;
}

void reflector_discovery_failed(struct reflector *r, const char *err)
{
	snprintf(r->last_error, sizeof(r->last_error), "%s", err);
	atomic_fetch_add(&r->errors[REQ_DISCOVERY], 1);
}

bool reflector_synced(const struct reflector *r)
{
	return r->fsm.synced;
}

const char *reflector_last_error(const struct reflector *r)
{
	return r->last_error;
}

bool reflector_synced_pub(struct reflector *r)
{
	return atomic_load(&r->synced_pub);
}

double reflector_age_s(struct reflector *r, int64_t now_ns)
{
	int64_t t = atomic_load(&r->last_event_ns);

	return t ? (double)(now_ns - t) / 1e9 : -1;
}

struct reflector *reflector_of(CURL *h)
{
	struct reflector *r = NULL;

	curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&r);
	return r;
}

/* --- objects into the sink -------------------------------------------------------- */

/* One line for the objects left out and not yet logged. */
static void skip_flush(struct reflector *r)
{
	struct log_line l;

	if (r->skip_unlogged && log_begin(&l, LOG_WARN, "cluster view: objects left out")) {
		log_str(&l, "resource", r->cfg.name);
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
		log_str(&l, "resource", r->cfg.name);
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
	char err[512];
	int rc;

	atomic_store(&r->last_event_ns, clock_wall_ns());
	if (is_listing(r) || (is_streaming(r) && ev == VIEW_ADDED)) {
		rc = r->sink.object(r->sink.ctx, true, ev, obj, err, sizeof(err));
	} else if (is_streaming(r)) {
		/* Only ADDED events come before the initial events end. */
		snprintf(err, sizeof(err), "a %s event among a streaming list's initial events",
			 ev == VIEW_MODIFIED ? "MODIFIED" : "DELETED");
		rc = -EBADMSG;
	} else {
		rc = r->sink.object(r->sink.ctx, false, ev, obj, err, sizeof(err));
	}
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
		/* Only its reason and message are read: the rest may go. */
		if (buf_len(&r->errbody) + len <= ERRBODY_MAX)
			buf_add(&r->errbody, p, len);
		return len;
	}
	atomic_fetch_add(&r->bytes, len);
	return view_stream_feed(r->stream, p, len, &sink) == 0 ? len : 0;
}

/* --- requests --------------------------------------------------------------------- */

/* The path and query of the next request (the state says which), and its
 * whole-request timeout. 0, or -E2BIG where a piece does not fit. */
static int request_path(struct reflector *r, struct kube_client_path *p, long *timeout)
{
	int rc;

	kube_client_path_init(p);
	if ((rc = kube_client_path_add(p, "%s", r->collection)) != 0)
		return rc;
	if (is_streaming(r)) {
		unsigned t = r->cfg.watch_timeout_s + clock_jitter(&r->rand_state, r->cfg.watch_timeout_s / 10 + 1);

		/* No resourceVersion: the initial events are the objects as of
		 * a consistent read (after a 410 too). */
		*timeout = (long)t + 30;
		return kube_client_path_add(p, "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
				     "&allowWatchBookmarks=true&timeoutSeconds=%u", t);
	}
	if (is_listing(r)) {
		*timeout = (long)r->cfg.list_timeout_s;
		rc = kube_client_path_add(p, "limit=%u", r->cfg.page_size);
		/* As client-go's reflector: the first page from the watch cache
		 * (resourceVersion=0: the API server answers from memory instead
		 * of reading etcd page by page), except after a 410, when only a
		 * consistent read from etcd is new enough. Later pages name no
		 * version: the continue token carries the first page's. */
		if (rc == 0 && !r->fsm.paging && r->fsm.reason != REFLECTOR_EXPIRED)
			rc = kube_client_path_add(p, "&resourceVersion=0");
		if (rc == 0 && r->fsm.paging)
			rc = kube_client_path_add(p, "&continue=");
		if (rc == 0 && r->fsm.paging)
			rc = kube_client_path_add_escaped(p, r->cont);
		return rc;
	}
	{
		unsigned t = r->cfg.watch_timeout_s + clock_jitter(&r->rand_state, r->cfg.watch_timeout_s / 10 + 1);

		*timeout = (long)t + 30;
		return kube_client_path_add(p, "watch=true&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=%s",
				     t, r->rv);
	}
}

static unsigned step_kind(struct reflector *r, enum reflector_event_kind kind, const char *detail);

/* Send the request the reflector's ACT_LIST_* / ACT_WATCH names. */
static void send_request(struct reflector *r, unsigned act)
{
	struct kube_client_path path;
	long timeout;

	if ((act & REFLECTOR_ACT_BEGIN) && r->sink.begin(r->sink.ctx) != 0) {
		step_kind(r, REFLECTOR_EV_BEGIN_FAILED, NULL);
		return;
	}
	if (act & REFLECTOR_ACT_COUNT_LIST) {
		r->cont[0] = '\0';
		r->list_start_ms = clock_mono_ms();
		atomic_fetch_add(&r->relists[r->fsm.reason], 1);
	}
	if (request_path(r, &path, &timeout) != 0) {
		step_kind(r, REFLECTOR_EV_NOT_SENT, NULL);
		return;
	}
	view_stream_free(r->stream);
	r->stream = NULL;
	r->headers = NULL;
	if (view_stream_new(is_listing(r) ? VIEW_STREAM_LIST : VIEW_STREAM_WATCH, r->cfg.kind, r->version,
			    r->cfg.max_object, &r->stream) != 0 || !(r->easy = curl_easy_init()) ||
	    kube_client_prepare(r->client, r->easy, kube_client_path_get(&path), timeout, NULL, &r->headers) != 0) {
		if (r->easy)
			curl_easy_cleanup(r->easy);
		r->easy = NULL;
		curl_slist_free_all(r->headers);
		r->headers = NULL;
		step_kind(r, REFLECTOR_EV_NOT_SENT, NULL);
		return;
	}
	if ((act & REFLECTOR_ACT_WATCH) && r->cfg.watch_silence_s) {
		/* A WATCH that stays open with nothing on it - not even the
		 * bookmark the API server sends about every minute - is dead
		 * somewhere between here and the server: below one byte a second
		 * for that long, curl ends it and the watch resumes. */
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_TIME, (long)r->cfg.watch_silence_s);
	}
	if (is_listing(r) || is_streaming(r))
		/* A plain WATCH carries one event at a time and stays open,
		 * so it keeps curl's default: a large buffer would stay
		 * resident with it, one per watched kind, for nothing. */
		curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE, (long)KUBE_CLIENT_BULK_BUFFER);
	r->req_start_ms = clock_mono_ms();
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	r->http = 0;
	memset(r->counted, 0, sizeof(r->counted));
	buf_reset(&r->errbody);
	curl_multi_add_handle(r->multi, r->easy);
}

/* A failed request, counted and logged with its retry. */
static void note_error(struct reflector *r, bool list, const char *detail)
{
	struct log_line l;

	atomic_fetch_add(&r->errors[list ? REQ_LIST : REQ_WATCH], 1);
	snprintf(r->last_error, sizeof(r->last_error), "%s: %.400s", list ? "list" : "watch", detail ? detail : "");
	if (log_begin(&l, LOG_WARN, "cluster view: request failed")) {
		log_str(&l, "resource", r->cfg.name);
		log_str(&l, "request", list ? "list" : "watch");
		log_str(&l, "error", r->last_error);
		log_uint(&l, "retry_ms", (uint64_t)(r->fsm.due_ms - clock_mono_ms()));
		log_end(&l);
	}
}

static void note_no_stream(struct reflector *r, const char *detail)
{
	struct log_line l;

	if (log_begin(&l, LOG_WARN, "cluster view: no streaming list; listing in pages")) {
		log_str(&l, "resource", r->cfg.name);
		log_str(&l, "why", detail ? detail : "");
		log_end(&l);
	}
}

static int list_commit(struct reflector *r, enum list_mode mode);

/* One event into the state, and its actions taken: the one place the
 * resource's list/watch state changes. Returns the actions. */
static unsigned step(struct reflector *r, const struct reflector_event *ev, const char *detail)
{
	bool list = is_listing(r);
	enum reflector_state was = r->fsm.state;
	unsigned act;

	act = reflector_step(&r->fsm, ev, clock_mono_ms(), clock_jitter(&r->rand_state, ~0u));
	if (act & REFLECTOR_ACT_ABORT)
		r->sink.abort(r->sink.ctx);
	if (act & REFLECTOR_ACT_NO_STREAM)
		note_no_stream(r, detail);
	if (act & REFLECTOR_ACT_ERROR)
		note_error(r, list, detail);
	else if (ev->kind == REFLECTOR_EV_EXPIRED && detail)
		snprintf(r->last_error, sizeof(r->last_error), "%.500s", detail);
	if (act & REFLECTOR_ACT_COMMIT)
		list_commit(r, was == REFLECTOR_STREAMING ? LIST_STREAM : LIST_PAGES);
	return act;
}

static unsigned step_kind(struct reflector *r, enum reflector_event_kind kind, const char *detail)
{
	struct reflector_event ev = { .kind = kind };

	return step(r, &ev, detail);
}

int64_t reflector_poll(struct reflector *r, int64_t max_ms)
{
	struct reflector_event ev = { .kind = REFLECTOR_EV_SEND, .stream = r->cfg.stream };
	int64_t now = clock_mono_ms();
	unsigned act;

	if (!r->collection[0])
		return max_ms;
	if (r->easy && is_streaming(r) && now - r->list_start_ms > (int64_t)r->cfg.list_timeout_s * 1000) {
		finish_request(r);
		step_kind(r, REFLECTOR_EV_STREAM_REFUSED, "the initial events did not end within the LIST timeout");
	}
	/* A LIST as a streaming list where the API server serves one (a
	 * WATCH whose initial events are the objects, ended by a bookmark):
	 * the server sends from its watch cache, object by object, instead of
	 * building a LIST page in memory. */
	if (!r->easy && (act = reflector_step(&r->fsm, &ev, now, 0)) != 0)
		send_request(r, act);
	if (r->easy || r->fsm.due_ms - now >= max_ms)
		return max_ms;
	return r->fsm.due_ms - now;
}

/* The end of a streaming list's initial events: the objects received are
 * the resource's, swapped in as a LIST's; the same WATCH goes on with the
 * changes. The initial events are not counted as watch events. */
static int stream_initial_end(void *ctx)
{
	struct reflector *r = ctx;
	const struct view_stream_info *info = view_stream_info(r->stream);
	int i;

	if (!is_streaming(r))
		return -EBADMSG;
	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		r->counted[i] = info->events[i];
	step_kind(r, REFLECTOR_EV_INITIAL_END, NULL);
	return r->fsm.state == REFLECTOR_WATCHING ? 0 : -ENOMEM;
}

/* ACT_COMMIT: the LIST's objects swapped in, then COMMITTED or
 * COMMIT_FAILED into the state. */
static int list_commit(struct reflector *r, enum list_mode mode)
{
	const struct view_stream_info *info = view_stream_info(r->stream);
	int64_t took = clock_mono_ms() - r->list_start_ms;
	struct log_line l;
	int i;

	if (r->sink.commit(r->sink.ctx) != 0) {
		step_kind(r, REFLECTOR_EV_COMMIT_FAILED, "out of memory swapping the new table in");
		return -ENOMEM;
	}
	step_kind(r, REFLECTOR_EV_COMMITTED, NULL);
	r->cont[0] = '\0';
	snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	r->last_error[0] = '\0';
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
		log_str(&l, "resource", r->cfg.name);
		log_str(&l, "reason", reason_names[r->fsm.reason]);
		log_str(&l, "resource_version", r->rv);
		log_str(&l, "mode", list_mode_names[mode]);
		log_uint(&l, "objects", (uint64_t)info->events[VIEW_ADDED]);
		log_ms(&l, "duration_ms", (double)took);
		log_end(&l);
	}
	atomic_fetch_add(&r->list_modes[mode], 1);
	return 0;
}

void reflector_count_events(struct reflector *r)
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
	/* Any event, bookmarks included, shows the watch is alive. */
	if (any) {
		int64_t now = clock_wall_ns();

		atomic_store(&r->last_event_ns, now);
		if (r->sink.touch)
			r->sink.touch(r->sink.ctx, now);
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

/* What ended a request: the state's event, and the detail logged. */
static enum reflector_event_kind classify(struct reflector *r, CURLcode res, long answered, bool *garbage,
					  char *detail, size_t n)
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
	    r->cfg.watch_silence_s && clock_mono_ms() - r->req_start_ms < (int64_t)r->cfg.watch_timeout_s * 1000)
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
	if (clock_mono_ms() - r->req_start_ms < SHORT_WATCH_MS && !stream_had_events(info)) {
		snprintf(detail, n, "very short watch: it ended after %lld ms with no event; "
			 "resuming from resourceVersion %.100s", (long long)(clock_mono_ms() - r->req_start_ms), r->rv);
		return REFLECTOR_EV_SHORT;
	}
	return REFLECTOR_EV_ENDED;
}

void reflector_done(struct reflector *r, CURLcode res)
{
	const struct view_stream_info *info;
	struct reflector_event ev = { 0 };
	char detail[700] = "";
	long answered = r->http;   /* the status code, also of an answer with no body byte yet */

	if (!answered)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &answered);
	finish_request(r);
	/* A 401: the token is read again; a certificate not verified: the CA. */
	kube_client_answered(r->client, res, answered);
	info = view_stream_info(r->stream);
	reflector_count_events(r);
	/* Every event applied moved the resume point, however the WATCH
	 * ended: resuming from an older one would apply events twice. */
	if (!is_listing(r) && info->resource_version[0])
		snprintf(r->rv, sizeof(r->rv), "%s", info->resource_version);
	ev.kind = classify(r, res, answered, &ev.garbage, detail, sizeof(detail));
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
			log_str(&l, "resource", r->cfg.name);
			log_uint(&l, "silence_s", r->cfg.watch_silence_s);
			log_str(&l, "resource_version", r->rv);
			log_end(&l);
		}
	} else if (ev.kind == REFLECTOR_EV_SHORT) {
		atomic_fetch_add(&r->restarts[RESTART_SHORT], 1);
	}
	step(r, &ev, detail);
}

/* Family id, header and samples: per reflector, one counter of the array at
 * byte offset field of struct reflector for each of names[0..count). */
static int by_resource(struct buf *out, enum prom_id id, struct reflector *const *rs, size_t n,
		       const char *const *names, int count, size_t field)
{
	int rc = prom_header(out, id);
	size_t k;
	int i;

	for (k = 0; rc == 0 && k < n; k++) {
		const atomic_uint_fast64_t *v = (const atomic_uint_fast64_t *)(const void *)((const char *)rs[k] + field);

		for (i = 0; rc == 0 && i < count; i++)
			rc = prom_sample(out, id, (const char *const[]){ rs[k]->cfg.name, names[i] }, "%" PRIu64,
					 (uint64_t)atomic_load(&v[i]));
	}
	return rc;
}

static int list_duration(struct buf *out, const struct reflector *r)
{
	struct prom_line l;
	uint64_t cum = 0;
	char le[32];
	int rc = 0, i;

	for (i = 0; rc == 0 && i <= LIST_BUCKETS; i++) {
		cum += atomic_load(&r->list_hist[i]);
		if (i < LIST_BUCKETS)
			snprintf(le, sizeof(le), "%g", list_bucket_s[i]);
		prom_line_begin(&l, out, PROM_WATCH_LIST_DURATION_SECONDS, "_bucket");
		prom_line_label(&l, r->cfg.name, strlen(r->cfg.name));
		prom_line_le(&l, i < LIST_BUCKETS ? le : "+Inf");
		rc = prom_line_end(&l, "%" PRIu64, cum);
	}
	if (rc == 0) {
		prom_line_begin(&l, out, PROM_WATCH_LIST_DURATION_SECONDS, "_sum");
		prom_line_label(&l, r->cfg.name, strlen(r->cfg.name));
		rc = prom_line_end(&l, "%.3f", (double)atomic_load(&r->list_sum_ms) / 1000.0);
	}
	if (rc == 0) {
		prom_line_begin(&l, out, PROM_WATCH_LIST_DURATION_SECONDS, "_count");
		prom_line_label(&l, r->cfg.name, strlen(r->cfg.name));
		rc = prom_line_end(&l, "%" PRIu64, cum);
	}
	return rc;
}

int reflector_render_metrics(struct reflector *const *rs, size_t n, struct buf *out)
{
	int64_t now = clock_wall_ns();
	size_t k;
	int rc;

	rc = by_resource(out, PROM_WATCH_EVENTS_TOTAL, rs, n, event_names, VIEW_EVENT_COUNT,
			 offsetof(struct reflector, events));
	if (rc == 0)
		rc = by_resource(out, PROM_WATCH_RELISTS_TOTAL, rs, n, reason_names, REFLECTOR_REASON_COUNT,
				 offsetof(struct reflector, relists));
	if (rc == 0)
		rc = by_resource(out, PROM_WATCH_ERRORS_TOTAL, rs, n, request_names, REQ_COUNT,
				 offsetof(struct reflector, errors));
	if (rc == 0)
		rc = by_resource(out, PROM_WATCH_LISTS_TOTAL, rs, n, list_mode_names, LIST_MODE_COUNT,
				 offsetof(struct reflector, list_modes));
	if (rc == 0)
		rc = by_resource(out, PROM_WATCH_RESTARTS_TOTAL, rs, n, restart_names, RESTART_COUNT,
				 offsetof(struct reflector, restarts));
	if (rc == 0)
		rc = prom_header(out, PROM_WATCH_BYTES_TOTAL);
	for (k = 0; rc == 0 && k < n; k++)
		rc = prom_sample(out, PROM_WATCH_BYTES_TOTAL, &rs[k]->cfg.name, "%" PRIu64,
				 (uint64_t)atomic_load(&rs[k]->bytes));
	if (rc == 0)
		rc = prom_header(out, PROM_WATCH_SKIPPED_OBJECTS_TOTAL);
	for (k = 0; rc == 0 && k < n; k++)
		rc = prom_sample(out, PROM_WATCH_SKIPPED_OBJECTS_TOTAL, &rs[k]->cfg.name, "%" PRIu64,
				 (uint64_t)atomic_load(&rs[k]->skipped));
	if (rc == 0)
		rc = prom_header(out, PROM_WATCH_SYNCED);
	for (k = 0; rc == 0 && k < n; k++)
		rc = prom_sample(out, PROM_WATCH_SYNCED, &rs[k]->cfg.name, "%d", atomic_load(&rs[k]->synced_pub) ? 1 : 0);
	if (rc == 0)
		rc = prom_header(out, PROM_WATCH_LAST_EVENT_AGE_SECONDS);
	for (k = 0; rc == 0 && k < n; k++)
		rc = prom_sample(out, PROM_WATCH_LAST_EVENT_AGE_SECONDS, &rs[k]->cfg.name, "%.3f",
				 reflector_age_s(rs[k], now));
	if (rc == 0)
		rc = prom_header(out, PROM_WATCH_LIST_DURATION_SECONDS);
	for (k = 0; rc == 0 && k < n; k++)
		rc = list_duration(out, rs[k]);
	return rc;
}
