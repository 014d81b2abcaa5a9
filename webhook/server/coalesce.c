/* coalesce.c - one small write held back to leave with the next. */
#include "coalesce.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define IOV_MAX_HELD 16           /* the held bytes and up to 15 of the caller's */

void coalesce_arm(struct coalesce *c)
{
	c->armed = true;
}

size_t coalesce_pending(const struct coalesce *c)
{
	return c->len;
}

void coalesce_drop(struct coalesce *c)
{
	c->armed = false;
	c->len = 0;
}

static ssize_t send_vec(int fd, struct iovec *iov, int iovcnt)
{
	struct msghdr msg;
	ssize_t sent;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)iovcnt;
	do
		sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	return sent;
}

/* The first sent bytes of the held ones have left: keep the rest. */
static void consume_held(struct coalesce *c, size_t sent)
{
	memmove(c->buf, c->buf + sent, c->len - sent);
	c->len -= sent;
}

ssize_t coalesce_write(struct coalesce *c, int fd, const struct iovec *iov, int iovcnt)
{
	struct iovec v[IOV_MAX_HELD];
	size_t total = 0, off = 0;
	ssize_t sent;
	int i, n;

	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (c->armed && c->len == 0) {
		c->armed = false;
		if (total > 0 && total <= sizeof(c->buf)) {
			for (i = 0; i < iovcnt; i++) {
				memcpy(c->buf + off, iov[i].iov_base, iov[i].iov_len);
				off += iov[i].iov_len;
			}
			c->len = total;
			return (ssize_t)total;
		}
	}
	if (c->len == 0)
		return send_vec(fd, (struct iovec *)(uintptr_t)iov, iovcnt);
	v[0].iov_base = c->buf;
	v[0].iov_len = c->len;
	n = iovcnt < IOV_MAX_HELD - 1 ? iovcnt : IOV_MAX_HELD - 1;
	for (i = 0; i < n; i++)
		v[i + 1] = iov[i];
	sent = send_vec(fd, v, n + 1);
	if (sent < 0)
		return -1;
	if ((size_t)sent < c->len || ((size_t)sent == c->len && total > 0)) {
		/* The socket is full: what is left of the held bytes waits for
		 * the caller's retry, which comes when it can write again. */
		consume_held(c, (size_t)sent);
		errno = EAGAIN;
		return -1;
	}
	sent -= (ssize_t)c->len;
	c->len = 0;
	return sent;
}

int coalesce_flush(struct coalesce *c, int fd)
{
	struct iovec v;
	ssize_t sent;

	c->armed = false;
	if (c->len == 0)
		return 0;
	v.iov_base = c->buf;
	v.iov_len = c->len;
	sent = send_vec(fd, &v, 1);
	if (sent < 0) {
		int rc = -errno;

		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			return -EAGAIN;
		c->len = 0;
		return rc;
	}
	consume_held(c, (size_t)sent);
	return c->len ? -EAGAIN : 0;
}
