/* test_view_iter.c - the view's typed iteration (view.h, "Iteration"):
 * every record of a table once, nothing of another table, the same order
 * on every walk of one snapshot, and a held snapshot walked as it was
 * published whatever the builder did since (events, relists). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "view.h"
#include "view_dump.h"
#include "view_stream.h"

/* The tables a walk can take; pools are derived from the slices. */
enum table { T_SLICES, T_POOLS, T_CLAIMS, T_PODS, T_NODES, T_COUNT };

#define MAX_SEEN 4096

/* What one walk saw: each record's name (pools: "driver/pool"), in order. */
struct walk {
	uint32_t n;
	const void *rec[MAX_SEEN];
	char name[MAX_SEEN][48];
};

static void saw(struct walk *w, const void *rec, const char *a, const char *b)
{
	if (w->n >= MAX_SEEN)
		fail_msg("more than %d records", MAX_SEEN);
	w->rec[w->n] = rec;
	snprintf(w->name[w->n], sizeof(w->name[0]), "%s%s%s", a ? a : "", a ? "/" : "", b);
	w->n++;
}

static void walk(const struct view *v, enum table t, struct walk *w)
{
	struct view_iter it;

	memset(w, 0, sizeof(*w));
	switch (t) {
	case T_SLICES:
		for (const struct view_slice *s = view_first_slice(&it, v); s; s = view_next_slice(&it))
			saw(w, s, NULL, view_slice_name(s));
		assert_null(view_next_slice(&it));   /* done stays done */
		break;
	case T_POOLS:
		for (const struct view_pool *p = view_first_pool(&it, v); p; p = view_next_pool(&it))
			saw(w, p, view_str(v, p->driver).ptr, view_str(v, p->name).ptr);
		assert_null(view_next_pool(&it));
		break;
	case T_CLAIMS:
		for (const struct view_claim *c = view_first_claim(&it, v); c; c = view_next_claim(&it))
			saw(w, c, view_str(v, c->namespace).ptr, view_claim_name(c));
		assert_null(view_next_claim(&it));
		break;
	case T_PODS:
		for (const struct view_pod *p = view_first_pod(&it, v); p; p = view_next_pod(&it))
			saw(w, p, view_str(v, p->namespace).ptr, view_pod_name(p));
		assert_null(view_next_pod(&it));
		break;
	case T_NODES:
		for (const struct view_node *n = view_first_node(&it, v); n; n = view_next_node(&it))
			saw(w, n, NULL, view_node_name(n));
		assert_null(view_next_node(&it));
		break;
	default:
		fail();
	}
}

/* The record of table t named as walk() names it, through the lookups. */
static const void *lookup(const struct view *v, enum table t, const char *name)
{
	const char *slash = strchr(name, '/');
	struct str a = slash ? (struct str){ name, (size_t)(slash - name) } : (struct str){ "", 0 };
	struct str b = str_from_cstr(slash ? slash + 1 : name);

	switch (t) {
	case T_SLICES: return view_slice_get(v, b);
	case T_POOLS: return view_pool_get(v, a, b);
	case T_CLAIMS: return view_claim_get(v, a, b);
	case T_PODS: return view_pod_get(v, a, b);
	case T_NODES: return view_node_get(v, b);
	default: return NULL;
	}
}

static uint32_t count_of(const struct view *v, enum table t)
{
	static const enum object_kind res[T_COUNT] = {
		[T_SLICES] = OBJECT_RESOURCE_SLICE, [T_CLAIMS] = OBJECT_RESOURCE_CLAIM, [T_PODS] = OBJECT_POD,
		[T_NODES] = OBJECT_NODE,
	};

	return t == T_POOLS ? view_pool_count(v) : view_count(v, res[t]);
}

/* Walk every table of v: each record once, found by its key, as many as
 * the view counts; want[t] when not UINT32_MAX. */
static void check_walks(const struct view *v, const uint32_t want[T_COUNT])
{
	static struct walk w;
	int t;
	uint32_t i, j;

	for (t = 0; t < T_COUNT; t++) {
		walk(v, (enum table)t, &w);
		if (want[t] != UINT32_MAX)
			assert_int_equal(w.n, want[t]);
		assert_int_equal(w.n, count_of(v, (enum table)t));
		for (i = 0; i < w.n; i++) {
			assert_ptr_equal(lookup(v, (enum table)t, w.name[i]), w.rec[i]);
			for (j = 0; j < i; j++)
				assert_ptr_not_equal(w.rec[j], w.rec[i]);
		}
	}
}

static void apply(struct view_builder *b, enum view_event ev, const char *json)
{
	struct arena *a = NULL;
	char err[256];

	assert_int_equal(arena_new(1 << 20, &a), 0);
	if (view_builder_apply_json(b, ev, json, strlen(json), a, 1, err, sizeof(err)) != 0)
		fail_msg("apply: %s", err);
	arena_free(a);
}

/* Object i of table t (slices: four to a pool, pools of two drivers). */
static void object(enum table t, unsigned i, char *json, size_t n)
{
	switch (t) {
	case T_SLICES:
		snprintf(json, n, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
			 "{\"name\":\"s%04u\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":\"d%u.example.com\","
			 "\"nodeName\":\"n%04u\",\"pool\":{\"name\":\"p%04u\",\"generation\":1,\"resourceSliceCount\":4},"
			 "\"devices\":[{\"name\":\"gpu-0\"}]}}", i, (i / 4) % 2, i / 4, i / 4);
		break;
	case T_CLAIMS:
		snprintf(json, n, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
			 "{\"name\":\"c%04u\",\"namespace\":\"ns%u\",\"uid\":\"6f1c1a55-0d2b-4c3e-9a7e-%012u\","
			 "\"resourceVersion\":\"1\"},\"spec\":{}}", i, i % 3, i);
		break;
	case T_PODS:
		snprintf(json, n, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q%04u\",\"namespace\":"
			 "\"ns%u\",\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-%012u\"},\"spec\":{\"nodeName\":\"n%04u\","
			 "\"containers\":[{\"name\":\"app\",\"image\":\"i\"}]}}", i, i % 3, i, i);
		break;
	case T_NODES:
		snprintf(json, n, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%04u\"},"
			 "\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}", i);
		break;
	default:
		fail();
	}
}

struct relist {
	struct view_builder *b;
	char err[256];
};

static int relist_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct relist *r = ctx;

	(void)ev;
	return view_builder_relist_add(r->b, OBJECT_NODE, obj, 2, r->err, sizeof(r->err));
}

/* A LIST of the nodes first .. first + n - 1 replaces the nodes. */
static void relist_nodes(struct view_builder *b, unsigned first, unsigned n)
{
	struct relist r = { b, "" };
	struct view_stream_sink sink = { .object = relist_object, .ctx = &r };
	struct view_stream *st = NULL;
	char json[1024];
	unsigned i;

	assert_int_equal(view_stream_new(VIEW_STREAM_LIST, OBJECT_NODE, API_V1, 1 << 20, &st), 0);
	assert_int_equal(view_builder_relist_begin(b, OBJECT_NODE), 0);
	snprintf(json, sizeof(json), "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":"
		 "{\"resourceVersion\":\"9\"},\"items\":[");
	assert_int_equal(view_stream_feed(st, json, strlen(json), &sink), 0);
	for (i = 0; i < n; i++) {
		if (i)
			assert_int_equal(view_stream_feed(st, ",", 1, &sink), 0);
		object(T_NODES, first + i, json, sizeof(json));
		assert_int_equal(view_stream_feed(st, json, strlen(json), &sink), 0);
	}
	assert_int_equal(view_stream_feed(st, "]}", 2, &sink), 0);
	if (view_stream_end(st, &sink) != 0)
		fail_msg("relist: %s %s", view_stream_error(st), r.err);
	view_stream_free(st);
	assert_int_equal(view_builder_relist_commit(b, OBJECT_NODE, 2), 0);
}

static const struct view *publish(struct view_builder *b)
{
	const struct view *v = NULL;

	assert_int_equal(view_builder_publish(b, &v), 0);
	return v;
}

static void test_each_table_is_walked_whole_and_alone(void **state)
{
	static const struct {
		const char *what;
		unsigned slices, claims, pods, nodes;
		uint32_t pools;
	} cases[] = {
		{ "empty view", 0, 0, 0, 0, 0 },
		{ "one node only", 0, 0, 0, 1, 0 },
		{ "one slice: its pool too", 1, 0, 0, 0, 1 },
		{ "claims only", 0, 5, 0, 0, 0 },
		{ "Pods only", 0, 0, 7, 0, 0 },
		{ "a little of everything", 8, 3, 4, 2, 2 },
		{ "past one chunk each", 300, 130, 200, 65, 75 },
		{ "many chunks", 1000, 1500, 700, 900, 250 },
	};
	size_t c;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct view_builder *b = NULL;
		const unsigned n[T_COUNT] = { cases[c].slices, 0, cases[c].claims, cases[c].pods, cases[c].nodes };
		const uint32_t want[T_COUNT] = { cases[c].slices, cases[c].pools, cases[c].claims, cases[c].pods,
						 cases[c].nodes };
		char json[1024];
		unsigned i;
		int t;

		print_message("%s\n", cases[c].what);
		assert_int_equal(view_builder_new(NULL, &b), 0);
		for (t = 0; t < T_COUNT; t++)
			for (i = 0; i < n[t]; i++) {
				object((enum table)t, i, json, sizeof(json));
				apply(b, VIEW_ADDED, json);
			}
		check_walks(publish(b), want);
		view_builder_free(b);
	}
}

static void test_a_next_of_another_table_finds_nothing(void **state)
{
	struct view_builder *b = NULL;
	const struct view *v;
	struct view_iter it, zero;
	char json[1024];
	int t;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	for (t = 0; t < T_COUNT; t++) {
		if (t == T_POOLS)
			continue;
		object((enum table)t, 0, json, sizeof(json));
		apply(b, VIEW_ADDED, json);
	}
	v = publish(b);
	assert_non_null(view_first_slice(&it, v));
	assert_null(view_next_pod(&it));
	assert_null(view_next_claim(&it));
	assert_non_null(view_first_pod(&it, v));
	assert_null(view_next_slice(&it));
	assert_null(view_next_node(&it));
	assert_null(view_next_pool(&it));
	/* an iterator never started walks nothing */
	memset(&zero, 0, sizeof(zero));
	assert_null(view_next_slice(&zero));
	assert_null(view_next_node(&zero));
	view_builder_free(b);
}

static void test_walks_of_one_snapshot_agree_on_the_order(void **state)
{
	static struct walk w1, w2;
	struct view_builder *b = NULL;
	const struct view *v;
	struct view_iter a, z;
	const struct view_node *na, *nz;
	char json[1024];
	unsigned i;
	int t;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	for (t = 0; t < T_COUNT; t++)
		for (i = 0; t != T_POOLS && i < 400; i++) {
			object((enum table)t, i, json, sizeof(json));
			apply(b, VIEW_ADDED, json);
		}
	v = publish(b);
	for (t = 0; t < T_COUNT; t++) {
		walk(v, (enum table)t, &w1);
		walk(v, (enum table)t, &w2);
		assert_int_equal(w1.n, w2.n);
		assert_memory_equal(w1.rec, w2.rec, w1.n * sizeof(w1.rec[0]));
	}
	/* two iterators at once, one a step ahead, do not disturb each other */
	na = view_first_node(&a, v);
	nz = view_first_node(&z, v);
	nz = view_next_node(&z);
	for (i = 0; na; i++) {
		na = view_next_node(&a);
		assert_ptr_equal(na, nz);
		if (nz)
			nz = view_next_node(&z);
	}
	assert_int_equal(i, 400);
	view_builder_free(b);
}

/* A held snapshot is walked as it was published; the next one shows the
 * events and the relist. */
static void test_a_held_snapshot_keeps_its_walk_across_events_and_relists(void **state)
{
	static struct walk before[T_COUNT], after;
	struct view_builder *b = NULL;
	const struct view *v1, *v2, *v3;
	const uint32_t want1[T_COUNT] = { 200, 50, 100, 100, 100 };
	const uint32_t want2[T_COUNT] = { 195, 50, 100, 101, 99 };   /* pool p0001 emptied, kept */
	const uint32_t want3[T_COUNT] = { 195, 50, 100, 101, 10 };
	char json[1024];
	unsigned i;
	int t;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	for (t = 0; t < T_COUNT; t++)
		for (i = 0; t != T_POOLS && i < (t == T_SLICES ? 200u : 100u); i++) {
			object((enum table)t, i, json, sizeof(json));
			apply(b, VIEW_ADDED, json);
		}
	v1 = publish(b);
	check_walks(v1, want1);
	for (t = 0; t < T_COUNT; t++)
		walk(v1, (enum table)t, &before[t]);

	/* events: a node deleted, a Pod added, slices deleted (their pools stay), a claim replaced */
	object(T_NODES, 7, json, sizeof(json));
	apply(b, VIEW_DELETED, json);
	object(T_PODS, 100, json, sizeof(json));
	apply(b, VIEW_ADDED, json);
	object(T_SLICES, 3, json, sizeof(json));
	apply(b, VIEW_DELETED, json);
	for (i = 4; i < 8; i++) {   /* every slice of pool p0001 */
		object(T_SLICES, i, json, sizeof(json));
		apply(b, VIEW_DELETED, json);
	}
	object(T_CLAIMS, 5, json, sizeof(json));
	memcpy(strstr(json, "\"resourceVersion\":\"1\""), "\"resourceVersion\":\"2\"", 21);
	apply(b, VIEW_MODIFIED, json);
	v2 = publish(b);
	check_walks(v2, want2);
	walk(v2, T_NODES, &after);
	for (i = 0; i < after.n; i++)
		assert_string_not_equal(after.name[i], "n0007");

	/* a relist of the nodes that brings ten others */
	relist_nodes(b, 1000, 10);
	v3 = publish(b);
	check_walks(v3, want3);
	walk(v3, T_NODES, &after);
	for (i = 0; i < after.n; i++)
		assert_int_equal(strncmp(after.name[i], "n1", 2), 0);

	/* v1 has not moved */
	for (t = 0; t < T_COUNT; t++) {
		walk(v1, (enum table)t, &after);
		assert_int_equal(after.n, before[t].n);
		assert_memory_equal(after.rec, before[t].rec, after.n * sizeof(after.rec[0]));
	}
	check_walks(v1, want1);
	view_builder_release(b, v1);
	view_builder_release(b, v2);
	view_builder_collect(b);
	check_walks(v3, want3);
	view_builder_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_table_is_walked_whole_and_alone),
		cmocka_unit_test(test_a_next_of_another_table_finds_nothing),
		cmocka_unit_test(test_walks_of_one_snapshot_agree_on_the_order),
		cmocka_unit_test(test_a_held_snapshot_keeps_its_walk_across_events_and_relists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
