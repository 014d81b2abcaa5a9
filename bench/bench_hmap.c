/* bench_hmap.c - the hash index (policy/hmap) beside the tables it
 * replaced, on the same keys and operations.
 *
 *   bench_hmap [-n KEYS] [-r ROUNDS]      defaults 50000 keys, 9 rounds
 *
 * Each case runs its old table (a faithful copy of the structure the
 * module used before: its slot layout, probing, growth and key compare)
 * and the same module's use of hmap in alternating rounds, and prints the
 * median ns per operation of each and the ratio hmap/old (below 1: hmap is
 * faster). Times are the thread's CPU time, so a busy machine's scheduling
 * does not land on one side; still, only the ratio means anything.
 *
 *   pending      (namespace, name) -> claim: a 4-byte index of positions,
 *                2x the cap, strcmp on every probe (hmap: 1024 reserved, then
 *                grown)
 *   replay_store "<res>/<ns>/<name>" -> text: chained buckets, one malloc'd
 *                entry per key, doubled when count reaches the buckets (from
 *                1024; hmap: 1024 entries reserved)
 *   gate_recent  Pod uid (16 bytes) -> release time: records inline in the
 *                slots, linear probing, memcmp
 *   event_cache  events key -> series: a scan of every slot comparing the
 *                stored 64-bit hash, then strcmp
 * Each does KEYS inserts, 4 x KEYS lookups (half hits, half misses) and
 * KEYS / 2 deletes where the module deletes (replay_store); ns per
 * operation counts 5 operations a key. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hmap.h"

#define KEY_MAX 80

struct keys {
	uint32_t n;
	char (*ns)[32];
	char (*name)[48];
	char (*joined)[KEY_MAX];      /* "0/<ns>/<name>" */
	uint8_t (*uid)[16];
	uint32_t *hash_joined;
};

static volatile uint64_t sink;

/* --- pending ---------------------------------------------------------------------- */

struct old_pending {
	uint32_t *index, mask;
	uint32_t (*key)[2];           /* key index per claim position */
	const struct keys *k;
	uint32_t n;
};

static uint32_t old_pending_hash(const char *ns, const char *name)
{
	uint32_t h = 2166136261u;

	for (; *ns; ns++)
		h = (h ^ (unsigned char)*ns) * 16777619u;
	h = (h ^ '/') * 16777619u;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

static uint32_t *old_pending_slot(struct old_pending *t, const char *ns, const char *name)
{
	uint32_t i = old_pending_hash(ns, name) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		uint32_t p;

		if (!t->index[i])
			return &t->index[i];
		p = t->key[t->index[i] - 1][0];
		if (strcmp(t->k->ns[p], ns) == 0 && strcmp(t->k->name[p], name) == 0)
			return &t->index[i];
	}
}

static void run_old_pending(const struct keys *k)
{
	struct old_pending t = { .k = k };
	size_t slots = 2;
	uint32_t i, found = 0;

	while (slots < (size_t)k->n * 2)
		slots *= 2;
	t.index = calloc(slots, sizeof(*t.index));
	t.key = calloc(k->n, sizeof(*t.key));
	t.mask = (uint32_t)(slots - 1);
	for (i = 0; i < k->n; i++) {
		uint32_t *s = old_pending_slot(&t, k->ns[i], k->name[i]);

		t.key[t.n][0] = i;
		*s = ++t.n;
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		/* A miss: the name of one key with the namespace of another. */
		const char *ns = i % 2 ? k->ns[(j + 1) % k->n] : k->ns[j];

		found += *old_pending_slot(&t, ns, k->name[j]) != 0;
	}
	sink += found;
	free(t.index);
	free(t.key);
}

struct new_pending {
	struct hmap m;
	const struct keys *k;
	uint32_t *key;
};

struct pkey {
	const char *ns, *name;
};

static bool new_pending_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct new_pending *t = ctx;
	const struct pkey *pk = key;
	uint32_t p = t->key[val];

	return strcmp(t->k->ns[p], pk->ns) == 0 && strcmp(t->k->name[p], pk->name) == 0;
}

static uint32_t new_pending_hash(const char *ns, const char *name)
{
	uint32_t h = hmap_hash_add_cstr(HMAP_HASH_INIT, ns);

	h = hmap_hash_add(h, "/", 1);
	return hmap_hash_finish(hmap_hash_add_cstr(h, name));
}

static void run_new_pending(const struct keys *k)
{
	struct new_pending t = { .k = k };
	uint32_t i, v, found = 0;

	t.key = calloc(k->n, sizeof(*t.key));
	hmap_init(&t.m, k->n, new_pending_eq, &t);
	hmap_reserve(&t.m, 1024);
	for (i = 0; i < k->n; i++) {
		struct pkey pk = { k->ns[i], k->name[i] };

		t.key[i] = i;
		hmap_put(&t.m, new_pending_hash(pk.ns, pk.name), &pk, i);
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		struct pkey pk = { i % 2 ? k->ns[(j + 1) % k->n] : k->ns[j], k->name[j] };

		found += hmap_find(&t.m, new_pending_hash(pk.ns, pk.name), &pk, &v) == 0;
	}
	sink += found;
	hmap_fini(&t.m);
	free(t.key);
}

/* --- replay_store ------------------------------------------------------------------- */

struct old_entry {
	struct old_entry *next;
	uint32_t hash, key_len;
	char key[];
};

struct old_store {
	struct old_entry **b;
	size_t nb, count;
};

static uint32_t old_store_hash(const char *k, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)k[i]) * 16777619u;
	return h;
}

static struct old_entry **old_store_find(struct old_store *s, const char *key, size_t len, uint32_t h)
{
	struct old_entry **p = &s->b[h & (s->nb - 1)];

	for (; *p; p = &(*p)->next)
		if ((*p)->hash == h && (*p)->key_len == len && memcmp((*p)->key, key, len) == 0)
			return p;
	return p;
}

static void old_store_grow(struct old_store *s)
{
	size_t n = s->nb * 2, i;
	struct old_entry **b = calloc(n, sizeof(*b));

	for (i = 0; i < s->nb; i++) {
		struct old_entry *e = s->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(s->b);
	s->b = b;
	s->nb = n;
}

static void run_old_store(const struct keys *k)
{
	struct old_store s = { calloc(1024, sizeof(struct old_entry *)), 1024, 0 };
	uint32_t i, found = 0;

	for (i = 0; i < k->n; i++) {
		const char *key = k->joined[i];
		size_t len = strlen(key);
		uint32_t h = old_store_hash(key, len);
		struct old_entry **p = old_store_find(&s, key, len, h), *e;

		if (s.count >= s.nb) {
			old_store_grow(&s);
			p = old_store_find(&s, key, len, h);
		}
		e = malloc(sizeof(*e) + len);
		e->hash = h;
		e->key_len = (uint32_t)len;
		memcpy(e->key, key, len);
		e->next = NULL;
		*p = e;
		s.count++;
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		char miss[KEY_MAX];
		const char *key = k->joined[j];
		size_t len = strlen(key);

		if (i % 2) {
			memcpy(miss, key, len);
			miss[0] = '1';
			key = miss;
		}
		found += *old_store_find(&s, key, len, old_store_hash(key, len)) != NULL;
	}
	for (i = 0; i < k->n; i += 2) {
		size_t len = strlen(k->joined[i]);
		struct old_entry **p = old_store_find(&s, k->joined[i], len, old_store_hash(k->joined[i], len)), *e = *p;

		*p = e->next;
		free(e);
		s.count--;
	}
	sink += found;
	for (i = 0; i < s.nb; i++) {
		struct old_entry *e = s.b[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(s.b);
}

struct new_entry {
	uint32_t key_len;
	char key[];
};

struct new_store {
	struct hmap m;
	struct new_entry **e;         /* by value; NULL in a hole */
	uint32_t *holes, nholes, used;
};

struct skey {
	const char *p;
	size_t len;
};

static bool new_store_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct new_store *s = ctx;
	const struct skey *sk = key;

	return s->e[val]->key_len == sk->len && memcmp(s->e[val]->key, sk->p, sk->len) == 0;
}

static void run_new_store(const struct keys *k)
{
	struct new_store s = { .e = calloc(k->n, sizeof(struct new_entry *)), .holes = calloc(k->n, sizeof(uint32_t)) };
	uint32_t i, v, found = 0;

	hmap_init(&s.m, k->n, new_store_eq, &s);
	hmap_reserve(&s.m, 1024);
	for (i = 0; i < k->n; i++) {
		struct skey sk = { k->joined[i], strlen(k->joined[i]) };
		struct new_entry *e = malloc(sizeof(*e) + sk.len);
		uint32_t at = s.nholes ? s.holes[--s.nholes] : s.used++;

		e->key_len = (uint32_t)sk.len;
		memcpy(e->key, sk.p, sk.len);
		s.e[at] = e;
		hmap_put(&s.m, hmap_hash(sk.p, sk.len), &sk, at);
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		char miss[KEY_MAX];
		struct skey sk = { k->joined[j], strlen(k->joined[j]) };

		if (i % 2) {
			memcpy(miss, sk.p, sk.len);
			miss[0] = '1';
			sk.p = miss;
		}
		found += hmap_find(&s.m, hmap_hash(sk.p, sk.len), &sk, &v) == 0;
	}
	for (i = 0; i < k->n; i += 2) {
		struct skey sk = { k->joined[i], strlen(k->joined[i]) };

		if (hmap_del(&s.m, hmap_hash(sk.p, sk.len), &sk, &v) != 0)
			continue;
		free(s.e[v]);
		s.e[v] = NULL;
		s.holes[s.nholes++] = v;
	}
	sink += found;
	for (i = 0; i < s.used; i++)
		free(s.e[i]);
	free(s.e);
	free(s.holes);
	hmap_fini(&s.m);
}

/* --- gate_recent ------------------------------------------------------------------- */

struct old_recent {
	uint8_t uid[16];
	int64_t at_ms;
};

static struct old_recent *old_recent_find(struct old_recent *t, uint32_t cap, const uint8_t uid[16], bool insert)
{
	uint32_t h = 2166136261u, i, mask = cap - 1;

	for (i = 0; i < 16; i++)
		h = (h ^ uid[i]) * 16777619u;
	for (i = h & mask;; i = (i + 1) & mask) {
		if (t[i].at_ms == 0)
			return insert ? &t[i] : NULL;
		if (memcmp(t[i].uid, uid, 16) == 0)
			return &t[i];
	}
}

static void run_old_recent(const struct keys *k)
{
	uint32_t cap = 1024, n = 0, i, found = 0;
	struct old_recent *t = calloc(cap, sizeof(*t));

	for (i = 0; i < k->n; i++) {
		struct old_recent *r;

		if ((n + 1) * 2 >= cap) {
			struct old_recent *old = t;
			uint32_t oc = cap, j;

			cap *= 2;
			t = calloc(cap, sizeof(*t));
			for (j = 0; j < oc; j++)
				if (old[j].at_ms)
					*old_recent_find(t, cap, old[j].uid, true) = old[j];
			free(old);
		}
		r = old_recent_find(t, cap, k->uid[i], true);
		memcpy(r->uid, k->uid[i], 16);
		r->at_ms = 1 + i;
		n++;
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		uint8_t uid[16];

		memcpy(uid, k->uid[j], 16);
		uid[15] ^= (uint8_t)(i % 2) << 7;
		found += old_recent_find(t, cap, uid, false) != NULL;
	}
	sink += found;
	free(t);
}

struct new_recent {
	struct hmap m;
	struct old_recent *r;
};

static bool new_recent_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct new_recent *t = ctx;

	return memcmp(t->r[val].uid, key, 16) == 0;
}

static void run_new_recent(const struct keys *k)
{
	struct new_recent t = { .r = calloc(k->n, sizeof(struct old_recent)) };
	uint32_t i, v, found = 0;

	hmap_init(&t.m, k->n, new_recent_eq, &t);
	for (i = 0; i < k->n; i++) {
		memcpy(t.r[i].uid, k->uid[i], 16);
		t.r[i].at_ms = 1 + i;
		hmap_put(&t.m, hmap_hash(k->uid[i], 16), k->uid[i], i);
	}
	for (i = 0; i < 4 * k->n; i++) {
		uint32_t j = (i * 2654435761u) % k->n;
		uint8_t uid[16];

		memcpy(uid, k->uid[j], 16);
		uid[15] ^= (uint8_t)(i % 2) << 7;
		found += hmap_find(&t.m, hmap_hash(uid, 16), uid, &v) == 0;
	}
	sink += found;
	hmap_fini(&t.m);
	free(t.r);
}

/* --- event_cache ------------------------------------------------------------------- */

/* The cache holds at most max_series (1024 by default) series: its case
 * uses at most that many keys. */
#define SERIES_MAX 1024

struct old_series {
	uint64_t hash;
	const char *key;
};

static uint64_t hash64(const char *s)
{
	uint64_t h = 1469598103934665603u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static void run_old_events(const struct keys *k)
{
	uint32_t n = k->n < SERIES_MAX ? k->n : SERIES_MAX, i, j, found = 0;
	struct old_series *s = calloc(SERIES_MAX, sizeof(*s));

	for (i = 0; i < n; i++) {
		uint64_t h = hash64(k->joined[i]);
		uint32_t slot = UINT32_MAX;

		for (j = 0; j < SERIES_MAX; j++) {
			if (!s[j].key) {
				if (slot == UINT32_MAX)
					slot = j;
				continue;
			}
			if (s[j].hash == h && strcmp(s[j].key, k->joined[i]) == 0)
				break;
		}
		s[slot].hash = h;
		s[slot].key = k->joined[i];
	}
	for (i = 0; i < 4 * n; i++) {
		const char *key = k->joined[(i * 2654435761u) % (i % 2 ? k->n : n)];
		uint64_t h = hash64(key);

		for (j = 0; j < SERIES_MAX; j++)
			if (s[j].key && s[j].hash == h && strcmp(s[j].key, key) == 0) {
				found++;
				break;
			}
	}
	sink += found;
	free(s);
}

struct new_events {
	struct hmap m;
	const char **key;
};

static bool new_events_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct new_events *t = ctx;

	return strcmp(t->key[val], key) == 0;
}

static void run_new_events(const struct keys *k)
{
	uint32_t n = k->n < SERIES_MAX ? k->n : SERIES_MAX, i, v, found = 0;
	struct new_events t = { .key = calloc(SERIES_MAX, sizeof(char *)) };

	hmap_init(&t.m, SERIES_MAX, new_events_eq, &t);
	for (i = 0; i < n; i++) {
		t.key[i] = k->joined[i];
		hmap_put(&t.m, hmap_hash(k->joined[i], strlen(k->joined[i])), k->joined[i], i);
	}
	for (i = 0; i < 4 * n; i++) {
		const char *key = k->joined[(i * 2654435761u) % (i % 2 ? k->n : n)];

		found += hmap_find(&t.m, hmap_hash(key, strlen(key)), key, &v) == 0;
	}
	sink += found;
	hmap_fini(&t.m);
	free(t.key);
}

/* --- driver ------------------------------------------------------------------------ */

struct bench_case {
	const char *name;
	void (*old_run)(const struct keys *k);
	void (*new_run)(const struct keys *k);
	uint32_t ops_per_key;         /* operations per key, to report ns per operation */
};

static const struct bench_case cases[] = {
	{ "pending", run_old_pending, run_new_pending, 5 },
	{ "replay_store", run_old_store, run_new_store, 5 },
	{ "gate_recent", run_old_recent, run_new_recent, 5 },
	{ "event_cache", run_old_events, run_new_events, 5 },
};

static int keys_make(struct keys *k, uint32_t n)
{
	uint32_t i;
	uint64_t x = 0x9e3779b97f4a7c15u;

	k->n = n;
	k->ns = calloc(n, sizeof(*k->ns));
	k->name = calloc(n, sizeof(*k->name));
	k->joined = calloc(n, sizeof(*k->joined));
	k->uid = calloc(n, sizeof(*k->uid));
	if (!k->ns || !k->name || !k->joined || !k->uid)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int b;

		snprintf(k->ns[i], sizeof(k->ns[i]), "ns-%03u", i % 300);
		snprintf(k->name[i], sizeof(k->name[i]), "claim-%08u-gpu", i);
		snprintf(k->joined[i], sizeof(k->joined[i]), "0/%s/%s", k->ns[i], k->name[i]);
		for (b = 0; b < 16; b++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			k->uid[i][b] = (uint8_t)x;
		}
		k->uid[i][15] &= 0x7f;  /* the misses set this bit */
	}
	return 0;
}

static void keys_free(struct keys *k)
{
	free(k->ns);
	free(k->name);
	free(k->joined);
	free(k->uid);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	uint32_t n = 50000, rounds = 9, r;
	struct keys k;
	double *t_old, *t_new, *ratio;
	size_t c;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n': n = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'r': rounds = (uint32_t)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: bench_hmap [-n KEYS] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (n < 2 || rounds < 1 || keys_make(&k, n) != 0) {
		fprintf(stderr, "bench_hmap: bad arguments or out of memory\n");
		return 2;
	}
	t_old = calloc(rounds, sizeof(double));
	t_new = calloc(rounds, sizeof(double));
	ratio = calloc(rounds, sizeof(double));
	printf("%-13s %10s %10s %8s   (%u keys, %u rounds, median ns/op)\n", "table", "old", "hmap", "ratio", n,
	       rounds);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct bench_case *bc = &cases[c];
		double ops = (double)(bc == &cases[3] && n > SERIES_MAX ? SERIES_MAX : n) * bc->ops_per_key;

		bc->old_run(&k);  /* warm */
		bc->new_run(&k);
		for (r = 0; r < rounds; r++) {
			/* Alternate which goes first, so drift favours neither. */
			int64_t t0, t1, t2;

			if (r % 2) {
				t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				bc->new_run(&k);
				t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				bc->old_run(&k);
				t2 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				t_new[r] = (double)(t1 - t0) / ops;
				t_old[r] = (double)(t2 - t1) / ops;
			} else {
				t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				bc->old_run(&k);
				t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				bc->new_run(&k);
				t2 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				t_old[r] = (double)(t1 - t0) / ops;
				t_new[r] = (double)(t2 - t1) / ops;
			}
			ratio[r] = t_new[r] / t_old[r];
		}
		qsort(t_old, rounds, sizeof(double), cmp_double);
		qsort(t_new, rounds, sizeof(double), cmp_double);
		qsort(ratio, rounds, sizeof(double), cmp_double);
		printf("%-13s %10.1f %10.1f %8.3f\n", bc->name, t_old[rounds / 2], t_new[rounds / 2], ratio[rounds / 2]);
	}
	free(t_old);
	free(t_new);
	free(ratio);
	keys_free(&k);
	return (int)(sink & 0);
}
