/* synth.c - admission requests made up offline for dry-run. */
#include "synth.h"

#include <errno.h>
#include <string.h>

#include "names.h"

/* --- the request ----------------------------------------------------------------- */

/* Why an allocation from a failed: the cap or memory, never "no error". */
static int alloc_error(const struct arena *a)
{
	int rc = arena_error(a);

	return rc ? rc : -ENOMEM;
}

static struct user_extra *find_extra(struct user_info *u, struct str key)
{
	uint32_t j;

	for (j = 0; j < u->nextra; j++)
		if (str_eq(u->extra[j].key, key))
			return &u->extra[j];
	return NULL;
}

static int fill_user(const struct synth_identity *who, struct arena *a, struct user_info *u)
{
	size_t i, j;

	memset(u, 0, sizeof(*u));
	u->username = who->user;
	if (who->ngroups > UINT32_MAX || who->nextras > UINT32_MAX)
		return -E2BIG;
	if (who->ngroups) {
		u->groups = arena_calloc(a, who->ngroups, sizeof(*u->groups));
		if (!u->groups)
			return alloc_error(a);
		for (i = 0; i < who->ngroups; i++)
			u->groups[u->ngroups++] = who->groups[i];
	}
	if (who->nextras == 0)
		return 0;
	u->extra = arena_calloc(a, who->nextras, sizeof(*u->extra));
	if (!u->extra)
		return alloc_error(a);
	/* Keys first, counting their values; then each key's values. */
	for (i = 0; i < who->nextras; i++) {
		struct user_extra *e = find_extra(u, who->extras[i].key);

		if (!e) {
			e = &u->extra[u->nextra++];
			e->key = who->extras[i].key;
		}
		e->nvalues++;
	}
	for (j = 0; j < u->nextra; j++) {
		u->extra[j].values = arena_calloc(a, u->extra[j].nvalues, sizeof(*u->extra[j].values));
		if (!u->extra[j].values)
			return alloc_error(a);
		u->extra[j].nvalues = 0;
	}
	for (i = 0; i < who->nextras; i++) {
		struct user_extra *e = find_extra(u, who->extras[i].key);

		e->values[e->nvalues++] = who->extras[i].value;
	}
	return 0;
}

int synth_request(const struct synth_identity *who, const struct synth_write *w,
		  struct arena *a, struct admission_request *out)
{
	const struct k8s_object *obj = w->object;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((w->op != ADMISSION_OP_CREATE && w->op != ADMISSION_OP_UPDATE && w->op != ADMISSION_OP_DELETE) ||
	    (w->op == ADMISSION_OP_UPDATE && !w->old))
		return -EINVAL;
	out->uid = STR_LIT("dry-run");
	names_split_api_version(obj->api_version, &out->kind.group, &out->kind.version);
	out->kind.kind = obj->kind_name;
	out->target = obj->kind;
	out->resource.group = out->kind.group;
	out->resource.version = out->kind.version;
	out->resource.resource = str_from_cstr(model_kind_resource(obj->kind));
	out->sub_resource = w->subresource;
	out->name = obj->meta.name;
	out->namespace = w->namespace;
	out->operation = w->op;
	out->operation_text = str_from_cstr(model_op_name(w->op));
	out->dry_run = true;
	rc = fill_user(who, a, &out->user);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	if (w->op == ADMISSION_OP_DELETE) {
		out->old_object = *obj;
	} else {
		out->object = *obj;
		if (w->op == ADMISSION_OP_UPDATE)
			out->old_object = *w->old;
	}
	return 0;
}

/* --- what a made-up request leaves out ----------------------------------------------- */

/* Keep in step with the engine's dispatch (engine.c): which rules run for
 * which kind, operation and subresource, and which of them are skipped
 * without an identity. */
static const char reason_identity[] =
	"no user was given (--user), so the rules about who may write did not run";
static const char reason_main[] =
	"this is a write of the main resource, not of its status (--subresource status), and the API "
	"server ignores status in such a write, so the status rules did not run";

static const char reason_view[] =
	"no cluster view was given (--view), so the rules that read it did not run";

static void skip(struct synth_skip *out, size_t *n, const char *reason, const enum rule_id *rules, size_t nrules)
{
	size_t i;

	if (*n == SYNTH_SKIP_MAX)
		return;
	out[*n].reason = reason;
	for (i = 0; i < nrules && i < sizeof(out[*n].rules) / sizeof(out[*n].rules[0]); i++)
		out[*n].rules[i] = rules[i];
	out[*n].nrules = i;
	(*n)++;
}

size_t synth_skipped(const struct admission_request *req, bool identity_given, bool view_given,
		     struct synth_skip out[SYNTH_SKIP_MAX])
{
	static const enum rule_id slice_view[] = { RULE_SLICE_GENERATION_STALE, RULE_SLICE_POOL_COLLISION,
						   RULE_LEDGER_MAPPING_DRIFT };
	static const enum rule_id claim_view[] = { RULE_LEDGER_POOL_FRESH, RULE_LEDGER_DEVICE_DUPLICATE,
						   RULE_LEDGER_NUMA_SPLIT };
	static const enum rule_id pod_view[] = { RULE_LEDGER_POD_AMOUNTS, RULE_LEDGER_POD_OMITTED };
	static const enum rule_id slice_writer[] = { RULE_SLICE_WRITER, RULE_SLICE_WRITER_NODE };
	static const enum rule_id claim_status[] = { RULE_CLAIM_FREEZE_ALLOCATE, RULE_STATUS_ALLOCATION_WRITER,
						     RULE_STATUS_DEVICES_WRITER };
	static const enum rule_id claim_writer[] = { RULE_STATUS_ALLOCATION_WRITER, RULE_STATUS_DEVICES_WRITER };
	static const enum rule_id pod_status[] = { RULE_STATUS_POD_WRITER };
	const struct k8s_object *subject = model_request_subject(req);
	bool status = str_eq_cstr(req->sub_resource, "status");
	size_t n = 0;

	switch (subject->kind) {
	case OBJECT_RESOURCE_SLICE:
		if (!identity_given)
			skip(out, &n, reason_identity, slice_writer, 2);
		/* ledger.mapping.drift compares with the stored slice: UPDATE only. */
		if (!view_given && (req->operation == ADMISSION_OP_CREATE || req->operation == ADMISSION_OP_UPDATE))
			skip(out, &n, reason_view, slice_view, req->operation == ADMISSION_OP_UPDATE ? 3 : 2);
		break;
	case OBJECT_RESOURCE_CLAIM:
		if (req->operation != ADMISSION_OP_UPDATE)
			break;
		if (!status)
			skip(out, &n, reason_main, claim_status, 3);
		else if (!identity_given)
			skip(out, &n, reason_identity, claim_writer, 2);
		if (status && !view_given)
			skip(out, &n, reason_view, claim_view, 3);
		break;
	case OBJECT_POD:
		if (req->operation != ADMISSION_OP_UPDATE)
			break;
		if (!status)
			skip(out, &n, reason_main, pod_status, 1);
		else if (!identity_given)
			skip(out, &n, reason_identity, pod_status, 1);
		if (status && !view_given)
			skip(out, &n, reason_view, pod_view, 2);
		break;
	case OBJECT_CONFIG_MAP:
	case OBJECT_NODE:
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return n;
}

/* --- is it a status write? ------------------------------------------------------------- */

/* Past this many members, maps are compared in order rather than by key:
 * a false "differs" only costs the inference, never a verdict. */
#define SYNTH_MAP_BY_KEY_MAX 1024

static bool node_equal(const struct doc_node *a, const struct doc_node *b, unsigned depth);

static bool maps_equal(const struct doc_node *a, const struct doc_node *b, const char *const *ignore,
		       unsigned depth)
{
	size_t i, j, na = 0, nb = 0;

	for (i = 0; i < a->n; i++) {
		const struct doc_member *m = &a->members[i];
		const struct doc_node *other = NULL;
		bool skipped = false;

		for (j = 0; ignore && ignore[j]; j++)
			skipped = skipped || str_eq_cstr(m->key, ignore[j]);
		if (skipped)
			continue;
		na++;
		if (a->n <= SYNTH_MAP_BY_KEY_MAX && b->n <= SYNTH_MAP_BY_KEY_MAX) {
			for (j = 0; j < b->n && !other; j++)
				if (str_eq(b->members[j].key, m->key))
					other = b->members[j].value;
		} else if (i < b->n && str_eq(b->members[i].key, m->key)) {
			other = b->members[i].value;
		}
		if (!other || !node_equal(m->value, other, depth + 1))
			return false;
	}
	for (i = 0; i < b->n; i++) {
		bool skipped = false;

		for (j = 0; ignore && ignore[j]; j++)
			skipped = skipped || str_eq_cstr(b->members[i].key, ignore[j]);
		nb += !skipped;
	}
	return na == nb;
}

static bool node_equal(const struct doc_node *a, const struct doc_node *b, unsigned depth)
{
	size_t i;

	if (a->type != b->type || depth > DOC_DEPTH_MAX)
		return false;
	switch (a->type) {
	case DOC_NULL:
		return true;
	case DOC_BOOL:
		return a->boolean == b->boolean;
	case DOC_NUMBER:
	case DOC_STRING:
		return str_eq(a->text, b->text);
	case DOC_SEQ:
		if (a->n != b->n)
			return false;
		for (i = 0; i < a->n; i++)
			if (!node_equal(a->items[i], b->items[i], depth + 1))
				return false;
		return true;
	case DOC_MAP:
		return maps_equal(a, b, NULL, depth);
	}
	return false;
}

static const struct doc_node *null_node(void)
{
	static const struct doc_node n = { .type = DOC_NULL };

	return &n;
}

static const struct doc_node *member_or_null(const struct doc_node *map, const char *key)
{
	const struct doc_node *v = doc_map_get(map, key);

	return v ? v : null_node();
}

bool synth_only_status_differs(const struct doc_node *obj, const struct doc_node *old)
{
	/* Written by the API server itself, or different by version only. */
	static const char *const top_ignored[] = { "apiVersion", "metadata", "status", NULL };
	static const char *const meta_ignored[] = { "resourceVersion", "generation", "uid", "creationTimestamp",
						    "managedFields", "selfLink", NULL };
	const struct doc_node *ma, *mb;

	if (obj->type != DOC_MAP || old->type != DOC_MAP)
		return false;
	if (node_equal(member_or_null(obj, "status"), member_or_null(old, "status"), 1))
		return false;
	if (!maps_equal(obj, old, top_ignored, 0))
		return false;
	ma = member_or_null(obj, "metadata");
	mb = member_or_null(old, "metadata");
	if (ma->type != DOC_MAP || mb->type != DOC_MAP)
		return node_equal(ma, mb, 1);
	return maps_equal(ma, mb, meta_ignored, 1);
}
