/* test_arena.c - the capped bump allocator. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"

static void test_cap_is_an_error_not_a_truncation(void **state)
{
	struct arena *a = NULL;
	void *p;

	(void)state;
	assert_int_equal(arena_new(1024, &a), 0);
	p = arena_alloc(a, 1000);
	assert_non_null(p);
	assert_null(arena_alloc(a, 100));
	assert_int_equal(arena_error(a), -E2BIG);
	arena_reset(a);
	assert_int_equal(arena_error(a), 0);
	assert_int_equal(arena_used(a), 0);
	assert_non_null(arena_alloc(a, 1000));
	arena_free(a);
	arena_free(NULL);
}

static void test_alignment_and_calloc_overflow(void **state)
{
	struct arena *a = NULL;
	int i;

	(void)state;
	assert_int_equal(arena_new(1 << 20, &a), 0);
	for (i = 1; i < 50; i++) {
		char *p = arena_alloc(a, (size_t)i);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, 0xab, (size_t)i);
	}
	assert_null(arena_calloc(a, SIZE_MAX / 2, 4));
	assert_int_equal(arena_error(a), -E2BIG);
	arena_free(a);
}

static void test_grow_in_place_and_by_copy(void **state)
{
	struct arena *a = NULL;
	char *p, *q, *r;

	(void)state;
	assert_int_equal(arena_new(1 << 20, &a), 0);
	p = arena_alloc(a, 16);
	memcpy(p, "0123456789abcdef", 16);
	q = arena_grow(a, p, 16, 64);
	assert_ptr_equal(p, q);                 /* last block: grows in place */
	r = arena_alloc(a, 8);
	assert_non_null(r);
	q = arena_grow(a, p, 64, 128);          /* no longer last: copied */
	assert_ptr_not_equal(p, q);
	assert_memory_equal(q, "0123456789abcdef", 16);
	arena_free(a);
}

static void test_large_allocations_and_reuse(void **state)
{
	struct arena *a = NULL;
	size_t used;

	(void)state;
	assert_int_equal(arena_new(64 << 20, &a), 0);
	assert_non_null(arena_alloc(a, 1 << 20));
	assert_non_null(arena_alloc(a, 3 << 20));
	used = arena_used(a);
	assert_true(used >= (4u << 20));
	arena_reset(a);
	assert_non_null(arena_alloc(a, 3 << 20));   /* from the kept block */
	arena_free(a);
}

static void test_printf_and_strdup(void **state)
{
	struct arena *a = NULL;
	struct str s;
	char big[600];

	(void)state;
	assert_int_equal(arena_new(1 << 20, &a), 0);
	assert_int_equal(arena_printf(a, &s, "%s-%d", "x", 42), 0);
	assert_true(str_eq_cstr(s, "x-42"));
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(arena_printf(a, &s, "%s", big), 0);
	assert_int_equal(s.len, sizeof(big) - 1);
	assert_int_equal(s.ptr[s.len], '\0');
	assert_int_equal(arena_strdup(a, "abc", 2, &s), 0);
	assert_true(str_eq_cstr(s, "ab"));
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_is_an_error_not_a_truncation),
		cmocka_unit_test(test_alignment_and_calloc_overflow),
		cmocka_unit_test(test_grow_in_place_and_by_copy),
		cmocka_unit_test(test_large_allocations_and_reuse),
		cmocka_unit_test(test_printf_and_strdup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
