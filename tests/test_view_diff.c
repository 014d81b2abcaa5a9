/* test_view_diff.c - the records that differ between two snapshots: each
 * added, replaced or deleted key once, nothing that stayed, whatever the
 * table's size or growth in between. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "view.h"
#include "view_diff.h"
#include "view_dump.h"

struct seen {
	unsigned added, replaced, deleted;
	char last[64];
};

static int count(void *ctx, const void *o, const void *n)
{
	struct seen *s = ctx;
	const struct view_node *r = n ? n : o;

	if (o && n) {
		assert_ptr_not_equal(o, n);
		assert_string_equal(view_node_name(o), view_node_name(n));
		s->replaced++;
	} else if (n) {
		s->added++;
	} else {
		s->deleted++;
	}
	snprintf(s->last, sizeof(s->last), "%s", view_node_name(r));
	return 0;
}

static void node(struct view_builder *b, struct arena *a, enum view_event ev, unsigned i, const char *cpu)
{
	char json[256], err[256];

	snprintf(json, sizeof(json), "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%04u\"},"
		 "\"status\":{\"allocatable\":{\"cpu\":\"%s\"}}}", i, cpu);
	if (view_builder_apply_json(b, ev, json, strlen(json), a, 1, err, sizeof(err)) != 0)
		fail_msg("apply: %s", err);
}

static struct seen diff(const struct view *o, const struct view *n, enum object_kind r)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	assert_int_equal(view_diff(o, n, r, count, &s), 0);
	return s;
}

static void test_a_diff_names_each_changed_key_once(void **state)
{
	static const struct {
		const char *what;
		unsigned before;        /* Nodes n0000.. in the old snapshot */
		unsigned add, modify, del;   /* then: added after them, modified and deleted from the first */
	} cases[] = {
		{ "nothing changed", 10, 0, 0, 0 },
		{ "one added", 10, 1, 0, 0 },
		{ "one replaced among many", 500, 0, 1, 0 },
		{ "one deleted", 10, 0, 0, 1 },
		{ "the table grows past its chunks", 20, 2000, 0, 0 },
		{ "all three at once", 300, 7, 5, 3 },
	};
	size_t c;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct view_builder *b = NULL;
		struct arena *a = NULL;
		const struct view *v1 = NULL, *v2 = NULL;
		struct seen s;
		unsigned i;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		assert_int_equal(arena_new(1 << 20, &a), 0);
		for (i = 0; i < cases[c].before; i++)
			node(b, a, VIEW_ADDED, i, "8");
		assert_int_equal(view_builder_publish(b, &v1), 0);
		for (i = 0; i < cases[c].add; i++)
			node(b, a, VIEW_ADDED, cases[c].before + i, "8");
		for (i = 0; i < cases[c].modify; i++)
			node(b, a, VIEW_MODIFIED, i, "16");
		for (i = 0; i < cases[c].del; i++)
			node(b, a, VIEW_DELETED, cases[c].before - 1 - i, "8");
		assert_int_equal(view_builder_publish(b, &v2), 0);
		s = diff(v1, v2, OBJECT_NODE);
		if (s.added != cases[c].add || s.replaced != cases[c].modify || s.deleted != cases[c].del)
			fail_msg("%s: added %u replaced %u deleted %u", cases[c].what, s.added, s.replaced, s.deleted);
		/* the other way round: what was added is what was deleted */
		s = diff(v2, v1, OBJECT_NODE);
		assert_int_equal(s.deleted, cases[c].add);
		assert_int_equal(s.added, cases[c].del);
		assert_int_equal(s.replaced, cases[c].modify);
		/* another table: nothing */
		s = diff(v1, v2, OBJECT_RESOURCE_CLAIM);
		assert_int_equal(s.added + s.replaced + s.deleted, 0);
		s = diff(v2, v2, OBJECT_NODE);
		assert_int_equal(s.added + s.replaced + s.deleted, 0);
		view_builder_release(b, v1);
		view_builder_release(b, v2);
		view_builder_free(b);
		arena_free(a);
	}
}

static int stop(void *ctx, const void *o, const void *n)
{
	(void)ctx;
	(void)o;
	(void)n;
	return 7;
}

static void test_a_nonzero_return_stops_the_walk(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v1 = NULL, *v2 = NULL;
	struct seen s;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 20, &a), 0);
	assert_int_equal(view_builder_publish(b, &v1), 0);
	node(b, a, VIEW_ADDED, 1, "8");
	node(b, a, VIEW_ADDED, 2, "8");
	assert_int_equal(view_builder_publish(b, &v2), 0);
	assert_int_equal(view_diff(v1, v2, OBJECT_NODE, stop, NULL), 7);
	s = diff(v1, v2, OBJECT_NODE);
	assert_int_equal(s.added, 2);
	view_builder_release(b, v1);
	view_builder_release(b, v2);
	view_builder_free(b);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_diff_names_each_changed_key_once),
		cmocka_unit_test(test_a_nonzero_return_stops_the_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
