/* test_clock.c - the one place the process reads its clocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"

/* The units agree with each other and with the kernel's clock. */
static void test_units_agree(void **state)
{
	struct timespec ts;
	int64_t ns, ms, k;
	double s;

	(void)state;
	ns = clock_mono_ns();
	ms = clock_mono_ms();
	s = clock_mono_s();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	k = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	assert_true(ns > 0 && ns <= k);
	assert_true(ms >= ns / 1000000 && ms <= k / 1000000);
	assert_true(s * 1e9 >= (double)ns - 1e3 && s * 1e9 <= (double)k + 1e3);
	clock_gettime(CLOCK_REALTIME, &ts);
	k = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ns = clock_wall_ns();
	assert_true(ns >= k);
	/* 2020-01-01 and later: the epoch, not a monotonic origin */
	assert_true(ns > (int64_t)1577836800 * 1000000000);
	assert_int_equal(clock_ns((clockid_t)-1000), 0);
}

/* clock_after: normalised, and add_ns after now on the clock asked. */
static void test_after_is_normalised_and_ahead(void **state)
{
	static const int64_t adds[] = { 0, 1, 999999999, 1000000000, 1500000000, 50000000 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(adds) / sizeof(adds[0]); i++) {
		int64_t before = clock_ns(CLOCK_REALTIME);
		struct timespec ts = clock_after(CLOCK_REALTIME, adds[i]);
		int64_t at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;

		assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
		assert_true(at >= before + adds[i]);
		assert_true(at <= clock_ns(CLOCK_REALTIME) + adds[i]);
	}
}

/* clock_jitter: below n, 0 for n = 0, the state moves, the same seed
 * gives the same sequence, and the values spread over the range. */
static void test_jitter_stays_below_n_and_spreads(void **state)
{
	static const unsigned ns[] = { 1, 2, 3, 10, 1000, 0x7fffffffu, ~0u };
	unsigned a = 12345, b = 12345, seen = 0, i, k;

	(void)state;
	assert_int_equal(clock_jitter(&a, 0), 0);
	assert_int_not_equal(a, 12345);
	(void)clock_jitter(&b, 0);
	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
		for (i = 0; i < 1000; i++) {
			unsigned x = clock_jitter(&a, ns[k]);

			assert_true(x < ns[k] || ns[k] == ~0u);
			assert_int_equal(x, clock_jitter(&b, ns[k]));
			assert_int_not_equal(a, 0);
			if (ns[k] == 10)
				seen |= 1u << x;
		}
	assert_int_equal(seen, 0x3ff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_agree),
		cmocka_unit_test(test_after_is_normalised_and_ahead),
		cmocka_unit_test(test_jitter_stays_below_n_and_spreads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
