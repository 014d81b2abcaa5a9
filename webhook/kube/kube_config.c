/* kube_config.c - in-cluster configuration and kubeconfig files. */
#include "kube_config.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

#include "clock.h"
#include "doc.h"
#include "fileio.h"

void kube_config_free(struct kube_config *cfg)
{
	free(cfg->ca_pem);
	free(cfg->cert_pem);
	free(cfg->key_pem);
	if (cfg->token)
		memset(cfg->token, 0, strlen(cfg->token));
	free(cfg->token);
	memset(cfg, 0, sizeof(*cfg));
}

/* Trailing white space off a token file (a newline is usual). */
static void trim(char *s, size_t *len)
{
	while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == '\r' || s[*len - 1] == ' ' ||
			    s[*len - 1] == '\t'))
		s[--*len] = '\0';
}

int kube_config_token_refresh(struct kube_config *cfg, int64_t now_ms, bool force)
{
	char *tok = NULL;
	size_t len = 0;
	int rc;

	if (!cfg->token_file[0])
		return 0;
	if (!force && cfg->token && now_ms - cfg->token_read_ms < KUBE_TOKEN_MAX_AGE_S * 1000)
		return 0;
	rc = fileio_read(cfg->token_file, KUBE_FILE_MAX, &tok, &len);
	if (rc)
		return rc;
	trim(tok, &len);
	if (len == 0) {
		free(tok);
		return -EINVAL;
	}
	if (cfg->token) {
		memset(cfg->token, 0, strlen(cfg->token));
		free(cfg->token);
	}
	cfg->token = tok;
	cfg->token_read_ms = now_ms;
	return 0;
}

/* A PEM bundle holds at least one certificate. */
static bool has_certificate(const char *pem, size_t len)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----";

	return len >= sizeof(begin) - 1 && memmem(pem, len, begin, sizeof(begin) - 1) != NULL;
}

static void ca_stat_take(struct kube_config *cfg, const struct stat *st)
{
	cfg->ca_mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	cfg->ca_size = (int64_t)st->st_size;
	cfg->ca_ino = (uint64_t)st->st_ino;
}

int kube_config_ca_refresh(struct kube_config *cfg, int64_t now_ms, bool force)
{
	struct stat st;
	char *pem = NULL;
	size_t len = 0;
	int rc;

	if (!cfg->ca_file[0])
		return 0;
	if (!force && now_ms - cfg->ca_checked_ms < KUBE_TOKEN_MAX_AGE_S * 1000)
		return 0;
	cfg->ca_checked_ms = now_ms;
	/* stat() follows the kubelet's ..data symlink to the file it swapped in. */
	if (stat(cfg->ca_file, &st) != 0)
		return -errno;
	if (!force && (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == cfg->ca_mtime_ns &&
	    (int64_t)st.st_size == cfg->ca_size && (uint64_t)st.st_ino == cfg->ca_ino)
		return 0;
	if ((rc = fileio_read(cfg->ca_file, KUBE_FILE_MAX, &pem, &len)) != 0)
		return rc;
	if (!has_certificate(pem, len)) {
		free(pem);
		return -EINVAL;
	}
	if (cfg->ca_pem && cfg->ca_len == len && memcmp(cfg->ca_pem, pem, len) == 0) {
		free(pem);
		ca_stat_take(cfg, &st);
		return 0;
	}
	free(cfg->ca_pem);
	cfg->ca_pem = pem;
	cfg->ca_len = len;
	ca_stat_take(cfg, &st);
	return 1;
}

/* The CA file's identity as first read, so the first refresh that finds it
 * unchanged reads nothing. */
static void ca_file_set(struct kube_config *cfg, const char *path)
{
	struct stat st;

	snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s", path);
	cfg->ca_checked_ms = clock_mono_ms();
	if (stat(path, &st) == 0)
		ca_stat_take(cfg, &st);
}

int kube_config_auth_header(const struct kube_config *cfg, char **out)
{
	static const char prefix[] = "Authorization: Bearer ";
	size_t n;
	char *h;

	*out = NULL;
	if (!cfg->token)
		return 0;
	n = strlen(cfg->token);
	if (!(h = malloc(sizeof(prefix) + n)))
		return -ENOMEM;
	memcpy(h, prefix, sizeof(prefix) - 1);
	memcpy(h + sizeof(prefix) - 1, cfg->token, n + 1);
	*out = h;
	return 0;
}

static int read_file(const char *path, char **out, size_t *len, char *err, const char *what)
{
	int rc = fileio_read(path, KUBE_FILE_MAX, out, len);

	if (rc)
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "cannot read %s %.400s: %s", what, path, strerror(-rc));
	return rc;
}

static int in_cluster(char *(*getenv_fn)(const char *), const char *sa_dir, struct kube_config *cfg,
		      char *err)
{
	const char *host = getenv_fn("KUBERNETES_SERVICE_HOST");
	const char *port = getenv_fn("KUBERNETES_SERVICE_PORT");
	char path[PATH_MAX];
	char *ns = NULL;
	size_t len = 0;
	int rc;

	if (!port || !*port)
		port = "443";
	/* An IPv6 service address needs brackets in a URL. */
	snprintf(cfg->server, sizeof(cfg->server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
		 host, port);
	snprintf(cfg->source, sizeof(cfg->source), "in-cluster");
	snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
	if ((rc = read_file(path, &cfg->ca_pem, &cfg->ca_len, err, "the ServiceAccount CA")) != 0)
		return rc;
	ca_file_set(cfg, path);
	snprintf(cfg->token_file, sizeof(cfg->token_file), "%s/token", sa_dir);
	if ((rc = kube_config_token_refresh(cfg, clock_mono_ms(), true)) != 0) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "cannot read the ServiceAccount token %.300s: %s",
			 cfg->token_file, strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/namespace", sa_dir);
	if (fileio_read(path, 1024, &ns, &len) == 0) {
		trim(ns, &len);
		snprintf(cfg->namespace, sizeof(cfg->namespace), "%s", ns);
		free(ns);
	}
	return 0;
}

/* --- kubeconfig ------------------------------------------------------------ */

static const struct doc_node *named(const struct doc_node *list, const char *name, const char *inner)
{
	size_t i;

	if (!list || list->type != DOC_SEQ)
		return NULL;
	for (i = 0; i < list->n; i++) {
		const struct doc_node *e = list->items[i], *n = doc_map_get(e, "name");

		if (n && n->type == DOC_STRING && strcmp(n->text.ptr, name) == 0)
			return doc_map_get(e, inner);
	}
	return NULL;
}

static const char *str_of(const struct doc_node *m, const char *key)
{
	const struct doc_node *n = doc_map_get(m, key);

	return n && n->type == DOC_STRING ? n->text.ptr : NULL;
}

/* base64 -data into a malloc'd buffer. */
static int b64(const char *in, char **out, size_t *len)
{
	size_t n = strlen(in), pad = 0;
	unsigned char *buf;
	int got;

	while (n > 0 && (in[n - 1] == '\n' || in[n - 1] == ' '))
		n--;
	if (n == 0 || n % 4 != 0 || n > KUBE_FILE_MAX)
		return -EINVAL;
	if (in[n - 1] == '=')
		pad++;
	if (in[n - 2] == '=')
		pad++;
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	got = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)n);
	if (got < 0 || (size_t)got < pad) {
		free(buf);
		return -EINVAL;
	}
	*len = (size_t)got - pad;
	buf[*len] = '\0';
	*out = (char *)buf;
	return 0;
}

/* key (a file, relative to dir) or key-data (base64) of m into *out. */
static int file_or_data(const struct doc_node *m, const char *key, const char *dir, char **out,
			size_t *len, const char *path, char *err)
{
	char dkey[64], full[PATH_MAX];
	const char *file = str_of(m, key), *data;
	int rc;

	snprintf(dkey, sizeof(dkey), "%s-data", key);
	data = str_of(m, dkey);
	if (data) {
		rc = b64(data, out, len);
		if (rc)
			snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: %s is not base64", path, dkey);
		return rc;
	}
	if (!file)
		return 0;
	if (file[0] == '/')
		snprintf(full, sizeof(full), "%s", file);
	else
		snprintf(full, sizeof(full), "%.2000s/%.2000s", dir, file);
	return read_file(full, out, len, err, key);
}

/* Fields the guard does not implement; ignoring them would connect it
 * elsewhere, check another name or act as another identity than the
 * kubeconfig says. */
static const struct {
	const char *key, *why;
} cluster_refused[] = {
	{ "proxy-url", "dra-guard connects to the server directly; run it where the API server is "
		       "reachable without a proxy" },
	{ "tls-server-name", "dra-guard checks the server's certificate against the host of server; "
			     "use a server URL whose host the certificate names" },
};
static const char *const user_refused[] = { "as", "as-uid", "as-groups", "as-user-extra", "password" };

int kube_config_load(const char *path, const char *context, struct kube_config *cfg,
		     char err[static KUBE_CONFIG_ERROR_MAX])
{
	struct doc_set *set = NULL;
	struct doc_error derr;
	const struct doc_node *root, *ctx, *cluster, *user;
	const char *ctx_name, *cluster_name, *user_name, *server, *s;
	char *text = NULL, dir[PATH_MAX], tmp[PATH_MAX];
	size_t len = 0, i;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if ((rc = read_file(path, &text, &len, err, "the kubeconfig")) != 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	rc = doc_parse_yaml(text, len, NULL, &set, &derr);
	free(text);
	if (rc) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s:%u:%u: %s", path, derr.line, derr.col, derr.msg);
		return -EINVAL;
	}
	rc = -EINVAL;
	if (doc_set_count(set) != 1 || (root = doc_set_root(set, 0))->type != DOC_MAP) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: not a kubeconfig (one YAML map)", path);
		goto fail;
	}
	ctx_name = context && *context ? context : str_of(root, "current-context");
	if (!ctx_name || !*ctx_name) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: no current-context (or pass --kube-context)", path);
		goto fail;
	}
	ctx = named(doc_map_get(root, "contexts"), ctx_name, "context");
	cluster_name = ctx ? str_of(ctx, "cluster") : NULL;
	user_name = ctx ? str_of(ctx, "user") : NULL;
	if (!cluster_name) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: contexts[\"%s\"].context.cluster is missing", path,
			 ctx_name);
		goto fail;
	}
	cluster = named(doc_map_get(root, "clusters"), cluster_name, "cluster");
	server = cluster ? str_of(cluster, "server") : NULL;
	if (!server || strncmp(server, "https://", 8) != 0) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: clusters[\"%s\"].cluster.server must be an "
			 "https:// URL (found %s)", path, cluster_name, server ? server : "none");
		goto fail;
	}
	if ((s = doc_map_get(cluster, "insecure-skip-tls-verify") ? "x" : NULL) &&
	    doc_map_get(cluster, "insecure-skip-tls-verify")->type == DOC_BOOL &&
	    doc_map_get(cluster, "insecure-skip-tls-verify")->boolean) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: clusters[\"%s\"].cluster.insecure-skip-tls-verify "
			 "is refused: dra-guard always verifies the API server's certificate", path, cluster_name);
		goto fail;
	}
	for (i = 0; i < sizeof(cluster_refused) / sizeof(cluster_refused[0]); i++) {
		if (doc_map_get(cluster, cluster_refused[i].key)) {
			snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: clusters[\"%s\"].cluster.%s is not supported: %s",
				 path, cluster_name, cluster_refused[i].key, cluster_refused[i].why);
			goto fail;
		}
	}
	snprintf(cfg->server, sizeof(cfg->server), "%s", server);
	len = strlen(cfg->server);
	while (len > 0 && cfg->server[len - 1] == '/')
		cfg->server[--len] = '\0';
	snprintf(cfg->source, sizeof(cfg->source), "%s (context %s)", path, ctx_name);
	if ((s = str_of(ctx, "namespace")) != NULL)
		snprintf(cfg->namespace, sizeof(cfg->namespace), "%s", s);
	if ((rc = file_or_data(cluster, "certificate-authority", dir, &cfg->ca_pem, &cfg->ca_len, path, err)) != 0)
		goto fail;
	if (cfg->ca_pem && !str_of(cluster, "certificate-authority-data") &&
	    (s = str_of(cluster, "certificate-authority")) != NULL) {
		if (s[0] == '/')
			snprintf(tmp, sizeof(tmp), "%s", s);
		else
			snprintf(tmp, sizeof(tmp), "%.2000s/%.2000s", dir, s);
		ca_file_set(cfg, tmp);
	}
	user = user_name ? named(doc_map_get(root, "users"), user_name, "user") : NULL;
	rc = -EINVAL;
	if (user && (doc_map_get(user, "exec") || doc_map_get(user, "auth-provider") ||
		     doc_map_get(user, "username"))) {
		snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: users[\"%s\"]: exec plugins, auth providers and "
			 "basic auth are not supported; use a client certificate, token or tokenFile",
			 path, user_name);
		goto fail;
	}
	for (i = 0; user && i < sizeof(user_refused) / sizeof(user_refused[0]); i++) {
		if (doc_map_get(user, user_refused[i])) {
			snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: users[\"%s\"].%s is not supported: impersonation "
				 "would make the guard act as another identity than its own; give it the "
				 "credentials of the identity it should be (and that identity the RBAC of "
				 "manifests/base/rbac.yaml)", path, user_name, user_refused[i]);
			goto fail;
		}
	}
	if (user) {
		if ((rc = file_or_data(user, "client-certificate", dir, &cfg->cert_pem, &cfg->cert_len, path, err)) != 0 ||
		    (rc = file_or_data(user, "client-key", dir, &cfg->key_pem, &cfg->key_len, path, err)) != 0)
			goto fail;
		rc = -EINVAL;
		if (!cfg->cert_pem != !cfg->key_pem) {
			snprintf(err, KUBE_CONFIG_ERROR_MAX, "%s: users[\"%s\"] has a client certificate "
				 "without its key, or a key without its certificate", path, user_name);
			goto fail;
		}
		if ((s = str_of(user, "token")) != NULL && *s) {
			cfg->token = strdup(s);
			if (!cfg->token) {
				rc = -ENOMEM;
				goto fail;
			}
		} else if ((s = str_of(user, "tokenFile")) != NULL && *s) {
			if (s[0] == '/')
				snprintf(cfg->token_file, sizeof(cfg->token_file), "%s", s);
			else
				snprintf(cfg->token_file, sizeof(cfg->token_file), "%.2000s/%.2000s", dir, s);
			if ((rc = kube_config_token_refresh(cfg, clock_mono_ms(), true)) != 0) {
				snprintf(err, KUBE_CONFIG_ERROR_MAX, "%.200s: cannot read tokenFile %.200s: %s", path,
					 cfg->token_file, strerror(-rc));
				goto fail;
			}
		}
	}
	doc_set_free(set);
	return 0;
fail:
	doc_set_free(set);
	kube_config_free(cfg);
	return rc;
}

int kube_config_find(const char *kubeconfig, const char *context,
		     char *(*getenv_fn)(const char *), const char *sa_dir,
		     struct kube_config *cfg, char err[static KUBE_CONFIG_ERROR_MAX])
{
	const char *host = getenv_fn("KUBERNETES_SERVICE_HOST");
	const char *env = getenv_fn("KUBECONFIG");
	char first[PATH_MAX];

	memset(cfg, 0, sizeof(*cfg));
	err[0] = '\0';
	if (kubeconfig && *kubeconfig)
		return kube_config_load(kubeconfig, context, cfg, err);
	if (host && *host)
		return in_cluster(getenv_fn, sa_dir, cfg, err);
	if (env && *env) {
		/* KUBECONFIG is a list; the first file is read. */
		size_t n = strcspn(env, ":");

		snprintf(first, sizeof(first), "%.*s", (int)n, env);
		return kube_config_load(first, context, cfg, err);
	}
	return 1;
}
