/* model.c - small helpers over the typed objects. */
#include "model.h"

#include <stdlib.h>

const struct str *model_user_extra(const struct user_info *u, const char *key, uint32_t *n)
{
	uint32_t i;

	for (i = 0; i < u->nextra; i++) {
		if (str_eq_cstr(u->extra[i].key, key)) {
			*n = u->extra[i].nvalues;
			return u->extra[i].values;
		}
	}
	*n = 0;
	return NULL;
}

bool model_only_metadata_changed(const struct k8s_object *a, const struct k8s_object *b)
{
	uint32_t i;

	if (a->kind != b->kind || a->kind == OBJECT_NONE || a->kind == OBJECT_OTHER ||
	    !a->members_complete || !b->members_complete || a->nmembers != b->nmembers)
		return false;
	for (i = 0; i < a->nmembers; i++)
		if (!str_eq(a->members[i].key, b->members[i].key) || !str_eq(a->members[i].value, b->members[i].value))
			return false;
	return true;
}

bool model_pod_owner_changed(const struct object_meta *a, const struct object_meta *b)
{
	if (a->has_pod_claim_name != b->has_pod_claim_name || a->has_controller != b->has_controller)
		return true;
	if (a->has_pod_claim_name && !str_eq(a->pod_claim_name, b->pod_claim_name))
		return true;
	return a->has_controller && (!str_eq(a->controller_api_version, b->controller_api_version) ||
				     !str_eq(a->controller_kind, b->controller_kind) ||
				     !str_eq(a->controller_name, b->controller_name) ||
				     !str_eq(a->controller_uid, b->controller_uid));
}

bool model_slice_has_mappings(const struct resource_slice *s)
{
	uint32_t i;

	for (i = 0; i < s->ndevices; i++)
		if (s->devices[i].nmappings)
			return true;
	return false;
}

const char *model_op_name(enum admission_op op)
{
	switch (op) {
	case ADMISSION_OP_CREATE: return "CREATE";
	case ADMISSION_OP_UPDATE: return "UPDATE";
	case ADMISSION_OP_DELETE: return "DELETE";
	case ADMISSION_OP_CONNECT: return "CONNECT";
	case ADMISSION_OP_UNKNOWN: break;
	}
	return "";
}

enum admission_op model_op_parse(struct str s)
{
	if (str_eq_cstr(s, "CREATE"))
		return ADMISSION_OP_CREATE;
	if (str_eq_cstr(s, "UPDATE"))
		return ADMISSION_OP_UPDATE;
	if (str_eq_cstr(s, "DELETE"))
		return ADMISSION_OP_DELETE;
	if (str_eq_cstr(s, "CONNECT"))
		return ADMISSION_OP_CONNECT;
	return ADMISSION_OP_UNKNOWN;
}

const char *model_kind_name(enum object_kind k)
{
	switch (k) {
	case OBJECT_RESOURCE_SLICE: return "ResourceSlice";
	case OBJECT_RESOURCE_CLAIM: return "ResourceClaim";
	case OBJECT_POD: return "Pod";
	case OBJECT_CONFIG_MAP: return "ConfigMap";
	case OBJECT_NODE: return "Node";
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return "";
}

const char *model_kind_group(enum object_kind k)
{
	return k == OBJECT_RESOURCE_SLICE || k == OBJECT_RESOURCE_CLAIM ? "resource.k8s.io" : "";
}

const char *model_kind_resource(enum object_kind k)
{
	switch (k) {
	case OBJECT_RESOURCE_SLICE: return "resourceslices";
	case OBJECT_RESOURCE_CLAIM: return "resourceclaims";
	case OBJECT_POD: return "pods";
	case OBJECT_CONFIG_MAP: return "configmaps";
	case OBJECT_NODE: return "nodes";
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return "";
}

enum object_kind model_kind_of_resource(struct str group, struct str resource)
{
	enum object_kind k;

	for (k = OBJECT_RESOURCE_SLICE; k < OBJECT_OTHER; k++)
		if (str_eq_cstr(resource, model_kind_resource(k)) && str_eq_cstr(group, model_kind_group(k)))
			return k;
	return OBJECT_OTHER;
}

enum object_kind model_kind_of_name(struct str kind)
{
	enum object_kind k;

	for (k = OBJECT_RESOURCE_SLICE; k < OBJECT_OTHER; k++)
		if (str_eq_cstr(kind, model_kind_name(k)))
			return k;
	return OBJECT_OTHER;
}

const struct k8s_object *model_request_subject(const struct admission_request *req)
{
	return req->operation == ADMISSION_OP_DELETE ? &req->old_object : &req->object;
}

struct str model_request_name(const struct admission_request *req)
{
	return req->name.len ? req->name : model_request_subject(req)->meta.name;
}

struct str model_request_namespace(const struct admission_request *req)
{
	return req->namespace.len ? req->namespace : model_request_subject(req)->meta.namespace;
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->shape != y->shape)
		return x->shape < y->shape ? -1 : 1;
	return str_cmp(x->resource, y->resource);
}

void model_sort_mappings(struct device *d)
{
	qsort(d->mappings, d->nmappings, sizeof(*d->mappings), mapping_cmp);
}

const struct mapping *model_find_mapping(const struct device *d, enum mapping_shape shape, struct str resource)
{
	struct mapping key;

	key.resource = resource;
	key.shape = shape;
	if (d->nmappings == 0)
		return NULL;
	return bsearch(&key, d->mappings, d->nmappings, sizeof(*d->mappings), mapping_cmp);
}

static int capacity_cmp(const void *a, const void *b)
{
	return str_cmp(((const struct device_capacity *)a)->name, ((const struct device_capacity *)b)->name);
}

const struct device_capacity *model_device_capacity(const struct device *d, struct str name)
{
	struct device_capacity key;

	key.name = name;
	if (d->ncapacity == 0)
		return NULL;
	return bsearch(&key, d->capacity, d->ncapacity, sizeof(*d->capacity), capacity_cmp);
}

static bool field_equal(const struct quantity_field *a, const struct quantity_field *b, bool absent_is_one)
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

bool model_device_mappings_equal(const struct device *a, const struct device *b)
{
	uint32_t i, j;

	if (a->nmappings != b->nmappings)
		return false;
	/* Map keys are unique (the decoder refuses duplicates): equal counts
	 * and each of a found equal in b is equality. */
	for (i = 0; i < a->nmappings; i++) {
		const struct mapping *m = &a->mappings[i], *o = NULL;

		for (j = 0; j < b->nmappings && !o; j++)
			if (b->mappings[j].shape == m->shape && str_eq(b->mappings[j].resource, m->resource))
				o = &b->mappings[j];
		if (!o || m->is_null != o->is_null || m->has_capacity_key != o->has_capacity_key ||
		    (m->has_capacity_key && !str_eq(m->capacity_key, o->capacity_key)) ||
		    !field_equal(&m->multiplier, &o->multiplier, true) ||
		    !field_equal(&m->capacity_multiplier, &o->capacity_multiplier, true) ||
		    !field_equal(&m->overhead_per_pod, &o->overhead_per_pod, false) ||
		    !field_equal(&m->overhead_per_container, &o->overhead_per_container, false))
			return false;
	}
	return true;
}

struct str model_pod_claim_name(const struct pod *p, const struct pod_claim_ref *ref)
{
	uint32_t i;

	if (ref->claim_name.len)
		return ref->claim_name;
	for (i = 0; i < p->nclaim_names; i++)
		if (str_eq(p->claim_names[i].name, ref->name))
			return p->claim_names[i].claim_name;
	return (struct str){ "", 0 };
}
