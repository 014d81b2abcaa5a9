/* review.c - AdmissionReview v1 responses. */
#include "review.h"

#include <errno.h>
#include <string.h>

#include "jw.h"

static const char *status_reason(int32_t code)
{
	switch (code) {
	case 400: return "BadRequest";
	case 403: return "Forbidden";
	case 413: return "RequestEntityTooLarge";
	case 422: return "Invalid";
	case 500: return "InternalError";
	case 503: return "ServiceUnavailable";
	default: return "Forbidden";
	}
}

/* {"apiVersion":..,"kind":"AdmissionReview","response":{"uid":..; the
 * caller writes the rest of the response and closes both objects. */
static void response_begin(struct jw *w, struct buf *out, struct str uid)
{
	jw_init(w, out);
	jw_object_begin(w);
	JW_KEY(w, "apiVersion");
	JW_LIT(w, "admission.k8s.io/v1");
	JW_KEY(w, "kind");
	JW_LIT(w, "AdmissionReview");
	JW_KEY(w, "response");
	jw_object_begin(w);
	JW_KEY(w, "uid");
	jw_string(w, uid.ptr, uid.len);
}

static void add_status(struct jw *w, int32_t code, struct str message)
{
	JW_KEY(w, "status");
	jw_object_begin(w);
	JW_KEY(w, "status");
	JW_LIT(w, "Failure");
	JW_KEY(w, "code");
	jw_int(w, code);
	JW_KEY(w, "reason");
	jw_cstr(w, status_reason(code));
	JW_KEY(w, "message");
	jw_string(w, message.ptr, message.len);
	jw_object_end(w);
}

/* The patch as a JSON string: its base64 needs no escape. */
static int add_patch(const void *ctx, struct buf *out)
{
	const struct str *patch = ctx;
	int rc = buf_add_char(out, '"');

	if (rc == 0)
		rc = review_base64(patch->ptr, patch->len, out);
	return rc ? rc : buf_add_char(out, '"');
}

int review_encode(struct str uid, const struct verdict *v, bool mutating, struct buf *out)
{
	size_t start = buf_len(out);
	struct jw w;
	uint32_t i;
	int rc;

	response_begin(&w, out, uid);
	JW_KEY(&w, "allowed");
	rc = jw_bool(&w, v->allowed);
	if (!v->allowed)
		add_status(&w, v->code ? v->code : 403, v->message);
	if (v->nwarnings) {
		JW_KEY(&w, "warnings");
		jw_array_begin(&w);
		for (i = 0; i < v->nwarnings; i++)
			jw_string(&w, v->warnings[i].ptr, v->warnings[i].len);
		jw_array_end(&w);
	}
	if (v->naudit) {
		/* Keys go out bare: the API server prefixes each with the webhook's
		 * name and a '/', and drops a key that then is not a qualified name
		 * (one '/' at most), so a key of our own with a '/' would vanish. */
		JW_KEY(&w, "auditAnnotations");
		rc = jw_object_begin(&w);
		for (i = 0; i < v->naudit && rc == 0; i++) {
			if (!verdict_audit_key_valid(v->audit[i].key)) {
				rc = -EINVAL;
				break;
			}
			jw_key_str(&w, v->audit[i].key);
			rc = jw_string(&w, v->audit[i].value.ptr, v->audit[i].value.len);
		}
		jw_object_end(&w);
	}
	if (mutating && v->allowed && v->patch.len) {
		JW_KEY(&w, "patchType");
		JW_LIT(&w, "JSONPatch");
		JW_KEY(&w, "patch");
		jw_part(&w, add_patch, &v->patch);
	}
	jw_object_end(&w);
	jw_object_end(&w);
	if (rc == 0)
		rc = jw_finish(&w);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int review_encode_error(struct str uid, int32_t code, const char *message, struct buf *out)
{
	size_t start = buf_len(out);
	struct jw w;
	int rc;

	response_begin(&w, out, uid);
	JW_KEY(&w, "allowed");
	jw_bool(&w, false);
	add_status(&w, code, str_from_cstr(message));
	jw_object_end(&w);
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int review_encode_status(int32_t code, const char *reason, const char *message, struct buf *out)
{
	size_t start = buf_len(out);
	struct jw w;
	int rc;

	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "kind", "Status");
	jw_kcstr(&w, "apiVersion", "v1");
	jw_kcstr(&w, "status", "Failure");
	jw_kcstr(&w, "reason", reason);
	jw_kint(&w, "code", code);
	jw_kcstr(&w, "message", message);
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int review_base64(const void *in, size_t n, struct buf *out)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = in;
	size_t start = buf_len(out), i;
	char quad[4];
	int rc = 0;

	for (i = 0; i + 2 < n && rc == 0; i += 3) {
		quad[0] = tbl[p[i] >> 2];
		quad[1] = tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		quad[2] = tbl[((p[i + 1] & 0xf) << 2) | (p[i + 2] >> 6)];
		quad[3] = tbl[p[i + 2] & 0x3f];
		rc = buf_add(out, quad, 4);
	}
	if (rc == 0 && i < n) {
		quad[0] = tbl[p[i] >> 2];
		if (i + 1 < n) {
			quad[1] = tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			quad[2] = tbl[(p[i + 1] & 0xf) << 2];
		} else {
			quad[1] = tbl[(p[i] & 3) << 4];
			quad[2] = '=';
		}
		quad[3] = '=';
		rc = buf_add(out, quad, 4);
	}
	if (rc)
		buf_truncate(out, start);
	return rc;
}
