/*
 * test_read.c - reading a socket flushes what coalesce holds for it.
 *
 * Under a flush=1s rule, each round writes a request in two pieces (held:
 * checked in the kernel), then blocks in the read call named by argv[1]
 * for the echo. Only the read's own flush can bring the reply in well
 * under 5 ms; without it the request would wait a second for the timer.
 *
 *   test_read read|readv|recv|recvfrom|recvmsg|recvmmsg
 */
#include "../common/peer.h"

static void reply_read(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have))
		have = ct_got(read(fd, buf + have, cap - 1 - have), buf, have, cap, "read");
}

static void reply_readv(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		struct iovec v[2] = { { buf + have, 1 }, { buf + have + 1, cap - 2 - have } };

		have = ct_got(readv(fd, v, 2), buf, have, cap, "readv");
	}
}

static void reply_recv(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have))
		have = ct_got(recv(fd, buf + have, cap - 1 - have, 0), buf, have, cap, "recv");
}

static void reply_recvfrom(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		have = ct_got(recvfrom(fd, buf + have, cap - 1 - have, 0, (struct sockaddr *)&ss, &len),
			      buf, have, cap, "recvfrom");
	}
}

static void reply_recvmsg(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		struct iovec v = { buf + have, cap - 1 - have };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

		have = ct_got(recvmsg(fd, &m, 0), buf, have, cap, "recvmsg");
	}
}

static void reply_recvmmsg(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		struct iovec v = { buf + have, cap - 1 - have };
		struct mmsghdr mm = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
		int n = recvmmsg(fd, &mm, 1, 0, NULL);

		CHECK(n == 1, "recvmmsg returned %d", n);
		have = ct_got((ssize_t)mm.msg_len, buf, have, cap, "recvmmsg");
	}
}

static const struct {
	const char *name;
	ct_reply_fn reply;
} calls[] = {
	{ "read", reply_read },         { "readv", reply_readv },     { "recv", reply_recv },
	{ "recvfrom", reply_recvfrom }, { "recvmsg", reply_recvmsg }, { "recvmmsg", reply_recvmmsg },
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
