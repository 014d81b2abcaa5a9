/* hmap.h - the one hash index: keys to 32-bit values, open addressing.
 *
 * The map holds no keys. Each slot is (hash, value); the value names the
 * caller's record (an index into its array, a slot number), and the caller's
 * equality function compares a probe key with the record a value names. So
 * records keep their own keys in whatever form they have (a struct str, a
 * fixed array, several fields), the map costs 8 bytes a slot, and a lookup
 * compares keys only on a full 32-bit hash match.
 *
 * Linear probing over 2^k slots, at most half full; deletion shifts the
 * rest of the run back (no tombstones), so a lookup stops at the first
 * empty slot. The table starts small and doubles as it fills, up to the cap
 * given at init: an insert past cap entries is -E2BIG, never a silent
 * growth. Slots are calloc'd (an empty slot is zero, so a reserved table
 * costs pages only as it fills); nothing else is allocated.
 *
 * Hashes are FNV-1a over bytes (hmap_hash, or hmap_hash_add for keys made
 * of several parts), finished with a mix because probing uses the low bits.
 * Every FNV in the tree is this one: the view's persistent table hashes
 * with it too, and where a 64-bit hash stands alone for a key (a rate-limit
 * bucket, a file set's signature) it is hmap_hash64_add(). Where many long
 * texts are hashed in a hot path (the view's atoms) it is
 * hmap_hash_words(): eight bytes a step, where FNV's multiply a byte each
 * waits on the one before; never stored or sent, so nothing outside the
 * process has to agree with it.
 *
 * Pure; not thread-safe (one writer, or readers under the owner's lock). */
#ifndef DRA_GUARD_HMAP_H
#define DRA_GUARD_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HMAP_CAP_MAX (1u << 30)       /* the largest cap hmap_init() takes */
#define HMAP_HASH_INIT 2166136261u    /* FNV-1a's offset basis, for hmap_hash_add() */
#define HMAP_HASH64_INIT 0xcbf29ce484222325ull   /* 64-bit FNV-1a's, for hmap_hash64_add() */

/* Does the record val names have the key key points to? */
typedef bool hmap_eq_fn(const void *ctx, uint32_t val, const void *key);

struct hmap_slot {
	uint32_t hash;
	uint32_t val;                 /* the value + 1; 0: free */
};

struct hmap {                     /* fields are private; use the functions below */
	struct hmap_slot *slot;
	uint32_t mask;                /* slots - 1 */
	uint32_t count;
	uint32_t cap;
	hmap_eq_fn *eq;
	const void *ctx;
};

/* Empty map of at most cap entries (1..HMAP_CAP_MAX); eq(ctx, val, key)
 * compares keys. 0, -EINVAL, -ENOMEM. */
int hmap_init(struct hmap *m, uint32_t cap, hmap_eq_fn *eq, const void *ctx);

/* Frees the slots; the map may be initialised again. A zeroed map is fine. */
void hmap_fini(struct hmap *m);

/* Room for n entries (at most the cap) without growing: for a table whose
 * size is known, or to keep puts from failing later. 0, -ENOMEM (the map
 * is unchanged), -EINVAL for a map not initialised. */
int hmap_reserve(struct hmap *m, uint32_t n);

/* Forget every entry, keep the slots. O(slots). */
void hmap_clear(struct hmap *m);

/* Entries held. */
uint32_t hmap_count(const struct hmap *m);

/* The hashes are inline: they are on every lookup's path, the view's
 * persistent table among them, and a call into another file costs as much
 * as hashing a short key. */

/* FNV-1a of p[0..n) continued from h (HMAP_HASH_INIT to start). */
static inline uint32_t hmap_hash_add(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* hmap_hash_add() of the C string s, without its NUL: one pass. */
static inline uint32_t hmap_hash_add_cstr(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* 64-bit FNV-1a of p[0..n) continued from h (HMAP_HASH64_INIT to start):
 * for a hash that is itself the identity of a key, where 32 bits would
 * collide. Not for the map, whose hashes are 32 bits. */
static inline uint64_t hmap_hash64_add(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211u;
	return h;
}

/* A 64-bit hash of p[0..n) from seed, eight bytes a step (one multiply a
 * word: each step is a bijection, so no word's bits are lost), finished
 * with murmur3's mix so that every input bit reaches the low bits and the
 * high ones. */
static inline uint64_t hmap_hash_words(uint64_t seed, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ull ^ (uint64_t)n, w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	if (n) {
		w = 0;
		memcpy(&w, b, n);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* The hash to pass the functions below: h from hmap_hash_add, mixed. */
static inline uint32_t hmap_hash_finish(uint32_t h)
{
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

/* hmap_hash_finish(hmap_hash_add(HMAP_HASH_INIT, p, n)). */
static inline uint32_t hmap_hash(const void *p, size_t n)
{
	return hmap_hash_finish(hmap_hash_add(HMAP_HASH_INIT, p, n));
}

/* The value stored under key (hash its hash) into *val: 0, or -ENOENT. */
int hmap_find(const struct hmap *m, uint32_t hash, const void *key, uint32_t *val);

/* Store val (< UINT32_MAX) under key, replacing the value of an equal key.
 * 0; -E2BIG when the key is new and cap entries are held; -ENOMEM when the
 * table could not grow (the map is unchanged either way); -EINVAL for
 * val UINT32_MAX. */
int hmap_put(struct hmap *m, uint32_t hash, const void *key, uint32_t val);

/* Remove key; its value into *val when val is not NULL. 0, or -ENOENT. */
int hmap_del(struct hmap *m, uint32_t hash, const void *key, uint32_t *val);

#endif
