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
#include "options.h"

#define PENDING_BODY_MAX ((size_t)64 << 20)

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	return buf_add(ctx, p, size * n) == 0 ? size * n : 0;
}

struct fetch_opts {
	const char *url;
	const char *token_file;
	const char *cacert;
	const char *connect;
};

/* "Authorization: Bearer TOKEN" from a token file (one token, a trailing
 * newline allowed) into hdr. */
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

static int token_header(const char *path, char *hdr, size_t n, char *err, size_t errn)
{
	char *text = NULL, *line = NULL;
	const char *tok;
	size_t len = 0, tlen;
	int rc = fileio_read(path, ACCESS_REVIEW_TOKEN_MAX + 2, &text, &len);

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
		if (rc == 0 && snprintf(hdr, n, "Authorization: Bearer %.*s", (int)tlen, tok) >= (int)n)
			rc = -E2BIG;
	}
	if (rc)
		snprintf(err, errn, "--token-file %.400s: not one bearer token of at most %zu bytes", path,
			 ACCESS_REVIEW_TOKEN_MAX);
	free(line);
	free(text);
	return rc;
}

static int fetch(const struct fetch_opts *o, struct buf *out, char *err, size_t errn)
{
	char url[2048], hdr[ACCESS_REVIEW_TOKEN_MAX + 64], connect_to[320];
	struct curl_slist *headers = NULL, *connects = NULL;
	const char *base = o->url;
	CURL *e;
	CURLcode res;
	long code = 0;
	size_t len = strlen(base);
	int rc;

	while (len && base[len - 1] == '/')
		len--;
	if (len + sizeof("/debug/pending") > sizeof(url)) {
		snprintf(err, errn, "--url: longer than %zu bytes", sizeof(url) - sizeof("/debug/pending"));
		return -EINVAL;
	}
	snprintf(url, sizeof(url), "%.*s/debug/pending", (int)len, base);
	if (o->token_file && clear_text_off_loopback(url)) {
		snprintf(err, errn, "--token-file with %.400s: the token would cross the network in the clear; use an "
			 "https:// URL (the checked metrics port serves HTTPS) or a port-forward to loopback", base);
		return -EINVAL;
	}
	if (o->token_file && (rc = token_header(o->token_file, hdr, sizeof(hdr), err, errn)) != 0)
		return rc;
	if (o->connect && snprintf(connect_to, sizeof(connect_to), "::%s", o->connect) >= (int)sizeof(connect_to)) {
		snprintf(err, errn, "--connect: longer than %zu bytes", sizeof(connect_to) - 3);
		return -EINVAL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(e = curl_easy_init())) {
		snprintf(err, errn, "cannot initialise libcurl");
		return -ENOMEM;
	}
	if ((o->token_file && !(headers = curl_slist_append(NULL, hdr))) ||
	    (o->connect && !(connects = curl_slist_append(NULL, connect_to)))) {
		curl_slist_free_all(headers);
		curl_easy_cleanup(e);
		curl_global_cleanup();
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	if (headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	if (connects)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, connects);
	if (o->cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, o->cacert);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	res = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(e);
	curl_slist_free_all(headers);
	curl_slist_free_all(connects);
	/* The token is no longer needed in memory. */
	memset(hdr, 0, sizeof(hdr));
	curl_global_cleanup();
	if (res != CURLE_OK) {
		snprintf(err, errn, "GET %.400s: %s", url, res == CURLE_WRITE_ERROR ? "answer larger than 64 MiB"
			 : curl_easy_strerror(res));
		return -EIO;
	}
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
