/* test_snapshot.c - refcounted objects swapped under one pointer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include "snapshot.h"

struct tracked {
	int *freed;                   /* incremented when this object is freed */
	int value;
};

static void tracked_free(void *obj)
{
	struct tracked *t = obj;

	(*t->freed)++;
	free(t);
}

static struct snapshot *make(int *freed, int value)
{
	struct tracked *t = malloc(sizeof(*t));
	struct snapshot *s;

	assert_non_null(t);
	t->freed = freed;
	t->value = value;
	assert_int_equal(snapshot_new(t, tracked_free, &s), 0);
	return s;
}

static void test_empty_slot_gives_null(void **state)
{
	struct snapshot_slot slot;

	(void)state;
	assert_int_equal(snapshot_slot_init(&slot), 0);
	assert_null(snapshot_slot_acquire(&slot));
	snapshot_slot_destroy(&slot);
}

static void test_reader_keeps_old_object_alive_across_a_swap(void **state)
{
	struct snapshot_slot slot;
	struct snapshot *held, *now;
	int freed_a = 0, freed_b = 0;

	(void)state;
	assert_int_equal(snapshot_slot_init(&slot), 0);
	snapshot_slot_swap(&slot, make(&freed_a, 1));
	held = snapshot_slot_acquire(&slot);
	assert_non_null(held);
	assert_int_equal(((struct tracked *)snapshot_get(held))->value, 1);
	assert_int_equal(snapshot_generation(held), 1);

	snapshot_slot_swap(&slot, make(&freed_b, 2));
	/* The slot moved on, the reader did not: nothing freed yet. */
	assert_int_equal(freed_a, 0);
	assert_int_equal(((struct tracked *)snapshot_get(held))->value, 1);
	now = snapshot_slot_acquire(&slot);
	assert_int_equal(((struct tracked *)snapshot_get(now))->value, 2);
	assert_int_equal(snapshot_generation(now), 2);

	snapshot_release(held);
	assert_int_equal(freed_a, 1);
	snapshot_release(now);
	assert_int_equal(freed_b, 0);        /* the slot still holds it */
	snapshot_slot_destroy(&slot);
	assert_int_equal(freed_b, 1);
}

static void test_swap_without_readers_frees_at_once(void **state)
{
	struct snapshot_slot slot;
	int freed = 0, freed2 = 0;

	(void)state;
	assert_int_equal(snapshot_slot_init(&slot), 0);
	snapshot_slot_swap(&slot, make(&freed, 1));
	snapshot_slot_swap(&slot, make(&freed2, 2));
	assert_int_equal(freed, 1);
	snapshot_slot_swap(&slot, NULL);
	assert_int_equal(freed2, 1);
	assert_null(snapshot_slot_acquire(&slot));
	snapshot_release(NULL);
	snapshot_slot_destroy(&slot);
}

struct race {
	struct snapshot_slot *slot;
	int stop_after;
	int seen_bad;
};

static void *reader(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < r->stop_after; i++) {
		struct snapshot *s = snapshot_slot_acquire(r->slot);

		if (s) {
			if (((struct tracked *)snapshot_get(s))->value < 0)
				r->seen_bad++;
			snapshot_release(s);
		}
	}
	return NULL;
}

/* Readers and a writer at once: every object is freed exactly once (ASan
 * catches a use after free; the counts catch a leak or a double free). */
static void test_concurrent_readers_and_swaps(void **state)
{
	enum { SWAPS = 2000, READERS = 4 };
	struct snapshot_slot slot;
	struct race r[READERS];
	pthread_t t[READERS];
	static int freed[SWAPS];
	int i, total = 0;

	(void)state;
	assert_int_equal(snapshot_slot_init(&slot), 0);
	for (i = 0; i < READERS; i++) {
		r[i] = (struct race){ &slot, 20000, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, reader, &r[i]), 0);
	}
	for (i = 0; i < SWAPS; i++)
		snapshot_slot_swap(&slot, make(&freed[i], i));
	for (i = 0; i < READERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].seen_bad, 0);
	}
	snapshot_slot_destroy(&slot);
	for (i = 0; i < SWAPS; i++) {
		assert_int_equal(freed[i], 1);
		total += freed[i];
	}
	assert_int_equal(total, SWAPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_slot_gives_null),
		cmocka_unit_test(test_reader_keeps_old_object_alive_across_a_swap),
		cmocka_unit_test(test_swap_without_readers_frees_at_once),
		cmocka_unit_test(test_concurrent_readers_and_swaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
