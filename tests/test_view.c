/* test_view.c - the cluster view: LIST and WATCH bodies through the stream
 * decoder into the builder, pools, relists, snapshots and reclamation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "testutil.h"
#include "view.h"
#include "view_dump.h"
#include "view_stream.h"

#define MAX_OBJECT (3u << 20)

static void slice_json(struct buf *b, const char *name, const char *driver, const char *pool,
		       int gen, int count, int ndev, bool wrap_kind)
{
	int i;

	buf_printf(b, "{%s\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%d\",\"uid\":"
		   "\"6f1c1a55-0d2b-4c3e-9a7e-3b9e2a1d4c%02d\",\"managedFields\":[{\"manager\":\"x\","
		   "\"fieldsV1\":{\"f:spec\":{}}}]},\"spec\":{\"driver\":\"%s\",\"nodeName\":\"%s\","
		   "\"pool\":{\"name\":\"%s\",\"generation\":%d,\"resourceSliceCount\":%d},\"devices\":[",
		   wrap_kind ? "\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1\"," : "",
		   name, gen * 10, gen % 100, driver, pool, pool, gen, count);
	for (i = 0; i < ndev; i++)
		buf_printf(b, "%s{\"name\":\"gpu-%d\",\"attributes\":{\"%s/numaNode\":{\"int\":%d},"
			   "\"%s/model\":{\"string\":\"H100\"},\"%s/list\":{\"ints\":[1,2]}},"
			   "\"capacity\":{\"%s/memory\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"1Gi\","
			   "\"validRange\":{\"min\":\"1Gi\",\"max\":\"80Gi\",\"step\":\"1Gi\"}}}},"
			   "\"allowMultipleAllocations\":true,"
			   "\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"4\"},"
			   "\"memory\":{\"allocationMultiplier\":\"16Gi\",\"capacityKey\":\"%s/memory\"}}}",
			   i ? "," : "", i, driver, i / 4, driver, driver, driver, driver);
	buf_add_cstr(b, "]}}");
}

static void claim_json(struct buf *b, const char *ns, const char *name, const char *node,
		       const char *dev, bool wrap_kind)
{
	buf_printf(b, "{%s\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"resourceVersion\":\"7\","
		   "\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b\"},\"spec\":{\"devices\":{\"requests\":"
		   "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}},"
		   "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
		   "\"driver\":\"gpu.example.com\",\"pool\":\"%s\",\"device\":\"%s\","
		   "\"consumedCapacity\":{\"gpu.example.com/memory\":\"8Gi\"}}]},"
		   "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
		   "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\","
		   "\"name\":\"p-1\",\"uid\":\"NOT-A-UUID\"}]}}",
		   wrap_kind ? "\"kind\":\"ResourceClaim\",\"apiVersion\":\"resource.k8s.io/v1\"," : "",
		   name, ns, node, dev, node);
}

/* --- a sink into the builder ----------------------------------------------- */

struct feed {
	struct view_builder *b;
	enum object_kind r;
	bool list;
	int64_t now;
	unsigned skipped;
	char err[512];
};

static int sink_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct feed *f = ctx;

	if (f->list)
		return view_builder_relist_add(f->b, f->r, obj, f->now, f->err, sizeof(f->err));
	return view_builder_apply(f->b, f->r, ev, obj, f->now, f->err, sizeof(f->err));
}

static void sink_skipped(void *ctx, const char *msg)
{
	struct feed *f = ctx;

	(void)msg;
	f->skipped++;
}

/* Feed text to a new stream in chunks of chunk bytes; returns the end's code. */
static int stream_text(struct feed *f, enum view_stream_kind kind, const char *text, size_t len,
		       size_t chunk, struct view_stream_info *info)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped, .ctx = f };
	struct view_stream *s = NULL;
	size_t off;
	int rc = 0;

	assert_int_equal(view_stream_new(kind, f->r, API_V1, MAX_OBJECT, &s), 0);
	for (off = 0; off < len && rc == 0; off += chunk)
		rc = view_stream_feed(s, text + off, len - off < chunk ? len - off : chunk, &sink);
	if (rc == 0)
		rc = view_stream_end(s, &sink);
	if (info)
		*info = *view_stream_info(s);
	view_stream_free(s);
	return rc;
}

static int list_slices(struct view_builder *b, const char *text, size_t len, size_t chunk,
		       int64_t now, struct view_stream_info *info)
{
	struct feed f = { b, OBJECT_RESOURCE_SLICE, true, now, 0, "" };
	int rc;

	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_SLICE), 0);
	rc = stream_text(&f, VIEW_STREAM_LIST, text, len, chunk, info);
	if (rc == 0)
		rc = view_builder_relist_commit(b, OBJECT_RESOURCE_SLICE, now);
	else
		view_builder_relist_abort(b, OBJECT_RESOURCE_SLICE);
	return rc;
}

static void slice_list(struct buf *b, int n, const char *cont)
{
	int i;

	buf_printf(b, "{\"kind\":\"ResourceSliceList\",\"apiVersion\":\"resource.k8s.io/v1\","
		   "\"metadata\":{\"resourceVersion\":\"4242\",\"continue\":\"%s\"},\"items\":[", cont);
	for (i = 0; i < n; i++) {
		char name[64], pool[64];

		snprintf(name, sizeof(name), "worker-%05d-gpu", i);
		snprintf(pool, sizeof(pool), "worker-%05d", i);
		if (i)
			buf_add_char(b, ',');
		slice_json(b, name, "gpu.example.com", pool, 1, 1, 8, false);
	}
	buf_add_cstr(b, "]}");
}

static const struct view *publish(struct view_builder *b)
{
	const struct view *v = NULL;

	assert_int_equal(view_builder_publish(b, &v), 0);
	return v;
}

/* --- tests ----------------------------------------------------------------- */

static void test_list_in_any_chunking_gives_the_same_view(void **state)
{
	static const size_t chunks[] = { 1, 7, 100, 4096, 1u << 30 };
	struct buf text;
	size_t i;

	(void)state;
	buf_init(&text, 64u << 20);
	slice_list(&text, 50, "");
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct view_builder *b = NULL;
		struct view_stream_info info;
		const struct view *v;
		const struct view_slice *s;
		const struct view_pool *p;
		const struct view_device *d;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		assert_int_equal(list_slices(b, buf_cstr(&text), buf_len(&text), chunks[i], 1000, &info), 0);
		assert_string_equal(info.resource_version, "4242");
		assert_string_equal(info.continue_token, "");
		assert_int_equal(info.events[VIEW_ADDED], 50);
		v = publish(b);
		assert_int_equal(view_count(v, OBJECT_RESOURCE_SLICE), 50);
		assert_int_equal(view_pool_count(v), 50);
		assert_int_equal(view_synced_ns(v, OBJECT_RESOURCE_SLICE), 1000);
		s = view_slice_get(v, STR_LIT("worker-00042-gpu"));
		assert_non_null(s);
		assert_string_equal(view_slice_rv(s), "10");
		assert_true(str_eq(view_str(v, s->pool), STR_LIT("worker-00042")));
		assert_int_equal(s->ndevices, 8);
		d = &s->devices[5];
		assert_true(str_eq(view_str(v, d->name), STR_LIT("gpu-5")));
		/* the list-typed attribute is not kept */
		assert_int_equal(d->nattrs, 2);
		assert_int_equal(view_device_attrs(v, d)[0].type, VIEW_ATTR_INT);
		assert_int_equal(view_device_attrs(v, d)[0].i, 1);
		assert_int_equal(d->ncapacity, 1);
		assert_true(d->capacity[0].has_policy);
		assert_non_null(d->capacity[0].step);
		assert_int_equal(d->nmappings, 2);
		assert_true(str_eq(view_atom_str(view_device_mappings(v, d)[1].capacity_key), STR_LIT("gpu.example.com/memory")));
		/* atoms are shared between records */
		assert_ptr_equal(view_device_mappings(v, d)[0].multiplier,
				 view_device_mappings(v, &view_slice_get(v, STR_LIT("worker-00001-gpu"))->devices[0])[0].multiplier);
		p = view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("worker-00042"));
		assert_non_null(p);
		assert_int_equal(p->nslices, 1);
		assert_int_equal(p->generation, 1);
		assert_int_equal(p->resource_slice_count, 1);
		assert_ptr_equal(view_device_find(v, STR_LIT("gpu.example.com"), STR_LIT("worker-00042"),
						  STR_LIT("gpu-7"), &s), &s->devices[7]);
		assert_null(view_device_find(v, STR_LIT("other.example.com"), STR_LIT("worker-00042"),
					     STR_LIT("gpu-7"), NULL));
		view_builder_release(b, v);
		view_builder_free(b);
	}
	buf_free(&text);
}

/* Framing finds where each item ends by its brackets outside strings: an
 * annotation's value holding brackets, quotes and backslashes (escaped
 * quotes, an escaped backslash before a closing quote, a backslash as the
 * last byte of a chunk), at every offset of a 16-byte block, must neither
 * end an item early nor run past its end, whatever the chunking. */
static void test_framing_skips_brackets_and_escapes_inside_strings(void **state)
{
	static const char *const tricky[] = {
		"}", "]}", "{[", "\\\"}", "\\\\", "\\\\\\\"]}", "a\\\\\\\"", "\\u007d\\\\",
	};
	static const size_t chunks[] = { 1, 2, 3, 5, 15, 16, 17, 31, 64, 1u << 30 };
	const size_t ntricky = sizeof(tricky) / sizeof(tricky[0]);
	struct buf text;
	size_t c, i;
	int n = 0;

	(void)state;
	buf_init(&text, 16u << 20);
	buf_add_cstr(&text, "{\"kind\":\"ResourceSliceList\",\"apiVersion\":\"resource.k8s.io/v1\","
		     "\"metadata\":{\"resourceVersion\":\"77\"},\"items\":[");
	for (i = 0; i < 16 * ntricky; i++, n++) {
		char name[64];

		snprintf(name, sizeof(name), "s-%03zu", i);
		buf_printf(&text, "%s{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"1\","
			   "\"annotations\":{\"x\":\"%.*s%s\",\"y\":\"[{\"}},"
			   "\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n-%03zu\","
			   "\"pool\":{\"name\":\"n-%03zu\",\"generation\":1,\"resourceSliceCount\":1},"
			   "\"devices\":[{\"name\":\"gpu-0\"}]}}",
			   i ? "," : "", name, (int)(i % 16), "0123456789abcdef", tricky[i / 16], i, i);
	}
	buf_add_cstr(&text, "]}");
	for (c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct view_builder *b = NULL;
		struct view_stream_info info;
		const struct view *v;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		assert_int_equal(list_slices(b, buf_cstr(&text), buf_len(&text), chunks[c], 1000, &info), 0);
		assert_int_equal(info.events[VIEW_ADDED], n);
		v = publish(b);
		assert_int_equal(view_count(v, OBJECT_RESOURCE_SLICE), n);
		for (i = 0; i < (size_t)n; i += 13) {
			char name[64];

			snprintf(name, sizeof(name), "s-%03zu", i);
			assert_non_null(view_slice_get(v, str_from_cstr(name)));
		}
		view_builder_release(b, v);
		view_builder_free(b);
	}
	buf_free(&text);
}

/* A LIST item past the stream's object cap is refused, never decoded, both
 * when it arrived whole and when it came in pieces. */
static void test_a_list_item_past_the_cap_is_refused_whole_or_cut(void **state)
{
	static const size_t chunks[] = { 7, 1u << 30 };
	struct buf text;
	size_t i, item;

	(void)state;
	buf_init(&text, 1u << 20);
	buf_add_cstr(&text, "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
	item = buf_len(&text);
	claim_json(&text, "ns-1", "c", "node-1", "gpu-0", false);
	item = buf_len(&text) - item;
	buf_add_cstr(&text, "]}");
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped, .ctx = NULL };
		struct view_builder *b = NULL;
		struct view_stream *s = NULL;
		struct feed f;
		size_t off;
		int rc = 0;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, true, 10, 0, "" };
		sink.ctx = &f;
		assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM), 0);
		/* one byte short of the item */
		assert_int_equal(view_stream_new(VIEW_STREAM_LIST, OBJECT_RESOURCE_CLAIM, API_V1, item - 1, &s), 0);
		for (off = 0; off < buf_len(&text) && rc == 0; off += chunks[i])
			rc = view_stream_feed(s, buf_cstr(&text) + off,
					      buf_len(&text) - off < chunks[i] ? buf_len(&text) - off : chunks[i], &sink);
		if (rc == 0)
			rc = view_stream_end(s, &sink);
		assert_int_equal(rc, -E2BIG);
		assert_int_equal(view_stream_info(s)->events[VIEW_ADDED], 0);
		view_stream_free(s);
		view_builder_relist_abort(b, OBJECT_RESOURCE_CLAIM);
		view_builder_free(b);
	}
	buf_free(&text);
}

/* One LIST or WATCH text through a new stream and builder in chunks of
 * chunk bytes: its end's code, objects added or changed, and skipped. */
static void stream_outcome(enum view_stream_kind kind, const char *text, size_t len, size_t chunk,
			   int out[3])
{
	struct view_builder *b = NULL;
	struct view_stream_info info;
	struct feed f;
	bool list = kind == VIEW_STREAM_LIST;

	assert_int_equal(view_builder_new(NULL, &b), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, list, 10, 0, "" };
	if (list)
		assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM), 0);
	memset(&info, 0, sizeof(info));
	out[0] = stream_text(&f, kind, text, len, chunk, &info);
	out[1] = (int)(info.events[VIEW_ADDED] + info.events[VIEW_MODIFIED] + info.events[VIEW_DELETED]);
	out[2] = (int)f.skipped;
	if (list)
		view_builder_relist_abort(b, OBJECT_RESOURCE_CLAIM);
	view_builder_free(b);
}

/* A LIST item that arrived whole is decoded where it is, and a WATCH event
 * that did is found by the scanner's skip; one that arrives in pieces is
 * framed first. Both must come to the same end on any text: damaged copies
 * of a LIST and of a WATCH body (bytes replaced by JSON's structural bytes,
 * deleted, doubled), whole and in chunks of 1 to 97 bytes, give the same
 * code, objects added or changed, and objects skipped. */
static void test_whole_and_chunked_streams_agree_on_damaged_text(void **state)
{
	static const char poke[] = "\"\\{}[],:x 0";
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED" };
	struct buf text[2];
	uint64_t seed = 0x2545F4914F6CDD1Dull;
	size_t i;
	char *t;
	int k, w;

	(void)state;
	buf_init(&text[0], 1u << 20);
	buf_init(&text[1], 1u << 20);
	buf_add_cstr(&text[0], "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
	for (k = 0; k < 12; k++) {
		char name[16];

		snprintf(name, sizeof(name), "c-%02d", k);
		if (k)
			buf_add_char(&text[0], ',');
		claim_json(&text[0], "ns-1", name, "node-1", "gpu-0", false);
		buf_printf(&text[1], "{\"type\":\"%s\",\"object\":", types[k % 3]);
		claim_json(&text[1], "ns-1", name, "node-1", "gpu-0", true);
		buf_add_cstr(&text[1], "}\n");
	}
	buf_add_cstr(&text[0], "],\"kind\":\"ResourceClaimList\"}");
	t = malloc(buf_len(&text[0]) + buf_len(&text[1]) + 8);
	assert_non_null(t);
	for (w = 0; w < 2; w++) {
		enum view_stream_kind kind = w ? VIEW_STREAM_WATCH : VIEW_STREAM_LIST;
		size_t len = buf_len(&text[w]);

		for (i = 0; i < 300; i++) {
			size_t n = len, m, at;
			int whole[3], cut[3];

			memcpy(t, buf_cstr(&text[w]), len);
			for (m = 0; m < 1 + i % 3; m++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				at = (size_t)(seed >> 33) % n;
				switch ((seed >> 20) % 3) {
				case 0:
					t[at] = poke[(seed >> 8) % (sizeof(poke) - 1)];
					break;
				case 1:
					memmove(t + at, t + at + 1, n - at - 1);
					n--;
					break;
				default:
					memmove(t + at + 1, t + at, n - at);
					n++;
					break;
				}
			}
			stream_outcome(kind, t, n, n, whole);
			stream_outcome(kind, t, n, 1 + (size_t)(seed >> 40) % 97, cut);
			assert_int_equal(whole[0], cut[0]);
			assert_int_equal(whole[1], cut[1]);
			assert_int_equal(whole[2], cut[2]);
		}
	}
	free(t);
	buf_free(&text[0]);
	buf_free(&text[1]);
}

/* Events of the usual shape are decoded where they are; any other shape of
 * the same event - members in another order, one more member, whitespace,
 * an escaped type - goes the long way and is applied the same. */
static void test_watch_events_of_any_member_order_apply_alike(void **state)
{
	static const char *const shapes[] = {
		"{\"type\":\"ADDED\",\"object\":%s}",
		"{\"object\":%s,\"type\":\"ADDED\"}",
		"{\"type\":\"ADDED\",\"object\":%s,\"extra\":[1,{}]}",
		" { \"type\" : \"ADDED\" ,\n\"object\" :\t%s }\n",
		"{\"type\":\"\\u0041DDED\",\"object\":%s}",
	};
	size_t i, c;

	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		static const size_t chunks[] = { 5, 1u << 30 };

		for (c = 0; c < 2; c++) {
			struct view_builder *b = NULL;
			struct view_stream_info info;
			struct buf obj, text;
			struct feed f;
			const struct view *v;

			buf_init(&obj, 1 << 16);
			buf_init(&text, 1 << 16);
			claim_json(&obj, "ns-1", "c", "node-1", "gpu-0", true);
			buf_printf(&text, shapes[i], buf_cstr(&obj));
			assert_int_equal(view_builder_new(NULL, &b), 0);
			f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, false, 10, 0, "" };
			assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), chunks[c],
						     &info), 0);
			assert_int_equal(info.events[VIEW_ADDED], 1);
			assert_string_equal(info.resource_version, "7");
			v = publish(b);
			assert_non_null(view_claim_get(v, STR_LIT("ns-1"), STR_LIT("c")));
			view_builder_release(b, v);
			view_builder_free(b);
			buf_free(&obj);
			buf_free(&text);
		}
	}
}

static void test_watch_events_add_update_delete(void **state)
{
	struct view_builder *b = NULL;
	struct feed f;
	struct buf text;
	struct view_stream_info info;
	const struct view *v1, *v2, *v3;
	const struct view_pool *p;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_SLICE, false, 2000, 0, "" };
	buf_init(&text, 1u << 20);
	buf_add_cstr(&text, "{\"type\":\"ADDED\",\"object\":");
	slice_json(&text, "a", "gpu.example.com", "node-1", 3, 1, 2, true);
	buf_add_cstr(&text, "}\n");
	assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), 5, &info), 0);
	assert_string_equal(info.resource_version, "30");
	v1 = publish(b);
	assert_non_null(view_slice_get(v1, STR_LIT("a")));

	/* Deleted, then re-created at a lower generation: the pool remembers 3. */
	buf_reset(&text);
	buf_add_cstr(&text, "{\"type\":\"DELETED\",\"object\":");
	slice_json(&text, "a", "gpu.example.com", "node-1", 3, 1, 2, true);
	buf_add_cstr(&text, "}\n{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ResourceSlice\",\"apiVersion\":"
		     "\"resource.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"99\"}}}\n");
	f.now = 3000;
	assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), 64, &info), 0);
	assert_string_equal(info.resource_version, "99");
	assert_int_equal(info.events[VIEW_DELETED], 1);
	assert_int_equal(info.events[VIEW_BOOKMARK], 1);
	v2 = publish(b);
	assert_null(view_slice_get(v2, STR_LIT("a")));
	p = view_pool_get(v2, STR_LIT("gpu.example.com"), STR_LIT("node-1"));
	assert_non_null(p);
	assert_int_equal(p->nslices, 0);
	assert_int_equal(p->max_generation, 3);
	assert_int_equal(p->emptied_ns, 3000);
	/* the older snapshot still sees the slice */
	assert_non_null(view_slice_get(v1, STR_LIT("a")));

	buf_reset(&text);
	buf_add_cstr(&text, "{\"type\":\"ADDED\",\"object\":");
	slice_json(&text, "b", "gpu.example.com", "node-1", 1, 1, 1, true);
	buf_add_cstr(&text, "}");
	f.now = 4000;
	assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), 1 << 20, NULL), 0);
	v3 = publish(b);
	p = view_pool_get(v3, STR_LIT("gpu.example.com"), STR_LIT("node-1"));
	assert_int_equal(p->nslices, 1);
	assert_int_equal(p->generation, 1);
	assert_int_equal(p->max_generation, 3);
	assert_int_equal(p->changed_ns, 4000);
	assert_int_equal(p->emptied_ns, 0);

	view_builder_release(b, v1);
	view_builder_release(b, v2);
	view_builder_collect(b);
	assert_non_null(view_slice_get(v3, STR_LIT("b")));
	view_builder_release(b, v3);
	view_builder_free(b);
	buf_free(&text);
}

#define HOLD_CLAIMS 3000
#define HOLD_DEVICES 3

/* Claim i's device: most share pool w-0's gpu-0, the rest are spread. */
static void hold_device(unsigned i, char *pool, char *dev)
{
	unsigned d = i % 5 == 0 ? 1 + (i / 5) % (HOLD_DEVICES - 1) : 0;

	sprintf(pool, "w-%u", d == 2 ? 1 : 0);
	sprintf(dev, "gpu-%u", d == 1 ? 1 : 0);
}

/* Every device's hold, built at once by a relist and claim by claim by
 * watch events, names exactly the claims allocated on it, each once; and
 * it follows deletions. */
static void test_device_holds_name_each_claim_on_the_device_once(void **state)
{
	static const char *const pools[HOLD_DEVICES] = { "w-0", "w-0", "w-1" };
	static const char *const devs[HOLD_DEVICES] = { "gpu-0", "gpu-1", "gpu-0" };
	static unsigned char seen[HOLD_CLAIMS];
	struct view_builder *b[2] = { NULL, NULL };
	struct buf text;
	const struct view *v;
	char name[32], pool[16], dev[16];
	unsigned i, d, k, want[HOLD_DEVICES];

	(void)state;
	buf_init(&text, 64u << 20);
	memset(want, 0, sizeof(want));
	for (k = 0; k < 2; k++) {
		struct feed f = { NULL, OBJECT_RESOURCE_CLAIM, k == 0, 10, 0, "" };

		assert_int_equal(view_builder_new(NULL, &b[k]), 0);
		f.b = b[k];
		buf_reset(&text);
		buf_add_cstr(&text, k == 0 ? "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[" : "");
		for (i = 0; i < HOLD_CLAIMS; i++) {
			snprintf(name, sizeof(name), "c-%u", i);
			hold_device(i, pool, dev);
			if (k == 0) {
				buf_add_cstr(&text, i ? "," : "");
			} else {
				buf_add_cstr(&text, "{\"type\":\"ADDED\",\"object\":");
			}
			claim_json(&text, i % 2 ? "ns-a" : "ns-b", name, pool, dev, k == 1);
			buf_add_cstr(&text, k == 1 ? "}\n" : "");
		}
		if (k == 0) {
			buf_add_cstr(&text, "],\"kind\":\"ResourceClaimList\"}");
			assert_int_equal(view_builder_relist_begin(b[k], OBJECT_RESOURCE_CLAIM), 0);
			assert_int_equal(stream_text(&f, VIEW_STREAM_LIST, buf_cstr(&text), buf_len(&text), 4096,
						     NULL), 0);
			assert_int_equal(view_builder_relist_commit(b[k], OBJECT_RESOURCE_CLAIM, 10), 0);
		} else {
			assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), 4096,
						     NULL), 0);
		}
		v = publish(b[k]);
		for (d = 0; d < HOLD_DEVICES; d++) {
			const struct view_hold *h = view_hold_get(v, STR_LIT("gpu.example.com"), str_from_cstr(pools[d]),
								  str_from_cstr(devs[d]));
			unsigned n = 0;

			assert_non_null(h);
			memset(seen, 0, sizeof(seen));
			for (i = 0; i < h->nholders; i++) {
				unsigned c = (unsigned)atoi(view_claim_name(h->holders[i].claim) + 2);

				assert_true(c < HOLD_CLAIMS);
				hold_device(c, pool, dev);
				assert_string_equal(pool, pools[d]);
				assert_string_equal(dev, devs[d]);
				assert_true(str_eq(view_str(v, h->holders[i].claim->namespace),
						   str_from_cstr(c % 2 ? "ns-a" : "ns-b")));
				assert_int_equal(h->holders[i].result, 0);
				assert_int_equal(seen[c]++, 0);
				n++;
			}
			if (k == 0)
				want[d] = n;
			assert_int_equal(n, want[d]);
		}
		assert_int_equal(want[0] + want[1] + want[2], HOLD_CLAIMS);
		assert_int_equal(want[0], HOLD_CLAIMS * 4 / 5);
		view_builder_release(b[k], v);
	}

	/* Deleting the shared device's claims one by one empties its hold. */
	for (i = 0; i < HOLD_CLAIMS; i++) {
		struct feed f = { b[0], OBJECT_RESOURCE_CLAIM, false, 11, 0, "" };

		hold_device(i, pool, dev);
		if (strcmp(pool, "w-0") != 0 || strcmp(dev, "gpu-0") != 0)
			continue;
		snprintf(name, sizeof(name), "c-%u", i);
		buf_reset(&text);
		buf_add_cstr(&text, "{\"type\":\"DELETED\",\"object\":");
		claim_json(&text, i % 2 ? "ns-a" : "ns-b", name, pool, dev, true);
		buf_add_cstr(&text, "}\n");
		assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, buf_cstr(&text), buf_len(&text), 4096, NULL), 0);
	}
	v = publish(b[0]);
	assert_null(view_hold_get(v, STR_LIT("gpu.example.com"), STR_LIT("w-0"), STR_LIT("gpu-0")));
	assert_int_equal(view_hold_get(v, STR_LIT("gpu.example.com"), STR_LIT("w-1"), STR_LIT("gpu-0"))->nholders,
			 want[2]);
	view_builder_release(b[0], v);
	view_builder_free(b[0]);
	view_builder_free(b[1]);
	buf_free(&text);
}

static void test_claims_are_compact_and_keyed_by_namespace(void **state)
{
	struct view_builder *b = NULL;
	struct feed f;
	struct buf text;
	const struct view *v;
	const struct view_claim *c;
	char uid[40];

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, true, 10, 0, "" };
	buf_init(&text, 1u << 20);
	buf_add_cstr(&text, "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
	claim_json(&text, "ns-1", "c", "node-1", "gpu-0", false);
	buf_add_char(&text, ',');
	claim_json(&text, "ns-2", "c", "node-2", "gpu-1", false);
	/* JSON, but not a claim: skipped and counted, not fatal */
	buf_add_cstr(&text, ",{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns-1\"},\"status\":{\"allocation\":7}}");
	buf_add_cstr(&text, "],\"kind\":\"ResourceClaimList\"}");
	{
		/* Arrived whole, each item is decoded where it is; the one
		 * that does not decode is still skipped and counted. */
		struct view_builder *whole = NULL;
		struct feed fw;
		const struct view *vw;

		assert_int_equal(view_builder_new(NULL, &whole), 0);
		fw = (struct feed){ whole, OBJECT_RESOURCE_CLAIM, true, 10, 0, "" };
		assert_int_equal(view_builder_relist_begin(whole, OBJECT_RESOURCE_CLAIM), 0);
		assert_int_equal(stream_text(&fw, VIEW_STREAM_LIST, buf_cstr(&text), buf_len(&text), 1u << 30, NULL), 0);
		assert_int_equal(fw.skipped, 1);
		assert_int_equal(view_builder_relist_commit(whole, OBJECT_RESOURCE_CLAIM, 10), 0);
		vw = publish(whole);
		assert_int_equal(view_count(vw, OBJECT_RESOURCE_CLAIM), 2);
		assert_non_null(view_claim_get(vw, STR_LIT("ns-1"), STR_LIT("c")));
		view_builder_release(whole, vw);
		view_builder_free(whole);
	}
	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM), 0);
	assert_int_equal(stream_text(&f, VIEW_STREAM_LIST, buf_cstr(&text), buf_len(&text), 13, NULL), 0);
	assert_int_equal(f.skipped, 1);
	assert_int_equal(view_builder_relist_commit(b, OBJECT_RESOURCE_CLAIM, 10), 0);
	v = publish(b);
	assert_int_equal(view_count(v, OBJECT_RESOURCE_CLAIM), 2);
	c = view_claim_get(v, STR_LIT("ns-2"), STR_LIT("c"));
	assert_non_null(c);
	assert_true(c->allocated);
	assert_true(c->node_local);
	assert_true(str_eq(view_str(v, c->node_name), STR_LIT("node-2")));
	assert_int_equal(c->nresults, 1);
	assert_true(str_eq(view_str(v, c->results[0].device), STR_LIT("gpu-1")));
	assert_int_equal(view_result_nconsumed(v, &c->results[0]), 1);
	assert_null(view_uid_text(&c->uid));
	view_uid_format(&c->uid, uid, sizeof(uid));
	assert_string_equal(uid, "0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b");
	assert_true(view_uid_eq(&c->uid, STR_LIT("0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b")));
	assert_int_equal(c->nreserved, 1);
	assert_string_equal(view_consumer_name(c, &view_claim_reserved_for(c)[0]), "p-1");
	assert_string_equal(view_uid_text(&view_claim_reserved_for(c)[0].uid), "NOT-A-UUID");
	assert_true(str_eq(view_atom_str(view_consumer_gr(v, &view_claim_reserved_for(c)[0])->api_group), STR_LIT("")));
	assert_true(str_eq(view_atom_str(view_consumer_gr(v, &view_claim_reserved_for(c)[0])->resource), STR_LIT("pods")));
	/* one (apiGroup, resource) pair for both claims' Pods */
	assert_int_equal(view_claim_reserved_for(c)[0].gr.id,
			 view_claim_reserved_for(view_claim_get(v, STR_LIT("ns-1"), STR_LIT("c")))[0].gr.id);
	assert_null(view_claim_get(v, STR_LIT("ns-3"), STR_LIT("c")));
	view_builder_release(b, v);
	view_builder_free(b);
	buf_free(&text);
}

static void test_garbage_bodies_are_errors(void **state)
{
	static const char *const lists[] = {
		"",                                        /* empty: no closing brace */
		"[]",
		"{\"items\":[{\"metadata\":{\"name\":\"x\"}}",   /* cut short */
		"{\"items\":[{\"metadata\":{\"name\":\"x\"}}]}{",  /* trailing */
		"{\"items\":[1]}",
		"{\"items\":[{\"metadata\":{\"name\":\"x\"}} {}]}",
		"{\"items\":[],\"items\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"resourceVersion\":\"2\"}}",
		"{\"items\":[{\"a\":\"\\x\"}]}",
		"{\"items\":[{\"a\":\"\xff\xfe\"}],\"kind\":tru}",
		"{\"kind\" \"x\"}",
	};
	static const char *const watches[] = {
		"{\"type\":\"ADDED\"}",
		"{\"type\":\"NOPE\",\"object\":{}}",
		"[1]",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}",  /* cut short */
		"{\"type\":\"ERROR\",\"object\":{\"code\":410}}{\"type\":\"ADDED\",\"object\":{}}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct view_builder *b = NULL;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		assert_int_not_equal(list_slices(b, lists[i], strlen(lists[i]), 3, 1, NULL), 0);
		assert_int_not_equal(list_slices(b, lists[i], strlen(lists[i]), 1u << 20, 1, NULL), 0);
		view_builder_free(b);
	}
	for (i = 0; i < sizeof(watches) / sizeof(watches[0]); i++) {
		struct view_builder *b = NULL;
		struct feed f;

		assert_int_equal(view_builder_new(NULL, &b), 0);
		f = (struct feed){ b, OBJECT_RESOURCE_SLICE, false, 1, 0, "" };
		assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, watches[i], strlen(watches[i]), 2, NULL),
				 -EBADMSG);
		view_builder_free(b);
	}
}

/* The last event of a burst is applied when its last byte arrives, however
 * it was split: no waiting for more bytes that may not come for a minute. */
static void test_an_event_is_applied_when_its_last_byte_arrives(void **state)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped, .ctx = NULL };
	struct view_builder *b = NULL;
	struct view_stream *s = NULL;
	struct feed f;
	struct buf text;
	size_t n, cut;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_SLICE, false, 1, 0, "" };
	sink.ctx = &f;
	buf_init(&text, 1u << 20);
	buf_add_cstr(&text, "{\"type\":\"ADDED\",\"object\":");
	slice_json(&text, "a", "gpu.example.com", "node-1", 1, 1, 8, true);
	buf_add_cstr(&text, "}\n");
	n = buf_len(&text);
	for (cut = 2; cut < n; cut += n / 7 + 1) {
		assert_int_equal(view_stream_new(VIEW_STREAM_WATCH, OBJECT_RESOURCE_SLICE, API_V1, MAX_OBJECT, &s), 0);
		assert_int_equal(view_stream_feed(s, buf_cstr(&text), n - cut, &sink), 0);
		assert_int_equal(view_stream_info(s)->events[VIEW_ADDED], 0);
		assert_int_equal(view_stream_feed(s, buf_cstr(&text) + n - cut, cut, &sink), 0);
		assert_int_equal(view_stream_info(s)->events[VIEW_ADDED], 1);
		view_stream_free(s);
	}
	view_builder_free(b);
	buf_free(&text);
}

static void test_watch_error_event_reports_the_status(void **state)
{
	static const char body[] =
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		"\"message\":\"too old resource version: 5 (4000)\",\"reason\":\"Expired\",\"code\":410}}\n";
	struct view_builder *b = NULL;
	struct view_stream_info info;
	struct view_status st;
	struct feed f;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_SLICE, false, 1, 0, "" };
	assert_int_equal(stream_text(&f, VIEW_STREAM_WATCH, body, strlen(body), 9, &info), 0);
	assert_true(info.has_status);
	assert_int_equal(info.status.code, 410);
	assert_string_equal(info.status.reason, "Expired");
	assert_int_equal(view_status_parse(body + 25, strlen(body) - 27, &st), 0);
	assert_int_equal(st.code, 410);
	assert_int_equal(view_status_parse("nope", 4, &st), -EBADMSG);
	view_builder_free(b);
}

static int count_initial_end(void *ctx)
{
	(*(int *)ctx)++;
	return 0;
}

/* A streaming list's initial events end at the bookmark annotated
 * k8s.io/initial-events-end "true": the sink hears of it once, with the
 * stream's resourceVersion the bookmark's; any other bookmark is just one;
 * a second end bookmark is not what the API server sends (an error), and a
 * bookmark naming the annotation twice does not decode (skipped: no end). */
static void test_initial_events_end_at_the_annotated_bookmark(void **state)
{
#define BM(rv, ann) "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ResourceSlice\",\"apiVersion\":" \
	"\"resource.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"" rv "\"" ann "},\"spec\":{\"driver\":\"\"," \
	"\"pool\":{\"name\":\"\",\"generation\":0,\"resourceSliceCount\":0}}}}\n"
#define END ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
	static const struct {
		const char *body;
		int rc, ends;
		const char *rv;
	} cases[] = {
		{ BM("7", "") BM("9", END), 0, 1, "9" },
		{ BM("7", ",\"annotations\":{\"k8s.io/initial-events-end\":\"false\"}"), 0, 0, "7" },
		{ BM("9", END) BM("10", END), -EBADMSG, 1, "10" },
		{ BM("9", ",\"annotations\":{\"k8s.io/initial-events-end\":\"false\","
		      "\"k8s.io/initial-events-end\":\"true\"}"), 0, 0, "" },  /* skipped, not an end */
	};
#undef BM
#undef END
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ends = 0;
		struct view_stream_sink sink = { .object = sink_object, .skipped = NULL,
						 .initial_end = count_initial_end, .ctx = &ends };
		struct view_stream *s = NULL;
		int rc;

		assert_int_equal(view_stream_new(VIEW_STREAM_WATCH, OBJECT_RESOURCE_SLICE, API_V1, MAX_OBJECT, &s),
				 0);
		rc = view_stream_feed(s, cases[i].body, strlen(cases[i].body), &sink);
		if (rc == 0)
			rc = view_stream_end(s, &sink);
		if (rc != cases[i].rc || ends != cases[i].ends)
			fail_msg("case %zu: rc %d, %d ends; want %d, %d", i, rc, ends, cases[i].rc, cases[i].ends);
		if (cases[i].rc == 0)
			assert_string_equal(view_stream_info(s)->resource_version, cases[i].rv);
		view_stream_free(s);
	}
}

static void test_relist_replaces_whole_and_keeps_generations(void **state)
{
	struct view_builder *b = NULL;
	struct buf text;
	const struct view *v1, *v2;
	const struct view_pool *p;
	struct view_stats st;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	buf_init(&text, 1u << 20);
	buf_add_cstr(&text, "{\"items\":[");
	slice_json(&text, "s1", "d.example.com", "p1", 5, 1, 1, false);
	buf_add_char(&text, ',');
	slice_json(&text, "s2", "d.example.com", "p2", 2, 1, 1, false);
	buf_add_cstr(&text, "]}");
	assert_int_equal(list_slices(b, buf_cstr(&text), buf_len(&text), 1000, 1, NULL), 0);
	v1 = publish(b);
	/* The relist finds p1 re-made at generation 1 and p2 gone. */
	buf_reset(&text);
	buf_add_cstr(&text, "{\"items\":[");
	slice_json(&text, "s3", "d.example.com", "p1", 1, 1, 1, false);
	buf_add_cstr(&text, "]}");
	assert_int_equal(list_slices(b, buf_cstr(&text), buf_len(&text), 1000, 2, NULL), 0);
	v2 = publish(b);
	assert_null(view_slice_get(v2, STR_LIT("s1")));
	assert_non_null(view_slice_get(v2, STR_LIT("s3")));
	assert_non_null(view_slice_get(v1, STR_LIT("s1")));
	p = view_pool_get(v2, STR_LIT("d.example.com"), STR_LIT("p1"));
	assert_int_equal(p->generation, 1);
	assert_int_equal(p->max_generation, 5);
	p = view_pool_get(v2, STR_LIT("d.example.com"), STR_LIT("p2"));
	assert_non_null(p);
	assert_int_equal(p->nslices, 0);
	assert_int_equal(p->max_generation, 2);
	view_builder_stats(b, &st);
	assert_int_equal(st.pool_tombstones, 1);
	assert_int_equal(st.snapshots, 2);
	/* v1 holds the old records until released */
	view_builder_collect(b);
	view_builder_release(b, v1);
	assert_true(view_builder_collect(b) > 0);
	view_builder_release(b, v2);
	view_builder_collect(b);
	view_builder_stats(b, &st);
	assert_int_equal(st.retired, 0);
	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_SLICE), 0);
	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_SLICE), -EBUSY);
	view_builder_relist_abort(b, OBJECT_RESOURCE_SLICE);
	view_builder_free(b);
	buf_free(&text);
}

/* Many events between publishes, lookups after each, and churn that must
 * give the memory back: the table is exercised through growth, backward
 * shifts and copy-on-write. */
/* The table against a model: claims added and deleted at random from a pool
 * of 5,000 names, in phases that grow the table through many sizes and
 * shrink it again (deletions shift runs back, across the wrap from the last
 * slot to the first), every name's presence checked against the model at
 * each publish. */
static void test_table_agrees_with_a_model_through_growth_and_deletes(void **state)
{
	enum { POOL = 5000 };
	static bool model[POOL];
	struct view_builder *b = NULL;
	struct k8s_object o;
	uint64_t seed = 42;
	char name[32], err[256];
	int phase, i, k, present = 0;

	(void)state;
	memset(model, 0, sizeof(model));
	assert_int_equal(view_builder_new(NULL, &b), 0);
	for (phase = 0; phase < 6; phase++) {
		/* even phases mostly add, odd ones mostly delete */
		for (i = 0; i < 4000; i++) {
			enum view_event ev;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			k = (int)((seed >> 33) % POOL);
			ev = (seed >> 20) % 10 < (phase % 2 ? 2u : 8u) ? VIEW_ADDED : VIEW_DELETED;
			memset(&o, 0, sizeof(o));
			o.kind = OBJECT_RESOURCE_CLAIM;
			snprintf(name, sizeof(name), "m-%d", k);
			o.meta.name = str_from_cstr(name);
			o.meta.namespace = STR_LIT("ns");
			o.meta.resource_version = STR_LIT("1");
			assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, ev, &o, i, err, sizeof(err)), 0);
			present += (ev == VIEW_ADDED) - model[k];
			model[k] = ev == VIEW_ADDED;
			if (i % 1000 == 999) {
				const struct view *v = publish(b);

				for (k = 0; k < POOL; k++) {
					snprintf(name, sizeof(name), "m-%d", k);
					assert_true((view_claim_get(v, STR_LIT("ns"), str_from_cstr(name)) != NULL) == model[k]);
				}
				assert_int_equal(view_count(v, OBJECT_RESOURCE_CLAIM), present);
				view_builder_release(b, v);
				view_builder_collect(b);
			}
		}
	}
	view_builder_free(b);
}

static void test_churn_keeps_the_table_consistent(void **state)
{
	struct view_builder *b = NULL;
	struct k8s_object o;
	struct view_stats st;
	const struct view *held = NULL;
	char name[32], err[256];
	int round, i;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < 3000; i++) {
			int k = (i * 7919 + round * 13) % 2000;
			enum view_event ev = (i + round) % 3 == 0 ? VIEW_DELETED : VIEW_ADDED;

			memset(&o, 0, sizeof(o));
			o.kind = OBJECT_RESOURCE_CLAIM;
			snprintf(name, sizeof(name), "claim-%d", k);
			o.meta.name = str_from_cstr(name);
			o.meta.namespace = (k & 1) ? STR_LIT("ns-a") : STR_LIT("ns-b");
			o.meta.resource_version = STR_LIT("1");
			assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, ev, &o, i, err, sizeof(err)), 0);
			if (i % 500 == 0) {
				const struct view *v = publish(b);

				if (held)
					view_builder_release(b, held);
				held = v;
				view_builder_collect(b);
			}
		}
	}
	/* What the held snapshot says equals a fresh one now (nothing since). */
	{
		const struct view *v = publish(b);
		uint32_t n = 0;

		for (i = 0; i < 2000; i++) {
			snprintf(name, sizeof(name), "claim-%d", i);
			if (view_claim_get(v, (i & 1) ? STR_LIT("ns-a") : STR_LIT("ns-b"), str_from_cstr(name)))
				n++;
		}
		assert_int_equal(n, view_count(v, OBJECT_RESOURCE_CLAIM));
		view_builder_release(b, v);
	}
	view_builder_release(b, held);
	view_builder_collect(b);
	view_builder_stats(b, &st);
	assert_int_equal(st.retired, 0);
	assert_int_equal(st.snapshots, 0);
	view_builder_free(b);
}

static void test_staleness_follows_the_last_word_from_each_watch(void **state)
{
	struct view_builder *b = NULL;
	struct k8s_object o;
	const struct view *v1, *v2;
	char err[256];

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	memset(&o, 0, sizeof(o));
	o.kind = OBJECT_RESOURCE_CLAIM;
	o.meta.name = STR_LIT("a");
	o.meta.namespace = STR_LIT("n");
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_ADDED, &o, 1000, err, sizeof(err)), 0);
	view_builder_touch(b, OBJECT_RESOURCE_SLICE, 1500);
	v1 = publish(b);
	assert_int_equal(view_heard_ns(v1, OBJECT_RESOURCE_CLAIM), 1000);
	assert_false(view_stale(v1, 1900, 1000));
	assert_true(view_stale(v1, 2100, 1000));   /* claims last heard at 1000 */
	/* a bookmark of the claims watch freshens the next snapshot only */
	view_builder_touch(b, OBJECT_RESOURCE_CLAIM, 3000);
	assert_true(view_builder_dirty(b));
	v2 = publish(b);
	assert_false(view_stale(v2, 2400, 1000));
	assert_true(view_stale(v1, 2400, 1000));
	view_builder_release(b, v1);
	view_builder_release(b, v2);
	view_builder_free(b);
}

static void test_limits_refuse_instead_of_truncating(void **state)
{
	struct view_limits lim;
	struct view_builder *b = NULL;
	struct k8s_object o;
	char err[256];

	(void)state;
	view_limits_default(&lim);
	lim.max_objects = 1;
	assert_int_equal(view_builder_new(&lim, &b), 0);
	memset(&o, 0, sizeof(o));
	o.kind = OBJECT_RESOURCE_CLAIM;
	o.meta.name = STR_LIT("a");
	o.meta.namespace = STR_LIT("n");
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_ADDED, &o, 1, err, sizeof(err)), 0);
	o.meta.name = STR_LIT("b");
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_ADDED, &o, 1, err, sizeof(err)), -E2BIG);
	/* an update of the one held is fine */
	o.meta.name = STR_LIT("a");
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_MODIFIED, &o, 1, err, sizeof(err)), 0);
	o.kind = OBJECT_RESOURCE_SLICE;
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_ADDED, &o, 1, err, sizeof(err)), -EINVAL);
	o.kind = OBJECT_RESOURCE_CLAIM;
	o.meta.namespace = STR_LIT("");
	assert_int_equal(view_builder_apply(b, OBJECT_RESOURCE_CLAIM, VIEW_ADDED, &o, 1, err, sizeof(err)), -EINVAL);
	view_builder_free(b);
}

static void test_real_fixture_slice_decodes(void **state)
{
	struct view_builder *b = NULL;
	struct buf text;
	size_t len = 0;
	char *item = testutil_read_file(testutil_repo_path("tests/fixtures/resourceslice-v1-node-allocatable.json"),
					&len);
	const struct view *v;

	(void)state;
	assert_non_null(item);
	buf_init(&text, 4u << 20);
	buf_add_cstr(&text, "{\"items\":[");
	buf_add(&text, item, len);
	buf_add_cstr(&text, "]}");
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(list_slices(b, buf_cstr(&text), buf_len(&text), 777, 1, NULL), 0);
	v = publish(b);
	assert_int_equal(view_count(v, OBJECT_RESOURCE_SLICE), 1);
	assert_int_equal(view_pool_count(v), 1);
	view_builder_release(b, v);
	view_builder_free(b);
	buf_free(&text);
	free(item);
}

/* --- pools, pool names, Pods and Nodes (what the ledger reads) ---------------- */

static void apply_slice(struct view_builder *b, struct arena *a, enum view_event ev, int64_t now,
			const char *name, const char *driver, const char *pool, int gen)
{
	struct buf t;
	char err[256];

	buf_init(&t, 1 << 20);
	slice_json(&t, name, driver, pool, gen, 1, 2, true);
	if (view_builder_apply_json(b, ev, buf_cstr(&t), buf_len(&t), a, now, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	buf_free(&t);
}

static void test_a_pool_restarts_when_it_comes_back_or_changes_generation(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	struct buf t;
	int k;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	/* the first LIST: whatever the pools are, they have not restarted */
	buf_init(&t, 1 << 20);
	buf_add_cstr(&t, "{\"kind\":\"ResourceSliceList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[");
	slice_json(&t, "s1", "gpu.example.com", "w1", 3, 1, 2, false);
	buf_add_cstr(&t, "]}");
	{
		struct feed f = { b, OBJECT_RESOURCE_SLICE, true, 10, 0, "" };

		assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_SLICE), 0);
		assert_int_equal(stream_text(&f, VIEW_STREAM_LIST, buf_cstr(&t), buf_len(&t), 4096, NULL), 0);
		assert_int_equal(view_builder_relist_commit(b, OBJECT_RESOURCE_SLICE, 10), 0);
	}
	buf_free(&t);
	v = publish(b);
	assert_int_equal(view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("w1"))->restarted_ns, 0);
	view_builder_release(b, v);
	/* an update at the same generation (the one-slice pool's usual update) */
	apply_slice(b, a, VIEW_MODIFIED, 20, "s1", "gpu.example.com", "w1", 3);
	v = publish(b);
	assert_int_equal(view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("w1"))->restarted_ns, 0);
	view_builder_release(b, v);
	/* a new generation: restarted */
	apply_slice(b, a, VIEW_MODIFIED, 30, "s1", "gpu.example.com", "w1", 4);
	v = publish(b);
	assert_int_equal(view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("w1"))->restarted_ns, 30);
	view_builder_release(b, v);
	/* deleted (the kubelet's wipe) and back at generation 1: restarted again,
	 * the highest generation remembered */
	apply_slice(b, a, VIEW_DELETED, 40, "s1", "gpu.example.com", "w1", 4);
	apply_slice(b, a, VIEW_ADDED, 50, "s1-new", "gpu.example.com", "w1", 1);
	v = publish(b);
	{
		const struct view_pool *p = view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("w1"));

		assert_int_equal(p->restarted_ns, 50);
		assert_int_equal(p->max_generation, 4);
		assert_int_equal(p->generation, 1);
	}
	/* a pool first seen after the view began is new, not restarted */
	apply_slice(b, a, VIEW_ADDED, 60, "s2", "gpu.example.com", "w2", 7);
	view_builder_release(b, v);
	v = publish(b);
	assert_int_equal(view_pool_get(v, STR_LIT("gpu.example.com"), STR_LIT("w2"))->restarted_ns, 0);
	view_builder_release(b, v);
	for (k = 0; k < 2; k++)
		view_builder_collect(b);
	view_builder_free(b);
	arena_free(a);
}

static void test_pool_names_index_the_drivers_that_use_them(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	const struct view_atom *d[4];

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	apply_slice(b, a, VIEW_ADDED, 1, "g", "gpu.example.com", "w1", 1);
	apply_slice(b, a, VIEW_ADDED, 1, "n", "nic.example.com", "w1", 1);
	apply_slice(b, a, VIEW_ADDED, 1, "o", "nic.example.com", "w2", 1);
	v = publish(b);
	assert_int_equal(view_pool_drivers(v, STR_LIT("w1"), d, 4), 2);
	assert_int_equal(view_pool_drivers(v, STR_LIT("w2"), d, 4), 1);
	assert_string_equal(view_atom_str(d[0]).ptr, "nic.example.com");
	view_builder_release(b, v);
	apply_slice(b, a, VIEW_DELETED, 2, "g", "gpu.example.com", "w1", 1);
	v = publish(b);
	assert_int_equal(view_pool_drivers(v, STR_LIT("w1"), d, 4), 1);   /* a tombstone is no user */
	assert_string_equal(view_atom_str(d[0]).ptr, "nic.example.com");
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
}

static void test_pods_and_nodes_keep_what_the_ledger_reads(void **state)
{
	static const char pod[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
		"\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b\",\"managedFields\":[{\"manager\":\"x\"}]},"
		"\"spec\":{\"nodeName\":\"w1\",\"resourceClaims\":[{\"name\":\"a\",\"resourceClaimName\":\"fixed\"},"
		"{\"name\":\"b\",\"resourceClaimTemplateName\":\"t\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\","
		"\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}},\"env\":[{\"name\":\"X\"}]}]},"
		"\"status\":{\"phase\":\"Running\",\"resourceClaimStatuses\":[{\"name\":\"b\",\"resourceClaimName\":\"p-b-x7\"}],"
		"\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"p-b-x7\",\"containers\":[\"c\"],"
		"\"resources\":{\"cpu\":\"4\"}}]}}";
	static const char node[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w1\"},\"status\":{\"allocatable\":"
		"{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\",\"example.com/foo\":\"3\"}}}";
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	const struct view_pod *p;
	const struct view_node *n;
	char err[256];

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	assert_int_equal(view_builder_apply_json(b, VIEW_ADDED, pod, strlen(pod), a, 1, err, sizeof(err)), 0);
	assert_int_equal(view_builder_apply_json(b, VIEW_ADDED, node, strlen(node), a, 1, err, sizeof(err)), 0);
	v = publish(b);
	p = view_pod_get(v, STR_LIT("ns"), STR_LIT("p"));
	assert_non_null(p);
	assert_string_equal(view_str(v, p->node_name).ptr, "w1");
	assert_true(view_uid_eq(&p->uid, STR_LIT("0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b")));
	assert_int_equal(p->nrequests, 2);
	assert_int_equal(p->nclaims, 2);
	assert_string_equal(view_pod_claim(p, 0), "fixed");
	assert_string_equal(view_pod_claim(p, 1), "p-b-x7");      /* the template's claim, by its generated name */
	assert_int_equal(p->nstatuses, 1);
	assert_int_equal(view_pod_statuses(v, p)[0].claim, 1);
	/* a record of what the ledger reads: far below the Pod's JSON */
	assert_true(p->h.size < 256);
	n = view_node_get(v, STR_LIT("w1"));
	assert_non_null(n);
	assert_int_equal(n->nallocatable, 2);             /* cpu and memory; not pods, not extended */
	assert_int_equal(view_count(v, OBJECT_POD), 1);
	assert_int_equal(view_count(v, OBJECT_NODE), 1);
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
}

/* --- the records' byte budget --------------------------------------------- */

/* Bytes of a record (its own allocation, h.size: deterministic, unlike
 * RSS) per object, for the shapes of `make bench-scale`'s data set: the
 * loader's one-slice pools of 8 mapped devices, allocated claims reserved
 * by a Pod, those Pods with the status the scheduler writes, Pods without
 * claims, Nodes. docs/performance.md states these budgets; a record that
 * grows past one fails here. Strings and quantities that repeat, and the
 * arrays of them (attributes, mappings, requests, charges), are interned
 * atoms shared by every record holding them: counted once for the view
 * below, not per object. */
#define BUDGET_PER_DEVICE 46        /* a slice's record over its 8 devices */
#define BUDGET_PER_CLAIM 128        /* one result, one consumer */
#define BUDGET_PER_POD_WITH_CLAIM 72
#define BUDGET_PER_POD 56
#define BUDGET_PER_NODE 32
#define BUDGET_PER_HOLD_DEVICE 40   /* a held device's hold, with one holder */
#define BUDGET_ATOMS_PER_NODE 224   /* interned bytes, for the whole view */

#define B_NODES 64
#define B_CLAIMS 160
#define B_FREE_PODS 80

struct budget_sum {
	size_t bytes;
	uint32_t n, with_claims;
	size_t bytes_with_claims;
};

static void sum_slice(struct budget_sum *c, const struct view_slice *r)
{
	c->bytes += r->h.size;
	c->n += r->ndevices;
}

static void sum_claim(struct budget_sum *c, const struct view_claim *r)
{
	c->bytes += r->h.size;
	c->n++;
}

static void sum_pod(struct budget_sum *c, const struct view_pod *r)
{
	if (r->nstatuses) {
		c->bytes_with_claims += r->h.size;
		c->with_claims++;
	} else {
		c->bytes += r->h.size;
		c->n++;
	}
}

static void sum_node(struct budget_sum *c, const struct view_node *r)
{
	c->bytes += r->h.size;
	c->n++;
}

static void apply(struct view_builder *b, struct arena *a, struct buf *t)
{
	char err[256];

	assert_int_equal(view_builder_apply_json(b, VIEW_ADDED, buf_cstr(t), buf_len(t), a, 1, err, sizeof(err)), 0);
	buf_reset(t);
}

static void test_records_stay_within_their_byte_budget(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	struct budget_sum sl = { 0 }, cl = { 0 }, po = { 0 }, no = { 0 }, ho = { 0 };
	struct view_iter it;
	const struct view_slice *sr;
	const struct view_claim *cr;
	const struct view_pod *pr;
	const struct view_node *nr;
	struct view_stats st;
	const struct view *v;
	struct buf t;
	int i, k;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	buf_init(&t, 1u << 20);
	for (i = 0; i < B_NODES; i++) {
		buf_printf(&t, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
			   "{\"name\":\"worker-%05d-gpu-example-com\",\"uid\":\"6f1c1a55-0d2b-4c3e-9a7e-%012d\","
			   "\"resourceVersion\":\"%d\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":"
			   "\"worker-%05d\",\"pool\":{\"name\":\"worker-%05d\",\"generation\":1,\"resourceSliceCount\":1},"
			   "\"devices\":[", i, i, 100 + i, i, i);
		for (k = 0; k < 8; k++)
			buf_printf(&t, "%s{\"name\":\"gpu-%d\",\"attributes\":{\"gpu.example.com/numaNode\":{\"int\":%d},"
				   "\"gpu.example.com/model\":{\"string\":\"H100-SXM5-80GB\"}},\"capacity\":"
				   "{\"gpu.example.com/memory\":{\"value\":\"80Gi\"}},\"nodeAllocatableResourceMappings\":"
				   "{\"cpu\":{\"allocationMultiplier\":\"4\"},\"memory\":{\"allocationMultiplier\":\"16Gi\"}}}",
				   k ? "," : "", k, k / 4);
		buf_add_cstr(&t, "]}}");
		apply(b, a, &t);
		buf_printf(&t, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"worker-%05d\"},"
			   "\"status\":{\"allocatable\":{\"cpu\":\"128\",\"memory\":\"512Gi\",\"pods\":\"110\"}}}", i);
		apply(b, a, &t);
	}
	for (i = 0; i < B_CLAIMS; i++) {
		int node = i % B_NODES, dev = (i / B_NODES) % 8;

		buf_printf(&t, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
			   "{\"name\":\"claim-%06d\",\"namespace\":\"ns-%03d\",\"uid\":\"6f1c1a55-0d2b-4c3e-9a7e-%012d\","
			   "\"resourceVersion\":\"%d\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
			   "{\"deviceClassName\":\"gpu.example.com\",\"count\":1}}]}},\"status\":{\"allocation\":"
			   "{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":"
			   "\"worker-%05d\",\"device\":\"gpu-%d\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":"
			   "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"worker-%05d\"]}]}]}},"
			   "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p-%d\",\"uid\":"
			   "\"0b5e7c1e-8d7f-4f8e-9a57-%012d\"}]}}",
			   i, i / 50, i, 1000 + i, node, dev, node, i, i);
		apply(b, a, &t);
		buf_printf(&t, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%d\",\"namespace\":"
			   "\"ns-%03d\",\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-%012d\"},\"spec\":{\"nodeName\":\"worker-%05d\","
			   "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"claim-%06d\"}],\"containers\":"
			   "[{\"name\":\"app\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
			   "\"claims\":[{\"name\":\"gpu\"}]}}]},\"status\":{\"phase\":\"Running\","
			   "\"nodeAllocatableResourceClaimStatuses\":[{\"resourceClaimName\":\"claim-%06d\",\"containers\":"
			   "[\"app\"],\"resources\":{\"cpu\":\"4\",\"memory\":\"16Gi\"}}]}}",
			   i, i / 50, i, node, i, i);
		apply(b, a, &t);
	}
	for (i = 0; i < B_FREE_PODS; i++) {
		buf_printf(&t, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q-%d\",\"namespace\":"
			   "\"ns-%03d\",\"uid\":\"0c5e7c1e-8d7f-4f8e-9a57-%012d\"},\"spec\":{\"nodeName\":\"worker-%05d\","
			   "\"containers\":[{\"name\":\"app\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
			   "\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"Running\"}}", i, i % 100, i, i % B_NODES);
		apply(b, a, &t);
	}
	v = publish(b);
	assert_int_equal(view_count(v, OBJECT_RESOURCE_CLAIM), B_CLAIMS);
	assert_int_equal(view_count(v, OBJECT_POD), B_CLAIMS + B_FREE_PODS);
	for (sr = view_first_slice(&it, v); sr; sr = view_next_slice(&it))
		sum_slice(&sl, sr);
	for (cr = view_first_claim(&it, v); cr; cr = view_next_claim(&it))
		sum_claim(&cl, cr);
	for (pr = view_first_pod(&it, v); pr; pr = view_next_pod(&it))
		sum_pod(&po, pr);
	for (nr = view_first_node(&it, v); nr; nr = view_next_node(&it))
		sum_node(&no, nr);
	for (i = 0; i < B_NODES; i++)
		for (k = 0; k < 8; k++) {
			char pool[32], dev[16];
			const struct view_hold *h;

			snprintf(pool, sizeof(pool), "worker-%05d", i);
			snprintf(dev, sizeof(dev), "gpu-%d", k);
			h = view_hold_get(v, STR_LIT("gpu.example.com"), str_from_cstr(pool), str_from_cstr(dev));
			if (h) {
				ho.bytes += h->h.size;
				ho.n++;
				ho.with_claims += h->nholders;
			}
		}
	view_builder_stats(b, &st);
	print_message("bytes per device %zu, claim %zu, Pod with a claim %zu, Pod %zu, node %zu, held device %zu "
		      "(%u holders); atoms %zu per node\n", sl.bytes / sl.n, cl.bytes / cl.n,
		      po.bytes_with_claims / po.with_claims, po.bytes / po.n, no.bytes / no.n, ho.bytes / ho.n,
		      ho.with_claims, st.atom_bytes / B_NODES);
	assert_int_equal(sl.n, B_NODES * 8);
	assert_int_equal(po.with_claims, B_CLAIMS);
	assert_int_equal(ho.with_claims, B_CLAIMS);
	assert_true(sl.bytes <= (size_t)BUDGET_PER_DEVICE * sl.n);
	assert_true(cl.bytes <= (size_t)BUDGET_PER_CLAIM * cl.n);
	assert_true(po.bytes_with_claims <= (size_t)BUDGET_PER_POD_WITH_CLAIM * po.with_claims);
	assert_true(po.bytes <= (size_t)BUDGET_PER_POD * po.n);
	assert_true(no.bytes <= (size_t)BUDGET_PER_NODE * no.n);
	assert_true(ho.bytes <= (size_t)BUDGET_PER_HOLD_DEVICE * ho.n);
	/* What the records share: one copy of each, whatever the number of
	 * claims and Pods (the names of the slices, nodes and their
	 * resourceVersions, a node's charges; 8 devices, 4 namespaces, and
	 * one array of attributes, mappings and requests of each shape). */
	assert_true(st.atom_bytes <= (size_t)BUDGET_ATOMS_PER_NODE * B_NODES);
	/* The atoms' id table: a directory sized from the cap, and chunks of
	 * 4,096 ids only as far as ids were given. */
	assert_true(st.atom_id_bytes <= (4000000 / VIEW_ATOM_CHUNK + 1) * sizeof(void *) +
					(st.atoms / VIEW_ATOM_CHUNK + 1) * VIEW_ATOM_CHUNK * sizeof(void *));
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
	buf_free(&t);
}

/* --- a result's share ID and consumed capacity ----------------------------------- */

static const struct view_claim *result_claim(struct view_builder *b, struct arena *a, const char *name,
					     const char *extra)
{
	struct buf t;
	char err[256];
	const struct view *v;
	const struct view_claim *c;

	buf_init(&t, 1 << 16);
	buf_printf(&t, "{\"kind\":\"ResourceClaim\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":"
		   "{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b\"},"
		   "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
		   "\"driver\":\"gpu.example.com\",\"pool\":\"w1\",\"device\":\"gpu-0\"%s}]}}}}", name, extra);
	if (view_builder_apply_json(b, VIEW_ADDED, buf_cstr(&t), buf_len(&t), a, 1, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	buf_free(&t);
	v = publish(b);
	c = view_claim_get(v, STR_LIT("ns"), str_from_cstr(name));
	view_builder_release(b, v);   /* the builder's working copy keeps the record */
	assert_non_null(c);
	assert_int_equal(c->nresults, 1);
	return c;
}

/* A result's consumed capacity is interned: a result without any holds
 * nothing for it, one with it reads it back as written, and equal amounts
 * (the claims of one shared device) share one copy; the share ID stays the
 * result's own. */
static void test_a_results_share_id_and_consumed_capacity_read_back(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view_claim *plain, *shared, *c1, *c2;
	const struct view_result *r;
	const struct view *v;
	struct quantity q;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	plain = result_claim(b, a, "plain", "");
	shared = result_claim(b, a, "shared", ",\"shareID\":\"7d3f0a2e-1b4c-4d5e-8f6a-0b1c2d3e4f50\","
			      "\"consumedCapacity\":{\"gpu.example.com/memory\":\"8Gi\",\"gpu.example.com/sm\":\"10\"}");
	c1 = result_claim(b, a, "c1", ",\"shareID\":\"1d3f0a2e-1b4c-4d5e-8f6a-0b1c2d3e4f50\","
			  "\"consumedCapacity\":{\"gpu.example.com/memory\":\"8Gi\"}");
	c2 = result_claim(b, a, "c2", ",\"shareID\":\"2d3f0a2e-1b4c-4d5e-8f6a-0b1c2d3e4f50\","
			  "\"consumedCapacity\":{\"gpu.example.com/memory\":\"8Gi\"}");
	v = publish(b);             /* the records above are its own */
	assert_ptr_equal(plain, view_claim_get(v, STR_LIT("ns"), STR_LIT("plain")));
	assert_null(view_atom_at(v, plain->results[0].share_id));
	assert_null(view_result_consumed(v, &plain->results[0]));
	assert_int_equal(view_result_nconsumed(v, &plain->results[0]), 0);
	r = &shared->results[0];
	assert_true(str_eq(view_str(v, r->share_id), STR_LIT("7d3f0a2e-1b4c-4d5e-8f6a-0b1c2d3e4f50")));
	assert_int_equal(view_result_nconsumed(v, r), 2);
	assert_true(str_eq(view_atom_str(view_result_consumed(v, r)[0].name), STR_LIT("gpu.example.com/memory")));
	assert_int_equal(quantity_parse("8Gi", 3, &q), 0);
	assert_int_equal(quantity_cmp(view_atom_qty(view_result_consumed(v, r)[0].value), &q), 0);
	assert_true(str_eq(view_atom_str(view_result_consumed(v, r)[1].name), STR_LIT("gpu.example.com/sm")));
	assert_int_equal(view_result_nconsumed(v, &c1->results[0]), 1);
	assert_int_equal(c1->results[0].consumed.id, c2->results[0].consumed.id);
	assert_int_not_equal(c1->results[0].share_id.id, c2->results[0].share_id.id);
	assert_int_not_equal(c1->results[0].consumed.id, shared->results[0].consumed.id);
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
}

/* --- holders are their claims' records ----------------------------------------- */

static void apply_claim(struct view_builder *b, struct arena *a, enum view_event ev, const char *name)
{
	struct buf t;
	char err[256];

	buf_init(&t, 1 << 16);
	claim_json(&t, "ns-a", name, "w1", "gpu-0", true);
	if (view_builder_apply_json(b, ev, buf_cstr(&t), buf_len(&t), a, 5, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	buf_free(&t);
}

/* Publish, check that gpu-0's holders are c1 and c2 (or c2 alone), in any
 * order (the claims table's), each the very record view_claim_get() gives,
 * and hand back every snapshot before it, so that a retired record is
 * freed. */
static void check_holders(struct view_builder *b, bool c1)
{
	const struct view *v = publish(b);
	const struct view_hold *h = view_hold_get(v, STR_LIT("gpu.example.com"), STR_LIT("w1"), STR_LIT("gpu-0"));
	bool seen[2] = { !c1, false };
	uint32_t i;

	assert_non_null(h);
	assert_int_equal(h->nholders, c1 ? 2 : 1);
	for (i = 0; i < h->nholders; i++) {
		const char *name = view_claim_name(h->holders[i].claim);
		int which = strcmp(name, "c1") == 0 ? 0 : strcmp(name, "c2") == 0 ? 1 : -1;

		assert_true(which >= 0 && !seen[which]);
		seen[which] = true;
		assert_ptr_equal(h->holders[i].claim, view_claim_get(v, STR_LIT("ns-a"), str_from_cstr(name)));
		assert_int_equal(h->holders[i].result, 0);
	}
	assert_true(seen[0] && seen[1]);
	view_builder_release(b, v);
	view_builder_collect(b);
}

/* A holder points at its claim's record (nothing copied), so every way a
 * claim's record is replaced must move it: an update that keeps the
 * allocation (the holders keep their order), the claims' recharge when
 * their device's slice arrives, a relist, a deletion. Under ASan a holder
 * left on a replaced record reads freed memory here. */
static void test_holders_are_their_claims_records(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	const struct view_hold *h;
	struct buf text;
	struct feed f;
	int i;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	apply_claim(b, a, VIEW_ADDED, "c1");   /* no slice yet: both wait for their charges */
	apply_claim(b, a, VIEW_ADDED, "c2");
	check_holders(b, true);
	apply_slice(b, a, VIEW_ADDED, 6, "s1", "gpu.example.com", "w1", 1);   /* recharged: new records */
	check_holders(b, true);
	apply_claim(b, a, VIEW_MODIFIED, "c1");
	check_holders(b, true);
	apply_claim(b, a, VIEW_MODIFIED, "c2");
	check_holders(b, true);
	buf_init(&text, 1 << 16);
	buf_add_cstr(&text, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[");
	claim_json(&text, "ns-a", "c1", "w1", "gpu-0", false);
	buf_add_char(&text, ',');
	claim_json(&text, "ns-a", "c2", "w1", "gpu-0", false);
	buf_add_cstr(&text, "]}");
	f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, true, 7, 0, "" };
	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM), 0);
	assert_int_equal(stream_text(&f, VIEW_STREAM_LIST, buf_cstr(&text), buf_len(&text), 4096, NULL), 0);
	assert_int_equal(view_builder_relist_commit(b, OBJECT_RESOURCE_CLAIM, 7), 0);
	check_holders(b, true);
	apply_claim(b, a, VIEW_DELETED, "c1");
	check_holders(b, false);
	/* more claims waiting for one device than are moved one by one: the
	 * retry rebuilds the holds once */
	for (i = 0; i < 100; i++) {
		char name[16], err[256];

		snprintf(name, sizeof(name), "d%d", i);
		buf_reset(&text);
		claim_json(&text, "ns-b", name, "w2", "gpu-1", true);
		assert_int_equal(view_builder_apply_json(b, VIEW_ADDED, buf_cstr(&text), buf_len(&text), a, 8, err,
							 sizeof(err)), 0);
	}
	apply_slice(b, a, VIEW_ADDED, 9, "s2", "gpu.example.com", "w2", 1);
	v = publish(b);
	h = view_hold_get(v, STR_LIT("gpu.example.com"), STR_LIT("w2"), STR_LIT("gpu-1"));
	assert_non_null(h);
	assert_int_equal(h->nholders, 100);
	for (i = 0; i < 100; i++) {
		assert_false(h->holders[i].claim->charge_pending);
		assert_ptr_equal(h->holders[i].claim,
				 view_claim_get(v, STR_LIT("ns-b"), str_from_cstr(view_claim_name(h->holders[i].claim))));
	}
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
	buf_free(&text);
}

/* --- atom ids recycled ------------------------------------------------------- */

#define RECYCLE_CLAIMS 8

/* What a reader reads of claim c through snapshot v. */
static void claim_text(const struct view *v, const struct view_claim *c, char *out, size_t n)
{
	const struct view_result *r = &c->results[0];
	const struct view_group_resource *gr = view_consumer_gr(v, &view_claim_reserved_for(c)[0]);

	snprintf(out, n, "%.*s/%s node=%.*s %.*s/%.*s/%.*s request=%.*s consumed=%.*s for %.*s", STR_FMT(view_str(v, c->namespace)),
		 view_claim_name(c), STR_FMT(view_str(v, c->node_name)), STR_FMT(view_str(v, r->driver)),
		 STR_FMT(view_str(v, r->pool)), STR_FMT(view_str(v, r->device)), STR_FMT(view_str(v, r->request)),
		 STR_FMT(view_atom_str(view_result_consumed(v, r)[0].name)), STR_FMT(view_atom_str(gr->resource)));
}

static void recycle_claims(struct view_builder *b, struct arena *a, enum view_event ev, const char *gen, int64_t now)
{
	struct buf t;
	char err[256], ns[32], node[32], dev[32];
	int i;

	buf_init(&t, 1 << 16);
	for (i = 0; i < RECYCLE_CLAIMS; i++) {
		snprintf(ns, sizeof(ns), "%s-ns-%d", gen, i);
		snprintf(node, sizeof(node), "%s-node-%d", gen, i);
		snprintf(dev, sizeof(dev), "%s-dev-%d", gen, i);
		buf_reset(&t);
		claim_json(&t, ns, "c", node, dev, true);
		if (view_builder_apply_json(b, ev, buf_cstr(&t), buf_len(&t), a, now, err, sizeof(err)) != 0)
			fail_msg("%s", err);
	}
	buf_free(&t);
}

/* The ids of a claim's own atoms (its namespace, node, pool and device:
 * the other atoms are shared by every claim here). */
static void claim_ids(const struct view_claim *c, uint32_t out[4])
{
	out[0] = c->namespace.id;
	out[1] = c->node_name.id;
	out[2] = c->results[0].pool.id;
	out[3] = c->results[0].device.id;
}

static bool id_among(uint32_t id, const uint32_t ids[][4], int n)
{
	int i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < 4; k++)
			if (ids[i][k] == id)
				return true;
	return false;
}

/* Records name atoms by id, and a freed atom's id is given again: never
 * while a snapshot that can reach a record holding it is still held. A
 * snapshot held across the deletion of its claims, the making of others,
 * the release of every other snapshot and a collect reads the same text
 * through every id; once it is let go its ids are given to new atoms, and
 * a snapshot held across that reads its own claims unchanged too. Under
 * ASan a record or atom freed too early is a use after free here. */
static void test_a_recycled_atom_id_never_changes_an_older_snapshot(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *old, *mid, *v;
	const struct view_claim *oc[RECYCLE_CLAIMS], *mc[RECYCLE_CLAIMS];
	char want_old[RECYCLE_CLAIMS][256], want_mid[RECYCLE_CLAIMS][256], got[256], name[32];
	uint32_t old_ids[RECYCLE_CLAIMS][4], ids[4];
	int i, k, recycled = 0;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 24, &a), 0);
	recycle_claims(b, a, VIEW_ADDED, "old", 1);
	old = publish(b);
	for (i = 0; i < RECYCLE_CLAIMS; i++) {
		snprintf(name, sizeof(name), "old-ns-%d", i);
		oc[i] = view_claim_get(old, str_from_cstr(name), STR_LIT("c"));
		assert_non_null(oc[i]);
		claim_text(old, oc[i], want_old[i], sizeof(want_old[i]));
		claim_ids(oc[i], old_ids[i]);
	}
	/* The old claims go; other snapshots come and go; new claims come. */
	recycle_claims(b, a, VIEW_DELETED, "old", 2);
	v = publish(b);
	assert_int_equal(view_count(v, OBJECT_RESOURCE_CLAIM), 0);
	view_builder_release(b, v);
	view_builder_collect(b);
	recycle_claims(b, a, VIEW_ADDED, "mid", 3);
	mid = publish(b);
	view_builder_collect(b);
	for (i = 0; i < RECYCLE_CLAIMS; i++) {
		claim_text(old, oc[i], got, sizeof(got));
		assert_string_equal(got, want_old[i]);
		snprintf(name, sizeof(name), "mid-ns-%d", i);
		mc[i] = view_claim_get(mid, str_from_cstr(name), STR_LIT("c"));
		assert_non_null(mc[i]);
		claim_text(mid, mc[i], want_mid[i], sizeof(want_mid[i]));
		claim_ids(mc[i], ids);
		for (k = 0; k < 4; k++)
			assert_false(id_among(ids[k], old_ids, RECYCLE_CLAIMS));   /* not while old is held */
	}
	/* old let go: its records and their atoms are freed, their ids free. */
	view_builder_release(b, old);
	view_builder_collect(b);
	recycle_claims(b, a, VIEW_DELETED, "mid", 4);
	recycle_claims(b, a, VIEW_ADDED, "new", 4);
	v = publish(b);
	for (i = 0; i < RECYCLE_CLAIMS; i++) {
		const struct view_claim *c;

		snprintf(name, sizeof(name), "new-ns-%d", i);
		c = view_claim_get(v, str_from_cstr(name), STR_LIT("c"));
		assert_non_null(c);
		claim_ids(c, ids);
		for (k = 0; k < 4; k++)
			recycled += id_among(ids[k], old_ids, RECYCLE_CLAIMS);
		claim_text(mid, mc[i], got, sizeof(got));
		assert_string_equal(got, want_mid[i]);
		claim_text(v, c, got, sizeof(got));
		assert_non_null(strstr(got, "new-ns-"));
	}
	assert_true(recycled > 0);   /* the ids of old's atoms were given again */
	view_builder_release(b, v);
	view_builder_release(b, mid);
	view_builder_free(b);
	arena_free(a);
}

/* --- records of a LIST in slabs ---------------------------------------------- */

#define SLAB_CLAIMS 300

static int cmp_addr(const void *pa, const void *pb)
{
	uintptr_t a = (uintptr_t)*(const void *const *)pa, b = (uintptr_t)*(const void *const *)pb;

	return a < b ? -1 : a > b;
}

/* A LIST's records lie side by side (no allocator header between them:
 * 8-16 bytes a record of 50-250), and once they are all gone so is the
 * room they took. */
static void test_a_lists_records_are_packed_and_freed_whole(void **state)
{
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	struct feed f;
	struct buf text, one;
	const struct view *v;
	const struct view_claim *c[SLAB_CLAIMS];
	struct view_stats before, after;
	size_t sizes = 0;
	char name[32], err[256];
	int i, adjacent = 0;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 20, &a), 0);
	f = (struct feed){ b, OBJECT_RESOURCE_CLAIM, true, 10, 0, "" };
	buf_init(&text, 1u << 22);
	buf_init(&one, 1u << 16);
	buf_add_cstr(&text, "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
	for (i = 0; i < SLAB_CLAIMS; i++) {
		snprintf(name, sizeof(name), "claim-%d", i);
		if (i)
			buf_add_char(&text, ',');
		claim_json(&text, "ns-1", name, "node-1", "gpu-0", false);
	}
	buf_add_cstr(&text, "],\"kind\":\"ResourceClaimList\"}");
	assert_int_equal(view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM), 0);
	assert_int_equal(stream_text(&f, VIEW_STREAM_LIST, buf_cstr(&text), buf_len(&text), 1u << 30, NULL), 0);
	assert_int_equal(view_builder_relist_commit(b, OBJECT_RESOURCE_CLAIM, 10), 0);
	v = publish(b);
	for (i = 0; i < SLAB_CLAIMS; i++) {
		snprintf(name, sizeof(name), "claim-%d", i);
		c[i] = view_claim_get(v, STR_LIT("ns-1"), str_from_cstr(name));
		assert_non_null(c[i]);
		sizes += c[i]->h.size;
	}
	qsort(c, SLAB_CLAIMS, sizeof(c[0]), cmp_addr);
	for (i = 1; i < SLAB_CLAIMS; i++)
		if ((const char *)c[i] == (const char *)c[i - 1] + c[i - 1]->h.size)
			adjacent++;
	/* A new slab now and then breaks a run. */
	assert_true(adjacent >= SLAB_CLAIMS * 9 / 10);
	view_builder_stats(b, &before);
	assert_true(before.record_bytes >= sizes);
	for (i = 0; i < SLAB_CLAIMS; i++) {
		snprintf(name, sizeof(name), "claim-%d", i);
		buf_reset(&one);
		claim_json(&one, "ns-1", name, "node-1", "gpu-0", true);
		assert_int_equal(view_builder_apply_json(b, VIEW_DELETED, buf_cstr(&one), buf_len(&one), a, 11,
							 err, sizeof(err)), 0);
	}
	view_builder_release(b, v);
	v = publish(b);
	view_builder_collect(b);
	assert_int_equal(view_count(v, OBJECT_RESOURCE_CLAIM), 0);
	view_builder_stats(b, &after);
	assert_int_equal(after.holds, 0);
	assert_true(after.record_bytes + sizes <= before.record_bytes);
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
	buf_free(&text);
	buf_free(&one);
}

/* A UID is its 16 bytes when the API server could have made it (a
 * canonical UUID of the RFC 4122 variant); any other is kept as its text,
 * and both read back as they were written. */
static void test_uids_read_back_as_written(void **state)
{
	static const struct {
		const char *uid;
		bool bytes;
		bool canonical;
	} cases[] = {
		{ "0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b", true, true },
		{ "0b5e7c1e-8d7f-4f8e-ba57-1c2d3e4f5a6b", true, true },
		{ "0b5e7c1e-8d7f-4f8e-ca57-1c2d3e4f5a6b", false, true },   /* variant bits 11 */
		{ "00000000-0000-0000-0000-000000000001", false, true },   /* variant bits 00 */
		{ "0B5E7C1E-8D7F-4F8E-9A57-1C2D3E4F5A6B", false, false },  /* not lowercase */
		{ "NOT-A-UUID", false, false },
		{ "", false, false },
		{ "0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6g", false, false },  /* a byte past 'f', last */
		{ "/b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6b", false, false },  /* one before '0', first */
		{ "0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6:", false, false },  /* one past '9' */
		{ "0b5e7c1e08d7f-4f8e-9a57-1c2d3e4f5a6b", false, false },  /* a digit for a dash */
		{ "0b5e7c1e-8d7f-4f8e-9a57-1c2d3e4f5a6", false, false },   /* 35 bytes */
	};
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	const struct view *v;
	char json[512], name[16], err[256], back[64];
	size_t i, j;

	(void)state;
	assert_int_equal(view_builder_new(NULL, &b), 0);
	assert_int_equal(arena_new(1 << 20, &a), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%zu\","
			 "\"namespace\":\"ns\",\"uid\":\"%s\"},\"spec\":{\"nodeName\":\"n\",\"containers\":[]}}",
			 i, cases[i].uid);
		assert_int_equal(view_builder_apply_json(b, VIEW_ADDED, json, strlen(json), a, 1, err, sizeof(err)), 0);
	}
	v = publish(b);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct view_pod *p;
		uint8_t bytes[16], zero[16] = { 0 };

		snprintf(name, sizeof(name), "p-%zu", i);
		p = view_pod_get(v, STR_LIT("ns"), str_from_cstr(name));
		assert_non_null(p);
		assert_true((view_uid_text(&p->uid) == NULL) == cases[i].bytes);
		view_uid_format(&p->uid, back, sizeof(back));
		assert_string_equal(back, cases[i].uid);
		assert_true(view_uid_eq(&p->uid, str_from_cstr(cases[i].uid)));
		assert_false(view_uid_eq(&p->uid, STR_LIT("0b5e7c1e-8d7f-4f8e-9a57-000000000000")));
		/* The parsed-once comparison says the same for every text. */
		for (j = 0; j < sizeof(cases) / sizeof(cases[0]); j++) {
			struct str s = str_from_cstr(cases[j].uid);
			struct view_uid_probe probe;

			view_uid_probe_set(&probe, s);
			assert_int_equal(view_uid_eq_probe(&p->uid, s, &probe), view_uid_eq(&p->uid, s));
			assert_int_equal(view_uid_eq_probe(&p->uid, s, &probe), i == j);
		}
		view_uid_bytes(&p->uid, bytes);
		assert_true((memcmp(bytes, zero, 16) != 0) == cases[i].canonical);
	}
	view_builder_release(b, v);
	view_builder_free(b);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_in_any_chunking_gives_the_same_view),
		cmocka_unit_test(test_framing_skips_brackets_and_escapes_inside_strings),
		cmocka_unit_test(test_a_list_item_past_the_cap_is_refused_whole_or_cut),
		cmocka_unit_test(test_whole_and_chunked_streams_agree_on_damaged_text),
		cmocka_unit_test(test_watch_events_of_any_member_order_apply_alike),
		cmocka_unit_test(test_a_lists_records_are_packed_and_freed_whole),
		cmocka_unit_test(test_uids_read_back_as_written),
		cmocka_unit_test(test_watch_events_add_update_delete),
		cmocka_unit_test(test_claims_are_compact_and_keyed_by_namespace),
		cmocka_unit_test(test_garbage_bodies_are_errors),
		cmocka_unit_test(test_initial_events_end_at_the_annotated_bookmark),
		cmocka_unit_test(test_watch_error_event_reports_the_status),
		cmocka_unit_test(test_an_event_is_applied_when_its_last_byte_arrives),
		cmocka_unit_test(test_relist_replaces_whole_and_keeps_generations),
		cmocka_unit_test(test_churn_keeps_the_table_consistent),
		cmocka_unit_test(test_table_agrees_with_a_model_through_growth_and_deletes),
		cmocka_unit_test(test_limits_refuse_instead_of_truncating),
		cmocka_unit_test(test_staleness_follows_the_last_word_from_each_watch),
		cmocka_unit_test(test_a_pool_restarts_when_it_comes_back_or_changes_generation),
		cmocka_unit_test(test_pool_names_index_the_drivers_that_use_them),
		cmocka_unit_test(test_pods_and_nodes_keep_what_the_ledger_reads),
		cmocka_unit_test(test_real_fixture_slice_decodes),
		cmocka_unit_test(test_device_holds_name_each_claim_on_the_device_once),
		cmocka_unit_test(test_records_stay_within_their_byte_budget),
		cmocka_unit_test(test_holders_are_their_claims_records),
		cmocka_unit_test(test_a_results_share_id_and_consumed_capacity_read_back),
		cmocka_unit_test(test_a_recycled_atom_id_never_changes_an_older_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
