/* test_coalesce.c - a response's header record held to leave with its body's.
 *
 * SOCK_SEQPACKET pairs keep each sendmsg() a message of its own, so what the
 * reader receives in one recv() is what one write sent. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "coalesce.h"

static void pair(int type, int fds[2])
{
	assert_int_equal(socketpair(AF_UNIX, type, 0, fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
}

static ssize_t write_str(struct coalesce *c, int fd, const char *s)
{
	struct iovec v = { (void *)(uintptr_t)s, strlen(s) };

	return coalesce_write(c, fd, &v, 1);
}

/* One message from the reader's end into out (NUL-terminated): its length,
 * -1 when none is waiting. */
static ssize_t read_msg(int fd, char *out, size_t n)
{
	ssize_t got = recv(fd, out, n - 1, MSG_DONTWAIT);

	out[got > 0 ? got : 0] = '\0';
	return got;
}

static void test_an_armed_write_leaves_with_the_next_in_one_message(void **state)
{
	struct coalesce c;
	char got[2048];
	int fds[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	pair(SOCK_SEQPACKET, fds);
	coalesce_arm(&c);
	assert_int_equal(write_str(&c, fds[0], "HEADER"), 6);
	assert_int_equal(coalesce_pending(&c), 6);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), -1);
	assert_int_equal(write_str(&c, fds[0], "BODY"), 4);
	assert_int_equal(coalesce_pending(&c), 0);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 10);
	assert_string_equal(got, "HEADERBODY");
	/* Only one write is held per arming. */
	assert_int_equal(write_str(&c, fds[0], "NEXT"), 4);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 4);
	assert_string_equal(got, "NEXT");
	close(fds[0]);
	close(fds[1]);
}

static void test_unarmed_writes_go_out_at_once(void **state)
{
	struct coalesce c;
	struct iovec v[2] = { { "ab", 2 }, { "cd", 2 } };
	char got[64];
	int fds[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	pair(SOCK_SEQPACKET, fds);
	assert_int_equal(coalesce_write(&c, fds[0], v, 2), 4);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 4);
	assert_string_equal(got, "abcd");
	close(fds[0]);
	close(fds[1]);
}

static void test_a_write_larger_than_the_hold_goes_out_and_disarms(void **state)
{
	struct coalesce c;
	char big[COALESCE_MAX + 2], got[2048];
	int fds[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pair(SOCK_SEQPACKET, fds);
	coalesce_arm(&c);
	assert_int_equal(write_str(&c, fds[0], big), COALESCE_MAX + 1);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), COALESCE_MAX + 1);
	assert_int_equal(write_str(&c, fds[0], "small"), 5);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 5);
	close(fds[0]);
	close(fds[1]);
}

static void test_a_held_write_is_kept_in_order_while_the_socket_is_full(void **state)
{
	struct coalesce c;
	char fill[4096], got[65536];
	size_t filled = 0, seen = 0;
	int fds[2];
	int sndbuf = 4096;
	ssize_t r;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(fill, '.', sizeof(fill));
	pair(SOCK_STREAM, fds);
	assert_int_equal(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	for (;;) {
		struct iovec v = { fill, sizeof(fill) };

		r = coalesce_write(&c, fds[0], &v, 1);
		if (r < 0)
			break;
		filled += (size_t)r;
	}
	assert_int_equal(errno, EAGAIN);
	coalesce_arm(&c);
	assert_int_equal(write_str(&c, fds[0], "HEADER"), 6);
	/* Nothing of the body (or all of the header) gets out: it is retried. */
	assert_int_equal(write_str(&c, fds[0], "BODY"), -1);
	assert_int_equal(errno, EAGAIN);
	assert_true(coalesce_pending(&c) > 0);
	/* The reader drains; the retry sends what is left, in order. */
	while (seen < filled) {
		r = recv(fds[1], got, filled - seen < sizeof(got) ? filled - seen : sizeof(got), 0);
		assert_true(r > 0);
		seen += (size_t)r;
	}
	assert_int_equal(write_str(&c, fds[0], "BODY"), 4);
	assert_int_equal(coalesce_pending(&c), 0);
	/* The drain took exactly the filler: the header follows it whole. */
	seen = 0;
	while (seen < 10) {
		r = recv(fds[1], got + seen, sizeof(got) - 1 - seen, 0);
		assert_true(r > 0);
		seen += (size_t)r;
	}
	got[seen] = '\0';
	assert_string_equal(got, "HEADERBODY");
	close(fds[0]);
	close(fds[1]);
}

static void test_flush_sends_a_held_write_alone(void **state)
{
	struct coalesce c;
	char got[64];
	int fds[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	pair(SOCK_SEQPACKET, fds);
	assert_int_equal(coalesce_flush(&c, fds[0]), 0);
	coalesce_arm(&c);
	assert_int_equal(write_str(&c, fds[0], "HEADER"), 6);
	assert_int_equal(coalesce_flush(&c, fds[0]), 0);
	assert_int_equal(coalesce_pending(&c), 0);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 6);
	assert_string_equal(got, "HEADER");
	/* Flushing disarms: the next write is not held. */
	coalesce_arm(&c);
	assert_int_equal(coalesce_flush(&c, fds[0]), 0);
	assert_int_equal(write_str(&c, fds[0], "NEXT"), 4);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 4);
	close(fds[0]);
	close(fds[1]);
}

static void test_drop_forgets_a_held_write(void **state)
{
	struct coalesce c;
	char got[64];
	int fds[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	pair(SOCK_SEQPACKET, fds);
	coalesce_arm(&c);
	assert_int_equal(write_str(&c, fds[0], "HEADER"), 6);
	coalesce_drop(&c);
	assert_int_equal(coalesce_pending(&c), 0);
	assert_int_equal(write_str(&c, fds[0], "BODY"), 4);
	assert_int_equal(read_msg(fds[1], got, sizeof(got)), 4);
	assert_string_equal(got, "BODY");
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_armed_write_leaves_with_the_next_in_one_message),
		cmocka_unit_test(test_unarmed_writes_go_out_at_once),
		cmocka_unit_test(test_a_write_larger_than_the_hold_goes_out_and_disarms),
		cmocka_unit_test(test_a_held_write_is_kept_in_order_while_the_socket_is_full),
		cmocka_unit_test(test_flush_sends_a_held_write_alone),
		cmocka_unit_test(test_drop_forgets_a_held_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
