/* replay_apply.c - a write that succeeded applied to the replay's view and
 * object texts (replay.h), and the evidence the readiness report reads:
 * pools that restart, Pods waiting for a binding. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jw.h"
#include "replay_impl.h"

/* --- applying ------------------------------------------------------------------- */

/* "group/version" (or "version" for the core group) of the event's raw
 * (recorded, already escaped) texts, as a JSON string. */
static int add_api_version(const void *ctx, struct buf *out)
{
	const struct audit_event *ev = ctx;
	int rc = buf_add_char(out, '"');

	if (rc == 0 && ev->api_group.len) {
		rc = buf_add_str(out, ev->api_group);
		if (rc == 0)
			rc = buf_add_char(out, '/');
	}
	if (rc == 0)
		rc = buf_add_str(out, ev->api_version);
	return rc ? rc : buf_add_char(out, '"');
}

/* A minimal object naming what a deletion removed, when neither the
 * response nor the store has it. */
static int minimal_object(struct replay *r, const struct audit_event *ev, const char *kind)
{
	struct jw w;

	buf_reset(&r->text);
	jw_init(&w, &r->text);
	jw_object_begin(&w);
	jw_key(&w, "apiVersion");
	jw_part(&w, add_api_version, ev);
	jw_kcstr(&w, "kind", kind);
	jw_key(&w, "metadata");
	jw_object_begin(&w);
	jw_key(&w, "name");
	jw_raw_string(&w, ev->name);
	if (ev->namespace.len) {
		jw_key(&w, "namespace");
		jw_raw_string(&w, ev->namespace);
	}
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}

static int remove_object(struct replay *r, const struct audit_event *ev)
{
	const struct replay_store_entry *e = replay_store_get(&r->store, ev->kind, ev->namespace, ev->name);
	int rc;

	if (ev->kind == OBJECT_CONFIG_MAP) {
		if (replay_is_self(r, ev->namespace, ev->name))
			replay_note_freeze(r, false, ev->stage_ns);
	} else if (e) {
		rc = replay_view_apply(r, VIEW_DELETED, (struct str){ e->text, e->text_len }, ev->stage_ns);
		if (rc)
			return rc;
	} else {
		rc = minimal_object(r, ev, model_kind_name(ev->kind));
		if (rc == 0)
			rc = replay_view_apply(r, VIEW_DELETED, (struct str){ buf_cstr(&r->text), buf_len(&r->text) }, ev->stage_ns);
		if (rc)
			return rc;
	}
	replay_store_del(&r->store, ev->kind, ev->namespace, ev->name);
	return 0;
}

/* The object as the write left it: text is its new state. */
static int keep_object(struct replay *r, const struct audit_event *ev, enum view_event vev, struct str text,
		       const struct replay_meta *m)
{
	int rc = 0;

	if (ev->kind == OBJECT_CONFIG_MAP) {
		if (!replay_is_self(r, ev->namespace, ev->name))
			return 0;
		replay_note_freeze(r, m->has_freeze && m->frozen, ev->stage_ns);
	} else {
		rc = replay_view_apply(r, vev, text, ev->stage_ns);
	}
	if (rc == 0 && replay_stored_kind(ev->kind))
		rc = replay_store_put(&r->store, ev->kind, ev->namespace, ev->name, text);
	return rc;
}

static int bind_pod(struct replay *r, const struct audit_event *ev)
{
	const struct replay_store_entry *e = replay_store_get(&r->store, OBJECT_POD, ev->namespace, ev->name);
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
	const struct replay_store_entry *e = replay_store_get(&r->pools, OBJECT_NONE, m->driver, m->pool);
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
	return replay_store_put(&r->pools, OBJECT_NONE, m->driver, m->pool, (struct str){ (const char *)&st, sizeof(st) });
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
		return replay_store_put(&r->pending, OBJECT_POD, ev->namespace, ev->name,
					(struct str){ (const char *)&ev->stage_ns, sizeof(ev->stage_ns) });
	}
	if (ev->verb == AUDIT_CREATE && str_eq_cstr(ev->subresource, "binding")) {
		e = replay_store_get(&r->pending, OBJECT_POD, ev->namespace, ev->name);
		if (!e || e->text_len != sizeof(t))
			return 0;
		memcpy(&t, e->text, sizeof(t));
		pending_add(r, ev->stage_ns - t);
	}
	if (ev->verb == AUDIT_DELETE || str_eq_cstr(ev->subresource, "binding") ||
	    str_eq_cstr(ev->subresource, "eviction"))
		replay_store_del(&r->pending, OBJECT_POD, ev->namespace, ev->name);
	return 0;
}

int replay_apply(struct replay *r, const struct audit_event *ev)
{
	struct replay_meta m;
	struct str resp = ev->response_object;
	bool same = false;

	int rc;

	r->applied++;
	memset(&m, 0, sizeof(m));
	if (resp.len && replay_meta_read(resp, &m) == 0)
		same = model_kind_of_name(m.kind) == ev->kind;
	if (ev->kind == OBJECT_POD && (rc = note_pod(r, ev, &m)) != 0)
		return rc;
	if (ev->kind == OBJECT_RESOURCE_SLICE && ev->subresource.len == 0) {
		struct replay_meta pm = m;
		const struct replay_store_entry *e = replay_store_get(&r->store, OBJECT_RESOURCE_SLICE, ev->namespace, ev->name);

		if (ev->verb == AUDIT_DELETE && e)
			replay_meta_read((struct str){ e->text, e->text_len }, &pm);
		if ((same || ev->verb == AUDIT_DELETE) && (rc = note_pool(r, &pm, ev->verb)) != 0)
			return rc;
	}
	if (ev->kind == OBJECT_RESOURCE_SLICE && ev->verb == AUDIT_DELETE) {
		r->slice_deletes++;
		if (str_has_prefix(replay_user_name(ev->user), "system:node:"))
			r->slice_deletes_by_node++;
	}
	if (ev->verb == AUDIT_DELETE) {
		if (same && m.lingers)
			return keep_object(r, ev, VIEW_MODIFIED, resp, &m);
		return remove_object(r, ev);
	}
	if (ev->kind == OBJECT_POD && str_eq_cstr(ev->subresource, "binding"))
		return bind_pod(r, ev);
	if (ev->kind == OBJECT_POD && str_eq_cstr(ev->subresource, "eviction"))
		return remove_object(r, ev);
	if (!same) {
		r->applied--;
		return 0;               /* a Status or no object: nothing to keep */
	}
	return keep_object(r, ev, ev->verb == AUDIT_CREATE && ev->subresource.len == 0 ? VIEW_ADDED : VIEW_MODIFIED,
			   resp, &m);
}
