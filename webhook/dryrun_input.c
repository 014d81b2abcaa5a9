/* dryrun_input.c - dry-run's inputs, object by object: files and
 * directories, the documents in them (kind: List unrolled), and for each a
 * decision by the engine, recorded as one result.
 *
 * Bare objects are wrapped in a synthetic request (CREATE, or UPDATE
 * against --old); AdmissionReviews, and bare AdmissionRequests, are
 * answered exactly as the server would answer them. An input that cannot
 * be used is a result too (an error), so one bad file does not hide the
 * verdicts on the others. */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admission.h"
#include "buf.h"
#include "decode.h"
#include "doc.h"
#include "dryrun_impl.h"
#include "engine.h"
#include "fileio.h"
#include "names.h"
#include "rules.h"

/* --- results ---------------------------------------------------------------- */

static json_t *str_json(struct str s)
{
	return json_stringn(s.ptr ? s.ptr : "", s.len);
}

static int add_result(struct dryrun *d, const char *source, const char *kind, struct str name,
		      const char *operation, const struct verdict *v, const char *error)
{
	json_t *r = json_object(), *viol = json_array(), *warn = json_array(), *patch = json_null();
	uint32_t i;

	if (!r || !viol || !warn)
		goto fail;
	json_object_set_new(r, "source", json_string(source));
	json_object_set_new(r, "kind", json_string(kind));
	json_object_set_new(r, "name", str_json(name));
	json_object_set_new(r, "operation", json_string(operation));
	if (error) {
		json_object_set_new(r, "allowed", json_false());
		json_object_set_new(r, "error", json_string(error));
		d->errors++;
	} else {
		json_object_set_new(r, "allowed", json_boolean(v->allowed));
		for (i = 0; i < v->nviolations; i++) {
			const struct violation *vi = &v->violations[i];
			json_t *o = json_pack("{s:s, s:s, s:s%, s:s%}", "rule", rule_name(vi->rule),
					      "action", action_name(vi->action),
					      "path", vi->path.ptr, vi->path.len,
					      "message", vi->message.ptr, vi->message.len);

			if (!o)
				goto fail;
			json_array_append_new(viol, o);
		}
		for (i = 0; i < v->nwarnings; i++)
			json_array_append_new(warn, str_json(v->warnings[i]));
		if (!v->allowed && v->nviolations == 0)
			json_object_set_new(r, "error", str_json(v->message));
		if (v->patch.len) {
			json_decref(patch);
			patch = json_loadb(v->patch.ptr, v->patch.len, JSON_REJECT_DUPLICATES, NULL);
			if (!patch)
				goto fail;
		}
		if (!v->allowed)
			d->denied++;
		else if (v->nwarnings)
			d->warned++, d->allowed++;
		else
			d->allowed++;
	}
	json_object_set_new(r, "violations", viol);
	json_object_set_new(r, "warnings", warn);
	json_object_set_new(r, "patch", patch);
	json_array_append_new(d->results, r);
	return 0;
fail:
	json_decref(r);
	json_decref(viol);
	json_decref(warn);
	json_decref(patch);
	return -ENOMEM;
}

/* --- synthetic requests -------------------------------------------------------------- */

static const char *plural_of(enum object_kind k)
{
	switch (k) {
	case OBJECT_RESOURCE_SLICE: return "resourceslices";
	case OBJECT_RESOURCE_CLAIM: return "resourceclaims";
	case OBJECT_POD: return "pods";
	case OBJECT_CONFIG_MAP: return "configmaps";
	case OBJECT_NONE:
	case OBJECT_OTHER:
		break;
	}
	return "";
}

static void fill_user(struct dryrun *d, struct arena *a, struct user_info *u)
{
	size_t i, j;

	u->username = str_from_cstr(d->user);
	u->groups = arena_calloc(a, d->ngroups ? d->ngroups : 1, sizeof(*u->groups));
	for (i = 0; u->groups && i < d->ngroups; i++)
		u->groups[u->ngroups++] = str_from_cstr(d->groups[i]);
	/* --extra KEY=V given twice for one key makes a two-value list. */
	u->extra = arena_calloc(a, d->nextras ? d->nextras : 1, sizeof(*u->extra));
	for (i = 0; u->extra && i < d->nextras; i++) {
		struct user_extra *e = NULL;

		for (j = 0; j < u->nextra; j++)
			if (str_eq(u->extra[j].key, d->extras[i].key))
				e = &u->extra[j];
		if (!e) {
			e = &u->extra[u->nextra++];
			e->key = d->extras[i].key;
			e->values = arena_calloc(a, d->nextras, sizeof(*e->values));
			if (!e->values)
				return;
		}
		e->values[e->nvalues++] = d->extras[i].value;
	}
}

/* The --old object for obj: same kind and name, or the only one there is. */
static const struct doc_node *find_old(struct dryrun *d, const struct k8s_object *obj, struct arena *a,
				       struct k8s_object *old, char *err, size_t errlen)
{
	const struct doc_node *only = NULL, *match = NULL;
	size_t i, count = 0;
	struct buf json;
	struct decode_error derr;
	int rc;

	buf_init(&json, DRYRUN_MAX_INPUT);
	for (i = 0; i < doc_set_count(d->old_set); i++) {
		const struct doc_node *n = doc_set_root(d->old_set, i);
		const struct doc_node *meta, *name, *kind;

		if (n->type != DOC_MAP)
			continue;
		count++;
		only = n;
		kind = doc_map_get(n, "kind");
		meta = doc_map_get(n, "metadata");
		name = meta ? doc_map_get(meta, "name") : NULL;
		if (kind && kind->type == DOC_STRING && str_eq(kind->text, obj->kind_name) &&
		    name && name->type == DOC_STRING && str_eq(name->text, obj->meta.name))
			match = n;
	}
	if (!match && count == 1)
		match = only;
	if (!match) {
		snprintf(err, errlen, "--old %s holds no %.*s named \"%.*s\"", d->old_path,
			 STR_FMT(obj->kind_name), STR_FMT(obj->meta.name));
		return NULL;
	}
	rc = doc_to_json(match, &json);
	if (rc == 0) {
		char *text = NULL;
		size_t len = 0;

		/* The decoded model borrows from the text: keep it in the arena. */
		rc = buf_take(&json, &text, &len);
		if (rc == 0) {
			struct str copy = { NULL, 0 };

			rc = arena_strdup(a, text, len, &copy);
			free(text);
			if (rc == 0)
				rc = decode_object(copy.ptr, copy.len, &d->lim, a, old, &derr);
			if (rc)
				snprintf(err, errlen, "--old %s (line %u): %s", d->old_path, match->line,
					 rc == -EPROTO ? derr.msg : strerror(-rc));
		}
	}
	buf_free(&json);
	return rc ? NULL : match;
}

/* Kind and name as the document spells them, for results that could not be
 * decoded: the user still needs to know which object it was. */
static void doc_identity(const struct doc_node *n, char *kind, size_t kn, struct str *name)
{
	const struct doc_node *k = doc_map_get(n, "kind");
	const struct doc_node *meta = doc_map_get(n, "metadata");
	const struct doc_node *nm = meta ? doc_map_get(meta, "name") : NULL;

	snprintf(kind, kn, "%.*s", k && k->type == DOC_STRING ? (int)k->text.len : 0,
		 k && k->type == DOC_STRING ? k->text.ptr : "");
	*name = nm && nm->type == DOC_STRING ? nm->text : (struct str){ "", 0 };
}

static void decide_object(struct dryrun *d, const char *source, const struct doc_node *n, struct arena *a)
{
	struct admission_request req;
	struct k8s_object obj;
	struct decode_error derr;
	struct verdict v;
	struct buf json;
	struct str text = { NULL, 0 };
	char err[DECODE_ERROR_MAX + 256];
	enum admission_op op = d->operation;
	char kind[128];
	int rc;

	memset(&req, 0, sizeof(req));
	buf_init(&json, DRYRUN_MAX_INPUT);
	rc = doc_to_json(n, &json);
	if (rc == 0)
		rc = arena_strdup(a, buf_cstr(&json), buf_len(&json), &text);
	buf_free(&json);
	if (rc) {
		snprintf(err, sizeof(err), "line %u: %s", n->line, strerror(-rc));
		add_result(d, source, "", (struct str){ "", 0 }, "", NULL, err);
		return;
	}
	rc = decode_object(text.ptr, text.len, &d->lim, a, &obj, &derr);
	if (rc) {
		struct str name;

		doc_identity(n, kind, sizeof(kind), &name);
		snprintf(err, sizeof(err), "line %u: %s", n->line, rc == -EPROTO ? derr.msg : strerror(-rc));
		add_result(d, source, kind, name, "", NULL, err);
		return;
	}
	if (op == ADMISSION_OP_UNKNOWN)
		op = d->old_set ? ADMISSION_OP_UPDATE : ADMISSION_OP_CREATE;
	req.uid = STR_LIT("dry-run");
	names_split_api_version(obj.api_version, &req.kind.group, &req.kind.version);
	req.kind.kind = obj.kind_name;
	req.resource.group = req.kind.group;
	req.resource.version = req.kind.version;
	req.resource.resource = str_from_cstr(plural_of(obj.kind));
	req.sub_resource = str_from_cstr(d->subresource);
	req.name = obj.meta.name;
	req.namespace = obj.meta.namespace;
	req.operation = op;
	req.operation_text = str_from_cstr(model_op_name(op));
	req.dry_run = true;
	fill_user(d, a, &req.user);
	if (op == ADMISSION_OP_DELETE) {
		req.old_object = obj;
	} else {
		req.object = obj;
		if (op == ADMISSION_OP_UPDATE) {
			if (!d->old_set) {
				snprintf(err, sizeof(err), "line %u: --operation UPDATE needs --old FILE", n->line);
				add_result(d, source, "", obj.meta.name, "UPDATE", NULL, err);
				return;
			}
			if (!find_old(d, &obj, a, &req.old_object, err, sizeof(err))) {
				add_result(d, source, "", obj.meta.name, "UPDATE", NULL, err);
				return;
			}
		}
	}
	engine_decide(d->policy, NULL, &d->opt, &req, d->now_ns, a, &v);
	snprintf(kind, sizeof(kind), "%.*s", STR_FMT(obj.kind_name));
	add_result(d, source, kind, obj.meta.name, model_op_name(op), &v, NULL);
}

/* A bare AdmissionRequest (the request member alone, as webhook test suites
 * keep them): a uid, an operation and a kind that is a group/version/kind map. */
static bool is_bare_request(const struct doc_node *n)
{
	const struct doc_node *k = doc_map_get(n, "kind");

	return k && k->type == DOC_MAP && doc_map_get(n, "uid") && doc_map_get(n, "operation");
}

static void decide_review(struct dryrun *d, const char *source, const struct doc_node *n, struct arena *a)
{
	struct admission_result res;
	struct buf json, out;
	struct str text = { NULL, 0 };
	char err[DECODE_ERROR_MAX + 64];
	char kind[128];
	int rc;

	buf_init(&json, DRYRUN_MAX_INPUT);
	buf_init(&out, DRYRUN_MAX_INPUT);
	if (is_bare_request(n)) {
		rc = buf_add_cstr(&json, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":");
		if (rc == 0)
			rc = doc_to_json(n, &json);
		if (rc == 0)
			rc = buf_add_char(&json, '}');
	} else {
		rc = doc_to_json(n, &json);
	}
	if (rc == 0)
		rc = arena_strdup(a, buf_cstr(&json), buf_len(&json), &text);
	if (rc == 0) {
		/* A review names its own writer: the identity rules always apply. */
		struct engine_options opt = d->opt;

		opt.skip_identity_rules = false;
		rc = admission_handle(d->policy, NULL, d->now_ns, &opt, &d->lim, text.ptr, text.len, a, &out, &res);
	}
	if (rc) {
		snprintf(err, sizeof(err), "line %u: %s", n->line, strerror(-rc));
		add_result(d, source, "AdmissionReview", (struct str){ "", 0 }, "", NULL, err);
	} else if (res.http_status != 200) {
		snprintf(err, sizeof(err), "line %u: %s", n->line, res.error);
		add_result(d, source, "AdmissionReview", (struct str){ "", 0 }, "", NULL, err);
	} else {
		snprintf(kind, sizeof(kind), "%.*s", STR_FMT(res.req.kind.kind));
		add_result(d, source, kind, res.req.name, model_op_name(res.req.operation), &res.verdict, NULL);
	}
	buf_free(&json);
	buf_free(&out);
}

static bool is_review(const struct doc_node *n)
{
	const struct doc_node *k = doc_map_get(n, "kind");

	return k && k->type == DOC_STRING && str_eq_cstr(k->text, "AdmissionReview");
}


static bool is_list(const struct doc_node *n)
{
	const struct doc_node *k = doc_map_get(n, "kind");
	const struct doc_node *items = doc_map_get(n, "items");

	return k && k->type == DOC_STRING && k->text.len >= 4 &&
	       memcmp(k->text.ptr + k->text.len - 4, "List", 4) == 0 && items && items->type == DOC_SEQ;
}

static void decide_node(struct dryrun *d, const char *source, const struct doc_node *n, struct arena *a)
{
	if (++d->objects > DRYRUN_MAX_OBJECTS) {
		if (d->objects == DRYRUN_MAX_OBJECTS + 1)
			add_result(d, source, "", (struct str){ "", 0 }, "", NULL,
				   "more than 100000 objects in one run; split the input");
		return;
	}
	arena_reset(a);
	if (n->type != DOC_MAP) {
		char err[128];

		snprintf(err, sizeof(err), "line %u: expected an object (a map), got a %s", n->line,
			 doc_type_name(n->type));
		add_result(d, source, "", (struct str){ "", 0 }, "", NULL, err);
		return;
	}
	if (is_review(n) || is_bare_request(n))
		decide_review(d, source, n, a);
	else
		decide_object(d, source, n, a);
}

static void run_text(struct dryrun *d, const char *name, const char *text, size_t len, struct arena *a)
{
	struct doc_limits lim;
	struct doc_error derr;
	struct doc_set *set = NULL;
	char source[PATH_MAX + 64], err[DOC_ERROR_MAX + 64];
	size_t i, j;
	int rc;

	doc_limits_default(&lim);
	lim.max_bytes = DRYRUN_MAX_INPUT;
	rc = doc_parse(text, len, &lim, &set, &derr);
	if (rc) {
		snprintf(source, sizeof(source), "%s#%zu", name, derr.doc_index);
		snprintf(err, sizeof(err), "line %u, column %u: %s", derr.line, derr.col, derr.msg);
		add_result(d, source, "", (struct str){ "", 0 }, "", NULL, err);
		return;
	}
	for (i = 0; i < doc_set_count(set); i++) {
		const struct doc_node *root = doc_set_root(set, i);

		if (root->type == DOC_NULL)
			continue;       /* an empty document between --- markers */
		if (root->type == DOC_MAP && is_list(root)) {
			const struct doc_node *items = doc_map_get(root, "items");

			for (j = 0; j < items->n; j++) {
				snprintf(source, sizeof(source), "%s#%zu/items[%zu]", name, i, j);
				decide_node(d, source, items->items[j], a);
			}
			continue;
		}
		snprintf(source, sizeof(source), "%s#%zu", name, i);
		decide_node(d, source, root, a);
	}
	doc_set_free(set);
}

void dryrun_run_file(struct dryrun *d, const char *path, struct arena *a)
{
	char *text = NULL;
	size_t len = 0;
	char err[PATH_MAX + 128];
	int rc = strcmp(path, "-") == 0 ? fileio_read_stream(stdin, DRYRUN_MAX_INPUT, &text, &len)
					: fileio_read(path, DRYRUN_MAX_INPUT, &text, &len);

	if (rc) {
		snprintf(err, sizeof(err), "cannot read: %s", rc == -E2BIG ? "larger than 64 MiB" : strerror(-rc));
		add_result(d, path, "", (struct str){ "", 0 }, "", NULL, err);
		return;
	}
	run_text(d, strcmp(path, "-") == 0 ? "<stdin>" : path, text, len, a);
	free(text);
}

static bool has_manifest_suffix(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) || (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
	       (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void dryrun_run_dir(struct dryrun *d, const char *dir, struct arena *a)
{
	char *names[DRYRUN_MAX_LIST];
	size_t n = 0, i;
	DIR *dp = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!dp) {
		add_result(d, dir, "", (struct str){ "", 0 }, "", NULL, "cannot open directory");
		return;
	}
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.' || !has_manifest_suffix(e->d_name))
			continue;
		if (n == DRYRUN_MAX_LIST) {
			add_result(d, dir, "", (struct str){ "", 0 }, "", NULL,
				   "more than 4096 manifests in one directory");
			break;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(dp);
	qsort(names, n, sizeof(names[0]), cmp_names);
	for (i = 0; i < n; i++) {
		size_t dlen = strlen(dir);

		snprintf(path, sizeof(path), "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/", names[i]);
		dryrun_run_file(d, path, a);
		free(names[i]);
	}
}
