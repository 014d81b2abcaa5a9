/* pending.c - claims the guard holds back now, and for how long. */
#include "pending.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "jw.h"
#include "timefmt.h"

/* Claims indexed before the index first grows. */
#define PENDING_INDEX_RESERVE 1024

struct pending_claim {
	char namespace[64];
	char name[254];
	char uid[64];
	char pod[254];
	/* Lengths and the UID parsed once: the sweep compares every held
	 * claim with the view, each time. */
	uint8_t ns_len, uid_len;
	uint16_t name_len;
	struct view_uid_probe uid_probe;
	enum rule_id rule;            /* the last refusing rule */
	int64_t since_ns;             /* the first refusal */
	int64_t last_ns;              /* the last refusal */
	uint64_t refusals;
};

/* Claims the table has room for at first: the usual few held at once.
 * It doubles from there up to max, so a table sized for a busy cluster
 * (a claim is 664 bytes: 66 MB at replay's 100,000) costs what it holds. */
#define PENDING_INITIAL 64

struct pending_table {
	uint32_t max, n, cap;         /* cap: claims' room, at most max */
	int64_t idle_ns;
	struct pending_claim *claims; /* [0..n), in order of since_ns */
	struct hmap index;            /* (namespace, name) -> position in claims */
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

struct claim_key {
	const char *ns, *name;
};

static uint32_t key_hash(const char *ns, const char *name)
{
	uint32_t h = hmap_hash_add_cstr(HMAP_HASH_INIT, ns);

	h = hmap_hash_add(h, "/", 1);
	return hmap_hash_finish(hmap_hash_add_cstr(h, name));
}

/* The UID's length and parsed form, after p->uid was written. */
static void note_uid(struct pending_claim *p)
{
	p->uid_len = (uint8_t)strnlen(p->uid, sizeof(p->uid));
	view_uid_probe_set(&p->uid_probe, (struct str){ p->uid, p->uid_len });
}

static bool claim_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct pending_table *t = ctx;
	const struct claim_key *k = key;

	return strcmp(t->claims[val].namespace, k->ns) == 0 && strcmp(t->claims[val].name, k->name) == 0;
}

/* The claim at position i leaves the index (to_pos UINT32_MAX) or moves
 * down to to_pos. A sweep calls this in increasing i, and every entry of
 * the index then names a position that holds its own claim: the ones not
 * reached yet are where they were, the ones moved are where they went (a
 * position below i held a claim that left or moved further down). So the
 * index is kept in O(claims removed or moved), never cleared whole. */
static void reindex_one(struct pending_table *t, uint32_t i, uint32_t to_pos)
{
	struct claim_key k = { t->claims[i].namespace, t->claims[i].name };
	uint32_t h = key_hash(k.ns, k.name);

	if (to_pos == UINT32_MAX)
		hmap_del(&t->index, h, &k, NULL);
	else
		hmap_put(&t->index, h, &k, to_pos);  /* a replacement: cannot fail */
}

int pending_table_new(uint32_t max, int64_t idle_ns, struct pending_table **out)
{
	struct pending_table *t;

	*out = NULL;
	if (!max || max > (1u << 28) || idle_ns <= 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cap = max < PENDING_INITIAL ? max : PENDING_INITIAL;
	t->claims = calloc(t->cap, sizeof(*t->claims));
	/* Room for the usual few without growing; more grow the claims and
	 * the index as they come, up to max. */
	if (!t->claims || hmap_init(&t->index, max, claim_eq, t) != 0 ||
	    hmap_reserve(&t->index, PENDING_INDEX_RESERVE) != 0) {
		pending_table_free(t);
		return -ENOMEM;
	}
	t->max = max;
	t->idle_ns = idle_ns;
	*out = t;
	return 0;
}

void pending_table_free(struct pending_table *t)
{
	if (!t)
		return;
	hmap_fini(&t->index);
	free(t->claims);
	free(t);
}

uint32_t pending_table_count(const struct pending_table *t)
{
	return t->n;
}

int pending_table_refused(struct pending_table *t, const struct events_report *r)
{
	struct claim_key k = { r->claim.namespace, r->claim.name };
	uint32_t h, at;
	struct pending_claim *p;
	int rc;

	if (!r->pending)
		return 0;
	h = key_hash(k.ns, k.name);
	if (hmap_find(&t->index, h, &k, &at) == 0) {
		p = &t->claims[at];
		p->rule = r->rule;
		if (r->observed_ns > p->last_ns)
			p->last_ns = r->observed_ns;
		p->refusals++;
		if (!p->pod[0] && r->pod[0])
			memcpy(p->pod, r->pod, sizeof(p->pod));
		if (!p->uid[0] && r->claim.uid[0]) {
			memcpy(p->uid, r->claim.uid, sizeof(p->uid));
			note_uid(p);
		}
		return 0;
	}
	if (t->n == t->max)
		return -E2BIG;
	if (t->n == t->cap) {
		/* The index names positions, so the claims may move. */
		uint32_t cap = t->cap > t->max / 2 ? t->max : t->cap * 2;
		struct pending_claim *grown = realloc(t->claims, (size_t)cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->claims = grown;
		t->cap = cap;
	}
	/* The record first: the map's compare reads it. */
	p = &t->claims[t->n];
	memset(p, 0, sizeof(*p));
	memcpy(p->namespace, r->claim.namespace, sizeof(p->namespace));
	memcpy(p->name, r->claim.name, sizeof(p->name));
	memcpy(p->uid, r->claim.uid, sizeof(p->uid));
	memcpy(p->pod, r->pod, sizeof(p->pod));
	p->ns_len = (uint8_t)strnlen(p->namespace, sizeof(p->namespace));
	p->name_len = (uint16_t)strnlen(p->name, sizeof(p->name));
	note_uid(p);
	p->rule = r->rule;
	p->since_ns = p->last_ns = r->observed_ns;
	p->refusals = 1;
	if ((rc = hmap_put(&t->index, h, &k, t->n)) != 0)
		return rc;
	t->n++;
	return 0;
}

uint32_t pending_table_sweep(struct pending_table *t, const struct view *v, int64_t now_ns, pending_done_fn *done,
			     void *ctx)
{
	uint32_t i, kept = 0;

	for (i = 0; i < t->n; i++) {
		struct pending_claim *p = &t->claims[i];
		const struct view_claim *c = view_claim_get(v, (struct str){ p->namespace, p->ns_len },
							    (struct str){ p->name, p->name_len });
		bool other = c && p->uid_len &&
			     !view_uid_eq_probe(&c->uid, (struct str){ p->uid, p->uid_len }, &p->uid_probe);

		if (c && !other && c->allocated) {
			int64_t at = c->allocated_ns ? c->allocated_ns : now_ns;

			if (done)
				done(ctx, p->rule, at > p->since_ns ? (double)(at - p->since_ns) / 1e9 : 0.0);
			reindex_one(t, i, UINT32_MAX);
			continue;
		}
		if (other || (!c && now_ns - p->last_ns >= t->idle_ns)) {
			reindex_one(t, i, UINT32_MAX);
			continue;
		}
		if (kept != i) {
			reindex_one(t, i, kept);
			t->claims[kept] = *p;
		}
		kept++;
	}
	t->n = kept;
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
