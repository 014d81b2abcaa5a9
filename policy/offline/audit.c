/* audit.c - the audit-line reader (audit.h). */
#include "audit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jscan.h"
#include "timefmt.h"

/* Nesting an audit line may have: an object and its envelope (the API
 * server decodes objects at most 10000 deep; its own Event adds two). */
#define AUDIT_MAX_DEPTH JSCAN_DEPTH_LIMIT

enum {
	SEEN_STAGE = 1 << 0,
	SEEN_VERB = 1 << 1,
	SEEN_REF = 1 << 2,
	SEEN_USER = 1 << 3,
	SEEN_STATUS = 1 << 4,
	SEEN_REQ = 1 << 5,
	SEEN_RESP = 1 << 6,
	SEEN_TIME = 1 << 7,
	SEEN_ID = 1 << 8,
	SEEN_KIND = 1 << 9,
	SEEN_API = 1 << 10,
	SEEN_IMP = 1 << 11,
	SEEN_URI = 1 << 12,
};

const char *audit_verb_name(enum audit_verb v)
{
	switch (v) {
	case AUDIT_CREATE: return "create";
	case AUDIT_UPDATE: return "update";
	case AUDIT_PATCH: return "patch";
	case AUDIT_DELETE: return "delete";
	default: return "";
	}
}

static enum audit_verb verb_of(const struct jscan_str *s)
{
	if (jscan_str_is(s, "create"))
		return AUDIT_CREATE;
	if (jscan_str_is(s, "update"))
		return AUDIT_UPDATE;
	if (jscan_str_is(s, "patch"))
		return AUDIT_PATCH;
	if (jscan_str_is(s, "delete"))
		return AUDIT_DELETE;
	return AUDIT_VERB_OTHER;
}

static struct str raw(const struct jscan_str *s)
{
	return (struct str){ s->ptr, s->len };
}

/* Fail with "what: <scanner's description>". */
static int fail(struct jscan *s, const char *what, char *err, size_t n)
{
	char where[160];

	if (!jscan_error(s))
		jscan_fail(s, -EINVAL, "a value of another type");
	jscan_describe(s, where, sizeof(where));
	snprintf(err, n, "%s: %s", what, where);
	return -EBADMSG;
}

static int string_member(struct jscan *s, unsigned *seen, unsigned bit, const char *what, struct jscan_str *out,
			 char *err, size_t n)
{
	if (*seen & bit) {
		snprintf(err, n, "%s given twice (offset %zu)", what, jscan_offset(s));
		return -EBADMSG;
	}
	*seen |= bit;
	if (jscan_string(s, out))
		return fail(s, what, err, n);
	return 0;
}

/* An object member kept as text; null gives len 0. */
static int object_member(struct jscan *s, unsigned *seen, unsigned bit, const char *what, struct str *out,
			 char *err, size_t n)
{
	enum jscan_type t;

	if (*seen & bit) {
		snprintf(err, n, "%s given twice (offset %zu)", what, jscan_offset(s));
		return -EBADMSG;
	}
	*seen |= bit;
	t = jscan_peek(s);
	if (t == JSCAN_NULL) {
		*out = (struct str){ "", 0 };
		return jscan_null(s) == 1 ? 0 : fail(s, what, err, n);
	}
	if (t != JSCAN_OBJECT || jscan_skip(s, out))
		return fail(s, what, err, n);
	return 0;
}

static int object_ref(struct jscan *s, struct audit_event *ev, char *err, size_t n)
{
	struct jscan_str key, v;
	unsigned seen = 0;
	int rc;

	if (jscan_object_enter(s))
		return fail(s, "objectRef", err, n);
	while ((rc = jscan_object_next(s, &key)) == 1) {
		struct str *dst = NULL;
		unsigned bit = 0;

		if (jscan_str_is(&key, "resource"))
			dst = &ev->resource_name, bit = 1;
		else if (jscan_str_is(&key, "namespace"))
			dst = &ev->namespace, bit = 2;
		else if (jscan_str_is(&key, "name"))
			dst = &ev->name, bit = 4;
		else if (jscan_str_is(&key, "apiGroup"))
			dst = &ev->api_group, bit = 8;
		else if (jscan_str_is(&key, "apiVersion"))
			dst = &ev->api_version, bit = 16;
		else if (jscan_str_is(&key, "subresource"))
			dst = &ev->subresource, bit = 32;
		if (!dst) {
			if (jscan_skip(s, NULL))
				return fail(s, "objectRef", err, n);
			continue;
		}
		if (string_member(s, &seen, bit, "objectRef member", &v, err, n))
			return -EBADMSG;
		*dst = raw(&v);
	}
	if (rc < 0)
		return fail(s, "objectRef", err, n);
	ev->kind = model_kind_of_resource(ev->api_group, ev->resource_name);
	return 0;
}

static int response_status(struct jscan *s, struct audit_event *ev, char *err, size_t n)
{
	struct jscan_str key;
	int64_t code;
	bool seen = false;
	int rc;

	if (jscan_object_enter(s))
		return fail(s, "responseStatus", err, n);
	while ((rc = jscan_object_next(s, &key)) == 1) {
		if (!jscan_str_is(&key, "code")) {
			if (jscan_skip(s, NULL))
				return fail(s, "responseStatus", err, n);
			continue;
		}
		if (seen) {
			snprintf(err, n, "responseStatus.code given twice (offset %zu)", jscan_offset(s));
			return -EBADMSG;
		}
		seen = true;
		if (jscan_int64(s, &code) || code < 0 || code > 999)
			return fail(s, "responseStatus.code", err, n);
		ev->code = (int32_t)code;
	}
	if (rc < 0)
		return fail(s, "responseStatus", err, n);
	return 0;
}

/* A dryRun parameter with a value in the query of a raw requestURI. The
 * API server's JSON encoder writes '&' as \u0026; a value other than All
 * is refused by the API server, so any value is a dry run. */
static bool uri_dry_run(struct str uri)
{
	const char *q = memchr(uri.ptr, '?', uri.len), *end = uri.ptr + uri.len;

	while (q && q < end) {
		const char *p = q + 1;

		if ((size_t)(end - p) > 7 && memcmp(p, "dryRun=", 7) == 0 && p + 7 < end && p[7] != '&' && p[7] != '\\')
			return true;
		q = NULL;
		for (; p < end; p++) {
			if (*p == '&') {
				q = p;
				break;
			}
			if (*p == '\\' && end - p >= 6 && memcmp(p, "\\u0026", 6) == 0) {
				q = p + 5;
				break;
			}
		}
	}
	return false;
}

/* 1 once what was read so far makes the event one the replay skips. */
static int skipped(const struct audit_event *ev, unsigned seen, bool complete)
{
	if ((seen & SEEN_STAGE) && !complete)
		return 1;
	if ((seen & SEEN_VERB) && ev->verb == AUDIT_VERB_OTHER)
		return 1;
	if ((seen & SEEN_REF) && ev->kind == OBJECT_OTHER)
		return 1;
	return 0;
}

int audit_parse(const char *line, size_t len, struct audit_event *out, char *err, size_t n)
{
	struct jscan s;
	struct jscan_str key, v;
	struct str ts = { "", 0 };
	unsigned seen = 0;
	bool complete = false;
	int rc;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	jscan_init(&s, line, len, AUDIT_MAX_DEPTH);
	if (jscan_object_enter(&s))
		return fail(&s, "an audit event", err, n);
	while ((rc = jscan_object_next(&s, &key)) == 1) {
		if (jscan_str_is(&key, "stage")) {
			if (string_member(&s, &seen, SEEN_STAGE, "stage", &v, err, n))
				return -EBADMSG;
			complete = jscan_str_is(&v, "ResponseComplete");
		} else if (jscan_str_is(&key, "requestURI")) {
			if (string_member(&s, &seen, SEEN_URI, "requestURI", &v, err, n))
				return -EBADMSG;
			out->dry_run = uri_dry_run(raw(&v));
		} else if (jscan_str_is(&key, "verb")) {
			if (string_member(&s, &seen, SEEN_VERB, "verb", &v, err, n))
				return -EBADMSG;
			out->verb = verb_of(&v);
		} else if (jscan_str_is(&key, "objectRef")) {
			if (seen & SEEN_REF) {
				snprintf(err, n, "objectRef given twice (offset %zu)", jscan_offset(&s));
				return -EBADMSG;
			}
			seen |= SEEN_REF;
			if (object_ref(&s, out, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "user")) {
			if (object_member(&s, &seen, SEEN_USER, "user", &out->user, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "impersonatedUser")) {
			if (object_member(&s, &seen, SEEN_IMP, "impersonatedUser", &out->impersonated, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "responseStatus")) {
			if (seen & SEEN_STATUS) {
				snprintf(err, n, "responseStatus given twice (offset %zu)", jscan_offset(&s));
				return -EBADMSG;
			}
			seen |= SEEN_STATUS;
			if (response_status(&s, out, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "requestObject")) {
			if (object_member(&s, &seen, SEEN_REQ, "requestObject", &out->request_object, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "responseObject")) {
			if (object_member(&s, &seen, SEEN_RESP, "responseObject", &out->response_object, err, n))
				return -EBADMSG;
		} else if (jscan_str_is(&key, "stageTimestamp")) {
			if (string_member(&s, &seen, SEEN_TIME, "stageTimestamp", &v, err, n))
				return -EBADMSG;
			ts = raw(&v);
		} else if (jscan_str_is(&key, "auditID")) {
			if (string_member(&s, &seen, SEEN_ID, "auditID", &v, err, n))
				return -EBADMSG;
			out->audit_id = raw(&v);
		} else if (jscan_str_is(&key, "apiVersion")) {
			if (string_member(&s, &seen, SEEN_API, "apiVersion", &v, err, n))
				return -EBADMSG;
			if (!jscan_str_is(&v, "audit.k8s.io/v1")) {
				snprintf(err, n, "apiVersion \"%.*s\": expected audit.k8s.io/v1", (int)(v.len > 64 ? 64 : v.len),
					 v.ptr);
				return -EBADMSG;
			}
		} else if (jscan_str_is(&key, "kind")) {
			if (string_member(&s, &seen, SEEN_KIND, "kind", &v, err, n))
				return -EBADMSG;
			if (!jscan_str_is(&v, "Event")) {
				snprintf(err, n, "kind \"%.*s\": expected Event", (int)(v.len > 64 ? 64 : v.len), v.ptr);
				return -EBADMSG;
			}
		} else if (jscan_skip(&s, NULL)) {
			return fail(&s, "an audit event", err, n);
		}
		if (skipped(out, seen, complete))
			return 1;
	}
	if (rc < 0 || jscan_finish(&s))
		return fail(&s, "an audit event", err, n);
	if (!(seen & SEEN_STAGE) || !(seen & SEEN_VERB) || !(seen & SEEN_REF)) {
		snprintf(err, n, "an audit event without %s", !(seen & SEEN_STAGE) ? "stage" :
			 !(seen & SEEN_VERB) ? "verb" : "objectRef");
		return (seen & SEEN_STAGE) && (seen & SEEN_VERB) ? 1 : -EBADMSG;
	}
	if (out->name.len == 0 && out->verb != AUDIT_CREATE)
		return 1;      /* deletecollection and the like: no one object */
	rc = seen & SEEN_TIME ? timefmt_parse(ts, 0, &out->stage_ns) : -EINVAL;
	if (rc) {
		snprintf(err, n, "stageTimestamp \"%.*s\": %s", (int)(ts.len > 64 ? 64 : ts.len), ts.ptr,
			 rc == -ERANGE ? "outside 1970 to 2261 (ns since the epoch in 64 bits)" :
			 "expected an RFC 3339 time");
		return -EBADMSG;
	}
	return 0;
}
