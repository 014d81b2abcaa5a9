/* serve_config.h - the flags of dra-guard serve.
 *
 * One table (options.h) names every flag, its type and bounds, its
 * environment variable, default and help line; --help prints that table,
 * so the two cannot disagree. Precedence:
 * flag, then environment, then default. Every value is checked here (ranges,
 * addresses resolved, exclusive flags), so a bad one stops the program
 * before it opens anything. */
#ifndef DRA_GUARD_SERVE_CONFIG_H
#define DRA_GUARD_SERVE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include "log.h"
#include "options.h"
#include "policy_source.h"

#define SERVE_CONFIG_ERROR_MAX 512

/* What an answer may hold beyond the body it answers (messages, a patch):
 * the answer buffer's cap is --max-body plus this. */
#define SERVE_CONFIG_ANSWER_EXTRA ((size_t)4 << 20)

struct serve_addr {
	char text[300];               /* as given */
	struct sockaddr_storage sa;
	socklen_t len;
};

/* --cluster-view: whether serve watches the API server. */
enum cluster_view_mode {
	CLUSTER_VIEW_AUTO = 0,        /* when a kubeconfig or a cluster is found */
	CLUSTER_VIEW_ON,              /* required: no configuration is an error */
	CLUSTER_VIEW_OFF,             /* stateless: one request at a time */
};

/* --metrics-auth: who may read the metrics port. */
enum metrics_auth_mode {
	METRICS_AUTH_AUTO = 0,        /* as given: kubernetes unless the port is on loopback */
	METRICS_AUTH_KUBERNETES,      /* HTTPS; a bearer token, TokenReview, SubjectAccessReview */
	METRICS_AUTH_NONE,            /* plain HTTP, anyone who reaches the port */
};

struct serve_config {
	struct serve_addr listen;
	bool metrics_enabled;
	struct serve_addr metrics_listen;
	enum metrics_auth_mode metrics_auth;  /* never AUTO once parsed */
	bool metrics_auth_insecure;   /* none on a non-loopback address, on purpose */
	size_t debug_memory_budget;   /* debug answers held at once, apart from --memory-budget */
	unsigned debug_send_timeout_s;/* a debug answer not taken by its reader in this long is cut */
	bool probe_enabled;
	struct serve_addr probe_listen;
	char tls_cert[PATH_MAX];
	char tls_key[PATH_MAX];
	char service_name[254];
	enum policy_source_kind policy_kind;
	char policy_path[PATH_MAX];
	bool policy_file_watch;
	char configmap_namespace[64];
	char configmap_name[254];
	unsigned threads;
	size_t max_body;
	size_t memory_budget;
	unsigned max_connections;
	unsigned idle_timeout_s;
	unsigned body_timeout_s;
	unsigned max_json_depth;
	unsigned shutdown_timeout_s;
	enum log_level log_level;
	enum cluster_view_mode cluster_view;
	char kubeconfig[PATH_MAX];
	char kube_context[254];
	unsigned watch_page_size;
	unsigned view_max_objects;    /* per resource */
	unsigned watch_timeout_s;
	unsigned watch_silence_s;     /* 0: off */
	bool list_pages_only;         /* --list-mode pages */
	unsigned view_recheck_ms;
	bool gate_release;            /* release the freeze's gated Pods (needs the
				       * gate-pods RBAC overlay) */
	char gate_lease_namespace[64];
	char gate_lease_name[254];
	unsigned gate_lease_s;
	char gate_identity[254];      /* "": hostname_pid */
	char gate_peers[1024];        /* comma-separated holderIdentities of other replicas */
	char self_user[254];          /* the guard's own user name in the API server */
	bool events;                  /* emit Events on refusals that hold a Pod back */
	char replica_name[129];       /* the Events' reportingInstance */
};

/* Where the environment is read from: getenv, or a stand-in in tests. */
typedef char *serve_config_env_fn(const char *name);

/* Fill cfg from argv[1..argc) (argv[0] is "serve"), the environment and the
 * defaults. Returns 0; 1 when --help was given (nothing else is checked);
 * -EINVAL with err saying which flag or variable is wrong and why. */
int serve_config_parse(int argc, char **argv, serve_config_env_fn *env, struct serve_config *cfg,
		       char err[static SERVE_CONFIG_ERROR_MAX]);

/* The --help text. */
void serve_config_usage(FILE *f);

/* The table of serve's flags (webhook/base/options.h), for the tests and the
 * documentation check. */
const struct options_command *serve_config_command(void);

/* Parse "HOST:PORT", ":PORT", "[V6]:PORT" (HOST a literal or a name that
 * resolves). 0 or -EINVAL with err. */
int serve_config_addr(const char *text, struct serve_addr *out, char err[static SERVE_CONFIG_ERROR_MAX]);

/* True when a is a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104). */
bool serve_config_addr_loopback(const struct serve_addr *a);

/* "127.0.0.1:8443" / "[::1]:8443" for a bound address into buf. */
void serve_config_addr_format(const struct sockaddr *sa, char *buf, size_t n);

#endif
