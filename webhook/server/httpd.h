/* httpd.h - the HTTP listeners of dra-guard serve (libmicrohttpd).
 *
 * The webhook port speaks HTTPS only (GnuTLS, TLS 1.2 and 1.3, an explicit
 * priority string), on a pool of worker threads each running its own epoll
 * loop, so a slow or silent client occupies a connection slot, never a
 * thread. Routes: POST /validate, POST /mutate (the path alone, as sent:
 * the API server appends ?timeout=...), GET /healthz, GET /readyz.
 * Everything else is answered, counted and logged: 404, 405 with Allow,
 * 415, 413 (declared or counted as a chunked body arrives), 400 for
 * ambiguous framing (two Content-Lengths, Transfer-Encoding with one),
 * 503 while no policy is loaded or when the memory budget is spent.
 *
 * Every request runs on a clock from its first byte (the handshake's, on a
 * new connection) until its answer is sent: past --body-timeout a
 * housekeeping thread shuts the connection down, whatever the client
 * trickles (headers, chunk sizes, trailers). Bodies and answers are
 * charged to one memory budget (reqmem.h) and their buffers go back to a
 * bounded pool as soon as the answer is sent.
 *
 * The certificate comes from the cert source at each handshake: the
 * connection keeps a reference to the credential it was handed until it
 * closes, so a rotation never frees what a handshake still reads and never
 * refuses a connection.
 *
 * The metrics port and the optional probe port run one thread each, with
 * their own connection slots, a per-address connection limit and a
 * whole-request deadline: GET /healthz, /readyz, and on the metrics port
 * only /metrics, /debug/readyz, /debug/view, /debug/ledger (?node=NAME,
 * ?at=freeze) and /debug/pending. The probe port is plain HTTP; the
 * metrics port too with --metrics-auth=none, and with kubernetes HTTPS
 * with every request's bearer token reviewed (metrics_auth.h). /readyz
 * says what serves only on an unchecked metrics port (and /debug/readyz);
 * elsewhere ready or not, nothing more. */
#ifndef DRA_GUARD_HTTPD_H
#define DRA_GUARD_HTTPD_H

#include <stdbool.h>
#include <stddef.h>

#include "cert_source.h"
#include "cluster_view.h"
#include "event_sink.h"
#include "gate_release.h"
#include "ledger_watch.h"
#include "metrics.h"
#include "policy_source.h"
#include "serve_config.h"

/* TLS 1.2 and 1.3 only, AEAD ciphers only, our preference first. */
#define HTTPD_TLS_PRIORITIES \
	"SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:" \
	"+CHACHA20-POLY1305:%SERVER_PRECEDENCE"

/* Per-connection memory libmicrohttpd may use for headers and read buffers. */
#define HTTPD_CONNECTION_MEMORY (32 * 1024)

struct httpd_env {
	const struct serve_config *cfg;
	struct metrics *m;
	struct cert_source *certs;
	struct policy_source *policy;
	struct cluster_view *view;    /* NULL: serving without a cluster view */
	struct kube_client *client;   /* the API client: set with view */
	struct ledger_watch *ledger;  /* NULL without a cluster view */
	struct gate_release *gate;    /* NULL without --gate-release */
	struct event_sink *events;    /* NULL: no Events (no cluster view, or --events=false) */
};

struct httpd;

enum httpd_port {
	HTTPD_PORT_WEBHOOK = 0,
	HTTPD_PORT_METRICS,
	HTTPD_PORT_PROBE,
};

/* Bind the ports and start serving. The env and everything it points to
 * are borrowed and must outlive httpd_stop(). 0, or a negative errno with
 * err saying what failed (a port in use, TLS setup). */
int httpd_start(const struct httpd_env *env, struct httpd **out, char *err, size_t errn);

/* The bound address of a port ("127.0.0.1:8443"), for the log: ports given
 * as 0 are resolved; "" for a port that is disabled. Borrowed. */
const char *httpd_address(const struct httpd *h, enum httpd_port port);

/* True when certificate and policy are loaded and no drain has begun;
 * otherwise why (n bytes) says what is missing. Any thread. */
bool httpd_ready(struct httpd *h, char *why, size_t n);

/* Stop accepting connections on the webhook port; connections already open
 * are served, with Connection: close on every answer. /readyz turns 503. */
void httpd_drain(struct httpd *h);

/* Requests in progress on the webhook port (headers read, answer not yet
 * sent). Any thread. */
unsigned httpd_in_flight(struct httpd *h);

/* Stop every listener (closing whatever is still open) and free. NULL is a
 * no-op. */
void httpd_stop(struct httpd *h);

#endif
