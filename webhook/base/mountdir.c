/* mountdir.c - read files from a kubelet-filled directory, one version. */
#include "mountdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hmap.h"

#define MOUNTDIR_DATA_LINK "..data"
/* A swap during every one of this many reads in a row is not a race but a
 * directory that never settles: report it instead of spinning. */
#define MOUNTDIR_RETRIES 8

/* The ..data target into buf; "" when dir has no ..data symlink. */
static int data_target(const char *dir, char *buf, size_t n)
{
	char path[PATH_MAX];
	ssize_t len;

	if (snprintf(path, sizeof(path), "%s/%s", dir, MOUNTDIR_DATA_LINK) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	len = readlink(path, buf, n - 1);
	if (len < 0) {
		buf[0] = '\0';
		return (errno == ENOENT || errno == EINVAL) ? 0 : -errno;
	}
	buf[len] = '\0';
	return 0;
}

static int read_one(int dfd, struct mountdir_file *f, char *err, size_t errn)
{
	struct stat st;
	size_t cap, len = 0;
	char *data = NULL;
	int fd, rc = 0;

	fd = openat(dfd, f->name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT && f->optional)
			return 0;
		snprintf(err, errn, "%s: %s", f->name, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		snprintf(err, errn, "%s: %s", f->name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errn, "%s: not a regular file", f->name);
		goto out;
	}
	/* Read up to max + 1 bytes: the size is checked on what arrives, not
	 * on st_size, which a file being rewritten can get wrong. */
	cap = (size_t)st.st_size < f->max ? (size_t)st.st_size + 1 : f->max + 1;
	data = malloc(cap + 1);
	if (!data) {
		rc = -ENOMEM;
		snprintf(err, errn, "%s: out of memory", f->name);
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			char *p;

			if (cap > f->max)
				break;
			cap = cap * 2 > f->max + 1 ? f->max + 1 : cap * 2;
			p = realloc(data, cap + 1);
			if (!p) {
				rc = -ENOMEM;
				snprintf(err, errn, "%s: out of memory", f->name);
				goto out;
			}
			data = p;
		}
		r = read(fd, data + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			snprintf(err, errn, "%s: %s", f->name, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > f->max) {
		rc = -EFBIG;
		snprintf(err, errn, "%s: larger than %zu bytes", f->name, f->max);
		goto out;
	}
	data[len] = '\0';
	f->data = data;
	f->len = len;
	f->present = true;
	data = NULL;
out:
	if (data) {
		memset(data, 0, cap + 1);
		free(data);
	}
	close(fd);
	return rc;
}

void mountdir_release(struct mountdir_file *files, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (files[i].data) {
			memset(files[i].data, 0, files[i].len);
			free(files[i].data);
		}
		files[i].data = NULL;
		files[i].len = 0;
		files[i].present = false;
	}
}

int mountdir_read(const char *dir, struct mountdir_file *files, size_t n, char *err, size_t errn)
{
	char before[PATH_MAX], after[PATH_MAX], path[PATH_MAX];
	int attempt, rc = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		files[i].present = false;
		files[i].data = NULL;
		files[i].len = 0;
	}
	for (attempt = 0; attempt < MOUNTDIR_RETRIES; attempt++) {
		int dfd;

		rc = data_target(dir, before, sizeof(before));
		if (rc != 0) {
			snprintf(err, errn, "%s/%s: %s", dir, MOUNTDIR_DATA_LINK, strerror(-rc));
			return rc;
		}
		if (before[0])
			snprintf(path, sizeof(path), "%s/%s", dir, MOUNTDIR_DATA_LINK);
		else
			snprintf(path, sizeof(path), "%s", dir);
		dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			rc = -errno;
			/* ..data vanished between readlink and open: a swap; retry. */
			if (before[0] && rc == -ENOENT)
				continue;
			snprintf(err, errn, "%s: %s", path, strerror(-rc));
			return rc;
		}
		rc = 0;
		for (i = 0; i < n && rc == 0; i++)
			rc = read_one(dfd, &files[i], err, errn);
		close(dfd);
		if (!before[0])
			break;
		/* Read from ..data: valid only if it did not move meanwhile. */
		if (data_target(dir, after, sizeof(after)) == 0 && strcmp(before, after) == 0)
			break;
		mountdir_release(files, n);
		rc = -EAGAIN;
	}
	if (rc == -EAGAIN)
		snprintf(err, errn, "%s: ..data kept changing while it was read", dir);
	if (rc != 0)
		mountdir_release(files, n);
	return rc;
}

int mountdir_read_path(struct mountdir_file *f, char *err, size_t errn)
{
	f->present = false;
	f->data = NULL;
	f->len = 0;
	return read_one(AT_FDCWD, f, err, errn);
}

uint64_t mountdir_signature(const char *dir, const char *const *names, size_t n)
{
	char target[PATH_MAX], path[PATH_MAX];
	uint64_t h = HMAP_HASH64_INIT;
	size_t i;

	if (data_target(dir, target, sizeof(target)) != 0)
		target[0] = '\0';
	h = hmap_hash64_add(h, target, strlen(target) + 1);
	for (i = 0; i < n; i++) {
		struct stat st;
		int64_t v[7] = { 0 };

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0) {
			v[0] = (int64_t)st.st_dev;
			v[1] = (int64_t)st.st_ino;
			v[2] = (int64_t)st.st_size;
			v[3] = (int64_t)st.st_mtim.tv_sec;
			v[4] = (int64_t)st.st_mtim.tv_nsec;
			v[5] = (int64_t)st.st_ctim.tv_sec;
			v[6] = (int64_t)st.st_ctim.tv_nsec;
		} else {
			v[0] = -errno;
		}
		h = hmap_hash64_add(h, v, sizeof(v));
	}
	return h;
}

int mountdir_split(const char *path, char *dir, size_t dirn, char *base, size_t basen)
{
	const char *slash = strrchr(path, '/');
	size_t dlen;

	if (!slash) {
		if (snprintf(dir, dirn, ".") >= (int)dirn || snprintf(base, basen, "%s", path) >= (int)basen)
			return -ENAMETOOLONG;
		return 0;
	}
	dlen = slash == path ? 1 : (size_t)(slash - path);
	if (dlen >= dirn || strlen(slash + 1) >= basen)
		return -ENAMETOOLONG;
	memcpy(dir, path, dlen);
	dir[dlen] = '\0';
	snprintf(base, basen, "%s", slash + 1);
	return 0;
}
