/*
 * check_audit.c - audit's detection (src/actions/audit/audit.c, audit_recv.c) against a
 * fake kernel (fake.h): which writes it records as held, from the
 * TCP_INFO the fake gives, how often it asks, the finding a read behind a
 * held write makes, and which gaps between two reads are the peer's piece
 * held until our delayed ACK (recv_split). tests/audit checks the same on
 * real programs and sockets.
 *
 * Every test runs in its own process (Check's fork mode).
 */
#include <errno.h>
#include <string.h>

#include "actions/audit/nf_audit.h"
#include "core/nf_conn.h"
#include "fake.h"
#include "suites.h"

#define FIRST_TRUST 16 /* clear first writes before sampling (audit.c) */
#define SMALL 100      /* a write well under FAKE_MSS */

static struct nf_conn *conn;

/* FAKE_FD: a TCP socket under action (audit, or a fix with audit=1). */
static void setup_with(enum nf_action action)
{
	struct nf_policy p = { .dflt = nf_policy_opts_default(action) };

	p.dflt.audit = action != NF_ACT_AUDIT;
	fake_install();
	ck_assert_int_eq(nf_conn_init(0), 0);
	nf_audit_setup(&p);
	nf_conn_reset(FAKE_FD, NF_KIND_TCP);
	conn = nf_conn_get(FAKE_FD);
	conn->opts = p.dflt;
	atomic_store(&conn->action, action);
}

static void setup(void)
{
	setup_with(NF_ACT_AUDIT);
}

static void setup_coalesce(void)
{
	setup_with(NF_ACT_COALESCE);
}

/* A send of len bytes as a hook makes it, the kernel taking them all:
 * whether audit recorded it as held. */
static int write_len(size_t len)
{
	struct nf_audit_send s;

	ck_assert_int_eq(nf_audit_send_begin(FAKE_FD, len, (void *)write_len, &s), 1);
	nf_audit_send_end(&s, (ssize_t)len);
	return s.held;
}

/* The same, returning how many TCP_INFO queries it made. */
static int write_asks(size_t len)
{
	int before = fake.ntcp_info;

	write_len(len);
	return fake.ntcp_info - before;
}

/* A read that returns n bytes (or -1 with err) after the clock moved
 * ms: ends the list, notes the read. */
static void read_n(ssize_t n, int err, double ms)
{
	struct nf_audit_read r;

	if (nf_audit_read_begin(FAKE_FD, (void *)read_n, &r)) {
		fake_now += (unsigned long long)(ms * 1e6);
		errno = err;
		nf_audit_read_end(&r, n);
	}
}

/* A read that returns data after the clock moved ms: ends the list. */
static void read_after(unsigned ms)
{
	read_n(1, 0, ms);
}

/* Two reads of an audit socket, of first and second bytes, the second
 * returning ms after the first: how many TCP_INFO queries they made. */
static int piece_gap(size_t first, size_t second, double ms)
{
	int before;

	read_n((ssize_t)first, 0, 0);
	before = fake.ntcp_info;
	read_n((ssize_t)second, 0, ms);
	return fake.ntcp_info - before;
}

/* n rounds of a first write and a read; the TCP_INFO queries the writes made. */
static int first_writes(int n)
{
	int asks = 0;

	for (int i = 0; i < n; i++) {
		asks += write_asks(SMALL);
		read_after(0);
	}
	return asks;
}

/* ---- what is held -------------------------------------------------------- */

START_TEST(test_audit_small_write_unacked_held)
{
	fake.unacked = 1;
	ck_assert_int_eq(write_len(SMALL), 1);
	ck_assert_int_eq(fake.ntcp_info, 1);
}
END_TEST

START_TEST(test_audit_small_write_nothing_unacked_not_held)
{
	ck_assert_int_eq(write_len(SMALL), 0);
	ck_assert_int_eq(fake.ntcp_info, 1);
}
END_TEST

START_TEST(test_audit_full_mss_write_not_held)
{
	fake.unacked = 1;
	ck_assert_int_eq(write_len(FAKE_MSS), 0);
	ck_assert_int_eq(write_len(FAKE_MSS), 0);
	ck_assert_int_eq(fake.ntcp_info, 1); /* the MSS is known after the first */
}
END_TEST

START_TEST(test_audit_after_held_small_held_unasked)
{
	fake.unacked = 1;
	ck_assert_int_eq(write_len(SMALL), 1);
	ck_assert_int_eq(write_len(SMALL / 2), 1);
	ck_assert_int_eq(fake.ntcp_info, 1);
}
END_TEST

START_TEST(test_audit_program_nodelay_never_held)
{
	fake.unacked = 1;
	atomic_store(&conn->prog_nodelay, 1);
	ck_assert_int_eq(write_len(SMALL), 0);
	ck_assert_int_eq(fake.ntcp_info, 0);
}
END_TEST

START_TEST(test_audit_keeps_errno)
{
	fake.unacked = 1;
	errno = EINTR;
	write_len(SMALL);
	ck_assert_int_eq(errno, EINTR);
}
END_TEST

/* ---- findings -------------------------------------------------------------- */

/* A held write whose bytes are still unsent when the program reads, and a
 * read that waits 40 ms: one split_write line, the held write marked. */
START_TEST(test_audit_read_behind_held_write_is_finding)
{
	write_len(SMALL); /* nothing unacked: not held */
	fake.unacked = 1;
	fake.notsent = SMALL / 2;
	ck_assert_int_eq(write_len(SMALL / 2), 1);
	read_after(40);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"event\":\"split_write\""));
	ck_assert_ptr_nonnull(strstr(fake.log, "\"writes\":[100,50],\"held\":[1]"));
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":40.000"));
}
END_TEST

/* The held bytes left before the read: no stall, no line. */
START_TEST(test_audit_held_bytes_gone_no_finding)
{
	fake.unacked = 1;
	write_len(SMALL);
	fake.notsent = 0;
	read_after(40);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

START_TEST(test_audit_short_wait_no_finding)
{
	fake.unacked = 1;
	fake.notsent = SMALL;
	write_len(SMALL);
	read_after(0); /* under NF_AUDIT_MIN_STALL_MS */
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* coalesce with audit=1: a second write before a read is what the fix
 * prevented, though nothing is unacknowledged (coalesce sent nothing). */
START_TEST(test_audit_coalesce_second_write_prevented)
{
	ck_assert_int_eq(write_len(SMALL), 0);
	ck_assert_int_eq(write_len(SMALL), 1);
	read_after(40);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"held\":[1]"));
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":null,\"prevented\":true"));
}
END_TEST

/* ---- sampling the first write after a read ------------------------------- */

START_TEST(test_audit_first_writes_sampled_after_trust)
{
	ck_assert_int_eq(first_writes(FIRST_TRUST), FIRST_TRUST);
	ck_assert_int_eq(first_writes(FIRST_TRUST - 1), 0);
	ck_assert_int_eq(first_writes(1), 1);
	ck_assert_int_eq(first_writes(FIRST_TRUST * 4), 4);
}
END_TEST

START_TEST(test_audit_second_write_always_asked)
{
	first_writes(FIRST_TRUST);
	ck_assert_int_eq(write_asks(SMALL), 0);
	ck_assert_int_eq(write_asks(SMALL), 1);
}
END_TEST

START_TEST(test_audit_held_first_write_resets_sampling)
{
	first_writes(FIRST_TRUST * 2 - 1);
	fake.unacked = 1; /* the one asked in 16 finds it held */
	ck_assert_int_eq(write_len(SMALL), 1);
	read_after(0);
	fake.unacked = 0;
	ck_assert_int_eq(first_writes(FIRST_TRUST), FIRST_TRUST);
	ck_assert_int_eq(first_writes(1), 0);
}
END_TEST

START_TEST(test_audit_forget_ends_list)
{
	fake.unacked = 1;
	write_len(SMALL);
	nf_audit_forget(FAKE_FD);
	ck_assert_int_eq(atomic_load(&nf_audit_nactive), 0);
}
END_TEST

/* ---- the receive side: recv_split ----------------------------------------- */

/* The Java-style split writer seen from the server: 6 bytes, then 7 one
 * delayed ACK later (44 ms, as measured on loopback): one recv_split
 * line, one TCP_INFO query. */
START_TEST(test_audit_recv_piece_after_delayed_ack_is_finding)
{
	ck_assert_int_eq(piece_gap(6, 7, 44), 1);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"event\":\"recv_split\""));
	ck_assert_ptr_nonnull(strstr(fake.log, "\"pieces\":[6,7],\"caller\":"));
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":44.000,\"ato_ms\":40.000"));
}
END_TEST

/* The window is [ato - 5 ms, ato + rtt + 15 ms]: 35 and 55 ms are in it. */
START_TEST(test_audit_recv_window_edges_are_findings)
{
	ck_assert_int_eq(piece_gap(6, 7, 35), 1);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":35.000"));
	ck_assert_int_eq(piece_gap(6, 7, 55), 1);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":55.000"));
}
END_TEST

/* A one-way sender pausing 100 ms: asked about (a candidate), no finding. */
START_TEST(test_audit_recv_one_way_pause_no_finding)
{
	ck_assert_int_eq(piece_gap(10, 10, 100), 1);
	ck_assert_int_eq(piece_gap(10, 10, 100), 1);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* Just past the window (the delayed ACK's 40 ms and its margins): none. */
START_TEST(test_audit_recv_outside_ato_window_no_finding)
{
	ck_assert_int_eq(piece_gap(6, 7, 34), 0); /* under 35 ms: not even asked */
	ck_assert_int_eq(piece_gap(6, 7, 56), 1);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* Answers within a millisecond, read after read: no TCP_INFO at all. */
START_TEST(test_audit_recv_quick_reads_ask_nothing)
{
	for (int i = 0; i < 100; i++)
		read_n(10, 0, 1);
	ck_assert_int_eq(fake.ntcp_info, 0);
	read_n(10, 0, 251); /* over 250 ms: not asked either */
	ck_assert_int_eq(fake.ntcp_info, 0);
}
END_TEST

/* A send between the two reads: what came next may answer it. */
START_TEST(test_audit_recv_send_between_no_finding)
{
	int asked;

	read_n(6, 0, 0);
	write_len(SMALL);
	asked = fake.ntcp_info;
	read_n(7, 0, 44);
	ck_assert_int_eq(fake.ntcp_info, asked);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* End of file or an error ends the gap; EAGAIN does not. */
START_TEST(test_audit_recv_eof_ends_gap_eagain_does_not)
{
	read_n(6, 0, 0);
	read_n(0, 0, 1);
	read_n(7, 0, 43);
	ck_assert_uint_eq(fake.nlog, 0);
	read_n(-1, EAGAIN, 20);
	read_n(7, 0, 24);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"stall_ms\":44.000"));
}
END_TEST

/* A first piece larger than a segment is ACKed at once: no stall. */
START_TEST(test_audit_recv_first_over_rcv_mss_no_finding)
{
	ck_assert_int_eq(piece_gap(FAKE_RCV_MSS + 1, 7, 44), 1);
	ck_assert_uint_eq(fake.nlog, 0);
	ck_assert_int_eq(piece_gap(FAKE_RCV_MSS, 7, 44), 1); /* one segment: delayed */
	ck_assert_ptr_nonnull(strstr(fake.log, "\"recv_split\""));
}
END_TEST

/* The second piece came long before the read (the program was busy). */
START_TEST(test_audit_recv_piece_waiting_in_buffer_no_finding)
{
	fake.last_data_recv = 40;
	ck_assert_int_eq(piece_gap(6, 7, 44), 1);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* tcpi_ato grows with the arrival interval, but the kernel bounds the
 * delay by the RTT (at least 40 ms): an ato of 80 ms on loopback still
 * delays 40 ms; with an RTT of 100 ms, 80 ms it is. */
START_TEST(test_audit_recv_ato_bounded_by_rtt)
{
	fake.ato = 80000;
	ck_assert_int_eq(piece_gap(6, 7, 44), 1);
	ck_assert_ptr_nonnull(strstr(fake.log, "\"ato_ms\":80.000"));
	fake.nlog = 0;
	fake.rtt = 100000;
	ck_assert_int_eq(piece_gap(6, 7, 44), 1);
	ck_assert_uint_eq(fake.nlog, 0);
	ck_assert_int_eq(piece_gap(6, 7, 182), 1); /* 80 + 100 ms round trip */
	ck_assert_ptr_nonnull(strstr(fake.log, "\"recv_split\""));
}
END_TEST

/* TCP_INFO fails (a connection the peer reset meanwhile): no finding,
 * and the program's errno is the read's. */
START_TEST(test_audit_recv_tcp_info_fails_keeps_errno)
{
	struct nf_audit_read r;

	read_n(6, 0, 0);
	fake.tcp_info_err = ENOTCONN;
	ck_assert_int_eq(nf_audit_read_begin(FAKE_FD, NULL, &r), 1);
	fake_now += 44000000ull;
	errno = EINTR;
	nf_audit_read_end(&r, 7);
	ck_assert_int_eq(errno, EINTR);
	ck_assert_int_eq(fake.ntcp_info, 1);
	ck_assert_uint_eq(fake.nlog, 0);
}
END_TEST

/* A fix with audit=1 logs what it prevented: its reads are not watched. */
START_TEST(test_audit_recv_not_on_a_fix)
{
	struct nf_audit_read r;

	ck_assert_int_eq(nf_audit_read_begin(FAKE_FD, NULL, &r), 0);
}
END_TEST

static TCase *held_case(void)
{
	TCase *tc = tcase_create("held");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_audit_small_write_unacked_held);
	unit_add(tc, test_audit_small_write_nothing_unacked_not_held);
	unit_add(tc, test_audit_full_mss_write_not_held);
	unit_add(tc, test_audit_after_held_small_held_unasked);
	unit_add(tc, test_audit_program_nodelay_never_held);
	unit_add(tc, test_audit_keeps_errno);
	unit_add(tc, test_audit_forget_ends_list);
	return tc;
}

static TCase *finding_case(void)
{
	TCase *tc = tcase_create("finding");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_audit_read_behind_held_write_is_finding);
	unit_add(tc, test_audit_held_bytes_gone_no_finding);
	unit_add(tc, test_audit_short_wait_no_finding);
	return tc;
}

static TCase *prevented_case(void)
{
	TCase *tc = tcase_create("prevented");

	tcase_add_checked_fixture(tc, setup_coalesce, NULL);
	unit_add(tc, test_audit_coalesce_second_write_prevented);
	return tc;
}

static TCase *recv_case(void)
{
	TCase *tc = tcase_create("recv");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_audit_recv_piece_after_delayed_ack_is_finding);
	unit_add(tc, test_audit_recv_window_edges_are_findings);
	unit_add(tc, test_audit_recv_one_way_pause_no_finding);
	unit_add(tc, test_audit_recv_outside_ato_window_no_finding);
	unit_add(tc, test_audit_recv_quick_reads_ask_nothing);
	unit_add(tc, test_audit_recv_send_between_no_finding);
	unit_add(tc, test_audit_recv_eof_ends_gap_eagain_does_not);
	unit_add(tc, test_audit_recv_first_over_rcv_mss_no_finding);
	unit_add(tc, test_audit_recv_piece_waiting_in_buffer_no_finding);
	unit_add(tc, test_audit_recv_ato_bounded_by_rtt);
	unit_add(tc, test_audit_recv_tcp_info_fails_keeps_errno);
	return tc;
}

static TCase *recv_fix_case(void)
{
	TCase *tc = tcase_create("recv-fix");

	tcase_add_checked_fixture(tc, setup_coalesce, NULL);
	unit_add(tc, test_audit_recv_not_on_a_fix);
	return tc;
}

static TCase *sampling_case(void)
{
	TCase *tc = tcase_create("sampling");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_audit_first_writes_sampled_after_trust);
	unit_add(tc, test_audit_second_write_always_asked);
	unit_add(tc, test_audit_held_first_write_resets_sampling);
	return tc;
}

Suite *audit_suite(void)
{
	Suite *s = suite_create("audit");

	suite_add_tcase(s, held_case());
	suite_add_tcase(s, finding_case());
	suite_add_tcase(s, prevented_case());
	suite_add_tcase(s, sampling_case());
	suite_add_tcase(s, recv_case());
	suite_add_tcase(s, recv_fix_case());
	return s;
}
