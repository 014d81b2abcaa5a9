/* decode_review.c - the envelope: the object around each kind's sections,
 * the AdmissionReview and its request, and the entry points.
 *
 * An object is read member by member: apiVersion, kind and metadata here,
 * spec, status and data by the tables of its kind (decode_slice.c,
 * decode_claim.c, decode_pod.c). What decides when each part can be read
 * lives here: the kind from request.kind or from the object itself, marks
 * for the parts that come before it, the held -EPROTO of an object that
 * does not decode, and oldObject decoded against object. */
#include "decode.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"
#include "names.h"

/* --- metadata ------------------------------------------------------------ */

#define MAPPING_LABEL "dra-guard.io/mappings"

/* labels: only the guard's own label is read. Every other label is
 * validated and skipped: Kubernetes sets no limit on how many a slice
 * carries, and no rule reads them. */
static int decode_labels(struct dctx *d, void *obj)
{
	struct object_meta *m = obj;
	struct jscan_str key;
	int r, rc;

	if ((r = decode_enter_object(d)) <= 0)
		return r;
	m->has_labels = true;
	while ((r = decode_next_key(d, &key)) == 1) {
		decode_path_push(d, key.ptr, key.len);
		if (!jscan_str_is(&key, MAPPING_LABEL)) {
			rc = decode_skip(d);
		} else if (m->has_mapping_label) {
			rc = decode_key_fail(d, "label", &key);
		} else {
			m->has_mapping_label = true;
			rc = decode_read_str(d, &m->mapping_label);
		}
		if (rc)
			return rc;
		decode_path_pop(d);
	}
	return r;
}

/* annotations: only the resource-claim controller's pod-claim-name and the
 * streaming list's initial-events-end are read; the rest are validated and
 * skipped. */
static int decode_annotations(struct dctx *d, void *obj)
{
	struct object_meta *m = obj;
	struct jscan_str key;
	int r, rc;

	if ((r = decode_enter_object(d)) <= 0)
		return r;
	m->has_annotations = true;
	while ((r = decode_next_key(d, &key)) == 1) {
		decode_path_push(d, key.ptr, key.len);
		if (jscan_str_is(&key, MODEL_INITIAL_EVENTS_END_ANNOTATION)) {
			struct str v = { NULL, 0 };

			if (m->has_initial_events_end)
				rc = decode_key_fail(d, "annotation", &key);
			else if ((rc = decode_read_str(d, &v)) == 0) {
				m->has_initial_events_end = true;
				m->initial_events_end = str_eq_cstr(v, "true");
			}
		} else if (!jscan_str_is(&key, MODEL_POD_CLAIM_ANNOTATION)) {
			rc = decode_skip(d);
		} else if (m->has_pod_claim_name) {
			rc = decode_key_fail(d, "annotation", &key);
		} else {
			m->has_pod_claim_name = true;
			rc = decode_read_str(d, &m->pod_claim_name);
		}
		if (rc)
			return rc;
		decode_path_pop(d);
	}
	return r;
}

struct owner_ref {
	struct str api_version, kind, name, uid;
	bool controller;
};

static const struct field owner_fields[] = {
	FSTR("apiVersion", struct owner_ref, api_version),
	FSTR("kind", struct owner_ref, kind),
	FSTR("name", struct owner_ref, name),
	FSTR("uid", struct owner_ref, uid),
	FBOOL("controller", struct owner_ref, controller),
};

/* ownerReferences: the controller's reference only (the API server lets
 * one have controller: true). */
static int decode_owners(struct dctx *d, void *obj)
{
	struct object_meta *m = obj;
	uint32_t i = 0;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		struct owner_ref o;

		memset(&o, 0, sizeof(o));
		decode_path_set_index(d, i++);
		if ((rc = decode_fields(d, owner_fields, COUNT(owner_fields), &o, NULL)) != 0)
			return rc;
		if (o.controller && !m->has_controller) {
			m->has_controller = true;
			m->controller_api_version = o.api_version;
			m->controller_kind = o.kind;
			m->controller_name = o.name;
			m->controller_uid = o.uid;
		}
	}
	decode_path_pop(d);
	return r;
}

static int decode_deletion(struct dctx *d, void *obj)
{
	struct str ts = { NULL, 0 };

	return decode_read_str_opt(d, &ts, &((struct object_meta *)obj)->deleting);
}

static const struct field meta_fields[] = {
	FSTR("name", struct object_meta, name),
	FSTR("generateName", struct object_meta, generate_name),
	FSTR("namespace", struct object_meta, namespace),
	FSTR("uid", struct object_meta, uid),
	FSTR("resourceVersion", struct object_meta, resource_version),
	FCALL("labels", decode_labels),
	FCALL("annotations", decode_annotations),
	FCALL("ownerReferences", decode_owners),
	FCALL("deletionTimestamp", decode_deletion),
};

/* --- objects ------------------------------------------------------------- */

enum object_kind decode_classify(struct str group, struct str version, struct str kind,
				 enum api_version *version_out)
{
	enum object_kind k;

	*version_out = API_VERSION_UNKNOWN;
	if (str_eq_cstr(group, "resource.k8s.io")) {
		if (str_eq_cstr(kind, "ResourceSlice"))
			k = OBJECT_RESOURCE_SLICE;
		else if (str_eq_cstr(kind, "ResourceClaim"))
			k = OBJECT_RESOURCE_CLAIM;
		else
			return OBJECT_OTHER;
		if (str_eq_cstr(version, "v1"))
			*version_out = API_V1;
		else if (str_eq_cstr(version, "v1beta2"))
			*version_out = API_V1BETA2;
		else if (str_eq_cstr(version, "v1beta1"))
			*version_out = API_V1BETA1;
		return k;
	}
	if (group.len != 0)
		return OBJECT_OTHER;
	if (str_eq_cstr(kind, "Pod"))
		k = OBJECT_POD;
	else if (str_eq_cstr(kind, "ConfigMap"))
		k = OBJECT_CONFIG_MAP;
	else if (str_eq_cstr(kind, "Node"))
		k = OBJECT_NODE;
	else
		return OBJECT_OTHER;
	if (str_eq_cstr(version, "v1"))
		*version_out = API_V1;
	return k;
}

static int unsupported_version(struct dctx *d, const struct k8s_object *o, struct str group,
			       struct str version)
{
	const char *kind = model_kind_name(o->kind);
	int gn = (int)(group.len > 64 ? 64 : group.len);
	int vn = (int)(version.len > 32 ? 32 : version.len);

	if (o->kind == OBJECT_RESOURCE_SLICE || o->kind == OBJECT_RESOURCE_CLAIM)
		return decode_fail(d, -EPROTO, "%s %.*s/%.*s is not supported: the guard decodes %s in "
				   "resource.k8s.io/v1, v1beta2 and v1beta1", kind, gn, group.ptr, vn,
				   version.ptr, kind);
	return decode_fail(d, -EPROTO, "%s version \"%.*s\" is not supported: the guard decodes %s v1",
			   kind, vn, version.ptr, kind);
}

enum { OB_API_VERSION, OB_KIND, OB_METADATA, OB_SPEC, OB_STATUS, OB_DATA };

static const struct field object_fields[] = {
	FNAME("apiVersion"), FNAME("kind"), FNAME("metadata"), FNAME("spec"), FNAME("status"),
	FNAME("data"),
};

/* spec, status or data of an object whose kind is known. */
static int decode_section(struct dctx *d, struct k8s_object *o, int id)
{
	const struct field *f = NULL;
	int n = 0;
	void *obj = NULL;

	d->version = o->version;
	switch (o->kind) {
	case OBJECT_RESOURCE_SLICE:
		if (id == OB_SPEC) {
			f = decode_slice_spec_fields;
			n = decode_slice_spec_nfields;
			obj = &o->u.slice;
		}
		break;
	case OBJECT_RESOURCE_CLAIM:
		if (id == OB_SPEC) {
			f = decode_claim_spec_fields;
			n = decode_claim_spec_nfields;
		} else if (id == OB_STATUS) {
			f = decode_claim_status_fields;
			n = decode_claim_status_nfields;
		}
		obj = &o->u.claim;
		break;
	case OBJECT_POD:
		if (id == OB_SPEC) {
			f = decode_pod_spec_fields;
			n = decode_pod_spec_nfields;
		} else if (id == OB_STATUS) {
			f = decode_pod_status_fields;
			n = decode_pod_status_nfields;
		}
		obj = &o->u.pod;
		break;
	case OBJECT_CONFIG_MAP:
		if (id == OB_DATA)
			return decode_config_data(d, &o->u.config_map);
		break;
	case OBJECT_NODE:
		if (id == OB_STATUS) {
			f = decode_node_status_fields;
			n = decode_node_status_nfields;
			obj = &o->u.node;
		}
		break;
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return f ? decode_fields(d, f, n, obj, NULL) : decode_skip(d);
}

/* Classify a bare object by its own apiVersion and kind. */
static int classify_bare(struct dctx *d, struct k8s_object *o)
{
	struct str g, v;

	names_split_api_version(o->api_version, &g, &v);
	o->kind = decode_classify(g, v, o->kind_name, &o->version);
	if (o->kind != OBJECT_OTHER && o->version == API_VERSION_UNKNOWN)
		return unsupported_version(d, o, g, v);
	return 0;
}

/* Keep the text of a top-level member other than metadata: key, and the
 * value between start and the scanner's position. Past
 * MODEL_OBJECT_MEMBERS_MAX members the object is marked incomplete (an
 * UPDATE of it then always runs the rules). */
static int keep_member(struct dctx *d, struct k8s_object *o, const struct jscan_str *key, size_t start)
{
	struct object_member *m;

	if (!o->members_complete)
		return 0;
	if (o->nmembers >= MODEL_OBJECT_MEMBERS_MAX) {
		o->members_complete = false;
		return 0;
	}
	if (!(o->members = decode_reserve(d, o->members, o->nmembers, sizeof(*m))))
		return d->rc;
	m = &o->members[o->nmembers++];
	m->key.ptr = key->ptr;
	m->key.len = key->len;
	m->value.ptr = d->text + start;
	m->value.len = decode_here(d) - start;
	return 0;
}

/* Decode the object value here into o. In a review, o->kind and o->version
 * come from request.kind; a bare object (bare) names its own, and spec,
 * status and data seen before both are decoded from marks afterwards.
 * Every member but metadata is also kept as text (keep_member()). */
static int decode_object_value(struct dctx *d, struct k8s_object *o, bool bare)
{
	struct jscan marks[3], end;
	bool marked[3] = { false, false, false };
	bool have_av = false, have_kind = false, known = !bare;
	struct jscan_str key = { NULL, 0, false };
	uint32_t seen = 0;
	unsigned npath;
	size_t start;
	int r, rc = 0, id = -1, i;

	if (!bare && o->kind == OBJECT_OTHER)
		return decode_skip(d);
	if (!bare && o->version == API_VERSION_UNKNOWN)
		return unsupported_version(d, o, d->req_group, d->req_version);
	if (jscan_peek(&d->s) != JSCAN_OBJECT)
		return decode_type_fail(d, "an object");
	if (jscan_object_enter(&d->s) < 0)
		return decode_scan_fail(d);
	o->members_complete = true;
	while ((r = decode_next_member(d, object_fields, COUNT(object_fields), &seen, &id, &key)) != 0) {
		if (r < 0)
			return r;
		jscan_peek(&d->s);
		start = decode_here(d);
		if (r == NEXT_UNKNOWN) {
			/* A member no rule reads: validated, skipped, kept as text. */
			decode_path_push(d, key.ptr, key.len);
			if ((rc = decode_skip(d)) != 0 || (rc = keep_member(d, o, &key, start)) != 0)
				return rc;
			decode_path_pop(d);
			continue;
		}
		switch (id) {
		case OB_API_VERSION: rc = decode_read_str_opt(d, &o->api_version, &have_av); break;
		case OB_KIND: rc = decode_read_str_opt(d, &o->kind_name, &have_kind); break;
		case OB_METADATA:
			rc = decode_fields(d, meta_fields, COUNT(meta_fields), &o->meta, NULL);
			break;
		default:
			if (!known && have_av && have_kind) {
				decode_path_pop(d);
				if ((rc = classify_bare(d, o)) != 0)
					return rc;
				decode_path_push(d, object_fields[id].name, object_fields[id].len);
				known = true;
			}
			if (known) {
				rc = decode_section(d, o, id);
			} else {
				marks[id - OB_SPEC] = d->s;
				marked[id - OB_SPEC] = true;
				rc = decode_skip(d);
			}
			break;
		}
		if (rc == 0 && id != OB_METADATA) {
			key.ptr = object_fields[id].name;
			key.len = object_fields[id].len;
			rc = keep_member(d, o, &key, start);
		}
		if (rc)
			return rc;
		decode_path_pop(d);
	}
	if (known)
		return 0;
	/* A bare object whose apiVersion and kind came late, or never. */
	if (!have_av || !have_kind || o->kind_name.len == 0)
		return decode_fail(d, -EPROTO, "%s is missing: a Kubernetes object names its kind with "
				   "apiVersion and kind", !have_av ? "apiVersion" : "kind");
	if ((rc = classify_bare(d, o)) != 0)
		return rc;
	end = d->s;
	npath = d->npath;
	for (i = 0; i < 3; i++) {
		if (!marked[i])
			continue;
		d->s = marks[i];
		decode_path_push(d, object_fields[OB_SPEC + i].name, object_fields[OB_SPEC + i].len);
		if ((rc = decode_section(d, o, OB_SPEC + i)) != 0)
			return rc;
		d->npath = npath;
	}
	d->s = end;
	return 0;
}

/* Decode object or oldObject of a review here; ref is object's decode when
 * this is oldObject. An object that does not decode as its kind (-EPROTO)
 * is held, and skipped from its start so the rest of the review is still
 * read; *ok tells whether it decoded. */
static int review_object(struct dctx *d, struct k8s_object *o, const struct k8s_object *ref,
			 bool *ok)
{
	struct jscan mark;
	unsigned npath = d->npath;
	int saved = d->schema_err, rc;

	jscan_peek(&d->s);
	mark = d->s;
	d->schema_err = -EPROTO;
	d->ref = ref && ref->kind == OBJECT_RESOURCE_SLICE && ref->kind == o->kind &&
		 ref->version == o->version ? &ref->u.slice : NULL;
	rc = decode_object_value(d, o, false);
	d->ref = NULL;
	d->schema_err = saved;
	*ok = rc == 0;
	if (rc != -EPROTO)
		return rc;
	if (!d->held_rc) {
		d->held = *d->err;
		d->held_rc = rc;
	}
	d->rc = 0;
	d->s = mark;
	d->npath = npath;
	return decode_skip(d);
}

/* --- the review ---------------------------------------------------------- */

static const struct field gvk_fields[] = {
	FSTR("group", struct group_version_kind, group),
	FSTR("version", struct group_version_kind, version),
	FSTR("kind", struct group_version_kind, kind),
};

static const struct field gvr_fields[] = {
	FSTR("group", struct group_version_resource, group),
	FSTR("version", struct group_version_resource, version),
	FSTR("resource", struct group_version_resource, resource),
};

/* The extra keys a rule reads; every other key is validated and skipped. */
static const char *const read_extra_keys[] = { MODEL_EXTRA_NODE_NAME, MODEL_EXTRA_POD_NAME };

static int decode_extra(struct dctx *d, void *obj)
{
	struct user_info *u = obj;
	struct jscan_str key;
	size_t i;
	int r, rc;

	if ((r = decode_enter_object(d)) <= 0)
		return r;
	while ((r = decode_next_key(d, &key)) == 1) {
		struct user_extra *e;
		struct str k;
		void *grown = NULL;
		uint32_t j;

		decode_path_push(d, key.ptr, key.len);
		for (i = 0; i < sizeof(read_extra_keys) / sizeof(read_extra_keys[0]); i++)
			if (jscan_str_is(&key, read_extra_keys[i]))
				break;
		if (i == sizeof(read_extra_keys) / sizeof(read_extra_keys[0])) {
			if ((rc = decode_skip(d)) != 0)
				return rc;
			decode_path_pop(d);
			continue;
		}
		if ((rc = decode_map_entry(d, &key, u->extra, 0, u->nextra, sizeof(*e), "extra keys", &k,
					   &grown)) != 0)
			return rc;
		u->extra = grown;
		for (j = 0; j < u->nextra; j++)
			if (str_eq(u->extra[j].key, k))
				return decode_key_fail(d, "key", &key);
		e = &u->extra[u->nextra];
		*e = (struct user_extra){ .key = k };
		if ((rc = decode_read_str_list(d, &e->values, &e->nvalues)) != 0)
			return rc;
		u->nextra++;
		decode_path_pop(d);
	}
	return r;
}

static int decode_groups(struct dctx *d, void *obj)
{
	struct user_info *u = obj;

	return decode_read_str_list(d, &u->groups, &u->ngroups);
}

static const struct field user_fields[] = {
	FSTR("username", struct user_info, username),
	FSTR("uid", struct user_info, uid),
	FCALL("groups", decode_groups),
	FCALL("extra", decode_extra),
};

/* The request object while it is read (d->req). */
struct request_state {
	bool have_uid, have_kind, have_op;
	enum object_kind kind;      /* what request.kind names */
	enum api_version version;
	bool object_seen;           /* object read (decoded, held or null) */
	bool object_ok;             /* object decoded: usable as oldObject's reference */
	bool object_pending, old_pending;
	struct jscan object_mark, old_mark;
};

static int decode_request_kind(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;
	struct request_state *st = d->req;
	int rc;

	if (jscan_peek(&d->s) == JSCAN_OBJECT)
		st->have_kind = true;
	if ((rc = decode_fields(d, gvk_fields, COUNT(gvk_fields), &rq->kind, NULL)) != 0)
		return rc;
	st->kind = decode_classify(rq->kind.group, rq->kind.version, rq->kind.kind, &st->version);
	rq->target = st->kind;
	d->req_group = rq->kind.group;
	d->req_version = rq->kind.version;
	return 0;
}

static int decode_request_resource(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return decode_fields(d, gvr_fields, COUNT(gvr_fields), &rq->resource, NULL);
}

static int decode_uid(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return decode_read_str_opt(d, &rq->uid, &d->req->have_uid);
}

static int decode_operation(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;
	int rc;

	if ((rc = decode_read_str_opt(d, &rq->operation_text, &d->req->have_op)) != 0 || !d->req->have_op)
		return rc;
	rq->operation = model_op_parse(rq->operation_text);
	if (rq->operation == ADMISSION_OP_UNKNOWN)
		return decode_fail(d, -EBADMSG, "\"%.*s\" is not CREATE, UPDATE, DELETE or CONNECT",
				   (int)(rq->operation_text.len > 32 ? 32 : rq->operation_text.len),
				   rq->operation_text.ptr);
	return 0;
}

static int decode_user(struct dctx *d, void *obj)
{
	struct admission_request *rq = obj;

	return decode_fields(d, user_fields, COUNT(user_fields), &rq->user, NULL);
}

/* object or oldObject: null gives OBJECT_NONE; otherwise decoded here when
 * its kind is known (and, for oldObject, object has been read), else marked
 * for later. */
static int request_object(struct dctx *d, struct admission_request *rq, bool old)
{
	struct request_state *st = d->req;
	struct k8s_object *o = old ? &rq->old_object : &rq->object;
	bool ok;

	switch (jscan_peek(&d->s)) {
	case JSCAN_NULL:
		st->object_seen |= !old;
		o->kind = OBJECT_NONE;
		return decode_take_null(d);
	case JSCAN_OBJECT:
		break;
	default:
		return decode_type_fail(d, "an object");
	}
	if (st->have_kind && (!old || st->object_seen)) {
		o->kind = st->kind;
		o->version = st->version;
		if (old)
			return review_object(d, o, st->object_ok ? &rq->object : NULL, &ok);
		st->object_seen = true;
		return review_object(d, o, NULL, &st->object_ok);
	}
	if (old) {
		st->old_mark = d->s;
		st->old_pending = true;
	} else {
		st->object_mark = d->s;
		st->object_pending = true;
	}
	return decode_skip(d);
}

static int decode_request_object(struct dctx *d, void *obj)
{
	return request_object(d, obj, false);
}

static int decode_request_old_object(struct dctx *d, void *obj)
{
	return request_object(d, obj, true);
}

static const struct field review_request_fields[] = {
	FCALL("uid", decode_uid),
	FCALL("kind", decode_request_kind),
	FCALL("resource", decode_request_resource),
	FSTR("subResource", struct admission_request, sub_resource),
	FSTR("name", struct admission_request, name),
	FSTR("namespace", struct admission_request, namespace),
	FCALL("operation", decode_operation),
	FCALL("userInfo", decode_user),
	FCALL("object", decode_request_object),
	FCALL("oldObject", decode_request_old_object),
	FBOOL("dryRun", struct admission_request, dry_run),
};

/* A required member that is not there (or empty). */
static int missing(struct dctx *d, const char *member, const char *hint)
{
	decode_path_push(d, member, strlen(member));
	return decode_fail(d, -EBADMSG, "missing%s", hint);
}

/* Decode a marked object or oldObject now that the request has been read. */
static int request_pending(struct dctx *d, const struct request_state *st, struct k8s_object *o,
			   const struct jscan *mark, const struct k8s_object *ref, bool *ok,
			   const char *member)
{
	struct jscan end = d->s;
	unsigned npath = d->npath;
	int rc;

	o->kind = st->kind;
	o->version = st->version;
	d->s = *mark;
	decode_path_push(d, member, strlen(member));
	rc = review_object(d, o, ref, ok);
	d->npath = npath;
	if (rc == 0)
		d->s = end;
	return rc;
}

static int decode_request(struct dctx *d, struct admission_request *rq)
{
	struct request_state st;
	bool ok;
	int rc;

	memset(&st, 0, sizeof(st));
	d->req = &st;
	rc = decode_fields(d, review_request_fields, COUNT(review_request_fields), rq, NULL);
	if (rc)
		return rc;
	if (!st.have_uid || rq->uid.len == 0)
		return missing(d, "uid", "");
	if (!st.have_kind || rq->kind.kind.len == 0 || rq->kind.version.len == 0)
		return missing(d, "kind", " (want {group, version, kind})");
	if (!st.have_op)
		return missing(d, "operation", "");
	if (st.object_pending) {
		rc = request_pending(d, &st, &rq->object, &st.object_mark, NULL, &st.object_ok,
				     "object");
		if (rc)
			return rc;
	}
	if (st.old_pending)
		return request_pending(d, &st, &rq->old_object, &st.old_mark,
				       st.object_ok ? &rq->object : NULL, &ok, "oldObject");
	return 0;
}

/* A top-level member of the review that is absent or not the one value
 * allowed. */
static int wrong_value(struct dctx *d, const char *member, const char *want, bool present,
		       struct str got)
{
	if (!present)
		return decode_fail(d, -EBADMSG, "%s: expected \"%s\", got nothing", member, want);
	return decode_fail(d, -EBADMSG, "%s: expected \"%s\", got \"%.*s\"", member, want,
			   (int)(got.len > 64 ? 64 : got.len), got.ptr ? got.ptr : "");
}

enum { TOP_API_VERSION, TOP_KIND, TOP_REQUEST };

static const struct field review_fields[] = {
	FNAME("apiVersion"), FNAME("kind"), FNAME("request"),
};

static void ctx_init(struct dctx *d, const char *text, size_t len, const struct decode_limits *lim,
		     struct arena *a, struct decode_error *err, int bad_json)
{
	memset(d, 0, offsetof(struct dctx, path));  /* path is written before it is read */
	d->text = text;
	d->text_len = len;
	d->lim = lim;
	d->a = a;
	d->err = err;
	d->bad_json = bad_json;
	d->schema_err = bad_json;
	err->msg[0] = '\0';
	err->offset = 0;
	jscan_init(&d->s, text, len, lim->max_depth);
}

void decode_limits_default(struct decode_limits *lim)
{
	lim->max_depth = JSCAN_DEPTH_LIMIT;
	lim->max_devices = DECODE_API_MAX_DEVICES;
	lim->max_map_entries = 256;
	lim->max_list = 4096;
}

int decode_review(const char *body, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct admission_request *out, struct decode_error *err)
{
	struct decode_limits deflim;
	struct dctx d;
	struct str api = { NULL, 0 }, kind = { NULL, 0 };
	bool have_api = false, have_kind = false, have_request = false;
	uint32_t seen = 0;
	int r, rc = 0, id = -1;

	memset(out, 0, sizeof(*out));
	if (!lim) {
		decode_limits_default(&deflim);
		lim = &deflim;
	}
	ctx_init(&d, body, len, lim, a, err, -EBADMSG);
	if (jscan_peek(&d.s) != JSCAN_OBJECT)
		return decode_type_fail(&d, "an AdmissionReview object");
	if (jscan_object_enter(&d.s) < 0)
		return decode_scan_fail(&d);
	while ((r = decode_next_member(&d, review_fields, COUNT(review_fields), &seen, &id, NULL)) == 1) {
		switch (id) {
		case TOP_API_VERSION: rc = decode_read_str_opt(&d, &api, &have_api); break;
		case TOP_KIND: rc = decode_read_str_opt(&d, &kind, &have_kind); break;
		case TOP_REQUEST:
			if (jscan_peek(&d.s) == JSCAN_OBJECT) {
				have_request = true;
				rc = decode_request(&d, out);
			} else {
				rc = decode_enter_object(&d);  /* null, or a type error */
			}
			break;
		}
		if (rc)
			return rc;
		decode_path_pop(&d);
	}
	if (r < 0 || jscan_finish(&d.s) < 0)
		return decode_scan_fail(&d);
	if (!have_api || !str_eq_cstr(api, "admission.k8s.io/v1"))
		return wrong_value(&d, "apiVersion", "admission.k8s.io/v1", have_api, api);
	if (!have_kind || !str_eq_cstr(kind, "AdmissionReview"))
		return wrong_value(&d, "kind", "AdmissionReview", have_kind, kind);
	if (!have_request)
		return missing(&d, "request", "");
	if (d.held_rc) {
		*err = d.held;
		return d.held_rc;
	}
	return 0;
}

int decode_object(const char *json, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct k8s_object *out, struct decode_error *err)
{
	struct decode_limits deflim;
	struct dctx d;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!lim) {
		decode_limits_default(&deflim);
		lim = &deflim;
	}
	ctx_init(&d, json, len, lim, a, err, -EPROTO);
	rc = decode_object_value(&d, out, true);
	if (rc == 0 && jscan_finish(&d.s) < 0)
		rc = decode_scan_fail(&d);
	return rc;
}

/* decode_object_as(), and with used not NULL, of the object at the start
 * of json whatever follows it. */
static int object_as(const char *json, size_t len, enum object_kind kind, enum api_version version,
		     const struct decode_limits *lim, struct arena *a, struct k8s_object *out,
		     struct decode_error *err, size_t *used)
{
	struct decode_limits deflim;
	struct dctx d;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!lim) {
		decode_limits_default(&deflim);
		lim = &deflim;
	}
	ctx_init(&d, json, len, lim, a, err, -EPROTO);
	out->kind = kind;
	out->version = version;
	rc = decode_object_value(&d, out, false);
	if (rc == 0 && used)
		*used = jscan_offset(&d.s);
	else if (rc == 0 && jscan_finish(&d.s) < 0)
		rc = decode_scan_fail(&d);
	return rc;
}

int decode_object_as(const char *json, size_t len, enum object_kind kind, enum api_version version,
		     const struct decode_limits *lim, struct arena *a, struct k8s_object *out,
		     struct decode_error *err)
{
	return object_as(json, len, kind, version, lim, a, out, err, NULL);
}

int decode_object_as_prefix(const char *json, size_t len, enum object_kind kind, enum api_version version,
			    const struct decode_limits *lim, struct arena *a, struct k8s_object *out,
			    struct decode_error *err, size_t *used)
{
	return object_as(json, len, kind, version, lim, a, out, err, used);
}

static int decode_uid_only(struct dctx *d, void *obj)
{
	return decode_read_str(d, obj);
}

static const struct field uid_only_fields[] = {
	FCALL("uid", decode_uid_only),
};

int decode_review_uid(const char *body, size_t len, struct arena *a, struct str *uid)
{
	struct decode_limits lim;
	struct decode_error err;
	struct dctx d;
	struct str api = { NULL, 0 }, kind = { NULL, 0 }, found = { NULL, 0 };
	bool have_api = false, have_kind = false;
	uint32_t seen = 0;
	int r, rc = 0, id = -1;

	decode_limits_default(&lim);
	lim.max_depth = JSCAN_DEPTH_LIMIT;
	ctx_init(&d, body, len, &lim, a, &err, -EBADMSG);
	if (jscan_peek(&d.s) != JSCAN_OBJECT || jscan_object_enter(&d.s) < 0)
		return -EBADMSG;
	while ((r = decode_next_member(&d, review_fields, COUNT(review_fields), &seen, &id, NULL)) == 1) {
		switch (id) {
		case TOP_API_VERSION: rc = decode_read_str_opt(&d, &api, &have_api); break;
		case TOP_KIND: rc = decode_read_str_opt(&d, &kind, &have_kind); break;
		case TOP_REQUEST:
			/* Only uid is read; the rest is validated and skipped. */
			rc = decode_fields(&d, uid_only_fields, COUNT(uid_only_fields), &found, NULL);
			break;
		}
		if (rc)
			return rc;
		decode_path_pop(&d);
	}
	if (r < 0 || jscan_finish(&d.s) < 0)
		return -EBADMSG;
	if (!have_api || !str_eq_cstr(api, "admission.k8s.io/v1") || !have_kind ||
	    !str_eq_cstr(kind, "AdmissionReview") || found.len == 0)
		return -EBADMSG;
	*uid = found;
	return 0;
}
