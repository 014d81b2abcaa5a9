/* arena.h - a bump allocator with a hard cap, one per request.
 *
 * Everything a request decodes (device arrays, unescaped strings, messages,
 * patches) lives in one arena and is freed at once by arena_reset() or
 * arena_free(). The cap bounds what one request can make the process allocate:
 * going over is an error (-E2BIG), never a truncation. Blocks are kept across
 * arena_reset() so a thread that reuses its arena allocates nothing in the
 * steady state. Not thread-safe: one arena per thread or request. */
#ifndef DRA_GUARD_ARENA_H
#define DRA_GUARD_ARENA_H

#include <stddef.h>

#include "str.h"

struct arena;

/* Make an arena that hands out at most cap bytes in all. Returns 0 or -ENOMEM. */
int arena_new(size_t cap, struct arena **out);

/* Free the arena and everything allocated from it. arena_free(NULL) is a no-op. */
void arena_free(struct arena *a);

/* Forget every allocation but keep the memory for reuse. */
void arena_reset(struct arena *a);

/* n bytes aligned for any object, uninitialised; NULL when the cap would be
 * exceeded or memory is short (the two are told apart by arena_error()). */
void *arena_alloc(struct arena *a, size_t n);

/* Like arena_alloc() but zero-filled, for nmemb elements of size bytes;
 * overflow of nmemb*size gives NULL. */
void *arena_calloc(struct arena *a, size_t nmemb, size_t size);

/* Grow the most recent allocation p from old_n to new_n bytes, in place when it
 * is the last block handed out, else by copying. NULL on failure (p stays valid). */
void *arena_grow(struct arena *a, void *p, size_t old_n, size_t new_n);

/* A NUL-terminated copy of s[0..len) in the arena (the view excludes the NUL). */
int arena_strdup(struct arena *a, const char *s, size_t len, struct str *out);

/* printf into the arena; the result is NUL-terminated. Returns 0, -E2BIG or -ENOMEM. */
int arena_printf(struct arena *a, struct str *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The error of the last failed allocation: -E2BIG (cap) or -ENOMEM; 0 if none. */
int arena_error(const struct arena *a);

/* Bytes handed out since the last reset, and the cap. */
size_t arena_used(const struct arena *a);
size_t arena_cap(const struct arena *a);

#endif
