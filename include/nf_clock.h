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

/* The same clock as the kernel last stepped it (CLOCK_MONOTONIC_COARSE):
 * up to one scheduler tick (1-4 ms) behind nf_clock_now_ns, for a deadline
 * that tolerates that, at a quarter of the cost (about 4 ns a call here
 * against 16). Keeps errno. */
unsigned long long nf_clock_coarse_ns(void);

#endif
