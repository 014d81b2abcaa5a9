/* decode_claim.c - a ResourceClaim's spec and status into struct
 * resource_claim.
 *
 * What the freeze and status rules read: the requests' device classes (in
 * any of the three API versions), the allocation with its results and the
 * node-local test of its node selector, reservedFor and the device
 * statuses, with the raw text of the parts whose changes are compared.
 * Like each kind, apart from the others: it shares only the machinery of
 * decode.c and decode_fields.c. */
#include <stddef.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"

/* A deviceClassName, wherever the version puts it, joins the request's list. */
static int decode_class(struct dctx *d, void *obj)
{
	struct claim_request *req = obj;
	struct str cls = { NULL, 0 };
	bool present = false;
	int rc;

	if ((rc = decode_read_str_opt(d, &cls, &present)) != 0 || !present)
		return rc;
	if (req->ndevice_classes >= d->lim->max_list)
		return decode_limit_fail(d, "device classes", d->lim->max_list);
	if (!(req->device_classes = decode_reserve(d, req->device_classes, req->ndevice_classes,
						   sizeof(cls))))
		return d->rc;
	req->device_classes[req->ndevice_classes++] = cls;
	return 0;
}

static const struct field class_fields[] = {
	FCALL("deviceClassName", decode_class),
};

/* exactly, or one firstAvailable entry: only deviceClassName is read. */
static int decode_class_holder(struct dctx *d, void *obj)
{
	return decode_fields(d, class_fields, COUNT(class_fields), obj, NULL);
}

static int decode_first_available(struct dctx *d, void *obj)
{
	uint32_t i = 0;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		decode_path_set_index(d, i++);
		if ((rc = decode_class_holder(d, obj)) != 0)
			return rc;
	}
	decode_path_pop(d);
	return r;
}

/* v1 and v1beta2 put deviceClassName under exactly; v1beta1 has it on the
 * request itself. All have firstAvailable[].deviceClassName. */
static const struct field request_fields[] = {
	FSTR("name", struct claim_request, name),
	FCALL("exactly", decode_class_holder),
	FCALL("firstAvailable", decode_first_available),
};

static const struct field beta1_request_fields[] = {
	FSTR("name", struct claim_request, name),
	FCALL("deviceClassName", decode_class),
	FCALL("firstAvailable", decode_first_available),
};

static int decode_claim_request(struct dctx *d, void *e)
{
	if (d->version == API_V1BETA1)
		return decode_fields(d, beta1_request_fields, COUNT(beta1_request_fields), e, NULL);
	return decode_fields(d, request_fields, COUNT(request_fields), e, NULL);
}

static int decode_requests(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->requests;
	int rc = decode_list(d, &arr, &c->nrequests, sizeof(*c->requests), "requests",
			     decode_claim_request);

	c->requests = arr;
	return rc;
}

static const struct field claim_devices_fields[] = { FCALL("requests", decode_requests) };

static int decode_claim_devices(struct dctx *d, void *obj)
{
	return decode_fields(d, claim_devices_fields, COUNT(claim_devices_fields), obj, NULL);
}

const struct field decode_claim_spec_fields[] = { FCALL("devices", decode_claim_devices) };
const int decode_claim_spec_nfields = COUNT(decode_claim_spec_fields);

static int decode_consumed(struct dctx *d, void *obj)
{
	struct allocation_result *res = obj;

	return decode_quantity_map(d, &res->consumed_capacity, &res->nconsumed_capacity);
}

static const struct field result_fields[] = {
	FSTR("request", struct allocation_result, request),
	FSTR("driver", struct allocation_result, driver),
	FSTR("pool", struct allocation_result, pool),
	FSTR("device", struct allocation_result, device),
	FSTR("shareID", struct allocation_result, share_id),
	FCALL("consumedCapacity", decode_consumed),
};

static int decode_result(struct dctx *d, void *e)
{
	return decode_fields(d, result_fields, COUNT(result_fields), e, NULL);
}

static int decode_results(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->results;
	int rc = decode_list(d, &arr, &c->nresults, sizeof(*c->results), "results", decode_result);

	c->results = arr;
	return rc;
}

/* allocation.devices: only results (config is not read). */
static const struct field allocation_devices_fields[] = { FCALL("results", decode_results) };

static int decode_allocation_devices(struct dctx *d, void *obj)
{
	return decode_fields(d, allocation_devices_fields, COUNT(allocation_devices_fields), obj,
			     NULL);
}

/* What a node selector's first term says, for the node-local test. */
struct term_info {
	uint32_t nexpressions;
	uint32_t nfields;
	struct str key;
	struct str op;
	uint32_t nvalues;
	struct str value;
};

static int decode_values(struct dctx *d, void *obj)
{
	struct term_info *t = obj;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		decode_path_set_index(d, t->nvalues);
		rc = t->nvalues++ == 0 ? decode_read_str(d, &t->value) : decode_skip(d);
		if (rc)
			return rc;
	}
	decode_path_pop(d);
	return r;
}

static const struct field requirement_fields[] = {
	FSTR("key", struct term_info, key),
	FSTR("operator", struct term_info, op),
	FCALL("values", decode_values),
};

static int decode_requirement(struct dctx *d, void *obj)
{
	return decode_fields(d, requirement_fields, COUNT(requirement_fields), obj, NULL);
}

static int decode_match_fields(struct dctx *d, void *obj)
{
	struct term_info *t = obj;

	return decode_count_list(d, &t->nfields, decode_requirement, t);
}

static int decode_match_expressions(struct dctx *d, void *obj)
{
	struct term_info *t = obj;

	return decode_count_list(d, &t->nexpressions, NULL, t);
}

static const struct field term_fields[] = {
	FCALL("matchExpressions", decode_match_expressions),
	FCALL("matchFields", decode_match_fields),
};

struct selector_info {
	uint32_t nterms;
	struct term_info term;
};

static int decode_term(struct dctx *d, void *obj)
{
	return decode_fields(d, term_fields, COUNT(term_fields), obj, NULL);
}

static int decode_terms(struct dctx *d, void *obj)
{
	struct selector_info *si = obj;

	return decode_count_list(d, &si->nterms, decode_term, &si->term);
}

static const struct field selector_fields[] = { FCALL("nodeSelectorTerms", decode_terms) };

/* Node-local means: one term, one matchFields entry metadata.name In [node],
 * no matchExpressions. */
static int decode_node_selector(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	struct selector_info si;
	const struct term_info *t = &si.term;
	int rc;

	memset(&si, 0, sizeof(si));
	if ((rc = decode_fields(d, selector_fields, COUNT(selector_fields), &si, NULL)) != 0)
		return rc;
	if (si.nterms == 1 && t->nexpressions == 0 && t->nfields == 1 &&
	    str_eq_cstr(t->key, "metadata.name") && str_eq_cstr(t->op, "In") && t->nvalues == 1) {
		c->node_local = true;
		c->allocated_node = t->value;
	}
	return 0;
}

static const struct field allocation_fields[] = {
	FCALL("devices", decode_allocation_devices),
	FCALL("nodeSelector", decode_node_selector),
};

static int decode_allocation(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	size_t start;
	int rc;

	if (jscan_peek(&d->s) != JSCAN_OBJECT)
		return decode_enter_object(d);  /* null (not allocated), or a type error */
	start = decode_here(d);
	c->allocated = true;
	if ((rc = decode_fields(d, allocation_fields, COUNT(allocation_fields), c, NULL)) != 0)
		return rc;
	c->allocation_raw.ptr = d->text + start;
	c->allocation_raw.len = decode_here(d) - start;
	return 0;
}

static const struct field consumer_fields[] = {
	FSTR("apiGroup", struct consumer_ref, api_group),
	FSTR("resource", struct consumer_ref, resource),
	FSTR("name", struct consumer_ref, name),
	FSTR("uid", struct consumer_ref, uid),
};

static int decode_consumer(struct dctx *d, void *e)
{
	return decode_fields(d, consumer_fields, COUNT(consumer_fields), e, NULL);
}

static int decode_reserved_for(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->reserved_for;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = decode_here(d);
	rc = decode_list(d, &arr, &c->nreserved_for, sizeof(*c->reserved_for), "reservedFor entries",
			 decode_consumer);
	c->reserved_for = arr;
	if (rc == 0 && d->text[start] == '[') {
		c->reserved_for_raw.ptr = d->text + start;
		c->reserved_for_raw.len = decode_here(d) - start;
	}
	return rc;
}

static const struct field device_status_fields[] = {
	FSTR("driver", struct device_status, driver),
	FSTR("pool", struct device_status, pool),
	FSTR("device", struct device_status, device),
	FSTR("shareID", struct device_status, share_id),
};

static int decode_device_status(struct dctx *d, void *e)
{
	struct device_status *ds = e;
	size_t start;
	int rc;

	jscan_peek(&d->s);
	start = decode_here(d);
	if ((rc = decode_fields(d, device_status_fields, COUNT(device_status_fields), ds, NULL)) != 0)
		return rc;
	ds->raw.ptr = d->text + start;
	ds->raw.len = decode_here(d) - start;
	return 0;
}

static int decode_device_statuses(struct dctx *d, void *obj)
{
	struct resource_claim *c = obj;
	void *arr = c->devices;
	int rc = decode_list(d, &arr, &c->ndevices, sizeof(*c->devices), "device statuses",
			     decode_device_status);

	c->devices = arr;
	return rc;
}

const struct field decode_claim_status_fields[] = {
	FCALL("allocation", decode_allocation),
	FCALL("reservedFor", decode_reserved_for),
	FCALL("devices", decode_device_statuses),
};
const int decode_claim_status_nfields = COUNT(decode_claim_status_fields);
