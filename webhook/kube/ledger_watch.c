/* ledger_watch.c - the served ledger, its export and its metrics. */
#include "ledger_watch.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "ledger.h"
#include "ledger_rules.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "prom.h"

/* The rules whose undecided cases are counted, by label. */
static const enum rule_id undecided_rules[] = {
	RULE_LEDGER_POOL_FRESH, RULE_LEDGER_DEVICE_DUPLICATE, RULE_LEDGER_POD_AMOUNTS,
};
#define NUNDECIDED_RULES (sizeof(undecided_rules) / sizeof(undecided_rules[0]))

struct ledger_watch {
	struct cluster_view *cv;
	struct policy_source *ps;
	pthread_mutex_t mu;           /* the ledger and what it borrows */
	struct snapshot *vsnap;       /* the view the ledger is of */
	struct snapshot *psnap;       /* the policy it was made under */
	struct ledger_inc *inc;       /* NULL: built whole next */
	double build_s;               /* the last whole build */
	double update_s;              /* the last update from a view change */
	uint32_t update_nodes;        /* node accounts it counted again */
	double built_at;              /* clock_mono_s() when lw->inc was last brought up to date */
	bool failed;                  /* the last whole build failed, at built_at */
	atomic_uint_fast64_t builds, updates;

	atomic_uint_fast64_t pending[LEDGER_CAUSE_COUNT];
	atomic_uint_fast64_t duplicates;
	atomic_uint_fast64_t numa_split;
	atomic_uint_fast64_t pod_amounts;
	atomic_uint_fast64_t pod_omitted;
	atomic_uint_fast64_t pod_ambiguous;
	atomic_uint_fast64_t undecided[NUNDECIDED_RULES][LEDGER_REASON_COUNT];
	atomic_uint_fast64_t rechecks[2];
};



int ledger_watch_new(struct cluster_view *cv, struct policy_source *ps, struct ledger_watch **out)
{
	struct ledger_watch *lw = calloc(1, sizeof(*lw));

	*out = NULL;
	if (!lw)
		return -ENOMEM;
	lw->cv = cv;
	lw->ps = ps;
	pthread_mutex_init(&lw->mu, NULL);
	*out = lw;
	return 0;
}

static void drop_cache(struct ledger_watch *lw)
{
	ledger_inc_free(lw->inc);
	lw->inc = NULL;
	snapshot_release(lw->vsnap);
	snapshot_release(lw->psnap);
	lw->vsnap = lw->psnap = NULL;
}

void ledger_watch_free(struct ledger_watch *lw)
{
	if (!lw)
		return;
	drop_cache(lw);
	pthread_mutex_destroy(&lw->mu);
	free(lw);
}

static void build_failed(int rc)
{
	log_msg_str(LOG_WARN, "ledger: could not be built", "error", rc == -E2BIG ? "over a cap" : "out of memory");
}

bool ledger_watch_rebuild_due(double since_build_s, double build_s)
{
	return since_build_s >= LEDGER_WATCH_DUTY * build_s;
}

/* The ledger brought to the current view and policy (lw->mu held). Kept
 * as long as the policy is the same: a changed view is an update that
 * recounts what changed (ledger.h, "Kept up to date"); a new policy, the
 * first call and a failed update build whole. may_lag (a metrics scrape):
 * a whole build that failed is tried again only LEDGER_WATCH_DUTY times
 * what it took later, so a ledger over its cap does not take a core. */
static int current(struct ledger_watch *lw, bool may_lag)
{
	struct snapshot *vs = cluster_view_acquire(lw->cv), *ps = policy_source_acquire(lw->ps);
	struct ledger_inc *inc = NULL;
	struct ledger_inc_stats st;
	double t0;
	int rc;

	if (!vs || !ps) {
		snapshot_release(vs);
		snapshot_release(ps);
		return -EAGAIN;
	}
	if (lw->inc && ps == lw->psnap) {
		snapshot_release(ps);
		if (vs == lw->vsnap) {
			snapshot_release(vs);
			return 0;
		}
		t0 = clock_mono_s();
		/* the old view is held until the update has read what changed */
		rc = ledger_inc_update(lw->inc, cluster_view_get(vs), clock_wall_ns());
		lw->update_s = clock_mono_s() - t0;
		lw->built_at = clock_mono_s();
		snapshot_release(lw->vsnap);
		lw->vsnap = vs;
		if (rc) {
			build_failed(rc);
			drop_cache(lw);
			return rc;
		}
		ledger_inc_stats(lw->inc, &st);
		lw->update_nodes = st.last_nodes;
		atomic_fetch_add(&lw->updates, 1);
		return 0;
	}
	if (may_lag && !lw->inc && lw->failed && !ledger_watch_rebuild_due(clock_mono_s() - lw->built_at, lw->build_s)) {
		snapshot_release(vs);
		snapshot_release(ps);
		return -EAGAIN;
	}
	drop_cache(lw);
	t0 = clock_mono_s();
	rc = ledger_inc_new(snapshot_get(ps), LEDGER_WATCH_CAP, &inc);
	if (rc == 0)
		rc = ledger_inc_update(inc, cluster_view_get(vs), clock_wall_ns());
	lw->build_s = clock_mono_s() - t0;
	lw->built_at = clock_mono_s();
	lw->failed = rc != 0;
	if (rc) {
		build_failed(rc);
		ledger_inc_free(inc);
		snapshot_release(vs);
		snapshot_release(ps);
		return rc;
	}
	if (lw->build_s > 1.0)
		log_msg_str(LOG_INFO, "ledger: a slow build", "detail", "more than a second");
	lw->inc = inc;
	lw->vsnap = vs;
	lw->psnap = ps;
	atomic_fetch_add(&lw->builds, 1);
	return 0;
}

int ledger_watch_json(struct ledger_watch *lw, const char *node, bool at_freeze, struct buf *out)
{
	struct str filter = str_from_cstr(node ? node : "");
	struct ledger *l = NULL;
	int rc;

	if (at_freeze) {
		int64_t since = 0;
		struct snapshot *vs = cluster_view_acquire_frozen(lw->cv, &since), *ps;

		if (!vs)
			return -ENOENT;
		ps = policy_source_acquire(lw->ps);
		if (!ps) {
			snapshot_release(vs);
			return -EAGAIN;
		}
		rc = ledger_build(cluster_view_get(vs), snapshot_get(ps), clock_wall_ns(), LEDGER_WATCH_CAP, &l);
		if (rc == 0) {
			/* The ledger as it stood when the freeze began. */
			l->now_ns = since;
			rc = ledger_json(l, filter, out);
		} else {
			build_failed(rc);
		}
		ledger_free(l);
		snapshot_release(ps);
		snapshot_release(vs);
		return rc;
	}
	pthread_mutex_lock(&lw->mu);
	rc = current(lw, false);
	/* one node costs that node: its account and the kept totals */
	if (rc == 0)
		rc = filter.len ? ledger_inc_node(lw->inc, filter, &l) : ledger_inc_ledger(lw->inc, true, &l);
	if (rc == 0)
		rc = ledger_json(l, filter, out);
	ledger_free(l);
	pthread_mutex_unlock(&lw->mu);
	return rc;
}

void ledger_watch_count(struct ledger_watch *lw, const struct verdict *v)
{
	uint32_t i, k;

	if (!lw)
		return;
	for (i = 0; i < v->nviolations; i++) {
		const struct violation *vi = &v->violations[i];

		switch (vi->rule) {
		case RULE_LEDGER_POOL_FRESH:
			if (vi->cause < LEDGER_CAUSE_COUNT)
				atomic_fetch_add_explicit(&lw->pending[vi->cause], 1, memory_order_relaxed);
			break;
		case RULE_LEDGER_DEVICE_DUPLICATE:
			atomic_fetch_add_explicit(&lw->duplicates, 1, memory_order_relaxed);
			break;
		case RULE_LEDGER_NUMA_SPLIT:
			atomic_fetch_add_explicit(&lw->numa_split, 1, memory_order_relaxed);
			break;
		case RULE_LEDGER_POD_AMOUNTS:
			atomic_fetch_add_explicit(vi->cause == LEDGER_AMOUNTS_AMBIGUOUS ? &lw->pod_ambiguous : &lw->pod_amounts,
						  1, memory_order_relaxed);
			break;
		case RULE_LEDGER_POD_OMITTED:
			atomic_fetch_add_explicit(&lw->pod_omitted, 1, memory_order_relaxed);
			break;
		default:
			break;
		}
	}
	for (i = 0; i < v->nundecided && i < VERDICT_MAX_UNDECIDED; i++)
		for (k = 0; k < NUNDECIDED_RULES; k++)
			if (undecided_rules[k] == v->undecided[i].rule && v->undecided[i].reason < LEDGER_REASON_COUNT)
				atomic_fetch_add_explicit(&lw->undecided[k][v->undecided[i].reason], 1,
							  memory_order_relaxed);
}

void ledger_watch_recheck(struct ledger_watch *lw, bool allowed)
{
	if (lw)
		atomic_fetch_add_explicit(&lw->rechecks[allowed ? 0 : 1], 1, memory_order_relaxed);
}

/* --- metrics ------------------------------------------------------------------------- */

/* A resource's amount in its own unit (cores, bytes) from scheduler units. */
static double base(struct str resource, int64_t u)
{
	return str_eq_cstr(resource, "cpu") ? (double)u / 1000.0 : (double)u;
}

struct top {
	const struct ledger_node *n;
	const struct ledger_amount *a;
	int64_t value;
};

static int cmp_top(const void *x, const void *y)
{
	const struct top *a = x, *b = y;

	return a->value > b->value ? -1 : a->value < b->value;
}

enum series { SERIES_OVERCOMMIT, SERIES_DIVERGENCE, SERIES_OMITTED };

/* A node's figure for a series: how far over; the statuses' difference
 * from the charged claims they should name; what no status names. */
static int64_t series_value(enum series k, const struct ledger_amount *a)
{
	switch (k) {
	case SERIES_OVERCOMMIT:
		return a->has_allocatable && a->total > a->allocatable ? a->total - a->allocatable : 0;
	case SERIES_DIVERGENCE:
		return a->dra - a->omitted - a->unbound - a->status;
	case SERIES_OMITTED:
		return a->omitted;
	}
	return 0;
}

static bool series_node(enum series k, const struct ledger_node *nd)
{
	return k == SERIES_OVERCOMMIT ? nd->overcommitted : k == SERIES_DIVERGENCE ? nd->diverging : nd->undercounted;
}


static int node_series(struct buf *out, enum prom_id family, const struct ledger *l, enum series kind)
{
	struct top *top = NULL;
	uint32_t n = 0, cap = 0, i, j;
	int rc = 0;

	for (i = 0; i < l->nnodes && rc == 0; i++) {
		const struct ledger_node *nd = &l->nodes[i];

		if (!series_node(kind, nd))
			continue;
		for (j = 0; j < nd->nresources; j++) {
			const struct ledger_amount *a = &nd->resources[j];
			int64_t v = series_value(kind, a);

			if (v == 0)
				continue;
			if (n == cap) {
				struct top *g = realloc(top, (cap ? cap * 2 : 64) * sizeof(*g));

				if (!g) {
					rc = -ENOMEM;
					break;
				}
				top = g;
				cap = cap ? cap * 2 : 64;
			}
			top[n++] = (struct top){ nd, a, v < 0 ? -v : v };
		}
	}
	if (n)
		qsort(top, n, sizeof(*top), cmp_top);
	if (rc == 0)
		rc = prom_header(out, family);
	for (i = 0; rc == 0 && i < n && i < LEDGER_WATCH_NODE_SERIES; i++) {
		const struct ledger_amount *a = top[i].a;
		struct prom_line pl;

		prom_line_begin(&pl, out, family, NULL);
		prom_line_label(&pl, top[i].n->name.ptr, top[i].n->name.len);
		prom_line_label(&pl, a->resource.ptr, a->resource.len);
		if (kind == SERIES_OMITTED)
			prom_line_label(&pl, "omitted", strlen("omitted"));
		rc = prom_line_end(&pl, "%.17g", base(a->resource, series_value(kind, a)));
	}
	free(top);
	return rc;
}

/* A sample labelled by a resource (and source) of the ledger's totals. */
static int resource_sample(struct buf *out, enum prom_id id, struct str resource, const char *source, double v)
{
	struct prom_line pl;

	prom_line_begin(&pl, out, id, NULL);
	prom_line_label(&pl, resource.ptr, resource.len);
	if (source)
		prom_line_label(&pl, source, strlen(source));
	return prom_line_end(&pl, "%.17g", v);
}

static int render_ledger(struct ledger_watch *lw, struct buf *out)
{
	static const char *const states[] = { "charged", "pending", "unreserved", "old_mapping" };
	struct ledger *l = NULL;
	struct ledger_inc_stats st;
	int64_t now = clock_wall_ns();
	uint32_t i;
	int rc;

	/* every node's account, not the entries: the gauges cost the nodes */
	if ((rc = ledger_inc_ledger(lw->inc, false, &l)) != 0)
		return rc;
	ledger_inc_stats(lw->inc, &st);

	uint32_t claims[] = { l->claims, l->pending, l->unreserved, l->old_mapping };

	rc = prom_header(out, PROM_LEDGER_CAPACITY);
	for (i = 0; rc == 0 && i < l->ntotals; i++)
		rc = resource_sample(out, PROM_LEDGER_CAPACITY, l->totals[i].resource, NULL,
				     base(l->totals[i].resource, l->totals[i].allocatable));
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_USAGE);
	for (i = 0; rc == 0 && i < l->ntotals; i++) {
		rc = resource_sample(out, PROM_LEDGER_USAGE, l->totals[i].resource, "pods",
				     base(l->totals[i].resource, l->totals[i].pods));
		if (rc == 0)
			rc = resource_sample(out, PROM_LEDGER_USAGE, l->totals[i].resource, "dra",
					     base(l->totals[i].resource, l->totals[i].dra));
	}
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_OVERCOMMITTED_NODES, "%u", l->overcommitted);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_UNBALANCED_NODES, "%u", l->diverging);
	if (rc == 0)
		rc = node_series(out, PROM_LEDGER_NODE_OVERCOMMIT, l, SERIES_OVERCOMMIT);
	if (rc == 0)
		rc = node_series(out, PROM_LEDGER_NODE_DIVERGENCE, l, SERIES_DIVERGENCE);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_UNDERCOUNTED_NODES, "%u", l->undercounted);
	if (rc == 0)
		rc = node_series(out, PROM_LEDGER_NODE_UNCOUNTED, l, SERIES_OMITTED);
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_CLAIMS);
	for (i = 0; rc == 0 && i < sizeof(states) / sizeof(states[0]); i++)
		rc = prom_sample(out, PROM_LEDGER_CLAIMS, &states[i], "%u", claims[i]);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_ENTRIES, "%u", l->all_entries);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_MAPPING_AGE_SECONDS, "%.3f",
				 l->mapping_changed_ns ? (double)(now - l->mapping_changed_ns) / 1e9 : -1.0);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_BUILD_SECONDS, "%.6f", lw->build_s);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_UPDATE_SECONDS, "%.6f", lw->update_s);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_UPDATE_NODES, "%u", lw->update_nodes);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_MEMORY_BYTES, "%zu", st.bytes);
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_AGE_SECONDS, "%.3f", clock_mono_s() - lw->built_at);
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_BUILDS_TOTAL);
	if (rc == 0)
		rc = prom_sample(out, PROM_LEDGER_BUILDS_TOTAL, (const char *const[]){ "built" }, "%" PRIu64,
				 (uint64_t)atomic_load(&lw->builds));
	if (rc == 0)
		rc = prom_sample(out, PROM_LEDGER_BUILDS_TOTAL, (const char *const[]){ "updated" }, "%" PRIu64,
				 (uint64_t)atomic_load(&lw->updates));
	ledger_free(l);
	return rc;
}

int ledger_watch_render_metrics(void *ctx, struct buf *out)
{
	static const char *const rechecks[] = { "allowed", "denied" };
	struct ledger_watch *lw = ctx;
	uint32_t i, k;
	int rc;

	pthread_mutex_lock(&lw->mu);
	rc = current(lw, true);
	rc = rc == 0 ? render_ledger(lw, out) : rc == -EAGAIN ? 0 : rc;
	pthread_mutex_unlock(&lw->mu);
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_PENDING_TOTAL);
	for (i = 1; rc == 0 && i < LEDGER_CAUSE_COUNT; i++)
		rc = prom_sample(out, PROM_LEDGER_PENDING_TOTAL, (const char *const[]){ ledger_cause_name((uint8_t)i) },
				 "%" PRIu64, (uint64_t)atomic_load(&lw->pending[i]));
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_DUPLICATES_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&lw->duplicates));
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_NUMA_SPLIT_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&lw->numa_split));
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_POD_AMOUNTS_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&lw->pod_amounts));
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_POD_OMITTED_TOTAL, "%" PRIu64, (uint64_t)atomic_load(&lw->pod_omitted));
	if (rc == 0)
		rc = prom_scalar(out, PROM_LEDGER_POD_AMOUNTS_AMBIGUOUS_TOTAL, "%" PRIu64,
				 (uint64_t)atomic_load(&lw->pod_ambiguous));
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_UNDECIDED_TOTAL);
	for (k = 0; rc == 0 && k < NUNDECIDED_RULES; k++)
		for (i = 1; rc == 0 && i < LEDGER_REASON_COUNT; i++)
			rc = prom_sample(out, PROM_LEDGER_UNDECIDED_TOTAL,
					 (const char *const[]){ rule_name(undecided_rules[k]), ledger_reason_name((uint8_t)i) },
					 "%" PRIu64, (uint64_t)atomic_load(&lw->undecided[k][i]));
	if (rc == 0)
		rc = prom_header(out, PROM_LEDGER_RECHECKS_TOTAL);
	for (i = 0; rc == 0 && i < 2; i++)
		rc = prom_sample(out, PROM_LEDGER_RECHECKS_TOTAL, &rechecks[i], "%" PRIu64,
				 (uint64_t)atomic_load(&lw->rechecks[i]));
	return rc;
}
