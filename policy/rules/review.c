/* review.c - AdmissionReview v1 responses. */
#include "review.h"

#include <errno.h>
#include <string.h>

#define REVIEW_HEAD "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":"

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

static int add_status(struct buf *out, int32_t code, struct str message)
{
	int rc = buf_printf(out, ",\"status\":{\"status\":\"Failure\",\"code\":%d,\"reason\":\"%s\",\"message\":",
			    (int)code, status_reason(code));

	if (rc == 0)
		rc = buf_add_json_str(out, message.ptr, message.len);
	if (rc == 0)
		rc = buf_add_char(out, '}');
	return rc;
}

int review_encode(struct str uid, const struct verdict *v, bool mutating, struct buf *out)
{
	size_t start = buf_len(out);
	uint32_t i;
	int rc;

	rc = buf_add(out, REVIEW_HEAD, sizeof(REVIEW_HEAD) - 1);
	if (rc == 0)
		rc = buf_add_json_str(out, uid.ptr, uid.len);
	if (rc == 0)
		rc = buf_add_cstr(out, v->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
	if (rc == 0 && !v->allowed)
		rc = add_status(out, v->code ? v->code : 403, v->message);
	if (rc == 0 && v->nwarnings) {
		rc = buf_add_cstr(out, ",\"warnings\":[");
		for (i = 0; i < v->nwarnings && rc == 0; i++) {
			if (i)
				rc = buf_add_char(out, ',');
			if (rc == 0)
				rc = buf_add_json_str(out, v->warnings[i].ptr, v->warnings[i].len);
		}
		if (rc == 0)
			rc = buf_add_char(out, ']');
	}
	if (rc == 0 && v->naudit) {
		/* Keys go out bare: the API server prefixes each with the webhook's
		 * name and a '/', and drops a key that then is not a qualified name
		 * (one '/' at most), so a key of our own with a '/' would vanish. */
		rc = buf_add_cstr(out, ",\"auditAnnotations\":{");
		for (i = 0; i < v->naudit && rc == 0; i++) {
			if (!verdict_audit_key_valid(v->audit[i].key)) {
				rc = -EINVAL;
				break;
			}
			if (i)
				rc = buf_add_char(out, ',');
			if (rc == 0)
				rc = buf_add_json_str(out, v->audit[i].key.ptr, v->audit[i].key.len);
			if (rc == 0)
				rc = buf_add_char(out, ':');
			if (rc == 0)
				rc = buf_add_json_str(out, v->audit[i].value.ptr, v->audit[i].value.len);
		}
		if (rc == 0)
			rc = buf_add_char(out, '}');
	}
	if (rc == 0 && mutating && v->allowed && v->patch.len) {
		rc = buf_add_cstr(out, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
		if (rc == 0)
			rc = review_base64(v->patch.ptr, v->patch.len, out);
		if (rc == 0)
			rc = buf_add_char(out, '"');
	}
	if (rc == 0)
		rc = buf_add_cstr(out, "}}");
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int review_encode_error(struct str uid, int32_t code, const char *message, struct buf *out)
{
	size_t start = buf_len(out);
	int rc;

	rc = buf_add(out, REVIEW_HEAD, sizeof(REVIEW_HEAD) - 1);
	if (rc == 0)
		rc = buf_add_json_str(out, uid.ptr, uid.len);
	if (rc == 0)
		rc = buf_add_cstr(out, ",\"allowed\":false");
	if (rc == 0)
		rc = add_status(out, code, str_from_cstr(message));
	if (rc == 0)
		rc = buf_add_cstr(out, "}}");
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
