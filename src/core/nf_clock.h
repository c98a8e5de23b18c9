/*
 * nf_clock.h - the library's one clock: what deadlines, stall times and
 * audit intervals are measured on.
 */
#ifndef NF_CLOCK_H
#define NF_CLOCK_H

/* CLOCK_MONOTONIC in nanoseconds (the timer's condition variable waits on
 * the same clock). Keeps errno: clock_gettime cannot fail here. A function
 * of its own (clock.c), so that the unit tests can link a clock they move
 * in its place (tests/unit/fake_timer.c). */
unsigned long long nf_clock_now_ns(void);

#endif
