/* kube_client.c - requests to the API server, and the credentials they carry. */
#include "kube_client.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

struct kube_client {
	pthread_mutex_t mu;           /* guards cfg: the token and CA change under it */
	struct kube_config cfg;
	long connect_timeout_s;
	bool allow_http;
	char connect_to[320];         /* "::ADDR:PORT" for CURLOPT_CONNECT_TO, or "" */
};


/* --- paths ------------------------------------------------------------------------ */

void kube_client_path_init(struct kube_client_path *p)
{
	p->s[0] = '\0';
	p->len = 0;
}

int kube_client_path_add(struct kube_client_path *p, const char *fmt, ...)
{
	size_t room = sizeof(p->s) - p->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->s + p->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		p->s[p->len] = '\0';
		return -E2BIG;
	}
	p->len += (size_t)n;
	return 0;
}

int kube_client_path_add_escaped(struct kube_client_path *p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t at = p->len;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			     ch == '-' || ch == '.' || ch == '_' || ch == '~';

		/* One byte kept for the NUL. */
		if (at + (plain ? 1 : 3) >= sizeof(p->s)) {
			p->s[p->len] = '\0';
			return -E2BIG;
		}
		if (plain) {
			p->s[at++] = (char)ch;
		} else {
			p->s[at++] = '%';
			p->s[at++] = hex[ch >> 4];
			p->s[at++] = hex[ch & 15];
		}
	}
	p->s[at] = '\0';
	p->len = at;
	return 0;
}

const char *kube_client_path_get(const struct kube_client_path *p)
{
	return p->s;
}

/* --- the client ------------------------------------------------------------------- */

int kube_client_new(struct kube_config *cfg, const struct kube_client_options *opt, struct kube_client **out)
{
	struct kube_client *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (opt && opt->connect_to &&
	    (size_t)snprintf(c->connect_to, sizeof(c->connect_to), "::%s", opt->connect_to) >= sizeof(c->connect_to)) {
		free(c);
		return -E2BIG;
	}
	if (pthread_mutex_init(&c->mu, NULL) != 0) {
		free(c);
		return -ENOMEM;
	}
	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	c->connect_timeout_s = opt && opt->connect_timeout_s ? opt->connect_timeout_s : 10;
	c->allow_http = opt && opt->allow_http;
	*out = c;
	return 0;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	kube_config_free(&c->cfg);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

const char *kube_client_server(const struct kube_client *c)
{
	return c->cfg.server;
}

const char *kube_client_source(const struct kube_client *c)
{
	return c->cfg.source;
}

static int add_header(struct curl_slist **headers, const char *h)
{
	struct curl_slist *t = curl_slist_append(*headers, h);

	if (!t)
		return -ENOMEM;
	*headers = t;
	return 0;
}

/* The credentials, under the lock: the token (read again when due), the CA
 * (read again when its file changed) and the client certificate, copied
 * into the handle, and the Authorization header built to the token's
 * length. 0 or -ENOMEM. */
static int set_auth(struct kube_client *c, CURL *e, struct curl_slist **headers)
{
	struct kube_config *k = &c->cfg;
	char *auth = NULL;
	int rc;

	pthread_mutex_lock(&c->mu);
	kube_config_token_refresh(k, clock_mono_ms(), false);
	kube_config_ca_refresh(k, clock_mono_ms(), false);
	if (k->ca_pem) {
		struct curl_blob blob = { k->ca_pem, k->ca_len, CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (k->cert_pem && k->key_pem) {
		struct curl_blob cert = { k->cert_pem, k->cert_len, CURL_BLOB_COPY };
		struct curl_blob key = { k->key_pem, k->key_len, CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	rc = kube_config_auth_header(k, &auth);
	pthread_mutex_unlock(&c->mu);
	if (rc == 0 && auth)
		rc = add_header(headers, auth);
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	return rc;
}

int kube_client_prepare(struct kube_client *c, CURL *e, const char *path, long timeout_s,
			const char *content_type, struct curl_slist **headers)
{
	size_t ns = strlen(c->cfg.server), np = strlen(path);
	char *url = NULL;
	int rc;

	if (np >= KUBE_CLIENT_PATH_MAX)
		return -E2BIG;
	if (!(url = malloc(ns + np + 1)))
		return -ENOMEM;
	memcpy(url, c->cfg.server, ns);
	memcpy(url + ns, path, np + 1);
	/* CURLOPT_URL copies the string. */
	rc = curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK ? 0 : -ENOMEM;
	free(url);
	if (rc)
		return rc;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, c->allow_http ? "http,https" : "https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, c->connect_timeout_s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
	rc = add_header(headers, "Accept: application/json");
	if (rc == 0)
		rc = add_header(headers, "User-Agent: dra-guard");
	if (rc == 0 && content_type) {
		char ct[128];

		if ((size_t)snprintf(ct, sizeof(ct), "Content-Type: %s", content_type) >= sizeof(ct))
			rc = -E2BIG;
		else
			rc = add_header(headers, ct);
	}
	if (rc == 0)
		rc = set_auth(c, e, headers);
	return rc;
}

void kube_client_answered(struct kube_client *c, CURLcode res, long status)
{
	if (status == 401) {
		pthread_mutex_lock(&c->mu);
		kube_config_token_refresh(&c->cfg, clock_mono_ms(), true);
		pthread_mutex_unlock(&c->mu);
	}
	/* The CA may have rotated under the guard: its file is read again at once. */
	if (res == CURLE_PEER_FAILED_VERIFICATION || res == CURLE_SSL_CACERT_BADFILE) {
		pthread_mutex_lock(&c->mu);
		if (kube_config_ca_refresh(&c->cfg, clock_mono_ms(), true) == 1) {
			struct log_line l;

			if (log_begin(&l, LOG_WARN, "API client: the API server's CA changed; read again")) {
				log_str(&l, "file", c->cfg.ca_file);
				log_end(&l);
			}
		}
		pthread_mutex_unlock(&c->mu);
	}
}

struct answer {
	struct buf *b;
	int rc;                       /* the first failed append */
};

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	int rc = buf_add(a->b, p, size * n);

	/* Past the cap the transfer ends: the request fails, nothing is cut. */
	if (rc) {
		a->rc = rc;
		return 0;
	}
	return size * n;
}

int kube_client_request(struct kube_client *c, CURL *e, const struct kube_request *rq, long *status,
			struct buf *out, char *err, size_t errn)
{
	struct curl_slist *h = NULL, *connects = NULL;
	struct answer ans = { out, 0 };
	CURL *own = NULL;
	CURLcode res;
	int rc;

	*status = 0;
	buf_reset(out);
	if (err && errn)
		err[0] = '\0';
	if (e)
		curl_easy_reset(e);   /* options go; the open connection stays */
	else if (!(e = own = curl_easy_init()))
		return -ENOMEM;
	rc = kube_client_prepare(c, e, rq->path, rq->timeout_s, rq->content_type, &h);
	if (rc) {
		if (err)
			snprintf(err, errn, "cannot prepare the request: %s", strerror(-rc));
		goto out;
	}
	if (c->connect_to[0]) {
		/* curl keeps the list, not a copy: freed after the transfer. */
		if (!(connects = curl_slist_append(NULL, c->connect_to))) {
			rc = -ENOMEM;
			goto out;
		}
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, connects);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
	if (rq->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &ans);
	res = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	kube_client_answered(c, res, *status);
	if (res == CURLE_OK) {
		rc = 0;
	} else if (res == CURLE_WRITE_ERROR && ans.rc) {
		rc = ans.rc;
		if (err)
			snprintf(err, errn, "%s", rc == -E2BIG ? "answer larger than the cap" : "out of memory");
	} else {
		rc = -EIO;
		if (err)
			snprintf(err, errn, "%s", curl_easy_strerror(res));
	}
out:
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(e, CURLOPT_CONNECT_TO, NULL);
	curl_slist_free_all(h);
	curl_slist_free_all(connects);
	if (own)
		curl_easy_cleanup(own);
	return rc;
}
