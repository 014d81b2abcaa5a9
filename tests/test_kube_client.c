/* test_kube_client.c - the API client: paths built within their cap, answers
 * kept within theirs (an answer over the cap is an error, never cut), the
 * whole token in the Authorization header, and the token read again after a
 * 401. Requests go to a loopback HTTP server of the test's own. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube_client.h"
#include "testutil.h"

/* --- paths ------------------------------------------------------------------------- */

static void test_path_appends_fit_or_fail_where_they_do_not(void **state)
{
	static struct kube_client_path p;
	char big[KUBE_CLIENT_PATH_MAX];
	size_t fill;

	(void)state;
	kube_client_path_init(&p);
	assert_string_equal(kube_client_path_get(&p), "");
	assert_int_equal(kube_client_path_add(&p, "/api/v1/%s?", "pods"), 0);
	assert_int_equal(kube_client_path_add(&p, "limit=%u", 500u), 0);
	assert_string_equal(kube_client_path_get(&p), "/api/v1/pods?limit=500");
	/* Fill up to one byte short of the cap (the NUL takes the last one). */
	fill = KUBE_CLIENT_PATH_MAX - 1 - p.len;
	memset(big, 'x', fill);
	big[fill] = '\0';
	assert_int_equal(kube_client_path_add(&p, "%s", big), 0);
	assert_int_equal(p.len, KUBE_CLIENT_PATH_MAX - 1);
	/* Full: one more byte fails at this append and changes nothing. */
	assert_int_equal(kube_client_path_add(&p, "y"), -E2BIG);
	assert_int_equal(p.len, KUBE_CLIENT_PATH_MAX - 1);
	assert_int_equal(strlen(kube_client_path_get(&p)), KUBE_CLIENT_PATH_MAX - 1);
	assert_int_equal(kube_client_path_add(&p, "%s", ""), 0);
}

static void test_path_append_that_does_not_fit_leaves_it_as_it_was(void **state)
{
	static struct kube_client_path p;
	char big[KUBE_CLIENT_PATH_MAX];

	(void)state;
	kube_client_path_init(&p);
	assert_int_equal(kube_client_path_add(&p, "/apis/x?"), 0);
	memset(big, 'c', sizeof(big) - 100);
	big[sizeof(big) - 100] = '\0';
	assert_int_equal(kube_client_path_add(&p, "%s", big), 0);
	/* 200 more bytes would pass the cap: refused whole, not cut. */
	memset(big, 'd', 200);
	big[200] = '\0';
	assert_int_equal(kube_client_path_add(&p, "%s", big), -E2BIG);
	assert_int_equal(p.len, strlen("/apis/x?") + sizeof(big) - 100);
	assert_null(strchr(kube_client_path_get(&p), 'd'));
	assert_int_equal(kube_client_path_add_escaped(&p, big), -E2BIG);
	assert_null(strchr(kube_client_path_get(&p), 'd'));
}

static void test_path_escapes_all_but_unreserved(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "abcXYZ019-._~", "abcXYZ019-._~" },
		{ "a b", "a%20b" },
		{ "k=v&x/y?z#%+", "k%3Dv%26x%2Fy%3Fz%23%25%2B" },
		{ "eyJ2Ijoi\xc3\xa9\n", "eyJ2Ijoi%C3%A9%0A" },
	};
	static struct kube_client_path p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_client_path_init(&p);
		assert_int_equal(kube_client_path_add(&p, "&continue="), 0);
		assert_int_equal(kube_client_path_add_escaped(&p, cases[i].in), 0);
		assert_string_equal(kube_client_path_get(&p) + strlen("&continue="), cases[i].out);
	}
}

static void test_escape_at_the_cap(void **state)
{
	static struct kube_client_path p;
	char big[KUBE_CLIENT_PATH_MAX];
	size_t fill;

	(void)state;
	kube_client_path_init(&p);
	/* Room for exactly one escaped byte ("%2F": 3) and the NUL. */
	fill = KUBE_CLIENT_PATH_MAX - 4;
	memset(big, 'a', fill);
	big[fill] = '\0';
	assert_int_equal(kube_client_path_add(&p, "%s", big), 0);
	assert_int_equal(kube_client_path_add_escaped(&p, "//"), -E2BIG);
	assert_int_equal(p.len, fill);
	assert_int_equal(kube_client_path_add_escaped(&p, "/"), 0);
	assert_int_equal(p.len, KUBE_CLIENT_PATH_MAX - 1);
	assert_string_equal(kube_client_path_get(&p) + fill, "%2F");
}

/* --- a loopback server --------------------------------------------------------------- */

struct server {
	int fd;
	int port;
	pthread_t thread;
	pthread_mutex_t mu;
	int status;                   /* of the next answers */
	size_t body_len;              /* bytes of 'b' in them */
	char last[64 * 1024];         /* the last request, headers and body */
	size_t last_len;
	int served;
};

static struct server srv;

static void serve_one(int c)
{
	char req[64 * 1024];
	size_t len = 0, want = 0, body_len;
	int status;
	char head[256], *end, *cl;
	ssize_t n;
	char *body;

	for (;;) {
		n = recv(c, req + len, sizeof(req) - 1 - len, 0);
		if (n <= 0)
			return;
		len += (size_t)n;
		req[len] = '\0';
		if (!want && (end = strstr(req, "\r\n\r\n")) != NULL) {
			cl = strcasestr(req, "\r\nContent-Length:");
			want = (size_t)(end + 4 - req) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (want && len >= want)
			break;
		if (len == sizeof(req) - 1)
			return;
	}
	pthread_mutex_lock(&srv.mu);
	memcpy(srv.last, req, len + 1);
	srv.last_len = len;
	srv.served++;
	status = srv.status;
	body_len = srv.body_len;
	pthread_mutex_unlock(&srv.mu);
	body = malloc(body_len + 1);
	assert_non_null(body);
	memset(body, 'b', body_len);
	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n", status, body_len);
	if (send(c, head, strlen(head), MSG_NOSIGNAL) > 0 && body_len)
		(void)send(c, body, body_len, MSG_NOSIGNAL);
	free(body);
}

static void *server_run(void *arg)
{
	int c;

	(void)arg;
	while ((c = accept(srv.fd, NULL, NULL)) >= 0) {
		serve_one(c);
		close(c);
	}
	return NULL;
}

static char dir[256];

static int setup(void **state)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	(void)state;
	if (testutil_tmpdir(dir, sizeof(dir), "kube-client") != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.fd = socket(AF_INET, SOCK_STREAM, 0);
	if (srv.fd < 0 || bind(srv.fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(srv.fd, 8) != 0 ||
	    getsockname(srv.fd, (struct sockaddr *)&a, &alen) != 0)
		return -1;
	srv.port = ntohs(a.sin_port);
	pthread_mutex_init(&srv.mu, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return pthread_create(&srv.thread, NULL, server_run, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	shutdown(srv.fd, SHUT_RDWR);
	close(srv.fd);
	pthread_join(srv.thread, NULL);
	pthread_mutex_destroy(&srv.mu);
	curl_global_cleanup();
	testutil_run("rm -rf %s", dir);
	return 0;
}

static void answer_with(int status, size_t body_len)
{
	pthread_mutex_lock(&srv.mu);
	srv.status = status;
	srv.body_len = body_len;
	pthread_mutex_unlock(&srv.mu);
}

static struct kube_client *client_with_token(const char *token, const char *token_file)
{
	struct kube_client_options opt = { .allow_http = true };
	struct kube_client *c = NULL;
	struct kube_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.server, sizeof(cfg.server), "http://127.0.0.1:%d", srv.port);
	if (token) {
		cfg.token = strdup(token);
		assert_non_null(cfg.token);
	}
	if (token_file) {
		snprintf(cfg.token_file, sizeof(cfg.token_file), "%s", token_file);
		assert_int_equal(kube_config_token_refresh(&cfg, 0, true), 0);
	}
	assert_int_equal(kube_client_new(&cfg, &opt, &c), 0);
	assert_null(cfg.token);
	return c;
}

/* --- answers within their cap -------------------------------------------------------- */

static void test_answer_over_the_cap_is_an_error_not_a_cut(void **state)
{
	static const struct {
		size_t answer, cap;
		int rc;
	} cases[] = {
		{ 0, 16 * 1024, 0 },
		{ 16 * 1024, 16 * 1024, 0 },
		{ 20000, 64 * 1024, 0 },
		/* An Event sink's answer past 16 KiB was once dropped silently. */
		{ 16 * 1024 + 1, 16 * 1024, -E2BIG },
		{ 20000, 16 * 1024, -E2BIG },
		{ 300 * 1024, 256 * 1024, -E2BIG },
	};
	const struct kube_request rq = { .method = "GET", .path = "/apis/x", .timeout_s = 10 };
	struct kube_client *c = client_with_token(NULL, NULL);
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf out;
		long status = -1;
		int rc;

		buf_init(&out, cases[i].cap);
		answer_with(200, cases[i].answer);
		rc = kube_client_request(c, NULL, &rq, &status, &out, err, sizeof(err));
		assert_int_equal(rc, cases[i].rc);
		/* The status came before the body: known either way. */
		assert_int_equal(status, 200);
		if (rc == 0)
			assert_int_equal(buf_len(&out), cases[i].answer);
		else
			assert_string_equal(err, "answer larger than the cap");
		buf_free(&out);
	}
	kube_client_free(c);
}

static void test_request_carries_method_body_and_whole_token(void **state)
{
	char token[12 * 1024 + 1], *want;
	const struct kube_request rq = { .method = "PATCH", .path = "/api/v1/namespaces/a/pods/b",
					 .body = "{\"k\":1}", .body_len = 7,
					 .content_type = "application/merge-patch+json", .timeout_s = 10 };
	struct kube_client *c;
	struct buf out;
	long status = 0;
	CURL *e = curl_easy_init();

	(void)state;
	/* A token longer than any fixed header buffer: sent whole. */
	memset(token, 't', sizeof(token) - 1);
	token[sizeof(token) - 1] = '\0';
	token[0] = 'A';
	token[sizeof(token) - 2] = 'Z';
	c = client_with_token(token, NULL);
	buf_init(&out, 1024);
	answer_with(201, 2);
	/* Twice on one handle: it is reset between requests. */
	assert_int_equal(kube_client_request(c, e, &rq, &status, &out, NULL, 0), 0);
	assert_int_equal(kube_client_request(c, e, &rq, &status, &out, NULL, 0), 0);
	assert_int_equal(status, 201);
	assert_int_equal(buf_len(&out), 2);
	pthread_mutex_lock(&srv.mu);
	assert_non_null(strstr(srv.last, "PATCH /api/v1/namespaces/a/pods/b HTTP/1.1\r\n"));
	assert_non_null(strstr(srv.last, "\r\nContent-Type: application/merge-patch+json\r\n"));
	assert_non_null(strstr(srv.last, "\r\nAccept: application/json\r\n"));
	assert_non_null(strstr(srv.last, "\r\nUser-Agent: dra-guard\r\n"));
	assert_non_null(strstr(srv.last, "\r\n\r\n{\"k\":1}"));
	want = malloc(strlen(token) + 64);
	assert_non_null(want);
	snprintf(want, strlen(token) + 64, "\r\nAuthorization: Bearer %s\r\n", token);
	assert_non_null(strstr(srv.last, want));
	pthread_mutex_unlock(&srv.mu);
	free(want);
	buf_free(&out);
	curl_easy_cleanup(e);
	kube_client_free(c);
}

static void write_token(const char *path, const char *tok)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(tok, f);
	fclose(f);
}

static void test_token_read_again_after_a_401(void **state)
{
	char path[512];
	const struct kube_request rq = { .method = "GET", .path = "/apis/x", .timeout_s = 10 };
	struct kube_client *c;
	struct buf out;
	long status = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/token", dir);
	write_token(path, "first\n");
	c = client_with_token(NULL, path);
	buf_init(&out, 1024);
	answer_with(200, 0);
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, NULL, 0), 0);
	pthread_mutex_lock(&srv.mu);
	assert_non_null(strstr(srv.last, "Authorization: Bearer first\r\n"));
	pthread_mutex_unlock(&srv.mu);
	/* Rotated in place, younger than KUBE_TOKEN_MAX_AGE_S: the old one is
	 * still sent, until the server refuses it. */
	write_token(path, "second\n");
	answer_with(401, 0);
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, NULL, 0), 0);
	assert_int_equal(status, 401);
	pthread_mutex_lock(&srv.mu);
	assert_non_null(strstr(srv.last, "Authorization: Bearer first\r\n"));
	pthread_mutex_unlock(&srv.mu);
	/* The 401 had it read again. */
	answer_with(200, 0);
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, NULL, 0), 0);
	assert_int_equal(status, 200);
	pthread_mutex_lock(&srv.mu);
	assert_non_null(strstr(srv.last, "Authorization: Bearer second\r\n"));
	pthread_mutex_unlock(&srv.mu);
	/* Rotated again, no 401: kept until it is old. */
	write_token(path, "third\n");
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, NULL, 0), 0);
	pthread_mutex_lock(&srv.mu);
	assert_non_null(strstr(srv.last, "Authorization: Bearer second\r\n"));
	pthread_mutex_unlock(&srv.mu);
	buf_free(&out);
	kube_client_free(c);
}

static void test_no_answer_and_refused_paths(void **state)
{
	static struct kube_client_path p;
	struct kube_client_options opt = { 0 };
	struct kube_client *c, *c2;
	struct kube_config cfg;
	struct curl_slist *h = NULL;
	struct kube_request rq = { .method = "GET", .path = "/apis/x", .timeout_s = 10 };
	struct buf out;
	char err[256], *long_path;
	long status = 7;
	CURL *e = curl_easy_init();

	(void)state;
	/* https only by default: the loopback server's http:// is refused
	 * before a byte is sent. */
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.server, sizeof(cfg.server), "http://127.0.0.1:%d", srv.port);
	assert_int_equal(kube_client_new(&cfg, &opt, &c), 0);
	buf_init(&out, 1024);
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, err, sizeof(err)), -EIO);
	assert_int_equal(status, 0);
	assert_true(err[0] != '\0');
	/* A path longer than a kube_client_path holds is refused, not cut. */
	long_path = malloc(KUBE_CLIENT_PATH_MAX + 1);
	assert_non_null(long_path);
	memset(long_path, 'p', KUBE_CLIENT_PATH_MAX);
	long_path[0] = '/';
	long_path[KUBE_CLIENT_PATH_MAX] = '\0';
	assert_int_equal(kube_client_prepare(c, e, long_path, 10, NULL, &h), -E2BIG);
	assert_null(h);
	rq.path = long_path;
	assert_int_equal(kube_client_request(c, NULL, &rq, &status, &out, err, sizeof(err)), -E2BIG);
	free(long_path);
	/* --connect's target too long for curl's CONNECT_TO entry. */
	memset(p.s, '1', 400);
	p.s[400] = '\0';
	opt.connect_to = p.s;
	assert_int_equal(kube_client_new(&cfg, &opt, &c2), -E2BIG);
	assert_null(c2);
	buf_free(&out);
	curl_easy_cleanup(e);
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_appends_fit_or_fail_where_they_do_not),
		cmocka_unit_test(test_path_append_that_does_not_fit_leaves_it_as_it_was),
		cmocka_unit_test(test_path_escapes_all_but_unreserved),
		cmocka_unit_test(test_escape_at_the_cap),
		cmocka_unit_test(test_answer_over_the_cap_is_an_error_not_a_cut),
		cmocka_unit_test(test_request_carries_method_body_and_whole_token),
		cmocka_unit_test(test_token_read_again_after_a_401),
		cmocka_unit_test(test_no_answer_and_refused_paths),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
