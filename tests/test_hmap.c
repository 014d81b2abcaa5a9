/* test_hmap.c - the hash index: insert, find, delete, growth, cap, collisions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hmap.h"

#define NKEYS 5000

/* The caller's records: value v names record v % NKEYS, so key i may be
 * stored as i or as i + NKEYS (a replacement). */
struct recs {
	char names[NKEYS][16];
};

static bool name_eq(const void *ctx, uint32_t val, const void *key)
{
	const struct recs *r = ctx;

	return strcmp(r->names[val % NKEYS], key) == 0;
}

static struct recs recs;

static void fill_names(void)
{
	uint32_t i;

	for (i = 0; i < NKEYS; i++)
		snprintf(recs.names[i], sizeof(recs.names[i]), "key-%u", i);
}

static uint32_t h_of(uint32_t i)
{
	return hmap_hash(recs.names[i], strlen(recs.names[i]));
}

enum op { PUT, FIND, DEL };

struct step {
	enum op op;
	uint32_t key;                 /* index into recs.names */
	uint32_t val;                 /* stored, or expected from FIND/DEL */
	int rc;
	uint32_t count;               /* after the step */
};

static void run(const struct step *steps, size_t n, uint32_t cap, uint32_t (*hash)(uint32_t))
{
	struct hmap m;
	size_t i;

	assert_int_equal(hmap_init(&m, cap, name_eq, &recs), 0);
	for (i = 0; i < n; i++) {
		const struct step *s = &steps[i];
		uint32_t got = UINT32_MAX, count;
		int rc = 0;

		switch (s->op) {
		case PUT: rc = hmap_put(&m, hash(s->key), recs.names[s->key], s->val); break;
		case FIND: rc = hmap_find(&m, hash(s->key), recs.names[s->key], &got); break;
		case DEL: rc = hmap_del(&m, hash(s->key), recs.names[s->key], &got); break;
		}
		count = hmap_count(&m);
		if (rc != s->rc || count != s->count || (s->op != PUT && rc == 0 && got != s->val)) {
			hmap_fini(&m);
			fail_msg("step %zu: rc %d (want %d), count %u (want %u), val %u (want %u)", i, rc, s->rc,
				 count, s->count, got, s->val);
		}
	}
	hmap_fini(&m);
}

static uint32_t real_hash(uint32_t i)
{
	return h_of(i);
}

/* Every key lands on the same slot: one long run. */
static uint32_t same_hash(uint32_t i)
{
	(void)i;
	return 7;
}

/* Keys whose home is the last slots of the first table, so runs wrap. */
static uint32_t end_hash(uint32_t i)
{
	return 14 + (i % 2);
}

static const struct step basic[] = {
	{ FIND, 1, 0, -ENOENT, 0 },
	{ PUT, 1, 1, 0, 1 },
	{ PUT, 2, 2, 0, 2 },
	{ FIND, 1, 1, 0, 2 },
	{ FIND, 2, 2, 0, 2 },
	{ FIND, 3, 0, -ENOENT, 2 },
	{ PUT, 1, NKEYS + 1, 0, 2 },    /* replaces */
	{ FIND, 1, NKEYS + 1, 0, 2 },
	{ DEL, 1, NKEYS + 1, 0, 1 },
	{ FIND, 1, 0, -ENOENT, 1 },
	{ DEL, 1, 0, -ENOENT, 1 },
	{ FIND, 2, 2, 0, 1 },
	{ DEL, 2, 2, 0, 0 },
	{ PUT, 1, 1, 0, 1 },
};

static const struct step capped[] = {
	{ PUT, 1, 1, 0, 1 },
	{ PUT, 2, 2, 0, 2 },
	{ PUT, 3, 3, 0, 3 },
	{ PUT, 4, 4, -E2BIG, 3 },       /* past the cap */
	{ FIND, 4, 0, -ENOENT, 3 },
	{ PUT, 2, NKEYS + 2, 0, 3 },    /* an existing key may change at the cap */
	{ FIND, 2, NKEYS + 2, 0, 3 },
	{ DEL, 1, 1, 0, 2 },
	{ PUT, 4, 4, 0, 3 },            /* room again */
	{ FIND, 4, 4, 0, 3 },
	{ FIND, 3, 3, 0, 3 },
};

/* Deleting from the middle of one run must keep the rest of it reachable. */
static const struct step colliding[] = {
	{ PUT, 0, 0, 0, 1 },
	{ PUT, 1, 1, 0, 2 },
	{ PUT, 2, 2, 0, 3 },
	{ PUT, 3, 3, 0, 4 },
	{ PUT, 4, 4, 0, 5 },
	{ DEL, 1, 1, 0, 4 },
	{ FIND, 0, 0, 0, 4 },
	{ FIND, 2, 2, 0, 4 },
	{ FIND, 3, 3, 0, 4 },
	{ FIND, 4, 4, 0, 4 },
	{ DEL, 0, 0, 0, 3 },
	{ FIND, 4, 4, 0, 3 },
	{ DEL, 4, 4, 0, 2 },
	{ FIND, 2, 2, 0, 2 },
	{ FIND, 3, 3, 0, 2 },
	{ PUT, 1, 1, 0, 3 },
	{ FIND, 1, 1, 0, 3 },
	{ FIND, 4, 0, -ENOENT, 3 },
};

static void test_insert_find_delete(void **state)
{
	(void)state;
	run(basic, sizeof(basic) / sizeof(basic[0]), 100, real_hash);
}

static void test_cap_refuses_new_keys_only(void **state)
{
	(void)state;
	run(capped, sizeof(capped) / sizeof(capped[0]), 3, real_hash);
}

static void test_collisions_survive_deletion(void **state)
{
	(void)state;
	run(colliding, sizeof(colliding) / sizeof(colliding[0]), 100, same_hash);
	run(colliding, sizeof(colliding) / sizeof(colliding[0]), 100, end_hash);
}

/* Many keys, through several doublings, then half deleted: the rest are
 * all found with their values, the deleted ones not. */
static void check_many(uint32_t (*hash)(uint32_t), uint32_t n)
{
	struct hmap m;
	uint32_t i, v;

	assert_int_equal(hmap_init(&m, NKEYS, name_eq, &recs), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(hmap_put(&m, hash(i), recs.names[i], i), 0);
	assert_int_equal(hmap_count(&m), n);
	for (i = 0; i < n; i += 2)
		assert_int_equal(hmap_del(&m, hash(i), recs.names[i], NULL), 0);
	for (i = 0; i < n; i++) {
		int rc = hmap_find(&m, hash(i), recs.names[i], &v);

		if (i % 2) {
			assert_int_equal(rc, 0);
			assert_int_equal(v, i);
		} else {
			assert_int_equal(rc, -ENOENT);
		}
	}
	assert_int_equal(hmap_count(&m), n / 2);
	hmap_clear(&m);
	assert_int_equal(hmap_count(&m), 0);
	assert_int_equal(hmap_find(&m, hash(1), recs.names[1], &v), -ENOENT);
	assert_int_equal(hmap_put(&m, hash(1), recs.names[1], 1), 0);
	hmap_fini(&m);
}

static void test_growth_keeps_every_entry(void **state)
{
	(void)state;
	check_many(real_hash, NKEYS);
	check_many(same_hash, 300);
	check_many(end_hash, 300);
}

/* A reserved map takes its entries without growing; a reservation past
 * the cap is the cap. */
static void test_reserve(void **state)
{
	struct hmap m;
	uint32_t i, v;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_int_equal(hmap_reserve(&m, 10), -EINVAL);
	assert_int_equal(hmap_init(&m, 1000, name_eq, &recs), 0);
	assert_int_equal(hmap_reserve(&m, 1u << 30), 0);
	assert_int_equal(m.mask + 1, 2048);
	for (i = 0; i < 1000; i++)
		assert_int_equal(hmap_put(&m, h_of(i), recs.names[i], i), 0);
	assert_int_equal(m.mask + 1, 2048);
	assert_int_equal(hmap_put(&m, h_of(1000), recs.names[1000], 1000), -E2BIG);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(hmap_find(&m, h_of(i), recs.names[i], &v), 0);
		assert_int_equal(v, i);
	}
	/* Value 0 is a value like any other (slots store it plus one). */
	assert_int_equal(hmap_find(&m, h_of(0), recs.names[0], &v), 0);
	assert_int_equal(v, 0);
	hmap_fini(&m);
}

static void test_hash_is_fnv1a(void **state)
{
	static const struct {
		const char *s;
		uint32_t fnv;
	} cases[] = {
		{ "", 0x811c9dc5u },
		{ "a", 0xe40c292cu },
		{ "foobar", 0xbf9cf968u },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(hmap_hash_add(HMAP_HASH_INIT, cases[i].s, strlen(cases[i].s)), cases[i].fnv);
		assert_int_equal(hmap_hash_add_cstr(HMAP_HASH_INIT, cases[i].s), cases[i].fnv);
		assert_int_equal(hmap_hash(cases[i].s, strlen(cases[i].s)), hmap_hash_finish(cases[i].fnv));
	}
	/* Parts hash as their concatenation. */
	assert_int_equal(hmap_hash_add(hmap_hash_add(HMAP_HASH_INIT, "foo", 3), "bar", 3), 0xbf9cf968u);
}

/* The published 64-bit FNV-1a vectors: Events' rate-limit buckets and the
 * mounted files' signature are known by these values. */
static void test_hash64_is_fnv1a(void **state)
{
	static const struct {
		const char *s;
		uint64_t fnv;
	} cases[] = {
		{ "", 0xcbf29ce484222325u },
		{ "a", 0xaf63dc4c8601ec8cu },
		{ "foobar", 0x85944171f73967e8u },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_true(hmap_hash64_add(HMAP_HASH64_INIT, cases[i].s, strlen(cases[i].s)) == cases[i].fnv);
	assert_true(hmap_hash64_add(hmap_hash64_add(HMAP_HASH64_INIT, "foo", 3), "bar", 3) == 0x85944171f73967e8u);
}

/* hmap_hash_words(): every byte counts, the tail's included, and so do
 * the length (a text and the same text with zero bytes after it) and the
 * seed; and its low bits, the ones a probe uses, spread. */
static void test_hash_words_sees_every_byte(void **state)
{
	unsigned char text[40], zeros[16] = { 0 };
	unsigned seen = 0;
	size_t n, i;

	(void)state;
	for (i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)(i * 37 + 11);
	for (n = 1; n <= sizeof(text); n++) {
		uint64_t h = hmap_hash_words(0, text, n);

		assert_true(h == hmap_hash_words(0, text, n));
		assert_true(h != hmap_hash_words(1, text, n));
		assert_true(h != hmap_hash_words(0, text, n - 1));
		for (i = 0; i < n; i++) {
			text[i] ^= 0x40;
			assert_true(h != hmap_hash_words(0, text, n));
			text[i] ^= 0x40;
		}
	}
	for (n = 0; n < 8; n++)
		assert_true(hmap_hash_words(0, zeros, n) != hmap_hash_words(0, zeros, n + 1));
	/* 64 one-byte texts reach at least half the 64 values of the low 6 bits
	 * (about 41 for a random hash) */
	{
		uint64_t bits = 0;

		for (i = 0; i < 64; i++) {
			unsigned char c = (unsigned char)i;

			bits |= 1ull << (hmap_hash_words(0, &c, 1) & 63);
		}
		for (i = 0; i < 64; i++)
			seen += (unsigned)(bits >> i & 1);
	}
	assert_true(seen >= 32);
}

static void test_bad_arguments(void **state)
{
	struct hmap m;
	uint32_t v;

	(void)state;
	assert_int_equal(hmap_init(&m, 0, name_eq, &recs), -EINVAL);
	assert_int_equal(hmap_init(&m, HMAP_CAP_MAX + 1, name_eq, &recs), -EINVAL);
	assert_int_equal(hmap_init(&m, 10, NULL, &recs), -EINVAL);
	hmap_fini(&m);
	assert_int_equal(hmap_find(&m, 1, "x", &v), -ENOENT);
	assert_int_equal(hmap_del(&m, 1, "x", NULL), -ENOENT);
	assert_int_equal(hmap_init(&m, 10, name_eq, &recs), 0);
	assert_int_equal(hmap_put(&m, h_of(1), recs.names[1], UINT32_MAX), -EINVAL);
	assert_int_equal(hmap_count(&m), 0);
	hmap_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_find_delete),
		cmocka_unit_test(test_cap_refuses_new_keys_only),
		cmocka_unit_test(test_collisions_survive_deletion),
		cmocka_unit_test(test_growth_keeps_every_entry),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_hash_is_fnv1a),
		cmocka_unit_test(test_hash64_is_fnv1a),
		cmocka_unit_test(test_hash_words_sees_every_byte),
		cmocka_unit_test(test_bad_arguments),
	};

	fill_names();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
