/* admission.c - one AdmissionReview in, one answer out. */
#include "admission.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "review.h"

static int encode_bad_request(const char *msg, struct buf *out)
{
	int rc = buf_add_cstr(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
				   "\"reason\":\"BadRequest\",\"code\":400,\"message\":");

	if (rc == 0)
		rc = buf_add_json_str(out, msg, strlen(msg));
	if (rc == 0)
		rc = buf_add_char(out, '}');
	return rc;
}

int admission_handle(const struct policy *pol, const struct view *view, int64_t now_ns,
		     const struct engine_options *opt,
		     const struct decode_limits *lim, const char *body, size_t len,
		     struct arena *a, struct buf *out, struct admission_result *res)
{
	struct decode_error derr;
	char msg[DECODE_ERROR_MAX + 64];
	int rc;

	memset(res, 0, sizeof(*res));
	buf_reset(out);
	rc = decode_review(body, len, lim, a, &res->req, &derr);
	if (rc == -EBADMSG) {
		snprintf(res->error, sizeof(res->error), "%s", derr.msg);
		snprintf(msg, sizeof(msg), "not an admission.k8s.io/v1 AdmissionReview: %s", derr.msg);
		res->http_status = 400;
		rc = encode_bad_request(msg, out);
		goto out;
	}
	res->decoded = true;
	res->http_status = 200;
	if (rc) {
		/* The review is fine but its object is not: deny, naming why. */
		snprintf(res->error, sizeof(res->error), "%s", derr.msg);
		if (rc == -EPROTO)
			snprintf(msg, sizeof(msg), "dra-guard cannot decode this object: %s", derr.msg);
		else
			snprintf(msg, sizeof(msg), "dra-guard cannot hold this request within its limits: %s",
				 derr.msg);
		verdict_init(&res->verdict, 0);
		verdict_fail(&res->verdict, a, rc == -EPROTO ? 400 : 500, msg);
		rc = review_encode_error(res->req.uid, res->verdict.code, msg, out);
		goto out;
	}
	engine_decide(pol, view, opt, &res->req, now_ns, a, &res->verdict);
	rc = review_encode(res->req.uid, &res->verdict, opt->mutate, out);
out:
	if (rc)
		buf_reset(out);
	return rc;
}
