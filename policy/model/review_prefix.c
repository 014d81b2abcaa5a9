/* review_prefix.c - the uid of an AdmissionReview from the first bytes of
 * its body. */
#include "review_prefix.h"

#include <errno.h>
#include <stdbool.h>

#include "jscan.h"

struct found {
	bool api, kind, request, uid;
	struct str uid_text;
};

/* The scan stopped on an error: the text merely ended (every error the
 * scanner meets at the end of its input is placed there), or it is not
 * JSON. */
static int scan_error(const struct jscan *s, size_t len)
{
	return jscan_offset(s) >= len ? -ENOENT : -EBADMSG;
}

/* A string member that must equal want. */
static int expect_str(struct jscan *s, size_t len, bool *seen, const char *want)
{
	struct jscan_str v;

	if (*seen)
		return -EBADMSG;
	*seen = true;
	if (jscan_peek(s) == JSCAN_EOF)
		return -ENOENT;
	if (jscan_string(s, &v) < 0)
		return scan_error(s, len);
	return jscan_str_is(&v, want) ? 0 : -EBADMSG;
}

/* The members of request, up to its end or the text's. */
static int read_request(struct jscan *s, size_t len, char *tmp, size_t tmpn, struct found *f)
{
	struct jscan_str key, v;
	int r, rc;

	if (f->request)
		return -EBADMSG;
	f->request = true;
	switch (jscan_peek(s)) {
	case JSCAN_EOF: return -ENOENT;
	case JSCAN_OBJECT: break;
	default: return jscan_error(s) ? scan_error(s, len) : -EBADMSG;
	}
	if (jscan_object_enter(s) < 0)
		return scan_error(s, len);
	while ((r = jscan_object_next(s, &key)) == 1) {
		if (!jscan_str_is(&key, "uid")) {
			if (jscan_skip(s, NULL) < 0)
				return scan_error(s, len);
			continue;
		}
		if (f->uid)
			return -EBADMSG;
		f->uid = true;
		if (jscan_peek(s) == JSCAN_EOF)
			return -ENOENT;
		if (jscan_string(s, &v) < 0)
			return scan_error(s, len);
		if (v.len > 6 * REVIEW_PREFIX_UID_MAX)
			return -E2BIG;
		rc = jscan_str_decode_to(&v, tmp, tmpn, &f->uid_text);
		if (rc)
			return rc == -E2BIG ? -E2BIG : -EBADMSG;
		if (f->uid_text.len == 0)
			return -EBADMSG;
		if (f->uid_text.len > REVIEW_PREFIX_UID_MAX)
			return -E2BIG;
	}
	return r < 0 ? scan_error(s, len) : 0;
}

int review_prefix_uid(const char *text, size_t len, char *tmp, size_t tmpn, struct str *uid)
{
	struct found f = { false, false, false, false, { NULL, 0 } };
	struct jscan s;
	struct jscan_str key;
	int r, rc = 0;

	jscan_init(&s, text, len, JSCAN_DEPTH_LIMIT);
	switch (jscan_peek(&s)) {
	case JSCAN_EOF: return -ENOENT;
	case JSCAN_OBJECT: break;
	default: return -EBADMSG;
	}
	if (jscan_object_enter(&s) < 0)
		return -EBADMSG;
	/* On to the end of the text, past the uid: a member read twice later
	 * in the prefix refuses it as the decoder would. */
	while ((r = jscan_object_next(&s, &key)) == 1) {
		if (jscan_str_is(&key, "apiVersion"))
			rc = expect_str(&s, len, &f.api, "admission.k8s.io/v1");
		else if (jscan_str_is(&key, "kind"))
			rc = expect_str(&s, len, &f.kind, "AdmissionReview");
		else if (jscan_str_is(&key, "request"))
			rc = read_request(&s, len, tmp, tmpn, &f);
		else if (jscan_skip(&s, NULL) < 0)
			rc = scan_error(&s, len);
		if (rc)
			break;
	}
	if (rc == 0 && r < 0)
		rc = scan_error(&s, len);
	if (rc == 0 && r == 0 && jscan_finish(&s) < 0)
		rc = -EBADMSG;
	/* The text ended: what was read before stands. */
	if (rc == -ENOENT || rc == 0) {
		if (!f.api || !f.kind || !f.uid || f.uid_text.len == 0)
			return rc == 0 ? -EBADMSG : -ENOENT;
		*uid = f.uid_text;
		return 0;
	}
	return rc;
}
