/* fileio.h - reading whole files with a size cap.
 *
 * Policy files, certificates and manifests are read whole; a file over the
 * cap is an error (-E2BIG), never a truncated read. */
#ifndef DRA_GUARD_FILEIO_H
#define DRA_GUARD_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Read path whole into a malloc'd, NUL-terminated buffer (*out, free()).
 * Returns 0, -E2BIG when larger than max bytes, -EISDIR for a directory,
 * or -errno. */
int fileio_read(const char *path, size_t max, char **out, size_t *len);

/* The same for an open stream (e.g. stdin), read to its end. */
int fileio_read_stream(FILE *f, size_t max, char **out, size_t *len);

#endif
