/* freeze_rules.c - claim.freeze.*: the operators' rollback brake. */
#include "freeze_rules.h"

#include "gate.h"
#include "view.h"


static const char *reason_text(const struct check *c)
{
	return c->policy->freeze_reason.len ? c->policy->freeze_reason.ptr : "no reason given";
}

/* A device class counts for a driver when the policy lists it under the
 * driver's deviceClasses, or when it carries the driver's own name (the
 * common convention: class gpu.example.com for driver gpu.example.com).
 * The loader joined both for every frozen driver into one sorted list. */
static bool class_in_driver_scope(const struct policy *p, struct str cls)
{
	return policy_list_has(&p->freeze_driver_classes, cls);
}

/* Is this claim inside freeze.scope? No scope means everything is. A claim
 * is in scope when any one of its namespace, request device classes, or
 * allocated drivers is named. */
static bool in_scope(const struct check *c, const struct k8s_object *obj)
{
	const struct policy *p = c->policy;
	const struct resource_claim *cl = &obj->u.claim;
	struct str ns = model_request_namespace(c->req);
	uint32_t i, j;

	if (!p->freeze_scoped)
		return true;
	if (policy_list_has(&p->freeze_namespaces, ns))
		return true;
	for (i = 0; i < cl->nrequests; i++) {
		for (j = 0; j < cl->requests[i].ndevice_classes; j++) {
			struct str cls = cl->requests[i].device_classes[j];

			if (policy_list_has(&p->freeze_device_classes, cls) || class_in_driver_scope(p, cls))
				return true;
		}
	}
	for (i = 0; i < cl->nresults; i++)
		if (policy_list_has(&p->freeze_drivers, cl->results[i].driver))
			return true;
	return false;
}

/* Break-glass users and groups pass; the bypass is reported, not silent. */
static bool bypassed(struct check *c, const char *what)
{
	const struct policy *p = c->policy;

	if (!check_user_is(c, &p->break_glass_users) && !check_user_in(c, &p->break_glass_groups))
		return false;
	check_break_glass(c, "%.*s bypassed the rollback freeze (%s) through freeze.breakGlass",
			  STR_FMT(c->req->user.username), what);
	return true;
}

/* What the resource-claim controller writes when it makes a claim from a
 * Pod's template: the annotation naming the Pod's resourceClaims entry
 * and an ownerReference to the Pod (apiVersion v1, kind Pod, controller:
 * true). */
static bool made_for_pod(const struct object_meta *m)
{
	return m->has_pod_claim_name && m->has_controller && str_eq_cstr(m->controller_api_version, "v1") &&
	       str_eq_cstr(m->controller_kind, "Pod") && m->controller_name.len && m->controller_uid.len;
}

/* Is the sender the resource-claim controller? kube-controller-manager
 * makes its client with NewClient("resource-claim-controller"): with
 * --use-service-account-credentials that is the ServiceAccount
 * kube-system/resource-claim-controller, without it the manager's own
 * user (system:kube-controller-manager). writers.allocators names both by
 * default: the same controller deallocates. Anyone else who can create
 * claims can write the annotation and the ownerReference too. */
static bool sent_by_claim_controller(const struct check *c)
{
	return check_user_is(c, &c->policy->allocators);
}

enum gated_owner { OWNER_NOT_GATED = 0, OWNER_GATED, OWNER_UNSEEN };

/* Is the Pod this template claim is made for held at the guard's gate, by
 * the cluster view? A Pod the view does not hold (unbound Pods are kept
 * only while gated) may be one the view has not seen yet. Without a view
 * nothing is known to be gated: the exception does not hold. */
static enum gated_owner owner_gated(const struct check *c, struct str ns)
{
	const struct object_meta *m = &c->req->object.meta;
	const struct view_pod *p;

	if (!c->policy->freeze_gate_pods || !c->view || !made_for_pod(m) || !sent_by_claim_controller(c))
		return OWNER_NOT_GATED;
	p = view_pod_get(c->view, ns, m->controller_name);
	if (!p)
		return OWNER_UNSEEN;
	if (!view_uid_eq(&p->uid, m->controller_uid))
		return OWNER_UNSEEN;  /* a Pod of that name made again: the view is behind */
	return p->gated ? OWNER_GATED : OWNER_NOT_GATED;
}

/* Whether Pod p, of namespace ns, names claim. */
static bool names_claim(const struct view *v, const struct view_pod *p, struct str ns, struct str claim)
{
	uint32_t i;

	if (!str_eq(view_str(v, p->namespace), ns))
		return false;
	for (i = 0; i < p->nclaims; i++)
		if (str_eq_cstr(claim, view_pod_claim(p, i)))
			return true;
	return false;
}

/* The Pods that name a claim created directly (not from a template) by
 * resourceClaimName: the scheduler records nothing for them while the
 * claim does not exist, so the refusal's Events go to them. */
static void find_held_pods(struct check *c, struct str ns)
{
	struct verdict *v = c->verdict;
	struct str claim = c->req->object.meta.name;
	struct view_iter it;
	const struct view_pod *p;
	int rc = 0;

	if (!c->view || made_for_pod(&c->req->object.meta) || !claim.len)
		return;
	for (p = view_first_pod(&it, c->view); p && v->nheld_pods < VERDICT_MAX_HELD_PODS; p = view_next_pod(&it)) {
		struct verdict_pod *vp = &v->held_pods[v->nheld_pods];
		char uid[64];

		if (!names_claim(c->view, p, ns, claim))
			continue;
		view_uid_format(&p->uid, uid, sizeof(uid));
		vp->name = str_from_cstr(view_pod_name(p));
		if ((rc = arena_strdup(c->arena, uid, strlen(uid), &vp->uid)) != 0)
			break;
		v->nheld_pods++;
	}
	if (rc)
		c->error = rc;
}

/* "a, b)" for the message: the held Pods' names. */
static struct str held_names(struct check *c)
{
	const struct verdict *v = c->verdict;

	if (!v->nheld_pods)
		return STR_LIT("");
	return check_printf(c, "%.*s)", STR_FMT(CHECK_NAMES(c, v->held_pods, v->nheld_pods, struct verdict_pod, name)));
}

void freeze_rules_create(struct check *c)
{
	struct str ns = c->req->namespace.len ? c->req->namespace : c->req->object.meta.namespace;
	enum gated_owner owner;

	if (!c->frozen || !in_scope(c, &c->req->object))
		return;
	/* Creating a claim allocates nothing: for a Pod held at the gate it
	 * is only made ready for the moment the freeze ends. */
	owner = owner_gated(c, ns);
	if (owner == OWNER_GATED || bypassed(c, "new ResourceClaim"))
		return;
	find_held_pods(c, ns);
	check_violation_cause(c, RULE_CLAIM_FREEZE_CREATE, 0, owner == OWNER_UNSEEN, STR_LIT(""),
			      "the cluster is in a rollback freeze (reason: %s); new ResourceClaims are refused "
			      "while it lasts. Retry creating this claim after the freeze ends; Pods that need it "
			      "stay Pending until then%s%.*s", reason_text(c),
			      c->verdict->nheld_pods ? " (Pods that name it: " : "",
			      STR_FMT(held_names(c)));
}

void freeze_rules_claim_update(struct check *c)
{
	const struct object_meta *old = &c->req->old_object.meta, *cur = &c->req->object.meta;

	if (!c->frozen || !model_pod_owner_changed(old, cur) || !in_scope(c, &c->req->object))
		return;
	/* The resource-claim controller, and the garbage collector, which
	 * takes the ownerReference off when its Pod is deleted orphaning. */
	if (sent_by_claim_controller(c) || check_user_is(c, &c->policy->collectors))
		return;
	if (bypassed(c, "a ResourceClaim made a Pod's claim or no longer one"))
		return;
	check_violation(c, RULE_CLAIM_FREEZE_CREATE, "metadata.ownerReferences",
			"%.*s may not add, change or remove a ResourceClaim's controller ownerReference to a Pod or "
			"its resource.kubernetes.io/pod-claim-name annotation while the cluster is in a rollback "
			"freeze (reason: %s): that makes a claim the freeze let through for a Pod at the gate into "
			"another claim, or another claim into such a one. Retry after the freeze ends",
			STR_FMT(check_who(c)), reason_text(c));
}

void freeze_rules_allocate(struct check *c)
{
	const struct resource_claim *old = &c->req->old_object.u.claim;
	const struct resource_claim *cur = &c->req->object.u.claim;

	/* Only a claim going from unallocated to allocated is new; everything
	 * that keeps or releases an allocation passes. */
	if (old->allocated || !cur->allocated || !c->frozen)
		return;
	if (!in_scope(c, &c->req->object) || bypassed(c, "new allocation"))
		return;
	check_violation(c, RULE_CLAIM_FREEZE_ALLOCATE, "status.allocation",
			"the cluster is in a rollback freeze (reason: %s); new allocations are refused while "
			"it lasts. The scheduler retries, and the Pod stays Pending until the freeze ends",
			reason_text(c));
}

void freeze_rules_gate(struct check *c)
{
	const struct str self = c->self_user;

	if (!c->frozen || !gate_removed(&c->req->old_object, &c->req->object))
		return;
	if (self.len && str_eq(c->req->user.username, self))
		return;
	if (bypassed(c, "removal of the scheduling gate " MODEL_FREEZE_GATE))
		return;
	check_violation(c, RULE_CLAIM_FREEZE_GATE, "spec.schedulingGates",
			"%.*s may not remove the scheduling gate \"" MODEL_FREEZE_GATE "\" while the cluster is "
			"in a rollback freeze (reason: %s): the Pod would take new allocations the freeze refuses. "
			"dra-guard removes the gate itself when the freeze ends; keep every other gate as it is, "
			"or ask for freeze.breakGlass", STR_FMT(check_who(c)), reason_text(c));
}
