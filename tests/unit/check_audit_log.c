/*
 * check_audit_log.c - audit's lines (src/actions/audit/audit_log.c): a
 * pattern's first findings in full, the rest counted into repeat lines
 * that wait at most half a second, for the timer (the fake of
 * fake_timer.c: the test calls nf_audit_flush_due itself) or the exit,
 * and no finding counted in two lines. The log is stderr, which the fake
 * write records (fake.log).
 *
 * Every test runs in its own process (Check's fork mode).
 */
#include <string.h>

#include "actions/audit/nf_audit.h"
#include "fake.h"
#include "suites.h"

#define HOLD_NS 500000000ull /* the longest a count waits (audit_log.c) */
#define MS 1000000ull

static void setup(void)
{
	fake_install();
	fake_timer_down = 0;
	fake_narms = 0;
}

/* A split_write finding of 40 ms on FAKE_FD, logged ms after the last. */
static void finding_after(unsigned long long ms)
{
	struct nf_audit_finding f = { .event = NF_AUDIT_SPLIT_WRITE, .fd = FAKE_FD,
				      .side = NF_SIDE_CONNECT, .stall_ms = 40, .nwrites = 2,
				      .writes = { 6, 7 }, .held = 2, .caller = (void *)setup };

	fake_now += ms * MS;
	nf_audit_log_finding(&f);
}

/* How many times needle is in the log. */
static int in_log(const char *needle)
{
	int n = 0;

	for (const char *p = fake.log; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The three in full, each 44 ms after the last (the third at t3). */
static unsigned long long three_in_full(void)
{
	for (int i = 0; i < 3; i++)
		finding_after(44);
	ck_assert_int_eq(in_log("\"event\":\"split_write\""), 3);
	return fake_now;
}

START_TEST(test_audit_log_repeat_waits_at_most_hold_for_timer)
{
	unsigned long long t3 = three_in_full();

	finding_after(44);
	finding_after(44);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 0);
	ck_assert_int_eq(fake_narms, 1); /* the second count needs no arm */
	ck_assert_uint_eq(fake_armed_at, t3 + HOLD_NS);
	ck_assert_uint_eq(nf_audit_flush_due(t3 + HOLD_NS - 1), t3 + HOLD_NS);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 0);
	ck_assert_uint_eq(nf_audit_flush_due(t3 + HOLD_NS), 0);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_int_eq(in_log("\"count\":2,"), 1);
	ck_assert_uint_eq(nf_audit_flush_due(t3 + 2 * HOLD_NS), 0);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1); /* counted once */
}
END_TEST

START_TEST(test_audit_log_repeat_after_quiet_hold_written_at_once)
{
	three_in_full();
	finding_after(HOLD_NS / MS);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_int_eq(in_log("\"count\":1,"), 1);
	ck_assert_int_eq(fake_narms, 0);
}
END_TEST

START_TEST(test_audit_log_next_count_waits_for_last_line)
{
	unsigned long long t3 = three_in_full();

	finding_after(44);
	nf_audit_flush_due(t3 + HOLD_NS);
	fake_now = t3 + HOLD_NS;
	finding_after(10); /* 10 ms after that line: held again */
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_uint_eq(fake_armed_at, t3 + 2 * HOLD_NS);
	ck_assert_uint_eq(nf_audit_flush_due(t3 + 2 * HOLD_NS), 0);
	ck_assert_int_eq(in_log("\"count\":1,"), 2);
}
END_TEST

START_TEST(test_audit_log_exit_writes_pending_once)
{
	unsigned long long t3 = three_in_full();

	finding_after(44);
	finding_after(44);
	nf_audit_log_exit();
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_int_eq(in_log("\"count\":2,"), 1);
	ck_assert_int_eq(in_log("\"event\":\"summary\""), 1);
	ck_assert_int_eq(in_log("\"findings\":5,"), 1);
	ck_assert_uint_eq(nf_audit_flush_due(t3 + HOLD_NS), 0);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
}
END_TEST

START_TEST(test_audit_log_after_exit_written_at_once)
{
	three_in_full();
	nf_audit_log_exit();
	finding_after(44); /* an atexit handler's: the timer may never run */
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_int_eq(fake_narms, 0);
}
END_TEST

START_TEST(test_audit_log_no_timer_written_at_once)
{
	three_in_full();
	fake_timer_down = 1;
	finding_after(44);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 1);
	ck_assert_int_eq(fake_narms, 0);
}
END_TEST

START_TEST(test_audit_log_flush_due_idle_returns_zero)
{
	three_in_full();
	ck_assert_uint_eq(nf_audit_flush_due(fake_now + HOLD_NS), 0);
	ck_assert_int_eq(in_log("\"event\":\"repeat\""), 0);
}
END_TEST

Suite *audit_log_suite(void)
{
	Suite *s = suite_create("audit_log");
	TCase *tc = tcase_create("repeat");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_audit_log_repeat_waits_at_most_hold_for_timer);
	unit_add(tc, test_audit_log_repeat_after_quiet_hold_written_at_once);
	unit_add(tc, test_audit_log_next_count_waits_for_last_line);
	unit_add(tc, test_audit_log_exit_writes_pending_once);
	unit_add(tc, test_audit_log_after_exit_written_at_once);
	unit_add(tc, test_audit_log_no_timer_written_at_once);
	unit_add(tc, test_audit_log_flush_due_idle_returns_zero);
	suite_add_tcase(s, tc);
	return s;
}
