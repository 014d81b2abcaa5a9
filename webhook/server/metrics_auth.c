/* metrics_auth.c - TokenReview and SubjectAccessReview for the metrics port. */
#include "metrics_auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "clock.h"
#include "log.h"
#include "prom.h"

/* A review takes at most this long: the metrics port has one thread, and
 * a scrape's timeout is about 10 s. */
#define REVIEW_TIMEOUT_S 2
/* After a review the API server failed, checks the cache cannot answer are
 * refused at once for this long: made-up tokens, or an API server that
 * does not answer, would otherwise hold the port's one thread two review
 * timeouts per request. */
#define REVIEW_DOWN_NS (2LL * 1000000000LL)
/* How long an outcome is reused. Allowed longer than denied, so a grant
 * just added is seen within seconds and a scrape every few seconds costs
 * few reviews; both short, so a revoked grant or token stops working
 * within 10 s. */
#define ALLOWED_TTL_NS (10LL * 1000000000LL)
#define DENIED_TTL_NS (2LL * 1000000000LL)
#define CACHE_CAP 1024
/* Reviews sent at most at this rate (20 a second, 40 at once). */
#define REVIEW_BURST 40
#define REVIEW_INTERVAL_NS (50LL * 1000000LL)
/* At most one warning this often about the API server failing reviews. */
#define WARN_EVERY_NS (10LL * 1000000000LL)

static const char *const result_names[METRICS_AUTH_RESULT_COUNT] = {
	"allowed", "unauthenticated", "forbidden", "error", "throttled",
};

struct metrics_auth {
	struct kube_client *client;
	pthread_mutex_t mu;           /* one check at a time; guards the cache */
	struct access_cache *cache;
	struct access_rate rate;
	CURL *curl;                   /* kept between reviews: its connection is reused */
	int64_t last_warn_ns;
	int64_t down_until_ns;        /* no review before this (monotonic): the last one failed */
	bool warned;
	atomic_uint_fast64_t results[METRICS_AUTH_RESULT_COUNT];
	atomic_uint_fast64_t cache_hits;
};

int metrics_auth_new(struct kube_client *client, struct metrics_auth **out)
{
	struct metrics_auth *a = calloc(1, sizeof(*a));
	int i;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	if (access_cache_new(CACHE_CAP, &a->cache) != 0 || pthread_mutex_init(&a->mu, NULL) != 0) {
		access_cache_free(a->cache);
		free(a);
		return -ENOMEM;
	}
	a->client = client;
	access_rate_init(&a->rate, REVIEW_BURST, REVIEW_INTERVAL_NS);
	for (i = 0; i < METRICS_AUTH_RESULT_COUNT; i++)
		atomic_init(&a->results[i], 0);
	atomic_init(&a->cache_hits, 0);
	*out = a;
	return 0;
}

void metrics_auth_free(struct metrics_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	if (a->curl)
		curl_easy_cleanup(a->curl);
	access_cache_free(a->cache);
	free(a);
}

/* POST body to path; 0 with the answer of a 201 or 200 in ans (capped at
 * its buf_init()), else a negative errno with what happened in why. The
 * mutex is held: the handle, and the connection it keeps to the API server,
 * are reused (two TLS handshakes per check otherwise). */
static int post_review(struct metrics_auth *a, const char *path, const struct buf *body, struct buf *ans,
		       char *why, size_t n)
{
	const struct kube_request rq = { .method = "POST", .path = path, .body = buf_cstr(body),
					 .body_len = buf_len(body), .content_type = "application/json",
					 .timeout_s = REVIEW_TIMEOUT_S };
	long code = 0;
	int rc;

	if (!a->curl && !(a->curl = curl_easy_init())) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	/* A 401 (a token that went stale) has it read again for the next one. */
	rc = kube_client_request(a->client, a->curl, &rq, &code, ans, why, n);
	if (rc == 0 && code != 201 && code != 200) {
		rc = -EIO;
		snprintf(why, n, "HTTP %ld", code);
	}
	return rc;
}

static void warn_error(struct metrics_auth *a, const char *what, const char *why)
{
	int64_t now = (int64_t)clock_mono_ns();
	struct log_line l;

	if (a->warned && now - a->last_warn_ns < WARN_EVERY_NS)
		return;
	a->warned = true;
	a->last_warn_ns = now;
	if (!log_begin(&l, LOG_WARN, "metrics port: request denied, the API server could not review it"))
		return;
	log_str(&l, "review", what);
	log_str(&l, "error", why);
	log_end(&l);
}

/* The reviews, uncached. The mutex is held. */
static enum metrics_auth_result review(struct metrics_auth *a, const char *token, size_t len, const char *path,
				       char *why, size_t n)
{
	char name[256], reason[ACCESS_REVIEW_REASON_MAX], err[256];
	struct buf body, user;
	struct buf ans;
	enum metrics_auth_result r = METRICS_AUTH_ERROR;
	bool ok = false;
	int rc;

	buf_init(&body, ACCESS_REVIEW_TOKEN_MAX + ACCESS_REVIEW_ANSWER_MAX);
	buf_init(&user, ACCESS_REVIEW_ANSWER_MAX);
	buf_init(&ans, ACCESS_REVIEW_ANSWER_MAX);
	rc = access_review_token_body(token, len, &body);
	if (rc == 0)
		rc = post_review(a, "/apis/authentication.k8s.io/v1/tokenreviews", &body, &ans, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-rc));
	if (rc == 0 && (rc = access_review_token_answer(buf_cstr(&ans), buf_len(&ans), &ok, &user, name,
							 sizeof(name))) != 0)
		snprintf(err, sizeof(err), "not a TokenReview answer (%s)", strerror(-rc));
	if (rc) {
		warn_error(a, "TokenReview", err);
		snprintf(why, n, "the API server could not review the token (%s): denied; retry later", err);
		goto out;
	}
	if (!ok) {
		r = METRICS_AUTH_UNAUTHENTICATED;
		snprintf(why, n, "the API server does not know this token");
		goto out;
	}
	buf_reset(&body);
	buf_reset(&ans);
	rc = access_review_sar_body(&user, "get", path, &body);
	if (rc == 0)
		rc = post_review(a, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &body, &ans, err,
				 sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-rc));
	if (rc == 0 && (rc = access_review_sar_answer(buf_cstr(&ans), buf_len(&ans), &ok, reason)) != 0)
		snprintf(err, sizeof(err), "not a SubjectAccessReview answer (%s)", strerror(-rc));
	if (rc) {
		warn_error(a, "SubjectAccessReview", err);
		snprintf(why, n, "the API server could not review access for user \"%.200s\" (%s): denied; retry later",
			 name, err);
		goto out;
	}
	if (!ok) {
		r = METRICS_AUTH_FORBIDDEN;
		snprintf(why, n, "user \"%.200s\" cannot get path \"%.200s\": bind it to a ClusterRole granting get on"
			 " nonResourceURLs [\"%.200s\"] (manifests/base/metrics-rbac.yaml)", name, path, path);
		goto out;
	}
	r = METRICS_AUTH_ALLOWED;
out:
	buf_free(&body);
	buf_free(&user);
	buf_free(&ans);
	return r;
}

/* 0, or -ENOMEM when no digest could be made: then the cache is not
 * used at all, never a key that other tokens could share. */
static int cache_key(const char *token, size_t len, const char *path, uint8_t key[ACCESS_CACHE_KEY])
{
	gnutls_hash_hd_t hd;

	if (gnutls_hash_init(&hd, GNUTLS_DIG_SHA256) != 0)
		return -ENOMEM;
	if (gnutls_hash(hd, token, len) != 0 || gnutls_hash(hd, "", 1) != 0 ||   /* the token has no NUL */
	    gnutls_hash(hd, path, strlen(path)) != 0) {
		gnutls_hash_deinit(hd, NULL);
		return -ENOMEM;
	}
	gnutls_hash_deinit(hd, key);
	return 0;
}

enum metrics_auth_result metrics_auth_check(struct metrics_auth *a, const char *authorization, const char *path,
					    char *why, size_t n)
{
	static const char *const cached_why[] = {
		"", "the API server does not know this token", "this user cannot get this path (RBAC)", "", "",
	};
	uint8_t key[ACCESS_CACHE_KEY];
	enum access_outcome o;
	enum metrics_auth_result r;
	const char *token;
	size_t len;
	int64_t now;
	bool keyed;

	why[0] = '\0';
	if (!authorization) {
		snprintf(why, n, "no bearer token: send Authorization: Bearer TOKEN (a ServiceAccount token whose"
			 " user RBAC allows get on this path)");
		r = METRICS_AUTH_UNAUTHENTICATED;
		goto count;
	}
	if (access_review_bearer(authorization, &token, &len) != 0) {
		snprintf(why, n, "the Authorization header is not \"Bearer TOKEN\" with a token of at most %zu bytes",
			 ACCESS_REVIEW_TOKEN_MAX);
		r = METRICS_AUTH_UNAUTHENTICATED;
		goto count;
	}
	keyed = cache_key(token, len, path, key) == 0;
	pthread_mutex_lock(&a->mu);
	now = (int64_t)clock_mono_ns();
	if (keyed && access_cache_get(a->cache, key, now, &o)) {
		pthread_mutex_unlock(&a->mu);
		atomic_fetch_add(&a->cache_hits, 1);
		r = o == ACCESS_ALLOWED ? METRICS_AUTH_ALLOWED
		    : o == ACCESS_FORBIDDEN ? METRICS_AUTH_FORBIDDEN : METRICS_AUTH_UNAUTHENTICATED;
		snprintf(why, n, "%s", cached_why[r]);
		goto count;
	}
	if (now < a->down_until_ns) {
		pthread_mutex_unlock(&a->mu);
		snprintf(why, n, "the API server failed the last token review: retry in a few seconds");
		r = METRICS_AUTH_ERROR;
		goto count;
	}
	if (!access_rate_take(&a->rate, now)) {
		pthread_mutex_unlock(&a->mu);
		snprintf(why, n, "too many requests with tokens not seen lately: retry in a second");
		r = METRICS_AUTH_THROTTLED;
		goto count;
	}
	r = review(a, token, len, path, why, n);
	now = (int64_t)clock_mono_ns();
	if (r == METRICS_AUTH_ERROR)
		a->down_until_ns = now + REVIEW_DOWN_NS;
	/* An API error is never kept: the next request asks again. */
	if (keyed && r != METRICS_AUTH_ERROR)
		access_cache_put(a->cache, key,
				 r == METRICS_AUTH_ALLOWED ? ACCESS_ALLOWED
				 : r == METRICS_AUTH_FORBIDDEN ? ACCESS_FORBIDDEN : ACCESS_UNAUTHENTICATED,
				 now + (r == METRICS_AUTH_ALLOWED ? ALLOWED_TTL_NS : DENIED_TTL_NS));
	pthread_mutex_unlock(&a->mu);
count:
	atomic_fetch_add(&a->results[r], 1);
	return r;
}

int metrics_auth_render_metrics(struct metrics_auth *a, struct buf *out)
{
	int rc = prom_header(out, PROM_METRICS_AUTH_TOTAL);
	int i;

	for (i = 0; rc == 0 && i < METRICS_AUTH_RESULT_COUNT; i++)
		rc = prom_sample(out, PROM_METRICS_AUTH_TOTAL, &result_names[i], "%llu",
				 (unsigned long long)atomic_load(&a->results[i]));
	if (rc == 0)
		rc = prom_header(out, PROM_METRICS_AUTH_CACHE_HITS_TOTAL);
	if (rc == 0)
		rc = prom_sample(out, PROM_METRICS_AUTH_CACHE_HITS_TOTAL, NULL, "%llu",
				 (unsigned long long)atomic_load(&a->cache_hits));
	return rc;
}
