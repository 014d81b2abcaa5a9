/* test_timefmt.c - the one RFC 3339 parser (audit logs, flags) and the
 * printers beside it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "timefmt.h"

#define NS 1000000000LL
/* 2026-12-01T10:00:00Z */
#define T0 1796119200LL

struct parse_case {
	const char *text;
	unsigned flags;
	int rc;
	int64_t want;      /* when rc is 0, or -ERANGE's clamp */
};

static void test_parse(void **state)
{
	static const struct parse_case cases[] = {
		/* valid */
		{ "1970-01-01T00:00:00Z", 0, 0, 0 },
		{ "2026-12-01T10:00:00Z", 0, 0, T0 * NS },
		{ "2026-12-01t10:00:00z", 0, 0, T0 * NS },
		{ "2024-02-29T00:00:00Z", 0, 0, 1709164800LL * NS },
		{ "2000-02-29T00:00:00Z", 0, 0, 951782400LL * NS },
		{ "2261-12-31T23:59:59Z", 0, 0, 9214646399LL * NS },
		/* fractional */
		{ "2026-12-01T10:00:00.5Z", 0, 0, T0 * NS + 500000000 },
		{ "2026-12-01T10:00:00.000001Z", 0, 0, T0 * NS + 1000 },
		{ "2026-12-01T10:00:00.123456789Z", 0, 0, T0 * NS + 123456789 },
		{ "2026-12-01T10:00:00.1234567891Z", 0, 0, T0 * NS + 123456789 },
		{ "2026-12-01T10:00:00.Z", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00.5", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00.5Z", TIMEFMT_WHOLE_SECONDS, -EINVAL, 0 },
		/* offset */
		{ "2026-12-01T11:30:00+01:30", 0, 0, T0 * NS },
		{ "2026-12-01T08:00:00-02:00", 0, 0, T0 * NS },
		{ "2026-12-01T10:00:00.25+00:00", 0, 0, T0 * NS + 250000000 },
		{ "2026-12-01T10:00:00+00:00", TIMEFMT_UTC, 0, T0 * NS },
		{ "2026-12-01T11:00:00+01:00", TIMEFMT_UTC, -EINVAL, 0 },
		{ "2026-12-01T10:00:00-00:00", TIMEFMT_UTC, -EINVAL, 0 },
		{ "2026-12-01T10:00:00-00:00", 0, 0, T0 * NS },
		{ "2026-12-01T10:00:00+0100", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00+24:00", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00+01:60", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00", 0, -EINVAL, 0 },
		/* leap: the leap second is the next minute's first; February 29 only in leap years */
		{ "2016-12-31T23:59:60Z", 0, 0, 1483228800LL * NS },
		{ "2016-12-31T23:59:61Z", 0, -EINVAL, 0 },
		{ "2026-02-29T00:00:00Z", 0, -EINVAL, 0 },
		{ "1900-02-29T00:00:00Z", 0, -EINVAL, 0 },
		{ "2026-02-30T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-04-31T10:00:00Z", 0, -EINVAL, 0 },
		/* pre-1970, and past what an int64 of ns holds */
		{ "1969-12-31T23:59:59Z", 0, -ERANGE, INT64_MIN },
		{ "1969-12-31T23:59:59.999999999Z", 0, -ERANGE, INT64_MIN },
		{ "0000-01-01T00:00:00Z", 0, -ERANGE, INT64_MIN },
		{ "1970-01-01T00:30:00+01:00", 0, -ERANGE, INT64_MIN },
		{ "1969-12-31T23:00:00-01:00", 0, 0, 0 },
		{ "2262-01-01T00:00:00Z", 0, -ERANGE, INT64_MAX },
		{ "9999-12-31T23:59:59Z", 0, -ERANGE, INT64_MAX },
		/* garbage */
		{ "", 0, -EINVAL, 0 },
		{ "x", 0, -EINVAL, 0 },
		{ "yesterday", 0, -EINVAL, 0 },
		{ "2026-12-01 10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-13-01T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-00-01T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-12-00T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-12-01T24:00:00Z", 0, -EINVAL, 0 },
		{ "2026-12-01T10:60:00Z", 0, -EINVAL, 0 },
		{ "2026-1-1T10:00:00Z", 0, -EINVAL, 0 },
		{ " 2026-12-01T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00ZZ", 0, -EINVAL, 0 },
		{ "2026-12-01T10:00:00Z ", 0, -EINVAL, 0 },
		{ "+2026-12-01T10:00:00Z", 0, -EINVAL, 0 },
		{ "2026-12-01T1a:00:00Z", 0, -EINVAL, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t got = -1;
		int rc = timefmt_parse(str_from_cstr(cases[i].text), cases[i].flags, &got);

		if (rc != cases[i].rc || (rc != -EINVAL && got != cases[i].want))
			fail_msg("\"%s\" (flags %u): %d, %lld; want %d, %lld", cases[i].text, cases[i].flags, rc,
				 (long long)got, cases[i].rc, (long long)cases[i].want);
	}
}

/* Overlong text is refused before it is read, and a text is read only to
 * its length, never to a NUL. */
static void test_parse_bounds(void **state)
{
	char text[TIMEFMT_PARSE_MAX + 2];
	int64_t got;
	size_t n;

	(void)state;
	/* the longest accepted: fraction digits up to the cap */
	memcpy(text, "2026-12-01T10:00:00.", 20);
	n = TIMEFMT_PARSE_MAX - 1;
	memset(text + 20, '0', n - 20);
	text[n] = 'Z';
	text[n + 1] = '\0';
	assert_int_equal(timefmt_parse((struct str){ text, n + 1 }, 0, &got), 0);
	assert_int_equal(got, T0 * NS);
	/* one byte more */
	memset(text + 20, '0', n + 1 - 20);
	text[n + 1] = 'Z';
	assert_int_equal(timefmt_parse((struct str){ text, n + 2 }, 0, &got), -EINVAL);
	/* a slice of a longer text: its length counts, not the rest */
	assert_int_equal(timefmt_parse((struct str){ "2026-12-01T10:00:00Zjunk", 20 }, 0, &got), 0);
	assert_int_equal(got, T0 * NS);
	assert_int_equal(timefmt_parse((struct str){ "2026-12-01T10:00:00Z", 19 }, 0, &got), -EINVAL);
}

/* What timefmt_rfc3339() prints, timefmt_parse() reads back. */
static void test_round_trip(void **state)
{
	static const int64_t secs[] = { 0, 1, 59, 86399, 86400, 951782400, 1709164800, T0, 9214646399LL };
	char buf[TIMEFMT_MAX];
	int64_t got;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		timefmt_rfc3339(secs[i] * NS, buf);
		assert_int_equal(timefmt_parse(str_from_cstr(buf), TIMEFMT_UTC | TIMEFMT_WHOLE_SECONDS, &got), 0);
		assert_int_equal(got, secs[i] * NS);
	}
	timefmt_rfc3339(T0 * NS, buf);
	assert_string_equal(buf, "2026-12-01T10:00:00Z");
}

static void test_durations(void **state)
{
	static const struct {
		int64_t ns;
		const char *want;
	} cases[] = {
		{ 0, "0s" }, { -5, "0s" }, { 1, "1s" }, { 45 * NS, "45s" }, { 60 * NS, "1m" },
		{ 270 * NS, "4m30s" }, { 3600 * NS, "1h" }, { 7500 * NS, "2h5m" },
	};
	char buf[TIMEFMT_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		timefmt_duration(cases[i].ns, buf);
		assert_string_equal(buf, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_durations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
