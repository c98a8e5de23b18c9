/*
 * test_hooks.c - the less common calls that can pass, copy or overtake
 * what coalesce holds: sendmmsg, vfork, posix_spawn, posix_spawnp, system,
 * popen, and sendto/sendmsg with MSG_FASTOPEN (a connect). Built with
 * -D_FORTIFY_SOURCE=2 (set below, before any header) and run.sh's -O2, as
 * distributions build the programs the library is preloaded into.
 *
 * Under a flush=1s rule:
 *   sendmmsg        "ab" held, then sendmmsg of "cd", "ef", "\n": the
 *                   peer reads "abcdef\n", and sendmmsg says 3 messages
 *   vfork-stack     "req\n" held, vfork from a helper; the child uses
 *                   stack and _exits; the parent returns from the helper
 *                   (a wrapper that returned into a frame the child reused
 *                   would crash here), gets its echo once, then "end\n"
 *   vfork-close     "A" held, vfork; the child closes the socket and
 *                   _exits: the parent's socket is still coalesced ("B\n"
 *                   held), and the peer reads "AB\n"
 *   vfork-exec      "req\n" held, vfork, the child execs /bin/true: the
 *                   echo comes back once
 *   __vfork-close   vfork-close with glibc's exported __vfork
 *   posix_spawn     "A" held; a spawned child (this program, without the
 *   posix_spawnp    library) writes "B\n" on the inherited socket: the
 *   system popen    peer reads "AB\n", not "B\nA" (system and popen start
 *                   a shell that runs the child)
 *   fastopen        sendto(MSG_FASTOPEN) to the peer on a fresh socket:
 *                   the rule applies at once (TCP_NODELAY on after the
 *                   call), the next write is held, the peer reads "abcd\n"
 *   fastopen-msg    the same with sendmsg(MSG_FASTOPEN) and msg_name
 *   fastopen-refused
 *                   sendto(MSG_FASTOPEN) to a port nobody listens on:
 *                   ECONNREFUSED, and the rule is taken back (TCP_NODELAY
 *                   off again)
 *   close_range sendfile splice fcntl-dupfd
 *                   test_fdops' triggers again, in this fortified build:
 *                   "ab" held, then the call; the peer reads "ab" first
 *   sendfile64      "HEAD" held, sendfile64 of a file holding "FILE",
 *                   "TAIL\n": the peer reads "HEADFILETAIL\n" (what
 *                   _FILE_OFFSET_BITS=64 programs call: nginx, CPython)
 *   closefrom       "ab" held, closefrom(fd): the peer gets "ab"; a file
 *                   opened next on that number takes a write (a stale
 *                   coalesce state made it fail ENOTSOCK)
 *   __write __send  glibc's exported aliases: "ab" by the alias is held
 *                   like a write, then "\n": the peer reads "ab\n"
 *   __close         "ab" held, __close: the peer gets "ab"
 *   __dup2 __fcntl  "ab" held, the alias copies the socket to fd 100
 *                   (F_DUPFD_CLOEXEC for __fcntl), "cd\n" through the
 *                   copy: the peer reads "abcd\n"
 *   pwritev2        "ab" held, pwritev2(offset -1) of "cd\n": the peer
 *                   reads "abcd\n"
 *   dprintf         "A" held, dprintf "B" (here __dprintf_chk), "C\n":
 *                   the peer reads "ABC\n"
 *   _IO_popen       popen's variant with glibc 2.0's name
 *   posix_close     "ab" held, posix_close(fd, 0) (musl): the peer gets "ab"
 *   aio_write lio_listio
 *                   "A" held, the AIO write of "B" (done before going on),
 *                   "C\n": the peer reads "ABC\n"
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2

#include <aio.h>
#include <spawn.h>
#include <sys/sendfile.h>

#include "../common/peer.h"

extern char **environ;

#ifdef __GLIBC__
/* glibc exports these without declaring them. */
ssize_t __write(int fd, const void *buf, size_t n);
ssize_t __send(int fd, const void *buf, size_t n, int flags);
int __close(int fd);
int __dup2(int oldfd, int newfd);
int __fcntl(int fd, int cmd, ...);
pid_t __vfork(void);
FILE *_IO_popen(const char *command, const char *mode);
#endif

#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif

/* A connection to p with s written and held by the library. */
static int held_conn(const struct ct_peer *p, const char *s)
{
	int fd = ct_connect(p->port);

	ct_send_str(fd, s);
	ct_expect_held(fd, 0);
	return fd;
}

static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0, "TCP_NODELAY");
	return v != 0;
}

static void expect_child_ok(pid_t pid)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
}

static void run_sendmmsg(int unused)
{
	struct iovec v[3] = { { "cd", 2 }, { "ef", 2 }, { "\n", 1 } };
	struct mmsghdr mm[3];
	struct ct_peer p;
	int fd, n;

	(void)unused;
	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_iov = &v[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "ab");
	n = sendmmsg(fd, mm, 3, 0);
	CHECK(n == 3 && mm[0].msg_len == 2 && mm[2].msg_len == 1, "sendmmsg returned %d", n);
	ct_expect_line(p.rep, "abcdef\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 7, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* Uses a few KiB of stack below the caller's frame, where a vfork
 * wrapper's frame would have been. */
static __attribute__((noinline)) int scribble(int depth)
{
	volatile char junk[2048];

	memset((char *)junk, 0xa5, sizeof(junk));
	return depth > 0 ? scribble(depth - 1) + junk[7] : junk[0];
}

/* vfork from a function of its own: returns the child's pid in the
 * parent; the child never returns from here. */
static __attribute__((noinline)) pid_t spawn_scribbler(int how, int fd)
{
	char *tru[] = { "true", NULL };
#ifdef __GLIBC__
	pid_t pid = how == 3 ? __vfork() : vfork();
#else
	pid_t pid = vfork();
#endif

	if (pid != 0)
		return pid;
	if (how == 1 || how == 3)
		close(fd);
	if (how == 2)
		execve("/bin/true", tru, environ);
	_exit(scribble(4) == 12345 ? 3 : 0);
}

static void run_vfork_echo(int how)
{
	struct ct_peer p;
	pid_t pid;
	int fd;

	ct_peer_start(&p, "echo");
	fd = held_conn(&p, "req\n");
	pid = spawn_scribbler(how, fd);
	CHECK(pid > 0, "vfork");
	expect_child_ok(pid);
	ct_read_reply(fd, "req\n");
	ct_send_str(fd, "end\n");
	ct_read_reply(fd, "end\n");
	close(fd);
	ct_expect_end(p.rep, 8, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* how: 1 vfork, 3 __vfork. */
static void run_vfork_close(int how)
{
	struct ct_peer p;
	long long before;
	pid_t pid;
	int fd;

#ifndef __GLIBC__
	if (how == 3)
		ct_skip("no __vfork in this libc");
#endif
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "A");
	pid = spawn_scribbler(how, fd);
	CHECK(pid > 0, "vfork");
	expect_child_ok(pid);
	before = ct_kernel_bytes(fd);
	ct_send_str(fd, "B\n");
	ct_expect_held(fd, before); /* the child's close did not end the parent's rule */
	close(fd);
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* The environment without LD_PRELOAD, for a child that must write itself. */
static char **env_without_preload(void)
{
	static char *env[256];
	int n = 0;

	for (char **e = environ; *e && n < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			env[n++] = *e;
	env[n] = NULL;
	return env;
}

static void run_spawn(int use_path)
{
	char fdarg[16];
	struct ct_peer p;
	pid_t pid;
	int fd, rc;

	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "A");
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	{
		char *args[] = { (char *)ct_prog, "--child-write", fdarg, NULL };

		if (use_path)
			rc = posix_spawnp(&pid, "/proc/self/exe", NULL, NULL, args, env_without_preload());
		else
			rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, env_without_preload());
	}
	CHECK(rc == 0, "posix_spawn: %s", ct_errname(rc));
	expect_child_ok(pid);
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* system() or popen(): a shell runs this program, without the library, to
 * write "B\n" on the inherited socket while "A" is held. */
static void run_shell(int use_popen)
{
	char exe[4096], cmd[4200];
	struct ct_peer p;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	CHECK(len > 0 && !strchr(exe, '\''), "readlink /proc/self/exe");
	exe[len] = '\0';
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "A");
	snprintf(cmd, sizeof(cmd), "LD_PRELOAD= '%s' --child-write %d", exe, fd);
	if (use_popen) {
#ifdef __GLIBC__
		FILE *f = use_popen == 2 ? _IO_popen(cmd, "r") : popen(cmd, "r");
#else
		FILE *f = popen(cmd, "r");
#endif

		CHECK(f != NULL, "popen: %s", ct_errname(errno));
		CHECK(pclose(f) == 0, "the shell's child failed");
	} else {
		CHECK(system(cmd) == 0, "system: the shell's child failed");
	}
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* Sends "ab" with MSG_FASTOPEN to port on a fresh socket; returns it. */
static int fastopen(int port, int use_msg, ssize_t *rc)
{
	struct sockaddr_in a = ct_loopback(port);
	struct iovec v = { .iov_base = "ab", .iov_len = 2 };
	struct msghdr m = { .msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &v, .msg_iovlen = 1 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0, "socket");
	CHECK(nodelay_of(fd) == 0, "TCP_NODELAY on before the socket connected");
	if (use_msg)
		*rc = sendmsg(fd, &m, MSG_FASTOPEN);
	else
		*rc = sendto(fd, "ab", 2, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof(a));
	if (*rc < 0 && errno == EOPNOTSUPP)
		ct_skip("TCP Fast Open is off for clients (net.ipv4.tcp_fastopen)");
	return fd;
}

static void run_fastopen(int use_msg)
{
	struct ct_peer p;
	ssize_t rc;
	int fd;

	ct_peer_start(&p, "lines");
	fd = fastopen(p.port, use_msg, &rc);
	CHECK(rc == 2, "send with MSG_FASTOPEN returned %zd", rc);
	CHECK(nodelay_of(fd) == 1, "TCP_NODELAY off after a MSG_FASTOPEN connect: the rule "
	      "was not applied when the socket connected");
	ct_send_str(fd, "cd\n");
	ct_expect_held(fd, 2);
	close(fd);
	ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 5, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static void run_fastopen_refused(int unused)
{
	int lfd, port, fd;
	ssize_t rc;

	(void)unused;
	lfd = ct_listen(0, &port);
	close(lfd); /* nobody listens on port now */
	fd = fastopen(port, 0, &rc);
	CHECK(rc == -1 && errno == ECONNREFUSED, "MSG_FASTOPEN to a closed port returned %zd", rc);
	CHECK(nodelay_of(fd) == 0, "TCP_NODELAY still on after the connect failed");
	close(fd);
}

/* "ab" held, then the call under test, which sends "cd\n" or ends the
 * stream after "ab": the peer reads the bytes in that order. */
static void run_fdop(int which)
{
	struct ct_peer p;
	int fd, other, pp[2];
	off_t off = 0;

	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "ab");
	switch (which) {
	case 0:
#ifdef __GLIBC__
		CHECK(close_range((unsigned)fd, (unsigned)fd, 0) == 0, "close_range");
#else
		ct_skip("no close_range() in this libc");
#endif
		ct_expect_end(p.rep, 2, CT_WAIT_MS);
		ct_peer_stop(&p);
		return;
	case 1:
		other = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		CHECK(other >= 0 && write(other, "cd\n", 3) == 3, "a file holding cd");
		CHECK(sendfile(fd, other, &off, 3) == 3, "sendfile");
		close(other);
		break;
	case 2:
		CHECK(pipe(pp) == 0 && write(pp[1], "cd\n", 3) == 3, "a pipe holding cd");
		CHECK(splice(pp[0], NULL, fd, NULL, 3, 0) == 3, "splice");
		close(pp[0]);
		close(pp[1]);
		break;
	default:
		other = fcntl(fd, F_DUPFD_CLOEXEC, 100);
		CHECK(other >= 100, "fcntl F_DUPFD_CLOEXEC");
		CHECK(ct_kernel_bytes(fd) == 2, "the held bytes were not sent when the socket "
		      "was duplicated (%lld in the kernel)", ct_kernel_bytes(fd));
		ct_send_str(other, "cd\n");
		close(other);
		break;
	}
	ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 5, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* "HEAD" held, sendfile64 of "FILE", "TAIL\n": in that order. */
static void run_sendfile64(int unused)
{
	struct ct_peer p;
	off64_t off = 0;
	int fd, file;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "HEAD");
	file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	CHECK(file >= 0 && write(file, "FILE", 4) == 4, "a file holding FILE");
	CHECK(sendfile64(fd, file, &off, 4) == 4, "sendfile64");
	close(file);
	ct_send_str(fd, "TAIL\n");
	close(fd);
	ct_expect_line(p.rep, "HEADFILETAIL\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 13, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* "ab" held, closefrom: delivered; then a file on that number writes. */
static void run_closefrom(int unused)
{
#ifdef __GLIBC__
	struct ct_peer p;
	char back[4] = { 0 };
	int fd, file;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "ab"); /* the highest descriptor of the process */
	closefrom(fd);
	ct_expect_end(p.rep, 2, CT_WAIT_MS);
	file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	CHECK(file == fd, "the file got descriptor %d, not %d", file, fd);
	CHECK(write(file, "xy", 2) == 2, "write to a file on a number closefrom freed");
	ct_sleep_ms(20);
	CHECK(pread(file, back, 2, 0) == 2 && strcmp(back, "xy") == 0, "the file holds '%s'", back);
	CHECK(write(file, "z", 1) == 1, "a second write to the file");
	close(file);
	ct_peer_stop(&p);
#else
	(void)unused;
	ct_skip("no closefrom() in this libc");
#endif
}

/* glibc's aliases: 0 __write, 1 __send, 2 __close, 3 pwritev2, 4 __dup2,
 * 5 __fcntl. */
static void run_alias(int which)
{
#ifdef __GLIBC__
	struct iovec v = { .iov_base = "cd\n", .iov_len = 3 };
	struct ct_peer p;
	int fd;

	ct_peer_start(&p, "lines");
	if (which <= 1) {
		fd = ct_connect(p.port);
		CHECK((which ? __send(fd, "ab", 2, 0) : __write(fd, "ab", 2)) == 2, "the alias");
		ct_expect_held(fd, 0);
		ct_send_str(fd, "\n");
		close(fd);
		ct_expect_line(p.rep, "ab\n", CT_WAIT_MS);
		ct_expect_end(p.rep, 3, CT_WAIT_MS);
	} else if (which == 2) {
		fd = held_conn(&p, "ab");
		CHECK(__close(fd) == 0, "__close");
		ct_expect_end(p.rep, 2, CT_WAIT_MS);
	} else if (which == 3) {
		fd = held_conn(&p, "ab");
		CHECK(pwritev2(fd, &v, 1, -1, 0) == 3, "pwritev2");
		ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
		close(fd);
		ct_expect_end(p.rep, 5, CT_WAIT_MS);
	} else {
		int other;

		fd = held_conn(&p, "ab");
		other = which == 4 ? __dup2(fd, 100) : __fcntl(fd, F_DUPFD_CLOEXEC, 100);
		CHECK(other == 100, "the alias returned %d", other);
		ct_send_str(other, "cd\n");
		ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
		close(other);
		close(fd);
		ct_expect_end(p.rep, 5, CT_WAIT_MS);
	}
	ct_peer_stop(&p);
#else
	(void)which;
	ct_skip("musl has none of glibc's aliases, nor pwritev2");
#endif
}

/* "A" held, dprintf "B" (fortified here: __dprintf_chk), "C\n". */
static void run_dprintf(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "A");
	CHECK(dprintf(fd, "%c", 'B') == 1, "dprintf");
	ct_send_str(fd, "C\n");
	close(fd);
	ct_expect_line(p.rep, "ABC\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* "ab" held, posix_close: delivered (musl; glibc 2.36 has none). */
static void run_posix_close(int unused)
{
#ifdef __GLIBC__
	(void)unused;
	ct_skip("no posix_close() in this libc");
#else
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "ab");
	CHECK(posix_close(fd, 0) == 0, "posix_close");
	ct_expect_end(p.rep, 2, CT_WAIT_MS);
	ct_peer_stop(&p);
#endif
}

/* "A" held, "B" by aio_write (0) or lio_listio (1), done, then "C\n". */
static void run_aio(int use_lio)
{
	struct aiocb cb, *list[1] = { &cb };
	const struct aiocb *wait[1] = { &cb };
	struct ct_peer p;
	int fd;

	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "A");
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = "B";
	cb.aio_nbytes = 1;
	cb.aio_lio_opcode = LIO_WRITE;
	if (use_lio)
		CHECK(lio_listio(LIO_WAIT, list, 1, NULL) == 0, "lio_listio");
	else
		CHECK(aio_write(&cb) == 0, "aio_write");
	while (aio_error(&cb) == EINPROGRESS)
		aio_suspend(wait, 1, NULL);
	CHECK(aio_return(&cb) == 1, "the AIO write: %s", ct_errname(aio_error(&cb)));
	ct_send_str(fd, "C\n");
	close(fd);
	ct_expect_line(p.rep, "ABC\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "sendmmsg", run_sendmmsg, 0 },
	{ "vfork-stack", run_vfork_echo, 0 },
	{ "vfork-close", run_vfork_close, 1 },
	{ "__vfork-close", run_vfork_close, 3 },
	{ "vfork-exec", run_vfork_echo, 2 },
	{ "posix_spawn", run_spawn, 0 },
	{ "posix_spawnp", run_spawn, 1 },
	{ "system", run_shell, 0 },
	{ "popen", run_shell, 1 },
	{ "fastopen", run_fastopen, 0 },
	{ "fastopen-msg", run_fastopen, 1 },
	{ "fastopen-refused", run_fastopen_refused, 0 },
	{ "close_range", run_fdop, 0 },
	{ "sendfile", run_fdop, 1 },
	{ "splice", run_fdop, 2 },
	{ "fcntl-dupfd", run_fdop, 3 },
	{ "sendfile64", run_sendfile64, 0 },
	{ "closefrom", run_closefrom, 0 },
	{ "__write", run_alias, 0 },
	{ "__send", run_alias, 1 },
	{ "__close", run_alias, 2 },
	{ "pwritev2", run_alias, 3 },
	{ "__dup2", run_alias, 4 },
	{ "__fcntl", run_alias, 5 },
	{ "dprintf", run_dprintf, 0 },
	{ "_IO_popen", run_shell, 2 },
	{ "posix_close", run_posix_close, 0 },
	{ "aio_write", run_aio, 0 },
	{ "lio_listio", run_aio, 1 },
};

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--child-write") == 0) {
		int fd = atoi(argv[2]);

		return write(fd, "B\n", 2) == 2 ? 0 : 1;
	}
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
