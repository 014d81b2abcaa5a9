/* decode_pod.c - a Pod's spec and status into struct pod, a Node's status
 * into struct node, and a ConfigMap's data into struct config_map.
 *
 * The small kinds: of a Pod, its node, its resource claims and the
 * node-allocatable claim statuses the scheduler writes, and (as text, for
 * the cluster view) what its requests are computed from; of a Node, its
 * allocatable resources; of a ConfigMap, the guard's own keys
 * (policy.yaml, freeze, freeze-reason). Together because each is small;
 * apart from the other kinds, with which they share only the machinery of
 * decode.c and decode_fields.c. */
#include <stddef.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"

/* --- Pod ----------------------------------------------------------------- */

static const struct field claim_ref_fields[] = {
	FSTR("name", struct pod_claim_ref, name),
	FSTR("resourceClaimName", struct pod_claim_ref, claim_name),
	FSTR("resourceClaimTemplateName", struct pod_claim_ref, template_name),
};

static int decode_claim_ref(struct dctx *d, void *e)
{
	return decode_fields(d, claim_ref_fields, COUNT(claim_ref_fields), e, NULL);
}

/* Kept (the cluster view reads which claims a Pod uses) with no count
 * limit of their own: Kubernetes sets none, so a list limit would refuse
 * Pods the API server accepts. The body's size and the arena's cap bound
 * them. */
static int decode_claim_refs(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	void *arr = p->resource_claims;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		struct pod_claim_ref *e;

		decode_path_set_index(d, p->nresource_claims);
		if (!(arr = decode_reserve(d, arr, p->nresource_claims, sizeof(*p->resource_claims))))
			return d->rc;
		p->resource_claims = arr;
		e = &p->resource_claims[p->nresource_claims];
		memset(e, 0, sizeof(*e));
		if ((rc = decode_claim_ref(d, e)) != 0)
			return rc;
		p->nresource_claims++;
	}
	decode_path_pop(d);
	return r;
}

/* The members only the cluster view reads (containers, overhead, the
 * Pod's own resources, container statuses, conditions), kept as text: the
 * request path validates them in passing and never parses them. */
#define RAW_MEMBER(fn, member, array)						\
	static int fn(struct dctx *d, void *obj)				\
	{									\
		return array ? decode_read_raw_array(d, &((struct pod *)obj)->member)	\
			     : decode_read_raw_object(d, &((struct pod *)obj)->member);	\
	}

RAW_MEMBER(raw_containers, containers_raw, true)
RAW_MEMBER(raw_init_containers, init_containers_raw, true)
RAW_MEMBER(raw_overhead, overhead_raw, false)
RAW_MEMBER(raw_pod_resources, pod_resources_raw, false)
RAW_MEMBER(raw_container_statuses, container_statuses_raw, true)
RAW_MEMBER(raw_init_statuses, init_statuses_raw, true)
RAW_MEMBER(raw_conditions, conditions_raw, true)

static int decode_gate_name(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	struct str name = { NULL, 0 };
	int rc = decode_read_str(d, &name);

	if (rc == 0 && str_eq_cstr(name, MODEL_FREEZE_GATE))
		p->has_freeze_gate = true;
	return rc;
}

static const struct field gate_fields[] = {
	FCALL("name", decode_gate_name),
};

/* spec.schedulingGates: only whether the guard's own gate is there, and
 * how many there are (the mutation appends to a list that exists). */
static int decode_scheduling_gates(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	p->has_scheduling_gates = true;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		decode_path_set_index(d, p->nscheduling_gates);
		if ((rc = decode_fields(d, gate_fields, COUNT(gate_fields), p, NULL)) != 0)
			return rc;
		p->nscheduling_gates++;
	}
	decode_path_pop(d);
	return r;
}

const struct field decode_pod_spec_fields[] = {
	FSTR("nodeName", struct pod, node_name),
	FCALL("resourceClaims", decode_claim_refs),
	FCALL("containers", raw_containers),
	FCALL("initContainers", raw_init_containers),
	FCALL("overhead", raw_overhead),
	FCALL("resources", raw_pod_resources),
	FCALL("schedulingGates", decode_scheduling_gates),
};
const int decode_pod_spec_nfields = COUNT(decode_pod_spec_fields);

static int decode_containers(struct dctx *d, void *obj)
{
	struct claim_resource_status *cs = obj;

	return decode_read_str_list(d, &cs->containers, &cs->ncontainers);
}

static int decode_claim_resources(struct dctx *d, void *obj)
{
	struct claim_resource_status *cs = obj;

	return decode_quantity_map(d, &cs->resources, &cs->nresources);
}

static const struct field claim_resource_status_fields[] = {
	FSTR("resourceClaimName", struct claim_resource_status, claim_name),
	FCALL("containers", decode_containers),
	FCALL("resources", decode_claim_resources),
};

static int decode_claim_resource_status(struct dctx *d, void *e)
{
	struct claim_resource_status *cs = e;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = decode_here(d);
	rc = decode_fields(d, claim_resource_status_fields, COUNT(claim_resource_status_fields),
			   cs, NULL);
	if (rc)
		return rc;
	cs->raw.ptr = d->text + start;
	cs->raw.len = decode_here(d) - start;
	return 0;
}

static int decode_claim_statuses(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	void *arr = p->claim_statuses;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = decode_here(d);
	rc = decode_list(d, &arr, &p->nclaim_statuses, sizeof(*p->claim_statuses),
			 "claim statuses", decode_claim_resource_status);
	p->claim_statuses = arr;
	if (rc == 0 && d->text[start] == '[') {
		p->has_claim_statuses = true;
		p->claim_statuses_raw.ptr = d->text + start;
		p->claim_statuses_raw.len = decode_here(d) - start;
	}
	return rc;
}

static const struct field claim_name_fields[] = {
	FSTR("name", struct pod_claim_name, name),
	FSTR("resourceClaimName", struct pod_claim_name, claim_name),
};

static int decode_claim_name(struct dctx *d, void *e)
{
	return decode_fields(d, claim_name_fields, COUNT(claim_name_fields), e, NULL);
}

static int decode_claim_names(struct dctx *d, void *obj)
{
	struct pod *p = obj;
	void *arr = p->claim_names;
	int rc = decode_list(d, &arr, &p->nclaim_names, sizeof(*p->claim_names),
			     "resource claim statuses", decode_claim_name);

	p->claim_names = arr;
	return rc;
}

const struct field decode_pod_status_fields[] = {
	FCALL("nodeAllocatableResourceClaimStatuses", decode_claim_statuses),
	FSTR("phase", struct pod, phase),
	FCALL("resourceClaimStatuses", decode_claim_names),
	FCALL("containerStatuses", raw_container_statuses),
	FCALL("initContainerStatuses", raw_init_statuses),
	FCALL("conditions", raw_conditions),
};
const int decode_pod_status_nfields = COUNT(decode_pod_status_fields);

/* --- Node --------------------------------------------------------------- */

static int decode_allocatable(struct dctx *d, void *obj)
{
	struct node *n = obj;

	return decode_quantity_map(d, &n->allocatable, &n->nallocatable);
}

const struct field decode_node_status_fields[] = {
	FCALL("allocatable", decode_allocatable),
};
const int decode_node_status_nfields = COUNT(decode_node_status_fields);

/* --- ConfigMap ----------------------------------------------------------- */

/* data: the guard's keys are read; every other key is validated and
 * skipped (a ConfigMap may hold any number of them, and no rule reads
 * them). One of the guard's keys given twice is an error. */
int decode_config_data(struct dctx *d, struct config_map *cm)
{
	struct jscan_str key;
	int r, rc;

	if ((r = decode_enter_object(d)) <= 0)
		return r;
	while ((r = decode_next_key(d, &key)) == 1) {
		bool *has = NULL;
		struct str *v = NULL;

		decode_path_push(d, key.ptr, key.len);
		if (jscan_str_is(&key, "policy.yaml")) {
			has = &cm->has_policy;
			v = &cm->policy;
		} else if (jscan_str_is(&key, "freeze")) {
			has = &cm->has_freeze;
			v = &cm->freeze;
		} else if (jscan_str_is(&key, "freeze-reason")) {
			has = &cm->has_freeze_reason;
			v = &cm->freeze_reason;
		}
		if (!has)
			rc = decode_skip(d);
		else if (*has)
			rc = decode_key_fail(d, "data entry", &key);
		else if ((rc = decode_read_str(d, v)) == 0)
			*has = true;
		if (rc)
			return rc;
		decode_path_pop(d);
	}
	return r;
}
