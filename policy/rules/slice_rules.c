/* slice_rules.c - the slice.* rules: the checks of each mapping of each
 * device (mapping_rules[], in the order they report), then those of the
 * slice as a whole.
 *
 * Paths name the field as the object spells it: devices of resource.k8s.io
 * v1beta1 keep their fields under "basic", and the Kubernetes 1.37 shape
 * (nodeAllocatableResources) nests the multipliers under "mapping". */
#include "slice_rules.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

struct slice_ctx {
	struct check *c;
	const struct k8s_object *obj;
	const struct resource_slice *s;
	const struct driver_policy *driver;     /* the policy's entry for s->driver, or NULL */
	struct quantity milli;                  /* 1m, the cpu accounting unit */
	const bool *unchanged;                  /* UPDATE: per device index, what the mapping
						 * rules read of it is as stored; NULL otherwise */
	bool slice_unchanged;                   /* UPDATE: no mapping changed or appeared, on
						 * the same driver and node */
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
			    mapping_field(m), check_shown(m->resource),
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

static const struct device_capacity *device_capacity(const struct device *d, struct str key)
{
	return model_device_capacity(d, key);
}

/* The multiplier that scales capacity in capacity mode. */
static const struct quantity_field *capacity_scale(const struct mapping *m)
{
	return m->shape == MAPPING_V137 ? &m->capacity_multiplier : &m->multiplier;
}

/* The amount one unit maps: the device multiplier in device-count mode, the
 * capacity multiplier in capacity mode; absent means 1 (the API server's
 * default). False when the value is unusable (another rule reports it). */
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
				   "mapping is not what it says", check_shown(m->unknown_field), m->unknown_field.ptr,
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
				   "nodeAllocatableResources; use one of them", check_shown(d->name), d->name.ptr);
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
			   check_shown(m->resource), m->resource.ptr);
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
				   check_shown(f->text), f->text.ptr);
	else if (f->err)
		check_violation_at(x->c, RULE_SLICE_MAPPING_MULTIPLIER, mapping_path(x, d, m, suffix),
				   "\"%.*s\" is not a quantity; use one such as 8Gi, 500m or 2",
				   check_shown(f->text), f->text.ptr);
	else if (quantity_sign(&f->value) <= 0)
		check_violation_at(x->c, RULE_SLICE_MAPPING_MULTIPLIER, mapping_path(x, d, m, suffix),
				   "\"%.*s\" must be greater than zero", check_shown(f->text), f->text.ptr);
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
				   check_shown(d->name), d->name.ptr);
		return;
	}
	if (device_capacity(d, m->capacity_key))
		return;
	names[0] = '\0';
	for (i = 0; i < d->ncapacity && len < sizeof(names) - 1; i++) {
		int w = snprintf(names + len, sizeof(names) - len, "%s%.*s", i ? ", " : "",
				 check_shown(d->capacity[i].name), d->capacity[i].name.ptr);

		if (w < 0)
			break;
		len += (size_t)w;
	}
	check_violation_at(x->c, RULE_SLICE_MAPPING_CAPACITY_KEY, mapping_path(x, d, m, capacity_key_suffix(m)),
			   "\"%.*s\" is not a capacity of device \"%.*s\" (its capacities: %s)",
			   check_shown(m->capacity_key), m->capacity_key.ptr, check_shown(d->name), d->name.ptr,
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
			   check_shown(m->capacity_key), m->capacity_key.ptr, check_shown(d->name), d->name.ptr);
}

/* --- slice.mapping.name --------------------------------------------------------------------------- */

static void rule_mapping_name(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	if (f->resource != NODE_RESOURCE_INVALID)
		return;
	check_violation_at(x->c, RULE_SLICE_MAPPING_NAME, mapping_path(x, d, m, ""),
			   "\"%.*s\" is not a node resource the scheduler accounts (accepted: %s)",
			   check_shown(m->resource), m->resource.ptr, NAMES_NODE_RESOURCES_ACCEPTED);
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
			   "%s \"%.*s\" of %.*s cannot be real: %s", what, check_shown(text), text.ptr,
			   check_shown(m->resource), m->resource.ptr, why);
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
				   check_shown(f->text), f->text.ptr);
		return;
	}
	if (quantity_sign(&f->value) < 0) {
		check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS, mapping_path(x, d, m, suffix),
				   "overhead \"%.*s\" is negative", check_shown(f->text), f->text.ptr);
		return;
	}
	check_amount_units(x, d, m, r, page, &f->value, suffix, f->text, "overhead");
}

/* --- capacity mode: the amounts one allocation can consume -----------------------
 *
 * The scheduler adds consumedCapacity[capacityKey] x multiplier, and a claim
 * consumes only what the capacity's requestPolicy lets it
 * (k8s.io/dynamic-resource-allocation structured allocator,
 * calculateConsumedCapacity and violatesPolicy): a claim that asks for
 * nothing consumes requestPolicy.default, or the whole value when there is
 * no default; a request rounds up to the next validValues entry, or to
 * validRange.min + k * step; an amount over validRange.max or off the
 * validValues is refused; with no policy any requested amount up to the
 * value is consumed as asked. Units and bounds are judged over those
 * amounts, so a mapping is flagged only when an amount a claim can really
 * consume maps something that cannot be real, and the message names it. */

static bool usable(const struct quantity_field *f)
{
	return f->present && f->err == 0 && quantity_sign(&f->value) >= 0;
}

static bool usable_step(const struct capacity_policy *p)
{
	return usable(&p->step) && quantity_sign(&p->step.value) > 0;
}

/* validRange applies when it has a min (as the scheduler reads it). */
static bool has_range(const struct capacity_policy *p)
{
	return p->present && p->has_range && usable(&p->min);
}

/* a - b, or -ERANGE. */
static int quantity_sub(const struct quantity *a, const struct quantity *b, struct quantity *out)
{
	struct quantity neg;
	int rc = quantity_mul_int(b, -1, &neg);

	return rc ? rc : quantity_add(a, &neg, out);
}

/* May one allocation consume amount a under p (violatesPolicy, with the
 * range's lower end as roundUpRange gives it)? */
static bool policy_allows(const struct capacity_policy *p, const struct quantity *a)
{
	struct quantity off;
	uint32_t i;

	if (!p->present)
		return true;
	if (usable(&p->default_value) && quantity_cmp(a, &p->default_value.value) == 0)
		return true;
	if (has_range(p)) {
		if (quantity_cmp(a, &p->min.value) < 0)
			return false;
		if (usable(&p->max) && quantity_cmp(a, &p->max.value) > 0)
			return false;
		if (usable_step(p))
			return quantity_sub(a, &p->min.value, &off) == 0 &&
			       quantity_is_multiple_of(&off, &p->step.value);
		return true;
	}
	if (p->nvalid_values) {
		for (i = 0; i < p->nvalid_values; i++)
			if (usable(&p->valid_values[i]) && quantity_cmp(a, &p->valid_values[i].value) == 0)
				return true;
		return false;
	}
	return true;
}

/* The top of what one allocation can consume before the lattice: the
 * value, or validRange.max below it. */
static const struct quantity *range_upper(const struct device_capacity *cap, const char **from)
{
	const struct capacity_policy *p = &cap->policy;

	if (has_range(p) && usable(&p->max) && quantity_cmp(&p->max.value, &cap->value.value) < 0) {
		*from = "requestPolicy.validRange.max";
		return &p->max.value;
	}
	*from = "the capacity's value";
	return &cap->value.value;
}

/* True when a claim picks any amount in an interval (no policy, a policy
 * with only a default, or a validRange without a step): the driver fixes
 * no granularity, so a unit finding there is a guess about what claims ask
 * for, reported by the advisory slice.mapping.units.open. */
static bool open_ended(const struct capacity_policy *p)
{
	if (!p->present)
		return true;
	if (has_range(p))
		return !usable_step(p);
	return p->nvalid_values == 0;
}

typedef void (*amount_fn)(struct slice_ctx *x, void *ctx, const struct quantity *amount, const char *from);

/* Every amount one allocation can certainly consume that decides units:
 * the amount of a claim that asks for none; validRange.min and min + step
 * (every other step is min + k*step, so these two decide all of them),
 * and max; each of validValues. */
static void visit_certain_amounts(struct slice_ctx *x, const struct device_capacity *cap, amount_fn fn, void *ctx)
{
	const struct capacity_policy *p = &cap->policy;
	const struct quantity *upper;
	struct quantity next;
	const char *upper_from;
	char from[64];
	uint32_t i;

	if (!usable(&cap->value))
		return;
	if (p->present && usable(&p->default_value))
		fn(x, ctx, &p->default_value.value, "requestPolicy.default, what a claim that asks for none consumes");
	else if (policy_allows(p, &cap->value.value))
		fn(x, ctx, &cap->value.value, "the whole value, what a claim that asks for none consumes");
	if (!p->present)
		return;
	if (has_range(p)) {
		upper = range_upper(cap, &upper_from);
		fn(x, ctx, &p->min.value, "requestPolicy.validRange.min");
		if (usable_step(p) && quantity_add(&p->min.value, &p->step.value, &next) == 0 &&
		    quantity_cmp(&next, upper) <= 0)
			fn(x, ctx, &next, "requestPolicy.validRange.min + step");
		if (usable(&p->max) && policy_allows(p, &p->max.value))
			fn(x, ctx, &p->max.value, "requestPolicy.validRange.max");
		return;
	}
	for (i = 0; i < p->nvalid_values && !x->c->error; i++) {
		const struct quantity_field *v = &p->valid_values[i];

		if (!usable(v) || quantity_cmp(&v->value, &cap->value.value) > 0)
			continue;
		snprintf(from, sizeof(from), "requestPolicy.validValues[%u]", i);
		fn(x, ctx, &v->value, from);
	}
}

/* The most one allocation can consume: the largest amount the policy lets
 * it consume, never more than the value. false when nothing is consumable
 * or the values cannot be used (another rule reports them). */
static bool largest_amount(const struct device_capacity *cap, struct quantity *out, struct str *text,
			   const char **from)
{
	const struct capacity_policy *p = &cap->policy;
	const struct quantity *upper;
	struct quantity span, steps;
	const char *best = NULL;
	int64_t k;
	uint32_t i;

	if (!usable(&cap->value))
		return false;
	if (has_range(p)) {
		upper = range_upper(cap, from);
		if (quantity_cmp(&p->min.value, upper) > 0)
			return false;
		*out = *upper;
		*text = upper == &p->max.value ? p->max.text : cap->value.text;
		if (!usable_step(p))
			return true;
		/* The largest min + k*step under the top: requests round up to
		 * the lattice, and one past the top is refused. */
		if (quantity_sub(upper, &p->min.value, &span) != 0 ||
		    quantity_div_floor(&span, &p->step.value, &k) != 0 ||
		    quantity_mul_int(&p->step.value, k, &steps) != 0 || quantity_add(&p->min.value, &steps, out) != 0) {
			*out = *upper;       /* cannot hold it: judge the top, as before */
			return true;
		}
		if (quantity_cmp(out, upper) != 0) {
			*from = "the largest validRange.min + k * step under the top of the range";
			*text = (struct str){ NULL, 0 };
		}
		return true;
	}
	if (p->present && p->nvalid_values) {
		for (i = 0; i < p->nvalid_values; i++) {
			const struct quantity_field *v = &p->valid_values[i];

			if (!usable(v) || quantity_cmp(&v->value, &cap->value.value) > 0)
				continue;
			if (!best || quantity_cmp(&v->value, out) > 0) {
				*out = v->value;
				*text = v->text;
				best = "the largest of requestPolicy.validValues";
			}
		}
		*from = best;
		return best != NULL;
	}
	*out = cap->value.value;
	*text = cap->value.text;
	*from = "the capacity's value";
	return true;
}

/* --- slice.mapping.units, slice.mapping.units.open -------------------------------------- */

struct units_ctx {
	const struct device *d;
	const struct mapping *m;
	const struct mapping_facts *f;
	const struct device_capacity *cap;
};

static void check_consumed_units(struct slice_ctx *x, void *ctx, const struct quantity *amount, const char *from)
{
	const struct units_ctx *u = ctx;
	char have[QUANTITY_STR_MAX], maps[QUANTITY_STR_MAX];
	struct quantity product;
	const char *why;

	if (quantity_mul(amount, &u->f->unit, &product) != 0)
		return;         /* too large to hold: slice.mapping.bounds says so */
	why = units_problem(x, u->f->resource, &product, &u->f->page);
	if (!why)
		return;
	quantity_format(amount, have);
	quantity_format(&product, maps);
	check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS, mapping_path(x, u->d, u->m, capacity_key_suffix(u->m)),
			   "consuming %s of capacity \"%.*s\" (%s) maps %s of %.*s, which cannot be real: %s",
			   have, check_shown(u->cap->name), u->cap->name.ptr, from, maps, check_shown(u->m->resource),
			   u->m->resource.ptr, why);
}

/* With no step, claims pick their amounts: whole units of the capacity is
 * the guess (a claim asks for 3, not 2.5), and one unit must map something
 * real for every whole amount to. */
static void check_open_units(struct slice_ctx *x, const struct units_ctx *u)
{
	char maps[QUANTITY_STR_MAX], top[QUANTITY_STR_MAX];
	const struct quantity *upper;
	struct quantity one;
	const char *why, *upper_from;

	if (!usable(&u->cap->value) || !open_ended(&u->cap->policy))
		return;
	quantity_from_int(1, &one);
	upper = range_upper(u->cap, &upper_from);
	if (quantity_cmp(upper, &one) < 0)
		return;
	why = units_problem(x, u->f->resource, &u->f->unit, &u->f->page);
	if (!why)
		return;
	quantity_format(&u->f->unit, maps);
	quantity_format(upper, top);
	check_violation_at(x->c, RULE_SLICE_MAPPING_UNITS_OPEN, mapping_path(x, u->d, u->m, capacity_key_suffix(u->m)),
			   "capacity \"%.*s\" lets a claim consume any amount up to %s (no requestPolicy.validRange.step), "
			   "and one unit maps %s of %.*s, which cannot be real: %s; set a step so that every "
			   "consumable amount maps a real one", check_shown(u->cap->name), u->cap->name.ptr, top, maps,
			   check_shown(u->m->resource), u->m->resource.ptr, why);
}

static void rule_mapping_units(struct slice_ctx *x, const struct device *d, const struct mapping *m,
				const struct mapping_facts *f)
{
	if (f->resource == NODE_RESOURCE_INVALID || m->is_null)
		return;
	if (f->has_unit && m->has_capacity_key) {
		struct units_ctx u = { d, m, f, device_capacity(d, m->capacity_key) };

		if (u.cap) {
			visit_certain_amounts(x, u.cap, check_consumed_units, &u);
			check_open_units(x, &u);
		}
	} else if (f->has_unit && m->multiplier.present) {
		check_amount_units(x, d, m, f->resource, &f->page, &f->unit, multiplier_suffix(m), m->multiplier.text,
				   "the amount per device");
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
			   check_shown(m->resource), m->resource.ptr, check_shown(x->s->driver), x->s->driver.ptr,
			   check_shown(lim->max_text), lim->max_text.ptr);
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
	const struct device_capacity *cap;
	char have[QUANTITY_STR_MAX];
	struct quantity most, product;
	struct str most_text;
	const char *from;

	if (!x->driver || m->is_null)
		return;
	lim = policy_driver_resource(x->driver, m->resource);
	if (!lim || !lim->has_max || !f->has_unit)
		return;
	if (!m->has_capacity_key) {
		struct str text = multiplier_text(&m->multiplier);

		check_bound(x, d, m, lim, &f->unit, multiplier_suffix(m),
			    check_printf(x->c, "one allocation maps %.*s", check_shown(text), text.ptr));
	} else if ((cap = device_capacity(d, m->capacity_key)) != NULL &&
		   largest_amount(cap, &most, &most_text, &from)) {
		/* The bound is the most one allocation can consume, not the
		 * whole capacity when the policy stops it below. Amounts are
		 * shown as written; only a step lattice's top is computed. */
		struct str text = multiplier_text(capacity_scale(m));

		if (!most_text.ptr) {
			quantity_format(&most, have);
			most_text = str_from_cstr(have);
		}
		if (quantity_mul(&most, &f->unit, &product) != 0)
			check_violation_at(x->c, RULE_SLICE_MAPPING_BOUNDS,
					   mapping_path(x, d, m, capacity_key_suffix(m)),
					   "capacity \"%.*s\" (up to %.*s per allocation) times the multiplier %.*s is "
					   "too large to hold; the max of %.*s is exceeded", check_shown(m->capacity_key),
					   m->capacity_key.ptr, check_shown(most_text), most_text.ptr, check_shown(text), text.ptr,
					   check_shown(m->resource), m->resource.ptr);
		else
			check_bound(x, d, m, lim, &product, capacity_key_suffix(m),
				    check_printf(x->c, "one allocation can consume up to %.*s of capacity \"%.*s\" "
						 "(%s), which maps %.*s times %.*s", check_shown(most_text), most_text.ptr,
						 check_shown(cap->name), cap->name.ptr, from, check_shown(most_text),
						 most_text.ptr, check_shown(text), text.ptr));
	}
	if (m->overhead_per_pod.present && !m->overhead_per_pod.err)
		check_bound(x, d, m, lim, &m->overhead_per_pod.value, ".overhead.perPod",
			    check_printf(x->c, "the per-Pod overhead is %.*s", check_shown(m->overhead_per_pod.text),
					 m->overhead_per_pod.text.ptr));
	if (m->overhead_per_container.present && !m->overhead_per_container.err)
		check_bound(x, d, m, lim, &m->overhead_per_container.value, ".overhead.perContainer",
			    check_printf(x->c, "the per-container overhead is %.*s",
					 check_shown(m->overhead_per_container.text), m->overhead_per_container.text.ptr));
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
			"node-allocatable mappings (the policy lists %.*s)", check_shown(x->s->driver),
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
			   check_shown(x->s->driver), x->s->driver.ptr, check_shown(m->resource), m->resource.ptr,
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
					"(canary.nodes: %.*s)", check_shown(s->node_name), s->node_name.ptr,
					STR_FMT(check_list_names(x->c, &p->canary_nodes)));
		return;
	}
	for (i = 0; i < s->ndevices; i++) {
		const struct device *d = &s->devices[i];

		if (d->nmappings == 0)
			continue;
		x->c->preexisting = x->unchanged && x->unchanged[i];
		if (d->node_name.len == 0)
			check_violation_at(x->c, RULE_SLICE_CANARY,
					   check_printf(x->c, "spec.devices[%u]%s.nodeName", d->index, device_prefix(x)),
					   "device \"%.*s\" has no nodeName, but mappings are allowed only on canary nodes",
					   check_shown(d->name), d->name.ptr);
		else if (!policy_list_glob(&p->canary_nodes, d->node_name))
			check_violation_at(x->c, RULE_SLICE_CANARY,
					   check_printf(x->c, "spec.devices[%u]%s.nodeName", d->index, device_prefix(x)),
					   "node \"%.*s\" is not a canary node, so device \"%.*s\" may not carry mappings yet",
					   check_shown(d->node_name), d->node_name.ptr, check_shown(d->name), d->name.ptr);
	}
	x->c->preexisting = false;
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

/* Mappings are sorted by shape, then resource (the decoder sorts them), so
 * equal sets are equal element by element: one linear walk. */
static bool device_mappings_equal(const struct device *a, const struct device *b)
{
	uint32_t i;

	if (a->nmappings != b->nmappings)
		return false;
	for (i = 0; i < a->nmappings; i++)
		if (a->mappings[i].shape != b->mappings[i].shape ||
		    !str_eq(a->mappings[i].resource, b->mappings[i].resource) ||
		    !mapping_equal(&a->mappings[i], &b->mappings[i]))
			return false;
	return true;
}

static int device_ptr_cmp(const void *a, const void *b)
{
	return str_cmp((*(const struct device *const *)a)->name, (*(const struct device *const *)b)->name);
}

/* s's devices by name, for lookups in n log n: NULL (and c->error set)
 * when the arena is out of room. */
static const struct device **devices_by_name(struct check *c, const struct resource_slice *s)
{
	const struct device **v = arena_calloc(c->arena, s->ndevices ? s->ndevices : 1, sizeof(*v));
	uint32_t i;

	if (!v) {
		c->error = arena_error(c->arena);
		return NULL;
	}
	for (i = 0; i < s->ndevices; i++)
		v[i] = &s->devices[i];
	qsort(v, s->ndevices, sizeof(*v), device_ptr_cmp);
	return v;
}

/* The device of s named like d: at index hint (where a republish keeps it),
 * else by binary search in sorted (built on first need). */
static const struct device *find_device(struct check *c, const struct resource_slice *s,
					const struct device ***sorted, const struct device *d, uint32_t hint)
{
	const struct device *const *found;

	if (hint < s->ndevices && str_eq(s->devices[hint].name, d->name))
		return &s->devices[hint];
	if (!*sorted && !(*sorted = devices_by_name(c, s)))
		return NULL;
	found = s->ndevices ? bsearch(&d, *sorted, s->ndevices, sizeof(**sorted), device_ptr_cmp) : NULL;
	return found ? *found : NULL;
}

static void report_unversioned(struct slice_ctx *x, const struct resource_slice *old, struct str path,
			       const char *what, const struct device *d, int64_t count)
{
	check_violation_at(x->c, RULE_SLICE_MAPPING_UNVERSIONED, path,
			   "%s of device \"%.*s\" changed while spec.pool.generation stayed at %lld "
			   "(was %lld) in a pool of %lld slices; bump the pool generation when the mappings of "
			   "more than one of its slices change", what, check_shown(d->name), d->name.ptr,
			   (long long)x->s->pool_generation, (long long)old->pool_generation, (long long)count);
}

/* How the ResourceSlice controller every kubelet-plugin driver uses
 * (k8s.io/dynamic-resource-allocation/resourceslice, Controller.syncPool)
 * writes: it keeps spec.pool.generation when no slice is new and at most
 * one slice changes ("Kept generation because at most one update API call
 * is necessary") and bumps it otherwise. A one-slice pool is therefore
 * updated in place at the same generation when devices come and go or
 * mappings change: each slice is written whole, so the scheduler never
 * sees half of a change, and the version of its mappings is the slice's
 * resourceVersion and the dra-guard.io/mappings label. Only a pool of
 * several slices needs the generation to keep its slices consistent, so
 * only there is a change at the same generation flagged. Even there the
 * controller keeps the generation when this is the only slice that
 * changes, which one request cannot tell; the rule is advisory (warn) by
 * default for that reason. */
static void rule_mapping_unversioned(struct slice_ctx *x, const struct resource_slice *old)
{
	const struct resource_slice *s = x->s;
	const struct device **old_sorted = NULL, **new_sorted = NULL;
	int64_t count = s->resource_slice_count > old->resource_slice_count ? s->resource_slice_count
									  : old->resource_slice_count;
	uint32_t i;

	if (count <= 1)
		return;
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
		o = find_device(x->c, old, &old_sorted, d, i);
		if (x->c->error)
			break;
		if (!o) {
			if (d->nmappings)
				report_unversioned(x, old, check_printf(x->c, "spec.devices[%u]", d->index),
						   "the mappings (a new device)", d, count);
			continue;
		}
		if (!device_mappings_equal(d, o))
			report_unversioned(x, old, check_printf(x->c, "spec.devices[%u]%s.%s", d->index,
								device_prefix(x),
								d->has_v137 && !d->has_v136 ?
								"nodeAllocatableResources" :
								"nodeAllocatableResourceMappings"),
					   "the mappings", d, count);
	}
	for (i = 0; i < old->ndevices && !x->c->error; i++) {
		const struct device *o = &old->devices[i];

		if (o->nmappings && !find_device(x->c, s, &new_sorted, o, i) && !x->c->error)
			report_unversioned(x, old, STR_LIT("spec.devices"), "the mappings (device removed)", o, count);
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

/* --- what an UPDATE leaves as it was ---------------------------------------------------
 *
 * A violation the stored slice already holds is not made by this write:
 * denying the write (a driver republishing after the policy tightened, to
 * withdraw a failed device or change an attribute) would leave the
 * violation in place and block every other change. Such violations are
 * warned (check.preexisting). What a mapping rule reads of a device is its
 * mappings, its capacity and allowMultipleAllocations, and where it is;
 * what the slice-wide rules read is the driver, the node and whether any
 * mapping changed or appeared. */

static bool device_inputs_equal(const struct device *d, const struct device *o)
{
	if (d->raw.len && str_eq(d->raw, o->raw))
		return true;
	return d->allow_multiple_allocations == o->allow_multiple_allocations &&
	       d->has_v136 == o->has_v136 && d->has_v137 == o->has_v137 &&
	       str_eq(d->capacity_raw, o->capacity_raw) && str_eq(d->node_name, o->node_name) &&
	       d->all_nodes == o->all_nodes && d->has_node_selector == o->has_node_selector &&
	       device_mappings_equal(d, o);
}

static void find_unchanged(struct slice_ctx *x, const struct resource_slice *old)
{
	const struct resource_slice *s = x->s;
	const struct device **sorted = NULL;
	bool *unchanged = arena_calloc(x->c->arena, s->ndevices ? s->ndevices : 1, sizeof(*unchanged));
	bool all = true;
	uint32_t i;

	if (!unchanged) {
		x->c->error = arena_error(x->c->arena);
		return;
	}
	for (i = 0; i < s->ndevices && !x->c->error; i++) {
		const struct device *d = &s->devices[i];
		const struct device *o;

		if (i < old->ndevices && old->devices[i].same_as_object) {
			unchanged[i] = true;
			continue;
		}
		o = find_device(x->c, old, &sorted, d, i);
		unchanged[i] = o && device_inputs_equal(d, o);
		if (d->nmappings && !unchanged[i])
			all = false;
	}
	x->unchanged = unchanged;
	x->slice_unchanged = all && str_eq(s->driver, old->driver) && str_eq(s->node_name, old->node_name) &&
			     s->all_nodes == old->all_nodes && s->has_node_selector == old->has_node_selector &&
			     s->per_device_node_selection == old->per_device_node_selection &&
			     model_slice_has_mappings(old);
}

/* --- mappings already judged ---------------------------------------------------
 *
 * What the mapping rules read is the mapping, the facts worked out from it,
 * the slice-wide context in slice_ctx, and of its device only, in capacity
 * mode, the capacity its capacityKey names (the list of all of them only
 * when there is none, which is reported) and allowMultipleAllocations; the
 * device's index and name go into messages alone. A mapping with the same
 * text in every field (parsing is pure, so the same values too), read with
 * a capacity of the same value and requestPolicy text and the same
 * allowMultipleAllocations, is judged as one before it was. One judged
 * without a report is recorded here and is not judged again: in a slice of
 * alike devices most are. A finding is reported for every device, so only
 * clean mappings are recorded. Direct-mapped by a hash of the mapping's
 * names; a clash only forgets. */
#define JUDGED_SLOTS 64         /* the slot is the top 6 bits of a hash; one bit
				 * each of a uint64_t says it is in use */
/* After this many mappings in a row judged anew the record is no longer
 * looked in: the devices are not alike, and each look would cost for
 * nothing. */
#define JUDGED_GIVE_UP 32

struct judged {
	const struct mapping *m;                  /* NULL for an empty slot */
	const struct device_capacity *cap;        /* the capacity it names (capacity mode) */
	bool allow_multiple_allocations;          /* of its device (capacity mode) */
};

/* The slot of a record: a hash of the mapping's names and amounts and of
 * the value of the capacity it names. */
static struct judged *judged_slot(struct judged *t, const struct judged *j)
{
	const struct mapping *m = j->m;
	uint64_t h = m->resource.len * 31 + m->capacity_key.len * 7 + m->multiplier.text.len;

	if (m->resource.len)
		h = h * 257 + (unsigned char)m->resource.ptr[m->resource.len - 1];
	if (m->multiplier.text.len)
		h = h * 257 + (unsigned char)m->multiplier.text.ptr[0];
	if (m->capacity_key.len)
		h = h * 257 + (unsigned char)m->capacity_key.ptr[m->capacity_key.len - 1];
	if (j->cap && j->cap->value.text.len)
		h = (h * 257 + j->cap->value.text.len) * 257 + (unsigned char)j->cap->value.text.ptr[0];
	return &t[(h * 0x9e3779b97f4a7c15ULL) >> 58];
}

/* Texts compared without a call when they differ in length, first or last
 * byte, as alike mappings of other devices mostly do. */
static bool same_text(struct str a, struct str b)
{
	if (a.len != b.len)
		return false;
	if (a.len == 0 || a.ptr == b.ptr)
		return true;
	return a.ptr[0] == b.ptr[0] && a.ptr[a.len - 1] == b.ptr[a.len - 1] && memcmp(a.ptr, b.ptr, a.len) == 0;
}

static bool same_field(const struct quantity_field *a, const struct quantity_field *b)
{
	return a->present == b->present && (!a->present || same_text(a->text, b->text));
}

/* Every field of a and b the rules read has the same text. */
static bool same_mapping(const struct mapping *a, const struct mapping *b)
{
	if (a == b)
		return true;
	return a->shape == b->shape && a->is_null == b->is_null && a->has_capacity_key == b->has_capacity_key &&
	       same_text(a->resource, b->resource) && same_text(a->capacity_key, b->capacity_key) &&
	       same_text(a->unknown_field, b->unknown_field) && same_field(&a->multiplier, &b->multiplier) &&
	       same_field(&a->capacity_multiplier, &b->capacity_multiplier) &&
	       same_field(&a->overhead_per_pod, &b->overhead_per_pod) &&
	       same_field(&a->overhead_per_container, &b->overhead_per_container);
}

/* Two capacities of the same name with the same value and requestPolicy
 * text: the policy is decoded from that text alone. */
static bool same_capacity(const struct device_capacity *a, const struct device_capacity *b)
{
	return a == b || (same_field(&a->value, &b->value) && a->policy.present == b->policy.present &&
			  same_text(a->policy_raw, b->policy_raw));
}

/* m of device d as a record: in capacity mode with the capacity it names,
 * which must exist (a mapping naming none is reported, never recorded). */
static bool judged_of(const struct device *d, const struct mapping *m, struct judged *j)
{
	j->m = m;
	j->cap = NULL;
	j->allow_multiple_allocations = false;
	if (!m->has_capacity_key)
		return true;
	j->cap = device_capacity(d, m->capacity_key);
	j->allow_multiple_allocations = d->allow_multiple_allocations;
	return j->cap != NULL;
}

/* Whether m of d was judged clean before; else *slot is where a clean
 * judgement of it goes, or NULL when it cannot be recorded. */
static bool judged_clean(struct judged *t, uint64_t *used, unsigned *misses, const struct device *d,
			 const struct mapping *m, struct judged **slot)
{
	struct judged j, *e;
	uint64_t bit;

	*slot = NULL;
	if (*misses >= JUDGED_GIVE_UP || !judged_of(d, m, &j))
		return false;
	e = judged_slot(t, &j);
	bit = 1ULL << (e - t);
	if (!(*used & bit)) {
		*used |= bit;   /* garbage until now: starting costs no clearing */
		e->m = NULL;
	}
	if (e->m && same_mapping(e->m, m) && e->allow_multiple_allocations == j.allow_multiple_allocations &&
	    (!j.cap || same_capacity(e->cap, j.cap))) {
		*misses = 0;
		return true;
	}
	++*misses;
	*slot = e;
	e->m = NULL;    /* filled again once m is judged clean */
	return false;
}

void slice_rules_check(struct check *c)
{
	const struct admission_request *req = c->req;
	const struct resource_slice *old = req->operation == ADMISSION_OP_UPDATE &&
					   req->old_object.kind == OBJECT_RESOURCE_SLICE ?
					   &req->old_object.u.slice : NULL;
	struct slice_ctx x = { c, &req->object, &req->object.u.slice, NULL, { 0, 0, 0 }, NULL, false };
	struct judged judged[JUDGED_SLOTS];
	uint64_t judged_used = 0;
	unsigned judged_misses = 0;
	struct mapping_facts f;
	uint32_t i, j, k;
	bool mapped;

	quantity_parse("1m", 2, &x.milli);
	if (c->policy->has_drivers)
		x.driver = policy_driver(c->policy, x.s->driver);
	mapped = model_slice_has_mappings(x.s);
	if (old)
		find_unchanged(&x, old);
	for (i = 0; i < x.s->ndevices && !c->error; i++) {
		const struct device *d = &x.s->devices[i];

		c->preexisting = x.unchanged && x.unchanged[i];
		rule_device_schema(&x, d);
		for (j = 0; j < d->nmappings; j++) {
			const struct mapping *m = &d->mappings[j];
			uint32_t before = c->verdict->nviolations;
			struct judged *slot;

			if (judged_clean(judged, &judged_used, &judged_misses, d, m, &slot))
				continue;
			quantity_from_int(1, &f.page);  /* set for hugepages only */
			f.resource = names_node_resource(m->resource, &f.page);
			f.has_unit = !m->is_null && unit_amount(m, &f.unit);
			for (k = 0; k < sizeof(mapping_rules) / sizeof(mapping_rules[0]); k++)
				mapping_rules[k](&x, d, m, &f);
			if (slot && c->verdict->nviolations == before && !c->error)
				judged_of(d, m, slot);
		}
	}
	c->preexisting = false;
	if (mapped) {
		c->preexisting = x.slice_unchanged;
		rule_driver_listed(&x);
		rule_canary(&x);
		c->preexisting = false;
	}
	if (old) {
		rule_generation_regress(&x, old);
		rule_mapping_unversioned(&x, old);
	}
}
