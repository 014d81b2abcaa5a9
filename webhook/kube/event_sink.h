/* event_sink.h - Kubernetes Events for refusals that hold a Pod back, sent
 * off the request path, and the pending time of the claims held back.
 *
 * A request thread hands the Events a denied review asks for
 * (policy/events/events.h) to a bounded queue and returns; a full queue drops
 * them and counts (never a wait on the request path). One worker thread
 * aggregates them into series (policy/events/event_cache.h: client-go's keys,
 * series counts, a rate limit per object, bounded memory) and writes them
 * through the cluster view's API client (POST a new Event, merge-PATCH a
 * series, create again when the Event is gone). The same thread keeps the
 * table of claims refused now (policy/events/pending.h) and, once a second,
 * compares it with the newest cluster view: a claim the view shows
 * allocated is observed in dra_guard_pending_seconds under the rule that
 * held it last.
 *
 * Any thread may offer, read the pending list or render the metrics. */
#ifndef DRA_GUARD_EVENT_SINK_H
#define DRA_GUARD_EVENT_SINK_H

#include <stdint.h>

#include "buf.h"
#include "cluster_view.h"
#include "kube_client.h"
#include "event_cache.h"
#include "events.h"
#include "model.h"
#include "verdict.h"

struct event_sink_config {
	char instance[EVENTS_INSTANCE_MAX];   /* reportingInstance: the replica's name */
	uint32_t queue;                       /* Events waiting for the worker */
	struct event_cache_limits limits;
	uint32_t max_pending;                 /* claims in the pending table */
	int64_t pending_idle_ns;              /* a claim not refused for this long and not in the view is forgotten */
};

/* queue 512, event_cache_limits_default(), 10,000 pending claims, idle 1 h;
 * instance as given. */
void event_sink_config_default(struct event_sink_config *cfg, const char *instance);

struct event_sink;

/* Events are written through client; cv (whose snapshots end pending
 * claims) too is borrowed, and both must outlive the sink. 0, -EINVAL,
 * -ENOMEM. */
int event_sink_new(const struct event_sink_config *cfg, struct kube_client *client, struct cluster_view *cv,
		   struct event_sink **out);

/* Start the worker. 0 or a negative errno. */
int event_sink_start(struct event_sink *es);

/* Stop the worker and wait for it (what is queued is dropped). */
void event_sink_stop(struct event_sink *es);

/* NULL is a no-op; stops first. */
void event_sink_free(struct event_sink *es);

/* The Events a decided review asks for (none for an allowed or dryRun
 * review), queued. now_ns is the wall clock. The request path: a short
 * lock, no I/O, no allocation. es NULL is a no-op. */
void event_sink_offer(struct event_sink *es, const struct admission_request *rq, const struct verdict *v,
		      int64_t now_ns);

/* GET /debug/pending: {"instance":..,"claims":[..]} (policy/events/pending.h). 0 or out's error. */
int event_sink_pending_json(struct event_sink *es, struct buf *out);

/* The metric families appended to out (metrics_add_extra()). */
int event_sink_render_metrics(void *es, struct buf *out);

#endif
