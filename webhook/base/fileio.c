/* fileio.c - reading whole files with a size cap. */
#include "fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"

int fileio_read_stream(FILE *f, size_t max, char **out, size_t *len)
{
	struct buf b;
	char chunk[65536];
	size_t n;
	int rc = 0;

	*out = NULL;
	*len = 0;
	buf_init(&b, max);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		rc = buf_add(&b, chunk, n);
		if (rc)
			goto out;
	}
	if (ferror(f)) {
		rc = -EIO;
		goto out;
	}
	rc = buf_take(&b, out, len);
out:
	buf_free(&b);
	return rc;
}

int fileio_read(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	int rc;

	*out = NULL;
	*len = 0;
	if (!f)
		return -errno;
	/* fopen() opens a directory; reading it then fails as EIO. */
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return -EISDIR;
	}
	rc = fileio_read_stream(f, max, out, len);
	fclose(f);
	return rc;
}
