/* reflector.h - the list/watch state of one watched resource, and its one
 * transition function.
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
 * Pure: no I/O, no clock (now is passed in), no randomness (the jitter's
 * random number is passed in). */
#ifndef DRA_GUARD_REFLECTOR_H
#define DRA_GUARD_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>

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

struct reflector {
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
void reflector_init(struct reflector *r);

/* Apply ev at now_ms (monotonic); rnd is a random number for the jitter.
 * Returns the REFLECTOR_ACT_* the driver takes, in bit order. An event
 * that cannot happen in the state (a PAGE while WATCHING) changes nothing
 * and returns 0. */
unsigned reflector_step(struct reflector *r, const struct reflector_event *ev, int64_t now_ms, unsigned rnd);

/* Whether a request is in flight (LISTING, STREAMING, WATCHING). */
bool reflector_in_flight(const struct reflector *r);

/* "list_wait", "listing", ... for logs and tests. */
const char *reflector_state_name(enum reflector_state s);

#endif
