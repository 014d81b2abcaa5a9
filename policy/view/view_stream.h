/* view_stream.h - LIST and WATCH response bodies, decoded as they arrive.
 *
 * The API client hands each chunk of a body to view_stream_feed() as it
 * comes off the connection; whole objects are decoded (decode_object_as(),
 * the request path's validating decoder) and handed to a sink one at a
 * time, so a 140 MB LIST never sits in memory: only the object being
 * received does, up to a cap. Everything is validated, the envelope too:
 * a body that is not JSON, or not the shape the API server sends, is an
 * error and the caller relists; an object that is JSON but does not decode
 * as its kind is skipped and reported to the sink (the API server stored
 * it, so it must not stop the view), and counted.
 *
 * A LIST body is {"kind", "apiVersion", "metadata": {resourceVersion,
 * continue, remainingItemCount}, "items": [...]}, members in any order. A
 * WATCH body is a sequence of {"type", "object"} events: ADDED, MODIFIED,
 * DELETED, BOOKMARK (only metadata.resourceVersion) and ERROR (a Status).
 *
 * Pure: no I/O. One stream per body; not thread-safe. */
#ifndef DRA_GUARD_VIEW_STREAM_H
#define DRA_GUARD_VIEW_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "view.h"

enum view_stream_kind {
	VIEW_STREAM_LIST = 0,
	VIEW_STREAM_WATCH,
};

/* Longest resourceVersion and continue token kept. */
#define VIEW_RV_MAX 128
#define VIEW_CONTINUE_MAX 8192
#define VIEW_STATUS_TEXT_MAX 256

/* A metav1.Status: from an ERROR event, or an error response's body. */
struct view_status {
	int code;                    /* HTTP code it states; 0 when absent */
	char reason[64];             /* "Expired", "Gone", ... */
	char message[VIEW_STATUS_TEXT_MAX];
};

struct view_stream_info {
	char resource_version[VIEW_RV_MAX];   /* the LIST's, or the last event's */
	char continue_token[VIEW_CONTINUE_MAX];  /* LIST: "" on the last page */
	int64_t remaining;           /* LIST: remainingItemCount, -1 when absent */
	uint64_t events[VIEW_EVENT_COUNT];    /* WATCH events by type; LIST items as ADDED */
	uint64_t skipped;            /* objects that did not decode */
	uint64_t bytes;              /* fed */
	bool complete;               /* LIST: the closing brace was read */
	bool has_status;             /* an ERROR event came (WATCH ends there) */
	bool initial_end;            /* WATCH: the initial-events-end bookmark came */
	struct view_status status;
};

struct view_stream_sink {
	/* An object: a LIST item (VIEW_ADDED) or a WATCH event of type ev
	 * (ADDED, MODIFIED, DELETED). Borrowed for the call. 0 to go on, or
	 * a negative errno that stops the stream and is returned by feed. */
	int (*object)(void *ctx, enum view_event ev, const struct k8s_object *obj);
	/* An object skipped: msg names the JSON path and what was wrong.
	 * May be NULL. */
	void (*skipped)(void *ctx, const char *msg);
	/* WATCH: the bookmark annotated k8s.io/initial-events-end came, which
	 * ends the initial events of a streaming list (sendInitialEvents=true);
	 * view_stream_info()'s resource_version is the bookmark's. 0 to go on,
	 * or a negative errno that stops the stream. May be NULL. */
	int (*initial_end)(void *ctx);
	void *ctx;
};

struct view_stream;

/* A stream for a body of objects of kind (a guarded kind) in version, or
 * of any kinds (OBJECT_NONE: each item names its own apiVersion and kind,
 * as in `kubectl get -o json` output; items of kinds the guard does not
 * read reach the sink as OBJECT_OTHER); max_object bounds one object's
 * text (and so what is buffered). 0 or -ENOMEM. */
int view_stream_new(enum view_stream_kind kind, enum object_kind obj_kind, enum api_version version,
		    size_t max_object, struct view_stream **out);

/* view_stream_free(NULL) is a no-op. */
void view_stream_free(struct view_stream *s);

/* The next bytes of the body. 0; -EBADMSG when the body is not what the
 * API server sends (view_stream_error() says where and why); -E2BIG for an
 * object over max_object; -ENOMEM; or the sink's error. Errors are sticky. */
int view_stream_feed(struct view_stream *s, const char *p, size_t n,
		     const struct view_stream_sink *sink);

/* The body ended. 0 when it ended where it may: after the LIST's closing
 * brace, or between WATCH events; -EBADMSG otherwise (a cut connection: a
 * LIST cut short must be listed again; a WATCH resumes). */
int view_stream_end(struct view_stream *s, const struct view_stream_sink *sink);

const struct view_stream_info *view_stream_info(const struct view_stream *s);

/* What went wrong, "" if nothing. */
const char *view_stream_error(const struct view_stream *s);

/* Parse a metav1.Status body (an error response). 0, or -EBADMSG when it
 * is not one. */
int view_status_parse(const char *text, size_t len, struct view_status *out);

#endif
