/*
 * test_handler.c - a signal handler's send on a socket that holds bytes,
 * made while the handler interrupts the library on another socket: what
 * was held goes first (src/coalesce.c, handler_push).
 *
 * Under a flush=1s rule, "A" is written and held on connection H. The main
 * thread then writes 32 MiB to connection M, whose peer reads nothing: the
 * write blocks inside the library (its overflow send). A SIGALRM 300 ms
 * later runs a handler that sends "B\n" on H, with
 *   write     write()
 *   sendmmsg  sendmmsg(), a call that bypasses the buffer
 * The library must not wait for anything in the handler (the interrupted
 * code is inside it), but H's lock is free: H's peer must read "AB\n", not
 * "B\nA". Then M's peer is let go and must get all 32 MiB.
 */
#include <pthread.h>
#include <sys/time.h>

#include "cotest.h"

#define BIG (32u << 20)

static int hfd, how;
static _Atomic int fired; /* read by the release thread */

static void on_alarm(int sig)
{
	struct iovec v = { .iov_base = "B\n", .iov_len = 2 };
	struct mmsghdr mm = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	int saved = errno;

	(void)sig;
	if (how == 0)
		fired = write(hfd, "B\n", 2) == 2 ? 1 : -1;
	else
		fired = sendmmsg(hfd, &mm, 1, 0) == 1 && mm.msg_len == 2 ? 1 : -1;
	errno = saved;
}

/* Lets M's peer read once the handler ran (or 10 s passed). */
static void *release(void *arg)
{
	const struct ct_peer *mp = arg;

	for (int i = 0; i < 2000 && !fired; i++)
		ct_sleep_ms(5);
	ct_peer_go(mp);
	return NULL;
}

static void run(int variant)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { 0, 300000 } };
	struct ct_peer hp, mp;
	sigset_t alrm, old;
	pthread_t rel;
	char *big = malloc(BIG);
	size_t off = 0;
	int mfd;

	how = variant;
	CHECK(big != NULL, "malloc");
	memset(big, 'm', BIG);
	ct_peer_start(&hp, "lines");
	ct_peer_start(&mp, "stall");
	hfd = ct_connect(hp.port);
	ct_send_str(hfd, "A");
	ct_expect_held(hfd, 0);
	mfd = ct_connect(mp.port);
	ct_set_int(mfd, SOL_SOCKET, SO_SNDBUF, 65536, "SO_SNDBUF");
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old); /* the main thread takes it */
	CHECK(pthread_create(&rel, NULL, release, &mp) == 0, "pthread_create");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	while (off < BIG) {
		ssize_t n = write(mfd, big + off, BIG - off);

		CHECK(n > 0 || errno == EINTR, "write to M: %s", ct_errname(errno));
		off += n > 0 ? (size_t)n : 0;
	}
	pthread_join(rel, NULL);
	CHECK(fired == 1, "the handler's send failed or never ran (%d)", (int)fired);
	ct_expect_line(hp.rep, "AB\n", CT_WAIT_MS);
	CHECK(close(mfd) == 0, "close M");
	ct_expect_end(mp.rep, BIG, CT_WAIT_MS);
	ct_say("the handler's \"B\\n\" came after the held \"A\"; M got %u bytes", BIG);
	close(hfd);
	ct_peer_stop(&hp);
	ct_peer_stop(&mp);
	free(big);
}

static const struct ct_case cases[] = {
	{ "write", run, 0 },
	{ "sendmmsg", run, 1 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
