/* view_dump.c - a view from a JSON dump (view_dump.h), through the LIST
 * stream decoder in its any-kind mode. */
#include "view_dump.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"
#include "view_stream.h"

#define DUMP_MAX_OBJECT ((size_t)3 << 20)
#define DUMP_ARENA ((size_t)64 << 20)

static int apply_object(struct view_builder *b, enum view_event ev, const struct k8s_object *o, int64_t now,
			char *err, size_t n)
{
	if (!view_holds_kind(o->kind))
		return 1;
	return view_builder_apply(b, o->kind, ev, o, now, err, n);
}

int view_builder_apply_json(struct view_builder *b, enum view_event ev, const char *json, size_t len,
			    struct arena *a, int64_t now_ns, char *err, size_t n)
{
	struct k8s_object o;
	struct decode_error derr;
	int rc;

	arena_reset(a);
	rc = decode_object(json, len, NULL, a, &o, &derr);
	if (rc) {
		snprintf(err, n, "%s", derr.msg);
		return rc;
	}
	return apply_object(b, ev, &o, now_ns, err, n);
}

struct dump {
	struct view_builder *b;
	int64_t now;
	struct view_dump_stats *st;
};

static void count(struct view_dump_stats *st, int rc, enum object_kind k, const char *err)
{
	if (rc == 0) {
		st->objects[k]++;
	} else if (rc == 1) {
		st->other++;
	} else {
		if (st->refused++ == 0)
			snprintf(st->first_error, sizeof(st->first_error), "%s", err);
	}
}

static int sink_object(void *ctx, enum view_event ev, const struct k8s_object *o)
{
	struct dump *d = ctx;
	char err[512];
	int rc = apply_object(d->b, ev, o, d->now, err, sizeof(err));

	if (rc == -ENOMEM)
		return rc;
	count(d->st, rc, o->kind, err);
	return 0;
}

static void sink_skipped(void *ctx, const char *msg)
{
	struct dump *d = ctx;

	count(d->st, -EPROTO, OBJECT_NONE, msg);
}

static int load_json(struct dump *d, const char *text, size_t len, char *err, size_t n)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = sink_skipped, .ctx = d };
	struct view_stream *s = NULL;
	const char *p = text;
	int rc;

	/* A List is streamed; a lone object is a List of one. */
	while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if ((rc = view_stream_new(VIEW_STREAM_LIST, OBJECT_NONE, API_VERSION_UNKNOWN, DUMP_MAX_OBJECT, &s)) != 0)
		return rc;
	if (memmem(text, len < 65536 ? len : 65536, "\"items\"", 7)) {
		rc = view_stream_feed(s, text, len, &sink);
		if (rc == 0)
			rc = view_stream_end(s, &sink);
		if (rc)
			snprintf(err, n, "%s", view_stream_error(s));
	} else {
		struct arena *a = NULL;
		char e2[512];

		if ((rc = arena_new(DUMP_ARENA, &a)) == 0) {
			struct k8s_object o;
			struct decode_error derr;

			rc = decode_object(p, len - (size_t)(p - text), NULL, a, &o, &derr);
			if (rc == 0) {
				rc = apply_object(d->b, VIEW_ADDED, &o, d->now, e2, sizeof(e2));
				count(d->st, rc, o.kind, e2);
				rc = rc == -ENOMEM ? rc : 0;
			} else {
				snprintf(err, n, "%s", derr.msg);
				rc = -EBADMSG;
			}
			arena_free(a);
		}
	}
	view_stream_free(s);
	return rc == -ENOMEM ? rc : rc ? -EBADMSG : 0;
}

int view_dump_load(struct view_builder *b, const char *text, size_t len, int64_t now_ns,
		   struct view_dump_stats *st, char *err, size_t n)
{
	struct dump d = { b, now_ns, st };
	const char *p = text;
	int k, rc;

	memset(st, 0, sizeof(*st));
	while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p == text + len || *p != '{') {
		snprintf(err, n, "not a JSON object or List (YAML goes through the manifest reader)");
		return -EPROTO;
	}
	rc = load_json(&d, text, len, err, n);
	if (rc == 0) {
		struct view_stats vs;

		view_builder_stats(b, &vs);
		for (k = 0; k < OBJECT_KIND_COUNT; k++)
			st->objects[k] = vs.objects[k];
		view_builder_touch_all(b, now_ns);
	}
	return rc;
}
