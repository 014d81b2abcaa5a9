/* admission.c - one AdmissionReview in, one answer out. */
#include "admission.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "review.h"

/* Why a review could not be decoded, as a denial; or, on the mutating
 * endpoint, an allow without a patch (every denial is the validating
 * endpoint's). */
static int answer_undecodable(const struct engine_options *opt, int rc, const struct decode_error *derr,
			      struct arena *a, struct buf *out, struct admission_result *res)
{
	char msg[DECODE_ERROR_MAX + 96];
	int32_t code = 400;

	if (rc == -EPROTO)
		snprintf(msg, sizeof(msg), "dra-guard cannot decode this object: %s", derr->msg);
	else if (rc == -EBADMSG)
		snprintf(msg, sizeof(msg), "dra-guard cannot judge this review: %s", derr->msg);
	else {
		snprintf(msg, sizeof(msg), "dra-guard cannot hold this request within its limits: %s",
			 derr->msg);
		code = 500;
	}
	verdict_init(&res->verdict, 0);
	if (opt->mutating_endpoint)
		return review_encode(res->req.uid, &res->verdict, true, out);
	verdict_fail(&res->verdict, a, code, msg);
	return review_encode_error(res->req.uid, res->verdict.code, msg, out);
}

int admission_handle(const struct policy *pol, const struct view *view, int64_t now_ns,
		     const struct engine_options *opt,
		     const struct decode_limits *lim, const char *body, size_t len,
		     struct arena *a, struct buf *out, struct admission_result *res)
{
	struct decode_error derr;
	char msg[DECODE_ERROR_MAX + 64];
	struct str uid;
	int rc;

	memset(res, 0, sizeof(*res));
	buf_reset(out);
	rc = decode_review(body, len, lim, a, &res->req, &derr);
	if (rc == 0) {
		res->decoded = true;
		res->http_status = 200;
		engine_decide(pol, view, opt, &res->req, now_ns, a, &res->verdict);
		rc = review_encode(res->req.uid, &res->verdict, opt->mutate, out);
		goto out;
	}
	snprintf(res->error, sizeof(res->error), "%s", derr.msg);
	/* A review the API server sent is answered inside a review, whatever
	 * stopped the decoder (a limit, the nesting depth, an object that does
	 * not decode): an HTTP error is a failed call, and a webhook that fails
	 * open would let the write through. Only a body that is not an
	 * AdmissionReview at all, or has no uid to answer to, gets HTTP 400. */
	uid = res->req.uid;
	if (rc == -EBADMSG || uid.len == 0) {
		if (decode_review_uid(body, len, a, &uid) != 0) {
			if (rc != -EBADMSG)
				goto out;
			snprintf(msg, sizeof(msg), "not an admission.k8s.io/v1 AdmissionReview: %s", derr.msg);
			res->http_status = 400;
			rc = review_encode_status(400, "BadRequest", msg, out);
			goto out;
		}
		res->req.uid = uid;
	}
	res->decoded = true;
	res->http_status = 200;
	rc = answer_undecodable(opt, rc, &derr, a, out, res);
out:
	if (rc)
		buf_reset(out);
	return rc;
}
