/* test_reqmem.c - the budget for bodies and answers, and the buffer pool. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reqmem.h"

static struct reqmem *make(size_t budget, size_t keep, unsigned max)
{
	struct reqmem_limits lim = {
		.budget = budget,
		.cap = { 1 << 20, 2 << 20 },
		.pool_keep = keep,
		.pool_max = max,
	};
	struct reqmem *rm = NULL;

	assert_int_equal(reqmem_new(&lim, &rm), 0);
	return rm;
}

static void test_a_charge_past_the_budget_fails_and_charges_nothing(void **state)
{
	struct reqmem *rm = make(1000, 4096, 4);

	(void)state;
	assert_true(reqmem_charge(rm, 600));
	assert_true(reqmem_charge(rm, 400));
	assert_int_equal(reqmem_in_use(rm), 1000);
	assert_false(reqmem_charge(rm, 1));
	assert_int_equal(reqmem_in_use(rm), 1000);
	reqmem_uncharge(rm, 400);
	assert_false(reqmem_charge(rm, 401));
	assert_false(reqmem_charge(rm, SIZE_MAX));
	assert_true(reqmem_charge(rm, 400));
	reqmem_uncharge(rm, 1000);
	assert_int_equal(reqmem_in_use(rm), 0);
	assert_int_equal(reqmem_budget(rm), 1000);
	reqmem_free(rm);
}

static void test_limits_without_room_are_refused(void **state)
{
	struct reqmem_limits lim = { .budget = 0, .pool_keep = 1, .pool_max = 1 };
	struct reqmem *rm = NULL;

	(void)state;
	assert_int_equal(reqmem_new(&lim, &rm), -EINVAL);
	lim.budget = 1;
	lim.pool_max = 0;
	assert_int_equal(reqmem_new(&lim, &rm), -EINVAL);
	assert_null(rm);
}

struct hammer {
	struct reqmem *rm;
	size_t max_seen;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	int i;

	for (i = 0; i < 200000; i++) {
		size_t n = (size_t)(i % 7 + 1) * 10;

		if (reqmem_charge(h->rm, n)) {
			size_t now = reqmem_in_use(h->rm);

			if (now > h->max_seen)
				h->max_seen = now;
			reqmem_uncharge(h->rm, n);
		}
	}
	return NULL;
}

/* Charges from many threads at once never add up past the budget. */
static void test_concurrent_charges_never_pass_the_budget(void **state)
{
	struct reqmem *rm = make(100, 4096, 4);
	struct hammer h[4];
	pthread_t t[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		h[i].rm = rm;
		h[i].max_seen = 0;
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &h[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_true(h[i].max_seen <= 100);
	}
	assert_int_equal(reqmem_in_use(rm), 0);
	reqmem_free(rm);
}

static void fill(struct buf *b, size_t n)
{
	assert_int_equal(buf_presize(b, n), 0);
	while (n--)
		assert_int_equal(buf_add_char(b, 'x'), 0);
}

/* A returned buffer is handed out again, empty, with its memory: the
 * smallest that fits the size asked for. */
static void test_the_pool_reuses_the_best_fitting_buffer(void **state)
{
	struct reqmem *rm = make(1 << 20, 64 * 1024, 4);
	struct buf small, big, got;
	const char *small_mem, *big_mem;

	(void)state;
	reqmem_take(rm, REQMEM_BODY, 0, &small);
	fill(&small, 1000);
	small_mem = buf_cstr(&small);
	reqmem_take(rm, REQMEM_BODY, 0, &big);
	fill(&big, 20000);
	big_mem = buf_cstr(&big);
	reqmem_give(rm, REQMEM_BODY, &big);
	reqmem_give(rm, REQMEM_BODY, &small);
	assert_int_equal(buf_allocated(&small), 0);
	assert_int_equal(reqmem_pooled(rm), 1001 + 20001);

	reqmem_take(rm, REQMEM_BODY, 5000, &got);
	assert_ptr_equal(buf_cstr(&got), big_mem);
	assert_int_equal(buf_len(&got), 0);
	reqmem_give(rm, REQMEM_BODY, &got);
	reqmem_take(rm, REQMEM_BODY, 10, &got);
	assert_ptr_equal(buf_cstr(&got), small_mem);
	reqmem_give(rm, REQMEM_BODY, &got);
	/* Nothing big enough: the most recent, grown by its user. */
	reqmem_take(rm, REQMEM_BODY, 50000, &got);
	assert_ptr_equal(buf_cstr(&got), small_mem);
	reqmem_give(rm, REQMEM_BODY, &got);
	/* The kinds do not mix. */
	reqmem_take(rm, REQMEM_ANSWER, 0, &got);
	assert_int_equal(buf_allocated(&got), 0);
	assert_int_equal(buf_add_cstr(&got, "answer"), 0);
	reqmem_give(rm, REQMEM_ANSWER, &got);
	reqmem_free(rm);
}

/* The pool never holds more than pool_max buffers of a kind, none larger
 * than pool_keep. */
static void test_the_pool_is_bounded(void **state)
{
	struct reqmem *rm = make(1 << 20, 4096, 2);
	struct buf b[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		reqmem_take(rm, REQMEM_ANSWER, 0, &b[i]);
		fill(&b[i], i == 3 ? 8000 : 100);
	}
	for (i = 0; i < 4; i++)
		reqmem_give(rm, REQMEM_ANSWER, &b[i]);
	assert_int_equal(reqmem_pooled(rm), 2 * 101);
	reqmem_free(rm);
}

/* Trimming follows a burst: a peak past the threshold and what is held
 * back to an eighth of it; not again until the next peak. */
static void test_trim_follows_a_burst_only(void **state)
{
	struct reqmem *rm = make(1 << 30, 4096, 2);

	(void)state;
	assert_false(reqmem_trim(rm, 1000));
	assert_true(reqmem_charge(rm, 800));
	reqmem_uncharge(rm, 800);
	assert_false(reqmem_trim(rm, 1000));        /* the peak was small */
	assert_true(reqmem_charge(rm, 8000));
	assert_false(reqmem_trim(rm, 1000));        /* still held */
	reqmem_uncharge(rm, 6900);
	assert_false(reqmem_trim(rm, 1000));        /* 1100 > 8000 / 8 */
	reqmem_uncharge(rm, 300);
	assert_true(reqmem_trim(rm, 1000));
	assert_false(reqmem_trim(rm, 1000));
	reqmem_uncharge(rm, 800);
	reqmem_free(rm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_charge_past_the_budget_fails_and_charges_nothing),
		cmocka_unit_test(test_limits_without_room_are_refused),
		cmocka_unit_test(test_concurrent_charges_never_pass_the_budget),
		cmocka_unit_test(test_the_pool_reuses_the_best_fitting_buffer),
		cmocka_unit_test(test_the_pool_is_bounded),
		cmocka_unit_test(test_trim_follows_a_burst_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
