/* dryrun.c - dra-guard dry-run, policy lint and rules: the engine offline.
 *
 * dry-run reads manifests (YAML or JSON; several documents, kind: List,
 * bare objects or whole AdmissionReviews), turns each object into the same
 * typed request the server decodes, and asks the same engine. Bare objects
 * are wrapped in a synthetic request (CREATE, or UPDATE against --old);
 * AdmissionReviews are answered exactly as the server would answer them.
 *
 * Exit codes: 0 all allowed, 1 something denied, 2 unusable input or policy,
 * --warn-exit-code N when there were warnings but no denials. */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "admission.h"
#include "buf.h"
#include "cli.h"
#include "decode.h"
#include "doc.h"
#include "engine.h"
#include "fileio.h"
#include "policy.h"
#include "rules.h"

#define DRYRUN_MAX_INPUT (64 * 1024 * 1024)     /* one input file */
#define DRYRUN_ARENA_CAP (256 * 1024 * 1024)    /* one object's decision */
#define DRYRUN_MAX_LIST 4096                    /* --group, --extra, inputs */
#define DRYRUN_MAX_OBJECTS 100000

enum output_format { OUTPUT_TEXT, OUTPUT_JSON, OUTPUT_JUNIT };

struct extra_kv {
	struct str key;
	struct str value;
};

struct dryrun {
	const char *policy_path;
	struct policy *policy;
	struct engine_options opt;
	struct decode_limits lim;
	enum admission_op operation;          /* UNKNOWN: CREATE, or UPDATE with --old */
	const char *old_path;
	struct doc_set *old_set;
	const char *user;
	const char *groups[DRYRUN_MAX_LIST];
	size_t ngroups;
	struct extra_kv extras[DRYRUN_MAX_LIST];
	size_t nextras;
	const char *subresource;
	enum output_format output;
	int warn_exit_code;                   /* -1: warnings exit 0 */

	json_t *results;                      /* result objects in input order */
	unsigned allowed, denied, warned, errors;
	size_t objects;
};

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

/* Split "group/version" (or "v1") into its parts. */
static void split_api_version(struct str av, struct str *group, struct str *version)
{
	const char *slash = av.len ? memchr(av.ptr, '/', av.len) : NULL;

	if (!slash) {
		*group = (struct str){ "", 0 };
		*version = av;
		return;
	}
	group->ptr = av.ptr;
	group->len = (size_t)(slash - av.ptr);
	version->ptr = slash + 1;
	version->len = av.len - group->len - 1;
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
			struct str copy;

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
	struct str text;
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
	split_api_version(obj.api_version, &req.kind.group, &req.kind.version);
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
	engine_decide(d->policy, &d->opt, &req, a, &v);
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
	struct str text;
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
		rc = admission_handle(d->policy, &opt, &d->lim, text.ptr, text.len, a, &out, &res);
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

static void run_file(struct dryrun *d, const char *path, struct arena *a)
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

static void run_dir(struct dryrun *d, const char *dir, struct arena *a)
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
		run_file(d, path, a);
		free(names[i]);
	}
}

/* --- output -------------------------------------------------------------------------------- */

static void print_text(struct dryrun *d)
{
	size_t i, j;
	json_t *r;

	json_array_foreach(d->results, i, r) {
		const char *error = json_string_value(json_object_get(r, "error"));
		json_t *viol = json_object_get(r, "violations"), *vi;
		bool allowed = json_is_true(json_object_get(r, "allowed"));
		const char *verdict = error && json_array_size(viol) == 0 ? "ERROR" : allowed ? "ALLOW" : "DENY";

		printf("%-5s %s %s/%s %s\n", verdict, json_string_value(json_object_get(r, "operation")),
		       json_string_value(json_object_get(r, "kind")), json_string_value(json_object_get(r, "name")),
		       json_string_value(json_object_get(r, "source")));
		if (error && json_array_size(viol) == 0)
			printf("      %s\n", error);
		json_array_foreach(viol, j, vi)
			printf("      %-6s %s: %s\n", json_string_value(json_object_get(vi, "action")),
			       json_string_value(json_object_get(vi, "rule")),
			       json_string_value(json_object_get(vi, "message")));
		if (!json_is_null(json_object_get(r, "patch"))) {
			char *p = json_dumps(json_object_get(r, "patch"), JSON_COMPACT);

			printf("      patch  %s\n", p ? p : "");
			free(p);
		}
	}
	printf("%zu objects: %u allowed (%u with warnings), %u denied, %u unusable\n",
	       json_array_size(d->results), d->allowed, d->warned, d->denied, d->errors);
}

static void print_json(struct dryrun *d)
{
	json_t *top = json_pack("{s:O, s:{s:i, s:i, s:i, s:i}}", "results", d->results, "summary",
				"allowed", (int)d->allowed, "denied", (int)d->denied, "warned", (int)d->warned,
				"errors", (int)d->errors);
	char *s = top ? json_dumps(top, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(top);
}

static void xml_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc(' ', f);
			else
				fputc(*s, f);
		}
	}
}

static void print_junit(struct dryrun *d)
{
	size_t i, j;
	json_t *r;

	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	printf("<testsuite name=\"dra-guard dry-run\" tests=\"%zu\" failures=\"%u\" errors=\"%u\">\n",
	       json_array_size(d->results), d->denied, d->errors);
	json_array_foreach(d->results, i, r) {
		const char *error = json_string_value(json_object_get(r, "error"));
		json_t *viol = json_object_get(r, "violations"), *vi;
		bool allowed = json_is_true(json_object_get(r, "allowed"));

		printf("  <testcase classname=\"");
		xml_escaped(stdout, json_string_value(json_object_get(r, "kind")));
		printf("\" name=\"");
		xml_escaped(stdout, json_string_value(json_object_get(r, "source")));
		printf(" ");
		xml_escaped(stdout, json_string_value(json_object_get(r, "name")));
		printf("\">\n");
		if (error && json_array_size(viol) == 0) {
			printf("    <error message=\"");
			xml_escaped(stdout, error);
			printf("\"/>\n");
		} else if (!allowed) {
			printf("    <failure message=\"denied\">");
			json_array_foreach(viol, j, vi) {
				if (strcmp(json_string_value(json_object_get(vi, "action")), "deny") != 0)
					continue;
				printf("[");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "rule")));
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "message")));
				printf("\n");
			}
			printf("</failure>\n");
		}
		if (json_array_size(viol)) {
			printf("    <system-out>");
			json_array_foreach(viol, j, vi) {
				xml_escaped(stdout, json_string_value(json_object_get(vi, "action")));
				printf(" [");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "rule")));
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "message")));
				printf("\n");
			}
			printf("</system-out>\n");
		}
		printf("  </testcase>\n");
	}
	printf("</testsuite>\n");
}

/* --- command line -------------------------------------------------------------------------- */

static void dryrun_usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard dry-run [--policy FILE] [--old FILE] [--operation CREATE|UPDATE|DELETE]\n"
		"                         [--user NAME] [--group G]... [--extra KEY=VALUE]... [--subresource S]\n"
		"                         [--freeze] [--policy-configmap NAMESPACE/NAME]\n"
		"                         [--output text|json|junit] [--warn-exit-code N] INPUT...\n"
		"\n"
		"Runs the policy engine on manifests, exactly as the webhook would decide them.\n"
		"INPUT is a file, a directory (every .yaml, .yml, .json in it) or - for stdin; each may\n"
		"hold several YAML documents, kind: List, bare objects or whole AdmissionReviews.\n"
		"\n"
		"  --policy FILE         a Policy document or the policy ConfigMap (default: built-in policy)\n"
		"  --old FILE            the stored object(s): bare objects become UPDATEs against the one of\n"
		"                        the same kind and name (or the only one)\n"
		"  --operation OP        CREATE (default), UPDATE (default with --old) or DELETE\n"
		"  --user NAME           the requesting user; without it the identity rules (slice.writer*,\n"
		"                        status.*) are skipped\n"
		"  --group G             a group of the user (repeatable)\n"
		"  --extra KEY=VALUE     a userInfo.extra value (repeatable), e.g.\n"
		"                        authentication.kubernetes.io/node-name=worker-1\n"
		"  --subresource S       e.g. status, for resourceclaims/status and pods/status writes\n"
		"  --freeze              act as if the policy's freeze were on\n"
		"  --policy-configmap NS/NAME  the guard's own ConfigMap (policy.invalid; default\n"
		"                        dra-guard/dra-guard-policy)\n"
		"  --output FORMAT       text (default), json or junit\n"
		"  --warn-exit-code N    exit N when there are warnings but no denials (default 0)\n"
		"\n"
		"Exit status: 0 all allowed, 1 something denied, 2 unusable input or policy.\n");
}

static int parse_op(const char *s, enum admission_op *op)
{
	*op = model_op_parse(str_from_cstr(s));
	return *op == ADMISSION_OP_CREATE || *op == ADMISSION_OP_UPDATE || *op == ADMISSION_OP_DELETE ? 0 : -EINVAL;
}

static int parse_self(const char *s, struct engine_options *opt)
{
	const char *slash = strchr(s, '/');

	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		return -EINVAL;
	opt->self_namespace = (struct str){ s, (size_t)(slash - s) };
	opt->self_name = str_from_cstr(slash + 1);
	return 0;
}

static int load_policy(struct dryrun *d)
{
	struct policy_error err;
	char *text = NULL;
	size_t len = 0;
	char line[POLICY_ERROR_MAX + 512];
	int rc;

	if (!d->policy_path)
		return policy_builtin(&d->policy);
	rc = fileio_read(d->policy_path, 4 * 1024 * 1024, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard dry-run: --policy %s: %s\n", d->policy_path, strerror(-rc));
		return rc;
	}
	rc = policy_load(text, len, &d->policy, &err);
	free(text);
	if (rc) {
		policy_error_format(&err, line, sizeof(line));
		fprintf(stderr, "dra-guard dry-run: --policy %s: %s\n", d->policy_path, line);
	}
	return rc;
}

static int load_old(struct dryrun *d)
{
	struct doc_limits lim;
	struct doc_error derr;
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = fileio_read(d->old_path, DRYRUN_MAX_INPUT, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard dry-run: --old %s: %s\n", d->old_path, strerror(-rc));
		return rc;
	}
	doc_limits_default(&lim);
	lim.max_bytes = DRYRUN_MAX_INPUT;
	rc = doc_parse(text, len, &lim, &d->old_set, &derr);
	free(text);
	if (rc)
		fprintf(stderr, "dra-guard dry-run: --old %s:%u:%u: %s\n", d->old_path, derr.line, derr.col, derr.msg);
	return rc;
}

enum {
	OPT_POLICY = 256, OPT_OLD, OPT_OPERATION, OPT_USER, OPT_GROUP, OPT_EXTRA, OPT_SUBRESOURCE,
	OPT_OUTPUT, OPT_WARN_EXIT, OPT_FREEZE, OPT_SELF, OPT_HELP,
};

static const struct option dryrun_options[] = {
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "old", required_argument, NULL, OPT_OLD },
	{ "operation", required_argument, NULL, OPT_OPERATION },
	{ "user", required_argument, NULL, OPT_USER },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "extra", required_argument, NULL, OPT_EXTRA },
	{ "subresource", required_argument, NULL, OPT_SUBRESOURCE },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "warn-exit-code", required_argument, NULL, OPT_WARN_EXIT },
	{ "freeze", no_argument, NULL, OPT_FREEZE },
	{ "policy-configmap", required_argument, NULL, OPT_SELF },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int parse_args(struct dryrun *d, int argc, char **argv)
{
	char *end;
	long n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", dryrun_options, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY: d->policy_path = optarg; break;
		case OPT_OLD: d->old_path = optarg; break;
		case OPT_OPERATION:
			if (parse_op(optarg, &d->operation)) {
				fprintf(stderr, "dra-guard dry-run: --operation %s: expected CREATE, UPDATE or DELETE\n", optarg);
				return 2;
			}
			break;
		case OPT_USER: d->user = optarg; break;
		case OPT_GROUP:
			if (d->ngroups == DRYRUN_MAX_LIST)
				return 2;
			d->groups[d->ngroups++] = optarg;
			break;
		case OPT_EXTRA: {
			const char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg || d->nextras == DRYRUN_MAX_LIST) {
				fprintf(stderr, "dra-guard dry-run: --extra %s: expected KEY=VALUE\n", optarg);
				return 2;
			}
			d->extras[d->nextras].key = (struct str){ optarg, (size_t)(eq - optarg) };
			d->extras[d->nextras].value = str_from_cstr(eq + 1);
			d->nextras++;
			break;
		}
		case OPT_SUBRESOURCE: d->subresource = optarg; break;
		case OPT_OUTPUT:
			if (strcmp(optarg, "text") == 0)
				d->output = OUTPUT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				d->output = OUTPUT_JSON;
			else if (strcmp(optarg, "junit") == 0)
				d->output = OUTPUT_JUNIT;
			else {
				fprintf(stderr, "dra-guard dry-run: --output %s: expected text, json or junit\n", optarg);
				return 2;
			}
			break;
		case OPT_WARN_EXIT:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || n < 0 || n > 255) {
				fprintf(stderr, "dra-guard dry-run: --warn-exit-code %s: expected 0..255\n", optarg);
				return 2;
			}
			d->warn_exit_code = (int)n;
			break;
		case OPT_FREEZE: d->opt.force_freeze = true; break;
		case OPT_SELF:
			if (parse_self(optarg, &d->opt)) {
				fprintf(stderr, "dra-guard dry-run: --policy-configmap %s: expected NAMESPACE/NAME\n", optarg);
				return 2;
			}
			break;
		case OPT_HELP:
		case 'h':
			dryrun_usage(stdout);
			return 0;
		default:
			dryrun_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "dra-guard dry-run: no INPUT given\n");
		dryrun_usage(stderr);
		return 2;
	}
	if (d->operation == ADMISSION_OP_UPDATE && !d->old_path) {
		fprintf(stderr, "dra-guard dry-run: --operation UPDATE needs --old FILE\n");
		return 2;
	}
	return -1;
}

int dryrun_main(int argc, char **argv)
{
	struct dryrun d;
	struct arena *a = NULL;
	struct stat st;
	int rc, i, code = 2;

	memset(&d, 0, sizeof(d));
	d.warn_exit_code = -1;
	d.user = "";
	d.subresource = "";
	d.opt.mutate = true;
	d.opt.self_namespace = STR_LIT("dra-guard");
	d.opt.self_name = STR_LIT("dra-guard-policy");
	decode_limits_default(&d.lim);
	rc = parse_args(&d, argc, argv);
	if (rc >= 0)
		return rc;
	d.opt.skip_identity_rules = d.user[0] == '\0';
	if (load_policy(&d) || (d.old_path && load_old(&d)))
		goto out;
	d.results = json_array();
	if (!d.results || arena_new(DRYRUN_ARENA_CAP, &a)) {
		fprintf(stderr, "dra-guard dry-run: out of memory\n");
		goto out;
	}
	for (i = optind; i < argc; i++) {
		if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			run_dir(&d, argv[i], a);
		else
			run_file(&d, argv[i], a);
	}
	if (d.output == OUTPUT_JSON)
		print_json(&d);
	else if (d.output == OUTPUT_JUNIT)
		print_junit(&d);
	else
		print_text(&d);
	if (d.errors)
		code = 2;
	else if (d.denied)
		code = 1;
	else if (d.warned && d.warn_exit_code >= 0)
		code = d.warn_exit_code;
	else
		code = 0;
out:
	json_decref(d.results);
	arena_free(a);
	doc_set_free(d.old_set);
	policy_free(d.policy);
	return code;
}

/* --- policy lint, rules -------------------------------------------------------------------- */

int lint_main(int argc, char **argv)
{
	int i, code = 0;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: dra-guard policy lint FILE...\n\n"
			"Checks Policy documents or policy ConfigMap manifests. Exit 0 when all are valid,\n"
			"2 otherwise; each error names the file, line and path.\n");
		return argc < 2 ? 2 : 0;
	}
	for (i = 1; i < argc; i++) {
		struct policy_error err;
		struct policy *p = NULL;
		char line[POLICY_ERROR_MAX + 512];
		char *text = NULL;
		size_t len = 0;
		int rc = fileio_read(argv[i], 4 * 1024 * 1024, &text, &len);

		if (rc) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(-rc));
			code = 2;
			continue;
		}
		rc = policy_load(text, len, &p, &err);
		free(text);
		if (rc) {
			policy_error_format(&err, line, sizeof(line));
			fprintf(stderr, "%s: %s\n", argv[i], line);
			code = 2;
		} else {
			printf("%s: valid (policy hash %.12s, freeze %s)\n", argv[i], p->hash,
			       p->frozen ? "on" : "off");
		}
		policy_free(p);
	}
	return code;
}

int rules_main(int argc, char **argv)
{
	int i;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "usage: dra-guard rules\n");
		return 2;
	}
	printf("%-28s %-8s %s\n", "RULE", "DEFAULT", "CHECKS");
	for (i = 0; i < RULE_COUNT; i++)
		printf("%-28s %-8s %s\n", rule_name((enum rule_id)i), action_name(rule_builtin_action((enum rule_id)i)),
		       rule_summary((enum rule_id)i));
	return 0;
}
