/*
 * clock.c - the library's one clock (nf_clock.h).
 */
#include "nf_clock.h"

#include <time.h>

static unsigned long long read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

unsigned long long nf_clock_now_ns(void)
{
	return read_clock(CLOCK_MONOTONIC);
}

unsigned long long nf_clock_coarse_ns(void)
{
	return read_clock(CLOCK_MONOTONIC_COARSE);
}
