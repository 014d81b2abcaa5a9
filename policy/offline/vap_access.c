/* vap_access.c - who may write what (slice.writer*, status.*), as
 * ValidatingAdmissionPolicies.
 *
 * These rules read the request's user (request.userInfo: username, groups,
 * and the node-name a Pod-bound ServiceAccount token carries in extra) and
 * the object before and after; nothing else, so CEL gives the engine's
 * verdict exactly (writer_rules.c is the reference). */
#include "vap_impl.h"

static const struct vap_match slice_any = {
	"resource.k8s.io", "resourceslices", "[CREATE, UPDATE, DELETE]", false, false
};

static const struct vap_match claim_status = {
	"resource.k8s.io", "resourceclaims/status", "[UPDATE]", false, false
};

/* pods/status is the busiest write in a cluster and kubelets' reports must
 * never stop: like the webhook entry, an error evaluating the policy
 * allows (failurePolicy Ignore). */
static const struct vap_match pod_status = {
	"", "pods/status", "[UPDATE]", false, true
};

#define OBJ "(request.operation == 'DELETE' ? oldObject : object)"

/* {'driver': ['system:serviceaccount:...', ...], ...}: every listed
 * driver's ServiceAccounts. */
static void driver_accounts(struct cel *c, const struct policy *p)
{
	size_t i;

	cel_add(c, "{");
	for (i = 0; i < p->ndrivers; i++) {
		const struct driver_policy *d = &p->drivers[i];

		cel_add(c, "%s", i ? ", " : "");
		cel_str(c, d->name);
		cel_add(c, ": ");
		/* An empty list literal would be list(dyn) beside list(string);
		 * a driver without accounts gets one no user name equals. */
		if (d->service_accounts.n)
			cel_str_list(c, &d->service_accounts);
		else
			cel_add(c, "['']");
	}
	cel_add(c, "}");
}

/* {'driver': {'account': 'regex', ...}, ...}: the accounts that write at
 * node scope (their own scope, or their driver's), each with its
 * controllerPods as one anchored regular expression ('' for none). A
 * controllerPods glob that does not translate is -ENOTSUP (vap_rule_info()
 * has left such a policy out). */
static void node_accounts(struct cel *c, const struct policy *p)
{
	struct buf re;
	size_t i, j, n = 0;
	int rc;

	buf_init(&re, VAP_EXPR_MAX);
	cel_add(c, "{");
	for (i = 0; i < p->ndrivers; i++) {
		const struct driver_policy *d = &p->drivers[i];
		size_t k = 0;

		for (j = 0; j < d->naccounts; j++) {
			const struct service_account_policy *sa = &d->accounts[j];

			if (sa->scope != DRIVER_SCOPE_NODE)
				continue;
			if (k++ == 0) {
				cel_add(c, "%s", n++ ? ", " : "");
				cel_str(c, d->name);
				cel_add(c, ": {");
			} else {
				cel_add(c, ", ");
			}
			cel_str(c, sa->name);
			cel_add(c, ": ");
			buf_reset(&re);
			rc = sa->controller_pods.n ? vap_glob_regex(&sa->controller_pods, &re) : 0;
			if (rc && !c->rc)
				c->rc = rc;
			cel_str(c, (struct str){ buf_cstr(&re), buf_len(&re) });
		}
		if (k)
			cel_add(c, "}");
	}
	cel_add(c, "}");
	buf_free(&re);
}

/* The requester writes driver dn's objects at node scope (writer_scope()
 * in writer_rules.c): one of its node-scoped accounts, and not a token
 * bound to a Pod that controllerPods names. t is the node_accounts() table,
 * pods the token's pod-name values (CEL list). */
#define AT_NODE_SCOPE(t, dn, pods) \
	"(" dn " in " t " && request.userInfo.username in " t "[" dn "] && !(" t "[" dn "][request.userInfo.username] != '' && " \
	"size(" pods ") == 1 && " pods "[0].matches(" t "[" dn "][request.userInfo.username])))"

static int first_rc(struct cel *const *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i]->rc)
			return v[i]->rc;
	return 0;
}

/* --- slice.writer ------------------------------------------------------------------ */

static void listed_driver_condition(struct cel *c, const struct policy *p)
{
	size_t i;

	cel_add(c, OBJ ".spec.driver in [");
	for (i = 0; i < p->ndrivers; i++) {
		cel_add(c, "%s", i ? ", " : "");
		cel_str(c, p->drivers[i].name);
	}
	cel_add(c, "]");
}

static void rule_slice_writer(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel match, obj, sas, deleter, admin, ok, msg, audit;
	struct cel *all[] = { &match, &obj, &sas, &deleter, &admin, &ok, &msg, &audit };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	listed_driver_condition(&match, p);
	cel_add(&obj, OBJ);
	driver_accounts(&sas, p);
	cel_add(&sas, "[variables.obj.spec.driver]");
	/* Kubelets delete their node's slices; nothing else of a driver's. */
	cel_add(&deleter, "request.operation == 'DELETE' && has(variables.obj.spec.nodeName) && "
		"variables.obj.spec.nodeName != '' && request.userInfo.username == 'system:node:' + variables.obj.spec.nodeName");
	/* The garbage collector deletes the slices of a Node that is gone. */
	cel_add(&deleter, " ||\n  (request.operation == 'DELETE' && ");
	cel_user_in(&deleter, &p->collectors);
	cel_add(&deleter, ")");
	cel_group_in(&admin, &p->admin_groups);
	cel_add(&ok, "request.userInfo.username in variables.sas || variables.deleter || variables.admin");
	cel_add(&msg, "'[slice.writer] spec.driver: ' + ");
	cel_who(&msg);
	cel_add(&msg, " + ' may not ' + (request.operation == 'DELETE' ? 'delete' : request.operation == 'CREATE' ? "
		"'create' : 'update') + ' ResourceSlices of driver ' + variables.obj.spec.driver + '; only its "
		"ServiceAccounts (' + string(size(variables.sas.filter(s, s != ''))) + ' listed), the kubelet of the "
		"slice\\'s node and writers.collectors (delete only) and writers.admins groups may'");
	cel_add(&audit, "!(request.userInfo.username in variables.sas) && !variables.deleter && variables.admin ? "
		"request.userInfo.username + ' wrote a ResourceSlice of driver ' + variables.obj.spec.driver + "
		"' as a member of writers.admins' : ''");
	rc = first_rc(all, sizeof(all) / sizeof(all[0]));
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, RULE_SLICE_WRITER, &slice_any);
		vap_match_condition(o, "listed-driver", &match);
		vap_variable(o, "obj", &obj);
		vap_variable(o, "sas", &sas);
		vap_variable(o, "deleter", &deleter);
		vap_variable(o, "admin", &admin);
		vap_validation(o, RULE_SLICE_WRITER, &ok, &msg);
		if (p->admin_groups.n)
			vap_audit_annotation(o, "break-glass", &audit);
		vap_policy_end(o, RULE_SLICE_WRITER, &slice_any);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

/* --- slice.writer.node ------------------------------------------------------------- */

/* The token's node for slice x (a CEL object): ok when exactly one
 * node-name and it is x's nodeName. */
static void node_ok(struct cel *c, const char *x)
{
	cel_add(c, "(has(%s.spec.nodeName) && %s.spec.nodeName != '' && size(variables.nodes) == 1 && "
		"variables.nodes[0] == %s.spec.nodeName)", x, x, x);
}

static void node_message(struct cel *c, const char *x)
{
	cel_add(c, "'[slice.writer.node] spec.nodeName: ' + ");
	cel_who(c);
	cel_add(c, " + (!has(%s.spec.nodeName) || %s.spec.nodeName == '' ? ' writes a ResourceSlice of node-scoped "
		"driver ' + %s.spec.driver + ' without nodeName (an allNodes, nodeSelector or per-device pool); only "
		"scope: cluster drivers may' :\n  size(variables.nodes) == 0 ? ' carries no " VAP_EXTRA_NODE_NAME " extra "
		"(a token not bound to a Pod), so it cannot write node \"' + %s.spec.nodeName + '\"\\'s slices of "
		"node-scoped driver ' + %s.spec.driver :\n  size(variables.nodes) > 1 ? ' carries ' + "
		"string(size(variables.nodes)) + ' " VAP_EXTRA_NODE_NAME " values; exactly one is expected' :\n"
		"  ' runs on node \"' + variables.nodes[0] + '\" and may write only that node\\'s slices of driver ' + "
		"%s.spec.driver + ', not node \"' + %s.spec.nodeName + '\"\\'s')", x, x, x, x, x, x, x);
}

static void rule_slice_writer_node(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel match, obj, nodes, ok, msg, moved, moved_msg;
	struct cel *all[] = { &match, &obj, &nodes, &ok, &msg, &moved, &moved_msg };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	/* Only a driver's own ServiceAccounts writing at node scope are held
	 * to a node; everyone else is slice.writer's business. */
	cel_add(&match, "[");
	node_accounts(&match, p);
	cel_add(&match, "].all(t, [" VAP_TOKEN_PODS "].all(pods, [" OBJ ".spec.driver].all(dn,\n  "
		AT_NODE_SCOPE("t", "dn", "pods") ")))");
	cel_add(&obj, OBJ);
	cel_token_nodes(&nodes);
	node_ok(&ok, "variables.obj");
	node_message(&msg, "variables.obj");
	/* An UPDATE must not take over another node's slice either. */
	cel_add(&moved, "request.operation != 'UPDATE' ||\n"
		"(has(oldObject.spec.nodeName) ? oldObject.spec.nodeName : '') == "
		"(has(object.spec.nodeName) ? object.spec.nodeName : '') || ");
	node_ok(&moved, "oldObject");
	node_message(&moved_msg, "oldObject");
	rc = first_rc(all, sizeof(all) / sizeof(all[0]));
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, RULE_SLICE_WRITER_NODE, &slice_any);
		vap_match_condition(o, "node-scoped-account", &match);
		vap_variable(o, "obj", &obj);
		vap_variable(o, "nodes", &nodes);
		vap_validation(o, RULE_SLICE_WRITER_NODE, &ok, &msg);
		vap_validation(o, RULE_SLICE_WRITER_NODE, &moved, &moved_msg);
		vap_policy_end(o, RULE_SLICE_WRITER_NODE, &slice_any);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

/* --- status.allocation.writer -------------------------------------------------------- */

#define ALLOCATED(o) "(has(" o ".status) && has(" o ".status.allocation))"
#define RESERVED_FOR(o) "(has(" o ".status) && has(" o ".status.reservedFor) ? " o ".status.reservedFor : [])"

/* The scheduler and the allocation controllers. */
static void allocator(struct cel *c, const struct policy *p)
{
	cel_add(c, "(");
	cel_user_in(c, &p->schedulers);
	cel_add(c, " || ");
	cel_user_in(c, &p->allocators);
	cel_add(c, ")");
}

static void rule_allocation_writer(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel alloc, reserved, ok, msg;
	struct cel *all[] = { &alloc, &reserved, &ok, &msg };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	cel_add(&alloc, ALLOCATED("object") " != " ALLOCATED("oldObject") " ||\n"
		"(" ALLOCATED("object") " && object.status.allocation != oldObject.status.allocation)");
	cel_add(&reserved, RESERVED_FOR("object") " != " RESERVED_FOR("oldObject"));
	cel_add(&ok, "!(variables.allocation || variables.reservedFor) || ");
	allocator(&ok, p);
	cel_add(&msg, "'[status.allocation.writer] ' + (variables.allocation ? 'status.allocation' : 'status.reservedFor') + "
		"': ' + ");
	cel_who(&msg);
	cel_add(&msg, " + ' changed ' + (variables.allocation && variables.reservedFor ? 'status.allocation and "
		"status.reservedFor' : variables.allocation ? 'status.allocation' : 'status.reservedFor') + '; only the "
		"scheduler (schedulers: %zu listed) or an allocation controller (writers.allocators) may'",
		p->schedulers.n);
	rc = first_rc(all, sizeof(all) / sizeof(all[0]));
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, RULE_STATUS_ALLOCATION_WRITER, &claim_status);
		vap_variable(o, "allocation", &alloc);
		vap_variable(o, "reservedFor", &reserved);
		vap_validation(o, RULE_STATUS_ALLOCATION_WRITER, &ok, &msg);
		vap_policy_end(o, RULE_STATUS_ALLOCATION_WRITER, &claim_status);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

/* --- status.devices.writer ------------------------------------------------------------- */

#define DEVICE_STATUSES(o) "(has(" o ".status) && has(" o ".status.devices) ? " o ".status.devices : [])"
#define SAME_KEY(a, b) "(" a ".driver == " b ".driver && " a ".pool == " b ".pool && " a ".device == " b ".device && " \
	"(has(" a ".shareID) ? " a ".shareID : '') == (has(" b ".shareID) ? " b ".shareID : ''))"
/* The node of a node-local allocation of o, as a list of one, or []:
 * one term, one matchFields entry metadata.name In [node], no
 * matchExpressions. */
#define ALLOCATED_NODE(o) \
	"(" ALLOCATED(o) " && has(" o ".status.allocation.nodeSelector) && " \
	"has(" o ".status.allocation.nodeSelector.nodeSelectorTerms) && " \
	"size(" o ".status.allocation.nodeSelector.nodeSelectorTerms) == 1 &&\n" \
	"  [" o ".status.allocation.nodeSelector.nodeSelectorTerms[0]].all(t, " \
	"(!has(t.matchExpressions) || size(t.matchExpressions) == 0) && has(t.matchFields) && size(t.matchFields) == 1 && " \
	"has(t.matchFields[0].key) && t.matchFields[0].key == 'metadata.name' && has(t.matchFields[0].operator) && " \
	"t.matchFields[0].operator == 'In' && has(t.matchFields[0].values) && size(t.matchFields[0].values) == 1) ?\n" \
	"  [" o ".status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values[0]] : [])"

/* May the user write entry e? */
#define ENTRY_OK(e) \
	"(variables.releasing || (" e ".driver in variables.sas ? " \
	"request.userInfo.username in variables.sas[" e ".driver] && (!(" e ".driver in variables.nodeScoped) || " \
	"(size(variables.claimNode) == 1 && variables.claimNode[0] != '' && size(variables.nodes) == 1 && " \
	"variables.nodes[0] == variables.claimNode[0])) : variables.mine == ''))"

/* Why the user may not write entry e (at index i, how = 'added' ...). */
#define ENTRY_WHY(e) \
	"'status.devices[' + string(i) + ']: ' + variables.who + (!(" e ".driver in variables.sas) ? " \
	"' is driver ' + variables.mine + '\\'s ServiceAccount and ' + how + ' an entry of driver ' + " e ".driver + " \
	"'; a driver may never touch another driver\\'s entries' :\n" \
	"  !(request.userInfo.username in variables.sas[" e ".driver]) ? ' ' + how + ' an entry of driver ' + " e ".driver + " \
	"' (device \"' + " e ".device + '\"); only that driver\\'s ServiceAccounts (' + " \
	"string(size(variables.sas[" e ".driver].filter(s, s != ''))) + ' listed) may' :\n" \
	"  size(variables.claimNode) == 0 || variables.claimNode[0] == '' ? ' ' + how + ' an entry of driver ' + " \
	e ".driver + ' at node scope, but the claim has no node-local allocation to tie it to (a controller writes " \
	"such claims: give its ServiceAccount scope: cluster, or controllerPods when it shares one with the plugin)' :\n" \
	"  size(variables.nodes) != 1 ? ' ' + how + ' an entry of node-scoped driver ' + " e ".driver + " \
	"' but its token carries ' + string(size(variables.nodes)) + ' " VAP_EXTRA_NODE_NAME " values (exactly one, the " \
	"claim\\'s node \"' + variables.claimNode[0] + '\", is needed)' :\n" \
	"  ' ' + how + ' an entry of driver ' + " e ".driver + ' for a claim allocated on node \"' + " \
	"variables.claimNode[0] + '\"; at node scope a driver writes only claims on its own node (a controller " \
	"writing for any node needs scope: cluster, or controllerPods naming its Pods)')"

static void rule_devices_writer(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel before, after, releasing, nodes, claim_node, sas, node_scoped, mine, who, ok, msg;
	struct cel *all[] = { &before, &after, &releasing, &nodes, &claim_node, &sas, &node_scoped, &mine,
				    &who, &ok, &msg };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	cel_add(&before, DEVICE_STATUSES("oldObject"));
	cel_add(&after, DEVICE_STATUSES("object"));
	/* Whoever releases the allocation clears the entries with it. */
	cel_add(&releasing, ALLOCATED("oldObject") " && !" ALLOCATED("object") " && ");
	allocator(&releasing, p);
	cel_token_nodes(&nodes);
	cel_add(&claim_node, "[" ALLOCATED_NODE("object") "].map(n, size(n) == 1 ? n : " ALLOCATED_NODE("oldObject") ")[0]");
	driver_accounts(&sas, p);
	/* The drivers whose entries the user writes at node scope. */
	cel_add(&node_scoped, "[");
	node_accounts(&node_scoped, p);
	cel_add(&node_scoped, "].map(t, [" VAP_TOKEN_PODS "].map(pods, t.filter(dn,\n  "
		AT_NODE_SCOPE("t", "dn", "pods") "))[0])[0]");
	/* The listed driver whose ServiceAccount the user is, or ''. */
	cel_add(&mine, "[variables.sas.filter(dn, request.userInfo.username in variables.sas[dn]).sort()].map(v, "
		"size(v) == 0 ? '' : v[0])[0]");
	cel_who(&who);
	/* Added or changed entries are those of after with no equal entry in
	 * before; removed ones, those of before whose key is gone. */
	cel_add(&ok, "variables.after.all(e, variables.before.exists(b, b == e) || " ENTRY_OK("e") ") &&\n"
		"variables.before.all(b, variables.after.exists(e, " SAME_KEY("b", "e") ") || " ENTRY_OK("b") ")");
	cel_add(&msg, "[variables.after.transformList(i, e, !variables.before.exists(b, b == e) && !" ENTRY_OK("e") ",\n"
		"  [variables.before.exists(b, " SAME_KEY("b", "e") ") ? 'changed' : 'added'].map(how, " ENTRY_WHY("e") ")[0]) +\n"
		" variables.before.transformList(i, e, !variables.after.exists(a, " SAME_KEY("e", "a") ") && !" ENTRY_OK("e") ",\n"
		"  ['removed'].map(how, " ENTRY_WHY("e") ")[0])]");
	cel_add(&msg, ".map(v, size(v) == 0 ? '' : '[status.devices.writer] ' + v[0] + "
		"(size(v) > 1 ? ' (and ' + string(size(v) - 1) + ' more)' : ''))[0]");
	rc = first_rc(all, sizeof(all) / sizeof(all[0]));
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, RULE_STATUS_DEVICES_WRITER, &claim_status);
		vap_variable(o, "before", &before);
		vap_variable(o, "after", &after);
		vap_variable(o, "releasing", &releasing);
		vap_variable(o, "nodes", &nodes);
		vap_variable(o, "claimNode", &claim_node);
		vap_variable(o, "sas", &sas);
		vap_variable(o, "nodeScoped", &node_scoped);
		vap_variable(o, "mine", &mine);
		vap_variable(o, "who", &who);
		vap_validation(o, RULE_STATUS_DEVICES_WRITER, &ok, &msg);
		vap_policy_end(o, RULE_STATUS_DEVICES_WRITER, &claim_status);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

/* --- status.pod.writer -------------------------------------------------------------------- */

#define CLAIM_STATUSES(o) "(has(" o ".status) && has(" o ".status.nodeAllocatableResourceClaimStatuses) ? " \
	o ".status.nodeAllocatableResourceClaimStatuses : [])"

static void rule_pod_writer(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel changed, ok, msg;
	struct cel *all[] = { &changed, &ok, &msg };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_init(all[i]);
	/* Absent and empty mean the same to the scheduler. */
	cel_add(&changed, CLAIM_STATUSES("object") " != " CLAIM_STATUSES("oldObject"));
	cel_user_in(&ok, &p->schedulers);
	cel_add(&msg, "'[status.pod.writer] status.nodeAllocatableResourceClaimStatuses: ' + ");
	cel_who(&msg);
	cel_add(&msg, " + ' changed the node-allocatable amounts the scheduler accounts for this Pod (' + "
		"string(size(" CLAIM_STATUSES("oldObject") ")) + ' entries before, ' + "
		"string(size(" CLAIM_STATUSES("object") ")) + ' after); only the scheduler (schedulers: %zu listed) "
		"writes them, in PreBind, and clears them on Unreserve'", p->schedulers.n);
	rc = first_rc(all, sizeof(all) / sizeof(all[0]));
	if (rc) {
		vap_fail(o, rc);
	} else {
		vap_policy_begin(o, RULE_STATUS_POD_WRITER, &pod_status);
		vap_match_condition(o, "claim-statuses-changed", &changed);
		vap_validation(o, RULE_STATUS_POD_WRITER, &ok, &msg);
		vap_policy_end(o, RULE_STATUS_POD_WRITER, &pod_status);
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cel_free(all[i]);
}

void vap_access_rule(struct vap_out *o, enum rule_id id)
{
	switch (id) {
	case RULE_SLICE_WRITER: rule_slice_writer(o); break;
	case RULE_SLICE_WRITER_NODE: rule_slice_writer_node(o); break;
	case RULE_STATUS_ALLOCATION_WRITER: rule_allocation_writer(o); break;
	case RULE_STATUS_DEVICES_WRITER: rule_devices_writer(o); break;
	case RULE_STATUS_POD_WRITER: rule_pod_writer(o); break;
	default: break;
	}
}
