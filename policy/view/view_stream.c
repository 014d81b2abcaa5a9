/* view_stream.c - LIST and WATCH bodies decoded as they arrive.
 *
 * The scanner wants whole text, so the stream keeps the bytes not yet
 * consumed and takes one step at a time from them: a member of the LIST
 * envelope, one item, one WATCH event. A LIST item or a WATCH event (of
 * the shape the API server writes) that arrived whole is decoded where it
 * is, in one pass that validates it and finds its end; another event that
 * arrived whole is found by the scanner's skip. One that did not arrive
 * whole is framed: a small resumable state machine (depth, inside a
 * string, after a backslash) walks each byte once as it arrives and finds
 * where the value closes; only then does the scanner parse (and validate)
 * the whole value, so a value split over many chunks costs one extra pass,
 * and the last event of a burst is applied the moment its last byte
 * arrives. The few
 * small envelope members are parsed from what is buffered and, when the
 * scanner stops at the very end of the buffer, tried again when the buffer
 * has doubled (the rest of a LIST always follows). Any other error is the
 * body's. Consumed bytes are dropped from the front when they are the
 * larger part, so the buffer holds about one object. */
#include "view_stream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "decode.h"
#include "jscan.h"

/* An object's decode may hold a few times its text in the arena. */
#define ARENA_FACTOR 4
#define ERR_MAX 600
/* The envelope and a WATCH event's own nesting above the object. */
#define ENVELOPE_DEPTH 2

enum state {
	ST_OPEN = 0,        /* before the LIST's '{' */
	ST_MEMBER,          /* before a member (or '}') of the LIST */
	ST_ITEMS,           /* inside items: before an element (or ']') */
	ST_DONE,            /* after the LIST's '}' */
	ST_EVENTS,          /* WATCH: before an event */
};

struct view_stream {
	enum view_stream_kind kind;
	enum object_kind obj_kind;
	enum api_version version;
	size_t max_object;
	struct decode_limits lim;
	struct arena *arena;
	char *buf;
	size_t len, pos, alloc;
	size_t retry_at;            /* wait for this many buffered bytes before the next try */
	bool framing;               /* an item or event is being framed */
	size_t frame_pos;           /* next byte to look at */
	unsigned frame_depth;
	bool frame_str, frame_esc;
	enum state st;
	bool first;                 /* no member / element yet in the current container */
	uint32_t seen;              /* envelope members read */
	int error;
	char err[ERR_MAX];
	struct view_stream_info info;
};

int view_stream_new(enum view_stream_kind kind, enum object_kind obj_kind, enum api_version version,
		    size_t max_object, struct view_stream **out)
{
	struct view_stream *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->kind = kind;
	s->obj_kind = obj_kind;
	s->version = version;
	s->max_object = max_object;
	decode_limits_default(&s->lim);
	s->st = kind == VIEW_STREAM_LIST ? ST_OPEN : ST_EVENTS;
	s->first = true;
	s->info.remaining = -1;
	if (arena_new(max_object * ARENA_FACTOR + ((size_t)1 << 20), &s->arena) != 0) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void view_stream_free(struct view_stream *s)
{
	if (!s)
		return;
	arena_free(s->arena);
	free(s->buf);
	free(s);
}

const struct view_stream_info *view_stream_info(const struct view_stream *s)
{
	return &s->info;
}

const char *view_stream_error(const struct view_stream *s)
{
	return s->err;
}

static int fail(struct view_stream *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct view_stream *s, int rc, const char *fmt, ...)
{
	va_list ap;

	if (s->error)
		return s->error;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	s->error = rc;
	return rc;
}

/* The stream's offset of buffer position p, for messages. */
static uint64_t at(const struct view_stream *s, size_t p)
{
	return s->info.bytes - (s->len - p);
}

/* A scanner error: the body's, or (1) a step cut at the buffer's end. */
static int scan_error(struct view_stream *s, const struct jscan *j, size_t base, bool final,
		      const char *what)
{
	char d[300];

	if (!final && base + jscan_offset(j) >= s->len)
		return 1;
	jscan_describe(j, d, sizeof(d));
	return fail(s, -EBADMSG, "%s is not valid JSON at byte %llu: %s", what,
		    (unsigned long long)at(s, base + jscan_offset(j)), d);
}

static size_t skip_ws(const struct view_stream *s, size_t p)
{
	while (p < s->len && (s->buf[p] == ' ' || s->buf[p] == '\n' || s->buf[p] == '\r' ||
			      s->buf[p] == '\t'))
		p++;
	return p;
}

static void copy_str(char *dst, size_t n, struct str v)
{
	size_t k = v.len < n - 1 ? v.len : n - 1;

	memcpy(dst, v.ptr, k);
	dst[k] = '\0';
}

/* Walk the bytes of the value that starts at p ('{') as they arrive: the
 * offset just past its closing brace, or 0 while it is not complete. The
 * scanner validates the value afterwards; this only has to find its end,
 * which it does exactly for valid JSON. */
static size_t frame(struct view_stream *s, size_t p)
{
	size_t i;

	if (!s->framing) {
		s->framing = true;
		s->frame_pos = p;
		s->frame_depth = 0;
		s->frame_str = s->frame_esc = false;
	}
	for (i = s->frame_pos; i < s->len; i++) {
		char c = s->buf[i];

		if (s->frame_str) {
			if (s->frame_esc)
				s->frame_esc = false;
			else if (c == '\\')
				s->frame_esc = true;
			else if (c == '"')
				s->frame_str = false;
			continue;
		}
		if (c == '"') {
			s->frame_str = true;
		} else if (c == '{' || c == '[') {
			s->frame_depth++;
		} else if ((c == '}' || c == ']') && s->frame_depth > 0 && --s->frame_depth == 0) {
			s->framing = false;
			return i + 1;
		}
	}
	s->frame_pos = i;
	return 0;
}

/* Where the value that starts at p ('{') ends, or 0 while it has not all
 * arrived. Most items and events arrive whole, and the scanner's skip finds
 * the end of a whole value (and validates it) much faster than frame()
 * walks it byte by byte, so it is tried first; a value it cannot skip (cut
 * by the end of what arrived, or invalid) is framed from then on, each byte
 * once, and the caller's scan of the framed value says what is wrong with
 * an invalid one. max_depth is the scanner's depth limit at p; *checked,
 * unless NULL, says whether the value was validated on the way. */
static size_t value_end(struct view_stream *s, size_t p, unsigned max_depth, bool *checked)
{
	if (checked)
		*checked = false;
	if (!s->framing) {
		struct jscan j;
		struct str raw;

		jscan_init(&j, s->buf + p, s->len - p, max_depth);
		if (jscan_skip(&j, &raw) == 0) {
			if (checked)
				*checked = true;
			return p + raw.len;
		}
	}
	return frame(s, p);
}

/* --- Status ---------------------------------------------------------------- */

static int parse_status(struct jscan *j, struct arena *a, struct view_status *st)
{
	struct jscan_str k, v;
	struct str t;
	int r;

	memset(st, 0, sizeof(*st));
	if (jscan_object_enter(j) < 0)
		return -EBADMSG;
	while ((r = jscan_object_next(j, &k)) == 1) {
		if (jscan_str_is(&k, "code") && jscan_peek(j) == JSCAN_NUMBER) {
			int64_t c;

			if (jscan_int64(j, &c) < 0)
				return -EBADMSG;
			st->code = c > 0 && c < 1000 ? (int)c : 0;
		} else if ((jscan_str_is(&k, "reason") || jscan_str_is(&k, "message")) &&
			   jscan_peek(j) == JSCAN_STRING) {
			bool reason = jscan_str_is(&k, "reason");

			if (jscan_string(j, &v) < 0 || jscan_str_decode(&v, a, &t) < 0)
				return -EBADMSG;
			if (reason)
				copy_str(st->reason, sizeof(st->reason), t);
			else
				copy_str(st->message, sizeof(st->message), t);
		} else if (jscan_skip(j, NULL) < 0) {
			return -EBADMSG;
		}
	}
	return r < 0 ? -EBADMSG : 0;
}

int view_status_parse(const char *text, size_t len, struct view_status *out)
{
	struct arena *a = NULL;
	struct jscan j;
	int rc;

	memset(out, 0, sizeof(*out));
	if (arena_new(len + 4096, &a) != 0)
		return -ENOMEM;
	jscan_init(&j, text, len, 16);
	rc = parse_status(&j, a, out);
	if (rc == 0 && jscan_finish(&j) < 0)
		rc = -EBADMSG;
	arena_free(a);
	return rc;
}

/* A decoded object, to the sink. */
static int apply(struct view_stream *s, enum view_event ev, const struct k8s_object *o,
		 const struct view_stream_sink *sink)
{
	int rc;

	if (s->kind == VIEW_STREAM_WATCH && o->meta.resource_version.len)
		copy_str(s->info.resource_version, sizeof(s->info.resource_version),
			 o->meta.resource_version);
	s->info.events[ev]++;
	if (ev == VIEW_BOOKMARK) {
		if (!o->meta.initial_events_end || s->kind != VIEW_STREAM_WATCH)
			return 0;
		if (s->info.initial_end)
			return fail(s, -EBADMSG, "a second initial-events-end bookmark");
		s->info.initial_end = true;
		rc = sink->initial_end ? sink->initial_end(sink->ctx) : 0;
		return rc ? fail(s, rc, "the view refused the end of the initial events") : 0;
	}
	rc = sink->object(sink->ctx, ev, o);
	return rc ? fail(s, rc, "the view refused an object") : 0;
}

/* --- objects ---------------------------------------------------------------- */

static int deliver(struct view_stream *s, enum view_event ev, const char *text, size_t len,
		   const struct view_stream_sink *sink)
{
	struct k8s_object o;
	struct decode_error derr;
	int rc;

	arena_reset(s->arena);
	/* A stream of any kind (a `kubectl get -o json` dump): each item names
	 * its own apiVersion and kind. */
	if (s->obj_kind == OBJECT_NONE)
		rc = decode_object(text, len, &s->lim, s->arena, &o, &derr);
	else
		rc = decode_object_as(text, len, s->obj_kind, s->version, &s->lim, s->arena, &o, &derr);
	if (rc == -EPROTO) {
		char msg[DECODE_ERROR_MAX + 64];

		s->info.skipped++;
		snprintf(msg, sizeof(msg), "%s", derr.msg);
		if (sink->skipped)
			sink->skipped(sink->ctx, msg);
		return 0;
	}
	if (rc)
		return fail(s, rc, "an object could not be decoded: %s", derr.msg);
	return apply(s, ev, &o, sink);
}

/* The object that starts at from, decoded where it is when it has all
 * arrived and decodes (0, *used its length); anything else, nothing done
 * (the caller goes the long way, which frames it first and says what is
 * wrong). The text is cut at max_object, so an object past it never
 * decodes here. */
static int decode_in_place(struct view_stream *s, size_t from, struct k8s_object *o, size_t *used)
{
	struct decode_error derr;
	size_t n = s->len - from < s->max_object ? s->len - from : s->max_object;

	arena_reset(s->arena);
	return decode_object_as_prefix(s->buf + from, n, s->obj_kind, s->version, &s->lim, s->arena, o, &derr,
				       used);
}

/* --- LIST ------------------------------------------------------------------- */

enum { M_KIND = 0, M_API_VERSION, M_METADATA, M_ITEMS };

static int list_metadata(struct view_stream *s, struct jscan *j)
{
	struct jscan_str k, v;
	struct str t;
	uint32_t seen = 0;
	int r;

	if (jscan_null(j) == 1)
		return 0;
	if (jscan_peek(j) != JSCAN_OBJECT)
		return fail(s, -EBADMSG, "metadata of the LIST is not an object");
	jscan_object_enter(j);
	while ((r = jscan_object_next(j, &k)) == 1) {
		int id = jscan_str_is(&k, "resourceVersion") ? 0 : jscan_str_is(&k, "continue") ? 1
			 : jscan_str_is(&k, "remainingItemCount") ? 2 : -1;

		if (id < 0) {
			if (jscan_skip(j, NULL) < 0)
				return -1;
			continue;
		}
		if (seen & (1u << id))
			return fail(s, -EBADMSG, "metadata of the LIST names a member twice");
		seen |= 1u << id;
		if (id == 2) {
			if (jscan_null(j) == 1)
				continue;
			if (jscan_int64(j, &s->info.remaining) < 0)
				return -1;
			continue;
		}
		if (jscan_null(j) == 1)
			continue;
		if (jscan_string(j, &v) < 0 || jscan_str_decode(&v, s->arena, &t) < 0)
			return -1;
		if (t.len >= (id == 0 ? VIEW_RV_MAX : VIEW_CONTINUE_MAX))
			return fail(s, -EBADMSG, "metadata.%s of the LIST is too long (%zu bytes)",
				    id == 0 ? "resourceVersion" : "continue", t.len);
		copy_str(id == 0 ? s->info.resource_version : s->info.continue_token,
			 id == 0 ? VIEW_RV_MAX : VIEW_CONTINUE_MAX, t);
	}
	return r < 0 ? -1 : 0;
}

/* One step of the envelope at s->pos: 0 done (consumed), 1 need more, or
 * an error. */
static int list_step(struct view_stream *s, bool final, const struct view_stream_sink *sink)
{
	size_t p = skip_ws(s, s->pos);
	struct jscan j;
	struct jscan_str key;
	int rc, id;

	if (p == s->len)
		return 1;
	switch (s->st) {
	case ST_OPEN:
		if (s->buf[p] != '{')
			return fail(s, -EBADMSG, "the LIST body does not begin with '{' (byte %llu)",
				    (unsigned long long)at(s, p));
		s->pos = p + 1;
		s->st = ST_MEMBER;
		s->first = true;
		return 0;
	case ST_DONE:
		return fail(s, -EBADMSG, "bytes after the end of the LIST (byte %llu)",
			    (unsigned long long)at(s, p));
	case ST_ITEMS:
		if (s->buf[p] == ']') {
			s->pos = p + 1;
			s->st = ST_MEMBER;
			s->first = false;
			return 0;
		}
		if (!s->first) {
			if (s->buf[p] != ',')
				return fail(s, -EBADMSG, "expected ',' or ']' between LIST items (byte %llu)",
					    (unsigned long long)at(s, p));
			p = skip_ws(s, p + 1);
			if (p == s->len)
				return 1;
		}
		if (s->buf[p] != '{')
			return fail(s, -EBADMSG, "a LIST item is not an object (byte %llu)",
				    (unsigned long long)at(s, p));
		if (!s->framing && s->obj_kind != OBJECT_NONE) {
			/* Most items arrived whole: decoded where they are, in one
			 * pass that validates them and finds their end. */
			struct k8s_object o;
			size_t used;

			if (decode_in_place(s, p, &o, &used) == 0) {
				if ((rc = apply(s, VIEW_ADDED, &o, sink)) != 0)
					return rc;
				s->pos = p + used;
				s->first = false;
				return 0;
			}
		}
		{
			struct str raw;
			bool checked;
			size_t end = value_end(s, p, s->lim.max_depth, &checked);

			if (!end) {
				if (s->frame_pos - p > s->max_object)
					return fail(s, -E2BIG, "a LIST item of more than %zu bytes", s->max_object);
				return final ? fail(s, -EBADMSG, "the LIST ends inside an item") : 1;
			}
			raw = (struct str){ s->buf + p, end - p };
			if (!checked) {
				jscan_init(&j, s->buf + p, end - p, s->lim.max_depth);
				if (jscan_skip(&j, &raw) < 0 || jscan_finish(&j) < 0)
					return scan_error(s, &j, p, true, "a LIST item");
			}
			if (raw.len > s->max_object)
				return fail(s, -E2BIG, "a LIST item of %zu bytes is over the limit of %zu",
					    raw.len, s->max_object);
			if ((rc = deliver(s, VIEW_ADDED, raw.ptr, raw.len, sink)) != 0)
				return rc;
			s->pos = p + raw.len;
			s->first = false;
		}
		return 0;
	case ST_MEMBER:
		if (s->buf[p] == '}') {
			s->pos = p + 1;
			s->st = ST_DONE;
			s->info.complete = true;
			return 0;
		}
		if (!s->first) {
			if (s->buf[p] != ',')
				return fail(s, -EBADMSG, "expected ',' or '}' in the LIST (byte %llu)",
					    (unsigned long long)at(s, p));
			p = skip_ws(s, p + 1);
			if (p == s->len)
				return 1;
		}
		break;
	case ST_EVENTS:
		return -EINVAL;
	}
	/* A member: "key": value, taken whole (items: up to its '['). */
	jscan_init(&j, s->buf + p, s->len - p, ENVELOPE_DEPTH + s->lim.max_depth);
	if (jscan_string(&j, &key) < 0)
		return scan_error(s, &j, p, final, "a LIST member name");
	id = jscan_str_is(&key, "kind") ? M_KIND : jscan_str_is(&key, "apiVersion") ? M_API_VERSION
	     : jscan_str_is(&key, "metadata") ? M_METADATA : jscan_str_is(&key, "items") ? M_ITEMS : -1;
	if (id >= 0 && (s->seen & (1u << id)))
		return fail(s, -EBADMSG, "the LIST names a member twice (byte %llu)",
			    (unsigned long long)at(s, p));
	{
		/* The colon, by hand: the scanner is not inside an object. */
		size_t q = skip_ws(s, p + jscan_offset(&j));

		if (q == s->len)
			return final ? fail(s, -EBADMSG, "the LIST ends after a member name") : 1;
		if (s->buf[q] != ':')
			return fail(s, -EBADMSG, "expected ':' in the LIST (byte %llu)",
				    (unsigned long long)at(s, q));
		q = skip_ws(s, q + 1);
		if (q == s->len)
			return final ? fail(s, -EBADMSG, "the LIST ends after a member name") : 1;
		if (id == M_ITEMS) {
			if (s->buf[q] == '[') {
				s->seen |= 1u << id;
				s->pos = q + 1;
				s->st = ST_ITEMS;
				s->first = true;
				return 0;
			}
		}
		jscan_init(&j, s->buf + q, s->len - q, ENVELOPE_DEPTH + s->lim.max_depth);
		arena_reset(s->arena);
		if (id == M_METADATA) {
			if (list_metadata(s, &j) != 0 || jscan_error(&j))
				return s->error ? s->error : scan_error(s, &j, q, final, "the LIST's metadata");
		} else if (id == M_ITEMS) {
			/* null: no items */
			if (jscan_null(&j) != 1)
				return jscan_error(&j) ? scan_error(s, &j, q, final, "the LIST's items")
						       : fail(s, -EBADMSG, "items of the LIST is not an array");
		} else if (jscan_skip(&j, NULL) < 0) {
			return scan_error(s, &j, q, final, "a LIST member");
		}
		/* A number or literal at the buffer's end may go on in the next
		 * chunk: commit only when the byte after the value is here. */
		if (skip_ws(s, q + jscan_offset(&j)) == s->len && !final)
			return 1;
		if (id >= 0)
			s->seen |= 1u << id;
		s->pos = q + jscan_offset(&j);
		s->first = false;
	}
	return 0;
}

/* --- WATCH ------------------------------------------------------------------ */

static int event_type(struct str t, enum view_event *ev)
{
	static const char *const names[VIEW_EVENT_COUNT] = {
		"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR",
	};
	int i;

	for (i = 0; i < VIEW_EVENT_COUNT; i++)
		if (str_eq_cstr(t, names[i])) {
			*ev = (enum view_event)i;
			return 0;
		}
	return -1;
}

/* The usual event - {"type":T,"object":{...}}, T not ERROR, as the API
 * server writes them - decoded where it is, in one pass, when it has all
 * arrived. 0 when it was applied; 1 when it is not of that shape or not
 * all here (nothing done: the long way decides, and says what is wrong);
 * or the sink's error. */
static int watch_in_place(struct view_stream *s, size_t p, const struct view_stream_sink *sink)
{
	static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
	static const enum view_event evs[] = { VIEW_ADDED, VIEW_MODIFIED, VIEW_DELETED, VIEW_BOOKMARK };
	struct jscan j;
	struct jscan_str k, v;
	struct k8s_object o;
	size_t from, used, q, i;

	jscan_init(&j, s->buf + p, s->len - p, ENVELOPE_DEPTH + s->lim.max_depth);
	if (jscan_object_enter(&j) < 0 || jscan_object_next(&j, &k) != 1 || !jscan_str_is(&k, "type") ||
	    jscan_string(&j, &v) < 0)
		return 1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !jscan_str_is(&v, names[i]); i++)
		;
	if (i == sizeof(names) / sizeof(names[0]) || jscan_object_next(&j, &k) != 1 ||
	    !jscan_str_is(&k, "object") || jscan_peek(&j) != JSCAN_OBJECT)
		return 1;
	from = skip_ws(s, p + jscan_offset(&j));
	if (decode_in_place(s, from, &o, &used) != 0)
		return 1;
	q = skip_ws(s, from + used);
	if (q == s->len || s->buf[q] != '}')
		return 1;
	s->pos = q + 1;
	return apply(s, evs[i], &o, sink);
}

static int watch_step(struct view_stream *s, bool final, const struct view_stream_sink *sink)
{
	size_t p = skip_ws(s, s->pos);
	struct jscan j;
	struct jscan_str k, v;
	struct str type = { NULL, 0 }, obj = { NULL, 0 };
	bool have_type = false, have_obj = false;
	enum view_event ev = VIEW_ADDED;
	size_t start;
	int r, rc;

	if (p == s->len)
		return 1;
	if (s->info.has_status)
		return fail(s, -EBADMSG, "an event after an ERROR event");
	if (s->buf[p] != '{')
		return fail(s, -EBADMSG, "a WATCH event is not an object (byte %llu)",
			    (unsigned long long)at(s, p));
	if (!s->framing && s->obj_kind != OBJECT_NONE && (rc = watch_in_place(s, p, sink)) <= 0)
		return rc;
	/* Framed whole first, so a cut event is never half decoded; the walk
	 * over its members below validates it. */
	size_t end = value_end(s, p, ENVELOPE_DEPTH + s->lim.max_depth, NULL);

	if (!end) {
		if (s->frame_pos - p > s->max_object + 4096)
			return fail(s, -E2BIG, "a WATCH event of more than %zu bytes", s->max_object);
		return final ? fail(s, -EBADMSG, "the body ends inside a WATCH event") : 1;
	}
	jscan_init(&j, s->buf + p, end - p, ENVELOPE_DEPTH + s->lim.max_depth);
	jscan_object_enter(&j);
	arena_reset(s->arena);
	while ((r = jscan_object_next(&j, &k)) == 1) {
		if (jscan_str_is(&k, "type")) {
			if (have_type || jscan_string(&j, &v) < 0 ||
			    jscan_str_decode(&v, s->arena, &type) < 0)
				return fail(s, -EBADMSG, "a WATCH event's type is not one string");
			have_type = true;
		} else if (jscan_str_is(&k, "object")) {
			if (have_obj || jscan_peek(&j) != JSCAN_OBJECT)
				return fail(s, -EBADMSG, "a WATCH event's object is not one object");
			jscan_skip(&j, &obj);
			have_obj = true;
		} else {
			jscan_skip(&j, NULL);
		}
	}
	if (r < 0 || jscan_finish(&j) < 0)
		return scan_error(s, &j, p, true, "a WATCH event");
	start = p;
	p = end;
	if (!have_type || !have_obj || event_type(type, &ev) != 0)
		return fail(s, -EBADMSG, "a WATCH event without a known type and an object (byte %llu)",
			    (unsigned long long)at(s, start));
	if (ev == VIEW_ERROR) {
		jscan_init(&j, obj.ptr, obj.len, 16);
		if (parse_status(&j, s->arena, &s->info.status) != 0)
			return fail(s, -EBADMSG, "an ERROR event whose object is not a Status");
		s->info.has_status = true;
		s->info.events[VIEW_ERROR]++;
	} else if ((rc = deliver(s, ev, obj.ptr, obj.len, sink)) != 0) {
		return rc;
	}
	s->pos = p;
	return 0;
}

/* --- feeding ---------------------------------------------------------------- */

static int run(struct view_stream *s, bool final, const struct view_stream_sink *sink)
{
	int rc;

	if (!final && s->len - s->pos < s->retry_at)
		return 0;
	for (;;) {
		rc = s->kind == VIEW_STREAM_LIST ? list_step(s, final, sink) : watch_step(s, final, sink);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			size_t pending = s->len - skip_ws(s, s->pos);

			if (pending > s->max_object + VIEW_CONTINUE_MAX + 4096)
				return fail(s, -E2BIG, "an object of more than %zu bytes", s->max_object);
			/* A value being framed goes on with the next byte; an
			 * envelope member is retried when the buffer doubled. */
			s->retry_at = s->framing ? 0 : 2 * (s->len - s->pos);
			return 0;
		}
		s->retry_at = 0;
	}
}

int view_stream_feed(struct view_stream *s, const char *p, size_t n,
		     const struct view_stream_sink *sink)
{
	if (s->error)
		return s->error;
	if (s->pos > 0 && (s->pos >= s->len / 2 || s->len + n > s->alloc)) {
		memmove(s->buf, s->buf + s->pos, s->len - s->pos);
		s->len -= s->pos;
		if (s->framing)
			s->frame_pos -= s->pos;
		s->pos = 0;
	}
	if (s->len + n > s->alloc) {
		size_t alloc = s->alloc ? s->alloc : 65536;
		char *nb;

		while (alloc < s->len + n)
			alloc *= 2;
		nb = realloc(s->buf, alloc);
		if (!nb)
			return fail(s, -ENOMEM, "out of memory");
		s->buf = nb;
		s->alloc = alloc;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->info.bytes += n;
	return run(s, false, sink);
}

int view_stream_end(struct view_stream *s, const struct view_stream_sink *sink)
{
	int rc;

	if (s->error)
		return s->error;
	s->retry_at = 0;
	rc = run(s, true, sink);
	if (rc)
		return rc;
	if (skip_ws(s, s->pos) != s->len)
		return fail(s, -EBADMSG, "the body ends inside %s",
			    s->kind == VIEW_STREAM_LIST ? "the LIST" : "a WATCH event");
	if (s->kind == VIEW_STREAM_LIST && !s->info.complete)
		return fail(s, -EBADMSG, "the LIST body ends before its closing brace");
	return 0;
}
