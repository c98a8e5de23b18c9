/*
 * test_process.c - held bytes survive the process's own life events:
 * fork sends them exactly once, exec and exit deliver them first.
 *
 * Under a flush=1s rule:
 *   fork-_exit fork-exit   "req\n" held, fork; the child leaves with _exit
 *                          or exit; the parent reads the echo, sends
 *                          "end\n": the peer saw 8 bytes, each once
 *   _Fork-exit             the same with _Fork (no atfork handlers): the
 *                          child must not send the parent's held copy
 *   fork-full              the connection is full and bytes are held when
 *                          the process forks (so the fork cannot send them):
 *                          the child exits, the peer drains: exactly the
 *                          bytes the parent had taken, no copy from the child
 *   execv-self execv-true execve-true execlp-true execveat-true
 *                          a child writes "req\n" (held) then execs (itself
 *                          with --after-exec, or /bin/true): the line arrives
 *   _exit exit _Exit       a child writes "req\n" (held) then leaves so
 *   quick_exit             (quick_exit: libc ends with its internal _exit)
 *   return                 ... or returns from main (re-executed as
 *                          --writer-return PORT): the library's destructor
 *   execv-fail             a child writes "req\n" (held), an execv fails:
 *                          the line arrives, and "2\n" written next is
 *                          held again (coalescing resumed)
 *   pthread_exit           a child (re-executed as --pthread-exit PORT: a
 *                          forked musl 1.2.3 child hangs in pthread_exit
 *                          on its own) writes "req\n" (held), starts a
 *                          thread that writes "more\n" 50 ms later and
 *                          returns, and main leaves with pthread_exit: the
 *                          child must exit within 5 s (the library's timer
 *                          thread kept it alive for good) and the peer get
 *                          both lines
 *   thrd_exit              the same with C11's thrd_exit
 *   abort, assert          a child writes "req\n" (held) and aborts, or
 *                          fails an assert: the line arrives (SIGABRT
 *                          passes every exit hook)
 *   daemon                 ... or calls daemon(): its parent side ends in
 *                          libc's internal _exit
 *   cancel-main            the same, but main is cancelled by the late
 *                          writer (no hook sees main end: the timer finds
 *                          itself the last thread, within a second)
 *   fork-mask              the library blocks signals while fork resets
 *                          its state: with only SIGUSR1 blocked and a
 *                          request held, the parent and the child each
 *                          have exactly SIGUSR1 blocked after fork
 */
#include <pthread.h>
#include <threads.h>

#include <assert.h>
#include <sys/resource.h>

#include "../common/peer.h"

extern char **environ;

/* Connects to port and writes "req\n", which must be held. */
static int write_request(int port)
{
	int fd = ct_connect(port);

	ct_send_str(fd, "req\n");
	ct_expect_held(fd, 0);
	return fd;
}

/* In the writer child: how it leaves with the request still held. */
static void leave(int how)
{
	char *self[] = { (char *)ct_prog, "--after-exec", NULL };
	char *tru[] = { "true", NULL };

	switch (how) {
	case 0: execv("/proc/self/exe", self); break;
	case 1: execv("/bin/true", tru); break;
	case 2: execve("/bin/true", tru, environ); break;
	case 3: execlp("true", "true", (char *)NULL); break;
	case 4: _exit(0);
	case 5: exit(0);
	case 6: _Exit(0);
	case 7: quick_exit(0);
	case 8:
#ifdef __GLIBC__
		execveat(AT_FDCWD, "/bin/true", tru, environ, 0);
#endif
		break;
	case 9: abort();
	case 10: assert(how == 0);
		break;
	case 11:
		if (daemon(1, 1) == 0) /* the daemon: its parent ended in libc */
			_exit(0);
		break;
	}
	CHECK(0, "exec failed");
}

/* The writer child exited with status 0 (how 9, 10: died of SIGABRT). */
static void expect_child_ok(pid_t pid, int how)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	if (how == 9 || how == 10)
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "the child ended with status "
		      "0x%x, not SIGABRT", st);
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
}

/* A child connects, writes, leaves by how: the peer must get the line. */
static void run_leave(int how)
{
	struct ct_peer p;
	pid_t pid;

#ifndef __GLIBC__
	if (how == 8)
		ct_skip("no execveat() in this libc");
#endif
	ct_peer_start(&p, "lines");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core); /* abort, assert: no core file */
		write_request(p.port);
		leave(how);
	}
	expect_child_ok(pid, how);
	ct_expect_line(p.rep, "req\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* A child writes, an exec fails: delivered, and buffering goes on. */
static void run_exec_fail(int unused)
{
	char *none[] = { "none", NULL };
	struct ct_peer p;
	pid_t pid;

	(void)unused;
	ct_peer_start(&p, "lines");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fd = write_request(p.port);
		long long before;

		CHECK(execv("/nonexistent/naglefix-test", none) < 0 && errno == ENOENT,
		      "execv of a missing file");
		before = ct_kernel_bytes(fd);
		CHECK(before == 4, "%lld bytes in the kernel after the exec", before);
		ct_send_str(fd, "2\n");
		ct_expect_held(fd, before);
		close(fd);
		_exit(0);
	}
	expect_child_ok(pid, 0);
	ct_expect_line(p.rep, "req\n", CT_WAIT_MS);
	ct_expect_line(p.rep, "2\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 6, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static void *write_later(void *arg)
{
	ct_sleep_ms(50);
	ct_send_str(*(int *)arg, "more\n");
	return NULL;
}

/* The status of pid if it exits within ms, else -1 (it is killed). */
static int wait_exit_within(pid_t pid, double ms)
{
	double t0 = ct_now_ms();
	int st;

	while (ct_now_ms() - t0 < ms) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		ct_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static const char *const leave_flag[] = { "--pthread-exit", "--thrd-exit", "--cancel-main" };
static const char *const leave_name[] = { "pthread_exit", "thrd_exit", "cancel-main" };
static pthread_t main_thread;

/* The late writer, which then cancels main (no hook sees main end). */
static void *write_then_cancel(void *arg)
{
	write_later(arg);
	pthread_cancel(main_thread);
	return NULL;
}

/* --pthread-exit PORT, --thrd-exit PORT or --cancel-main PORT (how: 0, 1,
 * 2): writes, starts the late writer, leaves main by how. */
static void pthread_exit_main(int port, int how)
{
	static int fd;
	pthread_t t;

	ct_variant = leave_name[how];
	alarm(CT_TIMEOUT_S);
	fd = write_request(port);
	main_thread = pthread_self();
	CHECK(pthread_create(&t, NULL, how == 2 ? write_then_cancel : write_later, &fd) == 0,
	      "pthread_create");
	if (how == 1)
		thrd_exit(0);
	if (how == 2)
		for (;;)
			pause(); /* a cancellation point */
	pthread_exit(NULL);
}

/* how: as pthread_exit_main. */
static void run_pthread_exit(int how)
{
	struct ct_peer p;
	char port[16];
	double t0;
	pid_t pid;
	int st;

	ct_peer_start(&p, "lines");
	snprintf(port, sizeof(port), "%d", p.port);
	t0 = ct_now_ms();
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char *args[] = { (char *)ct_prog, (char *)leave_flag[how], port, NULL };

		execv("/proc/self/exe", args);
		_exit(127);
	}
	st = wait_exit_within(pid, 5000);
	CHECK(st != -1, "the process did not end within 5 s of main's pthread_exit "
	      "(its last thread was the library's own)");
	ct_say("exited after %.0f ms", ct_now_ms() - t0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
	ct_expect_line(p.rep, "req\n", CT_WAIT_MS);
	ct_expect_line(p.rep, "more\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 9, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* The child re-executes this program, which returns from main. */
static void run_return(int unused)
{
	struct ct_peer p;
	char port[16];
	pid_t pid;

	(void)unused;
	ct_peer_start(&p, "lines");
	snprintf(port, sizeof(port), "%d", p.port);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char *args[] = { (char *)ct_prog, "--writer-return", port, NULL };

		execv("/proc/self/exe", args);
		_exit(127);
	}
	expect_child_ok(pid, 0);
	ct_expect_line(p.rep, "req\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* Held bytes, fork, the child leaves by how (4 _exit, 5 exit; 8: _Fork,
 * then exit). */
static void run_fork(int how)
{
	struct ct_peer p;
	pid_t pid;
	int fd;

	ct_peer_start(&p, "echo");
	fd = write_request(p.port);
	pid = how == 8 ? _Fork() : fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		leave(how == 8 ? 5 : how);
	expect_child_ok(pid, 0);
	ct_read_reply(fd, "req\n");
	ct_send_str(fd, "end\n");
	ct_read_reply(fd, "end\n");
	close(fd);
	ct_expect_end(p.rep, 8, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* Fills fd (non-blocking, peer not reading) until the library holds bytes
 * it cannot send: both the kernel and the buffer are full. */
static void fill_and_hold(int fd, struct ct_sent *s)
{
	int err = ct_fill_until_error(fd, s, 4096, 64 << 20);

	CHECK(err == EAGAIN, "a full non-blocking socket failed with %s", ct_errname(err));
	err = ct_fill_until_error(fd, s, 1, 64 << 20);
	CHECK(err == EAGAIN, "a full non-blocking socket failed with %s", ct_errname(err));
}

static void run_fork_full(int unused)
{
	struct ct_sent s = { .hash = CT_FNV_INIT, .seed = 42 };
	struct ct_peer p;
	long long held;
	pid_t pid;
	int fd;

	(void)unused;
	ct_peer_start(&p, "stall");
	fd = ct_connect(p.port);
	ct_set_int(fd, SOL_SOCKET, SO_SNDBUF, 16384, "SO_SNDBUF");
	ct_set_nonblock(fd);
	fill_and_hold(fd, &s);
	held = s.total - ct_kernel_bytes(fd);
	ct_say("%lld bytes held by the library at fork", held);
	CHECK(held > 0, "nothing held at fork: the test proves nothing");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		exit(0); /* a copy not dropped would be drained here, up to 5 s */
	ct_sleep_ms(20);
	ct_peer_go(&p);
	expect_child_ok(pid, 0);
	ct_expect_all_taken(&p, fd, &s);
	close(fd);
	ct_peer_stop(&p);
}

/* Is the calling thread's mask exactly {SIGUSR1}? */
static int mask_is_usr1(void)
{
	sigset_t now;

	CHECK(pthread_sigmask(SIG_SETMASK, NULL, &now) == 0, "pthread_sigmask");
	for (int s = 1; s < NSIG; s++)
		if (s != 32 && s != 33 && sigismember(&now, s) != (s == SIGUSR1))
			return 0; /* 32, 33: libc's own (cancel, setxid) */
	return 1;
}

static void run_fork_mask(int unused)
{
	struct ct_peer p;
	sigset_t usr1;
	pid_t pid;
	int fd, st;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = write_request(p.port);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK(pthread_sigmask(SIG_SETMASK, &usr1, NULL) == 0, "pthread_sigmask");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(mask_is_usr1() ? 0 : 1);
	CHECK(mask_is_usr1(), "the parent's signal mask changed across fork");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "waitpid");
	CHECK(WEXITSTATUS(st) == 0, "the child's signal mask is not the parent's");
	close(fd);
	ct_say("the signal mask is the program's own on both sides of fork");
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "fork-_exit", run_fork, 4 },   { "fork-exit", run_fork, 5 },
	{ "fork-full", run_fork_full, 0 },
	{ "execv-self", run_leave, 0 },  { "execv-true", run_leave, 1 },
	{ "execve-true", run_leave, 2 }, { "execlp-true", run_leave, 3 },
	{ "_exit", run_leave, 4 },       { "exit", run_leave, 5 },
	{ "_Exit", run_leave, 6 },       { "return", run_return, 0 },
	{ "quick_exit", run_leave, 7 },  { "execv-fail", run_exec_fail, 0 },
	{ "pthread_exit", run_pthread_exit, 0 },
	{ "thrd_exit", run_pthread_exit, 1 },
	{ "cancel-main", run_pthread_exit, 2 },
	{ "_Fork-exit", run_fork, 8 },   { "execveat-true", run_leave, 8 },
	{ "fork-mask", run_fork_mask, 0 },
	{ "abort", run_leave, 9 },       { "assert", run_leave, 10 },
	{ "daemon", run_leave, 11 },
};

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--after-exec") == 0)
		return 0;
	for (int how = 0; how < 3; how++)
		if (argc == 3 && strcmp(argv[1], leave_flag[how]) == 0)
			pthread_exit_main(atoi(argv[2]), how);
	if (argc == 3 && strcmp(argv[1], "--writer-return") == 0) {
		ct_variant = "return";
		alarm(CT_TIMEOUT_S);
		write_request(atoi(argv[2]));
		return 0;
	}
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
