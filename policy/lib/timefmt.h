/* timefmt.h - wall-clock times (ns since the epoch, as passed into the
 * engine) printed for messages and exports, and the one RFC 3339 parser
 * (audit logs, flags). Pure: no clock is read, no time zone consulted. */
#ifndef DRA_GUARD_TIMEFMT_H
#define DRA_GUARD_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "str.h"

#define TIMEFMT_MAX 32
/* Longest text timefmt_parse() reads: the longest time the API server
 * writes (nanoseconds and an offset) is 35 bytes. */
#define TIMEFMT_PARSE_MAX 64

/* timefmt_parse() flags. */
#define TIMEFMT_UTC 1u             /* only "Z" or "+00:00" as the offset */
#define TIMEFMT_WHOLE_SECONDS 2u   /* no fraction of a second */

/* "2026-12-01T10:00:00Z" (whole seconds) into buf. */
void timefmt_rfc3339(int64_t ns, char buf[static TIMEFMT_MAX]);

/* An RFC 3339 date-time (2026-12-01T10:00:00Z, 2026-12-01T10:00:00.123456Z,
 * 2026-12-01T11:00:00+01:00; 'T' and 'Z' in either case; second 60 of a
 * leap second counts as the next minute's first; fraction digits past the
 * ninth dropped) into ns since the epoch in *out. 0; -EINVAL for text that
 * is not such a time (a field out of its range, February 30, a missing or
 * bad offset, trailing text, longer than TIMEFMT_PARSE_MAX, or what flags
 * forbid); -ERANGE for a time an int64 of ns since the epoch cannot hold,
 * with *out set to INT64_MIN (before 1970-01-01T00:00:00Z) or INT64_MAX
 * (from 2262-01-01T00:00:00Z, the first whole year past its reach). */
int timefmt_parse(struct str s, unsigned flags, int64_t *out);

/* A duration: "45s", "4m30s", "2h5m" (whole seconds, rounded up). */
void timefmt_duration(int64_t ns, char buf[static TIMEFMT_MAX]);

#endif
