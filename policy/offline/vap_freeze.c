/* vap_freeze.c - claim.freeze.*: the rollback freeze as
 * ValidatingAdmissionPolicies.
 *
 * The freeze itself is not in the policy document: operators flip the
 * ConfigMap's freeze key with kubectl patch. These policies take that
 * ConfigMap as their parameter (paramKind v1 ConfigMap, paramRef by name
 * and namespace), so the API server reads the key at admission time and a
 * patch flips them as it flips the webhook. A missing ConfigMap refuses
 * (parameterNotFoundAction: Deny with failurePolicy Fail): one kubectl
 * delete must not end an emergency freeze, as the webhook keeps its last
 * good policy; removing the guard on purpose deletes the bindings first
 * (the uninstall runbook). What the document says about the freeze (scope,
 * break-glass) is written into the expressions (freeze_rules.c is the
 * reference). */
#include "vap_impl.h"

static const struct vap_match claim_create = {
	"resource.k8s.io", "resourceclaims", "[CREATE]", true, false
};

static const struct vap_match claim_status = {
	"resource.k8s.io", "resourceclaims/status", "[UPDATE]", true, false
};

#define ALLOCATED(o) "(has(" o ".status) && has(" o ".status.allocation))"

/* The freeze key as the loader reads it: "true" with surrounding space,
 * tab, CR or LF. Any other value (the loader's "false", or one it refuses,
 * where the webhook keeps its last good policy) is no freeze here. */
static void frozen(struct cel *c)
{
	cel_add(c, "has(params.data) && 'freeze' in params.data && "
		"params.data['freeze'].matches('^[ \\\\t\\\\n\\\\r]*true[ \\\\t\\\\n\\\\r]*$')");
}

static void reason(struct cel *c)
{
	cel_add(c, "[has(params.data) && 'freeze-reason' in params.data ? params.data['freeze-reason'].trim() : '']"
		".map(r, r == '' ? 'no reason given' : r.replace('\\n', ' ').replace('\\r', ' '))[0]");
}

/* The classes a freeze scope covers: its deviceClasses, its drivers' names
 * (the common convention) and the classes each of those drivers serves. */
static void scope_classes(struct cel *c, const struct policy *p)
{
	size_t i, j, n = 0;

	cel_add(c, "[");
	for (i = 0; i < p->freeze_device_classes.n; i++) {
		cel_add(c, "%s", n++ ? ", " : "");
		cel_str(c, p->freeze_device_classes.items[i]);
	}
	for (i = 0; i < p->freeze_drivers.n; i++) {
		const struct driver_policy *d = policy_driver(p, p->freeze_drivers.items[i]);

		cel_add(c, "%s", n++ ? ", " : "");
		cel_str(c, p->freeze_drivers.items[i]);
		for (j = 0; d && j < d->device_classes.n; j++) {
			cel_add(c, ", ");
			cel_str(c, d->device_classes.items[j]);
		}
	}
	cel_add(c, "]");
}

/* Is the claim o inside freeze.scope? Any one of its namespace, its
 * requests' device classes or its allocated drivers named is enough. */
static void in_scope(struct cel *c, const struct policy *p, const char *o)
{
	bool any = false;

	if (!p->freeze_scoped) {
		cel_add(c, "true");
		return;
	}
	if (p->freeze_namespaces.n) {
		cel_add(c, "(has(request.namespace) && request.namespace in ");
		cel_str_list(c, &p->freeze_namespaces);
		cel_add(c, ")");
		any = true;
	}
	if (p->freeze_device_classes.n || p->freeze_drivers.n) {
		cel_add(c, "%s[", any ? " ||\n" : "");
		scope_classes(c, p);
		cel_add(c, "].all(cls, has(%s.spec.devices) && has(%s.spec.devices.requests) && "
			"%s.spec.devices.requests.exists(r,\n"
			"  (has(r.exactly) && has(r.exactly.deviceClassName) && r.exactly.deviceClassName in cls) ||\n"
			"  (has(r.firstAvailable) && r.firstAvailable.exists(f, has(f.deviceClassName) && "
			"f.deviceClassName in cls))))", o, o, o);
		any = true;
	}
	if (p->freeze_drivers.n) {
		cel_add(c, "%s(" ALLOCATED("%s") " && has(%s.status.allocation.devices) && "
			"has(%s.status.allocation.devices.results) &&\n"
			"  %s.status.allocation.devices.results.exists(r, r.driver in ", any ? " ||\n" : "", o, o, o, o, o);
		cel_str_list(c, &p->freeze_drivers);
		cel_add(c, "))");
	}
}

static void rule_freeze(struct vap_out *o, enum rule_id id)
{
	const struct policy *p = o->p;
	bool create = id == RULE_CLAIM_FREEZE_CREATE;
	const struct vap_match *m = create ? &claim_create : &claim_status;
	struct cel cond, is_frozen, scope, bypass, for_pod, ok, msg, audit;
	struct cel *all[] = { &cond, &is_frozen, &scope, &bypass, &for_pod, &ok, &msg, &audit };
	bool gated = create && p->freeze_gate_pods;
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	/* Only a claim going from unallocated to allocated is new; everything
	 * that keeps or releases an allocation passes. */
	cel_add(&cond, "!" ALLOCATED("oldObject") " && " ALLOCATED("object"));
	frozen(&is_frozen);
	in_scope(&scope, p, "object");
	cel_user_in(&bypass, &p->break_glass_users);
	cel_add(&bypass, " || ");
	cel_group_in(&bypass, &p->break_glass_groups);
	/* With freeze.gatePods the engine lets the resource-claim controller
	 * make the claims of a Pod the cluster view holds at the gate. A policy
	 * cannot see the Pod: what it can hold is who sends the claim (the
	 * controller, writers.allocators: anyone else could forge the rest)
	 * and what the controller writes (the pod-claim-name annotation, a
	 * controller reference to the Pod). */
	cel_user_in(&for_pod, &p->allocators);
	cel_add(&for_pod, " &&\nhas(object.metadata.annotations) && "
		"'resource.kubernetes.io/pod-claim-name' in object.metadata.annotations &&\n"
		"has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
		"has(r.controller) && r.controller && r.apiVersion == 'v1' && r.kind == 'Pod' && r.name != '' && "
		"r.uid != '')");
	cel_add(&ok, "!(variables.frozen && variables.inScope && !variables.breakGlass%s)",
		gated ? " && !variables.forPod" : "");
	cel_add(&msg, "'[%s] %sthe cluster is in a rollback freeze (reason: ' + ", rule_name(id),
		create ? "" : "status.allocation: ");
	reason(&msg);
	cel_add(&msg, create ?
		" + '); new ResourceClaims are refused while it lasts. Retry creating this claim after the freeze "
		"ends; Pods that need it stay Pending until then'" :
		" + '); new allocations are refused while it lasts. The scheduler retries, and the Pod stays Pending "
		"until the freeze ends'");
	cel_add(&audit, "variables.frozen && variables.inScope && variables.breakGlass ? request.userInfo.username + "
		"' bypassed the rollback freeze (%s) through freeze.breakGlass' : ''",
		create ? "new ResourceClaim" : "new allocation");
	for (i = 0; i < sizeof(all) / sizeof(all[0]) && !rc; i++)
		rc = all[i]->rc;
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, id, m);
		if (!create)
			vap_match_condition(o, "new-allocation", &cond);
		vap_variable(o, "frozen", &is_frozen);
		vap_variable(o, "inScope", &scope);
		vap_variable(o, "breakGlass", &bypass);
		if (gated)
			vap_variable(o, "forPod", &for_pod);
		vap_validation(o, id, &ok, &msg);
		if (p->break_glass_users.n || p->break_glass_groups.n)
			vap_audit_annotation(o, "break-glass", &audit);
		vap_policy_end(o, id, m);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

void vap_freeze_rule(struct vap_out *o, enum rule_id id)
{
	if (id == RULE_CLAIM_FREEZE_CREATE || id == RULE_CLAIM_FREEZE_ALLOCATE)
		rule_freeze(o, id);
}
