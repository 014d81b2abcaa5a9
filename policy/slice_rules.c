/* slice_rules.c - the slice.* rules, in the order docs/rules.md lists them.
 *
 * Paths name the field as the object spells it: devices of resource.k8s.io
 * v1beta1 keep their fields under "basic", and the Kubernetes 1.37 shape
 * (nodeAllocatableResources) nests the multipliers under "mapping". */
#include "slice_rules.h"

#include <errno.h>
#include <stdio.h>

#include "names.h"

#define SHOW_MAX 64             /* bytes of a user value quoted in a message */

struct slice_ctx {
	struct check *c;
	const struct k8s_object *obj;
	const struct resource_slice *s;
	const struct driver_policy *driver;     /* the policy's entry for s->driver, or NULL */
	struct quantity milli;                  /* 1m, the cpu accounting unit */
};

/* What the rules need to know about one mapping, worked out once. */
struct mapping_facts {
	enum node_resource resource;            /* NODE_RESOURCE_INVALID for a bad name */
	struct quantity page;                   /* hugepage size */
	bool has_unit;                          /* unit is usable */
	struct quantity unit;                   /* the amount one device / capacity unit maps */
};

/* --- paths ----------------------------------------------------------------- */

static const char *device_prefix(const struct slice_ctx *x)
{
	return x->obj->version == API_V1BETA1 ? ".basic" : "";
}

static const char *mapping_field(const struct mapping *m)
{
	return m->shape == MAPPING_V137 ? "nodeAllocatableResources" : "nodeAllocatableResourceMappings";
}

/* spec.devices[3].nodeAllocatableResourceMappings["memory"]<suffix> */
static struct str mapping_path(const struct slice_ctx *x, const struct device *d,
			       const struct mapping *m, const char *suffix)
{
	return check_printf(x->c, "spec.devices[%u]%s.%s[\"%.*s\"]%s", d->index, device_prefix(x),
			    mapping_field(m), (int)(m->resource.len > SHOW_MAX ? SHOW_MAX : m->resource.len),
			    m->resource.ptr, suffix);
}

static const char *multiplier_suffix(const struct mapping *m)
{
	return m->shape == MAPPING_V137 ? ".mapping.deviceMultiplier" : ".allocationMultiplier";
}

static const char *capacity_key_suffix(const struct mapping *m)
{
	return m->shape == MAPPING_V137 ? ".mapping.capacityKey" : ".capacityKey";
}

/* --- shared helpers ----------------------------------------------------------- */

static int shown(struct str s)
{
	return (int)(s.len > SHOW_MAX ? SHOW_MAX : s.len);
}

static const struct named_quantity *device_capacity(const struct device *d, struct str key)
{
	uint32_t i;

	for (i = 0; i < d->ncapacity; i++)
		if (str_eq(d->capacity[i].name, key))
			return &d->capacity[i];
	return NULL;
}

/* The multiplier that scales capacity in capacity mode. */
static const struct quantity_field *capacity_scale(const struct mapping *m)
{
	return m->shape == MAPPING_V137 ? &m->capacity_multiplier : &m->multiplier;
}

/* The amount one unit maps: the device multiplier in device-count mode, the
 * capacity multiplier in capacity mode; absent means 1 (the API server's
 * default). NULL when the value is unusable (another rule reports it). */
static bool unit_amount(const struct mapping *m, struct quantity *out)
{
	const struct quantity_field *f = m->has_capacity_key ? capacity_scale(m) : &m->multiplier;

	if (!f->present) {
		quantity_from_int(1, out);
		return true;
	}
	if (f->err || quantity_sign(&f->value) <= 0)
		return false;
	*out = f->value;
	return true;
}

/* --- slice.mapping.schema --------------------------------------------------------- */

static void rule_mapping_schema(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	(void)f;
	if (m->is_null) {
		check_violation_at(x->c, RULE_SLICE_MAPPING_SCHEMA, mapping_path(x, d, m, ""),
				   "the entry is null; give allocationMultiplier or capacityKey, or leave the resource out");
		return;
	}
	if (m->unknown_field.len)
		check_violation_at(x->c, RULE_SLICE_MAPPING_SCHEMA, mapping_path(x, d, m, ""),
				   "unknown field \"%.*s\" (accepted: %s); the API server drops it, so the "
				   "mapping is not what it says", shown(m->unknown_field), m->unknown_field.ptr,
				   m->shape == MAPPING_V137 ? "mapping.deviceMultiplier, mapping.capacityKey, "
				   "mapping.capacityMultiplier, overhead.perPod, overhead.perContainer"
				   : "allocationMultiplier, capacityKey");
	if (m->shape != MAPPING_V137)
		return;
	if (m->multiplier.present && m->has_capacity_key)
		check_violation_at(x->c, RULE_SLICE_MAPPING_SCHEMA, mapping_path(x, d, m, ".mapping"),
				   "deviceMultiplier and capacityKey are exclusive: use deviceMultiplier for "
				   "device-count mode or capacityKey (+ capacityMultiplier) for capacity mode");
	if (m->capacity_multiplier.present && !m->has_capacity_key)
		check_violation_at(x->c, RULE_SLICE_MAPPING_SCHEMA,
				   mapping_path(x, d, m, ".mapping.capacityMultiplier"),
				   "capacityMultiplier needs capacityKey");
}

static void rule_device_schema(struct slice_ctx *x, const struct device *d)
{
	if (d->has_v136 && d->has_v137)
		check_violation_at(x->c, RULE_SLICE_MAPPING_SCHEMA,
				   check_printf(x->c, "spec.devices[%u]%s", d->index, device_prefix(x)),
				   "device \"%.*s\" sets both nodeAllocatableResourceMappings and "
				   "nodeAllocatableResources; use one of them", shown(d->name), d->name.ptr);
}

/* --- slice.mapping.empty --------------------------------------------------------------- */

static void rule_mapping_empty(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	(void)f;
	if (m->is_null || m->multiplier.present || m->has_capacity_key)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_EMPTY, mapping_path(x, d, m, ""),
			   "neither %s nor capacityKey is set, so each allocated device maps 1 %.*s only "
			   "because the API server defaults the multiplier; set it explicitly",
			   m->shape == MAPPING_V137 ? "deviceMultiplier" : "allocationMultiplier",
			   shown(m->resource), m->resource.ptr);
}

/* --- slice.mapping.multiplier --------------------------------------------------------------- */

static void check_multiplier(struct slice_ctx *x, const struct device *d, const struct mapping *m,
			     const struct quantity_field *f, const char *suffix)
{
	if (!f->present)
		return;
	if (f->err == -ERANGE)
		check_violation_at(x->c, RULE_SLICE_MAPPING_MULTIPLIER, mapping_path(x, d, m, suffix),
				   "\"%.*s\" is too large to hold exactly; use a quantity such as 8Gi or 2",
				   shown(f->text), f->text.ptr);
	else if (f->err)
		check_violation_at(x->c, RULE_SLICE_MAPPING_MULTIPLIER, mapping_path(x, d, m, suffix),
				   "\"%.*s\" is not a quantity; use one such as 8Gi, 500m or 2",
				   shown(f->text), f->text.ptr);
	else if (quantity_sign(&f->value) <= 0)
		check_violation_at(x->c, RULE_SLICE_MAPPING_MULTIPLIER, mapping_path(x, d, m, suffix),
				   "\"%.*s\" must be greater than zero", shown(f->text), f->text.ptr);
}

static void rule_mapping_multiplier(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	(void)f;
	check_multiplier(x, d, m, &m->multiplier, multiplier_suffix(m));
	if (m->shape == MAPPING_V137)
		check_multiplier(x, d, m, &m->capacity_multiplier, ".mapping.capacityMultiplier");
}

/* --- slice.mapping.capacity-key --------------------------------------------------------------- */

static void rule_mapping_capacity_key(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	char names[256];
	size_t len = 0;
	uint32_t i;

	(void)f;
	if (!m->has_capacity_key)
		return;
	if (m->capacity_key.len == 0) {
		check_violation_at(x->c, RULE_SLICE_MAPPING_CAPACITY_KEY,
				   mapping_path(x, d, m, capacity_key_suffix(m)),
				   "must not be empty; name a capacity of device \"%.*s\"",
				   shown(d->name), d->name.ptr);
		return;
	}
	if (device_capacity(d, m->capacity_key))
		return;
	names[0] = '\0';
	for (i = 0; i < d->ncapacity && len < sizeof(names) - 1; i++) {
		int w = snprintf(names + len, sizeof(names) - len, "%s%.*s", i ? ", " : "",
				 shown(d->capacity[i].name), d->capacity[i].name.ptr);

		if (w < 0)
			break;
		len += (size_t)w;
	}
	check_violation_at(x->c, RULE_SLICE_MAPPING_CAPACITY_KEY, mapping_path(x, d, m, capacity_key_suffix(m)),
			   "\"%.*s\" is not a capacity of device \"%.*s\" (its capacities: %s)",
			   shown(m->capacity_key), m->capacity_key.ptr, shown(d->name), d->name.ptr,
			   d->ncapacity ? names : "none");
}

/* --- slice.mapping.shareable ----------------------------------------------------------------- */

static void rule_mapping_shareable(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	(void)f;
	if (!m->has_capacity_key || d->allow_multiple_allocations)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_SHAREABLE, mapping_path(x, d, m, capacity_key_suffix(m)),
			   "capacityKey \"%.*s\" needs device \"%.*s\" to set allowMultipleAllocations: true "
			   "(only such devices report consumedCapacity; the scheduler fails at allocation time)",
			   shown(m->capacity_key), m->capacity_key.ptr, shown(d->name), d->name.ptr);
}

/* --- slice.mapping.name --------------------------------------------------------------------------- */

static void rule_mapping_name(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	if (f->resource != NODE_RESOURCE_INVALID)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_NAME, mapping_path(x, d, m, ""),
			   "\"%.*s\" is not a node resource the scheduler accounts (accepted: %s)",
			   shown(m->resource), m->resource.ptr, NAMES_NODE_RESOURCES_ACCEPTED);
}

/* --- slice.mapping.units ----------------------------------------------------------------------------- */

/* Why amount is not a real amount of resource r, or NULL when it is. */
static const char *units_problem(const struct slice_ctx *x, enum node_resource r,
				 const struct quantity *amount, const struct quantity *page)
{
	switch (r) {
	case NODE_RESOURCE_CPU:
		if (!quantity_is_multiple_of(amount, &x->milli))
			return "cpu is accounted in whole millicores (1m); this is finer";
		return NULL;
	case NODE_RESOURCE_MEMORY:
	case NODE_RESOURCE_EPHEMERAL_STORAGE:
		return quantity_is_integer(amount) ? NULL : "this is a fractional number of bytes";
	case NODE_RESOURCE_HUGEPAGES:
		if (!quantity_is_integer(amount))
			return "this is a fractional number of bytes";
		return quantity_is_multiple_of(amount, page) ? NULL :
		       "this is not a whole number of pages of the hugepage size";
	case NODE_RESOURCE_INVALID:
		break;
	}
	return NULL;
}

static void check_amount_units(struct slice_ctx *x, const struct device *d, const struct mapping *m,
			       enum node_resource r, const struct quantity *page,
			       const struct quantity *amount, const char *suffix, struct str text,
			       const char *what)
{
	const char *why = units_problem(x, r, amount, page);

	if (!why)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS, mapping_path(x, d, m, suffix),
			   "%s \"%.*s\" of %.*s cannot be real: %s", what, shown(text), text.ptr,
			   shown(m->resource), m->resource.ptr, why);
}

static void check_overhead(struct slice_ctx *x, const struct device *d, const struct mapping *m,
			   enum node_resource r, const struct quantity *page,
			   const struct quantity_field *f, const char *suffix)
{
	if (!f->present)
		return;
	if (f->err) {
		check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS, mapping_path(x, d, m, suffix),
				   "\"%.*s\" is not a quantity; use one such as 1Gi or 250m",
				   shown(f->text), f->text.ptr);
		return;
	}
	if (quantity_sign(&f->value) < 0) {
		check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS, mapping_path(x, d, m, suffix),
				   "overhead \"%.*s\" is negative", shown(f->text), f->text.ptr);
		return;
	}
	check_amount_units(x, d, m, r, page, &f->value, suffix, f->text, "overhead");
}

static void rule_mapping_units(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	if (f->resource == NODE_RESOURCE_INVALID || m->is_null)
		return;
	if (f->has_unit && (m->multiplier.present || (m->has_capacity_key && capacity_scale(m)->present))) {
		const struct quantity_field *q = m->has_capacity_key ? capacity_scale(m) : &m->multiplier;
		const char *suffix = q == &m->multiplier ? multiplier_suffix(m) : ".mapping.capacityMultiplier";

		check_amount_units(x, d, m, f->resource, &f->page, &f->unit, suffix, q->text,
				   m->has_capacity_key ? "the amount per unit of capacity" : "the amount per device");
	}
	check_overhead(x, d, m, f->resource, &f->page, &m->overhead_per_pod, ".overhead.perPod");
	check_overhead(x, d, m, f->resource, &f->page, &m->overhead_per_container, ".overhead.perContainer");
}

/* --- slice.mapping.bounds -------------------------------------------------------------------------- */

/* Amounts are shown as the object and the policy write them: the parsed
 * value of 16Ei is capped at 2^63-1, which would say nothing to the user. */
static void check_bound(struct slice_ctx *x, const struct device *d, const struct mapping *m,
			const struct resource_limit *lim, const struct quantity *amount,
			const char *suffix, struct str what)
{
	if (quantity_cmp(amount, &lim->max) <= 0)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_BOUNDS, mapping_path(x, d, m, suffix),
			   "%.*s of %.*s, more than driver %.*s's max of %.*s", STR_FMT(what),
			   shown(m->resource), m->resource.ptr, shown(x->s->driver), x->s->driver.ptr,
			   shown(lim->max_text), lim->max_text.ptr);
}

/* A multiplier as written, or the API server's default. */
static struct str multiplier_text(const struct quantity_field *f)
{
	return f->present ? f->text : STR_LIT("1 (the default multiplier)");
}

static void rule_mapping_bounds(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	const struct resource_limit *lim;
	struct quantity most;

	if (!x->driver || m->is_null)
		return;
	lim = policy_driver_resource(x->driver, m->resource);
	if (!lim || !lim->has_max || !f->has_unit)
		return;
	if (!m->has_capacity_key) {
		struct str text = multiplier_text(&m->multiplier);

		check_bound(x, d, m, lim, &f->unit, multiplier_suffix(m),
			    check_printf(x->c, "one allocation maps %.*s", shown(text), text.ptr));
	} else {
		/* One allocation can consume the whole capacity. */
		const struct named_quantity *cap = device_capacity(d, m->capacity_key);

		if (cap && cap->value.present && cap->value.err == 0) {
			struct str text = multiplier_text(capacity_scale(m));

			if (quantity_mul(&cap->value.value, &f->unit, &most) == 0)
				check_bound(x, d, m, lim, &most, capacity_key_suffix(m),
					    check_printf(x->c, "one allocation of the whole capacity \"%.*s\" maps "
							 "%.*s times %.*s", shown(m->capacity_key), m->capacity_key.ptr,
							 shown(cap->value.text), cap->value.text.ptr,
							 shown(text), text.ptr));
			else
				check_violation_at(x->c, RULE_SLICE_MAPPING_BOUNDS,
						   mapping_path(x, d, m, capacity_key_suffix(m)),
						   "capacity \"%.*s\" (%.*s) times the multiplier %.*s is too large to "
						   "hold; the max of %.*s is exceeded", shown(m->capacity_key),
						   m->capacity_key.ptr, shown(cap->value.text), cap->value.text.ptr,
						   shown(text), text.ptr, shown(m->resource), m->resource.ptr);
		}
	}
	if (m->overhead_per_pod.present && !m->overhead_per_pod.err)
		check_bound(x, d, m, lim, &m->overhead_per_pod.value, ".overhead.perPod",
			    check_printf(x->c, "the per-Pod overhead is %.*s", shown(m->overhead_per_pod.text),
					 m->overhead_per_pod.text.ptr));
	if (m->overhead_per_container.present && !m->overhead_per_container.err)
		check_bound(x, d, m, lim, &m->overhead_per_container.value, ".overhead.perContainer",
			    check_printf(x->c, "the per-container overhead is %.*s",
					 shown(m->overhead_per_container.text), m->overhead_per_container.text.ptr));
}

/* --- slice.driver ------------------------------------------------------------------------------------------ */

static void rule_driver_listed(struct slice_ctx *x)
{
	const struct policy *p = x->c->policy;

	if (!p->has_drivers || x->driver)
		return;
	struct str listed = CHECK_NAMES(x->c, p->drivers, p->ndrivers, struct driver_policy, name);

	check_violation(x->c, RULE_SLICE_DRIVER, "spec.driver",
			"driver \"%.*s\" is not listed in the policy's drivers, so it may not publish "
			"node-allocatable mappings (the policy lists %.*s)", shown(x->s->driver),
			x->s->driver.ptr, STR_FMT(listed));
}

static void rule_driver_resource(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	struct str allowed;

	(void)f;
	if (!x->driver || !x->driver->has_resources || policy_driver_resource(x->driver, m->resource))
		return;
	allowed = CHECK_NAMES(x->c, x->driver->resources, x->driver->nresources, struct resource_limit, name);
	check_violation_at(x->c, RULE_SLICE_DRIVER, mapping_path(x, d, m, ""),
			   "driver \"%.*s\" may not map %.*s; the policy allows it %.*s",
			   shown(x->s->driver), x->s->driver.ptr, shown(m->resource), m->resource.ptr,
			   STR_FMT(allowed));
}

/* --- slice.canary ----------------------------------------------------------------------------------------------- */

static void rule_canary(struct slice_ctx *x)
{
	const struct policy *p = x->c->policy;
	const struct resource_slice *s = x->s;
	uint32_t i;

	if (!p->has_canary)
		return;
	if (!s->per_device_node_selection) {
		if (s->node_name.len == 0)
			check_violation(x->c, RULE_SLICE_CANARY, "spec.nodeName",
					"the slice has no nodeName (a nodeSelector or allNodes pool), but "
					"mappings are allowed only on canary nodes");
		else if (!policy_list_glob(&p->canary_nodes, s->node_name))
			check_violation(x->c, RULE_SLICE_CANARY, "spec.nodeName",
					"node \"%.*s\" is not a canary node, so its slices may not carry mappings yet "
					"(canary.nodes: %.*s)", shown(s->node_name), s->node_name.ptr,
					STR_FMT(check_list_names(x->c, &p->canary_nodes)));
		return;
	}
	for (i = 0; i < s->ndevices; i++) {
		const struct device *d = &s->devices[i];

		if (d->nmappings == 0)
			continue;
		if (d->node_name.len == 0)
			check_violation_at(x->c, RULE_SLICE_CANARY,
					   check_printf(x->c, "spec.devices[%u]%s.nodeName", d->index, device_prefix(x)),
					   "device \"%.*s\" has no nodeName, but mappings are allowed only on canary nodes",
					   shown(d->name), d->name.ptr);
		else if (!policy_list_glob(&p->canary_nodes, d->node_name))
			check_violation_at(x->c, RULE_SLICE_CANARY,
					   check_printf(x->c, "spec.devices[%u]%s.nodeName", d->index, device_prefix(x)),
					   "node \"%.*s\" is not a canary node, so device \"%.*s\" may not carry mappings yet",
					   shown(d->node_name), d->node_name.ptr, shown(d->name), d->name.ptr);
	}
}

/* --- slice.generation.regress and slice.mapping.unversioned (UPDATE) -------------------------------------- */

static void rule_generation_regress(struct slice_ctx *x, const struct resource_slice *old)
{
	const struct resource_slice *s = x->s;

	if (!s->has_pool_generation || !old->has_pool_generation || s->pool_generation >= old->pool_generation)
		return;
	check_violation(x->c, RULE_SLICE_GENERATION_REGRESS, "spec.pool.generation",
			"%lld is lower than the current %lld; a pool generation may only go up "
			"(a stale writer after a driver restart?)", (long long)s->pool_generation,
			(long long)old->pool_generation);
}

static bool quantity_field_equal(const struct quantity_field *a, const struct quantity_field *b,
				 bool absent_is_one)
{
	struct quantity one, qa, qb;

	quantity_from_int(1, &one);
	if (!a->present && !b->present)
		return true;
	if ((a->present && a->err) || (b->present && b->err))
		return a->present == b->present && str_eq(a->text, b->text);
	if (!absent_is_one && a->present != b->present)
		return false;
	qa = a->present ? a->value : one;
	qb = b->present ? b->value : one;
	return quantity_cmp(&qa, &qb) == 0;
}

static bool mapping_equal(const struct mapping *a, const struct mapping *b)
{
	if (a->shape != b->shape || a->is_null != b->is_null || a->has_capacity_key != b->has_capacity_key ||
	    (a->has_capacity_key && !str_eq(a->capacity_key, b->capacity_key)))
		return false;
	/* The API server defaults a missing multiplier to 1, so absent == "1". */
	return quantity_field_equal(&a->multiplier, &b->multiplier, true) &&
	       quantity_field_equal(&a->capacity_multiplier, &b->capacity_multiplier, true) &&
	       quantity_field_equal(&a->overhead_per_pod, &b->overhead_per_pod, false) &&
	       quantity_field_equal(&a->overhead_per_container, &b->overhead_per_container, false);
}

static const struct mapping *find_mapping(const struct device *d, const struct mapping *m)
{
	uint32_t i;

	for (i = 0; i < d->nmappings; i++)
		if (d->mappings[i].shape == m->shape && str_eq(d->mappings[i].resource, m->resource))
			return &d->mappings[i];
	return NULL;
}

static bool device_mappings_equal(const struct device *a, const struct device *b)
{
	uint32_t i;

	if (a->nmappings != b->nmappings)
		return false;
	/* The decoder rejects duplicate keys, so equal counts and every entry
	 * of a found equal in b means equal sets. */
	for (i = 0; i < a->nmappings; i++) {
		const struct mapping *o = find_mapping(b, &a->mappings[i]);

		if (!o || !mapping_equal(&a->mappings[i], o))
			return false;
	}
	return true;
}

static const struct device *find_device(const struct resource_slice *s, const struct device *d, uint32_t hint)
{
	uint32_t i;

	if (hint < s->ndevices && str_eq(s->devices[hint].name, d->name))
		return &s->devices[hint];
	for (i = 0; i < s->ndevices; i++)
		if (str_eq(s->devices[i].name, d->name))
			return &s->devices[i];
	return NULL;
}

static void report_unversioned(struct slice_ctx *x, const struct resource_slice *old, struct str path,
			       const char *what, const struct device *d)
{
	check_violation_at(x->c, RULE_SLICE_MAPPING_UNVERSIONED, path,
			   "%s of device \"%.*s\" changed while spec.pool.generation stayed at %lld "
			   "(was %lld); bump the pool generation with every mapping change",
			   what, shown(d->name), d->name.ptr, (long long)x->s->pool_generation,
			   (long long)old->pool_generation);
}

static void rule_mapping_unversioned(struct slice_ctx *x, const struct resource_slice *old)
{
	const struct resource_slice *s = x->s;
	uint32_t i;

	if (s->has_pool_generation && old->has_pool_generation && s->pool_generation > old->pool_generation)
		return;
	for (i = 0; i < s->ndevices && !x->c->error; i++) {
		const struct device *d = &s->devices[i];
		const struct device *o;

		/* Byte-identical device text cannot differ in mappings; the
		 * decoder has usually found that out already. */
		if (i < old->ndevices && (old->devices[i].same_as_object ||
					  (d->raw.len && str_eq(d->raw, old->devices[i].raw))))
			continue;
		o = find_device(old, d, i);
		if (!o) {
			if (d->nmappings)
				report_unversioned(x, old, check_printf(x->c, "spec.devices[%u]", d->index),
						   "the mappings (a new device)", d);
			continue;
		}
		if (!device_mappings_equal(d, o))
			report_unversioned(x, old, check_printf(x->c, "spec.devices[%u]%s.%s", d->index,
								device_prefix(x),
								d->has_v137 && !d->has_v136 ?
								"nodeAllocatableResources" :
								"nodeAllocatableResourceMappings"),
					   "the mappings", d);
	}
	for (i = 0; i < old->ndevices && !x->c->error; i++) {
		const struct device *o = &old->devices[i];

		if (o->nmappings && !find_device(s, o, i))
			report_unversioned(x, old, STR_LIT("spec.devices"), "the mappings (device removed)", o);
	}
}

/* --- slice.shape.future ---------------------------------------------------------------------------------- */

static void rule_shape_future(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	if (f->resource != NODE_RESOURCE_EPHEMERAL_STORAGE)
		return;
	check_violation_at(x->c, RULE_SLICE_SHAPE_FUTURE, mapping_path(x, d, m, ""),
			   "Kubernetes 1.37 drops ephemeral-storage from node-allocatable mappings");
}

/* --- driver ------------------------------------------------------------------------------------------------------ */

typedef void (*mapping_rule_fn)(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f);

static const mapping_rule_fn mapping_rules[] = {
	rule_mapping_schema,
	rule_mapping_empty,
	rule_mapping_multiplier,
	rule_mapping_capacity_key,
	rule_mapping_shareable,
	rule_mapping_name,
	rule_mapping_units,
	rule_mapping_bounds,
	rule_driver_resource,
	rule_shape_future,
};

void slice_rules_check(struct check *c)
{
	const struct admission_request *req = c->req;
	struct slice_ctx x = { c, &req->object, &req->object.u.slice, NULL, { 0, 0, 0 } };
	struct mapping_facts f;
	uint32_t i, j, k;
	bool mapped;

	quantity_parse("1m", 2, &x.milli);
	if (c->policy->has_drivers)
		x.driver = policy_driver(c->policy, x.s->driver);
	mapped = model_slice_has_mappings(x.s);
	for (i = 0; i < x.s->ndevices && !c->error; i++) {
		const struct device *d = &x.s->devices[i];

		rule_device_schema(&x, d);
		for (j = 0; j < d->nmappings; j++) {
			const struct mapping *m = &d->mappings[j];

			f.resource = names_node_resource(m->resource, &f.page);
			f.has_unit = !m->is_null && unit_amount(m, &f.unit);
			for (k = 0; k < sizeof(mapping_rules) / sizeof(mapping_rules[0]); k++)
				mapping_rules[k](&x, d, m, &f);
		}
	}
	if (mapped) {
		rule_driver_listed(&x);
		rule_canary(&x);
	}
	if (req->operation == ADMISSION_OP_UPDATE && req->old_object.kind == OBJECT_RESOURCE_SLICE) {
		rule_generation_regress(&x, &req->old_object.u.slice);
		rule_mapping_unversioned(&x, &req->old_object.u.slice);
	}
}
