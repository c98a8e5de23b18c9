/*
 * test_fortify.c - a program built with -D_FORTIFY_SOURCE=2 -O2 reaches
 * glibc through __read_chk, __recv_chk, __recvfrom_chk, __poll_chk and
 * __ppoll_chk, not read, recv, recvfrom, poll and ppoll: those must flush
 * what coalesce holds too.
 *
 * Fortification is set here, before any header, because the build line
 * is the same for every test. A call is routed to its _chk twin when the
 * buffer's size is known and the length is not a constant: each reply
 * reads into a local array with a length the compiler cannot see (run.sh
 * checks with nm that the binary references each _chk symbol).
 *
 * As in test_read: held request, flush=1s, reply median under 5 ms.
 *
 *   test_fortify read|recv|recvfrom|poll|ppoll
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2

#include "../common/peer.h"

/* A length the optimiser cannot fold into a constant. */
static volatile size_t opaque_one = 1;

static size_t runtime(size_t n)
{
	return n * opaque_one;
}

/* Appends what one fortified read returned to the reply line. */
static size_t take(ssize_t n, const char *tmp, char *buf, size_t have, size_t cap, const char *call)
{
	if (n > 0 && have + (size_t)n < cap)
		memcpy(buf + have, tmp, (size_t)n);
	return ct_got(n, buf, have, cap, call);
}

static void reply_read(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		char tmp[64];

		have = take(read(fd, tmp, runtime(sizeof(tmp))), tmp, buf, have, cap, "read");
	}
}

static void reply_recv(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		char tmp[64];

		have = take(recv(fd, tmp, runtime(sizeof(tmp)), 0), tmp, buf, have, cap, "recv");
	}
}

static void reply_recvfrom(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		char tmp[64];

		have = take(recvfrom(fd, tmp, runtime(sizeof(tmp)), 0, NULL, NULL), tmp, buf, have,
			    cap, "recvfrom");
	}
}

/* Reads the reply with read(2) of a length the compiler knows: plain read. */
static void read_plain(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		char tmp[64];

		have = take(read(fd, tmp, sizeof(tmp)), tmp, buf, have, cap, "read");
	}
}

static void reply_poll(int fd, char *buf, size_t cap)
{
	struct pollfd p[1] = { { .fd = fd, .events = POLLIN } };
	int n = poll(p, runtime(1), 2000);

	CHECK(n == 1, "poll returned %d", n);
	read_plain(fd, buf, cap);
}

static void reply_ppoll(int fd, char *buf, size_t cap)
{
	struct pollfd p[1] = { { .fd = fd, .events = POLLIN } };
	struct timespec ts = { .tv_sec = 2 };
	int n = ppoll(p, runtime(1), &ts, NULL);

	CHECK(n == 1, "ppoll returned %d", n);
	read_plain(fd, buf, cap);
}

static const struct {
	const char *name;
	ct_reply_fn reply;
} calls[] = {
	{ "read", reply_read }, { "recv", reply_recv },   { "recvfrom", reply_recvfrom },
	{ "poll", reply_poll }, { "ppoll", reply_ppoll },
};

static void run(int which)
{
	ct_echo_check(calls[which].reply, 0);
}

int main(int argc, char **argv)
{
	struct ct_case cases[CT_NCASES(calls)];

	for (size_t i = 0; i < CT_NCASES(calls); i++)
		cases[i] = (struct ct_case){ calls[i].name, run, (int)i };
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
