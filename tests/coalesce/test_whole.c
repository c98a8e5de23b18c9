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

static void run_straight(int unused)
{
	struct ct_peer p;
	long long before;
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
	before = ct_kernel_bytes(fd);
	ct_send_str(fd, "world\n");
	ct_expect_held(fd, before); /* a second write before the read */
	ct_read_reply(fd, "hello world\n");
	before = ct_kernel_bytes(fd);
	ct_send_str(fd, "ping\n");
	ct_expect_held(fd, before); /* learning anew */
	ct_read_reply(fd, "ping\n");
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "straight", run_straight, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
