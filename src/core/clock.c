/*
 * clock.c - the library's one clock (nf_clock.h).
 */
#include "nf_clock.h"

#include <time.h>

unsigned long long nf_clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
