/* replay_judge.c - a recorded write judged as the webhook would have judged
 * it (replay.h): the AdmissionReview built from the event, decoded and
 * decided by the engine, and what each rule said kept as counts and
 * examples. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "engine.h"
#include "jscan.h"
#include "jw.h"
#include "names.h"
#include "replay_impl.h"
#include "timefmt.h"

/* --- one event, written out -------------------------------------------------- */

/* The username in a user object's text, raw; "" when none. */
struct str replay_user_name(struct str user)
{
	struct jscan s;
	struct jscan_str key, v;

	if (user.len == 0)
		return (struct str){ "", 0 };
	jscan_init(&s, user.ptr, user.len, 16);
	if (jscan_object_enter(&s))
		return (struct str){ "", 0 };
	while (jscan_object_next(&s, &key) == 1) {
		if (jscan_str_is(&key, "username") && jscan_string(&s, &v) == 0)
			return (struct str){ v.ptr, v.len };
		if (jscan_skip(&s, NULL))
			break;
	}
	return (struct str){ "", 0 };
}

void replay_format_time(int64_t ns, char buf[static 40])
{
	char t[TIMEFMT_MAX];
	int64_t sec = ns / 1000000000LL - (ns % 1000000000LL < 0);
	int ms = (int)((ns - sec * 1000000000LL) / 1000000);

	timefmt_rfc3339(sec * 1000000000LL, t);
	t[strlen(t) - 1] = '\0';
	snprintf(buf, 40, "%s.%03dZ", t, ms);
}

/* Longest example kept: the sum of its texts. */
#define EXAMPLE_MAX ((size_t)1 << 20)

/* ev as an example of kind with its message; its texts copied into one
 * block it owns. -E2BIG past EXAMPLE_MAX (the example is not kept),
 * -ENOMEM. */
static int example_make(const struct audit_event *ev, uint64_t line_no, const char *op, enum replay_example_kind kind,
			struct str message, struct replay_example *out)
{
	struct str user = replay_user_name(ev->impersonated.len ? ev->impersonated : ev->user);
	const struct str *from[] = { &ev->audit_id, &ev->resource_name, &ev->subresource, &ev->namespace, &ev->name,
				     &user, &message };
	struct str *to[] = { &out->audit_id, &out->resource, &out->subresource, &out->namespace, &out->name,
			     &out->user, &out->message };
	size_t i, len = 0;
	char *p;

	for (i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
		if (from[i]->len > EXAMPLE_MAX - len)
			return -E2BIG;
		len += from[i]->len;
	}
	memset(out, 0, sizeof(*out));
	p = malloc(len + 1);
	if (!p)
		return -ENOMEM;
	out->text = p;
	for (i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
		if (from[i]->len)
			memcpy(p, from[i]->ptr, from[i]->len);
		*to[i] = (struct str){ p, from[i]->len };
		p += from[i]->len;
	}
	*p = '\0';
	out->kind = kind;
	out->line = line_no;
	out->time_ns = ev->stage_ns;
	out->verb = audit_verb_name(ev->verb);
	out->operation = op;
	out->recorded = (int)ev->code;
	return 0;
}

/* --- judging ------------------------------------------------------------------ */

/* Whether the guard's webhook configuration sends this write, and as what. */
bool replay_judged_write(const struct replay *r, const struct audit_event *ev, struct judged *j)
{
	bool main = ev->subresource.len == 0;
	bool status = str_eq_cstr(ev->subresource, "status");

	j->op = ev->verb == AUDIT_CREATE ? ADMISSION_OP_CREATE
		: ev->verb == AUDIT_DELETE ? ADMISSION_OP_DELETE : ADMISSION_OP_UPDATE;
	switch (ev->kind) {
	case OBJECT_RESOURCE_SLICE:
		j->kind = "ResourceSlice";
		return main;
	case OBJECT_RESOURCE_CLAIM:
		j->kind = "ResourceClaim";
		return (main && j->op == ADMISSION_OP_CREATE) || (status && j->op == ADMISSION_OP_UPDATE);
	case OBJECT_POD:
		j->kind = "Pod";
		return status && j->op == ADMISSION_OP_UPDATE;
	case OBJECT_CONFIG_MAP:
		j->kind = "ConfigMap";
		return main && j->op != ADMISSION_OP_DELETE && replay_is_self(r, ev->namespace, ev->name);
	default:
		return false;
	}
}

bool replay_success(const struct audit_event *ev)
{
	return ev->code >= 200 && ev->code < 300;
}

/* A raw (recorded) JSON text as a value; null when there is none. */
static void raw_or_null(struct jw *w, struct str text)
{
	if (text.len)
		jw_raw(w, text.ptr, text.len);
	else
		jw_null(w);
}

/* The AdmissionReview the API server would have sent, into r->review. */
static int make_review(struct replay *r, const struct audit_event *ev, const struct judged *j, struct str obj,
		       struct str old, uint64_t line_no)
{
	struct str user = ev->impersonated.len ? ev->impersonated : ev->user;
	char uid[32];
	struct jw w;

	buf_reset(&r->review);
	jw_init(&w, &r->review);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "admission.k8s.io/v1");
	jw_kcstr(&w, "kind", "AdmissionReview");
	jw_key(&w, "request");
	jw_object_begin(&w);
	jw_key(&w, "uid");
	if (ev->audit_id.len) {
		jw_raw_string(&w, ev->audit_id);
	} else {
		snprintf(uid, sizeof(uid), "line-%llu", (unsigned long long)line_no);
		jw_cstr(&w, uid);
	}
	jw_key(&w, "kind");
	jw_object_begin(&w);
	jw_key(&w, "group");
	jw_raw_string(&w, ev->api_group);
	jw_key(&w, "version");
	jw_raw_string(&w, ev->api_version);
	jw_kcstr(&w, "kind", j->kind);
	jw_object_end(&w);
	jw_key(&w, "resource");
	jw_object_begin(&w);
	jw_key(&w, "group");
	jw_raw_string(&w, ev->api_group);
	jw_key(&w, "version");
	jw_raw_string(&w, ev->api_version);
	jw_key(&w, "resource");
	jw_raw_string(&w, ev->resource_name);
	jw_object_end(&w);
	if (ev->subresource.len) {
		jw_key(&w, "subResource");
		jw_raw_string(&w, ev->subresource);
	}
	jw_key(&w, "name");
	jw_raw_string(&w, ev->name);
	if (ev->namespace.len) {
		jw_key(&w, "namespace");
		jw_raw_string(&w, ev->namespace);
	}
	jw_kcstr(&w, "operation", model_op_name(j->op));
	jw_key(&w, "userInfo");
	if (user.len) {
		jw_raw(&w, user.ptr, user.len);
	} else {
		jw_object_begin(&w);
		jw_object_end(&w);
	}
	jw_key(&w, "object");
	raw_or_null(&w, obj);
	jw_key(&w, "oldObject");
	raw_or_null(&w, old);
	jw_kbool(&w, "dryRun", ev->dry_run);
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}

static int add_example(struct replay_rule_stats *st, uint32_t max, const struct audit_event *ev, uint64_t line_no,
		       const char *op, enum action act, struct str message)
{
	int rc;

	if (st->nexamples >= max)
		return 0;
	if (!st->examples) {
		st->examples = calloc(max, sizeof(*st->examples));
		if (!st->examples)
			return -ENOMEM;
	}
	rc = example_make(ev, line_no, op, REPLAY_EXAMPLE_RULE, message, &st->examples[st->nexamples]);
	if (rc == 0)
		st->examples[st->nexamples++].action = act;
	return rc == -E2BIG ? 0 : rc;
}

static int add_refused(struct replay *r, const struct audit_event *ev, uint64_t line_no, const char *op,
		       const struct verdict *v)
{
	struct replay_example *ex;
	uint32_t i;
	bool seen[RULE_COUNT] = { false };
	int rc;

	if (r->nrefused >= r->o.max_refused)
		return 0;
	ex = &r->refused[r->nrefused];
	rc = example_make(ev, line_no, op, REPLAY_EXAMPLE_REFUSED, v->message, ex);
	if (rc)
		return rc == -E2BIG ? 0 : rc;
	for (i = 0; i < v->nviolations; i++) {
		if (v->violations[i].action != ACTION_DENY || seen[v->violations[i].rule])
			continue;
		seen[v->violations[i].rule] = true;
		ex->rules[ex->nrules++] = v->violations[i].rule;
	}
	r->nrefused++;
	return 0;
}

static int record(struct replay *r, const struct audit_event *ev, uint64_t line_no, const char *op,
		  const struct verdict *v)
{
	bool seen[RULE_COUNT] = { false };
	bool deny = false, warn = false;
	uint32_t i;
	int rc;

	for (i = 0; i < v->nviolations; i++) {
		const struct violation *x = &v->violations[i];
		struct replay_rule_stats *st = &r->rules[x->rule];

		if (seen[x->rule])
			continue;
		seen[x->rule] = true;
		if (x->action == ACTION_DENY)
			st->deny++, deny = true;
		else if (x->action == ACTION_WARN)
			st->warn++, warn = true;
		else
			st->dryrun++;
		rc = add_example(st, r->o.examples, ev, line_no, op, x->action, x->message);
		if (rc)
			return rc;
		/* What got into the cluster although the ledger rules object. */
		if (replay_success(ev)) {
			if (x->rule == RULE_LEDGER_DEVICE_DUPLICATE)
				replay_note_admitted(r, 0, ev->stage_ns);
			else if (x->rule == RULE_LEDGER_POOL_FRESH)
				replay_note_admitted(r, 1, ev->stage_ns);
			else if (x->rule == RULE_LEDGER_NUMA_SPLIT)
				replay_note_admitted(r, 2, ev->stage_ns);
		}
	}
	r->would_deny += deny || !v->allowed;
	r->would_warn += warn;
	if (!v->allowed && replay_success(ev)) {
		r->would_refuse++;
		return add_refused(r, ev, line_no, op, v);
	}
	return 0;
}

/* Driver coverage: each driver's slice writes, and whether it published
 * mappings that were written. */
static void note_driver(struct replay *r, struct str obj, bool ok, const struct verdict *v, uint64_t line_no)
{
	struct replay_meta m;
	struct replay_driver *d = NULL;
	uint32_t i;

	if (replay_meta_read(obj, &m) || m.driver.len == 0)
		return;
	for (i = 0; i < r->ndrivers && !d; i++)
		if (strlen(r->drivers[i].name) == m.driver.len && memcmp(r->drivers[i].name, m.driver.ptr, m.driver.len) == 0)
			d = &r->drivers[i];
	if (!d) {
		if (r->ndrivers >= REPLAY_DRIVERS_MAX || m.driver.len >= sizeof(d->name)) {
			r->drivers_dropped++;
			return;
		}
		d = &r->drivers[r->ndrivers++];
		memcpy(d->name, m.driver.ptr, m.driver.len);
		d->name[m.driver.len] = '\0';
	}
	d->writes++;
	if (ok && m.has_mappings)
		d->mappings = true;
	if (!v->allowed) {
		if (d->denied++ == 0) {
			d->first_denied_line = line_no;
			for (i = 0; i < v->nviolations; i++)
				if (v->violations[i].action == ACTION_DENY) {
					snprintf(d->first_denied_rule, sizeof(d->first_denied_rule), "%s",
						 rule_name(v->violations[i].rule));
					break;
				}
		}
	}
}

/* The review's object, for replay_view_apply() of the same text. A review
 * takes the object's kind from the request; the text alone names its own:
 * kept only when the two agree, so the view gets what decode_object() of
 * the text would give. What it points to (in r->arena) lives until the
 * next event's judgement resets the arena. */
static void keep_decoded(struct replay *r, const struct admission_request *req, struct str obj)
{
	struct str g, v;
	enum api_version ver = API_VERSION_UNKNOWN;

	if (!obj.len || req->object.kind == OBJECT_OTHER)
		return;
	names_split_api_version(req->object.api_version, &g, &v);
	if (decode_classify(g, v, req->object.kind_name, &ver) != req->object.kind || ver != req->object.version)
		return;
	r->decoded = req->object;
	r->decoded_text = obj;
	r->have_decoded = true;
}

int replay_judge(struct replay *r, const struct audit_event *ev, const struct judged *j, uint64_t line_no)
{
	struct engine_options opt;
	struct admission_request req;
	struct decode_error derr;
	struct verdict v;
	struct str obj = { "", 0 }, old = { "", 0 };
	const char *op = model_op_name(j->op);
	int rc;

	if (j->op != ADMISSION_OP_DELETE) {
		if (replay_success(ev))
			obj = ev->response_object;
		else if (ev->verb != AUDIT_PATCH)
			obj = ev->request_object;
		if (obj.len == 0) {
			r->not_judged_patch++;
			return 0;
		}
	}
	if (j->op != ADMISSION_OP_CREATE) {
		const struct replay_store_entry *e = replay_store_get(&r->store, ev->kind, ev->namespace, ev->name);

		if (!e) {
			r->not_judged_old++;
			return 0;
		}
		old = (struct str){ e->text, e->text_len };
	}
	rc = make_review(r, ev, j, obj, old, line_no);
	if (rc)
		return rc == -E2BIG ? (r->not_judged_patch++, 0) : rc;
	/* The log is the cluster's whole write history: the view is as fresh
	 * as the event, so rules that refuse to decide on a stale view run. */
	if (ev->stage_ns - r->touched_ns >= 1000000000LL) {     /* every second is plenty */
		view_builder_touch_all(r->builder, ev->stage_ns);
		r->touched_ns = ev->stage_ns;
	}
	rc = replay_publish(r);
	if (rc)
		return rc;
	memset(&opt, 0, sizeof(opt));
	opt.force_freeze = r->frozen;
	opt.self_name = r->o.self_name;
	opt.self_namespace = r->o.self_namespace;
	arena_reset(r->arena);
	r->judged++;
	rc = decode_review(buf_cstr(&r->review), buf_len(&r->review), NULL, r->arena, &req, &derr);
	if (rc) {
		r->undecidable++;
		r->would_deny++;
		if (replay_success(ev))
			r->would_refuse++;
		if (r->nundecidable_ex >= sizeof(r->undecidable_ex) / sizeof(r->undecidable_ex[0]))
			return 0;
		rc = example_make(ev, line_no, op, REPLAY_EXAMPLE_UNDECIDABLE, str_from_cstr(derr.msg),
				  &r->undecidable_ex[r->nundecidable_ex]);
		if (rc == 0)
			r->nundecidable_ex++;
		return rc == -E2BIG ? 0 : rc;
	}
	engine_decide(r->o.policy, r->view, &opt, &req, ev->stage_ns, r->arena, &v);
	keep_decoded(r, &req, obj);
	if (ev->kind == OBJECT_RESOURCE_SLICE)
		note_driver(r, obj.len ? obj : old, replay_success(ev), &v, line_no);
	if (!v.allowed && (rc = replay_note_events(r, ev, &req, &v)) != 0)
		return rc;
	return record(r, ev, line_no, op, &v);
}
