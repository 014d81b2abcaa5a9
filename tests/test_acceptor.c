/* test_acceptor.c - the webhook port's accept loop: every waiting
 * connection handed over, none while there is no room, none after close,
 * and a failing accept paced by a doubling pause instead of a spin. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceptor.h"

#define MAX_SEEN 32

struct probe {
	atomic_bool room;
	atomic_int handed;
	atomic_bool flags_ok;         /* every handed fd non-blocking and close-on-exec */
	atomic_int failures;
	unsigned pauses[MAX_SEEN];    /* written by the acceptor's thread only */
	int last_err;
};

static bool probe_has_room(void *arg)
{
	struct probe *p = arg;

	return atomic_load(&p->room);
}

static void probe_hand(void *arg, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct probe *p = arg;
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

	if (fl < 0 || !(fl & O_NONBLOCK) || fdfl < 0 || !(fdfl & FD_CLOEXEC) || !addr ||
	    len < (socklen_t)sizeof(struct sockaddr_in))
		atomic_store(&p->flags_ok, false);
	close(fd);
	atomic_fetch_add(&p->handed, 1);
}

static void probe_failed(void *arg, int err, unsigned pause_ms)
{
	struct probe *p = arg;
	int n = atomic_load(&p->failures);

	if (n < MAX_SEEN)
		p->pauses[n] = pause_ms;
	p->last_err = err;
	atomic_store(&p->failures, n + 1);
}

static const struct acceptor_ops probe_ops = {
	.has_room = probe_has_room,
	.hand = probe_hand,
	.failed = probe_failed,
};

static void probe_init(struct probe *p, bool room)
{
	memset(p, 0, sizeof(*p));
	atomic_init(&p->room, room);
	atomic_init(&p->handed, 0);
	atomic_init(&p->flags_ok, true);
	atomic_init(&p->failures, 0);
}

/* A listening socket on 127.0.0.1 and its port. */
static int listener(uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A connect() to port: 0, or the errno it failed with. */
static int dial(uint16_t port, int *out)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;

	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		rc = errno;
	*out = fd;
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Wait (up to 10 s: a bound for a loaded machine, not a speed check)
 * until *v reaches want. */
static int wait_for_count(atomic_int *v, int want)
{
	for (int i = 0; i < 1000 && atomic_load(v) < want; i++)
		sleep_ms(10);
	return atomic_load(v);
}

static void test_every_waiting_connection_is_handed_over(void **state)
{
	struct acceptor *a = NULL;
	struct probe p;
	uint16_t port;
	int lfd, c[6], late;

	(void)state;
	probe_init(&p, true);
	lfd = listener(&port);
	/* Connected before the acceptor starts: all six wait in the backlog,
	 * as a client's pool opened at once does. */
	for (int i = 0; i < 6; i++)
		assert_int_equal(dial(port, &c[i]), 0);
	assert_int_equal(acceptor_start(lfd, &probe_ops, &p, &a), 0);
	assert_int_equal(wait_for_count(&p.handed, 6), 6);
	assert_true(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	/* And one that comes later, while the acceptor waits. */
	assert_int_equal(dial(port, &late), 0);
	assert_int_equal(wait_for_count(&p.handed, 7), 7);
	assert_true(atomic_load(&p.flags_ok));
	assert_int_equal(atomic_load(&p.failures), 0);
	acceptor_free(a);
	for (int i = 0; i < 6; i++)
		close(c[i]);
	close(late);
	close(lfd);
}

static void test_without_room_connections_wait_in_the_backlog(void **state)
{
	struct acceptor *a = NULL;
	struct probe p;
	uint16_t port;
	int lfd, c[3];

	(void)state;
	probe_init(&p, false);
	lfd = listener(&port);
	assert_int_equal(acceptor_start(lfd, &probe_ops, &p, &a), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(dial(port, &c[i]), 0);
	/* Several of the acceptor's retries: none is taken. */
	sleep_ms(10 * ACCEPTOR_FULL_RETRY_MS);
	assert_int_equal(atomic_load(&p.handed), 0);
	atomic_store(&p.room, true);
	assert_int_equal(wait_for_count(&p.handed, 3), 3);
	acceptor_free(a);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	close(lfd);
}

static void test_after_close_connections_are_refused(void **state)
{
	struct acceptor *a = NULL;
	struct probe p;
	uint16_t port;
	int lfd, c;

	(void)state;
	probe_init(&p, true);
	lfd = listener(&port);
	assert_int_equal(acceptor_start(lfd, &probe_ops, &p, &a), 0);
	assert_int_equal(dial(port, &c), 0);
	assert_int_equal(wait_for_count(&p.handed, 1), 1);
	close(c);
	acceptor_close(a);
	acceptor_close(a);            /* idempotent */
	assert_int_equal(dial(port, &c), ECONNREFUSED);
	close(c);
	assert_int_equal(atomic_load(&p.handed), 1);
	acceptor_free(a);
	close(lfd);
}

static void test_a_failing_accept_pauses_twice_as_long_each_time(void **state)
{
	struct acceptor *a = NULL;
	struct probe p;
	int fd, n;

	(void)state;
	probe_init(&p, true);
	/* A socket that is not listening: poll() finds it ready and every
	 * accept() fails (EINVAL), as one failing for want of descriptors
	 * does. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(acceptor_start(fd, &probe_ops, &p, &a), 0);
	assert_true(wait_for_count(&p.failures, 5) >= 5);
	acceptor_free(a);
	n = atomic_load(&p.failures);
	/* 5 + 10 + 20 + 40 ms of pauses before the fifth: a spinning loop
	 * would have failed thousands of times by now. */
	assert_true(n < MAX_SEEN);
	for (int i = 0; i < n; i++) {
		unsigned want = ACCEPTOR_BACKOFF_MIN_MS << i;

		assert_int_equal(p.pauses[i], want < ACCEPTOR_BACKOFF_MAX_MS ? want : ACCEPTOR_BACKOFF_MAX_MS);
	}
	assert_int_equal(p.last_err, -EINVAL);
	assert_int_equal(atomic_load(&p.handed), 0);
	close(fd);
}

static void test_free_without_a_connection_and_free_null(void **state)
{
	struct acceptor *a = NULL;
	struct probe p;
	uint16_t port;
	int lfd;

	(void)state;
	probe_init(&p, true);
	lfd = listener(&port);
	assert_int_equal(acceptor_start(lfd, &probe_ops, &p, &a), 0);
	acceptor_free(a);
	acceptor_free(NULL);
	assert_int_equal(atomic_load(&p.handed), 0);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_waiting_connection_is_handed_over),
		cmocka_unit_test(test_without_room_connections_wait_in_the_backlog),
		cmocka_unit_test(test_after_close_connections_are_refused),
		cmocka_unit_test(test_a_failing_accept_pauses_twice_as_long_each_time),
		cmocka_unit_test(test_free_without_a_connection_and_free_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
