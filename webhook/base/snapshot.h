/* snapshot.h - refcounted immutable objects swapped under one pointer.
 *
 * The policy and the TLS credential are both replaced whole while requests
 * and handshakes use them: a snapshot holds one object and a reference count,
 * a slot holds the current snapshot. Readers take a reference
 * (snapshot_slot_acquire) for as long as they use the object and drop it
 * (snapshot_release); a writer swaps a new snapshot in, and the old object is
 * freed when its last reader lets go - so work in flight finishes on the
 * object it started with, and nothing is freed under it.
 *
 * The slot's mutex is held only for the pointer load and the increment (or
 * the pointer store), never while an object is used or freed. */
#ifndef DRA_GUARD_SNAPSHOT_H
#define DRA_GUARD_SNAPSHOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct snapshot {                 /* fields are private; use the functions below */
	atomic_uint refs;
	void *obj;
	void (*free_obj)(void *obj);
	uint64_t generation;          /* set by the slot: 1 for the first swap, +1 each */
};

struct snapshot_slot {
	pthread_mutex_t mu;
	struct snapshot *cur;         /* holds one reference; NULL while empty */
	uint64_t generation;
};

/* Wrap obj (owned from now on, freed by free_obj(obj) with the last
 * reference) in a snapshot holding one reference for the caller. On -ENOMEM
 * obj is freed too, so the caller never leaks it. */
int snapshot_new(void *obj, void (*free_obj)(void *obj), struct snapshot **out);

/* One more reference to a snapshot the caller holds a reference to. */
struct snapshot *snapshot_ref(struct snapshot *s);

/* The object. Valid while the caller holds a reference. */
void *snapshot_get(const struct snapshot *s);

/* The slot generation the snapshot was swapped in at (0 before). */
uint64_t snapshot_generation(const struct snapshot *s);

/* Drop one reference; the last one frees the object and the snapshot.
 * snapshot_release(NULL) is a no-op. Any thread. */
void snapshot_release(struct snapshot *s);

/* An empty slot. 0 or -ENOMEM. */
int snapshot_slot_init(struct snapshot_slot *slot);

/* Release the current snapshot and the mutex. No reader may be running. */
void snapshot_slot_destroy(struct snapshot_slot *slot);

/* A new reference to the current snapshot, or NULL while the slot is empty.
 * Any thread. */
struct snapshot *snapshot_slot_acquire(struct snapshot_slot *slot);

/* Make next current, taking over the caller's reference to it, and drop the
 * slot's reference to the previous one (freed now if no reader holds it).
 * next may be NULL to empty the slot. Any thread. */
void snapshot_slot_swap(struct snapshot_slot *slot, struct snapshot *next);

#endif
