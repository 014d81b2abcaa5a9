/* engine.c - the single entry point: policy + request -> verdict.
 *
 * Dispatches on the kind the request names (not on what the object claims
 * to be), runs the rules for that kind and operation, and turns what they
 * report into the verdict. Kinds no rule reads are allowed untouched; a
 * guarded kind whose object is missing where the operation needs one cannot
 * be decided and is denied with 400. */
#include "engine.h"

#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "config_rules.h"
#include "decode.h"
#include "freeze_rules.h"
#include "gate.h"
#include "ledger_rules.h"
#include "mutant.h"
#include "mutation.h"
#include "slice_rules.h"
#include "writer_rules.h"

static bool is_status(const struct admission_request *req)
{
	return str_eq_cstr(req->sub_resource, "status");
}

/* Which objects an operation needs, and a message when one is missing. */
static const char *missing_object(const struct admission_request *req, enum object_kind kind)
{
	switch (req->operation) {
	case ADMISSION_OP_CREATE:
		return req->object.kind == kind ? NULL : "request.object is missing or null";
	case ADMISSION_OP_UPDATE:
		if (req->object.kind != kind)
			return "request.object is missing or null";
		return req->old_object.kind == kind ? NULL : "request.oldObject is missing or null on an UPDATE";
	case ADMISSION_OP_DELETE:
		/* DELETE reviews carry object: null; the old object is what goes. */
		return req->old_object.kind == kind ? NULL : "request.oldObject is missing or null on a DELETE";
	case ADMISSION_OP_CONNECT:
	case ADMISSION_OP_UNKNOWN:
		break;
	}
	return NULL;
}

static void decide_slice(struct check *c, const struct engine_options *opt)
{
	const struct admission_request *req = c->req;

	if (req->operation == ADMISSION_OP_CREATE || req->operation == ADMISSION_OP_UPDATE) {
		slice_rules_check(c);
		ledger_rules_slice(c);
	}
	if (!opt->skip_identity_rules)
		writer_rules_slice(c);
}

static void decide_claim(struct check *c, const struct engine_options *opt)
{
	const struct admission_request *req = c->req;

	if (req->operation == ADMISSION_OP_CREATE && req->sub_resource.len == 0)
		freeze_rules_create(c);
	if (req->operation == ADMISSION_OP_UPDATE && req->sub_resource.len == 0)
		freeze_rules_claim_update(c);
	if (req->operation == ADMISSION_OP_UPDATE && is_status(req)) {
		freeze_rules_allocate(c);
		if (!opt->skip_identity_rules)
			writer_rules_claim_status(c);
		ledger_rules_claim_status(c);
	}
}

static void decide_pod(struct check *c, const struct engine_options *opt)
{
	const struct admission_request *req = c->req;

	if (req->operation != ADMISSION_OP_UPDATE)
		return;
	if (req->sub_resource.len == 0) {
		freeze_rules_gate(c);
		return;
	}
	if (!is_status(req))
		return;
	if (!opt->skip_identity_rules)
		writer_rules_pod_status(c);
	ledger_rules_pod_status(c);
}

static void decide_config_map(struct check *c)
{
	const struct admission_request *req = c->req;

	if (req->operation == ADMISSION_OP_CREATE || req->operation == ADMISSION_OP_UPDATE)
		config_rules_check(c);
}

/* 'ResourceSlice "name"' or 'ResourceClaim "ns/name"' for messages. */
static void describe(const struct admission_request *req, enum object_kind kind, char *buf, size_t n)
{
	const struct object_meta *m = &model_request_subject(req)->meta;
	struct str name = model_request_name(req);
	struct str ns = model_request_namespace(req);
	const char *kname = model_kind_name(kind);
	const char *suffix = "";

	if (name.len == 0 && m->generate_name.len) {
		name = m->generate_name;
		suffix = " (generateName)";
	}
	if (ns.len)
		snprintf(buf, n, "%s \"%.*s/%.*s\"%s", kname, STR_FMT(ns), STR_FMT(name), suffix);
	else
		snprintf(buf, n, "%s \"%.*s\"%s", kname, STR_FMT(name), suffix);
}

static int fail_closed(struct verdict *out, struct arena *a, int err, const char *desc)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "dra-guard could not decide on %s: %s", desc,
		 err == -E2BIG ? "it exceeds the per-request limits (too many violations or too much to hold)"
			       : "out of memory");
	verdict_fail(out, a, 500, msg);
	return err;
}

/* The scheduling gate on a new Pod during a freeze with freeze.gatePods. */
static void gate_mutation(const struct policy *pol, const struct engine_options *opt,
			  const struct admission_request *req, struct arena *a, struct verdict *out)
{
	struct str ns = req->namespace.len ? req->namespace : req->object.meta.namespace;

	if (req->operation != ADMISSION_OP_CREATE || req->sub_resource.len ||
	    !gate_wanted(pol, pol->frozen || opt->force_freeze, &req->object, ns))
		return;
	/* A gate no replica removes would hold the Pod for good: the freeze
	 * then refuses its claims as without gatePods, and the caller counts. */
	if (opt->gate_unreleasable) {
		out->gate_withheld = true;
		return;
	}
	if (gate_pod_patch(pol, &req->object, a, &out->patch) != 0)
		out->patch = (struct str){ "", 0 };
}

/* The mutating endpoint: the label patch for a slice it can read, the
 * freeze's scheduling gate for a new Pod, nothing else. It never denies: a rule judged here would run before later mutating
 * webhooks have changed the object, its denial would be credited to the
 * mutating entry, and it would defeat taking only the validating entry out
 * of the path in an emergency. A patch that cannot be made is left out. */
static int decide_mutation(const struct policy *pol, const struct engine_options *opt,
			   const struct admission_request *req, enum object_kind kind, struct arena *a,
			   struct verdict *out)
{
	if (kind == OBJECT_POD && req->object.kind == OBJECT_POD) {
		gate_mutation(pol, opt, req, a, out);
		return 0;
	}
	if (kind != OBJECT_RESOURCE_SLICE || req->object.kind != OBJECT_RESOURCE_SLICE ||
	    (req->operation != ADMISSION_OP_CREATE && req->operation != ADMISSION_OP_UPDATE))
		return 0;
	if (mutation_slice_patch(&req->object, a, &out->patch) != 0)
		out->patch = (struct str){ "", 0 };
	return 0;
}

int engine_decide(const struct policy *pol, const struct view *view,
		  const struct engine_options *opt, const struct admission_request *req,
		  int64_t now_ns, struct arena *a, struct verdict *out)
{
	struct check c = {
		.policy = pol,
		.view = view,
		.now_ns = now_ns,
		.frozen = pol->frozen || opt->force_freeze,
		.self_user = opt->self_user,
		.self_name = opt->self_name,
		.self_namespace = opt->self_namespace,
		.req = req,
		.arena = a,
		.verdict = out,
	};
	enum object_kind kind = req->target;
	const char *missing;
	char desc[600];
	int rc;

	verdict_init(out, ENGINE_MAX_VIOLATIONS);
	if (kind == OBJECT_OTHER || kind == OBJECT_NONE || kind == OBJECT_NODE)
		return 0;
	if (opt->mutating_endpoint)
		return decide_mutation(pol, opt, req, kind, a, out);
	describe(req, kind, desc, sizeof(desc));
	missing = missing_object(req, kind);
	if (missing) {
		char msg[700];

		snprintf(msg, sizeof(msg), "dra-guard cannot decide on %s: %s", desc, missing);
		verdict_fail(out, a, 400, msg);
		return 0;
	}
	/* Labels, annotations, ownerReferences, finalizers and managedFields
	 * are written by many controllers (the garbage collector strips
	 * ownerReferences when it orphans); no rule reads them, so such an
	 * UPDATE passes for whoever RBAC let through - but for what makes a
	 * claim a Pod's, which the freeze reads (claim.freeze.create). */
	if (req->operation == ADMISSION_OP_UPDATE && model_only_metadata_changed(&req->object, &req->old_object) &&
	    !(kind == OBJECT_RESOURCE_CLAIM && model_pod_owner_changed(&req->object.meta, &req->old_object.meta)))
		return opt->mutate ? decide_mutation(pol, opt, req, kind, a, out) : 0;
	switch (kind) {
	case OBJECT_RESOURCE_SLICE:
		decide_slice(&c, opt);
		break;
	case OBJECT_RESOURCE_CLAIM:
		decide_claim(&c, opt);
		break;
	case OBJECT_POD:
		decide_pod(&c, opt);
		break;
	case OBJECT_CONFIG_MAP:
		decide_config_map(&c);
		break;
	case OBJECT_NONE:
	case OBJECT_NODE:
	case OBJECT_OTHER:
		break;
	}
#ifdef DRA_GUARD_MUTANT
	for (enum rule_id r = 0; r < RULE_COUNT; r++)
		if (mutant_fires(r, kind))
			check_violation(&c, r, "", "mutant: %s fires on every %s", rule_name(r),
					model_kind_name(kind));
#endif
	if (c.error)
		return fail_closed(out, a, c.error, desc);
	rc = verdict_finish(out, a, desc, pol->hash);
	if (rc == 0 && out->break_glass)
		rc = verdict_audit(out, a, STR_LIT("break-glass"), out->break_glass_detail);
	/* dry-run shows the patch the mutating endpoint would add. */
	if (rc == 0 && opt->mutate && out->allowed)
		rc = decide_mutation(pol, opt, req, kind, a, out);
	if (rc)
		return fail_closed(out, a, rc, desc);
	return 0;
}
