/*
 * nf_clock.h - the library's one clock: what deadlines, stall times and
 * audit intervals are measured on.
 */
#ifndef NF_CLOCK_H
#define NF_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (the timer's condition variable waits on
 * the same clock). Keeps errno: clock_gettime cannot fail here. */
static inline unsigned long long nf_clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

#endif
