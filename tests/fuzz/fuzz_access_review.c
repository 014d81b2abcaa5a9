/* fuzz_access_review.c - libFuzzer target: the metrics port's reading of
 * what the API server answers (TokenReview, SubjectAccessReview) and of an
 * Authorization header.
 *
 * The input is read as all three. Each must return 0, -EINVAL or -E2BIG
 * (-ENOMEM only if memory ran out); a refused TokenReview answer says not
 * authenticated and leaves nothing of a user behind; an accepted one's
 * user fields, put into a SubjectAccessReview, must make a body that is
 * JSON; a refused SubjectAccessReview answer is never allowed; a token
 * taken from a header lies inside it and holds only RFC 6750 token bytes.
 * Any disagreement aborts. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access_review.h"
#include "doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail_at(int line)
{
	fprintf(stderr, "fuzz_access_review.c:%d: check failed\n", line);
	abort();
}

#define check(cond) ((cond) ? (void)0 : fail_at(__LINE__))

static bool token_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~+/=", c);
}

static void token_answer(const char *text, size_t len)
{
	char name[64], reason[ACCESS_REVIEW_REASON_MAX];
	struct buf user, body;
	struct doc_set *set = NULL;
	bool auth = true, allowed = true;
	int rc;

	buf_init(&user, ACCESS_REVIEW_ANSWER_MAX);
	rc = access_review_token_answer(text, len, &auth, &user, name, sizeof(name));
	check(rc == 0 || rc == -EINVAL || rc == -E2BIG || rc == -ENOMEM);
	if (rc != 0)
		check(!auth && buf_len(&user) == 0 && name[0] == '\0');
	if (rc == 0 && auth) {
		check(name[0] != '\0' && buf_len(&user) > 0);
		buf_init(&body, 2 * ACCESS_REVIEW_ANSWER_MAX);
		check(access_review_sar_body(&user, "get", "/metrics", &body) == 0);
		check(doc_parse_json(buf_cstr(&body), buf_len(&body), NULL, &set, NULL) == 0);
		doc_set_free(set);
		buf_free(&body);
	}
	if (rc == 0 && !auth)
		check(buf_len(&user) == 0);
	buf_free(&user);
	rc = access_review_sar_answer(text, len, &allowed, reason);
	check(rc == 0 || rc == -EINVAL || rc == -E2BIG || rc == -ENOMEM);
	if (rc != 0)
		check(!allowed);
	check(strlen(reason) < ACCESS_REVIEW_REASON_MAX);
}

static void header(const char *text, size_t len)
{
	char *h = malloc(len + 1);
	const char *tok;
	size_t n, i;
	int rc;

	if (!h)
		return;
	memcpy(h, text, len);
	h[len] = '\0';
	rc = access_review_bearer(h, &tok, &n);
	check(rc == 0 || rc == -EINVAL || rc == -E2BIG);
	if (rc == 0) {
		check(n > 0 && n <= ACCESS_REVIEW_TOKEN_MAX && tok >= h && tok + n <= h + strlen(h));
		for (i = 0; i < n; i++)
			check(token_byte((unsigned char)tok[i]));
	}
	free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	token_answer((const char *)data, size);
	header((const char *)data, size);
	return 0;
}
