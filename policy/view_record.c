/* view_record.c - decoded objects into the view's compact records.
 *
 * A record is one allocation: the struct, its arrays and the strings only
 * it holds (names, resourceVersions, UIDs that are not canonical). Every
 * string or quantity that repeats is an atom. The size is worked out
 * first, from the decoded object and the parsed attributes and request
 * policies, so the record is allocated once, zeroed, and filled by a bump
 * pointer; until it is complete, freeing it drops exactly the atoms taken
 * so far. Attributes and request policies come as JSON text from the
 * decoder (the request path never reads them) and are parsed here with
 * the same scanner, into the builder's scratch arena. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "quantity.h"
#include "view_impl.h"

#define ALIGN 8

struct bump {
	char *p;
	char *end;
};

static void *take(struct bump *bp, size_t n)
{
	char *p = bp->p;

	bp->p += (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	return bp->p <= bp->end ? p : NULL;
}

static size_t rounded(size_t n)
{
	return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static const char *take_text(struct bump *bp, struct str s)
{
	char *p = take(bp, s.len + 1);

	if (!p)
		return NULL;
	if (s.len)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

/* --- UIDs ----------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Canonical lowercase 8-4-4-4-12 into 16 bytes. */
static bool uid_parse(struct str s, uint8_t bin[16])
{
	size_t i, k = 0;

	if (s.len != 36)
		return false;
	for (i = 0; i < 36;) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s.ptr[i] != '-')
				return false;
			i++;
			continue;
		}
		hi = hexval(s.ptr[i]);
		lo = hexval(s.ptr[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		bin[k++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return true;
}

static size_t uid_size(struct str s)
{
	uint8_t bin[16];

	return uid_parse(s, bin) ? 0 : rounded(s.len + 1);
}

static int uid_fill(struct bump *bp, struct str s, struct view_uid *u)
{
	if (uid_parse(s, u->bin))
		return 0;
	u->text = take_text(bp, s);
	return u->text ? 0 : -EINVAL;
}

void view_uid_format(const struct view_uid *u, char *buf, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char t[37];
	size_t i, k = 0;

	if (u->text) {
		snprintf(buf, n, "%s", u->text);
		return;
	}
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			t[k++] = '-';
		t[k++] = hex[u->bin[i] >> 4];
		t[k++] = hex[u->bin[i] & 15];
	}
	t[k] = '\0';
	snprintf(buf, n, "%s", t);
}

bool view_uid_eq(const struct view_uid *u, struct str s)
{
	uint8_t bin[16];

	if (u->text)
		return str_eq_cstr(s, u->text);
	return uid_parse(s, bin) && memcmp(bin, u->bin, 16) == 0;
}

/* --- attributes and request policies, from their JSON text ---------------- */

struct p_attr {
	struct str name;
	enum view_attr_type type;
	bool b;
	int64_t i;
	struct str s;
	bool keep;                  /* a type the view holds (not a list) */
};

struct p_cap {
	bool has_policy;
	bool has_default, has_min, has_max, has_step;
	struct quantity dflt, min, max, step;
	uint32_t nvalid;
	struct quantity *valid;
};

struct p_dev {
	uint32_t nattrs;            /* kept ones */
	uint32_t nparsed;
	struct p_attr *attrs;
	struct p_cap *caps;
};

/* Each fails with a message in err naming the device and member. */
static int fail(char *err, size_t n, const char *what, struct str dev, const char *why)
{
	snprintf(err, n, "spec.devices[\"%.*s\"].%s: %s", STR_FMT(dev), what, why);
	return -EINVAL;
}

static int parse_qty_value(struct jscan *s, struct arena *a, struct quantity *q)
{
	struct jscan_str js;
	struct str t;

	if (jscan_peek(s) == JSCAN_NUMBER) {
		if (jscan_number(s, &t) < 0)
			return -EINVAL;
	} else if (jscan_string(s, &js) < 0 || jscan_str_decode(&js, a, &t) < 0) {
		return -EINVAL;
	}
	return quantity_parse(t.ptr, t.len, q) == 0 ? 0 : -EINVAL;
}

static int parse_attrs(struct str raw, struct arena *a, struct p_dev *pd, uint32_t max)
{
	struct jscan s;
	struct jscan_str key;
	uint32_t cap = 0;
	int r;

	pd->nattrs = pd->nparsed = 0;
	pd->attrs = NULL;
	if (raw.len == 0)
		return 0;
	jscan_init(&s, raw.ptr, raw.len, 8);
	if (jscan_object_enter(&s) < 0)
		return -EINVAL;
	while ((r = jscan_object_next(&s, &key)) == 1) {
		struct p_attr *at;
		struct jscan_str vk, vs;

		if (pd->nparsed >= max)
			return -E2BIG;
		if (pd->nparsed == cap) {
			uint32_t ncap = cap ? cap * 2 : 8;
			struct p_attr *g = arena_grow(a, pd->attrs, cap * sizeof(*g), ncap * sizeof(*g));

			if (!g)
				return -ENOMEM;
			pd->attrs = g;
			cap = ncap;
		}
		at = &pd->attrs[pd->nparsed++];
		memset(at, 0, sizeof(*at));
		if (jscan_str_decode(&key, a, &at->name) < 0 || jscan_object_enter(&s) < 0)
			return -EINVAL;
		while ((r = jscan_object_next(&s, &vk)) == 1) {
			if (jscan_str_is(&vk, "int")) {
				at->type = VIEW_ATTR_INT;
				at->keep = jscan_int64(&s, &at->i) == 0;
			} else if (jscan_str_is(&vk, "bool")) {
				at->type = VIEW_ATTR_BOOL;
				at->keep = jscan_bool(&s, &at->b) == 0;
			} else if (jscan_str_is(&vk, "string") || jscan_str_is(&vk, "version")) {
				at->type = jscan_str_is(&vk, "string") ? VIEW_ATTR_STRING : VIEW_ATTR_VERSION;
				at->keep = jscan_string(&s, &vs) == 0 && jscan_str_decode(&vs, a, &at->s) == 0;
			} else if (jscan_skip(&s, NULL) < 0) {
				return -EINVAL;
			}
			if (jscan_error(&s))
				return -EINVAL;
		}
		if (r < 0)
			return -EINVAL;
		if (at->keep)
			pd->nattrs++;
	}
	return r < 0 || jscan_finish(&s) < 0 ? -EINVAL : 0;
}

static int parse_policy(struct str raw, struct arena *a, struct p_cap *pc, uint32_t max)
{
	struct jscan s;
	struct jscan_str key, rk;
	uint32_t cap = 0;
	int r, rc;

	memset(pc, 0, sizeof(*pc));
	if (raw.len == 0)
		return 0;
	pc->has_policy = true;
	jscan_init(&s, raw.ptr, raw.len, 8);
	if (jscan_object_enter(&s) < 0)
		return -EINVAL;
	while ((r = jscan_object_next(&s, &key)) == 1) {
		if (jscan_str_is(&key, "default")) {
			if (jscan_null(&s) == 1)
				continue;
			if ((rc = parse_qty_value(&s, a, &pc->dflt)) != 0)
				return rc;
			pc->has_default = true;
		} else if (jscan_str_is(&key, "validValues")) {
			if (jscan_null(&s) == 1)
				continue;
			if (jscan_array_enter(&s) < 0)
				return -EINVAL;
			while ((r = jscan_array_next(&s)) == 1) {
				if (pc->nvalid >= max)
					return -E2BIG;
				if (pc->nvalid == cap) {
					uint32_t ncap = cap ? cap * 2 : 8;
					struct quantity *g = arena_grow(a, pc->valid, cap * sizeof(*g),
									ncap * sizeof(*g));

					if (!g)
						return -ENOMEM;
					pc->valid = g;
					cap = ncap;
				}
				if ((rc = parse_qty_value(&s, a, &pc->valid[pc->nvalid++])) != 0)
					return rc;
			}
			if (r < 0)
				return -EINVAL;
		} else if (jscan_str_is(&key, "validRange")) {
			if (jscan_null(&s) == 1)
				continue;
			if (jscan_object_enter(&s) < 0)
				return -EINVAL;
			while ((r = jscan_object_next(&s, &rk)) == 1) {
				struct quantity *q = NULL;
				bool *has = NULL;

				if (jscan_str_is(&rk, "min"))
					q = &pc->min, has = &pc->has_min;
				else if (jscan_str_is(&rk, "max"))
					q = &pc->max, has = &pc->has_max;
				else if (jscan_str_is(&rk, "step"))
					q = &pc->step, has = &pc->has_step;
				if (!q) {
					if (jscan_skip(&s, NULL) < 0)
						return -EINVAL;
					continue;
				}
				if (jscan_null(&s) == 1)
					continue;
				if ((rc = parse_qty_value(&s, a, q)) != 0)
					return rc;
				*has = true;
			}
			if (r < 0)
				return -EINVAL;
		} else if (jscan_skip(&s, NULL) < 0) {
			return -EINVAL;
		}
	}
	return r < 0 || jscan_finish(&s) < 0 ? -EINVAL : 0;
}

/* --- slices --------------------------------------------------------------- */

#define MAX_ATTRS 256
#define MAX_VALID 1024

static void put_mapping(struct atom_set *as, const struct view_mapping *m)
{
	atom_put(as, m->resource);
	atom_put(as, m->multiplier);
	atom_put(as, m->capacity_key);
	atom_put(as, m->capacity_multiplier);
	atom_put(as, m->overhead_per_pod);
	atom_put(as, m->overhead_per_container);
}

static void slice_put_atoms(struct atom_set *as, const struct view_slice *s)
{
	uint32_t i, j, k;

	atom_put(as, s->driver);
	atom_put(as, s->pool);
	atom_put(as, s->node_name);
	atom_put(as, s->mapping_label);
	for (i = 0; s->devices && i < s->ndevices; i++) {
		const struct view_device *d = &s->devices[i];

		atom_put(as, d->name);
		atom_put(as, d->node_name);
		for (j = 0; d->attrs && j < d->nattrs; j++) {
			atom_put(as, d->attrs[j].name);
			atom_put(as, d->attrs[j].s);
		}
		for (j = 0; d->capacity && j < d->ncapacity; j++) {
			const struct view_capacity *c = &d->capacity[j];

			atom_put(as, c->name);
			atom_put(as, c->value);
			atom_put(as, c->dflt);
			atom_put(as, c->min);
			atom_put(as, c->max);
			atom_put(as, c->step);
			for (k = 0; c->valid && k < c->nvalid; k++)
				atom_put(as, c->valid[k]);
		}
		for (j = 0; d->mappings && j < d->nmappings; j++)
			put_mapping(as, &d->mappings[j]);
	}
}

/* Intern into *dst; on failure rc is set and later calls do nothing. */
struct filler {
	struct atom_set *as;
	int rc;
};

static const struct view_atom *S(struct filler *f, struct str v)
{
	if (f->rc)
		return NULL;
	return atom_str(f->as, v, &f->rc);
}

static const struct view_atom *S_opt(struct filler *f, struct str v)
{
	return v.len ? S(f, v) : NULL;
}

static const struct view_atom *Q(struct filler *f, const struct quantity *q)
{
	if (f->rc)
		return NULL;
	return atom_qty(f->as, q, &f->rc);
}

static const struct view_atom *Qf(struct filler *f, const struct quantity_field *q)
{
	return q->present && q->err == 0 ? Q(f, &q->value) : NULL;
}

int view_record_slice(struct view_builder *b, const struct k8s_object *o, struct view_slice **out,
		      char *err, size_t errn)
{
	const struct resource_slice *sl = &o->u.slice;
	struct filler f = { &b->atoms, 0 };
	struct p_dev *pd = NULL;
	struct view_slice *s = NULL;
	struct view_device *devs;
	struct bump bp;
	size_t size;
	uint32_t i, j, k;
	int rc;

	*out = NULL;
	arena_reset(b->scratch);
	if (sl->ndevices && !(pd = arena_calloc(b->scratch, sl->ndevices, sizeof(*pd))))
		return -ENOMEM;
	size = rounded(sizeof(*s)) + rounded(o->meta.name.len + 1) +
	       rounded(o->meta.resource_version.len + 1) + rounded((size_t)sl->ndevices * sizeof(*devs));
	for (i = 0; i < sl->ndevices; i++) {
		const struct device *d = &sl->devices[i];

		rc = parse_attrs(d->attributes_raw, b->scratch, &pd[i], MAX_ATTRS);
		if (rc)
			return rc == -ENOMEM ? rc : fail(err, errn, "attributes", d->name,
							  "not a map of typed attribute values");
		if (d->ncapacity && !(pd[i].caps = arena_calloc(b->scratch, d->ncapacity, sizeof(*pd[i].caps))))
			return -ENOMEM;
		for (j = 0; j < d->ncapacity; j++) {
			if (d->capacity[j].value.present && d->capacity[j].value.err)
				return fail(err, errn, "capacity", d->name, "a value is not a quantity");
			rc = parse_policy(d->capacity[j].policy_raw, b->scratch, &pd[i].caps[j], MAX_VALID);
			if (rc)
				return rc == -ENOMEM ? rc : fail(err, errn, "capacity", d->name,
								  "requestPolicy does not parse");
			size += rounded((size_t)pd[i].caps[j].nvalid * sizeof(void *));
		}
		for (j = 0; j < d->nmappings; j++) {
			const struct mapping *m = &d->mappings[j];

			if ((m->multiplier.present && m->multiplier.err) ||
			    (m->capacity_multiplier.present && m->capacity_multiplier.err) ||
			    (m->overhead_per_pod.present && m->overhead_per_pod.err) ||
			    (m->overhead_per_container.present && m->overhead_per_container.err))
				return fail(err, errn, "nodeAllocatableResourceMappings", d->name,
					    "a multiplier or overhead is not a quantity");
		}
		size += rounded((size_t)pd[i].nattrs * sizeof(struct view_attr)) +
			rounded((size_t)d->ncapacity * sizeof(struct view_capacity)) +
			rounded((size_t)d->nmappings * sizeof(struct view_mapping));
	}
	if (size > UINT32_MAX)
		return -E2BIG;
	s = calloc(1, size);
	if (!s)
		return -ENOMEM;
	bp.p = (char *)s;
	bp.end = (char *)s + size;
	take(&bp, sizeof(*s));
	s->h.size = (uint32_t)size;
	s->name = take_text(&bp, o->meta.name);
	s->resource_version = take_text(&bp, o->meta.resource_version);
	devs = sl->ndevices ? take(&bp, (size_t)sl->ndevices * sizeof(*devs)) : NULL;
	s->devices = devs;
	s->ndevices = sl->ndevices;
	s->generation = sl->pool_generation;
	s->resource_slice_count = sl->resource_slice_count;
	s->all_nodes = sl->all_nodes;
	s->has_node_selector = sl->has_node_selector;
	s->per_device_node_selection = sl->per_device_node_selection;
	/* Arrays first, atoms after: a failure part way frees what was taken. */
	for (i = 0; i < sl->ndevices; i++) {
		const struct device *d = &sl->devices[i];
		struct view_device *vd = &devs[i];

		vd->nattrs = (uint16_t)pd[i].nattrs;
		vd->ncapacity = (uint16_t)d->ncapacity;
		vd->nmappings = (uint16_t)d->nmappings;
		vd->attrs = pd[i].nattrs ? take(&bp, pd[i].nattrs * sizeof(*vd->attrs)) : NULL;
		vd->capacity = d->ncapacity ? take(&bp, d->ncapacity * sizeof(*vd->capacity)) : NULL;
		vd->mappings = d->nmappings ? take(&bp, d->nmappings * sizeof(*vd->mappings)) : NULL;
		for (j = 0; j < d->ncapacity; j++) {
			struct view_capacity *c = (struct view_capacity *)&vd->capacity[j];

			c->nvalid = pd[i].caps[j].nvalid;
			c->valid = c->nvalid ? take(&bp, c->nvalid * sizeof(void *)) : NULL;
		}
	}
	if (!s->name || !s->resource_version || bp.p > bp.end) {
		free(s);
		return -EINVAL;  /* the size above is wrong: a bug, refused */
	}
	s->driver = S(&f, sl->driver);
	s->pool = S(&f, sl->pool_name);
	s->node_name = S_opt(&f, sl->node_name);
	s->mapping_label = o->meta.has_mapping_label ? S(&f, o->meta.mapping_label) : NULL;
	for (i = 0; i < sl->ndevices && !f.rc; i++) {
		const struct device *d = &sl->devices[i];
		struct view_device *vd = &devs[i];
		uint32_t na = 0;

		vd->name = S(&f, d->name);
		vd->node_name = S_opt(&f, d->node_name);
		vd->allow_multiple_allocations = d->allow_multiple_allocations;
		vd->all_nodes = d->all_nodes;
		vd->has_node_selector = d->has_node_selector;
		for (j = 0; j < pd[i].nparsed; j++) {
			const struct p_attr *pa = &pd[i].attrs[j];
			struct view_attr *va;

			if (!pa->keep)
				continue;
			va = (struct view_attr *)&vd->attrs[na++];
			va->type = pa->type;
			va->b = pa->b;
			va->i = pa->i;
			va->name = S(&f, pa->name);
			if (pa->type == VIEW_ATTR_STRING || pa->type == VIEW_ATTR_VERSION)
				va->s = S(&f, pa->s);
		}
		for (j = 0; j < d->ncapacity; j++) {
			const struct p_cap *pc = &pd[i].caps[j];
			struct view_capacity *c = (struct view_capacity *)&vd->capacity[j];

			c->name = S(&f, d->capacity[j].name);
			c->value = Qf(&f, &d->capacity[j].value);
			c->has_policy = pc->has_policy;
			c->dflt = pc->has_default ? Q(&f, &pc->dflt) : NULL;
			c->min = pc->has_min ? Q(&f, &pc->min) : NULL;
			c->max = pc->has_max ? Q(&f, &pc->max) : NULL;
			c->step = pc->has_step ? Q(&f, &pc->step) : NULL;
			for (k = 0; k < pc->nvalid; k++)
				((const struct view_atom **)c->valid)[k] = Q(&f, &pc->valid[k]);
		}
		for (j = 0; j < d->nmappings; j++) {
			const struct mapping *m = &d->mappings[j];
			struct view_mapping *vm = (struct view_mapping *)&vd->mappings[j];

			vm->shape = m->shape;
			vm->resource = S(&f, m->resource);
			vm->multiplier = Qf(&f, &m->multiplier);
			vm->capacity_key = m->has_capacity_key ? S(&f, m->capacity_key) : NULL;
			vm->capacity_multiplier = Qf(&f, &m->capacity_multiplier);
			vm->overhead_per_pod = Qf(&f, &m->overhead_per_pod);
			vm->overhead_per_container = Qf(&f, &m->overhead_per_container);
		}
	}
	if (f.rc) {
		b->record_bytes += s->h.size;  /* view_record_free() takes it off */
		view_record_free(b, LIMBO_SLICE, s);
		if (f.rc == -E2BIG)
			snprintf(err, errn, "more distinct names and quantities than the view holds (%u)",
				 b->lim.max_atoms);
		return f.rc;
	}
	*out = s;
	return 0;
}

/* --- claims --------------------------------------------------------------- */

static void claim_put_atoms(struct atom_set *as, const struct view_claim *c)
{
	uint32_t i, j;

	atom_put(as, c->namespace);
	atom_put(as, c->node_name);
	for (i = 0; c->results && i < c->nresults; i++) {
		const struct view_result *r = &c->results[i];

		atom_put(as, r->request);
		atom_put(as, r->driver);
		atom_put(as, r->pool);
		atom_put(as, r->device);
		atom_put(as, r->share_id);
		for (j = 0; r->consumed && j < r->nconsumed; j++) {
			atom_put(as, r->consumed[j].name);
			atom_put(as, r->consumed[j].value);
		}
	}
	for (i = 0; c->reserved_for && i < c->nreserved; i++) {
		atom_put(as, c->reserved_for[i].api_group);
		atom_put(as, c->reserved_for[i].resource);
	}
}

int view_record_claim(struct view_builder *b, const struct k8s_object *o, struct view_claim **out,
		      char *err, size_t errn)
{
	const struct resource_claim *cl = &o->u.claim;
	struct filler f = { &b->atoms, 0 };
	struct view_claim *c;
	struct view_result *res;
	struct view_consumer *cons;
	struct bump bp;
	size_t size;
	uint32_t i, j;

	*out = NULL;
	size = rounded(sizeof(*c)) + rounded(o->meta.name.len + 1) +
	       rounded(o->meta.resource_version.len + 1) + uid_size(o->meta.uid) +
	       rounded((size_t)cl->nresults * sizeof(*res)) +
	       rounded((size_t)cl->nreserved_for * sizeof(*cons));
	for (i = 0; i < cl->nresults; i++) {
		for (j = 0; j < cl->results[i].nconsumed_capacity; j++)
			if (cl->results[i].consumed_capacity[j].value.err) {
				snprintf(err, errn, "status.allocation.devices.results[%u].consumedCapacity: "
					 "a value is not a quantity", i);
				return -EINVAL;
			}
		size += rounded((size_t)cl->results[i].nconsumed_capacity * sizeof(struct view_named_qty));
	}
	for (i = 0; i < cl->nreserved_for; i++)
		size += rounded(cl->reserved_for[i].name.len + 1) + uid_size(cl->reserved_for[i].uid);
	if (size > UINT32_MAX)
		return -E2BIG;
	c = calloc(1, size);
	if (!c)
		return -ENOMEM;
	bp.p = (char *)c;
	bp.end = (char *)c + size;
	take(&bp, sizeof(*c));
	c->h.size = (uint32_t)size;
	c->name = take_text(&bp, o->meta.name);
	c->resource_version = take_text(&bp, o->meta.resource_version);
	uid_fill(&bp, o->meta.uid, &c->uid);
	c->allocated = cl->allocated;
	c->node_local = cl->node_local;
	c->deleting = o->meta.deleting;
	res = cl->nresults ? take(&bp, cl->nresults * sizeof(*res)) : NULL;
	c->results = res;
	c->nresults = cl->nresults;
	for (i = 0; i < cl->nresults; i++) {
		res[i].nconsumed = cl->results[i].nconsumed_capacity;
		res[i].consumed = res[i].nconsumed ? take(&bp, res[i].nconsumed * sizeof(struct view_named_qty))
						   : NULL;
	}
	cons = cl->nreserved_for ? take(&bp, cl->nreserved_for * sizeof(*cons)) : NULL;
	c->reserved_for = cons;
	c->nreserved = cl->nreserved_for;
	for (i = 0; i < cl->nreserved_for; i++) {
		cons[i].name = take_text(&bp, cl->reserved_for[i].name);
		uid_fill(&bp, cl->reserved_for[i].uid, &cons[i].uid);
	}
	if (!c->name || !c->resource_version || bp.p > bp.end) {
		free(c);
		return -EINVAL;
	}
	c->namespace = S(&f, o->meta.namespace);
	c->node_name = cl->node_local ? S(&f, cl->allocated_node) : NULL;
	for (i = 0; i < cl->nresults; i++) {
		const struct allocation_result *ar = &cl->results[i];

		res[i].request = S(&f, ar->request);
		res[i].driver = S(&f, ar->driver);
		res[i].pool = S(&f, ar->pool);
		res[i].device = S(&f, ar->device);
		res[i].share_id = S_opt(&f, ar->share_id);
		for (j = 0; j < ar->nconsumed_capacity; j++) {
			struct view_named_qty *q = (struct view_named_qty *)&res[i].consumed[j];

			q->name = S(&f, ar->consumed_capacity[j].name);
			q->value = Qf(&f, &ar->consumed_capacity[j].value);
		}
	}
	for (i = 0; i < cl->nreserved_for; i++) {
		cons[i].api_group = S(&f, cl->reserved_for[i].api_group);
		cons[i].resource = S(&f, cl->reserved_for[i].resource);
	}
	if (f.rc) {
		b->record_bytes += c->h.size;
		view_record_free(b, LIMBO_CLAIM, c);
		if (f.rc == -E2BIG)
			snprintf(err, errn, "more distinct names and quantities than the view holds (%u)",
				 b->lim.max_atoms);
		return f.rc;
	}
	*out = c;
	return 0;
}

/* --- pools ---------------------------------------------------------------- */

int view_record_pool(struct view_builder *b, const struct view_pool *tmpl, const struct str *names,
		     uint32_t nnames, struct view_pool **out)
{
	struct view_pool *p;
	const char **list;
	struct bump bp;
	size_t size = rounded(sizeof(*p)) + rounded((size_t)nnames * sizeof(char *));
	uint32_t i;

	(void)b;
	*out = NULL;
	for (i = 0; i < nnames; i++)
		size += rounded(names[i].len + 1);
	if (size > UINT32_MAX)
		return -E2BIG;
	p = calloc(1, size);
	if (!p)
		return -ENOMEM;
	bp.p = (char *)p;
	bp.end = (char *)p + size;
	take(&bp, sizeof(*p));
	*p = *tmpl;
	p->h.size = (uint32_t)size;
	list = nnames ? take(&bp, nnames * sizeof(char *)) : NULL;
	for (i = 0; i < nnames; i++)
		list[i] = take_text(&bp, names[i]);
	p->nnames = nnames;
	p->slice_names = list;
	/* The template's atoms are shared: one more reference each. */
	((struct view_atom *)(uintptr_t)p->driver)->refs++;
	((struct view_atom *)(uintptr_t)p->name)->refs++;
	*out = p;
	return 0;
}

void view_record_free(struct view_builder *b, enum limbo_kind kind, void *p)
{
	switch (kind) {
	case LIMBO_SLICE:
		slice_put_atoms(&b->atoms, p);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case LIMBO_CLAIM:
		claim_put_atoms(&b->atoms, p);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case LIMBO_POOL:
		atom_put(&b->atoms, ((struct view_pool *)p)->driver);
		atom_put(&b->atoms, ((struct view_pool *)p)->name);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case LIMBO_MEM:
		break;
	}
	free(p);
}
