/* serve.c - dra-guard serve: wiring and the main loop.
 *
 * The main thread owns everything that changes: it loads the certificate
 * and the policy, starts the listeners, and then waits on one poll() for
 * signals (signalfd: no work in signal handlers), directory events
 * (inotify) and the poll-backstop tick. Worker threads only read snapshots.
 *
 * Reloads: an event in a watched directory schedules a reload a little
 * later (RELOAD_SETTLE_MS), so a burst - the kubelet's swap, a cp of two
 * files - is read once, settled. Every POLL_INTERVAL_MS the stat signatures
 * are compared too, in case inotify missed something (a directory that was
 * replaced, an overflowing queue, a filesystem without events). SIGHUP
 * reloads both at once.
 *
 * Shutdown: SIGTERM or SIGINT stops accepting, waits for the requests in
 * progress (at most --shutdown-timeout), closes the rest and exits 0. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cert_source.h"
#include "clock.h"
#include <curl/curl.h>

#include "cli.h"
#include "cluster_view.h"
#include "gate_release.h"
#include "httpd.h"
#include "event_sink.h"
#include "ledger_watch.h"
#include "log.h"
#include "metrics.h"
#include "policy_source.h"
#include "reqmem.h"
#include "serve_config.h"
#include "version.h"
#include "watch.h"

#define RELOAD_SETTLE_MS 100
#define POLL_INTERVAL_MS 2000
#define DRAIN_TICK_MS 50
#define MMAP_THRESHOLD ((size_t)256 * 1024)
#define TRIM_THRESHOLD ((size_t)1024 * 1024)

struct server {
	struct serve_config cfg;
	struct metrics *m;
	struct cert_source *certs;
	struct policy_source *policy;
	struct kube_client *client;   /* the API client; NULL without a cluster view */
	struct cluster_view *view;
	struct gate_release *gate;
	struct ledger_watch *ledger;
	struct event_sink *events;    /* NULL without a cluster view or with --events=false */
	struct watch *watch;
	struct httpd *httpd;
	int sigfd;
	uint32_t cert_bits;           /* watch ids of the certificate directories */
	uint32_t policy_bits;         /* ... and of the policy directory */
};

static void update_ready(struct server *s)
{
	char why[512];

	if (s->httpd)
		metrics_ready(s->m, httpd_ready(s->httpd, why, sizeof(why)));
}

static void reload_certs(struct server *s, const char *why)
{
	cert_source_reload(s->certs, why);
	update_ready(s);
}

static void reload_policy(struct server *s, const char *why)
{
	policy_source_reload(s->policy, why);
	update_ready(s);
}

static int setup_watch(struct server *s)
{
	const char *dir;
	unsigned id, i;
	int rc;

	rc = watch_new(&s->watch);
	if (rc) {
		log_msg_str(LOG_WARN, "inotify unavailable: changes are seen by polling only", "error",
			    strerror(-rc));
		return 0;
	}
	for (i = 0; i < 2 && (dir = cert_source_dir(s->certs, i)) != NULL; i++) {
		rc = watch_add(s->watch, dir, &id);
		if (rc)
			goto fail;
		s->cert_bits |= 1u << id;
	}
	dir = policy_source_dir(s->policy);
	if (dir && (s->cfg.policy_kind == POLICY_SOURCE_DIR || s->cfg.policy_file_watch)) {
		rc = watch_add(s->watch, dir, &id);
		if (rc)
			goto fail;
		s->policy_bits |= 1u << id;
	}
	return 0;
fail:
	log_msg_str(LOG_WARN, "cannot watch a directory: changes are seen by polling only", "error",
		    strerror(-rc));
	watch_free(s->watch);
	s->watch = NULL;
	s->cert_bits = s->policy_bits = 0;
	return 0;
}

/* Whether the poll backstop rereads the policy. A --policy file is left
 * alone (SIGHUP rereads it) unless watched, or unless nothing valid has
 * been loaded from it yet: not ready, there is nothing to keep stable. */
static bool policy_polled(const struct server *s)
{
	if (s->cfg.policy_kind == POLICY_SOURCE_DIR)
		return true;
	if (s->cfg.policy_kind != POLICY_SOURCE_FILE)
		return false;
	return s->cfg.policy_file_watch || !policy_source_ready(s->policy, NULL, 0);
}

static int block_signals(sigset_t *set)
{
	int rc;

	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	/* Before any thread starts, so every thread inherits the mask and the
	 * signals reach only the signalfd. pthread_sigmask() returns its
	 * error and leaves errno alone. */
	rc = pthread_sigmask(SIG_BLOCK, set, NULL);
	if (rc != 0)
		return -rc;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Serve until SIGTERM/SIGINT. */
static void main_loop(struct server *s)
{
	int64_t next_poll = clock_mono_ms() + POLL_INTERVAL_MS, settle_at = -1;
	uint32_t pending = 0;

	for (;;) {
		struct pollfd pfd[2];
		int64_t now = clock_mono_ms(), deadline = next_poll;
		int nfds = 1, rc;

		if (settle_at >= 0 && settle_at < deadline)
			deadline = settle_at;
		pfd[0].fd = s->sigfd;
		pfd[0].events = POLLIN;
		if (s->watch) {
			pfd[1].fd = watch_fd(s->watch);
			pfd[1].events = POLLIN;
			nfds = 2;
		}
		rc = poll(pfd, (nfds_t)nfds, deadline > now ? (int)(deadline - now) : 0);
		if (rc < 0 && errno != EINTR) {
			log_msg_str(LOG_ERROR, "poll failed", "error", strerror(errno));
			return;
		}
		if (rc > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					log_msg(LOG_INFO, "SIGHUP: reloading certificate and policy");
					reload_certs(s, "SIGHUP");
					reload_policy(s, "SIGHUP");
				} else {
					log_msg_str(LOG_INFO, "shutting down", "signal",
						    si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
					return;
				}
			}
		}
		if (rc > 0 && nfds == 2 && (pfd[1].revents & POLLIN)) {
			uint32_t changed = 0;

			rc = watch_read(s->watch, &changed);
			if (rc) {
				/* Do not spin on a broken descriptor: poll only. */
				log_msg_str(LOG_WARN, "inotify failed: changes are seen by polling only",
					    "error", strerror(-rc));
				watch_free(s->watch);
				s->watch = NULL;
			}
			if (changed) {
				pending |= changed;
				if (settle_at < 0)
					settle_at = clock_mono_ms() + RELOAD_SETTLE_MS;
			}
		}
		now = clock_mono_ms();
		if (settle_at >= 0 && now >= settle_at) {
			if (pending & s->cert_bits)
				reload_certs(s, "change");
			if (pending & s->policy_bits)
				reload_policy(s, "change");
			pending = 0;
			settle_at = -1;
		}
		if (now >= next_poll) {
			uint32_t back = s->watch ? watch_rearm(s->watch) : 0;

			if ((back & s->cert_bits) || cert_source_changed(s->certs))
				reload_certs(s, "poll");
			if (policy_polled(s) &&
			    ((back & s->policy_bits) || policy_source_changed(s->policy)))
				reload_policy(s, "poll");
			next_poll = now + POLL_INTERVAL_MS;
		}
	}
}

/* Stop accepting, let what is in progress finish (bounded), stop. */
static void drain(struct server *s)
{
	int64_t deadline = clock_mono_ms() + (int64_t)s->cfg.shutdown_timeout_s * 1000;
	unsigned left;
	struct log_line l;

	httpd_drain(s->httpd);
	metrics_ready(s->m, false);
	while ((left = httpd_in_flight(s->httpd)) > 0 && clock_mono_ms() < deadline) {
		struct timespec ts = { 0, DRAIN_TICK_MS * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (left && log_begin(&l, LOG_WARN, "shutdown timeout: closing requests still in progress")) {
		log_uint(&l, "in_flight", left);
		log_uint(&l, "timeout_s", s->cfg.shutdown_timeout_s);
		log_end(&l);
	}
}

/* The cluster view, unless off or nothing to connect to. 0, or -1 when the
 * configuration is wrong (or missing with --cluster-view=on). */
static void freeze_began(void *ctx, int64_t since_ns)
{
	cluster_view_mark_freeze(ctx, since_ns);
}

/* The replica that releases gated Pods when a freeze ends (with
 * --gate-release and a cluster view). */
static int setup_gate(struct server *s)
{
	struct gate_release_config gc;
	char host[200];
	struct log_line l;

	if (!s->cfg.gate_release)
		return 0;
	memset(&gc, 0, sizeof(gc));
	snprintf(gc.lease_namespace, sizeof(gc.lease_namespace), "%s", s->cfg.gate_lease_namespace);
	snprintf(gc.lease_name, sizeof(gc.lease_name), "%s", s->cfg.gate_lease_name);
	gc.lease_s = s->cfg.gate_lease_s;
	snprintf(gc.peers, sizeof(gc.peers), "%s", s->cfg.gate_peers);
	if (s->cfg.gate_identity[0]) {
		snprintf(gc.identity, sizeof(gc.identity), "%s", s->cfg.gate_identity);
	} else {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "dra-guard");
		host[sizeof(host) - 1] = '\0';
		snprintf(gc.identity, sizeof(gc.identity), "%s_%ld", host, (long)getpid());
	}
	if (gate_release_new(&gc, s->client, s->view, s->policy, &s->gate) != 0) {
		log_msg(LOG_ERROR, "out of memory at start");
		return -1;
	}
	metrics_add_extra(s->m, gate_release_render_metrics, s->gate);
	if (gate_release_start(s->gate) != 0) {
		log_msg(LOG_ERROR, "cannot start the gate's thread");
		return -1;
	}
	if (log_begin(&l, LOG_INFO, "gate: releasing gated Pods when a freeze ends")) {
		log_str(&l, "lease", s->cfg.gate_lease_name);
		log_str(&l, "identity", gc.identity);
		log_uint(&l, "lease_duration_s", gc.lease_s);
		log_end(&l);
	}
	return 0;
}

static int setup_view(struct server *s)
{
	struct cluster_view_config vc;
	struct kube_config kube;
	char err[KUBE_CONFIG_ERROR_MAX];
	struct log_line l;
	int rc;

	if (s->cfg.cluster_view == CLUSTER_VIEW_OFF) {
		log_msg(LOG_INFO, "cluster view off (--cluster-view=off): each request is decided on its own");
		if (s->cfg.gate_release)
			log_msg(LOG_WARN, "--gate-release needs the cluster view: no replica of this kind releases "
				"gated Pods");
		return 0;
	}
	cluster_view_config_default(&vc);
	rc = kube_config_find(s->cfg.kubeconfig, s->cfg.kube_context, getenv, KUBE_SA_DIR, &kube, err);
	if (rc == 1) {
		if (s->cfg.cluster_view == CLUSTER_VIEW_ON) {
			log_msg(LOG_ERROR, "--cluster-view=on, but no kubeconfig was given and this is not a cluster "
				"(KUBERNETES_SERVICE_HOST is unset)");
			return -1;
		}
		log_msg(LOG_INFO, "no kubeconfig and not in a cluster: serving without a cluster view "
			"(each request is decided on its own)");
		return 0;
	}
	if (rc < 0) {
		log_msg_str(LOG_ERROR, "cannot configure the API client", "error", err);
		return -1;
	}
	if (kube_client_new(&kube, NULL, &s->client) != 0) {
		kube_config_free(&kube);
		log_msg(LOG_ERROR, "out of memory at start");
		return -1;
	}
	vc.client = s->client;
	snprintf(vc.cm_namespace, sizeof(vc.cm_namespace), "%s", s->cfg.configmap_namespace);
	snprintf(vc.cm_name, sizeof(vc.cm_name), "%s", s->cfg.configmap_name);
	if (s->cfg.watch_page_size)
		vc.page_size = s->cfg.watch_page_size;
	if (s->cfg.view_max_objects)
		vc.limits.max_objects = s->cfg.view_max_objects;
	if (s->cfg.watch_timeout_s)
		vc.watch_timeout_s = s->cfg.watch_timeout_s;
	vc.watch_silence_s = s->cfg.watch_silence_s;
	vc.stream_lists = !s->cfg.list_pages_only;
	if (log_begin(&l, LOG_INFO, "cluster view: connecting")) {
		log_str(&l, "server", kube_client_server(s->client));
		log_str(&l, "config", kube_client_source(s->client));
		log_str(&l, "policy_configmap", s->cfg.configmap_name);
		log_end(&l);
	}
	if (cluster_view_new(&vc, s->m, s->policy, &s->view) != 0) {
		log_msg(LOG_ERROR, "out of memory at start");
		return -1;
	}
	metrics_set_extra(s->m, cluster_view_render_metrics, s->view);
	if (ledger_watch_new(s->view, s->policy, &s->ledger) != 0) {
		log_msg(LOG_ERROR, "out of memory at start");
		return -1;
	}
	metrics_add_extra(s->m, ledger_watch_render_metrics, s->ledger);
	/* The ledger of the moment a freeze begins is kept for the export: a
	 * freeze already on at the start counts from now. */
	policy_source_on_freeze(s->policy, freeze_began, s->view);
	{
		struct policy_status st;

		policy_source_status(s->policy, &st);
		if (st.frozen)
			cluster_view_mark_freeze(s->view, st.freeze_since_ns);
	}
	if (cluster_view_start(s->view) != 0) {
		log_msg(LOG_ERROR, "cannot start the cluster view's thread");
		return -1;
	}
	if (s->cfg.events) {
		struct event_sink_config ec;

		event_sink_config_default(&ec, s->cfg.replica_name);
		if (event_sink_new(&ec, s->client, s->view, &s->events) != 0 || event_sink_start(s->events) != 0) {
			log_msg(LOG_ERROR, "cannot start the events worker");
			return -1;
		}
		metrics_add_extra(s->m, event_sink_render_metrics, s->events);
	}
	return setup_gate(s);
}

static void log_start(const struct server *s)
{
	struct log_line l;

	if (!log_begin(&l, LOG_INFO, "serving"))
		return;
	log_str(&l, "version", dra_guard_version);
	log_str(&l, "listen", httpd_address(s->httpd, HTTPD_PORT_WEBHOOK));
	log_str(&l, "metrics_listen",
		s->cfg.metrics_enabled ? httpd_address(s->httpd, HTTPD_PORT_METRICS) : "off");
	log_str(&l, "probe_listen", s->cfg.probe_enabled ? httpd_address(s->httpd, HTTPD_PORT_PROBE) : "off");
	log_str(&l, "metrics_auth", s->cfg.metrics_auth == METRICS_AUTH_KUBERNETES ? "kubernetes" : "none");
	log_uint(&l, "threads", s->cfg.threads);
	log_uint(&l, "max_body", s->cfg.max_body);
	log_uint(&l, "memory_budget", s->cfg.memory_budget);
	log_uint(&l, "max_connections", s->cfg.max_connections);
	log_uint(&l, "idle_timeout_s", s->cfg.idle_timeout_s);
	log_uint(&l, "body_timeout_s", s->cfg.body_timeout_s);
	log_str(&l, "policy", s->cfg.policy_kind == POLICY_SOURCE_BUILTIN ? "built-in" : s->cfg.policy_path);
	log_str(&l, "cluster_view", s->view ? "on" : "off");
	log_str(&l, "events", s->events ? "on" : "off");
	if (s->events)
		log_str(&l, "replica_name", s->cfg.replica_name);
	log_end(&l);
	/* Asked for by name (--metrics-auth-insecure), and said at every start. */
	if (s->cfg.metrics_enabled && s->cfg.metrics_auth == METRICS_AUTH_NONE &&
	    !serve_config_addr_loopback(&s->cfg.metrics_listen) &&
	    log_begin(&l, LOG_WARN, "metrics port without authentication on a non-loopback address: anyone who"
		      " reaches it reads /metrics and the cluster view, the ledger and the pending claims on /debug/*")) {
		log_str(&l, "metrics_listen", httpd_address(s->httpd, HTTPD_PORT_METRICS));
		log_str(&l, "fix", "--metrics-auth=kubernetes, or a loopback --metrics-listen");
		log_end(&l);
	}
}

int serve_main(int argc, char **argv)
{
	struct server s;
	struct httpd_env env;
	char err[SERVE_CONFIG_ERROR_MAX];
	sigset_t set;
	bool curl_ready = false;
	int rc, code = 1;

	memset(&s, 0, sizeof(s));
	s.sigfd = -1;
	rc = serve_config_parse(argc, argv, getenv, &s.cfg, err);
	if (rc == 1) {
		serve_config_usage(stdout);
		return 0;
	}
	if (rc) {
		fprintf(stderr, "dra-guard serve: %s\nRun 'dra-guard serve --help' for the usage.\n", err);
		return 2;
	}
	log_set_level(s.cfg.log_level);
	/* Before any thread exists: buffers past the pool's size get their
	 * own mappings, so a burst of large bodies leaves nothing behind. */
	reqmem_tune_allocator(MMAP_THRESHOLD, TRIM_THRESHOLD);
	if (block_signals(&set) != 0 || (s.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		log_msg_str(LOG_ERROR, "cannot set up signal handling", "error", strerror(errno));
		goto out;
	}
	if (metrics_new(dra_guard_version, &s.m) != 0 ||
	    cert_source_new(s.cfg.tls_cert, s.cfg.tls_key, s.cfg.service_name, s.m, &s.certs) != 0 ||
	    policy_source_new(s.cfg.policy_kind, s.cfg.policy_path, s.m, &s.policy) != 0) {
		log_msg(LOG_ERROR, "out of memory at start");
		goto out;
	}
	/* Without a certificate nothing can be served: fail loudly now rather
	 * than refuse every handshake. A bad policy only makes us not ready. */
	if (cert_source_reload(s.certs, "start") < 0)
		goto out;
	policy_source_reload(s.policy, "start");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		log_msg(LOG_ERROR, "cannot initialise libcurl");
		goto out;
	}
	curl_ready = true;
	if (setup_view(&s) != 0)
		goto out;
	setup_watch(&s);
	env.cfg = &s.cfg;
	env.m = s.m;
	env.certs = s.certs;
	env.policy = s.policy;
	env.view = s.view;
	env.client = s.client;
	env.ledger = s.ledger;
	env.gate = s.gate;
	env.events = s.events;
	if (httpd_start(&env, &s.httpd, err, sizeof(err)) != 0) {
		log_msg_str(LOG_ERROR, "cannot start listening", "error", err);
		goto out;
	}
	update_ready(&s);
	log_start(&s);
	main_loop(&s);
	drain(&s);
	code = 0;
out:
	httpd_stop(s.httpd);
	/* Before the view it reads; gives the Lease up when holding it. */
	gate_release_free(s.gate);
	/* After the server: no request holds a view snapshot any more, and
	 * none offers an Event. */
	event_sink_free(s.events);
	ledger_watch_free(s.ledger);
	cluster_view_free(s.view);
	kube_client_free(s.client);
	if (curl_ready)
		curl_global_cleanup();
	if (code == 0)
		log_msg(LOG_INFO, "stopped");
	watch_free(s.watch);
	policy_source_free(s.policy);
	cert_source_free(s.certs);
	metrics_free(s.m);
	if (s.sigfd >= 0)
		close(s.sigfd);
	return code;
}
