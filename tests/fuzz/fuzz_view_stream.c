/* fuzz_view_stream.c - libFuzzer target: LIST and WATCH bodies through the
 * cluster view's stream decoder and into a view, whole and in pieces.
 *
 * The first byte picks the stream (LIST or WATCH), the kind of its objects
 * and the size of the pieces; the rest is the body. Fed whole, a LIST item
 * or a WATCH event of the usual shape is decoded where it is (another event
 * is found by the scanner's skip); fed in pieces, a value is framed first.
 * Both ways must come to the same end - the same code, the same objects
 * added, changed or deleted, the same skipped - and nothing may crash, leak
 * or read past the body (the sanitizers). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "view_stream.h"

/* Small, so that a fuzzed body can pass it. */
#define FUZZ_MAX_OBJECT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
	struct view_builder *b;
	enum object_kind kind;
	bool list;
	unsigned skipped;
	char err[256];
};

static int on_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct feed *f = ctx;

	if (f->list)
		return view_builder_relist_add(f->b, f->kind, obj, 1, f->err, sizeof(f->err));
	return view_builder_apply(f->b, f->kind, ev, obj, 1, f->err, sizeof(f->err));
}

static void on_skipped(void *ctx, const char *msg)
{
	struct feed *f = ctx;

	(void)msg;
	f->skipped++;
}

struct outcome {
	int rc;
	uint64_t events;
	unsigned skipped;
};

static struct outcome run(enum view_stream_kind sk, enum object_kind kind, const char *text, size_t len,
			  size_t piece)
{
	struct outcome out = { 0, 0, 0 };
	struct feed f = { NULL, kind, sk == VIEW_STREAM_LIST, 0, "" };
	struct view_stream_sink sink = { .object = on_object, .skipped = on_skipped, .ctx = &f };
	struct view_stream *s = NULL;
	const struct view_stream_info *info;
	size_t off;
	int i;

	if (view_builder_new(NULL, &f.b) != 0 || view_stream_new(sk, kind, API_V1, FUZZ_MAX_OBJECT, &s) != 0)
		abort();
	if (f.list && view_builder_relist_begin(f.b, kind) != 0)
		abort();
	for (off = 0; off < len && out.rc == 0; off += piece)
		out.rc = view_stream_feed(s, text + off, len - off < piece ? len - off : piece, &sink);
	if (out.rc == 0)
		out.rc = view_stream_end(s, &sink);
	info = view_stream_info(s);
	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		out.events = out.events * 1000003u + info->events[i];
	out.skipped = f.skipped;
	view_stream_free(s);
	if (f.list)
		view_builder_relist_abort(f.b, kind);
	view_builder_free(f.b);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum object_kind kinds[] = {
		OBJECT_RESOURCE_CLAIM, OBJECT_RESOURCE_SLICE, OBJECT_POD, OBJECT_NODE,
	};
	enum view_stream_kind sk;
	enum object_kind kind;
	struct outcome whole, cut;
	size_t piece;

	if (size < 1)
		return 0;
	sk = data[0] & 1 ? VIEW_STREAM_WATCH : VIEW_STREAM_LIST;
	kind = kinds[(data[0] >> 1) & 3];
	piece = 1 + (data[0] >> 3);           /* 1 to 32 bytes */
	whole = run(sk, kind, (const char *)data + 1, size - 1, size);
	cut = run(sk, kind, (const char *)data + 1, size - 1, piece);
	if (whole.rc != cut.rc || whole.events != cut.events || whole.skipped != cut.skipped) {
		fprintf(stderr, "whole: rc %d events %llu skipped %u; in %zu-byte pieces: rc %d events %llu skipped %u\n",
			whole.rc, (unsigned long long)whole.events, whole.skipped, piece, cut.rc,
			(unsigned long long)cut.events, cut.skipped);
		abort();
	}
	return 0;
}
