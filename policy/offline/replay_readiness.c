/* replay_readiness.c - the go/no-go readiness report over a replayed
 * window (replay.h), one verdict per criterion with its evidence, against
 * the policy's promotion thresholds. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jw.h"
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

double replay_seconds_written(double seconds)
{
	char t[64];

	snprintf(t, sizeof(t), "%.3f", seconds);
	return strtod(t, NULL);
}

static void drivers(const struct replay *r, struct replay_readiness *out)
{
	const struct string_list *req = &r->o.policy->promotion.drivers;
	struct replay_criterion *c = &out->drivers.c;
	uint32_t i, k, published = 0, failing = 0, missing = 0;

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
	c->name = "driverCoverage";
	c->go = published > 0 && failing == 0 && missing == 0;
	snprintf(c->summary, sizeof(c->summary), "%u driver%s published mappings; %u of them had slice writes the "
		 "policy refuses; %u of %zu required driver%s missing", published, published == 1 ? "" : "s", failing,
		 missing, (size_t)req->n, req->n == 1 ? "" : "s");
	out->drivers.drivers = r->drivers;
	out->drivers.ndrivers = r->ndrivers;
	out->drivers.required = req;
	out->drivers.not_tracked = r->drivers_dropped;
}

static void drill(const struct replay *r, struct replay_readiness *out)
{
	struct replay_criterion *c = &out->drill.c;
	bool required = r->o.policy->promotion.require_rollback_drill;
	uint32_t i, clean = 0;

	for (i = 0; i < r->ndrills; i++)
		clean += r->drills[i].clean;
	c->name = "rollbackDrill";
	c->go = required ? r->ndrills > 0 && clean == r->ndrills : clean == r->ndrills;
	snprintf(c->summary, sizeof(c->summary), "%u freeze%s turned on and off in the window, %u with no divergence "
		 "through it%s%s", r->ndrills, r->ndrills == 1 ? "" : "s", clean,
		 r->frozen ? "; a freeze is still on at the end" : "", required ? "" : " (a drill is not required)");
	out->drill.drills = r->drills;
	out->drill.ndrills = r->ndrills;
	out->drill.frozen_at_end = r->frozen;
	out->drill.required = required;
}

static void restarts(const struct replay *r, struct replay_readiness *out)
{
	struct replay_criterion *c = &out->restarts.c;
	uint64_t seen = r->slice_deletes_by_node + r->pools_republished + r->generation_bumps;
	bool clean = r->admitted[0] == 0 && r->admitted[1] == 0;

	c->name = "restartsAndUpgrades";
	c->go = clean && (seen > 0 || !r->o.policy->promotion.require_restarts);
	snprintf(c->summary, sizeof(c->summary), "%" PRIu64 " pools came back after all their slices went, %" PRIu64
		 " generation bumps, %" PRIu64 " slice deletions by a kubelet; %" PRIu64 " allocations from a pool "
		 "still settling and %" PRIu64 " duplicate allocations got through", r->pools_republished,
		 r->generation_bumps, r->slice_deletes_by_node, r->admitted[1], r->admitted[0]);
	out->restarts.pools_republished = r->pools_republished;
	out->restarts.generation_bumps = r->generation_bumps;
	out->restarts.slice_deletes_by_kubelet = r->slice_deletes_by_node;
	out->restarts.slice_deletes = r->slice_deletes;
	out->restarts.stale_pool_admitted = r->admitted[1];
	out->restarts.duplicates_admitted = r->admitted[0];
	out->restarts.required = r->o.policy->promotion.require_restarts;
}

static void window(const struct replay *r, struct replay_readiness *out)
{
	struct replay_criterion *c = &out->window.c;
	int64_t longest = r->best_clean_to - r->best_clean_from;
	uint32_t need = r->o.policy->promotion.zero_divergence_s;

	c->name = "zeroDivergenceWindow";
	c->go = longest >= (int64_t)need * 1000000000LL;
	snprintf(c->summary, sizeof(c->summary), "the longest window without a divergence is %.1fs; the policy asks "
		 "for %us (%" PRIu64 " divergence%s in the whole window)", (double)longest / 1e9, need,
		 replay_divergences(r), replay_divergences(r) == 1 ? "" : "s");
	out->window.from_ns = r->best_clean_from;
	out->window.to_ns = r->best_clean_to;
	out->window.required_seconds = need;
	out->window.divergences = replay_divergences(r);
}

static void pending(const struct replay *r, struct replay_readiness *out)
{
	struct replay_criterion *c = &out->pending.c;
	const struct promotion_policy *p = &r->o.policy->promotion;
	double p50 = pending_quantile(r, 0.5), p99 = pending_quantile(r, 0.99);

	c->name = "pendingSLO";
	c->go = r->pending_count > 0 && p50 <= p->pending_p50_s && p99 <= p->pending_p99_s;
	if (r->pending_count)
		snprintf(c->summary, sizeof(c->summary), "%" PRIu64 " Pods with claims bound: p50 %.2fs (SLO %us), "
			 "p99 %.2fs (SLO %us); %zu still pending at the end", r->pending_count, p50,
			 p->pending_p50_s, p99, p->pending_p99_s, r->pending.count);
	else
		snprintf(c->summary, sizeof(c->summary), "no Pod with claims was created and bound in the window: "
			 "nothing shows the SLO is met");
	out->pending.pods = r->pending_count;
	out->pending.p50_seconds = p50;
	out->pending.p99_seconds = p99;
	out->pending.max_seconds = (double)r->pending_max_ns / 1e9;
	out->pending.still_pending = r->pending.count;
	out->pending.slo_p50_seconds = p->pending_p50_s;
	out->pending.slo_p99_seconds = p->pending_p99_s;
}

static void capacity(const struct replay *r, struct replay_readiness *out)
{
	struct replay_criterion *c = &out->capacity.c;
	uint32_t pct = r->o.policy->promotion.capacity_headroom_pct;

	c->name = "capacitySLO";
	c->go = r->samples > 0 && r->max_overcommitted == 0 && r->max_near_capacity == 0;
	snprintf(c->summary, sizeof(c->summary), "at most %u nodes overcommitted and %u within %u%% of allocatable "
		 "in any of %" PRIu64 " ledger samples%s%s", r->max_overcommitted, r->max_near_capacity, pct,
		 r->samples, r->max_near_capacity ? " (e.g. " : "", r->max_near_capacity ? r->near_capacity_node : "");
	if (r->max_near_capacity)
		strncat(c->summary, ")", sizeof(c->summary) - strlen(c->summary) - 1);
	out->capacity.samples = r->samples;
	out->capacity.max_overcommitted = r->max_overcommitted;
	out->capacity.max_within_headroom = r->max_near_capacity;
	out->capacity.headroom_percent = pct;
	out->capacity.example = r->near_capacity_node;
}

void replay_readiness_get(const struct replay *r, struct replay_readiness *out)
{
	memset(out, 0, sizeof(*out));
	out->policy = r->o.policy->hash;
	out->from_ns = r->first_ns;
	out->to_ns = r->end_ns;
	out->lines = r->lines;
	out->writes = r->writes;
	out->corrupt_lines = r->corrupt;
	drivers(r, out);
	drill(r, out);
	restarts(r, out);
	window(r, out);
	pending(r, out);
	capacity(r, out);
	out->go = out->drivers.c.go && out->drill.c.go && out->restarts.c.go && out->window.c.go &&
		  out->pending.c.go && out->capacity.c.go;
}

/* --- JSON ---------------------------------------------------------------------------------------- */

static int time_value(struct jw *w, const char *key, int64_t ns)
{
	char t[40];

	jw_key(w, key);
	if (!ns)
		return jw_null(w);
	replay_format_time(ns, t);
	return jw_cstr(w, t);
}

/* {"name","verdict","summary","evidence":{ (left open for the evidence) */
static void criterion_begin(struct jw *w, const struct replay_criterion *c)
{
	jw_object_begin(w);
	jw_kcstr(w, "name", c->name);
	jw_kcstr(w, "verdict", c->go ? "go" : "no-go");
	jw_kcstr(w, "summary", c->summary);
	jw_key(w, "evidence");
	jw_object_begin(w);
}

static void criterion_end(struct jw *w)
{
	jw_object_end(w);
	jw_object_end(w);
}

static void drivers_json(struct jw *w, const struct replay_readiness *rep)
{
	uint32_t i;

	criterion_begin(w, &rep->drivers.c);
	jw_key(w, "drivers");
	jw_array_begin(w);
	for (i = 0; i < rep->drivers.ndrivers; i++) {
		const struct replay_driver *d = &rep->drivers.drivers[i];

		jw_object_begin(w);
		jw_kcstr(w, "name", d->name);
		jw_kuint(w, "sliceWrites", d->writes);
		jw_kuint(w, "refused", d->denied);
		jw_kbool(w, "publishedMappings", d->mappings);
		if (d->denied) {
			jw_key(w, "firstRefused");
			jw_object_begin(w);
			jw_kuint(w, "line", d->first_denied_line);
			jw_kcstr(w, "rule", d->first_denied_rule);
			jw_object_end(w);
		}
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_key(w, "required");
	jw_array_begin(w);
	for (i = 0; i < rep->drivers.required->n; i++)
		jw_string(w, rep->drivers.required->items[i].ptr, rep->drivers.required->items[i].len);
	jw_array_end(w);
	jw_kuint(w, "driversNotTracked", rep->drivers.not_tracked);
	criterion_end(w);
}

static void drill_json(struct jw *w, const struct replay_readiness *rep)
{
	uint32_t i;

	criterion_begin(w, &rep->drill.c);
	jw_key(w, "drills");
	jw_array_begin(w);
	for (i = 0; i < rep->drill.ndrills; i++) {
		jw_object_begin(w);
		time_value(w, "on", rep->drill.drills[i].on_ns);
		time_value(w, "off", rep->drill.drills[i].off_ns);
		jw_kbool(w, "clean", rep->drill.drills[i].clean);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_kbool(w, "frozenAtEnd", rep->drill.frozen_at_end);
	jw_kbool(w, "required", rep->drill.required);
	criterion_end(w);
}

int replay_readiness_write_json(const struct replay_readiness *rep, struct buf *out)
{
	struct jw w;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "dra-guard.io/v1alpha1");
	jw_kcstr(&w, "kind", "ReadinessReport");
	jw_kcstr(&w, "policy", rep->policy);
	jw_kcstr(&w, "verdict", rep->go ? "go" : "no-go");
	jw_key(&w, "window");
	jw_object_begin(&w);
	time_value(&w, "from", rep->from_ns);
	time_value(&w, "to", rep->to_ns);
	jw_kfixed(&w, "seconds", (double)(rep->to_ns - rep->from_ns) / 1e9, 3);
	jw_kuint(&w, "lines", rep->lines);
	jw_kuint(&w, "writes", rep->writes);
	jw_kuint(&w, "corruptLines", rep->corrupt_lines);
	jw_object_end(&w);
	jw_key(&w, "criteria");
	jw_array_begin(&w);
	drivers_json(&w, rep);
	drill_json(&w, rep);

	criterion_begin(&w, &rep->restarts.c);
	jw_kuint(&w, "poolsRepublished", rep->restarts.pools_republished);
	jw_kuint(&w, "generationBumps", rep->restarts.generation_bumps);
	jw_kuint(&w, "sliceDeletesByKubelet", rep->restarts.slice_deletes_by_kubelet);
	jw_kuint(&w, "sliceDeletes", rep->restarts.slice_deletes);
	jw_kuint(&w, "stalePoolAllocationsAdmitted", rep->restarts.stale_pool_admitted);
	jw_kuint(&w, "duplicatesAdmitted", rep->restarts.duplicates_admitted);
	jw_kbool(&w, "required", rep->restarts.required);
	criterion_end(&w);

	criterion_begin(&w, &rep->window.c);
	time_value(&w, "from", rep->window.from_ns);
	time_value(&w, "to", rep->window.to_ns);
	jw_kfixed(&w, "seconds", (double)(rep->window.to_ns - rep->window.from_ns) / 1e9, 3);
	jw_kuint(&w, "requiredSeconds", rep->window.required_seconds);
	jw_kuint(&w, "divergences", rep->window.divergences);
	criterion_end(&w);

	criterion_begin(&w, &rep->pending.c);
	jw_kuint(&w, "pods", rep->pending.pods);
	jw_kfixed(&w, "p50Seconds", rep->pending.p50_seconds < 0 ? 0 : rep->pending.p50_seconds, 3);
	jw_kfixed(&w, "p99Seconds", rep->pending.p99_seconds < 0 ? 0 : rep->pending.p99_seconds, 3);
	jw_kfixed(&w, "maxSeconds", rep->pending.max_seconds, 3);
	jw_kuint(&w, "stillPending", rep->pending.still_pending);
	jw_kuint(&w, "sloP50Seconds", rep->pending.slo_p50_seconds);
	jw_kuint(&w, "sloP99Seconds", rep->pending.slo_p99_seconds);
	criterion_end(&w);

	criterion_begin(&w, &rep->capacity.c);
	jw_kuint(&w, "samples", rep->capacity.samples);
	jw_kuint(&w, "maxOvercommittedNodes", rep->capacity.max_overcommitted);
	jw_kuint(&w, "maxNodesWithinHeadroom", rep->capacity.max_within_headroom);
	jw_kuint(&w, "headroomPercent", rep->capacity.headroom_percent);
	jw_kcstr(&w, "example", rep->capacity.example);
	criterion_end(&w);

	jw_array_end(&w);
	jw_object_end(&w);
	return jw_finish(&w);
}
