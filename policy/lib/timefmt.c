/* timefmt.c - times and durations as text (timefmt.h). */
#include "timefmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

/* Days since 1970-01-01 into a civil date (proleptic Gregorian). */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void timefmt_rfc3339(int64_t ns, char buf[static TIMEFMT_MAX])
{
	int64_t s = ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
	int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400), y;
	int64_t rem = s - days * 86400;
	unsigned m, d;

	civil(days, &y, &m, &d);
	snprintf(buf, TIMEFMT_MAX, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02uZ", y, m, d, (unsigned)(rem / 3600),
		 (unsigned)(rem / 60 % 60), (unsigned)(rem % 60));
}

void timefmt_duration(int64_t ns, char buf[static TIMEFMT_MAX])
{
	int64_t s = ns <= 0 ? 0 : (ns + 999999999) / 1000000000;

	if (s < 60)
		snprintf(buf, TIMEFMT_MAX, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(buf, TIMEFMT_MAX, s % 60 ? "%" PRId64 "m%" PRId64 "s" : "%" PRId64 "m", s / 60, s % 60);
	else
		snprintf(buf, TIMEFMT_MAX, s / 60 % 60 ? "%" PRId64 "h%" PRId64 "m" : "%" PRId64 "h", s / 3600,
			 s / 60 % 60);
}

/* n decimal digits at p. */
static bool digits(const char *p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : mdays[m - 1];
}

int timefmt_parse(struct str s, unsigned flags, int64_t *out)
{
	const char *p = s.ptr;
	size_t i = 19;
	int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, scale = 100000000, secs;

	if (s.len < 20 || s.len > TIMEFMT_PARSE_MAX || !digits(p, 4, &y) || p[4] != '-' || !digits(p + 5, 2, &mo) ||
	    p[7] != '-' || !digits(p + 8, 2, &d) || (p[10] != 'T' && p[10] != 't') || !digits(p + 11, 2, &h) ||
	    p[13] != ':' || !digits(p + 14, 2, &mi) || p[16] != ':' || !digits(p + 17, 2, &se))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59 || se > 60)
		return -EINVAL;
	if (p[i] == '.') {
		if ((flags & TIMEFMT_WHOLE_SECONDS) || ++i >= s.len || p[i] < '0' || p[i] > '9')
			return -EINVAL;
		for (; i < s.len && p[i] >= '0' && p[i] <= '9'; i++) {
			frac += (p[i] - '0') * scale;
			scale /= 10;
		}
	}
	if (i < s.len && (p[i] == 'Z' || p[i] == 'z')) {
		i++;
	} else if (i + 6 == s.len && (p[i] == '+' || p[i] == '-') && digits(p + i + 1, 2, &oh) && p[i + 3] == ':' &&
		   digits(p + i + 4, 2, &om) && oh < 24 && om < 60) {
		sign = p[i] == '+' ? 1 : -1;
		/* RFC 3339's -00:00 is UTC with the local offset unknown: not UTC said. */
		if ((flags & TIMEFMT_UTC) && (sign < 0 || oh || om))
			return -EINVAL;
		i += 6;
	} else {
		return -EINVAL;
	}
	if (i != s.len)
		return -EINVAL;
	secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - sign * (oh * 3600 + om * 60);
	/* ns since the epoch in an int64 reach from 1970 into 2262 */
	if (secs < 0) {
		*out = INT64_MIN;
		return -ERANGE;
	}
	if (y > 2261) {
		*out = INT64_MAX;
		return -ERANGE;
	}
	*out = secs * 1000000000LL + frac;
	return 0;
}
