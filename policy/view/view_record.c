/* view_record.c - decoded objects into the view's compact records.
 *
 * A record is one allocation: the struct, its arrays and the strings only
 * it holds (names, resourceVersions, UIDs that are not canonical). Every
 * string or quantity that repeats is an atom, and so is every array of
 * them that repeats (a blob: a device's attributes, capacities and
 * mappings; a claim's charges), which is most of a slice's bytes and a
 * third of a claim's. The size is worked out
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
#include "mutation.h"
#include "quantity.h"
#include "view_impl.h"

/* --- UIDs ----------------------------------------------------------------- */

/* A lowercase hex digit's value plus one; 0 for any other byte. */
static const uint8_t hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* Canonical lowercase 8-4-4-4-12 into 16 bytes (bin is scribbled on when
 * it is not one). Every object and consumer of a sync has a UID, so the
 * digits are looked up and checked all at once, without a branch each. */
static bool uid_parse(struct str s, uint8_t bin[16])
{
	static const uint8_t at[16] = { 0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34 };
	const unsigned char *p = (const unsigned char *)s.ptr;
	unsigned valid = 1, k;

	if (s.len != 36 || p[8] != '-' || p[13] != '-' || p[18] != '-' || p[23] != '-')
		return false;
	for (k = 0; k < 16; k++) {
		unsigned hi = hex1[p[at[k]]], lo = hex1[p[at[k] + 1]];

		valid &= (hi != 0) & (lo != 0);
		bin[k] = (uint8_t)((hi - 1) << 4 | ((lo - 1) & 15));
	}
	return valid != 0;
}

/* As bytes: canonical and of the RFC 4122 variant (bin[8] is 10xxxxxx),
 * so that bin[8] can tell the other form. */
static bool uid_as_bytes(struct str s, uint8_t bin[16])
{
	return uid_parse(s, bin) && (bin[8] & 0xc0) == 0x80;
}

const char *view_uid_text(const struct view_uid *u)
{
	const char *t;

	if ((u->bin[8] & 0xc0) != 0xc0)
		return NULL;
	memcpy(&t, u->bin, sizeof(t));
	return t;
}

void view_uid_set_text(struct view_uid *u, const char *text)
{
	memset(u->bin, 0, sizeof(u->bin));
	memcpy(u->bin, &text, sizeof(text));
	u->bin[8] = 0xc0;
}

void view_uid_bytes(const struct view_uid *u, uint8_t out[16])
{
	const char *t = view_uid_text(u);

	if (!t)
		memcpy(out, u->bin, 16);
	else if (!uid_parse(str_from_cstr(t), out))
		memset(out, 0, 16);
}

size_t view_uid_size(struct str s)
{
	uint8_t bin[16];

	return uid_as_bytes(s, bin) ? 0 : rounded(s.len + 1);
}

int view_uid_fill(struct bump *bp, struct str s, struct view_uid *u)
{
	const char *t;

	if (uid_as_bytes(s, u->bin))
		return 0;
	t = take_text(bp, s);
	view_uid_set_text(u, t);
	return t ? 0 : -EINVAL;
}

void view_uid_format(const struct view_uid *u, char *buf, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char t[37];
	const char *text = view_uid_text(u);
	size_t i, k = 0;

	if (text) {
		snprintf(buf, n, "%s", text);
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
	const char *text = view_uid_text(u);
	uint8_t bin[16];

	if (text)
		return str_eq_cstr(s, text);
	return uid_parse(s, bin) && memcmp(bin, u->bin, 16) == 0;
}

void view_uid_probe_set(struct view_uid_probe *p, struct str s)
{
	p->parsed = uid_parse(s, p->bin);
}

bool view_uid_eq_probe(const struct view_uid *u, struct str s, const struct view_uid_probe *p)
{
	const char *text = view_uid_text(u);

	if (text)
		return str_eq_cstr(s, text);
	return p->parsed && memcmp(p->bin, u->bin, 16) == 0;
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
	bool caps_inline;           /* some capacity has validValues: kept in the record */
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

static void slice_put_atoms(struct atom_set *as, const struct view_slice *s)
{
	uint32_t i, j;

	atom_put_ref(as, s->driver);
	atom_put_ref(as, s->pool);
	atom_put_ref(as, s->node_name);
	atom_put_ref(as, s->mapping_label);
	atom_put_ref(as, s->fingerprint);
	for (i = 0; s->devices && i < s->ndevices; i++) {
		const struct view_device *d = &s->devices[i];

		atom_put_ref(as, d->name);
		atom_put_ref(as, d->node_name);
		/* Attributes, capacities and mappings are blobs, but capacities
		 * with validValues, which stay in the record. */
		atom_put_ref(as, d->attrs);
		atom_put_ref(as, d->mappings);
		if (!view_in_record(s, d->capacity)) {
			atom_put(as, view_blob_of(d->capacity));
			continue;
		}
		for (j = 0; d->capacity && j < d->ncapacity; j++)
			atom_put_capacity(as, &d->capacity[j]);
	}
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
	char fp[MUTATION_FINGERPRINT_LEN + 1] = "";
	bool texts_ok;
	int rc;

	*out = NULL;
	arena_reset(b->scratch);
	/* The fingerprint of the mappings as they are: the version a claim is
	 * charged at. */
	if (model_slice_has_mappings(sl) && (rc = mutation_fingerprint(sl, b->scratch, fp)) != 0)
		return rc == -E2BIG ? -E2BIG : -ENOMEM;
	if (sl->ndevices && !(pd = arena_calloc(b->scratch, sl->ndevices, sizeof(*pd))))
		return -ENOMEM;
	size = rounded(sizeof(*s) + o->meta.name.len + 1 + o->meta.resource_version.len + 1) +
	       rounded((size_t)sl->ndevices * sizeof(*devs));
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
			pd[i].caps_inline |= pd[i].caps[j].nvalid > 0;
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
		if (pd[i].caps_inline)
			size += rounded((size_t)d->ncapacity * sizeof(struct view_capacity));
	}
	if (size > UINT32_MAX)
		return -E2BIG;
	s = view_rec_alloc(b, size);
	if (!s)
		return -ENOMEM;
	bp.p = (char *)s;
	bp.end = (char *)s + size;
	bp.p += sizeof(*s);
	s->h.size = (uint32_t)size;
	texts_ok = take_chars(&bp, o->meta.name) && take_chars(&bp, o->meta.resource_version);
	bump_align(&bp);
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
		/* Attributes, mappings and capacities are blobs, made below. */
		if (!pd[i].caps_inline)
			continue;
		vd->capacity = d->ncapacity ? take(&bp, d->ncapacity * sizeof(*vd->capacity)) : NULL;
		for (j = 0; j < d->ncapacity; j++) {
			struct view_capacity *c = (struct view_capacity *)&vd->capacity[j];

			c->nvalid = pd[i].caps[j].nvalid;
			c->valid = c->nvalid ? take(&bp, c->nvalid * sizeof(void *)) : NULL;
		}
	}
	if (!texts_ok || bp.p > bp.end) {
		view_rec_free_mem(b, s, size);
		return -EINVAL;  /* the size above is wrong: a bug, refused */
	}
	s->driver = SR(&f, sl->driver);
	s->pool = SR(&f, sl->pool_name);
	s->node_name = SR_opt(&f, sl->node_name);
	s->mapping_label = o->meta.has_mapping_label ? SR(&f, o->meta.mapping_label) : aref_of(NULL);
	s->fingerprint = fp[0] ? SR(&f, str_from_cstr(fp)) : aref_of(NULL);
	for (i = 0; i < sl->ndevices && !f.rc; i++) {
		const struct device *d = &sl->devices[i];
		struct view_device *vd = &devs[i];
		struct view_attr *attrs = NULL;
		struct view_capacity *caps = (struct view_capacity *)vd->capacity;
		struct view_mapping *maps = NULL;
		uint32_t na = 0;

		/* Blobs are built zeroed in the scratch arena (they compare as
		 * bytes, padding included) and interned whole. */
		if ((pd[i].nattrs && !(attrs = arena_calloc(b->scratch, pd[i].nattrs, sizeof(*attrs)))) ||
		    (d->ncapacity && !caps && !(caps = arena_calloc(b->scratch, d->ncapacity, sizeof(*caps)))) ||
		    (d->nmappings && !(maps = arena_calloc(b->scratch, d->nmappings, sizeof(*maps))))) {
			f.rc = -ENOMEM;
			break;
		}
		vd->name = SR(&f, d->name);
		vd->node_name = SR_opt(&f, d->node_name);
		vd->allow_multiple_allocations = d->allow_multiple_allocations;
		vd->all_nodes = d->all_nodes;
		vd->has_node_selector = d->has_node_selector;
		for (j = 0; j < pd[i].nparsed; j++) {
			const struct p_attr *pa = &pd[i].attrs[j];
			struct view_attr *va;

			if (!pa->keep)
				continue;
			va = &attrs[na++];
			va->type = pa->type;
			va->b = pa->b;
			va->i = pa->i;
			va->name = S(&f, pa->name);
			if (pa->type == VIEW_ATTR_STRING || pa->type == VIEW_ATTR_VERSION)
				va->s = S(&f, pa->s);
		}
		for (j = 0; j < d->ncapacity; j++) {
			const struct p_cap *pc = &pd[i].caps[j];
			struct view_capacity *c = &caps[j];

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
			struct view_mapping *vm = &maps[j];

			vm->shape = m->shape;
			vm->resource = S(&f, m->resource);
			vm->multiplier = Qf(&f, &m->multiplier);
			vm->capacity_key = m->has_capacity_key ? S(&f, m->capacity_key) : NULL;
			vm->capacity_multiplier = Qf(&f, &m->capacity_multiplier);
			vm->overhead_per_pod = Qf(&f, &m->overhead_per_pod);
			vm->overhead_per_container = Qf(&f, &m->overhead_per_container);
		}
		vd->attrs = BR(&f, ATOM_ATTRS, attrs, (size_t)na * sizeof(*attrs));
		vd->mappings = BR(&f, ATOM_MAPS, maps, (size_t)d->nmappings * sizeof(*maps));
		if (!pd[i].caps_inline)
			vd->capacity = B(&f, ATOM_CAPS, caps, (size_t)d->ncapacity * sizeof(*caps));
	}
	if (f.rc) {
		b->record_bytes += s->h.size;  /* view_record_free() takes it off */
		view_record_free(b, OBJECT_RESOURCE_SLICE, s);
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
	uint32_t i;

	atom_put_ref(as, c->namespace);
	atom_put_ref(as, c->node_name);
	for (i = 0; i < c->nresults; i++) {
		const struct view_result *r = &c->results[i];

		atom_put_ref(as, r->request);
		atom_put_ref(as, r->driver);
		atom_put_ref(as, r->pool);
		atom_put_ref(as, r->device);
		atom_put_ref(as, r->share_id);
		atom_put_ref(as, r->consumed);
	}
	atom_put_ref(as, c->charges);
	for (i = 0; i < c->nreserved; i++)
		atom_put_ref(as, view_claim_reserved_for(c)[i].gr);
}

/* Charges as they are worked out, before the record exists: every atom
 * here is a reference of its own, dropped by charges_put() unless the
 * record takes it. */
struct tmp_charges {
	uint32_t n;
	struct view_charge *c;      /* zeroed, in the scratch arena; amounts are blobs */
	bool pending;
};

static void charges_put(struct atom_set *as, struct tmp_charges *t)
{
	uint32_t i;

	for (i = 0; t->c && i < t->n; i++)
		atom_put_charge(as, &t->c[i]);
	t->n = 0;
}

/* The same allocation as old's, as the API server keeps it (allocation is
 * immutable once set: a claim re-sent with its status unchanged, or with
 * only reservedFor or device status changed). */
static bool same_allocation(const struct atom_set *as, const struct view_claim *old, const struct k8s_object *o)
{
	const struct resource_claim *cl = &o->u.claim;
	uint32_t i, j;

	if (!old || !old->allocated || !cl->allocated || !view_uid_eq(&old->uid, o->meta.uid) ||
	    old->nresults != cl->nresults || old->node_local != cl->node_local ||
	    (cl->node_local && !str_eq(astr(as, old->node_name), cl->allocated_node)))
		return false;
	for (i = 0; i < cl->nresults; i++) {
		const struct view_result *r = &old->results[i];
		const struct allocation_result *a = &cl->results[i];
		const struct view_named_qty *consumed = ablob(as, r->consumed);
		uint32_t nconsumed = consumed ? atom_at(as, r->consumed)->len / (uint32_t)sizeof(*consumed) : 0;

		if (!str_eq(astr(as, r->request), a->request) || !str_eq(astr(as, r->driver), a->driver) ||
		    !str_eq(astr(as, r->pool), a->pool) || !str_eq(astr(as, r->device), a->device) ||
		    !str_eq(astr(as, r->share_id), a->share_id) || nconsumed != a->nconsumed_capacity)
			return false;
		for (j = 0; j < a->nconsumed_capacity; j++)
			if (!str_eq(view_atom_str(consumed[j].name), a->consumed_capacity[j].name) ||
			    a->consumed_capacity[j].value.err ||
			    quantity_cmp(view_atom_qty(consumed[j].value), &a->consumed_capacity[j].value.value))
				return false;
	}
	return true;
}

#define MAX_AMOUNTS 64

/* Charge each result of cl from the builder's working slices. */
static int charge(struct view_builder *b, const struct resource_claim *cl, struct tmp_charges *t)
{
	struct view_amount consumed[MAX_AMOUNTS], amounts[MAX_AMOUNTS];
	uint32_t i, j;
	int rc = 0, n;

	t->n = cl->nresults;
	t->c = arena_calloc(b->scratch, cl->nresults ? cl->nresults : 1, sizeof(*t->c));
	if (!t->c)
		return -ENOMEM;
	for (i = 0; i < cl->nresults; i++) {
		const struct allocation_result *a = &cl->results[i];
		struct view_charge *c = &t->c[i];
		const struct view_slice *sl = NULL;
		const struct view_device *d = view_builder_device(b, a->driver, a->pool, a->device, &sl);
		struct view_named_qty *out;

		if (!d) {
			c->state = VIEW_CHARGE_NO_DEVICE;
			t->pending = true;
			continue;
		}
		if (a->nconsumed_capacity > MAX_AMOUNTS)
			return -E2BIG;
		for (j = 0; j < a->nconsumed_capacity; j++)
			consumed[j] = (struct view_amount){ a->consumed_capacity[j].name,
							    a->consumed_capacity[j].value.value };
		n = view_mapping_amounts(atom_ids(&b->atoms), d, consumed, a->nconsumed_capacity, amounts, MAX_AMOUNTS, &c->state);
		if (n < 0)
			return n;
		c->slice = atom_str(&b->atoms, str_from_cstr(view_slice_name(sl)), &rc);
		if (c->slice)
			c->slice_rv = atom_str(&b->atoms, str_from_cstr(view_slice_rv(sl)), &rc);
		c->fingerprint = atom_get(atom_at(&b->atoms, sl->fingerprint));
		if (rc)
			return rc;
		out = n ? arena_calloc(b->scratch, (size_t)n, sizeof(*out)) : NULL;
		if (n && !out)
			return -ENOMEM;
		for (j = 0; j < (uint32_t)n && !rc; j++) {
			out[j].name = atom_str(&b->atoms, amounts[j].resource, &rc);
			if (!rc)
				out[j].value = atom_qty(&b->atoms, &amounts[j].value, &rc);
		}
		/* The same amounts repeat for every claim on devices mapped alike. */
		c->amounts = atom_blob(&b->atoms, ATOM_NQ, out, (size_t)n * sizeof(*out), &rc);
		c->namounts = c->amounts ? (uint32_t)n : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* The record, with old's charges carried (carry) or new ones computed. */
/* A result's consumed capacity, interned; NULL when it has none, or on
 * failure (f->rc). */
static struct view_aref consumed_blob(struct view_builder *b, struct filler *f,
						 const struct allocation_result *ar)
{
	struct view_named_qty *q;
	uint32_t j;

	if (f->rc || !ar->nconsumed_capacity)
		return aref_of(NULL);
	if (!(q = arena_calloc(b->scratch, ar->nconsumed_capacity, sizeof(*q)))) {
		f->rc = -ENOMEM;
		return aref_of(NULL);
	}
	for (j = 0; j < ar->nconsumed_capacity; j++) {
		q[j].name = S(f, ar->consumed_capacity[j].name);
		q[j].value = Qf(f, &ar->consumed_capacity[j].value);
	}
	return BR(f, ATOM_NQ, q, (size_t)ar->nconsumed_capacity * sizeof(*q));
}

static int record_claim(struct view_builder *b, const struct k8s_object *o, const struct view_claim *old,
			bool carry, int64_t allocated_ns, int64_t now, struct view_claim **out, char *err,
			size_t errn)
{
	const struct resource_claim *cl = &o->u.claim;
	struct filler f = { &b->atoms, 0 };
	struct tmp_charges tc = { 0, NULL, false };
	struct view_claim *c;
	struct view_result *res;
	struct view_consumer *cons;
	const struct view_atom *charges = NULL;   /* the blob */
	bool pending = false, texts_ok;
	struct bump bp;
	size_t size, fixed;
	uint32_t i, j;
	int rc;

	*out = NULL;
	for (i = 0; i < cl->nresults; i++)
		for (j = 0; j < cl->results[i].nconsumed_capacity; j++)
			if (cl->results[i].consumed_capacity[j].value.err) {
				snprintf(err, errn, "status.allocation.devices.results[%u].consumedCapacity: "
					 "a value is not a quantity", i);
				return -EINVAL;
			}
	if (cl->nresults > UINT16_MAX || cl->nreserved_for > UINT16_MAX) {
		snprintf(err, errn, "more results or consumers than a claim's record holds (%u)", UINT16_MAX);
		return -E2BIG;
	}
	/* The charges are a blob: claims charged from the same slice and
	 * mappings share one. A carried allocation keeps old's. */
	if (cl->allocated && carry) {
		charges = atom_at(&b->atoms, old->charges);
		atom_get(charges);
		pending = old->charge_pending;
	} else if (cl->allocated) {
		rc = charge(b, cl, &tc);
		if (rc) {
			charges_put(&b->atoms, &tc);
			return rc;
		}
		charges = view_blob_of(atom_blob(&b->atoms, ATOM_CHARGES, tc.c, (size_t)tc.n * sizeof(*tc.c), &rc));
		pending = tc.pending;
		tc.n = 0;  /* its references went to the blob */
		if (rc)
			return rc;
	}
	/* The fixed part and arrays; the claim's name and resourceVersion
	 * (unaligned text); then the UIDs held as text and the consumers'
	 * names. */
	fixed = offsetof(struct view_claim, results) + (size_t)cl->nresults * sizeof(*res) +
		(size_t)cl->nreserved_for * sizeof(*cons);
	size = rounded(fixed + o->meta.name.len + 1 + o->meta.resource_version.len + 1) + view_uid_size(o->meta.uid);
	for (i = 0; i < cl->nreserved_for; i++)
		size += cl->reserved_for[i].name.len + 1 + view_uid_size(cl->reserved_for[i].uid);
	size = rounded(size);
	if (size > UINT32_MAX || !(c = view_rec_alloc(b, size))) {
		atom_put(&b->atoms, charges);
		return size > UINT32_MAX ? -E2BIG : -ENOMEM;
	}
	bp.p = (char *)c;
	bp.end = (char *)c + size;
	bp.p += fixed;
	res = c->results;
	cons = (struct view_consumer *)(void *)&res[cl->nresults];   /* view_claim_reserved_for() */
	c->h.size = (uint32_t)size;
	c->nresults = (uint16_t)cl->nresults;
	c->nreserved = (uint16_t)cl->nreserved_for;
	texts_ok = take_chars(&bp, o->meta.name) && take_chars(&bp, o->meta.resource_version);
	bump_align(&bp);
	view_uid_fill(&bp, o->meta.uid, &c->uid);
	c->allocated = cl->allocated;
	c->node_local = cl->node_local;
	c->deleting = o->meta.deleting;
	for (i = 0; i < cl->nreserved_for; i++)
		view_uid_fill(&bp, cl->reserved_for[i].uid, &cons[i].uid);
	for (i = 0; i < cl->nreserved_for; i++) {
		const char *t = take_chars(&bp, cl->reserved_for[i].name);

		texts_ok = texts_ok && t;
		cons[i].name = t ? (uint32_t)(t - (const char *)c) : 0;
	}
	if (cl->allocated) {
		/* The record holds the blob's reference now. */
		c->charges = aref_of(charges);
		c->charge_pending = pending;
		c->allocated_ns = allocated_ns ? allocated_ns : now;
	}
	if (!texts_ok || bp.p > bp.end) {
		b->record_bytes += c->h.size;
		view_record_free(b, OBJECT_RESOURCE_CLAIM, c);
		return -EINVAL;
	}
	c->namespace = SR(&f, o->meta.namespace);
	c->node_name = cl->node_local ? SR(&f, cl->allocated_node) : aref_of(NULL);
	for (i = 0; i < cl->nresults; i++) {
		const struct allocation_result *ar = &cl->results[i];

		res[i].request = SR(&f, ar->request);
		res[i].driver = SR(&f, ar->driver);
		res[i].pool = SR(&f, ar->pool);
		res[i].device = SR(&f, ar->device);
		res[i].share_id = SR_opt(&f, ar->share_id);
		res[i].consumed = consumed_blob(b, &f, ar);
	}
	for (i = 0; i < cl->nreserved_for; i++) {
		struct view_group_resource gr = { S(&f, cl->reserved_for[i].api_group),
						  S(&f, cl->reserved_for[i].resource) };

		cons[i].gr = BR(&f, ATOM_GR, &gr, sizeof(gr));
	}
	if (f.rc) {
		b->record_bytes += c->h.size;
		view_record_free(b, OBJECT_RESOURCE_CLAIM, c);
		if (f.rc == -E2BIG)
			snprintf(err, errn, "more distinct names and quantities than the view holds (%u)",
				 b->lim.max_atoms);
		return f.rc;
	}
	*out = c;
	return 0;
}

int view_record_claim(struct view_builder *b, const struct k8s_object *o, const struct view_claim *old,
		      int64_t now, struct view_claim **out, char *err, size_t errn)
{
	bool same = same_allocation(&b->atoms, old, o);

	return record_claim(b, o, old, same, same ? old->allocated_ns : 0, now, out, err, errn);
}

/* The decoded object a record was made from, as far as the record tells
 * (strings borrowed from its atoms and text, arrays in the scratch arena). */
static int claim_object(struct view_builder *b, const struct view_claim *c, struct k8s_object *o)
{
	const struct atom_set *as = &b->atoms;
	struct resource_claim *cl = &o->u.claim;
	char *uid;
	uint32_t i, j;

	memset(o, 0, sizeof(*o));
	o->kind = OBJECT_RESOURCE_CLAIM;
	o->version = API_V1;
	o->meta.name = str_from_cstr(view_claim_name(c));
	o->meta.namespace = astr(as, c->namespace);
	o->meta.resource_version = str_from_cstr(view_claim_rv(c));
	o->meta.deleting = c->deleting;
	if (!(uid = arena_alloc(b->scratch, 64)))
		return -ENOMEM;
	view_uid_format(&c->uid, uid, 64);
	o->meta.uid = str_from_cstr(uid);
	cl->allocated = c->allocated;
	cl->node_local = c->node_local;
	cl->allocated_node = astr(as, c->node_name);
	cl->nresults = c->nresults;
	cl->results = arena_calloc(b->scratch, c->nresults ? c->nresults : 1, sizeof(*cl->results));
	cl->nreserved_for = c->nreserved;
	cl->reserved_for = arena_calloc(b->scratch, c->nreserved ? c->nreserved : 1, sizeof(*cl->reserved_for));
	if (!cl->results || !cl->reserved_for)
		return -ENOMEM;
	for (i = 0; i < c->nresults; i++) {
		const struct view_result *r = &c->results[i];
		struct allocation_result *a = &cl->results[i];

		a->request = astr(as, r->request);
		a->driver = astr(as, r->driver);
		a->pool = astr(as, r->pool);
		a->device = astr(as, r->device);
		a->share_id = r->share_id.id ? astr(as, r->share_id) : (struct str){ NULL, 0 };
		const struct view_named_qty *consumed = ablob(as, r->consumed);

		a->nconsumed_capacity = consumed ? atom_at(as, r->consumed)->len / (uint32_t)sizeof(*consumed) : 0;
		a->consumed_capacity = arena_calloc(b->scratch, a->nconsumed_capacity ? a->nconsumed_capacity : 1,
						    sizeof(*a->consumed_capacity));
		if (!a->consumed_capacity)
			return -ENOMEM;
		for (j = 0; j < a->nconsumed_capacity; j++) {
			a->consumed_capacity[j].name = view_atom_str(consumed[j].name);
			a->consumed_capacity[j].value.present = true;
			a->consumed_capacity[j].value.value = *view_atom_qty(consumed[j].value);
		}
	}
	for (i = 0; i < c->nreserved; i++) {
		const struct view_consumer *v = &view_claim_reserved_for(c)[i];
		struct consumer_ref *r = &cl->reserved_for[i];

		if (!(uid = arena_alloc(b->scratch, 64)))
			return -ENOMEM;
		view_uid_format(&v->uid, uid, 64);
		const struct view_group_resource *gr = ablob(as, v->gr);

		r->api_group = view_atom_str(gr->api_group);
		r->resource = view_atom_str(gr->resource);
		r->name = str_from_cstr(view_consumer_name(c, v));
		r->uid = str_from_cstr(uid);
	}
	return 0;
}

int view_record_claim_recharge(struct view_builder *b, const struct view_claim *old, int64_t now,
			       struct view_claim **out)
{
	struct k8s_object o;
	char err[256];
	int rc;

	*out = NULL;
	arena_reset(b->scratch);
	if ((rc = claim_object(b, old, &o)) != 0)
		return rc;
	return record_claim(b, &o, old, false, old->allocated_ns, now, out, err, sizeof(err));
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

	*out = NULL;
	for (i = 0; i < nnames; i++)
		size += rounded(names[i].len + 1);
	if (size > UINT32_MAX)
		return -E2BIG;
	p = view_rec_alloc(b, size);
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
	atom_get(atom_at(&b->atoms, p->driver));
	atom_get(atom_at(&b->atoms, p->name));
	*out = p;
	return 0;
}

void view_record_free(struct view_builder *b, unsigned what, void *p)
{
	switch (what) {
	case OBJECT_RESOURCE_SLICE:
		slice_put_atoms(&b->atoms, p);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case OBJECT_RESOURCE_CLAIM:
		claim_put_atoms(&b->atoms, p);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case OBJECT_POD:
	case OBJECT_NODE:
	case VIEW_INDEX_PNAMES:
	case VIEW_INDEX_HOLDS:
		view_record_put_more(b, what, p);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case VIEW_INDEX_POOLS:
		atom_put_ref(&b->atoms, ((struct view_pool *)p)->driver);
		atom_put_ref(&b->atoms, ((struct view_pool *)p)->name);
		b->record_bytes -= ((struct view_rec *)p)->size;
		break;
	case VIEW_LIMBO_MEM:
		free(p);
		return;
	}
	view_rec_free_mem(b, p, ((struct view_rec *)p)->size);
}
