/* reqmem.h - the memory requests hold: one budget for request bodies and
 * answers, and a bounded pool of their buffers.
 *
 * The budget is a byte count shared by every connection. A body is charged
 * as its bytes arrive and an answer once it is built; both are given back
 * when the answer has been sent (or the connection is gone). A charge that
 * would pass the budget fails and charges nothing: the caller refuses the
 * request instead of allocating. Bytes are what is charged, not allocation
 * sizes: a body buffer sized for its declared length is mapped but only
 * the pages written to cost memory, and those are the bytes received.
 *
 * Released buffers go back to a pool, one per kind (bodies, answers), so
 * the steady state allocates nothing; only buffers of at most pool_keep
 * bytes are kept, and at most pool_max of each kind, so the pool holds at
 * most 2 x pool_max x pool_keep bytes. Larger ones are freed at once.
 *
 * Any thread may charge, give back, take and return buffers at once:
 * charges are lock-free, the pool takes a mutex for a few instructions. */
#ifndef DRA_GUARD_REQMEM_H
#define DRA_GUARD_REQMEM_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

enum reqmem_kind {
	REQMEM_BODY = 0,
	REQMEM_ANSWER,
	REQMEM_KIND_COUNT
};

struct reqmem_limits {
	size_t budget;                /* bytes of bodies and answers held at once */
	size_t cap[REQMEM_KIND_COUNT];/* the cap of every buffer of that kind */
	size_t pool_keep;             /* buffers up to this allocation are pooled */
	unsigned pool_max;            /* at most this many of each kind */
};

struct reqmem;

/* 0, -EINVAL for a budget of 0 or a pool without room, -ENOMEM. */
int reqmem_new(const struct reqmem_limits *lim, struct reqmem **out);

/* Frees the pooled buffers. Every buffer taken must have been returned and
 * every charge given back. NULL is a no-op. */
void reqmem_free(struct reqmem *rm);

/* Count n more bytes as held: true when they fit in the budget, false
 * (nothing counted) when they do not. */
bool reqmem_charge(struct reqmem *rm, size_t n);

/* Give back n bytes charged earlier. */
void reqmem_uncharge(struct reqmem *rm, size_t n);

size_t reqmem_budget(const struct reqmem *rm);
size_t reqmem_in_use(const struct reqmem *rm);

/* An empty buffer of that kind into *out (its cap from the limits), with
 * pooled memory when there is some: the smallest pooled buffer of at least
 * want bytes, else the most recently returned one. Never fails: without a
 * pooled buffer *out is a fresh one that allocates on first use. */
void reqmem_take(struct reqmem *rm, enum reqmem_kind kind, size_t want, struct buf *out);

/* Give a buffer back (steals its memory; *b is left empty and owns
 * nothing). Kept in the pool when small enough and there is room, freed
 * otherwise. */
void reqmem_give(struct reqmem *rm, enum reqmem_kind kind, struct buf *b);

/* Bytes allocated by the buffers now in the pool. */
size_t reqmem_pooled(const struct reqmem *rm);

/* After a burst: when what is held has fallen to an eighth of its peak
 * since the last trim, and that peak was at least trim_peak bytes, hand the
 * allocator's free memory back to the system (glibc malloc_trim). Returns
 * whether it trimmed. Call from one thread, now and then. */
bool reqmem_trim(struct reqmem *rm, size_t trim_peak);

/* Process-wide allocator settings for a server whose large buffers come
 * and go (glibc; elsewhere a no-op): allocations of mmap_threshold bytes
 * or more get their own mapping, given back to the system when freed; a
 * heap keeps up to trim_threshold bytes free at its top rather than give
 * them back and fault them in again at the next request. Call once,
 * before any thread starts. */
void reqmem_tune_allocator(size_t mmap_threshold, size_t trim_threshold);

#endif
