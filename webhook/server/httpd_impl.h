/* httpd_impl.h - what the parts of the HTTP server share (private).
 *
 * httpd.c           listeners, TLS transport, fixed answers, readiness, the
 *                   housekeeping thread (deadlines, allocator trim)
 * httpd_request.c   the webhook port's request path: framing checks,
 *                   routing, bodies under the memory budget, answers
 * httpd_plain.c     the plain-HTTP ports: metrics and probes */
#ifndef DRA_GUARD_HTTPD_IMPL_H
#define DRA_GUARD_HTTPD_IMPL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "acceptor.h"
#include "admit.h"
#include "buf.h"
#include "coalesce.h"
#include "deadline.h"
#include "httpd.h"
#include "reqmem.h"

/* Bytes read from the socket ahead of what GnuTLS asked for. GnuTLS reads a
 * record's 5-byte header and then its body, two recv() calls per 16 KiB
 * record; reading what the socket has in one call and handing GnuTLS its
 * pieces from here cuts a 137 KiB review from 18 recv() calls to 3. Held
 * while a request is being received, released between requests. */
#define CONN_READAHEAD (64 * 1024)

/* The first bytes of a body the server drops (past --max-body, or with the
 * memory budget spent), kept to find the review's uid and answer it inside
 * a review (review_prefix.h), and then the place that answer is sent
 * from. The API server writes the uid within the first hundred-odd bytes;
 * 4 KiB also takes a hand-written or pretty-printed review's and, with a
 * uid of at most 256 bytes echoed at up to 6 bytes each, the whole answer.
 * Part of the connection (outside the memory budget, bounded by
 * --max-connections: 4 MiB at 1,024); filled only while a body is being
 * dropped, so a body that is kept costs no copy. */
#define CONN_PREFIX (4 * 1024)

enum route {
	ROUTE_NONE = 0,
	ROUTE_VALIDATE,
	ROUTE_MUTATE,
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
};

struct pending_list;
struct metrics_auth;

/* The debug paths, each with one answer in flight at most. */
enum httpd_debug_path {
	HTTPD_DEBUG_VIEW = 0,
	HTTPD_DEBUG_LEDGER,
	HTTPD_DEBUG_PENDING,
	HTTPD_DEBUG_PATHS
};

/* Why a debug answer was refused. */
enum httpd_debug_refusal {
	HTTPD_DEBUG_BUSY = 0,         /* another answer of that path is being sent */
	HTTPD_DEBUG_BUDGET,           /* larger than what --debug-memory-budget has left */
	HTTPD_DEBUG_REFUSALS
};

/* One TCP connection on the webhook port. */
struct conn {
	struct httpd *h;
	struct MHD_Connection *mhd;   /* set with the first request line */
	struct snapshot *cred;        /* the credential its handshake was given */
	gnutls_session_t session;
	int fd;
	char *rbuf;                   /* CONN_READAHEAD bytes, allocated when read into */
	size_t rpos, rlen;            /* unread bytes are rbuf[rpos..rlen) */
	struct deadline_entry dl;     /* the request's clock: first byte to answer sent */
	bool muted;                   /* what libmicrohttpd sends from now on is dropped */
	struct coalesce co;           /* an answer's header record, held for its body's */
	int worker;                   /* the worker thread serving it, -1 until its first read */

	/* A request line has been read and the handler not yet called: listed
	 * on the worker thread's pending list (httpd_request.c). */
	struct pending_list *pending_in;
	struct conn *pending_prev, *pending_next;

	/* The request in progress. Body and answer buffers come from the
	 * memory budget's pool and go back as soon as the answer is sent. */
	struct buf body;
	size_t body_charged;          /* bytes of it counted in the budget */
	struct buf out;               /* the answer; MHD sends it from here */
	size_t out_charged;
	enum route route;
	bool started;                 /* the handler has seen this request */
	bool answered;                /* a response is queued */
	bool too_big;
	bool over_budget;             /* refused by the memory budget: the body is dropped */
	bool refusal_counted;         /* its error answer is counted already */
	bool in_flight;
	size_t seen;                  /* body bytes received, kept or not */
	uint64_t start_ns;
	size_t prefix_len;            /* bytes of prefix in use */
	char prefix[CONN_PREFIX];     /* a dropped body's first bytes, then its answer */
};

/* A plain-HTTP listener (metrics, probes); the metrics port speaks HTTPS
 * with the serving certificate when its requests are checked. */
struct plain_port {
	struct httpd *h;
	const char *name;             /* "metrics", "probe" */
	bool metrics;                 /* serves GET /metrics too */
	bool tls;                     /* HTTPS with the cert source's credential */
	struct metrics_auth *auth;    /* NULL: no check (--metrics-auth=none) */
	struct MHD_Daemon *d;
	struct deadline_list *dl;
	char addr[96];
};

struct httpd {
	struct httpd_env env;
	struct MHD_Daemon *tls_d;
	int listen_fd;                /* the webhook port's socket, accepted on by the acceptor */
	struct acceptor *acceptor;
	atomic_uint next_worker;      /* worker numbers handed out to the threads */
	char addr[96];
	struct plain_port metrics;
	struct plain_port probe;
	atomic_bool draining;
	atomic_uint in_flight;
	struct admit admit;
	bool admit_made;
	size_t out_cap;
	struct reqmem *mem;
	struct deadline_list *dl;     /* the webhook port's connections */
	struct metrics_auth *auth;    /* the metrics port's checks, or NULL */

	/* Debug answers: their own budget (--debug-memory-budget), one in
	 * flight per path, refusals counted by reason. */
	atomic_size_t debug_in_use;
	atomic_bool debug_busy[HTTPD_DEBUG_PATHS];
	atomic_uint_fast64_t debug_refused[HTTPD_DEBUG_REFUSALS];

	/* The housekeeping thread: sweeps the deadlines, trims after bursts. */
	pthread_t keeper;
	bool keeper_started;
	bool keeper_stop;
	pthread_mutex_t keeper_mu;
	pthread_cond_t keeper_cv;

	/* Fixed answers, built once and shared by every connection. */
	struct MHD_Response *r_404, *r_404_plain, *r_404_noview, *r_404_nofreeze, *r_405_post, *r_405_get, *r_413, *r_415, *r_500, *r_503,
		*r_503_memory, *r_healthz, *r_404_noevents;
};

/* --- httpd.c ------------------------------------------------------------------- */

/* GET /readyz: 200 or 503 with what serves. */
enum MHD_Result httpd_answer_readyz(struct httpd *h, struct MHD_Connection *c);

/* GET /readyz for whoever reaches a port unchecked (webhook, probe, a
 * checked metrics port's, which every authenticated user may get): 200
 * {"ready":true} or 503 {"ready":false}, nothing more. */
enum MHD_Result httpd_answer_readyz_bare(struct httpd *h, struct MHD_Connection *c);

/* A JSON Status answer (Content-Type application/json) for code, built on
 * the spot; NULL when out of memory. Destroy after queueing. */
struct MHD_Response *httpd_status_response(unsigned code, const char *reason, const char *message);

/* Keep the path as sent: no percent-decoding. A decoded "%00" would end
 * the C string libmicrohttpd hands over, so "/validate%00" would route as
 * "/validate"; the routes need no escapes. (MHD_OPTION_UNESCAPE_CALLBACK) */
size_t httpd_keep_escaped(void *cls, struct MHD_Connection *c, char *s);

/* --- httpd_request.c ----------------------------------------------------------- */

/* MHD_OPTION_URI_LOG_CALLBACK: a request line was read. */
void *httpd_request_line(void *cls, const char *uri, struct MHD_Connection *c);

/* The access handler and the completion notice of the webhook port. */
enum MHD_Result httpd_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *upload_data, size_t *upload_data_size,
			     void **req_cls);
void httpd_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			     enum MHD_RequestTerminationCode toe);

/* The connection is closing: give back what its request held. */
void httpd_conn_closing(struct conn *conn);

/* libmicrohttpd is about to answer a request itself (code, its HTML text):
 * answer it with a JSON Status instead when the connection is known. Called
 * from the library's log callback on the connection's own thread. */
void httpd_library_answer(struct httpd *h, unsigned code, const char *html);

/* Count and log a refused request ("request refused": code, method, path,
 * peer, reason). c may be NULL when only the peer is known. */
void httpd_log_refusal(struct httpd *h, struct MHD_Connection *c, unsigned code, const char *method,
		       const char *url, const char *peer, const char *why);

/* --- httpd_plain.c ------------------------------------------------------------- */

/* Start p on addr: GET /healthz, /readyz (and /metrics when p->metrics),
 * with its own connection slots, a per-address limit and a whole-request
 * deadline. 0 or a negative errno with err. */
int httpd_plain_start(struct plain_port *p, const struct serve_addr *addr, char *err, size_t errn);

/* Stop it and free its deadline list. */
void httpd_plain_stop(struct plain_port *p);

/* Shared by the listeners. */
int httpd_bind_listener(const struct serve_addr *a, int *out, char *text, size_t textn, char *err,
			size_t errn);
void httpd_mhd_log(void *cls, const char *fmt, va_list ap);

/* A handshake's certificate (GnuTLS's retrieve callback, for either port):
 * *cred, a connection's reference to the newest credential of certs, is
 * taken on the first call and kept until the connection closes. 0, or -1
 * when there is no credential. */
struct cert_source;
struct snapshot;
int httpd_cert_retrieve(struct snapshot **cred, struct cert_source *certs, gnutls_pcert_st **pcert,
			unsigned int *pcert_length, gnutls_privkey_t *key);

#endif
