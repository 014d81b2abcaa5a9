/* httpd_request.c - the webhook port's request path: framing, routing,
 * bodies under the memory budget, answers. */
#include "httpd_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "clock.h"
#include "log.h"
#include "review.h"
#include "serve_config.h"

/* --- requests whose headers are still arriving -------------------------------------- */

/* The connections of one worker thread that have sent a request line and
 * whose handler has not run yet. libmicrohttpd 0.9.75 answers a malformed
 * Content-Length itself, without calling the handler, and says so only to
 * its log callback, which does not name the connection. The callback runs
 * on the connection's own thread, after its request line and before its
 * handler: when this thread has exactly one such connection, that is the
 * one, with no guess involved. */
struct pending_list {
	struct conn *head;
	unsigned n;
};

static _Thread_local struct pending_list pending;

static void pending_add(struct conn *conn)
{
	if (conn->pending_in)
		return;
	conn->pending_in = &pending;
	conn->pending_prev = NULL;
	conn->pending_next = pending.head;
	if (pending.head)
		pending.head->pending_prev = conn;
	pending.head = conn;
	pending.n++;
}

static void pending_remove(struct conn *conn)
{
	struct pending_list *l = conn->pending_in;

	if (!l)
		return;
	if (conn->pending_prev)
		conn->pending_prev->pending_next = conn->pending_next;
	else
		l->head = conn->pending_next;
	if (conn->pending_next)
		conn->pending_next->pending_prev = conn->pending_prev;
	conn->pending_prev = conn->pending_next = NULL;
	conn->pending_in = NULL;
	l->n--;
}

/* --- answers and refusals ------------------------------------------------------------- */

static enum route route_of(const char *url)
{
	if (strcmp(url, "/validate") == 0)
		return ROUTE_VALIDATE;
	if (strcmp(url, "/mutate") == 0)
		return ROUTE_MUTATE;
	if (strcmp(url, "/healthz") == 0)
		return ROUTE_HEALTHZ;
	if (strcmp(url, "/readyz") == 0)
		return ROUTE_READYZ;
	return ROUTE_NONE;
}

/* application/json, any case, parameters (charset) allowed. */
static bool json_content_type(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return false;
	ct += sizeof(want) - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

static void peer_of(struct MHD_Connection *c, char *peer, size_t n)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	peer[0] = '\0';
	if (ci && ci->client_addr)
		serve_config_addr_format(ci->client_addr, peer, n);
}

void httpd_log_refusal(struct httpd *h, struct MHD_Connection *c, unsigned code, const char *method,
		       const char *url, const char *peer, const char *why)
{
	int idx = metrics_http_error_of(code);
	char addr[96];
	struct log_line l;

	if (idx >= 0)
		metrics_http_error(h->env.m, (enum metrics_http_error)idx);
	if (!log_begin(&l, code >= 500 ? LOG_WARN : LOG_INFO, "request refused"))
		return;
	if (!peer && c) {
		peer_of(c, addr, sizeof(addr));
		peer = addr;
	}
	log_uint(&l, "code", code);
	if (method && method[0])
		log_str(&l, "method", method);
	if (url && url[0])
		log_str(&l, "path", url);
	log_str(&l, "peer", peer ? peer : "");
	log_str(&l, "reason", why);
	log_end(&l);
}

static void log_refused(struct conn *conn, struct MHD_Connection *c, unsigned code, const char *method,
			const char *url, const char *why)
{
	conn->refusal_counted = true;
	httpd_log_refusal(conn->h, c, code, method, url, NULL, why);
}

/* Queue a fixed answer. */
static enum MHD_Result answer_fixed(struct conn *conn, struct MHD_Connection *c, unsigned code,
				   struct MHD_Response *r)
{
	enum MHD_Result ret = MHD_queue_response(c, code, r);

	if (ret == MHD_YES)
		conn->answered = true;
	return ret;
}

static enum MHD_Result refuse(struct conn *conn, struct MHD_Connection *c, unsigned code,
			      struct MHD_Response *r, const char *method, const char *url, const char *why)
{
	log_refused(conn, c, code, method, url, why);
	return answer_fixed(conn, c, code, r);
}

/* 400 with a message of its own. */
static enum MHD_Result refuse_400(struct conn *conn, struct MHD_Connection *c, const char *method,
				  const char *url, const char *why)
{
	struct MHD_Response *r = httpd_status_response(MHD_HTTP_BAD_REQUEST, "BadRequest", why);
	enum MHD_Result ret;

	log_refused(conn, c, MHD_HTTP_BAD_REQUEST, method, url, why);
	if (!r)
		return MHD_NO;
	ret = answer_fixed(conn, c, MHD_HTTP_BAD_REQUEST, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- the memory a request holds -------------------------------------------------------- */

static void release_body(struct conn *conn)
{
	reqmem_uncharge(conn->h->mem, conn->body_charged);
	conn->body_charged = 0;
	reqmem_give(conn->h->mem, REQMEM_BODY, &conn->body);
}

static void release_out(struct conn *conn)
{
	reqmem_uncharge(conn->h->mem, conn->out_charged);
	conn->out_charged = 0;
	reqmem_give(conn->h->mem, REQMEM_ANSWER, &conn->out);
}

void httpd_conn_closing(struct conn *conn)
{
	pending_remove(conn);
	release_body(conn);
	release_out(conn);
}

/* --- bodies dropped: their first bytes, and the answer at their end -------------------- */

/* Keep what fits of data in the prefix. */
static void prefix_add(struct conn *conn, const char *data, size_t n)
{
	size_t room = sizeof(conn->prefix) - conn->prefix_len;

	if (n > room)
		n = room;
	memcpy(conn->prefix + conn->prefix_len, data, n);
	conn->prefix_len += n;
}

/* The body is about to be dropped: what it holds starts the prefix. */
static void drop_body(struct conn *conn)
{
	if (conn->prefix_len == 0 && buf_len(&conn->body) > 0)
		prefix_add(conn, buf_cstr(&conn->body), buf_len(&conn->body));
	release_body(conn);
}

/* The budget is spent: drop the body as it comes (keeping its first
 * bytes), answer at its end. */
static void over_budget(struct conn *conn)
{
	conn->over_budget = true;
	drop_body(conn);
	metrics_memory_refusal(conn->h->env.m, REQMEM_BODY);
}

/* A size as the flags take it: "8Mi", "64Ki", else bytes. */
static void size_text(size_t n, char *out, size_t outn)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, outn, "%zuMi", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, outn, "%zuKi", n >> 10);
	else
		snprintf(out, outn, "%zu", n);
}

static void budget_full_message(const struct httpd *h, const char *what, char *out, size_t outn)
{
	char budget[32];

	size_text(h->env.cfg->memory_budget, budget, sizeof(budget));
	snprintf(out, outn, "dra-guard holds its whole memory budget (--memory-budget %s) for other requests: "
		 "%s, and the review was not judged; retry", budget, what);
}

/* Queue r, an answer of len body bytes to a POST: its header's TLS record
 * is held to leave with the body's in one write (coalesce.h). A body
 * always follows a POST's header, so the held record never waits for a
 * write that does not come. */
static enum MHD_Result queue_with_body(struct conn *conn, struct MHD_Connection *c, unsigned code,
				       struct MHD_Response *r, size_t len)
{
	enum MHD_Result ret;

	if (len > 0)
		coalesce_arm(&conn->co);
	ret = MHD_queue_response(c, code, r);
	if (ret != MHD_YES)
		coalesce_drop(&conn->co);
	return ret;
}

/* Send the answer admit_refuse() wrote into the prefix: 200, a review. */
static enum MHD_Result answer_from_prefix(struct conn *conn, struct MHD_Connection *c, size_t n)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* The prefix stays untouched until the request completes. */
	r = MHD_create_response_from_buffer(n, conn->prefix, MHD_RESPMEM_PERSISTENT);
	if (!r) {
		metrics_http_error(conn->h->env.m, METRICS_HTTP_500);
		return answer_fixed(conn, c, MHD_HTTP_INTERNAL_SERVER_ERROR, conn->h->r_500);
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (atomic_load(&conn->h->draining))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = queue_with_body(conn, c, MHD_HTTP_OK, r, n);
	MHD_destroy_response(r);
	if (ret == MHD_YES) {
		conn->answered = true;
		conn->refusal_counted = true;
	}
	return ret;
}

/* The end of a dropped body: inside a review when its first bytes name
 * the review's uid (a denial on /validate, an allow without a patch on
 * /mutate), else 413 or 503 as before. */
static enum MHD_Result answer_dropped(struct conn *conn, struct MHD_Connection *c, const char *method,
				      const char *url)
{
	struct httpd *h = conn->h;
	bool big = conn->too_big;
	unsigned code = big ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_SERVICE_UNAVAILABLE;
	char msg[320], cap[32];
	size_t n = 0;

	if (big) {
		size_text(h->env.cfg->max_body, cap, sizeof(cap));
		snprintf(msg, sizeof(msg), "dra-guard reads request bodies of at most --max-body %s: this review's "
			 "body is %zu bytes, and the review was not judged; raise --max-body above the largest "
			 "review", cap, conn->seen);
	} else {
		budget_full_message(h, "this review's body was not kept", msg, sizeof(msg));
	}
	if (admit_refuse(&h->admit, conn->route == ROUTE_MUTATE, conn->prefix, conn->prefix_len, (int32_t)code, msg,
			 false, conn->prefix, sizeof(conn->prefix), &n, conn->start_ns) == 0)
		return answer_from_prefix(conn, c, n);
	log_refused(conn, c, code, method, url,
		    big ? "body larger than --max-body" : "request body does not fit in --memory-budget");
	return answer_fixed(conn, c, code, big ? h->r_413 : h->r_503_memory);
}

/* --- the request path ----------------------------------------------------------------- */

/* The whole body is in: decide, and answer from a buffer charged to the
 * budget. */
static enum MHD_Result admit(struct conn *conn, struct MHD_Connection *c, const char *method,
			     const char *url)
{
	struct httpd *h = conn->h;
	struct MHD_Response *r = NULL;
	enum MHD_Result ret;
	unsigned status;

	reqmem_take(h->mem, REQMEM_ANSWER, 0, &conn->out);
	status = admit_review(&h->admit, conn->route == ROUTE_MUTATE, buf_cstr(&conn->body),
			      buf_len(&conn->body), &conn->out, conn->start_ns);
	/* Decided: the body is not counted any more (the answer is a copy);
	 * its buffer goes back once the answer has a place. */
	reqmem_uncharge(h->mem, conn->body_charged);
	conn->body_charged = 0;
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_INTERNAL_SERVER_ERROR) {
		release_body(conn);
		release_out(conn);
		return answer_fixed(conn, c, status,
				    status == MHD_HTTP_SERVICE_UNAVAILABLE ? h->r_503 : h->r_500);
	}
	/* Built in full (at most one per worker thread at a time, capped at
	 * --max-body + 4Mi), then held only if it fits; if not, a small
	 * answer in its place, from the prefix, to the uid in the body's
	 * first bytes (the decision is counted already). */
	if (!reqmem_charge(h->mem, buf_len(&conn->out))) {
		size_t n = buf_len(&conn->out), len = buf_len(&conn->body);
		char msg[320], what[96];

		release_out(conn);
		conn->over_budget = true;
		metrics_memory_refusal(h->env.m, REQMEM_ANSWER);
		snprintf(what, sizeof(what), "the answer to this review (%zu bytes) was not kept", n);
		budget_full_message(h, what, msg, sizeof(msg));
		if (admit_refuse(&h->admit, conn->route == ROUTE_MUTATE, buf_cstr(&conn->body),
				 len < sizeof(conn->prefix) ? len : sizeof(conn->prefix), MHD_HTTP_SERVICE_UNAVAILABLE,
				 msg, true, conn->prefix, sizeof(conn->prefix), &n, conn->start_ns) == 0) {
			release_body(conn);
			return answer_from_prefix(conn, c, n);
		}
		release_body(conn);
		log_refused(conn, c, MHD_HTTP_SERVICE_UNAVAILABLE, method, url, "answer does not fit in --memory-budget");
		return answer_fixed(conn, c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503_memory);
	}
	release_body(conn);
	conn->out_charged = buf_len(&conn->out);
	/* Sent straight from the buffer, which stays untouched until the
	 * request completes. */
	r = MHD_create_response_from_buffer(buf_len(&conn->out), (void *)buf_cstr(&conn->out),
					    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		release_out(conn);
		metrics_http_error(h->env.m, METRICS_HTTP_500);
		return answer_fixed(conn, c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (atomic_load(&h->draining))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = queue_with_body(conn, c, status, r, buf_len(&conn->out));
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		conn->answered = true;
	return ret;
}

/* A new request on conn. */
static void begin_request(struct conn *conn)
{
	pending_remove(conn);
	conn->started = true;
	conn->route = ROUTE_NONE;
	conn->answered = false;
	conn->too_big = false;
	conn->over_budget = false;
	conn->refusal_counted = false;
	conn->seen = 0;
	conn->prefix_len = 0;
	conn->start_ns = clock_mono_ns();
	conn->in_flight = true;
	atomic_fetch_add(&conn->h->in_flight, 1);
}

struct framing {
	unsigned content_length, transfer_encoding;
	const char *cl, *te;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		f->content_length++;
		f->cl = value;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		f->transfer_encoding++;
		f->te = value;
	}
	return MHD_YES;
}

/* RFC 9112 section 6.3: a body's length must be unambiguous. libmicrohttpd
 * 0.9.75 takes the first of two Content-Lengths and reads what follows as a
 * next request, and lets a Content-Length stand beside chunked; a proxy in
 * front that takes the other reading desynchronises from this server. NULL
 * when the framing is sound, with *cl the Content-Length (or NULL). */
static const char *framing_error(struct MHD_Connection *c, const char **cl)
{
	struct framing f = { 0, 0, NULL, NULL };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
	*cl = f.cl;
	if (f.content_length > 1)
		return "more than one Content-Length header: give the body's length once";
	if (f.transfer_encoding > 1)
		return "more than one Transfer-Encoding header: give \"chunked\" once";
	if (f.transfer_encoding && f.content_length)
		return "both Transfer-Encoding and Content-Length: give one of them";
	if (f.transfer_encoding && strcasecmp(f.te, "chunked") != 0)
		return "Transfer-Encoding must be \"chunked\"";
	return NULL;
}

/* A Content-Length libmicrohttpd has accepted (digits only): its value, or
 * UINT64_MAX when it does not fit. */
static uint64_t content_length_of(const char *s)
{
	uint64_t n = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - 9) / 10)
			return UINT64_MAX;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	return n;
}

/* The first call for a request: headers are in, no body yet. */
static enum MHD_Result first_call(struct conn *conn, struct MHD_Connection *c, const char *url,
				  const char *method)
{
	struct httpd *h = conn->h;
	const char *cl = NULL, *bad;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	uint64_t n = 0;

	/* Before anything is read of the body, whatever the path. */
	bad = framing_error(c, &cl);
	if (bad)
		return refuse_400(conn, c, method, url, bad);
	conn->route = route_of(url);
	switch (conn->route) {
	case ROUTE_NONE:
		return refuse(conn, c, MHD_HTTP_NOT_FOUND, h->r_404, method, url, "unknown path");
	case ROUTE_HEALTHZ:
	case ROUTE_READYZ:
		/* Answered on the final call: an answer queued before then
		 * makes libmicrohttpd close the connection. */
		if (!get)
			return refuse(conn, c, MHD_HTTP_METHOD_NOT_ALLOWED, h->r_405_get, method, url,
				      "method not allowed");
		return MHD_YES;
	default:
		break;
	}
	metrics_in_flight(h->env.m, 1);
	if (!post)
		return refuse(conn, c, MHD_HTTP_METHOD_NOT_ALLOWED, h->r_405_post, method, url,
			      "method not allowed");
	if (!json_content_type(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_CONTENT_TYPE)))
		return refuse(conn, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, h->r_415, method, url,
			      "Content-Type is not application/json");
	if (cl)
		n = content_length_of(cl);
	if (n > h->env.cfg->max_body) {
		const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);

		/* A client waiting for 100 Continue, or one announcing far more
		 * than the cap, gets the answer now and the connection closed.
		 * Anyone else is already sending: a close now would reset the
		 * connection under the answer, so the body is read and dropped
		 * and 413 comes at its end. */
		if (n / 2 > h->env.cfg->max_body || (expect && strcasecmp(expect, "100-continue") == 0))
			return refuse(conn, c, MHD_HTTP_CONTENT_TOO_LARGE, h->r_413, method, url,
				      "declared body larger than --max-body");
		conn->too_big = true;
		return MHD_YES;
	}
	/* The body's buffer, sized once when its length is declared. Only the
	 * pages written to cost memory; the budget counts the bytes as they
	 * arrive. */
	reqmem_take(h->mem, REQMEM_BODY, (size_t)n, &conn->body);
	if (n > 0 && buf_presize(&conn->body, (size_t)n) != 0)
		over_budget(conn);
	return MHD_YES;
}

/* Body bytes: kept under the caps and the budget, or dropped. */
static enum MHD_Result body_data(struct conn *conn, const char *data, size_t n)
{
	struct httpd *h = conn->h;
	int rc;

	if (conn->answered)
		return MHD_YES;
	conn->seen += n;
	if (conn->route == ROUTE_HEALTHZ || conn->route == ROUTE_READYZ)
		return conn->seen > h->env.cfg->max_body ? MHD_NO : MHD_YES;
	if (!conn->too_big && !conn->over_budget) {
		if (!reqmem_charge(h->mem, n)) {
			over_budget(conn);
			prefix_add(conn, data, n);
			return MHD_YES;
		}
		conn->body_charged += n;
		rc = buf_add(&conn->body, data, n);
		if (rc == 0)
			return MHD_YES;
		if (rc != -E2BIG) {
			log_msg(LOG_ERROR, "out of memory receiving a request body");
			return MHD_NO;
		}
		/* A chunked body crossed --max-body. libmicrohttpd takes no
		 * answer while a body is arriving: drop the rest as it comes
		 * and answer 413 at its end. */
		conn->too_big = true;
		drop_body(conn);
		prefix_add(conn, data, n);
		return MHD_YES;
	}
	prefix_add(conn, data, n);
	/* Streaming on to twice the cap is not a client that will read an
	 * answer: close the connection. */
	return conn->seen / 2 > h->env.cfg->max_body ? MHD_NO : MHD_YES;
}

enum MHD_Result httpd_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *upload_data, size_t *upload_data_size,
			     void **req_cls)
{
	struct conn *conn = *req_cls;
	size_t n = *upload_data_size;

	(void)cls;
	(void)version;
	if (!conn)
		return MHD_NO;        /* no connection state: refuse it */
	if (!conn->started) {
		begin_request(conn);
		return first_call(conn, c, url, method);
	}
	/* Past its deadline: the sweep has shut the socket down already. */
	if (deadline_expired(&conn->dl))
		return MHD_NO;
	if (n > 0) {
		*upload_data_size = 0;
		return body_data(conn, upload_data, n);
	}
	if (conn->answered)
		return MHD_YES;
	if (conn->route == ROUTE_HEALTHZ)
		return answer_fixed(conn, c, MHD_HTTP_OK, conn->h->r_healthz);
	/* Any Pod reaches this port through the Service: ready or not, and
	 * nothing of the policy, the freeze or the view. */
	if (conn->route == ROUTE_READYZ) {
		conn->answered = true;
		return httpd_answer_readyz_bare(conn->h, c);
	}
	if (conn->too_big || conn->over_budget)
		return answer_dropped(conn, c, method, url);
	return admit(conn, c, method, url);
}

void *httpd_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *conn = ci ? ci->socket_context : NULL;

	(void)cls;
	(void)uri;
	if (!conn)
		return NULL;
	conn->mhd = c;
	conn->started = false;
	pending_add(conn);
	return conn;
}

/* The library answered a request without calling the handler (a malformed
 * request it caught itself): count it, unless it was replaced. */
static void library_answered(struct conn *conn, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);

	if (conn->refusal_counted || !ci || ci->http_status < 400)
		return;
	log_refused(conn, c, ci->http_status, "", "", "malformed request, answered by libmicrohttpd");
}

void httpd_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			     enum MHD_RequestTerminationCode toe)
{
	struct httpd *h = cls;
	struct conn *conn = *req_cls;

	if (!conn)
		return;
	*req_cls = NULL;
	if (!conn->started) {
		pending_remove(conn);
		library_answered(conn, c);
	} else if ((conn->too_big || conn->over_budget) && !conn->answered && !conn->refusal_counted) {
		/* Cut off before its dropped body ended (streamed past twice
		 * the cap, or past --body-timeout): refused all the same. */
		log_refused(conn, c, conn->too_big ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_SERVICE_UNAVAILABLE, "",
			    conn->route == ROUTE_MUTATE ? "/mutate" : "/validate",
			    conn->too_big ? "body larger than --max-body, connection closed before its end"
					  : "request body does not fit in --memory-budget, connection closed before its end");
	}
	/* The answer has been sent (or never will be): nothing of it is held.
	 * A header record still held (no body write came after it) goes out
	 * now; what the socket does not take leaves with the next write. */
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && conn->fd >= 0)
		coalesce_flush(&conn->co, conn->fd);
	else
		coalesce_drop(&conn->co);
	release_body(conn);
	release_out(conn);
	conn->refusal_counted = false;
	conn->started = false;
	/* The next request's clock starts with its first byte; one already
	 * read ahead starts it now. An idle connection keeps no read-ahead. */
	deadline_stop(&conn->dl);
	if (conn->rpos < conn->rlen) {
		deadline_start(&conn->dl, clock_mono_ns());
	} else {
		free(conn->rbuf);
		conn->rbuf = NULL;
		conn->rpos = conn->rlen = 0;
	}
	if (!conn->in_flight)
		return;
	conn->in_flight = false;
	if (conn->route == ROUTE_VALIDATE || conn->route == ROUTE_MUTATE)
		metrics_in_flight(h->env.m, -1);
	atomic_fetch_sub(&h->in_flight, 1);
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && log_enabled(LOG_DEBUG)) {
		struct log_line l;

		if (log_begin(&l, LOG_DEBUG, "request ended without a complete answer")) {
			log_int(&l, "termination", (int64_t)toe);
			log_end(&l);
		}
	}
}

/* --- answers libmicrohttpd would give itself ----------------------------------------------- */

/* libmicrohttpd 0.9.75 answers a Content-Length that is not a number (-1,
 * 0x10, +5) with 400, and one that overflows with 413, without calling the
 * handler; it also sends that answer's status line and headers twice,
 * then an HTML body. Write a JSON Status in its place and drop what the
 * library sends after it (the connection closes once it is "sent"). Only
 * when the connection is certain: see struct pending_list. */
void httpd_library_answer(struct httpd *h, unsigned code, const char *html)
{
	struct conn *conn = pending.head;
	const char *message, *reason, *status_line;
	char head[256];
	struct buf body;
	int hn, bn;
	ssize_t off = 0;

	if (!strstr(html, "Content-Length") || pending.n != 1 || !conn || conn->h != h || !conn->session)
		return;
	if (code == MHD_HTTP_CONTENT_TOO_LARGE) {
		status_line = "413 Content Too Large";
		reason = "RequestEntityTooLarge";
		message = "Content-Length is larger than any body the webhook reads (--max-body)";
	} else {
		code = MHD_HTTP_BAD_REQUEST;
		status_line = "400 Bad Request";
		reason = "BadRequest";
		message = "Content-Length must be a decimal number of bytes";
	}
	buf_init(&body, 512);
	if (review_encode_status((int32_t)code, reason, message, &body) != 0) {
		buf_free(&body);
		return;
	}
	bn = (int)buf_len(&body);
	hn = snprintf(head, sizeof(head),
		      "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
		      "Connection: close\r\n\r\n", status_line, bn);
	if (hn < 0 || (size_t)hn >= sizeof(head)) {
		buf_free(&body);
		return;
	}
	/* This thread owns the session and the library is not inside GnuTLS
	 * for it now (it is parsing headers); it has sent nothing for this
	 * request yet. */
	while (off < hn) {
		ssize_t w = gnutls_record_send(conn->session, head + off, (size_t)(hn - off));

		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	for (off = 0; off < bn;) {
		ssize_t w = gnutls_record_send(conn->session, buf_cstr(&body) + off, (size_t)(bn - off));

		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	buf_free(&body);
	conn->muted = true;
	shutdown(conn->fd, SHUT_WR);
	log_refused(conn, conn->mhd, code, "", "", message);
}
