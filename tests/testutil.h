/* testutil.h - shared helpers for the cmocka tests. */
#ifndef DRA_GUARD_TESTUTIL_H
#define DRA_GUARD_TESTUTIL_H

#include <stddef.h>

/* Read a whole file; the result is NUL-terminated and malloc'd (free()), or
 * NULL. *len gets the length when len is not NULL. */
char *testutil_read_file(const char *path, size_t *len);

/* Path of a file under the repository root ($DRA_GUARD_ROOT, else "."), in a
 * static buffer overwritten by the next call. */
const char *testutil_repo_path(const char *rel);

/* testutil_repo_path(rel) for a directory that must be there: a missing one
 * fails the test. */
const char *testutil_repo_dir(const char *rel);

/* Path of a file under tests/fixtures of the repository, same buffer rules. */
const char *testutil_fixture_path(const char *rel);

/* Directories of JSON documents (relative to the repository root, NULL
 * ends the list) for the scanner and reader sweeps: tests/fixtures and its
 * subdirectories, and the golden cases. */
extern const char *const testutil_json_dirs[];

/* buf_printf() into b that fails the test when it fails (for building large
 * inputs; give b a cap big enough). */
struct buf;
void testutil_buf_add(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run a shell command (printf format); a failing command fails the test. */
void testutil_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Make a fresh directory /tmp/dra-guard-test-<name>-XXXXXX into buf (n
 * bytes). 0, or -1 when it could not be made. Remove it with
 * testutil_run("rm -rf %s", buf). */
int testutil_tmpdir(char *buf, size_t n, const char *name);

#endif
