/* gate_release.h - releasing the Pods the freeze held at its scheduling gate.
 *
 * With freeze.gatePods the mutating endpoint gates new Pods during a
 * freeze (policy/rules/gate.h). When the freeze ends, one replica - the one that
 * holds the coordination.k8s.io Lease named by --gate-lease - removes the
 * gate dra-guard.io/freeze from every Pod the cluster view holds with it,
 * with a strategic merge patch that deletes that gate by name (other gates
 * stay) and its annotation; a Pod gone meanwhile is skipped, conflicts and
 * server errors are retried. It keeps doing so while the freeze is off, so
 * a Pod gated by a replica that saw the freeze a moment longer is released
 * too. While the freeze is on it releases nothing.
 *
 * Leader election is client-go's: the holder renews every lease/5; another
 * replica takes the Lease over only after seeing the same record unchanged
 * for the whole lease duration (its own clock, never the holder's), and a
 * holder that could not renew for 2/3 of it stops releasing first. The
 * requests go through the cluster view's API client (credentials, TLS).
 *
 * Two threads (the Lease, the release); status and metrics are read from
 * any thread. */
#ifndef DRA_GUARD_GATE_RELEASE_H
#define DRA_GUARD_GATE_RELEASE_H

#include <stdbool.h>

#include "buf.h"
#include "cluster_view.h"
#include "jw.h"
#include "kube_client.h"
#include "policy_source.h"

/* Patches in flight at once, and most gated Pods one walk of the view
 * collects (about 620 bytes each, touched only as far as used; more are
 * taken by the next walk). */
#define GATE_RELEASE_PARALLEL 16
#define GATE_RELEASE_PASS_MAX 4096

struct gate_release_config {
	char lease_namespace[64];
	char lease_name[254];
	char identity[254];           /* holderIdentity: unique per replica */
	char peers[1024];             /* other replicas' identities, comma-separated */
	unsigned lease_s;             /* leaseDurationSeconds */
};

struct gate_release;

/* Requests go through client; client, cv (whose snapshots show the gated
 * Pods) and ps are borrowed and must outlive it. 0 or -ENOMEM. Nothing runs
 * until gate_release_start(). */
int gate_release_new(const struct gate_release_config *cfg, struct kube_client *client, struct cluster_view *cv,
		     struct policy_source *ps, struct gate_release **out);

/* Start the two threads: one holds the Lease, the other finds and
 * releases gated Pods (so a slow Lease request never stalls the patches in
 * flight). 0 or a negative errno. */
int gate_release_start(struct gate_release *g);

/* Stop the threads; a holder gives the Lease up (holderIdentity cleared) so
 * another replica takes over at once. NULL is a no-op. */
void gate_release_free(struct gate_release *g);

/* Could a replica release a gated Pod now: the Lease, as this replica
 * last read it, names a holder whose record changed (a renewal) within the
 * lease duration, measured on this replica's clock? False before the first
 * read and after the holder gave it up. The mutating endpoint gates Pods
 * only then. Any thread. */
bool gate_release_live(struct gate_release *g);

/* {"lease":"ns/name","holder":"..","self":"..","leading":..,"live":..,"gatedPods":..}
 * as the next value of w, for /readyz (w's error is sticky: read it with
 * jw_finish()). Any thread. */
void gate_release_status_json(struct gate_release *g, struct jw *w);

/* The gate's metric families appended to out (metrics_add_extra()). */
int gate_release_render_metrics(void *g, struct buf *out);

#endif
