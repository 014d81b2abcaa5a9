/* vap.c - which rules a ValidatingAdmissionPolicy can carry, and the YAML
 * stream of those that can.
 *
 * A rule is expressed when it reads nothing but the request; where CEL
 * cannot reach the engine's exact answer the policy stays silent rather
 * than deny (a false denial is an outage), and the reason is written here,
 * once, for vap --explain and the docs. */
#include "vap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vap_impl.h"

/* Each rule a policy can carry, and what no policy of it expresses whatever
 * the policy document says (NULL: nothing). A rule missing here has no
 * policy ("none"): a rule added to the engine is not claimed before its
 * policy is written. */
struct expressed {
	bool yes;
	const char *gap;
};

static const struct expressed expressed[RULE_COUNT] = {
	[RULE_SLICE_MAPPING_MULTIPLIER] = { true,
		"a multiplier that is not a quantity never reaches admission (the API server's decoder refuses it), "
		"and one too large for the engine to hold exactly (more than 38 digits) is refused by the engine "
		"alone; the policy judges the sign of every multiplier the API server accepts" },
	[RULE_SLICE_MAPPING_CAPACITY_KEY] = { true, NULL },
	[RULE_SLICE_MAPPING_EMPTY] = { true, NULL },
	[RULE_SLICE_MAPPING_NAME] = { true,
		"a hugepages size of 2^53 bytes or more is taken as valid without checking it is a whole number "
		"(CEL's exact test ends there)" },
	[RULE_SLICE_MAPPING_SHAREABLE] = { true, NULL },
	[RULE_SLICE_MAPPING_UNITS] = { true,
		"amounts of 2^53 or more (cpu: 4*10^12 cores or more) are not judged: CEL has no exact test there; "
		"capacity mode: CEL's quantities cannot multiply, so an amount a claim can consume times the "
		"multiplier is judged only when both are whole numbers below 2^53 or whole numbers of millis below "
		"4*10^12 (a hugepage product also below 2^63 bytes, or both whole and the page below 3*10^9 bytes), "
		"and a validRange.step is followed only where the same holds of it; any other amount is not judged" },
	[RULE_SLICE_MAPPING_UNITS_OPEN] = { true,
		"the multiplier alone is judged as slice.mapping.units judges one of device-count mode: amounts of "
		"2^53 or more are not judged" },
	[RULE_SLICE_MAPPING_BOUNDS] = { true,
		"capacity mode: CEL's quantities cannot multiply, so the most one allocation can consume times the "
		"multiplier is judged exactly only when the multiplier is 1, when either factor alone is over the max "
		"and the other at least 1, or when both are whole numbers below 2^53 or one is whole and the other a "
		"whole number of millis; the top of a validRange.step lattice is worked out only when min, step and "
		"the top are whole numbers below 2^53 or whole numbers of millis below 4*10^12; any other product is "
		"not judged" },
	[RULE_SLICE_DRIVER] = { true, NULL },
	[RULE_SLICE_CANARY] = { true, NULL },
	[RULE_SLICE_GENERATION_REGRESS] = { true, NULL },
	[RULE_SLICE_MAPPING_UNVERSIONED] = { true, NULL },
	[RULE_SLICE_SHAPE_FUTURE] = { true, NULL },
	[RULE_SLICE_WRITER] = { true, NULL },
	[RULE_SLICE_WRITER_NODE] = { true, NULL },
	[RULE_CLAIM_FREEZE_CREATE] = { true,
		"the policy is frozen while the ConfigMap's freeze key says true; a value the loader refuses (the "
		"policy webhook keeps one out while the guard is up) leaves the webhook on its last good policy, "
		"frozen or not, and this policy unfrozen; with freeze.gatePods, a claim the resource-claim "
		"controller (writers.allocators) makes for a Pod (its pod-claim-name annotation and controller "
		"reference) passes, where the webhook also asks the cluster view whether that Pod is held at the "
		"gate; UPDATEs that add or take away that annotation or reference during a freeze are the "
		"webhook's alone" },
	[RULE_CLAIM_FREEZE_ALLOCATE] = { true,
		"the policy is frozen while the ConfigMap's freeze key says true; a value the loader refuses (the "
		"policy webhook keeps one out while the guard is up) leaves the webhook on its last good policy, "
		"frozen or not, and this policy unfrozen" },
	[RULE_STATUS_ALLOCATION_WRITER] = { true, NULL },
	[RULE_STATUS_DEVICES_WRITER] = { true, NULL },
	[RULE_STATUS_POD_WRITER] = { true, NULL },
};

/* Why the rules no policy can carry have none. */
static const char *const inexpressible[RULE_COUNT] = {
	[RULE_SLICE_MAPPING_SCHEMA] =
		"the API server drops unknown fields and fields of other API versions, and turns a null entry into "
		"an empty one that it defaults, before any admission check: neither a policy nor the webhook ever "
		"sees what this rule judges (dry-run does)",
	[RULE_POLICY_INVALID] =
		"needs the policy loader: the ConfigMap's policy.yaml is a YAML document that CEL cannot parse",
	[RULE_CLAIM_FREEZE_GATE] =
		"not written yet: the gate exists only with manifests/gate-pods, and the write that may remove it "
		"during a freeze is the guard's own (serve --self-user), which the policy document does not name",
};

/* Why a rule that reads the cluster view has none. */
static const char *const reads_view =
	"reads the cluster view (the pools, slices, claims, Pods and Nodes the guard watches): an admission "
	"policy sees only the request, so the rule stays with the webhook";

/* Why a rule has no policy when it has no reason of its own. */
static const char *const not_written = "dra-guard vap writes no policy for this rule yet";

static const char *const canary_untranslated =
	"a canary.nodes glob uses syntax that is not translated exactly into a regular expression (characters "
	"other than letters, digits, '.', '_', ':', '-' and the operators * ? [...], a backslash, an equivalence "
	"or collating class, a reversed range): no policy is written for slice.canary";

static const char *const controller_pods_untranslated =
	"a controllerPods glob uses syntax that is not translated exactly into a regular expression (as for "
	"canary.nodes): no policy is written for the rules that tell a controller's token from a plugin's";

static bool any_max(const struct policy *p)
{
	size_t i, j;

	for (i = 0; i < p->ndrivers; i++)
		for (j = 0; j < p->drivers[i].nresources; j++)
			if (p->drivers[i].resources[j].has_max)
				return true;
	return false;
}

/* Some ServiceAccount writes at node scope. */
static bool any_node_scope(const struct policy *p)
{
	size_t i, j;

	for (i = 0; i < p->ndrivers; i++)
		for (j = 0; j < p->drivers[i].naccounts; j++)
			if (p->drivers[i].accounts[j].scope == DRIVER_SCOPE_NODE)
				return true;
	return false;
}

/* Every controllerPods list translates into a regular expression. */
static bool controller_pods_translate(const struct policy *p)
{
	struct buf re;
	size_t i, j;
	bool ok = true;

	buf_init(&re, VAP_EXPR_MAX);
	for (i = 0; ok && i < p->ndrivers; i++)
		for (j = 0; ok && j < p->drivers[i].naccounts; j++) {
			const struct service_account_policy *sa = &p->drivers[i].accounts[j];

			buf_reset(&re);
			if (sa->scope == DRIVER_SCOPE_NODE && sa->controller_pods.n &&
			    vap_glob_regex(&sa->controller_pods, &re) != 0)
				ok = false;
		}
	buf_free(&re);
	return ok;
}

void vap_rule_info(const struct policy *p, enum rule_id id, struct vap_rule_info *out)
{
	if ((unsigned)id >= RULE_COUNT || !expressed[id].yes) {
		out->coverage = VAP_NONE;
		out->why = (unsigned)id >= RULE_COUNT ? not_written : inexpressible[id] ? inexpressible[id]
			   : rule_reads_view(id) ? reads_view : not_written;
		return;
	}
	out->coverage = expressed[id].gap ? VAP_PARTIAL : VAP_FULL;
	out->why = expressed[id].gap;
	switch (id) {
	case RULE_SLICE_MAPPING_BOUNDS:
		if (!any_max(p)) {
			out->coverage = VAP_IDLE;
			out->why = "no driver in the policy has a max for any resource";
		}
		break;
	case RULE_SLICE_DRIVER:
	case RULE_SLICE_WRITER:
		if (!p->has_drivers) {
			out->coverage = VAP_IDLE;
			out->why = "the policy lists no drivers";
		}
		break;
	case RULE_STATUS_DEVICES_WRITER:
		if (!p->has_drivers) {
			out->coverage = VAP_IDLE;
			out->why = "the policy lists no drivers";
		} else if (!controller_pods_translate(p)) {
			out->coverage = VAP_NONE;
			out->why = controller_pods_untranslated;
		}
		break;
	case RULE_SLICE_WRITER_NODE:
		if (!any_node_scope(p)) {
			out->coverage = VAP_IDLE;
			out->why = "the policy lists no ServiceAccount that writes at scope node";
		} else if (!controller_pods_translate(p)) {
			out->coverage = VAP_NONE;
			out->why = controller_pods_untranslated;
		}
		break;
	case RULE_SLICE_CANARY:
		if (!p->has_canary) {
			out->coverage = VAP_IDLE;
			out->why = "the policy names no canary nodes";
		} else {
			struct buf re;

			buf_init(&re, VAP_EXPR_MAX);
			if (vap_glob_regex(&p->canary_nodes, &re) != 0) {
				out->coverage = VAP_NONE;
				out->why = canary_untranslated;
			}
			buf_free(&re);
		}
		break;
	default:
		break;
	}
}

const char *vap_coverage_name(enum vap_coverage c)
{
	switch (c) {
	case VAP_FULL: return "full";
	case VAP_PARTIAL: return "partial";
	case VAP_NONE: return "none";
	case VAP_IDLE: return "idle";
	}
	return "none";
}

void vap_object_name(enum rule_id id, char buf[VAP_NAME_MAX])
{
	snprintf(buf, VAP_NAME_MAX, "dra-guard.%s", rule_name(id));
}

/* The rules slice_rules.c judges with check.preexisting set for what an
 * UPDATE leaves unchanged: every per-mapping rule, slice.driver and
 * slice.canary. */
static bool ratcheted(enum rule_id id)
{
	switch (id) {
	case RULE_SLICE_MAPPING_MULTIPLIER:
	case RULE_SLICE_MAPPING_CAPACITY_KEY:
	case RULE_SLICE_MAPPING_EMPTY:
	case RULE_SLICE_MAPPING_NAME:
	case RULE_SLICE_MAPPING_SCHEMA:
	case RULE_SLICE_MAPPING_SHAREABLE:
	case RULE_SLICE_MAPPING_UNITS:
	case RULE_SLICE_MAPPING_UNITS_OPEN:
	case RULE_SLICE_MAPPING_BOUNDS:
	case RULE_SLICE_DRIVER:
	case RULE_SLICE_CANARY:
	case RULE_SLICE_SHAPE_FUTURE:
		return true;
	default:
		return false;
	}
}

bool vap_rule_ratchets(const struct policy *p, enum rule_id id)
{
	struct vap_rule_info info;

	if ((unsigned)id >= RULE_COUNT || !ratcheted(id) || policy_action(p, id) != ACTION_DENY)
		return false;
	vap_rule_info(p, id, &info);
	return info.coverage == VAP_FULL || info.coverage == VAP_PARTIAL;
}

int vap_render(const struct policy *p, const struct vap_options *opt, struct buf *out)
{
	struct vap_out o = { out, p, opt, 0, 0, false, false, NULL };
	size_t before = buf_len(out);
	struct vap_rule_info info;
	int id;

	if (!opt->param_name.len || !opt->param_namespace.len)
		return -EINVAL;
	if (before > VAP_OUTPUT_MAX)
		return -E2BIG;
	vap_fail(&o, buf_printf(out,
		"# ValidatingAdmissionPolicies for the stateless rules of the dra-guard policy %.12s,\n"
		"# written by dra-guard vap. Write them again after every change of policy.yaml; the\n"
		"# freeze is read at admission time from ConfigMap %.*s/%.*s.\n"
		"# dra-guard vap --explain lists the rules that are not expressed, and why.\n",
		p->hash, STR_FMT(opt->param_namespace), STR_FMT(opt->param_name)));
	for (id = 0; id < RULE_COUNT && !o.rc; id++) {
		vap_rule_info(p, (enum rule_id)id, &info);
		if (info.coverage == VAP_NONE || info.coverage == VAP_IDLE)
			continue;
		o.ratchet = vap_rule_ratchets(p, (enum rule_id)id);
		vap_slice_rule(&o, (enum rule_id)id);
		vap_access_rule(&o, (enum rule_id)id);
		vap_freeze_rule(&o, (enum rule_id)id);
		if (!o.rc && buf_len(out) - before > VAP_OUTPUT_MAX)
			o.rc = -E2BIG;
	}
	return o.rc;
}
