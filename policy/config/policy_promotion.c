/* policy_promotion.c - the policy's promotion section: the thresholds of
 * the readiness report (policy/readiness.h).
 *
 *   promotion:
 *     zeroDivergenceWindow: 24h      # longest window without a divergence, at least
 *     pendingSLO: {p50: 30s, p99: 5m}   # Pod creation to binding, Pods with claims
 *     capacityHeadroomPercent: 10    # a node within 10 % of allocatable fails
 *     requireRollbackDrill: true     # a freeze on and off in the window
 *     requireRestarts: true          # driver or node restarts in the window
 *     drivers: [gpu.example.com]     # each must have published mappings */
#include <string.h>

#include "policy_impl.h"

static const char *const promotion_keys[] = {
	"zeroDivergenceWindow", "pendingSLO", "capacityHeadroomPercent", "requireRollbackDrill",
	"requireRestarts", "drivers", NULL
};
static const char *const pending_keys[] = { "p50", "p99", NULL };

static void read_duration(struct loader *l, const struct doc_node *map, const char *key, uint32_t min_s,
			  uint32_t max_s, uint32_t *out)
{
	const struct doc_node *v = doc_map_get(map, key);
	size_t saved;

	if (!v || v->type == DOC_NULL || l->stop)
		return;
	saved = policy_path_push_key(l, str_from_cstr(key));
	policy_read_duration(l, v, min_s, max_s, out);
	policy_path_pop(l, saved);
}

static void read_bool(struct loader *l, const struct doc_node *map, const char *key, bool *out)
{
	const struct doc_node *v = doc_map_get(map, key);
	size_t saved;

	if (!v || v->type == DOC_NULL || l->stop)
		return;
	saved = policy_path_push_key(l, str_from_cstr(key));
	if (policy_expect(l, v, DOC_BOOL))
		*out = v->boolean;
	policy_path_pop(l, saved);
}

static void read_percent(struct loader *l, const struct doc_node *map, const char *key, uint32_t *out)
{
	const struct doc_node *v = doc_map_get(map, key);
	uint32_t pct = 0;
	size_t saved, i;

	if (!v || v->type == DOC_NULL || l->stop)
		return;
	saved = policy_path_push_key(l, str_from_cstr(key));
	for (i = 0; v->type == DOC_NUMBER && i < v->text.len && i < 4 && v->text.ptr[i] >= '0' &&
		    v->text.ptr[i] <= '9'; i++)
		pct = pct * 10 + (uint32_t)(v->text.ptr[i] - '0');
	if (v->type != DOC_NUMBER || i == 0 || i != v->text.len || pct > 99)
		policy_fail(l, v->line, v->col, "\"%.*s\" is not a whole percentage from 0 to 99", STR_FMT(v->text));
	else
		*out = pct;
	policy_path_pop(l, saved);
}

void policy_load_promotion(struct loader *l, const struct doc_node *n)
{
	struct promotion_policy *p = &l->p->promotion;
	const struct doc_node *v;
	size_t saved;

	if (n->type == DOC_NULL || !policy_expect(l, n, DOC_MAP))
		return;
	policy_check_keys(l, n, promotion_keys);
	read_duration(l, n, "zeroDivergenceWindow", 1, POLICY_PROMOTION_WINDOW_MAX_S, &p->zero_divergence_s);
	v = doc_map_get(n, "pendingSLO");
	if (v && v->type != DOC_NULL && !l->stop) {
		saved = policy_path_push_key(l, STR_LIT("pendingSLO"));
		if (policy_expect(l, v, DOC_MAP)) {
			policy_check_keys(l, v, pending_keys);
			read_duration(l, v, "p50", 1, POLICY_PROMOTION_PENDING_MAX_S, &p->pending_p50_s);
			read_duration(l, v, "p99", 1, POLICY_PROMOTION_PENDING_MAX_S, &p->pending_p99_s);
			if (!l->stop && p->pending_p99_s < p->pending_p50_s)
				policy_fail(l, v->line, v->col, "p99 (%us) is below p50 (%us): the 99th percentile "
					    "cannot be faster than the median", p->pending_p99_s, p->pending_p50_s);
		}
		policy_path_pop(l, saved);
	}
	read_percent(l, n, "capacityHeadroomPercent", &p->capacity_headroom_pct);
	read_bool(l, n, "requireRollbackDrill", &p->require_rollback_drill);
	read_bool(l, n, "requireRestarts", &p->require_restarts);
	v = doc_map_get(n, "drivers");
	if (v && !l->stop) {
		saved = policy_path_push_key(l, STR_LIT("drivers"));
		policy_read_string_list(l, v, &p->drivers, NULL);
		policy_path_pop(l, saved);
	}
}
