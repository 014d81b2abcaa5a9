/* httpd_plain.c - the ports beside the webhook's: metrics (GET /metrics,
 * /healthz, /readyz, /debug/view, /debug/ledger, /debug/pending) and probes
 * (GET /healthz, /readyz only, answering ready or not and nothing more).
 * The metrics port's /debug/readyz (and its /readyz when unchecked) says
 * what serves: policy, freeze, the cluster view, the gate.
 *
 * With --metrics-auth=kubernetes the metrics port speaks HTTPS with the
 * serving certificate and every request needs a bearer token the API
 * server knows, whose user RBAC allows get on the path (metrics_auth.h):
 * 401 without one, 403 when not allowed, 503 when the API server cannot
 * say (denied all the same).
 *
 * Debug answers never touch the admission memory budget: they have their
 * own (--debug-memory-budget), one answer in flight per path (429 for a
 * second), and a reader that has not taken the whole answer within
 * --debug-send-timeout is cut off, giving the bytes back.
 *
 * Each port has its own connection slots, so filling one never starves the
 * other, and three fences against a client that holds slots without asking
 * anything: at most PER_ADDRESS connections from one address, an idle
 * timeout, and a deadline for the whole request counted from the
 * connection's start (or its previous answer), which a client trickling
 * header bytes cannot reset. On the metrics port the clock stops once the
 * request is in; on the probe port it runs until the answer is sent. */
#include "httpd_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "metrics_auth.h"
#include "prom.h"
#include "serve_config.h"
#include "snapshot.h"

#define METRICS_TEXT_MAX ((size_t)8 * 1024 * 1024)


/* Send b's text (rc the producer's result: 0, or anything else for a 500)
 * as a 200 of content type ctype, never cached; b is emptied either way. */
static enum MHD_Result answer_text(struct httpd *h, struct MHD_Connection *c, int rc, struct buf *b,
				   const char *ctype)
{
	struct MHD_Response *r;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;

	if (rc != 0 || buf_take(b, &text, &len) != 0) {
		buf_free(b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* One connection on a plain port. */
struct plain_conn {
	struct deadline_entry dl;
	struct plain_port *p;
	struct snapshot *cred;        /* HTTPS: the credential its handshake was given */
};

/* A debug answer held under the debug budget while libmicrohttpd sends it. */
struct debug_text {
	struct httpd *h;
	enum httpd_debug_path path;
	size_t n;
	char *text;
};

static const char *const debug_refusal_names[HTTPD_DEBUG_REFUSALS] = { "busy", "budget" };

/* Take path's slot: false when another answer of it is in flight. */
static bool debug_begin(struct httpd *h, enum httpd_debug_path path)
{
	return !atomic_exchange(&h->debug_busy[path], true);
}

/* Give path's slot back (debug_begin() took it): the answer is sent,
 * dropped or never made. */
static void debug_end(struct httpd *h, enum httpd_debug_path path)
{
	atomic_store(&h->debug_busy[path], false);
}

/* The answer has been sent or dropped: its bytes and its path's slot
 * are free again. */
static void debug_text_free(void *cls)
{
	struct debug_text *t = cls;

	atomic_fetch_sub(&t->h->debug_in_use, t->n);
	debug_end(t->h, t->path);
	free(t->text);
	free(t);
}

static enum MHD_Result answer_status(struct MHD_Connection *c, unsigned code, const char *reason, const char *msg,
				     const char *header, const char *value)
{
	struct MHD_Response *r = httpd_status_response(code, reason, msg);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	if (header)
		MHD_add_response_header(r, header, value);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static void debug_refused(struct httpd *h, enum httpd_debug_refusal why)
{
	atomic_fetch_add(&h->debug_refused[why], 1);
}

/* What the debug budget has left: the cap of the buffer an answer is
 * built in, so it is never built past the budget. */
static size_t debug_room(struct httpd *h)
{
	size_t used = atomic_load(&h->debug_in_use), budget = h->env.cfg->debug_memory_budget;

	return used < budget ? budget - used : 0;
}

/* Send b's text (rc the producer's result; -E2BIG: past what the budget
 * has left) as the answer of path, holding its bytes in the debug budget
 * until it is sent, on a clock of --debug-send-timeout; the path's slot
 * (taken by debug_begin()) is released with it, or now on any failure. */
static enum MHD_Result answer_debug(struct httpd *h, struct MHD_Connection *c, enum httpd_debug_path path, int rc,
				    struct buf *b, const char *too_big)
{
	struct debug_text *t = NULL;
	struct MHD_Response *r;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	const union MHD_ConnectionInfo *ci;

	if (rc == -E2BIG) {
		buf_free(b);
		debug_end(h, path);
		debug_refused(h, HTTPD_DEBUG_BUDGET);
		log_msg(LOG_WARN, "debug answer refused: larger than what --debug-memory-budget has left");
		return answer_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", too_big,
				     MHD_HTTP_HEADER_RETRY_AFTER, "5");
	}
	if (rc != 0 || buf_take(b, &text, &len) != 0) {
		buf_free(b);
		debug_end(h, path);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	atomic_fetch_add(&h->debug_in_use, len);
	t = malloc(sizeof(*t));
	r = t ? MHD_create_response_from_buffer_with_free_callback_cls(len, text, debug_text_free, t) : NULL;
	if (!r) {
		atomic_fetch_sub(&h->debug_in_use, len);
		debug_end(h, path);
		free(text);
		free(t);
		return MHD_NO;
	}
	t->h = h;
	t->path = path;
	t->n = len;
	t->text = text;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	/* A reader that stalls is cut off when the send timeout passes, and
	 * the answer's bytes come back (debug_text_free()). */
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context) {
		struct plain_conn *pc = ci->socket_context;

		deadline_set_limit(h->metrics.dl, &pc->dl, (uint64_t)h->env.cfg->debug_send_timeout_s * 1000000000u);
		deadline_restart(&pc->dl, clock_mono_ns());
	}
	return ret;
}

static enum MHD_Result answer_busy(struct httpd *h, struct MHD_Connection *c, const char *path)
{
	char msg[160];

	debug_refused(h, HTTPD_DEBUG_BUSY);
	snprintf(msg, sizeof(msg), "another %s answer is being sent (one at a time); retry when it is done", path);
	return answer_status(c, MHD_HTTP_TOO_MANY_REQUESTS, "TooManyRequests", msg, MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

/* Slots, per-address limit, idle timeout and request deadline (seconds). */
#define METRICS_SLOTS 64
#define METRICS_PER_ADDRESS 8
#define METRICS_IDLE_S 10
#define METRICS_DEADLINE_S 5
#define PROBE_SLOTS 16
#define PROBE_PER_ADDRESS 4
#define PROBE_IDLE_S 2
#define PROBE_DEADLINE_S 2

/* The registry's families, then this file's: the debug budget and its
 * refusals, and the metrics port's checks. */
static int render_metrics(struct httpd *h, struct buf *b)
{
	int rc = metrics_render(h->env.m, b);
	int i;

	if (rc == 0)
		rc = prom_header(b, PROM_DEBUG_MEMORY_BYTES);
	if (rc == 0)
		rc = prom_sample(b, PROM_DEBUG_MEMORY_BYTES, NULL, "%zu", atomic_load(&h->debug_in_use));
	if (rc == 0)
		rc = prom_header(b, PROM_DEBUG_REFUSED_TOTAL);
	for (i = 0; rc == 0 && i < HTTPD_DEBUG_REFUSALS; i++)
		rc = prom_sample(b, PROM_DEBUG_REFUSED_TOTAL, &debug_refusal_names[i], "%llu",
				 (unsigned long long)atomic_load(&h->debug_refused[i]));
	if (rc == 0 && h->auth)
		rc = metrics_auth_render_metrics(h->auth, b);
	return rc;
}

static enum MHD_Result answer_metrics(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;
	char why[512];

	/* Readiness also changes with no reload to update the gauge (the
	 * cluster view's first sync, a policy from the API's ConfigMap): read
	 * it now, as /readyz does. */
	metrics_ready(h->env.m, httpd_ready(h, why, sizeof(why)));
	buf_init(&b, METRICS_TEXT_MAX);
	return answer_text(h, c, render_metrics(h, &b), &b, "text/plain; version=0.0.4; charset=utf-8");
}

/* GET /debug/view: the published view's objects (names, resourceVersions,
 * pools with their generations) as JSON, held under the debug budget;
 * 404 without a cluster view, 503 before its first sync. */
static enum MHD_Result answer_debug_view(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;
	int rc;

	if (!h->env.view)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_noview);
	if (!debug_begin(h, HTTPD_DEBUG_VIEW))
		return answer_busy(h, c, "/debug/view");
	buf_init(&b, debug_room(h));
	rc = cluster_view_dump_json(h->env.view, &b);
	if (rc == -EAGAIN) {
		buf_free(&b);
		debug_end(h, HTTPD_DEBUG_VIEW);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503);
	}
	return answer_debug(h, c, HTTPD_DEBUG_VIEW, rc, &b,
			    "the view's listing is larger than what --debug-memory-budget has left: retry, raise"
			    " --debug-memory-budget or use /debug/ledger?node=NAME");
}

/* GET /debug/ledger[?node=NAME][&at=freeze]: the ledger as JSON; 404
 * without a cluster view, for at=freeze when no freeze began since the
 * start, and for any other at; 503 before the view's first sync. */
static enum MHD_Result answer_debug_ledger(struct httpd *h, struct MHD_Connection *c)
{
	const char *node = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "node");
	const char *at = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "at");
	struct buf b;
	int rc;

	if (!h->env.ledger)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_noview);
	if (at && strcmp(at, "freeze") != 0)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_nofreeze);
	/* Held under the debug budget (41.8 MB at 5,000 nodes), so it can
	 * never be built past it, and never in admission's. */
	if (!debug_begin(h, HTTPD_DEBUG_LEDGER))
		return answer_busy(h, c, "/debug/ledger");
	buf_init(&b, debug_room(h));
	rc = ledger_watch_json(h->env.ledger, node, at != NULL, &b);
	if (rc == -EAGAIN || rc == -ENOENT) {
		buf_free(&b);
		debug_end(h, HTTPD_DEBUG_LEDGER);
		return MHD_queue_response(c, rc == -EAGAIN ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_NOT_FOUND,
					  rc == -EAGAIN ? h->r_503 : h->r_404_nofreeze);
	}
	return answer_debug(h, c, HTTPD_DEBUG_LEDGER, rc, &b,
			    "the ledger's text is larger than what --debug-memory-budget has left: retry, ask for"
			    " one node (/debug/ledger?node=NAME) or raise --debug-memory-budget");
}

/* GET /debug/pending: the claims this replica refuses now, held under the
 * debug budget; 404 without Events. */
static enum MHD_Result answer_debug_pending(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;

	if (!h->env.events)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_noevents);
	if (!debug_begin(h, HTTPD_DEBUG_PENDING))
		return answer_busy(h, c, "/debug/pending");
	buf_init(&b, debug_room(h));
	return answer_debug(h, c, HTTPD_DEBUG_PENDING, event_sink_pending_json(h->env.events, &b), &b,
			    "the pending list is larger than what --debug-memory-budget has left: retry or raise"
			    " --debug-memory-budget");
}

static enum MHD_Result count_authorization(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	unsigned *n = cls;

	(void)kind;
	(void)value;
	if (key && strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0)
		(*n)++;
	return MHD_YES;
}

/* The metrics port's check: true to go on, else false with the answer
 * queued (*ret). */
static bool check_access(struct plain_port *p, struct MHD_Connection *c, const char *url, enum MHD_Result *ret)
{
	const char *authz = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	char why[768];
	unsigned n = 0;
	enum metrics_auth_result r;

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_authorization, &n);
	/* Two Authorization headers: which one a proxy in front checked is
	 * anyone's guess. */
	if (n > 1) {
		*ret = answer_status(c, MHD_HTTP_BAD_REQUEST, "BadRequest", "more than one Authorization header", NULL,
				     NULL);
		return false;
	}
	r = metrics_auth_check(p->auth, authz, url, why, sizeof(why));
	switch (r) {
	case METRICS_AUTH_ALLOWED:
		return true;
	case METRICS_AUTH_UNAUTHENTICATED:
		*ret = answer_status(c, MHD_HTTP_UNAUTHORIZED, "Unauthorized", why, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				     "Bearer realm=\"dra-guard\"");
		return false;
	case METRICS_AUTH_FORBIDDEN:
		*ret = answer_status(c, MHD_HTTP_FORBIDDEN, "Forbidden", why, NULL, NULL);
		return false;
	case METRICS_AUTH_THROTTLED:
		*ret = answer_status(c, MHD_HTTP_TOO_MANY_REQUESTS, "TooManyRequests", why, MHD_HTTP_HEADER_RETRY_AFTER,
				     "1");
		return false;
	default:
		*ret = answer_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", why,
				     MHD_HTTP_HEADER_RETRY_AFTER, "5");
		return false;
	}
}

static enum MHD_Result handle_plain(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *upload_data,
				    size_t *upload_data_size, void **req_cls)
{
	struct plain_port *p = cls;
	struct httpd *h = p->h;
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	bool metrics = p->metrics && strcmp(url, "/metrics") == 0;
	bool debug_view = p->metrics && strcmp(url, "/debug/view") == 0;
	bool debug_ledger = p->metrics && strcmp(url, "/debug/ledger") == 0;
	bool debug_pending = p->metrics && strcmp(url, "/debug/pending") == 0;
	bool debug_readyz = p->metrics && strcmp(url, "/debug/readyz") == 0;
	enum MHD_Result ret;

	(void)version;
	(void)upload_data;
	/* Answer on the first call; a body, if any, is not read. */
	if (*req_cls)
		return (*upload_data_size = 0, MHD_YES);
	*req_cls = h;
	if (p->metrics) {
		/* The request is in: what follows is the server's own work (a
		 * ledger build takes seconds at scale, /debug/ledger tens of MB),
		 * bounded by the idle timeout while the client reads. Probe
		 * answers are small and stay on the clock. */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		struct plain_conn *pc = ci ? ci->socket_context : NULL;

		if (pc)
			deadline_stop(&pc->dl);
	}
	/* Every request on a checked port, whatever its path or method: an
	 * unchecked one learns nothing, not even which paths exist. */
	if (p->auth && !check_access(p, c, url, &ret))
		return ret;
	if (!metrics && !debug_view && !debug_ledger && !debug_pending && !debug_readyz &&
	    strcmp(url, "/healthz") != 0 && strcmp(url, "/readyz") != 0)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_plain);
	if (!get)
		return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, h->r_405_get);
	if (metrics)
		return answer_metrics(h, c);
	if (strcmp(url, "/healthz") == 0)
		return MHD_queue_response(c, MHD_HTTP_OK, h->r_healthz);
	if (debug_view)
		return answer_debug_view(h, c);
	if (debug_ledger)
		return answer_debug_ledger(h, c);
	if (debug_pending)
		return answer_debug_pending(h, c);
	/* Kubernetes' default RBAC lets every authenticated user get /readyz
	 * and /healthz (system:public-info-viewer): on a checked port /readyz
	 * says ready or not, and what serves (policy, freeze and its reason,
	 * the view's state) is /debug/readyz, granted as the debug paths are. */
	if (debug_readyz || (p->metrics && !p->auth))
		return httpd_answer_readyz(h, c);
	return httpd_answer_readyz_bare(h, c);
}

/* HTTPS: GnuTLS asks for the certificate once per handshake; the
 * connection keeps a reference to the newest credential until it closes,
 * as the webhook port's do. */
static int plain_retrieve_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
			       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			       gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *key)
{
	struct plain_conn *pc = gnutls_session_get_ptr(session);

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	return pc ? httpd_cert_retrieve(&pc->cred, pc->p->h->env.certs, pcert, pcert_length, key) : -1;
}

static uint64_t deadline_ns(const void *port)
{
	const struct plain_port *p = port;

	return (uint64_t)(p->metrics ? METRICS_DEADLINE_S : PROBE_DEADLINE_S) * 1000000000u;
}

/* Every connection is on the clock from its start. */
static void notify_plain(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode code)
{
	struct plain_port *p = cls;
	struct plain_conn *pc;
	const union MHD_ConnectionInfo *fdi;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = NULL;
		fdi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		pc = calloc(1, sizeof(*pc));
		if (!pc || !fdi) {
			free(pc);
			return;       /* served without a deadline (HTTPS: no handshake) */
		}
		pc->p = p;
		if (p->tls) {
			const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);

			if (ci && ci->tls_session)
				gnutls_session_set_ptr((gnutls_session_t)ci->tls_session, pc);
		}
		deadline_add(p->dl, &pc->dl, fdi->connect_fd, deadline_ns(p));
		deadline_start(&pc->dl, clock_mono_ns());
		*socket_context = pc;
		return;
	}
	pc = *socket_context;
	if (!pc)
		return;
	/* Before the library closes the descriptor. */
	deadline_remove(p->dl, &pc->dl);
	snapshot_release(pc->cred);
	free(pc);
	*socket_context = NULL;
}

/* An answer sent: a kept-alive connection has until the deadline for its
 * next request. */
static void completed_plain(void *cls, struct MHD_Connection *c, void **req_cls,
			    enum MHD_RequestTerminationCode toe)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct plain_conn *pc = ci ? ci->socket_context : NULL;

	(void)req_cls;
	(void)toe;
	if (!pc)
		return;
	/* After a debug answer's send timeout: the request deadline again,
	 * the clock restarted before the limit is lowered, so the checker
	 * never sees the old start with the short limit (which would close a
	 * keep-alive connection that just finished). */
	deadline_restart(&pc->dl, clock_mono_ns());
	deadline_set_limit(((struct plain_port *)cls)->dl, &pc->dl, deadline_ns(cls));
}

int httpd_plain_start(struct plain_port *p, const struct serve_addr *addr, char *err, size_t errn)
{
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | (p->tls ? MHD_USE_TLS : 0);
	struct MHD_OptionItem tls[3] = {
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTPD_TLS_PRIORITIES },
		{ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)plain_retrieve_cert },
		{ MHD_OPTION_END, 0, NULL },
	};
	int fd, rc;

	if (deadline_list_new(&p->dl) != 0) {
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	rc = httpd_bind_listener(addr, &fd, p->addr, sizeof(p->addr), err, errn);
	if (rc)
		return rc;
	p->d = MHD_start_daemon(flags, 0, NULL, NULL, handle_plain, p,
				MHD_OPTION_EXTERNAL_LOGGER, httpd_mhd_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)(p->metrics ? METRICS_SLOTS : PROBE_SLOTS),
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				(unsigned)(p->metrics ? METRICS_PER_ADDRESS : PROBE_PER_ADDRESS),
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)(p->metrics ? METRICS_IDLE_S : PROBE_IDLE_S),
				MHD_OPTION_NOTIFY_CONNECTION, notify_plain, p,
				MHD_OPTION_NOTIFY_COMPLETED, completed_plain, p,
				MHD_OPTION_UNESCAPE_CALLBACK, httpd_keep_escaped, NULL,
				MHD_OPTION_ARRAY, p->tls ? tls : tls + 2,
				MHD_OPTION_END);
	if (!p->d) {
		close(fd);
		snprintf(err, errn, "%s: libmicrohttpd could not start the %s listener", p->addr, p->name);
		return -EIO;
	}
	return 0;
}

void httpd_plain_stop(struct plain_port *p)
{
	if (p->d)
		MHD_stop_daemon(p->d);
	p->d = NULL;
	/* After the daemon: every connection has removed its entry. */
	deadline_list_free(p->dl);
	p->dl = NULL;
}
