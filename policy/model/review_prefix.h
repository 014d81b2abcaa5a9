/* review_prefix.h - the uid of an AdmissionReview from the first bytes of
 * its body.
 *
 * The server drops a body it will not hold (past --max-body, or with the
 * memory budget spent) and keeps only its first bytes; it still owes the
 * API server an answer inside a review, since an HTTP error is a failed
 * call that a webhook with failurePolicy Ignore lets through. The API
 * server writes the uid within the first hundred-odd bytes: it encodes an
 * AdmissionReview with encoding/json (k8s.io/apimachinery's JSON
 * serializer, json.NewEncoder(w).Encode), which writes struct fields in
 * declaration order, and k8s.io/api/admission/v1 declares TypeMeta (kind,
 * apiVersion) first in AdmissionReview, then request, and UID first in
 * AdmissionRequest:
 *
 *   {"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
 *    "request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",...
 *
 * The scan is the decoder's, on text that may stop anywhere: every byte
 * up to the end is checked (grammar, escapes, UTF-8 of the strings it
 * keeps), members are read in any order, a member the decoder reads given
 * twice is refused, and text that merely stops is not an error. Pure;
 * allocates nothing. */
#ifndef DRA_GUARD_REVIEW_PREFIX_H
#define DRA_GUARD_REVIEW_PREFIX_H

#include <stddef.h>

#include "str.h"

/* The longest uid answered from a prefix. The API server's uids are
 * 36-byte UUIDs; the cap keeps the answer small enough for a fixed
 * buffer (a uid is echoed escaped, up to 6 bytes a byte). */
#define REVIEW_PREFIX_UID_MAX 256

/* Find request.uid in text[0..len), the first len bytes of a body (or all
 * of it). 0 with *uid set (borrowed from text, or decoded into
 * tmp[0..tmpn) when it holds escapes) when text is an admission.k8s.io/v1
 * AdmissionReview as far as it goes, its apiVersion, kind and a non-empty
 * request.uid all in it, no member of the three read twice. -ENOENT when
 * text stops before those are all read; -EBADMSG when it is not JSON, not
 * such a review, or gives apiVersion, kind, request or request.uid twice;
 * -E2BIG when the uid is longer than REVIEW_PREFIX_UID_MAX or does not fit
 * in tmp. Only the top-level request's own uid counts. */
int review_prefix_uid(const char *text, size_t len, char *tmp, size_t tmpn, struct str *uid);

#endif
