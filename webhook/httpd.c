/* httpd.c - the two HTTP listeners of dra-guard serve (libmicrohttpd). */
#include "httpd.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "admit.h"
#include "buf.h"
#include "log.h"

/* A connection's body and answer buffers are kept across keep-alive
 * requests; ones that grew past this for a large review are given back. */
#define CONN_BUF_KEEP ((size_t)512 * 1024)
#define LISTEN_BACKLOG 1024
#define METRICS_CONNECTIONS 32
#define METRICS_TIMEOUT_S 10
#define METRICS_TEXT_MAX ((size_t)8 * 1024 * 1024)

enum route {
	ROUTE_NONE = 0,
	ROUTE_VALIDATE,
	ROUTE_MUTATE,
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
};

/* One TCP connection on the webhook port. */
/* Bytes read from the socket ahead of what GnuTLS asked for. GnuTLS reads a
 * record's 5-byte header and then its body, two recv() calls per 16 KiB
 * record; reading what the socket has in one call and handing GnuTLS its
 * pieces from here cuts a 137 KiB review from 18 recv() calls to 3. */
#define CONN_READAHEAD (64 * 1024)

struct conn {
	struct httpd *h;
	struct snapshot *cred;        /* the credential its handshake was given */
	gnutls_session_t session;
	int fd;
	char *rbuf;                   /* CONN_READAHEAD bytes, allocated on first read */
	size_t rpos, rlen;            /* unread bytes are rbuf[rpos..rlen) */
	struct buf body;
	struct buf out;               /* the answer; MHD sends it from here */

	/* The request in progress. */
	enum route route;
	bool answered;                /* a response is queued */
	bool too_big;
	bool in_flight;
	size_t seen;                  /* body bytes received, kept or not */
	uint64_t start_ns;
};

struct httpd {
	struct httpd_env env;
	struct MHD_Daemon *tls_d;
	struct MHD_Daemon *metrics_d;
	int quiesced_fd;              /* the listen socket MHD_quiesce_daemon() handed back */
	char addr[96];
	char metrics_addr[96];
	atomic_bool draining;
	atomic_uint in_flight;
	struct admit admit;
	bool admit_made;
	size_t out_cap;

	/* Fixed answers, built once and shared by every connection. */
	struct MHD_Response *r_404, *r_405_post, *r_405_get, *r_413, *r_415, *r_500, *r_503,
		*r_healthz;
};

static const char body_404[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"no such path: the webhook serves POST /validate and POST /mutate\"}";
static const char body_405[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"MethodNotAllowed\","
	"\"code\":405,\"message\":\"method not allowed on this path (see the Allow header)\"}";
static const char body_413[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"RequestEntityTooLarge\","
	"\"code\":413,\"message\":\"request body larger than the webhook's --max-body\"}";
static const char body_415[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"UnsupportedMediaType\","
	"\"code\":415,\"message\":\"Content-Type must be application/json\"}";
static const char body_500[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"InternalError\","
	"\"code\":500,\"message\":\"dra-guard could not answer within its limits\"}";
static const char body_503[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"ServiceUnavailable\","
	"\"code\":503,\"message\":\"dra-guard has no valid policy loaded (see /readyz)\"}";
static const char body_healthz[] = "{\"status\":\"ok\"}";

/* --- fixed answers -------------------------------------------------------------- */

static struct MHD_Response *fixed(const char *body, size_t len, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_PERSISTENT);

	if (!r)
		return NULL;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") != MHD_YES ||
	    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
		MHD_destroy_response(r);
		return NULL;
	}
	return r;
}

static int make_fixed(struct httpd *h)
{
	h->r_404 = fixed(body_404, sizeof(body_404) - 1, NULL);
	h->r_405_post = fixed(body_405, sizeof(body_405) - 1, "POST");
	h->r_405_get = fixed(body_405, sizeof(body_405) - 1, "GET, HEAD");
	h->r_413 = fixed(body_413, sizeof(body_413) - 1, NULL);
	h->r_415 = fixed(body_415, sizeof(body_415) - 1, NULL);
	h->r_500 = fixed(body_500, sizeof(body_500) - 1, NULL);
	h->r_503 = fixed(body_503, sizeof(body_503) - 1, NULL);
	h->r_healthz = fixed(body_healthz, sizeof(body_healthz) - 1, NULL);
	if (!h->r_404 || !h->r_405_post || !h->r_405_get || !h->r_413 || !h->r_415 || !h->r_500 ||
	    !h->r_503 || !h->r_healthz)
		return -ENOMEM;
	return 0;
}

static void free_fixed(struct httpd *h)
{
	struct MHD_Response **all[] = {
		&h->r_404, &h->r_405_post, &h->r_405_get, &h->r_413, &h->r_415, &h->r_500, &h->r_503,
		&h->r_healthz,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (*all[i])
			MHD_destroy_response(*all[i]);
		*all[i] = NULL;
	}
}

/* --- readiness ------------------------------------------------------------------- */

bool httpd_ready(struct httpd *h, char *why, size_t n)
{
	struct snapshot *cred;

	if (atomic_load(&h->draining)) {
		snprintf(why, n, "shutting down");
		return false;
	}
	cred = cert_source_acquire(h->env.certs);
	if (!cred) {
		snprintf(why, n, "no certificate loaded");
		return false;
	}
	snapshot_release(cred);
	if (!policy_source_ready(h->env.policy, why, n))
		return false;
	return !h->env.view || cluster_view_ready(h->env.view, why, n);
}

/* ,"clusterView":{...}, or null without one. */
static int add_view_status_json(struct httpd *h, struct buf *b)
{
	int rc = buf_add_cstr(b, ",\"clusterView\":");

	if (rc)
		return rc;
	return h->env.view ? cluster_view_status_json(h->env.view, b) : buf_add_cstr(b, "null");
}

/* The serving policy and freeze, so an operator can see a ConfigMap change
 * take effect on each replica: {"hash":..,"freeze":..,"freezeReason":..,
 * "freezeSince":"2026-11-29T10:00:00Z"} (reason and since only when frozen). */
static int add_policy_status(struct httpd *h, struct buf *b)
{
	struct policy_status st;
	char since[32];
	struct tm tm;
	time_t t;
	int rc;

	policy_source_status(h->env.policy, &st);
	if (!st.serving)
		return buf_add_cstr(b, ",\"policy\":null");
	rc = buf_printf(b, ",\"policy\":{\"hash\":\"%s\",\"source\":\"%s\",\"freeze\":%s", st.hash,
			st.source, st.frozen ? "true" : "false");
	if (rc == 0 && st.frozen) {
		rc = buf_add_cstr(b, ",\"freezeReason\":");
		if (rc == 0)
			rc = buf_add_json_str(b, st.freeze_reason, strlen(st.freeze_reason));
		t = (time_t)(st.freeze_since_ns / 1000000000);
		if (rc == 0 && gmtime_r(&t, &tm) && strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm))
			rc = buf_printf(b, ",\"freezeSince\":\"%s\"", since);
	}
	return rc ? rc : buf_add_char(b, '}');
}

/* {"ready":true,"policy":{...}} or {"ready":false,"reason":"...","policy":...};
 * 200 or 503. */
static enum MHD_Result answer_readyz(struct httpd *h, struct MHD_Connection *c)
{
	char why[1024];
	struct MHD_Response *r;
	struct buf b;
	bool ready = httpd_ready(h, why, sizeof(why));
	enum MHD_Result ret;
	int rc;

	buf_init(&b, sizeof(why) * 8);
	if (ready) {
		rc = buf_add_cstr(&b, "{\"ready\":true");
	} else {
		rc = buf_add_cstr(&b, "{\"ready\":false,\"reason\":");
		if (rc == 0)
			rc = buf_add_json_str(&b, why, strlen(why));
	}
	if (rc == 0)
		rc = add_policy_status(h, &b);
	if (rc == 0)
		rc = add_view_status_json(h, &b);
	if (rc == 0)
		rc = buf_add_char(&b, '}');
	if (rc != 0) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	r = MHD_create_response_from_buffer(buf_len(&b), (void *)buf_cstr(&b), MHD_RESPMEM_MUST_COPY);
	buf_free(&b);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- TLS: the certificate for each handshake --------------------------------------- */

/* GnuTLS asks for the certificate once per handshake, on the worker thread
 * that owns the connection. The connection takes a reference to the newest
 * credential the first time and keeps it until it closes: GnuTLS neither
 * copies nor frees what this returns. */
static int retrieve_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			 gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *key)
{
	struct conn *conn = gnutls_session_get_ptr(session);
	unsigned n;

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!conn)
		return -1;
	if (!conn->cred)
		conn->cred = cert_source_acquire(conn->h->env.certs);
	if (!conn->cred)
		return -1;
	tls_cred_retrieve(snapshot_get(conn->cred), pcert, &n, key);
	*pcert_length = n;
	return 0;
}

/* GnuTLS pull function: serve from the read-ahead buffer, refilling it with
 * one recv() of whatever the socket has. EAGAIN comes back only when both
 * are empty, which is what libmicrohttpd's epoll loop waits for before it
 * stops reading a connection, so nothing buffered here is ever left behind
 * unread. */
static ssize_t conn_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
	struct conn *conn = ptr;
	size_t n;
	ssize_t got;

	if (conn->rpos == conn->rlen) {
		if (!conn->rbuf && !(conn->rbuf = malloc(CONN_READAHEAD))) {
			gnutls_transport_set_errno(conn->session, ENOMEM);
			return -1;
		}
		do
			got = recv(conn->fd, conn->rbuf, CONN_READAHEAD, 0);
		while (got < 0 && errno == EINTR);
		if (got < 0) {
			gnutls_transport_set_errno(conn->session, errno);
			return -1;
		}
		if (got == 0)
			return 0;
		conn->rpos = 0;
		conn->rlen = (size_t)got;
	}
	n = conn->rlen - conn->rpos < len ? conn->rlen - conn->rpos : len;
	memcpy(data, conn->rbuf + conn->rpos, n);
	conn->rpos += n;
	return (ssize_t)n;
}

/* GnuTLS vectored push: one sendmsg(), without SIGPIPE on a closed peer. */
static ssize_t conn_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
	struct conn *conn = ptr;
	struct msghdr msg;
	ssize_t sent;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)(uintptr_t)iov;
	msg.msg_iovlen = (size_t)iovcnt;
	do
		sent = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		gnutls_transport_set_errno(conn->session, errno);
	return sent;
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct httpd *h = cls;
	struct conn *conn;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = NULL;
		conn = calloc(1, sizeof(*conn));
		if (!conn)
			return;       /* the handshake and the handler refuse it */
		conn->h = h;
		buf_init(&conn->body, h->env.cfg->max_body);
		buf_init(&conn->out, h->out_cap);
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
		if (ci && ci->tls_session) {
			const union MHD_ConnectionInfo *fdi =
				MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

			conn->session = (gnutls_session_t)ci->tls_session;
			gnutls_session_set_ptr(conn->session, conn);
			if (fdi) {
				/* The session reads and writes through conn from now on. */
				conn->fd = fdi->connect_fd;
				gnutls_transport_set_ptr(conn->session, conn);
				gnutls_transport_set_pull_function(conn->session, conn_pull);
				gnutls_transport_set_vec_push_function(conn->session, conn_push);
			}
		}
		*socket_context = conn;
		return;
	}
	/* Closed: no handshake can run on this session any more. */
	conn = *socket_context;
	if (!conn)
		return;
	snapshot_release(conn->cred);
	free(conn->rbuf);
	buf_free(&conn->body);
	buf_free(&conn->out);
	free(conn);
	*socket_context = NULL;
}

/* --- the request path ----------------------------------------------------------------- */

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

static void log_http_error(struct conn *conn, struct MHD_Connection *c, unsigned code,
			   const char *method, const char *url, const char *why)
{
	int idx = metrics_http_error_of(code);
	const union MHD_ConnectionInfo *ci;
	char peer[96] = "";
	struct log_line l;

	if (idx >= 0)
		metrics_http_error(conn->h->env.m, (enum metrics_http_error)idx);
	if (!log_begin(&l, code >= 500 ? LOG_WARN : LOG_INFO, "request refused"))
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		serve_config_addr_format(ci->client_addr, peer, sizeof(peer));
	log_uint(&l, "code", code);
	log_str(&l, "method", method);
	log_str(&l, "path", url);
	log_str(&l, "peer", peer);
	log_str(&l, "reason", why);
	log_end(&l);
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
	log_http_error(conn, c, code, method, url, why);
	return answer_fixed(conn, c, code, r);
}

/* The whole body is in: decide and answer from the connection's buffer. */
static enum MHD_Result admit(struct conn *conn, struct MHD_Connection *c)
{
	struct httpd *h = conn->h;
	struct MHD_Response *r = NULL;
	enum MHD_Result ret;
	unsigned status;

	status = admit_review(&h->admit, conn->route == ROUTE_MUTATE, buf_cstr(&conn->body),
			      buf_len(&conn->body), &conn->out, conn->start_ns);
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		return answer_fixed(conn, c, status, h->r_503);
	if (status == MHD_HTTP_INTERNAL_SERVER_ERROR)
		return answer_fixed(conn, c, status, h->r_500);
	/* Sent straight from the connection's buffer, which stays untouched
	 * until this connection's next request. */
	r = MHD_create_response_from_buffer(buf_len(&conn->out), (void *)buf_cstr(&conn->out),
					    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		metrics_http_error(h->env.m, METRICS_HTTP_500);
		return answer_fixed(conn, c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (atomic_load(&h->draining))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		conn->answered = true;
	return ret;
}

/* A new request on conn: forget the previous one. */
static void begin_request(struct conn *conn)
{
	/* The previous answer has been sent by now (HTTP/1.1 answers in order). */
	if (buf_len(&conn->body) > CONN_BUF_KEEP)
		buf_free(&conn->body);
	if (buf_len(&conn->out) > CONN_BUF_KEEP)
		buf_free(&conn->out);
	buf_reset(&conn->body);
	buf_reset(&conn->out);
	conn->route = ROUTE_NONE;
	conn->answered = false;
	conn->too_big = false;
	conn->seen = 0;
	conn->start_ns = admit_now_ns();
	conn->in_flight = true;
	atomic_fetch_add(&conn->h->in_flight, 1);
}

/* The first call for a request: headers are in, no body yet. */
static enum MHD_Result first_call(struct conn *conn, struct MHD_Connection *c, const char *url,
				  const char *method)
{
	struct httpd *h = conn->h;
	const char *cl;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

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
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno == ERANGE || n > h->env.cfg->max_body) {
			const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
									 MHD_HTTP_HEADER_EXPECT);

			/* A client waiting for 100 Continue, or one announcing far
			 * more than the cap, gets the answer now and the connection
			 * closed. Anyone else is already sending: a close now would
			 * reset the connection under the answer, so the body is
			 * read and dropped and 413 comes at its end. */
			if (errno == ERANGE || n / 2 > h->env.cfg->max_body ||
			    (expect && strcasecmp(expect, "100-continue") == 0))
				return refuse(conn, c, MHD_HTTP_CONTENT_TOO_LARGE, h->r_413, method, url,
					      "declared body larger than --max-body");
			log_http_error(conn, c, MHD_HTTP_CONTENT_TOO_LARGE, method, url,
				       "declared body larger than --max-body");
			conn->too_big = true;
		}
	}
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct conn *conn = *req_cls;
	size_t n = *upload_data_size;

	(void)cls;
	(void)version;
	if (!conn) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

		conn = ci ? ci->socket_context : NULL;
		if (!conn)
			return MHD_NO;
		*req_cls = conn;
		begin_request(conn);
		return first_call(conn, c, url, method);
	}
	if (n > 0) {
		*upload_data_size = 0;
		/* Not idle, yet not a review the API server still waits for: a
		 * body trickled past --body-timeout loses its connection. */
		if (admit_now_ns() - conn->start_ns > (uint64_t)conn->h->env.cfg->body_timeout_s * 1000000000u) {
			log_http_error(conn, c, MHD_HTTP_REQUEST_TIMEOUT, method, url,
				       "body not complete within --body-timeout");
			return MHD_NO;
		}
		if (conn->answered)
			return MHD_YES;
		conn->seen += n;
		if (conn->route == ROUTE_HEALTHZ || conn->route == ROUTE_READYZ)
			return conn->seen > conn->h->env.cfg->max_body ? MHD_NO : MHD_YES;
		if (!conn->too_big) {
			int rc = buf_add(&conn->body, upload_data, n);

			if (rc == 0)
				return MHD_YES;
			if (rc != -E2BIG) {
				log_msg(LOG_ERROR, "out of memory receiving a request body");
				return MHD_NO;
			}
			/* A chunked body crossed --max-body. libmicrohttpd takes no
			 * answer while a body is arriving: drop the rest as it
			 * comes and answer 413 at its end. */
			conn->too_big = true;
			buf_free(&conn->body);
			log_http_error(conn, c, MHD_HTTP_CONTENT_TOO_LARGE, method, url,
				       "body larger than --max-body");
			return MHD_YES;
		}
		/* Streaming on to twice the cap is not a client that will read
		 * an answer: close the connection. */
		return conn->seen / 2 > conn->h->env.cfg->max_body ? MHD_NO : MHD_YES;
	}
	if (conn->answered)
		return MHD_YES;
	if (conn->route == ROUTE_HEALTHZ)
		return answer_fixed(conn, c, MHD_HTTP_OK, conn->h->r_healthz);
	if (conn->route == ROUTE_READYZ) {
		conn->answered = true;
		return answer_readyz(conn->h, c);
	}
	if (conn->too_big)
		return answer_fixed(conn, c, MHD_HTTP_CONTENT_TOO_LARGE, conn->h->r_413);
	return admit(conn, c);
}

static void request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct httpd *h = cls;
	struct conn *conn = *req_cls;

	(void)c;
	if (!conn || !conn->in_flight)
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
	*req_cls = NULL;
}

/* --- the metrics port ------------------------------------------------------------------ */

static enum MHD_Result answer_metrics(struct httpd *h, struct MHD_Connection *c)
{
	struct MHD_Response *r;
	struct buf b;
	char *text = NULL, why[512];
	size_t len = 0;
	enum MHD_Result ret;

	/* Readiness also changes with no reload to update the gauge (the
	 * cluster view's first sync, a policy from the API's ConfigMap): read
	 * it now, as /readyz does. */
	metrics_ready(h->env.m, httpd_ready(h, why, sizeof(why)));
	buf_init(&b, METRICS_TEXT_MAX);
	if (metrics_render(h->env.m, &b) != 0 || buf_take(&b, &text, &len) != 0) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /debug/view: the published view's objects (names, resourceVersions,
 * pools with their generations) as JSON; 404 without a cluster view, 503
 * before its first sync. */
static enum MHD_Result answer_debug_view(struct httpd *h, struct MHD_Connection *c)
{
	struct MHD_Response *r;
	struct buf b;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	int rc;

	if (!h->env.view)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404);
	buf_init(&b, (size_t)1 << 30);
	rc = cluster_view_dump_json(h->env.view, &b);
	if (rc == -EAGAIN) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503);
	}
	if (rc != 0 || buf_take(&b, &text, &len) != 0) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /debug/ledger[?node=NAME][&at=freeze]: the ledger as JSON; 404
 * without a cluster view, for at=freeze when no freeze began since the
 * start, and for any other at; 503 before the view's first sync. */
static enum MHD_Result answer_debug_ledger(struct httpd *h, struct MHD_Connection *c)
{
	const char *node = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "node");
	const char *at = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "at");
	struct MHD_Response *r;
	struct buf b;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	int rc;

	if (!h->env.ledger)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404);
	if (at && strcmp(at, "freeze") != 0)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404);
	buf_init(&b, (size_t)1 << 30);
	rc = ledger_watch_json(h->env.ledger, node, at != NULL, &b);
	if (rc == -EAGAIN || rc == -ENOENT) {
		buf_free(&b);
		return MHD_queue_response(c, rc == -EAGAIN ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_NOT_FOUND,
					  rc == -EAGAIN ? h->r_503 : h->r_404);
	}
	if (rc != 0 || buf_take(&b, &text, &len) != 0) {
		buf_free(&b);
		return MHD_queue_response(c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	}
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle_metrics(void *cls, struct MHD_Connection *c, const char *url,
				      const char *method, const char *version, const char *upload_data,
				      size_t *upload_data_size, void **req_cls)
{
	struct httpd *h = cls;
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

	(void)version;
	(void)upload_data;
	/* Answer on the first call; a body, if any, is not read. */
	if (*req_cls)
		return (*upload_data_size = 0, MHD_YES);
	*req_cls = h;
	if (strcmp(url, "/metrics") != 0 && strcmp(url, "/healthz") != 0 && strcmp(url, "/readyz") != 0 &&
	    strcmp(url, "/debug/view") != 0 && strcmp(url, "/debug/ledger") != 0)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->r_404);
	if (!get)
		return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, h->r_405_get);
	if (strcmp(url, "/metrics") == 0)
		return answer_metrics(h, c);
	if (strcmp(url, "/healthz") == 0)
		return MHD_queue_response(c, MHD_HTTP_OK, h->r_healthz);
	if (strcmp(url, "/debug/view") == 0)
		return answer_debug_view(h, c);
	if (strcmp(url, "/debug/ledger") == 0)
		return answer_debug_ledger(h, c);
	return answer_readyz(h, c);
}

/* --- listeners ---------------------------------------------------------------------------- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t len;

	(void)cls;
	if (!log_enabled(LOG_DEBUG))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		msg[--len] = '\0';
	log_msg_str(LOG_DEBUG, "libmicrohttpd", "detail", msg);
}

/* A listening socket for a; text gets the bound address (port 0 resolved). */
static int bind_listener(const struct serve_addr *a, int *out, char *text, size_t textn,
			 char *err, size_t errn)
{
	struct sockaddr_storage ss = a->sa;
	socklen_t len = a->len;
	int fd, one = 1, zero = 0, rc;

	*out = -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && ss.ss_family == AF_INET6 && errno == EAFNOSUPPORT) {
		/* ":PORT" on a host without IPv6: every IPv4 address. */
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->sa;
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		uint16_t port = s6->sin6_port;

		memset(&ss, 0, sizeof(ss));
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = port;
		len = sizeof(*s4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errn, "%s: socket: %s", a->text, strerror(errno));
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
		rc = -errno;
		snprintf(err, errn, "%s: %s", a->text, strerror(errno));
		close(fd);
		return rc;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		serve_config_addr_format((struct sockaddr *)&ss, text, textn);
	else
		snprintf(text, textn, "%.80s", a->text);
	*out = fd;
	return 0;
}

static int start_tls(struct httpd *h, char *err, size_t errn)
{
	const struct serve_config *cfg = h->env.cfg;
	unsigned flags = MHD_USE_TLS | MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem opts[16];
	int fd, rc, n = 0;

	rc = bind_listener(&cfg->listen, &fd, h->addr, sizeof(h->addr), err, errn);
	if (rc)
		return rc;
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, fd, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
					     (void *)HTTPD_TLS_PRIORITIES };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)retrieve_cert };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT,
					     HTTPD_CONNECTION_MEMORY, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_connection, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_completed, h };
	if (cfg->threads > 1)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	h->tls_d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_ARRAY, opts,
				    MHD_OPTION_END);
	if (!h->tls_d) {
		close(fd);
		snprintf(err, errn, "%s: libmicrohttpd could not start the TLS listener", h->addr);
		return -EIO;
	}
	return 0;
}

static int start_metrics(struct httpd *h, char *err, size_t errn)
{
	const struct serve_config *cfg = h->env.cfg;
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	int fd, rc;

	if (!cfg->metrics_enabled)
		return 0;
	rc = bind_listener(&cfg->metrics_listen, &fd, h->metrics_addr, sizeof(h->metrics_addr), err, errn);
	if (rc)
		return rc;
	h->metrics_d = MHD_start_daemon(flags, 0, NULL, NULL, handle_metrics, h,
					MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
					MHD_OPTION_LISTEN_SOCKET, fd,
					MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS,
					MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
					MHD_OPTION_END);
	if (!h->metrics_d) {
		close(fd);
		snprintf(err, errn, "%s: libmicrohttpd could not start the metrics listener",
			 h->metrics_addr);
		return -EIO;
	}
	return 0;
}

int httpd_start(const struct httpd_env *env, struct httpd **out, char *err, size_t errn)
{
	struct httpd *h = calloc(1, sizeof(*h));
	const struct serve_config *cfg = env->cfg;
	int rc = -ENOMEM;

	*out = NULL;
	if (!h) {
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	h->env = *env;
	h->quiesced_fd = -1;
	atomic_init(&h->draining, false);
	atomic_init(&h->in_flight, 0);
	/* The answer carries messages and, on /mutate, a patch. */
	h->out_cap = cfg->max_body + ((size_t)4 << 20);
	if (admit_init(&h->admit, cfg, env->m, env->policy, env->view) != 0) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	h->admit_made = true;
	admit_set_ledger(&h->admit, env->ledger, cfg->view_recheck_ms, cfg->threads > 1 ? cfg->threads - 1 : 0);
	if (make_fixed(h) != 0) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	rc = start_tls(h, err, errn);
	if (rc)
		goto fail;
	rc = start_metrics(h, err, errn);
	if (rc)
		goto fail;
	*out = h;
	return 0;
fail:
	httpd_stop(h);
	return rc;
}

const char *httpd_address(const struct httpd *h, bool metrics)
{
	return metrics ? h->metrics_addr : h->addr;
}

void httpd_drain(struct httpd *h)
{
	MHD_socket fd;

	if (atomic_exchange(&h->draining, true))
		return;
	fd = MHD_quiesce_daemon(h->tls_d);
	if (fd != MHD_INVALID_SOCKET) {
		/* Refuse new connections now (shutdown() makes a Linux listening
		 * socket answer RST) but keep the descriptor open until the
		 * daemon's threads are joined, so its number is not reused
		 * under them. */
		shutdown(fd, SHUT_RDWR);
		h->quiesced_fd = fd;
	}
}

unsigned httpd_in_flight(struct httpd *h)
{
	return atomic_load(&h->in_flight);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	if (h->metrics_d)
		MHD_stop_daemon(h->metrics_d);
	if (h->tls_d)
		MHD_stop_daemon(h->tls_d);
	/* After the daemons: their threads may use it until they are joined. */
	if (h->quiesced_fd >= 0)
		close(h->quiesced_fd);
	free_fixed(h);
	/* After the daemons: their threads have exited and freed their arenas. */
	if (h->admit_made)
		admit_fini(&h->admit);
	free(h);
}
