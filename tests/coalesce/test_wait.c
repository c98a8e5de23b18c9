/*
 * test_wait.c - waiting with a non-zero timeout flushes every connection.
 *
 * Under a flush=1s rule, each round writes a request in two pieces (held:
 * checked in the kernel), then waits for the echo with the call named by
 * argv[1] (timeout 2 s) before reading it. Only the wait's own flush can
 * bring the reply in well under 5 ms.
 *
 *   poll ppoll select pselect epoll_wait epoll_pwait
 *   epoll-nonblock   the same on an O_NONBLOCK socket, as an event loop has
 *   poll-other       bytes held on a second connection, which is not among
 *                    the polled ones, reach their peer too
 */
#include <sys/epoll.h>
#include <sys/select.h>

#include "../common/peer.h"

#define WAIT_MS 2000

/* Reads the rest of the reply after a wait said it is there (a socket
 * in O_NONBLOCK mode may have more to come: wait again with poll). */
static void read_after_wait(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		ssize_t n = read(fd, buf + have, cap - 1 - have);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			CHECK(poll(&p, 1, WAIT_MS) == 1, "rest of the reply did not come");
			continue;
		}
		have = ct_got(n, buf, have, cap, "read");
	}
}

static void reply_poll(int fd, char *buf, size_t cap)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK(poll(&p, 1, WAIT_MS) == 1, "poll did not see the reply");
	read_after_wait(fd, buf, cap);
}

static void reply_ppoll(int fd, char *buf, size_t cap)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = WAIT_MS / 1000 };

	CHECK(ppoll(&p, 1, &ts, NULL) == 1, "ppoll did not see the reply");
	read_after_wait(fd, buf, cap);
}

static void reply_select(int fd, char *buf, size_t cap)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	fd_set r;

	FD_ZERO(&r);
	FD_SET(fd, &r);
	CHECK(select(fd + 1, &r, NULL, NULL, &tv) == 1, "select did not see the reply");
	read_after_wait(fd, buf, cap);
}

static void reply_pselect(int fd, char *buf, size_t cap)
{
	struct timespec ts = { .tv_sec = WAIT_MS / 1000 };
	fd_set r;

	FD_ZERO(&r);
	FD_SET(fd, &r);
	CHECK(pselect(fd + 1, &r, NULL, NULL, &ts, NULL) == 1, "pselect did not see the reply");
	read_after_wait(fd, buf, cap);
}

/* An epoll instance watching fd for input. */
static int epoll_for(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	CHECK(ep >= 0, "epoll_create1");
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	return ep;
}

static void reply_epoll_wait(int fd, char *buf, size_t cap)
{
	struct epoll_event ev;
	int ep = epoll_for(fd);

	CHECK(epoll_wait(ep, &ev, 1, WAIT_MS) == 1, "epoll_wait did not see the reply");
	close(ep);
	read_after_wait(fd, buf, cap);
}

static void reply_epoll_pwait(int fd, char *buf, size_t cap)
{
	struct epoll_event ev;
	int ep = epoll_for(fd);
	sigset_t none;

	sigemptyset(&none);
	CHECK(epoll_pwait(ep, &ev, 1, WAIT_MS, &none) == 1, "epoll_pwait did not see the reply");
	close(ep);
	read_after_wait(fd, buf, cap);
}

static const struct {
	const char *name;
	ct_reply_fn reply;
} calls[] = {
	{ "poll", reply_poll },           { "ppoll", reply_ppoll },
	{ "select", reply_select },       { "pselect", reply_pselect },
	{ "epoll_wait", reply_epoll_wait }, { "epoll_pwait", reply_epoll_pwait },
};

static void run(int which)
{
	ct_echo_check(calls[which].reply, 0);
}

/* An event loop: O_NONBLOCK socket, epoll_wait for the reply. */
static void run_nonblock(int unused)
{
	(void)unused;
	ct_echo_check(reply_epoll_wait, 1);
}

/* One round: "other\n" held on fb, a request on fa, poll on fa only:
 * returns ms from the start of the round to the report that fb's line
 * reached its peer. */
static double other_round(int fa, int fb, int rep_b)
{
	long long before = ct_kernel_bytes(fb);
	double t0 = ct_now_ms();

	ct_send_str(fb, "other\n");
	ct_expect_held(fb, before);
	ct_round(fa, reply_poll, 0);
	ct_expect_line(rep_b, "other\n", CT_WAIT_MS);
	return ct_now_ms() - t0;
}

static void run_other(int unused)
{
	struct ct_peer a, b;
	double t[CT_ROUNDS];
	int fa, fb;

	(void)unused;
	ct_peer_start(&a, "echo");
	ct_peer_start(&b, "lines");
	fa = ct_connect(a.port);
	fb = ct_connect(b.port);
	for (int i = 0; i < CT_ROUNDS; i++) {
		t[i] = other_round(fa, fb, b.rep);
		CHECK(t[i] < CT_SLOW_MS, "the other connection's bytes took %.1f ms: "
		      "poll did not flush it", t[i]);
	}
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, "other connection");
	close(fa);
	close(fb);
	ct_expect_end(b.rep, 6LL * CT_ROUNDS, CT_WAIT_MS);
	ct_peer_stop(&a);
	ct_peer_stop(&b);
}

int main(int argc, char **argv)
{
	struct ct_case cases[CT_NCASES(calls) + 2] = {
		{ "epoll-nonblock", run_nonblock, 0 },
		{ "poll-other", run_other, 0 },
	};

	for (size_t i = 0; i < CT_NCASES(calls); i++)
		cases[i + 2] = (struct ct_case){ calls[i].name, run, (int)i };
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
