/* writer_rules.c - least-privilege writes: slice.writer*, status.*. */
#include "writer_rules.h"

#include <stdlib.h>

#include "names.h"

/* The node a Pod-bound ServiceAccount token says its Pod runs on. Returns
 * the number of values (the rules want exactly one). */
static uint32_t token_node(const struct check *c, struct str *node)
{
	uint32_t n;
	const struct str *v = model_user_extra(&c->req->user, MODEL_EXTRA_NODE_NAME, &n);

	if (n == 1)
		*node = v[0];
	return n;
}

/* The node-name values of the token, named for a message. */
static struct str token_nodes(struct check *c)
{
	uint32_t n;
	const struct str *v = model_user_extra(&c->req->user, MODEL_EXTRA_NODE_NAME, &n);

	return check_names(c, v, n, sizeof(*v), 0);
}

static bool is_scheduler(const struct check *c)
{
	return check_user_is(c, &c->policy->schedulers);
}

static bool is_allocator(const struct check *c)
{
	return is_scheduler(c) || check_user_is(c, &c->policy->allocators);
}

/* The scope the requester writes driver d's objects at, from the account's
 * entry: a ServiceAccount shared by the kubelet plugin and the controller
 * (kubernetes-sigs/dra-example-driver runs both under one) is scope node
 * with controllerPods, and a token bound to a Pod whose name matches one
 * of them writes at cluster scope. The token's pod-name is set by the API
 * server from the Pod the token was issued for, and a kubelet can ask for
 * tokens only for Pods on its own node (NodeRestriction), so a plugin's
 * token never carries the controller's Pod name unless the controller runs
 * on that plugin's node. The node-name extra cannot make this distinction:
 * the controller Pod's token carries the node the controller runs on. */
static enum driver_scope writer_scope(const struct check *c, const struct service_account_policy *sa)
{
	uint32_t n;
	const struct str *pod;

	if (sa->scope == DRIVER_SCOPE_CLUSTER)
		return DRIVER_SCOPE_CLUSTER;
	if (sa->controller_pods.n == 0)
		return DRIVER_SCOPE_NODE;
	pod = model_user_extra(&c->req->user, MODEL_EXTRA_POD_NAME, &n);
	if (n == 1 && policy_list_glob(&sa->controller_pods, pod[0]))
		return DRIVER_SCOPE_CLUSTER;
	return DRIVER_SCOPE_NODE;
}

/* The driver listed for a ServiceAccount user, other than except, or NULL. */
static const struct driver_policy *driver_of_user(const struct check *c, const struct driver_policy *except)
{
	size_t i;

	for (i = 0; i < c->policy->ndrivers; i++) {
		const struct driver_policy *d = &c->policy->drivers[i];

		if (d != except && policy_list_has(&d->service_accounts, c->req->user.username))
			return d;
	}
	return NULL;
}

/* --- slice.writer, slice.writer.node --------------------------------------------- */

/* Check that a node-scoped driver's token is bound to node (a slice's
 * nodeName; empty for allNodes/nodeSelector pools). */
static void check_slice_node(struct check *c, const struct driver_policy *d,
			     const struct k8s_object *obj, const char *path)
{
	const struct resource_slice *s = &obj->u.slice;
	struct str node = { "", 0 };
	uint32_t n;

	if (s->node_name.len == 0) {
		check_violation(c, RULE_SLICE_WRITER_NODE, path,
				"%.*s writes a ResourceSlice of node-scoped driver %.*s without nodeName "
				"(an allNodes, nodeSelector or per-device pool); only scope: cluster drivers may",
				STR_FMT(check_who(c)), check_shown(d->name), d->name.ptr);
		return;
	}
	n = token_node(c, &node);
	if (n == 0)
		check_violation(c, RULE_SLICE_WRITER_NODE, path,
				"%.*s carries no %s extra (a token not bound to a Pod), so it cannot write "
				"node \"%.*s\"'s slices of node-scoped driver %.*s",
				STR_FMT(check_who(c)), MODEL_EXTRA_NODE_NAME, check_shown(s->node_name),
				s->node_name.ptr, check_shown(d->name), d->name.ptr);
	else if (n > 1)
		check_violation(c, RULE_SLICE_WRITER_NODE, path,
				"%.*s carries %u %s values (%.*s); exactly one is expected", STR_FMT(check_who(c)),
				n, MODEL_EXTRA_NODE_NAME, STR_FMT(token_nodes(c)));
	else if (!str_eq(node, s->node_name))
		check_violation(c, RULE_SLICE_WRITER_NODE, path,
				"%.*s runs on node \"%.*s\" and may write only that node's slices of driver %.*s, "
				"not node \"%.*s\"'s", STR_FMT(check_who(c)), check_shown(node), node.ptr,
				check_shown(d->name), d->name.ptr, check_shown(s->node_name), s->node_name.ptr);
}

void writer_rules_slice(struct check *c)
{
	const struct admission_request *req = c->req;
	const struct k8s_object *obj = model_request_subject(req);
	const struct resource_slice *s = &obj->u.slice;
	const struct driver_policy *d;
	const struct service_account_policy *sa;
	struct str kubelet_node;

	if (!c->policy->has_drivers)
		return;
	d = policy_driver(c->policy, s->driver);
	if (!d && req->operation == ADMISSION_OP_UPDATE)
		d = policy_driver(c->policy, req->old_object.u.slice.driver);
	if (!d)
		return;
	if ((sa = policy_driver_account(d, req->user.username)) != NULL) {
		if (writer_scope(c, sa) != DRIVER_SCOPE_NODE)
			return;
		check_slice_node(c, d, obj, "spec.nodeName");
		/* An UPDATE must not take over another node's slice either. */
		if (req->operation == ADMISSION_OP_UPDATE &&
		    !str_eq(req->old_object.u.slice.node_name, s->node_name))
			check_slice_node(c, d, &req->old_object, "spec.nodeName");
		return;
	}
	/* Kubelets delete their node's slices when they start and when a
	 * driver's plugin stays away (DeleteCollection by spec.nodeName in the
	 * kubelet's DRA plugin manager, wipeResourceSlices); Kubernetes has
	 * them do nothing else with a driver's slices. */
	if (req->operation == ADMISSION_OP_DELETE && names_kubelet_node(req->user.username, &kubelet_node) &&
	    s->node_name.len && str_eq(kubelet_node, s->node_name))
		return;
	/* Node-local slices are owned by their Node: when the Node goes, the
	 * garbage collector deletes them (attemptToDeleteItem, once no owner
	 * is left). Refusing it leaks a slice on every scale-down. */
	if (req->operation == ADMISSION_OP_DELETE && check_user_is(c, &c->policy->collectors))
		return;
	if (check_user_in(c, &c->policy->admin_groups)) {
		check_break_glass(c, "%.*s wrote a ResourceSlice of driver %.*s as a member of writers.admins",
				  STR_FMT(req->user.username), check_shown(d->name), d->name.ptr);
		return;
	}
	check_violation(c, RULE_SLICE_WRITER, "spec.driver",
			"%.*s may not %s ResourceSlices of driver %.*s; only its ServiceAccounts (%.*s), "
			"the kubelet of the slice's node and writers.collectors (delete only) and writers.admins "
			"groups may",
			STR_FMT(check_who(c)), req->operation == ADMISSION_OP_DELETE ? "delete" :
			req->operation == ADMISSION_OP_CREATE ? "create" : "update",
			check_shown(d->name), d->name.ptr, STR_FMT(check_list_names(c, &d->service_accounts)));
}

/* --- status.allocation.writer -------------------------------------------------------- */

static void rule_allocation_writer(struct check *c)
{
	const struct resource_claim *old = &c->req->old_object.u.claim;
	const struct resource_claim *cur = &c->req->object.u.claim;
	bool alloc_changed = old->allocated != cur->allocated || !str_eq(old->allocation_raw, cur->allocation_raw);
	bool reserved_changed = !str_eq(old->reserved_for_raw, cur->reserved_for_raw);

	if ((!alloc_changed && !reserved_changed) || is_allocator(c))
		return;
	check_violation(c, RULE_STATUS_ALLOCATION_WRITER, alloc_changed ? "status.allocation" : "status.reservedFor",
			"%.*s changed %s; only the scheduler (schedulers: %.*s) or an allocation "
			"controller (writers.allocators: %.*s) may", STR_FMT(check_who(c)),
			alloc_changed && reserved_changed ? "status.allocation and status.reservedFor" :
			alloc_changed ? "status.allocation" : "status.reservedFor",
			STR_FMT(check_list_names(c, &c->policy->schedulers)),
			STR_FMT(check_list_names(c, &c->policy->allocators)));
}

/* --- status.devices.writer ---------------------------------------------------------------- */

static int status_key_cmp(const struct device_status *a, const struct device_status *b)
{
	int r = str_cmp(a->driver, b->driver);

	if (r == 0)
		r = str_cmp(a->pool, b->pool);
	if (r == 0)
		r = str_cmp(a->device, b->device);
	if (r == 0)
		r = str_cmp(a->share_id, b->share_id);
	return r;
}

static int status_ptr_cmp(const void *a, const void *b)
{
	return status_key_cmp(*(const struct device_status *const *)a, *(const struct device_status *const *)b);
}

/* The entries of cl sorted by (driver, pool, device, shareID). NULL and
 * c->error set when the arena is out of room. */
static const struct device_status **statuses_by_key(struct check *c, const struct resource_claim *cl)
{
	const struct device_status **v = arena_calloc(c->arena, cl->ndevices ? cl->ndevices : 1, sizeof(*v));
	uint32_t i;

	if (!v) {
		c->error = arena_error(c->arena);
		return NULL;
	}
	for (i = 0; i < cl->ndevices; i++)
		v[i] = &cl->devices[i];
	qsort(v, cl->ndevices, sizeof(*v), status_ptr_cmp);
	return v;
}

/* The claim's node: from the new allocation, else the old one. */
static struct str claim_node(const struct check *c)
{
	const struct resource_claim *cur = &c->req->object.u.claim;
	const struct resource_claim *old = &c->req->old_object.u.claim;

	if (cur->allocated && cur->node_local)
		return cur->allocated_node;
	if (old->allocated && old->node_local)
		return old->allocated_node;
	return (struct str){ "", 0 };
}

/* May the requester write entry e (added, changed or removed)? index is its
 * position in the claim it is in (new for added and changed, old for
 * removed). */
static void check_device_entry(struct check *c, const struct device_status *e, uint32_t index,
			       const char *how, bool deallocating)
{
	const struct driver_policy *d = policy_driver(c->policy, e->driver);
	const struct service_account_policy *sa;
	struct str node = { "", 0 }, claim_at;
	uint32_t n;
	struct str path = check_printf(c, "status.devices[%u]", index);

	/* Whoever releases the allocation clears the entries with it. */
	if (deallocating && is_allocator(c))
		return;
	if (!d) {
		const struct driver_policy *mine = driver_of_user(c, NULL);

		if (mine)
			check_violation_at(c, RULE_STATUS_DEVICES_WRITER, path,
					   "%.*s is driver %.*s's ServiceAccount and %s an entry of driver %.*s; "
					   "a driver may never touch another driver's entries",
					   STR_FMT(check_who(c)), check_shown(mine->name), mine->name.ptr, how,
					   check_shown(e->driver), e->driver.ptr);
		return;
	}
	if ((sa = policy_driver_account(d, c->req->user.username)) == NULL) {
		check_violation_at(c, RULE_STATUS_DEVICES_WRITER, path,
				   "%.*s %s an entry of driver %.*s (device \"%.*s\"); only that driver's "
				   "ServiceAccounts (%.*s) may", STR_FMT(check_who(c)), how,
				   check_shown(d->name), d->name.ptr, check_shown(e->device), e->device.ptr,
				   STR_FMT(check_list_names(c, &d->service_accounts)));
		return;
	}
	if (writer_scope(c, sa) != DRIVER_SCOPE_NODE)
		return;
	claim_at = claim_node(c);
	n = token_node(c, &node);
	if (claim_at.len == 0)
		check_violation_at(c, RULE_STATUS_DEVICES_WRITER, path,
				   "%.*s %s an entry of driver %.*s at node scope, but the claim has no node-local "
				   "allocation to tie it to (a controller writes such claims: give its "
				   "ServiceAccount scope: cluster, or controllerPods when it shares one with the "
				   "plugin)", STR_FMT(check_who(c)), how, check_shown(d->name), d->name.ptr);
	else if (n != 1)
		check_violation_at(c, RULE_STATUS_DEVICES_WRITER, path,
				   "%.*s %s an entry of node-scoped driver %.*s but its token carries %u %s values "
				   "(%.*s; exactly one, the claim's node \"%.*s\", is needed)", STR_FMT(check_who(c)),
				   how, check_shown(d->name), d->name.ptr, n, MODEL_EXTRA_NODE_NAME,
				   STR_FMT(token_nodes(c)), check_shown(claim_at), claim_at.ptr);
	else if (!str_eq(node, claim_at))
		check_violation_at(c, RULE_STATUS_DEVICES_WRITER, path,
				   "%.*s %s an entry of driver %.*s for a claim allocated on node \"%.*s\"; at node "
				   "scope a driver writes only claims on its own node (a controller writing for any "
				   "node needs scope: cluster, or controllerPods naming its Pods)",
				   STR_FMT(check_who(c)), how, check_shown(d->name), d->name.ptr, check_shown(claim_at),
				   claim_at.ptr);
}

/* Entries are matched by (driver, pool, device, shareID): both lists are
 * sorted by that key and walked once, so the comparison costs n log n
 * whatever order the writer used. Reported in each claim's own order. */
static void rule_devices_writer(struct check *c)
{
	const struct resource_claim *old = &c->req->old_object.u.claim;
	const struct resource_claim *cur = &c->req->object.u.claim;
	bool deallocating = old->allocated && !cur->allocated;
	const struct device_status **o, **n;
	uint32_t i = 0, j = 0;

	if (old->ndevices == 0 && cur->ndevices == 0)
		return;
	if (!(o = statuses_by_key(c, old)) || !(n = statuses_by_key(c, cur)))
		return;
	while ((i < old->ndevices || j < cur->ndevices) && !c->error) {
		int r = i == old->ndevices ? 1 : j == cur->ndevices ? -1 : status_key_cmp(o[i], n[j]);

		if (r < 0) {
			check_device_entry(c, o[i], (uint32_t)(o[i] - old->devices), "removed", deallocating);
			i++;
		} else if (r > 0) {
			check_device_entry(c, n[j], (uint32_t)(n[j] - cur->devices), "added", deallocating);
			j++;
		} else {
			if (!str_eq(o[i]->raw, n[j]->raw))
				check_device_entry(c, n[j], (uint32_t)(n[j] - cur->devices), "changed",
						   deallocating);
			i++;
			j++;
		}
	}
}

void writer_rules_claim_status(struct check *c)
{
	rule_allocation_writer(c);
	rule_devices_writer(c);
}

/* --- status.pod.writer ---------------------------------------------------------------------------- */

void writer_rules_pod_status(struct check *c)
{
	const struct pod *old = &c->req->old_object.u.pod;
	const struct pod *cur = &c->req->object.u.pod;

	/* Absent and empty mean the same to the scheduler. */
	if ((old->nclaim_statuses == 0 && cur->nclaim_statuses == 0) ||
	    (old->has_claim_statuses == cur->has_claim_statuses &&
	     str_eq(old->claim_statuses_raw, cur->claim_statuses_raw)))
		return;
	if (is_scheduler(c))
		return;
	check_violation(c, RULE_STATUS_POD_WRITER, "status.nodeAllocatableResourceClaimStatuses",
			"%.*s changed the node-allocatable amounts the scheduler accounts for this Pod "
			"(claims before: %.*s; after: %.*s); only the scheduler (schedulers: %.*s) writes them, "
			"in PreBind, and clears them on Unreserve", STR_FMT(check_who(c)),
			STR_FMT(CHECK_NAMES(c, old->claim_statuses, old->nclaim_statuses, struct claim_resource_status,
					    claim_name)),
			STR_FMT(CHECK_NAMES(c, cur->claim_statuses, cur->nclaim_statuses, struct claim_resource_status,
					    claim_name)),
			STR_FMT(check_list_names(c, &c->policy->schedulers)));
}
