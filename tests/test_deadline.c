/* test_deadline.c - whole-request deadlines swept from outside the event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "deadline.h"

#define SEC 1000000000ull

/* A connected loopback TCP pair: fds[0] the server's end, fds[1] the client's. */
static void tcp_pair(int fds[2])
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fds[1], (struct sockaddr *)&a, sizeof(a)), 0);
	fds[0] = accept(l, NULL, NULL);
	assert_true(fds[0] >= 0);
	close(l);
}

/* What the client end sees now: 1 data, 0 end of stream, -1 nothing yet. */
static int client_sees(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	if (n > 0)
		return 1;
	if (n == 0)
		return 0;
	return -1;
}

static void test_a_clock_past_its_limit_shuts_the_socket_down_once(void **state)
{
	struct deadline_list *l = NULL;
	struct deadline_entry e;
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	int fds[2];

	(void)state;
	assert_int_equal(deadline_list_new(&l), 0);
	tcp_pair(fds);
	memset(&e, 0, sizeof(e));
	deadline_add(l, &e, fds[0], 3 * SEC);
	assert_int_equal(deadline_count(l), 1);
	/* No clock yet: a silent connection is the idle timeout's business. */
	assert_int_equal(deadline_sweep(l, 100 * SEC, x), 0);
	deadline_start(&e, 10 * SEC);
	deadline_start(&e, 12 * SEC);               /* already running: kept */
	assert_true(deadline_running(&e));
	assert_int_equal(deadline_sweep(l, 13 * SEC, x), 0);
	assert_int_equal(client_sees(fds[1]), -1);
	assert_int_equal(deadline_sweep(l, 13 * SEC + 1, x), 1);
	assert_true(deadline_expired(&e));
	assert_memory_equal(x[0].peer, "127.0.0.1:", 10);
	assert_int_equal(x[0].age_ns, 3 * SEC + 1);
	assert_int_equal(client_sees(fds[1]), 0);
	/* Reported once. */
	assert_int_equal(deadline_sweep(l, 20 * SEC, x), 0);
	deadline_remove(l, &e);
	deadline_remove(l, &e);                     /* twice: ignored */
	assert_int_equal(deadline_count(l), 0);
	close(fds[0]);
	close(fds[1]);
	deadline_list_free(l);
}

static void test_a_stopped_or_restarted_clock_does_not_expire(void **state)
{
	struct deadline_list *l = NULL;
	struct deadline_entry e;
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	int fds[2];

	(void)state;
	assert_int_equal(deadline_list_new(&l), 0);
	tcp_pair(fds);
	memset(&e, 0, sizeof(e));
	deadline_add(l, &e, fds[0], 2 * SEC);
	deadline_start(&e, 1 * SEC);
	deadline_stop(&e);
	assert_false(deadline_running(&e));
	assert_int_equal(deadline_sweep(l, 10 * SEC, x), 0);
	deadline_start(&e, 9 * SEC);
	deadline_restart(&e, 11 * SEC);
	assert_int_equal(deadline_sweep(l, 12 * SEC, x), 0);
	assert_int_equal(client_sees(fds[1]), -1);
	deadline_remove(l, &e);
	close(fds[0]);
	close(fds[1]);
	deadline_list_free(l);
}

/* Once removed, a connection's descriptor number may be reused by another
 * connection: the sweep must never reach it. */
static void test_a_removed_entry_never_touches_a_reused_descriptor(void **state)
{
	struct deadline_list *l = NULL;
	struct deadline_entry e, other;
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	int first[2], second[2], old_fd;

	(void)state;
	assert_int_equal(deadline_list_new(&l), 0);
	tcp_pair(first);
	memset(&e, 0, sizeof(e));
	memset(&other, 0, sizeof(other));
	deadline_add(l, &e, first[0], 1 * SEC);
	deadline_start(&e, 1 * SEC);
	deadline_remove(l, &e);
	/* An entry never added is ignored too. */
	deadline_remove(l, &other);
	old_fd = first[0];
	close(first[0]);
	close(first[1]);
	tcp_pair(second);
	assert_true(second[0] == old_fd || second[1] == old_fd);
	assert_int_equal(deadline_sweep(l, 100 * SEC, x), 0);
	assert_int_equal(send(second[0], "x", 1, 0), 1);
	assert_int_equal(client_sees(second[1]), 1);
	close(second[0]);
	close(second[1]);
	deadline_list_free(l);
}

/* More expiries than one sweep reports: the rest come with the next. */
static void test_a_sweep_reports_at_most_its_batch(void **state)
{
	enum { N = DEADLINE_SWEEP_MAX + 5 };
	struct deadline_list *l = NULL;
	struct deadline_entry *e = calloc(N, sizeof(*e));
	struct deadline_expiry x[DEADLINE_SWEEP_MAX];
	int (*fds)[2] = calloc(N, sizeof(*fds));
	int i;

	(void)state;
	assert_non_null(e);
	assert_non_null(fds);
	assert_int_equal(deadline_list_new(&l), 0);
	for (i = 0; i < N; i++) {
		tcp_pair(fds[i]);
		deadline_add(l, &e[i], fds[i][0], SEC);
		deadline_start(&e[i], SEC);
	}
	assert_int_equal(deadline_sweep(l, 5 * SEC, x), DEADLINE_SWEEP_MAX);
	assert_int_equal(deadline_sweep(l, 5 * SEC, x), 5);
	assert_int_equal(deadline_sweep(l, 5 * SEC, x), 0);
	for (i = 0; i < N; i++) {
		assert_true(deadline_expired(&e[i]));
		deadline_remove(l, &e[i]);
		close(fds[i][0]);
		close(fds[i][1]);
	}
	free(e);
	free(fds);
	deadline_list_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_clock_past_its_limit_shuts_the_socket_down_once),
		cmocka_unit_test(test_a_stopped_or_restarted_clock_does_not_expire),
		cmocka_unit_test(test_a_removed_entry_never_touches_a_reused_descriptor),
		cmocka_unit_test(test_a_sweep_reports_at_most_its_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
