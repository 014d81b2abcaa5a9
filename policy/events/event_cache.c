/* event_cache.c - Events aggregated into series, rate-limited per object. */
#include "event_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"

struct series {
	uint32_t hash;                /* hmap_hash() of key */
	char key[EVENTS_KEY_MAX];
	struct events_report report;
	char name[254];
	int64_t first_ns, last_ns, written_ns;
	uint64_t count;               /* observed */
	uint64_t written;             /* what the API server has */
	bool created;                 /* the Event exists (a CREATE succeeded) */
	bool in_flight;               /* a send is out; its result comes through event_cache_sent() */
	bool finishing;
};

struct bucket {
	bool used;
	uint64_t hash;                /* hmap_hash64_add() of events_object_key(): the bucket's identity, 64 bits so that two objects do not share one */
	int64_t credit_ns;            /* tokens x refill_ns */
	int64_t at_ns;
};

struct event_cache {
	struct event_cache_limits l;
	struct series **series;       /* max_series slots, NULL when free */
	uint32_t nseries;
	struct hmap series_index;     /* key -> slot of series */
	struct bucket *buckets;       /* max_objects; [0..nbuckets) used, never freed */
	uint32_t nbuckets;
	struct hmap bucket_index;     /* hash of events_object_key() -> bucket */
};

void event_cache_limits_default(struct event_cache_limits *l)
{
	l->max_series = 1024;
	l->max_objects = 4096;
	l->burst = 25;
	l->refill_ns = (int64_t)300 * 1000000000;
	l->patch_interval_ns = (int64_t)10 * 1000000000;
	l->finish_ns = (int64_t)360 * 1000000000;
}

static bool series_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct event_cache *c = ctx;

	return strcmp(c->series[val]->key, key) == 0;
}

static bool bucket_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct event_cache *c = ctx;

	return c->buckets[val].hash == *(const uint64_t *)key;
}

int event_cache_new(const struct event_cache_limits *l, struct event_cache **out)
{
	struct event_cache *c = NULL;

	*out = NULL;
	if (!l->max_series || !l->max_objects || !l->burst || l->refill_ns <= 0 || l->patch_interval_ns < 0 ||
	    l->finish_ns <= 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->l = *l;
	c->series = calloc(l->max_series, sizeof(*c->series));
	c->buckets = calloc(l->max_objects, sizeof(*c->buckets));
	if (!c->series || !c->buckets || hmap_init(&c->series_index, l->max_series, series_eq, c) != 0 ||
	    hmap_init(&c->bucket_index, l->max_objects, bucket_eq, c) != 0) {
		event_cache_free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void event_cache_free(struct event_cache *c)
{
	uint32_t i;

	if (!c)
		return;
	for (i = 0; c->series && i < c->l.max_series; i++)
		free(c->series[i]);
	free(c->series);
	free(c->buckets);
	hmap_fini(&c->series_index);
	hmap_fini(&c->bucket_index);
	free(c);
}

uint32_t event_cache_series(const struct event_cache *c)
{
	return c->nseries;
}

static void forget(struct event_cache *c, uint32_t slot)
{
	hmap_del(&c->series_index, c->series[slot]->hash, c->series[slot]->key, NULL);
	free(c->series[slot]);
	c->series[slot] = NULL;
	c->nseries--;
}

static void refill(const struct event_cache *c, struct bucket *b, int64_t now_ns)
{
	int64_t max = (int64_t)c->l.burst * c->l.refill_ns;

	if (now_ns > b->at_ns) {
		b->credit_ns = now_ns - b->at_ns > max - b->credit_ns ? max : b->credit_ns + (now_ns - b->at_ns);
		b->at_ns = now_ns;
	}
}

/* The object's bucket, made (full) when new; NULL when max_objects buckets
 * are held and none is full again (then the object is limited). */
static struct bucket *bucket_of(struct event_cache *c, uint64_t h, int64_t now_ns)
{
	int64_t max = (int64_t)c->l.burst * c->l.refill_ns;
	struct bucket *free_b = NULL;
	uint32_t i;

	if (hmap_find(&c->bucket_index, (uint32_t)h, &h, &i) == 0)
		return &c->buckets[i];
	if (c->nbuckets < c->l.max_objects)
		free_b = &c->buckets[c->nbuckets];
	/* A full bucket is what a new one would be: forgetting it loses nothing. */
	for (i = 0; !free_b && i < c->l.max_objects; i++) {
		refill(c, &c->buckets[i], now_ns);
		if (c->buckets[i].credit_ns >= max) {
			free_b = &c->buckets[i];
			hmap_del(&c->bucket_index, (uint32_t)free_b->hash, &free_b->hash, NULL);
		}
	}
	if (!free_b)
		return NULL;
	/* Only memory can fail it (fewer than max_objects are indexed here);
	 * then the object is limited, as when no bucket is free. */
	if (hmap_put(&c->bucket_index, (uint32_t)h, &h, (uint32_t)(free_b - c->buckets)) != 0)
		return NULL;
	if (!free_b->used)
		c->nbuckets++;
	free_b->used = true;
	free_b->hash = h;
	free_b->credit_ns = max;
	free_b->at_ns = now_ns;
	return free_b;
}

static void fill_send(struct event_cache *c, uint32_t slot, struct event_send *send)
{
	struct series *s = c->series[slot];

	s->in_flight = true;
	send->slot = slot;
	send->report = &s->report;
	send->name = s->name;
	send->first_ns = s->first_ns;
	send->count = s->count;
	send->last_ns = s->last_ns;
	send->finishing = s->finishing;
}

enum event_step event_cache_observe(struct event_cache *c, const struct events_report *r, int64_t now_ns,
				    struct event_send *send)
{
	char key[EVENTS_KEY_MAX];
	struct series *s;
	struct bucket *b;
	uint32_t h, slot;

	events_key(r, key);
	h = hmap_hash(key, strlen(key));
	if (hmap_find(&c->series_index, h, key, &slot) == 0) {
		s = c->series[slot];
		s->count++;
		if (now_ns > s->last_ns)
			s->last_ns = now_ns;
		s->finishing = false;
		return EVENT_STEP_NONE;
	}
	if (c->nseries >= c->l.max_series)
		return EVENT_STEP_FULL;
	/* The lowest free slot, as before the index: event_cache_next() sends
	 * in slot order. */
	for (slot = 0; c->series[slot]; slot++)
		;
	events_object_key(r, key);
	b = bucket_of(c, hmap_hash64_add(HMAP_HASH64_INIT, key, strlen(key)), now_ns);
	if (!b)
		return EVENT_STEP_LIMITED;
	refill(c, b, now_ns);
	if (b->credit_ns < c->l.refill_ns)
		return EVENT_STEP_LIMITED;
	s = calloc(1, sizeof(*s));
	if (!s)
		return EVENT_STEP_FULL;
	events_key(r, s->key);
	c->series[slot] = s;
	/* Only memory can fail it: fewer than max_series series are held. */
	if (hmap_put(&c->series_index, h, s->key, slot) != 0) {
		c->series[slot] = NULL;
		free(s);
		return EVENT_STEP_FULL;
	}
	b->credit_ns -= c->l.refill_ns;
	s->hash = h;
	s->report = *r;
	s->first_ns = s->last_ns = now_ns;
	s->count = 1;
	events_name(r, now_ns, s->name);
	c->nseries++;
	fill_send(c, slot, send);
	return EVENT_STEP_CREATE;
}

enum event_step event_cache_next(struct event_cache *c, int64_t now_ns, struct event_send *send)
{
	uint32_t i;

	for (i = 0; i < c->l.max_series; i++) {
		struct series *s = c->series[i];
		bool idle;

		if (!s || s->in_flight)
			continue;
		idle = now_ns - s->last_ns >= c->l.finish_ns;
		if (!s->created) {
			s->finishing = idle;
			fill_send(c, i, send);
			return EVENT_STEP_CREATE;
		}
		if (s->count > s->written && (idle || now_ns - s->written_ns >= c->l.patch_interval_ns)) {
			s->finishing = idle;
			fill_send(c, i, send);
			return EVENT_STEP_PATCH;
		}
		if (idle)
			forget(c, i);
	}
	return EVENT_STEP_NONE;
}

void event_cache_sent(struct event_cache *c, uint32_t slot, uint64_t count, enum event_sent how, int64_t now_ns)
{
	struct series *s = slot < c->l.max_series ? c->series[slot] : NULL;

	if (!s)
		return;
	s->in_flight = false;
	switch (how) {
	case EVENT_SENT_OK:
		s->created = true;
		if (count > s->written)
			s->written = count;
		s->written_ns = now_ns;
		if (s->finishing && s->written >= s->count)
			forget(c, slot);
		break;
	case EVENT_SENT_GONE:
		s->created = false;
		s->written = 0;
		break;
	case EVENT_SENT_FAILED:
		/* A failed last patch is not retried: the series is over. */
		if (!s->created || s->finishing)
			forget(c, slot);
		else
			s->written_ns = now_ns;
		break;
	}
}
