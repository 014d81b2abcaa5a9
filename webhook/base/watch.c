/* watch.c - notice changes in a few directories (inotify). */
#include "watch.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_EVENTS (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | \
		      IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF)

struct watch_dir {
	char path[PATH_MAX];
	int wd;                       /* -1 while not watched */
};

struct watch {
	int fd;
	unsigned n;
	struct watch_dir dirs[WATCH_MAX_DIRS];
};

int watch_new(struct watch **out)
{
	struct watch *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		int rc = -errno;

		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void watch_free(struct watch *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

static int arm(struct watch *w, struct watch_dir *d)
{
	/* IN_ONLYDIR: a path that became a file is not a directory to follow. */
	d->wd = inotify_add_watch(w->fd, d->path, WATCH_EVENTS | IN_ONLYDIR);
	return d->wd < 0 ? -errno : 0;
}

int watch_add(struct watch *w, const char *dir, unsigned *id)
{
	struct watch_dir *d;
	int rc;

	if (w->n == WATCH_MAX_DIRS)
		return -E2BIG;
	d = &w->dirs[w->n];
	if (snprintf(d->path, sizeof(d->path), "%s", dir) >= (int)sizeof(d->path))
		return -ENAMETOOLONG;
	rc = arm(w, d);
	if (rc != 0 && rc != -ENOENT && rc != -ENOTDIR)
		return rc;
	*id = w->n++;
	return 0;
}

int watch_fd(const struct watch *w)
{
	return w->fd;
}

/* The bits of the directories behind wd: two paths to one directory share
 * a watch descriptor. */
static uint32_t dirs_of(const struct watch *w, int wd)
{
	uint32_t bits = 0;
	unsigned i;

	for (i = 0; i < w->n; i++)
		if (w->dirs[i].wd == wd)
			bits |= 1u << i;
	return bits;
}

static void disarm(struct watch *w, int wd, bool remove)
{
	unsigned i;

	if (remove)
		inotify_rm_watch(w->fd, wd);
	for (i = 0; i < w->n; i++)
		if (w->dirs[i].wd == wd)
			w->dirs[i].wd = -1;
}

int watch_read(struct watch *w, uint32_t *changed)
{
	/* Aligned as the kernel's records require. */
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));

	*changed = 0;
	for (;;) {
		ssize_t len = read(w->fd, buf, sizeof(buf));
		char *p;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (len == 0)
			return 0;
		for (p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				*changed |= (1u << w->n) - 1;
				continue;
			}
			*changed |= dirs_of(w, ev->wd);
			/* The kernel dropped the watch (the directory is gone), or the
			 * directory moved away from its path: follow the path again
			 * from watch_rearm(), not the moved inode. */
			if (ev->mask & (IN_IGNORED | IN_MOVE_SELF))
				disarm(w, ev->wd, (ev->mask & IN_MOVE_SELF) != 0);
		}
	}
}

uint32_t watch_rearm(struct watch *w)
{
	uint32_t back = 0;
	unsigned i;

	for (i = 0; i < w->n; i++)
		if (w->dirs[i].wd < 0 && arm(w, &w->dirs[i]) == 0)
			back |= 1u << i;
	return back;
}
