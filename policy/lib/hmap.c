/* hmap.c - see hmap.h. */
#include "hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A slot stores its value plus one: zeroed memory is an empty table, so
 * calloc'd slots cost no page until they are used. */
#define HMAP_EMPTY 0u
#define HMAP_MIN_SLOTS 16u

static struct hmap_slot *slots_new(uint32_t n)
{
	return calloc(n, sizeof(struct hmap_slot));
}

int hmap_init(struct hmap *m, uint32_t cap, hmap_eq_fn *eq, const void *ctx)
{
	memset(m, 0, sizeof(*m));
	if (!cap || cap > HMAP_CAP_MAX || !eq)
		return -EINVAL;
	m->slot = slots_new(HMAP_MIN_SLOTS);
	if (!m->slot)
		return -ENOMEM;
	m->mask = HMAP_MIN_SLOTS - 1;
	m->cap = cap;
	m->eq = eq;
	m->ctx = ctx;
	return 0;
}

void hmap_fini(struct hmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

void hmap_clear(struct hmap *m)
{
	if (m->slot)
		memset(m->slot, 0, ((size_t)m->mask + 1) * sizeof(*m->slot));
	m->count = 0;
}

uint32_t hmap_count(const struct hmap *m)
{
	return m->count;
}

/* The slot holding key, or the free slot that ends its run. */
static uint32_t probe(const struct hmap *m, uint32_t hash, const void *key)
{
	uint32_t i = hash & m->mask;

	for (;; i = (i + 1) & m->mask) {
		const struct hmap_slot *s = &m->slot[i];

		if (s->val == HMAP_EMPTY)
			return i;
		if (s->hash == hash && m->eq(m->ctx, s->val - 1, key))
			return i;
	}
}

int hmap_find(const struct hmap *m, uint32_t hash, const void *key, uint32_t *val)
{
	uint32_t i;

	if (!m->slot)
		return -ENOENT;
	i = probe(m, hash, key);
	if (m->slot[i].val == HMAP_EMPTY)
		return -ENOENT;
	*val = m->slot[i].val - 1;
	return 0;
}

/* n slots (a power of two, more than twice the entries); entries move by
 * their stored hash, no key is compared. */
static int resize(struct hmap *m, uint32_t n)
{
	struct hmap_slot *s = slots_new(n);
	uint32_t i, j;

	if (!s)
		return -ENOMEM;
	for (i = 0; i <= m->mask; i++) {
		if (m->slot[i].val == HMAP_EMPTY)
			continue;
		for (j = m->slot[i].hash & (n - 1); s[j].val != HMAP_EMPTY; j = (j + 1) & (n - 1))
			;
		s[j] = m->slot[i];
	}
	free(m->slot);
	m->slot = s;
	m->mask = n - 1;
	return 0;
}

int hmap_reserve(struct hmap *m, uint32_t n)
{
	uint32_t slots = m->mask + 1;

	if (!m->slot)
		return -EINVAL;
	if (n > m->cap)
		n = m->cap;
	while ((uint64_t)n * 2 > slots)
		slots *= 2;
	return slots == m->mask + 1 ? 0 : resize(m, slots);
}

int hmap_put(struct hmap *m, uint32_t hash, const void *key, uint32_t val)
{
	uint32_t i;
	int rc;

	if (val == UINT32_MAX || !m->slot)
		return -EINVAL;
	i = probe(m, hash, key);
	if (m->slot[i].val != HMAP_EMPTY) {
		m->slot[i].val = val + 1;
		return 0;
	}
	if (m->count >= m->cap)
		return -E2BIG;
	/* At most half full: runs stay short and a free slot always ends one. */
	if ((m->count + 1) * 2 > m->mask + 1) {
		if ((rc = resize(m, (m->mask + 1) * 2)) != 0)
			return rc;
		i = probe(m, hash, key);
	}
	m->slot[i].hash = hash;
	m->slot[i].val = val + 1;
	m->count++;
	return 0;
}

int hmap_del(struct hmap *m, uint32_t hash, const void *key, uint32_t *val)
{
	uint32_t i, j, home;

	if (!m->slot)
		return -ENOENT;
	i = probe(m, hash, key);
	if (m->slot[i].val == HMAP_EMPTY)
		return -ENOENT;
	if (val)
		*val = m->slot[i].val - 1;
	/* Shift back every later entry of the run whose home is not between
	 * the hole and it (cyclically), so no lookup meets an early gap. */
	for (j = (i + 1) & m->mask; m->slot[j].val != HMAP_EMPTY; j = (j + 1) & m->mask) {
		home = m->slot[j].hash & m->mask;
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	m->slot[i].val = HMAP_EMPTY;
	m->count--;
	return 0;
}
