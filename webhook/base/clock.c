/* clock.c - see clock.h. */
#include "clock.h"

int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int64_t clock_mono_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

double clock_mono_s(void)
{
	return (double)clock_ns(CLOCK_MONOTONIC) / 1e9;
}

int64_t clock_wall_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

struct timespec clock_after(clockid_t id, int64_t add_ns)
{
	struct timespec ts = { 0, 0 };

	clock_gettime(id, &ts);
	ts.tv_sec += (time_t)(add_ns / 1000000000);
	ts.tv_nsec += (long)(add_ns % 1000000000);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

unsigned clock_jitter(unsigned *state, unsigned n)
{
	unsigned x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return n ? x % n : 0;
}
