/* admission.h - one AdmissionReview in, one answer out.
 *
 * decode -> engine -> encode, the whole request path in one call, shared by
 * the server, dry-run (for inputs that are whole AdmissionReviews) and the
 * benchmarks, so they cannot drift apart. Pure; thread-safe with one arena
 * and one output buffer per caller. */
#ifndef DRA_GUARD_ADMISSION_H
#define DRA_GUARD_ADMISSION_H

#include <stdbool.h>

#include "arena.h"
#include "buf.h"
#include "decode.h"
#include "engine.h"

struct admission_result {
	int http_status;                /* 200, or 400 when the body is not an AdmissionReview */
	bool decoded;                   /* req.uid is set; the rest of req as far as the
					 * decoder got (empty views otherwise) */
	struct admission_request req;   /* borrowed from the body and the arena */
	struct verdict verdict;         /* valid when http_status is 200 */
	char error[DECODE_ERROR_MAX];   /* why decoding failed, "" otherwise */
};

/* Answer the AdmissionReview in body[0..len) under pol and view (NULL:
 * none) at now_ns, as engine_decide() takes them. out receives the
 * response body: an AdmissionReview (http_status 200; a review that cannot
 * be decided, whatever the reason, is a denial with status 400 or 500
 * inside it, or on the mutating endpoint an allow without a patch) or, for
 * a body that is not JSON, not an AdmissionReview v1 or has no
 * request.uid, a JSON Status object (http_status 400). Returns 0, or
 * -ENOMEM/-E2BIG when even the answer could not be written (out is then
 * empty: the caller answers 500). */
int admission_handle(const struct policy *pol, const struct view *view, int64_t now_ns,
		     const struct engine_options *opt,
		     const struct decode_limits *lim, const char *body, size_t len,
		     struct arena *a, struct buf *out, struct admission_result *res);

#endif
