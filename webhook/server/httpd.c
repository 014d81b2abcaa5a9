/* httpd.c - the HTTP listeners of dra-guard serve (libmicrohttpd): setup,
 * the TLS transport, fixed answers, readiness and housekeeping. */
#include "httpd_impl.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "jw.h"
#include "log.h"
#include "metrics_auth.h"
#include "review.h"
#include "serve_config.h"
#include "snapshot.h"

#define LISTEN_BACKLOG 1024

/* The buffer pool: bodies and answers up to this size are kept for the
 * next request, at most this many of each. */
#define POOL_KEEP ((size_t)256 * 1024)
#define POOL_MAX 32

/* How often the housekeeping thread sweeps the deadlines. */
#define KEEPER_TICK_MS 100

/* A burst that held this much and is over is followed by an allocator trim. */
#define TRIM_PEAK ((size_t)16 << 20)

static const char body_404[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"no such path: the webhook port serves POST /validate, POST /mutate, "
	"GET /healthz and /readyz; GET /metrics, /debug/view, /debug/ledger and /debug/pending are on the "
	"metrics port (plain HTTP, --metrics-listen, default 127.0.0.1:9090)\"}";
static const char body_404_plain[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"no such path: this port serves GET /metrics, /healthz, /readyz, "
	"/debug/readyz, /debug/view, /debug/ledger and /debug/pending (the probe port: /healthz and /readyz)\"}";
static const char body_404_noview[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"this replica runs without a cluster view (--cluster-view off, or no "
	"kubeconfig and not in a cluster): there is no view or ledger to show\"}";
static const char body_404_noevents[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"this replica emits no Events (no cluster view, or --events=false): "
	"there is no pending list to show\"}";
static const char body_404_nofreeze[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	"\"code\":404,\"message\":\"no ledger kept at a freeze: no freeze began since this replica started "
	"(at= takes only freeze)\"}";
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
static const char body_503_memory[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"ServiceUnavailable\","
	"\"code\":503,\"message\":\"dra-guard holds its whole memory budget (--memory-budget) in request bodies"
	" and answers now; retry shortly\"}";
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
	h->r_404_plain = fixed(body_404_plain, sizeof(body_404_plain) - 1, NULL);
	h->r_404_noview = fixed(body_404_noview, sizeof(body_404_noview) - 1, NULL);
	h->r_404_nofreeze = fixed(body_404_nofreeze, sizeof(body_404_nofreeze) - 1, NULL);
	h->r_404_noevents = fixed(body_404_noevents, sizeof(body_404_noevents) - 1, NULL);
	h->r_405_post = fixed(body_405, sizeof(body_405) - 1, "POST");
	h->r_405_get = fixed(body_405, sizeof(body_405) - 1, "GET, HEAD");
	h->r_413 = fixed(body_413, sizeof(body_413) - 1, NULL);
	h->r_415 = fixed(body_415, sizeof(body_415) - 1, NULL);
	h->r_500 = fixed(body_500, sizeof(body_500) - 1, NULL);
	h->r_503 = fixed(body_503, sizeof(body_503) - 1, NULL);
	h->r_503_memory = fixed(body_503_memory, sizeof(body_503_memory) - 1, NULL);
	h->r_healthz = fixed(body_healthz, sizeof(body_healthz) - 1, NULL);
	if (!h->r_404 || !h->r_404_plain || !h->r_404_noview || !h->r_404_nofreeze || !h->r_404_noevents || !h->r_405_post || !h->r_405_get || !h->r_413 || !h->r_415 || !h->r_500 ||
	    !h->r_503 || !h->r_503_memory || !h->r_healthz)
		return -ENOMEM;
	/* Pressure passes within the body timeout: worth another try soon. */
	if (MHD_add_response_header(h->r_503_memory, MHD_HTTP_HEADER_RETRY_AFTER, "1") != MHD_YES)
		return -ENOMEM;
	return 0;
}

static void free_fixed(struct httpd *h)
{
	struct MHD_Response **all[] = {
		&h->r_404, &h->r_404_plain, &h->r_404_noview, &h->r_404_nofreeze, &h->r_405_post, &h->r_405_get, &h->r_413, &h->r_415, &h->r_500, &h->r_503,
		&h->r_503_memory, &h->r_404_noevents, &h->r_healthz,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (*all[i])
			MHD_destroy_response(*all[i]);
		*all[i] = NULL;
	}
}

struct MHD_Response *httpd_status_response(unsigned code, const char *reason, const char *message)
{
	struct MHD_Response *r = NULL;
	struct buf b;

	buf_init(&b, 4096);
	if (review_encode_status((int32_t)code, reason, message, &b) == 0)
		r = MHD_create_response_from_buffer(buf_len(&b), (void *)buf_cstr(&b), MHD_RESPMEM_MUST_COPY);
	buf_free(&b);
	if (r && MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") != MHD_YES) {
		MHD_destroy_response(r);
		r = NULL;
	}
	return r;
}

size_t httpd_keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
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

/* The cluster view's status, written by cluster_view_status_json(). */
static int view_status(const void *ctx, struct buf *out)
{
	const struct httpd *h = ctx;

	return cluster_view_status_json(h->env.view, out);
}

/* The serving policy and freeze, so an operator can see a ConfigMap change
 * take effect on each replica: {"hash":..,"freeze":..,"freezeReason":..,
 * "freezeSince":"2026-11-29T10:00:00Z"} (reason and since only when frozen). */
static void add_policy_status(struct httpd *h, struct jw *w)
{
	struct policy_status st;
	char since[32];
	struct tm tm;
	time_t t;

	policy_source_status(h->env.policy, &st);
	if (!st.serving) {
		jw_null(w);
		return;
	}
	jw_object_begin(w);
	jw_kcstr(w, "hash", st.hash);
	jw_kcstr(w, "source", st.source);
	jw_kbool(w, "freeze", st.frozen);
	if (st.frozen) {
		jw_kcstr(w, "freezeReason", st.freeze_reason);
		t = (time_t)(st.freeze_since_ns / 1000000000);
		if (gmtime_r(&t, &tm) && strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm))
			jw_kcstr(w, "freezeSince", since);
	}
	jw_object_end(w);
}

/* {"ready":true,"policy":{...}} or {"ready":false,"reason":"...","policy":...};
 * 200 or 503. */
enum MHD_Result httpd_answer_readyz(struct httpd *h, struct MHD_Connection *c)
{
	char why[1024];
	struct MHD_Response *r;
	struct buf b;
	struct jw w;
	bool ready = httpd_ready(h, why, sizeof(why));
	enum MHD_Result ret;

	buf_init(&b, sizeof(why) * 8);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_kbool(&w, "ready", ready);
	if (!ready)
		jw_kcstr(&w, "reason", why);
	jw_key(&w, "policy");
	add_policy_status(h, &w);
	jw_key(&w, "clusterView");
	if (h->env.view)
		jw_part(&w, view_status, h);
	else
		jw_null(&w);
	if (h->env.gate) {
		jw_key(&w, "gate");
		gate_release_status_json(h->env.gate, &w);
	}
	jw_object_end(&w);
	if (jw_finish(&w) != 0) {
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

/* The status code is all a kubelet or a load balancer reads, and all
 * this says: no reason, policy, freeze or view (the reason is logged and
 * on the metrics port's /debug/readyz). */
enum MHD_Result httpd_answer_readyz_bare(struct httpd *h, struct MHD_Connection *c)
{
	static const char yes[] = "{\"ready\":true}", no[] = "{\"ready\":false}";
	char why[512];
	bool ready = httpd_ready(h, why, sizeof(why));
	struct MHD_Response *r = MHD_create_response_from_buffer(ready ? sizeof(yes) - 1 : sizeof(no) - 1,
								 (void *)(ready ? yes : no), MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

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

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	return conn ? httpd_cert_retrieve(&conn->cred, conn->h->env.certs, pcert, pcert_length, key) : -1;
}

int httpd_cert_retrieve(struct snapshot **cred, struct cert_source *certs, gnutls_pcert_st **pcert,
			unsigned int *pcert_length, gnutls_privkey_t *key)
{
	unsigned n;

	if (!*cred)
		*cred = cert_source_acquire(certs);
	if (!*cred)
		return -1;
	tls_cred_retrieve(snapshot_get(*cred), pcert, &n, key);
	*pcert_length = n;
	return 0;
}

/* The worker thread's number (0 to --threads - 1), given out the first
 * time the thread reads a connection. */
static _Thread_local int worker_number = -1;

/* Count conn under the worker thread reading it: a connection is served
 * by one worker for its life, so its first read (the handshake's) names
 * it, on whichever thread libmicrohttpd announced the connection. */
static void conn_count_worker(struct conn *conn)
{
	struct httpd *h = conn->h;
	unsigned threads = h->env.cfg->threads;

	if (worker_number < 0) {
		unsigned n = atomic_fetch_add(&h->next_worker, 1);

		worker_number = (int)(n < threads ? n : threads - 1);
	}
	conn->worker = worker_number;
	metrics_worker_connection(h->env.m, (unsigned)conn->worker, 1);
}

/* GnuTLS pull function: serve from the read-ahead buffer, refilling it with
 * one recv() of whatever the socket has. EAGAIN comes back only when both
 * are empty, which is what libmicrohttpd's epoll loop waits for before it
 * stops reading a connection, so nothing buffered here is ever left behind
 * unread. The first byte of a request (the handshake's, on a new
 * connection) starts the request's clock. */
static ssize_t conn_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
	struct conn *conn = ptr;
	size_t n;
	ssize_t got;

	if (conn->worker < 0)
		conn_count_worker(conn);
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
		if (!deadline_running(&conn->dl))
			deadline_start(&conn->dl, clock_mono_ns());
	}
	n = conn->rlen - conn->rpos < len ? conn->rlen - conn->rpos : len;
	memcpy(data, conn->rbuf + conn->rpos, n);
	conn->rpos += n;
	return (ssize_t)n;
}

/* GnuTLS vectored push: one sendmsg(), without SIGPIPE on a closed peer,
 * with an answer's header record held for its body's (coalesce.h). A muted
 * connection has had its answer written already (the library's own error
 * answer was replaced): what the library sends is dropped. */
static ssize_t conn_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
	struct conn *conn = ptr;
	ssize_t sent;

	if (conn->muted) {
		size_t total = 0;
		int i;

		coalesce_drop(&conn->co);
		for (i = 0; i < iovcnt; i++)
			total += iov[i].iov_len;
		return (ssize_t)total;
	}
	sent = coalesce_write(&conn->co, conn->fd, (const struct iovec *)(uintptr_t)iov, iovcnt);
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
		conn->fd = -1;
		conn->worker = -1;
		buf_init(&conn->body, 0);
		buf_init(&conn->out, 0);
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
				deadline_add(h->dl, &conn->dl, conn->fd,
					     (uint64_t)h->env.cfg->body_timeout_s * 1000000000u);
			}
		}
		*socket_context = conn;
		return;
	}
	/* Closed: no handshake can run on this session any more, and the
	 * descriptor is still open (the library closes it after this). */
	conn = *socket_context;
	if (!conn)
		return;
	deadline_remove(h->dl, &conn->dl);
	if (conn->worker >= 0)
		metrics_worker_connection(h->env.m, (unsigned)conn->worker, -1);
	httpd_conn_closing(conn);
	snapshot_release(conn->cred);
	free(conn->rbuf);
	free(conn);
	*socket_context = NULL;
}

/* --- listeners ---------------------------------------------------------------------------- */

/* libmicrohttpd's format for an error it answers itself, as 0.9.75 logs it
 * just before it builds that answer. */
#define LIBRARY_ANSWER_FORMAT \
	"Error processing request (HTTP response code is %u ('%s')). Closing connection.\n"

void httpd_mhd_log(void *cls, const char *fmt, va_list ap)
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

/* The webhook port's log callback also catches the library answering a
 * request itself, to put a JSON answer in its place. */
static void mhd_log_tls(void *cls, const char *fmt, va_list ap)
{
	va_list copy;

	if (strcmp(fmt, LIBRARY_ANSWER_FORMAT) == 0) {
		unsigned code;
		const char *html;

		va_copy(copy, ap);
		code = va_arg(copy, unsigned);
		html = va_arg(copy, const char *);
		va_end(copy);
		httpd_library_answer(cls, code, html ? html : "");
	}
	httpd_mhd_log(cls, fmt, ap);
}

/* A listening socket for a; text gets the bound address (port 0 resolved). */
int httpd_bind_listener(const struct serve_addr *a, int *out, char *text, size_t textn,
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

/* The acceptor's callbacks (acceptor.h). Room is what libmicrohttpd
 * counts; a connection handed over but not yet taken in by its worker is
 * not counted yet, so a burst at the limit may pass it by a few, which
 * the library then closes ("Server reached connection limit"). */
static bool webhook_has_room(void *arg)
{
	struct httpd *h = arg;
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->tls_d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return !di || di->num_connections < h->env.cfg->max_connections;
}

static void webhook_hand(void *arg, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct httpd *h = arg;

	/* The library closes fd when it cannot take it. */
	if (MHD_add_connection(h->tls_d, fd, addr, len) != MHD_YES)
		log_msg_str(LOG_DEBUG, "connection not taken by libmicrohttpd", "error", strerror(errno));
}

static void webhook_accept_failed(void *arg, int err, unsigned pause_ms)
{
	struct log_line l;

	(void)arg;
	if (!log_begin(&l, LOG_WARN, "cannot accept a connection on the webhook port; retrying"))
		return;
	log_str(&l, "error", strerror(-err));
	log_ms(&l, "retry_in_ms", (double)pause_ms);
	log_end(&l);
}

static const struct acceptor_ops webhook_accept_ops = {
	.has_room = webhook_has_room,
	.hand = webhook_hand,
	.failed = webhook_accept_failed,
};

static int start_tls(struct httpd *h, char *err, size_t errn)
{
	const struct serve_config *cfg = h->env.cfg;
	/* The acceptor (acceptor.h) accepts, not the library's workers. */
	unsigned flags = MHD_USE_TLS | MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
			 MHD_USE_NO_LISTEN_SOCKET;
	struct MHD_OptionItem opts[20];
	int fd, rc, n = 0;

	rc = httpd_bind_listener(&cfg->listen, &fd, h->addr, sizeof(h->addr), err, errn);
	if (rc)
		return rc;
	h->listen_fd = fd;
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log_tls, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
					     (void *)HTTPD_TLS_PRIORITIES };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)retrieve_cert };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT,
					     HTTPD_CONNECTION_MEMORY, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_connection, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)httpd_request_completed, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)httpd_request_line, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)httpd_keep_escaped, h };
	if (cfg->threads > 1)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	h->tls_d = MHD_start_daemon(flags, 0, NULL, NULL, httpd_handle, h, MHD_OPTION_ARRAY, opts,
				    MHD_OPTION_END);
	if (!h->tls_d) {
		snprintf(err, errn, "%s: libmicrohttpd could not start the TLS listener", h->addr);
		return -EIO;
	}
	metrics_workers(h->env.m, cfg->threads);
	rc = acceptor_start(fd, &webhook_accept_ops, h, &h->acceptor);
	if (rc) {
		snprintf(err, errn, "%s: cannot start the accepting thread: %s", h->addr, strerror(-rc));
		return rc;
	}
	return 0;
}

/* --- housekeeping ---------------------------------------------------------------------------- */

static void sweep_webhook(struct httpd *h, uint64_t now)
{
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	unsigned n = deadline_sweep(h->dl, now, x), i;

	for (i = 0; i < n; i++)
		httpd_log_refusal(h, NULL, MHD_HTTP_REQUEST_TIMEOUT, "", "", x[i].peer,
				  "request not received and answered within --body-timeout of its first byte");
}

static void sweep_plain(struct plain_port *p, uint64_t now)
{
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	unsigned n, i;

	if (!p->dl)
		return;
	n = deadline_sweep(p->dl, now, x);
	for (i = 0; i < n; i++) {
		struct log_line l;

		if (!log_begin(&l, LOG_INFO, "connection closed: request not complete in time"))
			continue;
		log_str(&l, "port", p->name);
		log_str(&l, "peer", x[i].peer);
		log_ms(&l, "after_ms", (double)x[i].age_ns / 1e6);
		log_end(&l);
	}
}

/* Every KEEPER_TICK_MS: close connections past their deadline (no event
 * loop of the library can: it sees only idle time), and give memory back
 * to the system once a burst is over. */
static void *keeper_main(void *arg)
{
	struct httpd *h = arg;
	struct timespec ts;

	pthread_mutex_lock(&h->keeper_mu);
	while (!h->keeper_stop) {
		ts = clock_after(CLOCK_MONOTONIC, (int64_t)KEEPER_TICK_MS * 1000000);
		pthread_cond_timedwait(&h->keeper_cv, &h->keeper_mu, &ts);
		if (h->keeper_stop)
			break;
		pthread_mutex_unlock(&h->keeper_mu);
		sweep_webhook(h, clock_mono_ns());
		sweep_plain(&h->metrics, clock_mono_ns());
		sweep_plain(&h->probe, clock_mono_ns());
		if (reqmem_trim(h->mem, TRIM_PEAK))
			log_msg(LOG_DEBUG, "memory given back to the system after a burst");
		pthread_mutex_lock(&h->keeper_mu);
	}
	pthread_mutex_unlock(&h->keeper_mu);
	return NULL;
}

static int start_keeper(struct httpd *h)
{
	pthread_condattr_t attr;
	int rc;

	if (pthread_condattr_init(&attr) != 0)
		return -ENOMEM;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&h->keeper_cv, &attr);
	pthread_condattr_destroy(&attr);
	if (rc != 0)
		return -rc;
	rc = pthread_mutex_init(&h->keeper_mu, NULL);
	if (rc != 0) {
		pthread_cond_destroy(&h->keeper_cv);
		return -rc;
	}
	rc = pthread_create(&h->keeper, NULL, keeper_main, h);
	if (rc != 0) {
		pthread_mutex_destroy(&h->keeper_mu);
		pthread_cond_destroy(&h->keeper_cv);
		return -rc;
	}
	h->keeper_started = true;
	return 0;
}

static void stop_keeper(struct httpd *h)
{
	if (!h->keeper_started)
		return;
	pthread_mutex_lock(&h->keeper_mu);
	h->keeper_stop = true;
	pthread_cond_signal(&h->keeper_cv);
	pthread_mutex_unlock(&h->keeper_mu);
	pthread_join(h->keeper, NULL);
	pthread_mutex_destroy(&h->keeper_mu);
	pthread_cond_destroy(&h->keeper_cv);
	h->keeper_started = false;
}

int httpd_start(const struct httpd_env *env, struct httpd **out, char *err, size_t errn)
{
	struct httpd *h = calloc(1, sizeof(*h));
	const struct serve_config *cfg = env->cfg;
	struct reqmem_limits lim;
	int rc = -ENOMEM;

	*out = NULL;
	if (!h) {
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	h->env = *env;
	h->listen_fd = -1;
	atomic_init(&h->next_worker, 0);
	atomic_init(&h->draining, false);
	atomic_init(&h->in_flight, 0);
	atomic_init(&h->debug_in_use, 0);
	for (int i = 0; i < HTTPD_DEBUG_PATHS; i++)
		atomic_init(&h->debug_busy[i], false);
	for (int i = 0; i < HTTPD_DEBUG_REFUSALS; i++)
		atomic_init(&h->debug_refused[i], 0);
	h->metrics = (struct plain_port){ .h = h, .name = "metrics", .metrics = true };
	h->probe = (struct plain_port){ .h = h, .name = "probe", .metrics = false };
	/* The answer carries messages and, on /mutate, a patch. */
	h->out_cap = cfg->max_body + SERVE_CONFIG_ANSWER_EXTRA;
	memset(&lim, 0, sizeof(lim));
	lim.budget = cfg->memory_budget;
	lim.cap[REQMEM_BODY] = cfg->max_body;
	lim.cap[REQMEM_ANSWER] = h->out_cap;
	lim.pool_keep = POOL_KEEP;
	lim.pool_max = POOL_MAX;
	if (reqmem_new(&lim, &h->mem) != 0 || deadline_list_new(&h->dl) != 0) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	metrics_memory_watch(env->m, h->mem);
	if (admit_init(&h->admit, cfg, env->m, env->policy, env->view) != 0) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	h->admit_made = true;
	admit_set_gate(&h->admit, env->gate);
	admit_set_events(&h->admit, env->events);
	admit_set_ledger(&h->admit, env->ledger, cfg->view_recheck_ms, cfg->threads > 1 ? cfg->threads - 1 : 0);
	if (make_fixed(h) != 0) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	rc = start_keeper(h);
	if (rc) {
		snprintf(err, errn, "cannot start the housekeeping thread: %s", strerror(-rc));
		goto fail;
	}
	rc = start_tls(h, err, errn);
	if (rc)
		goto fail;
	if (cfg->metrics_enabled && cfg->metrics_auth == METRICS_AUTH_KUBERNETES) {
		/* Reviews go through the API client the cluster view uses. */
		if (!env->view || !env->client) {
			snprintf(err, errn, "--metrics-auth=kubernetes needs the API server (a kubeconfig, or running in"
				 " a cluster, and --cluster-view not off) to review tokens: use --metrics-auth=none on a"
				 " loopback --metrics-listen to run without one");
			rc = -EINVAL;
			goto fail;
		}
		rc = metrics_auth_new(env->client, &h->auth);
		if (rc) {
			snprintf(err, errn, "out of memory");
			goto fail;
		}
		h->metrics.tls = true;
		h->metrics.auth = h->auth;
	}
	if (cfg->metrics_enabled) {
		rc = httpd_plain_start(&h->metrics, &cfg->metrics_listen, err, errn);
		if (rc)
			goto fail;
	}
	if (cfg->probe_enabled) {
		rc = httpd_plain_start(&h->probe, &cfg->probe_listen, err, errn);
		if (rc)
			goto fail;
	}
	*out = h;
	return 0;
fail:
	httpd_stop(h);
	return rc;
}

const char *httpd_address(const struct httpd *h, enum httpd_port port)
{
	switch (port) {
	case HTTPD_PORT_METRICS:
		return h->metrics.addr;
	case HTTPD_PORT_PROBE:
		return h->probe.addr;
	default:
		return h->addr;
	}
}

void httpd_drain(struct httpd *h)
{
	if (atomic_exchange(&h->draining, true))
		return;
	/* New connections are refused from now on; the socket stays open
	 * until the acceptor's thread is joined (httpd_stop()). */
	acceptor_close(h->acceptor);
}

unsigned httpd_in_flight(struct httpd *h)
{
	return atomic_load(&h->in_flight);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	httpd_plain_stop(&h->probe);
	httpd_plain_stop(&h->metrics);
	/* Before the daemon: the acceptor hands connections to it. */
	acceptor_free(h->acceptor);
	if (h->tls_d)
		MHD_stop_daemon(h->tls_d);
	/* After the acceptor: its thread polls it until it is joined. */
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	/* After the daemons: every connection has been closed, its deadline
	 * entry removed and its buffers given back. */
	stop_keeper(h);
	free_fixed(h);
	/* After the daemons: their threads have exited and freed their arenas. */
	if (h->admit_made)
		admit_fini(&h->admit);
	metrics_memory_watch(h->env.m, NULL);
	deadline_list_free(h->dl);
	reqmem_free(h->mem);
	/* After the metrics daemon: no check runs any more. */
	metrics_auth_free(h->auth);
	free(h);
}
