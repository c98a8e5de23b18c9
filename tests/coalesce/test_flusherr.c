/*
 * test_flusherr.c - a flush that fails is reported by the next send, with
 * the kernel's errno and the kernel's SIGPIPE.
 *
 * Under a flush=1s rule, "a\n" is held when the peer aborts (SO_LINGER 0:
 * RST); a poll then flushes, the send fails, the library keeps the error.
 * Then, each send followed by a 1 ms poll (another flush):
 *   ignore     SIGPIPE ignored: the next write fails, EPIPE or ECONNRESET
 *   nosignal   SIGPIPE default, send(MSG_NOSIGNAL): failures only with
 *              EPIPE/ECONNRESET, at least one EPIPE, and the process lives
 *   default    SIGPIPE default, write: the process dies of SIGPIPE (as the
 *              kernel's EPIPE would kill it)
 *   handler    a SIGPIPE handler: one signal per EPIPE failure, each in
 *              the thread that wrote (never the library's timer thread)
 *   sticky     the send after the reported error fails too: the kernel
 *              fails every send on a reset connection
 *   reuse      the connection is closed with its error never reported; a
 *              new connection that gets the same descriptor number must
 *              not inherit the error: its first write succeeds
 */
#include <stdatomic.h>

#include "../common/peer.h"

#define TRIES 6

/* "a\n" held, the peer resets, a wait flushes: returns fd, whose next
 * send should fail. */
static int reset_with_error(struct ct_peer *p)
{
	struct ct_report r;
	int fd = ct_connect(p->port);

	ct_send_str(fd, "a\n");
	ct_expect_held(fd, 0);
	ct_peer_go(p);
	ct_report_expect(p->rep, CT_RESET, CT_WAIT_MS, &r);
	ct_sleep_ms(20); /* the RST is in */
	ct_expect_held(fd, 0);
	poll(NULL, 0, 1);
	return fd;
}

static int broken(int err)
{
	return err == EPIPE || err == ECONNRESET;
}

/* A send on the reset connection (flags -1: write): "b\n" taken, or a failure that must
 * be EPIPE or ECONNRESET. Returns 0 or the errno. A poll follows. */
static int send_b(int fd, int flags)
{
	ssize_t r = flags < 0 ? write(fd, "b\n", 2) : send(fd, "b\n", 2, flags);
	int err = r < 0 ? errno : 0;

	CHECK(r == 2 || (r == -1 && broken(err)), "send on a reset connection returned %zd (%s)",
	      r, ct_errname(err));
	poll(NULL, 0, 1);
	return err;
}

static void run_ignore(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "reset");
	fd = reset_with_error(&p);
	errno = 0;
	CHECK(write(fd, "b\n", 2) == -1 && broken(errno),
	      "the write after a failed flush did not fail with EPIPE or ECONNRESET");
	ct_say("failed flush reported as %s", ct_errname(errno));
	close(fd);
	ct_peer_stop(&p);
}

static void run_nosignal(int unused)
{
	int fails = 0, epipe = 0;
	struct ct_peer p;
	int fd;

	(void)unused;
	signal(SIGPIPE, SIG_DFL);
	ct_peer_start(&p, "reset");
	fd = reset_with_error(&p);
	for (int i = 0; i < TRIES; i++) {
		int err = send_b(fd, MSG_NOSIGNAL);

		CHECK(i > 0 || err != 0, "the send after a failed flush succeeded");
		fails += err != 0;
		epipe += err == EPIPE;
	}
	ct_say("%d of %d sends failed, %d with EPIPE; no SIGPIPE", fails, TRIES, epipe);
	CHECK(epipe > 0, "no EPIPE in %d sends on a reset connection", TRIES);
	close(fd);
	ct_peer_stop(&p);
}

/* In a child with SIGPIPE default: writes until killed. */
static void die_of_sigpipe(struct ct_peer *p)
{
	int fd;

	signal(SIGPIPE, SIG_DFL);
	fd = reset_with_error(p);
	for (int i = 0; i < TRIES; i++)
		send_b(fd, -1);
	_exit(3);
}

static void run_default(int unused)
{
	struct ct_peer p;
	pid_t pid;
	int st;

	(void)unused;
	ct_peer_start(&p, "reset");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		die_of_sigpipe(&p);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE,
	      "the writer was not killed by SIGPIPE (status 0x%x%s)", st,
	      WIFEXITED(st) && WEXITSTATUS(st) == 3 ? ": it wrote on and lived" : "");
	ct_peer_stop(&p);
}

static atomic_int pipes, pipes_elsewhere;
static pid_t writer_tid;

static void on_sigpipe(int sig)
{
	(void)sig;
	atomic_fetch_add(&pipes, 1);
	if (gettid() != writer_tid)
		atomic_fetch_add(&pipes_elsewhere, 1);
}

static void run_handler(int unused)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };
	struct ct_peer p;
	int fd, epipe = 0;

	(void)unused;
	writer_tid = gettid();
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGPIPE, &sa, NULL) == 0, "sigaction");
	ct_peer_start(&p, "reset");
	fd = reset_with_error(&p);
	for (int i = 0; i < TRIES; i++)
		epipe += send_b(fd, -1) == EPIPE;
	ct_say("%d EPIPE failures, %d SIGPIPE, %d outside the writing thread", epipe,
	       atomic_load(&pipes), atomic_load(&pipes_elsewhere));
	CHECK(epipe > 0, "no EPIPE in %d writes on a reset connection", TRIES);
	CHECK(atomic_load(&pipes) == epipe, "%d SIGPIPE for %d EPIPE failures", atomic_load(&pipes), epipe);
	CHECK(atomic_load(&pipes_elsewhere) == 0, "SIGPIPE delivered to another thread");
	close(fd);
	ct_peer_stop(&p);
}

static void run_sticky(int unused)
{
	struct ct_peer p;
	ssize_t r;
	int fd;

	(void)unused;
	ct_peer_start(&p, "reset");
	fd = reset_with_error(&p);
	CHECK(write(fd, "b\n", 2) == -1 && broken(errno), "the failed flush was not reported");
	errno = 0;
	r = write(fd, "c\n", 2);
	CHECK(r == -1 && broken(errno), "the write after the reported error returned %zd (%s): "
	      "the kernel fails every write on a reset connection (EPIPE)", r, ct_errname(errno));
	close(fd);
	ct_peer_stop(&p);
}

static void run_reuse(int unused)
{
	struct ct_peer bad, good;
	ssize_t r;
	int fd, fd2;

	(void)unused;
	ct_peer_start(&bad, "reset");
	ct_peer_start(&good, "lines");
	fd = reset_with_error(&bad);
	CHECK(close(fd) == 0, "close");
	fd2 = ct_connect(good.port);
	CHECK(fd2 == fd, "the new socket got fd %d, not %d: cannot test reuse", fd2, fd);
	errno = 0;
	r = write(fd2, "ok\n", 3);
	CHECK(r == 3, "the first write on a new connection returned %zd (%s): the error of "
	      "the closed connection that had fd %d leaked into it", r, ct_errname(errno), fd);
	close(fd2);
	ct_expect_line(good.rep, "ok\n", CT_WAIT_MS);
	ct_peer_stop(&bad);
	ct_peer_stop(&good);
}

static const struct ct_case cases[] = {
	{ "ignore", run_ignore, 0 },   { "nosignal", run_nosignal, 0 },
	{ "default", run_default, 0 }, { "handler", run_handler, 0 },
	{ "sticky", run_sticky, 0 },   { "reuse", run_reuse, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
