/* access_review.h - the metrics port's access checks, as Kubernetes
 * components make them: a bearer token reviewed by the API server
 * (authentication.k8s.io/v1 TokenReview), then the user it names asked
 * about the non-resource URL (authorization.k8s.io/v1 SubjectAccessReview,
 * nonResourceAttributes {verb, path}); and a bounded cache of the outcomes.
 *
 * The bodies sent are built here and the answers read here. Answers come
 * from the network and are hostile: bounded in bytes, depth and nodes,
 * duplicate keys refused, every field of the expected type or the answer
 * is refused (which the caller treats as a denial: fail closed). The user
 * a TokenReview names is copied into the SubjectAccessReview as read
 * (username, uid, groups, extra), each bounded.
 *
 * The cache maps a 32-byte key (the caller hashes the token with the path)
 * to an outcome until its expiry; at most cap entries, a full cache
 * replaces the entry that expires first. Nothing here keeps a token.
 *
 * Pure: no I/O, clock or globals; the caller passes the time in. A cache
 * is single-threaded (the caller locks). */
#ifndef DRA_GUARD_ACCESS_REVIEW_H
#define DRA_GUARD_ACCESS_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Longest bearer token sent for review: a ServiceAccount token is about a
 * kilobyte, an OIDC one a few. */
#define ACCESS_REVIEW_TOKEN_MAX ((size_t)16 * 1024)
/* Largest answer read from the API server. */
#define ACCESS_REVIEW_ANSWER_MAX ((size_t)256 * 1024)
/* Bounds on the user a TokenReview names. */
#define ACCESS_REVIEW_GROUPS_MAX 256
#define ACCESS_REVIEW_EXTRA_MAX 64
#define ACCESS_REVIEW_STRING_MAX 1024
/* Longest reason kept from an answer (for the 403's message and the log). */
#define ACCESS_REVIEW_REASON_MAX 256

/* The outcome of a check. */
enum access_outcome {
	ACCESS_ALLOWED = 0,
	ACCESS_UNAUTHENTICATED,       /* no token, or the API server does not know it: 401 */
	ACCESS_FORBIDDEN,             /* known, not allowed the path: 403 */
	ACCESS_OUTCOME_COUNT
};

/* The token of an Authorization header value ("Bearer TOKEN", the scheme
 * in any case, one or more spaces) into *tok and *len, borrowed from
 * header. -EINVAL for another scheme, an empty token, a token with a byte
 * outside RFC 6750's b64token set or trailing text; -E2BIG past
 * ACCESS_REVIEW_TOKEN_MAX. */
int access_review_bearer(const char *header, const char **tok, size_t *len);

/* The TokenReview for token (checked by access_review_bearer()) into out.
 * 0, or -E2BIG / -ENOMEM from out. */
int access_review_token_body(const char *token, size_t len, struct buf *out);

/* Read a TokenReview answer. 0 with *authenticated and, when true, the
 * user's SubjectAccessReview fields ("user":..,"uid":..,"groups":[..],
 * "extra":{..}, without braces) appended to user and the user name (cut
 * at namen - 1 bytes) in name. -EINVAL for an answer that is not a
 * TokenReview of the expected shape, -E2BIG past a bound, -ENOMEM. */
int access_review_token_answer(const char *text, size_t len, bool *authenticated, struct buf *user,
			       char *name, size_t namen);

/* The SubjectAccessReview of user (from access_review_token_answer()) for
 * verb on the non-resource path into out. 0, -E2BIG / -ENOMEM from out. */
int access_review_sar_body(const struct buf *user, const char *verb, const char *path, struct buf *out);

/* Read a SubjectAccessReview answer: 0 with *allowed (status.allowed, and
 * false whatever it says when status.denied is true) and status.reason (or
 * "") in reason. -EINVAL for a malformed answer, -E2BIG past a bound,
 * -ENOMEM. */
int access_review_sar_answer(const char *text, size_t len, bool *allowed, char reason[ACCESS_REVIEW_REASON_MAX]);

/* A token bucket on the reviews sent to the API server: a client making
 * up tokens gets a TokenReview each, and those share the guard's own
 * priority level (API Priority and Fairness) with its watches, Events and
 * Lease. burst reviews at once, one more every interval_ns. */
struct access_rate {
	uint32_t burst;
	int64_t interval_ns;
	uint32_t tokens;              /* private */
	int64_t last_ns;
	bool started;
};

/* A full bucket. */
void access_rate_init(struct access_rate *r, uint32_t burst, int64_t interval_ns);

/* Take one token at now_ns: true, or false when the bucket is empty. */
bool access_rate_take(struct access_rate *r, int64_t now_ns);

#define ACCESS_CACHE_KEY 32

struct access_cache;

/* A cache of at most cap entries. 0, -EINVAL for cap 0, -ENOMEM. */
int access_cache_new(uint32_t cap, struct access_cache **out);

/* NULL is a no-op. */
void access_cache_free(struct access_cache *c);

/* The outcome stored for key and not expired at now_ns into *out: true;
 * false when there is none. */
bool access_cache_get(const struct access_cache *c, const uint8_t key[ACCESS_CACHE_KEY], int64_t now_ns,
		      enum access_outcome *out);

/* Store outcome for key until expires_ns, replacing the key's entry, else
 * an expired one, else the one that expires first. */
void access_cache_put(struct access_cache *c, const uint8_t key[ACCESS_CACHE_KEY], enum access_outcome outcome,
		      int64_t expires_ns);

/* Entries held and not expired at now_ns. */
uint32_t access_cache_live(const struct access_cache *c, int64_t now_ns);

#endif
