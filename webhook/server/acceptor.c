/* acceptor.c - the webhook port's accept loop. */
#include "acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct acceptor {
	int fd;                       /* the listening socket (borrowed) */
	int wake[2];                  /* a byte on wake[1] ends a wait */
	struct acceptor_ops ops;
	void *arg;
	pthread_t thread;
	atomic_bool closing;          /* stop accepting */
	atomic_bool stopping;         /* leave the thread */
};

/* Wait up to ms (-1: for ever) for the listening socket (when listen) or
 * a wake-up. */
static void wait_for(struct acceptor *a, bool listen, int ms)
{
	struct pollfd p[2] = {
		{ .fd = a->wake[0], .events = POLLIN },
		{ .fd = listen ? a->fd : -1, .events = POLLIN },
	};
	char drain[16];

	if (poll(p, 2, ms) > 0 && (p[0].revents & POLLIN))
		while (read(a->wake[0], drain, sizeof(drain)) > 0)
			;
}

static void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;
	unsigned pause = 0;

	while (!atomic_load(&a->stopping)) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd, err;

		if (atomic_load(&a->closing)) {
			wait_for(a, false, -1);
			continue;
		}
		if (!a->ops.has_room(a->arg)) {
			wait_for(a, false, ACCEPTOR_FULL_RETRY_MS);
			continue;
		}
		fd = accept4(a->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			pause = 0;
			a->ops.hand(a->arg, fd, (struct sockaddr *)&ss, len);
			continue;
		}
		err = errno;
		if (err == EAGAIN || err == EWOULDBLOCK) {
			wait_for(a, true, -1);
			continue;
		}
		if (err == EINTR || err == ECONNABORTED || err == EPROTO)
			continue;     /* the next connection is unaffected */
		if (atomic_load(&a->closing))
			continue;     /* shut down under accept(): not a failure */
		/* Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM),
		 * or an error not foreseen: pause rather than spin on it. */
		pause = pause ? pause * 2 : ACCEPTOR_BACKOFF_MIN_MS;
		if (pause > ACCEPTOR_BACKOFF_MAX_MS)
			pause = ACCEPTOR_BACKOFF_MAX_MS;
		if (a->ops.failed)
			a->ops.failed(a->arg, -err, pause);
		wait_for(a, false, (int)pause);
	}
	return NULL;
}

static void wake(struct acceptor *a)
{
	char one = 1;
	ssize_t n;

	/* A full pipe already holds a wake-up. */
	do
		n = write(a->wake[1], &one, 1);
	while (n < 0 && errno == EINTR);
}

int acceptor_start(int listen_fd, const struct acceptor_ops *ops, void *arg, struct acceptor **out)
{
	struct acceptor *a = NULL;
	int flags, rc;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = listen_fd;
	a->ops = *ops;
	a->arg = arg;
	a->wake[0] = a->wake[1] = -1;
	atomic_init(&a->closing, false);
	atomic_init(&a->stopping, false);
	flags = fcntl(listen_fd, F_GETFL);
	if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	if (pipe2(a->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
		rc = -errno;
		goto fail;
	}
	rc = pthread_create(&a->thread, NULL, acceptor_main, a);
	if (rc != 0) {
		rc = -rc;
		goto fail;
	}
	*out = a;
	return 0;
fail:
	if (a->wake[0] >= 0)
		close(a->wake[0]);
	if (a->wake[1] >= 0)
		close(a->wake[1]);
	free(a);
	return rc;
}

void acceptor_close(struct acceptor *a)
{
	if (!a || atomic_exchange(&a->closing, true))
		return;
	/* shutdown() makes a Linux listening socket refuse connects (RST)
	 * and wakes a poll() on it; the descriptor stays open until the
	 * caller closes it, so its number is not reused under the thread. */
	shutdown(a->fd, SHUT_RDWR);
	wake(a);
}

void acceptor_free(struct acceptor *a)
{
	if (!a)
		return;
	atomic_store(&a->stopping, true);
	atomic_store(&a->closing, true);
	wake(a);
	pthread_join(a->thread, NULL);
	close(a->wake[0]);
	close(a->wake[1]);
	free(a);
}
