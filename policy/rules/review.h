/* review.h - AdmissionReview v1 responses.
 *
 * Encodes a verdict as the response the API server expects: uid echoed,
 * allowed, status {code, reason, message} when denied, warnings,
 * auditAnnotations, and (mutating endpoint only) the base64 JSONPatch with
 * patchType JSONPatch. Pure; writes into a capped buffer. */
#ifndef DRA_GUARD_REVIEW_H
#define DRA_GUARD_REVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "str.h"
#include "verdict.h"

/* The response for verdict v to the request with uid. The patch is written
 * only when mutating is true (a validating response with a patch is a
 * failed call). 0, -E2BIG, -ENOMEM. */
int review_encode(struct str uid, const struct verdict *v, bool mutating, struct buf *out);

/* A denial for a request that could not be decided (bad object, internal
 * error): allowed false, status code and message. */
int review_encode_error(struct str uid, int32_t code, const char *message, struct buf *out);

/* A metav1.Status failure body {"kind":"Status",..,"reason","code",
 * "message"}: what a call that is not answered with a review gets (a body
 * that is not an AdmissionReview, an HTTP error of the server). 0, -E2BIG,
 * -ENOMEM; on failure out is as it was. */
int review_encode_status(int32_t code, const char *reason, const char *message, struct buf *out);

/* Standard base64 of in[0..n) appended to out. */
int review_base64(const void *in, size_t n, struct buf *out);

#endif
