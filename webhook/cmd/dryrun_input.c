/* dryrun_input.c - dry-run's inputs, object by object: each entry of an
 * input (see manifest.h) decided by the engine and recorded as one result.
 *
 * Bare objects are wrapped in a synthetic request (synth.h): an UPDATE when
 * --old holds a stored object with the same group, kind, namespace and
 * name, a CREATE when it holds none, and never a pairing with anything
 * else. A claim or Pod update whose only differences from the stored object
 * are under status is decided as the status write it must be. What the
 * made-up request cannot exercise (no --user, a main-resource write) is
 * recorded as skipped, per object. AdmissionReviews, and bare
 * AdmissionRequests, are answered exactly as the server would answer them.
 * An entry that cannot be used is a result too (an error naming the file,
 * line and column), so one bad document does not hide the others. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "buf.h"
#include "decode.h"
#include "doc.h"
#include "dryrun_impl.h"
#include "engine.h"
#include "fieldcheck.h"
#include "inputs.h"
#include "jw.h"
#include "manifest.h"
#include "rules.h"
#include "synth.h"

/* Nodes plus keys a located conversion may record: the JSON of one object
 * is at most DRYRUN_MAX_INPUT bytes, and each span takes at least one. */
#define DRYRUN_MAX_SPANS ((size_t)DRYRUN_MAX_INPUT)

/* Messages: a source or position is at most SOURCE_MAX bytes, what the
 * decoder says at most DECODE_ERROR_MAX; the formats below bound each part
 * (%.4200s, %.600s) so a message always fits MSG_MAX whole. */
#define SOURCE_MAX (PATH_MAX + 64)
#define MSG_MAX 16384

/* --- results ---------------------------------------------------------------- */

/* Everything a result says besides the verdict. */
struct outcome {
	const char *source;
	struct str kind, namespace, name;
	const char *operation;                 /* "" when there is none */
	struct str subresource;
	bool subresource_inferred;
	const char *old_source;                /* the stored object, or NULL */
	struct synth_skip skipped[SYNTH_SKIP_MAX];
	size_t nskipped;
	const char *error;                     /* NULL, or what is wrong, with its position */
	const char *file;                      /* where the error is, or the object */
	uint32_t line, col;
	const struct doc_node *object;         /* the object violation paths are in, or NULL */
	const struct fieldcheck_finding *fields;   /* unknown fields (--field-validation) */
	size_t nfields, fields_total;
	const char *not_judged;                /* why no rule judged the object, or NULL */
	const char *hint;                      /* a likely typo in its kind, or NULL */
};

/* Copies into the results arena; NULL (or an empty view) when it is full. */
static const char *keep(struct dryrun *d, const char *s)
{
	struct str out = { 0 };

	return arena_strdup(d->kept, s, strlen(s), &out) == 0 ? out.ptr : NULL;
}

static struct str keep_str(struct dryrun *d, struct str s, bool *ok)
{
	struct str out = { "", 0 };

	if (arena_strdup(d->kept, s.ptr ? s.ptr : "", s.len, &out) != 0)
		*ok = false;
	return out;
}

static const char *keep_ok(struct dryrun *d, const char *s, bool *ok)
{
	const char *k = s ? keep(d, s) : NULL;

	if (s && !k)
		*ok = false;
	return k;
}

/* Each violation with the rule, action, path and message, and where in
 * the file its path is (for CI annotations). */
static bool keep_violations(struct dryrun *d, const struct outcome *o, const struct verdict *v,
			    struct dryrun_result *r)
{
	bool ok = true;
	uint32_t i;

	r->violations = arena_calloc(d->kept, v->nviolations ? v->nviolations : 1, sizeof(*r->violations));
	if (!r->violations)
		return false;
	for (i = 0; i < v->nviolations; i++) {
		const struct violation *vi = &v->violations[i];
		struct dryrun_violation *dv = &r->violations[i];

		dv->rule = rule_name(vi->rule);
		dv->action = action_name(vi->action);
		dv->path = keep_str(d, vi->path, &ok);
		dv->message = keep_str(d, vi->message, &ok);
		dv->located = o->object && o->file && doc_path_position(o->object, vi->path, &dv->line, &dv->col);
	}
	r->nviolations = v->nviolations;
	return ok;
}

/* What the API server's field validation says of one unknown field, as
 * its warnings and strict decoding errors say it. */
static void field_message(const struct fieldcheck_finding *f, char *buf, size_t n)
{
	snprintf(buf, n, "unknown field \"%s\"", f->path);
}

/* The same, with what the guard adds: the close name and why. */
static void field_explained(const struct fieldcheck_finding *f, char *buf, size_t n)
{
	char m[FIELDCHECK_PATH_MAX + 32];

	field_message(f, m, sizeof(m));
	if (f->suggestion[0] && f->note)
		snprintf(buf, n, "%s: did you mean \"%s\"? (%s)", m, f->suggestion, f->note);
	else if (f->suggestion[0])
		snprintf(buf, n, "%s: did you mean \"%s\"?", m, f->suggestion);
	else
		snprintf(buf, n, "%s", m);
}

static bool keep_fields(struct dryrun *d, const struct outcome *o, struct dryrun_result *r)
{
	char m[FIELDCHECK_PATH_MAX + 32];
	bool ok = true;
	size_t i;

	r->fields = arena_calloc(d->kept, o->nfields ? o->nfields : 1, sizeof(*r->fields));
	if (!r->fields)
		return false;
	for (i = 0; i < o->nfields; i++) {
		const struct fieldcheck_finding *f = &o->fields[i];
		struct dryrun_field *df = &r->fields[i];

		field_message(f, m, sizeof(m));
		df->path = keep_ok(d, f->path, &ok);
		df->message = keep_ok(d, m, &ok);
		df->did_you_mean = f->suggestion[0] ? keep_ok(d, f->suggestion, &ok) : NULL;
		df->note = f->note;
		df->line = f->line;
		df->col = f->col;
	}
	r->nfields = o->nfields;
	if (o->fields_total > o->nfields)
		r->fields_not_listed = o->fields_total - o->nfields;
	return ok;
}

/* The patch as the outputs show it: re-written compactly, as the JSON
 * output will lay it out again; none when it is not one JSON value. */
static bool keep_patch(struct dryrun *d, struct str patch, struct dryrun_result *r)
{
	struct buf b;
	struct jw w;
	bool ok = true;

	buf_init(&b, patch.len * 2 + 64);
	jw_init_style(&w, &b, 0, JW_PLAIN_ESCAPES);
	if (jw_json(&w, patch.ptr, patch.len) == 0 && jw_finish(&w) == 0)
		r->patch = keep_str(d, (struct str){ buf_cstr(&b), buf_len(&b) }, &ok);
	buf_free(&b);
	return ok;
}

/* The warnings of a result: the verdict's, then the unknown fields'. */
static bool keep_warnings(struct dryrun *d, const struct outcome *o, const struct verdict *v,
			  struct dryrun_result *r)
{
	char m[FIELDCHECK_PATH_MAX + 32];
	size_t n = 0, k, nv = r->kind == DRYRUN_DECIDED ? v->nwarnings : 0;
	size_t nf = !o->error && v ? o->nfields : 0;
	bool ok = true;

	r->warnings = arena_calloc(d->kept, 1 + nv + nf, sizeof(*r->warnings));
	if (!r->warnings)
		return false;
	if (r->kind == DRYRUN_NOT_JUDGED && o->hint)
		r->warnings[n++] = keep_str(d, str_from_cstr(o->hint), &ok);
	for (k = 0; k < nv; k++)
		r->warnings[n++] = keep_str(d, v->warnings[k], &ok);
	for (k = 0; k < nf; k++) {
		field_message(&o->fields[k], m, sizeof(m));
		r->warnings[n++] = keep_str(d, str_from_cstr(m), &ok);
	}
	r->nwarnings = n;
	return ok;
}

/* The next result's slot, zeroed; NULL past the cap or out of memory. */
static struct dryrun_result *next_result(struct dryrun *d)
{
	if (d->nresults == d->results_alloc) {
		size_t n = d->results_alloc ? d->results_alloc * 2 : 64;
		struct dryrun_result *p;

		if (n > 2 * (size_t)DRYRUN_MAX_OBJECTS)
			n = 2 * (size_t)DRYRUN_MAX_OBJECTS;
		if (n <= d->nresults || !(p = realloc(d->results, n * sizeof(*p))))
			return NULL;
		d->results = p;
		d->results_alloc = n;
	}
	memset(&d->results[d->nresults], 0, sizeof(d->results[0]));
	return &d->results[d->nresults];
}

static void add_result(struct dryrun *d, const struct outcome *o, const struct verdict *v)
{
	struct dryrun_result *r = next_result(d);
	bool ok = r != NULL;
	size_t k;

	if (!ok)
		goto fail;
	r->source = keep_ok(d, o->source, &ok);
	r->object_kind = keep_str(d, o->kind, &ok);
	r->namespace = keep_str(d, o->namespace, &ok);
	r->name = keep_str(d, o->name, &ok);
	r->operation = keep_ok(d, o->operation ? o->operation : "", &ok);
	r->subresource = keep_str(d, o->subresource, &ok);
	r->subresource_inferred = o->subresource_inferred;
	r->old = keep_ok(d, o->old_source, &ok);
	r->file = keep_ok(d, o->file, &ok);
	if (o->not_judged) {
		/* The webhook is not even called for such a kind: it goes
		 * through, and the run says that nothing looked at it. */
		r->kind = DRYRUN_NOT_JUDGED;
		r->allowed = true;
		r->not_judged = keep_ok(d, o->not_judged, &ok);
	} else if (o->error || !v) {
		r->kind = DRYRUN_UNUSABLE;
		r->error = keep_ok(d, o->error ? o->error : "out of memory", &ok);
		r->line = o->line;
		r->col = o->col;
	} else {
		r->kind = DRYRUN_DECIDED;
		r->allowed = v->allowed;
		ok = ok && keep_violations(d, o, v, r);
		if (!v->allowed && v->nviolations == 0)
			r->error = keep_str(d, v->message, &ok).ptr;
		if (v->patch.len)
			ok = ok && keep_patch(d, v->patch, r);
	}
	ok = ok && keep_warnings(d, o, v, r) && keep_fields(d, o, r);
	for (k = 0; k < o->nskipped; k++) {
		size_t j;

		for (j = 0; j < o->skipped[k].nrules && j < 4; j++)
			r->skipped[k].rules[j] = rule_name(o->skipped[k].rules[j]);
		r->skipped[k].nrules = j;
		r->skipped[k].reason = o->skipped[k].reason;
	}
	r->nskipped = o->nskipped;
	if (!ok)
		goto fail;
	d->nresults++;
	if (r->kind == DRYRUN_NOT_JUDGED) {
		d->not_judged++;
		d->skipped++;
		if (o->hint || o->nfields)
			d->warned++;
	} else if (r->kind == DRYRUN_UNUSABLE) {
		d->errors++;
	} else if (!v->allowed) {
		d->denied++;
	} else if (v->nwarnings || o->nfields) {
		d->warned++, d->allowed++;
	} else {
		d->allowed++;
	}
	if (o->nskipped && !o->not_judged)
		d->skipped++;
	return;
fail:
	d->errors++;
}

void dryrun_source(const struct manifest_entry *e, char *buf, size_t n)
{
	if (e->item != MANIFEST_NO_ITEM)
		snprintf(buf, n, "%s#%zu/items[%zu]", e->file, e->doc, e->item);
	else
		snprintf(buf, n, "%s#%zu", e->file, e->doc);
}

void dryrun_position(const char *file, uint32_t line, uint32_t col, char *buf, size_t n)
{
	if (line && col)
		snprintf(buf, n, "%s:%" PRIu32 ":%" PRIu32, file, line, col);
	else if (line)
		snprintf(buf, n, "%s:%" PRIu32, file, line);
	else
		snprintf(buf, n, "%s", file);
}

/* An error result for entry e: message prefixed with its position. */
static void add_error(struct dryrun *d, struct outcome *o, const char *file, uint32_t line, uint32_t col,
		      const char *msg)
{
	char where[SOURCE_MAX], text[MSG_MAX];

	dryrun_position(file, line, col, where, sizeof(where));
	snprintf(text, sizeof(text), "%.4200s: %.12000s", where, msg);
	o->error = text;
	o->file = file;
	o->line = line;
	o->col = col;
	add_result(d, o, NULL);
	o->error = NULL;
}

/* --- objects ----------------------------------------------------------------------- */

/* Decode the object n, keeping its JSON in the arena (the model borrows
 * from it). On a decoding error, *line and *col say where in the source the
 * decoder stopped: the value it could not take. 0, -EPROTO (msg says why)
 * or another errno. */
static int decode_node(struct dryrun *d, const struct doc_node *n, struct arena *a, struct k8s_object *out,
		       char *msg, size_t msgn, uint32_t *line, uint32_t *col)
{
	struct decode_error derr;
	struct doc_locator *loc = NULL;
	struct str text = { NULL, 0 };
	struct buf json;
	int rc;

	*line = n->line;
	*col = n->col;
	buf_init(&json, DRYRUN_MAX_INPUT);
	rc = doc_to_json(n, &json);
	if (rc == 0)
		rc = arena_strdup(a, buf_cstr(&json), buf_len(&json), &text);
	if (rc == 0)
		rc = decode_object(text.ptr, text.len, &d->lim, a, out, &derr);
	if (rc == -EPROTO) {
		snprintf(msg, msgn, "%s", derr.msg);
		/* The same JSON again, remembering where each part came from. */
		buf_reset(&json);
		if (doc_to_json_located(n, &json, DRYRUN_MAX_SPANS, &loc) == 0)
			doc_locate(loc, derr.offset, line, col);
		doc_locator_free(loc);
	} else if (rc) {
		snprintf(msg, msgn, "%s", rc == -E2BIG ? "the object exceeds dry-run's limits" : strerror(-rc));
	}
	buf_free(&json);
	return rc;
}

/* The stored namesake of e, decoded into *old. NULL when there is none
 * (a CREATE) or on error (*failed set, result recorded). */
static const struct manifest_entry *stored_namesake(struct dryrun *d, struct outcome *o,
						    const struct manifest_entry *e, struct arena *a,
						    struct k8s_object *old, bool *failed)
{
	const struct manifest_entry *m, *second = NULL;
	char msg[MSG_MAX], dmsg[DECODE_ERROR_MAX + 64], src[2][SOURCE_MAX];
	uint32_t line, col;
	int rc;

	*failed = false;
	m = manifest_set_find(d->old_set, &e->id, &second, &rc);
	if (rc) {
		*failed = true;
		add_error(d, o, e->file, e->line, e->col, "out of memory indexing the stored objects");
		return NULL;
	}
	if (!m)
		return NULL;
	dryrun_source(m, src[0], sizeof(src[0]));
	if (second) {
		dryrun_source(second, src[1], sizeof(src[1]));
		snprintf(msg, sizeof(msg), "--old holds more than one %.*s named \"%.*s\" (%.4200s and %.4200s); "
			 "keep one, so it is clear which is stored", (int)(e->id.kind.len > 256 ? 256 : e->id.kind.len),
			 e->id.kind.ptr, (int)(e->id.name.len > 256 ? 256 : e->id.name.len), e->id.name.ptr,
			 src[0], src[1]);
		*failed = true;
		add_error(d, o, e->file, e->line, e->col, msg);
		return NULL;
	}
	rc = decode_node(d, m->node, a, old, dmsg, sizeof(dmsg), &line, &col);
	if (rc) {
		char where[SOURCE_MAX];

		dryrun_position(m->file, line, col, where, sizeof(where));
		snprintf(msg, sizeof(msg), "its stored object (--old) %.4200s does not decode: %.600s", where, dmsg);
		*failed = true;
		add_error(d, o, e->file, e->line, e->col, msg);
		return NULL;
	}
	return m;
}

/* The kinds some rule judges, by API group. */
static const struct {
	const char *group, *kind;
} guarded_kinds[] = {
	{ "resource.k8s.io", "ResourceSlice" },
	{ "resource.k8s.io", "ResourceClaim" },
	{ "", "Pod" },
	{ "", "ConfigMap" },
};

/* Why no rule judges id's kind into why, and into hint a likely typo of
 * a guarded kind (a near name in the same group, or the very name in
 * another group); hint "" when it looks like any other kind. */
static void not_judged_reason(const struct manifest_id *id, char *why, size_t whyn, char *hint, size_t hintn)
{
	const char *names[sizeof(guarded_kinds) / sizeof(guarded_kinds[0])];
	const char *close;
	size_t i, n = 0;
	int kl = (int)(id->kind.len > 256 ? 256 : id->kind.len);
	int gl = (int)(id->group.len > 256 ? 256 : id->group.len);
	int vl = (int)(id->version.len > 64 ? 64 : id->version.len);

	snprintf(why, whyn, "no rule judges kind %.*s (%.*s%s%.*s): the webhook is not called for it",
		 kl, id->kind.ptr, gl, id->group.ptr, gl ? "/" : "", vl, id->version.ptr);
	hint[0] = '\0';
	for (i = 0; i < sizeof(guarded_kinds) / sizeof(guarded_kinds[0]); i++) {
		if (str_eq_cstr(id->kind, guarded_kinds[i].kind)) {
			snprintf(hint, hintn, "kind %.*s of API group \"%.*s\" is not the one the guard judges "
				 "(%s%s%s): a typo in apiVersion?", kl, id->kind.ptr, gl, id->group.ptr,
				 guarded_kinds[i].group, guarded_kinds[i].group[0] ? "/" : "", "v1");
			return;
		}
		if (str_eq_cstr(id->group, guarded_kinds[i].group))
			names[n++] = guarded_kinds[i].kind;
	}
	close = fieldcheck_closest(id->kind.ptr, id->kind.len, names, n);
	if (close)
		snprintf(hint, hintn, "kind %.*s: did you mean %s? (a likely typo; the API server knows no such kind)",
			 kl, id->kind.ptr, close);
}

static bool has_status_subresource(enum object_kind k)
{
	return k == OBJECT_RESOURCE_CLAIM || k == OBJECT_POD;
}

/* --field-validation Strict: the object is refused before any rule, as the
 * API server refuses it ("strict decoding error: unknown field ..."),
 * at the first unknown field. */
static void strict_error(struct dryrun *d, struct outcome *o, const struct manifest_entry *e)
{
	char msg[MSG_MAX], one[FIELDCHECK_PATH_MAX * 2 + 256];
	size_t i, len;

	len = (size_t)snprintf(msg, sizeof(msg), "strict decoding error: ");
	for (i = 0; i < o->nfields && len < sizeof(msg); i++) {
		field_explained(&o->fields[i], one, sizeof(one));
		len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s", i ? ", " : "", one);
	}
	if (o->fields_total > o->nfields && len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, " and %zu more", o->fields_total - o->nfields);
	add_error(d, o, e->file, o->fields[0].line, o->fields[0].col, msg);
}

static void decide_object(struct dryrun *d, const struct manifest_entry *e, const char *source,
			  struct arena *a)
{
	struct outcome o;
	struct k8s_object obj, old;
	struct admission_request req;
	struct verdict v;
	const struct manifest_entry *stored = NULL;
	char msg[MSG_MAX], old_source[SOURCE_MAX];
	struct synth_write w;
	struct fieldcheck_finding found[DRYRUN_MAX_FIELDS];
	uint32_t line, col;
	bool failed = false;
	int rc;

	memset(&o, 0, sizeof(o));
	o.source = source;
	o.kind = e->id.kind;
	o.namespace = e->id.namespace;
	o.name = e->id.name;
	o.file = e->file;
	o.object = e->node;
	rc = decode_node(d, e->node, a, &obj, msg, sizeof(msg), &line, &col);
	if (rc) {
		add_error(d, &o, e->file, line, col, msg);
		return;
	}
	if (obj.kind == OBJECT_OTHER || obj.kind == OBJECT_NODE) {
		char why[1024], hint[1024];

		not_judged_reason(&e->id, why, sizeof(why), hint, sizeof(hint));
		if (hint[0] && d->fields == FIELDS_STRICT) {
			/* The API server has no such kind: CI asked for its
			 * strictness. */
			add_error(d, &o, e->file, e->line, e->col, hint);
			return;
		}
		o.not_judged = why;
		o.hint = hint[0] ? hint : NULL;
		add_result(d, &o, NULL);
		return;
	}
	if (d->fields != FIELDS_IGNORE) {
		o.fields = found;
		o.fields_total = fieldcheck_object(e->node, found, DRYRUN_MAX_FIELDS);
		o.nfields = o.fields_total < DRYRUN_MAX_FIELDS ? o.fields_total : DRYRUN_MAX_FIELDS;
	}
	if (d->fields == FIELDS_STRICT && o.nfields) {
		strict_error(d, &o, e);
		return;
	}
	memset(&w, 0, sizeof(w));
	w.op = d->operation == ADMISSION_OP_UNKNOWN ? ADMISSION_OP_CREATE : d->operation;
	w.subresource = str_from_cstr(d->subresource);
	w.namespace = e->id.namespace;
	w.object = &obj;
	if (d->old_set && d->operation != ADMISSION_OP_CREATE && d->operation != ADMISSION_OP_DELETE) {
		stored = stored_namesake(d, &o, e, a, &old, &failed);
		if (failed)
			return;
		if (stored) {
			w.op = ADMISSION_OP_UPDATE;
			w.old = &old;
			dryrun_source(stored, old_source, sizeof(old_source));
			o.old_source = old_source;
		} else if (d->operation == ADMISSION_OP_UPDATE) {
			snprintf(msg, sizeof(msg), "--operation UPDATE, but --old holds no %.*s named \"%.*s\"%s%.*s%s",
				 (int)(e->id.kind.len > 256 ? 256 : e->id.kind.len), e->id.kind.ptr,
				 (int)(e->id.name.len > 256 ? 256 : e->id.name.len), e->id.name.ptr,
				 e->id.namespace.len ? " in namespace \"" : "",
				 (int)(e->id.namespace.len > 256 ? 256 : e->id.namespace.len), e->id.namespace.ptr,
				 e->id.namespace.len ? "\"" : "");
			add_error(d, &o, e->file, e->line, e->col, msg);
			return;
		}
	}
	/* The API server keeps status out of main-resource writes and
	 * everything else out of status writes: a change to status alone is a
	 * status write. */
	if (stored && w.subresource.len == 0 && has_status_subresource(obj.kind) &&
	    synth_only_status_differs(e->node, stored->node)) {
		w.subresource = STR_LIT("status");
		o.subresource_inferred = true;
	}
	o.operation = model_op_name(w.op);
	o.subresource = w.subresource;
	rc = synth_request(&d->who, &w, a, &req);
	if (rc) {
		snprintf(msg, sizeof(msg), "cannot build the request: %s",
			 rc == -E2BIG ? "the user's groups and extras exceed dry-run's limits" : strerror(-rc));
		add_error(d, &o, e->file, e->line, e->col, msg);
		return;
	}
	engine_decide(d->policy, d->view, &d->opt, &req, d->now_ns, a, &v);
	o.nskipped = synth_skipped(&req, d->who.user.len != 0, d->view != NULL, o.skipped);
	add_result(d, &o, &v);
}

/* --- reviews --------------------------------------------------------------------------- */

/* A bare AdmissionRequest (the request member alone, as webhook test suites
 * keep them): a uid, an operation and a kind that is a group/version/kind map. */
static bool is_bare_request(const struct doc_node *n)
{
	const struct doc_node *k = doc_map_get(n, "kind");

	return k && k->type == DOC_MAP && doc_map_get(n, "uid") && doc_map_get(n, "operation");
}

static bool is_review(const struct manifest_entry *e)
{
	return str_eq_cstr(e->id.kind, "AdmissionReview") || is_bare_request(e->node);
}

/* A bare request's JSON inside the AdmissionReview made for it: where it
 * begins, and where its parts came from. */
struct request_part {
	const struct doc_node *node;
	struct doc_locator **loc;
	size_t *at;
};

static int request_json(const void *ctx, struct buf *out)
{
	const struct request_part *p = ctx;

	*p->at = buf_len(out);
	return doc_to_json_located(p->node, out, DRYRUN_MAX_SPANS, p->loc);
}

static void decide_review(struct dryrun *d, const struct manifest_entry *e, const char *source,
			  struct arena *a)
{
	struct outcome o;
	struct admission_result res;
	struct engine_options opt = d->opt;
	struct doc_locator *loc = NULL;
	struct buf json, out;
	struct str text = { NULL, 0 };
	char msg[DECODE_ERROR_MAX + 64];
	uint32_t line = e->line, col = e->col;
	size_t prefix = 0;
	int rc;

	memset(&o, 0, sizeof(o));
	o.source = source;
	o.kind = STR_LIT("AdmissionReview");
	buf_init(&json, DRYRUN_MAX_INPUT);
	buf_init(&out, DRYRUN_MAX_INPUT);
	if (is_bare_request(e->node)) {
		struct request_part part = { e->node, &loc, &prefix };
		struct jw w;

		jw_init(&w, &json);
		jw_object_begin(&w);
		jw_kcstr(&w, "apiVersion", "admission.k8s.io/v1");
		jw_kcstr(&w, "kind", "AdmissionReview");
		jw_key(&w, "request");
		jw_part(&w, request_json, &part);
		jw_object_end(&w);
		rc = jw_finish(&w);
	} else {
		rc = doc_to_json_located(e->node, &json, DRYRUN_MAX_SPANS, &loc);
	}
	if (rc == 0)
		rc = arena_strdup(a, buf_cstr(&json), buf_len(&json), &text);
	/* A review names its own writer: the identity rules always apply. */
	opt.skip_identity_rules = false;
	if (rc == 0)
		rc = admission_handle(d->policy, d->view, d->now_ns, &opt, &d->lim, text.ptr, text.len, a, &out, &res);
	if (rc) {
		add_error(d, &o, e->file, line, col, strerror(-rc));
	} else if (res.error[0]) {
		/* Decode it again for the offset of the error. */
		struct admission_request req;
		struct decode_error derr;

		if (decode_review(text.ptr, text.len, &d->lim, a, &req, &derr) != 0 && derr.offset >= prefix)
			doc_locate(loc, derr.offset - prefix, &line, &col);
		snprintf(msg, sizeof(msg), "%s", res.error);
		o.kind = res.decoded ? res.req.kind.kind : o.kind;
		o.name = res.decoded ? res.req.name : o.name;
		o.operation = res.decoded ? model_op_name(res.req.operation) : "";
		add_error(d, &o, e->file, line, col, msg);
	} else {
		const struct doc_node *req = is_bare_request(e->node) ? e->node : doc_map_get(e->node, "request");

		o.kind = res.req.kind.kind;
		o.namespace = res.req.namespace;
		o.name = res.req.name;
		o.operation = model_op_name(res.req.operation);
		o.subresource = res.req.sub_resource;
		o.file = e->file;
		o.object = doc_map_get(req, res.req.operation == ADMISSION_OP_DELETE ? "oldObject" : "object");
		/* A review names its writer; only the view can be missing. */
		o.nskipped = synth_skipped(&res.req, true, d->view != NULL, o.skipped);
		add_result(d, &o, &res.verdict);
	}
	doc_locator_free(loc);
	buf_free(&json);
	buf_free(&out);
}

/* --- inputs ---------------------------------------------------------------------------- */

/* The document reader refuses a key that appears twice in one map; say
 * so as the API server does (duplicate field "metadata.name"), with the
 * path of the first one, into buf. False when e's error is another. */
static bool duplicate_field(const struct manifest_entry *e, char *buf, size_t n)
{
	static const char pfx[] = "duplicate key ";
	const char *first;
	char path[FIELDCHECK_PATH_MAX];
	unsigned line, col;

	if (strncmp(e->error, pfx, sizeof(pfx) - 1) != 0 || !(first = strstr(e->error, "(first at line ")) ||
	    sscanf(first, "(first at line %u, column %u)", &line, &col) != 2 ||
	    !fieldcheck_path_at(e->partial, line, col, path, sizeof(path)))
		return false;
	snprintf(buf, n, "duplicate field \"%s\" (first at line %u, column %u): the API server refuses it "
		 "under Strict field validation (kubectl's default) and keeps the last value under Warn; "
		 "dry-run refuses it whatever --field-validation says", path, line, col);
	return true;
}

static void decide_entry(struct dryrun *d, const struct manifest_entry *e, struct arena *a)
{
	char source[SOURCE_MAX], dup[FIELDCHECK_PATH_MAX + 512];
	struct outcome o;

	arena_reset(a);
	dryrun_source(e, source, sizeof(source));
	if (e->error) {
		memset(&o, 0, sizeof(o));
		o.source = e->line ? source : e->file;
		o.kind = e->id.kind;
		o.namespace = e->id.namespace;
		o.name = e->id.name;
		if (!e->line)
			/* The input itself (a missing file): say it where
			 * the shell's error would be, too. */
			fprintf(stderr, "dra-guard dry-run: %s: %s\n", e->file, e->error);
		add_error(d, &o, e->file, e->line, e->col, duplicate_field(e, dup, sizeof(dup)) ? dup : e->error);
		return;
	}
	if (is_review(e))
		decide_review(d, e, source, a);
	else
		decide_object(d, e, source, a);
}

int dryrun_run_input(struct dryrun *d, const char *path, struct arena *a)
{
	struct manifest_options mopt;
	struct manifest_set *set = NULL;
	size_t i, done = d->nresults;
	int rc;

	if (done >= DRYRUN_MAX_OBJECTS)
		return -E2BIG;
	manifest_options_default(&mopt);
	mopt.doc.max_bytes = DRYRUN_MAX_INPUT;
	mopt.max_entries = DRYRUN_MAX_OBJECTS - done;
	mopt.default_namespace = d->namespace;
	rc = manifest_set_new(&mopt, &set);
	if (rc == 0)
		rc = inputs_read(set, path, DRYRUN_MAX_INPUT);
	for (i = 0; set && i < manifest_set_count(set); i++)
		decide_entry(d, manifest_set_entry(set, i), a);
	if (rc == -ENOMEM) {
		struct outcome o;

		memset(&o, 0, sizeof(o));
		o.source = path;
		add_error(d, &o, path, 0, 0, "out of memory reading this input");
	}
	manifest_set_free(set);
	return rc == -E2BIG ? rc : 0;
}
