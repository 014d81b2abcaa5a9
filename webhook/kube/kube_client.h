/* kube_client.h - the guard's one client of the API server.
 *
 * Built from a kube_config (kube_config.h): the server, its CA (read again
 * when its file changes, and at once after the server's certificate failed
 * verification), the client certificate or the bearer token (read again
 * when old and after a 401). The credentials change under ONE lock, held
 * only while a request's handle is prepared: the CA, certificate and key are
 * copied into the handle and the Authorization header is built to the
 * token's length, so a rotation never pulls memory from under a transfer.
 *
 * Every request is HTTP/1.1 with TLS verified (https only, unless the
 * client was made with allow_http: `dra-guard pending` to a replica's
 * port, which keeps tokens off plain http beyond loopback), Accept:
 * application/json and User-Agent: dra-guard. Paths (query included) are
 * built in a kube_client_path: a capped buffer whose every append fails with
 * -E2BIG at the point it would not fit, never cut.
 *
 * The view's list/watch requests (streamed, on a multi handle) use
 * kube_client_prepare() and kube_client_answered(); the rest (Events, the
 * gate's Lease and releases, the metrics port's reviews, `dra-guard
 * pending`) use kube_client_request(), whose answer goes into a capped buf:
 * an answer over the cap ends the request with -E2BIG, never a silent cut.
 *
 * Thread-safe: any thread may prepare and send requests. */
#ifndef DRA_GUARD_KUBE_CLIENT_H
#define DRA_GUARD_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "buf.h"
#include "kube_config.h"

/* Longest path and query of one request: a LIST page's continue token
 * (VIEW_CONTINUE_MAX, escaped) fits with room to spare. */
#define KUBE_CLIENT_PATH_MAX (3 * 8192 + 1024)

/* A request's path and query, built by appends that each fit or fail. */
struct kube_client_path {
	char s[KUBE_CLIENT_PATH_MAX];
	size_t len;
};

/* Empty path. */
void kube_client_path_init(struct kube_client_path *p);

/* Append printf-formatted text. 0, or -E2BIG when it does not fit (the path
 * is left as it was before the call). */
int kube_client_path_add(struct kube_client_path *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append s percent-encoded (everything but RFC 3986's unreserved characters
 * escaped), for a query value. 0, or -E2BIG (the path left as it was). */
int kube_client_path_add_escaped(struct kube_client_path *p, const char *s);

/* The path as a C string. */
const char *kube_client_path_get(const struct kube_client_path *p);

struct kube_client_options {
	long connect_timeout_s;       /* 0: 10 s */
	bool allow_http;              /* plain http too (a replica's own loopback port) */
	const char *connect_to;       /* "ADDR:PORT" to connect to instead of the server's host, or NULL */
};

struct kube_client;

/* Take over *cfg (emptied: kube_config_free() on it is then a no-op). opt
 * may be NULL (defaults); its strings are copied. 0, -E2BIG (connect_to too
 * long) or -ENOMEM; on failure cfg stays the caller's. */
int kube_client_new(struct kube_config *cfg, const struct kube_client_options *opt, struct kube_client **out);

/* NULL is a no-op. No request may be in flight. */
void kube_client_free(struct kube_client *c);

/* "https://host:port", as configured. */
const char *kube_client_server(const struct kube_client *c);

/* Where the configuration came from ("in-cluster", or a kubeconfig and context). */
const char *kube_client_source(const struct kube_client *c);

/* curl's receive buffer for a request that reads a whole collection (a
 * LIST page, a streaming list): fewer, larger writes into the decoder.
 * kube_client_prepare() leaves curl's default, 16 KiB, which is what a
 * WATCH or a small answer needs; a handle keeps its buffer as long as the
 * handle lives, so a large one is asked for only where it pays. */
#define KUBE_CLIENT_BULK_BUFFER (256 * 1024)

/* Prepare e for one request to path (which starts with '/', query
 * included): URL, TLS, credentials (the token and CA read again when due),
 * the whole-request timeout_s, and the headers (Accept, User-Agent,
 * Authorization, and Content-Type when content_type is not NULL) appended
 * to *headers, which the caller sets on e and frees with
 * curl_slist_free_all() after the request. Method, body and write callback
 * are the caller's. 0, -E2BIG (the URL too long), -ENOMEM. Any thread. */
int kube_client_prepare(struct kube_client *c, CURL *e, const char *path, long timeout_s,
			const char *content_type, struct curl_slist **headers);

/* A request prepared here ended with res and HTTP status (0: none): after a
 * 401 the token is read again, after a failed certificate verification the
 * CA. Any thread. */
void kube_client_answered(struct kube_client *c, CURLcode res, long status);

struct kube_request {
	const char *method;           /* "GET", "POST", "PUT", "PATCH", "DELETE" */
	const char *path;             /* from '/', query included */
	const char *body;             /* NULL: none */
	size_t body_len;
	const char *content_type;     /* of body; NULL: none sent */
	long timeout_s;               /* the whole request */
};

/* Send rq and wait for the answer, on e (reset first: its open connection
 * is reused) or on a handle of its own when e is NULL. *status gets the
 * HTTP status (0 when none came) and out (reset first) the answer, up to
 * out's cap (buf_init()). 0 when an answer came, whatever its status;
 * -E2BIG when the answer is larger than out's cap (*status is still set);
 * -EIO when no answer came (err says why); -ENOMEM. err may be NULL. Any
 * thread, one request per handle at a time. */
int kube_client_request(struct kube_client *c, CURL *e, const struct kube_request *rq, long *status,
			struct buf *out, char *err, size_t errn);

#endif
