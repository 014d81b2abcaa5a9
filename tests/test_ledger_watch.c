/* test_ledger_watch.c - when a metrics scrape builds the ledger again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ledger_watch.h"

static void test_rebuild_due(void **state)
{
	static const struct {
		double since_s, build_s;
		bool due;
	} cases[] = {
		{ 0.0, 0.0, true },             /* a build that took nothing: always fresh */
		{ 0.005, 0.001, false },        /* 5 ms after a 1 ms build */
		{ 0.010, 0.001, true },         /* ten build times: due */
		{ 15.0, 2.9, false },           /* 5,000 nodes, a 15 s scrape interval */
		{ 29.0, 2.9, true },            /* the next scrape but one */
		{ 60.0, 2.9, true },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got = ledger_watch_rebuild_due(cases[i].since_s, cases[i].build_s);

		if (got != cases[i].due)
			fail_msg("case %zu: %.3f s after a %.3f s build: due %d, want %d", i, cases[i].since_s,
				 cases[i].build_s, got, cases[i].due);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rebuild_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
