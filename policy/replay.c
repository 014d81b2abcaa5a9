/* replay.c - a recorded audit log through the engine and the view
 * (replay.h): the reorder window, judging each write, applying it, and
 * sampling the ledger. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "engine.h"
#include "jscan.h"
#include "replay_impl.h"
#include "timefmt.h"
#include "view_dump.h"

#define REPLAY_ARENA_CAP ((size_t)256 << 20)
#define REPLAY_SCRATCH_CAP ((size_t)64 << 20)
#define REPLAY_LEDGER_CAP ((size_t)1 << 30)
#define REPLAY_REVIEW_CAP ((size_t)160 << 20)

void replay_options_default(struct replay_options *o)
{
	memset(o, 0, sizeof(*o));
	o->self_namespace = STR_LIT("dra-guard");
	o->self_name = STR_LIT("dra-guard-policy");
	o->examples = 5;
	o->max_refused = 1000;
	o->sample_ns = 1000000000LL;
	o->reorder_ns = 10000000000LL;
	o->reorder_bytes = (size_t)256 << 20;
	o->store_bytes = (size_t)4 << 30;
	o->max_line = (size_t)64 << 20;
}

int replay_new(const struct replay_options *o, struct replay **out)
{
	struct replay *r = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!o || !o->policy || o->sample_ns <= 0 || o->reorder_ns < 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto fail;
	r->o = *o;
	buf_init(&r->review, REPLAY_REVIEW_CAP);
	buf_init(&r->text, REPLAY_REVIEW_CAP);
	if (replay_store_init(&r->store, o->store_bytes) || replay_store_init(&r->pools, (size_t)64 << 20) ||
	    replay_store_init(&r->pending, (size_t)256 << 20))
		goto fail;
	if ((rc = view_builder_new(NULL, &r->builder)) || (rc = arena_new(REPLAY_ARENA_CAP, &r->arena)) ||
	    (rc = arena_new(REPLAY_SCRATCH_CAP, &r->scratch)))
		goto fail;
	if (o->max_refused) {
		r->refused = calloc(o->max_refused, sizeof(*r->refused));
		if (!r->refused) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	r->last_t = INT64_MIN;
	r->max_t = INT64_MIN;
	*out = r;
	return 0;
fail:
	replay_free(r);
	return rc;
}

static void example_free(struct replay_example *e)
{
	free(e->json);
	e->json = NULL;
}

void replay_free(struct replay *r)
{
	size_t i, j;

	if (!r)
		return;
	for (i = 0; i < r->nheap; i++)
		free(r->heap[i].line);
	free(r->heap);
	for (i = 0; i < RULE_COUNT; i++) {
		for (j = 0; j < r->rules[i].nexamples; j++)
			example_free(&r->rules[i].examples[j]);
		free(r->rules[i].examples);
	}
	for (i = 0; i < r->nundecidable_ex; i++)
		example_free(&r->undecidable_ex[i]);
	for (i = 0; i < r->nrefused; i++)
		example_free(&r->refused[i]);
	free(r->refused);
	ledger_free(r->ledger);
	if (r->view)
		view_builder_release(r->builder, r->view);
	view_builder_free(r->builder);
	arena_free(r->arena);
	arena_free(r->scratch);
	replay_store_fini(&r->store);
	replay_store_fini(&r->pools);
	replay_store_fini(&r->pending);
	buf_free(&r->review);
	buf_free(&r->text);
	free(r);
}

/* The working view as a snapshot engine_decide() and ledger_build() can read. */
static int publish(struct replay *r)
{
	const struct view *v;
	int rc;

	if (r->view && !view_builder_dirty(r->builder))
		return 0;
	rc = view_builder_publish(r->builder, &v);
	if (rc)
		return rc;
	if (r->view) {
		ledger_free(r->ledger);     /* it borrows from the old snapshot */
		r->ledger = NULL;
		view_builder_release(r->builder, r->view);
	}
	r->view = v;
	view_builder_collect(r->builder);
	return 0;
}

static bool stored_kind(enum audit_resource res)
{
	return res == AUDIT_SLICES || res == AUDIT_CLAIMS || res == AUDIT_PODS || res == AUDIT_CONFIGMAPS;
}

static bool is_self(const struct replay *r, struct str ns, struct str name)
{
	return str_eq(ns, r->o.self_namespace) && str_eq(name, r->o.self_name);
}

static uint64_t divergences_now(const struct replay *r, int64_t at);

static void note_freeze(struct replay *r, bool on, int64_t at)
{
	if (on == r->frozen)
		return;
	if (on) {
		r->divergences_at_freeze = divergences_now(r, at);
	} else if (r->ndrills < REPLAY_DRILLS_MAX && r->nfreeze && r->freeze[r->nfreeze - 1].on) {
		struct replay_drill *d = &r->drills[r->ndrills++];

		d->on_ns = r->freeze[r->nfreeze - 1].at;
		d->off_ns = at;
		d->divergences_at_on = r->divergences_at_freeze;
		d->clean = divergences_now(r, at) == r->divergences_at_freeze;
	}
	r->frozen = on;
	r->freeze_changes++;
	if (r->nfreeze < REPLAY_FREEZE_MAX) {
		r->freeze[r->nfreeze].at = at;
		r->freeze[r->nfreeze].on = on;
		r->nfreeze++;
	}
}

/* Apply text as ev to the view; a refusal is counted, not fatal. */
static int view_apply(struct replay *r, enum view_event ev, struct str text, int64_t t)
{
	char err[AUDIT_ERROR_MAX];
	int rc = view_builder_apply_json(r->builder, ev, text.ptr, text.len, r->scratch, t, err, sizeof(err));

	if (rc == -ENOMEM || rc == -E2BIG)
		return rc;
	if (rc < 0 && r->apply_refused++ == 0)
		snprintf(r->first_apply_error, sizeof(r->first_apply_error), "%s", err);
	return 0;
}

/* --- the starting dump ----------------------------------------------------- */

static int seed_object(struct replay *r, struct str text, int64_t now_ns)
{
	struct replay_meta m;
	enum audit_resource res;
	int rc;

	if (replay_meta_read(text, &m))
		return -EBADMSG;
	res = replay_resource_of_kind(m.kind);
	if (res == AUDIT_OTHER || (res == AUDIT_CONFIGMAPS && !is_self(r, m.namespace, m.name)))
		return 0;
	if (res == AUDIT_CONFIGMAPS) {
		r->frozen = m.frozen;
	} else {
		rc = view_apply(r, VIEW_ADDED, text, now_ns);
		if (rc)
			return rc;
	}
	if (stored_kind(res))
		return replay_store_put(&r->store, res, m.namespace, m.name, text);
	return 0;
}

int replay_seed(struct replay *r, const char *json, size_t len, int64_t now_ns, char *err, size_t n)
{
	struct jscan s;
	struct jscan_str key;
	struct str item;
	bool list = false;
	int rc, i;

	jscan_init(&s, json, len, JSCAN_DEPTH_LIMIT);
	if (jscan_object_enter(&s))
		goto bad;
	while ((rc = jscan_object_next(&s, &key)) == 1) {
		if (!jscan_str_is(&key, "items")) {
			if (jscan_skip(&s, NULL))
				goto bad;
			continue;
		}
		list = true;
		if (jscan_array_enter(&s))
			goto bad;
		while ((rc = jscan_array_next(&s)) == 1) {
			if (jscan_peek(&s) != JSCAN_OBJECT || jscan_skip(&s, &item))
				goto bad;
			rc = seed_object(r, item, now_ns);
			if (rc == -EBADMSG)
				goto bad;
			if (rc)
				return rc;
		}
		if (rc < 0)
			goto bad;
	}
	if (rc < 0 || jscan_finish(&s))
		goto bad;
	if (!list) {
		rc = seed_object(r, (struct str){ json, len }, now_ns);
		if (rc == -EBADMSG)
			goto bad;
		if (rc)
			return rc;
	}
	for (i = 0; i < VIEW_RESOURCE_COUNT; i++)
		view_builder_touch(r->builder, (enum view_resource)i, now_ns);
	return 0;
bad:
	if (jscan_error(&s))
		jscan_describe(&s, err, n);
	else
		snprintf(err, n, "an object of the dump does not read as a Kubernetes object");
	return -EBADMSG;
}

/* --- one event, written out -------------------------------------------------- */

static int jraw(struct buf *b, struct str s)
{
	int rc = buf_add_char(b, '"');

	if (rc == 0)
		rc = buf_add(b, s.ptr, s.len);
	return rc ? rc : buf_add_char(b, '"');
}

/* The username in a user object's text, raw; "" when none. */
static struct str user_name(struct str user)
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

/* {"line":..,"time":..,...} of ev, then extra members (already JSON, each
 * starting with ','), then '}', as a malloc'd example. */
static int example_make(const struct audit_event *ev, uint64_t line_no, const char *op, const char *extra,
			size_t extra_len, struct replay_example *out)
{
	struct buf b;
	char t[40];
	int rc;

	buf_init(&b, (size_t)1 << 20);
	replay_format_time(ev->stage_ns, t);
	rc = buf_printf(&b, "{\"line\":%llu,\"time\":\"%s\",\"auditID\":", (unsigned long long)line_no, t);
	if (rc == 0)
		rc = jraw(&b, ev->audit_id);
	if (rc == 0)
		rc = buf_printf(&b, ",\"verb\":\"%s\",\"operation\":\"%s\",\"resource\":", audit_verb_name(ev->verb),
				op);
	if (rc == 0)
		rc = jraw(&b, ev->resource_name);
	if (rc == 0)
		rc = buf_add_cstr(&b, ",\"subresource\":");
	if (rc == 0)
		rc = jraw(&b, ev->subresource);
	if (rc == 0)
		rc = buf_add_cstr(&b, ",\"namespace\":");
	if (rc == 0)
		rc = jraw(&b, ev->namespace);
	if (rc == 0)
		rc = buf_add_cstr(&b, ",\"name\":");
	if (rc == 0)
		rc = jraw(&b, ev->name);
	if (rc == 0)
		rc = buf_add_cstr(&b, ",\"user\":");
	if (rc == 0)
		rc = jraw(&b, user_name(ev->impersonated.len ? ev->impersonated : ev->user));
	if (rc == 0)
		rc = buf_printf(&b, ",\"recorded\":%d", (int)ev->code);
	if (rc == 0 && extra_len)
		rc = buf_add(&b, extra, extra_len);
	if (rc == 0)
		rc = buf_add_char(&b, '}');
	if (rc == 0)
		rc = buf_take(&b, &out->json, &out->len);
	buf_free(&b);
	return rc;
}

/* --- judging ------------------------------------------------------------------ */

struct judged {
	enum admission_op op;
	const char *kind;
};

/* Whether the guard's webhook configuration sends this write, and as what. */
static bool judged_write(const struct replay *r, const struct audit_event *ev, struct judged *j)
{
	bool main = ev->subresource.len == 0;
	bool status = str_eq_cstr(ev->subresource, "status");

	j->op = ev->verb == AUDIT_CREATE ? ADMISSION_OP_CREATE
		: ev->verb == AUDIT_DELETE ? ADMISSION_OP_DELETE : ADMISSION_OP_UPDATE;
	switch (ev->resource) {
	case AUDIT_SLICES:
		j->kind = "ResourceSlice";
		return main;
	case AUDIT_CLAIMS:
		j->kind = "ResourceClaim";
		return (main && j->op == ADMISSION_OP_CREATE) || (status && j->op == ADMISSION_OP_UPDATE);
	case AUDIT_PODS:
		j->kind = "Pod";
		return status && j->op == ADMISSION_OP_UPDATE;
	case AUDIT_CONFIGMAPS:
		j->kind = "ConfigMap";
		return main && j->op != ADMISSION_OP_DELETE && is_self(r, ev->namespace, ev->name);
	default:
		return false;
	}
}

static bool success(const struct audit_event *ev)
{
	return ev->code >= 200 && ev->code < 300;
}

/* The AdmissionReview the API server would have sent, into r->review. */
static int make_review(struct replay *r, const struct audit_event *ev, const struct judged *j, struct str obj,
		       struct str old, uint64_t line_no)
{
	struct buf *b = &r->review;
	struct str user = ev->impersonated.len ? ev->impersonated : ev->user;
	int rc;

	buf_reset(b);
	rc = buf_add_cstr(b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":");
	if (rc == 0 && ev->audit_id.len)
		rc = jraw(b, ev->audit_id);
	else if (rc == 0)
		rc = buf_printf(b, "\"line-%llu\"", (unsigned long long)line_no);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"kind\":{\"group\":");
	if (rc == 0)
		rc = jraw(b, ev->api_group);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"version\":");
	if (rc == 0)
		rc = jraw(b, ev->api_version);
	if (rc == 0)
		rc = buf_printf(b, ",\"kind\":\"%s\"},\"resource\":{\"group\":", j->kind);
	if (rc == 0)
		rc = jraw(b, ev->api_group);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"version\":");
	if (rc == 0)
		rc = jraw(b, ev->api_version);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"resource\":");
	if (rc == 0)
		rc = jraw(b, ev->resource_name);
	if (rc == 0 && ev->subresource.len) {
		rc = buf_add_cstr(b, "},\"subResource\":");
		if (rc == 0)
			rc = jraw(b, ev->subresource);
	} else if (rc == 0) {
		rc = buf_add_char(b, '}');
	}
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"name\":");
	if (rc == 0)
		rc = jraw(b, ev->name);
	if (rc == 0 && ev->namespace.len) {
		rc = buf_add_cstr(b, ",\"namespace\":");
		if (rc == 0)
			rc = jraw(b, ev->namespace);
	}
	if (rc == 0)
		rc = buf_printf(b, ",\"operation\":\"%s\",\"userInfo\":", model_op_name(j->op));
	if (rc == 0)
		rc = user.len ? buf_add(b, user.ptr, user.len) : buf_add_cstr(b, "{}");
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"object\":");
	if (rc == 0)
		rc = obj.len ? buf_add(b, obj.ptr, obj.len) : buf_add_cstr(b, "null");
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"oldObject\":");
	if (rc == 0)
		rc = old.len ? buf_add(b, old.ptr, old.len) : buf_add_cstr(b, "null");
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"dryRun\":false}}");
	return rc;
}

static int add_example(struct replay_rule_stats *st, uint32_t max, const struct audit_event *ev, uint64_t line_no,
		       const char *op, enum action act, struct str message)
{
	struct buf x;
	int rc;

	if (st->nexamples >= max)
		return 0;
	if (!st->examples) {
		st->examples = calloc(max, sizeof(*st->examples));
		if (!st->examples)
			return -ENOMEM;
	}
	buf_init(&x, (size_t)1 << 20);
	rc = buf_printf(&x, ",\"action\":\"%s\",\"message\":", action_name(act));
	if (rc == 0)
		rc = buf_add_json_str(&x, message.ptr, message.len);
	if (rc == 0)
		rc = example_make(ev, line_no, op, buf_cstr(&x), buf_len(&x), &st->examples[st->nexamples]);
	if (rc == 0)
		st->nexamples++;
	buf_free(&x);
	return rc == -E2BIG ? 0 : rc;
}

static int add_refused(struct replay *r, const struct audit_event *ev, uint64_t line_no, const char *op,
		       const struct verdict *v)
{
	struct buf x;
	uint32_t i, k;
	bool seen[RULE_COUNT] = { false };
	int rc;

	if (r->nrefused >= r->o.max_refused)
		return 0;
	buf_init(&x, (size_t)1 << 20);
	rc = buf_add_cstr(&x, ",\"rules\":[");
	for (i = 0, k = 0; rc == 0 && i < v->nviolations; i++) {
		if (v->violations[i].action != ACTION_DENY || seen[v->violations[i].rule])
			continue;
		seen[v->violations[i].rule] = true;
		rc = buf_printf(&x, "%s\"%s\"", k++ ? "," : "", rule_name(v->violations[i].rule));
	}
	if (rc == 0)
		rc = buf_add_cstr(&x, "],\"message\":");
	if (rc == 0)
		rc = buf_add_json_str(&x, v->message.ptr, v->message.len);
	if (rc == 0)
		rc = example_make(ev, line_no, op, buf_cstr(&x), buf_len(&x), &r->refused[r->nrefused]);
	if (rc == 0)
		r->nrefused++;
	buf_free(&x);
	return rc == -E2BIG ? 0 : rc;
}

static void note_admitted(struct replay *r, int which, int64_t t);

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
		if (success(ev)) {
			if (x->rule == RULE_LEDGER_DEVICE_DUPLICATE)
				note_admitted(r, 0, ev->stage_ns);
			else if (x->rule == RULE_LEDGER_POOL_FRESH)
				note_admitted(r, 1, ev->stage_ns);
			else if (x->rule == RULE_LEDGER_NUMA_SPLIT)
				note_admitted(r, 2, ev->stage_ns);
		}
	}
	r->would_deny += deny || !v->allowed;
	r->would_warn += warn;
	if (!v->allowed && success(ev)) {
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

static int judge(struct replay *r, const struct audit_event *ev, const struct judged *j, uint64_t line_no)
{
	struct engine_options opt;
	struct admission_request req;
	struct decode_error derr;
	struct verdict v;
	struct str obj = { "", 0 }, old = { "", 0 };
	const char *op = model_op_name(j->op);
	int rc;

	if (j->op != ADMISSION_OP_DELETE) {
		if (success(ev))
			obj = ev->response_object;
		else if (ev->verb != AUDIT_PATCH)
			obj = ev->request_object;
		if (obj.len == 0) {
			r->not_judged_patch++;
			return 0;
		}
	}
	if (j->op != ADMISSION_OP_CREATE) {
		const struct replay_store_entry *e = replay_store_get(&r->store, ev->resource, ev->namespace, ev->name);

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
		for (rc = 0; rc < VIEW_RESOURCE_COUNT; rc++)
			view_builder_touch(r->builder, (enum view_resource)rc, ev->stage_ns);
		r->touched_ns = ev->stage_ns;
	}
	rc = publish(r);
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
		struct buf x;

		r->undecidable++;
		r->would_deny++;
		if (success(ev))
			r->would_refuse++;
		if (r->nundecidable_ex >= sizeof(r->undecidable_ex) / sizeof(r->undecidable_ex[0]))
			return 0;
		buf_init(&x, (size_t)1 << 16);
		rc = buf_add_cstr(&x, ",\"message\":");
		if (rc == 0)
			rc = buf_add_json_str(&x, derr.msg, strlen(derr.msg));
		if (rc == 0)
			rc = example_make(ev, line_no, op, buf_cstr(&x), buf_len(&x), &r->undecidable_ex[r->nundecidable_ex]);
		if (rc == 0)
			r->nundecidable_ex++;
		buf_free(&x);
		return rc == -E2BIG ? 0 : rc;
	}
	engine_decide(r->o.policy, r->view, &opt, &req, ev->stage_ns, r->arena, &v);
	if (ev->resource == AUDIT_SLICES)
		note_driver(r, obj.len ? obj : old, success(ev), &v, line_no);
	return record(r, ev, line_no, op, &v);
}

/* --- applying ------------------------------------------------------------------- */

/* A minimal object naming what a deletion removed, when neither the
 * response nor the store has it. */
static int minimal_object(struct replay *r, const struct audit_event *ev, const char *kind)
{
	struct buf *b = &r->text;
	int rc;

	buf_reset(b);
	rc = buf_add_cstr(b, "{\"apiVersion\":\"");
	if (rc == 0 && ev->api_group.len)
		rc = buf_printf(b, "%.*s/", (int)ev->api_group.len, ev->api_group.ptr);
	if (rc == 0)
		rc = buf_printf(b, "%.*s\",\"kind\":\"%s\",\"metadata\":{\"name\":", (int)ev->api_version.len,
				ev->api_version.ptr, kind);
	if (rc == 0)
		rc = jraw(b, ev->name);
	if (rc == 0 && ev->namespace.len) {
		rc = buf_add_cstr(b, ",\"namespace\":");
		if (rc == 0)
			rc = jraw(b, ev->namespace);
	}
	return rc ? rc : buf_add_cstr(b, "}}");
}

static const char *kind_of(enum audit_resource res)
{
	switch (res) {
	case AUDIT_SLICES: return "ResourceSlice";
	case AUDIT_CLAIMS: return "ResourceClaim";
	case AUDIT_PODS: return "Pod";
	case AUDIT_NODES: return "Node";
	case AUDIT_CONFIGMAPS: return "ConfigMap";
	default: return "";
	}
}

static int remove_object(struct replay *r, const struct audit_event *ev)
{
	const struct replay_store_entry *e = replay_store_get(&r->store, ev->resource, ev->namespace, ev->name);
	int rc;

	if (ev->resource == AUDIT_CONFIGMAPS) {
		if (is_self(r, ev->namespace, ev->name))
			note_freeze(r, false, ev->stage_ns);
	} else if (e) {
		rc = view_apply(r, VIEW_DELETED, (struct str){ e->text, e->text_len }, ev->stage_ns);
		if (rc)
			return rc;
	} else {
		rc = minimal_object(r, ev, kind_of(ev->resource));
		if (rc == 0)
			rc = view_apply(r, VIEW_DELETED, (struct str){ buf_cstr(&r->text), buf_len(&r->text) }, ev->stage_ns);
		if (rc)
			return rc;
	}
	replay_store_del(&r->store, ev->resource, ev->namespace, ev->name);
	return 0;
}

/* The object as the write left it: text is its new state. */
static int keep_object(struct replay *r, const struct audit_event *ev, enum view_event vev, struct str text,
		       const struct replay_meta *m)
{
	int rc = 0;

	if (ev->resource == AUDIT_CONFIGMAPS) {
		if (!is_self(r, ev->namespace, ev->name))
			return 0;
		note_freeze(r, m->has_freeze && m->frozen, ev->stage_ns);
	} else {
		rc = view_apply(r, vev, text, ev->stage_ns);
	}
	if (rc == 0 && stored_kind(ev->resource))
		rc = replay_store_put(&r->store, ev->resource, ev->namespace, ev->name, text);
	return rc;
}

static int bind_pod(struct replay *r, const struct audit_event *ev)
{
	const struct replay_store_entry *e = replay_store_get(&r->store, AUDIT_PODS, ev->namespace, ev->name);
	struct replay_meta m;
	struct str node;
	int rc;

	if (!e || replay_binding_target(ev->request_object, &node)) {
		if (r->apply_refused++ == 0)
			snprintf(r->first_apply_error, sizeof(r->first_apply_error),
				 "a binding of a Pod the replay does not hold, or without target.name");
		return 0;
	}
	rc = replay_pod_bind((struct str){ e->text, e->text_len }, node, &r->text);
	if (rc == -EBADMSG) {
		if (r->apply_refused++ == 0)
			snprintf(r->first_apply_error, sizeof(r->first_apply_error), "a bound Pod without spec");
		return 0;
	}
	if (rc)
		return rc;
	memset(&m, 0, sizeof(m));
	/* r->text is overwritten by nothing before keep_object copies it */
	return keep_object(r, ev, VIEW_MODIFIED, (struct str){ buf_cstr(&r->text), buf_len(&r->text) }, &m);
}

struct replay_pool_state {
	int64_t generation;
	int64_t live;               /* slices */
};

/* Restarts and upgrades: a pool whose slices all went comes back, or its
 * generation goes up. m is the slice (as written, or as it was when
 * deleted). */
static int note_pool(struct replay *r, const struct replay_meta *m, enum audit_verb verb)
{
	const struct replay_store_entry *e = replay_store_get(&r->pools, AUDIT_OTHER, m->driver, m->pool);
	struct replay_pool_state st = { 0, 0 };

	if (!m->pool.len)
		return 0;
	if (e && e->text_len == sizeof(st))
		memcpy(&st, e->text, sizeof(st));
	if (verb == AUDIT_DELETE) {
		st.live -= st.live > 0;
	} else {
		if (verb == AUDIT_CREATE) {
			if (e && st.live == 0)
				r->pools_republished++;
			st.live++;
		}
		if (e && m->generation > st.generation && st.generation > 0)
			r->generation_bumps++;
		if (m->generation > st.generation)
			st.generation = m->generation;
	}
	return replay_store_put(&r->pools, AUDIT_OTHER, m->driver, m->pool, (struct str){ (const char *)&st, sizeof(st) });
}

static void pending_add(struct replay *r, int64_t ns)
{
	int64_t ms = ns / 1000000;
	size_t i;

	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		i = (size_t)(ms / 10);
	else if (ms < 60000)
		i = 100 + (size_t)((ms - 1000) / 100);
	else if (ms < 3600000)
		i = 690 + (size_t)((ms - 60000) / 1000);
	else if (ms < 86400000)
		i = 4230 + (size_t)((ms - 3600000) / 60000);
	else
		i = REPLAY_PENDING_BUCKETS - 1;
	r->pending_hist[i]++;
	r->pending_count++;
	if (ns > r->pending_max_ns)
		r->pending_max_ns = ns;
}

/* Pending time: a Pod with claims from its creation to its binding. */
static int note_pod(struct replay *r, const struct audit_event *ev, const struct replay_meta *m)
{
	const struct replay_store_entry *e;
	int64_t t;

	if (ev->verb == AUDIT_CREATE && ev->subresource.len == 0) {
		if (!m->has_claims || m->node_name.len)
			return 0;
		return replay_store_put(&r->pending, AUDIT_PODS, ev->namespace, ev->name,
					(struct str){ (const char *)&ev->stage_ns, sizeof(ev->stage_ns) });
	}
	if (ev->verb == AUDIT_CREATE && str_eq_cstr(ev->subresource, "binding")) {
		e = replay_store_get(&r->pending, AUDIT_PODS, ev->namespace, ev->name);
		if (!e || e->text_len != sizeof(t))
			return 0;
		memcpy(&t, e->text, sizeof(t));
		pending_add(r, ev->stage_ns - t);
	}
	if (ev->verb == AUDIT_DELETE || str_eq_cstr(ev->subresource, "binding") ||
	    str_eq_cstr(ev->subresource, "eviction"))
		replay_store_del(&r->pending, AUDIT_PODS, ev->namespace, ev->name);
	return 0;
}

static int apply(struct replay *r, const struct audit_event *ev)
{
	struct replay_meta m;
	struct str resp = ev->response_object;
	bool same = false;

	int rc;

	r->applied++;
	memset(&m, 0, sizeof(m));
	if (resp.len && replay_meta_read(resp, &m) == 0)
		same = replay_resource_of_kind(m.kind) == ev->resource;
	if (ev->resource == AUDIT_PODS && (rc = note_pod(r, ev, &m)) != 0)
		return rc;
	if (ev->resource == AUDIT_SLICES && ev->subresource.len == 0) {
		struct replay_meta pm = m;
		const struct replay_store_entry *e = replay_store_get(&r->store, AUDIT_SLICES, ev->namespace, ev->name);

		if (ev->verb == AUDIT_DELETE && e)
			replay_meta_read((struct str){ e->text, e->text_len }, &pm);
		if ((same || ev->verb == AUDIT_DELETE) && (rc = note_pool(r, &pm, ev->verb)) != 0)
			return rc;
	}
	if (ev->resource == AUDIT_SLICES && ev->verb == AUDIT_DELETE) {
		r->slice_deletes++;
		if (str_has_prefix(user_name(ev->user), "system:node:"))
			r->slice_deletes_by_node++;
	}
	if (ev->verb == AUDIT_DELETE) {
		if (same && m.lingers)
			return keep_object(r, ev, VIEW_MODIFIED, resp, &m);
		return remove_object(r, ev);
	}
	if (ev->resource == AUDIT_PODS && str_eq_cstr(ev->subresource, "binding"))
		return bind_pod(r, ev);
	if (ev->resource == AUDIT_PODS && str_eq_cstr(ev->subresource, "eviction"))
		return remove_object(r, ev);
	if (!same) {
		r->applied--;
		return 0;               /* a Status or no object: nothing to keep */
	}
	return keep_object(r, ev, ev->verb == AUDIT_CREATE && ev->subresource.len == 0 ? VIEW_ADDED : VIEW_MODIFIED,
			   resp, &m);
}

/* --- ledger samples ------------------------------------------------------------------ */

static bool dirty(const struct replay_interval *i)
{
	return i->overcommitted || i->diverging;
}

static void consider_clean(struct replay *r, int64_t from, int64_t to)
{
	if (to - from > r->best_clean_to - r->best_clean_from) {
		r->best_clean_from = from;
		r->best_clean_to = to;
	}
}

static int64_t settle_ns(const struct replay *r)
{
	return (int64_t)r->o.policy->ledger_settle_s * 1000000000LL;
}

/* The current interval ends at t. */
static void close_interval(struct replay *r, int64_t t)
{
	r->cur.to_ns = t;
	if (dirty(&r->cur) && t - r->cur.from_ns >= settle_ns(r)) {
		r->divergent_intervals++;
		consider_clean(r, r->clean_from_ns, r->cur.from_ns);
		r->clean_from_ns = t;
	}
	if (r->ntimeline < REPLAY_TIMELINE_MAX)
		r->timeline[r->ntimeline++] = r->cur;
	else
		r->timeline_dropped++;
}

static void note_admitted(struct replay *r, int which, int64_t t)
{
	r->admitted[which]++;
	if (r->clean_from_ns && t > r->clean_from_ns) {
		consider_clean(r, r->clean_from_ns, t);
		r->clean_from_ns = t;
	}
}

static uint64_t divergences_now(const struct replay *r, int64_t at)
{
	return r->divergent_intervals + r->admitted[0] + r->admitted[1] + r->admitted[2] +
	       (r->have_cur && dirty(&r->cur) && at - r->cur.from_ns >= settle_ns(r));
}

/* Nodes whose total is within the policy's headroom of allocatable for
 * some resource (overcommitted ones included). */
static void note_capacity(struct replay *r)
{
	uint64_t pct = r->o.policy->promotion.capacity_headroom_pct;
	uint32_t i, k, near = 0;
	const struct ledger_node *first = NULL;

	for (i = 0; i < r->ledger->nnodes; i++) {
		const struct ledger_node *nd = &r->ledger->nodes[i];

		for (k = 0; k < nd->nresources; k++) {
			const struct ledger_amount *a = &nd->resources[k];

			if (a->has_allocatable && a->allocatable > 0 && a->total > 0 &&
			    (__int128)a->total * 100 >= (__int128)a->allocatable * (int64_t)(100 - pct)) {
				near++;
				first = first ? first : nd;
				break;
			}
		}
	}
	if (near > r->max_near_capacity) {
		r->max_near_capacity = near;
		snprintf(r->near_capacity_node, sizeof(r->near_capacity_node), "%.*s", STR_FMT(first->name));
	}
}

static int sample(struct replay *r, int64_t t)
{
	struct replay_interval now;
	size_t used = 0;
	uint32_t i;
	int rc = publish(r);

	if (rc)
		return rc;
	r->samples++;
	/* The same view gives the same ledger: only its time would differ. */
	if (r->ledger && r->ledger->view_seq == view_seq(r->view))
		return 0;
	ledger_free(r->ledger);
	r->ledger = NULL;
	rc = ledger_build(r->view, r->o.policy, t, REPLAY_LEDGER_CAP, &r->ledger);
	if (rc)
		return rc;
	note_capacity(r);
	memset(&now, 0, sizeof(now));
	now.from_ns = t;
	now.overcommitted = r->ledger->overcommitted;
	now.diverging = r->ledger->diverging;
	for (i = 0; i < r->ledger->nnodes; i++) {
		const struct ledger_node *nd = &r->ledger->nodes[i];
		int w;

		if (!nd->overcommitted && !nd->diverging)
			continue;
		w = snprintf(now.nodes + used, sizeof(now.nodes) - used, "%s%.*s", used ? "," : "", STR_FMT(nd->name));
		if (w < 0 || (size_t)w >= sizeof(now.nodes) - used) {
			now.nodes[used] = '\0';
			break;
		}
		used += (size_t)w;
	}
	if (now.overcommitted > r->max_overcommitted)
		r->max_overcommitted = now.overcommitted;
	if (now.diverging > r->max_diverging)
		r->max_diverging = now.diverging;
	if (!r->have_cur) {
		r->cur = now;
		r->have_cur = true;
		if (!r->clean_from_ns)
			r->clean_from_ns = t;
		return 0;
	}
	if (now.overcommitted == r->cur.overcommitted && now.diverging == r->cur.diverging &&
	    strcmp(now.nodes, r->cur.nodes) == 0)
		return 0;
	close_interval(r, t);
	r->cur = now;
	return 0;
}

/* --- the window ---------------------------------------------------------------------- */

static bool before(const struct replay_pending *a, const struct replay_pending *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_up(struct replay *r, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		struct replay_pending tmp;

		if (!before(&r->heap[i], &r->heap[p]))
			break;
		tmp = r->heap[i];
		r->heap[i] = r->heap[p];
		r->heap[p] = tmp;
		i = p;
	}
}

static void heap_pop(struct replay *r, struct replay_pending *out)
{
	size_t i = 0;

	*out = r->heap[0];
	r->heap[0] = r->heap[--r->nheap];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct replay_pending tmp;

		if (l < r->nheap && before(&r->heap[l], &r->heap[m]))
			m = l;
		if (l + 1 < r->nheap && before(&r->heap[l + 1], &r->heap[m]))
			m = l + 1;
		if (m == i)
			break;
		tmp = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = tmp;
		i = m;
	}
	r->heap_bytes -= out->len;
}

static int process(struct replay *r, const struct audit_event *ev, uint64_t line_no)
{
	struct judged j;
	int rc;

	if (ev->stage_ns < r->last_t)
		r->out_of_order++;
	else
		r->last_t = ev->stage_ns;
	if (!r->first_ns) {
		r->first_ns = ev->stage_ns;
		r->next_sample_ns = ev->stage_ns;
	}
	if (ev->stage_ns > r->end_ns)
		r->end_ns = ev->stage_ns;
	if (ev->stage_ns >= r->next_sample_ns) {
		rc = sample(r, ev->stage_ns);
		if (rc)
			return rc;
		r->next_sample_ns = ev->stage_ns + r->o.sample_ns;
	}
	r->writes++;
	if (success(ev))
		r->succeeded++;
	else
		r->failed++;
	if (judged_write(r, ev, &j)) {
		rc = judge(r, ev, &j, line_no);
		if (rc)
			return rc;
	}
	return success(ev) ? apply(r, ev) : 0;
}

static int drain(struct replay *r, bool all)
{
	struct replay_pending p;
	int rc;

	while (r->nheap && (all || r->heap_bytes > r->o.reorder_bytes ||
			    r->heap[0].t <= r->max_t - r->o.reorder_ns)) {
		heap_pop(r, &p);
		rc = process(r, &p.ev, p.line_no);
		free(p.line);
		if (rc)
			return rc;
	}
	return 0;
}

static void rebase(struct str *s, const char *from, const char *to)
{
	if (s->len)
		s->ptr = to + (s->ptr - from);
}

static int push(struct replay *r, const struct audit_event *ev, const char *line, size_t len, uint64_t line_no)
{
	struct replay_pending *p;
	char *copy;

	if (r->nheap == r->heap_cap) {
		size_t n = r->heap_cap ? r->heap_cap * 2 : 64;
		struct replay_pending *h = realloc(r->heap, n * sizeof(*h));

		if (!h)
			return -ENOMEM;
		r->heap = h;
		r->heap_cap = n;
	}
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, line, len);
	p = &r->heap[r->nheap];
	p->t = ev->stage_ns;
	p->seq = r->seq++;
	p->line_no = line_no;
	p->line = copy;
	p->len = len;
	p->ev = *ev;
	rebase(&p->ev.audit_id, line, copy);
	rebase(&p->ev.api_group, line, copy);
	rebase(&p->ev.api_version, line, copy);
	rebase(&p->ev.resource_name, line, copy);
	rebase(&p->ev.subresource, line, copy);
	rebase(&p->ev.namespace, line, copy);
	rebase(&p->ev.name, line, copy);
	rebase(&p->ev.user, line, copy);
	rebase(&p->ev.impersonated, line, copy);
	rebase(&p->ev.request_object, line, copy);
	rebase(&p->ev.response_object, line, copy);
	r->heap_bytes += len;
	r->nheap++;
	heap_up(r, r->nheap - 1);
	if (ev->stage_ns > r->max_t)
		r->max_t = ev->stage_ns;
	return 0;
}

static void corrupt(struct replay *r, uint64_t line_no, const char *msg)
{
	r->corrupt++;
	if (r->ncorrupt < REPLAY_CORRUPT_KEPT) {
		r->corrupt_kept[r->ncorrupt].line = line_no;
		snprintf(r->corrupt_kept[r->ncorrupt].error, AUDIT_ERROR_MAX, "%s", msg);
		r->ncorrupt++;
	}
}

void replay_line_too_long(struct replay *r, uint64_t line_no, size_t len)
{
	char msg[AUDIT_ERROR_MAX];

	r->lines++;
	r->bytes += len + 1;
	snprintf(msg, sizeof(msg), "a line of %zu bytes, over the longest read (%zu)", len, r->o.max_line);
	corrupt(r, line_no, msg);
}

int replay_line(struct replay *r, const char *line, size_t len, uint64_t line_no)
{
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];
	int rc;

	r->lines++;
	r->bytes += len + 1;
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0) {
		r->skipped++;
		return 0;
	}
	rc = audit_parse(line, len, &ev, err, sizeof(err));
	if (rc == 1) {
		r->skipped++;
		return 0;
	}
	if (rc < 0) {
		corrupt(r, line_no, err);
		return 0;
	}
	if (ev.name.len == 0) {
		/* A create by generateName: the name is the stored object's. */
		struct replay_meta m;

		if (!ev.response_object.len || replay_meta_read(ev.response_object, &m) || !m.name.len) {
			r->skipped++;
			return 0;
		}
		ev.name = m.name;
	}
	r->events++;
	rc = push(r, &ev, line, len, line_no);
	return rc ? rc : drain(r, false);
}

int replay_finish(struct replay *r)
{
	int rc = drain(r, true);

	if (rc)
		return rc;
	if (r->first_ns) {
		rc = sample(r, r->end_ns);
		if (rc)
			return rc;
		close_interval(r, r->end_ns);
		consider_clean(r, r->clean_from_ns, r->end_ns);
		r->have_cur = false;
	} else {
		rc = publish(r);
		if (rc == 0)
			rc = ledger_build(r->view, r->o.policy, 0, REPLAY_LEDGER_CAP, &r->ledger);
	}
	return rc;
}

void replay_totals(const struct replay *r, struct replay_totals *out)
{
	memset(out, 0, sizeof(*out));
	out->lines = r->lines;
	out->events = r->events;
	out->corrupt = r->corrupt;
	out->judged = r->judged;
	out->would_deny = r->would_deny;
	out->would_warn = r->would_warn;
	out->would_refuse = r->would_refuse;
	out->not_judged = r->not_judged_old + r->not_judged_patch;
	out->divergences = replay_divergences(r);
	out->overcommitted = r->ledger ? r->ledger->overcommitted : 0;
}

const struct ledger *replay_ledger(const struct replay *r)
{
	return r->ledger;
}

uint64_t replay_divergences(const struct replay *r)
{
	return r->divergent_intervals + r->admitted[0] + r->admitted[1] + r->admitted[2];
}
