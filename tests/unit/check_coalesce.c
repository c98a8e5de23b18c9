/*
 * check_coalesce.c - the coalesce buffer (src/actions/coalesce/coalesce.c) against a fake
 * kernel (fake.h): what is held, what each send is offered, in which
 * order, and what the program is told, decided by the fakes, not by
 * timing. tests/coalesce checks the same contract on real sockets.
 *
 * Every test runs in its own process (Check's fork mode): the fd table,
 * the pending set and the fakes start empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "actions/coalesce/nf_coalesce.h"
#include "actions/coalesce/coalesce_int.h" /* TRUST_AFTER, WHOLE_AFTER; nf_co_append */
#include "core/nf_conn.h"
#include "core/nf_timer.h"
#include "fake.h"
#include "suites.h"

static struct nf_conn *conn;

/* FAKE_FD: a TCP socket under the coalesce rule's defaults, but for
 * start=split (held from its first write: how every connection holds once
 * it has split a message; the "start" case tests the default). */
static void setup(void)
{
	fake_install();
	ck_assert_int_eq(nf_conn_init(0), 0);
	nf_conn_reset(FAKE_FD, NF_KIND_TCP);
	conn = nf_conn_get(FAKE_FD);
	conn->opts = nf_policy_opts_default(NF_ACT_COALESCE);
	conn->opts.start = NF_START_SPLIT;
	atomic_store(&conn->action, NF_ACT_COALESCE);
}

/* The program writes s with flags; what it is told. */
static ssize_t put(const char *s, int flags)
{
	return nf_coalesce_send_buf(conn, FAKE_FD, s, strlen(s), flags);
}

/* Writes s, which must be held: reported written, nothing sent. */
static void hold(const char *s)
{
	int before = fake.nsends;

	ck_assert_int_eq(put(s, 0), (ssize_t)strlen(s));
	ck_assert_int_eq(fake.nsends, before);
}

/* Connections in the pending set: holding bytes, or emptied since the
 * timer's last look. */
static int npending(void)
{
	return atomic_load(&nf_coalesce_npending);
}

static void flush(void);

/* Does the connection hold nothing? A flush then offers nothing. */
static int holds_nothing(void)
{
	int before = fake.nsends;

	flush();
	return fake.nsends == before;
}

static void flush(void)
{
	nf_coalesce_flush(conn, FAKE_FD);
}

/* Send i was offered exactly s. */
static void ck_offered(int i, const char *s)
{
	ck_assert_int_lt(i, fake.nsends);
	ck_assert_uint_eq(fake.sends[i].len, strlen(s));
	ck_assert_mem_eq(fake_offered(i), s, strlen(s));
}

/* ---- holding ---------------------------------------------------------- */

START_TEST(test_coalesce_small_write_held)
{
	ck_assert_int_eq(put("hello", 0), 5);
	ck_assert_int_eq(fake.nsends, 0);
	ck_assert_int_eq(npending(), 1);
	ck_assert_int_eq(fake_narms, 1);
	ck_assert_uint_eq(fake_armed_at, fake_now + NF_FLUSH_DEFAULT_US * 1000ull);
}
END_TEST

START_TEST(test_coalesce_second_write_appends)
{
	hold("hello ");
	ck_assert_int_eq(put("world", 0), 5);
	ck_assert_int_eq(fake.nsends, 0);
	ck_assert_int_eq(fake_narms, 1); /* the oldest byte's deadline stands */
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	ck_offered(0, "hello world");
}
END_TEST

START_TEST(test_coalesce_flush_sends_held_in_one_call)
{
	hold("GET / HTTP/1.1\r\n");
	hold("Host: x\r\n");
	hold("\r\n");
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_int_eq(fake.sends[0].fd, FAKE_FD);
	ck_assert_int_eq(fake.sends[0].flags & (MSG_DONTWAIT | MSG_NOSIGNAL),
			 MSG_DONTWAIT | MSG_NOSIGNAL);
	ck_offered(0, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert(holds_nothing());
	flush(); /* nothing left: no call */
	ck_assert_int_eq(fake.nsends, 1);
}
END_TEST

/* A buffer the program's flush emptied stays in the pending set (the next
 * message's hold needs no lock of the set); the timer's look drops it,
 * sending nothing, and the next hold adds it again. */
START_TEST(test_coalesce_emptied_stays_listed_until_timer_look)
{
	hold("request 1");
	flush();
	ck_assert(holds_nothing());
	ck_assert_int_eq(npending(), 1);
	hold("request 2");
	ck_assert_int_eq(npending(), 1);
	ck_assert_int_eq(fake_narms, 2); /* each message's first hold arms */
	flush();
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_now), 0); /* nothing due: none next */
	ck_assert_int_eq(npending(), 0);
	ck_assert_int_eq(fake.nsends, 2);
	hold("request 3");
	ck_assert_int_eq(npending(), 1);
}
END_TEST

/* A hold the timer itself sends leaves the set with it: no later look is
 * promised, and a listed empty buffer would keep every read and wait of
 * the process on the slow path. */
START_TEST(test_coalesce_timer_flush_unlists)
{
	hold("request");
	fake_now += NF_FLUSH_DEFAULT_US * 1000ull;
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_now), 0);
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_int_eq(npending(), 0);
}
END_TEST

START_TEST(test_coalesce_nothing_held_before_established)
{
	fake.tcp_state = TCP_SYN_SENT;
	ck_assert_int_eq(put("hello", 0), NF_CO_PASS);
	ck_assert_int_eq(fake.nsends, 0);
	ck_assert_int_eq(fake.ntcp_info, 1);
	ck_assert_int_eq(npending(), 0);
	fake.tcp_state = TCP_ESTABLISHED;
	hold("hello");
}
END_TEST

START_TEST(test_coalesce_established_asked_once)
{
	hold("a");
	hold("b");
	flush();
	hold("c");
	ck_assert_int_eq(fake.ntcp_info, 1);
}
END_TEST

START_TEST(test_coalesce_close_wait_holds)
{
	fake.tcp_state = TCP_CLOSE_WAIT; /* the peer closed its side only */
	hold("bye");
}
END_TEST

/* ---- flushing: partial counts, EAGAIN, errors --------------------------- */

START_TEST(test_coalesce_partial_flush_keeps_rest_in_order)
{
	hold("hello ");
	hold("world");
	fake_take(3);
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_str_eq(fake_wire(), "hel");
	ck_assert_int_eq(npending(), 1);
	flush();
	ck_assert_int_eq(fake.nsends, 2);
	ck_offered(1, "lo world");
	ck_assert_str_eq(fake_wire(), "hello world");
	ck_assert(holds_nothing());
}
END_TEST

START_TEST(test_coalesce_eagain_flush_keeps_all)
{
	hold("hello ");
	hold("world");
	fake_fail(EAGAIN);
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_uint_eq(fake.nwire, 0);
	ck_assert_int_eq(npending(), 1);
	flush();
	ck_offered(1, "hello world");
	ck_assert_str_eq(fake_wire(), "hello world");
}
END_TEST

START_TEST(test_coalesce_eagain_flush_keeps_errno)
{
	hold("hello");
	fake_fail(EAGAIN);
	errno = EINTR;
	flush();
	ck_assert_int_eq(errno, EINTR);
}
END_TEST

/* _i: 0 EPIPE, 1 ECONNRESET. The flush is nf_coalesce_flush's. */
static const int conn_errors[] = { EPIPE, ECONNRESET };

START_TEST(test_coalesce_flush_error_reported_by_next_send)
{
	int err = conn_errors[_i];

	hold("hello ");
	hold("world");
	fake_fail(err);
	flush();
	ck_assert(holds_nothing()); /* dropped */
	errno = 0;
	ck_assert_int_eq(put("again", MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, err);
	ck_assert_int_eq(fake.nsends, 1); /* the held bytes were not offered again */
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	/* reported once: later sends are the kernel's to fail */
	ck_assert_int_eq(put("more", MSG_NOSIGNAL), NF_CO_PASS);
}
END_TEST

/* The same from the timer's flush (nf_coalesce_flush_due). */
START_TEST(test_coalesce_timer_flush_error_reported_by_next_send)
{
	int err = conn_errors[_i];

	hold("hello");
	fake_fail(err);
	fake_now = fake_armed_at;
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_now), 0);
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_int_eq(fake.sends[0].flags & (MSG_DONTWAIT | MSG_NOSIGNAL),
			 MSG_DONTWAIT | MSG_NOSIGNAL);
	errno = 0;
	ck_assert_int_eq(put("again", MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, err);
	ck_assert_int_eq(fake.nsends, 1);
}
END_TEST

static volatile sig_atomic_t sigpipes;

static void count_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

START_TEST(test_coalesce_flush_epipe_owes_sigpipe)
{
	signal(SIGPIPE, count_sigpipe);
	hold("hello");
	fake_fail(EPIPE);
	flush();
	ck_assert_int_eq(sigpipes, 0); /* not in the background flush */
	ck_assert_int_eq(put("again", 0), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(sigpipes, 1); /* in the send that reports it */
}
END_TEST

START_TEST(test_coalesce_timer_flush_waits_for_deadline)
{
	hold("hello");
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_armed_at - 1), fake_armed_at);
	ck_assert_int_eq(fake.nsends, 0);
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_armed_at), 0);
	ck_offered(0, "hello");
}
END_TEST

/* ---- writes the buffer does not take ------------------------------------ */

/* A buffer of 64 bytes holding "held:": a write of 60 does not fit. */
static char big[61];

static void hold_then_big(void)
{
	conn->opts.buffer = 64;
	hold("held:");
	memset(big, 'b', 60);
}

START_TEST(test_coalesce_large_write_after_held_one_sendmsg)
{
	hold_then_big();
	ck_assert_int_eq(put(big, MSG_DONTWAIT), 60);
	ck_assert_int_eq(fake.nsends, 1);
	ck_assert_int_eq(fake.sends[0].call, FAKE_SENDMSG);
	ck_assert_int_eq(fake.sends[0].niov, 2);
	ck_assert_uint_eq(fake.sends[0].first_len, 5); /* held bytes first */
	ck_assert_uint_eq(fake.sends[0].len, 65);
	ck_assert_mem_eq(fake_offered(0), "held:", 5);
	ck_assert_mem_eq(fake_offered(0) + 5, big, 60);
	ck_assert_int_eq(npending(), 0);
}
END_TEST

/* A blocking socket: the held bytes alone first, corked (MSG_MORE), so
 * that a shutdown waits only for what the program was told was written. */
START_TEST(test_coalesce_large_write_blocking_held_first_corked)
{
	hold_then_big();
	ck_assert_int_eq(put(big, 0), 60);
	ck_assert_int_eq(fake.nsends, 2);
	ck_offered(0, "held:");
	ck_assert_int_ne(fake.sends[0].flags & MSG_MORE, 0);
	ck_assert_int_eq(fake.sends[1].len, 60);
	ck_assert_mem_eq(fake.wire + 5, big, 60);
}
END_TEST

/* The kernel takes the held bytes and part of the program's: the
 * program is told its part, nothing stays held. */
START_TEST(test_coalesce_large_write_partial_counts_program_bytes)
{
	hold_then_big();
	fake_take(5 + 20);
	ck_assert_int_eq(put(big, MSG_DONTWAIT), 20);
	ck_assert_int_eq(npending(), 0);
}
END_TEST

/* The kernel takes part of the held bytes only: the program's call gets
 * EAGAIN, and the rest of the held bytes stays, in order. */
START_TEST(test_coalesce_large_write_eagain_keeps_held_rest)
{
	hold_then_big();
	fake_take(2);
	ck_assert_int_eq(put(big, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	flush();
	ck_offered(1, "ld:");
	ck_assert_str_eq(fake_wire(), "held:");
}
END_TEST

/* A socket the kernel left full holds nothing: a small write goes out
 * with what is held, in one call; a whole send ends the full state. */
START_TEST(test_coalesce_full_socket_passes_writes_through)
{
	hold("hello ");
	fake_fail(EAGAIN);
	flush(); /* full */
	ck_assert_int_eq(put("world", MSG_DONTWAIT), 5);
	ck_assert_int_eq(fake.nsends, 2);
	ck_assert_int_eq(fake.sends[1].call, FAKE_SENDMSG);
	ck_offered(1, "hello world");
	ck_assert_int_eq(npending(), 0);
	hold("!"); /* taken whole: holding again */
}
END_TEST

START_TEST(test_coalesce_full_socket_eagain_to_program)
{
	hold("hello ");
	fake_fail(EAGAIN);
	flush();
	fake_fail(EAGAIN);
	ck_assert_int_eq(put("world", MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(fake.nsends, 2);
	flush(); /* "hello " still held, "world" never was */
	ck_offered(2, "hello ");
}
END_TEST

START_TEST(test_coalesce_before_send_pushes_held)
{
	/* A send the buffer cannot take (MSG_OOB is not in NF_COALESCE_FLAGS)
	 * goes to the kernel after what is held. */
	hold("hello");
	ck_assert_int_eq(nf_coalesce_before_send(conn, FAKE_FD, MSG_OOB), 0);
	ck_assert_int_eq(fake.nsends, 1);
	ck_offered(0, "hello");
}
END_TEST

START_TEST(test_coalesce_before_send_reports_stored_error)
{
	hold("hello");
	fake_fail(ECONNRESET);
	flush();
	ck_assert_int_eq(nf_coalesce_before_send(conn, FAKE_FD, MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, ECONNRESET);
}
END_TEST

/* ---- the flush deadline: trust after TRUST_AFTER program flushes ------- */

/* n rounds of a hold of two writes the program's own flush sends (two:
 * whole messages go straight); the deadline of the last hold, less the
 * clock. */
static unsigned long long rounds(int n)
{
	unsigned long long wait = 0;

	for (int i = 0; i < n; i++) {
		int arms = fake_narms;

		hold("pi");
		ck_assert_int_eq(fake_narms, arms + 1);
		wait = fake_armed_at - fake_now;
		hold("ng");
		flush();
	}
	return wait;
}

START_TEST(test_coalesce_trusted_after_64_program_flushes)
{
	ck_assert_uint_eq(rounds(TRUST_AFTER), NF_FLUSH_DEFAULT_US * 1000ull);
	ck_assert_uint_eq(rounds(1), NF_TIMER_TICK_NS);
	ck_assert_int_eq(fake.nsends, TRUST_AFTER + 1);
}
END_TEST

START_TEST(test_coalesce_timer_flush_ends_trust)
{
	rounds(TRUST_AFTER);
	hold("late");
	ck_assert_uint_eq(fake_armed_at - fake_now, NF_TIMER_TICK_NS);
	fake_now = fake_armed_at;
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_now), 0); /* the timer sent it */
	ck_assert_uint_eq(rounds(1), NF_FLUSH_DEFAULT_US * 1000ull);
}
END_TEST

START_TEST(test_coalesce_long_flush_kept_when_trusted)
{
	conn->opts.flush_us = 50000; /* longer than a tick: trust changes nothing */
	ck_assert_uint_eq(rounds(TRUST_AFTER + 1), 50000000ull);
}
END_TEST

/* ---- whole messages: straight after WHOLE_AFTER one-write holds -------- */

/* n rounds of one write, held, which the program's read sends. */
static void whole_rounds(int n)
{
	for (int i = 0; i < n; i++) {
		hold("request");
		flush();
	}
}

START_TEST(test_coalesce_whole_messages_go_straight)
{
	whole_rounds(WHOLE_AFTER - 1);
	hold("request"); /* one short of the streak: still held */
	flush();
	ck_assert_int_eq(put("request", 0), NF_CO_PASS); /* the program's own call */
	ck_assert_int_eq(fake.nsends, WHOLE_AFTER); /* nothing of ours */
	ck_assert_int_eq(put("request", 0), 7); /* no read since: the next is held */
}
END_TEST

START_TEST(test_coalesce_read_lets_next_go_straight)
{
	whole_rounds(WHOLE_AFTER);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(put("request", 0), NF_CO_PASS);
		flush(); /* the read: nothing held, the next may go */
	}
	ck_assert_int_eq(fake.nsends, WHOLE_AFTER); /* the straight ones were not ours */
}
END_TEST

START_TEST(test_coalesce_second_write_ends_whole_streak)
{
	whole_rounds(WHOLE_AFTER);
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
	hold("world"); /* no read between: the message was not whole */
	flush();
	ck_offered(WHOLE_AFTER, "world");
	whole_rounds(WHOLE_AFTER - 1); /* a new streak from nothing: all held */
	hold("request");
	flush();
	ck_assert_int_eq(put("request", 0), NF_CO_PASS);
}
END_TEST

START_TEST(test_coalesce_two_write_messages_never_straight)
{
	rounds(WHOLE_AFTER + 1);
	hold("request");
}
END_TEST

/* Holds c->lock until told to let go, as another thread's write would. */
static atomic_int let_go;
static void *lock_holder(void *locked)
{
	pthread_mutex_lock(&conn->lock);
	atomic_store((atomic_int *)locked, 1);
	while (!atomic_load(&let_go))
		usleep(1000);
	pthread_mutex_unlock(&conn->lock);
	return NULL;
}

START_TEST(test_coalesce_straight_without_the_lock)
{
	atomic_int locked = 0;
	pthread_t t;

	whole_rounds(WHOLE_AFTER);
	ck_assert_int_eq(pthread_create(&t, NULL, lock_holder, &locked), 0);
	while (!atomic_load(&locked))
		usleep(1000);
	ck_assert_int_eq(put("request", 0), NF_CO_PASS); /* would wait for the lock */
	atomic_store(&let_go, 1);
	pthread_join(t, NULL);
}
END_TEST

START_TEST(test_coalesce_straight_only_for_its_socket)
{
	whole_rounds(WHOLE_AFTER);
	atomic_fetch_add(&conn->gen, 1); /* the fd now names another socket */
	hold("request"); /* learned by the old one: held, learning anew */
	flush();
	ck_assert_int_eq(put("request", 0), 7);
}
END_TEST

/* A hold made elsewhere than by a write's own decision (send_through's
 * retry, after another thread's send): the streak ends, so the next write
 * queues behind it instead of going straight past it. */
START_TEST(test_coalesce_any_hold_ends_whole_streak)
{
	struct iovec v = { .iov_base = "late ", .iov_len = 5 };

	whole_rounds(WHOLE_AFTER);
	pthread_mutex_lock(&conn->lock);
	ck_assert_int_eq(nf_co_append(conn, &v, 1, 5), 0);
	pthread_mutex_unlock(&conn->lock);
	hold("request");
	flush();
	ck_offered(WHOLE_AFTER, "late request");
}
END_TEST

/* A read's flush that fails on the hold that would complete the streak:
 * the error is the next send's, which must not go straight past it. */
START_TEST(test_coalesce_failed_flush_never_goes_straight)
{
	whole_rounds(WHOLE_AFTER - 1);
	hold("request");
	fake_fail(ECONNRESET);
	flush();
	errno = 0;
	ck_assert_int_eq(put("request", MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, ECONNRESET);
}
END_TEST

START_TEST(test_coalesce_timer_flush_ends_whole_streak)
{
	whole_rounds(WHOLE_AFTER - 1);
	hold("late");
	fake_now = fake_armed_at;
	ck_assert_uint_eq(nf_coalesce_flush_due(fake_now), 0); /* the timer sent it */
	whole_rounds(1);
	hold("request"); /* the streak starts over */
}
END_TEST

/* ---- start=whole (the default): straight until a message splits ------- */

static void start_whole(void)
{
	conn->opts.start = NF_START_WHOLE;
}

START_TEST(test_coalesce_start_whole_first_write_straight)
{
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS); /* the program's own call */
	hold("world"); /* a second write before a read: held */
	flush();
	ck_assert_int_eq(fake.nsends, 1);
	ck_offered(0, "world");
	hold("request"); /* it split a message: it holds, learning anew */
}
END_TEST

START_TEST(test_coalesce_start_whole_one_write_messages_hold_nothing)
{
	for (int i = 0; i < 3 * (int)WHOLE_AFTER; i++) {
		ck_assert_int_eq(put("request", 0), NF_CO_PASS);
		flush(); /* the read */
	}
	ck_assert_int_eq(fake.nsends, 0);
	ck_assert_int_eq(fake_narms, 0); /* the timer never needed */
}
END_TEST

START_TEST(test_coalesce_start_whole_new_socket_begins_straight)
{
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
	hold("world");
	atomic_fetch_add(&conn->gen, 1); /* the fd now names another socket */
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
	ck_assert_int_eq(fake.nsends, 0); /* nor did the old one's bytes reach it */
}
END_TEST

/* The fd names a new socket (closed behind the library's back) whose first
 * call is a read: what the old one held is dropped, and the new one still
 * begins as its rule says at its first write. */
START_TEST(test_coalesce_start_whole_read_first_on_new_socket)
{
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
	hold("world");
	atomic_fetch_add(&conn->gen, 1);
	flush();
	ck_assert_int_eq(fake.nsends, 0); /* the old socket's bytes reach no one */
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
}
END_TEST

/* The timer meets the new socket before its rule is decided: the rule it
 * begins under is its own (decided before its first write), not the old
 * socket's. */
START_TEST(test_coalesce_start_is_the_new_sockets_rule)
{
	ck_assert_int_eq(put("hello ", 0), NF_CO_PASS);
	hold("world");
	atomic_fetch_add(&conn->gen, 1);
	fake_now = fake_armed_at;
	nf_coalesce_flush_due(fake_now); /* starts over for the new socket */
	conn->opts.start = NF_START_SPLIT; /* then its rule is decided */
	hold("first");
}
END_TEST

/* MSG_MORE asks for a hold: the first write of a new socket, or one of a
 * connection that learned to go straight, is held, for the read to send. */
START_TEST(test_coalesce_more_never_goes_straight)
{
	ck_assert_int_eq(put("ping\n", MSG_MORE), 5);
	ck_assert_int_eq(fake.nsends, 0);
	flush();
	ck_offered(0, "ping\n");
}
END_TEST

START_TEST(test_coalesce_more_held_when_learned_straight)
{
	whole_rounds(WHOLE_AFTER);
	ck_assert_int_eq(put("ping\n", MSG_MORE), 5);
	ck_assert_int_eq(fake.nsends, WHOLE_AFTER);
	flush();
	ck_offered(WHOLE_AFTER, "ping\n");
}
END_TEST

START_TEST(test_coalesce_start_split_holds_first_write)
{
	hold("hello "); /* setup's start=split */
	atomic_fetch_add(&conn->gen, 1);
	hold("hello "); /* a new socket under the same rule: held as well */
}
END_TEST

/* ---- ending ------------------------------------------------------------- */

START_TEST(test_coalesce_close_drain_gives_up_and_drops)
{
	hold("hello");
	fake_fail(EAGAIN);
	for (int i = 0; i < 200; i++)
		fake_fail(EAGAIN);
	nf_coalesce_drain_final(conn, FAKE_FD);
	ck_assert(holds_nothing());
	ck_assert_uint_eq(fake.nwire, 0);
	ck_assert_ptr_nonnull(strstr(fake.log, "5 buffered bytes dropped"));
}
END_TEST

START_TEST(test_coalesce_end_holds_nothing)
{
	nf_coalesce_end();
	ck_assert_int_eq(put("hello", 0), NF_CO_PASS);
	nf_coalesce_resume();
	hold("hello");
}
END_TEST

static TCase *holding_case(void)
{
	TCase *tc = tcase_create("holding");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_small_write_held);
	unit_add(tc, test_coalesce_second_write_appends);
	unit_add(tc, test_coalesce_flush_sends_held_in_one_call);
	unit_add(tc, test_coalesce_emptied_stays_listed_until_timer_look);
	unit_add(tc, test_coalesce_timer_flush_unlists);
	unit_add(tc, test_coalesce_nothing_held_before_established);
	unit_add(tc, test_coalesce_established_asked_once);
	unit_add(tc, test_coalesce_close_wait_holds);
	return tc;
}

static TCase *flushing_case(void)
{
	TCase *tc = tcase_create("flushing");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_partial_flush_keeps_rest_in_order);
	unit_add(tc, test_coalesce_eagain_flush_keeps_all);
	unit_add(tc, test_coalesce_eagain_flush_keeps_errno);
	unit_add_loop(tc, test_coalesce_flush_error_reported_by_next_send, 0, 2);
	unit_add_loop(tc, test_coalesce_timer_flush_error_reported_by_next_send, 0, 2);
	unit_add(tc, test_coalesce_flush_epipe_owes_sigpipe);
	unit_add(tc, test_coalesce_timer_flush_waits_for_deadline);
	unit_add(tc, test_coalesce_before_send_reports_stored_error);
	unit_add(tc, test_coalesce_before_send_pushes_held);
	return tc;
}

static TCase *through_case(void)
{
	TCase *tc = tcase_create("through");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_large_write_after_held_one_sendmsg);
	unit_add(tc, test_coalesce_large_write_blocking_held_first_corked);
	unit_add(tc, test_coalesce_large_write_partial_counts_program_bytes);
	unit_add(tc, test_coalesce_large_write_eagain_keeps_held_rest);
	unit_add(tc, test_coalesce_full_socket_passes_writes_through);
	unit_add(tc, test_coalesce_full_socket_eagain_to_program);
	return tc;
}

static TCase *deadline_case(void)
{
	TCase *tc = tcase_create("deadline");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_trusted_after_64_program_flushes);
	unit_add(tc, test_coalesce_timer_flush_ends_trust);
	unit_add(tc, test_coalesce_long_flush_kept_when_trusted);
	return tc;
}

static TCase *start_case(void)
{
	TCase *tc = tcase_create("start");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_checked_fixture(tc, start_whole, NULL);
	unit_add(tc, test_coalesce_start_whole_first_write_straight);
	unit_add(tc, test_coalesce_start_whole_one_write_messages_hold_nothing);
	unit_add(tc, test_coalesce_start_whole_new_socket_begins_straight);
	unit_add(tc, test_coalesce_start_whole_read_first_on_new_socket);
	unit_add(tc, test_coalesce_start_is_the_new_sockets_rule);
	unit_add(tc, test_coalesce_more_never_goes_straight);
	return tc;
}

static TCase *whole_case(void)
{
	TCase *tc = tcase_create("whole");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_whole_messages_go_straight);
	unit_add(tc, test_coalesce_read_lets_next_go_straight);
	unit_add(tc, test_coalesce_second_write_ends_whole_streak);
	unit_add(tc, test_coalesce_two_write_messages_never_straight);
	unit_add(tc, test_coalesce_timer_flush_ends_whole_streak);
	unit_add(tc, test_coalesce_straight_without_the_lock);
	unit_add(tc, test_coalesce_straight_only_for_its_socket);
	unit_add(tc, test_coalesce_failed_flush_never_goes_straight);
	unit_add(tc, test_coalesce_any_hold_ends_whole_streak);
	unit_add(tc, test_coalesce_start_split_holds_first_write);
	unit_add(tc, test_coalesce_more_held_when_learned_straight);
	return tc;
}

static TCase *ending_case(void)
{
	TCase *tc = tcase_create("ending");

	tcase_add_checked_fixture(tc, setup, NULL);
	unit_add(tc, test_coalesce_close_drain_gives_up_and_drops);
	unit_add(tc, test_coalesce_end_holds_nothing);
	return tc;
}

Suite *coalesce_suite(void)
{
	Suite *s = suite_create("coalesce");

	suite_add_tcase(s, holding_case());
	suite_add_tcase(s, flushing_case());
	suite_add_tcase(s, through_case());
	suite_add_tcase(s, deadline_case());
	suite_add_tcase(s, whole_case());
	suite_add_tcase(s, start_case());
	suite_add_tcase(s, ending_case());
	return s;
}
