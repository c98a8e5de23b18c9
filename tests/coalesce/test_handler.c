/*
 * test_handler.c - a signal handler's call on a socket that holds bytes,
 * made while the handler interrupts the library on another socket: what
 * was held keeps its place (src/actions/coalesce/coalesce_handler.c, nf_co_handler_send, nf_co_handler_push).
 *
 * Under a flush=1s rule, "A" is written and held on connection H. The main
 * thread then writes 32 MiB to connection M, whose peer reads nothing: the
 * write blocks inside the library (its overflow send). A SIGALRM 300 ms
 * later runs a handler that, on H,
 *   write     write()s "B\n" (it joins the buffer): H's peer reads "AB\n"
 *   sendmmsg  sendmmsg()s "B\n", a call that bypasses the buffer: "AB\n"
 *   big       write()s 20,000 bytes, more than the buffer takes: the held
 *             "A" goes first, then those (one line of 20,001 bytes)
 *   read      recv()s with MSG_DONTWAIT: the held "A" goes out then, long
 *             before the 1 s flush
 *   close     close()s H: the peer gets the held "A", then the end
 *   exit      write()s "B\n" and _exit()s (in a child process that does
 *             all of the above): the peer gets "AB\n", then the end
 * The library must not wait for anything in the handler (the interrupted
 * code is inside it), but H's lock is free. Then M's peer is let go and
 * must get all 32 MiB.
 */
#include <pthread.h>
#include <sys/time.h>

#include "../common/peer.h"

#define BIG (32u << 20)
#define LONG 20000 /* more than the rule's buffer=16k */

enum { WRITE, SENDMMSG, LONGWRITE, READ, CLOSE, EXIT };

static int hfd, how;
static _Atomic int fired; /* read by the release thread */
static char longline[LONG];

static void on_alarm(int sig)
{
	struct iovec v = { .iov_base = "B\n", .iov_len = 2 };
	struct mmsghdr mm = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	int saved = errno, ok = 0;
	char b;

	(void)sig;
	switch (how) {
	case WRITE:
		ok = write(hfd, "B\n", 2) == 2;
		break;
	case SENDMMSG:
		ok = sendmmsg(hfd, &mm, 1, 0) == 1 && mm.msg_len == 2;
		break;
	case LONGWRITE:
		ok = write(hfd, longline, LONG) == LONG;
		break;
	case READ:
		ok = recv(hfd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
		break;
	case CLOSE:
		ok = close(hfd) == 0;
		break;
	case EXIT:
		_exit(write(hfd, "B\n", 2) == 2 ? 0 : 1);
	}
	fired = ok ? 1 : -1;
	errno = saved;
}

/* What H's peer must have seen, once M's write is done. */
static void expect_h(const struct ct_peer *hp)
{
	struct ct_report r;
	uint64_t h;

	switch (how) {
	case WRITE:
	case SENDMMSG:
		ct_expect_line(hp->rep, "AB\n", CT_WAIT_MS);
		break;
	case LONGWRITE:
		ct_report_expect(hp->rep, CT_LINE, CT_WAIT_MS, &r);
		h = ct_fnv(ct_fnv(CT_FNV_INIT, "A", 1), longline, LONG);
		CHECK(r.len == LONG + 1 && r.hash == h, "the peer read a line of %lld bytes "
		      "starting '%.8s', want the held 'A' then the handler's %d", r.len, r.text, LONG);
		break;
	case READ:
		CHECK(ct_kernel_bytes(hfd) == 1, "%lld bytes in the kernel, want the held 1: the "
		      "handler's read did not send it", ct_kernel_bytes(hfd));
		break;
	case CLOSE:
		ct_expect_end(hp->rep, 1, CT_WAIT_MS);
		break;
	}
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
	memset(longline, 'B', LONG - 1);
	longline[LONG - 1] = '\n';
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
	CHECK(fired == 1, "the handler's call failed or never ran (%d)", (int)fired);
	expect_h(&hp);
	CHECK(close(mfd) == 0, "close M");
	ct_expect_end(mp.rep, BIG, CT_WAIT_MS);
	ct_say("the held \"A\" kept its place; M got %u bytes", BIG);
	if (how != CLOSE)
		close(hfd);
	ct_peer_stop(&hp);
	ct_peer_stop(&mp);
	free(big);
}

/* EXIT: a child holds "A" on H and blocks on M; its handler writes and
 * _exits. Its bytes and the held ones must reach H's peer. */
static void run_exit(int unused)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { 0, 300000 } };
	struct ct_peer hp, mp;
	char *big = malloc(BIG);
	pid_t pid;
	int st;

	(void)unused;
	how = EXIT;
	CHECK(big != NULL, "malloc");
	memset(big, 'm', BIG);
	ct_peer_start(&hp, "lines");
	ct_peer_start(&mp, "stall");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int mfd;

		hfd = ct_connect(hp.port);
		ct_send_str(hfd, "A");
		ct_expect_held(hfd, 0);
		mfd = ct_connect(mp.port);
		ct_set_int(mfd, SOL_SOCKET, SO_SNDBUF, 65536, "SO_SNDBUF");
		CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
		(void)!write(mfd, big, BIG); /* the handler ends the process in here */
		_exit(2);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
	ct_expect_line(hp.rep, "AB\n", CT_WAIT_MS);
	ct_expect_end(hp.rep, 3, CT_WAIT_MS);
	ct_say("the held \"A\" and the handler's \"B\\n\" went out before its _exit");
	ct_peer_stop(&hp);
	ct_peer_stop(&mp);
	free(big);
}

static const struct ct_case cases[] = {
	{ "write", run, WRITE },
	{ "sendmmsg", run, SENDMMSG },
	{ "big", run, LONGWRITE },
	{ "read", run, READ },
	{ "close", run, CLOSE },
	{ "exit", run_exit, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
