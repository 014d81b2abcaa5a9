/* decode.h - AdmissionReview and object JSON into the typed model.
 *
 * One pass over the text with jscan: members a rule reads are decoded into
 * struct admission_request / struct k8s_object, everything else is validated
 * and skipped. The object's kind comes from request.kind (group, version,
 * kind); kinds no rule reads are skipped whole (OBJECT_OTHER).
 *
 * Strict where it reads: a member of the wrong type, a duplicate member, a
 * duplicate map key (capacity, mappings, consumed capacity, and the keys it
 * reads of labels, data and extra), an unsupported version of a guarded
 * kind, or more entries than the limits allow is an error that names the
 * JSON path ("request.object.spec.devices[3].capacity: expected an object,
 * got a string"). What no rule reads is only validated. Everything in the
 * model borrows from the text and the arena. Thread-safe as long as each
 * call has its own arena. */
#ifndef DRA_GUARD_DECODE_H
#define DRA_GUARD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"

/* The API server's own limit on devices in one ResourceSlice. */
#define DECODE_API_MAX_DEVICES 128

/* Limits on what the decoder keeps. Content no rule reads (other labels,
 * other ConfigMap keys, other extra keys, opaque parameters, managed
 * fields) is validated and skipped, bounded only by the body's size and
 * max_depth: Kubernetes sets no count limit on it, and refusing it would
 * refuse ordinary writes. */
struct decode_limits {
	unsigned max_depth;          /* JSON nesting, counted from the review's root */
	uint32_t max_devices;        /* spec.devices per slice */
	uint32_t max_map_entries;    /* capacity names, mappings, consumed capacity, claim
				      * resources per map */
	uint32_t max_list;           /* groups, values of a read extra key, results,
				      * reservedFor, device statuses, claim statuses,
				      * requests, device classes, valid values */
};

#define DECODE_ERROR_MAX 512

struct decode_error {
	char msg[DECODE_ERROR_MAX];  /* names the JSON path and what was wrong */
	size_t offset;               /* byte offset in the text */
};

/* max_depth JSCAN_DEPTH_LIMIT (all the API server can send), max_devices
 * DECODE_API_MAX_DEVICES, max_map_entries 256, max_list 4096. */
void decode_limits_default(struct decode_limits *lim);

/* Decode an admission.k8s.io/v1 AdmissionReview request body. lim NULL
 * means decode_limits_default().
 *
 * Returns 0 with *out filled; -EBADMSG when the text is not JSON (anywhere,
 * object and oldObject included; also invalid UTF-8 in a string that is
 * read) or not an AdmissionReview v1 with a request (out->uid may still be
 * set if it was read); -EPROTO when the review itself is fine (uid, kind,
 * operation read, and the whole text is JSON) but object or oldObject does
 * not decode as the kind it claims to be: the caller answers with a denial
 * naming err->msg; -E2BIG or -ENOMEM when the arena is exhausted. err is
 * filled on every failure. */
int decode_review(const char *body, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct admission_request *out,
		  struct decode_error *err);

/* Find request.uid in an AdmissionReview the full decoder refused (a limit,
 * the nesting depth, a member of the wrong type), so the refusal can still
 * be answered inside a review. Reads nothing else, and validates the whole
 * text as JSON nested at most JSCAN_DEPTH_LIMIT deep. Returns 0 with *uid
 * (borrowed from body or a): the text is JSON, an admission.k8s.io/v1
 * AdmissionReview, with a non-empty string request.uid; -EBADMSG otherwise,
 * or the arena's error. */
int decode_review_uid(const char *body, size_t len, struct arena *a, struct str *uid);

/* Decode one bare object (dry-run input): its kind comes from its own
 * apiVersion and kind members, which may come anywhere in it. Kinds no rule
 * reads give OBJECT_OTHER. lim NULL means decode_limits_default().
 * Returns 0, -EPROTO for an object that does not decode, text that is not
 * JSON included (err says why), -E2BIG or -ENOMEM. */
int decode_object(const char *json, size_t len, const struct decode_limits *lim,
		  struct arena *a, struct k8s_object *out, struct decode_error *err);

/* Decode one object whose kind and version the caller knows: an item of a
 * LIST, which carries neither, or the object of a WATCH event. kind must be
 * a guarded kind and version one the guard decodes. Same returns as
 * decode_object(). */
int decode_object_as(const char *json, size_t len, enum object_kind kind, enum api_version version,
		     const struct decode_limits *lim, struct arena *a, struct k8s_object *out,
		     struct decode_error *err);

/* decode_object_as() of the object json starts with, whatever follows it
 * (the next items of a LIST, or the cut end of what has arrived): *used gets
 * the object's length when it returns 0. Validates the object's text as
 * decode_object_as() does, and nothing after it. */
int decode_object_as_prefix(const char *json, size_t len, enum object_kind kind, enum api_version version,
			    const struct decode_limits *lim, struct arena *a, struct k8s_object *out,
			    struct decode_error *err, size_t *used);

/* The object kind and version that group/version/kind name, as the decoder
 * sees them: OBJECT_OTHER for kinds no rule reads; API_VERSION_UNKNOWN for a
 * guarded kind in a version the guard does not decode. */
enum object_kind decode_classify(struct str group, struct str version, struct str kind,
				 enum api_version *version_out);

#endif
