/* metrics_auth.h - who may read the metrics port (--metrics-auth=kubernetes).
 *
 * As Kubernetes components guard their metrics (controller-runtime's
 * metrics authentication filter, kube-rbac-proxy): the request's bearer
 * token is sent to the API server in a TokenReview; the user it names is
 * then asked about in a SubjectAccessReview for get on the request's path
 * as a non-resource URL (/metrics, /debug/ledger, ...), which RBAC grants
 * with nonResourceURLs. Both go through the cluster view's API client
 * (its credentials, CA and token), each within REVIEW_TIMEOUT_S.
 *
 * Outcomes are cached under a SHA-256 of token and path (never the token
 * itself): allowed for 10 s, unauthenticated or forbidden for 2 s, at most
 * 1,024 entries. An API server that does not answer, or answers something
 * else than a review, is a denial (fail closed), counted as an error and
 * never cached. Checks the cache cannot answer are held to 20 a second
 * (40 at once): past that, 429 without asking the API server, so made-up
 * tokens cannot turn into a flood of TokenReviews in the guard's name. */
#ifndef DRA_GUARD_METRICS_AUTH_H
#define DRA_GUARD_METRICS_AUTH_H

#include <stddef.h>

#include "access_review.h"
#include "buf.h"
#include "kube_client.h"

enum metrics_auth_result {
	METRICS_AUTH_ALLOWED = 0,
	METRICS_AUTH_UNAUTHENTICATED, /* 401 */
	METRICS_AUTH_FORBIDDEN,       /* 403 */
	METRICS_AUTH_ERROR,           /* the API server could not say: 503, denied */
	METRICS_AUTH_THROTTLED,       /* past the rate of reviews: 429, denied */
	METRICS_AUTH_RESULT_COUNT
};

struct metrics_auth;

/* Checks through client (borrowed; outlives the checker). 0 or
 * -ENOMEM. */
int metrics_auth_new(struct kube_client *client, struct metrics_auth **out);

/* NULL is a no-op. */
void metrics_auth_free(struct metrics_auth *a);

/* May the bearer of authorization (the Authorization header's value, NULL
 * when absent) get path? why (n bytes) says why not, for the answer: it
 * names the user on a 403, never the token. Blocks for the API server's
 * answers on a cache miss. Any thread (one check at a time). */
enum metrics_auth_result metrics_auth_check(struct metrics_auth *a, const char *authorization, const char *path,
					    char *why, size_t n);

/* dra_guard_metrics_auth_total{result} and
 * dra_guard_metrics_auth_cache_hits_total appended to out. */
int metrics_auth_render_metrics(struct metrics_auth *a, struct buf *out);

#endif
