/* test_buf.c - the capped buffer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "buf.h"

static void test_cap_leaves_contents_untouched(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_add_cstr(&b, "12345"), 0);
	assert_int_equal(buf_add_cstr(&b, "6789"), -E2BIG);
	assert_string_equal(buf_cstr(&b), "12345");
	assert_int_equal(buf_printf(&b, "%s", "abcdef"), -E2BIG);
	assert_string_equal(buf_cstr(&b), "12345");
	assert_int_equal(buf_add_cstr(&b, "678"), 0);
	assert_int_equal(buf_len(&b), 8);
	buf_free(&b);
}

/* A declared length is allocated once: the appends that fill it never move
 * the buffer, and a length past the cap is refused before anything is read. */
static void test_presize_allocates_the_declared_length_once(void **state)
{
	static const size_t sizes[] = { 1, 255, 256, 4097, 137 * 1024 };
	char chunk[1000];
	size_t i;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct buf b;
		const char *before;
		size_t left = sizes[i];

		buf_init(&b, 256 * 1024);
		assert_int_equal(buf_presize(&b, sizes[i]), 0);
		before = buf_cstr(&b);
		while (left > 0) {
			size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

			assert_int_equal(buf_add(&b, chunk, n), 0);
			left -= n;
		}
		assert_ptr_equal(buf_cstr(&b), before);
		assert_int_equal(buf_len(&b), sizes[i]);
		assert_int_equal(buf_allocated(&b), sizes[i] + 1);
		buf_free(&b);
	}
}

static void test_presize_past_the_cap_is_refused(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 100);
	assert_int_equal(buf_add_cstr(&b, "abc"), 0);
	assert_int_equal(buf_presize(&b, 98), -E2BIG);
	assert_string_equal(buf_cstr(&b), "abc");
	assert_int_equal(buf_presize(&b, 97), 0);
	assert_string_equal(buf_cstr(&b), "abc");
	buf_free(&b);
}

/* An extension is the caller's to fill; past the cap nothing changes. */
static void test_extend(void **state)
{
	struct buf b;
	char *p;
	int i;

	(void)state;
	buf_init(&b, 600);
	assert_int_equal(buf_add_cstr(&b, "ab"), 0);
	assert_int_equal(buf_extend(&b, 3, &p), 0);
	memcpy(p, "cde", 3);
	assert_string_equal(buf_cstr(&b), "abcde");
	assert_int_equal(buf_extend(&b, 596, &p), -E2BIG);
	assert_string_equal(buf_cstr(&b), "abcde");
	for (i = 0; i < 119; i++) {                  /* grows past the first allocation */
		assert_int_equal(buf_extend(&b, 5, &p), 0);
		memcpy(p, "fghij", 5);
	}
	assert_int_equal(buf_len(&b), 600);
	assert_memory_equal(buf_cstr(&b) + 595, "fghij", 6);   /* NUL after the contents */
	assert_int_equal(buf_extend(&b, 0, &p), 0);
	assert_int_equal(buf_extend(&b, 1, &p), -E2BIG);
	buf_free(&b);
}

static void test_take_steals(void **state)
{
	struct buf b;
	char *s = NULL;
	size_t n = 0;

	(void)state;
	buf_init(&b, 100);
	assert_int_equal(buf_take(&b, &s, &n), 0);
	assert_string_equal(s, "");
	free(s);
	assert_int_equal(buf_add_cstr(&b, "hello"), 0);
	assert_int_equal(buf_take(&b, &s, &n), 0);
	assert_string_equal(s, "hello");
	assert_int_equal(n, 5);
	assert_int_equal(buf_len(&b), 0);
	free(s);
	buf_free(&b);
}

/* A buffer in an arena grows in place while it is the arena's last
 * allocation, keeps its contents when something else was allocated in
 * between, and is bounded by both its own cap and the arena's. */
static void test_buffer_in_an_arena(void **state)
{
	struct arena *a = NULL;
	struct buf b;
	char *out = NULL, *other;
	size_t used;
	int i;

	(void)state;
	assert_int_equal(arena_new(64 * 1024, &a), 0);
	buf_init_in(&b, 16 * 1024, a);
	assert_string_equal(buf_cstr(&b), "");
	for (i = 0; i < 1000; i++)
		assert_int_equal(buf_printf(&b, "%d,", i % 10), 0);
	assert_int_equal(buf_len(&b), 2000);
	/* Grown in place: what the arena handed out is the last size, not the
	 * sum of every size on the way. */
	used = arena_used(a);
	assert_true(used < 4096);
	other = arena_alloc(a, 100);
	assert_non_null(other);
	memset(other, 'x', 100);
	assert_int_equal(buf_add_cstr(&b, "tail"), 0);
	assert_int_equal(strncmp(buf_cstr(&b), "0,1,2,", 6), 0);
	assert_string_equal(buf_cstr(&b) + 2000, "tail");
	assert_int_equal(other[99], 'x');
	/* Its own cap, then the arena's. */
	assert_int_equal(buf_add(&b, other, 16 * 1024), -E2BIG);
	assert_string_equal(buf_cstr(&b) + 2000, "tail");
	assert_int_equal(buf_take(&b, &out, NULL), -EINVAL);
	buf_free(&b);
	/* A cap above what the arena has left: the arena says no. */
	buf_init_in(&b, 1 << 20, a);
	assert_int_equal(buf_add_cstr(&b, "head"), 0);
	other = calloc(1, 60 * 1024);
	assert_non_null(other);
	assert_int_equal(buf_add(&b, other, 60 * 1024), -E2BIG);
	assert_string_equal(buf_cstr(&b), "head");
	free(other);
	buf_free(&b);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_leaves_contents_untouched),
		cmocka_unit_test(test_presize_allocates_the_declared_length_once),
		cmocka_unit_test(test_presize_past_the_cap_is_refused),
		cmocka_unit_test(test_extend),
		cmocka_unit_test(test_take_steals),
		cmocka_unit_test(test_buffer_in_an_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
