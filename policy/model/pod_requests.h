/* pod_requests.h - a Pod's requests for node resources, as the scheduler
 * counts them against a node.
 *
 * The rule is k8s.io/component-helpers/resource PodRequests with the
 * options kube-scheduler 1.36 gives it for a Pod already on a node
 * (framework.NodeInfo): container statuses are used (in-place resize),
 * Pod-level requests are on, overhead is added. In our words:
 *
 *  - Per container, three lists: what the spec requests; what the kubelet
 *    allocated (containerStatuses[].allocatedResources, else the spec); what
 *    is actuated (containerStatuses[].resources.requests, else allocated,
 *    else the spec). While a resize is marked infeasible (condition
 *    PodResizePending with reason Infeasible) a container without status
 *    contributes nothing to the allocated and actuated lists.
 *  - Each list is summed over the Pod the same way: regular containers
 *    add up; restartable init containers (restartPolicy Always, sidecars)
 *    add up too and stay running, so every later init container runs next
 *    to the sidecars before it; the Pod needs the larger, per resource, of
 *    that sum and the peak of its init phase (each init container plus the
 *    sidecars started before it).
 *  - The Pod's figure per resource is the largest of the three sums (the
 *    spec's left out while a resize is infeasible).
 *  - The scheduler then adds the node-allocatable claim statuses (not
 *    here: the ledger charges claims itself).
 *  - Pod-level requests (spec.resources.requests of cpu, memory and
 *    hugepages-*) replace that figure for the resources they name; the
 *    claim amounts are then inside the Pod's own budget, not added on top.
 *  - spec.overhead is added last.
 *
 * Only cpu, memory, ephemeral-storage and hugepages-<size> are kept. Pure;
 * everything made lives in the caller's arena. */
#ifndef DRA_GUARD_POD_REQUESTS_H
#define DRA_GUARD_POD_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"
#include "quantity.h"

/* Most containers (regular and init) and distinct resources read. */
#define POD_REQUESTS_MAX_CONTAINERS 1024
#define POD_REQUESTS_MAX_RESOURCES 32

struct pod_request {
	struct str name;              /* "cpu", "memory", "hugepages-2Mi", ... */
	struct quantity value;
	bool pod_level;               /* a Pod-level request set it: claim amounts are inside it */
};

struct pod_requests {
	struct pod_request *items;    /* sorted by name */
	uint32_t n;
};

/* The requests of p (its raw containers, statuses, overhead and Pod-level
 * resources as decoded). 0; -EINVAL with err (n bytes) naming the member
 * that is not what the API server stores; -E2BIG past a cap above;
 * -ERANGE for a sum no quantity holds; -ENOMEM (arena). */
int pod_requests_compute(const struct pod *p, struct arena *a, struct pod_requests *out,
			 char *err, size_t n);

/* The request named name, or NULL. */
const struct pod_request *pod_requests_get(const struct pod_requests *r, struct str name);

#endif
