/* test_verdict.c - turning violations into the answer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict.h"

/* The code under test is linked with -Wl,--wrap=malloc,--wrap=realloc: the
 * calls it makes are counted. */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static unsigned long heap_calls;

void *__wrap_malloc(size_t n)
{
	heap_calls++;
	return __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	heap_calls++;
	return __real_realloc(p, n);
}

static struct arena *new_arena(void)
{
	struct arena *a = NULL;

	assert_int_equal(arena_new(16 << 20, &a), 0);
	return a;
}

static const struct str LONG_MSG = STR_LIT(
	"spec.devices[12].nodeAllocatableResourceMappings[\"ephemeral-storage\"]: Kubernetes 1.37 drops "
	"ephemeral-storage from node-allocatable mappings, so plan the migration now");

static void test_no_violations_allows(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;

	(void)state;
	verdict_init(&v, 8);
	assert_int_equal(verdict_finish(&v, a, "ResourceSlice \"x\"", "h"), 0);
	assert_true(v.allowed);
	assert_int_equal(v.nwarnings, 0);
	assert_int_equal(v.naudit, 0);
	arena_free(a);
}

static void test_warn_allows_with_short_warning(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;

	(void)state;
	verdict_init(&v, 8);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_SHAPE_FUTURE, ACTION_WARN, STR_LIT("p"), LONG_MSG), 0);
	assert_int_equal(verdict_finish(&v, a, "ResourceSlice \"x\"", "h"), 0);
	assert_true(v.allowed);
	assert_int_equal(v.nwarnings, 1);
	assert_true(v.warnings[0].len < 120);
	assert_memory_equal(v.warnings[0].ptr, "[slice.shape.future] ", 21);
	assert_memory_equal(v.warnings[0].ptr + v.warnings[0].len - 3, "...", 3);
	arena_free(a);
}

static void test_dryrun_only_audits(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;

	(void)state;
	verdict_init(&v, 8);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_DRYRUN, STR_LIT("p"), STR_LIT("one")), 0);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_DRYRUN, STR_LIT("p"), STR_LIT("two")), 0);
	assert_int_equal(verdict_finish(&v, a, "ResourceSlice \"x\"", "h"), 0);
	assert_true(v.allowed);
	assert_int_equal(v.nwarnings, 0);
	assert_int_equal(v.naudit, 1);
	assert_true(str_eq_cstr(v.audit[0].key, "slice.canary"));
	assert_true(str_eq_cstr(v.audit[0].value, "one (and 1 more)"));
	arena_free(a);
}

static void test_deny_joins_messages_and_annotates(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;

	(void)state;
	verdict_init(&v, 8);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_MAPPING_NAME, ACTION_DENY, STR_LIT("p"), STR_LIT("A")), 0);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_DENY, STR_LIT("p"), STR_LIT("B")), 0);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_MAPPING_NAME, ACTION_DENY, STR_LIT("p"), STR_LIT("C")), 0);
	assert_int_equal(verdict_finish(&v, a, "ResourceSlice \"x\"", "hash1"), 0);
	assert_false(v.allowed);
	assert_int_equal(v.code, 403);
	assert_true(str_eq_cstr(v.message, "ResourceSlice \"x\" denied by dra-guard: [slice.mapping.name] A; "
				"[slice.canary] B; [slice.mapping.name] C"));
	assert_int_equal(v.naudit, 2);
	assert_true(str_eq_cstr(v.audit[0].key, "denied-rules"));
	assert_true(str_eq_cstr(v.audit[0].value, "slice.mapping.name,slice.canary"));
	assert_true(str_eq_cstr(v.audit[1].value, "hash1"));
	arena_free(a);
}

/* A denial is written into the request's arena: once the arena has its
 * blocks, deciding allocates nothing from the heap. */
static void test_denial_allocates_only_from_the_arena(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;
	unsigned long before;
	int i;

	(void)state;
	assert_non_null(arena_alloc(a, 1 << 20));
	arena_reset(a);
	verdict_init(&v, 64);
	for (i = 0; i < 40; i++)
		assert_int_equal(verdict_add(&v, a, i % 2 ? RULE_SLICE_CANARY : RULE_SLICE_MAPPING_NAME,
					     ACTION_DENY, STR_LIT("p"), LONG_MSG), 0);
	before = heap_calls;
	assert_int_equal(verdict_finish(&v, a, "ResourceSlice \"x\"", "hash1"), 0);
	assert_int_equal(heap_calls - before, 0);
	assert_false(v.allowed);
	assert_true(v.message.len > 1000);
	assert_int_equal(v.message.ptr[v.message.len], '\0');
	assert_true(str_eq_cstr(v.audit[0].value, "slice.mapping.name,slice.canary"));
	arena_free(a);
}

static void test_violation_cap_is_an_error(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;
	int i;

	(void)state;
	verdict_init(&v, 20);
	for (i = 0; i < 20; i++)
		assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_DENY, STR_LIT(""), STR_LIT("x")), 0);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_DENY, STR_LIT(""), STR_LIT("x")), -E2BIG);
	assert_int_equal(v.nviolations, 20);
	arena_free(a);
}

static void test_many_warnings_are_summed_up(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;
	int i;

	(void)state;
	verdict_init(&v, 100);
	for (i = 0; i < 40; i++)
		assert_int_equal(verdict_add(&v, a, RULE_SLICE_MAPPING_EMPTY, ACTION_WARN, STR_LIT(""), STR_LIT("w")), 0);
	assert_int_equal(verdict_finish(&v, a, "x", "h"), 0);
	assert_int_equal(v.nwarnings, 17);
	assert_true(str_eq_cstr(v.warnings[16], "dra-guard: 24 more warnings not shown"));
	arena_free(a);
}

static void test_fail_denies(void **state)
{
	struct arena *a = new_arena();
	struct verdict v;

	(void)state;
	verdict_init(&v, 8);
	assert_int_equal(verdict_add(&v, a, RULE_SLICE_CANARY, ACTION_WARN, STR_LIT(""), STR_LIT("x")), 0);
	assert_int_equal(verdict_fail(&v, a, 400, "cannot decide"), 0);
	assert_false(v.allowed);
	assert_int_equal(v.code, 400);
	assert_int_equal(v.nviolations, 0);
	assert_true(str_eq_cstr(v.message, "cannot decide"));
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_violations_allows),
		cmocka_unit_test(test_warn_allows_with_short_warning),
		cmocka_unit_test(test_dryrun_only_audits),
		cmocka_unit_test(test_deny_joins_messages_and_annotates),
		cmocka_unit_test(test_violation_cap_is_an_error),
		cmocka_unit_test(test_denial_allocates_only_from_the_arena),
		cmocka_unit_test(test_many_warnings_are_summed_up),
		cmocka_unit_test(test_fail_denies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
