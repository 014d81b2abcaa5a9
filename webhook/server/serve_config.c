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

struct flag {
	const char *name;             /* without the leading -- */
	const char *env;
	const char *def;              /* NULL: computed (see help) */
	const char *def_help;         /* how --help shows the default */
	const char *arg;              /* metavariable; NULL for a switch */
	const char *help;
	int (*set)(struct serve_config *cfg, const char *v, char *err);
};

/* --- value parsers -------------------------------------------------------------- */

static int set_path(char *dst, size_t n, const char *flag, const char *v, char *err)
{
	if (!v[0]) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: empty path", flag);
		return -EINVAL;
	}
	if (snprintf(dst, n, "%s", v) >= (int)n) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: path longer than %zu bytes", flag, n - 1);
		return -EINVAL;
	}
	return 0;
}

/* A whole number in [min, max]. */
static int parse_uint(const char *flag, const char *v, unsigned long long min,
		      unsigned long long max, unsigned long long *out, char *err)
{
	unsigned long long n;
	char *end;

	errno = 0;
	if (!v[0] || v[0] == '-' || v[0] == '+')
		goto bad;
	n = strtoull(v, &end, 10);
	if (errno || *end)
		goto bad;
	if (n < min || n > max) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: %s is out of range (%llu to %llu)", flag, v,
			 min, max);
		return -EINVAL;
	}
	*out = n;
	return 0;
bad:
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: '%s' is not a whole number", flag, v);
	return -EINVAL;
}

/* Seconds: "30", "30s", "2m", "1h". */
static int parse_duration(const char *flag, const char *v, unsigned max, unsigned *out, char *err)
{
	unsigned long long n, mult = 1;
	char num[32];
	size_t len = strlen(v);
	char last = len ? v[len - 1] : '\0';

	if (len == 0 || len >= sizeof(num))
		goto bad;
	memcpy(num, v, len + 1);
	if (last == 's' || last == 'm' || last == 'h') {
		mult = last == 's' ? 1 : last == 'm' ? 60 : 3600;
		num[len - 1] = '\0';
	}
	if (parse_uint(flag, num, 0, ULLONG_MAX / 3600, &n, err) != 0)
		goto bad;
	if (n * mult > max) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: %s is longer than %us", flag, v, max);
		return -EINVAL;
	}
	*out = (unsigned)(n * mult);
	return 0;
bad:
	snprintf(err, SERVE_CONFIG_ERROR_MAX,
		 "--%s: '%s' is not a duration (seconds, or a number with s, m or h)", flag, v);
	return -EINVAL;
}

/* Bytes: "8388608", "8Mi", "512Ki", "1Gi", "64k", "8M". */
static int parse_size(const char *flag, const char *v, size_t min, size_t max, size_t *out, char *err)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = {
		{ "Ki", 1ULL << 10 }, { "Mi", 1ULL << 20 }, { "Gi", 1ULL << 30 },
		{ "k", 1000ULL }, { "K", 1000ULL }, { "M", 1000000ULL }, { "G", 1000000000ULL },
	};
	unsigned long long n, mult = 1;
	char num[32];
	size_t len = strlen(v), i;

	if (len == 0 || len >= sizeof(num))
		goto bad;
	memcpy(num, v, len + 1);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (len > sl && strcmp(v + len - sl, units[i].suffix) == 0) {
			mult = units[i].mult;
			num[len - sl] = '\0';
			break;
		}
	}
	if (parse_uint(flag, num, 0, ULLONG_MAX >> 30, &n, err) != 0)
		goto bad;
	n *= mult;
	if (n < min || n > max) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: %s is out of range (%zu to %zu bytes)", flag,
			 v, min, max);
		return -EINVAL;
	}
	*out = (size_t)n;
	return 0;
bad:
	snprintf(err, SERVE_CONFIG_ERROR_MAX,
		 "--%s: '%s' is not a size (bytes, or a number with Ki, Mi, Gi, k, M, G)", flag, v);
	return -EINVAL;
}

static int parse_bool(const char *flag, const char *v, bool *out, char *err)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
		*out = true;
		return 0;
	}
	if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
		*out = false;
		return 0;
	}
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: '%s' is not true or false", flag, v);
	return -EINVAL;
}

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
	if (parse_uint("listen", port, 0, 65535, &p, err) != 0)
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

/* --- setters -------------------------------------------------------------------- */

static int set_listen(struct serve_config *c, const char *v, char *err)
{
	char why[SERVE_CONFIG_ERROR_MAX];

	if (serve_config_addr(v, &c->listen, why) == 0)
		return 0;
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--listen: %.480s", why);
	return -EINVAL;
}

static int set_metrics_listen(struct serve_config *c, const char *v, char *err)
{
	char why[SERVE_CONFIG_ERROR_MAX];

	if (!v[0] || strcmp(v, "off") == 0) {
		c->metrics_enabled = false;
		return 0;
	}
	c->metrics_enabled = true;
	if (serve_config_addr(v, &c->metrics_listen, why) == 0)
		return 0;
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--metrics-listen: %.480s", why);
	return -EINVAL;
}

static int set_metrics_auth(struct serve_config *c, const char *v, char *err)
{
	if (strcmp(v, "auto") == 0)
		c->metrics_auth = METRICS_AUTH_AUTO;
	else if (strcmp(v, "kubernetes") == 0)
		c->metrics_auth = METRICS_AUTH_KUBERNETES;
	else if (strcmp(v, "none") == 0)
		c->metrics_auth = METRICS_AUTH_NONE;
	else {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--metrics-auth: '%s' is not auto, kubernetes or none", v);
		return -EINVAL;
	}
	return 0;
}

static int set_metrics_auth_insecure(struct serve_config *c, const char *v, char *err)
{
	return parse_bool("metrics-auth-insecure", v, &c->metrics_auth_insecure, err);
}

static int set_probe_listen(struct serve_config *c, const char *v, char *err)
{
	char why[SERVE_CONFIG_ERROR_MAX];

	if (!v[0] || strcmp(v, "off") == 0) {
		c->probe_enabled = false;
		return 0;
	}
	c->probe_enabled = true;
	if (serve_config_addr(v, &c->probe_listen, why) == 0)
		return 0;
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--probe-listen: %.480s", why);
	return -EINVAL;
}

static int set_tls_cert(struct serve_config *c, const char *v, char *err)
{
	return set_path(c->tls_cert, sizeof(c->tls_cert), "tls-cert", v, err);
}

static int set_tls_key(struct serve_config *c, const char *v, char *err)
{
	return set_path(c->tls_key, sizeof(c->tls_key), "tls-key", v, err);
}

static int set_service_name(struct serve_config *c, const char *v, char *err)
{
	if (snprintf(c->service_name, sizeof(c->service_name), "%s", v) >= (int)sizeof(c->service_name)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--service-name: longer than 253 bytes");
		return -EINVAL;
	}
	return 0;
}

/* --policy and --policy-dir: the later one must not silently win. */
static int set_policy_kind(struct serve_config *c, enum policy_source_kind kind, const char *flag,
			   const char *v, char *err)
{
	if (!v[0])
		return 0;     /* empty: not given (an empty environment variable) */
	if (c->policy_kind != POLICY_SOURCE_BUILTIN && c->policy_kind != kind) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--policy and --policy-dir are exclusive: give one");
		return -EINVAL;
	}
	c->policy_kind = kind;
	return set_path(c->policy_path, sizeof(c->policy_path), flag, v, err);
}

static int set_policy(struct serve_config *c, const char *v, char *err)
{
	return set_policy_kind(c, POLICY_SOURCE_FILE, "policy", v, err);
}

static int set_policy_dir(struct serve_config *c, const char *v, char *err)
{
	return set_policy_kind(c, POLICY_SOURCE_DIR, "policy-dir", v, err);
}

static int set_policy_file_watch(struct serve_config *c, const char *v, char *err)
{
	return parse_bool("policy-file-watch", v, &c->policy_file_watch, err);
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

static int set_policy_configmap(struct serve_config *c, const char *v, char *err)
{
	const char *slash = strchr(v, '/');
	size_t nslen = slash ? (size_t)(slash - v) : 0;

	if (!slash || !dns_name(v, nslen, 63) || !dns_name(slash + 1, strlen(slash + 1), 253)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX,
			 "--policy-configmap: '%s' is not NAMESPACE/NAME (lower-case DNS names)", v);
		return -EINVAL;
	}
	memcpy(c->configmap_namespace, v, nslen);
	c->configmap_namespace[nslen] = '\0';
	snprintf(c->configmap_name, sizeof(c->configmap_name), "%s", slash + 1);
	return 0;
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

static int set_threads(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n;

	if (!v) {
		c->threads = cpu_count() > MAX_THREADS ? MAX_THREADS : cpu_count();
		return 0;
	}
	if (parse_uint("threads", v, 1, MAX_THREADS, &n, err) != 0)
		return -EINVAL;
	c->threads = (unsigned)n;
	return 0;
}

static int set_max_body(struct serve_config *c, const char *v, char *err)
{
	return parse_size("max-body", v, MAX_BODY_MIN, MAX_BODY_MAX, &c->max_body, err);
}

static int set_memory_budget(struct serve_config *c, const char *v, char *err)
{
	return parse_size("memory-budget", v, MAX_BODY_MIN, MEMORY_BUDGET_MAX, &c->memory_budget, err);
}

static int set_max_connections(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n;

	if (parse_uint("max-connections", v, 1, MAX_CONNECTIONS_MAX, &n, err) != 0)
		return -EINVAL;
	c->max_connections = (unsigned)n;
	return 0;
}

/* A timeout of 0 would mean "never" to libmicrohttpd or "at once" to us: refused. */
static int parse_timeout(const char *flag, const char *v, unsigned max, unsigned *out, char *err)
{
	if (parse_duration(flag, v, max, out, err) != 0)
		return -EINVAL;
	if (*out == 0) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s: must be at least 1s", flag);
		return -EINVAL;
	}
	return 0;
}

static int set_idle_timeout(struct serve_config *c, const char *v, char *err)
{
	return parse_timeout("idle-timeout", v, IDLE_TIMEOUT_MAX, &c->idle_timeout_s, err);
}

static int set_body_timeout(struct serve_config *c, const char *v, char *err)
{
	return parse_timeout("body-timeout", v, BODY_TIMEOUT_MAX, &c->body_timeout_s, err);
}

#define DEBUG_BUDGET_MIN ((size_t)64 << 10)
#define DEBUG_SEND_TIMEOUT_MAX 3600

static int set_debug_memory_budget(struct serve_config *c, const char *v, char *err)
{
	return parse_size("debug-memory-budget", v, DEBUG_BUDGET_MIN, MEMORY_BUDGET_MAX, &c->debug_memory_budget,
			  err);
}

static int set_debug_send_timeout(struct serve_config *c, const char *v, char *err)
{
	return parse_timeout("debug-send-timeout", v, DEBUG_SEND_TIMEOUT_MAX, &c->debug_send_timeout_s, err);
}

static int set_max_json_depth(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n;

	if (parse_uint("max-json-depth", v, JSON_DEPTH_MIN, JSON_DEPTH_MAX, &n, err) != 0)
		return -EINVAL;
	c->max_json_depth = (unsigned)n;
	return 0;
}

static int set_shutdown_timeout(struct serve_config *c, const char *v, char *err)
{
	return parse_duration("shutdown-timeout", v, SHUTDOWN_TIMEOUT_MAX, &c->shutdown_timeout_s, err);
}

static int set_log_level(struct serve_config *c, const char *v, char *err)
{
	if (log_level_parse(v, &c->log_level) == 0)
		return 0;
	snprintf(err, SERVE_CONFIG_ERROR_MAX, "--log-level: '%s' is not debug, info, warn or error", v);
	return -EINVAL;
}

static int set_cluster_view(struct serve_config *c, const char *v, char *err)
{
	if (strcmp(v, "auto") == 0)
		c->cluster_view = CLUSTER_VIEW_AUTO;
	else if (strcmp(v, "on") == 0)
		c->cluster_view = CLUSTER_VIEW_ON;
	else if (strcmp(v, "off") == 0)
		c->cluster_view = CLUSTER_VIEW_OFF;
	else {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--cluster-view: '%s' is not auto, on or off", v);
		return -EINVAL;
	}
	return 0;
}

static int set_kubeconfig(struct serve_config *c, const char *v, char *err)
{
	if (!v[0])
		return 0;     /* empty: not given; $KUBECONFIG is read later */
	return set_path(c->kubeconfig, sizeof(c->kubeconfig), "kubeconfig", v, err);
}

static int set_kube_context(struct serve_config *c, const char *v, char *err)
{
	if (snprintf(c->kube_context, sizeof(c->kube_context), "%s", v) >= (int)sizeof(c->kube_context)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--kube-context: longer than 253 bytes");
		return -EINVAL;
	}
	return 0;
}

static int set_watch_page_size(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n;

	if (parse_uint("watch-page-size", v, 10, 100000, &n, err) != 0)
		return -EINVAL;
	c->watch_page_size = (unsigned)n;
	return 0;
}

static int set_view_max_objects(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n;

	if (parse_uint("view-max-objects", v, 10, 1000000, &n, err) != 0)
		return -EINVAL;
	c->view_max_objects = (unsigned)n;
	return 0;
}

static int set_watch_timeout(struct serve_config *c, const char *v, char *err)
{
	if (parse_timeout("watch-timeout", v, 3600, &c->watch_timeout_s, err) != 0)
		return -EINVAL;
	return 0;
}

static int set_list_mode(struct serve_config *c, const char *v, char *err)
{
	if (strcmp(v, "auto") == 0) {
		c->list_pages_only = false;
	} else if (strcmp(v, "pages") == 0) {
		c->list_pages_only = true;
	} else {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--list-mode: '%s' is not auto or pages", v);
		return -EINVAL;
	}
	return 0;
}

static int set_watch_silence(struct serve_config *c, const char *v, char *err)
{
	return parse_duration("watch-silence", v, 3600, &c->watch_silence_s, err);
}

/* Milliseconds: "500ms", or a duration ("1s"); 0 disables. */
static int set_view_recheck(struct serve_config *c, const char *v, char *err)
{
	unsigned long long n = 0;
	size_t len = strlen(v), i;
	unsigned secs = 0;

	if (len > 2 && strcmp(v + len - 2, "ms") == 0) {
		for (i = 0; i < len - 2 && v[i] >= '0' && v[i] <= '9' && n <= 10000; i++)
			n = n * 10 + (unsigned)(v[i] - '0');
		if (i != len - 2 || n > 10000) {
			snprintf(err, SERVE_CONFIG_ERROR_MAX, "--view-recheck: '%s' is not a duration up to 10s "
				 "(e.g. 500ms, 1s; 0 disables)", v);
			return -EINVAL;
		}
		c->view_recheck_ms = (unsigned)n;
		return 0;
	}
	if (parse_duration("view-recheck", v, 10, &secs, err) != 0)
		return -EINVAL;
	c->view_recheck_ms = secs * 1000;
	return 0;
}

static int set_gate_release(struct serve_config *c, const char *v, char *err)
{
	return parse_bool("gate-release", v, &c->gate_release, err);
}

static int set_gate_lease(struct serve_config *c, const char *v, char *err)
{
	const char *slash = strchr(v, '/');
	size_t nslen = slash ? (size_t)(slash - v) : 0;

	if (!slash || !dns_name(v, nslen, 63) || !dns_name(slash + 1, strlen(slash + 1), 253)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--gate-lease: '%s' is not NAMESPACE/NAME (lower-case DNS names)", v);
		return -EINVAL;
	}
	memcpy(c->gate_lease_namespace, v, nslen);
	c->gate_lease_namespace[nslen] = '\0';
	snprintf(c->gate_lease_name, sizeof(c->gate_lease_name), "%s", slash + 1);
	return 0;
}

static int set_gate_lease_duration(struct serve_config *c, const char *v, char *err)
{
	if (parse_duration("gate-lease-duration", v, 300, &c->gate_lease_s, err) != 0)
		return -EINVAL;
	if (c->gate_lease_s < 2) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--gate-lease-duration: '%s' is under 2s", v);
		return -EINVAL;
	}
	return 0;
}

static int set_gate_identity(struct serve_config *c, const char *v, char *err)
{
	if (strlen(v) >= sizeof(c->gate_identity)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--gate-identity: longer than %zu bytes",
			 sizeof(c->gate_identity) - 1);
		return -EINVAL;
	}
	snprintf(c->gate_identity, sizeof(c->gate_identity), "%s", v);
	return 0;
}

static int set_gate_peers(struct serve_config *c, const char *v, char *err)
{
	if (strlen(v) >= sizeof(c->gate_peers)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--gate-peers: longer than %zu bytes", sizeof(c->gate_peers) - 1);
		return -EINVAL;
	}
	snprintf(c->gate_peers, sizeof(c->gate_peers), "%s", v);
	return 0;
}

static int set_self_user(struct serve_config *c, const char *v, char *err)
{
	if (strlen(v) >= sizeof(c->self_user)) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--self-user: longer than %zu bytes", sizeof(c->self_user) - 1);
		return -EINVAL;
	}
	snprintf(c->self_user, sizeof(c->self_user), "%s", v);
	return 0;
}

static int set_events(struct serve_config *c, const char *v, char *err)
{
	return parse_bool("events", v, &c->events, err);
}

/* The Events' reportingInstance: at most 128 bytes (the API server's
 * limit); not given, the host name (a Pod's is its name). */
static int set_replica_name(struct serve_config *c, const char *v, char *err)
{
	char host[256];

	if (!v || !v[0]) {
		if (gethostname(host, sizeof(host)) != 0 || !host[0])
			snprintf(host, sizeof(host), "dra-guard");
		host[128] = '\0';
		v = host;
	}
	if (strlen(v) > 128) {
		snprintf(err, SERVE_CONFIG_ERROR_MAX, "--replica-name: longer than 128 bytes (the API server's limit "
			 "for an Event's reportingInstance)");
		return -EINVAL;
	}
	snprintf(c->replica_name, sizeof(c->replica_name), "%.128s", v);
	return 0;
}

static const struct flag flags[] = {
	{ "listen", "DRA_GUARD_LISTEN", ":8443", NULL, "ADDR:PORT",
	  "the HTTPS webhook port (POST /validate, /mutate; GET /healthz, /readyz)", set_listen },
	{ "metrics-listen", "DRA_GUARD_METRICS_LISTEN", "127.0.0.1:9090", NULL, "ADDR:PORT",
	  "the metrics port: GET /metrics, /healthz, /readyz and the debug endpoints /debug/readyz,"
	  " /debug/view, /debug/ledger (?node=NAME, ?at=freeze) and /debug/pending (not on the webhook"
	  " port); HTTPS or plain HTTP as --metrics-auth says; \"off\" or \"\" disables it",
	  set_metrics_listen },
	{ "metrics-auth", "DRA_GUARD_METRICS_AUTH", "auto", NULL, "MODE",
	  "who may read the metrics port: kubernetes (HTTPS with the serving certificate; a bearer token"
	  " checked with a TokenReview, then a SubjectAccessReview of get on the path), none (plain HTTP,"
	  " no check), auto (kubernetes unless --metrics-listen is a loopback address)", set_metrics_auth },
	{ "metrics-auth-insecure", "DRA_GUARD_METRICS_AUTH_INSECURE", "false", NULL, NULL,
	  "allow --metrics-auth=none on an address other than loopback (logged as a warning at start)",
	  set_metrics_auth_insecure },
	{ "debug-memory-budget", "DRA_GUARD_DEBUG_MEMORY_BUDGET", "64Mi", NULL, "SIZE",
	  "/debug/view, /debug/ledger and /debug/pending answers held at once, apart from --memory-budget"
	  " (503 beyond; one answer at a time per path)", set_debug_memory_budget },
	{ "debug-send-timeout", "DRA_GUARD_DEBUG_SEND_TIMEOUT", "30s", NULL, "DURATION",
	  "a /debug/* answer its reader has not taken in full this long after the request is cut off",
	  set_debug_send_timeout },
	{ "probe-listen", "DRA_GUARD_PROBE_LISTEN", "off", NULL, "ADDR:PORT",
	  "plain-HTTP port for GET /healthz, /readyz only, with connection slots of its own;"
	  " \"off\" or \"\" disables it", set_probe_listen },
	{ "tls-cert", "DRA_GUARD_TLS_CERT", "/etc/dra-guard/tls/tls.crt", NULL, "FILE",
	  "PEM serving certificate, chain allowed (leaf first); reloaded on change", set_tls_cert },
	{ "tls-key", "DRA_GUARD_TLS_KEY", "/etc/dra-guard/tls/tls.key", NULL, "FILE",
	  "PEM private key of the certificate; reloaded on change", set_tls_key },
	{ "service-name", "DRA_GUARD_SERVICE_NAME", "", "none", "NAME",
	  "warn when the certificate's SANs do not include NAME", set_service_name },
	{ "policy", "DRA_GUARD_POLICY", "", "none", "FILE",
	  "a Policy document or a ConfigMap manifest holding one", set_policy },
	{ "policy-dir", "DRA_GUARD_POLICY_DIR", "", "none", "DIR",
	  "a mounted policy ConfigMap (policy.yaml, freeze, freeze-reason); watched and reloaded."
	  " Neither --policy nor --policy-dir: the built-in policy", set_policy_dir },
	{ "policy-file-watch", "DRA_GUARD_POLICY_FILE_WATCH", "false", NULL, NULL,
	  "also watch and reload the --policy file (SIGHUP always reloads)", set_policy_file_watch },
	{ "policy-configmap", "DRA_GUARD_POLICY_CONFIGMAP", "dra-guard/dra-guard-policy", NULL,
	  "NAMESPACE/NAME", "the guard's own policy ConfigMap, validated on write (policy.invalid)",
	  set_policy_configmap },
	{ "threads", "DRA_GUARD_THREADS", NULL, "the CPU count", "N",
	  "worker threads serving connections (1 to 256)", set_threads },
	{ "max-body", "DRA_GUARD_MAX_BODY", "8Mi", NULL, "SIZE",
	  "largest request body (413 beyond; also for chunked bodies)", set_max_body },
	{ "memory-budget", "DRA_GUARD_MEMORY_BUDGET", "128Mi", NULL, "SIZE",
	  "request bodies and answers held at once, over every connection (503 beyond);"
	  " at least --max-body + 4Mi", set_memory_budget },
	{ "max-connections", "DRA_GUARD_MAX_CONNECTIONS", "1024", NULL, "N",
	  "most concurrent connections on the webhook port", set_max_connections },
	{ "idle-timeout", "DRA_GUARD_IDLE_TIMEOUT", "120s", NULL, "DURATION",
	  "close a connection silent this long (longer than the API server's 90s keep-alive idle)",
	  set_idle_timeout },
	{ "body-timeout", "DRA_GUARD_BODY_TIMEOUT", "30s", NULL, "DURATION",
	  "close a connection whose request is not received and answered this long after its"
	  " first byte (the API server waits at most 30s for a webhook)", set_body_timeout },
	{ "max-json-depth", "DRA_GUARD_MAX_JSON_DEPTH", "10240", NULL, "N",
	  "deepest JSON nesting accepted in a review (8 to 10240)", set_max_json_depth },
	{ "shutdown-timeout", "DRA_GUARD_SHUTDOWN_TIMEOUT", "25s", NULL, "DURATION",
	  "on SIGTERM, how long in-flight requests may take to finish", set_shutdown_timeout },
	{ "log-level", "DRA_GUARD_LOG_LEVEL", "info", NULL, "LEVEL",
	  "debug, info, warn or error", set_log_level },
	{ "cluster-view", "DRA_GUARD_CLUSTER_VIEW", "auto", NULL, "MODE",
	  "watch slices, claims, Pods, Nodes and the policy ConfigMap: auto (when in a cluster or given a"
	  " kubeconfig), on (required), off (stateless)", set_cluster_view },
	{ "kubeconfig", "DRA_GUARD_KUBECONFIG", "", "$KUBECONFIG, else in-cluster", "FILE",
	  "kubeconfig for the API server (client certificate or token); without one, in a"
	  " cluster the ServiceAccount is used, else $KUBECONFIG", set_kubeconfig },
	{ "kube-context", "DRA_GUARD_KUBE_CONTEXT", "", "current-context", "NAME",
	  "the kubeconfig context to use", set_kube_context },
	{ "watch-page-size", "DRA_GUARD_WATCH_PAGE_SIZE", "500", NULL, "N",
	  "objects per LIST page (limit; 10 to 100000)", set_watch_page_size },
	{ "view-max-objects", "DRA_GUARD_VIEW_MAX_OBJECTS", "1000000", NULL, "N",
	  "most objects of one resource the cluster view holds (10 to 1000000); more are left out,"
	  " counted and logged", set_view_max_objects },
	{ "watch-timeout", "DRA_GUARD_WATCH_TIMEOUT", "5m", NULL, "DURATION",
	  "server-side timeout of each WATCH (resumed at once from the last event)", set_watch_timeout },
	{ "list-mode", "DRA_GUARD_LIST_MODE", "auto", NULL, "MODE",
	  "auto: list each resource as a streaming list (a WATCH with sendInitialEvents) where the API"
	  " server serves one, else in pages; pages: always LIST in pages of --watch-page-size", set_list_mode },
	{ "watch-silence", "DRA_GUARD_WATCH_SILENCE", "150s", NULL, "DURATION",
	  "a WATCH with nothing on it for this long, not even the bookmark the API server sends about"
	  " every minute, is cut and resumed from its resourceVersion (0: never)", set_watch_silence },
	{ "view-recheck", "DRA_GUARD_VIEW_RECHECK", "500ms", NULL, "DURATION",
	  "how long a denial by a rule that reads the cluster view waits for a newer view and is decided"
	  " again (a release or slice the watch is about to deliver); 0 disables", set_view_recheck },
	{ "gate-release", "DRA_GUARD_GATE_RELEASE", "false", NULL, NULL,
	  "when a freeze ends, the replica holding --gate-lease removes the freeze's scheduling gate"
	  " from the Pods it held (freeze.gatePods; needs the cluster view and the gate-pods RBAC)",
	  set_gate_release },
	{ "gate-lease", "DRA_GUARD_GATE_LEASE", "dra-guard/dra-guard-gate", NULL, "NAMESPACE/NAME",
	  "the coordination.k8s.io Lease that elects the replica releasing gated Pods", set_gate_lease },
	{ "gate-lease-duration", "DRA_GUARD_GATE_LEASE_DURATION", "15s", NULL, "DURATION",
	  "leaseDurationSeconds: another replica takes over this long after the holder stops renewing",
	  set_gate_lease_duration },
	{ "gate-identity", "DRA_GUARD_GATE_IDENTITY", "", "HOSTNAME_PID", "NAME",
	  "this replica's holderIdentity in the Lease", set_gate_identity },
	{ "gate-peers", "DRA_GUARD_GATE_PEERS", "", NULL, "NAME,...",
	  "other replicas' holderIdentities, for identities set with --gate-identity; a default one"
	  " (POD_PID) is a replica when POD is a Pod of the guard in the Lease's namespace. A holder"
	  " that is neither is foreign: no Pod is gated for it, and the Lease is taken from it",
	  set_gate_peers },
	{ "self-user", "DRA_GUARD_SELF_USER", "system:serviceaccount:dra-guard:dra-guard", NULL, "USER",
	  "the guard's own user name: claim.freeze.gate lets it remove the freeze's gate", set_self_user },
	{ "events", "DRA_GUARD_EVENTS", "true", NULL, NULL,
	  "emit Kubernetes Events (events.k8s.io/v1, aggregated) on the Pods and claims a refusal holds back,"
	  " and serve GET /debug/pending (needs the cluster view)", set_events },
	{ "replica-name", "DRA_GUARD_REPLICA_NAME", NULL, "the host name", "NAME",
	  "this replica's name: the Events' reportingInstance (at most 128 bytes)", set_replica_name },
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

void serve_config_usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: dra-guard serve [FLAGS]\n"
		"\n"
		"Serve the admission webhook over HTTPS (TLS 1.2 and 1.3 only). Every flag can also\n"
		"be set by its environment variable; a flag given on the command line wins.\n"
		"SIGHUP reloads the certificate and the policy; SIGTERM or SIGINT drains and exits 0.\n"
		"\n"
		"flags:\n");
	for (i = 0; i < NFLAGS; i++) {
		const struct flag *fl = &flags[i];
		char head[64];

		snprintf(head, sizeof(head), "--%s%s%s", fl->name, fl->arg ? " " : "", fl->arg ? fl->arg : "");
		fprintf(f, "  %-32s %s\n  %-32s [$%s; default: %s]\n", head, fl->help, "", fl->env,
			fl->def_help ? fl->def_help : fl->def[0] ? fl->def : "\"\"");
	}
	fprintf(f, "  %-32s %s\n", "--help", "this text");
}

static const struct flag *find_flag(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		if (strlen(flags[i].name) == len && memcmp(flags[i].name, name, len) == 0)
			return &flags[i];
	return NULL;
}

static void set_defaults(struct serve_config *c)
{
	memset(c, 0, sizeof(*c));
	c->policy_kind = POLICY_SOURCE_BUILTIN;
	c->log_level = LOG_INFO;
	c->cluster_view = CLUSTER_VIEW_AUTO;
}

int serve_config_parse(int argc, char **argv, serve_config_env_fn *env, struct serve_config *cfg,
		       char err[static SERVE_CONFIG_ERROR_MAX])
{
	const char *given[NFLAGS] = { NULL };
	char why[SERVE_CONFIG_ERROR_MAX];
	bool policy_on_cli = false;
	size_t i;
	int a;

	err[0] = '\0';
	set_defaults(cfg);
	for (a = 1; a < argc; a++) {
		const char *arg = argv[a], *eq, *name, *val;
		const struct flag *fl;
		size_t nlen;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
			return 1;
		if (strncmp(arg, "--", 2) != 0) {
			snprintf(err, SERVE_CONFIG_ERROR_MAX, "unexpected argument '%s' (flags start with --)",
				 arg);
			return -EINVAL;
		}
		name = arg + 2;
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		fl = find_flag(name, nlen);
		if (!fl) {
			snprintf(err, SERVE_CONFIG_ERROR_MAX, "unknown flag '--%.*s'",
				 (int)nlen, name);
			return -EINVAL;
		}
		if (eq) {
			val = eq + 1;
		} else if (!fl->arg) {
			val = "true";
		} else if (a + 1 < argc) {
			val = argv[++a];
		} else {
			snprintf(err, SERVE_CONFIG_ERROR_MAX, "--%s needs a value (%s)", fl->name, fl->arg);
			return -EINVAL;
		}
		given[fl - flags] = val;
	}
	/* Defaults, then the environment, then the flags, each checked as it
	 * is applied; --policy and --policy-dir check each other. */
	for (i = 0; i < NFLAGS; i++)
		if (given[i] && (flags[i].set == set_policy || flags[i].set == set_policy_dir))
			policy_on_cli = true;
	for (i = 0; i < NFLAGS; i++) {
		const struct flag *fl = &flags[i];
		bool policy_flag = fl->set == set_policy || fl->set == set_policy_dir;
		const char *e = env && !(policy_flag && policy_on_cli) ? env(fl->env) : NULL;
		const char *v = given[i] ? given[i] : e ? e : fl->def;
		int rc;

		/* A policy source on the command line replaces one from the
		 * environment, whichever of the two flags each uses. */
		if (policy_flag && !given[i] && !e)
			continue;
		rc = fl->set(cfg, v, why);
		if (rc != 0) {
			if (!given[i] && e)
				snprintf(err, SERVE_CONFIG_ERROR_MAX, "$%s: %.460s", fl->env, why);
			else
				snprintf(err, SERVE_CONFIG_ERROR_MAX, "%s", why);
			return -EINVAL;
		}
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
