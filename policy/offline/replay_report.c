/* replay_report.c - the replay's report as JSON (replay.h; docs/replay.md
 * has its shape). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "replay_impl.h"
#include "timefmt.h"

static int examples(struct buf *b, const struct replay_example *ex, uint32_t n)
{
	uint32_t i;
	int rc = buf_add_char(b, '[');

	for (i = 0; rc == 0 && i < n; i++) {
		if (i)
			rc = buf_add_char(b, ',');
		if (rc == 0)
			rc = buf_add(b, ex[i].json, ex[i].len);
	}
	return rc ? rc : buf_add_char(b, ']');
}

static int rules(const struct replay *r, struct buf *b)
{
	uint32_t i;
	bool first = true;
	int rc = buf_add_cstr(b, ",\"rules\":[");

	for (i = 0; rc == 0 && i < RULE_COUNT; i++) {
		const struct replay_rule_stats *st = &r->rules[i];

		if (!st->deny && !st->warn && !st->dryrun)
			continue;
		rc = buf_printf(b, "%s{\"rule\":\"%s\",\"wouldDeny\":%" PRIu64 ",\"wouldWarn\":%" PRIu64
				",\"dryrun\":%" PRIu64 ",\"events\":", first ? "" : ",", rule_name((enum rule_id)i),
				st->deny, st->warn, st->dryrun);
		if (rc == 0)
			rc = examples(b, st->examples, st->nexamples);
		if (rc == 0)
			rc = buf_add_char(b, '}');
		first = false;
	}
	return rc ? rc : buf_add_char(b, ']');
}

static int node_list(struct buf *b, const char *nodes)
{
	const char *p = nodes;
	int rc = buf_add_char(b, '[');

	while (rc == 0 && *p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (p != nodes)
			rc = buf_add_char(b, ',');
		if (rc == 0)
			rc = buf_add_json_str(b, p, n);
		p += n + (c != NULL);
	}
	return rc ? rc : buf_add_char(b, ']');
}

static int divergence(const struct replay *r, struct buf *b)
{
	char settle[TIMEFMT_MAX];
	uint32_t i;
	int rc;

	timefmt_duration((int64_t)r->o.policy->ledger_settle_s * 1000000000LL, settle);
	rc = buf_printf(b, ",\"divergence\":{\"samples\":%" PRIu64 ",\"settleWindow\":\"%s\",\"divergentIntervals\":%"
			PRIu64 ",\"maxOvercommittedNodes\":%u,\"maxDivergingNodes\":%u,\"admittedDuplicates\":%" PRIu64
			",\"admittedStalePoolAllocations\":%" PRIu64 ",\"admittedNumaSplits\":%" PRIu64
			",\"longestClean\":{\"from\":", r->samples, settle, r->divergent_intervals, r->max_overcommitted,
			r->max_diverging, r->admitted[0], r->admitted[1], r->admitted[2]);
	if (rc == 0)
		rc = replay_json_time(b, r->best_clean_from);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"to\":");
	if (rc == 0)
		rc = replay_json_time(b, r->best_clean_to);
	if (rc == 0)
		rc = buf_printf(b, ",\"seconds\":%.3f},\"timeline\":[",
				(double)(r->best_clean_to - r->best_clean_from) / 1e9);
	for (i = 0; rc == 0 && i < r->ntimeline; i++) {
		const struct replay_interval *iv = &r->timeline[i];

		rc = buf_add_cstr(b, i ? ",{\"from\":" : "{\"from\":");
		if (rc == 0)
			rc = replay_json_time(b, iv->from_ns);
		if (rc == 0)
			rc = buf_add_cstr(b, ",\"to\":");
		if (rc == 0)
			rc = replay_json_time(b, iv->to_ns);
		if (rc == 0)
			rc = buf_printf(b, ",\"overcommittedNodes\":%u,\"divergingNodes\":%u,\"settled\":%s,\"nodes\":",
					iv->overcommitted, iv->diverging,
					(iv->overcommitted || iv->diverging) &&
							iv->to_ns - iv->from_ns >=
								(int64_t)r->o.policy->ledger_settle_s * 1000000000LL
						? "true" : "false");
		if (rc == 0)
			rc = node_list(b, iv->nodes);
		if (rc == 0)
			rc = buf_add_char(b, '}');
	}
	if (rc == 0)
		rc = buf_printf(b, "],\"timelineDropped\":%" PRIu64 "}", r->timeline_dropped);
	return rc;
}

int replay_report_json(const struct replay *r, bool with_ledger, struct buf *out)
{
	uint32_t i;
	int rc;

	rc = buf_printf(out, "{\"apiVersion\":\"dra-guard.io/v1alpha1\",\"kind\":\"ReplayReport\",\"policy\":\"%s\","
			"\"window\":{\"from\":", r->o.policy->hash);
	if (rc == 0)
		rc = replay_json_time(out, r->first_ns);
	if (rc == 0)
		rc = buf_add_cstr(out, ",\"to\":");
	if (rc == 0)
		rc = replay_json_time(out, r->end_ns);
	if (rc == 0)
		rc = buf_printf(out, ",\"lines\":%" PRIu64 ",\"bytes\":%" PRIu64 "},\"input\":{\"events\":%" PRIu64
				",\"skipped\":%" PRIu64 ",\"corrupt\":%" PRIu64 ",\"outOfOrder\":%" PRIu64
				",\"corruptLines\":[", r->lines, r->bytes, r->events, r->skipped, r->corrupt,
				r->out_of_order);
	for (i = 0; rc == 0 && i < r->ncorrupt; i++) {
		rc = buf_printf(out, "%s{\"line\":%" PRIu64 ",\"error\":", i ? "," : "", r->corrupt_kept[i].line);
		if (rc == 0)
			rc = buf_add_json_str(out, r->corrupt_kept[i].error, strlen(r->corrupt_kept[i].error));
		if (rc == 0)
			rc = buf_add_char(out, '}');
	}
	if (rc == 0)
		rc = buf_printf(out, "]},\"writes\":{\"total\":%" PRIu64 ",\"succeeded\":%" PRIu64 ",\"failed\":%" PRIu64
				",\"applied\":%" PRIu64 ",\"notApplied\":%" PRIu64 ",\"firstNotApplied\":",
				r->writes, r->succeeded, r->failed, r->applied, r->apply_refused);
	if (rc == 0)
		rc = buf_add_json_str(out, r->first_apply_error, strlen(r->first_apply_error));
	if (rc == 0)
		rc = buf_printf(out, ",\"judged\":%" PRIu64 ",\"notJudged\":{\"oldObjectUnknown\":%" PRIu64
				",\"objectNotRecorded\":%" PRIu64 "},\"undecidable\":%" PRIu64 ",\"wouldDeny\":%" PRIu64
				",\"wouldWarn\":%" PRIu64 ",\"wouldRefuse\":%" PRIu64 "}",
				r->judged, r->not_judged_old, r->not_judged_patch, r->undecidable, r->would_deny,
				r->would_warn, r->would_refuse);
	if (rc == 0)
		rc = rules(r, out);
	if (rc == 0)
		rc = buf_add_cstr(out, ",\"undecidable\":");
	if (rc == 0)
		rc = examples(out, r->undecidable_ex, r->nundecidable_ex);
	if (rc == 0)
		rc = buf_add_cstr(out, ",\"wouldRefuse\":");
	if (rc == 0)
		rc = examples(out, r->refused, r->nrefused);
	if (rc == 0)
		rc = buf_printf(out, ",\"freeze\":{\"changes\":%" PRIu64 ",\"frozenAtEnd\":%s,\"events\":[",
				r->freeze_changes, r->frozen ? "true" : "false");
	for (i = 0; rc == 0 && i < r->nfreeze; i++) {
		rc = buf_add_cstr(out, i ? ",{\"at\":" : "{\"at\":");
		if (rc == 0)
			rc = replay_json_time(out, r->freeze[i].at);
		if (rc == 0)
			rc = buf_printf(out, ",\"freeze\":%s}", r->freeze[i].on ? "true" : "false");
	}
	if (rc == 0)
		rc = buf_add_cstr(out, "]}");
	if (rc == 0)
		rc = divergence(r, out);
	if (rc == 0)
		rc = buf_printf(out, ",\"restarts\":{\"sliceDeletes\":%" PRIu64 ",\"sliceDeletesByKubelet\":%" PRIu64 "}",
				r->slice_deletes, r->slice_deletes_by_node);
	if (rc == 0)
		rc = replay_pending_json(r, out);
	if (rc == 0 && with_ledger && r->ledger) {
		rc = buf_add_cstr(out, ",\"ledger\":");
		if (rc == 0)
			rc = ledger_json(r->ledger, (struct str){ "", 0 }, out);
	}
	return rc ? rc : buf_add_char(out, '}');
}
