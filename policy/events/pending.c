/* pending.c - claims the guard holds back now, and for how long. */
#include "pending.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jw.h"
#include "timefmt.h"

struct pending_claim {
	char namespace[64];
	char name[254];
	char uid[64];
	char pod[254];
	enum rule_id rule;            /* the last refusing rule */
	int64_t since_ns;             /* the first refusal */
	int64_t last_ns;              /* the last refusal */
	uint64_t refusals;
	uint32_t slot;                /* its slot in the index */
};

struct pending_table {
	uint32_t max, n;
	int64_t idle_ns;
	struct pending_claim *claims; /* [0..n), in order of since_ns */
	/* (namespace, name) -> position + 1 in claims, 0 empty; open
	 * addressing, at most half full, rebuilt when a sweep removes (in
	 * O(claims): each knows its slot, so the index is never cleared whole) */
	uint32_t *index;
	uint32_t mask;
};

static const double bucket_s[PENDING_BUCKETS] = { 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600 };

double pending_bucket_le(size_t i)
{
	return bucket_s[i];
}

void pending_bucket_label(size_t i, char out[static PENDING_LE_MAX])
{
	if (i < PENDING_BUCKETS)
		snprintf(out, PENDING_LE_MAX, "%g", bucket_s[i]);
	else
		snprintf(out, PENDING_LE_MAX, "+Inf");
}

void pending_hist_observe(struct pending_hist *h, enum rule_id rule, double seconds)
{
	int k = events_rule_index(rule);
	size_t b;

	if (k < 0)
		return;
	for (b = 0; b < PENDING_BUCKETS && seconds > bucket_s[b]; b++)
		;
	h->counts[k][b]++;
	h->sum[k] += seconds;
}

static uint32_t key_hash(const char *ns, const char *name)
{
	uint32_t h = 2166136261u;

	for (; *ns; ns++)
		h = (h ^ (unsigned char)*ns) * 16777619u;
	h = (h ^ '/') * 16777619u;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

/* The slot holding (ns, name), or the empty slot where it would go. */
static uint32_t *slot_of(const struct pending_table *t, const char *ns, const char *name)
{
	uint32_t i = key_hash(ns, name) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		const struct pending_claim *p;

		if (!t->index[i])
			return &t->index[i];
		p = &t->claims[t->index[i] - 1];
		if (strcmp(p->namespace, ns) == 0 && strcmp(p->name, name) == 0)
			return &t->index[i];
	}
}

/* After a sweep removed claims: every slot the claims held before it is
 * already empty (removed) or emptied here (kept, now moved), so the kept
 * ones go in again as into a new index. */
static void reindex(struct pending_table *t)
{
	uint32_t i, *slot;

	for (i = 0; i < t->n; i++)
		t->index[t->claims[i].slot] = 0;
	for (i = 0; i < t->n; i++) {
		slot = slot_of(t, t->claims[i].namespace, t->claims[i].name);
		*slot = i + 1;
		t->claims[i].slot = (uint32_t)(slot - t->index);
	}
}

int pending_table_new(uint32_t max, int64_t idle_ns, struct pending_table **out)
{
	struct pending_table *t;
	size_t slots = 2;

	*out = NULL;
	if (!max || max > (1u << 28) || idle_ns <= 0)
		return -EINVAL;
	while (slots < (size_t)max * 2)
		slots *= 2;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->claims = calloc(max, sizeof(*t->claims));
	t->index = calloc(slots, sizeof(*t->index));
	if (!t->claims || !t->index) {
		pending_table_free(t);
		return -ENOMEM;
	}
	t->max = max;
	t->mask = (uint32_t)(slots - 1);
	t->idle_ns = idle_ns;
	*out = t;
	return 0;
}

void pending_table_free(struct pending_table *t)
{
	if (!t)
		return;
	free(t->index);
	free(t->claims);
	free(t);
}

uint32_t pending_table_count(const struct pending_table *t)
{
	return t->n;
}

int pending_table_refused(struct pending_table *t, const struct events_report *r)
{
	struct pending_claim *p;
	uint32_t *slot;

	if (!r->pending)
		return 0;
	slot = slot_of(t, r->claim.namespace, r->claim.name);
	if (*slot) {
		p = &t->claims[*slot - 1];
		p->rule = r->rule;
		if (r->observed_ns > p->last_ns)
			p->last_ns = r->observed_ns;
		p->refusals++;
		if (!p->pod[0] && r->pod[0])
			memcpy(p->pod, r->pod, sizeof(p->pod));
		if (!p->uid[0] && r->claim.uid[0])
			memcpy(p->uid, r->claim.uid, sizeof(p->uid));
		return 0;
	}
	if (t->n == t->max)
		return -E2BIG;
	*slot = t->n + 1;
	p = &t->claims[t->n++];
	memset(p, 0, sizeof(*p));
	memcpy(p->namespace, r->claim.namespace, sizeof(p->namespace));
	memcpy(p->name, r->claim.name, sizeof(p->name));
	memcpy(p->uid, r->claim.uid, sizeof(p->uid));
	memcpy(p->pod, r->pod, sizeof(p->pod));
	p->rule = r->rule;
	p->since_ns = p->last_ns = r->observed_ns;
	p->refusals = 1;
	p->slot = (uint32_t)(slot - t->index);
	return 0;
}

uint32_t pending_table_sweep(struct pending_table *t, const struct view *v, int64_t now_ns, pending_done_fn *done,
			     void *ctx)
{
	uint32_t i, kept = 0;

	for (i = 0; i < t->n; i++) {
		struct pending_claim *p = &t->claims[i];
		const struct view_claim *c = view_claim_get(v, str_from_cstr(p->namespace), str_from_cstr(p->name));
		bool other = c && p->uid[0] && !view_uid_eq(&c->uid, str_from_cstr(p->uid));

		if (c && !other && c->allocated) {
			int64_t at = c->allocated_ns ? c->allocated_ns : now_ns;

			if (done)
				done(ctx, p->rule, at > p->since_ns ? (double)(at - p->since_ns) / 1e9 : 0.0);
			t->index[p->slot] = 0;
			continue;
		}
		if (other || (!c && now_ns - p->last_ns >= t->idle_ns)) {
			t->index[p->slot] = 0;
			continue;
		}
		if (kept != i)
			t->claims[kept] = *p;
		kept++;
	}
	if (kept != t->n) {
		t->n = kept;
		reindex(t);
	}
	return kept;
}

int pending_table_json(const struct pending_table *t, int64_t now_ns, struct buf *out)
{
	struct jw w;
	uint32_t i;

	jw_init(&w, out);
	jw_array_begin(&w);
	for (i = 0; i < t->n; i++) {
		const struct pending_claim *p = &t->claims[i];
		char reason[EVENTS_REASON_MAX], since[TIMEFMT_MAX], last[TIMEFMT_MAX];

		events_reason(p->rule, reason);
		timefmt_rfc3339(p->since_ns, since);
		timefmt_rfc3339(p->last_ns, last);
		jw_object_begin(&w);
		jw_kcstr(&w, "namespace", p->namespace);
		jw_kcstr(&w, "name", p->name);
		jw_kcstr(&w, "uid", p->uid);
		jw_kcstr(&w, "pod", p->pod);
		jw_kcstr(&w, "reason", reason);
		jw_kcstr(&w, "rule", rule_name(p->rule));
		jw_kcstr(&w, "since", since);
		jw_kfixed(&w, "seconds", now_ns > p->since_ns ? (double)(now_ns - p->since_ns) / 1e9 : 0.0, 3);
		jw_kcstr(&w, "lastRefused", last);
		jw_kuint(&w, "refusals", p->refusals);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	return jw_finish(&w);
}
