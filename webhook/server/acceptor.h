/* acceptor.h - the webhook port's accept loop, on a thread of its own.
 *
 * libmicrohttpd 0.9.75 with a pool of worker threads puts the listening
 * socket in every worker's epoll set, and the worker that wakes first
 * accepts every connection waiting, up to ten in a row. A client that
 * opens its connections together (the API server's pool, wrk) lands them
 * all on one worker, which then serves them alone for as long as they
 * live: the keep-alive connections of a kube-apiserver are held for
 * minutes, so one worker's CPU bounds the webhook while the others idle
 * (measured: 99% and 0% of a CPU on the two workers under wrk -c16).
 *
 * The acceptor accepts instead and hands each connection to the library
 * with MHD_add_connection(), which gives it to worker (fd mod workers),
 * the next one with room when that one is full. Linux hands out the
 * lowest free descriptor, so connections accepted together alternate
 * between the workers, and the one that replaces a closed connection
 * most often reuses its descriptor and so its worker.
 *
 * Before each accept the acceptor asks whether there is room (the
 * connection limit); when there is not it leaves the connection in the
 * kernel's backlog, as the library does, and asks again every
 * ACCEPTOR_FULL_RETRY_MS. A failed accept for want of descriptors or
 * memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) is retried after a pause that
 * doubles from ACCEPTOR_BACKOFF_MIN_MS to ACCEPTOR_BACKOFF_MAX_MS, so the
 * loop never spins on an error it cannot clear.
 *
 * Threads: the callbacks run on the acceptor's thread; acceptor_close()
 * and acceptor_free() may be called from any one thread. */
#ifndef DRA_GUARD_ACCEPTOR_H
#define DRA_GUARD_ACCEPTOR_H

#include <stdbool.h>
#include <sys/socket.h>

#define ACCEPTOR_FULL_RETRY_MS 20
#define ACCEPTOR_BACKOFF_MIN_MS 5
#define ACCEPTOR_BACKOFF_MAX_MS 1000

struct acceptor;

struct acceptor_ops {
	/* True when a connection may be accepted now (under the limit). */
	bool (*has_room)(void *arg);
	/* Take fd (accepted non-blocking and close-on-exec): the callee owns
	 * it from here, and closes it (and says why) when it cannot serve it. */
	void (*hand)(void *arg, int fd, const struct sockaddr *addr, socklen_t len);
	/* An accept failed with errno err (-err given); the loop pauses for
	 * pause_ms before the next. May be NULL. */
	void (*failed)(void *arg, int err, unsigned pause_ms);
};

/* Start accepting on listen_fd (a bound, listening socket; made
 * non-blocking here) on a new thread. The acceptor borrows listen_fd: the
 * caller closes it, after acceptor_free(). ops is copied; arg is passed to
 * every callback. Returns 0 and *out, -ENOMEM, or the negative errno of
 * pipe/fcntl/pthread_create. */
int acceptor_start(int listen_fd, const struct acceptor_ops *ops, void *arg, struct acceptor **out);

/* Stop accepting (for a drain): the thread stops before its next accept
 * and the listening socket is shut down, so a Linux client's connect() is
 * refused from now on. Connections handed over are not touched. Returns
 * at once; idempotent. */
void acceptor_close(struct acceptor *a);

/* Stop the thread and wait for it; after this no callback runs.
 * acceptor_free(NULL) is a no-op. */
void acceptor_free(struct acceptor *a);

#endif
