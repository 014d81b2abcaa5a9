/* gate.h - holding new Pods at a scheduling gate during a rollback freeze.
 *
 * With freeze.gatePods, while the freeze is on the mutating endpoint adds
 * the scheduling gate MODEL_FREEZE_GATE to every new Pod that references
 * ResourceClaims, and the annotation MODEL_FREEZE_ANNOTATION with the
 * freeze reason. A gated Pod is never scheduled, so it takes no
 * allocation; its claims made from templates may be created meanwhile
 * (claim.freeze.create lets them through), while claim.freeze.allocate
 * still refuses every new allocation. When the freeze ends, one replica
 * removes the gate (webhook/kube/gate_release.c) with GATE_RELEASE_PATCH.
 *
 * Which Pods: those with spec.resourceClaims, not yet bound (spec.nodeName
 * bypasses the scheduler, and the API server refuses gates on such a
 * Pod), not already carrying the gate; with a freeze.scope, only Pods of
 * the namespaces it names (a Pod does not say which drivers or device
 * classes its templates ask for, so a scope of drivers or classes alone
 * gates nothing and the freeze refuses those claims as before). Pure. */
#ifndef DRA_GUARD_GATE_H
#define DRA_GUARD_GATE_H

#include <stdbool.h>

#include "arena.h"
#include "model.h"
#include "policy.h"

/* The strategic merge patch (application/strategic-merge-patch+json) that
 * removes the guard's gate by name, and only it, with its annotation:
 * other gates stay, whatever their order, and a Pod released already is
 * left as it is. */
#define GATE_RELEASE_PATCH                                                            \
	"{\"metadata\":{\"annotations\":{\"" MODEL_FREEZE_ANNOTATION "\":null}},"     \
	"\"spec\":{\"schedulingGates\":[{\"$patch\":\"delete\",\"name\":\"" MODEL_FREEZE_GATE "\"}]}}"

/* Longest freeze reason written into the annotation (bytes). */
#define GATE_REASON_MAX 1024

/* Should a Pod created in namespace ns be gated under p, frozen saying
 * whether the freeze is on? pod must be a decoded Pod. */
bool gate_wanted(const struct policy *p, bool frozen, const struct k8s_object *pod, struct str ns);

/* The JSONPatch (a JSON array as text, in a) that gates pod: the gate
 * appended to spec.schedulingGates (made when absent) and the annotation
 * set to the freeze reason (at most GATE_REASON_MAX bytes of it). Call only
 * when gate_wanted(). 0, -ENOMEM or -E2BIG (arena). */
int gate_pod_patch(const struct policy *p, const struct k8s_object *pod, struct arena *a, struct str *patch);

/* Does this Pod UPDATE take the gate away (old carries it, new does
 * not)? The API server refuses to add gates after creation, so removal is
 * the only change to the gate an UPDATE can make. */
bool gate_removed(const struct k8s_object *old_pod, const struct k8s_object *new_pod);

/* --- the gate's Lease ---------------------------------------------------------
 *
 * Whoever can write the Lease could name a holder that never releases
 * anything, with a long leaseDurationSeconds, and keep Pods gated after the
 * freeze. So a replica gates Pods (and leaves the Lease alone) only for a
 * holder it recognises as a replica, within the duration it is configured
 * with; anything else is foreign: not live, taken over at once, exported
 * and alerted on (dra_guard_gate_lease_foreign). */

/* What a replica knows of the Lease's holderIdentity. */
enum gate_holder {
	GATE_HOLDER_NONE = 0,       /* empty: given up, or never held */
	GATE_HOLDER_SELF,           /* this replica */
	GATE_HOLDER_PEER,           /* names a running Pod of the guard */
	GATE_HOLDER_UNCHECKED,      /* not yet known (the check failed or is pending) */
	GATE_HOLDER_FOREIGN,        /* names no Pod of the guard */
};

struct gate_lease_state {
	enum gate_holder holder;
	uint32_t duration_s;        /* leaseDurationSeconds as written; 0 when absent */
	uint32_t configured_s;      /* --gate-lease-duration */
	int64_t since_renewal_ms;   /* since the record last changed, on this replica's clock */
};

struct gate_lease_verdict {
	bool live;                  /* a replica holds it and renews: gating may go on */
	bool take_over;             /* this replica may write itself as the holder */
	bool foreign;               /* a holder no replica would write */
};

/* Judge a Lease record. The record lasts the shorter of its own duration
 * and the configured one; a duration beyond the configured one is foreign
 * (no replica writes it). A holder not yet checked is neither live nor
 * taken over before the record lasts out (a transient API error must not
 * start two replicas fighting over it). */
void gate_lease_judge(const struct gate_lease_state *s, struct gate_lease_verdict *out);

/* The Pod a replica's default holderIdentity names: "<pod>_<pid>", the pod
 * a DNS subdomain name. 0 with *pod pointing into holder, or -EINVAL for
 * any other shape (then no replica wrote it). */
int gate_holder_pod(struct str holder, struct str *pod);

#endif
