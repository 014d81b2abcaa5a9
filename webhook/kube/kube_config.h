/* kube_config.h - where the API server is and who the guard is to it.
 *
 * In a cluster: KUBERNETES_SERVICE_HOST / _PORT, and the ServiceAccount
 * token and CA mounted under /var/run/secrets/kubernetes.io/serviceaccount/.
 * Out of one: a kubeconfig (--kubeconfig, else $KUBECONFIG, first file of
 * the list) read with the project's YAML reader: its current context (or
 * the one named), the cluster's server and CA (file or -data), the user's
 * client certificate and key (file or -data) or bearer token (token or
 * tokenFile). Relative paths are relative to the kubeconfig's directory.
 * Exec plugins, auth providers, basic auth and insecure-skip-tls-verify are
 * refused with a message: TLS verification is always on. So are the fields
 * the guard does not implement and must not ignore: proxy-url and
 * tls-server-name (the guard would connect elsewhere, or check another
 * name, than the operator meant) and impersonation (as, as-uid, as-groups,
 * as-user-extra: the guard would act with another identity than the
 * operator meant).
 *
 * The token file is re-read when it is older than KUBE_TOKEN_MAX_AGE_S (the
 * kubelet rotates projected tokens in place) and when the server answers
 * 401 (kube_config_token_refresh()); the CA file (in a cluster, the
 * ServiceAccount's ca.crt, which the kubelet rewrites when the cluster's CA
 * rotates) when it changed, checked as often, and at once after the server's
 * certificate failed verification (kube_config_ca_refresh()). */
#ifndef DRA_GUARD_KUBE_CONFIG_H
#define DRA_GUARD_KUBE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_TOKEN_MAX_AGE_S 60
#define KUBE_CONFIG_ERROR_MAX 512
/* Largest kubeconfig, certificate, key or token read. */
#define KUBE_FILE_MAX (1024 * 1024)

struct kube_config {
	char server[512];             /* https://host:port, no trailing slash */
	char source[PATH_MAX + 32];   /* "in-cluster" or the kubeconfig's path and context */
	char *ca_pem;                 /* malloc'd PEM; NULL: the system's CAs */
	size_t ca_len;
	char ca_file[PATH_MAX];       /* re-read from here when it changes, when set */
	int64_t ca_checked_ms;        /* monotonic, when ca_file was last looked at */
	int64_t ca_mtime_ns;          /* ca_file as read: modification time, size, inode */
	int64_t ca_size;
	uint64_t ca_ino;
	char *cert_pem, *key_pem;     /* client certificate and key, or NULL */
	size_t cert_len, key_len;
	char *token;                  /* bearer token (NUL-terminated), or NULL */
	char token_file[PATH_MAX];    /* re-read from here when set */
	int64_t token_read_ms;        /* monotonic, when token was read */
	char namespace[254];          /* the ServiceAccount's namespace in a cluster, or the context's */
};

/* Look for a configuration: kubeconfig (a path, or NULL/"" to use
 * $KUBECONFIG) first when given, else in-cluster when
 * KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG. getenv_fn reads the
 * environment (getenv, or a stand-in in tests); sa_dir is KUBE_SA_DIR or a
 * test directory. Returns 0 with *cfg filled (kube_config_free() it), 1
 * when there is nothing to find (no kubeconfig and not in a cluster: the
 * guard runs without a cluster view), or -EINVAL / -ENOENT / -ENOMEM with
 * err saying which file or key is wrong and what would be accepted. */
int kube_config_find(const char *kubeconfig, const char *context,
		     char *(*getenv_fn)(const char *), const char *sa_dir,
		     struct kube_config *cfg, char err[static KUBE_CONFIG_ERROR_MAX]);

/* Read a kubeconfig file. Same returns as kube_config_find() (never 1). */
int kube_config_load(const char *path, const char *context, struct kube_config *cfg,
		     char err[static KUBE_CONFIG_ERROR_MAX]);

/* Re-read the token file when force or when it is older than
 * KUBE_TOKEN_MAX_AGE_S at now_ms. 0 (also when there is no file), or a
 * negative errno (the old token stays). */
int kube_config_token_refresh(struct kube_config *cfg, int64_t now_ms, bool force);

/* Re-read the CA file when force, or when KUBE_TOKEN_MAX_AGE_S passed since
 * it was last looked at and its modification time, size or inode changed.
 * Returns 1 when a new CA was taken, 0 when nothing changed (also when there
 * is no file), or a negative errno (the old CA stays: a file caught half
 * written, empty or holding no certificate is not taken). Not thread-safe:
 * callers hold the lock that guards cfg. */
int kube_config_ca_refresh(struct kube_config *cfg, int64_t now_ms, bool force);

/* The "Authorization: Bearer <token>" header of cfg's token, malloc'd to
 * its length (a token is never cut to fit a buffer), into *out; *out is
 * NULL when there is no token. The caller wipes and frees it. 0 or
 * -ENOMEM. */
int kube_config_auth_header(const struct kube_config *cfg, char **out);

void kube_config_free(struct kube_config *cfg);

#endif
