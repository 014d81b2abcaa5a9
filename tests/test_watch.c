/* test_watch.c - directory change notices (inotify). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "watch.h"
#include "testutil.h"

static char root[256];

static int setup(void **state)
{
	(void)state;
	return testutil_tmpdir(root, sizeof(root), "watch");
}

static int teardown(void **state)
{
	(void)state;
	testutil_run("rm -rf %s", root);
	return 0;
}

/* The bits reported once the events have arrived (inotify delivers them
 * as the syscalls return, so a poll with a generous bound is not timing). */
static uint32_t changes(struct watch *w)
{
	struct pollfd p = { .fd = watch_fd(w), .events = POLLIN };
	uint32_t bits = 0, more;

	if (poll(&p, 1, 5000) == 1) {
		assert_int_equal(watch_read(w, &bits), 0);
		/* Drain whatever else is queued. */
		while (poll(&p, 1, 0) == 1 && watch_read(w, &more) == 0 && more)
			bits |= more;
	}
	return bits;
}

static void test_kubelet_swap_and_plain_writes_are_seen(void **state)
{
	struct watch *w;
	unsigned a = 0, b = 0;
	uint32_t bits;

	(void)state;
	testutil_run("mkdir -p %s/a/..v1 %s/b && echo 1 > %s/a/..v1/key && ln -s ..v1 %s/a/..data && "
	    "ln -s ..data/key %s/a/key", root, root, root, root, root);
	assert_int_equal(watch_new(&w), 0);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/a", root);
		assert_int_equal(watch_add(w, p, &a), 0);
		snprintf(p, sizeof(p), "%s/b", root);
		assert_int_equal(watch_add(w, p, &b), 0);
	}
	assert_int_not_equal(a, b);

	/* Nothing happened: nothing to read. */
	assert_int_equal(watch_read(w, &bits), 0);
	assert_int_equal(bits, 0);

	/* The kubelet's way: a new version dir, a temp symlink renamed over ..data. */
	testutil_run("mkdir %s/a/..v2 && echo 2 > %s/a/..v2/key && ln -s ..v2 %s/a/..data_tmp && "
	    "mv -T %s/a/..data_tmp %s/a/..data && rm -rf %s/a/..v1", root, root, root, root, root, root);
	assert_int_equal(changes(w), 1u << a);

	/* A plain rewrite in the other directory. */
	testutil_run("echo x > %s/b/file", root);
	assert_int_equal(changes(w), 1u << b);
	testutil_run("chmod 600 %s/b/file", root);
	assert_int_equal(changes(w), 1u << b);

	watch_free(w);
	watch_free(NULL);
}

static void test_missing_directory_is_picked_up_by_rearm(void **state)
{
	struct watch *w;
	unsigned id = 0;
	char p[512];

	(void)state;
	snprintf(p, sizeof(p), "%s/later", root);
	assert_int_equal(watch_new(&w), 0);
	assert_int_equal(watch_add(w, p, &id), 0);
	assert_int_equal(watch_rearm(w), 0);
	testutil_run("mkdir %s", p);
	assert_int_equal(watch_rearm(w), 1u << id);
	testutil_run("touch %s/now", p);
	assert_int_equal(changes(w), 1u << id);

	/* Removed and made again: the watch follows the path, not the inode. */
	testutil_run("rm -rf %s", p);
	assert_int_equal(changes(w) & (1u << id), 1u << id);
	testutil_run("mkdir %s", p);
	assert_int_equal(watch_rearm(w), 1u << id);
	testutil_run("touch %s/again", p);
	assert_int_equal(changes(w), 1u << id);
	watch_free(w);
}

static void test_capacity_is_bounded(void **state)
{
	struct watch *w;
	unsigned i, id;

	(void)state;
	assert_int_equal(watch_new(&w), 0);
	for (i = 0; i < WATCH_MAX_DIRS; i++)
		assert_int_equal(watch_add(w, root, &id), 0);
	assert_int_equal(watch_add(w, root, &id), -E2BIG);
	/* Same directory under many ids: one event marks them all. */
	testutil_run("touch %s/shared", root);
	assert_int_equal(changes(w), (1u << WATCH_MAX_DIRS) - 1);
	watch_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubelet_swap_and_plain_writes_are_seen),
		cmocka_unit_test(test_missing_directory_is_picked_up_by_rearm),
		cmocka_unit_test(test_capacity_is_bounded),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
