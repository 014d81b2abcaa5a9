/* fuzz_policy.c - libFuzzer target: the policy loader on YAML and JSON input.
 *
 * policy_load() must either load a policy or fail with -EINVAL/-ENOMEM and a
 * NUL-terminated message; a loaded policy must be self-consistent (a hash of
 * 64 hex digits, every rule action in range) and load again from the same
 * text to the same hash. The input is also fed as the three ConfigMap keys
 * (split at two bytes chosen by its first bytes) through policy_load_parts().
 * policy_load_all() must agree with policy_load() (same result, its first
 * error found among those it keeps), keep its errors sorted by position and
 * place every one inside the text. Any violation aborts; ASan/LSan catch
 * memory errors and leaks. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_loaded(const struct policy *p)
{
	int i;

	check(strlen(p->hash) == 64);
	check(strspn(p->hash, "0123456789abcdef") == 64);
	check(p->schedulers.n > 0);
	for (i = 0; i < RULE_COUNT; i++)
		check(policy_action(p, (enum rule_id)i) <= ACTION_DRYRUN);
}

static void check_error(int rc, const struct policy_error *err)
{
	check(rc == -EINVAL || rc == -ENOMEM);
	check(memchr(err->msg, '\0', sizeof(err->msg)) != NULL);
	check(memchr(err->path, '\0', sizeof(err->path)) != NULL);
	check(rc == -ENOMEM || err->msg[0] != '\0');
}

static uint32_t count_lines(const char *text, size_t size)
{
	uint32_t n = 1;
	size_t i;

	for (i = 0; i < size; i++)
		n += text[i] == '\n' || (text[i] == '\r' && (i + 1 >= size || text[i + 1] != '\n'));
	return n;
}

static void check_all(const char *text, size_t size, int rc_first, const struct policy_error *first)
{
	struct policy_error errs[8];
	struct policy *p = NULL;
	size_t nerr = 0, i, kept;
	uint32_t lines = count_lines(text, size);
	int rc = policy_load_all(text, size, &p, errs, 8, &nerr);
	bool found = false;

	check(rc == rc_first);
	check((rc == 0) == (nerr == 0));
	check((rc == 0) == (p != NULL));
	policy_free(p);
	kept = nerr < 8 ? nerr : 8;
	for (i = 0; i < kept; i++) {
		check_error(rc, &errs[i]);
		check(errs[i].source[0] == '\0');
		check(errs[i].line <= lines + 1);   /* libyaml may report the line after the end */
		check(i == 0 || errs[i - 1].line < errs[i].line ||
		      (errs[i - 1].line == errs[i].line && errs[i - 1].col <= errs[i].col));
		found = found || strcmp(errs[i].msg, first->msg) == 0;
	}
	check(rc == 0 || rc == -ENOMEM || nerr > 8 || found);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct policy_error err;
	struct policy *p = NULL, *q = NULL;
	size_t a, b;
	int rc;

	rc = policy_load(text, size, &p, &err);
	if (rc == 0) {
		check(p != NULL);
		check_loaded(p);
		check(policy_load(text, size, &q, &err) == 0);
		check(strcmp(p->hash, q->hash) == 0);
		policy_free(q);
	} else {
		check(p == NULL);
		check_error(rc, &err);
	}
	policy_free(p);
	p = NULL;
	check_all(text, size, rc, &err);

	if (size < 2)
		return 0;
	a = data[0] % size;
	b = a + data[1] % (size - a + 1);
	rc = policy_load_parts(text, a, true, text + a, b - a, size > b, text + b, size - b, &p, &err);
	if (rc == 0)
		check_loaded(p);
	else
		check_error(rc, &err);
	policy_free(p);
	return 0;
}
