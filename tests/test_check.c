/* test_check.c - what rules report with: lists named in messages. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "check.h"

struct named {
	int other;
	struct str name;
};

static void expect_names(const struct str *items, size_t n, const char *want)
{
	struct arena *a = NULL;
	struct verdict v;
	struct check c;
	struct str got;

	memset(&c, 0, sizeof(c));
	assert_int_equal(arena_new(1 << 20, &a), 0);
	verdict_init(&v, 16);
	c.arena = a;
	c.verdict = &v;
	got = check_names(&c, items, n, sizeof(*items), 0);
	assert_int_equal(c.error, 0);
	if (!str_eq_cstr(got, want))
		fail_msg("got \"%.*s\", want \"%s\"", STR_FMT(got), want);
	arena_free(a);
}

static void test_lists_are_named_not_counted(void **state)
{
	static const struct str items[] = {
		{ "cpu", 3 }, { "memory", 6 }, { "hugepages-2Mi", 13 }, { "a", 1 }, { "b", 1 }, { "c", 1 },
		{ "d", 1 }, { "e", 1 }, { "f", 1 }, { "g", 1 },
	};

	(void)state;
	expect_names(items, 0, "none");
	expect_names(items, 1, "cpu");
	expect_names(items, 2, "cpu and memory");
	expect_names(items, 3, "cpu, memory and hugepages-2Mi");
	expect_names(items, 8, "cpu, memory, hugepages-2Mi, a, b, c, d and e");
	expect_names(items, 10, "cpu, memory, hugepages-2Mi, a, b, c, d, e and 2 more");
}

static void test_names_of_structs_and_long_names(void **state)
{
	char longname[200];
	struct named items[2];
	struct arena *a = NULL;
	struct verdict v;
	struct check c;
	struct str got;

	(void)state;
	memset(longname, 'x', sizeof(longname));
	items[0].name = STR_LIT("dra.example.com");
	items[1].name = (struct str){ longname, sizeof(longname) };
	memset(&c, 0, sizeof(c));
	assert_int_equal(arena_new(1 << 20, &a), 0);
	verdict_init(&v, 16);
	c.arena = a;
	c.verdict = &v;
	got = CHECK_NAMES(&c, items, 2, struct named, name);
	assert_int_equal(got.len, strlen("dra.example.com and ") + CHECK_NAME_MAX);
	assert_true(str_has_prefix(got, "dra.example.com and xxx"));
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_are_named_not_counted),
		cmocka_unit_test(test_names_of_structs_and_long_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
