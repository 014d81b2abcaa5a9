/* ledger_rules.c - the rules that read the cluster view (ledger_rules.h). */
#include "ledger_rules.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ledger.h"
#include "timefmt.h"

#define SHOW_MAX 64
#define MAX_LISTED 3            /* claims named in one message; the rest are counted */
#define MAX_DRIVERS 64
/* How close together a mapping change, an allocation and the Pod status
 * written for it make a status that disagrees undecidable: the scheduler
 * computes the amounts in its scheduling cycle and writes them in PreBind
 * right after the allocation, and the slice's and the claim's watch events
 * may reach the guard in either order. */
#define MAPPING_RACE_NS (5 * (int64_t)1000000000)

static int shown(struct str s)
{
	return (int)(s.len > SHOW_MAX ? SHOW_MAX : s.len);
}

static const char *const reason_names[LEDGER_REASON_COUNT] = {
	"", "view-stale", "pool-unseen", "device-unseen", "claim-unseen", "claim-uncharged", "mapping-changing",
};

static const char *const cause_names[LEDGER_CAUSE_COUNT] = {
	"", "incomplete", "restarted", "device-missing", "mapping-uncharged", "view-stale", "pool-unseen",
};

const char *ledger_reason_name(uint8_t reason)
{
	return reason < LEDGER_REASON_COUNT ? reason_names[reason] : "";
}

const char *ledger_cause_name(uint8_t cause)
{
	return cause < LEDGER_CAUSE_COUNT ? cause_names[cause] : "";
}

static bool stale(const struct check *c)
{
	return view_stale(c->view, c->now_ns, c->policy->view_max_age_s * (int64_t)1000000000);
}

static struct str uid_text(struct check *c, const struct view_uid *u)
{
	char buf[64];

	view_uid_format(u, buf, sizeof(buf));
	return check_printf(c, "%s", buf);
}

/* --- slice.generation.stale ------------------------------------------------------- */

static void rule_generation_stale(struct check *c, const struct resource_slice *s, struct str name)
{
	const struct view_pool *p = view_pool_get(c->view, s->driver, s->pool_name);
	int64_t other = INT64_MIN;
	const char *other_name = NULL;
	uint32_t i;

	if (!p || !s->has_pool_generation)
		return;
	if (p->nslices > 0) {
		/* The resourceslice controller takes the newest generation among
		 * the pool's slices and never writes below it: a write below a
		 * live slice of the pool comes from a writer that has not seen it. */
		for (i = 0; i < p->nnames; i++) {
			const struct view_slice *o;

			if (name.len && str_eq_cstr(name, p->slice_names[i]))
				continue;
			o = view_slice_get(c->view, str_from_cstr(p->slice_names[i]));
			if (o && o->generation > other) {
				other = o->generation;
				other_name = view_slice_name(o);
			}
		}
		if (other_name && s->pool_generation < other)
			check_violation_cause(c, RULE_SLICE_GENERATION_STALE, 0, true, STR_LIT("spec.pool.generation"),
					      "%lld is below generation %lld of slice \"%s\" of the same pool \"%.*s\" "
					      "(driver %.*s): a stale writer; the driver's current instance writes "
					      "at %lld or above", (long long)s->pool_generation, (long long)other,
					      other_name, shown(s->pool_name), s->pool_name.ptr, shown(s->driver),
					      s->driver.ptr, (long long)other);
		return;
	}
	/* Every slice of the pool is gone (the kubelet deletes them when the
	 * plugin or the node restarts). A new instance of the controller finds
	 * none and starts again at generation 1 (or at a generation the driver
	 * sets, which only goes up); a writer below the highest ever seen and
	 * above 1 carries a generation from before. */
	if (s->pool_generation > 1 && s->pool_generation < p->max_generation) {
		char when[TIMEFMT_MAX];

		timefmt_rfc3339(p->emptied_ns, when);
		check_violation_cause(c, RULE_SLICE_GENERATION_STALE, 0, true, STR_LIT("spec.pool.generation"),
				      "%lld is below %lld, the highest generation pool \"%.*s\" of driver %.*s had "
				      "before its slices were deleted (%s): a stale writer; a restarted driver "
				      "starts again at 1 or above %lld", (long long)s->pool_generation,
				      (long long)p->max_generation, shown(s->pool_name), s->pool_name.ptr,
				      shown(s->driver), s->driver.ptr, when, (long long)p->max_generation);
	}
}

/* --- slice.pool.collision ------------------------------------------------------------ */

static const struct device *model_device(const struct resource_slice *s, struct str name)
{
	uint32_t i;

	for (i = 0; i < s->ndevices; i++)
		if (str_eq(s->devices[i].name, name))
			return &s->devices[i];
	return NULL;
}

/* Where a slice's devices are: "on node \"x\"", "on nodes its nodeSelector
 * picks", ... for messages. */
static const char *slice_where(const struct view *v, const struct view_slice *o, char *buf, size_t n)
{
	if (o->node_name.id)
		snprintf(buf, n, "on node \"%.*s\"", STR_FMT(view_str(v, o->node_name)));
	else if (o->all_nodes)
		snprintf(buf, n, "on all nodes");
	else if (o->has_node_selector)
		snprintf(buf, n, "on the nodes its nodeSelector picks");
	else
		snprintf(buf, n, "on the nodes its devices name");
	return buf;
}

/* kube-scheduler 1.36 finds a device's node-allocatable mappings by pool
 * name and device name alone, among every slice it lists (any driver, any
 * node, node-local or not: getDeviceFromManager). So another driver's
 * device of the same name in a pool of the same name, anywhere, can be
 * charged for this one when either carries mappings. */
static void rule_pool_collision(struct check *c, const struct resource_slice *s)
{
	const struct view_atom *drivers[MAX_DRIVERS];
	uint32_t n, i, j, k;

	n = view_pool_drivers(c->view, s->pool_name, drivers, MAX_DRIVERS);
	for (i = 0; i < n && i < MAX_DRIVERS; i++) {
		struct str other = view_atom_str(drivers[i]);
		const struct view_pool *p;

		if (str_eq(other, s->driver))
			continue;
		p = view_pool_get(c->view, other, s->pool_name);
		for (j = 0; p && j < p->nnames; j++) {
			const struct view_slice *o = view_slice_get(c->view, str_from_cstr(p->slice_names[j]));
			char where[128];

			if (!o)
				continue;
			/* The same pool name is harmless (the kubelet plugin helper
			 * names every node-local pool after its node); a device
			 * name in both is not, on this node or any other. */
			for (k = 0; k < o->ndevices; k++) {
				const struct view_device *od = &o->devices[k];
				const struct device *d = model_device(s, view_str(c->view, od->name));

				if (!d || (d->nmappings == 0 && od->nmappings == 0))
					continue;
				check_violation_cause(c, RULE_SLICE_POOL_COLLISION, 0, true,
						      check_printf(c, "spec.devices[%u].name", d->index),
						      "device \"%.*s\" of pool \"%.*s\" is also in driver %.*s's pool of "
						      "that name (slice \"%s\", %s); kube-scheduler 1.36 looks up "
						      "node-allocatable mappings by pool and device name only, on any node, "
						      "and can charge one driver's device for the other's; give the pool a "
						      "name of its own", shown(d->name), d->name.ptr, shown(s->pool_name),
						      s->pool_name.ptr, shown(other), other.ptr, view_slice_name(o),
						      slice_where(c->view, o, where, sizeof(where)));
			}
		}
	}
}

/* --- ledger.mapping.drift --------------------------------------------------------------- */

/* "ns/a (uid), ns/b (uid) and 3 more" for the holders of a device. */
static struct str holders_text(struct check *c, const struct view_hold *h, struct str skip_ns,
			       struct str skip_name, uint32_t *count)
{
	char text[1024];
	size_t off = 0;
	uint32_t i, n = 0;

	text[0] = '\0';
	for (i = 0; h && i < h->nholders; i++) {
		const struct view_holder *x = &h->holders[i];
		char uid[64];

		if (str_eq(view_str(c->view, x->claim->namespace), skip_ns) &&
		    str_eq_cstr(skip_name, view_claim_name(x->claim)))
			continue;
		view_uid_format(&x->claim->uid, uid, sizeof(uid));
		check_claim_uid(c, str_from_cstr(uid));
		if (n < MAX_LISTED && off < sizeof(text))
			off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%.*s/%s (uid %s)", n ? ", " : "",
						STR_FMT(view_str(c->view, x->claim->namespace)), view_claim_name(x->claim), uid);
		n++;
	}
	if (n > MAX_LISTED && off < sizeof(text))
		snprintf(text + off, sizeof(text) - off, " and %u more", n - MAX_LISTED);
	*count = n;
	return check_printf(c, "%s", text);
}

static void rule_mapping_drift(struct check *c, const struct resource_slice *s, const struct resource_slice *old)
{
	uint32_t i, n;

	for (i = 0; i < old->ndevices && !c->error; i++) {
		const struct device *o = &old->devices[i];
		const struct device *d = model_device(s, o->name);
		const struct view_hold *h;
		struct str who;

		if ((!d && o->nmappings == 0) || (d && model_device_mappings_equal(d, o)))
			continue;
		h = view_hold_get(c->view, old->driver, old->pool_name, o->name);
		if (!h)
			continue;
		who = holders_text(c, h, STR_LIT(""), STR_LIT(""), &n);
		if (n == 0)
			continue;
		check_violation_at(c, RULE_LEDGER_MAPPING_DRIFT,
				   d ? check_printf(c, "spec.devices[%u]", d->index) : STR_LIT("spec.devices"),
				   "%s the mappings of device \"%.*s\", allocated to %u live claim%s (%.*s); they stay "
				   "charged at the mapping they were allocated under, new allocations get the new one",
				   d ? "changes" : "removes (with the device)", shown(o->name), o->name.ptr, n,
				   n == 1 ? "" : "s", STR_FMT(who));
	}
}

void ledger_rules_slice(struct check *c)
{
	const struct admission_request *req = c->req;
	const struct resource_slice *s = &req->object.u.slice;

	if (!c->view)
		return;
	rule_generation_stale(c, s, req->object.meta.name);
	rule_pool_collision(c, s);
	if (req->operation == ADMISSION_OP_UPDATE && req->old_object.kind == OBJECT_RESOURCE_SLICE)
		rule_mapping_drift(c, s, &req->old_object.u.slice);
}

/* --- ledger.pool.fresh ------------------------------------------------------------------ */

static void undecided_or_deny(struct check *c, enum ledger_reason reason, uint8_t cause, struct str path,
			      const char *what)
{
	if (!c->policy->ledger_undecided_deny) {
		check_undecided(c, RULE_LEDGER_POOL_FRESH, reason);
		return;
	}
	check_violation_cause(c, RULE_LEDGER_POOL_FRESH, cause, reason == LEDGER_REASON_POOL_UNSEEN, path,
			      "%s; the policy says ledger.undecided: deny", what);
}

static bool capacity_mapped(const struct view *v, const struct view_device *d)
{
	const struct view_mapping *m = view_device_mappings(v, d);
	uint32_t i;

	for (i = 0; i < d->nmappings; i++)
		if (m[i].capacity_key && view_atom_str(m[i].capacity_key).len)
			return true;
	return false;
}

static void rule_pool_fresh(struct check *c, const struct resource_claim *cl)
{
	int64_t settle = (int64_t)c->policy->ledger_settle_s * 1000000000;
	uint32_t i;

	if (stale(c)) {
		char when[TIMEFMT_MAX];
		int64_t heard = INT64_MAX;
		int k;

		for (k = 0; k < OBJECT_KIND_COUNT; k++)   /* 0 for a kind the view does not hold */
			if (view_heard_ns(c->view, k) && view_heard_ns(c->view, k) < heard)
				heard = view_heard_ns(c->view, k);
		timefmt_rfc3339(heard, when);
		undecided_or_deny(c, LEDGER_REASON_VIEW_STALE, LEDGER_CAUSE_VIEW_STALE, STR_LIT("status.allocation"),
				  check_printf(c, "the guard last heard from the API server at %s, longer ago than "
					       "clusterView.maxAge, so it cannot tell whether the pools are fresh; "
					       "clears when the watch is back", when).ptr);
		return;
	}
	for (i = 0; i < cl->nresults && !c->error; i++) {
		const struct allocation_result *r = &cl->results[i];
		const struct view_pool *p = view_pool_get(c->view, r->driver, r->pool);
		struct str path = check_printf(c, "status.allocation.devices.results[%u]", i);
		const struct view_device *d;
		char t1[TIMEFMT_MAX], t2[TIMEFMT_MAX];

		if (!p) {
			undecided_or_deny(c, LEDGER_REASON_POOL_UNSEEN, LEDGER_CAUSE_POOL_UNSEEN, path,
					  check_printf(c, "pool \"%.*s\" of driver %.*s is not in the guard's view yet "
						       "(a pool published a moment ago?)", shown(r->pool), r->pool.ptr,
						       shown(r->driver), r->driver.ptr).ptr);
			continue;
		}
		if (p->nslices == 0) {
			timefmt_rfc3339(p->emptied_ns, t1);
			check_violation_cause(c, RULE_LEDGER_POOL_FRESH, LEDGER_CAUSE_DEVICE_MISSING, true, path,
					      "pool \"%.*s\" of driver %.*s has no slices (its last one was deleted at "
					      "%s): device \"%.*s\" cannot be charged; clears when the driver publishes "
					      "the pool again and it settles", shown(r->pool), r->pool.ptr,
					      shown(r->driver), r->driver.ptr, t1, shown(r->device), r->device.ptr);
			continue;
		}
		if (p->nslices_at_generation < p->resource_slice_count) {
			check_violation_cause(c, RULE_LEDGER_POOL_FRESH, LEDGER_CAUSE_INCOMPLETE, true, path,
					      "pool \"%.*s\" of driver %.*s is incomplete: %u of its %lld slices at "
					      "generation %lld are published; clears when all are", shown(r->pool),
					      r->pool.ptr, shown(r->driver), r->driver.ptr, p->nslices_at_generation,
					      (long long)p->resource_slice_count, (long long)p->generation);
			continue;
		}
		if (settle > 0 && p->restarted_ns && c->now_ns < p->restarted_ns + settle) {
			timefmt_rfc3339(p->restarted_ns, t1);
			timefmt_rfc3339(p->restarted_ns + settle, t2);
			check_violation_cause(c, RULE_LEDGER_POOL_FRESH, LEDGER_CAUSE_RESTARTED, false, path,
					      "pool \"%.*s\" of driver %.*s came back or changed generation at %s (a "
					      "driver restart?); allocations from it wait ledger.settleWindow so its "
					      "mappings are rebuilt first: clears at %s", shown(r->pool), r->pool.ptr,
					      shown(r->driver), r->driver.ptr, t1, t2);
			continue;
		}
		d = view_device_current(c->view, r->driver, r->pool, r->device, NULL);
		if (!d) {
			check_violation_cause(c, RULE_LEDGER_POOL_FRESH, LEDGER_CAUSE_DEVICE_MISSING, true, path,
					      "device \"%.*s\" is in none of the slices of pool \"%.*s\" (driver %.*s) "
					      "at generation %lld; clears when the driver publishes it",
					      shown(r->device), r->device.ptr, shown(r->pool), r->pool.ptr,
					      shown(r->driver), r->driver.ptr, (long long)p->generation);
			continue;
		}
		if (r->nconsumed_capacity == 0 && capacity_mapped(c->view, d))
			check_violation_cause(c, RULE_LEDGER_POOL_FRESH, LEDGER_CAUSE_MAPPING_UNCHARGED, false, path,
					      "device \"%.*s\" maps node resources from its capacity (capacityKey) but "
					      "the result has no consumedCapacity: neither the scheduler nor the ledger "
					      "can compute what it adds", shown(r->device), r->device.ptr);
	}
}

/* --- ledger.device.duplicate ---------------------------------------------------------- */

static const struct quantity *consumed_of(const struct allocation_result *r, struct str name)
{
	uint32_t i;

	for (i = 0; i < r->nconsumed_capacity; i++)
		if (str_eq(r->consumed_capacity[i].name, name) && !r->consumed_capacity[i].value.err)
			return &r->consumed_capacity[i].value.value;
	return NULL;
}

static const struct quantity *view_consumed_of(const struct view *v, const struct view_result *r, struct str name)
{
	const struct view_named_qty *q = view_result_consumed(v, r);
	uint32_t i;

	for (i = 0; i < view_result_nconsumed(v, r); i++)
		if (str_eq(view_atom_str(q[i].name), name))
			return view_atom_qty(q[i].value);
	return NULL;
}

/* The first capacity of a shareable device that the holders and this
 * request together would use past its value, or NULL; *used gets that
 * sum. */
static const struct view_capacity *over_capacity(const struct view *v, const struct view_device *d,
						 const struct view_hold *h,
						 struct str ns, struct str name, const struct resource_claim *cl,
						 uint32_t upto, struct quantity *used)
{
	uint32_t k, i;

	for (k = 0; k < d->ncapacity; k++) {
		const struct view_capacity *cap = &d->capacity[k];
		struct str cn = view_atom_str(cap->name);
		struct quantity sum;

		if (!cap->value)
			continue;
		quantity_from_int(0, &sum);
		for (i = 0; h && i < h->nholders; i++) {
			const struct view_holder *x = &h->holders[i];
			const struct view_claim *hc = x->claim;
			const struct quantity *q;

			if (str_eq(view_str(v, hc->namespace), ns) && str_eq_cstr(name, view_claim_name(hc)))
				continue;
			if (x->result >= hc->nresults)
				continue;
			if ((q = view_consumed_of(v, &hc->results[x->result], cn)) != NULL)
				quantity_add(&sum, q, &sum);
		}
		for (i = 0; i <= upto; i++) {
			const struct allocation_result *r = &cl->results[i];
			const struct quantity *q;

			if (i < upto && !(str_eq(r->driver, cl->results[upto].driver) &&
					  str_eq(r->pool, cl->results[upto].pool) && str_eq(r->device, cl->results[upto].device)))
				continue;
			if ((q = consumed_of(r, cn)) != NULL)
				quantity_add(&sum, q, &sum);
		}
		if (quantity_cmp(&sum, view_atom_qty(cap->value)) > 0) {
			*used = sum;
			return cap;
		}
	}
	return NULL;
}

static void rule_device_duplicate(struct check *c, const struct k8s_object *obj)
{
	const struct resource_claim *cl = &obj->u.claim;
	struct str ns = obj->meta.namespace.len ? obj->meta.namespace : c->req->namespace;
	struct str name = obj->meta.name.len ? obj->meta.name : c->req->name;
	uint32_t i, j;

	for (i = 0; i < cl->nresults && !c->error; i++) {
		const struct allocation_result *r = &cl->results[i];
		const struct view_hold *h = view_hold_get(c->view, r->driver, r->pool, r->device);
		struct str path = check_printf(c, "status.allocation.devices.results[%u]", i);
		const struct view_device *d;
		const struct view_capacity *cap;
		struct quantity used;
		uint32_t others = 0, twice = 0;
		struct str who;

		for (j = 0; h && j < h->nholders; j++)
			if (!(str_eq(view_str(c->view, h->holders[j].claim->namespace), ns) &&
			      str_eq_cstr(name, view_claim_name(h->holders[j].claim))))
				others++;
		for (j = 0; j < i; j++)
			if (str_eq(cl->results[j].driver, r->driver) && str_eq(cl->results[j].pool, r->pool) &&
			    str_eq(cl->results[j].device, r->device))
				twice++;
		if (others == 0 && twice == 0)
			continue;
		d = view_device_current(c->view, r->driver, r->pool, r->device, NULL);
		if (!d)
			d = view_device_find(c->view, r->driver, r->pool, r->device, NULL);
		if (!d) {
			/* Whether it may be shared is the device's to say. */
			check_undecided(c, RULE_LEDGER_DEVICE_DUPLICATE, LEDGER_REASON_DEVICE_UNSEEN);
			continue;
		}
		who = holders_text(c, h, ns, name, &others);
		if (d->allow_multiple_allocations) {
			char q1[QUANTITY_STR_MAX], q2[QUANTITY_STR_MAX];

			cap = over_capacity(c->view, d, h, ns, name, cl, i, &used);
			if (!cap)
				continue;
			quantity_format(&used, q1);
			quantity_format(view_atom_qty(cap->value), q2);
			check_violation_cause(c, RULE_LEDGER_DEVICE_DUPLICATE, 0, true, path,
					      "device \"%.*s\" (pool \"%.*s\", driver %.*s) allows several allocations, "
					      "but with %s%.*s its capacity %.*s would be %s of %s",
					      shown(r->device), r->device.ptr, shown(r->pool), r->pool.ptr, shown(r->driver),
					      r->driver.ptr, others ? "the claims holding it now, " : "this claim's other "
					      "results", STR_FMT(who), STR_FMT(view_atom_str(cap->name)), q1, q2);
			continue;
		}
		if (others)
			check_violation_cause(c, RULE_LEDGER_DEVICE_DUPLICATE, 0, true, path,
					      "device \"%.*s\" (pool \"%.*s\", driver %.*s) is already allocated to %.*s "
					      "and does not allow multiple allocations: a double allocation (after a "
					      "driver restart?); this claim is uid %.*s", shown(r->device), r->device.ptr,
					      shown(r->pool), r->pool.ptr, shown(r->driver), r->driver.ptr, STR_FMT(who),
					      STR_FMT(obj->meta.uid));
		else
			check_violation_cause(c, RULE_LEDGER_DEVICE_DUPLICATE, 0, false, path,
					      "device \"%.*s\" (pool \"%.*s\", driver %.*s) is allocated twice in this "
					      "claim and does not allow multiple allocations", shown(r->device),
					      r->device.ptr, shown(r->pool), r->pool.ptr, shown(r->driver), r->driver.ptr);
	}
}

/* --- ledger.numa.split ------------------------------------------------------------------ */

/* The device class of the request a result is for ("req" or "req/sub"). */
static bool class_aligned(const struct check *c, const struct resource_claim *cl, struct str request)
{
	const char *slash = request.len ? memchr(request.ptr, '/', request.len) : NULL;
	struct str top = slash ? (struct str){ request.ptr, (size_t)(slash - request.ptr) } : request;
	uint32_t i, k;

	if (c->policy->numa_align_classes.n == 0)
		return false;
	for (i = 0; i < cl->nrequests; i++) {
		if (!str_eq(cl->requests[i].name, top))
			continue;
		for (k = 0; k < cl->requests[i].ndevice_classes; k++)
			if (policy_list_has(&c->policy->numa_align_classes, cl->requests[i].device_classes[k]))
				return true;
	}
	return false;
}

static void rule_numa_split(struct check *c, const struct resource_claim *cl)
{
	char zones[2][32];
	struct str devs[2];
	uint32_t nz = 0, i;

	for (i = 0; i < cl->nresults && nz < 2; i++) {
		const struct allocation_result *r = &cl->results[i];
		const struct driver_policy *dp = policy_driver(c->policy, r->driver);
		const struct view_device *d;
		char buf[32];
		struct str z;

		if (!(dp && dp->numa_align) && !class_aligned(c, cl, r->request))
			continue;
		d = view_device_current(c->view, r->driver, r->pool, r->device, NULL);
		z = ledger_device_zone(c->view, c->policy, r->driver, d, buf, sizeof(buf));
		if (str_eq_cstr(z, LEDGER_ZONE_UNKNOWN))
			continue;
		if (nz == 1 && str_eq_cstr(z, zones[0]))
			continue;
		snprintf(zones[nz], sizeof(zones[nz]), "%.*s", (int)(z.len < 31 ? z.len : 31), z.ptr);
		devs[nz++] = r->device;
	}
	if (nz < 2)
		return;
	check_violation(c, RULE_LEDGER_NUMA_SPLIT, "status.allocation.devices.results",
			"the claim's devices span NUMA zones %s (device \"%.*s\") and %s (device \"%.*s\"); the "
			"policy asks their driver or device class for one zone", zones[0], shown(devs[0]),
			devs[0].ptr, zones[1], shown(devs[1]), devs[1].ptr);
}

void ledger_rules_claim_status(struct check *c)
{
	const struct admission_request *req = c->req;
	const struct resource_claim *cl = &req->object.u.claim;

	if (!c->view || !cl->allocated || req->old_object.u.claim.allocated)
		return;   /* only a new allocation: it is immutable once set */
	check_claim_uid(c, req->object.meta.uid);
	rule_pool_fresh(c, cl);
	rule_device_duplicate(c, &req->object);
	rule_numa_split(c, cl);
}

/* --- ledger.pod.amounts ------------------------------------------------------------------ */

static bool reserved_for(const struct view *v, const struct view_claim *cl, struct str pod_uid)
{
	uint32_t i;

	for (i = 0; i < cl->nreserved; i++)
		if (str_eq_cstr(view_atom_str(view_consumer_gr(v, &view_claim_reserved_for(cl)[i])->resource), "pods") &&
		    view_uid_eq(&view_claim_reserved_for(cl)[i].uid, pod_uid))
			return true;
	return false;
}

#define MAX_RES 32

struct amounts {
	uint32_t n;
	struct str name[MAX_RES];
	struct quantity value[MAX_RES];
};

static int amounts_add(struct amounts *a, struct str name, const struct quantity *q)
{
	uint32_t i;

	for (i = 0; i < a->n; i++)
		if (str_eq(a->name[i], name))
			return quantity_add(&a->value[i], q, &a->value[i]);
	if (a->n >= MAX_RES)
		return -1;
	a->name[a->n] = name;
	a->value[a->n++] = *q;
	return 0;
}

/* What the API server stores for a computed quantity: the scheduler sends
 * Quantity.String() of it and the server parses that again, which rounds
 * anything finer than a nano unit up. */
static void as_stored(struct quantity *q)
{
	char t[QUANTITY_STR_MAX];
	struct quantity back;

	quantity_format(q, t);
	if (quantity_parse(t, strlen(t), &back) == 0)
		*q = back;
}

static bool amounts_equal(const struct amounts *a, const struct claim_resource_status *st)
{
	uint32_t i, j;

	if (a->n != st->nresources)
		return false;
	for (i = 0; i < a->n; i++) {
		for (j = 0; j < st->nresources; j++)
			if (str_eq(st->resources[j].name, a->name[i]))
				break;
		if (j == st->nresources || st->resources[j].value.err ||
		    quantity_cmp(&st->resources[j].value.value, &a->value[i]))
			return false;
	}
	return true;
}

static struct str amounts_text(struct check *c, const struct amounts *a)
{
	char text[512];
	size_t off = 0;
	uint32_t i;

	text[0] = '\0';
	for (i = 0; i < a->n && off < sizeof(text); i++) {
		char q[QUANTITY_STR_MAX];

		quantity_format(&a->value[i], q);
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%.*s=%s", i ? "," : "", shown(a->name[i]),
					a->name[i].ptr, q);
	}
	return check_printf(c, "%s", a->n ? text : "nothing");
}

static struct str status_text(struct check *c, const struct claim_resource_status *st)
{
	char text[512];
	size_t off = 0;
	uint32_t i;

	text[0] = '\0';
	for (i = 0; i < st->nresources && off < sizeof(text); i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%.*s=%.*s", i ? "," : "",
					shown(st->resources[i].name), st->resources[i].name.ptr,
					shown(st->resources[i].value.text), st->resources[i].value.text.ptr);
	return check_printf(c, "%s", st->nresources ? text : "nothing");
}

/* The status is the scheduler's PreBind write (close after the view saw
 * the allocation) and the mapping changed close to the allocation (either
 * way): the scheduler may have worked the status out under the other
 * mapping. A status written later, or a change long before or after, is
 * decided. */
static bool mapping_changing(const struct check *c, const struct view_claim *cl)
{
	uint32_t i;

	if (c->now_ns - cl->allocated_ns > MAPPING_RACE_NS)
		return false;
	for (i = 0; i < cl->nresults; i++) {
		const struct view_slice *s = NULL;

		view_device_find(c->view, view_str(c->view, cl->results[i].driver), view_str(c->view, cl->results[i].pool),
				 view_str(c->view, cl->results[i].device), &s);
		if (s && s->mapping_changed_ns && s->mapping_changed_ns + MAPPING_RACE_NS >= cl->allocated_ns &&
		    s->mapping_changed_ns <= cl->allocated_ns + MAPPING_RACE_NS)
			return true;
	}
	return false;
}

/* --- the scheduler's device lookup ------------------------------------------------------ */

/* kube-scheduler 1.36 (getDeviceFromManager) takes the first listed slice,
 * of any driver, node or generation, whose pool name and a device name
 * match the result's: any of them may have given the status. These bound
 * the search for the one that did. */
#define LOOKUP_MAX_CANDIDATES 8        /* per result */
#define LOOKUP_MAX_RESULTS 16
#define LOOKUP_MAX_COMBINATIONS 4096

struct lookup_candidate {
	struct amounts a;
	const struct view_slice *slice;  /* NULL: the ledger's own charge */
};

struct lookup {
	uint32_t nresults;
	uint32_t n[LOOKUP_MAX_RESULTS];
	struct lookup_candidate cand[LOOKUP_MAX_RESULTS][LOOKUP_MAX_CANDIDATES];
	uint32_t pick[LOOKUP_MAX_RESULTS];
};

static bool same_amounts(const struct amounts *x, const struct amounts *y)
{
	uint32_t i, j;

	if (x->n != y->n)
		return false;
	for (i = 0; i < x->n; i++) {
		for (j = 0; j < y->n && !str_eq(x->name[i], y->name[j]); j++)
			;
		if (j == y->n || quantity_cmp(&x->value[i], &y->value[j]))
			return false;
	}
	return true;
}

static void lookup_offer(struct lookup *lk, uint32_t k, const struct amounts *a, const struct view_slice *s)
{
	uint32_t i;

	for (i = 0; i < lk->n[k]; i++)
		if (same_amounts(&lk->cand[k][i].a, a))
			return;
	if (lk->n[k] < LOOKUP_MAX_CANDIDATES)
		lk->cand[k][lk->n[k]++] = (struct lookup_candidate){ *a, s };
}

/* Every device the scheduler's lookup can find for result r, into k's
 * candidates (after the ledger's charge, candidate 0). The slice the claim
 * was charged from is left out: the ledger keeps its mapping as it was at
 * the allocation, which is what the scheduler computed then. */
static void lookup_result(const struct check *c, struct lookup *lk, uint32_t k, const struct view_result *r,
			  struct str charged_slice)
{
	const struct view_atom *drivers[MAX_DRIVERS];
	struct str pool = view_str(c->view, r->pool), dev = view_str(c->view, r->device);
	uint32_t nd = view_pool_drivers(c->view, pool, drivers, MAX_DRIVERS), i, j, m;

	for (i = 0; i < nd && i < MAX_DRIVERS; i++) {
		const struct view_pool *p = view_pool_get(c->view, view_atom_str(drivers[i]), pool);

		for (j = 0; p && j < p->nnames; j++) {
			const struct view_slice *s = view_slice_get(c->view, str_from_cstr(p->slice_names[j]));

			if (s && str_eq_cstr(charged_slice, view_slice_name(s)))
				continue;
			for (m = 0; s && m < s->ndevices; m++) {
				struct view_amount now[MAX_RES];
				enum view_charge_state st;
				struct amounts a;
				int n, x;

				if (!str_eq(view_str(c->view, s->devices[m].name), dev))
					continue;
				n = view_device_amounts(c->view, &s->devices[m], r, now, MAX_RES, &st);
				if (n < 0 || st != VIEW_CHARGE_OK)
					continue;
				memset(&a, 0, sizeof(a));
				for (x = 0; x < n; x++)
					(void)amounts_add(&a, now[x].resource, &now[x].value);
				lookup_offer(lk, k, &a, s);
			}
		}
	}
}

/* Try every combination of candidates against the status (depth-first,
 * bounded); true when one gives it, with lk->pick set. */
static bool lookup_match(struct lookup *lk, uint32_t k, const struct amounts *sum,
			 const struct claim_resource_status *st, uint32_t *budget)
{
	uint32_t i, j;

	if (k == lk->nresults) {
		struct amounts t = *sum;

		for (j = 0; j < t.n; j++)
			as_stored(&t.value[j]);
		return amounts_equal(&t, st);
	}
	for (i = 0; i < lk->n[k]; i++) {
		struct amounts next = *sum;
		bool ok = true;

		if (*budget == 0)
			return false;
		(*budget)--;
		for (j = 0; j < lk->cand[k][i].a.n && ok; j++)
			ok = amounts_add(&next, lk->cand[k][i].a.name[j], &lk->cand[k][i].a.value[j]) == 0;
		lk->pick[k] = i;
		if (ok && lookup_match(lk, k + 1, &next, st, budget))
			return true;
	}
	return false;
}

/* True when the status is what the scheduler computes from some device its
 * lookup can find for each result; *why names one it took that is not the
 * ledger's (slice and driver). */
static bool scheduler_could(struct check *c, const struct view_claim *cl, const struct claim_resource_status *st,
			    struct str *why)
{
	struct lookup *lk;
	struct amounts zero;
	uint32_t k, j, budget = LOOKUP_MAX_COMBINATIONS;

	if (cl->nresults == 0 || cl->nresults > LOOKUP_MAX_RESULTS)
		return false;
	if (!(lk = arena_alloc(c->arena, sizeof(*lk)))) {
		c->error = arena_error(c->arena);
		return false;
	}
	memset(lk->n, 0, sizeof(lk->n));
	lk->nresults = cl->nresults;
	for (k = 0; k < cl->nresults; k++) {
		const struct view_charge *ch = &view_claim_charges(c->view, cl)[k];
		struct amounts own;

		memset(&own, 0, sizeof(own));
		for (j = 0; j < ch->namounts; j++)
			(void)amounts_add(&own, view_atom_str(ch->amounts[j].name), view_atom_qty(ch->amounts[j].value));
		lookup_offer(lk, k, &own, NULL);
		lookup_result(c, lk, k, &cl->results[k], ch->slice ? view_atom_str(ch->slice) : STR_LIT(""));
	}
	memset(&zero, 0, sizeof(zero));
	if (!lookup_match(lk, 0, &zero, st, &budget))
		return false;
	for (k = 0; k < cl->nresults; k++) {
		const struct view_slice *s = lk->cand[k][lk->pick[k]].slice;

		if (s && lk->pick[k] != 0) {
			*why = check_printf(c, "device \"%.*s\" of slice \"%s\" (driver %.*s, pool generation %lld)",
					    STR_FMT(view_str(c->view, cl->results[k].device)), view_slice_name(s),
					    STR_FMT(view_str(c->view, s->driver)), (long long)s->generation);
			return true;
		}
	}
	*why = STR_LIT("another device of that pool and device name");
	return true;
}

static bool entry_unchanged(const struct pod *old, const struct claim_resource_status *st)
{
	uint32_t i;

	for (i = 0; i < old->nclaim_statuses; i++)
		if (str_eq(old->claim_statuses[i].raw, st->raw))
			return true;
	return false;
}

/* --- ledger.pod.omitted --------------------------------------------------------------------- */

static bool status_names(const struct pod *p, struct str claim)
{
	uint32_t i;

	for (i = 0; i < p->nclaim_statuses; i++)
		if (str_eq(p->claim_statuses[i].claim_name, claim))
			return true;
	return false;
}

/* Claims reserved for the Pod whose devices carry mappings, left out of
 * the status. kube-scheduler 1.36 works the status out only for claims
 * allocated in the scheduling cycle that binds the Pod
 * (calculateAndCheckNodeAllocatableResources reads only that cycle's
 * allocations), so a claim allocated in an earlier cycle - left allocated
 * by an Unreserve after a refusal part-way through the binding - is not
 * counted on the node. Denying the write would not bring it back: the
 * next cycle computes the same status. So it is a warning (the rule can be
 * no stricter), counted, and an Event on the Pod. */
static void rule_pod_omitted(struct check *c, struct str ns, const struct pod *cur, struct str pod_uid)
{
	uint32_t i, k, j;

	for (i = 0; i < cur->nresource_claims && !c->error; i++) {
		struct str name = model_pod_claim_name(cur, &cur->resource_claims[i]);
		const struct view_claim *cl;
		struct amounts left;
		bool dup = false;

		if (!name.len || status_names(cur, name))
			continue;
		for (k = 0; k < i; k++)
			if (str_eq(model_pod_claim_name(cur, &cur->resource_claims[k]), name))
				dup = true;
		cl = dup ? NULL : view_claim_get(c->view, ns, name);
		if (!cl || !cl->allocated || !cl->charges.id || !reserved_for(c->view, cl, pod_uid))
			continue;
		memset(&left, 0, sizeof(left));
		for (k = 0; k < cl->nresults; k++) {
			const struct view_charge *ch = &view_claim_charges(c->view, cl)[k];

			if (ch->state != VIEW_CHARGE_OK)
				continue;
			for (j = 0; j < ch->namounts; j++)
				(void)amounts_add(&left, view_atom_str(ch->amounts[j].name), view_atom_qty(ch->amounts[j].value));
		}
		if (left.n == 0)
			continue;   /* no mapping: the scheduler rightly leaves it out */
		{
			struct str node = cl->node_local ? view_str(c->view, cl->node_name) : cur->node_name;
			char uid[64];

			view_uid_format(&cl->uid, uid, sizeof(uid));
			check_claim_uid(c, uid_text(c, &cl->uid));
			check_violation_cause(c, RULE_LEDGER_POD_OMITTED, 0, false,
					      STR_LIT("status.nodeAllocatableResourceClaimStatuses"),
					      "claim %.*s/%.*s (uid %s) is reserved for this Pod and its devices map %.*s on "
					      "node %.*s, but the status leaves it out: kube-scheduler does not count those "
					      "amounts there (1.36 counts only claims allocated in the cycle that binds the "
					      "Pod; this one was allocated earlier)",
					      shown(ns), ns.ptr, shown(name), name.ptr, uid, STR_FMT(amounts_text(c, &left)),
					      node.len ? shown(node) : 9, node.len ? node.ptr : "(unbound)");
		}
	}
}

void ledger_rules_pod_status(struct check *c)
{
	const struct admission_request *req = c->req;
	const struct pod *cur = &req->object.u.pod, *old = &req->old_object.u.pod;
	struct str ns = req->object.meta.namespace.len ? req->object.meta.namespace : req->namespace;
	uint32_t i, k, j;

	if (!c->view || cur->nclaim_statuses == 0 ||
	    (old->has_claim_statuses == cur->has_claim_statuses && str_eq(old->claim_statuses_raw, cur->claim_statuses_raw)))
		return;
	if (stale(c)) {
		check_undecided(c, RULE_LEDGER_POD_AMOUNTS, LEDGER_REASON_VIEW_STALE);
		return;
	}
	for (i = 0; i < cur->nclaim_statuses && !c->error; i++) {
		const struct claim_resource_status *st = &cur->claim_statuses[i];
		const struct view_claim *cl;
		struct amounts want;
		bool charged = true;

		if (entry_unchanged(old, st))
			continue;
		cl = view_claim_get(c->view, ns, st->claim_name);
		/* The scheduler writes the claim's allocation and reservation
		 * first, then this status: a view without them is behind. */
		if (!cl || !cl->allocated || !cl->charges.id || !reserved_for(c->view, cl, req->object.meta.uid)) {
			check_undecided(c, RULE_LEDGER_POD_AMOUNTS, LEDGER_REASON_CLAIM_UNSEEN);
			continue;
		}
		check_claim_uid(c, uid_text(c, &cl->uid));
		memset(&want, 0, sizeof(want));
		for (k = 0; k < cl->nresults && charged; k++) {
			const struct view_charge *ch = &view_claim_charges(c->view, cl)[k];

			if (ch->state != VIEW_CHARGE_OK) {
				charged = false;
				break;
			}
			for (j = 0; j < ch->namounts; j++)
				if (amounts_add(&want, view_atom_str(ch->amounts[j].name), view_atom_qty(ch->amounts[j].value)))
					charged = false;
		}
		if (!charged) {
			check_undecided(c, RULE_LEDGER_POD_AMOUNTS, LEDGER_REASON_CLAIM_UNCHARGED);
			continue;
		}
		for (k = 0; k < want.n; k++)
			as_stored(&want.value[k]);
		if (amounts_equal(&want, st))
			continue;
		if (mapping_changing(c, cl)) {
			check_undecided(c, RULE_LEDGER_POD_AMOUNTS, LEDGER_REASON_MAPPING_CHANGING);
			continue;
		}
		{
			struct str why = { "", 0 };

			if (scheduler_could(c, cl, st, &why)) {
				check_warning_cause(c, RULE_LEDGER_POD_AMOUNTS, LEDGER_AMOUNTS_AMBIGUOUS,
						    check_printf(c, "status.nodeAllocatableResourceClaimStatuses[%u].resources", i),
						    "claim %.*s/%.*s is charged %.*s by its own device, but the status says "
						    "%.*s, which kube-scheduler 1.36 computes from %.*s: it finds a device by "
						    "pool and device name alone, whatever the driver or generation. Allowed; "
						    "the ledger keeps its own charge (see slice.pool.collision for pools two "
						    "drivers name alike; an older generation's slice leaves when its driver "
						    "deletes it)",
						    shown(ns), ns.ptr, shown(st->claim_name), st->claim_name.ptr,
						    STR_FMT(amounts_text(c, &want)), STR_FMT(status_text(c, st)), STR_FMT(why));
				continue;
			}
		}
		{
			const struct view_charge *ch0 = cl->nresults ? &view_claim_charges(c->view, cl)[0] : NULL;
			char uid[64];

			view_uid_format(&cl->uid, uid, sizeof(uid));
			check_violation_cause(c, RULE_LEDGER_POD_AMOUNTS, 0, true,
					      check_printf(c, "status.nodeAllocatableResourceClaimStatuses[%u].resources", i),
					      "claim %.*s/%.*s (uid %s) is charged %.*s (mapping of slice \"%.*s\" at "
					      "resourceVersion %.*s, fingerprint %.*s); the status says %.*s",
					      shown(ns), ns.ptr, shown(st->claim_name), st->claim_name.ptr, uid,
					      STR_FMT(amounts_text(c, &want)),
					      STR_FMT(ch0 ? view_atom_str(ch0->slice) : STR_LIT("")),
					      STR_FMT(ch0 ? view_atom_str(ch0->slice_rv) : STR_LIT("")),
					      STR_FMT(ch0 && ch0->fingerprint ? view_atom_str(ch0->fingerprint) : STR_LIT("-")),
					      STR_FMT(status_text(c, st)));
		}
	}
	if (!c->error)
		rule_pod_omitted(c, ns, cur, req->object.meta.uid);
}
