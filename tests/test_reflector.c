/* test_reflector.c - the list/watch transition function: state + event ->
 * next state, actions and when the next request goes out. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "reflector.h"

#define NOW 1000000

enum flags {
	F_BUILDING = 1 << 0,
	F_PAGING = 1 << 1,
	F_NO_STREAM = 1 << 2,
	F_SYNCED = 1 << 3,
};

struct row {
	const char *name;
	enum reflector_state from;
	unsigned flags;               /* F_*, before */
	unsigned backoff_ms;          /* before */
	enum reflector_reason reason; /* before */
	struct reflector_event ev;
	unsigned rnd;
	/* after */
	enum reflector_state to;
	unsigned act;
	int64_t due;                  /* -1: not checked (unchanged from 0) */
	unsigned to_flags;
	enum reflector_reason to_reason;
	unsigned to_backoff_ms;
};

#define EV(k) { .kind = REFLECTOR_EV_##k }
#define S(x) REFLECTOR_##x
#define A(x) REFLECTOR_ACT_##x

static const struct row rows[] = {
	/* Sending what is due. */
	{ "first list streams where it may", S(LIST_WAIT), 0, 0, S(START), { .kind = REFLECTOR_EV_SEND, .stream = true },
	  0, S(STREAMING), A(BEGIN) | A(COUNT_LIST) | A(LIST_STREAM), -1, F_BUILDING, S(START), 0 },
	{ "first list in pages (--list-mode pages, the ConfigMap)", S(LIST_WAIT), 0, 0, S(START), EV(SEND),
	  0, S(LISTING), A(BEGIN) | A(COUNT_LIST) | A(LIST_PAGE), -1, F_BUILDING, S(START), 0 },
	{ "a refused stream lists in pages", S(LIST_WAIT), F_NO_STREAM, 0, S(ERROR),
	  { .kind = REFLECTOR_EV_SEND, .stream = true },
	  0, S(LISTING), A(BEGIN) | A(COUNT_LIST) | A(LIST_PAGE), -1, F_BUILDING | F_NO_STREAM, S(ERROR), 0 },
	{ "a next page is neither begun nor counted, never streamed", S(LIST_WAIT), F_BUILDING | F_PAGING, 0, S(START),
	  { .kind = REFLECTOR_EV_SEND, .stream = true },
	  0, S(LISTING), A(LIST_PAGE), -1, F_BUILDING | F_PAGING, S(START), 0 },
	{ "a watch is due", S(WATCH_WAIT), F_SYNCED, 0, S(START), { .kind = REFLECTOR_EV_SEND, .stream = true },
	  0, S(WATCHING), A(WATCH), -1, F_SYNCED, S(START), 0 },
	{ "nothing to send in flight", S(WATCHING), F_SYNCED, 0, S(START), EV(SEND),
	  0, S(WATCHING), 0, -1, F_SYNCED, S(START), 0 },
	{ "the table could not be begun", S(LISTING), F_BUILDING, 0, S(START), EV(BEGIN_FAILED),
	  0, S(LIST_WAIT), 0, NOW + REFLECTOR_RETRY_MS, 0, S(START), 0 },
	{ "a list not sent keeps its table", S(STREAMING), F_BUILDING, 0, S(START), EV(NOT_SENT),
	  0, S(LIST_WAIT), 0, NOW + REFLECTOR_RETRY_MS, F_BUILDING, S(START), 0 },
	{ "a watch not sent", S(WATCHING), F_SYNCED, 500, S(START), EV(NOT_SENT),
	  0, S(WATCH_WAIT), 0, NOW + REFLECTOR_RETRY_MS, F_SYNCED, S(START), 500 },

	/* Pages, and the end of a list. */
	{ "a page with a continue token: the next at once", S(LISTING), F_BUILDING, 0, S(START),
	  { .kind = REFLECTOR_EV_PAGE, .more = true },
	  0, S(LIST_WAIT), 0, NOW, F_BUILDING | F_PAGING, S(START), 0 },
	{ "the last page: commit", S(LISTING), F_BUILDING | F_PAGING, 0, S(START), EV(PAGE),
	  0, S(LISTING), A(COMMIT), -1, F_BUILDING | F_PAGING, S(START), 0 },
	{ "committed pages: a watch at once, backoff reset", S(LISTING), F_BUILDING | F_PAGING, 4000, S(EXPIRED),
	  EV(COMMITTED), 0, S(WATCH_WAIT), 0, NOW, F_SYNCED, S(EXPIRED), 0 },
	{ "the initial events ended: commit", S(STREAMING), F_BUILDING, 0, S(START), EV(INITIAL_END),
	  0, S(STREAMING), A(COMMIT), -1, F_BUILDING, S(START), 0 },
	{ "a committed stream goes on as the watch", S(STREAMING), F_BUILDING, 0, S(START), EV(COMMITTED),
	  0, S(WATCHING), 0, NOW, F_SYNCED, S(START), 0 },
	{ "initial-events-end on a plain watch is nothing", S(WATCHING), F_SYNCED, 0, S(START), EV(INITIAL_END),
	  0, S(WATCHING), 0, -1, F_SYNCED, S(START), 0 },
	{ "a page on a watch is nothing", S(WATCHING), F_SYNCED, 0, S(START), EV(PAGE),
	  0, S(WATCHING), 0, -1, F_SYNCED, S(START), 0 },
	{ "the swap failed: relisted after the error backoff", S(LISTING), F_BUILDING, 0, S(START), EV(COMMIT_FAILED),
	  0, S(LIST_WAIT), A(ABORT) | A(ERROR), NOW + 125, 0, S(ERROR), 250 },

	/* 410: listed again after the expiry backoff (first one: 800 ms, half jittered). */
	{ "410 on a watch", S(WATCHING), F_SYNCED, 1000, S(START), EV(EXPIRED),
	  0, S(LIST_WAIT), 0, NOW + 400, F_SYNCED, S(EXPIRED), 1000 },
	{ "410 on a page drops the table", S(LISTING), F_BUILDING | F_PAGING, 0, S(START), EV(EXPIRED),
	  402, S(LIST_WAIT), A(ABORT), NOW + 400 + 1, 0, S(EXPIRED), 0 },
	{ "410 while waiting is nothing", S(LIST_WAIT), 0, 0, S(ERROR), EV(EXPIRED),
	  0, S(LIST_WAIT), 0, -1, 0, S(ERROR), 0 },

	/* Streaming lists refused: pages from now on, at once, same reason. */
	{ "stream refused", S(STREAMING), F_BUILDING, 250, S(EXPIRED), EV(STREAM_REFUSED),
	  0, S(LIST_WAIT), A(ABORT) | A(NO_STREAM), NOW, F_NO_STREAM, S(EXPIRED), 250 },
	{ "refusal after the initial events is nothing", S(WATCHING), F_SYNCED, 0, S(START), EV(STREAM_REFUSED),
	  0, S(WATCHING), 0, -1, F_SYNCED, S(START), 0 },

	/* Failures: a list starts over, a watch resumes; both back off. */
	{ "a watch failed: resumed after the backoff", S(WATCHING), F_SYNCED, 0, S(START), EV(FAILED),
	  7, S(WATCH_WAIT), A(ERROR), NOW + 125 + 7, F_SYNCED, S(START), 250 },
	{ "a watch that did not decode: listed again", S(WATCHING), F_SYNCED, 250, S(START),
	  { .kind = REFLECTOR_EV_FAILED, .garbage = true },
	  0, S(LIST_WAIT), A(ERROR), NOW + 250, F_SYNCED, S(DECODE), 500 },
	{ "a page failed: listed again", S(LISTING), F_BUILDING | F_PAGING, 0, S(START), EV(FAILED),
	  0, S(LIST_WAIT), A(ABORT) | A(ERROR), NOW + 125, 0, S(ERROR), 250 },
	{ "a stream failed: listed again", S(STREAMING), F_BUILDING, 0, S(START), EV(FAILED),
	  0, S(LIST_WAIT), A(ABORT) | A(ERROR), NOW + 125, 0, S(ERROR), 250 },
	{ "the backoff stops at 30 s", S(WATCHING), F_SYNCED, 30000, S(START), EV(FAILED),
	  0, S(WATCH_WAIT), A(ERROR), NOW + 15000, F_SYNCED, S(START), 30000 },

	/* Watches that end. */
	{ "silent watch: resumed at once, no error", S(WATCHING), F_SYNCED, 500, S(START), EV(SILENT),
	  0, S(WATCH_WAIT), 0, NOW, F_SYNCED, S(START), 500 },
	{ "very short watch: resumed after a backoff", S(WATCHING), F_SYNCED, 500, S(START), EV(SHORT),
	  0, S(WATCH_WAIT), A(ERROR), NOW + 500, F_SYNCED, S(START), 1000 },
	{ "watch timeout: resumed at once, backoff reset", S(WATCHING), F_SYNCED, 8000, S(START), EV(ENDED),
	  0, S(WATCH_WAIT), 0, NOW, F_SYNCED, S(START), 0 },
	{ "a timeout on a page is nothing", S(LISTING), F_BUILDING, 0, S(START), EV(ENDED),
	  0, S(LISTING), 0, -1, F_BUILDING, S(START), 0 },
};

static unsigned flags_of(const struct reflector_fsm *r)
{
	return (r->building ? F_BUILDING : 0) | (r->paging ? F_PAGING : 0) | (r->no_stream ? F_NO_STREAM : 0) |
	       (r->synced ? F_SYNCED : 0);
}

static void test_transitions(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *t = &rows[i];
		struct reflector_fsm r;
		unsigned act;

		reflector_fsm_init(&r);
		r.state = t->from;
		r.building = t->flags & F_BUILDING;
		r.paging = t->flags & F_PAGING;
		r.no_stream = t->flags & F_NO_STREAM;
		r.synced = t->flags & F_SYNCED;
		r.backoff_ms = t->backoff_ms;
		r.reason = t->reason;
		act = reflector_step(&r, &t->ev, NOW, t->rnd);
		if (r.state != t->to || act != t->act || flags_of(&r) != t->to_flags || r.reason != t->to_reason ||
		    r.backoff_ms != t->to_backoff_ms || (t->due >= 0 && r.due_ms != t->due))
			fail_msg("%s: got %s act %#x flags %#x reason %d backoff %u due %+lld; want %s act %#x flags %#x "
				 "reason %d backoff %u due %+lld", t->name, reflector_state_name(r.state), act,
				 flags_of(&r), r.reason, r.backoff_ms, (long long)(r.due_ms - NOW),
				 reflector_state_name(t->to), t->act, t->to_flags, t->to_reason, t->to_backoff_ms,
				 (long long)(t->due - NOW));
	}
}

/* Not before due; at due, the request goes. */
static void test_send_waits_until_due(void **state)
{
	struct reflector_fsm r;
	const struct reflector_event send = { .kind = REFLECTOR_EV_SEND };

	(void)state;
	reflector_fsm_init(&r);
	r.due_ms = NOW;
	assert_int_equal(reflector_step(&r, &send, NOW - 1, 0), 0);
	assert_int_equal(r.state, REFLECTOR_LIST_WAIT);
	assert_false(reflector_in_flight(&r));
	assert_int_not_equal(reflector_step(&r, &send, NOW, 0), 0);
	assert_int_equal(r.state, REFLECTOR_LISTING);
	assert_true(reflector_in_flight(&r));
}

/* The 410 backoff doubles from 800 ms to 30 s, and starts over after two
 * minutes without one (rnd 0: the wait is half the backoff). */
static void test_expiry_backoff_doubles_caps_and_resets(void **state)
{
	static const struct {
		int64_t at;               /* after the previous 410 */
		unsigned backoff;
	} seq[] = {
		{ 0, 800 }, { 1000, 1600 }, { 1000, 3200 }, { 1000, 6400 }, { 1000, 12800 }, { 1000, 25600 },
		{ 1000, 30000 }, { 1000, 30000 }, { REFLECTOR_EXPIRY_BACKOFF_RESET_MS, 30000 },
		{ REFLECTOR_EXPIRY_BACKOFF_RESET_MS + 1, 800 }, { 5000, 1600 },
	};
	const struct reflector_event expired = { .kind = REFLECTOR_EV_EXPIRED };
	const struct reflector_event send = { .kind = REFLECTOR_EV_SEND };
	struct reflector_fsm r;
	int64_t now = NOW;
	size_t i;

	(void)state;
	reflector_fsm_init(&r);
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		now += seq[i].at;
		r.due_ms = 0;
		assert_int_not_equal(reflector_step(&r, &send, now, 0), 0);
		assert_true(reflector_in_flight(&r));
		reflector_step(&r, &expired, now, 0);
		assert_int_equal(r.state, REFLECTOR_LIST_WAIT);
		assert_int_equal(r.reason, REFLECTOR_EXPIRED);
		if (r.expiry_backoff_ms != seq[i].backoff || r.due_ms != now + seq[i].backoff / 2)
			fail_msg("410 #%zu: backoff %u due %+lld, want %u", i, r.expiry_backoff_ms,
				 (long long)(r.due_ms - now), seq[i].backoff);
		/* The error backoff is another: a 410 does not touch it. */
		assert_int_equal(r.backoff_ms, 0);
	}
}

/* A whole life: stream refused, pages with continue, watch, 410, pages. */
static void test_a_resource_from_start_to_relist(void **state)
{
	static const struct {
		struct reflector_event ev;
		enum reflector_state to;
		unsigned act;
	} seq[] = {
		{ { .kind = REFLECTOR_EV_SEND, .stream = true }, S(STREAMING), A(BEGIN) | A(COUNT_LIST) | A(LIST_STREAM) },
		{ EV(STREAM_REFUSED), S(LIST_WAIT), A(ABORT) | A(NO_STREAM) },
		{ { .kind = REFLECTOR_EV_SEND, .stream = true }, S(LISTING), A(BEGIN) | A(COUNT_LIST) | A(LIST_PAGE) },
		{ { .kind = REFLECTOR_EV_PAGE, .more = true }, S(LIST_WAIT), 0 },
		{ { .kind = REFLECTOR_EV_SEND, .stream = true }, S(LISTING), A(LIST_PAGE) },
		{ EV(PAGE), S(LISTING), A(COMMIT) },
		{ EV(COMMITTED), S(WATCH_WAIT), 0 },
		{ EV(SEND), S(WATCHING), A(WATCH) },
		{ EV(ENDED), S(WATCH_WAIT), 0 },
		{ EV(SEND), S(WATCHING), A(WATCH) },
		{ EV(EXPIRED), S(LIST_WAIT), 0 },
		{ EV(SEND), S(LIST_WAIT), 0 },   /* not yet: the expiry backoff */
	};
	struct reflector_fsm r;
	size_t i;

	(void)state;
	reflector_fsm_init(&r);
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		unsigned act = reflector_step(&r, &seq[i].ev, NOW, 0);

		if (r.state != seq[i].to || act != seq[i].act)
			fail_msg("step %zu: %s act %#x, want %s act %#x", i, reflector_state_name(r.state), act,
				 reflector_state_name(seq[i].to), seq[i].act);
	}
	assert_true(r.synced);
	assert_true(r.no_stream);
	assert_int_equal(r.reason, REFLECTOR_EXPIRED);
	assert_int_equal(reflector_step(&r, &seq[0].ev, r.due_ms, 0), A(BEGIN) | A(COUNT_LIST) | A(LIST_PAGE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_send_waits_until_due),
		cmocka_unit_test(test_expiry_backoff_doubles_caps_and_resets),
		cmocka_unit_test(test_a_resource_from_start_to_relist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
