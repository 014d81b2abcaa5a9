/* replay.c - a recorded audit log through the engine and the view
 * (replay.h): the replay's life, the starting dump, the reorder window and
 * the ledger samples. Judging a write is replay_judge.c, applying it
 * replay_apply.c, the reports replay_report.c and replay_readiness.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "replay_impl.h"
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
	o->max_pending = 100000;
	o->ledger_hold = 16384;
}

int replay_new(const struct replay_options *o, struct replay **out)
{
	struct replay *r = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!o || !o->policy || o->sample_ns <= 0 || o->reorder_ns < 0 || !o->max_pending)
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
	    (rc = arena_new(REPLAY_SCRATCH_CAP, &r->scratch)) ||
	    (rc = pending_table_new(o->max_pending, PENDING_IDLE_DEFAULT_NS, &r->held)) ||
	    (rc = ledger_inc_new(o->policy, REPLAY_LEDGER_CAP, &r->inc)))
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
	free(e->text);
	e->text = NULL;
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
	free(r->flagged);
	ledger_inc_free(r->inc);
	if (r->ledger_view && r->ledger_view != r->view)
		view_builder_release(r->builder, r->ledger_view);
	if (r->view)
		view_builder_release(r->builder, r->view);
	view_builder_free(r->builder);
	arena_free(r->arena);
	arena_free(r->scratch);
	replay_store_fini(&r->store);
	replay_store_fini(&r->pools);
	replay_store_fini(&r->pending);
	pending_table_free(r->held);
	buf_free(&r->review);
	buf_free(&r->text);
	free(r);
}

/* The kept ledger's snapshot holds back every view object retired since
 * it; past the cap (samples far apart in a busy log) it goes, with the
 * ledger that borrows from it, and the next sample builds whole. */
static int bound_ledger_hold(struct replay *r)
{
	struct view_stats st;

	if (!r->ledger_view)
		return 0;
	view_builder_stats(r->builder, &st);
	if (st.retired <= r->o.ledger_hold)
		return 0;
	ledger_free(r->ledger);
	r->ledger = NULL;
	ledger_inc_free(r->inc);
	r->inc = NULL;
	view_builder_release(r->builder, r->ledger_view);
	r->ledger_view = NULL;
	view_builder_collect(r->builder);
	return ledger_inc_new(r->o.policy, REPLAY_LEDGER_CAP, &r->inc);
}

/* The working view as a snapshot engine_decide() and the ledger can read.
 * The snapshot the kept ledger was last brought to stays held: the next
 * sample's update reads what changed since it, and the kept ledger (and
 * r->ledger) borrow from it. */
int replay_publish(struct replay *r)
{
	const struct view *v;
	int rc;

	if (r->view && !view_builder_dirty(r->builder))
		return 0;
	rc = view_builder_publish(r->builder, &v);
	if (rc)
		return rc;
	if (r->view && r->view != r->ledger_view)
		view_builder_release(r->builder, r->view);
	r->view = v;
	view_builder_collect(r->builder);
	return bound_ledger_hold(r);
}

bool replay_stored_kind(enum object_kind k)
{
	return k == OBJECT_RESOURCE_SLICE || k == OBJECT_RESOURCE_CLAIM || k == OBJECT_POD || k == OBJECT_CONFIG_MAP;
}

bool replay_is_self(const struct replay *r, struct str ns, struct str name)
{
	return str_eq(ns, r->o.self_namespace) && str_eq(name, r->o.self_name);
}

void replay_note_freeze(struct replay *r, bool on, int64_t at)
{
	if (on == r->frozen)
		return;
	if (on) {
		r->divergences_at_freeze = replay_divergences_now(r, at);
	} else if (r->ndrills < REPLAY_DRILLS_MAX && r->nfreeze && r->freeze[r->nfreeze - 1].on) {
		struct replay_drill *d = &r->drills[r->ndrills++];

		d->on_ns = r->freeze[r->nfreeze - 1].at;
		d->off_ns = at;
		d->divergences_at_on = r->divergences_at_freeze;
		d->clean = replay_divergences_now(r, at) == r->divergences_at_freeze;
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
int replay_view_apply(struct replay *r, enum view_event ev, struct str text, int64_t t)
{
	char err[AUDIT_ERROR_MAX];
	enum object_kind k;
	int rc;

	if (r->have_decoded && text.ptr == r->decoded_text.ptr && text.len == r->decoded_text.len) {
		/* the judge decoded this very text a moment ago */
		k = r->decoded.kind;
		rc = !view_holds_kind(k) ? 1 : view_builder_apply(r->builder, k, ev, &r->decoded, t, err, sizeof(err));
	} else {
		rc = view_builder_apply_json(r->builder, ev, text.ptr, text.len, r->scratch, t, err, sizeof(err));
	}

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
	enum object_kind k;
	int rc;

	if (replay_meta_read(text, &m))
		return -EBADMSG;
	k = model_kind_of_name(m.kind);
	if (k == OBJECT_OTHER || (k == OBJECT_CONFIG_MAP && !replay_is_self(r, m.namespace, m.name)))
		return 0;
	if (k == OBJECT_CONFIG_MAP) {
		r->frozen = m.frozen;
	} else {
		rc = replay_view_apply(r, VIEW_ADDED, text, now_ns);
		if (rc)
			return rc;
	}
	if (replay_stored_kind(k))
		return replay_store_put(&r->store, k, m.namespace, m.name, text);
	return 0;
}

int replay_seed(struct replay *r, const char *json, size_t len, int64_t now_ns, char *err, size_t n)
{
	struct jscan s;
	struct jscan_str key;
	struct str item;
	bool list = false;
	int rc;

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
	view_builder_touch_all(r->builder, now_ns);
	return 0;
bad:
	if (jscan_error(&s))
		jscan_describe(&s, err, n);
	else
		snprintf(err, n, "an object of the dump does not read as a Kubernetes object");
	return -EBADMSG;
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

void replay_note_admitted(struct replay *r, int which, int64_t t)
{
	r->admitted[which]++;
	if (r->clean_from_ns && t > r->clean_from_ns) {
		consider_clean(r, r->clean_from_ns, t);
		r->clean_from_ns = t;
	}
}

uint64_t replay_divergences_now(const struct replay *r, int64_t at)
{
	return r->divergent_intervals + r->admitted[0] + r->admitted[1] + r->admitted[2] +
	       (r->have_cur && dirty(&r->cur) && at - r->cur.from_ns >= settle_ns(r));
}

/* A node whose total is within the policy's headroom of allocatable for
 * some resource (overcommitted ones included). */
static bool near_capacity(const struct ledger_node *nd, uint64_t pct)
{
	uint32_t k;

	for (k = 0; k < nd->nresources; k++) {
		const struct ledger_amount *a = &nd->resources[k];

		if (a->has_allocatable && a->allocatable > 0 && a->total > 0 &&
		    (__int128)a->total * 100 >= (__int128)a->allocatable * (int64_t)(100 - pct))
			return true;
	}
	return false;
}

/* What a sample reads of the node accounts. */
struct sample_walk {
	struct replay *r;
	struct replay_interval *now;
	uint64_t pct;
	uint32_t near;
	const struct ledger_node *first_near;   /* the first by name */
};

static int sample_node(void *ctx, const struct ledger_node *nd)
{
	struct sample_walk *w = ctx;
	struct replay *r = w->r;

	if (near_capacity(nd, w->pct)) {
		w->near++;
		if (!w->first_near || str_cmp(nd->name, w->first_near->name) < 0)
			w->first_near = nd;
	}
	w->now->overcommitted += nd->overcommitted;
	/* Diverging: the Pod statuses disagree with the mappings, or leave out
	 * a claim a Pod on the node reserves (the scheduler undercounts). */
	w->now->diverging += nd->diverging || nd->undercounted;
	if (!nd->overcommitted && !nd->diverging && !nd->undercounted)
		return 0;
	if (r->nflagged == r->flagged_cap) {
		uint32_t cap = r->flagged_cap ? r->flagged_cap * 2 : 64;
		const struct ledger_node **g = realloc(r->flagged, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		r->flagged = g;
		r->flagged_cap = cap;
	}
	r->flagged[r->nflagged++] = nd;
	return 0;
}

static int cmp_node_name(const void *x, const void *y)
{
	return str_cmp((*(const struct ledger_node *const *)x)->name, (*(const struct ledger_node *const *)y)->name);
}

/* The interval state of the kept ledger at t: one walk of the node
 * accounts (no ledger is made, nothing sorted but the flagged nodes). */
static int read_ledger(struct replay *r, int64_t t, struct replay_interval *now)
{
	struct sample_walk w = { .r = r, .now = now, .pct = r->o.policy->promotion.capacity_headroom_pct };
	size_t used = 0;
	uint32_t i;
	int rc;

	memset(now, 0, sizeof(*now));
	now->from_ns = t;
	r->nflagged = 0;
	if ((rc = ledger_inc_each_node(r->inc, sample_node, &w)) != 0)
		return rc;
	if (w.near > r->max_near_capacity) {
		r->max_near_capacity = w.near;
		snprintf(r->near_capacity_node, sizeof(r->near_capacity_node), "%.*s", STR_FMT(w.first_near->name));
	}
	if (r->nflagged > 1)
		qsort(r->flagged, r->nflagged, sizeof(*r->flagged), cmp_node_name);
	for (i = 0; i < r->nflagged; i++) {
		int n = snprintf(now->nodes + used, sizeof(now->nodes) - used, "%s%.*s", used ? "," : "",
				 STR_FMT(r->flagged[i]->name));

		if (n < 0 || (size_t)n >= sizeof(now->nodes) - used) {
			now->nodes[used] = '\0';
			break;
		}
		used += (size_t)n;
	}
	return 0;
}

/* Bring the kept ledger to the working view at t: the update costs what
 * changed since the last sample. */
static int ledger_update(struct replay *r, int64_t t)
{
	int rc = ledger_inc_update(r->inc, r->view, t);

	/* The update has read what changed since the older snapshot. */
	if (r->ledger_view && r->ledger_view != r->view)
		view_builder_release(r->builder, r->ledger_view);
	r->ledger_view = rc ? NULL : r->view;
	return rc;
}

static int sample(struct replay *r, int64_t t)
{
	struct replay_interval now;
	int rc = replay_publish(r);

	if (rc)
		return rc;
	r->samples++;
	/* The same view gives the same ledger: only its time would differ. */
	if (r->ledger_view == r->view)
		return 0;
	if ((rc = ledger_update(r, t)) != 0 || (rc = read_ledger(r, t, &now)) != 0)
		return rc;
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

	r->have_decoded = false;

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
	if (replay_success(ev))
		r->succeeded++;
	else
		r->failed++;
	if (replay_judged_write(r, ev, &j)) {
		rc = replay_judge(r, ev, &j, line_no);
		if (rc)
			return rc;
	}
	/* A dry run stored nothing. */
	rc = replay_success(ev) && !ev->dry_run ? replay_apply(r, ev) : 0;
	/* Held claims are compared with the view once a second of log time,
	 * as the live guard's worker does; the view dates an allocation
	 * itself, so the time measured does not depend on when. */
	if (rc == 0 && ev->stage_ns >= r->next_sweep_ns && pending_table_count(r->held)) {
		rc = replay_sweep_held(r, ev->stage_ns);
		r->next_sweep_ns = ev->stage_ns + 1000000000LL;
	}
	return rc;
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

	if (rc == 0 && pending_table_count(r->held))
		rc = replay_sweep_held(r, r->end_ns);
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
		rc = replay_publish(r);
		if (rc == 0)
			rc = ledger_update(r, 0);
	}
	/* The end's ledger, with its entries: of the last sample that changed
	 * the view, at its time. */
	ledger_free(r->ledger);
	r->ledger = NULL;
	return rc ? rc : ledger_inc_ledger(r->inc, true, &r->ledger);
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

const char *replay_cap(const struct replay *r)
{
	return r->held_full ? "the pending table's cap on claims held back at once" : "";
}

const struct ledger *replay_ledger(const struct replay *r)
{
	return r->ledger;
}

void replay_ledger_stats(const struct replay *r, struct ledger_inc_stats *st)
{
	if (r->inc)
		ledger_inc_stats(r->inc, st);
	else   /* a new one could not be made (-ENOMEM, returned then) */
		memset(st, 0, sizeof(*st));
}

uint64_t replay_divergences(const struct replay *r)
{
	return r->divergent_intervals + r->admitted[0] + r->admitted[1] + r->admitted[2];
}
