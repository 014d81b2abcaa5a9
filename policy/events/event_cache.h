/* event_cache.h - Events aggregated into series, as client-go's events
 * broadcaster does, with a rate limit per object and bounded memory.
 *
 * client-go (k8s.io/client-go/tools/events) keys each Event by reason,
 * action, reporting controller, regarding and related. The first one is
 * created; an isomorphic one later turns it into a series (count 2, PATCH),
 * and after that only the count and lastObservedTime grow in memory; series
 * are patched every 30 minutes and finished (dropped from the cache, after a
 * last patch) once nothing was observed for 6 minutes. Here the steps are
 * the same, with two differences, both bounded: a series whose count grew is
 * patched at most once per patch_interval (so kubectl shows the count within
 * seconds, not half an hour, and a thousand refusals are one Event and a few
 * patches); and the cache holds at most max_series series, new keys beyond
 * that are dropped and counted, never growing memory or the API server's
 * event store. The rate limit is the one client-go's core recorder puts on
 * each object (EventSourceObjectSpamFilter): a token bucket per regarding
 * object of burst tokens, one more every refill_ns; a new series takes one
 * (patches are bounded by patch_interval already). Buckets are capped at
 * max_objects; a full bucket is forgotten when room is needed.
 *
 * Pure and single-threaded: the caller (the events worker) passes the time
 * in and performs the API calls the steps name. */
#ifndef DRA_GUARD_EVENT_CACHE_H
#define DRA_GUARD_EVENT_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "events.h"

struct event_cache_limits {
	uint32_t max_series;          /* series held at once */
	uint32_t max_objects;         /* rate-limit buckets held at once */
	uint32_t burst;               /* new series per object at once */
	int64_t refill_ns;            /* one more new series per object every refill_ns */
	int64_t patch_interval_ns;    /* a grown series is patched at most this often */
	int64_t finish_ns;            /* a series idle this long is finished and forgotten */
};

/* max_series 1024, max_objects 4096, burst 25, refill 5 min (client-go's
 * spam filter), patch interval 10 s, finish 6 min (client-go's finishTime). */
void event_cache_limits_default(struct event_cache_limits *l);

/* What the caller does next for an observation or a tick. */
enum event_step {
	EVENT_STEP_NONE = 0,          /* counted in memory; nothing to send now */
	EVENT_STEP_CREATE,            /* POST the Event (events_create_json) */
	EVENT_STEP_PATCH,             /* PATCH its series (events_series_patch_json) */
	EVENT_STEP_LIMITED,           /* dropped: the object's rate limit */
	EVENT_STEP_FULL,              /* dropped: max_series series are held */
};

/* What a CREATE or PATCH sends, borrowed from the cache until the next call. */
struct event_send {
	uint32_t slot;                /* for event_cache_sent() */
	const struct events_report *report;
	const char *name;             /* the Event's name */
	int64_t first_ns;
	uint64_t count;
	int64_t last_ns;
	bool finishing;               /* the last patch before the series is forgotten */
};

struct event_cache;

/* 0 or -ENOMEM / -EINVAL (a zero limit). */
int event_cache_new(const struct event_cache_limits *l, struct event_cache **out);

/* NULL is a no-op. */
void event_cache_free(struct event_cache *c);

/* One refusal observed at now_ns. CREATE fills *send (a new series); NONE
 * when the series exists (its count grows; event_cache_next() says when
 * to patch); LIMITED or FULL when dropped. */
enum event_step event_cache_observe(struct event_cache *c, const struct events_report *r, int64_t now_ns,
				    struct event_send *send);

/* The next send due at now_ns (a grown series past its patch interval, a
 * finishing series with counts not yet written, or a series whose Event
 * is gone to be created again), or NONE when nothing is due. Series idle
 * past finish_ns with nothing left to write are forgotten here. */
enum event_step event_cache_next(struct event_cache *c, int64_t now_ns, struct event_send *send);

/* The outcome of a send for slot: ok (the API server took it), gone (a
 * PATCH found no Event: it is created again, as client-go does), or
 * failed (a CREATE that failed forgets the series; a PATCH is retried
 * after the patch interval). count is what the send carried. */
enum event_sent {
	EVENT_SENT_OK = 0,
	EVENT_SENT_GONE,
	EVENT_SENT_FAILED,
};
void event_cache_sent(struct event_cache *c, uint32_t slot, uint64_t count, enum event_sent how, int64_t now_ns);

/* Series held now. */
uint32_t event_cache_series(const struct event_cache *c);

#endif
