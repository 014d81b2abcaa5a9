/* pending_cmd.c - dra-guard pending: the claims a running replica holds back
 * now (its GET /debug/pending), as a table or as the JSON it serves.
 *
 * Refusals are not in the cluster's state (a refused write leaves no trace
 * in the API), so this reads a running replica rather than a --view dump;
 * each replica lists the refusals it answered itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "access_review.h"
#include "buf.h"
#include "cli.h"
#include "doc.h"
#include "fileio.h"
#include "kube_client.h"
#include "options.h"

#define PENDING_BODY_MAX ((size_t)64 << 20)

struct fetch_opts {
	const char *url;
	const char *token_file;
	const char *cacert;
	const char *connect;
};

/* Whether url is plain HTTP to a host other than loopback: a bearer token
 * sent there crosses the network in the clear. */
static bool clear_text_off_loopback(const char *url)
{
	static const char *const loopback[] = { "http://127.", "http://localhost:", "http://localhost/",
						"http://[::1]" };
	size_t i;

	if (strncmp(url, "http://", 7) != 0)
		return false;
	for (i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++)
		if (strncmp(url, loopback[i], strlen(loopback[i])) == 0 || strcmp(url, "http://localhost") == 0)
			return false;
	return true;
}

/* The token in path (one token, a trailing newline allowed), malloc'd into
 * *out. */
static int token_read(const char *path, char **out, char *err, size_t errn)
{
	char *text = NULL, *line = NULL;
	const char *tok;
	size_t len = 0, tlen;
	int rc = fileio_read(path, ACCESS_REVIEW_TOKEN_MAX + 2, &text, &len);

	*out = NULL;
	if (rc) {
		snprintf(err, errn, "--token-file %.400s: %s", path, strerror(-rc));
		return rc;
	}
	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	rc = -ENOMEM;
	if ((line = malloc(len + 8)) != NULL) {
		memcpy(line, "Bearer ", 7);
		memcpy(line + 7, text, len);
		line[len + 7] = '\0';
		rc = access_review_bearer(line, &tok, &tlen);
		if (rc == 0 && !(*out = strndup(tok, tlen)))
			rc = -ENOMEM;
	}
	if (rc)
		snprintf(err, errn, "--token-file %.400s: not one bearer token of at most %zu bytes", path,
			 ACCESS_REVIEW_TOKEN_MAX);
	if (line)
		memset(line, 0, len + 7);
	free(line);
	if (text)
		memset(text, 0, len);
	free(text);
	return rc;
}

/* The replica's address, CA and token as an API client's configuration:
 * the same requests, to another server. */
static int fetch_config(const struct fetch_opts *o, size_t base_len, struct kube_config *cfg, char *err,
			size_t errn)
{
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->server, sizeof(cfg->server), "%.*s", (int)base_len, o->url);
	snprintf(cfg->source, sizeof(cfg->source), "--url");
	if (o->cacert) {
		if (snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s", o->cacert) >= (int)sizeof(cfg->ca_file)) {
			snprintf(err, errn, "--cacert: longer than %zu bytes", sizeof(cfg->ca_file) - 1);
			return -EINVAL;
		}
		rc = kube_config_ca_refresh(cfg, 0, true);
		if (rc < 0) {
			snprintf(err, errn, "--cacert %.400s: %s", o->cacert,
				 rc == -EINVAL ? "no certificate in it" : strerror(-rc));
			return rc;
		}
	}
	if (o->token_file && (rc = token_read(o->token_file, &cfg->token, err, errn)) != 0) {
		kube_config_free(cfg);
		return rc;
	}
	return 0;
}

static int fetch(const struct fetch_opts *o, struct buf *out, char *err, size_t errn)
{
	const struct kube_request rq = { .method = "GET", .path = "/debug/pending", .timeout_s = 30 };
	struct kube_client_options opt = { .allow_http = true, .connect_to = o->connect };
	struct kube_client *client = NULL;
	struct kube_config cfg;
	char url[2048], why[256];
	const char *base = o->url;
	long code = 0;
	size_t len = strlen(base);
	int rc;

	while (len && base[len - 1] == '/')
		len--;
	if (len + sizeof("/debug/pending") > sizeof(url) || len >= sizeof(cfg.server)) {
		snprintf(err, errn, "--url: longer than %zu bytes", sizeof(cfg.server) - 1);
		return -EINVAL;
	}
	snprintf(url, sizeof(url), "%.*s/debug/pending", (int)len, base);
	if (o->token_file && clear_text_off_loopback(url)) {
		snprintf(err, errn, "--token-file with %.400s: the token would cross the network in the clear; use an "
			 "https:// URL (the checked metrics port serves HTTPS) or a port-forward to loopback", base);
		return -EINVAL;
	}
	if ((rc = fetch_config(o, len, &cfg, err, errn)) != 0)
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		kube_config_free(&cfg);
		snprintf(err, errn, "cannot initialise libcurl");
		return -ENOMEM;
	}
	rc = kube_client_new(&cfg, &opt, &client);
	if (rc == -E2BIG)
		snprintf(err, errn, "--connect: longer than %d bytes", 317);
	else if (rc)
		snprintf(err, errn, "out of memory");
	if (rc == 0) {
		rc = kube_client_request(client, NULL, &rq, &code, out, why, sizeof(why));
		if (rc == -E2BIG)
			snprintf(err, errn, "GET %.400s: answer larger than 64 MiB", url);
		else if (rc)
			snprintf(err, errn, "GET %.400s: %.180s", url, why);
		if (rc && rc != -ENOMEM)
			rc = -EIO;
	}
	/* The token is no longer needed in memory (kube_config_free() wipes it). */
	kube_client_free(client);
	kube_config_free(&cfg);
	curl_global_cleanup();
	if (rc)
		return rc;
	if (code == 404) {
		snprintf(err, errn, "GET %.400s: 404: this replica emits no Events (no cluster view, or --events=false)",
			 url);
		return -ENOENT;
	}
	if (code == 401 || code == 403) {
		snprintf(err, errn, "GET %.400s: HTTP %ld: the replica checks its readers: %s", url, code,
			 code == 401 ? "--token-file with a token the API server knows"
				     : "a token whose user is bound to ClusterRole dra-guard-debug-reader");
		return -EACCES;
	}
	if (code != 200) {
		snprintf(err, errn, "GET %.400s: HTTP %ld", url, code);
		return -EIO;
	}
	return 0;
}

static const char *text_of(const struct doc_node *m, const char *key)
{
	const struct doc_node *n = doc_map_get(m, key);

	return n && (n->type == DOC_STRING || n->type == DOC_NUMBER) ? n->text.ptr : NULL;
}

/* "4m30s" from seconds as served. */
static void duration(const char *secs, char *out, size_t n)
{
	double s = strtod(secs, NULL);
	long long whole = (long long)s;

	if (whole >= 3600)
		snprintf(out, n, "%lldh%lldm", whole / 3600, whole % 3600 / 60);
	else if (whole >= 60)
		snprintf(out, n, "%lldm%llds", whole / 60, whole % 60);
	else
		snprintf(out, n, "%.1fs", s);
}

/* The claims list: a header and one line a claim. */
static int print_rows(FILE *f, const struct doc_node *claims, char *err, size_t errn)
{
	size_t i;

	if (claims->n)
		fprintf(f, "%-40s %-30s %-22s %-21s %-9s %s\n", "CLAIM", "POD", "REASON", "SINCE", "PENDING", "REFUSALS");
	for (i = 0; i < claims->n; i++) {
		const struct doc_node *c = claims->items[i];
		const char *ns, *name, *pod, *reason, *since, *secs, *refusals;
		char claim[600], dur[32];

		if (c->type != DOC_MAP) {
			snprintf(err, errn, "claims[%zu] is not an object", i);
			return -EBADMSG;
		}
		ns = text_of(c, "namespace"), name = text_of(c, "name"), pod = text_of(c, "pod");
		reason = text_of(c, "reason"), since = text_of(c, "since"), secs = text_of(c, "seconds");
		refusals = text_of(c, "refusals");
		if (!ns || !name || !pod || !reason || !since || !secs || !refusals) {
			snprintf(err, errn, "claims[%zu] lacks a field of GET /debug/pending", i);
			return -EBADMSG;
		}
		snprintf(claim, sizeof(claim), "%s/%s", ns, name);
		duration(secs, dur, sizeof(dur));
		fprintf(f, "%-40s %-30s %-22s %-21s %-9s %s\n", claim, pod[0] ? pod : "-", reason, since, dur, refusals);
	}
	return 0;
}

int pending_print_claims(FILE *f, const char *json, size_t len, char *err, size_t errn)
{
	struct doc_set *set = NULL;
	struct doc_error derr;
	const struct doc_node *claims;
	int rc;

	if (doc_parse_json(json, len, NULL, &set, &derr) != 0) {
		snprintf(err, errn, "the claims are not JSON: %s", derr.msg);
		return -EBADMSG;
	}
	claims = doc_set_root(set, 0);
	if (!claims || claims->type != DOC_SEQ) {
		snprintf(err, errn, "the claims are not a list");
		rc = -EBADMSG;
	} else {
		rc = print_rows(f, claims, err, errn);
	}
	doc_set_free(set);
	return rc;
}

static int print_table(const char *text, size_t len, char *err, size_t errn)
{
	struct doc_set *set = NULL;
	struct doc_error derr;
	const struct doc_node *root, *claims;
	int rc = 0;

	if (doc_parse_json(text, len, NULL, &set, &derr) != 0) {
		snprintf(err, errn, "the answer is not JSON: %s", derr.msg);
		return -EBADMSG;
	}
	root = doc_set_root(set, 0);
	claims = root && root->type == DOC_MAP ? doc_map_get(root, "claims") : NULL;
	if (!claims || claims->type != DOC_SEQ || !text_of(root, "instance")) {
		snprintf(err, errn, "the answer has no \"instance\" and \"claims\" list: not GET /debug/pending");
		rc = -EBADMSG;
		goto out;
	}
	printf("replica %s: %zu claim%s refused now\n", text_of(root, "instance"), claims->n, claims->n == 1 ? "" : "s");
	rc = print_rows(stdout, claims, err, errn);
out:
	doc_set_free(set);
	return rc;
}

struct pending_args {
	struct fetch_opts fo;
	bool json;
};

#define P(field) OPTIONS_AT(struct pending_args, field)

static const struct options_choice pending_outputs[] = {
	{ "table", 0, false }, { "json", 1, false }, { NULL, 0, false },
};

static const struct options_entry pending_flags[] = {
	{ .name = "url", .type = OPTIONS_STRING, P(fo.url), .def = "http://127.0.0.1:9090", .arg = "URL",
	  .help = "the replica's metrics address (kubectl port-forward to a replica's port 9090 in a cluster)" },
	{ .name = "token-file", .type = OPTIONS_STRING, P(fo.token_file), .arg = "FILE",
	  .help = "send the bearer token in FILE: a metrics port that checks its readers"
	  " (--metrics-auth=kubernetes) wants one whose user may get /debug/pending (ClusterRole"
	  " dra-guard-debug-reader)" },
	{ .name = "cacert", .type = OPTIONS_STRING, P(fo.cacert), .arg = "FILE",
	  .help = "the CA that signed the replica's serving certificate (https)" },
	{ .name = "connect", .type = OPTIONS_STRING, P(fo.connect), .arg = "ADDR:PORT",
	  .help = "connect there, checking the certificate for the URL's host"
	  " (https://dra-guard.dra-guard.svc:9090 through a port-forward)" },
	{ .name = "output", .type = OPTIONS_ENUM, P(json), .choices = pending_outputs, .arg = "FORMAT",
	  .def_help = "table", .help = "table or json (the answer as served)" },
};

static const struct options_command pending_command = {
	.name = "pending",
	.synopsis = "[FLAGS]",
	.intro = "Lists the claims a running replica refuses now (its GET /debug/pending on the metrics\n"
		 "port): namespace/claim, Pod, the reason (the refusing rule in CamelCase), since when,\n"
		 "for how long and how many refusals. Each replica lists the requests it answered;\n"
		 "a claim allocated since (as the replica's cluster view shows) is gone from the list.\n",
	.outro = "Exit status: 0 (also when nothing is pending), 2 when the replica cannot be asked or\n"
		 "its answer is not what it serves.\n",
	.entries = pending_flags,
	.nentries = sizeof(pending_flags) / sizeof(pending_flags[0]),
	.max_args = 0,
};

int pending_main(int argc, char **argv)
{
	struct pending_args args;
	char err[600];
	struct buf body;
	int rc, nargs, code = 2;

	memset(&args, 0, sizeof(args));
	rc = options_cli(&pending_command, argc, argv, NULL, &args, &nargs);
	if (rc >= 0)
		return rc;
	buf_init(&body, PENDING_BODY_MAX);
	rc = fetch(&args.fo, &body, err, sizeof(err));
	if (rc == 0 && args.json) {
		struct doc_set *set = NULL;

		/* Printed as served, but only when it is JSON at all. */
		if (doc_parse_json(buf_cstr(&body), buf_len(&body), NULL, &set, NULL) != 0) {
			fprintf(stderr, "dra-guard pending: the answer is not JSON\n");
			buf_free(&body);
			return 2;
		}
		doc_set_free(set);
		fwrite(buf_cstr(&body), 1, buf_len(&body), stdout);
		putchar('\n');
		code = 0;
	} else if (rc == 0) {
		rc = print_table(buf_cstr(&body), buf_len(&body), err, sizeof(err));
		code = rc == 0 ? 0 : 2;
	}
	if (code)
		fprintf(stderr, "dra-guard pending: %s\n", err);
	buf_free(&body);
	return code;
}
