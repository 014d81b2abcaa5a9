/* decode_pod.c - a Pod's spec and status into struct pod, and a ConfigMap's
 * data into struct config_map.
 *
 * The two small kinds: of a Pod, its node, how many resource claims it has
 * and the node-allocatable claim statuses the scheduler writes; of a
 * ConfigMap, the guard's own keys (policy.yaml, freeze, freeze-reason).
 * Together because both are small; apart from the other kinds, with which
 * they share only the machinery of decode.c and decode_fields.c. */
#include <stddef.h>

#include "decode_impl.h"
#include "jscan.h"

/* --- Pod ----------------------------------------------------------------- */

/* Counted, not kept: the body's size bounds the count. */
static int count_claims(struct dctx *d, void *obj)
{
	struct pod *p = obj;

	return decode_count_list(d, &p->nresource_claims, NULL, NULL);
}

const struct field decode_pod_spec_fields[] = {
	FSTR("nodeName", struct pod, node_name),
	FCALL("resourceClaims", count_claims),
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

const struct field decode_pod_status_fields[] = {
	FCALL("nodeAllocatableResourceClaimStatuses", decode_claim_statuses),
};
const int decode_pod_status_nfields = COUNT(decode_pod_status_fields);

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
