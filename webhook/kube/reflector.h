/* reflector.h - the list/watch loop of one watched resource: its state, its
 * one transition function, and the requests that drive it.
 *
 * A resource is listed (a streaming list - a WATCH with sendInitialEvents -
 * where the server serves one, else LIST pages with limit/continue), then
 * watched from the list's resourceVersion; a request ends in one of a few
 * outcomes (struct reflector_event), and reflector_step() alone decides
 * what follows: the next state, when the next request goes out (backoffs
 * with jitter), and the actions the driver (cluster_view.c, which holds the
 * connection and the view builder) takes. The states, as curl's multi handle
 * names its own:
 *
 *   LIST_WAIT  --due-->  LISTING (a page)   --more pages--> LIST_WAIT (at once)
 *                 \                          --last page--> WATCH_WAIT (at once)
 *                  `-->  STREAMING          --initial events ended--> WATCHING
 *   WATCH_WAIT --due-->  WATCHING           --timeout--> WATCH_WAIT (at once)
 *                                            --very short, failed--> WATCH_WAIT (backoff)
 *   410 anywhere: LIST_WAIT after the expiry backoff (client-go's: 800 ms
 *   doubling to 30 s, reset after 2 minutes without one); a LIST or stream
 *   that failed, or a body that did not decode: LIST_WAIT after the error
 *   backoff (250 ms doubling to 30 s); a streaming list refused: pages from
 *   then on, LIST_WAIT at once.
 *
 * The transition function is pure: no I/O, no clock (now is passed in), no
 * randomness (the jitter's random number is passed in). The driver below
 * it (struct reflector) sends the requests on the caller's curl multi
 * handle through kube_client, decodes the bodies as they arrive
 * (view_stream.h) into the caller's sink, and keeps the resource's
 * dra_guard_watch_* metrics. One thread - the multi handle's - calls
 * everything but reflector_synced_pub(), reflector_age_s() and
 * reflector_render_metrics(), which any thread may call. */
#ifndef DRA_GUARD_REFLECTOR_H
#define DRA_GUARD_REFLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "buf.h"
#include "kube_client.h"
#include "view_stream.h"

#define REFLECTOR_BACKOFF_MIN_MS 250
#define REFLECTOR_BACKOFF_MAX_MS 30000
#define REFLECTOR_EXPIRY_BACKOFF_MIN_MS 800
#define REFLECTOR_EXPIRY_BACKOFF_RESET_MS 120000
/* After a request that could not be sent (out of memory, a path too long). */
#define REFLECTOR_RETRY_MS 1000

enum reflector_state {
	REFLECTOR_LIST_WAIT = 0,      /* a LIST (first page, next page or relist) goes out at due_ms */
	REFLECTOR_LISTING,            /* a LIST page in flight */
	REFLECTOR_STREAMING,          /* a streaming list in flight, its initial events not ended */
	REFLECTOR_WATCH_WAIT,         /* a WATCH goes out at due_ms */
	REFLECTOR_WATCHING,           /* a WATCH in flight (also a streaming list past its initial events) */
	REFLECTOR_STATE_COUNT
};

/* Why a LIST started (dra_guard_watch_relists_total's reason). */
enum reflector_reason {
	REFLECTOR_START = 0,          /* the first LIST */
	REFLECTOR_EXPIRED,            /* 410: the resourceVersion is gone */
	REFLECTOR_ERROR,              /* the connection or the server failed */
	REFLECTOR_DECODE,             /* the body was not what the API server sends */
	REFLECTOR_REASON_COUNT
};

enum reflector_event_kind {
	REFLECTOR_EV_SEND = 0,        /* due: the driver sends the next request (see `stream`) */
	REFLECTOR_EV_BEGIN_FAILED,    /* ACT_BEGIN failed: nothing was sent */
	REFLECTOR_EV_NOT_SENT,        /* the request could not be prepared */
	REFLECTOR_EV_PAGE,            /* a LIST page arrived whole; `more`: a continue token came */
	REFLECTOR_EV_INITIAL_END,     /* the streaming list's initial events ended */
	REFLECTOR_EV_COMMITTED,       /* ACT_COMMIT done: the listed objects are the view's */
	REFLECTOR_EV_COMMIT_FAILED,   /* ACT_COMMIT failed */
	REFLECTOR_EV_EXPIRED,         /* 410 (status, or an ERROR event) */
	REFLECTOR_EV_STREAM_REFUSED,  /* no streaming list here (400/422, ended early, never ended) */
	REFLECTOR_EV_FAILED,          /* status, transport or ERROR event failure; `garbage`: did not decode */
	REFLECTOR_EV_SILENT,          /* a WATCH cut by --watch-silence */
	REFLECTOR_EV_SHORT,           /* a WATCH that ended at once with no event */
	REFLECTOR_EV_ENDED,           /* a WATCH ended by its timeout */
	REFLECTOR_EV_COUNT
};

struct reflector_event {
	enum reflector_event_kind kind;
	bool stream;                  /* SEND: a streaming list may be tried (--list-mode auto, not the ConfigMap) */
	bool more;                    /* PAGE: a continue token came */
	bool garbage;                 /* FAILED: the body did not decode */
};

/* Actions for the driver, a bit set. */
#define REFLECTOR_ACT_BEGIN       (1u << 0)   /* begin building a new table (the relist's) */
#define REFLECTOR_ACT_COUNT_LIST  (1u << 1)   /* a LIST starts: count it (reason) and time it */
#define REFLECTOR_ACT_ABORT       (1u << 2)   /* drop the table being built */
#define REFLECTOR_ACT_COMMIT      (1u << 3)   /* swap the table built in, then COMMITTED or COMMIT_FAILED */
#define REFLECTOR_ACT_ERROR       (1u << 4)   /* a failed request: count it, log the retry */
#define REFLECTOR_ACT_NO_STREAM   (1u << 5)   /* log: pages from now on */
#define REFLECTOR_ACT_LIST_PAGE   (1u << 6)   /* send: a LIST page */
#define REFLECTOR_ACT_LIST_STREAM (1u << 7)   /* send: a streaming list */
#define REFLECTOR_ACT_WATCH       (1u << 8)   /* send: a WATCH */

struct reflector_fsm {
	enum reflector_state state;
	enum reflector_reason reason; /* of the LIST under way or next */
	int64_t due_ms;               /* monotonic: when the next request goes out (the WAIT states) */
	unsigned backoff_ms;          /* the error backoff; 0 after a success */
	unsigned expiry_backoff_ms;   /* the wait before a LIST after a 410 */
	int64_t last_expiry_ms;       /* the last 410; 0: none */
	bool building;                /* the driver builds a table for the LIST under way */
	bool paging;                  /* the next LIST is a later page (continue) */
	bool no_stream;               /* a streaming list was refused: pages from now on */
	bool synced;                  /* a LIST completed once */
};

/* LIST_WAIT, due at once, reason START. */
void reflector_fsm_init(struct reflector_fsm *r);

/* Apply ev at now_ms (monotonic); rnd is a random number for the jitter.
 * Returns the REFLECTOR_ACT_* the driver takes, in bit order. An event
 * that cannot happen in the state (a PAGE while WATCHING) changes nothing
 * and returns 0. */
unsigned reflector_step(struct reflector_fsm *r, const struct reflector_event *ev, int64_t now_ms, unsigned rnd);

/* Whether a request is in flight (LISTING, STREAMING, WATCHING). */
bool reflector_in_flight(const struct reflector_fsm *r);

/* "list_wait", "listing", ... for logs and tests. */
const char *reflector_state_name(enum reflector_state s);

/* --- the driver ------------------------------------------------------------------ */

struct reflector_config {
	const char *name;             /* the resource in logs and metrics ("pods"); borrowed */
	enum object_kind kind;
	bool stream;                  /* a streaming list may be tried (else pages only) */
	unsigned page_size;           /* LIST limit */
	unsigned watch_timeout_s;     /* WATCH timeoutSeconds (jittered up to +10%) */
	unsigned watch_silence_s;     /* a WATCH with no byte for this long is cut and resumed; 0: never */
	unsigned list_timeout_s;      /* one LIST page, whole; a streaming list's initial events */
	size_t max_object;            /* bytes of one object's JSON */
};

/* Where the objects go: the caller's. */
struct reflector_sink {
	/* A LIST begins: its objects are kept apart until commit or abort.
	 * 0 or -ENOMEM. */
	int (*begin)(void *ctx);
	void (*abort)(void *ctx);
	/* The LIST's objects replace the resource's. 0 or -ENOMEM. */
	int (*commit)(void *ctx);
	/* One object: listed (part of the LIST under way) or a WATCH event.
	 * 0; -ENOMEM ends the request; another negative errno leaves the
	 * object out (err says why: logged and counted). */
	int (*object)(void *ctx, bool listed, enum view_event ev, const struct k8s_object *obj, char *err,
		      size_t n);
	/* A WATCH event or bookmark came at now_ns (wall clock). May be NULL. */
	void (*touch)(void *ctx, int64_t now_ns);
	void *ctx;
};

struct reflector;

/* cfg (its name borrowed), sink, client and multi are borrowed and outlive
 * the reflector. 0 or -ENOMEM. Nothing is sent before
 * reflector_set_collection(). */
int reflector_new(const struct reflector_config *cfg, const struct reflector_sink *sink, struct kube_client *client,
		  CURLM *multi, struct reflector **out);

/* Ends a request in flight. NULL is a no-op. */
void reflector_free(struct reflector *r);

/* The collection's path and the start of its query, ending in '?' or '&'
 * ("/api/v1/pods?fieldSelector=...&"), and the API version of its objects.
 * 0 or -E2BIG. */
int reflector_set_collection(struct reflector *r, const char *collection, enum api_version version);

/* The API server's discovery failed (before any LIST): counted as the
 * resource's failed "discovery" request and kept as its last error. */
void reflector_discovery_failed(struct reflector *r, const char *err);

/* Send the request that is due; end a streaming list whose initial events
 * outlast the LIST timeout. Returns how many ms until the next request is
 * due, at most max_ms (max_ms while one is in flight). */
int64_t reflector_poll(struct reflector *r, int64_t max_ms);

/* The reflector whose request h is (a finished handle of the multi). */
struct reflector *reflector_of(CURL *h);

/* r's request ended with res (curl_multi_info_read()). */
void reflector_done(struct reflector *r, CURLcode res);

/* The WATCH events decoded since last asked, into the metrics. */
void reflector_count_events(struct reflector *r);

/* A LIST completed once (the multi's thread). */
bool reflector_synced(const struct reflector *r);

/* The last failure, "" when the last LIST completed (the multi's thread). */
const char *reflector_last_error(const struct reflector *r);

/* reflector_synced() for any thread. */
bool reflector_synced_pub(struct reflector *r);

/* Seconds since the last LIST, event or bookmark at now_ns (wall clock);
 * -1 before the first. Any thread. */
double reflector_age_s(struct reflector *r, int64_t now_ns);

/* The dra_guard_watch_* families of the n reflectors appended to out. Any
 * thread. 0, -E2BIG, -ENOMEM. */
int reflector_render_metrics(struct reflector *const *rs, size_t n, struct buf *out);

#endif
