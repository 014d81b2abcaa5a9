/* timefmt.h - wall-clock times (ns since the epoch, as passed into the
 * engine) printed for messages and exports. Pure: no clock is read, no
 * time zone consulted (UTC only). */
#ifndef DRA_GUARD_TIMEFMT_H
#define DRA_GUARD_TIMEFMT_H

#include <stdint.h>

#define TIMEFMT_MAX 32

/* "2026-12-01T10:00:00Z" (whole seconds) into buf. */
void timefmt_rfc3339(int64_t ns, char buf[static TIMEFMT_MAX]);

/* A duration: "45s", "4m30s", "2h5m" (whole seconds, rounded up). */
void timefmt_duration(int64_t ns, char buf[static TIMEFMT_MAX]);

#endif
