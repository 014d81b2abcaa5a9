/* inputs.c - manifest inputs: files, directories, stdin. */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"

bool inputs_is_manifest_name(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) || (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
	       (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static int read_file(struct manifest_set *s, const char *path, size_t max_file)
{
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	char *text = NULL;
	size_t len = 0;
	char msg[128];
	int rc;

	rc = is_stdin ? fileio_read_stream(stdin, max_file, &text, &len) : fileio_read(path, max_file, &text, &len);
	if (rc == -E2BIG) {
		snprintf(msg, sizeof(msg), "cannot read: larger than %zu bytes (the limit)", max_file);
		return manifest_set_add_error(s, name, msg);
	}
	if (rc) {
		snprintf(msg, sizeof(msg), "cannot read: %s", strerror(-rc));
		return manifest_set_add_error(s, name, msg);
	}
	rc = manifest_set_add(s, name, text, len);
	free(text);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_dir(struct manifest_set *s, const char *dir, size_t max_file)
{
	char *names[INPUTS_MAX_DIR_FILES];
	char path[PATH_MAX], msg[128];
	size_t n = 0, i, dlen = strlen(dir);
	DIR *dp = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!dp) {
		snprintf(msg, sizeof(msg), "cannot read the directory: %s", strerror(errno));
		return manifest_set_add_error(s, dir, msg);
	}
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.' || !inputs_is_manifest_name(e->d_name))
			continue;
		if (n == INPUTS_MAX_DIR_FILES) {
			snprintf(msg, sizeof(msg), "more than %d manifests in one directory (the limit); none was read",
				 INPUTS_MAX_DIR_FILES);
			rc = manifest_set_add_error(s, dir, msg);
			goto out;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(names[0]), cmp_names);
	for (i = 0; i < n && rc == 0; i++) {
		struct stat st;

		if (snprintf(path, sizeof(path), "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/",
			     names[i]) >= (int)sizeof(path)) {
			rc = manifest_set_add_error(s, names[i], "cannot read: the path is too long");
			continue;
		}
		/* A subdirectory named like a manifest is not one. */
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			continue;
		rc = read_file(s, path, max_file);
	}
out:
	closedir(dp);
	for (i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

int inputs_read(struct manifest_set *s, const char *path, size_t max_file)
{
	struct stat st;

	if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return read_dir(s, path, max_file);
	return read_file(s, path, max_file);
}
