/* vap_cel.c - CEL building blocks every rule's policy shares.
 *
 * Facts about CEL in the 1.36 API server that shape these (checked against
 * the real one): there is no cel.bind, so a value used twice is bound by a
 * one-element comprehension ([v].all(x, ...)); quantities have add, sub,
 * compareTo and asApproximateFloat but no multiplication, division or
 * rounding, and isInteger() is false for a whole number held with a
 * fractional scale (quantity('3000m'), any result of add()); sign() is a
 * function, not a method; request.userInfo.extra, request.userInfo.groups
 * and request.namespace are absent, not empty, when there is nothing in
 * them; map iteration order is random, so anything shown in a message is
 * sorted first. */
#include "vap_impl.h"

#include <stdio.h>

/* --- exact quantity tests -------------------------------------------------------- */

void vap_quantity_constants(struct vap_out *o)
{
	static const char *const names[] = { "whole", "milli", "one", "int64" };
	static const char *const values[] = { VAP_WHOLE_BOUND, VAP_MILLI_BOUND, "1", "9223372036854775807" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct cel c;

		cel_init(&c);
		cel_add(&c, "quantity('%s')", values[i]);
		vap_variable(o, names[i], &c);
		cel_free(&c);
	}
}

/* int(x + 0.5) of a non-negative float is the nearest whole number; the
 * float only proposes it, the quantity comparison decides. */
void cel_is_whole(struct cel *c, const char *x)
{
	cel_add(c, "(%s.isLessThan(variables.whole) && "
		"quantity(string(int(%s.asApproximateFloat() + 0.5))).compareTo(%s) == 0)", x, x, x);
}

void cel_is_milli(struct cel *c, const char *x)
{
	cel_add(c, "(%s.isLessThan(variables.milli) && "
		"quantity(string(int(%s.asApproximateFloat() * 1000.0 + 0.5)) + 'm').compareTo(%s) == 0)", x, x, x);
}

/* The divisor is p rounded: for a whole p (below 2^53) that is p. */
void cel_is_multiple(struct cel *c, const char *x, const char *p)
{
	cel_add(c, "(%s.isLessThan(variables.whole) && %s.isLessThan(variables.whole) && !%s.isLessThan(variables.one) && "
		"quantity(string(int(%s.asApproximateFloat() / double(int(%s.asApproximateFloat() + 0.5)) + 0.5) * "
		"int(%s.asApproximateFloat() + 0.5))).compareTo(%s) == 0)", x, p, p, x, p, p, x);
}

void cel_page_ok(struct cel *c, const char *p)
{
	cel_add(c, "(sign(%s) > 0 && (!%s.isLessThan(variables.whole) || ", p, p);
	cel_is_whole(c, p);
	cel_add(c, "))");
}

/* --- who is asking -------------------------------------------------------------- */

void cel_token_nodes(struct cel *c)
{
	cel_add(c, "(has(request.userInfo.extra) && '" VAP_EXTRA_NODE_NAME "' in request.userInfo.extra ? "
		"request.userInfo.extra['" VAP_EXTRA_NODE_NAME "'] : [])");
}

void cel_who(struct cel *c)
{
	cel_add(c, "('user \"' + request.userInfo.username + '\"' + [");
	cel_token_nodes(c);
	cel_add(c, "].map(n, size(n) == 1 ? ' (node-name \"' + n[0] + '\")' : '')[0])");
}

void cel_user_in(struct cel *c, const struct string_list *users)
{
	if (users->n == 0) {
		cel_add(c, "false");
		return;
	}
	cel_add(c, "request.userInfo.username in ");
	cel_str_list(c, users);
}

void cel_group_in(struct cel *c, const struct string_list *groups)
{
	if (groups->n == 0) {
		cel_add(c, "false");
		return;
	}
	cel_add(c, "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ");
	cel_str_list(c, groups);
	cel_add(c, "))");
}

/* --- names ------------------------------------------------------------------------ */

/* A hugepages size of 2^53 bytes or more cannot be tested for being whole
 * and is taken as valid: never deny what the engine may allow. */
void cel_name_ok(struct cel *c)
{
	cel_add(c, "(k == 'cpu' || k == 'memory' || k == 'ephemeral-storage' ||\n"
		"  (k.startsWith('hugepages-') && size(k) > 10 && isQuantity(k.substring(10)) && ");
	cel_page_ok(c, VAP_PAGE);
	cel_add(c, "))");
}

/* --- device chunks ----------------------------------------------------------------
 *
 * The offences of each chunk are a variable (the messages of what is wrong,
 * in device order, each device's sorted); its validation asks for none and
 * its message shows the first. The message is evaluated apart from the
 * validation (the API server gives each its own variables), so a chunk is
 * scanned twice per request either way; as a variable its text is written
 * once. */

/* --- what an UPDATE leaves as it was ------------------------------------------------
 *
 * As find_unchanged() in slice_rules.c reads it: device d (at index i) is
 * unchanged when the stored slice has it at the same index, equal, or has a
 * device of its name with the same allowMultipleAllocations, capacity, node
 * fields and mappings. The engine compares multipliers as quantities; the
 * API server writes every quantity of both objects in its canonical form,
 * so equal quantities are equal strings here. */

#define OLD_DEVICES "(has(oldObject.spec.devices) ? oldObject.spec.devices : [])"
#define FLAG(x, f) "(has(" x "." f ") && " x "." f ")"
#define TEXT(x, f) "(has(" x "." f ") ? " x "." f " : '')"
#define SAME_OPT(a, b, f) "(has(" a "." f ") == has(" b "." f ") && (!has(" a "." f ") || " a "." f " == " b "." f "))"
#define INPUTS_EQUAL(a, b) \
	"(" FLAG(a, "allowMultipleAllocations") " == " FLAG(b, "allowMultipleAllocations") " &&\n" \
	"      " SAME_OPT(a, b, "capacity") " && " TEXT(a, "nodeName") " == " TEXT(b, "nodeName") " &&\n" \
	"      " FLAG(a, "allNodes") " == " FLAG(b, "allNodes") " && has(" a ".nodeSelector) == has(" b ".nodeSelector) &&\n" \
	"      " SAME_OPT(a, b, "nodeAllocatableResourceMappings") ")"
#define UNCHANGED_DEVICE \
	"(request.operation == 'UPDATE' && ((i < size(" OLD_DEVICES ") && " OLD_DEVICES "[i] == d) ||\n" \
	"    [" OLD_DEVICES ".filter(od, od.name == d.name)].exists(os, size(os) == 1 &&\n" \
	"      [os[0]].all(od, " INPUTS_EQUAL("d", "od") "))))"
#define SLICE_FACTS_EQUAL \
	"object.spec.driver == oldObject.spec.driver && " TEXT("object.spec", "nodeName") " == " \
	TEXT("oldObject.spec", "nodeName") " &&\n" \
	FLAG("object.spec", "allNodes") " == " FLAG("oldObject.spec", "allNodes") " && " \
	"has(object.spec.nodeSelector) == has(oldObject.spec.nodeSelector) &&\n" \
	FLAG("object.spec", "perDeviceNodeSelection") " == " FLAG("oldObject.spec", "perDeviceNodeSelection")

/* A chunk's offences: those of each device in [lo, hi) (device_msgs, a CEL
 * list over i and d), dropped for an unchanged device when ratcheting. */
static void chunk_scan(struct vap_out *o, struct cel *v, unsigned lo, unsigned hi, const char *device_filter,
		       const char *device_msgs)
{
	cel_add(v, "!has(object.spec.devices) ? [] : object.spec.devices.transformList(i, d, i >= %u && i < %u%s,\n  ",
		lo, hi, device_filter);
	if (o->ratchet)
		cel_add(v, "[%s].map(l, size(l) == 0 || !" UNCHANGED_DEVICE " ? l : [])[0]", device_msgs);
	else
		cel_add(v, "%s", device_msgs);
	cel_add(v, ").flatten()");
}

static void chunk_policy_parts(struct vap_out *o, enum rule_id id, const char *device_filter,
			       const char *device_msgs)
{
	unsigned lo, n;
	char name[16];

	for (lo = 0, n = 0; lo < VAP_MAX_DEVICES && !o->rc; lo += VAP_CHUNK, n++) {
		struct cel v;

		cel_init(&v);
		chunk_scan(o, &v, lo, lo + VAP_CHUNK, device_filter, device_msgs);
		snprintf(name, sizeof(name), "chunk%u", n);
		vap_variable(o, name, &v);
		cel_free(&v);
	}
	for (lo = 0, n = 0; lo < VAP_MAX_DEVICES && !o->rc; lo += VAP_CHUNK, n++) {
		struct cel e, m;

		cel_init(&e);
		cel_init(&m);
		cel_add(&e, "size(variables.chunk%u) == 0", n);
		cel_add(&m, "size(variables.chunk%u) == 0 ? '' : '[%s] ' + variables.chunk%u[0] + "
			"(size(variables.chunk%u) > 1 ? ' (and ' + string(size(variables.chunk%u) - 1) + ' more)' : '')",
			n, rule_name(id), n, n, n);
		vap_validation(o, id, &e, &m);
		cel_free(&e);
		cel_free(&m);
	}
}

#define HAS_MAPPINGS_FILTER " && has(d.nodeAllocatableResourceMappings)"

void vap_mapping_chunks(struct vap_out *o, enum rule_id id, const char *bad, const char *msg)
{
	struct cel l;

	cel_init(&l);
	cel_add(&l, "d.nodeAllocatableResourceMappings.transformList(k, m,\n    %s,\n    %s).sort()", bad, msg);
	if (l.rc)
		vap_fail(o, l.rc);
	else
		chunk_policy_parts(o, id, HAS_MAPPINGS_FILTER, cel_text(&l));
	cel_free(&l);
}

void vap_mapping_chunk_lists(struct vap_out *o, enum rule_id id, const char *msgs)
{
	struct cel l;

	cel_init(&l);
	cel_add(&l, "d.nodeAllocatableResourceMappings.transformList(k, m,\n    %s).flatten().sort()", msgs);
	if (l.rc)
		vap_fail(o, l.rc);
	else
		chunk_policy_parts(o, id, HAS_MAPPINGS_FILTER, cel_text(&l));
	cel_free(&l);
}

void vap_device_chunks(struct vap_out *o, enum rule_id id, const char *bad, const char *msg)
{
	struct cel l;

	cel_init(&l);
	cel_add(&l, "%s ? [%s] : []", bad, msg);
	if (l.rc)
		vap_fail(o, l.rc);
	else
		chunk_policy_parts(o, id, "", cel_text(&l));
	cel_free(&l);
}

void vap_slice_unchanged(struct vap_out *o)
{
	struct cel s;

	if (!o->ratchet || o->slice_unchanged_declared)
		return;
	cel_init(&s);
	cel_add(&s, "request.operation == 'UPDATE' && " SLICE_FACTS_EQUAL " &&\n"
		"(" VAP_SLICE_HAS_MAPPINGS_OF("oldObject") ") && has(object.spec.devices) &&\n"
		"object.spec.devices.transformList(i, d, has(d.nodeAllocatableResourceMappings) && "
		"size(d.nodeAllocatableResourceMappings) > 0,\n  " UNCHANGED_DEVICE ").all(u, u)");
	vap_variable(o, "sliceUnchanged", &s);
	cel_free(&s);
	o->slice_unchanged_declared = true;
}

void vap_slice_validation(struct vap_out *o, enum rule_id id, const struct cel *ok, const struct cel *msg)
{
	struct cel e;

	vap_slice_unchanged(o);
	cel_init(&e);
	cel_add(&e, o->ratchet ? "(%s) || variables.sliceUnchanged" : "%s", cel_text(ok));
	if (ok->rc)
		e.rc = ok->rc;
	vap_validation(o, id, &e, msg);
	cel_free(&e);
}
