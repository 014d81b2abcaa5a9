/* cluster_view.h - the guard's watch on the API server.
 *
 * One thread lists and watches, the way client-go's reflector does, the
 * ResourceSlices, the ResourceClaims and Pods of all namespaces (Pods not
 * finished, as the scheduler's informer selects them), the Nodes, and the
 * guard's own policy ConfigMap (a field selector on its name): one
 * reflector each (reflector.h: streaming list or pages, then WATCH from the
 * list's resourceVersion, relists and backoffs) on one curl multi handle,
 * through kube_client.h. A relist builds the resource's table apart and
 * swaps it in whole; one request per resource at a time, so never two
 * relists of one resource.
 *
 * The resource.k8s.io version is the first of v1, v1beta2, v1beta1 that the
 * server's discovery offers.
 *
 * Slices, claims, Pods and Nodes go into the view (policy/view/view.h), published as a new
 * snapshot at most every CLUSTER_VIEW_PUBLISH_MS while events arrive; the
 * first one only once every resource has synced. The ConfigMap goes to the
 * policy source (policy_source_offer_api()), so a freeze reaches every
 * replica as fast as the watch delivers it.
 *
 * Request threads acquire the current snapshot (no lock held while they
 * read it); the watcher frees what no snapshot reaches any more. */
#ifndef DRA_GUARD_CLUSTER_VIEW_H
#define DRA_GUARD_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "buf.h"
#include "kube_client.h"
#include "metrics.h"
#include "policy_source.h"
#include "snapshot.h"
#include "view.h"

#define CLUSTER_VIEW_PUBLISH_MS 20

struct cluster_view_config {
	struct kube_client *client;   /* the API client (borrowed: it outlives the view) */
	char cm_namespace[64];
	char cm_name[254];
	unsigned page_size;           /* LIST limit */
	unsigned watch_timeout_s;     /* WATCH timeoutSeconds (jittered up to +10%) */
	unsigned watch_silence_s;     /* a WATCH with no byte for this long is cut and resumed; 0: never */
	bool stream_lists;            /* list as a streaming list (sendInitialEvents) where the server
				       * serves one, else in pages */
	unsigned list_timeout_s;      /* one LIST page, whole */
	size_t max_object;            /* bytes of one object's JSON */
	struct view_limits limits;
};

/* Defaults: page 500, watch 300 s, silence 150 s, list page 120 s, objects 3 MiB,
 * view_limits_default(); no client. */
void cluster_view_config_default(struct cluster_view_config *cfg);

struct cluster_view;

/* cfg is copied; cfg->client, m and ps are borrowed and must outlive the
 * view. 0 or -ENOMEM. Nothing runs until start. */
int cluster_view_new(struct cluster_view_config *cfg, struct metrics *m, struct policy_source *ps,
		     struct cluster_view **out);

/* Start the watcher thread. 0 or a negative errno. */
int cluster_view_start(struct cluster_view *cv);

/* Stop the thread and wait for it. Snapshots still held stay valid until
 * cluster_view_free(). */
void cluster_view_stop(struct cluster_view *cv);

/* NULL is a no-op. No snapshot may still be held. */
void cluster_view_free(struct cluster_view *cv);

/* A reference to the current snapshot (snapshot_get() gives the const
 * struct view), or NULL before the first full sync. Any thread; release
 * with snapshot_release(). */
struct snapshot *cluster_view_acquire(struct cluster_view *cv);

/* A snapshot newer than seq (view_seq()), waiting for one until
 * deadline_ms (CLOCK_MONOTONIC, ms); NULL when none came in time. Any
 * thread; release with snapshot_release(). */
struct snapshot *cluster_view_acquire_newer(struct cluster_view *cv, uint64_t seq, int64_t deadline_ms);

/* A freeze began at since_ns (wall clock): keep the view of this moment
 * (replacing the one of an earlier freeze) for the ledger export; before
 * the first sync, the first view published. Any thread. */
void cluster_view_mark_freeze(struct cluster_view *cv, int64_t since_ns);

/* Call fn(ctx) on the view's thread after every snapshot published (a
 * thread that waits for a new view without a waiting call of its own).
 * One; fn NULL removes it. Any thread; fn runs with a lock of the view's
 * held: it must not call back into the view. */
void cluster_view_on_publish(struct cluster_view *cv, void (*fn)(void *ctx), void *ctx);

/* The view kept when the last freeze began (a reference, or NULL when no
 * freeze began since start), and when it began. Any thread. */
struct snapshot *cluster_view_acquire_frozen(struct cluster_view *cv, int64_t *since_ns);

/* The view a snapshot from cluster_view_acquire() holds. */
const struct view *cluster_view_get(const struct snapshot *s);

/* True once every watched resource has synced once (it stays true when
 * the API server is lost later); otherwise why says what is missing and
 * the last error. Any thread. */
bool cluster_view_ready(struct cluster_view *cv, char *why, size_t n);

/* {"synced":..,"version":"v1","resources":{"resourceslices":{"synced":..,
 * "objects":..,"lastEventAgeSeconds":..},...},"stale":..} appended to out,
 * for /readyz. Any thread. */
int cluster_view_status_json(struct cluster_view *cv, struct buf *out);

/* The published view as JSON: {"seq":..,"resourceslices":[{"name","resourceVersion",
 * "driver","pool","generation","devices"}],"resourceclaims":[{"namespace","name",
 * "resourceVersion","uid","allocated","node"}],"pools":[{"driver","name","generation",
 * "maxGeneration","slices","resourceSliceCount"}]}. -EAGAIN before the first
 * sync, -E2BIG / -ENOMEM from out. Any thread. */
int cluster_view_dump_json(struct cluster_view *cv, struct buf *out);

/* The view's metrics families appended to out (metrics_set_extra()). */
int cluster_view_render_metrics(void *cv, struct buf *out);

#endif
