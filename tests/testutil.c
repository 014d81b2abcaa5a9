/* testutil.c - shared helpers for the cmocka tests. */
#include "testutil.h"

#include "buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

char *testutil_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	data = malloc((size_t)n + 1);
	if (!data)
		goto out;
	if (fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
		goto out;
	}
	data[n] = '\0';
	if (len)
		*len = (size_t)n;
out:
	fclose(f);
	return data;
}

static const char *join(const char *env, const char *fallback, const char *rel)
{
	static char path[4096];
	const char *root = getenv(env);

	snprintf(path, sizeof(path), "%s/%s", root && *root ? root : fallback, rel);
	return path;
}

const char *testutil_repo_path(const char *rel)
{
	return join("DRA_GUARD_ROOT", ".", rel);
}

const char *testutil_repo_dir(const char *rel)
{
	const char *dir = testutil_repo_path(rel);

	if (access(dir, R_OK | X_OK) != 0)
		fail_msg("%s is missing", dir);
	return dir;
}

const char *testutil_fixture_path(const char *rel)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s", testutil_repo_path("tests/fixtures"));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", rel);
	return path;
}

const char *const testutil_json_dirs[] = {
	"tests/fixtures",
	"tests/fixtures/versions",
	"tests/fixtures/refused",
	"tests/fixtures/admissionreviews",
	"tests/fixtures/admissionreviews/requests",
	"tests/golden/cases",
	NULL,
};

void testutil_run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

int testutil_tmpdir(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "/tmp/dra-guard-test-%s-XXXXXX", name);
	return mkdtemp(buf) ? 0 : -1;
}

void testutil_buf_add(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	assert_int_equal(rc, 0);
}
