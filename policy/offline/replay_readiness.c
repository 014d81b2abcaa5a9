/* replay_readiness.c - the go/no-go readiness report over a replayed
 * window (replay.h), one verdict per criterion with its evidence, against
 * the policy's promotion thresholds. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "replay_impl.h"

/* The pending time at quantile q (0..1) in seconds: the upper bound of
 * its histogram bucket; -1 without samples. */
static double pending_quantile(const struct replay *r, double q)
{
	uint64_t want, seen = 0;
	size_t i;

	if (!r->pending_count)
		return -1;
	want = (uint64_t)(q * (double)r->pending_count + 0.999999);
	if (want < 1)
		want = 1;
	for (i = 0; i < REPLAY_PENDING_BUCKETS; i++) {
		seen += r->pending_hist[i];
		if (seen < want)
			continue;
		if (i < 100)
			return (double)(i + 1) * 0.01;
		if (i < 690)
			return 1.0 + (double)(i - 100 + 1) * 0.1;
		if (i < 4230)
			return 60.0 + (double)(i - 690 + 1);
		if (i < 5610)
			return 3600.0 + (double)(i - 4230 + 1) * 60;
		return (double)r->pending_max_ns / 1e9;
	}
	return (double)r->pending_max_ns / 1e9;
}

struct criterion {
	const char *name;
	bool go;
	char summary[512];
};

static int open_criterion(struct buf *b, bool first, const struct criterion *c)
{
	int rc = buf_printf(b, "%s{\"name\":\"%s\",\"verdict\":\"%s\",\"summary\":", first ? "" : ",", c->name,
			    c->go ? "go" : "no-go");

	return rc ? rc : buf_add_json_str(b, c->summary, strlen(c->summary));
}

static int drivers(const struct replay *r, struct buf *b, bool *all_go)
{
	const struct string_list *req = &r->o.policy->promotion.drivers;
	struct criterion c = { "driverCoverage", true, "" };
	uint32_t i, k, published = 0, failing = 0, missing = 0;
	int rc;

	for (i = 0; i < r->ndrivers; i++) {
		published += r->drivers[i].mappings;
		failing += r->drivers[i].mappings && r->drivers[i].denied;
	}
	for (k = 0; k < req->n; k++) {
		bool found = false;

		for (i = 0; i < r->ndrivers; i++)
			found |= r->drivers[i].mappings && str_eq_cstr(req->items[k], r->drivers[i].name);
		missing += !found;
	}
	c.go = published > 0 && failing == 0 && missing == 0;
	snprintf(c.summary, sizeof(c.summary), "%u driver%s published mappings; %u of them had slice writes the "
		 "policy refuses; %u of %zu required driver%s missing", published, published == 1 ? "" : "s", failing,
		 missing, (size_t)req->n, req->n == 1 ? "" : "s");
	rc = open_criterion(b, true, &c);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"evidence\":{\"drivers\":[");
	for (i = 0; rc == 0 && i < r->ndrivers; i++) {
		const struct replay_driver *d = &r->drivers[i];

		rc = buf_printf(b, "%s{\"name\":", i ? "," : "");
		if (rc == 0)
			rc = buf_add_json_str(b, d->name, strlen(d->name));
		if (rc == 0)
			rc = buf_printf(b, ",\"sliceWrites\":%" PRIu64 ",\"refused\":%" PRIu64 ",\"publishedMappings\":%s",
					d->writes, d->denied, d->mappings ? "true" : "false");
		if (rc == 0 && d->denied)
			rc = buf_printf(b, ",\"firstRefused\":{\"line\":%" PRIu64 ",\"rule\":\"%s\"}", d->first_denied_line,
					d->first_denied_rule);
		if (rc == 0)
			rc = buf_add_char(b, '}');
	}
	if (rc == 0)
		rc = buf_add_cstr(b, "],\"required\":[");
	for (k = 0; rc == 0 && k < req->n; k++) {
		rc = buf_add_cstr(b, k ? "," : "");
		if (rc == 0)
			rc = buf_add_json_str(b, req->items[k].ptr, req->items[k].len);
	}
	if (rc == 0)
		rc = buf_printf(b, "],\"driversNotTracked\":%" PRIu64 "}}", r->drivers_dropped);
	*all_go &= c.go;
	return rc;
}

static int drill(const struct replay *r, struct buf *b, bool *all_go)
{
	struct criterion c = { "rollbackDrill", true, "" };
	uint32_t i, clean = 0;
	int rc;

	for (i = 0; i < r->ndrills; i++)
		clean += r->drills[i].clean;
	c.go = r->o.policy->promotion.require_rollback_drill ? r->ndrills > 0 && clean == r->ndrills : clean == r->ndrills;
	snprintf(c.summary, sizeof(c.summary), "%u freeze%s turned on and off in the window, %u with no divergence "
		 "through it%s%s", r->ndrills, r->ndrills == 1 ? "" : "s", clean, r->frozen ? "; a freeze is still on at the end" : "",
		 r->o.policy->promotion.require_rollback_drill ? "" : " (a drill is not required)");
	rc = open_criterion(b, false, &c);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"evidence\":{\"drills\":[");
	for (i = 0; rc == 0 && i < r->ndrills; i++) {
		rc = buf_add_cstr(b, i ? ",{\"on\":" : "{\"on\":");
		if (rc == 0)
			rc = replay_json_time(b, r->drills[i].on_ns);
		if (rc == 0)
			rc = buf_add_cstr(b, ",\"off\":");
		if (rc == 0)
			rc = replay_json_time(b, r->drills[i].off_ns);
		if (rc == 0)
			rc = buf_printf(b, ",\"clean\":%s}", r->drills[i].clean ? "true" : "false");
	}
	if (rc == 0)
		rc = buf_printf(b, "],\"frozenAtEnd\":%s,\"required\":%s}}", r->frozen ? "true" : "false",
				r->o.policy->promotion.require_rollback_drill ? "true" : "false");
	*all_go &= c.go;
	return rc;
}

static int restarts(const struct replay *r, struct buf *b, bool *all_go)
{
	struct criterion c = { "restartsAndUpgrades", true, "" };
	uint64_t seen = r->slice_deletes_by_node + r->pools_republished + r->generation_bumps;
	bool clean = r->admitted[0] == 0 && r->admitted[1] == 0;
	int rc;

	c.go = clean && (seen > 0 || !r->o.policy->promotion.require_restarts);
	snprintf(c.summary, sizeof(c.summary), "%" PRIu64 " pools came back after all their slices went, %" PRIu64
		 " generation bumps, %" PRIu64 " slice deletions by a kubelet; %" PRIu64 " allocations from a pool "
		 "still settling and %" PRIu64 " duplicate allocations got through", r->pools_republished,
		 r->generation_bumps, r->slice_deletes_by_node, r->admitted[1], r->admitted[0]);
	rc = open_criterion(b, false, &c);
	if (rc == 0)
		rc = buf_printf(b, ",\"evidence\":{\"poolsRepublished\":%" PRIu64 ",\"generationBumps\":%" PRIu64
				",\"sliceDeletesByKubelet\":%" PRIu64 ",\"sliceDeletes\":%" PRIu64
				",\"stalePoolAllocationsAdmitted\":%" PRIu64 ",\"duplicatesAdmitted\":%" PRIu64
				",\"required\":%s}}", r->pools_republished, r->generation_bumps, r->slice_deletes_by_node,
				r->slice_deletes, r->admitted[1], r->admitted[0],
				r->o.policy->promotion.require_restarts ? "true" : "false");
	*all_go &= c.go;
	return rc;
}

static int window(const struct replay *r, struct buf *b, bool *all_go)
{
	struct criterion c = { "zeroDivergenceWindow", true, "" };
	int64_t longest = r->best_clean_to - r->best_clean_from;
	uint32_t need = r->o.policy->promotion.zero_divergence_s;
	int rc;

	c.go = longest >= (int64_t)need * 1000000000LL;
	snprintf(c.summary, sizeof(c.summary), "the longest window without a divergence is %.1fs; the policy asks "
		 "for %us (%" PRIu64 " divergence%s in the whole window)", (double)longest / 1e9, need,
		 replay_divergences(r), replay_divergences(r) == 1 ? "" : "s");
	rc = open_criterion(b, false, &c);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"evidence\":{\"from\":");
	if (rc == 0)
		rc = replay_json_time(b, r->best_clean_from);
	if (rc == 0)
		rc = buf_add_cstr(b, ",\"to\":");
	if (rc == 0)
		rc = replay_json_time(b, r->best_clean_to);
	if (rc == 0)
		rc = buf_printf(b, ",\"seconds\":%.3f,\"requiredSeconds\":%u,\"divergences\":%" PRIu64 "}}",
				(double)longest / 1e9, need, replay_divergences(r));
	*all_go &= c.go;
	return rc;
}

static int pending(const struct replay *r, struct buf *b, bool *all_go)
{
	struct criterion c = { "pendingSLO", true, "" };
	const struct promotion_policy *p = &r->o.policy->promotion;
	double p50 = pending_quantile(r, 0.5), p99 = pending_quantile(r, 0.99);
	int rc;

	c.go = r->pending_count > 0 && p50 <= p->pending_p50_s && p99 <= p->pending_p99_s;
	if (r->pending_count)
		snprintf(c.summary, sizeof(c.summary), "%" PRIu64 " Pods with claims bound: p50 %.2fs (SLO %us), "
			 "p99 %.2fs (SLO %us); %zu still pending at the end", r->pending_count, p50,
			 p->pending_p50_s, p99, p->pending_p99_s, r->pending.count);
	else
		snprintf(c.summary, sizeof(c.summary), "no Pod with claims was created and bound in the window: "
			 "nothing shows the SLO is met");
	rc = open_criterion(b, false, &c);
	if (rc == 0)
		rc = buf_printf(b, ",\"evidence\":{\"pods\":%" PRIu64 ",\"p50Seconds\":%.3f,\"p99Seconds\":%.3f,"
				"\"maxSeconds\":%.3f,\"stillPending\":%zu,\"sloP50Seconds\":%u,\"sloP99Seconds\":%u}}",
				r->pending_count, p50 < 0 ? 0 : p50, p99 < 0 ? 0 : p99,
				(double)r->pending_max_ns / 1e9, r->pending.count, p->pending_p50_s, p->pending_p99_s);
	*all_go &= c.go;
	return rc;
}

static int capacity(const struct replay *r, struct buf *b, bool *all_go)
{
	struct criterion c = { "capacitySLO", true, "" };
	uint32_t pct = r->o.policy->promotion.capacity_headroom_pct;
	int rc;

	c.go = r->samples > 0 && r->max_overcommitted == 0 && r->max_near_capacity == 0;
	snprintf(c.summary, sizeof(c.summary), "at most %u nodes overcommitted and %u within %u%% of allocatable "
		 "in any of %" PRIu64 " ledger samples%s%s", r->max_overcommitted, r->max_near_capacity, pct,
		 r->samples, r->max_near_capacity ? " (e.g. " : "", r->max_near_capacity ? r->near_capacity_node : "");
	if (r->max_near_capacity)
		strncat(c.summary, ")", sizeof(c.summary) - strlen(c.summary) - 1);
	rc = open_criterion(b, false, &c);
	if (rc == 0)
		rc = buf_printf(b, ",\"evidence\":{\"samples\":%" PRIu64 ",\"maxOvercommittedNodes\":%u,"
				"\"maxNodesWithinHeadroom\":%u,\"headroomPercent\":%u,\"example\":", r->samples,
				r->max_overcommitted, r->max_near_capacity, pct);
	if (rc == 0)
		rc = buf_add_json_str(b, r->near_capacity_node, strlen(r->near_capacity_node));
	if (rc == 0)
		rc = buf_add_cstr(b, "}}");
	*all_go &= c.go;
	return rc;
}

int replay_readiness_json(const struct replay *r, struct buf *out, bool *go)
{
	struct buf crit;
	bool all = true;
	int rc;

	buf_init(&crit, (size_t)16 << 20);
	rc = drivers(r, &crit, &all);
	if (rc == 0)
		rc = drill(r, &crit, &all);
	if (rc == 0)
		rc = restarts(r, &crit, &all);
	if (rc == 0)
		rc = window(r, &crit, &all);
	if (rc == 0)
		rc = pending(r, &crit, &all);
	if (rc == 0)
		rc = capacity(r, &crit, &all);
	if (rc == 0)
		rc = buf_printf(out, "{\"apiVersion\":\"dra-guard.io/v1alpha1\",\"kind\":\"ReadinessReport\","
				"\"policy\":\"%s\",\"verdict\":\"%s\",\"window\":{\"from\":", r->o.policy->hash,
				all ? "go" : "no-go");
	if (rc == 0)
		rc = replay_json_time(out, r->first_ns);
	if (rc == 0)
		rc = buf_add_cstr(out, ",\"to\":");
	if (rc == 0)
		rc = replay_json_time(out, r->end_ns);
	if (rc == 0)
		rc = buf_printf(out, ",\"seconds\":%.3f,\"lines\":%" PRIu64 ",\"writes\":%" PRIu64
				",\"corruptLines\":%" PRIu64 "},\"criteria\":[",
				(double)(r->end_ns - r->first_ns) / 1e9, r->lines, r->writes, r->corrupt);
	if (rc == 0)
		rc = buf_add(out, buf_cstr(&crit), buf_len(&crit));
	if (rc == 0)
		rc = buf_add_cstr(out, "]}");
	buf_free(&crit);
	if (rc == 0)
		*go = all;
	return rc;
}
