/* clock.h - the process's clocks, read in one place.
 *
 * Durations, timeouts and rate limits use the monotonic clock: a step of
 * the wall clock (NTP, an operator's date) must not stretch or cut them.
 * The wall clock is only for what is shown or sent as a time of day
 * (log lines, Events, Lease renewals, report timestamps). The policy/ side
 * never reads a clock: callers pass the time in.
 *
 * No state of its own; safe from any thread. */
#ifndef DRA_GUARD_CLOCK_H
#define DRA_GUARD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds of clock id (CLOCK_MONOTONIC, CLOCK_REALTIME, a CPU-time
 * clock...). An id the kernel refuses reads as 0. */
int64_t clock_ns(clockid_t id);

/* Monotonic time in nanoseconds / milliseconds, from an arbitrary origin. */
int64_t clock_mono_ns(void);
int64_t clock_mono_ms(void);

/* Monotonic time in seconds, for durations compared with fractional
 * settings (a duty cycle, a benchmark's elapsed time). */
double clock_mono_s(void);

/* Wall-clock time in nanoseconds since the Unix epoch. */
int64_t clock_wall_ns(void);

/* The absolute time add_ns from now on clock id, as pthread_cond_timedwait
 * (CLOCK_REALTIME, or the condition's clock) wants it. */
struct timespec clock_after(clockid_t id, int64_t add_ns);

/* A number below n (0 when n is 0) from the xorshift state *state (never
 * 0: seed it with an odd value), for spreading retries and timeouts: no
 * cryptographic quality is needed. The state is the caller's; one thread
 * at a time. */
unsigned clock_jitter(unsigned *state, unsigned n);

#endif
