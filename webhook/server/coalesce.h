/* coalesce.h - one small write held back to leave with the next, so a
 * response's two TLS records go out in one system call.
 *
 * Over TLS libmicrohttpd 0.9.75 sends a response's header and its body in
 * two gnutls_record_send() calls, one right after the other, and GnuTLS
 * pushes each record on its own: two sendmsg() calls, two trips through
 * the loopback or the NIC's TCP stack and two wake-ups of the reader, for
 * an answer of a few hundred bytes. Armed just before such a response is
 * queued, the next write (the header's record, at most COALESCE_MAX bytes)
 * is copied here and reported as written; the write after it (the body's
 * record) sends both with one sendmsg(). Nothing is reordered: held bytes
 * always go first.
 *
 * Arm only when a body follows the header, so a next write always comes:
 * libmicrohttpd does not call the response complete before the body is
 * written. coalesce_flush() is the safety net at completion. */
#ifndef DRA_GUARD_COALESCE_H
#define DRA_GUARD_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* An HTTP/1.1 response header of the webhook port is about 150 bytes in a
 * TLS record with its 22 to 29 bytes of framing. */
#define COALESCE_MAX 512

struct coalesce {                 /* embedded in a connection; zeroed: nothing held */
	bool armed;                   /* the next write is held when it fits */
	size_t len;                   /* bytes held */
	char buf[COALESCE_MAX];
};

/* Hold the next write if it is of 1 to COALESCE_MAX bytes (a larger one
 * goes out at once and disarms). */
void coalesce_arm(struct coalesce *c);

/* Write iov to the connected socket fd as sendmsg(MSG_NOSIGNAL) would, the
 * held bytes first: the number of iov's bytes taken (held ones count as
 * taken), or -1 with errno (EAGAIN also when only held bytes could be
 * written; the rest of them stay held). At most 15 iovecs. */
ssize_t coalesce_write(struct coalesce *c, int fd, const struct iovec *iov, int iovcnt);

/* Send what is held, once, without blocking: 0 when nothing is left held,
 * -EAGAIN when some is (it leaves with the next write), another negative
 * errno on a socket error (the held bytes are dropped). Disarms. */
int coalesce_flush(struct coalesce *c, int fd);

/* Bytes held now. */
size_t coalesce_pending(const struct coalesce *c);

/* Forget what is held and disarm (the connection's writes are dropped
 * from now on, or it is closing). */
void coalesce_drop(struct coalesce *c);

#endif
