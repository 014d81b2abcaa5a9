/* vap_slice.c - the slice.* rules that read only the ResourceSlice (and, on
 * UPDATE, the slice it replaces), as ValidatingAdmissionPolicies.
 *
 * The objects a policy sees are the API server's: resource.k8s.io/v1 (a
 * request in v1beta1 or v1beta2 is converted, matchPolicy Equivalent), with
 * allocationMultiplier defaulted to "1" and quantities in their canonical
 * spelling. Paths in messages are therefore v1 paths. Each per-mapping rule
 * mirrors its function in slice_rules.c; where CEL cannot reach the same
 * answer exactly it stays silent (vap.c says where). */
#include "vap_impl.h"

#include <stdio.h>

static const struct vap_match slice_write = {
	"resource.k8s.io", "resourceslices", "[CREATE, UPDATE]", false, false
};

static const struct vap_match slice_update = {
	"resource.k8s.io", "resourceslices", "[UPDATE]", false, false
};

/* Every slice policy reads spec.devices; a slice of shared counters has
 * none. A match condition costs the API server another conversion of the
 * object (and on UPDATE of the old one) for every policy, which for the
 * largest slice is most of what it spends: the chunk scans test for the
 * devices themselves, and only slice.mapping.unversioned, which matches
 * few requests, keeps it as a match condition. */
static void has_devices(struct vap_out *o)
{
	struct cel c;

	cel_init(&c);
	cel_add(&c, "has(object.spec.devices)");
	vap_match_condition(o, "has-devices", &c);
	cel_free(&c);
}

/* The multiplier as the engine's unit_amount() reads it: absent is 1. */
#define UNIT_USABLE "(!has(m.allocationMultiplier) || (isQuantity(m.allocationMultiplier) && " \
	"sign(quantity(m.allocationMultiplier)) > 0))"
#define UNIT "(has(m.allocationMultiplier) ? quantity(m.allocationMultiplier) : variables.one)"
#define UNIT_TEXT "(has(m.allocationMultiplier) ? m.allocationMultiplier : '1')"

/* A rule judged on every mapping, with its bad condition and message. */
static void mapping_rule(struct vap_out *o, enum rule_id id, bool constants, const char *bad, const char *msg)
{
	vap_policy_begin(o, id, &slice_write);
	if (constants)
		vap_quantity_constants(o);
	vap_mapping_chunks(o, id, bad, msg);
	vap_policy_end(o, id, &slice_write);
}

/* --- slice.mapping.multiplier, capacity-key, empty, name, shareable, shape.future --- */

static void rule_multiplier(struct vap_out *o)
{
	/* A multiplier that is not a quantity never reaches admission: the
	 * API server's decoder refuses it. */
	mapping_rule(o, RULE_SLICE_MAPPING_MULTIPLIER, false,
		     "has(m.allocationMultiplier) && isQuantity(m.allocationMultiplier) && "
		     "sign(quantity(m.allocationMultiplier)) <= 0",
		     VAP_MAPPING_PATH " + '.allocationMultiplier: \"' + m.allocationMultiplier + "
		     "'\" must be greater than zero'");
}

static void rule_capacity_key(struct vap_out *o)
{
	mapping_rule(o, RULE_SLICE_MAPPING_CAPACITY_KEY, false,
		     "has(m.capacityKey) && (m.capacityKey == '' || !has(d.capacity) || !(m.capacityKey in d.capacity))",
		     VAP_MAPPING_PATH " + '.capacityKey: ' + (m.capacityKey == '' ? "
		     "'must not be empty; name a capacity of device \"' + d.name + '\"' : "
		     "'\"' + m.capacityKey + '\" is not a capacity of device \"' + d.name + '\" (its capacities: ' + "
		     "(has(d.capacity) && size(d.capacity) > 0 ? d.capacity.map(c, c).sort().join(', ') : 'none') + ')')");
}

static void rule_empty(struct vap_out *o)
{
	mapping_rule(o, RULE_SLICE_MAPPING_EMPTY, false,
		     "!has(m.allocationMultiplier) && !has(m.capacityKey)",
		     VAP_MAPPING_PATH " + ': neither allocationMultiplier nor capacityKey is set, so each allocated "
		     "device maps 1 ' + k + ' only because the API server defaults the multiplier; set it explicitly'");
}

static void rule_mapping_name(struct vap_out *o)
{
	struct cel bad;

	cel_init(&bad);
	cel_add(&bad, "!");
	cel_name_ok(&bad);
	if (bad.rc)
		vap_fail(o, bad.rc);
	else
		mapping_rule(o, RULE_SLICE_MAPPING_NAME, true, cel_text(&bad),
			     VAP_MAPPING_PATH " + ': \"' + k + '\" is not a node resource the scheduler accounts "
			     "(accepted: cpu, memory, ephemeral-storage, hugepages-<size> (e.g. hugepages-2Mi))'");
	cel_free(&bad);
}

static void rule_shareable(struct vap_out *o)
{
	mapping_rule(o, RULE_SLICE_MAPPING_SHAREABLE, false,
		     "has(m.capacityKey) && !(has(d.allowMultipleAllocations) && d.allowMultipleAllocations)",
		     VAP_MAPPING_PATH " + '.capacityKey: capacityKey \"' + m.capacityKey + '\" needs device \"' + "
		     "d.name + '\" to set allowMultipleAllocations: true (only such devices report consumedCapacity; "
		     "the scheduler fails at allocation time)'");
}

static void rule_shape_future(struct vap_out *o)
{
	mapping_rule(o, RULE_SLICE_SHAPE_FUTURE, false, "k == 'ephemeral-storage'",
		     VAP_MAPPING_PATH " + ': Kubernetes 1.37 drops ephemeral-storage from node-allocatable mappings'");
}

/* --- slice.mapping.units ------------------------------------------------------------- */

/* Amount x (a quantity expression over k and m, > 0) of the resource k
 * cannot be real. Names that are not node resources are
 * slice.mapping.name's; a hugepages size is read as the name rule reads it.
 * Silent where the exact tests cannot tell (amounts of 2^53 or more; cpu of
 * 4e12 or more). The usual case, an amount that is real, is settled by one
 * exact test; the others are worked out only when it fails. */
static void units_bad(struct cel *c, const char *x)
{
	cel_add(c, "k == 'cpu' ? %s.isLessThan(variables.milli) && !", x);
	cel_is_milli(c, x);
	cel_add(c, " :\n    (k == 'memory' || k == 'ephemeral-storage') ? %s.isLessThan(variables.whole) && !", x);
	cel_is_whole(c, x);
	cel_add(c, " :\n    k.startsWith('hugepages-') && size(k) > 10 && isQuantity(k.substring(10)) && "
		"%s.isLessThan(variables.whole) &&\n    !", x);
	cel_is_multiple(c, x, VAP_PAGE);
	cel_add(c, " && ");
	cel_page_ok(c, VAP_PAGE);
	cel_add(c, " &&\n    (!");
	cel_is_whole(c, x);
	cel_add(c, " || " VAP_PAGE ".isLessThan(variables.whole))");
}

/* Why, for an amount units_bad() holds for. */
static void units_why(struct cel *c, const char *x)
{
	cel_add(c, "(k == 'cpu' ? 'cpu is accounted in whole millicores (1m); this is finer' : "
		"k == 'memory' || k == 'ephemeral-storage' || !");
	cel_is_whole(c, x);
	cel_add(c, " ? 'this is a fractional number of bytes' : 'this is not a whole number of pages of the hugepage size')");
}

/* Device-count mode judges the multiplier, the amount per device; capacity
 * mode every amount one allocation can consume times it (vap_capacity.c). */
static void rule_units(struct vap_out *o)
{
	struct cel test, why, cap, msgs;

	cel_init(&test);
	cel_init(&why);
	cel_init(&cap);
	cel_init(&msgs);
	units_bad(&test, VAP_AMOUNT);
	units_why(&why, VAP_AMOUNT);
	vap_capacity_units_msgs(&cap);
	cel_add(&msgs, "has(m.capacityKey) ? (%s) :\n"
		"has(m.allocationMultiplier) && isQuantity(m.allocationMultiplier) && sign(" VAP_AMOUNT ") > 0 &&\n"
		"    (%s) ?\n  [" VAP_MAPPING_PATH " + '.allocationMultiplier: the amount per device \"' + "
		"m.allocationMultiplier + '\" of ' + k + ' cannot be real: ' + %s] : []", cel_text(&cap), cel_text(&test),
		cel_text(&why));
	if (test.rc || why.rc || cap.rc || msgs.rc) {
		vap_fail(o, test.rc ? test.rc : why.rc ? why.rc : cap.rc ? cap.rc : msgs.rc);
	} else {
		vap_policy_begin(o, RULE_SLICE_MAPPING_UNITS, &slice_write);
		vap_quantity_constants(o);
		vap_mapping_chunk_lists(o, RULE_SLICE_MAPPING_UNITS, cel_text(&msgs));
		vap_policy_end(o, RULE_SLICE_MAPPING_UNITS, &slice_write);
	}
	cel_free(&test);
	cel_free(&why);
	cel_free(&cap);
	cel_free(&msgs);
}

/* --- slice.mapping.units.open ---------------------------------------------------------- */

static void rule_units_open(struct vap_out *o)
{
	struct cel test, why, bad, msg;

	cel_init(&test);
	cel_init(&why);
	cel_init(&bad);
	cel_init(&msg);
	cel_add(&test, UNIT_USABLE " && (");
	units_bad(&test, UNIT);
	cel_add(&test, ")");
	units_why(&why, UNIT);
	vap_units_open_bad(&bad, cel_text(&test));
	vap_units_open_msg(&msg, cel_text(&why));
	if (test.rc || why.rc || bad.rc || msg.rc)
		vap_fail(o, test.rc ? test.rc : why.rc ? why.rc : bad.rc ? bad.rc : msg.rc);
	else
		mapping_rule(o, RULE_SLICE_MAPPING_UNITS_OPEN, true, cel_text(&bad), cel_text(&msg));
	cel_free(&test);
	cel_free(&why);
	cel_free(&bad);
	cel_free(&msg);
}

/* --- slice.mapping.bounds ------------------------------------------------------------- */

/* a * b (CEL ints) with the given quantity suffix is more than top; a
 * product past int64 is more than any top below it. */
static void product_over(struct cel *c, const char *a, const char *b, const char *suffix)
{
	cel_add(c, "[%s].exists(a, [%s].exists(b, a <= 9223372036854775807 / b ? "
		"quantity(string(a * b) + '%s').isGreaterThan(top) : top.isLessThan(quantity('9223372036854775807%s'))))",
		a, b, suffix, suffix);
}

/* capacity c times multiplier u is certainly more than top. Exact when u
 * is 1, when either factor alone is over top and the other at least 1, or
 * when both are whole, or one is whole and the other a whole number of
 * millis (below 2^53, 4e12); otherwise silent: CEL's quantities cannot
 * multiply. */
static void capacity_over(struct cel *c)
{
	/* c x u >= c when u >= 1, and >= u when c >= 1: either factor alone
	 * over the bound settles it, however large the product. */
	cel_add(c, "sign(c) >= 0 && (u.compareTo(variables.one) == 0 ? c.isGreaterThan(top) :\n"
		"      (!u.isLessThan(variables.one) && c.isGreaterThan(top)) || "
		"(!c.isLessThan(variables.one) && u.isGreaterThan(top)) ? true :\n      (");
	cel_is_whole(c, "c");
	cel_add(c, " && ");
	cel_is_whole(c, "u");
	cel_add(c, ") ? ");
	product_over(c, "int(c.asApproximateFloat() + 0.5)", "int(u.asApproximateFloat() + 0.5)", "");
	cel_add(c, " :\n      (");
	cel_is_whole(c, "c");
	cel_add(c, " && ");
	cel_is_milli(c, "u");
	cel_add(c, ") ? ");
	product_over(c, "int(c.asApproximateFloat() + 0.5)", "int(u.asApproximateFloat() * 1000.0 + 0.5)", "m");
	cel_add(c, " :\n      (");
	cel_is_milli(c, "c");
	cel_add(c, " && ");
	cel_is_whole(c, "u");
	cel_add(c, ") ? ");
	product_over(c, "int(c.asApproximateFloat() * 1000.0 + 0.5)", "int(u.asApproximateFloat() + 0.5)", "m");
	cel_add(c, " : false)");
}

/* table: {'driver': {'cpu': '64', ...}, ...} for the drivers with any
 * max; names: the list of those drivers. */
static void max_table(struct cel *table, struct cel *names, const struct policy *p)
{
	size_t i, j;
	bool first_driver = true;

	cel_add(table, "{");
	cel_add(names, "[");
	for (i = 0; i < p->ndrivers; i++) {
		const struct driver_policy *d = &p->drivers[i];
		bool first = true;

		for (j = 0; j < d->nresources; j++) {
			char text[QUANTITY_STR_MAX];

			if (!d->resources[j].has_max)
				continue;
			if (first) {
				cel_add(table, "%s", first_driver ? "" : ", ");
				cel_str(table, d->name);
				cel_add(table, ": {");
				cel_add(names, "%s", first_driver ? "" : ", ");
				cel_str(names, d->name);
				first_driver = false;
			}
			quantity_format(&d->resources[j].max, text);
			cel_add(table, "%s", first ? "" : ", ");
			cel_str(table, d->resources[j].name);
			cel_add(table, ": ");
			cel_cstr(table, text);
			first = false;
		}
		if (!first)
			cel_add(table, "}");
	}
	cel_add(table, "}");
	cel_add(names, "]");
}

static void rule_bounds(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel match, table, over, cap, msgs;

	cel_init(&match);
	cel_init(&table);
	cel_init(&over);
	cel_init(&cap);
	cel_init(&msgs);
	cel_add(&match, "object.spec.driver in ");
	max_table(&table, &match, p);
	capacity_over(&over);
#define OVER_TAIL "' of ' + k + ' is over driver ' + object.spec.driver + '\\'s max of ' + variables.max[k]"
	vap_capacity_bounds_msgs(&cap, cel_text(&over), OVER_TAIL);
	cel_add(&msgs, "k in variables.max && " UNIT_USABLE " ?\n    [quantity(variables.max[k])].map(top,\n"
		"    !has(m.capacityKey) ? (" UNIT ".isGreaterThan(top) ? [" VAP_MAPPING_PATH " + '.allocationMultiplier: "
		"one allocation maps ' + " UNIT_TEXT " + " OVER_TAIL "] : []) :\n    %s)[0] : []", cel_text(&cap));
#undef OVER_TAIL
	if (match.rc || table.rc || over.rc || cap.rc || msgs.rc) {
		vap_fail(o, match.rc ? match.rc : table.rc ? table.rc : over.rc ? over.rc : cap.rc ? cap.rc : msgs.rc);
	} else {
		vap_policy_begin(o, RULE_SLICE_MAPPING_BOUNDS, &slice_write);
		vap_quantity_constants(o);
		/* The driver's bounds, or none (a driver without any). */
		cel_add(&match, " ? ");
		cel_add(&match, "%s[object.spec.driver] : {}", cel_text(&table));
		vap_variable(o, "max", &match);
		vap_mapping_chunk_lists(o, RULE_SLICE_MAPPING_BOUNDS, cel_text(&msgs));
		vap_policy_end(o, RULE_SLICE_MAPPING_BOUNDS, &slice_write);
	}
	cel_free(&match);
	cel_free(&table);
	cel_free(&over);
	cel_free(&cap);
	cel_free(&msgs);
}

/* --- slice.driver ---------------------------------------------------------------------- */

static void rule_driver(struct vap_out *o)
{
	const struct policy *p = o->p;
	struct cel listed, listed_msg, res;
	bool any_resources = false;
	size_t i;

	cel_init(&listed);
	cel_init(&listed_msg);
	cel_init(&res);
	cel_add(&listed, "!(" VAP_SLICE_HAS_MAPPINGS ") || object.spec.driver in [");
	for (i = 0; i < p->ndrivers; i++) {
		cel_add(&listed, "%s", i ? ", " : "");
		cel_str(&listed, p->drivers[i].name);
	}
	cel_add(&listed, "]");
	cel_add(&listed_msg, "'[slice.driver] spec.driver: driver \"' + object.spec.driver + '\" is not listed in "
		"the policy\\'s drivers, so it may not publish node-allocatable mappings (%zu drivers are listed)'",
		p->ndrivers);
	cel_add(&res, "{");
	for (i = 0; i < p->ndrivers; i++) {
		const struct driver_policy *d = &p->drivers[i];
		size_t j;

		if (!d->has_resources)
			continue;
		cel_add(&res, "%s", any_resources ? ", " : "");
		cel_str(&res, d->name);
		cel_add(&res, ": {");
		for (j = 0; j < d->nresources; j++) {
			cel_add(&res, "%s", j ? ", " : "");
			cel_str(&res, d->resources[j].name);
			cel_add(&res, ": true");
		}
		cel_add(&res, "}");
		any_resources = true;
	}
	cel_add(&res, "}");
	vap_policy_begin(o, RULE_SLICE_DRIVER, &slice_write);
	vap_slice_unchanged(o);
	if (any_resources)
		vap_variable(o, "resources", &res);
	if (any_resources)
		vap_mapping_chunks(o, RULE_SLICE_DRIVER,
				   "object.spec.driver in variables.resources && !(k in variables.resources[object.spec.driver])",
				   VAP_MAPPING_PATH " + ': driver \"' + object.spec.driver + '\" may not map ' + k + "
				   "' (the policy allows it ' + string(size(variables.resources[object.spec.driver])) + "
				   "' resources)'");
	vap_slice_validation(o, RULE_SLICE_DRIVER, &listed, &listed_msg);
	vap_policy_end(o, RULE_SLICE_DRIVER, &slice_write);
	cel_free(&listed);
	cel_free(&listed_msg);
	cel_free(&res);
}

/* --- slice.canary ---------------------------------------------------------------------- */

static void rule_canary(struct vap_out *o)
{
	struct buf re;
	struct cel slice, slice_msg, bad, msg;
	int rc;

	buf_init(&re, VAP_EXPR_MAX);
	cel_init(&slice);
	cel_init(&slice_msg);
	cel_init(&bad);
	cel_init(&msg);
	rc = vap_glob_regex(&o->p->canary_nodes, &re);
	if (rc) {
		/* vap_rule_info() leaves such a policy out; reaching here is a bug. */
		vap_fail(o, rc);
		goto out;
	}
	cel_add(&slice, "!(" VAP_SLICE_HAS_MAPPINGS ") ||\n"
		"(has(object.spec.perDeviceNodeSelection) && object.spec.perDeviceNodeSelection) ||\n"
		"(has(object.spec.nodeName) && object.spec.nodeName != '' && object.spec.nodeName.matches(");
	cel_str(&slice, (struct str){ buf_cstr(&re), buf_len(&re) });
	cel_add(&slice, "))");
	cel_add(&slice_msg, "'[slice.canary] spec.nodeName: ' + (!has(object.spec.nodeName) || object.spec.nodeName == '' ? "
		"'the slice has no nodeName (a nodeSelector or allNodes pool), but mappings are allowed only on "
		"canary nodes' : 'node \"' + object.spec.nodeName + '\" is not a canary node, so its slices may not carry "
		"mappings yet (canary.nodes lists %zu patterns)')", o->p->canary_nodes.n);
	cel_add(&bad, "has(object.spec.perDeviceNodeSelection) && object.spec.perDeviceNodeSelection &&\n"
		"  has(d.nodeAllocatableResourceMappings) && size(d.nodeAllocatableResourceMappings) > 0 &&\n"
		"  !(has(d.nodeName) && d.nodeName != '' && d.nodeName.matches(");
	cel_str(&bad, (struct str){ buf_cstr(&re), buf_len(&re) });
	cel_add(&bad, "))");
	cel_add(&msg, "'spec.devices[' + string(i) + '].nodeName: ' + (has(d.nodeName) && d.nodeName != '' ? "
		"'node \"' + d.nodeName + '\" is not a canary node, so device \"' + d.name + '\" may not carry mappings yet' : "
		"'device \"' + d.name + '\" has no nodeName, but mappings are allowed only on canary nodes')");
	if (slice.rc || slice_msg.rc || bad.rc || msg.rc) {
		vap_fail(o, slice.rc ? slice.rc : slice_msg.rc ? slice_msg.rc : bad.rc ? bad.rc : msg.rc);
		goto out;
	}
	vap_policy_begin(o, RULE_SLICE_CANARY, &slice_write);
	vap_slice_unchanged(o);
	vap_device_chunks(o, RULE_SLICE_CANARY, cel_text(&bad), cel_text(&msg));
	vap_slice_validation(o, RULE_SLICE_CANARY, &slice, &slice_msg);
	vap_policy_end(o, RULE_SLICE_CANARY, &slice_write);
out:
	buf_free(&re);
	cel_free(&slice);
	cel_free(&slice_msg);
	cel_free(&bad);
	cel_free(&msg);
}

/* --- slice.generation.regress, slice.mapping.unversioned (UPDATE) -------------------------- */

static void rule_generation_regress(struct vap_out *o)
{
	struct cel e, m;

	cel_init(&e);
	cel_init(&m);
	cel_add(&e, "!has(object.spec.pool.generation) || !has(oldObject.spec.pool.generation) ||\n"
		"object.spec.pool.generation >= oldObject.spec.pool.generation");
	cel_add(&m, "'[slice.generation.regress] spec.pool.generation: ' + string(object.spec.pool.generation) + "
		"' is lower than the current ' + string(oldObject.spec.pool.generation) + '; a pool generation may "
		"only go up (a stale writer after a driver restart?)'");
	vap_policy_begin(o, RULE_SLICE_GENERATION_REGRESS, &slice_update);
	vap_validation(o, RULE_SLICE_GENERATION_REGRESS, &e, &m);
	vap_policy_end(o, RULE_SLICE_GENERATION_REGRESS, &slice_update);
	cel_free(&e);
	cel_free(&m);
}

/* Two devices' mappings are the same: the same resources, each with the
 * same capacityKey and the same multiplier compared as quantities (absent
 * counts as its default, 1). a and b are CEL maps. */
#define MAPPINGS(x) "(has(" x ".nodeAllocatableResourceMappings) ? " x ".nodeAllocatableResourceMappings : {})"
#define HAS_MAPPINGS(x) "(has(" x ".nodeAllocatableResourceMappings) && size(" x ".nodeAllocatableResourceMappings) > 0)"
#define SAME_MAPPINGS(a, b) \
	"[" MAPPINGS(a) "].all(ma, [" MAPPINGS(b) "].all(mb, size(ma) == size(mb) && ma.all(k, k in mb &&\n" \
	"      [ma[k]].all(x, [mb[k]].all(y, has(x.capacityKey) == has(y.capacityKey) &&\n" \
	"        (!has(x.capacityKey) || x.capacityKey == y.capacityKey) &&\n" \
	"        [(has(x.allocationMultiplier) ? x.allocationMultiplier : '1')].all(qa,\n" \
	"          [(has(y.allocationMultiplier) ? y.allocationMultiplier : '1')].all(qb,\n" \
	"            qa == qb || (isQuantity(qa) && isQuantity(qb) && quantity(qa).compareTo(quantity(qb)) == 0))))))))"
#define OLD_DEVICES "(has(oldObject.spec.devices) ? oldObject.spec.devices : [])"
#define SLICE_COUNT "(object.spec.pool.resourceSliceCount > oldObject.spec.pool.resourceSliceCount ? " \
	"object.spec.pool.resourceSliceCount : oldObject.spec.pool.resourceSliceCount)"
#define GENERATIONS "' changed while spec.pool.generation stayed at ' + string(object.spec.pool.generation) + " \
	"' (was ' + string(oldObject.spec.pool.generation) + ') in a pool of ' + string(" SLICE_COUNT ") + " \
	"' slices; bump the pool generation when the mappings of more than one of its slices change'"

static void rule_unversioned(struct vap_out *o)
{
	struct cel cond, several, removed, removed_msg;

	cel_init(&cond);
	cel_init(&several);
	cel_init(&removed);
	cel_init(&removed_msg);
	/* The ResourceSlice controller updates a one-slice pool in place at
	 * the same generation (slice_rules.c says why): only a pool of
	 * several slices is judged. */
	cel_add(&cond, "!(has(object.spec.pool.generation) && has(oldObject.spec.pool.generation) &&\n"
		"  object.spec.pool.generation > oldObject.spec.pool.generation)");
	cel_add(&several, SLICE_COUNT " > 1");
	cel_add(&removed, "!has(oldObject.spec.devices) || oldObject.spec.devices.all(od, !" HAS_MAPPINGS("od") " ||\n"
		"  object.spec.devices.exists(d, d.name == od.name))");
	cel_add(&removed_msg, "[oldObject.spec.devices.filter(od, " HAS_MAPPINGS("od") " &&\n"
		"  !object.spec.devices.exists(d, d.name == od.name))].map(v, size(v) == 0 ? '' :\n"
		"  '[slice.mapping.unversioned] spec.devices: the mappings (device removed) of device \"' + v[0].name + '\"' + "
		GENERATIONS ")[0]");
	vap_policy_begin(o, RULE_SLICE_MAPPING_UNVERSIONED, &slice_update);
	has_devices(o);
	vap_match_condition(o, "several-slices", &several);
	vap_match_condition(o, "generation-not-bumped", &cond);
	/* The device of the old slice with d's name, or none; a device kept
	 * at its index unchanged is skipped without a search. */
	vap_device_chunks(o, RULE_SLICE_MAPPING_UNVERSIONED,
			  "!(i < size(" OLD_DEVICES ") && " OLD_DEVICES "[i] == d) &&\n"
			  "  [" OLD_DEVICES ".filter(od, od.name == d.name)].exists(os,\n"
			  "    size(os) == 0 ? " HAS_MAPPINGS("d") " :\n    !(" SAME_MAPPINGS("d", "os[0]") "))",
			  "'spec.devices[' + string(i) + ']' + (" OLD_DEVICES ".exists(od, od.name == d.name) ? "
			  "'.nodeAllocatableResourceMappings: the mappings' : ': the mappings (a new device)') + "
			  "' of device \"' + d.name + '\"' + " GENERATIONS);
	vap_validation(o, RULE_SLICE_MAPPING_UNVERSIONED, &removed, &removed_msg);
	vap_policy_end(o, RULE_SLICE_MAPPING_UNVERSIONED, &slice_update);
	cel_free(&cond);
	cel_free(&several);
	cel_free(&removed);
	cel_free(&removed_msg);
}

/* --- the slice rules --------------------------------------------------------------------- */

void vap_slice_rule(struct vap_out *o, enum rule_id id)
{
	switch (id) {
	case RULE_SLICE_MAPPING_MULTIPLIER: rule_multiplier(o); break;
	case RULE_SLICE_MAPPING_CAPACITY_KEY: rule_capacity_key(o); break;
	case RULE_SLICE_MAPPING_EMPTY: rule_empty(o); break;
	case RULE_SLICE_MAPPING_NAME: rule_mapping_name(o); break;
	case RULE_SLICE_MAPPING_SHAREABLE: rule_shareable(o); break;
	case RULE_SLICE_MAPPING_UNITS: rule_units(o); break;
	case RULE_SLICE_MAPPING_UNITS_OPEN: rule_units_open(o); break;
	case RULE_SLICE_MAPPING_BOUNDS: rule_bounds(o); break;
	case RULE_SLICE_DRIVER: rule_driver(o); break;
	case RULE_SLICE_CANARY: rule_canary(o); break;
	case RULE_SLICE_GENERATION_REGRESS: rule_generation_regress(o); break;
	case RULE_SLICE_MAPPING_UNVERSIONED: rule_unversioned(o); break;
	case RULE_SLICE_SHAPE_FUTURE: rule_shape_future(o); break;
	default: break;
	}
}
