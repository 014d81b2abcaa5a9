/* serve_config.c - the flags of dra-guard serve. */
#include "serve_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jscan.h"
#include "options.h"

_Static_assert(JSCAN_DEPTH_LIMIT == 10240, "the max-json-depth default below says 10240");

#define MAX_THREADS 256
#define MAX_BODY_MIN 1024
#define MAX_BODY_MAX ((size_t)256 * 1024 * 1024)
#define MEMORY_BUDGET_MAX ((size_t)64 << 30)
#define MAX_CONNECTIONS_MAX 65536
#define JSON_DEPTH_MIN 8
/* Deep nesting costs the skip one bit a level, no stack: the default is
 * the most any review from the API server can need. */
#define JSON_DEPTH_MAX JSCAN_DEPTH_LIMIT
#define IDLE_TIMEOUT_MAX 3600
#define BODY_TIMEOUT_MAX 3600
#define SHUTDOWN_TIMEOUT_MAX 600

_Static_assert(SERVE_CONFIG_ERROR_MAX >= OPTIONS_ERROR_MAX, "a flag's message fits serve's");

/* --- addresses ------------------------------------------------------------------------------ */

bool serve_config_addr_loopback(const struct serve_addr *a)
{
	if (a->sa.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->sa;

		return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	}
	if (a->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->sa;
		const uint8_t *b = s6->sin6_addr.s6_addr;

		if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && b[12] == 127;
	}
	return false;
}

void serve_config_addr_format(const struct sockaddr *sa, char *buf, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, n, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, n, "%s:%u", host, ntohs(s4->sin_port));
	} else {
		snprintf(buf, n, "?");
	}
}

int serve_config_addr(const char *text, struct serve_addr *out, char err[static SERVE_CONFIG_ERROR_MAX])
{
	struct addrinfo hints, *res = NULL;
	char host[256], port[8];
	const char *colon, *h = text;
	size_t hlen;
	unsigned long long p;
	int g;

	memset(out, 0, sizeof(*out));
	if (snprintf(out->text, sizeof(out->text), "%s", text) >= (int)sizeof(out->text))
		goto bad;
	colon = strrchr(text, ':');
	if (!colon)
		goto bad;
	hlen = (size_t)(colon - text);
	if (hlen >= 2 && text[0] == '[' && text[hlen - 1] == ']') {
		h = text + 1;
		hlen -= 2;
	} else if (memchr(text, ':', hlen)) {
		goto bad;     /* an IPv6 literal must be bracketed */
	}
	if (hlen >= sizeof(host) || strlen(colon + 1) >= sizeof(port))
		goto bad;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (!port[0] || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    (p = strtoull(port, NULL, 10)) > 65535)
		goto bad;
	if (hlen == 0) {
		/* Every address: IPv6 with v4-mapped when the host has IPv6
		 * (httpd falls back to IPv4 when it does not). */
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons((uint16_t)p);
		out->len = sizeof(*s6);
		return 0;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	g = getaddrinfo(host, port, &hints, &res);
	if (g != 0 || !res) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "'%s': cannot resolve '%s': %s", text, host,
			 gai_strerror(g));
		if (res)
			freeaddrinfo(res);
		return -EINVAL;
	}
	memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
bad:
	snprintf(err, SERVE_CONFIG_ERROR_MAX,
		 "'%s' is not an address (HOST:PORT, :PORT or [IPv6]:PORT, port 0 to 65535)", text);
	return -EINVAL;
}

/* --- values no type of the table covers ----------------------------------------------------- */

/* An address, or "off"/"" for none (enabled: NULL for the webhook port,
 * which is always on). */
static int set_addr(struct serve_addr *dst, bool *enabled, const char *v, char *why, size_t n)
{
	char err[SERVE_CONFIG_ERROR_MAX];

	if (enabled && (!v[0] || strcmp(v, "off") == 0)) {
		*enabled = false;
		return 0;
	}
	if (enabled)
		*enabled = true;
	if (serve_config_addr(v, dst, err) == 0)
		return 0;
	snprintf(why, n, "%s", err);
	return -EINVAL;
}

static int set_listen(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	(void)e;
	return set_addr(&((struct serve_config *)cfg)->listen, NULL, v, why, n);
}

static int set_metrics_listen(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct serve_config *c = cfg;

	(void)e;
	return set_addr(&c->metrics_listen, &c->metrics_enabled, v, why, n);
}

static int set_probe_listen(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct serve_config *c = cfg;

	(void)e;
	return set_addr(&c->probe_listen, &c->probe_enabled, v, why, n);
}

/* --policy and --policy-dir: one group, so at most one is given. */
static int set_policy_path(struct serve_config *c, enum policy_source_kind kind, const char *v, char *why,
			   size_t n)
{
	if (strlen(v) >= sizeof(c->policy_path)) {
		snprintf(why, n, "path longer than %zu bytes", sizeof(c->policy_path) - 1);
		return -EINVAL;
	}
	c->policy_kind = kind;
	snprintf(c->policy_path, sizeof(c->policy_path), "%s", v);
	return 0;
}

static int set_policy(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	(void)e;
	return set_policy_path(cfg, POLICY_SOURCE_FILE, v, why, n);
}

static int set_policy_dir(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	(void)e;
	return set_policy_path(cfg, POLICY_SOURCE_DIR, v, why, n);
}

/* A Kubernetes object name part: DNS-1123 characters. */
static bool dns_name(const char *s, size_t len, size_t max)
{
	size_t i;

	if (len == 0 || len > max)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

/* NAMESPACE/NAME into ns[64] and name[254]. */
static int set_ns_name(char *ns, char *name, const char *v, char *why, size_t n)
{
	const char *slash = strchr(v, '/');
	size_t nslen = slash ? (size_t)(slash - v) : 0;

	if (!slash || !dns_name(v, nslen, 63) || !dns_name(slash + 1, strlen(slash + 1), 253)) {
		snprintf(why, n, "'%s' is not NAMESPACE/NAME (lower-case DNS names)", v);
		return -EINVAL;
	}
	memcpy(ns, v, nslen);
	ns[nslen] = '\0';
	snprintf(name, 254, "%s", slash + 1);
	return 0;
}

static int set_policy_configmap(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct serve_config *c = cfg;

	(void)e;
	return set_ns_name(c->configmap_namespace, c->configmap_name, v, why, n);
}

static int set_gate_lease(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct serve_config *c = cfg;

	(void)e;
	return set_ns_name(c->gate_lease_namespace, c->gate_lease_name, v, why, n);
}

static unsigned cpu_count(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* The Events' reportingInstance: at most 128 bytes (the API server's
 * limit); not given, the host name (a Pod's is its name). */
static int set_replica_name(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct serve_config *c = cfg;
	char host[256];

	(void)e;
	if (!v || !v[0]) {
		if (gethostname(host, sizeof(host)) != 0 || !host[0])
			snprintf(host, sizeof(host), "dra-guard");
		host[128] = '\0';
		v = host;
	}
	if (strlen(v) > 128) {
		snprintf(why, n, "longer than 128 bytes (the API server's limit for an Event's reportingInstance)");
		return -EINVAL;
	}
	snprintf(c->replica_name, sizeof(c->replica_name), "%.128s", v);
	return 0;
}

/* --- the table ------------------------------------------------------------------------------ */

#define S(field) OPTIONS_AT(struct serve_config, field)
#define SECONDS(n) ((unsigned long long)(n) * OPTIONS_NS_PER_S)

static const struct options_choice metrics_auth_modes[] = {
	{ "auto", METRICS_AUTH_AUTO, false }, { "kubernetes", METRICS_AUTH_KUBERNETES, false },
	{ "none", METRICS_AUTH_NONE, false }, { NULL, 0, false },
};

static const struct options_choice log_levels[] = {
	{ "debug", LOG_DEBUG, false }, { "info", LOG_INFO, false }, { "warn", LOG_WARN, false },
	{ "error", LOG_ERROR, false }, { "warning", LOG_WARN, true }, { NULL, 0, false },
};

static const struct options_choice cluster_view_modes[] = {
	{ "auto", CLUSTER_VIEW_AUTO, false }, { "on", CLUSTER_VIEW_ON, false }, { "off", CLUSTER_VIEW_OFF, false },
	{ NULL, 0, false },
};

static const struct options_choice list_modes[] = {
	{ "auto", 0, false }, { "pages", 1, false }, { NULL, 0, false },
};

enum { GROUP_POLICY = 1 };

static const struct options_entry serve_flags[] = {
	{ .name = "listen", .type = OPTIONS_CUSTOM, .set = set_listen, .env = "DRA_GUARD_LISTEN", .def = ":8443",
	  .arg = "ADDR:PORT", .help = "the HTTPS webhook port (POST /validate, /mutate; GET /healthz, /readyz)" },
	{ .name = "metrics-listen", .type = OPTIONS_CUSTOM, .set = set_metrics_listen,
	  .env = "DRA_GUARD_METRICS_LISTEN", .def = "127.0.0.1:9090", .arg = "ADDR:PORT",
	  .help = "the metrics port: GET /metrics, /healthz, /readyz and the debug endpoints /debug/readyz,"
	  " /debug/view, /debug/ledger (?node=NAME, ?at=freeze) and /debug/pending (not on the webhook"
	  " port); HTTPS or plain HTTP as --metrics-auth says; \"off\" or \"\" disables it" },
	{ .name = "metrics-auth", .type = OPTIONS_ENUM, S(metrics_auth), .choices = metrics_auth_modes,
	  .env = "DRA_GUARD_METRICS_AUTH", .def = "auto", .arg = "MODE",
	  .help = "who may read the metrics port: kubernetes (HTTPS with the serving certificate; a bearer token"
	  " checked with a TokenReview, then a SubjectAccessReview of get on the path), none (plain HTTP,"
	  " no check), auto (kubernetes unless --metrics-listen is a loopback address)" },
	{ .name = "metrics-auth-insecure", .type = OPTIONS_BOOL, S(metrics_auth_insecure),
	  .env = "DRA_GUARD_METRICS_AUTH_INSECURE", .def = "false",
	  .help = "allow --metrics-auth=none on an address other than loopback (logged as a warning at start)" },
	{ .name = "debug-memory-budget", .type = OPTIONS_SIZE, S(debug_memory_budget), .min = (size_t)64 << 10,
	  .max = MEMORY_BUDGET_MAX, .env = "DRA_GUARD_DEBUG_MEMORY_BUDGET", .def = "64Mi", .arg = "SIZE",
	  .help = "/debug/view, /debug/ledger and /debug/pending answers held at once, apart from --memory-budget"
	  " (503 beyond; one answer at a time per path)" },
	{ .name = "debug-send-timeout", .type = OPTIONS_DURATION, S(debug_send_timeout_s), .min = SECONDS(1),
	  .max = SECONDS(3600), .env = "DRA_GUARD_DEBUG_SEND_TIMEOUT", .def = "30s", .arg = "DURATION",
	  .help = "a /debug/* answer its reader has not taken in full this long after the request is cut off" },
	{ .name = "probe-listen", .type = OPTIONS_CUSTOM, .set = set_probe_listen, .env = "DRA_GUARD_PROBE_LISTEN",
	  .def = "off", .arg = "ADDR:PORT",
	  .help = "plain-HTTP port for GET /healthz, /readyz only, with connection slots of its own;"
	  " \"off\" or \"\" disables it" },
	{ .name = "tls-cert", .type = OPTIONS_TEXT, S(tls_cert), .flags = OPTIONS_NONEMPTY,
	  .env = "DRA_GUARD_TLS_CERT", .def = "/etc/dra-guard/tls/tls.crt", .arg = "FILE",
	  .help = "PEM serving certificate, chain allowed (leaf first); reloaded on change" },
	{ .name = "tls-key", .type = OPTIONS_TEXT, S(tls_key), .flags = OPTIONS_NONEMPTY,
	  .env = "DRA_GUARD_TLS_KEY", .def = "/etc/dra-guard/tls/tls.key", .arg = "FILE",
	  .help = "PEM private key of the certificate; reloaded on change" },
	{ .name = "service-name", .type = OPTIONS_TEXT, S(service_name), .env = "DRA_GUARD_SERVICE_NAME",
	  .def_help = "none", .arg = "NAME", .help = "warn when the certificate's SANs do not include NAME" },
	{ .name = "policy", .type = OPTIONS_CUSTOM, .set = set_policy, .group = GROUP_POLICY,
	  .flags = OPTIONS_EMPTY_UNSET, .env = "DRA_GUARD_POLICY", .def_help = "none", .arg = "FILE",
	  .help = "a Policy document or a ConfigMap manifest holding one" },
	{ .name = "policy-dir", .type = OPTIONS_CUSTOM, .set = set_policy_dir, .group = GROUP_POLICY,
	  .flags = OPTIONS_EMPTY_UNSET, .env = "DRA_GUARD_POLICY_DIR", .def_help = "none", .arg = "DIR",
	  .help = "a mounted policy ConfigMap (policy.yaml, freeze, freeze-reason); watched and reloaded."
	  " Neither --policy nor --policy-dir: the built-in policy" },
	{ .name = "policy-file-watch", .type = OPTIONS_BOOL, S(policy_file_watch),
	  .env = "DRA_GUARD_POLICY_FILE_WATCH", .def = "false",
	  .help = "also watch and reload the --policy file (SIGHUP always reloads)" },
	{ .name = "policy-configmap", .type = OPTIONS_CUSTOM, .set = set_policy_configmap,
	  .env = "DRA_GUARD_POLICY_CONFIGMAP", .def = "dra-guard/dra-guard-policy", .arg = "NAMESPACE/NAME",
	  .help = "the guard's own policy ConfigMap, validated on write (policy.invalid)" },
	{ .name = "threads", .type = OPTIONS_UINT, S(threads), .min = 1, .max = MAX_THREADS,
	  .env = "DRA_GUARD_THREADS", .def_help = "the CPU count", .arg = "N",
	  .help = "worker threads serving connections (1 to 256)" },
	{ .name = "max-body", .type = OPTIONS_SIZE, S(max_body), .min = MAX_BODY_MIN, .max = MAX_BODY_MAX,
	  .env = "DRA_GUARD_MAX_BODY", .def = "8Mi", .arg = "SIZE",
	  .help = "largest request body (413 beyond; also for chunked bodies)" },
	{ .name = "memory-budget", .type = OPTIONS_SIZE, S(memory_budget), .min = MAX_BODY_MIN,
	  .max = MEMORY_BUDGET_MAX, .env = "DRA_GUARD_MEMORY_BUDGET", .def = "128Mi", .arg = "SIZE",
	  .help = "request bodies and answers held at once, over every connection (503 beyond);"
	  " at least --max-body + 4Mi" },
	{ .name = "max-connections", .type = OPTIONS_UINT, S(max_connections), .min = 1,
	  .max = MAX_CONNECTIONS_MAX, .env = "DRA_GUARD_MAX_CONNECTIONS", .def = "1024", .arg = "N",
	  .help = "most concurrent connections on the webhook port" },
	/* A timeout of 0 would mean "never" to libmicrohttpd or "at once" to us: refused. */
	{ .name = "idle-timeout", .type = OPTIONS_DURATION, S(idle_timeout_s), .min = SECONDS(1),
	  .max = SECONDS(IDLE_TIMEOUT_MAX), .env = "DRA_GUARD_IDLE_TIMEOUT", .def = "120s", .arg = "DURATION",
	  .help = "close a connection silent this long (longer than the API server's 90s keep-alive idle)" },
	{ .name = "body-timeout", .type = OPTIONS_DURATION, S(body_timeout_s), .min = SECONDS(1),
	  .max = SECONDS(BODY_TIMEOUT_MAX), .env = "DRA_GUARD_BODY_TIMEOUT", .def = "30s", .arg = "DURATION",
	  .help = "close a connection whose request is not received and answered this long after its"
	  " first byte (the API server waits at most 30s for a webhook)" },
	{ .name = "max-json-depth", .type = OPTIONS_UINT, S(max_json_depth), .min = JSON_DEPTH_MIN,
	  .max = JSON_DEPTH_MAX, .env = "DRA_GUARD_MAX_JSON_DEPTH", .def = "10240", .arg = "N",
	  .help = "deepest JSON nesting accepted in a review (8 to 10240)" },
	{ .name = "shutdown-timeout", .type = OPTIONS_DURATION, S(shutdown_timeout_s), .min = 0,
	  .max = SECONDS(SHUTDOWN_TIMEOUT_MAX), .env = "DRA_GUARD_SHUTDOWN_TIMEOUT", .def = "25s",
	  .arg = "DURATION", .help = "on SIGTERM, how long in-flight requests may take to finish" },
	{ .name = "log-level", .type = OPTIONS_ENUM, S(log_level), .choices = log_levels,
	  .env = "DRA_GUARD_LOG_LEVEL", .def = "info", .arg = "LEVEL", .help = "debug, info, warn or error" },
	{ .name = "cluster-view", .type = OPTIONS_ENUM, S(cluster_view), .choices = cluster_view_modes,
	  .env = "DRA_GUARD_CLUSTER_VIEW", .def = "auto", .arg = "MODE",
	  .help = "watch slices, claims, Pods, Nodes and the policy ConfigMap: auto (when in a cluster or given a"
	  " kubeconfig), on (required), off (stateless)" },
	{ .name = "kubeconfig", .type = OPTIONS_TEXT, S(kubeconfig), .flags = OPTIONS_EMPTY_UNSET,
	  .env = "DRA_GUARD_KUBECONFIG", .def_help = "$KUBECONFIG, else in-cluster", .arg = "FILE",
	  .help = "kubeconfig for the API server (client certificate or token); without one, in a"
	  " cluster the ServiceAccount is used, else $KUBECONFIG" },
	{ .name = "kube-context", .type = OPTIONS_TEXT, S(kube_context), .env = "DRA_GUARD_KUBE_CONTEXT",
	  .def_help = "current-context", .arg = "NAME", .help = "the kubeconfig context to use" },
	{ .name = "watch-page-size", .type = OPTIONS_UINT, S(watch_page_size), .min = 10, .max = 100000,
	  .env = "DRA_GUARD_WATCH_PAGE_SIZE", .def = "500", .arg = "N",
	  .help = "objects per LIST page (limit; 10 to 100000)" },
	{ .name = "view-max-objects", .type = OPTIONS_UINT, S(view_max_objects), .min = 10, .max = 1000000,
	  .env = "DRA_GUARD_VIEW_MAX_OBJECTS", .def = "1000000", .arg = "N",
	  .help = "most objects of one resource the cluster view holds (10 to 1000000); more are left out,"
	  " counted and logged" },
	{ .name = "watch-timeout", .type = OPTIONS_DURATION, S(watch_timeout_s), .min = SECONDS(1),
	  .max = SECONDS(3600), .env = "DRA_GUARD_WATCH_TIMEOUT", .def = "5m", .arg = "DURATION",
	  .help = "server-side timeout of each WATCH (resumed at once from the last event)" },
	{ .name = "list-mode", .type = OPTIONS_ENUM, S(list_pages_only), .choices = list_modes,
	  .env = "DRA_GUARD_LIST_MODE", .def = "auto", .arg = "MODE",
	  .help = "auto: list each resource as a streaming list (a WATCH with sendInitialEvents) where the API"
	  " server serves one, else in pages; pages: always LIST in pages of --watch-page-size" },
	{ .name = "watch-silence", .type = OPTIONS_DURATION, S(watch_silence_s), .min = 0, .max = SECONDS(3600),
	  .env = "DRA_GUARD_WATCH_SILENCE", .def = "150s", .arg = "DURATION",
	  .help = "a WATCH with nothing on it for this long, not even the bookmark the API server sends about"
	  " every minute, is cut and resumed from its resourceVersion (0: never)" },
	{ .name = "view-recheck", .type = OPTIONS_DURATION, S(view_recheck_ms), .unit_ns = OPTIONS_NS_PER_MS,
	  .min = 0, .max = SECONDS(10), .env = "DRA_GUARD_VIEW_RECHECK", .def = "500ms", .arg = "DURATION",
	  .help = "how long a denial by a rule that reads the cluster view waits for a newer view and is decided"
	  " again (a release or slice the watch is about to deliver); 0 disables" },
	{ .name = "gate-release", .type = OPTIONS_BOOL, S(gate_release), .env = "DRA_GUARD_GATE_RELEASE",
	  .def = "false",
	  .help = "when a freeze ends, the replica holding --gate-lease removes the freeze's scheduling gate"
	  " from the Pods it held (freeze.gatePods; needs the cluster view and the gate-pods RBAC)" },
	{ .name = "gate-lease", .type = OPTIONS_CUSTOM, .set = set_gate_lease, .env = "DRA_GUARD_GATE_LEASE",
	  .def = "dra-guard/dra-guard-gate", .arg = "NAMESPACE/NAME",
	  .help = "the coordination.k8s.io Lease that elects the replica releasing gated Pods" },
	{ .name = "gate-lease-duration", .type = OPTIONS_DURATION, S(gate_lease_s), .min = SECONDS(2),
	  .max = SECONDS(300), .env = "DRA_GUARD_GATE_LEASE_DURATION", .def = "15s", .arg = "DURATION",
	  .help = "leaseDurationSeconds: another replica takes over this long after the holder stops renewing" },
	{ .name = "gate-identity", .type = OPTIONS_TEXT, S(gate_identity), .env = "DRA_GUARD_GATE_IDENTITY",
	  .def_help = "HOSTNAME_PID", .arg = "NAME", .help = "this replica's holderIdentity in the Lease" },
	{ .name = "gate-peers", .type = OPTIONS_TEXT, S(gate_peers), .env = "DRA_GUARD_GATE_PEERS", .def = "",
	  .arg = "NAME,...",
	  .help = "other replicas' holderIdentities, for identities set with --gate-identity; a default one"
	  " (POD_PID) is a replica when POD is a Pod of the guard in the Lease's namespace. A holder"
	  " that is neither is foreign: no Pod is gated for it, and the Lease is taken from it" },
	{ .name = "self-user", .type = OPTIONS_TEXT, S(self_user), .env = "DRA_GUARD_SELF_USER",
	  .def = "system:serviceaccount:dra-guard:dra-guard", .arg = "USER",
	  .help = "the guard's own user name: claim.freeze.gate lets it remove the freeze's gate" },
	{ .name = "events", .type = OPTIONS_BOOL, S(events), .env = "DRA_GUARD_EVENTS", .def = "true",
	  .help = "emit Kubernetes Events (events.k8s.io/v1, aggregated) on the Pods and claims a refusal holds"
	  " back, and serve GET /debug/pending (needs the cluster view)" },
	{ .name = "replica-name", .type = OPTIONS_CUSTOM, .set = set_replica_name, .flags = OPTIONS_COMPUTED,
	  .env = "DRA_GUARD_REPLICA_NAME", .def_help = "the host name", .arg = "NAME",
	  .help = "this replica's name: the Events' reportingInstance (at most 128 bytes)" },
};

static const struct options_command serve_command = {
	.name = "serve",
	.synopsis = "[FLAGS]",
	.intro = "Serve the admission webhook over HTTPS (TLS 1.2 and 1.3 only).\n"
		 "SIGHUP reloads the certificate and the policy; SIGTERM or SIGINT drains and exits 0.\n",
	.entries = serve_flags,
	.nentries = sizeof(serve_flags) / sizeof(serve_flags[0]),
	.max_args = 0,
	.env_note = true,
};

const struct options_command *serve_config_command(void)
{
	return &serve_command;
}

void serve_config_usage(FILE *f)
{
	options_usage(&serve_command, f);
}

int serve_config_parse(int argc, char **argv, serve_config_env_fn *env, struct serve_config *cfg,
		       char err[static SERVE_CONFIG_ERROR_MAX])
{
	char why[OPTIONS_ERROR_MAX];
	int rc, nargs;

	err[0] = '\0';
	memset(cfg, 0, sizeof(*cfg));
	cfg->policy_kind = POLICY_SOURCE_BUILTIN;
	cfg->threads = cpu_count() > MAX_THREADS ? MAX_THREADS : cpu_count();
	rc = options_parse(&serve_command, argc, argv, env, cfg, &nargs, why);
	if (rc != 0) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "%s", why);
		return rc;
	}
	/* Whatever the metrics port serves reaches whoever reaches the port:
	 * off loopback, no check only when asked for by name. */
	if (cfg->metrics_auth == METRICS_AUTH_AUTO)
		cfg->metrics_auth = cfg->metrics_enabled && !serve_config_addr_loopback(&cfg->metrics_listen)
			? METRICS_AUTH_KUBERNETES : METRICS_AUTH_NONE;
	if (cfg->metrics_enabled && cfg->metrics_auth == METRICS_AUTH_NONE &&
	    !serve_config_addr_loopback(&cfg->metrics_listen) && !cfg->metrics_auth_insecure) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX,
			 "--metrics-auth=none on %.200s (not loopback) would serve the cluster view, the ledger and"
			 " the pending claims to anyone who reaches the port: use --metrics-auth=kubernetes, a"
			 " loopback address, or add --metrics-auth-insecure", cfg->metrics_listen.text);
		return -EINVAL;
	}
	/* One request at its largest must fit: its body, then its answer. */
	if (cfg->memory_budget < cfg->max_body + SERVE_CONFIG_ANSWER_EXTRA) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX,
			 "--memory-budget: %zu bytes is less than one request's largest answer"
			 " (--max-body + 4Mi = %zu bytes)", cfg->memory_budget,
			 cfg->max_body + SERVE_CONFIG_ANSWER_EXTRA);
		return -EINVAL;
	}
	return 0;
}
