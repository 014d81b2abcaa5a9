/* replay_report.c - the replay's report: taken from the replay as a typed
 * struct (replay.h), and written as JSON from it (docs/replay.md has its
 * shape); the command prints its text and JUnit forms from the same struct. */
#include <errno.h>
#include <string.h>

#include "jw.h"
#include "replay_impl.h"
#include "timefmt.h"

void replay_report_get(const struct replay *r, bool with_ledger, struct replay_report *out)
{
	size_t k, b;

	memset(out, 0, sizeof(*out));
	out->policy = r->o.policy->hash;
	out->from_ns = r->first_ns;
	out->to_ns = r->end_ns;
	out->lines = r->lines;
	out->bytes = r->bytes;
	out->events = r->events;
	out->skipped = r->skipped;
	out->corrupt = r->corrupt;
	out->out_of_order = r->out_of_order;
	out->corrupt_lines = r->corrupt_kept;
	out->ncorrupt_lines = r->ncorrupt;
	out->writes = r->writes;
	out->succeeded = r->succeeded;
	out->failed = r->failed;
	out->applied = r->applied;
	out->not_applied = r->apply_refused;
	out->first_not_applied = r->first_apply_error;
	out->judged = r->judged;
	out->not_judged_old = r->not_judged_old;
	out->not_judged_patch = r->not_judged_patch;
	out->undecidable = r->undecidable;
	out->would_deny = r->would_deny;
	out->would_warn = r->would_warn;
	out->would_refuse = r->would_refuse;
	out->rules = r->rules;
	out->undecidable_ex = r->undecidable_ex;
	out->nundecidable_ex = r->nundecidable_ex;
	out->refused = r->refused;
	out->nrefused = r->nrefused;
	out->freeze_changes = r->freeze_changes;
	out->frozen_at_end = r->frozen;
	out->freeze = r->freeze;
	out->nfreeze = r->nfreeze;
	out->samples = r->samples;
	out->settle_ns = (int64_t)r->o.policy->ledger_settle_s * 1000000000LL;
	out->divergent_intervals = r->divergent_intervals;
	out->max_overcommitted = r->max_overcommitted;
	out->max_diverging = r->max_diverging;
	out->admitted_duplicates = r->admitted[0];
	out->admitted_stale_pool = r->admitted[1];
	out->admitted_numa_splits = r->admitted[2];
	out->clean_from_ns = r->best_clean_from;
	out->clean_to_ns = r->best_clean_to;
	out->timeline = r->timeline;
	out->ntimeline = r->ntimeline;
	out->timeline_dropped = r->timeline_dropped;
	out->slice_deletes = r->slice_deletes;
	out->slice_deletes_by_kubelet = r->slice_deletes_by_node;
	for (k = 0; k < EVENTS_RULES; k++) {
		struct replay_reason *x = &out->reasons[k];

		x->rule = events_rule_at(k);
		x->refusals = r->refusals[k];
		x->holds = events_rule_holds(x->rule);
		x->counts = r->held_hist.counts[k];
		x->sum_seconds = r->held_hist.sum[k];
		for (b = 0; b <= PENDING_BUCKETS; b++)
			x->allocated += x->counts[b];
	}
	out->refused_but_written = r->held_written;
	out->max_claims = r->o.max_pending;
	out->held = r->held;
	out->held_at_ns = r->end_ns;
	out->ledger = with_ledger ? r->ledger : NULL;
}

bool replay_interval_settled(const struct replay_report *rep, const struct replay_interval *iv)
{
	return (iv->overcommitted || iv->diverging) && iv->to_ns - iv->from_ns >= rep->settle_ns;
}

/* A log time; null for none. */
static int time_value(struct jw *w, int64_t ns)
{
	char t[40];

	if (!ns)
		return jw_null(w);
	replay_format_time(ns, t);
	return jw_cstr(w, t);
}

static int ktime(struct jw *w, const char *key, int64_t ns)
{
	int rc = jw_key(w, key);

	return rc ? rc : time_value(w, ns);
}

static int kraw(struct jw *w, const char *key, struct str raw)
{
	int rc = jw_key(w, key);

	return rc ? rc : jw_raw_string(w, raw);
}

static void example(struct jw *w, const struct replay_example *e)
{
	char t[40];
	uint32_t i;

	replay_format_time(e->time_ns, t);
	jw_object_begin(w);
	jw_kuint(w, "line", e->line);
	jw_kcstr(w, "time", t);
	kraw(w, "auditID", e->audit_id);
	jw_kcstr(w, "verb", e->verb);
	jw_kcstr(w, "operation", e->operation);
	kraw(w, "resource", e->resource);
	kraw(w, "subresource", e->subresource);
	kraw(w, "namespace", e->namespace);
	kraw(w, "name", e->name);
	kraw(w, "user", e->user);
	jw_kint(w, "recorded", e->recorded);
	switch (e->kind) {
	case REPLAY_EXAMPLE_RULE:
		jw_kcstr(w, "action", action_name(e->action));
		break;
	case REPLAY_EXAMPLE_REFUSED:
		jw_key(w, "rules");
		jw_array_begin(w);
		for (i = 0; i < e->nrules; i++)
			jw_cstr(w, rule_name(e->rules[i]));
		jw_array_end(w);
		break;
	case REPLAY_EXAMPLE_UNDECIDABLE:
		break;
	}
	jw_kstring(w, "message", e->message.ptr, e->message.len);
	jw_object_end(w);
}

static void examples(struct jw *w, const char *key, const struct replay_example *ex, uint32_t n)
{
	uint32_t i;

	jw_key(w, key);
	jw_array_begin(w);
	for (i = 0; i < n; i++)
		example(w, &ex[i]);
	jw_array_end(w);
}

static void rules(struct jw *w, const struct replay_report *rep)
{
	uint32_t i;

	jw_key(w, "rules");
	jw_array_begin(w);
	for (i = 0; i < RULE_COUNT; i++) {
		const struct replay_rule_stats *st = &rep->rules[i];

		if (!st->deny && !st->warn && !st->dryrun)
			continue;
		jw_object_begin(w);
		jw_kcstr(w, "rule", rule_name((enum rule_id)i));
		jw_kuint(w, "wouldDeny", st->deny);
		jw_kuint(w, "wouldWarn", st->warn);
		jw_kuint(w, "dryrun", st->dryrun);
		examples(w, "events", st->examples, st->nexamples);
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void node_list(struct jw *w, const char *nodes)
{
	const char *p = nodes;

	jw_array_begin(w);
	while (*p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		jw_string(w, p, n);
		p += n + (c != NULL);
	}
	jw_array_end(w);
}

static void divergence(struct jw *w, const struct replay_report *rep)
{
	char settle[TIMEFMT_MAX];
	uint32_t i;

	timefmt_duration(rep->settle_ns, settle);
	jw_key(w, "divergence");
	jw_object_begin(w);
	jw_kuint(w, "samples", rep->samples);
	jw_kcstr(w, "settleWindow", settle);
	jw_kuint(w, "divergentIntervals", rep->divergent_intervals);
	jw_kuint(w, "maxOvercommittedNodes", rep->max_overcommitted);
	jw_kuint(w, "maxDivergingNodes", rep->max_diverging);
	jw_kuint(w, "admittedDuplicates", rep->admitted_duplicates);
	jw_kuint(w, "admittedStalePoolAllocations", rep->admitted_stale_pool);
	jw_kuint(w, "admittedNumaSplits", rep->admitted_numa_splits);
	jw_key(w, "longestClean");
	jw_object_begin(w);
	ktime(w, "from", rep->clean_from_ns);
	ktime(w, "to", rep->clean_to_ns);
	jw_kfixed(w, "seconds", (double)(rep->clean_to_ns - rep->clean_from_ns) / 1e9, 3);
	jw_object_end(w);
	jw_key(w, "timeline");
	jw_array_begin(w);
	for (i = 0; i < rep->ntimeline; i++) {
		const struct replay_interval *iv = &rep->timeline[i];

		jw_object_begin(w);
		ktime(w, "from", iv->from_ns);
		ktime(w, "to", iv->to_ns);
		jw_kuint(w, "overcommittedNodes", iv->overcommitted);
		jw_kuint(w, "divergingNodes", iv->diverging);
		jw_kbool(w, "settled", replay_interval_settled(rep, iv));
		jw_key(w, "nodes");
		node_list(w, iv->nodes);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_kuint(w, "timelineDropped", rep->timeline_dropped);
	jw_object_end(w);
}

static int claims_part(const void *ctx, struct buf *out)
{
	const struct replay_report *rep = ctx;

	return pending_table_json(rep->held, rep->held_at_ns, out);
}

static int ledger_part(const void *ctx, struct buf *out)
{
	return ledger_json(ctx, (struct str){ "", 0 }, out);
}

static void pending(struct jw *w, const struct replay_report *rep)
{
	char reason[EVENTS_REASON_MAX], le[PENDING_LE_MAX];
	size_t k, b;
	uint64_t cum;

	jw_key(w, "pending");
	jw_object_begin(w);
	jw_key(w, "reasons");
	jw_array_begin(w);
	for (k = 0; k < EVENTS_RULES; k++) {
		const struct replay_reason *x = &rep->reasons[k];

		events_reason(x->rule, reason);
		jw_object_begin(w);
		jw_kcstr(w, "reason", reason);
		jw_kcstr(w, "rule", rule_name(x->rule));
		jw_kuint(w, "refusals", x->refusals);
		if (x->holds) {
			jw_kuint(w, "allocated", x->allocated);
			jw_kfixed(w, "sumSeconds", x->sum_seconds, 3);
			jw_key(w, "buckets");
			jw_array_begin(w);
			for (b = 0, cum = 0; b <= PENDING_BUCKETS; b++) {
				cum += x->counts[b];
				pending_bucket_label(b, le);
				jw_object_begin(w);
				jw_kcstr(w, "le", le);
				jw_kuint(w, "count", cum);
				jw_object_end(w);
			}
			jw_array_end(w);
		}
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_kuint(w, "refusedButWritten", rep->refused_but_written);
	jw_kuint(w, "maxClaims", rep->max_claims);
	jw_key(w, "claims");
	jw_part(w, claims_part, rep);
	jw_object_end(w);
}

int replay_report_write_json(const struct replay_report *rep, struct buf *out)
{
	struct jw w;
	uint32_t i;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "dra-guard.io/v1alpha1");
	jw_kcstr(&w, "kind", "ReplayReport");
	jw_kcstr(&w, "policy", rep->policy);
	jw_key(&w, "window");
	jw_object_begin(&w);
	ktime(&w, "from", rep->from_ns);
	ktime(&w, "to", rep->to_ns);
	jw_kuint(&w, "lines", rep->lines);
	jw_kuint(&w, "bytes", rep->bytes);
	jw_object_end(&w);
	jw_key(&w, "input");
	jw_object_begin(&w);
	jw_kuint(&w, "events", rep->events);
	jw_kuint(&w, "skipped", rep->skipped);
	jw_kuint(&w, "corrupt", rep->corrupt);
	jw_kuint(&w, "outOfOrder", rep->out_of_order);
	jw_key(&w, "corruptLines");
	jw_array_begin(&w);
	for (i = 0; i < rep->ncorrupt_lines; i++) {
		jw_object_begin(&w);
		jw_kuint(&w, "line", rep->corrupt_lines[i].line);
		jw_kcstr(&w, "error", rep->corrupt_lines[i].error);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	jw_object_end(&w);
	jw_key(&w, "writes");
	jw_object_begin(&w);
	jw_kuint(&w, "total", rep->writes);
	jw_kuint(&w, "succeeded", rep->succeeded);
	jw_kuint(&w, "failed", rep->failed);
	jw_kuint(&w, "applied", rep->applied);
	jw_kuint(&w, "notApplied", rep->not_applied);
	jw_kcstr(&w, "firstNotApplied", rep->first_not_applied);
	jw_kuint(&w, "judged", rep->judged);
	jw_key(&w, "notJudged");
	jw_object_begin(&w);
	jw_kuint(&w, "oldObjectUnknown", rep->not_judged_old);
	jw_kuint(&w, "objectNotRecorded", rep->not_judged_patch);
	jw_object_end(&w);
	jw_kuint(&w, "undecidable", rep->undecidable);
	jw_kuint(&w, "wouldDeny", rep->would_deny);
	jw_kuint(&w, "wouldWarn", rep->would_warn);
	jw_kuint(&w, "wouldRefuse", rep->would_refuse);
	jw_object_end(&w);
	rules(&w, rep);
	examples(&w, "undecidable", rep->undecidable_ex, rep->nundecidable_ex);
	examples(&w, "wouldRefuse", rep->refused, rep->nrefused);
	jw_key(&w, "freeze");
	jw_object_begin(&w);
	jw_kuint(&w, "changes", rep->freeze_changes);
	jw_kbool(&w, "frozenAtEnd", rep->frozen_at_end);
	jw_key(&w, "events");
	jw_array_begin(&w);
	for (i = 0; i < rep->nfreeze; i++) {
		jw_object_begin(&w);
		ktime(&w, "at", rep->freeze[i].at);
		jw_kbool(&w, "freeze", rep->freeze[i].on);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	jw_object_end(&w);
	divergence(&w, rep);
	jw_key(&w, "restarts");
	jw_object_begin(&w);
	jw_kuint(&w, "sliceDeletes", rep->slice_deletes);
	jw_kuint(&w, "sliceDeletesByKubelet", rep->slice_deletes_by_kubelet);
	jw_object_end(&w);
	pending(&w, rep);
	if (rep->ledger) {
		jw_key(&w, "ledger");
		jw_part(&w, ledger_part, rep->ledger);
	}
	jw_object_end(&w);
	return jw_finish(&w);
}

int replay_report_json(const struct replay *r, bool with_ledger, struct buf *out)
{
	struct replay_report rep;

	replay_report_get(r, with_ledger, &rep);
	return replay_report_write_json(&rep, out);
}
