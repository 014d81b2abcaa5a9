/* snapshot.c - refcounted immutable objects swapped under one pointer. */
#include "snapshot.h"

#include <errno.h>
#include <stdlib.h>

int snapshot_new(void *obj, void (*free_obj)(void *obj), struct snapshot **out)
{
	struct snapshot *s = malloc(sizeof(*s));

	*out = NULL;
	if (!s) {
		if (free_obj)
			free_obj(obj);
		return -ENOMEM;
	}
	atomic_init(&s->refs, 1);
	s->obj = obj;
	s->free_obj = free_obj;
	s->generation = 0;
	*out = s;
	return 0;
}

void *snapshot_get(const struct snapshot *s)
{
	return s->obj;
}

uint64_t snapshot_generation(const struct snapshot *s)
{
	return s->generation;
}

void snapshot_release(struct snapshot *s)
{
	if (!s)
		return;
	/* acq_rel: every use of the object by this holder happens before the free. */
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (s->free_obj)
		s->free_obj(s->obj);
	free(s);
}

int snapshot_slot_init(struct snapshot_slot *slot)
{
	slot->cur = NULL;
	slot->generation = 0;
	return pthread_mutex_init(&slot->mu, NULL) == 0 ? 0 : -ENOMEM;
}

void snapshot_slot_destroy(struct snapshot_slot *slot)
{
	snapshot_release(slot->cur);
	slot->cur = NULL;
	pthread_mutex_destroy(&slot->mu);
}

struct snapshot *snapshot_slot_acquire(struct snapshot_slot *slot)
{
	struct snapshot *s;

	/* The increment happens under the lock: the slot's own reference keeps
	 * cur alive until a swap, and a swap needs the lock. */
	pthread_mutex_lock(&slot->mu);
	s = slot->cur;
	if (s)
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&slot->mu);
	return s;
}

void snapshot_slot_swap(struct snapshot_slot *slot, struct snapshot *next)
{
	struct snapshot *old;

	pthread_mutex_lock(&slot->mu);
	old = slot->cur;
	if (next)
		next->generation = ++slot->generation;
	slot->cur = next;
	pthread_mutex_unlock(&slot->mu);
	snapshot_release(old);
}

struct snapshot *snapshot_ref(struct snapshot *s)
{
	if (s)
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}
