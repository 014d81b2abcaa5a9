/* httpd_plain.c - the plain-HTTP ports: metrics (GET /metrics, /healthz,
 * /readyz, /debug/view, /debug/ledger, /debug/pending) and probes (GET /healthz, /readyz
 * only).
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

#include "log.h"
#include "serve_config.h"

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

/* A text charged to the memory budget while libmicrohttpd sends it. */
struct charged_text {
	struct reqmem *mem;
	size_t n;
	char *text;
};

/* The answer has been sent or dropped: give its bytes back. */
static void charged_text_free(void *cls)
{
	struct charged_text *t = cls;

	reqmem_uncharge(t->mem, t->n);
	free(t->text);
	free(t);
}

/* answer_text() for a text held under the memory budget, as admission
 * answers are: built in full (one at a time: the metrics port has one
 * thread; capped at the budget by the caller's buffer), then sent only if
 * it fits in what the budget has left, else 503 with Retry-After. -E2BIG
 * from the producer (the text would pass the whole budget) is a 503 that
 * says so. */
static enum MHD_Result answer_text_charged(struct httpd *h, struct MHD_Connection *c, int rc, struct buf *b,
					   const char *ctype, const char *too_big)
{
	struct charged_text *t = NULL;
	struct MHD_Response *r;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;

	if (rc == -E2BIG) {
		buf_free(b);
		log_msg(LOG_WARN, "debug answer refused: larger than the whole --memory-budget");
		r = httpd_status_response(MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable", too_big);
		if (!r)
			return MHD_NO;
		ret = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (rc != 0 || buf_take(b, &text, &len) != 0) {
		buf_free(b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	if (!reqmem_charge(h->mem, len)) {
		free(text);
		log_msg(LOG_WARN, "debug answer refused: it does not fit in what --memory-budget has left");
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503_memory);
	}
	t = malloc(sizeof(*t));
	r = t ? MHD_create_response_from_buffer_with_free_callback_cls(len, text, charged_text_free, t) : NULL;
	if (!r) {
		reqmem_uncharge(h->mem, len);
		free(text);
		free(t);
		return MHD_NO;
	}
	t->mem = h->mem;
	t->n = len;
	t->text = text;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
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

struct plain_conn {
	struct deadline_entry dl;
};

static enum MHD_Result answer_metrics(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;
	char why[512];

	/* Readiness also changes with no reload to update the gauge (the
	 * cluster view's first sync, a policy from the API's ConfigMap): read
	 * it now, as /readyz does. */
	metrics_ready(h->env.m, httpd_ready(h, why, sizeof(why)));
	buf_init(&b, METRICS_TEXT_MAX);
	return answer_text(h, c, metrics_render(h->env.m, &b), &b, "text/plain; version=0.0.4; charset=utf-8");
}

/* GET /debug/view: the published view's objects (names, resourceVersions,
 * pools with their generations) as JSON, held under the memory budget as
 * /debug/ledger is; 404 without a cluster view, 503 before its first
 * sync. */
static enum MHD_Result answer_debug_view(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;
	int rc;

	if (!h->env.view)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_noview);
	buf_init(&b, reqmem_budget(h->mem));
	rc = cluster_view_dump_json(h->env.view, &b);
	if (rc == -EAGAIN) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503);
	}
	return answer_text_charged(h, c, rc, &b, "application/json",
				   "the view's listing is larger than the whole --memory-budget: raise --memory-budget "
				   "or use /debug/ledger?node=NAME");
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
	/* Held under the memory budget like admission answers (41.8 MB at
	 * 5,000 nodes), so it can never be built past it. */
	buf_init(&b, reqmem_budget(h->mem));
	rc = ledger_watch_json(h->env.ledger, node, at != NULL, &b);
	if (rc == -EAGAIN || rc == -ENOENT) {
		buf_free(&b);
		return MHD_queue_response(c, rc == -EAGAIN ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_NOT_FOUND,
					  rc == -EAGAIN ? h->r_503 : h->r_404_nofreeze);
	}
	return answer_text_charged(h, c, rc, &b, "application/json",
				   "the ledger's text is larger than the whole --memory-budget: ask for one node "
				   "(/debug/ledger?node=NAME) or raise --memory-budget");
}

/* GET /debug/pending: the claims this replica refuses now, held under the
 * memory budget; 404 without Events. */
static enum MHD_Result answer_debug_pending(struct httpd *h, struct MHD_Connection *c)
{
	struct buf b;

	if (!h->env.events)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404_noevents);
	buf_init(&b, reqmem_budget(h->mem));
	return answer_text_charged(h, c, event_sink_pending_json(h->env.events, &b), &b, "application/json",
				   "the pending list is larger than the whole --memory-budget: raise --memory-budget");
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
	if (!metrics && !debug_view && !debug_ledger && !debug_pending && strcmp(url, "/healthz") != 0 &&
	    strcmp(url, "/readyz") != 0)
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
	return httpd_answer_readyz(h, c);
}

static uint64_t deadline_ns(const struct plain_port *p)
{
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
			return;       /* served without a deadline; the idle timeout stays */
		}
		deadline_add(p->dl, &pc->dl, fdi->connect_fd, deadline_ns(p));
		deadline_start(&pc->dl, admit_now_ns());
		*socket_context = pc;
		return;
	}
	pc = *socket_context;
	if (!pc)
		return;
	/* Before the library closes the descriptor. */
	deadline_remove(p->dl, &pc->dl);
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

	(void)cls;
	(void)req_cls;
	(void)toe;
	if (pc)
		deadline_restart(&pc->dl, admit_now_ns());
}

int httpd_plain_start(struct plain_port *p, const struct serve_addr *addr, char *err, size_t errn)
{
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
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
