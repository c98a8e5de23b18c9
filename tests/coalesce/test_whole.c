/*
 * test_whole.c - a program that writes each message whole (one write,
 * then it reads the answer) gains nothing from a hold: after WHOLE_AFTER
 * (64) such messages its writes go straight to the kernel; a second write
 * before a read is held again, and the connection starts learning anew.
 *
 *   straight (conf/flush-1s.conf) after 80 one-write messages, each of 20
 *            more is in the kernel as soon as write returns; a message in
 *            two writes: the first in the kernel, the second held until
 *            the read, the echo whole; the next one-write message is held
 *   start    (conf/whole-1s.conf: start=whole, the default) a connection
 *            begins as one whose messages are whole: its first write is
 *            in the kernel when write returns, the second (before a read)
 *            is held; the first message leaves as two data segments, each
 *            of the next ten two-write messages as one, held from its
 *            first write; a new connection begins straight again
 *   more     (conf/whole-1s.conf) one-write messages sent with MSG_MORE,
 *            each then its echo read: the kernel would hold such a write
 *            until its own timer (about 200 ms a round, under pass), so it
 *            never goes straight: held, the read sends it; each round
 *            under 50 ms, at the first message and after 80 plain ones
 *
 * Every echo is compared byte for byte.
 */
#include "../common/peer.h"

#define LEARN 80
#define STRAIGHT 20

/* n messages of one write each, each echo read. */
static void whole_messages(int fd, int n)
{
	for (int i = 0; i < n; i++) {
		ct_send_str(fd, "ping\n");
		ct_read_reply(fd, "ping\n");
	}
}

/* Writes s, which must be in the kernel when write returns. */
static void write_straight(int fd, const char *s)
{
	long long before = ct_kernel_bytes(fd);

	ct_send_str(fd, s);
	CHECK(ct_kernel_bytes(fd) == before + (long long)strlen(s),
	      "'%s' was not in the kernel when write returned (%lld of %zu bytes)", s,
	      ct_kernel_bytes(fd) - before, strlen(s));
}

/* Writes s, which must be held: not in the kernel when write returns. */
static void write_held(int fd, const char *s)
{
	long long before = ct_kernel_bytes(fd);

	ct_send_str(fd, s);
	ct_expect_held(fd, before);
}

static void run_straight(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_expect_conf("flush-1s.conf");
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	whole_messages(fd, LEARN);
	for (int i = 0; i < STRAIGHT; i++) {
		write_straight(fd, "ping\n");
		ct_read_reply(fd, "ping\n");
	}
	write_straight(fd, "hello ");
	write_held(fd, "world\n"); /* a second write before the read */
	ct_read_reply(fd, "hello world\n");
	write_held(fd, "ping\n"); /* learning anew */
	ct_read_reply(fd, "ping\n");
	close(fd);
	ct_peer_stop(&p);
}

static void run_start(int unused)
{
	struct ct_peer p;
	unsigned segs;
	int fd;

	(void)unused;
	ct_expect_conf("whole-1s.conf");
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	segs = ct_segs_out(fd);
	write_straight(fd, "hello ");
	write_held(fd, "world\n");
	ct_read_reply(fd, "hello world\n");
	CHECK(ct_segs_out(fd) - segs == 2, "the first message left as %u segments, not 2",
	      ct_segs_out(fd) - segs);
	for (int i = 0; i < 10; i++) {
		write_held(fd, "hello ");
		write_held(fd, "world\n");
		ct_read_reply(fd, "hello world\n");
	}
	CHECK(ct_segs_out(fd) - segs == 12, "11 messages left as %u segments, not 12",
	      ct_segs_out(fd) - segs);
	close(fd);
	fd = ct_connect(p.port);
	write_straight(fd, "ping\n");
	ct_read_reply(fd, "ping\n");
	close(fd);
	ct_peer_stop(&p);
}

/* n messages of one send with MSG_MORE, each echo read: each under 50 ms
 * (a stall on the kernel's timer is about 200). */
static void more_messages(int fd, int n)
{
	for (int i = 0; i < n; i++) {
		double t0 = ct_now_ms(), ms;

		CHECK(send(fd, "ping\n", 5, MSG_MORE) == 5, "send MSG_MORE");
		ct_read_reply(fd, "ping\n");
		ms = ct_now_ms() - t0;
		CHECK(ms < 50, "a MSG_MORE message took %.1f ms: the write was not held for the "
		      "read to send", ms);
	}
}

static void run_more(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_expect_conf("whole-1s.conf");
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	more_messages(fd, 3);
	whole_messages(fd, LEARN);
	more_messages(fd, 3);
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "straight", run_straight, 0 },
	{ "start", run_start, 0 },
	{ "more", run_more, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
