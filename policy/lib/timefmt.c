/* timefmt.c - times and durations as text (timefmt.h). */
#include "timefmt.h"

#include <inttypes.h>
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
