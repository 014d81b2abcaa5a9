/* testutil.c - shared helpers for the cmocka tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

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

const char *testutil_shared_path(const char *rel)
{
	return join("DRA_GUARD_SHARED", "../shared", rel);
}
