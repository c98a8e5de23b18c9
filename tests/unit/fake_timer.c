/*
 * fake_timer.c - nf_timer.h for the unit tests, in place of timer.c: no
 * thread, so nothing flushes behind a test's back (a test that wants the
 * timer's flush calls nf_coalesce_flush_due itself), and a clock that
 * stands still until the test moves fake_now.
 */
#include "core/nf_clock.h"
#include "core/nf_timer.h"

#include "fake.h"

unsigned long long fake_now = 1000000000ull;
int fake_narms;
unsigned long long fake_armed_at;
int fake_timer_down;

unsigned long long nf_clock_now_ns(void)
{
	return fake_now;
}

void nf_timer_arm(unsigned long long deadline_ns)
{
	fake_narms++;
	fake_armed_at = deadline_ns;
}

void nf_timer_let_go(void)
{
}

void nf_timer_atfork_child(void)
{
}

int nf_timer_failed(void)
{
	return fake_timer_down; /* else the fake timer "runs": a test calls its flush itself */
}
