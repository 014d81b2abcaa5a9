/* freeze_rules.c - claim.freeze.*: the operators' rollback brake. */
#include "freeze_rules.h"


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

void freeze_rules_create(struct check *c)
{
	if (!c->frozen || !in_scope(c, &c->req->object) || bypassed(c, "new ResourceClaim"))
		return;
	check_violation(c, RULE_CLAIM_FREEZE_CREATE, "",
			"the cluster is in a rollback freeze (reason: %s); new ResourceClaims are refused "
			"while it lasts. Retry creating this claim after the freeze ends; Pods that need it "
			"stay Pending until then", reason_text(c));
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
