/*
 * test_segments.c - a request written in two pieces leaves as one TCP
 * segment.
 *
 * 50 rounds of write("hello ") write("world\r\n") then read the echo, on
 * one connection: the kernel's count of data segments sent (TCP_INFO
 * tcpi_data_segs_out) may grow by at most 1.05 a round under coalesce.
 * Without the library it is about 2 (and each round stalls on Nagle).
 *
 *   test_segments coalesce
 *   test_segments after-file   the same on a socket that took the number
 *                              of a file just written and closed
 */
#include "../common/peer.h"

#define ROUNDS 50
#define MAX_PER_ROUND 1.05

static void request_reply(int fd)
{
	char buf[64];
	size_t have = 0;

	ct_send_all(fd, "hello ", 6, CT_WRITE, 0);
	ct_send_all(fd, "world\r\n", 7, CT_WRITE, 0);
	while (!ct_line_done(buf, have))
		have = ct_got(read(fd, buf + have, sizeof(buf) - 1 - have), buf, have, sizeof(buf), "read");
	CHECK(strcmp(buf, "hello world\r\n") == 0, "bad echo");
}

/* ROUNDS requests on fd, each at most MAX_PER_ROUND segments. */
static void expect_one_segment(int fd)
{
	unsigned before;
	double per;

	request_reply(fd); /* warm up */
	before = ct_segs_out(fd);
	for (int i = 0; i < ROUNDS; i++)
		request_reply(fd);
	per = (double)(ct_segs_out(fd) - before) / ROUNDS;
	ct_say("%.2f data segments per request over %d rounds (want <= %.2f)", per, ROUNDS,
	       MAX_PER_ROUND);
	CHECK(per <= MAX_PER_ROUND, "%.2f segments per two-piece request, want <= %.2f", per,
	      MAX_PER_ROUND);
}

static void run(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	expect_one_segment(fd);
	close(fd);
	ct_peer_stop(&p);
}

/* The socket takes the number of a file that was just written and
 * closed: the hooks' first test had that number down as "leave alone",
 * and must not any more. */
static void run_after_file(int unused)
{
	struct ct_peer p;
	int f, fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	f = open("/dev/null", O_WRONLY);
	CHECK(f >= 0 && write(f, "x", 1) == 1, "write /dev/null");
	close(f);
	fd = ct_connect(p.port);
	CHECK(fd == f, "the socket is fd %d, not the file's %d", fd, f);
	expect_one_segment(fd);
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "coalesce", run, 0 },
	{ "after-file", run_after_file, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
